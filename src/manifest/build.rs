//! Builds a backup's manifest once, from Velero's backup tarball (`<backup>.tar.gz`), streaming:
//! entry by entry from any reader, reading of each object only the fields a manifest keeps.
//!
//! Why streaming: [`read_backup_tarball`](super::tarball::read_backup_tarball) keeps every whole
//! object (a `serde_json::Value` tree, several times the JSON's size) until the end; a manifest
//! needs a few hundred bytes per object. Here the decompressed tarball is never held: one entry
//! at a time goes through a reused buffer, and its JSON is parsed into [`ObjectHead`], whose
//! derive skips every other field with serde's `IgnoredAny` (no allocation for `spec`, `data`,
//! `status`...). Peak memory is the manifest plus the two largest objects, not the backup.
//!
//! The tarball layout is Velero's, as `tarball.rs` describes it: each object once at the legacy
//! path `resources/<resource>[.<group>]/{namespaces/<ns>,cluster}/<name>.json` and once under
//! `resources/<resource>[.<group>]/<version>-preferredversion/...`. One item is kept per object:
//! the preferred-version copy (its directory gives the version), else the legacy copy (the
//! object's `apiVersion` gives it); copies in other versions (`EnableAPIGroupVersions`) are the
//! same objects and are skipped. Velero writes the legacy copy right before the preferred one,
//! so the legacy copy is held back one entry and parsed only if no preferred copy follows.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::io::{self, BufReader, Read};

use flate2::bufread::MultiGzDecoder;
use serde::Deserialize;
use serde::de::{Deserializer, Visitor};
use serde_json::Value;

use super::item::{Manifest, ManifestItem};
use super::tarball::{
    BackupItem, CLUSTER_SCOPED_DIR, MAX_DECOMPRESSED_BYTES, NAMESPACE_SCOPED_DIR,
    PREFERRED_VERSION_SUFFIX, RESOURCES_DIR,
};

