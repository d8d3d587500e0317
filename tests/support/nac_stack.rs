//! NAC running on a [`TestCluster`] as an admin deploys it: the Velero simulator, NAC's
//! controllers, the history recorder and manifest builder, each as its own service account with
//! exactly `deploy/`'s RBAC (a 403 fails the case), and the gateway reading as
//! `openshift-adp/nac-gateway` and acting with each caller's own token.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use http::Method;
use nac::api::client_identity::Component;
use nac::controllers::bucket::PoolConfig;
use nac::controllers::bucket_store::ObjectStoreLister;
use nac::controllers::{self, Context};
use nac::gateway::clients::FnUserClients;
use nac::gateway::{Gateway, GatewayConfig};
use nac::history::SharedHistory;
use nac::history::manifests::{ManifestBuilder, ManifestBuilderConfig};
use nac::history::recorder::{Recorder, RecorderConfig};
use nac::manifest::fetch::HttpArtifactFetcher;
use nac::sim::demo::{
    CONTROLLER_SERVICE_ACCOUNT, GATEWAY_SERVICE_ACCOUNT, OADP_NAMESPACE, VELERO_SERVICE_ACCOUNT,
};
use nac::sim::velero::engine::VeleroSimulator;
use nac::sim::velero::options::SimulatorOptions;
use nac::sim::velero::signed_url::UrlSigner;
use nac::sim::velero::storage::LOCAL_PROVIDER;
use serde_json::Value;

use super::cluster::TestCluster;

/// Background tasks stopped when the stack goes.
pub struct Tasks(pub Vec<tokio::task::JoinHandle<()>>);

impl Drop for Tasks {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// The history recorder's configuration for tests: flushes every 50 ms.
pub fn quick_recorder_config() -> RecorderConfig {
    RecorderConfig {
        flush_interval: Duration::from_millis(50),
        ..RecorderConfig::default()
    }
}

/// The manifest builder's configuration for tests: quick rescans, retries and polls.
pub fn quick_manifest_builder_config() -> ManifestBuilderConfig {
    ManifestBuilderConfig {
        rescan_interval: Duration::from_secs(1),
        await_min_backoff: Duration::from_millis(100),
        retry_min_backoff: Duration::from_millis(200),
        retry_max_backoff: Duration::from_secs(2),
        download_poll: Duration::from_millis(50),
        download_timeout: Duration::from_secs(20),
        ..ManifestBuilderConfig::default()
    }
}

/// The running system.
pub struct NacStack {
    pub router: axum::Router,
    /// The simulator's object-store endpoint (`http://127.0.0.1:<port>`), where download URLs
    /// of the local provider point.
    pub download_origin: String,
    pub history: SharedHistory,
    pub object_store: tempfile::TempDir,
    _history_dir: tempfile::TempDir,
    _tasks: Tasks,
    /// NAC's controllers, apart from the rest: a case may stop and restart them.
    controllers: Tasks,
    context: Arc<Context>,
}

impl NacStack {
    /// Stops NAC's controllers (Velero, the recorder and the gateway go on), as when the
    /// controller crashed or was scaled down; returns once they stopped.
    pub async fn stop_controllers(&mut self) {
        for task in std::mem::take(&mut self.controllers.0) {
            task.abort();
            let _ = task.await;
        }
    }

