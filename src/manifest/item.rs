//! The backup manifest (seed 002): for each object a backup holds, the fields that decide
//! inclusion, exclusion, ownership and overlap — never the object's data.
//!
//! An item is named the way Velero's tarball names it (seed 002's `Itemer.String()`):
//! `<resource>[.<group>]/<namespace or "cluster">/<version>/<name>`, which is also the key of the
//! manifest's set view. Items are kept sorted by that key, so two manifests compare, diff and
//! intersect by a merge walk, and `manifest.json` is byte-stable for the same contents.

use std::collections::BTreeMap;

use async_graphql::Json;
use serde::{Deserialize, Serialize};

/// Labels or annotations of an item.
type Labels = BTreeMap<String, String>;

/// `apiVersion` of an exported manifest (`manifest.json`).
pub const MANIFEST_API_VERSION: &str = "oadp.openshift.io/v1alpha1";
/// `kind` of an exported manifest.
pub const MANIFEST_KIND: &str = "BackupManifest";
/// The path segment standing for "no namespace" in an item key (Velero's `cluster` directory).
pub const CLUSTER_SCOPE: &str = "cluster";

/// One object of a backup, reduced to its selectable fields.
// GraphQL's `key`, `apiVersion` and `groupResource` are resolvers (`gateway::graphql::manifests`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
#[graphql(complex)]
pub struct ManifestItem {
    /// API group; empty for the core group.
    pub group: String,
    /// Version within the group (the version the backup stored).
    pub version: String,
    /// Kind, e.g. `Deployment`.
    pub kind: String,
    /// Plural resource name, e.g. `deployments`.
    pub resource: String,
    /// Namespace; absent for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Object name.
    pub name: String,
    /// Labels at backup time.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    // `JSON` in GraphQL (not `JSONObject`), as it always has been.
    #[graphql(
        skip,
        derived(name = "labels", into = "Json<Labels>", owned, with = "Json")
    )]
    pub labels: BTreeMap<String, String>,
    /// Annotations at backup time.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[graphql(
        skip,
        derived(name = "annotations", into = "Json<Labels>", owned, with = "Json")
    )]
    pub annotations: BTreeMap<String, String>,
    /// UIDs of the objects named in `metadata.ownerReferences`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owners: Vec<String>,
    /// The object's UID at backup time (links owners; never used to restore).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
}

/// The annotation `kubectl apply` keeps the whole applied object in (a Secret's values
/// included): never kept in a manifest, whatever the kind.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Whether items of `resource` in `group` hold credentials, so that even their annotations'
/// values stay out of a manifest (OpenShift keeps service-account tokens in
/// `openshift.io/token-secret.value`).
pub fn holds_credentials(group: &str, resource: &str) -> bool {
    group.is_empty() && resource == "secrets"
}

impl ManifestItem {
    /// The item as a manifest may keep it: without [`LAST_APPLIED_ANNOTATION`], and for kinds
    /// that [hold credentials](holds_credentials) with annotation keys only (empty values).
    /// Applied where items are built and again where stored manifests are read, so manifests
    /// stored before this rule existed do not show what it removes.
    pub fn redacted(mut self) -> Self {
        self.annotations.remove(LAST_APPLIED_ANNOTATION);
        if holds_credentials(&self.group, &self.resource) {
            for value in self.annotations.values_mut() {
                value.clear();
            }
        }
        self
    }

    /// Whether [`redacted`](Self::redacted) would change the item.
    pub fn needs_redaction(&self) -> bool {
        self.annotations.contains_key(LAST_APPLIED_ANNOTATION)
            || (holds_credentials(&self.group, &self.resource)
                && self.annotations.values().any(|value| !value.is_empty()))
    }

