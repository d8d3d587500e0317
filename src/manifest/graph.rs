//! The owner graph of a manifest (seed 002's `Owners()` and `Children()`): items indexed by
//! UID, each item's owners and dependents, and an owners-before-dependents order for restores.
//!
//! Edges come from `metadata.ownerReferences` UIDs, which only link objects of one backup:
//! an owner that the backup does not hold (filtered out, or already gone) is reported as
//! missing, never looked up elsewhere. UIDs are used only here, to link items; they are not
//! compared across backups (a re-created object has a new UID).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use serde::{Deserialize, Serialize};

use super::item::{Manifest, ManifestItem};

/// What the owner graph needs of an item: its UID and its owners' UIDs.
pub trait OwnerLinks {
    /// The item's UID, if known.
    fn uid(&self) -> Option<&str>;
    /// The UIDs its `ownerReferences` name.
    fn owner_uids(&self) -> &[String];
}

impl OwnerLinks for ManifestItem {
    fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }

    fn owner_uids(&self) -> &[String] {
        &self.owners
    }
}

impl<T: OwnerLinks + ?Sized> OwnerLinks for &T {
    fn uid(&self) -> Option<&str> {
        (**self).uid()
    }

    fn owner_uids(&self) -> &[String] {
        (**self).owner_uids()
    }
}

/// The owner graph of one manifest; items are named by their index in
/// [`Manifest::items`] or by their key.
#[derive(Debug)]
pub struct OwnerGraph<'m> {
    items: &'m [ManifestItem],
    links: Links<'m>,
}

impl<'m> OwnerGraph<'m> {
    /// Indexes `manifest` by UID and links each item to its owners.
    pub fn new(manifest: &'m Manifest) -> Self {
        let items = manifest.items();
        Self {
            items,
            links: Links::new(items),
        }
    }

    /// The item with `uid`. Should two items share a UID (never so in one cluster), the first
    /// by key is the one linked.
    pub fn item_by_uid(&self, uid: &str) -> Option<&'m ManifestItem> {
        self.links.by_uid.get(uid).map(|&index| &self.items[index])
    }

    /// The index of the item with `key`.
    pub fn index_of(&self, key: &str) -> Option<usize> {
        self.items
            .binary_search_by(|probe| probe.key().as_str().cmp(key))
            .ok()
    }

    /// The indexes of the owners of item `index` that the backup holds, in the order of its
    /// `ownerReferences` (each once; an item never owns itself).
    pub fn owner_indexes(&self, index: usize) -> &[usize] {
        self.links.owners_of(index)
    }

    /// The indexes of the items that item `index` owns, in key order.
    pub fn child_indexes(&self, index: usize) -> &[usize] {
        self.links.children_of(index)
    }

    /// The owners of the item with `key` that the backup holds (seed 002's `Owners()`).
    pub fn owners(&self, key: &str) -> Vec<&'m ManifestItem> {
        self.index_of(key)
            .map(|index| self.resolve(self.owner_indexes(index)))
            .unwrap_or_default()
    }

    /// The items that the item with `key` owns (seed 002's `Children()`), in key order.
    pub fn children(&self, key: &str) -> Vec<&'m ManifestItem> {
        self.index_of(key)
            .map(|index| self.resolve(self.child_indexes(index)))
            .unwrap_or_default()
    }

    /// Owner UIDs of the item with `key` that match no item of the backup.
    pub fn missing_owners(&self, key: &str) -> Vec<&'m str> {
        let Some(index) = self.index_of(key) else {
            return Vec::new();
        };
        self.links
            .missing
            .iter()
            .filter(|(dependent, _)| *dependent == index)
            .map(|(_, uid)| *uid)
            .collect()
    }

    /// Every item, owners before their dependents, otherwise in key order.
    pub fn owners_first(&self) -> Vec<&'m ManifestItem> {
        self.resolve(&order_with(self.items, &self.links).order)
    }

    /// The serializable view: nodes are item keys, edges go from owner to dependent.
    pub fn view(&self) -> OwnerGraphView {
        let keys: Vec<String> = self.items.iter().map(ManifestItem::key).collect();
        let mut edges = Vec::new();
        for (dependent, key) in keys.iter().enumerate() {
            for &owner in self.owner_indexes(dependent) {
                edges.push(OwnerEdge {
                    owner: keys[owner].clone(),
                    dependent: key.clone(),
                });
            }
        }
        edges.sort_by(|a, b| (&a.owner, &a.dependent).cmp(&(&b.owner, &b.dependent)));
        let missing_owners = self
            .links
            .missing
            .iter()
            .map(|&(dependent, uid)| MissingOwner {
                dependent: keys[dependent].clone(),
                owner_uid: uid.to_owned(),
            })
            .collect();
        OwnerGraphView {
            nodes: keys,
            edges,
            missing_owners,
        }
    }

    fn resolve(&self, indexes: &[usize]) -> Vec<&'m ManifestItem> {
        indexes.iter().map(|&index| &self.items[index]).collect()
    }
}

