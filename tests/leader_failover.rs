//! Leader failover under load (issue 22), on the real kube-apiserver and on the emulator: two
//! `nac controller` processes (as two pods), Velero played by the simulator. In the middle of a
//! burst of NonAdminBackup creations, NonAdminBackup deletions and NonAdminRestores from three
//! tenants, the leader is killed with SIGKILL: no handler runs and its Lease is not released,
//! so the standby may only take over once the Lease has expired. The standby then finishes
//! everything:
//! - every NAB of the burst reaches Created with its Velero Backup Completed, and its queue
//!   position converges to 0;
//! - every NAB deleted during the burst is gone (its finalizer was removed) and so is its
//!   Velero Backup;
//! - every NAR reaches its Velero Restore Completed, every NonAdminBackupStorageLocation
//!   (made just before the kill) is Created with its BSL Available, every NonAdminSchedule is
//!   Created with its Velero Schedule;
//! - exactly one Velero object per tenant object — Backup per NAB, Restore per NAR,
//!   BackupStorageLocation per NABSL, Schedule per NAS (counted by the NACUUID labels): the
//!   crash made nothing twice.
//!
//! Printed: kill → the standby holds the Lease, and kill → the new leader's first write to a
//! tenant's object, against the Lease's 15 s duration.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/nac_process.rs"]
mod nac_process;
mod support;

use std::collections::BTreeMap;

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use nac::api::nonadmin::labels;
use nac::api::nonadmin::{
    NonAdminBackup, NonAdminBackupStorageLocation, NonAdminRestore, NonAdminSchedule,
};
use nac::api::velero::{Backup, BackupStorageLocation, Restore, Schedule};
use nac::sim::demo::OADP_NAMESPACE;
use nac_process::{controller_kubeconfig, controller_replica};
use serde_json::{Value, json};
use support::cluster::{TestCluster, eventually};

/// NABs each tenant creates during the burst; the leader is killed after `KILL_AFTER` of them.
const BURST: usize = 8;
const KILL_AFTER: usize = 3;
/// The Lease's duration (`LeaderConfig::new`): the longest a standby waits for a killed leader.
const LEASE_DURATION: Duration = Duration::from_secs(15);

fn nab(name: &str) -> NonAdminBackup {
    serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
        "metadata": {"name": name}, "spec": {"backupSpec": {}}
    }))
    .unwrap()
}

fn nar(name: &str, backup: &str) -> NonAdminRestore {
    serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminRestore",
        "metadata": {"name": name}, "spec": {"restoreSpec": {"backupName": backup}}
    }))
    .unwrap()
}

fn location(name: &str, ns: &str) -> NonAdminBackupStorageLocation {
    serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackupStorageLocation",
        "metadata": {"name": name},
        "spec": {"backupStorageLocationSpec": {
            "provider": "nac.openshift.io/local",
            "objectStorage": {"bucket": format!("{ns}-bucket"), "prefix": "velero"},
            "credential": {"name": "creds", "key": "cloud"}
        }}
    }))
    .unwrap()
}

fn credentials() -> Secret {
    serde_json::from_value(json!({
        "metadata": {"name": "creds"},
        "stringData": {"cloud": "[default]\naws_access_key_id=one\naws_secret_access_key=s1\n"}
    }))
    .unwrap()
}

fn schedule(name: &str) -> NonAdminSchedule {
    serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminSchedule",
        "metadata": {"name": name},
        "spec": {"schedule": "0 3 * * *", "template": {"backupSpec": {}}}
    }))
    .unwrap()
}

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// A namespaced kind the test lists as JSON.
trait Listed:
    kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
    + Clone
    + serde::de::DeserializeOwned
    + serde::Serialize
    + std::fmt::Debug
{
}

impl<K> Listed for K where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug
{
}

async fn objects<K: Listed>(api: &Api<K>) -> Vec<Value> {
    api.list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|o| serde_json::to_value(o).unwrap())
        .collect()
}

