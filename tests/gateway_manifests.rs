//! Backup manifests through the gateway's REST API, end to end on the in-process emulator with
//! the Velero simulator, NAC's controllers, the history recorder and the manifest builder:
//! the dry-run answers exactly the manifest the backup that follows gets, the restore preview
//! says what the restore then does, a backup overlapping a running one is reported, the
//! contents browser pages and filters, two backups diff, and no tenant learns anything of
//! another's backups.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/gateway.rs"]
mod gateway_support;
#[path = "support/manifest_env.rs"]
mod manifest_env;
mod support;
use support::cluster::eventually_seen;

use std::collections::BTreeSet;
use std::time::Duration;

use gateway_support::{Answer, Auth};
use http::{Method, StatusCode};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use manifest_env::{Env, call, get, wait_for_answer};
use serde_json::{Value, json};

/// The whole system; `item_delay` slows the simulated Velero down per item.
async fn env(item_delay: Option<Duration>) -> Env {
    manifest_env::env_with(|options| {
        if let Some(delay) = item_delay {
            options.item_delay = delay;
        }
    })
    .await
}

async fn wait_for(env: &Env, path: &str, secs: u64, done: impl Fn(&Answer) -> bool) -> Value {
    wait_for_answer(env, path, &env.alice, secs, done)
        .await
        .json()
}

fn velero_phase(backup: &Value) -> &str {
    backup["status"]["veleroBackup"]["status"]["phase"]
        .as_str()
        .unwrap_or_default()
}

/// Creates backup `name` of team-a with `spec` as alice and waits for its manifest.
async fn backup_with_manifest(env: &Env, name: &str, spec: Value) -> Value {
    let created = call(
        env,
        Method::POST,
        "/api/v1/namespaces/team-a/backups",
        &env.alice,
        Some(json!({"name": name, "spec": {"backupSpec": spec}})),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    let backup = wait_for(
        env,
        &format!("/api/v1/namespaces/team-a/backups/{name}"),
        60,
        |a| a.status == StatusCode::OK && velero_phase(&a.json()) == "Completed",
    )
    .await;
    assert_eq!(velero_phase(&backup), "Completed");
    wait_for(
        env,
        &format!("/api/v1/namespaces/team-a/backups/{name}/manifest"),
        60,
        |a| a.status == StatusCode::OK,
    )
    .await
}

fn keys(items: &Value) -> BTreeSet<String> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            format!(
                "{}/{}/{}/{}/{}",
                item["group"].as_str().unwrap(),
                item["resource"].as_str().unwrap(),
                item["namespace"].as_str().unwrap_or("-"),
                item["version"].as_str().unwrap(),
                item["name"].as_str().unwrap()
            )
        })
        .collect()
}

