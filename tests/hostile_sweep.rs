//! A generated hostile sweep, on the emulator and on a real kube-apiserver (each case
//! `NAME::emulator` and `NAME::real`) with the whole of NAC running (`nac_stack`).
//!
//! Nothing here is a hand-written list of routes or fields: the REST requests come from the
//! OpenAPI document the gateway serves (`GET /openapi.json`), the GraphQL operations from
//! introspection, so a route or field added later is swept without touching this file (and the
//! counts asserted below grow with the document).
//!
//! - bob, owner of another namespace, sends every method of every route that takes a namespace
//!   to alice's namespace — once with alice's real object names (her backups, restore,
//!   schedule, storage location, history operation, Idempotency-Key), once with made-up names,
//!   once in a namespace that does not exist — and gets a refusal that is byte-identical in the
//!   three cases and carries nothing of hers;
//! - the same over every GraphQL query and mutation field with a namespace argument, and every
//!   subscription field over the GraphQL WebSocket; the refused writes write nothing;
//! - every download (logs, results, resource lists, the manifest and its download) of alice's
//!   backup and restore, and bob's own streams while alice works;
//! - a `view` user and a create-only CI service account inside alice's namespace sweep the same
//!   routes: writes refused as RBAC says, and no Secret of the namespace (name or value) in any
//!   answer;
//! - alice's namespace deleted and created again under the same name by dave: dave's reads
//!   answer exactly as in a namespace never used, and carry nothing of alice's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;
#[path = "support/ws.rs"]
mod ws;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use http::Method;
use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use nac::sim::demo::OADP_NAMESPACE;
use nac::sim::velero::storage::LOCAL_PROVIDER;
use serde_json::{Value, json};
use support::cluster::{TestCluster, eventually};
use support::nac_stack::{self, NacStack};
use tower::ServiceExt;
use ws::Ws;

on_both_servers!(
    bob_sweeps_every_rest_route_of_the_openapi_document,
    bob_sweeps_every_graphql_field_with_a_namespace,
    bob_gets_no_download_or_stream_of_alice,
    a_viewer_and_ci_bot_read_no_secret_inside_the_namespace,
    a_new_owner_of_a_recreated_namespace_sees_nothing_of_alice,
);

// ---------------------------------------------------------------------------------------------
// alice's namespace
// ---------------------------------------------------------------------------------------------

/// alice's object names: distinctive, so that any of them in an answer is a finding.
const BACKUP: &str = "amber-first";
const SECOND: &str = "amber-second";
const RESTORE: &str = "amber-restore";
const SCHEDULE: &str = "amber-nightly";
const LOCATION: &str = "amber-store";
const CREDENTIALS: &str = "amber-cloud-creds";
const CREDENTIALS_VALUE: &str = "amber-secret-access-key-5e1f";
const IDEMPOTENCY_KEY: &str = "amber-idem-7c1e";

/// How long an event stream a caller may open is read before it is judged.
const STREAM_WINDOW: Duration = Duration::from_millis(1200);

/// The names a sweep fills in: alice's real ones, or made-up ones of the same kinds.
#[derive(Clone, Debug)]
struct Names {
    ns: String,
    backup: String,
    second: String,
    restore: String,
    schedule: String,
    location: String,
    operation: String,
    key: String,
    /// GraphQL: optional Boolean arguments set (`details`, `dryRun`), else left out.
    flags: bool,
}

impl Names {
    fn real(ns: &str, operation: &str) -> Names {
        Names {
            ns: ns.into(),
            backup: BACKUP.into(),
            second: SECOND.into(),
            restore: RESTORE.into(),
            schedule: SCHEDULE.into(),
            location: LOCATION.into(),
            operation: operation.into(),
            key: IDEMPOTENCY_KEY.into(),
            flags: false,
        }
    }

    fn made_up(ns: &str) -> Names {
        Names {
            ns: ns.into(),
            backup: "ghost-first".into(),
            second: "ghost-second".into(),
            restore: "ghost-restore".into(),
            schedule: "ghost-nightly".into(),
            location: "ghost-store".into(),
            operation: "0badc0de-0000-4000-8000-00000000dead".into(),
            key: "ghost-idem-7c1e".into(),
            flags: false,
        }
    }

    /// The same names with optional Boolean GraphQL arguments set when `flags`.
    fn with_flags(&self, flags: bool) -> Names {
        Names {
            flags,
            ..self.clone()
        }
    }

    /// The object name for a REST resource (`backups`, `restores`, …).
    fn for_resource(&self, resource: &str) -> &str {
        match resource {
            "restores" => &self.restore,
            "schedules" => &self.schedule,
            "storage-locations" => &self.location,
            _ => &self.backup,
        }
    }

    /// A well-formed create body of `resource` (the short form `{name, spec}`).
    fn create_body(&self, resource: &str) -> Value {
        match resource {
            "restores" => json!({"name": self.restore, "spec": self.spec("restores")}),
            "schedules" => json!({"name": self.schedule, "spec": self.spec("schedules")}),
            "storage-locations" => {
                json!({"name": self.location, "spec": self.spec("storage-locations")})
            }
            _ => json!({"name": self.backup, "spec": self.spec("backups")}),
        }
    }

    fn spec(&self, resource: &str) -> Value {
        match resource {
            "restores" => json!({"restoreSpec": {"backupName": self.backup}}),
            "schedules" => json!({
                "schedule": "0 2 * * *", "paused": true,
                "template": {"backupSpec": {}}
            }),
            "storage-locations" => json!({"backupStorageLocationSpec": {
                "provider": LOCAL_PROVIDER,
                "objectStorage": {"bucket": "amber-bucket"},
                "credential": {"name": CREDENTIALS, "key": "cloud"}
            }}),
            _ => json!({"backupSpec": {}}),
        }
    }
}

/// alice's namespace with one of everything, and bob's beside it.
struct World {
    ns: String,
    /// A namespace that does not exist (bob's third comparison).
    ghost: String,
    bob_ns: String,
    alice: String,
    ns_uid: String,
    /// History operation ids of alice's backups and restore.
    operations: Vec<String>,
    /// UIDs of alice's NonAdmin objects and the names of their Velero objects.
    uids: Vec<String>,
    velero_names: Vec<String>,
    location_created: bool,
}

impl World {
    fn real(&self) -> Names {
        Names::real(&self.ns, &self.operations[0])
    }

    /// Everything of alice's that no one outside her namespace may read. Her namespace's name is
    /// not in it: bob names it in every request, and a refusal may repeat the namespace the
    /// caller asked for (each refusal is also compared with the one for a namespace that does not
    /// exist, the name replaced, which shows that it says nothing about hers).
    fn markers(&self) -> Vec<String> {
        let mut markers: Vec<String> = [
            BACKUP,
            SECOND,
            RESTORE,
            SCHEDULE,
            LOCATION,
            CREDENTIALS,
            CREDENTIALS_VALUE,
            IDEMPOTENCY_KEY,
            "amber-",
            "web-config",
            "web-credentials",
            "web-data",
            "alice",
        ]
        .iter()
        .map(|m| m.to_string())
        .collect();
        markers.push(format!("hello from {}", self.ns));
        markers.push(format!("{}-demo-password", self.ns));
        markers.push(self.ns_uid.clone());
        markers.extend(self.operations.iter().cloned());
        markers.extend(self.uids.iter().cloned());
        markers.extend(self.velero_names.iter().cloned());
        markers
    }

    /// What no one who may not read the namespace's Secrets may see: the demo Secret's name and
    /// value, and alice's credential Secret's value.
    fn secret_markers(&self) -> Vec<String> {
        vec![
            "web-credentials".into(),
            format!("{}-demo-password", self.ns),
            CREDENTIALS_VALUE.into(),
        ]
    }
}

/// Starts NAC on `cluster` (quick items), after removing a policy an earlier case left.
async fn start(cluster: &TestCluster, velero_sync: Option<Duration>) -> NacStack {
    let maps: Api<ConfigMap> = Api::namespaced(cluster.admin(), OADP_NAMESPACE);
    let _ = maps.delete("nac-policy", &DeleteParams::default()).await;
    nac_stack::start(cluster, |options| {
        options.item_delay = Duration::from_millis(0);
        if let Some(every) = velero_sync {
            options.backup_sync_interval = every;
        }
    })
    .await
}

