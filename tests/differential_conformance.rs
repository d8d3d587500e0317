//! The differential conformance suite: each API behaviour NAC or a user relies on runs against the
//! emulator and the real kube-apiserver, and what a client observes — status codes, reasons,
//! causes, the messages clients show, watch event sequences, defaulted and pruned fields,
//! `managedFields` — must be the same. Volatile values (uids, resourceVersions, timestamps, the
//! namespace's unique name) are normalised before comparing. Where the emulator differs on
//! purpose the case says why (and the README lists it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchParams};
use nac::api::nonadmin::NonAdminBackup;
use serde_json::{Value, json};
use support::cluster::TestCluster;

/// What a client saw of one request: the object, or the error's Status.
fn observed<T: serde::Serialize>(result: Result<T, kube::Error>) -> Value {
    match result {
        Ok(object) => json!({"ok": serde_json::to_value(object).unwrap()}),
        Err(kube::Error::Api(status)) => json!({"error": {
            "code": status.code,
            "reason": status.reason,
            "message": status.message,
            "status": status.status,
        }}),
        Err(other) => json!({"client error": other.to_string()}),
    }
}

/// POSTs `body` as JSON to `path`: the status and body a client sees (with the
/// `details.causes` kube-rs does not keep).
async fn post(client: &Client, path: &str, body: Value) -> Value {
    let request = http::Request::post(path)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&body).unwrap())
        .unwrap();
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .unwrap();
    let status = response.status().as_u16();
    use http_body_util::BodyExt;
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    json!({"code": status, "body": body})
}

/// Replaces what legitimately differs between two runs.
fn normalise(value: Value, ns: &str) -> Value {
    match value {
        Value::String(s) => Value::String(s.replace(ns, "<ns>")),
        Value::Array(items) => Value::Array(items.into_iter().map(|v| normalise(v, ns)).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let v = match k.as_str() {
                        "uid" | "resourceVersion" | "creationTimestamp" | "time"
                        | "deletionTimestamp" | "lastTransitionTime" => {
                            Value::String(format!("<{k}>"))
                        }
                        _ => normalise(v, ns),
                    };
                    (k, v)
                })
                .collect(),
        ),
        other => other,
    }
}

/// Runs `case` on both servers in a namespace of each and compares what it observed.
async fn compare<F, Fut>(name: &str, case: F)
where
    F: Fn(TestCluster, String) -> Fut,
    Fut: std::future::Future<Output = Value>,
{
    let emulator = TestCluster::emulator().await;
    let ns = emulator.unique_name("diff", None);
    emulator.tenant_namespace("alice", &ns).await;
    let on_emulator = normalise(case(emulator, ns.clone()).await, &ns);
    let Some(real) = TestCluster::real().await else {
        return;
    };
    let ns = real.unique_name("diff", None);
    real.tenant_namespace("alice", &ns).await;
    let on_real = normalise(case(real, ns.clone()).await, &ns);
    pretty_assertions::assert_eq!(
        on_emulator,
        on_real,
        "{name}: the emulator (left) and the real kube-apiserver (right) differ"
    );
}

