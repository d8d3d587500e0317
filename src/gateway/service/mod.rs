//! The gateway's operations, independent of the transport: each takes the authenticated
//! [`Caller`], checks access with a SubjectAccessReview for exactly what it does, reads what that
//! check covers through [`TenantData`](crate::gateway::tenancy::TenantData) — the only door to
//! the watch caches and the history store, which asks for the [`Authorized`] handle the check
//! returned — or writes with the caller's own token, and returns typed results or a
//! [`GatewayError`]. REST (`rest/`) and GraphQL call these and only these.
//!
//! One file per area: [`namespaces`] ("my namespaces"), [`objects`] (list, get, create,
//! delete, patch, wait), [`queue`] (positions and ETAs), [`describe`] (descriptions, policy,
//! artifacts), [`history`] (the operation history), [`manifests`] (backup manifests, dry-run,
//! restore preview, overlaps) and [`shared_storage`] (the namespace's place in the shared pool).

pub mod describe;
pub mod history;
pub mod manifests;
pub mod namespaces;
pub mod objects;
pub mod queue;
pub mod shared_storage;
mod stream_host;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_graphql::Json;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde::Serialize;
use serde_json::{Value, json};

use crate::api::names::is_dns1123_subdomain;
use crate::api::nonadmin::{
    NonAdminBackup, NonAdminBackupStorageLocation, NonAdminDownloadRequest, NonAdminPhase,
    NonAdminRestore, NonAdminSchedule, conditions,
};
use crate::api::velero::artifacts::{ResourceList, VeleroResults};
use crate::api::velero::{BackupPhase, DeleteBackupRequestPhase, DownloadTargetKind, RestorePhase};
use crate::gateway::artifacts::{ArtifactFetcher, decompress};
use crate::gateway::auth::{
    AccessBudget, AccessCheck, Authenticator, Authorized, Authorizer, BearerToken, Caller,
    CheckError,
};
use crate::gateway::clients::SharedUserClients;
use crate::gateway::error::{FieldError, GatewayError, from_write_error};
use crate::gateway::events::{ChangeEvent, Resume, StreamScope};
use crate::gateway::operations::{HistoryCounters, QueueEta, operation_kind};
use crate::gateway::paging::{PageTokens, filter_digest};
use crate::gateway::phases::{VeleroPhase, phase_text};
use crate::gateway::resources::{TenantKind, TenantObjectKind, TenantResource};
use crate::gateway::selector;
use crate::gateway::store::{Cached, WatchCaches};
use crate::gateway::tenancy::TenantData;
use crate::history::{OperationKind, SharedHistory};
use crate::policy::config::SpecKind;
use crate::policy::rules::SpecRules;
use crate::policy::{
    PolicyViolation, check_restore_source, validate_backup_spec, validate_bsl_spec,
    validate_restore_spec,
};
use crate::queue::{Activity, QueueKind};

pub use describe::*;
pub use namespaces::*;
pub use objects::*;
pub use queue::*;

/// Default page size of lists.
pub const DEFAULT_LIMIT: usize = 100;
/// Largest page size.
pub const MAX_LIMIT: usize = 500;
/// Verbs reported per resource in "my namespaces".
pub const REPORTED_VERBS: [&str; 6] = ["get", "list", "watch", "create", "patch", "delete"];

/// Settings of the service.
#[derive(Clone, Debug)]
pub struct ServiceConfig {
    /// Longest `wait` accepted.
    pub max_wait: Duration,
    /// How long an artifact download may take in all.
    pub artifact_timeout: Duration,
    /// How often a download request is looked at while waiting for its URL.
    pub artifact_poll: Duration,
    /// Distinct access checks one request may make when it fans out over namespaces ("my
    /// namespaces", phase counts, a stream's default scope); see [`AccessBudget`].
    pub review_budget: usize,
    /// Live streams (SSE and subscriptions together) one user may hold open at once.
    pub max_streams_per_user: usize,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            max_wait: Duration::from_secs(600),
            artifact_timeout: Duration::from_secs(60),
            artifact_poll: Duration::from_millis(200),
            review_budget: crate::gateway::auth::budget::DEFAULT_REVIEW_BUDGET,
            max_streams_per_user: crate::gateway::events::slots::DEFAULT_MAX_STREAMS_PER_USER,
        }
    }
}

