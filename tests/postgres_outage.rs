//! The history store's PostgreSQL down while backups run (issue 22), on the real control plane,
//! with the production layout: one `nac controller` (the history recorder runs in the leader)
//! and two `nac gateway` replicas, all three on one PostgreSQL database. The server is stopped
//! while a tenant's backups are under way and started again once they all finished:
//! - meanwhile the backups still run to completion (the controller does not need the store);
//!   both gateways keep serving the tenant's objects from their caches (200) and answer the
//!   history with 503 problem+json and `Retry-After` — never another error;
//! - afterwards both gateways show every operation exactly once, each timeline ending
//!   `Completed`, in time order, without a repeated transition: what the recorder saw during
//!   the outage was kept and written, not lost and not doubled.
//!
//! Printed: the outage's length, what the gateways answered meanwhile, and the time from the
//! server's return to a complete history on both replicas.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/nac_process.rs"]
mod nac_process;
#[path = "support/postgres.rs"]
mod postgres_support;
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::api::{Api, PostParams};
use nac::api::nonadmin::NonAdminBackup;
use nac::sim::demo::{GATEWAY_SERVICE_ACCOUNT, OADP_NAMESPACE};
use nac_process::{controller_kubeconfig, controller_replica_with, gateway_with_kubeconfig};
use postgres_support::PgCluster;
use serde_json::{Value, json};
use support::cluster::{TestCluster, eventually};

const BACKUPS: usize = 6;

