//! Running NAC for real, on the emulator and on the real kube-apiserver (each case
//! `NAME::emulator` and `NAME::real`), with NAC's controllers and the Velero simulator running as
//! their own service accounts (on the real server with exactly `deploy/`'s RBAC): backup sync
//! after the tenant objects are wiped (and never into a namespace that is not the origin), a
//! forged synced-from label, garbage collection of orphans, leader election between two
//! contenders (a Lease written by the controller's service account), and the metrics endpoint.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;
use support::cluster::{TestCluster, eventually_true, wait_for_object};
use support::controller_env::ControllerEnv as Env;

use std::future::pending;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use nac::api::nonadmin::NonAdminBackup;
use nac::api::velero::{Backup, Restore};
use nac::controllers::leader::{Elector, LeaderConfig};
use nac::controllers::{self, gc, health, sync};
use nac::queue::Entry;
use nac::sim::demo::OADP_NAMESPACE;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SYNCED_FROM: &str = "openshift.io/oadp-nab-synced-from-nacuuid";

async fn env(cluster: TestCluster, with_velero: bool) -> Env {
    let env = Env::new(cluster).await;
    if with_velero {
        env.start_velero(|_| {}).await;
    }
    env
}

fn start_controllers(e: &Env) -> tokio::task::JoinHandle<()> {
    tokio::spawn(controllers::run(e.context()))
}

fn nabs(c: &Client, ns: &str) -> Api<NonAdminBackup> {
    Api::namespaced(c.clone(), ns)
}

fn backups(c: &Client) -> Api<Backup> {
    Api::namespaced(c.clone(), OADP_NAMESPACE)
}

async fn wait_nab(c: &Client, ns: &str, name: &str, done: impl Fn(&Value) -> bool) -> Value {
    wait_for_object(&nabs(c, ns), name, 30, done).await
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn created_and_completed(v: &Value) -> bool {
    s(v, "/status/phase") == "Created" && s(v, "/status/veleroBackup/status/phase") == "Completed"
}

async fn make_nab(c: &Client, ns: &str, name: &str, labels: Value) -> Value {
    let nab: NonAdminBackup = serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
        "metadata": {"name": name, "labels": labels}, "spec": {"backupSpec": {}}
    }))
    .unwrap();
    nabs(c, ns)
        .create(&PostParams::default(), &nab)
        .await
        .unwrap();
    wait_nab(c, ns, name, created_and_completed).await
}

/// The UID namespace `ns` has now, if it exists.
async fn namespace_uid(admin: &Client, ns: &str) -> Option<String> {
    Api::<k8s_openapi::api::core::v1::Namespace>::all(admin.clone())
        .get_opt(ns)
        .await
        .unwrap()
        .and_then(|n| n.metadata.uid)
}

/// A NAC-labelled Velero Backup for the NAB `ns`/`name`, written by the admin with `phase`,
/// recording the UID `ns` has now (as NAC records it).
async fn plant_backup(
    admin: &Client,
    uuid: &str,
    ns: &str,
    name: &str,
    location: &str,
    phase: Option<&str>,
) {
    let uid = namespace_uid(admin, ns).await.unwrap_or_default();
    let b: Backup = serde_json::from_value(json!({
        "apiVersion": "velero.io/v1", "kind": "Backup",
        "metadata": {"name": uuid, "labels": {
            "openshift.io/oadp": "True",
            "app.kubernetes.io/managed-by": "oadp-nac-controller",
            "openshift.io/oadp-nab-origin-nacuuid": uuid},
          "annotations": {
            "openshift.io/oadp-nab-origin-namespace": ns,
            "openshift.io/oadp-nab-origin-namespace-uid": uid,
            "openshift.io/oadp-nab-origin-name": name}},
        "spec": {"storageLocation": location, "includedNamespaces": [ns]},
        // Velero's Backup CRD has no status subresource: the status is written with the object.
        "status": phase.map(|p| json!({"phase": p})).unwrap_or(json!({}))
    }))
    .unwrap();
    backups(admin)
        .create(&PostParams::default(), &b)
        .await
        .unwrap();
}

