//! Backup manifests over GraphQL (seed 002) against the in-process emulator, the Velero
//! simulator, NAC's controllers, the history recorder and the manifest builder (both as the
//! controller's service account), and the gateway: `backupDryRun` answers what REST's
//! `POST …/backups?dryRun=true` answers and creates nothing, and the backup that follows has
//! exactly that manifest (`backupManifest`, paged and filtered, equal to REST's
//! `manifest.json`); `backupOwnerGraph`, `backupDiff` and `restorePreview` (equal to REST's
//! `POST …/restores?dryRun=true`, owners before dependents); another tenant gets the same
//! FORBIDDEN for an existing and a made-up backup and never an item name; bad arguments are
//! named; a session cookie needs its CSRF token for these queries too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/gateway.rs"]
mod gateway_support;
#[path = "support/manifest_env.rs"]
mod manifest_env;
mod support;
use support::cluster::eventually;

use gateway_support::{Answer, Auth, backup_names, call};
use http::{Method, StatusCode};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use manifest_env::Env;
use nac::api::nonadmin::NonAdminRestore;
use serde_json::{Value, json};

/// The emulator with the demo, Velero and the controllers, the recorder and the manifest
/// builder (quick pacing) over a SQLite history, and the gateway over the same history.
async fn env() -> Env {
    manifest_env::env_with(|_| {}).await
}

impl Answer {
    fn data(&self) -> Value {
        assert_eq!(self.status, StatusCode::OK, "{}", self.text());
        let json = self.json();
        assert!(json.get("errors").is_none(), "unexpected errors: {json}");
        json["data"].clone()
    }
    /// The first error.
    fn error(&self) -> Value {
        let json = self.json();
        assert!(json["errors"][0].is_object(), "no error: {json}");
        json["errors"][0].clone()
    }
    fn code(&self) -> String {
        self.error()["extensions"]["code"]
            .as_str()
            .unwrap_or_else(|| panic!("no error code: {}", self.text()))
            .to_string()
    }
}

async fn gql_as(env: &Env, auth: Auth<'_>, query: &str, variables: Value) -> Answer {
    call(
        &env.router,
        Method::POST,
        "/graphql",
        auth,
        Some(json!({"query": query, "variables": variables})),
        &[],
    )
    .await
}

async fn gql(env: &Env, token: &str, query: &str, variables: Value) -> Answer {
    gql_as(env, Auth::Bearer(token), query, variables).await
}

async fn rest(env: &Env, method: Method, path: &str, token: &str, body: Option<Value>) -> Answer {
    call(&env.router, method, path, Auth::Bearer(token), body, &[]).await
}

const ITEM_FIELDS: &str = "key group version apiVersion kind resource groupResource namespace name labels annotations owners uid";

/// The fields of a manifest item that both APIs give, from either answer (REST leaves empty
/// maps and lists out).
fn item_of(item: &Value) -> Value {
    let or_empty = |value: &Value, empty: Value| {
        if value.is_null() {
            empty
        } else {
            value.clone()
        }
    };
    json!({
        "group": item["group"], "version": item["version"], "kind": item["kind"],
        "resource": item["resource"], "namespace": item["namespace"], "name": item["name"],
        "labels": or_empty(&item["labels"], json!({})),
        "annotations": or_empty(&item["annotations"], json!({})),
        "owners": or_empty(&item["owners"], json!([])),
        "uid": item["uid"],
    })
}

fn items_of(list: &Value) -> Vec<Value> {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(item_of)
        .collect()
}

fn names_of(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|item| item["name"].as_str().unwrap().to_string())
        .collect()
}

/// `AlreadyExists` → `ALREADY_EXISTS`: REST's enum values as GraphQL spells them (GraphQL's
/// own are left as they are).
fn screaming(text: &str) -> String {
    let mut out = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if c.is_ascii_uppercase() && previous_lower {
            out.push('_');
        }
        previous_lower = c.is_ascii_lowercase();
        out.push(c.to_ascii_uppercase());
    }
    out
}

