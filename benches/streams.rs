//! Footprint and live streams of the real `nac controller` and `nac gateway` processes (each
//! started as a pod runs it: its own process, the kubeconfig of its own service account) on the
//! real kube-apiserver (`KUBEBUILDER_ASSETS`, NAC installed with `deploy/`'s RBAC).
//!
//! - Footprint: resident memory (`VmRSS`, and the peak `VmHWM`, from `/proc/<pid>/status`) and
//!   start-up time (spawn → `/readyz` 200) of a controller and of a gateway with N
//!   NonAdminBackups (and the controller's Velero Backup of each) in their caches: the
//!   benchmark creates the namespaces and NABs as the admin (16 requests in flight) while a
//!   controller process reconciles them to Created (counted from one watch, never re-listed);
//!   that controller's RSS is taken once all are Created; it is then stopped (SIGTERM) and a
//!   second one started on the full cluster (restart: to `/readyz`, and to every NAB reconciled
//!   once, from its `/metrics`); then a gateway is started (ready = its watch caches synced).
//!   Baseline, in the same run on the same cluster before the fill: the same processes started
//!   empty; the ratio is full / empty.
//! - Streams: on that gateway, 1,000 Server-Sent Event streams
//!   (`/api/v1/namespaces/{ns}/events`) and 1,000 GraphQL subscriptions over WebSocket
//!   (`graphql-transport-ws`, `changes(namespaces: [ns])`), from four tenant users bound to `ns`.
//!   Memory per stream = (gateway RSS with them open − before) / streams, for each kind. Then
//!   35 s idle (past the gateway's 30 s token and access caches): its CPU, and the TokenReviews
//!   and SubjectAccessReviews the streams' re-checks send (from its `/metrics`). Latency: K = 20
//!   label patches of one NAB of `ns` by the admin, 100 ms apart; from each patch's answer to
//!   each stream's receipt of that change, over every stream × change, with the gateway's CPU
//!   per delivered change; every stream must get every change (asserted: missing ones are
//!   counted). Baseline, in the same run: the admin's own watch of `ns`'s NABs on the
//!   kube-apiserver seeing the same changes; the ratios are taken from each patch's request
//!   (the watch often sees a change before the patch's answer is back).
//!
//! The gateway is started with its per-user rate limit and pre-authentication limit raised (the
//! benchmark says so): 2,000 streams opened from one address by four users would otherwise be
//! refused with 429 past the buckets' bursts. The benchmark's clients share the machine's cores
//! with the servers, as any client on the same host would.
//!
//! `cargo bench --bench streams`: 10,000 NABs over 1,000 namespaces; `-- --quick`: 1,000 over
//! 100. Figures are printed, never asserted on. Without a control plane (`KUBEBUILDER_ASSETS`
//! unset) the benchmark is skipped with one line (under `CI=true` that is a failure, as in the
//! test suites).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/nac_process.rs"]
mod nac_process;
#[path = "../tests/support/mod.rs"]
mod support;
#[path = "../tests/support/ws.rs"]
mod ws;

use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt, stream};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use nac::api::nonadmin::NonAdminBackup;
use nac::api::velero::Backup;
use nac::sim::demo::{CONTROLLER_SERVICE_ACCOUNT, GATEWAY_SERVICE_ACCOUNT, OADP_NAMESPACE};
use nac_process::{Nac, kubeconfig};
use serde_json::{Value, json};
use support::cluster::{Server, TestCluster};
use ws::{Frame, Ws};

/// Requests in flight while filling the cluster.
const IN_FLIGHT: usize = 16;
/// Streams opened at a time.
const OPENING: usize = 32;
/// Streams of each kind.
const STREAMS: usize = 1_000;
/// The tenants the streams belong to (round robin), each bound to `admin` in the namespace.
const STREAM_USERS: &[&str] = &["alice", "bob", "carol", "dave"];
/// Changes made while the streams are open, and the time between them.
const CHANGES: usize = 20;
const CHANGE_SPACING: Duration = Duration::from_millis(100);
/// The label each change sets (its value: the change's number).
const CHANGE_LABEL: &str = "bench.nac/change";
/// The label as it appears in an object's JSON (the receivers look for it in the raw text, so
/// that parsing thousands of copies does not slow the benchmark's own clients down).
const CHANGE_MARKER: &str = "\"bench.nac/change\":\"";
/// The gateway's limits for this benchmark, and the defaults they replace.
const GATEWAY_LIMITS: &[(&str, &str, &str)] = &[
    ("--rate-limit-burst", "1000000", "200"),
    ("--rate-limit-per-second", "1000000", "50"),
    ("--pre-auth-burst", "1000000", "30"),
    ("--pre-auth-per-second", "1000000", "5"),
    ("--max-streams-per-user", "1000000", "50"),
];
/// Let a process settle before its memory is read.
const SETTLE: Duration = Duration::from_secs(2);
/// Streams re-check access every 5 s: memory is read after one round of that.
const STREAM_SETTLE: Duration = Duration::from_secs(6);
/// How long all streams stay open, idle, before the changes: past the gateway's token and
/// access caches' 30 s TTL, so the streams' re-checks have to ask the API server again.
const IDLE_WINDOW: Duration = Duration::from_secs(35);
/// Linux's USER_HZ (clock ticks of `/proc/<pid>/stat`).
const TICKS_PER_SECOND: f64 = 100.0;

