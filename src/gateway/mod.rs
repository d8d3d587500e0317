//! The gateway: NAC's HTTP API for namespace owners, CI pipelines and dashboards.
//!
//! - `auth/`: bearer token → TokenReview (cached under a keyed hash of the token), and every
//!   namespace-scoped action → SubjectAccessReview (cached briefly, allow ≤ 30 s, deny 5 s);
//!   browser sessions (an HttpOnly cookie naming a server-side session that holds the token,
//!   CSRF tokens) and OpenShift OAuth sign-in;
//! - [`credentials`]: a request's caller from its bearer token or its session cookie, for
//!   every transport;
//! - [`service`]: the authorized operations, transport-neutral (REST today, GraphQL on top of the
//!   same functions), one file per area;
//! - [`tenancy`]: where tenancy is enforced — the only door to the caches and the history
//!   store, every namespace-scoped read taking the [`auth::Authorized`] handle an access check
//!   returned; handlers cannot reach either otherwise;
//! - [`store`]: watch caches reads are served from, and the queue index;
//! - [`clients`]: writes go to the API server with the caller's own token;
//! - [`projects`]: on OpenShift, "my namespaces" starts from the caller's projects list (taken
//!   with their token), found by discovery at start;
//! - `rest/`: `/api/v1` with OpenAPI, problem+json errors, paging, idempotency, rate limits,
//!   metrics, health and an API documentation page;
//! - `events/`: live changes as Server-Sent Events;
//! - [`console`]: the web console (`web/dist`, embedded) at `/`, with single-page-app routes;
//! - [`operations`]: the views of the operation history (from [`crate::history`]) and the
//!   parsing of its parameters (the reads are in `service/history.rs`); [`idempotency`] keeps
//!   Idempotency-Key answers in the same store so replicas agree.
//! - [`shared_storage`]: a namespace's place in the administrator's shared backup pool as its
//!   tenants may see it, and the pool's buckets a tenant location may not use (read with the
//!   gateway's own identity, after the caller's access check).
//!
//! The gateway's own identity only reads (watches, and lists the shared backup pool) and runs
//! TokenReview/SubjectAccessReview.

pub mod artifacts;
pub mod auth;
pub mod clients;
pub mod console;
pub mod credentials;
pub mod error;
pub mod events;
pub mod graphql;
pub mod idempotency;
pub mod live;
pub mod manifests;
pub mod metrics;
pub mod operations;
pub mod paging;
pub mod phases;
pub mod projects;
pub mod ratelimit;
pub mod resources;
pub mod rest;
pub mod selector;
pub mod service;
pub mod shared_storage;
pub mod storage_scope;
pub mod store;
pub mod tenancy;
pub mod tls;

use std::sync::Arc;
use std::time::Duration;

use auth::{
    Authenticator, AuthnConfig, Authorizer, AuthzConfig, OAuthClient, SessionConfig,
    SessionManager, TokenHasher,
};
use clients::SharedUserClients;
use idempotency::IdempotencyStore;
use metrics::RequestMetrics;
use paging::PageTokens;
use ratelimit::{PreAuthLimitConfig, RateLimitConfig, RateLimiter};
use service::{GatewayService, ServiceConfig};
use store::WatchCaches;

use crate::history::SharedHistory;

pub use error::GatewayError;

