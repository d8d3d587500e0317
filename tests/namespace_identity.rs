//! Identity over time (DESIGN §5), on the emulator and on a real kube-apiserver (each case
//! `NAME::emulator` and `NAME::real`) with the whole of NAC running (`nac_stack`): a namespace
//! is deleted and created again under the same name by another owner — as anyone who may
//! create projects can claim a deleted project's name on OpenShift. The new owner reads nothing
//! of the predecessor's history, timelines, statistics, coverage, manifests (contents, graph,
//! diff), queue ETAs (which rest on the namespace's past durations) or Idempotency-Key answers:
//! every read answers exactly as it does for a namespace that was never used.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;

use http::{Method, StatusCode};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::api::{Api, DeleteParams, PostParams};
use nac::sim::demo::OADP_NAMESPACE;
use nac::sim::velero::options::OUTCOME_ANNOTATION;
use serde_json::{Value, json};
use support::cluster::{TestCluster, eventually, eventually_seen};
use support::nac_stack::{self, Answer, NacStack};

on_both_servers!(a_recreated_namespace_sees_nothing_of_its_predecessor);

/// A request through the gateway with extra headers.
async fn call(
    stack: &NacStack,
    method: Method,
    path: &str,
    token: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> Answer {
    stack
        .call_with_headers(method, path, token, body, headers)
        .await
}

/// A GraphQL query as `token`.
async fn gql(stack: &NacStack, token: &str, query: &str, variables: Value) -> Value {
    let answer = call(
        stack,
        Method::POST,
        "/graphql",
        token,
        Some(json!({"query": query, "variables": variables})),
        &[],
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    answer.json()
}

/// `value` without request ids (they differ per request), its namespace name `from` replaced by
/// `to` (so that two namespaces compare; objects compare whatever the order of their keys).
fn renamed(value: &Value, from: &str, to: &str) -> Value {
    serde_json::from_str(&normalized(value).replace(from, to)).unwrap()
}

/// `value` without request ids (they differ per request), as text.
fn normalized(value: &Value) -> String {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.remove("requestId");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut value = value.clone();
    strip(&mut value);
    value.to_string()
}

/// An answer as status and body (JSON when it is JSON), namespace `from` renamed `to`.
fn shape(answer: &Answer, from: &str, to: &str) -> (u16, Value) {
    let body = serde_json::from_slice::<Value>(&answer.body)
        .map(|v| renamed(&v, from, to))
        .unwrap_or_else(|_| Value::String(answer.text().replace(from, to)));
    (answer.status.as_u16(), body)
}

async fn namespace_uid(cluster: &TestCluster, name: &str) -> String {
    Api::<Namespace>::all(cluster.admin())
        .get(name)
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap()
}

/// Service account `ns/ci-bot`, bound to the aggregated `admin` role in `ns`: its user name
/// (`system:serviceaccount:NS:ci-bot`) is the same in every namespace of that name.
async fn ci_bot(cluster: &TestCluster, ns: &str) -> String {
    let sa: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "ci-bot"}})).unwrap();
    Api::<ServiceAccount>::namespaced(cluster.admin(), ns)
        .create(&PostParams::default(), &sa)
        .await
        .unwrap();
    cluster.bind(ns, "ci-bot", "ServiceAccount", "admin").await;
    cluster.sa_token(ns, "ci-bot").await
}

const KEY: &str = "nightly-1-create";

fn nightly_body(name: &str) -> Value {
    json!({"name": name, "spec": {"backupSpec": {}}})
}

/// Every read a tenant has of a namespace's past (REST and GraphQL), as `token`, in `ns`, with
/// the predecessor's operation ids and backup names: each answer's status and body (the
/// namespace's name replaced by `as_name`, so two namespaces compare).
async fn past_reads(
    stack: &NacStack,
    token: &str,
    ns: &str,
    as_name: &str,
    old_ids: &[String],
    window: (&str, &str),
) -> BTreeMap<String, (u16, Value)> {
    let api = format!("/api/v1/namespaces/{ns}");
    let mut paths = vec![
        format!("{api}/history"),
        format!("{api}/history?kind=backup&phase=Completed"),
        format!("{api}/stats?from={}&to={}", window.0, window.1),
        format!("{api}/coverage"),
    ];
    for id in old_ids {
        paths.push(format!("{api}/history/{id}"));
    }
    for name in ["nightly-1", "nightly-2"] {
        paths.push(format!("{api}/backups/{name}/manifest"));
        paths.push(format!("{api}/backups/{name}/contents"));
        paths.push(format!("{api}/backups/{name}/graph"));
    }
    paths.push(format!("{api}/backups/nightly-2/diff?against=nightly-3"));
    let mut out = BTreeMap::new();
    for path in paths {
        let answer = stack.get(&path, token).await;
        out.insert(path.replace(ns, as_name), shape(&answer, ns, as_name));
    }
    let query = "query($ns: String!, $from: String!, $to: String!) { \
        history(namespace: $ns) { edges { node { id name phase } } } \
        stats(namespace: $ns, from: $from, to: $to) { kinds { kind total } } \
        coverage(namespace: $ns) { lastSuccessfulBackup failingSchedules } }";
    let answer = gql(
        stack,
        token,
        query,
        json!({"ns": ns, "from": window.0, "to": window.1}),
    )
    .await;
    out.insert(
        "graphql history/stats/coverage".into(),
        (200, renamed(&answer, ns, as_name)),
    );
    for id in old_ids {
        let answer = gql(
            stack,
            token,
            "query($ns: String!, $id: String!) { operation(namespace: $ns, id: $id) { id name } }",
            json!({"ns": ns, "id": id}),
        )
        .await;
        out.insert(
            format!("graphql operation {id}"),
            (200, renamed(&answer, ns, as_name)),
        );
    }
    let answer = gql(
        stack,
        token,
        "query($ns: String!) { backupManifest(namespace: $ns, name: \"nightly-1\") { itemCount } }",
        json!({"ns": ns}),
    )
    .await;
    out.insert(
        "graphql backupManifest".into(),
        (200, renamed(&answer, ns, as_name)),
    );
    out
}

