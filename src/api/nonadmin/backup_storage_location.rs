//! `NonAdminBackupStorageLocation` (`nabsl`): a tenant's own object-store location, with the
//! credential Secret in the tenant's namespace.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::NonAdminPhase;
use crate::api::common::tolerant_copy_schema;
use crate::api::velero::{BackupStorageLocationSpec, BackupStorageLocationStatus};

/// The location a tenant asks for.
// kube's `printcolumn(...)` entries repeat keys like `type_` by design.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "oadp.openshift.io",
    version = "v1alpha1",
    kind = "NonAdminBackupStorageLocation",
    namespaced,
    status = "NonAdminBackupStorageLocationStatus",
    shortname = "nabsl",
    derive = "Default",
    derive = "PartialEq",
    printcolumn(
        name = "Request-Approved",
        type_ = "string",
        json_path = ".status.conditions[?(@.type=='ClusterAdminApproved')].status"
    ),
    printcolumn(name = "Request-Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Velero-Phase",
        type_ = "string",
        json_path = ".status.veleroBackupStorageLocation.status.phase"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    doc = "A namespace owner's own Velero backup storage location."
)]
#[serde(rename_all = "camelCase")]
pub struct NonAdminBackupStorageLocationSpec {
    /// The Velero location spec; `credential` names a Secret in this namespace.
    pub backup_storage_location_spec: BackupStorageLocationSpec,
}

/// What NAC reports about a NonAdminBackupStorageLocation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NonAdminBackupStorageLocationStatus {
    /// The Velero BackupStorageLocation created for this request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub velero_backup_storage_location: Option<RelatedVeleroBackupStorageLocation>,
    /// One-word summary of the request's lifecycle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<NonAdminPhase>,
    /// Detailed conditions (Accepted, SecretSynced, BackupStorageLocationSynced,
    /// ClusterAdminApproved, SpecUpdateApproved, Deleting).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// Identifies the Velero BackupStorageLocation of a NonAdminBackupStorageLocation and mirrors
/// its status.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RelatedVeleroBackupStorageLocation {
    /// Copy of the Velero BackupStorageLocation's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "tolerant_copy_schema::<Option<BackupStorageLocationStatus>>")]
    pub status: Option<BackupStorageLocationStatus>,
    /// Value of the Velero BSL's `openshift.io/oadp-nabsl-origin-nacuuid` label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nacuuid: Option<String>,
    /// Name of the Velero BackupStorageLocation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Namespace of the Velero BackupStorageLocation (the OADP namespace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}
