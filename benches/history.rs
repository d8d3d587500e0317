//! History store benchmark, on SQLite (a temporary file) and Postgres (a throwaway cluster from
//! tests/support/postgres.rs), figures measured in the same run:
//!
//! 1. recorder ingest in transitions/s: batched `record` (batches of 500 observations × 4
//!    transitions, multi-row statements in one transaction) against `record_one_at_a_time`
//!    (one statement per row, each its own transaction), same data, fresh database each;
//! 2. reads at scale: the store filled with 1,000,000 transition rows (200,000 operations in
//!    200 namespaces, 5 transitions each), then p50/p99 latency of `timeline(ns, id)` for
//!    random operations, the first page of 50 of `operations(ns)`, and `stats(ns, last 30
//!    days)`, 300 queries each.
//!
//! `cargo bench --bench history` runs the full size; `-- --quick` fills 50,000 transition rows
//! and ingests fewer observations. Figures are printed, never asserted on.
//!
//! The throwaway Postgres runs with fsync off (`-F`) and SQLite with synchronous=NORMAL, so a
//! commit costs little here; on a durable production server every one-row transaction pays a
//! WAL flush, and the batched path's advantage is larger than measured.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/postgres.rs"]
mod postgres_support;

use std::hint::black_box;
use std::time::{Duration, Instant};

use nac::history::postgres::PostgresHistoryStore;
use nac::history::sql::SqlCore;
use nac::history::sqlite::SqliteHistoryStore;
use nac::history::{
    HistoryStore, Observation, OperationFilter, OperationKind, OperationRecord, SharedHistory,
    TenantNamespace, TimeWindow, Transition,
};
use postgres_support::PgCluster;

/// How much one run does.
#[derive(Debug, Clone, Copy)]
struct Plan {
    label: &'static str,
    /// Observations ingested by each ingest path.
    ingest_observations: usize,
    /// Transition rows in the store before the reads.
    fill_transitions: usize,
    /// Queries timed per read.
    queries: usize,
}

const QUICK: Plan = Plan {
    label: "quick",
    ingest_observations: 2_000,
    fill_transitions: 50_000,
    queries: 300,
};

const FULL: Plan = Plan {
    label: "full",
    ingest_observations: 5_000,
    fill_transitions: 1_000_000,
    queries: 300,
};

/// Observations per `record` call, as the recorder batches them.
const INGEST_BATCH: usize = 500;
/// Observations per `record` call while filling (bigger: only the total time matters).
const FILL_BATCH: usize = 5_000;
const NAMESPACES: usize = 200;
const DAY: i64 = 24 * 3600 * 1000;

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
}

/// One operation of the workload with `transitions` timeline facts: created in the 60 days
/// before `now`, 90% finished (mostly Completed) with a duration of up to an hour.
fn observation(
    i: usize,
    prefix: &str,
    transitions: usize,
    now: i64,
    random: &mut SplitMix64,
) -> Observation {
    let namespace = format!("tenant-{:03}", i % NAMESPACES);
    let kind = match random.below(100) {
        0..60 => OperationKind::Backup,
        60..75 => OperationKind::ScheduleRun,
        75..90 => OperationKind::Restore,
        90..95 => OperationKind::Download,
        _ => OperationKind::Delete,
    };
    let created_at = now - random.below(60 * DAY as u64) as i64;
    let started_at = created_at + random.below(60_000) as i64;
    let took = 1_000 + random.below(3_600_000) as i64;
    let (phase, finished) = match random.below(100) {
        0..80 => ("Completed", true),
        80..85 => ("PartiallyFailed", true),
        85..90 => ("Failed", true),
        90..95 => ("InProgress", false),
        _ => ("New", false),
    };
    let id = format!("{prefix}-{i:07}");
    let operation = OperationRecord {
        id: id.clone(),
        namespace: namespace.clone(),
        namespace_uid: uid_of(&namespace),
        kind: Some(kind),
        name: format!("nab-{i}"),
        uid: id.clone(),
        velero_name: Some(format!("nacuuid-{i}")),
        parent_name: (kind == OperationKind::ScheduleRun).then(|| format!("sched-{}", i % 5)),
        created_at,
        started_at: (phase != "New").then_some(started_at),
        completed_at: finished.then_some(started_at + took),
        phase: Some(phase.to_string()),
        phase_rank: if finished { 200 } else { 130 },
        nac_phase: Some("Created".to_string()),
        items_total: Some(100),
        items_done: Some(if finished { 100 } else { 40 }),
        warnings: Some(0),
        errors: Some(0),
        ..OperationRecord::default()
    };
    let facts = [
        ("phase", "New"),
        ("veleroPhase", "New"),
        ("veleroPhase", "InProgress"),
        ("veleroPhase", phase),
        ("condition/Queued", "True"),
        ("queuePosition", "0"),
    ];
    let transitions = (0..transitions)
        .map(|j| {
            let (attribute, value) = facts[j % facts.len()];
            Transition {
                operation_id: id.clone(),
                namespace: namespace.clone(),
                at: created_at + j as i64 * 1_000,
                attribute: attribute.to_string(),
                value: value.to_string(),
                reason: None,
                message: None,
                // Distinct per fact, so every operation keeps all of them (an InProgress
                // phase would otherwise repeat `veleroPhase=InProgress`).
                dedup: j.to_string(),
            }
        })
        .collect();
    Observation {
        operation,
        transitions,
    }
}

