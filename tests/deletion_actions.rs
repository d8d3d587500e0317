//! Deletion actions (seed 003) end to end on the emulator and on the real kube-apiserver (each
//! case `NAME::emulator` and `NAME::real`): the Velero simulator (download endpoint on a real
//! port) and NAC's controllers running as their own service accounts with `deploy/`'s RBAC,
//! with real HTTPS webhook servers (a CA made here, the server certificate signed by it). A
//! NonAdminBackup is permanently deleted and the admin's DeletionActions must run in name order
//! with the right items, before the DeleteBackupRequest; failures are retried (Fail) or
//! recorded (Ignore); a wrong CA or a non-https URL is visible. Each case works in a tenant
//! namespace of its own (owned by alice), so cases sharing the real server never see each
//! other's items.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;
use support::cluster::{TestCluster, eventually_seen, wait_for_object, wait_until_gone};
use support::controller_env::ControllerEnv;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::post;
use base64::Engine as _;
use futures::StreamExt;
use kube::Client;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use nac::api::nonadmin::{DeletionAction, NonAdminBackup};
use nac::api::velero::{DeleteBackupRequest, DownloadRequest};
use nac::sim::apiserver::tls::{Pki, serve_tls};
use nac::sim::demo::OADP_NAMESPACE;
use serde_json::{Value, json};

const CONDITION_PREFIX: &str = "deletionaction.oadp.openshift.io/";
/// What the `broken` webhook's answer body holds: the admin's internals, for the admin only.
const HOOK_SECRET: &str = "token=hunter2";

/// The shared controller environment, plus the case's tenant namespace and every
/// DeleteBackupRequest made.
struct Env {
    base: ControllerEnv,
    /// The case's tenant namespace, owned by alice.
    ns: String,
    /// Every DeleteBackupRequest made during the case (Velero removes the ones it processed
    /// successfully, so listing could miss them).
    made_requests: Arc<std::sync::Mutex<Vec<DeleteBackupRequest>>>,
}

impl std::ops::Deref for Env {
    type Target = ControllerEnv;
    fn deref(&self) -> &ControllerEnv {
        &self.base
    }
}

async fn env(cluster: TestCluster) -> Env {
    let base = ControllerEnv::new(cluster).await;
    let made_requests = support::record_applied(Api::<DeleteBackupRequest>::namespaced(
        base.admin.clone(),
        OADP_NAMESPACE,
    ));
    let ns = base.cluster.unique_name("team-a", None);
    base.cluster.tenant_namespace("alice", &ns).await;
    base.start_velero_serving_downloads(|_| {}).await;
    base.start_controllers();
    Env {
        base,
        ns,
        made_requests,
    }
}

// ---------------------------------------------------------------------------------------------
// The webhook servers
// ---------------------------------------------------------------------------------------------

/// One call a webhook received.
#[derive(Clone, Debug)]
struct Call {
    /// The action, from the URL path.
    action: String,
    /// The request body.
    body: Value,
    /// DeleteBackupRequests in the OADP namespace when the call arrived.
    delete_requests_then: usize,
}

impl Call {
    fn item(&self) -> String {
        format!(
            "{}/{}",
            self.body["item"]["kind"].as_str().unwrap_or_default(),
            self.body["item"]["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
        )
    }
}

#[derive(Clone)]
struct HookState {
    calls: Arc<Mutex<Vec<Call>>>,
    /// Calls per action so far, for the flaky behaviour.
    seen: Arc<Mutex<HashMap<String, usize>>>,
    admin: Client,
}

/// HTTPS webhooks at `https://127.0.0.1:<port>/hooks/<behaviour>/<action>`: `ok` answers 200,
/// `flaky` answers 500 to the first two calls and 200 after, `broken` always answers 500.
struct Hooks {
    base: String,
    ca_pem: String,
    calls: Arc<Mutex<Vec<Call>>>,
}

impl Hooks {
    async fn start(admin: &Client) -> Hooks {
        let pki = Pki::generate(&[]).unwrap();
        let state = HookState {
            calls: Arc::default(),
            seen: Arc::default(),
            admin: admin.clone(),
        };
        let calls = state.calls.clone();
        let router = axum::Router::new()
            .route("/hooks/{behaviour}/{action}", post(hook))
            .with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!(
            "https://127.0.0.1:{}",
            listener.local_addr().unwrap().port()
        );
        tokio::spawn(serve_tls(listener, router, pki.server_config().unwrap()));
        Hooks {
            base,
            ca_pem: pki.ca_cert_pem,
            calls,
        }
    }

