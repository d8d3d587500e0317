//! The Velero simulator behaves as Velero 1.18 where a user or a tool can tell, on both
//! servers (the in-process emulator and a real kube-apiserver): DeleteBackupRequests
//! (`backup_deletion_controller.go`), schedules (`schedule_controller.go`,
//! `backup_builder.go`), garbage collection (`gc_controller.go`), the defaults
//! `prepareBackupRequest` writes back (`backup_controller.go`), the phases a backup and a
//! restore pass through (WaitingForPluginOperations while CSI data movement runs:
//! `backup_operations_controller.go`, `restore_operations_controller.go`), every artifact
//! `persistBackup` uploads, restore validation (`restore_controller.go`), and `aws` locations
//! without a region (velero-plugin-for-aws `object_store.go`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use kube::Client;
use kube::api::{Patch, PatchParams};
use nac::api::velero::{
    Backup, BackupStorageLocation, DeleteBackupRequest, DownloadRequest, Restore, Schedule,
};
use nac::sim::demo::OADP_NAMESPACE;
use nac::sim::velero::engine::VeleroSimulator;
use nac::sim::velero::options::{INJECT_ERROR_ANNOTATION, OUTCOME_ANNOTATION, SimulatorOptions};
use nac::sim::velero::signed_url::UrlSigner;
use serde_json::{Value, json};
use support::cluster::{TestCluster, eventually_seen, wait_for_object, wait_until_gone};

struct Sim {
    admin: Client,
    store: tempfile::TempDir,
    _cluster: TestCluster,
}

async fn start(cluster: TestCluster, configure: impl FnOnce(&mut SimulatorOptions)) -> Sim {
    let admin = cluster.admin();
    let store = tempfile::tempdir().unwrap();
    let mut options = SimulatorOptions::new(
        OADP_NAMESPACE,
        store.path().to_path_buf(),
        url::Url::parse("http://127.0.0.1:9/").unwrap(),
    );
    options.resync_interval = Duration::from_millis(100);
    options.bsl_validation_interval = Duration::from_millis(500);
    options.backup_sync_interval = Duration::from_secs(3600);
    configure(&mut options);
    let simulator = VeleroSimulator::new(admin.clone(), options, Arc::new(UrlSigner::random()));
    tokio::spawn(simulator.run());
    Sim {
        admin,
        store,
        _cluster: cluster,
    }
}

use support::{create_in_oadp as create, oadp_api as api};

async fn get<K>(c: &Client, name: &str) -> Option<Value>
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    api::<K>(c)
        .get_opt(name)
        .await
        .unwrap()
        .map(|o| serde_json::to_value(o).unwrap())
}

async fn wait_for<K>(c: &Client, name: &str, secs: u64, done: impl Fn(&Value) -> bool) -> Value
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    wait_for_object(&api::<K>(c), name, secs, done).await
}

async fn wait_gone<K>(c: &Client, name: &str, secs: u64)
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    wait_until_gone(&api::<K>(c), name, secs).await
}

/// Every version of every object of kind `K` the server announces from now on.
fn record<K>(c: &Client) -> Arc<Mutex<Vec<Value>>>
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug
        + Send
        + 'static,
{
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let stream = kube::runtime::watcher(api::<K>(c), Default::default());
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            if let Ok(
                kube::runtime::watcher::Event::Apply(o)
                | kube::runtime::watcher::Event::InitApply(o),
            ) = event
            {
                sink.lock().unwrap().push(serde_json::to_value(o).unwrap());
            }
        }
    });
    seen
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn backup(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "velero.io/v1", "kind": "Backup",
           "metadata": {"name": name, "namespace": OADP_NAMESPACE}, "spec": spec})
}

fn delete_request(name: &str, backup: &str) -> Value {
    json!({"apiVersion": "velero.io/v1", "kind": "DeleteBackupRequest",
           "metadata": {"name": name, "namespace": OADP_NAMESPACE}, "spec": {"backupName": backup}})
}

fn local_location(name: &str, extra: Value) -> Value {
    let mut spec = json!({"provider": nac::sim::velero::storage::LOCAL_PROVIDER,
                          "objectStorage": {"bucket": format!("bucket-{name}")}});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    json!({"apiVersion": "velero.io/v1", "kind": "BackupStorageLocation",
           "metadata": {"name": name, "namespace": OADP_NAMESPACE}, "spec": spec})
}

