//! The gateway as its integration suites run it, in pieces each suite puts together: the
//! in-process emulator with the demo's tenants and RBAC, the Velero simulator and NAC's
//! controllers (each as its own service account) when a suite needs them, a gateway reading as
//! `openshift-adp/nac-gateway` and acting with each caller's token, the demo users' tokens; and
//! requests through the gateway's router (bearer token, session cookie or none) with their
//! answers; and [`GatewayEnv`], all of that put together for one case, with a builder for what
//! a suite adds (TestCluster, config, history store, Velero and controllers, a TCP socket).
//! Each suite uses only some of it.
//!
//! Use it with `#[path = "support/gateway.rs"] mod gateway_support;` next to `mod support;`
//! (it takes the service-account tokens from there).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::BodyExt;
use kube::api::{Api, ListParams};
use nac::api::nonadmin::NonAdminBackup;
use nac::controllers::bucket::PoolConfig;
use nac::controllers::{self, Context};
use nac::gateway::artifacts::HttpArtifactFetcher;
use nac::gateway::clients::FnUserClients;
use nac::gateway::{Gateway, GatewayConfig};
use nac::history::SharedHistory;
use nac::sim::apiserver::{ApiServer, EmulatorConfig};
use nac::sim::demo::{
    self, CONTROLLER_SERVICE_ACCOUNT, GATEWAY_SERVICE_ACCOUNT, OADP_NAMESPACE,
    VELERO_SERVICE_ACCOUNT,
};
use nac::sim::velero::engine::VeleroSimulator;
use nac::sim::velero::options::SimulatorOptions;
use nac::sim::velero::signed_url::UrlSigner;
use serde_json::Value;
use tower::ServiceExt;

use crate::support::cluster::TestCluster;
use crate::support::sa_token;

/// Where clients for tokens come from: the emulator, or a [`TestCluster`] on either server.
pub trait ClientSource {
    fn client_for(&self, token: &str) -> kube::Client;
    /// A factory the gateway keeps, for its callers' clients.
    fn factory(&self) -> Arc<dyn Fn(&str) -> kube::Client + Send + Sync>;
}

impl ClientSource for ApiServer {
    fn client_for(&self, token: &str) -> kube::Client {
        self.client(token)
    }
    fn factory(&self) -> Arc<dyn Fn(&str) -> kube::Client + Send + Sync> {
        let emulator = self.clone();
        Arc::new(move |token: &str| emulator.client(token))
    }
}

impl ClientSource for TestCluster {
    fn client_for(&self, token: &str) -> kube::Client {
        self.client(token)
    }
    fn factory(&self) -> Arc<dyn Fn(&str) -> kube::Client + Send + Sync> {
        Arc::new(self.client_factory())
    }
}

/// How long an allowed access decision is cached with [`config_short_ttls`]: what a revoked
/// RoleBinding may take to bite.
pub const ALLOW_TTL: Duration = Duration::from_secs(2);

/// The emulator (`config`) with the demo's tenants, RBAC and service accounts installed, and
/// its admin client.
pub async fn emulator(config: EmulatorConfig) -> (ApiServer, kube::Client) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let server = ApiServer::new(config).unwrap();
    let admin = server.client(&server.admin_token());
    demo::install(&admin).await.unwrap();
    (server, admin)
}

/// The Velero simulator's object store and the base URL of its signed downloads; keep the
/// store as long as the simulator runs.
pub struct Velero {
    pub download_base: String,
    pub object_store: tempfile::TempDir,
}

/// Starts the Velero simulator (fast resyncs, downloads served on a free port) and NAC's
/// controllers, each as its own service account.
pub async fn start_velero_and_controllers(
    server: &impl ClientSource,
    admin: &kube::Client,
) -> Velero {
    start_velero_and_controllers_with(server, admin, |_| {}).await
}

/// [`start_velero_and_controllers`] with the simulator's options adjusted by `adjust` (e.g. a
/// per-item delay that keeps a backup running for a while).
pub async fn start_velero_and_controllers_with(
    server: &impl ClientSource,
    admin: &kube::Client,
    adjust: impl FnOnce(&mut SimulatorOptions),
) -> Velero {
    let velero = start_velero(server, admin, adjust).await;
    start_controllers(server, admin, None).await;
    velero
}

