//! The difference between two backups' manifests: items added, removed and changed, matched by
//! [`ItemIdentity`] (group-resource, namespace, name), so an object stored at another version
//! by the later backup is the same object, changed.
//!
//! What counts as a change: the version it was stored at, its labels, its annotations, and its
//! owners *by identity*. UIDs are not compared: an object deleted and re-created between two
//! backups (or restored) gets a new UID and is still the same object to its owner, and its
//! owners' UIDs change the same way. So each owner UID is resolved, within its own manifest, to
//! the owner's identity; an owner the backup does not hold stays a bare UID and compares as
//! one.

use std::cmp::Ordering;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::item::{ItemIdentity, Manifest, ManifestItem};

/// Items added, removed and changed from one manifest to another.
// Flattened into GraphQL's `BackupDiff` (no GraphQL type of its own).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
pub struct ManifestDiff {
    /// In the later manifest only, in identity order.
    pub added: Vec<ManifestItem>,
    /// In the earlier manifest only, in identity order.
    pub removed: Vec<ManifestItem>,
    /// In both, with different fields, in identity order.
    pub changed: Vec<ChangedItem>,
    /// How many items are in both and the same.
    pub unchanged: u64,
}

impl ManifestDiff {
    /// Whether the two manifests hold the same objects with the same fields.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// An object in both manifests whose fields differ.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
pub struct ChangedItem {
    /// Which object.
    pub identity: ItemIdentity,
    /// Which fields differ, in this enum's order.
    pub fields: Vec<ChangedField>,
    /// The object in the earlier manifest.
    pub before: ManifestItem,
    /// The object in the later manifest.
    pub after: ManifestItem,
}

/// A field of an item that differs between two manifests.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::Enum)]
pub enum ChangedField {
    /// Stored at another API version.
    Version,
    /// Labels added, removed or changed.
    Labels,
    /// Annotations added, removed or changed.
    Annotations,
    /// Owned by other objects (compared by identity, not UID).
    Owners,
}

/// The difference from `before` to `after`: one merge walk over both manifests in identity
/// order. Should a manifest hold one object twice (at two versions; a built manifest never
/// does), its copies pair up with the other side's in version order.
pub fn diff_manifests(before: &Manifest, after: &Manifest) -> ManifestDiff {
    let before_side = Side::new(before);
    let after_side = Side::new(after);
    let mut diff = ManifestDiff::default();
    let (mut left, mut right) = (0, 0);
    while left < before_side.order.len() && right < after_side.order.len() {
        let old = before_side.item(left);
        let new = after_side.item(right);
        match old.cmp_identity(new) {
            Ordering::Less => {
                diff.removed.push(old.clone());
                left += 1;
            }
            Ordering::Greater => {
                diff.added.push(new.clone());
                right += 1;
            }
            Ordering::Equal => {
                let fields = changed_fields(old, &before_side, new, &after_side);
                if fields.is_empty() {
                    diff.unchanged += 1;
                } else {
                    diff.changed.push(ChangedItem {
                        identity: new.identity(),
                        fields,
                        before: old.clone(),
                        after: new.clone(),
                    });
                }
                left += 1;
                right += 1;
            }
        }
    }
    diff.removed
        .extend((left..before_side.order.len()).map(|position| before_side.item(position).clone()));
    diff.added
        .extend((right..after_side.order.len()).map(|position| after_side.item(position).clone()));
    diff
}

/// One manifest prepared for the walk: its items in identity order and its UID index.
struct Side<'m> {
    items: &'m [ManifestItem],
    /// Indexes into `items`, in identity (then version) order. Keys sort by version before
    /// name, so key order is not identity order.
    order: Vec<usize>,
    by_uid: HashMap<&'m str, usize>,
}

