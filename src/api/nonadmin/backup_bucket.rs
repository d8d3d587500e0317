//! `BackupBucket`: one bucket of the administrator's shared backup pool (seed 001). Tenants
//! never see it: NAC gives each tenant namespace that uses the pool a [`super::BackupEntry`]
//! (a prefix in one of these buckets) and a Velero BackupStorageLocation on it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::SecretKeySelector;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::common::is_zero;

/// Finalizer NAC keeps on every BackupBucket: a bucket still holding entries is not deleted.
pub const BACKUP_BUCKET_FINALIZER: &str = "backupbucket.oadp.openshift.io/finalizer";

/// Condition types of a BackupBucket.
pub mod bucket_conditions {
    /// The bucket can take entries: its credential Secret exists and no other location's
    /// prefix would contain the entries' prefixes.
    pub const AVAILABLE: &str = "Available";
    /// The bucket was deleted; it stays while entries are stored in it.
    pub const DELETING: &str = "Deleting";

    /// Available=True.
    pub const REASON_AVAILABLE: &str = "BucketAvailable";
    /// Available=False: the credential Secret or its key is missing.
    pub const REASON_CREDENTIAL_MISSING: &str = "CredentialMissing";
    /// Available=False: the spec is incomplete.
    pub const REASON_INVALID_SPEC: &str = "InvalidSpec";
    /// Available=False: another BackupStorageLocation's prefix on this bucket would contain
    /// (or be contained in) the entries' prefixes.
    pub const REASON_PREFIX_CONFLICT: &str = "PrefixConflict";
    /// Available=False: a tenant's own location (NonAdminBackupStorageLocation) uses this
    /// bucket, so a tenant holds credentials for every entry in it.
    pub const REASON_SHARED_WITH_TENANT: &str = "SharedWithTenantLocation";
    /// Available=False: the bucket is being deleted and takes no new entries.
    pub const REASON_DELETING: &str = "BucketDeleting";
    /// Deleting=True while entries remain.
    pub const REASON_ENTRIES_REMAIN: &str = "EntriesRemain";
}

/// One bucket of the administrator's backup pool.
// kube's `printcolumn(...)` entries repeat keys like `type_` by design.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "oadp.openshift.io",
    version = "v1alpha1",
    kind = "BackupBucket",
    status = "BackupBucketStatus",
    shortname = "bbucket",
    derive = "Default",
    derive = "PartialEq",
    printcolumn(name = "Provider", type_ = "string", json_path = ".spec.provider"),
    printcolumn(name = "Bucket", type_ = "string", json_path = ".spec.bucket"),
    printcolumn(name = "Region", type_ = "string", json_path = ".spec.region"),
    printcolumn(name = "Entries", type_ = "integer", json_path = ".status.entryCount"),
    printcolumn(
        name = "Max-Entries",
        type_ = "integer",
        json_path = ".spec.maxEntries"
    ),
    printcolumn(
        name = "Available",
        type_ = "string",
        json_path = ".status.conditions[?(@.type=='Available')].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    doc = "A bucket of the cluster administrator's shared backup pool: tenant namespaces without a storage location of their own get a prefix in it."
)]
#[serde(rename_all = "camelCase")]
pub struct BackupBucketSpec {
    /// Velero object-store provider (plugin name), e.g. `aws`.
    pub provider: String,
    /// Region of the bucket; written into the locations' `config.region` when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Bucket name.
    pub bucket: String,
    /// Provider settings copied into each entry's BackupStorageLocation `config` (for `aws`:
    /// `s3Url`, `s3ForcePathStyle`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<BTreeMap<String, String>>,
    /// The Secret (name and key, in the OADP namespace) holding the credentials for the
    /// bucket. Tenants never get it: only Velero reads it through the entries' locations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<SecretKeySelector>,
    /// Most entries (tenant namespaces) the bucket takes; absent means no limit, 0 takes no
    /// new entries (e.g. to drain a bucket before retiring it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_entries: Option<u32>,
}

/// What NAC reports about a BackupBucket.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupBucketStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Available (with the reason when not) and, while deleting, Deleting.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Entries assigned to this bucket (including those of deleted namespaces still within
    /// their grace period).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub entry_count: i64,
    /// Why the bucket is not usable, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

impl BackupBucket {
    /// Whether the bucket's status says it is Available.
    pub fn is_available(&self) -> bool {
        self.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == bucket_conditions::AVAILABLE && c.status == "True")
        })
    }
}