/// `backup_deletion_controller.go`: New and Queued backups are deleted (only running ones are
/// refused); a missing, read-only or unavailable location ends the request with Velero's
/// error; a request that deleted its backup is removed with every other request for it.
async fn delete_requests_follow_velero(cluster: TestCluster) {
    let e = start(cluster, |o| {
        o.item_delay = Duration::from_millis(50);
        o.concurrent_backups = 2;
    })
    .await;
    let c = &e.admin;
    let requests = record::<DeleteBackupRequest>(c);
    // A running backup of team-a; a second one on the same namespace queues behind it.
    let mut hung = backup(
        "dbr-running",
        json!({"includedNamespaces": ["team-a"], "storageLocation": "default"}),
    );
    hung["metadata"]["annotations"] = json!({OUTCOME_ANNOTATION: "hang"});
    create::<Backup>(c, hung).await;
    wait_for::<Backup>(c, "dbr-running", 30, |b| {
        s(b, "/status/phase") == "InProgress"
    })
    .await;
    create::<Backup>(
        c,
        backup(
            "dbr-queued",
            json!({"includedNamespaces": ["team-a"], "storageLocation": "default"}),
        ),
    )
    .await;
    wait_for::<Backup>(c, "dbr-queued", 30, |b| s(b, "/status/phase") == "Queued").await;

    create::<DeleteBackupRequest>(c, delete_request("del-queued", "dbr-queued")).await;
    wait_gone::<Backup>(c, "dbr-queued", 30).await;
    wait_gone::<DeleteBackupRequest>(c, "del-queued", 30).await;

    create::<DeleteBackupRequest>(c, delete_request("del-running", "dbr-running")).await;
    let refused = wait_for::<DeleteBackupRequest>(c, "del-running", 30, |r| {
        s(r, "/status/phase") == "Processed"
    })
    .await;
    assert_eq!(
        refused["status"]["errors"],
        json!(["backup is still in progress"])
    );

    create::<DeleteBackupRequest>(c, delete_request("del-nothing", "no-such-backup")).await;
    let r = wait_for::<DeleteBackupRequest>(c, "del-nothing", 30, |r| {
        s(r, "/status/phase") == "Processed"
    })
    .await;
    assert_eq!(r["status"]["errors"], json!(["backup not found"]));

    // Backups on a missing, a read-only and an unavailable location (each FailedValidation).
    create::<BackupStorageLocation>(c, local_location("ro", json!({"accessMode": "ReadOnly"})))
        .await;
    create::<BackupStorageLocation>(
        c,
        json!({"apiVersion": "velero.io/v1", "kind": "BackupStorageLocation",
               "metadata": {"name": "broken", "namespace": OADP_NAMESPACE},
               "spec": {"provider": "aws", "objectStorage": {"bucket": "nowhere"},
                        "config": {"region": "us-east-1", "s3Url": "http://127.0.0.1:9", "s3ForcePathStyle": "true"}}}),
    )
    .await;
    wait_for::<BackupStorageLocation>(c, "ro", 30, |l| s(l, "/status/phase") == "Available").await;
    wait_for::<BackupStorageLocation>(c, "broken", 30, |l| s(l, "/status/phase") == "Unavailable")
        .await;
    for (backup_name, location, error) in [
        ("dbr-gone", "gone", "backup storage location gone not found"),
        (
            "dbr-ro",
            "ro",
            "cannot delete backup because backup storage location ro is currently in read-only mode",
        ),
        (
            "dbr-broken",
            "broken",
            "cannot delete backup because backup storage location broken is currently in Unavailable state",
        ),
    ] {
        create::<Backup>(
            c,
            backup(
                backup_name,
                json!({"includedNamespaces": ["team-b"], "storageLocation": location}),
            ),
        )
        .await;
        wait_for::<Backup>(c, backup_name, 30, |b| {
            s(b, "/status/phase") == "FailedValidation"
        })
        .await;
        let request = format!("del-{backup_name}");
        create::<DeleteBackupRequest>(c, delete_request(&request, backup_name)).await;
        let r = wait_for::<DeleteBackupRequest>(c, &request, 30, |r| {
            s(r, "/status/phase") == "Processed"
        })
        .await;
        assert_eq!(r["status"]["errors"], json!([error]), "{r}");
        assert!(get::<Backup>(c, backup_name).await.is_some());
    }

    // Two requests for one completed backup: one is removed before processing, the other
    // once the backup is gone.
    create::<Backup>(
        c,
        backup(
            "dbr-done",
            json!({"includedNamespaces": ["team-b"], "storageLocation": "default"}),
        ),
    )
    .await;
    let done =
        wait_for::<Backup>(c, "dbr-done", 60, |b| s(b, "/status/phase") == "Completed").await;
    for name in ["del-done-1", "del-done-2"] {
        let mut request = delete_request(name, "dbr-done");
        request["metadata"]["labels"] = json!({"velero.io/backup-name": "dbr-done",
                                               "velero.io/backup-uid": s(&done, "/metadata/uid")});
        if name == "del-done-1" {
            // This one cannot be processed (a refused write): it is still there when the
            // second one is processed, which removes it first.
            request["metadata"]["annotations"] = json!({INJECT_ERROR_ANNOTATION: "refused"});
        }
        create::<DeleteBackupRequest>(c, request).await;
    }
    wait_gone::<Backup>(c, "dbr-done", 30).await;
    wait_gone::<DeleteBackupRequest>(c, "del-done-1", 30).await;
    wait_gone::<DeleteBackupRequest>(c, "del-done-2", 30).await;
    // The processed one was labelled with its backup's name and UID before it went.
    let seen = requests.lock().unwrap().clone();
    assert!(seen.iter().any(|r| {
        r["spec"]["backupName"] == "dbr-done"
            && s(r, "/metadata/labels/velero.io~1backup-name") == "dbr-done"
            && !s(r, "/metadata/labels/velero.io~1backup-uid").is_empty()
    }));
}

