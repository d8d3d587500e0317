//! The manifest builder (seed 002): runs beside the recorder on the leader and gives every
//! completed NAC backup its manifest, once, in the history store.
//!
//! What to build comes from one place, the store's [`HistoryStore::manifests_missing`]
//! (completed or partially failed backup operations without a manifest): it is read at start
//! (the backfill), every `rescan_interval`, and soon after the watch on NAC's Velero Backups
//! sees one complete — again with backoff while the recorder has not stored the completion
//! yet. Each build asks Velero for the backup's contents through a `DownloadRequest` in the
//! OADP namespace, downloads the tarball with [`crate::manifest::fetch`], builds the manifest
//! streaming from the compressed bytes (never the whole decompressed tarball), stores it and
//! deletes the request. At most `concurrency` builds run at once; a failed one is retried with
//! backoff. The download URL is a credential: it is never logged, nor put in an error.
//!
//! The decisions (which Velero backups want a manifest, what is due, backoff) are pure and
//! unit-tested here; the watch, the requests and the store are the edges.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::{HistoryError, ManifestKey, ManifestPut, ManifestSummary, ManifestTarget};
use super::{SharedHistory, StoredManifest, now_millis};
use crate::api::nonadmin::labels;
use crate::api::origin::{OriginKind, nac_labels, origin_of_kind};
use crate::api::velero::{
    Backup, BackupPhase, DownloadRequest, DownloadRequestPhase, DownloadRequestSpec,
    DownloadTarget, DownloadTargetKind,
};
use crate::manifest::build::{BuildError, build_manifest};
use crate::manifest::export::{ExportError, ManifestBackup, ManifestDocument, encode_compact};
use crate::manifest::fetch::{
    ArtifactFetcher, EndpointRules, FetchError, FetchScope, StorageEndpoints, fetch_scope,
};

/// Label on the DownloadRequests the builder makes (beside NAC's own two labels; they carry no
/// tenant origin, so the garbage collector leaves them to the builder and to Velero's expiry).
pub const COMPONENT_LABEL: &str = "app.kubernetes.io/component";
/// Its value.
pub const COMPONENT_VALUE: &str = "manifest-builder";

/// How the builder paces itself.
#[derive(Clone, Debug)]
pub struct ManifestBuilderConfig {
    /// Builds running at once (each holds one compressed tarball in memory).
    pub concurrency: usize,
    /// Most targets read per rescan.
    pub batch: u32,
    /// How often the store is rescanned for backups lacking a manifest.
    pub rescan_interval: Duration,
    /// First delay before rescanning for a backup seen completing that was not listed yet.
    pub await_min_backoff: Duration,
    /// How many rescans a backup seen completing waits through before it is left to the
    /// periodic rescan (it may simply have a manifest already).
    pub await_attempts: u32,
    /// First retry delay after a failed build.
    pub retry_min_backoff: Duration,
    /// Longest retry delay.
    pub retry_max_backoff: Duration,
    /// How long Velero may take to answer a DownloadRequest.
    pub download_timeout: Duration,
    /// How often the DownloadRequest is read while waiting for its URL.
    pub download_poll: Duration,
}

impl Default for ManifestBuilderConfig {
    fn default() -> Self {
        ManifestBuilderConfig {
            concurrency: 2,
            batch: 200,
            rescan_interval: Duration::from_secs(300),
            await_min_backoff: Duration::from_millis(500),
            await_attempts: 8,
            retry_min_backoff: Duration::from_secs(2),
            retry_max_backoff: Duration::from_secs(600),
            download_timeout: Duration::from_secs(120),
            download_poll: Duration::from_millis(250),
        }
    }
}

/// What the builder has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ManifestBuilderStats {
    /// Manifests stored.
    pub built: u64,
    /// Builds that found a manifest already stored.
    pub already_stored: u64,
    /// Builds that failed (each retry counts).
    pub failed: u64,
    /// Rescans of the store.
    pub rescans: u64,
}

#[derive(Debug, Default)]
struct Counters {
    built: AtomicU64,
    already_stored: AtomicU64,
    failed: AtomicU64,
    rescans: AtomicU64,
}

/// A cloneable view of a running builder's statistics.
#[derive(Clone, Debug)]
pub struct ManifestBuilderHandle {
    counters: Arc<Counters>,
}

impl ManifestBuilderHandle {
    /// The statistics now.
    pub fn stats(&self) -> ManifestBuilderStats {
        let c = &self.counters;
        ManifestBuilderStats {
            built: c.built.load(Ordering::Relaxed),
            already_stored: c.already_stored.load(Ordering::Relaxed),
            failed: c.failed.load(Ordering::Relaxed),
            rescans: c.rescans.load(Ordering::Relaxed),
        }
    }
}

