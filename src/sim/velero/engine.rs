//! The simulator's control loop: watches the Velero namespace and, on every change or timer,
//! runs one pass over BackupStorageLocations (validation, backup sync), Schedules, the backup
//! queue, Restores, DeleteBackupRequests, DownloadRequests and expired backups. Long work
//! (a backup or a restore) runs in its own task and writes its own progress. Each object's
//! work is isolated: a failure is logged, counted and backs off that object alone
//! ([`super::failures`]); namespaces come from a watch, not a list per pass.
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use chrono::{DateTime, Utc};
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde_json::{Value, json};
use tokio::sync::Notify;

use super::clock::SimClock;
use super::clock::{parse_time, timestamp};
use super::context::{SimContext, SimError, as_json};
use super::failures::{Failures, ObjectKey};
use super::options::{INJECT_ERROR_ANNOTATION, SimulatorOptions};
use super::queue::{QueueEntry, plan_queue};
use super::signed_url::UrlSigner;
use super::storage::BackupStore;
use super::{backup_run, restore_run};
use crate::api::velero::labels::{
    BACKUP_NAME, BACKUP_UID, SCHEDULE_NAME, STORAGE_LOCATION, valid_label_value,
};
use crate::api::velero::{
    Backup, BackupPhase, BackupStorageLocation, DeleteBackupRequest, DownloadRequest, Restore,
    RestorePhase, Schedule,
};
use crate::manifest::selection::backup_namespaces_for_queue;

fn name_of(meta: &kube::core::ObjectMeta) -> String {
    meta.name.clone().unwrap_or_default()
}

pub(super) struct Inner {
    /// What the backup and restore runs share with the loop.
    pub(super) context: SimContext,
    pub(super) signer: Arc<UrlSigner>,
    running_backups: Mutex<HashSet<String>>,
    running_restore: Mutex<Option<String>>,
    last_validation: Mutex<HashMap<String, DateTime<Utc>>>,
    last_sync: Mutex<HashMap<String, DateTime<Utc>>>,
    last_gc: Mutex<HashMap<String, DateTime<Utc>>>,
    /// When each waiting backup's or restore's operations were last looked at.
    last_operations_poll: Mutex<HashMap<String, DateTime<Utc>>>,
    wake: Notify,
    failures: Failures,
    /// Every namespace, kept by a watch (the queue expands `includedNamespaces: ["*"]`).
    namespaces: reflector::Store<Namespace>,
    /// Its writer, until the watch starts.
    namespaces_writer: Mutex<Option<reflector::store::Writer<Namespace>>>,
}

impl Inner {
    pub(super) fn finish_backup(&self, name: &str) {
        if let Ok(mut running) = self.running_backups.lock() {
            running.remove(name);
        }
        self.wake.notify_one();
    }

    pub(super) fn finish_restore(&self) {
        if let Ok(mut running) = self.running_restore.lock() {
            *running = None;
        }
        self.wake.notify_one();
    }

    /// Runs one object's `work` in `step`, unless that object is backed off. A failure is
    /// logged, counted and backs off this object only: the pass goes on with the others (one
    /// refused write must never stop every tenant's backups).
    async fn isolated<F>(
        &self,
        step: &'static str,
        kind: &'static str,
        meta: &kube::core::ObjectMeta,
        work: F,
    ) where
        F: Future<Output = Result<(), SimError>>,
    {
        let key = ObjectKey::of(step, kind, meta);
        let version = meta.resource_version.as_deref().unwrap_or_default();
        let now = Instant::now();
        if self.failures.backing_off(&key, version, now) {
            return;
        }
        // A test knob: the annotation makes the object's work fail without touching it.
        let injected = meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(INJECT_ERROR_ANNOTATION))
            .cloned();
        let result = match injected {
            Some(message) => Err(SimError::Other(format!("injected error: {message}"))),
            None => work.await,
        };
        match result {
            Ok(()) => self.failures.succeeded(&key),
            Err(error) => {
                let (namespace, name) = (key.namespace.clone(), key.name.clone());
                let retry_in = self.failures.failed(key, version, now);
                tracing::warn!(
                    step,
                    kind,
                    %namespace,
                    %name,
                    error = %error,
                    retry_in_ms = u64::try_from(retry_in.as_millis()).unwrap_or(u64::MAX),
                    "velero simulator: operation failed; backing off this object"
                );
            }
        }
    }

    /// The names of every namespace: from the watch once it has listed them, else (the first
    /// pass after start, or a watch that cannot run) from one list.
    async fn namespace_names(&self) -> Result<Vec<String>, SimError> {
        let ready = self
            .namespaces
            .wait_until_ready()
            .now_or_never()
            .is_some_and(|r| r.is_ok());
        if ready {
            return Ok(self
                .namespaces
                .state()
                .iter()
                .map(|n| name_of(&n.metadata))
                .collect());
        }
        Ok(Api::<Namespace>::all(self.context.client.clone())
            .list(&ListParams::default())
            .await?
            .items
            .iter()
            .map(|n| name_of(&n.metadata))
            .collect())
    }
}

/// The Velero simulator.
#[derive(Clone)]
pub struct VeleroSimulator {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for VeleroSimulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VeleroSimulator")
            .field("namespace", &self.inner.context.options.namespace)
            .finish_non_exhaustive()
    }
}

fn backup_phase(b: &Backup) -> Option<BackupPhase> {
    b.status.as_ref().and_then(|s| s.phase.clone())
}

fn restore_phase(r: &Restore) -> Option<RestorePhase> {
    r.status.as_ref().and_then(|s| s.phase.clone())
}

/// Steps of a pass, naming failures in logs and back-off keys.
mod step {
    pub const INTERRUPTED: &str = "fail-interrupted";
    pub const VALIDATE: &str = "validate-locations";
    pub const SYNC: &str = "sync-backups";
    pub const SYNC_BACKUP: &str = "sync-backup";
    pub const SCHEDULES: &str = "schedules";
    pub const EXPIRY: &str = "expiry";
    pub const QUEUE: &str = "backup-queue";
    pub const RESTORES: &str = "restores";
    pub const DELETE_REQUESTS: &str = "delete-requests";
    pub const DOWNLOAD_REQUESTS: &str = "download-requests";
    pub const OPERATIONS: &str = "plugin-operations";
}

impl VeleroSimulator {
    /// A simulator acting through `client` (which must be allowed to do what Velero does).
    pub fn new(client: kube::Client, options: SimulatorOptions, signer: Arc<UrlSigner>) -> Self {
        let clock = SimClock::scaled(options.time_scale);
        let (namespaces, writer) = reflector::store();
        VeleroSimulator {
            inner: Arc::new(Inner {
                context: SimContext {
                    client,
                    options,
                    clock,
                },
                signer,
                running_backups: Mutex::new(HashSet::new()),
                running_restore: Mutex::new(None),
                last_validation: Mutex::new(HashMap::new()),
                last_sync: Mutex::new(HashMap::new()),
                last_gc: Mutex::new(HashMap::new()),
                last_operations_poll: Mutex::new(HashMap::new()),
                wake: Notify::new(),
                failures: Failures::default(),
                namespaces,
                namespaces_writer: Mutex::new(Some(writer)),
            }),
        }
    }

    /// The simulator's clock.
    pub fn clock(&self) -> &SimClock {
        &self.inner.context.clock
    }

    /// Failed operations so far (each logged, and its object backed off).
    pub fn errors_total(&self) -> u64 {
        self.inner.failures.total()
    }