async fn sync_recreates_a_wiped_nab_which_the_controller_adopts(cluster: TestCluster) {
    let e = env(cluster, true).await;
    let controllers = start_controllers(&e);
    let done = make_nab(&e.alice, "team-a", "keep", json!({})).await;
    let nacuuid = s(&done, "/status/veleroBackup/nacuuid").to_string();
    controllers.abort();
    let _ = controllers.await;

    // The tenant object is wiped (finalizer removed, deleted); the Velero Backup stays.
    nabs(&e.admin, "team-a")
        .patch(
            "keep",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    nabs(&e.admin, "team-a")
        .delete("keep", &DeleteParams::default())
        .await
        .unwrap();
    assert!(
        nabs(&e.admin, "team-a")
            .get_opt("keep")
            .await
            .unwrap()
            .is_none()
    );
    assert!(backups(&e.admin).get_opt(&nacuuid).await.unwrap().is_some());

    // GC keeps what the sync will recreate.
    let ctx = e.context();
    assert!(gc::collect_once(&ctx).await.unwrap().is_empty());

    let controllers = start_controllers(&e);
    tokio::spawn(sync::run(ctx.clone(), Some(Duration::from_millis(200))));
    let synced = wait_nab(&e.alice, "team-a", "keep", |v| {
        created_and_completed(v) && s(v, "/status/veleroBackup/nacuuid").len() > 1
    })
    .await;
    assert_eq!(
        synced.pointer(&format!(
            "/metadata/labels/{}",
            SYNCED_FROM.replace('/', "~1")
        )),
        Some(&json!(nacuuid))
    );
    assert_eq!(s(&synced, "/status/veleroBackup/nacuuid"), nacuuid);
    assert_eq!(s(&synced, "/status/veleroBackup/name"), nacuuid);
    assert_eq!(
        synced.pointer("/spec/backupSpec/includedNamespaces"),
        Some(&json!(["team-a"]))
    );
    // Adopted, not duplicated.
    let all = backups(&e.admin)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    assert_eq!(all.len(), 1, "{all:?}");
    // A second pass finds nothing to do.
    assert!(sync::sync_once(&ctx).await.unwrap().is_empty());
    controllers.abort();
}

async fn sync_never_plants_backups_outside_their_origin_namespace(cluster: TestCluster) {
    let e = env(cluster, false).await;
    // A Velero BSL made for team-a's NABSL "bucket", and that NABSL.
    let bsl: nac::api::velero::BackupStorageLocation = serde_json::from_value(json!({
        "apiVersion": "velero.io/v1", "kind": "BackupStorageLocation",
        "metadata": {"name": "team-a-bucket", "labels": {
            "openshift.io/oadp": "True",
            "app.kubernetes.io/managed-by": "oadp-nac-controller",
            "openshift.io/oadp-nabsl-origin-nacuuid": "team-a-bucket"},
          "annotations": {
            "openshift.io/oadp-nabsl-origin-namespace": "team-a",
            "openshift.io/oadp-nabsl-origin-name": "bucket"}},
        "spec": {"provider": "aws", "objectStorage": {"bucket": "tenant-a", "prefix": "team-a"}}
    }))
    .unwrap();
    Api::<nac::api::velero::BackupStorageLocation>::namespaced(e.admin.clone(), OADP_NAMESPACE)
        .create(&PostParams::default(), &bsl)
        .await
        .unwrap();
    let nabsl: nac::api::nonadmin::NonAdminBackupStorageLocation = serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackupStorageLocation",
        "metadata": {"name": "bucket"},
        "spec": {"backupStorageLocationSpec": {"provider": "aws",
            "objectStorage": {"bucket": "tenant-a"},
            "credential": {"name": "creds", "key": "cloud"}}}
    }))
    .unwrap();
    Api::<nac::api::nonadmin::NonAdminBackupStorageLocation>::namespaced(e.admin.clone(), "team-a")
        .create(&PostParams::default(), &nabsl)
        .await
        .unwrap();
    // Velero's own sync brought these from team-a's bucket: one of team-a's, one annotated
    // for team-b, one for a namespace that does not exist, and one still running.
    plant_backup(
        &e.admin,
        "u-own",
        "team-a",
        "own",
        "team-a-bucket",
        Some("Completed"),
    )
    .await;
    plant_backup(
        &e.admin,
        "u-evil",
        "team-b",
        "evil",
        "team-a-bucket",
        Some("Completed"),
    )
    .await;
    plant_backup(
        &e.admin,
        "u-ghost",
        "no-such-ns",
        "x",
        "default",
        Some("Completed"),
    )
    .await;
    plant_backup(
        &e.admin,
        "u-run",
        "team-a",
        "running",
        "default",
        Some("InProgress"),
    )
    .await;

    let ctx = e.context();
    let created = sync::sync_once(&ctx).await.unwrap();
    assert_eq!(created, [("team-a".to_string(), "own".to_string())]);
    let own = nabs(&e.admin, "team-a").get("own").await.unwrap();
    assert_eq!(
        own.spec.backup_spec.storage_location.as_deref(),
        Some("bucket")
    );
    assert!(
        nabs(&e.admin, "team-b")
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert!(
        nabs(&e.admin, "team-b")
            .get_opt("evil")
            .await
            .unwrap()
            .is_none()
    );
    // Once team-a's NABSL is gone, its bucket's backups are not synced any more.
    nabs(&e.admin, "team-a")
        .delete("own", &DeleteParams::default())
        .await
        .unwrap();
    Api::<nac::api::nonadmin::NonAdminBackupStorageLocation>::namespaced(e.admin.clone(), "team-a")
        .delete("bucket", &DeleteParams::default())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(sync::sync_once(&ctx).await.unwrap().is_empty());
}