/// Everything configurable about a gateway.
#[derive(Clone, Debug)]
pub struct GatewayConfig {
    /// Where Velero and NAC's admin-side objects live.
    pub oadp_namespace: String,
    /// Token checking.
    pub authn: AuthnConfig,
    /// Access checking.
    pub authz: AuthzConfig,
    /// Per-user rate limit.
    pub rate_limit: RateLimitConfig,
    /// Pre-authentication limit per client address: only requests whose token is not already
    /// known to be good (a TokenReview is needed, or it was refused) draw from it; over it,
    /// 429 with `Retry-After` and no TokenReview. Default: burst 30, 5 per second.
    pub pre_auth_limit: PreAuthLimitConfig,
    /// Whether the client address is the last `X-Forwarded-For` entry (set only behind a proxy
    /// that writes it) rather than the TCP peer. Default: false (anyone can write the header).
    pub trust_forwarded_for: bool,
    /// Largest request body.
    pub max_body_bytes: usize,
    /// How long Idempotency-Key answers are kept.
    pub idempotency_ttl: Duration,
    /// Changes kept for resuming event streams.
    pub event_capacity: usize,
    /// Operation settings.
    pub service: ServiceConfig,
    /// Key signing `continue` tokens (random when unset: tokens then work only on the replica
    /// that issued them).
    pub paging_key: Option<[u8; 32]>,
    /// Browser sessions of the web console (and OpenShift OAuth sign-in).
    pub session: SessionConfig,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            oadp_namespace: "openshift-adp".into(),
            authn: AuthnConfig::default(),
            authz: AuthzConfig::default(),
            rate_limit: RateLimitConfig::default(),
            pre_auth_limit: PreAuthLimitConfig::default(),
            trust_forwarded_for: false,
            max_body_bytes: 1024 * 1024,
            idempotency_ttl: Duration::from_secs(3600),
            event_capacity: 10_000,
            service: ServiceConfig::default(),
            paging_key: None,
            session: SessionConfig::default(),
        }
    }
}

/// The state shared by every request.
pub struct GatewayState {
    /// The operations.
    pub service: Arc<GatewayService>,
    /// Request metrics.
    pub metrics: RequestMetrics,
    /// Per-user rate limits.
    pub limiter: RateLimiter,
    /// Idempotency-Key answers.
    pub idempotency: IdempotencyStore,
    /// Browser sessions.
    pub sessions: SessionManager,
    /// OpenShift OAuth sign-in, when configured.
    pub oauth: Option<OAuthClient>,
    /// The settings.
    pub config: GatewayConfig,
    /// Cached objects' presented JSON, serialized once per resourceVersion.
    pub presented: store::PresentedJson,
    reader: kube::Client,
}

/// A gateway: cheap to clone.
#[derive(Clone)]
pub struct Gateway(Arc<GatewayState>);

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("config", &self.0.config)
            .finish_non_exhaustive()
    }
}

impl std::ops::Deref for Gateway {
    type Target = GatewayState;
    fn deref(&self) -> &GatewayState {
        &self.0
    }
}

impl Gateway {
    /// A gateway reading and reviewing through `reader` (its own identity), writing through
    /// `users` (the callers' identities), downloading artifacts with `fetcher`, keeping
    /// operation history and Idempotency-Key answers in `history` (shared by every replica).
    pub fn new(
        reader: kube::Client,
        users: SharedUserClients,
        fetcher: Arc<dyn artifacts::ArtifactFetcher>,
        history: SharedHistory,
        config: GatewayConfig,
    ) -> Self {
        let caches = Arc::new(WatchCaches::new(config.event_capacity));
        let authn = Authenticator::new(reader.clone(), config.authn.clone(), TokenHasher::random())
            .with_pre_auth_limit(config.pre_auth_limit);
        let authz = Authorizer::new(reader.clone(), config.authz.clone());
        let pages = match config.paging_key {
            Some(key) => PageTokens::new(key),
            None => PageTokens::random(),
        };
        let service = Arc::new(GatewayService::new(
            caches,
            authn,
            authz,
            users,
            fetcher,
            pages,
            history.clone(),
            config.service.clone(),
            reader.clone(),
        ));
        let oauth = config.session.oauth.clone().and_then(|oauth| {
            OAuthClient::new(oauth)
                .inspect_err(|error| {
                    tracing::error!(error = %error, "OpenShift OAuth sign-in disabled");
                })
                .ok()
        });
        Gateway(Arc::new(GatewayState {
            service,
            sessions: SessionManager::new(config.session.clone()),
            oauth,
            metrics: RequestMetrics::default(),
            limiter: RateLimiter::new(config.rate_limit),
            idempotency: IdempotencyStore::new(history, config.idempotency_ttl),
            config,
            presented: store::PresentedJson::default(),
            reader,
        }))
    }

