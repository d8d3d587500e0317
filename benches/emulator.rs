//! Emulator benchmark: create/update throughput, list latency and watch fan-out of the in-process
//! Kubernetes API emulator, each figure with a ratio against a baseline measured in the same run.
//!
//! `cargo bench --bench emulator` runs the full set; `cargo bench --bench emulator -- --quick`
//! a small one for CI. Figures are printed, never asserted on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
    WatchEvent, WatchParams,
};
use nac::sim::apiserver::{ApiServer, EmulatorConfig};
use serde_json::json;
use tower::ServiceExt;

/// How much work one run does.
#[derive(Debug, Clone)]
struct Sizes {
    label: &'static str,
    /// Objects created (and then updated) per create/update measurement.
    objects: usize,
    /// Namespace sizes at which list latency is measured.
    list_sizes: Vec<usize>,
    /// Lists timed per size.
    list_reps: usize,
    /// Objects created while the watchers watch.
    watch_events: usize,
    /// Watcher counts.
    watchers: Vec<usize>,
    /// Concurrent writers in the concurrent create measurement.
    writers: usize,
}

impl Sizes {
    fn quick() -> Sizes {
        Sizes {
            label: "quick",
            objects: 500,
            list_sizes: vec![10, 100, 1000],
            list_reps: 20,
            watch_events: 200,
            watchers: vec![1, 10, 100],
            writers: 8,
        }
    }

    fn full() -> Sizes {
        Sizes {
            label: "full",
            objects: 5000,
            list_sizes: vec![10, 100, 1000, 10_000],
            list_reps: 50,
            watch_events: 1000,
            watchers: vec![1, 10, 100],
            writers: 8,
        }
    }
}

/// One printed figure.
struct Row {
    section: &'static str,
    what: String,
    n: String,
    value: f64,
    unit: &'static str,
    /// Figure this one is compared with (what, value); `None` for baselines.
    baseline: Option<(String, f64)>,
    note: String,
}

#[derive(Default)]
struct Report {
    rows: Vec<Row>,
}

impl Report {
    fn add(
        &mut self,
        section: &'static str,
        what: impl Into<String>,
        n: impl ToString,
        value: f64,
        unit: &'static str,
    ) {
        let what = what.into();
        eprintln!("  {what}: {value:.1} {unit}");
        self.rows.push(Row {
            section,
            what,
            n: n.to_string(),
            value,
            unit,
            baseline: None,
            note: String::new(),
        });
    }

    /// Adds a figure compared with the earlier row named `baseline`.
    fn add_vs(
        &mut self,
        section: &'static str,
        what: impl Into<String>,
        n: impl ToString,
        value: f64,
        unit: &'static str,
        baseline: &str,
    ) {
        let base = self
            .rows
            .iter()
            .find(|r| r.what == baseline)
            .map(|r| r.value)
            .unwrap_or(f64::NAN);
        self.add(section, what, n, value, unit);
        if let Some(last) = self.rows.last_mut() {
            last.baseline = Some((baseline.to_string(), base));
        }
    }

    fn note(&mut self, note: impl Into<String>) {
        if let Some(last) = self.rows.last_mut() {
            last.note = note.into();
        }
    }

    fn print(&self, sizes: &Sizes, total: Duration) {
        println!();
        println!(
            "NAC Kubernetes API emulator benchmark ({} run, in-process, {} objects, {} watch events, total {:.1}s)",
            sizes.label,
            sizes.objects,
            sizes.watch_events,
            total.as_secs_f64()
        );
        let what_w = self
            .rows
            .iter()
            .map(|r| r.what.len())
            .max()
            .unwrap_or(10)
            .max(11);
        let mut section = "";
        for row in &self.rows {
            if row.section != section {
                section = row.section;
                println!();
                println!("== {section}");
                println!(
                    "{:<what_w$}  {:>6}  {:>12}  {:<12}  ratio",
                    "measurement", "n", "value", "unit"
                );
            }
            let ratio = match &row.baseline {
                None => "baseline".to_string(),
                Some((name, base)) => format!("{:.2}x {name}", row.value / base),
            };
            let note = if row.note.is_empty() {
                String::new()
            } else {
                format!("  ({})", row.note)
            };
            println!(
                "{:<what_w$}  {:>6}  {:>12.1}  {:<12}  {ratio}{note}",
                row.what, row.n, row.value, row.unit
            );
        }
        println!();
        println!(
            "Ratios: throughput and latency figures divided by the named baseline from this run."
        );
    }
}