/// The Velero simulator alone (fast resyncs then `adjust`, downloads served on a free port),
/// as its own service account.
pub async fn start_velero(
    server: &impl ClientSource,
    admin: &kube::Client,
    adjust: impl FnOnce(&mut SimulatorOptions),
) -> Velero {
    let object_store = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let download_base = format!("http://{}/", listener.local_addr().unwrap());
    let mut options = SimulatorOptions::new(
        OADP_NAMESPACE,
        object_store.path().to_path_buf(),
        url::Url::parse(&download_base).unwrap(),
    );
    options.resync_interval = Duration::from_millis(100);
    adjust(&mut options);
    let velero = server.client_for(&sa_token(admin, OADP_NAMESPACE, VELERO_SERVICE_ACCOUNT).await);
    let simulator = VeleroSimulator::new(velero, options, Arc::new(UrlSigner::random()));
    let downloads = simulator.download_router();
    tokio::spawn(async move { axum::serve(listener, downloads).await });
    tokio::spawn(simulator.run());
    Velero {
        download_base,
        object_store,
    }
}

/// NAC's controllers as their own service account, with the shared backup pool when `pool`
/// is given.
pub async fn start_controllers(
    server: &impl ClientSource,
    admin: &kube::Client,
    pool: Option<PoolConfig>,
) {
    let controller =
        server.client_for(&sa_token(admin, OADP_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT).await);
    let context = Context::new(controller, OADP_NAMESPACE);
    let context = match pool {
        Some(pool) => context.with_pool(pool),
        None => context,
    };
    tokio::spawn(controllers::run(Arc::new(context)));
}

/// The gateway's configuration for the demo's OADP namespace, with the rate limits out of the
/// way: every in-process request shares the "unknown" client bucket, so no pre-authentication
/// limit either.
pub fn config() -> GatewayConfig {
    let mut config = GatewayConfig {
        oadp_namespace: OADP_NAMESPACE.into(),
        ..GatewayConfig::default()
    };
    config.rate_limit.burst = 100_000;
    config.rate_limit.per_second = 100_000.0;
    config.pre_auth_limit.burst = 100_000;
    config.pre_auth_limit.per_second = 100_000.0;
    config
}

/// [`config`] with short access-decision caches ([`ALLOW_TTL`] allowed, half a second
/// denied), for the revocation tests.
pub fn config_short_ttls() -> GatewayConfig {
    let mut config = config();
    config.authz.allow_ttl = ALLOW_TTL;
    config.authz.deny_ttl = Duration::from_millis(500);
    config
}

/// A gateway over `server` reading as `openshift-adp/nac-gateway`, acting with each caller's
/// token, over `history`: started, its caches synced; its router.
pub async fn start_gateway(
    server: &impl ClientSource,
    admin: &kube::Client,
    history: SharedHistory,
    config: GatewayConfig,
) -> axum::Router {
    let reader = server.client_for(&sa_token(admin, OADP_NAMESPACE, GATEWAY_SERVICE_ACCOUNT).await);
    let user_clients = server.factory();
    let gateway = Gateway::new(
        reader,
        Arc::new(FnUserClients(move |token: &str| user_clients(token))),
        Arc::new(HttpArtifactFetcher::new(Duration::from_secs(20)).unwrap()),
        history,
        config,
    );
    gateway.start();
    assert!(
        gateway.wait_ready(Duration::from_secs(20)).await,
        "gateway caches did not sync"
    );
    gateway.router()
}

/// The demo users' tokens: alice (team-a), bob (team-b), a user with no bindings, and the
/// ci-bot service account (team-a).
pub struct Tokens {
    pub alice: String,
    pub bob: String,
    pub nobody: String,
    pub ci_bot: String,
}

pub async fn tokens(server: &ApiServer, admin: &kube::Client) -> Tokens {
    Tokens {
        alice: server.add_user("alice", &[]),
        bob: server.add_user("bob", &[]),
        nobody: server.add_user("mallory", &[]),
        ci_bot: sa_token(admin, demo::CI_BOT.namespace, demo::CI_BOT.user).await,
    }
}

/// [`tokens`] on either server: on the real one the users are its static-token users.
pub async fn tokens_on(cluster: &TestCluster) -> Tokens {
    Tokens {
        alice: cluster.user_token("alice"),
        bob: cluster.user_token("bob"),
        nobody: cluster.user_token("mallory"),
        ci_bot: cluster
            .sa_token(demo::CI_BOT.namespace, demo::CI_BOT.user)
            .await,
    }
}

/// The names of the NonAdminBackups in `namespace`, as the cluster has them.
pub async fn backup_names(admin: &kube::Client, namespace: &str) -> Vec<String> {
    Api::<NonAdminBackup>::namespaced(admin.clone(), namespace)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|b| b.metadata.name.expect("a named NonAdminBackup"))
        .collect()
}

/// The gateway's answer to one request.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|_| panic!("not JSON: {}", self.text()))
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
    pub fn is_problem(&self) -> bool {
        self.header("content-type") == Some("application/problem+json")
    }
    pub fn set_cookies(&self) -> Vec<String> {
        self.headers
            .get_all("set-cookie")
            .iter()
            .map(|v| v.to_str().unwrap().to_string())
            .collect()
    }
}