/// The queue item of backup `name` in `ns` as `token` sees it, once it is queued.
async fn queue_item(stack: &NacStack, token: &str, ns: &str, name: &str) -> Value {
    let what = format!("{ns}/{name} to queue behind the blocker");
    eventually_seen(&what, 60, || async {
        let queue = stack
            .get(&format!("/api/v1/namespaces/{ns}/queue"), token)
            .await;
        assert_eq!(queue.status, StatusCode::OK, "{}", queue.text());
        let queue = queue.json();
        queue["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["name"] == name && i["state"] == "pending")
            .cloned()
            .ok_or_else(|| format!("{ns}/{name} never queued behind the blocker: {queue}"))
    })
    .await
}

async fn a_recreated_namespace_sees_nothing_of_its_predecessor(cluster: TestCluster) {
    let stack = nac_stack::start(&cluster, |_| {}).await;
    let ns = cluster.unique_name("reborn", None);
    let fresh = cluster.unique_name("neverused", None);
    cluster.tenant_namespace("alice", &ns).await;
    let alice = cluster.user_token("alice");
    let bob = cluster.user_token("bob");
    let old_bot = ci_bot(&cluster, &ns).await;
    let old_uid = namespace_uid(&cluster, &ns).await;

    // The predecessor: three completed backups (one created by ci-bot with an
    // Idempotency-Key), their history and manifests.
    let api = format!("/api/v1/namespaces/{ns}");
    let first = call(
        &stack,
        Method::POST,
        &format!("{api}/backups"),
        &old_bot,
        Some(nightly_body("nightly-1")),
        &[("idempotency-key", KEY)],
    )
    .await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.text());
    let first_uid = first.json()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    for name in ["nightly-2", "nightly-3"] {
        let created = call(
            &stack,
            Method::POST,
            &format!("{api}/backups"),
            &alice,
            Some(nightly_body(name)),
            &[],
        )
        .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    }
    for name in ["nightly-1", "nightly-2", "nightly-3"] {
        eventually(&format!("the manifest of {ns}/{name}"), 120, || async {
            let answer = stack
                .get(&format!("{api}/backups/{name}/manifest"), &alice)
                .await;
            (answer.status == StatusCode::OK).then_some(())
        })
        .await;
    }
    let old_ids: Vec<String> = eventually("three completed backups in the history", 60, || async {
        let page = stack
            .get(
                &format!("{api}/history?kind=backup&phase=Completed"),
                &alice,
            )
            .await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.text());
        let items = page.json()["items"].as_array().unwrap().clone();
        (items.len() == 3).then(|| {
            items
                .iter()
                .map(|i| i["id"].as_str().unwrap().to_string())
                .collect()
        })
    })
    .await;
    assert!(old_ids.contains(&first_uid), "{old_ids:?}");
    let now = chrono::Utc::now();
    let window = (
        (now - chrono::Duration::days(1)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        (now + chrono::Duration::days(1)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    );
    let window = (window.0.as_str(), window.1.as_str());
    let before = past_reads(&stack, &alice, &ns, &ns, &old_ids, window).await;
    let coverage = &before[&format!("{api}/coverage")];
    assert!(
        coverage.1["lastSuccessfulBackup"]
            .as_str()
            .is_some_and(|b| b.starts_with("nightly-")),
        "{coverage:?}"
    );
    let stats = &before[&format!("{api}/stats?from={}&to={}", window.0, window.1)];
    assert_eq!(stats.1["kinds"][0]["total"], 3, "{stats:?}");

    // The namespace goes (on the real server kube-controller-manager empties it first) and is
    // created again under the same name, owned by bob; beside it a namespace never used.
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
    cluster.tenant_namespace("bob", &ns).await;
    cluster.tenant_namespace("bob", &fresh).await;
    assert_ne!(namespace_uid(&cluster, &ns).await, old_uid);
    // The gateway has seen the new namespace once bob's namespace list shows it.
    eventually("the gateway sees the re-created namespace", 30, || async {
        let answer = stack.get("/api/v1/namespaces", &bob).await;
        answer.text().contains(&format!("\"{ns}\"")).then_some(())
    })
    .await;

    // Every read of the past: as for the namespace never used.
    let reborn = past_reads(&stack, &bob, &ns, &fresh, &old_ids, window).await;
    let never = past_reads(&stack, &bob, &fresh, &fresh, &old_ids, window).await;
    for (what, answer) in &never {
        assert_eq!(
            reborn.get(what),
            Some(answer),
            "{what}: the re-created namespace answers otherwise than a never-used one"
        );
    }
    assert_eq!(reborn.len(), never.len());

    // Velero busy with something that never ends, so the next backups queue.
    let blocker = cluster.unique_name("blocker", None);
    let backup: nac::api::velero::Backup = serde_json::from_value(json!({
        "apiVersion": "velero.io/v1", "kind": "Backup",
        "metadata": {"name": blocker, "namespace": OADP_NAMESPACE,
                     "annotations": {OUTCOME_ANNOTATION: "hang"}},
        "spec": {"includedNamespaces": [fresh]}
    }))
    .unwrap();
    let velero: Api<nac::api::velero::Backup> = Api::namespaced(cluster.admin(), OADP_NAMESPACE);
    velero
        .create(&PostParams::default(), &backup)
        .await
        .unwrap();

    // ci-bot of the new namespace has the same user name: the same Idempotency-Key and body
    // run a new create, never replay the predecessor's answer.
    let new_bot = ci_bot(&cluster, &ns).await;
    let again = call(
        &stack,
        Method::POST,
        &format!("/api/v1/namespaces/{ns}/backups"),
        &new_bot,
        Some(nightly_body("nightly-1")),
        &[("idempotency-key", KEY)],
    )
    .await;
    assert_eq!(again.status, StatusCode::CREATED, "{}", again.text());
    assert!(
        again.headers.get("idempotency-replayed").is_none(),
        "the predecessor's answer was replayed: {}",
        again.text()
    );
    let again_uid = again.json()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(again_uid, first_uid);
    let fresh_bot = ci_bot(&cluster, &fresh).await;
    let beside = call(
        &stack,
        Method::POST,
        &format!("/api/v1/namespaces/{fresh}/backups"),
        &fresh_bot,
        Some(nightly_body("nightly-1")),
        &[("idempotency-key", KEY)],
    )
    .await;
    assert_eq!(beside.status, StatusCode::CREATED, "{}", beside.text());

    // Queued behind the blocker: no ETA from the predecessor's durations, as in the
    // never-used namespace.
    let queued = queue_item(&stack, &bob, &ns, "nightly-1").await;
    let queued_fresh = queue_item(&stack, &bob, &fresh, "nightly-1").await;
    assert_eq!(
        queued["eta"], queued_fresh["eta"],
        "{queued} / {queued_fresh}"
    );
    assert!(queued["eta"].is_null(), "{queued}");
    let described = stack
        .get(
            &format!("/api/v1/namespaces/{ns}/backups/nightly-1/describe"),
            &bob,
        )
        .await;
    assert_eq!(described.status, StatusCode::OK, "{}", described.text());
    assert!(described.json()["eta"].is_null(), "{}", described.text());

    // With a backup of the predecessor's name in it, the past is still not theirs.
    let reborn = past_reads(&stack, &bob, &ns, &fresh, &old_ids, window).await;
    let never = past_reads(&stack, &bob, &fresh, &fresh, &old_ids, window).await;
    for (what, answer) in &never {
        // The new backups themselves differ (ids, phases): compare what names the past.
        let of_the_past = if what.starts_with("graphql") {
            what.starts_with("graphql operation") || what.starts_with("graphql backupManifest")
        } else {
            what.contains("/backups/") || what.contains("/history/") || what.ends_with("/coverage")
        };
        if !of_the_past {
            continue;
        }
        assert_eq!(
            reborn.get(what),
            Some(answer),
            "{what}: the re-created namespace answers otherwise than a never-used one"
        );
    }
    let history = stack
        .get(&format!("/api/v1/namespaces/{ns}/history"), &bob)
        .await;
    let ids: Vec<String> = history.json()["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_string())
        .collect();
    assert!(
        ids.iter().all(|id| !old_ids.contains(id)),
        "the predecessor's operations are listed: {ids:?}"
    );

    velero
        .delete(&blocker, &DeleteParams::default())
        .await
        .unwrap();
}
