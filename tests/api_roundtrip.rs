//! Every resource type survives JSON -> Rust -> JSON unchanged (fully populated objects,
//! unknown fields and unknown enum values included), and every generated CRD schema is
//! structural, describes every field of those objects, and has the short names and printer
//! columns NAC promises.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use nac::api::crds::{nac_crds, velero_crds};
use nac::api::nonadmin::{
    NonAdminBackup, NonAdminBackupStorageLocation, NonAdminBackupStorageLocationRequest,
    NonAdminDownloadRequest, NonAdminPhase, NonAdminRestore, NonAdminSchedule,
};
use nac::api::velero::{
    Backup, BackupPhase, BackupStorageLocation, DeleteBackupRequest, DownloadRequest,
    DownloadTargetKind, HookErrorMode, Restore, RestorePhase, Schedule, ServerStatusRequest,
};
use pretty_assertions::assert_eq;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Fixtures: every field Velero 1.18 and the OADP non-admin API define, set.

fn metadata(name: &str, namespace: &str) -> Value {
    json!({
        "name": name,
        "namespace": namespace,
        "uid": "0b1c2d3e-0000-4000-8000-000000000001",
        "resourceVersion": "4242",
        "generation": 3,
        "creationTimestamp": "2024-11-27T10:47:49Z",
        "labels": {"app.kubernetes.io/managed-by": "oadp-nac-controller", "openshift.io/oadp": "True"},
        "annotations": {"openshift.io/oadp-nab-origin-name": "nightly"},
        "finalizers": ["nonadminbackup.oadp.openshift.io/finalizer"]
    })
}

fn label_selector() -> Value {
    json!({
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["frontend", "backend"]},
            {"key": "canary", "operator": "DoesNotExist"}
        ]
    })
}

fn exec_backup_hook(container: &str) -> Value {
    json!({
        "exec": {
            "container": container,
            "command": ["/bin/sh", "-c", "sync"],
            "onError": "Fail",
            "timeout": "30s"
        }
    })
}

fn backup_spec() -> Value {
    json!({
        "metadata": {"labels": {"team": "payments"}},
        "includedNamespaces": ["tenant-a"],
        "excludedNamespaces": ["kube-system"],
        "includedResources": ["deployments", "configmaps"],
        "excludedResources": ["events"],
        "includedClusterScopedResources": ["persistentvolumes"],
        "excludedClusterScopedResources": ["nodes"],
        "includedNamespaceScopedResources": ["*"],
        "excludedNamespaceScopedResources": ["secrets"],
        "labelSelector": label_selector(),
        "orLabelSelectors": [{"matchLabels": {"a": "1"}}, {"matchLabels": {"b": "2"}}],
        "snapshotVolumes": true,
        "ttl": "720h0m0s",
        "volumeGroupSnapshotLabelKey": "velero.io/volume-group",
        "includeClusterResources": false,
        "hooks": {
            "resources": [{
                "name": "freeze-db",
                "includedNamespaces": ["tenant-a"],
                "excludedNamespaces": ["tenant-b"],
                "includedResources": ["pods"],
                "excludedResources": ["jobs"],
                "labelSelector": label_selector(),
                "pre": [exec_backup_hook("db")],
                "post": [exec_backup_hook("db"), {"exec": {"command": ["true"], "onError": "Continue"}}]
            }]
        },
        "storageLocation": "tenant-bsl",
        "volumeSnapshotLocations": ["default-vsl"],
        "defaultVolumesToRestic": false,
        "defaultVolumesToFsBackup": true,
        "orderedResources": {"pods": "tenant-a/web-0,tenant-a/web-1"},
        "csiSnapshotTimeout": "10m0s",
        "itemOperationTimeout": "4h0m0s",
        "resourcePolicy": {"apiGroup": "", "kind": "configmap", "name": "backup-policy"},
        "snapshotMoveData": true,
        "datamover": "velero",
        "uploaderConfig": {"parallelFilesUpload": 8}
    })
}

fn backup_status() -> Value {
    json!({
        "version": 1,
        "formatVersion": "1.1.0",
        "expiration": "2024-12-27T10:48:45Z",
        "phase": "Queued",
        "queuePosition": 3,
        "validationErrors": ["none really"],
        "startTimestamp": "2024-11-27T10:48:45Z",
        "completionTimestamp": "2024-11-27T10:48:50Z",
        "volumeSnapshotsAttempted": 2,
        "volumeSnapshotsCompleted": 1,
        "failureReason": "unable to get credentials",
        "warnings": 4,
        "errors": 1,
        "progress": {"totalItems": 56, "itemsBackedUp": 55},
        "csiVolumeSnapshotsAttempted": 3,
        "csiVolumeSnapshotsCompleted": 3,
        "backupItemOperationsAttempted": 5,
        "backupItemOperationsCompleted": 4,
        "backupItemOperationsFailed": 1,
        "hookStatus": {"hooksAttempted": 2, "hooksFailed": 1}
    })
}