/// Why one build failed. No variant carries a download URL.
#[derive(Debug, thiserror::Error)]
pub enum ManifestBuildError {
    /// The Velero Backup is gone from the cluster (its contents cannot be asked for).
    #[error("the Velero backup no longer exists")]
    BackupGone,
    /// The Velero Backup does not belong to the operation's namespace, or has not completed.
    #[error("the Velero backup does not match the operation: {0}")]
    Mismatch(&'static str),
    /// Velero did not produce a download URL in time.
    #[error("Velero did not answer the download request in time")]
    DownloadTimeout,
    /// Velero processed the request without a URL (the tarball is not in object storage).
    #[error("Velero has no contents for this backup")]
    NoContents,
    /// The API server refused or failed a request.
    #[error("API request failed: {0}")]
    Kube(#[from] kube::Error),
    /// Downloading the tarball failed.
    #[error("downloading the backup contents failed: {0}")]
    Fetch(#[from] FetchError),
    /// The tarball could not be read.
    #[error("building the manifest failed: {0}")]
    Build(#[from] BuildError),
    /// The manifest could not be encoded.
    #[error("encoding the manifest failed: {0}")]
    Encode(#[from] ExportError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] HistoryError),
    /// The blocking build task died.
    #[error("the build task failed: {0}")]
    Task(String),
}

impl ManifestBuildError {
    /// Whether trying again soon may succeed (as opposed to contents unusable as they are).
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Kube(_) | Self::Store(_) | Self::Task(_) | Self::DownloadTimeout => true,
            Self::Fetch(error) => error.is_transient(),
            Self::BackupGone
            | Self::Mismatch(_)
            | Self::NoContents
            | Self::Build(_)
            | Self::Encode(_) => false,
        }
    }
}

/// Builds manifests; see the module documentation.
pub struct ManifestBuilder {
    client: kube::Client,
    oadp_namespace: String,
    store: SharedHistory,
    fetcher: Arc<dyn ArtifactFetcher>,
    endpoint_rules: Arc<dyn EndpointRules>,
    config: ManifestBuilderConfig,
    counters: Arc<Counters>,
}

impl ManifestBuilder {
    /// A builder reading the cluster and making DownloadRequests as `client` in
    /// `oadp_namespace`, downloading with `fetcher` and storing in `store`.
    pub fn new(
        client: kube::Client,
        oadp_namespace: &str,
        store: SharedHistory,
        fetcher: Arc<dyn ArtifactFetcher>,
        config: ManifestBuilderConfig,
    ) -> Self {
        ManifestBuilder {
            client,
            oadp_namespace: oadp_namespace.to_string(),
            store,
            fetcher,
            endpoint_rules: Arc::new(StorageEndpoints::default()),
            config,
            counters: Arc::default(),
        }
    }

    /// The same builder deciding tenant locations' download scopes with `rules` (the live
    /// admin policy) instead of the default storage-endpoint rule.
    pub fn with_endpoint_rules(mut self, rules: Arc<dyn EndpointRules>) -> Self {
        self.endpoint_rules = rules;
        self
    }

    /// The scope of `velero_name`'s download: its storage location's (issue 17).
    async fn fetch_scope(&self, velero_name: &str) -> Result<FetchScope, ManifestBuildError> {
        let rules = self.endpoint_rules.storage_endpoints();
        let Some(backup) = self.backups().get_opt(velero_name).await? else {
            return Ok(fetch_scope(None, &rules));
        };
        let Some(location) = backup.spec.storage_location.filter(|name| !name.is_empty()) else {
            // Velero's default location: the administrator's.
            return Ok(FetchScope::Trusted);
        };
        let locations: Api<crate::api::velero::BackupStorageLocation> =
            Api::namespaced(self.client.clone(), &self.oadp_namespace);
        let location = locations.get_opt(&location).await?;
        Ok(fetch_scope(location.as_ref(), &rules))
    }

    /// A handle on the statistics, usable after `run` took the builder.
    pub fn handle(&self) -> ManifestBuilderHandle {
        ManifestBuilderHandle {
            counters: self.counters.clone(),
        }
    }

    /// Watches, rescans and builds until the future is dropped (running builds are aborted
    /// with it; their DownloadRequests expire in Velero).
    pub async fn run(self) {
        let builder = Arc::new(self);
        let (seen, completions) = tokio::sync::mpsc::unbounded_channel();
        tokio::join!(
            Box::pin(watch_backups(builder.clone(), seen)),
            Box::pin(schedule(builder.clone(), completions)),
        );
    }

    fn backups(&self) -> Api<Backup> {
        Api::namespaced(self.client.clone(), &self.oadp_namespace)
    }

    fn download_requests(&self) -> Api<DownloadRequest> {
        Api::namespaced(self.client.clone(), &self.oadp_namespace)
    }

    /// Builds and stores the manifest of `target`.
    async fn build(&self, target: &ManifestTarget) -> Result<ManifestPut, ManifestBuildError> {
        let backup = self
            .backups()
            .get_opt(&target.velero_name)
            .await?
            .ok_or(ManifestBuildError::BackupGone)?;
        check_backup(&backup, target)?;
        let bytes = self.download_contents(&target.velero_name).await?;
        let key = ManifestKey {
            operation_id: target.operation_id.clone(),
            namespace: target.namespace.clone(),
            backup_name: target.backup_name.clone(),
            velero_name: target.velero_name.clone(),
            velero_uid: backup.metadata.uid.clone().unwrap_or_default(),
        };
        let about = ManifestBackup {
            namespace: target.namespace.clone(),
            name: target.backup_name.clone(),
            velero_backup: target.velero_name.clone(),
            completed_at: backup
                .status
                .as_ref()
                .and_then(|s| s.completion_timestamp.as_ref())
                .and_then(|t| chrono::DateTime::from_timestamp_millis(t.0.as_millisecond())),
        };
        // Parsing 100k items is CPU work: off the runtime's threads. Only the compressed
        // bytes are held; the tarball is decompressed and read entry by entry.
        let stored = tokio::task::spawn_blocking(move || -> Result<_, ManifestBuildError> {
            let manifest = build_manifest(bytes.as_slice())?;
            drop(bytes);
            let document = ManifestDocument::new(about, manifest);
            let encoded = encode_compact(&document)?;
            Ok(stored_manifest(key, &document, encoded, now_millis()))
        })
        .await
        .map_err(|e| ManifestBuildError::Task(e.to_string()))??;
        Ok(self.store.put_manifest(stored).await?)
    }

    /// The compressed tarball of `velero_name`, through a DownloadRequest that is deleted
    /// afterwards whatever happened.
    async fn download_contents(&self, velero_name: &str) -> Result<Vec<u8>, ManifestBuildError> {
        let requests = self.download_requests();
        let created = requests
            .create(&PostParams::default(), &download_request(velero_name))
            .await?;
        let name = created.metadata.name.clone().unwrap_or_default();
        let outcome = match self.await_url(&requests, &name).await {
            Ok(url) => match self.fetch_scope(velero_name).await {
                Ok(scope) => self.fetcher.fetch(&url, &scope).await.map_err(Into::into),
                Err(error) => Err(error),
            },
            Err(error) => Err(error),
        };
        match requests.delete(&name, &DeleteParams::default()).await {
            Ok(_) | Err(kube::Error::Api(_)) => {}
            Err(error) => {
                tracing::debug!(error = %error, request = %name, "could not delete a download request");
            }
        }
        outcome
    }

    async fn await_url(
        &self,
        requests: &Api<DownloadRequest>,
        name: &str,
    ) -> Result<String, ManifestBuildError> {
        let deadline = Instant::now() + self.config.download_timeout;
        loop {
            let current = requests.get_opt(name).await?;
            match download_state(current.as_ref()) {
                DownloadState::Ready(url) => return Ok(url),
                DownloadState::NoContents => return Err(ManifestBuildError::NoContents),
                DownloadState::Pending => {}
            }
            if Instant::now() >= deadline {
                return Err(ManifestBuildError::DownloadTimeout);
            }
            tokio::time::sleep(self.config.download_poll).await;
        }
    }
}

/// The record stored for a built document.
fn stored_manifest(
    key: ManifestKey,
    document: &ManifestDocument,
    encoded: Vec<u8>,
    built_at: i64,
) -> StoredManifest {
    StoredManifest {
        summary: ManifestSummary {
            key,
            item_count: i64::try_from(document.items.len()).unwrap_or(i64::MAX),
            counts_by_kind: document.counts.clone(),
            built_at,
            format_version: document.format_version,
            encoded_size: i64::try_from(encoded.len()).unwrap_or(i64::MAX),
        },
        encoded,
    }
}

// ---------------------------------------------------------------------------------------------
// Decisions (pure)

/// The name of a NAC-made Velero Backup that has finished with contents worth a manifest
/// (Completed or PartiallyFailed), else `None`.
pub fn completed_nac_backup(backup: &Backup) -> Option<String> {
    let phase = backup.status.as_ref()?.phase.as_ref()?;
    if !matches!(phase, BackupPhase::Completed | BackupPhase::PartiallyFailed) {
        return None;
    }
    let meta = &backup.metadata;
    let labels = meta.labels.clone().unwrap_or_default();
    let annotations = meta.annotations.clone().unwrap_or_default();
    origin_of_kind(OriginKind::NonAdminBackup, &labels, &annotations)?;
    meta.name.clone()
}

/// Whether `backup` is the one `target` names: finished with contents, and made for the
/// target's namespace (the origin annotation decides; a backup naming another namespace never
/// gives its contents to this operation).
pub fn check_backup(backup: &Backup, target: &ManifestTarget) -> Result<(), ManifestBuildError> {
    if completed_nac_backup(backup).as_deref() != Some(target.velero_name.as_str()) {
        return Err(ManifestBuildError::Mismatch("not a completed NAC backup"));
    }
    let meta = &backup.metadata;
    let labels = meta.labels.clone().unwrap_or_default();
    let annotations = meta.annotations.clone().unwrap_or_default();
    match origin_of_kind(OriginKind::NonAdminBackup, &labels, &annotations) {
        Some(origin) if origin.namespace == target.namespace => Ok(()),
        _ => Err(ManifestBuildError::Mismatch("made for another namespace")),
    }
}

/// The DownloadRequest asking Velero for `velero_name`'s tarball.
pub fn download_request(velero_name: &str) -> DownloadRequest {
    let prefix: String = velero_name.chars().take(40).collect();
    let mut labels = nac_labels();
    labels.insert(COMPONENT_LABEL.to_string(), COMPONENT_VALUE.to_string());
    labels.insert(
        crate::api::velero::labels::BACKUP_NAME.to_string(),
        crate::api::velero::labels::valid_label_value(velero_name),
    );
    DownloadRequest {
        metadata: ObjectMeta {
            generate_name: Some(format!("manifest-{}-", prefix.trim_end_matches(['.', '-']))),
            labels: Some(labels),
            ..ObjectMeta::default()
        },
        spec: DownloadRequestSpec {
            target: DownloadTarget {
                kind: DownloadTargetKind::BackupContents,
                name: velero_name.to_string(),
                ..DownloadTarget::default()
            },
            ..DownloadRequestSpec::default()
        },
        status: None,
    }
}

/// Where a DownloadRequest stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DownloadState {
    /// Not processed yet (or gone, which Velero does once it expires: ask again later).
    Pending,
    /// The URL to fetch.
    Ready(String),
    /// Processed without a URL: the artifact does not exist.
    NoContents,
}

/// Reads a DownloadRequest's status.
pub fn download_state(request: Option<&DownloadRequest>) -> DownloadState {
    let Some(status) = request.and_then(|r| r.status.as_ref()) else {
        return DownloadState::Pending;
    };
    match (&status.phase, status.download_url.as_deref()) {
        (_, Some(url)) if !url.is_empty() => DownloadState::Ready(url.to_string()),
        (Some(DownloadRequestPhase::Processed), _) => DownloadState::NoContents,
        _ => DownloadState::Pending,
    }
}

/// `min · 2^(attempt-1)`, capped at `max` (attempt 0 waits `min` too).
pub fn backoff(attempt: u32, min: Duration, max: Duration) -> Duration {
    let factor = 2u32.saturating_pow(attempt.saturating_sub(1).min(20));
    min.saturating_mul(factor).min(max)
}

/// How much longer than the longest backoff an unusable target waits before another try.
pub const UNUSABLE_RETRY_FACTOR: u32 = 6;

/// How a build ended, for the [`Plan`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuildOutcome {
    /// The store has the manifest (stored now or before).
    Settled,
    /// A failure that may pass (API server, storage, network, database): retry with backoff.
    Failed,
    /// Nothing to build from as things are (the backup is gone, has no contents, is corrupt
    /// or too large, or the operation changed): retry only much later.
    Unusable,
}

/// A backup seen completing whose operation was not listed yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Awaiting {
    rescans: u32,
    due: Instant,
}

