//! Overlaps of created operations through the gateway, end to end on the in-process emulator
//! with the Velero simulator (slowed down per item so operations stay running), NAC's
//! controllers, the history recorder and the manifest builder: a backup or restore that is
//! created but not started yet is shown as waiting on the running operations of its namespace
//! that share items with it, with those items; a disjoint one waits on nothing; another
//! namespace's operations never appear; a caller without rights learns nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/gateway.rs"]
mod gateway_support;
#[path = "support/manifest_env.rs"]
mod manifest_env;
mod support;

use std::time::Duration;

use http::{Method, StatusCode};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use manifest_env::{Env, call, get, wait_for_answer};
use serde_json::{Value, json};

/// The whole system, the simulated Velero spending `item_delay` on each item and running up
/// to two backups at once (of different namespaces, as Velero does).
async fn env(item_delay: Duration) -> Env {
    manifest_env::env_with(|options| {
        options.item_delay = item_delay;
        options.concurrent_backups = 2;
    })
    .await
}

async fn wait_for(
    env: &Env,
    path: &str,
    token: &str,
    secs: u64,
    done: impl Fn(&Value) -> bool,
) -> Value {
    wait_for_answer(env, path, token, secs, |answer| {
        answer.status == StatusCode::OK && done(&answer.json())
    })
    .await
    .json()
}

fn backup_phase(backup: &Value) -> &str {
    backup["status"]["veleroBackup"]["status"]["phase"]
        .as_str()
        .unwrap_or_default()
}

fn restore_phase(restore: &Value) -> &str {
    restore["status"]["veleroRestore"]["status"]["phase"]
        .as_str()
        .unwrap_or_default()
}

/// Adds `count` ConfigMaps to `namespace` so that backups of it take a while.
async fn add_configmaps(env: &Env, namespace: &str, count: usize) {
    let configmaps: Api<ConfigMap> = Api::namespaced(env.admin.clone(), namespace);
    for i in 0..count {
        let configmap: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": format!("filler-{i}"), "namespace": namespace},
            "data": {"n": i.to_string()},
        }))
        .unwrap();
        configmaps
            .create(&PostParams::default(), &configmap)
            .await
            .unwrap();
    }
}