/// How a request authenticates.
#[derive(Clone, Copy)]
pub enum Auth<'a> {
    None,
    Bearer(&'a str),
    /// The session cookie's value (sent beside another cookie, as a browser does), and the
    /// CSRF token to send (if any).
    Cookie(&'a str, Option<&'a str>),
}

impl<'a> From<Option<&'a str>> for Auth<'a> {
    /// A bearer token, or none.
    fn from(token: Option<&'a str>) -> Self {
        token.map_or(Auth::None, Auth::Bearer)
    }
}

/// Sends `request` through `router` and reads the whole answer.
pub async fn send(router: &axum::Router, request: Request<Body>) -> Answer {
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    Answer {
        status,
        headers,
        body,
    }
}

/// `method path` with `auth`, the `extra` headers and `body` as JSON (when any).
pub async fn call(
    router: &axum::Router,
    method: Method,
    path: &str,
    auth: Auth<'_>,
    body: Option<Value>,
    extra: &[(&str, &str)],
) -> Answer {
    let mut builder = Request::builder().method(method).uri(path);
    match auth {
        Auth::None => {}
        Auth::Bearer(token) => builder = builder.header("authorization", format!("Bearer {token}")),
        Auth::Cookie(cookie, csrf) => {
            builder = builder.header("cookie", format!("theme=dark; nac_session={cookie}"));
            if let Some(csrf) = csrf {
                builder = builder.header("x-csrf-token", csrf);
            }
        }
    }
    for (name, value) in extra {
        builder = builder.header(*name, *value);
    }
    let body = match body {
        Some(body) => {
            builder = builder.header("content-type", "application/json");
            Body::from(serde_json::to_vec(&body).unwrap())
        }
        None => Body::empty(),
    };
    send(router, builder.body(body).unwrap()).await
}

/// A problem without its `requestId` (which differs on every answer), for comparing two.
pub fn without_request_id(mut problem: Value) -> Value {
    problem.as_object_mut().unwrap().remove("requestId");
    problem
}

/// One case's gateway and what it runs over: the cluster (either server), the admin's client,
/// the demo users' tokens, the history store, and Velero's object store when Velero runs. Built
/// by [`GatewayEnv::on`] or [`GatewayEnv::emulator`] with what a suite needs on top.
pub struct GatewayEnv {
    /// Shared with [`GatewayEnv::replica`]s (on the real server it holds the case's turn).
    pub cluster: Arc<TestCluster>,
    pub admin: kube::Client,
    pub router: axum::Router,
    /// The gateway's history store (a fresh SQLite one unless the suite gave its own).
    pub history: SharedHistory,
    pub alice: String,
    pub bob: String,
    pub ci_bot: String,
    pub nobody: String,
    /// The Velero simulator's object store and downloads, when it runs.
    velero: Option<Velero>,
    /// `host:port` of the router served over TCP, when asked for (WebSockets need a socket).
    addr: Option<String>,
    _history_dir: Option<tempfile::TempDir>,
}

/// Adjusts the Velero simulator's options before it starts.
type AdjustVelero = Box<dyn FnOnce(&mut SimulatorOptions) + Send>;
/// Makes the controllers' backup pool of Velero's object store.
type PoolOf = Box<dyn FnOnce(&std::path::Path) -> PoolConfig + Send>;

/// What differs between the gateway suites; [`GatewayEnvBuilder::start`] puts it together.
pub struct GatewayEnvBuilder {
    cluster: TestCluster,
    config: GatewayConfig,
    history: Option<SharedHistory>,
    velero: Option<AdjustVelero>,
    pool: Option<PoolOf>,
    serve_tcp: bool,
}

impl GatewayEnv {
    /// A gateway over `cluster` with [`config`], a fresh SQLite history, no Velero and no
    /// controllers, until the builder says otherwise.
    pub fn on(cluster: TestCluster) -> GatewayEnvBuilder {
        GatewayEnvBuilder {
            cluster,
            config: config(),
            history: None,
            velero: None,
            pool: None,
            serve_tcp: false,
        }
    }

    /// [`GatewayEnv::on`] a fresh emulator.
    pub async fn emulator() -> GatewayEnvBuilder {
        Self::on(TestCluster::emulator().await)
    }

    /// The emulator, for the cases that inspect or fault it.
    pub fn server(&self) -> &ApiServer {
        self.cluster
            .emulator_server()
            .expect("an emulator-only case")
    }

    /// `host:port` of the router served over TCP ([`GatewayEnvBuilder::serve_tcp`]).
    pub fn addr(&self) -> &str {
        self.addr.as_deref().expect("a gateway served over TCP")
    }

