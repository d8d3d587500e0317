//! Shared backup buckets (seed 001) end to end, on the emulator and on the real kube-apiserver
//! (each case `NAME::emulator` and `NAME::real`), with the Velero simulator and NAC's
//! controllers running as their own service accounts with exactly `deploy/`'s RBAC: entries
//! assigned and spilling over at quota, a third namespace waiting until the admin adds a
//! bucket, backups without a storage location stored under their namespace's prefix in the
//! right bucket, tenant locations on pool buckets refused, a bucket with entries kept when
//! deleted, the grace-period purge after a namespace is deleted (with a sped-up clock) through
//! DeleteBackupRequests, force delete, and entries rebuilt after the API lost them.
//! NonAdminSchedules are routed like NonAdminBackups (waiting while every bucket is full, then
//! running on their entry), and after the tenant objects are lost the backup sync brings pool
//! backups back into their own namespace only, never into a namespace re-created under the
//! same name. Every case works in tenant namespaces of its own (unique names: the real
//! cluster is shared by the cases of this binary, and namespaces are deleted by its
//! kube-controller-manager, through Terminating).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;
use support::cluster::{TestCluster, eventually};
use support::controller_env::ControllerEnv;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;

use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use nac::api::nonadmin::{
    BackupBucket, BackupEntry, BackupEntryPhase, NonAdminBackup, NonAdminBackupStorageLocation,
    NonAdminSchedule, POOL_LOCATION_LABEL, TenantStorageState,
};
use nac::api::velero::{Backup, BackupStorageLocation, DeleteBackupRequest, Schedule};
use nac::controllers::bucket::PoolConfig;
use nac::controllers::bucket_store::ObjectStoreLister;
use nac::controllers::clock::ManualClock;
use nac::controllers::{self, Context, gc, sync};
use nac::sim::demo::OADP_NAMESPACE;
use nac::sim::velero::storage::LOCAL_PROVIDER;
use serde_json::{Value, json};

const HOUR: Duration = Duration::from_secs(3600);

/// The shared controller environment, plus the pool's clock, the case's two tenant namespaces
/// and the Velero and controller tasks (stopped and started by some cases).
struct Env {
    base: ControllerEnv,
    clock: Arc<ManualClock>,
    /// The case's own namespace owned by alice (the demo's team-a).
    team_a: String,
    /// The case's own namespace owned by bob (the demo's team-b).
    team_b: String,
    velero: tokio::task::JoinHandle<()>,
    controllers: Option<tokio::task::JoinHandle<()>>,
}

impl std::ops::Deref for Env {
    type Target = ControllerEnv;
    fn deref(&self) -> &ControllerEnv {
        &self.base
    }
}

impl Env {
    /// The Velero simulator and NAC's controllers (the pool's with a clock the case moves) on
    /// `cluster`, each as its own service account; two tenant namespaces, `team_a` owned by
    /// alice and `team_b` by bob; the pool's credential in the OADP namespace.
    async fn new(cluster: TestCluster) -> Env {
        let base = ControllerEnv::new(cluster).await;
        let team_a = base.cluster.unique_name("team-a", None);
        let team_b = base.cluster.unique_name("team-b", None);
        base.cluster.tenant_namespace("alice", &team_a).await;
        base.cluster.tenant_namespace("bob", &team_b).await;
        let simulator = support::velero_simulator(
            &base.cluster,
            base.object_store.path(),
            url::Url::parse("http://127.0.0.1:9/").unwrap(),
            |options| {
                options.backup_sync_interval = Duration::from_millis(200);
                options.bsl_validation_interval = Duration::from_millis(500);
            },
        )
        .await;
        let velero = tokio::spawn(simulator.run());
        let mut env = Env {
            base,
            clock: Arc::new(ManualClock::new()),
            team_a,
            team_b,
            velero,
            controllers: None,
        };
        env.start_controllers();
        // The pool's credential, as an admin keeps it in the OADP namespace (on the real
        // server an earlier case of this binary may have made it already).
        let secret: Secret = serde_json::from_value(json!({
            "metadata": {"name": "pool-credentials", "namespace": OADP_NAMESPACE},
            "stringData": {"cloud": "[default]\naws_access_key_id=x\naws_secret_access_key=y\n"}
        }))
        .unwrap();
        match Api::<Secret>::namespaced(env.admin.clone(), OADP_NAMESPACE)
            .create(&PostParams::default(), &secret)
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(e) => panic!("creating the pool credential: {e}"),
        }
        env
    }

    fn start_controllers(&mut self) {
        let pool = PoolConfig {
            default_grace_period: 72 * HOUR,
            clock: self.clock.clone(),
            resync: Duration::from_millis(200),
            rescan: Duration::from_millis(500),
            lister: Arc::new(ObjectStoreLister::with_local_provider(
                LOCAL_PROVIDER,
                self.object_store.path().to_path_buf(),
            )),
        };
        let context = Context::new(self.controller.clone(), OADP_NAMESPACE).with_pool(pool);
        self.controllers = Some(tokio::spawn(controllers::run(Arc::new(context))));
    }

    fn stop_controllers(&mut self) {
        if let Some(task) = self.controllers.take() {
            task.abort();
        }
    }

    /// The names of the case's two tenant namespaces.
    fn teams(&self) -> (String, String) {
        (self.team_a.clone(), self.team_b.clone())
    }

    async fn add_bucket(&self, name: &str, max_entries: Option<u32>) {
        let mut spec = json!({"provider": LOCAL_PROVIDER, "bucket": format!("shared-{name}"),
                              "credential": {"name": "pool-credentials", "key": "cloud"}});
        if let Some(max) = max_entries {
            spec["maxEntries"] = json!(max);
        }
        let bucket: BackupBucket = serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "BackupBucket",
            "metadata": {"name": name}, "spec": spec
        }))
        .unwrap();
        Api::<BackupBucket>::all(self.admin.clone())
            .create(&PostParams::default(), &bucket)
            .await
            .unwrap();
    }

    async fn create_nab(&self, client: &Client, namespace: &str, name: &str) {
        let nab: NonAdminBackup = serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
            "metadata": {"name": name}, "spec": {"backupSpec": {}}
        }))
        .unwrap();
        Api::<NonAdminBackup>::namespaced(client.clone(), namespace)
            .create(&PostParams::default(), &nab)
            .await
            .unwrap();
    }

    async fn completed_nab(&self, namespace: &str, name: &str) -> Value {
        eventually(
            &format!("NonAdminBackup {namespace}/{name} completed"),
            60,
            || async {
                let nab = Api::<NonAdminBackup>::namespaced(self.admin.clone(), namespace)
                    .get_opt(name)
                    .await
                    .unwrap()?;
                let v = serde_json::to_value(&nab).unwrap();
                (s(&v, "/status/veleroBackup/status/phase") == "Completed").then_some(v)
            },
        )
        .await
    }

    async fn entry_of(&self, namespace: &str) -> Option<BackupEntry> {
        Api::<BackupEntry>::all(self.admin.clone())
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .find(|e| e.spec.namespace == namespace)
    }

    async fn entry_in_phase(&self, namespace: &str, phase: BackupEntryPhase) -> BackupEntry {
        eventually(
            &format!("entry of {namespace} in phase {phase}"),
            60,
            || async {
                self.entry_of(namespace)
                    .await
                    .filter(|e| e.phase() == Some(phase))
            },
        )
        .await
    }

    fn bucket_dir(&self, bucket: &str) -> PathBuf {
        self.object_store.path().join(bucket)
    }

    async fn delete_namespace(&self, name: &str) {
        Api::<Namespace>::all(self.admin.clone())
            .delete(name, &DeleteParams::default())
            .await
            .unwrap();
    }

    /// Waits until namespace `name` is gone (on the real server kube-controller-manager empties
    /// it first, which takes seconds).
    async fn namespace_gone(&self, name: &str) {
        eventually(&format!("namespace {name} gone"), 90, || async {
            Api::<Namespace>::all(self.admin.clone())
                .get_opt(name)
                .await
                .unwrap()
                .is_none()
                .then_some(())
        })
        .await;
    }

    async fn locations(&self) -> Vec<BackupStorageLocation> {
        Api::<BackupStorageLocation>::namespaced(self.admin.clone(), OADP_NAMESPACE)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
    }

    async fn velero_backups_on(&self, location: &str) -> Vec<Backup> {
        Api::<Backup>::namespaced(self.admin.clone(), OADP_NAMESPACE)
            .list(&ListParams::default().labels(&format!("velero.io/storage-location={location}")))
            .await
            .unwrap()
            .items
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        self.stop_controllers();
        self.velero.abort();
    }
}

