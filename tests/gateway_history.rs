//! The gateway's operation history (REST `/history`, `/stats`, `/coverage`; GraphQL
//! `history`, `operation`, `stats`, `coverage`) against the in-process emulator, with a SQLite
//! history store seeded directly through `HistoryStore::record`: alice reads team-a's history
//! (every row once across pages, filters, one timeline, statistics, coverage), including an
//! operation whose NonAdminBackup is gone; bob gets the same 403 for an existing and a made-up
//! operation of team-a over REST and GraphQL; bad parameters are refused naming them; a
//! removed RoleBinding stops access; requesters are recorded on creates; queue items carry an
//! ETA from the history; and a history store that is down answers 503 for reads and
//! Idempotency-Key creates while plain creates and queue views go on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/gateway.rs"]
mod gateway_support;
mod support;
use gateway_support::{Answer, GatewayEnv, GatewayEnvBuilder};
use support::cluster::eventually_seen;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use http::{Method, StatusCode};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use nac::history::{
    Coverage, EpochMillis, HistoryError, HistoryStore, IdempotencyAnswer, IdempotencyState,
    ManifestPut, ManifestSummary, ManifestTarget, NamespaceIdentity, NamespaceStats, Observation,
    OperationCursor, OperationFilter, OperationKind, OperationPage, OperationRecord, SharedHistory,
    StoreFuture, StoredManifest, StoredTransition, TenantNamespace, TimeWindow, Transition,
    now_millis,
};
use nac::sim::demo::OADP_NAMESPACE;
use serde_json::{Value, json};

const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;
const DAY: i64 = 24 * HOUR;

/// Each case's gateway: the shared harness on a fresh emulator with short access caches, no
/// controllers (the history is seeded directly).
type Env = GatewayEnv;

/// The gateway over `history` instead of a fresh SQLite store.
async fn env_with(history: SharedHistory) -> Env {
    builder().await.history(history).start().await
}

async fn env() -> Env {
    builder().await.start().await
}