    fn url(&self, behaviour: &str, action: &str) -> String {
        format!("{}/hooks/{behaviour}/{action}", self.base)
    }

    fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    fn calls_of(&self, action: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| c.action == action)
            .collect()
    }
}

async fn hook(
    State(state): State<HookState>,
    Path((behaviour, action)): Path<(String, String)>,
    Json(body): Json<Value>,
) -> (StatusCode, String) {
    let delete_requests_then =
        Api::<DeleteBackupRequest>::namespaced(state.admin.clone(), OADP_NAMESPACE)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len();
    let nth = {
        let mut seen = state.seen.lock().unwrap();
        let n = seen.entry(action.clone()).or_insert(0);
        *n += 1;
        *n
    };
    state.calls.lock().unwrap().push(Call {
        action,
        body,
        delete_requests_then,
    });
    match behaviour.as_str() {
        "flaky" if nth <= 2 => (StatusCode::INTERNAL_SERVER_ERROR, "boom".into()),
        "broken" => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the audit log is down: {HOOK_SECRET} at 10.0.3.7"),
        ),
        _ => (StatusCode::OK, "{}".into()),
    }
}

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// Registers a DeletionAction as the admin.
async fn register(admin: &Client, name: &str, url: &str, ca_pem: Option<&str>, spec: Value) {
    let mut value = json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "DeletionAction",
        "metadata": {"name": name},
        "spec": {"webhook": {"url": url}}
    });
    if let Some(pem) = ca_pem {
        value["spec"]["webhook"]["caBundle"] = json!(b64(pem));
    }
    for (key, field) in spec.as_object().cloned().unwrap_or_default() {
        value["spec"][key] = field;
    }
    let action: DeletionAction = serde_json::from_value(value).unwrap();
    Api::<DeletionAction>::all(admin.clone())
        .create(&PostParams::default(), &action)
        .await
        .unwrap();
}

// ---------------------------------------------------------------------------------------------
// Tenant side
// ---------------------------------------------------------------------------------------------

async fn create_in(alice: &Client, ns: &str, value: Value) {
    let kind = value["kind"].as_str().unwrap().to_string();
    match kind.as_str() {
        "ConfigMap" => {
            let object: k8s_openapi::api::core::v1::ConfigMap =
                serde_json::from_value(value).unwrap();
            Api::namespaced(alice.clone(), ns)
                .create(&PostParams::default(), &object)
                .await
                .unwrap();
        }
        "Secret" => {
            let object: k8s_openapi::api::core::v1::Secret = serde_json::from_value(value).unwrap();
            Api::namespaced(alice.clone(), ns)
                .create(&PostParams::default(), &object)
                .await
                .unwrap();
        }
        other => panic!("unexpected kind {other}"),
    }
}

fn config_map(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "labels": labels}, "data": {"k": "v"}})
}

fn secret(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret",
           "metadata": {"name": name, "labels": labels}, "stringData": {"k": "v"}})
}

fn nabs(c: &Client, ns: &str) -> Api<NonAdminBackup> {
    Api::namespaced(c.clone(), ns)
}

/// Backs up `ns` as alice with NAB `name`; returns the Velero Backup's name once Completed.
async fn completed_backup(alice: &Client, ns: &str, name: &str) -> String {
    let nab: NonAdminBackup = serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
        "metadata": {"name": name}, "spec": {"backupSpec": {}}
    }))
    .unwrap();
    nabs(alice, ns)
        .create(&PostParams::default(), &nab)
        .await
        .unwrap();
    let done = wait_for_object(&nabs(alice, ns), name, 30, |value| {
        value.pointer("/status/veleroBackup/status/phase") == Some(&json!("Completed"))
    })
    .await;
    done["status"]["veleroBackup"]["name"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Every state of NAB `name` the watch delivers, from now on (the last one stays readable after
/// the NAB is gone).
fn record_states(alice: &Client, ns: &str, name: &str) -> Arc<Mutex<Vec<Value>>> {
    let states: Arc<Mutex<Vec<Value>>> = Arc::default();
    let sink = states.clone();
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let stream = watcher::watcher(nabs(alice, ns), config);
    tokio::spawn(async move {
        let mut stream = stream.boxed();
        while let Some(event) = stream.next().await {
            if let Ok(watcher::Event::Apply(nab) | watcher::Event::InitApply(nab)) = event {
                sink.lock()
                    .unwrap()
                    .push(serde_json::to_value(&nab).unwrap());
            }
        }
    });
    states
}

async fn delete_permanently(alice: &Client, ns: &str, name: &str) {
    nabs(alice, ns)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"deleteBackup": true}})),
        )
        .await
        .unwrap();
}