/// alice's namespace (the demo workload, a credential Secret, two completed backups with their
/// manifests — the first created with an Idempotency-Key —, a completed restore, a paused
/// schedule, a storage location, their history) and bob's.
async fn alice_world(cluster: &TestCluster, stack: &NacStack) -> World {
    let ns = cluster.unique_name("sweep-own", None);
    let ghost = cluster.unique_name("sweep-ghost", None);
    let bob_ns = cluster.unique_name("sweep-bob", None);
    cluster.tenant_namespace("alice", &ns).await;
    cluster.tenant_namespace("bob", &bob_ns).await;
    let alice = cluster.user_token("alice");
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": CREDENTIALS},
        "stringData": {"cloud": format!(
            "[default]\naws_access_key_id=amber\naws_secret_access_key={CREDENTIALS_VALUE}\n"
        )}
    }))
    .unwrap();
    Api::<Secret>::namespaced(cluster.admin(), &ns)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let ns_uid = Api::<Namespace>::all(cluster.admin())
        .get(&ns)
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    let api = format!("/api/v1/namespaces/{ns}");
    let names = Names::real(&ns, "");
    let mut uids = Vec::new();
    let mut velero_names = Vec::new();
    for (name, key) in [(BACKUP, Some(IDEMPOTENCY_KEY)), (SECOND, None)] {
        let headers: Vec<(String, String)> = key
            .map(|k| ("idempotency-key".to_string(), k.to_string()))
            .into_iter()
            .collect();
        let created = send(
            &stack.router,
            Method::POST,
            &format!("{api}/backups?wait=true&timeout=90s"),
            &alice,
            &headers,
            Some(json_body(&backup_body(name))),
        )
        .await;
        assert_eq!(created.status, 201, "backup {name}: {}", created.body);
        let object: Value = serde_json::from_str(&created.body).unwrap();
        assert_eq!(
            object.pointer("/status/veleroBackup/status/phase"),
            Some(&json!("Completed")),
            "{object}"
        );
        uids.push(object["metadata"]["uid"].as_str().unwrap().to_string());
        if let Some(velero) = object.pointer("/status/veleroBackup/name") {
            velero_names.push(velero.as_str().unwrap().to_string());
        }
    }
    for name in [BACKUP, SECOND] {
        let path = format!("{api}/backups/{name}/manifest");
        eventually(&format!("the manifest of {name}"), 120, || async {
            let answer = stack.get(&path, &alice).await;
            (answer.status == 200).then_some(())
        })
        .await;
    }
    let restored = send(
        &stack.router,
        Method::POST,
        &format!("{api}/restores?wait=true&timeout=90s"),
        &alice,
        &[],
        Some(json_body(&names.create_body("restores"))),
    )
    .await;
    assert_eq!(restored.status, 201, "restore: {}", restored.body);
    let object: Value = serde_json::from_str(&restored.body).unwrap();
    uids.push(object["metadata"]["uid"].as_str().unwrap().to_string());
    if let Some(velero) = object.pointer("/status/veleroRestore/name") {
        velero_names.push(velero.as_str().unwrap().to_string());
    }
    let scheduled = send(
        &stack.router,
        Method::POST,
        &format!("{api}/schedules"),
        &alice,
        &[],
        Some(json_body(&names.create_body("schedules"))),
    )
    .await;
    assert_eq!(scheduled.status, 201, "schedule: {}", scheduled.body);
    let object: Value = serde_json::from_str(&scheduled.body).unwrap();
    uids.push(object["metadata"]["uid"].as_str().unwrap().to_string());
    let located = send(
        &stack.router,
        Method::POST,
        &format!("{api}/storage-locations"),
        &alice,
        &[],
        Some(json_body(&names.create_body("storage-locations"))),
    )
    .await;
    let location_created = located.status == 201;
    if location_created {
        let object: Value = serde_json::from_str(&located.body).unwrap();
        uids.push(object["metadata"]["uid"].as_str().unwrap().to_string());
    } else {
        eprintln!(
            "note: alice's storage location was not created ({}): the sweep fills a name \
             that does not exist for it: {}",
            located.status, located.body
        );
    }
    let operations: Vec<String> = eventually("alice's history", 60, || async {
        let page = stack.get(&format!("{api}/history"), &alice).await;
        assert_eq!(page.status, 200, "{}", page.text());
        let items = page.json()["items"].as_array().unwrap().clone();
        let ids: Vec<String> = items
            .iter()
            .filter(|i| i["name"] == BACKUP || i["name"] == SECOND || i["name"] == RESTORE)
            .filter_map(|i| i["id"].as_str().map(str::to_string))
            .collect();
        (ids.len() >= 3).then_some(ids)
    })
    .await;
    World {
        ns,
        ghost,
        bob_ns,
        alice,
        ns_uid,
        operations,
        uids,
        velero_names,
        location_created,
    }
}

/// The tenant objects of `ns` as the admin reads them: kind/name → spec, labels, deletion.
async fn snapshot(cluster: &TestCluster, ns: &str) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for (kind, plural) in [
        ("NonAdminBackup", "nonadminbackups"),
        ("NonAdminRestore", "nonadminrestores"),
        ("NonAdminSchedule", "nonadminschedules"),
        (
            "NonAdminBackupStorageLocation",
            "nonadminbackupstoragelocations",
        ),
    ] {
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("oadp.openshift.io", "v1alpha1", kind),
            plural,
        );
        let api: Api<DynamicObject> = Api::namespaced_with(cluster.admin(), ns, &resource);
        for object in api.list(&ListParams::default()).await.unwrap().items {
            out.insert(
                format!("{plural}/{}", object.metadata.name.clone().unwrap()),
                json!({
                    "uid": object.metadata.uid,
                    "spec": object.data.get("spec"),
                    "labels": object.metadata.labels,
                    "deleting": object.metadata.deletion_timestamp.is_some(),
                }),
            );
        }
    }
    out
}

/// Lists what changed between two snapshots.
fn changes(before: &BTreeMap<String, Value>, after: &BTreeMap<String, Value>) -> Vec<String> {
    let keys: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    keys.into_iter()
        .filter(|k| before.get(*k) != after.get(*k))
        .map(|k| format!("{k}: {:?} -> {:?}", before.get(k), after.get(k)))
        .collect()
}

/// alice's first request again, byte for byte (path, query, body and Idempotency-Key), as
/// `token` with `key`: keys are per caller, so no one else ever gets her stored answer.
async fn replay_of_alices_request(stack: &NacStack, ns: &str, token: &str, key: &str) -> Reply {
    send(
        &stack.router,
        Method::POST,
        &format!("/api/v1/namespaces/{ns}/backups?wait=true&timeout=90s"),
        token,
        &[("idempotency-key".to_string(), key.to_string())],
        Some(json_body(&backup_body(BACKUP))),
    )
    .await
}

fn backup_body(name: &str) -> Value {
    json!({"name": name, "spec": {"backupSpec": {}}})
}

// ---------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------

/// One answer: what two answers are compared on (status, content type, body).
#[derive(Clone, Debug)]
struct Reply {
    status: u16,
    content_type: String,
    body: String,
    /// An event stream that was read for [`STREAM_WINDOW`] and then dropped.
    streamed: bool,
}

impl Reply {
    fn success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// Status, content type and body, request ids removed.
    fn shape(&self) -> String {
        format!(
            "{} {}\n{}",
            self.status,
            self.content_type,
            scrub_text(&self.body)
        )
    }
}

/// `text` with request-id-like fields removed when it is JSON.
fn scrub_text(text: &str) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(mut value) => {
            scrub(&mut value);
            value.to_string()
        }
        Err(_) => text.to_string(),
    }
}

fn scrub(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|key, _| {
                let key = key.to_ascii_lowercase().replace(['_', '-'], "");
                !matches!(key.as_str(), "requestid" | "traceid")
            });
            map.values_mut().for_each(scrub);
        }
        Value::Array(items) => items.iter_mut().for_each(scrub),
        _ => {}
    }
}

fn json_body(value: &Value) -> (String, Vec<u8>) {
    (
        "application/json".into(),
        serde_json::to_vec(value).unwrap(),
    )
}

/// A request through the gateway's router; an event stream is read for [`STREAM_WINDOW`].
async fn send(
    router: &axum::Router,
    method: Method,
    path: &str,
    token: &str,
    headers: &[(String, String)],
    body: Option<(String, Vec<u8>)>,
) -> Reply {
    send_for(router, method, path, token, headers, body, STREAM_WINDOW).await
}

