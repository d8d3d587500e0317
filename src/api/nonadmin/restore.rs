//! `NonAdminRestore` (`nar`): a tenant's request to restore one of its NonAdminBackups into
//! its namespace.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::{DataMoverOperationCounts, NonAdminPhase, PodVolumeOperationCounts, QueueInfo};
use crate::api::common::tolerant_copy_schema;
use crate::api::velero::{RestoreSpec, RestoreStatus};

/// The restore a tenant asks for.
// kube's `printcolumn(...)` entries repeat keys like `type_` by design.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "oadp.openshift.io",
    version = "v1alpha1",
    kind = "NonAdminRestore",
    namespaced,
    status = "NonAdminRestoreStatus",
    shortname = "nar",
    derive = "Default",
    derive = "PartialEq",
    printcolumn(name = "Request-Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Velero-Phase",
        type_ = "string",
        json_path = ".status.veleroRestore.status.phase"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    doc = "A namespace owner's request to restore one of their backups with Velero."
)]
#[serde(rename_all = "camelCase")]
pub struct NonAdminRestoreSpec {
    /// The Velero restore spec; `backupName` names a NonAdminBackup in this namespace (not a
    /// Velero Backup).
    pub restore_spec: RestoreSpec,
}

/// What NAC reports about a NonAdminRestore.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NonAdminRestoreStatus {
    /// The Velero Restore created for this request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub velero_restore: Option<RelatedVeleroRestore>,
    /// DataDownloads of the restore, per phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_mover_data_downloads: Option<DataMoverOperationCounts>,
    /// PodVolumeRestores of the restore, per phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_system_pod_volume_restores: Option<PodVolumeOperationCounts>,
    /// Estimated number of Velero restores ahead of this one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_info: Option<QueueInfo>,
    /// One-word summary of the request's lifecycle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<NonAdminPhase>,
    /// Detailed conditions (Accepted, Queued, Deleting).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// Identifies the Velero Restore of a NonAdminRestore and mirrors its status.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RelatedVeleroRestore {
    /// Copy of the Velero Restore's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "tolerant_copy_schema::<Option<RestoreStatus>>")]
    pub status: Option<RestoreStatus>,
    /// Name of the Velero Restore.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Value of the Velero Restore's `openshift.io/oadp-nar-origin-nacuuid` label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nacuuid: Option<String>,
    /// Namespace of the Velero Restore (the OADP namespace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}
