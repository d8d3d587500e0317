//! Feeds the queue index from watches of every Velero Backup and Restore in the OADP namespace
//! (the admin's own count too: they stand in the same queue as the tenants').
use std::sync::Arc;

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};

use super::Context;
use crate::api::velero::{Backup, Restore};
use crate::queue::{Entry, QueueKind};

/// Keeps the index in step with the cluster until the task is dropped.
pub async fn run(context: Arc<Context>) {
    let backups: Api<Backup> = Api::namespaced(context.client.clone(), &context.oadp_namespace);
    let restores: Api<Restore> = Api::namespaced(context.client.clone(), &context.oadp_namespace);
    tokio::join!(
        feed(
            context.clone(),
            backups,
            QueueKind::Backup,
            Entry::from_backup
        ),
        feed(
            context.clone(),
            restores,
            QueueKind::Restore,
            Entry::from_restore
        ),
    );
}

async fn feed<K, F, E>(context: Arc<Context>, api: Api<K>, kind: QueueKind, entry_of: F)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    K::DynamicType: Default,
    F: Fn(&K) -> Result<Entry, E>,
    E: std::fmt::Display,
{
    // Backoff on errors: a failing API server (or a client shutting down) must not turn the
    // loop into a busy spin.
    let mut stream = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut initial = Vec::new();
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                tracing::debug!(%error, "queue watch failed; retrying with backoff");
                continue;
            }
        };
        let Ok(mut index) = context.queue.write() else {
            return;
        };
        match event {
            Event::Init => initial.clear(),
            Event::InitApply(object) => match entry_of(&object) {
                Ok(e) => initial.push(e),
                Err(e) => tracing::debug!(error = %e, "not indexed"),
            },
            Event::InitDone => index.replace_kind(kind, std::mem::take(&mut initial)),
            Event::Apply(object) => match entry_of(&object) {
                Ok(e) => {
                    index.upsert(e);
                }
                Err(e) => tracing::debug!(error = %e, "not indexed"),
            },
            Event::Delete(object) => {
                if let Some(name) = object.meta().name.as_deref() {
                    index.remove(kind, name);
                }
            }
        }
    }
}
