//! Watch caches of NAC's own Velero objects in the OADP namespace (and of the other kinds the
//! reconcilers look up), so reconcilers find a NAB's or NAR's Velero object without asking the
//! API server on every pass; each kept [`lean`], and one watch shared by every controller that
//! reacts to its kind ([`feed_shared`]).
//!
//! A cache may lag behind the cluster. That is safe here because every Velero object NAC
//! creates is named after its NACUUID (written to the tenant object's status first): a create
//! decided on a miss that is only the cache lagging answers 409 instead of making a second
//! object, and a miss of an object that was made already is confirmed with one GET by name.
use std::sync::{Arc, RwLock};

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::controller::Controller;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};

use super::ControllerError;

/// What a watch cache holds: a kind kube-runtime can watch and store.
pub trait Watched:
    kube::Resource<DynamicType = ()>
    + Clone
    + serde::de::DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
}

impl<K> Watched for K where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static
{
}

/// A cache that is filled once the controller owning the watch starts.
pub struct Cache<K>
where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
{
    store: RwLock<Option<Store<K>>>,
}

impl<K> Default for Cache<K>
where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
{
    fn default() -> Self {
        Cache {
            store: RwLock::new(None),
        }
    }
}

impl<K> Cache<K>
where
    K: Watched,
{
    /// Serves lookups from `store` from now on.
    pub fn install(&self, store: Store<K>) {
        if let Ok(mut slot) = self.store.write() {
            *slot = Some(store);
        }
    }

    /// Stops serving from the cache (its watch ended).
    pub fn uninstall(&self) {
        if let Ok(mut slot) = self.store.write() {
            *slot = None;
        }
    }

    /// The store, once its first list is complete (before that a miss would mean nothing).
    fn current(&self) -> Option<Store<K>> {
        let store = self.store.read().ok().and_then(|s| s.clone())?;
        let synced = futures::FutureExt::now_or_never(store.wait_until_ready())
            .is_some_and(|ready| ready.is_ok());
        synced.then_some(store)
    }

    /// The cluster-scoped object `name`, when the cache is synced: `Some(None)` when it does not
    /// exist as far as the cache knows, `None` without a synced cache (ask the API server).
    pub fn cached_cluster_object(&self, name: &str) -> Option<Option<Arc<K>>> {
        self.current().map(|store| store.get(&ObjectRef::new(name)))
    }

    /// The object `namespace/name` that passes `accept`: from the cache when it has it, else
    /// from one GET (the cache may not have seen it yet).
    pub async fn get(
        &self,
        api: &Api<K>,
        namespace: &str,
        name: &str,
        accept: impl Fn(&K) -> bool,
    ) -> Result<Option<K>, ControllerError> {
        if let Some(store) = self.current()
            && let Some(found) = store.get(&ObjectRef::new(name).within(namespace))
        {
            return Ok(accept(&found).then(|| (*found).clone()));
        }
        Ok(api.get_opt(name).await?.filter(|k| accept(k)))
    }

    /// As [`Cache::get`], but a miss in the synced cache is taken as "absent" unless
    /// `confirm_miss`: for an object this replica has not made yet (a create that races the
    /// cache answers 409), no GET is needed; one that should exist is confirmed gone by a GET.
    pub async fn get_or_absent(
        &self,
        api: &Api<K>,
        namespace: &str,
        name: &str,
        confirm_miss: bool,
        accept: impl Fn(&K) -> bool,
    ) -> Result<Option<K>, ControllerError> {
        match self.current() {
            Some(store) => match store.get(&ObjectRef::new(name).within(namespace)) {
                Some(found) => Ok(accept(&found).then(|| (*found).clone())),
                None if !confirm_miss => Ok(None),
                None => Ok(api.get_opt(name).await?.filter(|k| accept(k))),
            },
            None => Ok(api.get_opt(name).await?.filter(|k| accept(k))),
        }
    }

    /// Every cached object passing `accept` (empty without a cache; see [`Cache::is_installed`]).
    pub fn matching(&self, accept: impl Fn(&K) -> bool) -> Vec<Arc<K>> {
        self.current()
            .map(|store| store.state().into_iter().filter(|k| accept(k)).collect())
            .unwrap_or_default()
    }

    /// Whether lookups are served from a cache (installed and synced).
    pub fn is_installed(&self) -> bool {
        self.current().is_some()
    }
}

/// Drops what no reconcile reads from a cached copy: `metadata.managedFields`, often the
/// largest part of a NAC object and, deserialized, several times its JSON size. A write that
/// sends such a copy back leaves the server's managedFields as they are (an absent list is
/// not a reset; only `[{}]` is).
pub fn lean<K: kube::Resource>(object: &mut K) {
    object.meta_mut().managed_fields = None;
}

