//! Manifest build benchmark: time and peak memory to build a backup's manifest from its
//! tarball, streaming (`nac::manifest::build::build_manifest`: entry by entry, only the
//! metadata of each object parsed) against the baseline measured in the same run
//! (`read_backup_tarball` into whole `BackupItem`s, then `manifest_of_items`), for backups of
//! 10k and 100k items; plus the compact stored form, a diff, the owner graph and an overlap at
//! the same sizes.
//!
//! `cargo bench --bench manifest` runs 10k and 100k; `-- --quick` runs 10k with fewer
//! repetitions. Figures are printed, never asserted on (only that both paths agree).
//!
//! Memory: a counting global allocator (`peak_alloc`: every allocation and free goes through
//! two atomic counters) gives the heap's high-water mark during each build, above what was
//! allocated before it (the tarball bytes, held by both paths alike, are not counted); the
//! manifest a build returns is counted, as it is alive at the peak. The allocator's `realloc`
//! copies, which slows both paths alike.
//!
//! Workload (deterministic): apps of one Deployment, one ReplicaSet owned by it, four Pods
//! owned by the ReplicaSet and two ConfigMaps; objects as the API server returns them
//! (labels, annotations, owner references, managedFields, pod specs and statuses), and one
//! ConfigMap in twenty carrying 32 KiB of data. Tarballs are written by
//! `write_backup_tarball`, so each object is stored twice (legacy and preferred-version copy)
//! as Velero stores it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use nac::manifest::build::{build_manifest, manifest_of_items};
use nac::manifest::diff::diff_manifests;
use nac::manifest::export::{ManifestBackup, ManifestDocument, decode_compact, encode_compact};
use nac::manifest::graph::OwnerGraph;
use nac::manifest::item::Manifest;
use nac::manifest::overlap::{IdentitySet, RunningOperation, overlaps};
use nac::manifest::tarball::{BackupItem, read_backup_tarball, write_backup_tarball};
use peak_alloc::PeakAlloc;
use serde_json::{Value, json};

#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

/// How much one run does.
#[derive(Debug, Clone, Copy)]
struct Plan {
    label: &'static str,
    sizes: &'static [usize],
    /// Builds timed per path and size (the median is reported; memory is the largest peak).
    reps: usize,
}

const QUICK: Plan = Plan {
    label: "quick",
    sizes: &[10_000],
    reps: 3,
};

const FULL: Plan = Plan {
    label: "full",
    sizes: &[10_000, 100_000],
    reps: 3,
};

/// SplitMix64: a seedable generator so every run measures the same workload.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }

    fn uid(&mut self) -> String {
        let (a, b) = (self.next_u64(), self.next_u64());
        format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            b >> 52,
            b & 0xffff_ffff_ffff
        )
    }

    fn text(&mut self, len: usize) -> String {
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
        (0..len)
            .map(|_| ALPHABET[self.below(ALPHABET.len() as u64) as usize] as char)
            .collect()
    }
}

const NAMESPACE: &str = "shop";

fn metadata(
    random: &mut SplitMix64,
    name: &str,
    uid: &str,
    app: &str,
    owner: Option<(&str, &str, &str, &str)>,
) -> Value {
    let mut metadata = json!({
        "name": name,
        "namespace": NAMESPACE,
        "uid": uid,
        "resourceVersion": random.below(10_000_000).to_string(),
        "generation": 1 + random.below(5),
        "creationTimestamp": "2026-02-01T10:00:00Z",
        "labels": {
            "app.kubernetes.io/name": app,
            "app.kubernetes.io/part-of": "shop",
            "app.kubernetes.io/version": format!("1.{}.{}", random.below(20), random.below(10)),
            "pod-template-hash": random.text(10),
        },
        "annotations": {
            "deployment.kubernetes.io/revision": random.below(30).to_string(),
            "kubectl.kubernetes.io/last-applied-configuration": random.text(300),
        },
        "managedFields": [{
            "manager": "kube-controller-manager",
            "operation": "Update",
            "apiVersion": "apps/v1",
            "time": "2026-02-01T10:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {}}}}},
        }],
    });
    if let Some((api_version, kind, owner_name, owner_uid)) = owner {
        metadata["ownerReferences"] = json!([{
            "apiVersion": api_version,
            "kind": kind,
            "name": owner_name,
            "uid": owner_uid,
            "controller": true,
            "blockOwnerDeletion": true,
        }]);
    }
    metadata
}

