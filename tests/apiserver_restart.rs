//! kube-apiserver restarted under load (issue 22), on the real control plane: the API server is
//! stopped (SIGTERM, as its node would), kept down for a few seconds and started again on the
//! same etcd while a `nac controller` and a `nac gateway` process, the Velero simulator, a
//! tenant's Server-Sent Event stream and the tenant's polling run. None of them is restarted:
//! - while the API server is away the gateway answers every request of the tenant either from
//!   its caches (200) or with 503 problem+json carrying `Retry-After` — never another error,
//!   never a hang;
//! - afterwards a new NonAdminBackup reaches Created with its Velero Backup Completed (the
//!   controller and Velero reconnected), and the gateway lists it (its watches reconnected);
//! - the SSE stream is never told its access was revoked or its token is invalid (a review the
//!   API server cannot answer is not a refusal): it carries on, or — when access could not be
//!   re-checked for a whole access-cache TTL — ends with `unavailable` and a `retry` hint;
//!   resumed with `Last-Event-ID` it delivers the new backup's changes, and nothing between
//!   (a `reset` would say the gateway no longer has them).
//!
//! Printed: the API server's downtime, and from its return to each component's recovery.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/nac_process.rs"]
mod nac_process;
mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use kube::api::{Api, PostParams};
use nac::api::nonadmin::NonAdminBackup;
use serde_json::{Value, json};
use support::cluster::{TestCluster, eventually};

/// How long the API server stays down.
const DOWN: Duration = Duration::from_secs(5);

/// Opens the tenant's SSE stream of `ns` (resuming after `last_id` when given) and copies what
/// it sends into `seen` until it ends; returns once the `ready` event (or a replay) arrived.
async fn open_stream(
    addr: &str,
    ns: &str,
    token: &str,
    last_id: Option<&str>,
    seen: Arc<Mutex<String>>,
) -> tokio::task::JoinHandle<()> {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let resume = last_id
        .map(|id| format!("Last-Event-ID: {id}\r\n"))
        .unwrap_or_default();
    stream
        .write_all(
            format!(
                "GET /api/v1/namespaces/{ns}/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nAccept: text/event-stream\r\n{resume}\r\n"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    tokio::spawn(async move {
        let mut chunk = [0u8; 8192];
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    let mut seen = seen.lock().unwrap();
                    seen.push_str(&String::from_utf8_lossy(&chunk[..n]));
                    // The last chunk of the chunked body: the stream ended (the connection
                    // itself may stay open for another request).
                    if seen.ends_with("\r\n0\r\n\r\n") {
                        return;
                    }
                }
            }
        }
    })
}