async fn sync_returns_failed_backups_too(cluster: TestCluster) {
    // As upstream's synchronizer: every backup Velero completed comes back after a disaster,
    // a failed one too (the tenant sees the failure); one that failed validation never ran.
    let e = env(cluster, false).await;
    for (uuid, name, phase) in [
        ("u-failed", "broken", "Failed"),
        ("u-partial", "partial", "PartiallyFailed"),
        ("u-invalid", "invalid", "FailedValidation"),
    ] {
        plant_backup(&e.admin, uuid, "team-a", name, "default", Some(phase)).await;
    }
    let ctx = e.context();
    let mut created = sync::sync_once(&ctx).await.unwrap();
    created.sort();
    assert_eq!(
        created,
        [
            ("team-a".to_string(), "broken".to_string()),
            ("team-a".to_string(), "partial".to_string()),
        ]
    );
    assert!(
        nabs(&e.admin, "team-a")
            .get_opt("invalid")
            .await
            .unwrap()
            .is_none()
    );
    // The NAB controller adopts it and the tenant sees Velero's Failed.
    let controllers = start_controllers(&e);
    let broken = wait_nab(&e.alice, "team-a", "broken", |v| {
        s(v, "/status/veleroBackup/status/phase") == "Failed"
    })
    .await;
    assert_eq!(
        broken.pointer(&format!(
            "/metadata/labels/{}",
            SYNCED_FROM.replace('/', "~1")
        )),
        Some(&json!("u-failed"))
    );
    assert_eq!(s(&broken, "/status/veleroBackup/nacuuid"), "u-failed");
    // Referred to, never made again.
    let all = backups(&e.admin)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    assert_eq!(all.len(), 3, "{all:?}");
    assert!(sync::sync_once(&ctx).await.unwrap().is_empty());
    controllers.abort();
}

async fn a_forged_synced_from_label_adopts_nothing(cluster: TestCluster) {
    let e = env(cluster, true).await;
    let _controllers = start_controllers(&e);
    let done = make_nab(&e.alice, "team-a", "secret", json!({})).await;
    let nacuuid = s(&done, "/status/veleroBackup/nacuuid").to_string();

    // bob labels his NAB as synced from team-a's backup.
    let forged = make_nab(&e.bob, "team-b", "forged", json!({SYNCED_FROM: nacuuid})).await;
    let forged_uuid = s(&forged, "/status/veleroBackup/nacuuid");
    assert_ne!(forged_uuid, nacuuid);
    assert!(forged_uuid.starts_with("team-b-forged-"), "{forged_uuid}");
    assert_eq!(
        forged.pointer("/status/veleroBackup/spec/includedNamespaces"),
        Some(&json!(["team-b"]))
    );
    // He cannot write the status that would point his NAB at it either.
    let patch = json!({"status": {"veleroBackup": {"nacuuid": nacuuid, "name": nacuuid}}});
    match nabs(&e.bob, "team-b")
        .patch_status("forged", &PatchParams::default(), &Patch::Merge(patch))
        .await
    {
        Err(kube::Error::Api(s)) if s.code == 403 => {}
        other => panic!("bob wrote his NAB's status: {other:?}"),
    }
    // The sync plants nothing in team-b, and team-a's backup is untouched.
    assert!(sync::sync_once(&e.context()).await.unwrap().is_empty());
    let names: Vec<String> = nabs(&e.admin, "team-b")
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    assert_eq!(names, ["forged"]);
    let again = nabs(&e.alice, "team-a").get("secret").await.unwrap();
    assert_eq!(
        again.status.unwrap().velero_backup.unwrap().nacuuid,
        Some(nacuuid.clone())
    );
    assert!(backups(&e.admin).get_opt(&nacuuid).await.unwrap().is_some());
}

