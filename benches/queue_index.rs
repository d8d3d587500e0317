//! Queue index benchmark: the order-statistic index against upstream's full scan per query
//! (`nac::queue::naive_position`), at 1k, 10k and 50k Velero backups, ratios measured in the
//! same run.
//!
//! `cargo bench --bench queue_index` runs 1k, 10k and 50k; `-- --quick` runs 1k and 10k with
//! fewer samples. Figures are printed, never asserted on.
//!
//! Workload (deterministic): creation times spread at random over 30 days (so creation order
//! and arrival order differ), 85% Completed, 3% PartiallyFailed, 2% Failed, 1%
//! FailedValidation, 8% pending, 1% running. Pending backups are in phase New (pre-1.17
//! Velero, or not yet queued), so every index query takes the O(log n) rank path instead of
//! returning Velero's own `queuePosition`.
//!
//! The naive figures are generous to upstream: they scan an in-memory slice, where upstream
//! lists (and deep-copies) every Backup from the controller cache on each query.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use chrono::DateTime;
use nac::api::velero::BackupPhase;
use nac::queue::{Entry, QueueIndex, QueueKind, VeleroPhase, naive_position};

/// How much one run does per size.
#[derive(Debug, Clone, Copy)]
struct Plan {
    label: &'static str,
    sizes: &'static [usize],
    /// Builds timed per size (the median is reported).
    build_reps: usize,
    /// Pending backups whose naive position is timed.
    naive_queries: usize,
    /// Completions applied in the update measurement.
    completions: usize,
    /// "Refresh every pending position after one completion" rounds for the naive algorithm.
    naive_refreshes: usize,
}

const QUICK: Plan = Plan {
    label: "quick",
    sizes: &[1_000, 10_000],
    build_reps: 3,
    naive_queries: 200,
    completions: 200,
    naive_refreshes: 2,
};

const FULL: Plan = Plan {
    label: "full",
    sizes: &[1_000, 10_000, 50_000],
    build_reps: 5,
    naive_queries: 1_000,
    completions: 1_000,
    naive_refreshes: 3,
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

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i as u64 + 1) as usize);
        }
    }
}

fn phase_for(roll: u64) -> Option<BackupPhase> {
    Some(match roll {
        0..850 => BackupPhase::Completed,
        850..880 => BackupPhase::PartiallyFailed,
        880..900 => BackupPhase::Failed,
        900..910 => BackupPhase::FailedValidation,
        910..950 => return None,
        950..990 => BackupPhase::New,
        995..1000 => BackupPhase::WaitingForPluginOperations,
        _ => BackupPhase::InProgress,
    })
}

fn completed_at_set(phase: Option<&BackupPhase>) -> bool {
    matches!(
        phase,
        Some(BackupPhase::Completed | BackupPhase::PartiallyFailed | BackupPhase::Failed)
    )
}

