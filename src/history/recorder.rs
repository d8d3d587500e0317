//! The recorder: watches NAC's tenant objects in every namespace and NAC's Velero objects in
//! the OADP namespace, maps them to observations ([`super::observe`]) and feeds the history
//! store in batches.
//!
//! Watchers never wait for the database: they push into a bounded buffer that one writer task
//! drains. While the database is down the writer keeps its batch and retries with backoff; the
//! buffer keeps the newest `buffer_capacity` items, and when it had to drop some the writer
//! reconciles from cluster state once the database answers again (it does so after every
//! outage: simplest and safe). Objects that vanished while the recorder was not running are
//! marked deleted once the initial lists are in.
//!
//! Every operation carries the UID of its tenant namespace (identity over time, DESIGN §5):
//! the recorder watches namespaces too (the controller's ClusterRole may list and watch them)
//! and fills the UID in when it writes, from the namespace of the operation's name that was
//! created no later than the operation (and was not being deleted before it). An operation
//! written before its namespace was seen, and rows recorded before NAC kept the UID, are
//! attributed when the namespace list arrives and whenever a namespace appears
//! ([`HistoryStore::attribute_namespaces`](super::HistoryStore::attribute_namespaces)).

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;

use super::observe::{
    self, Seen, TenantObservation, VeleroKey, VeleroObservation, merge_observations,
};
use super::{
    EpochMillis, NamespaceIdentity, Observation, OperationRecord, SharedHistory, StoreFuture,
    now_millis,
};
use crate::api::nonadmin::{
    NonAdminBackup, NonAdminBackupStorageLocation, NonAdminDownloadRequest, NonAdminRestore, labels,
};
use crate::api::velero::{Backup, DeleteBackupRequest, Restore};

/// Consecutive failures other than "unavailable" after which a write is judged to be refused
/// for its content (it is then split, and a lone refused observation dropped) rather than
/// retried forever.
const POISON_ATTEMPTS: u32 = 5;
/// Most Velero observations kept for one not-yet-known tenant object.
const PENDING_PER_KEY: usize = 16;
/// Page size of the reconciliation lists.
const LIST_PAGE: u32 = 500;
/// How often expired pending observations and retired resolutions are pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(5);

/// How the recorder batches, buffers and retries.
#[derive(Clone, Debug)]
pub struct RecorderConfig {
    /// Most observations per `record` call.
    pub batch_size: usize,
    /// How long the writer lets observations gather before writing a partial batch.
    pub flush_interval: Duration,
    /// Most items buffered while the database is slow or down; the oldest go first.
    pub buffer_capacity: usize,
    /// First retry delay after a failed write.
    pub retry_min_backoff: Duration,
    /// Longest retry delay.
    pub retry_max_backoff: Duration,
    /// Most Velero observations waiting for their tenant object to be seen.
    pub pending_capacity: usize,
    /// How long a Velero observation waits for its tenant object.
    pub pending_ttl: Duration,
    /// How long a deleted tenant object's Velero objects still resolve to its operations (a
    /// DeleteBackupRequest finishes around the time its NonAdminBackup goes).
    pub deleted_grace: Duration,
}

impl Default for RecorderConfig {
    fn default() -> Self {
        RecorderConfig {
            batch_size: 500,
            flush_interval: Duration::from_millis(200),
            buffer_capacity: 100_000,
            retry_min_backoff: Duration::from_millis(250),
            retry_max_backoff: Duration::from_secs(5),
            pending_capacity: 10_000,
            pending_ttl: Duration::from_secs(300),
            deleted_grace: Duration::from_secs(600),
        }
    }
}

/// What the recorder has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecorderStats {
    /// Objects observed (watch events and reconciliation lists).
    pub observed: u64,
    /// Transitions the store reported as new.
    pub written_transitions: u64,
    /// Successful `record` calls.
    pub batches: u64,
    /// Items waiting to be written now (buffered plus in flight).
    pub buffered: u64,
    /// Items dropped: buffer overflow, or observations the store refused for their content.
    pub dropped: u64,
    /// Velero observations dropped because their tenant object never showed up in time.
    pub unresolved: u64,
    /// Reconciliations from cluster state after an outage or overflow.
    pub resyncs: u64,
    /// Whether the last store call succeeded.
    pub database_up: bool,
    /// Whether the initial lists are in and what vanished meanwhile was marked deleted.
    pub synced: bool,
}

/// A cloneable view of a running recorder's statistics.
#[derive(Clone, Debug)]
pub struct RecorderHandle {
    shared: Arc<Shared>,
}

impl RecorderHandle {
    /// The statistics now.
    pub fn stats(&self) -> RecorderStats {
        self.shared.stats()
    }
}

/// Watches the cluster and feeds the history store; see the module documentation.
pub struct Recorder {
    client: kube::Client,
    oadp_namespace: String,
    store: SharedHistory,
    config: RecorderConfig,
    shared: Arc<Shared>,
}

impl Recorder {
    /// A recorder reading the cluster as `client` and writing to `store`.
    pub fn new(
        client: kube::Client,
        oadp_namespace: &str,
        store: SharedHistory,
        config: RecorderConfig,
    ) -> Self {
        let shared = Arc::new(Shared::new(&config));
        Recorder {
            client,
            oadp_namespace: oadp_namespace.to_string(),
            store,
            config,
            shared,
        }
    }

    /// A handle on the statistics, usable after `run` took the recorder.
    pub fn handle(&self) -> RecorderHandle {
        RecorderHandle {
            shared: self.shared.clone(),
        }
    }

    /// The statistics now.
    pub fn stats(&self) -> RecorderStats {
        self.shared.stats()
    }

    /// Watches and writes until the future is dropped.
    pub async fn run(self) {
        self.run_until(std::future::pending()).await;
    }

    /// Watches and writes until `stop` resolves, then stops watching, writes what it has
    /// buffered (the batch being written included; no reconciliation or sweep starts) and
    /// returns. While the store is down the writes are retried: bound the wait by dropping the
    /// future.
    pub async fn run_until(self, stop: impl std::future::Future<Output = ()>) {
        let inner = Arc::new(self);
        let watching = {
            let inner = inner.clone();
            async move {
                tokio::select! {
                    () = Box::pin(watch_all(inner.clone())) => {}
                    () = stop => {}
                }
                inner.shared.stopping.store(true, Ordering::SeqCst);
                inner.shared.wake.notify_one();
            }
        };
        tokio::join!(watching, Box::pin(write_loop(inner)));
        tracing::info!("history recorder stopped; what it had buffered is written");
    }

    fn velero_api<K>(&self) -> Api<K>
    where
        K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>,
    {
        Api::namespaced(self.client.clone(), &self.oadp_namespace)
    }
}

/// Every watch of the recorder, until dropped.
async fn watch_all(inner: Arc<Recorder>) {
    // Boxed: the joined futures are large, and polling them inline costs stack that the
    // callers (often nested in the controllers' own joins) may not have in debug builds.
    tokio::join!(
        Box::pin(watch_tenant::<NonAdminBackup>(inner.clone())),
        Box::pin(watch_tenant::<NonAdminRestore>(inner.clone())),
        Box::pin(watch_tenant::<NonAdminBackupStorageLocation>(inner.clone())),
        Box::pin(watch_tenant::<NonAdminDownloadRequest>(inner.clone())),
        Box::pin(watch_velero::<Backup>(
            inner.clone(),
            observe::observe_velero_backup
        )),
        Box::pin(watch_velero::<Restore>(
            inner.clone(),
            observe::observe_velero_restore
        )),
        Box::pin(watch_velero::<DeleteBackupRequest>(
            inner.clone(),
            observe::observe_delete_request
        )),
        Box::pin(watch_namespaces(inner.clone())),
    );
}