    /// `<resource>.<group>`, or `<resource>` for the core group (Velero's group-resource).
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }

    /// `<group>/<version>`, or `<version>` for the core group, as in `apiVersion`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The item's key in the set view: `<resource>[.<group>]/<namespace|cluster>/<version>/<name>`.
    pub fn key(&self) -> String {
        self.key_pieces().concat()
    }

    /// Appends the item's [`key`](Self::key) to `out`.
    fn push_key(&self, out: &mut String) {
        for piece in self.key_pieces() {
            out.push_str(piece);
        }
    }

    /// The identity used to compare items across backups and with the live cluster: the
    /// group-resource, namespace and name (not the version: the same object may be stored at
    /// another version by another backup).
    pub fn identity(&self) -> ItemIdentity {
        ItemIdentity {
            group_resource: self.group_resource(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }

    /// Orders two items as their [`key`](Self::key)s order, without building the keys (no
    /// allocation): a manifest of many items is sorted by key.
    pub fn cmp_key(&self, other: &Self) -> std::cmp::Ordering {
        cmp_pieces(&self.key_pieces(), &other.key_pieces())
    }

    /// The pieces [`key`](Self::key) joins, in order.
    fn key_pieces(&self) -> [&str; 9] {
        let [resource, dot, group] = group_resource_pieces(&self.resource, &self.group);
        [
            resource,
            dot,
            group,
            "/",
            self.namespace.as_deref().unwrap_or(CLUSTER_SCOPE),
            "/",
            &self.version,
            "/",
            &self.name,
        ]
    }

    /// Orders two items as their [`ItemIdentity`]s order, without building them (no
    /// allocation): sorting and merging large manifests by identity stays cheap.
    pub fn cmp_identity(&self, other: &Self) -> std::cmp::Ordering {
        cmp_group_resource(&self.resource, &self.group, &other.resource, &other.group)
            .then_with(|| self.namespace.cmp(&other.namespace))
            .then_with(|| self.name.cmp(&other.name))
    }

    /// Orders this item against an identity as [`ItemIdentity`]'s order does.
    pub fn cmp_to_identity(&self, identity: &ItemIdentity) -> std::cmp::Ordering {
        cmp_pieces(
            &group_resource_pieces(&self.resource, &self.group),
            &[&identity.group_resource],
        )
        .then_with(|| self.namespace.cmp(&identity.namespace))
        .then_with(|| self.name.cmp(&identity.name))
    }
}

/// The pieces of `<resource>[.<group>]`, without allocating the string.
fn group_resource_pieces<'a>(resource: &'a str, group: &'a str) -> [&'a str; 3] {
    let dot = if group.is_empty() { "" } else { "." };
    [resource, dot, group]
}

/// Compares two group-resources as their `<resource>[.<group>]` strings compare.
fn cmp_group_resource(
    resource: &str,
    group: &str,
    other_resource: &str,
    other_group: &str,
) -> std::cmp::Ordering {
    if group.is_empty() && other_group.is_empty() {
        // The core group: the strings are the resources. (With a group, comparing resources
        // first would be wrong: "a-b.g" < "a.g" although "a-b" > "a".)
        resource.cmp(other_resource)
    } else {
        cmp_pieces(
            &group_resource_pieces(resource, group),
            &group_resource_pieces(other_resource, other_group),
        )
    }
}

/// Compares the concatenations of `a`'s and `b`'s pieces, a common prefix at a time (one
/// `memcmp` each) rather than byte by byte.
fn cmp_pieces(a: &[&str], b: &[&str]) -> std::cmp::Ordering {
    let (mut a, mut b) = (a.iter(), b.iter());
    let (mut x, mut y): (&[u8], &[u8]) = (b"", b"");
    loop {
        while x.is_empty() {
            match a.next() {
                Some(piece) => x = piece.as_bytes(),
                None => break,
            }
        }
        while y.is_empty() {
            match b.next() {
                Some(piece) => y = piece.as_bytes(),
                None => break,
            }
        }
        if x.is_empty() || y.is_empty() {
            // One side is exhausted: the shorter string orders first.
            return x.len().cmp(&y.len());
        }
        let common = x.len().min(y.len());
        match x[..common].cmp(&y[..common]) {
            std::cmp::Ordering::Equal => {
                x = &x[common..];
                y = &y[common..];
            }
            unequal => return unequal,
        }
    }
}

