//! The gateway's watch caches: NonAdminBackups, Restores, BackupStorageLocations and Schedules
//! of every namespace, the namespaces themselves, the admin policy's two sources (NAC's ConfigMap
//! and the DataProtectionApplications' `spec.nonAdmin`), and the Velero Backups and Restores of
//! the OADP namespace feeding a [`QueueIndex`]. Reads are answered from here (after the caller's
//! access check); every change of a tenant object is published to the [`EventLog`] for live
//! streams.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde::Serialize;

use crate::api::nonadmin::{
    NonAdminBackup, NonAdminBackupStorageLocation, NonAdminRestore, NonAdminSchedule,
};
use crate::api::oadp::{PolicySources, watch_policy_sources};
use crate::api::velero::{Backup, Restore};
use crate::gateway::events::{ChangeAction, EventLog};
use crate::gateway::resources::TenantKind;
use crate::policy::{EffectivePolicy, NacPolicy};
use crate::queue::{Entry, QueueIndex, QueueKind};

/// Name of NAC's policy ConfigMap and how often DPAs are looked for again when they cannot be
/// read: the same for the controllers and the gateway.
pub use crate::api::oadp::{DPA_RECHECK, POLICY_CONFIG_MAP};

/// An object as the gateway shows it: its JSON without `metadata.managedFields`.
pub fn present<K: Serialize>(object: &K) -> serde_json::Value {
    let mut value = serde_json::to_value(object).unwrap_or(serde_json::Value::Null);
    if let Some(metadata) = value
        .get_mut("metadata")
        .and_then(serde_json::Value::as_object_mut)
    {
        metadata.remove("managedFields");
    }
    value
}

/// Objects' presented JSON ([`present`]), serialized once per resourceVersion: a warm list or
/// get copies these bytes instead of turning every unchanged object into a `Value` and back on
/// every request (that was most of a list's cost). Keyed by UID, checked against the
/// resourceVersion; bounded by keeping two generations, so entries of deleted objects age out.
pub struct PresentedJson {
    generations: Mutex<PresentedGenerations>,
    capacity: usize,
}

#[derive(Default)]
struct PresentedGenerations {
    current: HashMap<String, (String, bytes::Bytes)>,
    previous: HashMap<String, (String, bytes::Bytes)>,
}

impl PresentedGenerations {
    fn take(&mut self, uid: &str, resource_version: &str) -> Option<bytes::Bytes> {
        if let Some((version, bytes)) = self.current.get(uid)
            && version == resource_version
        {
            return Some(bytes.clone());
        }
        let (version, bytes) = self.previous.remove(uid)?;
        if version != resource_version {
            return None;
        }
        self.current
            .insert(uid.to_string(), (version, bytes.clone()));
        Some(bytes)
    }
}

fn uid_and_version<K: kube::Resource>(object: &K) -> Option<(&str, &str)> {
    let meta = object.meta();
    Some((meta.uid.as_deref()?, meta.resource_version.as_deref()?))
}

impl Default for PresentedJson {
    fn default() -> Self {
        // Two generations of this many objects: the 10k NABs of a large cluster and their
        // neighbours stay warm.
        PresentedJson::with_capacity(50_000)
    }
}

impl PresentedJson {
    /// A cache keeping at least the last `capacity` objects served.
    pub fn with_capacity(capacity: usize) -> Self {
        PresentedJson {
            generations: Mutex::new(PresentedGenerations::default()),
            capacity: capacity.max(1),
        }
    }