/// The UID namespace `ns` has in the workload.
fn uid_of(ns: &str) -> String {
    format!("uid-of-{ns}")
}

/// Namespace `ns` as the store's reads name it.
fn tenant(ns: &str) -> TenantNamespace {
    TenantNamespace::new(ns, uid_of(ns)).expect("a name and a UID")
}

/// Where fresh databases come from.
enum Target {
    Sqlite(tempfile::TempDir),
    Postgres(PgCluster),
}

impl Target {
    fn name(&self) -> &'static str {
        match self {
            Target::Sqlite(_) => "sqlite",
            Target::Postgres(_) => "postgres",
        }
    }

    /// An empty, migrated store, and its SQL core (for the one-row-at-a-time baseline).
    async fn fresh(&self, label: &str) -> (SharedHistory, SqlCore) {
        match self {
            Target::Sqlite(dir) => {
                let url = nac::history::sqlite_url_for(&dir.path().join(format!("{label}.db")));
                let store = SqliteHistoryStore::connect(&url).await.unwrap();
                store.migrate().await.unwrap();
                let core = store.core().clone();
                (std::sync::Arc::new(store), core)
            }
            Target::Postgres(cluster) => {
                let url = cluster.fresh_database();
                let store = PostgresHistoryStore::connect(&url).await.unwrap();
                store.migrate().await.unwrap();
                let core = store.core().clone();
                (std::sync::Arc::new(store), core)
            }
        }
    }
}

fn show(duration: Duration) -> String {
    let micros = duration.as_secs_f64() * 1e6;
    if micros < 1e3 {
        format!("{micros:.0} µs")
    } else if micros < 1e6 {
        format!("{:.2} ms", micros / 1e3)
    } else {
        format!("{:.2} s", micros / 1e6)
    }
}

fn rate(count: usize, elapsed: Duration) -> String {
    let per_second = count as f64 / elapsed.as_secs_f64();
    if per_second >= 1e6 {
        format!("{:.2} M/s", per_second / 1e6)
    } else if per_second >= 1e3 {
        format!("{:.1} k/s", per_second / 1e3)
    } else {
        format!("{per_second:.0} /s")
    }
}

fn quantile(sorted: &[Duration], p: f64) -> Duration {
    sorted[nac::history::estimate::percentile_index(sorted.len(), p)]
}

struct Line {
    backend: &'static str,
    measure: String,
    value: String,
    extra: String,
}