/// `schedule_controller.go`: a new schedule first runs at its next cron time (never at
/// creation); `skipImmediately` is written as false when unset and consumed when true
/// (`status.lastSkipped`); a scheduled backup takes the template's labels when the template
/// has them, else the schedule's, and the schedule's annotations (`FromSchedule`).
async fn schedules_follow_velero(cluster: TestCluster) {
    // A simulated day per real second.
    let e = start(cluster, |o| o.time_scale = 86_400.0).await;
    let c = &e.admin;
    let schedule = |name: &str, cron: &str, labels: Value, template: Value, extra: Value| {
        let mut spec = json!({"schedule": cron, "template": template});
        if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
            spec.extend(extra.clone());
        }
        json!({"apiVersion": "velero.io/v1", "kind": "Schedule",
               "metadata": {"name": name, "namespace": OADP_NAMESPACE, "labels": labels,
                            "annotations": {"example.com/owner": name}},
               "spec": spec})
    };
    // Yearly: the next run is a year (six real minutes) away, so none now.
    create::<Schedule>(
        c,
        schedule(
            "yearly",
            "0 0 1 1 *",
            json!({"from": "schedule"}),
            json!({"includedNamespaces": ["team-a"]}),
            json!({}),
        ),
    )
    .await;
    create::<Schedule>(
        c,
        schedule(
            "skipping",
            "0 0 1 1 *",
            json!({}),
            json!({"includedNamespaces": ["team-a"]}),
            json!({"skipImmediately": true}),
        ),
    )
    .await;
    let yearly = wait_for::<Schedule>(c, "yearly", 30, |v| {
        s(v, "/status/phase") == "Enabled"
            && v.pointer("/spec/skipImmediately") == Some(&json!(false))
    })
    .await;
    assert!(yearly.pointer("/status/lastBackup").is_none(), "{yearly}");
    let skipping = wait_for::<Schedule>(c, "skipping", 30, |v| {
        v.pointer("/status/lastSkipped").is_some()
    })
    .await;
    assert_eq!(skipping["spec"]["skipImmediately"], json!(false));
    // Daily runs within a real second or two: labels from the template when it has them.
    create::<Schedule>(
        c,
        schedule(
            "daily-template",
            "0 0 * * *",
            json!({"from": "schedule"}),
            json!({"includedNamespaces": ["team-a"], "metadata": {"labels": {"from": "template"}}}),
            json!({}),
        ),
    )
    .await;
    create::<Schedule>(
        c,
        schedule(
            "daily-own",
            "0 0 * * *",
            json!({"from": "schedule"}),
            json!({"includedNamespaces": ["team-b"]}),
            json!({}),
        ),
    )
    .await;
    for (name, from) in [("daily-template", "template"), ("daily-own", "schedule")] {
        let v =
            wait_for::<Schedule>(c, name, 30, |v| v.pointer("/status/lastBackup").is_some()).await;
        let backups = api::<Backup>(c)
            .list(&Default::default())
            .await
            .unwrap()
            .items;
        let b = backups
            .iter()
            .find(|b| {
                b.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("velero.io/schedule-name"))
                    == Some(&name.to_string())
            })
            .unwrap_or_else(|| panic!("no backup of {name}: {v}"));
        let labels = b.metadata.labels.clone().unwrap();
        assert_eq!(labels["from"], from, "{labels:?}");
        assert_eq!(
            b.metadata.annotations.clone().unwrap()["example.com/owner"],
            name
        );
        assert!(
            b.metadata
                .name
                .as_deref()
                .unwrap()
                .starts_with(&format!("{name}-"))
        );
    }
    let yearly = get::<Schedule>(c, "yearly").await.unwrap();
    assert!(yearly.pointer("/status/lastBackup").is_none(), "{yearly}");
}