/// A background task stopped when dropped.
struct Task(tokio::task::JoinHandle<()>);

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn condition<'a>(v: &'a Value, type_: &str) -> &'a Value {
    v.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .unwrap_or(&Value::Null)
}

fn entry_name(entry: &BackupEntry) -> String {
    entry.metadata.name.clone().unwrap()
}

fn entry_location(entry: &BackupEntry) -> String {
    entry
        .status
        .as_ref()
        .and_then(|s| s.velero_backup_storage_location.as_ref())
        .and_then(|l| l.name.clone())
        .unwrap()
}

/// Names of the backups stored under `prefix` in a local bucket directory.
fn stored_backups(bucket_dir: &Path, prefix: &str) -> BTreeSet<String> {
    std::fs::read_dir(bucket_dir.join(prefix).join("backups"))
        .map(|dir| {
            dir.filter_map(Result::ok)
                .filter(|e| e.path().join("velero-backup.json").is_file())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

async fn namespace_uid(admin: &Client, name: &str) -> String {
    Api::<Namespace>::all(admin.clone())
        .get(name)
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap()
}

async fn entries_spill_over_at_quota_and_a_waiting_namespace_takes_the_next_bucket(
    cluster: TestCluster,
) {
    let e = Env::new(cluster).await;
    let (team_a, team_b) = e.teams();
    let (team_a, team_b) = (team_a.as_str(), team_b.as_str());
    e.add_bucket("pool-1", Some(1)).await;
    e.add_bucket("pool-2", Some(1)).await;
    let team_c = e.cluster.unique_name("team-c", None);
    e.cluster.tenant_namespace("carol", &team_c).await;
    let team_c = team_c.as_str();

    // team-a: first bucket; its backup without a storage location lands under its prefix.
    e.create_nab(&e.alice, team_a, "first").await;
    let a = e.entry_in_phase(team_a, BackupEntryPhase::Ready).await;
    let uid_a = namespace_uid(&e.admin, team_a).await;
    assert_eq!(
        entry_name(&a),
        format!("{team_a}--{}", &uid_a.replace('-', "")[..5])
    );
    assert_eq!(a.spec.bucket_name.as_deref(), Some("pool-1"));
    assert_eq!(a.spec.prefix, entry_name(&a));
    assert_eq!(a.spec.namespace_uid, uid_a);
    assert_eq!(a.tenant_view().state, TenantStorageState::Ready);
    let done = e.completed_nab(team_a, "first").await;
    let location = entry_location(&a);
    assert_eq!(
        s(&done, "/status/veleroBackup/spec/storageLocation"),
        location.as_str()
    );
    let velero_name = s(&done, "/status/veleroBackup/name").to_string();
    assert_eq!(
        stored_backups(&e.bucket_dir("shared-pool-1"), &a.spec.prefix),
        BTreeSet::from([velero_name.clone()])
    );
    // Nothing at the bucket's root or in Velero's default location.
    assert!(!e.bucket_dir("shared-pool-1").join("backups").exists());
    assert!(
        !e.bucket_dir("velero")
            .join("velero/backups")
            .join(&velero_name)
            .exists()
    );
    // The location: NAC's labels, the bucket's credential (never given to the tenant).
    let bsl = e
        .locations()
        .await
        .into_iter()
        .find(|l| l.metadata.name.as_deref() == Some(location.as_str()))
        .unwrap();
    assert_eq!(bsl.spec.object_storage.bucket, "shared-pool-1");
    assert_eq!(
        bsl.spec.object_storage.prefix.as_deref(),
        Some(a.spec.prefix.as_str())
    );
    assert_eq!(
        bsl.spec.credential.as_ref().unwrap().name,
        "pool-credentials"
    );
    assert_eq!(
        bsl.metadata.labels.as_ref().unwrap()[POOL_LOCATION_LABEL],
        location
    );

    // team-b: pool-1 is full, so pool-2.
    e.create_nab(&e.admin, team_b, "first").await;
    let b = e.entry_in_phase(team_b, BackupEntryPhase::Ready).await;
    assert_eq!(b.spec.bucket_name.as_deref(), Some("pool-2"));
    let done_b = e.completed_nab(team_b, "first").await;
    assert_eq!(
        stored_backups(&e.bucket_dir("shared-pool-2"), &b.spec.prefix),
        BTreeSet::from([s(&done_b, "/status/veleroBackup/name").to_string()])
    );

    // team-c: every bucket is full; the entry waits and so does the backup, with reasons.
    e.create_nab(&e.admin, team_c, "first").await;
    let c = e
        .entry_in_phase(team_c, BackupEntryPhase::WaitingForBucket)
        .await;
    let cv = serde_json::to_value(&c).unwrap();
    assert_eq!(condition(&cv, "Assigned")["reason"], "WaitingForBucket");
    let message = condition(&cv, "Assigned")["message"].as_str().unwrap();
    assert!(
        message.contains("pool-1 (1/1 entries)") && message.contains("pool-2 (1/1 entries)"),
        "{message}"
    );
    assert_eq!(
        c.tenant_view().state,
        TenantStorageState::WaitingForCapacity
    );
    let waiting = eventually("team-c's backup waiting", 30, || async {
        let nab = Api::<NonAdminBackup>::namespaced(e.admin.clone(), team_c)
            .get("first")
            .await
            .unwrap();
        let v = serde_json::to_value(&nab).unwrap();
        // Until the controller polls again after the entry's wait began, the message says the
        // storage is being set up.
        let queued = condition(&v, "Queued");
        (queued["reason"] == "WaitingForBackupStorage"
            && s(queued, "/message").contains("every shared backup bucket is full"))
        .then_some(v)
    })
    .await;
    assert_eq!(condition(&waiting, "Queued")["status"], "False");
    assert!(
        s(condition(&waiting, "Queued"), "/message").contains("every shared backup bucket is full"),
        "{waiting}"
    );
    // The message names no bucket and no other namespace.
    let text = condition(&waiting, "Queued").to_string();
    assert!(
        !text.contains("pool-1") && !text.contains(team_a) && !text.contains(team_b),
        "{text}"
    );
    assert!(waiting.pointer("/status/veleroBackup/status").is_none());
    for bucket in ["pool-1", "pool-2"] {
        let status = Api::<BackupBucket>::all(e.admin.clone())
            .get(bucket)
            .await
            .unwrap()
            .status
            .unwrap();
        assert_eq!(status.entry_count, 1, "{bucket}");
    }

    // The admin adds a bucket: team-c takes it and its backup completes there.
    e.add_bucket("pool-3", Some(1)).await;
    let c = e.entry_in_phase(team_c, BackupEntryPhase::Ready).await;
    assert_eq!(c.spec.bucket_name.as_deref(), Some("pool-3"));
    let done_c = e.completed_nab(team_c, "first").await;
    assert_eq!(
        stored_backups(&e.bucket_dir("shared-pool-3"), &c.spec.prefix),
        BTreeSet::from([s(&done_c, "/status/veleroBackup/name").to_string()])
    );

    // A tenant's own location on a pool bucket is refused: tenants never reach the pool.
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "mine"},
        "stringData": {"cloud": "[default]\naws_access_key_id=a\naws_secret_access_key=b\n"}
    }))
    .unwrap();
    Api::<Secret>::namespaced(e.alice.clone(), team_a)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let nabsl: NonAdminBackupStorageLocation = serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackupStorageLocation",
        "metadata": {"name": "sneaky"},
        "spec": {"backupStorageLocationSpec": {
            "provider": LOCAL_PROVIDER,
            "objectStorage": {"bucket": "shared-pool-2"},
            "credential": {"name": "mine", "key": "cloud"}}}
    }))
    .unwrap();
    let nabsls = Api::<NonAdminBackupStorageLocation>::namespaced(e.alice.clone(), team_a);
    nabsls.create(&PostParams::default(), &nabsl).await.unwrap();
    let refused = eventually("NABSL on a pool bucket refused", 30, || async {
        let v = serde_json::to_value(nabsls.get("sneaky").await.unwrap()).unwrap();
        (condition(&v, "Accepted")["status"] == "False").then_some(v)
    })
    .await;
    assert!(
        s(condition(&refused, "Accepted"), "/message").contains("shared backup pool"),
        "{refused}"
    );
    assert!(
        !e.locations()
            .await
            .iter()
            .any(|l| l.spec.object_storage.bucket == "shared-pool-2"
                && l.metadata.name.as_deref() != Some(entry_location(&b).as_str()))
    );

    // A bucket holding entries is not deleted; its status says why.
    Api::<BackupBucket>::all(e.admin.clone())
        .delete("pool-1", &DeleteParams::default())
        .await
        .unwrap();
    let held = eventually("pool-1 held by its entry", 30, || async {
        let b = Api::<BackupBucket>::all(e.admin.clone())
            .get_opt("pool-1")
            .await
            .unwrap()?;
        let v = serde_json::to_value(&b).unwrap();
        (condition(&v, "Deleting")["reason"] == "EntriesRemain").then_some(v)
    })
    .await;
    assert!(held.pointer("/metadata/deletionTimestamp").is_some());
    assert!(
        s(condition(&held, "Deleting"), "/message").contains(&entry_name(&a)),
        "{held}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        Api::<BackupBucket>::all(e.admin.clone())
            .get_opt("pool-1")
            .await
            .unwrap()
            .is_some()
    );
    // An empty bucket goes at once.
    e.add_bucket("pool-4", None).await;
    eventually("pool-4 finalized", 30, || async {
        let b = Api::<BackupBucket>::all(e.admin.clone())
            .get("pool-4")
            .await
            .unwrap();
        b.metadata.finalizers.filter(|f| !f.is_empty())
    })
    .await;
    Api::<BackupBucket>::all(e.admin.clone())
        .delete("pool-4", &DeleteParams::default())
        .await
        .unwrap();
    eventually("pool-4 gone", 30, || async {
        Api::<BackupBucket>::all(e.admin.clone())
            .get_opt("pool-4")
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
}

async fn a_deleted_namespace_is_purged_after_its_grace_period_through_delete_backup_requests(
    cluster: TestCluster,
) {
    let e = Env::new(cluster).await;
    let (team_a, team_b) = e.teams();
    let (team_a, team_b) = (team_a.as_str(), team_b.as_str());
    e.add_bucket("pool-1", None).await;
    // team-b asks for 96 hours instead of the default 72.
    Api::<Namespace>::all(e.admin.clone())
        .patch(
            team_b,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {
                "oadp.openshift.io/backup-deletion-grace-period": "96h"}}})),
        )
        .await
        .unwrap();
    e.create_nab(&e.admin, team_b, "one").await;
    e.create_nab(&e.admin, team_b, "two").await;
    // team-a shares the bucket and must not be touched by team-b's purge.
    e.create_nab(&e.alice, team_a, "keep").await;
    let one = e.completed_nab(team_b, "one").await;
    let two = e.completed_nab(team_b, "two").await;
    let keep = e.completed_nab(team_a, "keep").await;
    let entry = e.entry_in_phase(team_b, BackupEntryPhase::Ready).await;
    let entry_a = e.entry_in_phase(team_a, BackupEntryPhase::Ready).await;
    assert_eq!(
        entry
            .spec
            .deletion_grace_period
            .as_ref()
            .unwrap()
            .parse()
            .unwrap(),
        96 * HOUR
    );
    let names: BTreeSet<String> = [&one, &two]
        .iter()
        .map(|v| s(v, "/status/veleroBackup/name").to_string())
        .collect();
    let bucket = e.bucket_dir("shared-pool-1");
    assert_eq!(stored_backups(&bucket, &entry.spec.prefix), names);
    let location = entry_location(&entry);

    e.delete_namespace(team_b).await;
    e.namespace_gone(team_b).await;
    let kept = e
        .entry_in_phase(team_b, BackupEntryPhase::NamespaceDeleted)
        .await;
    let status = kept.status.clone().unwrap();
    let deleted_at = status.namespace_deleted_at.clone().unwrap().0;
    let purge_after = status.purge_after.clone().unwrap().0;
    assert_eq!(
        purge_after.duration_since(deleted_at),
        k8s_openapi::jiff::SignedDuration::from_hours(96)
    );
    let view = kept.tenant_view();
    assert_eq!(view.state, TenantStorageState::Retained);
    assert_eq!(view.purge_after, status.purge_after);
    // The data stays meanwhile, and Velero syncs the backups back from the bucket.
    assert_eq!(stored_backups(&bucket, &entry.spec.prefix), names);
    eventually("Velero re-synced team-b's backups", 30, || async {
        let synced: BTreeSet<String> = e
            .velero_backups_on(&location)
            .await
            .into_iter()
            .filter_map(|b| b.metadata.name)
            .collect();
        (synced == names).then_some(())
    })
    .await;

    // 95 hours later: still kept.
    e.clock.advance(95 * HOUR);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        e.entry_of(team_b).await.unwrap().phase(),
        Some(BackupEntryPhase::NamespaceDeleted)
    );
    assert_eq!(stored_backups(&bucket, &entry.spec.prefix), names);

    // Past the grace period: every backup goes through a DeleteBackupRequest, then the
    // location and the entry.
    // Watched rather than polled: a request or a phase lasting less than a poll is still seen.
    let requests = Api::<DeleteBackupRequest>::namespaced(e.admin.clone(), OADP_NAMESPACE);
    let by_location = format!("{POOL_LOCATION_LABEL}={location}");
    let requested = Arc::new(Mutex::new(BTreeSet::new()));
    let requests_watched = Arc::new(AtomicBool::new(false));
    let request_watch = {
        let (requested, watched) = (requested.clone(), requests_watched.clone());
        let stream = watcher(
            requests.clone(),
            watcher::Config::default().labels(&by_location),
        )
        .default_backoff();
        Task(tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                match event {
                    Ok(watcher::Event::Apply(r) | watcher::Event::InitApply(r)) => {
                        requested.lock().unwrap().insert(r.spec.backup_name);
                    }
                    Ok(watcher::Event::InitDone) => watched.store(true, Ordering::SeqCst),
                    _ => {}
                }
            }
        }))
    };
    // Every state of team-b's entry, up to its deletion (`true` with the last one).
    let states: Arc<Mutex<Vec<(BackupEntry, bool)>>> = Arc::default();
    let entry_watch = {
        let states = states.clone();
        let team_b = team_b.to_string();
        let stream = watcher(
            Api::<BackupEntry>::all(e.admin.clone()),
            watcher::Config::default(),
        )
        .default_backoff();
        Task(tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                let (entry, deleted) = match event {
                    Ok(watcher::Event::Apply(e) | watcher::Event::InitApply(e)) => (e, false),
                    Ok(watcher::Event::Delete(e)) => (e, true),
                    _ => continue,
                };
                if entry.spec.namespace == team_b {
                    states.lock().unwrap().push((entry, deleted));
                }
            }
        }))
    };
    eventually("the watches of the purge started", 30, || async {
        (requests_watched.load(Ordering::SeqCst) && !states.lock().unwrap().is_empty())
            .then_some(())
    })
    .await;
    e.clock.advance(2 * HOUR);
    eventually("team-b's entry purged", 60, || async {
        states
            .lock()
            .unwrap()
            .last()
            .is_some_and(|(_, deleted)| *deleted)
            .then_some(())
    })
    .await;
    assert!(e.entry_of(team_b).await.is_none());
    // The requests were made before the entry went (their watch may still be behind).
    eventually("a DeleteBackupRequest seen per backup", 10, || async {
        requested.lock().unwrap().is_superset(&names).then_some(())
    })
    .await;
    drop((request_watch, entry_watch));
    assert_eq!(
        *requested.lock().unwrap(),
        names,
        "a DeleteBackupRequest per backup"
    );
    let states = states.lock().unwrap().clone();
    let phases: Vec<Option<BackupEntryPhase>> = states.iter().map(|(e, _)| e.phase()).collect();
    // Purging from the end of the grace period until the entry is gone.
    let last = &states[states.len() - 1].0;
    assert_eq!(last.phase(), Some(BackupEntryPhase::Purging), "{phases:?}");
    assert!(stored_backups(&bucket, &entry.spec.prefix).is_empty());
    assert!(e.velero_backups_on(&location).await.is_empty());
    assert!(
        !e.locations()
            .await
            .iter()
            .any(|l| l.metadata.name.as_deref() == Some(location.as_str()))
    );
    // The requests were cleaned up with the entry.
    assert!(
        requests
            .list(&ListParams::default().labels(&format!("{POOL_LOCATION_LABEL}={location}")))
            .await
            .unwrap()
            .items
            .is_empty()
    );
    // team-a, in the same bucket, is untouched.
    assert_eq!(
        stored_backups(&bucket, &entry_a.spec.prefix),
        BTreeSet::from([s(&keep, "/status/veleroBackup/name").to_string()])
    );
    assert_eq!(
        e.entry_of(team_a).await.unwrap().phase(),
        Some(BackupEntryPhase::Ready)
    );
    let bucket_status = Api::<BackupBucket>::all(e.admin.clone())
        .get("pool-1")
        .await
        .unwrap()
        .status
        .unwrap();
    assert_eq!(bucket_status.entry_count, 1);
}

