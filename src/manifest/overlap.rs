//! Overlap of item sets (seed 002's set view): which objects a new backup or restore shares
//! with the operations already running, so it can be shown as waiting on them with the
//! overlapping items.
//!
//! Sets are [`IdentitySet`]s, sorted and without duplicates by construction, so each
//! comparison is one merge walk, O(n + m) (galloping through the larger set when one is much
//! smaller). Each operation's answer is bounded: the first `limit` identities and the total.
//! The caller decides which running operations a tenant may be told about: an operation of
//! another namespace can share only cluster-scoped objects, and its name is not this tenant's
//! to see.

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

use super::item::{ItemIdentity, Manifest};

/// A set of objects, sorted by identity, each once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IdentitySet {
    identities: Vec<ItemIdentity>,
}

impl IdentitySet {
    /// The set of `identities` (sorted and deduplicated here).
    pub fn new(mut identities: Vec<ItemIdentity>) -> Self {
        identities.sort_unstable();
        identities.dedup();
        Self { identities }
    }

    /// The objects of a manifest (an object stored at two versions counts once).
    pub fn of_manifest(manifest: &Manifest) -> Self {
        Self::new(
            manifest
                .items()
                .iter()
                .map(|item| item.identity())
                .collect(),
        )
    }

    /// The identities, sorted.
    pub fn as_slice(&self) -> &[ItemIdentity] {
        &self.identities
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.identities.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.identities.is_empty()
    }

    /// Whether the set holds `identity`.
    pub fn contains(&self, identity: &ItemIdentity) -> bool {
        self.identities.binary_search(identity).is_ok()
    }
}

impl FromIterator<ItemIdentity> for IdentitySet {
    fn from_iter<I: IntoIterator<Item = ItemIdentity>>(iter: I) -> Self {
        Self::new(iter.into_iter().collect())
    }
}

/// An operation in progress and the objects it touches.
#[derive(Clone, Copy, Debug)]
pub struct RunningOperation<'a> {
    /// How the operation is named to the user (e.g. `backup team-a/nightly`).
    pub operation: &'a str,
    /// The objects it backs up or restores.
    pub items: &'a IdentitySet,
}

/// The objects a new operation shares with one running operation.
// GraphQL's `operation` is a resolver (`gateway::graphql::manifests`), described as the
// gateway names operations.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
#[graphql(complex)]
pub struct OperationOverlap {
    /// The running operation, as given.
    #[graphql(skip)]
    pub operation: String,
    /// How many objects are shared.
    pub total: u64,
    /// The first shared objects in identity order, at most the limit asked for.
    pub items: Vec<ItemIdentity>,
    /// Whether `items` stops short of `total`.
    pub truncated: bool,
}

