//! Velero's backup tarball (`<backup>.tar.gz`) and resource list, written and read.
//!
//! The layout is Velero 1.18's (`pkg/backup/backup.go`, `item_backupper.go`, `pkg/archive`):
//! `metadata/version` holds the backup format version ("1.1.0\n"); every item is stored twice,
//! once at `resources/<resource>[.<group>]/namespaces/<ns>/<name>.json` (or `.../cluster/<name>.json`
//! for cluster-scoped objects), the path Velero before 1.4 used and still writes for backward
//! compatibility, and once under `resources/<resource>[.<group>]/<version>-preferredversion/...`,
//! the copy of the API group's preferred version that Velero ≥ 1.4 adds. Reading is liberal so a
//! tarball written by real Velero (or by an old one) reads back too.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::time::{SystemTime, UNIX_EPOCH};

use flate2::Compression;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use serde_json::Value;

/// What Velero 1.18 writes to `metadata/version` (its `BackupFormatVersion`), newline included.
pub const BACKUP_FORMAT_VERSION: &str = "1.1.0";
/// The tar path of the format version file.
pub const VERSION_FILE: &str = "metadata/version";
/// The top-level directory holding the items.
pub const RESOURCES_DIR: &str = "resources";
/// Suffix of the directory holding the preferred version of a group's items.
pub const PREFERRED_VERSION_SUFFIX: &str = "-preferredversion";
/// Directory of namespaced items under a resource (and version) directory.
pub const NAMESPACE_SCOPED_DIR: &str = "namespaces";
/// Directory of cluster-scoped items under a resource (and version) directory.
pub const CLUSTER_SCOPED_DIR: &str = "cluster";

/// The most bytes a gzip'd artifact may expand to, as Velero caps what it decompresses (1 GiB):
/// a small hostile object must not fill the simulator's memory.
pub const MAX_DECOMPRESSED_BYTES: u64 = 1 << 30;

/// One Kubernetes object in a backup.
#[derive(Debug, Clone, PartialEq)]
pub struct BackupItem {
    /// API group; empty for the core group.
    pub group: String,
    /// API version within the group, e.g. "v1".
    pub version: String,
    /// Kind, e.g. "Deployment".
    pub kind: String,
    /// Plural resource name, e.g. "deployments".
    pub resource: String,
    /// Namespace; `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// Object name.
    pub name: String,
    /// The whole object as read from the API.
    pub object: Value,
}

impl BackupItem {
    /// `<resource>.<group>`, or `<resource>` for the core group: the directory name Velero uses.
    pub fn group_resource(&self) -> String {
        group_resource(&self.resource, &self.group)
    }

