//! Asynchronous item operations as Velero 1.18 runs them: the plugin operations a backup or a
//! restore leaves running (CSI snapshot data movement), the phases they hold it in, and how the
//! operations controllers move it on.
//!
//! Followed from Velero's source:
//! - `pkg/backup/actions/csi/pvc_action.go`: with `snapshotMoveData`, each PVC snapshotted
//!   through CSI gets a DataUpload and an asynchronous operation (`du-<backupUID>.<pvcUID>`,
//!   action `velero.io/csi-pvc-backupper`); the PVC written to the backup carries
//!   `velero.io/data-upload-name`. The simulator takes a PVC bound to a volume
//!   (`spec.volumeName`) with a storage class as a CSI volume, and skips PVCs when
//!   `snapshotVolumes` is false or volumes go to file-system backup by default;
//! - `pkg/restore/actions/csi/pvc_action.go`: restoring such a PVC from a backup that moved
//!   data starts a DataDownload, another asynchronous operation (action
//!   `velero.io/csi-pvc-restorer`), unless `restorePVs` is false;
//! - `pkg/controller/backup_controller.go` `runBackup` and `restore_controller.go`
//!   `runValidatedRestore`: with operations still running the phase is
//!   `WaitingForPluginOperations` (or `...PartiallyFailed` with errors), else `Finalizing` (or
//!   `FinalizingPartiallyFailed`), with `backupItemOperationsAttempted` /
//!   `restoreItemOperationsAttempted` counted and the operations uploaded
//!   (`<b>-itemoperations.json.gz`, `restore-<r>-itemoperations.json.gz`);
//! - `backup_operations_controller.go` / `restore_operations_controller.go`: every 10 seconds
//!   the operations' progress is asked for, `...ItemOperationsCompleted` / `...Failed`
//!   updated, and once none is running the phase becomes `Finalizing` (from
//!   `WaitingForPluginOperations`) or `FinalizingPartiallyFailed`, the operations uploaded
//!   again; a missing or read-only storage location ends it `PartiallyFailed`.
//!
//! The simulator's operations finish a fixed time after they were created
//! ([`super::options::SimulatorOptions::item_operation_duration`]); their JSON is Velero's
//! (`itemoperation.BackupOperation` / `RestoreOperation`).
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::clock::{parse_time, timestamp};
use crate::api::velero::BackupSpec;
use crate::api::velero::labels::valid_label_value;
use crate::manifest::tarball::BackupItem;

/// The CSI plugin's PVC backup item action.
pub const BACKUP_PVC_ACTION: &str = "velero.io/csi-pvc-backupper";
/// The CSI plugin's PVC restore item action.
pub const RESTORE_PVC_ACTION: &str = "velero.io/csi-pvc-restorer";
/// Annotation on a backed-up PVC naming its DataUpload (`<namespace>/<name>`).
pub const DATA_UPLOAD_NAME_ANNOTATION: &str = "velero.io/data-upload-name";

/// `WaitingForPluginOperations`.
pub const WAITING: &str = "WaitingForPluginOperations";
/// `WaitingForPluginOperationsPartiallyFailed`.
pub const WAITING_PARTIALLY_FAILED: &str = "WaitingForPluginOperationsPartiallyFailed";

/// Whether a backup moves its CSI snapshots' data (`snapshotMoveData`), so that PVCs get
/// DataUploads: not when volumes are not snapshotted at all or go to file-system backup.
pub fn moves_data(spec: &BackupSpec) -> bool {
    spec.snapshot_move_data == Some(true)
        && spec.snapshot_volumes != Some(false)
        && spec.default_volumes_to_fs_backup != Some(true)
        && spec.default_volumes_to_restic != Some(true)
}

fn is_pvc(item: &BackupItem) -> bool {
    item.group.is_empty() && item.resource == "persistentvolumeclaims"
}

/// A PVC the CSI plugin snapshots: bound to a volume and with a storage class (the plugin
/// refuses a PVC without one and skips one whose volume is not CSI).
pub fn snapshotted_pvc(item: &BackupItem) -> bool {
    let non_empty = |pointer: &str| {
        item.object
            .pointer(pointer)
            .and_then(Value::as_str)
            .is_some_and(|value| !value.is_empty())
    };
    is_pvc(item) && non_empty("/spec/volumeName") && non_empty("/spec/storageClassName")
}