async fn run_backend(target: &Target, plan: Plan, lines: &mut Vec<Line>) {
    let backend = target.name();
    let now = nac::history::now_millis();
    let line = |measure: String, value: String, extra: String| Line {
        backend,
        measure,
        value,
        extra,
    };

    // 1. Ingest: the same observations both ways, each into an empty database.
    let mut random = SplitMix64(0x1a9e57);
    let ingest: Vec<Observation> = (0..plan.ingest_observations)
        .map(|i| observation(i, "ingest", 4, now, &mut random))
        .collect();
    let transitions: usize = ingest.iter().map(|o| o.transitions.len()).sum();

    let (batched_store, _) = target.fresh("ingest-batched").await;
    let started = Instant::now();
    let mut inserted = 0;
    for batch in ingest.chunks(INGEST_BATCH) {
        inserted += batched_store.record(batch.to_vec()).await.unwrap();
    }
    let batched = started.elapsed();
    assert_eq!(inserted as usize, transitions);
    drop(batched_store);

    let (_, single_core) = target.fresh("ingest-single").await;
    let started = Instant::now();
    let mut inserted = 0;
    for batch in ingest.chunks(INGEST_BATCH) {
        inserted += single_core
            .record_one_at_a_time(batch.to_vec())
            .await
            .unwrap();
    }
    let single = started.elapsed();
    assert_eq!(inserted as usize, transitions);
    drop(single_core);

    lines.push(line(
        format!(
            "ingest, batched record ({} obs × 4 transitions, {INGEST_BATCH}/batch)",
            plan.ingest_observations
        ),
        rate(transitions, batched),
        format!("{} total", show(batched)),
    ));
    lines.push(line(
        "ingest, one row at a time (baseline)".to_string(),
        rate(transitions, single),
        format!(
            "{} total; batched is {:.1}× faster",
            show(single),
            single.as_secs_f64() / batched.as_secs_f64()
        ),
    ));

    // 2. Fill, then time the reads.
    let (store, core) = target.fresh("reads").await;
    let operations = plan.fill_transitions / 5;
    let mut random = SplitMix64(0xf111);
    let mut ids: Vec<(String, String)> = Vec::with_capacity(operations);
    let started = Instant::now();
    let mut next = 0;
    while next < operations {
        let end = (next + FILL_BATCH).min(operations);
        let batch: Vec<Observation> = (next..end)
            .map(|i| observation(i, "op", 5, now, &mut random))
            .collect();
        ids.extend(
            batch
                .iter()
                .map(|o| (o.operation.namespace.clone(), o.operation.id.clone())),
        );
        store.record(batch).await.unwrap();
        next = end;
    }
    let fill = started.elapsed();
    // What autovacuum (Postgres) or a periodic ANALYZE would have done on a live database.
    sqlx::query("ANALYZE").execute(core.pool()).await.unwrap();
    lines.push(line(
        format!(
            "fill {} transitions ({operations} operations, {NAMESPACES} namespaces)",
            plan.fill_transitions
        ),
        rate(plan.fill_transitions, fill),
        format!("{} total", show(fill)),
    ));

    let mut random = SplitMix64(0x7ead);
    let mut timeline = Vec::with_capacity(plan.queries);
    for _ in 0..plan.queries {
        let (ns, id) = &ids[random.below(ids.len() as u64) as usize];
        let started = Instant::now();
        let rows = store.timeline(&tenant(ns), id).await.unwrap();
        timeline.push(started.elapsed());
        assert_eq!(rows.len(), 5);
    }
    let filter = OperationFilter::default();
    let mut page = Vec::with_capacity(plan.queries);
    for _ in 0..plan.queries {
        let ns = format!("tenant-{:03}", random.below(NAMESPACES as u64));
        let started = Instant::now();
        let rows = store
            .operations(&tenant(&ns), &filter, None, 50)
            .await
            .unwrap();
        page.push(started.elapsed());
        black_box(rows);
    }
    let window = TimeWindow {
        from: now - 30 * DAY,
        to: now,
    };
    let mut stats = Vec::with_capacity(plan.queries);
    for _ in 0..plan.queries {
        let ns = format!("tenant-{:03}", random.below(NAMESPACES as u64));
        let started = Instant::now();
        let answer = store.stats(&tenant(&ns), window).await.unwrap();
        stats.push(started.elapsed());
        black_box(answer);
    }
    let per_ns = operations / NAMESPACES;
    for (measure, mut samples) in [
        ("timeline(ns, id), random operation".to_string(), timeline),
        ("operations(ns), first page of 50".to_string(), page),
        (
            format!("stats(ns, last 30 days), ~{} ops/ns in window", per_ns / 2),
            stats,
        ),
    ] {
        samples.sort();
        lines.push(line(
            measure,
            format!(
                "p50 {} p99 {}",
                show(quantile(&samples, 50.0)),
                show(quantile(&samples, 99.0))
            ),
            format!("{} queries", samples.len()),
        ));
    }
}

fn main() {
    let quick = std::env::args().any(|argument| argument == "--quick");
    let plan = if quick { QUICK } else { FULL };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    let mut lines = Vec::new();
    let targets = [
        Target::Sqlite(tempfile::tempdir().unwrap()),
        Target::Postgres(PgCluster::start()),
    ];
    for target in &targets {
        runtime.block_on(run_backend(target, plan, &mut lines));
    }

    println!(
        "history store benchmark ({} run: {} observations ingested, {} transition rows for reads)",
        plan.label, plan.ingest_observations, plan.fill_transitions
    );
    println!("{:<9} {:<66} {:>22}  notes", "backend", "measure", "value");
    for line in &lines {
        println!(
            "{:<9} {:<66} {:>22}  {}",
            line.backend, line.measure, line.value, line.extra
        );
    }
    println!(
        "(throwaway Postgres with fsync off, SQLite WAL with synchronous=NORMAL: commits are \
         cheap here, so the one-row-at-a-time baseline is flattered)"
    );
    println!("total bench time {}", show(started.elapsed()));
}