fn nab_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("oadp.openshift.io", "v1alpha1", "NonAdminBackup"),
        "nonadminbackups",
    )
}

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"bench": "yes"}},
        "data": {"key": "value", "other": "x".repeat(64)},
    }))
    .expect("config map")
}

fn nab(name: &str, namespace: &str) -> DynamicObject {
    let mut object = DynamicObject::new(name, &nab_resource());
    object.data = json!({
        "spec": {"backupSpec": {
            "includedNamespaces": [namespace],
            "includedResources": ["configmaps", "secrets"],
            "ttl": "24h0m0s",
            "snapshotVolumes": false,
            "labelSelector": {"matchLabels": {"app": "bench"}},
        }},
    });
    object
}

/// Everything the measurements share.
struct Bench {
    server: ApiServer,
    client: kube::Client,
    token: String,
}

impl Bench {
    async fn new() -> Bench {
        let server = ApiServer::new(EmulatorConfig {
            history_capacity: 200_000,
            ..EmulatorConfig::default()
        })
        .expect("start emulator");
        let token = server.admin_token();
        let client = server.client(&token);
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        for crd in nac::api::crds::nac_crds() {
            crds.create(&PostParams::default(), &crd)
                .await
                .expect("install CRD");
        }
        let bench = Bench {
            server,
            client,
            token,
        };
        // The NonAdminBackup resource must be served before it is used.
        bench.namespace("bench-probe").await;
        let probe: Api<DynamicObject> =
            Api::namespaced_with(bench.client.clone(), "bench-probe", &nab_resource());
        let deadline = Instant::now() + Duration::from_secs(30);
        while probe.list(&ListParams::default()).await.is_err() {
            assert!(
                Instant::now() < deadline,
                "NonAdminBackup CRD never became served"
            );
            tokio::task::yield_now().await;
        }
        bench
    }

    async fn namespace(&self, name: &str) {
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        let ns: Namespace =
            serde_json::from_value(json!({"metadata": {"name": name}})).expect("namespace");
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .expect("create namespace");
    }

    fn config_maps(&self, namespace: &str) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), namespace)
    }

    fn nabs(&self, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), namespace, &nab_resource())
    }

    /// Creates `count` objects by POSTing JSON straight to the router (no kube client).
    async fn raw_create(
        &self,
        path: &str,
        count: usize,
        body: impl Fn(usize) -> serde_json::Value,
    ) -> Duration {
        let router = self.server.router();
        let start = Instant::now();
        for i in 0..count {
            let request = http::Request::builder()
                .method("POST")
                .uri(path)
                .header("authorization", format!("Bearer {}", self.token))
                .header("content-type", "application/json")
                .header("accept", "application/json")
                .body(axum::body::Body::from(body(i).to_string()))
                .expect("request");
            let response = router
                .clone()
                .oneshot(request)
                .await
                .expect("router is infallible");
            let status = response.status();
            let bytes = response
                .into_body()
                .collect()
                .await
                .expect("body")
                .to_bytes();
            assert_eq!(
                status,
                http::StatusCode::CREATED,
                "{}",
                String::from_utf8_lossy(&bytes)
            );
        }
        start.elapsed()
    }
}