impl<'m> Side<'m> {
    fn new(manifest: &'m Manifest) -> Self {
        let items = manifest.items();
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by(|&a, &b| {
            items[a]
                .cmp_identity(&items[b])
                .then_with(|| items[a].version.cmp(&items[b].version))
        });
        // Built lazily would save little: most manifests have owners.
        let mut by_uid = HashMap::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            if let Some(uid) = item.uid.as_deref() {
                by_uid.entry(uid).or_insert(index);
            }
        }
        Self {
            items,
            order,
            by_uid,
        }
    }

    fn item(&self, position: usize) -> &'m ManifestItem {
        &self.items[self.order[position]]
    }

    /// An owner UID as the owner's identity when this manifest holds it.
    fn owner(&self, uid: &'m str) -> OwnerRef<'m> {
        match self.by_uid.get(uid) {
            Some(&index) => OwnerRef::Item(&self.items[index]),
            None => OwnerRef::Missing(uid),
        }
    }

    /// The owners of `item`, sorted and each once.
    fn owners(&self, item: &'m ManifestItem) -> Vec<OwnerRef<'m>> {
        let mut owners: Vec<OwnerRef<'m>> = item
            .owners
            .iter()
            .map(|uid| self.owner(uid.as_str()))
            .collect();
        owners.sort_by(OwnerRef::compare);
        owners.dedup_by(|a, b| a.compare(b).is_eq());
        owners
    }
}

/// An owner, by identity when known.
#[derive(Clone, Copy)]
enum OwnerRef<'m> {
    Item(&'m ManifestItem),
    Missing(&'m str),
}

impl OwnerRef<'_> {
    fn compare(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Self::Item(a), Self::Item(b)) => a.cmp_identity(b),
            (Self::Item(_), Self::Missing(_)) => Ordering::Less,
            (Self::Missing(_), Self::Item(_)) => Ordering::Greater,
            (Self::Missing(a), Self::Missing(b)) => a.cmp(b),
        }
    }
}

