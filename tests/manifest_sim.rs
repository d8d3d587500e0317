//! The backup dry-run and the restore preview agree with what the Velero simulator then does,
//! on the in-process emulator: a collection plan run against the cluster takes exactly the items
//! of the backup that follows (same manifest), a tenant's collection reports the lists it may not
//! read instead of dropping them, and a restore preview lists item by item what the restore then
//! creates, skips or updates, under each `existingResourcePolicy` and with namespace mapping.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;
use support::cluster::{TestCluster, eventually_seen, wait_for_object};
use support::controller_env::ControllerEnv;

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use nac::api::velero::{Backup, BackupSpec, Restore};
use nac::manifest::build::manifest_of_items;
use nac::manifest::collect::{CollectPlan, Collection, DiscoveredResource, ListOutcome};
use nac::manifest::preview::{
    LiveObjects, PreviewEntry, RestoreAction, RestorePlan, RestorePreview, RestoreReason,
    preview_restore,
};
use nac::manifest::tarball::{BackupItem, gunzip, read_backup_tarball};
use nac::sim::demo::OADP_NAMESPACE;
use nac::sim::velero::cluster::{ServedResource, dynamic_api, list_objects, served_resources};
use serde_json::{Value, json};

/// The emulator and Velero (its signed downloads served, its storage locations validated and
/// synced every 500 ms); no controllers.
async fn env() -> ControllerEnv {
    ControllerEnv::start_with(TestCluster::emulator().await, false, true, |options| {
        options.bsl_validation_interval = Duration::from_millis(500);
        options.backup_sync_interval = Duration::from_millis(500);
    })
    .await
}

fn phase(v: &Value) -> &str {
    v.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("")
}

async fn wait_done<K>(c: &Client, name: &str) -> Value
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(c.clone(), OADP_NAMESPACE);
    wait_for_object(&api, name, 30, |last| {
        matches!(
            phase(last),
            "Completed" | "PartiallyFailed" | "Failed" | "FailedValidation"
        )
    })
    .await
}

async fn create<K>(c: &Client, object: Value) -> K
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    let namespace = object["metadata"]["namespace"].as_str().unwrap().to_owned();
    let typed: K = serde_json::from_value(object).unwrap();
    Api::<K>::namespaced(c.clone(), &namespace)
        .create(&PostParams::default(), &typed)
        .await
        .unwrap()
}

async fn create_dynamic(
    c: &Client,
    resources: &[ServedResource],
    plural: &str,
    object: Value,
) -> Value {
    let resource = resources.iter().find(|r| r.info.plural == plural).unwrap();
    let namespace = object["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let api = dynamic_api(c, &resource.api, resource.info.namespaced, &namespace);
    let typed: kube::api::DynamicObject = serde_json::from_value(object).unwrap();
    serde_json::to_value(api.create(&PostParams::default(), &typed).await.unwrap()).unwrap()
}

fn widget(name: &str, owner: Option<&Value>) -> Value {
    let mut object = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                            "metadata": {"name": name, "namespace": "shop"}, "spec": {"size": 1}});
    if let Some(owner) = owner {
        object["metadata"]["ownerReferences"] = json!([{"apiVersion": "example.com/v1",
            "kind": "Widget", "name": owner["metadata"]["name"], "uid": uid(owner)}]);
    }
    object
}

async fn wait_served(admin: &Client, plural: &str) -> Vec<ServedResource> {
    // (Up to 10 s: it used to be 100 tries 50 ms apart.)
    eventually_seen(&format!("{plural} to be served"), 10, || async {
        let resources = served_resources(admin).await.unwrap();
        if resources.iter().any(|r| r.info.plural == plural) {
            Ok(resources)
        } else {
            Err(format!("{plural} never served"))
        }
    })
    .await
}

fn uid(object: &Value) -> String {
    object["metadata"]["uid"].as_str().unwrap().to_owned()
}

fn owned_by(kind: &str, name: &str, owner_uid: &str) -> Value {
    json!([{"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": owner_uid,
            "controller": true, "blockOwnerDeletion": true}])
}

