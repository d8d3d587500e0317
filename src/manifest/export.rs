//! `manifest.json`, the exported form of a backup's manifest, and the compact encoding the
//! history store keeps (gzip'd JSON of the same document).
//!
//! The document names the backup it describes and carries a format version, so a stored
//! manifest outlives changes to this code: a reader refuses a newer format instead of
//! misreading it. Items are sorted by key and counts follow from the items, so the same
//! contents always give the same bytes.

use std::io::BufWriter;

use chrono::{DateTime, Utc};
use flate2::Compression;
use flate2::write::GzEncoder;
use serde::{Deserialize, Serialize};

use super::item::{KindCount, MANIFEST_API_VERSION, MANIFEST_KIND, Manifest, ManifestItem};
use super::tarball::{TarballError, gunzip};
use super::visibility::HiddenItems;

/// The format of [`ManifestDocument`] this code writes; readers accept this one and older.
pub const MANIFEST_FORMAT_VERSION: u32 = 1;

/// Which backup a manifest describes.
// GraphQL's `completedAt` is a resolver (`gateway::graphql::manifests`): RFC 3339 text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
#[graphql(complex)]
pub struct ManifestBackup {
    /// The tenant namespace of the NonAdminBackup.
    pub namespace: String,
    /// The NonAdminBackup's name.
    pub name: String,
    /// The Velero Backup's name (in the OADP namespace).
    pub velero_backup: String,
    /// When the Velero Backup completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    #[graphql(skip)]
    pub completed_at: Option<DateTime<Utc>>,
}

/// `manifest.json`: the manifest of one backup.
// `BackupManifest` in GraphQL, whose `apiVersion`, `kind`, `formatVersion`, `total`, `hidden`
// and `items` (a page, with the contents browser's filters) are resolvers
// (`gateway::graphql::manifests`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
#[graphql(name = "BackupManifest", complex)]
pub struct ManifestDocument {
    /// [`MANIFEST_API_VERSION`].
    #[graphql(skip)]
    pub api_version: String,
    /// [`MANIFEST_KIND`].
    #[graphql(skip)]
    pub kind: String,
    /// The document's format ([`MANIFEST_FORMAT_VERSION`] when written by this code).
    #[graphql(skip)]
    pub format_version: u32,
    /// The backup described.
    pub backup: ManifestBackup,
    /// Items per kind, sorted by group then kind.
    pub counts: Vec<KindCount>,
    /// The items, sorted by key.
    #[graphql(skip)]
    pub items: Vec<ManifestItem>,
    /// Items left out because the reader may not list them, counted per resource (only in
    /// what the gateway serves; a stored manifest has none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[graphql(skip)]
    pub hidden: Vec<HiddenItems>,
}