async fn send_for(
    router: &axum::Router,
    method: Method,
    path: &str,
    token: &str,
    headers: &[(String, String)],
    body: Option<(String, Vec<u8>)>,
    window: Duration,
) -> Reply {
    let mut request = http::Request::builder()
        .method(method.clone())
        .uri(path)
        .header("authorization", format!("Bearer {token}"));
    for (name, value) in headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let body = match body {
        Some((content_type, bytes)) => {
            request = request.header("content-type", content_type);
            axum::body::Body::from(bytes)
        }
        None => axum::body::Body::empty(),
    };
    let response = tokio::time::timeout(
        Duration::from_secs(60),
        router.clone().oneshot(request.body(body).unwrap()),
    )
    .await
    .unwrap_or_else(|_| panic!("{method} {path}: no answer within 60 s"))
    .unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let streamed = content_type.starts_with("text/event-stream");
    let limit = if streamed {
        window
    } else {
        Duration::from_secs(60)
    };
    let deadline = tokio::time::Instant::now() + limit;
    let mut body = response.into_body();
    let mut bytes = Vec::new();
    loop {
        let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
        match tokio::time::timeout(remaining, body.frame()).await {
            Ok(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    bytes.extend_from_slice(data);
                }
            }
            Ok(Some(Err(e))) => panic!("{method} {path}: body error {e}"),
            Ok(None) => break,
            Err(_) => {
                assert!(
                    streamed,
                    "{method} {path}: the body did not end within 60 s"
                );
                break;
            }
        }
    }
    Reply {
        status,
        content_type,
        body: String::from_utf8_lossy(&bytes).into_owned(),
        streamed,
    }
}

// ---------------------------------------------------------------------------------------------
// REST requests generated from the OpenAPI document
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
struct Param {
    name: String,
    location: String,
    schema: Value,
    required: bool,
}

/// One method of one path template of the document.
#[derive(Clone, Debug)]
struct Route {
    template: String,
    method: Method,
    params: Vec<Param>,
    /// The request body's media type, when the operation takes one.
    body_type: Option<String>,
}

impl Route {
    /// The tenant resource of the route: the segment after `{namespace}/` (`backups`, …).
    fn resource(&self) -> &str {
        self.template
            .split("{namespace}/")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .unwrap_or("")
    }

    fn writes(&self) -> bool {
        self.method != Method::GET && self.method != Method::HEAD
    }
}

/// Follows a local `$ref` of the document.
fn resolve<'a>(document: &'a Value, value: &'a Value) -> &'a Value {
    match value.get("$ref").and_then(Value::as_str) {
        Some(reference) => document
            .pointer(reference.trim_start_matches('#'))
            .unwrap_or_else(|| panic!("dangling $ref {reference}")),
        None => value,
    }
}

/// The document the gateway serves.
async fn openapi(stack: &NacStack, token: &str) -> Value {
    let reply = send(
        &stack.router,
        Method::GET,
        "/openapi.json",
        token,
        &[],
        None,
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    serde_json::from_str(&reply.body).unwrap()
}

/// Every (path, method) of the document that takes a namespace: a `{namespace}` in the path,
/// or a `namespaces` query parameter.
fn namespace_routes(document: &Value) -> Vec<Route> {
    let mut routes = Vec::new();
    for (template, item) in document["paths"].as_object().unwrap() {
        let shared: Vec<Value> = item["parameters"].as_array().cloned().unwrap_or_default();
        for (method, operation) in item.as_object().unwrap() {
            let Ok(method) = method.to_ascii_uppercase().parse::<Method>() else {
                continue;
            };
            if !matches!(
                method,
                Method::GET
                    | Method::PUT
                    | Method::POST
                    | Method::DELETE
                    | Method::PATCH
                    | Method::HEAD
                    | Method::OPTIONS
                    | Method::TRACE
            ) {
                continue;
            }
            let mut params = Vec::new();
            for param in shared
                .iter()
                .chain(operation["parameters"].as_array().into_iter().flatten())
            {
                let param = resolve(document, param);
                params.push(Param {
                    name: param["name"].as_str().unwrap().to_string(),
                    location: param["in"].as_str().unwrap().to_string(),
                    schema: resolve(document, &param["schema"]).clone(),
                    required: param["required"].as_bool().unwrap_or(false),
                });
            }
            let takes_namespace = template.contains("{namespace}")
                || params
                    .iter()
                    .any(|p| p.location == "query" && p.name == "namespaces");
            if !takes_namespace {
                continue;
            }
            let body_type = operation
                .get("requestBody")
                .map(|body| resolve(document, body))
                .and_then(|body| body["content"].as_object())
                .and_then(|content| content.keys().next().cloned());
            routes.push(Route {
                template: template.clone(),
                method,
                params,
                body_type,
            });
        }
    }
    routes
}

/// One generated request.
#[derive(Clone, Debug)]
struct Probe {
    method: Method,
    path: String,
    headers: Vec<(String, String)>,
    body: Option<(String, Vec<u8>)>,
    label: String,
}

impl Probe {
    async fn send(&self, router: &axum::Router, token: &str) -> Reply {
        send(
            router,
            self.method.clone(),
            &self.path,
            token,
            &self.headers,
            self.body.clone(),
        )
        .await
    }

    /// The request as text (path, headers and body), to tell which names the caller sent.
    fn text(&self) -> String {
        let body = self
            .body
            .as_ref()
            .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default();
        format!("{} {:?} {body}", self.path, self.headers)
    }
}

/// The requests for `route` with `names` filled in: the bare request, then one per value of an
/// enumerated query parameter and one per boolean query parameter set (`wait`, which only
/// delays an allowed caller, is left out), each with every body: `{}` and a well-formed one.
/// Requests for the same route and two sets of names come in the same order.
fn probes(route: &Route, names: &Names) -> Vec<Probe> {
    let resource = route.resource();
    let mut path = route.template.replace("{namespace}", &names.ns);
    for param in route
        .params
        .iter()
        .filter(|p| p.location == "path" && p.name != "namespace")
    {
        let lower = param.name.to_ascii_lowercase();
        let value = if lower.contains("operation") || lower == "id" || lower.ends_with("id") {
            names.operation.as_str()
        } else {
            names.for_resource(resource)
        };
        path = path.replace(&format!("{{{}}}", param.name), value);
    }
    let mut base: Vec<(String, String)> = Vec::new();
    for param in route.params.iter().filter(|p| p.location == "query") {
        match param.name.as_str() {
            "namespaces" => base.push((param.name.clone(), names.ns.clone())),
            "against" => base.push((param.name.clone(), names.second.clone())),
            _ if param.required => base.push((param.name.clone(), "x".into())),
            _ => {}
        }
    }
    let mut queries = vec![base.clone()];
    for param in route.params.iter().filter(|p| {
        p.location == "query"
            && !p.required
            && !matches!(p.name.as_str(), "namespaces" | "against" | "wait")
    }) {
        if let Some(values) = param.schema["enum"].as_array() {
            for value in values {
                let mut query = base.clone();
                query.push((param.name.clone(), value.as_str().unwrap().to_string()));
                queries.push(query);
            }
        } else if param.schema["type"] == "boolean" {
            let mut query = base.clone();
            query.push((param.name.clone(), "true".into()));
            queries.push(query);
        }
    }
    // An Idempotency-Key new to the caller on every request (`KEY-<n>`), so that each answer is
    // the route's own and not a refusal of a reused key (keys are per caller and path: alice's
    // own key is tried on its own, see `replays_of_alices_request`).
    let headers_for = |n: usize| -> Vec<(String, String)> {
        let mut headers = Vec::new();
        for param in route.params.iter().filter(|p| p.location == "header") {
            if param.name.eq_ignore_ascii_case("idempotency-key") {
                headers.push((param.name.clone(), format!("{}-{n}", names.key)));
            } else if param.required {
                headers.push((param.name.clone(), "x".into()));
            }
        }
        headers
    };
    let bodies: Vec<Option<(String, Vec<u8>)>> = match &route.body_type {
        None => vec![None],
        Some(media_type) => {
            let well_formed = if route.method == Method::PATCH {
                if resource == "schedules" {
                    json!({"paused": false})
                } else {
                    json!({"metadata": {"labels": {"swept": "yes"}}})
                }
            } else {
                names.create_body(resource)
            };
            vec![
                Some((media_type.clone(), b"{}".to_vec())),
                Some((
                    media_type.clone(),
                    serde_json::to_vec(&well_formed).unwrap(),
                )),
            ]
        }
    };
    let mut out = Vec::new();
    for query in &queries {
        let full = if query.is_empty() {
            path.clone()
        } else {
            let pairs: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{path}?{}", pairs.join("&"))
        };
        for body in &bodies {
            let shown = body
                .as_ref()
                .map(|(_, b)| format!(" {}", String::from_utf8_lossy(b)))
                .unwrap_or_default();
            let headers = headers_for(out.len());
            let shown_headers = if headers.is_empty() {
                String::new()
            } else {
                format!(" {headers:?}")
            };
            out.push(Probe {
                method: route.method.clone(),
                path: full.clone(),
                headers,
                body: body.clone(),
                label: format!("{} {full}{shown_headers}{shown}", route.method),
            });
        }
    }
    out
}

/// The markers of `markers` found in `text`.
fn found<'a>(markers: &'a [String], text: &str) -> Vec<&'a str> {
    markers
        .iter()
        .filter(|m| text.contains(m.as_str()))
        .map(String::as_str)
        .collect()
}