/// A failed target and when to try it again.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Retry {
    target: ManifestTarget,
    due: Instant,
}

/// The builder's bookkeeping: what is queued, running, waiting to be retried or to be listed,
/// and when to rescan. Pure: the scheduler feeds it events and times.
#[derive(Debug)]
pub struct Plan {
    config: ManifestBuilderConfig,
    queued: VecDeque<ManifestTarget>,
    /// Operation ids queued or running.
    busy: HashSet<String>,
    running: usize,
    retries: HashMap<String, Retry>,
    /// Failures in a row per operation id (until it succeeds).
    failures: HashMap<String, u32>,
    awaiting: HashMap<String, Awaiting>,
    /// Velero names built (or found stored) by this builder.
    done: HashSet<String>,
    next_rescan: Instant,
}

impl Plan {
    /// A plan whose first rescan (the backfill) is due at `now`.
    pub fn new(config: ManifestBuilderConfig, now: Instant) -> Self {
        Plan {
            config,
            queued: VecDeque::new(),
            busy: HashSet::new(),
            running: 0,
            retries: HashMap::new(),
            failures: HashMap::new(),
            awaiting: HashMap::new(),
            done: HashSet::new(),
            next_rescan: now,
        }
    }

    /// The watch saw `velero_name` completed: rescan soon unless it is handled already.
    pub fn saw_completed(&mut self, velero_name: String, now: Instant) {
        if self.done.contains(&velero_name) || self.awaiting.contains_key(&velero_name) {
            return;
        }
        let due = now + self.config.await_min_backoff;
        self.awaiting
            .insert(velero_name, Awaiting { rescans: 0, due });
    }