/// The emulator and the gateway's configuration both kinds of case share.
async fn builder() -> GatewayEnvBuilder {
    GatewayEnv::emulator()
        .await
        .config(gateway_support::config_short_ttls())
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

async fn get(env: &Env, path: &str, token: Option<&str>) -> Answer {
    call_with(env, Method::GET, path, token, None, &[]).await
}

async fn gql(env: &Env, token: &str, query: &str, variables: Value) -> Value {
    let answer = call_with(
        env,
        Method::POST,
        "/graphql",
        Some(token),
        Some(json!({"query": query, "variables": variables})),
        &[],
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    answer.json()
}

fn data(answer: &Value) -> &Value {
    assert!(
        answer.get("errors").is_none(),
        "unexpected errors: {answer}"
    );
    &answer["data"]
}

fn error_code(answer: &Value) -> &str {
    answer["errors"][0]["extensions"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("no error code: {answer}"))
}

// ---- seeding -------------------------------------------------------------------------------

/// Namespace `ns` of the emulator as the history store's reads name it (name and UID).
async fn tenant(env: &Env, ns: &str) -> TenantNamespace {
    let uid = Api::<k8s_openapi::api::core::v1::Namespace>::all(env.admin.clone())
        .get(ns)
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    TenantNamespace::new(ns, uid).unwrap()
}

fn uid(group: u32, n: u32) -> String {
    format!("6c1c7c2e-0000-4000-8{group:03}-{n:012}")
}

#[allow(clippy::too_many_arguments)]
fn finished(
    namespace: &str,
    id: String,
    kind: OperationKind,
    name: &str,
    created_at: EpochMillis,
    duration_ms: i64,
    phase: &str,
    parent: Option<&str>,
) -> OperationRecord {
    let started = created_at + 1_000;
    OperationRecord {
        id: id.clone(),
        namespace: namespace.to_string(),
        kind: Some(kind),
        name: name.to_string(),
        uid: id,
        velero_name: Some(format!("{name}-velero")),
        parent_name: parent.map(str::to_string),
        created_at,
        started_at: Some(started),
        completed_at: Some(started + duration_ms),
        phase: Some(phase.to_string()),
        phase_rank: 100,
        nac_phase: Some("Created".into()),
        items_total: Some(10),
        items_done: Some(10),
        warnings: Some(0),
        errors: Some(u32::from(phase != "Completed").into()),
        failure_reason: (phase != "Completed").then(|| "volume snapshot failed".to_string()),
        queue_position: Some(0),
        ..OperationRecord::default()
    }
}

fn transition(op: &OperationRecord, at: EpochMillis, attribute: &str, value: &str) -> Transition {
    Transition {
        operation_id: op.id.clone(),
        namespace: op.namespace.clone(),
        at,
        attribute: attribute.to_string(),
        value: value.to_string(),
        reason: None,
        message: None,
        dedup: String::new(),
    }
}

/// What was seeded, for the expectations.
struct Seeded {
    base: EpochMillis,
    /// Every team-a operation.
    team_a: Vec<OperationRecord>,
    /// The team-a backup whose NonAdminBackup is gone.
    gone: OperationRecord,
    /// A team-b backup.
    team_b: OperationRecord,
}

const NIGHTLY: u32 = 30;

/// team-a: 30 nightly backups a minute apart (every fifth Failed), 3 restores after them, 4
/// `hourly` schedule runs (the newest Failed) and 2 `daily` ones half a day before, and a
/// backup deleted from the cluster a day before; team-b: 2 backups.
async fn seed(env: &Env) -> Seeded {
    let history = &env.history;
    let base = now_millis() - 3 * DAY;
    let mut batch = Vec::new();
    let mut team_a = Vec::new();
    for i in 0..NIGHTLY {
        let phase = if i % 5 == 4 { "Failed" } else { "Completed" };
        team_a.push(finished(
            "team-a",
            uid(1, i),
            OperationKind::Backup,
            &format!("nightly-{i:02}"),
            base + i64::from(i) * MINUTE,
            10_000 + i64::from(i) * 1_000,
            phase,
            None,
        ));
    }
    for j in 0..3 {
        team_a.push(finished(
            "team-a",
            uid(2, j),
            OperationKind::Restore,
            &format!("restore-{j}"),
            base + 40 * MINUTE + i64::from(j) * MINUTE,
            5_000,
            "Completed",
            Some("nightly-00"),
        ));
    }
    for k in 0..4 {
        let phase = if k == 3 { "Failed" } else { "Completed" };
        team_a.push(finished(
            "team-a",
            uid(3, k),
            OperationKind::ScheduleRun,
            &format!("hourly-{k}"),
            base - 12 * HOUR + i64::from(k) * HOUR,
            20_000,
            phase,
            Some("hourly"),
        ));
    }
    for d in 0..2 {
        team_a.push(finished(
            "team-a",
            uid(4, d),
            OperationKind::ScheduleRun,
            &format!("daily-{d}"),
            base - 20 * HOUR + i64::from(d) * HOUR,
            30_000,
            "Completed",
            Some("daily"),
        ));
    }
    for op in &team_a {
        batch.push(Observation {
            operation: op.clone(),
            transitions: vec![transition(
                op,
                op.completed_at.unwrap(),
                "veleroPhase",
                op.phase.as_deref().unwrap(),
            )],
        });
    }
    let mut gone = finished(
        "team-a",
        uid(5, 0),
        OperationKind::Backup,
        "gone-backup",
        base - DAY,
        15_000,
        "Completed",
        None,
    );
    gone.deleted_at = Some(base - DAY + HOUR);
    gone.requester = Some("alice".into());
    let created = gone.created_at;
    let mut accepted = transition(&gone, created, "condition/Accepted", "True");
    accepted.reason = Some("BackupAccepted".into());
    accepted.message = Some("backup accepted".into());
    batch.push(Observation {
        operation: gone.clone(),
        transitions: vec![
            transition(&gone, created, "phase", "New"),
            accepted,
            transition(&gone, created + 1_000, "veleroPhase", "InProgress"),
            transition(&gone, created + 16_000, "veleroPhase", "Completed"),
            transition(&gone, created + HOUR, "deleted", "true"),
        ],
    });
    team_a.push(gone.clone());
    let mut team_b = Vec::new();
    for n in 0..2 {
        team_b.push(finished(
            "team-b",
            uid(6, n),
            OperationKind::Backup,
            &format!("secret-b-{n}"),
            base + i64::from(n) * MINUTE,
            10_000,
            "Completed",
            None,
        ));
    }
    for op in &team_b {
        batch.push(Observation {
            operation: op.clone(),
            transitions: vec![transition(op, op.created_at, "phase", "New")],
        });
    }
    // Recorded in the namespaces as they are now (as the recorder attributes them).
    let uid_a = tenant(env, "team-a").await.uid().to_string();
    let uid_b = tenant(env, "team-b").await.uid().to_string();
    let uid_of = |ns: &str| {
        if ns == "team-a" {
            uid_a.clone()
        } else {
            uid_b.clone()
        }
    };
    for o in &mut batch {
        o.operation.namespace_uid = uid_of(&o.operation.namespace);
    }
    for o in team_a.iter_mut().chain(team_b.iter_mut()) {
        o.namespace_uid = uid_of(&o.namespace);
    }
    gone.namespace_uid = uid_a.clone();
    history.record(batch).await.unwrap();
    Seeded {
        base,
        team_a,
        gone,
        team_b: team_b.remove(0),
    }
}

fn ids_of(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items: {page}"))
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_string())
        .collect()
}

/// Every page of `path` (which has no query of its own besides `?…&`), following `continue`.
async fn all_pages(env: &Env, path: &str, token: &str) -> (Vec<String>, usize) {
    let mut ids = Vec::new();
    let mut pages = 0;
    let mut next: Option<String> = None;
    loop {
        let url = match &next {
            Some(token) => format!("{path}&continue={token}"),
            None => path.to_string(),
        };
        let answer = get(env, &url, Some(token)).await;
        assert_eq!(answer.status, StatusCode::OK, "{url}: {}", answer.text());
        let page = answer.json();
        ids.extend(ids_of(&page));
        pages += 1;
        match page.get("continue").and_then(Value::as_str) {
            Some(token) => next = Some(token.to_string()),
            None => return (ids, pages),
        }
        assert!(pages < 100, "paging does not end");
    }
}

// ---- tests ---------------------------------------------------------------------------------

#[tokio::test]
async fn alice_reads_team_a_history_pages_filters_timeline_stats_and_coverage() {
    let env = env().await;
    let seeded = seed(&env).await;
    let total = seeded.team_a.len();

    // Paging: every row exactly once, newest first, across pages of 7.
    let (ids, pages) = all_pages(
        &env,
        "/api/v1/namespaces/team-a/history?limit=7",
        &env.alice,
    )
    .await;
    assert_eq!(ids.len(), total, "{ids:?}");
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), total);
    assert_eq!(pages, total.div_ceil(7));
    let mut expected: Vec<&OperationRecord> = seeded.team_a.iter().collect();
    expected.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
    assert_eq!(
        ids,
        expected.iter().map(|o| o.id.clone()).collect::<Vec<_>>()
    );
    assert!(!ids.contains(&seeded.team_b.id));

    // The shape: camelCase, RFC 3339 times, durationMs.
    let first = get(
        &env,
        "/api/v1/namespaces/team-a/history?limit=1",
        Some(&env.alice),
    )
    .await;
    let page = first.json();
    let newest = &page["items"][0];
    assert_eq!(newest["name"], "restore-2");
    assert_eq!(newest["kind"], "restore");
    assert_eq!(newest["parentName"], "nightly-00");
    assert_eq!(newest["veleroName"], "restore-2-velero");
    assert_eq!(newest["durationMs"], 5_000);
    assert_eq!(newest["phaseRank"], 100);
    assert_eq!(newest["itemsDone"], 10);
    let created = newest["createdAt"].as_str().unwrap();
    assert!(created.ends_with('Z') && created.contains('T'), "{created}");
    assert!(newest["startedAt"].is_string() && newest["completedAt"].is_string());
    assert!(newest["deletedAt"].is_null());
    assert!(page["continue"].is_string());

    // Filters.
    let count = |query: &'static str| {
        let env = &env;
        async move {
            let (ids, _) = all_pages(
                env,
                &format!("/api/v1/namespaces/team-a/history?limit=500&{query}"),
                &env.alice,
            )
            .await;
            ids.len()
        }
    };
    assert_eq!(count("kind=restore").await, 3);
    assert_eq!(count("kind=backup").await, 31);
    assert_eq!(count("kind=backup,restore").await, 34);
    assert_eq!(count("kind=backup&kind=schedule_run").await, 37);
    assert_eq!(count("kind=schedule_run&phase=Failed").await, 1);
    assert_eq!(count("kind=backup&phase=failed").await, 6);
    assert_eq!(count("phase=Completed,Failed").await, total);
    assert_eq!(count("q=SNAPSHOT").await, 7);
    assert_eq!(count("q=nightly-0").await, 10);
    assert_eq!(count("kind=download").await, 0);
    let since = nac::gateway::operations::rfc3339(seeded.base + 10 * MINUTE);
    let until = nac::gateway::operations::rfc3339(seeded.base + 20 * MINUTE);
    let window = format!(
        "/api/v1/namespaces/team-a/history?limit=500&since={}&until={}",
        since.replace('+', "%2B"),
        until.replace('+', "%2B")
    );
    let (in_window, _) = all_pages(&env, &window, &env.alice).await;
    assert_eq!(in_window.len(), 10, "{in_window:?}");

    // An operation whose NonAdminBackup is gone is still served, with its timeline.
    let nabs: Api<nac::api::nonadmin::NonAdminBackup> =
        Api::namespaced(env.admin.clone(), "team-a");
    assert!(nabs.get_opt("gone-backup").await.unwrap().is_none());
    let detail = get(
        &env,
        &format!("/api/v1/namespaces/team-a/history/{}", seeded.gone.id),
        Some(&env.alice),
    )
    .await;
    assert_eq!(detail.status, StatusCode::OK, "{}", detail.text());
    let detail = detail.json();
    assert_eq!(detail["operation"]["name"], "gone-backup");
    assert_eq!(detail["operation"]["requester"], "alice");
    assert!(detail["operation"]["deletedAt"].is_string(), "{detail}");
    let timeline = detail["timeline"].as_array().unwrap();
    let facts: Vec<(String, String)> = timeline
        .iter()
        .map(|t| {
            (
                t["attribute"].as_str().unwrap().to_string(),
                t["value"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(facts.len(), 5, "{detail}");
    assert_eq!(
        facts.last().unwrap(),
        &("deleted".to_string(), "true".to_string())
    );
    assert!(facts.contains(&("veleroPhase".into(), "Completed".into())));
    let accepted = timeline
        .iter()
        .find(|t| t["attribute"] == "condition/Accepted")
        .unwrap();
    assert_eq!(accepted["reason"], "BackupAccepted");
    assert_eq!(accepted["message"], "backup accepted");
    let deleted = timeline
        .iter()
        .find(|t| t["attribute"] == "deleted")
        .unwrap();
    assert!(deleted.get("reason").is_none() && deleted.get("message").is_none());
    let ats: Vec<&str> = timeline.iter().map(|t| t["at"].as_str().unwrap()).collect();
    assert!(ats.windows(2).all(|w| w[0] <= w[1]), "{ats:?}");

    // An unknown id in a readable namespace: 404 problem.
    let missing = get(
        &env,
        "/api/v1/namespaces/team-a/history/00000000-0000-4000-8000-000000000000",
        Some(&env.alice),
    )
    .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert!(missing.is_problem());
    // team-b's operation asked for in team-a is simply not there.
    let elsewhere = get(
        &env,
        &format!("/api/v1/namespaces/team-a/history/{}", seeded.team_b.id),
        Some(&env.alice),
    )
    .await;
    assert_eq!(elsewhere.status, StatusCode::NOT_FOUND);

    // Statistics of the default window (the last 7 days: everything seeded).
    let stats = get(&env, "/api/v1/namespaces/team-a/stats", Some(&env.alice)).await;
    assert_eq!(stats.status, StatusCode::OK, "{}", stats.text());
    let stats = stats.json();
    assert_eq!(stats["namespace"], "team-a");
    assert!(stats["from"].as_str().unwrap().ends_with('Z'));
    let kind = |name: &str| {
        stats["kinds"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["kind"] == name)
            .unwrap_or_else(|| panic!("no {name} in {stats}"))
            .clone()
    };
    let backups = kind("backup");
    assert_eq!(backups["total"], 31);
    assert_eq!(backups["byPhase"]["Completed"], 25);
    assert_eq!(backups["byPhase"]["Failed"], 6);
    let rate = backups["successRate"].as_f64().unwrap();
    assert!((rate - 25.0 / 31.0).abs() < 1e-9, "{rate}");
    let mut durations: Vec<i64> = seeded
        .team_a
        .iter()
        .filter(|o| o.kind == Some(OperationKind::Backup))
        .filter_map(OperationRecord::duration_ms)
        .collect();
    durations.sort_unstable();
    assert_eq!(
        backups["p50DurationMs"].as_i64(),
        nac::history::estimate::percentile(&durations, 50.0)
    );
    assert_eq!(
        backups["p95DurationMs"].as_i64(),
        nac::history::estimate::percentile(&durations, 95.0)
    );
    assert_eq!(backups["itemsDone"], 310);
    assert_eq!(kind("restore")["total"], 3);
    assert_eq!(kind("restore")["successRate"], 1.0);
    let runs = kind("schedule_run");
    assert_eq!(runs["total"], 6);
    assert_eq!(runs["byPhase"]["Failed"], 1);
    // A narrower window: nightly-10 … nightly-19.
    let narrow = get(
        &env,
        &format!(
            "/api/v1/namespaces/team-a/stats?from={}&to={}",
            since.replace('+', "%2B"),
            until.replace('+', "%2B")
        ),
        Some(&env.alice),
    )
    .await
    .json();
    assert_eq!(narrow["from"], since);
    assert_eq!(narrow["kinds"].as_array().unwrap().len(), 1, "{narrow}");
    assert_eq!(narrow["kinds"][0]["total"], 10);
    assert_eq!(narrow["kinds"][0]["byPhase"]["Failed"], 2);

    // Coverage: the newest completed backup, its age, the failing schedule.
    let coverage = get(&env, "/api/v1/namespaces/team-a/coverage", Some(&env.alice)).await;
    assert_eq!(coverage.status, StatusCode::OK, "{}", coverage.text());
    let coverage = coverage.json();
    assert_eq!(coverage["namespace"], "team-a");
    assert_eq!(coverage["lastSuccessfulBackup"], "nightly-28");
    let newest_ok = seeded
        .team_a
        .iter()
        .find(|o| o.name == "nightly-28")
        .unwrap()
        .completed_at
        .unwrap();
    assert_eq!(
        coverage["lastSuccessfulBackupAt"],
        nac::gateway::operations::rfc3339(newest_ok)
    );
    let age = coverage["lastSuccessfulBackupAgeSeconds"].as_i64().unwrap();
    let expected_age = (now_millis() - newest_ok) / 1000;
    assert!((expected_age - age).abs() <= 5, "{age} vs {expected_age}");
    assert_eq!(coverage["failingSchedules"], json!(["hourly"]));
}

#[tokio::test]
async fn graphql_history_operation_stats_and_coverage() {
    let env = env().await;
    let seeded = seed(&env).await;
    const HISTORY: &str =
        "query($ns: String!, $first: Int, $after: String, $kinds: [OperationKind!]) {
        history(namespace: $ns, first: $first, after: $after, kinds: $kinds) {
            edges { cursor node { id name kind createdAt durationMs } }
            pageInfo { hasNextPage hasPreviousPage endCursor }
        } }";
    let mut ids = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let answer = gql(
            &env,
            &env.alice,
            HISTORY,
            json!({"ns": "team-a", "first": 9, "after": after}),
        )
        .await;
        let history = &data(&answer)["history"];
        for edge in history["edges"].as_array().unwrap() {
            ids.push(edge["node"]["id"].as_str().unwrap().to_string());
        }
        assert_eq!(history["pageInfo"]["hasPreviousPage"], after.is_some());
        if history["pageInfo"]["hasNextPage"] != true {
            break;
        }
        after = Some(
            history["pageInfo"]["endCursor"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    assert_eq!(ids.len(), seeded.team_a.len());
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), ids.len());
    // Resuming after any edge's cursor continues right after it.
    let answer = gql(
        &env,
        &env.alice,
        HISTORY,
        json!({"ns": "team-a", "first": 3, "kinds": ["RESTORE"]}),
    )
    .await;
    let edges = data(&answer)["history"]["edges"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(edges.len(), 3);
    assert!(edges.iter().all(|e| e["node"]["kind"] == "RESTORE"));
    let answer = gql(
        &env,
        &env.alice,
        HISTORY,
        json!({"ns": "team-a", "first": 5, "kinds": ["RESTORE"], "after": edges[0]["cursor"]}),
    )
    .await;
    let rest: Vec<Value> = data(&answer)["history"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["node"]["name"].clone())
        .collect();
    assert_eq!(rest, vec![json!("restore-1"), json!("restore-0")]);

    let answer = gql(
        &env,
        &env.alice,
        "query($ns: String!, $id: String!) { operation(namespace: $ns, id: $id) {
            name kind requester deletedAt timeline { at attribute value reason message } } }",
        json!({"ns": "team-a", "id": seeded.gone.id}),
    )
    .await;
    let operation = &data(&answer)["operation"];
    assert_eq!(operation["name"], "gone-backup");
    assert_eq!(operation["kind"], "BACKUP");
    assert!(operation["deletedAt"].is_string());
    assert_eq!(operation["timeline"].as_array().unwrap().len(), 5);

    let answer = gql(
        &env,
        &env.alice,
        "query($ns: String!) {
            stats(namespace: $ns) { namespace from to kinds { kind total successRate byPhase { phase count } } }
            coverage(namespace: $ns) { lastSuccessfulBackup lastSuccessfulBackupAgeSeconds failingSchedules } }",
        json!({"ns": "team-a"}),
    )
    .await;
    let d = data(&answer);
    let backups = d["stats"]["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kind"] == "backup")
        .unwrap();
    assert_eq!(backups["total"], 31);
    assert!(
        backups["byPhase"]
            .as_array()
            .unwrap()
            .contains(&json!({"phase": "Failed", "count": 6}))
    );
    assert_eq!(d["coverage"]["lastSuccessfulBackup"], "nightly-28");
    assert_eq!(d["coverage"]["failingSchedules"], json!(["hourly"]));

    // Bad arguments name themselves.
    let answer = gql(
        &env,
        &env.alice,
        "{ history(namespace: \"team-a\", since: \"yesterday\") { edges { cursor } } }",
        json!({}),
    )
    .await;
    assert_eq!(error_code(&answer), "INVALID");
    assert_eq!(
        answer["errors"][0]["extensions"]["fieldErrors"][0]["field"],
        "since"
    );
    for (query, code) in [
        (
            "{ history(namespace: \"team-a\", after: \"!!\") { edges { cursor } } }",
            "BAD_REQUEST",
        ),
        (
            "{ history(namespace: \"team-a\", first: 0) { edges { cursor } } }",
            "BAD_REQUEST",
        ),
        (
            "{ history(namespace: \"team-a\", kinds: [NOPE]) { edges { cursor } } }",
            "BAD_REQUEST",
        ),
        (
            "{ operation(namespace: \"team-a\", id: \"00000000-0000-4000-8000-000000000000\") { name } }",
            "NOT_FOUND",
        ),
    ] {
        let answer = gql(&env, &env.alice, query, json!({})).await;
        assert_eq!(error_code(&answer), code, "{query}");
    }
}

