//! NonAdminBackupStorageLocation scenarios on the emulator and on the real kube-apiserver (each
//! case `NAME::emulator` and `NAME::real`) with the Velero simulator and NAC's
//! NABSL controller running as its own service account: approval off and on (approve, reject,
//! revoke), secret rotation, spec updates after approval, deletion cascade, malicious tenants,
//! the Events tenants see, and a crash between every step.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;
use support::cluster::{
    TestCluster, eventually_seen, eventually_true as eventually, wait_for_object,
};
use support::controller_env::ControllerEnv as Env;
use support::sa_token;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Event, Secret};
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use nac::api::client_identity::Component;
use nac::api::nonadmin::{
    NonAdminBackup, NonAdminBackupStorageLocation, NonAdminBackupStorageLocationRequest,
};
use nac::api::velero::BackupStorageLocation;
use nac::controllers::{Context, health, nabsl, nabsl_decision, policy_source};
use nac::sim::demo::{CONTROLLER_SERVICE_ACCOUNT, OADP_NAMESPACE};
use serde_json::{Value, json};

const LOCAL: &str = "nac.openshift.io/local";

/// The cluster, Velero, the tenant's credential Secret `creds` in team-a, and the NABSL
/// controller (with approval required when `approval`).
async fn env(cluster: TestCluster, approval: bool) -> Env {
    env_with(cluster, approval, true).await
}

async fn env_with(cluster: TestCluster, approval: bool, with_controller: bool) -> Env {
    let env = Env::new(cluster).await;
    let admin = env.admin.clone();
    // The admin's policy, set or cleared (the real server keeps one case's ConfigMap for the
    // next).
    let policies = Api::<ConfigMap>::namespaced(admin.clone(), OADP_NAMESPACE);
    let _ = policies
        .delete(policy_source::POLICY_CONFIG_MAP, &Default::default())
        .await;
    if approval {
        let cm: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": policy_source::POLICY_CONFIG_MAP, "namespace": OADP_NAMESPACE},
            "data": {"policy.yaml": "requireApprovalForBSL: true\n"}
        }))
        .unwrap();
        policies.create(&PostParams::default(), &cm).await.unwrap();
    }
    put_secret(
        &admin,
        "creds",
        "[default]\naws_access_key_id=one\naws_secret_access_key=s1\n",
    )
    .await;
    env.start_velero(|_| {}).await;
    if with_controller {
        let context = env.context();
        context.load_policy().await.unwrap();
        tokio::spawn(policy_source::watch(context.clone()));
        tokio::spawn(nabsl::run(context));
    }
    env
}

async fn put_secret(admin: &Client, name: &str, content: &str) {
    let api: Api<Secret> = Api::namespaced(admin.clone(), "team-a");
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "team-a"}, "stringData": {"cloud": content}
    }))
    .unwrap();
    match api.get_opt(name).await.unwrap() {
        None => {
            api.create(&PostParams::default(), &secret).await.unwrap();
        }
        Some(_) => {
            api.patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"stringData": {"cloud": content}})),
            )
            .await
            .unwrap();
        }
    }
}

fn location(name: &str, patch: Value) -> NonAdminBackupStorageLocation {
    let mut v = json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackupStorageLocation",
        "metadata": {"name": name},
        "spec": {"backupStorageLocationSpec": {
            "provider": LOCAL,
            "objectStorage": {"bucket": "team-a-bucket", "prefix": "velero"},
            "credential": {"name": "creds", "key": "cloud"}
        }}
    });
    nac::sim::apiserver::patch::merge_patch(&mut v, &patch);
    serde_json::from_value(v).unwrap()
}

fn nabsls(c: &Client) -> Api<NonAdminBackupStorageLocation> {
    Api::namespaced(c.clone(), "team-a")
}

async fn create(e: &Env, name: &str, patch: Value) {
    nabsls(&e.alice)
        .create(&PostParams::default(), &location(name, patch))
        .await
        .unwrap();
}

async fn wait(c: &Client, name: &str, secs: u64, done: impl Fn(&Value) -> bool) -> Value {
    wait_for_object(&nabsls(c), name, secs, done).await
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn condition<'a>(v: &'a Value, type_: &str) -> &'a Value {
    v.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .unwrap_or(&Value::Null)
}

fn is(v: &Value, type_: &str, status: &str) -> bool {
    condition(v, type_)["status"] == status
}

async fn bsl(admin: &Client, name: &str) -> Option<BackupStorageLocation> {
    Api::<BackupStorageLocation>::namespaced(admin.clone(), OADP_NAMESPACE)
        .get_opt(name)
        .await
        .unwrap()
}

async fn copied(admin: &Client, name: &str) -> Option<Secret> {
    Api::<Secret>::namespaced(admin.clone(), OADP_NAMESPACE)
        .get_opt(name)
        .await
        .unwrap()
}

