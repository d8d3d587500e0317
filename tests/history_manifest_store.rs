//! The history store's backup manifests (seed 002), one suite run against both backends as
//! `tests/history_store.rs` does: a real PostgreSQL server (a throwaway cluster per test binary,
//! a fresh database per test) and SQLite (a file in a temporary directory per test). Stored
//! once per backup operation, read per namespace only, listed for backfill, purged with their
//! operation.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/history_backends.rs"]
mod history_backends;
#[path = "support/postgres.rs"]
mod postgres_support;

use std::collections::BTreeMap;

use history_backends::both_backends;
use nac::history::{
    ManifestKey, ManifestPut, ManifestSummary, ManifestTarget, Observation, OperationKind,
    OperationRecord, SharedHistory, StoredManifest, TenantNamespace,
};
use nac::manifest::export::{
    MANIFEST_FORMAT_VERSION, ManifestBackup, ManifestDocument, decode_compact, encode_compact,
};
use nac::manifest::item::{Manifest, ManifestItem};

both_backends!(
    stored_once_and_read_back,
    a_reused_name_shows_the_newest_backup_only,
    keys_that_do_not_match_their_operation_store_nothing,
    manifests_are_scoped_to_their_namespace,
    a_namespace_created_again_reads_none_of_its_predecessors_manifests,
    missing_lists_completed_backups_without_a_manifest,
    purge_takes_manifests_with_their_operation,
);

const T0: i64 = 1_700_000_000_000;
const MINUTE: i64 = 60_000;

/// The UID namespace `ns` has in these scenarios.
fn uid_of(ns: &str) -> String {
    format!("uid-of-{ns}")
}

/// Namespace `ns` as it is in these scenarios.
fn tn(ns: &str) -> TenantNamespace {
    TenantNamespace::new(ns, uid_of(ns)).unwrap()
}

/// A backup operation of `namespace` named `name`, with Velero backup `velero`, created at
/// `created_at` and finished in `phase` a minute later (no phase: still running).
fn backup_op(
    namespace: &str,
    id: &str,
    name: &str,
    velero: Option<&str>,
    created_at: i64,
    phase: Option<&str>,
) -> OperationRecord {
    OperationRecord {
        id: id.to_string(),
        namespace: namespace.to_string(),
        namespace_uid: uid_of(namespace),
        kind: Some(OperationKind::Backup),
        name: name.to_string(),
        uid: id.to_string(),
        velero_name: velero.map(str::to_string),
        created_at,
        started_at: Some(created_at),
        completed_at: phase
            .filter(|p| *p != "InProgress")
            .map(|_| created_at + MINUTE),
        phase: phase.map(str::to_string),
        phase_rank: if phase == Some("InProgress") {
            130
        } else {
            200
        },
        ..OperationRecord::default()
    }
}

async fn record(store: &SharedHistory, operations: Vec<OperationRecord>) {
    let batch = operations
        .into_iter()
        .map(|operation| Observation {
            operation,
            transitions: Vec::new(),
        })
        .collect();
    store.record(batch).await.unwrap();
}

fn item(kind: &str, resource: &str, name: &str, owner: Option<&str>) -> ManifestItem {
    ManifestItem {
        group: String::new(),
        version: "v1".into(),
        kind: kind.into(),
        resource: resource.into(),
        namespace: Some("team-a".into()),
        name: name.into(),
        labels: BTreeMap::from([("app".to_string(), "web".to_string())]),
        annotations: BTreeMap::new(),
        owners: owner.map(|o| vec![o.to_string()]).unwrap_or_default(),
        uid: Some(format!("uid-{name}")),
    }
}

/// A real manifest of `items` for `op`, encoded as the builder stores it.
fn manifest_of(op: &OperationRecord, items: Vec<ManifestItem>, built_at: i64) -> StoredManifest {
    let velero = op.velero_name.clone().unwrap_or_default();
    let document = ManifestDocument::new(
        ManifestBackup {
            namespace: op.namespace.clone(),
            name: op.name.clone(),
            velero_backup: velero.clone(),
            completed_at: None,
        },
        Manifest::from_items(items),
    );
    let encoded = encode_compact(&document).unwrap();
    StoredManifest {
        summary: ManifestSummary {
            key: ManifestKey {
                operation_id: op.id.clone(),
                namespace: op.namespace.clone(),
                backup_name: op.name.clone(),
                velero_name: velero,
                velero_uid: format!("velero-uid-{}", op.id),
            },
            item_count: document.items.len() as i64,
            counts_by_kind: document.counts.clone(),
            built_at,
            format_version: document.format_version,
            // The store measures the bytes itself.
            encoded_size: 0,
        },
        encoded,
    }
}

