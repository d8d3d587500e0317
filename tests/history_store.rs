//! The history store's behaviour, one suite run against both backends: a real PostgreSQL
//! server (a throwaway cluster per test binary, a fresh database per test) and SQLite (a file in
//! a temporary directory per test). `both_backends!` turns each scenario into
//! `postgres::<scenario>` and `sqlite::<scenario>` tests. Connection failures (bad URLs, a
//! closed port, a server stopped and started again) are tested on their own below.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/history_backends.rs"]
mod history_backends;
#[path = "support/postgres.rs"]
mod postgres_support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use history_backends::both_backends;
use nac::history::estimate;
use nac::history::{
    Coverage, HistoryError, IdempotencyAnswer, IdempotencyState, KindStats, NamespaceIdentity,
    NamespaceStats, Observation, OperationCursor, OperationFilter, OperationKind, OperationRecord,
    SharedHistory, TenantNamespace, TimeWindow, Transition,
};
use postgres_support::PgCluster;

both_backends!(
    record_and_read_back,
    replays_never_duplicate_transitions,
    merge_rules,
    keyset_paging_with_filters,
    stats_equal_the_rust_statistics,
    recent_durations_newest_first,
    coverage_of_namespaces,
    purge_keeps_live_operations,
    mark_deleted_and_live_ids,
    idempotency_keys,
    concurrent_claims_have_one_winner,
    namespaces_are_isolated,
    a_namespace_created_again_reads_nothing_of_its_predecessor,
    rows_without_a_namespace_uid_go_only_to_a_namespace_older_than_them,
    idempotency_answers_are_bound_to_the_namespace_uid,
    migrate_twice_is_a_no_op,
);

const T0: i64 = 1_700_000_000_000;
const MINUTE: i64 = 60_000;

/// The UID the namespace `ns` has in these scenarios.
fn uid_of(ns: &str) -> String {
    format!("uid-of-{ns}")
}

/// Namespace `ns` as it is in these scenarios.
fn tn(ns: &str) -> TenantNamespace {
    TenantNamespace::new(ns, uid_of(ns)).unwrap()
}

/// The UID of the namespace the Idempotency-Keys are used in.
const NS_UID: &str = "uid-of-team-a";

fn op(namespace: &str, id: &str, kind: OperationKind, created_at: i64) -> OperationRecord {
    OperationRecord {
        id: id.to_string(),
        namespace: namespace.to_string(),
        namespace_uid: uid_of(namespace),
        kind: Some(kind),
        name: format!("{id}-name"),
        uid: id.to_string(),
        created_at,
        ..OperationRecord::default()
    }
}

fn finished(mut record: OperationRecord, phase: &str, started: i64, took: i64) -> OperationRecord {
    record.phase = Some(phase.to_string());
    record.phase_rank = 200;
    record.started_at = Some(started);
    record.completed_at = Some(started + took);
    record
}

fn tr(record: &OperationRecord, at: i64, attribute: &str, value: &str) -> Transition {
    Transition {
        operation_id: record.id.clone(),
        namespace: record.namespace.clone(),
        at,
        attribute: attribute.to_string(),
        value: value.to_string(),
        reason: None,
        message: None,
        dedup: String::new(),
    }
}

fn obs(operation: OperationRecord, transitions: Vec<Transition>) -> Observation {
    Observation {
        operation,
        transitions,
    }
}

fn bare(records: Vec<OperationRecord>) -> Vec<Observation> {
    records.into_iter().map(|r| obs(r, Vec::new())).collect()
}

async fn record_and_read_back(store: SharedHistory) {
    store.ping().await.unwrap();
    let mut backup = op("team-a", "b-1", OperationKind::Backup, T0);
    backup.velero_name = Some("nacuuid-1".into());
    backup.nac_phase = Some("Created".into());
    backup.phase = Some("InProgress".into());
    backup.phase_rank = 130;
    backup.started_at = Some(T0 + 1_000);
    backup.items_total = Some(40);
    backup.items_done = Some(12);
    backup.warnings = Some(1);
    backup.errors = Some(0);
    backup.queue_position = Some(0);
    let mut condition = tr(&backup, T0 + 5, "condition/Queued", "True");
    condition.reason = Some("BackupScheduled".into());
    condition.message = Some("queued in Velero".into());
    condition.dedup = "2023-11-14T22:13:20Z".into();
    let transitions = vec![
        tr(&backup, T0, "phase", "New"),
        condition,
        tr(&backup, T0 + 1_000, "veleroPhase", "InProgress"),
    ];
    let mut restore = op("team-a", "r-1", OperationKind::Restore, T0 + MINUTE);
    restore.parent_name = Some("b-1-name".into());
    restore.failure_reason = Some("the backup is not Completed".into());
    let inserted = store
        .record(vec![
            obs(backup.clone(), transitions.clone()),
            obs(
                restore.clone(),
                vec![tr(&restore, T0 + MINUTE, "phase", "New")],
            ),
        ])
        .await
        .unwrap();
    assert_eq!(inserted, 4);

    assert_eq!(
        store.operation(&tn("team-a"), "b-1").await.unwrap(),
        Some(backup.clone())
    );
    assert_eq!(
        store.operation(&tn("team-a"), "r-1").await.unwrap(),
        Some(restore)
    );
    assert_eq!(store.operation(&tn("team-a"), "nope").await.unwrap(), None);

    let timeline = store.timeline(&tn("team-a"), "b-1").await.unwrap();
    let read: Vec<Transition> = timeline.iter().map(|t| t.transition.clone()).collect();
    assert_eq!(read, transitions);
    assert!(timeline.windows(2).all(|w| w[0].seq < w[1].seq));
    assert!(
        store
            .timeline(&tn("team-a"), "nope")
            .await
            .unwrap()
            .is_empty()
    );

    // A reused name: the newest created wins.
    let mut again = op("team-a", "b-2", OperationKind::Backup, T0 + 2 * MINUTE);
    again.name = backup.name.clone();
    store.record(bare(vec![again.clone()])).await.unwrap();
    let found = store
        .operation_by_name(&tn("team-a"), OperationKind::Backup, &backup.name)
        .await
        .unwrap();
    assert_eq!(found.map(|r| r.id), Some("b-2".to_string()));
    let by_kind = store
        .operation_by_name(&tn("team-a"), OperationKind::Restore, &backup.name)
        .await
        .unwrap();
    assert_eq!(by_kind, None);
    assert_eq!(store.record(Vec::new()).await.unwrap(), 0);
}