fn pod_spec(random: &mut SplitMix64, app: &str) -> Value {
    json!({
        "containers": [{
            "name": app,
            "image": format!("registry.example.com/shop/{app}:{}", random.text(12)),
            "ports": [{"containerPort": 8080, "protocol": "TCP"}],
            "env": (0..6).map(|index| json!({"name": format!("ENV_{index}"),
                "value": random.text(24)})).collect::<Vec<_>>(),
            "resources": {"limits": {"cpu": "500m", "memory": "512Mi"},
                "requests": {"cpu": "100m", "memory": "128Mi"}},
            "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}],
        }],
        "volumes": [{"name": "config", "configMap": {"name": format!("{app}-config")}}],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
    })
}

fn object(group: &str, kind: &str, resource: &str, value: Value) -> BackupItem {
    BackupItem {
        group: group.into(),
        version: "v1".into(),
        kind: kind.into(),
        resource: resource.into(),
        namespace: Some(NAMESPACE.into()),
        name: value["metadata"]["name"].as_str().unwrap().into(),
        object: value,
    }
}

/// `n` items (rounded up to whole apps of 8).
fn workload(n: usize, random: &mut SplitMix64) -> Vec<BackupItem> {
    let mut items = Vec::with_capacity(n + 8);
    let mut app_index = 0;
    while items.len() < n {
        let app = format!("app-{app_index:06}");
        app_index += 1;
        let deployment_uid = random.uid();
        let replica_set = format!("{app}-{}", random.text(10));
        let replica_set_uid = random.uid();
        let spec = pod_spec(random, &app);
        items.push(object(
            "apps",
            "Deployment",
            "deployments",
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": metadata(random, &app, &deployment_uid, &app, None),
                "spec": {"replicas": 4, "selector": {"matchLabels": {"app": app}},
                    "template": {"metadata": {"labels": {"app": app}}, "spec": spec}},
                "status": {"replicas": 4, "readyReplicas": 4, "observedGeneration": 1}}),
        ));
        items.push(object(
            "apps",
            "ReplicaSet",
            "replicasets",
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": metadata(random, &replica_set, &replica_set_uid, &app,
                    Some(("apps/v1", "Deployment", &app, &deployment_uid))),
                "spec": {"replicas": 4, "template": {"spec": spec}},
                "status": {"replicas": 4, "readyReplicas": 4}}),
        ));
        for pod in 0..4 {
            let name = format!("{replica_set}-{}", random.text(5));
            let uid = random.uid();
            items.push(object(
                "",
                "Pod",
                "pods",
                json!({"apiVersion": "v1", "kind": "Pod",
                    "metadata": metadata(random, &name, &uid, &app,
                        Some(("apps/v1", "ReplicaSet", &replica_set, &replica_set_uid))),
                    "spec": spec,
                    "status": {"phase": "Running", "podIP": format!("10.0.{}.{pod}", app_index % 250),
                        "conditions": [{"type": "Ready", "status": "True"}],
                        "containerStatuses": [{"name": app, "ready": true, "restartCount": 0,
                            "imageID": random.text(64)}]}}),
            ));
        }
        for config in 0..2 {
            let name = format!("{app}-config-{config}");
            let uid = random.uid();
            let size = if random.below(20) == 0 { 32 << 10 } else { 512 };
            items.push(object(
                "",
                "ConfigMap",
                "configmaps",
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": metadata(random, &name, &uid, &app, None),
                    "data": {"settings.yaml": random.text(size)}}),
            ));
        }
    }
    items.truncate(n);
    items
}

