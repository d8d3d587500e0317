//! The admin policy from a real DataProtectionApplication object on the emulator: with the dev
//! DPA CRD installed, `spec.nonAdmin.enforceBackupSpec` refuses a NonAdminBackup naming the
//! field, and a changed or deleted DPA applies to the running controllers without a restart.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;
use support::cluster::{eventually_seen, wait_for_object};
use support::sa_token;

use std::sync::Arc;

use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use nac::api::nonadmin::NonAdminBackup;
use nac::controllers::{self, Context, policy_source};
use nac::policy::NacPolicy;
use nac::sim::apiserver::{ApiServer, EmulatorConfig};
use nac::sim::demo::{self, CONTROLLER_SERVICE_ACCOUNT, OADP_NAMESPACE};
use serde_json::{Value, json};

const DPA_CRD: &str =
    include_str!("../deploy/dev/oadp-crds/oadp.openshift.io_dataprotectionapplications.yaml");

fn dpas(c: &Client) -> Api<DynamicObject> {
    Api::namespaced_with(c.clone(), OADP_NAMESPACE, &policy_source::dpa_resource())
}

fn non_admin(ttl: &str) -> Value {
    json!({"enable": true, "enforceBackupSpec": {"ttl": ttl}})
}

fn nabs(c: &Client) -> Api<NonAdminBackup> {
    Api::namespaced(c.clone(), "team-a")
}

async fn create_nab(c: &Client, name: &str, ttl: &str) {
    let nab: NonAdminBackup = serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
        "metadata": {"name": name}, "spec": {"backupSpec": {"ttl": ttl}}
    }))
    .unwrap();
    nabs(c).create(&PostParams::default(), &nab).await.unwrap();
}

async fn wait_nab(c: &Client, name: &str, done: impl Fn(&Value) -> bool) -> Value {
    wait_for_object(&nabs(c), name, 30, done).await
}

async fn wait_policy(context: &Context, expected: &NacPolicy) {
    eventually_seen("the controllers' policy", 30, || async {
        let policy = context.policy.read().unwrap();
        if *policy == *expected {
            Ok(())
        } else {
            Err(format!(
                "the policy never became {expected:?}; it is {policy:?}"
            ))
        }
    })
    .await
}

fn accepted(v: &Value) -> &Value {
    v.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Accepted"))
        .unwrap_or(&Value::Null)
}

