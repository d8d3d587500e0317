//! Conformance of the Kubernetes API emulator, driven through kube-rs in-process: each test runs
//! one kube-apiserver behaviour that NAC's controllers, gateway or users depend on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams, PropagationPolicy, WatchEvent, WatchParams,
};
use nac::sim::apiserver::faults::{FaultPlan, FaultRule};
use nac::sim::apiserver::{ApiServer, EmulatorConfig};
use serde_json::{Value, json};

struct Cluster {
    server: ApiServer,
    admin: Client,
    alice: Client,
    bob: Client,
}

fn config() -> EmulatorConfig {
    EmulatorConfig {
        bookmark_interval: Duration::from_millis(200),
        ..EmulatorConfig::default()
    }
}

async fn cluster_with(config: EmulatorConfig) -> Cluster {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let server = ApiServer::new(config).unwrap();
    let admin = server.client(&server.admin_token());
    nac::sim::demo::install(&admin).await.unwrap();
    let alice = server.client(&server.add_user("alice", &[]));
    let bob = server.client(&server.add_user("bob", &["devs".to_string()]));
    Cluster {
        server,
        admin,
        alice,
        bob,
    }
}

async fn cluster() -> Cluster {
    cluster_with(config()).await
}

fn nab_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("oadp.openshift.io", "v1alpha1", "NonAdminBackup"),
        "nonadminbackups",
    )
}

fn nabs(client: &Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &nab_resource())
}

fn nab(name: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1",
        "kind": "NonAdminBackup",
        "metadata": {"name": name},
        "spec": {"backupSpec": {"includedNamespaces": ["team-a"], "ttl": "24h0m0s"}}
    }))
    .unwrap()
}

