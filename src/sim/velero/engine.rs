//! The simulator's control loop: watches the Velero namespace and, on every change or timer,
//! runs one pass over BackupStorageLocations (validation, backup sync), Schedules, the backup
//! queue, Restores, DeleteBackupRequests, DownloadRequests and expired backups. Long work
//! (a backup or a restore) runs in its own task and writes its own progress.
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, SecondsFormat, Utc};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::{Value, json};
use tokio::sync::Notify;

use super::clock::SimClock;
use super::options::SimulatorOptions;
use super::queue::{QueueEntry, plan_queue};
use super::signed_url::UrlSigner;
use super::storage::BackupStore;
use super::{backup_run, restore_run};
use crate::api::velero::labels::{BACKUP_NAME, SCHEDULE_NAME, STORAGE_LOCATION};
use crate::api::velero::{
    Backup, BackupPhase, BackupStorageLocation, DeleteBackupRequest, DownloadRequest, Restore,
    RestorePhase, Schedule,
};
use crate::manifest::selection::backup_namespaces_for_queue;

/// Failures of one simulator pass; the loop logs them and tries again.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("object storage: {0}")]
    Storage(#[from] super::storage::StorageError),
    #[error("{0}")]
    Other(String),
}

/// RFC 3339 as Kubernetes writes times.
pub fn timestamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Parses a time field of an object read as JSON.
pub fn parse_time(value: Option<&Value>) -> Option<DateTime<Utc>> {
    value
        .and_then(Value::as_str)
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
}

/// A typed object as JSON (status times, annotations).
pub fn as_json<T: serde::Serialize>(object: &T) -> Value {
    serde_json::to_value(object).unwrap_or(Value::Null)
}

fn name_of(meta: &kube::core::ObjectMeta) -> String {
    meta.name.clone().unwrap_or_default()
}

pub(super) struct Inner {
    pub(super) client: kube::Client,
    pub(super) options: SimulatorOptions,
    pub(super) clock: SimClock,
    pub(super) signer: Arc<UrlSigner>,
    running_backups: Mutex<HashSet<String>>,
    running_restore: Mutex<Option<String>>,
    last_validation: Mutex<HashMap<String, DateTime<Utc>>>,
    last_sync: Mutex<HashMap<String, DateTime<Utc>>>,
    wake: Notify,
}

impl Inner {
    pub(super) fn backups(&self) -> Api<Backup> {
        Api::namespaced(self.client.clone(), &self.options.namespace)
    }
    pub(super) fn restores(&self) -> Api<Restore> {
        Api::namespaced(self.client.clone(), &self.options.namespace)
    }
    pub(super) fn locations(&self) -> Api<BackupStorageLocation> {
        Api::namespaced(self.client.clone(), &self.options.namespace)
    }
    fn delete_requests(&self) -> Api<DeleteBackupRequest> {
        Api::namespaced(self.client.clone(), &self.options.namespace)
    }
    fn download_requests(&self) -> Api<DownloadRequest> {
        Api::namespaced(self.client.clone(), &self.options.namespace)
    }
    fn schedules(&self) -> Api<Schedule> {
        Api::namespaced(self.client.clone(), &self.options.namespace)
    }

    /// Merge-patches a Velero object (Backup, Restore, Schedule, BSL and DownloadRequest have
    /// no status subresource in Velero's CRDs: status is written through the object).
    pub(super) async fn patch<K>(
        &self,
        api: &Api<K>,
        name: &str,
        patch: Value,
    ) -> Result<(), SimError>
    where
        K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    {
        api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await?;
        Ok(())
    }

    /// The object store of a location, with its credential Secret resolved.
    pub(super) async fn store_for(
        &self,
        location: &BackupStorageLocation,
    ) -> Result<BackupStore, SimError> {
        let credentials = self.credentials(location).await?;
        Ok(BackupStore::for_location(
            &location.spec,
            credentials.as_deref(),
            &self.options.local_root,
        )?)
    }