/// Why a manifest document cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Not JSON of the document's shape.
    #[error("manifest document is not valid: {0}")]
    Json(#[from] serde_json::Error),
    /// Another kind of document.
    #[error("not a manifest document: apiVersion {api_version:?}, kind {kind:?}")]
    WrongKind {
        /// The document's apiVersion.
        api_version: String,
        /// The document's kind.
        kind: String,
    },
    /// A format newer than this code reads.
    #[error("manifest format {found} is newer than this version reads ({MANIFEST_FORMAT_VERSION})")]
    UnsupportedFormat {
        /// The document's format version.
        found: u32,
    },
    /// Corrupt gzip data or data expanding past the limit.
    #[error("stored manifest cannot be decompressed: {0}")]
    Compression(#[from] TarballError),
    /// Compressing failed.
    #[error("cannot compress the manifest: {0}")]
    Io(#[from] std::io::Error),
}

impl ManifestDocument {
    /// The document for `manifest` of `backup`.
    pub fn new(backup: ManifestBackup, manifest: Manifest) -> Self {
        Self {
            api_version: MANIFEST_API_VERSION.to_owned(),
            kind: MANIFEST_KIND.to_owned(),
            format_version: MANIFEST_FORMAT_VERSION,
            backup,
            counts: manifest.counts_by_kind(),
            items: manifest.into_items(),
            hidden: Vec::new(),
        }
    }

    /// The manifest the document holds.
    pub fn manifest(&self) -> Manifest {
        Manifest::from_items(self.items.clone())
    }

    /// Splits the document into its backup and manifest.
    pub fn into_parts(self) -> (ManifestBackup, Manifest) {
        (self.backup, Manifest::from_items(self.items))
    }

    /// `manifest.json`'s bytes (indented, for people and diff tools).
    pub fn to_json(&self) -> Result<Vec<u8>, ExportError> {
        Ok(serde_json::to_vec_pretty(self)?)
    }

    /// Reads `manifest.json`, checking its kind and format; items are put back in key order
    /// without duplicates and counts recomputed, so a hand-edited file cannot carry counts
    /// that disagree with its items.
    pub fn from_json(bytes: &[u8]) -> Result<Self, ExportError> {
        let document: Self = serde_json::from_slice(bytes)?;
        document.checked()
    }

    fn checked(self) -> Result<Self, ExportError> {
        if self.api_version != MANIFEST_API_VERSION || self.kind != MANIFEST_KIND {
            return Err(ExportError::WrongKind {
                api_version: self.api_version,
                kind: self.kind,
            });
        }
        if self.format_version > MANIFEST_FORMAT_VERSION {
            return Err(ExportError::UnsupportedFormat {
                found: self.format_version,
            });
        }
        let manifest =
            Manifest::from_items(self.items.into_iter().map(ManifestItem::redacted).collect());
        Ok(Self {
            format_version: MANIFEST_FORMAT_VERSION,
            counts: manifest.counts_by_kind(),
            items: manifest.into_items(),
            ..self
        })
    }
}

/// The compact form the history store keeps: the document as JSON without whitespace,
/// gzip'd (manifests repeat group, kind and label keys on every item, which gzip folds away).
pub fn encode_compact(document: &ManifestDocument) -> Result<Vec<u8>, ExportError> {
    let encoder = GzEncoder::new(Vec::new(), Compression::default());
    // The serializer writes token by token; unbuffered, each tiny write is a call into the
    // compressor (the benchmark's 100k-item manifest took 10.8 s to encode so; buffered
    // writes were 2.9× faster in a debug-build comparison).
    let mut writer = BufWriter::with_capacity(64 << 10, encoder);
    serde_json::to_writer(&mut writer, document)?;
    let encoder = writer.into_inner().map_err(|error| error.into_error())?;
    Ok(encoder.finish()?)
}

/// Reads what [`encode_compact`] wrote, with the same checks as [`ManifestDocument::from_json`]
/// and the same decompression limit as Velero's artifacts.
pub fn decode_compact(bytes: &[u8]) -> Result<ManifestDocument, ExportError> {
    ManifestDocument::from_json(&gunzip(bytes)?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use serde_json::json;

    fn item(resource: &str, group: &str, name: &str) -> ManifestItem {
        ManifestItem {
            group: group.into(),
            version: "v1".into(),
            kind: format!("K{resource}"),
            resource: resource.into(),
            namespace: Some("team-a".into()),
            name: name.into(),
            labels: BTreeMap::from([("app".to_owned(), "web".to_owned())]),
            annotations: BTreeMap::new(),
            owners: vec!["u-0".into()],
            uid: Some(format!("u-{name}")),
        }
    }

    fn document() -> ManifestDocument {
        ManifestDocument::new(
            ManifestBackup {
                namespace: "team-a".into(),
                name: "nightly".into(),
                velero_backup: "team-a-nightly-0f3c".into(),
                completed_at: Some("2026-03-01T02:03:04Z".parse().unwrap()),
            },
            Manifest::from_items(vec![
                item("pods", "", "p2"),
                item("deployments", "apps", "d"),
                item("pods", "", "p1"),
            ]),
        )
    }

    #[test]
    fn json_has_the_documented_shape_and_round_trips() {
        let document = document();
        let json: serde_json::Value = serde_json::from_slice(&document.to_json().unwrap()).unwrap();
        assert_eq!(json["apiVersion"], MANIFEST_API_VERSION);
        assert_eq!(json["kind"], "BackupManifest");
        assert_eq!(json["formatVersion"], 1);
        assert_eq!(
            json["backup"],
            json!({"namespace": "team-a", "name": "nightly",
                "veleroBackup": "team-a-nightly-0f3c", "completedAt": "2026-03-01T02:03:04Z"})
        );
        assert_eq!(
            json["counts"],
            json!([{"group": "", "kind": "Kpods", "resource": "pods", "count": 2},
                {"group": "apps", "kind": "Kdeployments", "resource": "deployments", "count": 1}])
        );
        let names: Vec<&str> = json["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["d", "p1", "p2"], "items in key order");
        assert_eq!(json["items"][0]["labels"], json!({"app": "web"}));

        let back = ManifestDocument::from_json(&document.to_json().unwrap()).unwrap();
        assert_eq!(back, document);
        assert_eq!(back.manifest().len(), 3);
        let (backup, manifest) = back.into_parts();
        assert_eq!(backup.name, "nightly");
        assert_eq!(manifest, document.manifest());
    }

    #[test]
    fn compact_encoding_round_trips_and_is_small() {
        let mut items = Vec::new();
        for index in 0..500 {
            items.push(item("pods", "", &format!("web-{index:04}")));
        }
        let document = ManifestDocument::new(document().backup, Manifest::from_items(items));
        let packed = encode_compact(&document).unwrap();
        assert_eq!(&packed[..2], &[0x1f, 0x8b], "gzip");
        let plain = serde_json::to_vec(&document).unwrap();
        assert!(
            packed.len() * 5 < plain.len(),
            "{} packed vs {} plain",
            packed.len(),
            plain.len()
        );
        assert_eq!(decode_compact(&packed).unwrap(), document);
        assert!(matches!(
            decode_compact(b"not gzip"),
            Err(ExportError::Compression(_))
        ));
        assert!(matches!(
            decode_compact(&crate::manifest::tarball::gzip(br#"{"apiVersion": 1}"#)),
            Err(ExportError::Json(_))
        ));
    }

    #[test]
    fn reading_checks_kind_and_format_and_normalizes() {
        let mut value = serde_json::to_value(document()).unwrap();
        value["kind"] = json!("Backup");
        let error = ManifestDocument::from_json(value.to_string().as_bytes()).unwrap_err();
        assert!(matches!(error, ExportError::WrongKind { .. }), "{error}");

        let mut value = serde_json::to_value(document()).unwrap();
        value["formatVersion"] = json!(2);
        let error = ManifestDocument::from_json(value.to_string().as_bytes()).unwrap_err();
        assert!(
            matches!(error, ExportError::UnsupportedFormat { found: 2 }),
            "{error}"
        );

        // Shuffled, duplicated items and wrong counts are put right.
        let mut value = serde_json::to_value(document()).unwrap();
        let items = value["items"].as_array().unwrap().clone();
        value["items"] = json!([items[2], items[0], items[1], items[0]]);
        value["counts"] = json!([]);
        let read = ManifestDocument::from_json(value.to_string().as_bytes()).unwrap();
        assert_eq!(read, document());

        let sparse = json!({"apiVersion": MANIFEST_API_VERSION, "kind": MANIFEST_KIND,
            "formatVersion": 1, "backup": {"namespace": "a", "name": "b", "veleroBackup": "c"},
            "counts": [], "items": []});
        let read = ManifestDocument::from_json(sparse.to_string().as_bytes()).unwrap();
        assert_eq!(read.backup.completed_at, None);
        assert!(read.items.is_empty());
    }
}