fn finished_backup(v: &Value) -> bool {
    text(v, "/status/phase") == "Created"
        && text(v, "/status/veleroBackup/status/phase") == "Completed"
}

/// Every NAB the tenants asked for is Created with a Completed Velero Backup and queue position
/// 0, and none of the deleted ones is left.
async fn backups_settled(
    tenants: &[(String, Client)],
    kept: &[String],
    deleted: &[String],
) -> bool {
    for (ns, client) in tenants {
        let nabs = objects(&Api::<NonAdminBackup>::namespaced(client.clone(), ns)).await;
        let by_name: BTreeMap<&str, &Value> = nabs
            .iter()
            .map(|n| (text(n, "/metadata/name"), n))
            .collect();
        for name in kept {
            let Some(nab) = by_name.get(name.as_str()) else {
                return false;
            };
            if !finished_backup(nab)
                || nab.pointer("/status/queueInfo/estimatedQueuePosition") != Some(&json!(0))
            {
                return false;
            }
        }
        if deleted
            .iter()
            .any(|name| by_name.contains_key(name.as_str()))
        {
            return false;
        }
    }
    true
}

/// The NAR, NABSL and NAS of every tenant have reached their goal.
async fn others_settled(tenants: &[(String, Client)]) -> bool {
    for (ns, client) in tenants {
        let nars = objects(&Api::<NonAdminRestore>::namespaced(client.clone(), ns)).await;
        let locations = objects(&Api::<NonAdminBackupStorageLocation>::namespaced(
            client.clone(),
            ns,
        ))
        .await;
        let schedules = objects(&Api::<NonAdminSchedule>::namespaced(client.clone(), ns)).await;
        let restored = nars
            .iter()
            .any(|n| text(n, "/status/veleroRestore/status/phase") == "Completed");
        let located = locations.iter().any(|l| {
            text(l, "/status/phase") == "Created"
                && text(l, "/status/veleroBackupStorageLocation/status/phase") == "Available"
        });
        let scheduled = schedules.iter().any(|s| {
            text(s, "/status/phase") == "Created"
                && !text(s, "/status/veleroSchedule/nacuuid").is_empty()
        });
        if !(restored && located && scheduled) {
            return false;
        }
    }
    true
}

/// The NACUUIDs in `pointer` of every `K` of the tenants.
async fn nacuuids<K>(tenants: &[(String, Client)], pointer: &str) -> Vec<String>
where
    K: Listed,
{
    let mut uuids = Vec::new();
    for (ns, client) in tenants {
        for o in objects(&Api::<K>::namespaced(client.clone(), ns)).await {
            uuids.push(text(&o, pointer).to_string());
        }
    }
    uuids
}

/// Each of `uuids` has exactly one Velero `K` labelled `label` with it.
async fn one_each<K>(admin: &Client, label: &str, uuids: &[String])
where
    K: Listed,
{
    let counts = per_label(
        &objects(&Api::<K>::namespaced(admin.clone(), OADP_NAMESPACE)).await,
        label,
    );
    for uuid in uuids {
        assert!(!uuid.is_empty(), "{uuids:?}");
        assert_eq!(counts.get(uuid), Some(&1), "{label}={uuid}: {counts:?}");
    }
}

/// How many Velero objects carry each value of `label`.
fn per_label(objects: &[Value], label: &str) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for o in objects {
        if let Some(value) = o
            .pointer("/metadata/labels")
            .and_then(|l| l.get(label))
            .and_then(Value::as_str)
        {
            *counts.entry(value.to_string()).or_insert(0) += 1;
        }
    }
    counts
}

async fn lease_holder(admin: &Client) -> String {
    Api::<Lease>::namespaced(admin.clone(), OADP_NAMESPACE)
        .get_opt("nac-controller")
        .await
        .unwrap()
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
        .unwrap_or_default()
}

