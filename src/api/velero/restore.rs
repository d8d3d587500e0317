//! Velero `Restore`: what to bring back from a backup, and how far Velero has got.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::TypedLocalObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::{HookErrorMode, HookStatus};
use crate::api::common::{
    GoDuration, UnknownFields, open_string_enum, preserved_object_list_schema,
};

// Exactly the fields of Velero 1.18's `RestoreSpec` (`pkg/apis/velero/v1/restore_types.go`,
// as of v1.18.3, which added `resourcePolicy`).
/// What a Velero restore brings back and from which backup.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "velero.io",
    version = "v1",
    kind = "Restore",
    namespaced,
    status = "RestoreStatus",
    shortname = "rst",
    derive = "Default",
    derive = "PartialEq",
    doc = "A Velero application of resources from a backup to the cluster."
)]
#[serde(rename_all = "camelCase")]
pub struct RestoreSpec {
    /// Name of the Velero backup to restore from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup_name: Option<String>,
    /// Name of a Velero schedule; used when `backupName` is empty to restore its latest
    /// successful backup.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule_name: Option<String>,
    /// Namespaces to restore; empty means all in the backup.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub included_namespaces: Option<Vec<String>>,
    /// Namespaces not to restore.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excluded_namespaces: Option<Vec<String>>,
    /// Resources to restore; empty means all in the backup.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub included_resources: Option<Vec<String>>,
    /// Resources not to restore.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excluded_resources: Option<Vec<String>>,
    /// Source namespace to target namespace; unmapped namespaces keep their names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace_mapping: Option<BTreeMap<String, String>>,
    /// Only objects matching this selector are restored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Objects matching any of these selectors are restored; cannot be combined with
    /// `labelSelector`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub or_label_selectors: Option<Vec<LabelSelector>>,
    /// Whether persistent volumes are restored from their snapshots.
    #[serde(rename = "restorePVs", skip_serializing_if = "Option::is_none")]
    pub restore_pvs: Option<bool>,
    /// Resources whose `status` is restored too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restore_status: Option<RestoreStatusSpec>,
    /// Whether services keep the node ports they had at backup time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preserve_node_ports: Option<bool>,
    /// Whether cluster-scoped resources are restored (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_cluster_resources: Option<bool>,
    /// Hooks run while or after pods are restored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hooks: Option<RestoreHooks>,
    /// What to do with resources that already exist in the cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub existing_resource_policy: Option<ExistingResourcePolicy>,
    /// How long to wait for RestoreItemAction operations (default 4 hours).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item_operation_timeout: Option<GoDuration>,
    /// ConfigMap with JSON patches applied to resources before they are restored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_modifier: Option<TypedLocalObjectReference>,
    // velero-io/velero#10015 (a cherry-pick of #9939) added it to Velero 1.18.3.
    /// ConfigMap with the resource filter policies the restore follows
    /// (`namespacedFilterPolicies`, `clusterScopedFilterPolicy`); needs Velero 1.18.3 or later
    /// (earlier versions drop it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_policy: Option<TypedLocalObjectReference>,
    /// Settings of the file downloader.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uploader_config: Option<UploaderConfigForRestore>,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

open_string_enum! {
    /// What a restore does with a resource that already exists (Velero puts no `enum` on it).
    pub enum ExistingResourcePolicy(unconstrained) {
        /// Leave the existing resource alone.
        None = "none",
        /// Try to patch the existing resource to match the backup.
        Update = "update",
    }
}

/// Settings of the uploader when it writes restored data.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UploaderConfigForRestore {
    /// Whether files are written sparsely.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_sparse_files: Option<bool>,
    /// How many files are downloaded in parallel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel_files_download: Option<i64>,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

/// Resources whose status is restored.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RestoreStatusSpec {
    /// Resources whose status is restored; empty means all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub included_resources: Option<Vec<String>>,
    /// Resources whose status is not restored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excluded_resources: Option<Vec<String>>,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

/// Hooks run while or after items are restored.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RestoreHooks {
    /// Hook sets, each applying to the items its filters select.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<Vec<RestoreResourceHookSpec>>,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

/// A named set of restore hooks and the namespaces, resources and labels it applies to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RestoreResourceHookSpec {
    /// Name of the hook set.
    pub name: String,
    /// Namespaces the hooks apply to; empty means all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub included_namespaces: Option<Vec<String>>,
    /// Namespaces the hooks do not apply to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excluded_namespaces: Option<Vec<String>>,
    /// Resources the hooks apply to; empty means all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub included_resources: Option<Vec<String>>,
    /// Resources the hooks do not apply to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excluded_resources: Option<Vec<String>>,
    /// Only items matching this selector get the hooks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Hooks run during and after the item is restored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub post_hooks: Option<Vec<RestoreResourceHook>>,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

/// One restore hook: an exec hook, an init-container hook, or both.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RestoreResourceHook {
    /// A command run in a container of the restored pod.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exec: Option<ExecRestoreHook>,
    /// Init containers added to the restored pod.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub init: Option<InitRestoreHook>,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

/// A command executed in a restored pod's container.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecRestoreHook {
    /// Container to run in; defaults to the pod's first container.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// The command and its arguments.
    #[schemars(length(min = 1))]
    pub command: Vec<String>,
    /// What to do when the command fails.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_error: Option<HookErrorMode>,
    /// How long to wait for the command before treating it as failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exec_timeout: Option<GoDuration>,
    /// How long to wait for the container to be ready before running the command.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_timeout: Option<GoDuration>,
    /// Run when the container is Ready rather than merely Running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_for_ready: Option<bool>,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

/// Init containers added to a restored pod, run before the workload starts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitRestoreHook {
    /// Container specs, kept as raw JSON (the API server keeps them unpruned too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserved_object_list_schema")]
    pub init_containers: Option<Vec<serde_json::Value>>,
    /// How long to wait for the init containers to finish.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<GoDuration>,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

open_string_enum! {
    /// Lifecycle phase of a Velero restore.
    pub enum RestorePhase {
        /// Created, not yet processed by Velero.
        New = "New",
        /// Rejected by Velero's validation; will not run.
        FailedValidation = "FailedValidation",
        /// Running.
        InProgress = "InProgress",
        /// Resources restored; asynchronous plugin operations still running.
        WaitingForPluginOperations = "WaitingForPluginOperations",
        /// As WaitingForPluginOperations, but some part already failed.
        WaitingForPluginOperationsPartiallyFailed = "WaitingForPluginOperationsPartiallyFailed",
        /// Finished without errors.
        Completed = "Completed",
        /// Finished with errors on some items.
        PartiallyFailed = "PartiallyFailed",
        /// Could not run; see `failureReason`.
        Failed = "Failed",
        /// Plugin operations done; wrap-up tasks still running.
        Finalizing = "Finalizing",
        /// As Finalizing, but some part already failed.
        FinalizingPartiallyFailed = "FinalizingPartiallyFailed",
    }
}

impl RestorePhase {
    /// True once Velero will not move the restore to another phase.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            Self::Completed | Self::PartiallyFailed | Self::Failed | Self::FailedValidation
        )
    }
}

