//! The manifest builder end to end: the emulator, the Velero simulator (its signed downloads
//! served over HTTP), NAC's controllers, the history recorder and the builder, each as its own
//! service account (recorder and builder as the controller's). A NonAdminBackup completes → its
//! manifest appears in the store with exactly the items of the tarball the simulator wrote; a
//! builder started after backups completed backfills them; the DownloadRequests it made are
//! gone afterwards.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;
use support::cluster::{TestCluster, eventually};
use support::controller_env::ControllerEnv;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, ListParams, PostParams};
use nac::api::nonadmin::NonAdminBackup;
use nac::api::velero::DownloadRequest;
use nac::history::manifests::{
    COMPONENT_LABEL, COMPONENT_VALUE, ManifestBuilder, ManifestBuilderConfig, ManifestBuilderHandle,
};
use nac::history::recorder::{Recorder, RecorderConfig};
use nac::history::{SharedHistory, StoredManifest, TenantNamespace};
use nac::manifest::build::manifest_of_items;
use nac::manifest::export::decode_compact;
use nac::manifest::fetch::HttpArtifactFetcher;
use nac::manifest::tarball::read_backup_tarball;
use nac::sim::demo::OADP_NAMESPACE;
use serde_json::json;

/// The shared controller environment (Velero with its signed downloads served, NAC's
/// controllers) plus the history recorder and its SQLite store; the builder is started by
/// each case.
struct Env {
    base: ControllerEnv,
    store: SharedHistory,
    _store_dir: tempfile::TempDir,
}

impl std::ops::Deref for Env {
    type Target = ControllerEnv;
    fn deref(&self) -> &ControllerEnv {
        &self.base
    }
}

/// Everything but the builder: emulator, simulator with its download endpoint, controllers,
/// recorder, SQLite store.
async fn env() -> Env {
    let base = ControllerEnv::start_with(TestCluster::emulator().await, true, true, |_| {}).await;
    let (store, store_dir) = support::sqlite_history().await;
    let recorder = Recorder::new(
        base.controller.clone(),
        OADP_NAMESPACE,
        store.clone(),
        RecorderConfig {
            flush_interval: Duration::from_millis(50),
            ..RecorderConfig::default()
        },
    );
    tokio::spawn(recorder.run());
    Env {
        base,
        store,
        _store_dir: store_dir,
    }
}

/// Starts the builder as the controller, with quick pacing.
fn start_builder(e: &Env) -> ManifestBuilderHandle {
    let builder = ManifestBuilder::new(
        e.controller.clone(),
        OADP_NAMESPACE,
        e.store.clone(),
        Arc::new(HttpArtifactFetcher::new(Duration::from_secs(20)).unwrap()),
        ManifestBuilderConfig {
            rescan_interval: Duration::from_secs(2),
            await_min_backoff: Duration::from_millis(100),
            retry_min_backoff: Duration::from_millis(200),
            retry_max_backoff: Duration::from_secs(2),
            download_poll: Duration::from_millis(50),
            download_timeout: Duration::from_secs(20),
            ..ManifestBuilderConfig::default()
        },
    );
    let handle = builder.handle();
    tokio::spawn(builder.run());
    handle
}

fn nab(name: &str) -> NonAdminBackup {
    serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
        "metadata": {"name": name}, "spec": {"backupSpec": {}}
    }))
    .unwrap()
}

/// Creates a NonAdminBackup as `client` and waits for its Velero backup to complete; returns
/// the Velero backup's name.
async fn back_up(client: &Client, namespace: &str, name: &str) -> String {
    let api: Api<NonAdminBackup> = Api::namespaced(client.clone(), namespace);
    api.create(&PostParams::default(), &nab(name))
        .await
        .unwrap();
    eventually(&format!("{name} to complete"), 90, || async {
        let v = serde_json::to_value(api.get(name).await.unwrap()).unwrap();
        let phase = v.pointer("/status/veleroBackup/status/phase")?.as_str()?;
        (phase == "Completed")
            .then(|| {
                v.pointer("/status/veleroBackup/name")?
                    .as_str()
                    .map(String::from)
            })
            .flatten()
    })
    .await
}

/// Namespace `ns` as the history store's reads name it (name and UID).
async fn tenant(e: &Env, ns: &str) -> TenantNamespace {
    let uid = Api::<k8s_openapi::api::core::v1::Namespace>::all(e.admin.clone())
        .get(ns)
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    TenantNamespace::new(ns, uid).unwrap()
}

async fn wait_manifest(e: &Env, namespace: &str, name: &str) -> StoredManifest {
    let tenant = tenant(e, namespace).await;
    eventually(&format!("the manifest of {name}"), 60, || async {
        e.store.manifest_by_name(&tenant, name).await.unwrap()
    })
    .await
}

/// The file `file_name` under `root`, searched recursively.
fn find_file(root: &Path, file_name: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(root).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find_file(&path, file_name) {
                return Some(found);
            }
        } else if path.file_name().and_then(|n| n.to_str()) == Some(file_name) {
            return Some(path);
        }
    }
    None
}

