//! The tenant view of the shared backup pool (seed 001) through the gateway, end to end on the
//! in-process emulator with the Velero simulator and NAC's controllers (pool included), the
//! gateway reading as its own service account: no pool → `configured=false`; a namespace's
//! entry Ready after its first backup without a storage location, with no bucket, prefix,
//! provider or other namespace anywhere in the answer; WaitingForCapacity when every bucket is
//! full; the same 403 for a namespace the caller may not use whether or not it exists; and a
//! tenant storage location on a pool bucket refused with 422 before anything is created —
//! over REST and GraphQL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/gateway.rs"]
mod gateway_support;
mod support;
use support::cluster::{eventually, eventually_seen};

use std::sync::Arc;
use std::time::Duration;

use gateway_support::{Answer, Auth, GatewayEnv, without_request_id};
use http::{Method, StatusCode};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams, PostParams};
use nac::api::nonadmin::{
    BackupBucket, BackupEntry, BackupEntryPhase, NonAdminBackupStorageLocation,
    TENANT_PROVISIONING_MESSAGE, TENANT_READY_MESSAGE, TENANT_WAITING_MESSAGE,
};
use nac::controllers::bucket::PoolConfig;
use nac::controllers::bucket_store::ObjectStoreLister;
use nac::sim::demo::OADP_NAMESPACE;
use nac::sim::velero::storage::LOCAL_PROVIDER;
use serde_json::{Value, json};

const SHAREDSTORAGE_QUERY: &str =
    "query($ns: String!) { sharedStorage(namespace: $ns) { configured state message purgeAfter } }";
const CREATE_LOCATION_MUTATION: &str = "mutation($ns: String!, $input: NewObjectInput!) { createStorageLocation(namespace: $ns, input: $input) { name } }";

/// Each case's gateway: the shared harness on a fresh emulator, with the Velero simulator
/// on a local object store and NAC's controllers (the pool's lister reading that store).
type Env = GatewayEnv;

/// The emulator with the demo's tenants, Velero, the controllers with the pool and the
/// gateway; and the pool's credential, as an admin keeps it in the OADP namespace.
async fn env() -> Env {
    let env = GatewayEnv::emulator()
        .await
        .velero(|options| {
            options.backup_sync_interval = Duration::from_millis(200);
            options.bsl_validation_interval = Duration::from_millis(500);
        })
        .pool(|store| PoolConfig {
            resync: Duration::from_millis(200),
            rescan: Duration::from_millis(500),
            lister: Arc::new(ObjectStoreLister::with_local_provider(
                LOCAL_PROVIDER,
                store.to_path_buf(),
            )),
            ..PoolConfig::default()
        })
        .start()
        .await;
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "pool-credentials", "namespace": OADP_NAMESPACE},
        "stringData": {"cloud": "[default]\naws_access_key_id=x\naws_secret_access_key=y\n"}
    }))
    .unwrap();
    Api::<Secret>::namespaced(env.admin.clone(), OADP_NAMESPACE)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    env
}

impl Env {
    async fn add_bucket(&self, name: &str, max_entries: u32) {
        let bucket: BackupBucket = serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "BackupBucket",
            "metadata": {"name": name},
            "spec": {"provider": LOCAL_PROVIDER, "bucket": format!("shared-{name}"),
                     "credential": {"name": "pool-credentials", "key": "cloud"},
                     "maxEntries": max_entries}
        }))
        .unwrap();
        Api::<BackupBucket>::all(self.admin.clone())
            .create(&PostParams::default(), &bucket)
            .await
            .unwrap();
    }

    async fn rest(&self, method: Method, path: &str, token: &str, body: Option<Value>) -> Answer {
        gateway_support::call(&self.router, method, path, Auth::Bearer(token), body, &[]).await
    }

    async fn shared_storage(&self, namespace: &str, token: &str) -> Answer {
        self.rest(
            Method::GET,
            &format!("/api/v1/namespaces/{namespace}/sharedstorage"),
            token,
            None,
        )
        .await
    }

    async fn gql(&self, token: &str, query: &str, variables: Value) -> Answer {
        gateway_support::call(
            &self.router,
            Method::POST,
            "/graphql",
            Auth::Bearer(token),
            Some(json!({"query": query, "variables": variables})),
            &[],
        )
        .await
    }

    /// A NonAdminBackup without a storage location, created through the gateway.
    async fn backup(&self, namespace: &str, name: &str, token: &str) {
        let created = self
            .rest(
                Method::POST,
                &format!("/api/v1/namespaces/{namespace}/backups"),
                token,
                Some(json!({"name": name})),
            )
            .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.text());
    }

    /// Polls the namespace's shared storage as `token` until its state is `state`.
    async fn shared_storage_in(&self, namespace: &str, token: &str, state: &str) -> Answer {
        let what = format!("{namespace}'s shared storage to get {state}");
        eventually_seen(&what, 60, || async {
            let answer = self.shared_storage(namespace, token).await;
            if answer.status == StatusCode::OK && answer.json()["state"] == state {
                Ok(answer)
            } else {
                Err(format!(
                    "{namespace}'s shared storage never got {state}; last {} {}",
                    answer.status,
                    answer.text()
                ))
            }
        })
        .await
    }

    async fn entries(&self) -> Vec<BackupEntry> {
        Api::<BackupEntry>::all(self.admin.clone())
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
    }

    async fn location_names(&self, namespace: &str) -> Vec<String> {
        Api::<NonAdminBackupStorageLocation>::namespaced(self.admin.clone(), namespace)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter_map(|l| l.metadata.name)
            .collect()
    }
}