/// `gc_controller.go` and `backup_controller.go`: a backup that fails validation still gets
/// Velero's defaults and an expiration and is collected once expired; a deletion that fails
/// is requested again on the next collection.
async fn expired_backups_are_collected_and_failed_deletions_retried(cluster: TestCluster) {
    // A simulated hour per real second; collection every simulated hour.
    let e = start(cluster, |o| o.time_scale = 3600.0).await;
    let c = &e.admin;
    let requests = record::<DeleteBackupRequest>(c);
    create::<Backup>(
        c,
        backup(
            "invalid",
            json!({"includedNamespaces": ["team-a"], "ttl": "2h",
        "labelSelector": {}, "orLabelSelectors": []}),
        ),
    )
    .await;
    let invalid = wait_for::<Backup>(c, "invalid", 30, |b| {
        s(b, "/status/phase") == "FailedValidation"
    })
    .await;
    assert!(invalid.pointer("/status/expiration").is_some(), "{invalid}");
    assert_eq!(s(&invalid, "/spec/ttl"), "2h");
    assert_eq!(s(&invalid, "/spec/storageLocation"), "default");
    assert_eq!(s(&invalid, "/spec/csiSnapshotTimeout"), "10m0s");
    wait_gone::<Backup>(c, "invalid", 30).await;

    // A running backup past its expiration: each collection asks again until it can go.
    let mut hung = backup(
        "expired-running",
        json!({"includedNamespaces": ["team-b"], "ttl": "1h", "storageLocation": "default"}),
    );
    hung["metadata"]["annotations"] = json!({OUTCOME_ANNOTATION: "hang"});
    create::<Backup>(c, hung).await;
    wait_for::<Backup>(c, "expired-running", 30, |b| {
        s(b, "/status/phase") == "InProgress"
    })
    .await;
    eventually_seen("two processed requests for expired-running", 60, || async {
        let names: std::collections::BTreeSet<String> = requests
            .lock()
            .unwrap()
            .iter()
            .filter(|r| {
                r["spec"]["backupName"] == "expired-running" && s(r, "/status/phase") == "Processed"
            })
            .map(|r| s(r, "/metadata/name").to_string())
            .collect();
        if names.len() >= 2 {
            Ok(())
        } else {
            Err(format!("no retry: {names:?}"))
        }
    })
    .await;
    assert!(requests.lock().unwrap().iter().any(|r| {
        r["spec"]["backupName"] == "expired-running"
            && r["status"]["errors"] == json!(["backup is still in progress"])
    }));
    // It ends (as if it had finished); the next collection deletes it.
    api::<Backup>(c)
        .patch(
            "expired-running",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Completed"}})),
        )
        .await
        .unwrap();
    wait_gone::<Backup>(c, "expired-running", 60).await;
}