fn restore_spec() -> Value {
    json!({
        "backupName": "nightly",
        "scheduleName": "nightly-schedule",
        "includedNamespaces": ["tenant-a"],
        "excludedNamespaces": ["tenant-b"],
        "includedResources": ["deployments"],
        "excludedResources": ["events"],
        "namespaceMapping": {"tenant-a": "tenant-a"},
        "labelSelector": label_selector(),
        "orLabelSelectors": [{"matchLabels": {"a": "1"}}],
        "restorePVs": true,
        "restoreStatus": {"includedResources": ["deployments"], "excludedResources": ["pods"]},
        "preserveNodePorts": true,
        "includeClusterResources": false,
        "hooks": {
            "resources": [{
                "name": "warm-cache",
                "includedNamespaces": ["tenant-a"],
                "excludedNamespaces": ["tenant-b"],
                "includedResources": ["pods"],
                "excludedResources": ["jobs"],
                "labelSelector": label_selector(),
                "postHooks": [
                    {
                        "exec": {
                            "container": "app",
                            "command": ["/warm.sh"],
                            "onError": "Continue",
                            "execTimeout": "1m0s",
                            "waitTimeout": "5m0s",
                            "waitForReady": true
                        }
                    },
                    {
                        "init": {
                            "initContainers": [{
                                "name": "restore-hook",
                                "image": "alpine:3",
                                "command": ["/bin/ash", "-c", "echo hi"],
                                "volumeMounts": [{"name": "data", "mountPath": "/data"}]
                            }],
                            "timeout": "2m0s"
                        }
                    }
                ]
            }]
        },
        "existingResourcePolicy": "update",
        "itemOperationTimeout": "4h0m0s",
        "resourceModifier": {"kind": "ConfigMap", "name": "modifiers"},
        "resourcePolicy": {"kind": "ConfigMap", "name": "restore-policy"},
        "uploaderConfig": {"writeSparseFiles": true, "parallelFilesDownload": 4}
    })
}

fn restore_status() -> Value {
    json!({
        "phase": "WaitingForPluginOperationsPartiallyFailed",
        "validationErrors": ["backup not found"],
        "warnings": 2,
        "errors": 1,
        "failureReason": "timeout",
        "startTimestamp": "2024-11-27T11:00:00Z",
        "completionTimestamp": "2024-11-27T11:05:00Z",
        "progress": {"totalItems": 10, "itemsRestored": 9},
        "restoreItemOperationsAttempted": 3,
        "restoreItemOperationsCompleted": 2,
        "restoreItemOperationsFailed": 1,
        "hookStatus": {"hooksAttempted": 1, "hooksFailed": 0}
    })
}

fn bsl_spec() -> Value {
    json!({
        "provider": "aws",
        "config": {"region": "eu-west-1", "s3ForcePathStyle": "true"},
        "credential": {"name": "cloud-credentials", "key": "cloud", "optional": false},
        "objectStorage": {
            "bucket": "tenant-bucket",
            "prefix": "tenant-a",
            "caCert": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
            "caCertRef": {"name": "ca-bundle", "key": "ca.crt"}
        },
        "default": false,
        "accessMode": "ReadWrite",
        "backupSyncPeriod": "2m0s",
        "validationFrequency": "1m0s"
    })
}

fn bsl_status() -> Value {
    json!({
        "phase": "Available",
        "lastSyncedTime": "2024-11-27T10:00:00Z",
        "lastValidationTime": "2024-11-27T10:01:00Z",
        "message": "BackupStorageLocation is valid",
        "lastSyncedRevision": "b7b6c1a2-0000-4000-8000-000000000000",
        "accessMode": "ReadWrite"
    })
}

fn schedule_status() -> Value {
    json!({
        "phase": "Enabled",
        "lastBackup": "2024-11-27T02:00:00Z",
        "lastSkipped": "2024-11-26T02:00:00Z",
        "validationErrors": ["invalid schedule"]
    })
}

fn condition(kind: &str, reason: &str) -> Value {
    json!({
        "type": kind,
        "status": "True",
        "reason": reason,
        "message": format!("{kind} is true"),
        "lastTransitionTime": "2024-11-27T10:47:50Z",
        "observedGeneration": 3
    })
}

fn velero_backup() -> Value {
    json!({
        "apiVersion": "velero.io/v1",
        "kind": "Backup",
        "metadata": metadata("tenant-a-nightly-c95bc62d", "openshift-adp"),
        "spec": backup_spec(),
        "status": backup_status()
    })
}

fn velero_restore() -> Value {
    json!({
        "apiVersion": "velero.io/v1",
        "kind": "Restore",
        "metadata": metadata("tenant-a-restore-1", "openshift-adp"),
        "spec": restore_spec(),
        "status": restore_status()
    })
}

fn velero_bsl() -> Value {
    json!({
        "apiVersion": "velero.io/v1",
        "kind": "BackupStorageLocation",
        "metadata": metadata("tenant-a-bsl", "openshift-adp"),
        "spec": bsl_spec(),
        "status": bsl_status()
    })
}

fn velero_delete_backup_request() -> Value {
    json!({
        "apiVersion": "velero.io/v1",
        "kind": "DeleteBackupRequest",
        "metadata": metadata("tenant-a-nightly-delete", "openshift-adp"),
        "spec": {"backupName": "tenant-a-nightly-c95bc62d"},
        "status": {"phase": "Processed", "errors": ["object storage unreachable"]}
    })
}

fn velero_download_request() -> Value {
    json!({
        "apiVersion": "velero.io/v1",
        "kind": "DownloadRequest",
        "metadata": metadata("nadr-1234", "openshift-adp"),
        "spec": {"target": {"kind": "BackupResults", "name": "tenant-a-nightly-c95bc62d"}},
        "status": {
            "phase": "Processed",
            "downloadURL": "https://bucket.example/signed?x=1",
            "expiration": "2024-11-27T10:58:00Z"
        }
    })
}

fn velero_schedule() -> Value {
    json!({
        "apiVersion": "velero.io/v1",
        "kind": "Schedule",
        "metadata": metadata("tenant-a-nightly", "openshift-adp"),
        "spec": {
            "template": backup_spec(),
            "schedule": "0 2 * * *",
            "useOwnerReferencesInBackup": false,
            "paused": true,
            "skipImmediately": true
        },
        "status": schedule_status()
    })
}

fn velero_server_status_request() -> Value {
    json!({
        "apiVersion": "velero.io/v1",
        "kind": "ServerStatusRequest",
        "metadata": metadata("ssr-1", "openshift-adp"),
        "spec": {},
        "status": {
            "phase": "Processed",
            "processedTimestamp": "2024-11-27T10:00:00Z",
            "serverVersion": "v1.18.0",
            "plugins": [{"name": "velero.io/aws", "kind": "ObjectStore"}]
        }
    })
}