/// Puts `items` in `order` (`order[i]` is the index of the item that goes to position `i`),
/// moving each item once, as `slice::sort_by_cached_key` does: position `i` takes the item
/// `order[i]` named, following where earlier swaps moved it.
fn permute<T>(items: &mut [T], mut order: Vec<usize>) {
    for i in 0..order.len() {
        let mut index = order[i];
        while index < i {
            index = order[index];
        }
        order[i] = index;
        items.swap(i, index);
    }
}

/// Which object an item is, whatever version it was stored at.
#[derive(
    Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
pub struct ItemIdentity {
    /// `<resource>[.<group>]`.
    pub group_resource: String,
    /// Namespace; absent for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Object name.
    pub name: String,
}

/// How many items of one kind a manifest holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
pub struct KindCount {
    /// API group; empty for the core group.
    pub group: String,
    /// Kind.
    pub kind: String,
    /// Plural resource name.
    pub resource: String,
    /// Number of items.
    pub count: u64,
}

/// The manifest of one backup: its items sorted by [`ManifestItem::key`], each key once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    items: Vec<ManifestItem>,
}

/// An item whose key is already in the manifest (seed 002's `ItemAlreadyExists`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("item {key} already exists in the manifest")]
pub struct ItemAlreadyExists {
    /// The duplicate key.
    pub key: String,
}

impl Manifest {
    /// An empty manifest.
    pub fn new() -> Self {
        Self::default()
    }

    /// A manifest of `items`, sorted; later duplicates of a key are dropped (a tarball stores
    /// each item twice — legacy path and preferred version — and both describe one object).
    pub fn from_items(items: Vec<ManifestItem>) -> Self {
        Self::from_items_by(items, |_, _| std::cmp::Ordering::Equal)
    }

    /// [`from_items`](Self::from_items), keeping of the items of one key the first by `tie`
    /// (the first given among those `tie` finds equal).
    pub(crate) fn from_items_by(
        mut items: Vec<ManifestItem>,
        tie: impl Fn(&ManifestItem, &ManifestItem) -> std::cmp::Ordering,
    ) -> Self {
        // Every key written once, side by side: the sort compares plain strings within a few
        // megabytes instead of chasing each item's fields around the heap (or building a key
        // per comparison), and sorts indices, so that an item (a few hundred bytes) moves once.
        let mut keys = String::with_capacity(items.len() * 48);
        let mut ends = Vec::with_capacity(items.len());
        for item in &items {
            item.push_key(&mut keys);
            ends.push(keys.len());
        }
        let key = |index: usize| {
            let start = if index == 0 { 0 } else { ends[index - 1] };
            &keys[start..ends[index]]
        };
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by(|&a, &b| key(a).cmp(key(b)).then_with(|| tie(&items[a], &items[b])));
        let first_of_key: Vec<bool> = order
            .iter()
            .enumerate()
            .map(|(position, &index)| position == 0 || key(order[position - 1]) != key(index))
            .collect();
        permute(&mut items, order);
        let mut first = first_of_key.into_iter();
        items.retain(|_| first.next().unwrap_or(false));
        Self { items }
    }

    /// Adds one item; refuses a key already present.
    pub fn add(&mut self, item: ManifestItem) -> Result<(), ItemAlreadyExists> {
        match self.items.binary_search_by(|probe| probe.cmp_key(&item)) {
            Ok(_) => Err(ItemAlreadyExists { key: item.key() }),
            Err(position) => {
                self.items.insert(position, item);
                Ok(())
            }
        }
    }

    /// The items, sorted by key.
    pub fn items(&self) -> &[ManifestItem] {
        &self.items
    }

    /// Takes the items out, sorted by key.
    pub fn into_items(self) -> Vec<ManifestItem> {
        self.items
    }

    /// Number of items.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the manifest holds nothing.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The item with `key`, if any.
    pub fn get(&self, key: &str) -> Option<&ManifestItem> {
        self.items
            .binary_search_by(|probe| cmp_pieces(&probe.key_pieces(), &[key]))
            .ok()
            .map(|index| &self.items[index])
    }