fn requests(admin: &Client) -> Api<NonAdminBackupStorageLocationRequest> {
    Api::namespaced(admin.clone(), OADP_NAMESPACE)
}

async fn decide(admin: &Client, nacuuid: &str, decision: &str) {
    requests(admin)
        .patch(
            nacuuid,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"approvalDecision": decision}})),
        )
        .await
        .unwrap();
}

fn created_and_available(v: &Value) -> bool {
    s(v, "/status/phase") == "Created"
        && s(v, "/status/veleroBackupStorageLocation/status/phase") == "Available"
}

fn cloud_of(secret: &Secret) -> String {
    String::from_utf8(secret.data.as_ref().unwrap()["cloud"].0.clone()).unwrap()
}

/// The Events on NABSL `name` in team-a, listed as `c` (core v1, as `kubectl describe` does).
async fn events_of(c: &Client, name: &str) -> Vec<Event> {
    Api::<Event>::namespaced(c.clone(), "team-a")
        .list(&ListParams::default().fields(&format!("involvedObject.name={name}")))
        .await
        .unwrap()
        .items
}

fn reasons_of(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| e.reason.clone().unwrap_or_default())
        .collect()
}

async fn wait_event(e: &Env, name: &str, reason: &str) -> Vec<Event> {
    let what = format!("a {reason} Event on {name}");
    eventually_seen(&what, 30, || async {
        let events = events_of(&e.alice, name).await;
        if reasons_of(&events).iter().any(|r| r == reason) {
            Ok(events)
        } else {
            Err(format!(
                "no {reason} Event on {name}; have {:?}",
                reasons_of(&events)
            ))
        }
    })
    .await
}

/// No Event names an object of the OADP namespace (the NACUUID names them all).
fn assert_notes_stay_in_the_namespace(events: &[Event], nacuuid: &str) {
    for event in events {
        let note = event.message.clone().unwrap_or_default();
        assert!(!note.contains(nacuuid), "{note}");
        assert!(!note.contains(OADP_NAMESPACE), "{note}");
        assert_eq!(event.metadata.namespace.as_deref(), Some("team-a"));
        assert_eq!(event.reporting_component.as_deref(), Some("nac-controller"));
    }
}

async fn approval_off_creates_an_available_bsl_with_the_secret_copied(cluster: TestCluster) {
    let e = env(cluster, false).await;
    create(&e, "mine", json!({})).await;
    let done = wait(&e.alice, "mine", 30, created_and_available).await;
    let nacuuid = s(&done, "/status/veleroBackupStorageLocation/nacuuid").to_string();
    assert!(nacuuid.starts_with("team-a-mine-"), "{nacuuid}");
    for t in [
        "Accepted",
        "ClusterAdminApproved",
        "SecretSynced",
        "BackupStorageLocationSynced",
    ] {
        assert!(is(&done, t, "True"), "{t}: {done}");
    }
    // Upstream's reasons and messages.
    for (t, reason, message) in [
        (
            "Accepted",
            "BslSpecValidation",
            "NonAdminBackupStorageLocation spec validation successful",
        ),
        (
            "SecretSynced",
            "SecretCreated",
            "Secret successfully created in the OADP namespace",
        ),
        (
            "BackupStorageLocationSynced",
            "BackupStorageLocationCreated",
            "BackupStorageLocation successfully created in the OADP namespace",
        ),
    ] {
        assert_eq!(condition(&done, t)["reason"], reason, "{t}");
        assert_eq!(condition(&done, t)["message"], message, "{t}");
    }
    let approved = condition(&done, "ClusterAdminApproved");
    assert_eq!(approved["reason"], "BslSpecApproved");
    assert!(
        approved["message"]
            .as_str()
            .unwrap()
            .starts_with("NonAdminBackupStorageLocationRequest approval decision set to Approve"),
        "{approved}"
    );
    assert_eq!(
        done.pointer("/metadata/finalizers/0")
            .and_then(Value::as_str),
        Some("nonadminbackupstoragelocation.oadp.openshift.io/finalizer")
    );
    // Auto-approved request, as upstream.
    let request = requests(&e.admin).get(&nacuuid).await.unwrap();
    let rv = serde_json::to_value(&request).unwrap();
    assert_eq!(s(&rv, "/spec/approvalDecision"), "approve");
    assert_eq!(s(&rv, "/status/phase"), "Approved");
    assert_eq!(
        s(&rv, "/status/nonAdminBackupStorageLocation/namespace"),
        "team-a"
    );
    // The Velero BSL: prefix under the namespace, credential pointing at the copy.
    let velero = bsl(&e.admin, &nacuuid).await.unwrap();
    assert_eq!(
        velero.spec.object_storage.prefix.as_deref(),
        Some("team-a/velero")
    );
    let credential = velero.spec.credential.clone().unwrap();
    assert_eq!(
        (credential.name.as_str(), credential.key.as_str()),
        (nacuuid.as_str(), "cloud")
    );
    assert_eq!(
        velero.metadata.labels.unwrap()["openshift.io/oadp-nabsl-origin-nacuuid"],
        nacuuid
    );
    let copy = copied(&e.admin, &nacuuid).await.unwrap();
    assert!(cloud_of(&copy).contains("aws_access_key_id=one"));
    assert_eq!(
        copy.metadata.annotations.unwrap()["openshift.io/oadp-nabsl-origin-namespace"],
        "team-a"
    );
    // The tenant is told the location was created; nothing about approval (not required).
    let events = wait_event(&e, "mine", nabsl_decision::event_reasons::BSL_CREATED).await;
    assert!(
        !reasons_of(&events)
            .iter()
            .any(|r| r.starts_with("Approval")),
        "{:?}",
        reasons_of(&events)
    );
    assert_notes_stay_in_the_namespace(&events, &nacuuid);
}

