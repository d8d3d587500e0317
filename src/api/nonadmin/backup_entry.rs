//! `BackupEntry`: one tenant namespace's place in the administrator's shared backup pool
//! (seed 001): the bucket it is assigned to, its prefix `<namespace>--<uid[:5]>` (a re-created
//! namespace never inherits the old one's data), how long its backups outlive the namespace,
//! and, in the status, the Velero BackupStorageLocation NAC made for it.
//!
//! [`BackupEntry::tenant_view`] is what a tenant may learn about it (no bucket, provider or
//! other namespace's names): the gateway and the console show that, never the entry itself.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::backup_storage_location::RelatedVeleroBackupStorageLocation;
use crate::api::common::{GoDuration, is_zero};

/// Namespace label overriding the default grace period of the namespace's entry, e.g. `72h`
/// (read while the namespace exists and stored in the entry's spec).
pub const GRACE_PERIOD_LABEL: &str = "oadp.openshift.io/backup-deletion-grace-period";
/// Entry annotation: `"true"` purges the entry of a deleted namespace now, without waiting
/// for the rest of its grace period.
pub const FORCE_DELETE_ANNOTATION: &str = "oadp.openshift.io/force-delete";
/// Label on an entry and on its Velero BSL: the UID of the entry's namespace.
pub const ENTRY_NAMESPACE_UID_LABEL: &str = "oadp.openshift.io/backup-entry-namespace-uid";
/// Label on an entry's Velero BSL and on the DeleteBackupRequests of its purge: the BSL name.
pub const POOL_LOCATION_LABEL: &str = "oadp.openshift.io/backup-pool-location";
/// Annotation on an entry's Velero BSL: the entry's name.
pub const ENTRY_ANNOTATION: &str = "oadp.openshift.io/backup-entry";
/// Annotation on an entry's Velero BSL: the entry's namespace.
pub const ENTRY_NAMESPACE_ANNOTATION: &str = "oadp.openshift.io/backup-entry-namespace";
/// Annotation on an entry's Velero BSL: the BackupBucket the entry is assigned to.
pub const ENTRY_BUCKET_ANNOTATION: &str = "oadp.openshift.io/backup-entry-bucket";
/// Annotation on an entry's Velero BSL: the entry's deletion grace period.
pub const ENTRY_GRACE_PERIOD_ANNOTATION: &str = "oadp.openshift.io/backup-entry-grace-period";

/// Condition types and reasons of a BackupEntry, and of a NonAdminBackup waiting for it.
pub mod entry_conditions {
    /// A bucket is assigned (True) or every bucket is full (False, WaitingForBucket).
    pub const ASSIGNED: &str = "Assigned";
    /// The entry's Velero BackupStorageLocation is Available.
    pub const READY: &str = "Ready";
    /// The entry's namespace no longer exists; its backups are kept until `purgeAfter`.
    pub const NAMESPACE_DELETED: &str = "NamespaceDeleted";
    /// The entry's backups are being deleted.
    pub const PURGING: &str = "Purging";

    /// Assigned=True.
    pub const REASON_BUCKET_ASSIGNED: &str = "BucketAssigned";
    /// Assigned=False: no bucket of the pool can take the entry.
    pub const REASON_WAITING_FOR_BUCKET: &str = "WaitingForBucket";
    /// Assigned=False: the assigned BackupBucket does not exist.
    pub const REASON_BUCKET_MISSING: &str = "BucketMissing";
    /// Ready=True.
    pub const REASON_LOCATION_AVAILABLE: &str = "BackupStorageLocationAvailable";
    /// Ready=False: the location is not (yet) Available.
    pub const REASON_LOCATION_UNAVAILABLE: &str = "BackupStorageLocationUnavailable";
    /// Ready=False: no bucket assigned yet.
    pub const REASON_NOT_ASSIGNED: &str = "NotAssigned";
    /// NamespaceDeleted=True.
    pub const REASON_NAMESPACE_DELETED: &str = "NamespaceDeleted";
    /// Purging=True once the grace period is over.
    pub const REASON_GRACE_PERIOD_OVER: &str = "GracePeriodOver";
    /// Purging=True through the force-delete annotation.
    pub const REASON_FORCE_DELETE: &str = "ForceDelete";

    /// NonAdminBackup Queued=False: its namespace's place in the pool is not ready.
    pub const REASON_WAITING_FOR_BACKUP_STORAGE: &str = "WaitingForBackupStorage";
}