/// `backup_controller.go` (`prepareBackupRequest`, `runBackup`, `persistBackup`),
/// `backup_finalizer_controller.go` and `restore_controller.go`: defaults written back, the
/// Finalizing phases, every uploaded file (download requests for them complete), restore
/// defaults and Velero's restore validation messages (restore hooks' init containers and label
/// selectors included: `hook.GetRestoreHooksFromSpec`, `hook.ValidateContainer`).
async fn backups_and_restores_as_velero_writes_them(cluster: TestCluster) {
    let e = start(cluster, |_| {}).await;
    let c = &e.admin;
    let backups = record::<Backup>(c);
    let restores = record::<Restore>(c);
    create::<Backup>(c, backup("full", json!({"includedNamespaces": ["team-a"]}))).await;
    let done = wait_for::<Backup>(c, "full", 60, |b| s(b, "/status/phase") == "Completed").await;
    for (field, value) in [
        ("ttl", json!("720h0m0s")),
        ("csiSnapshotTimeout", json!("10m0s")),
        ("itemOperationTimeout", json!("4h0m0s")),
        ("defaultVolumesToFsBackup", json!(false)),
        ("snapshotMoveData", json!(false)),
        ("storageLocation", json!("default")),
    ] {
        assert_eq!(done["spec"][field], value, "{field}: {}", done["spec"]);
    }
    assert_eq!(done["status"]["formatVersion"], "1.1.0");
    assert_eq!(
        s(&done, "/metadata/annotations/velero.io~1resource-timeout"),
        "10m0s"
    );
    assert!(
        !s(
            &done,
            "/metadata/annotations/velero.io~1source-cluster-k8s-gitversion"
        )
        .is_empty()
    );
    let mut partial = backup("partial", json!({"includedNamespaces": ["team-a"]}));
    partial["metadata"]["annotations"] = json!({OUTCOME_ANNOTATION: "partially-fail"});
    create::<Backup>(c, partial).await;
    wait_for::<Backup>(c, "partial", 60, |b| {
        s(b, "/status/phase") == "PartiallyFailed"
    })
    .await;
    let phases = |name: &str, seen: &Arc<Mutex<Vec<Value>>>| -> Vec<String> {
        seen.lock()
            .unwrap()
            .iter()
            .filter(|o| s(o, "/metadata/name") == name)
            .map(|o| s(o, "/status/phase").to_string())
            .collect()
    };
    assert!(phases("full", &backups).contains(&"Finalizing".to_string()));
    assert!(phases("partial", &backups).contains(&"FinalizingPartiallyFailed".to_string()));

    let dir = e.store.path().join("velero/velero/backups/full");
    for file in [
        "full-podvolumebackups.json.gz",
        "full-volumesnapshots.json.gz",
        "full-itemoperations.json.gz",
        "full-csi-volumesnapshotclasses.json.gz",
        "full-volumeinfo.json.gz",
    ] {
        assert!(dir.join(file).exists(), "{file}");
    }
    for (request, kind) in [
        ("dl-info", "BackupVolumeInfos"),
        ("dl-ops", "BackupItemOperations"),
        ("dl-snaps", "BackupVolumeSnapshots"),
    ] {
        create::<DownloadRequest>(
            c,
            json!({"apiVersion": "velero.io/v1", "kind": "DownloadRequest",
            "metadata": {"name": request, "namespace": OADP_NAMESPACE},
            "spec": {"target": {"kind": kind, "name": "full"}}}),
        )
        .await;
        wait_for::<DownloadRequest>(c, request, 30, |r| s(r, "/status/phase") == "Processed").await;
    }

    // Restores: Velero's spec completion, phases and files.
    create::<Restore>(
        c,
        json!({"apiVersion": "velero.io/v1", "kind": "Restore",
        "metadata": {"name": "again", "namespace": OADP_NAMESPACE},
        "spec": {"backupName": "full", "includedResources": ["configmaps"]}}),
    )
    .await;
    let again = wait_for::<Restore>(c, "again", 60, |r| s(r, "/status/phase") == "Completed").await;
    assert_eq!(s(&again, "/spec/itemOperationTimeout"), "4h0m0s");
    let excluded = again["spec"]["excludedResources"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for resource in [
        "nodes",
        "events",
        "events.events.k8s.io",
        "backups.velero.io",
        "restores.velero.io",
    ] {
        assert!(
            excluded.contains(&json!(resource)),
            "{resource}: {excluded:?}"
        );
    }
    assert!(phases("again", &restores).contains(&"Finalizing".to_string()));
    for (request, kind) in [
        ("dl-rops", "RestoreItemOperations"),
        ("dl-rinfo", "RestoreVolumeInfo"),
    ] {
        create::<DownloadRequest>(
            c,
            json!({"apiVersion": "velero.io/v1", "kind": "DownloadRequest",
            "metadata": {"name": request, "namespace": OADP_NAMESPACE},
            "spec": {"target": {"kind": kind, "name": "again"}}}),
        )
        .await;
        wait_for::<DownloadRequest>(c, request, 30, |r| s(r, "/status/phase") == "Processed").await;
    }
    let mut partial_restore = json!({"apiVersion": "velero.io/v1", "kind": "Restore",
        "metadata": {"name": "again-partly", "namespace": OADP_NAMESPACE,
                     "annotations": {OUTCOME_ANNOTATION: "partially-fail"}},
        "spec": {"backupName": "full", "includedResources": ["configmaps"]}});
    partial_restore["spec"]["existingResourcePolicy"] = json!("update");
    create::<Restore>(c, partial_restore).await;
    wait_for::<Restore>(c, "again-partly", 60, |r| {
        s(r, "/status/phase") == "PartiallyFailed"
    })
    .await;
    assert!(phases("again-partly", &restores).contains(&"FinalizingPartiallyFailed".to_string()));

    // Velero's validation messages, word for word.
    for (name, spec, errors) in [
        (
            "from-nothing",
            json!({"backupName": "no-such"}),
            json!([format!(
                "Error retrieving backup: can't find backup {OADP_NAMESPACE}/no-such: backups.velero.io \"no-such\" not found"
            )]),
        ),
        (
            "from-both",
            json!({"backupName": "full", "scheduleName": "nightly"}),
            json!([
                "Either a backup or schedule must be specified as a source for the restore, but not both"
            ]),
        ),
        (
            "from-partial",
            json!({"backupName": "partial", "includedResources": ["nodes"]}),
            json!([
                "nodes are non-restorable resources",
                "Invalid included/excluded resource lists: excludes list cannot contain an item in the includes list: nodes"
            ]),
        ),
        (
            "from-schedule",
            json!({"scheduleName": "nightly"}),
            json!([
                "No backups found for schedule",
                "No completed backups found for schedule"
            ]),
        ),
        (
            "bad-init-hook",
            json!({"backupName": "full", "hooks": {"resources": [{"name": "prepare",
                "postHooks": [{"init": {"initContainers": [{"name": "prepare", "image": "busybox"}]}}]}]}}),
            json!([
                "invalid InitContainer in restore hook, it doesn't have Command, Name or Image field"
            ]),
        ),
        (
            "bad-hook-selector",
            json!({"backupName": "full", "hooks": {"resources": [{"name": "prepare",
                "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Equals", "values": ["web"]}]}}]}}),
            json!(["\"Equals\" is not a valid label selector operator"]),
        ),
    ] {
        create::<Restore>(
            c,
            json!({"apiVersion": "velero.io/v1", "kind": "Restore",
            "metadata": {"name": name, "namespace": OADP_NAMESPACE}, "spec": spec}),
        )
        .await;
        let r =
            wait_for::<Restore>(c, name, 30, |r| s(r, "/status/phase") == "FailedValidation").await;
        assert_eq!(r["status"]["validationErrors"], errors, "{name}");
    }
}