    /// The operations (for GraphQL and tests).
    pub fn service(&self) -> &Arc<GatewayService> {
        &self.0.service
    }

    /// The gateway's own client (the reader), for what it asks the API server itself.
    pub fn reader(&self) -> &kube::Client {
        &self.0.reader
    }

    /// The HTTP router (REST, GraphQL, SSE, sessions, the web console, health, metrics,
    /// OpenAPI, docs). Serve it with `into_make_service_with_connect_info::<SocketAddr>()` so
    /// the pre-authentication limit is kept per client address (without it every client shares
    /// one bucket).
    pub fn router(&self) -> axum::Router {
        rest::router(self.clone(), graphql::router(self.clone()))
    }

    /// Finds out whether OpenShift projects are served, then starts the watch caches in the
    /// background (so the gateway is ready only once it knows).
    pub fn start(&self) -> tokio::task::JoinHandle<()> {
        let service = self.0.service.clone();
        let reader = self.0.reader.clone();
        let oadp_namespace = self.0.config.oadp_namespace.clone();
        tokio::spawn(async move {
            service.detect_openshift_projects(&reader).await;
            service.run_watches(reader, oadp_namespace).await
        })
    }

    /// Waits until the caches are loaded or `timeout` passes; returns whether loaded.
    pub async fn wait_ready(&self, timeout: Duration) -> bool {
        self.0.service.wait_synced(timeout).await
    }

    /// Serves [`Gateway::router`] on `listener` (with the peers' addresses) until `shutdown`
    /// starts, then stops as a pod should: it stops accepting connections, ends every event
    /// stream and GraphQL subscription with a `shutdown` reason (so clients reconnect, to
    /// another replica), answers `?wait=true` requests with the object as it is, lets the open
    /// requests finish and the WebSockets' close frames go out — within what is left of the
    /// grace period. Returns whether all of it finished in time (false: what was still open
    /// is cut off when the process exits).
    ///
    /// `listener` is a plain TCP listener or a [`tls::TlsListener`] (HTTPS).
    pub async fn serve<L>(
        &self,
        listener: L,
        shutdown: crate::shutdown::Shutdown,
    ) -> std::io::Result<bool>
    where
        L: axum::serve::Listener<Addr = std::net::SocketAddr>,
    {
        use axum::serve::ListenerExt;
        use std::future::IntoFuture;
        /// Kept from the grace period for the process to exit after the gateway has stopped.
        const RESERVE: Duration = Duration::from_secs(1);
        let service = self
            .router()
            .into_make_service_with_connect_info::<std::net::SocketAddr>();
        let streams = self.service().shutdown().clone();
        let stop = shutdown.clone();
        // `tap_io` (doing nothing) is what gives any listener's peer address to the handlers
        // as `ConnectInfo<SocketAddr>`, TLS or not.
        let serving = axum::serve(listener.tap_io(|_| ()), service)
            .with_graceful_shutdown(async move {
                stop.triggered().await;
                streams.trigger();
            })
            .into_future();
        let cut_off = async {
            shutdown.triggered().await;
            tokio::time::sleep(shutdown.remaining().saturating_sub(RESERVE)).await;
        };
        tokio::select! {
            served = serving => served?,
            () = cut_off => {
                tracing::warn!("gateway: requests still open at the end of the grace period are cut off");
                return Ok(false);
            }
        }
        // Upgraded connections (GraphQL WebSockets) are no longer the HTTP server's.
        let bound = shutdown.remaining().saturating_sub(RESERVE);
        let closed = tokio::time::timeout(bound, self.service().shutdown().drained()).await;
        if closed.is_err() {
            tracing::warn!(
                "gateway: WebSockets still open at the end of the grace period are cut off"
            );
        }
        tracing::info!("gateway stopped");
        Ok(closed.is_ok())
    }
}