async fn a_rotated_tenant_secret_is_copied_again(cluster: TestCluster) {
    let e = env(cluster, false).await;
    create(&e, "mine", json!({})).await;
    let done = wait(&e.alice, "mine", 30, created_and_available).await;
    let nacuuid = s(&done, "/status/veleroBackupStorageLocation/nacuuid").to_string();
    put_secret(
        &e.admin,
        "creds",
        "[default]\naws_access_key_id=two\naws_secret_access_key=s2\n",
    )
    .await;
    eventually("the copy follows the rotation", 30, || async {
        copied(&e.admin, &nacuuid)
            .await
            .is_some_and(|c| cloud_of(&c).contains("aws_access_key_id=two"))
    })
    .await;
    // Upstream's reason for a copy brought up to date.
    let v = wait(&e.alice, "mine", 30, |v| {
        condition(v, "SecretSynced")["reason"] == "SecretUpdated"
    })
    .await;
    assert_eq!(
        condition(&v, "SecretSynced")["message"],
        "Secret successfully updated in the OADP namespace"
    );
    assert_eq!(s(&v, "/status/phase"), "Created");
    let resynced = nabsl_decision::event_reasons::SECRET_RESYNCED;
    let events = wait_event(&e, "mine", resynced).await;
    let note = events
        .iter()
        .find(|ev| ev.reason.as_deref() == Some(resynced))
        .and_then(|ev| ev.message.clone())
        .unwrap();
    assert!(note.contains("creds") && note.contains("mine"), "{note}");
    // Someone deletes the copy: it comes back.
    Api::<Secret>::namespaced(e.admin.clone(), OADP_NAMESPACE)
        .delete(&nacuuid, &DeleteParams::default())
        .await
        .unwrap();
    eventually("the copy is restored", 30, || async {
        copied(&e.admin, &nacuuid).await.is_some()
    })
    .await;
    eventually("the restored copy is told too", 30, || async {
        let events = events_of(&e.alice, "mine").await;
        reasons_of(&events)
            .iter()
            .filter(|r| *r == resynced)
            .count()
            == 2
    })
    .await;
    assert_notes_stay_in_the_namespace(&events_of(&e.alice, "mine").await, &nacuuid);
}

async fn pending(e: &Env, name: &str) -> String {
    let v = wait(&e.alice, name, 30, |v| {
        condition(v, "ClusterAdminApproved")["reason"] == "BslSpecApprovalPending"
    })
    .await;
    assert!(is(&v, "ClusterAdminApproved", "False"));
    // As upstream: phase New while pending, upstream's message.
    assert_eq!(s(&v, "/status/phase"), "New");
    assert_eq!(
        condition(&v, "ClusterAdminApproved")["message"],
        "NonAdminBackupStorageLocationRequest approval pending"
    );
    let nacuuid = s(&v, "/status/veleroBackupStorageLocation/nacuuid").to_string();
    let request = requests(&e.admin).get(&nacuuid).await.unwrap();
    let rv = serde_json::to_value(&request).unwrap();
    assert_eq!(s(&rv, "/spec/approvalDecision"), "pending");
    assert_eq!(s(&rv, "/status/phase"), "Pending");
    assert_eq!(s(&rv, "/status/nonAdminBackupStorageLocation/name"), name);
    assert_eq!(
        s(&rv, "/status/nonAdminBackupStorageLocation/nacuuid"),
        nacuuid
    );
    assert_eq!(
        s(
            &rv,
            "/status/nonAdminBackupStorageLocation/requestedSpec/objectStorage/bucket"
        ),
        "team-a-bucket"
    );
    assert!(bsl(&e.admin, &nacuuid).await.is_none());
    assert!(copied(&e.admin, &nacuuid).await.is_none());
    nacuuid
}