/// Only NAC's own Velero objects carry this label (as the controllers' caches select them).
fn nac_velero_selector() -> String {
    format!("{}={}", labels::OADP, labels::OADP_VALUE)
}

// ---------------------------------------------------------------------------------------------
// The buffer

/// What the writer does, in order.
// Nearly every item is an observation: boxing them would only add an allocation each.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
enum Item {
    /// Record an observation.
    Observe(Observation),
    /// Mark operations deleted at a time.
    Deleted(Vec<String>, EpochMillis),
    /// The initial lists are in: mark what vanished while the recorder was away.
    Sweep,
    /// Namespaces listed or created: attribute the operations of theirs recorded without
    /// their UID.
    Attribute(Vec<NamespaceIdentity>),
}

/// One unit of work for the writer.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Batch {
    Record(Vec<Observation>),
    Deleted(Vec<String>, EpochMillis),
    Sweep,
    Attribute(Vec<NamespaceIdentity>),
}

/// The bounded FIFO between the watchers and the writer: pushing never waits; when full the
/// oldest item goes, is counted, and a reconciliation is asked for (it re-adds whatever the
/// cluster still shows).
#[derive(Debug)]
struct Buffer {
    items: VecDeque<Item>,
    capacity: usize,
    dropped: u64,
    needs_resync: bool,
}

impl Buffer {
    fn new(capacity: usize) -> Self {
        Buffer {
            items: VecDeque::new(),
            capacity: capacity.max(1),
            dropped: 0,
            needs_resync: false,
        }
    }

    fn len(&self) -> usize {
        self.items.len()
    }

    /// Appends `item`; returns how many old items were dropped for it.
    fn push(&mut self, item: Item) -> u64 {
        let mut dropped = 0;
        while self.items.len() >= self.capacity {
            self.items.pop_front();
            dropped += 1;
        }
        if dropped > 0 {
            self.dropped += dropped;
            self.needs_resync = true;
        }
        self.items.push_back(item);
        dropped
    }

    /// The next batch: up to `max` observations (those of one operation folded into one), or
    /// one deletion, or the sweep, or one attribution, in buffer order.
    fn take(&mut self, max: usize) -> Option<Batch> {
        match self.items.front()? {
            Item::Deleted(..) | Item::Sweep | Item::Attribute(_) => {
                return match self.items.pop_front()? {
                    Item::Deleted(ids, at) => Some(Batch::Deleted(ids, at)),
                    Item::Attribute(namespaces) => Some(Batch::Attribute(namespaces)),
                    _ => Some(Batch::Sweep),
                };
            }
            Item::Observe(_) => {}
        }
        let mut batch: Vec<Observation> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut taken = 0;
        while taken < max.max(1) && matches!(self.items.front(), Some(Item::Observe(_))) {
            let Some(Item::Observe(o)) = self.items.pop_front() else {
                break;
            };
            taken += 1;
            match index.get(&o.operation.id) {
                Some(&i) => merge_observations(&mut batch[i], o),
                None => {
                    index.insert(o.operation.id.clone(), batch.len());
                    batch.push(o);
                }
            }
        }
        Some(Batch::Record(batch))
    }

    /// Whether a reconciliation was asked for (and clears the request).
    fn take_resync(&mut self) -> bool {
        std::mem::take(&mut self.needs_resync)
    }
}

// ---------------------------------------------------------------------------------------------
// Resolution and change tracking

/// The tenant kinds watched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum TenantKind {
    Backup,
    Restore,
    Location,
    Download,
}

const TENANT_KINDS: usize = 4;

#[derive(Debug)]
struct Target {
    identity: super::OperationRecord,
    /// Set once the tenant object is gone: resolution stops after this.
    retire_at: Option<Instant>,
}

/// Everything the watchers remember: which operation each Velero object belongs to, Velero
/// observations waiting for their tenant object, what was already sent per operation, and
/// which tenant objects exist (to notice deletions a relist reveals).
#[derive(Debug)]
struct Tracker {
    targets: HashMap<VeleroKey, Target>,
    pending: HashMap<VeleroKey, VecDeque<(Instant, VeleroObservation)>>,
    pending_len: usize,
    seen: HashMap<String, Seen>,
    known: HashMap<TenantKind, HashMap<String, Vec<String>>>,
    relisting: HashMap<TenantKind, HashMap<String, Vec<String>>>,
    listed: HashSet<TenantKind>,
    swept: bool,
    last_prune: Option<Instant>,
    pending_capacity: usize,
    pending_ttl: Duration,
    deleted_grace: Duration,
    /// Velero observations given up on (cumulative).
    unresolved: u64,
}

impl Tracker {
    fn new(config: &RecorderConfig) -> Self {
        Tracker {
            targets: HashMap::new(),
            pending: HashMap::new(),
            pending_len: 0,
            seen: HashMap::new(),
            known: HashMap::new(),
            relisting: HashMap::new(),
            listed: HashSet::new(),
            swept: false,
            last_prune: None,
            pending_capacity: config.pending_capacity.max(1),
            pending_ttl: config.pending_ttl,
            deleted_grace: config.deleted_grace,
            unresolved: 0,
        }
    }

    fn send(&mut self, observation: Observation, observed_at: EpochMillis) -> Option<Item> {
        self.seen
            .entry(observation.operation.id.clone())
            .or_default()
            .update(observation, observed_at)
            .map(Item::Observe)
    }

    /// Remembers which operations `obs`'s Velero objects belong to; returns the Velero
    /// observations that were waiting for them, resolved.
    fn register(&mut self, obs: &TenantObservation) -> Vec<Observation> {
        let mut resolved = Vec::new();
        for (o, key) in &obs.operations {
            let Some(key) = key else { continue };
            let identity = observe::identity(&o.operation);
            if let Some(waiting) = self.pending.remove(key) {
                self.pending_len = self.pending_len.saturating_sub(waiting.len());
                for (_, v) in waiting {
                    match v.resolve(&identity) {
                        Some(r) => resolved.push(r),
                        None => self.unresolved += 1,
                    }
                }
            }
            self.targets.insert(
                key.clone(),
                Target {
                    identity,
                    retire_at: None,
                },
            );
        }
        resolved
    }

    /// A tenant object was listed or changed.
    fn tenant_applied(
        &mut self,
        kind: TenantKind,
        obs: TenantObservation,
        listing: bool,
        observed_at: EpochMillis,
    ) -> Vec<Item> {
        let mut items = Vec::new();
        for r in self.register(&obs) {
            items.extend(self.send(r, observed_at));
        }
        let ids = obs.ids();
        if listing {
            self.relisting
                .entry(kind)
                .or_default()
                .insert(obs.uid.clone(), ids.clone());
        }
        self.known.entry(kind).or_default().insert(obs.uid, ids);
        for (o, _) in obs.operations {
            items.extend(self.send(o, observed_at));
        }
        items
    }