async fn force_delete_purges_a_deleted_namespace_at_once(cluster: TestCluster) {
    let e = Env::new(cluster).await;
    let (_, team_b) = e.teams();
    let team_b = team_b.as_str();
    e.add_bucket("pool-1", None).await;
    e.create_nab(&e.admin, team_b, "one").await;
    let one = e.completed_nab(team_b, "one").await;
    let entry = e.entry_in_phase(team_b, BackupEntryPhase::Ready).await;
    let bucket = e.bucket_dir("shared-pool-1");
    let name = s(&one, "/status/veleroBackup/name").to_string();
    assert_eq!(
        stored_backups(&bucket, &entry.spec.prefix),
        BTreeSet::from([name.clone()])
    );
    e.delete_namespace(team_b).await;
    e.entry_in_phase(team_b, BackupEntryPhase::NamespaceDeleted)
        .await;
    Api::<BackupEntry>::all(e.admin.clone())
        .patch(
            &entry_name(&entry),
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {
                "oadp.openshift.io/force-delete": "true"}}})),
        )
        .await
        .unwrap();
    eventually("entry force-deleted", 60, || async {
        e.entry_of(team_b).await.is_none().then_some(())
    })
    .await;
    assert!(stored_backups(&bucket, &entry.spec.prefix).is_empty());
    assert!(
        e.velero_backups_on(&entry_location(&entry))
            .await
            .is_empty()
    );
}