async fn replays_never_duplicate_transitions(store: SharedHistory) {
    let batch: Vec<Observation> = (0..120)
        .map(|i| {
            let record = op(
                "team-a",
                &format!("op-{i:03}"),
                OperationKind::Backup,
                T0 + i,
            );
            let transitions = ["New", "Queued", "InProgress", "Completed"]
                .iter()
                .enumerate()
                .map(|(j, phase)| tr(&record, T0 + i + j as i64, "veleroPhase", phase))
                .collect();
            obs(record, transitions)
        })
        .collect();
    assert_eq!(store.record(batch.clone()).await.unwrap(), 480);
    assert_eq!(store.record(batch.clone()).await.unwrap(), 0);
    assert_eq!(store.record(batch.clone()).await.unwrap(), 0);
    for i in [0, 57, 119] {
        let timeline = store
            .timeline(&tn("team-a"), &format!("op-{i:03}"))
            .await
            .unwrap();
        assert_eq!(timeline.len(), 4);
    }

    // Repeats inside one batch: the same operation twice (a later state) and the same
    // transition twice are applied once, in order.
    let mut first = op("team-a", "twice", OperationKind::Restore, T0);
    first.phase = Some("New".into());
    first.phase_rank = 100;
    let mut second = first.clone();
    second.phase = Some("InProgress".into());
    second.phase_rank = 130;
    let t = tr(&first, T0, "phase", "New");
    let inserted = store
        .record(vec![
            obs(first, vec![t.clone(), t.clone()]),
            obs(second.clone(), vec![t.clone()]),
        ])
        .await
        .unwrap();
    assert_eq!(inserted, 1);
    assert_eq!(
        store.operation(&tn("team-a"), "twice").await.unwrap(),
        Some(second)
    );
    assert_eq!(
        store.timeline(&tn("team-a"), "twice").await.unwrap().len(),
        1
    );

    // A repeat with another dedup (a condition set again later) is a new fact.
    let mut later = t.clone();
    later.dedup = "again".into();
    let replay = op("team-a", "twice", OperationKind::Restore, T0);
    assert_eq!(
        store
            .record(vec![obs(replay, vec![t, later])])
            .await
            .unwrap(),
        1
    );
}

