//! Velero `BackupStorageLocation`: an object-store bucket (and prefix) backups are kept in.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::SecretKeySelector;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::common::{GoDuration, UnknownFields, open_string_enum};

/// NAC's zero-setup object-store provider: a bucket is a directory under a local root (the
/// Velero simulator's `--object-store-root`; `nac controller`/`nac serve` take the same root
/// to list and purge shared-pool buckets on it).
pub const LOCAL_OBJECT_STORE_PROVIDER: &str = "nac.openshift.io/local";

/// Where and how Velero reaches an object store.
// kube's `printcolumn(...)` entries repeat keys like `type_` by design.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "velero.io",
    version = "v1",
    kind = "BackupStorageLocation",
    namespaced,
    status = "BackupStorageLocationStatus",
    shortname = "bsl",
    derive = "Default",
    derive = "PartialEq",
    printcolumn(
        name = "Provider",
        type_ = "string",
        json_path = ".spec.provider",
        description = "Provider is the provider of the backup storage"
    ),
    printcolumn(
        name = "Phase",
        type_ = "string",
        json_path = ".status.phase",
        description = "Backup Storage Location status such as Available/Unavailable"
    ),
    printcolumn(
        name = "Last Validated",
        type_ = "date",
        json_path = ".status.lastValidationTime",
        description = "LastValidationTime is the last time the backup store location was validated"
    ),
    printcolumn(
        name = "Access Mode",
        type_ = "string",
        json_path = ".spec.accessMode",
        description = "AccessMode defines the permissions for the backup storage location"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    printcolumn(
        name = "Default",
        type_ = "boolean",
        json_path = ".spec.default",
        description = "Default backup storage location"
    ),
    doc = "A location where Velero stores backups."
)]
#[serde(rename_all = "camelCase")]
pub struct BackupStorageLocationSpec {
    /// Object-store provider (plugin name), e.g. "aws".
    pub provider: String,
    /// Provider-specific settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<BTreeMap<String, String>>,
    /// Secret key holding the credentials for this location.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credential: Option<SecretKeySelector>,
    /// The bucket and prefix.
    pub object_storage: ObjectStorageLocation,
    /// Whether this is the default location.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
    /// Whether backups may be written here or only read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_mode: Option<BackupStorageLocationAccessMode>,
    /// How often backups in the store are synced into the cluster; "0s" disables it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup_sync_period: Option<GoDuration>,
    /// How often the store is validated; "0s" disables it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validation_frequency: Option<GoDuration>,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

/// The object-store bucket and path Velero uses.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectStorageLocation {
    /// Bucket name.
    pub bucket: String,
    /// Path inside the bucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Deprecated (use `caCertRef`): base64 CA bundle for TLS to the provider, kept as sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "byte"))]
    pub ca_cert: Option<String>,
    /// Secret key, in the location's namespace, holding the CA bundle for TLS to the provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_cert_ref: Option<SecretKeySelector>,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

open_string_enum! {
    /// Whether Velero can reach a location.
    pub enum BackupStorageLocationPhase {
        /// Readable and writable.
        Available = "Available",
        /// Not reachable.
        Unavailable = "Unavailable",
    }
}

open_string_enum! {
    /// Permissions Velero has on a location.
    pub enum BackupStorageLocationAccessMode {
        /// Backups are only read (synced, restored from).
        ReadOnly = "ReadOnly",
        /// Backups are read and written.
        ReadWrite = "ReadWrite",
    }
}

/// What Velero reports about a location.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupStorageLocationStatus {
    /// Whether the location is reachable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<BackupStorageLocationPhase>,
    /// When the location's contents were last synced into the cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_synced_time: Option<Time>,
    /// When the location was last validated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_validation_time: Option<Time>,
    /// Human-readable detail, e.g. why the location is unavailable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Deprecated, no longer updated by Velero.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_synced_revision: Option<String>,
    /// Deprecated and unused; see `spec.accessMode`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_mode: Option<BackupStorageLocationAccessMode>,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}