async fn velero_phase(backups: &Api<NonAdminBackup>, name: &str) -> String {
    let Some(nab) = backups.get_opt(name).await.ok().flatten() else {
        return String::new();
    };
    serde_json::to_value(&nab).unwrap()["status"]["veleroBackup"]["status"]["phase"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

/// One gateway's history of `ns` when it is complete: every backup once, each timeline (in
/// the order served) ending with Velero's `Completed`; `None` while it is not.
async fn complete_history(
    addr: &str,
    ns: &str,
    token: &str,
    names: &[String],
) -> Option<Vec<(String, Vec<Value>)>> {
    let (status, _, body) = support::bearer_get(
        addr,
        &format!("/api/v1/namespaces/{ns}/history?limit=100"),
        token,
    )
    .await;
    if status != 200 {
        return None;
    }
    let page: Value = serde_json::from_str(&body).ok()?;
    let items = page["items"].as_array()?;
    let mut timelines = Vec::new();
    for name in names {
        let rows: Vec<&Value> = items
            .iter()
            .filter(|o| o["name"] == name.as_str() && o["kind"] == "backup")
            .collect();
        assert!(rows.len() <= 1, "{name} is in the history twice: {rows:?}");
        let id = rows.first()?["id"].as_str()?;
        let (status, _, body) = support::bearer_get(
            addr,
            &format!("/api/v1/namespaces/{ns}/history/{id}"),
            token,
        )
        .await;
        let detail: Value = serde_json::from_str(&body).ok()?;
        let timeline = detail["timeline"].as_array()?.clone();
        let completed = timeline
            .iter()
            .any(|t| t["attribute"] == "veleroPhase" && t["value"] == "Completed");
        if status != 200 || !completed {
            return None;
        }
        timelines.push((name.clone(), timeline));
    }
    Some(timelines)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_history_survives_a_postgres_outage_with_two_gateways() {
    let Some(cluster) = TestCluster::real().await else {
        return;
    };
    // This test stops its server: a PostgreSQL of its own.
    let pg = Arc::new(tokio::task::spawn_blocking(PgCluster::start).await.unwrap());
    let url = pg.fresh_database();
    // Slow items, so backups are still running when the database goes.
    let _velero_store = support::start_velero_with(&cluster, |options| {
        options.item_delay = Duration::from_millis(60);
    })
    .await;
    let ns = cluster.unique_name("pg-outage-alice", None);
    cluster.tenant_namespace("alice", &ns).await;
    let alice = cluster.user("alice");
    let token = cluster.user_token("alice");

    let dir = tempfile::tempdir().unwrap();
    let (controller_config, _, controller_name, _) =
        controller_kubeconfig(&cluster, dir.path(), ("controller", "unused")).await;
    let database = ["--database-url", url.as_str()];
    let (mut controller, _) =
        controller_replica_with(dir.path(), &controller_config, &controller_name, &database);
    let gateway_token = cluster
        .sa_token(OADP_NAMESPACE, GATEWAY_SERVICE_ACCOUNT)
        .await;
    let (gateway_config, _) =
        nac_process::kubeconfig(&cluster, dir.path(), "gateway", &gateway_token).await;
    let (mut gateway_a, addr_a) =
        gateway_with_kubeconfig(dir.path(), &gateway_config, "gateway-a", &database).await;
    let (mut gateway_b, addr_b) =
        gateway_with_kubeconfig(dir.path(), &gateway_config, "gateway-b", &database).await;

    let backups = Api::<NonAdminBackup>::namespaced(alice.clone(), &ns);
    let names: Vec<String> = (1..=BACKUPS).map(|i| format!("b{i}")).collect();
    for name in &names {
        backups
            .create(&PostParams::default(), &support::nab_with(name, json!({})))
            .await
            .unwrap();
    }
    eventually("the first backup to be under way", 60, || async {
        (velero_phase(&backups, &names[0]).await == "InProgress").then_some(())
    })
    .await;

    // The outage, while the tenant keeps reading through both gateways.
    let stopping = pg.clone();
    tokio::task::spawn_blocking(move || stopping.stop())
        .await
        .unwrap();
    let down = Instant::now();
    let history_path = format!("/api/v1/namespaces/{ns}/history");
    let list_path = format!("/api/v1/namespaces/{ns}/backups");
    let mut history_unavailable = 0;
    let mut lists_served = 0;
    // Per gateway: how long each history answer took.
    let mut history_latencies: [Vec<Duration>; 2] = [Vec::new(), Vec::new()];
    let mut slowest_list = Duration::ZERO;
    let mut all_completed = false;
    while !all_completed {
        assert!(
            down.elapsed() < Duration::from_secs(180),
            "the backups did not finish during the outage"
        );
        for (replica, addr) in [&addr_a, &addr_b].into_iter().enumerate() {
            let asked = Instant::now();
            let (status, head, body) = support::bearer_get(addr, &history_path, &token).await;
            history_latencies[replica].push(asked.elapsed());
            assert_eq!(status, 503, "history during the outage: {head}\n{body}");
            let head = head.to_ascii_lowercase();
            assert!(head.contains("retry-after:"), "{head}");
            assert!(head.contains("application/problem+json"), "{head}");
            history_unavailable += 1;
            let asked = Instant::now();
            let (status, _, body) = support::bearer_get(addr, &list_path, &token).await;
            slowest_list = slowest_list.max(asked.elapsed());
            assert_eq!(status, 200, "the backups list during the outage: {body}");
            lists_served += 1;
        }
        all_completed = true;
        for name in &names {
            all_completed &= velero_phase(&backups, name).await == "Completed";
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // The first request to find the server gone waits out the pool's connect timeout; the
    // ones after it fail fast (at most the history store's one-second retry).
    for latencies in &history_latencies {
        for later in latencies.iter().skip(1) {
            assert!(
                *later < Duration::from_millis(1500),
                "a history request during the outage took {later:?}: {latencies:?}"
            );
        }
    }
    let ms = |d: &Duration| d.as_millis();
    let first: Vec<u128> = history_latencies
        .iter()
        .filter_map(|l| l.first())
        .map(ms)
        .collect();
    let slowest_later = history_latencies
        .iter()
        .flat_map(|l| l.iter().skip(1))
        .max()
        .map_or(0, ms);
    let starting = pg.clone();
    tokio::task::spawn_blocking(move || starting.start_again())
        .await
        .unwrap();
    let outage = down.elapsed();
    let back = Instant::now();

    let mut recovered = Vec::new();
    for (addr, replica) in [(&addr_a, "a"), (&addr_b, "b")] {
        let timelines = eventually(
            "the gateway's history to hold every backup, Completed",
            120,
            || complete_history(addr, &ns, &token, &names),
        )
        .await;
        recovered.push(back.elapsed());
        for (name, timeline) in &timelines {
            support::assert_timeline_sound(&format!("gateway {replica}: {name}"), timeline);
        }
    }

    println!(
        "PostgreSQL down {:.1} s while {BACKUPS} backups ran to completion; meanwhile the two gateways answered {lists_served} list requests from their caches (slowest {:.0} ms) and {history_unavailable} history requests with 503 + Retry-After (the first on each gateway in {first:?} ms, the later ones within {slowest_later} ms); after it was back the history was complete on gateway a in {:.2} s and on gateway b in {:.2} s, every operation once",
        outage.as_secs_f64(),
        slowest_list.as_secs_f64() * 1000.0,
        recovered[0].as_secs_f64(),
        recovered[1].as_secs_f64(),
    );
    nac_process::stop_cleanly(&mut [
        (&mut controller, "controller"),
        (&mut gateway_a, "gateway a"),
        (&mut gateway_b, "gateway b"),
    ])
    .await;
}