    /// The presented JSON of each object, in order: from the cache when its UID and
    /// resourceVersion were serialized before, else serialized now (outside the lock) and kept.
    /// Objects without a UID or resourceVersion are serialized every time.
    pub fn of<K: kube::Resource + Serialize>(&self, objects: &[&K]) -> Vec<bytes::Bytes> {
        let mut found: Vec<Option<bytes::Bytes>> = match self.generations.lock() {
            Ok(mut generations) => objects
                .iter()
                .map(|object| {
                    let (uid, version) = uid_and_version(*object)?;
                    generations.take(uid, version)
                })
                .collect(),
            Err(_) => vec![None; objects.len()],
        };
        let mut made = Vec::new();
        for (slot, object) in found.iter_mut().zip(objects) {
            if slot.is_none() {
                let bytes =
                    bytes::Bytes::from(serde_json::to_vec(&present(*object)).unwrap_or_default());
                if let Some((uid, version)) = uid_and_version(*object) {
                    made.push((uid.to_string(), version.to_string(), bytes.clone()));
                }
                *slot = Some(bytes);
            }
        }
        if !made.is_empty()
            && let Ok(mut generations) = self.generations.lock()
        {
            for (uid, version, bytes) in made {
                if generations.current.len() >= self.capacity {
                    generations.previous = std::mem::take(&mut generations.current);
                }
                generations.current.insert(uid, (version, bytes));
            }
        }
        found.into_iter().flatten().collect()
    }
}

fn resource_version_number<K: kube::Resource>(object: &K) -> Option<u64> {
    object.meta().resource_version.as_deref()?.parse().ok()
}

/// Objects of one kind by namespace and name.
pub struct NamespacedCache<K> {
    objects: RwLock<HashMap<String, BTreeMap<String, Arc<K>>>>,
    synced: AtomicBool,
}

impl<K> Default for NamespacedCache<K> {
    fn default() -> Self {
        NamespacedCache {
            objects: RwLock::new(HashMap::new()),
            synced: AtomicBool::new(false),
        }
    }
}

impl<K: kube::Resource + Clone> NamespacedCache<K> {
    /// Whether the first full list has arrived.
    pub fn is_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    /// The object `name` in `namespace`.
    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<K>> {
        self.objects.read().ok()?.get(namespace)?.get(name).cloned()
    }

    /// Up to `limit` objects of `namespace` after the name `after`, in name order, that pass
    /// `keep`; and whether more passing objects follow.
    pub fn page(
        &self,
        namespace: &str,
        after: Option<&str>,
        limit: usize,
        keep: impl Fn(&K) -> bool,
    ) -> (Vec<Arc<K>>, bool) {
        let Ok(objects) = self.objects.read() else {
            return (Vec::new(), false);
        };
        let Some(by_name) = objects.get(namespace) else {
            return (Vec::new(), false);
        };
        let range: Box<dyn Iterator<Item = (&String, &Arc<K>)>> =
            match after {
                Some(after) => Box::new(by_name.range::<str, _>((
                    std::ops::Bound::Excluded(after),
                    std::ops::Bound::Unbounded,
                ))),
                None => Box::new(by_name.iter()),
            };
        let mut page = Vec::new();
        let mut more = false;
        for (_, object) in range {
            if !keep(object) {
                continue;
            }
            if page.len() == limit {
                more = true;
                break;
            }
            page.push(object.clone());
        }
        (page, more)
    }

    /// Every object of `namespace` in name order.
    pub fn all_in(&self, namespace: &str) -> Vec<Arc<K>> {
        self.page(namespace, None, usize::MAX, |_| true).0
    }