async fn approval_on_waits_for_the_admin_then_creates(cluster: TestCluster) {
    let e = env(cluster, true).await;
    create(&e, "mine", json!({})).await;
    let nacuuid = pending(&e, "mine").await;
    decide(&e.admin, &nacuuid, "approve").await;
    let done = wait(&e.alice, "mine", 30, created_and_available).await;
    assert_eq!(
        condition(&done, "ClusterAdminApproved")["reason"],
        "BslSpecApproved"
    );
    assert!(copied(&e.admin, &nacuuid).await.is_some());
    let rv = serde_json::to_value(requests(&e.admin).get(&nacuuid).await.unwrap()).unwrap();
    assert_eq!(s(&rv, "/status/phase"), "Approved");
}

async fn a_rejected_location_creates_nothing(cluster: TestCluster) {
    let e = env(cluster, true).await;
    create(&e, "mine", json!({})).await;
    let nacuuid = pending(&e, "mine").await;
    decide(&e.admin, &nacuuid, "reject").await;
    let v = wait(&e.alice, "mine", 30, |v| {
        condition(v, "ClusterAdminApproved")["reason"] == "BslSpecRejected"
    })
    .await;
    assert!(is(&v, "ClusterAdminApproved", "False"));
    // As upstream: phase BackingOff once rejected, upstream's message first.
    assert_eq!(s(&v, "/status/phase"), "BackingOff");
    assert!(
        condition(&v, "ClusterAdminApproved")["message"]
            .as_str()
            .unwrap()
            .starts_with("NonAdminBackupStorageLocationRequest approval decision set to Reject"),
        "{v}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(bsl(&e.admin, &nacuuid).await.is_none());
    assert!(copied(&e.admin, &nacuuid).await.is_none());
    let rv = serde_json::to_value(requests(&e.admin).get(&nacuuid).await.unwrap()).unwrap();
    assert_eq!(s(&rv, "/status/phase"), "Rejected");
}

async fn revoking_an_approval_removes_the_secret_and_the_bsl(cluster: TestCluster) {
    let e = env(cluster, true).await;
    create(&e, "mine", json!({})).await;
    let nacuuid = pending(&e, "mine").await;
    decide(&e.admin, &nacuuid, "approve").await;
    wait(&e.alice, "mine", 30, created_and_available).await;
    decide(&e.admin, &nacuuid, "reject").await;
    wait(&e.alice, "mine", 30, |v| {
        condition(v, "ClusterAdminApproved")["reason"] == "BslSpecRejected"
    })
    .await;
    assert!(bsl(&e.admin, &nacuuid).await.is_none());
    assert!(copied(&e.admin, &nacuuid).await.is_none());
    // The tenant can follow the whole story in its own namespace.
    use nabsl_decision::event_reasons as why;
    let events = wait_event(&e, "mine", why::APPROVAL_REJECTED).await;
    let reasons = reasons_of(&events);
    for expected in [why::APPROVAL_PENDING, why::BSL_CREATED] {
        assert!(reasons.iter().any(|r| r == expected), "{reasons:?}");
    }
    let rejected = events
        .iter()
        .find(|ev| ev.reason.as_deref() == Some(why::APPROVAL_REJECTED))
        .unwrap();
    assert_eq!(rejected.type_.as_deref(), Some("Warning"));
    assert_notes_stay_in_the_namespace(&events, &nacuuid);
}

async fn a_spec_update_after_approval_waits_for_a_new_approval(cluster: TestCluster) {
    let e = env(cluster, true).await;
    create(&e, "mine", json!({})).await;
    let nacuuid = pending(&e, "mine").await;
    decide(&e.admin, &nacuuid, "approve").await;
    wait(&e.alice, "mine", 30, created_and_available).await;
    nabsls(&e.alice)
        .patch(
            "mine",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"backupStorageLocationSpec": {"objectStorage": {"prefix": "v2"}}}}),
            ),
        )
        .await
        .unwrap();
    let v = wait(&e.alice, "mine", 30, |v| {
        is(v, "SpecUpdateApproved", "False")
    })
    .await;
    assert_eq!(
        condition(&v, "SpecUpdateApproved")["reason"],
        "BslSpecUpdateRejected"
    );
    eventually("the request asks again", 30, || async {
        let r = requests(&e.admin).get(&nacuuid).await.unwrap();
        let r = serde_json::to_value(&r).unwrap();
        s(&r, "/spec/approvalDecision") == "pending"
            && s(
                &r,
                "/status/nonAdminBackupStorageLocation/requestedSpec/objectStorage/prefix",
            ) == "v2"
    })
    .await;
    // Meanwhile the approved location keeps its approved prefix.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let velero = bsl(&e.admin, &nacuuid).await.unwrap();
    assert_eq!(
        velero.spec.object_storage.prefix.as_deref(),
        Some("team-a/velero")
    );
    decide(&e.admin, &nacuuid, "approve").await;
    wait(&e.alice, "mine", 30, |v| {
        is(v, "SpecUpdateApproved", "True")
    })
    .await;
    let velero = bsl(&e.admin, &nacuuid).await.unwrap();
    assert_eq!(
        velero.spec.object_storage.prefix.as_deref(),
        Some("team-a/v2")
    );
}