fn phase(v: &Value) -> &str {
    v.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Refused by the admin's enforced ttl, with the field named.
async fn refused(c: &Client, name: &str, enforced: &str) {
    let v = wait_nab(c, name, |v| phase(v) == "BackingOff").await;
    let condition = accepted(&v);
    assert_eq!(condition["status"], "False", "{name}: {v}");
    assert_eq!(condition["reason"], "InvalidBackupSpec", "{name}");
    let message = condition["message"].as_str().unwrap();
    assert!(
        message.contains("spec.backupSpec.ttl") && message.contains(enforced),
        "{name}: {message}"
    );
}

#[tokio::test]
async fn a_dpa_enforced_ttl_refuses_other_ttls_and_its_changes_apply_without_restart() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let server = ApiServer::new(EmulatorConfig::default()).unwrap();
    let admin = server.client(&server.admin_token());
    demo::install(&admin).await.unwrap();
    demo::apply_manifests(&admin, "DataProtectionApplication CRD", DPA_CRD)
        .await
        .unwrap();
    let mut dpa = DynamicObject::new("dpa", &policy_source::dpa_resource()).within(OADP_NAMESPACE);
    dpa.data = json!({"spec": {"nonAdmin": non_admin("24h0m0s"),
                               "configuration": {"velero": {"defaultPlugins": ["aws"]}}}});
    dpas(&admin)
        .create(&PostParams::default(), &dpa)
        .await
        .unwrap();
    // A second DPA that does not enable non-admin backups is ignored.
    let mut other =
        DynamicObject::new("aaa-other", &policy_source::dpa_resource()).within(OADP_NAMESPACE);
    other.data = json!({"spec": {"nonAdmin": {"enable": false,
                                              "enforceBackupSpec": {"ttl": "1m0s"}}}});
    dpas(&admin)
        .create(&PostParams::default(), &other)
        .await
        .unwrap();

    let token = sa_token(&admin, OADP_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT).await;
    // The one-shot read sees the DPA as the controller's service account (its RBAC allows it).
    let first = NacPolicy::from_sources(Some(&non_admin("24h0m0s")), None).unwrap();
    let probe = Context::new(server.client(&token), OADP_NAMESPACE);
    policy_source::load(&probe).await.unwrap();
    assert_eq!(*probe.policy.read().unwrap(), first);
    let context = Arc::new(Context::new(server.client(&token), OADP_NAMESPACE));
    tokio::spawn(controllers::run(context.clone()));
    // Start-up reads the ConfigMap; only the watch brings the DPA's enforcement, so once it is
    // in force the running controllers got it from the watched DPA.
    wait_policy(&context, &first).await;

    let alice = server.client(&server.add_user("alice", &[]));
    create_nab(&alice, "short", "1h0m0s").await;
    refused(&alice, "short", "24h0m0s").await;
    create_nab(&alice, "daily", "24h0m0s").await;
    wait_nab(&alice, "daily", |v| accepted(v)["status"] == "True").await;

    // The admin changes the DPA: the running controllers follow.
    dpas(&admin)
        .patch(
            "dpa",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"nonAdmin": {"enforceBackupSpec": {"ttl": "1h0m0s"}}}})),
        )
        .await
        .unwrap();
    wait_policy(
        &context,
        &NacPolicy::from_sources(Some(&non_admin("1h0m0s")), None).unwrap(),
    )
    .await;
    create_nab(&alice, "short-again", "1h0m0s").await;
    wait_nab(&alice, "short-again", |v| accepted(v)["status"] == "True").await;
    create_nab(&alice, "daily-again", "24h0m0s").await;
    refused(&alice, "daily-again", "1h0m0s").await;

    // Without a DPA, nothing is enforced any more.
    dpas(&admin)
        .delete("dpa", &DeleteParams::default())
        .await
        .unwrap();
    wait_policy(&context, &NacPolicy::default()).await;
    create_nab(&alice, "weekly", "168h0m0s").await;
    wait_nab(&alice, "weekly", |v| accepted(v)["status"] == "True").await;
}

#[tokio::test]
async fn without_the_dpa_crd_the_config_map_alone_decides() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let server = ApiServer::new(EmulatorConfig::default()).unwrap();
    let admin = server.client(&server.admin_token());
    demo::install(&admin).await.unwrap();
    let config_map: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": policy_source::POLICY_CONFIG_MAP, "namespace": OADP_NAMESPACE},
        "data": {"policy.yaml": "requireApprovalForBSL: true\n"}
    }))
    .unwrap();
    Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(admin.clone(), OADP_NAMESPACE)
        .create(&PostParams::default(), &config_map)
        .await
        .unwrap();
    let token = sa_token(&admin, OADP_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT).await;
    let context = Arc::new(Context::new(server.client(&token), OADP_NAMESPACE));
    // The DPA list answers 404: no error, the ConfigMap's policy.
    policy_source::load(&context).await.unwrap();
    assert!(
        context
            .policy
            .read()
            .unwrap()
            .settings()
            .require_approval_for_bsl
    );
    // The watch works the same, and follows the ConfigMap.
    *context.policy.write().unwrap() = NacPolicy::default();
    tokio::spawn(policy_source::watch(context.clone()));
    let with_approval = NacPolicy::from_sources(
        None,
        Some(
            &[(
                "policy.yaml".to_string(),
                "requireApprovalForBSL: true\n".to_string(),
            )]
            .into(),
        ),
    )
    .unwrap();
    wait_policy(&context, &with_approval).await;
    Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(admin.clone(), OADP_NAMESPACE)
        .delete(policy_source::POLICY_CONFIG_MAP, &DeleteParams::default())
        .await
        .unwrap();
    wait_policy(&context, &NacPolicy::default()).await;
}
