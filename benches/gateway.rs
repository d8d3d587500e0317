//! Gateway benchmark over real sockets: a tenant's warm list of 20 and of 200 NonAdminBackups
//! through NAC's gateway (HTTP/1.1, keep-alive) side by side with the same list taken by the same
//! caller straight from the API server, measured in the same run: first the real kube-apiserver
//! (HTTPS, from `KUBEBUILDER_ASSETS`, NAC installed with `deploy/`'s RBAC), then the in-process
//! emulator served on a socket (plain HTTP) as a second column. Then the cost of a cold request
//! (TokenReview + SubjectAccessReview) against a warm one.
//!
//! The load generator is the benchmark itself: `concurrency` workers, each on its own
//! keep-alive connection, sending the next request as soon as the answer is read (as `hey -c`).
//! It shares the machine's cores with the servers, as `hey` would.
//!
//! `cargo bench --bench gateway` runs 8 s per figure; `-- --quick` 2 s. Figures are printed,
//! never asserted on. Without a control plane (`KUBEBUILDER_ASSETS` unset) the real column is
//! skipped with one line (under `CI=true` that is a failure, as in the test suites).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use kube::api::{Api, PostParams};
use nac::api::nonadmin::NonAdminBackup;
use nac::gateway::artifacts::HttpArtifactFetcher;
use nac::gateway::clients::FnUserClients;
use nac::gateway::{Gateway, GatewayConfig};
use nac::sim::demo::{GATEWAY_SERVICE_ACCOUNT, OADP_NAMESPACE};
use rustls::pki_types::pem::PemObject;
use serde_json::json;
use support::cluster::{Server, TestCluster, USERS};
use tokio_rustls::TlsConnector;