fn non_admin_backup() -> Value {
    json!({
        "apiVersion": "oadp.openshift.io/v1alpha1",
        "kind": "NonAdminBackup",
        "metadata": metadata("nightly", "tenant-a"),
        "spec": {"backupSpec": backup_spec(), "deleteBackup": true},
        "status": {
            "veleroBackup": {
                "nacuuid": "tenant-a-nightly-c95bc62d",
                "name": "tenant-a-nightly-c95bc62d",
                "namespace": "openshift-adp",
                "spec": backup_spec(),
                "status": backup_status()
            },
            "veleroDeleteBackupRequest": {
                "nacuuid": "tenant-a-nightly-c95bc62d",
                "name": "tenant-a-nightly-delete",
                "namespace": "openshift-adp",
                "status": {"phase": "InProgress", "errors": ["retrying"]}
            },
            "dataMoverDataUploads": {
                "total": 9, "new": 1, "accepted": 1, "prepared": 1, "inProgress": 1,
                "canceling": 1, "canceled": 1, "failed": 1, "completed": 2
            },
            "fileSystemPodVolumeBackups": {
                "total": 4, "new": 1, "inProgress": 1, "failed": 1, "completed": 1
            },
            "queueInfo": {"estimatedQueuePosition": 12},
            "phase": "Deleting",
            "conditions": [
                condition("Accepted", "BackupAccepted"),
                condition("Queued", "BackupScheduled"),
                condition("Deleting", "DeletionPending")
            ]
        }
    })
}

fn non_admin_restore() -> Value {
    json!({
        "apiVersion": "oadp.openshift.io/v1alpha1",
        "kind": "NonAdminRestore",
        "metadata": metadata("restore-1", "tenant-a"),
        "spec": {"restoreSpec": restore_spec()},
        "status": {
            "veleroRestore": {
                "nacuuid": "tenant-a-restore-1-1234",
                "name": "tenant-a-restore-1-1234",
                "namespace": "openshift-adp",
                "status": restore_status()
            },
            "dataMoverDataDownloads": {
                "total": 9, "new": 1, "accepted": 1, "prepared": 1, "inProgress": 1,
                "canceling": 1, "canceled": 1, "failed": 1, "completed": 2
            },
            "fileSystemPodVolumeRestores": {
                "total": 4, "new": 1, "inProgress": 1, "failed": 1, "completed": 1
            },
            "queueInfo": {"estimatedQueuePosition": 0},
            "phase": "Created",
            "conditions": [condition("Accepted", "RestoreAccepted"), condition("Queued", "RestoreScheduled")]
        }
    })
}

fn non_admin_bsl() -> Value {
    json!({
        "apiVersion": "oadp.openshift.io/v1alpha1",
        "kind": "NonAdminBackupStorageLocation",
        "metadata": metadata("my-bucket", "tenant-a"),
        "spec": {"backupStorageLocationSpec": bsl_spec()},
        "status": {
            "veleroBackupStorageLocation": {
                "nacuuid": "tenant-a-my-bucket-77",
                "name": "tenant-a-my-bucket-77",
                "namespace": "openshift-adp",
                "status": bsl_status()
            },
            "phase": "Created",
            "conditions": [
                condition("Accepted", "BslSpecValidation"),
                condition("SecretSynced", "SecretSynced"),
                condition("BackupStorageLocationSynced", "BackupStorageLocationSynced"),
                condition("ClusterAdminApproved", "BslSpecApproved"),
                condition("SpecUpdateApproved", "BslSpecApproved")
            ]
        }
    })
}

fn non_admin_bsl_request() -> Value {
    json!({
        "apiVersion": "oadp.openshift.io/v1alpha1",
        "kind": "NonAdminBackupStorageLocationRequest",
        "metadata": metadata("tenant-a-my-bucket-77", "openshift-adp"),
        "spec": {"approvalDecision": "approve"},
        "status": {
            "nonAdminBackupStorageLocation": {
                "requestedSpec": bsl_spec(),
                "nacuuid": "tenant-a-my-bucket-77",
                "name": "my-bucket",
                "namespace": "tenant-a"
            },
            "phase": "Approved"
        }
    })
}

fn non_admin_download_request() -> Value {
    json!({
        "apiVersion": "oadp.openshift.io/v1alpha1",
        "kind": "NonAdminDownloadRequest",
        "metadata": metadata("logs", "tenant-a"),
        "spec": {"target": {"kind": "BackupLog", "name": "nightly"}},
        "status": {
            "velero": {
                "status": {
                    "phase": "Processed",
                    "downloadURL": "https://bucket.example/signed?x=2",
                    "expiration": "2024-11-27T10:58:00Z"
                }
            },
            "phase": "Created",
            "conditions": [condition("Processed", "Success")]
        }
    })
}