    /// Every object, any namespace.
    pub fn all(&self) -> Vec<Arc<K>> {
        self.objects
            .read()
            .map(|objects| {
                objects
                    .values()
                    .flat_map(|by_name| by_name.values().cloned())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn key(object: &K) -> (String, String) {
        let meta = object.meta();
        (
            meta.namespace.clone().unwrap_or_default(),
            meta.name.clone().unwrap_or_default(),
        )
    }

    /// Stores `object`; says whether it was added or changed (`None`: same resourceVersion).
    pub fn upsert(&self, object: K) -> Option<(ChangeAction, Arc<K>)> {
        let (namespace, name) = Self::key(&object);
        let mut objects = self.objects.write().ok()?;
        let by_name = objects.entry(namespace).or_default();
        let object = Arc::new(object);
        match by_name.insert(name, object.clone()) {
            Some(old) if old.meta().resource_version == object.meta().resource_version => None,
            Some(_) => Some((ChangeAction::Modified, object)),
            None => Some((ChangeAction::Added, object)),
        }
    }

    /// Stores `object` unless the cache already holds the same or a newer version (a write's
    /// answer, so the writer reads its own write before the watch delivers it).
    pub fn upsert_if_newer(&self, object: K) -> Option<(ChangeAction, Arc<K>)> {
        let (namespace, name) = Self::key(&object);
        let newer = match self.get(&namespace, &name) {
            Some(held) => match (
                resource_version_number(&object),
                resource_version_number(&*held),
            ) {
                (Some(new), Some(old)) => new > old,
                _ => false,
            },
            None => true,
        };
        if newer { self.upsert(object) } else { None }
    }

    /// Removes `object`; returns what was held.
    pub fn remove(&self, object: &K) -> Option<Arc<K>> {
        let (namespace, name) = Self::key(object);
        let mut objects = self.objects.write().ok()?;
        let by_name = objects.get_mut(&namespace)?;
        let removed = by_name.remove(&name);
        if by_name.is_empty() {
            objects.remove(&namespace);
        }
        removed
    }

    /// Replaces everything with a fresh list; returns the differences.
    pub fn replace_all(&self, fresh: Vec<K>) -> Vec<(ChangeAction, Arc<K>)> {
        let mut next: HashMap<String, BTreeMap<String, Arc<K>>> = HashMap::new();
        for object in fresh {
            let (namespace, name) = Self::key(&object);
            next.entry(namespace)
                .or_default()
                .insert(name, Arc::new(object));
        }
        let mut changes = Vec::new();
        let Ok(mut objects) = self.objects.write() else {
            return changes;
        };
        for (namespace, by_name) in &next {
            let held = objects.get(namespace);
            for (name, object) in by_name {
                match held.and_then(|held| held.get(name)) {
                    None => changes.push((ChangeAction::Added, object.clone())),
                    Some(old) if old.meta().resource_version != object.meta().resource_version => {
                        changes.push((ChangeAction::Modified, object.clone()))
                    }
                    Some(_) => {}
                }
            }
        }
        for (namespace, by_name) in objects.iter() {
            for (name, object) in by_name {
                if next
                    .get(namespace)
                    .is_none_or(|fresh| !fresh.contains_key(name))
                {
                    changes.push((ChangeAction::Deleted, object.clone()));
                }
            }
        }
        *objects = next;
        self.synced.store(true, Ordering::Release);
        changes
    }
}

/// Recent durations of finished Velero operations, per kind, for queue ETAs (cluster-wide
/// averages: they say nothing about any one tenant).
#[derive(Debug, Default)]
pub struct DurationStats {
    samples: HashMap<QueueKind, VecDeque<(String, f64)>>,
}

impl DurationStats {
    const KEEP: usize = 50;

    /// Records that the operation `name` of `kind` took `seconds` (once per name).
    pub fn record(&mut self, kind: QueueKind, name: &str, seconds: f64) {
        let samples = self.samples.entry(kind).or_default();
        if samples.iter().any(|(known, _)| known == name) {
            return;
        }
        if samples.len() >= Self::KEEP {
            samples.pop_front();
        }
        samples.push_back((name.to_string(), seconds.max(0.0)));
    }

    /// Mean duration of `kind` in seconds, once there is history.
    pub fn mean(&self, kind: QueueKind) -> Option<f64> {
        let samples = self.samples.get(&kind)?;
        (!samples.is_empty())
            .then(|| samples.iter().map(|(_, s)| s).sum::<f64>() / samples.len() as f64)
    }
}

/// Everything the gateway watches.
pub struct WatchCaches {
    /// NonAdminBackups.
    pub backups: NamespacedCache<NonAdminBackup>,
    /// NonAdminRestores.
    pub restores: NamespacedCache<NonAdminRestore>,
    /// NonAdminBackupStorageLocations.
    pub storage_locations: NamespacedCache<NonAdminBackupStorageLocation>,
    /// NonAdminSchedules.
    pub schedules: NamespacedCache<NonAdminSchedule>,
    /// Namespaces (all under the key "").
    pub namespaces: NamespacedCache<Namespace>,
    /// Queue positions of Velero Backups and Restores.
    pub queue: RwLock<QueueIndex>,
    queue_synced: [AtomicBool; 2],
    /// Durations of finished Velero operations.
    pub durations: Mutex<DurationStats>,
    /// The admin policy.
    pub policy: RwLock<NacPolicy>,
    policy_synced: AtomicBool,
    /// Changes of tenant objects.
    pub events: EventLog,
}

impl std::fmt::Debug for WatchCaches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchCaches")
            .field("synced", &self.is_synced())
            .finish_non_exhaustive()
    }
}

/// A kind with a cache in [`WatchCaches`].
pub trait Cached: TenantKind {
    /// Its cache.
    fn cache(caches: &WatchCaches) -> &NamespacedCache<Self>;
}

impl Cached for NonAdminBackup {
    fn cache(caches: &WatchCaches) -> &NamespacedCache<Self> {
        &caches.backups
    }
}
impl Cached for NonAdminRestore {
    fn cache(caches: &WatchCaches) -> &NamespacedCache<Self> {
        &caches.restores
    }
}
impl Cached for NonAdminBackupStorageLocation {
    fn cache(caches: &WatchCaches) -> &NamespacedCache<Self> {
        &caches.storage_locations
    }
}
impl Cached for NonAdminSchedule {
    fn cache(caches: &WatchCaches) -> &NamespacedCache<Self> {
        &caches.schedules
    }
}

impl WatchCaches {
    /// Empty caches; `event_capacity` events are kept for resuming streams.
    pub fn new(event_capacity: usize) -> Self {
        WatchCaches {
            backups: NamespacedCache::default(),
            restores: NamespacedCache::default(),
            storage_locations: NamespacedCache::default(),
            schedules: NamespacedCache::default(),
            namespaces: NamespacedCache::default(),
            queue: RwLock::new(QueueIndex::new()),
            queue_synced: [AtomicBool::new(false), AtomicBool::new(false)],
            durations: Mutex::new(DurationStats::default()),
            policy: RwLock::new(NacPolicy::default()),
            policy_synced: AtomicBool::new(false),
            events: EventLog::new(event_capacity),
        }
    }