#[tokio::test]
async fn bob_gets_the_same_403_for_team_a_whatever_exists() {
    let env = env().await;
    let seeded = seed(&env).await;
    let request_id = [("x-request-id", "same-request-id")];
    let existing = call_with(
        &env,
        Method::GET,
        &format!("/api/v1/namespaces/team-a/history/{}", seeded.gone.id),
        Some(&env.bob),
        None,
        &request_id,
    )
    .await;
    let made_up = call_with(
        &env,
        Method::GET,
        "/api/v1/namespaces/team-a/history/6c1c7c2e-dead-4000-8000-000000000bad",
        Some(&env.bob),
        None,
        &request_id,
    )
    .await;
    assert_eq!(
        existing.status,
        StatusCode::FORBIDDEN,
        "{}",
        existing.text()
    );
    assert!(existing.is_problem());
    assert_eq!(existing.body, made_up.body);
    assert_eq!(made_up.status, StatusCode::FORBIDDEN);
    let text = existing.text();
    assert!(!text.contains("gone-backup"), "{text}");
    // The same answer as the existing endpoints give for team-a's backups.
    let backups = call_with(
        &env,
        Method::GET,
        "/api/v1/namespaces/team-a/backups",
        Some(&env.bob),
        None,
        &request_id,
    )
    .await;
    assert_eq!(backups.status, StatusCode::FORBIDDEN);
    assert_eq!(backups.body, existing.body);
    for path in [
        "/api/v1/namespaces/team-a/history",
        "/api/v1/namespaces/team-a/history?kind=backup&limit=5",
        "/api/v1/namespaces/team-a/stats",
        "/api/v1/namespaces/team-a/coverage",
    ] {
        let answer = call_with(&env, Method::GET, path, Some(&env.bob), None, &request_id).await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{path}");
        assert_eq!(answer.body, existing.body, "{path}");
    }
    // Alice may not read team-b either; bob reads his own.
    let alice_b = get(&env, "/api/v1/namespaces/team-b/history", Some(&env.alice)).await;
    assert_eq!(alice_b.status, StatusCode::FORBIDDEN);
    let own = get(&env, "/api/v1/namespaces/team-b/history", Some(&env.bob)).await;
    assert_eq!(own.status, StatusCode::OK);
    assert_eq!(ids_of(&own.json()).len(), 2);
    assert!(!own.text().contains("nightly"));

    // GraphQL: FORBIDDEN, and the same message for an existing and a made-up id.
    let ask = |id: String| {
        let env = &env;
        async move {
            gql(
                env,
                &env.bob,
                "query($id: String!) { operation(namespace: \"team-a\", id: $id) { name } }",
                json!({"id": id}),
            )
            .await
        }
    };
    let a = ask(seeded.gone.id.clone()).await;
    let b = ask("6c1c7c2e-dead-4000-8000-000000000bad".into()).await;
    assert_eq!(error_code(&a), "FORBIDDEN");
    assert_eq!(a["errors"][0]["message"], b["errors"][0]["message"]);
    assert_eq!(a["errors"][0]["extensions"], b["errors"][0]["extensions"]);
    assert!(a["data"].is_null() || a["data"]["operation"].is_null());
    for query in [
        "{ history(namespace: \"team-a\") { edges { node { name } } } }",
        "{ stats(namespace: \"team-a\") { namespace } }",
        "{ coverage(namespace: \"team-a\") { namespace } }",
    ] {
        let answer = gql(&env, &env.bob, query, json!({})).await;
        assert_eq!(error_code(&answer), "FORBIDDEN", "{query}");
        assert!(!answer.to_string().contains("nightly"), "{answer}");
    }

    // No token: 401.
    let anonymous = get(&env, "/api/v1/namespaces/team-a/history", None).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    assert!(anonymous.is_problem());
}

