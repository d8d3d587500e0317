//! The history recorder on the emulator and on the real kube-apiserver (each case
//! `NAME::emulator` and `NAME::real`) with the Velero simulator and NAC's controllers (all as
//! their own service accounts with `deploy/`'s RBAC; the recorder as the controller's):
//! timelines of backups, restores and schedule runs in a SQLite store, replays that add
//! nothing, deletions (seen and missed), a Postgres outage in the middle of running backups and
//! an overflowing buffer made good by a resync. Each case works in a tenant namespace of its own
//! (owned by alice) with a store of its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/postgres.rs"]
mod postgres_support;
mod support;

use support::cluster::{TestCluster, eventually, wait_until_gone};
use support::controller_env::ControllerEnv;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use nac::api::nonadmin::{NonAdminBackup, NonAdminRestore, NonAdminSchedule};
use nac::history::observe::{self, PhaseSource, phase_rank};
use nac::history::recorder::{Recorder, RecorderConfig, RecorderHandle, RecorderStats};
use nac::history::{
    Backend, Coverage, EpochMillis, HistoryError, HistoryStore, IdempotencyAnswer,
    IdempotencyState, ManifestPut, ManifestSummary, ManifestTarget, NamespaceIdentity,
    NamespaceStats, Observation, OperationCursor, OperationFilter, OperationKind, OperationPage,
    OperationRecord, SharedHistory, StoreFuture, StoredManifest, StoredTransition, TenantNamespace,
    TimeWindow,
};
use nac::sim::demo::OADP_NAMESPACE;
use nac::sim::velero::options::SimulatorOptions;
use postgres_support::PgCluster;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, Ordering};

/// The shared controller environment, plus the case's tenant namespace.
struct Env {
    base: ControllerEnv,
    /// The case's tenant namespace, owned by alice.
    ns: String,
    /// That namespace as the history store's reads name it (name and UID).
    tenant: TenantNamespace,
}

impl std::ops::Deref for Env {
    type Target = ControllerEnv;
    fn deref(&self) -> &ControllerEnv {
        &self.base
    }
}

async fn env(cluster: TestCluster, configure: impl FnOnce(&mut SimulatorOptions)) -> Env {
    let base = ControllerEnv::new(cluster).await;
    let ns = base.cluster.unique_name("team-a", None);
    base.cluster.tenant_namespace("alice", &ns).await;
    let namespace_uid = Api::<k8s_openapi::api::core::v1::Namespace>::all(base.admin.clone())
        .get(&ns)
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    let tenant = TenantNamespace::new(ns.as_str(), namespace_uid).unwrap();
    base.start_velero(configure).await;
    base.start_controllers();
    Env { base, ns, tenant }
}

/// A running recorder, stopped when dropped.
struct Running {
    handle: RecorderHandle,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    fn stats(&self) -> RecorderStats {
        self.handle.stats()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn start_recorder(e: &Env, store: &SharedHistory, config: RecorderConfig) -> Running {
    let recorder = Recorder::new(e.controller.clone(), OADP_NAMESPACE, store.clone(), config);
    let handle = recorder.handle();
    Running {
        handle,
        task: tokio::spawn(recorder.run()),
    }
}

fn fast() -> RecorderConfig {
    RecorderConfig {
        flush_interval: Duration::from_millis(50),
        retry_max_backoff: Duration::from_millis(500),
        ..Default::default()
    }
}

async fn sqlite_store(dir: &tempfile::TempDir) -> SharedHistory {
    nac::history::open(&nac::history::sqlite_url_for(
        &dir.path().join("history.db"),
    ))
    .await
    .unwrap()
}

/// Waits until the recorder has caught up: initial lists swept, database up, nothing buffered.
async fn settled(r: &Running, secs: u64) -> RecorderStats {
    eventually("the recorder to settle", secs, || async {
        let s = r.stats();
        (s.synced && s.database_up && s.buffered == 0).then_some(s)
    })
    .await
}

fn nab(name: &str) -> NonAdminBackup {
    serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
        "metadata": {"name": name}, "spec": {"backupSpec": {}}
    }))
    .unwrap()
}

fn nabs(c: &Client, ns: &str) -> Api<NonAdminBackup> {
    Api::namespaced(c.clone(), ns)
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

async fn wait_object<K>(api: &Api<K>, name: &str, secs: u64, done: impl Fn(&Value) -> bool) -> K
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let what = format!("{name} to get ready");
    eventually(&what, secs, || async {
        let o = api.get_opt(name).await.unwrap()?;
        done(&serde_json::to_value(&o).unwrap()).then_some(o)
    })
    .await
}

async fn wait_completed(c: &Client, ns: &str, name: &str) -> NonAdminBackup {
    wait_object(&nabs(c, ns), name, 90, |v| {
        s(v, "/status/phase") == "Created"
            && s(v, "/status/veleroBackup/status/phase") == "Completed"
            && v.pointer("/status/queueInfo/estimatedQueuePosition") == Some(&json!(0))
    })
    .await
}

async fn wait_gone(c: &Client, ns: &str, name: &str) {
    wait_until_gone(&nabs(c, ns), name, 60).await
}