/// A tenant namespace's place in the shared backup pool.
// kube's `printcolumn(...)` entries repeat keys like `type_` by design.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "oadp.openshift.io",
    version = "v1alpha1",
    kind = "BackupEntry",
    status = "BackupEntryStatus",
    shortname = "bentry",
    derive = "Default",
    derive = "PartialEq",
    printcolumn(name = "Namespace", type_ = "string", json_path = ".spec.namespace"),
    printcolumn(name = "Bucket", type_ = "string", json_path = ".spec.bucketName"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Location",
        type_ = "string",
        json_path = ".status.veleroBackupStorageLocation.name"
    ),
    // A string, not a date: kubectl prints future dates as `<invalid>`; this shows the timestamp.
    printcolumn(name = "Purge-After", type_ = "string", json_path = ".status.purgeAfter"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    doc = "A tenant namespace's prefix in a bucket of the shared backup pool, kept for a grace period after the namespace is deleted."
)]
#[serde(rename_all = "camelCase")]
pub struct BackupEntrySpec {
    /// The tenant namespace.
    pub namespace: String,
    /// UID of the namespace (or its first hex digits, for an entry rebuilt from a bucket
    /// listing after the namespace was gone).
    #[serde(rename = "namespaceUID")]
    pub namespace_uid: String,
    /// The BackupBucket the entry is assigned to; unset while every bucket is full.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket_name: Option<String>,
    /// The entry's prefix in the bucket (`<namespace>--<uid[:5]>`).
    pub prefix: String,
    /// How long the backups outlive the namespace (from the namespace's
    /// `oadp.openshift.io/backup-deletion-grace-period` label, else NAC's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_grace_period: Option<GoDuration>,
}

/// Lifecycle of a BackupEntry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum BackupEntryPhase {
    /// Every bucket of the pool is full (or unavailable); waiting for one.
    WaitingForBucket,
    /// A bucket is assigned; the BackupStorageLocation is not Available yet.
    Assigned,
    /// The BackupStorageLocation is Available: backups go there.
    Ready,
    /// The namespace is gone; the backups are kept until `purgeAfter`.
    NamespaceDeleted,
    /// The backups are being deleted, then the location and the entry.
    Purging,
}

impl BackupEntryPhase {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::WaitingForBucket => "WaitingForBucket",
            Self::Assigned => "Assigned",
            Self::Ready => "Ready",
            Self::NamespaceDeleted => "NamespaceDeleted",
            Self::Purging => "Purging",
        }
    }
}

impl std::fmt::Display for BackupEntryPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What NAC reports about a BackupEntry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupEntryStatus {
    /// One-word summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<BackupEntryPhase>,
    /// Assigned, Ready, NamespaceDeleted, Purging.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The Velero BackupStorageLocation made for the entry, and a copy of its status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub velero_backup_storage_location: Option<RelatedVeleroBackupStorageLocation>,
    /// When NAC first saw the namespace gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_deleted_at: Option<Time>,
    /// When the backups will be deleted (`namespaceDeletedAt` + the grace period).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purge_after: Option<Time>,
    /// Progress of the purge, once it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purge: Option<EntryPurgeStatus>,
    /// Backups deleted through DeleteBackupRequests by the purge.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub backups_deleted: i64,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// Progress of an entry's purge.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EntryPurgeStatus {
    /// When the purge started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    /// The location's `lastSyncedTime` when the purge started: once Velero has synced the
    /// bucket again, a backup not seen in the cluster is not in the bucket either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synced_at_start: Option<Time>,
    /// Backups still stored on the location.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub backups_remaining: i64,
    /// The last DeleteBackupRequest error, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// What a tenant may see about its namespace's place in the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum TenantStorageState {
    /// Being set up (no bucket assigned yet, or the location is not validated yet).
    Provisioning,
    /// Every shared bucket is full; backups wait until an administrator adds room.
    WaitingForCapacity,
    /// Backups without a storage location of their own go here.
    Ready,
    /// The shared storage cannot be reached right now; backups wait.
    Unavailable,
    /// The namespace was deleted; its backups are kept until `purgeAfter`.
    Retained,
    /// The backups are being deleted.
    Purging,
}

/// The tenant-visible status of a namespace's place in the pool: no bucket, provider,
/// endpoint or other namespace's name ever appears in it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TenantStorageView {
    /// One-word state.
    pub state: TenantStorageState,
    /// What it means for the tenant's backups.
    pub message: String,
    /// When the backups of a deleted namespace will be deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purge_after: Option<Time>,
}

/// Message to tenants when every bucket is full.
pub const TENANT_WAITING_MESSAGE: &str = "every shared backup bucket is full; backups without a storage location wait until the cluster administrator adds a bucket or raises a quota";
/// Message to tenants while the entry is set up.
pub const TENANT_PROVISIONING_MESSAGE: &str =
    "the namespace's backup storage in the shared pool is being set up";
/// Message to tenants when the location is unavailable.
pub const TENANT_UNAVAILABLE_MESSAGE: &str = "the shared backup storage cannot be reached right now; backups without a storage location wait (the cluster administrator sees the cause)";
/// Message to tenants when ready.
pub const TENANT_READY_MESSAGE: &str = "backups without a storage location are stored in the namespace's own prefix of the shared backup pool";