fn per_second(count: usize, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64()
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn creates(bench: &Bench, sizes: &Sizes, report: &mut Report) {
    const S: &str = "create throughput (sequential unless noted)";
    eprintln!("create throughput...");
    let n = sizes.objects;
    bench.namespace("raw-cm").await;
    bench.namespace("raw-nab").await;
    bench.namespace("bench-cm").await;
    bench.namespace("bench-nab").await;
    bench.namespace("bench-cm-concurrent").await;

    let elapsed = bench
        .raw_create("/api/v1/namespaces/raw-cm/configmaps", n, |i| {
            serde_json::to_value(config_map(&format!("cm-{i}"))).expect("json")
        })
        .await;
    report.add(
        S,
        "ConfigMap, raw router",
        n,
        per_second(n, elapsed),
        "objects/s",
    );

    let elapsed = bench
        .raw_create(
            "/apis/oadp.openshift.io/v1alpha1/namespaces/raw-nab/nonadminbackups",
            n,
            |i| {
                let mut v =
                    serde_json::to_value(nab(&format!("nab-{i}"), "raw-nab")).expect("json");
                v["metadata"]["namespace"] = json!("raw-nab");
                v
            },
        )
        .await;
    report.add_vs(
        S,
        "NonAdminBackup, raw router",
        n,
        per_second(n, elapsed),
        "objects/s",
        "ConfigMap, raw router",
    );
    report.note("schema cost without client");

    let api = bench.config_maps("bench-cm");
    let start = Instant::now();
    for i in 0..n {
        api.create(&PostParams::default(), &config_map(&format!("cm-{i}")))
            .await
            .expect("create config map");
    }
    report.add_vs(
        S,
        "ConfigMap, kube::Client",
        n,
        per_second(n, start.elapsed()),
        "objects/s",
        "ConfigMap, raw router",
    );
    report.note("client overhead");

    let api = bench.nabs("bench-nab");
    let start = Instant::now();
    for i in 0..n {
        api.create(
            &PostParams::default(),
            &nab(&format!("nab-{i}"), "bench-nab"),
        )
        .await
        .expect("create nab");
    }
    report.add_vs(
        S,
        "NonAdminBackup, kube::Client",
        n,
        per_second(n, start.elapsed()),
        "objects/s",
        "ConfigMap, kube::Client",
    );
    report.note("schema-validated CR vs built-in");

    let writers = sizes.writers;
    let start = Instant::now();
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let api = bench.config_maps("bench-cm-concurrent");
            tokio::spawn(async move {
                for i in (w..n).step_by(writers) {
                    api.create(&PostParams::default(), &config_map(&format!("cm-{i}")))
                        .await
                        .expect("create config map");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("writer task");
    }
    report.add_vs(
        S,
        format!("ConfigMap, kube::Client, {writers} writers"),
        n,
        per_second(n, start.elapsed()),
        "objects/s",
        "ConfigMap, kube::Client",
    );
}

async fn updates(bench: &Bench, sizes: &Sizes, report: &mut Report) {
    const S: &str = "update throughput (sequential)";
    eprintln!("update throughput...");
    let n = sizes.objects;
    let api = bench.config_maps("bench-cm");
    let existing = api
        .list(&ListParams::default())
        .await
        .expect("list config maps")
        .items;
    let start = Instant::now();
    for mut cm in existing.into_iter().take(n) {
        cm.data
            .get_or_insert_default()
            .insert("key".into(), "replaced".into());
        let name = cm.metadata.name.clone().expect("name");
        api.replace(&name, &PostParams::default(), &cm)
            .await
            .expect("replace");
    }
    report.add(
        S,
        "ConfigMap replace (PUT)",
        n,
        per_second(n, start.elapsed()),
        "objects/s",
    );

    let start = Instant::now();
    for i in 0..n {
        api.patch(
            &format!("cm-{i}"),
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"key": format!("patched-{i}")}})),
        )
        .await
        .expect("patch config map");
    }
    report.add_vs(
        S,
        "ConfigMap merge patch",
        n,
        per_second(n, start.elapsed()),
        "objects/s",
        "ConfigMap replace (PUT)",
    );

    let nabs = bench.nabs("bench-nab");
    let start = Instant::now();
    for i in 0..n {
        nabs.patch(
            &format!("nab-{i}"),
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"backupSpec": {"ttl": format!("{}h0m0s", i + 1)}}})),
        )
        .await
        .expect("patch nab");
    }
    report.add_vs(
        S,
        "NonAdminBackup merge patch (spec)",
        n,
        per_second(n, start.elapsed()),
        "objects/s",
        "ConfigMap merge patch",
    );

    let start = Instant::now();
    for i in 0..n {
        nabs.patch_status(
            &format!("nab-{i}"),
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Created"}})),
        )
        .await
        .expect("patch nab status");
    }
    report.add_vs(
        S,
        "NonAdminBackup merge patch (status)",
        n,
        per_second(n, start.elapsed()),
        "objects/s",
        "ConfigMap merge patch",
    );
}