fn non_admin_schedule() -> Value {
    let run = |name: &str, phase: &str| {
        json!({
            "name": name,
            "veleroBackupName": format!("{name}-velero"),
            "phase": phase,
            "startTimestamp": "2024-11-27T02:00:00Z",
            "completionTimestamp": "2024-11-27T02:03:00Z",
            "expiration": "2024-12-27T02:00:00Z"
        })
    };
    json!({
        "apiVersion": "oadp.openshift.io/v1alpha1",
        "kind": "NonAdminSchedule",
        "metadata": metadata("nightly", "tenant-a"),
        "spec": {
            "schedule": "0 2 * * *",
            "paused": false,
            "skipImmediately": true,
            "template": {"backupSpec": backup_spec()}
        },
        "status": {
            "veleroSchedule": {
                "nacuuid": "tenant-a-nightly-99",
                "name": "tenant-a-nightly-99",
                "namespace": "openshift-adp",
                "status": schedule_status()
            },
            "nextRun": "2024-11-28T02:00:00Z",
            "lastBackup": run("nightly-20241127020000", "Completed"),
            "recentBackups": [
                run("nightly-20241127020000", "Completed"),
                run("nightly-20241126020000", "PartiallyFailed")
            ],
            "phase": "Created",
            "conditions": [condition("Accepted", "ScheduleAccepted")]
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Round trips.

fn assert_round_trip<K: Serialize + DeserializeOwned>(input: &Value) -> K {
    let object: K = serde_json::from_value(input.clone()).expect("fixture deserializes");
    let output = serde_json::to_value(&object).expect("object serializes");
    assert_eq!(&output, input);
    object
}

#[test]
fn velero_backup_round_trips() {
    let backup: Backup = assert_round_trip(&velero_backup());
    let spec = &backup.spec;
    assert!(
        spec.unknown_fields.is_empty(),
        "fixture uses only known fields"
    );
    assert_eq!(
        spec.ttl.as_ref().unwrap().parse().unwrap(),
        std::time::Duration::from_secs(720 * 3600)
    );
    let hook = &spec.hooks.as_ref().unwrap().resources.as_ref().unwrap()[0];
    assert_eq!(
        hook.pre_hooks.as_ref().unwrap()[0].exec.on_error,
        Some(HookErrorMode::Fail)
    );
    let status = backup.status.as_ref().unwrap();
    assert_eq!(status.phase, Some(BackupPhase::Queued));
    assert_eq!(status.queue_position, Some(3));
    assert!(status.unknown_fields.is_empty());
}

#[test]
fn velero_restore_round_trips() {
    let restore: Restore = assert_round_trip(&velero_restore());
    assert!(restore.spec.unknown_fields.is_empty());
    assert_eq!(
        restore.status.unwrap().phase,
        Some(RestorePhase::WaitingForPluginOperationsPartiallyFailed)
    );
}

#[test]
fn velero_backup_storage_location_round_trips() {
    let bsl: BackupStorageLocation = assert_round_trip(&velero_bsl());
    assert_eq!(bsl.spec.object_storage.bucket, "tenant-bucket");
    assert!(bsl.spec.object_storage.unknown_fields.is_empty());
}

#[test]
fn velero_delete_backup_request_round_trips() {
    let request: DeleteBackupRequest = assert_round_trip(&velero_delete_backup_request());
    assert_eq!(request.spec.backup_name, "tenant-a-nightly-c95bc62d");
}

#[test]
fn velero_download_request_round_trips() {
    let request: DownloadRequest = assert_round_trip(&velero_download_request());
    assert_eq!(request.spec.target.kind, DownloadTargetKind::BackupResults);
}

#[test]
fn every_download_target_kind_round_trips() {
    for kind in DownloadTargetKind::KNOWN_VALUES {
        let mut input = velero_download_request();
        input["spec"]["target"]["kind"] = json!(kind);
        let request: DownloadRequest = assert_round_trip(&input);
        assert!(request.spec.target.kind.is_known(), "{kind}");
    }
}

#[test]
fn velero_schedule_round_trips() {
    let schedule: Schedule = assert_round_trip(&velero_schedule());
    assert!(schedule.spec.template.unknown_fields.is_empty());
}

#[test]
fn velero_server_status_request_round_trips() {
    let _: ServerStatusRequest = assert_round_trip(&velero_server_status_request());
}

#[test]
fn non_admin_backup_round_trips() {
    let nab: NonAdminBackup = assert_round_trip(&non_admin_backup());
    let status = nab.status.unwrap();
    assert_eq!(status.phase, Some(NonAdminPhase::Deleting));
    assert_eq!(status.conditions.len(), 3);
    assert_eq!(status.queue_info.unwrap().estimated_queue_position, 12);
}

#[test]
fn non_admin_restore_round_trips() {
    let _: NonAdminRestore = assert_round_trip(&non_admin_restore());
}

#[test]
fn non_admin_backup_storage_location_round_trips() {
    let _: NonAdminBackupStorageLocation = assert_round_trip(&non_admin_bsl());
}

#[test]
fn non_admin_backup_storage_location_request_round_trips() {
    let _: NonAdminBackupStorageLocationRequest = assert_round_trip(&non_admin_bsl_request());
}

#[test]
fn non_admin_download_request_round_trips() {
    let _: NonAdminDownloadRequest = assert_round_trip(&non_admin_download_request());
}

#[test]
fn non_admin_schedule_round_trips() {
    let nas: NonAdminSchedule = assert_round_trip(&non_admin_schedule());
    assert_eq!(nas.status.unwrap().recent_backups.len(), 2);
}

#[test]
fn minimal_objects_round_trip_without_adding_fields() {
    let minimal = [
        json!({"apiVersion": "velero.io/v1", "kind": "Backup", "metadata": {"name": "b"}, "spec": {}}),
        json!({"apiVersion": "velero.io/v1", "kind": "Backup", "metadata": {"name": "b"},
               "spec": {"hooks": {}}, "status": {}}),
    ];
    for input in &minimal {
        let _: Backup = assert_round_trip(input);
    }
    let nab = json!({"apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
                     "metadata": {"name": "n", "namespace": "t"}, "spec": {"backupSpec": {}}});
    let _: NonAdminBackup = assert_round_trip(&nab);
}

#[test]
fn unknown_fields_and_values_survive_at_every_level() {
    let mut backup = velero_backup();
    backup["spec"]["futureTopLevel"] = json!({"nested": [1, 2, 3]});
    backup["spec"]["hooks"]["futureHooksField"] = json!(true);
    backup["spec"]["hooks"]["resources"][0]["futureHookSpecField"] = json!("x");
    backup["spec"]["hooks"]["resources"][0]["pre"][0]["futureHookField"] = json!({"a": 1});
    backup["spec"]["hooks"]["resources"][0]["pre"][0]["exec"]["onError"] = json!("FailBlock");
    backup["spec"]["hooks"]["resources"][0]["pre"][0]["exec"]["futureExecField"] = json!(7);
    backup["spec"]["uploaderConfig"]["futureUploaderSetting"] = json!("fast");
    backup["spec"]["metadata"]["annotations"] = json!({"future": "metadata"});
    // Not a Velero 1.18 field (Velero's main branch added it later): kept verbatim.
    backup["spec"]["backupType"] = json!("Differential");
    backup["status"]["phase"] = json!("WaitingForSomethingNew");
    backup["status"]["futureStatusField"] = json!({"deep": {"deeper": null}});
    backup["status"]["progress"]["futureProgressField"] = json!(1.5);
    backup["status"]["hookStatus"]["hooksSkipped"] = json!(2);
    let parsed: Backup = assert_round_trip(&backup);
    let status = parsed.status.as_ref().unwrap();
    assert_eq!(
        status.phase,
        Some(BackupPhase::Other("WaitingForSomethingNew".into()))
    );
    assert!(status.unknown_fields.contains_key("futureStatusField"));
    assert!(parsed.spec.unknown_fields.contains_key("futureTopLevel"));
    assert!(parsed.spec.unknown_fields.contains_key("backupType"));

    let mut restore = velero_restore();
    restore["spec"]["skipDefaultResourceModifier"] = json!(true);
    restore["spec"]["existingResourcePolicy"] = json!("recreate");
    restore["spec"]["hooks"]["resources"][0]["postHooks"][0]["exec"]["futureField"] = json!(1);
    restore["spec"]["hooks"]["resources"][0]["postHooks"][1]["init"]["futureField"] = json!(2);
    restore["status"]["phase"] = json!("Queued");
    restore["status"]["queuePosition"] = json!(4);
    let parsed: Restore = assert_round_trip(&restore);
    assert_eq!(
        parsed.status.unwrap().phase,
        Some(RestorePhase::Other("Queued".into()))
    );

    let mut bsl = velero_bsl();
    bsl["spec"]["worker"] = json!({"serviceAccountName": "bsl-worker"});
    bsl["spec"]["objectStorage"]["futureStorageField"] = json!("y");
    bsl["status"]["phase"] = json!("Degraded");
    let _: BackupStorageLocation = assert_round_trip(&bsl);

    let mut download = velero_download_request();
    download["spec"]["target"]["kind"] = json!("BackupFutureArtifact");
    download["spec"]["target"]["futureTargetField"] = json!("z");
    let parsed: DownloadRequest = assert_round_trip(&download);
    assert!(!parsed.spec.target.kind.is_known());

    let mut schedule = velero_schedule();
    schedule["spec"]["template"]["futureTemplateField"] = json!([]);
    schedule["spec"]["futureScheduleField"] = json!("w");
    schedule["status"]["phase"] = json!("Suspended");
    let _: Schedule = assert_round_trip(&schedule);

    let mut nab = non_admin_backup();
    nab["spec"]["backupSpec"]["futureTopLevel"] = json!({"k": "v"});
    nab["spec"]["backupSpec"]["hooks"]["resources"][0]["post"][0]["exec"]["futureExec"] = json!(1);
    nab["spec"]["backupSpec"]["labelSelector"]["matchLabels"]["extra"] = json!("label");
    nab["status"]["veleroBackup"]["status"]["phase"] = json!("SomethingNewer");
    nab["status"]["veleroBackup"]["status"]["futureStatus"] = json!({"x": [true]});
    nab["status"]["veleroBackup"]["spec"]["futureSpec"] = json!(3);
    nab["status"]["veleroDeleteBackupRequest"]["status"]["futureField"] = json!("d");
    let parsed: NonAdminBackup = assert_round_trip(&nab);
    assert!(
        parsed
            .spec
            .backup_spec
            .unknown_fields
            .contains_key("futureTopLevel")
    );

    let mut nar = non_admin_restore();
    nar["spec"]["restoreSpec"]["futureRestoreField"] = json!({"a": "b"});
    nar["status"]["veleroRestore"]["status"]["phase"] = json!("Queued");
    let _: NonAdminRestore = assert_round_trip(&nar);

    let mut nas = non_admin_schedule();
    nas["spec"]["template"]["backupSpec"]["futureField"] = json!(1);
    nas["status"]["recentBackups"][0]["phase"] = json!("ReadyToStart");
    nas["status"]["veleroSchedule"]["status"]["futureField"] = json!(1);
    let _: NonAdminSchedule = assert_round_trip(&nas);
}

// ---------------------------------------------------------------------------------------------
// CRD schemas.

fn all_crds() -> Vec<CustomResourceDefinition> {
    let mut crds = nac_crds();
    crds.extend(velero_crds());
    crds
}

/// The generated CRD (as checked in) of `K`.
fn crd<K: CustomResourceExt>() -> CustomResourceDefinition {
    all_crds()
        .into_iter()
        .find(|crd| crd.metadata.name.as_deref() == Some(K::crd_name()))
        .expect("kind has a generated CRD")
}

fn schema_of(crd: &CustomResourceDefinition) -> Value {
    let schema = crd.spec.versions[0]
        .schema
        .as_ref()
        .and_then(|validation| validation.open_api_v3_schema.as_ref())
        .expect("CRD has a schema");
    serde_json::to_value(schema).unwrap()
}

const JUNCTORS: [&str; 4] = ["anyOf", "oneOf", "allOf", "not"];

/// Checks the structural-schema rules kube-apiserver enforces; returns the violations.
fn structural_violations(node: &Value, path: &str, in_junctor: bool, out: &mut Vec<String>) {
    let Some(object) = node.as_object() else {
        out.push(format!("{path}: schema is not an object"));
        return;
    };
    for forbidden in ["$ref", "$schema", "definitions", "default"] {
        if object.contains_key(forbidden) {
            out.push(format!("{path}: has {forbidden}"));
        }
    }
    let int_or_string = object.get("x-kubernetes-int-or-string") == Some(&json!(true));
    let preserve = object.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true));
    let kind = object.get("type");
    if in_junctor {
        // Inside anyOf/oneOf/allOf/not only value validations may appear.
        for key in [
            "type",
            "description",
            "nullable",
            "additionalProperties",
            "x-kubernetes-preserve-unknown-fields",
        ] {
            if object.contains_key(key) {
                out.push(format!("{path}: {key} inside a logical junctor"));
            }
        }
    } else {
        match kind {
            Some(Value::String(name)) if !name.is_empty() => {}
            Some(other) => out.push(format!(
                "{path}: type must be one non-empty string, got {other}"
            )),
            None if int_or_string || preserve => {}
            None => out.push(format!("{path}: no type")),
        }
    }
    if kind == Some(&json!("array")) && !object.get("items").is_some_and(Value::is_object) {
        out.push(format!("{path}: array without a single items schema"));
    }
    if object.contains_key("properties") && object.contains_key("additionalProperties") {
        out.push(format!("{path}: both properties and additionalProperties"));
    }
    if let Some(values) = object.get("enum").and_then(Value::as_array) {
        for value in values {
            let matches_type = match kind.and_then(Value::as_str) {
                Some("string") => value.is_string(),
                Some("integer") => value.is_i64() || value.is_u64(),
                Some("boolean") => value.is_boolean(),
                _ => true,
            };
            if !matches_type {
                out.push(format!(
                    "{path}: enum value {value} does not match the type"
                ));
            }
        }
    }
    let properties = object.get("properties").and_then(Value::as_object);
    if let Some(required) = object.get("required").and_then(Value::as_array) {
        for name in required {
            let declared = name
                .as_str()
                .is_some_and(|name| properties.is_some_and(|p| p.contains_key(name)));
            if !declared {
                out.push(format!("{path}: required {name} is not a property"));
            }
        }
    }
    if let Some(properties) = properties {
        for (name, child) in properties {
            structural_violations(child, &format!("{path}.{name}"), in_junctor, out);
        }
    }
    if let Some(items) = object.get("items") {
        structural_violations(items, &format!("{path}[]"), in_junctor, out);
    }
    if let Some(additional) = object.get("additionalProperties").filter(|a| a.is_object()) {
        structural_violations(additional, &format!("{path}{{}}"), in_junctor, out);
    }
    for junctor in JUNCTORS {
        match object.get(junctor) {
            Some(Value::Array(children)) => {
                for (index, child) in children.iter().enumerate() {
                    structural_violations(child, &format!("{path}.{junctor}[{index}]"), true, out);
                }
            }
            Some(child) => structural_violations(child, &format!("{path}.{junctor}"), true, out),
            None => {}
        }
    }
}

#[test]
fn structural_check_catches_violations() {
    let bad = json!({
        "type": "object",
        "properties": {
            "untyped": {"description": "no type"},
            "list": {"type": "array"},
            "union": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "both": {"type": "object", "properties": {"a": {"type": "string"}},
                     "additionalProperties": {"type": "string"}},
            "badEnum": {"type": "string", "enum": ["a", null]},
            "preserved": {"x-kubernetes-preserve-unknown-fields": true}
        },
        "required": ["missing"]
    });
    let mut violations = Vec::new();
    structural_violations(&bad, "Bad", false, &mut violations);
    assert_eq!(violations.len(), 8, "{violations:#?}");
}

#[test]
fn every_crd_schema_is_structural() {
    for crd in all_crds() {
        let mut violations = Vec::new();
        structural_violations(
            &schema_of(&crd),
            &crd.spec.names.kind,
            false,
            &mut violations,
        );
        assert!(violations.is_empty(), "{violations:#?}");
        let root = schema_of(&crd);
        assert_eq!(root["type"], "object", "{}", crd.spec.names.kind);
        assert_eq!(root["properties"]["spec"]["type"], "object");
    }
}

/// Mimics kube-apiserver pruning and validation: every field of `value` must be declared by
/// `schema` (or sit under `x-kubernetes-preserve-unknown-fields`), with the declared type and,
/// for enums, a listed value.
fn undeclared_fields(value: &Value, schema: &Value, path: &str, out: &mut Vec<String>) {
    if value.is_null() {
        if schema.get("nullable") != Some(&json!(true)) {
            out.push(format!("{path}: null but not nullable"));
        }
        return;
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array)
        && !values.contains(value)
    {
        out.push(format!("{path}: {value} is not one of {values:?}"));
    }
    let preserve = schema.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true));
    let expected_type = schema.get("type").and_then(Value::as_str);
    match value {
        Value::Object(fields) => {
            if expected_type.is_some_and(|t| t != "object") {
                out.push(format!("{path}: object where {expected_type:?} expected"));
                return;
            }
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            for (name, child) in fields {
                let child_path = format!("{path}.{name}");
                if let Some(child_schema) = properties.and_then(|p| p.get(name)) {
                    undeclared_fields(child, child_schema, &child_path, out);
                } else if let Some(child_schema) = additional {
                    undeclared_fields(child, child_schema, &child_path, out);
                } else if !preserve {
                    out.push(format!("{child_path}: not in the schema (would be pruned)"));
                }
            }
            if let Some(required) = schema.get("required").and_then(Value::as_array) {
                for name in required.iter().filter_map(Value::as_str) {
                    if !fields.contains_key(name) {
                        out.push(format!("{path}: missing required {name}"));
                    }
                }
            }
        }
        Value::Array(elements) => {
            if expected_type.is_some_and(|t| t != "array") {
                out.push(format!("{path}: array where {expected_type:?} expected"));
                return;
            }
            if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
                && (elements.len() as u64) < min
            {
                out.push(format!("{path}: fewer than {min} items"));
            }
            if let Some(items) = schema.get("items") {
                for (index, element) in elements.iter().enumerate() {
                    undeclared_fields(element, items, &format!("{path}[{index}]"), out);
                }
            }
        }
        Value::String(_) if expected_type.is_some_and(|t| t != "string") => {
            out.push(format!("{path}: string where {expected_type:?} expected"));
        }
        Value::Bool(_) if expected_type.is_some_and(|t| t != "boolean") => {
            out.push(format!("{path}: boolean where {expected_type:?} expected"));
        }
        Value::Number(number)
            if expected_type.is_some_and(|t| t == "integer") && !number.is_i64() =>
        {
            out.push(format!("{path}: {number} is not an integer"));
        }
        _ => {}
    }
}

