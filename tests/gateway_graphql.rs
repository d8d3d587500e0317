//! The gateway's GraphQL API (`/graphql`) on the emulator and on the real kube-apiserver (each
//! case `NAME::emulator` and `NAME::real`), with the Velero simulator
//! and NAC's controllers (the gateway as `openshift-adp/nac-gateway` with its read-only RBAC):
//! the isolation matrix over queries, mutations and subscriptions (alice, bob, ci-bot, a user
//! with no bindings, a bad token, no token), a backup created by a mutation reaching
//! Completed while a subscription follows it, DataLoader-backed relations, depth and
//! complexity limits, connection paging, and error codes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/gateway.rs"]
mod gateway_support;
mod support;
use support::cluster::{TestCluster, eventually_seen};
#[path = "support/ws.rs"]
mod ws;

use std::time::Duration;

use axum::body::Body;
use gateway_support::{Answer, GatewayEnv, backup_names, send};
use http::{Method, Request, StatusCode};
use kube::api::{Api, ListParams};
use nac::api::nonadmin::NonAdminRestore;
use serde_json::{Value, json};
use ws::{Frame, Ws};

/// Each case's gateway: the shared harness, with Velero and the controllers, short access
/// caches, and the router on a TCP socket for WebSockets.
type Env = GatewayEnv;

async fn env(cluster: TestCluster) -> Env {
    env_with(cluster, |_| {}).await
}

/// [`env`] with `configure` applied last to the gateway's configuration.
async fn env_with(
    cluster: TestCluster,
    configure: impl FnOnce(&mut nac::gateway::GatewayConfig),
) -> Env {
    GatewayEnv::on(cluster)
        .velero(|_| {})
        .config(gateway_support::config_short_ttls())
        .configure(configure)
        .serve_tcp()
        .start()
        .await
}

impl Answer {
    fn data(&self) -> Value {
        assert_eq!(self.status, StatusCode::OK, "{}", self.text());
        let json = self.json();
        assert!(json.get("errors").is_none(), "unexpected errors: {json}");
        json["data"].clone()
    }
    /// The code of the first error.
    fn code(&self) -> String {
        self.json()["errors"][0]["extensions"]["code"]
            .as_str()
            .unwrap_or_else(|| panic!("no error code: {}", self.text()))
            .to_string()
    }
}

async fn post(env: &Env, token: Option<&str>, body: Vec<u8>) -> Answer {
    let mut builder = Request::builder()
        .method(Method::POST)
        .uri("/graphql")
        .header("content-type", "application/json");
    if let Some(token) = token {
        builder = builder.header("authorization", format!("Bearer {token}"));
    }
    send(&env.router, builder.body(Body::from(body)).unwrap()).await
}

async fn gql(env: &Env, token: Option<&str>, query: &str, variables: Value) -> Answer {
    let body = json!({"query": query, "variables": variables});
    post(env, token, serde_json::to_vec(&body).unwrap()).await
}

const CREATE_BACKUP: &str = "mutation($ns: String!, $name: String!) { createBackup(namespace: $ns, input: {name: $name}) { name namespace requestPhase } }";
/// `token` creates the backup `name` in `namespace` by mutation.
async fn create_backup(env: &Env, token: &str, namespace: &str, name: &str) {
    let created = gql(
        env,
        Some(token),
        CREATE_BACKUP,
        json!({"ns": namespace, "name": name}),
    )
    .await;
    assert_eq!(created.data()["createBackup"]["name"], name);
}

const BACKUP_PHASE: &str =
    "query($ns: String!, $name: String!) { backup(namespace: $ns, name: $name) { veleroPhase } }";

async fn wait_completed(env: &Env, token: &str, namespace: &str, name: &str) {
    let what = format!("{namespace}/{name} to complete");
    eventually_seen(&what, 90, || async {
        let answer = gql(
            env,
            Some(token),
            BACKUP_PHASE,
            json!({"ns": namespace, "name": name}),
        )
        .await;
        let json = answer.json();
        if json["data"]["backup"]["veleroPhase"] == "Completed" {
            Ok(())
        } else {
            Err(format!("{namespace}/{name} did not complete: {json}"))
        }
    })
    .await
}

async fn create_completed(env: &Env, token: &str, namespace: &str, name: &str) {
    create_backup(env, token, namespace, name).await;
    wait_completed(env, token, namespace, name).await;
}