    /// Failed operations so far per kind of object (`"pass"` for a step that could not even
    /// list its objects).
    pub fn errors_by_kind(&self) -> BTreeMap<String, u64> {
        self.inner.failures.by_kind()
    }

    /// Objects whose last attempt failed (backed off now).
    pub fn failing_objects(&self) -> usize {
        self.inner.failures.failing_objects()
    }

    /// The HTTP endpoint serving signed download URLs of local-provider buckets.
    pub fn download_router(&self) -> axum::Router {
        super::signed_url::download_router_with_clock(
            self.inner.signer.clone(),
            self.inner.context.options.local_root.clone(),
            self.inner.context.clock.as_fn(),
        )
    }

    /// Runs until the task is dropped: marks work interrupted by a restart as failed (as Velero
    /// does at start-up), then reconciles on every change and every resync interval.
    pub async fn run(self) {
        if let Err(e) = self.fail_interrupted_work().await {
            tracing::warn!(error = %e, "could not mark interrupted backups as failed");
        }
        self.spawn_watchers();
        loop {
            // Every failure was logged and counted where it happened.
            let _ = self.reconcile_once().await;
            let resync = self
                .inner
                .context
                .clock
                .real_duration(self.inner.context.options.resync_interval);
            tokio::select! {
                _ = self.inner.wake.notified() => {}
                _ = tokio::time::sleep(resync) => {}
            }
        }
    }

    fn spawn_watchers(&self) {
        fn watch<K>(inner: Arc<Inner>, api: Api<K>)
        where
            K: kube::Resource
                + Clone
                + serde::de::DeserializeOwned
                + std::fmt::Debug
                + Send
                + 'static,
        {
            tokio::spawn(async move {
                let mut stream = watcher(api, watcher::Config::default())
                    .default_backoff()
                    .boxed();
                while stream.next().await.is_some() {
                    inner.wake.notify_one();
                }
            });
        }
        let inner = &self.inner;
        watch(inner.clone(), inner.context.backups());
        watch(inner.clone(), inner.context.restores());
        watch(inner.clone(), inner.context.locations());
        watch(inner.clone(), inner.context.delete_requests());
        watch(inner.clone(), inner.context.download_requests());
        watch(inner.clone(), inner.context.schedules());
        // Namespaces only feed the store (no pass of their own: the next one reads it).
        let writer = inner
            .namespaces_writer
            .lock()
            .ok()
            .and_then(|mut w| w.take());
        if let Some(writer) = writer {
            let api = Api::<Namespace>::all(inner.context.client.clone());
            tokio::spawn(async move {
                let stream = watcher(api, watcher::Config::default()).default_backoff();
                let mut stream = reflector::reflector(writer, stream).boxed();
                while let Some(event) = stream.next().await {
                    if let Err(error) = event {
                        tracing::debug!(error = %error, "velero simulator: namespace watch");
                    }
                }
            });
        }
    }

    async fn fail_interrupted_work(&self) -> Result<(), SimError> {
        let inner = &self.inner;
        let now = timestamp(inner.context.clock.now());
        for b in inner
            .context
            .backups()
            .list(&ListParams::default())
            .await?
            .items
        {
            if matches!(
                backup_phase(&b),
                Some(BackupPhase::InProgress | BackupPhase::Finalizing)
            ) {
                let reason = "found a backup with status \"InProgress\" during the server starting, mark it as \"Failed\"";
                let patch = json!({"status": {"phase": "Failed", "failureReason": reason,
                                              "completionTimestamp": now}});
                let name = name_of(&b.metadata);
                let api = inner.context.backups();
                let work = inner.context.patch(&api, &name, patch);
                inner
                    .isolated(step::INTERRUPTED, "Backup", &b.metadata, work)
                    .await;
            }
        }
        for r in inner
            .context
            .restores()
            .list(&ListParams::default())
            .await?
            .items
        {
            if matches!(
                restore_phase(&r),
                Some(RestorePhase::InProgress | RestorePhase::Finalizing)
            ) {
                let reason = "found a restore with status \"InProgress\" during the server starting, mark it as \"Failed\"";
                let patch = json!({"status": {"phase": "Failed", "failureReason": reason,
                                              "completionTimestamp": now}});
                let name = name_of(&r.metadata);
                let api = inner.context.restores();
                let work = inner.context.patch(&api, &name, patch);
                inner
                    .isolated(step::INTERRUPTED, "Restore", &r.metadata, work)
                    .await;
            }
        }
        Ok(())
    }

    /// One pass over everything (tests call it directly). Each step runs even when another
    /// failed, and each object's work is isolated (see [`Inner::isolated`]); the result is the
    /// first step that could not run at all (e.g. could not list its objects).
    pub async fn reconcile_once(&self) -> Result<(), SimError> {
        let results = [
            (step::VALIDATE, self.validate_locations().await),
            (step::SYNC, self.sync_backups().await),
            (step::SCHEDULES, self.run_schedules().await),
            (step::EXPIRY, self.collect_expired().await),
            (step::QUEUE, self.advance_backup_queue().await),
            (step::RESTORES, self.start_restores().await),
            (step::OPERATIONS, self.advance_operations().await),
            (step::DELETE_REQUESTS, self.process_delete_requests().await),
            (
                step::DOWNLOAD_REQUESTS,
                self.process_download_requests().await,
            ),
        ];
        let mut first = None;
        for (step, result) in results {
            if let Err(error) = result {
                self.inner.failures.count("pass");
                tracing::warn!(step, error = %error, "velero simulator: step failed");
                first.get_or_insert(error);
            }
        }
        first.map_or(Ok(()), Err)
    }

    fn due(
        map: &Mutex<HashMap<String, DateTime<Utc>>>,
        key: &str,
        now: DateTime<Utc>,
        every: std::time::Duration,
    ) -> bool {
        let Ok(mut m) = map.lock() else { return false };
        let every = chrono::Duration::from_std(every).unwrap_or(chrono::Duration::MAX);
        match m.get(key) {
            Some(last) if now - *last < every => false,
            _ => {
                m.insert(key.to_string(), now);
                true
            }
        }
    }

    async fn validate_locations(&self) -> Result<(), SimError> {
        let inner = &self.inner;
        let now = inner.context.clock.now();
        for location in inner
            .context
            .locations()
            .list(&ListParams::default())
            .await?
            .items
        {
            let work = self.validate_location(&location, now);
            inner
                .isolated(
                    step::VALIDATE,
                    "BackupStorageLocation",
                    &location.metadata,
                    work,
                )
                .await;
        }
        Ok(())
    }