fn three_items() -> Vec<ManifestItem> {
    vec![
        item("ConfigMap", "configmaps", "web-config", Some("uid-web")),
        item("ConfigMap", "configmaps", "other", None),
        item("Service", "services", "web", None),
    ]
}

async fn stored_once_and_read_back(store: SharedHistory) {
    let op = backup_op(
        "team-a",
        "op-1",
        "nightly",
        Some("vb-1"),
        T0,
        Some("Completed"),
    );
    record(&store, vec![op.clone()]).await;
    let manifest = manifest_of(&op, three_items(), T0 + 2 * MINUTE);
    assert_eq!(
        store.put_manifest(manifest.clone()).await.unwrap(),
        ManifestPut::Stored
    );

    let read = store
        .manifest(&tn("team-a"), "op-1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read.encoded, manifest.encoded);
    let mut expected = manifest.summary.clone();
    expected.encoded_size = manifest.encoded.len() as i64;
    assert_eq!(read.summary, expected);
    assert_eq!(read.summary.item_count, 3);
    assert_eq!(read.summary.format_version, MANIFEST_FORMAT_VERSION);
    let counts: Vec<(String, u64)> = read
        .summary
        .counts_by_kind
        .iter()
        .map(|c| (c.kind.clone(), c.count))
        .collect();
    assert_eq!(
        counts,
        [("ConfigMap".to_string(), 2), ("Service".to_string(), 1)]
    );
    // The bytes are the document: it decodes to the same items, owners included.
    let document = decode_compact(&read.encoded).unwrap();
    assert_eq!(
        document.items,
        Manifest::from_items(three_items()).into_items()
    );
    assert_eq!(document.backup.velero_backup, "vb-1");

    // Built once: a second put (other contents) changes nothing.
    let again = manifest_of(
        &op,
        vec![item("Secret", "secrets", "s", None)],
        T0 + 9 * MINUTE,
    );
    assert_eq!(
        store.put_manifest(again).await.unwrap(),
        ManifestPut::AlreadyStored
    );
    let unchanged = store
        .manifest(&tn("team-a"), "op-1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(unchanged.encoded, manifest.encoded);
    assert_eq!(unchanged.summary.built_at, T0 + 2 * MINUTE);

    let by_name = store
        .manifest_by_name(&tn("team-a"), "nightly")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(by_name, unchanged);
    assert_eq!(
        store.manifest_summaries(&tn("team-a")).await.unwrap(),
        vec![unchanged.summary.clone()]
    );
    // The recorder's later upserts of the operation leave the manifest alone.
    record(&store, vec![op.clone()]).await;
    assert_eq!(
        store
            .manifest(&tn("team-a"), "op-1")
            .await
            .unwrap()
            .unwrap(),
        unchanged
    );
    assert!(store.manifests_missing(100).await.unwrap().is_empty());
}

async fn a_reused_name_shows_the_newest_backup_only(store: SharedHistory) {
    let older = backup_op(
        "team-a",
        "op-old",
        "nightly",
        Some("vb-old"),
        T0,
        Some("Completed"),
    );
    let newer = backup_op(
        "team-a",
        "op-new",
        "nightly",
        Some("vb-new"),
        T0 + 60 * MINUTE,
        Some("Completed"),
    );
    record(&store, vec![older.clone(), newer.clone()]).await;
    store
        .put_manifest(manifest_of(&older, three_items(), T0 + 2 * MINUTE))
        .await
        .unwrap();
    // The newest "nightly" has none yet: the older one's contents are not shown for it.
    assert!(
        store
            .manifest_by_name(&tn("team-a"), "nightly")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .manifest(&tn("team-a"), "op-old")
            .await
            .unwrap()
            .is_some()
    );
    let newest = manifest_of(
        &newer,
        vec![item("Pod", "pods", "p", None)],
        T0 + 62 * MINUTE,
    );
    assert_eq!(
        store.put_manifest(newest.clone()).await.unwrap(),
        ManifestPut::Stored
    );
    let by_name = store
        .manifest_by_name(&tn("team-a"), "nightly")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(by_name.summary.key.operation_id, "op-new");
    assert_eq!(by_name.encoded, newest.encoded);
    // Summaries: newest operation first.
    let ids: Vec<String> = store
        .manifest_summaries(&tn("team-a"))
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.key.operation_id)
        .collect();
    assert_eq!(ids, ["op-new", "op-old"]);
}

async fn keys_that_do_not_match_their_operation_store_nothing(store: SharedHistory) {
    let op = backup_op(
        "team-a",
        "op-1",
        "nightly",
        Some("vb-1"),
        T0,
        Some("Completed"),
    );
    let mut restore = backup_op(
        "team-a",
        "op-r",
        "back",
        Some("vr-1"),
        T0,
        Some("Completed"),
    );
    restore.kind = Some(OperationKind::Restore);
    record(&store, vec![op.clone(), restore.clone()]).await;

    // No such operation; another tenant's operation (a key naming team-b cannot attach to
    // team-a's operation); another Velero backup than the operation's; a restore (it has no
    // manifest of its own).
    let mut ghost = op.clone();
    ghost.id = "op-ghost".into();
    let mut foreign = op.clone();
    foreign.namespace = "team-b".into();
    let mut other_backup = op.clone();
    other_backup.velero_name = Some("vb-someone-else".into());
    for (case, key) in [
        ("ghost", &ghost),
        ("foreign", &foreign),
        ("other backup", &other_backup),
        ("restore", &restore),
    ] {
        let put = store
            .put_manifest(manifest_of(key, three_items(), T0))
            .await
            .unwrap();
        assert_eq!(put, ManifestPut::UnknownOperation, "{case}");
    }
    for namespace in ["team-a", "team-b"] {
        assert!(
            store
                .manifest_summaries(&tn(namespace))
                .await
                .unwrap()
                .is_empty()
        );
        assert!(
            store
                .manifest(&tn(namespace), "op-1")
                .await
                .unwrap()
                .is_none()
        );
    }
    // Still wanted.
    let missing: Vec<String> = store
        .manifests_missing(10)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.operation_id)
        .collect();
    assert_eq!(missing, ["op-1"]);
}