// ---------------------------------------------------------------------------------------------
// Processes and /proc
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy)]
struct Memory {
    rss_kib: u64,
    peak_kib: u64,
}

fn memory(pid: u32) -> Memory {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse().ok())
            .unwrap_or(0)
    };
    Memory {
        rss_kib: field("VmRSS:"),
        peak_kib: field("VmHWM:"),
    }
}

/// User plus system CPU time of `pid`, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command's closing parenthesis start at the 3rd (state); utime and stime
    // are the 14th and 15th.
    let fields: Vec<&str> = text[text.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// A `nac` process, the address it serves `/readyz` on, and how long it took to be ready.
struct Process {
    nac: Nac,
    addr: String,
    ready_after: Duration,
}

impl Process {
    fn pid(&self) -> u32 {
        self.nac.pid()
    }

    fn memory(&self) -> Memory {
        memory(self.pid())
    }

    /// SIGTERM, then its exit code and how long it took; an exit other than 0 prints the end of
    /// its log (the log goes with the benchmark's temporary directory).
    async fn stop(mut self) -> (Option<i32>, Duration) {
        self.nac.sigterm();
        let (code, took) = self.nac.exited(Duration::from_secs(30)).await;
        if code != Some(0) {
            let log = self.nac.log_text();
            let lines: Vec<&str> = log.lines().collect();
            eprintln!(
                "process {} exited {code:?} after SIGTERM; the last lines of its log:\n{}",
                self.pid(),
                lines[lines.len().saturating_sub(40)..].join("\n")
            );
        }
        (code, took)
    }
}

/// The address in the first `http://` word of `line`.
fn address_in(line: &str) -> String {
    line.split_whitespace()
        .find_map(|word| word.strip_prefix("http://"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .trim_end_matches('/')
        .to_string()
}

/// Polls `/readyz` until 200; how long since `started`.
async fn ready(nac: &Nac, addr: &str, started: Instant, limit: Duration) -> Duration {
    loop {
        let (status, _) = support::http_get(&format!("http://{addr}/readyz")).await;
        if status == 200 {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < limit,
            "not ready within {limit:?}; its log:\n{}",
            nac.log_text()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn start_controller(dir: &Path, config: &Path, name: &str) -> Process {
    let started = Instant::now();
    let mut nac = Nac::start(
        name,
        dir,
        &[
            "controller",
            "--kubeconfig",
            config.to_str().unwrap(),
            "--oadp-namespace",
            OADP_NAMESPACE,
            "--metrics-listen",
            "127.0.0.1:0",
            "--shutdown-grace-period",
            "10s",
        ],
        &[("POD_NAME", name.to_string())],
    );
    let lines = tokio::task::block_in_place(|| nac.first_lines(2));
    assert!(lines[1].contains("nac controller running"), "{lines:?}");
    let addr = address_in(&lines[0]);
    let ready_after = ready(&nac, &addr, started, Duration::from_secs(120)).await;
    Process {
        nac,
        addr,
        ready_after,
    }
}

async fn start_gateway(dir: &Path, config: &Path, name: &str) -> Process {
    let started = Instant::now();
    let mut args = vec![
        "gateway".to_string(),
        "--kubeconfig".into(),
        config.to_str().unwrap().into(),
        "--listen".into(),
        "127.0.0.1:0".into(),
        "--oadp-namespace".into(),
        OADP_NAMESPACE.into(),
        "--shutdown-grace-period".into(),
        "10s".into(),
    ];
    for (flag, value, _) in GATEWAY_LIMITS {
        args.push(flag.to_string());
        args.push(value.to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut nac = Nac::start(name, dir, &args, &[]);
    let line = tokio::task::block_in_place(|| nac.first_line());
    let addr = address_in(&line);
    let ready_after = ready(&nac, &addr, started, Duration::from_secs(600)).await;
    Process {
        nac,
        addr,
        ready_after,
    }
}

/// A counter of a process's `/metrics` (0 when absent).
async fn metric(addr: &str, series: &str) -> f64 {
    let (_, body) = support::http_get(&format!("http://{addr}/metrics")).await;
    String::from_utf8_lossy(&body)
        .lines()
        .find_map(|line| line.strip_prefix(series))
        .and_then(|rest| rest.trim().parse().ok())
        .unwrap_or(0.0)
}

// ---------------------------------------------------------------------------------------------
// The fill
// ---------------------------------------------------------------------------------------------

async fn create_namespaces(admin: &kube::Client, names: &[String]) {
    let api: Api<Namespace> = Api::all(admin.clone());
    stream::iter(names)
        .map(|name| {
            let api = api.clone();
            async move {
                let object: Namespace = serde_json::from_value(
                    json!({"metadata": {"name": name, "labels": {"nac-test/harness": "true"}}}),
                )
                .unwrap();
                api.create(&PostParams::default(), &object).await.unwrap();
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<_>>()
        .await;
}

fn nab_named(name: &str) -> NonAdminBackup {
    serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
        "metadata": {"name": name}, "spec": {"backupSpec": {}}
    }))
    .unwrap()
}

/// What one watch of every NAB (the admin's) has seen: the NABs Created, and how many changes.
#[derive(Default)]
struct NabWatch {
    created: Mutex<HashSet<String>>,
    changes: AtomicUsize,
    /// Changes by who made them: the newest managedFields entry's manager and subresource.
    writers: Mutex<BTreeMap<String, usize>>,
}

impl NabWatch {
    fn writers(&self) -> BTreeMap<String, usize> {
        self.writers.lock().unwrap().clone()
    }
}

/// Who made an object's latest change: its newest managedFields entry.
fn last_writer(object: &NonAdminBackup) -> String {
    object
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .max_by_key(|entry| entry.time.as_ref().map(|t| t.0))
        .map(|entry| {
            format!(
                "{} {}{}",
                entry.manager.as_deref().unwrap_or("?"),
                entry.operation.as_deref().unwrap_or("?"),
                entry
                    .subresource
                    .as_deref()
                    .map(|s| format!(" {s}"))
                    .unwrap_or_default()
            )
        })
        .unwrap_or_else(|| "unknown".into())
}

fn watch_nabs(admin: &kube::Client) -> Arc<NabWatch> {
    let seen = Arc::new(NabWatch::default());
    let sink = seen.clone();
    let api: Api<NonAdminBackup> = Api::all(admin.clone());
    tokio::spawn(async move {
        let mut events = watcher::watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        while let Ok(Some(event)) = events.try_next().await {
            let object = match event {
                watcher::Event::Apply(object) => {
                    sink.changes.fetch_add(1, Ordering::Relaxed);
                    *sink
                        .writers
                        .lock()
                        .unwrap()
                        .entry(last_writer(&object))
                        .or_insert(0) += 1;
                    object
                }
                watcher::Event::InitApply(object) => object,
                _ => continue,
            };
            let phase = object.status.as_ref().and_then(|s| s.phase);
            if phase.map(|p| p.as_str()) == Some("Created") {
                let key = format!(
                    "{}/{}",
                    object.metadata.namespace.clone().unwrap_or_default(),
                    object.metadata.name.clone().unwrap_or_default()
                );
                sink.created.lock().unwrap().insert(key);
            }
        }
    });
    seen
}

/// How many objects a list would return (one item asked for, the rest counted by the server).
async fn count<K>(api: Api<K>) -> usize
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let page = api.list(&ListParams::default().limit(1)).await.unwrap();
    page.items.len()
        + page
            .metadata
            .remaining_item_count
            .map_or(0, |n| n.max(0) as usize)
}

// ---------------------------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------------------------

/// When one receiver saw each change (first sight only).
struct Receipts {
    at: Mutex<Vec<Option<Instant>>>,
}

/// What all receivers of one kind have seen.
#[derive(Default)]
struct Tally {
    receipts: Mutex<Vec<Arc<Receipts>>>,
    delivered: AtomicUsize,
    /// Resets, errors and stream ends before the benchmark closed them.
    anomalies: Mutex<Vec<String>>,
}

impl Tally {
    fn receiver(&self) -> Arc<Receipts> {
        let receipts = Arc::new(Receipts {
            at: Mutex::new(vec![None; CHANGES]),
        });
        self.receipts.lock().unwrap().push(receipts.clone());
        receipts
    }

    /// Records change number `change` (an object's label) as seen at `at`.
    fn note(&self, receipts: &Receipts, change: Option<usize>, at: Instant) {
        if let Some(change) = change.filter(|c| *c < CHANGES) {
            let mut seen = receipts.at.lock().unwrap();
            if seen[change].is_none() {
                seen[change] = Some(at);
                self.delivered.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn anomaly(&self, what: String) {
        self.anomalies.lock().unwrap().push(what);
    }

    /// Milliseconds from each change's `reference` instant to each receipt (negative: seen
    /// before it), sorted, and how many receipts are missing.
    fn latencies(&self, reference: &[Instant]) -> (Vec<f64>, usize) {
        let mut latencies = Vec::new();
        let mut missing = 0;
        for receipts in self.receipts.lock().unwrap().iter() {
            for (change, seen) in receipts.at.lock().unwrap().iter().enumerate() {
                match seen {
                    Some(at) => latencies.push(signed_ms(*at, reference[change])),
                    None => missing += 1,
                }
            }
        }
        latencies.sort_by(f64::total_cmp);
        (latencies, missing)
    }
}

/// The change number in an object's JSON text (its label's value).
fn change_in(text: &str) -> Option<usize> {
    let start = text.find(CHANGE_MARKER)? + CHANGE_MARKER.len();
    let rest = &text[start..];
    rest[..rest.find('"')?].parse().ok()
}

fn signed_ms(at: Instant, since: Instant) -> f64 {
    match at.checked_duration_since(since) {
        Some(after) => after.as_secs_f64() * 1000.0,
        None => -(since - at).as_secs_f64() * 1000.0,
    }
}

/// One SSE stream: signals `ready` on its `ready` event, then records the changes it gets.
async fn sse_stream(
    addr: SocketAddr,
    path: String,
    token: String,
    tally: Arc<Tally>,
    ready: tokio::sync::oneshot::Sender<()>,
) {
    let receipts = tally.receiver();
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(connection);
    let request = http::Request::get(path.as_str())
        .header(http::header::HOST, addr.to_string())
        .header(http::header::ACCEPT, "text/event-stream")
        .header(http::header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Empty::<Bytes>::new())
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status();
    if !status.is_success() {
        let body = response.into_body().collect().await.unwrap().to_bytes();
        panic!("{path}: {status}: {}", String::from_utf8_lossy(&body));
    }
    let mut body = response.into_body();
    let mut buffer: Vec<u8> = Vec::new();
    let mut ready = Some(ready);
    while let Some(frame) = body.frame().await {
        let at = Instant::now();
        let Ok(frame) = frame else { break };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        buffer.extend_from_slice(&data);
        while let Some(end) = buffer.windows(2).position(|w| w == b"\n\n") {
            let raw: Vec<u8> = buffer.drain(..end + 2).collect();
            let text = String::from_utf8_lossy(&raw);
            let mut event = None;
            let mut payload = String::new();
            for line in text.lines() {
                if let Some(name) = line.strip_prefix("event:") {
                    event = Some(name.trim().to_string());
                } else if let Some(data) = line.strip_prefix("data:") {
                    payload.push_str(data.trim_start());
                }
            }
            match event.as_deref() {
                // Keep-alive comments.
                None => {}
                Some("ready") => {
                    if let Some(ready) = ready.take() {
                        let _ = ready.send(());
                    }
                }
                Some("ADDED" | "MODIFIED" | "DELETED") => {
                    tally.note(&receipts, change_in(&payload), at);
                }
                Some(other) => tally.anomaly(format!("SSE `{other}`: {payload}")),
            }
        }
    }
    tally.anomaly("an SSE stream ended".into());
    drop(sender);
}

/// One GraphQL subscription on its own WebSocket: signals `ready` on `READY`, then records the
/// changes it gets.
async fn subscription(
    addr: String,
    ns: String,
    token: String,
    tally: Arc<Tally>,
    ready: tokio::sync::oneshot::Sender<()>,
) {
    let receipts = tally.receiver();
    let mut ws = Ws::open(&addr, json!({"Authorization": format!("Bearer {token}")})).await;
    ws.subscribe(
        "changes",
        &format!("subscription {{ changes(namespaces: [\"{ns}\"]) {{ kind name object }} }}"),
    )
    .await;
    let mut ready = Some(ready);
    loop {
        match ws.frame().await {
            Some(Frame::Text(text)) => {
                let at = Instant::now();
                // Changes are told apart from the raw text (compact JSON); anything else is
                // parsed.
                if text.contains(r#""type":"next""#)
                    && [
                        r#""kind":"ADDED""#,
                        r#""kind":"MODIFIED""#,
                        r#""kind":"DELETED""#,
                    ]
                    .iter()
                    .any(|kind| text.contains(kind))
                {
                    tally.note(&receipts, change_in(&text), at);
                    continue;
                }
                let message: Value = serde_json::from_str(&text).unwrap();
                match message["type"].as_str() {
                    Some("next") if message["payload"]["data"]["changes"]["kind"] == "READY" => {
                        if let Some(ready) = ready.take() {
                            let _ = ready.send(());
                        }
                    }
                    Some("ping") => ws.send(json!({"type": "pong"})).await,
                    _ => tally.anomaly(format!("subscription: {text}")),
                }
            }
            Some(Frame::Close(code, reason)) => {
                tally.anomaly(format!("a WebSocket closed: {code} {reason}"));
                return;
            }
            None => {
                tally.anomaly("a WebSocket ended".into());
                return;
            }
        }
    }
}

/// Opens `count` receivers with `open(i, ready)` (`OPENING` at a time), each counted as open on
/// its `ready`; their tasks (to abort at the end) and how long opening took.
async fn open_all<F, Fut>(count: usize, open: F) -> (Vec<tokio::task::JoinHandle<()>>, Duration)
where
    F: Fn(usize, tokio::sync::oneshot::Sender<()>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let started = Instant::now();
    let tasks = stream::iter(0..count)
        .map(|i| {
            let (sender, receiver) = tokio::sync::oneshot::channel();
            let task = tokio::spawn(open(i, sender));
            async move {
                tokio::time::timeout(Duration::from_secs(60), receiver)
                    .await
                    .unwrap_or_else(|_| panic!("stream {i} not ready within 60 s"))
                    .unwrap_or_else(|_| panic!("stream {i} failed to open"));
                // (In an Option: an async block should not yield something awaitable.)
                Some(task)
            }
        })
        .buffer_unordered(OPENING)
        .collect::<Vec<_>>()
        .await;
    (tasks.into_iter().flatten().collect(), started.elapsed())
}

/// The admin's own watch of the NABs of `ns`, recording changes as the streams do; returns
/// once the watch is established.
async fn kube_watch(
    admin: &kube::Client,
    ns: &str,
    tally: Arc<Tally>,
) -> tokio::task::JoinHandle<()> {
    let api: Api<NonAdminBackup> = Api::namespaced(admin.clone(), ns);
    let (ready, established) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(async move {
        let receipts = tally.receiver();
        let mut ready = Some(ready);
        let mut events = watcher::watcher(api, watcher::Config::default()).boxed();
        while let Ok(Some(event)) = events.try_next().await {
            let at = Instant::now();
            match event {
                watcher::Event::InitDone => {
                    if let Some(ready) = ready.take() {
                        let _ = ready.send(());
                    }
                }
                watcher::Event::Apply(object) => {
                    let change = object
                        .metadata
                        .labels
                        .as_ref()
                        .and_then(|labels| labels.get(CHANGE_LABEL))
                        .and_then(|value| value.parse().ok());
                    tally.note(&receipts, change, at);
                }
                _ => {}
            }
        }
    });
    established.await.unwrap();
    task
}

// ---------------------------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------------------------

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn ratio(full: f64, empty: f64) -> String {
    if empty > 0.0 {
        format!("{:.2}x", full / empty)
    } else {
        "-".into()
    }
}

/// p50, p99 and max of sorted milliseconds.
fn quantiles(sorted: &[f64]) -> Option<(f64, f64, f64)> {
    let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
    (!sorted.is_empty()).then(|| (at(0.5), at(0.99), sorted[sorted.len() - 1]))
}

fn ms(value: f64) -> String {
    format!("{value:.1} ms")
}

// ---------------------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------------------

async fn run(cluster: TestCluster, total: usize, namespace_count: usize) {
    let admin = cluster.admin();
    let dir = tempfile::tempdir().unwrap();
    let controller_token = cluster
        .sa_token(OADP_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT)
        .await;
    let gateway_token = cluster
        .sa_token(OADP_NAMESPACE, GATEWAY_SERVICE_ACCOUNT)
        .await;
    let (controller_config, _) =
        kubeconfig(&cluster, dir.path(), "nac-controller", &controller_token).await;
    let (gateway_config, _) = kubeconfig(&cluster, dir.path(), "nac-gateway", &gateway_token).await;

    // Baseline: both processes on the cluster before the fill.
    let controller = start_controller(dir.path(), &controller_config, "controller-a").await;
    tokio::time::sleep(SETTLE).await;
    let controller_empty = controller.memory();
    let controller_empty_ready = controller.ready_after;
    let gateway = start_gateway(dir.path(), &gateway_config, "gateway-empty").await;
    tokio::time::sleep(SETTLE).await;
    let gateway_empty = gateway.memory();
    let gateway_empty_ready = gateway.ready_after;
    gateway.stop().await;

    // The fill, the first controller reconciling as the NABs come.
    let prefix = cluster.unique_name("streams", None);
    let namespaces: Vec<String> = (0..namespace_count)
        .map(|i| format!("{prefix}-{i:04}"))
        .collect();
    let nab_watch = watch_nabs(&admin);
    let started = Instant::now();
    create_namespaces(&admin, &namespaces).await;
    stream::iter(0..total)
        .map(|i| {
            let admin = admin.clone();
            let ns = namespaces[i % namespace_count].clone();
            async move {
                Api::<NonAdminBackup>::namespaced(admin, &ns)
                    .create(&PostParams::default(), &nab_named(&format!("nab-{i:05}")))
                    .await
                    .unwrap();
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<_>>()
        .await;
    let filled = started.elapsed();
    let mut reported = Instant::now();
    let all_created = loop {
        let done = nab_watch
            .created
            .lock()
            .unwrap()
            .iter()
            .filter(|k| k.starts_with(&prefix))
            .count();
        if done >= total {
            break started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(3600),
            "only {done} of {total} NABs reached Created; the controller's log:\n{}",
            controller.nac.log_text()
        );
        if reported.elapsed() > Duration::from_secs(30) {
            eprintln!(
                "  … {done} of {total} NABs Created after {}",
                secs(started.elapsed())
            );
            reported = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let changes_at_created = nab_watch.changes.load(Ordering::Relaxed);
    tokio::time::sleep(SETTLE).await;
    let controller_full = controller.memory();
    let velero_backups = count(Api::<Backup>::namespaced(admin.clone(), OADP_NAMESPACE)).await;

    // Restart on the full cluster.
    let (exit_code, stop_took) = controller.stop().await;
    let changes_before = nab_watch.changes.load(Ordering::Relaxed);
    let settling_writes = changes_before - changes_at_created;
    let writers_before = nab_watch.writers();
    let restarted = start_controller(dir.path(), &controller_config, "controller-b").await;
    let restart_spawned = Instant::now() - restarted.ready_after;
    let mut first_pass = None;
    while restart_spawned.elapsed() < Duration::from_secs(900) {
        let reconciles = metric(
            &restarted.addr,
            "nac_reconciles_total{controller=\"nonadminbackup\"}",
        )
        .await;
        if reconciles >= total as f64 {
            first_pass = Some(restart_spawned.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(SETTLE).await;
    let restarted_memory = restarted.memory();
    let restart_writes = nab_watch.changes.load(Ordering::Relaxed) - changes_before;
    let restart_writers: Vec<String> = nab_watch
        .writers()
        .into_iter()
        .filter_map(|(writer, n)| {
            let n = n - writers_before.get(&writer).copied().unwrap_or(0);
            (n > 0).then(|| format!("{n} by {writer}"))
        })
        .collect();

    // The gateway on the full cluster.
    let gateway = start_gateway(dir.path(), &gateway_config, "gateway-full").await;
    tokio::time::sleep(SETTLE).await;
    let gateway_full = gateway.memory();

    println!();
    println!(
        "{} — {total} NonAdminBackups over {namespace_count} namespaces; Velero Backups in {OADP_NAMESPACE}: {velero_backups}",
        cluster.server
    );
    println!(
        "fill: namespaces and NABs created in {} ({IN_FLIGHT} in flight, as the admin); all Created {} after the first create (the first controller reconciling meanwhile)",
        secs(filled),
        secs(all_created)
    );
    println!(
        "{:<58} {:>11} {:>11} {:>10}",
        "footprint", "empty", "full", "full/empty"
    );
    let row = |label: &str, empty: String, full: String, r: String| {
        println!("{label:<58} {empty:>11} {full:>11} {r:>10}");
    };
    row(
        "controller: spawn → /readyz 200 (full: the restart)",
        secs(controller_empty_ready),
        secs(restarted.ready_after),
        ratio(
            restarted.ready_after.as_secs_f64(),
            controller_empty_ready.as_secs_f64(),
        ),
    );
    row(
        "controller restart: spawn → every NAB reconciled once",
        "-".into(),
        first_pass.map_or_else(|| "not in 900 s".into(), secs),
        "-".into(),
    );
    row(
        "controller RSS (full: after reconciling all to Created)",
        mib(controller_empty.rss_kib),
        mib(controller_full.rss_kib),
        ratio(
            controller_full.rss_kib as f64,
            controller_empty.rss_kib as f64,
        ),
    );
    row(
        "controller peak RSS (VmHWM)",
        mib(controller_empty.peak_kib),
        mib(controller_full.peak_kib),
        ratio(
            controller_full.peak_kib as f64,
            controller_empty.peak_kib as f64,
        ),
    );
    row(
        "restarted controller RSS (after its first pass)",
        mib(controller_empty.rss_kib),
        mib(restarted_memory.rss_kib),
        ratio(
            restarted_memory.rss_kib as f64,
            controller_empty.rss_kib as f64,
        ),
    );
    row(
        "restarted controller peak RSS (VmHWM)",
        mib(controller_empty.peak_kib),
        mib(restarted_memory.peak_kib),
        ratio(
            restarted_memory.peak_kib as f64,
            controller_empty.peak_kib as f64,
        ),
    );
    row(
        "gateway: spawn → /readyz 200 (watch caches synced)",
        secs(gateway_empty_ready),
        secs(gateway.ready_after),
        ratio(
            gateway.ready_after.as_secs_f64(),
            gateway_empty_ready.as_secs_f64(),
        ),
    );
    row(
        "gateway RSS (2 s after ready)",
        mib(gateway_empty.rss_kib),
        mib(gateway_full.rss_kib),
        ratio(gateway_full.rss_kib as f64, gateway_empty.rss_kib as f64),
    );
    row(
        "gateway peak RSS (VmHWM)",
        mib(gateway_empty.peak_kib),
        mib(gateway_full.peak_kib),
        ratio(gateway_full.peak_kib as f64, gateway_empty.peak_kib as f64),
    );
    println!(
        "the first controller exited {} after SIGTERM (code {exit_code:?}); NAB changes in the {} between all Created and SIGTERM: {settling_writes}; while the second made its first pass (to {} after it): {restart_writes}{}",
        secs(stop_took),
        secs(SETTLE),
        secs(SETTLE),
        if restart_writers.is_empty() {
            String::new()
        } else {
            format!(" ({})", restart_writers.join(", "))
        }
    );

    streams(&cluster, &gateway, &namespaces[0], total / namespace_count).await;
    gateway.stop().await;
    restarted.stop().await;
}

async fn streams(cluster: &TestCluster, gateway: &Process, ns: &str, nabs_in_ns: usize) {
    let admin = cluster.admin();
    for user in STREAM_USERS {
        cluster.bind(ns, user, "User", "admin").await;
    }
    let addr: SocketAddr = gateway.addr.parse().unwrap();
    let tokens: Vec<String> = STREAM_USERS.iter().map(|u| cluster.user_token(u)).collect();
    // Each user's token and access known to the gateway before the memory is read.
    for token in &tokens {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .unwrap();
        tokio::spawn(connection);
        let request = http::Request::get(format!("/api/v1/namespaces/{ns}/backups?limit=1"))
            .header(http::header::HOST, gateway.addr.as_str())
            .header(http::header::AUTHORIZATION, format!("Bearer {token}"))
            .body(Empty::<Bytes>::new())
            .unwrap();
        let response = sender.send_request(request).await.unwrap();
        assert!(response.status().is_success(), "{}", response.status());
        let _ = response.into_body().collect().await;
    }
    let reviews = |addr: String| async move {
        (
            metric(&addr, "nac_gateway_tokenreviews_total").await,
            metric(&addr, "nac_gateway_subjectaccessreviews_total").await,
            metric(&addr, "nac_gateway_preauth_rate_limited_total").await,
        )
    };
    let reviews_before = reviews(gateway.addr.clone()).await;
    tokio::time::sleep(SETTLE).await;
    let before = gateway.memory();

    let sse = Arc::new(Tally::default());
    let path = format!("/api/v1/namespaces/{ns}/events");
    let (sse_tasks, sse_opening) = open_all(STREAMS, |i, ready| {
        sse_stream(
            addr,
            path.clone(),
            tokens[i % tokens.len()].clone(),
            sse.clone(),
            ready,
        )
    })
    .await;
    tokio::time::sleep(STREAM_SETTLE).await;
    let with_sse = gateway.memory();

    let subscriptions = Arc::new(Tally::default());
    let (ws_tasks, ws_opening) = open_all(STREAMS, |i, ready| {
        subscription(
            gateway.addr.clone(),
            ns.to_string(),
            tokens[i % tokens.len()].clone(),
            subscriptions.clone(),
            ready,
        )
    })
    .await;
    tokio::time::sleep(STREAM_SETTLE).await;
    let with_both = gateway.memory();
    let idle_reviews = reviews(gateway.addr.clone()).await;
    let idle_from = (Instant::now(), cpu_ticks(gateway.pid()));
    tokio::time::sleep(IDLE_WINDOW).await;
    let idle_cpu = (cpu_ticks(gateway.pid()) - idle_from.1) as f64
        / TICKS_PER_SECOND
        / idle_from.0.elapsed().as_secs_f64();
    let after_idle = gateway.memory();
    let changes_reviews = reviews(gateway.addr.clone()).await;

    // The changes, seen by every stream and by the admin's own watch.
    let kube = Arc::new(Tally::default());
    let kube_task = kube_watch(&admin, ns, kube.clone()).await;
    let nabs: Api<NonAdminBackup> = Api::namespaced(admin.clone(), ns);
    let target = "nab-00000";
    let me = std::process::id();
    let busy_from = (Instant::now(), cpu_ticks(gateway.pid()), cpu_ticks(me));
    let mut sent = Vec::new();
    let mut answered = Vec::new();
    for change in 0..CHANGES {
        let tick = tokio::time::Instant::now();
        sent.push(Instant::now());
        nabs.patch(
            target,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {CHANGE_LABEL: change.to_string()}}})),
        )
        .await
        .unwrap();
        answered.push(Instant::now());
        tokio::time::sleep_until(tick + CHANGE_SPACING).await;
    }
    let expected = 2 * STREAMS * CHANGES + CHANGES;
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let delivered = sse.delivered.load(Ordering::Relaxed)
            + subscriptions.delivered.load(Ordering::Relaxed)
            + kube.delivered.load(Ordering::Relaxed);
        if delivered >= expected {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let busy_seconds = busy_from.0.elapsed().as_secs_f64();
    let busy_gateway = (cpu_ticks(gateway.pid()) - busy_from.1) as f64 / TICKS_PER_SECOND;
    let busy_bench = (cpu_ticks(me) - busy_from.2) as f64 / TICKS_PER_SECOND;
    let reviews_after = reviews(gateway.addr.clone()).await;
    for task in sse_tasks.iter().chain(&ws_tasks) {
        task.abort();
    }
    kube_task.abort();

    println!();
    println!(
        "streams on the full gateway: namespace {ns} ({nabs_in_ns} NABs), users {} round robin; the gateway's limits raised for the run: {}; it has no limit of its own on open streams",
        STREAM_USERS.join(", "),
        GATEWAY_LIMITS
            .iter()
            .map(|(flag, value, default)| format!("{flag} {value} (default {default})"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "{:<46} {:>8} {:>11} {:>11} {:>11} {:>10}",
        "open streams", "streams", "opened in", "RSS before", "RSS after", "per stream"
    );
    for (label, opening, from, to) in [
        (
            "SSE /api/v1/namespaces/{ns}/events",
            sse_opening,
            before,
            with_sse,
        ),
        (
            "GraphQL subscriptions (WebSocket each)",
            ws_opening,
            with_sse,
            with_both,
        ),
    ] {
        println!(
            "{label:<46} {STREAMS:>8} {:>11} {:>11} {:>11} {:>10}",
            secs(opening),
            mib(from.rss_kib),
            mib(to.rss_kib),
            format!(
                "{:.1} KiB",
                (to.rss_kib as f64 - from.rss_kib as f64) / STREAMS as f64
            ),
        );
    }
    println!(
        "opening them: {:.0} TokenReviews, {:.0} SubjectAccessReviews, {:.0} pre-authentication refusals",
        idle_reviews.0 - reviews_before.0,
        idle_reviews.1 - reviews_before.1,
        idle_reviews.2 - reviews_before.2,
    );
    let (idle_tr, idle_sar, idle_refused) = (
        changes_reviews.0 - idle_reviews.0,
        changes_reviews.1 - idle_reviews.1,
        changes_reviews.2 - idle_reviews.2,
    );
    println!(
        "{} streams open and idle for {} (past the 30 s token and access caches' TTL): gateway CPU {:.1}% of a core, RSS {} → {}; {idle_tr:.0} TokenReviews, {idle_sar:.0} SubjectAccessReviews, {idle_refused:.0} pre-authentication refusals",
        2 * STREAMS,
        secs(IDLE_WINDOW),
        idle_cpu * 100.0,
        mib(with_both.rss_kib),
        mib(after_idle.rss_kib),
    );
    let deliveries = (2 * STREAMS * CHANGES) as f64;
    println!(
        "the changes ({} until every stream had every change): gateway CPU {:.2} s ({:.0} µs per delivered change), the benchmark's own clients {:.2} s; {:.0} TokenReviews, {:.0} SubjectAccessReviews; gateway peak RSS {}",
        secs(Duration::from_secs_f64(busy_seconds)),
        busy_gateway,
        busy_gateway / deliveries * 1e6,
        busy_bench,
        reviews_after.0 - changes_reviews.0,
        reviews_after.1 - changes_reviews.1,
        mib(gateway.memory().peak_kib)
    );
    println!(
        "{:<46} {:>8} {:>8} {:>10} {:>10} {:>10}",
        format!("change → event ({CHANGES} label patches, 100 ms apart)"),
        "seen",
        "missing",
        "p50",
        "p99",
        "max"
    );
    let receivers = [
        ("kube watch (the admin's own, 1 watch)", &kube),
        ("gateway SSE (1,000 streams)", &sse),
        ("gateway GraphQL subscriptions (1,000)", &subscriptions),
    ];
    for (label, tally) in receivers {
        let (latencies, missing) = tally.latencies(&answered);
        match quantiles(&latencies) {
            Some((p50, p99, max)) => println!(
                "{label:<46} {:>8} {missing:>8} {:>10} {:>10} {:>10}",
                latencies.len(),
                ms(p50),
                ms(p99),
                ms(max)
            ),
            None => println!("{label:<46} {:>8} {missing:>8}", 0),
        }
    }
    // Ratios from each patch's request instead of its answer: the kube watch often sees a
    // change before the patch's answer is back (a negative figure above).
    let from_request: Vec<_> = receivers
        .iter()
        .map(|(_, tally)| quantiles(&tally.latencies(&sent).0))
        .collect();
    if let Some(base) = from_request[0] {
        println!(
            "{:<46} {:>8} {:>8} {:>10} {:>10} {:>10}",
            "kube watch, from each patch's request",
            "",
            "",
            ms(base.0),
            ms(base.1),
            ms(base.2)
        );
        for (label, q) in [
            ("SSE / kube watch (from the request)", from_request[1]),
            (
                "subscriptions / kube watch (from the request)",
                from_request[2],
            ),
        ] {
            if let Some((p50, p99, max)) = q {
                println!(
                    "{label:<46} {:>8} {:>8} {:>9.1}x {:>9.1}x {:>9.1}x",
                    "",
                    "",
                    p50 / base.0,
                    p99 / base.1,
                    max / base.2
                );
            }
        }
    }
    let anomalies: Vec<String> = [&sse, &subscriptions]
        .iter()
        .flat_map(|t| t.anomalies.lock().unwrap().clone())
        .collect();
    println!(
        "stream anomalies (resets, errors, ends) while open: {}",
        anomalies.len()
    );
    for anomaly in anomalies.iter().take(5) {
        println!("  {}", anomaly.chars().take(300).collect::<String>());
    }
    let missing = tally_missing(&sse, &answered) + tally_missing(&subscriptions, &answered);
    assert_eq!(
        missing, 0,
        "{missing} stream deliveries missing: not every stream got every change"
    );
    assert!(anomalies.is_empty(), "streams reported {anomalies:?}");
}

fn tally_missing(tally: &Tally, answered: &[Instant]) -> usize {
    tally.latencies(answered).1
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (total, namespaces) = if quick { (1_000, 100) } else { (10_000, 1_000) };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        println!(
            "streams benchmark ({}): footprint of nac controller and nac gateway with {total} NonAdminBackups, and {STREAMS} SSE streams + {STREAMS} GraphQL subscriptions",
            if quick { "quick" } else { "full" }
        );
        if let Some(cluster) = TestCluster::real().await {
            assert_eq!(cluster.server, Server::Real);
            run(cluster, total, namespaces).await;
        }
    });
}