/// The ids of the SSE events in `text`, in order.
fn event_ids(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("id: ").or_else(|| l.strip_prefix("id:")))
        .map(|id| id.trim().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_components_ride_through_an_apiserver_restart() {
    let Some(cluster) = TestCluster::real().await else {
        return;
    };
    let _velero_store = support::start_velero(&cluster).await;
    let ns = cluster.unique_name("restart-alice", None);
    cluster.tenant_namespace("alice", &ns).await;
    let alice = cluster.user("alice");
    let token = cluster.user_token("alice");

    let dir = tempfile::tempdir().unwrap();
    // The gateway reads the history (manifests included) the controller writes.
    let (mut controller, mut gateway, addr) =
        nac_process::controller_and_gateway(&cluster, dir.path()).await;

    // Before: a finished backup, seen through the gateway and on the stream.
    let backups = Api::<NonAdminBackup>::namespaced(alice.clone(), &ns);
    backups
        .create(
            &PostParams::default(),
            &support::nab_with("before", json!({})),
        )
        .await
        .unwrap();
    eventually("the first backup to finish", 60, || async {
        support::nab_finished(&Api::namespaced(alice.clone(), &ns), "before")
            .await
            .then_some(())
    })
    .await;
    let seen = Arc::new(Mutex::new(String::new()));
    let first_stream = open_stream(&addr, &ns, &token, None, seen.clone()).await;
    eventually("the stream's ready event", 10, || async {
        seen.lock().unwrap().contains("event: ready").then_some(())
    })
    .await;
    let list_path = format!("/api/v1/namespaces/{ns}/backups");
    let (status, _, body) = support::bearer_get(&addr, &list_path, &token).await;
    assert_eq!(status, 200, "{body}");

    // The restart, while the tenant keeps asking the gateway.
    let polling = Arc::new(Mutex::new(Vec::<(u16, String, String)>::new()));
    let stop_polling = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let poller = {
        let (addr, path, token) = (addr.clone(), list_path.clone(), token.clone());
        let (polling, stop) = (polling.clone(), stop_polling.clone());
        tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let answer = tokio::time::timeout(
                    Duration::from_secs(10),
                    support::bearer_get(&addr, &path, &token),
                )
                .await
                .unwrap_or((0, "no answer within 10 s".into(), String::new()));
                polling.lock().unwrap().push(answer);
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    };
    let outage = cluster.restart_apiserver(DOWN).await.unwrap();
    let back = Instant::now();

    // After: a new backup is made and finished without restarting anything.
    backups
        .create(
            &PostParams::default(),
            &support::nab_with("after", json!({})),
        )
        .await
        .unwrap();
    eventually(
        "the backup made after the restart to finish",
        120,
        || async {
            support::nab_finished(&Api::namespaced(alice.clone(), &ns), "after")
                .await
                .then_some(())
        },
    )
    .await;
    let controller_recovered = back.elapsed();
    eventually(
        "the gateway to list the new backup as finished",
        60,
        || async {
            let (status, _, body) = support::bearer_get(&addr, &list_path, &token).await;
            let listed: Value = serde_json::from_str(&body).unwrap_or_default();
            let done = listed["items"].as_array().is_some_and(|items| {
                items.iter().any(|i| {
                    i.pointer("/metadata/name") == Some(&json!("after"))
                        && i.pointer("/status/veleroBackup/status/phase")
                            == Some(&json!("Completed"))
                })
            });
            (status == 200 && done).then_some(())
        },
    )
    .await;
    let gateway_recovered = back.elapsed();
    stop_polling.store(true, std::sync::atomic::Ordering::Relaxed);
    poller.await.unwrap();

    let answers = polling.lock().unwrap().clone();
    let mut served = 0;
    let mut unavailable = 0;
    for (status, head, body) in &answers {
        match status {
            200 => served += 1,
            503 => {
                unavailable += 1;
                let head = head.to_ascii_lowercase();
                assert!(head.contains("retry-after:"), "{head}");
                assert!(head.contains("application/problem+json"), "{head}");
                let problem: Value = serde_json::from_str(body).unwrap();
                assert_eq!(problem["status"], 503, "{body}");
            }
            other => panic!("the gateway answered {other} during the restart: {head}\n{body}"),
        }
    }

    // The stream: still open with the new backup's changes, or resumed after the last id seen.
    let stream_text = seen.lock().unwrap().clone();
    assert!(!stream_text.contains("event: forbidden"), "{stream_text}");
    assert!(
        !stream_text.contains("event: unauthenticated"),
        "{stream_text}"
    );
    let resumed = if first_stream.is_finished() {
        // Ended because access could not be re-checked for a whole TTL: the client is told
        // to come back, not that it lost access.
        assert!(stream_text.contains("event: unavailable"), "{stream_text}");
        assert!(stream_text.contains("retry:"), "{stream_text}");
        let last = event_ids(&stream_text).last().cloned().unwrap();
        let again = Arc::new(Mutex::new(String::new()));
        let _second = open_stream(&addr, &ns, &token, Some(&last), again.clone()).await;
        let text = eventually("the resumed stream to carry the new backup", 30, || async {
            let text = again.lock().unwrap().clone();
            text.contains("\"after\"").then_some(text)
        })
        .await;
        assert!(!text.contains("event: reset"), "{text}");
        true
    } else {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !seen.lock().unwrap().contains("\"after\"") {
            assert!(
                Instant::now() < deadline,
                "the open stream did not carry the new backup; it got:\n{}\nthe gateway's log:\n{}",
                seen.lock().unwrap(),
                gateway.log_text()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    };

    println!(
        "kube-apiserver down {:.1} s (stop + {} s + start to ready); after it was back: the controller and Velero finished a new backup in {:.2} s, the gateway listed it in {:.2} s; during the restart the gateway answered {served} list requests from its caches and {unavailable} with 503 + Retry-After (none otherwise); the SSE stream {}",
        outage.as_secs_f64(),
        DOWN.as_secs(),
        controller_recovered.as_secs_f64(),
        gateway_recovered.as_secs_f64(),
        if resumed {
            "ended and, resumed with Last-Event-ID, delivered the new backup without a reset"
        } else {
            "stayed open and delivered the new backup"
        }
    );
    nac_process::stop_cleanly(&mut [(&mut controller, "controller"), (&mut gateway, "gateway")])
        .await;
}
