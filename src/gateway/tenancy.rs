//! The one door to namespace-scoped data. The gateway's watch caches and its history store are
//! held here and nowhere else the handlers can reach; every read of one namespace's objects,
//! policy, queue entries, history or stored manifests takes the [`Authorized`] handle an access
//! check returned, and reads only that namespace — objects only of the resource the check was
//! about. An `Authorized` is made only by the [`Authorizer`](crate::gateway::auth::Authorizer)
//! when a SubjectAccessReview allowed it, so a read nobody authorized does not compile.
//!
//! The reads that are not of one namespace are few and named for what they are: readiness,
//! anonymous queue totals and mean durations, the names of the cluster's namespaces (the
//! candidates "my namespaces" checks one by one, never shown unchecked), the admin's endpoint
//! policy, and the change log, which streams read only through a [`StreamScope`] built from
//! `watch` grants.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast;

use crate::gateway::auth::Authorized;
use crate::gateway::error::GatewayError;
use crate::gateway::events::{ChangeEvent, EventLog, Resume, StreamScope};
use crate::gateway::resources::TenantResource;
use crate::gateway::store::{Cached, WatchCaches};
use crate::history::{
    Coverage, NamespaceStats, OperationCursor, OperationFilter, OperationKind, OperationPage,
    OperationRecord, SharedHistory, StoreFuture, StoredManifest, StoredTransition, TenantNamespace,
    TimeWindow,
};
use crate::policy::config::EffectivePolicy;
use crate::queue::{Entry, QueueKind};

const LOADING: &str = "the gateway is still loading its caches; retry shortly";

/// The caches and the history store, readable one authorized namespace at a time.
pub struct TenantData {
    caches: Arc<WatchCaches>,
    history: SharedHistory,
}

impl std::fmt::Debug for TenantData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TenantData").finish_non_exhaustive()
    }
}

/// Whether `access` covers objects of `resource` (pure): the same namespace is implied by the
/// handle; the resource must be the one the check was about.
pub fn covers(access: &Authorized, resource: TenantResource) -> bool {
    access.resource() == resource.plural()
}

/// Whether `access` covers the operation history of its namespace (pure): the history is the
/// past of backups and restores, so a check on either covers it (the history endpoints ask
/// for `list nonadminbackups`, exactly as listing backups does).
pub fn covers_history(access: &Authorized) -> bool {
    covers(access, TenantResource::Backups) || covers(access, TenantResource::Restores)
}

/// A programming error: a read with a handle for another resource. Answered as the 403 the
/// missing check would have given, and logged, so it is found in tests and never leaks.
fn not_covered(access: &Authorized, resource: TenantResource) -> GatewayError {
    tracing::error!(
        namespace = access.namespace(),
        checked = access.resource(),
        read = resource.plural(),
        "a read used an authorization for another resource"
    );
    GatewayError::Forbidden {
        verb: access.verb(),
        resource: resource.plural(),
        namespace: access.namespace().to_string(),
    }
}

impl TenantData {
    /// The door over `caches` and `history`.
    pub fn new(caches: Arc<WatchCaches>, history: SharedHistory) -> Self {
        TenantData { caches, history }
    }

    /// Whether every cache has had its first list.
    pub fn is_synced(&self) -> bool {
        self.caches.is_synced()
    }

    /// Waits until the caches are loaded or `timeout` passes; returns whether loaded.
    pub async fn wait_synced(&self, timeout: Duration) -> bool {
        self.caches.wait_synced(timeout).await
    }

    /// Keeps the caches in step with the cluster until dropped.
    pub fn run_watches(
        &self,
        client: kube::Client,
        oadp_namespace: String,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        self.caches.clone().run(client, oadp_namespace)
    }

    /// Keeps an object the caller just wrote (their own write, answered by the API server)
    /// until the watch delivers it.
    pub fn record_write<K: Cached>(&self, object: K) {
        self.caches.record_write(object);
    }

    /// Every `K` in the authorized namespace.
    pub fn objects<K: Cached>(&self, access: &Authorized) -> Result<Vec<Arc<K>>, GatewayError> {
        if !covers(access, K::RESOURCE) {
            return Err(not_covered(access, K::RESOURCE));
        }
        Ok(K::cache(&self.caches).all_in(access.namespace()))
    }

    /// The `K` named `name` in the authorized namespace (404 when there is none).
    pub fn object<K: Cached>(
        &self,
        access: &Authorized,
        name: &str,
    ) -> Result<Arc<K>, GatewayError> {
        if !covers(access, K::RESOURCE) {
            return Err(not_covered(access, K::RESOURCE));
        }
        K::cache(&self.caches)
            .get(access.namespace(), name)
            .ok_or_else(|| GatewayError::NotFound {
                kind: K::RESOURCE.kind(),
                namespace: access.namespace().to_string(),
                name: name.to_string(),
            })
    }

