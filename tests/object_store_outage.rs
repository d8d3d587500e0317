//! The object store unreachable for a while (issue 22), on the real control plane: a tenant's
//! NonAdminBackupStorageLocation points at a real S3-compatible server (`s3s-fs`), which is
//! killed while a `nac controller` and a `nac gateway` process and Velero (the simulator, with
//! Velero's S3 client settings) run, kept down, and started again on the same port with the
//! same buckets. Nothing is restarted but the store:
//! - a backup made while the store is down fails as Velero fails it (`Failed` with the upload
//!   error, or `FailedValidation` once the location was found unavailable), and the tenant
//!   reads why on their NonAdminBackup, through the gateway too; NAC does not make it again
//!   (one Velero Backup for it);
//! - the location goes `Unavailable` with Velero's message, mirrored on the tenant's
//!   NonAdminBackupStorageLocation;
//! - the manifest of a backup that completed just before the outage answers 202 (still being
//!   built) while the store is down, never an error;
//! - nobody retries in a tight loop: every connection attempt at the dead port is counted;
//! - back online, the location is Available again, a new backup completes, and the manifest
//!   that could not be built catches up.
//!
//! Printed: connection attempts per second during the outage, and from the store's return to
//! each recovery.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/nac_process.rs"]
mod nac_process;
#[path = "support/s3.rs"]
mod s3;
mod support;

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use nac::api::nonadmin::{NonAdminBackup, NonAdminBackupStorageLocation};
use nac::api::velero::Backup;
use nac::sim::demo::OADP_NAMESPACE;
use s3::{KnockCounter, S3Server};
use serde_json::{Value, json};
use support::cluster::{TestCluster, eventually};

/// How long the store stays down.
const OUTAGE: Duration = Duration::from_secs(20);
/// How often Velero (the simulator) validates a location: Velero's default is a minute; short
/// here so the outage is noticed within the test.
const VALIDATION_INTERVAL: Duration = Duration::from_secs(5);
/// Connection attempts per second at the dead store that still count as "no tight loop". What
/// is expected, each try being a request with the S3 client's two quick retries (3 attempts):
/// Velero's validation every 5 s, the failing upload of the backup made meanwhile, and the
/// manifest builder's retries at 2, 4, 8, 16 s: about 36 in 20 s. A loop makes hundreds.
const MAX_KNOCKS_PER_SECOND: f64 = 5.0;
const BUCKET: &str = "bkt";

fn location(name: &str, store: &S3Server) -> NonAdminBackupStorageLocation {
    serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackupStorageLocation",
        "metadata": {"name": name},
        "spec": {"backupStorageLocationSpec": {
            "provider": "aws",
            "config": {"region": "minio", "s3Url": store.url(), "s3ForcePathStyle": "true"},
            "objectStorage": {"bucket": BUCKET, "prefix": "v"},
            "credential": {"name": "s3-credentials", "key": "cloud"}
        }}
    }))
    .unwrap()
}

async fn json_of<K>(api: &Api<K>, name: &str) -> Option<Value>
where
    K: kube::Resource + serde::Serialize + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.get_opt(name)
        .await
        .ok()
        .flatten()
        .map(|object| serde_json::to_value(object).unwrap())
}

fn text_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The phase of the location's Velero BSL as mirrored on the tenant's NABSL, and its message.
async fn mirrored_location(
    api: &Api<NonAdminBackupStorageLocation>,
    name: &str,
) -> (String, String) {
    let v = json_of(api, name).await.unwrap_or_default();
    (
        text_at(&v, "/status/veleroBackupStorageLocation/status/phase").to_string(),
        text_at(&v, "/status/veleroBackupStorageLocation/status/message").to_string(),
    )
}

async fn velero_phase(backups: &Api<NonAdminBackup>, name: &str) -> String {
    let v = json_of(backups, name).await.unwrap_or_default();
    text_at(&v, "/status/veleroBackup/status/phase").to_string()
}