/// Where a worker sends its requests.
#[derive(Clone)]
struct Target {
    addr: SocketAddr,
    /// `Some` for HTTPS (the real kube-apiserver).
    tls: Option<(TlsConnector, rustls::pki_types::ServerName<'static>)>,
    path: String,
    token: String,
}

trait Connection: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static> Connection for T {}

async fn open(target: &Target) -> SendRequest<Empty<Bytes>> {
    let tcp = tokio::net::TcpStream::connect(target.addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let stream: Box<dyn Connection> = match &target.tls {
        Some((connector, name)) => Box::new(connector.connect(name.clone(), tcp).await.unwrap()),
        None => Box::new(tcp),
    };
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    sender
}

/// One GET on an open connection: its latency and body.
async fn fetch(sender: &mut SendRequest<Empty<Bytes>>, target: &Target) -> (Duration, Bytes) {
    let request = http::Request::get(target.path.as_str())
        .header(http::header::HOST, target.addr.to_string())
        .header(http::header::ACCEPT, "application/json")
        .header(
            http::header::AUTHORIZATION,
            format!("Bearer {}", target.token),
        )
        .body(Empty::new())
        .unwrap();
    let started = Instant::now();
    sender.ready().await.unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert!(
        status.is_success(),
        "{}: {status}: {}",
        target.path,
        String::from_utf8_lossy(&body)
    );
    (started.elapsed(), body)
}

struct Figures {
    median: Duration,
    p99: Duration,
    per_second: f64,
    bytes: usize,
}

/// `concurrency` workers on their own connections for `duration`, after a warm-up; checks every
/// answer lists `items` objects.
async fn load(target: &Target, items: usize, concurrency: usize, duration: Duration) -> Figures {
    let mut warm = open(target).await;
    let mut bytes = 0;
    for _ in 0..50 {
        let (_, body) = fetch(&mut warm, target).await;
        let list: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(list["items"].as_array().map(Vec::len), Some(items));
        bytes = body.len();
    }
    let started = Instant::now();
    let deadline = started + duration;
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let target = target.clone();
            tokio::spawn(async move {
                let mut sender = open(&target).await;
                let mut latencies = Vec::new();
                while Instant::now() < deadline {
                    latencies.push(fetch(&mut sender, &target).await.0);
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for worker in workers {
        latencies.extend(worker.await.unwrap());
    }
    let elapsed = started.elapsed();
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q).round() as usize];
    Figures {
        median: at(0.5),
        p99: at(0.99),
        per_second: latencies.len() as f64 / elapsed.as_secs_f64(),
        bytes,
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn tls_to(ca_pem: &str) -> TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    for certificate in rustls::pki_types::CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(certificate.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    TlsConnector::from(Arc::new(config))
}

fn socket_of(url: &str) -> SocketAddr {
    let url = url::Url::parse(url).unwrap();
    format!(
        "{}:{}",
        url.host_str().unwrap(),
        url.port_or_known_default().unwrap()
    )
    .parse()
    .unwrap()
}

/// Tenant namespaces holding `count` NonAdminBackups each, created by the admin.
async fn fill(cluster: &TestCluster, ns: &str, count: usize) {
    cluster.tenant_namespace("alice", ns).await;
    let nabs: Api<NonAdminBackup> = Api::namespaced(cluster.admin(), ns);
    for i in 0..count {
        let nab: NonAdminBackup = serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
            "metadata": {"name": format!("backup-{i:04}"), "labels": {"app": "web"}},
            "spec": {"backupSpec": {"ttl": "24h0m0s", "includedResources": ["configmaps", "secrets"]}}
        }))
        .unwrap();
        nabs.create(&PostParams::default(), &nab).await.unwrap();
    }
}

/// The gateway on a loopback socket, reading as its service account, acting with callers' tokens.
async fn serve_gateway(cluster: &TestCluster) -> (SocketAddr, nac::shutdown::Shutdown) {
    let reader = cluster.client(
        &cluster
            .sa_token(OADP_NAMESPACE, GATEWAY_SERVICE_ACCOUNT)
            .await,
    );
    let mut config = GatewayConfig {
        oadp_namespace: OADP_NAMESPACE.into(),
        ..GatewayConfig::default()
    };
    config.rate_limit.burst = u32::MAX / 2;
    config.rate_limit.per_second = 1e9;
    let history_dir = tempfile::tempdir().unwrap().keep();
    let history = nac::history::open(&nac::history::sqlite_url_for(
        &history_dir.join("history.db"),
    ))
    .await
    .unwrap();
    let gateway = Gateway::new(
        reader,
        Arc::new(FnUserClients(cluster.client_factory())),
        Arc::new(HttpArtifactFetcher::new(Duration::from_secs(5)).unwrap()),
        history,
        config,
    );
    gateway.start();
    assert!(gateway.wait_ready(Duration::from_secs(60)).await);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = nac::shutdown::Shutdown::new(Duration::from_secs(1));
    let serving = shutdown.clone();
    tokio::spawn(async move { gateway.serve(listener, serving).await });
    (addr, shutdown)
}

/// The API server as its clients reach it: the real one's HTTPS endpoint, or the emulator's
/// router served on a loopback socket.
async fn api_server_target(cluster: &TestCluster) -> (SocketAddr, Option<TlsConnector>) {
    match cluster.real_endpoint() {
        Some((url, ca)) => (socket_of(url), Some(tls_to(ca))),
        None => {
            let router = cluster.emulator_server().unwrap().router();
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            tokio::spawn(async move { axum::serve(listener, router).await });
            (addr, None)
        }
    }
}

async fn run(cluster: TestCluster, duration: Duration, concurrency: usize) {
    let small = cluster.unique_name("bench-gw-20", None);
    let large = cluster.unique_name("bench-gw-200", None);
    fill(&cluster, &small, 20).await;
    fill(&cluster, &large, 200).await;
    let (gateway_addr, shutdown) = serve_gateway(&cluster).await;
    let (api_addr, api_tls) = api_server_target(&cluster).await;
    let token = cluster.user_token("alice");
    let server_name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();

    println!();
    println!(
        "{} — a tenant (alice) lists NonAdminBackups, {concurrency} concurrent keep-alive connections, {:.0} s each",
        cluster.server,
        duration.as_secs_f64()
    );
    println!(
        "{:<44} {:>10} {:>10} {:>10} {:>9}",
        "warm list", "req/s", "median", "p99", "bytes"
    );
    for (ns, items) in [(&small, 20), (&large, 200)] {
        let through_gateway = Target {
            addr: gateway_addr,
            tls: None,
            path: format!("/api/v1/namespaces/{ns}/backups?limit=500"),
            token: token.clone(),
        };
        let straight = Target {
            addr: api_addr,
            tls: api_tls.clone().map(|c| (c, server_name.clone())),
            path: format!("/apis/oadp.openshift.io/v1alpha1/namespaces/{ns}/nonadminbackups"),
            token: token.clone(),
        };
        let api = load(&straight, items, concurrency, duration).await;
        let gateway = load(&through_gateway, items, concurrency, duration).await;
        let scheme = if api_tls.is_some() { "HTTPS" } else { "HTTP" };
        for (label, f) in [
            (
                format!("{items} items: API server directly ({scheme})"),
                &api,
            ),
            (format!("{items} items: NAC gateway (HTTP)"), &gateway),
        ] {
            println!(
                "{label:<44} {:>10.0} {:>10} {:>10} {:>9}",
                f.per_second,
                ms(f.median),
                ms(f.p99),
                f.bytes
            );
        }
        println!(
            "{:<44} {:>9.2}x {:>9.2}x {:>9.2}x",
            format!("{items} items: gateway / API server"),
            gateway.per_second / api.per_second,
            api.median.as_secs_f64() / gateway.median.as_secs_f64(),
            api.p99.as_secs_f64() / gateway.p99.as_secs_f64(),
        );
    }

    // Cold requests: each user's first request (TokenReview + SubjectAccessReview against the
    // server), then the same request warm.
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    for user in USERS.iter().filter(|u| **u != "alice") {
        cluster.bind(&small, user, "User", "view").await;
        let target = Target {
            addr: gateway_addr,
            tls: None,
            path: format!("/api/v1/namespaces/{small}/backups?limit=1"),
            token: cluster.user_token(user),
        };
        let mut sender = open(&target).await;
        cold.push(fetch(&mut sender, &target).await.0);
        warm.push(fetch(&mut sender, &target).await.0);
    }
    cold.sort();
    warm.sort();
    println!(
        "cold request (TokenReview + SAR, {} users): median {}, slowest {}; the same request warm: median {}; cold/warm {:.1}x",
        cold.len(),
        ms(cold[cold.len() / 2]),
        ms(cold[cold.len() - 1]),
        ms(warm[warm.len() / 2]),
        cold[cold.len() / 2].as_secs_f64() / warm[warm.len() / 2].as_secs_f64()
    );
    shutdown.trigger();
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let duration = Duration::from_secs(if quick { 2 } else { 8 });
    let concurrency = 16;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        println!(
            "gateway benchmark ({}): a tenant's warm list of 20 and of 200 NonAdminBackups",
            if quick { "quick" } else { "full" }
        );
        if let Some(cluster) = TestCluster::real().await {
            assert_eq!(cluster.server, Server::Real);
            run(cluster, duration, concurrency).await;
        }
        run(TestCluster::emulator().await, duration, concurrency).await;
    });
}