fn api_status(err: kube::Error) -> kube::core::Status {
    match err {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn rv(o: &DynamicObject) -> u64 {
    o.metadata
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn discovery_lists_crds_with_short_names() {
    let c = cluster().await;
    let discovery = kube::discovery::Discovery::new(c.admin.clone())
        .run()
        .await
        .unwrap();
    let group = discovery
        .groups()
        .find(|g| g.name() == "oadp.openshift.io")
        .expect("oadp group discovered");
    let kinds: Vec<String> = group
        .recommended_resources()
        .iter()
        .map(|(r, _)| r.kind.clone())
        .collect();
    for kind in [
        "NonAdminBackup",
        "NonAdminRestore",
        "NonAdminBackupStorageLocation",
        "NonAdminSchedule",
    ] {
        assert!(
            kinds.contains(&kind.to_string()),
            "{kind} missing from {kinds:?}"
        );
    }
    assert!(discovery.groups().any(|g| g.name() == "velero.io"));
    let version = c.admin.apiserver_version().await.unwrap();
    assert_eq!(version.major, "1");
    // Raw discovery carries the short names kubectl resolves `nab` with.
    let list: Value = c
        .admin
        .request(
            http::Request::get("/apis/oadp.openshift.io/v1alpha1")
                .body(vec![])
                .unwrap(),
        )
        .await
        .unwrap();
    let entry = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "nonadminbackups")
        .unwrap();
    assert_eq!(entry["shortNames"], json!(["nab"]));
    assert!(
        list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "nonadminbackups/status")
    );
}

#[tokio::test]
async fn tenant_crud_in_own_namespace_and_forbidden_elsewhere() {
    let c = cluster().await;
    let mine = nabs(&c.alice, "team-a");
    let created = mine
        .create(&PostParams::default(), &nab("b1"))
        .await
        .unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    assert!(created.metadata.uid.is_some());
    assert_eq!(
        mine.get("b1").await.unwrap().metadata.name.as_deref(),
        Some("b1")
    );
    assert_eq!(
        mine.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );

    let theirs = nabs(&c.alice, "team-b");
    let err = api_status(theirs.list(&ListParams::default()).await.unwrap_err());
    assert_eq!(err.code, 403);
    assert_eq!(err.reason, "Forbidden");
    assert_eq!(
        err.message,
        "nonadminbackups.oadp.openshift.io is forbidden: User \"alice\" cannot list resource \"nonadminbackups\" in API group \"oadp.openshift.io\" in the namespace \"team-b\""
    );
    let err = api_status(theirs.get("b1").await.unwrap_err());
    assert_eq!(err.code, 403, "a 403, not a 404: existence must not leak");
    assert!(err.message.starts_with(
        "nonadminbackups.oadp.openshift.io \"b1\" is forbidden: User \"alice\" cannot get resource"
    ));
    // bob has no bindings at all.
    let err = api_status(
        nabs(&c.bob, "team-a")
            .list(&ListParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 403);
    // Cluster-wide list needs cluster-wide permission.
    let all: Api<DynamicObject> = Api::all_with(c.alice.clone(), &nab_resource());
    assert!(all.list(&ListParams::default()).await.is_err());
    let all_admin: Api<DynamicObject> = Api::all_with(c.admin.clone(), &nab_resource());
    assert_eq!(
        all_admin
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );
}

#[tokio::test]
async fn errors_are_status_objects_with_kube_wording() {
    let c = cluster().await;
    let api = nabs(&c.admin, "team-a");
    let err = api_status(api.get("missing").await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (404, "NotFound"));
    assert_eq!(
        err.message,
        "nonadminbackups.oadp.openshift.io \"missing\" not found"
    );
    api.create(&PostParams::default(), &nab("dup"))
        .await
        .unwrap();
    let err = api_status(
        api.create(&PostParams::default(), &nab("dup"))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(
        err.message,
        "nonadminbackups.oadp.openshift.io \"dup\" already exists"
    );
    let cms: Api<ConfigMap> = Api::namespaced(c.admin.clone(), "no-such-ns");
    let err = api_status(
        cms.create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap(),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 404);
    assert_eq!(err.message, "namespaces \"no-such-ns\" not found");
    // Unauthenticated tokens get 401.
    let stranger = c.server.client("not-a-token");
    let err = api_status(
        nabs(&stranger, "team-a")
            .list(&ListParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (401, "Unauthorized"));
}

#[tokio::test]
async fn stale_update_conflicts_and_unconditional_cr_update_is_invalid() {
    let c = cluster().await;
    let api = nabs(&c.alice, "team-a");
    let first = api
        .create(&PostParams::default(), &nab("b1"))
        .await
        .unwrap();
    let mut newer = first.clone();
    newer.metadata.labels = Some([("x".to_string(), "1".to_string())].into());
    let updated = api
        .replace("b1", &PostParams::default(), &newer)
        .await
        .unwrap();
    assert!(rv(&updated) > rv(&first));
    let mut stale = first.clone();
    stale.metadata.labels = Some([("x".to_string(), "2".to_string())].into());
    let err = api_status(
        api.replace("b1", &PostParams::default(), &stale)
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        err.message,
        "Operation cannot be fulfilled on nonadminbackups.oadp.openshift.io \"b1\": the object has been modified; please apply your changes to the latest version and try again"
    );
    let mut no_rv = updated.clone();
    no_rv.metadata.resource_version = None;
    let err = api_status(
        api.replace("b1", &PostParams::default(), &no_rv)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    // A no-op update is not a write: same resourceVersion.
    let same = api
        .replace("b1", &PostParams::default(), &updated)
        .await
        .unwrap();
    assert_eq!(rv(&same), rv(&updated));
}

#[tokio::test]
async fn status_subresource_isolation_and_generation() {
    let c = cluster().await;
    let api = nabs(&c.admin, "team-a");
    let mut with_status = nab("b1");
    with_status.data["status"] = json!({"phase": "Created"});
    let created = api
        .create(&PostParams::default(), &with_status)
        .await
        .unwrap();
    assert!(
        created.data.get("status").is_none(),
        "status is dropped on create"
    );

    let patched = api
        .patch_status(
            "b1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Created"}, "spec": {"deleteBackup": true}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.data["status"]["phase"], "Created");
    assert!(
        patched.data["spec"].get("deleteBackup").is_none(),
        "status writes ignore spec"
    );
    assert_eq!(
        patched.metadata.generation,
        Some(1),
        "status writes do not bump generation"
    );

    let main = api
        .patch(
            "b1",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"phase": "Deleting"}, "metadata": {"labels": {"a": "b"}}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(
        main.data["status"]["phase"], "Created",
        "main writes ignore status"
    );
    assert_eq!(
        main.metadata.generation,
        Some(1),
        "metadata changes do not bump generation"
    );

    let spec = api
        .patch(
            "b1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"deleteBackup": true}})),
        )
        .await
        .unwrap();
    assert_eq!(spec.metadata.generation, Some(2));
    assert_eq!(spec.data["spec"]["deleteBackup"], true);

    // Tenants may read status but not write it (the edit role grants only get on /status).
    let err = api_status(
        nabs(&c.alice, "team-a")
            .patch_status(
                "b1",
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"phase": "New"}})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 403);
    assert!(
        err.message
            .contains("cannot patch resource \"nonadminbackups/status\""),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn structural_schema_prunes_defaults_and_validates() {
    let c = cluster().await;
    let api = nabs(&c.alice, "team-a");
    let mut extra = nab("pruned");
    extra.data["spec"]["notAField"] = json!(1);
    extra.data["spec"]["backupSpec"]["alsoNotAField"] = json!("x");
    let created = api.create(&PostParams::default(), &extra).await.unwrap();
    assert!(created.data["spec"].get("notAField").is_none());
    assert!(
        created.data["spec"]["backupSpec"]
            .get("alsoNotAField")
            .is_none()
    );

    let missing: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
        "metadata": {"name": "nospec"}, "spec": {}
    }))
    .unwrap();
    let err = api_status(
        api.create(&PostParams::default(), &missing)
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert!(
        err.message.contains("spec.backupSpec: Required value"),
        "{}",
        err.message
    );
    let causes = err.details.unwrap().causes;
    assert_eq!(causes[0].field, "spec.backupSpec");
    assert_eq!(causes[0].reason, "FieldValueRequired");

    let mut wrong_type = nab("wrongtype");
    wrong_type.data["spec"]["backupSpec"]["includedNamespaces"] = json!("team-a");
    let err = api_status(
        api.create(&PostParams::default(), &wrong_type)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    assert!(
        err.message.contains("spec.backupSpec.includedNamespaces"),
        "{}",
        err.message
    );

    // fieldValidation=Strict refuses unknown fields instead of dropping them.
    let mut strict = nab("strict");
    strict.data["spec"]["notAField"] = json!(1);
    let req = http::Request::post(
        "/apis/oadp.openshift.io/v1alpha1/namespaces/team-a/nonadminbackups?fieldValidation=Strict",
    )
    .header("content-type", "application/json")
    .body(serde_json::to_vec(&strict).unwrap())
    .unwrap();
    let err = api_status(c.alice.request::<Value>(req).await.unwrap_err());
    assert_eq!(err.code, 400);
    assert!(
        err.message
            == "NonAdminBackup in version \"v1alpha1\" cannot be handled as a NonAdminBackup: strict decoding error: unknown field \"spec.notAField\"",
        "{}",
        err.message
    );

    // Invalid names are refused with kube's message.
    let bad = nab("Bad_Name");
    let err = api_status(api.create(&PostParams::default(), &bad).await.unwrap_err());
    assert_eq!(err.code, 422);
    assert!(
        err.message
            .contains("metadata.name: Invalid value: \"Bad_Name\""),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn finalizers_hold_deletion_until_removed() {
    let c = cluster().await;
    let api = nabs(&c.alice, "team-a");
    let mut held = nab("held");
    held.metadata.finalizers = Some(vec!["nonadminbackup.oadp.openshift.io/finalizer".into()]);
    api.create(&PostParams::default(), &held).await.unwrap();
    let pending = api.delete("held", &DeleteParams::default()).await.unwrap();
    let obj = pending
        .left()
        .expect("object returned while finalizers remain");
    assert!(obj.metadata.deletion_timestamp.is_some());
    assert_eq!(
        obj.metadata.generation,
        Some(2),
        "deletionTimestamp bumps generation as kube does"
    );
    // New finalizers cannot be added once deleting.
    let err = api_status(
        api.patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["nonadminbackup.oadp.openshift.io/finalizer", "example.com/more"]}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    assert!(
        err.message
            .contains("no new finalizers can be added if the object is being deleted")
    );
    assert!(api.get("held").await.is_ok());
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert_eq!(api_status(api.get("held").await.unwrap_err()).code, 404);
}

#[tokio::test]
async fn kube_runtime_finalizer_helper_works() {
    use kube::runtime::finalizer::{Event, finalizer};
    let c = cluster().await;
    let api = nabs(&c.admin, "team-a");
    api.create(&PostParams::default(), &nab("f1"))
        .await
        .unwrap();
    let obj = std::sync::Arc::new(api.get("f1").await.unwrap());
    // First call adds the finalizer with a JSON patch whose first op tests a missing path for null.
    let result = finalizer(&api, "example.com/cleanup", obj, |event| async move {
        match event {
            Event::Apply(_) | Event::Cleanup(_) => {
                Ok::<_, std::convert::Infallible>(kube::runtime::controller::Action::await_change())
            }
        }
    })
    .await;
    assert!(result.is_ok(), "{result:?}");
    let with = api.get("f1").await.unwrap();
    assert_eq!(
        with.metadata.finalizers,
        Some(vec!["example.com/cleanup".to_string()])
    );
    api.delete("f1", &DeleteParams::default()).await.unwrap();
    let deleting = std::sync::Arc::new(api.get("f1").await.unwrap());
    finalizer(&api, "example.com/cleanup", deleting, |_| async {
        Ok::<_, std::convert::Infallible>(kube::runtime::controller::Action::await_change())
    })
    .await
    .unwrap();
    assert_eq!(api_status(api.get("f1").await.unwrap_err()).code, 404);
}

#[tokio::test]
async fn json_patch_and_merge_patch() {
    let c = cluster().await;
    let api = nabs(&c.alice, "team-a");
    api.create(&PostParams::default(), &nab("p")).await.unwrap();
    let patch: json_patch::Patch = serde_json::from_value(json!([
        {"op": "test", "path": "/metadata/labels", "value": null},
        {"op": "add", "path": "/metadata/labels", "value": {"tier": "gold"}},
        {"op": "replace", "path": "/spec/backupSpec/ttl", "value": "48h0m0s"}
    ]))
    .unwrap();
    let out = api
        .patch("p", &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
        .unwrap();
    assert_eq!(out.metadata.labels.unwrap()["tier"], "gold");
    assert_eq!(out.data["spec"]["backupSpec"]["ttl"], "48h0m0s");
    let failing: json_patch::Patch = serde_json::from_value(
        json!([{"op": "test", "path": "/spec/backupSpec/ttl", "value": "1h"}]),
    )
    .unwrap();
    let err = api_status(
        api.patch("p", &PatchParams::default(), &Patch::<()>::Json(failing))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    let merged = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"backupSpec": {"ttl": null}}})),
        )
        .await
        .unwrap();
    assert!(merged.data["spec"]["backupSpec"].get("ttl").is_none());
    // Server-side apply is refused rather than approximated.
    let err = api_status(
        api.patch("p", &PatchParams::apply("test"), &Patch::Apply(json!({"apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup", "metadata": {"name": "p"}})))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 415);
}

#[tokio::test]
async fn watch_events_follow_changes_and_selectors() {
    let c = cluster().await;
    let api = nabs(&c.alice, "team-a");
    let start = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = api
        .watch(
            &WatchParams::default().labels("tier=gold").timeout(10),
            &start,
        )
        .await
        .unwrap()
        .boxed();
    let mut labelled = nab("w1");
    labelled.metadata.labels = Some([("tier".to_string(), "gold".to_string())].into());
    api.create(&PostParams::default(), &labelled).await.unwrap();
    api.create(&PostParams::default(), &nab("w2"))
        .await
        .unwrap(); // not selected
    api.patch(
        "w2",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"tier": "gold"}}})),
    )
    .await
    .unwrap();
    api.patch(
        "w1",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"tier": "silver"}}})),
    )
    .await
    .unwrap();
    api.delete("w2", &DeleteParams::default()).await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 4 {
        let ev = tokio::time::timeout(Duration::from_secs(5), stream.try_next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        match ev {
            WatchEvent::Added(o) => seen.push(format!("ADDED {}", o.metadata.name.unwrap())),
            WatchEvent::Modified(o) => seen.push(format!("MODIFIED {}", o.metadata.name.unwrap())),
            WatchEvent::Deleted(o) => seen.push(format!("DELETED {}", o.metadata.name.unwrap())),
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => panic!("watch error {e:?}"),
        }
    }
    // Selector transitions: w2 enters the selection (ADDED), w1 leaves it (DELETED).
    assert_eq!(
        seen,
        vec!["ADDED w1", "ADDED w2", "DELETED w1", "DELETED w2"]
    );
}

