//! Whole-system figure for the NonAdminBackup controller: N NonAdminBackups across M namespaces
//! created by their tenants and reconciled to Created (finalizer, Velero Backup made, status
//! mirrored) by NAC's controllers running as their service account, first on the real
//! kube-apiserver (`KUBEBUILDER_ASSETS`, NAC installed with `deploy/`'s RBAC), then on the
//! in-process emulator as a second column. Velero is played by the benchmark: once every NAB is
//! Created it completes each Velero Backup (one status write), and NAC mirrors that onto the NABs.
//!
//! The floor, measured in the same run on the same server after the controllers have stopped:
//! the benchmark itself making the same objects and writes directly (per NAB: the NAB's create,
//! its finalizer, the Velero Backup's create, the Event and two status writes), with as many in
//! flight as the tenants had; then, for completion, Velero's status write and one NAB status
//! write per NAB. The ratios are NAC's time over the floor's: what NAC costs beyond the writes
//! it must make is its reads and its own pace.
//!
//! The controllers' API calls are counted on the client side (every request their client sends,
//! by verb and resource; watches apart), so the real server's figures are the controllers' own.
//!
//! `--quick`: 1,000 NABs over 100 namespaces; default: 10,000 over 1,000. Figures are printed,
//! never asserted on. Without a control plane the real column is skipped with one line (under
//! `CI=true` that is a failure, as in the test suites).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use nac::api::client_identity::Component;
use nac::api::nonadmin::NonAdminBackup;
use nac::api::velero::Backup;
use nac::controllers::{self, Context};
use nac::sim::apiserver::EmulatorConfig;
use nac::sim::demo::{CONTROLLER_SERVICE_ACCOUNT, OADP_NAMESPACE};
use rustls::pki_types::pem::PemObject;
use serde_json::json;
use support::cluster::{Server, TestCluster};

const CONTROLLER_USER: &str = "system:serviceaccount:openshift-adp:nac-controller";
/// Requests in flight from the tenants (and from the floor).
const IN_FLIGHT: usize = 16;

/// The controllers' requests by (verb, resource), counted as their client sends them.
#[derive(Clone, Default)]
struct Calls(Arc<Mutex<BTreeMap<(String, String), usize>>>);

impl Calls {
    fn record(&self, method: &http::Method, uri: &http::Uri) {
        let (verb, resource) = classify(method, uri);
        if let Ok(mut calls) = self.0.lock() {
            *calls.entry((verb.to_string(), resource)).or_insert(0) += 1;
        }
    }

    fn snapshot(&self) -> BTreeMap<(String, String), usize> {
        self.0.lock().map(|c| c.clone()).unwrap_or_default()
    }
}

/// A request's verb as the API server's audit log names it, and its resource
/// (`nonadminbackups`, `nonadminbackups/status`, `backups` …).
fn classify(method: &http::Method, uri: &http::Uri) -> (&'static str, String) {
    let segments: Vec<&str> = uri.path().trim_matches('/').split('/').collect();
    // /api/v1/... or /apis/group/version/...
    let rest = match segments.first() {
        Some(&"api") => &segments[2.min(segments.len())..],
        _ => &segments[3.min(segments.len())..],
    };
    let rest = match rest {
        ["namespaces", _ns, tail @ ..] if !tail.is_empty() => tail,
        other => other,
    };
    let (resource, is_item) = match rest {
        [resource] => (resource.to_string(), false),
        [resource, _name] => (resource.to_string(), true),
        [resource, _name, sub, ..] => (format!("{resource}/{sub}"), true),
        [] => (String::new(), false),
    };
    let query = uri.query().unwrap_or_default();
    let watch = query
        .split('&')
        .any(|p| p == "watch=true" || p == "watch=1");
    let verb = match *method {
        http::Method::GET if watch => "watch",
        http::Method::GET if is_item => "get",
        http::Method::GET => "list",
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::PATCH => "patch",
        http::Method::DELETE => "delete",
        _ => "other",
    };
    (verb, resource)
}