fn workload(n: usize, random: &mut SplitMix64) -> Vec<Entry> {
    const THIRTY_DAYS: u64 = 30 * 24 * 3600;
    let base = 1_700_000_000;
    let mut entries: Vec<Entry> = (0..n)
        .map(|i| {
            let phase = phase_for(random.below(1000));
            Entry {
                name: format!("tenant-{:04}-nab-{i:06}", random.below(1000)),
                created: DateTime::from_timestamp(base + random.below(THIRTY_DAYS) as i64, 0)
                    .unwrap(),
                has_completion_timestamp: completed_at_set(phase.as_ref()),
                phase: VeleroPhase::Backup(phase),
                velero_queue_position: None,
                resource_version: Some(i as u64 + 1),
            }
        })
        .collect();
    // Arrival order (a re-list comes sorted by name, watch events by write time) is
    // unrelated to creation order.
    random.shuffle(&mut entries);
    entries
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn per_op(total: Duration, ops: usize) -> Duration {
    total / u32::try_from(ops.max(1)).unwrap()
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

struct Row {
    n: usize,
    metric: String,
    index: Duration,
    naive: Option<Duration>,
}

fn run_size(n: usize, plan: Plan, rows: &mut Vec<Row>, notes: &mut Vec<String>) {
    let mut random = SplitMix64(0x5eed ^ n as u64);
    let entries = workload(n, &mut random);

    // Build: n upserts in arrival order.
    let builds: Vec<Duration> = (0..plan.build_reps)
        .map(|_| {
            let input = entries.clone();
            let started = Instant::now();
            let index = QueueIndex::from_entries(input);
            let elapsed = started.elapsed();
            black_box(index.active_len(QueueKind::Backup));
            elapsed
        })
        .collect();
    let build = median(builds);
    rows.push(Row {
        n,
        metric: "build, total (n upserts)".into(),
        index: build,
        naive: None,
    });
    rows.push(Row {
        n,
        metric: "build, per upsert".into(),
        index: per_op(build, n),
        naive: None,
    });

    let mut index = QueueIndex::from_entries(entries.clone());
    let pending: Vec<&str> = entries
        .iter()
        .filter(|entry| entry.activity() == nac::queue::Activity::Pending)
        .map(|entry| entry.name.as_str())
        .collect();

    // Query: every pending position from the index; a sample from the naive scan.
    let started = Instant::now();
    for name in &pending {
        black_box(index.position(QueueKind::Backup, name));
    }
    let index_query = per_op(started.elapsed(), pending.len());
    let sample: Vec<&str> = pending.iter().copied().take(plan.naive_queries).collect();
    let started = Instant::now();
    for name in &sample {
        black_box(naive_position(&entries, QueueKind::Backup, name));
    }
    let naive_query = per_op(started.elapsed(), sample.len());
    rows.push(Row {
        n,
        metric: format!(
            "query, per position ({} idx / {} naive)",
            pending.len(),
            sample.len()
        ),
        index: index_query,
        naive: Some(naive_query),
    });
    let differing = pending
        .iter()
        .filter(|name| {
            index.position(QueueKind::Backup, name)
                != naive_position(&entries, QueueKind::Backup, name)
        })
        .count();
    notes.push(format!(
        "n={n}: {} active ({} pending), upstream's position differs from the index for \
         {differing} of {} pending backups (FailedValidation counted, same-second ties)",
        index.active_len(QueueKind::Backup),
        pending.len(),
        pending.len(),
    ));

    // Update: backups completing, one watch event each.
    let mut active: Vec<usize> = entries
        .iter()
        .enumerate()
        .filter(|(_, entry)| entry.activity().is_active())
        .map(|(position, _)| position)
        .collect();
    random.shuffle(&mut active);
    active.truncate(plan.completions);
    let completions: Vec<Entry> = active
        .iter()
        .map(|&position| Entry {
            phase: VeleroPhase::Backup(Some(BackupPhase::Completed)),
            has_completion_timestamp: true,
            resource_version: entries[position]
                .resource_version
                .map(|version| version + n as u64),
            ..entries[position].clone()
        })
        .collect();
    let mut updated = index.clone();
    let events = completions.clone();
    let started = Instant::now();
    for event in events {
        black_box(updated.upsert(event));
    }
    let index_update = per_op(started.elapsed(), completions.len());
    // Upstream keeps no structure: an update is a store write in the informer cache.
    let mut cache: Vec<Entry> = entries.clone();
    let by_name: HashMap<String, usize> = cache
        .iter()
        .enumerate()
        .map(|(position, entry)| (entry.name.clone(), position))
        .collect();
    let events = completions.clone();
    let started = Instant::now();
    for event in events {
        let position = by_name[&event.name];
        cache[position] = event;
    }
    black_box(&cache);
    let naive_update = per_op(started.elapsed(), completions.len());
    rows.push(Row {
        n,
        metric: format!("update, per completion ({})", completions.len()),
        index: index_update,
        naive: Some(naive_update),
    });

    // What one completion costs the controller: refresh every pending position.
    let rounds = plan.naive_refreshes.min(completions.len());
    let mut index_refresh = Vec::new();
    for event in completions.iter().take(rounds.max(5)) {
        let started = Instant::now();
        index.upsert(event.clone());
        for name in &pending {
            black_box(index.position(QueueKind::Backup, name));
        }
        index_refresh.push(started.elapsed());
    }
    let mut naive_refresh = Vec::new();
    let mut cache = entries.clone();
    for event in completions.iter().take(rounds) {
        let started = Instant::now();
        let position = by_name[&event.name];
        cache[position] = event.clone();
        for name in &pending {
            black_box(naive_position(&cache, QueueKind::Backup, name));
        }
        naive_refresh.push(started.elapsed());
    }
    rows.push(Row {
        n,
        metric: format!("completion + refresh all {} pending", pending.len()),
        index: median(index_refresh),
        naive: (!naive_refresh.is_empty()).then(|| median(naive_refresh)),
    });
}

fn main() {
    let quick = std::env::args().any(|argument| argument == "--quick");
    let plan = if quick { QUICK } else { FULL };
    let started = Instant::now();
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for &n in plan.sizes {
        run_size(n, plan, &mut rows, &mut notes);
    }

    println!(
        "queue index vs upstream full scan ({} run, sizes {:?})",
        plan.label, plan.sizes
    );
    println!(
        "{:>7}  {:<46} {:>11} {:>11} {:>12}",
        "n", "measure", "index", "naive", "naive/index"
    );
    for row in &rows {
        let (naive, ratio) = match row.naive {
            Some(naive) => (
                show(naive),
                format!("{:.1}×", naive.as_secs_f64() / row.index.as_secs_f64()),
            ),
            None => ("—".to_owned(), "—".to_owned()),
        };
        println!(
            "{:>7}  {:<46} {:>11} {:>11} {:>12}",
            row.n,
            row.metric,
            show(row.index),
            naive,
            ratio
        );
    }
    for note in &notes {
        println!("{note}");
    }
    println!("(naive build: upstream keeps no structure beyond the informer cache)");
    println!("total bench time {}", show(started.elapsed()));
}