    async fn credentials(
        &self,
        location: &BackupStorageLocation,
    ) -> Result<Option<String>, SimError> {
        // The BSL's own credential, else OADP's default `cloud-credentials` Secret (key `cloud`).
        let (name, key) = match &location.spec.credential {
            Some(selector) => (selector.name.clone(), selector.key.clone()),
            None => ("cloud-credentials".to_string(), "cloud".to_string()),
        };
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), &self.options.namespace);
        let Some(secret) = secrets.get_opt(&name).await? else {
            return Ok(None);
        };
        Ok(secret
            .data
            .and_then(|d| d.get(&key).cloned())
            .map(|bytes| String::from_utf8_lossy(&bytes.0).into_owned()))
    }

    /// The location named `name`, if it exists.
    pub(super) async fn location(
        &self,
        name: &str,
    ) -> Result<Option<BackupStorageLocation>, SimError> {
        Ok(self.locations().get_opt(name).await?)
    }

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
}

/// The Velero simulator.
#[derive(Clone)]
pub struct VeleroSimulator {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for VeleroSimulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VeleroSimulator")
            .field("namespace", &self.inner.options.namespace)
            .finish_non_exhaustive()
    }
}

fn backup_phase(b: &Backup) -> Option<BackupPhase> {
    b.status.as_ref().and_then(|s| s.phase.clone())
}

fn restore_phase(r: &Restore) -> Option<RestorePhase> {
    r.status.as_ref().and_then(|s| s.phase.clone())
}

impl VeleroSimulator {
    /// A simulator acting through `client` (which must be allowed to do what Velero does).
    pub fn new(client: kube::Client, options: SimulatorOptions, signer: Arc<UrlSigner>) -> Self {
        let clock = SimClock::scaled(options.time_scale);
        VeleroSimulator {
            inner: Arc::new(Inner {
                client,
                options,
                clock,
                signer,
                running_backups: Mutex::new(HashSet::new()),
                running_restore: Mutex::new(None),
                last_validation: Mutex::new(HashMap::new()),
                last_sync: Mutex::new(HashMap::new()),
                wake: Notify::new(),
            }),
        }
    }

    /// The simulator's clock.
    pub fn clock(&self) -> &SimClock {
        &self.inner.clock
    }

