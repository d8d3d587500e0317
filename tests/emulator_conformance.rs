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

#[tokio::test]
async fn label_and_field_selectors_and_pagination() {
    let c = cluster().await;
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
    let names = |l: kube::core::ObjectList<DynamicObject>| -> Vec<String> {
        l.items
            .into_iter()
            .map(|o| o.metadata.name.unwrap())
            .collect()
    };
    assert_eq!(
        names(
            api.list(&ListParams::default().labels("tier=gold"))
                .await
                .unwrap()
        ),
        ["a", "c"]
    );
    assert_eq!(
        names(
            api.list(&ListParams::default().labels("tier in (silver,bronze)"))
                .await
                .unwrap()
        ),
        ["b", "d"]
    );
    assert_eq!(
        names(
            api.list(&ListParams::default().labels("tier!=gold"))
                .await
                .unwrap()
        ),
        ["b", "d", "e"]
    );
    assert_eq!(
        names(
            api.list(&ListParams::default().labels("!tier"))
                .await
                .unwrap()
        ),
        ["e"]
    );
    assert_eq!(
        names(
            api.list(&ListParams::default().labels("tier,tier notin (gold)"))
                .await
                .unwrap()
        ),
        ["b", "d"]
    );
    assert_eq!(
        names(
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
    let err = api_status(
        api.list(&ListParams::default().labels("tier in ("))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 400);

    let mut all = Vec::new();
    let mut lp = ListParams::default().limit(2);
    let mut pages = 0;
    loop {
        let page = api.list(&lp).await.unwrap();
        pages += 1;
        let token = page.metadata.continue_.clone();
        all.extend(names(page));
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
    assert_eq!(review["status"]["authenticated"], false);

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