/// The gateway's operations.
pub struct GatewayService {
    /// The only door to the caches and the history store.
    data: TenantData,
    authn: Authenticator,
    authz: Authorizer,
    users: SharedUserClients,
    fetcher: Arc<dyn ArtifactFetcher>,
    pages: PageTokens,
    config: ServiceConfig,
    history_counters: HistoryCounters,
    manifests: crate::gateway::manifests::ManifestState,
    /// The gateway's own client: reads what tenants may not (the shared backup pool).
    reader: kube::Client,
    /// Whether the cluster serves OpenShift projects (found by discovery at start).
    openshift_projects: std::sync::atomic::AtomicBool,
    /// The gateway's stop ([`GatewayService::shutdown`]).
    shutdown: crate::shutdown::Shutdown,
    /// Open live streams per user.
    streams: crate::gateway::events::slots::StreamSlots,
}

impl std::fmt::Debug for GatewayService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayService")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn name_of<K: kube::Resource>(object: &K) -> String {
    object.meta().name.clone().unwrap_or_default()
}

fn time_text(
    time: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
) -> Option<String> {
    time.map(|t| t.0.to_string())
}

fn conditions_json(conditions: &[Condition]) -> Vec<Value> {
    conditions
        .iter()
        .map(|c| serde_json::to_value(c).unwrap_or(Value::Null))
        .collect()
}

