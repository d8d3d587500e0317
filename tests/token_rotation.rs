//! Service-account tokens rotated under the processes (issue 22), on the real control plane.
//! A `nac controller` and a `nac gateway` read their tokens from files named by their
//! kubeconfigs (`tokenFile`, as a pod reads its projected token); the tokens are bound tokens
//! (TokenRequest with a `boundObjectRef`) that die when their bound Secret is deleted. The
//! rotation is the kubelet's: a new token is written over the file (atomically), the old one
//! stays valid for a while (the kubelet rotates at 80% of a lifetime of at least 10 minutes, so
//! at least two minutes are left) and then dies. Afterwards kube-apiserver is restarted, so
//! every connection — watches included — is made again:
//! - the old tokens are refused (401) by then: nothing can lean on them;
//! - the controller makes and finishes a new backup; the gateway reviews a caller it never saw
//!   (TokenReview and SubjectAccessReview with its own new token) and lists the new backup;
//! - neither process logs an authentication failure of its own, nor restarts.
//!
//! kube-rs re-reads a token file at least once a minute: that is the margin the test leaves.
//! In a pod (`Config::incluster`) the same reloading token file is used.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/nac_process.rs"]
mod nac_process;
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use nac::api::client_identity::Component;
use nac::api::nonadmin::NonAdminBackup;
use nac::sim::demo::{CONTROLLER_SERVICE_ACCOUNT, GATEWAY_SERVICE_ACCOUNT, OADP_NAMESPACE};
use nac_process::{controller_replica, gateway_with_kubeconfig};
use serde_json::{Value, json};
use support::cluster::{TestCluster, eventually};

/// How long an old token stays valid after its successor is written: more than kube-rs's
/// one-minute reload, less than the kubelet's two minutes at the least.
const OLD_TOKEN_GRACE: Duration = Duration::from_secs(70);

/// A 10-minute token of service account `account`, bound to a new Secret `secret` in the
/// OADP namespace (deleting the Secret kills the token).
async fn bound_token(admin: &Client, account: &str, secret: &str) -> String {
    let secrets = Api::<Secret>::namespaced(admin.clone(), OADP_NAMESPACE);
    let bound = secrets
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": secret}})).unwrap(),
        )
        .await
        .unwrap();
    let request: TokenRequest = serde_json::from_value(json!({"spec": {
        "audiences": [],
        "expirationSeconds": 600,
        "boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": secret,
                           "uid": bound.metadata.uid.unwrap()}
    }}))
    .unwrap();
    Api::<ServiceAccount>::namespaced(admin.clone(), OADP_NAMESPACE)
        .create_token_request(account, &PostParams::default(), &request)
        .await
        .unwrap()
        .status
        .unwrap()
        .token
}

/// Replaces the token file in one step, as the kubelet swaps a projected volume's contents.
fn write_token(path: &Path, token: &str) {
    let next = path.with_extension("next");
    std::fs::write(&next, token).unwrap();
    std::fs::rename(&next, path).unwrap();
}