async fn gc_deletes_orphans_and_never_touches_unlabelled_objects(cluster: TestCluster) {
    let e = env(cluster, false).await;
    // A live NAB (its Velero backup is not an orphan), made by alice.
    let live: NonAdminBackup = serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
        "metadata": {"name": "live"}, "spec": {"backupSpec": {}}
    }))
    .unwrap();
    nabs(&e.alice, "team-a")
        .create(&PostParams::default(), &live)
        .await
        .unwrap();
    plant_backup(&e.admin, "u-live", "team-a", "live", "default", None).await;
    // Made for a NAB that no longer exists (still New: nothing to sync).
    plant_backup(&e.admin, "u-gone", "team-a", "gone", "default", None).await;
    // Completed, on the default BSL, origin namespace exists: the sync recreates it instead.
    plant_backup(
        &e.admin,
        "u-sync",
        "team-a",
        "synced",
        "default",
        Some("Completed"),
    )
    .await;
    // An admin's own backup without NAC's labels.
    let admin_backup: Backup = serde_json::from_value(json!({
        "apiVersion": "velero.io/v1", "kind": "Backup",
        "metadata": {"name": "admin-nightly", "annotations": {
            "openshift.io/oadp-nab-origin-namespace": "team-a",
            "openshift.io/oadp-nab-origin-name": "nope"}},
        "spec": {}
    }))
    .unwrap();
    backups(&e.admin)
        .create(&PostParams::default(), &admin_backup)
        .await
        .unwrap();
    // A restore made for a NonAdminRestore that is gone.
    let restore: Restore = serde_json::from_value(json!({
        "apiVersion": "velero.io/v1", "kind": "Restore",
        "metadata": {"name": "r-gone", "labels": {
            "openshift.io/oadp": "True",
            "app.kubernetes.io/managed-by": "oadp-nac-controller",
            "openshift.io/oadp-nar-origin-nacuuid": "r-gone"},
          "annotations": {
            "openshift.io/oadp-nar-origin-namespace": "team-a",
            "openshift.io/oadp-nar-origin-name": "gone"}},
        "spec": {"backupName": "u-live"}
    }))
    .unwrap();
    Api::<Restore>::namespaced(e.admin.clone(), OADP_NAMESPACE)
        .create(&PostParams::default(), &restore)
        .await
        .unwrap();

    let mut deleted = gc::collect_once(&e.context()).await.unwrap();
    deleted.sort();
    assert_eq!(
        deleted,
        [
            ("Backup".to_string(), "u-gone".to_string()),
            ("Restore".to_string(), "r-gone".to_string())
        ]
    );
    for kept in ["u-live", "u-sync", "admin-nightly"] {
        assert!(
            backups(&e.admin).get_opt(kept).await.unwrap().is_some(),
            "{kept}"
        );
    }
    assert!(backups(&e.admin).get_opt("u-gone").await.unwrap().is_none());
}

fn fast(identity: &str) -> LeaderConfig {
    LeaderConfig {
        lease_duration: Duration::from_secs(1),
        retry_period: Duration::from_millis(150),
        ..LeaderConfig::new(identity)
    }
}