/// For each running operation that shares objects with `new`, in the order given, the shared
/// objects: at most `limit` listed, all counted. Operations sharing nothing are left out.
pub fn overlaps(
    new: &IdentitySet,
    running: &[RunningOperation<'_>],
    limit: usize,
) -> Vec<OperationOverlap> {
    running
        .iter()
        .filter_map(|operation| {
            let (total, items) = intersect(new.as_slice(), operation.items.as_slice(), limit);
            (total > 0).then(|| OperationOverlap {
                operation: operation.operation.to_owned(),
                total,
                truncated: (items.len() as u64) < total,
                items,
            })
        })
        .collect()
}

/// Counts the common elements of two sorted, duplicate-free slices and keeps the first
/// `limit`. The smaller side leads; the larger is searched by galloping (doubling steps,
/// then a binary search), so a small set against a large one costs O(m log(n/m)) and two
/// sets of similar sizes O(n + m).
fn intersect(a: &[ItemIdentity], b: &[ItemIdentity], limit: usize) -> (u64, Vec<ItemIdentity>) {
    let (small, mut large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let mut total = 0u64;
    let mut kept = Vec::new();
    for identity in small {
        let skip = gallop(large, identity);
        large = &large[skip..];
        let Some(first) = large.first() else {
            break;
        };
        if first == identity {
            total += 1;
            if kept.len() < limit {
                kept.push(identity.clone());
            }
            large = &large[1..];
        }
    }
    (total, kept)
}

/// How many leading elements of sorted `slice` are less than `target`.
fn gallop(slice: &[ItemIdentity], target: &ItemIdentity) -> usize {
    let mut step = 1;
    let mut high = 0;
    // Find a window [high / 2 .. high] that holds the first element not less than `target`.
    while high < slice.len() && slice[high].cmp(target) == Ordering::Less {
        high += step;
        step *= 2;
    }
    let low = high.saturating_sub(step / 2).min(slice.len());
    let high = high.min(slice.len());
    low + slice[low..high].partition_point(|probe| probe < target)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn id(resource: &str, namespace: Option<&str>, name: &str) -> ItemIdentity {
        ItemIdentity {
            group_resource: resource.into(),
            namespace: namespace.map(Into::into),
            name: name.into(),
        }
    }

    fn pods(names: impl IntoIterator<Item = usize>) -> IdentitySet {
        names
            .into_iter()
            .map(|index| id("pods", Some("shop"), &format!("p{index:05}")))
            .collect()
    }

    #[test]
    fn reports_shared_items_per_running_operation() {
        let new = IdentitySet::new(vec![
            id("pods", Some("shop"), "a"),
            id("configmaps", Some("shop"), "c"),
            id("namespaces", None, "shop"),
            id("pods", Some("shop"), "a"),
        ]);
        assert_eq!(new.len(), 3, "deduplicated");
        let backup = IdentitySet::new(vec![
            id("configmaps", Some("shop"), "c"),
            id("pods", Some("shop"), "a"),
            id("pods", Some("shop"), "b"),
        ]);
        let other = IdentitySet::new(vec![id("pods", Some("elsewhere"), "a")]);
        let restore = IdentitySet::new(vec![id("namespaces", None, "shop")]);
        let result = overlaps(
            &new,
            &[
                RunningOperation {
                    operation: "backup shop/nightly",
                    items: &backup,
                },
                RunningOperation {
                    operation: "backup elsewhere/x",
                    items: &other,
                },
                RunningOperation {
                    operation: "restore shop/r1",
                    items: &restore,
                },
            ],
            10,
        );
        assert_eq!(
            result,
            [
                OperationOverlap {
                    operation: "backup shop/nightly".into(),
                    total: 2,
                    items: vec![
                        id("configmaps", Some("shop"), "c"),
                        id("pods", Some("shop"), "a")
                    ],
                    truncated: false,
                },
                OperationOverlap {
                    operation: "restore shop/r1".into(),
                    total: 1,
                    items: vec![id("namespaces", None, "shop")],
                    truncated: false,
                },
            ]
        );
        assert!(new.contains(&id("namespaces", None, "shop")));
        assert!(!new.contains(&id("namespaces", None, "other")));
    }

    #[test]
    fn bounded_lists_count_everything() {
        let new = pods(0..10_000);
        let running = pods((0..20_000).step_by(2));
        let result = overlaps(
            &new,
            &[RunningOperation {
                operation: "b",
                items: &running,
            }],
            3,
        );
        assert_eq!(result[0].total, 5_000);
        assert_eq!(
            result[0].items,
            pods([0, 2, 4]).as_slice().to_vec(),
            "first in identity order"
        );
        assert!(result[0].truncated);
        let none = overlaps(
            &new,
            &[RunningOperation {
                operation: "b",
                items: &running,
            }],
            0,
        );
        assert_eq!((none[0].total, none[0].items.len()), (5_000, 0));
    }

    #[test]
    fn small_against_large_agrees_with_a_naive_count() {
        let large = pods(0..50_000);
        for small in [
            pods([0]),
            pods([49_999]),
            pods([3, 70_000, 12_345, 49_998]),
            pods((0..100).map(|index| index * 701)),
            IdentitySet::default(),
        ] {
            let naive = small
                .as_slice()
                .iter()
                .filter(|identity| large.contains(identity))
                .count() as u64;
            let (total, items) = intersect(small.as_slice(), large.as_slice(), usize::MAX);
            assert_eq!(total, naive);
            assert_eq!(items.len() as u64, naive);
            let (swapped, _) = intersect(large.as_slice(), small.as_slice(), 0);
            assert_eq!(swapped, naive);
        }
    }

    #[test]
    fn gallop_finds_the_lower_bound() {
        let set = pods((0..100).map(|index| index * 2));
        let slice = set.as_slice();
        for probe in 0..205 {
            let target = id("pods", Some("shop"), &format!("p{probe:05}"));
            assert_eq!(
                gallop(slice, &target),
                slice.partition_point(|item| item < &target),
                "{probe}"
            );
        }
        assert_eq!(gallop(&[], &id("a", None, "b")), 0);
    }

    #[test]
    fn serializes_camel_case() {
        let overlap = OperationOverlap {
            operation: "backup a/b".into(),
            total: 1,
            items: vec![id("pods", Some("a"), "p")],
            truncated: false,
        };
        let json = serde_json::to_value(&overlap).unwrap();
        assert_eq!(json["items"][0]["groupResource"], "pods");
        assert_eq!(
            serde_json::from_value::<OperationOverlap>(json).unwrap(),
            overlap
        );
    }
}