    /// The base URL of Velero's signed downloads ([`GatewayEnvBuilder::velero`]).
    pub fn download_base(&self) -> &str {
        &self.velero.as_ref().expect("Velero running").download_base
    }

    /// Another gateway replica over the same cluster and history store (its own caches,
    /// limits and in-process state), configured by `config`: what a second pod behind the same
    /// Service is.
    pub async fn replica(&self, config: GatewayConfig) -> GatewayEnv {
        let router = start_gateway(
            self.cluster.as_ref(),
            &self.admin,
            self.history.clone(),
            config,
        )
        .await;
        GatewayEnv {
            cluster: self.cluster.clone(),
            admin: self.admin.clone(),
            router,
            history: self.history.clone(),
            alice: self.alice.clone(),
            bob: self.bob.clone(),
            ci_bot: self.ci_bot.clone(),
            nobody: self.nobody.clone(),
            velero: None,
            addr: None,
            _history_dir: None,
        }
    }
}

impl GatewayEnvBuilder {
    /// The gateway's configuration instead of [`config`] (e.g. [`config_short_ttls`]).
    pub fn config(mut self, config: GatewayConfig) -> Self {
        self.config = config;
        self
    }

    /// `configure` applied to the configuration as it stands.
    pub fn configure(mut self, configure: impl FnOnce(&mut GatewayConfig)) -> Self {
        configure(&mut self.config);
        self
    }

    /// The gateway over `history` instead of a fresh SQLite store.
    pub fn history(mut self, history: SharedHistory) -> Self {
        self.history = Some(history);
        self
    }

    /// The Velero simulator ([`start_velero`], its options adjusted by `adjust`) and NAC's
    /// controllers, started before the gateway.
    pub fn velero(mut self, adjust: impl FnOnce(&mut SimulatorOptions) + Send + 'static) -> Self {
        self.velero = Some(Box::new(adjust));
        self
    }

    /// The controllers with the shared backup pool `pool` makes of Velero's object store
    /// (with [`GatewayEnvBuilder::velero`]).
    pub fn pool(
        mut self,
        pool: impl FnOnce(&std::path::Path) -> PoolConfig + Send + 'static,
    ) -> Self {
        self.pool = Some(Box::new(pool));
        self
    }

    /// The router also served on a free loopback port ([`GatewayEnv::addr`]).
    pub fn serve_tcp(mut self) -> Self {
        self.serve_tcp = true;
        self
    }

    /// Velero and the controllers (if asked for), the gateway, its TCP socket (if asked for),
    /// and the demo users' tokens.
    pub async fn start(self) -> GatewayEnv {
        let cluster = self.cluster;
        let admin = cluster.admin();
        let velero = match self.velero {
            Some(adjust) => {
                let velero = start_velero(&cluster, &admin, adjust).await;
                let pool = self.pool.map(|pool| pool(velero.object_store.path()));
                start_controllers(&cluster, &admin, pool).await;
                Some(velero)
            }
            None => None,
        };
        let (history, history_dir) = match self.history {
            Some(history) => (history, None),
            None => {
                let (history, dir) = crate::support::sqlite_history().await;
                (history, Some(dir))
            }
        };
        let router = start_gateway(&cluster, &admin, history.clone(), self.config).await;
        let addr = if self.serve_tcp {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap().to_string();
            let served = router.clone();
            tokio::spawn(async move { axum::serve(listener, served).await });
            Some(addr)
        } else {
            None
        };
        let tokens = tokens_on(&cluster).await;
        GatewayEnv {
            cluster: Arc::new(cluster),
            admin,
            router,
            history,
            alice: tokens.alice,
            bob: tokens.bob,
            ci_bot: tokens.ci_bot,
            nobody: tokens.nobody,
            velero,
            addr,
            _history_dir: history_dir,
        }
    }
}

/// Polls `status` (a request of a caller whose RoleBinding was just removed) until it answers
/// 403; until then it must answer 200, and for no longer than [`ALLOW_TTL`] and half a second
/// (what a config with [`config_short_ttls`] promises).
pub async fn until_forbidden<F, Fut>(mut status: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = StatusCode>,
{
    let revoked_at = tokio::time::Instant::now();
    crate::support::cluster::eventually("the revoked caller to be refused", 30, || {
        let answer = status();
        async move {
            let status = answer.await;
            if status == StatusCode::FORBIDDEN {
                return Some(());
            }
            assert_eq!(status, StatusCode::OK);
            assert!(
                revoked_at.elapsed() <= ALLOW_TTL + Duration::from_millis(500),
                "still allowed after {:?}",
                revoked_at.elapsed()
            );
            None
        }
    })
    .await
}