impl GatewayService {
    /// A service over `caches`, checking tokens with `authn` and access with `authz`, writing
    /// through `users`, downloading artifacts with `fetcher`, reading and noting operations in
    /// `history`, reading what tenants may not (the shared backup pool) with `reader`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        caches: Arc<WatchCaches>,
        authn: Authenticator,
        authz: Authorizer,
        users: SharedUserClients,
        fetcher: Arc<dyn ArtifactFetcher>,
        pages: PageTokens,
        history: SharedHistory,
        config: ServiceConfig,
        reader: kube::Client,
    ) -> Self {
        GatewayService {
            streams: crate::gateway::events::slots::StreamSlots::new(config.max_streams_per_user),
            data: TenantData::new(caches, history),
            authn,
            authz,
            users,
            fetcher,
            pages,
            config,
            history_counters: HistoryCounters::default(),
            manifests: crate::gateway::manifests::ManifestState::default(),
            reader,
            openshift_projects: std::sync::atomic::AtomicBool::new(false),
            shutdown: crate::shutdown::Shutdown::default(),
        }
    }

    /// The gateway's stop, triggered by [`crate::gateway::Gateway::serve`] when the process
    /// stops: event streams and subscriptions then end with a `shutdown` reason, waits
    /// (`?wait=true`) answer with the object as it is, and open WebSocket connections (which
    /// the HTTP server no longer tracks once upgraded) are counted in it until closed.
    pub fn shutdown(&self) -> &crate::shutdown::Shutdown {
        &self.shutdown
    }

    /// Finds out with discovery (as the gateway) whether OpenShift projects are served; when
    /// they are, "my namespaces" starts from the caller's projects list.
    /// The gateway's own client (reads only, after the caller's access check).
    pub(super) fn reader(&self) -> &kube::Client {
        &self.reader
    }

    /// Whether the caches have had their first list (readiness).
    pub fn is_synced(&self) -> bool {
        self.data.is_synced()
    }

    /// Waits until the caches are loaded or `timeout` passes; returns whether loaded.
    pub async fn wait_synced(&self, timeout: Duration) -> bool {
        self.data.wait_synced(timeout).await
    }

    /// The UID idempotency records of `namespace` are kept under (empty when it does not
    /// exist): a namespace created again under the same name never replays its predecessor's
    /// answers. The caller's own records only, keyed by their token; nothing is shown from it.
    pub fn idempotency_scope(&self, namespace: &str) -> String {
        self.data.namespace_uid(namespace).unwrap_or_default()
    }

    /// Keeps the caches in step with the cluster (read with `client`, the gateway's own
    /// identity) until dropped.
    pub fn run_watches(
        &self,
        client: kube::Client,
        oadp_namespace: String,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        self.data.run_watches(client, oadp_namespace)
    }

    /// The authenticator (for metrics).
    pub fn authenticator(&self) -> &Authenticator {
        &self.authn
    }

    /// The authorizer (for metrics and streams).
    pub fn authorizer(&self) -> &Authorizer {
        &self.authz
    }

    /// The settings.
    pub fn config(&self) -> &ServiceConfig {
        &self.config
    }

    /// What the manifest endpoints keep between requests (discovery, decoded manifests).
    pub(super) fn manifest_state(&self) -> &crate::gateway::manifests::ManifestState {
        &self.manifests
    }

    /// Counters of the history store's use (for metrics).
    pub fn history_counters(&self) -> &HistoryCounters {
        &self.history_counters
    }

    /// The caller holding `token` (none: 401), asking from `client`: every transport (REST,
    /// SSE, GraphQL over HTTP and WebSocket) authenticates here, so the pre-authentication
    /// limit (429 before a TokenReview for a token not known to be good) covers them all.
    pub async fn authenticate(
        &self,
        token: Option<BearerToken>,
        client: crate::gateway::ratelimit::ClientAddress,
    ) -> Result<Caller, GatewayError> {
        let token = token.ok_or(GatewayError::Unauthenticated)?;
        self.authn.authenticate(token, client).await
    }

    pub(crate) fn ready(&self) -> Result<(), GatewayError> {
        if self.data.is_synced() {
            Ok(())
        } else {
            Err(GatewayError::Unavailable(
                "the gateway is still loading its caches; retry shortly".into(),
            ))
        }
    }

    /// A client acting as `caller`.
    pub fn user_client(&self, caller: &Caller) -> Result<kube::Client, GatewayError> {
        self.users.client_for(caller.token(), caller.token_key())
    }

    /// Checks `verb` on `resource` (optionally the object `name`) in `namespace`.
    pub async fn authorize(
        &self,
        caller: &Caller,
        verb: &'static str,
        resource: TenantResource,
        namespace: &str,
        name: Option<&str>,
    ) -> Result<Authorized, GatewayError> {
        let mut check = AccessCheck::new(verb, resource.plural(), namespace);
        if let Some(name) = name {
            check = check.named(name);
        }
        self.authz.require(caller.identity(), check).await
    }

    /// The change log from `last_event_id` for a stream over `scope` (built from the caller's
    /// `watch` grants): the missed events of the scope, the live receiver (the stream keeps
    /// only what [`StreamScope::shows`]) and the id of "now".
    pub fn follow_changes(
        &self,
        scope: &StreamScope,
        last_event_id: Option<&str>,
    ) -> (
        Resume,
        tokio::sync::broadcast::Receiver<Arc<ChangeEvent>>,
        String,
    ) {
        self.data.follow(scope, last_event_id)
    }

    /// A slot for one more live stream of `caller`, held while the stream is open; refused
    /// with 429 when they already hold the most one user may.
    pub fn open_stream(
        &self,
        caller: &crate::gateway::auth::Caller,
    ) -> Result<crate::gateway::events::slots::StreamSlot, GatewayError> {
        self.streams.open(caller.username())
    }

    /// The opaque id of `event` for a stream's item (a fresh one each time).
    pub fn event_id(&self, event: &ChangeEvent) -> String {
        self.data.event_log().event_id(event)
    }

    /// Whether the caller may still watch `resource` in `namespace` (decisions are cached for
    /// at most the allow TTL, so a revoked binding ends a stream within it).
    pub async fn may_watch(
        &self,
        caller: &Caller,
        namespace: &str,
        resource: TenantResource,
    ) -> bool {
        self.watch_access(caller, namespace, resource)
            .await
            .unwrap_or(false)
    }

    /// As [`GatewayService::may_watch`], telling a review that could not be made (the API
    /// server unreachable: `None`) apart from a refusal (`Some(false)`).
    pub async fn watch_access(
        &self,
        caller: &Caller,
        namespace: &str,
        resource: TenantResource,
    ) -> Option<bool> {
        let check = AccessCheck::new("watch", resource.plural(), namespace);
        self.authz.allowed(caller.identity(), &check).await.ok()
    }
}