/// Median and 95th percentile of `samples`.
fn percentiles(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.95))
}

async fn lists(bench: &Bench, sizes: &Sizes, report: &mut Report) {
    const S: &str = "list latency (median of repeated lists, kube::Client)";
    eprintln!("list latency...");
    let smallest = sizes.list_sizes.first().copied().unwrap_or(10);
    let baseline = format!("list {smallest} ConfigMaps");
    for &size in &sizes.list_sizes {
        let ns = format!("list-{size}");
        bench.namespace(&ns).await;
        let api = bench.config_maps(&ns);
        for i in 0..size {
            api.create(&PostParams::default(), &config_map(&format!("cm-{i}")))
                .await
                .expect("create config map");
        }
        let mut samples = Vec::with_capacity(sizes.list_reps);
        for _ in 0..sizes.list_reps {
            let start = Instant::now();
            let list = api.list(&ListParams::default()).await.expect("list");
            samples.push(start.elapsed());
            assert_eq!(list.items.len(), size);
        }
        let (median, p95) = percentiles(samples);
        let what = format!("list {size} ConfigMaps");
        if size == smallest {
            report.add(S, &what, size, millis(median), "ms");
        } else {
            report.add_vs(S, &what, size, millis(median), "ms", &baseline);
        }
        report.note(format!(
            "p95 {:.2} ms, {:.1} µs/object",
            millis(p95),
            millis(median) * 1000.0 / size as f64
        ));
    }

    // Paging and selectors at the largest size.
    let largest = sizes.list_sizes.last().copied().unwrap_or(smallest);
    let api = bench.config_maps(&format!("list-{largest}"));
    let mut samples = Vec::new();
    for _ in 0..sizes.list_reps {
        let start = Instant::now();
        let page = api
            .list(&ListParams::default().limit(100))
            .await
            .expect("list page");
        samples.push(start.elapsed());
        assert!(page.items.len() <= 100);
    }
    let (median, _) = percentiles(samples);
    report.add_vs(
        S,
        format!("first page (limit=100) of {largest} ConfigMaps"),
        largest,
        millis(median),
        "ms",
        &format!("list {largest} ConfigMaps"),
    );
    let mut samples = Vec::new();
    for _ in 0..sizes.list_reps {
        let start = Instant::now();
        let found = api
            .list(&ListParams::default().fields("metadata.name=cm-0"))
            .await
            .expect("list by field");
        samples.push(start.elapsed());
        assert_eq!(found.items.len(), 1);
    }
    let (median, _) = percentiles(samples);
    report.add_vs(
        S,
        format!("field selector matching 1 of {largest}"),
        largest,
        millis(median),
        "ms",
        &format!("list {largest} ConfigMaps"),
    );

    // NonAdminBackups at the create-measurement size, vs ConfigMaps at the same size.
    let n = sizes.objects;
    let cms = bench.config_maps("bench-cm");
    let nabs = bench.nabs("bench-nab");
    let mut cm_samples = Vec::new();
    let mut nab_samples = Vec::new();
    for _ in 0..sizes.list_reps {
        let start = Instant::now();
        assert_eq!(
            cms.list(&ListParams::default())
                .await
                .expect("list")
                .items
                .len(),
            n
        );
        cm_samples.push(start.elapsed());
        let start = Instant::now();
        assert_eq!(
            nabs.list(&ListParams::default())
                .await
                .expect("list")
                .items
                .len(),
            n
        );
        nab_samples.push(start.elapsed());
    }
    let cm_what = format!("list {n} ConfigMaps (same ns as creates)");
    report.add(S, &cm_what, n, millis(percentiles(cm_samples).0), "ms");
    report.add_vs(
        S,
        format!("list {n} NonAdminBackups"),
        n,
        millis(percentiles(nab_samples).0),
        "ms",
        &cm_what,
    );
}

/// Outcome of one fan-out round.
struct FanOut {
    /// From the first create until every watcher saw every event.
    all_seen: Duration,
    /// How long the creates themselves took.
    writes: Duration,
    /// Watchers that saw all events before the deadline.
    complete: usize,
}