    /// Whether every cache has its first full list.
    pub fn is_synced(&self) -> bool {
        self.backups.is_synced()
            && self.restores.is_synced()
            && self.storage_locations.is_synced()
            && self.schedules.is_synced()
            && self.namespaces.is_synced()
            && self.queue_synced.iter().all(|s| s.load(Ordering::Acquire))
            && self.policy_synced.load(Ordering::Acquire)
    }

    /// Waits until synced or `timeout`; returns whether synced.
    pub async fn wait_synced(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        while !self.is_synced() {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        true
    }

    /// The policy in force for `namespace` (its labels select per-namespace rules).
    pub fn effective_policy(&self, namespace: &str) -> EffectivePolicy {
        let labels = self
            .namespaces
            .get("", namespace)
            .and_then(|ns| ns.metadata.labels.clone())
            .unwrap_or_default();
        self.policy
            .read()
            .map(|policy| policy.for_namespace(&labels))
            .unwrap_or_default()
    }

    /// Keeps every cache in step with the cluster until dropped. `client` is the gateway's
    /// own (read-only) identity.
    pub async fn run(self: Arc<Self>, client: kube::Client, oadp_namespace: String) {
        tokio::join!(
            feed_tenant::<NonAdminBackup>(self.clone(), Api::all(client.clone())),
            feed_tenant::<NonAdminRestore>(self.clone(), Api::all(client.clone())),
            feed_tenant::<NonAdminBackupStorageLocation>(self.clone(), Api::all(client.clone())),
            feed_tenant::<NonAdminSchedule>(self.clone(), Api::all(client.clone())),
            feed_namespaces(self.clone(), Api::all(client.clone())),
            feed_queue(
                self.clone(),
                Api::<Backup>::namespaced(client.clone(), &oadp_namespace),
                QueueKind::Backup,
            ),
            feed_queue(
                self.clone(),
                Api::<Restore>::namespaced(client.clone(), &oadp_namespace),
                QueueKind::Restore,
            ),
            feed_policy(self.clone(), client.clone(), oadp_namespace.clone()),
        );
    }

    fn publish<K: TenantKind>(&self, action: ChangeAction, object: &K) {
        let meta = object.meta();
        self.events.publish(
            meta.namespace.as_deref().unwrap_or_default(),
            K::RESOURCE,
            action,
            meta.name.as_deref().unwrap_or_default(),
            Arc::new(present(object)),
        );
    }

    /// Records a write's answer so the writer reads its own write at once.
    pub fn record_write<K: Cached>(&self, object: K) {
        if let Some((action, object)) = K::cache(self).upsert_if_newer(object) {
            self.publish(action, &*object);
        }
    }
}

async fn feed_tenant<K: Cached>(caches: Arc<WatchCaches>, api: Api<K>) {
    let mut stream = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut initial = Vec::new();
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(event) => event,
            // A real API server expires a watch's resourceVersion (410 Gone) after etcd
            // compaction: the watcher lists again, which is routine, not a failure.
            Err(watcher::Error::WatchError(status)) if status.code == 410 => {
                tracing::debug!(
                    resource = K::RESOURCE.plural(),
                    "watch expired; listing again"
                );
                continue;
            }
            Err(error) => {
                tracing::warn!(resource = K::RESOURCE.plural(), error = %error, "watch failed; retrying");
                continue;
            }
        };
        let cache = K::cache(&caches);
        match event {
            Event::Init => initial.clear(),
            Event::InitApply(object) => initial.push(object),
            Event::InitDone => {
                for (action, object) in cache.replace_all(std::mem::take(&mut initial)) {
                    caches.publish(action, &*object);
                }
            }
            Event::Apply(object) => {
                if let Some((action, object)) = cache.upsert(object) {
                    caches.publish(action, &*object);
                }
            }
            Event::Delete(object) => {
                cache.remove(&object);
                caches.publish(ChangeAction::Deleted, &object);
            }
        }
    }
}