#[tokio::test]
async fn watch_sends_bookmarks_and_initial_events_end() {
    let c = cluster().await;
    let api = nabs(&c.alice, "team-a");
    api.create(&PostParams::default(), &nab("b1"))
        .await
        .unwrap();
    let mut stream = api
        .watch(
            &WatchParams {
                bookmarks: true,
                ..WatchParams::default()
            }
            .timeout(10),
            "0",
        )
        .await
        .unwrap()
        .boxed();
    let first = stream.try_next().await.unwrap().unwrap();
    assert!(
        matches!(first, WatchEvent::Added(_)),
        "RV 0 starts with the current state"
    );
    let bookmark = tokio::time::timeout(Duration::from_secs(5), stream.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(matches!(bookmark, WatchEvent::Bookmark(_)), "{bookmark:?}");

    let streaming = WatchParams::streaming_lists().timeout(10);
    let mut stream = api.watch(&streaming, "").await.unwrap().boxed();
    assert!(matches!(
        stream.try_next().await.unwrap().unwrap(),
        WatchEvent::Added(_)
    ));
    match stream.try_next().await.unwrap().unwrap() {
        WatchEvent::Bookmark(b) => assert_eq!(
            b.metadata
                .annotations
                .get("k8s.io/initial-events-end")
                .map(String::as_str),
            Some("true")
        ),
        other => panic!("expected the initial-events-end bookmark, got {other:?}"),
    }
}

#[tokio::test]
async fn too_old_watch_gets_410_and_watcher_recovers() {
    let c = cluster_with(EmulatorConfig {
        history_capacity: 5,
        ..config()
    })
    .await;
    let api = nabs(&c.admin, "team-a");
    let old = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    for i in 0..10 {
        api.create(&PostParams::default(), &nab(&format!("n{i}")))
            .await
            .unwrap();
    }
    let mut stream = api
        .watch(&WatchParams::default().timeout(5), &old)
        .await
        .unwrap()
        .boxed();
    match stream.try_next().await.unwrap().unwrap() {
        WatchEvent::Error(e) => {
            assert_eq!(e.code, 410);
            assert_eq!(e.reason, "Expired");
        }
        other => panic!("expected 410, got {other:?}"),
    }
    // kube-runtime's watcher re-lists on 410 and converges.
    use kube::runtime::{WatchStreamExt, watcher};
    let mut objects = watcher(api.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();
    let mut names = std::collections::BTreeSet::new();
    while names.len() < 10 {
        let o = tokio::time::timeout(Duration::from_secs(5), objects.try_next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        names.insert(o.metadata.name.unwrap());
    }
    assert_eq!(names.len(), 10);
}

/// Five NABs in team-a, `a` to `e`, labelled `tier` gold, silver, gold, bronze and none.
async fn five_labelled_nabs(c: &Cluster) -> Api<DynamicObject> {
    let api = nabs(&c.admin, "team-a");
    for (name, tier) in [
        ("a", "gold"),
        ("b", "silver"),
        ("c", "gold"),
        ("d", "bronze"),
        ("e", ""),
    ] {
        let mut o = nab(name);
        if !tier.is_empty() {
            o.metadata.labels = Some([("tier".to_string(), tier.to_string())].into());
        }
        api.create(&PostParams::default(), &o).await.unwrap();
    }
    api
}

fn list_names(l: kube::core::ObjectList<DynamicObject>) -> Vec<String> {
    l.items
        .into_iter()
        .map(|o| o.metadata.name.unwrap())
        .collect()
}

#[tokio::test]
async fn label_selectors_select_by_equality_sets_and_existence() {
    let c = cluster().await;
    let api = five_labelled_nabs(&c).await;
    assert_eq!(
        list_names(
            api.list(&ListParams::default().labels("tier=gold"))
                .await
                .unwrap()
        ),
        ["a", "c"]
    );
    assert_eq!(
        list_names(
            api.list(&ListParams::default().labels("tier in (silver,bronze)"))
                .await
                .unwrap()
        ),
        ["b", "d"]
    );
    assert_eq!(
        list_names(
            api.list(&ListParams::default().labels("tier!=gold"))
                .await
                .unwrap()
        ),
        ["b", "d", "e"]
    );
    assert_eq!(
        list_names(
            api.list(&ListParams::default().labels("!tier"))
                .await
                .unwrap()
        ),
        ["e"]
    );
    assert_eq!(
        list_names(
            api.list(&ListParams::default().labels("tier,tier notin (gold)"))
                .await
                .unwrap()
        ),
        ["b", "d"]
    );
    let err = api_status(
        api.list(&ListParams::default().labels("tier in ("))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 400);
}

#[tokio::test]
async fn field_selectors_select_by_name_and_refuse_unsupported_fields() {
    let c = cluster().await;
    let api = five_labelled_nabs(&c).await;
    assert_eq!(
        list_names(
            api.list(&ListParams::default().fields("metadata.name=c"))
                .await
                .unwrap()
        ),
        ["c"]
    );
    let err = api_status(
        api.list(&ListParams::default().fields("spec.deleteBackup=true"))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 400);
}

#[tokio::test]
async fn pagination_continues_in_name_order() {
    let c = cluster().await;
    let api = five_labelled_nabs(&c).await;
    let mut all = Vec::new();
    let mut lp = ListParams::default().limit(2);
    let mut pages = 0;
    loop {
        let page = api.list(&lp).await.unwrap();
        pages += 1;
        let token = page.metadata.continue_.clone();
        all.extend(list_names(page));
        match token {
            Some(t) if !t.is_empty() => lp = lp.continue_token(&t),
            _ => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(all, ["a", "b", "c", "d", "e"]);
}

#[tokio::test]
async fn generate_name_and_dry_run() {
    let c = cluster().await;
    let api = nabs(&c.alice, "team-a");
    let mut o = nab("");
    o.metadata.name = None;
    o.metadata.generate_name = Some("nightly-".into());
    let created = api.create(&PostParams::default(), &o).await.unwrap();
    let name = created.metadata.name.unwrap();
    assert!(
        name.starts_with("nightly-") && name.len() == "nightly-".len() + 5,
        "{name}"
    );
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    api.create(&dry, &nab("dry")).await.unwrap();
    assert_eq!(api_status(api.get("dry").await.unwrap_err()).code, 404);
}

#[tokio::test]
async fn namespace_deletion_cascades_and_refuses_new_content() {
    let c = cluster().await;
    let namespaces: Api<Namespace> = Api::all(c.admin.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "doomed"}})).unwrap();
    let created = namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    assert_eq!(created.status.unwrap().phase.as_deref(), Some("Active"));
    let api = nabs(&c.admin, "doomed");
    let mut held = nab("held");
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&PostParams::default(), &held).await.unwrap();
    api.create(&PostParams::default(), &nab("free"))
        .await
        .unwrap();
    namespaces
        .delete("doomed", &DeleteParams::default())
        .await
        .unwrap();
    let terminating = namespaces.get("doomed").await.unwrap();
    assert_eq!(
        terminating.status.unwrap().phase.as_deref(),
        Some("Terminating")
    );
    assert_eq!(api_status(api.get("free").await.unwrap_err()).code, 404);
    assert!(
        api.get("held")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    );
    let err = api_status(
        api.create(&PostParams::default(), &nab("late"))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 403);
    assert!(err.message.contains(
        "unable to create new content in namespace doomed because it is being terminated"
    ));
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert_eq!(
        api_status(namespaces.get("doomed").await.unwrap_err()).code,
        404
    );
}

#[tokio::test]
async fn owner_references_garbage_collection() {
    let c = cluster().await;
    let cms: Api<ConfigMap> = Api::namespaced(c.admin.clone(), "team-a");
    let mk = |name: &str, owner: Option<&ConfigMap>| -> ConfigMap {
        let mut v = json!({"metadata": {"name": name}});
        if let Some(o) = owner {
            v["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "ConfigMap",
                "name": o.metadata.name, "uid": o.metadata.uid}]);
        }
        serde_json::from_value(v).unwrap()
    };
    // Background: dependents go after the owner.
    let owner = cms
        .create(&PostParams::default(), &mk("owner", None))
        .await
        .unwrap();
    cms.create(&PostParams::default(), &mk("child", Some(&owner)))
        .await
        .unwrap();
    cms.delete("owner", &DeleteParams::default()).await.unwrap();
    assert_eq!(api_status(cms.get("child").await.unwrap_err()).code, 404);
    // Orphan: dependents stay, without the reference.
    let owner = cms
        .create(&PostParams::default(), &mk("owner2", None))
        .await
        .unwrap();
    cms.create(&PostParams::default(), &mk("child2", Some(&owner)))
        .await
        .unwrap();
    cms.delete("owner2", &DeleteParams::orphan()).await.unwrap();
    let orphan = cms.get("child2").await.unwrap();
    assert!(orphan.metadata.owner_references.is_none());
    // Foreground: the owner waits (finalizer foregroundDeletion) until its dependents are gone.
    let owner = cms
        .create(&PostParams::default(), &mk("owner3", None))
        .await
        .unwrap();
    let mut child = mk("child3", Some(&owner));
    child.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cms.create(&PostParams::default(), &child).await.unwrap();
    let dp = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Foreground),
        ..DeleteParams::default()
    };
    cms.delete("owner3", &dp).await.unwrap();
    let waiting = cms.get("owner3").await.unwrap();
    assert_eq!(
        waiting.metadata.finalizers,
        Some(vec!["foregroundDeletion".to_string()])
    );
    assert!(
        cms.get("child3")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    );
    cms.patch(
        "child3",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert_eq!(api_status(cms.get("owner3").await.unwrap_err()).code, 404);
}