async fn kill_signal(pid: u32, signal: &str) {
    let status = tokio::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .await
        .unwrap();
    assert!(status.success(), "kill {signal} {pid}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backups_fail_as_velero_fails_them_and_recover_when_the_store_returns() {
    let Some(cluster) = TestCluster::real().await else {
        return;
    };
    let Some(mut store) = S3Server::start(&[BUCKET]) else {
        return;
    };
    let admin = cluster.admin();
    // The administrator vouches for the store's loopback endpoint (tenant endpoints must not
    // be loopback otherwise).
    let policies = Api::<ConfigMap>::namespaced(admin.clone(), OADP_NAMESPACE);
    let _ = policies
        .delete(
            nac::controllers::policy_source::POLICY_CONFIG_MAP,
            &DeleteParams::default(),
        )
        .await;
    let policy: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": nac::controllers::policy_source::POLICY_CONFIG_MAP},
        "data": {"policy.yaml": format!("storageEndpoints:\n  allow:\n    - {}\n", store.url())}
    }))
    .unwrap();
    policies
        .create(&PostParams::default(), &policy)
        .await
        .unwrap();
    let _velero_store = support::start_velero_with(&cluster, |options| {
        options.bsl_validation_interval = VALIDATION_INTERVAL;
    })
    .await;

    // Short names (s3s-fs's limit on key length, see `support/s3.rs`): backups `b1` completes
    // just before the outage, `b2` is made during it, `b3` after it.
    let ns = cluster.unique_name("s3o", None);
    cluster.tenant_namespace("alice", &ns).await;
    let alice = cluster.user("alice");
    let token = cluster.user_token("alice");
    let dir = tempfile::tempdir().unwrap();
    // The gateway reads the history (manifests included) the controller writes.
    let (mut controller, mut gateway, addr) =
        nac_process::controller_and_gateway(&cluster, dir.path()).await;

    // The tenant's location on the store, Available.
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "s3-credentials"},
        "stringData": {"cloud": format!(
            "[default]\naws_access_key_id={}\naws_secret_access_key={}\n",
            s3::ACCESS_KEY, s3::SECRET_KEY
        )}
    }))
    .unwrap();
    Api::<Secret>::namespaced(alice.clone(), &ns)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let locations = Api::<NonAdminBackupStorageLocation>::namespaced(alice.clone(), &ns);
    locations
        .create(&PostParams::default(), &location("s3", &store))
        .await
        .unwrap();
    eventually("the tenant's location to be Available", 60, || async {
        (mirrored_location(&locations, "s3").await.0 == "Available").then_some(())
    })
    .await;

    // A backup that completes just before the outage, its manifest not built yet: the
    // controller (which builds manifests) is paused from the moment the Velero Backup exists
    // until the store is down.
    let backups = Api::<NonAdminBackup>::namespaced(alice.clone(), &ns);
    let velero_backups = Api::<Backup>::namespaced(admin.clone(), OADP_NAMESPACE);
    backups
        .create(
            &PostParams::default(),
            &support::nab_with("b1", json!({"storageLocation": "s3"})),
        )
        .await
        .unwrap();
    let velero_name = eventually("the first backup's Velero Backup", 60, || async {
        let v = json_of(&backups, "b1").await?;
        let name = text_at(&v, "/status/veleroBackup/name").to_string();
        // The name is in the status before the Backup is made.
        json_of(&velero_backups, &name).await.map(|_| name)
    })
    .await;
    kill_signal(controller.pid(), "-STOP").await;
    eventually("Velero to complete the first backup", 60, || async {
        let v = json_of(&velero_backups, &velero_name).await?;
        let phase = text_at(&v, "/status/phase");
        assert!(!phase.starts_with("Failed"), "{}", v["status"]);
        (phase == "Completed").then_some(())
    })
    .await;

    // The outage.
    store.stop();
    let knocks = KnockCounter::listen(store.port).await;
    let down = Instant::now();
    kill_signal(controller.pid(), "-CONT").await;
    backups
        .create(
            &PostParams::default(),
            &support::nab_with("b2", json!({"storageLocation": "s3"})),
        )
        .await
        .unwrap();

    // The backup made meanwhile fails as Velero fails it, and the tenant reads why.
    let failed = eventually("the backup made during the outage to fail", 90, || async {
        let v = json_of(&backups, "b2").await?;
        matches!(
            text_at(&v, "/status/veleroBackup/status/phase"),
            "Failed" | "FailedValidation"
        )
        .then_some(v)
    })
    .await;
    let velero_status = failed.pointer("/status/veleroBackup/status").unwrap();
    let why = match text_at(velero_status, "/phase") {
        "Failed" => text_at(velero_status, "/failureReason").to_string(),
        _ => velero_status["validationErrors"].to_string(),
    };
    assert!(
        why.contains("127.0.0.1") || why.contains("Unavailable") || why.contains("connect"),
        "the tenant is not told why the backup failed: {velero_status}"
    );
    let (status, _, body) = support::bearer_get(
        &addr,
        &format!("/api/v1/namespaces/{ns}/backups/b2"),
        &token,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let through_gateway: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        through_gateway.pointer("/status/veleroBackup/status/phase"),
        velero_status.pointer("/phase"),
        "{body}"
    );

    // The location goes Unavailable with Velero's words, mirrored for the tenant.
    let (_, message) = eventually("the tenant's location to be Unavailable", 60, || async {
        let (phase, message) = mirrored_location(&locations, "s3").await;
        (phase == "Unavailable").then_some((phase, message))
    })
    .await;
    assert!(
        message.contains("is unavailable"),
        "the location's message does not say why: {message:?}"
    );
    let noticed = down.elapsed();

    // The manifest of the backup completed before the outage: still being built, never an
    // error, for as long as the store is down.
    let manifest_path = format!("/api/v1/namespaces/{ns}/backups/b1/manifest");
    let mut manifest_answers = Vec::new();
    while down.elapsed() < OUTAGE {
        let (status, head, body) = support::bearer_get(&addr, &manifest_path, &token).await;
        if status == 202 {
            assert!(head.to_ascii_lowercase().contains("retry-after:"), "{head}");
        }
        manifest_answers.push(status);
        assert!(
            status == 202 || status == 404,
            "the manifest answered {status} while the store was down: {body}"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    assert!(
        manifest_answers.contains(&202),
        "the manifest of the completed backup never answered 'being built': {manifest_answers:?}"
    );
    let outage = down.elapsed();
    let attempts = knocks.knocks();
    let timeline = knocks.per_second();
    drop(knocks);
    let per_second = attempts as f64 / outage.as_secs_f64();
    assert!(
        per_second <= MAX_KNOCKS_PER_SECOND,
        "{attempts} connection attempts in {:.1} s at the unreachable store: a retry loop (per second: {timeline:?})",
        outage.as_secs_f64()
    );

    // Back online.
    store.resume();
    let back = Instant::now();
    eventually(
        "the tenant's location to be Available again",
        60,
        || async { (mirrored_location(&locations, "s3").await.0 == "Available").then_some(()) },
    )
    .await;
    let location_recovered = back.elapsed();
    backups
        .create(
            &PostParams::default(),
            &support::nab_with("b3", json!({"storageLocation": "s3"})),
        )
        .await
        .unwrap();
    eventually("a backup made after the outage to complete", 90, || async {
        (velero_phase(&backups, "b3").await == "Completed").then_some(())
    })
    .await;
    let backup_recovered = back.elapsed();
    let manifest: Value = eventually("the first backup's manifest to catch up", 180, || async {
        let (status, _, body) = support::bearer_get(&addr, &manifest_path, &token).await;
        (status == 200).then(|| serde_json::from_str(&body).unwrap())
    })
    .await;
    let manifest_recovered = back.elapsed();
    assert!(
        manifest.to_string().contains("ConfigMap"),
        "the manifest lacks the namespace's items: {manifest}"
    );
    assert!(
        std::fs::read_dir(store.bucket_dir(BUCKET)).unwrap().count() > 0,
        "nothing was written to the tenant's bucket"
    );

    // Nothing made twice: one Velero Backup per NonAdminBackup.
    let all = velero_backups.list(&ListParams::default()).await.unwrap();
    for name in ["b1", "b2", "b3"] {
        let v = json_of(&backups, name).await.unwrap();
        let uuid = text_at(&v, "/status/veleroBackup/nacuuid").to_string();
        assert!(!uuid.is_empty(), "{v}");
        let made = support::labelled(
            &all.items,
            nac::api::nonadmin::labels::NAB_ORIGIN_NACUUID,
            &uuid,
        );
        assert_eq!(made, 1, "Velero Backups for NonAdminBackup {name}");
    }

    println!(
        "object store down {:.1} s: {attempts} connection attempts at it ({per_second:.2}/s; per second: {timeline:?}); the tenant's location was Unavailable {:.1} s after it went down; after it was back: location Available in {:.1} s, a new backup Completed in {:.1} s, the manifest that could not be built meanwhile built in {:.1} s",
        outage.as_secs_f64(),
        noticed.as_secs_f64(),
        location_recovered.as_secs_f64(),
        backup_recovered.as_secs_f64(),
        manifest_recovered.as_secs_f64(),
    );
    let _ = policies
        .delete(
            nac::controllers::policy_source::POLICY_CONFIG_MAP,
            &DeleteParams::default(),
        )
        .await;
    nac_process::stop_cleanly(&mut [(&mut controller, "controller"), (&mut gateway, "gateway")])
        .await;
}