fn uid(object: &Value) -> &str {
    object
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// A stand-in for the five random characters of a generated name (from the API server's
/// alphabet), stable for one operation.
fn suffix(seed: &str) -> String {
    use sha2::Digest as _;
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    sha2::Sha256::digest(seed.as_bytes())
        .iter()
        .take(5)
        .map(|byte| char::from(ALPHABET[usize::from(*byte) % ALPHABET.len()]))
        .collect()
}

fn resource_identifier(item: &BackupItem, namespace: Option<&str>) -> Value {
    json!({"Group": item.group, "Resource": item.resource,
           "Namespace": namespace.unwrap_or_default(), "Name": item.name})
}

/// The DataUpload operations of a backup over its collected `items`, created at `now`; each
/// PVC concerned gets the `velero.io/data-upload-name` annotation in `items`, as the plugin
/// returns it to be written to the backup.
pub fn backup_operations(
    backup: &Value,
    velero_namespace: &str,
    items: &mut [BackupItem],
    now: DateTime<Utc>,
) -> Vec<Value> {
    let name = backup
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let backup_uid = uid(backup);
    let mut operations = Vec::new();
    for item in items.iter_mut().filter(|item| snapshotted_pvc(item)) {
        let pvc_uid = uid(&item.object).to_owned();
        let operation_id = valid_label_value(&format!("du-{backup_uid}.{pvc_uid}"));
        let data_upload = format!("{name}-{}", suffix(&operation_id));
        if let Some(metadata) = item
            .object
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
        {
            let annotations = metadata.entry("annotations").or_insert_with(|| json!({}));
            if let Some(annotations) = annotations.as_object_mut() {
                annotations.insert(
                    DATA_UPLOAD_NAME_ANNOTATION.to_owned(),
                    json!(format!("{velero_namespace}/{data_upload}")),
                );
            }
        }
        operations.push(json!({
            "spec": {
                "backupName": name,
                "backupUID": backup_uid,
                "backupItemAction": BACKUP_PVC_ACTION,
                "resourceIdentifier": resource_identifier(item, item.namespace.as_deref()),
                "operationID": operation_id,
                "itemsToUpdate": [{"Group": "velero.io", "Resource": "datauploads",
                                   "Namespace": velero_namespace, "Name": data_upload}],
            },
            "status": {"phase": "New", "created": timestamp(now)},
        }));
    }
    operations
}

/// Whether a restore brings back data moved by its backup (`snapshotMoveData`) for `item`:
/// a PVC written with a DataUpload, and `restorePVs` not false.
pub fn restores_moved_data(
    backup: &BackupSpec,
    restore_pvs: Option<bool>,
    item: &BackupItem,
) -> bool {
    backup.snapshot_move_data == Some(true)
        && restore_pvs != Some(false)
        && is_pvc(item)
        && item
            .object
            .pointer("/metadata/annotations")
            .and_then(|annotations| annotations.get(DATA_UPLOAD_NAME_ANNOTATION))
            .is_some()
}

/// The DataDownload operation restoring `item` (a PVC restored into `target_namespace`).
pub fn restore_operation(
    restore: &Value,
    velero_namespace: &str,
    item: &BackupItem,
    target_namespace: Option<&str>,
    now: DateTime<Utc>,
) -> Value {
    let name = restore
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let restore_uid = uid(restore);
    let operation_id = valid_label_value(&format!("dd-{restore_uid}.{}", uid(&item.object)));
    let data_download = format!("{name}-{}", suffix(&operation_id));
    json!({
        "spec": {
            "restoreName": name,
            "restoreUID": restore_uid,
            "restoreItemAction": RESTORE_PVC_ACTION,
            "resourceIdentifier": resource_identifier(item, target_namespace),
            "operationID": operation_id,
            "itemsToUpdate": [{"Group": "velero.io", "Resource": "datadownloads",
                               "Namespace": velero_namespace, "Name": data_download}],
        },
        "status": {"phase": "New", "created": timestamp(now)},
    })
}

/// The phase `runBackup` / `runValidatedRestore` leave: waiting while operations run,
/// finalizing otherwise; partially failed with errors.
pub fn phase_after_run(errors: bool, operations_in_progress: bool) -> &'static str {
    match (errors, operations_in_progress) {
        (false, false) => "Finalizing",
        (true, false) => "FinalizingPartiallyFailed",
        (false, true) => WAITING,
        (true, true) => WAITING_PARTIALLY_FAILED,
    }
}