async fn wait_gone(alice: &Client, ns: &str, name: &str, secs: u64) {
    wait_until_gone(&nabs(alice, ns), name, secs).await
}

/// The condition of action `action` in a NAB state.
fn action_condition<'a>(state: &'a Value, action: &str) -> Option<&'a Value> {
    state
        .pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c["type"] == format!("{CONDITION_PREFIX}{action}"))
}

async fn wait_state(
    states: &Arc<Mutex<Vec<Value>>>,
    secs: u64,
    what: &str,
    found: impl Fn(&Value) -> bool,
) -> Value {
    eventually_seen(&format!("a NAB state with {what}"), secs, || async {
        let states = states.lock().unwrap();
        match states.iter().find(|s| found(s)) {
            Some(state) => Ok(state.clone()),
            None => Err(format!(
                "no NAB state with {what}; last: {:?}",
                states.last()
            )),
        }
    })
    .await
}

/// The distinct DeleteBackupRequests made during the case for Velero Backup `backup`.
fn requests_made_for(e: &Env, backup: &str) -> Vec<String> {
    let mut names: Vec<String> = e
        .made_requests
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.spec.backup_name == backup)
        .filter_map(|r| r.metadata.name.clone())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Every Event note in `ns`, as the tenant reads them.
async fn event_notes(alice: &Client, ns: &str) -> Vec<String> {
    Api::<k8s_openapi::api::core::v1::Event>::namespaced(alice.clone(), ns)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|e| e.message)
        .collect()
}

async fn event_reasons(alice: &Client, ns: &str) -> Vec<String> {
    Api::<k8s_openapi::api::core::v1::Event>::namespaced(alice.clone(), ns)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|e| e.reason)
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------------

