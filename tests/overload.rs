//! Overload (issue 22), on the real control plane: 200 tenants (each a namespace with its own
//! owner, a service account, on a loopback address of its own) create a backup through the
//! gateway at the same moment, while 16
//! clients flood the gateway with list requests. The administrator has put NAC's controller in
//! a priority level of its own that can run only a few requests at once and queues two, so
//! kube-apiserver's priority and fairness (APF) turns much of the controller's burst away with
//! 429 and `Retry-After`:
//! - every backup is made exactly once and reaches Created (one Velero Backup per
//!   NonAdminBackup; with `NAC_OVERLOAD_FULL=1` the test also waits until Velero completed
//!   them all);
//! - the controller backs off as told instead of storming: APF refused at most half of its
//!   requests, and all it saw stay a small multiple of the work (read from
//!   kube-apiserver's own `apiserver_flowcontrol_*` metrics for the flow schema);
//! - the gateway keeps answering cached reads quickly throughout, and answers every create;
//! - stopped while the level still holds its writes back, the controller stops within its grace
//!   period and hands its Lease back (cutting off, with status 1, writes a 429 still delays).
//!
//! `NAC_OVERLOAD_TENANTS` changes the number of tenants (200 by default).
//! Printed: 429s and requests per backup from APF, the gateway's read latency percentiles
//! during the burst, and the time to every backup Created (and Completed, in full).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/nac_process.rs"]
mod nac_process;
mod support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::flowcontrol::v1::{FlowSchema, PriorityLevelConfiguration};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use nac::api::nonadmin::NonAdminBackup;
use nac::api::velero::Backup;
use nac::sim::demo::{CONTROLLER_SERVICE_ACCOUNT, OADP_NAMESPACE};
use serde_json::json;
use support::cluster::{TestCluster, eventually};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const FLOODERS: usize = 16;
/// Set-up requests in flight at once.
const IN_FLIGHT: usize = 16;
const FLOW_SCHEMA: &str = "nac-test-controller";
const PRIORITY_LEVEL: &str = "nac-test-tight";
/// Requests APF may see from the controller per backup until all are Created, 429s and
/// retries included. Making a backup costs about 5 (a namespace read, a finalizer patch, the
/// Velero Backup, status updates; see `benches/controller_scale.rs`); while 200 wait in
/// Velero's queue each also gets its queue position updated as the queue moves (at most once
/// per 2 s), so the figure grows with how long they wait (15–42 measured here, on 2 loaded
/// cores). A client retrying without backing off would make thousands per backup while its
/// level is full.
const MAX_REQUESTS_PER_BACKUP: f64 = 100.0;
/// At most this share of the controller's requests may be refused: backing off as
/// `Retry-After` says keeps it low (about 20% measured), a retry loop drives it towards 100%.
const MAX_REFUSED_SHARE: f64 = 0.5;

/// `NAC_OVERLOAD_FULL=1`: also wait until Velero (the simulator, one backup at a time as
/// Velero runs them) completed every backup, which takes minutes.
fn full() -> bool {
    std::env::var("NAC_OVERLOAD_FULL").is_ok_and(|v| v == "1")
}

