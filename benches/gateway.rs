//! Gateway benchmark: a warm authenticated `GET /api/v1/namespaces/team-a/backups` under
//! concurrent load (median, p99, requests/s) side by side with the same list taken straight
//! from the API server (the in-process emulator, same token, same run), and the cost of a cold
//! request (TokenReview + SubjectAccessReview) against a warm one.
//!
//! `cargo bench --bench gateway` runs the full set; `cargo bench --bench gateway -- --quick` a
//! small one. Figures are printed, never asserted on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use http_body_util::BodyExt;
use kube::api::{Api, PostParams};
use nac::api::nonadmin::NonAdminBackup;
use nac::gateway::artifacts::HttpArtifactFetcher;
use nac::gateway::clients::FnUserClients;
use nac::gateway::{Gateway, GatewayConfig};
use nac::sim::apiserver::{ApiServer, EmulatorConfig};
use nac::sim::demo::{self, GATEWAY_SERVICE_ACCOUNT, OADP_NAMESPACE};
use serde_json::json;
use tower::ServiceExt;

struct Sizes {
    label: &'static str,
    backups: usize,
    concurrency: usize,
    requests: usize,
    cold_users: usize,
}

async fn sa_token(admin: &kube::Client, ns: &str, name: &str) -> String {
    let sas: Api<k8s_openapi::api::core::v1::ServiceAccount> = Api::namespaced(admin.clone(), ns);
    let request: k8s_openapi::api::authentication::v1::TokenRequest =
        serde_json::from_value(json!({"spec": {"audiences": [], "expirationSeconds": 86400}}))
            .unwrap();
    sas.create_token_request(name, &PostParams::default(), &request)
        .await
        .unwrap()
        .status
        .unwrap()
        .token
}