/// One subscriber's stream of a shared watch's changes ([`feed_shared`]).
pub type Changes<K> = tokio_stream::wrappers::UnboundedReceiverStream<Change<K>>;

/// What one shared watch tells each of its subscribers.
#[derive(Debug)]
pub enum Change<K> {
    /// The object was added or changed, or is in the cache after a (re)list: the cache's own
    /// copy, not a second one.
    Applied(Arc<K>),
    /// The object was deleted.
    Deleted(Arc<K>),
}

impl<K> Change<K> {
    /// The object concerned.
    pub fn object(&self) -> &K {
        match self {
            Change::Applied(k) | Change::Deleted(k) => k,
        }
    }
}

/// Watches `api` (each object [`lean`]) into `cache`, and returns the watch (run it), the
/// store it fills and, for each of `subscribers`, a stream of every change: one watch and one copy of each object
/// however many controllers react to the kind. Unlike kube-runtime's shared streams, deletions
/// are told too (a vanished object is exactly what another object may have to react to).
pub fn feed_shared<K, const SUBSCRIBERS: usize>(
    api: Api<K>,
    config: watcher::Config,
    cache: &Cache<K>,
) -> (
    impl std::future::Future<Output = ()> + Send + 'static,
    Store<K>,
    [Changes<K>; SUBSCRIBERS],
)
where
    K: Watched,
{
    let (store, mut writer) = reflector::store::<K>();
    cache.install(store.clone());
    let mut senders = Vec::with_capacity(SUBSCRIBERS);
    let receivers = std::array::from_fn(|_| {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        senders.push(sender);
        tokio_stream::wrappers::UnboundedReceiverStream::new(receiver)
    });
    let send = move |change: &dyn Fn() -> Change<K>| {
        for sender in &senders {
            let _ = sender.send(change());
        }
    };
    let cached = store.clone();
    let watch = watcher::watcher(api, config)
        .default_backoff()
        .modify(lean)
        .for_each(move |event| {
            if let Ok(event) = event {
                writer.apply_watcher_event(&event);
                match &event {
                    watcher::Event::Apply(o) => {
                        if let Some(cached) = store.get(&ObjectRef::from_obj(o)) {
                            send(&|| Change::Applied(cached.clone()));
                        }
                    }
                    watcher::Event::Delete(o) => {
                        let gone = Arc::new(o.clone());
                        send(&|| Change::Deleted(gone.clone()));
                    }
                    // A (re)listed object is told once the list is complete and in the cache.
                    watcher::Event::InitDone => {
                        for cached in store.state() {
                            send(&|| Change::Applied(cached.clone()));
                        }
                    }
                    watcher::Event::Init | watcher::Event::InitApply(_) => {}
                }
            }
            std::future::ready(())
        });
    (watch, cached, receivers)
}

/// Watches `api` (each object [`lean`]) into `cache` and returns the watch (run it) and a
/// stream of what each added, changed or **deleted** object maps to.
pub fn feed<K, R>(
    api: Api<K>,
    config: watcher::Config,
    cache: &Cache<K>,
    map: impl Fn(&K) -> Option<R> + Send + 'static,
) -> (
    impl std::future::Future<Output = ()> + Send + 'static,
    impl futures::Stream<Item = R> + Send + 'static,
)
where
    K: Watched,
    R: Send + 'static,
{
    let (watch, _, [changes]) = feed_shared(api, config, cache);
    (
        watch,
        changes.filter_map(move |change| std::future::ready(map(change.object()))),
    )
}

/// A controller of `api`'s objects whose own watch cache holds them [`lean`] (as
/// `Controller::new`, which caches them whole).
pub fn lean_controller<K>(api: Api<K>, config: watcher::Config) -> Controller<K>
where
    K: Watched,
{
    let (reader, writer) = reflector::store::<K>();
    let trigger =
        reflector::reflector(writer, watcher::watcher(api, config).modify(lean)).applied_objects();
    Controller::for_stream(trigger, reader)
}

/// Whether `meta` carries label `key` with `value`.
pub fn has_label(meta: &kube::core::ObjectMeta, key: &str, value: &str) -> bool {
    meta.labels
        .as_ref()
        .and_then(|l| l.get(key))
        .is_some_and(|v| v == value)
}

/// Whether `meta` carries annotation `key` with `value`.
pub fn has_annotation(meta: &kube::core::ObjectMeta, key: &str, value: &str) -> bool {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .is_some_and(|v| v == value)
}