#[tokio::test]
async fn bad_parameters_are_refused_naming_them() {
    let env = env().await;
    seed(&env).await;
    for (query, status, param) in [
        ("since=yesterday", StatusCode::UNPROCESSABLE_ENTITY, "since"),
        (
            "until=2025-02-30T00:00:00Z",
            StatusCode::UNPROCESSABLE_ENTITY,
            "until",
        ),
        ("kind=nope", StatusCode::UNPROCESSABLE_ENTITY, "kind"),
        ("kind=backup,nope", StatusCode::UNPROCESSABLE_ENTITY, "kind"),
        (
            "phase=Com%20pleted",
            StatusCode::UNPROCESSABLE_ENTITY,
            "phase",
        ),
        ("limit=0", StatusCode::BAD_REQUEST, "limit"),
        ("limit=501", StatusCode::BAD_REQUEST, "limit"),
        ("limit=many", StatusCode::BAD_REQUEST, "limit"),
        ("continue=not-a-token", StatusCode::BAD_REQUEST, "continue"),
    ] {
        let answer = get(
            &env,
            &format!("/api/v1/namespaces/team-a/history?{query}"),
            Some(&env.alice),
        )
        .await;
        assert_eq!(answer.status, status, "{query}: {}", answer.text());
        assert!(answer.is_problem(), "{query}");
        let problem = answer.json();
        assert!(
            problem["detail"].as_str().unwrap().contains(param),
            "{query}: {problem}"
        );
        if status == StatusCode::UNPROCESSABLE_ENTITY {
            assert_eq!(problem["errors"][0]["field"], param, "{query}");
        }
    }
    for (query, param) in [
        ("from=nope", "from"),
        ("from=2025-01-02T00:00:00Z&to=2025-01-01T00:00:00Z", "to"),
        ("from=2023-01-01T00:00:00Z&to=2025-01-01T00:00:00Z", "from"),
    ] {
        let answer = get(
            &env,
            &format!("/api/v1/namespaces/team-a/stats?{query}"),
            Some(&env.alice),
        )
        .await;
        assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY, "{query}");
        assert_eq!(answer.json()["errors"][0]["field"], param, "{query}");
    }
    let bad_id = get(
        &env,
        "/api/v1/namespaces/team-a/history/a%20b",
        Some(&env.alice),
    )
    .await;
    assert_eq!(bad_id.status, StatusCode::BAD_REQUEST);
    assert!(bad_id.is_problem());
}