async fn feed_namespaces(caches: Arc<WatchCaches>, api: Api<Namespace>) {
    let mut stream = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut initial = Vec::new();
    while let Some(event) = stream.next().await {
        let Ok(event) = event else { continue };
        match event {
            Event::Init => initial.clear(),
            Event::InitApply(object) => initial.push(object),
            Event::InitDone => {
                caches.namespaces.replace_all(std::mem::take(&mut initial));
            }
            Event::Apply(object) => {
                caches.namespaces.upsert(object);
            }
            Event::Delete(object) => {
                caches.namespaces.remove(&object);
            }
        }
    }
}

/// What the queue feed needs of a Velero object.
trait QueueObject:
    kube::Resource<DynamicType = ()>
    + Clone
    + serde::de::DeserializeOwned
    + std::fmt::Debug
    + Send
    + 'static
{
    fn entry(&self) -> Option<Entry>;
    fn duration_seconds(&self) -> Option<f64>;
}

fn seconds_between(
    start: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    end: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
) -> Option<f64> {
    let (start, end) = (start?, end?);
    Some((end.0.as_millisecond() - start.0.as_millisecond()) as f64 / 1000.0)
}

impl QueueObject for Backup {
    fn entry(&self) -> Option<Entry> {
        Entry::from_backup(self).ok()
    }
    fn duration_seconds(&self) -> Option<f64> {
        let status = self.status.as_ref()?;
        if !status.phase.as_ref()?.is_terminal() {
            return None;
        }
        seconds_between(
            status.start_timestamp.as_ref(),
            status.completion_timestamp.as_ref(),
        )
    }
}

impl QueueObject for Restore {
    fn entry(&self) -> Option<Entry> {
        Entry::from_restore(self).ok()
    }
    fn duration_seconds(&self) -> Option<f64> {
        let status = self.status.as_ref()?;
        if !status.phase.as_ref()?.is_terminal() {
            return None;
        }
        seconds_between(
            status.start_timestamp.as_ref(),
            status.completion_timestamp.as_ref(),
        )
    }
}

