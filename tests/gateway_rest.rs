//! The gateway's REST API and live streams against the in-process emulator, the Velero
//! simulator and NAC's controllers (all as their own service accounts; the gateway as
//! `openshift-adp/nac-gateway` with its read-only RBAC from `deploy/base/rbac/`): the isolation
//! matrix (alice, bob, ci-bot, a user with no bindings, a bad token, no token — over REST,
//! SSE, logs and queue views), revocation within the allow TTL, wait, idempotency, paging,
//! policy refusals, and malformed input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/gateway.rs"]
mod gateway_support;
mod support;
use gateway_support::{ALLOW_TTL, Answer, GatewayEnv, backup_names, without_request_id};
use support::cluster::{TestCluster, eventually, eventually_seen};

use std::time::Duration;

use axum::body::Body;
use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use nac::api::nonadmin::NonAdminBackup;
use nac::api::oadp;
use nac::gateway::GatewayConfig;
use nac::gateway::ratelimit::PreAuthLimitConfig;
use nac::sim::apiserver::{ApiServer, EmulatorConfig};
use nac::sim::demo::{self, GATEWAY_SERVICE_ACCOUNT, OADP_NAMESPACE};
use serde_json::{Value, json};
use tower::ServiceExt;

/// Each case's gateway: the shared harness, with Velero and the controllers, short access
/// caches and a fresh SQLite history.
type Env = GatewayEnv;

async fn env() -> Env {
    env_with(false).await
}

/// The environment on `cluster` (either server), as [`env`] builds it on the emulator.
async fn env_on(cluster: TestCluster) -> Env {
    env_on_configured(cluster, false, |_| {}).await
}

/// The OADP operator's DataProtectionApplication CRD (the dev copy of `deploy/dev/oadp-crds/`).
const DPA_CRD: &str =
    include_str!("../deploy/dev/oadp-crds/oadp.openshift.io_dataprotectionapplications.yaml");

/// The environment, with OADP's DataProtectionApplication CRD installed before NAC starts when
/// `dpa_crd`.
async fn env_with(dpa_crd: bool) -> Env {
    env_full(dpa_crd, false).await
}

/// The environment, with the DPA CRD when `dpa_crd` and the emulator serving OpenShift's
/// `project.openshift.io` projects when `openshift_projects`.
async fn env_full(dpa_crd: bool, openshift_projects: bool) -> Env {
    env_configured(dpa_crd, openshift_projects, |_| {}).await
}

/// [`env_full`], with `configure` applied last to the gateway's configuration.
async fn env_configured(
    dpa_crd: bool,
    openshift_projects: bool,
    configure: impl FnOnce(&mut GatewayConfig),
) -> Env {
    let cluster = TestCluster::emulator_with(EmulatorConfig {
        openshift_projects,
        ..EmulatorConfig::default()
    })
    .await;
    env_on_configured(cluster, dpa_crd, configure).await
}

/// The environment on `cluster`, with the DPA CRD when `dpa_crd` and `configure` applied last
/// to the gateway's configuration.
async fn env_on_configured(
    cluster: TestCluster,
    dpa_crd: bool,
    configure: impl FnOnce(&mut GatewayConfig),
) -> Env {
    if dpa_crd {
        demo::apply_manifests(&cluster.admin(), "DataProtectionApplication CRD", DPA_CRD)
            .await
            .unwrap();
    }
    GatewayEnv::on(cluster)
        .velero(|_| {})
        .config(gateway_support::config_short_ttls())
        .configure(configure)
        .start()
        .await
}

/// Another gateway replica over the same cluster and the same history store as `env`'s (its
/// own caches, limits and in-process state): what a second pod behind the same Service is.
async fn replica(env: &Env) -> Env {
    env.replica(gateway_support::config()).await
}

async fn raw(env: &Env, request: Request<Body>) -> Answer {
    gateway_support::send(&env.router, request).await
}

async fn call(
    env: &Env,
    method: Method,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> Answer {
    call_with(env, method, path, token, body, &[]).await
}

async fn call_with(
    env: &Env,
    method: Method,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
    extra: &[(&str, &str)],
) -> Answer {
    gateway_support::call(&env.router, method, path, token.into(), body, extra).await
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

async fn create_completed_backup(env: &Env, token: &str, namespace: &str, name: &str) -> Value {
    let answer = call(
        env,
        Method::POST,
        &format!("/api/v1/namespaces/{namespace}/backups?wait=true&timeout=60s"),
        Some(token),
        Some(json!({"name": name, "spec": {"backupSpec": {}}})),
    )
    .await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());
    let object = answer.json();
    assert_eq!(
        object
            .pointer("/status/veleroBackup/status/phase")
            .and_then(Value::as_str),
        Some("Completed"),
        "{object}"
    );
    object
}

/// Reads SSE frames from a streaming body until `until` matches the text so far or `limit`.
async fn read_stream(body: Body, limit: Duration, until: impl Fn(&str) -> bool) -> String {
    let mut body = body;
    let mut text = String::new();
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
        if remaining.is_zero() {
            return text;
        }
        match tokio::time::timeout(remaining, body.frame()).await {
            Ok(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    text.push_str(&String::from_utf8_lossy(data));
                    if until(&text) {
                        return text;
                    }
                }
            }
            _ => return text,
        }
    }
}

async fn open_stream(
    env: &Env,
    path: &str,
    token: &str,
    last_event_id: Option<&str>,
) -> (StatusCode, Body) {
    let mut builder = Request::builder()
        .uri(path)
        .header("authorization", format!("Bearer {token}"));
    if let Some(id) = last_event_id {
        builder = builder.header("last-event-id", id);
    }
    let response = env
        .router
        .clone()
        .oneshot(builder.body(Body::empty()).unwrap())
        .await
        .unwrap();
    (response.status(), response.into_body())
}