/// The controllers' client: as NAC builds its own (the controller's identity), plus counting.
fn counted_client(cluster: &TestCluster, token: &str, calls: &Calls) -> kube::Client {
    let (url, ca) = cluster
        .real_endpoint()
        .expect("client-side counting is for the real server");
    let mut config = kube::Config::new(url.parse().unwrap());
    config.root_cert = Some(
        rustls::pki_types::CertificateDer::pem_slice_iter(ca.as_bytes())
            .map(|c| c.unwrap().to_vec())
            .collect(),
    );
    config.auth_info.token = Some(token.to_string().into());
    config.read_timeout = Some(Duration::from_secs(60));
    let identity = Component::Controller.identity();
    let calls = calls.clone();
    kube::client::ClientBuilder::try_from(config)
        .unwrap()
        .with_layer(&tower::util::MapRequestLayer::new(
            move |request: http::Request<kube::client::Body>| {
                calls.record(request.method(), request.uri());
                identity.apply(request)
            },
        ))
        .build()
}

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

/// NABs seen Created, and seen with their Velero Backup Completed, from a watch (listing 10k
/// objects again and again would load the server under test).
#[derive(Clone, Default)]
struct Progress {
    created: Arc<Mutex<HashSet<String>>>,
    completed: Arc<Mutex<HashSet<String>>>,
}

impl Progress {
    fn count(set: &Mutex<HashSet<String>>, prefix: &str) -> usize {
        set.lock()
            .unwrap()
            .iter()
            .filter(|k| k.starts_with(prefix))
            .count()
    }
}

fn watch_progress(admin: &kube::Client) -> Progress {
    let progress = Progress::default();
    let seen = progress.clone();
    let api: Api<NonAdminBackup> = Api::all(admin.clone());
    tokio::spawn(async move {
        let mut events = watcher::watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        while let Ok(Some(event)) = events.try_next().await {
            let object = match event {
                watcher::Event::Apply(o) | watcher::Event::InitApply(o) => o,
                _ => continue,
            };
            let value = serde_json::to_value(&object).unwrap();
            let key = format!(
                "{}/{}",
                object.metadata.namespace.clone().unwrap_or_default(),
                object.metadata.name.clone().unwrap_or_default()
            );
            if value.pointer("/status/phase").and_then(|v| v.as_str()) == Some("Created") {
                seen.created.lock().unwrap().insert(key.clone());
            }
            if value
                .pointer("/status/veleroBackup/status/phase")
                .and_then(|v| v.as_str())
                == Some("Completed")
            {
                seen.completed.lock().unwrap().insert(key);
            }
        }
    });
    progress
}

