//! The backup manifest (seed 002): for each object a backup holds, the fields that decide
//! inclusion, exclusion, ownership and overlap — never the object's data.
//!
//! An item is named the way Velero's tarball names it (seed 002's `Itemer.String()`):
//! `<resource>[.<group>]/<namespace or "cluster">/<version>/<name>`, which is also the key of the
//! manifest's set view. Items are kept sorted by that key, so two manifests compare, diff and
//! intersect by a merge walk, and `manifest.json` is byte-stable for the same contents.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `apiVersion` of an exported manifest (`manifest.json`).
pub const MANIFEST_API_VERSION: &str = "oadp.openshift.io/v1alpha1";
/// `kind` of an exported manifest.
pub const MANIFEST_KIND: &str = "BackupManifest";
/// The path segment standing for "no namespace" in an item key (Velero's `cluster` directory).
pub const CLUSTER_SCOPE: &str = "cluster";

/// One object of a backup, reduced to its selectable fields.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
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
    pub labels: BTreeMap<String, String>,
    /// Annotations at backup time.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
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
        format!(
            "{}/{}/{}/{}",
            self.group_resource(),
            self.namespace.as_deref().unwrap_or(CLUSTER_SCOPE),
            self.version,
            self.name
        )
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

    /// Orders two items as their [`ItemIdentity`]s order, without building them (no
    /// allocation): sorting and merging large manifests by identity stays cheap.
    pub fn cmp_identity(&self, other: &Self) -> std::cmp::Ordering {
        cmp_group_resource(&self.resource, &self.group, &other.resource, &other.group)
            .then_with(|| self.namespace.cmp(&other.namespace))
            .then_with(|| self.name.cmp(&other.name))
    }

    /// Orders this item against an identity as [`ItemIdentity`]'s order does.
    pub fn cmp_to_identity(&self, identity: &ItemIdentity) -> std::cmp::Ordering {
        group_resource_bytes(&self.resource, &self.group)
            .cmp(identity.group_resource.bytes())
            .then_with(|| self.namespace.cmp(&identity.namespace))
            .then_with(|| self.name.cmp(&identity.name))
    }
}

/// The bytes of `<resource>[.<group>]`, without allocating the string.
fn group_resource_bytes<'a>(resource: &'a str, group: &'a str) -> impl Iterator<Item = u8> + 'a {
    let dot: &[u8] = if group.is_empty() { b"" } else { b"." };
    resource
        .bytes()
        .chain(dot.iter().copied())
        .chain(group.bytes())
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
        group_resource_bytes(resource, group).cmp(group_resource_bytes(other_resource, other_group))
    }
}

/// Which object an item is, whatever version it was stored at.
#[derive(
    Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "camelCase")]
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
    pub fn from_items(mut items: Vec<ManifestItem>) -> Self {
        items.sort_by_cached_key(ManifestItem::key);
        items.dedup_by(|later, earlier| later.key() == earlier.key());
        Self { items }
    }

    /// Adds one item; refuses a key already present.
    pub fn add(&mut self, item: ManifestItem) -> Result<(), ItemAlreadyExists> {
        let key = item.key();
        match self.items.binary_search_by(|probe| probe.key().cmp(&key)) {
            Ok(_) => Err(ItemAlreadyExists { key }),
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
            .binary_search_by(|probe| probe.key().as_str().cmp(key))
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