/// The phase the operations controllers move a waiting backup or restore to once no operation
/// is running: `Finalizing` from `WaitingForPluginOperations` (without new errors), else
/// `FinalizingPartiallyFailed`.
pub fn phase_after_operations(current: &str, new_errors: bool) -> &'static str {
    if current == WAITING && !new_errors {
        "Finalizing"
    } else {
        "FinalizingPartiallyFailed"
    }
}

/// The status fields one round of an operations controller writes (pure), for `kind` `backup`
/// or `restore`: the `<kind>ItemOperationsCompleted`/`Failed` counters that changed (the
/// recorded ones are `recorded`), one more error per new failure with
/// `WaitingForPluginOperationsPartiallyFailed`, and once nothing runs the finalizing phase
/// ([`phase_after_operations`]). Empty when nothing changed.
pub fn round_status(
    kind: &str,
    current_phase: &str,
    recorded: (i64, i64),
    errors: i64,
    progress: &Progress,
) -> serde_json::Map<String, Value> {
    let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    let mut status = serde_json::Map::new();
    if recorded.0 != count(progress.completed) {
        status.insert(
            format!("{kind}ItemOperationsCompleted"),
            serde_json::json!(progress.completed),
        );
    }
    if recorded.1 != count(progress.failed) {
        status.insert(
            format!("{kind}ItemOperationsFailed"),
            serde_json::json!(progress.failed),
        );
    }
    if progress.new_failures > 0 {
        status.insert(
            "errors".into(),
            serde_json::json!(errors.saturating_add(count(progress.new_failures))),
        );
        status.insert("phase".into(), serde_json::json!(WAITING_PARTIALLY_FAILED));
    }
    if !progress.in_progress {
        status.insert(
            "phase".into(),
            serde_json::json!(phase_after_operations(
                current_phase,
                progress.new_failures > 0
            )),
        );
    }
    status
}

/// The terminal phase the finalizer controllers record after `finalizing`.
pub fn phase_after_finalizing(finalizing: &str) -> &'static str {
    if finalizing == "Finalizing" {
        "Completed"
    } else {
        "PartiallyFailed"
    }
}

/// The progress the operations controllers find (`getBackupItemOperationProgress`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Some operation is still New or InProgress.
    pub in_progress: bool,
    /// Operations Completed.
    pub completed: usize,
    /// Operations Failed.
    pub failed: usize,
    /// Operations that failed in this round (each one more error).
    pub new_failures: usize,
    /// Some operation changed.
    pub changed: bool,
}