async fn entries_lost_from_the_api_are_rebuilt_from_locations_and_buckets(cluster: TestCluster) {
    let mut e = Env::new(cluster).await;
    let (team_a, team_b) = e.teams();
    let (team_a, team_b) = (team_a.as_str(), team_b.as_str());
    e.add_bucket("pool-1", Some(1)).await;
    e.add_bucket("pool-2", Some(1)).await;
    e.create_nab(&e.alice, team_a, "one").await;
    let a = e.entry_in_phase(team_a, BackupEntryPhase::Ready).await;
    e.create_nab(&e.admin, team_b, "one").await;
    let b = e.entry_in_phase(team_b, BackupEntryPhase::Ready).await;
    e.completed_nab(team_a, "one").await;
    let b_backup = e.completed_nab(team_b, "one").await;
    assert_eq!(a.spec.bucket_name.as_deref(), Some("pool-1"));
    assert_eq!(b.spec.bucket_name.as_deref(), Some("pool-2"));

    // The controller is down; the entries vanish from the API, team-b's location too, and
    // team-b is deleted.
    e.stop_controllers();
    let entries = Api::<BackupEntry>::all(e.admin.clone());
    for entry in [&a, &b] {
        entries
            .delete(&entry_name(entry), &DeleteParams::default())
            .await
            .unwrap();
    }
    Api::<BackupStorageLocation>::namespaced(e.admin.clone(), OADP_NAMESPACE)
        .delete(&entry_location(&b), &DeleteParams::default())
        .await
        .unwrap();
    e.delete_namespace(team_b).await;
    assert!(e.entry_of(team_a).await.is_none() && e.entry_of(team_b).await.is_none());

    e.start_controllers();
    // team-a's entry comes back from its location: same name, bucket and prefix.
    let rebuilt_a = e.entry_in_phase(team_a, BackupEntryPhase::Ready).await;
    assert_eq!(entry_name(&rebuilt_a), entry_name(&a));
    assert_eq!(rebuilt_a.spec.bucket_name, a.spec.bucket_name);
    assert_eq!(rebuilt_a.spec.prefix, a.spec.prefix);
    assert_eq!(rebuilt_a.spec.namespace_uid, a.spec.namespace_uid);
    // team-b's from the bucket listing; its namespace is gone, so its grace period starts.
    e.namespace_gone(team_b).await;
    let rebuilt_b = e
        .entry_in_phase(team_b, BackupEntryPhase::NamespaceDeleted)
        .await;
    assert_eq!(entry_name(&rebuilt_b), entry_name(&b));
    assert_eq!(rebuilt_b.spec.bucket_name.as_deref(), Some("pool-2"));
    assert_eq!(rebuilt_b.spec.prefix, b.spec.prefix);
    assert!(rebuilt_b.status.as_ref().unwrap().purge_after.is_some());
    // Its data is still there, reachable through a rebuilt location.
    assert_eq!(
        stored_backups(&e.bucket_dir("shared-pool-2"), &b.spec.prefix),
        BTreeSet::from([s(&b_backup, "/status/veleroBackup/name").to_string()])
    );
    eventually("team-b's location rebuilt", 30, || async {
        e.locations()
            .await
            .into_iter()
            .find(|l| l.spec.object_storage.prefix.as_deref() == Some(b.spec.prefix.as_str()))
    })
    .await;
    // No bucket was given away twice: each still holds its one entry.
    for bucket in ["pool-1", "pool-2"] {
        let status = eventually(&format!("{bucket} counted"), 30, || async {
            Api::<BackupBucket>::all(e.admin.clone())
                .get(bucket)
                .await
                .unwrap()
                .status
                .filter(|s| s.entry_count == 1)
        })
        .await;
        assert_eq!(status.entry_count, 1);
    }
    // A new backup of team-a goes to the same prefix.
    e.create_nab(&e.alice, team_a, "two").await;
    let two = e.completed_nab(team_a, "two").await;
    assert!(
        stored_backups(&e.bucket_dir("shared-pool-1"), &a.spec.prefix)
            .contains(s(&two, "/status/veleroBackup/name"))
    );
    assert_eq!(
        Api::<BackupEntry>::all(e.admin.clone())
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        2
    );
}