fn uid<K: kube::Resource>(o: &K) -> String {
    o.meta().uid.clone().unwrap()
}

async fn operation(
    store: &SharedHistory,
    ns: &TenantNamespace,
    id: &str,
) -> Option<OperationRecord> {
    store.operation(ns, id).await.unwrap()
}

/// Waits until the stored operation passes `done`.
async fn wait_operation(
    store: &SharedHistory,
    ns: &TenantNamespace,
    id: &str,
    done: impl Fn(&OperationRecord) -> bool,
) -> OperationRecord {
    eventually(&format!("operation {id} in the store"), 60, || async {
        operation(store, ns, id).await.filter(|o| done(o))
    })
    .await
}

fn values(timeline: &[StoredTransition], attribute: &str) -> Vec<String> {
    timeline
        .iter()
        .filter(|t| t.transition.attribute == attribute)
        .map(|t| t.transition.value.clone())
        .collect()
}

/// Every transition stored for namespace `ns` (operations paged through, each timeline read).
async fn all_transitions(store: &SharedHistory, ns: &TenantNamespace) -> Vec<StoredTransition> {
    let mut out = Vec::new();
    let filter = OperationFilter::default();
    let mut after = None;
    loop {
        let page = store
            .operations(ns, &filter, after.as_ref(), 100)
            .await
            .unwrap();
        for o in &page.items {
            out.extend(store.timeline(ns, &o.id).await.unwrap());
        }
        match page.next {
            Some(next) => after = Some(next),
            None => return out,
        }
    }
}

/// Asserts that every fact the NAB shows now (NAC phase, Velero phase, each condition with
/// its lastTransitionTime) is in its stored timeline, and that the operation has the phase.
async fn assert_cluster_facts_stored(
    store: &SharedHistory,
    ns: &TenantNamespace,
    nab: &NonAdminBackup,
) {
    let id = uid(nab);
    let name = nab.metadata.name.clone().unwrap();
    assert_eq!(nab.metadata.namespace.as_deref(), Some(ns.name()));
    let status = nab.status.clone().unwrap();
    let timeline = store.timeline(ns, &id).await.unwrap();
    let has = |attribute: &str, value: &str, dedup: &str| {
        timeline.iter().any(|t| {
            t.transition.attribute == attribute
                && t.transition.value == value
                && t.transition.dedup == dedup
        })
    };
    let nac_phase = status.phase.unwrap().as_str().to_string();
    assert!(has("phase", &nac_phase, ""), "{name}: phase {nac_phase}");
    let velero_phase = status
        .velero_backup
        .as_ref()
        .and_then(|v| v.status.as_ref())
        .and_then(|s| s.phase.as_ref())
        .map(|p| p.as_str().to_string())
        .unwrap();
    assert!(
        has("veleroPhase", &velero_phase, ""),
        "{name}: veleroPhase {velero_phase}"
    );
    for c in &status.conditions {
        assert!(
            has(
                &format!("condition/{}", c.type_),
                &c.status,
                &c.last_transition_time.0.to_string()
            ),
            "{name}: condition {} {} at {:?}",
            c.type_,
            c.status,
            c.last_transition_time
        );
    }
    let op = operation(store, ns, &id).await.unwrap();
    assert_eq!(op.phase.as_deref(), Some(velero_phase.as_str()), "{name}");
    assert_eq!(op.nac_phase.as_deref(), Some(nac_phase.as_str()), "{name}");
}

/// What the recorder saw of a queue: four backups run one at a time (a queue forms behind the
/// first), then a restore from the first; returned once the store has every one of them
/// Completed and the recorder has settled.
struct RecordedQueue {
    e: Env,
    dir: tempfile::TempDir,
    store: SharedHistory,
    recorder: Running,
    done: Vec<NonAdminBackup>,
    restored: NonAdminRestore,
}

async fn recorded_queue(cluster: TestCluster) -> RecordedQueue {
    // One backup at a time, each taking a while: a queue forms behind the first.
    let e = env(cluster, |o| o.item_delay = Duration::from_millis(30)).await;
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite_store(&dir).await;
    let recorder = start_recorder(&e, &store, fast());
    settled(&recorder, 30).await;

    let names = ["q1", "q2", "q3", "q4"];
    for name in names {
        nabs(&e.alice, &e.ns)
            .create(&PostParams::default(), &nab(name))
            .await
            .unwrap();
    }
    let mut done = Vec::new();
    for name in names {
        done.push(wait_completed(&e.alice, &e.ns, name).await);
    }
    let nars: Api<NonAdminRestore> = Api::namespaced(e.alice.clone(), &e.ns);
    let restore: NonAdminRestore = serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminRestore",
        "metadata": {"name": "back"}, "spec": {"restoreSpec": {"backupName": "q1"}}
    }))
    .unwrap();
    nars.create(&PostParams::default(), &restore).await.unwrap();
    let restored = wait_object(&nars, "back", 60, |v| {
        s(v, "/status/veleroRestore/status/phase") == "Completed"
    })
    .await;
    for nab in &done {
        wait_operation(&store, &e.tenant, &uid(nab), |o| {
            o.phase.as_deref() == Some("Completed") && o.completed_at.is_some()
        })
        .await;
    }
    wait_operation(&store, &e.tenant, &uid(&restored), |o| {
        o.phase.as_deref() == Some("Completed")
    })
    .await;
    settled(&recorder, 30).await;
    RecordedQueue {
        e,
        dir,
        store,
        recorder,
        done,
        restored,
    }
}