async fn two_contenders_one_leads_and_the_other_takes_over_after_expiry(cluster: TestCluster) {
    let e = env(cluster, false).await;
    let a = Elector::new(e.controller.clone(), OADP_NAMESPACE, fast("replica-a"));
    let b = Elector::new(e.controller.clone(), OADP_NAMESPACE, fast("replica-b"));
    // Step by step: a acquires, b waits, a renews.
    assert!(a.try_acquire_or_renew().await.unwrap());
    assert!(!b.try_acquire_or_renew().await.unwrap());
    assert!(a.try_acquire_or_renew().await.unwrap());
    let leases: Api<Lease> = Api::namespaced(e.admin.clone(), OADP_NAMESPACE);
    let lease = leases.get("nac-controller").await.unwrap().spec.unwrap();
    assert_eq!(lease.holder_identity.as_deref(), Some("replica-a"));
    assert_eq!(lease.lease_duration_seconds, Some(1));
    assert!(lease.renew_time.is_some() && lease.acquire_time.is_some());

    // Running: a leads (it holds the lease), b contends; a crashes, b takes over.
    let a_leading = Arc::new(AtomicBool::new(false));
    let b_leading = Arc::new(AtomicBool::new(false));
    let a_task = {
        let flag = a_leading.clone();
        tokio::spawn(async move { a.lead(&flag, pending::<()>()).await })
    };
    let b_task = {
        let flag = b_leading.clone();
        let b = b.clone();
        tokio::spawn(async move { b.lead(&flag, pending::<()>()).await })
    };
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(a_leading.load(Ordering::SeqCst));
    assert!(!b_leading.load(Ordering::SeqCst));
    a_task.abort();
    eventually_true("b to take over (b never took over)", 5, || async {
        b_leading.load(Ordering::SeqCst)
    })
    .await;
    let lease = leases.get("nac-controller").await.unwrap().spec.unwrap();
    assert_eq!(lease.holder_identity.as_deref(), Some("replica-b"));
    assert_eq!(lease.lease_transitions, Some(1));

    // b steps down as soon as a renewal is refused (someone else holds the lease).
    // (b renews every 150 ms: a renewal between the read and the write is a conflict; read
    // again.)
    loop {
        let mut stolen = leases.get("nac-controller").await.unwrap();
        stolen.spec.as_mut().unwrap().holder_identity = Some("replica-c".into());
        stolen.spec.as_mut().unwrap().lease_duration_seconds = Some(60);
        match leases
            .replace("nac-controller", &PostParams::default(), &stolen)
            .await
        {
            Ok(_) => break,
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(e) => panic!("replacing the lease: {e}"),
        }
    }
    let out = tokio::time::timeout(Duration::from_secs(5), b_task)
        .await
        .unwrap()
        .unwrap();
    assert!(out.is_none());
    assert!(!b_leading.load(Ordering::SeqCst));
}

async fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
    let mut out = String::new();
    stream.read_to_string(&mut out).await.unwrap();
    out
}

