//! An order-statistic AVL tree: a sorted set that also answers "how many keys are smaller
//! than this one" in O(log n).
//!
//! Every node stores the size of its subtree next to its height. `insert` and `remove` walk one
//! root-to-leaf path, fixing heights, sizes and balance on the way back up (at most two
//! rotations per level, each O(1)); `rank` walks one path summing the sizes of the left
//! subtrees it skips. An AVL tree with n keys has height at most 1.44·log2(n + 2), so all
//! three are O(log n) in the worst case — deterministically, unlike a treap or a skip list,
//! whose bounds hold only in expectation — and the recursion depth is tiny (≤ 27 at a
//! million keys).
//!
//! Nodes are boxed rather than kept in an arena: the crate forbids `unsafe`, and boxes let
//! `remove` move keys out without a placeholder value.

use std::cmp::Ordering;

type Link<K> = Option<Box<Node<K>>>;

#[derive(Debug, Clone)]
struct Node<K> {
    key: K,
    left: Link<K>,
    right: Link<K>,
    /// Height of the subtree rooted here; a leaf has height 1.
    height: u8,
    /// Number of keys in the subtree rooted here.
    size: usize,
}

impl<K> Node<K> {
    fn leaf(key: K) -> Box<Self> {
        Box::new(Self {
            key,
            left: None,
            right: None,
            height: 1,
            size: 1,
        })
    }

    /// Recomputes height and size from the children.
    fn update(&mut self) {
        self.height = 1 + height(&self.left).max(height(&self.right));
        self.size = 1 + size(&self.left) + size(&self.right);
    }

    fn balance(&self) -> i16 {
        i16::from(height(&self.left)) - i16::from(height(&self.right))
    }
}

fn height<K>(link: &Link<K>) -> u8 {
    link.as_ref().map_or(0, |node| node.height)
}

fn size<K>(link: &Link<K>) -> usize {
    link.as_ref().map_or(0, |node| node.size)
}

fn rotate_right<K>(mut node: Box<Node<K>>) -> Box<Node<K>> {
    match node.left.take() {
        Some(mut left) => {
            node.left = left.right.take();
            node.update();
            left.right = Some(node);
            left.update();
            left
        }
        None => node,
    }
}

fn rotate_left<K>(mut node: Box<Node<K>>) -> Box<Node<K>> {
    match node.right.take() {
        Some(mut right) => {
            node.right = right.left.take();
            node.update();
            right.left = Some(node);
            right.update();
            right
        }
        None => node,
    }
}

/// Restores the AVL property at `node`, whose children are balanced and differ in height by at
/// most 2.
fn rebalance<K>(mut node: Box<Node<K>>) -> Box<Node<K>> {
    node.update();
    let balance = node.balance();
    if balance > 1 {
        if let Some(left) = node.left.take() {
            // Left-right case: straighten the zig-zag first.
            node.left = Some(if left.balance() < 0 {
                rotate_left(left)
            } else {
                left
            });
        }
        rotate_right(node)
    } else if balance < -1 {
        if let Some(right) = node.right.take() {
            node.right = Some(if right.balance() > 0 {
                rotate_right(right)
            } else {
                right
            });
        }
        rotate_left(node)
    } else {
        node
    }
}

fn insert<K: Ord>(link: Link<K>, key: K) -> (Box<Node<K>>, bool) {
    let Some(mut node) = link else {
        return (Node::leaf(key), true);
    };
    let inserted = match key.cmp(&node.key) {
        Ordering::Less => {
            let (child, inserted) = insert(node.left.take(), key);
            node.left = Some(child);
            inserted
        }
        Ordering::Greater => {
            let (child, inserted) = insert(node.right.take(), key);
            node.right = Some(child);
            inserted
        }
        Ordering::Equal => false,
    };
    if inserted {
        (rebalance(node), true)
    } else {
        (node, false)
    }
}