async fn backups_and_restores_are_recorded_as_operations(cluster: TestCluster) {
    let RecordedQueue {
        e,
        dir: _dir,
        store,
        recorder,
        done,
        restored,
    } = recorded_queue(cluster).await;
    // The operations: what each backup ran, from start to completion.
    for nab in &done {
        let op = wait_operation(&store, &e.tenant, &uid(nab), |o| {
            o.phase.as_deref() == Some("Completed") && o.completed_at.is_some()
        })
        .await;
        let related = nab.status.as_ref().unwrap().velero_backup.clone().unwrap();
        let vs = related.status.clone().unwrap();
        assert_eq!(op.kind, Some(OperationKind::Backup));
        assert_eq!(op.name, nab.metadata.name.clone().unwrap());
        assert_eq!(op.velero_name, related.name);
        assert_eq!(op.nac_phase.as_deref(), Some("Created"));
        assert_eq!(
            op.created_at,
            nab.metadata
                .creation_timestamp
                .as_ref()
                .unwrap()
                .0
                .as_millisecond()
        );
        assert_eq!(
            op.started_at,
            vs.start_timestamp.as_ref().map(|t| t.0.as_millisecond())
        );
        assert_eq!(
            op.completed_at,
            vs.completion_timestamp
                .as_ref()
                .map(|t| t.0.as_millisecond())
        );
        assert!(
            op.started_at.is_some() && op.duration_ms().is_some(),
            "{op:?}"
        );
        let progress = vs.progress.clone().unwrap();
        assert_eq!(op.items_total, progress.total_items);
        assert_eq!(op.items_done, progress.items_backed_up);
        assert!(op.items_total.is_some());
        assert_eq!(op.queue_position, Some(0));
        assert_eq!(op.deleted_at, None);
    }
    let op = wait_operation(&store, &e.tenant, &uid(&restored), |o| {
        o.phase.as_deref() == Some("Completed")
    })
    .await;
    assert_eq!(op.kind, Some(OperationKind::Restore));
    assert_eq!(op.parent_name.as_deref(), Some("q1"));
    assert!(op.items_done.is_some() && op.started_at.is_some() && op.completed_at.is_some());
    settled(&recorder, 30).await;
}

async fn timelines_are_in_order_and_other_tenants_read_none(cluster: TestCluster) {
    let RecordedQueue {
        e,
        dir: _dir,
        store,
        recorder: _recorder,
        done,
        restored,
    } = recorded_queue(cluster).await;
    // The timelines, oldest first.
    let mut queued_somewhere = false;
    for nab in &done {
        let name = nab.metadata.name.clone().unwrap();
        let timeline = store.timeline(&e.tenant, &uid(nab)).await.unwrap();
        assert_eq!(values(&timeline, "phase"), vec!["New", "Created"], "{name}");
        let velero = values(&timeline, "veleroPhase");
        assert!(
            matches!(velero.first().map(String::as_str), Some("New" | "Queued")),
            "{name}: {velero:?}"
        );
        assert!(
            velero.contains(&"InProgress".to_string()),
            "{name}: {velero:?}"
        );
        assert_eq!(
            velero.last().map(String::as_str),
            Some("Completed"),
            "{name}: {timeline:#?}"
        );
        assert!(
            velero
                .windows(2)
                .all(|w| phase_rank(PhaseSource::Velero, &w[0])
                    < phase_rank(PhaseSource::Velero, &w[1])),
            "{name}: Velero phases in order: {velero:?} in {timeline:#?}"
        );
        // NAC's New comes first, Velero's outcome last.
        assert_eq!(timeline[0].transition.attribute, "phase", "{name}");
        assert!(
            timeline
                .windows(2)
                .all(|w| w[0].transition.at <= w[1].transition.at)
        );
        let conditions = &nab.status.as_ref().unwrap().conditions;
        assert!(!conditions.is_empty());
        for c in conditions {
            let stored = timeline
                .iter()
                .find(|t| t.transition.attribute == format!("condition/{}", c.type_))
                .unwrap_or_else(|| panic!("{name}: no condition {}", c.type_));
            assert_eq!(stored.transition.value, c.status);
            assert_eq!(stored.transition.reason.as_deref(), Some(c.reason.as_str()));
            assert_eq!(
                stored.transition.message.as_deref(),
                Some(c.message.as_str())
            );
            assert_eq!(
                stored.transition.dedup,
                c.last_transition_time.0.to_string()
            );
        }
        let positions: Vec<i64> = values(&timeline, "queuePosition")
            .iter()
            .map(|p| p.parse().unwrap())
            .collect();
        if !positions.is_empty() {
            queued_somewhere = true;
            assert_eq!(positions.last(), Some(&0), "{name}: {positions:?}");
            let waiting = &positions[..positions.len() - 1];
            assert!(!waiting.is_empty() && waiting.iter().all(|p| *p > 0));
            assert!(
                waiting.windows(2).all(|w| w[1] < w[0]),
                "{name}: positions only move forward: {positions:?}"
            );
        }
        assert_cluster_facts_stored(&store, &e.tenant, nab).await;
    }
    assert!(
        queued_somewhere,
        "with one backup at a time, some were queued"
    );
    let restore_timeline = store.timeline(&e.tenant, &uid(&restored)).await.unwrap();
    assert_eq!(
        values(&restore_timeline, "veleroPhase")
            .last()
            .map(String::as_str),
        Some("Completed")
    );
    // Another tenant reads none of it (nor would a namespace of this name with another UID).
    let team_b = TenantNamespace::new("team-b", e.tenant.uid()).unwrap();
    let reborn = TenantNamespace::new(e.ns.as_str(), "another-uid").unwrap();
    for nab in &done {
        assert!(operation(&store, &reborn, &uid(nab)).await.is_none());
        assert!(store.operation(&team_b, &uid(nab)).await.unwrap().is_none());
        assert!(store.timeline(&team_b, &uid(nab)).await.unwrap().is_empty());
    }
}