    async fn validate_location(
        &self,
        location: &BackupStorageLocation,
        now: DateTime<Utc>,
    ) -> Result<(), SimError> {
        let inner = &self.inner;
        let name = name_of(&location.metadata);
        let never_validated = location
            .status
            .as_ref()
            .and_then(|s| s.phase.as_ref())
            .is_none();
        if !never_validated
            && !Self::due(
                &inner.last_validation,
                &name,
                now,
                inner.context.options.bsl_validation_interval,
            )
        {
            return Ok(());
        }
        if never_validated && let Ok(mut m) = inner.last_validation.lock() {
            m.insert(name.clone(), now);
        }
        let verdict = match inner.context.store_for(location).await {
            Ok(store) => store.check_available().await.map_err(|e| e.to_string()),
            // The store's own words (the plugin's, for `aws`), as Velero reports them.
            Err(SimError::Storage(e)) => Err(e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        let status = match verdict {
            Ok(()) => {
                json!({"phase": "Available", "lastValidationTime": timestamp(now), "message": null})
            }
            Err(message) => {
                json!({"phase": "Unavailable", "lastValidationTime": timestamp(now),
                                    "message": format!("BackupStorageLocation \"{name}\" is unavailable: {message}")})
            }
        };
        inner
            .context
            .patch(&inner.context.locations(), &name, json!({"status": status}))
            .await
    }

    async fn sync_backups(&self) -> Result<(), SimError> {
        let inner = &self.inner;
        let now = inner.context.clock.now();
        let backups = inner
            .context
            .backups()
            .list(&ListParams::default())
            .await?
            .items;
        for location in inner
            .context
            .locations()
            .list(&ListParams::default())
            .await?
            .items
        {
            let work = self.sync_location(&location, &backups, now);
            inner
                .isolated(
                    step::SYNC,
                    "BackupStorageLocation",
                    &location.metadata,
                    work,
                )
                .await;
        }
        Ok(())
    }

    async fn sync_location(
        &self,
        location: &BackupStorageLocation,
        backups: &[Backup],
        now: DateTime<Utc>,
    ) -> Result<(), SimError> {
        let inner = &self.inner;
        let name = name_of(&location.metadata);
        if !super::validation::bsl_is_available(location)
            || !Self::due(
                &inner.last_sync,
                &name,
                now,
                inner.context.options.backup_sync_interval,
            )
        {
            return Ok(());
        }
        let store = inner.context.store_for(location).await?;
        let keys = store.list("backups/").await?;
        let in_storage: BTreeSet<String> = store
            .layout()
            .backup_names(keys.iter().map(String::as_str))
            .into_iter()
            .collect();
        let in_cluster: BTreeSet<String> = backups.iter().map(|b| name_of(&b.metadata)).collect();
        for missing in in_storage.difference(&in_cluster) {
            // One unreadable or refused backup must not keep the location's others out.
            let meta = kube::core::ObjectMeta {
                name: Some(missing.clone()),
                namespace: Some(inner.context.options.namespace.clone()),
                ..Default::default()
            };
            let work = self.sync_one_backup(&store, &name, missing);
            inner
                .isolated(step::SYNC_BACKUP, "Backup", &meta, work)
                .await;
        }
        // Velero records each sync on the location (`status.lastSyncedTime`); NAC's
        // shared-pool purge reads it to know the bucket was looked at again.
        inner
            .context
            .patch(
                &inner.context.locations(),
                &name,
                json!({"status": {"lastSyncedTime": timestamp(now)}}),
            )
            .await?;
        if location.spec.access_mode
            == Some(crate::api::velero::BackupStorageLocationAccessMode::ReadOnly)
        {
            return Ok(());
        }
        let label = valid_label_value(&name);
        for b in backups {
            let bname = name_of(&b.metadata);
            let on_this_location = b
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(STORAGE_LOCATION))
                == Some(&label);
            let finished = matches!(
                backup_phase(b),
                Some(BackupPhase::Completed | BackupPhase::PartiallyFailed)
            );
            if on_this_location && finished && !in_storage.contains(&bname) {
                // Velero's sync deletes Completed backups whose data is gone from storage.
                match inner
                    .context
                    .backups()
                    .delete(&bname, &DeleteParams::default())
                    .await
                {
                    Ok(_) | Err(kube::Error::Api(_)) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(())
    }

    /// Creates in the cluster the backup `missing` found in `location`'s storage.
    async fn sync_one_backup(
        &self,
        store: &BackupStore,
        location: &str,
        missing: &str,
    ) -> Result<(), SimError> {
        let inner = &self.inner;
        let Some(bytes) = store
            .get(&store.layout().backup_metadata_key(missing))
            .await?
        else {
            return Ok(());
        };
        let Ok(mut stored) = serde_json::from_slice::<Value>(&bytes) else {
            tracing::warn!(backup = %missing, "unreadable velero-backup.json; not synced");
            return Ok(());
        };
        let mut labels = stored
            .pointer("/metadata/labels")
            .cloned()
            .unwrap_or(json!({}));
        labels[STORAGE_LOCATION] = json!(valid_label_value(location));
        stored["metadata"] = json!({"name": missing, "namespace": inner.context.options.namespace, "labels": labels,
            "annotations": stored.pointer("/metadata/annotations").cloned().unwrap_or(json!({}))});
        stored["spec"]["storageLocation"] = json!(location);
        let Ok(backup) = serde_json::from_value::<Backup>(stored.clone()) else {
            return Ok(());
        };
        match inner
            .context
            .backups()
            .create(&PostParams::default(), &backup)
            .await
        {
            Ok(_) => {
                // Status is not taken on create by every server; write it through the object.
                if let Some(status) = stored.get("status") {
                    inner
                        .context
                        .patch(&inner.context.backups(), missing, json!({"status": status}))
                        .await?;
                }
                Ok(())
            }
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    async fn run_schedules(&self) -> Result<(), SimError> {
        let inner = &self.inner;
        let now = inner.context.clock.now();
        let backups = inner
            .context
            .backups()
            .list(&ListParams::default())
            .await?
            .items;
        for schedule in inner
            .context
            .schedules()
            .list(&ListParams::default())
            .await?
            .items
        {
            let work = self.run_schedule(&schedule, &backups, now);
            inner
                .isolated(step::SCHEDULES, "Schedule", &schedule.metadata, work)
                .await;
        }
        Ok(())
    }

    /// One pass of Velero's schedule controller (`pkg/controller/schedule_controller.go`) over
    /// `schedule`: a paused schedule is filtered out before it is even read (its status stays
    /// as it was); `spec.skipImmediately` is written as the server's default (false) when
    /// unset and consumed when true (set back to false, `status.lastSkipped` = now); the cron
    /// is validated (Enabled / FailedValidation); the schedule is due at the first cron time
    /// after its last backup (or its creation, or its last skip when later), never at once;
    /// and no backup is submitted while one of its backups has no phase, is New or InProgress.
    async fn run_schedule(
        &self,
        schedule: &Schedule,
        backups: &[Backup],
        now: DateTime<Utc>,
    ) -> Result<(), SimError> {
        let inner = &self.inner;
        if schedule.spec.paused == Some(true) {
            return Ok(());
        }
        let name = name_of(&schedule.metadata);
        let json_schedule = as_json(schedule);
        let mut spec_patch = serde_json::Map::new();
        let mut status_patch = serde_json::Map::new();
        let mut last_skipped = parse_time(json_schedule.pointer("/status/lastSkipped"));
        match schedule.spec.skip_immediately {
            None => {
                spec_patch.insert("skipImmediately".into(), json!(false));
            }
            Some(true) => {
                spec_patch.insert("skipImmediately".into(), json!(false));
                status_patch.insert("lastSkipped".into(), json!(timestamp(now)));
                last_skipped = Some(now);
            }
            Some(false) => {}
        }
        let current_phase = json_schedule
            .pointer("/status/phase")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let cron = parse_cron_schedule(&schedule.spec.schedule);
        let phase = match &cron {
            Ok(_) => "Enabled",
            Err(_) => "FailedValidation",
        };
        if current_phase != phase {
            status_patch.insert("phase".into(), json!(phase));
            match &cron {
                Ok(_) => status_patch.insert("validationErrors".into(), Value::Null),
                Err(errors) => status_patch.insert("validationErrors".into(), json!(errors)),
            };
        }
        if !spec_patch.is_empty() || !status_patch.is_empty() {
            let mut patch = json!({});
            if !spec_patch.is_empty() {
                patch["spec"] = Value::Object(spec_patch);
            }
            if !status_patch.is_empty() {
                patch["status"] = Value::Object(status_patch);
            }
            inner
                .context
                .patch(&inner.context.schedules(), &name, patch)
                .await?;
        }
        let Ok(cron) = cron else { return Ok(()) };
        let last_backup = parse_time(json_schedule.pointer("/status/lastBackup"));
        let created =
            parse_time(json_schedule.pointer("/metadata/creationTimestamp")).unwrap_or(now);
        if !schedule_due(&cron, last_backup, last_skipped, created, now) {
            return Ok(());
        }
        let label = valid_label_value(&name);
        let in_new_or_progress = backups.iter().any(|b| {
            b.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(SCHEDULE_NAME))
                == Some(&label)
                && match backup_phase(b) {
                    None | Some(BackupPhase::New | BackupPhase::InProgress) => true,
                    Some(BackupPhase::Other(p)) => p.is_empty(),
                    Some(_) => false,
                }
        });
        if in_new_or_progress {
            return Ok(());
        }
        let backup_name = format!("{name}-{}", now.format("%Y%m%d%H%M%S"));
        let backup = backup_from_schedule(schedule, &backup_name, &inner.context.options.namespace);
        inner
            .context
            .backups()
            .create(&PostParams::default(), &backup)
            .await?;
        inner
            .context
            .patch(
                &inner.context.schedules(),
                &name,
                json!({"status": {"lastBackup": timestamp(now)}}),
            )
            .await
    }

    /// Velero's garbage collection (`pkg/controller/gc_controller.go`), every
    /// [`SimulatorOptions::gc_interval`] of simulated time: every backup whose
    /// `status.expiration` has passed, whatever its phase (FailedValidation ones included), gets
    /// a DeleteBackupRequest unless one of its requests is still pending ("", New or
    /// InProgress), so a deletion that ended with errors is tried again on the next pass. A
    /// backup whose location is missing or read-only is labelled `velero.io/gc-failure`
    /// instead; one whose location is unavailable is left for later.
    async fn collect_expired(&self) -> Result<(), SimError> {
        let inner = &self.inner;
        let now = inner.context.clock.now();
        if !Self::due(&inner.last_gc, "gc", now, inner.context.options.gc_interval) {
            return Ok(());
        }
        let requests = inner
            .context
            .delete_requests()
            .list(&ListParams::default())
            .await?
            .items;
        let locations = inner
            .context
            .locations()
            .list(&ListParams::default())
            .await?
            .items;
        for b in inner
            .context
            .backups()
            .list(&ListParams::default())
            .await?
            .items
        {
            let json_backup = as_json(&b);
            let Some(expiration) = parse_time(json_backup.pointer("/status/expiration")) else {
                continue;
            };
            if expiration > now {
                continue;
            }
            let work = gc_backup(inner, &b, &locations, &requests);
            inner
                .isolated(step::EXPIRY, "Backup", &b.metadata, work)
                .await;
        }
        Ok(())
    }

    async fn advance_backup_queue(&self) -> Result<(), SimError> {
        let inner = &self.inner;
        let backups = inner
            .context
            .backups()
            .list(&ListParams::default())
            .await?
            .items;
        let namespaces = inner.namespace_names().await?;
        let entries: Vec<QueueEntry> = backups
            .iter()
            .map(|b| QueueEntry {
                name: name_of(&b.metadata),
                creation_timestamp: parse_time(as_json(b).pointer("/metadata/creationTimestamp"))
                    .unwrap_or_else(Utc::now),
                phase: backup_phase(b),
                queue_position: b.status.as_ref().and_then(|s| s.queue_position),
                resource_version: b
                    .metadata
                    .resource_version
                    .as_deref()
                    .and_then(|v| v.parse().ok()),
                namespaces: backup_namespaces_for_queue(&b.spec, &namespaces)
                    .into_iter()
                    .collect(),
            })
            .collect();
        let plan = plan_queue(&entries, inner.context.options.concurrent_backups);
        let ready: BTreeSet<&String> = plan.ready_to_start.iter().collect();
        let meta_of = |name: &str| {
            backups
                .iter()
                .find(|b| b.metadata.name.as_deref() == Some(name))
                .map(|b| b.metadata.clone())
                .unwrap_or_default()
        };
        let api = inner.context.backups();
        for name in &plan.ready_to_start {
            let work = inner.context.patch(
                &api,
                name,
                json!({"status": {"phase": "ReadyToStart", "queuePosition": 0}}),
            );
            inner
                .isolated(step::QUEUE, "Backup", &meta_of(name), work)
                .await;
        }
        for queued in &plan.queued {
            let entry = entries.iter().find(|e| e.name == queued.name);
            let unchanged = entry.is_some_and(|e| {
                e.phase == Some(BackupPhase::Queued) && e.queue_position == Some(queued.position)
            });
            if !unchanged && !ready.contains(&queued.name) {
                let work = inner.context.patch(
                    &api,
                    &queued.name,
                    json!({"status": {"phase": "Queued", "queuePosition": queued.position}}),
                );
                inner
                    .isolated(step::QUEUE, "Backup", &meta_of(&queued.name), work)
                    .await;
            }
        }
        // Start every backup that is ready and not running here yet.
        let mut starting = Vec::new();
        for b in &backups {
            let name = name_of(&b.metadata);
            let ready_now =
                ready.contains(&name) || backup_phase(b) == Some(BackupPhase::ReadyToStart);
            if !ready_now {
                continue;
            }
            let Ok(mut running) = inner.running_backups.lock() else {
                continue;
            };
            if running.insert(name.clone()) {
                starting.push(name);
            }
        }
        for name in starting {
            let inner = self.inner.clone();
            tokio::spawn(async move {
                let result = backup_run::run(&inner.context, &name).await;
                if let Err(e) = result {
                    tracing::warn!(backup = %name, error = %e, "backup failed in the simulator");
                    let _ = inner
                        .context
                        .patch(
                            &inner.context.backups(),
                            &name,
                            json!({"status": {"phase": "Failed", "failureReason": e.to_string(),
                            "completionTimestamp": timestamp(inner.context.clock.now())}}),
                        )
                        .await;
                }
                inner.finish_backup(&name);
            });
        }
        Ok(())
    }

    /// Velero's backup and restore operations controllers
    /// (`pkg/controller/backup_operations_controller.go`, `restore_operations_controller.go`)
    /// and, once no operation runs, the finalizer controllers: every
    /// `item_operation_poll_interval` each waiting backup or restore has its operations'
    /// progress looked at (see [`super::operations`]).
    async fn advance_operations(&self) -> Result<(), SimError> {
        let inner = &self.inner;
        let now = inner.context.clock.now();
        let every = inner.context.options.item_operation_poll_interval;
        for b in inner
            .context
            .backups()
            .list(&ListParams::default())
            .await?
            .items
        {
            let waiting = matches!(
                backup_phase(&b),
                Some(
                    BackupPhase::WaitingForPluginOperations
                        | BackupPhase::WaitingForPluginOperationsPartiallyFailed
                )
            );
            let key = format!("backup/{}", name_of(&b.metadata));
            if waiting && Self::due(&inner.last_operations_poll, &key, now, every) {
                let work = self.advance_backup_operations(&b, now);
                inner
                    .isolated(step::OPERATIONS, "Backup", &b.metadata, work)
                    .await;
            }
        }
        for r in inner
            .context
            .restores()
            .list(&ListParams::default())
            .await?
            .items
        {
            let waiting = matches!(
                restore_phase(&r),
                Some(
                    RestorePhase::WaitingForPluginOperations
                        | RestorePhase::WaitingForPluginOperationsPartiallyFailed
                )
            );
            let key = format!("restore/{}", name_of(&r.metadata));
            if waiting && Self::due(&inner.last_operations_poll, &key, now, every) {
                let work = self.advance_restore_operations(&r, now);
                inner
                    .isolated(step::OPERATIONS, "Restore", &r.metadata, work)
                    .await;
            }
        }
        Ok(())
    }

    /// The operations stored under `key`, advanced to `now`.
    async fn load_operations(
        &self,
        store: &BackupStore,
        key: &str,
        now: DateTime<Utc>,
        timeout: Option<std::time::Duration>,
    ) -> Result<(Vec<Value>, super::operations::Progress), SimError> {
        let mut operations: Vec<Value> = match store.get(key).await? {
            Some(bytes) => {
                let json = crate::manifest::tarball::gunzip(&bytes)
                    .map_err(|e| SimError::Other(format!("reading {key}: {e}")))?;
                serde_json::from_slice(&json)
                    .map_err(|e| SimError::Other(format!("reading {key}: {e}")))?
            }
            // Uploaded before the phase was patched: missing means the storage lost it.
            None => {
                return Err(SimError::Other(format!(
                    "no item operations stored at {key}"
                )));
            }
        };
        let progress = super::operations::advance(
            &mut operations,
            now,
            self.inner.context.options.item_operation_duration,
            timeout,
        );
        Ok((operations, progress))
    }

    fn operations_bytes(operations: &[Value]) -> bytes::Bytes {
        bytes::Bytes::from(crate::manifest::tarball::gzip(
            &serde_json::to_vec(operations).unwrap_or_default(),
        ))
    }

    /// One round of the backup operations controller over `backup`, then the finalizer's.
    async fn advance_backup_operations(
        &self,
        backup: &Backup,
        now: DateTime<Utc>,
    ) -> Result<(), SimError> {
        let inner = &self.inner;
        let api = inner.context.backups();
        let name = name_of(&backup.metadata);
        let status = backup.status.clone().unwrap_or_default();
        let current = backup_phase(backup)
            .map(|p| p.as_str().to_owned())
            .unwrap_or_default();
        let errors = status.errors.unwrap_or_default();
        // "Cannot check progress on Backup operations because backup storage location ... ;
        // marking backup PartiallyFailed".
        let location_name = backup.spec.storage_location.clone().unwrap_or_default();
        let location = inner.context.location(&location_name).await?;
        let Some(location) = location.filter(|l| {
            l.spec.access_mode
                != Some(crate::api::velero::BackupStorageLocationAccessMode::ReadOnly)
        }) else {
            return inner
                .context
                .patch(
                    &api,
                    &name,
                    json!({"status": {"phase": "PartiallyFailed", "errors": errors + 1}}),
                )
                .await;
        };
        let store = inner.context.store_for(&location).await?;
        let key = store.layout().backup_item_operations_key(&name);
        let timeout = backup
            .spec
            .item_operation_timeout
            .as_ref()
            .and_then(|d| d.parse().ok());
        let (operations, progress) = self.load_operations(&store, &key, now, timeout).await?;
        let recorded = (
            status.backup_item_operations_completed.unwrap_or_default(),
            status.backup_item_operations_failed.unwrap_or_default(),
        );
        let patch =
            super::operations::round_status("backup", &current, recorded, errors, &progress);
        if progress.changed {
            store.put(&key, Self::operations_bytes(&operations)).await?;
        }
        if progress.in_progress {
            if !patch.is_empty() {
                inner
                    .context
                    .patch(&api, &name, json!({"status": Value::Object(patch)}))
                    .await?;
            }
            return Ok(());
        }
        let finalizing = patch
            .get("phase")
            .and_then(Value::as_str)
            .unwrap_or("FinalizingPartiallyFailed")
            .to_owned();
        inner
            .context
            .patch(&api, &name, json!({"status": Value::Object(patch)}))
            .await?;
        // The finalizer controller: the terminal phase, recorded in velero-backup.json too.
        let terminal = super::operations::phase_after_finalizing(&finalizing);
        let final_status =
            json!({"phase": terminal, "completionTimestamp": timestamp(inner.context.clock.now())});
        let metadata =
            backup_run::stored_backup_metadata(as_json(&api.get(&name).await?), &final_status)?;
        store
            .put(
                &store.layout().backup_metadata_key(&name),
                bytes::Bytes::from(metadata),
            )
            .await?;
        inner
            .context
            .patch(&api, &name, json!({"status": final_status}))
            .await
    }

    /// One round of the restore operations controller over `restore`, then the finalizer's.
    async fn advance_restore_operations(
        &self,
        restore: &Restore,
        now: DateTime<Utc>,
    ) -> Result<(), SimError> {
        let inner = &self.inner;
        let api = inner.context.restores();
        let name = name_of(&restore.metadata);
        let status = restore.status.clone().unwrap_or_default();
        let current = restore_phase(restore)
            .map(|p| p.as_str().to_owned())
            .unwrap_or_default();
        let errors = status.errors.unwrap_or_default();
        // "Cannot check progress on Restore operations because backup info is unavailable" or
        // the location is read-only: PartiallyFailed.
        let backup_name = restore.spec.backup_name.clone().unwrap_or_default();
        let backup = inner.context.backups().get_opt(&backup_name).await?;
        let location = match &backup {
            Some(backup) => {
                inner
                    .context
                    .location(&backup.spec.storage_location.clone().unwrap_or_default())
                    .await?
            }
            None => None,
        };
        let Some(location) = location.filter(|l| {
            l.spec.access_mode
                != Some(crate::api::velero::BackupStorageLocationAccessMode::ReadOnly)
        }) else {
            return inner
                .context
                .patch(
                    &api,
                    &name,
                    json!({"status": {"phase": "PartiallyFailed", "errors": errors + 1}}),
                )
                .await;
        };
        let store = inner.context.store_for(&location).await?;
        let key = store.layout().restore_item_operations_key(&name);
        let timeout = restore
            .spec
            .item_operation_timeout
            .as_ref()
            .and_then(|d| d.parse().ok());
        let (operations, progress) = self.load_operations(&store, &key, now, timeout).await?;
        let recorded = (
            status.restore_item_operations_completed.unwrap_or_default(),
            status.restore_item_operations_failed.unwrap_or_default(),
        );
        let patch =
            super::operations::round_status("restore", &current, recorded, errors, &progress);
        if progress.changed {
            store.put(&key, Self::operations_bytes(&operations)).await?;
        }
        if progress.in_progress {
            if !patch.is_empty() {
                inner
                    .context
                    .patch(&api, &name, json!({"status": Value::Object(patch)}))
                    .await?;
            }
            return Ok(());
        }
        let finalizing = patch
            .get("phase")
            .and_then(Value::as_str)
            .unwrap_or("FinalizingPartiallyFailed")
            .to_owned();
        inner
            .context
            .patch(&api, &name, json!({"status": Value::Object(patch)}))
            .await?;
        // The restore finalizer controller: the terminal phase.
        let terminal = super::operations::phase_after_finalizing(&finalizing);
        inner.context
            .patch(
                &api,
                &name,
                json!({"status": {"phase": terminal, "completionTimestamp": timestamp(inner.context.clock.now())}}),
            )
            .await
    }

    async fn start_restores(&self) -> Result<(), SimError> {
        let inner = &self.inner;
        if inner
            .running_restore
            .lock()
            .map(|r| r.is_some())
            .unwrap_or(true)
        {
            return Ok(());
        }
        let mut restores = inner
            .context
            .restores()
            .list(&ListParams::default())
            .await?
            .items;
        restores.sort_by_key(|r| {
            (
                as_json(r)
                    .pointer("/metadata/creationTimestamp")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                name_of(&r.metadata),
            )
        });
        let next = restores.into_iter().find(|r| match restore_phase(r) {
            None | Some(RestorePhase::New) => true,
            Some(RestorePhase::Other(p)) => p.is_empty(),
            _ => false,
        });
        let Some(restore) = next else { return Ok(()) };
        let name = name_of(&restore.metadata);
        if let Ok(mut running) = inner.running_restore.lock() {
            *running = Some(name.clone());
        }
        let inner = self.inner.clone();
        tokio::spawn(async move {
            if let Err(e) = restore_run::run(&inner.context, &name).await {
                tracing::warn!(restore = %name, error = %e, "restore failed in the simulator");
                let _ = inner
                    .context
                    .patch(
                        &inner.context.restores(),
                        &name,
                        json!({"status": {"phase": "Failed", "failureReason": e.to_string(),
                        "completionTimestamp": timestamp(inner.context.clock.now())}}),
                    )
                    .await;
            }
            inner.finish_restore();
        });
        Ok(())
    }

    /// Velero's backup deletion controller (`pkg/controller/backup_deletion_controller.go`)
    /// over every request: a Processed or InProgress request is only deleted once it is a day
    /// old (`deleteBackupRequestMaxAge`); any other is processed.
    async fn process_delete_requests(&self) -> Result<(), SimError> {
        let inner = &self.inner;
        let now = inner.context.clock.now();
        for request in inner
            .context
            .delete_requests()
            .list(&ListParams::default())
            .await?
            .items
        {
            let json_request = as_json(&request);
            let phase = json_request
                .pointer("/status/phase")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if phase == "Processed" || phase == "InProgress" {
                let created = parse_time(json_request.pointer("/metadata/creationTimestamp"));
                if created.is_some_and(|c| now - c >= chrono::Duration::hours(24)) {
                    let name = name_of(&request.metadata);
                    match inner
                        .context
                        .delete_requests()
                        .delete(&name, &DeleteParams::default())
                        .await
                    {
                        Ok(_) | Err(kube::Error::Api(_)) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                continue;
            }
            let work = self.process_delete_request(&request);
            inner
                .isolated(
                    step::DELETE_REQUESTS,
                    "DeleteBackupRequest",
                    &request.metadata,
                    work,
                )
                .await;
        }
        Ok(())
    }

    /// Patches a request's status (DeleteBackupRequest is the one kind here whose CRD has a
    /// status subresource).
    async fn patch_request_status(&self, name: &str, status: Value) -> Result<(), SimError> {
        match self
            .inner
            .context
            .delete_requests()
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status })),
            )
            .await
        {
            Ok(_) | Err(kube::Error::Api(_)) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Ends a request as Processed with one error (`patchDeleteBackupRequestWithError`).
    async fn refuse_request(&self, name: &str, error: String) -> Result<(), SimError> {
        self.patch_request_status(name, json!({"phase": "Processed", "errors": [error]}))
            .await
    }

    /// One request, step by step as `Reconcile` of the deletion controller.
    async fn process_delete_request(&self, request: &DeleteBackupRequest) -> Result<(), SimError> {
        let inner = &self.inner;
        let name = name_of(&request.metadata);
        let backup_name = request.spec.backup_name.clone();
        if backup_name.is_empty() {
            return self
                .refuse_request(&name, "spec.backupName is required".into())
                .await;
        }
        // Only one request at a time per backup: the others are removed.
        let selector = format!("{BACKUP_NAME}={}", valid_label_value(&backup_name));
        for other in inner
            .context
            .delete_requests()
            .list(&ListParams::default().labels(&selector))
            .await?
            .items
        {
            let other_name = name_of(&other.metadata);
            if other_name == name {
                continue;
            }
            match inner
                .context
                .delete_requests()
                .delete(&other_name, &DeleteParams::default())
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(e.into()),
            }
        }
        let backup = inner.context.backups().get_opt(&backup_name).await?;
        // The backup tracker holds backups from the moment they run until they end.
        let running = inner
            .running_backups
            .lock()
            .map(|r| r.contains(&backup_name))
            .unwrap_or(false);
        let in_progress = running
            || backup.as_ref().is_some_and(|b| {
                matches!(
                    backup_phase(b),
                    Some(
                        BackupPhase::InProgress
                            | BackupPhase::WaitingForPluginOperations
                            | BackupPhase::WaitingForPluginOperationsPartiallyFailed
                            | BackupPhase::Finalizing
                            | BackupPhase::FinalizingPartiallyFailed
                    )
                )
            });
        if in_progress {
            return self
                .refuse_request(&name, "backup is still in progress".into())
                .await;
        }
        let Some(backup) = backup else {
            return self.refuse_request(&name, "backup not found".into()).await;
        };
        // The location the backup's spec names (empty for a backup Velero never prepared).
        let location_name = backup.spec.storage_location.clone().unwrap_or_default();
        let Some(location) = inner.context.location(&location_name).await? else {
            return self
                .refuse_request(
                    &name,
                    format!("backup storage location {location_name} not found"),
                )
                .await;
        };
        if location.spec.access_mode
            == Some(crate::api::velero::BackupStorageLocationAccessMode::ReadOnly)
        {
            return self
                .refuse_request(
                    &name,
                    format!(
                        "cannot delete backup because backup storage location {location_name} is currently in read-only mode"
                    ),
                )
                .await;
        }
        if !super::validation::bsl_is_available(&location) {
            return self
                .refuse_request(
                    &name,
                    format!(
                        "cannot delete backup because backup storage location {location_name} is currently in Unavailable state"
                    ),
                )
                .await;
        }
        // InProgress, labelled with its backup's name and UID.
        let labels = request.metadata.labels.clone().unwrap_or_default();
        let mut add = serde_json::Map::new();
        if labels.get(BACKUP_NAME).is_none_or(String::is_empty) {
            add.insert(BACKUP_NAME.into(), json!(valid_label_value(&backup_name)));
        }
        let uid = backup.metadata.uid.clone().unwrap_or_default();
        if labels.get(BACKUP_UID).is_none_or(String::is_empty) {
            add.insert(BACKUP_UID.into(), json!(uid));
        }
        if !add.is_empty() {
            inner
                .context
                .patch(
                    &inner.context.delete_requests(),
                    &name,
                    json!({"metadata": {"labels": add}}),
                )
                .await?;
        }
        self.patch_request_status(&name, json!({"phase": "InProgress"}))
            .await?;
        if let Err(e) = inner
            .context
            .patch(
                &inner.context.backups(),
                &backup_name,
                json!({"status": {"phase": "Deleting"}}),
            )
            .await
        {
            return self
                .refuse_request(
                    &name,
                    format!("error setting backup phase to deleting: {e}"),
                )
                .await;
        }
        let store = match inner.context.store_for(&location).await {
            Ok(store) => store,
            Err(e) => {
                return self
                    .refuse_request(&name, format!("error getting the backup store: {e}"))
                    .await;
            }
        };
        let errors = delete_backup(inner, &backup_name, &store).await?;
        self.patch_request_status(
            &name,
            json!({"phase": "Processed", "errors": if errors.is_empty() { Value::Null } else { json!(errors) }}),
        )
        .await?;
        if errors.is_empty() {
            // Everything deleted: every request for this backup goes too, this one included.
            let selector = format!(
                "{BACKUP_NAME}={},{BACKUP_UID}={uid}",
                valid_label_value(&backup_name)
            );
            if let Err(e) = inner
                .context
                .delete_requests()
                .delete_collection(
                    &DeleteParams::default(),
                    &ListParams::default().labels(&selector),
                )
                .await
            {
                tracing::warn!(backup = %backup_name, error = %e,
                    "error deleting all associated DeleteBackupRequests after successfully deleting the backup");
            }
        }
        Ok(())
    }

    async fn process_download_requests(&self) -> Result<(), SimError> {
        let inner = &self.inner;
        let now = inner.context.clock.now();
        for request in inner
            .context
            .download_requests()
            .list(&ListParams::default())
            .await?
            .items
        {
            let work = self.process_download_request(&request, now);
            inner
                .isolated(
                    step::DOWNLOAD_REQUESTS,
                    "DownloadRequest",
                    &request.metadata,
                    work,
                )
                .await;
        }
        Ok(())
    }

    async fn process_download_request(
        &self,
        request: &DownloadRequest,
        now: DateTime<Utc>,
    ) -> Result<(), SimError> {
        let inner = &self.inner;
        let name = name_of(&request.metadata);
        let json_request = as_json(request);
        let phase = json_request
            .pointer("/status/phase")
            .and_then(Value::as_str)
            .unwrap_or("");
        if phase == "Processed" {
            if parse_time(json_request.pointer("/status/expiration")).is_some_and(|e| e < now) {
                // Velero deletes expired download requests.
                match inner
                    .context
                    .download_requests()
                    .delete(&name, &DeleteParams::default())
                    .await
                {
                    Ok(_) | Err(kube::Error::Api(_)) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            return Ok(());
        }
        let kind = request.spec.target.kind.clone();
        let target = request.spec.target.name.clone();
        let Some(location_name) = download_location(inner, &kind, &target).await? else {
            return Ok(());
        };
        let Some(location) = inner.context.location(&location_name).await? else {
            return Ok(());
        };
        let store = inner.context.store_for(&location).await?;
        let Ok(key) = store.layout().download_target_key(&kind, &target) else {
            return Ok(());
        };
        if store.get(&key).await?.is_none() {
            tracing::debug!(%name, %key, "download target not in storage yet");
            return Ok(());
        }
        let url = store
            .download_url(
                &key,
                inner.context.options.download_ttl,
                now,
                &inner.context.options.download_base,
                &inner.signer,
            )
            .await?;
        let expiration = now
            + chrono::Duration::from_std(inner.context.options.download_ttl).unwrap_or_default();
        inner.context
            .patch(
                &inner.context.download_requests(),
                &name,
                json!({"status": {"phase": "Processed", "downloadURL": url.as_str(), "expiration": timestamp(expiration)}}),
            )
            .await
    }
}

/// `getNextRunTime` of Velero's schedule controller: the next run is the first cron time
/// after the last backup, or after the schedule's creation when it never ran (so a new
/// schedule first runs at its next cron time, not at once), or after the last skipped run
/// when that is later; the schedule is due once `now` is past it.
pub fn schedule_due(
    cron: &croner::Cron,
    last_backup: Option<DateTime<Utc>>,
    last_skipped: Option<DateTime<Utc>>,
    created: DateTime<Utc>,
    now: DateTime<Utc>,
) -> bool {
    let mut since = last_backup.unwrap_or(created);
    if let Some(skipped) = last_skipped.filter(|s| *s > since) {
        since = skipped;
    }
    cron.find_next_occurrence(&since, false)
        .is_ok_and(|next| now > next)
}

/// `parseCronSchedule`: the cron, or Velero's validation errors.
pub fn parse_cron_schedule(expression: &str) -> Result<croner::Cron, Vec<String>> {
    if expression.is_empty() {
        return Err(vec![
            "Schedule must be a non-empty valid Cron expression".to_string(),
        ]);
    }
    expression
        .parse::<croner::Cron>()
        .map_err(|e| vec![format!("invalid schedule: {e}")])
}

/// The Backup a schedule submits (`BackupBuilder.FromSchedule`): the template's spec; the
/// template's labels when it has a labels map (even an empty one), else the schedule's own
/// labels, plus `velero.io/schedule-name`; the schedule's annotations; an owner reference to
/// the schedule when `useOwnerReferencesInBackup` is true.
pub fn backup_from_schedule(schedule: &Schedule, backup_name: &str, namespace: &str) -> Backup {
    let name = name_of(&schedule.metadata);
    let mut labels: BTreeMap<String, String> = match schedule
        .spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
    {
        Some(template_labels) => template_labels,
        None => schedule.metadata.labels.clone().unwrap_or_default(),
    };
    labels.insert(SCHEDULE_NAME.to_string(), valid_label_value(&name));
    let mut backup = Backup::new(backup_name, schedule.spec.template.clone());
    backup.metadata.namespace = Some(namespace.to_string());
    backup.metadata.labels = Some(labels);
    backup.metadata.annotations = schedule.metadata.annotations.clone();
    if schedule.spec.use_owner_references_in_backup == Some(true) {
        backup.metadata.owner_references = Some(vec![
            k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                api_version: "velero.io/v1".into(),
                kind: "Schedule".into(),
                name,
                uid: schedule.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                ..Default::default()
            },
        ]);
    }
    backup
}

/// The storage location holding a download target: the backup's, or for restore targets the
/// location of the backup the restore read.
async fn download_location(
    inner: &Inner,
    kind: &crate::api::velero::DownloadTargetKind,
    target: &str,
) -> Result<Option<String>, SimError> {
    let backup_name = if kind.as_str().starts_with("Restore") {
        match inner.context.restores().get_opt(target).await? {
            Some(r) => r.spec.backup_name.clone().unwrap_or_default(),
            None => return Ok(None),
        }
    } else {
        target.to_string()
    };
    let Some(backup) = inner.context.backups().get_opt(&backup_name).await? else {
        return Ok(None);
    };
    Ok(backup
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(STORAGE_LOCATION).cloned())
        .or_else(|| backup.spec.storage_location.clone()))
}

/// Velero's `gc-failure` label and its values.
const GC_FAILURE_LABEL: &str = "velero.io/gc-failure";

/// One expired backup, as `gcReconciler.Reconcile` handles it.
async fn gc_backup(
    inner: &Inner,
    backup: &Backup,
    locations: &[BackupStorageLocation],
    requests: &[DeleteBackupRequest],
) -> Result<(), SimError> {
    let name = name_of(&backup.metadata);
    let labels = backup.metadata.labels.clone().unwrap_or_default();
    let location_name = backup.spec.storage_location.clone().unwrap_or_default();
    let set_failure = |value: Option<&str>| {
        let current = labels.get(GC_FAILURE_LABEL).map(String::as_str);
        let patch =
            (current != value).then(|| json!({"metadata": {"labels": {GC_FAILURE_LABEL: value}}}));
        async move {
            match patch {
                Some(patch) => {
                    inner
                        .context
                        .patch(&inner.context.backups(), &name, patch)
                        .await
                }
                None => Ok(()),
            }
        }
    };
    let Some(location) = locations
        .iter()
        .find(|l| l.metadata.name.as_deref() == Some(location_name.as_str()))
    else {
        return set_failure(Some("BSLNotFound")).await;
    };
    if !super::validation::bsl_is_available(location) {
        return Ok(());
    }
    if location.spec.access_mode
        == Some(crate::api::velero::BackupStorageLocationAccessMode::ReadOnly)
    {
        return set_failure(Some("BSLReadOnly")).await;
    }
    set_failure(None).await?;
    let uid = backup.metadata.uid.clone().unwrap_or_default();
    let name = name_of(&backup.metadata);
    let label = valid_label_value(&name);
    let pending = requests.iter().any(|r| {
        let l = r.metadata.labels.clone().unwrap_or_default();
        let phase = as_json(r)
            .pointer("/status/phase")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        l.get(BACKUP_NAME) == Some(&label)
            && l.get(crate::api::velero::labels::BACKUP_UID) == Some(&uid)
            && matches!(phase.as_str(), "" | "New" | "InProgress")
    });
    if pending {
        return Ok(());
    }
    create_delete_request(inner, &name, &uid).await
}

/// Creates a DeleteBackupRequest for `backup` (`NewDeleteBackupRequest`).
async fn create_delete_request(inner: &Inner, backup: &str, uid: &str) -> Result<(), SimError> {
    let mut labels = BTreeMap::new();
    labels.insert(BACKUP_NAME.to_string(), valid_label_value(backup));
    labels.insert(BACKUP_UID.to_string(), uid.to_string());
    let request: DeleteBackupRequest = serde_json::from_value(json!({
        "apiVersion": "velero.io/v1", "kind": "DeleteBackupRequest",
        "metadata": {"generateName": format!("{backup}-"), "namespace": inner.context.options.namespace, "labels": labels},
        "spec": {"backupName": backup}
    }))
    .map_err(|e| SimError::Other(e.to_string()))?;
    inner
        .context
        .delete_requests()
        .create(&PostParams::default(), &request)
        .await?;
    Ok(())
}

/// Deletes a prepared backup's data, its restores and the Backup itself as the deletion
/// controller does once the request is InProgress; returns the errors.
async fn delete_backup(
    inner: &Inner,
    backup_name: &str,
    store: &BackupStore,
) -> Result<Vec<String>, SimError> {
    let mut errors = Vec::new();
    if let Err(e) = store
        .delete_prefix(&store.layout().backup_dir(backup_name))
        .await
    {
        errors.push(format!("error deleting backup from backup storage: {e}"));
    }
    for r in inner
        .context
        .restores()
        .list(&ListParams::default())
        .await?
        .items
    {
        if r.spec.backup_name.as_deref() != Some(backup_name) {
            continue;
        }
        let rname = name_of(&r.metadata);
        if let Err(e) = store
            .delete_prefix(&store.layout().restore_dir(&rname))
            .await
        {
            errors.push(format!(
                "error deleting restore {rname} from backup storage: {e}"
            ));
            continue;
        }
        match inner
            .context
            .restores()
            .delete(&rname, &DeleteParams::default())
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => errors.push(format!(
                "error deleting restore {}/{rname}: {e}",
                inner.context.options.namespace
            )),
        }
    }
    if errors.is_empty() {
        match inner
            .context
            .backups()
            .delete(backup_name, &DeleteParams::default())
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => errors.push(format!(
                "error deleting backup {}/{backup_name}: {e}",
                inner.context.options.namespace
            )),
        }
    }
    Ok(errors)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn schedules_run_at_the_next_cron_time_never_at_creation() {
        // Cases of Velero's TestGetNextRunTime / TestSubmitBackupIfDue: a schedule that never
        // ran is due at the first cron time after its creation.
        let hourly: croner::Cron = "0 * * * *".parse().unwrap();
        let created = at("2026-01-01T10:20:00Z");
        assert!(!schedule_due(&hourly, None, None, created, created));
        assert!(!schedule_due(
            &hourly,
            None,
            None,
            created,
            at("2026-01-01T11:00:00Z")
        ));
        assert!(schedule_due(
            &hourly,
            None,
            None,
            created,
            at("2026-01-01T11:00:01Z")
        ));
        let last = at("2026-01-01T11:00:01Z");
        assert!(!schedule_due(
            &hourly,
            Some(last),
            None,
            created,
            at("2026-01-01T11:30:00Z")
        ));
        assert!(schedule_due(
            &hourly,
            Some(last),
            None,
            created,
            at("2026-01-01T12:00:01Z")
        ));
        // A later skip moves the next run past the skipped one.
        let skipped = at("2026-01-01T12:00:30Z");
        assert!(!schedule_due(
            &hourly,
            Some(last),
            Some(skipped),
            created,
            at("2026-01-01T12:10:00Z")
        ));
        assert!(schedule_due(
            &hourly,
            Some(last),
            Some(skipped),
            created,
            at("2026-01-01T13:00:01Z")
        ));
        // An older skip does not.
        assert!(schedule_due(
            &hourly,
            Some(last),
            Some(at("2026-01-01T09:00:00Z")),
            created,
            at("2026-01-01T12:00:01Z")
        ));
        assert_eq!(
            parse_cron_schedule("").unwrap_err(),
            vec!["Schedule must be a non-empty valid Cron expression"]
        );
        assert!(
            parse_cron_schedule("not a cron").unwrap_err()[0].starts_with("invalid schedule: ")
        );
    }

    fn schedule(
        labels: Option<Value>,
        template_labels: Option<Value>,
        annotations: Option<Value>,
    ) -> Schedule {
        let mut template = json!({"includedNamespaces": ["team-a"]});
        if let Some(l) = template_labels {
            template["metadata"] = json!({"labels": l});
        }
        let mut meta = json!({"name": "nightly", "namespace": "openshift-adp", "uid": "u-1"});
        if let Some(l) = labels {
            meta["labels"] = l;
        }
        if let Some(a) = annotations {
            meta["annotations"] = a;
        }
        serde_json::from_value(json!({"apiVersion": "velero.io/v1", "kind": "Schedule", "metadata": meta,
            "spec": {"schedule": "0 * * * *", "template": template, "useOwnerReferencesInBackup": true}}))
        .unwrap()
    }

    #[test]
    fn scheduled_backups_take_template_labels_or_schedule_labels_and_schedule_annotations() {
        // As pkg/builder/backup_builder.go FromSchedule builds it.
        let both = schedule(
            Some(json!({"from": "schedule"})),
            Some(json!({"from": "template"})),
            Some(json!({"note": "kept"})),
        );
        let b = backup_from_schedule(&both, "nightly-20260101000000", "openshift-adp");
        let labels = b.metadata.labels.clone().unwrap();
        assert_eq!(labels.get("from").map(String::as_str), Some("template"));
        assert_eq!(labels["velero.io/schedule-name"], "nightly");
        assert_eq!(b.metadata.annotations.unwrap()["note"], "kept");
        assert_eq!(b.metadata.owner_references.unwrap()[0].uid, "u-1");
        let schedule_only = schedule(Some(json!({"from": "schedule"})), None, None);
        let b = backup_from_schedule(&schedule_only, "n", "openshift-adp");
        assert_eq!(b.metadata.labels.unwrap()["from"], "schedule");
        assert!(b.metadata.annotations.is_none());
        // An empty template labels map still wins over the schedule's labels.
        let empty_template = schedule(Some(json!({"from": "schedule"})), Some(json!({})), None);
        let b = backup_from_schedule(&empty_template, "n", "openshift-adp");
        let labels = b.metadata.labels.unwrap();
        assert!(!labels.contains_key("from"), "{labels:?}");
        assert_eq!(labels.len(), 1);
    }
}