async fn actions_run_in_name_order_on_their_items_before_the_delete_backup_request(
    cluster: TestCluster,
) {
    let e = env(cluster).await;
    let hooks = Hooks::start(&e.admin).await;
    // Registered out of order: the name decides.
    register(
        &e.admin,
        "b-audit",
        &hooks.url("ok", "b-audit"),
        Some(&hooks.ca_pem),
        json!({"appliesTo": {"includedResources": ["secrets"],
                             "labelSelector": {"matchLabels": {"audit": "yes"}}}}),
    )
    .await;
    register(
        &e.admin,
        "a-cleanup",
        &hooks.url("ok", "a-cleanup"),
        Some(&hooks.ca_pem),
        json!({"appliesTo": {"includedResources": ["configmap"],
                             "labelSelector": {"matchLabels": {"cleanup": "yes"}}}}),
    )
    .await;
    // Applies to nothing in the tenant's backup: never called.
    register(
        &e.admin,
        "c-elsewhere",
        &hooks.url("ok", "c-elsewhere"),
        Some(&hooks.ca_pem),
        json!({"appliesTo": {"includedNamespaces": ["team-b"]}}),
    )
    .await;
    create_in(
        &e.alice,
        &e.ns,
        config_map("cm-1", json!({"cleanup": "yes"})),
    )
    .await;
    create_in(
        &e.alice,
        &e.ns,
        config_map("cm-2", json!({"cleanup": "yes"})),
    )
    .await;
    create_in(
        &e.alice,
        &e.ns,
        config_map("cm-3", json!({"cleanup": "no"})),
    )
    .await;
    create_in(&e.alice, &e.ns, secret("s-audit", json!({"audit": "yes"}))).await;
    create_in(&e.alice, &e.ns, secret("s-other", json!({}))).await;
    let velero_name = completed_backup(&e.alice, &e.ns, "doomed").await;
    assert!(
        hooks.calls().is_empty(),
        "nothing is called before a deletion"
    );

    let states = record_states(&e.alice, &e.ns, "doomed");
    delete_permanently(&e.alice, &e.ns, "doomed").await;
    wait_gone(&e.alice, &e.ns, "doomed", 60).await;

    // a-cleanup before b-audit, each with exactly its items, the third never.
    let calls = hooks.calls();
    let order: Vec<String> = calls
        .iter()
        .map(|c| format!("{} {}", c.action, c.item()))
        .collect();
    assert_eq!(
        order,
        [
            "a-cleanup ConfigMap/cm-1",
            "a-cleanup ConfigMap/cm-2",
            "b-audit Secret/s-audit"
        ]
    );
    assert!(hooks.calls_of("c-elsewhere").is_empty());
    for call in &calls {
        assert_eq!(call.body["apiVersion"], "oadp.openshift.io/v1alpha1");
        assert_eq!(call.body["kind"], "DeletionActionRequest");
        assert_eq!(call.body["action"], call.action.as_str());
        assert_eq!(call.body["backup"]["kind"], "Backup");
        assert_eq!(
            call.body["backup"]["metadata"]["name"],
            velero_name.as_str()
        );
        assert_eq!(call.body["item"]["metadata"]["namespace"], e.ns.as_str());
        // The DeleteBackupRequest comes only after the actions.
        assert_eq!(call.delete_requests_then, 0, "{}", call.item());
    }
    assert_eq!(
        requests_made_for(&e, &velero_name).len(),
        1,
        "the deletion went on through one DeleteBackupRequest"
    );

    // Each outcome was a condition of the NAB while it was being deleted.
    let state = wait_state(&states, 5, "every action finished", |s| {
        ["a-cleanup", "b-audit", "c-elsewhere"]
            .iter()
            .all(|a| action_condition(s, a).is_some())
    })
    .await;
    let cleanup = action_condition(&state, "a-cleanup").unwrap();
    assert_eq!(
        (&cleanup["status"], &cleanup["reason"], &cleanup["message"]),
        (
            &json!("True"),
            &json!("Succeeded"),
            &json!("called for 2 items of the backup")
        )
    );
    assert_eq!(
        action_condition(&state, "b-audit").unwrap()["reason"],
        "Succeeded"
    );
    let skipped = action_condition(&state, "c-elsewhere").unwrap();
    assert_eq!(
        (&skipped["status"], &skipped["reason"]),
        (&json!("True"), &json!("Skipped"))
    );
    assert_eq!(state["status"]["phase"], "Deleting");
    // The tarball's DownloadRequest was removed once used.
    let downloads = Api::<DownloadRequest>::namespaced(e.admin.clone(), OADP_NAMESPACE)
        .get_opt(&format!("{velero_name}-deletion-actions"))
        .await
        .unwrap();
    assert!(downloads.is_none());
    assert!(
        event_reasons(&e.alice, &e.ns)
            .await
            .contains(&"DeletionActionSucceeded".to_string())
    );
}