/// Fails with every finding at once.
fn assert_no_findings(who: &str, findings: &[String]) {
    assert!(
        findings.is_empty(),
        "{who}: {} finding(s):\n- {}",
        findings.len(),
        findings.join("\n- ")
    );
}

/// bob's three requests for one probe (alice's names, made-up names, a namespace that does not
/// exist): never a success, the same answer three times (the namespace replaced), nothing of
/// alice's. Returns the number of requests sent.
#[allow(clippy::too_many_arguments)]
async fn bob_probe(
    router: &axum::Router,
    bob: &str,
    world: &World,
    markers: &[String],
    real: &Probe,
    made_up: &Probe,
    elsewhere: &Probe,
    findings: &mut Vec<String>,
    statuses: &mut BTreeMap<u16, usize>,
) -> usize {
    let a = real.send(router, bob).await;
    let b = made_up.send(router, bob).await;
    let c = elsewhere.send(router, bob).await;
    let label = &real.label;
    *statuses.entry(a.status).or_default() += 1;
    if a.success() || b.success() || c.success() {
        findings.push(format!(
            "bob {label}: a success ({} / {} / {}): {}",
            a.status, b.status, c.status, a.body
        ));
    } else if !(400..500).contains(&a.status) {
        findings.push(format!("bob {label}: {} (not a 4xx): {}", a.status, a.body));
    }
    if a.shape() != b.shape() {
        findings.push(format!(
            "bob {label}: alice's names and made-up names answer differently:\n  real:    {}\n  made-up: {}",
            a.shape(),
            b.shape()
        ));
    }
    let here = b.shape().replace(&world.ns, "<ns>");
    let there = c.shape().replace(&world.ghost, "<ns>");
    if here != there {
        findings.push(format!(
            "bob {label}: alice's namespace and a namespace that does not exist answer differently:\n  alice's: {here}\n  none:    {there}"
        ));
    }
    let leaked = found(markers, &a.body);
    if !leaked.is_empty() {
        findings.push(format!(
            "bob {label}: the answer carries {leaked:?}: {}",
            a.body
        ));
    }
    3
}

// ---------------------------------------------------------------------------------------------
// GraphQL operations generated by introspection
// ---------------------------------------------------------------------------------------------

const INTROSPECTION: &str = "query { __schema { \
    queryType { name } mutationType { name } subscriptionType { name } \
    types { kind name \
      fields { name args { name defaultValue type { ...T } } type { ...T } } \
      inputFields { name defaultValue type { ...T } } \
      enumValues { name } } } } \
    fragment T on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } }";

struct Schema {
    types: BTreeMap<String, Value>,
    /// The selection depth each field is asked with (see [`Schema::fit_depths`]).
    depths: BTreeMap<String, usize>,
    query: String,
    mutation: Option<String>,
    subscription: Option<String>,
}

async fn gql(router: &axum::Router, token: &str, query: &str, variables: &Value) -> Reply {
    send(
        router,
        Method::POST,
        "/graphql",
        token,
        &[],
        Some(json_body(&json!({"query": query, "variables": variables}))),
    )
    .await
}

async fn introspect(stack: &NacStack, token: &str) -> Schema {
    let reply = gql(&stack.router, token, INTROSPECTION, &json!({})).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let answer: Value = serde_json::from_str(&reply.body).unwrap();
    assert!(answer.get("errors").is_none(), "introspection: {answer}");
    let schema = &answer["data"]["__schema"];
    let types = schema["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap().to_string(), t.clone()))
        .collect();
    let name = |root: &str| schema[root]["name"].as_str().map(str::to_string);
    let mut schema = Schema {
        types,
        depths: BTreeMap::new(),
        query: name("queryType").unwrap(),
        mutation: name("mutationType"),
        subscription: name("subscriptionType"),
    };
    schema.fit_depths(&stack.router, token).await;
    schema
}

/// `String!`, `[String!]`, … of a type reference.
fn type_ref(t: &Value) -> String {
    match t["kind"].as_str().unwrap() {
        "NON_NULL" => format!("{}!", type_ref(&t["ofType"])),
        "LIST" => format!("[{}]", type_ref(&t["ofType"])),
        _ => t["name"].as_str().unwrap().to_string(),
    }
}

/// The named type under the wrappers: (kind, name).
fn named(t: &Value) -> (String, String) {
    match t["kind"].as_str().unwrap() {
        "NON_NULL" | "LIST" => named(&t["ofType"]),
        kind => (kind.to_string(), t["name"].as_str().unwrap().to_string()),
    }
}

fn required(arg: &Value) -> bool {
    arg["type"]["kind"] == "NON_NULL" && arg["defaultValue"].is_null()
}

/// The REST resource a GraphQL field is about, from its name.
fn field_resource(field: &str) -> &'static str {
    let lower = field.to_ascii_lowercase();
    if lower.contains("restore") {
        "restores"
    } else if lower.contains("schedule") {
        "schedules"
    } else if lower.contains("storagelocation") {
        "storage-locations"
    } else {
        "backups"
    }
}

impl Schema {
    /// The fields of root type `root` with a `namespace` or `namespaces` argument.
    fn namespace_fields(&self, root: Option<&String>) -> Vec<Value> {
        let Some(root) = root else { return Vec::new() };
        self.types[root]["fields"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| {
                f["args"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|a| a["name"] == "namespace" || a["name"] == "namespaces")
            })
            .cloned()
            .collect()
    }

    /// Every scalar field of `type_name` (objects down to `depth` levels), `__typename` always.
    fn selection(&self, type_name: &str, depth: usize) -> String {
        let t = &self.types[type_name];
        match t["kind"].as_str().unwrap() {
            "OBJECT" => {
                let mut parts = vec!["__typename".to_string()];
                for field in t["fields"].as_array().unwrap() {
                    if field["args"].as_array().unwrap().iter().any(required) {
                        continue;
                    }
                    let name = field["name"].as_str().unwrap();
                    let (kind, inner) = named(&field["type"]);
                    match kind.as_str() {
                        "SCALAR" | "ENUM" => parts.push(name.to_string()),
                        "OBJECT" | "INTERFACE" | "UNION" if depth > 0 => parts.push(format!(
                            "{name} {{ {} }}",
                            self.selection(&inner, depth - 1)
                        )),
                        _ => {}
                    }
                }
                parts.join(" ")
            }
            "INTERFACE" | "UNION" => "__typename".into(),
            _ => String::new(),
        }
    }