/// The names in a gateway list answer whose Velero Backup completed.
fn completed_names(body: &str) -> Vec<String> {
    let listed: Value = serde_json::from_str(body).unwrap_or_default();
    listed["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter(|i| {
                    i.pointer("/status/veleroBackup/status/phase") == Some(&json!("Completed"))
                })
                .filter_map(|i| i.pointer("/metadata/name")?.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The lines of a process's log that tell of its own credentials being refused.
fn refusals(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|line| line.contains("Unauthorized") || line.contains("401"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_processes_keep_working_across_a_token_rotation() {
    let Some(cluster) = TestCluster::real().await else {
        return;
    };
    let _velero_store = support::start_velero(&cluster).await;
    let admin = cluster.admin();
    let ns = cluster.unique_name("rotation-alice", None);
    cluster.tenant_namespace("alice", &ns).await;
    let alice = cluster.user("alice");
    let dir = tempfile::tempdir().unwrap();
    let suffix = cluster.unique_name("t", None);
    let secret = |who: &str, n: u32| format!("{who}-token-{n}-{suffix}");

    let controller_file = dir.path().join("controller.token");
    let gateway_file = dir.path().join("gateway.token");
    let first_controller_token =
        bound_token(&admin, CONTROLLER_SERVICE_ACCOUNT, &secret("controller", 1)).await;
    write_token(&controller_file, &first_controller_token);
    write_token(
        &gateway_file,
        &bound_token(&admin, GATEWAY_SERVICE_ACCOUNT, &secret("gateway", 1)).await,
    );
    let controller_config = cluster
        .kubeconfig_with_token_file(&format!("controller-{suffix}"), &controller_file)
        .unwrap();
    let gateway_config = cluster
        .kubeconfig_with_token_file(&format!("gateway-{suffix}"), &gateway_file)
        .unwrap();
    let (mut controller, _) = controller_replica(
        dir.path(),
        &controller_config,
        &format!("controller-{suffix}"),
    );
    let (mut gateway, addr) =
        gateway_with_kubeconfig(dir.path(), &gateway_config, "gateway", &[]).await;

    let backups = Api::<NonAdminBackup>::namespaced(alice.clone(), &ns);
    backups
        .create(
            &PostParams::default(),
            &support::nab_with("before", json!({})),
        )
        .await
        .unwrap();
    eventually("the first backup to finish", 60, || async {
        support::nab_finished(&backups, "before")
            .await
            .then_some(())
    })
    .await;
    let list_path = format!("/api/v1/namespaces/{ns}/backups");
    let (status, _, body) =
        support::bearer_get(&addr, &list_path, &cluster.user_token("alice")).await;
    assert_eq!(status, 200, "{body}");

    // The rotation: new tokens in the files; the old ones die a while later.
    write_token(
        &controller_file,
        &bound_token(&admin, CONTROLLER_SERVICE_ACCOUNT, &secret("controller", 2)).await,
    );
    write_token(
        &gateway_file,
        &bound_token(&admin, GATEWAY_SERVICE_ACCOUNT, &secret("gateway", 2)).await,
    );
    tokio::time::sleep(OLD_TOKEN_GRACE).await;
    let secrets = Api::<Secret>::namespaced(admin.clone(), OADP_NAMESPACE);
    for who in ["controller", "gateway"] {
        secrets
            .delete(&secret(who, 1), &DeleteParams::default())
            .await
            .unwrap();
    }
    let old_client = cluster.client_as(&first_controller_token, Component::Cli);
    eventually("the old token to be refused", 60, || async {
        match Api::<NonAdminBackup>::all(old_client.clone())
            .list(&ListParams::default().limit(1))
            .await
        {
            Err(kube::Error::Api(status)) if status.code == 401 => Some(()),
            _ => None,
        }
    })
    .await;

    // Every connection made again, with whatever token each process holds now.
    let outage = cluster
        .restart_apiserver(Duration::from_secs(2))
        .await
        .unwrap();
    let back = Instant::now();
    backups
        .create(
            &PostParams::default(),
            &support::nab_with("after", json!({})),
        )
        .await
        .unwrap();
    eventually(
        "a backup made after the rotation to finish",
        120,
        || async { support::nab_finished(&backups, "after").await.then_some(()) },
    )
    .await;
    let controller_ok = back.elapsed();
    // A caller the gateway never reviewed: its TokenReview and SubjectAccessReviews go out
    // with the gateway's new token.
    cluster.bind(&ns, "carol", "User", "admin").await;
    let carol = cluster.user_token("carol");
    let names = eventually(
        "the gateway to serve a new caller the new backup",
        90,
        || async {
            let (status, _, body) = support::bearer_get(&addr, &list_path, &carol).await;
            let names = completed_names(&body);
            (status == 200 && names.contains(&"after".to_string())).then_some(names)
        },
    )
    .await;
    let gateway_ok = back.elapsed();
    assert!(names.contains(&"before".to_string()), "{names:?}");

    for (process, name) in [(&controller, "controller"), (&gateway, "gateway")] {
        let log = process.log_text();
        let refused = refusals(&log);
        assert!(
            refused.is_empty(),
            "the {name} was refused with a token of its own:\n{}",
            refused.join("\n")
        );
    }
    println!(
        "tokens rotated (old ones killed {} s after the new ones were written, and refused with 401); kube-apiserver restarted ({:.1} s); then the controller finished a new backup in {:.2} s and the gateway served a caller it never reviewed in {:.2} s, without a refusal in either log",
        OLD_TOKEN_GRACE.as_secs(),
        outage.as_secs_f64(),
        controller_ok.as_secs_f64(),
        gateway_ok.as_secs_f64(),
    );
    nac_process::stop_cleanly(&mut [(&mut controller, "controller"), (&mut gateway, "gateway")])
        .await;
}