    /// Whether a rescan is due at `now`.
    pub fn rescan_due(&self, now: Instant) -> bool {
        now >= self.next_rescan || self.awaiting.values().any(|a| a.due <= now)
    }

    /// What a rescan listed: queues what is not queued, running or waiting for a retry; backs
    /// off the awaited backups that were not listed (and forgets those awaited long enough).
    pub fn rescanned(&mut self, listed: Vec<ManifestTarget>, now: Instant) {
        let mut names = HashSet::new();
        for target in listed {
            names.insert(target.velero_name.clone());
            if self.busy.contains(&target.operation_id)
                || self.retries.contains_key(&target.operation_id)
            {
                continue;
            }
            self.busy.insert(target.operation_id.clone());
            self.queued.push_back(target);
        }
        let (min, max, limit) = (
            self.config.await_min_backoff,
            self.config.rescan_interval,
            self.config.await_attempts,
        );
        self.awaiting.retain(|name, awaiting| {
            if names.contains(name) {
                return false;
            }
            awaiting.rescans += 1;
            awaiting.due = now + backoff(awaiting.rescans + 1, min, max);
            awaiting.rescans < limit
        });
        self.next_rescan = now + self.config.rescan_interval;
    }

    /// A rescan failed (the store is down): try again after a short while.
    pub fn rescan_failed(&mut self, now: Instant) {
        self.next_rescan = now + self.config.retry_min_backoff;
        for awaiting in self.awaiting.values_mut() {
            awaiting.due = awaiting.due.max(self.next_rescan);
        }
    }