/// The "shop" namespace of a small web application: a deployment, its replica set and pods
/// (linked by owner references), a finished migration pod, a service, two config maps, a
/// secret, a claim and a service account; plus an object kept out of backups by label.
async fn seed_shop(admin: &Client) {
    let resources = served_resources(admin).await.unwrap();
    Api::<Namespace>::all(admin.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"metadata": {"name": "shop", "labels": {"tenant": "shop"}}}),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    let app = json!({"app": "web"});
    let template = json!({"metadata": {"labels": app},
                          "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}});
    let deployment = create_dynamic(
        admin,
        &resources,
        "deployments",
        json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop", "labels": app},
        "spec": {"replicas": 2, "selector": {"matchLabels": app}, "template": template}}),
    )
    .await;
    // The emulator runs no workload controllers and serves no replica sets: the pods are
    // owned by the deployment directly.
    for pod in ["web-7c9f-abcde", "web-7c9f-fghij"] {
        create_dynamic(
            admin,
            &resources,
            "pods",
            json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod, "namespace": "shop", "labels": app,
                         "ownerReferences": owned_by("Deployment", "web", &uid(&deployment))},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}),
        )
        .await;
    }
    // A custom resource whose objects own each other: restored owners first within its rank.
    let crds: Api<CustomResourceDefinition> = Api::all(admin.clone());
    crds.create(&PostParams::default(), &serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                          "x-kubernetes-preserve-unknown-fields": true}}}]}})).unwrap())
        .await
        .unwrap();
    let resources = wait_served(admin, "widgets").await;
    let root = create_dynamic(admin, &resources, "widgets", widget("z-root", None)).await;
    let mid = create_dynamic(admin, &resources, "widgets", widget("m-mid", Some(&root))).await;
    create_dynamic(admin, &resources, "widgets", widget("a-leaf", Some(&mid))).await;
    let pods: Api<Pod> = Api::namespaced(admin.clone(), "shop");
    create::<Pod>(
        admin,
        json!({"metadata": {"name": "migrate-1", "namespace": "shop"},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "migrate:1"}]}}),
    )
    .await;
    pods.patch_status(
        "migrate-1",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Succeeded"}})),
    )
    .await
    .unwrap();
    create_dynamic(
        admin,
        &resources,
        "services",
        json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "shop", "labels": app},
        "spec": {"selector": app, "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}}),
    )
    .await;
    create::<ConfigMap>(
        admin,
        json!({"metadata": {"name": "web-config", "namespace": "shop", "labels": app},
        "data": {"greeting": "hello shoppers"}}),
    )
    .await;
    create::<ConfigMap>(
        admin,
        json!({"metadata": {"name": "feature-flags", "namespace": "shop"},
        "data": {"checkout-v2": "off"}}),
    )
    .await;
    create::<ConfigMap>(
        admin,
        json!({"metadata": {"name": "scratch", "namespace": "shop",
        "labels": {"velero.io/exclude-from-backup": "true"}}, "data": {"tmp": "1"}}),
    )
    .await;
    create::<Secret>(
        admin,
        json!({"metadata": {"name": "web-credentials", "namespace": "shop", "labels": app},
        "type": "Opaque", "stringData": {"password": "s3cr3t"}}),
    )
    .await;
    create_dynamic(
        admin,
        &resources,
        "persistentvolumeclaims",
        json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "web-data", "namespace": "shop", "labels": app},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
    )
    .await;
    create_dynamic(
        admin,
        &resources,
        "serviceaccounts",
        json!({
        "apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "web", "namespace": "shop", "labels": app},
        "imagePullSecrets": [{"name": "registry"}]}),
    )
    .await;
}

fn discovered(resources: &[ServedResource]) -> Vec<DiscoveredResource> {
    resources
        .iter()
        .map(|r| DiscoveredResource {
            info: r.info.clone(),
            listable: r.listable,
        })
        .collect()
}

fn outcome(result: Result<Vec<Value>, kube::Error>) -> ListOutcome {
    match result {
        Ok(objects) => ListOutcome::Listed(objects),
        Err(kube::Error::Api(status)) if status.code == 403 => {
            ListOutcome::Forbidden(status.message)
        }
        Err(error) => ListOutcome::Failed(error.to_string()),
    }
}