fn changed_fields<'m>(
    old: &'m ManifestItem,
    old_side: &Side<'m>,
    new: &'m ManifestItem,
    new_side: &Side<'m>,
) -> Vec<ChangedField> {
    let mut fields = Vec::new();
    if old.version != new.version {
        fields.push(ChangedField::Version);
    }
    if old.labels != new.labels {
        fields.push(ChangedField::Labels);
    }
    if old.annotations != new.annotations {
        fields.push(ChangedField::Annotations);
    }
    // Same UIDs are the same objects (a UID is never reused), so only differing lists need
    // resolving.
    if old.owners != new.owners {
        let old_owners = old_side.owners(old);
        let new_owners = new_side.owners(new);
        let same = old_owners.len() == new_owners.len()
            && old_owners
                .iter()
                .zip(&new_owners)
                .all(|(a, b)| a.compare(b).is_eq());
        if !same {
            fields.push(ChangedField::Owners);
        }
    }
    fields
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn item(resource: &str, name: &str, uid: &str, owners: &[&str]) -> ManifestItem {
        ManifestItem {
            group: String::new(),
            version: "v1".into(),
            kind: resource.into(),
            resource: resource.into(),
            namespace: Some("shop".into()),
            name: name.into(),
            labels: BTreeMap::from([("app".to_owned(), "web".to_owned())]),
            annotations: BTreeMap::new(),
            owners: owners.iter().map(|owner| (*owner).to_owned()).collect(),
            uid: Some(uid.into()),
        }
    }

    fn names(items: &[ManifestItem]) -> Vec<&str> {
        items.iter().map(|item| item.name.as_str()).collect()
    }

    #[test]
    fn added_removed_changed_and_unchanged() {
        let before = Manifest::from_items(vec![
            item("configmaps", "kept", "c-1", &[]),
            item("configmaps", "gone", "c-2", &[]),
            item("configmaps", "relabelled", "c-3", &[]),
            item("pods", "p", "p-1", &["rs-old"]),
            item("replicasets", "rs", "rs-old", &[]),
        ]);
        let mut relabelled = item("configmaps", "relabelled", "c-3", &[]);
        relabelled.labels.insert("tier".into(), "front".into());
        relabelled
            .annotations
            .insert("note".into(), "changed".into());
        let mut upgraded = item("replicasets", "rs", "rs-new", &[]);
        upgraded.version = "v2".into();
        let after = Manifest::from_items(vec![
            // Re-created: new UID, same fields.
            item("configmaps", "kept", "c-1-new", &[]),
            relabelled,
            item("configmaps", "new", "c-4", &[]),
            // Owned by the re-created replica set: same owner by identity.
            item("pods", "p", "p-1", &["rs-new"]),
            upgraded,
        ]);
        let diff = diff_manifests(&before, &after);
        assert_eq!(names(&diff.added), ["new"]);
        assert_eq!(names(&diff.removed), ["gone"]);
        let changed: Vec<(&str, &[ChangedField])> = diff
            .changed
            .iter()
            .map(|change| (change.identity.name.as_str(), change.fields.as_slice()))
            .collect();
        assert_eq!(
            changed,
            [
                (
                    "relabelled",
                    &[ChangedField::Labels, ChangedField::Annotations][..]
                ),
                ("rs", &[ChangedField::Version][..]),
            ]
        );
        assert_eq!(diff.changed[1].before.version, "v1");
        assert_eq!(diff.changed[1].after.version, "v2");
        assert_eq!(diff.unchanged, 2, "kept (new uid) and p (same owner)");
        assert!(!diff.is_empty());
        assert!(diff_manifests(&after, &after).is_empty());
        assert_eq!(diff_manifests(&after, &after).unchanged, 5);
    }

    #[test]
    fn owners_compare_by_identity() {
        let before = Manifest::from_items(vec![
            item("pods", "p", "p", &["a", "b"]),
            item("pods", "q", "q", &["gone-1"]),
            item("replicasets", "a", "a", &[]),
            item("replicasets", "b", "b", &[]),
        ]);
        let after = Manifest::from_items(vec![
            // Same owners, listed the other way round and once twice.
            item("pods", "p", "p", &["b", "a", "b"]),
            // An owner outside the backup, with another UID: cannot be told the same.
            item("pods", "q", "q", &["gone-2"]),
            item("replicasets", "a", "a", &[]),
            item("replicasets", "b", "b", &[]),
        ]);
        let diff = diff_manifests(&before, &after);
        assert_eq!(diff.changed.len(), 1);
        assert_eq!(diff.changed[0].identity.name, "q");
        assert_eq!(diff.changed[0].fields, [ChangedField::Owners]);

        // Owned by another object.
        let after = Manifest::from_items(vec![
            item("pods", "p", "p", &["a"]),
            item("pods", "q", "q", &["gone-1"]),
            item("replicasets", "a", "a", &[]),
            item("replicasets", "b", "b", &[]),
        ]);
        let diff = diff_manifests(&before, &after);
        assert_eq!(diff.changed.len(), 1);
        assert_eq!(diff.changed[0].identity.name, "p");
    }

    #[test]
    fn merge_walk_follows_identity_not_key_order() {
        // Keys sort by version before name: "pods/shop/v1/z" < "pods/shop/v2/a". Identity
        // order is by name, and the walk must pair each object with itself.
        let mut a_v2 = item("pods", "a", "a", &[]);
        a_v2.version = "v2".into();
        let before = Manifest::from_items(vec![a_v2, item("pods", "z", "z", &[])]);
        let after = Manifest::from_items(vec![item("pods", "a", "a", &[]), {
            let mut z = item("pods", "z", "z", &[]);
            z.version = "v2".into();
            z
        }]);
        let diff = diff_manifests(&before, &after);
        assert!(diff.added.is_empty() && diff.removed.is_empty(), "{diff:?}");
        assert_eq!(diff.changed.len(), 2);
        assert!(
            diff.changed
                .iter()
                .all(|change| change.fields == [ChangedField::Version])
        );

        // Cluster-scoped and namespaced objects of one name are different objects.
        let mut cluster = item("pods", "a", "a", &[]);
        cluster.namespace = None;
        let diff = diff_manifests(
            &Manifest::from_items(vec![cluster]),
            &Manifest::from_items(vec![item("pods", "a", "a", &[])]),
        );
        assert_eq!((diff.added.len(), diff.removed.len()), (1, 1));

        let empty = Manifest::new();
        let diff = diff_manifests(&empty, &before);
        assert_eq!(names(&diff.added), ["a", "z"]);
        let diff = diff_manifests(&before, &empty);
        assert_eq!(names(&diff.removed), ["a", "z"]);
    }

    #[test]
    fn serializes_camel_case() {
        let before = Manifest::from_items(vec![item("pods", "p", "p", &[])]);
        let mut changed = item("pods", "p", "p", &[]);
        changed.labels.clear();
        let diff = diff_manifests(&before, &Manifest::from_items(vec![changed]));
        let json = serde_json::to_value(&diff).unwrap();
        assert_eq!(json["changed"][0]["fields"], serde_json::json!(["labels"]));
        assert_eq!(json["changed"][0]["identity"]["groupResource"], "pods");
        assert_eq!(json["unchanged"], 0);
        let back: ManifestDiff = serde_json::from_value(json).unwrap();
        assert_eq!(back, diff);
    }
}