/// Why a manifest cannot be built from a tarball.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// Corrupt or truncated gzip or tar data, or a failing source.
    #[error("cannot read the backup tarball: {0}")]
    Read(#[source] io::Error),
    /// The tarball expands beyond [`MAX_DECOMPRESSED_BYTES`].
    #[error("backup tarball expands beyond {limit} bytes")]
    TooLarge {
        /// The limit that was hit.
        limit: u64,
    },
    /// An item file that is not a Kubernetes object, or disagrees with its path.
    #[error("backup tarball entry {path}: {reason}")]
    InvalidItemFile {
        /// Path inside the tarball.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// Builds the manifest of the gzip'd backup tarball that `reader` yields (one pass; the reader
/// is read to the end of the archive).
pub fn build_manifest<R: Read>(reader: R) -> Result<Manifest, BuildError> {
    build_with_limit(reader, MAX_DECOMPRESSED_BYTES)
}

/// Compressed bytes read from the source at a time (flate2's own default is 32 KiB).
const COMPRESSED_BUFFER: usize = 128 << 10;
/// Decompressed bytes buffered ahead of the tar reader: tar reads 512-byte headers and entry
/// data in small pieces, and straight from the decoder each piece was an inflate call of its
/// own; this way the decoder fills large blocks and tar copies out of them.
const DECOMPRESSED_BUFFER: usize = 256 << 10;

fn build_with_limit<R: Read>(reader: R, limit: u64) -> Result<Manifest, BuildError> {
    let decompressed = Cell::new(0u64);
    let capped = CappedReader {
        inner: MultiGzDecoder::new(BufReader::with_capacity(COMPRESSED_BUFFER, reader)),
        counted: &decompressed,
        limit,
    };
    let mut archive = tar::Archive::new(BufReader::with_capacity(DECOMPRESSED_BUFFER, capped));
    let read_error = |error: io::Error| {
        if decompressed.get() > limit {
            BuildError::TooLarge { limit }
        } else {
            BuildError::Read(error)
        }
    };

    let mut found: Vec<Found> = Vec::new();
    // Reused for every entry, so that reading one allocates nothing once they have grown.
    let mut path = String::new();
    let mut buffer: Vec<u8> = Vec::new();
    let mut pending = PendingLegacy::default();

    for entry in archive.entries().map_err(read_error)? {
        let mut entry = entry.map_err(read_error)?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        path.clear();
        path.push_str(&String::from_utf8_lossy(&entry.path_bytes()));
        let Some(location) = ItemLocation::parse(&path) else {
            continue;
        };
        match location.copy {
            CopyKind::OtherVersion => continue,
            CopyKind::Preferred(_) => {
                if let Some(legacy) = pending.take()
                    && !legacy.is_same_object(&location)
                {
                    found.push(legacy.parse()?);
                }
                read_entry(&mut entry, &mut buffer).map_err(read_error)?;
                found.push(Found {
                    preferred: true,
                    item: item_from_file(&path, &location, &buffer)?,
                });
            }
            CopyKind::Legacy => {
                if let Some(legacy) = pending.take() {
                    found.push(legacy.parse()?);
                }
                read_entry(&mut entry, &mut pending.content).map_err(read_error)?;
                pending.hold(&path);
            }
        }
    }
    if let Some(legacy) = pending.take() {
        found.push(legacy.parse()?);
    }
    Ok(one_per_object(found))
}

/// The manifest of items already in memory (a dry-run's collected objects, a simulator's
/// backup): the same fields as [`build_manifest`] reads from a tarball, from the same objects.
pub fn manifest_of_items(items: &[BackupItem]) -> Manifest {
    Manifest::from_items(items.iter().map(manifest_item_of).collect())
}

/// One [`BackupItem`] reduced to its manifest item. Metadata that the API server would never
/// have accepted (a label value that is not a string) is left out rather than failing: these
/// objects come from the API server, not from a file anyone could have edited.
pub fn manifest_item_of(item: &BackupItem) -> ManifestItem {
    let metadata = item.object.get("metadata");
    let text = |field: &str| {
        metadata
            .and_then(|metadata| metadata.get(field))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let map = |field: &str| -> BTreeMap<String, String> {
        metadata
            .and_then(|metadata| metadata.get(field))
            .and_then(Value::as_object)
            .map(|entries| {
                entries
                    .iter()
                    .filter_map(|(key, value)| Some((key.clone(), value.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default()
    };
    let owners = metadata
        .and_then(|metadata| metadata.get("ownerReferences"))
        .and_then(Value::as_array)
        .map(|references| {
            references
                .iter()
                .filter_map(|reference| reference.get("uid")?.as_str())
                .filter(|uid| !uid.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    ManifestItem {
        group: item.group.clone(),
        version: item.version.clone(),
        kind: item.kind.clone(),
        resource: item.resource.clone(),
        namespace: item.namespace.clone(),
        name: item.name.clone(),
        labels: map("labels"),
        annotations: map("annotations"),
        owners,
        uid: text("uid").filter(|uid| !uid.is_empty()),
    }
    .redacted()
}

/// Counts what the decompressor yields and fails past `limit`, so a small
/// hostile tarball cannot make the reader spin through gigabytes. The count lives outside the
/// reader (which the tar archive owns) so the caller can tell "too large" from corrupt data.
struct CappedReader<'c, R> {
    inner: R,
    counted: &'c Cell<u64>,
    limit: u64,
}

impl<R: Read> Read for CappedReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        let total = self.counted.get().saturating_add(read as u64);
        self.counted.set(total);
        if total > self.limit {
            return Err(io::Error::other("decompressed data exceeds the limit"));
        }
        Ok(read)
    }
}

/// Reads one entry's data into `buffer` (cleared first), reusing its capacity.
fn read_entry<R: Read>(entry: &mut R, buffer: &mut Vec<u8>) -> io::Result<()> {
    buffer.clear();
    entry.read_to_end(buffer)?;
    Ok(())
}

/// An item read from one copy.
struct Found {
    preferred: bool,
    item: ManifestItem,
}

/// A legacy copy whose parse waits for the next entry: if that is the same object's
/// preferred-version copy, the legacy one is never parsed. Its path and contents are kept in
/// buffers reused from one legacy copy to the next.
#[derive(Default)]
struct PendingLegacy {
    /// Whether a copy is held.
    held: bool,
    path: String,
    content: Vec<u8>,
}

/// The legacy copy [`PendingLegacy::take`] handed out.
struct HeldLegacy<'p> {
    path: &'p str,
    /// `None` only if the path stopped parsing, which it cannot (it parsed when held).
    location: Option<ItemLocation<'p>>,
    content: &'p [u8],
}

impl PendingLegacy {
    /// Holds the copy at `path` (its contents are already in `content`).
    fn hold(&mut self, path: &str) {
        self.held = true;
        self.path.clear();
        self.path.push_str(path);
    }

    /// The copy held, if any; none is held afterwards.
    fn take(&mut self) -> Option<HeldLegacy<'_>> {
        if !std::mem::take(&mut self.held) {
            return None;
        }
        Some(HeldLegacy {
            path: &self.path,
            location: ItemLocation::parse(&self.path),
            content: &self.content,
        })
    }
}

impl HeldLegacy<'_> {
    fn is_same_object(&self, location: &ItemLocation<'_>) -> bool {
        self.location.as_ref().is_some_and(|held| {
            held.group_resource == location.group_resource
                && held.namespace == location.namespace
                && held.name == location.name
        })
    }

    fn parse(self) -> Result<Found, BuildError> {
        let location = self.location.ok_or_else(|| BuildError::InvalidItemFile {
            path: self.path.to_owned(),
            reason: "not an item path".into(),
        })?;
        Ok(Found {
            preferred: false,
            item: item_from_file(self.path, &location, self.content)?,
        })
    }
}

/// Keeps one item per object (group-resource, namespace, name): the preferred-version copy when
/// there is one, else the first legacy copy; then of the objects of one key (one in a namespace
/// named `cluster` and a cluster-scoped one) the first by identity.
///
/// Objects are matched by hashing rather than by sorting on identity: with Velero's layout
/// almost every object arrives here once, and sorting large manifests a second time, by
/// another order, was a tenth of the build.
fn one_per_object(found: Vec<Found>) -> Manifest {
    // The resource never holds a dot (the directory is split at the first one), so these
    // fields are equal exactly when the identities are.
    let mut chosen: HashMap<_, usize> = HashMap::with_capacity(found.len());
    let mut keep = vec![false; found.len()];
    for (index, copy) in found.iter().enumerate() {
        match chosen.entry(identity(&copy.item)) {
            Entry::Vacant(slot) => {
                slot.insert(index);
                keep[index] = true;
            }
            Entry::Occupied(mut slot) => {
                let current = *slot.get();
                if copy.preferred && !found[current].preferred {
                    keep[current] = false;
                    keep[index] = true;
                    slot.insert(index);
                }
            }
        }
    }
    // Its keys borrow from `found`.
    drop(chosen);
    let items = found
        .into_iter()
        .zip(keep)
        .filter_map(|(copy, keep)| keep.then_some(copy.item))
        .collect();
    Manifest::from_items_by(items, ManifestItem::cmp_identity)
}

/// The fields that identify an item's object in [`one_per_object`]. The resource never holds
/// a dot there (the directory is split at the first one), so they are equal exactly when the
/// identities are.
fn identity(item: &ManifestItem) -> (&str, &str, Option<&str>, &str) {
    (
        &item.resource,
        &item.group,
        item.namespace.as_deref(),
        &item.name,
    )
}

/// Which copy of an object an entry is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum CopyKind<'a> {
    /// `resources/<gr>/{namespaces/<ns>,cluster}/<name>.json`.
    Legacy,
    /// Under `<version>-preferredversion/`; holds the version.
    Preferred(&'a str),
    /// Under another version directory (Velero's `EnableAPIGroupVersions`).
    OtherVersion,
}

/// Where an item file sits in the tarball.
#[derive(Debug, PartialEq)]
struct ItemLocation<'a> {
    group_resource: &'a str,
    copy: CopyKind<'a>,
    namespace: Option<&'a str>,
    name: &'a str,
}

impl<'a> ItemLocation<'a> {
    /// The location of an item file, or `None` for anything else (`metadata/`, directories,
    /// stray files), which Velero's restore ignores too.
    fn parse(path: &'a str) -> Option<Self> {
        let path = path.trim_start_matches("./").trim_start_matches('/');
        let rest = path.strip_prefix(RESOURCES_DIR)?.strip_prefix('/')?;
        let mut segments = [""; 5];
        let mut count = 0;
        for segment in rest.split('/') {
            if segment.is_empty() || count == segments.len() {
                return None;
            }
            segments[count] = segment;
            count += 1;
        }
        // The legacy namespaced form is tried before the versioned cluster-scoped one: both have
        // four segments, and a version is never called "namespaces".
        let (group_resource, version_dir, namespace, file) = match &segments[..count] {
            [gr, NAMESPACE_SCOPED_DIR, ns, file] => (*gr, None, Some(*ns), *file),
            [gr, CLUSTER_SCOPED_DIR, file] => (*gr, None, None, *file),
            [gr, version, NAMESPACE_SCOPED_DIR, ns, file] => {
                (*gr, Some(*version), Some(*ns), *file)
            }
            [gr, version, CLUSTER_SCOPED_DIR, file] => (*gr, Some(*version), None, *file),
            _ => return None,
        };
        let name = file.strip_suffix(".json").filter(|name| !name.is_empty())?;
        let copy = match version_dir {
            None => CopyKind::Legacy,
            Some(dir) => match dir.strip_suffix(PREFERRED_VERSION_SUFFIX) {
                Some(version) if !version.is_empty() => CopyKind::Preferred(version),
                _ => CopyKind::OtherVersion,
            },
        };
        Some(Self {
            group_resource,
            copy,
            namespace,
            name,
        })
    }
}

/// The fields of an object a manifest keeps. Every other field (`spec`, `data`, `status`,
/// `managedFields`...) is skipped by the derive through serde's `IgnoredAny`, without building
/// values, so a large object costs a scan, not an allocation. Fields only compared or copied
/// ([`Text`]) borrow from the file.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ObjectHead<'a> {
    #[serde(default, borrow)]
    api_version: Option<Text<'a>>,
    #[serde(default, borrow)]
    kind: Option<Text<'a>>,
    #[serde(default, borrow)]
    metadata: Option<MetadataHead<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MetadataHead<'a> {
    #[serde(default, borrow)]
    name: Option<Text<'a>>,
    #[serde(default, borrow)]
    namespace: Option<Text<'a>>,
    #[serde(default)]
    uid: Option<String>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    owner_references: Option<Vec<OwnerReferenceHead>>,
}

#[derive(Deserialize)]
struct OwnerReferenceHead {
    #[serde(default)]
    uid: Option<String>,
}

/// A JSON string borrowed from the file, or copied when it holds escapes. (serde's derive
/// borrows a bare `Cow<str>` field but copies one inside an `Option`.)
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;

        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;

            fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                formatter.write_str("a string")
            }

            fn visit_borrowed_str<E: serde::de::Error>(
                self,
                value: &'de str,
            ) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(value)))
            }

            fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(value.to_owned())))
            }

            fn visit_string<E: serde::de::Error>(self, value: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(value)))
            }
        }

        deserializer.deserialize_str(TextVisitor)
    }
}