// --- NonAdminSchedules on the pool, and the backup sync of pool backups ---

async fn create_nas(client: &Client, namespace: &str, name: &str) {
    // A daily cron whose time is the start of the minute 30 to 90 s from now: Velero first runs a
    // schedule at its next cron time (never at creation), so it runs once soon (after the
    // waits of the cases: a schedule waiting for storage gets its Velero Schedule later), then
    // not again in the test.
    use chrono::Timelike;
    let first = chrono::Utc::now() + chrono::Duration::seconds(90);
    let cron = format!("{} {} * * *", first.minute(), first.hour());
    let nas: NonAdminSchedule = serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminSchedule",
        "metadata": {"name": name},
        "spec": {"schedule": cron, "template": {"backupSpec": {}}}
    }))
    .unwrap();
    Api::<NonAdminSchedule>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), &nas)
        .await
        .unwrap();
}

async fn nas_value(admin: &Client, namespace: &str, name: &str) -> Value {
    serde_json::to_value(
        Api::<NonAdminSchedule>::namespaced(admin.clone(), namespace)
            .get(name)
            .await
            .unwrap(),
    )
    .unwrap()
}

/// The Velero Schedules made for a NonAdminSchedule of `namespace`.
async fn velero_schedules_for(admin: &Client, namespace: &str) -> Vec<Schedule> {
    Api::<Schedule>::namespaced(admin.clone(), OADP_NAMESPACE)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|s| {
            s.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("openshift.io/oadp-nas-origin-namespace"))
                .map(String::as_str)
                == Some(namespace)
        })
        .collect()
}