async fn a_restarted_recorder_replays_what_the_cluster_shows_and_adds_nothing(
    cluster: TestCluster,
) {
    let RecordedQueue {
        e,
        dir: _dir,
        store,
        recorder,
        done: _done,
        restored: _restored,
    } = recorded_queue(cluster).await;
    // A restart replays everything the cluster shows: nothing new is stored.
    let before = all_transitions(&store, &e.tenant).await;
    let first = recorder.stats();
    assert!(first.written_transitions > 0 && first.batches > 0 && first.observed > 0);
    assert_eq!((first.dropped, first.unresolved), (0, 0), "{first:?}");
    drop(recorder);
    let again = start_recorder(&e, &store, fast());
    settled(&again, 30).await;
    // Give late watch events a moment, then compare.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let stats = again.stats();
    assert!(stats.batches > 0, "the replay was written: {stats:?}");
    assert_eq!(stats.written_transitions, 0, "and added nothing: {stats:?}");
    let after = all_transitions(&store, &e.tenant).await;
    assert_eq!(after.len(), before.len());
    assert_eq!(after, before);
}

async fn deletions_keep_history_seen_or_missed(cluster: TestCluster) {
    let e = env(cluster, |_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite_store(&dir).await;
    let recorder = start_recorder(&e, &store, fast());
    settled(&recorder, 30).await;
    let api = nabs(&e.alice, &e.ns);
    for name in ["doomed", "kept", "missed"] {
        api.create(&PostParams::default(), &nab(name))
            .await
            .unwrap();
    }
    let doomed = wait_completed(&e.alice, &e.ns, "doomed").await;
    let kept = wait_completed(&e.alice, &e.ns, "kept").await;
    let missed = wait_completed(&e.alice, &e.ns, "missed").await;
    for n in [&doomed, &kept, &missed] {
        wait_operation(&store, &e.tenant, &uid(n), |o| {
            o.phase.as_deref() == Some("Completed")
        })
        .await;
    }

    // Permanent deletion: the NAB goes, its history stays, with the deletion as an operation.
    api.patch(
        "doomed",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"deleteBackup": true}})),
    )
    .await
    .unwrap();
    wait_gone(&e.alice, &e.ns, "doomed").await;
    let backup = wait_operation(&store, &e.tenant, &uid(&doomed), |o| o.deleted_at.is_some()).await;
    assert_eq!(
        backup.phase.as_deref(),
        Some("Completed"),
        "its outcome is kept"
    );
    assert_eq!(backup.name, "doomed");
    let delete_id = observe::delete_operation_id(&uid(&doomed));
    let deletion = wait_operation(&store, &e.tenant, &delete_id, |o| {
        o.phase.as_deref() == Some("Processed") && o.deleted_at.is_some()
    })
    .await;
    assert_eq!(deletion.kind, Some(OperationKind::Delete));
    assert_eq!(deletion.parent_name.as_deref(), Some("doomed"));
    assert_eq!(deletion.failure_reason, None);
    let by_name = store
        .operation_by_name(&e.tenant, OperationKind::Backup, "doomed")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(by_name.id, uid(&doomed));
    let timeline = store.timeline(&e.tenant, &uid(&doomed)).await.unwrap();
    assert!(values(&timeline, "phase").contains(&"Deleting".to_string()));
    assert_eq!(
        timeline.last().map(|t| t.transition.attribute.as_str()),
        Some("deleted")
    );
    let deletion_timeline = store.timeline(&e.tenant, &delete_id).await.unwrap();
    assert!(values(&deletion_timeline, "veleroPhase").contains(&"Processed".to_string()));
    // Another namespace finds nothing of it, by id or by name.
    for id in [uid(&doomed), delete_id.clone()] {
        // Another namespace's name (even with this one's UID) reads none of it.
        let team_b = TenantNamespace::new("team-b", e.tenant.uid()).unwrap();
        assert!(store.operation(&team_b, &id).await.unwrap().is_none());
        assert!(store.timeline(&team_b, &id).await.unwrap().is_empty());
    }
    assert!(
        store
            .operation_by_name(
                &TenantNamespace::new("team-b", e.tenant.uid()).unwrap(),
                OperationKind::Backup,
                "doomed",
            )
            .await
            .unwrap()
            .is_none()
    );

    // Deleted while no recorder runs: marked on the next start; the others stay live.
    settled(&recorder, 30).await;
    drop(recorder);
    api.delete("missed", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&e.alice, &e.ns, "missed").await;
    assert_eq!(
        operation(&store, &e.tenant, &uid(&missed))
            .await
            .unwrap()
            .deleted_at,
        None
    );
    let again = start_recorder(&e, &store, fast());
    settled(&again, 30).await;
    let gone = operation(&store, &e.tenant, &uid(&missed)).await.unwrap();
    assert!(gone.deleted_at.is_some(), "{gone:?}");
    assert_eq!(gone.phase.as_deref(), Some("Completed"));
    assert_eq!(
        operation(&store, &e.tenant, &uid(&kept))
            .await
            .unwrap()
            .deleted_at,
        None
    );
    let live: Vec<String> = store
        .live_operation_ids()
        .await
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(live, vec![uid(&kept)]);
}