impl BackupEntry {
    /// The entry's phase (None before NAC wrote a status).
    pub fn phase(&self) -> Option<BackupEntryPhase> {
        self.status.as_ref().and_then(|s| s.phase)
    }

    /// The name of the Velero BackupStorageLocation of a Ready entry.
    pub fn ready_location(&self) -> Option<&str> {
        let status = self.status.as_ref()?;
        if status.phase != Some(BackupEntryPhase::Ready) {
            return None;
        }
        status
            .velero_backup_storage_location
            .as_ref()?
            .name
            .as_deref()
            .filter(|n| !n.is_empty())
    }

    /// What the tenant of the entry's namespace may see (see [`TenantStorageView`]).
    pub fn tenant_view(&self) -> TenantStorageView {
        let status = self.status.clone().unwrap_or_default();
        let location_unavailable = status
            .velero_backup_storage_location
            .as_ref()
            .and_then(|l| l.status.as_ref())
            .and_then(|s| s.phase.as_ref())
            .is_some_and(|p| p.as_str() == "Unavailable");
        let view = |state, message: &str| TenantStorageView {
            state,
            message: message.to_owned(),
            purge_after: None,
        };
        match status.phase {
            None => view(TenantStorageState::Provisioning, TENANT_PROVISIONING_MESSAGE),
            Some(BackupEntryPhase::WaitingForBucket) => {
                view(TenantStorageState::WaitingForCapacity, TENANT_WAITING_MESSAGE)
            }
            Some(BackupEntryPhase::Assigned) if location_unavailable => {
                view(TenantStorageState::Unavailable, TENANT_UNAVAILABLE_MESSAGE)
            }
            Some(BackupEntryPhase::Assigned) => {
                view(TenantStorageState::Provisioning, TENANT_PROVISIONING_MESSAGE)
            }
            Some(BackupEntryPhase::Ready) => view(TenantStorageState::Ready, TENANT_READY_MESSAGE),
            Some(BackupEntryPhase::NamespaceDeleted) => TenantStorageView {
                state: TenantStorageState::Retained,
                message: match &status.purge_after {
                    Some(at) => format!(
                        "the namespace was deleted; its backups are kept until {}",
                        at.0
                    ),
                    None => "the namespace was deleted; its backups are kept for the grace period"
                        .to_owned(),
                },
                purge_after: status.purge_after.clone(),
            },
            Some(BackupEntryPhase::Purging) => TenantStorageView {
                state: TenantStorageState::Purging,
                message: "the namespace was deleted and its grace period is over; its backups are being deleted".to_owned(),
                purge_after: status.purge_after.clone(),
            },
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(status: serde_json::Value) -> BackupEntry {
        serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "BackupEntry",
            "metadata": {"name": "team-a--1a2b3"},
            "spec": {"namespace": "team-a", "namespaceUID": "1a2b3c", "bucketName": "pool-1",
                     "prefix": "team-a--1a2b3"},
            "status": status
        }))
        .unwrap()
    }

    #[test]
    fn spec_wire_names() {
        let e = entry(json!({}));
        let wire = serde_json::to_value(&e.spec).unwrap();
        assert_eq!(wire["namespaceUID"], "1a2b3c");
        assert_eq!(wire["bucketName"], "pool-1");
    }

    #[test]
    fn tenant_view_never_names_the_bucket() {
        let ready = entry(json!({"phase": "Ready",
            "veleroBackupStorageLocation": {"name": "team-a--1a2b3", "status": {"phase": "Available"}}}));
        assert_eq!(ready.ready_location(), Some("team-a--1a2b3"));
        let view = ready.tenant_view();
        assert_eq!(view.state, TenantStorageState::Ready);
        assert!(!view.message.contains("pool-1"));

        let unavailable = entry(json!({"phase": "Assigned",
            "veleroBackupStorageLocation": {"name": "x", "status": {"phase": "Unavailable",
                "message": "bucket \"pool-1\" does not exist"}}}));
        assert_eq!(unavailable.ready_location(), None);
        let view = unavailable.tenant_view();
        assert_eq!(view.state, TenantStorageState::Unavailable);
        assert!(!view.message.contains("pool-1"));

        let waiting = entry(json!({"phase": "WaitingForBucket"}));
        assert_eq!(
            waiting.tenant_view().state,
            TenantStorageState::WaitingForCapacity
        );
        let retained =
            entry(json!({"phase": "NamespaceDeleted", "purgeAfter": "2030-01-01T00:00:00Z"}));
        let view = retained.tenant_view();
        assert_eq!(view.state, TenantStorageState::Retained);
        assert!(
            view.message.contains("2030-01-01T00:00:00Z"),
            "{}",
            view.message
        );
        assert_eq!(
            entry(json!({})).tenant_view().state,
            TenantStorageState::Provisioning
        );
    }
}