/// Every status version of `name` recorded, in order, by phase.
/// The phases the watch recorded for `name`, once it has delivered `last` (a GET can see the
/// final phase before the watch event carrying it arrives).
async fn phases_through(seen: &Arc<Mutex<Vec<Value>>>, name: &str, last: &str) -> Vec<String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let phases = phases_of(seen, name);
        if phases.last().map(String::as_str) == Some(last) || std::time::Instant::now() > deadline {
            return phases;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn phases_of(seen: &Arc<Mutex<Vec<Value>>>, name: &str) -> Vec<String> {
    let mut phases: Vec<String> = Vec::new();
    for o in seen.lock().unwrap().iter() {
        let phase = s(o, "/status/phase");
        if s(o, "/metadata/name") == name && phases.last().map(String::as_str) != Some(phase) {
            phases.push(phase.to_owned());
        }
    }
    phases
}

fn read_gzipped_json(path: &std::path::Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&nac::manifest::tarball::gunzip(&bytes).unwrap()).unwrap()
}

/// `backup_controller.go` `runBackup`, `backup_operations_controller.go`,
/// `restore_controller.go` `runValidatedRestore`, `restore_operations_controller.go` and the
/// CSI PVC actions (`pkg/backup/actions/csi/pvc_action.go`,
/// `pkg/restore/actions/csi/pvc_action.go`): with `snapshotMoveData` a bound PVC's DataUpload
/// holds the backup in WaitingForPluginOperations (operations attempted, then completed) before
/// Finalizing and Completed; restoring it waits for its DataDownload the same way; without
/// data movement a backup goes straight to Finalizing.
async fn plugin_operations_hold_backups_and_restores(cluster: TestCluster) {
    let e = start(cluster, |o| {
        o.item_operation_duration = Duration::from_millis(1500);
        o.item_operation_poll_interval = Duration::from_millis(200);
    })
    .await;
    let c = &e.admin;
    let backups = record::<Backup>(c);
    let restores = record::<Restore>(c);
    let namespace: k8s_openapi::api::core::v1::Namespace = serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "data-mover"}}),
    )
    .unwrap();
    kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(c.clone())
        .create(&Default::default(), &namespace)
        .await
        .unwrap();
    let claim: k8s_openapi::api::core::v1::PersistentVolumeClaim =
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "data-mover"},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "csi-standard",
                     "volumeName": "pv-data", "resources": {"requests": {"storage": "1Gi"}}}}))
        .unwrap();
    kube::Api::<k8s_openapi::api::core::v1::PersistentVolumeClaim>::namespaced(
        c.clone(),
        "data-mover",
    )
    .create(&Default::default(), &claim)
    .await
    .unwrap();

    create::<Backup>(
        c,
        backup(
            "moved",
            json!({"includedNamespaces": ["data-mover"], "snapshotMoveData": true}),
        ),
    )
    .await;
    let done = wait_for::<Backup>(c, "moved", 60, |b| s(b, "/status/phase") == "Completed").await;
    assert_eq!(
        phases_through(&backups, "moved", "Completed")
            .await
            .into_iter()
            .skip_while(|p| p != "InProgress")
            .collect::<Vec<_>>(),
        [
            "InProgress",
            "WaitingForPluginOperations",
            "Finalizing",
            "Completed"
        ]
    );
    let waiting = backups
        .lock()
        .unwrap()
        .iter()
        .find(|b| {
            s(b, "/metadata/name") == "moved"
                && s(b, "/status/phase") == "WaitingForPluginOperations"
        })
        .cloned()
        .unwrap();
    assert_eq!(waiting["status"]["backupItemOperationsAttempted"], 1);
    assert!(waiting["status"]["backupItemOperationsCompleted"].is_null());
    assert_eq!(done["status"]["backupItemOperationsAttempted"], 1);
    assert_eq!(done["status"]["backupItemOperationsCompleted"], 1);
    assert!(!s(&done, "/status/completionTimestamp").is_empty());
    let dir = e.store.path().join("velero/velero/backups/moved");
    let operations = read_gzipped_json(&dir.join("moved-itemoperations.json.gz"));
    assert_eq!(operations.as_array().map(Vec::len), Some(1), "{operations}");
    assert_eq!(
        s(&operations[0], "/spec/backupItemAction"),
        "velero.io/csi-pvc-backupper"
    );
    assert_eq!(s(&operations[0], "/spec/resourceIdentifier/Name"), "data");
    assert_eq!(s(&operations[0], "/status/phase"), "Completed");
    assert!(s(&operations[0], "/spec/operationID").starts_with("du-"));
    let stored: Value =
        serde_json::from_slice(&std::fs::read(dir.join("velero-backup.json")).unwrap()).unwrap();
    assert_eq!(s(&stored, "/status/phase"), "Completed");

    // The restore of that PVC waits for its DataDownload.
    create::<Restore>(
        c,
        json!({"apiVersion": "velero.io/v1", "kind": "Restore",
        "metadata": {"name": "moved-back", "namespace": OADP_NAMESPACE},
        "spec": {"backupName": "moved", "includedResources": ["persistentvolumeclaims"],
                 "namespaceMapping": {"data-mover": "data-mover-copy"}}}),
    )
    .await;
    let restored = wait_for::<Restore>(c, "moved-back", 60, |r| {
        s(r, "/status/phase") == "Completed"
    })
    .await;
    assert_eq!(
        phases_through(&restores, "moved-back", "Completed")
            .await
            .into_iter()
            .skip_while(|p| p != "InProgress")
            .collect::<Vec<_>>(),
        [
            "InProgress",
            "WaitingForPluginOperations",
            "Finalizing",
            "Completed"
        ]
    );
    assert_eq!(restored["status"]["restoreItemOperationsAttempted"], 1);
    assert_eq!(restored["status"]["restoreItemOperationsCompleted"], 1);
    let operations = read_gzipped_json(
        &e.store
            .path()
            .join("velero/velero/restores/moved-back/restore-moved-back-itemoperations.json.gz"),
    );
    assert_eq!(
        s(&operations[0], "/spec/restoreItemAction"),
        "velero.io/csi-pvc-restorer"
    );
    assert_eq!(
        s(&operations[0], "/spec/resourceIdentifier/Namespace"),
        "data-mover-copy"
    );

    // Without data movement nothing is asynchronous: straight to Finalizing.
    create::<Backup>(
        c,
        backup("kept", json!({"includedNamespaces": ["data-mover"]})),
    )
    .await;
    let kept = wait_for::<Backup>(c, "kept", 60, |b| s(b, "/status/phase") == "Completed").await;
    assert!(
        !phases_through(&backups, "kept", "Completed")
            .await
            .contains(&"WaitingForPluginOperations".to_string())
    );
    assert!(kept["status"]["backupItemOperationsAttempted"].is_null());
}