    /// The HTTP endpoint serving signed download URLs of local-provider buckets.
    pub fn download_router(&self) -> axum::Router {
        super::signed_url::download_router_with_clock(
            self.inner.signer.clone(),
            self.inner.options.local_root.clone(),
            self.inner.clock.as_fn(),
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
            if let Err(e) = self.reconcile_once().await {
                tracing::warn!(error = %e, "velero simulator pass failed");
            }
            let resync = self
                .inner
                .clock
                .real_duration(self.inner.options.resync_interval);
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
                let mut stream = watcher(api, watcher::Config::default()).boxed();
                while stream.next().await.is_some() {
                    inner.wake.notify_one();
                }
            });
        }
        let inner = &self.inner;
        watch(inner.clone(), inner.backups());
        watch(inner.clone(), inner.restores());
        watch(inner.clone(), inner.locations());
        watch(inner.clone(), inner.delete_requests());
        watch(inner.clone(), inner.download_requests());
        watch(inner.clone(), inner.schedules());
    }

    async fn fail_interrupted_work(&self) -> Result<(), SimError> {
        let inner = &self.inner;
        for b in inner.backups().list(&ListParams::default()).await?.items {
            if matches!(
                backup_phase(&b),
                Some(BackupPhase::InProgress | BackupPhase::Finalizing)
            ) {
                let reason = "found a backup with status \"InProgress\" during the server starting, mark it as \"Failed\"";
                inner
                    .patch(
                        &inner.backups(),
                        &name_of(&b.metadata),
                        json!({"status": {"phase": "Failed", "failureReason": reason,
                                          "completionTimestamp": timestamp(inner.clock.now())}}),
                    )
                    .await?;
            }
        }
        for r in inner.restores().list(&ListParams::default()).await?.items {
            if matches!(
                restore_phase(&r),
                Some(RestorePhase::InProgress | RestorePhase::Finalizing)
            ) {
                let reason = "found a restore with status \"InProgress\" during the server starting, mark it as \"Failed\"";
                inner
                    .patch(
                        &inner.restores(),
                        &name_of(&r.metadata),
                        json!({"status": {"phase": "Failed", "failureReason": reason,
                                          "completionTimestamp": timestamp(inner.clock.now())}}),
                    )
                    .await?;
            }
        }
        Ok(())
    }

    /// One pass over everything (tests call it directly).
    pub async fn reconcile_once(&self) -> Result<(), SimError> {
        self.validate_locations().await?;
        self.sync_backups().await?;
        self.run_schedules().await?;
        self.collect_expired().await?;
        self.advance_backup_queue().await?;
        self.start_restores().await?;
        self.process_delete_requests().await?;
        self.process_download_requests().await?;
        Ok(())
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
        let now = inner.clock.now();
        for location in inner.locations().list(&ListParams::default()).await?.items {
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
                    inner.options.bsl_validation_interval,
                )
            {
                continue;
            }
            if never_validated && let Ok(mut m) = inner.last_validation.lock() {
                m.insert(name.clone(), now);
            }
            let verdict = match inner.store_for(&location).await {
                Ok(store) => store.check_available().await.map_err(|e| e.to_string()),
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
                .patch(&inner.locations(), &name, json!({"status": status}))
                .await?;
        }
        Ok(())
    }

    async fn sync_backups(&self) -> Result<(), SimError> {
        let inner = &self.inner;
        let now = inner.clock.now();
        let backups = inner.backups().list(&ListParams::default()).await?.items;
        for location in inner.locations().list(&ListParams::default()).await?.items {
            let name = name_of(&location.metadata);
            if !super::validation::bsl_is_available(&location)
                || !Self::due(
                    &inner.last_sync,
                    &name,
                    now,
                    inner.options.backup_sync_interval,
                )
            {
                continue;
            }
            let store = inner.store_for(&location).await?;
            let keys = store.list("backups/").await?;
            let in_storage: BTreeSet<String> = store
                .layout()
                .backup_names(keys.iter().map(String::as_str))
                .into_iter()
                .collect();
            let in_cluster: BTreeSet<String> =
                backups.iter().map(|b| name_of(&b.metadata)).collect();
            for missing in in_storage.difference(&in_cluster) {
                let Some(bytes) = store
                    .get(&store.layout().backup_metadata_key(missing))
                    .await?
                else {
                    continue;
                };
                let Ok(mut stored) = serde_json::from_slice::<Value>(&bytes) else {
                    tracing::warn!(backup = %missing, "unreadable velero-backup.json; not synced");
                    continue;
                };
                let mut labels = stored
                    .pointer("/metadata/labels")
                    .cloned()
                    .unwrap_or(json!({}));
                labels[STORAGE_LOCATION] = json!(name);
                stored["metadata"] = json!({"name": missing, "namespace": inner.options.namespace, "labels": labels,
                    "annotations": stored.pointer("/metadata/annotations").cloned().unwrap_or(json!({}))});
                stored["spec"]["storageLocation"] = json!(name);
                let Ok(backup) = serde_json::from_value::<Backup>(stored.clone()) else {
                    continue;
                };
                match inner
                    .backups()
                    .create(&PostParams::default(), &backup)
                    .await
                {
                    Ok(_) => {
                        // Status is not taken on create by every server; write it through the object.
                        if let Some(status) = stored.get("status") {
                            inner
                                .patch(&inner.backups(), missing, json!({"status": status}))
                                .await?;
                        }
                    }
                    Err(kube::Error::Api(s)) if s.code == 409 => {}
                    Err(e) => return Err(e.into()),
                }
            }
            // Velero records each sync on the location (`status.lastSyncedTime`); NAC's
            // shared-pool purge reads it to know the bucket was looked at again.
            inner
                .patch(
                    &inner.locations(),
                    &name,
                    json!({"status": {"lastSyncedTime": timestamp(now)}}),
                )
                .await?;
            if location.spec.access_mode
                == Some(crate::api::velero::BackupStorageLocationAccessMode::ReadOnly)
            {
                continue;
            }
            for b in &backups {
                let bname = name_of(&b.metadata);
                let on_this_location = b
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(STORAGE_LOCATION))
                    == Some(&name);
                let finished = matches!(
                    backup_phase(b),
                    Some(BackupPhase::Completed | BackupPhase::PartiallyFailed)
                );
                if on_this_location && finished && !in_storage.contains(&bname) {
                    // Velero's sync deletes Completed backups whose data is gone from storage.
                    match inner
                        .backups()
                        .delete(&bname, &DeleteParams::default())
                        .await
                    {
                        Ok(_) | Err(kube::Error::Api(_)) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
            }
        }
        Ok(())
    }

    async fn run_schedules(&self) -> Result<(), SimError> {
        let inner = &self.inner;
        let now = inner.clock.now();
        let backups = inner.backups().list(&ListParams::default()).await?.items;
        for schedule in inner.schedules().list(&ListParams::default()).await?.items {
            let name = name_of(&schedule.metadata);
            let json_schedule = as_json(&schedule);
            let cron = match schedule.spec.schedule.parse::<croner::Cron>() {
                Ok(c) => c,
                Err(e) => {
                    let errors = vec![format!("invalid schedule: {e}")];
                    if json_schedule
                        .pointer("/status/phase")
                        .and_then(Value::as_str)
                        != Some("FailedValidation")
                    {
                        inner
                            .patch(&inner.schedules(), &name, json!({"status": {"phase": "FailedValidation", "validationErrors": errors}}))
                            .await?;
                    }
                    continue;
                }
            };
            if json_schedule
                .pointer("/status/phase")
                .and_then(Value::as_str)
                != Some("Enabled")
            {
                inner
                    .patch(
                        &inner.schedules(),
                        &name,
                        json!({"status": {"phase": "Enabled", "validationErrors": null}}),
                    )
                    .await?;
            }
            if schedule.spec.paused == Some(true) {
                continue;
            }
            let last = parse_time(json_schedule.pointer("/status/lastBackup"));
            let created =
                parse_time(json_schedule.pointer("/metadata/creationTimestamp")).unwrap_or(now);
            let due = schedule_due(
                &cron,
                last,
                created,
                now,
                schedule.spec.skip_immediately == Some(true),
            );
            if !due {
                continue;
            }
            let pending = backups.iter().any(|b| {
                b.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(SCHEDULE_NAME))
                    == Some(&name)
                    && !backup_phase(b).is_some_and(|p| p.is_terminal())
            });
            if pending {
                inner
                    .patch(
                        &inner.schedules(),
                        &name,
                        json!({"status": {"lastSkipped": timestamp(now)}}),
                    )
                    .await?;
                continue;
            }
            let backup_name = format!("{name}-{}", now.format("%Y%m%d%H%M%S"));
            let mut labels: BTreeMap<String, String> = schedule
                .spec
                .template
                .metadata
                .as_ref()
                .and_then(|m| m.labels.clone())
                .unwrap_or_default();
            labels.extend(schedule.metadata.labels.clone().unwrap_or_default());
            labels.insert(SCHEDULE_NAME.to_string(), name.clone());
            let mut backup = Backup::new(&backup_name, schedule.spec.template.clone());
            backup.metadata.namespace = Some(inner.options.namespace.clone());
            backup.metadata.labels = Some(labels);
            if schedule.spec.use_owner_references_in_backup == Some(true) {
                backup.metadata.owner_references = Some(vec![
                    k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                        api_version: "velero.io/v1".into(),
                        kind: "Schedule".into(),
                        name: name.clone(),
                        uid: schedule.metadata.uid.clone().unwrap_or_default(),
                        controller: Some(true),
                        ..Default::default()
                    },
                ]);
            }
            match inner
                .backups()
                .create(&PostParams::default(), &backup)
                .await
            {
                Ok(_) | Err(kube::Error::Api(_)) => {}
                Err(e) => return Err(e.into()),
            }
            inner
                .patch(
                    &inner.schedules(),
                    &name,
                    json!({"status": {"lastBackup": timestamp(now)}}),
                )
                .await?;
        }
        Ok(())
    }

    async fn collect_expired(&self) -> Result<(), SimError> {
        let inner = &self.inner;
        let now = inner.clock.now();
        let requests = inner
            .delete_requests()
            .list(&ListParams::default())
            .await?
            .items;
        for b in inner.backups().list(&ListParams::default()).await?.items {
            let json_backup = as_json(&b);
            let Some(expiration) = parse_time(json_backup.pointer("/status/expiration")) else {
                continue;
            };
            let terminal = backup_phase(&b).is_some_and(|p| p.is_terminal());
            if expiration > now || !terminal {
                continue;
            }
            let name = name_of(&b.metadata);
            let requested = requests.iter().any(|r| r.spec.backup_name == name);
            if !requested {
                create_delete_request(inner, &name, b.metadata.uid.as_deref()).await?;
            }
        }
        Ok(())
    }

    async fn advance_backup_queue(&self) -> Result<(), SimError> {
        let inner = &self.inner;
        let backups = inner.backups().list(&ListParams::default()).await?.items;
        let namespaces: Vec<String> = Api::<Namespace>::all(inner.client.clone())
            .list(&ListParams::default())
            .await?
            .items
            .iter()
            .map(|n| name_of(&n.metadata))
            .collect();
        let entries: Vec<QueueEntry> = backups
            .iter()
            .map(|b| QueueEntry {
                name: name_of(&b.metadata),
                creation_timestamp: parse_time(as_json(b).pointer("/metadata/creationTimestamp"))
                    .unwrap_or_else(Utc::now),
                phase: backup_phase(b),
                queue_position: b.status.as_ref().and_then(|s| s.queue_position),
                namespaces: backup_namespaces_for_queue(&b.spec, &namespaces)
                    .into_iter()
                    .collect(),
            })
            .collect();
        let plan = plan_queue(&entries, inner.options.concurrent_backups);
        let ready: BTreeSet<&String> = plan.ready_to_start.iter().collect();
        for name in &plan.ready_to_start {
            inner
                .patch(
                    &inner.backups(),
                    name,
                    json!({"status": {"phase": "ReadyToStart", "queuePosition": 0}}),
                )
                .await?;
        }
        for queued in &plan.queued {
            let entry = entries.iter().find(|e| e.name == queued.name);
            let unchanged = entry.is_some_and(|e| {
                e.phase == Some(BackupPhase::Queued) && e.queue_position == Some(queued.position)
            });
            if !unchanged && !ready.contains(&queued.name) {
                inner
                    .patch(
                        &inner.backups(),
                        &queued.name,
                        json!({"status": {"phase": "Queued", "queuePosition": queued.position}}),
                    )
                    .await?;
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
                let result = backup_run::run(inner.clone(), &name).await;
                if let Err(e) = result {
                    tracing::warn!(backup = %name, error = %e, "backup failed in the simulator");
                    let _ = inner
                        .patch(
                            &inner.backups(),
                            &name,
                            json!({"status": {"phase": "Failed", "failureReason": e.to_string(),
                            "completionTimestamp": timestamp(inner.clock.now())}}),
                        )
                        .await;
                }
                inner.finish_backup(&name);
            });
        }
        Ok(())
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
        let mut restores = inner.restores().list(&ListParams::default()).await?.items;
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
            if let Err(e) = restore_run::run(inner.clone(), &name).await {
                tracing::warn!(restore = %name, error = %e, "restore failed in the simulator");
                let _ = inner
                    .patch(
                        &inner.restores(),
                        &name,
                        json!({"status": {"phase": "Failed", "failureReason": e.to_string(),
                        "completionTimestamp": timestamp(inner.clock.now())}}),
                    )
                    .await;
            }
            inner.finish_restore();
        });
        Ok(())
    }

    async fn process_delete_requests(&self) -> Result<(), SimError> {
        let inner = &self.inner;
        for request in inner
            .delete_requests()
            .list(&ListParams::default())
            .await?
            .items
        {
            let phase = as_json(&request)
                .pointer("/status/phase")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if !(phase.is_empty() || phase == "New") {
                continue;
            }
            let name = name_of(&request.metadata);
            // Velero labels the request with its backup and marks it InProgress before working.
            let backup_name = request.spec.backup_name.clone();
            let has_label = request
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(BACKUP_NAME))
                == Some(&backup_name);
            if !has_label {
                inner
                    .patch(
                        &inner.delete_requests(),
                        &name,
                        json!({"metadata": {"labels": {BACKUP_NAME: backup_name}}}),
                    )
                    .await?;
            }
            match inner
                .delete_requests()
                .patch_status(
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"status": {"phase": "InProgress"}})),
                )
                .await
            {
                Ok(_) | Err(kube::Error::Api(_)) => {}
                Err(e) => return Err(e.into()),
            }
            let outcome = delete_backup(inner, &request.spec.backup_name).await;
            let errors: Vec<String> = match outcome {
                Ok(errs) => errs,
                Err(e) => vec![e.to_string()],
            };
            let status = json!({"status": {"phase": "Processed", "errors": if errors.is_empty() { Value::Null } else { json!(errors) }}});
            // DeleteBackupRequest is the one kind here whose CRD has a status subresource.
            match inner
                .delete_requests()
                .patch_status(&name, &PatchParams::default(), &Patch::Merge(status))
                .await
            {
                Ok(_) | Err(kube::Error::Api(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    async fn process_download_requests(&self) -> Result<(), SimError> {
        let inner = &self.inner;
        let now = inner.clock.now();
        for request in inner
            .download_requests()
            .list(&ListParams::default())
            .await?
            .items
        {
            let name = name_of(&request.metadata);
            let json_request = as_json(&request);
            let phase = json_request
                .pointer("/status/phase")
                .and_then(Value::as_str)
                .unwrap_or("");
            if phase == "Processed" {
                if parse_time(json_request.pointer("/status/expiration")).is_some_and(|e| e < now) {
                    // Velero deletes expired download requests.
                    match inner
                        .download_requests()
                        .delete(&name, &DeleteParams::default())
                        .await
                    {
                        Ok(_) | Err(kube::Error::Api(_)) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                continue;
            }
            let kind = request.spec.target.kind.clone();
            let target = request.spec.target.name.clone();
            let location_name = match download_location(inner, &kind, &target).await? {
                Some(l) => l,
                None => continue,
            };
            let Some(location) = inner.location(&location_name).await? else {
                continue;
            };
            let store = inner.store_for(&location).await?;
            let Ok(key) = store.layout().download_target_key(&kind, &target) else {
                continue;
            };
            if store.get(&key).await?.is_none() {
                tracing::debug!(%name, %key, "download target not in storage yet");
                continue;
            }
            let url = store
                .download_url(
                    &key,
                    inner.options.download_ttl,
                    now,
                    &inner.options.download_base,
                    &inner.signer,
                )
                .await?;
            let expiration =
                now + chrono::Duration::from_std(inner.options.download_ttl).unwrap_or_default();
            inner
                .patch(
                    &inner.download_requests(),
                    &name,
                    json!({"status": {"phase": "Processed", "downloadURL": url.as_str(), "expiration": timestamp(expiration)}}),
                )
                .await?;
        }
        Ok(())
    }
}

/// Whether a schedule should run now: never run yet → at once (unless asked to skip the
/// immediate run, then at the first occurrence after creation); otherwise at the first
/// occurrence after the last run.
pub fn schedule_due(
    cron: &croner::Cron,
    last_run: Option<DateTime<Utc>>,
    created: DateTime<Utc>,
    now: DateTime<Utc>,
    skip_immediately: bool,
) -> bool {
    match last_run {
        None if !skip_immediately => true,
        None => cron
            .find_next_occurrence(&created, false)
            .is_ok_and(|next| next <= now),
        Some(last) => cron
            .find_next_occurrence(&last, false)
            .is_ok_and(|next| next <= now),
    }
}

/// The storage location holding a download target: the backup's, or for restore targets the
/// location of the backup the restore read.
async fn download_location(
    inner: &Inner,
    kind: &crate::api::velero::DownloadTargetKind,
    target: &str,
) -> Result<Option<String>, SimError> {
    let backup_name = if kind.as_str().starts_with("Restore") {
        match inner.restores().get_opt(target).await? {
            Some(r) => r.spec.backup_name.clone().unwrap_or_default(),
            None => return Ok(None),
        }
    } else {
        target.to_string()
    };
    let Some(backup) = inner.backups().get_opt(&backup_name).await? else {
        return Ok(None);
    };
    Ok(backup
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(STORAGE_LOCATION).cloned())
        .or_else(|| backup.spec.storage_location.clone()))
}

/// Creates a DeleteBackupRequest for `backup` (TTL expiry).
async fn create_delete_request(
    inner: &Inner,
    backup: &str,
    uid: Option<&str>,
) -> Result<(), SimError> {
    let mut labels = BTreeMap::new();
    labels.insert(BACKUP_NAME.to_string(), backup.to_string());
    if let Some(uid) = uid {
        labels.insert(
            crate::api::velero::labels::BACKUP_UID.to_string(),
            uid.to_string(),
        );
    }
    let request: DeleteBackupRequest = serde_json::from_value(json!({
        "apiVersion": "velero.io/v1", "kind": "DeleteBackupRequest",
        "metadata": {"generateName": format!("{backup}-"), "namespace": inner.options.namespace, "labels": labels},
        "spec": {"backupName": backup}
    }))
    .map_err(|e| SimError::Other(e.to_string()))?;
    inner
        .delete_requests()
        .create(&PostParams::default(), &request)
        .await?;
    Ok(())
}

/// Deletes a backup as Velero's DeleteBackupRequest controller does; returns the errors.
async fn delete_backup(inner: &Inner, backup_name: &str) -> Result<Vec<String>, SimError> {
    let Some(backup) = inner.backups().get_opt(backup_name).await? else {
        return Ok(vec![format!("backup {backup_name:?} not found")]);
    };
    let phase = backup_phase(&backup);
    if !phase
        .as_ref()
        .is_some_and(|p| p.is_terminal() || *p == BackupPhase::Deleting)
    {
        return Ok(vec!["backup is still in progress".to_string()]);
    }
    let location_name = backup
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(STORAGE_LOCATION).cloned())
        .or_else(|| backup.spec.storage_location.clone())
        .unwrap_or_default();
    let location = inner.location(&location_name).await?;
    if let Some(l) = &location
        && l.spec.access_mode == Some(crate::api::velero::BackupStorageLocationAccessMode::ReadOnly)
    {
        return Ok(vec![format!(
            "cannot delete backup because backup storage location {location_name} is currently in read-only mode"
        )]);
    }
    inner
        .patch(
            &inner.backups(),
            backup_name,
            json!({"status": {"phase": "Deleting"}}),
        )
        .await?;
    let mut errors = Vec::new();
    let store = match &location {
        Some(l) => Some(inner.store_for(l).await?),
        None => None,
    };
    if let Some(store) = &store
        && let Err(e) = store
            .delete_prefix(&store.layout().backup_dir(backup_name))
            .await
    {
        errors.push(format!("error deleting backup from backup storage: {e}"));
    }
    for r in inner.restores().list(&ListParams::default()).await?.items {
        if r.spec.backup_name.as_deref() != Some(backup_name) {
            continue;
        }
        let rname = name_of(&r.metadata);
        if let Some(store) = &store
            && let Err(e) = store
                .delete_prefix(&store.layout().restore_dir(&rname))
                .await
        {
            errors.push(format!(
                "error deleting restore {rname} from backup storage: {e}"
            ));
        }
        match inner
            .restores()
            .delete(&rname, &DeleteParams::default())
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => errors.push(format!("error deleting restore {rname}: {e}")),
        }
    }
    if errors.is_empty() {
        match inner
            .backups()
            .delete(backup_name, &DeleteParams::default())
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => errors.push(format!("error deleting backup: {e}")),
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
    fn schedules_run_at_once_then_on_each_occurrence() {
        let hourly: croner::Cron = "0 * * * *".parse().unwrap();
        let created = at("2026-01-01T10:20:00Z");
        assert!(schedule_due(&hourly, None, created, created, false));
        assert!(!schedule_due(
            &hourly,
            None,
            created,
            at("2026-01-01T10:59:59Z"),
            true
        ));
        assert!(schedule_due(
            &hourly,
            None,
            created,
            at("2026-01-01T11:00:00Z"),
            true
        ));
        let last = at("2026-01-01T11:00:00Z");
        assert!(!schedule_due(
            &hourly,
            Some(last),
            created,
            at("2026-01-01T11:30:00Z"),
            false
        ));
        assert!(schedule_due(
            &hourly,
            Some(last),
            created,
            at("2026-01-01T12:00:00Z"),
            false
        ));
    }
}