async fn isolation_matrix_over_rest_sse_logs_and_queue(cluster: TestCluster) {
    let env = env_on(cluster).await;
    let bob_secret = "bob-secret-backup";
    let alice_secret = "alice-private-backup";
    create_completed_backup(&env, &env.bob, "team-b", bob_secret).await;
    create_completed_backup(&env, &env.alice, "team-a", alice_secret).await;

    // Alice's live streams, opened before more changes happen.
    let (status, alice_all) = open_stream(&env, "/api/v1/events", &env.alice, None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, alice_ns) =
        open_stream(&env, "/api/v1/namespaces/team-a/events", &env.alice, None).await;
    assert_eq!(status, StatusCode::OK);

    let mut bodies_seen_by_others_of_bob: Vec<(String, String)> = Vec::new();
    let mut record = |who: &str, what: &str, answer: &Answer| {
        bodies_seen_by_others_of_bob
            .push((format!("{who} {what} -> {}", answer.status), answer.text()));
    };

    // --- alice: full rights in team-a, nothing in team-b.
    let list = call(
        &env,
        Method::GET,
        "/api/v1/namespaces/team-a/backups",
        Some(&env.alice),
        None,
    )
    .await;
    assert_eq!(list.status, StatusCode::OK);
    assert_eq!(names(&list.json()), [alice_secret]);
    record("alice", "list team-a", &list);
    let namespaces = call(
        &env,
        Method::GET,
        "/api/v1/namespaces",
        Some(&env.alice),
        None,
    )
    .await;
    let ns: Vec<String> = namespaces.json()["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ns, ["team-a"]);
    assert_eq!(
        namespaces.json()["items"][0]["permissions"]["backups"],
        json!(["get", "list", "watch", "create", "patch", "delete"])
    );
    record("alice", "namespaces", &namespaces);
    let existing = call(
        &env,
        Method::GET,
        &format!("/api/v1/namespaces/team-b/backups/{bob_secret}"),
        Some(&env.alice),
        None,
    )
    .await;
    let missing = call(
        &env,
        Method::GET,
        "/api/v1/namespaces/team-b/backups/no-such-backup",
        Some(&env.alice),
        None,
    )
    .await;
    assert_eq!(existing.status, StatusCode::FORBIDDEN);
    assert_eq!(missing.status, StatusCode::FORBIDDEN);
    assert!(existing.is_problem());
    assert_eq!(
        without_request_id(existing.json()),
        without_request_id(missing.json()),
        "403 must not reveal existence"
    );
    // The 403 never echoes the object name (the caller typed it, but it must not confirm it).
    assert!(!existing.text().contains(bob_secret));
    for (method, path, body) in [
        (
            Method::GET,
            "/api/v1/namespaces/team-b/backups".to_string(),
            None,
        ),
        (
            Method::GET,
            format!("/api/v1/namespaces/team-b/backups/{bob_secret}/describe"),
            None,
        ),
        (
            Method::GET,
            format!("/api/v1/namespaces/team-b/backups/{bob_secret}/logs"),
            None,
        ),
        (
            Method::GET,
            format!("/api/v1/namespaces/team-b/backups/{bob_secret}?wait=true&timeout=1s"),
            None,
        ),
        (
            Method::DELETE,
            format!("/api/v1/namespaces/team-b/backups/{bob_secret}"),
            None,
        ),
        (
            Method::POST,
            "/api/v1/namespaces/team-b/backups".to_string(),
            Some(json!({"name": "x"})),
        ),
        (
            Method::POST,
            "/api/v1/namespaces/team-b/restores".to_string(),
            Some(json!({"name": "r", "backupName": bob_secret})),
        ),
        (
            Method::GET,
            "/api/v1/namespaces/team-b/restores".to_string(),
            None,
        ),
        (
            Method::GET,
            "/api/v1/namespaces/team-b/storage-locations".to_string(),
            None,
        ),
        (
            Method::GET,
            "/api/v1/namespaces/team-b/schedules".to_string(),
            None,
        ),
        (
            Method::GET,
            "/api/v1/namespaces/team-b/queue".to_string(),
            None,
        ),
        (
            Method::GET,
            "/api/v1/namespaces/team-b/policy".to_string(),
            None,
        ),
        (
            Method::GET,
            "/api/v1/namespaces/team-b/events".to_string(),
            None,
        ),
        (
            Method::GET,
            "/api/v1/events?namespaces=team-b".to_string(),
            None,
        ),
    ] {
        let answer = call(&env, method.clone(), &path, Some(&env.alice), body).await;
        assert_eq!(
            answer.status,
            StatusCode::FORBIDDEN,
            "alice {method} {path}: {}",
            answer.text()
        );
        assert!(answer.is_problem());
        record("alice", &path, &answer);
    }
    // Restoring bob's backup into team-a by name: refused without saying it exists.
    let cross = call(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-a/restores",
        Some(&env.alice),
        Some(json!({"name": "steal", "backupName": bob_secret})),
    )
    .await;
    assert_eq!(
        cross.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        cross.text()
    );
    assert!(cross.text().contains("not found in namespace"));
    let queue = call(&env, Method::GET, "/api/v1/queue", Some(&env.alice), None).await;
    assert_eq!(queue.status, StatusCode::OK);
    assert!(!queue.text().contains("team-b"));
    record("alice", "cluster queue", &queue);
    let own_queue = call(
        &env,
        Method::GET,
        "/api/v1/namespaces/team-a/queue",
        Some(&env.alice),
        None,
    )
    .await;
    assert_eq!(own_queue.status, StatusCode::OK);
    record("alice", "team-a queue", &own_queue);
    let describe = call(
        &env,
        Method::GET,
        &format!("/api/v1/namespaces/team-a/backups/{alice_secret}/describe?details=true"),
        Some(&env.alice),
        None,
    )
    .await;
    assert_eq!(describe.status, StatusCode::OK, "{}", describe.text());
    let description = describe.json();
    assert_eq!(description["veleroPhase"], "Completed");
    assert!(description["resourceList"].is_object(), "{description}");
    record("alice", "describe", &describe);
    let logs = call(
        &env,
        Method::GET,
        &format!("/api/v1/namespaces/team-a/backups/{alice_secret}/logs"),
        Some(&env.alice),
        None,
    )
    .await;
    assert_eq!(logs.status, StatusCode::OK, "{}", logs.text());
    assert!(!logs.text().is_empty());
    assert!(
        !logs.text().contains(env.download_base()),
        "a storage URL leaked"
    );
    record("alice", "logs", &logs);
    let results = call(
        &env,
        Method::GET,
        &format!("/api/v1/namespaces/team-a/backups/{alice_secret}/logs?artifact=results"),
        Some(&env.alice),
        None,
    )
    .await;
    assert_eq!(results.status, StatusCode::OK, "{}", results.text());
    assert!(serde_json::from_slice::<Value>(&results.body).is_ok());

    // --- ci-bot: create/get/list backups in team-a only.
    let created = call(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-a/backups",
        Some(&env.ci_bot),
        Some(json!("ci-run-1")),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    assert_eq!(
        created.headers["location"],
        "/api/v1/namespaces/team-a/backups/ci-run-1"
    );
    let ci_list = call(
        &env,
        Method::GET,
        "/api/v1/namespaces/team-a/backups",
        Some(&env.ci_bot),
        None,
    )
    .await;
    assert_eq!(ci_list.status, StatusCode::OK);
    record("ci-bot", "list team-a", &ci_list);
    for (method, path, body) in [
        (
            Method::DELETE,
            "/api/v1/namespaces/team-a/backups/ci-run-1",
            None,
        ),
        (
            Method::POST,
            "/api/v1/namespaces/team-a/restores",
            Some(json!({"name": "r", "backupName": "ci-run-1"})),
        ),
        (Method::GET, "/api/v1/namespaces/team-a/restores", None),
        (Method::GET, "/api/v1/namespaces/team-b/backups", None),
        (
            Method::GET,
            "/api/v1/namespaces/team-b/backups/bob-secret-backup",
            None,
        ),
    ] {
        let answer = call(&env, method.clone(), path, Some(&env.ci_bot), body).await;
        assert_eq!(
            answer.status,
            StatusCode::FORBIDDEN,
            "ci-bot {method} {path}: {}",
            answer.text()
        );
        record("ci-bot", path, &answer);
    }
    let ci_namespaces = call(
        &env,
        Method::GET,
        "/api/v1/namespaces",
        Some(&env.ci_bot),
        None,
    )
    .await;
    assert_eq!(
        ci_namespaces.json()["items"][0]["permissions"]["backups"],
        json!(["get", "list", "watch", "create"])
    );
    assert!(
        ci_namespaces.json()["items"][0]["permissions"]
            .get("restores")
            .is_none()
    );

    // --- a user with no bindings, a bad token, no token.
    let nobody_ns = call(
        &env,
        Method::GET,
        "/api/v1/namespaces",
        Some(&env.nobody),
        None,
    )
    .await;
    assert_eq!(nobody_ns.status, StatusCode::OK);
    assert_eq!(nobody_ns.json()["items"], json!([]));
    for path in [
        "/api/v1/namespaces/team-a/backups",
        "/api/v1/namespaces/team-b/backups",
        "/api/v1/namespaces/team-b/queue",
    ] {
        let answer = call(&env, Method::GET, path, Some(&env.nobody), None).await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{path}");
        record("nobody", path, &answer);
    }
    let nobody_queue = call(&env, Method::GET, "/api/v1/queue", Some(&env.nobody), None).await;
    assert_eq!(nobody_queue.json()["mine"], json!([]));
    record("nobody", "queue", &nobody_queue);
    for token in [Some("not-a-real-token"), None] {
        for path in [
            "/api/v1/namespaces",
            "/api/v1/namespaces/team-b/backups",
            "/api/v1/queue",
            "/api/v1/events",
        ] {
            let answer = call(&env, Method::GET, path, token, None).await;
            assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{path}");
            assert_eq!(answer.headers["www-authenticate"], "Bearer realm=\"nac\"");
            assert!(answer.is_problem());
            assert!(
                !answer.text().contains("not-a-real-token"),
                "the token was echoed"
            );
            record("anonymous", path, &answer);
        }
    }

    // --- bob sees his own, never alice's.
    let bob_list = call(
        &env,
        Method::GET,
        "/api/v1/namespaces/team-b/backups",
        Some(&env.bob),
        None,
    )
    .await;
    assert_eq!(names(&bob_list.json()), [bob_secret]);
    let bob_queue = call(&env, Method::GET, "/api/v1/queue", Some(&env.bob), None).await;
    for answer in [&bob_list, &bob_queue] {
        assert!(!answer.text().contains(alice_secret) && !answer.text().contains("ci-run-1"));
    }

    // --- live streams: changes in team-b never reach alice.
    create_completed_backup(&env, &env.bob, "team-b", "bob-second").await;
    let created = call(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-a/backups",
        Some(&env.alice),
        Some(json!("alice-second")),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let all_text = read_stream(alice_all, Duration::from_secs(20), |t| {
        t.contains("alice-second")
    })
    .await;
    let ns_text = read_stream(alice_ns, Duration::from_secs(20), |t| {
        t.contains("alice-second")
    })
    .await;
    for text in [&all_text, &ns_text] {
        assert!(text.contains("event: ready"), "{text}");
        assert!(text.contains("alice-second"), "{text}");
        assert!(
            !text.contains("bob-"),
            "alice's stream carried bob's objects: {text}"
        );
        assert!(!text.contains("team-b"), "{text}");
    }

    // Nothing anyone but bob received names bob's objects.
    for (what, body) in &bodies_seen_by_others_of_bob {
        assert!(
            !body.contains(bob_secret) && !body.contains("bob-second"),
            "{what} leaked: {body}"
        );
    }
}

async fn sse_resumes_with_last_event_id(cluster: TestCluster) {
    let env = env_on(cluster).await;
    let (_, body) = open_stream(&env, "/api/v1/namespaces/team-a/events", &env.alice, None).await;
    let created = call(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-a/backups",
        Some(&env.alice),
        Some(json!("first")),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let text = read_stream(body, Duration::from_secs(10), |t| t.contains("\"first\"")).await;
    // The id of the first change event that names "first".
    let id = text
        .split("\n\n")
        .find(|frame| frame.contains("\"first\"") && frame.contains("event: ADDED"))
        .and_then(|frame| frame.lines().find_map(|l| l.strip_prefix("id: ")))
        .expect("an ADDED event with an id")
        .to_string();
    // While disconnected, another backup appears; resuming from `id` delivers it.
    let created = call(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-a/backups",
        Some(&env.alice),
        Some(json!("second")),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let (_, resumed) = open_stream(
        &env,
        "/api/v1/namespaces/team-a/events",
        &env.alice,
        Some(&id),
    )
    .await;
    let text = read_stream(resumed, Duration::from_secs(10), |t| {
        t.contains("\"second\"")
    })
    .await;
    assert!(text.contains("\"second\""), "{text}");
    assert!(!text.contains("event: reset"), "{text}");
    // An id from another process (or too old) asks the client to re-list.
    let (_, stale) = open_stream(
        &env,
        "/api/v1/namespaces/team-a/events",
        &env.alice,
        Some("00000000-1"),
    )
    .await;
    let text = read_stream(stale, Duration::from_secs(5), |t| {
        t.contains("event: reset")
    })
    .await;
    assert!(text.contains("event: reset"), "{text}");
}

async fn a_removed_role_binding_stops_access_within_the_allow_ttl(cluster: TestCluster) {
    let env = env_on(cluster).await;
    let carol = env.cluster.user_token("carol");
    let bindings: Api<k8s_openapi::api::rbac::v1::RoleBinding> =
        Api::namespaced(env.admin.clone(), "team-a");
    let binding: k8s_openapi::api::rbac::v1::RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "carol-view", "namespace": "team-a"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "carol"}]
    }))
    .unwrap();
    bindings
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    let allowed = call(
        &env,
        Method::GET,
        "/api/v1/namespaces/team-a/backups",
        Some(&carol),
        None,
    )
    .await;
    assert_eq!(allowed.status, StatusCode::OK, "{}", allowed.text());
    let (status, stream) =
        open_stream(&env, "/api/v1/namespaces/team-a/events", &carol, None).await;
    assert_eq!(status, StatusCode::OK);
    bindings
        .delete("carol-view", &DeleteParams::default())
        .await
        .unwrap();
    gateway_support::until_forbidden(|| async {
        call(
            &env,
            Method::GET,
            "/api/v1/namespaces/team-a/backups",
            Some(&carol),
            None,
        )
        .await
        .status
    })
    .await;
    // The open stream ends with a `forbidden` event too (re-checked every few seconds).
    let text = read_stream(stream, ALLOW_TTL + Duration::from_secs(8), |t| {
        t.contains("event: forbidden")
    })
    .await;
    assert!(text.contains("event: forbidden"), "{text}");
}