    /// Up to `limit` of the authorized namespace's `K` after the name `after`, in name order,
    /// that `keep` accepts, and whether more remain.
    pub fn page<K: Cached>(
        &self,
        access: &Authorized,
        after: Option<&str>,
        limit: usize,
        keep: impl Fn(&K) -> bool,
    ) -> Result<(Vec<Arc<K>>, bool), GatewayError> {
        if !covers(access, K::RESOURCE) {
            return Err(not_covered(access, K::RESOURCE));
        }
        Ok(K::cache(&self.caches).page(access.namespace(), after, limit, keep))
    }

    /// The admin policy in force in the authorized namespace (any check there covers it: the
    /// rules are what the namespace's own requests are held to).
    pub fn effective_policy(&self, access: &Authorized) -> EffectivePolicy {
        self.caches.effective_policy(access.namespace())
    }

    /// The authorized namespace as the cache holds it (its labels feed dry-runs).
    pub fn namespace(
        &self,
        access: &Authorized,
    ) -> Option<Arc<k8s_openapi::api::core::v1::Namespace>> {
        self.caches.namespaces.get("", access.namespace())
    }

    /// The authorized namespace as it is now — name and UID — for history reads; `None` when
    /// it does not exist. 503 until the namespace cache has its first list.
    pub fn tenant(&self, access: &Authorized) -> Result<Option<TenantNamespace>, GatewayError> {
        let namespaces = &self.caches.namespaces;
        if !namespaces.is_synced() {
            return Err(GatewayError::Unavailable(LOADING.into()));
        }
        Ok(access.tenant(namespaces.get("", access.namespace()).as_deref()))
    }

    /// The history store bound to the authorized namespace as it is now; `None` when the
    /// namespace does not exist (it then has no history to read).
    pub fn history(&self, access: &Authorized) -> Result<Option<TenantHistory<'_>>, GatewayError> {
        if !covers_history(access) {
            return Err(not_covered(access, TenantResource::Backups));
        }
        Ok(self.tenant(access)?.map(|tenant| TenantHistory {
            store: &self.history,
            tenant,
        }))
    }

    /// The history store for what the gateway itself notes (requesters after a create the
    /// caller was authorized for); reads go through [`TenantData::history`].
    pub fn history_writer(&self, access: &Authorized) -> &SharedHistory {
        let _ = access;
        &self.history
    }

    /// The UID of the authorized namespace when it can own an object created at
    /// `created_at` (it existed then and was not being deleted before): requesters are noted
    /// under it, never under a predecessor of the same name.
    pub fn owning_namespace_uid(&self, access: &Authorized, created_at: i64) -> Option<String> {
        let millis = |t: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>| {
            t.map(|t| t.0.as_millisecond())
        };
        self.caches
            .namespaces
            .get("", access.namespace())
            .filter(|ns| {
                crate::history::namespace_may_own(
                    millis(ns.metadata.creation_timestamp.as_ref()).unwrap_or(0),
                    millis(ns.metadata.deletion_timestamp.as_ref()),
                    created_at,
                )
            })
            .and_then(|ns| ns.metadata.uid.clone())
    }

    /// The queue entry and position of the Velero object `velero_name` of `kind`, named in
    /// the status of one of the authorized namespace's objects (the controller writes that
    /// name; a tenant cannot choose it), with the mean duration of its kind.
    pub fn queue_entry(
        &self,
        access: &Authorized,
        kind: QueueKind,
        velero_name: &str,
    ) -> Option<QueuedEntry> {
        let resource = match kind {
            QueueKind::Backup => TenantResource::Backups,
            QueueKind::Restore => TenantResource::Restores,
        };
        if !covers(access, resource) {
            return None;
        }
        let queue = self.caches.queue.read().ok()?;
        let entry = queue.get(kind, velero_name)?.clone();
        let position = queue.position(kind, velero_name)?;
        Some(QueuedEntry {
            entry,
            position,
            mean_seconds: self.mean_duration(kind),
        })
    }

    /// Cluster-wide, anonymous: the active entries of `kind` in queue order.
    pub fn queue_totals(&self, kind: QueueKind) -> Vec<Entry> {
        self.caches
            .queue
            .read()
            .map(|queue| queue.active_in_order(kind).cloned().collect())
            .unwrap_or_default()
    }

    /// Cluster-wide, anonymous: the mean duration of finished operations of `kind`.
    pub fn mean_duration(&self, kind: QueueKind) -> Option<f64> {
        self.caches.durations.lock().ok().and_then(|d| d.mean(kind))
    }

    /// Cluster-wide: the names of the cluster's namespaces — only candidates, each checked
    /// before "my namespaces" shows it.
    pub fn namespace_candidates(&self) -> Vec<String> {
        self.caches
            .namespaces
            .all_in("")
            .iter()
            .filter_map(|ns| ns.metadata.name.clone())
            .collect()
    }

    /// Cluster-wide: the UID of namespace `name`, only to key the caller's own idempotency
    /// records (never shown).
    pub fn namespace_uid(&self, name: &str) -> Option<String> {
        self.caches
            .namespaces
            .get("", name)
            .and_then(|ns| ns.metadata.uid.clone())
    }

    /// The admin's storage-endpoint rules (cluster policy, no tenant's data).
    pub fn storage_endpoint_rules(&self) -> crate::policy::endpoints::StorageEndpoints {
        use crate::manifest::fetch::EndpointRules;
        self.caches.policy.storage_endpoints()
    }

    /// An object named in a request the caller may make (a `create` or `patch` grant), read
    /// to validate the reference — a backup's storage location, a restore's source backup —
    /// in the same namespace; the controller reports the same in the object's status.
    pub fn referenced<K: Cached>(&self, access: &Authorized, name: &str) -> Option<Arc<K>> {
        if !matches!(access.verb(), "create" | "patch") {
            return None;
        }
        K::cache(&self.caches).get(access.namespace(), name)
    }

    /// Live changes of the object the handle names (its namespace and resource), for a wait
    /// on it: the receiver sees every change; [`ChangeFilter::admits`] keeps its own.
    pub fn changes_of(&self, access: &Authorized, name: &str) -> ChangeFilter {
        let (_, receiver) = self.caches.events.subscribe(None);
        ChangeFilter {
            receiver,
            namespace: access.namespace().to_string(),
            name: name.to_string(),
            resource: access.resource(),
        }
    }

    /// The change log a stream follows, with its scope (built only from `watch` grants):
    /// replayed events are of the scope; live ones are filtered by the stream with
    /// [`StreamScope::shows`].
    pub fn follow(
        &self,
        scope: &StreamScope,
        last_event_id: Option<&str>,
    ) -> (Resume, broadcast::Receiver<Arc<ChangeEvent>>, String) {
        self.caches.events.resume(last_event_id, scope)
    }

    /// The change log's opaque ids (for a stream's items).
    pub fn event_log(&self) -> &EventLog {
        &self.caches.events
    }
}

