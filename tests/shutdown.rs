//! Stopping as Kubernetes stops a pod: SIGTERM to the real `nac` binary (a child process).
//!
//! - `controller_releases_its_lease_on_sigterm` (emulator and real kube-apiserver): two
//!   `nac controller` replicas; the leader exits 0 within seconds of SIGTERM and leaves the
//!   Lease without a holder, so the other replica takes over at its next retry instead of after
//!   the 15 s lease duration (the time is measured and printed); the last replica leaves no
//!   holder at all.
//! - `a_write_in_flight_finishes_before_the_controller_exits` (emulator: it slows the write
//!   down): SIGTERM while a reconcile's create of a Velero Backup is on its way (3 s); the
//!   process waits for it, exits 0 and leaves the Lease without a holder, and the Backup
//!   exists.
//! - `the_gateway_drains_requests_and_ends_streams_on_sigterm` (emulator: it slows the request
//!   down): an open SSE stream gets `event: shutdown` (with a `retry` hint) and ends, a GraphQL
//!   subscription ends with `UNAVAILABLE`/`shutdown` and its socket closes with 1012, a slow
//!   request in flight still completes, new connections are refused, and the process exits 0
//!   within the grace period.
//! - `serve_stops_both_roles_on_sigterm` (emulator): `nac serve` exits 0 and releases the
//!   Lease.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/nac_process.rs"]
mod nac_process;
mod support;
#[path = "support/ws.rs"]
mod ws;

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, PostParams};
use nac::api::nonadmin::NonAdminBackup;
use nac::api::velero::Backup;
use nac::sim::apiserver::faults::{FaultPlan, FaultRule};
use nac::sim::demo::{CONTROLLER_SERVICE_ACCOUNT, OADP_NAMESPACE};
use nac_process::{Nac, controller_kubeconfig, controller_replica, gateway_process, kubeconfig};
use serde_json::json;
use support::cluster::{Server, TestCluster, eventually};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use ws::{Frame, Ws};

fn leases(cluster: &TestCluster) -> Api<Lease> {
    Api::namespaced(cluster.admin(), OADP_NAMESPACE)
}

/// The Lease's holder now (`None` without a Lease; `Some("")` once released).
async fn holder(cluster: &TestCluster) -> Option<String> {
    leases(cluster)
        .get_opt("nac-controller")
        .await
        .unwrap()
        .map(|lease| {
            lease
                .spec
                .unwrap_or_default()
                .holder_identity
                .unwrap_or_default()
        })
}

/// `/readyz`'s status and body, and the `nac_controller_leading` value, of a replica.
async fn readiness_of(health: &str) -> (u16, String, String) {
    let (status, body) = support::http_get(&format!("http://{health}/readyz")).await;
    let (_, metrics) = support::http_get(&format!("http://{health}/metrics")).await;
    let leading = String::from_utf8_lossy(&metrics)
        .lines()
        .find_map(|line| line.strip_prefix("nac_controller_leading "))
        .unwrap_or("absent")
        .to_string();
    (status, String::from_utf8_lossy(&body).into_owned(), leading)
}