/// velero-plugin-for-aws `object_store.go` `Init` (and velero#9963): a location with `s3Url`
/// and no region anywhere is unavailable with the AWS SDK's words as Velero reports them; one
/// naming neither has its bucket's region looked up (`GetBucketRegion`), which a server without
/// an AWS region of its own cannot even ask.
async fn aws_locations_without_a_region(cluster: TestCluster) {
    let e = start(cluster, |_| {}).await;
    let c = &e.admin;
    let aws = |name: &str, config: Value| {
        json!({"apiVersion": "velero.io/v1", "kind": "BackupStorageLocation",
               "metadata": {"name": name, "namespace": OADP_NAMESPACE},
               "spec": {"provider": "aws", "objectStorage": {"bucket": "velero"},
                        "credential": {"name": "regionless-credentials", "key": "cloud"},
                        "config": config}})
    };
    let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "regionless-credentials", "namespace": OADP_NAMESPACE},
        "stringData": {"cloud": "[default]\naws_access_key_id=AK\naws_secret_access_key=SK\n"}}))
    .unwrap();
    api::<k8s_openapi::api::core::v1::Secret>(c)
        .create(&Default::default(), &secret)
        .await
        .unwrap();
    create::<BackupStorageLocation>(
        c,
        aws(
            "minio-no-region",
            json!({"s3Url": "http://127.0.0.1:9", "s3ForcePathStyle": "true"}),
        ),
    )
    .await;
    create::<BackupStorageLocation>(c, aws("aws-no-region", json!({}))).await;
    create::<BackupStorageLocation>(
        c,
        aws(
            "bad-url",
            json!({"region": "us-east-1", "s3Url": "ftp://minio"}),
        ),
    )
    .await;
    for (name, message) in [
        (
            "minio-no-region",
            "BackupStorageLocation \"minio-no-region\" is unavailable: rpc error: code = Unknown desc = operation error S3: ListObjectsV2, failed to resolve service endpoint, endpoint rule error, A region must be set when sending requests to S3.",
        ),
        (
            "aws-no-region",
            "BackupStorageLocation \"aws-no-region\" is unavailable: rpc error: code = Unknown desc = operation error S3: HeadBucket, failed to resolve service endpoint, endpoint rule error, A region must be set when sending requests to S3.",
        ),
        (
            "bad-url",
            "BackupStorageLocation \"bad-url\" is unavailable: rpc error: code = Unknown desc = Invalid s3 url ftp://minio, URL must be valid according to https://golang.org/pkg/net/url/#Parse and start with http:// or https://",
        ),
    ] {
        let location = wait_for::<BackupStorageLocation>(c, name, 30, |l| {
            s(l, "/status/phase") == "Unavailable"
        })
        .await;
        assert_eq!(s(&location, "/status/message"), message, "{name}");
    }
}

on_both_servers!(
    delete_requests_follow_velero,
    schedules_follow_velero,
    expired_backups_are_collected_and_failed_deletions_retried,
    backups_and_restores_as_velero_writes_them,
    plugin_operations_hold_backups_and_restores,
    aws_locations_without_a_region,
);