fn configmap(name: &str, labels: Value) -> ConfigMap {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": labels}, "data": {"k": "v"}}),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_found_already_exists_and_conflict() {
    compare(
        "not found / already exists / conflict",
        |c, ns| async move {
            let api: Api<ConfigMap> = Api::namespaced(c.admin(), &ns);
            let missing = observed(api.get("nope").await);
            let created = api
                .create(&PostParams::default(), &configmap("one", json!({})))
                .await
                .unwrap();
            let again = observed(
                api.create(&PostParams::default(), &configmap("one", json!({})))
                    .await,
            );
            let mut fresh = created.clone();
            fresh.data = Some([("k".to_string(), "first".to_string())].into());
            api.replace("one", &PostParams::default(), &fresh)
                .await
                .unwrap();
            let mut stale = created.clone();
            stale.data = Some([("k".to_string(), "second".to_string())].into());
            let conflict = observed(api.replace("one", &PostParams::default(), &stale).await);
            json!({"missing": missing, "again": again, "conflict": conflict})
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_labels_and_names_are_refused_with_the_same_words() {
    compare("invalid labels and names", |c, ns| async move {
        let mut seen = Vec::new();
        let bodies = [
            json!({"metadata": {"name": "long-label", "labels": {"app": "x".repeat(64)}}}),
            json!({"metadata": {"name": "bad-label", "labels": {"app": "no spaces"}}}),
            json!({"metadata": {"name": "bad-key", "labels": {"-app": "x"}}}),
            json!({"metadata": {"name": "Upper"}}),
            json!({"metadata": {"name": "n".repeat(254)}}),
        ];
        for body in bodies {
            seen.push(
                post(
                    &c.admin(),
                    &format!("/api/v1/namespaces/{ns}/configmaps"),
                    body,
                )
                .await,
            );
        }
        Value::Array(seen)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generate_name_is_cut_to_58_characters() {
    compare("generateName", |c, ns| async move {
        let api: Api<ConfigMap> = Api::namespaced(c.admin(), &ns);
        let mut object = configmap("", json!({}));
        object.metadata.name = None;
        object.metadata.generate_name = Some(format!("{}-", "g".repeat(70)));
        let made = api.create(&PostParams::default(), &object).await.unwrap();
        let name = made.metadata.name.unwrap();
        json!({"length": name.len(), "prefix": &name[..58], "generateName": made.metadata.generate_name})
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbidden_names_the_user_verb_and_resource() {
    compare("forbidden", |c, ns| async move {
        let mallory = c.user("mallory");
        let configmaps: Api<ConfigMap> = Api::namespaced(mallory.clone(), &ns);
        let nabs: Api<NonAdminBackup> = Api::namespaced(mallory, &ns);
        json!({
            "get": observed(configmaps.get("web-config").await),
            "list": observed(nabs.list(&ListParams::default()).await.map(|l| l.items.len())),
        })
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_prune_unknown_fields_and_ignore_status_on_create() {
    compare("pruning and the status subresource", |c, ns| async move {
        let alice = c.user("alice");
        let created = post(
            &alice,
            &format!("/apis/oadp.openshift.io/v1alpha1/namespaces/{ns}/nonadminbackups"),
            json!({
                "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
                "metadata": {"name": "pruned"},
                "spec": {"backupSpec": {"ttl": "1h"}, "unknownField": 1},
                "status": {"phase": "Created"}
            }),
        )
        .await;
        let nab = created["body"].clone();
        json!({
            "code": created["code"],
            "spec": nab["spec"],
            "status": nab.get("status"),
            "generation": nab["metadata"]["generation"],
        })
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_violations_name_the_field() {
    compare("schema violation", |c, ns| async move {
        post(
            &c.user("alice"),
            &format!("/apis/oadp.openshift.io/v1alpha1/namespaces/{ns}/nonadminbackups"),
            json!({
                "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
                "metadata": {"name": "bad"},
                "spec": {"backupSpec": {"includedNamespaces": "not-a-list"}}
            }),
        )
        .await
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn managed_fields_name_the_field_manager() {
    compare("managedFields", |c, ns| async move {
        let api: Api<ConfigMap> = Api::namespaced(c.admin(), &ns);
        let params = PostParams {
            field_manager: Some("nac-differential".into()),
            ..PostParams::default()
        };
        api.create(&params, &configmap("managed", json!({"app": "x"})))
            .await
            .unwrap();
        let patched = api
            .patch(
                "managed",
                &PatchParams {
                    field_manager: Some("second-writer".into()),
                    ..PatchParams::default()
                },
                &Patch::Merge(json!({"data": {"other": "1"}})),
            )
            .await
            .unwrap();
        let entries: Vec<Value> = patched
            .metadata
            .managed_fields
            .unwrap_or_default()
            .into_iter()
            .map(|e| {
                json!({"manager": e.manager, "operation": e.operation,
                       "apiVersion": e.api_version, "fieldsType": e.fields_type,
                       "subresource": e.subresource})
            })
            .collect();
        Value::Array(entries)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finalizers_hold_deletion_until_removed() {
    compare("finalizers", |c, ns| async move {
        let api: Api<ConfigMap> = Api::namespaced(c.admin(), &ns);
        let mut object = configmap("held", json!({}));
        object.metadata.finalizers = Some(vec!["example.com/hold".into()]);
        api.create(&PostParams::default(), &object).await.unwrap();
        api.delete("held", &DeleteParams::default()).await.unwrap();
        let held = api.get("held").await.unwrap();
        let marked = held.metadata.deletion_timestamp.is_some();
        api.patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
        let gone = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                if api.get_opt("held").await.unwrap().is_none() {
                    return true;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
        .unwrap_or(false);
        json!({"marked": marked, "finalizers": held.metadata.finalizers, "gone": gone})
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_sees_added_modified_deleted_in_order() {
    compare("watch", |c, ns| async move {
        let api: Api<ConfigMap> = Api::namespaced(c.admin(), &ns);
        let start = api.list(&ListParams::default()).await.unwrap();
        let rv = start.metadata.resource_version.unwrap();
        let mut stream = api
            .watch(&WatchParams::default().fields("metadata.name=watched"), &rv)
            .await
            .unwrap()
            .boxed();
        api.create(&PostParams::default(), &configmap("watched", json!({})))
            .await
            .unwrap();
        api.patch(
            "watched",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "changed"}})),
        )
        .await
        .unwrap();
        api.delete("watched", &DeleteParams::default())
            .await
            .unwrap();
        let mut events = Vec::new();
        while events.len() < 3 {
            let event = tokio::time::timeout(Duration::from_secs(10), stream.next())
                .await
                .expect("a watch event within 10 s")
                .expect("an open watch")
                .unwrap();
            match event {
                kube::api::WatchEvent::Added(o) => events.push(json!(["ADDED", o.data])),
                kube::api::WatchEvent::Modified(o) => events.push(json!(["MODIFIED", o.data])),
                kube::api::WatchEvent::Deleted(o) => events.push(json!(["DELETED", o.data])),
                kube::api::WatchEvent::Bookmark(_) => {}
                kube::api::WatchEvent::Error(e) => events.push(json!(["ERROR", e.code])),
            }
        }
        Value::Array(events)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selectors_filter_lists() {
    compare("label and field selectors", |c, ns| async move {
        let api: Api<ConfigMap> = Api::namespaced(c.admin(), &ns);
        for (name, tier) in [("a", "web"), ("b", "db"), ("c", "web")] {
            api.create(&PostParams::default(), &configmap(name, json!({"tier": tier})))
                .await
                .unwrap();
        }
        let names = |list: kube::core::ObjectList<ConfigMap>| -> Vec<String> {
            list.items.into_iter().map(|o| o.metadata.name.unwrap()).collect()
        };
        json!({
            "tier=web": names(api.list(&ListParams::default().labels("tier=web")).await.unwrap()),
            "tier!=web": names(api.list(&ListParams::default().labels("tier,tier!=web")).await.unwrap()),
            "in": names(api.list(&ListParams::default().labels("tier in (db,web)")).await.unwrap()),
            "name=b": names(api.list(&ListParams::default().fields("metadata.name=b")).await.unwrap()),
            "bad": observed(api.list(&ListParams::default().labels("tier in web")).await.map(|l| l.items.len())),
        })
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_reviews_answer_as_rbac_says() {
    compare("SubjectAccessReview", |c, ns| async move {
        let mut answers = Vec::new();
        for (user, verb, resource) in [
            ("alice", "create", "nonadminbackups"),
            ("alice", "delete", "nonadminrestores"),
            ("mallory", "get", "nonadminbackups"),
            ("alice", "create", "backups"),
        ] {
            let group = if resource == "backups" {
                "velero.io"
            } else {
                "oadp.openshift.io"
            };
            let answer = post(
                &c.admin(),
                "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                json!({
                    "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                    "spec": {"user": user, "resourceAttributes": {
                        "namespace": ns, "verb": verb, "group": group, "resource": resource}}
                }),
            )
            .await;
            answers.push(json!([
                user,
                verb,
                resource,
                answer["code"],
                answer["body"]["status"]["allowed"]
            ]));
        }
        Value::Array(answers)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_reviews_name_the_service_account() {
    compare("TokenReview", |c, ns| async move {
        let sa: k8s_openapi::api::core::v1::ServiceAccount =
            serde_json::from_value(json!({"metadata": {"name": "reviewed"}})).unwrap();
        Api::<k8s_openapi::api::core::v1::ServiceAccount>::namespaced(c.admin(), &ns)
            .create(&PostParams::default(), &sa)
            .await
            .unwrap();
        let token = c.sa_token(&ns, "reviewed").await;
        let mut answers = Vec::new();
        for token in [token.as_str(), "not-a-token"] {
            let answer = post(
                &c.admin(),
                "/apis/authentication.k8s.io/v1/tokenreviews",
                json!({
                    "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                    "spec": {"token": token}
                }),
            )
            .await;
            let status = &answer["body"]["status"];
            answers.push(json!({
                "code": answer["code"],
                "authenticated": status["authenticated"],
                "username": status["user"]["username"],
                "groups": status["user"]["groups"],
            }));
        }
        Value::Array(answers)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_creates_nothing() {
    compare("dryRun", |c, ns| async move {
        let api: Api<ConfigMap> = Api::namespaced(c.admin(), &ns);
        let params = PostParams {
            dry_run: true,
            ..PostParams::default()
        };
        let answer = api
            .create(&params, &configmap("dry", json!({})))
            .await
            .unwrap();
        json!({
            "name": answer.metadata.name,
            "stored": api.get_opt("dry").await.unwrap().is_some(),
        })
    })
    .await;
}
