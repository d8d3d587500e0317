//! Watches that expire while their owner is away (issue 22), on the real control plane: a
//! `nac controller` (with the history recorder) and a `nac gateway` process are paused
//! (SIGSTOP) while tenants and Velero change things, kube-apiserver is restarted (every watch
//! dropped) and etcd compacted to its newest revision, so when the processes continue, each
//! watch they resume from the resourceVersion they last saw gets 410 Gone (checked directly),
//! and they must relist. Nothing may be missed:
//! - while the gateway is paused a backup is deleted for good (its finalizer run by the
//!   controller): the resumed gateway must stop listing it, though it never saw the deletion;
//! - while the controller is paused Velero completes a backup it had started and a tenant makes
//!   another: both reach Created/Completed, each with exactly one Velero Backup;
//! - the history store has every operation with a timeline that ends where the objects are:
//!   the deleted backup's `deleted`, the others' `veleroPhase` `Completed`, in time order.
//!
//! Printed: from the processes' resumption to each recovery.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/nac_process.rs"]
mod nac_process;
mod support;

use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};
use nac::api::nonadmin::NonAdminBackup;
use nac::api::velero::Backup;
use nac::sim::demo::OADP_NAMESPACE;
use nac_process::Nac;
use serde_json::{Value, json};
use support::cluster::{TestCluster, eventually};