/// The Velero Backups whose labels or annotations mention `namespace` as their origin.
async fn velero_backups_for(admin: &Client, namespace: &str) -> Vec<Backup> {
    Api::<Backup>::namespaced(admin.clone(), OADP_NAMESPACE)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|b| {
            let a = b.metadata.annotations.clone().unwrap_or_default();
            a.get("openshift.io/oadp-nab-origin-namespace")
                .map(String::as_str)
                == Some(namespace)
                || a.get("openshift.io/oadp-nas-origin-namespace")
                    .map(String::as_str)
                    == Some(namespace)
                || b.spec
                    .included_namespaces
                    .as_ref()
                    .is_some_and(|n| n.iter().any(|x| x == namespace))
        })
        .collect()
}

/// The child NAB of the schedule's first run, once that run completed: (child, its Velero
/// Backup's name).
async fn first_scheduled_child(e: &Env, namespace: &str, schedule: &str) -> (Value, String) {
    let child = eventually(&format!("{namespace}/{schedule} ran"), 180, || async {
        let v = nas_value(&e.admin, namespace, schedule).await;
        v.pointer("/status/recentBackups/0/name")
            .and_then(Value::as_str)
            .map(str::to_owned)
    })
    .await;
    let done = e.completed_nab(namespace, &child).await;
    let velero_name = s(&done, "/status/veleroBackup/name").to_string();
    (done, velero_name)
}