#[tokio::test]
async fn delete_preconditions() {
    let c = cluster().await;
    let api = nabs(&c.admin, "team-a");
    let created = api.create(&PostParams::default(), &nab("p")).await.unwrap();
    let dp = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: Some("wrong".into()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    let err = api_status(api.delete("p", &dp).await.unwrap_err());
    assert_eq!(err.code, 409);
    let dp = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: created.metadata.uid.clone(),
            resource_version: created.metadata.resource_version.clone(),
        }),
        ..DeleteParams::default()
    };
    assert!(api.delete("p", &dp).await.unwrap().is_left());
}

#[tokio::test]
async fn access_reviews_use_real_rbac() {
    let c = cluster().await;
    let ssar = |ns: &str, verb: &str| {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
               "spec": {"resourceAttributes": {"namespace": ns, "verb": verb, "group": "oadp.openshift.io", "resource": "nonadminbackups"}}})
    };
    let ask = |client: Client, body: Value, path: &'static str| async move {
        let req = http::Request::post(path)
            .header("content-type", "application/json")
            .body(serde_json::to_vec(&body).unwrap())
            .unwrap();
        client.request::<Value>(req).await.unwrap()
    };
    let ssar_path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    let yes = ask(c.alice.clone(), ssar("team-a", "create"), ssar_path).await;
    assert_eq!(yes["status"]["allowed"], true);
    let no = ask(c.alice.clone(), ssar("team-b", "create"), ssar_path).await;
    assert_eq!(no["status"]["allowed"], false);

    // SubjectAccessReview is for those allowed to create it (admin), about anyone.
    let sar = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": "alice", "groups": ["system:authenticated"],
                 "resourceAttributes": {"namespace": "team-a", "verb": "delete", "group": "oadp.openshift.io", "resource": "nonadminbackups"}}});
    let sar_path = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    let answer = ask(c.admin.clone(), sar.clone(), sar_path).await;
    assert_eq!(answer["status"]["allowed"], true);
    assert!(
        answer["status"]["reason"]
            .as_str()
            .unwrap()
            .contains("RoleBinding")
    );
    let req = http::Request::post(sar_path)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&sar).unwrap())
        .unwrap();
    let err = api_status(c.alice.request::<Value>(req).await.unwrap_err());
    assert_eq!(err.code, 403);

    // TokenReview tells who a token belongs to.
    let alice_token = c.server.add_user("carol", &["qa".to_string()]);
    let tr = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": alice_token}});
    let review = ask(
        c.admin.clone(),
        tr,
        "/apis/authentication.k8s.io/v1/tokenreviews",
    )
    .await;
    assert_eq!(review["status"]["authenticated"], true);
    assert_eq!(review["status"]["user"]["username"], "carol");
    let groups = review["status"]["user"]["groups"].as_array().unwrap();
    assert!(groups.contains(&json!("qa")) && groups.contains(&json!("system:authenticated")));
    let bad = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": "nope"}});
    let review = ask(
        c.admin.clone(),
        bad,
        "/apis/authentication.k8s.io/v1/tokenreviews",
    )
    .await;
    // kube-apiserver omits `authenticated: false` (omitempty).
    assert!(review["status"].get("authenticated").is_none(), "{review}");
    assert_eq!(review["status"]["error"], "invalid bearer token");

    // SelfSubjectRulesReview lists what alice may do in team-a.
    let rr = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": "team-a"}});
    let rules = ask(
        c.alice.clone(),
        rr,
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
    )
    .await;
    let text = rules["status"]["resourceRules"].to_string();
    assert!(text.contains("nonadminbackups"), "{text}");
}