async fn deleting_a_location_cascades_to_its_request_secret_and_bsl(cluster: TestCluster) {
    let e = env(cluster, false).await;
    create(&e, "mine", json!({})).await;
    let done = wait(&e.alice, "mine", 30, created_and_available).await;
    let nacuuid = s(&done, "/status/veleroBackupStorageLocation/nacuuid").to_string();
    // NonAdminBackups naming it as their storage location go with it (as upstream); others
    // stay. (No NAB controller runs here, so they carry no finalizer.)
    let nabs: Api<NonAdminBackup> = Api::namespaced(e.alice.clone(), "team-a");
    for (name, location) in [
        ("on-mine", Some("mine")),
        ("on-other", Some("other")),
        ("on-default", None),
    ] {
        let mut spec = json!({"backupSpec": {}});
        if let Some(l) = location {
            spec["backupSpec"]["storageLocation"] = json!(l);
        }
        let nab: NonAdminBackup = serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
            "metadata": {"name": name, "namespace": "team-a"}, "spec": spec}))
        .unwrap();
        nabs.create(&PostParams::default(), &nab).await.unwrap();
    }
    nabsls(&e.alice)
        .delete("mine", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the NABSL is gone", 30, || async {
        nabsls(&e.alice).get_opt("mine").await.unwrap().is_none()
    })
    .await;
    assert!(nabs.get_opt("on-mine").await.unwrap().is_none());
    assert!(nabs.get_opt("on-other").await.unwrap().is_some());
    assert!(nabs.get_opt("on-default").await.unwrap().is_some());
    assert!(bsl(&e.admin, &nacuuid).await.is_none());
    assert!(copied(&e.admin, &nacuuid).await.is_none());
    assert!(
        requests(&e.admin)
            .get_opt(&nacuuid)
            .await
            .unwrap()
            .is_none()
    );
    // The tenant's own Secret is untouched.
    assert!(
        Api::<Secret>::namespaced(e.admin.clone(), "team-a")
            .get_opt("creds")
            .await
            .unwrap()
            .is_some()
    );
}