/// A backup whose Velero Backup expired stays (upstream: BackingOff, Accepted=False
/// `VeleroBackupNotFound`), and its history tells the whole story in order: Created, Velero's
/// Completed, then BackingOff with the condition and its message; the operation keeps its
/// outcome and no failure reason.
async fn an_expired_backup_is_recorded_backing_off_after_it_completed(cluster: TestCluster) {
    // Two simulated hours per real second; the backup lives one simulated hour.
    let e = env(cluster, |o| o.time_scale = 7200.0).await;
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite_store(&dir).await;
    let recorder = start_recorder(&e, &store, fast());
    settled(&recorder, 30).await;
    let short: NonAdminBackup = serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
        "metadata": {"name": "short"}, "spec": {"backupSpec": {"ttl": "1h0m0s"}}
    }))
    .unwrap();
    nabs(&e.alice, &e.ns)
        .create(&PostParams::default(), &short)
        .await
        .unwrap();
    let kept = wait_object(&nabs(&e.alice, &e.ns), "short", 60, |v| {
        s(v, "/status/phase") == "BackingOff"
    })
    .await;
    let id = uid(&kept);
    let timeline = eventually("the BackingOff fact in the store", 30, || async {
        let timeline = store.timeline(&e.tenant, &id).await.unwrap();
        values(&timeline, "phase")
            .contains(&"BackingOff".to_string())
            .then_some(timeline)
    })
    .await;
    let phases: Vec<String> = values(&timeline, "phase");
    let created = phases.iter().position(|p| p == "Created").unwrap();
    let backing_off = phases.iter().position(|p| p == "BackingOff").unwrap();
    assert!(created < backing_off, "{phases:?}");
    // Recorded in the order it happened (Velero's stamps come from the simulator's faster
    // clock, so the store's insertion order tells it here).
    let seq = |attribute: &str, value: &str| {
        timeline
            .iter()
            .find(|t| t.transition.attribute == attribute && t.transition.value == value)
            .map(|t| t.seq)
            .unwrap()
    };
    assert!(
        seq("veleroPhase", "Completed") < seq("phase", "BackingOff"),
        "{timeline:?}"
    );
    let accepted = timeline
        .iter()
        .find(|t| t.transition.attribute == "condition/Accepted" && t.transition.value == "False")
        .unwrap();
    assert_eq!(
        accepted.transition.reason.as_deref(),
        Some("VeleroBackupNotFound")
    );
    assert!(
        accepted
            .transition
            .message
            .as_deref()
            .unwrap()
            .contains("Please create a new NonAdminBackup"),
        "{accepted:?}"
    );
    let op = wait_operation(&store, &e.tenant, &id, |o| {
        o.nac_phase.as_deref() == Some("BackingOff")
    })
    .await;
    assert_eq!(
        op.phase.as_deref(),
        Some("Completed"),
        "its outcome is kept"
    );
    assert_eq!(op.failure_reason, None, "vanishing is no refusal");
    assert_eq!(op.deleted_at, None, "the NAB is kept");
}

async fn schedule_runs_are_recorded_under_their_schedule(cluster: TestCluster) {
    // One simulated hour per real second: an hourly cron fires about once a second.
    let e = env(cluster, |o| o.time_scale = 3600.0).await;
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite_store(&dir).await;
    let recorder = start_recorder(&e, &store, fast());
    let schedules: Api<NonAdminSchedule> = Api::namespaced(e.alice.clone(), &e.ns);
    let nas: NonAdminSchedule = serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminSchedule",
        "metadata": {"name": "hourly"},
        "spec": {"schedule": "0 * * * *", "template": {"backupSpec": {}}}
    }))
    .unwrap();
    schedules
        .create(&PostParams::default(), &nas)
        .await
        .unwrap();
    let api = nabs(&e.alice, &e.ns);
    let child = eventually("a completed schedule run", 90, || async {
        api.list(&Default::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .find(|n| {
                let v = serde_json::to_value(n).unwrap();
                s(&v, "/status/veleroBackup/status/phase") == "Completed"
            })
    })
    .await;
    let op = wait_operation(&store, &e.tenant, &uid(&child), |o| {
        o.phase.as_deref() == Some("Completed")
    })
    .await;
    assert_eq!(op.kind, Some(OperationKind::ScheduleRun));
    assert_eq!(op.parent_name.as_deref(), Some("hourly"));
    let related = child.status.clone().unwrap().velero_backup.unwrap();
    assert_eq!(op.velero_name, related.name);
    let timeline = store.timeline(&e.tenant, &uid(&child)).await.unwrap();
    assert!(values(&timeline, "veleroPhase").contains(&"Completed".to_string()));
    let stats = recorder.stats();
    assert_eq!(stats.dropped, 0, "{stats:?}");
}