/// Creates backup `name` of `namespace` with `spec` as `token`.
async fn create_backup(env: &Env, namespace: &str, name: &str, token: &str, spec: Value) {
    let created = call(
        env,
        Method::POST,
        &format!("/api/v1/namespaces/{namespace}/backups"),
        token,
        Some(json!({"name": name, "spec": {"backupSpec": spec}})),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
}

/// Creates restore `name` of team-a from backup `backup` as alice.
async fn create_restore(env: &Env, name: &str, backup: &str) {
    let created = call(
        env,
        Method::POST,
        "/api/v1/namespaces/team-a/restores",
        &env.alice,
        Some(json!({"name": name, "spec": {"restoreSpec": {"backupName": backup}}})),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
}

/// The names of the items listed in `overlap`.
fn overlap_names(overlap: &Value) -> Vec<String> {
    overlap["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Asserts the running backup `name` of team-a is still running (so what was just observed
/// was observed while it ran).
async fn assert_still_running(env: &Env, name: &str) {
    let backup = get(
        env,
        &format!("/api/v1/namespaces/team-a/backups/{name}"),
        &env.alice,
    )
    .await
    .json();
    assert_eq!(backup_phase(&backup), "InProgress", "{backup}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_backup_is_shown_waiting_on_the_running_one_it_overlaps() {
    let env = env(Duration::from_secs(2)).await;
    add_configmaps(&env, "team-a", 20).await;
    add_configmaps(&env, "team-b", 20).await;

    // team-a's configmaps are being backed up; so is team-b (bob's).
    create_backup(
        &env,
        "team-a",
        "long",
        &env.alice,
        json!({"includedResources": ["configmaps"]}),
    )
    .await;
    create_backup(&env, "team-b", "bob-long", &env.bob, json!({})).await;
    wait_for(
        &env,
        "/api/v1/namespaces/team-a/backups/long",
        &env.alice,
        30,
        |b| backup_phase(b) == "InProgress",
    )
    .await;
    wait_for(
        &env,
        "/api/v1/namespaces/team-b/backups/bob-long",
        &env.bob,
        30,
        |b| backup_phase(b) == "InProgress",
    )
    .await;

    // A second backup of team-a sharing the configmaps waits in Velero's queue.
    create_backup(
        &env,
        "team-a",
        "second",
        &env.alice,
        json!({"includedResources": ["configmaps", "secrets"]}),
    )
    .await;
    // And one sharing nothing with the running one.
    create_backup(
        &env,
        "team-a",
        "claims",
        &env.alice,
        json!({"includedResources": ["persistentvolumeclaims"]}),
    )
    .await;
    for name in ["second", "claims"] {
        wait_for(
            &env,
            &format!("/api/v1/namespaces/team-a/backups/{name}"),
            &env.alice,
            30,
            |b| backup_phase(b) == "Queued",
        )
        .await;
    }

    let answer = get(
        &env,
        "/api/v1/namespaces/team-a/backups/second/overlaps",
        &env.alice,
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    let second = answer.json();
    assert_eq!(second["operation"], "backup second");
    assert_eq!(second["pending"], true, "{second}");
    assert_eq!(second["waiting"], true, "{second}");
    let overlaps = second["overlaps"].as_array().unwrap();
    assert_eq!(
        overlaps.len(),
        1,
        "only the running backup of team-a: {second}"
    );
    assert_eq!(overlaps[0]["operation"], "backup long");
    let shared = overlap_names(&overlaps[0]);
    assert!(shared.contains(&"web-config".to_owned()), "{second}");
    assert!(shared.contains(&"filler-0".to_owned()), "{second}");
    assert!(
        overlaps[0]["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|item| item["groupResource"] == "configmaps"),
        "the secrets are not in the running backup: {second}"
    );
    assert!(overlaps[0]["total"].as_u64().unwrap() >= 21, "{second}");
    // Never team-b's running backup, nor any of its names.
    assert!(!answer.text().contains("bob-long"));
    assert!(!answer.text().contains("team-b"));

    // The disjoint backup is queued but waits on nothing of team-a.
    let claims = get(
        &env,
        "/api/v1/namespaces/team-a/backups/claims/overlaps",
        &env.alice,
    )
    .await;
    assert_eq!(claims.status, StatusCode::OK, "{}", claims.text());
    let claims = claims.json();
    assert_eq!(claims["pending"], true, "{claims}");
    assert_eq!(claims["waiting"], false, "{claims}");
    assert_eq!(claims["overlaps"], json!([]));

    // The running backup itself waits on nothing (and is not compared with itself).
    let long = get(
        &env,
        "/api/v1/namespaces/team-a/backups/long/overlaps",
        &env.alice,
    )
    .await
    .json();
    assert_eq!(
        long,
        json!({"operation": "backup long", "pending": false, "waiting": false, "overlaps": []})
    );

    // GraphQL answers as REST does.
    let graphql = call(
        &env,
        Method::POST,
        "/graphql",
        &env.alice,
        Some(json!({
            "query": "query($ns: String!, $name: String!) { backupOverlaps(namespace: $ns, name: $name) { operation pending waiting overlaps { operation total items { groupResource name } } } }",
            "variables": {"ns": "team-a", "name": "second"},
        })),
    )
    .await;
    assert_eq!(graphql.status, StatusCode::OK, "{}", graphql.text());
    let graphql = graphql.json();
    assert!(graphql["errors"].is_null(), "{graphql}");
    let answer = &graphql["data"]["backupOverlaps"];
    assert_eq!(answer["waiting"], true, "{graphql}");
    assert_eq!(answer["overlaps"][0]["operation"], "backup long");
    assert_eq!(answer["overlaps"][0]["total"], overlaps[0]["total"]);
    assert!(
        answer["overlaps"][0]["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|item| item["name"] == "web-config"),
        "{graphql}"
    );
    assert_still_running(&env, "long").await;

    // Bob learns nothing of team-a: the same 403 for an existing and a made-up backup, over
    // REST and GraphQL.
    let existing = get(
        &env,
        "/api/v1/namespaces/team-a/backups/second/overlaps",
        &env.bob,
    )
    .await;
    let made_up = get(
        &env,
        "/api/v1/namespaces/team-a/backups/no-such-backup/overlaps",
        &env.bob,
    )
    .await;
    assert_eq!(existing.status, StatusCode::FORBIDDEN);
    assert!(existing.is_problem());
    assert_eq!(
        gateway_support::without_request_id(existing.json()),
        gateway_support::without_request_id(made_up.json())
    );
    assert!(!existing.text().contains("web-config"));
    let gql_errors: Vec<Value> = {
        let mut errors = Vec::new();
        for name in ["second", "no-such-backup"] {
            let answer = call(
                &env,
                Method::POST,
                "/graphql",
                &env.bob,
                Some(json!({
                    "query": "query($name: String!) { backupOverlaps(namespace: \"team-a\", name: $name) { waiting } }",
                    "variables": {"name": name},
                })),
            )
            .await
            .json();
            let mut error = answer["errors"][0].clone();
            assert!(error.is_object(), "{answer}");
            if let Some(extensions) = error["extensions"].as_object_mut() {
                extensions.remove("requestId");
            }
            error.as_object_mut().unwrap().remove("locations");
            errors.push(error);
        }
        errors
    };
    assert_eq!(gql_errors[0], gql_errors[1]);
    assert_eq!(
        gql_errors[0]["extensions"]["code"], "FORBIDDEN",
        "{gql_errors:?}"
    );

    drop(env.server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_created_while_a_backup_of_its_items_runs_is_shown_waiting_on_it() {
    let env = env(Duration::from_millis(700)).await;
    add_configmaps(&env, "team-a", 15).await;

    // A completed backup of team-a's configmaps, with its manifest.
    create_backup(
        &env,
        "team-a",
        "source",
        &env.alice,
        json!({"includedResources": ["configmaps"]}),
    )
    .await;
    wait_for(
        &env,
        "/api/v1/namespaces/team-a/backups/source",
        &env.alice,
        90,
        |b| backup_phase(b) == "Completed",
    )
    .await;
    wait_for(
        &env,
        "/api/v1/namespaces/team-a/backups/source/manifest",
        &env.alice,
        60,
        |_| true,
    )
    .await;

    // A whole-namespace backup runs, and a first restore of the configmaps runs.
    create_backup(&env, "team-a", "long", &env.alice, json!({})).await;
    wait_for(
        &env,
        "/api/v1/namespaces/team-a/backups/long",
        &env.alice,
        30,
        |b| backup_phase(b) == "InProgress",
    )
    .await;
    create_restore(&env, "first", "source").await;
    wait_for(
        &env,
        "/api/v1/namespaces/team-a/restores/first",
        &env.alice,
        30,
        |r| restore_phase(r) == "InProgress",
    )
    .await;
    // A second restore waits for Velero to finish the first.
    create_restore(&env, "again", "source").await;
    let again = get(&env, "/api/v1/namespaces/team-a/restores/again", &env.alice)
        .await
        .json();
    assert!(
        matches!(restore_phase(&again), "" | "New"),
        "the second restore has not started: {again}"
    );

    let answer = get(
        &env,
        "/api/v1/namespaces/team-a/restores/again/overlaps",
        &env.alice,
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    let again = answer.json();
    assert_eq!(again["operation"], "restore again");
    assert_eq!(again["pending"], true, "{again}");
    assert_eq!(again["waiting"], true, "{again}");
    let overlaps = again["overlaps"].as_array().unwrap();
    let with_backup = overlaps
        .iter()
        .find(|o| o["operation"] == "backup long")
        .unwrap_or_else(|| panic!("the running backup is named: {again}"));
    let shared = overlap_names(with_backup);
    assert!(shared.contains(&"web-config".to_owned()), "{again}");
    assert!(shared.contains(&"filler-3".to_owned()), "{again}");
    let with_restore = overlaps
        .iter()
        .find(|o| o["operation"] == "restore first")
        .unwrap_or_else(|| panic!("the running restore writes the same items: {again}"));
    assert!(overlap_names(with_restore).contains(&"web-config".to_owned()));
    assert!(
        !overlaps.iter().any(|o| o["operation"] == "restore again"),
        "never compared with itself: {again}"
    );
    assert_still_running(&env, "long").await;

    // A dry-run names only the running operations its caller may list: alice sees the running
    // restore; ci-bot (backup-creator: backups only) does not learn its name, but still sees
    // the running backup.
    let ci_bot = support::sa_token(&env.admin, "team-a", "ci-bot").await;
    // ci-bot may read the configmaps it backs up, so its dry-run collects them.
    let roles: Api<k8s_openapi::api::rbac::v1::Role> = Api::namespaced(env.admin.clone(), "team-a");
    roles
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "configmap-reader"},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let bindings: Api<k8s_openapi::api::rbac::v1::RoleBinding> =
        Api::namespaced(env.admin.clone(), "team-a");
    bindings
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "ci-bot-configmaps"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "configmap-reader"},
                "subjects": [{"kind": "ServiceAccount", "name": "ci-bot", "namespace": "team-a"}]
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let dry_run_overlaps = |token: String| {
        let env = &env;
        async move {
            let answer = call(
                env,
                Method::POST,
                "/api/v1/namespaces/team-a/backups?dryRun=true",
                &token,
                Some(json!({"name": "probe", "spec": {"backupSpec": {"includedResources": ["configmaps"]}}})),
            )
            .await;
            assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
            let operations: Vec<String> = answer.json()["overlaps"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["operation"].as_str().unwrap().to_owned())
                .collect();
            (operations, answer.text())
        }
    };
    let (alice_sees, text) = dry_run_overlaps(env.alice.clone()).await;
    assert!(alice_sees.contains(&"restore first".to_owned()), "{text}");
    assert!(alice_sees.contains(&"backup long".to_owned()), "{text}");
    let (ci_bot_sees, text) = dry_run_overlaps(ci_bot).await;
    assert!(ci_bot_sees.contains(&"backup long".to_owned()), "{text}");
    assert!(
        !text.contains("first"),
        "ci-bot may not list restores and is not told of one: {text}"
    );
    assert_still_running(&env, "long").await;

    // The running restore waits on nothing.
    let first = get(
        &env,
        "/api/v1/namespaces/team-a/restores/first/overlaps",
        &env.alice,
    )
    .await
    .json();
    assert_eq!(first["pending"], false, "{first}");
    assert_eq!(first["overlaps"], json!([]));

    // GraphQL answers as REST does.
    let graphql = call(
        &env,
        Method::POST,
        "/graphql",
        &env.alice,
        Some(json!({
            "query": "{ restoreOverlaps(namespace: \"team-a\", name: \"again\") { operation waiting overlaps { operation } } }",
        })),
    )
    .await
    .json();
    assert!(graphql["errors"].is_null(), "{graphql}");
    assert_eq!(graphql["data"]["restoreOverlaps"]["waiting"], true);

    // Bob: the same 403 for an existing and a made-up restore.
    let existing = get(
        &env,
        "/api/v1/namespaces/team-a/restores/again/overlaps",
        &env.bob,
    )
    .await;
    let made_up = get(
        &env,
        "/api/v1/namespaces/team-a/restores/no-such-restore/overlaps",
        &env.bob,
    )
    .await;
    assert_eq!(existing.status, StatusCode::FORBIDDEN);
    assert_eq!(
        gateway_support::without_request_id(existing.json()),
        gateway_support::without_request_id(made_up.json())
    );
    assert!(!existing.text().contains("web-config"));
    // A made-up restore is a plain 404 for its own tenant.
    let missing = get(
        &env,
        "/api/v1/namespaces/team-a/restores/no-such-restore/overlaps",
        &env.alice,
    )
    .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND, "{}", missing.text());
    assert!(missing.is_problem());
    drop(env.server);
}