async fn manifests_are_scoped_to_their_namespace(store: SharedHistory) {
    let a = backup_op(
        "team-a",
        "op-a",
        "nightly",
        Some("vb-a"),
        T0,
        Some("Completed"),
    );
    // team-b has a backup with the same name, still running.
    let b = backup_op(
        "team-b",
        "op-b",
        "nightly",
        Some("vb-b"),
        T0,
        Some("InProgress"),
    );
    record(&store, vec![a.clone(), b]).await;
    store
        .put_manifest(manifest_of(&a, three_items(), T0 + 2 * MINUTE))
        .await
        .unwrap();
    assert!(
        store
            .manifest(&tn("team-a"), "op-a")
            .await
            .unwrap()
            .is_some()
    );
    // Another namespace sees nothing of it: not by id, not by name, not in its listing.
    assert!(
        store
            .manifest(&tn("team-b"), "op-a")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .manifest_by_name(&tn("team-b"), "nightly")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .manifest_summaries(&tn("team-b"))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store.manifest_summaries(&tn("team-a")).await.unwrap().len(),
        1
    );
}

async fn a_namespace_created_again_reads_none_of_its_predecessors_manifests(store: SharedHistory) {
    // team-a's backup `nightly` with its manifest; then team-a is deleted and created again
    // (another UID) and makes a backup of the same name, whose manifest is not built yet.
    let old = backup_op(
        "team-a",
        "op-old",
        "nightly",
        Some("vb-old"),
        T0,
        Some("Completed"),
    );
    let reborn = TenantNamespace::new("team-a", "uid-of-the-new-team-a").unwrap();
    let new = OperationRecord {
        namespace_uid: reborn.uid().to_string(),
        ..backup_op(
            "team-a",
            "op-new",
            "nightly",
            Some("vb-new"),
            T0 + 10 * MINUTE,
            Some("Completed"),
        )
    };
    record(&store, vec![old.clone(), new.clone()]).await;
    let stored = manifest_of(&old, three_items(), T0 + 2 * MINUTE);
    assert_eq!(
        store.put_manifest(stored.clone()).await.unwrap(),
        ManifestPut::Stored
    );
    // The predecessor's manifest stays (the admin reads it) ...
    let kept = store
        .manifest(&tn("team-a"), "op-old")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(kept.encoded, stored.encoded);
    // ... and the new namespace reads none of it: by id, by name (its own `nightly` has no
    // manifest yet: absent, never the older namesake's), in its listing.
    assert!(store.manifest(&reborn, "op-old").await.unwrap().is_none());
    assert!(
        store
            .manifest_by_name(&reborn, "nightly")
            .await
            .unwrap()
            .is_none()
    );
    assert!(store.manifest_summaries(&reborn).await.unwrap().is_empty());
    // Its own manifest, once built, is its own only.
    store
        .put_manifest(manifest_of(&new, three_items(), T0 + 12 * MINUTE))
        .await
        .unwrap();
    let mine = store
        .manifest_by_name(&reborn, "nightly")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(mine.summary.key.operation_id, "op-new");
    let listed: Vec<String> = store
        .manifest_summaries(&reborn)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.key.operation_id)
        .collect();
    assert_eq!(listed, ["op-new"]);
    assert!(
        store
            .manifest(&tn("team-a"), "op-new")
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(
        store
            .manifest_by_name(&tn("team-a"), "nightly")
            .await
            .unwrap()
            .map(|m| m.summary.key.operation_id),
        Some("op-old".to_string())
    );
}