    /// Forgets a gone tenant object's operations (its Velero objects still resolve for a
    /// grace period).
    fn retire(&mut self, ids: &[String], now: Instant) {
        for id in ids {
            self.seen.remove(id);
        }
        let until = now + self.deleted_grace;
        for target in self.targets.values_mut() {
            if target.retire_at.is_none() && ids.contains(&target.identity.id) {
                target.retire_at = Some(until);
            }
        }
    }

    /// A tenant object was deleted (`last`: its final state).
    fn tenant_deleted(
        &mut self,
        kind: TenantKind,
        uid: Option<String>,
        last: Option<TenantObservation>,
        observed_at: EpochMillis,
        now: Instant,
    ) -> Vec<Item> {
        let mut items = Vec::new();
        let mut ids = uid
            .as_ref()
            .and_then(|u| self.known.get_mut(&kind).and_then(|k| k.remove(u)))
            .unwrap_or_default();
        if let Some(last) = last {
            for r in self.register(&last) {
                items.extend(self.send(r, observed_at));
            }
            for id in last.ids() {
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
            for (o, _) in last.operations {
                items.extend(self.send(o, observed_at));
            }
        }
        if !ids.is_empty() {
            self.retire(&ids, now);
            items.push(Item::Deleted(ids, observed_at));
        }
        items
    }

    /// A (re)list of a tenant kind begins.
    fn list_started(&mut self, kind: TenantKind) {
        self.relisting.insert(kind, HashMap::new());
    }

    /// A (re)list of a tenant kind is complete: what was known but is not listed any more
    /// vanished unseen (the watch was down); after the first complete list of every kind,
    /// sweep the store.
    fn list_done(&mut self, kind: TenantKind, observed_at: EpochMillis, now: Instant) -> Vec<Item> {
        let listed = self.relisting.remove(&kind).unwrap_or_default();
        let before = self.known.insert(kind, listed).unwrap_or_default();
        let now_known = self.known.get(&kind);
        let vanished: Vec<String> = before
            .into_iter()
            .filter(|(uid, _)| !now_known.is_some_and(|k| k.contains_key(uid)))
            .flat_map(|(_, ids)| ids)
            .collect();
        let mut items = Vec::new();
        if !vanished.is_empty() {
            self.retire(&vanished, now);
            items.push(Item::Deleted(vanished, observed_at));
        }
        self.listed.insert(kind);
        if !self.swept && self.listed.len() == TENANT_KINDS {
            self.swept = true;
            items.push(Item::Sweep);
        }
        items
    }

    /// A Velero object was listed, changed or deleted.
    fn velero_seen(
        &mut self,
        v: VeleroObservation,
        observed_at: EpochMillis,
        now: Instant,
    ) -> Vec<Item> {
        self.prune(now);
        if let Some(target) = self.targets.get(&v.key) {
            return match v.resolve(&target.identity) {
                Some(r) => self.send(r, observed_at).into_iter().collect(),
                None => {
                    self.unresolved += 1;
                    Vec::new()
                }
            };
        }
        if self.pending_len >= self.pending_capacity {
            self.prune_pending(now);
        }
        if self.pending_len >= self.pending_capacity {
            self.unresolved += 1;
            return Vec::new();
        }
        let waiting = self.pending.entry(v.key.clone()).or_default();
        if waiting.len() >= PENDING_PER_KEY {
            waiting.pop_front();
            self.unresolved += 1;
            self.pending_len = self.pending_len.saturating_sub(1);
        }
        waiting.push_back((now, v));
        self.pending_len += 1;
        Vec::new()
    }

    fn prune_pending(&mut self, now: Instant) {
        let ttl = self.pending_ttl;
        let mut expired = 0;
        self.pending.retain(|_, waiting| {
            let before = waiting.len();
            waiting.retain(|(since, _)| now.saturating_duration_since(*since) < ttl);
            expired += before - waiting.len();
            !waiting.is_empty()
        });
        self.unresolved += expired as u64;
        self.pending_len = self.pending_len.saturating_sub(expired);
    }

    /// Drops expired pending observations and retired resolutions (at most every few
    /// seconds: both scans are linear).
    fn prune(&mut self, now: Instant) {
        if self
            .last_prune
            .is_some_and(|last| now.saturating_duration_since(last) < PRUNE_EVERY)
        {
            return;
        }
        self.last_prune = Some(now);
        self.prune_pending(now);
        let seen = &mut self.seen;
        self.targets.retain(|_, t| {
            let keep = t.retire_at.is_none_or(|until| until > now);
            if !keep {
                // Late Velero events may have remembered it again after the deletion.
                seen.remove(&t.identity.id);
            }
            keep
        });
    }

    /// Registers a listed tenant object for a reconciliation and returns all it shows.
    fn resync_tenant(
        &mut self,
        obs: TenantObservation,
        observed_at: EpochMillis,
    ) -> Vec<Observation> {
        let mut out = self.register(&obs);
        for (o, _) in obs.operations {
            // Remember it as sent, but send it whole (its phases where they were placed):
            // the store may have lost it.
            let o = self.place(o);
            let _ = self.send(o.clone(), observed_at);
            out.push(o);
        }
        out
    }

    /// Resolves a listed Velero object for a reconciliation.
    fn resync_velero(
        &mut self,
        v: VeleroObservation,
        observed_at: EpochMillis,
    ) -> Option<Observation> {
        let identity = &self.targets.get(&v.key)?.identity;
        let resolved = self.place(v.resolve(identity)?);
        let _ = self.send(resolved.clone(), observed_at);
        Some(resolved)
    }

    /// `observation` with its phase facts where its operation's timeline places them.
    fn place(&mut self, mut observation: Observation) -> Observation {
        self.seen
            .entry(observation.operation.id.clone())
            .or_default()
            .place(&mut observation);
        observation
    }
}

// ---------------------------------------------------------------------------------------------
// Namespaces

/// What the recorder knows of one namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
struct NamespaceFacts {
    uid: String,
    created_at: EpochMillis,
    /// When its deletion was asked for.
    deleting_since: Option<EpochMillis>,
}

impl NamespaceFacts {
    fn of(namespace: &Namespace) -> Option<(String, NamespaceFacts)> {
        let meta = &namespace.metadata;
        let name = meta.name.clone().filter(|n| !n.is_empty())?;
        let uid = meta.uid.clone().filter(|u| !u.is_empty())?;
        let created_at = meta.creation_timestamp.as_ref()?.0.as_millisecond();
        let deleting_since = meta
            .deletion_timestamp
            .as_ref()
            .map(|t| t.0.as_millisecond());
        Some((
            name,
            NamespaceFacts {
                uid,
                created_at,
                deleting_since,
            },
        ))
    }

    fn identity(&self, name: &str) -> NamespaceIdentity {
        NamespaceIdentity {
            name: name.to_string(),
            uid: self.uid.clone(),
            created_at: self.created_at,
        }
    }