async fn feed_queue<K: QueueObject>(caches: Arc<WatchCaches>, api: Api<K>, kind: QueueKind) {
    let synced_index = match kind {
        QueueKind::Backup => 0,
        QueueKind::Restore => 1,
    };
    let mut stream = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut initial = Vec::new();
    while let Some(event) = stream.next().await {
        let Ok(event) = event else { continue };
        let record_duration = |object: &K| {
            if let (Some(seconds), Some(name)) =
                (object.duration_seconds(), object.meta().name.as_deref())
                && let Ok(mut durations) = caches.durations.lock()
            {
                durations.record(kind, name, seconds);
            }
        };
        match event {
            Event::Init => initial.clear(),
            Event::InitApply(object) => {
                record_duration(&object);
                initial.extend(object.entry());
            }
            Event::InitDone => {
                if let Ok(mut queue) = caches.queue.write() {
                    queue.replace_kind(kind, std::mem::take(&mut initial));
                }
                if let Some(flag) = caches.queue_synced.get(synced_index) {
                    flag.store(true, Ordering::Release);
                }
            }
            Event::Apply(object) => {
                record_duration(&object);
                if let (Some(entry), Ok(mut queue)) = (object.entry(), caches.queue.write()) {
                    queue.upsert(entry);
                }
            }
            Event::Delete(object) => {
                if let (Some(name), Ok(mut queue)) =
                    (object.meta().name.as_deref(), caches.queue.write())
                {
                    queue.remove(kind, name);
                }
            }
        }
    }
}

/// Installs the policy of the DPA's `spec.nonAdmin` and the ConfigMap's data (either absent);
/// an invalid combination leaves the previous policy and is logged.
fn install_policy(caches: &WatchCaches, sources: &PolicySources) {
    match NacPolicy::from_sources(
        sources.dpa_non_admin.as_ref(),
        sources.config_map_data.as_ref(),
    ) {
        Ok(policy) => {
            if let Ok(mut current) = caches.policy.write() {
                *current = policy;
            }
        }
        Err(error) => {
            // The message names the source and key (`DPA spec.nonAdmin...`, `ConfigMap key...`).
            tracing::warn!(error = %error, "ignoring invalid NAC policy; the previous policy stays")
        }
    }
}