    /// A value for argument `arg` of `field`, or `None` to leave an optional one out.
    fn argument(&self, field: &str, arg: &Value, names: &Names) -> Option<Value> {
        let name = arg["name"].as_str().unwrap();
        let resource = field_resource(field);
        match name {
            "namespace" => return Some(json!(names.ns)),
            "namespaces" => return Some(json!([names.ns])),
            _ if !required(arg) && names.flags && named(&arg["type"]).1 == "Boolean" => {
                return Some(json!(true));
            }
            _ if !required(arg) => return None,
            "name" => return Some(json!(names.for_resource(resource))),
            "id" => return Some(json!(names.operation)),
            "against" => return Some(json!(names.second)),
            _ => {}
        }
        let (kind, type_name) = named(&arg["type"]);
        Some(match (kind.as_str(), type_name.as_str()) {
            ("INPUT_OBJECT", _) => {
                let mut object = serde_json::Map::new();
                for input in self.types[&type_name]["inputFields"].as_array().unwrap() {
                    let key = input["name"].as_str().unwrap();
                    let value = match key {
                        "name" => json!(names.for_resource(resource)),
                        "backupName" => json!(names.backup),
                        "spec" => names.spec(resource),
                        _ => continue,
                    };
                    object.insert(key.to_string(), value);
                }
                Value::Object(object)
            }
            ("SCALAR", "String") | ("SCALAR", "ID") => json!("x"),
            ("SCALAR", "Int") => json!(1),
            ("SCALAR", "Float") => json!(1.0),
            ("SCALAR", "Boolean") => json!(false),
            ("ENUM", _) => json!(self.types[&type_name]["enumValues"][0]["name"]),
            // JSON: a body of the field's resource (`backupDryRun(backup:)`,
            // `restorePreview(restore:)`), a schedule change (`updateSchedule(spec:)`).
            _ => match name {
                "spec" => json!({"paused": false}),
                _ => names.create_body(resource),
            },
        })
    }

    /// The operation (`query`, `mutation`, `subscription`) calling `field` with `names`, and its
    /// variables, selecting as deep as the gateway's complexity limit allows.
    fn operation(&self, keyword: &str, field: &Value, names: &Names) -> (String, Value) {
        let key = format!("{keyword} {}", field["name"].as_str().unwrap());
        let depth = self.depths.get(&key).copied().unwrap_or(0);
        self.operation_at(keyword, field, names, depth)
    }

    /// Asked once with optional Boolean arguments left out, and once more with them set when the
    /// field has any (`describeBackup(details:)`, `createBackup(dryRun:)`).
    fn flag_variants(&self, field: &Value) -> Vec<bool> {
        let has_flags = field["args"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| !required(a) && named(&a["type"]).1 == "Boolean");
        if has_flags {
            vec![false, true]
        } else {
            vec![false]
        }
    }

    /// Finds, for every field with a namespace argument, the deepest selection (3 levels down at
    /// most) the gateway accepts, asking as `token` about a namespace that does not exist (a
    /// refused operation, so nothing is written).
    async fn fit_depths(&mut self, router: &axum::Router, token: &str) {
        let nowhere = Names::made_up("sweep-nowhere");
        let roots = [
            ("query", Some(self.query.clone())),
            ("mutation", self.mutation.clone()),
        ];
        for (keyword, root) in roots {
            for field in self.namespace_fields(root.as_ref()) {
                let mut fitted = 0;
                for depth in (0..=3).rev() {
                    let (query, variables) = self.operation_at(keyword, &field, &nowhere, depth);
                    let reply = gql(router, token, &query, &variables).await;
                    if !reply.body.contains("QUERY_TOO_") {
                        fitted = depth;
                        break;
                    }
                }
                self.depths.insert(
                    format!("{keyword} {}", field["name"].as_str().unwrap()),
                    fitted,
                );
            }
        }
        // Subscriptions are refused over the socket before they run; one level suffices.
        for field in self.namespace_fields(self.subscription.clone().as_ref()) {
            self.depths.insert(
                format!("subscription {}", field["name"].as_str().unwrap()),
                1,
            );
        }
    }

    /// The operation calling `field` with `names`, selecting objects `depth` levels down.
    fn operation_at(
        &self,
        keyword: &str,
        field: &Value,
        names: &Names,
        depth: usize,
    ) -> (String, Value) {
        let field_name = field["name"].as_str().unwrap();
        let mut declarations = Vec::new();
        let mut arguments = Vec::new();
        let mut variables = serde_json::Map::new();
        for (i, arg) in field["args"].as_array().unwrap().iter().enumerate() {
            if let Some(value) = self.argument(field_name, arg, names) {
                declarations.push(format!("$a{i}: {}", type_ref(&arg["type"])));
                arguments.push(format!("{}: $a{i}", arg["name"].as_str().unwrap()));
                variables.insert(format!("a{i}"), value);
            }
        }
        let (_, returned) = named(&field["type"]);
        let selection = self.selection(&returned, depth);
        let selection = if selection.is_empty() {
            String::new()
        } else {
            format!(" {{ {selection} }}")
        };
        let declarations = if declarations.is_empty() {
            String::new()
        } else {
            format!("({})", declarations.join(", "))
        };
        let arguments = if arguments.is_empty() {
            String::new()
        } else {
            format!("({})", arguments.join(", "))
        };
        (
            format!("{keyword} Sweep{declarations} {{ {field_name}{arguments}{selection} }}"),
            Value::Object(variables),
        )
    }
}

/// Why a GraphQL answer is not a clean FORBIDDEN refusal of `field`, if it is not.
fn not_forbidden(reply: &Reply, field: &str) -> Option<String> {
    let Ok(answer) = serde_json::from_str::<Value>(&reply.body) else {
        return Some(format!("not JSON ({}): {}", reply.status, reply.body));
    };
    let errors = answer["errors"].as_array().cloned().unwrap_or_default();
    if errors.is_empty() {
        return Some(format!("no error: {}", reply.body));
    }
    let codes: Vec<&Value> = errors.iter().map(|e| &e["extensions"]["code"]).collect();
    if codes.iter().any(|c| **c != "FORBIDDEN") {
        return Some(format!("codes {codes:?}: {}", reply.body));
    }
    if !(answer["data"].is_null() || answer["data"][field].is_null()) {
        return Some(format!("data returned: {}", reply.body));
    }
    None
}

// ---------------------------------------------------------------------------------------------
// 1. Every REST route as bob
// ---------------------------------------------------------------------------------------------

async fn bob_sweeps_every_rest_route_of_the_openapi_document(cluster: TestCluster) {
    let stack = start(&cluster, None).await;
    let world = alice_world(&cluster, &stack).await;
    let bob = cluster.user_token("bob");
    let markers = world.markers();
    let before = snapshot(&cluster, &world.ns).await;
    let document = openapi(&stack, &bob).await;
    let routes = namespace_routes(&document);
    let declared = routes.len();
    let mut covered = BTreeSet::new();
    let mut requests = 0;
    let mut findings = Vec::new();
    let mut statuses = BTreeMap::new();
    for route in &routes {
        let real = probes(route, &world.real());
        let made_up = probes(route, &Names::made_up(&world.ns));
        let elsewhere = probes(route, &Names::made_up(&world.ghost));
        assert_eq!(real.len(), made_up.len());
        for ((a, b), c) in real.iter().zip(&made_up).zip(&elsewhere) {
            requests += bob_probe(
                &stack.router,
                &bob,
                &world,
                &markers,
                a,
                b,
                c,
                &mut findings,
                &mut statuses,
            )
            .await;
        }
        covered.insert((route.template.clone(), route.method.to_string()));
    }
    eprintln!(
        "REST sweep as bob on the {}: {} routes x methods covered (the document declares {declared} \
         that take a namespace), {requests} requests (alice's storage location real: {}); bob's statuses {statuses:?}",
        cluster.server,
        covered.len(),
        world.location_created
    );
    assert!(
        declared > 0,
        "the document declares no route with a namespace"
    );
    assert!(covered.len() >= declared);
    // alice's own request with her own Idempotency-Key: refused as any other, never replayed.
    let replayed = replay_of_alices_request(&stack, &world.ns, &bob, IDEMPOTENCY_KEY).await;
    let fresh_key = replay_of_alices_request(&stack, &world.ns, &bob, "ghost-idem-once").await;
    requests += 2;
    if replayed.status != 403 || replayed.shape() != fresh_key.shape() {
        findings.push(format!(
            "bob repeating alice's request with her Idempotency-Key: {} (a new key: {})",
            replayed.shape(),
            fresh_key.shape()
        ));
    }
    let after = snapshot(&cluster, &world.ns).await;
    findings.extend(
        changes(&before, &after)
            .into_iter()
            .map(|c| format!("bob's refused writes changed alice's objects: {c}")),
    );
    eprintln!(
        "REST sweep as bob on the {}: {requests} requests in all",
        cluster.server
    );
    assert_no_findings("REST sweep as bob", &findings);
}