/// A dry-run: the collection plan of `spec` run with `client`'s identity, over
/// `namespace_objects`.
async fn dry_run(
    client: &Client,
    resources: &[ServedResource],
    spec: Value,
    namespace_objects: &[Value],
) -> Collection {
    let spec: BackupSpec = serde_json::from_value(spec).unwrap();
    let plan = CollectPlan::new(&spec, &discovered(resources), namespace_objects).unwrap();
    let mut outcomes = Vec::new();
    for request in plan.requests() {
        let resource = resources
            .iter()
            .find(|r| r.info == request.resource)
            .unwrap();
        outcomes.push(outcome(
            list_objects(client, resource, request.namespace.as_deref()).await,
        ));
    }
    plan.finish(outcomes).unwrap()
}

async fn namespace_objects(admin: &Client) -> Vec<Value> {
    Api::<Namespace>::all(admin.clone())
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|n| serde_json::to_value(n).unwrap())
        .collect()
}

/// Runs a Velero backup of `spec` and returns the items of its tarball.
async fn backup(e: &ControllerEnv, name: &str, spec: Value) -> Vec<BackupItem> {
    create::<Backup>(
        &e.admin,
        json!({"apiVersion": "velero.io/v1", "kind": "Backup",
               "metadata": {"name": name, "namespace": OADP_NAMESPACE}, "spec": spec}),
    )
    .await;
    let done = wait_done::<Backup>(&e.admin, name).await;
    assert_eq!(phase(&done), "Completed", "{done}");
    let tarball = std::fs::read(
        e.object_store
            .path()
            .join(format!("velero/velero/backups/{name}/{name}.tar.gz")),
    )
    .unwrap();
    read_backup_tarball(&tarball).unwrap()
}

type Identity = (String, Option<String>, String);

fn identities(items: &[BackupItem]) -> BTreeSet<Identity> {
    items
        .iter()
        .map(|i| (i.group_resource(), i.namespace.clone(), i.name.clone()))
        .collect()
}

#[tokio::test]
async fn dry_run_takes_exactly_what_the_backup_then_holds() {
    let e = env().await;
    seed_shop(&e.admin).await;
    let resources = served_resources(&e.admin).await.unwrap();
    let all_namespaces = namespace_objects(&e.admin).await;

    for (name, spec) in [
        ("whole-shop", json!({"includedNamespaces": ["shop"]})),
        (
            "web-only",
            json!({"includedNamespaces": ["shop", "team-*"], "excludedResources": ["secrets"],
                   "orLabelSelectors": [{"matchLabels": {"app": "web"}}]}),
        ),
    ] {
        let dry = dry_run(&e.admin, &resources, spec.clone(), &all_namespaces).await;
        assert!(dry.unreadable.is_empty(), "{:?}", dry.unreadable);
        let taken = backup(&e, name, spec).await;
        assert_eq!(identities(&dry.items), identities(&taken), "{name}");
        // The manifests (labels, annotations, owners, UIDs...) are the same, not just the names.
        assert_eq!(
            manifest_of_items(&dry.items),
            manifest_of_items(&taken),
            "{name}"
        );
        if name == "whole-shop" {
            let names: BTreeSet<String> = dry.items.iter().map(|i| i.name.clone()).collect();
            for expected in [
                "web",
                "web-7c9f-abcde",
                "a-leaf",
                "migrate-1",
                "web-config",
                "feature-flags",
                "web-credentials",
                "web-data",
                "shop",
            ] {
                assert!(names.contains(expected), "{expected} in {names:?}");
            }
            assert!(!names.contains("scratch"), "excluded by label");
            let manifest = manifest_of_items(&dry.items);
            let pod = manifest
                .items()
                .iter()
                .find(|i| i.name == "web-7c9f-abcde")
                .unwrap();
            let deployment = manifest
                .items()
                .iter()
                .find(|i| i.kind == "Deployment")
                .unwrap();
            assert_eq!(pod.owners, vec![deployment.uid.clone().unwrap()]);
        } else {
            assert!(dry.items.iter().all(|i| i.resource != "secrets"));
            assert!(
                dry.items
                    .iter()
                    .any(|i| i.namespace.as_deref() == Some("team-a"))
            );
            assert!(!dry.items.iter().any(|i| i.name == "feature-flags"));
        }
    }
}

