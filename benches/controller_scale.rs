//! Whole-system figure for the NonAdminBackup controller: N NonAdminBackups across M namespaces
//! created on the in-process emulator and reconciled to Created (Velero Backup made, status
//! mirrored) by the controller running as its service account, with the controller's API
//! writes per backup counted from the emulator's audit log. The baseline measured in the same
//! run is the time the tenants took to create the NABs. `--quick`: 1,000 NABs over 100
//! namespaces; default: 10,000 over 1,000. No Velero runs here: this measures NAC alone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams, PostParams};
use nac::api::nonadmin::NonAdminBackup;
use nac::controllers::{self, Context};
use nac::sim::apiserver::{ApiServer, EmulatorConfig};
use nac::sim::demo::{self, CONTROLLER_SERVICE_ACCOUNT, OADP_NAMESPACE};
use serde_json::json;

const CONTROLLER_USER: &str = "system:serviceaccount:openshift-adp:nac-controller";

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (nabs, namespaces) = if quick { (1_000, 100) } else { (10_000, 1_000) };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run(nabs, namespaces));
}

async fn run(total: usize, namespace_count: usize) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let server = ApiServer::new(EmulatorConfig {
        history_capacity: 200_000,
        audit_capacity: 1_000_000,
        ..EmulatorConfig::default()
    })
    .unwrap();
    let admin = server.client(&server.admin_token());
    demo::install(&admin).await.unwrap();
    let namespaces: Vec<String> = (0..namespace_count)
        .map(|i| format!("tenant-{i:04}"))
        .collect();
    let ns_api: Api<Namespace> = Api::all(admin.clone());
    for ns in &namespaces {
        let object: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
        ns_api
            .create(&PostParams::default(), &object)
            .await
            .unwrap();
    }
    let sas: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(admin.clone(), OADP_NAMESPACE);
    let request: k8s_openapi::api::authentication::v1::TokenRequest =
        serde_json::from_value(json!({"spec": {"audiences": [], "expirationSeconds": 86400}}))
            .unwrap();
    let token = sas
        .create_token_request(CONTROLLER_SERVICE_ACCOUNT, &PostParams::default(), &request)
        .await
        .unwrap()
        .status
        .unwrap()
        .token;
    let context = Arc::new(Context::new(server.client(&token), OADP_NAMESPACE));
    tokio::spawn(controllers::run(context));

    // Baseline: tenants creating the NonAdminBackups (16 in flight).
    let created_at = Instant::now();
    stream::iter(0..total)
        .map(|i| {
            let admin = admin.clone();
            let ns = namespaces[i % namespaces.len()].clone();
            async move {
                let nab: NonAdminBackup = serde_json::from_value(json!({
                    "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
                    "metadata": {"name": format!("nab-{i:05}")}, "spec": {"backupSpec": {}}
                }))
                .unwrap();
                Api::<NonAdminBackup>::namespaced(admin, &ns)
                    .create(&PostParams::default(), &nab)
                    .await
                    .unwrap();
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
    let create_time = created_at.elapsed();

    // Until every NAB is Created.
    let all: Api<NonAdminBackup> = Api::all(admin.clone());
    let deadline = Instant::now() + Duration::from_secs(1800);
    let reconciled = loop {
        let list = all.list(&ListParams::default()).await.unwrap();
        let done = list
            .items
            .iter()
            .filter(|n| {
                n.status.as_ref().and_then(|s| s.phase).map(|p| p.as_str()) == Some("Created")
            })
            .count();
        if done == total {
            break created_at.elapsed();
        }
        assert!(
            Instant::now() < deadline,
            "only {done} of {total} reached Created"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let writes = server
        .audit_entries()
        .iter()
        .filter(|e| {
            e.user == CONTROLLER_USER
                && matches!(e.verb.as_str(), "create" | "update" | "patch" | "delete")
        })
        .count();
    let reads = server
        .audit_entries()
        .iter()
        .filter(|e| e.user == CONTROLLER_USER && matches!(e.verb.as_str(), "get" | "list"))
        .count();
    println!(
        "NonAdminBackup controller at scale ({total} NABs across {namespace_count} namespaces, emulator in-process)"
    );
    println!("{:<48} {:>12} {:>10}", "measure", "value", "ratio");
    println!(
        "{:<48} {:>10.2} s {:>10}",
        "tenants create all NABs (baseline)",
        create_time.as_secs_f64(),
        "1.00x"
    );
    println!(
        "{:<48} {:>10.2} s {:>9.2}x",
        "all NABs Created (from first create)",
        reconciled.as_secs_f64(),
        reconciled.as_secs_f64() / create_time.as_secs_f64()
    );
    println!(
        "{:<48} {:>12.0}",
        "NABs reconciled to Created per second",
        total as f64 / reconciled.as_secs_f64()
    );
    println!(
        "{:<48} {:>12.2}",
        "controller API writes per NAB",
        writes as f64 / total as f64
    );
    println!(
        "{:<48} {:>12.2}",
        "controller API reads (get/list) per NAB",
        reads as f64 / total as f64
    );
    // Where the calls go, per NAB: which verb on which resource, and whether it succeeded.
    let mut breakdown: std::collections::BTreeMap<(String, String, u16), usize> =
        std::collections::BTreeMap::new();
    for e in server.audit_entries() {
        if e.user == CONTROLLER_USER && !matches!(e.verb.as_str(), "watch") {
            *breakdown
                .entry((e.verb.clone(), e.resource.clone(), e.code))
                .or_insert(0) += 1;
        }
    }
    println!("controller API calls per NAB, by verb, resource and status code:");
    for ((verb, resource, code), n) in breakdown {
        let per_nab = n as f64 / total as f64;
        if per_nab >= 0.01 {
            println!("  {verb:<7} {resource:<48} {code}  {per_nab:>6.2}");
        }
    }
}