fn tenants() -> usize {
    std::env::var("NAC_OVERLOAD_TENANTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200)
}

/// The administrator's throttle: NAC's controller, for its own and Velero's resources, in a
/// priority level of its own with the smallest share, one queue of two.
async fn throttle_controller(admin: &Client) {
    let levels = Api::<PriorityLevelConfiguration>::all(admin.clone());
    let schemas = Api::<FlowSchema>::all(admin.clone());
    let _ = schemas.delete(FLOW_SCHEMA, &DeleteParams::default()).await;
    let _ = levels
        .delete(PRIORITY_LEVEL, &DeleteParams::default())
        .await;
    let level: PriorityLevelConfiguration = serde_json::from_value(json!({
        "metadata": {"name": PRIORITY_LEVEL},
        "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": 1,
            "lendablePercent": 0,
            "limitResponse": {"type": "Queue",
                "queuing": {"queues": 1, "handSize": 1, "queueLengthLimit": 2}}
        }}
    }))
    .unwrap();
    levels.create(&PostParams::default(), &level).await.unwrap();
    let schema: FlowSchema = serde_json::from_value(json!({
        "metadata": {"name": FLOW_SCHEMA},
        "spec": {
            "priorityLevelConfiguration": {"name": PRIORITY_LEVEL},
            "matchingPrecedence": 100,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [{
                "subjects": [{"kind": "ServiceAccount", "serviceAccount":
                    {"namespace": OADP_NAMESPACE, "name": CONTROLLER_SERVICE_ACCOUNT}}],
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["oadp.openshift.io", "velero.io"],
                    "resources": ["*"], "namespaces": ["*"]}]
            }]
        }
    }))
    .unwrap();
    schemas
        .create(&PostParams::default(), &schema)
        .await
        .unwrap();
}

async fn remove_throttle(admin: &Client) {
    let _ = Api::<FlowSchema>::all(admin.clone())
        .delete(FLOW_SCHEMA, &DeleteParams::default())
        .await;
    let _ = Api::<PriorityLevelConfiguration>::all(admin.clone())
        .delete(PRIORITY_LEVEL, &DeleteParams::default())
        .await;
}

/// kube-apiserver's APF counters for the test's flow schema: (dispatched, rejected).
async fn apf_counts(admin: &Client) -> (f64, f64) {
    let text = admin
        .request_text(http::Request::get("/metrics").body(Vec::new()).unwrap())
        .await
        .unwrap();
    let sum = |metric: &str| -> f64 {
        text.lines()
            .filter(|l| {
                l.starts_with(metric) && l.contains(&format!("flow_schema=\"{FLOW_SCHEMA}\""))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    (
        sum("apiserver_flowcontrol_dispatched_requests_total"),
        sum("apiserver_flowcontrol_rejected_requests_total"),
    )
}

/// A tenant: a namespace whose owner is a service account of its own; the owner's token.
async fn tenant(admin: &Client, ns: &str) -> String {
    let object: Namespace = serde_json::from_value(
        json!({"metadata": {"name": ns, "labels": {"nac-test/harness": "true"}}}),
    )
    .unwrap();
    Api::<Namespace>::all(admin.clone())
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
    let accounts = Api::<ServiceAccount>::namespaced(admin.clone(), ns);
    accounts
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "owner"}})).unwrap(),
        )
        .await
        .unwrap();
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "owner-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "owner", "namespace": ns}]
    }))
    .unwrap();
    Api::<RoleBinding>::namespaced(admin.clone(), ns)
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    support::sa_token(admin, ns, "owner").await
}

/// The loopback address tenant `i` connects from: each tenant its own machine, as far as the
/// gateway's per-address limits can tell (all of 127.0.0.0/8 is this host's).
fn tenant_address(i: usize) -> std::net::Ipv4Addr {
    let n = u32::try_from(i).unwrap() + 2;
    std::net::Ipv4Addr::new(127, 0, (n >> 8) as u8, (n & 0xff) as u8)
}

