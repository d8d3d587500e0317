//! The emulator's OpenShift `project.openshift.io/v1` projects: off by default (and then absent
//! from discovery), and when on a per-user view of namespaces as OpenShift answers it — a list
//! holds exactly the namespaces the caller may view, `get` of another is 403 in kube's words.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use axum::body::Body;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use nac::sim::apiserver::{ApiServer, EmulatorConfig};
use serde_json::{Value, json};
use tower::ServiceExt;

struct Cluster {
    server: ApiServer,
    admin: String,
    alice: String,
    bob: String,
    mallory: String,
}

async fn cluster(openshift_projects: bool) -> Cluster {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let server = ApiServer::new(EmulatorConfig {
        openshift_projects,
        ..EmulatorConfig::default()
    })
    .unwrap();
    let admin = server.admin_token();
    nac::sim::demo::install(&server.client(&admin))
        .await
        .unwrap();
    let alice = server.add_user("alice", &[]);
    let bob = server.add_user("bob", &["devs".to_string()]);
    let mallory = server.add_user("mallory", &[]);
    Cluster {
        server,
        admin,
        alice,
        bob,
        mallory,
    }
}

/// GET `path` with `token` (none: anonymous) → (status, JSON body).
async fn get(c: &Cluster, path: &str, token: Option<&str>) -> (StatusCode, Value) {
    let mut request = Request::get(path);
    if let Some(token) = token {
        request = request.header("Authorization", format!("Bearer {token}"));
    }
    let response = c
        .server
        .router()
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

fn projects_api(client: kube::Client) -> Api<DynamicObject> {
    Api::all_with(
        client,
        &ApiResource {
            group: "project.openshift.io".into(),
            version: "v1".into(),
            api_version: "project.openshift.io/v1".into(),
            kind: "Project".into(),
            plural: "projects".into(),
        },
    )
}

fn group_names(apis: &Value) -> Vec<String> {
    apis["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn projects_are_off_by_default_and_absent_from_discovery() {
    let c = cluster(false).await;
    let (status, apis) = get(&c, "/apis", Some(&c.alice)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!group_names(&apis).contains(&"project.openshift.io".to_string()));
    let (status, _) = get(&c, "/apis/project.openshift.io/v1", Some(&c.alice)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = get(&c, "/apis/project.openshift.io/v1/projects", Some(&c.admin)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let client = c.server.client(&c.alice);
    assert!(
        client
            .list_api_group_resources("project.openshift.io/v1")
            .await
            .is_err()
    );
}

#[tokio::test]
async fn discovery_lists_projects_when_on() {
    let c = cluster(true).await;
    let (_, apis) = get(&c, "/apis", Some(&c.alice)).await;
    assert!(group_names(&apis).contains(&"project.openshift.io".to_string()));
    let (status, group) = get(&c, "/apis/project.openshift.io", Some(&c.alice)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        group["preferredVersion"]["groupVersion"],
        "project.openshift.io/v1"
    );
    let client = c.server.client(&c.alice);
    let list = client
        .list_api_group_resources("project.openshift.io/v1")
        .await
        .unwrap();
    let projects = list
        .resources
        .iter()
        .find(|r| r.name == "projects")
        .unwrap();
    assert_eq!(projects.kind, "Project");
    assert!(!projects.namespaced);
    assert_eq!(projects.verbs, ["get", "list"]);
}

#[tokio::test]
async fn each_user_lists_exactly_the_namespaces_they_may_view() {
    let c = cluster(true).await;
    let list = |token: &str| {
        let api = projects_api(c.server.client(token));
        async move {
            let list = api.list(&ListParams::default()).await.unwrap();
            list.items
                .into_iter()
                .map(|p| p.metadata.name.unwrap())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(list(&c.alice).await, ["team-a"]);
    assert_eq!(list(&c.bob).await, ["team-b"]);
    assert!(list(&c.mallory).await.is_empty());
    let all = list(&c.admin).await;
    for ns in [
        "default",
        "kube-system",
        "openshift-adp",
        "team-a",
        "team-b",
    ] {
        assert!(all.contains(&ns.to_string()), "{ns} missing from {all:?}");
    }

    // The raw ProjectList: a Project per namespace, with the namespace's metadata and phase.
    let (status, raw) = get(&c, "/apis/project.openshift.io/v1/projects", Some(&c.alice)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(raw["kind"], "ProjectList");
    assert_eq!(raw["apiVersion"], "project.openshift.io/v1");
    let project = &raw["items"][0];
    let ns: Namespace = Api::all(c.server.client(&c.admin))
        .get("team-a")
        .await
        .unwrap();
    assert_eq!(project["kind"], "Project");
    assert_eq!(project["metadata"]["uid"], json!(ns.metadata.uid));
    assert_eq!(
        project["metadata"]["labels"]["kubernetes.io/metadata.name"],
        "team-a"
    );
    assert_eq!(
        project["metadata"]["creationTimestamp"],
        serde_json::to_value(&ns.metadata.creation_timestamp).unwrap()
    );
    assert_eq!(project["status"]["phase"], "Active");

    // Selectors apply to the view.
    let (_, selected) = get(
        &c,
        "/apis/project.openshift.io/v1/projects?labelSelector=kubernetes.io%2Fmetadata.name%3Dteam-b",
        Some(&c.admin),
    )
    .await;
    assert_eq!(names(&selected), ["team-b"]);

    // Live RBAC: a view binding in team-b adds it to alice's list (namespaces she may get).
    let bindings: Api<RoleBinding> = Api::namespaced(c.server.client(&c.admin), "team-b");
    bindings
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "alice-view", "namespace": "team-b"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(list(&c.alice).await, ["team-a", "team-b"]);
    assert_eq!(list(&c.bob).await, ["team-b"]);
}

#[tokio::test]
async fn get_of_a_project_one_cannot_view_is_forbidden() {
    let c = cluster(true).await;
    let (status, own) = get(
        &c,
        "/apis/project.openshift.io/v1/projects/team-a",
        Some(&c.alice),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(own["metadata"]["name"], "team-a");
    assert_eq!(own["kind"], "Project");

    for name in ["team-b", "no-such-namespace"] {
        let (status, body) = get(
            &c,
            &format!("/apis/project.openshift.io/v1/projects/{name}"),
            Some(&c.alice),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert_eq!(body["reason"], "Forbidden");
        assert_eq!(
            body["message"],
            format!(
                r#"projects.project.openshift.io "{name}" is forbidden: User "alice" cannot get resource "projects" in API group "project.openshift.io" at the cluster scope"#
            )
        );
        assert_eq!(body["details"]["group"], "project.openshift.io");
    }
    // Only someone who may view it learns that it does not exist.
    let (status, body) = get(
        &c,
        "/apis/project.openshift.io/v1/projects/no-such-namespace",
        Some(&c.admin),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        body["message"],
        r#"projects.project.openshift.io "no-such-namespace" not found"#
    );

    // Any authenticated user may list (mallory gets an empty list); anonymous may not.
    let (status, empty) = get(
        &c,
        "/apis/project.openshift.io/v1/projects",
        Some(&c.mallory),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(names(&empty).is_empty());
    let (status, body) = get(&c, "/apis/project.openshift.io/v1/projects", None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        body["message"],
        r#"projects.project.openshift.io is forbidden: User "system:anonymous" cannot list resource "projects" in API group "project.openshift.io" at the cluster scope"#
    );

    // Read-only: no watch, no writes.
    let (status, _) = get(
        &c,
        "/apis/project.openshift.io/v1/projects?watch=true",
        Some(&c.admin),
    )
    .await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    let created = projects_api(c.server.client(&c.admin))
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "project.openshift.io/v1", "kind": "Project",
                "metadata": {"name": "new-project"}
            }))
            .unwrap(),
        )
        .await;
    assert!(
        matches!(&created, Err(kube::Error::Api(e)) if e.code == 405),
        "{created:?}"
    );
}