fn remove<K: Ord>(link: Link<K>, key: &K) -> (Link<K>, bool) {
    let Some(mut node) = link else {
        return (None, false);
    };
    let removed = match key.cmp(&node.key) {
        Ordering::Less => {
            let (child, removed) = remove(node.left.take(), key);
            node.left = child;
            removed
        }
        Ordering::Greater => {
            let (child, removed) = remove(node.right.take(), key);
            node.right = child;
            removed
        }
        Ordering::Equal => {
            let replacement = match (node.left.take(), node.right.take()) {
                (None, None) => None,
                (Some(only), None) | (None, Some(only)) => Some(only),
                (Some(left), Some(right)) => {
                    // The in-order successor takes the removed node's place.
                    let (rest, mut successor) = take_min(right);
                    successor.left = Some(left);
                    successor.right = rest;
                    Some(rebalance(successor))
                }
            };
            return (replacement, true);
        }
    };
    if removed {
        (Some(rebalance(node)), true)
    } else {
        (Some(node), false)
    }
}

/// Detaches the smallest node of a subtree; returns the rebalanced rest and that node.
fn take_min<K>(mut node: Box<Node<K>>) -> (Link<K>, Box<Node<K>>) {
    match node.left.take() {
        None => (node.right.take(), node),
        Some(left) => {
            let (rest, min) = take_min(left);
            node.left = rest;
            (Some(rebalance(node)), min)
        }
    }
}

/// A sorted set of distinct keys with O(log n) insert, remove and rank.
#[derive(Debug, Clone)]
pub struct OrderStatisticTree<K> {
    root: Link<K>,
}

impl<K> Default for OrderStatisticTree<K> {
    fn default() -> Self {
        Self { root: None }
    }
}

impl<K: Ord> OrderStatisticTree<K> {
    /// An empty tree.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        size(&self.root)
    }

    /// True when there are no keys.
    pub fn is_empty(&self) -> bool {
        self.root.is_none()
    }

    /// Adds `key`; false (and no change) when it is already present.
    pub fn insert(&mut self, key: K) -> bool {
        let (root, inserted) = insert(self.root.take(), key);
        self.root = Some(root);
        inserted
    }

    /// Removes `key`; false when it was not present.
    pub fn remove(&mut self, key: &K) -> bool {
        let (root, removed) = remove(self.root.take(), key);
        self.root = root;
        removed
    }

    /// True when `key` is present.
    pub fn contains(&self, key: &K) -> bool {
        let mut current = &self.root;
        while let Some(node) = current {
            current = match key.cmp(&node.key) {
                Ordering::Less => &node.left,
                Ordering::Greater => &node.right,
                Ordering::Equal => return true,
            };
        }
        false
    }

    /// Number of keys strictly smaller than `key` (whether or not `key` is present).
    pub fn rank(&self, key: &K) -> usize {
        let mut smaller = 0;
        let mut current = &self.root;
        while let Some(node) = current {
            current = match key.cmp(&node.key) {
                Ordering::Less => &node.left,
                Ordering::Greater => {
                    smaller += size(&node.left) + 1;
                    &node.right
                }
                Ordering::Equal => return smaller + size(&node.left),
            };
        }
        smaller
    }

    /// The key with `index` smaller keys (0-based), if there are that many.
    pub fn select(&self, mut index: usize) -> Option<&K> {
        let mut current = &self.root;
        while let Some(node) = current {
            let left = size(&node.left);
            current = match index.cmp(&left) {
                Ordering::Less => &node.left,
                Ordering::Equal => return Some(&node.key),
                Ordering::Greater => {
                    index -= left + 1;
                    &node.right
                }
            };
        }
        None
    }

    /// Keys in ascending order.
    pub fn iter(&self) -> Iter<'_, K> {
        let mut iter = Iter { stack: Vec::new() };
        iter.push_left(&self.root);
        iter
    }

    /// Removes every key.
    pub fn clear(&mut self) {
        self.root = None;
    }
}

/// In-order iterator over an [`OrderStatisticTree`]; holds one path (O(log n) memory).
#[derive(Debug)]
pub struct Iter<'a, K> {
    stack: Vec<&'a Node<K>>,
}

impl<'a, K> Iter<'a, K> {
    fn push_left(&mut self, mut link: &'a Link<K>) {
        while let Some(node) = link {
            self.stack.push(node);
            link = &node.left;
        }
    }
}