    /// `<group>/<version>`, or `<version>` for the core group, as in `apiVersion`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// Why a tarball cannot be written or read.
#[derive(Debug, thiserror::Error)]
pub enum TarballError {
    /// An item whose names would not make a well-formed path in the tarball.
    #[error("cannot back up {what}: {reason}")]
    InvalidItem {
        /// Which item, for the message.
        what: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An item file in the tarball that is not a JSON object.
    #[error("backup tarball entry {path} is not a JSON object: {reason}")]
    InvalidItemFile {
        /// Path inside the tarball.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The data expands beyond [`MAX_DECOMPRESSED_BYTES`].
    #[error("decompressed data exceeds {MAX_DECOMPRESSED_BYTES} bytes")]
    TooLarge,
    /// Corrupt gzip or tar data, or a failed write.
    #[error("backup tarball I/O: {0}")]
    Io(#[from] std::io::Error),
    /// An object that cannot be serialized.
    #[error("cannot serialize {what}: {source}")]
    Json {
        /// Which item, for the message.
        what: String,
        /// The serializer's error.
        source: serde_json::Error,
    },
}

/// Writes `items` as a gzip'd tar in Velero's layout.
pub fn write_backup_tarball(items: &[BackupItem]) -> Result<Vec<u8>, TarballError> {
    let encoder = GzEncoder::new(Vec::new(), Compression::default());
    let mut builder = tar::Builder::new(encoder);
    let mtime = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or_default();

    append_file(
        &mut builder,
        VERSION_FILE,
        format!("{BACKUP_FORMAT_VERSION}\n").as_bytes(),
        mtime,
    )?;
    for item in items {
        check_item(item)?;
        let what = describe(item);
        let bytes = serde_json::to_vec(&item.object).map_err(|source| TarballError::Json {
            what: what.clone(),
            source,
        })?;
        let group_resource = item.group_resource();
        let namespace = item.namespace.as_deref();
        // Velero writes the unversioned copy first, then the preferred-version one.
        append_file(
            &mut builder,
            &item_path(&group_resource, None, namespace, &item.name),
            &bytes,
            mtime,
        )?;
        let version_dir = format!("{}{PREFERRED_VERSION_SUFFIX}", item.version);
        append_file(
            &mut builder,
            &item_path(&group_resource, Some(&version_dir), namespace, &item.name),
            &bytes,
            mtime,
        )?;
    }
    let encoder = builder.into_inner()?;
    Ok(encoder.finish()?)
}

/// Reads the items of a backup tarball, one per object, sorted by group, resource, namespace
/// and name.
///
/// Takes each object's preferred-version copy, or its unversioned copy in tarballs of Velero
/// before 1.4 that have none; copies in other (non-preferred) versions, written only with
/// Velero's `EnableAPIGroupVersions` feature, are the same objects and are skipped. Directory
/// entries, `metadata/` and anything that is not an item file are ignored.
pub fn read_backup_tarball(bytes: &[u8]) -> Result<Vec<BackupItem>, TarballError> {
    let decoder = MultiGzDecoder::new(bytes).take(MAX_DECOMPRESSED_BYTES + 1);
    let mut archive = tar::Archive::new(decoder);
    // Key: (group resource, namespace, name); value: (is preferred copy, item).
    let mut found: BTreeMap<(String, Option<String>, String), (bool, BackupItem)> = BTreeMap::new();
    let mut total: u64 = 0;

    for entry in archive.entries()? {
        let mut entry = entry?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let Some(location) = parse_item_path(&path) else {
            continue;
        };
        let key = (
            location.group_resource.to_owned(),
            location.namespace.map(str::to_owned),
            location.name.to_owned(),
        );
        if matches!(found.get(&key), Some((true, _))) {
            continue;
        }
        if !location.preferred && location.version_dir.is_some() {
            continue;
        }

        let mut content = Vec::new();
        entry.read_to_end(&mut content)?;
        total += content.len() as u64;
        if total > MAX_DECOMPRESSED_BYTES {
            return Err(TarballError::TooLarge);
        }
        let item = item_from_file(&path, &location, &content)?;
        found.insert(key, (location.preferred, item));
    }
    Ok(found.into_values().map(|(_, item)| item).collect())
}

/// Velero's `<backup>-resource-list.json` content: `group/version/Kind` (`version/Kind` for the
/// core group) → sorted `namespace/name` (or `name` for cluster-scoped) entries.
pub fn resource_list(items: &[BackupItem]) -> BTreeMap<String, Vec<String>> {
    let mut list: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for item in items {
        let key = format!("{}/{}", item.api_version(), item.kind);
        let entry = match &item.namespace {
            Some(namespace) => format!("{namespace}/{}", item.name),
            None => item.name.clone(),
        };
        list.entry(key).or_default().push(entry);
    }
    for entries in list.values_mut() {
        entries.sort();
        entries.dedup();
    }
    list
}

/// Gzip-compresses `data` (Velero's `.gz` artifacts: logs, results, JSON lists).
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    // Writing into a Vec cannot fail; a failure would only mean an empty result.
    if encoder.write_all(data).is_err() {
        return Vec::new();
    }
    encoder.finish().unwrap_or_default()
}

/// Decompresses gzip'd `data`, refusing more than [`MAX_DECOMPRESSED_BYTES`].
pub fn gunzip(data: &[u8]) -> Result<Vec<u8>, TarballError> {
    let mut out = Vec::new();
    MultiGzDecoder::new(data)
        .take(MAX_DECOMPRESSED_BYTES + 1)
        .read_to_end(&mut out)?;
    if out.len() as u64 > MAX_DECOMPRESSED_BYTES {
        return Err(TarballError::TooLarge);
    }
    Ok(out)
}

fn group_resource(resource: &str, group: &str) -> String {
    if group.is_empty() {
        resource.to_owned()
    } else {
        format!("{resource}.{group}")
    }
}

/// The tar path of an item, as Velero's `archive.GetVersionedItemFilePath` joins it.
fn item_path(
    group_resource: &str,
    version_dir: Option<&str>,
    namespace: Option<&str>,
    name: &str,
) -> String {
    let mut path = format!("{RESOURCES_DIR}/{group_resource}/");
    if let Some(version_dir) = version_dir {
        path.push_str(version_dir);
        path.push('/');
    }
    match namespace {
        Some(namespace) => path.push_str(&format!("{NAMESPACE_SCOPED_DIR}/{namespace}/")),
        None => path.push_str(&format!("{CLUSTER_SCOPED_DIR}/")),
    }
    path.push_str(name);
    path.push_str(".json");
    path
}

fn append_file<W: Write>(
    builder: &mut tar::Builder<W>,
    path: &str,
    data: &[u8],
    mtime: u64,
) -> Result<(), TarballError> {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_size(data.len() as u64);
    // Velero writes every entry with mode 0755.
    header.set_mode(0o755);
    header.set_mtime(mtime);
    // `append_data` sets the path (with a GNU long-name entry when over 100 bytes, which Go's
    // archive/tar reads) and the checksum.
    builder.append_data(&mut header, path, data)?;
    Ok(())
}

fn describe(item: &BackupItem) -> String {
    match &item.namespace {
        Some(namespace) => format!("{} {namespace}/{}", item.group_resource(), item.name),
        None => format!("{} {}", item.group_resource(), item.name),
    }
}

fn check_item(item: &BackupItem) -> Result<(), TarballError> {
    let invalid = |reason: String| TarballError::InvalidItem {
        what: describe(item),
        reason,
    };
    let segments = [
        ("resource", Some(item.resource.as_str())),
        ("version", Some(item.version.as_str())),
        ("name", Some(item.name.as_str())),
        ("namespace", item.namespace.as_deref()),
    ];
    for (field, value) in segments {
        let Some(value) = value else { continue };
        if let Some(reason) = segment_problem(value) {
            return Err(invalid(format!("{field} {value:?} {reason}")));
        }
    }
    // A dot in the resource would make `<resource>.<group>` ambiguous when read back.
    if item.resource.contains('.') {
        return Err(invalid(format!(
            "resource {:?} contains a dot",
            item.resource
        )));
    }
    if !item.group.is_empty()
        && let Some(reason) = segment_problem(&item.group)
    {
        return Err(invalid(format!("group {:?} {reason}", item.group)));
    }
    if item.kind.is_empty() {
        return Err(invalid("kind is empty".to_owned()));
    }
    Ok(())
}

fn segment_problem(value: &str) -> Option<&'static str> {
    if value.is_empty() {
        Some("is empty")
    } else if value == "." || value == ".." {
        Some("is a relative path component")
    } else if value.contains('/') || value.contains('\\') {
        Some("contains a path separator")
    } else if value.chars().any(char::is_control) {
        Some("contains a control character")
    } else {
        None
    }
}

/// Where an item file sits in the tarball.
#[derive(Debug, PartialEq)]
struct ItemLocation<'a> {
    group_resource: &'a str,
    /// The version directory, e.g. "v1-preferredversion" or "v1beta1"; `None` when unversioned.
    version_dir: Option<&'a str>,
    preferred: bool,
    namespace: Option<&'a str>,
    name: &'a str,
}

fn parse_item_path(path: &str) -> Option<ItemLocation<'_>> {
    let path = path.trim_start_matches("./").trim_start_matches('/');
    let rest = path.strip_prefix(RESOURCES_DIR)?.strip_prefix('/')?;
    let segments: Vec<&str> = rest.split('/').collect();
    if segments.iter().any(|segment| segment.is_empty()) {
        return None;
    }
    // The unversioned namespaced form is tried before the versioned cluster-scoped one: both
    // have four segments, and a version is never called "namespaces".
    let (group_resource, version_dir, namespace, file) = match segments.as_slice() {
        [gr, NAMESPACE_SCOPED_DIR, ns, file] => (*gr, None, Some(*ns), *file),
        [gr, CLUSTER_SCOPED_DIR, file] => (*gr, None, None, *file),
        [gr, version, NAMESPACE_SCOPED_DIR, ns, file] => (*gr, Some(*version), Some(*ns), *file),
        [gr, version, CLUSTER_SCOPED_DIR, file] => (*gr, Some(*version), None, *file),
        _ => return None,
    };
    let name = file.strip_suffix(".json").filter(|name| !name.is_empty())?;
    Some(ItemLocation {
        group_resource,
        version_dir,
        preferred: version_dir.is_some_and(|dir| dir.ends_with(PREFERRED_VERSION_SUFFIX)),
        namespace,
        name,
    })
}

