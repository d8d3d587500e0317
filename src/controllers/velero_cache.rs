//! Watch caches of NAC's own Velero objects in the OADP namespace, so reconcilers find a NAB's
//! or NAR's Velero object without asking the API server on every pass.
//!
//! A cache may lag behind the cluster. That is safe here because every Velero object NAC
//! creates is named after its NACUUID (written to the tenant object's status first): a create
//! decided on a miss that is only the cache lagging answers 409 instead of making a second
//! object, and a miss of an object that was made already is confirmed with one GET by name.
use std::sync::{Arc, RwLock};

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};

use super::ControllerError;

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
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
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

/// Watches `api` into `cache` and returns the watch (run it) and a stream of what each
/// added, changed or **deleted** object maps to (kube-runtime's shared streams leave deletions
/// out, and a vanished Velero object is exactly what a tenant object must react to).
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
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
    R: Send + 'static,
{
    let (store, mut writer) = reflector::store::<K>();
    cache.install(store);
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    let watch = watcher::watcher(api, config)
        .default_backoff()
        .for_each(move |event| {
            if let Ok(event) = event {
                writer.apply_watcher_event(&event);
                let touched = match &event {
                    watcher::Event::Apply(o)
                    | watcher::Event::Delete(o)
                    | watcher::Event::InitApply(o) => map(o),
                    watcher::Event::Init | watcher::Event::InitDone => None,
                };
                if let Some(r) = touched {
                    let _ = sender.send(r);
                }
            }
            std::future::ready(())
        });
    (
        watch,
        tokio_stream::wrappers::UnboundedReceiverStream::new(receiver),
    )
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