impl<'a, K> Iterator for Iter<'a, K> {
    type Item = &'a K;

    fn next(&mut self) -> Option<Self::Item> {
        let node = self.stack.pop()?;
        self.push_left(&node.right);
        Some(&node.key)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::queue::tests_support::SplitMix64;

    /// Checks ordering, heights, sizes and the AVL balance everywhere; returns (height, size).
    fn check<K: Ord + std::fmt::Debug>(
        link: &Link<K>,
        lower: Option<&K>,
        upper: Option<&K>,
    ) -> (u8, usize) {
        let Some(node) = link else { return (0, 0) };
        if let Some(lower) = lower {
            assert!(node.key > *lower, "{:?} not above {lower:?}", node.key);
        }
        if let Some(upper) = upper {
            assert!(node.key < *upper, "{:?} not below {upper:?}", node.key);
        }
        let (left_height, left_size) = check(&node.left, lower, Some(&node.key));
        let (right_height, right_size) = check(&node.right, Some(&node.key), upper);
        assert!(left_height.abs_diff(right_height) <= 1, "unbalanced");
        assert_eq!(node.height, 1 + left_height.max(right_height));
        assert_eq!(node.size, 1 + left_size + right_size);
        (node.height, node.size)
    }

    #[test]
    fn rank_select_and_iter_on_a_small_tree() {
        let mut tree = OrderStatisticTree::new();
        for key in [50, 20, 80, 10, 30, 70, 90, 60] {
            assert!(tree.insert(key));
        }
        assert!(!tree.insert(30), "duplicates are refused");
        assert_eq!(tree.len(), 8);
        assert_eq!(tree.rank(&10), 0);
        assert_eq!(tree.rank(&55), 4);
        assert_eq!(tree.rank(&60), 4);
        assert_eq!(tree.rank(&1000), 8);
        assert_eq!(tree.select(4), Some(&60));
        assert_eq!(tree.select(8), None);
        assert_eq!(
            tree.iter().copied().collect::<Vec<_>>(),
            vec![10, 20, 30, 50, 60, 70, 80, 90]
        );
        assert!(tree.remove(&50));
        assert!(!tree.remove(&50));
        assert!(!tree.contains(&50));
        assert_eq!(tree.rank(&60), 3);
        check(&tree.root, None, None);
        tree.clear();
        assert!(tree.is_empty());
    }

    #[test]
    fn sorted_inserts_stay_logarithmic() {
        // Creation timestamps mostly arrive in order: the worst case for a plain BST.
        let mut tree = OrderStatisticTree::new();
        for key in 0..100_000u32 {
            tree.insert(key);
        }
        let (height, size) = check(&tree.root, None, None);
        assert_eq!(size, 100_000);
        // 1.44 · log2(100_002) ≈ 23.9
        assert!(height <= 24, "height {height}");
        for key in (0..100_000u32).step_by(2) {
            assert!(tree.remove(&key));
        }
        let (height, size) = check(&tree.root, None, None);
        assert_eq!(size, 50_000);
        assert!(height <= 23, "height {height}");
    }

    #[test]
    fn random_operations_match_a_btreeset() {
        let mut random = SplitMix64::new(0x7ee5);
        let mut tree = OrderStatisticTree::new();
        let mut model = BTreeSet::new();
        for step in 0..20_000 {
            let key = random.below(2_000);
            match random.below(3) {
                0 | 1 => assert_eq!(tree.insert(key), model.insert(key), "insert {key}"),
                _ => assert_eq!(tree.remove(&key), model.remove(&key), "remove {key}"),
            }
            let probe = random.below(2_100);
            assert_eq!(tree.rank(&probe), model.range(..probe).count(), "rank");
            assert_eq!(tree.contains(&probe), model.contains(&probe));
            if step % 997 == 0 {
                check(&tree.root, None, None);
                assert!(tree.iter().eq(model.iter()));
                let index = random.below(model.len() as u64 + 1) as usize;
                assert_eq!(tree.select(index), model.iter().nth(index));
            }
        }
        assert_eq!(tree.len(), model.len());
    }
}
