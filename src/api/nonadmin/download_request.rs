//! `NonAdminDownloadRequest` (`nadr`): a tenant's request for a log, result or resource list
//! of its own NonAdminBackup or NonAdminRestore, served through a Velero DownloadRequest.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::NonAdminPhase;
use crate::api::common::tolerant_copy_schema;
use crate::api::velero::{DownloadRequestStatus, DownloadTarget};

/// What the tenant wants to download.
// kube's `printcolumn(...)` entries repeat keys like `type_` by design.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "oadp.openshift.io",
    version = "v1alpha1",
    kind = "NonAdminDownloadRequest",
    namespaced,
    status = "NonAdminDownloadRequestStatus",
    shortname = "nadr",
    derive = "Default",
    derive = "PartialEq",
    printcolumn(name = "Request-Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    doc = "A namespace owner's request to download an artifact of their backup or restore."
)]
#[serde(rename_all = "camelCase")]
pub struct NonAdminDownloadRequestSpec {
    /// The artifact; `name` is a NonAdminBackup or NonAdminRestore in this namespace.
    pub target: DownloadTarget,
}

/// What NAC reports about a NonAdminDownloadRequest.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NonAdminDownloadRequestStatus {
    /// The Velero DownloadRequest serving this request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub velero: Option<RelatedVeleroDownloadRequest>,
    /// One-word summary of the request's lifecycle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<NonAdminPhase>,
    /// Detailed conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// Mirrors the status of the Velero DownloadRequest.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RelatedVeleroDownloadRequest {
    /// Copy of the Velero DownloadRequest's status (phase, downloadURL, expiration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "tolerant_copy_schema::<Option<DownloadRequestStatus>>")]
    pub status: Option<DownloadRequestStatus>,
}