async fn merge_rules(store: SharedHistory) {
    let mut known = op("team-a", "m-1", OperationKind::Backup, T0);
    known.velero_name = Some("nacuuid-m1".into());
    known.parent_name = Some("sched".into());
    known.requester = Some("alice".into());
    known.nac_phase = Some("Created".into());
    known.items_total = Some(10);
    known.items_done = Some(10);
    known.warnings = Some(2);
    known.errors = Some(0);
    known.failure_reason = Some("first reason".into());
    known.queue_position = Some(0);
    let known = finished(known, "Completed", T0 + 10, 500);
    store.record(bare(vec![known.clone()])).await.unwrap();

    // Unknown values, a lower phase, another requester, a later creation time, no kind.
    let stale = OperationRecord {
        id: "m-1".into(),
        namespace: "team-a".into(),
        kind: None,
        name: String::new(),
        uid: String::new(),
        requester: Some("mallory".into()),
        created_at: T0 + 99_999,
        phase: Some("InProgress".into()),
        phase_rank: 130,
        ..OperationRecord::default()
    };
    store.record(bare(vec![stale])).await.unwrap();
    assert_eq!(
        store.operation(&tn("team-a"), "m-1").await.unwrap(),
        Some(known.clone())
    );

    // An earlier creation time, a newer known value, the same rank with another phase.
    let mut newer = known.clone();
    newer.created_at = T0 - 5;
    newer.failure_reason = Some("second reason".into());
    newer.phase = Some("PartiallyFailed".into());
    newer.requester = None;
    store.record(bare(vec![newer.clone()])).await.unwrap();
    let mut expected = newer.clone();
    expected.requester = Some("alice".into());
    assert_eq!(
        store.operation(&tn("team-a"), "m-1").await.unwrap(),
        Some(expected.clone())
    );

    // created_at 0 means unknown: it never replaces a known time.
    let mut zero = expected.clone();
    zero.created_at = 0;
    store.record(bare(vec![zero])).await.unwrap();
    assert_eq!(
        store
            .operation(&tn("team-a"), "m-1")
            .await
            .unwrap()
            .map(|r| r.created_at),
        Some(T0 - 5)
    );

    // A higher rank replaces the phase; deleted_at is never replaced once set.
    let mut deleted = expected.clone();
    deleted.deleted_at = Some(T0 + MINUTE);
    store.record(bare(vec![deleted])).await.unwrap();
    let mut later = expected.clone();
    later.deleted_at = Some(T0 + 2 * MINUTE);
    store.record(bare(vec![later])).await.unwrap();
    assert_eq!(
        store
            .operation(&tn("team-a"), "m-1")
            .await
            .unwrap()
            .and_then(|r| r.deleted_at),
        Some(T0 + MINUTE)
    );

    // The namespace of a row never changes.
    let mut moved = expected.clone();
    moved.namespace = "team-b".into();
    store.record(bare(vec![moved])).await.unwrap();
    assert!(
        store
            .operation(&tn("team-b"), "m-1")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .operation(&tn("team-a"), "m-1")
            .await
            .unwrap()
            .is_some()
    );

    // note_requester before the recorder saw the object: the row exists with the requester,
    // and the recorder's later upsert (no requester) keeps it and fills the rest.
    let early = op("team-a", "n-1", OperationKind::Restore, T0);
    store
        .note_requester(early.clone(), "bob".into())
        .await
        .unwrap();
    let row = store
        .operation(&tn("team-a"), "n-1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.requester.as_deref(), Some("bob"));
    assert_eq!(row.phase, None);
    let mut seen = early.clone();
    seen.velero_name = Some("nacuuid-n1".into());
    seen.phase = Some("New".into());
    seen.phase_rank = 100;
    store.record(bare(vec![seen.clone()])).await.unwrap();
    let mut expected = seen.clone();
    expected.requester = Some("bob".into());
    assert_eq!(
        store.operation(&tn("team-a"), "n-1").await.unwrap(),
        Some(expected)
    );

    // note_requester after the recorder saw it: sets it once, never replaces it.
    let recorded = op("team-a", "n-2", OperationKind::Backup, T0);
    let mut recorded = finished(recorded, "Completed", T0, 10);
    recorded.velero_name = Some("nacuuid-n2".into());
    store.record(bare(vec![recorded.clone()])).await.unwrap();
    // The gateway only knows what the request said: its record must not erase anything.
    let from_gateway = op("team-a", "n-2", OperationKind::Backup, T0);
    store
        .note_requester(from_gateway.clone(), "carol".into())
        .await
        .unwrap();
    store
        .note_requester(from_gateway, "dave".into())
        .await
        .unwrap();
    let mut expected = recorded.clone();
    expected.requester = Some("carol".into());
    assert_eq!(
        store.operation(&tn("team-a"), "n-2").await.unwrap(),
        Some(expected)
    );
}

/// Everything the paging test stores, and the expected answer of a filter.
fn paging_rows() -> Vec<OperationRecord> {
    let kinds = OperationKind::ALL;
    let phases = [
        None,
        Some("New"),
        Some("InProgress"),
        Some("Completed"),
        Some("Failed"),
    ];
    let names = [
        "nab",
        "50%_off",
        "50xxoff",
        "50%xoff",
        "under_score",
        "MiXeD",
    ];
    (0..1_234_i64)
        .map(|i| {
            // Ten rows share each creation time; ids are not in insertion order.
            let id = format!("{:08x}-{i:04}", (i * 2_654_435_761) % 4_294_967_291);
            let mut r = op("team-a", &id, kinds[i as usize % 6], T0 + (i / 10) * 1_000);
            r.name = format!("{}-{i}", names[i as usize % names.len()]);
            r.phase = phases[i as usize % phases.len()].map(str::to_string);
            if i % 7 == 0 {
                r.requester = Some(format!("User{}", i % 3));
            }
            if i % 11 == 0 {
                r.failure_reason = Some("Quota 100% used".into());
            }
            if i % 13 == 0 {
                r.velero_name = Some(format!("velero-Special-{i}"));
            }
            r
        })
        .collect()
}

fn expected_page_order(rows: &[OperationRecord], filter: &OperationFilter) -> Vec<OperationRecord> {
    let text = filter.text.as_ref().map(|t| t.to_lowercase());
    let contains =
        |v: &Option<String>, t: &str| v.as_ref().is_some_and(|v| v.to_lowercase().contains(t));
    let mut out: Vec<OperationRecord> = rows
        .iter()
        .filter(|r| filter.kinds.is_empty() || r.kind.is_some_and(|k| filter.kinds.contains(&k)))
        .filter(|r| {
            filter.phases.is_empty() || r.phase.as_ref().is_some_and(|p| filter.phases.contains(p))
        })
        .filter(|r| filter.since.is_none_or(|s| r.created_at >= s))
        .filter(|r| filter.until.is_none_or(|u| r.created_at < u))
        .filter(|r| {
            text.as_deref().is_none_or(|t| {
                r.name.to_lowercase().contains(t)
                    || contains(&r.velero_name, t)
                    || contains(&r.requester, t)
                    || contains(&r.failure_reason, t)
            })
        })
        .cloned()
        .collect();
    out.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
    out
}

async fn read_all_pages(
    store: &SharedHistory,
    filter: &OperationFilter,
    limit: u32,
) -> Vec<OperationRecord> {
    let mut all = Vec::new();
    let mut after: Option<OperationCursor> = None;
    loop {
        let page = store
            .operations(&tn("team-a"), filter, after.as_ref(), limit)
            .await
            .unwrap();
        let effective = limit.clamp(1, 500) as usize;
        assert!(page.items.len() <= effective);
        if page.next.is_some() {
            assert_eq!(
                page.items.len(),
                effective,
                "only the last page may be short"
            );
        }
        all.extend(page.items);
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
        assert!(all.len() <= 1_234, "paging does not end");
    }
    all
}

async fn keyset_paging_with_filters(store: SharedHistory) {
    let rows = paging_rows();
    store.record(bare(rows.clone())).await.unwrap();
    // Another namespace with the same creation times must not show up.
    let others: Vec<OperationRecord> = rows
        .iter()
        .take(50)
        .map(|r| {
            let mut o = r.clone();
            o.id = format!("other-{}", r.id);
            o.namespace = "team-b".into();
            o
        })
        .collect();
    store.record(bare(others)).await.unwrap();

    let filters = vec![
        OperationFilter::default(),
        OperationFilter {
            kinds: vec![OperationKind::Backup, OperationKind::ScheduleRun],
            ..OperationFilter::default()
        },
        OperationFilter {
            phases: vec!["Completed".into(), "Failed".into()],
            ..OperationFilter::default()
        },
        OperationFilter {
            since: Some(T0 + 20_000),
            until: Some(T0 + 90_000),
            ..OperationFilter::default()
        },
        OperationFilter {
            text: Some("50%_off".into()),
            ..OperationFilter::default()
        },
        OperationFilter {
            text: Some("%".into()),
            ..OperationFilter::default()
        },
        OperationFilter {
            text: Some("_".into()),
            ..OperationFilter::default()
        },
        OperationFilter {
            text: Some("mixed".into()),
            ..OperationFilter::default()
        },
        OperationFilter {
            text: Some("USER1".into()),
            ..OperationFilter::default()
        },
        OperationFilter {
            text: Some("special".into()),
            ..OperationFilter::default()
        },
        OperationFilter {
            kinds: vec![OperationKind::Restore],
            phases: vec!["New".into()],
            since: Some(T0 + 10_000),
            until: Some(T0 + 100_000),
            text: Some("50".into()),
        },
    ];
    for filter in &filters {
        let expected = expected_page_order(&rows, filter);
        let got = read_all_pages(&store, filter, 50).await;
        let got_ids: Vec<&str> = got.iter().map(|r| r.id.as_str()).collect();
        let expected_ids: Vec<&str> = expected.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(got_ids, expected_ids, "filter {filter:?}");
        assert_eq!(got, expected, "filter {filter:?}");
    }
    // Sanity of the test data: the literal-wildcard filters are selective.
    let literal = expected_page_order(&rows, &filters[4]).len();
    assert!(literal > 0 && literal < 1_234 / 4, "{literal}");

    // Page sizes: tiny, odd, the maximum, and out-of-range limits clamped to 1..=500.
    let all = expected_page_order(&rows, &OperationFilter::default());
    for limit in [7, 500, 0, 10_000] {
        let got = read_all_pages(&store, &OperationFilter::default(), limit).await;
        assert_eq!(got.len(), all.len(), "limit {limit}");
        assert!(got.iter().zip(&all).all(|(a, b)| a.id == b.id));
    }
    let first = store
        .operations(&tn("team-a"), &OperationFilter::default(), None, 0)
        .await
        .unwrap();
    assert_eq!(first.items.len(), 1);

    let too_long = OperationFilter {
        text: Some("x".repeat(201)),
        ..OperationFilter::default()
    };
    let err = store
        .operations(&tn("team-a"), &too_long, None, 10)
        .await
        .err()
        .unwrap();
    assert!(matches!(err, HistoryError::InvalidInput(_)), "{err}");
}

/// Operations of several kinds, phases and durations, some outside the window or in another
/// namespace, and their expected statistics computed in Rust.
fn stats_rows() -> Vec<OperationRecord> {
    let phases = [
        "Completed",
        "Completed",
        "Completed",
        "PartiallyFailed",
        "Failed",
        "FailedValidation",
        "InProgress",
        "New",
    ];
    let mut rows = Vec::new();
    for i in 0..300_i64 {
        let kind = OperationKind::ALL[(i % 5) as usize];
        let mut r = op("team-a", &format!("s-{i:03}"), kind, T0 + i * MINUTE);
        let phase = phases[(i % phases.len() as i64) as usize];
        // Durations with ties and a long tail.
        let took = ((i * 7_919) % 97) * 1_000 + if i % 29 == 0 { 3_600_000 } else { 0 };
        if estimate::is_finished_phase(phase) {
            r = finished(r, phase, T0 + i * MINUTE + 500, took);
        } else {
            r.phase = Some(phase.to_string());
            r.phase_rank = 130;
            r.started_at = Some(T0 + i * MINUTE + 500);
        }
        if i % 17 == 0 {
            r.phase = None;
            r.phase_rank = 0;
        }
        if i % 19 == 0 {
            // Finished without a start time: no duration.
            r.started_at = None;
        }
        if i % 23 == 0 && r.completed_at.is_some() {
            // A clock skew: completion before start is not a duration.
            r.started_at = r.completed_at.map(|c| c + 5);
        }
        r.items_done = (i % 4 != 0).then_some(i);
        rows.push(r);
    }
    rows
}

fn expected_stats(rows: &[OperationRecord], window: TimeWindow) -> NamespaceStats {
    let mut kinds = Vec::new();
    for kind in OperationKind::ALL {
        let of_kind: Vec<&OperationRecord> = rows
            .iter()
            .filter(|r| r.namespace == "team-a" && r.kind == Some(kind))
            .filter(|r| r.created_at >= window.from && r.created_at < window.to)
            .collect();
        if of_kind.is_empty() {
            continue;
        }
        let mut by_phase = BTreeMap::new();
        for r in &of_kind {
            *by_phase
                .entry(r.phase.clone().unwrap_or_else(|| "Unknown".into()))
                .or_insert(0) += 1;
        }
        let finished: Vec<&&OperationRecord> = of_kind
            .iter()
            .filter(|r| r.phase.as_deref().is_some_and(estimate::is_finished_phase))
            .collect();
        let completed = finished
            .iter()
            .filter(|r| r.phase.as_deref() == Some("Completed"))
            .count();
        let durations: Vec<i64> = finished.iter().filter_map(|r| r.duration_ms()).collect();
        kinds.push(KindStats {
            kind: kind.as_str().to_string(),
            total: of_kind.len() as i64,
            by_phase,
            success_rate: estimate::success_rate(completed as i64, finished.len() as i64),
            p50_duration_ms: estimate::percentile(&durations, 50.0),
            p95_duration_ms: estimate::percentile(&durations, 95.0),
            items_done: of_kind.iter().filter_map(|r| r.items_done).sum(),
        });
    }
    NamespaceStats {
        namespace: "team-a".into(),
        from: window.from,
        to: window.to,
        kinds,
    }
}

async fn stats_equal_the_rust_statistics(store: SharedHistory) {
    let rows = stats_rows();
    store.record(bare(rows.clone())).await.unwrap();
    let mut noise = op("team-b", "noise", OperationKind::Backup, T0 + 10 * MINUTE);
    noise = finished(noise, "Failed", T0, 1);
    store.record(bare(vec![noise])).await.unwrap();

    for window in [
        TimeWindow {
            from: T0,
            to: T0 + 300 * MINUTE,
        },
        TimeWindow {
            from: T0 + 37 * MINUTE,
            to: T0 + 211 * MINUTE,
        },
        TimeWindow {
            from: T0 + 2 * MINUTE,
            to: T0 + 3 * MINUTE,
        },
        TimeWindow {
            from: T0 - 10 * MINUTE,
            to: T0,
        },
    ] {
        let got = store.stats(&tn("team-a"), window).await.unwrap();
        assert_eq!(got, expected_stats(&rows, window), "window {window:?}");
    }
    let whole = store
        .stats(
            &tn("team-a"),
            TimeWindow {
                from: T0,
                to: T0 + 300 * MINUTE,
            },
        )
        .await
        .unwrap();
    // The data exercise what they should: five kinds, long tails, unknown phases.
    assert_eq!(whole.kinds.len(), 5);
    assert!(
        whole
            .kinds
            .iter()
            .all(|k| k.p95_duration_ms > k.p50_duration_ms)
    );
    assert!(
        whole
            .kinds
            .iter()
            .any(|k| k.by_phase.contains_key("Unknown"))
    );

    let empty = store
        .stats(
            &tn("team-a"),
            TimeWindow {
                from: T0 - 10,
                to: T0 - 5,
            },
        )
        .await
        .unwrap();
    assert!(empty.kinds.is_empty());
    let backwards = store
        .stats(
            &tn("team-a"),
            TimeWindow {
                from: T0,
                to: T0 - 1,
            },
        )
        .await;
    assert!(matches!(backwards, Err(HistoryError::InvalidInput(_))));
}

async fn recent_durations_newest_first(store: SharedHistory) {
    let rows = stats_rows();
    store.record(bare(rows.clone())).await.unwrap();
    for (kinds, limit) in [
        (vec![OperationKind::Backup, OperationKind::ScheduleRun], 20),
        (vec![OperationKind::Restore], 5),
        (OperationKind::ALL.to_vec(), 1_000),
    ] {
        let mut eligible: Vec<&OperationRecord> = rows
            .iter()
            .filter(|r| r.kind.is_some_and(|k| kinds.contains(&k)))
            .filter(|r| r.phase.as_deref().is_some_and(estimate::is_finished_phase))
            .filter(|r| r.duration_ms().is_some())
            .collect();
        eligible.sort_by(|a, b| (b.completed_at, &b.id).cmp(&(a.completed_at, &a.id)));
        let expected: Vec<i64> = eligible
            .iter()
            .take(limit)
            .filter_map(|r| r.duration_ms())
            .collect();
        let got = store
            .recent_durations(&tn("team-a"), &kinds, limit as u32)
            .await
            .unwrap();
        assert_eq!(got, expected, "{kinds:?}");
        assert!(!got.is_empty());
    }
    assert!(
        store
            .recent_durations(&tn("team-a"), &[], 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .recent_durations(&tn("team-a"), &[OperationKind::Backup], 0)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn coverage_of_namespaces(store: SharedHistory) {
    let backup = |id: &str, done_at: i64, phase: &str| {
        finished(
            op("team-a", id, OperationKind::Backup, done_at - 100),
            phase,
            done_at - 50,
            50,
        )
    };
    let run = |ns: &str, id: &str, schedule: &str, done_at: i64, phase: &str| {
        let mut r = op(ns, id, OperationKind::ScheduleRun, done_at - 100);
        r.parent_name = Some(schedule.to_string());
        finished(r, phase, done_at - 50, 50)
    };
    let mut in_progress = op(
        "team-a",
        "weekly-3",
        OperationKind::ScheduleRun,
        T0 + 99 * MINUTE,
    );
    in_progress.parent_name = Some("weekly".into());
    in_progress.phase = Some("InProgress".into());
    in_progress.phase_rank = 130;
    store
        .record(bare(vec![
            backup("b-old", T0 + MINUTE, "Completed"),
            backup("b-new", T0 + 10 * MINUTE, "Completed"),
            backup("b-failed-later", T0 + 20 * MINUTE, "Failed"),
            run("team-a", "daily-1", "daily", T0 + 5 * MINUTE, "Completed"),
            run("team-a", "daily-2", "daily", T0 + 8 * MINUTE, "Failed"),
            run(
                "team-a",
                "hourly-1",
                "hourly",
                T0 + 2 * MINUTE,
                "PartiallyFailed",
            ),
            run("team-a", "hourly-2", "hourly", T0 + 3 * MINUTE, "Completed"),
            run("team-a", "weekly-1", "weekly", T0 + 4 * MINUTE, "Completed"),
            run(
                "team-a",
                "weekly-2",
                "weekly",
                T0 + 6 * MINUTE,
                "PartiallyFailed",
            ),
            in_progress,
            run(
                "team-a",
                "a-1",
                "a-sched",
                T0 + 7 * MINUTE,
                "FailedValidation",
            ),
            // Newer success elsewhere, and a failing schedule there: never team-a's.
            run("team-b", "other-1", "other", T0 + 50 * MINUTE, "Completed"),
            run("team-b", "other-2", "broken", T0 + 51 * MINUTE, "Failed"),
        ]))
        .await
        .unwrap();
    let got = store.coverage(&[tn("team-c"), tn("team-a")]).await.unwrap();
    assert_eq!(
        got,
        vec![
            Coverage {
                namespace: "team-c".into(),
                ..Coverage::default()
            },
            Coverage {
                namespace: "team-a".into(),
                last_successful_backup: Some("b-new-name".into()),
                last_successful_backup_at: Some(T0 + 10 * MINUTE),
                failing_schedules: vec!["a-sched".into(), "daily".into(), "weekly".into()],
            },
        ]
    );

    // A schedule run that completes later becomes the newest success and heals its schedule.
    store
        .record(bare(vec![run(
            "team-a",
            "daily-3",
            "daily",
            T0 + 30 * MINUTE,
            "Completed",
        )]))
        .await
        .unwrap();
    let got = store.coverage(&[tn("team-a")]).await.unwrap();
    assert_eq!(
        got[0].last_successful_backup.as_deref(),
        Some("daily-3-name")
    );
    assert_eq!(got[0].failing_schedules, vec!["a-sched", "weekly"]);
    assert!(store.coverage(&[]).await.unwrap().is_empty());
}

async fn purge_keeps_live_operations(store: SharedHistory) {
    let cutoff = T0 + 100 * MINUTE;
    let old_done = finished(
        op("team-a", "old-done", OperationKind::Backup, T0),
        "Completed",
        T0,
        10,
    );
    let mut old_deleted = op("team-a", "old-deleted", OperationKind::Restore, T0);
    old_deleted.deleted_at = Some(T0 + MINUTE);
    let old_live = op("team-a", "old-live", OperationKind::Backup, T0);
    let recent_done = finished(
        op("team-a", "recent-done", OperationKind::Backup, T0),
        "Failed",
        cutoff + 1,
        10,
    );
    // Completed long ago but deleted recently: kept until its deletion is old.
    let mut recently_deleted = finished(
        op("team-a", "recently-deleted", OperationKind::Backup, T0),
        "Completed",
        T0,
        10,
    );
    recently_deleted.deleted_at = Some(cutoff + MINUTE);
    let all = [
        old_done,
        old_deleted,
        old_live,
        recent_done,
        recently_deleted,
    ];
    let batch: Vec<Observation> = all
        .iter()
        .map(|r| {
            obs(
                r.clone(),
                vec![tr(r, T0, "phase", "New"), tr(r, T0 + 1, "phase", "Created")],
            )
        })
        .collect();
    assert_eq!(store.record(batch).await.unwrap(), 10);

    assert_eq!(store.purge(cutoff).await.unwrap(), 2);
    for gone in ["old-done", "old-deleted"] {
        assert_eq!(store.operation(&tn("team-a"), gone).await.unwrap(), None);
        assert!(
            store
                .timeline(&tn("team-a"), gone)
                .await
                .unwrap()
                .is_empty()
        );
    }
    for kept in ["old-live", "recent-done", "recently-deleted"] {
        assert!(
            store
                .operation(&tn("team-a"), kept)
                .await
                .unwrap()
                .is_some(),
            "{kept}"
        );
        assert_eq!(
            store.timeline(&tn("team-a"), kept).await.unwrap().len(),
            2,
            "{kept}"
        );
    }
    assert_eq!(store.purge(cutoff).await.unwrap(), 0);

    // Expired idempotency records go too; live ones stay.
    store
        .idempotency_begin("alice", "/p", "expired", NS_UID, b"d", 1)
        .await
        .unwrap();
    store
        .idempotency_begin("alice", "/p", "live", NS_UID, b"d", 600_000)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    store.purge(cutoff).await.unwrap();
    assert_eq!(
        store
            .idempotency_begin("alice", "/p", "live", NS_UID, b"d", 600_000)
            .await
            .unwrap(),
        IdempotencyState::InFlight
    );
    assert_eq!(
        store
            .idempotency_begin("alice", "/p", "expired", NS_UID, b"other", 600_000)
            .await
            .unwrap(),
        IdempotencyState::Claimed
    );
}

async fn mark_deleted_and_live_ids(store: SharedHistory) {
    let records = vec![
        op("team-a", "a", OperationKind::Backup, T0),
        op("team-a", "b", OperationKind::Restore, T0),
        op("team-b", "c", OperationKind::Download, T0),
    ];
    store.record(bare(records.clone())).await.unwrap();
    let unknown_kind = OperationRecord {
        kind: None,
        ..op("team-a", "no-kind", OperationKind::Backup, T0)
    };
    store.record(bare(vec![unknown_kind])).await.unwrap();
    assert_eq!(
        store.live_operation_ids().await.unwrap(),
        vec![
            ("a".to_string(), OperationKind::Backup),
            ("b".to_string(), OperationKind::Restore),
            ("c".to_string(), OperationKind::Download),
        ]
    );

    let at = T0 + 5 * MINUTE;
    let ids = vec!["a".to_string(), "c".to_string(), "missing".to_string()];
    assert_eq!(store.mark_deleted(ids.clone(), at).await.unwrap(), 2);
    assert_eq!(store.mark_deleted(ids, at + 1).await.unwrap(), 0);
    assert_eq!(store.mark_deleted(Vec::new(), at).await.unwrap(), 0);
    assert_eq!(
        store.live_operation_ids().await.unwrap(),
        vec![("b".to_string(), OperationKind::Restore)]
    );
    let a = store.operation(&tn("team-a"), "a").await.unwrap().unwrap();
    assert_eq!(a.deleted_at, Some(at));
    let timeline = store.timeline(&tn("team-a"), "a").await.unwrap();
    assert_eq!(timeline.len(), 1);
    assert_eq!(timeline[0].transition, {
        let mut t = tr(&records[0], at, "deleted", "true");
        t.namespace = "team-a".into();
        t
    });
    assert_eq!(store.timeline(&tn("team-b"), "c").await.unwrap().len(), 1);
    // A late upsert without deleted_at does not bring it back.
    store.record(bare(vec![records[0].clone()])).await.unwrap();
    assert_eq!(
        store
            .operation(&tn("team-a"), "a")
            .await
            .unwrap()
            .and_then(|r| r.deleted_at),
        Some(at)
    );

    // Many ids at once (more than one statement's worth).
    let many: Vec<OperationRecord> = (0..1_100)
        .map(|i| op("team-a", &format!("many-{i:04}"), OperationKind::Backup, T0))
        .collect();
    store.record(bare(many.clone())).await.unwrap();
    let ids: Vec<String> = many.iter().map(|r| r.id.clone()).collect();
    assert_eq!(store.mark_deleted(ids, at).await.unwrap(), 1_100);
}

async fn idempotency_keys(store: SharedHistory) {
    use IdempotencyState::*;
    let ttl = 600_000;
    let begin = |key: &'static str, digest: &'static [u8], ttl: i64| {
        let store = store.clone();
        async move {
            store
                .idempotency_begin("alice", "/api/v1/backups", key, NS_UID, digest, ttl)
                .await
                .unwrap()
        }
    };
    assert_eq!(begin("k1", b"body-1", ttl).await, Claimed);
    assert_eq!(begin("k1", b"body-1", ttl).await, InFlight);
    assert_eq!(begin("k1", b"body-2", ttl).await, Mismatch);
    // Keys are per caller and path.
    assert_eq!(
        store
            .idempotency_begin("bob", "/api/v1/backups", "k1", NS_UID, b"body-1", ttl)
            .await
            .unwrap(),
        Claimed
    );
    assert_eq!(
        store
            .idempotency_begin("alice", "/api/v1/restores", "k1", NS_UID, b"body-1", ttl)
            .await
            .unwrap(),
        Claimed
    );

    let answer = IdempotencyAnswer {
        status: 201,
        content_type: "application/json".into(),
        body: br#"{"name":"nab-1"}"#.to_vec(),
    };
    store
        .idempotency_finish(
            "alice",
            "/api/v1/backups",
            "k1",
            NS_UID,
            answer.clone(),
            ttl,
        )
        .await
        .unwrap();
    assert_eq!(begin("k1", b"body-1", ttl).await, Done(answer.clone()));
    assert_eq!(begin("k1", b"body-1", ttl).await, Done(answer));
    assert_eq!(begin("k1", b"body-2", ttl).await, Mismatch);

    // Abandoned: the key may run again.
    assert_eq!(begin("k2", b"body", ttl).await, Claimed);
    store
        .idempotency_abandon("alice", "/api/v1/backups", "k2", NS_UID)
        .await
        .unwrap();
    assert_eq!(begin("k2", b"body", ttl).await, Claimed);

    // Expiry: an in-flight claim that outlived its TTL, and a stored answer past its TTL,
    // are replaced (even with another body).
    assert_eq!(begin("k3", b"body", 1).await, Claimed);
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(begin("k3", b"body", ttl).await, Claimed);
    store
        .idempotency_finish(
            "alice",
            "/api/v1/backups",
            "k3",
            NS_UID,
            IdempotencyAnswer {
                status: 200,
                content_type: "text/plain".into(),
                body: Vec::new(),
            },
            1,
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(begin("k3", b"another body", ttl).await, Claimed);
}

async fn concurrent_claims_have_one_winner(store: SharedHistory) {
    for round in 0..20 {
        let key = format!("race-{round}");
        let (a, b) = tokio::join!(
            store.idempotency_begin("alice", "/api/v1/backups", &key, NS_UID, b"same", 600_000),
            store.idempotency_begin("alice", "/api/v1/backups", &key, NS_UID, b"same", 600_000),
        );
        let mut states = vec![a.unwrap(), b.unwrap()];
        states.sort_by_key(|s| format!("{s:?}"));
        assert_eq!(
            states,
            vec![IdempotencyState::Claimed, IdempotencyState::InFlight],
            "round {round}"
        );
    }
    // Also from separate tasks, so they truly run at once on the multi-threaded runtime.
    for round in 0..10 {
        let key = format!("spawned-{round}");
        let tasks: Vec<_> = (0..4)
            .map(|_| {
                let store = store.clone();
                let key = key.clone();
                tokio::spawn(async move {
                    store
                        .idempotency_begin("bob", "/p", &key, NS_UID, b"same", 600_000)
                        .await
                        .unwrap()
                })
            })
            .collect();
        let mut claimed = 0;
        for task in tasks {
            if task.await.unwrap() == IdempotencyState::Claimed {
                claimed += 1;
            }
        }
        assert_eq!(claimed, 1, "round {round}");
    }
}

async fn namespaces_are_isolated(store: SharedHistory) {
    // Both tenants have a backup with the same name, durations, schedules and timelines.
    let mut batch = Vec::new();
    for ns in ["team-a", "team-b"] {
        let mut b = finished(
            op(ns, &format!("{ns}-backup"), OperationKind::Backup, T0),
            if ns == "team-a" {
                "Completed"
            } else {
                "Failed"
            },
            T0 + 10,
            if ns == "team-a" { 1_000 } else { 9_000 },
        );
        b.name = "shared-name".into();
        let mut run = finished(
            op(ns, &format!("{ns}-run"), OperationKind::ScheduleRun, T0),
            if ns == "team-a" {
                "Completed"
            } else {
                "Failed"
            },
            T0 + 20,
            if ns == "team-a" { 2_000 } else { 8_000 },
        );
        run.parent_name = Some("nightly".into());
        let transitions = vec![tr(&b, T0, "phase", ns)];
        batch.push(obs(b, transitions));
        batch.push(obs(run, Vec::new()));
    }
    store.record(batch).await.unwrap();

    assert!(
        store
            .operation(&tn("team-a"), "team-b-backup")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .timeline(&tn("team-a"), "team-b-backup")
            .await
            .unwrap()
            .is_empty()
    );
    let timeline = store
        .timeline(&tn("team-a"), "team-a-backup")
        .await
        .unwrap();
    assert!(timeline.iter().all(|t| t.transition.namespace == "team-a"));
    assert_eq!(timeline.len(), 1);

    let page = store
        .operations(&tn("team-a"), &OperationFilter::default(), None, 500)
        .await
        .unwrap();
    assert_eq!(page.items.len(), 2);
    assert!(page.items.iter().all(|r| r.namespace == "team-a"));
    let text = OperationFilter {
        text: Some("shared".into()),
        ..OperationFilter::default()
    };
    let page = store
        .operations(&tn("team-a"), &text, None, 500)
        .await
        .unwrap();
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.items[0].id, "team-a-backup");

    let by_name = store
        .operation_by_name(&tn("team-a"), OperationKind::Backup, "shared-name")
        .await
        .unwrap();
    assert_eq!(by_name.map(|r| r.id), Some("team-a-backup".into()));

    let stats = store
        .stats(
            &tn("team-a"),
            TimeWindow {
                from: T0 - 1,
                to: T0 + 1,
            },
        )
        .await
        .unwrap();
    assert!(stats.kinds.iter().all(|k| k.total == 1));
    assert!(
        stats
            .kinds
            .iter()
            .all(|k| !k.by_phase.contains_key("Failed"))
    );
    assert_eq!(stats.kinds[0].p95_duration_ms, Some(1_000));

    let coverage = store.coverage(&[tn("team-a")]).await.unwrap();
    assert_eq!(coverage[0].failing_schedules, Vec::<String>::new());
    assert_eq!(
        coverage[0].last_successful_backup.as_deref(),
        Some("team-a-run-name")
    );

    let durations = store
        .recent_durations(
            &tn("team-a"),
            &[OperationKind::Backup, OperationKind::ScheduleRun],
            10,
        )
        .await
        .unwrap();
    assert_eq!(durations, vec![2_000, 1_000]);
}

/// Every tenant read of namespace `tenant`, in one comparable value.
async fn everything_of(
    store: &SharedHistory,
    tenant: &TenantNamespace,
    ids: &[&str],
) -> Vec<String> {
    let mut out = Vec::new();
    let page = store
        .operations(tenant, &OperationFilter::default(), None, 500)
        .await
        .unwrap();
    out.push(format!("operations {:?}", page.items));
    for id in ids {
        out.push(format!(
            "operation {id} {:?}",
            store.operation(tenant, id).await.unwrap()
        ));
        out.push(format!(
            "timeline {id} {:?}",
            store.timeline(tenant, id).await.unwrap()
        ));
    }
    for kind in [OperationKind::Backup, OperationKind::ScheduleRun] {
        out.push(format!(
            "by name {kind} {:?}",
            store
                .operation_by_name(tenant, kind, "nightly")
                .await
                .unwrap()
        ));
    }
    let window = TimeWindow {
        from: T0 - MINUTE,
        to: T0 + 60 * MINUTE,
    };
    let mut stats = store.stats(tenant, window).await.unwrap();
    stats.namespace = String::new();
    out.push(format!("stats {stats:?}"));
    out.push(format!(
        "durations {:?}",
        store
            .recent_durations(
                tenant,
                &[OperationKind::Backup, OperationKind::ScheduleRun],
                10
            )
            .await
            .unwrap()
    ));
    let mut coverage = store.coverage(std::slice::from_ref(tenant)).await.unwrap();
    coverage[0].namespace = String::new();
    out.push(format!("coverage {coverage:?}"));
    out
}

async fn a_namespace_created_again_reads_nothing_of_its_predecessor(store: SharedHistory) {
    let old = TenantNamespace::new("team-a", "old-uid").unwrap();
    let new = TenantNamespace::new("team-a", "new-uid").unwrap();
    let never = TenantNamespace::new("team-n", "never-used-uid").unwrap();
    let of = |tenant: &TenantNamespace, mut record: OperationRecord| {
        record.namespace = tenant.name().to_string();
        record.namespace_uid = tenant.uid().to_string();
        record
    };
    // The predecessor: a completed backup, a failed schedule run, timelines.
    let mut backup = finished(
        of(&old, op("team-a", "old-backup", OperationKind::Backup, T0)),
        "Completed",
        T0 + 10,
        1_000,
    );
    backup.name = "nightly".into();
    let mut run = finished(
        of(
            &old,
            op("team-a", "old-run", OperationKind::ScheduleRun, T0),
        ),
        "Failed",
        T0 + 20,
        2_000,
    );
    run.parent_name = Some("hourly".into());
    // A row whose namespace UID is not known: never shown to anyone.
    let unknown = OperationRecord {
        namespace_uid: String::new(),
        ..finished(
            op("team-a", "unknown", OperationKind::Backup, T0),
            "Completed",
            T0 + 30,
            3_000,
        )
    };
    store
        .record(vec![
            obs(backup.clone(), vec![tr(&backup, T0, "phase", "New")]),
            obs(run.clone(), vec![tr(&run, T0, "phase", "New")]),
            obs(unknown.clone(), vec![tr(&unknown, T0, "phase", "New")]),
        ])
        .await
        .unwrap();
    let ids = ["old-backup", "old-run", "unknown", "new-backup"];

    // The predecessor's rows stay (the admin reads them; so would the old namespace).
    let before = everything_of(&store, &old, &ids).await;
    assert_eq!(
        store.operation(&old, "old-backup").await.unwrap(),
        Some(backup.clone())
    );
    assert_eq!(store.timeline(&old, "old-run").await.unwrap().len(), 1);
    // The namespace created again under the same name answers every read exactly as a
    // namespace never used does.
    assert_eq!(
        everything_of(&store, &new, &ids).await,
        everything_of(&store, &never, &ids).await
    );
    assert!(
        store
            .operations(&new, &OperationFilter::default(), None, 500)
            .await
            .unwrap()
            .items
            .is_empty()
    );

    // Recording a predecessor's operation again with the new UID does not move it.
    store
        .record(bare(vec![of(&new, backup.clone())]))
        .await
        .unwrap();
    assert_eq!(
        store.operation(&old, "old-backup").await.unwrap(),
        Some(backup.clone())
    );
    assert_eq!(store.operation(&new, "old-backup").await.unwrap(), None);

    // The new namespace's own backup of the same name: its own, and only its own.
    let mut mine = finished(
        of(
            &new,
            op("team-a", "new-backup", OperationKind::Backup, T0 + MINUTE),
        ),
        "Completed",
        T0 + MINUTE + 10,
        5_000,
    );
    mine.name = "nightly".into();
    store
        .record(vec![obs(
            mine.clone(),
            vec![tr(&mine, T0 + MINUTE, "phase", "New")],
        )])
        .await
        .unwrap();
    let page = store
        .operations(&new, &OperationFilter::default(), None, 500)
        .await
        .unwrap();
    assert_eq!(page.items, vec![mine.clone()]);
    assert_eq!(
        store
            .operation_by_name(&new, OperationKind::Backup, "nightly")
            .await
            .unwrap()
            .map(|r| r.id),
        Some("new-backup".to_string())
    );
    assert_eq!(
        store
            .recent_durations(&new, &[OperationKind::Backup], 10)
            .await
            .unwrap(),
        vec![5_000]
    );
    let coverage = store.coverage(std::slice::from_ref(&new)).await.unwrap();
    assert_eq!(coverage[0].failing_schedules, Vec::<String>::new());
    assert_eq!(
        coverage[0].last_successful_backup.as_deref(),
        Some("nightly")
    );
    // ... and the predecessor's reads are as they were.
    assert_eq!(everything_of(&store, &old, &ids).await, before);

    // A row recorded without its UID gets it once known (and is shown from then on).
    store
        .record(bare(vec![OperationRecord {
            namespace_uid: new.uid().to_string(),
            ..unknown.clone()
        }]))
        .await
        .unwrap();
    assert_eq!(
        store
            .operation(&new, "unknown")
            .await
            .unwrap()
            .map(|r| r.namespace_uid),
        Some("new-uid".to_string())
    );
    assert_eq!(store.operation(&old, "unknown").await.unwrap(), None);
}

async fn rows_without_a_namespace_uid_go_only_to_a_namespace_older_than_them(store: SharedHistory) {
    let legacy = |ns: &str, id: &str, created_at: i64| OperationRecord {
        namespace_uid: String::new(),
        ..finished(
            op(ns, id, OperationKind::Backup, created_at),
            "Completed",
            created_at + 10,
            1_000,
        )
    };
    let rows = vec![
        // Made before the namespace that exists now was created: its predecessor's.
        legacy("team-a", "before", T0),
        // Made after: its own.
        legacy("team-a", "after", T0 + 10 * MINUTE),
        legacy("team-a", "at-creation", T0 + 5 * MINUTE),
        // No creation time: nobody's.
        legacy("team-a", "timeless", 0),
        // Another namespace of which nothing is known now.
        legacy("team-b", "other", T0 + 10 * MINUTE),
    ];
    let mut batch = Vec::new();
    for row in &rows {
        batch.push(obs(
            row.clone(),
            vec![tr(row, row.created_at, "phase", "New")],
        ));
    }
    store.record(batch).await.unwrap();
    let now = TenantNamespace::new("team-a", "uid-now").unwrap();
    let all = ["before", "after", "at-creation", "timeless", "other"];
    for id in all {
        assert_eq!(store.operation(&now, id).await.unwrap(), None, "{id}");
    }

    let team_a = NamespaceIdentity {
        name: "team-a".into(),
        uid: "uid-now".into(),
        created_at: T0 + 5 * MINUTE,
    };
    assert_eq!(
        store
            .attribute_namespaces(vec![team_a.clone()])
            .await
            .unwrap(),
        2
    );
    let page = store
        .operations(&now, &OperationFilter::default(), None, 500)
        .await
        .unwrap();
    let ids: Vec<&str> = page.items.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, vec!["after", "at-creation"]);
    assert_eq!(store.timeline(&now, "after").await.unwrap().len(), 1);
    assert!(store.timeline(&now, "before").await.unwrap().is_empty());
    // Nothing moves once attributed; a namespace without a known creation time or UID
    // attributes nothing.
    assert_eq!(store.attribute_namespaces(vec![team_a]).await.unwrap(), 0);
    let later = NamespaceIdentity {
        name: "team-a".into(),
        uid: "uid-later".into(),
        created_at: T0,
    };
    assert_eq!(store.attribute_namespaces(vec![later]).await.unwrap(), 1);
    assert_eq!(
        store
            .operation(
                &TenantNamespace::new("team-a", "uid-later").unwrap(),
                "before"
            )
            .await
            .unwrap()
            .map(|r| r.id),
        Some("before".to_string()),
        "the oldest row goes to the first namespace old enough"
    );
    for unusable in [
        NamespaceIdentity {
            name: "team-a".into(),
            uid: "uid-x".into(),
            created_at: 0,
        },
        NamespaceIdentity {
            name: "team-b".into(),
            uid: String::new(),
            created_at: T0,
        },
    ] {
        assert_eq!(store.attribute_namespaces(vec![unusable]).await.unwrap(), 0);
    }
    assert_eq!(store.attribute_namespaces(Vec::new()).await.unwrap(), 0);
    let timeless = TenantNamespace::new("team-a", "uid-x").unwrap();
    assert_eq!(store.operation(&timeless, "timeless").await.unwrap(), None);
    assert_eq!(store.operation(&now, "timeless").await.unwrap(), None);
}

async fn idempotency_answers_are_bound_to_the_namespace_uid(store: SharedHistory) {
    use IdempotencyState::*;
    let ttl = 600_000;
    let path = "/api/v1/namespaces/team-a/backups";
    let caller = "system:serviceaccount:team-a:ci-bot";
    let answer = IdempotencyAnswer {
        status: 201,
        content_type: "application/json".into(),
        body: br#"{"name":"old"}"#.to_vec(),
    };
    let begin = |uid: &'static str, digest: &'static [u8]| {
        let store = store.clone();
        async move {
            store
                .idempotency_begin(caller, path, "k", uid, digest, ttl)
                .await
                .unwrap()
        }
    };
    assert_eq!(begin("old-uid", b"body").await, Claimed);
    store
        .idempotency_finish(caller, path, "k", "old-uid", answer.clone(), ttl)
        .await
        .unwrap();
    assert_eq!(begin("old-uid", b"body").await, Done(answer.clone()));
    // The namespace of the same name with another UID: as if the key had never been used
    // (no replay, no mismatch for another body).
    assert_eq!(begin("new-uid", b"other body").await, Claimed);
    // The predecessor's late finish and abandon do not touch the new claim.
    store
        .idempotency_finish(caller, path, "k", "old-uid", answer.clone(), ttl)
        .await
        .unwrap();
    store
        .idempotency_abandon(caller, path, "k", "old-uid")
        .await
        .unwrap();
    assert_eq!(begin("new-uid", b"other body").await, InFlight);
    let mine = IdempotencyAnswer {
        status: 201,
        content_type: "application/json".into(),
        body: br#"{"name":"new"}"#.to_vec(),
    };
    store
        .idempotency_finish(caller, path, "k", "new-uid", mine.clone(), ttl)
        .await
        .unwrap();
    assert_eq!(begin("new-uid", b"other body").await, Done(mine));
    assert_eq!(begin("new-uid", b"body").await, Mismatch);
}

async fn migrate_twice_is_a_no_op(store: SharedHistory) {
    let record = op("team-a", "kept", OperationKind::Backup, T0);
    store
        .record(vec![obs(
            record.clone(),
            vec![tr(&record, T0, "phase", "New")],
        )])
        .await
        .unwrap();
    // open() migrated already; two more runs change nothing.
    store.migrate().await.unwrap();
    store.migrate().await.unwrap();
    assert_eq!(
        store.operation(&tn("team-a"), "kept").await.unwrap(),
        Some(record)
    );
    assert_eq!(
        store.timeline(&tn("team-a"), "kept").await.unwrap().len(),
        1
    );
}

#[tokio::test]
async fn reopening_a_database_keeps_its_data() {
    let dir = tempfile::tempdir().unwrap();
    // The file's directory does not exist yet: the store creates it.
    let url = nac::history::sqlite_url_for(&dir.path().join("nested/deeper/history.db"));
    let record = op("team-a", "r", OperationKind::Backup, T0);
    {
        let store = nac::history::open(&url).await.unwrap();
        store.record(bare(vec![record.clone()])).await.unwrap();
    }
    let store = nac::history::open(&url).await.unwrap();
    assert_eq!(
        store.operation(&tn("team-a"), "r").await.unwrap(),
        Some(record.clone())
    );

    let pg = PgCluster::shared().fresh_database();
    nac::history::open(&pg)
        .await
        .unwrap()
        .record(bare(vec![record.clone()]))
        .await
        .unwrap();
    let again = nac::history::open(&pg).await.unwrap();
    assert_eq!(
        again.operation(&tn("team-a"), "r").await.unwrap(),
        Some(record)
    );
}

#[tokio::test]
async fn sqlite_urls_create_their_file() {
    // `sqlite:///abs/path` to a file (and directory) that do not exist yet, without `mode=rwc`.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("new-dir/new.db");
    let url = format!("sqlite://{}", file.display());
    assert!(url.starts_with("sqlite:///"), "{url}");
    let record = op("team-a", "f", OperationKind::Backup, T0);
    nac::history::open(&url)
        .await
        .unwrap()
        .record(bare(vec![record.clone()]))
        .await
        .unwrap();
    assert!(file.is_file());
    let again = nac::history::open(&url).await.unwrap();
    assert_eq!(
        again.operation(&tn("team-a"), "f").await.unwrap(),
        Some(record)
    );

    // `sqlite://relative` and `sqlite:relative` (relative to the working directory), as
    // `--database-url` of a command run there.
    for (url, created) in [
        ("sqlite://history.db", "history.db"),
        ("sqlite:sub/history.db", "sub/history.db"),
    ] {
        let cwd = tempfile::tempdir().unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_nac"))
            .args(["migrate", "--database-url", url])
            .env_remove("NAC_DATABASE_URL")
            .current_dir(cwd.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{url}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(cwd.path().join(created).is_file(), "{url}");
    }
}

#[tokio::test]
async fn an_in_memory_sqlite_database_works() {
    let store = nac::history::open("sqlite::memory:").await.unwrap();
    let record = op("team-a", "m", OperationKind::Backup, T0);
    store.record(bare(vec![record.clone()])).await.unwrap();
    assert_eq!(
        store.operation(&tn("team-a"), "m").await.unwrap(),
        Some(record)
    );
}

#[tokio::test]
async fn bad_urls_fail_clearly_without_the_password() {
    let cases = [
        "mysql://nac:hunter2@127.0.0.1/history",
        "postgres://nac:hunter2@127.0.0.1:notaport/history",
        "postgres://nac:hunter2@127.0.0.1:5432/history?sslmode=sometimes",
    ];
    for url in cases {
        let err = nac::history::open(url).await.err().unwrap();
        let text = err.to_string();
        assert!(!text.contains("hunter2"), "{url}: {text}");
        assert!(!format!("{err:?}").contains("hunter2"), "{url}: {err:?}");
        assert!(
            matches!(
                err,
                HistoryError::UnsupportedUrl(_) | HistoryError::InvalidInput(_)
            ),
            "{url}: {err:?}"
        );
        println!("{url} -> {text}");
    }
    // A SQLite file that cannot be created.
    let err = nac::history::open("sqlite:///proc/nac-cannot-exist/x.db?mode=rwc")
        .await
        .err()
        .unwrap();
    assert!(err.to_string().contains("nac-cannot-exist"), "{err}");
}

#[tokio::test]
async fn an_unreachable_server_is_unavailable_within_seconds() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("postgres://nac:hunter2@127.0.0.1:{port}/history");
    let started = Instant::now();
    let err = nac::history::open(&url).await.err().unwrap();
    let took = started.elapsed();
    assert!(err.is_unavailable(), "{err:?}");
    println!("unreachable after {took:?}: {err}");
    assert!(took < Duration::from_secs(8), "took {took:?}");
    assert!(!err.to_string().contains("hunter2"), "{err}");
    assert!(
        err.to_string().contains(&format!("127.0.0.1:{port}")),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_outage_is_unavailable_then_heals() {
    // Its own cluster: stopping the shared one would fail the other tests.
    let cluster = PgCluster::start();
    let url = cluster.fresh_database();
    let store = nac::history::open(&url).await.unwrap();
    let record = op("team-a", "before", OperationKind::Backup, T0);
    store.record(bare(vec![record.clone()])).await.unwrap();

    cluster.stop();
    let started = Instant::now();
    let err = store.ping().await.err().unwrap();
    assert!(err.is_unavailable(), "{err:?}");
    let err = store
        .record(bare(vec![op(
            "team-a",
            "during",
            OperationKind::Backup,
            T0,
        )]))
        .await
        .err()
        .unwrap();
    assert!(err.is_unavailable(), "{err:?}");
    let err = store
        .operation(&tn("team-a"), "before")
        .await
        .err()
        .unwrap();
    assert!(err.is_unavailable(), "{err:?}");
    println!(
        "three failed calls during the outage took {:?}",
        started.elapsed()
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );

    cluster.start_again();
    store.ping().await.unwrap();
    assert_eq!(
        store.operation(&tn("team-a"), "before").await.unwrap(),
        Some(record)
    );
    store
        .record(bare(vec![op("team-a", "after", OperationKind::Backup, T0)]))
        .await
        .unwrap();
}