// ---------------------------------------------------------------------------------------------
// 2. Every GraphQL field with a namespace as bob
// ---------------------------------------------------------------------------------------------

/// One subscription over a fresh GraphQL WebSocket as `token`: every message until the
/// operation completes (or 10 s pass), as text.
async fn subscription_messages(addr: &str, token: &str, query: &str, variables: &Value) -> String {
    let mut socket = Ws::open(addr, json!({"token": token})).await;
    socket
        .send(json!({"id": "sweep", "type": "subscribe",
                     "payload": {"query": query, "variables": variables}}))
        .await;
    let mut messages = Vec::new();
    while let Some(message) = socket.next(Duration::from_secs(10)).await {
        let done = message["type"] == "complete" || message["type"] == "error";
        let mut message = message;
        scrub(&mut message);
        messages.push(message.to_string());
        if done {
            break;
        }
    }
    messages.join("\n")
}

async fn bob_sweeps_every_graphql_field_with_a_namespace(cluster: TestCluster) {
    let stack = start(&cluster, None).await;
    let world = alice_world(&cluster, &stack).await;
    let bob = cluster.user_token("bob");
    let markers = world.markers();
    let before = snapshot(&cluster, &world.ns).await;
    let schema = introspect(&stack, &bob).await;
    let mut findings = Vec::new();
    let mut requests = 0;
    let mut counts = Vec::new();
    for (keyword, root) in [
        ("query", Some(&schema.query)),
        ("mutation", schema.mutation.as_ref()),
    ] {
        let fields = schema.namespace_fields(root);
        let mut covered = 0;
        let mut flagged = 0;
        for (field, flags) in fields
            .iter()
            .flat_map(|f| schema.flag_variants(f).into_iter().map(move |b| (f, b)))
        {
            let name = field["name"].as_str().unwrap();
            let (query, real) = schema.operation(keyword, field, &world.real().with_flags(flags));
            let (_, made_up) =
                schema.operation(keyword, field, &Names::made_up(&world.ns).with_flags(flags));
            let (_, elsewhere) = schema.operation(
                keyword,
                field,
                &Names::made_up(&world.ghost).with_flags(flags),
            );
            let a = gql(&stack.router, &bob, &query, &real).await;
            let b = gql(&stack.router, &bob, &query, &made_up).await;
            let c = gql(&stack.router, &bob, &query, &elsewhere).await;
            requests += 3;
            for (what, reply) in [("alice's names", &a), ("made-up names", &b)] {
                if let Some(why) = not_forbidden(reply, name) {
                    findings.push(format!("bob {keyword} {name} with {what}: {why}"));
                }
            }
            if a.shape() != b.shape() {
                findings.push(format!(
                    "bob {keyword} {name}: alice's names and made-up names answer differently:\n  real:    {}\n  made-up: {}",
                    a.shape(),
                    b.shape()
                ));
            }
            let here = b.shape().replace(&world.ns, "<ns>");
            let there = c.shape().replace(&world.ghost, "<ns>");
            if here != there {
                findings.push(format!(
                    "bob {keyword} {name}: alice's namespace and one that does not exist answer differently:\n  alice's: {here}\n  none:    {there}"
                ));
            }
            let leaked = found(&markers, &a.body);
            if !leaked.is_empty() {
                findings.push(format!(
                    "bob {keyword} {name}: the answer carries {leaked:?}: {}",
                    a.body
                ));
            }
            if !flags {
                covered += 1;
            } else {
                flagged += 1;
            }
        }
        assert_eq!(covered, fields.len());
        counts.push(format!(
            "{covered} {keyword} fields ({flagged} also with their Boolean flags set)"
        ));
    }

    // Subscriptions over the GraphQL WebSocket (the router served over TCP).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let served = stack.router.clone();
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, served).await;
    });
    let subscriptions = schema.namespace_fields(schema.subscription.as_ref());
    for field in &subscriptions {
        let name = field["name"].as_str().unwrap();
        let (query, real) = schema.operation("subscription", field, &world.real());
        let (_, elsewhere) = schema.operation("subscription", field, &Names::made_up(&world.ghost));
        let here = subscription_messages(&addr, &bob, &query, &real).await;
        let there = subscription_messages(&addr, &bob, &query, &elsewhere).await;
        requests += 2;
        let refused = here.contains("\"FORBIDDEN\"") && !here.contains("\"data\":{");
        if !refused {
            findings.push(format!(
                "bob subscription {name} on alice's namespace is not refused: {here}"
            ));
        }
        if here.replace(&world.ns, "<ns>") != there.replace(&world.ghost, "<ns>") {
            findings.push(format!(
                "bob subscription {name}: alice's namespace and one that does not exist answer differently:\n  alice's: {here}\n  none:    {there}"
            ));
        }
        let leaked = found(&markers, &here);
        if !leaked.is_empty() {
            findings.push(format!(
                "bob subscription {name} carries {leaked:?}: {here}"
            ));
        }
    }
    server.abort();
    counts.push(format!("{} subscription fields", subscriptions.len()));
    eprintln!(
        "GraphQL sweep as bob on the {}: {} with a namespace argument, {requests} requests",
        cluster.server,
        counts.join(", ")
    );
    let after = snapshot(&cluster, &world.ns).await;
    findings.extend(
        changes(&before, &after)
            .into_iter()
            .map(|c| format!("bob's refused mutations changed alice's objects: {c}")),
    );
    assert_no_findings("GraphQL sweep as bob", &findings);
}

// ---------------------------------------------------------------------------------------------
// 3. Downloads and streams
// ---------------------------------------------------------------------------------------------

/// Routes of one object that download something: its logs and artifacts (`artifact`), its
/// manifest (and `download`).
fn download_routes(routes: &[Route]) -> Vec<Route> {
    routes
        .iter()
        .filter(|r| {
            r.method == Method::GET
                && r.template.contains("{name}")
                && (r.template.ends_with("/logs")
                    || r.template.ends_with("/manifest")
                    || r.params
                        .iter()
                        .any(|p| p.name == "artifact" || p.name == "download"))
        })
        .cloned()
        .collect()
}