#[tokio::test]
async fn a_removed_role_binding_stops_history_access() {
    let env = env().await;
    seed(&env).await;
    let carol = env.server().add_user("carol", &[]);
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
    let path = "/api/v1/namespaces/team-a/history?limit=3";
    let allowed = get(&env, path, Some(&carol)).await;
    assert_eq!(allowed.status, StatusCode::OK, "{}", allowed.text());
    bindings
        .delete("carol-view", &DeleteParams::default())
        .await
        .unwrap();
    gateway_support::until_forbidden(|| async { get(&env, path, Some(&carol)).await.status }).await;
}

#[tokio::test]
async fn creates_record_their_requester_and_queue_items_carry_an_eta() {
    let env = env().await;
    seed(&env).await;
    let created = call_with(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-a/backups",
        Some(&env.alice),
        Some(json!({"name": "by-alice", "spec": {"backupSpec": {}}})),
        &[],
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    let uid = created.json()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    let noted = env
        .history
        .operation_by_name(
            &tenant(&env, "team-a").await,
            OperationKind::Backup,
            "by-alice",
        )
        .await
        .unwrap()
        .expect("the create is in the history");
    assert_eq!(noted.requester.as_deref(), Some("alice"));
    assert_eq!(noted.id, uid);
    let shown = get(
        &env,
        &format!("/api/v1/namespaces/team-a/history/{uid}"),
        Some(&env.alice),
    )
    .await;
    assert_eq!(shown.json()["operation"]["requester"], "alice");
    // A dry run records nothing.
    let dry = call_with(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-a/backups?dryRun=true",
        Some(&env.alice),
        Some(json!({"name": "dry-alice", "spec": {"backupSpec": {}}})),
        &[],
    )
    .await;
    assert_eq!(dry.status, StatusCode::OK, "{}", dry.text());
    assert!(
        env.history
            .operation_by_name(
                &tenant(&env, "team-a").await,
                OperationKind::Backup,
                "dry-alice",
            )
            .await
            .unwrap()
            .is_none()
    );

    // A backup third in Velero's queue: its ETA rests on team-a's recent backup durations.
    let velero: Api<nac::api::velero::Backup> = Api::namespaced(env.admin.clone(), OADP_NAMESPACE);
    for name in ["q-1", "q-2", "q-3"] {
        let backup: nac::api::velero::Backup = serde_json::from_value(json!({
            "apiVersion": "velero.io/v1", "kind": "Backup",
            "metadata": {"name": name, "namespace": OADP_NAMESPACE},
            "spec": {"includedNamespaces": ["team-a"]}
        }))
        .unwrap();
        velero
            .create(&PostParams::default(), &backup)
            .await
            .unwrap();
        // Queue order is creation time, then name: keep them apart.
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }
    let nabs: Api<nac::api::nonadmin::NonAdminBackup> =
        Api::namespaced(env.admin.clone(), "team-a");
    nabs.patch_status(
        "by-alice",
        &PatchParams::default(),
        &Patch::Merge(&json!({"status": {"phase": "Created", "veleroBackup": {"name": "q-3", "namespace": OADP_NAMESPACE}}})),
    )
    .await
    .unwrap();
    let item = eventually_seen("by-alice in the queue", 20, || async {
        let queue = get(&env, "/api/v1/namespaces/team-a/queue", Some(&env.alice)).await;
        assert_eq!(queue.status, StatusCode::OK, "{}", queue.text());
        let queue = queue.json();
        queue["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["name"] == "by-alice")
            .cloned()
            .ok_or_else(|| format!("by-alice never queued: {queue}"))
    })
    .await;
    assert_eq!(item["position"], 3, "{item}");
    let eta = &item["eta"];
    assert_eq!(eta["samples"], 20, "{item}");
    let start = eta["startInSeconds"].as_u64().unwrap();
    let finish = eta["finishInSeconds"].as_u64().unwrap();
    // Two typical durations ahead, one more to finish (seeded durations are 10 s to 39 s).
    assert_eq!(start * 3, finish * 2, "{item}");
    assert!((20..=80).contains(&start), "{item}");
    // The same ETA in the description and over GraphQL.
    let described = get(
        &env,
        "/api/v1/namespaces/team-a/backups/by-alice/describe",
        Some(&env.alice),
    )
    .await;
    assert_eq!(described.json()["eta"], *eta, "{}", described.text());
    let answer = gql(
        &env,
        &env.alice,
        "{ queue(namespace: \"team-a\") { namespace { items { name eta { startInSeconds finishInSeconds samples } } } } }",
        json!({}),
    )
    .await;
    let items = data(&answer)["queue"]["namespace"]["items"].clone();
    assert_eq!(items[0]["eta"]["startInSeconds"], start, "{items}");
}

/// A history store whose database is down: every call fails with a message naming the
/// database (which must never reach a client).
#[derive(Debug)]
struct DownStore;

const DOWN: &str = "connection refused: postgres://nac:hunter2@db.internal:5432/nac";

fn down<'a, T: Send + 'a>() -> StoreFuture<'a, T> {
    Box::pin(async { Err(HistoryError::Unavailable(DOWN.into())) })
}

impl HistoryStore for DownStore {
    fn backend(&self) -> nac::history::Backend {
        nac::history::Backend::Postgres
    }
    fn migrate(&self) -> StoreFuture<'_, ()> {
        down()
    }
    fn record(&self, _: Vec<Observation>) -> StoreFuture<'_, u64> {
        down()
    }
    fn note_requester(&self, _: OperationRecord, _: String) -> StoreFuture<'_, ()> {
        down()
    }
    fn live_operation_ids(&self) -> StoreFuture<'_, Vec<(String, OperationKind)>> {
        down()
    }
    fn mark_deleted(&self, _: Vec<String>, _: EpochMillis) -> StoreFuture<'_, u64> {
        down()
    }
    fn attribute_namespaces(&self, _: Vec<NamespaceIdentity>) -> StoreFuture<'_, u64> {
        down()
    }
    fn operation<'a>(
        &'a self,
        _: &'a TenantNamespace,
        _: &'a str,
    ) -> StoreFuture<'a, Option<OperationRecord>> {
        down()
    }
    fn operation_by_name<'a>(
        &'a self,
        _: &'a TenantNamespace,
        _: OperationKind,
        _: &'a str,
    ) -> StoreFuture<'a, Option<OperationRecord>> {
        down()
    }
    fn timeline<'a>(
        &'a self,
        _: &'a TenantNamespace,
        _: &'a str,
    ) -> StoreFuture<'a, Vec<StoredTransition>> {
        down()
    }
    fn operations<'a>(
        &'a self,
        _: &'a TenantNamespace,
        _: &'a OperationFilter,
        _: Option<&'a OperationCursor>,
        _: u32,
    ) -> StoreFuture<'a, OperationPage> {
        down()
    }
    fn stats<'a>(
        &'a self,
        _: &'a TenantNamespace,
        _: TimeWindow,
    ) -> StoreFuture<'a, NamespaceStats> {
        down()
    }
    fn recent_durations<'a>(
        &'a self,
        _: &'a TenantNamespace,
        _: &'a [OperationKind],
        _: u32,
    ) -> StoreFuture<'a, Vec<i64>> {
        down()
    }
    fn coverage<'a>(&'a self, _: &'a [TenantNamespace]) -> StoreFuture<'a, Vec<Coverage>> {
        down()
    }
    fn purge(&self, _: EpochMillis) -> StoreFuture<'_, u64> {
        down()
    }
    fn idempotency_begin<'a>(
        &'a self,
        _: &'a str,
        _: &'a str,
        _: &'a str,
        _: &'a str,
        _: &'a [u8],
        _: i64,
    ) -> StoreFuture<'a, IdempotencyState> {
        down()
    }
    fn idempotency_finish<'a>(
        &'a self,
        _: &'a str,
        _: &'a str,
        _: &'a str,
        _: &'a str,
        _: IdempotencyAnswer,
        _: i64,
    ) -> StoreFuture<'a, ()> {
        down()
    }
    fn idempotency_abandon<'a>(
        &'a self,
        _: &'a str,
        _: &'a str,
        _: &'a str,
        _: &'a str,
    ) -> StoreFuture<'a, ()> {
        down()
    }
    fn ping(&self) -> StoreFuture<'_, ()> {
        down()
    }
    fn put_manifest(&self, _: StoredManifest) -> StoreFuture<'_, ManifestPut> {
        down()
    }
    fn manifest<'a>(
        &'a self,
        _: &'a TenantNamespace,
        _: &'a str,
    ) -> StoreFuture<'a, Option<StoredManifest>> {
        down()
    }
    fn manifest_by_name<'a>(
        &'a self,
        _: &'a TenantNamespace,
        _: &'a str,
    ) -> StoreFuture<'a, Option<StoredManifest>> {
        down()
    }
    fn manifest_summaries<'a>(
        &'a self,
        _: &'a TenantNamespace,
    ) -> StoreFuture<'a, Vec<ManifestSummary>> {
        down()
    }
    fn manifests_missing(&self, _: u32) -> StoreFuture<'_, Vec<ManifestTarget>> {
        down()
    }
}