/// Runs `work`, returning its result, the time it took and the heap's peak above what was
/// allocated when it started.
fn measure<T>(work: impl FnOnce() -> T) -> (T, Duration, usize) {
    let before = ALLOCATOR.current_usage();
    ALLOCATOR.reset_peak_usage();
    let started = Instant::now();
    let result = black_box(work());
    let elapsed = started.elapsed();
    let peak = ALLOCATOR.peak_usage().saturating_sub(before);
    (result, elapsed, peak)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn show(duration: Duration) -> String {
    let nanos = duration.as_secs_f64() * 1e9;
    if nanos < 1e3 {
        format!("{nanos:.0} ns")
    } else if nanos < 1e6 {
        format!("{:.2} µs", nanos / 1e3)
    } else if nanos < 1e9 {
        format!("{:.2} ms", nanos / 1e6)
    } else {
        format!("{:.2} s", nanos / 1e9)
    }
}

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

struct Path {
    times: Vec<Duration>,
    peak: usize,
}

fn run_size(n: usize, plan: Plan) {
    let mut random = SplitMix64(0x6d61_6e69 ^ n as u64);
    let (tarball, expected, json_bytes) = {
        let items = workload(n, &mut random);
        let json_bytes: usize = items
            .iter()
            .map(|item| serde_json::to_vec(&item.object).unwrap().len())
            .sum();
        (
            write_backup_tarball(&items).unwrap(),
            manifest_of_items(&items),
            json_bytes,
        )
    };
    println!(
        "n={n}: {} items, objects {} of JSON (stored twice), tarball {} gzip'd",
        expected.len(),
        mib(json_bytes),
        mib(tarball.len())
    );

    let mut streaming = Path {
        times: Vec::new(),
        peak: 0,
    };
    let mut baseline = Path {
        times: Vec::new(),
        peak: 0,
    };
    for rep in 0..plan.reps {
        // Alternate which path goes first, so neither always runs on a warmer cache.
        for which in [rep % 2, 1 - rep % 2] {
            let (manifest, elapsed, peak, path) = if which == 0 {
                let (manifest, elapsed, peak) =
                    measure(|| build_manifest(tarball.as_slice()).unwrap());
                (manifest, elapsed, peak, &mut streaming)
            } else {
                let (manifest, elapsed, peak) =
                    measure(|| manifest_of_items(&read_backup_tarball(&tarball).unwrap()));
                (manifest, elapsed, peak, &mut baseline)
            };
            assert_eq!(manifest, expected, "both paths build the same manifest");
            path.times.push(elapsed);
            path.peak = path.peak.max(peak);
        }
    }
    let (stream_time, base_time) = (median(streaming.times), median(baseline.times));
    println!(
        "  {:<34} {:>10} {:>12} {:>14}",
        "build", "time", "peak heap", "heap per item"
    );
    for (label, time, peak) in [
        ("streaming (build_manifest)", stream_time, streaming.peak),
        ("baseline (read_backup_tarball)", base_time, baseline.peak),
    ] {
        println!(
            "  {label:<34} {:>10} {:>12} {:>12} B",
            show(time),
            mib(peak),
            peak / n.max(1)
        );
    }
    println!(
        "  {:<34} {:>9.1}× {:>11.1}×",
        "baseline / streaming",
        base_time.as_secs_f64() / stream_time.as_secs_f64(),
        baseline.peak as f64 / streaming.peak.max(1) as f64
    );

    // What the history store keeps, and the other manifest operations at this size.
    let backup = ManifestBackup {
        namespace: NAMESPACE.into(),
        name: "nightly".into(),
        velero_backup: "shop-nightly-0001".into(),
        completed_at: None,
    };
    let document = ManifestDocument::new(backup, expected.clone());
    let (packed, encode_time, _) = measure(|| encode_compact(&document).unwrap());
    let (decoded, decode_time, decode_peak) = measure(|| decode_compact(&packed).unwrap());
    assert_eq!(decoded, document);
    let plain = document.to_json().unwrap().len();
    println!(
        "  stored form: {} gzip'd ({} B/item; manifest.json {}), encode {}, decode {} (peak {})",
        mib(packed.len()),
        packed.len() / n.max(1),
        mib(plain),
        show(encode_time),
        show(decode_time),
        mib(decode_peak)
    );

    // The next backup: 1% of items relabelled, 1% gone, 1% new.
    let mut next: Vec<_> = expected
        .items()
        .iter()
        .enumerate()
        .filter(|(index, _)| index % 100 != 7)
        .map(|(index, item)| {
            let mut item = item.clone();
            if index % 100 == 1 {
                item.labels.insert("changed".into(), "yes".into());
            }
            item
        })
        .collect();
    for index in 0..n / 100 {
        let mut item = expected.items()[index].clone();
        item.name = format!("new-{index}");
        next.push(item);
    }
    let next = Manifest::from_items(next);
    let (diff, diff_time, _) = measure(|| diff_manifests(&expected, &next));
    let (order, graph_time, _) = measure(|| OwnerGraph::new(&expected).owners_first().len());
    let set = IdentitySet::of_manifest(&expected);
    let running = IdentitySet::of_manifest(&next);
    let (found, overlap_time, _) = measure(|| {
        overlaps(
            &set,
            &[RunningOperation {
                operation: "backup shop/hourly",
                items: &running,
            }],
            100,
        )
    });
    println!(
        "  diff {} (+{} -{} ~{}), owner graph + owners-first order {} ({} items), \
         overlap {} ({} shared)",
        show(diff_time),
        diff.added.len(),
        diff.removed.len(),
        diff.changed.len(),
        show(graph_time),
        order,
        show(overlap_time),
        found.first().map_or(0, |overlap| overlap.total)
    );
}

fn main() {
    let quick = std::env::args().any(|argument| argument == "--quick");
    let plan = if quick { QUICK } else { FULL };
    let started = Instant::now();
    println!(
        "manifest build: streaming vs whole-object baseline ({} run, sizes {:?}, median of {})",
        plan.label, plan.sizes, plan.reps
    );
    for &n in plan.sizes {
        run_size(n, plan);
    }
    println!("total bench time {}", show(started.elapsed()));
}