async fn a_failing_action_is_retried_and_an_ignored_one_does_not_block(cluster: TestCluster) {
    let e = env(cluster).await;
    let hooks = Hooks::start(&e.admin).await;
    register(
        &e.admin,
        "a-flaky",
        &hooks.url("flaky", "a-flaky"),
        Some(&hooks.ca_pem),
        json!({"appliesTo": {"includedResources": ["configmaps"],
                             "labelSelector": {"matchLabels": {"cleanup": "yes"}}},
               "failurePolicy": "Fail"}),
    )
    .await;
    register(
        &e.admin,
        "b-broken",
        &hooks.url("broken", "b-broken"),
        Some(&hooks.ca_pem),
        json!({"appliesTo": {"includedResources": ["secrets"]}, "failurePolicy": "Ignore"}),
    )
    .await;
    create_in(
        &e.alice,
        &e.ns,
        config_map("cm-1", json!({"cleanup": "yes"})),
    )
    .await;
    completed_backup(&e.alice, &e.ns, "flaky").await;
    let states = record_states(&e.alice, &e.ns, "flaky");
    delete_permanently(&e.alice, &e.ns, "flaky").await;

    // The failure is visible while the NAB waits, Deleting, without a DeleteBackupRequest.
    let failing = wait_state(&states, 30, "a-flaky failed once", |s| {
        action_condition(s, "a-flaky").is_some_and(|c| c["reason"] == "Failed")
    })
    .await;
    let condition = action_condition(&failing, "a-flaky").unwrap();
    assert_eq!(condition["status"], "False");
    let message = condition["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!(
            "attempt 1 failed: configmaps/{}/cm-1: the webhook answered HTTP 500 (its answer is in NAC's controller log)",
            e.ns
        )),
        "{message}"
    );
    assert!(!message.contains("boom"), "{message}");
    assert_eq!(failing["status"]["phase"], "Deleting");
    assert!(
        action_condition(&failing, "b-broken").is_none(),
        "b waits for a"
    );
    wait_state(&states, 30, "a second failure", |s| {
        action_condition(s, "a-flaky").is_some_and(|c| {
            c["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("attempt 2 failed"))
        })
    })
    .await;

    wait_gone(&e.alice, &e.ns, "flaky", 60).await;
    let flaky = hooks.calls_of("a-flaky");
    assert_eq!(flaky.len(), 3, "two failures, then the success");
    assert!(flaky.iter().all(|c| c.item() == "ConfigMap/cm-1"));
    let broken = hooks.calls_of("b-broken");
    assert_eq!(broken.len(), 1, "an ignored failure is not retried");
    let calls = hooks.calls();
    assert_eq!(calls.last().unwrap().action, "b-broken", "b runs after a");
    assert!(calls.iter().all(|c| c.delete_requests_then == 0));

    let state = wait_state(&states, 5, "both outcomes", |s| {
        action_condition(s, "a-flaky").is_some_and(|c| c["reason"] == "Succeeded")
            && action_condition(s, "b-broken").is_some()
    })
    .await;
    let ignored = action_condition(&state, "b-broken").unwrap();
    assert_eq!(
        (&ignored["status"], &ignored["reason"]),
        (&json!("False"), &json!("Ignored"))
    );
    // The tenant learns the status code, never what the webhook answered (the admin's
    // internals): not in a condition, not in an Event.
    let message = ignored["message"].as_str().unwrap();
    assert!(
        message.contains("the webhook answered HTTP 500"),
        "{ignored}"
    );
    for state in states.lock().unwrap().iter() {
        let text = state["status"]["conditions"].to_string();
        assert!(
            !text.contains(HOOK_SECRET) && !text.contains("audit log is down"),
            "{text}"
        );
    }
    let notes = event_notes(&e.alice, &e.ns).await;
    assert!(
        notes
            .iter()
            .any(|n| n.contains("the webhook answered HTTP 500")),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .all(|n| !n.contains(HOOK_SECRET) && !n.contains("boom")),
        "{notes:?}"
    );
    let reasons = event_reasons(&e.alice, &e.ns).await;
    assert!(
        reasons.contains(&"DeletionActionFailed".to_string()),
        "{reasons:?}"
    );
    assert!(
        reasons.contains(&"DeletionActionIgnored".to_string()),
        "{reasons:?}"
    );
}

async fn a_wrong_ca_fails_visibly_and_holds_the_deletion_until_fixed(cluster: TestCluster) {
    let e = env(cluster).await;
    let hooks = Hooks::start(&e.admin).await;
    let other_ca = Pki::generate(&[]).unwrap().ca_cert_pem;
    register(
        &e.admin,
        "a-tls",
        &hooks.url("ok", "a-tls"),
        Some(&other_ca),
        json!({"appliesTo": {"includedResources": ["configmaps"]}}),
    )
    .await;
    let velero_name = completed_backup(&e.alice, &e.ns, "guarded").await;
    let states = record_states(&e.alice, &e.ns, "guarded");
    delete_permanently(&e.alice, &e.ns, "guarded").await;

    let failing = wait_state(&states, 30, "a TLS failure", |s| {
        action_condition(s, "a-tls").is_some_and(|c| c["reason"] == "Failed")
    })
    .await;
    let message = action_condition(&failing, "a-tls").unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.contains("certificate"), "{message}");
    assert!(
        hooks.calls().is_empty(),
        "no request passes an unverified server"
    );
    // Held: still there, Deleting, and Velero was not asked to delete anything.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let nab = nabs(&e.alice, &e.ns).get("guarded").await.unwrap();
    assert_eq!(
        nab.status
            .as_ref()
            .and_then(|s| s.phase)
            .map(|p| p.as_str()),
        Some("Deleting")
    );
    assert!(requests_made_for(&e, &velero_name).is_empty());

    // The admin fixes the CA bundle: the retry succeeds and the deletion completes.
    Api::<DeletionAction>::all(e.admin.clone())
        .patch(
            "a-tls",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"webhook": {"caBundle": b64(&hooks.ca_pem)}}})),
        )
        .await
        .unwrap();
    wait_gone(&e.alice, &e.ns, "guarded", 60).await;
    assert!(!hooks.calls_of("a-tls").is_empty());
    assert_eq!(requests_made_for(&e, &velero_name).len(), 1);
}