async fn malicious_locations_are_refused_with_the_field_named(cluster: TestCluster) {
    let e = env(cluster, false).await;
    put_secret(
        &e.admin,
        "sts",
        "[default]\nrole_arn = arn:aws:iam::1:role/velero\nweb_identity_token_file = /var/run/secrets/openshift/serviceaccount/token\n",
    )
    .await;
    // An AWS file without static keys: the SDK would fall back to the pod's or node's identity.
    put_secret(&e.admin, "keyless", "[default]\nregion = eu-central-1\n").await;
    let aws = |config: Value| json!({"spec": {"backupStorageLocationSpec": {"provider": "aws", "config": config}}});
    let attacks = [
        // Issue 17: endpoints NAC itself downloads from.
        (
            "metadata",
            aws(
                json!({"region": "us-east-1", "publicUrl": "http://169.254.169.254/latest/meta-data"}),
            ),
            "spec.backupStorageLocationSpec.config.publicUrl",
        ),
        (
            "in-cluster",
            aws(json!({"region": "us-east-1", "s3Url": "http://kubernetes.default.svc:443"})),
            "spec.backupStorageLocationSpec.config.s3Url",
        ),
        (
            "gopher",
            aws(json!({"region": "us-east-1", "s3Url": "gopher://127.0.0.1:6379/_INFO"})),
            "spec.backupStorageLocationSpec.config.s3Url",
        ),
        (
            "keyless",
            json!({"spec": {"backupStorageLocationSpec": {"provider": "aws",
                "config": {"region": "us-east-1"}, "credential": {"name": "keyless"}}}}),
            "spec.backupStorageLocationSpec.credential",
        ),
        (
            "as-default",
            json!({"spec": {"backupStorageLocationSpec": {"default": true}}}),
            "spec.backupStorageLocationSpec.default",
        ),
        (
            "no-secret",
            json!({"spec": {"backupStorageLocationSpec": {"credential": {"name": "missing"}}}}),
            "spec.backupStorageLocationSpec.credential.name",
        ),
        (
            "sts",
            json!({"spec": {"backupStorageLocationSpec": {"credential": {"name": "sts"}}}}),
            "spec.backupStorageLocationSpec.credential",
        ),
        (
            "dotdot",
            json!({"spec": {"backupStorageLocationSpec": {"objectStorage": {"prefix": "../team-b"}}}}),
            "spec.backupStorageLocationSpec.objectStorage.prefix",
        ),
        (
            "nested",
            json!({"spec": {"backupStorageLocationSpec": {"objectStorage": {"prefix": "x/../../team-b/velero"}}}}),
            "spec.backupStorageLocationSpec.objectStorage.prefix",
        ),
    ];
    for (name, patch, _) in &attacks {
        create(&e, name, patch.clone()).await;
    }
    for (name, _, field) in &attacks {
        let v = wait(&e.alice, name, 30, |v| {
            s(v, "/status/phase") == "BackingOff"
        })
        .await;
        let accepted = condition(&v, "Accepted");
        assert_eq!(accepted["status"], "False", "{name}");
        assert_eq!(accepted["reason"], "BslSpecValidation", "{name}");
        assert!(
            accepted["message"].as_str().unwrap().contains(field),
            "{name}: {accepted}"
        );
        assert!(
            v.pointer("/status/veleroBackupStorageLocation").is_none(),
            "{name}"
        );
    }
    // An absolute-looking prefix naming another tenant still lands under team-a.
    create(
        &e,
        "abs",
        json!({"spec": {"backupStorageLocationSpec": {"objectStorage": {"prefix": "/team-b"}}}}),
    )
    .await;
    let v = wait(&e.alice, "abs", 30, created_and_available).await;
    let velero = bsl(
        &e.admin,
        s(&v, "/status/veleroBackupStorageLocation/nacuuid"),
    )
    .await
    .unwrap();
    assert_eq!(
        velero.spec.object_storage.prefix.as_deref(),
        Some("team-a/team-b")
    );
    // Nothing was created for any refused location.
    let all = Api::<BackupStorageLocation>::namespaced(e.admin.clone(), OADP_NAMESPACE)
        .list(&ListParams::default().labels("openshift.io/oadp-nabsl-origin-nacuuid"))
        .await
        .unwrap();
    assert_eq!(all.items.len(), 1);
}

/// One reconcile by a freshly started controller (new client, new context: nothing remembered).
async fn reconcile_once(e: &Env, token: &str, name: &str) {
    let context = Arc::new(Context::new(
        e.cluster.client_as(token, Component::Controller),
        OADP_NAMESPACE,
    ));
    let current = nabsls(&e.admin).get(name).await.unwrap();
    nabsl::reconcile(Arc::new(current), context).await.unwrap();
}

async fn an_invalid_location_gets_one_warning_event_its_owner_can_list(cluster: TestCluster) {
    let e = env_with(cluster, false, false).await;
    let token = sa_token(&e.admin, OADP_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT).await;
    create(
        &e,
        "bad",
        json!({"spec": {"backupStorageLocationSpec": {"default": true}}}),
    )
    .await;
    // Three passes over the same refused spec: one transition, so one Event.
    for _ in 0..3 {
        reconcile_once(&e, &token, "bad").await;
    }
    let v = wait(&e.alice, "bad", 5, |v| {
        s(v, "/status/phase") == "BackingOff"
    })
    .await;
    assert_eq!(condition(&v, "Accepted")["status"], "False");
    let events = events_of(&e.alice, "bad").await;
    assert_eq!(events.len(), 1, "{:?}", reasons_of(&events));
    let event = &events[0];
    assert_eq!(
        event.reason.as_deref(),
        Some(nabsl_decision::event_reasons::SPEC_REFUSED)
    );
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(
        event.involved_object.kind.as_deref(),
        Some("NonAdminBackupStorageLocation")
    );
    assert_eq!(
        event.involved_object.uid,
        v.pointer("/metadata/uid")
            .and_then(Value::as_str)
            .map(String::from)
    );
    let note = event.message.clone().unwrap_or_default();
    assert!(
        note.contains("spec.backupStorageLocationSpec.default"),
        "{note}"
    );
    assert_notes_stay_in_the_namespace(&events, "team-a-bad-");
    // Another tenant cannot read team-a's Events.
    assert!(
        Api::<Event>::namespaced(e.bob.clone(), "team-a")
            .list(&ListParams::default())
            .await
            .is_err()
    );
    // The tenant changes the spec, then breaks it again another way: a new refusal, a new Event.
    nabsls(&e.alice)
        .patch(
            "bad",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"backupStorageLocationSpec": {
                "default": null, "objectStorage": {"prefix": "../team-b"}}}})),
        )
        .await
        .unwrap();
    reconcile_once(&e, &token, "bad").await;
    let events = events_of(&e.alice, "bad").await;
    assert_eq!(events.len(), 2, "{:?}", reasons_of(&events));
}