/// One round of progress over `operations` at `now`: a New or InProgress operation completes
/// `duration` after its creation, fails when `timeout` (the spec's `itemOperationTimeout`)
/// passes first ("Asynchronous action timed out"), and is InProgress in between.
pub fn advance(
    operations: &mut [Value],
    now: DateTime<Utc>,
    duration: Duration,
    timeout: Option<Duration>,
) -> Progress {
    let mut progress = Progress::default();
    let after = |start: DateTime<Utc>, span: Duration| {
        start + chrono::Duration::from_std(span).unwrap_or(chrono::Duration::MAX)
    };
    for operation in operations.iter_mut() {
        let phase = operation
            .pointer("/status/phase")
            .and_then(Value::as_str)
            .unwrap_or("New")
            .to_owned();
        match phase.as_str() {
            "Completed" => progress.completed += 1,
            "Failed" | "Canceled" => progress.failed += 1,
            _ => {
                let created = parse_time(operation.pointer("/status/created")).unwrap_or(now);
                let status = &mut operation["status"];
                status["started"] = json!(timestamp(created));
                if now >= after(created, duration) {
                    status["phase"] = json!("Completed");
                    status["description"] = json!("Completed");
                    status["operationUnits"] = json!("Bytes");
                    status["updated"] = json!(timestamp(now));
                    progress.completed += 1;
                    progress.changed = true;
                } else if timeout.is_some_and(|timeout| now > after(created, timeout)) {
                    status["phase"] = json!("Failed");
                    status["error"] = json!("Asynchronous action timed out");
                    status["updated"] = json!(timestamp(now));
                    progress.failed += 1;
                    progress.new_failures += 1;
                    progress.changed = true;
                } else {
                    if phase != "InProgress" {
                        status["phase"] = json!("InProgress");
                        status["description"] = json!("InProgress");
                        progress.changed = true;
                    }
                    progress.in_progress = true;
                }
            }
        }
    }
    progress
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    #[test]
    fn a_round_writes_only_what_changed_and_finalizes_once_nothing_runs() {
        let running = Progress {
            in_progress: true,
            completed: 1,
            failed: 0,
            new_failures: 0,
            changed: true,
        };
        let status = super::round_status("backup", WAITING, (0, 0), 0, &running);
        assert_eq!(
            serde_json::Value::Object(status),
            serde_json::json!({"backupItemOperationsCompleted": 1})
        );
        assert!(super::round_status("backup", WAITING, (1, 0), 0, &running).is_empty());
        let failed = Progress {
            in_progress: true,
            failed: 1,
            new_failures: 1,
            ..running
        };
        assert_eq!(
            serde_json::Value::Object(super::round_status("restore", WAITING, (1, 0), 2, &failed)),
            serde_json::json!({"restoreItemOperationsFailed": 1, "errors": 3,
                               "phase": WAITING_PARTIALLY_FAILED})
        );
        let done = Progress {
            in_progress: false,
            ..running
        };
        assert_eq!(
            super::round_status("backup", WAITING, (1, 0), 0, &done)["phase"],
            "Finalizing"
        );
        assert_eq!(
            super::round_status("backup", WAITING_PARTIALLY_FAILED, (1, 0), 0, &done)["phase"],
            "FinalizingPartiallyFailed"
        );
        assert_eq!(super::phase_after_finalizing("Finalizing"), "Completed");
        assert_eq!(
            super::phase_after_finalizing("FinalizingPartiallyFailed"),
            "PartiallyFailed"
        );
    }

    use super::*;

    fn pvc(name: &str, volume: Option<&str>, class: Option<&str>) -> BackupItem {
        BackupItem {
            group: String::new(),
            version: "v1".into(),
            kind: "PersistentVolumeClaim".into(),
            resource: "persistentvolumeclaims".into(),
            namespace: Some("team-a".into()),
            name: name.into(),
            object: json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": "team-a", "uid": format!("uid-{name}")},
                "spec": {"volumeName": volume, "storageClassName": class}}),
        }
    }

    fn at(second: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + second, 0).unwrap()
    }

    #[test]
    fn data_moving_backups_get_one_operation_per_snapshotted_pvc() {
        let spec = BackupSpec {
            snapshot_move_data: Some(true),
            ..Default::default()
        };
        assert!(moves_data(&spec));
        assert!(!moves_data(&BackupSpec::default()));
        assert!(!moves_data(&BackupSpec {
            snapshot_volumes: Some(false),
            ..spec.clone()
        }));
        assert!(!moves_data(&BackupSpec {
            default_volumes_to_fs_backup: Some(true),
            ..spec.clone()
        }));
        let backup = json!({"metadata": {"name": "nightly", "uid": "b-uid"}});
        let mut items = vec![
            pvc("data", Some("pv-1"), Some("csi")),
            pvc("pending", None, Some("csi")),
            pvc("classless", Some("pv-2"), None),
        ];
        let operations = backup_operations(&backup, "openshift-adp", &mut items, at(0));
        assert_eq!(operations.len(), 1);
        let operation = &operations[0];
        assert_eq!(operation["spec"]["backupItemAction"], BACKUP_PVC_ACTION);
        assert_eq!(operation["spec"]["operationID"], "du-b-uid.uid-data");
        assert_eq!(
            operation["spec"]["resourceIdentifier"],
            json!({"Group": "", "Resource": "persistentvolumeclaims", "Namespace": "team-a", "Name": "data"})
        );
        assert_eq!(operation["status"]["phase"], "New");
        let upload = operation["spec"]["itemsToUpdate"][0]["Name"]
            .as_str()
            .unwrap();
        assert!(upload.starts_with("nightly-"), "{upload}");
        assert_eq!(
            items[0].object["metadata"]["annotations"][DATA_UPLOAD_NAME_ANNOTATION],
            format!("openshift-adp/{upload}")
        );
        assert!(items[1].object["metadata"].get("annotations").is_none());
        // A long operation ID is shortened as Velero's label.GetValidName does.
        let long =
            json!({"metadata": {"name": "b", "uid": "0123456789abcdef0123456789abcdef0123"}});
        let mut item = vec![pvc(&"p".repeat(40), Some("pv"), Some("csi"))];
        let operations = backup_operations(&long, "ns", &mut item, at(0));
        assert_eq!(
            operations[0]["spec"]["operationID"].as_str().unwrap().len(),
            63
        );
        // The restore side: only a PVC written with a DataUpload, and not when restorePVs is false.
        assert!(restores_moved_data(&spec, None, &items[0]));
        assert!(!restores_moved_data(&spec, Some(false), &items[0]));
        assert!(!restores_moved_data(&spec, None, &items[1]));
        assert!(!restores_moved_data(
            &BackupSpec::default(),
            None,
            &items[0]
        ));
        let restore = json!({"metadata": {"name": "again", "uid": "r-uid"}});
        let download = restore_operation(&restore, "openshift-adp", &items[0], Some("copy"), at(0));
        assert_eq!(download["spec"]["restoreItemAction"], RESTORE_PVC_ACTION);
        assert_eq!(download["spec"]["operationID"], "dd-r-uid.uid-data");
        assert_eq!(download["spec"]["resourceIdentifier"]["Namespace"], "copy");
    }

    #[test]
    fn phases_follow_run_backup_and_the_operations_controllers() {
        assert_eq!(phase_after_run(false, false), "Finalizing");
        assert_eq!(phase_after_run(true, false), "FinalizingPartiallyFailed");
        assert_eq!(phase_after_run(false, true), WAITING);
        assert_eq!(phase_after_run(true, true), WAITING_PARTIALLY_FAILED);
        assert_eq!(phase_after_operations(WAITING, false), "Finalizing");
        assert_eq!(
            phase_after_operations(WAITING, true),
            "FinalizingPartiallyFailed"
        );
        assert_eq!(
            phase_after_operations(WAITING_PARTIALLY_FAILED, false),
            "FinalizingPartiallyFailed"
        );
    }

    #[test]
    fn operations_progress_until_done_or_timed_out() {
        let backup = json!({"metadata": {"name": "b", "uid": "u"}});
        let mut items = vec![pvc("a", Some("pv-a"), Some("csi"))];
        let mut operations = backup_operations(&backup, "ns", &mut items, at(0));
        let duration = Duration::from_secs(30);
        let progress = advance(&mut operations, at(10), duration, None);
        assert!(progress.in_progress && progress.changed);
        assert_eq!(operations[0]["status"]["phase"], "InProgress");
        let again = advance(&mut operations, at(20), duration, None);
        assert!(again.in_progress && !again.changed);
        let done = advance(&mut operations, at(30), duration, None);
        assert_eq!(
            done,
            Progress {
                in_progress: false,
                completed: 1,
                failed: 0,
                new_failures: 0,
                changed: true
            }
        );
        assert_eq!(operations[0]["status"]["phase"], "Completed");
        assert_eq!(
            advance(&mut operations, at(40), duration, None).completed,
            1
        );
        // itemOperationTimeout passes first: the operation fails.
        let mut slow = backup_operations(&backup, "ns", &mut items, at(0));
        let timed_out = advance(&mut slow, at(20), duration, Some(Duration::from_secs(10)));
        assert_eq!((timed_out.failed, timed_out.new_failures), (1, 1));
        assert_eq!(slow[0]["status"]["error"], "Asynchronous action timed out");
    }
}
