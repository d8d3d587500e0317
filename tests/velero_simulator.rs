//! End-to-end behaviour of the Velero simulator on the in-process emulator: backups that really
//! copy objects and restores that bring them back, the backup queue, DeleteBackupRequests,
//! signed download URLs, storage-location validation and sync, schedules and TTL expiry.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;
use support::cluster::{
    TestCluster, eventually_seen, eventually_true, wait_for_object, wait_until_gone,
};
use support::controller_env::ControllerEnv;
use support::http_get;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, DeleteParams};
use nac::api::velero::{
    Backup, BackupStorageLocation, DeleteBackupRequest, DownloadRequest, Restore, Schedule,
};
use nac::manifest::tarball::gunzip;
use nac::sim::demo::OADP_NAMESPACE;
use nac::sim::velero::engine::VeleroSimulator;
use nac::sim::velero::options::{INJECT_ERROR_ANNOTATION, OUTCOME_ANNOTATION, SimulatorOptions};
use serde_json::{Value, json};

/// The shared controller environment (no controllers) plus a handle on the running simulator
/// (its failure counters).
struct Env {
    base: ControllerEnv,
    simulator: VeleroSimulator,
}

impl std::ops::Deref for Env {
    type Target = ControllerEnv;
    fn deref(&self) -> &ControllerEnv {
        &self.base
    }
}

/// The emulator and Velero (its signed downloads served, its storage locations validated and
/// synced every 500 ms, then adjusted by `configure`).
async fn env_with(configure: impl FnOnce(&mut SimulatorOptions)) -> Env {
    let base = ControllerEnv::new(TestCluster::emulator().await).await;
    let simulator = base
        .start_velero_serving_downloads(|options| {
            options.bsl_validation_interval = Duration::from_millis(500);
            options.backup_sync_interval = Duration::from_millis(500);
            configure(options);
        })
        .await;
    Env { base, simulator }
}

async fn env() -> Env {
    env_with(|_| {}).await
}

use support::{create_in_oadp as create, oadp_api as api};