async fn a_postgres_outage_loses_nothing_the_cluster_still_shows(cluster: TestCluster) {
    // This test stops its server, so it has a PostgreSQL cluster of its own.
    let pg = tokio::task::spawn_blocking(PgCluster::start).await.unwrap();
    let url = pg.fresh_database();
    let store = nac::history::open(&url).await.unwrap();
    let e = env(cluster, |o| o.item_delay = Duration::from_millis(60)).await;
    let recorder = start_recorder(&e, &store, fast());
    settled(&recorder, 30).await;

    let names: Vec<String> = (1..=8).map(|i| format!("b{i}")).collect();
    for name in &names {
        nabs(&e.alice, &e.ns)
            .create(&PostParams::default(), &nab(name))
            .await
            .unwrap();
    }
    // The first backup is under way: pull the database from under the recorder.
    let first = names[0].clone();
    wait_object(&nabs(&e.alice, &e.ns), &first, 60, |v| {
        s(v, "/status/veleroBackup/status/phase") == "InProgress"
    })
    .await;
    let pg = Arc::new(pg);
    let stopping = pg.clone();
    tokio::task::spawn_blocking(move || stopping.stop())
        .await
        .unwrap();
    // Everything runs to completion meanwhile.
    let mut done = Vec::new();
    for name in &names {
        done.push(wait_completed(&e.alice, &e.ns, name).await);
    }
    let down = eventually("the recorder to notice the outage", 30, || async {
        let s = recorder.stats();
        (!s.database_up && s.buffered > 0).then_some(s)
    })
    .await;
    assert!(down.buffered > 0, "{down:?}");
    let starting = pg.clone();
    tokio::task::spawn_blocking(move || starting.start_again())
        .await
        .unwrap();
    let stats = eventually("the recorder to catch up", 120, || async {
        let s = recorder.stats();
        (s.database_up && s.buffered == 0 && s.resyncs >= 1).then_some(s)
    })
    .await;
    assert_eq!(stats.dropped, 0, "{stats:?}");

    // Every fact the cluster still shows is stored, and every backup has its outcome.
    let mut seen_phases: BTreeMap<String, usize> = BTreeMap::new();
    for nab in &done {
        let current = nabs(&e.alice, &e.ns)
            .get(&nab.metadata.name.clone().unwrap())
            .await
            .unwrap();
        assert_cluster_facts_stored(&store, &e.tenant, &current).await;
        let op = operation(&store, &e.tenant, &uid(&current)).await.unwrap();
        assert_eq!(op.phase.as_deref(), Some("Completed"));
        assert!(
            op.completed_at.is_some() && op.started_at.is_some(),
            "{op:?}"
        );
        for p in values(
            &store.timeline(&e.tenant, &op.id).await.unwrap(),
            "veleroPhase",
        ) {
            *seen_phases.entry(p).or_default() += 1;
        }
    }
    // Transitions seen only while the database was down were buffered, not lost.
    assert!(
        seen_phases.get("InProgress").copied().unwrap_or(0) == names.len(),
        "{seen_phases:?}"
    );
}

/// A store that can be switched off: while off, every call fails as an unreachable database
/// would. Lets a test overflow the recorder's buffer without a server to stop.
#[derive(Debug)]
struct Switchable {
    inner: SharedHistory,
    down: AtomicBool,
}

impl Switchable {
    fn gate<'a, T: Send + 'a>(&'a self, call: StoreFuture<'a, T>) -> StoreFuture<'a, T> {
        if self.down.load(Ordering::Relaxed) {
            Box::pin(async { Err(HistoryError::Unavailable("switched off by the test".into())) })
        } else {
            call
        }
    }
}