    /// The set view: every item's key, sorted.
    pub fn keys(&self) -> impl Iterator<Item = String> + '_ {
        self.items.iter().map(ManifestItem::key)
    }

    /// Items per kind, sorted by group then kind.
    pub fn counts_by_kind(&self) -> Vec<KindCount> {
        let mut counts: BTreeMap<(String, String, String), u64> = BTreeMap::new();
        for item in &self.items {
            *counts
                .entry((item.group.clone(), item.kind.clone(), item.resource.clone()))
                .or_default() += 1;
        }
        counts
            .into_iter()
            .map(|((group, kind, resource), count)| KindCount {
                group,
                kind,
                resource,
                count,
            })
            .collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    pub(crate) fn item(
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> ManifestItem {
        ManifestItem {
            group: group.into(),
            version: "v1".into(),
            kind: resource.trim_end_matches('s').into(),
            resource: resource.into(),
            namespace: namespace.map(Into::into),
            name: name.into(),
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
            owners: Vec::new(),
            uid: None,
        }
    }

    #[test]
    fn redaction_drops_last_applied_everywhere_and_secret_annotation_values() {
        let mut secret = item("", "secrets", Some("team-a"), "db-creds");
        secret.annotations.insert(
            LAST_APPLIED_ANNOTATION.into(),
            r#"{"stringData":{"password":"hunter2"}}"#.into(),
        );
        secret.annotations.insert(
            "openshift.io/token-secret.value".into(),
            "eyJhbGciOi".into(),
        );
        assert!(secret.needs_redaction());
        let secret = secret.redacted();
        assert!(!secret.needs_redaction());
        assert_eq!(
            secret.annotations,
            BTreeMap::from([("openshift.io/token-secret.value".into(), String::new())])
        );
        let mut config = item("", "configmaps", Some("team-a"), "settings");
        config
            .annotations
            .insert(LAST_APPLIED_ANNOTATION.into(), "{}".into());
        config.annotations.insert("note".into(), "kept".into());
        let config = config.redacted();
        assert_eq!(
            config.annotations,
            BTreeMap::from([("note".into(), "kept".into())])
        );
        // A custom resource named secrets in another group holds no core Secret.
        assert!(!holds_credentials("example.com", "secrets"));
    }

    #[test]
    fn keys_follow_velero_tarball_paths() {
        assert_eq!(
            item("apps", "deployments", Some("team-a"), "web").key(),
            "deployments.apps/team-a/v1/web"
        );
        assert_eq!(
            item("", "namespaces", None, "team-a").key(),
            "namespaces/cluster/v1/team-a"
        );
        assert_eq!(
            item("apps", "deployments", None, "x").api_version(),
            "apps/v1"
        );
        assert_eq!(item("", "configmaps", Some("a"), "x").api_version(), "v1");
    }

    #[test]
    fn items_are_sorted_and_unique() {
        let mut manifest = Manifest::from_items(vec![
            item("", "secrets", Some("a"), "s"),
            item("", "configmaps", Some("a"), "c"),
            item("", "configmaps", Some("a"), "c"),
        ]);
        assert_eq!(
            manifest.keys().collect::<Vec<_>>(),
            ["configmaps/a/v1/c", "secrets/a/v1/s"]
        );
        assert_eq!(
            manifest.add(item("", "configmaps", Some("a"), "c")),
            Err(ItemAlreadyExists {
                key: "configmaps/a/v1/c".into()
            })
        );
        manifest.add(item("", "pods", Some("a"), "p")).unwrap();
        assert_eq!(manifest.len(), 3);
        assert_eq!(manifest.get("pods/a/v1/p").unwrap().name, "p");
        assert!(manifest.get("pods/a/v1/q").is_none());
    }

    #[test]
    fn counts_group_by_kind() {
        let manifest = Manifest::from_items(vec![
            item("", "configmaps", Some("a"), "c1"),
            item("", "configmaps", Some("a"), "c2"),
            item("apps", "deployments", Some("a"), "d"),
        ]);
        let counts = manifest.counts_by_kind();
        assert_eq!(counts.len(), 2);
        assert_eq!((counts[0].kind.as_str(), counts[0].count), ("configmap", 2));
        assert_eq!((counts[1].group.as_str(), counts[1].count), ("apps", 1));
    }

    #[test]
    fn identity_order_needs_no_allocation_and_agrees_with_item_identity() {
        let items = [
            item("g", "a-b", Some("n"), "x"),
            item("g", "a", Some("n"), "x"),
            item("", "a", Some("n"), "x"),
            item("", "a-b", None, "x"),
            item("", "a", None, "y"),
            item("h", "a", Some("n"), "x"),
            item("g.h", "a", Some("n"), "x"),
            item("", "a.g", Some("n"), "x"),
            item("", "pods", Some("n"), "b"),
            item("", "pods", Some("m"), "c"),
        ];
        for a in &items {
            for b in &items {
                assert_eq!(
                    a.cmp_identity(b),
                    a.identity().cmp(&b.identity()),
                    "{} vs {}",
                    a.key(),
                    b.key()
                );
                assert_eq!(
                    a.cmp_to_identity(&b.identity()),
                    a.identity().cmp(&b.identity())
                );
            }
        }
    }

    #[test]
    fn key_order_needs_no_allocation_and_agrees_with_keys() {
        let mut cluster_named = item("", "pods", Some("cluster"), "x");
        cluster_named.version = "v1/x".into();
        let mut slashed = item("", "pods", None, "x/v1/x");
        slashed.version = String::new();
        let items = [
            item("g", "a-b", Some("n"), "x"),
            item("g", "a", Some("n"), "x"),
            item("", "a", Some("n"), "x"),
            item("", "a", Some("n"), "x-y"),
            item("", "a", Some("n"), ""),
            item("", "a-b", None, "x"),
            item("", "a", None, "y"),
            item("", "a", Some("cluster"), "y"),
            item("g.h", "a", Some("n"), "x"),
            item("", "a.g", Some("n"), "x"),
            cluster_named,
            slashed,
        ];
        for a in &items {
            for b in &items {
                assert_eq!(
                    a.cmp_key(b),
                    a.key().cmp(&b.key()),
                    "{} vs {}",
                    a.key(),
                    b.key()
                );
            }
        }
    }

    #[test]
    fn sorting_is_stable_and_keeps_the_first_of_equal_keys() {
        let mut first = item("", "a", None, "y");
        first.uid = Some("first".into());
        let mut second = item("", "a", Some("cluster"), "y");
        second.uid = Some("second".into());
        let items = vec![
            item("", "b", Some("n"), "x"),
            first,
            item("", "a", Some("n"), "z"),
            second,
            item("apps", "a", Some("n"), "x"),
        ];
        let mut expected = items.clone();
        expected.sort_by_cached_key(ManifestItem::key);
        expected.dedup_by(|later, earlier| later.key() == earlier.key());
        let manifest = Manifest::from_items(items.clone());
        assert_eq!(manifest.items(), expected);
        assert_eq!(manifest.len(), 4);
        assert_eq!(
            manifest.get("a/cluster/v1/y").unwrap().uid.as_deref(),
            Some("first")
        );
        // A tie-break decides which of one key is kept.
        let by_uid = Manifest::from_items_by(items, |a, b| b.uid.cmp(&a.uid));
        assert_eq!(
            by_uid.get("a/cluster/v1/y").unwrap().uid.as_deref(),
            Some("second")
        );
        let mut numbers: Vec<u32> = (0..500).map(|i| (i * 7919) % 503).collect();
        let mut expected = numbers.clone();
        expected.sort();
        let mut order: Vec<usize> = (0..numbers.len()).collect();
        order.sort_by_key(|&i| numbers[i]);
        permute(&mut numbers, order);
        assert_eq!(numbers, expected);
    }

    #[test]
    fn serde_form_is_camel_case_and_sparse() {
        let mut it = item("apps", "deployments", Some("a"), "web");
        it.uid = Some("u1".into());
        let json = serde_json::to_value(&it).unwrap();
        assert_eq!(json["uid"], "u1");
        assert!(json.get("labels").is_none());
        let back: ManifestItem = serde_json::from_value(json).unwrap();
        assert_eq!(back, it);
    }
}