#[tokio::test]
async fn a_store_that_is_down_refuses_history_reads_and_keyed_creates_only() {
    let env = env_with(Arc::new(DownStore)).await;
    for path in [
        "/api/v1/namespaces/team-a/history",
        "/api/v1/namespaces/team-a/history/6c1c7c2e-0000-4000-8000-000000000001",
        "/api/v1/namespaces/team-a/stats",
        "/api/v1/namespaces/team-a/coverage",
    ] {
        let answer = get(&env, path, Some(&env.alice)).await;
        assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE, "{path}");
        assert!(answer.is_problem(), "{path}");
        assert!(answer.headers.get("retry-after").is_some(), "{path}");
        let text = answer.text();
        assert!(
            !text.contains("hunter2") && !text.contains("db.internal"),
            "{text}"
        );
    }
    // Authorization still comes first: bob learns nothing, not even that the store is down.
    let bobs = get(&env, "/api/v1/namespaces/team-a/history", Some(&env.bob)).await;
    assert_eq!(bobs.status, StatusCode::FORBIDDEN);
    // A create with an Idempotency-Key is refused rather than run unprotected…
    let keyed = call_with(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-a/backups",
        Some(&env.alice),
        Some(json!({"name": "keyed", "spec": {"backupSpec": {}}})),
        &[("idempotency-key", "k-down")],
    )
    .await;
    assert_eq!(
        keyed.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        keyed.text()
    );
    assert!(!keyed.text().contains("hunter2"));
    let nabs: Api<nac::api::nonadmin::NonAdminBackup> =
        Api::namespaced(env.admin.clone(), "team-a");
    assert!(nabs.get_opt("keyed").await.unwrap().is_none());
    // …while a plain create goes on (its requester is not recorded, and that is counted).
    let plain = call_with(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-a/backups",
        Some(&env.alice),
        Some(json!({"name": "plain", "spec": {"backupSpec": {}}})),
        &[],
    )
    .await;
    assert_eq!(plain.status, StatusCode::CREATED, "{}", plain.text());
    // Queue views go on too.
    let queue = get(&env, "/api/v1/namespaces/team-a/queue", Some(&env.alice)).await;
    assert_eq!(queue.status, StatusCode::OK);
    let graphql = gql(
        &env,
        &env.alice,
        "{ history(namespace: \"team-a\") { edges { cursor } } }",
        json!({}),
    )
    .await;
    assert_eq!(error_code(&graphql), "UNAVAILABLE");
    assert!(!graphql.to_string().contains("hunter2"));
    let metrics = get(&env, "/metrics", None).await.text();
    let counter = |name: &str| -> u64 {
        metrics
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {metrics}"))
    };
    assert!(counter("nac_gateway_history_read_failures_total") >= 5);
    assert_eq!(counter("nac_gateway_history_requester_failures_total"), 1);
}
