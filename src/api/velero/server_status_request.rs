//! Velero `ServerStatusRequest`: asks the Velero server for its version and plugins.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::common::{UnknownFields, open_string_enum};

/// A server status request has no parameters.
// kube's `printcolumn(...)` entries repeat keys like `type_` by design.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "velero.io",
    version = "v1",
    kind = "ServerStatusRequest",
    namespaced,
    status = "ServerStatusRequestStatus",
    shortname = "ssr",
    derive = "Default",
    derive = "PartialEq",
    printcolumn(
        name = "Status",
        type_ = "string",
        json_path = ".status.phase",
        description = "Server Status Request status such as New/Processed"
    ),
    doc = "A request for status information about the Velero server."
)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatusRequestSpec {
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

open_string_enum! {
    /// Lifecycle phase of a server status request.
    pub enum ServerStatusRequestPhase {
        /// Not processed yet.
        New = "New",
        /// Answered.
        Processed = "Processed",
    }
}

/// A plugin running in the Velero server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginInfo {
    /// Plugin name.
    pub name: String,
    /// Plugin kind, e.g. "ObjectStore".
    pub kind: String,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

/// What the Velero server reported.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatusRequestStatus {
    /// Current phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<ServerStatusRequestPhase>,
    /// When the request was answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processed_timestamp: Option<Time>,
    /// Velero server version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// Plugins running in the server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugins: Option<Vec<PluginInfo>>,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}