async fn get(router: &axum::Router, path: &str, token: &str) -> Duration {
    let request = http::Request::builder()
        .uri(path)
        .header("authorization", format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let started = Instant::now();
    let response = router.clone().oneshot(request).await.unwrap();
    assert!(
        response.status().is_success(),
        "{path}: {}",
        response.status()
    );
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert!(!body.is_empty());
    started.elapsed()
}

struct Figures {
    median: Duration,
    p99: Duration,
    per_second: f64,
}

async fn load(router: &axum::Router, path: &str, token: &str, sizes: &Sizes) -> Figures {
    // Warm up.
    for _ in 0..20 {
        get(router, path, token).await;
    }
    let started = Instant::now();
    let per_worker = sizes.requests / sizes.concurrency;
    let mut workers = Vec::new();
    for _ in 0..sizes.concurrency {
        let router = router.clone();
        let path = path.to_string();
        let token = token.to_string();
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(per_worker);
            for _ in 0..per_worker {
                latencies.push(get(&router, &path, &token).await);
            }
            latencies
        }));
    }
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
    }
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let quick = std::env::args().any(|a| a == "--quick");
    let sizes = if quick {
        Sizes {
            label: "quick",
            backups: 50,
            concurrency: 4,
            requests: 400,
            cold_users: 20,
        }
    } else {
        Sizes {
            label: "full",
            backups: 200,
            concurrency: 16,
            requests: 4000,
            cold_users: 100,
        }
    };
    let server = ApiServer::new(EmulatorConfig::default()).unwrap();
    let admin = server.client(&server.admin_token());
    demo::install(&admin).await.unwrap();
    let nabs: Api<NonAdminBackup> = Api::namespaced(admin.clone(), "team-a");
    for i in 0..sizes.backups {
        let nab: NonAdminBackup = serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
            "metadata": {"name": format!("backup-{i:04}"), "labels": {"app": "web"}},
            "spec": {"backupSpec": {"ttl": "24h0m0s"}}
        }))
        .unwrap();
        nabs.create(&PostParams::default(), &nab).await.unwrap();
    }
    let reader = server.client(&sa_token(&admin, OADP_NAMESPACE, GATEWAY_SERVICE_ACCOUNT).await);
    let emulator = server.clone();
    let mut config = GatewayConfig {
        oadp_namespace: OADP_NAMESPACE.into(),
        ..GatewayConfig::default()
    };
    config.rate_limit.burst = u32::MAX / 2;
    config.rate_limit.per_second = 1e9;
    // The history store (SQLite) lives in a directory kept until the benchmark ends.
    let history_dir = tempfile::tempdir().unwrap();
    let history = nac::history::open(&nac::history::sqlite_url_for(
        &history_dir.path().join("history.db"),
    ))
    .await
    .unwrap();
    let gateway = Gateway::new(
        reader,
        Arc::new(FnUserClients(move |token: &str| emulator.client(token))),
        Arc::new(HttpArtifactFetcher::new(Duration::from_secs(5)).unwrap()),
        history,
        config,
    );
    gateway.start();
    assert!(gateway.wait_ready(Duration::from_secs(30)).await);
    let gateway_router = gateway.router();
    let emulator_router = server.router();
    let alice = server.add_user("alice", &[]);

    println!(
        "gateway benchmark ({}): {} NonAdminBackups in team-a, {} requests, concurrency {}",
        sizes.label, sizes.backups, sizes.requests, sizes.concurrency
    );
    let gateway_path = "/api/v1/namespaces/team-a/backups?limit=500";
    let emulator_path = "/apis/oadp.openshift.io/v1alpha1/namespaces/team-a/nonadminbackups";
    let through_gateway = load(&gateway_router, gateway_path, &alice, &sizes).await;
    let straight = load(&emulator_router, emulator_path, &alice, &sizes).await;
    println!(
        "{:<34} {:>12} {:>12} {:>12}",
        "warm list of team-a's backups", "median", "p99", "req/s"
    );
    println!(
        "{:<34} {:>12} {:>12} {:>12.0}",
        "gateway (watch cache + cached SAR)",
        ms(through_gateway.median),
        ms(through_gateway.p99),
        through_gateway.per_second
    );
    println!(
        "{:<34} {:>12} {:>12} {:>12.0}",
        "API server (emulator) directly",
        ms(straight.median),
        ms(straight.p99),
        straight.per_second
    );
    println!(
        "ratios gateway/API server: median {:.2}x, p99 {:.2}x, throughput {:.2}x",
        through_gateway.median.as_secs_f64() / straight.median.as_secs_f64(),
        through_gateway.p99.as_secs_f64() / straight.p99.as_secs_f64(),
        through_gateway.per_second / straight.per_second
    );

    // Cold requests: a fresh token per user (TokenReview) and a fresh identity (SAR).
    let bindings: Api<k8s_openapi::api::rbac::v1::RoleBinding> =
        Api::namespaced(admin.clone(), "team-a");
    let mut tokens = Vec::new();
    for i in 0..sizes.cold_users {
        let user = format!("cold-user-{i}");
        let binding: k8s_openapi::api::rbac::v1::RoleBinding = serde_json::from_value(json!({
            "metadata": {"name": user},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]
        }))
        .unwrap();
        bindings
            .create(&PostParams::default(), &binding)
            .await
            .unwrap();
        tokens.push(server.add_user(&user, &[]));
    }
    let small = "/api/v1/namespaces/team-a/backups?limit=1";
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    for token in &tokens {
        cold.push(get(&gateway_router, small, token).await);
        warm.push(get(&gateway_router, small, token).await);
    }
    cold.sort();
    warm.sort();
    let cold_median = cold[cold.len() / 2];
    let warm_median = warm[warm.len() / 2];
    println!(
        "cold request (TokenReview + SAR, {} users): median {}, p99 {}; the same request warm: median {}; cold/warm {:.1}x",
        tokens.len(),
        ms(cold_median),
        ms(cold[((cold.len() - 1) as f64 * 0.99).round() as usize]),
        ms(warm_median),
        cold_median.as_secs_f64() / warm_median.as_secs_f64()
    );
}