/// What Velero reports about a restore.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RestoreStatus {
    /// Current phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<RestorePhase>,
    /// Why validation failed, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validation_errors: Option<Vec<String>>,
    /// Number of warnings logged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<i64>,
    /// Number of errors logged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<i64>,
    /// The error that failed the whole restore.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// When the restore started (server time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_timestamp: Option<Time>,
    /// When the restore finished, successfully or not (server time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_timestamp: Option<Time>,
    /// Best-effort progress counters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress: Option<RestoreProgress>,
    /// Asynchronous RestoreItemAction operations attempted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restore_item_operations_attempted: Option<i64>,
    /// Asynchronous RestoreItemAction operations completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restore_item_operations_completed: Option<i64>,
    /// Asynchronous RestoreItemAction operations that failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restore_item_operations_failed: Option<i64>,
    /// Hook counters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hook_status: Option<HookStatus>,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

/// Best-effort progress of a running restore.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RestoreProgress {
    /// Items to restore; may grow as plugins add related items.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_items: Option<i64>,
    /// Items restored so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items_restored: Option<i64>,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn restore_phase_keeps_unknown_values() {
        assert_eq!(RestorePhase::from("Finalizing"), RestorePhase::Finalizing);
        let future: RestorePhase = serde_json::from_str("\"Queued\"").unwrap();
        assert_eq!(future, RestorePhase::Other("Queued".into()));
        assert_eq!(serde_json::to_string(&future).unwrap(), "\"Queued\"");
        assert!(RestorePhase::PartiallyFailed.is_terminal());
        assert!(!RestorePhase::Finalizing.is_terminal());
    }

    #[test]
    fn existing_resource_policy_values() {
        assert_eq!(
            ExistingResourcePolicy::from("update"),
            ExistingResourcePolicy::Update
        );
        assert_eq!(ExistingResourcePolicy::None.as_str(), "none");
    }
}