impl HistoryStore for Switchable {
    fn backend(&self) -> Backend {
        self.inner.backend()
    }
    fn migrate(&self) -> StoreFuture<'_, ()> {
        self.gate(self.inner.migrate())
    }
    fn record(&self, batch: Vec<Observation>) -> StoreFuture<'_, u64> {
        self.gate(self.inner.record(batch))
    }
    fn note_requester(&self, operation: OperationRecord, requester: String) -> StoreFuture<'_, ()> {
        self.gate(self.inner.note_requester(operation, requester))
    }
    fn live_operation_ids(&self) -> StoreFuture<'_, Vec<(String, OperationKind)>> {
        self.gate(self.inner.live_operation_ids())
    }
    fn mark_deleted(&self, ids: Vec<String>, at: EpochMillis) -> StoreFuture<'_, u64> {
        self.gate(self.inner.mark_deleted(ids, at))
    }
    fn attribute_namespaces(&self, namespaces: Vec<NamespaceIdentity>) -> StoreFuture<'_, u64> {
        self.gate(self.inner.attribute_namespaces(namespaces))
    }
    fn operation<'a>(
        &'a self,
        namespace: &'a TenantNamespace,
        id: &'a str,
    ) -> StoreFuture<'a, Option<OperationRecord>> {
        self.gate(self.inner.operation(namespace, id))
    }
    fn operation_by_name<'a>(
        &'a self,
        namespace: &'a TenantNamespace,
        kind: OperationKind,
        name: &'a str,
    ) -> StoreFuture<'a, Option<OperationRecord>> {
        self.gate(self.inner.operation_by_name(namespace, kind, name))
    }
    fn timeline<'a>(
        &'a self,
        namespace: &'a TenantNamespace,
        id: &'a str,
    ) -> StoreFuture<'a, Vec<StoredTransition>> {
        self.gate(self.inner.timeline(namespace, id))
    }
    fn operations<'a>(
        &'a self,
        namespace: &'a TenantNamespace,
        filter: &'a OperationFilter,
        after: Option<&'a OperationCursor>,
        limit: u32,
    ) -> StoreFuture<'a, OperationPage> {
        self.gate(self.inner.operations(namespace, filter, after, limit))
    }
    fn stats<'a>(
        &'a self,
        namespace: &'a TenantNamespace,
        window: TimeWindow,
    ) -> StoreFuture<'a, NamespaceStats> {
        self.gate(self.inner.stats(namespace, window))
    }
    fn recent_durations<'a>(
        &'a self,
        namespace: &'a TenantNamespace,
        kinds: &'a [OperationKind],
        limit: u32,
    ) -> StoreFuture<'a, Vec<i64>> {
        self.gate(self.inner.recent_durations(namespace, kinds, limit))
    }
    fn coverage<'a>(&'a self, namespaces: &'a [TenantNamespace]) -> StoreFuture<'a, Vec<Coverage>> {
        self.gate(self.inner.coverage(namespaces))
    }
    fn purge(&self, cutoff: EpochMillis) -> StoreFuture<'_, u64> {
        self.gate(self.inner.purge(cutoff))
    }
    fn idempotency_begin<'a>(
        &'a self,
        caller: &'a str,
        path: &'a str,
        key: &'a str,
        namespace_uid: &'a str,
        body_digest: &'a [u8],
        in_flight_ttl_ms: i64,
    ) -> StoreFuture<'a, IdempotencyState> {
        self.gate(self.inner.idempotency_begin(
            caller,
            path,
            key,
            namespace_uid,
            body_digest,
            in_flight_ttl_ms,
        ))
    }
    fn idempotency_finish<'a>(
        &'a self,
        caller: &'a str,
        path: &'a str,
        key: &'a str,
        namespace_uid: &'a str,
        answer: IdempotencyAnswer,
        ttl_ms: i64,
    ) -> StoreFuture<'a, ()> {
        self.gate(
            self.inner
                .idempotency_finish(caller, path, key, namespace_uid, answer, ttl_ms),
        )
    }
    fn idempotency_abandon<'a>(
        &'a self,
        caller: &'a str,
        path: &'a str,
        key: &'a str,
        namespace_uid: &'a str,
    ) -> StoreFuture<'a, ()> {
        self.gate(
            self.inner
                .idempotency_abandon(caller, path, key, namespace_uid),
        )
    }
    fn ping(&self) -> StoreFuture<'_, ()> {
        self.gate(self.inner.ping())
    }
    fn put_manifest(&self, manifest: StoredManifest) -> StoreFuture<'_, ManifestPut> {
        self.gate(self.inner.put_manifest(manifest))
    }
    fn manifest<'a>(
        &'a self,
        namespace: &'a TenantNamespace,
        operation_id: &'a str,
    ) -> StoreFuture<'a, Option<StoredManifest>> {
        self.gate(self.inner.manifest(namespace, operation_id))
    }
    fn manifest_by_name<'a>(
        &'a self,
        namespace: &'a TenantNamespace,
        backup_name: &'a str,
    ) -> StoreFuture<'a, Option<StoredManifest>> {
        self.gate(self.inner.manifest_by_name(namespace, backup_name))
    }
    fn manifest_summaries<'a>(
        &'a self,
        namespace: &'a TenantNamespace,
    ) -> StoreFuture<'a, Vec<ManifestSummary>> {
        self.gate(self.inner.manifest_summaries(namespace))
    }
    fn manifests_missing(&self, limit: u32) -> StoreFuture<'_, Vec<ManifestTarget>> {
        self.gate(self.inner.manifests_missing(limit))
    }
}