    /// The next target to build, if a build slot is free: queued ones first, then retries
    /// that are due.
    pub fn next_build(&mut self, now: Instant) -> Option<ManifestTarget> {
        if self.running >= self.config.concurrency.max(1) {
            return None;
        }
        let target = match self.queued.pop_front() {
            Some(target) => target,
            None => {
                let id = self
                    .retries
                    .iter()
                    .filter(|(_, r)| r.due <= now)
                    .min_by_key(|(_, r)| r.due)
                    .map(|(id, _)| id.clone())?;
                let retry = self.retries.remove(&id)?;
                self.busy.insert(id);
                retry.target
            }
        };
        self.running += 1;
        Some(target)
    }

    /// A build of `target` ended. A failed one is retried after a backoff that grows with
    /// its failures in a row; an unusable one after [`UNUSABLE_RETRY_FACTOR`] times the
    /// longest backoff (something may still change: a backup re-synced, storage repaired).
    pub fn finished(&mut self, target: ManifestTarget, outcome: BuildOutcome, now: Instant) {
        self.running = self.running.saturating_sub(1);
        self.busy.remove(&target.operation_id);
        if outcome == BuildOutcome::Settled {
            self.failures.remove(&target.operation_id);
            self.awaiting.remove(&target.velero_name);
            self.done.insert(target.velero_name);
            return;
        }
        let failures = self
            .failures
            .entry(target.operation_id.clone())
            .or_default();
        *failures = failures.saturating_add(1);
        let wait = if outcome == BuildOutcome::Unusable {
            self.config
                .retry_max_backoff
                .saturating_mul(UNUSABLE_RETRY_FACTOR)
        } else {
            backoff(
                *failures,
                self.config.retry_min_backoff,
                self.config.retry_max_backoff,
            )
        };
        let due = now + wait;
        self.retries
            .insert(target.operation_id.clone(), Retry { target, due });
    }

    /// How many failures in a row `operation_id` has had.
    pub fn attempts(&self, operation_id: &str) -> u32 {
        self.failures.get(operation_id).copied().unwrap_or(0)
    }

    /// When something next becomes due (a rescan, an awaited backup, a retry).
    pub fn next_wake(&self) -> Instant {
        let mut wake = self.next_rescan;
        for awaiting in self.awaiting.values() {
            wake = wake.min(awaiting.due);
        }
        for retry in self.retries.values() {
            wake = wake.min(retry.due);
        }
        wake
    }

    /// Builds running now.
    pub fn running(&self) -> usize {
        self.running
    }
}

// ---------------------------------------------------------------------------------------------
// The edges

/// Sends the name of every NAC Velero Backup seen finished with contents.
async fn watch_backups(
    builder: Arc<ManifestBuilder>,
    seen: tokio::sync::mpsc::UnboundedSender<String>,
) {
    let selector = format!("{}={}", labels::OADP, labels::OADP_VALUE);
    let config = watcher::Config::default().labels(&selector);
    let mut events = watcher::watcher(builder.backups(), config)
        .default_backoff()
        .boxed();
    while let Some(event) = events.next().await {
        let backup = match event {
            Ok(watcher::Event::InitApply(b) | watcher::Event::Apply(b)) => b,
            Ok(_) => continue,
            Err(error) => {
                tracing::debug!(error = %error, "manifest builder's watch of Velero backups failed; retrying");
                continue;
            }
        };
        if let Some(name) = completed_nac_backup(&backup)
            && seen.send(name).is_err()
        {
            return;
        }
    }
}

/// The one loop that owns the [`Plan`]: takes completions from the watch, rescans the store,
/// starts builds and collects their outcomes.
async fn schedule(
    builder: Arc<ManifestBuilder>,
    mut completions: tokio::sync::mpsc::UnboundedReceiver<String>,
) {
    let mut plan = Plan::new(builder.config.clone(), Instant::now());
    let mut builds: JoinSet<(ManifestTarget, Result<ManifestPut, ManifestBuildError>)> =
        JoinSet::new();
    // The target of each running task, to free its slot even if the task dies.
    let mut running: HashMap<tokio::task::Id, ManifestTarget> = HashMap::new();
    let mut watching = true;
    loop {
        let now = Instant::now();
        if plan.rescan_due(now) {
            builder.counters.rescans.fetch_add(1, Ordering::Relaxed);
            match builder.store.manifests_missing(builder.config.batch).await {
                Ok(listed) => plan.rescanned(listed, Instant::now()),
                Err(error) => {
                    tracing::warn!(error = %error, "listing backups without a manifest failed; retrying");
                    plan.rescan_failed(Instant::now());
                }
            }
        }
        while let Some(target) = plan.next_build(Instant::now()) {
            let task_builder = builder.clone();
            let task_target = target.clone();
            let handle = builds.spawn(async move {
                let outcome = task_builder.build(&task_target).await;
                (task_target, outcome)
            });
            running.insert(handle.id(), target);
        }
        let wake = plan.next_wake();
        tokio::select! {
            seen = completions.recv(), if watching => match seen {
                Some(name) => plan.saw_completed(name, Instant::now()),
                None => watching = false,
            },
            Some(joined) = builds.join_next_with_id(), if !running.is_empty() => {
                match joined {
                    Ok((id, (target, outcome))) => {
                        running.remove(&id);
                        let outcome = builder.record_outcome(&plan, &target, outcome);
                        plan.finished(target, outcome, Instant::now());
                    }
                    Err(error) => {
                        tracing::error!(error = %error, "a manifest build task failed");
                        builder.counters.failed.fetch_add(1, Ordering::Relaxed);
                        if let Some(target) = running.remove(&error.id()) {
                            plan.finished(target, BuildOutcome::Failed, Instant::now());
                        }
                    }
                }
            }
            () = tokio::time::sleep_until(wake) => {}
        }
    }
}

