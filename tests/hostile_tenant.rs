//! A hostile tenant gets nothing, on the emulator and on a real kube-apiserver: users inside a
//! namespace who may read NonAdminBackups but not Secrets (a `view` user, a create-only CI
//! service account) read no Secret through a backup's manifest, contents, owner graph, diff or
//! restore preview — neither its name nor a value kept in an annotation — and are told how many
//! items are hidden and why; the namespace's owner sees every item, never a
//! `last-applied-configuration`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use http::{Method, StatusCode};
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::Role;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use support::cluster::TestCluster;
use support::nac_stack::{self, Answer, NacStack};

/// The password alice keeps in her Secret; no answer to anyone else may carry it.
const PASSWORD: &str = "hunter2-f00d";

on_both_servers!(secrets_stay_out_of_backup_contents_for_those_who_may_not_list_them);

/// Namespace `ns` owned by alice, with a Secret applied as `kubectl apply` leaves it (the whole
/// object, password included, in `last-applied-configuration`), a `view` user, a create-only
/// CI service account and a user who may restore but not read Secrets.
struct Tenancy {
    ns: String,
    alice: String,
    viewer: String,
    ci_bot: String,
    restorer: String,
}

async fn tenancy(cluster: &TestCluster) -> Tenancy {
    let ns = cluster.unique_name("hostile-contents", None);
    cluster.tenant_namespace("alice", &ns).await;
    let applied = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "db-creds", "namespace": ns},
        "stringData": {"password": PASSWORD}
    });
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "db-creds", "namespace": ns, "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": applied.to_string(),
            "openshift.io/token-secret.value": format!("token-{PASSWORD}"),
        }},
        "stringData": {"password": PASSWORD}
    }))
    .unwrap();
    Api::<Secret>::namespaced(cluster.admin(), &ns)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    cluster.bind(&ns, "viewer", "User", "view").await;
    let account: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "ci-bot", "namespace": ns}})).unwrap();
    Api::<ServiceAccount>::namespaced(cluster.admin(), &ns)
        .create(&PostParams::default(), &account)
        .await
        .unwrap();
    cluster
        .bind(
            &ns,
            "ci-bot",
            "ServiceAccount",
            "nac-nonadmin-backup-creator",
        )
        .await;
    // Restores and previews, but no Secret (nor anything else) to read.
    let role: Role = serde_json::from_value(json!({
        "metadata": {"name": "restorer", "namespace": ns},
        "rules": [
            {"apiGroups": ["oadp.openshift.io"], "resources": ["nonadminbackups"], "verbs": ["get", "list"]},
            {"apiGroups": ["oadp.openshift.io"], "resources": ["nonadminrestores"], "verbs": ["create", "get", "list"]},
            {"apiGroups": ["oadp.openshift.io"], "resources": ["nonadmindownloadrequests"], "verbs": ["create", "get", "delete"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}
        ]
    }))
    .unwrap();
    Api::<Role>::namespaced(cluster.admin(), &ns)
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    let binding: k8s_openapi::api::rbac::v1::RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "restorer", "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "restorer"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "carol"}]
    }))
    .unwrap();
    Api::<k8s_openapi::api::rbac::v1::RoleBinding>::namespaced(cluster.admin(), &ns)
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    Tenancy {
        alice: cluster.user_token("alice"),
        viewer: cluster.user_token("viewer"),
        ci_bot: cluster.sa_token(&ns, "ci-bot").await,
        restorer: cluster.user_token("carol"),
        ns,
    }
}