async fn bob_gets_no_download_or_stream_of_alice(cluster: TestCluster) {
    let stack = start(&cluster, None).await;
    let world = alice_world(&cluster, &stack).await;
    let bob = cluster.user_token("bob");
    let markers = world.markers();
    let document = openapi(&stack, &bob).await;
    let routes = download_routes(&namespace_routes(&document));
    assert!(
        routes.iter().any(|r| r.resource() == "backups")
            && routes.iter().any(|r| r.resource() == "restores"),
        "downloads of backups and restores: {routes:?}"
    );
    let mut findings = Vec::new();
    let mut requests = 0;
    let mut downloads = 0;
    let mut statuses = BTreeMap::new();
    for route in &routes {
        let real = probes(route, &world.real());
        let made_up = probes(route, &Names::made_up(&world.ns));
        let elsewhere = probes(route, &Names::made_up(&world.ghost));
        for ((a, b), c) in real.iter().zip(&made_up).zip(&elsewhere) {
            // The artifact exists: its owner downloads it (else bob's 403 would prove little).
            let owners = a.send(&stack.router, &world.alice).await;
            if !owners.success() || owners.body.is_empty() {
                findings.push(format!(
                    "alice cannot download {} ({}): {}",
                    a.label, owners.status, owners.body
                ));
            }
            let refused = a.send(&stack.router, &bob).await;
            if refused.status != 403 {
                findings.push(format!(
                    "bob {}: {} instead of 403: {}",
                    a.label, refused.status, refused.body
                ));
            }
            requests += 2 + bob_probe(
                &stack.router,
                &bob,
                &world,
                &markers,
                a,
                b,
                c,
                &mut findings,
                &mut statuses,
            )
            .await;
            downloads += 1;
        }
    }

    // The namespace's event stream, resumed or not, and the cluster stream filtered to it.
    for (path, headers) in [
        ("/api/v1/namespaces/{ns}/events", vec![]),
        (
            "/api/v1/namespaces/{ns}/events",
            vec![("last-event-id".to_string(), "0".to_string())],
        ),
        ("/api/v1/events?namespaces={ns}", vec![]),
    ] {
        let here = send(
            &stack.router,
            Method::GET,
            &path.replace("{ns}", &world.ns),
            &bob,
            &headers,
            None,
        )
        .await;
        let there = send(
            &stack.router,
            Method::GET,
            &path.replace("{ns}", &world.ghost),
            &bob,
            &headers,
            None,
        )
        .await;
        requests += 2;
        if here.status != 403 {
            findings.push(format!(
                "bob {path}: {} instead of 403: {}",
                here.status, here.body
            ));
        }
        if here.shape().replace(&world.ns, "<ns>") != there.shape().replace(&world.ghost, "<ns>") {
            findings.push(format!(
                "bob {path}: alice's namespace and one that does not exist answer differently: {} / {}",
                here.shape(),
                there.shape()
            ));
        }
    }

    // bob's own streams (SSE and a GraphQL subscription) and views while alice works: nothing
    // of hers, not even her namespace's name (bob did not name it here).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let served = stack.router.clone();
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, served).await;
    });
    let mut socket = Ws::open(&addr, json!({"token": bob})).await;
    socket
        .send(
            json!({"id": "own", "type": "subscribe", "payload": {"query":
            "subscription { changes { kind id namespace resource name phase namespaces } }"}}),
        )
        .await;
    let ready = socket.next(Duration::from_secs(10)).await.unwrap();
    let watched = ready["payload"]["data"]["changes"]["namespaces"].clone();
    assert!(
        watched.as_array().unwrap().contains(&json!(world.bob_ns))
            && !watched.as_array().unwrap().contains(&json!(world.ns)),
        "{ready}"
    );
    let router = stack.router.clone();
    let token = bob.clone();
    let stream = tokio::spawn(async move {
        send_for(
            &router,
            Method::GET,
            "/api/v1/events",
            &token,
            &[],
            None,
            Duration::from_secs(20),
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let live = send(
        &stack.router,
        Method::POST,
        &format!(
            "/api/v1/namespaces/{}/backups?wait=true&timeout=60s",
            world.ns
        ),
        &world.alice,
        &[],
        Some(json_body(
            &json!({"name": "amber-live", "spec": {"backupSpec": {}}}),
        )),
    )
    .await;
    assert_eq!(live.status, 201, "{}", live.body);
    let mut seen_on_socket = Vec::new();
    while let Some(message) = socket.next(Duration::from_secs(2)).await {
        seen_on_socket.push(message.to_string());
    }
    let mut own_markers = markers.clone();
    own_markers.push(world.ns.clone());
    for path in ["/api/v1/namespaces", "/api/v1/queue", "/api/v1/session"] {
        let view = send(&stack.router, Method::GET, path, &bob, &[], None).await;
        requests += 1;
        let leaked = found(&own_markers, &view.body);
        if !leaked.is_empty() {
            findings.push(format!(
                "bob's own {path} carries {leaked:?}: {}",
                view.body
            ));
        }
    }
    let stream = stream.await.unwrap();
    requests += 2;
    assert_eq!(stream.status, 200, "{}", stream.body);
    let leaked = found(&own_markers, &stream.body);
    if !leaked.is_empty() {
        findings.push(format!(
            "bob's own event stream carries {leaked:?} while alice works: {}",
            stream.body
        ));
    }
    let socket_text = seen_on_socket.join("\n");
    let leaked = found(&own_markers, &socket_text);
    if !leaked.is_empty() {
        findings.push(format!(
            "bob's own subscription carries {leaked:?} while alice works: {socket_text}"
        ));
    }
    server.abort();
    eprintln!(
        "downloads and streams as bob on the {}: {} download routes, {downloads} download \
         requests of alice's backup and restore, {requests} requests in all; bob's statuses \
         {statuses:?}",
        cluster.server,
        routes.len()
    );
    assert_no_findings("downloads and streams as bob", &findings);
}

// ---------------------------------------------------------------------------------------------
// 4. Inside the namespace: a view user and a create-only CI account
// ---------------------------------------------------------------------------------------------

/// Whether RBAC lets the CI account (`nac-nonadmin-backup-creator`: create/get/list/watch
/// NonAdminBackups, create/get/delete download requests) send `route`.
fn ci_bot_may(route: &Route) -> Option<bool> {
    match (route.method.clone(), route.resource()) {
        (Method::POST, "backups") if route.template.ends_with("/backups") => Some(true),
        (Method::GET, "restores" | "schedules" | "storage-locations") => Some(false),
        (Method::GET, _) => None,
        _ => Some(false),
    }
}

async fn a_viewer_and_ci_bot_read_no_secret_inside_the_namespace(cluster: TestCluster) {
    let stack = start(&cluster, None).await;
    let world = alice_world(&cluster, &stack).await;
    cluster.bind(&world.ns, "viewer", "User", "view").await;
    let account: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "ci-bot"}})).unwrap();
    Api::<ServiceAccount>::namespaced(cluster.admin(), &world.ns)
        .create(&PostParams::default(), &account)
        .await
        .unwrap();
    cluster
        .bind(
            &world.ns,
            "ci-bot",
            "ServiceAccount",
            "nac-nonadmin-backup-creator",
        )
        .await;
    let viewer = cluster.user_token("viewer");
    let ci_bot = cluster.sa_token(&world.ns, "ci-bot").await;
    // The viewer's role is aggregated (by kube-controller-manager on the real server): wait
    // until the gateway lets them list backups.
    let list = format!("/api/v1/namespaces/{}/backups", world.ns);
    eventually("the view role to allow listing backups", 60, || async {
        (stack.get(&list, &viewer).await.status == 200).then_some(())
    })
    .await;
    let secrets = world.secret_markers();
    let document = openapi(&stack, &viewer).await;
    let routes = namespace_routes(&document);
    let schema = introspect(&stack, &viewer).await;
    let mut findings = Vec::new();
    let mut counts = Vec::new();
    let before = snapshot(&cluster, &world.ns).await;
    for (who, token) in [("the view user", &viewer), ("ci-bot", &ci_bot)] {
        let mut requests = 0;
        let mut allowed = 0;
        for route in &routes {
            let expected = if who == "ci-bot" {
                ci_bot_may(route)
            } else {
                (route.writes()).then_some(false)
            };
            for names in [world.real(), Names::made_up(&world.ns)] {
                for probe in probes(route, &names) {
                    let reply = probe.send(&stack.router, token).await;
                    requests += 1;
                    if reply.success() {
                        allowed += 1;
                    }
                    match expected {
                        Some(false) if reply.status != 403 => findings.push(format!(
                            "{who} {}: {} instead of 403: {}",
                            probe.label, reply.status, reply.body
                        )),
                        Some(true) if reply.status == 403 => findings.push(format!(
                            "{who} {}: refused although RBAC allows it: {}",
                            probe.label, reply.body
                        )),
                        _ => {}
                    }
                    let leaked = found(&secrets, &reply.body);
                    if !leaked.is_empty() {
                        findings.push(format!(
                            "{who} {}: the answer carries {leaked:?}: {}",
                            probe.label, reply.body
                        ));
                    }
                }
            }
        }
        // GraphQL: every query field with a namespace (reads, Secret-free); every mutation
        // refused but ci-bot's createBackup.
        for (keyword, root) in [
            ("query", Some(&schema.query)),
            ("mutation", schema.mutation.as_ref()),
        ] {
            for field in schema.namespace_fields(root) {
                let name = field["name"].as_str().unwrap();
                for flags in schema.flag_variants(&field) {
                    for names in [world.real(), Names::made_up(&world.ns)] {
                        let (query, variables) =
                            schema.operation(keyword, &field, &names.with_flags(flags));
                        let reply = gql(&stack.router, token, &query, &variables).await;
                        requests += 1;
                        let may = keyword == "query" || (who == "ci-bot" && name == "createBackup");
                        if !may && let Some(why) = not_forbidden(&reply, name) {
                            findings.push(format!("{who} mutation {name}: {why}"));
                        }
                        let leaked = found(&secrets, &reply.body);
                        if !leaked.is_empty() {
                            findings.push(format!(
                            "{who} {keyword} {name} (flags {flags}): the answer carries {leaked:?}: {}",
                            reply.body
                        ));
                        }
                    }
                }
            }
        }
        let replayed = replay_of_alices_request(&stack, &world.ns, token, IDEMPOTENCY_KEY).await;
        requests += 1;
        if replayed.success() || replayed.body.contains(&world.uids[0]) {
            findings.push(format!(
                "{who} repeating alice's request with her Idempotency-Key gets her answer: {}",
                replayed.shape()
            ));
        }
        counts.push(format!(
            "{who}: {requests} requests ({allowed} REST successes)"
        ));
        let after = snapshot(&cluster, &world.ns).await;
        for change in changes(&before, &after) {
            // ci-bot may create backups; nothing else changes.
            let created_backup = who == "ci-bot"
                && change.starts_with("nonadminbackups/")
                && change.contains(": None -> ");
            if !created_backup {
                findings.push(format!("{who}'s refused writes changed: {change}"));
            }
        }
    }
    eprintln!(
        "inside-namespace sweep on the {}: {} routes x methods, {}",
        cluster.server,
        routes.len(),
        counts.join("; ")
    );
    assert_no_findings("inside alice's namespace", &findings);
}

