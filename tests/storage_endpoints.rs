//! Issue 17, finding 2 end to end, on the emulator and on the real kube-apiserver with NAC
//! running as deployed: a tenant's own storage location on the simulator's object store, whose
//! download URLs point at a loopback endpoint. The gateway does not download its artifacts
//! until the administrator lists that endpoint in `nac-policy` (`storageEndpoints.allow`),
//! while the administrator's default location is served throughout; a location naming the
//! cloud metadata service is refused with a condition naming the field.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use http::Method;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Client;
use kube::api::{Api, PostParams};
use nac::api::nonadmin::{NonAdminBackup, NonAdminBackupStorageLocation};
use nac::controllers::policy_source::POLICY_CONFIG_MAP;
use nac::sim::demo::OADP_NAMESPACE;
use serde_json::{Value, json};
use support::cluster::{TestCluster, eventually};
use support::nac_stack;

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

async fn wait_nab(alice: &Client, ns: &str, name: &str) -> Value {
    eventually(&format!("NonAdminBackup {name} completed"), 90, || async {
        let nab = Api::<NonAdminBackup>::namespaced(alice.clone(), ns)
            .get(name)
            .await
            .unwrap();
        let v = serde_json::to_value(nab).unwrap();
        (s(&v, "/status/veleroBackup/status/phase") == "Completed").then_some(v)
    })
    .await
}

async fn create_nab(alice: &Client, ns: &str, name: &str, backup_spec: Value) {
    let nab: NonAdminBackup = serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
        "metadata": {"name": name}, "spec": {"backupSpec": backup_spec}
    }))
    .unwrap();
    Api::<NonAdminBackup>::namespaced(alice.clone(), ns)
        .create(&PostParams::default(), &nab)
        .await
        .unwrap();
}

async fn create_nabsl(alice: &Client, ns: &str, name: &str, spec: Value) {
    let location: NonAdminBackupStorageLocation = serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackupStorageLocation",
        "metadata": {"name": name}, "spec": {"backupStorageLocationSpec": spec}
    }))
    .unwrap();
    Api::<NonAdminBackupStorageLocation>::namespaced(alice.clone(), ns)
        .create(&PostParams::default(), &location)
        .await
        .unwrap();
}

async fn nabsl_status(
    alice: &Client,
    ns: &str,
    name: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    eventually(
        &format!("NonAdminBackupStorageLocation {name}"),
        60,
        || async {
            let location = Api::<NonAdminBackupStorageLocation>::namespaced(alice.clone(), ns)
                .get(name)
                .await
                .unwrap();
            let v = serde_json::to_value(location).unwrap();
            done(&v).then_some(v)
        },
    )
    .await
}

async fn tenant_location_downloads_follow_the_storage_endpoint_policy(cluster: TestCluster) {
    let admin = cluster.admin();
    let policies = Api::<ConfigMap>::namespaced(admin.clone(), OADP_NAMESPACE);
    // No policy: the default rule (the real server keeps state between binaries' cases).
    let _ = policies
        .delete(POLICY_CONFIG_MAP, &Default::default())
        .await;
    let ns = cluster.unique_name("team-a", None);
    cluster.tenant_namespace("alice", &ns).await;
    let stack = nac_stack::start(&cluster, |_| {}).await;
    let token = cluster.user_token("alice");
    let alice = cluster.client(&token);

    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "bucket-credentials"},
        "stringData": {"cloud": "[default]\naws_access_key_id=tenant\naws_secret_access_key=secret\n"}
    }))
    .unwrap();
    Api::<Secret>::namespaced(alice.clone(), &ns)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();

    // A location naming the metadata service is refused, the field named.
    create_nabsl(
        &alice,
        &ns,
        "metadata",
        json!({"provider": "aws", "config": {"region": "us-east-1", "publicUrl": "http://169.254.169.254/latest/"},
               "objectStorage": {"bucket": "b"}, "credential": {"name": "bucket-credentials", "key": "cloud"}}),
    )
    .await;
    let refused = nabsl_status(&alice, &ns, "metadata", |v| {
        s(v, "/status/phase") == "BackingOff"
    })
    .await;
    let accepted = refused["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Accepted")
        .cloned()
        .unwrap();
    assert_eq!(accepted["status"], "False");
    assert!(
        s(&accepted, "/message").contains(
            "spec.backupStorageLocationSpec.config.publicUrl is restricted, 169.254.169.254 is a cloud metadata endpoint"
        ),
        "{accepted}"
    );

    // The tenant's own location on the simulator's store (its downloads are at 127.0.0.1).
    create_nabsl(
        &alice,
        &ns,
        "own",
        json!({"provider": nac::sim::velero::storage::LOCAL_PROVIDER,
               "objectStorage": {"bucket": "tenant-bucket", "prefix": "backups"},
               "credential": {"name": "bucket-credentials", "key": "cloud"}}),
    )
    .await;
    nabsl_status(&alice, &ns, "own", |v| {
        s(v, "/status/phase") == "Created"
            && s(v, "/status/veleroBackupStorageLocation/status/phase") == "Available"
    })
    .await;
    create_nab(&alice, &ns, "mine", json!({"storageLocation": "own"})).await;
    create_nab(&alice, &ns, "admins", json!({})).await;
    wait_nab(&alice, &ns, "mine").await;
    wait_nab(&alice, &ns, "admins").await;

    let logs = |name: &'static str| {
        let path = format!("/api/v1/namespaces/{ns}/backups/{name}/logs");
        let (stack, token) = (&stack, token.clone());
        async move { stack.call(Method::GET, &path, &token, None).await }
    };
    // The administrator's location: served.
    let served = logs("admins").await;
    assert_eq!(served.status, 200, "{}", served.text());
    // The tenant's location at a loopback endpoint: not downloaded, said so, URL not echoed.
    let refused = logs("mine").await;
    assert_eq!(refused.status, 409, "{}", refused.text());
    assert!(
        refused
            .text()
            .contains("NAC does not download from this storage location's endpoint"),
        "{}",
        refused.text()
    );
    assert!(!refused.text().contains("127.0.0.1"), "{}", refused.text());

    // The administrator lists the simulator's endpoint: the same download now works.
    let policy: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": POLICY_CONFIG_MAP, "namespace": OADP_NAMESPACE},
        "data": {"policy.yaml": format!("storageEndpoints:\n  allow:\n    - {}\n", stack.download_origin)}
    }))
    .unwrap();
    policies
        .create(&PostParams::default(), &policy)
        .await
        .unwrap();
    let body = eventually("the tenant location's logs once allowed", 30, || async {
        let answer = logs("mine").await;
        (answer.status == 200).then_some(answer.text())
    })
    .await;
    assert!(!body.is_empty());
    let _ = policies
        .delete(POLICY_CONFIG_MAP, &Default::default())
        .await;
}

on_both_servers!(tenant_location_downloads_follow_the_storage_endpoint_policy);