/// The owner graph as the API serves it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
#[graphql(name = "OwnerGraph")]
pub struct OwnerGraphView {
    /// Every item's key, sorted.
    pub nodes: Vec<String>,
    /// Ownership links, sorted by owner then dependent.
    pub edges: Vec<OwnerEdge>,
    /// Owner references to objects the backup does not hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_owners: Vec<MissingOwner>,
}

/// One ownership link.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
pub struct OwnerEdge {
    /// Key of the owner.
    pub owner: String,
    /// Key of the item it owns.
    pub dependent: String,
}

/// An owner reference to an object that is not in the backup.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
pub struct MissingOwner {
    /// Key of the item holding the reference.
    pub dependent: String,
    /// The owner UID named.
    pub owner_uid: String,
}

/// An owners-first order of some items.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnersFirst {
    /// Indexes into the input, each once: every item after the owners it has in the input,
    /// except where a cycle had to be broken.
    pub order: Vec<usize>,
    /// Items placed before one of their owners because they sit on an ownership cycle (an
    /// item owning itself through others), in the order they were released.
    pub cycle_breaks: Vec<usize>,
}

/// Orders `items` owners before dependents, keeping the input order wherever ownership does
/// not decide (a restore passes items in Velero's priority order and gets that order back,
/// with each dependent moved after its owners): of the items whose owners are all placed,
/// the earliest in the input comes next. Owners absent from `items` are ignored; a cycle is
/// broken at its earliest item, so the order always completes. O((n + e) log n).
pub fn owners_first_order<T: OwnerLinks>(items: &[T]) -> Vec<usize> {
    owners_first(items).order
}

/// [`owners_first_order`], also telling which items were released to break cycles.
pub fn owners_first<T: OwnerLinks>(items: &[T]) -> OwnersFirst {
    order_with(items, &Links::new(items))
}

fn order_with<T: OwnerLinks>(items: &[T], links: &Links<'_>) -> OwnersFirst {
    let count = items.len();
    let mut waiting_on: Vec<usize> = (0..count)
        .map(|index| links.owners_of(index).len())
        .collect();
    let mut ready: BinaryHeap<Reverse<usize>> = (0..count)
        .filter(|&index| waiting_on[index] == 0)
        .map(Reverse)
        .collect();
    let mut placed = vec![false; count];
    let mut result = OwnersFirst {
        order: Vec::with_capacity(count),
        cycle_breaks: Vec::new(),
    };
    let mut first_unplaced = 0;
    let mut walk_stamp = vec![0usize; count];
    let mut walks = 0;

    // Each turn places one item that was not placed yet, so this ends after `count` turns.
    while result.order.len() < count {
        let next = match ready.pop() {
            Some(Reverse(index)) => index,
            None => {
                while placed[first_unplaced] {
                    first_unplaced += 1;
                }
                walks += 1;
                let released = cycle_member(first_unplaced, links, &placed, &mut walk_stamp, walks);
                result.cycle_breaks.push(released);
                released
            }
        };
        placed[next] = true;
        result.order.push(next);
        for &dependent in links.children_of(next) {
            waiting_on[dependent] -= 1;
            if waiting_on[dependent] == 0 && !placed[dependent] {
                ready.push(Reverse(dependent));
            }
        }
    }
    result
}

/// With nothing ready, every unplaced item waits on an unplaced owner, so walking up from
/// `start` through unplaced owners must come back to an item already seen: that item is on a
/// cycle. Returns the earliest (in input order) item of that cycle, so the item released is
/// one a cycle blocks, not a mere dependent of a cycle.
fn cycle_member(
    start: usize,
    links: &Links<'_>,
    placed: &[bool],
    stamp: &mut [usize],
    walk: usize,
) -> usize {
    let unplaced_owner = |index: usize| {
        links
            .owners_of(index)
            .iter()
            .copied()
            .find(|&owner| !placed[owner])
    };
    let mut current = start;
    while stamp[current] != walk {
        stamp[current] = walk;
        match unplaced_owner(current) {
            Some(owner) => current = owner,
            // Cannot happen while nothing is ready; releasing `current` is still correct.
            None => return current,
        }
    }
    // `current` is on the cycle: go round it once for its earliest member.
    let mut earliest = current;
    let mut member = current;
    while let Some(owner) = unplaced_owner(member) {
        if owner == current {
            break;
        }
        earliest = earliest.min(owner);
        member = owner;
    }
    earliest
}