/// A queue entry of one of the authorized namespace's objects.
#[derive(Clone, Debug)]
pub struct QueuedEntry {
    /// The entry.
    pub entry: Entry,
    /// Its live position.
    pub position: u64,
    /// Mean duration of its kind (anonymous, cluster-wide).
    pub mean_seconds: Option<f64>,
}

/// Changes of one object, for waits.
pub struct ChangeFilter {
    receiver: broadcast::Receiver<Arc<ChangeEvent>>,
    namespace: String,
    name: String,
    resource: &'static str,
}

impl ChangeFilter {
    /// The next change of any object (lagging or a closed log also wake the waiter, which
    /// then reads the object again).
    pub async fn next_of_object(&mut self) {
        loop {
            match self.receiver.recv().await {
                Ok(event)
                    if event.namespace == self.namespace
                        && event.name == self.name
                        && event.resource.plural() == self.resource =>
                {
                    return;
                }
                Ok(_) => continue,
                Err(broadcast::error::RecvError::Lagged(_)) => return,
                Err(broadcast::error::RecvError::Closed) => {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    return;
                }
            }
        }
    }
}

/// The history store bound to one authorized namespace as it is now.
pub struct TenantHistory<'d> {
    store: &'d SharedHistory,
    tenant: TenantNamespace,
}