impl Text<'_> {
    fn as_str(&self) -> &str {
        &self.0
    }
}

fn item_from_file(
    path: &str,
    location: &ItemLocation<'_>,
    content: &[u8],
) -> Result<ManifestItem, BuildError> {
    let invalid = |reason: String| BuildError::InvalidItemFile {
        path: path.to_owned(),
        reason,
    };
    let head: ObjectHead = serde_json::from_slice(content)
        .map_err(|error| invalid(format!("not a Kubernetes object: {error}")))?;
    let metadata = head.metadata.ok_or_else(|| invalid("no metadata".into()))?;

    // The file is named after the object; an object that says otherwise was not written by
    // Velero, and a manifest built from its path would describe something a restore would not
    // create.
    if let Some(name) = metadata.name.as_ref().map(Text::as_str)
        && name != location.name
    {
        return Err(invalid(format!(
            "metadata.name {name:?} differs from the file name"
        )));
    }
    let namespace = metadata
        .namespace
        .as_ref()
        .map(Text::as_str)
        .filter(|ns| !ns.is_empty());
    if namespace.is_some() && namespace != location.namespace {
        return Err(invalid(format!(
            "metadata.namespace {:?} differs from the directory",
            namespace.unwrap_or_default()
        )));
    }

    let kind = head
        .kind
        .filter(|kind| !kind.as_str().is_empty())
        .ok_or_else(|| invalid("no kind".into()))?;
    let api_version_version = head
        .api_version
        .as_ref()
        .map(Text::as_str)
        .map(|api_version| {
            api_version
                .rsplit_once('/')
                .map_or(api_version, |(_, version)| version)
        })
        .filter(|version| !version.is_empty());
    let version = match location.copy {
        // The preferred-version directory names the version Velero read the object at.
        CopyKind::Preferred(version) => version,
        CopyKind::Legacy | CopyKind::OtherVersion => {
            api_version_version.ok_or_else(|| invalid("no apiVersion".into()))?
        }
    };
    // The directory gives resource and group; a resource never has a dot, a group may.
    let (resource, group) = location
        .group_resource
        .split_once('.')
        .unwrap_or((location.group_resource, ""));

    Ok(ManifestItem {
        group: group.to_owned(),
        version: version.to_owned(),
        kind: kind.0.into_owned(),
        resource: resource.to_owned(),
        namespace: location.namespace.map(str::to_owned),
        name: location.name.to_owned(),
        labels: metadata.labels.unwrap_or_default(),
        annotations: metadata.annotations.unwrap_or_default(),
        owners: metadata
            .owner_references
            .unwrap_or_default()
            .into_iter()
            .filter_map(|reference| reference.uid.filter(|uid| !uid.is_empty()))
            .collect(),
        uid: metadata.uid.filter(|uid| !uid.is_empty()),
    }
    .redacted())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::manifest::tarball::{gzip, read_backup_tarball, write_backup_tarball};
    use serde_json::json;

    fn backup_item(
        group: &str,
        version: &str,
        kind: &str,
        resource: &str,
        namespace: Option<&str>,
        object: Value,
    ) -> BackupItem {
        BackupItem {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            resource: resource.into(),
            namespace: namespace.map(Into::into),
            name: object["metadata"]["name"].as_str().unwrap().into(),
            object,
        }
    }

    fn sample_items() -> Vec<BackupItem> {
        vec![
            backup_item(
                "apps",
                "v1",
                "Deployment",
                "deployments",
                Some("shop"),
                json!({"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "web", "namespace": "shop", "uid": "d-1",
                        "labels": {"app": "web"}, "annotations": {"note": "x"}},
                    "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c"}]}}}}),
            ),
            backup_item(
                "apps",
                "v1",
                "ReplicaSet",
                "replicasets",
                Some("shop"),
                json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "metadata": {"name": "web-1", "namespace": "shop", "uid": "rs-1",
                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                            "name": "web", "uid": "d-1", "controller": true}]}}),
            ),
            backup_item(
                "",
                "v1",
                "ConfigMap",
                "configmaps",
                Some("shop"),
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "big", "namespace": "shop", "uid": "cm-1",
                        "labels": null},
                    "data": {"blob": "z".repeat(100_000)}}),
            ),
            backup_item(
                "",
                "v1",
                "Namespace",
                "namespaces",
                None,
                json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": "shop", "uid": "ns-1"}}),
            ),
        ]
    }

    #[test]
    fn builds_the_manifest_of_a_written_tarball() {
        let items = sample_items();
        let tarball = write_backup_tarball(&items).unwrap();
        let manifest = build_manifest(tarball.as_slice()).unwrap();
        assert_eq!(
            manifest.keys().collect::<Vec<_>>(),
            [
                "configmaps/shop/v1/big",
                "deployments.apps/shop/v1/web",
                "namespaces/cluster/v1/shop",
                "replicasets.apps/shop/v1/web-1",
            ]
        );
        let web = manifest.get("deployments.apps/shop/v1/web").unwrap();
        assert_eq!(web.kind, "Deployment");
        assert_eq!(web.group, "apps");
        assert_eq!(web.labels.get("app").map(String::as_str), Some("web"));
        assert_eq!(web.annotations.get("note").map(String::as_str), Some("x"));
        assert_eq!(web.uid.as_deref(), Some("d-1"));
        let replica_set = manifest.get("replicasets.apps/shop/v1/web-1").unwrap();
        assert_eq!(replica_set.owners, ["d-1"]);
        let big = manifest.get("configmaps/shop/v1/big").unwrap();
        assert!(big.labels.is_empty(), "null labels read as none");
        assert_eq!(
            manifest
                .get("namespaces/cluster/v1/shop")
                .unwrap()
                .namespace,
            None
        );
    }

    #[test]
    fn streaming_build_agrees_with_the_in_memory_reduction() {
        let items = sample_items();
        let tarball = write_backup_tarball(&items).unwrap();
        let streamed = build_manifest(tarball.as_slice()).unwrap();
        let from_read = manifest_of_items(&read_backup_tarball(&tarball).unwrap());
        let from_memory = manifest_of_items(&items);
        assert_eq!(streamed, from_read);
        assert_eq!(streamed, from_memory);
        assert_eq!(
            build_manifest(write_backup_tarball(&[]).unwrap().as_slice())
                .unwrap()
                .len(),
            0
        );
    }

    /// Adds one regular file to a tar the way Velero's Go code does (ustar, mode 0755).
    fn add(builder: &mut tar::Builder<Vec<u8>>, path: &str, data: &[u8]) {
        let mut header = tar::Header::new_ustar();
        header.set_size(data.len() as u64);
        header.set_mode(0o755);
        header.set_entry_type(tar::EntryType::Regular);
        builder.append_data(&mut header, path, data).unwrap();
    }

    /// A tarball laid out as real Velero writes one: both copies of each object, a group
    /// whose legacy copy holds an older apiVersion than its preferred copy, an extra
    /// non-preferred version, a pre-1.4 item with only the legacy copy, a preferred copy that
    /// comes first, directory entries and stray files.
    #[test]
    fn reads_a_real_velero_layout_one_item_per_object() {
        let mut builder = tar::Builder::new(Vec::new());
        let mut dir = tar::Header::new_ustar();
        dir.set_entry_type(tar::EntryType::Directory);
        dir.set_size(0);
        dir.set_mode(0o755);
        builder
            .append_data(&mut dir, "resources/", &b""[..])
            .unwrap();
        add(&mut builder, "metadata/version", b"1.1.0\n");
        let hpa_v2 = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "shop", "uid": "h-1",
                "labels": {"tier": "front"}}});
        let hpa_v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "shop", "uid": "h-1",
                "labels": {"tier": "front"}}});
        add(
            &mut builder,
            "resources/horizontalpodautoscalers.autoscaling/namespaces/shop/web.json",
            hpa_v1.to_string().as_bytes(),
        );
        add(
            &mut builder,
            "resources/horizontalpodautoscalers.autoscaling/v1/namespaces/shop/web.json",
            hpa_v1.to_string().as_bytes(),
        );
        add(
            &mut builder,
            "resources/horizontalpodautoscalers.autoscaling/v2-preferredversion/namespaces/shop/web.json",
            hpa_v2.to_string().as_bytes(),
        );
        let secret = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "creds", "namespace": "shop"}, "data": {"k": "dg=="}});
        add(
            &mut builder,
            "resources/secrets/namespaces/shop/creds.json",
            secret.to_string().as_bytes(),
        );
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.example.com"}});
        add(
            &mut builder,
            "resources/customresourcedefinitions.apiextensions.k8s.io/v1-preferredversion/cluster/widgets.example.com.json",
            crd.to_string().as_bytes(),
        );
        add(
            &mut builder,
            "resources/customresourcedefinitions.apiextensions.k8s.io/cluster/widgets.example.com.json",
            crd.to_string().as_bytes(),
        );
        let widget = json!({"apiVersion": "example.com/v2", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "cluster", "ownerReferences": [
                {"uid": "h-1"}, {"uid": ""}]}});
        add(
            &mut builder,
            "resources/widgets.example.com/namespaces/cluster/w.json",
            widget.to_string().as_bytes(),
        );
        add(
            &mut builder,
            "resources/widgets.example.com/v2-preferredversion/namespaces/cluster/w.json",
            widget.to_string().as_bytes(),
        );
        add(&mut builder, "resources/README.txt", b"not an item");
        add(&mut builder, "velero-backup.json", b"{}");
        let tarball = gzip(&builder.into_inner().unwrap());

        let manifest = build_manifest(tarball.as_slice()).unwrap();
        assert_eq!(
            manifest.keys().collect::<Vec<_>>(),
            [
                "customresourcedefinitions.apiextensions.k8s.io/cluster/v1/widgets.example.com",
                "horizontalpodautoscalers.autoscaling/shop/v2/web",
                "secrets/shop/v1/creds",
                "widgets.example.com/cluster/v2/w",
            ]
        );
        let widget = manifest.get("widgets.example.com/cluster/v2/w").unwrap();
        assert_eq!(widget.namespace.as_deref(), Some("cluster"));
        assert_eq!(widget.owners, ["h-1"], "empty owner uids are dropped");
        let hpa = manifest
            .get("horizontalpodautoscalers.autoscaling/shop/v2/web")
            .unwrap();
        assert_eq!(
            (hpa.kind.as_str(), hpa.uid.as_deref()),
            ("HorizontalPodAutoscaler", Some("h-1"))
        );
        assert_eq!(manifest.get("secrets/shop/v1/creds").unwrap().uid, None);

        // The whole-object reader sees the same objects.
        let read = read_backup_tarball(&tarball).unwrap();
        assert_eq!(read.len(), manifest.len());
    }

    /// The sort-based selection `one_per_object` replaced, followed by `from_items`.
    fn one_per_object_by_sorting(mut found: Vec<Found>) -> Manifest {
        found.sort_by(|a, b| {
            a.item
                .cmp_identity(&b.item)
                .then_with(|| b.preferred.cmp(&a.preferred))
        });
        found.dedup_by(|later, earlier| later.item.cmp_identity(&earlier.item).is_eq());
        let mut items: Vec<ManifestItem> = found.into_iter().map(|found| found.item).collect();
        items.sort_by_cached_key(ManifestItem::key);
        items.dedup_by(|later, earlier| later.key() == earlier.key());
        Manifest::from_items(items)
    }

    #[test]
    fn hashing_copies_keeps_what_sorting_them_kept() {
        let mut random = 0x9e37_79b9_u64;
        let mut next = |bound: u64| {
            random ^= random << 13;
            random ^= random >> 7;
            random ^= random << 17;
            random % bound
        };
        for _ in 0..200 {
            let found: Vec<Found> = (0..40)
                .map(|serial| {
                    let (resource, group) =
                        [("pods", ""), ("deployments", "apps"), ("a", "g")][next(3) as usize];
                    let namespace = [None, Some("cluster"), Some("shop")][next(3) as usize];
                    Found {
                        preferred: next(2) == 0,
                        item: ManifestItem {
                            group: group.into(),
                            version: ["v1", "v2"][next(2) as usize].into(),
                            kind: "K".into(),
                            resource: resource.into(),
                            namespace: namespace.map(Into::into),
                            name: ["x", "y"][next(2) as usize].into(),
                            labels: BTreeMap::new(),
                            annotations: BTreeMap::new(),
                            owners: Vec::new(),
                            // Tells apart copies that are otherwise alike.
                            uid: Some(serial.to_string()),
                        },
                    }
                })
                .collect();
            let expected = one_per_object_by_sorting(
                found
                    .iter()
                    .map(|copy| Found {
                        preferred: copy.preferred,
                        item: copy.item.clone(),
                    })
                    .collect(),
            );
            assert_eq!(one_per_object(found), expected);
        }
    }

    #[test]
    fn legacy_only_items_take_the_object_version() {
        let mut builder = tar::Builder::new(Vec::new());
        let a = json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "a", "namespace": "n"}});
        let b = json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "b", "namespace": "n"}});
        add(
            &mut builder,
            "resources/jobs.batch/namespaces/n/a.json",
            a.to_string().as_bytes(),
        );
        add(
            &mut builder,
            "./resources/jobs.batch/namespaces/n/b.json",
            b.to_string().as_bytes(),
        );
        let manifest = build_manifest(gzip(&builder.into_inner().unwrap()).as_slice()).unwrap();
        assert_eq!(
            manifest.keys().collect::<Vec<_>>(),
            ["jobs.batch/n/v1/a", "jobs.batch/n/v1/b"]
        );
    }

    fn tarball_with(path: &str, content: &[u8]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        add(&mut builder, path, content);
        gzip(&builder.into_inner().unwrap())
    }

    #[test]
    fn corrupt_input_is_a_clear_error() {
        let path = "resources/configmaps/namespaces/a/b.json";
        for (content, expected) in [
            (&b"[1]"[..], "not a Kubernetes object"),
            (b"{\"kind\": \"ConfigMap\"", "not a Kubernetes object"),
            (b"{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\"}", "no metadata"),
            (
                b"{\"apiVersion\": \"v1\", \"metadata\": {\"name\": \"b\"}}",
                "no kind",
            ),
            (
                b"{\"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"b\"}}",
                "no apiVersion",
            ),
            (
                b"{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"c\"}}",
                "metadata.name \"c\" differs",
            ),
            (
                b"{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"b\", \"namespace\": \"z\"}}",
                "metadata.namespace \"z\" differs",
            ),
            (
                b"{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"b\", \"labels\": {\"a\": 1}}}",
                "not a Kubernetes object",
            ),
        ] {
            let error = build_manifest(tarball_with(path, content).as_slice()).unwrap_err();
            assert!(
                matches!(&error, BuildError::InvalidItemFile { path: p, reason } if p == path && reason.contains(expected)),
                "{error} (expected {expected})"
            );
        }

        assert!(matches!(
            build_manifest(&b"not gzip at all"[..]),
            Err(BuildError::Read(_))
        ));
        // A truncated tarball: a whole gzip stream holding half a tar entry.
        let mut raw = tar::Builder::new(Vec::new());
        add(&mut raw, path, &[b' '; 4096]);
        let raw = raw.into_inner().unwrap();
        let truncated = gzip(&raw[..1024]);
        assert!(matches!(
            build_manifest(truncated.as_slice()),
            Err(BuildError::Read(_))
        ));
        // A cut gzip stream.
        let whole = write_backup_tarball(&sample_items()).unwrap();
        assert!(matches!(
            build_manifest(&whole[..whole.len() / 2]),
            Err(BuildError::Read(_))
        ));
    }

    /// A gzip bomb: an entry of zeros far larger than the limit (the real limit, 1 GiB, works
    /// the same way; a small one keeps the test fast).
    #[test]
    fn refuses_tarballs_expanding_past_the_cap() {
        let path = "resources/configmaps/namespaces/a/b.json";
        let bomb = tarball_with(path, &vec![0u8; 4 << 20]);
        assert!(bomb.len() < 64 << 10, "{} bytes", bomb.len());
        let error = build_with_limit(bomb.as_slice(), 1 << 20).unwrap_err();
        assert!(
            matches!(error, BuildError::TooLarge { limit } if limit == 1 << 20),
            "{error}"
        );
        // Under the limit the same bytes are read (and then refused as JSON).
        let error = build_with_limit(bomb.as_slice(), 8 << 20).unwrap_err();
        assert!(
            matches!(error, BuildError::InvalidItemFile { .. }),
            "{error}"
        );
        assert_eq!(
            BuildError::TooLarge {
                limit: MAX_DECOMPRESSED_BYTES
            }
            .to_string(),
            "backup tarball expands beyond 1073741824 bytes"
        );
    }

    #[test]
    fn paths_parse_like_velero_writes_them() {
        let parse = ItemLocation::parse;
        assert_eq!(
            parse("resources/deployments.apps/v1-preferredversion/namespaces/a/web.json"),
            Some(ItemLocation {
                group_resource: "deployments.apps",
                copy: CopyKind::Preferred("v1"),
                namespace: Some("a"),
                name: "web",
            })
        );
        assert_eq!(
            parse("resources/nodes/cluster/n1.json").map(|l| (l.copy, l.namespace)),
            Some((CopyKind::Legacy, None))
        );
        assert_eq!(
            parse("resources/nodes/v1beta1/cluster/n1.json").map(|l| l.copy),
            Some(CopyKind::OtherVersion)
        );
        assert_eq!(
            parse("resources/nodes/-preferredversion/cluster/n1.json").map(|l| l.copy),
            Some(CopyKind::OtherVersion)
        );
        for stray in [
            "metadata/version",
            "resources/x.json",
            "resources/nodes/cluster/.json",
            "resources/nodes//cluster/a.json",
            "resources/a/b/c/d/e/f.json",
            "resources/nodes/cluster/n1.yaml",
        ] {
            assert_eq!(parse(stray), None, "{stray}");
        }
    }

    #[test]
    fn in_memory_items_reduce_leniently() {
        let item = backup_item(
            "",
            "v1",
            "Pod",
            "pods",
            Some("a"),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "",
                "labels": {"ok": "yes", "bad": 3},
                "ownerReferences": [{"uid": "rs-1"}, {"name": "no-uid"}]}}),
        );
        let reduced = manifest_item_of(&item);
        assert_eq!(reduced.labels.len(), 1);
        assert_eq!(reduced.owners, ["rs-1"]);
        assert_eq!(reduced.uid, None);
        assert_eq!(reduced.key(), "pods/a/v1/p");
    }
}