#[tokio::test]
async fn a_tenant_dry_run_reports_what_it_cannot_read() {
    let e = env().await;
    let resources = served_resources(&e.admin).await.unwrap();
    // The gateway gives the tenant's own Namespace object only: no other namespace's name.
    let team_a: Vec<Value> = namespace_objects(&e.admin)
        .await
        .into_iter()
        .filter(|n| n["metadata"]["name"] == "team-a")
        .collect();
    let spec = json!({"includedNamespaces": ["team-a"], "includeClusterResources": true});
    let dry = dry_run(&e.alice, &resources, spec.clone(), &team_a).await;
    let taken = backup(&e, "team-a-all", spec).await;

    assert!(!dry.unreadable.is_empty());
    assert!(
        dry.unreadable
            .iter()
            .all(|u| u.reason == nac::manifest::collect::UnreadableReason::Forbidden),
        "{:?}",
        dry.unreadable
    );
    // Cluster-wide lists are not a tenant's to read.
    assert!(dry.unreadable.iter().any(|u| u.namespace.is_none()));
    let unreadable: BTreeSet<(String, Option<String>)> = dry
        .unreadable
        .iter()
        .map(|u| (u.group_resource(), u.namespace.clone()))
        .collect();
    let dry_items = identities(&dry.items);
    let taken_items = identities(&taken);
    assert!(dry_items.is_subset(&taken_items));
    // Every item the dry-run misses is of a list it reported as unreadable.
    for (group_resource, namespace, name) in taken_items.difference(&dry_items) {
        assert!(
            unreadable.contains(&(group_resource.clone(), namespace.clone())),
            "{group_resource} {namespace:?}/{name} missing without a reason"
        );
    }
    assert!(dry.items.iter().any(|i| i.name == "web-config"));
}

