//! Velero `DeleteBackupRequest`: asks Velero to delete a backup and its stored data.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::common::{UnknownFields, open_string_enum};

/// Which backup to delete.
// kube's `printcolumn(...)` entries repeat keys like `type_` by design.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "velero.io",
    version = "v1",
    kind = "DeleteBackupRequest",
    namespaced,
    status = "DeleteBackupRequestStatus",
    derive = "Default",
    derive = "PartialEq",
    printcolumn(
        name = "BackupName",
        type_ = "string",
        json_path = ".spec.backupName",
        description = "The name of the backup to be deleted"
    ),
    printcolumn(
        name = "Status",
        type_ = "string",
        json_path = ".status.phase",
        description = "The status of the deletion request"
    ),
    doc = "A request to delete a Velero backup and its data in object storage."
)]
#[serde(rename_all = "camelCase")]
pub struct DeleteBackupRequestSpec {
    /// Name of the Velero backup to delete.
    pub backup_name: String,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

open_string_enum! {
    /// Lifecycle phase of a deletion request.
    pub enum DeleteBackupRequestPhase {
        /// Not processed yet.
        New = "New",
        /// Being processed.
        InProgress = "InProgress",
        /// Done (see `errors` for failures).
        Processed = "Processed",
    }
}

/// What Velero reports about a deletion request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeleteBackupRequestStatus {
    /// Current phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<DeleteBackupRequestPhase>,
    /// Errors met while deleting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<String>>,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}