/// Runs [`undeclared_fields`] over an object's spec and status (the API server handles
/// apiVersion, kind and metadata itself).
fn schema_problems(crd: &CustomResourceDefinition, object: &Value) -> Vec<String> {
    let schema = schema_of(crd);
    let mut problems = Vec::new();
    for part in ["spec", "status"] {
        if let Some(value) = object.get(part) {
            undeclared_fields(value, &schema["properties"][part], part, &mut problems);
        }
    }
    problems
}

#[test]
fn crd_schemas_declare_every_field_of_the_fixtures() {
    let cases = [
        (crd::<Backup>(), velero_backup()),
        (crd::<Restore>(), velero_restore()),
        (crd::<BackupStorageLocation>(), velero_bsl()),
        (crd::<DeleteBackupRequest>(), velero_delete_backup_request()),
        (crd::<DownloadRequest>(), velero_download_request()),
        (crd::<Schedule>(), velero_schedule()),
        (crd::<ServerStatusRequest>(), velero_server_status_request()),
        (crd::<NonAdminBackup>(), non_admin_backup()),
        (crd::<NonAdminRestore>(), non_admin_restore()),
        (crd::<NonAdminBackupStorageLocation>(), non_admin_bsl()),
        (
            crd::<NonAdminBackupStorageLocationRequest>(),
            non_admin_bsl_request(),
        ),
        (
            crd::<NonAdminDownloadRequest>(),
            non_admin_download_request(),
        ),
        (crd::<NonAdminSchedule>(), non_admin_schedule()),
    ];
    for (crd, object) in cases {
        let problems = schema_problems(&crd, &object);
        assert!(
            problems.is_empty(),
            "{}: {problems:#?}",
            crd.spec.names.kind
        );
    }
}