fn edge_names(connection: &Value) -> Vec<String> {
    connection["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["node"]["name"].as_str().unwrap().to_string())
        .collect()
}

async fn isolation_matrix_over_queries_and_mutations(cluster: TestCluster) {
    let env = env(cluster).await;
    let alice_secret = "alice-private-backup";
    let bob_secret = "bob-secret-backup";
    create_completed(&env, &env.alice, "team-a", alice_secret).await;
    create_completed(&env, &env.bob, "team-b", bob_secret).await;
    // Everything a caller other than the owner sees; checked for the other tenant's names.
    let mut seen_by_not_bob: Vec<String> = Vec::new();
    let mut seen_by_not_alice: Vec<String> = Vec::new();

    // --- alice: her namespace, her objects, and the same data REST gives.
    let data = gql(
        &env,
        Some(&env.alice),
        "{ viewer { username } namespaces { name canDownload permissions { resource verbs } } backups(namespace: \"team-a\") { edges { node { name phase restores { name } } } pageInfo { hasNextPage } } }",
        json!({}),
    )
    .await;
    seen_by_not_bob.push(data.text());
    let data = data.data();
    assert_eq!(data["viewer"]["username"], "alice");
    assert_eq!(data["namespaces"].as_array().unwrap().len(), 1);
    assert_eq!(data["namespaces"][0]["name"], "team-a");
    assert_eq!(
        data["namespaces"][0]["permissions"][0],
        json!({"resource": "backups", "verbs": ["get", "list", "watch", "create", "patch", "delete"]})
    );
    assert_eq!(edge_names(&data["backups"]), [alice_secret]);
    assert_eq!(data["backups"]["edges"][0]["node"]["phase"], "Completed");

    // Every read and write of team-b is FORBIDDEN for alice, and the answer for an existing
    // object is the same as for a missing one.
    let existing = gql(
        &env,
        Some(&env.alice),
        "query($n: String!) { backup(namespace: \"team-b\", name: $n) { name } }",
        json!({"n": bob_secret}),
    )
    .await;
    let missing = gql(
        &env,
        Some(&env.alice),
        "query($n: String!) { backup(namespace: \"team-b\", name: $n) { name } }",
        json!({"n": "no-such-backup"}),
    )
    .await;
    assert_eq!(existing.code(), "FORBIDDEN");
    assert_eq!(existing.json(), missing.json(), "must not reveal existence");
    assert!(existing.json()["data"].is_null());
    seen_by_not_bob.push(existing.text());
    let team_b_operations = [
        "{ backups(namespace: \"team-b\") { edges { node { name } } } }".to_string(),
        "{ restores(namespace: \"team-b\") { edges { node { name } } } }".to_string(),
        "{ storageLocations(namespace: \"team-b\") { edges { node { name } } } }".to_string(),
        "{ schedules(namespace: \"team-b\") { edges { node { name } } } }".to_string(),
        format!("{{ describeBackup(namespace: \"team-b\", name: \"{bob_secret}\") {{ name }} }}"),
        "{ queue(namespace: \"team-b\") { namespace { items { name } } } }".to_string(),
        "{ policy(namespace: \"team-b\") { namespace } }".to_string(),
        "{ phaseCounts(namespaces: [\"team-b\"]) { namespace } }".to_string(),
        "mutation { createBackup(namespace: \"team-b\", input: {name: \"planted\"}) { name } }"
            .to_string(),
        format!(
            "mutation {{ createRestore(namespace: \"team-b\", input: {{name: \"stolen\", backupName: \"{bob_secret}\"}}) {{ name }} }}"
        ),
        format!("mutation {{ deleteBackup(namespace: \"team-b\", name: \"{bob_secret}\") {{ name }} }}"),
        "mutation { createSchedule(namespace: \"team-b\", input: {name: \"s\", spec: {schedule: \"0 * * * *\", template: {backupSpec: {}}}}) { name } }".to_string(),
        "mutation { deleteSchedule(namespace: \"team-b\", name: \"s\") { name } }".to_string(),
    ];
    for operation in &team_b_operations {
        let answer = gql(&env, Some(&env.alice), operation, json!({})).await;
        assert_eq!(answer.status, StatusCode::OK, "{operation}");
        assert_eq!(
            answer.code(),
            "FORBIDDEN",
            "alice {operation}: {}",
            answer.text()
        );
        let message = answer.json()["errors"][0]["message"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(!message.contains(bob_secret), "{message}");
        seen_by_not_bob.push(answer.text());
    }
    // Nothing was written in team-b.
    assert_eq!(backup_names(&env.admin, "team-b").await, [bob_secret]);
    let restores: Api<NonAdminRestore> = Api::namespaced(env.admin.clone(), "team-b");
    assert!(
        restores
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    // The cluster queue and the dashboard counts show alice only her own namespace.
    let overview = gql(
        &env,
        Some(&env.alice),
        "{ queue { cluster { backups { pending running } mine { namespace name } } } phaseCounts { namespace backups { phase count } } }",
        json!({}),
    )
    .await;
    seen_by_not_bob.push(overview.text());
    let overview = overview.data();
    assert!(
        overview["queue"]["cluster"]["mine"]
            .as_array()
            .unwrap()
            .iter()
            .all(|item| item["namespace"] == "team-a")
    );
    assert_eq!(
        overview["phaseCounts"],
        json!([{"namespace": "team-a", "backups": [{"phase": "Completed", "count": 1}]}])
    );

    // --- bob: the mirror image.
    for operation in [
        format!("{{ backup(namespace: \"team-a\", name: \"{alice_secret}\") {{ name }} }}"),
        "{ backups(namespace: \"team-a\") { edges { node { name } } } }".to_string(),
        format!(
            "{{ describeBackup(namespace: \"team-a\", name: \"{alice_secret}\", details: true) {{ name }} }}"
        ),
        format!(
            "mutation {{ deleteBackup(namespace: \"team-a\", name: \"{alice_secret}\") {{ name }} }}"
        ),
    ] {
        let answer = gql(&env, Some(&env.bob), &operation, json!({})).await;
        assert_eq!(
            answer.code(),
            "FORBIDDEN",
            "bob {operation}: {}",
            answer.text()
        );
        seen_by_not_alice.push(answer.text());
    }
    let bob_view = gql(
        &env,
        Some(&env.bob),
        "{ namespaces { name } phaseCounts { namespace } backups(namespace: \"team-b\") { edges { node { name } } } }",
        json!({}),
    )
    .await;
    seen_by_not_alice.push(bob_view.text());
    let bob_view = bob_view.data();
    assert_eq!(bob_view["namespaces"], json!([{"name": "team-b"}]));
    assert_eq!(bob_view["phaseCounts"], json!([{"namespace": "team-b"}]));
    assert_eq!(edge_names(&bob_view["backups"]), [bob_secret]);

    // --- ci-bot: create/get/list backups in team-a; nothing else.
    let created = gql(
        &env,
        Some(&env.ci_bot),
        CREATE_BACKUP,
        json!({"ns": "team-a", "name": "ci-run-1"}),
    )
    .await;
    assert_eq!(created.data()["createBackup"]["namespace"], "team-a");
    for operation in [
        "mutation { deleteBackup(namespace: \"team-a\", name: \"ci-run-1\") { name } }",
        "mutation { createRestore(namespace: \"team-a\", input: {name: \"r\", backupName: \"ci-run-1\"}) { name } }",
        "{ restores(namespace: \"team-a\") { edges { node { name } } } }",
        "{ backups(namespace: \"team-b\") { edges { node { name } } } }",
    ] {
        let answer = gql(&env, Some(&env.ci_bot), operation, json!({})).await;
        assert_eq!(
            answer.code(),
            "FORBIDDEN",
            "ci-bot {operation}: {}",
            answer.text()
        );
        seen_by_not_bob.push(answer.text());
    }
    // A backup's restores need `list` on restores: ci-bot gets the backup with a FORBIDDEN
    // error on that field only.
    let partial = gql(
        &env,
        Some(&env.ci_bot),
        "{ backup(namespace: \"team-a\", name: \"ci-run-1\") { name restores { name } } }",
        json!({}),
    )
    .await;
    assert_eq!(partial.code(), "FORBIDDEN");
    assert_eq!(
        partial.json()["errors"][0]["path"],
        json!(["backup", "restores"])
    );
    assert!(
        backup_names(&env.admin, "team-a")
            .await
            .contains(&"ci-run-1".to_string())
    );

    // --- a user with no bindings: no namespaces, nothing readable.
    let nobody = gql(
        &env,
        Some(&env.nobody),
        "{ namespaces { name } phaseCounts { namespace } }",
        json!({}),
    )
    .await;
    seen_by_not_bob.push(nobody.text());
    seen_by_not_alice.push(nobody.text());
    assert_eq!(nobody.data(), json!({"namespaces": [], "phaseCounts": []}));
    for operation in [
        "{ backups(namespace: \"team-a\") { edges { node { name } } } }",
        "mutation { createBackup(namespace: \"team-a\", input: {name: \"x\"}) { name } }",
    ] {
        let answer = gql(&env, Some(&env.nobody), operation, json!({})).await;
        assert_eq!(answer.code(), "FORBIDDEN", "nobody {operation}");
        seen_by_not_alice.push(answer.text());
        seen_by_not_bob.push(answer.text());
    }

    // --- a bad token and no token: HTTP 401 with WWW-Authenticate and UNAUTHENTICATED.
    for token in [Some("not-a-token"), None] {
        let answer = gql(&env, token, "{ namespaces { name } }", json!({})).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
        assert_eq!(answer.headers["www-authenticate"], "Bearer realm=\"nac\"");
        assert_eq!(answer.code(), "UNAUTHENTICATED");
        assert!(answer.json().get("data").is_none());
        seen_by_not_alice.push(answer.text());
        seen_by_not_bob.push(answer.text());
    }
    // Mutations without a token write nothing.
    let answer = gql(
        &env,
        None,
        "mutation { createBackup(namespace: \"team-a\", input: {name: \"anon\"}) { name } }",
        json!({}),
    )
    .await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    assert!(
        !backup_names(&env.admin, "team-a")
            .await
            .contains(&"anon".to_string())
    );

    for text in &seen_by_not_bob {
        assert!(!text.contains(bob_secret), "leaked bob's backup: {text}");
    }
    for text in &seen_by_not_alice {
        assert!(
            !text.contains(alice_secret),
            "leaked alice's backup: {text}"
        );
    }
}

const CHANGES: &str =
    "subscription { changes { kind id namespace resource name phase namespaces } }";

async fn subscriptions_follow_a_mutation_to_completed_and_stay_isolated(cluster: TestCluster) {
    let env = env(cluster).await;
    // alice: token in the connection_init payload (Authorization form).
    let mut alice = Ws::open(
        env.addr(),
        json!({"Authorization": format!("Bearer {}", env.alice)}),
    )
    .await;
    alice.subscribe("1", CHANGES).await;
    let ready = alice.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!(ready["type"], "next", "{ready}");
    assert_eq!(ready["id"], "1");
    assert_eq!(ready["payload"]["data"]["changes"]["kind"], "READY");
    assert_eq!(
        ready["payload"]["data"]["changes"]["namespaces"],
        json!(["team-a"])
    );
    // bob: token in the upgrade request's header.
    let mut bob = Ws::connect(env.addr(), Some(&env.bob)).await.unwrap();
    assert!(matches!(bob.init(json!({})).await, Frame::Text(t) if t.contains("connection_ack")));
    bob.subscribe("b", CHANGES).await;
    let ready = bob.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!(
        ready["payload"]["data"]["changes"]["namespaces"],
        json!(["team-b"])
    );
    // bob asking for team-a explicitly is refused with FORBIDDEN, then completed.
    bob.subscribe(
        "b2",
        "subscription { changes(namespaces: [\"team-a\"]) { kind name } }",
    )
    .await;
    let refused = bob.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!(refused["id"], "b2");
    assert_eq!(
        refused["payload"]["errors"][0]["extensions"]["code"],
        "FORBIDDEN"
    );
    let complete = bob.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!(complete, json!({"id": "b2", "type": "complete"}));
    // Engine errors over WebSocket carry codes too.
    bob.subscribe("b3", "subscription { secrets { name } }")
        .await;
    let unknown = bob.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!(
        unknown["payload"]["errors"][0]["extensions"]["code"], "BAD_REQUEST",
        "{unknown}"
    );
    assert_eq!(
        bob.next(Duration::from_secs(10)).await.unwrap(),
        json!({"id": "b3", "type": "complete"})
    );
    // A user with no bindings ({"token": ...} form): a stream over nothing.
    let mut nobody = Ws::open(env.addr(), json!({"token": env.nobody})).await;
    nobody.subscribe("n", CHANGES).await;
    let ready = nobody.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!(ready["payload"]["data"]["changes"]["namespaces"], json!([]));

    // No token anywhere: the connection is closed at connection_init.
    let mut anonymous = Ws::connect(env.addr(), None).await.unwrap();
    match anonymous.init(json!({})).await {
        Frame::Close(code, reason) => {
            assert_eq!(code, 1002);
            assert!(reason.contains("bearer token"), "{reason}");
        }
        Frame::Text(text) => panic!("anonymous connection accepted: {text}"),
    }
    // A bad token in the payload: closed too; in the upgrade header: 401 before upgrading.
    let mut forged = Ws::connect(env.addr(), None).await.unwrap();
    assert!(matches!(
        forged.init(json!({"token": "forged"})).await,
        Frame::Close(1002, _)
    ));
    assert_eq!(
        Ws::connect(env.addr(), Some("forged")).await.err(),
        Some(401)
    );

    // alice creates a backup by mutation; it reaches Completed, and her subscription sees it.
    let name = "nightly-by-graphql";
    create_completed(&env, &env.alice, "team-a", name).await;
    let mut phases = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !phases.iter().any(|p| p == "Completed") {
        let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
        let Some(message) = alice.next(remaining).await else {
            panic!("alice's subscription missed the completion; saw {phases:?}");
        };
        let change = &message["payload"]["data"]["changes"];
        assert_eq!(change["namespace"], "team-a", "{message}");
        if change["name"] == name {
            assert_eq!(change["resource"], "BACKUPS");
            // Opaque: no `<epoch>-<sequence>` of a cluster-wide log.
            let id = change["id"].as_str().unwrap();
            let counter = id.split_once('-').is_some_and(|(epoch, sequence)| {
                epoch.len() == 8 && sequence.chars().all(|c| c.is_ascii_digit())
            });
            assert!(id.len() >= 40 && !counter, "{id}");
            if let Some(phase) = change["phase"].as_str() {
                phases.push(phase.to_string());
            }
        }
    }
    assert!(
        phases
            .iter()
            .any(|p| p == "New" || p == "InProgress" || p == "Created")
    );

    // Restore from it and follow the DataLoader-backed relations both ways.
    let restore = gql(
        &env,
        Some(&env.alice),
        "mutation($b: String!) { createRestore(namespace: \"team-a\", input: {name: \"undo\", backupName: $b}) { name backupName } }",
        json!({"b": name}),
    )
    .await;
    assert_eq!(restore.data()["createRestore"]["backupName"], name);
    let relations = gql(
        &env,
        Some(&env.alice),
        "{ restores(namespace: \"team-a\") { edges { node { name backup { name phase restores { name } } } } } }",
        json!({}),
    )
    .await
    .data();
    let node = &relations["restores"]["edges"][0]["node"];
    assert_eq!(node["name"], "undo");
    assert_eq!(node["backup"]["name"], name);
    assert_eq!(node["backup"]["phase"], "Completed");
    assert_eq!(node["backup"]["restores"], json!([{"name": "undo"}]));

    // bob and the user with no bindings heard nothing of team-a.
    for ws in [&mut bob, &mut nobody] {
        while let Some(message) = ws.next(Duration::from_millis(500)).await {
            let text = message.to_string();
            assert!(!text.contains("team-a") && !text.contains(name), "{text}");
        }
    }
}

/// Reads frames until the socket closes (or `limit`): the text frames, and the close.
async fn until_closed(ws: &mut Ws, limit: Duration) -> (Vec<Value>, Option<(u16, String)>) {
    let deadline = tokio::time::Instant::now() + limit;
    let mut texts = Vec::new();
    loop {
        let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
        match tokio::time::timeout(remaining, ws.frame()).await {
            Ok(Some(Frame::Text(text))) => texts.push(serde_json::from_str(&text).unwrap()),
            Ok(Some(Frame::Close(code, reason))) => return (texts, Some((code, reason))),
            Ok(None) | Err(_) => return (texts, None),
        }
    }
}

/// One socket, many operations: each draws from the caller's rate limit as an HTTP request
/// does; over it, RATE_LIMITED (not run), and a socket that keeps going is closed with 4429.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_on_a_websocket_is_rate_limited() {
    const BURST: u32 = 5;
    let env = env_with(TestCluster::emulator().await, |config| {
        config.rate_limit.burst = BURST;
        config.rate_limit.per_second = 0.01;
    })
    .await;
    let mut ws = Ws::open(env.addr(), json!({"token": env.alice})).await;
    const SENT: usize = 300;
    for n in 0..SENT {
        ws.subscribe(&format!("q{n}"), "{ viewer { username } }")
            .await;
    }
    let (texts, closed) = until_closed(&mut ws, Duration::from_secs(30)).await;
    let answered: Vec<&Value> = texts
        .iter()
        .filter(|m| m["type"] == "next" && m["payload"]["data"]["viewer"]["username"] == "alice")
        .collect();
    let limited: Vec<&Value> = texts
        .iter()
        .filter(|m| m["payload"]["errors"][0]["extensions"]["code"] == "RATE_LIMITED")
        .collect();
    // connection_init took one from the bucket; the rest of the burst runs.
    assert!(
        !answered.is_empty() && answered.len() < BURST as usize,
        "{} operations ran",
        answered.len()
    );
    assert!(!limited.is_empty(), "no operation was rate limited");
    let retry = limited[0]["payload"]["errors"][0]["extensions"]["retryAfterSeconds"]
        .as_u64()
        .unwrap();
    assert!(retry >= 1);
    // Each refused operation is completed, never run.
    let refused_id = limited[0]["id"].as_str().unwrap();
    assert!(
        texts
            .iter()
            .any(|m| m["id"] == refused_id && m["type"] == "complete")
    );
    assert_eq!(
        closed.as_ref().map(|(code, _)| *code),
        Some(4429),
        "{closed:?}"
    );
    assert!(answered.len() + limited.len() < SENT);
    // The limit is the caller's, not the socket's: HTTP is over it too.
    let answer = gql(&env, Some(&env.alice), "{ viewer { username } }", json!({})).await;
    assert_eq!(answer.status, StatusCode::TOO_MANY_REQUESTS);
}

/// One user's live streams are capped across SSE and subscriptions together: over the cap, a
/// new event stream answers 429 problem+json `too-many-streams` and a new subscription errors
/// RATE_LIMITED (reason `too-many-streams`), while the open ones keep delivering (the object
/// as REST presents it), other users are not affected, and closing a stream frees its slot.
async fn live_streams_are_capped_per_user_across_sse_and_subscriptions(cluster: TestCluster) {
    use tower::ServiceExt as _;
    let env = env_with(cluster, |config| config.service.max_streams_per_user = 2).await;
    let sse = |token: &str| {
        let request = Request::get("/api/v1/namespaces/team-a/events")
            .header("authorization", format!("Bearer {token}"))
            .body(Body::empty())
            .unwrap();
        env.router.clone().oneshot(request)
    };
    let first = sse(&env.alice).await.unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    let mut ws = Ws::open(env.addr(), json!({"token": env.alice})).await;
    ws.subscribe("s1", "subscription { changes { kind name object } }")
        .await;
    let ready = ws.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!(
        ready["payload"]["data"]["changes"]["kind"], "READY",
        "{ready}"
    );

    // The third stream, either way, is refused.
    let refused = sse(&env.alice).await.unwrap();
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        refused.headers()["content-type"],
        "application/problem+json"
    );
    let problem: Value = serde_json::from_slice(
        &axum::body::to_bytes(refused.into_body(), 1 << 20)
            .await
            .unwrap(),
    )
    .unwrap();
    assert!(
        problem["type"]
            .as_str()
            .unwrap()
            .ends_with("too-many-streams"),
        "{problem}"
    );
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("2 live streams"),
        "{problem}"
    );
    ws.subscribe("s2", CHANGES).await;
    let error = ws.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!(error["id"], "s2", "{error}");
    assert_eq!(
        error["payload"]["errors"][0]["extensions"]["code"], "RATE_LIMITED",
        "{error}"
    );
    assert_eq!(
        error["payload"]["errors"][0]["extensions"]["reason"], "too-many-streams",
        "{error}"
    );
    assert_eq!(
        ws.next(Duration::from_secs(10)).await.unwrap(),
        json!({"id": "s2", "type": "complete"})
    );
    // Another user has their own slots.
    let bob = Request::get("/api/v1/namespaces/team-b/events")
        .header("authorization", format!("Bearer {}", env.bob))
        .body(Body::empty())
        .unwrap();
    assert_eq!(
        env.router.clone().oneshot(bob).await.unwrap().status(),
        StatusCode::OK
    );

    // The open subscription still delivers, with the object as REST presents it.
    let name = "capped-streams";
    create_backup(&env, &env.alice, "team-a", name).await;
    let added = loop {
        let message = ws
            .next(Duration::from_secs(20))
            .await
            .expect("the open subscription delivers the new backup");
        if message["payload"]["data"]["changes"]["name"] == name {
            break message;
        }
    };
    let object = &added["payload"]["data"]["changes"]["object"];
    assert_eq!(object["metadata"]["name"], name, "{added}");
    assert_eq!(object["metadata"]["namespace"], "team-a", "{added}");
    assert!(object["metadata"].get("managedFields").is_none(), "{added}");
    let rest = send(
        &env.router,
        Request::get(format!("/api/v1/namespaces/team-a/backups/{name}"))
            .header("authorization", format!("Bearer {}", env.alice))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(rest.status, StatusCode::OK);
    assert_eq!(rest.json()["metadata"]["uid"], object["metadata"]["uid"]);

    // Closing the event stream frees its slot.
    drop(first);
    eventually_seen("a closed stream's slot to be freed", 10, || async {
        let again = sse(&env.alice).await.unwrap();
        if again.status() == StatusCode::OK {
            return Ok(());
        }
        assert_eq!(again.status(), StatusCode::TOO_MANY_REQUESTS);
        Err("a closed stream's slot was not freed")
    })
    .await;
}

/// A socket whose token stops being valid (its service account is deleted; its RoleBinding,
/// and so every access review, stays) is closed with 4401 within the token-cache TTL, its
/// subscription ending UNAUTHENTICATED if it notices first.
async fn a_websocket_closes_when_its_token_is_no_longer_valid(cluster: TestCluster) {
    const TOKEN_TTL: Duration = Duration::from_secs(2);
    let env = env_with(cluster, |config| config.authn.success_ttl = TOKEN_TTL).await;
    let name = env.cluster.unique_name("socket", None);
    let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(env.admin.clone(), "team-a");
    accounts
        .create(
            &kube::api::PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": name}})).unwrap(),
        )
        .await
        .unwrap();
    env.cluster
        .bind("team-a", &name, "ServiceAccount", "view")
        .await;
    let token = env.cluster.sa_token("team-a", &name).await;
    let mut ws = Ws::open(env.addr(), json!({"token": token})).await;
    ws.subscribe("s", CHANGES).await;
    let ready = ws.next(Duration::from_secs(10)).await.unwrap();
    assert_eq!(
        ready["payload"]["data"]["changes"]["kind"], "READY",
        "{ready}"
    );
    assert_eq!(
        ready["payload"]["data"]["changes"]["namespaces"],
        json!(["team-a"])
    );
    accounts
        .delete(&name, &kube::api::DeleteParams::default())
        .await
        .unwrap();
    let (texts, closed) = until_closed(&mut ws, TOKEN_TTL + Duration::from_secs(12)).await;
    assert_eq!(
        closed.as_ref().map(|(code, _)| *code),
        Some(4401),
        "{closed:?} after {texts:?}"
    );
    for message in &texts {
        if let Some(code) = message["payload"]["errors"][0]["extensions"]["code"].as_str() {
            assert_eq!(code, "UNAUTHENTICATED", "{message}");
        }
    }
    // A new socket with it is refused at connection_init.
    let mut again = Ws::connect(env.addr(), None).await.unwrap();
    assert!(matches!(
        again.init(json!({"token": token})).await,
        Frame::Close(..)
    ));
}

async fn paging_limits_and_error_codes(cluster: TestCluster) {
    let env = env(cluster).await;
    let names = ["p-a", "p-b", "p-c", "p-d", "p-e"];
    for name in names {
        create_backup(&env, &env.alice, "team-a", name).await;
    }
    const PAGE: &str = "query($after: String, $first: Int, $phase: String) { backups(namespace: \"team-a\", first: $first, after: $after, phase: $phase) { edges { cursor node { name } } pageInfo { hasNextPage hasPreviousPage endCursor } } }";

    // Forward paging with endCursor visits every backup once, in name order.
    let mut seen = Vec::new();
    let mut after = Value::Null;
    let mut pages = 0;
    loop {
        let data = gql(
            &env,
            Some(&env.alice),
            PAGE,
            json!({"after": after, "first": 2}),
        )
        .await
        .data();
        let connection = &data["backups"];
        pages += 1;
        assert_eq!(connection["pageInfo"]["hasPreviousPage"], json!(pages > 1));
        seen.extend(edge_names(connection));
        if connection["pageInfo"]["hasNextPage"] != json!(true) {
            break;
        }
        after = connection["pageInfo"]["endCursor"].clone();
    }
    assert_eq!(seen, names);
    assert_eq!(pages, 3);

    // Resuming after any edge's cursor (not only the last of a page) continues right after it.
    let first = gql(&env, Some(&env.alice), PAGE, json!({"first": 3}))
        .await
        .data();
    let middle = first["backups"]["edges"][1]["cursor"].clone();
    let resumed = gql(
        &env,
        Some(&env.alice),
        PAGE,
        json!({"after": middle, "first": 2}),
    )
    .await
    .data();
    assert_eq!(edge_names(&resumed["backups"]), ["p-c", "p-d"]);
    assert_eq!(resumed["backups"]["pageInfo"]["hasNextPage"], true);
    // The last edge of the last page: nothing after it.
    let all = gql(&env, Some(&env.alice), PAGE, json!({"first": 10}))
        .await
        .data();
    assert_eq!(all["backups"]["pageInfo"]["hasNextPage"], false);
    let last = all["backups"]["edges"][4]["cursor"].clone();
    let after_last = gql(&env, Some(&env.alice), PAGE, json!({"after": last}))
        .await
        .data();
    assert_eq!(edge_names(&after_last["backups"]), Vec::<String>::new());
    assert_eq!(after_last["backups"]["pageInfo"]["hasNextPage"], false);

    // Bad cursors: garbage, and a real cursor replayed with other filters.
    let garbage = gql(
        &env,
        Some(&env.alice),
        PAGE,
        json!({"after": "bm90LWEtY3Vyc29y"}),
    )
    .await;
    assert_eq!(garbage.code(), "BAD_REQUEST");
    let two = gql(&env, Some(&env.alice), PAGE, json!({"first": 2}))
        .await
        .data();
    let replayed = gql(
        &env,
        Some(&env.alice),
        PAGE,
        json!({"after": two["backups"]["pageInfo"]["endCursor"], "phase": "Completed"}),
    )
    .await;
    assert_eq!(replayed.code(), "BAD_REQUEST", "{}", replayed.text());
    let zero = gql(&env, Some(&env.alice), PAGE, json!({"first": 0})).await;
    assert_eq!(zero.code(), "BAD_REQUEST");

    // Depth: a query nested beyond the limit is refused before anything runs.
    let deep = "{ __schema { types { fields { type { ofType { ofType { ofType { ofType { ofType { ofType { ofType { ofType { name } } } } } } } } } } } } }";
    let answer = gql(&env, Some(&env.alice), deep, json!({})).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.code(), "QUERY_TOO_DEEP", "{}", answer.text());
    assert!(answer.json()["data"].is_null());
    // Complexity: 500 backups with several fields each is over budget; a modest page is not.
    let huge = "{ backups(namespace: \"team-a\", first: 500) { edges { cursor node { name namespace phase requestPhase veleroPhase } } } }";
    let answer = gql(&env, Some(&env.alice), huge, json!({})).await;
    assert_eq!(answer.code(), "QUERY_TOO_COMPLEX", "{}", answer.text());
    let modest = "{ backups(namespace: \"team-a\", first: 50) { edges { node { name phase } } } }";
    assert_eq!(
        edge_names(&gql(&env, Some(&env.alice), modest, json!({})).await.data()["backups"]).len(),
        5
    );
    // Many aliases of an expensive field add up too.
    let aliases: String = (0..100)
        .map(|i| format!("a{i}: describeBackup(namespace: \"team-a\", name: \"p-a\") {{ name }} "))
        .collect();
    let answer = gql(
        &env,
        Some(&env.alice),
        &format!("{{ {aliases} }}"),
        json!({}),
    )
    .await;
    assert_eq!(answer.code(), "QUERY_TOO_COMPLEX");

    // Validation refusals: INVALID with field errors; a taken name: CONFLICT; missing: NOT_FOUND.
    let invalid = gql(
        &env,
        Some(&env.alice),
        "mutation { createBackup(namespace: \"team-a\", input: {name: \"wide\", spec: {backupSpec: {includedNamespaces: [\"team-b\"]}}}) { name } }",
        json!({}),
    )
    .await;
    assert_eq!(invalid.code(), "INVALID", "{}", invalid.text());
    let extensions = &invalid.json()["errors"][0]["extensions"];
    assert_eq!(
        extensions["fieldErrors"][0]["field"],
        "spec.backupSpec.includedNamespaces"
    );
    assert!(
        !backup_names(&env.admin, "team-a")
            .await
            .contains(&"wide".to_string())
    );
    let taken = gql(
        &env,
        Some(&env.alice),
        CREATE_BACKUP,
        json!({"ns": "team-a", "name": "p-a"}),
    )
    .await;
    assert_eq!(taken.code(), "CONFLICT");
    let missing = gql(
        &env,
        Some(&env.alice),
        BACKUP_PHASE,
        json!({"ns": "team-a", "name": "no-such"}),
    )
    .await;
    assert_eq!(missing.code(), "NOT_FOUND");
    // Malformed requests: a syntax error, an unknown field, a bad namespace, a non-JSON body.
    let syntax = gql(&env, Some(&env.alice), "{ namespaces { name ", json!({})).await;
    assert_eq!(syntax.code(), "BAD_REQUEST");
    let unknown = gql(&env, Some(&env.alice), "{ secrets { name } }", json!({})).await;
    assert_eq!(unknown.code(), "BAD_REQUEST");
    let bad_ns = gql(
        &env,
        Some(&env.alice),
        "{ backups(namespace: \"Team_A/..\") { edges { cursor } } }",
        json!({}),
    )
    .await;
    assert_eq!(bad_ns.code(), "BAD_REQUEST");
    let not_json = post(&env, Some(&env.alice), b"{not json".to_vec()).await;
    assert_eq!(not_json.status, StatusCode::BAD_REQUEST);
    assert_eq!(not_json.code(), "BAD_REQUEST");
    let batch = post(
        &env,
        Some(&env.alice),
        br#"[{"query": "{ viewer { username } }"}]"#.to_vec(),
    )
    .await;
    assert_eq!(batch.status, StatusCode::BAD_REQUEST);

    // The console page is self-contained.
    let page = send(
        &env.router,
        Request::get("/graphql").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(page.status, StatusCode::OK);
    let csp = page.header("content-security-policy").unwrap();
    assert!(csp.contains("default-src 'none'"));
    assert!(!page.text().contains("https://"));
}

on_both_servers!(
    isolation_matrix_over_queries_and_mutations,
    subscriptions_follow_a_mutation_to_completed_and_stay_isolated,
    a_websocket_closes_when_its_token_is_no_longer_valid,
    paging_limits_and_error_codes,
    live_streams_are_capped_per_user_across_sse_and_subscriptions,
);
