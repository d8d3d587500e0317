//! Velero `Backup`: what to capture from the cluster, and how far Velero has got.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::TypedLocalObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::shared::{HookErrorMode, HookStatus};
use crate::api::common::{GoDuration, UnknownFields, open_string_enum};

// Exactly the fields of Velero 1.18's `BackupSpec` (`pkg/apis/velero/v1/backup_types.go`).
// `backupType` (Full/Incremental) is not one of them: Velero's main branch added it after 1.18
// (velero-io/velero#9954), and a 1.18 CRD prunes it.
/// What a Velero backup captures and where it stores it.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "velero.io",
    version = "v1",
    kind = "Backup",
    namespaced,
    status = "BackupStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "A Velero capture of Kubernetes cluster state (API objects and volume data) at a point in time."
)]
#[serde(rename_all = "camelCase")]
pub struct BackupSpec {
    /// Metadata applied to the backup itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<BackupMetadata>,
    /// Namespaces to include; empty means all namespaces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub included_namespaces: Option<Vec<String>>,
    /// Namespaces to leave out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excluded_namespaces: Option<Vec<String>>,
    /// Resources to include; empty means all resources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub included_resources: Option<Vec<String>>,
    /// Resources to leave out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excluded_resources: Option<Vec<String>>,
    /// Cluster-scoped resource types to include ("*" for all); empty means only those related
    /// to included namespaced items.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub included_cluster_scoped_resources: Option<Vec<String>>,
    /// Cluster-scoped resource types to leave out ("*" for all).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excluded_cluster_scoped_resources: Option<Vec<String>>,
    /// Namespace-scoped resource types to include; defaults to "*".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub included_namespace_scoped_resources: Option<Vec<String>>,
    /// Namespace-scoped resource types to leave out ("*" for all).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excluded_namespace_scoped_resources: Option<Vec<String>>,
    /// Only objects matching this selector are backed up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Objects matching any of these selectors are backed up; cannot be combined with
    /// `labelSelector`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub or_label_selectors: Option<Vec<LabelSelector>>,
    /// Whether to snapshot the persistent volumes of included objects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot_volumes: Option<bool>,
    /// How long the backup is kept, e.g. "720h0m0s".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl: Option<GoDuration>,
    /// Label key grouping PVCs into one volume group snapshot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_group_snapshot_label_key: Option<String>,
    /// Whether cluster-scoped resources are considered at all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_cluster_resources: Option<bool>,
    /// Commands to run in pods before and after they are backed up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hooks: Option<BackupHooks>,
    /// Name of the BackupStorageLocation that stores the backup.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_location: Option<String>,
    /// Names of the VolumeSnapshotLocations used by the backup.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_snapshot_locations: Option<Vec<String>>,
    /// Deprecated: use `defaultVolumesToFsBackup`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_volumes_to_restic: Option<bool>,
    /// Whether every pod volume is backed up with file-system backup by default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_volumes_to_fs_backup: Option<bool>,
    /// Backup order per resource: resource name to comma-separated object names
    /// ("namespace/name", or "name" for cluster-scoped objects).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ordered_resources: Option<BTreeMap<String, String>>,
    /// How long to wait for a CSI VolumeSnapshot to become ready (default 10 minutes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub csi_snapshot_timeout: Option<GoDuration>,
    /// How long to wait for asynchronous BackupItemAction operations (default 4 hours).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item_operation_timeout: Option<GoDuration>,
    /// ConfigMap holding the resource policies the backup follows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_policy: Option<TypedLocalObjectReference>,
    /// Whether snapshot data is moved to the backup storage (data mover).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot_move_data: Option<bool>,
    /// Data mover to use; empty or "velero" means Velero's built-in one.
    #[serde(rename = "datamover", skip_serializing_if = "Option::is_none")]
    pub data_mover: Option<String>,
    /// Settings of the file uploader.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uploader_config: Option<UploaderConfigForBackup>,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

/// Metadata Velero applies to the Backup object it creates (used by schedules).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupMetadata {
    /// Labels to set on the backup.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

/// Settings of the uploader that copies file-system and data-mover data.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UploaderConfigForBackup {
    /// How many files are uploaded in parallel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel_files_upload: Option<i64>,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

/// Hooks run while individual items are backed up.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupHooks {
    /// Hook sets, each applying to the items its filters select.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<Vec<BackupResourceHookSpec>>,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

/// A named set of backup hooks and the namespaces, resources and labels it applies to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupResourceHookSpec {
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
    /// Hooks run before the item is stored (before its additional items).
    #[serde(rename = "pre", skip_serializing_if = "Option::is_none")]
    pub pre_hooks: Option<Vec<BackupResourceHook>>,
    /// Hooks run after the item and its additional items are stored.
    #[serde(rename = "post", skip_serializing_if = "Option::is_none")]
    pub post_hooks: Option<Vec<BackupResourceHook>>,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

/// One backup hook.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupResourceHook {
    /// A command run in a container of the pod.
    pub exec: ExecHook,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

/// A command executed in a pod's container through the pod exec API.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecHook {
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
    pub timeout: Option<GoDuration>,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

open_string_enum! {
    /// Lifecycle phase of a Velero backup.
    pub enum BackupPhase {
        /// Created, not yet processed by Velero.
        New = "New",
        /// Waiting in Velero's queue (see `queuePosition`).
        Queued = "Queued",
        /// Taken off the queue, about to start.
        ReadyToStart = "ReadyToStart",
        /// Rejected by Velero's validation; will not run.
        FailedValidation = "FailedValidation",
        /// Running.
        InProgress = "InProgress",
        /// Resources backed up; asynchronous plugin operations (e.g. data upload) still running.
        WaitingForPluginOperations = "WaitingForPluginOperations",
        /// As WaitingForPluginOperations, but some part already failed.
        WaitingForPluginOperationsPartiallyFailed = "WaitingForPluginOperationsPartiallyFailed",
        /// Plugin operations done; final updates still being written.
        Finalizing = "Finalizing",
        /// As Finalizing, but some part already failed.
        FinalizingPartiallyFailed = "FinalizingPartiallyFailed",
        /// Finished without errors.
        Completed = "Completed",
        /// Finished with errors on some items.
        PartiallyFailed = "PartiallyFailed",
        /// Could not complete.
        Failed = "Failed",
        /// The backup and its data are being deleted.
        Deleting = "Deleting",
    }
}

impl BackupPhase {
    /// True once Velero will not move the backup to another phase except Deleting.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            Self::Completed | Self::PartiallyFailed | Self::Failed | Self::FailedValidation
        )
    }
}