#[test]
fn status_copies_accept_a_newer_velero_but_tenant_specs_stay_strict() {
    let crd = crd::<NonAdminBackup>();
    let mut nab = non_admin_backup();
    nab["status"]["veleroBackup"]["status"]["phase"] = json!("SomethingNewer");
    nab["status"]["veleroBackup"]["status"]["futureStatus"] = json!({"x": 1});
    nab["status"]["veleroBackup"]["status"]["progress"]["futureCounter"] = json!(1);
    nab["status"]["veleroBackup"]["spec"]["futureSpec"] = json!(true);
    assert_eq!(schema_problems(&crd, &nab), Vec::<String>::new());

    let mut strict = non_admin_backup();
    // Not a Velero 1.18 field: a tenant's backupType is an unknown field like any other.
    strict["spec"]["backupSpec"]["backupType"] = json!("Full");
    strict["spec"]["backupSpec"]["futureField"] = json!(1);
    let problems = schema_problems(&crd, &strict);
    assert_eq!(problems.len(), 2, "{problems:#?}");

    let mut missing = non_admin_backup();
    missing["spec"] = json!({"deleteBackup": true});
    assert_eq!(
        schema_problems(&crd, &missing),
        vec!["spec: missing required backupSpec"]
    );
}

#[test]
fn required_fields_and_enums_are_in_the_schemas() {
    let required = |crd: &CustomResourceDefinition, pointer: &str| -> Vec<String> {
        serde_json::from_value(schema_of(crd).pointer(pointer).cloned().unwrap_or_default())
            .unwrap_or_default()
    };
    assert_eq!(
        required(&crd::<NonAdminBackup>(), "/properties/spec/required"),
        ["backupSpec"]
    );
    assert_eq!(
        required(&crd::<NonAdminRestore>(), "/properties/spec/required"),
        ["restoreSpec"]
    );
    assert_eq!(
        required(
            &crd::<NonAdminBackupStorageLocation>(),
            "/properties/spec/required"
        ),
        ["backupStorageLocationSpec"]
    );
    assert_eq!(
        required(
            &crd::<NonAdminDownloadRequest>(),
            "/properties/spec/required"
        ),
        ["target"]
    );
    assert_eq!(
        required(&crd::<NonAdminSchedule>(), "/properties/spec/required"),
        ["schedule", "template"]
    );
    assert_eq!(
        required(&crd::<BackupStorageLocation>(), "/properties/spec/required"),
        ["objectStorage", "provider"]
    );
    assert_eq!(
        required(&crd::<Schedule>(), "/properties/spec/required"),
        ["schedule", "template"]
    );

    let enum_at = |crd: &CustomResourceDefinition, pointer: &str| -> Vec<String> {
        serde_json::from_value(schema_of(crd).pointer(pointer).cloned().unwrap()).unwrap()
    };
    assert_eq!(
        enum_at(&crd::<Backup>(), "/properties/status/properties/phase/enum"),
        BackupPhase::KNOWN_VALUES
    );
    assert!(
        enum_at(&crd::<Backup>(), "/properties/status/properties/phase/enum")
            .contains(&"ReadyToStart".to_owned())
    );
    assert_eq!(
        enum_at(
            &crd::<NonAdminBackup>(),
            "/properties/status/properties/phase/enum"
        ),
        ["New", "BackingOff", "Created", "Deleting"]
    );
    assert_eq!(
        enum_at(
            &crd::<NonAdminBackupStorageLocationRequest>(),
            "/properties/spec/properties/approvalDecision/enum"
        ),
        ["approve", "reject", "pending"]
    );
    assert_eq!(
        enum_at(
            &crd::<NonAdminDownloadRequest>(),
            "/properties/spec/properties/target/properties/kind/enum"
        ),
        DownloadTargetKind::KNOWN_VALUES
    );
    // Restore's existingResourcePolicy has no enum in Velero's CRD either.
    assert!(
        schema_of(&crd::<Restore>())
            .pointer("/properties/spec/properties/existingResourcePolicy/enum")
            .is_none()
    );
}