async fn a_non_https_url_makes_the_action_invalid_and_tenants_cannot_touch_actions(
    cluster: TestCluster,
) {
    let e = env(cluster).await;
    let hooks = Hooks::start(&e.admin).await;
    register(
        &e.admin,
        "plain-http",
        "http://127.0.0.1:9/hooks/ok/plain-http",
        None,
        json!({}),
    )
    .await;
    let api = Api::<DeletionAction>::all(e.admin.clone());
    let status = eventually_seen("the action's status", 20, || async {
        let action = api.get("plain-http").await.unwrap();
        action
            .status
            .filter(|s| !s.conditions.is_empty())
            .ok_or("no status written")
    })
    .await;
    let valid = &status.conditions[0];
    assert_eq!(
        (
            valid.type_.as_str(),
            valid.status.as_str(),
            valid.reason.as_str()
        ),
        ("Valid", "False", "InvalidSpec")
    );
    assert_eq!(valid.message, "spec.webhook.url: must be an https:// URL");
    assert_eq!(status.observed_generation, Some(1));

    // An invalid Fail action holds deletions (with the reason) until the admin fixes it.
    completed_backup(&e.alice, &e.ns, "held").await;
    let states = record_states(&e.alice, &e.ns, "held");
    delete_permanently(&e.alice, &e.ns, "held").await;
    let held = wait_state(&states, 30, "the invalid action's failure", |s| {
        action_condition(s, "plain-http").is_some_and(|c| c["reason"] == "Failed")
    })
    .await;
    let message = action_condition(&held, "plain-http").unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message
            .contains("the DeletionAction is invalid: spec.webhook.url: must be an https:// URL"),
        "{message}"
    );
    api.patch(
        "plain-http",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"webhook": {
            "url": hooks.url("ok", "plain-http"), "caBundle": b64(&hooks.ca_pem)}}})),
    )
    .await
    .unwrap();
    eventually_seen("the fixed action to be revalidated", 20, || async {
        let action = api.get("plain-http").await.unwrap();
        let status = action.status.unwrap_or_default();
        if status.observed_generation == Some(2)
            && status
                .conditions
                .iter()
                .any(|c| c.type_ == "Valid" && c.status == "True")
        {
            Ok(())
        } else {
            Err(format!("not revalidated: {status:?}"))
        }
    })
    .await;
    wait_gone(&e.alice, &e.ns, "held", 60).await;
    assert!(!hooks.calls_of("plain-http").is_empty());

    // Tenants never see nor register deletion actions.
    let as_alice = Api::<DeletionAction>::all(e.alice.clone());
    let listed = as_alice.list(&ListParams::default()).await.unwrap_err();
    assert!(
        matches!(listed, kube::Error::Api(ref s) if s.code == 403),
        "{listed:?}"
    );
    let mine: DeletionAction = serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "DeletionAction",
        "metadata": {"name": "sneaky"},
        "spec": {"webhook": {"url": "https://evil.example/"}}
    }))
    .unwrap();
    let created = as_alice
        .create(&PostParams::default(), &mine)
        .await
        .unwrap_err();
    assert!(
        matches!(created, kube::Error::Api(ref s) if s.code == 403),
        "{created:?}"
    );
}

/// The tarball of Velero Backup `velero_name` in the object store under `root`.
fn tarball_path(root: &std::path::Path, velero_name: &str) -> std::path::PathBuf {
    let file = format!("{velero_name}.tar.gz");
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.file_name().and_then(|n| n.to_str()) == Some(file.as_str()) {
                return path;
            }
        }
    }
    panic!("no {file} under {}", root.display());
}