fn ours() -> ListParams {
    ListParams::default().labels("openshift.io/oadp-nabsl-origin-nacuuid")
}

async fn counts(admin: &Client) -> (usize, usize) {
    let bsls = Api::<BackupStorageLocation>::namespaced(admin.clone(), OADP_NAMESPACE)
        .list(&ours())
        .await
        .unwrap()
        .items
        .len();
    let secrets = Api::<Secret>::namespaced(admin.clone(), OADP_NAMESPACE)
        .list(&ours())
        .await
        .unwrap()
        .items
        .len();
    (bsls, secrets)
}

async fn a_crash_between_any_two_steps_yields_one_bsl_and_one_secret_copy(cluster: TestCluster) {
    // No controller runs: each step is one reconcile by a freshly started controller.
    let e = env_with(cluster, false, false).await;
    let token = sa_token(&e.admin, OADP_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT).await;
    create(&e, "crashy", json!({})).await;
    let mut steps = 0;
    loop {
        steps += 1;
        assert!(steps < 60, "did not converge");
        reconcile_once(&e, &token, "crashy").await;
        let (bsls, secrets) = counts(&e.admin).await;
        assert!(
            bsls <= 1 && secrets <= 1,
            "step {steps}: {bsls} BSLs, {secrets} Secrets"
        );
        let v = serde_json::to_value(nabsls(&e.admin).get("crashy").await.unwrap()).unwrap();
        if created_and_available(&v) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(counts(&e.admin).await, (1, 1));
    // Re-running a step after it was applied (a crash before its result was seen) changes nothing.
    reconcile_once(&e, &token, "crashy").await;
    assert_eq!(counts(&e.admin).await, (1, 1));
    let v = serde_json::to_value(nabsls(&e.admin).get("crashy").await.unwrap()).unwrap();
    assert_eq!(s(&v, "/status/phase"), "Created");
    let nacuuid = s(&v, "/status/veleroBackupStorageLocation/nacuuid").to_string();
    assert!(bsl(&e.admin, &nacuuid).await.is_some());
    assert!(copied(&e.admin, &nacuuid).await.is_some());
    // Every pass was counted for the metrics.
    let metrics = health::render(&nac::queue::QueueIndex::new(), health::counters(), None);
    let line = metrics
        .lines()
        .find(|l| {
            l.starts_with("nac_reconciles_total{controller=\"nonadminbackupstoragelocation\"}")
        })
        .unwrap_or_else(|| panic!("{metrics}"));
    let counted: u64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(counted > steps, "{line} after {steps} steps");
}

/// The resourceVersions of NAC's Velero BSLs, Secret copies and approval requests in the OADP
/// namespace: unchanged across a reconcile when it made or changed nothing there.
async fn made_elsewhere(admin: &Client) -> Vec<(String, String)> {
    let key = |m: &kube::api::ObjectMeta| {
        (
            m.name.clone().unwrap_or_default(),
            m.resource_version.clone().unwrap_or_default(),
        )
    };
    let mut versions: Vec<(String, String)> = Vec::new();
    let bsls = Api::<BackupStorageLocation>::namespaced(admin.clone(), OADP_NAMESPACE);
    versions.extend(
        bsls.list(&ours())
            .await
            .unwrap()
            .items
            .iter()
            .map(|o| key(&o.metadata)),
    );
    let secrets = Api::<Secret>::namespaced(admin.clone(), OADP_NAMESPACE);
    versions.extend(
        secrets
            .list(&ours())
            .await
            .unwrap()
            .items
            .iter()
            .map(|o| key(&o.metadata)),
    );
    versions.extend(
        requests(admin)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .map(|o| key(&o.metadata)),
    );
    versions
}

/// What a settled NABSL's status says that a replay must not change: phase, the Velero BSL it
/// names (NACUUID, name, namespace, mirrored phase) and its conditions (type, status, reason).
fn settled_fields(v: &Value) -> Value {
    let conditions: Vec<Value> = v
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .map(|c| json!([c["type"], c["status"], c["reason"]]))
                .collect()
        })
        .unwrap_or_default();
    json!({
        "phase": s(v, "/status/phase"),
        "nacuuid": s(v, "/status/veleroBackupStorageLocation/nacuuid"),
        "name": s(v, "/status/veleroBackupStorageLocation/name"),
        "namespace": s(v, "/status/veleroBackupStorageLocation/namespace"),
        "bslPhase": s(v, "/status/veleroBackupStorageLocation/status/phase"),
        "conditions": conditions,
    })
}