async fn a_killed_leader_is_replaced_and_nothing_is_lost_or_made_twice(cluster: TestCluster) {
    let admin = cluster.admin();
    let _velero_store = support::start_velero(&cluster).await;

    let mut tenants = Vec::new();
    for user in ["alice", "bob", "carol"] {
        let ns = cluster.unique_name(&format!("failover-{user}"), None);
        cluster.tenant_namespace(user, &ns).await;
        tenants.push((ns, cluster.user(user)));
    }

    let dir = tempfile::tempdir().unwrap();
    let (config, _serving, a_name, b_name) =
        controller_kubeconfig(&cluster, dir.path(), ("leader", "standby")).await;
    let (mut leader, _) = controller_replica(dir.path(), &config, &a_name);
    eventually("the first replica to lead", 30, || async {
        (lease_holder(&admin).await == a_name).then_some(())
    })
    .await;
    let (mut standby, _) = controller_replica(dir.path(), &config, &b_name);

    // Before the burst: two finished backups per tenant, one to restore and one to delete.
    for (ns, client) in &tenants {
        let api = Api::<NonAdminBackup>::namespaced(client.clone(), ns);
        for name in ["early-restored", "early-deleted"] {
            api.create(&PostParams::default(), &nab(name))
                .await
                .unwrap();
        }
    }
    let early = ["early-restored".to_string(), "early-deleted".to_string()];
    eventually("the early backups to finish", 60, || async {
        backups_settled(&tenants, &early, &[]).await.then_some(())
    })
    .await;

    // The burst, with the leader killed in its middle.
    let mut killed_at = None;
    for i in 0..BURST {
        for (ns, client) in &tenants {
            Api::<NonAdminBackup>::namespaced(client.clone(), ns)
                .create(&PostParams::default(), &nab(&format!("burst-{i}")))
                .await
                .unwrap();
        }
        if i == 1 {
            for (ns, client) in &tenants {
                Api::<NonAdminBackup>::namespaced(client.clone(), ns)
                    .delete("early-deleted", &DeleteParams::default())
                    .await
                    .unwrap();
                Api::<NonAdminRestore>::namespaced(client.clone(), ns)
                    .create(&PostParams::default(), &nar("early-back", "early-restored"))
                    .await
                    .unwrap();
            }
        }
        if i + 1 == KILL_AFTER {
            // Just before the kill: a location (with its credentials) and a schedule each.
            for (ns, client) in &tenants {
                Api::<Secret>::namespaced(client.clone(), ns)
                    .create(&PostParams::default(), &credentials())
                    .await
                    .unwrap();
                Api::<NonAdminBackupStorageLocation>::namespaced(client.clone(), ns)
                    .create(&PostParams::default(), &location("own-location", ns))
                    .await
                    .unwrap();
                Api::<NonAdminSchedule>::namespaced(client.clone(), ns)
                    .create(&PostParams::default(), &schedule("nightly"))
                    .await
                    .unwrap();
            }
            leader.sigkill();
            killed_at = Some(Instant::now());
        }
    }
    let killed_at = killed_at.unwrap();
    let created_after_kill: Vec<String> =
        (KILL_AFTER..BURST).map(|i| format!("burst-{i}")).collect();

    // The standby takes the Lease once it expires, and then writes to tenants' objects.
    let mut took_over = None;
    let mut first_write = None;
    while first_write.is_none() {
        assert!(
            killed_at.elapsed() < LEASE_DURATION * 3,
            "no write by the standby {:?} after the kill; its log:\n{}",
            killed_at.elapsed(),
            standby.log_text()
        );
        if took_over.is_none() && lease_holder(&admin).await == b_name {
            took_over = Some(killed_at.elapsed());
        }
        for (ns, client) in &tenants {
            let nabs = objects(&Api::<NonAdminBackup>::namespaced(client.clone(), ns)).await;
            let written = nabs.iter().any(|n| {
                created_after_kill
                    .iter()
                    .any(|c| c == text(n, "/metadata/name"))
                    && !text(n, "/status/phase").is_empty()
            });
            if written && first_write.is_none() {
                first_write = Some(killed_at.elapsed());
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let first_write = first_write.unwrap();
    let took_over = took_over.unwrap_or(first_write);
    assert_eq!(lease_holder(&admin).await, b_name);

    let kept: Vec<String> = std::iter::once("early-restored".to_string())
        .chain((0..BURST).map(|i| format!("burst-{i}")))
        .collect();
    let deleted = ["early-deleted".to_string()];
    let settling = Instant::now();
    eventually(
        "every backup to finish and the deleted ones to go",
        120,
        || async {
            backups_settled(&tenants, &kept, &deleted)
                .await
                .then_some(())
        },
    )
    .await;
    eventually(
        "every restore to finish, every location and schedule to be made",
        60,
        || async { others_settled(&tenants).await.then_some(()) },
    )
    .await;
    let settled = settling.elapsed();

    // Exactly one Velero object per tenant object, none for a deleted NAB.
    let nab_uuids = nacuuids::<NonAdminBackup>(&tenants, "/status/veleroBackup/nacuuid").await;
    assert_eq!(nab_uuids.len(), tenants.len() * kept.len());
    let velero_backups = eventually("the deleted NABs' Velero Backups to go", 60, || async {
        let backups = per_label(
            &objects(&Api::<Backup>::namespaced(admin.clone(), OADP_NAMESPACE)).await,
            labels::NAB_ORIGIN_NACUUID,
        );
        let ours: BTreeMap<String, usize> = backups
            .into_iter()
            .filter(|(uuid, _)| tenants.iter().any(|(ns, _)| uuid.starts_with(ns.as_str())))
            .collect();
        (ours.len() == nab_uuids.len()).then_some(ours)
    })
    .await;
    for uuid in &nab_uuids {
        assert_eq!(
            velero_backups.get(uuid),
            Some(&1),
            "Velero Backups of {uuid}: {velero_backups:?}"
        );
    }
    let nar_uuids = nacuuids::<NonAdminRestore>(&tenants, "/status/veleroRestore/nacuuid").await;
    one_each::<Restore>(&admin, labels::NAR_ORIGIN_NACUUID, &nar_uuids).await;
    let nabsl_uuids = nacuuids::<NonAdminBackupStorageLocation>(
        &tenants,
        "/status/veleroBackupStorageLocation/nacuuid",
    )
    .await;
    one_each::<BackupStorageLocation>(&admin, labels::NABSL_ORIGIN_NACUUID, &nabsl_uuids).await;
    let nas_uuids = nacuuids::<NonAdminSchedule>(&tenants, "/status/veleroSchedule/nacuuid").await;
    one_each::<Schedule>(&admin, labels::NAS_ORIGIN_NACUUID, &nas_uuids).await;

    println!(
        "[{}] leader killed (SIGKILL) after {KILL_AFTER} of {BURST} creations per tenant: the standby held the Lease {:.2} s and made its first write to a tenant's object {:.2} s after the kill (lease duration {} s); everything settled {:.2} s later; {} NABs, {} NARs, {} NABSLs, {} NASs, 0 made twice",
        cluster.server,
        took_over.as_secs_f64(),
        first_write.as_secs_f64(),
        LEASE_DURATION.as_secs(),
        settled.as_secs_f64(),
        nab_uuids.len(),
        nar_uuids.len(),
        nabsl_uuids.len(),
        nas_uuids.len(),
    );
    assert!(
        first_write < LEASE_DURATION * 2,
        "the standby's first write came {first_write:?} after the kill"
    );
    standby.sigterm();
    let (code, _) = standby.exited(Duration::from_secs(20)).await;
    assert_eq!(code, Some(0), "the standby's log:\n{}", standby.log_text());
}

on_both_servers!(a_killed_leader_is_replaced_and_nothing_is_lost_or_made_twice);