/// Removes a tenant object's finalizers and deletes it, as when a cluster is rebuilt without it.
async fn wipe<K>(api: &Api<K>, name: &str)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    let _ = api.delete(name, &DeleteParams::default()).await;
    eventually(&format!("{name} wiped"), 30, || async {
        api.get_opt(name).await.unwrap().is_none().then_some(())
    })
    .await;
}

/// Waits until Velero's own sync has a finished Backup `name` in the cluster again.
async fn velero_has(admin: &Client, name: &str) -> Backup {
    eventually(
        &format!("Velero Backup {name} synced from its bucket"),
        30,
        || async {
            Api::<Backup>::namespaced(admin.clone(), OADP_NAMESPACE)
                .get_opt(name)
                .await
                .unwrap()
                .filter(|b| {
                    b.metadata.deletion_timestamp.is_none()
                        && b.status
                            .as_ref()
                            .and_then(|s| s.phase.as_ref())
                            .is_some_and(|p| p.is_terminal())
                })
        },
    )
    .await
}

async fn a_schedule_waits_while_every_bucket_is_full_then_runs_on_its_entry(cluster: TestCluster) {
    let e = Env::new(cluster).await;
    let (team_a, team_b) = e.teams();
    let (team_a, team_b) = (team_a.as_str(), team_b.as_str());
    e.add_bucket("pool-1", Some(1)).await;
    // team-b takes pool-1's only place.
    e.create_nab(&e.admin, team_b, "first").await;
    e.entry_in_phase(team_b, BackupEntryPhase::Ready).await;

    // team-a has a schedule and nothing else: the schedule alone makes it use the pool.
    create_nas(&e.alice, team_a, "nightly").await;
    e.entry_in_phase(team_a, BackupEntryPhase::WaitingForBucket)
        .await;
    let waiting = eventually("team-a's schedule waiting for storage", 30, || async {
        let v = nas_value(&e.alice, team_a, "nightly").await;
        let queued = condition(&v, "Queued");
        (queued["reason"] == "WaitingForBackupStorage"
            && s(queued, "/message").contains("every shared backup bucket is full"))
        .then_some(v)
    })
    .await;
    assert_eq!(condition(&waiting, "Queued")["status"], "False");
    assert_eq!(condition(&waiting, "Accepted")["status"], "True");
    assert_eq!(s(&waiting, "/status/phase"), "New");
    // The message names no bucket and no other namespace.
    let text = condition(&waiting, "Queued").to_string();
    assert!(!text.contains("pool-1") && !text.contains(team_b), "{text}");
    // Nothing runs meanwhile: no Velero Schedule, so no backup either (not even to Velero's
    // default location).
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(velero_schedules_for(&e.admin, team_a).await.is_empty());
    assert!(velero_backups_for(&e.admin, team_a).await.is_empty());

    // The admin adds a bucket: team-a's entry takes it, and the schedule runs there.
    e.add_bucket("pool-2", Some(1)).await;
    let a = e.entry_in_phase(team_a, BackupEntryPhase::Ready).await;
    assert_eq!(a.spec.bucket_name.as_deref(), Some("pool-2"));
    let location = entry_location(&a);
    let schedule = eventually("team-a's Velero Schedule", 30, || async {
        velero_schedules_for(&e.admin, team_a)
            .await
            .into_iter()
            .next()
    })
    .await;
    assert_eq!(
        schedule.spec.template.storage_location.as_deref(),
        Some(location.as_str())
    );
    assert_eq!(
        schedule.spec.template.included_namespaces,
        Some(vec![team_a.to_string()])
    );
    let (child, velero_name) = first_scheduled_child(&e, team_a, "nightly").await;
    assert_eq!(
        s(&child, "/status/veleroBackup/spec/storageLocation"),
        location.as_str()
    );
    assert_eq!(
        stored_backups(&e.bucket_dir("shared-pool-2"), &a.spec.prefix),
        BTreeSet::from([velero_name.clone()])
    );
    assert!(
        !e.bucket_dir("velero")
            .join("velero/backups")
            .join(&velero_name)
            .exists()
    );
    // Every backup of team-a is on its entry's location.
    for b in velero_backups_for(&e.admin, team_a).await {
        assert_eq!(
            b.spec.storage_location.as_deref(),
            Some(location.as_str()),
            "{:?}",
            b.metadata.name
        );
    }
    // The tenant sees that the wait is over.
    let ready = eventually("team-a's schedule no longer waiting", 30, || async {
        let v = nas_value(&e.alice, team_a, "nightly").await;
        (condition(&v, "Queued")["status"] == "True").then_some(v)
    })
    .await;
    assert_eq!(condition(&ready, "Queued")["reason"], "BackupStorageReady");
    assert_eq!(s(&ready, "/status/phase"), "Created");
}