/// Seed 004 (act on the most recent status) without a read per reconcile: the driver decides on
/// the cached copy of a NABSL, and only its own status and finalizer writes (which carry the
/// resourceVersion read) go ahead on it. Every copy the NABSL went through on its way to Created
/// (approval required: request, pending, approved, Secret copied, Velero BSL made, Available),
/// handed to a reconcile afterwards (a cache that fell behind), makes nothing twice: one Velero
/// BSL, one Secret copy, one request, the same NACUUID and status, no error.
async fn a_decision_on_a_stale_copy_of_a_location_makes_nothing_twice(cluster: TestCluster) {
    // No controller runs: each step is one reconcile by a freshly started controller.
    let e = env_with(cluster, true, false).await;
    let token = sa_token(&e.admin, OADP_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT).await;
    create(&e, "stale", json!({})).await;
    let fresh_context = || async {
        let context = Arc::new(Context::new(
            e.cluster.client_as(&token, Component::Controller),
            OADP_NAMESPACE,
        ));
        context.load_policy().await.unwrap();
        context
    };
    let mut copies = Vec::new();
    let mut approved = false;
    loop {
        assert!(copies.len() < 80, "did not converge");
        let current = nabsls(&e.admin).get("stale").await.unwrap();
        copies.push(current.clone());
        let v = serde_json::to_value(&current).unwrap();
        let elsewhere = made_elsewhere(&e.admin).await;
        nabsl::reconcile(Arc::new(current.clone()), fresh_context().await)
            .await
            .unwrap();
        let (bsls, secrets) = counts(&e.admin).await;
        assert!(bsls <= 1 && secrets <= 1, "{bsls} BSLs, {secrets} Secrets");
        let after = nabsls(&e.admin).get("stale").await.unwrap();
        // Settled: Created and Available, and a reconcile of the latest copy changes nothing.
        if created_and_available(&v)
            && after.metadata.resource_version == current.metadata.resource_version
            && made_elsewhere(&e.admin).await == elsewhere
        {
            break;
        }
        let after = serde_json::to_value(&after).unwrap();
        if !approved
            && condition(&after, "ClusterAdminApproved")["reason"] == "BslSpecApprovalPending"
        {
            decide(
                &e.admin,
                s(&after, "/status/veleroBackupStorageLocation/nacuuid"),
                "approve",
            )
            .await;
            approved = true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(approved, "the request was never pending");
    let settled = serde_json::to_value(nabsls(&e.admin).get("stale").await.unwrap()).unwrap();
    let fields = settled_fields(&settled);
    let nacuuid = s(&settled, "/status/veleroBackupStorageLocation/nacuuid").to_string();
    assert!(nacuuid.starts_with("team-a-stale-"), "{nacuuid}");
    assert!(copies.len() >= 6, "{} copies", copies.len());
    for (i, stale) in copies.iter().enumerate() {
        nabsl::reconcile(Arc::new(stale.clone()), fresh_context().await)
            .await
            .unwrap_or_else(|err| panic!("copy {i}: {err}"));
        let now = serde_json::to_value(nabsls(&e.admin).get("stale").await.unwrap()).unwrap();
        assert_eq!(settled_fields(&now), fields, "copy {i}");
        assert_eq!(counts(&e.admin).await, (1, 1), "copy {i}");
        assert!(bsl(&e.admin, &nacuuid).await.is_some(), "copy {i}");
        assert!(copied(&e.admin, &nacuuid).await.is_some(), "copy {i}");
        let all = requests(&e.admin)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items;
        assert_eq!(all.len(), 1, "copy {i}");
        assert_eq!(all[0].metadata.name.as_deref(), Some(nacuuid.as_str()));
    }
    // One creation, one Event: no replay took effect.
    let created = reasons_of(&events_of(&e.alice, "stale").await)
        .iter()
        .filter(|r| *r == nabsl_decision::event_reasons::BSL_CREATED)
        .count();
    assert_eq!(
        created,
        1,
        "{:?}",
        reasons_of(&events_of(&e.alice, "stale").await)
    );
    println!(
        "[{}] {} stale copies reconciled: one Velero BSL, one Secret copy, NACUUID {nacuuid} kept",
        e.cluster.server,
        copies.len()
    );
}

on_both_servers!(
    approval_off_creates_an_available_bsl_with_the_secret_copied,
    a_rotated_tenant_secret_is_copied_again,
    approval_on_waits_for_the_admin_then_creates,
    a_rejected_location_creates_nothing,
    revoking_an_approval_removes_the_secret_and_the_bsl,
    a_spec_update_after_approval_waits_for_a_new_approval,
    deleting_a_location_cascades_to_its_request_secret_and_bsl,
    malicious_locations_are_refused_with_the_field_named,
    an_invalid_location_gets_one_warning_event_its_owner_can_list,
    a_crash_between_any_two_steps_yields_one_bsl_and_one_secret_copy,
    a_decision_on_a_stale_copy_of_a_location_makes_nothing_twice,
);