async fn metrics_show_the_queue_length_leadership_and_readiness(cluster: TestCluster) {
    let e = env(cluster, false).await;
    let ctx = e.context();
    {
        let mut q = ctx.queue.write().unwrap();
        for (i, phase) in ["New", "InProgress", "Completed"].iter().enumerate() {
            let b: Backup = serde_json::from_value(json!({
                "apiVersion": "velero.io/v1", "kind": "Backup",
                "metadata": {"name": format!("b{i}"), "namespace": OADP_NAMESPACE,
                    "creationTimestamp": format!("2026-01-01T00:00:0{i}Z")},
                "spec": {}, "status": {"phase": phase}
            }))
            .unwrap();
            q.upsert(Entry::from_backup(&b).unwrap());
        }
    }
    let text = health::metrics_text(&ctx).await;
    assert!(
        text.contains("nac_queue_length{kind=\"Backup\"} 2"),
        "{text}"
    );
    assert!(
        text.contains("nac_queue_length{kind=\"Restore\"} 0"),
        "{text}"
    );
    assert!(text.contains("nac_approval_backlog 0"), "{text}");

    let ready = Arc::new(AtomicBool::new(false));
    let lease_reads = Arc::new(nac::controllers::leader::LeaseReads::default());
    let router = health::router(health::Health {
        context: ctx.clone(),
        ready: ready.clone(),
        lease_reads: lease_reads.clone(),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    assert!(http_get(addr, "/healthz").await.starts_with("HTTP/1.1 200"));
    // Neither leading nor in touch with the Lease: not ready.
    assert!(http_get(addr, "/readyz").await.starts_with("HTTP/1.1 503"));
    // A standby that reads the Lease is ready to take over.
    lease_reads.record(std::time::Duration::from_secs(15));
    let standby = http_get(addr, "/readyz").await;
    assert!(standby.starts_with("HTTP/1.1 200"), "{standby}");
    assert!(standby.contains("standing by"), "{standby}");
    assert!(
        http_get(addr, "/metrics")
            .await
            .contains("nac_controller_leading 0")
    );
    ready.store(true, Ordering::SeqCst);
    let leader = http_get(addr, "/readyz").await;
    assert!(leader.starts_with("HTTP/1.1 200"), "{leader}");
    assert!(leader.contains("leading"), "{leader}");
    let metrics = http_get(addr, "/metrics").await;
    assert!(metrics.contains("nac_controller_leading 1"), "{metrics}");
    assert!(
        metrics.contains("nac_queue_length{kind=\"Backup\"} 2"),
        "{metrics}"
    );
}

/// Finding 3: a namespace deleted and created again under the same name (on OpenShift, anyone
/// who may create projects can claim a deleted project's name) is another tenant. The Velero
/// Backup records the namespace's UID; the sync gives the new namespace none of its
/// predecessor's backups, unless the admin opts in to cross-namespace recovery.
async fn sync_never_gives_a_recreated_namespace_its_predecessors_backups(cluster: TestCluster) {
    let e = env(cluster, true).await;
    let ns = e.cluster.unique_name("reborn", None);
    e.cluster.tenant_namespace("alice", &ns).await;
    let controllers = start_controllers(&e);
    let done = make_nab(&e.alice, &ns, "precious", json!({})).await;
    let nacuuid = s(&done, "/status/veleroBackup/nacuuid").to_string();
    controllers.abort();
    let _ = controllers.await;
    let old_uid = namespace_uid(&e.admin, &ns).await.unwrap();
    let velero = backups(&e.admin).get(&nacuuid).await.unwrap();
    let recorded = velero.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        recorded.get(nac::api::nonadmin::labels::NAB_ORIGIN_NAMESPACE_UID_ANNOTATION),
        Some(&old_uid),
        "{recorded:?}"
    );

    // alice's namespace goes (its NAB with it; NAC is down, so nothing tidies up the Velero
    // Backup), and bob claims the name.
    nabs(&e.admin, &ns)
        .patch(
            "precious",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    let namespaces = Api::<k8s_openapi::api::core::v1::Namespace>::all(e.admin.clone());
    namespaces
        .delete(&ns, &DeleteParams::default())
        .await
        .unwrap();
    support::cluster::eventually(&format!("namespace {ns} gone"), 90, || async {
        namespaces
            .get_opt(&ns)
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    e.cluster.tenant_namespace("bob", &ns).await;
    assert_ne!(namespace_uid(&e.admin, &ns).await.unwrap(), old_uid);

    // The sync plants nothing of alice's in bob's namespace.
    let ctx = e.context();
    let created = sync::sync_once(&ctx).await.unwrap();
    assert!(created.iter().all(|(n, _)| n != &ns), "{created:?}");
    assert!(
        nabs(&e.bob, &ns)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );

    // The admin opts in to cross-namespace recovery: the backup is adopted by name.
    let policies =
        Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(e.admin.clone(), OADP_NAMESPACE);
    let _ = policies
        .delete(
            controllers::policy_source::POLICY_CONFIG_MAP,
            &DeleteParams::default(),
        )
        .await;
    let policy: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": controllers::policy_source::POLICY_CONFIG_MAP,
                     "namespace": OADP_NAMESPACE},
        "data": {"policy.yaml": "allowCrossNamespaceRecovery: true\n"}
    }))
    .unwrap();
    policies
        .create(&PostParams::default(), &policy)
        .await
        .unwrap();
    ctx.load_policy().await.unwrap();
    // Only this case's backup (other cases' leftovers on a shared server stay theirs).
    let created = sync::sync_backups(&ctx, std::slice::from_ref(&velero))
        .await
        .unwrap();
    policies
        .delete(
            controllers::policy_source::POLICY_CONFIG_MAP,
            &DeleteParams::default(),
        )
        .await
        .unwrap();
    assert_eq!(created, [(ns.clone(), "precious".to_string())]);
    let adopted = nabs(&e.bob, &ns).get("precious").await.unwrap();
    assert_eq!(
        adopted.status.unwrap().velero_backup.unwrap().nacuuid,
        Some(nacuuid)
    );
}

on_both_servers!(
    sync_returns_failed_backups_too,
    sync_recreates_a_wiped_nab_which_the_controller_adopts,
    sync_never_plants_backups_outside_their_origin_namespace,
    a_forged_synced_from_label_adopts_nothing,
    sync_never_gives_a_recreated_namespace_its_predecessors_backups,
    gc_deletes_orphans_and_never_touches_unlabelled_objects,
    two_contenders_one_leads_and_the_other_takes_over_after_expiry,
    metrics_show_the_queue_length_leadership_and_readiness,
);