fn restore_log(e: &ControllerEnv, name: &str) -> Vec<String> {
    let gz = std::fs::read(e.object_store.path().join(format!(
        "velero/velero/restores/{name}/restore-{name}-logs.gz"
    )))
    .unwrap();
    String::from_utf8(gunzip(&gz).unwrap())
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// What the restore did with each item, from its log, in the order it did it:
/// (group-resource, target namespace, name) and the action it logged.
fn logged_actions(lines: &[String]) -> Vec<(Identity, String)> {
    let mut actions = Vec::new();
    for line in lines {
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let [.., resource, namespace, name, action] = tokens.as_slice() else {
            continue;
        };
        let (Some(resource), Some(namespace), Some(name), Some(action)) = (
            resource.strip_prefix("resource="),
            namespace.strip_prefix("namespace="),
            name.strip_prefix("name="),
            action.strip_prefix("action="),
        ) else {
            continue;
        };
        let namespace = (!namespace.is_empty()).then(|| namespace.to_owned());
        actions.push((
            (resource.to_owned(), namespace, name.to_owned()),
            action.to_owned(),
        ));
    }
    actions
}

/// The preview's item entries the restore processes, in order, as the log names actions.
fn predicted_actions(preview: &RestorePreview) -> Vec<(Identity, String)> {
    preview
        .entries
        .iter()
        .filter(|e| e.kind != "Namespace" && !e.reason.is_exclusion())
        .map(|e| {
            let group_resource = nac::manifest::selection::group_resource(&e.group, &e.resource);
            let action = match e.action {
                RestoreAction::Create => "created",
                RestoreAction::Update => "updated",
                RestoreAction::Skip => "skipped",
                RestoreAction::Fail => "failed",
                RestoreAction::Undetermined => "undetermined",
            };
            (
                (group_resource, e.target_namespace.clone(), e.name.clone()),
                action.to_owned(),
            )
        })
        .collect()
}

/// The restore preview of `spec` for backup `backup` against the cluster as it is now.
async fn preview(
    e: &ControllerEnv,
    items: &[BackupItem],
    backup: &str,
    restore: &str,
    spec: Value,
) -> RestorePreview {
    let resources = served_resources(&e.admin).await.unwrap();
    let infos: Vec<_> = resources.iter().map(|r| r.info.clone()).collect();
    let spec = serde_json::from_value(spec).unwrap();
    let plan = RestorePlan::new(items.to_vec(), &spec, &infos, backup, restore).unwrap();
    let mut live = LiveObjects::new();
    for read in plan.live_reads(&infos) {
        let resource = resources.iter().find(|r| r.info == read.resource).unwrap();
        let answer = match &read.name {
            Some(name) => {
                let api = dynamic_api(
                    &e.admin,
                    &resource.api,
                    resource.info.namespaced,
                    read.namespace.as_deref().unwrap_or_default(),
                );
                outcome(api.get_opt(name).await.map(|o| {
                    o.into_iter()
                        .map(|o| serde_json::to_value(o).unwrap())
                        .collect()
                }))
            }
            None => outcome(list_objects(&e.admin, resource, read.namespace.as_deref()).await),
        };
        live.record(&read, answer);
    }
    preview_restore(&plan, &live)
}

/// Runs restore `name` and checks it did, item by item, what `preview` said.
async fn restore_as_previewed(
    e: &ControllerEnv,
    name: &str,
    spec: Value,
    preview: &RestorePreview,
) -> Value {
    let mut object = json!({"apiVersion": "velero.io/v1", "kind": "Restore",
                            "metadata": {"name": name, "namespace": OADP_NAMESPACE}});
    object["spec"] = spec;
    create::<Restore>(&e.admin, object).await;
    let done = wait_done::<Restore>(&e.admin, name).await;
    assert_eq!(phase(&done), "Completed", "{done}");
    let did = logged_actions(&restore_log(e, name));
    assert_eq!(predicted_actions(preview), did, "restore {name}");
    assert_eq!(
        done.pointer("/status/warnings").and_then(Value::as_u64),
        Some(preview.counts.warnings),
        "{done}"
    );
    assert_eq!(
        done.pointer("/status/progress/totalItems")
            .and_then(Value::as_u64),
        Some(preview.counts.total)
    );
    done
}

fn entry<'a>(preview: &'a RestorePreview, kind: &str, name: &str) -> &'a PreviewEntry {
    preview
        .entries
        .iter()
        .find(|e| e.kind == kind && e.name == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

/// What an entry of a preview must say: its action, its reason, or both.
#[derive(Clone, Copy, Debug)]
enum Expected {
    Action(RestoreAction),
    Reason(RestoreReason),
    Both(RestoreAction, RestoreReason),
}
use Expected::{Action, Both, Reason};

fn expect_entries(preview: &RestorePreview, expected: &[(&str, &str, Expected)]) {
    for &(kind, name, want) in expected {
        let found = entry(preview, kind, name);
        let (action, reason) = (found.action, found.reason);
        match want {
            Action(a) => assert_eq!(action, a, "{kind} {name}"),
            Reason(r) => assert_eq!(reason, r, "{kind} {name}"),
            Both(a, r) => assert_eq!((action, reason), (a, r), "{kind} {name}"),
        }
    }
}

async fn restore_label(c: &Client, namespace: &str, name: &str) -> Option<String> {
    Api::<ConfigMap>::namespaced(c.clone(), namespace)
        .get(name)
        .await
        .unwrap()
        .metadata
        .labels
        .unwrap_or_default()
        .get("velero.io/restore-name")
        .cloned()
}

#[tokio::test]
async fn restore_preview_matches_what_the_restore_does() {
    let e = env().await;
    seed_shop(&e.admin).await;
    let items = backup(&e, "shop-nightly", json!({"includedNamespaces": ["shop"]})).await;

    // The namespace drifts: a config map deleted, one edited, the deployment deleted (its
    // replica set and pods go with it, by garbage collection).
    let configs: Api<ConfigMap> = Api::namespaced(e.admin.clone(), "shop");
    configs
        .delete("feature-flags", &DeleteParams::default())
        .await
        .unwrap();
    configs
        .patch(
            "web-config",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"greeting": "edited by hand"}})),
        )
        .await
        .unwrap();
    Api::<Deployment>::namespaced(e.admin.clone(), "shop")
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    let resources = served_resources(&e.admin).await.unwrap();
    let widgets = resources
        .iter()
        .find(|r| r.info.plural == "widgets")
        .unwrap();
    dynamic_api(&e.admin, &widgets.api, true, "shop")
        .delete("z-root", &DeleteParams::default())
        .await
        .unwrap();

    // No policy given ("none"): what is missing is created, what differs is left alone with
    // a warning, what is the same is skipped silently.
    let spec = json!({"backupName": "shop-nightly", "existingResourcePolicy": "none"});
    let none = preview(&e, &items, "shop-nightly", "shop-none", spec.clone()).await;
    expect_entries(
        &none,
        &[
            ("Namespace", "shop", Reason(RestoreReason::NamespaceExists)),
            ("ConfigMap", "feature-flags", Action(RestoreAction::Create)),
            ("Deployment", "web", Action(RestoreAction::Create)),
            ("Widget", "a-leaf", Action(RestoreAction::Create)),
            ("Pod", "web-7c9f-abcde", Action(RestoreAction::Create)),
            ("Pod", "migrate-1", Reason(RestoreReason::Completed)),
            (
                "ConfigMap",
                "web-config",
                Both(RestoreAction::Skip, RestoreReason::AlreadyExists),
            ),
            (
                "Secret",
                "web-credentials",
                Reason(RestoreReason::Identical),
            ),
        ],
    );
    assert!(entry(&none, "ConfigMap", "web-config").warning);
    // Velero's priorities: pods before their deployment (an alphabetical type); within the
    // widgets' rank, owners before dependents.
    let position = |kind: &str, name: &str| {
        none.entries
            .iter()
            .position(|e| e.kind == kind && e.name == name)
            .unwrap()
    };
    assert!(position("Pod", "web-7c9f-abcde") < position("Deployment", "web"));
    assert!(position("Widget", "z-root") < position("Widget", "m-mid"));
    assert!(position("Widget", "m-mid") < position("Widget", "a-leaf"));
    restore_as_previewed(&e, "shop-none", spec, &none).await;
    assert_eq!(
        configs.get("web-config").await.unwrap().data.unwrap()["greeting"],
        "edited by hand"
    );
    assert_eq!(
        restore_label(&e.admin, "shop", "feature-flags")
            .await
            .as_deref(),
        Some("shop-none")
    );

    // existingResourcePolicy update: the edited config map is patched back, everything that
    // exists gets this restore's labels, a deleted secret is created.
    Api::<Secret>::namespaced(e.admin.clone(), "shop")
        .delete("web-credentials", &DeleteParams::default())
        .await
        .unwrap();
    let spec = json!({"backupName": "shop-nightly", "existingResourcePolicy": "update"});
    let update = preview(&e, &items, "shop-nightly", "shop-update", spec.clone()).await;
    expect_entries(
        &update,
        &[
            (
                "ConfigMap",
                "web-config",
                Both(RestoreAction::Update, RestoreReason::PolicyUpdate),
            ),
            (
                "ConfigMap",
                "feature-flags",
                Reason(RestoreReason::RestoreLabels),
            ),
            ("Secret", "web-credentials", Action(RestoreAction::Create)),
        ],
    );
    assert_eq!(update.counts.warnings, 0);
    restore_as_previewed(&e, "shop-update", spec, &update).await;
    assert_eq!(
        configs.get("web-config").await.unwrap().data.unwrap()["greeting"],
        "hello shoppers"
    );
    for name in ["web-config", "feature-flags"] {
        assert_eq!(
            restore_label(&e.admin, "shop", name).await.as_deref(),
            Some("shop-update")
        );
    }

    // Into a new namespace: it is created, then everything restored there is created.
    let spec = json!({"backupName": "shop-nightly", "namespaceMapping": {"shop": "shop-copy"},
                      "excludedResources": ["pods"]});
    let copy = preview(&e, &items, "shop-nightly", "shop-copy", spec.clone()).await;
    // All created but the `default` service account, which the new namespace already has.
    expect_entries(
        &copy,
        &[
            (
                "Namespace",
                "shop-copy",
                Both(RestoreAction::Create, RestoreReason::Absent),
            ),
            (
                "ServiceAccount",
                "default",
                Reason(RestoreReason::Identical),
            ),
            (
                "Pod",
                "web-7c9f-abcde",
                Reason(RestoreReason::ResourceExcluded),
            ),
        ],
    );
    assert_eq!(copy.counts.namespaces_created, 1);
    assert_eq!(copy.counts.create + 1, copy.counts.total);
    restore_as_previewed(&e, "shop-copy", spec, &copy).await;
    let created = Api::<Namespace>::all(e.admin.clone())
        .get("shop-copy")
        .await
        .unwrap();
    assert_eq!(created.metadata.labels.unwrap()["tenant"], "shop");
    assert_eq!(
        restore_label(&e.admin, "shop-copy", "web-config")
            .await
            .as_deref(),
        Some("shop-copy")
    );
}