/// What Velero reports about a backup.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupStatus {
    /// Deprecated backup format major version; see `formatVersion`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
    /// Backup format version (major.minor.patch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format_version: Option<String>,
    /// When the backup becomes eligible for garbage collection.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expiration: Option<Time>,
    /// Current phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<BackupPhase>,
    /// Position in Velero's queue; only meaningful while the phase is Queued.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_position: Option<i64>,
    /// Why validation failed, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validation_errors: Option<Vec<String>>,
    /// When the backup started (server time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_timestamp: Option<Time>,
    /// When the backup finished, successfully or not (server time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_timestamp: Option<Time>,
    /// Volume snapshots attempted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_snapshots_attempted: Option<i64>,
    /// Volume snapshots completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_snapshots_completed: Option<i64>,
    /// The error that failed the whole backup.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// Number of warnings logged (the messages are in the backup log).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<i64>,
    /// Number of errors logged (the messages are in the backup log).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<i64>,
    /// Best-effort progress counters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress: Option<BackupProgress>,
    /// CSI VolumeSnapshots attempted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub csi_volume_snapshots_attempted: Option<i64>,
    /// CSI VolumeSnapshots completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub csi_volume_snapshots_completed: Option<i64>,
    /// Asynchronous BackupItemAction operations attempted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup_item_operations_attempted: Option<i64>,
    /// Asynchronous BackupItemAction operations completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup_item_operations_completed: Option<i64>,
    /// Asynchronous BackupItemAction operations that failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backup_item_operations_failed: Option<i64>,
    /// Hook counters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hook_status: Option<HookStatus>,
    /// Fields unknown to this version of NAC, kept verbatim.
    #[serde(flatten)]
    #[schemars(skip)]
    pub unknown_fields: UnknownFields,
}

/// Best-effort progress of a running backup.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupProgress {
    /// Items to back up; may grow as plugins add related items.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_items: Option<i64>,
    /// Items written to the backup so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items_backed_up: Option<i64>,
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
    fn backup_phase_parses_every_velero_value() {
        for value in BackupPhase::KNOWN_VALUES {
            let phase = BackupPhase::from(*value);
            assert!(phase.is_known(), "{value}");
            assert_eq!(phase.as_str(), *value);
        }
        assert_eq!(BackupPhase::from("Queued"), BackupPhase::Queued);
        assert_eq!(BackupPhase::from("ReadyToStart"), BackupPhase::ReadyToStart);
        assert_eq!(
            BackupPhase::from("Paused"),
            BackupPhase::Other("Paused".to_owned())
        );
    }

    #[test]
    fn terminal_phases() {
        assert!(BackupPhase::Completed.is_terminal());
        assert!(BackupPhase::FailedValidation.is_terminal());
        assert!(!BackupPhase::Queued.is_terminal());
        assert!(!BackupPhase::Other("Future".into()).is_terminal());
    }

    #[test]
    fn unknown_fields_survive_round_trip() {
        let input = serde_json::json!({
            "includedNamespaces": ["a"],
            "futureField": {"x": 1},
            "hooks": {"resources": [{"name": "h", "futureHookField": true}]}
        });
        let spec: BackupSpec = serde_json::from_value(input.clone()).unwrap();
        assert!(spec.unknown_fields.contains_key("futureField"));
        assert_eq!(serde_json::to_value(&spec).unwrap(), input);
    }
}