async fn controller_releases_its_lease_on_sigterm(cluster: TestCluster) {
    let dir = tempfile::tempdir().unwrap();
    let (config, _serving, a_name, b_name) =
        controller_kubeconfig(&cluster, dir.path(), ("replica-a", "replica-b")).await;

    let (mut a, a_health) = controller_replica(dir.path(), &config, &a_name);
    eventually("replica a to lead", 30, || async {
        (holder(&cluster).await.as_deref() == Some(a_name.as_str())).then_some(())
    })
    .await;
    let (mut b, b_health) = controller_replica(dir.path(), &config, &b_name);
    // b contends (every 2 s) while a leads.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(holder(&cluster).await.as_deref(), Some(a_name.as_str()));
    // Both replicas are Ready (a 2-replica Deployment shows 2/2); the gauge tells the leader.
    let (status, body, leading) = readiness_of(&a_health).await;
    assert_eq!((status, leading.as_str()), (200, "1"), "{body}");
    assert!(body.contains("leading"), "{body}");
    let (status, body, leading) = readiness_of(&b_health).await;
    assert_eq!((status, leading.as_str()), (200, "0"), "{body}");
    assert!(body.contains("standing by"), "{body}");
    let before = leases(&cluster).get("nac-controller").await.unwrap();
    let transitions = before.spec.unwrap().lease_transitions.unwrap_or(0);

    let signalled = Instant::now();
    a.sigterm();
    let (code, took) = a.exited(Duration::from_secs(12)).await;
    assert_eq!(code, Some(0), "replica a's log:\n{}", a.log_text());
    assert!(
        took < Duration::from_secs(5),
        "replica a took {took:?} to stop"
    );
    // Released (no holder) or already b's: never a's any more.
    let after_exit = holder(&cluster).await.unwrap();
    assert!(
        after_exit.is_empty() || after_exit == b_name,
        "after a exited the Lease is held by {after_exit:?}"
    );
    let takeover = loop {
        if holder(&cluster).await.as_deref() == Some(b_name.as_str()) {
            break signalled.elapsed();
        }
        assert!(
            signalled.elapsed() < Duration::from_secs(20),
            "replica b never took over; b's log:\n{}",
            b.log_text()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    println!(
        "[{}] replica a exited {:.2} s after SIGTERM (exit 0); replica b took the Lease over {:.2} s after SIGTERM (lease duration 15 s, retry period 2 s)",
        cluster.server,
        took.as_secs_f64(),
        takeover.as_secs_f64()
    );
    assert!(
        takeover < Duration::from_secs(5),
        "takeover took {takeover:?}: the Lease was not released"
    );
    eventually("replica b to report that it leads", 10, || async {
        let (status, _, leading) = readiness_of(&b_health).await;
        (status == 200 && leading == "1").then_some(())
    })
    .await;
    let lease = leases(&cluster).get("nac-controller").await.unwrap();
    let spec = lease.spec.unwrap();
    assert_eq!(spec.lease_duration_seconds, Some(15));
    assert_eq!(spec.lease_transitions, Some(transitions + 1));
    let a_log = a.log_text();
    assert!(a_log.contains("SIGTERM"), "{a_log}");
    assert!(a_log.contains("stopped leading"), "{a_log}");

    // The last replica leaves the Lease without a holder.
    b.sigterm();
    let (code, took) = b.exited(Duration::from_secs(12)).await;
    assert_eq!(code, Some(0), "replica b's log:\n{}", b.log_text());
    assert!(took < Duration::from_secs(5), "replica b took {took:?}");
    let lease = leases(&cluster).get("nac-controller").await.unwrap();
    let spec = lease.spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some(""));
    assert_eq!(spec.lease_duration_seconds, Some(1));
    println!(
        "[{}] replica b (the last) exited {:.2} s after SIGTERM; the Lease has no holder",
        cluster.server,
        took.as_secs_f64()
    );
}

on_both_servers!(controller_releases_its_lease_on_sigterm);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_in_flight_finishes_before_the_controller_exits() {
    let cluster = TestCluster::emulator().await;
    assert_eq!(cluster.server, Server::Emulator);
    let dir = tempfile::tempdir().unwrap();
    let token = cluster
        .sa_token(OADP_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT)
        .await;
    let (config, _serving) = kubeconfig(&cluster, dir.path(), "controller", &token).await;
    let (mut controller, _health) = controller_replica(dir.path(), &config, "replica-w");
    eventually("the controller to lead", 30, || async {
        (holder(&cluster).await.as_deref() == Some("replica-w")).then_some(())
    })
    .await;
    // Creating a Velero Backup takes 3 s from now on.
    const SLOW: Duration = Duration::from_secs(3);
    cluster.emulator_server().unwrap().set_faults(FaultPlan {
        rules: vec![FaultRule {
            verb: Some("create".into()),
            resource: Some("velero.io/backups".into()),
            namespace: Some(OADP_NAMESPACE.into()),
            latency_ms: SLOW.as_millis() as u64,
            ..FaultRule::default()
        }],
    });
    let nab: NonAdminBackup = serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
        "metadata": {"name": "in-flight"}, "spec": {"backupSpec": {}}
    }))
    .unwrap();
    let created = Instant::now();
    Api::<NonAdminBackup>::namespaced(cluster.user("alice"), "team-a")
        .create(&PostParams::default(), &nab)
        .await
        .unwrap();
    // The step after the finalizer is the create, on its way for 3 s from a moment later.
    let nabs = Api::<NonAdminBackup>::namespaced(cluster.admin(), "team-a");
    eventually("the NonAdminBackup's finalizer", 30, || async {
        let nab = nabs.get("in-flight").await.unwrap();
        (!nab.metadata.finalizers.unwrap_or_default().is_empty()).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let signalled = Instant::now();
    controller.sigterm();
    let (code, took) = controller.exited(Duration::from_secs(12)).await;
    let log = controller.log_text();
    assert_eq!(code, Some(0), "{log}");
    let backups = Api::<Backup>::namespaced(cluster.admin(), OADP_NAMESPACE)
        .list(&Default::default())
        .await
        .unwrap()
        .items;
    assert_eq!(
        backups.len(),
        1,
        "the Velero Backup whose create was in flight exists: {backups:?}\n{log}"
    );
    // It waited for the write (which ends 3 s after it started, shortly before SIGTERM).
    assert!(
        took >= Duration::from_secs(1) && took < SLOW + Duration::from_secs(3),
        "exited {took:?} after SIGTERM"
    );
    println!(
        "the controller exited {:.2} s after SIGTERM ({:.2} s after the NonAdminBackup was created), once the Velero Backup create in flight (3 s) had finished",
        took.as_secs_f64(),
        signalled.duration_since(created).as_secs_f64() + took.as_secs_f64()
    );
    assert_eq!(holder(&cluster).await.as_deref(), Some(""));
}

/// Sends `request` on a new connection and reads the answer to its end.
async fn http(addr: &str, request: String) -> String {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    String::from_utf8_lossy(&raw).into_owned()
}

/// Reads from `stream` into `seen` until it holds `needle`; false at the end of the stream.
async fn read_until(stream: &mut TcpStream, seen: &mut String, needle: &str) -> bool {
    while !seen.contains(needle) {
        let mut chunk = [0u8; 8192];
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => seen.push_str(&String::from_utf8_lossy(&chunk[..n])),
        }
    }
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_drains_requests_and_ends_streams_on_sigterm() {
    let cluster = TestCluster::emulator().await;
    let dir = tempfile::tempdir().unwrap();
    let alice = cluster.user_token("alice");
    let (mut gateway, addr, _serving) =
        gateway_process(&cluster, dir.path(), &["--shutdown-grace-period", "10s"]).await;

    // An open SSE stream.
    let mut events = TcpStream::connect(&addr).await.unwrap();
    events
        .write_all(
            format!(
                "GET /api/v1/namespaces/team-a/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {alice}\r\nAccept: text/event-stream\r\n\r\n"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut stream_text = String::new();
    assert!(
        read_until(&mut events, &mut stream_text, "event: ready").await,
        "{stream_text}"
    );
    // An open GraphQL subscription.
    let mut socket = Ws::open(&addr, json!({"Authorization": format!("Bearer {alice}")})).await;
    socket
        .subscribe(
            "live",
            r#"subscription { changes(namespaces: ["team-a"]) { kind id } }"#,
        )
        .await;
    let ready = socket.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!(
        ready["payload"]["data"]["changes"]["kind"], "READY",
        "{ready}"
    );

    // A slow request: the API server takes 3 s to create the NonAdminBackup.
    const SLOW: Duration = Duration::from_secs(3);
    cluster.emulator_server().unwrap().set_faults(FaultPlan {
        rules: vec![FaultRule {
            verb: Some("create".into()),
            resource: Some("nonadminbackups".into()),
            namespace: Some("team-a".into()),
            latency_ms: SLOW.as_millis() as u64,
            ..FaultRule::default()
        }],
    });
    let body = json!({"name": "during-shutdown", "spec": {"backupSpec": {}}}).to_string();
    let request = format!(
        "POST /api/v1/namespaces/team-a/backups HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {alice}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let post_started = Instant::now();
    let slow = tokio::spawn({
        let addr = addr.clone();
        async move {
            let answer = http(&addr, request).await;
            (answer, Instant::now())
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;

    let signalled = Instant::now();
    gateway.sigterm();

    // The SSE stream is told, then ends.
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        read_until(&mut events, &mut stream_text, "event: shutdown").await;
        let mut rest = Vec::new();
        let _ = events.read_to_end(&mut rest).await;
        stream_text.push_str(&String::from_utf8_lossy(&rest));
    })
    .await;
    assert!(ended.is_ok(), "the SSE stream did not end: {stream_text}");
    let stream_end = signalled.elapsed();
    assert!(stream_text.contains("event: shutdown"), "{stream_text}");
    assert!(stream_text.contains("retry: 1000"), "{stream_text}");
    assert!(stream_text.contains("shutting down"), "{stream_text}");

    // The subscription ends with a reason, then the socket closes with 1012.
    let error = socket.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(error["type"], "next", "{error}");
    let extensions = &error["payload"]["errors"][0]["extensions"];
    assert_eq!(extensions["code"], "UNAVAILABLE", "{error}");
    assert_eq!(extensions["reason"], "shutdown", "{error}");
    let complete = socket.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(complete["type"], "complete", "{complete}");
    let close = tokio::time::timeout(Duration::from_secs(5), socket.frame())
        .await
        .unwrap();
    assert!(
        matches!(&close, Some(Frame::Close(1012, reason)) if reason.contains("shutting down")),
        "{close:?}"
    );

    // New connections are refused while the slow request is still being answered.
    let refused = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if TcpStream::connect(&addr).await.is_err() {
                return signalled.elapsed();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the gateway still accepts connections");
    assert!(!slow.is_finished(), "the slow request finished too soon");

    // The slow request completes.
    let (answer, answered) = slow.await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    assert!(answered.duration_since(post_started) >= SLOW);
    let (code, _) = gateway.exited(Duration::from_secs(12)).await;
    assert_eq!(code, Some(0), "{}", gateway.log_text());
    let took = signalled.elapsed();
    assert!(
        took < Duration::from_secs(10),
        "exited {took:?} after SIGTERM"
    );
    println!(
        "gateway: SSE stream ended with `event: shutdown` {:.2} s after SIGTERM; new connections refused after {:.2} s; the request in flight answered 201 {:.2} s after SIGTERM; exit 0 {:.2} s after SIGTERM (grace period 10 s)",
        stream_end.as_secs_f64(),
        refused.as_secs_f64(),
        answered.duration_since(signalled).as_secs_f64(),
        took.as_secs_f64()
    );
    assert!(
        Api::<NonAdminBackup>::namespaced(cluster.admin(), "team-a")
            .get_opt("during-shutdown")
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_stops_both_roles_on_sigterm() {
    let cluster = TestCluster::emulator().await;
    let dir = tempfile::tempdir().unwrap();
    let token = cluster.emulator_server().unwrap().admin_token();
    let (config, _serving) = kubeconfig(&cluster, dir.path(), "admin", &token).await;
    let mut serve = Nac::start(
        "serve",
        dir.path(),
        &[
            "serve",
            "--kubeconfig",
            config.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
            "--oadp-namespace",
            OADP_NAMESPACE,
        ],
        &[("POD_NAME", "replica-s".to_string())],
    );
    let line = serve.first_line();
    assert!(line.contains("nac serve"), "{line}");
    eventually("nac serve to lead", 30, || async {
        (holder(&cluster).await.as_deref() == Some("replica-s")).then_some(())
    })
    .await;
    serve.sigterm();
    let (code, took) = serve.exited(Duration::from_secs(30)).await;
    assert_eq!(code, Some(0), "{}", serve.log_text());
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert_eq!(holder(&cluster).await.as_deref(), Some(""));
    println!(
        "nac serve exited 0 {:.2} s after SIGTERM; the Lease has no holder",
        took.as_secs_f64()
    );
}
