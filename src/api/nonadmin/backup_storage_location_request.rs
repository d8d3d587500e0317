//! `NonAdminBackupStorageLocationRequest` (`nabslrequest`): the cluster admin's approval gate
//! for a tenant's NonAdminBackupStorageLocation. Lives in the OADP namespace.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::common::tolerant_copy_schema;
use crate::api::velero::BackupStorageLocationSpec;

/// The admin's decision.
// kube's `printcolumn(...)` entries repeat keys like `type_` by design.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "oadp.openshift.io",
    version = "v1alpha1",
    kind = "NonAdminBackupStorageLocationRequest",
    namespaced,
    status = "NonAdminBackupStorageLocationRequestStatus",
    shortname = "nabslrequest",
    derive = "Default",
    derive = "PartialEq",
    printcolumn(name = "Request-Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Request-Namespace",
        type_ = "string",
        json_path = ".status.nonAdminBackupStorageLocation.namespace"
    ),
    printcolumn(
        name = "Request-Name",
        type_ = "string",
        json_path = ".status.nonAdminBackupStorageLocation.name"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    doc = "A cluster admin's approval request for a NonAdminBackupStorageLocation."
)]
#[serde(rename_all = "camelCase")]
pub struct NonAdminBackupStorageLocationRequestSpec {
    /// The admin's decision on the requested location.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_decision: Option<ApprovalDecision>,
}

/// A cluster admin's decision on a requested location.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalDecision {
    /// Create the Velero location.
    Approve,
    /// Refuse it (and remove it if it exists).
    Reject,
    /// Not decided yet.
    Pending,
}

/// State of an approval request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum NonAdminBackupStorageLocationRequestPhase {
    /// Waiting for the admin.
    Pending,
    /// Approved.
    Approved,
    /// Rejected.
    Rejected,
}

impl From<ApprovalDecision> for NonAdminBackupStorageLocationRequestPhase {
    fn from(decision: ApprovalDecision) -> Self {
        match decision {
            ApprovalDecision::Approve => Self::Approved,
            ApprovalDecision::Reject => Self::Rejected,
            ApprovalDecision::Pending => Self::Pending,
        }
    }
}

/// What NAC reports about an approval request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NonAdminBackupStorageLocationRequestStatus {
    /// The NonAdminBackupStorageLocation awaiting the decision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub non_admin_backup_storage_location: Option<SourceNonAdminBackupStorageLocation>,
    /// Pending, Approved or Rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<NonAdminBackupStorageLocationRequestPhase>,
}

/// The NonAdminBackupStorageLocation an approval request is about.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceNonAdminBackupStorageLocation {
    /// The Velero location spec the tenant asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "tolerant_copy_schema::<Option<BackupStorageLocationSpec>>")]
    pub requested_spec: Option<BackupStorageLocationSpec>,
    /// NACUUID of the NonAdminBackupStorageLocation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nacuuid: Option<String>,
    /// Name of the NonAdminBackupStorageLocation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Namespace of the NonAdminBackupStorageLocation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn decisions_map_to_phases() {
        assert_eq!(
            serde_json::to_value(ApprovalDecision::Approve).unwrap(),
            "approve"
        );
        assert_eq!(
            NonAdminBackupStorageLocationRequestPhase::from(ApprovalDecision::Reject),
            NonAdminBackupStorageLocationRequestPhase::Rejected
        );
        assert_eq!(
            NonAdminBackupStorageLocationRequestPhase::from(ApprovalDecision::Pending),
            NonAdminBackupStorageLocationRequestPhase::Pending
        );
    }
}