async fn sync_brings_pool_backups_back_into_their_namespace_only_never_into_a_recreated_one(
    cluster: TestCluster,
) {
    let mut e = Env::new(cluster).await;
    let (team_a, team_b) = e.teams();
    let (team_a, team_b) = (team_a.as_str(), team_b.as_str());
    e.add_bucket("pool-1", None).await;
    create_nas(&e.alice, team_a, "nightly").await;
    e.create_nab(&e.admin, team_b, "first").await;
    let (_, a_backup) = first_scheduled_child(&e, team_a, "nightly").await;
    let child = s(
        &nas_value(&e.admin, team_a, "nightly").await,
        "/status/recentBackups/0/name",
    )
    .to_string();
    let b_done = e.completed_nab(team_b, "first").await;
    let b_backup = s(&b_done, "/status/veleroBackup/name").to_string();
    let a = e.entry_in_phase(team_a, BackupEntryPhase::Ready).await;
    let b = e.entry_in_phase(team_b, BackupEntryPhase::Ready).await;
    let (a_location, b_location) = (entry_location(&a), entry_location(&b));
    // What Velero keeps in the bucket names the backup's tenant (so a sync can find it).
    let stored: Value = serde_json::from_slice(
        &std::fs::read(
            e.bucket_dir("shared-pool-1")
                .join(&a.spec.prefix)
                .join("backups")
                .join(&a_backup)
                .join("velero-backup.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        s(
            &stored,
            "/metadata/annotations/openshift.io~1oadp-nab-origin-namespace"
        ),
        team_a
    );

    // State loss: the controller is down and the tenant objects are gone (the schedule, its
    // child, team-b's backup), with the Velero objects; Velero syncs the backups back from
    // the entries' prefixes.
    e.stop_controllers();
    wipe(
        &Api::<NonAdminSchedule>::namespaced(e.admin.clone(), team_a),
        "nightly",
    )
    .await;
    wipe(
        &Api::<NonAdminBackup>::namespaced(e.admin.clone(), team_a),
        &child,
    )
    .await;
    wipe(
        &Api::<NonAdminBackup>::namespaced(e.admin.clone(), team_b),
        "first",
    )
    .await;
    let schedules = Api::<Schedule>::namespaced(e.admin.clone(), OADP_NAMESPACE);
    for schedule in velero_schedules_for(&e.admin, team_a).await {
        schedules
            .delete(
                schedule.metadata.name.as_deref().unwrap(),
                &DeleteParams::default(),
            )
            .await
            .unwrap();
    }
    let backups = Api::<Backup>::namespaced(e.admin.clone(), OADP_NAMESPACE);
    for name in [&a_backup, &b_backup] {
        backups
            .delete(name, &DeleteParams::default())
            .await
            .unwrap();
    }
    assert_eq!(
        velero_has(&e.admin, &a_backup).await.spec.storage_location,
        Some(a_location.clone())
    );
    assert_eq!(
        velero_has(&e.admin, &b_backup).await.spec.storage_location,
        Some(b_location.clone())
    );

    e.start_controllers();
    let ctx = Context::new(e.controller.clone(), OADP_NAMESPACE);
    let mut created = sync::sync_once(&ctx).await.unwrap();
    created.sort();
    assert_eq!(
        created,
        [
            (team_a.to_string(), child.clone()),
            (team_b.to_string(), "first".to_string())
        ]
    );
    // Each is adopted again, mirroring its backup on its own entry's location, and names no
    // location itself (a NAB without one belongs to its namespace's entry).
    for (namespace, name, velero_name, location) in [
        (team_a, child.as_str(), &a_backup, &a_location),
        (team_b, "first", &b_backup, &b_location),
    ] {
        let back = e.completed_nab(namespace, name).await;
        assert_eq!(s(&back, "/status/veleroBackup/name"), velero_name.as_str());
        assert_eq!(
            s(&back, "/status/veleroBackup/spec/storageLocation"),
            location.as_str()
        );
        assert!(back.pointer("/spec/backupSpec/storageLocation").is_none());
        // Nothing else was planted in the namespace.
        let names: Vec<String> = Api::<NonAdminBackup>::namespaced(e.admin.clone(), namespace)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect();
        assert_eq!(names, [name.to_string()], "{namespace}");
    }
    assert!(sync::sync_once(&ctx).await.unwrap().is_empty());

    // team-a is deleted and created again under the same name: a new UID. Its entry keeps the
    // old backups for the grace period, and Velero keeps syncing them from its prefix...
    let old_uid = namespace_uid(&e.admin, team_a).await;
    e.delete_namespace(team_a).await;
    e.namespace_gone(team_a).await;
    e.entry_in_phase(team_a, BackupEntryPhase::NamespaceDeleted)
        .await;
    e.cluster.tenant_namespace("alice", team_a).await;
    assert_ne!(namespace_uid(&e.admin, team_a).await, old_uid);
    let resynced = velero_has(&e.admin, &a_backup).await;
    assert_eq!(
        resynced.metadata.annotations.as_ref().unwrap()["openshift.io/oadp-nab-origin-namespace"],
        team_a
    );
    // ...but none of them is synced into the new namespace.
    assert!(sync::sync_once(&ctx).await.unwrap().is_empty());
    assert!(
        Api::<NonAdminBackup>::namespaced(e.admin.clone(), team_a)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    // GC leaves the retained entry's location and backups to the pool controller.
    let deleted = gc::collect_once(&ctx).await.unwrap();
    assert!(
        !deleted
            .iter()
            .any(|(kind, name)| kind == "BackupStorageLocation" || name == &a_backup),
        "{deleted:?}"
    );
    assert!(
        e.locations()
            .await
            .iter()
            .any(|l| l.metadata.name.as_deref() == Some(a_location.as_str()))
    );
    assert!(backups.get_opt(&a_backup).await.unwrap().is_some());
    assert!(stored_backups(&e.bucket_dir("shared-pool-1"), &a.spec.prefix).contains(&a_backup));
}

on_both_servers!(
    entries_spill_over_at_quota_and_a_waiting_namespace_takes_the_next_bucket,
    a_deleted_namespace_is_purged_after_its_grace_period_through_delete_backup_requests,
    force_delete_purges_a_deleted_namespace_at_once,
    entries_lost_from_the_api_are_rebuilt_from_locations_and_buckets,
    a_schedule_waits_while_every_bucket_is_full_then_runs_on_its_entry,
    sync_brings_pool_backups_back_into_their_namespace_only_never_into_a_recreated_one,
);
