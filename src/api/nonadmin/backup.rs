//! `NonAdminBackup` (`nab`): a tenant's request to back up its own namespace.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::{DataMoverOperationCounts, NonAdminPhase, PodVolumeOperationCounts, QueueInfo};
use crate::api::common::tolerant_copy_schema;
use crate::api::velero::{BackupSpec, BackupStatus, DeleteBackupRequestStatus};

/// The backup a tenant asks for.
// kube's `printcolumn(...)` entries repeat keys like `type_` by design.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "oadp.openshift.io",
    version = "v1alpha1",
    kind = "NonAdminBackup",
    namespaced,
    status = "NonAdminBackupStatus",
    shortname = "nab",
    derive = "Default",
    derive = "PartialEq",
    printcolumn(name = "Request-Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Velero-Phase",
        type_ = "string",
        json_path = ".status.veleroBackup.status.phase"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    doc = "A namespace owner's request to back up their namespace with Velero."
)]
#[serde(rename_all = "camelCase")]
pub struct NonAdminBackupSpec {
    /// The Velero backup spec; NAC validates it against admin policy and scopes it to this
    /// namespace before creating the Velero Backup.
    pub backup_spec: BackupSpec,
    /// Set to true to delete the backup, its data in object storage and this object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delete_backup: Option<bool>,
}

/// What NAC reports about a NonAdminBackup.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NonAdminBackupStatus {
    /// The Velero Backup created for this request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub velero_backup: Option<RelatedVeleroBackup>,
    /// The Velero DeleteBackupRequest created when deletion was requested.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub velero_delete_backup_request: Option<RelatedVeleroDeleteBackupRequest>,
    /// DataUploads of the backup, per phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_mover_data_uploads: Option<DataMoverOperationCounts>,
    /// PodVolumeBackups of the backup, per phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_system_pod_volume_backups: Option<PodVolumeOperationCounts>,
    /// Estimated number of Velero backups ahead of this one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_info: Option<QueueInfo>,
    /// One-word summary of the request's lifecycle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<NonAdminPhase>,
    /// Detailed conditions (Accepted, Queued, Deleting).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// Identifies the Velero Backup of a NonAdminBackup and mirrors it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RelatedVeleroBackup {
    /// Copy of the Velero Backup's spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "tolerant_copy_schema::<Option<BackupSpec>>")]
    pub spec: Option<BackupSpec>,
    /// Copy of the Velero Backup's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "tolerant_copy_schema::<Option<BackupStatus>>")]
    pub status: Option<BackupStatus>,
    /// Value of the Velero Backup's `openshift.io/oadp-nab-origin-nacuuid` label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nacuuid: Option<String>,
    /// Name of the Velero Backup.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Namespace of the Velero Backup (the OADP namespace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// Identifies the Velero DeleteBackupRequest of a NonAdminBackup and mirrors its status.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RelatedVeleroDeleteBackupRequest {
    /// Copy of the DeleteBackupRequest's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "tolerant_copy_schema::<Option<DeleteBackupRequestStatus>>")]
    pub status: Option<DeleteBackupRequestStatus>,
    /// Value of the DeleteBackupRequest's NACUUID label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nacuuid: Option<String>,
    /// Name of the DeleteBackupRequest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Namespace of the DeleteBackupRequest (the OADP namespace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}