/// The `id:` of the first SSE frame of type `event` in `text` (that contains `needle`).
fn sse_id(text: &str, event: &str, needle: &str) -> String {
    text.split("\n\n")
        .find(|frame| frame.contains(&format!("event: {event}")) && frame.contains(needle))
        .and_then(|frame| frame.lines().find_map(|l| l.strip_prefix("id: ")))
        .unwrap_or_else(|| panic!("no {event} event with {needle} and an id in {text}"))
        .to_string()
}

/// Whether `id` reads as a position in one cluster-wide log (`<epoch>-<sequence>`).
fn is_a_counter(id: &str) -> bool {
    id.split_once('-').is_some_and(|(epoch, sequence)| {
        epoch.len() == 8
            && epoch.chars().all(|c| c.is_ascii_hexdigit())
            && !sequence.is_empty()
            && sequence.chars().all(|c| c.is_ascii_digit())
    })
}

/// bob follows team-b while alice works in team-a: his event ids are opaque (no cluster-wide
/// counter he could subtract), the same size whatever happened elsewhere, and still resume.
async fn sse_event_ids_are_opaque_and_per_stream(cluster: TestCluster) {
    let env = env_on(cluster).await;
    let path = "/api/v1/namespaces/team-b/events";
    let (status, first) = open_stream(&env, path, &env.bob, None).await;
    assert_eq!(status, StatusCode::OK);
    let text = read_stream(first, Duration::from_secs(10), |t| {
        t.contains("event: ready")
    })
    .await;
    let ready_before = sse_id(&text, "ready", "");
    // alice's activity in team-a: several changes bob must not be able to count.
    for n in 0..3 {
        let created = call(
            &env,
            Method::POST,
            "/api/v1/namespaces/team-a/backups",
            Some(&env.alice),
            Some(json!(format!("alice-{n}"))),
        )
        .await;
        assert_eq!(created.status, StatusCode::CREATED);
    }
    let (_, second) = open_stream(&env, path, &env.bob, None).await;
    let created = call(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-b/backups",
        Some(&env.bob),
        Some(json!("bobs")),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED);
    let text = read_stream(second, Duration::from_secs(10), |t| t.contains("\"bobs\"")).await;
    let ready_after = sse_id(&text, "ready", "");
    let added = sse_id(&text, "ADDED", "\"bobs\"");
    assert!(!text.contains("alice-"), "{text}");
    for id in [&ready_before, &ready_after, &added] {
        assert!(
            !is_a_counter(id),
            "{id} is a position in a cluster-wide counter"
        );
        assert_eq!(id.len(), ready_before.len(), "ids differ in size: {id}");
        assert!(
            id.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
            "{id}"
        );
    }
    assert_ne!(ready_before, ready_after);
    // Resuming from before alice's activity gives bob exactly his own change, no reset.
    let (_, resumed) = open_stream(&env, path, &env.bob, Some(&ready_before)).await;
    let text = read_stream(resumed, Duration::from_secs(10), |t| t.contains("\"bobs\"")).await;
    assert!(
        text.contains("event: ADDED") && text.contains("\"bobs\""),
        "{text}"
    );
    assert!(
        !text.contains("event: reset") && !text.contains("alice-"),
        "{text}"
    );
    // A counter-shaped id (what ids used to be) is just not one of ours: re-list.
    let (_, forged) = open_stream(&env, path, &env.bob, Some("0badc0de-1")).await;
    let text = read_stream(forged, Duration::from_secs(5), |t| {
        t.contains("event: reset")
    })
    .await;
    assert!(text.contains("event: reset"), "{text}");
}

/// A service account in team-a with `role` there, and its token.
async fn service_account_with(env: &Env, base: &str, role: &str) -> (String, String) {
    let name = env.cluster.unique_name(base, None);
    let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(env.admin.clone(), "team-a");
    accounts
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": name}})).unwrap(),
        )
        .await
        .unwrap();
    env.cluster
        .bind("team-a", &name, "ServiceAccount", role)
        .await;
    let token = env.cluster.sa_token("team-a", &name).await;
    (name, token)
}

/// How long the gateway trusts a reviewed token in the token-validity cases.
const TOKEN_TTL: Duration = Duration::from_secs(2);