fn item_from_file(
    path: &str,
    location: &ItemLocation<'_>,
    content: &[u8],
) -> Result<BackupItem, TarballError> {
    let object: Value =
        serde_json::from_slice(content).map_err(|error| TarballError::InvalidItemFile {
            path: path.to_owned(),
            reason: error.to_string(),
        })?;
    if !object.is_object() {
        return Err(TarballError::InvalidItemFile {
            path: path.to_owned(),
            reason: "not an object".to_owned(),
        });
    }
    // The directory gives resource and group; a resource never has a dot, a group may.
    let (resource, group) = location
        .group_resource
        .split_once('.')
        .unwrap_or((location.group_resource, ""));
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let version = match api_version.rsplit_once('/') {
        Some((_, version)) => version.to_owned(),
        None if !api_version.is_empty() => api_version.to_owned(),
        // No apiVersion in the object: the version directory is the next best source.
        None => location
            .version_dir
            .map(|dir| dir.trim_end_matches(PREFERRED_VERSION_SUFFIX).to_owned())
            .unwrap_or_default(),
    };
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    Ok(BackupItem {
        group: group.to_owned(),
        version,
        kind,
        resource: resource.to_owned(),
        namespace: location.namespace.map(str::to_owned),
        name: location.name.to_owned(),
        object,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(namespace: &str, name: &str) -> BackupItem {
        BackupItem {
            group: "apps".into(),
            version: "v1".into(),
            kind: "Deployment".into(),
            resource: "deployments".into(),
            namespace: Some(namespace.into()),
            name: name.into(),
            object: json!({
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
                "spec": {"replicas": 2},
            }),
        }
    }

    fn config_map(namespace: &str, name: &str) -> BackupItem {
        BackupItem {
            group: String::new(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
            resource: "configmaps".into(),
            namespace: Some(namespace.into()),
            name: name.into(),
            object: json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": namespace},
                "data": {"key": "value"},
            }),
        }
    }

    fn namespace(name: &str) -> BackupItem {
        BackupItem {
            group: String::new(),
            version: "v1".into(),
            kind: "Namespace".into(),
            resource: "namespaces".into(),
            namespace: None,
            name: name.into(),
            object: json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
        }
    }

    fn tar_entries(gzipped: &[u8]) -> Vec<(String, u32, Vec<u8>)> {
        let mut archive = tar::Archive::new(MultiGzDecoder::new(gzipped));
        archive
            .entries()
            .unwrap()
            .map(|entry| {
                let mut entry = entry.unwrap();
                let path = entry.path().unwrap().to_string_lossy().into_owned();
                let mode = entry.header().mode().unwrap();
                let mut data = Vec::new();
                entry.read_to_end(&mut data).unwrap();
                (path, mode, data)
            })
            .collect()
    }

    #[test]
    fn writes_velero_layout() {
        let items = [
            deployment("team-a", "web"),
            config_map("team-a", "settings"),
            namespace("team-a"),
        ];
        let tarball = write_backup_tarball(&items).unwrap();
        let entries = tar_entries(&tarball);
        let paths: Vec<&str> = entries.iter().map(|(path, _, _)| path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "metadata/version",
                "resources/deployments.apps/namespaces/team-a/web.json",
                "resources/deployments.apps/v1-preferredversion/namespaces/team-a/web.json",
                "resources/configmaps/namespaces/team-a/settings.json",
                "resources/configmaps/v1-preferredversion/namespaces/team-a/settings.json",
                "resources/namespaces/cluster/team-a.json",
                "resources/namespaces/v1-preferredversion/cluster/team-a.json",
            ]
        );
        assert_eq!(entries[0].2, b"1.1.0\n");
        assert!(entries.iter().all(|(_, mode, _)| *mode == 0o755));
        let stored: Value = serde_json::from_slice(&entries[1].2).unwrap();
        assert_eq!(stored, items[0].object);
        assert_eq!(entries[1].2, entries[2].2);
    }

    #[test]
    fn round_trips() {
        let items = vec![
            deployment("team-a", "web"),
            deployment("team-b", "api"),
            config_map("team-a", "settings"),
            namespace("team-a"),
        ];
        let read = read_backup_tarball(&write_backup_tarball(&items).unwrap()).unwrap();
        let mut expected = items.clone();
        expected.sort_by_key(|item| {
            (
                item.group_resource(),
                item.namespace.clone(),
                item.name.clone(),
            )
        });
        assert_eq!(read, expected);
        assert!(
            read_backup_tarball(&write_backup_tarball(&[]).unwrap())
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn long_names_survive() {
        let long = "a".repeat(200);
        let items = vec![config_map(&"n".repeat(63), &long)];
        let read = read_backup_tarball(&write_backup_tarball(&items).unwrap()).unwrap();
        assert_eq!(read, items);
    }

    #[test]
    fn rejects_items_that_would_escape_their_directory() {
        for (namespace, name) in [
            ("..", "x"),
            ("team-a", "../x"),
            ("team-a", ""),
            ("a/b", "x"),
        ] {
            let error = write_backup_tarball(&[config_map(namespace, name)]).unwrap_err();
            assert!(matches!(error, TarballError::InvalidItem { .. }), "{error}");
        }
        let mut dotted = config_map("team-a", "x");
        dotted.resource = "config.maps".into();
        assert!(write_backup_tarball(&[dotted]).is_err());
    }

    /// A tarball laid out the way Velero's Go code writes it, built entry by entry: no
    /// directory entries, a pre-1.4-style item with only the unversioned copy, an item in a
    /// non-preferred version (EnableAPIGroupVersions) and a PAX-free ustar header.
    #[test]
    fn reads_a_hand_built_velero_tarball() {
        let mut builder = tar::Builder::new(Vec::new());
        let mut add = |path: &str, data: &[u8]| {
            let mut header = tar::Header::new_ustar();
            header.set_size(data.len() as u64);
            header.set_mode(0o755);
            header.set_entry_type(tar::EntryType::Regular);
            builder.append_data(&mut header, path, data).unwrap();
        };
        let web = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop"}});
        let web_beta = json!({"apiVersion": "apps/v1beta1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop"}});
        let legacy = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "creds", "namespace": "shop"}});
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.example.com"}});
        let widget = json!({"apiVersion": "example.com/v2", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "cluster"}});
        add("metadata/version", b"1.1.0\n");
        add(
            "resources/deployments.apps/namespaces/shop/web.json",
            web.to_string().as_bytes(),
        );
        add(
            "resources/deployments.apps/v1beta1/namespaces/shop/web.json",
            web_beta.to_string().as_bytes(),
        );
        add(
            "resources/deployments.apps/v1-preferredversion/namespaces/shop/web.json",
            web.to_string().as_bytes(),
        );
        add(
            "resources/secrets/namespaces/shop/creds.json",
            legacy.to_string().as_bytes(),
        );
        add(
            "resources/customresourcedefinitions.apiextensions.k8s.io/v1-preferredversion/cluster/widgets.example.com.json",
            crd.to_string().as_bytes(),
        );
        // A namespace called "cluster" in the unversioned layout, in a dotted group.
        add(
            "resources/widgets.example.com/namespaces/cluster/w.json",
            widget.to_string().as_bytes(),
        );
        add("resources/README.txt", b"not an item");
        add("velero-backup.json", b"{}");
        let tarball = gzip(&builder.into_inner().unwrap());

        let items = read_backup_tarball(&tarball).unwrap();
        let summary: Vec<(String, String, String, String, Option<String>, String)> = items
            .iter()
            .map(|item| {
                (
                    item.group.clone(),
                    item.version.clone(),
                    item.kind.clone(),
                    item.resource.clone(),
                    item.namespace.clone(),
                    item.name.clone(),
                )
            })
            .collect();
        let s = |value: &str| value.to_owned();
        assert_eq!(
            summary,
            [
                (
                    s("apiextensions.k8s.io"),
                    s("v1"),
                    s("CustomResourceDefinition"),
                    s("customresourcedefinitions"),
                    None,
                    s("widgets.example.com"),
                ),
                (
                    s("apps"),
                    s("v1"),
                    s("Deployment"),
                    s("deployments"),
                    Some(s("shop")),
                    s("web"),
                ),
                (
                    s(""),
                    s("v1"),
                    s("Secret"),
                    s("secrets"),
                    Some(s("shop")),
                    s("creds"),
                ),
                (
                    s("example.com"),
                    s("v2"),
                    s("Widget"),
                    s("widgets"),
                    Some(s("cluster")),
                    s("w"),
                ),
            ]
        );
        let web_item = items.iter().find(|item| item.name == "web").unwrap();
        assert_eq!(web_item.object, web);
    }

    #[test]
    fn unreadable_item_files_are_errors() {
        let mut builder = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_ustar();
        header.set_size(3);
        header.set_mode(0o644);
        builder
            .append_data(
                &mut header,
                "resources/configmaps/namespaces/a/b.json",
                &b"[1]"[..],
            )
            .unwrap();
        let tarball = gzip(&builder.into_inner().unwrap());
        let error = read_backup_tarball(&tarball).unwrap_err();
        assert!(
            matches!(error, TarballError::InvalidItemFile { ref path, .. } if path.ends_with("b.json")),
            "{error}"
        );
        assert!(read_backup_tarball(b"not gzip").is_err());
    }

    #[test]
    fn resource_list_uses_velero_keys_and_entries() {
        let items = [
            deployment("team-b", "web"),
            deployment("team-a", "web"),
            config_map("team-a", "settings"),
            namespace("team-a"),
        ];
        let list = resource_list(&items);
        let expected: BTreeMap<String, Vec<String>> = [
            ("apps/v1/Deployment", vec!["team-a/web", "team-b/web"]),
            ("v1/ConfigMap", vec!["team-a/settings"]),
            ("v1/Namespace", vec!["team-a"]),
        ]
        .into_iter()
        .map(|(key, entries)| {
            (
                key.to_owned(),
                entries.into_iter().map(str::to_owned).collect(),
            )
        })
        .collect();
        assert_eq!(list, expected);
        assert_eq!(
            serde_json::to_string(&list).unwrap(),
            r#"{"apps/v1/Deployment":["team-a/web","team-b/web"],"v1/ConfigMap":["team-a/settings"],"v1/Namespace":["team-a"]}"#
        );
    }

    #[test]
    fn gzip_round_trips() {
        let data = b"time=\"2026-01-01T00:00:00Z\" level=info msg=\"Backup completed\"\n";
        let packed = gzip(data);
        assert_eq!(&packed[..2], &[0x1f, 0x8b]);
        assert_eq!(gunzip(&packed).unwrap(), data);
        assert!(gunzip(b"plain text").is_err());
        assert_eq!(gunzip(&gzip(b"")).unwrap(), b"");
    }
}