/// Asserts that none of `secrets` appears in `text`.
fn names_none_of(text: &str, secrets: &[String]) {
    for secret in secrets {
        assert!(
            !text.contains(secret.as_str()),
            "{secret:?} leaked into {text}"
        );
    }
}

#[tokio::test]
async fn without_a_pool_only_configured_false_and_403_says_nothing_of_existence() {
    let e = env().await;

    // (a) No BackupBucket at all: configured=false and nothing else, over REST and GraphQL.
    let answer = e.shared_storage("team-a", &e.alice).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert_eq!(answer.header("content-type"), Some("application/json"));
    assert_eq!(answer.json(), json!({"configured": false}));
    let gql = e
        .gql(&e.alice, SHAREDSTORAGE_QUERY, json!({"ns": "team-a"}))
        .await;
    assert_eq!(
        gql.json(),
        json!({"data": {"sharedStorage": {"configured": false, "state": null,
                                          "message": null, "purgeAfter": null}}})
    );

    // (d) bob may not use team-a: the same 403 problem as for a namespace that does not exist
    // (only the namespace he typed differs).
    let existing = e.shared_storage("team-a", &e.bob).await;
    let made_up = e.shared_storage("no-such-team", &e.bob).await;
    for answer in [&existing, &made_up] {
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{}", answer.text());
        assert!(answer.is_problem());
    }
    let normalized = |answer: &Answer, namespace: &str| {
        let text = without_request_id(answer.json())
            .to_string()
            .replace(namespace, "NAMESPACE");
        serde_json::from_str::<Value>(&text).unwrap()
    };
    assert_eq!(
        normalized(&existing, "team-a"),
        normalized(&made_up, "no-such-team"),
        "the 403 must not reveal whether the namespace exists"
    );
    assert_eq!(existing.json()["code"], "forbidden");
    // GraphQL answers FORBIDDEN alike, with no data.
    for ns in ["team-a", "no-such-team"] {
        let refused = e.gql(&e.bob, SHAREDSTORAGE_QUERY, json!({"ns": ns})).await;
        let body = refused.json();
        assert_eq!(
            body["errors"][0]["extensions"]["code"], "FORBIDDEN",
            "{body}"
        );
        assert!(body["data"].is_null(), "{body}");
    }
    // Unauthenticated: 401.
    let anonymous = gateway_support::call(
        &e.router,
        Method::GET,
        "/api/v1/namespaces/team-a/sharedstorage",
        Auth::None,
        None,
        &[],
    )
    .await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn tenants_see_their_place_in_the_pool_and_never_reach_its_buckets() {
    let e = env().await;
    // One bucket of one entry: the first namespace to back up takes it, the next one waits.
    e.add_bucket("pool-1", 1).await;

    // Configured, but no entry for team-a yet: Provisioning.
    let before = e.shared_storage("team-a", &e.alice).await;
    assert_eq!(before.status, StatusCode::OK, "{}", before.text());
    assert_eq!(
        before.json(),
        json!({"configured": true, "state": "Provisioning",
               "message": TENANT_PROVISIONING_MESSAGE})
    );

    // (b) A backup without a storage location in team-a: its entry becomes Ready.
    e.backup("team-a", "first", &e.alice).await;
    let ready = e.shared_storage_in("team-a", &e.alice, "Ready").await;
    assert_eq!(
        ready.json(),
        json!({"configured": true, "state": "Ready", "message": TENANT_READY_MESSAGE})
    );
    let entry = eventually("team-a's entry Ready", 30, || async {
        e.entries().await.into_iter().find(|entry| {
            entry.spec.namespace == "team-a" && entry.phase() == Some(BackupEntryPhase::Ready)
        })
    })
    .await;
    let location = entry
        .status
        .as_ref()
        .and_then(|s| s.velero_backup_storage_location.as_ref())
        .and_then(|l| l.name.clone())
        .unwrap();
    let mut hidden = vec![
        "pool-1".to_string(),
        "shared-pool-1".to_string(),
        LOCAL_PROVIDER.to_string(),
        entry.spec.prefix.clone(),
        entry.metadata.name.clone().unwrap(),
        entry.spec.namespace_uid.clone(),
        location,
        "pool-credentials".to_string(),
    ];
    names_none_of(&ready.text(), &hidden);
    // The same through GraphQL.
    let gql = e
        .gql(&e.alice, SHAREDSTORAGE_QUERY, json!({"ns": "team-a"}))
        .await;
    assert_eq!(
        gql.json(),
        json!({"data": {"sharedStorage": {"configured": true, "state": "READY",
                                          "message": TENANT_READY_MESSAGE, "purgeAfter": null}}})
    );
    names_none_of(&gql.text(), &hidden);

    // (c) The only bucket is full: team-b's first backup waits, and bob is told why without
    // learning which bucket or whose entry fills it.
    e.backup("team-b", "first", &e.bob).await;
    let waiting = e
        .shared_storage_in("team-b", &e.bob, "WaitingForCapacity")
        .await;
    assert_eq!(
        waiting.json(),
        json!({"configured": true, "state": "WaitingForCapacity",
               "message": TENANT_WAITING_MESSAGE})
    );
    hidden.push("team-a".to_string());
    names_none_of(&waiting.text(), &hidden);
    let gql = e
        .gql(&e.bob, SHAREDSTORAGE_QUERY, json!({"ns": "team-b"}))
        .await;
    assert_eq!(
        gql.json()["data"]["sharedStorage"]["state"],
        "WAITING_FOR_CAPACITY",
        "{}",
        gql.text()
    );
    // team-a is still Ready; each tenant sees only its own namespace.
    let a = e.shared_storage("team-a", &e.alice).await;
    assert_eq!(a.json()["state"], "Ready");
    assert_eq!(
        e.shared_storage("team-b", &e.alice).await.status,
        StatusCode::FORBIDDEN
    );

    // (e) A storage location of alice's own on the pool's bucket: 422 before anything is
    // created, naming only her own field.
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "mine"},
        "stringData": {"cloud": "[default]\naws_access_key_id=a\naws_secret_access_key=b\n"}
    }))
    .unwrap();
    Api::<Secret>::namespaced(e.admin.clone(), "team-a")
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let spec_on = |bucket: &str| {
        json!({"backupStorageLocationSpec": {
            "provider": LOCAL_PROVIDER,
            "objectStorage": {"bucket": bucket},
            "credential": {"name": "mine", "key": "cloud"}}})
    };
    let before_names = e.location_names("team-a").await;
    for (path, name, bucket) in [
        (
            "/api/v1/namespaces/team-a/storage-locations",
            "sneaky",
            "shared-pool-1",
        ),
        (
            "/api/v1/namespaces/team-a/storage-locations?dryRun=true",
            "sneaky-dry-run",
            "/shared-pool-1/",
        ),
    ] {
        let refused = e
            .rest(
                Method::POST,
                path,
                &e.alice,
                Some(json!({"name": name, "spec": spec_on(bucket)})),
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
        assert_eq!(problem["code"], "invalid");
        let errors = problem["errors"].as_array().unwrap();
        let bucket_error = errors
            .iter()
            .find(|f| f["field"] == "spec.backupStorageLocationSpec.objectStorage.bucket")
            .unwrap_or_else(|| panic!("no bucket field error: {problem}"));
        assert_eq!(bucket_error["reason"], "restricted");
        assert!(
            bucket_error["message"]
                .as_str()
                .unwrap()
                .contains("shared backup pool"),
            "{problem}"
        );
        // Nothing of the pool or of another tenant in the refusal (the bucket is the one she
        // typed, echoed nowhere either).
        names_none_of(
            &refused.text(),
            &[
                "pool-1".to_string(),
                "team-b".to_string(),
                entry.spec.prefix.clone(),
                "pool-credentials".to_string(),
            ],
        );
    }
    // A bucket of her own passes the same check (dry run: nothing stored).
    let own = e
        .rest(
            Method::POST,
            "/api/v1/namespaces/team-a/storage-locations?dryRun=true",
            &e.alice,
            Some(json!({"name": "own", "spec": spec_on("alice-own-bucket")})),
        )
        .await;
    assert_eq!(own.status, StatusCode::OK, "{}", own.text());

    // The same refusal through GraphQL.
    let refused = e
        .gql(
            &e.alice,
            CREATE_LOCATION_MUTATION,
            json!({"ns": "team-a", "input": {"name": "sneaky-gql", "spec": spec_on("shared-pool-1")}}),
        )
        .await;
    let body = refused.json();
    assert_eq!(body["errors"][0]["extensions"]["code"], "INVALID", "{body}");
    let fields = body["errors"][0]["extensions"]["fieldErrors"]
        .as_array()
        .unwrap_or_else(|| panic!("no field errors: {body}"));
    assert!(
        fields.iter().any(
            |f| f["field"] == "spec.backupStorageLocationSpec.objectStorage.bucket"
                && f["reason"] == "restricted"
        ),
        "{body}"
    );
    assert!(body["data"].is_null(), "{body}");
    names_none_of(
        &refused.text(),
        &["pool-1".to_string(), "team-b".to_string()],
    );

    // Nothing was created by any of the refused requests.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(e.location_names("team-a").await, before_names);
    assert!(before_names.is_empty(), "{before_names:?}");
}