/// Asserts that `stored` is the manifest of the tarball the simulator wrote for `velero`.
fn assert_matches_tarball(e: &Env, stored: &StoredManifest, velero: &str) {
    let path = find_file(e.object_store.path(), &format!("{velero}.tar.gz"))
        .unwrap_or_else(|| panic!("no tarball for {velero} in the object store"));
    let items = read_backup_tarball(&std::fs::read(path).unwrap()).unwrap();
    assert!(!items.is_empty());
    let expected = manifest_of_items(&items);
    let document = decode_compact(&stored.encoded).unwrap();
    assert_eq!(document.manifest(), expected);
    assert_eq!(document.backup.velero_backup, velero);
    assert_eq!(stored.summary.item_count, expected.len() as i64);
    assert_eq!(stored.summary.counts_by_kind, expected.counts_by_kind());
    assert_eq!(stored.summary.key.velero_name, velero);
    assert!(!stored.summary.key.velero_uid.is_empty());
}

/// The DownloadRequests the builder made that still exist.
async fn builder_requests(e: &Env) -> usize {
    let api: Api<DownloadRequest> = Api::namespaced(e.admin.clone(), OADP_NAMESPACE);
    api.list(&ListParams::default().labels(&format!("{COMPONENT_LABEL}={COMPONENT_VALUE}")))
        .await
        .unwrap()
        .items
        .len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completed_backup_gets_the_manifest_of_its_tarball() {
    let e = env().await;
    // An owned object, so owners travel into the manifest.
    let deployments: Api<Deployment> = Api::namespaced(e.admin.clone(), "team-a");
    let web = deployments.get("web").await.unwrap();
    let web_uid = web.metadata.uid.clone().unwrap();
    let configmaps: Api<ConfigMap> = Api::namespaced(e.admin.clone(), "team-a");
    let owned: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "web-owned", "labels": {"tier": "cache"},
                     "annotations": {"note": "made by web"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                          "name": "web", "uid": web_uid}]},
        "data": {"k": "v"}
    }))
    .unwrap();
    configmaps
        .create(&PostParams::default(), &owned)
        .await
        .unwrap();

    let handle = start_builder(&e);
    let velero = back_up(&e.alice, "team-a", "nightly").await;
    let stored = wait_manifest(&e, "team-a", "nightly").await;
    assert_matches_tarball(&e, &stored, &velero);
    assert_eq!(stored.summary.key.namespace, "team-a");
    assert_eq!(stored.summary.key.backup_name, "nightly");

    let document = decode_compact(&stored.encoded).unwrap();
    let item = document
        .items
        .iter()
        .find(|i| i.resource == "configmaps" && i.name == "web-owned")
        .expect("the owned ConfigMap is in the manifest");
    assert_eq!(item.owners, vec![web_uid.clone()]);
    assert_eq!(item.labels.get("tier").map(String::as_str), Some("cache"));
    assert_eq!(
        item.annotations.get("note").map(String::as_str),
        Some("made by web")
    );
    assert!(item.uid.is_some());
    let deployment = document
        .items
        .iter()
        .find(|i| i.kind == "Deployment" && i.name == "web")
        .expect("the Deployment is in the manifest");
    assert_eq!(deployment.uid.as_deref(), Some(web_uid.as_str()));
    // Only team-a's objects.
    assert!(
        document
            .items
            .iter()
            .all(|i| i.namespace.as_deref().is_none_or(|ns| ns == "team-a"))
    );

    // Another tenant's backup gets its own manifest; neither is visible to the other.
    let theirs = back_up(&e.bob, "team-b", "nightly").await;
    let stored_b = wait_manifest(&e, "team-b", "nightly").await;
    assert_matches_tarball(&e, &stored_b, &theirs);
    assert_ne!(
        stored_b.summary.key.operation_id,
        stored.summary.key.operation_id
    );
    assert!(
        e.store
            .manifest(
                &tenant(&e, "team-b").await,
                &stored.summary.key.operation_id
            )
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(
        e.store
            .manifest_summaries(&tenant(&e, "team-a").await)
            .await
            .unwrap()
            .len(),
        1
    );

    // Built once each, nothing failed, and the download requests were cleaned up.
    let stats = handle.stats();
    assert_eq!(stats.built, 2, "{stats:?}");
    assert_eq!(stats.failed, 0, "{stats:?}");
    eventually("the builder's download requests to go", 30, || async {
        (builder_requests(&e).await == 0).then_some(())
    })
    .await;
    assert!(e.store.manifests_missing(100).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_builder_started_later_backfills_completed_backups() {
    let e = env().await;
    // Two backups complete and are recorded while no builder runs.
    let first = back_up(&e.alice, "team-a", "before-1").await;
    let second = back_up(&e.alice, "team-a", "before-2").await;
    let missing = eventually("both completions recorded", 60, || async {
        let missing = e.store.manifests_missing(100).await.unwrap();
        (missing.len() == 2).then_some(missing)
    })
    .await;
    let mut names: Vec<&str> = missing.iter().map(|t| t.velero_name.as_str()).collect();
    names.sort_unstable();
    let mut expected = vec![first.as_str(), second.as_str()];
    expected.sort_unstable();
    assert_eq!(names, expected);

    let handle = start_builder(&e);
    let one = wait_manifest(&e, "team-a", "before-1").await;
    let two = wait_manifest(&e, "team-a", "before-2").await;
    assert_matches_tarball(&e, &one, &first);
    assert_matches_tarball(&e, &two, &second);
    assert!(e.store.manifests_missing(100).await.unwrap().is_empty());

    // A restarted builder finds nothing to do: built once.
    let again = start_builder(&e);
    eventually("the second builder's first rescan", 30, || async {
        (again.stats().rescans >= 2).then_some(())
    })
    .await;
    assert_eq!(again.stats().built, 0);
    assert_eq!(handle.stats().built, 2);
    let unchanged = e
        .store
        .manifest_by_name(&tenant(&e, "team-a").await, "before-1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(unchanged, one);
}
