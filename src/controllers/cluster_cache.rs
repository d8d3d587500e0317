//! Watch caches of the cluster-scoped objects reconciles look up on every pass — namespaces
//! (their labels select per-namespace policy) and BackupBuckets (whether the shared pool is
//! configured) — so a reconcile reads them from memory instead of asking the API server.
//!
//! What is *recorded* on a Velero object (a namespace's UID) and where a backup's data goes
//! (the namespace's BackupEntry) are still read from the API server: a cache behind a
//! re-created namespace must never tie its new owner to the previous owner's data.
use std::sync::Arc;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::Api;
use kube::runtime::watcher;

use super::Context;
use super::velero_cache::{self, Cache};
use crate::api::nonadmin::BackupBucket;

/// The caches (filled while the controllers run).
#[derive(Default)]
pub struct ClusterCaches {
    pub namespaces: Cache<Namespace>,
    pub buckets: Cache<BackupBucket>,
}

/// Keeps both caches filled until the task is dropped.
pub async fn run(context: Arc<Context>) {
    let (namespaces, _) = velero_cache::feed(
        Api::<Namespace>::all(context.client.clone()),
        watcher::Config::default(),
        &context.cluster.namespaces,
        |_| None::<()>,
    );
    let (buckets, _) = velero_cache::feed(
        Api::<BackupBucket>::all(context.client.clone()),
        watcher::Config::default(),
        &context.cluster.buckets,
        |_| None::<()>,
    );
    tokio::join!(namespaces, buckets);
}