#[tokio::test]
async fn revoked_role_binding_takes_effect_immediately() {
    let c = cluster().await;
    let api = nabs(&c.alice, "team-a");
    api.list(&ListParams::default()).await.unwrap();
    let bindings: Api<RoleBinding> = Api::namespaced(c.admin.clone(), "team-a");
    bindings
        .delete("alice-admin", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(
        api_status(api.list(&ListParams::default()).await.unwrap_err()).code,
        403
    );
}

#[tokio::test]
async fn service_account_tokens_authenticate_and_die_with_the_account() {
    let c = cluster().await;
    let sas: Api<ServiceAccount> = Api::namespaced(c.admin.clone(), "team-a");
    sas.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "ci"}})).unwrap(),
    )
    .await
    .unwrap();
    let tr: k8s_openapi::api::authentication::v1::TokenRequest =
        serde_json::from_value(json!({"spec": {"audiences": [], "expirationSeconds": 3600}}))
            .unwrap();
    let issued = sas
        .create_token_request("ci", &PostParams::default(), &tr)
        .await
        .unwrap();
    let token = issued.status.unwrap().token;
    let ci = c.server.client(&token);
    assert_eq!(
        api_status(
            nabs(&ci, "team-a")
                .list(&ListParams::default())
                .await
                .unwrap_err()
        )
        .code,
        403
    );
    let bindings: Api<RoleBinding> = Api::namespaced(c.admin.clone(), "team-a");
    bindings
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "ci-edit"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
                "subjects": [{"kind": "ServiceAccount", "name": "ci", "namespace": "team-a"}]
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    nabs(&ci, "team-a")
        .create(&PostParams::default(), &nab("from-ci"))
        .await
        .unwrap();
    assert_eq!(
        api_status(
            nabs(&ci, "team-b")
                .list(&ListParams::default())
                .await
                .unwrap_err()
        )
        .code,
        403
    );
    sas.delete("ci", &DeleteParams::default()).await.unwrap();
    assert_eq!(
        api_status(
            nabs(&ci, "team-a")
                .list(&ListParams::default())
                .await
                .unwrap_err()
        )
        .code,
        401
    );
}

#[tokio::test]
async fn cluster_role_aggregation_fills_admin() {
    let c = cluster().await;
    let roles: Api<ClusterRole> = Api::all(c.admin.clone());
    let admin = roles.get("admin").await.unwrap();
    let text = serde_json::to_string(&admin.rules).unwrap();
    assert!(
        text.contains("nonadminbackups"),
        "demo's edit role is aggregated into admin: {text}"
    );
}

#[tokio::test]
async fn secrets_fold_string_data() {
    let c = cluster().await;
    let secrets: Api<Secret> = Api::namespaced(c.alice.clone(), "team-a");
    let s: Secret = serde_json::from_value(
        json!({"metadata": {"name": "creds"}, "stringData": {"key": "value"}}),
    )
    .unwrap();
    let created = secrets.create(&PostParams::default(), &s).await.unwrap();
    assert!(created.string_data.is_none());
    assert_eq!(created.data.unwrap()["key"].0, b"value".to_vec());
    assert_eq!(created.type_.as_deref(), Some("Opaque"));
}