/// Velero's part, played by the benchmark: each named Velero Backup to Completed (one status
/// write each, `IN_FLIGHT` at a time).
async fn complete_velero_backups(admin: &kube::Client, names: Vec<String>) {
    let backups: Api<Backup> = Api::namespaced(admin.clone(), OADP_NAMESPACE);
    stream::iter(names)
        .map(|name| {
            let backups = backups.clone();
            async move {
                let status = json!({"status": {
                    "phase": "Completed", "version": 1, "formatVersion": "1.1.0",
                    "startTimestamp": "2026-11-27T00:00:00Z",
                    "completionTimestamp": "2026-11-27T00:00:05Z",
                    "expiration": "2026-12-27T00:00:00Z",
                    "progress": {"totalItems": 12, "itemsBackedUp": 12}}});
                // Velero's CRDs have no status subresource: Velero writes the whole object.
                backups
                    .patch(&name, &PatchParams::default(), &Patch::Merge(status))
                    .await
                    .unwrap();
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<_>>()
        .await;
}

/// The Velero Backups in the OADP namespace that the floor made (`floor-…`) or, with
/// `floor == false`, the controllers made.
async fn velero_backup_names(admin: &kube::Client, floor: bool) -> Vec<String> {
    let backups: Api<Backup> = Api::namespaced(admin.clone(), OADP_NAMESPACE);
    backups
        .list_metadata(&kube::api::ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|b| b.metadata.name)
        .filter(|name| name.starts_with("floor-") == floor)
        .collect()
}

/// Waits until `count()` reaches `total`.
async fn until_all(what: &str, total: usize, count: impl Fn() -> usize) {
    let deadline = Instant::now() + Duration::from_secs(1800);
    loop {
        let done = count();
        if done >= total {
            return;
        }
        assert!(Instant::now() < deadline, "only {done} of {total} {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Where the controllers' calls are counted: client-side on the real server, from the audit
/// log on the emulator.
struct CallCounter<'a> {
    cluster: &'a TestCluster,
    calls: Calls,
}

/// A point to count the controllers' calls from.
struct Mark {
    calls: BTreeMap<(String, String), usize>,
    audit: usize,
    conflicts: u64,
}

/// The NAB controller's writes refused with 409 Conflict (from its own counters: a write
/// decided on a cached copy that was behind), listed apart from the calls as this pseudo-verb.
const REFUSED: &str = "refused";

impl CallCounter<'_> {
    fn mark(&self) -> Mark {
        Mark {
            calls: self.calls.snapshot(),
            audit: self
                .cluster
                .emulator_server()
                .map_or(0, |s| s.audit_entries().len()),
            conflicts: nab_conflicts(),
        }
    }

    /// The controllers' calls since `mark`, by (verb, resource).
    fn since(&self, mark: &Mark) -> BTreeMap<(String, String), usize> {
        let mut breakdown = BTreeMap::new();
        let refused = nab_conflicts().saturating_sub(mark.conflicts);
        if refused > 0 {
            breakdown.insert(
                (
                    REFUSED.to_string(),
                    "nonadminbackups (409, decided again)".to_string(),
                ),
                refused as usize,
            );
        }
        match self.cluster.emulator_server() {
            Some(server) => {
                for e in &server.audit_entries()[mark.audit..] {
                    if e.user == CONTROLLER_USER {
                        // The audit log names `group/resource` (`/events` for the core group).
                        let resource = match e.resource.split_once('/') {
                            Some((group, rest)) if group.is_empty() || group.contains('.') => rest,
                            _ => e.resource.as_str(),
                        };
                        *breakdown
                            .entry((e.verb.clone(), resource.to_string()))
                            .or_insert(0) += 1;
                    }
                }
            }
            None => {
                for (key, n) in self.calls.snapshot() {
                    let n = n - mark.calls.get(&key).copied().unwrap_or(0);
                    if n > 0 {
                        breakdown.insert(key, n);
                    }
                }
            }
        }
        breakdown
    }
}

fn nab_conflicts() -> u64 {
    nac::controllers::health::counters().conflicts_of("nonadminbackup")
}

fn per_nab(
    breakdown: &BTreeMap<(String, String), usize>,
    total: usize,
    verbs: &[&str],
    events: bool,
) -> f64 {
    breakdown
        .iter()
        .filter(|((verb, resource), _)| {
            verbs.contains(&verb.as_str()) && (resource == "events") == events
        })
        .map(|(_, n)| *n)
        .sum::<usize>() as f64
        / total as f64
}

fn print_calls(title: &str, breakdown: &BTreeMap<(String, String), usize>, total: usize) {
    let writes = per_nab(
        breakdown,
        total,
        &["create", "update", "patch", "delete"],
        false,
    );
    let refused = per_nab(breakdown, total, &[REFUSED], false);
    println!(
        "{:<56} {:>6.2} reads, {:.2} writes (+ {:.2} Events); {:.2} took effect, {:.3} refused with 409",
        title,
        per_nab(breakdown, total, &["get", "list"], false),
        writes,
        per_nab(breakdown, total, &["create", "update", "patch"], true),
        writes - refused,
        refused,
    );
    for ((verb, resource), n) in breakdown {
        let per_nab = *n as f64 / total as f64;
        if verb != "watch" && per_nab >= 0.005 {
            println!("    {verb:<7} {resource:<40} {per_nab:>8.3}");
        }
    }
}

/// The floor: per NAB, the writes NAC makes for it (its finalizer, a Velero Backup's create,
/// an Event and two status writes) and the tenant's create, made directly by the benchmark
/// (`IN_FLIGHT` NABs at a time).
async fn floor(admin: &kube::Client, namespaces: &[String], total: usize) -> Duration {
    let started = Instant::now();
    stream::iter(0..total)
        .map(|i| {
            let admin = admin.clone();
            let ns = namespaces[i % namespaces.len()].clone();
            async move {
                let nabs: Api<NonAdminBackup> = Api::namespaced(admin.clone(), &ns);
                let name = format!("nab-{i:05}");
                nabs.create(&PostParams::default(), &nab_named(&name))
                    .await
                    .unwrap();
                let params = PatchParams::default();
                nabs.patch(
                    &name,
                    &params,
                    &Patch::Merge(json!({"metadata": {"finalizers": ["nonadminbackup.oadp.openshift.io/finalizer"]}})),
                )
                .await
                .unwrap();
                let backups: Api<Backup> = Api::namespaced(admin.clone(), OADP_NAMESPACE);
                let backup: Backup = serde_json::from_value(json!({
                    "apiVersion": "velero.io/v1", "kind": "Backup",
                    "metadata": {"name": format!("floor-{ns}-{i:05}"), "labels": {
                        "openshift.io/oadp": "True", "openshift.io/oadp-nab-origin-name": name}},
                    "spec": {"includedNamespaces": [ns]}
                }))
                .unwrap();
                backups
                    .create(&PostParams::default(), &backup)
                    .await
                    .unwrap();
                // The Event the controller records on the NAB (BackupAccepted and the like).
                let events: Api<k8s_openapi::api::core::v1::Event> =
                    Api::namespaced(admin.clone(), &ns);
                let event: k8s_openapi::api::core::v1::Event = serde_json::from_value(json!({
                    "metadata": {"name": format!("{name}.created")},
                    "involvedObject": {"apiVersion": "oadp.openshift.io/v1alpha1",
                        "kind": "NonAdminBackup", "namespace": ns, "name": name},
                    "reason": "BackupCreated", "message": "Velero Backup created",
                    "type": "Normal", "source": {"component": "nac-controller"},
                    "firstTimestamp": "2026-11-27T00:00:00Z", "lastTimestamp": "2026-11-27T00:00:00Z",
                    "count": 1
                }))
                .unwrap();
                events.create(&PostParams::default(), &event).await.unwrap();
                for phase in ["New", "Created"] {
                    nabs.patch_status(
                        &name,
                        &params,
                        &Patch::Merge(json!({"status": {"phase": phase, "conditions": [{
                            "type": "Accepted", "status": "True", "reason": "BackupAccepted",
                            "message": "backup accepted", "lastTransitionTime": "2026-11-27T00:00:00Z"}]}})),
                    )
                    .await
                    .unwrap();
                }
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<_>>()
        .await;
    started.elapsed()
}

async fn run(cluster: TestCluster, total: usize, namespace_count: usize) {
    let admin = cluster.admin();
    let prefix = cluster.unique_name("scale", None);
    let controller_namespaces: Vec<String> = (0..namespace_count)
        .map(|i| format!("{prefix}-c{i:04}"))
        .collect();
    let floor_namespaces: Vec<String> = (0..namespace_count)
        .map(|i| format!("{prefix}-f{i:04}"))
        .collect();
    create_namespaces(&admin, &controller_namespaces).await;
    create_namespaces(&admin, &floor_namespaces).await;

    let token = cluster
        .sa_token(OADP_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT)
        .await;
    let counter = CallCounter {
        cluster: &cluster,
        calls: Calls::default(),
    };
    let client = match cluster.server {
        Server::Real => counted_client(&cluster, &token, &counter.calls),
        Server::Emulator => cluster.client(&token),
    };
    let context = Arc::new(Context::new(client, OADP_NAMESPACE));
    let controllers = tokio::spawn(controllers::run(context.clone()));
    let leading = controllers::leader::leading_flag();
    let waited = Instant::now();
    while !leading.load(std::sync::atomic::Ordering::SeqCst) {
        assert!(waited.elapsed() < Duration::from_secs(60), "never led");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let progress = watch_progress(&admin);
    let prefix_c = format!("{prefix}-c");

    // 1. The tenants create the NABs (IN_FLIGHT at a time); then until every one is Created.
    let mark = counter.mark();
    let started = Instant::now();
    stream::iter(0..total)
        .map(|i| {
            let admin = admin.clone();
            let ns = controller_namespaces[i % namespace_count].clone();
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
    let creates = started.elapsed();
    until_all("reached Created", total, || {
        Progress::count(&progress.created, &prefix_c)
    })
    .await;
    let reconciled = started.elapsed();
    let to_created = counter.since(&mark);

    // 2. Velero (the benchmark) completes every backup; until every NAB shows it.
    let mark = counter.mark();
    let names = velero_backup_names(&admin, false).await;
    assert_eq!(names.len(), total, "one Velero Backup per NAB");
    let completing = Instant::now();
    complete_velero_backups(&admin, names).await;
    until_all("showed their backup Completed", total, || {
        Progress::count(&progress.completed, &prefix_c)
    })
    .await;
    let completed = completing.elapsed();
    let to_completed = counter.since(&mark);
    context.shutdown.trigger();
    let _ = tokio::time::timeout(Duration::from_secs(30), controllers).await;

    // The floors, with the controllers stopped.
    let floor_created = floor(&admin, &floor_namespaces, total).await;
    let floor_completing = Instant::now();
    complete_velero_backups(&admin, velero_backup_names(&admin, true).await).await;
    stream::iter(0..total)
        .map(|i| {
            let nabs: Api<NonAdminBackup> =
                Api::namespaced(admin.clone(), &floor_namespaces[i % namespace_count]);
            async move {
                let status =
                    json!({"status": {"veleroBackup": {"status": {"phase": "Completed"}}}});
                nabs.patch_status(
                    &format!("nab-{i:05}"),
                    &PatchParams::default(),
                    &Patch::Merge(status),
                )
                .await
                .unwrap();
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<_>>()
        .await;
    let floor_completed = floor_completing.elapsed();

    println!();
    println!(
        "{} — {total} NABs across {namespace_count} namespaces, {IN_FLIGHT} requests in flight",
        cluster.server
    );
    println!("{:<56} {:>10} {:>8}", "measure", "value", "ratio");
    let row = |label: &str, value: Duration, floor: Duration| {
        println!(
            "{label:<56} {:>8.2} s {:>7.2}x",
            value.as_secs_f64(),
            value.as_secs_f64() / floor.as_secs_f64()
        );
    };
    row(
        "to Created, floor (the same writes, made directly)",
        floor_created,
        floor_created,
    );
    row("tenants' creates alone", creates, floor_created);
    row(
        "all NABs Created by NAC, from the first create",
        reconciled,
        floor_created,
    );
    row(
        "to Completed, floor (Velero's writes + 1 NAB status each)",
        floor_completed,
        floor_completed,
    );
    row(
        "all NABs show Completed, from Velero's first write",
        completed,
        floor_completed,
    );
    println!(
        "{:<56} {:>10.0}",
        "NABs reconciled to Created per second",
        total as f64 / reconciled.as_secs_f64()
    );
    println!(
        "controller API calls per NAB (watches apart; counted on its client on the real server):"
    );
    print_calls("  creation to Created", &to_created, total);
    print_calls(
        "  Velero Backup Completed to the NAB showing it",
        &to_completed,
        total,
    );
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
            "NonAdminBackup controller at scale ({}): to Created, against the floor of the same writes",
            if quick { "quick" } else { "full" }
        );
        if let Some(cluster) = TestCluster::real().await {
            run(cluster, total, namespaces).await;
        }
        let emulator = TestCluster::emulator_with(EmulatorConfig {
            history_capacity: 400_000,
            audit_capacity: 2_000_000,
            ..EmulatorConfig::default()
        })
        .await;
        run(emulator, total, namespaces).await;
    });
}