async fn fan_out_round(bench: &Bench, watchers: usize, events: usize) -> FanOut {
    let ns = format!("watch-{watchers}");
    bench.namespace(&ns).await;
    let api = bench.config_maps(&ns);
    let version = api
        .list(&ListParams::default().limit(1))
        .await
        .expect("list for resourceVersion")
        .metadata
        .resource_version
        .expect("list resourceVersion");
    let connected = Arc::new(tokio::sync::Barrier::new(watchers + 1));
    let mut tasks = Vec::with_capacity(watchers);
    for _ in 0..watchers {
        let api = api.clone();
        let version = version.clone();
        let connected = connected.clone();
        tasks.push(tokio::spawn(async move {
            let stream = api
                .watch(&WatchParams::default().timeout(290), &version)
                .await;
            connected.wait().await;
            let mut stream = stream.expect("start watch").boxed();
            let mut seen = 0usize;
            while seen < events {
                match stream.next().await {
                    Some(Ok(WatchEvent::Added(_))) => seen += 1,
                    Some(Ok(WatchEvent::Bookmark(_))) => {}
                    Some(Ok(other)) => panic!("unexpected watch event {other:?}"),
                    Some(Err(e)) => panic!("watch failed: {e}"),
                    None => break,
                }
            }
            (seen, Instant::now())
        }));
    }
    connected.wait().await;
    let start = Instant::now();
    for i in 0..events {
        api.create(&PostParams::default(), &config_map(&format!("cm-{i}")))
            .await
            .expect("create config map");
    }
    let writes = start.elapsed();
    let deadline = Duration::from_secs(120);
    let mut complete = 0;
    let mut last = start;
    for task in tasks {
        match tokio::time::timeout(deadline.saturating_sub(start.elapsed()), task).await {
            Ok(Ok((seen, at))) => {
                if seen == events {
                    complete += 1;
                }
                last = last.max(at);
            }
            Ok(Err(e)) => eprintln!("  watcher failed: {e}"),
            Err(_) => eprintln!("  watcher did not finish within {deadline:?}"),
        }
    }
    FanOut {
        all_seen: last.duration_since(start),
        writes,
        complete,
    }
}

async fn fan_out(bench: &Bench, sizes: &Sizes, report: &mut Report) {
    const S: &str = "watch fan-out (N watchers on one namespace, M ConfigMaps created)";
    eprintln!("watch fan-out...");
    let m = sizes.watch_events;
    let first = sizes.watchers.first().copied().unwrap_or(1);
    for &w in &sizes.watchers {
        let round = fan_out_round(bench, w, m).await;
        let delivered = (w * m) as f64 / round.all_seen.as_secs_f64();
        let time_what = format!("{w} watcher(s): all saw all {m} events");
        let rate_what = format!("{w} watcher(s): events delivered");
        if w == first {
            report.add(S, &time_what, w, millis(round.all_seen), "ms");
        } else {
            report.add_vs(
                S,
                &time_what,
                w,
                millis(round.all_seen),
                "ms",
                &format!("{first} watcher(s): all saw all {m} events"),
            );
        }
        let incomplete = if round.complete < w {
            format!(
                "; INCOMPLETE: {} of {w} watchers saw every event",
                round.complete
            )
        } else {
            String::new()
        };
        report.note(format!(
            "writes took {:.1} ms{incomplete}",
            millis(round.writes)
        ));
        if w == first {
            report.add(S, &rate_what, w, delivered, "events/s");
        } else {
            report.add_vs(
                S,
                &rate_what,
                w,
                delivered,
                "events/s",
                &format!("{first} watcher(s): events delivered"),
            );
        }
    }
}

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sizes = if args.iter().any(|a| a == "--quick") {
        Sizes::quick()
    } else {
        Sizes::full()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let started = Instant::now();
    let report = runtime.block_on(async {
        let bench = Bench::new().await;
        let mut report = Report::default();
        creates(&bench, &sizes, &mut report).await;
        updates(&bench, &sizes, &mut report).await;
        lists(&bench, &sizes, &mut report).await;
        fan_out(&bench, &sizes, &mut report).await;
        report
    });
    report.print(&sizes, started.elapsed());
}