fn columns(crd: &CustomResourceDefinition) -> Vec<(String, String, String)> {
    crd.spec.versions[0]
        .additional_printer_columns
        .iter()
        .flatten()
        .map(|c| (c.name.clone(), c.type_.clone(), c.json_path.clone()))
        .collect()
}

fn column(name: &str, kind: &str, path: &str) -> (String, String, String) {
    (name.to_owned(), kind.to_owned(), path.to_owned())
}

#[test]
fn short_names_and_printer_columns() {
    let short_names =
        |crd: &CustomResourceDefinition| crd.spec.names.short_names.clone().unwrap_or_default();
    let crds: std::collections::BTreeMap<String, CustomResourceDefinition> = all_crds()
        .into_iter()
        .map(|crd| (crd.spec.names.kind.clone(), crd))
        .collect();
    let expected_short_names = [
        ("NonAdminBackup", vec!["nab"]),
        ("NonAdminRestore", vec!["nar"]),
        ("NonAdminBackupStorageLocation", vec!["nabsl"]),
        ("NonAdminBackupStorageLocationRequest", vec!["nabslrequest"]),
        ("NonAdminDownloadRequest", vec!["nadr"]),
        ("NonAdminSchedule", vec!["nas"]),
        ("Backup", vec![]),
        ("Restore", vec!["rst"]),
        ("BackupStorageLocation", vec!["bsl"]),
        ("DeleteBackupRequest", vec![]),
        ("DownloadRequest", vec![]),
        ("Schedule", vec!["sched"]),
        ("ServerStatusRequest", vec!["ssr"]),
    ];
    // The admin's cluster-scoped kinds.
    let cluster_scoped = [
        ("DeletionAction", vec![]),
        ("BackupBucket", vec!["bbucket"]),
        ("BackupEntry", vec!["bentry"]),
    ];
    assert_eq!(
        crds.len(),
        expected_short_names.len() + cluster_scoped.len()
    );
    for (kind, names) in expected_short_names {
        assert_eq!(short_names(&crds[kind]), names, "{kind}");
        assert_eq!(crds[kind].spec.scope, "Namespaced", "{kind}");
    }
    for (kind, names) in cluster_scoped {
        assert_eq!(short_names(&crds[kind]), names, "{kind}");
        assert_eq!(crds[kind].spec.scope, "Cluster", "{kind}");
    }
    assert_eq!(
        columns(&crds["DeletionAction"]),
        [
            column("Failure-Policy", "string", ".spec.failurePolicy"),
            column(
                "Valid",
                "string",
                ".status.conditions[?(@.type=='Valid')].status"
            ),
            column("Age", "date", ".metadata.creationTimestamp"),
        ]
    );

    let age = column("Age", "date", ".metadata.creationTimestamp");
    let request_phase = column("Request-Phase", "string", ".status.phase");
    assert_eq!(
        columns(&crds["NonAdminBackup"]),
        [
            request_phase.clone(),
            column(
                "Velero-Phase",
                "string",
                ".status.veleroBackup.status.phase"
            ),
            age.clone()
        ]
    );
    assert_eq!(
        columns(&crds["NonAdminRestore"]),
        [
            request_phase.clone(),
            column(
                "Velero-Phase",
                "string",
                ".status.veleroRestore.status.phase"
            ),
            age.clone()
        ]
    );
    assert_eq!(
        columns(&crds["NonAdminBackupStorageLocation"]),
        [
            column(
                "Request-Approved",
                "string",
                ".status.conditions[?(@.type=='ClusterAdminApproved')].status"
            ),
            request_phase.clone(),
            column(
                "Velero-Phase",
                "string",
                ".status.veleroBackupStorageLocation.status.phase"
            ),
            age.clone()
        ]
    );
    assert_eq!(
        columns(&crds["NonAdminBackupStorageLocationRequest"]),
        [
            request_phase.clone(),
            column(
                "Request-Namespace",
                "string",
                ".status.nonAdminBackupStorageLocation.namespace"
            ),
            column(
                "Request-Name",
                "string",
                ".status.nonAdminBackupStorageLocation.name"
            ),
            age.clone()
        ]
    );
    assert_eq!(
        columns(&crds["NonAdminDownloadRequest"]),
        [request_phase.clone(), age.clone()]
    );
    assert_eq!(
        columns(&crds["NonAdminSchedule"]),
        [
            request_phase,
            column(
                "Velero-Phase",
                "string",
                ".status.veleroSchedule.status.phase"
            ),
            column("Next-Run", "string", ".status.nextRun"),
            column("Paused", "boolean", ".spec.paused"),
            age
        ]
    );
}