fn forged(
    group: &str,
    resource: &str,
    kind: &str,
    filed_in: Option<&str>,
    claims: Option<&str>,
    name: &str,
) -> nac::manifest::tarball::BackupItem {
    let api_version = if group.is_empty() {
        "v1".to_string()
    } else {
        format!("{group}/v1")
    };
    let mut object = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}});
    if let Some(namespace) = claims {
        object["metadata"]["namespace"] = json!(namespace);
    }
    nac::manifest::tarball::BackupItem {
        group: group.into(),
        version: "v1".into(),
        kind: kind.into(),
        resource: resource.into(),
        namespace: filed_in.map(Into::into),
        name: name.into(),
        object,
    }
}

/// Finding 4: a tenant writes its own bucket, so the tarball a deletion action reads is the
/// tenant's to forge. Items of another namespace — planted, or disguised as the tenant's — and
/// cluster-scoped items the action does not list never reach the admin's webhook; the
/// backup's own items (and its own Namespace, listed) do.
async fn forged_items_in_the_tenants_tarball_never_reach_a_webhook(cluster: TestCluster) {
    let e = env(cluster).await;
    let hooks = Hooks::start(&e.admin).await;
    register(
        &e.admin,
        "audit-all",
        &hooks.url("ok", "audit-all"),
        Some(&hooks.ca_pem),
        json!({"clusterScopedResources": ["namespaces"], "failurePolicy": "Ignore"}),
    )
    .await;
    create_in(&e.alice, &e.ns, config_map("cm-1", json!({}))).await;
    let velero_name = completed_backup(&e.alice, &e.ns, "forged").await;

    // What Velero wrote, then what the tenant adds to it in its bucket.
    let path = tarball_path(e.object_store.path(), &velero_name);
    let mut items =
        nac::manifest::tarball::read_backup_tarball(&std::fs::read(&path).unwrap()).unwrap();
    let own: std::collections::BTreeSet<String> = items
        .iter()
        .filter(|i| {
            i.namespace.as_deref() == Some(e.ns.as_str())
                || (i.resource == "namespaces" && i.name == e.ns)
        })
        .map(|i| format!("{}/{}", i.kind, i.name))
        .collect();
    assert!(own.contains("ConfigMap/cm-1"), "{own:?}");
    items.extend([
        forged(
            "",
            "configmaps",
            "ConfigMap",
            Some("team-b"),
            Some("team-b"),
            "planted",
        ),
        forged(
            "",
            "secrets",
            "Secret",
            Some("kube-system"),
            Some("kube-system"),
            "admin-token",
        ),
        forged(
            "",
            "configmaps",
            "ConfigMap",
            Some(&e.ns),
            Some("team-b"),
            "disguised",
        ),
        forged("", "namespaces", "Namespace", None, None, "kube-system"),
        forged(
            "rbac.authorization.k8s.io",
            "clusterroles",
            "ClusterRole",
            None,
            None,
            "evil",
        ),
    ]);
    std::fs::write(
        &path,
        nac::manifest::tarball::write_backup_tarball(&items).unwrap(),
    )
    .unwrap();

    delete_permanently(&e.alice, &e.ns, "forged").await;
    wait_gone(&e.alice, &e.ns, "forged", 60).await;
    let calls = hooks.calls_of("audit-all");
    let received: std::collections::BTreeSet<String> = calls.iter().map(Call::item).collect();
    assert_eq!(received, own, "only the backup's own items");
    assert_eq!(calls.len(), own.len(), "each once");
    for call in &calls {
        let item = &call.body["item"];
        let namespace = item["metadata"]["namespace"].as_str();
        assert!(
            namespace == Some(e.ns.as_str())
                || (item["kind"] == "Namespace" && item["metadata"]["name"] == e.ns.as_str()),
            "{item}"
        );
    }
}

on_both_servers!(
    forged_items_in_the_tenants_tarball_never_reach_a_webhook,
    actions_run_in_name_order_on_their_items_before_the_delete_backup_request,
    a_failing_action_is_retried_and_an_ignored_one_does_not_block,
    a_wrong_ca_fails_visibly_and_holds_the_deletion_until_fixed,
    a_non_https_url_makes_the_action_invalid_and_tenants_cannot_touch_actions,
);