impl ManifestBuilder {
    /// Counts and logs a build's outcome (never with the URL: no error here carries it);
    /// what the plan makes of it.
    fn record_outcome(
        &self,
        plan: &Plan,
        target: &ManifestTarget,
        outcome: Result<ManifestPut, ManifestBuildError>,
    ) -> BuildOutcome {
        match outcome {
            Ok(ManifestPut::Stored) => {
                self.counters.built.fetch_add(1, Ordering::Relaxed);
                tracing::info!(
                    namespace = %target.namespace,
                    backup = %target.backup_name,
                    velero_backup = %target.velero_name,
                    "backup manifest stored"
                );
                BuildOutcome::Settled
            }
            Ok(ManifestPut::AlreadyStored) => {
                self.counters.already_stored.fetch_add(1, Ordering::Relaxed);
                BuildOutcome::Settled
            }
            Ok(ManifestPut::UnknownOperation) => {
                // Purged, or no longer naming this Velero backup, since it was listed.
                tracing::debug!(
                    namespace = %target.namespace,
                    velero_backup = %target.velero_name,
                    "backup operation no longer matches; manifest not stored"
                );
                BuildOutcome::Unusable
            }
            Err(error) => {
                self.counters.failed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    namespace = %target.namespace,
                    backup = %target.backup_name,
                    velero_backup = %target.velero_name,
                    failures = plan.attempts(&target.operation_id) + 1,
                    error = %error,
                    "building a backup manifest failed; will retry"
                );
                if error.is_transient() {
                    BuildOutcome::Failed
                } else {
                    BuildOutcome::Unusable
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::api::origin::{is_managed_by_nac, origin_annotations, origin_labels};
    use crate::api::velero::{BackupStatus, DownloadRequestStatus};

    #[test]
    fn the_download_request_labels_a_78_byte_backup_name_within_63_bytes() {
        let name = format!("team-a-nightly-{}-20260101020304", "0".repeat(48));
        assert_eq!(name.len(), 78);
        let request = download_request(&name);
        assert_eq!(request.spec.target.name, name);
        let labels = request.metadata.labels.unwrap();
        let value = &labels[crate::api::velero::labels::BACKUP_NAME];
        assert!(value.len() <= 63);
        assert_eq!(*value, crate::api::velero::labels::valid_label_value(&name));
        assert!(labels.values().all(|v| v.len() <= 63));
    }

    fn backup(name: &str, namespace: &str, phase: BackupPhase) -> Backup {
        let mut backup = Backup::new(name, Default::default());
        backup.metadata.labels = Some(origin_labels(OriginKind::NonAdminBackup, name));
        backup.metadata.annotations = Some(origin_annotations(
            OriginKind::NonAdminBackup,
            namespace,
            "nightly",
        ));
        backup.status = Some(BackupStatus {
            phase: Some(phase),
            ..BackupStatus::default()
        });
        backup
    }

    fn target(id: &str, velero: &str) -> ManifestTarget {
        ManifestTarget {
            operation_id: id.into(),
            namespace: "team-a".into(),
            backup_name: "nightly".into(),
            velero_name: velero.into(),
            kind: super::super::OperationKind::Backup,
            completed_at: None,
        }
    }

    fn config() -> ManifestBuilderConfig {
        ManifestBuilderConfig {
            concurrency: 2,
            rescan_interval: Duration::from_secs(60),
            await_min_backoff: Duration::from_secs(1),
            await_attempts: 3,
            retry_min_backoff: Duration::from_secs(2),
            retry_max_backoff: Duration::from_secs(30),
            ..ManifestBuilderConfig::default()
        }
    }

    #[test]
    fn only_finished_nac_backups_want_a_manifest() {
        assert_eq!(
            completed_nac_backup(&backup("b1", "team-a", BackupPhase::Completed)).as_deref(),
            Some("b1")
        );
        assert!(
            completed_nac_backup(&backup("b1", "team-a", BackupPhase::PartiallyFailed)).is_some()
        );
        for phase in [
            BackupPhase::InProgress,
            BackupPhase::Failed,
            BackupPhase::FailedValidation,
            BackupPhase::Deleting,
        ] {
            assert!(completed_nac_backup(&backup("b1", "team-a", phase)).is_none());
        }
        // An admin's own backup (no NAC labels) is not ours to describe.
        let mut admins = backup("b2", "team-a", BackupPhase::Completed);
        admins.metadata.labels = None;
        assert!(completed_nac_backup(&admins).is_none());
    }

    #[test]
    fn a_backup_of_another_namespace_never_feeds_an_operation() {
        let ok = backup("b1", "team-a", BackupPhase::Completed);
        assert!(check_backup(&ok, &target("op", "b1")).is_ok());
        let other = backup("b1", "team-b", BackupPhase::Completed);
        assert!(matches!(
            check_backup(&other, &target("op", "b1")),
            Err(ManifestBuildError::Mismatch(_))
        ));
        let running = backup("b1", "team-a", BackupPhase::InProgress);
        assert!(check_backup(&running, &target("op", "b1")).is_err());
        assert!(check_backup(&ok, &target("op", "b2")).is_err());
    }

    #[test]
    fn the_download_request_asks_for_the_contents_and_is_recognizably_ours() {
        let request = download_request("team-a-nightly-0123456789abcdef0123456789abcdef");
        assert_eq!(request.spec.target.kind, DownloadTargetKind::BackupContents);
        assert_eq!(
            request.spec.target.name,
            "team-a-nightly-0123456789abcdef0123456789abcdef"
        );
        let labels = request.metadata.labels.unwrap();
        assert_eq!(labels[COMPONENT_LABEL], COMPONENT_VALUE);
        assert!(is_managed_by_nac(&labels));
        // No tenant origin: the garbage collector never takes it for an orphan.
        assert!(crate::api::origin::origin_of(&labels, &Default::default()).is_none());
        let generate = request.metadata.generate_name.unwrap();
        assert!(generate.starts_with("manifest-team-a-nightly-"));
        assert!(generate.len() <= "manifest-".len() + 40 + 1);
        assert!(request.metadata.name.is_none());
    }

    #[test]
    fn download_states() {
        let mut request = download_request("b");
        assert_eq!(download_state(None), DownloadState::Pending);
        assert_eq!(download_state(Some(&request)), DownloadState::Pending);
        request.status = Some(DownloadRequestStatus {
            phase: Some(DownloadRequestPhase::New),
            ..Default::default()
        });
        assert_eq!(download_state(Some(&request)), DownloadState::Pending);
        request.status = Some(DownloadRequestStatus {
            phase: Some(DownloadRequestPhase::Processed),
            ..Default::default()
        });
        assert_eq!(download_state(Some(&request)), DownloadState::NoContents);
        request.status = Some(DownloadRequestStatus {
            phase: Some(DownloadRequestPhase::Processed),
            download_url: Some("http://s3/b.tar.gz?sig=x".into()),
            ..Default::default()
        });
        assert_eq!(
            download_state(Some(&request)),
            DownloadState::Ready("http://s3/b.tar.gz?sig=x".into())
        );
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let (min, max) = (Duration::from_secs(2), Duration::from_secs(30));
        assert_eq!(backoff(0, min, max), min);
        assert_eq!(backoff(1, min, max), min);
        assert_eq!(backoff(2, min, max), Duration::from_secs(4));
        assert_eq!(backoff(4, min, max), Duration::from_secs(16));
        assert_eq!(backoff(5, min, max), max);
        assert_eq!(backoff(u32::MAX, min, max), max);
    }

    #[test]
    fn the_first_rescan_is_the_backfill_and_builds_are_bounded() {
        let t0 = Instant::now();
        let mut plan = Plan::new(config(), t0);
        assert!(plan.rescan_due(t0));
        plan.rescanned(
            vec![target("1", "b1"), target("2", "b2"), target("3", "b3")],
            t0,
        );
        assert!(!plan.rescan_due(t0));
        assert_eq!(plan.next_wake(), t0 + Duration::from_secs(60));
        let first = plan.next_build(t0).unwrap();
        let second = plan.next_build(t0).unwrap();
        assert_eq!(
            (first.operation_id.as_str(), second.operation_id.as_str()),
            ("1", "2")
        );
        // Two at a time.
        assert!(plan.next_build(t0).is_none());
        // A rescan listing what is queued or running adds nothing twice.
        plan.rescanned(vec![target("1", "b1"), target("3", "b3")], t0);
        plan.finished(first, BuildOutcome::Settled, t0);
        let third = plan.next_build(t0).unwrap();
        assert_eq!(third.operation_id, "3");
        assert!(plan.next_build(t0).is_none());
        plan.finished(second, BuildOutcome::Settled, t0);
        plan.finished(third, BuildOutcome::Settled, t0);
        assert!(plan.next_build(t0).is_none());
        assert_eq!(plan.running(), 0);
    }

    #[test]
    fn failures_are_retried_with_backoff_and_not_requeued_by_rescans_meanwhile() {
        let t0 = Instant::now();
        let mut plan = Plan::new(config(), t0);
        plan.rescanned(vec![target("1", "b1")], t0);
        let build = plan.next_build(t0).unwrap();
        plan.finished(build, BuildOutcome::Failed, t0);
        assert_eq!(plan.attempts("1"), 1);
        // Listed again while it waits: not built early.
        plan.rescanned(vec![target("1", "b1")], t0);
        assert!(plan.next_build(t0 + Duration::from_secs(1)).is_none());
        assert_eq!(plan.next_wake(), t0 + Duration::from_secs(2));
        let again = plan.next_build(t0 + Duration::from_secs(2)).unwrap();
        assert_eq!(again.operation_id, "1");
        plan.finished(again, BuildOutcome::Failed, t0 + Duration::from_secs(2));
        assert_eq!(plan.next_wake(), t0 + Duration::from_secs(6));
        let third = plan.next_build(t0 + Duration::from_secs(6)).unwrap();
        plan.finished(third, BuildOutcome::Settled, t0 + Duration::from_secs(6));
        assert_eq!(plan.attempts("1"), 0);
    }

    #[test]
    fn unusable_contents_wait_much_longer_than_a_failure() {
        let t0 = Instant::now();
        let mut plan = Plan::new(config(), t0);
        plan.rescanned(vec![target("1", "gone")], t0);
        let build = plan.next_build(t0).unwrap();
        plan.finished(build, BuildOutcome::Unusable, t0);
        assert_eq!(plan.attempts("1"), 1);
        // The periodic rescan (60 s) comes before the retry (6 × 30 s).
        assert_eq!(plan.next_wake(), t0 + Duration::from_secs(60));
        // The periodic rescan lists it again; it is not built before its time.
        plan.rescanned(vec![target("1", "gone")], t0 + Duration::from_secs(60));
        assert!(plan.next_build(t0 + Duration::from_secs(179)).is_none());
        assert!(plan.next_build(t0 + Duration::from_secs(180)).is_some());
        assert!(!ManifestBuildError::BackupGone.is_transient());
        assert!(!ManifestBuildError::Fetch(FetchError::Corrupt).is_transient());
        assert!(ManifestBuildError::Fetch(FetchError::Timeout).is_transient());
        assert!(ManifestBuildError::DownloadTimeout.is_transient());
    }

    #[test]
    fn a_completion_seen_before_the_recorder_stored_it_is_rescanned_with_backoff() {
        let t0 = Instant::now();
        let mut plan = Plan::new(config(), t0);
        plan.rescanned(Vec::new(), t0);
        plan.saw_completed("b1".into(), t0);
        assert!(!plan.rescan_due(t0));
        let first = t0 + Duration::from_secs(1);
        assert_eq!(plan.next_wake(), first);
        assert!(plan.rescan_due(first));
        // Not listed yet (the recorder lags): wait longer.
        plan.rescanned(Vec::new(), first);
        assert_eq!(plan.next_wake(), first + Duration::from_secs(2));
        let second = first + Duration::from_secs(2);
        plan.rescanned(vec![target("1", "b1")], second);
        assert_eq!(plan.next_build(second).unwrap().velero_name, "b1");
        assert_eq!(plan.next_wake(), second + Duration::from_secs(60));
    }

    #[test]
    fn awaited_backups_that_never_show_up_are_left_to_the_periodic_rescan() {
        let t0 = Instant::now();
        let mut plan = Plan::new(config(), t0);
        plan.rescanned(Vec::new(), t0);
        plan.saw_completed("has-one-already".into(), t0);
        let mut now = t0;
        for _ in 0..3 {
            now = plan.next_wake();
            assert!(now < t0 + Duration::from_secs(60));
            plan.rescanned(Vec::new(), now);
        }
        assert_eq!(plan.next_wake(), now + Duration::from_secs(60));
    }

    #[test]
    fn built_backups_are_not_awaited_again() {
        let t0 = Instant::now();
        let mut plan = Plan::new(config(), t0);
        plan.rescanned(vec![target("1", "b1")], t0);
        let build = plan.next_build(t0).unwrap();
        plan.finished(build, BuildOutcome::Settled, t0);
        plan.saw_completed("b1".into(), t0);
        assert_eq!(plan.next_wake(), t0 + Duration::from_secs(60));
    }

    #[test]
    fn a_failed_rescan_is_retried_soon() {
        let t0 = Instant::now();
        let mut plan = Plan::new(config(), t0);
        plan.rescan_failed(t0);
        assert!(!plan.rescan_due(t0));
        assert!(plan.rescan_due(t0 + Duration::from_secs(2)));
    }

    #[test]
    fn stored_records_summarize_the_document() {
        let document = ManifestDocument::new(
            ManifestBackup {
                namespace: "team-a".into(),
                name: "nightly".into(),
                velero_backup: "b1".into(),
                completed_at: None,
            },
            crate::manifest::item::Manifest::new(),
        );
        let record = stored_manifest(
            ManifestKey {
                operation_id: "op".into(),
                ..ManifestKey::default()
            },
            &document,
            vec![1, 2, 3],
            42,
        );
        assert_eq!(record.summary.item_count, 0);
        assert_eq!(record.summary.encoded_size, 3);
        assert_eq!(record.summary.built_at, 42);
        assert_eq!(
            record.summary.format_version,
            crate::manifest::export::MANIFEST_FORMAT_VERSION
        );
    }
}