/// Creates backup `name` of `ns` as `token` and waits for its manifest (as alice).
async fn backup_with_manifest(stack: &NacStack, t: &Tenancy, token: &str, name: &str) {
    let created = stack
        .call(
            Method::POST,
            &format!("/api/v1/namespaces/{}/backups", t.ns),
            token,
            Some(json!({"name": name, "spec": {"backupSpec": {}}})),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    let path = format!("/api/v1/namespaces/{}/backups/{name}/manifest", t.ns);
    support::cluster::eventually(&format!("the manifest of {name}"), 120, || async {
        let answer = stack.get(&path, &t.alice).await;
        (answer.status == StatusCode::OK).then_some(())
    })
    .await;
}

/// Asserts that nothing of the Secret is in `answer` (its name, its password, its token).
fn assert_no_secret(who: &str, what: &str, answer: &Answer) {
    assert_eq!(
        answer.status,
        StatusCode::OK,
        "{who} {what}: {}",
        answer.text()
    );
    let text = answer.text();
    for leak in ["db-creds", PASSWORD, "web-credentials"] {
        assert!(
            !text.contains(leak),
            "{who} reads {leak:?} through the {what}: {text}"
        );
    }
}

/// The `hidden` line of `answer` for Secrets.
fn hidden_secrets(answer: &Value) -> Value {
    answer["hidden"]
        .as_array()
        .unwrap_or_else(|| panic!("no hidden list in {answer}"))
        .iter()
        .find(|hidden| hidden["resource"] == "secrets")
        .cloned()
        .unwrap_or_else(|| panic!("Secrets are not counted as hidden in {answer}"))
}

async fn graphql(stack: &NacStack, token: &str, query: &str) -> Answer {
    stack
        .call(
            Method::POST,
            "/graphql",
            token,
            Some(json!({"query": query})),
        )
        .await
}

async fn secrets_stay_out_of_backup_contents_for_those_who_may_not_list_them(cluster: TestCluster) {
    let stack = nac_stack::start(&cluster, |options| {
        options.item_delay = Duration::from_millis(0);
    })
    .await;
    let t = tenancy(&cluster).await;
    let ns = t.ns.clone();
    // The CI account starts the first backup itself, as a pipeline does; alice the second.
    backup_with_manifest(&stack, &t, &t.ci_bot, "ci-leak").await;
    backup_with_manifest(&stack, &t, &t.alice, "second").await;
    let base = format!("/api/v1/namespaces/{ns}/backups/ci-leak");

    // The owner may list Secrets: she sees them, but no annotation holds a value of theirs.
    let owners = stack.get(&format!("{base}/manifest"), &t.alice).await;
    assert_eq!(owners.status, StatusCode::OK, "{}", owners.text());
    let text = owners.text();
    assert!(
        text.contains("db-creds"),
        "the owner sees her Secret: {text}"
    );
    assert!(
        !text.contains(PASSWORD),
        "a password is kept in the manifest: {text}"
    );
    assert!(!text.contains("last-applied-configuration"), "{text}");
    assert!(
        owners.json().get("hidden").is_none(),
        "nothing is hidden from the owner"
    );

    for (who, token) in [("the view user", &t.viewer), ("ci-bot", &t.ci_bot)] {
        let manifest = stack.get(&format!("{base}/manifest"), token).await;
        assert_no_secret(who, "manifest", &manifest);
        let manifest = manifest.json();
        let secrets = hidden_secrets(&manifest);
        assert_eq!(secrets["count"], 2, "{who}: {secrets}");
        assert_eq!(
            secrets["message"],
            format!("2 Secret items hidden: you may not list secrets in {ns}")
        );
        assert!(
            manifest["counts"]
                .as_array()
                .unwrap()
                .iter()
                .all(|count| count["resource"] != "secrets"),
            "{who}: counts name no Secret kind: {manifest}"
        );
        let sees_config = manifest["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|item| item["name"] == "web-config");
        // The view user lists ConfigMaps; the CI account may list nothing but backups.
        assert_eq!(sees_config, *token == t.viewer, "{who}: {manifest}");

        let contents = stack
            .get(&format!("{base}/contents?kind=secrets"), token)
            .await;
        assert_no_secret(who, "contents", &contents);
        assert_eq!(contents.json()["matched"], 0, "{}", contents.text());
        assert_eq!(hidden_secrets(&contents.json())["count"], 2);

        let graph = stack.get(&format!("{base}/graph"), token).await;
        assert_no_secret(who, "owner graph", &graph);

        let diff = stack
            .get(
                &format!("/api/v1/namespaces/{ns}/backups/second/diff?against=ci-leak"),
                token,
            )
            .await;
        assert_no_secret(who, "diff", &diff);

        let query = format!(
            r#"{{ backupManifest(namespace: "{ns}", name: "ci-leak") {{ total items {{ items {{ name annotations }} hidden {{ count message }} }} hidden {{ resource count message }} }} }}"#
        );
        let answer = graphql(&stack, token, &query).await;
        assert_no_secret(who, "GraphQL manifest", &answer);
        let data = answer.json();
        assert!(data.get("errors").is_none(), "{who}: {data}");
        let hidden = &data["data"]["backupManifest"]["hidden"];
        assert_eq!(hidden_secrets(&json!({ "hidden": hidden }))["count"], 2);
    }

    // Previewing a restore needs no Secret access either, and shows none.
    let preview = stack
        .call(
            Method::POST,
            &format!("/api/v1/namespaces/{ns}/restores?dryRun=true"),
            &t.restorer,
            Some(json!({"name": "peek", "spec": {"restoreSpec": {"backupName": "ci-leak"}}})),
        )
        .await;
    assert_no_secret("a restorer", "restore preview", &preview);
    let preview = preview.json();
    assert_eq!(hidden_secrets(&preview)["count"], 2, "{preview}");
    assert!(
        preview["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|entry| entry["name"] == "web-config"),
        "{preview}"
    );

    // The dry-run collects as the caller: ci-bot may not list Secrets, so none are named.
    let dry_run = stack
        .call(
            Method::POST,
            &format!("/api/v1/namespaces/{ns}/backups?dryRun=true"),
            &t.ci_bot,
            Some(json!({"name": "would-be", "spec": {"backupSpec": {}}})),
        )
        .await;
    assert_no_secret("ci-bot", "dry-run", &dry_run);
}