/// Keeps the admin policy in step with its two sources in the OADP namespace, watched as the
/// controllers watch them ([`watch_policy_sources`]). The policy counts as synced once both
/// were read, so the gateway never validates without the DPA's enforcement because the
/// ConfigMap happened to be read first.
async fn feed_policy(caches: Arc<WatchCaches>, client: kube::Client, oadp_namespace: String) {
    watch_policy_sources(client, &oadp_namespace, |sources: &PolicySources| {
        install_policy(&caches, sources);
        caches.policy_synced.store(true, Ordering::Release);
    })
    .await;
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn nab(namespace: &str, name: &str, rv: &str) -> NonAdminBackup {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
            "metadata": {"name": name, "namespace": namespace, "resourceVersion": rv,
                         "managedFields": [{"manager": "x"}]},
            "spec": {"backupSpec": {}}
        }))
        .unwrap()
    }

    fn with_uid(mut object: NonAdminBackup, uid: &str) -> NonAdminBackup {
        object.metadata.uid = Some(uid.into());
        object
    }

    #[test]
    fn presented_json_is_serialized_once_per_resource_version() {
        let presented = PresentedJson::with_capacity(10);
        let first = with_uid(nab("team-a", "a", "1"), "uid-a");
        let bytes = presented.of(&[&first]);
        assert_eq!(
            bytes[0].as_ref(),
            serde_json::to_vec(&present(&first)).unwrap().as_slice()
        );
        assert!(!String::from_utf8_lossy(&bytes[0]).contains("managedFields"));
        // The same UID and resourceVersion: the very bytes kept (no new serialization).
        let again = presented.of(&[&first]);
        assert_eq!(again[0].as_ptr(), bytes[0].as_ptr());
        // A newer resourceVersion of the object is serialized again, with its new content.
        let mut second = with_uid(nab("team-a", "a", "2"), "uid-a");
        second.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
        let newer = presented.of(&[&second]);
        assert_ne!(newer[0].as_ptr(), bytes[0].as_ptr());
        assert!(String::from_utf8_lossy(&newer[0]).contains(r#""app":"web""#));
        // Without a UID nothing is kept, and the answer is still right.
        let anonymous = nab("team-a", "b", "1");
        let (one, two) = (presented.of(&[&anonymous]), presented.of(&[&anonymous]));
        assert_eq!(one, two);
        assert_ne!(one[0].as_ptr(), two[0].as_ptr());
    }

    #[test]
    fn presented_json_keeps_order_and_stays_bounded() {
        let presented = PresentedJson::with_capacity(4);
        let objects: Vec<NonAdminBackup> = (0..20)
            .map(|i| with_uid(nab("team-a", &format!("n{i:02}"), "1"), &format!("u{i}")))
            .collect();
        let refs: Vec<&NonAdminBackup> = objects.iter().collect();
        let bytes = presented.of(&refs);
        for (object, bytes) in objects.iter().zip(&bytes) {
            assert_eq!(
                bytes.as_ref(),
                serde_json::to_vec(&present(object)).unwrap()
            );
        }
        let generations = presented.generations.lock().unwrap();
        assert!(generations.current.len() <= 4 && generations.previous.len() <= 4);
    }

    #[test]
    fn pages_are_in_name_order_per_namespace() {
        let cache = NamespacedCache::default();
        for name in ["c", "a", "b", "d"] {
            cache.upsert(nab("team-a", name, "1"));
        }
        cache.upsert(nab("team-b", "secret", "1"));
        let (page, more) = cache.page("team-a", None, 2, |_| true);
        let names: Vec<_> = page
            .iter()
            .map(|o| o.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert!(more);
        let (page, more) = cache.page("team-a", Some("b"), 2, |_| true);
        let names: Vec<_> = page
            .iter()
            .map(|o| o.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["c", "d"]);
        assert!(!more);
        assert!(cache.page("team-c", None, 10, |_| true).0.is_empty());
    }

    #[test]
    fn upserts_report_changes_once() {
        let cache = NamespacedCache::default();
        assert_eq!(
            cache.upsert(nab("n", "a", "1")).unwrap().0,
            ChangeAction::Added
        );
        assert!(cache.upsert(nab("n", "a", "1")).is_none());
        assert_eq!(
            cache.upsert(nab("n", "a", "2")).unwrap().0,
            ChangeAction::Modified
        );
        assert!(cache.upsert_if_newer(nab("n", "a", "1")).is_none());
        assert!(cache.upsert_if_newer(nab("n", "a", "3")).is_some());
    }

    #[test]
    fn a_relist_reports_the_differences() {
        let cache = NamespacedCache::default();
        cache.upsert(nab("n", "kept", "1"));
        cache.upsert(nab("n", "changed", "1"));
        cache.upsert(nab("n", "gone", "1"));
        let changes = cache.replace_all(vec![
            nab("n", "kept", "1"),
            nab("n", "changed", "2"),
            nab("n", "new", "1"),
        ]);
        let mut seen: Vec<_> = changes
            .iter()
            .map(|(action, o)| (*action, o.metadata.name.clone().unwrap()))
            .collect();
        seen.sort_by(|a, b| a.1.cmp(&b.1));
        assert_eq!(
            seen,
            [
                (ChangeAction::Modified, "changed".to_string()),
                (ChangeAction::Deleted, "gone".to_string()),
                (ChangeAction::Added, "new".to_string()),
            ]
        );
        assert!(cache.is_synced());
    }

    #[test]
    fn presented_objects_drop_managed_fields() {
        let value = present(&nab("n", "a", "1"));
        assert!(value.pointer("/metadata/managedFields").is_none());
        assert_eq!(value.pointer("/metadata/name").unwrap(), "a");
    }

    #[test]
    fn duration_means_need_history() {
        let mut stats = DurationStats::default();
        assert_eq!(stats.mean(QueueKind::Backup), None);
        stats.record(QueueKind::Backup, "a", 10.0);
        stats.record(QueueKind::Backup, "a", 99.0);
        stats.record(QueueKind::Backup, "b", 20.0);
        assert_eq!(stats.mean(QueueKind::Backup), Some(15.0));
    }
}