#[tokio::test]
async fn crd_deletion_removes_objects_and_the_resource() {
    let c = cluster().await;
    nabs(&c.admin, "team-a")
        .create(&PostParams::default(), &nab("x"))
        .await
        .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(c.admin.clone());
    crds.delete(
        "nonadminbackups.oadp.openshift.io",
        &DeleteParams::default(),
    )
    .await
    .unwrap();
    assert_eq!(
        api_status(
            crds.get("nonadminbackups.oadp.openshift.io")
                .await
                .unwrap_err()
        )
        .code,
        404
    );
    let err = api_status(
        nabs(&c.admin, "team-a")
            .list(&ListParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 404);
}

#[tokio::test]
async fn fault_injection_and_audit() {
    let c = cluster().await;
    c.server.set_faults(FaultPlan {
        rules: vec![FaultRule {
            verb: Some("create".into()),
            resource: Some("oadp.openshift.io/nonadminbackups".into()),
            error_rate: 1.0,
            error_code: Some(503),
            ..FaultRule::default()
        }],
    });
    let err = api_status(
        nabs(&c.alice, "team-a")
            .create(&PostParams::default(), &nab("x"))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 503);
    c.server.set_faults(FaultPlan::default());
    nabs(&c.alice, "team-a")
        .create(&PostParams::default(), &nab("x"))
        .await
        .unwrap();
    // Dropped watches end; the client sees the stream close.
    let mut stream = nabs(&c.alice, "team-a")
        .watch(&WatchParams::default().timeout(30), "0")
        .await
        .unwrap()
        .boxed();
    assert!(matches!(
        stream.try_next().await.unwrap(),
        Some(WatchEvent::Added(_))
    ));
    c.server.drop_watches();
    let end = tokio::time::timeout(Duration::from_secs(5), stream.try_next())
        .await
        .unwrap();
    assert!(matches!(end, Ok(None) | Err(_)), "{end:?}");
    let audit = c.server.audit_entries();
    assert!(
        audit
            .iter()
            .any(|e| e.user == "alice" && e.verb == "create" && e.code == 503)
    );
    assert!(
        audit
            .iter()
            .any(|e| e.user == "alice" && e.verb == "create" && e.code == 201)
    );
}

#[tokio::test]
async fn state_persists_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = EmulatorConfig {
        data_dir: Some(dir.path().to_path_buf()),
        ..config()
    };
    let (rv_before, token) = {
        let c = cluster_with(cfg.clone()).await;
        let created = nabs(&c.admin, "team-a")
            .create(&PostParams::default(), &nab("kept"))
            .await
            .unwrap();
        let token = c.server.add_user("dave", &[]);
        c.server.save().unwrap();
        (rv(&created), token)
    };
    let server = ApiServer::new(cfg).unwrap();
    let admin = server.client(&server.admin_token());
    let kept = nabs(&admin, "team-a").get("kept").await.unwrap();
    assert_eq!(rv(&kept), rv_before);
    let next = nabs(&admin, "team-a")
        .create(&PostParams::default(), &nab("after"))
        .await
        .unwrap();
    assert!(
        rv(&next) > rv_before,
        "resourceVersions keep increasing after a restart"
    );
    // Tokens survive too, and the CRD-backed resource is served again.
    let dave = server.client(&token);
    let err = api_status(
        nabs(&dave, "team-a")
            .list(&ListParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(
        err.code, 403,
        "dave is known (403, not 401) but has no rights"
    );
}

// ---------------------------------------------------------------------------------------------
// Fidelity to the real kube-apiserver (v1.36.2): the expected bodies below are what the real
// server answered to the same requests (`../shared/k8s/control-plane.sh`), with long names
// abbreviated as {A64} / {A254}.
// ---------------------------------------------------------------------------------------------

/// One raw request through an in-process client: (HTTP status, JSON body or `null`). No
/// User-Agent is sent unless `user_agent` is given.
async fn raw(
    client: &Client,
    method: &str,
    path: &str,
    content_type: &str,
    user_agent: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type);
    if let Some(agent) = user_agent {
        request = request.header("user-agent", agent);
    }
    let request = request
        .body(kube::client::Body::from(
            body.map(|b| serde_json::to_vec(&b).unwrap())
                .unwrap_or_default(),
        ))
        .unwrap();
    let response = client.send(request).await.unwrap();
    let status = response.status().as_u16();
    use http_body_util::BodyExt;
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

fn expand(template: &str) -> Value {
    serde_json::from_str(
        &template
            .replace("{A254}", &"a".repeat(254))
            .replace("{A64}", &"a".repeat(64)),
    )
    .unwrap()
}

#[tokio::test]
async fn generate_name_is_cut_to_58_characters_before_the_suffix() {
    let c = cluster().await;
    let prefix = "g".repeat(70);
    let (code, created) = raw(
        &c.admin,
        "POST",
        "/api/v1/namespaces/team-a/configmaps",
        "application/json",
        None,
        Some(json!({"metadata": {"generateName": prefix}})),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    // The real server answered name `gggg…g` (58) + `t9pl7`: 63 characters in all, and kept the
    // whole generateName.
    let name = created["metadata"]["name"].as_str().unwrap();
    assert_eq!(name.len(), 63, "{name}");
    assert!(name.starts_with(&"g".repeat(58)), "{name}");
    assert_eq!(created["metadata"]["generateName"], json!(prefix));
    // Short prefixes are kept whole.
    let (_, short) = raw(
        &c.admin,
        "POST",
        "/api/v1/namespaces/team-a/configmaps",
        "application/json",
        None,
        Some(json!({"metadata": {"generateName": "nightly-"}})),
    )
    .await;
    assert_eq!(short["metadata"]["name"].as_str().unwrap().len(), 13);
}

#[tokio::test]
async fn name_and_label_validation_is_worded_as_kube_apiserver_words_it() {
    let c = cluster().await;
    let a64 = "a".repeat(64);
    let cms = "/api/v1/namespaces/team-a/configmaps";
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            cms,
            json!({"metadata": {"name": "cm1", "labels": {"k": a64}}}),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ConfigMap \"cm1\" is invalid: metadata.labels: Invalid value: \"{A64}\": must be no more than 63 bytes","reason":"Invalid","details":{"name":"cm1","kind":"ConfigMap","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: \"{A64}\": must be no more than 63 bytes","field":"metadata.labels"}]},"code":422}"#,
        ),
        (
            cms,
            json!({"metadata": {"name": "cm2", "labels": {"k": "bad value!"}}}),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ConfigMap \"cm2\" is invalid: metadata.labels: Invalid value: \"bad value!\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')","reason":"Invalid","details":{"name":"cm2","kind":"ConfigMap","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: \"bad value!\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')","field":"metadata.labels"}]},"code":422}"#,
        ),
        (
            cms,
            json!({"metadata": {"name": "cm3", "labels": {"bad key!": "v"}}}),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ConfigMap \"cm3\" is invalid: metadata.labels: Invalid value: \"bad key!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')","reason":"Invalid","details":{"name":"cm3","kind":"ConfigMap","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: \"bad key!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')","field":"metadata.labels"}]},"code":422}"#,
        ),
        (
            cms,
            json!({"metadata": {"name": "Upper"}}),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ConfigMap \"Upper\" is invalid: metadata.name: Invalid value: \"Upper\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')","reason":"Invalid","details":{"name":"Upper","kind":"ConfigMap","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: \"Upper\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')","field":"metadata.name"}]},"code":422}"#,
        ),
        (
            cms,
            json!({"metadata": {"name": "a".repeat(254)}}),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ConfigMap \"{A254}\" is invalid: metadata.name: Invalid value: \"{A254}\": must be no more than 253 characters","reason":"Invalid","details":{"name":"{A254}","kind":"ConfigMap","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: \"{A254}\": must be no more than 253 characters","field":"metadata.name"}]},"code":422}"#,
        ),
        (
            "/api/v1/namespaces",
            json!({"metadata": {"name": a64}}),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Namespace \"{A64}\" is invalid: [metadata.name: Invalid value: \"{A64}\": must be no more than 63 characters, metadata.labels: Invalid value: \"{A64}\": must be no more than 63 bytes]","reason":"Invalid","details":{"name":"{A64}","kind":"Namespace","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: \"{A64}\": must be no more than 63 characters","field":"metadata.name"},{"reason":"FieldValueInvalid","message":"Invalid value: \"{A64}\": must be no more than 63 bytes","field":"metadata.labels"}]},"code":422}"#,
        ),
        (
            "/api/v1/namespaces/team-a/services",
            json!({"metadata": {"name": a64}, "spec": {"ports": [{"port": 80}]}}),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Service \"{A64}\" is invalid: metadata.name: Invalid value: \"{A64}\": must be no more than 63 characters","reason":"Invalid","details":{"name":"{A64}","kind":"Service","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: \"{A64}\": must be no more than 63 characters","field":"metadata.name"}]},"code":422}"#,
        ),
        (
            cms,
            json!({"metadata": {"name": "x", "finalizers": ["foo"]}}),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ConfigMap \"x\" is invalid: metadata.finalizers[0]: Invalid value: \"foo\": name is neither a standard finalizer name nor is it fully qualified","reason":"Invalid","details":{"name":"x","kind":"ConfigMap","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: \"foo\": name is neither a standard finalizer name nor is it fully qualified","field":"metadata.finalizers[0]"}]},"code":422}"#,
        ),
    ];
    for (path, body, expected) in cases {
        let (code, answer) = raw(
            &c.admin,
            "POST",
            path,
            "application/json",
            None,
            Some(body.clone()),
        )
        .await;
        assert_eq!(code, 422, "{body}: {answer}");
        pretty_assertions::assert_eq!(answer, expand(expected), "{body}");
    }
    // kubectl prints the top-level message; kube-rs keeps it too.
    let cm_api: Api<ConfigMap> = Api::namespaced(c.admin.clone(), "team-a");
    let err = api_status(
        cm_api
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": "x", "labels": {"k": "-"}}}))
                    .unwrap(),
            )
            .await
            .unwrap_err(),
    );
    assert!(
        err.message.starts_with(
            "ConfigMap \"x\" is invalid: metadata.labels: Invalid value: \"-\": a valid label must"
        ),
        "{}",
        err.message
    );
}