    /// Whether an operation created at `created_at` in a namespace of this name can be this
    /// namespace's ([`super::namespace_may_own`]).
    fn may_own(&self, created_at: EpochMillis) -> bool {
        super::namespace_may_own(self.created_at, self.deleting_since, created_at)
    }
}

/// The namespaces as the recorder last saw them, by name.
#[derive(Debug, Default)]
struct Namespaces {
    by_name: HashMap<String, NamespaceFacts>,
}

impl Namespaces {
    /// The UID of the namespace `operation` belongs to, when it is known.
    fn uid_for(&self, operation: &OperationRecord) -> Option<&str> {
        self.by_name
            .get(&operation.namespace)
            .filter(|facts| facts.may_own(operation.created_at))
            .map(|facts| facts.uid.as_str())
    }

    /// Fills in the namespace UID of observations that have none.
    fn fill(&self, observations: &mut [Observation]) {
        for o in observations
            .iter_mut()
            .filter(|o| o.operation.namespace_uid.is_empty())
        {
            if let Some(uid) = self.uid_for(&o.operation) {
                o.operation.namespace_uid = uid.to_string();
            }
        }
    }

    /// Everything known, for an attribution.
    fn identities(&self) -> Vec<NamespaceIdentity> {
        let mut out: Vec<NamespaceIdentity> = self
            .by_name
            .iter()
            .map(|(name, facts)| facts.identity(name))
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// A complete list replaces what was known.
    fn replace(&mut self, listed: impl IntoIterator<Item = (String, NamespaceFacts)>) {
        self.by_name = listed.into_iter().collect();
    }

    /// A namespace was created or changed; its identity when it is new (or its name has a new
    /// UID): operations recorded before it was seen may be its own.
    fn applied(&mut self, name: String, facts: NamespaceFacts) -> Option<NamespaceIdentity> {
        let new = self
            .by_name
            .get(&name)
            .is_none_or(|known| known.uid != facts.uid);
        let identity = new.then(|| facts.identity(&name));
        self.by_name.insert(name, facts);
        identity
    }

    /// A namespace is gone (a namespace of the same name created since stays).
    fn deleted(&mut self, name: &str, uid: &str) {
        if self.by_name.get(name).is_some_and(|known| known.uid == uid) {
            self.by_name.remove(name);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Shared state

#[derive(Debug)]
struct Shared {
    buffer: Mutex<Buffer>,
    wake: tokio::sync::Notify,
    tracker: Mutex<Tracker>,
    namespaces: Mutex<Namespaces>,
    observed: AtomicU64,
    written: AtomicU64,
    batches: AtomicU64,
    in_flight: AtomicU64,
    dropped: AtomicU64,
    resyncs: AtomicU64,
    database_up: AtomicBool,
    synced: AtomicBool,
    /// The store was unavailable since the last reconciliation.
    outage: AtomicBool,
    /// A reconciliation or sweep is running (counted as buffered work).
    reconciling: AtomicBool,
    /// The watches have stopped: the writer empties the buffer, then returns.
    stopping: AtomicBool,
}

/// Locks a mutex even if a panicking holder poisoned it (the data stays consistent enough:
/// every critical section is a few map updates).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl Shared {
    fn new(config: &RecorderConfig) -> Self {
        Shared {
            buffer: Mutex::new(Buffer::new(config.buffer_capacity)),
            wake: tokio::sync::Notify::new(),
            tracker: Mutex::new(Tracker::new(config)),
            namespaces: Mutex::new(Namespaces::default()),
            observed: AtomicU64::new(0),
            written: AtomicU64::new(0),
            batches: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            resyncs: AtomicU64::new(0),
            database_up: AtomicBool::new(false),
            synced: AtomicBool::new(false),
            outage: AtomicBool::new(false),
            reconciling: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
        }
    }

    fn stats(&self) -> RecorderStats {
        RecorderStats {
            observed: self.observed.load(Ordering::Relaxed),
            written_transitions: self.written.load(Ordering::Relaxed),
            batches: self.batches.load(Ordering::Relaxed),
            buffered: lock(&self.buffer).len() as u64
                + self.in_flight.load(Ordering::Relaxed)
                + u64::from(self.reconciling.load(Ordering::Relaxed)),
            dropped: self.dropped.load(Ordering::Relaxed),
            unresolved: lock(&self.tracker).unresolved,
            resyncs: self.resyncs.load(Ordering::Relaxed),
            database_up: self.database_up.load(Ordering::Relaxed),
            synced: self.synced.load(Ordering::Relaxed),
        }
    }

    fn push(&self, items: Vec<Item>) {
        if items.is_empty() {
            return;
        }
        let dropped: u64 = {
            let mut buffer = lock(&self.buffer);
            items.into_iter().map(|i| buffer.push(i)).sum()
        };
        if dropped > 0 {
            let total = self.dropped.fetch_add(dropped, Ordering::Relaxed) + dropped;
            // Once per power of two, so a long outage does not flood the log.
            if total.is_power_of_two() {
                tracing::warn!(
                    dropped = total,
                    "history buffer full: dropping the oldest observations; a resync follows"
                );
            }
        }
        self.wake.notify_one();
    }

    fn store_ok(&self) {
        self.database_up.store(true, Ordering::Relaxed);
    }

    /// A store call failed. Only unavailability is an outage (a resync follows it): a store
    /// refusing some content would refuse it again in the resync.
    fn store_failed(&self, error: &super::HistoryError) {
        self.database_up.store(false, Ordering::Relaxed);
        if error.is_unavailable() {
            self.outage.store(true, Ordering::Relaxed);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Watchers

trait TenantResource:
    kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
    + Clone
    + DeserializeOwned
    + Debug
    + Send
    + Sync
    + 'static
{
    const KIND: TenantKind;
    fn observe(&self, observed_at: EpochMillis) -> Option<TenantObservation>;
}

impl TenantResource for NonAdminBackup {
    const KIND: TenantKind = TenantKind::Backup;
    fn observe(&self, observed_at: EpochMillis) -> Option<TenantObservation> {
        observe::observe_backup(self, observed_at)
    }
}

impl TenantResource for NonAdminRestore {
    const KIND: TenantKind = TenantKind::Restore;
    fn observe(&self, observed_at: EpochMillis) -> Option<TenantObservation> {
        observe::observe_restore(self, observed_at)
    }
}

impl TenantResource for NonAdminBackupStorageLocation {
    const KIND: TenantKind = TenantKind::Location;
    fn observe(&self, observed_at: EpochMillis) -> Option<TenantObservation> {
        observe::observe_storage_location(self, observed_at)
    }
}

impl TenantResource for NonAdminDownloadRequest {
    const KIND: TenantKind = TenantKind::Download;
    fn observe(&self, observed_at: EpochMillis) -> Option<TenantObservation> {
        observe::observe_download(self, observed_at)
    }
}

async fn watch_tenant<K: TenantResource>(recorder: Arc<Recorder>) {
    let api: Api<K> = Api::all(recorder.client.clone());
    let mut events = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let shared = &recorder.shared;
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(e) => e,
            Err(e) => {
                tracing::debug!(kind = ?K::KIND, error = %e, "history watch error; retrying");
                continue;
            }
        };
        let observed_at = now_millis();
        let now = Instant::now();
        let items = {
            let mut tracker = lock(&shared.tracker);
            match event {
                watcher::Event::Init => {
                    tracker.list_started(K::KIND);
                    Vec::new()
                }
                watcher::Event::InitApply(o) | watcher::Event::Apply(o) => {
                    let listing = tracker.relisting.contains_key(&K::KIND);
                    shared.observed.fetch_add(1, Ordering::Relaxed);
                    o.observe(observed_at)
                        .map(|obs| tracker.tenant_applied(K::KIND, obs, listing, observed_at))
                        .unwrap_or_default()
                }
                watcher::Event::InitDone => tracker.list_done(K::KIND, observed_at, now),
                watcher::Event::Delete(o) => {
                    shared.observed.fetch_add(1, Ordering::Relaxed);
                    let uid = o.meta().uid.clone();
                    let last = o.observe(observed_at);
                    tracker.tenant_deleted(K::KIND, uid, last, observed_at, now)
                }
            }
        };
        shared.push(items);
    }
}

async fn watch_velero<K>(
    recorder: Arc<Recorder>,
    observe: fn(&K, EpochMillis) -> Option<VeleroObservation>,
) where
    K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Debug
        + Send
        + Sync
        + 'static,
{
    let api: Api<K> = recorder.velero_api();
    let config = watcher::Config::default().labels(&nac_velero_selector());
    let mut events = watcher::watcher(api, config).default_backoff().boxed();
    let shared = &recorder.shared;
    while let Some(event) = events.next().await {
        let object = match event {
            // A deleted object's last state may hold its final phase.
            Ok(
                watcher::Event::InitApply(o) | watcher::Event::Apply(o) | watcher::Event::Delete(o),
            ) => o,
            Ok(watcher::Event::Init | watcher::Event::InitDone) => continue,
            Err(e) => {
                tracing::debug!(error = %e, "history watch of Velero objects failed; retrying");
                continue;
            }
        };
        let observed_at = now_millis();
        let Some(v) = observe(&object, observed_at) else {
            continue;
        };
        shared.observed.fetch_add(1, Ordering::Relaxed);
        let items = lock(&shared.tracker).velero_seen(v, observed_at, Instant::now());
        shared.push(items);
    }
}

/// Keeps the recorder's view of the namespaces (where operations' namespace UIDs come from)
/// and asks for an attribution when the list is in and whenever a namespace appears.
async fn watch_namespaces(recorder: Arc<Recorder>) {
    let api: Api<Namespace> = Api::all(recorder.client.clone());
    let mut events = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let shared = &recorder.shared;
    let mut listing: Vec<(String, NamespaceFacts)> = Vec::new();
    while let Some(event) = events.next().await {
        let event = match event {
            Ok(e) => e,
            Err(e) => {
                tracing::debug!(error = %e, "history watch of namespaces failed; retrying");
                continue;
            }
        };
        let attribute = match event {
            watcher::Event::Init => {
                listing.clear();
                None
            }
            watcher::Event::InitApply(namespace) => {
                listing.extend(NamespaceFacts::of(&namespace));
                None
            }
            watcher::Event::InitDone => {
                let mut namespaces = lock(&shared.namespaces);
                namespaces.replace(std::mem::take(&mut listing));
                Some(namespaces.identities())
            }
            watcher::Event::Apply(namespace) => NamespaceFacts::of(&namespace)
                .and_then(|(name, facts)| lock(&shared.namespaces).applied(name, facts))
                .map(|identity| vec![identity]),
            watcher::Event::Delete(namespace) => {
                if let (Some(name), Some(uid)) = (&namespace.metadata.name, &namespace.metadata.uid)
                {
                    lock(&shared.namespaces).deleted(name, uid);
                }
                None
            }
        };
        if let Some(namespaces) = attribute.filter(|n| !n.is_empty()) {
            shared.push(vec![Item::Attribute(namespaces)]);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The writer

async fn write_loop(recorder: Arc<Recorder>) {
    let shared = &recorder.shared;
    // Know whether the database answers before anything is to be written.
    let _ = recorder.retry("ping", || recorder.store.ping()).await;
    loop {
        // Stopping: only what is buffered is written; the next leader reconciles.
        let stopping = shared.stopping.load(Ordering::SeqCst);
        let wanted = !stopping && lock(&shared.buffer).take_resync();
        let after_outage = !stopping && shared.outage.swap(false, Ordering::Relaxed);
        if wanted || after_outage {
            shared.reconciling.store(true, Ordering::Relaxed);
            let outcome = recorder.reconcile(true).await;
            shared.reconciling.store(false, Ordering::Relaxed);
            match outcome {
                Ok(()) => {
                    shared.resyncs.fetch_add(1, Ordering::Relaxed);
                    shared.synced.store(true, Ordering::Relaxed);
                    tracing::info!("history reconciled from cluster state");
                }
                Err(e) => {
                    tracing::warn!(error = %e, "history reconciliation failed; retrying");
                    lock(&shared.buffer).needs_resync = true;
                    tokio::time::sleep(recorder.config.retry_max_backoff).await;
                    continue;
                }
            }
        }
        let Some(batch) = recorder.next_batch().await else {
            if shared.stopping.load(Ordering::SeqCst) && lock(&shared.buffer).len() == 0 {
                return;
            }
            continue;
        };
        match batch {
            Batch::Record(observations) => recorder.write(observations).await,
            Batch::Deleted(ids, at) => recorder.mark_deleted(ids, at).await,
            Batch::Attribute(namespaces) => recorder.attribute(namespaces).await,
            Batch::Sweep if shared.stopping.load(Ordering::SeqCst) => {
                shared.in_flight.store(0, Ordering::Relaxed);
            }
            Batch::Sweep => {
                shared.in_flight.store(0, Ordering::Relaxed);
                shared.reconciling.store(true, Ordering::Relaxed);
                loop {
                    match recorder.reconcile(false).await {
                        Ok(()) => break,
                        Err(e) => {
                            tracing::warn!(error = %e, "history sweep failed; retrying");
                            tokio::time::sleep(recorder.config.retry_max_backoff).await;
                        }
                    }
                }
                shared.synced.store(true, Ordering::Relaxed);
                shared.reconciling.store(false, Ordering::Relaxed);
            }
        }
    }
}

/// Why a reconciliation could not finish.
#[derive(Debug, thiserror::Error)]
enum ReconcileError {
    #[error("listing {0}: {1}")]
    List(&'static str, kube::Error),
    #[error("the store did not answer")]
    Store,
}

async fn list_all<K>(api: &Api<K>, selector: Option<&str>) -> Result<Vec<K>, kube::Error>
where
    K: kube::Resource + Clone + DeserializeOwned + Debug,
{
    let mut out = Vec::new();
    let mut params = ListParams::default().limit(LIST_PAGE);
    if let Some(s) = selector {
        params = params.labels(s);
    }
    loop {
        let page = api.list(&params).await?;
        out.extend(page.items);
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(out),
        }
    }
}

impl Recorder {
    fn backoff(&self, previous: Option<Duration>) -> Duration {
        match previous {
            None => self.config.retry_min_backoff,
            Some(d) => (d * 2).min(self.config.retry_max_backoff),
        }
    }

    /// Runs a store call until it succeeds; `None` when it keeps failing for another reason
    /// than unavailability (retrying will not help).
    async fn retry<'a, T>(
        &self,
        what: &str,
        mut call: impl FnMut() -> StoreFuture<'a, T>,
    ) -> Option<T> {
        let mut delay = None;
        let mut refusals = 0;
        loop {
            match call().await {
                Ok(v) => {
                    self.shared.store_ok();
                    return Some(v);
                }
                Err(e) => {
                    self.shared.store_failed(&e);
                    if !e.is_unavailable() {
                        refusals += 1;
                        if refusals >= POISON_ATTEMPTS {
                            tracing::error!(
                                error = %e,
                                what,
                                "history store keeps refusing; giving up on this call"
                            );
                            return None;
                        }
                    }
                    let wait = self.backoff(delay);
                    delay = Some(wait);
                    tracing::debug!(
                        error = %e,
                        what,
                        retry_in = ?wait,
                        "history store call failed"
                    );
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    /// The next batch, once there is one: immediately when a full batch waits, else after
    /// letting observations gather for `flush_interval`. Stopping: at once, and `None` when
    /// the buffer is empty.
    async fn next_batch(&self) -> Option<Batch> {
        loop {
            let stopping = self.shared.stopping.load(Ordering::SeqCst);
            let len = lock(&self.shared.buffer).len();
            if len >= self.config.batch_size || (stopping && len > 0) {
                break;
            }
            if len > 0 {
                // A stop cuts the wait short.
                let until = tokio::time::Instant::now() + self.config.flush_interval;
                while !self.shared.stopping.load(Ordering::SeqCst)
                    && tokio::time::Instant::now() < until
                {
                    tokio::select! {
                        () = tokio::time::sleep_until(until) => {}
                        () = self.shared.wake.notified() => {}
                    }
                }
                break;
            }
            if stopping {
                return None;
            }
            self.shared.wake.notified().await;
        }
        let mut buffer = lock(&self.shared.buffer);
        let batch = buffer.take(self.config.batch_size)?;
        let size = match &batch {
            Batch::Record(o) => o.len(),
            _ => 1,
        };
        self.shared.in_flight.store(size as u64, Ordering::Relaxed);
        Some(batch)
    }

    /// Writes observations, retrying while the database is down. A batch the store keeps
    /// refusing is split to find the refused observation, which alone is dropped. Operations
    /// get their namespace's UID here, from the namespaces known now.
    async fn write(&self, mut observations: Vec<Observation>) {
        lock(&self.shared.namespaces).fill(&mut observations);
        let mut todo = vec![observations];
        while let Some(batch) = todo.pop() {
            if batch.is_empty() {
                continue;
            }
            let store = &self.store;
            match self.retry("record", || store.record(batch.clone())).await {
                Some(new) => {
                    self.shared.written.fetch_add(new, Ordering::Relaxed);
                    self.shared.batches.fetch_add(1, Ordering::Relaxed);
                }
                None if batch.len() > 1 => {
                    let mut first = batch;
                    let second = first.split_off(first.len() / 2);
                    // Popped last-in first: the first half goes first, keeping the order.
                    todo.push(second);
                    todo.push(first);
                }
                None => {
                    self.shared.dropped.fetch_add(1, Ordering::Relaxed);
                    tracing::error!(
                        operation = %batch[0].operation.id,
                        "history store refused an observation; dropped"
                    );
                }
            }
            let left: usize = todo.iter().map(Vec::len).sum();
            self.shared.in_flight.store(left as u64, Ordering::Relaxed);
        }
        self.shared.in_flight.store(0, Ordering::Relaxed);
    }

    /// Attributes operations recorded without a namespace UID to `namespaces`.
    async fn attribute(&self, namespaces: Vec<NamespaceIdentity>) {
        let store = &self.store;
        match self
            .retry("attribute_namespaces", || {
                store.attribute_namespaces(namespaces.clone())
            })
            .await
        {
            Some(0) => {}
            Some(attributed) => {
                tracing::info!(attributed, "operations attributed to their namespace");
            }
            None => {
                self.shared.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.shared.in_flight.store(0, Ordering::Relaxed);
    }

    async fn mark_deleted(&self, ids: Vec<String>, at: EpochMillis) {
        let store = &self.store;
        if self
            .retry("mark_deleted", || store.mark_deleted(ids.clone(), at))
            .await
            .is_none()
        {
            self.shared.dropped.fetch_add(1, Ordering::Relaxed);
        }
        self.shared.in_flight.store(0, Ordering::Relaxed);
    }

    /// Brings the store in line with the cluster: with `record`, records everything every
    /// watched object shows now (re-adding whatever an outage lost); then marks deleted the
    /// operations the store thinks live that the cluster no longer has.
    ///
    /// The store's live operations are read before the cluster is listed, so an operation
    /// recorded meanwhile (the gateway notes requesters) is never mistaken for a vanished one.
    async fn reconcile(&self, record: bool) -> Result<(), ReconcileError> {
        let store = &self.store;
        let live = self
            .retry("live_operation_ids", || store.live_operation_ids())
            .await
            .ok_or(ReconcileError::Store)?;
        let observed_at = now_millis();
        let all = |what: &'static str| move |e: kube::Error| ReconcileError::List(what, e);
        let nabs = list_all(&Api::<NonAdminBackup>::all(self.client.clone()), None)
            .await
            .map_err(all("NonAdminBackups"))?;
        let nars = list_all(&Api::<NonAdminRestore>::all(self.client.clone()), None)
            .await
            .map_err(all("NonAdminRestores"))?;
        let nabsls = list_all(
            &Api::<NonAdminBackupStorageLocation>::all(self.client.clone()),
            None,
        )
        .await
        .map_err(all("NonAdminBackupStorageLocations"))?;
        let nadrs = list_all(
            &Api::<NonAdminDownloadRequest>::all(self.client.clone()),
            None,
        )
        .await
        .map_err(all("NonAdminDownloadRequests"))?;
        let mut tenants: Vec<TenantObservation> = Vec::new();
        tenants.extend(nabs.iter().filter_map(|o| o.observe(observed_at)));
        tenants.extend(nars.iter().filter_map(|o| o.observe(observed_at)));
        tenants.extend(nabsls.iter().filter_map(|o| o.observe(observed_at)));
        tenants.extend(nadrs.iter().filter_map(|o| o.observe(observed_at)));
        let present: HashSet<String> = tenants.iter().flat_map(|t| t.ids()).collect();

        if record {
            let selector = nac_velero_selector();
            let backups = list_all(&self.velero_api::<Backup>(), Some(&selector))
                .await
                .map_err(all("Velero Backups"))?;
            let restores = list_all(&self.velero_api::<Restore>(), Some(&selector))
                .await
                .map_err(all("Velero Restores"))?;
            let requests = list_all(&self.velero_api::<DeleteBackupRequest>(), Some(&selector))
                .await
                .map_err(all("Velero DeleteBackupRequests"))?;
            let mut velero: Vec<VeleroObservation> = Vec::new();
            velero.extend(
                backups
                    .iter()
                    .filter_map(|b| observe::observe_velero_backup(b, observed_at)),
            );
            velero.extend(
                restores
                    .iter()
                    .filter_map(|r| observe::observe_velero_restore(r, observed_at)),
            );
            velero.extend(
                requests
                    .iter()
                    .filter_map(|r| observe::observe_delete_request(r, observed_at)),
            );
            self.shared
                .observed
                .fetch_add((tenants.len() + velero.len()) as u64, Ordering::Relaxed);
            let observations: Vec<Observation> = {
                let mut tracker = lock(&self.shared.tracker);
                let mut out: Vec<Observation> = tenants
                    .into_iter()
                    .flat_map(|t| tracker.resync_tenant(t, observed_at))
                    .collect();
                out.extend(
                    velero
                        .into_iter()
                        .filter_map(|v| tracker.resync_velero(v, observed_at)),
                );
                out
            };
            let size = self.config.batch_size.max(1);
            let mut rest = observations;
            while !rest.is_empty() {
                let tail = rest.split_off(rest.len().min(size));
                self.write(rest).await;
                rest = tail;
            }
            // An attribution the overflowing buffer dropped is made good here.
            let namespaces = lock(&self.shared.namespaces).identities();
            if !namespaces.is_empty() {
                self.attribute(namespaces).await;
            }
        }

        let gone: Vec<String> = live
            .into_iter()
            .map(|(id, _)| id)
            .filter(|id| !present.contains(id))
            .collect();
        if !gone.is_empty() {
            tracing::info!(
                count = gone.len(),
                "marking operations the cluster no longer has as deleted"
            );
            for chunk in gone.chunks(self.config.batch_size.max(1)) {
                self.mark_deleted(chunk.to_vec(), now_millis()).await;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::history::model::{OperationKind, OperationRecord, Transition};

    fn obs(id: &str, fact: &str) -> Observation {
        Observation {
            operation: OperationRecord {
                id: id.to_string(),
                namespace: "team-a".into(),
                kind: Some(OperationKind::Backup),
                ..Default::default()
            },
            transitions: vec![Transition {
                operation_id: id.to_string(),
                namespace: "team-a".into(),
                at: 1,
                attribute: "veleroPhase".into(),
                value: fact.to_string(),
                reason: None,
                message: None,
                dedup: String::new(),
            }],
        }
    }

    fn ids(batch: &Batch) -> Vec<String> {
        match batch {
            Batch::Record(o) => o.iter().map(|o| o.operation.id.clone()).collect(),
            other => panic!("not a record batch: {other:?}"),
        }
    }

    #[test]
    fn a_full_buffer_drops_the_oldest_counts_and_asks_for_a_resync() {
        let mut b = Buffer::new(3);
        for i in 0..3 {
            assert_eq!(b.push(Item::Observe(obs(&format!("o{i}"), "New"))), 0);
        }
        assert!(!b.take_resync());
        assert_eq!(b.push(Item::Observe(obs("o3", "New"))), 1);
        assert_eq!(b.push(Item::Observe(obs("o4", "New"))), 1);
        assert_eq!(b.len(), 3, "never grows past its capacity");
        assert_eq!(b.dropped, 2);
        assert!(b.take_resync());
        assert!(!b.take_resync(), "asked once");
        let batch = b.take(10).unwrap();
        assert_eq!(ids(&batch), vec!["o2", "o3", "o4"], "the oldest went first");
        assert!(b.take(10).is_none());
    }

    #[test]
    fn batches_fold_one_operation_keep_every_fact_and_stop_at_deletions() {
        let mut b = Buffer::new(100);
        b.push(Item::Observe(obs("a", "New")));
        b.push(Item::Observe(obs("b", "New")));
        b.push(Item::Observe(obs("a", "InProgress")));
        b.push(Item::Deleted(vec!["b".into()], 7));
        b.push(Item::Observe(obs("c", "New")));
        b.push(Item::Sweep);
        let first = b.take(10).unwrap();
        assert_eq!(ids(&first), vec!["a", "b"]);
        let Batch::Record(first) = first else {
            unreachable!()
        };
        let a: Vec<&str> = first[0]
            .transitions
            .iter()
            .map(|t| t.value.as_str())
            .collect();
        assert_eq!(a, vec!["New", "InProgress"]);
        assert_eq!(b.take(10), Some(Batch::Deleted(vec!["b".into()], 7)));
        assert_eq!(ids(&b.take(10).unwrap()), vec!["c"]);
        assert_eq!(b.take(10), Some(Batch::Sweep));
        assert_eq!(b.take(10), None);
        // At most `max` observations per batch.
        for i in 0..5 {
            b.push(Item::Observe(obs(&format!("x{i}"), "New")));
        }
        assert_eq!(ids(&b.take(2).unwrap()).len(), 2);
        assert_eq!(b.len(), 3);
    }

    fn tenant(uid: &str, nacuuid: Option<&str>) -> TenantObservation {
        let nab: NonAdminBackup = serde_json::from_value(serde_json::json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
            "metadata": {"name": format!("n-{uid}"), "namespace": "team-a", "uid": uid,
                         "creationTimestamp": "2025-03-01T10:00:00Z"},
            "spec": {"backupSpec": {}},
            "status": {"phase": "Created", "veleroBackup": {"nacuuid": nacuuid}}
        }))
        .unwrap();
        observe::observe_backup(&nab, 1_000).unwrap()
    }

    fn velero(nacuuid: &str, namespace: &str, phase: &str) -> VeleroObservation {
        let b: Backup = serde_json::from_value(serde_json::json!({
            "apiVersion": "velero.io/v1", "kind": "Backup",
            "metadata": {"name": nacuuid, "namespace": "openshift-adp",
                "labels": {labels::NAB_ORIGIN_NACUUID: nacuuid},
                "annotations": {labels::NAB_ORIGIN_NAMESPACE_ANNOTATION: namespace}},
            "spec": {}, "status": {"phase": phase}
        }))
        .unwrap();
        observe::observe_velero_backup(&b, 2_000).unwrap()
    }

    fn observed(items: &[Item]) -> Vec<(String, Option<String>)> {
        items
            .iter()
            .filter_map(|i| match i {
                Item::Observe(o) => Some((o.operation.id.clone(), o.operation.phase.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn velero_observations_wait_for_their_tenant_object() {
        let mut t = Tracker::new(&RecorderConfig::default());
        let now = Instant::now();
        assert!(
            t.velero_seen(velero("n1", "team-a", "New"), 2_000, now)
                .is_empty()
        );
        assert!(
            t.velero_seen(velero("n1", "team-a", "Queued"), 2_100, now)
                .is_empty()
        );
        assert_eq!(t.pending_len, 2);
        let items = t.tenant_applied(TenantKind::Backup, tenant("u1", Some("n1")), false, 3_000);
        assert_eq!(
            observed(&items),
            vec![
                ("u1".to_string(), Some("New".to_string())),
                ("u1".to_string(), Some("Queued".to_string())),
                ("u1".to_string(), Some("Created".to_string())),
            ]
        );
        assert_eq!(t.pending_len, 0);
        // Known now: resolved at once; a repeat sends nothing.
        let items = t.velero_seen(velero("n1", "team-a", "InProgress"), 4_000, now);
        assert_eq!(
            observed(&items),
            vec![("u1".to_string(), Some("InProgress".to_string()))]
        );
        assert!(
            t.velero_seen(velero("n1", "team-a", "InProgress"), 4_100, now)
                .is_empty()
        );
        // Another namespace's object with the same NACUUID never resolves to it.
        assert!(
            t.velero_seen(velero("n1", "team-b", "Completed"), 4_200, now)
                .is_empty()
        );
        assert_eq!(t.pending_len, 1);
    }

    #[test]
    fn pending_observations_are_bounded_in_number_and_time() {
        let config = RecorderConfig {
            pending_capacity: 3,
            pending_ttl: Duration::from_secs(10),
            ..Default::default()
        };
        let mut t = Tracker::new(&config);
        let start = Instant::now();
        for i in 0..3 {
            t.velero_seen(velero(&format!("n{i}"), "team-a", "New"), 0, start);
        }
        t.velero_seen(velero("n9", "team-a", "New"), 0, start);
        assert_eq!(
            (t.pending_len, t.unresolved),
            (3, 1),
            "full: the newcomer is given up"
        );
        let later = start + Duration::from_secs(11);
        t.velero_seen(velero("n8", "team-a", "New"), 0, later);
        assert_eq!(t.pending_len, 1, "expired ones made room");
        assert_eq!(t.unresolved, 4);
        for _ in 0..PENDING_PER_KEY + 2 {
            t.velero_seen(velero("n8", "team-a", "New"), 0, later);
        }
        assert_eq!(
            t.pending
                .get(&velero("n8", "team-a", "New").key)
                .map(VecDeque::len),
            Some(3)
        );
    }

    #[test]
    fn a_relist_reveals_deletions_and_the_first_full_list_sweeps() {
        let mut t = Tracker::new(&RecorderConfig::default());
        let now = Instant::now();
        t.list_started(TenantKind::Backup);
        t.tenant_applied(TenantKind::Backup, tenant("u1", Some("n1")), true, 0);
        t.tenant_applied(TenantKind::Backup, tenant("u2", None), true, 0);
        assert_eq!(t.list_done(TenantKind::Backup, 5, now), vec![]);
        for kind in [TenantKind::Restore, TenantKind::Location] {
            t.list_started(kind);
            assert_eq!(t.list_done(kind, 5, now), vec![]);
        }
        t.list_started(TenantKind::Download);
        assert_eq!(t.list_done(TenantKind::Download, 5, now), vec![Item::Sweep]);
        // The watch restarts and u1 is gone from the new list: it vanished unseen.
        t.list_started(TenantKind::Backup);
        t.tenant_applied(TenantKind::Backup, tenant("u2", None), true, 0);
        assert_eq!(
            t.list_done(TenantKind::Backup, 9, now),
            vec![Item::Deleted(vec!["u1".into()], 9)],
            "no second sweep"
        );
        // Its Velero object still resolves during the grace period.
        assert_eq!(
            observed(&t.velero_seen(velero("n1", "team-a", "Deleting"), 10, now)).len(),
            1
        );
        // A watched deletion marks the object's operations.
        let items = t.tenant_deleted(TenantKind::Backup, Some("u2".into()), None, 11, now);
        assert_eq!(items, vec![Item::Deleted(vec!["u2".into()], 11)]);
    }

    fn facts(uid: &str, created_at: EpochMillis, deleting: Option<EpochMillis>) -> NamespaceFacts {
        NamespaceFacts {
            uid: uid.to_string(),
            created_at,
            deleting_since: deleting,
        }
    }

    fn created(namespace: &str, created_at: EpochMillis) -> Observation {
        let mut o = obs(&format!("{namespace}-{created_at}"), "New");
        o.operation.namespace = namespace.to_string();
        o.operation.created_at = created_at;
        o
    }

    fn uids(batch: &[Observation]) -> Vec<&str> {
        batch
            .iter()
            .map(|o| o.operation.namespace_uid.as_str())
            .collect()
    }

    #[test]
    fn operations_get_the_uid_of_the_namespace_that_can_own_them() {
        let mut n = Namespaces::default();
        n.replace([("team-a".to_string(), facts("uid-a", 1_000, None))]);
        let mut batch = vec![
            created("team-a", 2_000),
            // Older than the namespace: a predecessor's.
            created("team-a", 500),
            // No creation time, or a namespace not seen (yet): left for an attribution.
            created("team-a", 0),
            created("team-b", 2_000),
        ];
        n.fill(&mut batch);
        assert_eq!(uids(&batch), vec!["uid-a", "", "", ""]);
        // A UID already known is never replaced.
        let mut known = vec![created("team-a", 2_000)];
        known[0].operation.namespace_uid = "uid-before".into();
        n.fill(&mut known);
        assert_eq!(uids(&known), vec!["uid-before"]);

        // Being deleted: what was made after that is a successor's.
        assert_eq!(
            n.applied("team-a".into(), facts("uid-a", 1_000, Some(3_000))),
            None,
            "not new"
        );
        let mut batch = vec![created("team-a", 2_500), created("team-a", 4_000)];
        n.fill(&mut batch);
        assert_eq!(uids(&batch), vec!["uid-a", ""]);

        // Gone, and created again: the successor asks for an attribution of its own, and a
        // late deletion of the predecessor does not remove it.
        n.deleted("team-a", "uid-a");
        assert!(n.by_name.is_empty());
        let successor = n.applied("team-a".into(), facts("uid-a2", 5_000, None));
        assert_eq!(
            successor,
            Some(NamespaceIdentity {
                name: "team-a".into(),
                uid: "uid-a2".into(),
                created_at: 5_000,
            })
        );
        n.deleted("team-a", "uid-a");
        let mut batch = vec![created("team-a", 4_000), created("team-a", 6_000)];
        n.fill(&mut batch);
        assert_eq!(uids(&batch), vec!["", "uid-a2"]);
        assert_eq!(n.identities().len(), 1);
    }

    #[test]
    fn namespace_facts_come_from_the_object() {
        let ns: Namespace = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "team-a", "uid": "uid-a",
                         "creationTimestamp": "2025-03-01T10:00:00Z",
                         "deletionTimestamp": "2025-03-02T10:00:00Z"}
        }))
        .unwrap();
        let (name, f) = NamespaceFacts::of(&ns).unwrap();
        assert_eq!(name, "team-a");
        assert_eq!(f.uid, "uid-a");
        assert_eq!(f.deleting_since.unwrap() - f.created_at, 24 * 3600 * 1000);
        let nameless: Namespace =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "x"}})).unwrap();
        assert!(NamespaceFacts::of(&nameless).is_none());
    }

    #[test]
    fn attributions_are_batches_of_their_own_in_buffer_order() {
        let mut b = Buffer::new(100);
        let team_a = NamespaceIdentity {
            name: "team-a".into(),
            uid: "uid-a".into(),
            created_at: 1,
        };
        b.push(Item::Observe(obs("a", "New")));
        b.push(Item::Attribute(vec![team_a.clone()]));
        b.push(Item::Observe(obs("b", "New")));
        assert_eq!(ids(&b.take(10).unwrap()), vec!["a"]);
        assert_eq!(b.take(10), Some(Batch::Attribute(vec![team_a])));
        assert_eq!(ids(&b.take(10).unwrap()), vec!["b"]);
    }

    #[test]
    fn retired_resolutions_expire() {
        let config = RecorderConfig {
            deleted_grace: Duration::from_secs(1),
            ..Default::default()
        };
        let mut t = Tracker::new(&config);
        let now = Instant::now();
        t.tenant_applied(TenantKind::Backup, tenant("u1", Some("n1")), false, 0);
        t.tenant_deleted(TenantKind::Backup, Some("u1".into()), None, 1, now);
        let later = now + Duration::from_secs(10);
        assert!(
            t.velero_seen(velero("n1", "team-a", "Deleting"), 2, later)
                .is_empty()
        );
        assert_eq!(t.pending_len, 1, "waits again, as for an unknown object");
    }
}