fn has_item(items: &Value, resource: &str, name: &str) -> bool {
    items
        .as_array()
        .unwrap()
        .iter()
        .any(|item| item["resource"] == resource && item["name"] == name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dry_run_answers_the_manifest_of_the_backup_that_follows() {
    let env = env(None).await;
    let spec = json!({"includedResources": ["configmaps", "secrets", "deployments", "services", "persistentvolumeclaims"]});
    let dry = call(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-a/backups?dryRun=true",
        &env.alice,
        Some(json!({"name": "nightly", "spec": {"backupSpec": spec}})),
    )
    .await;
    assert_eq!(dry.status, StatusCode::OK, "{}", dry.text());
    let dry = dry.json();
    assert_eq!(dry["kind"], "BackupDryRun");
    assert_eq!(dry["backup"]["metadata"]["name"], "nightly");
    assert_eq!(dry["unreadable"], json!([]), "alice can read her namespace");
    assert_eq!(dry["overlaps"], json!([]));
    assert!(has_item(&dry["items"], "configmaps", "web-config"), "{dry}");
    assert!(has_item(&dry["items"], "deployments", "web"), "{dry}");
    // Velero leaves the Namespace object out when includedResources does not name it.
    assert!(!has_item(&dry["items"], "namespaces", "team-a"), "{dry}");
    assert_eq!(
        dry["totalItems"].as_u64().unwrap() as usize,
        dry["items"].as_array().unwrap().len()
    );
    let counted: u64 = dry["counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["count"].as_u64().unwrap())
        .sum();
    assert_eq!(counted, dry["totalItems"].as_u64().unwrap());
    // Nothing was created.
    assert!(
        gateway_support::backup_names(&env.admin, "team-a")
            .await
            .is_empty()
    );

    let manifest = backup_with_manifest(&env, "nightly", spec).await;
    assert_eq!(manifest["kind"], "BackupManifest");
    assert_eq!(manifest["backup"]["name"], "nightly");
    assert_eq!(keys(&manifest["items"]), keys(&dry["items"]));
    assert_eq!(manifest["counts"], dry["counts"]);

    // Exported as a file.
    let file = get(
        &env,
        "/api/v1/namespaces/team-a/backups/nightly/manifest?download=true",
        &env.alice,
    )
    .await;
    assert_eq!(
        file.header("content-disposition"),
        Some("attachment; filename=\"nightly-manifest.json\"")
    );
    assert_eq!(file.json(), manifest);

    // The contents browser pages through every item once, and filters.
    let mut paged = Vec::new();
    let mut next = None::<String>;
    loop {
        let path = match &next {
            Some(token) => format!(
                "/api/v1/namespaces/team-a/backups/nightly/contents?limit=2&continue={token}"
            ),
            None => "/api/v1/namespaces/team-a/backups/nightly/contents?limit=2".into(),
        };
        let page = get(&env, &path, &env.alice).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.text());
        let page = page.json();
        assert!(page["items"].as_array().unwrap().len() <= 2);
        paged.extend(page["items"].as_array().unwrap().iter().cloned());
        match page["continue"].as_str() {
            Some(token) => next = Some(token.to_owned()),
            None => break,
        }
    }
    assert_eq!(keys(&Value::Array(paged)), keys(&manifest["items"]));
    let deployments = get(
        &env,
        "/api/v1/namespaces/team-a/backups/nightly/contents?kind=Deployment",
        &env.alice,
    )
    .await
    .json();
    assert_eq!(deployments["matched"], 1);
    assert_eq!(deployments["items"][0]["name"], "web");
    let labelled = get(
        &env,
        "/api/v1/namespaces/team-a/backups/nightly/contents?labelSelector=app%3Dweb&q=WEB-",
        &env.alice,
    )
    .await
    .json();
    assert!(labelled["matched"].as_u64().unwrap() >= 2, "{labelled}");
    assert!(
        labelled["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["labels"]["app"] == "web" && i["name"].as_str().unwrap().starts_with("web-"))
    );
    let bad = get(
        &env,
        "/api/v1/namespaces/team-a/backups/nightly/contents?limit=0",
        &env.alice,
    )
    .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(bad.text().contains("limit"), "{}", bad.text());

    // The owner graph names owners before dependents (none here beyond the namespace).
    let graph = get(
        &env,
        "/api/v1/namespaces/team-a/backups/nightly/graph",
        &env.alice,
    )
    .await;
    assert_eq!(graph.status, StatusCode::OK, "{}", graph.text());

    // A second backup after changes: the diff says what changed.
    let configmaps: Api<ConfigMap> = Api::namespaced(env.admin.clone(), "team-a");
    configmaps
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "extra"}, "data": {"a": "b"}}))
                .unwrap(),
        )
        .await
        .unwrap();
    configmaps
        .patch(
            "web-config",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"tier": "front"}}})),
        )
        .await
        .unwrap();
    backup_with_manifest(&env, "nightly-2", json!({"includedResources": ["configmaps", "secrets", "deployments", "services", "persistentvolumeclaims"]})).await;
    let diff = get(
        &env,
        "/api/v1/namespaces/team-a/backups/nightly-2/diff?against=nightly",
        &env.alice,
    )
    .await;
    assert_eq!(diff.status, StatusCode::OK, "{}", diff.text());
    let diff = diff.json();
    assert_eq!(diff["from"]["name"], "nightly");
    assert_eq!(diff["to"]["name"], "nightly-2");
    assert!(has_item(&diff["added"], "configmaps", "extra"), "{diff}");
    assert_eq!(diff["removed"], json!([]));
    let changed = diff["changed"].as_array().unwrap();
    assert!(
        changed.iter().any(|c| c["identity"]["name"] == "web-config"
            && c["fields"].as_array().unwrap().contains(&json!("labels"))),
        "{diff}"
    );
    let no_against = get(
        &env,
        "/api/v1/namespaces/team-a/backups/nightly-2/diff",
        &env.alice,
    )
    .await;
    assert_eq!(no_against.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(no_against.text().contains("against"));

    // Tenants: bob learns nothing of team-a's backups, existing or not.
    for suffix in ["manifest", "contents", "graph", "diff?against=nightly"] {
        let existing = get(
            &env,
            &format!("/api/v1/namespaces/team-a/backups/nightly/{suffix}"),
            &env.bob,
        )
        .await;
        let made_up = get(
            &env,
            &format!("/api/v1/namespaces/team-a/backups/no-such-backup/{suffix}"),
            &env.bob,
        )
        .await;
        assert_eq!(existing.status, StatusCode::FORBIDDEN, "{suffix}");
        assert_eq!(
            gateway_support::without_request_id(existing.json()),
            gateway_support::without_request_id(made_up.json()),
            "{suffix}"
        );
        assert!(!existing.text().contains("web-config"));
    }
    let bob_dry = call(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-a/backups?dryRun=true",
        &env.bob,
        Some(json!({"name": "peek", "spec": {"backupSpec": {}}})),
    )
    .await;
    assert_eq!(bob_dry.status, StatusCode::FORBIDDEN);
    assert!(!bob_dry.text().contains("web-config"));
    // A backup without a manifest (there is none) is a plain 404 for its own tenant.
    let missing = get(
        &env,
        "/api/v1/namespaces/team-a/backups/no-such-backup/manifest",
        &env.alice,
    )
    .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND, "{}", missing.text());
    assert!(missing.is_problem());
    let anonymous = gateway_support::call(
        &env.router,
        Method::GET,
        "/api/v1/namespaces/team-a/backups/nightly/manifest",
        Auth::None,
        None,
        &[],
    )
    .await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    drop(env.server);
}