/// A stream whose token stops being valid (its service account is deleted; its RoleBinding,
/// and so every access review, stays) ends with `unauthenticated` within the token-cache TTL.
async fn an_sse_stream_ends_when_its_token_is_no_longer_valid(cluster: TestCluster) {
    let env = env_on_configured(cluster, false, |config| {
        config.authn.success_ttl = TOKEN_TTL;
    })
    .await;
    let (account, token) = service_account_with(&env, "streamer", "view").await;
    let (status, stream) =
        open_stream(&env, "/api/v1/namespaces/team-a/events", &token, None).await;
    assert_eq!(status, StatusCode::OK);
    let (_, all) = open_stream(&env, "/api/v1/events", &token, None).await;
    Api::<k8s_openapi::api::core::v1::ServiceAccount>::namespaced(env.admin.clone(), "team-a")
        .delete(&account, &DeleteParams::default())
        .await
        .unwrap();
    let deleted_at = tokio::time::Instant::now();
    let limit = TOKEN_TTL + Duration::from_secs(12);
    let text = read_stream(stream, limit, |t| t.contains("event: unauthenticated")).await;
    assert!(text.contains("event: unauthenticated"), "{text}");
    assert!(text.contains("no longer valid"), "{text}");
    assert!(!text.contains("event: forbidden"), "{text}");
    let text = read_stream(all, limit, |t| t.contains("event: unauthenticated")).await;
    assert!(text.contains("event: unauthenticated"), "{text}");
    assert!(deleted_at.elapsed() < limit);
    // And the token opens nothing any more.
    let (status, _) = open_stream(&env, "/api/v1/namespaces/team-a/events", &token, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

/// The gateway's count of SubjectAccessReviews sent so far.
async fn reviews_sent(env: &Env) -> u64 {
    call(env, Method::GET, "/metrics", None, None)
        .await
        .text()
        .lines()
        .find_map(|line| line.strip_prefix("nac_gateway_subjectaccessreviews_total "))
        .expect("the SAR counter")
        .trim()
        .parse()
        .unwrap()
}

/// The access reviews "my namespaces" costs are bounded: one per cluster namespace for a
/// caller with access nowhere (not three), at most the request's budget per request (REST,
/// and a GraphQL document with aliased `namespaces` fields alike), with a `continue` token for
/// the rest; never a silent truncation.
async fn the_namespace_listing_is_bounded_in_access_reviews(cluster: TestCluster) {
    const BUDGET: usize = 30;
    let env = env_on_configured(cluster, false, |config| {
        config.service.review_budget = BUDGET;
    })
    .await;
    // 40 more namespaces; erin may use the last one created.
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(env.admin.clone());
    let mut created = Vec::new();
    for _ in 0..40 {
        let name = env.cluster.unique_name("sar-fanout", None);
        namespaces
            .create(
                &PostParams::default(),
                &serde_json::from_value(
                    json!({"metadata": {"name": name, "labels": {"nac-test/harness": "true"}}}),
                )
                .unwrap(),
            )
            .await
            .unwrap();
        created.push(name);
    }
    let erins = created.last().unwrap().clone();
    env.cluster.bind(&erins, "erin", "User", "view").await;
    let erin = env.cluster.user_token("erin");
    // Walks every page of `/api/v1/namespaces` as `token`: (names, requests, reviews per request).
    async fn walk(env: &Env, token: &str) -> (Vec<String>, usize, Vec<u64>) {
        let (mut names, mut costs, mut next) = (Vec::new(), Vec::new(), None::<String>);
        loop {
            let before = reviews_sent(env).await;
            let path = match &next {
                Some(token) => format!("/api/v1/namespaces?continue={token}"),
                None => "/api/v1/namespaces".to_string(),
            };
            let page = call(env, Method::GET, &path, Some(token), None).await;
            assert_eq!(page.status, StatusCode::OK, "{}", page.text());
            costs.push(reviews_sent(env).await - before);
            let page = page.json();
            for item in page["items"].as_array().unwrap() {
                names.push(item["name"].as_str().unwrap().to_string());
            }
            match page["continue"].as_str() {
                Some(token) => next = Some(token.to_string()),
                None => return (names, costs.len(), costs),
            }
        }
    }
    // Wait until the gateway's namespace cache has them all (erin's is the last created).
    let (names, _, _) = eventually("erin's namespace listed", 30, || async {
        let walked = walk(&env, &erin).await;
        walked.0.contains(&erins).then_some(walked)
    })
    .await;
    assert_eq!(names, std::slice::from_ref(&erins));
    let cluster_namespaces = namespaces
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .len();
    assert!(cluster_namespaces > BUDGET);

    // frank may use nothing: one review per namespace in all, at most BUDGET per request.
    let frank = env.cluster.user_token("frank");
    let (names, requests, costs) = walk(&env, &frank).await;
    assert!(names.is_empty(), "{names:?}");
    let total: u64 = costs.iter().sum();
    assert!(
        total as usize <= cluster_namespaces,
        "{total} reviews for {cluster_namespaces} namespaces (per request: {costs:?})"
    );
    assert!(
        costs.iter().all(|&cost| cost as usize <= BUDGET),
        "{costs:?}"
    );
    assert!(requests >= 2, "{costs:?}");
    eprintln!(
        "no-access caller over {cluster_namespaces} namespaces: {total} SubjectAccessReviews in {requests} requests ({costs:?}); budget {BUDGET} per request"
    );

    // GraphQL: three aliases of `namespaces` share one budget, and say they are incomplete.
    let dave = env.cluster.user_token("dave");
    let before = reviews_sent(&env).await;
    let answer = call(
        &env,
        Method::POST,
        "/graphql",
        Some(&dave),
        Some(json!({"query": "{ a: namespaces { name } b: namespaces { name } c: namespaces { name permissions { resource verbs } } }"})),
    )
    .await;
    let cost = reviews_sent(&env).await - before;
    assert!(cost as usize <= BUDGET, "{cost} reviews for one document");
    let json = answer.json();
    for alias in ["a", "b", "c"] {
        assert_eq!(json["data"][alias], json!([]), "{json}");
    }
    let errors = json["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 3, "{json}");
    for error in errors {
        assert_eq!(error["extensions"]["code"], "INCOMPLETE", "{json}");
        assert!(error["extensions"]["continue"].is_string(), "{json}");
    }
    // Its continue token goes on from there.
    let after = errors[0]["extensions"]["continue"].as_str().unwrap();
    let next = call(
        &env,
        Method::POST,
        "/graphql",
        Some(&dave),
        Some(json!({"query": "query($after: String) { namespaces(after: $after) { name } }", "variables": {"after": after}})),
    )
    .await;
    assert_eq!(
        next.json()["data"]["namespaces"],
        json!([]),
        "{}",
        next.text()
    );

    // A continue token names nothing, is bound to its caller and cannot be altered.
    let first = call(&env, Method::GET, "/api/v1/namespaces", Some(&frank), None)
        .await
        .json();
    let token = first["continue"].as_str().unwrap().to_string();
    for name in created.iter().chain(
        ["team-a", "team-b", "default"]
            .iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .iter(),
    ) {
        assert!(!token.contains(name.as_str()), "{token}");
    }
    let elsewhere = call(
        &env,
        Method::GET,
        &format!("/api/v1/namespaces?continue={token}"),
        Some(&erin),
        None,
    )
    .await;
    assert_eq!(
        elsewhere.status,
        StatusCode::BAD_REQUEST,
        "{}",
        elsewhere.text()
    );
    let mut altered = token.clone().into_bytes();
    altered[5] = if altered[5] == b'A' { b'B' } else { b'A' };
    let altered = call(
        &env,
        Method::GET,
        &format!(
            "/api/v1/namespaces?continue={}",
            String::from_utf8(altered).unwrap()
        ),
        Some(&frank),
        None,
    )
    .await;
    assert_eq!(altered.status, StatusCode::BAD_REQUEST);

    // What needs every namespace at once says so rather than showing less.
    let (status, body) = open_stream(&env, "/api/v1/events", &frank, None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let text = String::from_utf8(body.collect().await.unwrap().to_bytes().to_vec()).unwrap();
    assert!(text.contains("name the namespaces"), "{text}");
    // Naming them works as before.
    let (status, _) = open_stream(
        &env,
        &format!("/api/v1/events?namespaces={erins}"),
        &erin,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

/// team-a's policy as alice reads it (200 every time), once `done` holds of it: the gateway's
/// watches pick a change up within seconds.
async fn team_a_policy_once(env: &Env, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    eventually_seen(&format!("team-a's policy to show {what}"), 10, || async {
        let policy = call(
            env,
            Method::GET,
            "/api/v1/namespaces/team-a/policy",
            Some(&env.alice),
            None,
        )
        .await;
        assert_eq!(policy.status, StatusCode::OK, "{}", policy.text());
        let policy = policy.json();
        if done(&policy) {
            Ok(policy)
        } else {
            Err(policy)
        }
    })
    .await
}

/// Creates backup `name` in team-a as alice (no idempotency key); asserts 201.
async fn create_backup(env: &Env, body: Value) {
    let created = call(
        env,
        Method::POST,
        "/api/v1/namespaces/team-a/backups",
        Some(&env.alice),
        Some(body),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
}

/// Backup `idem` in team-a, created by alice as in the idempotency case.
async fn create_idem(env: &Env) {
    create_backup(env, json!({"name": "idem", "spec": {"backupSpec": {}}})).await;
}

async fn an_idempotency_key_replays_its_create_and_refuses_another_body(cluster: TestCluster) {
    let env = env_on(cluster).await;
    // Idempotency: same key, same body → same answer, one object.
    let body = json!({"name": "idem", "spec": {"backupSpec": {}}});
    let first = call_with(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-a/backups",
        Some(&env.alice),
        Some(body.clone()),
        &[("idempotency-key", "k-1")],
    )
    .await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.text());
    let again = call_with(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-a/backups",
        Some(&env.alice),
        Some(body.clone()),
        &[("idempotency-key", "k-1")],
    )
    .await;
    assert_eq!(again.status, StatusCode::CREATED);
    assert_eq!(again.body, first.body);
    assert_eq!(again.headers["idempotency-replayed"], "true");
    let other = call_with(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-a/backups",
        Some(&env.alice),
        Some(json!("different")),
        &[("idempotency-key", "k-1")],
    )
    .await;
    assert_eq!(other.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(other.json()["code"], "idempotency-key-reused");
    // Without a key, a second create of the same name is a 409.
    let duplicate = call(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-a/backups",
        Some(&env.alice),
        Some(body),
    )
    .await;
    assert_eq!(
        duplicate.status,
        StatusCode::CONFLICT,
        "{}",
        duplicate.text()
    );
}

async fn wait_true_on_get_returns_at_the_terminal_phase(cluster: TestCluster) {
    let env = env_on(cluster).await;
    create_idem(&env).await;
    // wait=true on GET returns at the terminal phase.
    let waited = call(
        &env,
        Method::GET,
        "/api/v1/namespaces/team-a/backups/idem?wait=true&timeout=60s",
        Some(&env.alice),
        None,
    )
    .await;
    assert_eq!(waited.status, StatusCode::OK, "{}", waited.text());
    assert_eq!(
        waited
            .json()
            .pointer("/status/veleroBackup/status/phase")
            .unwrap(),
        "Completed"
    );
}

async fn pages_come_in_name_order_with_tokens_bound_to_their_list(cluster: TestCluster) {
    let env = env_on(cluster).await;
    create_idem(&env).await;
    // Paging: 5 more backups, pages of 2 in name order, opaque tokens bound to the list.
    for i in 1..=5 {
        let created = call(
            &env,
            Method::POST,
            "/api/v1/namespaces/team-a/backups",
            Some(&env.alice),
            Some(json!(format!("page-{i}"))),
        )
        .await;
        assert_eq!(created.status, StatusCode::CREATED);
    }
    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    let mut pages = 0;
    loop {
        let path = match &token {
            Some(t) => {
                format!("/api/v1/namespaces/team-a/backups?limit=2&labelSelector=&continue={t}")
            }
            None => "/api/v1/namespaces/team-a/backups?limit=2&labelSelector=".to_string(),
        };
        let page = call(&env, Method::GET, &path, Some(&env.alice), None).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.text());
        let page = page.json();
        seen.extend(names(&page));
        pages += 1;
        match page["metadata"]["continue"].as_str() {
            Some(next) => token = Some(next.to_string()),
            None => break,
        }
    }
    assert_eq!(
        seen,
        ["idem", "page-1", "page-2", "page-3", "page-4", "page-5"]
    );
    assert_eq!(pages, 3);
    // A token from this list does not continue another list (other filter, other namespace).
    let first_page = call(
        &env,
        Method::GET,
        "/api/v1/namespaces/team-a/backups?limit=2",
        Some(&env.alice),
        None,
    )
    .await
    .json();
    let t = first_page["metadata"]["continue"]
        .as_str()
        .unwrap()
        .to_string();
    let other_filter = call(
        &env,
        Method::GET,
        &format!("/api/v1/namespaces/team-a/backups?limit=2&phase=Created&continue={t}"),
        Some(&env.alice),
        None,
    )
    .await;
    assert_eq!(other_filter.status, StatusCode::BAD_REQUEST);
    let other_resource = call(
        &env,
        Method::GET,
        &format!("/api/v1/namespaces/team-a/restores?limit=2&continue={t}"),
        Some(&env.alice),
        None,
    )
    .await;
    assert_eq!(other_resource.status, StatusCode::BAD_REQUEST);
}

async fn the_phase_and_label_selector_filter_backups(cluster: TestCluster) {
    let env = env_on(cluster).await;
    create_completed_backup(&env, &env.alice, "team-a", "idem").await;
    // Filters: phase and label selector.
    let completed = call(
        &env,
        Method::GET,
        "/api/v1/namespaces/team-a/backups?phase=completed",
        Some(&env.alice),
        None,
    )
    .await
    .json();
    assert!(names(&completed).contains(&"idem".to_string()));
    let labelled = call(&env, Method::POST, "/api/v1/namespaces/team-a/backups", Some(&env.alice),
        Some(json!({"apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
                    "metadata": {"name": "labelled", "labels": {"tier": "gold"}}, "spec": {"backupSpec": {}}}))).await;
    assert_eq!(labelled.status, StatusCode::CREATED, "{}", labelled.text());
    let selected = call(
        &env,
        Method::GET,
        "/api/v1/namespaces/team-a/backups?labelSelector=tier%3Dgold",
        Some(&env.alice),
        None,
    )
    .await
    .json();
    assert_eq!(names(&selected), ["labelled"]);
}

async fn a_restore_from_a_completed_backup_can_be_waited_for(cluster: TestCluster) {
    let env = env_on(cluster).await;
    create_completed_backup(&env, &env.alice, "team-a", "idem").await;
    // Restore from a completed backup, waiting for it.
    let restore = call(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-a/restores?wait=true&timeout=60s",
        Some(&env.alice),
        Some(json!({"name": "undo", "backupName": "idem"})),
    )
    .await;
    assert_eq!(restore.status, StatusCode::CREATED, "{}", restore.text());
    assert_eq!(
        restore
            .json()
            .pointer("/status/veleroRestore/status/phase")
            .unwrap(),
        "Completed"
    );
}

async fn delete_of_a_backup_is_the_permanent_delete_and_says_so(cluster: TestCluster) {
    let env = env_on(cluster).await;
    create_backup(&env, json!("page-1")).await;
    // DELETE of a backup is the permanent delete, and says so.
    let deleted = call(
        &env,
        Method::DELETE,
        "/api/v1/namespaces/team-a/backups/page-1",
        Some(&env.alice),
        None,
    )
    .await;
    assert_eq!(deleted.status, StatusCode::ACCEPTED, "{}", deleted.text());
    assert_eq!(deleted.json()["permanent"], true);
    assert!(
        deleted.json()["message"]
            .as_str()
            .unwrap()
            .contains("object storage")
    );
    let nab: NonAdminBackup = Api::namespaced(env.admin.clone(), "team-a").get("page-1").await.map_err(|e| e.to_string()).unwrap_or_else(|_| {
        // Already gone: the deletion completed.
        serde_json::from_value(json!({"metadata": {"name": "page-1"}, "spec": {"backupSpec": {}, "deleteBackup": true}})).unwrap()
    });
    assert_eq!(nab.spec.delete_backup, Some(true));
}

#[tokio::test]
async fn replicas_sharing_the_history_store_agree_on_idempotency_keys() {
    let a = env().await;
    let b = replica(&a).await;
    let path = "/api/v1/namespaces/team-a/backups";
    let body = json!({"name": "two-replicas", "spec": {"backupSpec": {}}});
    let key = [("idempotency-key", "replicated-1")];
    let first = call_with(
        &a,
        Method::POST,
        path,
        Some(&a.alice),
        Some(body.clone()),
        &key,
    )
    .await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.text());
    assert!(first.headers.get("idempotency-replayed").is_none());
    // Replica B never saw the request, yet answers with A's stored answer.
    let replayed = call_with(
        &b,
        Method::POST,
        path,
        Some(&b.alice),
        Some(body.clone()),
        &key,
    )
    .await;
    assert_eq!(replayed.status, StatusCode::CREATED, "{}", replayed.text());
    assert_eq!(replayed.headers["idempotency-replayed"], "true");
    assert_eq!(replayed.body, first.body);
    // Another body with the same key is refused on either replica.
    let other = call_with(
        &b,
        Method::POST,
        path,
        Some(&b.alice),
        Some(json!({"name": "two-replicas-other", "spec": {"backupSpec": {}}})),
        &key,
    )
    .await;
    assert_eq!(
        other.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        other.text()
    );
    assert!(other.is_problem());
    assert_eq!(other.json()["code"], "idempotency-key-reused");
    // Keys are per caller: bob's same key is his own (and he may not create in team-a).
    let bobs = call_with(&b, Method::POST, path, Some(&b.bob), Some(body), &key).await;
    assert_eq!(bobs.status, StatusCode::FORBIDDEN, "{}", bobs.text());
    // Exactly one object was made.
    let nabs: Api<NonAdminBackup> = Api::namespaced(a.admin.clone(), "team-a");
    let made = nabs
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|n| n.metadata.name.as_deref() == Some("two-replicas"))
        .count();
    assert_eq!(made, 1);
}

async fn policy_refusals_are_422_with_fields_and_the_policy_is_readable(cluster: TestCluster) {
    let env = env_on(cluster).await;
    let maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(env.admin.clone(), OADP_NAMESPACE);
    let map: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "nac-policy", "namespace": OADP_NAMESPACE},
        "data": {"policy.yaml": "rules:\n  - name: baseline\n    backup:\n      maximum:\n        ttl: 720h\n"}
    })).unwrap();
    maps.create(&PostParams::default(), &map).await.unwrap();
    // The gateway's watch picks the policy up.
    let policy = team_a_policy_once(&env, "a maximum ttl", |policy| {
        policy["backup"]["maximum"].get("ttl").is_some()
    })
    .await;
    assert!(policy["backup"]["maximum"]["ttl"].is_string(), "{policy}");
    let refused = call(&env, Method::POST, "/api/v1/namespaces/team-a/backups", Some(&env.alice),
        Some(json!({"name": "wide", "spec": {"backupSpec": {"includedNamespaces": ["team-b"], "ttl": "2000h0m0s"}}}))).await;
    assert_eq!(
        refused.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        refused.text()
    );
    assert!(refused.is_problem());
    let problem = refused.json();
    let fields: Vec<&str> = problem["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert!(
        fields.contains(&"spec.backupSpec.includedNamespaces"),
        "{problem}"
    );
    assert!(fields.contains(&"spec.backupSpec.ttl"), "{problem}");
    // Nothing was written.
    let stored: Api<NonAdminBackup> = Api::namespaced(env.admin.clone(), "team-a");
    assert!(
        stored
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    // dryRun validates without writing.
    let dry = call(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-a/backups?dryRun=true",
        Some(&env.alice),
        Some(json!("dry")),
    )
    .await;
    assert_eq!(dry.status, StatusCode::OK, "{}", dry.text());
    assert!(
        stored
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn a_dpa_enforced_ttl_is_refused_synchronously_and_shown_in_the_policy() {
    let env = env_with(true).await;
    let dpas: Api<DynamicObject> =
        Api::namespaced_with(env.admin.clone(), OADP_NAMESPACE, &oadp::dpa_resource());
    let mut dpa = DynamicObject::new("dpa", &oadp::dpa_resource()).within(OADP_NAMESPACE);
    dpa.data = json!({"spec": {"nonAdmin": {"enable": true,
                                            "enforceBackupSpec": {"ttl": "24h0m0s"}}}});
    dpas.create(&PostParams::default(), &dpa).await.unwrap();
    // The gateway's DPA watch picks the enforcement up.
    let policy = team_a_policy_once(&env, "an enforced ttl", |policy| {
        policy["backup"]["enforced"]["ttl"] == "24h0m0s"
    })
    .await;
    assert_eq!(policy["backup"]["enforced"]["ttl"], "24h0m0s", "{policy}");
    let refused = call(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-a/backups",
        Some(&env.alice),
        Some(json!({"name": "short", "spec": {"backupSpec": {"ttl": "1h0m0s"}}})),
    )
    .await;
    assert_eq!(
        refused.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        refused.text()
    );
    assert!(refused.is_problem());
    let problem = refused.json();
    let fields: Vec<&str> = problem["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["spec.backupSpec.ttl"], "{problem}");
    // Nothing was written.
    let stored: Api<NonAdminBackup> = Api::namespaced(env.admin.clone(), "team-a");
    assert!(
        stored
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

async fn malformed_input_gets_clean_4xx_and_writes_nothing(cluster: TestCluster) {
    let env = env_on(cluster).await;
    let post = |body: Body, content_type: &str| {
        Request::builder()
            .method(Method::POST)
            .uri("/api/v1/namespaces/team-a/backups")
            .header("authorization", format!("Bearer {}", env.alice))
            .header("content-type", content_type)
            .body(body)
            .unwrap()
    };
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let cases: Vec<(&str, Request<Body>, u16)> = vec![
        (
            "malformed JSON",
            post(Body::from("{\"name\": "), "application/json"),
            400,
        ),
        (
            "trailing garbage",
            post(Body::from("{} x"), "application/json"),
            400,
        ),
        (
            "deep nesting",
            post(Body::from(deep), "application/json"),
            400,
        ),
        (
            "huge body",
            post(Body::from(vec![b' '; 3 * 1024 * 1024]), "application/json"),
            413,
        ),
        (
            "wrong content type",
            post(Body::from("name=x"), "application/x-www-form-urlencoded"),
            415,
        ),
        (
            "array body",
            post(Body::from("[1,2]"), "application/json"),
            400,
        ),
        (
            "unicode name",
            post(Body::from("{\"name\": \"bäckup-☃\"}"), "application/json"),
            422,
        ),
        (
            "RTL override name",
            post(Body::from("\"a\u{202e}b\""), "application/json"),
            422,
        ),
        (
            "upper-case name",
            post(Body::from("\"UPPER\""), "application/json"),
            422,
        ),
        (
            "very long name",
            post(
                Body::from(format!("\"{}\"", "a".repeat(300))),
                "application/json",
            ),
            422,
        ),
        (
            "wrong spec type",
            post(
                Body::from("{\"name\": \"x\", \"spec\": {\"backupSpec\": {\"ttl\": []}}}"),
                "application/json",
            ),
            422,
        ),
        (
            "other namespace in metadata",
            post(
                Body::from(
                    "{\"metadata\": {\"name\": \"x\", \"namespace\": \"team-b\"}, \"spec\": {\"backupSpec\": {}}}",
                ),
                "application/json",
            ),
            422,
        ),
        ("null", post(Body::from("null"), "application/json"), 400),
    ];
    for (what, request, status) in cases {
        let answer = raw(&env, request).await;
        assert_eq!(answer.status.as_u16(), status, "{what}: {}", answer.text());
        assert!(answer.is_problem(), "{what}");
        assert!(answer.headers.contains_key("x-request-id"));
    }
    for (what, path, status) in [
        (
            "bad continue",
            "/api/v1/namespaces/team-a/backups?continue=garbage",
            400,
        ),
        (
            "forged continue",
            "/api/v1/namespaces/team-a/backups?continue=eyJ2IjoxfQ.AAAA",
            400,
        ),
        (
            "huge continue",
            &format!(
                "/api/v1/namespaces/team-a/backups?continue={}",
                "a".repeat(5000)
            ),
            400,
        ),
        (
            "bad limit",
            "/api/v1/namespaces/team-a/backups?limit=abc",
            400,
        ),
        (
            "zero limit",
            "/api/v1/namespaces/team-a/backups?limit=0",
            400,
        ),
        (
            "bad selector",
            "/api/v1/namespaces/team-a/backups?labelSelector=a%20b%20c",
            400,
        ),
        (
            "bad phase",
            "/api/v1/namespaces/team-a/backups?phase=%E2%98%83",
            400,
        ),
        (
            "bad timeout",
            "/api/v1/namespaces/team-a/backups/x?wait=true&timeout=soon",
            400,
        ),
        ("bad namespace", "/api/v1/namespaces/Team_A/backups", 400),
        (
            "unicode name in path",
            "/api/v1/namespaces/team-a/backups/%E2%98%83",
            400,
        ),
        ("unknown route", "/api/v1/nothing-here", 404),
        (
            "unknown artifact",
            "/api/v1/namespaces/team-a/backups/x/logs?artifact=secrets",
            400,
        ),
    ] {
        let answer = call(&env, Method::GET, path, Some(&env.alice), None).await;
        assert_eq!(answer.status.as_u16(), status, "{what}: {}", answer.text());
        assert!(answer.is_problem(), "{what}");
    }
    let wrong_method = call(
        &env,
        Method::PUT,
        "/api/v1/namespaces/team-a/backups",
        Some(&env.alice),
        None,
    )
    .await;
    assert_eq!(wrong_method.status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(wrong_method.is_problem());
    let bad_key = call_with(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-a/backups",
        Some(&env.alice),
        Some(json!("k")),
        &[("idempotency-key", &"k".repeat(300))],
    )
    .await;
    assert_eq!(bad_key.status, StatusCode::BAD_REQUEST);
    // Nothing was written by any of it.
    let stored: Api<NonAdminBackup> = Api::namespaced(env.admin.clone(), "team-a");
    assert!(
        stored
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn health_metrics_request_ids_rate_limits_and_docs() {
    let env = env().await;
    assert_eq!(
        call(&env, Method::GET, "/healthz", None, None).await.status,
        StatusCode::OK
    );
    assert_eq!(
        call(&env, Method::GET, "/readyz", None, None).await.status,
        StatusCode::OK
    );
    let answer = call_with(
        &env,
        Method::GET,
        "/api/v1/namespaces/team-a/backups",
        Some(&env.alice),
        None,
        &[("x-request-id", "my-id-1")],
    )
    .await;
    assert_eq!(answer.headers["x-request-id"], "my-id-1");
    assert!(answer.headers.contains_key("ratelimit-limit"));
    assert!(answer.headers.contains_key("ratelimit-remaining"));
    assert!(answer.headers.contains_key("ratelimit-reset"));
    let problem = call_with(
        &env,
        Method::GET,
        "/api/v1/namespaces/team-b/backups",
        Some(&env.alice),
        None,
        &[("x-request-id", "my-id-2")],
    )
    .await;
    assert_eq!(problem.json()["requestId"], "my-id-2");
    let _ = call(
        &env,
        Method::GET,
        "/api/v1/namespaces/team-a/backups/some-name-1",
        Some(&env.alice),
        None,
    )
    .await;
    let _ = call(
        &env,
        Method::GET,
        "/random/unknown/path-xyz",
        Some(&env.alice),
        None,
    )
    .await;
    let metrics = call(&env, Method::GET, "/metrics", None, None).await.text();
    assert!(
        metrics.contains("route=\"/api/v1/namespaces/{namespace}/backups\",status=\"2xx\""),
        "{metrics}"
    );
    assert!(metrics.contains("route=\"/api/v1/namespaces/{namespace}/backups/{name}\""));
    assert!(metrics.contains("route=\"unmatched\",status=\"4xx\""));
    for unbounded in ["some-name-1", "path-xyz", "team-a", "alice", &env.alice] {
        assert!(!metrics.contains(unbounded), "metrics carry {unbounded}");
    }
    assert!(metrics.contains("nac_gateway_subjectaccessreviews_total"));
    let openapi = call(&env, Method::GET, "/openapi.json", None, None)
        .await
        .json();
    assert!(openapi["paths"]["/api/v1/namespaces/{namespace}/backups"]["post"].is_object());
    let docs = call(&env, Method::GET, "/docs", None, None).await;
    assert_eq!(docs.status, StatusCode::OK);
    assert!(
        docs.text()
            .contains("/api/v1/namespaces/{namespace}/backups")
    );
    assert!(!docs.text().contains("<script"));
}

/// TokenReviews the gateway's service account has sent so far.
fn token_reviews(server: &ApiServer) -> usize {
    let gateway = format!("system:serviceaccount:{OADP_NAMESPACE}:{GATEWAY_SERVICE_ACCOUNT}");
    server
        .audit_entries()
        .iter()
        .filter(|entry| entry.user == gateway && entry.resource.contains("tokenreviews"))
        .count()
}

/// A request with a fresh random bad token over REST, SSE or GraphQL (`kind` 0, 1, 2), from
/// `peer` when given (as `into_make_service_with_connect_info` would record it).
async fn bad_token_request(
    env: &Env,
    kind: usize,
    peer: Option<std::net::SocketAddr>,
    extra: &[(&str, &str)],
) -> Answer {
    let token = format!("bad-{}", uuid::Uuid::new_v4().simple());
    let mut builder = match kind {
        0 => Request::get("/api/v1/namespaces/team-a/backups"),
        1 => Request::get("/api/v1/namespaces/team-a/events"),
        _ => Request::post("/graphql").header("content-type", "application/json"),
    }
    .header("authorization", format!("Bearer {token}"));
    for (name, value) in extra {
        builder = builder.header(*name, *value);
    }
    let body = if kind == 2 {
        Body::from(r#"{"query": "{ viewer { username } }"}"#)
    } else {
        Body::empty()
    };
    let mut request = builder.body(body).unwrap();
    if let Some(peer) = peer {
        request
            .extensions_mut()
            .insert(axum::extract::ConnectInfo(peer));
    }
    raw(env, request).await
}

/// The whole seconds of an answer's Retry-After.
fn retry_after(answer: &Answer) -> u64 {
    answer.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn a_flood_of_bad_tokens_is_limited_before_tokenreview_and_valid_tokens_pass() {
    const BURST: u32 = 20;
    const PER_SECOND: f64 = 2.0;
    let env = env_configured(false, false, |config| {
        config.pre_auth_limit = PreAuthLimitConfig {
            burst: BURST,
            per_second: PER_SECOND,
            max_clients: 1000,
        };
    })
    .await;
    // alice's token is reviewed once (one unit of the shared in-process bucket) and cached.
    let warm = call(
        &env,
        Method::GET,
        "/api/v1/namespaces/team-a/backups",
        Some(&env.alice),
        None,
    )
    .await;
    assert_eq!(warm.status, StatusCode::OK, "{}", warm.text());

    let before = token_reviews(env.server());
    let started = std::time::Instant::now();
    let (mut unauthorized, mut limited) = (0usize, 0usize);
    for i in 0..200 {
        let kind = i % 3;
        let answer = bad_token_request(&env, kind, None, &[]).await;
        match answer.status {
            StatusCode::UNAUTHORIZED => unauthorized += 1,
            StatusCode::TOO_MANY_REQUESTS => {
                limited += 1;
                assert!(retry_after(&answer) >= 1, "request {i}");
                if kind == 2 {
                    assert_eq!(
                        answer.json()["errors"][0]["extensions"]["code"],
                        "RATE_LIMITED"
                    );
                } else {
                    assert!(answer.is_problem(), "request {i}: {}", answer.text());
                    assert_eq!(answer.json()["status"], 429);
                }
            }
            other => panic!("request {i} (kind {kind}): {other} {}", answer.text()),
        }
        if i % 20 == 10 {
            // A cached valid token is never held up by the flood.
            let answer = call(
                &env,
                Method::GET,
                "/api/v1/namespaces/team-a/backups",
                Some(&env.alice),
                None,
            )
            .await;
            assert_eq!(answer.status, StatusCode::OK, "alice during the flood");
            assert!(answer.headers.contains_key("ratelimit-remaining"));
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let reviews = token_reviews(env.server()) - before;
    // The bucket held BURST - 1 after alice, then refilled at PER_SECOND.
    let bound = BURST as usize + (elapsed * PER_SECOND).ceil() as usize;
    eprintln!(
        "200 bad tokens in {elapsed:.2}s: {reviews} TokenReviews (bound {bound}), {unauthorized} × 401, {limited} × 429"
    );
    assert!(reviews <= bound, "{reviews} TokenReviews > {bound}");
    // Every 401 took a TokenReview; no 429 did.
    assert_eq!(unauthorized, reviews);
    assert_eq!(unauthorized + limited, 200);
    assert!(limited >= 200 - bound);

    // Another client address has its own bucket …
    let peer: std::net::SocketAddr = "192.0.2.10:40000".parse().unwrap();
    let answer = bad_token_request(&env, 0, Some(peer), &[]).await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    // … which a forged X-Forwarded-For does not refresh (forwarded headers are not trusted by
    // default).
    let mut peer_limited = 0;
    for i in 0..(BURST as usize + 10) {
        let forged = format!("198.51.100.{i}");
        let answer =
            bad_token_request(&env, i % 3, Some(peer), &[("x-forwarded-for", &forged)]).await;
        if answer.status == StatusCode::TOO_MANY_REQUESTS {
            peer_limited += 1;
        }
    }
    assert!(peer_limited >= 5, "{peer_limited} refusals for the peer");

    // After Retry-After the shared bucket lets one unverified token through again.
    let refused = bad_token_request(&env, 0, None, &[]).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    let reviews_before_wait = token_reviews(env.server());
    tokio::time::sleep(Duration::from_secs(retry_after(&refused))).await;
    let answer = bad_token_request(&env, 0, None, &[]).await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    assert_eq!(token_reviews(env.server()), reviews_before_wait + 1);

    let metrics = call(&env, Method::GET, "/metrics", None, None).await.text();
    let line = metrics
        .lines()
        .find(|line| line.starts_with("nac_gateway_preauth_rate_limited_total"))
        .unwrap_or_else(|| panic!("{metrics}"));
    let counted: usize = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(counted > limited + peer_limited, "{line}");
}

/// SplitMix64: a seeded generator, so a failing case can be replayed from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Names a tenant might send: valid ones and every kind of invalid one.
const NAMES: &[&str] = &[
    "ok-name",
    "",
    "UPPER",
    "a/b",
    "../etc",
    "名前",
    "rtl\u{202e}gnp",
    "nul\u{0}byte",
    "-leading",
    "trailing-",
    "dot.ted",
    "sp ace",
    "%2e%2e",
    "a\nb",
];

fn random_json(rng: &mut Rng, depth: usize) -> Value {
    match rng.below(if depth == 0 { 5 } else { 8 }) {
        0 => Value::Null,
        1 => json!(rng.next().is_multiple_of(2)),
        2 => json!(rng.next() as i64),
        3 => json!(rng.pick(NAMES).repeat(1 + rng.below(30))),
        4 => json!(f64::from(rng.below(1000) as u32) / 7.0),
        5 => Value::Array(
            (0..rng.below(4))
                .map(|_| random_json(rng, depth - 1))
                .collect(),
        ),
        _ => {
            let keys = [
                "name",
                "spec",
                "backupSpec",
                "metadata",
                "ttl",
                "includedNamespaces",
                "storageLocation",
                "labelSelector",
                "namespace",
                "kind",
                "apiVersion",
            ];
            Value::Object(
                (0..rng.below(5))
                    .map(|_| (rng.pick(&keys).to_string(), random_json(rng, depth - 1)))
                    .collect(),
            )
        }
    }
}

/// A body for POST .../backups: a valid one, then mutated (fields replaced, bytes cut or
/// inserted), so some stay valid and most do not.
fn random_backup_body(rng: &mut Rng, case: usize) -> Vec<u8> {
    let name = if rng.below(4) == 0 {
        format!("fuzz-{case}")
    } else {
        rng.pick(NAMES).repeat(1 + rng.below(25))
    };
    let mut body = match rng.below(3) {
        0 => json!({"name": name, "spec": {"backupSpec": {}}}),
        1 => json!({"apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
                    "metadata": {"name": name}, "spec": {"backupSpec": {"ttl": "1h0m0s"}}}),
        _ => json!(name),
    };
    for _ in 0..rng.below(3) {
        let replacement = random_json(rng, 4);
        let path: &[&str] = match rng.below(4) {
            0 => &["spec"],
            1 => &["spec", "backupSpec"],
            2 => &["metadata"],
            _ => &["spec", "backupSpec", "includedNamespaces"],
        };
        if body.is_object() {
            set_path(&mut body, path, replacement);
        }
    }
    let mut bytes = serde_json::to_vec(&body).unwrap();
    match rng.below(6) {
        0 if !bytes.is_empty() => {
            let at = rng.below(bytes.len());
            bytes.truncate(at);
        }
        1 => {
            let at = rng.below(bytes.len() + 1);
            bytes.insert(at, (rng.next() & 0xff) as u8);
        }
        _ => {}
    }
    bytes
}

/// Sets `value` at `path`, turning whatever stands in the way into objects.
fn set_path(target: &mut Value, path: &[&str], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut at = target;
    for key in parents {
        if !at.get(*key).is_some_and(Value::is_object) {
            at[*key] = json!({});
        }
        at = &mut at[*key];
    }
    at[*last] = value;
}

/// A GraphQL document: nested selections of random depth, random aliases, or garbage.
fn random_graphql(rng: &mut Rng) -> Value {
    let query = match rng.below(4) {
        0 => {
            let depth = 1 + rng.below(30);
            let mut q = "name".to_string();
            for level in 0..depth {
                q = if level % 2 == 0 {
                    format!("restores {{ backup {{ {q} }} }}")
                } else {
                    format!("backup {{ restores {{ {q} }} }}")
                };
            }
            format!(
                "{{ backups(namespace: \"team-a\", first: {}) {{ edges {{ node {{ {q} }} }} }} }}",
                rng.below(600)
            )
        }
        1 => {
            let aliases: String = (0..rng.below(300))
                .map(|i| format!("a{i}: namespaces {{ name }} "))
                .collect();
            format!("{{ {aliases} }}")
        }
        2 => format!(
            "mutation {{ createBackup(namespace: {:?}, input: {{name: {:?}, spec: {}}}) {{ name }} }}",
            rng.pick(&["team-a", "team-b", "", "名前"]),
            rng.pick(NAMES),
            serde_json::to_string(&serde_json::to_string(&random_json(rng, 3)).unwrap()).unwrap()
        ),
        _ => String::from_utf8_lossy(
            &(0..rng.below(200))
                .map(|_| {
                    b"{}()[]:$!@\"query mutation subscription fragment on ...\n"[rng.below(52)]
                })
                .collect::<Vec<u8>>(),
        )
        .into_owned(),
    };
    json!({"query": query, "variables": if rng.below(5) == 0 { random_json(rng, 3) } else { json!({}) }})
}

/// Hundreds of generated requests — mutated bodies, evil names, bad paging tokens and
/// selectors, deep and wide GraphQL documents, another tenant's token: never a 5xx, every REST
/// refusal is problem+json, and afterwards the namespaces hold exactly the backups the gateway
/// said it created (nothing is written by a refused request).
#[tokio::test]
async fn generated_bad_input_never_writes_and_never_fails_the_server() {
    let env = env().await;
    let seed: u64 = std::env::var("NAC_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_2026);
    let mut rng = Rng(seed);
    let mut created: Vec<String> = Vec::new();
    for case in 0..300 {
        let (token, as_bob) = if rng.below(6) == 0 {
            (env.bob.clone(), true)
        } else {
            (env.alice.clone(), false)
        };
        let answer = match rng.below(4) {
            0 | 1 => {
                let body = random_backup_body(&mut rng, case);
                let request = Request::builder()
                    .method(Method::POST)
                    .uri("/api/v1/namespaces/team-a/backups")
                    .header("authorization", format!("Bearer {token}"))
                    .header("content-type", "application/json")
                    .body(Body::from(body.clone()))
                    .unwrap();
                let answer = raw(&env, request).await;
                if answer.status.is_success() {
                    assert!(!as_bob, "bob wrote into team-a (seed {seed}, case {case})");
                    created.push(
                        answer.json()["metadata"]["name"]
                            .as_str()
                            .unwrap()
                            .to_string(),
                    );
                }
                answer
            }
            2 => {
                let limit = rng
                    .pick(&["-1", "0", "99999999999999999999", "abc", "5"])
                    .to_string();
                let garbage: String = (0..rng.below(80))
                    .map(|_| char::from(b"AZaz09+/=_-%.~"[rng.below(14)]))
                    .collect();
                let phase = *rng.pick(NAMES);
                let selector = rng.pick(&["a=b", "a in (b", "!!", "a=", "x,y=z", "é=ü"]);
                let query = form_urlencoded::Serializer::new(String::new())
                    .append_pair("limit", &limit)
                    .append_pair("continue", &garbage)
                    .append_pair("labelSelector", selector)
                    .append_pair("phase", phase)
                    .finish();
                call(
                    &env,
                    Method::GET,
                    &format!("/api/v1/namespaces/team-a/backups?{query}"),
                    Some(&token),
                    None,
                )
                .await
            }
            _ => {
                let body = random_graphql(&mut rng);
                let answer = call(
                    &env,
                    Method::POST,
                    "/graphql",
                    Some(&token),
                    Some(body.clone()),
                )
                .await;
                if answer.status == StatusCode::OK
                    && let Ok(value) = serde_json::from_slice::<Value>(&answer.body)
                    && let Some(name) = value["data"]["createBackup"]["name"].as_str()
                {
                    let namespace_is_team_a = body["query"]
                        .as_str()
                        .unwrap()
                        .contains("namespace: \"team-a\"");
                    assert!(
                        namespace_is_team_a && !as_bob,
                        "unexpected write (seed {seed}, case {case}): {body}"
                    );
                    created.push(name.to_string());
                }
                answer
            }
        };
        assert!(
            answer.status.as_u16() < 500,
            "server error {} (seed {seed}, case {case}): {}",
            answer.status,
            answer.text()
        );
        if answer.status.is_client_error()
            && !answer.headers.get("content-type").is_some_and(|v| {
                v.to_str().unwrap_or("").starts_with("application/json")
                    || v.to_str().unwrap_or("").starts_with("application/graphql")
            })
        {
            assert!(
                answer.is_problem(),
                "a refusal that is not problem+json (seed {seed}, case {case}): {}",
                answer.text()
            );
        }
    }
    assert!(
        !created.is_empty(),
        "the generator also produces valid requests (seed {seed})"
    );
    // Exactly what the gateway said it created exists; team-b got nothing.
    let mut stored = backup_names(&env.admin, "team-a").await;
    stored.sort();
    created.sort();
    assert_eq!(stored, created, "seed {seed}");
    assert!(backup_names(&env.admin, "team-b").await.is_empty());
}

/// "My namespaces" over REST and GraphQL for alice, bob and a user with no bindings.
async fn my_namespaces(env: &Env) -> Vec<(&'static str, Value, Value)> {
    let mut out = Vec::new();
    for (who, token) in [
        ("alice", &env.alice),
        ("bob", &env.bob),
        ("nobody", &env.nobody),
    ] {
        let rest = call(env, Method::GET, "/api/v1/namespaces", Some(token), None).await;
        assert_eq!(rest.status, StatusCode::OK, "{who}: {}", rest.text());
        let graphql = call(
            env,
            Method::POST,
            "/graphql",
            Some(token),
            Some(json!({"query": "{ namespaces { name canDownload permissions { resource verbs } } }"})),
        )
        .await;
        assert_eq!(graphql.status, StatusCode::OK, "{who}: {}", graphql.text());
        assert!(graphql.json().get("errors").is_none(), "{}", graphql.text());
        out.push((who, rest.json(), graphql.json()));
    }
    out
}

/// Users who listed OpenShift projects (from the emulator's audit log).
fn project_listers(env: &Env) -> Vec<String> {
    let mut users: Vec<String> = env
        .server()
        .audit_entries()
        .into_iter()
        .filter(|e| e.verb == "list" && e.resource == "project.openshift.io/projects")
        .map(|e| e.user)
        .collect();
    users.sort();
    users.dedup();
    users
}

#[tokio::test]
async fn my_namespaces_are_the_same_from_the_namespace_cache_and_from_openshift_projects() {
    // Plain Kubernetes: no projects API, the namespace cache filtered by SAR.
    let plain = env_full(false, false).await;
    let from_cache = my_namespaces(&plain).await;
    let rest_names = |answer: &Value| -> Vec<String> {
        answer["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["name"].as_str().unwrap().to_string())
            .collect()
    };
    let expected: [(&str, &[&str]); 3] = [
        ("alice", &["team-a"]),
        ("bob", &["team-b"]),
        ("nobody", &[]),
    ];
    for ((who, rest, graphql), (expected_who, names)) in from_cache.iter().zip(expected) {
        assert_eq!(*who, expected_who);
        assert_eq!(rest_names(rest), names, "{who}");
        assert_eq!(
            graphql["data"]["namespaces"].as_array().unwrap().len(),
            names.len()
        );
    }
    assert!(project_listers(&plain).is_empty());

    // OpenShift: the gateway finds projects by discovery and lists them as the caller.
    let openshift = env_full(false, true).await;
    let from_projects = my_namespaces(&openshift).await;
    assert_eq!(from_projects, from_cache);
    assert_eq!(project_listers(&openshift), ["alice", "bob", "mallory"]);

    // A failing projects list falls back to the namespace cache with the same answers.
    openshift.server().set_faults(
        serde_json::from_value(json!({"rules": [
            {"verb": "list", "resource": "project.openshift.io/projects", "errorRate": 1.0, "errorCode": 503}
        ]}))
        .unwrap(),
    );
    let before = openshift.server().audit_entries().len();
    assert_eq!(my_namespaces(&openshift).await, from_cache);
    assert!(
        openshift.server().audit_entries()[before..]
            .iter()
            .any(|e| e.resource == "project.openshift.io/projects" && e.code == 503),
        "the projects list was tried"
    );
    openshift.server().set_faults(Default::default());

    // The one difference, by OpenShift's semantics: ci-bot may create backups in team-a but may
    // not view the project, so its projects list (and so its namespaces) is empty there.
    let mut ci_bot = Vec::new();
    for env in [&plain, &openshift] {
        let answer = call(
            env,
            Method::GET,
            "/api/v1/namespaces",
            Some(&env.ci_bot),
            None,
        )
        .await;
        ci_bot.push(rest_names(&answer.json()));
    }
    assert_eq!(ci_bot, [vec!["team-a".to_string()], Vec::new()]);
}

// Each of these runs on the emulator and on the real kube-apiserver (`NAME::emulator`,
// `NAME::real`); the others inspect or fault the emulator itself.
on_both_servers!(
    isolation_matrix_over_rest_sse_logs_and_queue,
    sse_resumes_with_last_event_id,
    sse_event_ids_are_opaque_and_per_stream,
    an_sse_stream_ends_when_its_token_is_no_longer_valid,
    the_namespace_listing_is_bounded_in_access_reviews,
    a_removed_role_binding_stops_access_within_the_allow_ttl,
    an_idempotency_key_replays_its_create_and_refuses_another_body,
    wait_true_on_get_returns_at_the_terminal_phase,
    pages_come_in_name_order_with_tokens_bound_to_their_list,
    the_phase_and_label_selector_filter_backups,
    a_restore_from_a_completed_backup_can_be_waited_for,
    delete_of_a_backup_is_the_permanent_delete_and_says_so,
    policy_refusals_are_422_with_fields_and_the_policy_is_readable,
    malformed_input_gets_clean_4xx_and_writes_nothing,
);