/// A client with no User-Agent and no field manager of its own (like a bare kube-rs client or
/// curl), unlike `ApiServer::client`, which identifies itself as NAC's CLI.
fn bare_client(server: &ApiServer, token: &str) -> Client {
    let value = http::HeaderValue::from_str(&format!("Bearer {token}")).unwrap();
    let service = tower::ServiceBuilder::new()
        .map_request(move |mut req: http::Request<kube::client::Body>| {
            req.headers_mut()
                .insert(http::header::AUTHORIZATION, value.clone());
            req
        })
        .service(server.router());
    Client::new(service, "default")
}

/// managedFields with the time replaced, sorted by manager (kube sorts by time first; the
/// requests of one test may straddle a second).
fn managers(object: &Value) -> Vec<Value> {
    let mut entries: Vec<Value> = object["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for e in &mut entries {
        let time = e["time"].as_str().unwrap();
        assert!(
            chrono::DateTime::parse_from_rfc3339(time).is_ok() && time.ends_with('Z'),
            "{time}"
        );
        e["time"] = json!("T");
    }
    entries.sort_by_key(|e| e["manager"].as_str().unwrap_or_default().to_string());
    entries
}

#[tokio::test]
async fn managed_fields_record_each_manager_like_kube_apiserver() {
    let c = cluster().await;
    // Requests carry exactly the User-Agent and fieldManager given here.
    let admin = bare_client(&c.server, &c.server.admin_token());
    let cm = "/api/v1/namespaces/team-a/configmaps";
    let kubectl = Some("kubectl/v1.36.2 (linux/amd64) kubernetes/8e16b12");
    let merge = "application/merge-patch+json";
    // The flow run on the real server with kubectl: `kubectl create configmap mf2
    // --from-literal=a=1`, `kubectl label cm mf2 x=y`, `kubectl patch cm mf2 --type=merge -p
    // '{"data":{"b":"2","a":"9"}}' --field-manager=my-mgr`, `kubectl annotate cm mf2 note=hi`,
    // `kubectl patch cm mf2 --type=json -p '[{"op":"remove","path":"/data/b"}]'`.
    let (code, _) = raw(
        &admin,
        "POST",
        &format!("{cm}?fieldManager=kubectl-create"),
        "application/json",
        kubectl,
        Some(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "mf2"}, "data": {"a": "1"}})),
    )
    .await;
    assert_eq!(code, 201);
    // No fieldManager: the manager is the User-Agent up to its first '/'.
    raw(
        &admin,
        "PATCH",
        &format!("{cm}/mf2"),
        merge,
        Some("kubectl-label/v1.36.2 (linux/amd64) kubernetes/8e16b12"),
        Some(json!({"metadata": {"labels": {"x": "y"}}})),
    )
    .await;
    raw(
        &admin,
        "PATCH",
        &format!("{cm}/mf2?fieldManager=my-mgr"),
        merge,
        kubectl,
        Some(json!({"data": {"b": "2", "a": "9"}})),
    )
    .await;
    raw(
        &admin,
        "PATCH",
        &format!("{cm}/mf2?fieldManager=kubectl-annotate"),
        merge,
        kubectl,
        Some(json!({"metadata": {"annotations": {"note": "hi"}}})),
    )
    .await;
    let (code, object) = raw(
        &admin,
        "PATCH",
        &format!("{cm}/mf2?fieldManager=kubectl-patch"),
        "application/json-patch+json",
        kubectl,
        Some(json!([{"op": "remove", "path": "/data/b"}])),
    )
    .await;
    assert_eq!(code, 200, "{object}");
    // What `kubectl get cm mf2 -o yaml --show-managed-fields` showed on the real server.
    let real = json!([
        {"apiVersion": "v1", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:metadata": {"f:annotations": {".": {}, "f:note": {}}}},
         "manager": "kubectl-annotate", "operation": "Update", "time": "T"},
        {"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}},
         "manager": "kubectl-create", "operation": "Update", "time": "T"},
        {"apiVersion": "v1", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:x": {}}}},
         "manager": "kubectl-label", "operation": "Update", "time": "T"},
        {"apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}},
         "manager": "my-mgr", "operation": "Update", "time": "T"},
    ]);
    pretty_assertions::assert_eq!(Value::Array(managers(&object)), real);
    // GET shows the same entries (and a kube-rs typed read keeps them).
    let got: ConfigMap = Api::namespaced(c.admin.clone(), "team-a")
        .get("mf2")
        .await
        .unwrap();
    assert_eq!(got.metadata.managed_fields.unwrap().len(), 4);

    // Neither fieldManager nor User-Agent: `unknown` (what the real server recorded for NAC's
    // writes). A Namespace's server-set spec/status are nobody's; its name label is the creator's.
    let (_, ns) = raw(
        &admin,
        "POST",
        "/api/v1/namespaces",
        "application/json",
        None,
        Some(json!({"metadata": {"name": "mfns"}})),
    )
    .await;
    assert_eq!(
        managers(&ns),
        vec![
            json!({"manager": "unknown", "operation": "Update", "apiVersion": "v1", "time": "T",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/metadata.name": {}}}}})
        ]
    );

    // An invalid fieldManager is refused as the real server refuses it.
    let (code, status) = raw(
        &admin,
        "PATCH",
        &format!("{cm}/mf2?fieldManager={}", "m".repeat(129)),
        merge,
        None,
        Some(json!({"data": {"c": "4"}})),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        status,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes",
            "reason": "Invalid", "details": {"group": "meta.k8s.io", "kind": "PatchOptions",
            "causes": [{"reason": "FieldValueTooLong", "message": "Too long: may not be more than 128 bytes", "field": "fieldManager"}]},
            "code": 422})
    );

    // A status write gets its own entry, marked with the subresource.
    let nab_api = nabs(&c.admin, "team-a");
    nab_api
        .create(&PostParams::default(), &nab("mf-nab"))
        .await
        .unwrap();
    let (code, object) = raw(
        &admin,
        "PATCH",
        "/apis/oadp.openshift.io/v1alpha1/namespaces/team-a/nonadminbackups/mf-nab/status?fieldManager=nac-controller",
        merge,
        None,
        Some(json!({"status": {"phase": "New"}})),
    )
    .await;
    assert_eq!(code, 200, "{object}");
    let status_entry = managers(&object)
        .into_iter()
        .find(|e| e["manager"] == "nac-controller")
        .unwrap();
    assert_eq!(status_entry["subresource"], "status");
    assert_eq!(status_entry["operation"], "Update");
    assert_eq!(status_entry["apiVersion"], "oadp.openshift.io/v1alpha1");
    assert_eq!(
        status_entry["fieldsV1"],
        json!({"f:status": {".": {}, "f:phase": {}}})
    );

    // `managedFields: [{}]` clears the list, and the real server then records no further
    // Update on that object; so does an explicit empty list.
    for (name, clear) in [("mf2", json!([{}])), ("mfns", json!([]))] {
        let path = if name == "mfns" {
            "/api/v1/namespaces/mfns".to_string()
        } else {
            format!("{cm}/{name}")
        };
        let (_, cleared) = raw(
            &admin,
            "PATCH",
            &path,
            merge,
            kubectl,
            Some(json!({"metadata": {"managedFields": clear}})),
        )
        .await;
        assert!(
            cleared["metadata"].get("managedFields").is_none(),
            "{cleared}"
        );
        let (_, next) = raw(
            &admin,
            "PATCH",
            &format!("{path}?fieldManager=later"),
            merge,
            kubectl,
            Some(json!({"metadata": {"labels": {"later": "1"}}})),
        )
        .await;
        assert_eq!(next["metadata"]["labels"]["later"], "1");
        assert!(next["metadata"].get("managedFields").is_none(), "{next}");
    }
}