    /// Starts NAC's controllers again (a new process: nothing remembered but the cluster).
    pub fn start_controllers(&mut self) {
        self.controllers
            .0
            .push(tokio::spawn(controllers::run(self.context.clone())));
    }
}

/// Starts everything on `cluster`, the simulator's options adjusted by `adjust`.
pub async fn start(cluster: &TestCluster, adjust: impl FnOnce(&mut SimulatorOptions)) -> NacStack {
    start_with(cluster, adjust, false).await
}

/// [`start`] with the shared backup pool's controllers listing the simulator's local object
/// store (quick resyncs), as `nac controller --object-store-root` runs them.
pub async fn start_with_pool(
    cluster: &TestCluster,
    adjust: impl FnOnce(&mut SimulatorOptions),
) -> NacStack {
    start_with(cluster, adjust, true).await
}

async fn start_with(
    cluster: &TestCluster,
    adjust: impl FnOnce(&mut SimulatorOptions),
    pool: bool,
) -> NacStack {
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
    let velero = cluster.client_as(
        &cluster
            .sa_token(OADP_NAMESPACE, VELERO_SERVICE_ACCOUNT)
            .await,
        Component::VeleroSimulator,
    );
    let simulator = VeleroSimulator::new(velero, options, Arc::new(UrlSigner::random()));
    let downloads = simulator.download_router();
    let controller = cluster.client_as(
        &cluster
            .sa_token(OADP_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT)
            .await,
        Component::Controller,
    );
    let (history, history_dir) = super::sqlite_history().await;
    let recorder = Recorder::new(
        controller.clone(),
        OADP_NAMESPACE,
        history.clone(),
        quick_recorder_config(),
    );
    let builder = ManifestBuilder::new(
        controller.clone(),
        OADP_NAMESPACE,
        history.clone(),
        Arc::new(HttpArtifactFetcher::new(Duration::from_secs(20)).unwrap()),
        quick_manifest_builder_config(),
    );
    let mut context = Context::new(controller, OADP_NAMESPACE);
    if pool {
        context = context.with_pool(PoolConfig {
            resync: Duration::from_millis(200),
            rescan: Duration::from_millis(500),
            lister: Arc::new(ObjectStoreLister::with_local_provider(
                LOCAL_PROVIDER,
                object_store.path().to_path_buf(),
            )),
            ..PoolConfig::default()
        });
    }
    let context = Arc::new(context);
    // Tenant locations' downloads follow the live policy's storageEndpoints, as in `nac serve`.
    let builder = builder.with_endpoint_rules(context.policy.clone());
    let controllers = Tasks(vec![tokio::spawn(controllers::run(context.clone()))]);
    let tasks = Tasks(vec![
        tokio::spawn(async move {
            let _ = axum::serve(listener, downloads).await;
        }),
        tokio::spawn(simulator.run()),
        tokio::spawn(recorder.run()),
        tokio::spawn(builder.run()),
    ]);
    let reader = cluster.client_as(
        &cluster
            .sa_token(OADP_NAMESPACE, GATEWAY_SERVICE_ACCOUNT)
            .await,
        Component::Gateway,
    );
    let mut config = GatewayConfig {
        oadp_namespace: OADP_NAMESPACE.into(),
        ..GatewayConfig::default()
    };
    config.rate_limit.burst = 100_000;
    config.rate_limit.per_second = 100_000.0;
    config.pre_auth_limit.burst = 100_000;
    config.pre_auth_limit.per_second = 100_000.0;
    let user_clients = cluster.client_factory();
    let gateway = Gateway::new(
        reader,
        Arc::new(FnUserClients(move |token: &str| user_clients(token))),
        Arc::new(
            nac::gateway::artifacts::HttpArtifactFetcher::new(Duration::from_secs(20)).unwrap(),
        ),
        history.clone(),
        config,
    );
    gateway.start();
    assert!(
        gateway.wait_ready(Duration::from_secs(30)).await,
        "gateway caches did not sync"
    );
    NacStack {
        router: gateway.router(),
        download_origin: download_base.trim_end_matches('/').to_owned(),
        history,
        object_store,
        _history_dir: history_dir,
        _tasks: tasks,
        controllers,
        context,
    }
}

/// The gateway's answer to one request.
#[derive(Debug)]
pub struct Answer {
    pub status: http::StatusCode,
    pub headers: http::HeaderMap,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|_| panic!("not JSON ({}): {}", self.status, self.text()))
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

impl NacStack {
    /// A REST call through the gateway with a bearer token.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> Answer {
        self.call_with_headers(method, path, token, body, &[]).await
    }

    /// [`call`](Self::call) with extra request headers (`Idempotency-Key`, …).
    pub async fn call_with_headers(
        &self,
        method: Method,
        path: &str,
        token: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> Answer {
        use http_body_util::BodyExt;
        use tower::ServiceExt;
        let mut request = http::Request::builder()
            .method(method)
            .uri(path)
            .header("authorization", format!("Bearer {token}"));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let body = match body {
            Some(body) => {
                request = request.header("content-type", "application/json");
                axum::body::Body::from(serde_json::to_vec(&body).unwrap())
            }
            None => axum::body::Body::empty(),
        };
        let response = self
            .router
            .clone()
            .oneshot(request.body(body).unwrap())
            .await
            .unwrap();
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

    /// A REST GET through the gateway.
    pub async fn get(&self, path: &str, token: &str) -> Answer {
        self.call(Method::GET, path, token, None).await
    }
}