async fn missing_lists_completed_backups_without_a_manifest(store: SharedHistory) {
    let completed = backup_op("team-a", "op-1", "a", Some("vb-1"), T0, Some("Completed"));
    let mut scheduled = backup_op(
        "team-b",
        "op-2",
        "nightly-run",
        Some("vb-2"),
        T0 + MINUTE,
        Some("PartiallyFailed"),
    );
    scheduled.kind = Some(OperationKind::ScheduleRun);
    let failed = backup_op("team-a", "op-3", "c", Some("vb-3"), T0, Some("Failed"));
    let running = backup_op("team-a", "op-4", "d", Some("vb-4"), T0, Some("InProgress"));
    let mut deleted = backup_op("team-a", "op-5", "e", Some("vb-5"), T0, Some("Completed"));
    deleted.deleted_at = Some(T0 + 5 * MINUTE);
    let mut restore = backup_op("team-a", "op-6", "f", Some("vr-6"), T0, Some("Completed"));
    restore.kind = Some(OperationKind::Restore);
    let no_velero = backup_op("team-a", "op-7", "g", None, T0, Some("Completed"));
    let built = backup_op("team-a", "op-8", "h", Some("vb-8"), T0, Some("Completed"));
    record(
        &store,
        vec![
            completed,
            scheduled,
            failed,
            running,
            deleted,
            restore,
            no_velero,
            built.clone(),
        ],
    )
    .await;
    store
        .put_manifest(manifest_of(&built, three_items(), T0))
        .await
        .unwrap();

    let missing = store.manifests_missing(100).await.unwrap();
    assert_eq!(
        missing,
        vec![
            // Newest completed first.
            ManifestTarget {
                operation_id: "op-2".into(),
                namespace: "team-b".into(),
                backup_name: "nightly-run".into(),
                velero_name: "vb-2".into(),
                kind: OperationKind::ScheduleRun,
                completed_at: Some(T0 + 2 * MINUTE),
            },
            ManifestTarget {
                operation_id: "op-1".into(),
                namespace: "team-a".into(),
                backup_name: "a".into(),
                velero_name: "vb-1".into(),
                kind: OperationKind::Backup,
                completed_at: Some(T0 + MINUTE),
            },
        ]
    );
    let first = store.manifests_missing(1).await.unwrap();
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].operation_id, "op-2");
}

async fn purge_takes_manifests_with_their_operation(store: SharedHistory) {
    let old = backup_op(
        "team-a",
        "op-old",
        "old",
        Some("vb-old"),
        T0,
        Some("Completed"),
    );
    let recent = backup_op(
        "team-a",
        "op-recent",
        "recent",
        Some("vb-recent"),
        T0 + 100 * MINUTE,
        Some("Completed"),
    );
    record(&store, vec![old.clone(), recent.clone()]).await;
    for op in [&old, &recent] {
        store
            .put_manifest(manifest_of(op, three_items(), T0))
            .await
            .unwrap();
    }
    let removed = store.purge(T0 + 50 * MINUTE).await.unwrap();
    assert_eq!(removed, 1);
    assert!(
        store
            .manifest(&tn("team-a"), "op-old")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .manifest(&tn("team-a"), "op-recent")
            .await
            .unwrap()
            .is_some()
    );
    // Recorded again (a backup the cluster still shows), it has no manifest: the old one
    // really went, and the backfill will build it anew.
    record(&store, vec![old]).await;
    assert!(
        store
            .manifest(&tn("team-a"), "op-old")
            .await
            .unwrap()
            .is_none()
    );
    let missing: Vec<String> = store
        .manifests_missing(10)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.operation_id)
        .collect();
    assert_eq!(missing, ["op-old"]);
}