/// `kubectl` to drive, when one is available ($KUBEBUILDER_ASSETS/kubectl, else PATH).
fn kubectl_binary() -> Option<std::path::PathBuf> {
    let from_assets =
        std::env::var_os("KUBEBUILDER_ASSETS").map(|d| std::path::PathBuf::from(d).join("kubectl"));
    from_assets.filter(|p| p.is_file()).or_else(|| {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|d| d.join("kubectl"))
            .find(|p| p.is_file())
    })
}

#[tokio::test]
async fn review_kinds_are_in_the_openapi_v2_document_kubectl_validates_with() {
    let c = cluster().await;
    // kubectl only trusts server-side validation for kinds whose v3 document shows a PATCH
    // operation; the review kinds have none (only POST), on the real server too…
    let (_, v3) = raw(
        &c.admin,
        "GET",
        "/openapi/v3/apis/authorization.k8s.io/v1",
        "application/json",
        None,
        None,
    )
    .await;
    let paths = v3["paths"].as_object().unwrap();
    assert!(paths.values().all(|p| p.get("patch").is_none()));
    // …so it validates them against /openapi/v2, which must define them.
    let (code, v2) = raw(
        &c.admin,
        "GET",
        "/openapi/v2",
        "application/json",
        None,
        None,
    )
    .await;
    assert_eq!(code, 200);
    for (definition, kind) in [
        ("io.k8s.api.authentication.v1.TokenReview", "TokenReview"),
        (
            "io.k8s.api.authentication.v1.SelfSubjectReview",
            "SelfSubjectReview",
        ),
        (
            "io.k8s.api.authorization.v1.SubjectAccessReview",
            "SubjectAccessReview",
        ),
        (
            "io.k8s.api.authorization.v1.SelfSubjectAccessReview",
            "SelfSubjectAccessReview",
        ),
        (
            "io.k8s.api.authorization.v1.LocalSubjectAccessReview",
            "LocalSubjectAccessReview",
        ),
        (
            "io.k8s.api.authorization.v1.SelfSubjectRulesReview",
            "SelfSubjectRulesReview",
        ),
    ] {
        assert_eq!(
            v2["definitions"][definition]["x-kubernetes-group-version-kind"][0]["kind"],
            kind
        );
    }
    assert!(v2["paths"]["/apis/authorization.k8s.io/v1/subjectaccessreviews"]["post"].is_object());
    // client-go asks for the protobuf encoding.
    let request = http::Request::get("/openapi/v2")
        .header(
            "accept",
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
        )
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    let response = c.admin.send(request).await.unwrap();
    assert_eq!(
        response.headers()["content-type"],
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    );

    // With a kubectl at hand: `kubectl create -f` of the review kinds, as on the real server.
    let Some(kubectl) = kubectl_binary() else {
        eprintln!("SKIPPED (kubectl part): no kubectl in $KUBEBUILDER_ASSETS or on PATH");
        return;
    };
    // Over TLS: kubectl sends no bearer token over plain HTTP.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let tls = nac::sim::apiserver::tls::Pki::generate(&[]).unwrap();
    tokio::spawn(nac::sim::apiserver::tls::serve_tls(
        listener,
        c.server.router(),
        tls.server_config().unwrap(),
    ));
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.crt");
    std::fs::write(&ca, &tls.ca_cert_pem).unwrap();
    let manifests = [
        (
            "sar.yaml",
            "apiVersion: authorization.k8s.io/v1\nkind: SubjectAccessReview\nspec:\n  user: alice\n  resourceAttributes:\n    namespace: default\n    verb: get\n    resource: configmaps\n",
        ),
        (
            "tr.yaml",
            "apiVersion: authentication.k8s.io/v1\nkind: TokenReview\nspec:\n  token: not-a-real-token\n",
        ),
        (
            "bad.yaml",
            "apiVersion: authorization.k8s.io/v1\nkind: SubjectAccessReview\nspec:\n  user: alice\n  bogus: 1\n  resourceAttributes:\n    verb: get\n    resource: pods\n",
        ),
    ];
    for (file, text) in manifests {
        std::fs::write(dir.path().join(file), text).unwrap();
    }
    let token = c.server.admin_token();
    let run = |file: &'static str| {
        let kubectl = kubectl.clone();
        let path = dir.path().join(file);
        let ca = ca.clone();
        let server = format!("https://{address}");
        let token = token.clone();
        tokio::task::spawn_blocking(move || {
            std::process::Command::new(kubectl)
                .args([
                    "--server",
                    &server,
                    "--token",
                    &token,
                    "--request-timeout=20s",
                ])
                .arg(format!("--certificate-authority={}", ca.display()))
                .args(["create", "-o", "json", "-f"])
                .arg(path)
                .output()
                .unwrap()
        })
    };
    // The real server's answers (`kubectl create -f … -o json`).
    let sar = run("sar.yaml").await.unwrap();
    assert!(
        sar.status.success(),
        "{}",
        String::from_utf8_lossy(&sar.stderr)
    );
    assert_eq!(
        serde_json::from_slice::<Value>(&sar.stdout).unwrap(),
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "metadata": {}, "spec": {"resourceAttributes": {"namespace": "default",
            "resource": "configmaps", "verb": "get"}, "user": "alice"},
            "status": {"allowed": false}})
    );
    let tr = run("tr.yaml").await.unwrap();
    assert!(
        tr.status.success(),
        "{}",
        String::from_utf8_lossy(&tr.stderr)
    );
    assert_eq!(
        serde_json::from_slice::<Value>(&tr.stdout).unwrap(),
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "metadata": {}, "spec": {"token": "not-a-real-token"},
            "status": {"error": "invalid bearer token", "user": {}}})
    );
    // kubectl's own validation against the v2 definitions, worded as with the real server.
    let bad = run("bad.yaml").await.unwrap();
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains(
            "ValidationError(SubjectAccessReview.spec): unknown field \"bogus\" in io.k8s.api.authorization.v1.SubjectAccessReviewSpec"
        ),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}