// ---------------------------------------------------------------------------------------------
// 5. A new owner of a re-created namespace
// ---------------------------------------------------------------------------------------------

/// `text` with what tells two namespaces apart masked: the namespace's name, the generated names
/// of its RoleBindings, UIDs and timestamps (alice's UIDs are looked for separately).
fn masked(text: &str, ns: &str, bindings: &[String]) -> String {
    let mut text = text.to_string();
    for binding in bindings {
        text = text.replace(binding.as_str(), "<binding>");
    }
    text = text.replace(ns, "<ns>");
    let uid =
        regex::Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap();
    let time = regex::Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")
        .unwrap();
    let text = uid.replace_all(&text, "<uid>");
    time.replace_all(&text, "<time>").into_owned()
}

async fn binding_names(cluster: &TestCluster, ns: &str) -> Vec<String> {
    Api::<RoleBinding>::namespaced(cluster.admin(), ns)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|b| b.metadata.name)
        .collect()
}

async fn a_new_owner_of_a_recreated_namespace_sees_nothing_of_alice(cluster: TestCluster) {
    // NAC's backup sync every 2 s and Velero's every 200 ms, so that a synced backup of alice's
    // would reach the re-created namespace during the case.
    let maps: Api<ConfigMap> = Api::namespaced(cluster.admin(), OADP_NAMESPACE);
    let mut stack = start(&cluster, Some(Duration::from_millis(200))).await;
    let policy: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "nac-policy", "namespace": OADP_NAMESPACE},
        "data": {"policy.yaml": "backupSyncPeriod: 2s\n"}
    }))
    .unwrap();
    maps.create(&PostParams::default(), &policy).await.unwrap();
    let world = alice_world(&cluster, &stack).await;
    let ns = world.ns.clone();
    let fresh = cluster.unique_name("sweep-fresh", None);
    let old_uid = world.ns_uid.clone();

    Api::<Namespace>::all(cluster.admin())
        .delete(&ns, &DeleteParams::default())
        .await
        .unwrap();
    eventually(&format!("namespace {ns} gone"), 120, || async {
        Api::<Namespace>::all(cluster.admin())
            .get_opt(&ns)
            .await
            .unwrap()
            .is_none()
            .then_some(())
    })
    .await;
    cluster.tenant_namespace("dave", &ns).await;
    cluster.tenant_namespace("dave", &fresh).await;
    let dave = cluster.user_token("dave");
    let new_uid = Api::<Namespace>::all(cluster.admin())
        .get(&ns)
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    assert_ne!(new_uid, old_uid);
    eventually("the gateway sees dave's namespaces", 30, || async {
        let answer = stack.get("/api/v1/namespaces", &dave).await;
        let text = answer.text();
        (text.contains(&format!("\"{ns}\"")) && text.contains(&format!("\"{fresh}\"")))
            .then_some(())
    })
    .await;
    // The controllers again, so that their sync runs at the policy's period from now on; a few
    // periods for it to adopt anything it would.
    stack.stop_controllers().await;
    stack.start_controllers();
    tokio::time::sleep(Duration::from_secs(7)).await;

    // Every generated GET (and GraphQL query) with alice's names, in the re-created namespace
    // and in one never used: the same answers, nothing of alice's.
    let mut markers = world.markers();
    markers.retain(|m| m != "web-config" && m != "web-credentials" && m != "web-data");
    markers.retain(|m| !m.starts_with("hello from") && !m.ends_with("-demo-password"));
    markers.retain(|m| m != "alice");
    // (dave's namespace has the demo workload too: its names and values are his now.)
    let document = openapi(&stack, &dave).await;
    let routes: Vec<Route> = namespace_routes(&document)
        .into_iter()
        .filter(|r| r.method == Method::GET)
        .collect();
    let here_bindings = binding_names(&cluster, &ns).await;
    let there_bindings = binding_names(&cluster, &fresh).await;
    let real = world.real();
    let mut in_fresh = real.clone();
    in_fresh.ns = fresh.clone();
    let mut findings = Vec::new();
    let mut requests = 0;
    for route in &routes {
        for (a, b) in probes(route, &real).iter().zip(&probes(route, &in_fresh)) {
            let reborn = a.send(&stack.router, &dave).await;
            let never = b.send(&stack.router, &dave).await;
            requests += 2;
            // A name dave typed may come back (a 404 names what was asked for); any other of
            // alice's may not.
            let asked = a.text();
            let leaked: Vec<&str> = found(&markers, &reborn.body)
                .into_iter()
                .filter(|m| !asked.contains(m))
                .collect();
            if !leaked.is_empty() {
                findings.push(format!(
                    "dave {}: the answer carries alice's {leaked:?}: {}",
                    a.label, reborn.body
                ));
            }
            if reborn.streamed {
                continue;
            }
            let here = masked(&reborn.shape(), &ns, &here_bindings);
            let there = masked(&never.shape(), &fresh, &there_bindings);
            if here != there {
                findings.push(format!(
                    "dave {}: the re-created namespace answers otherwise than a never-used one:\n  re-created: {here}\n  never used: {there}",
                    a.label
                ));
            }
        }
    }
    let schema = introspect(&stack, &dave).await;
    let fields = schema.namespace_fields(Some(&schema.query));
    for (field, flags) in fields
        .iter()
        .flat_map(|f| schema.flag_variants(f).into_iter().map(move |b| (f, b)))
    {
        let name = field["name"].as_str().unwrap();
        let (query, here_vars) = schema.operation("query", field, &real.with_flags(flags));
        let (_, there_vars) = schema.operation("query", field, &in_fresh.with_flags(flags));
        let reborn = gql(&stack.router, &dave, &query, &here_vars).await;
        let never = gql(&stack.router, &dave, &query, &there_vars).await;
        requests += 2;
        let asked = here_vars.to_string();
        let leaked: Vec<&str> = found(&markers, &reborn.body)
            .into_iter()
            .filter(|m| !asked.contains(m))
            .collect();
        if !leaked.is_empty() {
            findings.push(format!(
                "dave query {name}: the answer carries alice's {leaked:?}: {}",
                reborn.body
            ));
        }
        // A dry run reads the namespace's live objects as they are now (dave's own), whose
        // names the cluster generates (ReplicaSets, EndpointSlices…): two namespaces differ
        // there, so it is held to the markers above and to answering in the same way.
        if name.to_ascii_lowercase().contains("dryrun") {
            let outcome = |reply: &Reply| {
                let answer: Value = serde_json::from_str(&reply.body).unwrap_or_default();
                (
                    reply.status,
                    answer["errors"].is_array(),
                    answer["data"][name].is_null(),
                )
            };
            if outcome(&reborn) != outcome(&never) {
                findings.push(format!(
                    "dave query {name}: the re-created namespace answers otherwise than a never-used one: {} / {}",
                    reborn.body, never.body
                ));
            }
            continue;
        }
        let here = masked(&reborn.shape(), &ns, &here_bindings);
        let there = masked(&never.shape(), &fresh, &there_bindings);
        if here != there {
            findings.push(format!(
                "dave query {name}: the re-created namespace answers otherwise than a never-used one:\n  re-created: {here}\n  never used: {there}"
            ));
        }
    }
    eprintln!(
        "re-created namespace sweep as dave on the {}: {} GET routes, {} query fields, {requests} requests",
        cluster.server,
        routes.len(),
        fields.len()
    );
    let _ = maps.delete("nac-policy", &DeleteParams::default()).await;
    assert_no_findings("the re-created namespace", &findings);
}
