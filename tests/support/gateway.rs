//! The gateway as its integration suites run it, in pieces each suite puts together: the
//! in-process emulator with the demo's tenants and RBAC, the Velero simulator and NAC's
//! controllers (each as its own service account) when a suite needs them, a gateway reading as
//! `openshift-adp/nac-gateway` and acting with each caller's token, the demo users' tokens; and
//! requests through the gateway's router (bearer token, session cookie or none) with their
//! answers. Each suite uses only some of it.
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
    let controller =
        server.client_for(&sa_token(admin, OADP_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT).await);
    tokio::spawn(controllers::run(Arc::new(Context::new(
        controller,
        OADP_NAMESPACE,
    ))));
    Velero {
        download_base,
        object_store,
    }
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