/// One request to the gateway from `source` (`Connection: close`): status and head.
async fn request_from(
    source: std::net::Ipv4Addr,
    addr: &str,
    method: &str,
    path: &str,
    token: &str,
    body: &str,
) -> (u16, String) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind((source, 0).into()).unwrap();
    let mut stream = socket.connect(addr.parse().unwrap()).await.unwrap();
    stream
        .write_all(
            format!(
                "{method} {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).await.unwrap();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let head = text
        .split("\r\n\r\n")
        .next()
        .unwrap_or_default()
        .to_string();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_tenants_at_once_under_priority_and_fairness() {
    let Some(cluster) = TestCluster::real().await else {
        return;
    };
    let count = tenants();
    let admin = cluster.admin();
    let _velero_store = support::start_velero(&cluster).await;
    let suffix = cluster.unique_name("o", None);
    let names: Vec<String> = (0..count).map(|i| format!("ovl-{i}-{suffix}")).collect();
    let tokens: Vec<String> = stream::iter(&names)
        .map(|ns| tenant(&admin, ns))
        .buffered(IN_FLIGHT)
        .collect()
        .await;
    throttle_controller(&admin).await;

    let dir = tempfile::tempdir().unwrap();
    // The gateway reads the history (manifests included) the controller writes.
    let (mut controller, mut gateway, addr) =
        nac_process::controller_and_gateway(&cluster, dir.path()).await;
    // Each tenant's first read (its token and access reviewed and cached), before the clock.
    stream::iter(names.iter().zip(&tokens).enumerate())
        .map(|(i, (ns, token))| {
            let addr = addr.clone();
            async move {
                let path = format!("/api/v1/namespaces/{ns}/backups");
                let (status, head) =
                    request_from(tenant_address(i), &addr, "GET", &path, token, "").await;
                assert_eq!(status, 200, "{head}");
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<_>>()
        .await;
    let (dispatched_before, rejected_before) = apf_counts(&admin).await;

    // The flood: cached reads by every tenant, round robin, for as long as the burst lasts.
    let stop = Arc::new(AtomicBool::new(false));
    let latencies = Arc::new(Mutex::new(Vec::<Duration>::new()));
    let answers = Arc::new(Mutex::new(BTreeMap::<u16, usize>::new()));
    let flooders: Vec<_> = (0..FLOODERS)
        .map(|f| {
            let (stop, latencies, answers) = (stop.clone(), latencies.clone(), answers.clone());
            let (addr, names, tokens) = (addr.clone(), names.clone(), tokens.clone());
            tokio::spawn(async move {
                let mut i = f;
                while !stop.load(Ordering::Relaxed) {
                    let t = i % names.len();
                    let path = format!("/api/v1/namespaces/{}/backups", names[t]);
                    let asked = Instant::now();
                    let (status, _) =
                        request_from(tenant_address(t), &addr, "GET", &path, &tokens[t], "").await;
                    latencies.lock().unwrap().push(asked.elapsed());
                    *answers.lock().unwrap().entry(status).or_default() += 1;
                    i += FLOODERS;
                }
            })
        })
        .collect();

    // The burst: every tenant creates a backup through the gateway at once.
    let burst = Instant::now();
    let created: Vec<u16> = futures::future::join_all(names.iter().zip(&tokens).enumerate().map(
        |(i, (ns, token))| {
            let addr = addr.clone();
            async move {
                request_from(
                    tenant_address(i),
                    &addr,
                    "POST",
                    &format!("/api/v1/namespaces/{ns}/backups"),
                    token,
                    r#"{"name":"burst","spec":{"backupSpec":{}}}"#,
                )
                .await
                .0
            }
        },
    ))
    .await;
    let answered = burst.elapsed();
    assert!(
        created.iter().all(|status| *status == 201),
        "the gateway's answers to the creates: {created:?}"
    );

    let all_nabs = Api::<NonAdminBackup>::all(admin.clone());
    let progress = |phase: &'static str| {
        let all_nabs = all_nabs.clone();
        let names = names.clone();
        async move {
            let list = all_nabs.list(&ListParams::default()).await.ok()?;
            let done = list
                .items
                .iter()
                .filter(|n| names.contains(n.metadata.namespace.as_ref().unwrap()))
                .filter(|n| {
                    let v = serde_json::to_value(n).unwrap();
                    match phase {
                        "Created" => v.pointer("/status/phase") == Some(&json!("Created")),
                        _ => {
                            v.pointer("/status/veleroBackup/status/phase")
                                == Some(&json!("Completed"))
                        }
                    }
                })
                .count();
            (done == names.len()).then_some(())
        }
    };
    eventually("every backup to be Created", 600, || progress("Created")).await;
    let all_created = burst.elapsed();
    stop.store(true, Ordering::Relaxed);
    for flooder in flooders {
        flooder.await.unwrap();
    }
    let (dispatched, rejected) = apf_counts(&admin).await;
    let all_completed = if full() {
        eventually("every backup to be Completed", 1200, || {
            progress("Completed")
        })
        .await;
        format!(", Completed after {:.1} s", burst.elapsed().as_secs_f64())
    } else {
        String::new()
    };

    // Exactly once.
    let velero = Api::<Backup>::namespaced(admin.clone(), OADP_NAMESPACE)
        .list(&ListParams::default())
        .await
        .unwrap();
    for ns in &names {
        let made = velero
            .items
            .iter()
            .filter(|b| {
                b.metadata.annotations.as_ref().is_some_and(|a| {
                    a.get(nac::api::nonadmin::labels::NAB_ORIGIN_NAMESPACE_ANNOTATION) == Some(ns)
                })
            })
            .count();
        assert_eq!(made, 1, "Velero Backups made for {ns}");
    }

    let requests = (dispatched - dispatched_before) + (rejected - rejected_before);
    let per_backup = requests / count as f64;
    let mut sorted = latencies.lock().unwrap().clone();
    sorted.sort();
    let answers = answers.lock().unwrap().clone();
    let (p50, p99, max) = (
        percentile(&sorted, 0.50),
        percentile(&sorted, 0.99),
        sorted.last().copied().unwrap_or_default(),
    );
    println!(
        "{count} tenants' creates answered in {:.2} s; every backup Created after {:.1} s{all_completed}; APF saw {requests:.0} requests from the controller ({per_backup:.2} per backup), {:.0} of them rejected with 429; the gateway answered {} cached reads meanwhile ({answers:?}): p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        answered.as_secs_f64(),
        all_created.as_secs_f64(),
        rejected - rejected_before,
        sorted.len(),
        p50.as_secs_f64() * 1000.0,
        p99.as_secs_f64() * 1000.0,
        max.as_secs_f64() * 1000.0,
    );
    assert!(
        answers.keys().all(|status| *status == 200),
        "the gateway's answers to cached reads: {answers:?}"
    );
    let refused_share = (rejected - rejected_before) / requests;
    assert!(
        refused_share <= MAX_REFUSED_SHARE,
        "{:.0}% of the controller's requests were refused: a retry storm",
        refused_share * 100.0
    );
    assert!(
        per_backup <= MAX_REQUESTS_PER_BACKUP,
        "the controller made {per_backup:.1} requests per backup under APF: a retry storm"
    );
    assert!(
        p99 < Duration::from_millis(500),
        "cached reads slowed to p99 {p99:?} under the burst"
    );

    // A stop while the level still holds writes back: the controller lets the writes in flight
    // finish for its grace period (10 s here) and cuts off what a 429 still delays past it
    // (exit status 1, as `--shutdown-grace-period` says), but it stops within the period and
    // hands its Lease back either way.
    controller.sigterm();
    let (code, took) = controller.exited(Duration::from_secs(30)).await;
    // Without the terminal colours tracing writes.
    let log = {
        let raw = controller.log_text();
        let mut plain = String::with_capacity(raw.len());
        let mut rest = raw.as_str();
        while let Some(at) = rest.find('\u{1b}') {
            plain.push_str(&rest[..at]);
            rest = &rest[at..];
            rest = rest.find('m').map_or("", |end| &rest[end + 1..]);
        }
        plain.push_str(rest);
        plain
    };
    assert!(
        matches!(code, Some(0 | 1)) && took < Duration::from_secs(15),
        "the controller's stop: status {code:?} after {took:?}; its log:\n{log}"
    );
    assert!(
        log.contains("stopped leading") && log.contains("released=true"),
        "the controller did not hand its Lease back; its log:\n{log}"
    );
    println!(
        "the controller, stopped under the throttle, exited with status {code:?} after {:.1} s",
        took.as_secs_f64()
    );
    remove_throttle(&admin).await;
    nac_process::stop_cleanly(&mut [(&mut gateway, "gateway")]).await;
}