impl TenantHistory<'_> {
    /// The namespace (name and UID) every read is of.
    pub fn tenant(&self) -> &TenantNamespace {
        &self.tenant
    }

    /// A page of the namespace's operations, newest first.
    pub fn operations<'a>(
        &'a self,
        filter: &'a OperationFilter,
        after: Option<&'a OperationCursor>,
        limit: u32,
    ) -> StoreFuture<'a, OperationPage> {
        self.store.operations(&self.tenant, filter, after, limit)
    }

    /// One operation of the namespace.
    pub fn operation<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<OperationRecord>> {
        self.store.operation(&self.tenant, id)
    }

    /// The timeline of one operation of the namespace.
    pub fn timeline<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Vec<StoredTransition>> {
        self.store.timeline(&self.tenant, id)
    }

    /// Statistics of the namespace's operations created in `window`.
    pub fn stats(&self, window: TimeWindow) -> StoreFuture<'_, NamespaceStats> {
        self.store.stats(&self.tenant, window)
    }

    /// The namespace's coverage.
    pub fn coverage(&self) -> StoreFuture<'_, Vec<Coverage>> {
        self.store.coverage(std::slice::from_ref(&self.tenant))
    }

    /// Durations of the namespace's latest completed operations of `kinds`.
    pub fn recent_durations<'a>(
        &'a self,
        kinds: &'a [OperationKind],
        limit: u32,
    ) -> StoreFuture<'a, Vec<i64>> {
        self.store.recent_durations(&self.tenant, kinds, limit)
    }

    /// The stored manifest of the namespace's backup `name`.
    pub fn manifest_by_name<'a>(
        &'a self,
        name: &'a str,
    ) -> StoreFuture<'a, Option<StoredManifest>> {
        self.store.manifest_by_name(&self.tenant, name)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::api::nonadmin::{NonAdminBackup, NonAdminRestore};
    use k8s_openapi::api::core::v1::Namespace;

    fn backup(namespace: &str, name: &str) -> NonAdminBackup {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
            "metadata": {"name": name, "namespace": namespace, "resourceVersion": "1"},
            "spec": {"backupSpec": {}}
        }))
        .unwrap()
    }

    fn namespace(name: &str, uid: &str) -> Namespace {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "uid": uid, "resourceVersion": "1",
                         "creationTimestamp": "2026-01-01T00:00:00Z"}
        }))
        .unwrap()
    }

    async fn data() -> TenantData {
        let caches = Arc::new(WatchCaches::new(16));
        caches.backups.upsert(backup("team-a", "nightly"));
        caches.backups.upsert(backup("team-b", "secret-plans"));
        caches.namespaces.replace_all(vec![
            namespace("team-a", "uid-a"),
            namespace("team-b", "uid-b"),
        ]);
        let history = crate::history::open("sqlite::memory:").await.unwrap();
        history.migrate().await.unwrap();
        TenantData::new(caches, history)
    }

    fn grant(verb: &'static str, resource: TenantResource, namespace: &str) -> Authorized {
        Authorized::assumed_for_tests(verb, resource.plural(), namespace)
    }

    #[tokio::test]
    async fn a_grant_reads_only_its_own_namespace() {
        let data = data().await;
        let list_a = grant("list", TenantResource::Backups, "team-a");
        let names: Vec<_> = data
            .objects::<NonAdminBackup>(&list_a)
            .unwrap()
            .iter()
            .map(|b| b.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["nightly"]);
        // Another namespace's object is not found through team-a's grant.
        let missing = data.object::<NonAdminBackup>(&list_a, "secret-plans");
        assert!(matches!(missing, Err(GatewayError::NotFound { .. })));
        let (page, more) = data
            .page::<NonAdminBackup>(&list_a, None, 10, |_| true)
            .unwrap();
        assert_eq!((page.len(), more), (1, false));
    }

    #[tokio::test]
    async fn a_grant_for_one_resource_reads_no_other() {
        let data = data().await;
        let restores = grant("list", TenantResource::Restores, "team-a");
        assert!(matches!(
            data.objects::<NonAdminBackup>(&restores),
            Err(GatewayError::Forbidden { .. })
        ));
        assert!(matches!(
            data.object::<NonAdminBackup>(&restores, "nightly"),
            Err(GatewayError::Forbidden { .. })
        ));
        let schedules = grant("list", TenantResource::Schedules, "team-a");
        assert!(data.history(&schedules).is_err());
        assert!(
            data.queue_entry(&schedules, QueueKind::Backup, "nightly-x")
                .is_none()
        );
        // Only the restores grant reads restores.
        assert!(
            data.objects::<NonAdminRestore>(&restores)
                .unwrap()
                .is_empty()
        );
    }

    #[tokio::test]
    async fn references_are_read_only_for_requests_that_make_them() {
        let data = data().await;
        let create = grant("create", TenantResource::Restores, "team-a");
        assert!(
            data.referenced::<NonAdminBackup>(&create, "nightly")
                .is_some()
        );
        assert!(
            data.referenced::<NonAdminBackup>(&create, "secret-plans")
                .is_none()
        );
        let get = grant("get", TenantResource::Restores, "team-a");
        assert!(data.referenced::<NonAdminBackup>(&get, "nightly").is_none());
    }

    #[tokio::test]
    async fn history_is_of_the_namespace_as_it_is_now() {
        let data = data().await;
        let list_a = grant("list", TenantResource::Backups, "team-a");
        let history = data.history(&list_a).unwrap().unwrap();
        assert_eq!(history.tenant().uid(), "uid-a");
        let gone = grant("list", TenantResource::Backups, "no-such-namespace");
        assert!(data.history(&gone).unwrap().is_none());
    }

    #[test]
    fn history_is_covered_by_backups_and_restores_only() {
        for (resource, covered) in [
            (TenantResource::Backups, true),
            (TenantResource::Restores, true),
            (TenantResource::StorageLocations, false),
            (TenantResource::Schedules, false),
        ] {
            assert_eq!(covers_history(&grant("list", resource, "team-a")), covered);
        }
    }
}