async fn configmap(env: &Env, body: Value) -> ConfigMap {
    let api: Api<ConfigMap> = Api::namespaced(env.admin.clone(), "team-a");
    api.create(
        &PostParams::default(),
        &serde_json::from_value(body).unwrap(),
    )
    .await
    .unwrap()
}

/// Creates backup `name` in team-a as alice (REST) and waits until its manifest is stored.
async fn backed_up(env: &Env, name: &str) {
    let created = rest(
        env,
        Method::POST,
        "/api/v1/namespaces/team-a/backups",
        &env.alice,
        Some(json!({"name": name, "spec": {"backupSpec": {}}})),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    eventually(&format!("the manifest of {name}"), 120, || async {
        let answer = gql(
            env,
            &env.alice,
            "query($n: String!) { backupManifest(namespace: \"team-a\", name: $n) { total } }",
            json!({"n": name}),
        )
        .await;
        let json = answer.json();
        if json.get("errors").is_none() {
            return Some(());
        }
        // Not found while the backup runs; being built once it has completed.
        assert!(
            matches!(answer.code().as_str(), "NOT_FOUND" | "MANIFEST_PENDING"),
            "{json}"
        );
        None
    })
    .await;
}

const DRY_RUN: &str = "query($ns: String!, $b: JSON!) { backupDryRun(namespace: $ns, backup: $b) { apiVersion kind backup totalItems counts { group kind resource count } items { ITEM } unreadable { group version kind resource groupResource namespace reason message } overlaps { operation total truncated items { groupResource namespace name } } } }";

const PAGE: &str = "query($n: String!, $limit: Int, $after: String, $kind: String, $q: String, $sel: String) { backupManifest(namespace: \"team-a\", name: $n) { apiVersion kind formatVersion total backup { namespace name veleroBackup completedAt } counts { kind count } items(kind: $kind, q: $q, labelSelector: $sel, limit: $limit, after: $after) { total matched continue items { ITEM } } } }";

fn with_items(query: &str) -> String {
    query.replace("ITEM", ITEM_FIELDS)
}

/// Every item of backup `name`, page by page (`limit` a page).
async fn all_pages(env: &Env, name: &str, limit: i32) -> (Vec<Value>, u64) {
    let mut items = Vec::new();
    let mut after: Option<String> = None;
    let mut pages = 0;
    loop {
        let data = gql(
            env,
            &env.alice,
            &with_items(PAGE),
            json!({"n": name, "limit": limit, "after": after}),
        )
        .await
        .data();
        let page = &data["backupManifest"]["items"];
        assert!(page["items"].as_array().unwrap().len() <= limit as usize);
        items.extend(items_of(&page["items"]));
        pages += 1;
        match page["continue"].as_str() {
            Some(token) => after = Some(token.to_string()),
            None => return (items, pages),
        }
    }
}

#[tokio::test]
async fn dry_run_then_manifest_graph_diff_and_restore_preview() {
    let env = env().await;
    let owner = configmap(
        &env,
        json!({"metadata": {"name": "alpha-owner", "labels": {"app": "alpha"}}, "data": {"k": "v"}}),
    )
    .await;
    configmap(
        &env,
        json!({"metadata": {"name": "alpha-child", "labels": {"app": "alpha"},
                            "annotations": {"note": "child"},
                            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap",
                                                 "name": "alpha-owner", "uid": owner.metadata.uid}]},
               "data": {"k": "v"}}),
    )
    .await;

    // --- The dry-run: REST's answer, and nothing created.
    let body = json!({"name": "nightly-1", "spec": {"backupSpec": {}}});
    let dry = gql(
        &env,
        &env.alice,
        &with_items(DRY_RUN),
        json!({"ns": "team-a", "b": body}),
    )
    .await
    .data()["backupDryRun"]
        .clone();
    let rest_dry = rest(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-a/backups?dryRun=true",
        &env.alice,
        Some(body.clone()),
    )
    .await;
    assert_eq!(rest_dry.status, StatusCode::OK, "{}", rest_dry.text());
    let rest_dry = rest_dry.json();
    assert_eq!(dry["kind"], "BackupDryRun");
    assert_eq!(dry["apiVersion"], rest_dry["apiVersion"]);
    assert_eq!(dry["backup"]["metadata"]["name"], "nightly-1");
    let dry_items = items_of(&dry["items"]);
    assert_eq!(dry_items, items_of(&rest_dry["items"]));
    assert_eq!(dry["totalItems"], rest_dry["totalItems"]);
    assert_eq!(dry["totalItems"], dry_items.len());
    assert_eq!(dry["counts"], rest_dry["counts"]);
    assert_eq!(
        dry["unreadable"].as_array().unwrap().len(),
        rest_dry["unreadable"].as_array().unwrap().len()
    );
    assert_eq!(dry["overlaps"], json!([]));
    let names = names_of(&dry["items"]);
    for name in ["alpha-owner", "alpha-child", "web-config", "web"] {
        assert!(
            names.contains(&name.to_string()),
            "{name} missing: {names:?}"
        );
    }
    assert!(
        dry["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|item| item["namespace"] == "team-a" || item["namespace"].is_null()),
        "{dry}"
    );
    assert!(
        !backup_names(&env.admin, "team-a")
            .await
            .contains(&"nightly-1".to_string())
    );

    // --- The backup that follows has exactly that manifest.
    backed_up(&env, "nightly-1").await;
    let (paged, pages) = all_pages(&env, "nightly-1", 2).await;
    assert_eq!(pages, paged.len().div_ceil(2) as u64);
    // The backup also holds the Events NAC recorded about it in the namespace (after the
    // dry-run, which cannot foresee them); everything else is exactly the dry-run's.
    let (own_events, taken): (Vec<Value>, Vec<Value>) = paged.iter().cloned().partition(|item| {
        item["kind"] == "Event" && item["name"].as_str().unwrap().starts_with("nightly-1.")
    });
    assert_eq!(
        taken, dry_items,
        "the dry-run differs from the backup's manifest"
    );
    assert!(own_events.len() <= 10, "{own_events:?}");
    let first = gql(
        &env,
        &env.alice,
        &with_items(PAGE),
        json!({"n": "nightly-1"}),
    )
    .await
    .data()["backupManifest"]
        .clone();
    assert_eq!(first["kind"], "BackupManifest");
    assert_eq!(first["backup"]["name"], "nightly-1");
    assert_eq!(first["backup"]["namespace"], "team-a");
    assert!(
        first["backup"]["completedAt"]
            .as_str()
            .unwrap()
            .ends_with('Z'),
        "{first}"
    );
    assert_eq!(first["total"], paged.len());
    assert_eq!(first["items"]["matched"], paged.len());
    assert!(first["items"]["continue"].is_null());
    let counted: u64 = first["counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["count"].as_u64().unwrap())
        .sum();
    assert_eq!(counted, paged.len() as u64);
    let manifest_json = rest(
        &env,
        Method::GET,
        "/api/v1/namespaces/team-a/backups/nightly-1/manifest",
        &env.alice,
        None,
    )
    .await;
    assert_eq!(
        manifest_json.status,
        StatusCode::OK,
        "{}",
        manifest_json.text()
    );
    assert_eq!(items_of(&manifest_json.json()["items"]), paged);

    // Filters, as REST's contents browser filters.
    let filtered = gql(
        &env,
        &env.alice,
        &with_items(PAGE),
        json!({"n": "nightly-1", "kind": "configmaps", "sel": "app=alpha"}),
    )
    .await
    .data()["backupManifest"]["items"]
        .clone();
    assert_eq!(names_of(&filtered["items"]), ["alpha-child", "alpha-owner"]);
    assert_eq!(filtered["matched"], 2);
    let child = &filtered["items"][0];
    assert_eq!(child["key"], "configmaps/team-a/v1/alpha-child");
    assert_eq!(child["apiVersion"], "v1");
    assert_eq!(child["labels"], json!({"app": "alpha"}));
    assert_eq!(child["annotations"], json!({"note": "child"}));
    assert_eq!(child["owners"], json!([owner.metadata.uid]));
    let rest_page = rest(
        &env,
        Method::GET,
        "/api/v1/namespaces/team-a/backups/nightly-1/contents?kind=configmaps&labelSelector=app%3Dalpha",
        &env.alice,
        None,
    )
    .await
    .json();
    assert_eq!(items_of(&rest_page["items"]), items_of(&filtered["items"]));
    let by_text = gql(
        &env,
        &env.alice,
        &with_items(PAGE),
        json!({"n": "nightly-1", "q": "CHILD"}),
    )
    .await
    .data();
    assert_eq!(
        names_of(&by_text["backupManifest"]["items"]["items"]),
        ["alpha-child"]
    );

    // --- The owner graph.
    let graph = gql(
        &env,
        &env.alice,
        "{ backupOwnerGraph(namespace: \"team-a\", name: \"nightly-1\") { nodes edges { owner dependent } missingOwners { dependent ownerUid } } }",
        json!({}),
    )
    .await
    .data()["backupOwnerGraph"]
        .clone();
    assert_eq!(graph["nodes"].as_array().unwrap().len(), paged.len());
    assert!(
        graph["edges"].as_array().unwrap().contains(&json!({
            "owner": "configmaps/team-a/v1/alpha-owner",
            "dependent": "configmaps/team-a/v1/alpha-child"
        })),
        "{graph}"
    );

    // --- Change the namespace, back up again, diff.
    let configmaps: Api<ConfigMap> = Api::namespaced(env.admin.clone(), "team-a");
    configmaps
        .patch(
            "alpha-owner",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"tier": "gold"}}})),
        )
        .await
        .unwrap();
    configmaps
        .delete("alpha-child", &DeleteParams::default())
        .await
        .unwrap();
    configmap(
        &env,
        json!({"metadata": {"name": "alpha-new"}, "data": {"k": "v"}}),
    )
    .await;
    backed_up(&env, "nightly-2").await;
    let diff = gql(
        &env,
        &env.alice,
        &with_items("{ backupDiff(namespace: \"team-a\", name: \"nightly-2\", against: \"nightly-1\") { from { name } to { name } added { ITEM } removed { ITEM } changed { identity { groupResource namespace name } fields before { labels } after { labels } } unchanged } }"),
        json!({}),
    )
    .await
    .data()["backupDiff"]
        .clone();
    assert_eq!(diff["from"]["name"], "nightly-1");
    assert_eq!(diff["to"]["name"], "nightly-2");
    assert!(
        names_of(&diff["added"]).contains(&"alpha-new".to_string()),
        "{diff}"
    );
    assert!(
        names_of(&diff["removed"]).contains(&"alpha-child".to_string()),
        "{diff}"
    );
    let changed = diff["changed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["identity"]["name"] == "alpha-owner")
        .unwrap_or_else(|| panic!("alpha-owner not changed: {diff}"));
    assert_eq!(changed["identity"]["groupResource"], "configmaps");
    assert_eq!(changed["fields"], json!(["LABELS"]));
    assert_eq!(changed["before"]["labels"], json!({"app": "alpha"}));
    assert_eq!(
        changed["after"]["labels"],
        json!({"app": "alpha", "tier": "gold"})
    );
    assert!(diff["unchanged"].as_u64().unwrap() >= 4, "{diff}");

    // --- Restore preview of nightly-1 against the namespace as it is now: REST's answer.
    let restore = json!({"name": "back-to-1", "backupName": "nightly-1"});
    let preview = gql(
        &env,
        &env.alice,
        "query($r: JSON!) { restorePreview(namespace: \"team-a\", restore: $r) { apiVersion kind restore backupName entries { group version kind resource namespace targetNamespace name action reason message warning } counts { total create update skip fail undetermined excluded warnings namespacesCreated } overlaps { operation } } }",
        json!({"r": restore}),
    )
    .await
    .data()["restorePreview"]
        .clone();
    let rest_preview = rest(
        &env,
        Method::POST,
        "/api/v1/namespaces/team-a/restores?dryRun=true",
        &env.alice,
        Some(restore),
    )
    .await;
    assert_eq!(
        rest_preview.status,
        StatusCode::OK,
        "{}",
        rest_preview.text()
    );
    let rest_preview = rest_preview.json();
    assert_eq!(preview["kind"], "RestorePreview");
    assert_eq!(preview["backupName"], "nightly-1");
    assert_eq!(preview["restore"]["metadata"]["name"], "back-to-1");
    assert_eq!(preview["counts"], rest_preview["counts"]);
    let entry = |e: &Value| {
        (
            e["kind"].as_str().unwrap().to_string(),
            e["name"].as_str().unwrap().to_string(),
            screaming(e["action"].as_str().unwrap()),
            screaming(e["reason"].as_str().unwrap()),
        )
    };
    let entries: Vec<_> = preview["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(entry)
        .collect();
    let rest_entries: Vec<_> = rest_preview["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(entry)
        .collect();
    assert_eq!(entries, rest_entries);
    let find = |name: &str| {
        let position = entries
            .iter()
            .position(|(kind, n, _, _)| kind == "ConfigMap" && n == name)
            .unwrap_or_else(|| panic!("{name} not previewed: {entries:?}"));
        (position, entries[position].clone())
    };
    let (owner_at, owner_entry) = find("alpha-owner");
    let (child_at, child_entry) = find("alpha-child");
    let (_, same_entry) = find("web-config");
    assert_eq!(
        (child_entry.2.as_str(), child_entry.3.as_str()),
        ("CREATE", "ABSENT")
    );
    assert_eq!(
        (owner_entry.2.as_str(), owner_entry.3.as_str()),
        ("SKIP", "ALREADY_EXISTS")
    );
    assert_eq!(
        (same_entry.2.as_str(), same_entry.3.as_str()),
        ("SKIP", "IDENTICAL")
    );
    // Owners before dependents (alphabetically the child would come first).
    assert!(owner_at < child_at, "{entries:?}");
    assert!(preview["counts"]["create"].as_u64().unwrap() >= 1);
    // Nothing was created.
    let restores: Api<NonAdminRestore> = Api::namespaced(env.admin.clone(), "team-a");
    assert!(restores.get_opt("back-to-1").await.unwrap().is_none());
}

#[tokio::test]
async fn another_tenant_gets_the_same_forbidden_and_no_names() {
    let env = env().await;
    configmap(
        &env,
        json!({"metadata": {"name": "alpha-secret-plan", "labels": {"app": "alpha"}}, "data": {"k": "v"}}),
    )
    .await;
    backed_up(&env, "alpha-private").await;
    // The owner sees it.
    let own = gql(
        &env,
        &env.alice,
        "{ backupManifest(namespace: \"team-a\", name: \"alpha-private\") { items(q: \"secret-plan\") { items { name } } } }",
        json!({}),
    )
    .await
    .data();
    assert_eq!(
        names_of(&own["backupManifest"]["items"]["items"]),
        ["alpha-secret-plan"]
    );

    // Each query about team-a by bob (and by a user with no bindings): the same answer for
    // the existing backup and a made-up one.
    let queries: [QueryCase; 5] = [
        (
            "query($n: String!) { backupManifest(namespace: \"team-a\", name: $n) { total items { items { name } } } }",
            |n| json!({"n": n}),
        ),
        (
            "query($n: String!) { backupOwnerGraph(namespace: \"team-a\", name: $n) { nodes } }",
            |n| json!({"n": n}),
        ),
        (
            "query($n: String!) { backupDiff(namespace: \"team-a\", name: $n, against: $n) { added { name } } }",
            |n| json!({"n": n}),
        ),
        (
            "query($b: JSON!) { backupDryRun(namespace: \"team-a\", backup: $b) { items { name } } }",
            |n| json!({"b": {"name": n, "spec": {"backupSpec": {}}}}),
        ),
        (
            "query($r: JSON!) { restorePreview(namespace: \"team-a\", restore: $r) { entries { name } } }",
            |n| json!({"r": {"name": "peek", "backupName": n}}),
        ),
    ];
    for token in [&env.bob, &env.nobody] {
        for (query, variables) in &queries {
            let existing = gql(&env, token, query, variables("alpha-private")).await;
            let made_up = gql(&env, token, query, variables("no-such-backup")).await;
            assert_eq!(existing.status, StatusCode::OK);
            assert_eq!(existing.code(), "FORBIDDEN", "{query}: {}", existing.text());
            assert_eq!(
                existing.json(),
                made_up.json(),
                "{query}: existence revealed"
            );
            assert!(existing.json()["data"].is_null());
            let text = existing.text();
            for secret in ["alpha-secret-plan", "alpha-private", "web-config"] {
                assert!(!text.contains(secret), "{query}: {text}");
            }
        }
    }
    // Bob's own dry-run holds team-b's objects only.
    let bobs = gql(
        &env,
        &env.bob,
        &with_items(DRY_RUN),
        json!({"ns": "team-b", "b": {"name": "mine", "spec": {"backupSpec": {}}}}),
    )
    .await;
    let bobs_text = bobs.text();
    let bobs = bobs.data()["backupDryRun"].clone();
    assert!(!bobs["items"].as_array().unwrap().is_empty());
    assert!(
        bobs["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|item| item["namespace"] == "team-b" || item["name"] == "team-b"),
        "{bobs}"
    );
    assert!(!bobs_text.contains("alpha-"), "{bobs_text}");
    // Asking to back up team-a from team-b is refused by policy, without team-a's items.
    let across = gql(
        &env,
        &env.bob,
        &with_items(DRY_RUN),
        json!({"ns": "team-b", "b": {"name": "sneaky", "spec": {"backupSpec": {"includedNamespaces": ["team-a"]}}}}),
    )
    .await;
    assert_eq!(across.code(), "INVALID", "{}", across.text());
    assert!(!across.text().contains("alpha-"), "{}", across.text());
}

#[tokio::test]
async fn bad_arguments_are_named_and_cookies_need_csrf() {
    let env = env().await;
    backed_up(&env, "checked").await;
    let items = |args: &str| {
        format!(
            "{{ backupManifest(namespace: \"team-a\", name: \"checked\") {{ items({args}) {{ items {{ name }} }} }} }}"
        )
    };

    // A bad label selector: BAD_REQUEST naming labelSelector.
    let answer = gql(
        &env,
        &env.alice,
        &items("labelSelector: \"a b c\""),
        json!({}),
    )
    .await;
    assert_eq!(answer.code(), "BAD_REQUEST", "{}", answer.text());
    assert!(
        answer.error()["message"]
            .as_str()
            .unwrap()
            .contains("labelSelector"),
        "{}",
        answer.text()
    );
    // Out-of-range limits and a foreign cursor: INVALID with the argument as the field.
    for (args, field) in [
        ("limit: 0", "limit"),
        ("limit: -3", "limit"),
        ("limit: 1001", "limit"),
        ("after: \"not a cursor!\"", "after"),
    ] {
        let answer = gql(&env, &env.alice, &items(args), json!({})).await;
        assert_eq!(answer.code(), "INVALID", "{args}: {}", answer.text());
        let error = answer.error();
        assert_eq!(
            error["extensions"]["fieldErrors"][0]["field"], field,
            "{args}: {error}"
        );
        assert!(
            error["message"].as_str().unwrap().starts_with(field),
            "{error}"
        );
    }
    // The largest page is within the complexity budget; many of them at once are not.
    let big = gql(&env, &env.alice, &items("limit: 1000"), json!({})).await;
    assert!(big.data()["backupManifest"]["items"]["items"].is_array());
    let greedy = format!(
        "{{ backupManifest(namespace: \"team-a\", name: \"checked\") {{ {} }} }}",
        (0..4)
            .map(|i| format!("p{i}: items(limit: 1000) {{ items {{ {ITEM_FIELDS} }} }}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let answer = gql(&env, &env.alice, &greedy, json!({})).await;
    assert_eq!(answer.code(), "QUERY_TOO_COMPLEX", "{}", answer.text());
    // Names and bodies.
    let answer = gql(
        &env,
        &env.alice,
        "{ backupDiff(namespace: \"team-a\", name: \"checked\", against: \"Not_A_Name\") { unchanged } }",
        json!({}),
    )
    .await;
    assert_eq!(answer.code(), "INVALID", "{}", answer.text());
    assert_eq!(
        answer.error()["extensions"]["fieldErrors"][0]["field"],
        "against"
    );
    let answer = gql(
        &env,
        &env.alice,
        "{ backupManifest(namespace: \"Team_A\", name: \"checked\") { total } }",
        json!({}),
    )
    .await;
    assert_eq!(answer.code(), "BAD_REQUEST", "{}", answer.text());
    assert!(
        answer.error()["message"]
            .as_str()
            .unwrap()
            .contains("namespace")
    );
    let answer = gql(
        &env,
        &env.alice,
        "query($b: JSON!) { backupDryRun(namespace: \"team-a\", backup: $b) { totalItems } }",
        json!({"b": {"name": "x", "bogus": true}}),
    )
    .await;
    assert_eq!(answer.code(), "INVALID", "{}", answer.text());
    assert_eq!(
        answer.error()["extensions"]["fieldErrors"][0]["field"],
        "bogus"
    );
    let answer = gql(
        &env,
        &env.alice,
        "query($r: JSON!) { restorePreview(namespace: \"team-a\", restore: $r) { backupName } }",
        json!({"r": {"name": "r", "backupName": "no-such-backup"}}),
    )
    .await;
    assert_eq!(answer.code(), "INVALID", "{}", answer.text());
    assert_eq!(
        answer.error()["extensions"]["fieldErrors"][0]["field"],
        "spec.restoreSpec.backupName"
    );

    // A session cookie: these reads are POSTs like any GraphQL request, so they need the
    // session's CSRF token.
    let signed_in = call(
        &env.router,
        Method::POST,
        "/api/v1/session",
        Auth::None,
        Some(json!({"token": env.alice})),
        &[],
    )
    .await;
    assert_eq!(
        signed_in.status,
        StatusCode::CREATED,
        "{}",
        signed_in.text()
    );
    let cookie = signed_in
        .set_cookies()
        .iter()
        .find_map(|c| {
            c.strip_prefix("nac_session=")
                .map(|rest| rest.split(';').next().unwrap().to_string())
        })
        .expect("a session cookie");
    let csrf = signed_in.json()["csrfToken"].as_str().unwrap().to_string();
    let query = "query($b: JSON!) { backupDryRun(namespace: \"team-a\", backup: $b) { totalItems items { name } } }";
    let variables = json!({"b": {"name": "from-cookie", "spec": {"backupSpec": {}}}});
    for wrong in [None, Some("not-the-token")] {
        let refused = gql_as(&env, Auth::Cookie(&cookie, wrong), query, variables.clone()).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text());
        assert_eq!(refused.code(), "FORBIDDEN");
        assert_eq!(refused.error()["extensions"]["reason"], "csrf-token");
        assert!(!refused.text().contains("web-config"));
    }
    let allowed = gql_as(&env, Auth::Cookie(&cookie, Some(&csrf)), query, variables).await;
    let data = allowed.data();
    assert!(names_of(&data["backupDryRun"]["items"]).contains(&"web-config".to_string()));
    assert!(
        !backup_names(&env.admin, "team-a")
            .await
            .contains(&"from-cookie".to_string())
    );
}

/// A GraphQL query and how to make its variables from a backup name.
type QueryCase = (&'static str, fn(&str) -> Value);