fn backup(name: &str, namespaces: &[&str]) -> Value {
    json!({"apiVersion": "velero.io/v1", "kind": "Backup",
           "metadata": {"name": name, "namespace": OADP_NAMESPACE},
           "spec": {"includedNamespaces": namespaces}})
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

/// Every DeleteBackupRequest the server announces from now on (processed ones are deleted at
/// once, so polling could miss them).
fn record_delete_requests(c: &Client) -> Arc<std::sync::Mutex<Vec<DeleteBackupRequest>>> {
    support::record_applied(api::<DeleteBackupRequest>(c))
}

fn phase(v: &Value) -> &str {
    v.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("")
}

#[tokio::test]
async fn backup_then_restore_brings_deleted_objects_back() {
    let e = env().await;
    create::<Backup>(&e.admin, backup("b1", &["team-a"])).await;
    let done = wait_for::<Backup>(&e.admin, "b1", 20, |b| phase(b) == "Completed").await;
    let total = done
        .pointer("/status/progress/totalItems")
        .and_then(Value::as_i64)
        .unwrap();
    assert!(
        total >= 6,
        "configmap, secret, pvc, deployment, service, service accounts, namespace: {done}"
    );
    assert_eq!(
        done.pointer("/status/progress/itemsBackedUp")
            .and_then(Value::as_i64),
        Some(total)
    );
    assert_eq!(
        done.pointer("/metadata/labels/velero.io~1storage-location")
            .and_then(Value::as_str),
        Some("default")
    );
    assert!(
        done.pointer("/status/expiration").is_some()
            && done.pointer("/status/startTimestamp").is_some()
    );
    let dir = e.object_store.path().join("velero/velero/backups/b1");
    for file in [
        "velero-backup.json",
        "b1.tar.gz",
        "b1-resource-list.json.gz",
        "b1-logs.gz",
        "b1-results.gz",
    ] {
        assert!(dir.join(file).exists(), "{file} written");
    }
    // Nothing of team-b was taken.
    let list: Value = serde_json::from_slice(
        &gunzip(&std::fs::read(dir.join("b1-resource-list.json.gz")).unwrap()).unwrap(),
    )
    .unwrap();
    assert!(
        list["v1/ConfigMap"]
            .as_array()
            .unwrap()
            .contains(&json!("team-a/web-config"))
    );
    assert!(!list.to_string().contains("team-b"), "{list}");

    let cms: Api<ConfigMap> = Api::namespaced(e.admin.clone(), "team-a");
    let deployments: Api<Deployment> = Api::namespaced(e.admin.clone(), "team-a");
    cms.delete("web-config", &DeleteParams::default())
        .await
        .unwrap();
    deployments
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    create::<Restore>(
        &e.admin,
        json!({"apiVersion": "velero.io/v1", "kind": "Restore", "metadata": {"name": "r1", "namespace": OADP_NAMESPACE},
               "spec": {"backupName": "b1"}}),
    )
    .await;
    let restored = wait_for::<Restore>(&e.admin, "r1", 20, |r| phase(r) == "Completed").await;
    assert!(
        restored
            .pointer("/status/progress/itemsRestored")
            .and_then(Value::as_i64)
            .unwrap()
            > 0
    );
    let cm = cms.get("web-config").await.unwrap();
    let labels = cm.metadata.labels.unwrap();
    assert_eq!(labels["velero.io/backup-name"], "b1");
    assert_eq!(labels["velero.io/restore-name"], "r1");
    assert_eq!(cm.data.unwrap()["greeting"], "hello from team-a");
    assert!(deployments.get("web").await.is_ok());
    assert!(
        e.object_store
            .path()
            .join("velero/velero/restores/r1/restore-r1-logs.gz")
            .exists()
    );

    // namespaceMapping restores into a new namespace.
    create::<Restore>(
        &e.admin,
        json!({"apiVersion": "velero.io/v1", "kind": "Restore", "metadata": {"name": "r2", "namespace": OADP_NAMESPACE},
               "spec": {"backupName": "b1", "namespaceMapping": {"team-a": "team-a-copy"}, "includedResources": ["configmaps"]}}),
    )
    .await;
    wait_for::<Restore>(&e.admin, "r2", 20, |r| phase(r) == "Completed").await;
    let copy: Api<ConfigMap> = Api::namespaced(e.admin.clone(), "team-a-copy");
    assert_eq!(
        copy.get("web-config")
            .await
            .unwrap()
            .metadata
            .namespace
            .as_deref(),
        Some("team-a-copy")
    );
    assert!(
        Api::<Deployment>::namespaced(e.admin.clone(), "team-a-copy")
            .get_opt("web")
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn queue_positions_follow_creation_order_and_namespace_overlap() {
    let e = env_with(|o| {
        o.concurrent_backups = 2;
        o.item_delay = Duration::from_millis(150);
    })
    .await;
    create::<Backup>(&e.admin, backup("q1", &["team-a"])).await;
    wait_for::<Backup>(&e.admin, "q1", 10, |b| phase(b) == "InProgress").await;
    create::<Backup>(&e.admin, backup("q2", &["team-a"])).await;
    create::<Backup>(&e.admin, backup("q3", &["team-b"])).await;
    // q2 overlaps the running q1 and waits first in the queue; q3 does not and starts.
    let q2 = wait_for::<Backup>(&e.admin, "q2", 10, |b| phase(b) == "Queued").await;
    assert_eq!(
        q2.pointer("/status/queuePosition").and_then(Value::as_i64),
        Some(1)
    );
    wait_for::<Backup>(&e.admin, "q3", 10, |b| {
        matches!(phase(b), "InProgress" | "Completed")
    })
    .await;
    // When q1 finishes, q2 runs.
    wait_for::<Backup>(&e.admin, "q1", 20, |b| phase(b) == "Completed").await;
    wait_for::<Backup>(&e.admin, "q2", 20, |b| phase(b) == "Completed").await;

    // With one slot, later backups queue behind in creation order and move up.
    let e = env_with(|o| o.item_delay = Duration::from_millis(100)).await;
    for (name, ns) in [("s1", "team-a"), ("s2", "team-b"), ("s3", "team-b")] {
        create::<Backup>(&e.admin, backup(name, &[ns])).await;
    }
    let s3 = wait_for::<Backup>(&e.admin, "s3", 10, |b| {
        b.pointer("/status/queuePosition").and_then(Value::as_i64) == Some(2)
    })
    .await;
    assert_eq!(phase(&s3), "Queued");
    wait_for::<Backup>(&e.admin, "s3", 20, |b| {
        b.pointer("/status/queuePosition").and_then(Value::as_i64) == Some(1)
    })
    .await;
    wait_for::<Backup>(&e.admin, "s3", 30, |b| phase(b) == "Completed").await;
}

#[tokio::test]
async fn delete_backup_request_removes_data_restores_and_the_backup() {
    let e = env().await;
    create::<Backup>(&e.admin, backup("d1", &["team-a"])).await;
    wait_for::<Backup>(&e.admin, "d1", 20, |b| phase(b) == "Completed").await;
    create::<Restore>(
        &e.admin,
        json!({"apiVersion": "velero.io/v1", "kind": "Restore", "metadata": {"name": "d1-restore", "namespace": OADP_NAMESPACE},
               "spec": {"backupName": "d1"}}),
    )
    .await;
    wait_for::<Restore>(&e.admin, "d1-restore", 20, |r| phase(r) == "Completed").await;
    let dir = e.object_store.path().join("velero/velero/backups/d1");
    assert!(dir.join("d1.tar.gz").exists());
    create::<DeleteBackupRequest>(
        &e.admin,
        json!({"apiVersion": "velero.io/v1", "kind": "DeleteBackupRequest",
               "metadata": {"name": "del-d1", "namespace": OADP_NAMESPACE}, "spec": {"backupName": "d1"}}),
    )
    .await;
    // Processed without errors, the request is removed with the backup (as Velero does).
    wait_gone::<Backup>(&e.admin, "d1", 20).await;
    wait_gone::<DeleteBackupRequest>(&e.admin, "del-d1", 10).await;
    wait_gone::<Restore>(&e.admin, "d1-restore", 10).await;
    assert!(!dir.join("d1.tar.gz").exists());

    // A running backup cannot be deleted.
    let mut hung = backup("d2", &["team-a"]);
    hung["metadata"]["annotations"] = json!({OUTCOME_ANNOTATION: "hang"});
    create::<Backup>(&e.admin, hung).await;
    wait_for::<Backup>(&e.admin, "d2", 10, |b| phase(b) == "InProgress").await;
    create::<DeleteBackupRequest>(
        &e.admin,
        json!({"apiVersion": "velero.io/v1", "kind": "DeleteBackupRequest",
               "metadata": {"name": "del-d2", "namespace": OADP_NAMESPACE}, "spec": {"backupName": "d2"}}),
    )
    .await;
    let refused =
        wait_for::<DeleteBackupRequest>(&e.admin, "del-d2", 10, |r| phase(r) == "Processed").await;
    assert_eq!(
        refused.pointer("/status/errors/0").and_then(Value::as_str),
        Some("backup is still in progress")
    );
    assert!(
        api::<Backup>(&e.admin)
            .get_opt("d2")
            .await
            .unwrap()
            .is_some()
    );
}

/// A Completed backup `dl` of team-a and a Processed DownloadRequest for its log, with ten
/// simulated minutes passing in about two real seconds; returns the signed URL.
async fn backup_log_download_url(e: &Env) -> String {
    create::<Backup>(&e.admin, backup("dl", &["team-a"])).await;
    wait_for::<Backup>(&e.admin, "dl", 20, |b| phase(b) == "Completed").await;
    create::<DownloadRequest>(
        &e.admin,
        json!({"apiVersion": "velero.io/v1", "kind": "DownloadRequest", "metadata": {"name": "dl-log", "namespace": OADP_NAMESPACE},
               "spec": {"target": {"kind": "BackupLog", "name": "dl"}}}),
    )
    .await;
    let processed =
        wait_for::<DownloadRequest>(&e.admin, "dl-log", 10, |r| phase(r) == "Processed").await;
    processed
        .pointer("/status/downloadURL")
        .and_then(Value::as_str)
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn a_download_request_serves_the_backup_log_at_a_signed_url() {
    // Ten simulated minutes pass in about two real seconds.
    let e = env_with(|o| o.time_scale = 300.0).await;
    let url = backup_log_download_url(&e).await;
    let (status, body) = http_get(&url).await;
    assert_eq!(status, 200);
    let log = String::from_utf8(gunzip(&body).unwrap()).unwrap();
    assert!(log.contains("Backed up item"), "{log}");
    assert!(log.contains("backup=openshift-adp/dl"));
}

#[tokio::test]
async fn a_signed_url_refuses_another_object_and_a_bad_signature() {
    let e = env_with(|o| o.time_scale = 300.0).await;
    let url = backup_log_download_url(&e).await;
    // Tampered: another object under the same signature.
    let tampered = url.replace("dl-logs.gz", "dl-results.gz");
    assert_eq!(http_get(&tampered).await.0, 403);
    let sig_pos = url.find("signature=").unwrap() + "signature=".len();
    let mut bad_sig = url.clone();
    let flipped = if &url[sig_pos..sig_pos + 1] == "0" {
        "1"
    } else {
        "0"
    };
    bad_sig.replace_range(sig_pos..sig_pos + 1, flipped);
    assert_eq!(http_get(&bad_sig).await.0, 403);
}

#[tokio::test]
async fn a_signed_url_expires_and_its_request_is_deleted() {
    // Ten simulated minutes pass in about two real seconds.
    let e = env_with(|o| o.time_scale = 300.0).await;
    let url = backup_log_download_url(&e).await;
    assert_eq!(http_get(&url).await.0, 200, "served before it expires");
    // Expired after ten simulated minutes; the request object is deleted too.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(http_get(&url).await.0, 403);
    wait_gone::<DownloadRequest>(&e.admin, "dl-log", 10).await;
}

#[tokio::test]
async fn unavailable_or_missing_location_fails_validation() {
    let e = env().await;
    create::<BackupStorageLocation>(
        &e.admin,
        json!({"apiVersion": "velero.io/v1", "kind": "BackupStorageLocation",
               "metadata": {"name": "broken", "namespace": OADP_NAMESPACE},
               "spec": {"provider": "aws", "objectStorage": {"bucket": "nowhere"},
                        "config": {"region": "us-east-1", "s3Url": "http://127.0.0.1:9", "s3ForcePathStyle": "true"}}}),
    )
    .await;
    let bsl =
        wait_for::<BackupStorageLocation>(&e.admin, "broken", 20, |l| phase(l) == "Unavailable")
            .await;
    assert!(
        bsl.pointer("/status/message")
            .and_then(Value::as_str)
            .unwrap()
            .contains("broken")
    );
    let mut b = backup("to-broken", &["team-a"]);
    b["spec"]["storageLocation"] = json!("broken");
    create::<Backup>(&e.admin, b).await;
    let failed = wait_for::<Backup>(&e.admin, "to-broken", 10, |b| {
        phase(b) == "FailedValidation"
    })
    .await;
    assert_eq!(
        failed.pointer("/status/validationErrors").unwrap(),
        &json!([
            "backup can't be created because BackupStorageLocation broken is in Unavailable status."
        ])
    );
    let mut m = backup("to-missing", &["team-a"]);
    m["spec"]["storageLocation"] = json!("missing");
    create::<Backup>(&e.admin, m).await;
    let failed = wait_for::<Backup>(&e.admin, "to-missing", 10, |b| {
        phase(b) == "FailedValidation"
    })
    .await;
    assert!(
        failed
            .pointer("/status/validationErrors")
            .unwrap()
            .to_string()
            .contains("not found")
    );
}

#[tokio::test]
async fn sync_recreates_backups_missing_from_the_cluster() {
    let e = env().await;
    create::<Backup>(&e.admin, backup("kept", &["team-a"])).await;
    wait_for::<Backup>(&e.admin, "kept", 20, |b| phase(b) == "Completed").await;
    api::<Backup>(&e.admin)
        .delete("kept", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone::<Backup>(&e.admin, "kept", 5).await;
    let back = wait_for::<Backup>(&e.admin, "kept", 20, |b| phase(b) == "Completed").await;
    assert_eq!(
        back.pointer("/metadata/labels/velero.io~1storage-location")
            .and_then(Value::as_str),
        Some("default")
    );
    assert!(back.pointer("/status/completionTimestamp").is_some());
}

#[tokio::test]
async fn schedules_create_named_backups_and_ttl_expiry_deletes_them() {
    // An hour of simulated time per real second.
    let e = env_with(|o| o.time_scale = 3600.0).await;
    let seen = record_delete_requests(&e.admin);
    create::<Schedule>(
        &e.admin,
        json!({"apiVersion": "velero.io/v1", "kind": "Schedule", "metadata": {"name": "nightly", "namespace": OADP_NAMESPACE},
               "spec": {"schedule": "0 * * * *", "template": {"includedNamespaces": ["team-b"], "ttl": "2h0m0s"}}}),
    )
    .await;
    let schedule = wait_for::<Schedule>(&e.admin, "nightly", 10, |s| {
        s.pointer("/status/lastBackup").is_some()
    })
    .await;
    assert_eq!(phase(&schedule), "Enabled");
    let backups = api::<Backup>(&e.admin);
    let names: Vec<String> = eventually_seen("two runs of nightly", 20, || async {
        let names: Vec<String> = backups
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|b| {
                b.metadata.labels.as_ref().is_some_and(|l| {
                    l.get("velero.io/schedule-name").map(String::as_str) == Some("nightly")
                })
            })
            .map(|b| b.metadata.name.unwrap())
            .collect();
        if names.len() >= 2 {
            Ok(names)
        } else {
            Err(format!(
                "hourly runs happen every simulated hour: {names:?}"
            ))
        }
    })
    .await;
    assert!(
        names.len() >= 2,
        "hourly runs happen every simulated hour: {names:?}"
    );
    for n in &names {
        assert!(
            n.starts_with("nightly-") && n.len() == "nightly-".len() + 14,
            "{n}"
        );
    }
    // Each expires two simulated hours after it started and is deleted through a request,
    // which is removed once processed.
    let first = names.iter().min().unwrap().clone();
    wait_gone::<Backup>(&e.admin, &first, 20).await;
    assert!(
        seen.lock()
            .unwrap()
            .iter()
            .any(|r| r.spec.backup_name == first)
    );

    // Invalid cron is reported on the schedule.
    create::<Schedule>(
        &e.admin,
        json!({"apiVersion": "velero.io/v1", "kind": "Schedule", "metadata": {"name": "bad", "namespace": OADP_NAMESPACE},
               "spec": {"schedule": "not a cron", "template": {}}}),
    )
    .await;
    let bad = wait_for::<Schedule>(&e.admin, "bad", 10, |s| phase(s) == "FailedValidation").await;
    assert!(bad.pointer("/status/validationErrors/0").is_some());
}

#[tokio::test]
async fn failure_injection_by_annotation() {
    let e = env().await;
    let mut failing = backup("f1", &["team-a"]);
    failing["metadata"]["annotations"] = json!({OUTCOME_ANNOTATION: "fail"});
    create::<Backup>(&e.admin, failing).await;
    let failed = wait_for::<Backup>(&e.admin, "f1", 20, |b| phase(b) == "Failed").await;
    assert!(failed.pointer("/status/failureReason").is_some());
    let mut partial = backup("f2", &["team-a"]);
    partial["metadata"]["annotations"] = json!({OUTCOME_ANNOTATION: "partially-fail"});
    create::<Backup>(&e.admin, partial).await;
    let p = wait_for::<Backup>(&e.admin, "f2", 20, |b| phase(b) == "PartiallyFailed").await;
    assert_eq!(p.pointer("/status/errors").and_then(Value::as_i64), Some(1));
}

/// A NonAdminSchedule's Velero Schedule is named by a NACUUID (63 bytes at most), so its
/// backups are named `<NACUUID>-<yyyymmddhhmmss>`: 78 bytes. Their TTL expiry must still be
/// requested and processed (the `velero.io/backup-name` label cut as Velero cuts it).
#[tokio::test]
async fn backups_of_a_schedule_with_a_63_byte_name_expire_and_are_deleted() {
    let e = env_with(|o| o.time_scale = 3600.0).await;
    let seen = record_delete_requests(&e.admin);
    let schedule = format!("team-a-nightly-{}", "0".repeat(48));
    assert_eq!(schedule.len(), 63);
    create::<Schedule>(
        &e.admin,
        json!({"apiVersion": "velero.io/v1", "kind": "Schedule", "metadata": {"name": schedule, "namespace": OADP_NAMESPACE},
               "spec": {"schedule": "0 * * * *", "template": {"includedNamespaces": ["team-b"], "ttl": "1h0m0s"}}}),
    )
    .await;
    let backups = api::<Backup>(&e.admin);
    let first = eventually_seen("a scheduled backup", 20, || async {
        let names: Vec<String> = backups
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter_map(|b| b.metadata.name)
            .filter(|n| n.starts_with(&schedule))
            .collect();
        names.iter().min().cloned().ok_or("no scheduled backup")
    })
    .await;
    assert_eq!(first.len(), 78);
    let label = wait_for::<Backup>(&e.admin, &first, 20, |b| phase(b) == "Completed").await;
    assert_eq!(
        label.pointer("/metadata/labels/velero.io~1schedule-name"),
        Some(&json!(schedule))
    );
    wait_gone::<Backup>(&e.admin, &first, 30).await;
    let requests = seen.lock().unwrap().clone();
    let request = requests
        .iter()
        .find(|r| r.spec.backup_name == first)
        .expect("the expiry's DeleteBackupRequest");
    let value = &request.metadata.labels.as_ref().unwrap()["velero.io/backup-name"];
    assert_eq!(*value, nac::api::velero::labels::valid_label_value(&first));
    assert!(value.len() <= 63);
    assert_eq!(
        e.simulator.errors_total(),
        0,
        "{:?}",
        e.simulator.errors_by_kind()
    );
}

/// One object whose every operation fails (a DeleteBackupRequest the simulator cannot
/// process) is logged, counted and backed off, and every other tenant's work goes on.
#[tokio::test]
async fn one_failing_object_never_stops_the_others() {
    let e = env().await;
    create::<Backup>(&e.admin, backup("keep", &["team-b"])).await;
    wait_for::<Backup>(&e.admin, "keep", 20, |b| phase(b) == "Completed").await;
    create::<DeleteBackupRequest>(
        &e.admin,
        json!({"apiVersion": "velero.io/v1", "kind": "DeleteBackupRequest",
               "metadata": {"name": "stuck", "namespace": OADP_NAMESPACE,
                            "annotations": {INJECT_ERROR_ANNOTATION: "422 refused"}},
               "spec": {"backupName": "keep"}}),
    )
    .await;
    eventually_true("the failure to be counted", 10, || async {
        e.simulator.errors_total() != 0
    })
    .await;
    // Both tenants' backups and a restore still run while the request keeps failing.
    create::<Backup>(&e.admin, backup("a1", &["team-a"])).await;
    create::<Backup>(&e.admin, backup("b1", &["team-b"])).await;
    wait_for::<Backup>(&e.admin, "a1", 20, |b| phase(b) == "Completed").await;
    wait_for::<Backup>(&e.admin, "b1", 20, |b| phase(b) == "Completed").await;
    create::<Restore>(
        &e.admin,
        json!({"apiVersion": "velero.io/v1", "kind": "Restore", "metadata": {"name": "a1-restore", "namespace": OADP_NAMESPACE},
               "spec": {"backupName": "a1"}}),
    )
    .await;
    wait_for::<Restore>(&e.admin, "a1-restore", 20, |r| phase(r) == "Completed").await;

    let stuck = api::<DeleteBackupRequest>(&e.admin)
        .get("stuck")
        .await
        .unwrap();
    assert!(stuck.status.is_none(), "never processed: {stuck:?}");
    assert!(
        api::<Backup>(&e.admin)
            .get_opt("keep")
            .await
            .unwrap()
            .is_some()
    );
    let by_kind = e.simulator.errors_by_kind();
    assert!(by_kind["DeleteBackupRequest"] >= 1, "{by_kind:?}");
    assert_eq!(
        by_kind.len(),
        1,
        "only the stuck request failed: {by_kind:?}"
    );
    assert_eq!(e.simulator.failing_objects(), 1);

    // Backed off: passes run many times a second here, attempts on it do not.
    let before = e.simulator.errors_total();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let during = e.simulator.errors_total() - before;
    assert!(during <= 4, "{during} attempts in 3s: not backed off");

    // Once it can be processed, it is (and its back-off is forgotten).
    let requests = api::<DeleteBackupRequest>(&e.admin);
    requests
        .patch(
            "stuck",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(
                json!({"metadata": {"annotations": {INJECT_ERROR_ANNOTATION: null}}}),
            ),
        )
        .await
        .unwrap();
    wait_gone::<Backup>(&e.admin, "keep", 30).await;
    wait_gone::<DeleteBackupRequest>(&e.admin, "stuck", 10).await;
    eventually_true("the back-off to be reset", 5, || async {
        e.simulator.failing_objects() == 0
    })
    .await;
}