/// One GET to the gateway: status and body as JSON (`Null` if not).
async fn get(addr: &str, path: &str, token: &str) -> (u16, Value) {
    let (status, _, body) = support::bearer_get(addr, path, token).await;
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

async fn status_of(backups: &Api<NonAdminBackup>, name: &str) -> Option<Value> {
    let nab = backups.get_opt(name).await.ok().flatten()?;
    Some(serde_json::to_value(nab).unwrap()["status"].clone())
}

async fn signal(process: &Nac, signal: &str) {
    let status = tokio::process::Command::new("kill")
        .args([signal, &process.pid().to_string()])
        .status()
        .await
        .unwrap();
    assert!(status.success(), "kill {signal}");
}

/// What a watch from `resource_version` answers first: `Some(code)` for an error (410 when the
/// version was compacted away), `None` for an event.
async fn first_watch_answer(api: &Api<NonAdminBackup>, resource_version: &str) -> Option<u16> {
    let params = WatchParams::default().timeout(5);
    match api.watch(&params, resource_version).await {
        Err(kube::Error::Api(status)) => Some(status.code),
        Err(other) => panic!("watch: {other}"),
        Ok(stream) => {
            let mut stream = stream.boxed();
            match stream.next().await {
                Some(Ok(WatchEvent::Error(status))) => Some(status.code),
                Some(Err(kube::Error::Api(status))) => Some(status.code),
                _ => None,
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_expired_while_away_relist_and_miss_nothing() {
    let Some(cluster) = TestCluster::real().await else {
        return;
    };
    let _velero_store = support::start_velero(&cluster).await;
    let ns = cluster.unique_name("expiry-alice", None);
    cluster.tenant_namespace("alice", &ns).await;
    let alice: Client = cluster.user("alice");
    let token = cluster.user_token("alice");
    let admin = cluster.admin();

    let dir = tempfile::tempdir().unwrap();
    // The gateway reads the history (manifests included) the controller writes.
    let (mut controller, mut gateway, addr) =
        nac_process::controller_and_gateway(&cluster, dir.path()).await;

    let backups = Api::<NonAdminBackup>::namespaced(alice.clone(), &ns);
    let velero_backups = Api::<Backup>::namespaced(admin.clone(), OADP_NAMESPACE);
    backups
        .create(
            &PostParams::default(),
            &support::nab_with("gone", json!({})),
        )
        .await
        .unwrap();
    eventually("the first backup to finish", 60, || async {
        support::nab_finished(&backups, "gone").await.then_some(())
    })
    .await;
    let list_path = format!("/api/v1/namespaces/{ns}/backups");
    let (status, listed) = get(&addr, &list_path, &token).await;
    assert_eq!(status, 200, "{listed}");
    let old_version = backups
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();

    // The gateway away: a backup is deleted for good meanwhile.
    signal(&gateway, "-STOP").await;
    backups
        .delete("gone", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the deleted backup to be gone", 90, || async {
        backups
            .get_opt("gone")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;

    // The controller away too, from the moment Velero has a new backup to run: Velero
    // completes it meanwhile, and the tenant makes another.
    backups
        .create(
            &PostParams::default(),
            &support::nab_with("running", json!({})),
        )
        .await
        .unwrap();
    let running_velero = eventually("the second backup's Velero Backup", 60, || async {
        let name = status_of(&backups, "running")
            .await?
            .pointer("/veleroBackup/name")?
            .as_str()?
            .to_string();
        velero_backups
            .get_opt(&name)
            .await
            .ok()
            .flatten()
            .map(|_| name)
    })
    .await;
    signal(&controller, "-STOP").await;
    eventually("Velero to complete the second backup", 60, || async {
        let backup = velero_backups
            .get_opt(&running_velero)
            .await
            .ok()
            .flatten()?;
        let phase = serde_json::to_value(backup).unwrap()["status"]["phase"].clone();
        (phase == "Completed").then_some(())
    })
    .await;
    backups
        .create(
            &PostParams::default(),
            &support::nab_with("late", json!({})),
        )
        .await
        .unwrap();

    // Every watch dropped, and the history they would resume from compacted away.
    let outage = cluster
        .restart_apiserver(Duration::from_secs(1))
        .await
        .unwrap();
    let revision = cluster.compact_etcd().await.unwrap();
    let answer = first_watch_answer(&Api::namespaced(admin.clone(), &ns), &old_version).await;
    assert_eq!(
        answer,
        Some(410),
        "a watch from resourceVersion {old_version} after compacting to {revision} was not refused with 410 Gone"
    );

    let resumed = Instant::now();
    signal(&controller, "-CONT").await;
    signal(&gateway, "-CONT").await;

    // The controller relisted: the backup Velero finished while it was away is Completed, the
    // one made meanwhile is made and finished.
    eventually(
        "the backup Velero finished meanwhile to show Completed",
        90,
        || async {
            support::nab_finished(&backups, "running")
                .await
                .then_some(())
        },
    )
    .await;
    let controller_caught_up = resumed.elapsed();
    eventually("the backup made meanwhile to finish", 90, || async {
        support::nab_finished(&backups, "late").await.then_some(())
    })
    .await;
    let late_finished = resumed.elapsed();

    // The gateway relisted: the deletion it never saw is gone from its answers.
    eventually(
        "the gateway to list what is there and nothing else",
        90,
        || async {
            let (status, listed) = get(&addr, &list_path, &token).await;
            let mut names: Vec<String> = listed["items"]
                .as_array()?
                .iter()
                .filter(|item| {
                    item.pointer("/status/veleroBackup/status/phase") == Some(&json!("Completed"))
                })
                .filter_map(|item| item.pointer("/metadata/name")?.as_str().map(str::to_string))
                .collect();
            names.sort();
            let total = listed["items"].as_array()?.len();
            (status == 200 && names == ["late", "running"] && total == 2).then_some(())
        },
    )
    .await;
    let gateway_caught_up = resumed.elapsed();

    // One Velero Backup per NonAdminBackup.
    let all = velero_backups.list(&ListParams::default()).await.unwrap();
    for name in ["running", "late"] {
        let uuid = status_of(&backups, name).await.unwrap()["veleroBackup"]["nacuuid"]
            .as_str()
            .unwrap()
            .to_string();
        let made = support::labelled(
            &all.items,
            nac::api::nonadmin::labels::NAB_ORIGIN_NACUUID,
            &uuid,
        );
        assert_eq!(made, 1, "Velero Backups for NonAdminBackup {name}");
    }

    // The history: each operation's timeline ends where its object is, in time order.
    let expected = [
        ("gone", "deleted", "true"),
        ("running", "veleroPhase", "Completed"),
        ("late", "veleroPhase", "Completed"),
    ];
    let timelines = eventually("the history to hold every operation's end", 60, || async {
        let (status, page) = get(&addr, &format!("/api/v1/namespaces/{ns}/history"), &token).await;
        if status != 200 {
            return None;
        }
        let mut timelines = Vec::new();
        for (name, attribute, value) in expected {
            let operation = page["items"]
                .as_array()?
                .iter()
                .find(|o| o["name"] == name && o["kind"] == "backup")?;
            let id = operation["id"].as_str()?;
            let (status, detail) = get(
                &addr,
                &format!("/api/v1/namespaces/{ns}/history/{id}"),
                &token,
            )
            .await;
            let timeline = detail["timeline"].as_array()?.clone();
            let reached = timeline
                .iter()
                .any(|t| t["attribute"] == attribute && t["value"] == value);
            if status != 200 || !reached {
                return None;
            }
            timelines.push((name, timeline));
        }
        Some(timelines)
    })
    .await;
    for (name, timeline) in &timelines {
        support::assert_timeline_sound(name, timeline);
    }

    println!(
        "paused controller and gateway; kube-apiserver restarted ({:.1} s) and etcd compacted to revision {revision} (a watch from the old resourceVersion: 410 Gone); after resuming: the controller showed the backup Velero finished meanwhile in {:.2} s and finished the one made meanwhile in {:.2} s, the gateway dropped the deletion it never saw in {:.2} s; history complete for all 3 operations",
        outage.as_secs_f64(),
        controller_caught_up.as_secs_f64(),
        late_finished.as_secs_f64(),
        gateway_caught_up.as_secs_f64(),
    );
    nac_process::stop_cleanly(&mut [(&mut controller, "controller"), (&mut gateway, "gateway")])
        .await;
}