async fn an_overflowing_buffer_is_made_good_by_a_resync_from_cluster_state(cluster: TestCluster) {
    let e = env(cluster, |o| o.item_delay = Duration::from_millis(20)).await;
    let dir = tempfile::tempdir().unwrap();
    let sqlite = sqlite_store(&dir).await;
    let switch = Arc::new(Switchable {
        inner: sqlite.clone(),
        down: AtomicBool::new(false),
    });
    let store: SharedHistory = switch.clone();
    // A buffer far too small for what happens while the store is away.
    let config = RecorderConfig {
        buffer_capacity: 4,
        ..fast()
    };
    let recorder = start_recorder(&e, &store, config);
    settled(&recorder, 30).await;
    switch.down.store(true, Ordering::Relaxed);
    let names: Vec<String> = (1..=4).map(|i| format!("o{i}")).collect();
    for name in &names {
        nabs(&e.alice, &e.ns)
            .create(&PostParams::default(), &nab(name))
            .await
            .unwrap();
    }
    let mut done = Vec::new();
    for name in &names {
        done.push(wait_completed(&e.alice, &e.ns, name).await);
    }
    let down = recorder.stats();
    assert!(!down.database_up, "{down:?}");
    assert!(down.dropped > 0, "the buffer overflowed: {down:?}");
    assert!(down.buffered <= 4 + 500, "bounded: {down:?}");
    switch.down.store(false, Ordering::Relaxed);
    let stats = eventually("the resync", 60, || async {
        let s = recorder.stats();
        (s.database_up && s.buffered == 0 && s.resyncs >= 1).then_some(s)
    })
    .await;
    assert!(stats.dropped >= down.dropped);
    for nab in &done {
        let current = nabs(&e.alice, &e.ns)
            .get(&nab.metadata.name.clone().unwrap())
            .await
            .unwrap();
        assert_cluster_facts_stored(&sqlite, &e.tenant, &current).await;
        let op = operation(&sqlite, &e.tenant, &uid(&current)).await.unwrap();
        assert!(op.started_at.is_some() && op.completed_at.is_some() && op.items_done.is_some());
    }
}

/// Rows recorded before NAC kept namespace UIDs (an upgrade): when the recorder starts it
/// gives a row the UID of the namespace of its name that exists now, only when that namespace
/// is not younger than the row (a namespace created after an operation cannot own it); a row it
/// cannot attribute is never read by a tenant, and stays for the admin until retention.
async fn rows_without_a_namespace_uid_are_attributed_on_start(cluster: TestCluster) {
    let admin = cluster.admin();
    let e = env(cluster, |_| {}).await;
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite_store(&dir).await;
    let created = Api::<k8s_openapi::api::core::v1::Namespace>::all(admin)
        .get(&e.ns)
        .await
        .unwrap()
        .metadata
        .creation_timestamp
        .unwrap()
        .0
        .as_millisecond();
    let legacy = |id: &str, created_at: EpochMillis| {
        let operation = OperationRecord {
            id: id.to_string(),
            namespace: e.ns.clone(),
            kind: Some(OperationKind::Backup),
            name: id.to_string(),
            uid: id.to_string(),
            created_at,
            phase: Some("Completed".into()),
            phase_rank: phase_rank(PhaseSource::Velero, "Completed"),
            ..OperationRecord::default()
        };
        Observation {
            transitions: vec![nac::history::Transition {
                operation_id: id.to_string(),
                namespace: e.ns.clone(),
                at: created_at,
                attribute: "phase".into(),
                value: "New".into(),
                reason: None,
                message: None,
                dedup: String::new(),
            }],
            operation,
        }
    };
    store
        .record(vec![
            legacy("made-before-the-namespace", created - 24 * 3600 * 1000),
            legacy("made-in-it", created + 1_000),
        ])
        .await
        .unwrap();
    for id in ["made-before-the-namespace", "made-in-it"] {
        assert!(operation(&store, &e.tenant, id).await.is_none(), "{id}");
    }
    let recorder = start_recorder(&e, &store, fast());
    let mine = wait_operation(&store, &e.tenant, "made-in-it", |_| true).await;
    assert_eq!(mine.namespace_uid, e.tenant.uid());
    // Its timeline with it (the sweep may have marked it deleted by now: the cluster has no
    // such object).
    let timeline = store.timeline(&e.tenant, "made-in-it").await.unwrap();
    assert_eq!(values(&timeline, "phase"), ["New"]);
    settled(&recorder, 30).await;
    assert!(
        operation(&store, &e.tenant, "made-before-the-namespace")
            .await
            .is_none()
    );
    assert!(
        store
            .timeline(&e.tenant, "made-before-the-namespace")
            .await
            .unwrap()
            .is_empty()
    );
}

on_both_servers!(
    backups_and_restores_are_recorded_as_operations,
    timelines_are_in_order_and_other_tenants_read_none,
    a_restarted_recorder_replays_what_the_cluster_shows_and_adds_nothing,
    deletions_keep_history_seen_or_missed,
    an_expired_backup_is_recorded_backing_off_after_it_completed,
    schedule_runs_are_recorded_under_their_schedule,
    a_postgres_outage_loses_nothing_the_cluster_still_shows,
    an_overflowing_buffer_is_made_good_by_a_resync_from_cluster_state,
    rows_without_a_namespace_uid_are_attributed_on_start,
);