/// Right after `?wait=true` answers Completed the manifest is still being built: every
/// manifest read (REST manifest, contents, graph, diff; GraphQL) answers 202 with `Retry-After`
/// and a problem, never 404; once built, 200. A backup that does not exist stays 404, and
/// another tenant's answer stays the 403 of a made-up name. The builder is held back (started
/// only after the 202s) so that the window cannot close before the reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manifest_being_built_answers_202_with_retry_after_then_200() {
    use nac::history::manifests::ManifestBuilder;
    use nac::history::recorder::{Recorder, RecorderConfig};
    use nac::sim::demo::{CONTROLLER_SERVICE_ACCOUNT, OADP_NAMESPACE};

    let (server, admin) =
        gateway_support::emulator(nac::sim::apiserver::EmulatorConfig::default()).await;
    let _velero = gateway_support::start_velero_and_controllers_with(&server, &admin, |_| {}).await;
    let (history, _history_dir) = support::sqlite_history().await;
    let controller =
        server.client(&support::sa_token(&admin, OADP_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT).await);
    let recorder = Recorder::new(
        controller.clone(),
        OADP_NAMESPACE,
        history.clone(),
        RecorderConfig {
            flush_interval: Duration::from_millis(50),
            ..RecorderConfig::default()
        },
    );
    let mut tasks = vec![tokio::spawn(recorder.run())];
    let router =
        gateway_support::start_gateway(&server, &admin, history.clone(), gateway_support::config())
            .await;
    let tokens = gateway_support::tokens(&server, &admin).await;
    let get = |path: String, token: String| {
        let router = router.clone();
        async move {
            gateway_support::call(&router, Method::GET, &path, Auth::Bearer(&token), None, &[])
                .await
        }
    };

    let created = gateway_support::call(
        &router,
        Method::POST,
        "/api/v1/namespaces/team-a/backups?wait=true&timeout=90s",
        Auth::Bearer(&tokens.alice),
        Some(json!({"name": "fresh", "spec": {"backupSpec": {}}})),
        &[],
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    assert_eq!(
        velero_phase(&created.json()),
        "Completed",
        "{}",
        created.text()
    );

    let reads = [
        "manifest",
        "contents",
        "graph",
        "diff?against=fresh",
        "manifest?download=true",
    ];
    for suffix in reads {
        let path = format!("/api/v1/namespaces/team-a/backups/fresh/{suffix}");
        let pending = get(path.clone(), tokens.alice.clone()).await;
        assert_eq!(
            pending.status,
            StatusCode::ACCEPTED,
            "{suffix}: {}",
            pending.text()
        );
        assert_eq!(pending.header("retry-after"), Some("2"), "{suffix}");
        assert!(pending.is_problem(), "{suffix}");
        let problem = pending.json();
        assert_eq!(problem["status"], 202, "{problem}");
        assert_eq!(problem["code"], "manifest-pending", "{problem}");
        assert_eq!(
            problem["type"], "https://nac.openshift.io/problems/manifest-pending",
            "{problem}"
        );
        assert_eq!(problem["title"], "Manifest being built", "{problem}");
        assert!(
            problem["detail"]
                .as_str()
                .unwrap()
                .contains("manifest is being built"),
            "{problem}"
        );
        assert!(pending.header("content-disposition").is_none(), "{suffix}");
    }
    let graphql = gateway_support::call(
        &router,
        Method::POST,
        "/graphql",
        Auth::Bearer(&tokens.alice),
        Some(json!({"query": "{ backupManifest(namespace: \"team-a\", name: \"fresh\") { total } }"})),
        &[],
    )
    .await;
    let error = &graphql.json()["errors"][0];
    assert_eq!(
        error["extensions"]["code"],
        "MANIFEST_PENDING",
        "{}",
        graphql.text()
    );
    assert_eq!(
        error["extensions"]["retryAfterSeconds"],
        2,
        "{}",
        graphql.text()
    );

    // A backup that does not exist is still a 404 for its tenant, and bob learns nothing:
    // the pending backup answers him exactly as a made-up name does.
    let missing = get(
        "/api/v1/namespaces/team-a/backups/no-such-backup/manifest".into(),
        tokens.alice.clone(),
    )
    .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND, "{}", missing.text());
    for suffix in reads {
        let existing = get(
            format!("/api/v1/namespaces/team-a/backups/fresh/{suffix}"),
            tokens.bob.clone(),
        )
        .await;
        let made_up = get(
            format!("/api/v1/namespaces/team-a/backups/no-such-backup/{suffix}"),
            tokens.bob.clone(),
        )
        .await;
        assert_eq!(existing.status, StatusCode::FORBIDDEN, "{suffix}");
        assert!(existing.header("retry-after").is_none(), "{suffix}");
        assert_eq!(
            gateway_support::without_request_id(existing.json()),
            gateway_support::without_request_id(made_up.json()),
            "{suffix}"
        );
    }

    // The builder catches up: the same reads answer 200.
    let builder = ManifestBuilder::new(
        controller,
        OADP_NAMESPACE,
        history.clone(),
        std::sync::Arc::new(
            nac::manifest::fetch::HttpArtifactFetcher::new(Duration::from_secs(20)).unwrap(),
        ),
        support::nac_stack::quick_manifest_builder_config(),
    );
    tasks.push(tokio::spawn(builder.run()));
    eventually_seen("the manifest to be built", 60, || async {
        let answer = get(
            "/api/v1/namespaces/team-a/backups/fresh/manifest".into(),
            tokens.alice.clone(),
        )
        .await;
        if answer.status == StatusCode::OK {
            assert_eq!(
                answer.json()["backup"]["name"],
                "fresh",
                "{}",
                answer.text()
            );
            return Ok(());
        }
        assert_eq!(answer.status, StatusCode::ACCEPTED, "{}", answer.text());
        Err("the manifest was never built")
    })
    .await;
    for suffix in reads {
        let answer = get(
            format!("/api/v1/namespaces/team-a/backups/fresh/{suffix}"),
            tokens.alice.clone(),
        )
        .await;
        assert_eq!(answer.status, StatusCode::OK, "{suffix}: {}", answer.text());
    }
    for task in tasks {
        task.abort();
    }
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_restore_preview_says_what_the_restore_then_does() {
    let env = env(None).await;
    let manifest = backup_with_manifest(&env, "source", json!({})).await;
    assert!(has_item(&manifest["items"], "configmaps", "web-config"));

    // The namespace drifts: one object deleted, one changed.
    let configmaps: Api<ConfigMap> = Api::namespaced(env.admin.clone(), "team-a");
    configmaps
        .delete("web-config", &DeleteParams::default())
        .await
        .unwrap();
    let secrets: Api<Secret> = Api::namespaced(env.admin.clone(), "team-a");
    secrets
        .patch(
            "web-credentials",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"drifted": "yes"}}})),
        )
        .await
        .unwrap();

    let restore_spec = json!({"backupName": "source", "existingResourcePolicy": "update"});
    let preview = call(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-a/restores?dryRun=true",
        &env.alice,
        Some(json!({"name": "undo", "spec": {"restoreSpec": restore_spec}})),
    )
    .await;
    assert_eq!(preview.status, StatusCode::OK, "{}", preview.text());
    let preview = preview.json();
    assert_eq!(preview["kind"], "RestorePreview");
    assert_eq!(preview["backupName"], "source");
    let entries = preview["entries"].as_array().unwrap().clone();
    let action_of = |resource: &str, name: &str| {
        entries
            .iter()
            .find(|e| e["resource"] == resource && e["name"] == name)
            .map(|e| e["action"].as_str().unwrap().to_owned())
            .unwrap_or_else(|| panic!("{resource}/{name} not in the preview: {entries:?}"))
    };
    let configmap_action = action_of("configmaps", "web-config");
    let secret_action = action_of("secrets", "web-credentials");
    assert_eq!(configmap_action, "Create");
    assert_eq!(secret_action, "Update");
    // Nothing restored yet.
    assert!(configmaps.get_opt("web-config").await.unwrap().is_none());

    // The restore does what the preview said.
    let created = call(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-a/restores?wait=true&timeout=60s",
        &env.alice,
        Some(json!({"name": "undo", "spec": {"restoreSpec": restore_spec}})),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    let restore = created.json();
    let velero = &restore["status"]["veleroRestore"]["status"];
    assert_eq!(velero["phase"], "Completed", "{restore}");
    assert_eq!(
        velero["progress"]["totalItems"], preview["counts"]["total"],
        "the preview counts the items the restore processes: {preview}"
    );
    let restored = configmaps.get("web-config").await.unwrap();
    assert_eq!(
        restored.data.unwrap()["greeting"],
        "hello from team-a",
        "created from the backup"
    );
    let secret = secrets.get("web-credentials").await.unwrap();
    assert!(
        !secret
            .metadata
            .labels
            .unwrap_or_default()
            .contains_key("drifted"),
        "updated back to the backup's labels"
    );
    // Order: Velero's priorities put namespaces' contents in its resource order.
    let position = |resource: &str| {
        entries
            .iter()
            .position(|e| e["resource"] == resource)
            .unwrap()
    };
    assert!(position("persistentvolumeclaims") < position("deployments"));
    assert!(position("secrets") < position("deployments"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_overlapping_a_running_one_is_reported_as_waiting_on_it() {
    let env = env(Some(Duration::from_millis(700))).await;
    let created = call(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-a/backups",
        &env.alice,
        Some(json!({"name": "long", "spec": {"backupSpec": {}}})),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    wait_for(&env, "/api/v1/namespaces/team-a/backups/long", 30, |a| {
        a.status == StatusCode::OK && velero_phase(&a.json()) == "InProgress"
    })
    .await;
    let dry = call(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-a/backups?dryRun=true",
        &env.alice,
        Some(json!({"name": "configs", "spec": {"backupSpec": {"includedResources": ["configmaps"]}}})),
    )
    .await;
    assert_eq!(dry.status, StatusCode::OK, "{}", dry.text());
    let dry = dry.json();
    let overlaps = dry["overlaps"].as_array().unwrap();
    assert_eq!(overlaps.len(), 1, "{dry}");
    assert_eq!(overlaps[0]["operation"], "backup long");
    let shared: Vec<&str> = overlaps[0]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert!(shared.contains(&"web-config"), "{dry}");
    assert_eq!(
        overlaps[0]["total"].as_u64().unwrap() as usize,
        dry["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["resource"] == "configmaps")
            .count(),
        "every configmap is in the running whole-namespace backup"
    );
    // Bob's dry-run in team-b is told nothing of team-a's running backup.
    let bob = call(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-b/backups?dryRun=true",
        &env.bob,
        Some(json!({"name": "b", "spec": {"backupSpec": {}}})),
    )
    .await;
    assert_eq!(bob.status, StatusCode::OK, "{}", bob.text());
    assert_eq!(bob.json()["overlaps"], json!([]));
    assert!(!bob.text().contains("long"));
}