/// Owner and dependent adjacency in compressed rows (two flat vectors each, whatever the
/// number of items), plus the owner UIDs that matched nothing.
#[derive(Debug)]
struct Links<'a> {
    by_uid: HashMap<&'a str, usize>,
    owner_starts: Vec<usize>,
    owners: Vec<usize>,
    child_starts: Vec<usize>,
    children: Vec<usize>,
    missing: Vec<(usize, &'a str)>,
}

impl<'a> Links<'a> {
    fn new<T: OwnerLinks>(items: &'a [T]) -> Self {
        let mut by_uid: HashMap<&'a str, usize> = HashMap::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            if let Some(uid) = item.uid().filter(|uid| !uid.is_empty()) {
                by_uid.entry(uid).or_insert(index);
            }
        }
        let mut owner_starts = Vec::with_capacity(items.len() + 1);
        let mut owners = Vec::new();
        let mut missing = Vec::new();
        for (index, item) in items.iter().enumerate() {
            owner_starts.push(owners.len());
            let start = owners.len();
            for uid in item.owner_uids() {
                match by_uid.get(uid.as_str()) {
                    // An object cannot own itself; Kubernetes' garbage collector ignores such a
                    // reference for ordering too.
                    Some(&owner) if owner == index => {}
                    Some(&owner) => {
                        if !owners[start..].contains(&owner) {
                            owners.push(owner);
                        }
                    }
                    None => missing.push((index, uid.as_str())),
                }
            }
        }
        owner_starts.push(owners.len());

        // Dependents by a counting sort of the edges on their owner; dependents are visited in
        // increasing order, so each row comes out sorted.
        let mut child_starts = vec![0usize; items.len() + 1];
        for &owner in &owners {
            child_starts[owner + 1] += 1;
        }
        for index in 0..items.len() {
            child_starts[index + 1] += child_starts[index];
        }
        let mut fill = child_starts.clone();
        let mut children = vec![0usize; owners.len()];
        for dependent in 0..items.len() {
            for &owner in &owners[owner_starts[dependent]..owner_starts[dependent + 1]] {
                children[fill[owner]] = dependent;
                fill[owner] += 1;
            }
        }
        Self {
            by_uid,
            owner_starts,
            owners,
            child_starts,
            children,
            missing,
        }
    }

    fn owners_of(&self, index: usize) -> &[usize] {
        &self.owners[self.owner_starts[index]..self.owner_starts[index + 1]]
    }

    fn children_of(&self, index: usize) -> &[usize] {
        &self.children[self.child_starts[index]..self.child_starts[index + 1]]
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn item(resource: &str, name: &str, uid: &str, owners: &[&str]) -> ManifestItem {
        ManifestItem {
            group: if resource == "pods" {
                String::new()
            } else {
                "apps".into()
            },
            version: "v1".into(),
            kind: resource.into(),
            resource: resource.into(),
            namespace: Some("shop".into()),
            name: name.into(),
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
            owners: owners.iter().map(|owner| (*owner).to_owned()).collect(),
            uid: Some(uid.into()),
        }
    }

    fn deployment_tree() -> Manifest {
        Manifest::from_items(vec![
            item("pods", "web-1-a", "p-a", &["rs-1"]),
            item("pods", "web-1-b", "p-b", &["rs-1", "rs-1"]),
            item("replicasets", "web-1", "rs-1", &["d-1"]),
            item("deployments", "web", "d-1", &[]),
            item("pods", "orphan", "p-o", &["gone"]),
        ])
    }

    #[test]
    fn owners_and_children_by_key_and_uid() {
        let manifest = deployment_tree();
        let graph = OwnerGraph::new(&manifest);
        let names = |items: Vec<&ManifestItem>| -> Vec<String> {
            items.into_iter().map(|item| item.name.clone()).collect()
        };
        assert_eq!(graph.item_by_uid("rs-1").unwrap().name, "web-1");
        assert!(graph.item_by_uid("gone").is_none());
        assert_eq!(names(graph.owners("pods/shop/v1/web-1-b")), ["web-1"]);
        assert_eq!(
            names(graph.owners("replicasets.apps/shop/v1/web-1")),
            ["web"]
        );
        assert!(graph.owners("deployments.apps/shop/v1/web").is_empty());
        assert_eq!(
            names(graph.children("replicasets.apps/shop/v1/web-1")),
            ["web-1-a", "web-1-b"]
        );
        assert_eq!(
            names(graph.children("deployments.apps/shop/v1/web")),
            ["web-1"]
        );
        assert!(graph.children("pods/shop/v1/nope").is_empty());
        assert_eq!(graph.missing_owners("pods/shop/v1/orphan"), ["gone"]);
        assert!(graph.owners("pods/shop/v1/orphan").is_empty());
    }

    #[test]
    fn owners_come_first_and_key_order_breaks_ties() {
        let manifest = deployment_tree();
        let graph = OwnerGraph::new(&manifest);
        let order: Vec<String> = graph.owners_first().iter().map(|item| item.key()).collect();
        assert_eq!(
            order,
            [
                "deployments.apps/shop/v1/web",
                "pods/shop/v1/orphan",
                "replicasets.apps/shop/v1/web-1",
                "pods/shop/v1/web-1-a",
                "pods/shop/v1/web-1-b",
            ]
        );
    }

    #[test]
    fn input_order_is_kept_where_ownership_does_not_decide() {
        // Velero restores pods before replica sets before deployments by priority; ownership
        // moves each dependent after its owners and leaves unrelated items where they were.
        let items = [
            item("configmaps", "settings", "cm", &[]),
            item("pods", "p", "p", &["rs"]),
            item("secrets", "creds", "s", &[]),
            item("replicasets", "rs", "rs", &["d"]),
            item("deployments", "d", "d", &[]),
            item("services", "svc", "svc", &[]),
        ];
        assert_eq!(owners_first_order(&items), [0, 2, 4, 3, 1, 5]);
        let refs: Vec<&ManifestItem> = items.iter().collect();
        assert_eq!(owners_first_order(&refs), [0, 2, 4, 3, 1, 5]);
        let none: [ManifestItem; 0] = [];
        assert!(owners_first_order(&none).is_empty());
    }

    #[test]
    fn cycles_are_broken_at_a_cycle_member_and_never_loop() {
        // 0 depends on the cycle 1 <-> 2; 3 owns itself; 4 is free.
        let items = [
            item("pods", "dependent", "x", &["a"]),
            item("pods", "a", "a", &["b"]),
            item("pods", "b", "b", &["a"]),
            item("pods", "self", "s", &["s"]),
            item("pods", "free", "f", &[]),
        ];
        let result = owners_first(&items);
        // Releasing `a` frees both `b` and the dependent, which then go in input order.
        assert_eq!(result.order, [3, 4, 1, 0, 2]);
        assert_eq!(
            result.cycle_breaks,
            [1],
            "the dependent is not released early"
        );

        // A longer cycle entered from its middle.
        let items = [
            item("pods", "tail", "t", &["c3"]),
            item("pods", "c1", "c1", &["c3"]),
            item("pods", "c2", "c2", &["c1"]),
            item("pods", "c3", "c3", &["c2"]),
        ];
        let result = owners_first(&items);
        assert_eq!(result.order, [1, 2, 3, 0]);
        assert_eq!(result.cycle_breaks, [1]);

        // Every item waiting on another: still one pass, each once.
        let ring: Vec<ManifestItem> = (0..1000)
            .map(|index| {
                item(
                    "pods",
                    &format!("r{index}"),
                    &format!("u{index}"),
                    &[&format!("u{}", (index + 1) % 1000)],
                )
            })
            .collect();
        let result = owners_first(&ring);
        let mut seen = result.order.clone();
        seen.sort_unstable();
        assert_eq!(seen, (0..1000).collect::<Vec<_>>());
        assert_eq!(result.cycle_breaks.len(), 1);
        assert_eq!(result.order[0], 0);
        assert_eq!(result.order[1], 999, "then owners-first down the ring");
    }

    #[test]
    fn duplicate_and_missing_uids_are_tolerated() {
        let mut no_uid = item("pods", "no-uid", "", &["d"]);
        no_uid.uid = None;
        let items = [
            no_uid,
            item("deployments", "d", "d", &[]),
            item("deployments", "d-copy", "d", &[]),
        ];
        assert_eq!(owners_first_order(&items), [1, 0, 2]);
    }

    #[test]
    fn view_lists_keys_edges_and_missing_owners() {
        let manifest = deployment_tree();
        let view = OwnerGraph::new(&manifest).view();
        assert_eq!(view.nodes.len(), 5);
        assert_eq!(
            view.edges,
            [
                OwnerEdge {
                    owner: "deployments.apps/shop/v1/web".into(),
                    dependent: "replicasets.apps/shop/v1/web-1".into(),
                },
                OwnerEdge {
                    owner: "replicasets.apps/shop/v1/web-1".into(),
                    dependent: "pods/shop/v1/web-1-a".into(),
                },
                OwnerEdge {
                    owner: "replicasets.apps/shop/v1/web-1".into(),
                    dependent: "pods/shop/v1/web-1-b".into(),
                },
            ]
        );
        assert_eq!(
            view.missing_owners,
            [MissingOwner {
                dependent: "pods/shop/v1/orphan".into(),
                owner_uid: "gone".into(),
            }]
        );
        let json = serde_json::to_value(&view).unwrap();
        assert_eq!(json["edges"][0]["owner"], "deployments.apps/shop/v1/web");
        assert_eq!(json["missingOwners"][0]["ownerUid"], "gone");
        let back: OwnerGraphView = serde_json::from_value(json).unwrap();
        assert_eq!(back, view);
    }
}
