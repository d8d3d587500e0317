//! Taking over from upstream OADP NAC (migtools/oadp-non-admin), on the emulator and on the
//! real kube-apiserver (`NAME::emulator`, `NAME::real`): an admin turns off the DPA's
//! `spec.nonAdmin.enable` and starts NAC's controllers on a cluster holding what upstream left —
//! NonAdminBackups and NonAdminRestores with upstream's status, finalizers and NACUUIDs
//! (`<namespace>-<name>-<uuid>`, cut to 63 characters as upstream's `GenerateNacObjectUUID`
//! cuts it), Velero Backups and Restores with upstream's names, labels and annotations (no
//! namespace UID: upstream records none), a DeleteBackupRequest made by `generateName`, and a
//! NonAdminBackup upstream's synchronizer made (only the synced-from label, no status).
//!
//! Nothing is lost: status continues, no second Velero object is made for any NACUUID, a
//! synced NAB refers to the existing backup, deletes and restores work.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;
use support::cluster::TestCluster;
use support::sa_token;

use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use nac::api::client_identity::Component;
use nac::api::nonadmin::{NonAdminBackup, NonAdminRestore};
use nac::api::velero::{Backup, DeleteBackupRequest, Restore};
use nac::controllers::{self, Context};
use nac::sim::demo::{CONTROLLER_SERVICE_ACCOUNT, OADP_NAMESPACE, VELERO_SERVICE_ACCOUNT};
use nac::sim::velero::engine::VeleroSimulator;
use nac::sim::velero::options::SimulatorOptions;
use nac::sim::velero::signed_url::UrlSigner;
use serde_json::{Value, json};

const NS: &str = "team-a";

struct Env {
    _cluster: TestCluster,
    admin: Client,
    alice: Client,
    controller: Client,
    _object_store: tempfile::TempDir,
}

/// The cluster with Velero (the simulator, as its own service account) running; NAC's
/// controllers are started by the cases once upstream's objects are in place.
async fn env(cluster: TestCluster) -> Env {
    let admin = cluster.admin();
    let object_store = tempfile::tempdir().unwrap();
    let base = url::Url::parse("http://127.0.0.1:9/").unwrap();
    let mut options =
        SimulatorOptions::new(OADP_NAMESPACE, object_store.path().to_path_buf(), base);
    options.resync_interval = Duration::from_millis(100);
    let velero = cluster.client_as(
        &sa_token(&admin, OADP_NAMESPACE, VELERO_SERVICE_ACCOUNT).await,
        Component::VeleroSimulator,
    );
    tokio::spawn(VeleroSimulator::new(velero, options, Arc::new(UrlSigner::random())).run());
    let controller = cluster.client_as(
        &sa_token(&admin, OADP_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT).await,
        Component::Controller,
    );
    Env {
        alice: cluster.user("alice"),
        _cluster: cluster,
        admin,
        controller,
        _object_store: object_store,
    }
}

fn start_nac(e: &Env) -> tokio::task::JoinHandle<()> {
    let context = Arc::new(Context::new(e.controller.clone(), OADP_NAMESPACE));
    tokio::spawn(controllers::run(context))
}

/// Upstream's NACUUID for `name` in `namespace` with the UUID `uuid`: `namespace-name-uuid`,
/// the name cut first and then the namespace when longer than 63 characters
/// (`GenerateNacObjectUUID` in upstream's `internal/common/function/function.go`).
fn upstream_nacuuid(namespace: &str, name: &str, uuid: &str) -> String {
    const MAX: usize = 63;
    let full = format!("{namespace}-{name}-{uuid}");
    if full.len() <= MAX {
        return full;
    }
    let remaining = MAX - uuid.len();
    let mut namespace = namespace.to_string();
    if namespace.len() > remaining - 2 {
        namespace.truncate(remaining - 2);
    }
    let room = remaining - namespace.len() - 2;
    let name: String = name.chars().take(room).collect();
    if name.is_empty() {
        format!("{namespace}-{uuid}")
    } else {
        format!("{namespace}-{name}-{uuid}")
    }
}

fn upstream_labels(origin_label: &str, nacuuid: &str) -> Value {
    json!({
        "openshift.io/oadp": "True",
        "app.kubernetes.io/managed-by": "oadp-nac-controller",
        origin_label: nacuuid,
    })
}

fn condition(type_: &str, reason: &str, message: &str) -> Value {
    json!({"type": type_, "status": "True", "reason": reason, "message": message,
           "lastTransitionTime": "2026-11-01T10:00:00Z"})
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

async fn wait_until<T>(
    api: &Api<T>,
    name: &str,
    what: &str,
    done: impl Fn(Option<&Value>) -> bool,
) -> Option<Value>
where
    T: kube::Resource + serde::Serialize + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut last = None;
    while tokio::time::Instant::now() < deadline {
        last = api
            .get_opt(name)
            .await
            .unwrap()
            .map(|o| serde_json::to_value(o).unwrap());
        if done(last.as_ref()) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting for {what} {name}; last: {last:?}");
}

/// A Velero Backup as upstream makes it for NAB `name` of `namespace`, run by Velero.
async fn upstream_velero_backup(e: &Env, nacuuid: &str, name: &str) {
    let backup: Backup = serde_json::from_value(json!({
        "apiVersion": "velero.io/v1", "kind": "Backup",
        "metadata": {"name": nacuuid,
            "labels": upstream_labels("openshift.io/oadp-nab-origin-nacuuid", nacuuid),
            "annotations": {"openshift.io/oadp-nab-origin-name": name,
                            "openshift.io/oadp-nab-origin-namespace": NS}},
        "spec": {"includedNamespaces": [NS], "storageLocation": "default"}
    }))
    .unwrap();
    let backups: Api<Backup> = Api::namespaced(e.admin.clone(), OADP_NAMESPACE);
    backups
        .create(&PostParams::default(), &backup)
        .await
        .unwrap();
    wait_until(&backups, nacuuid, "Velero Backup", |b| {
        b.is_some_and(|b| s(b, "/status/phase") == "Completed")
    })
    .await;
}

/// A NonAdminBackup as upstream leaves it once its Velero Backup is made: its finalizer, phase
/// Created, Accepted and Queued, and the Velero Backup's name and NACUUID (the status is
/// written as upstream's controller writes it, with the status subresource).
async fn upstream_nab(e: &Env, name: &str, nacuuid: &str, delete_backup: bool) {
    let nabs: Api<NonAdminBackup> = Api::namespaced(e.alice.clone(), NS);
    let nab: NonAdminBackup = serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
        "metadata": {"name": name},
        "spec": {"backupSpec": {}, "deleteBackup": delete_backup}
    }))
    .unwrap();
    nabs.create(&PostParams::default(), &nab).await.unwrap();
    let admin: Api<NonAdminBackup> = Api::namespaced(e.admin.clone(), NS);
    admin
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"finalizers": ["nonadminbackup.oadp.openshift.io/finalizer"]}}),
            ),
        )
        .await
        .unwrap();
    admin
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "phase": "Created",
                "conditions": [
                    condition("Accepted", "BackupAccepted", "backup accepted"),
                    condition("Queued", "BackupScheduled", "Created Velero Backup object"),
                ],
                "veleroBackup": {"nacuuid": nacuuid, "name": nacuuid, "namespace": OADP_NAMESPACE},
            }})),
        )
        .await
        .unwrap();
}

/// Velero Backups whose NACUUID label is `nacuuid`.
async fn backups_of(e: &Env, nacuuid: &str) -> usize {
    Api::<Backup>::namespaced(e.admin.clone(), OADP_NAMESPACE)
        .list(
            &ListParams::default()
                .labels(&format!("openshift.io/oadp-nab-origin-nacuuid={nacuuid}")),
        )
        .await
        .unwrap()
        .items
        .len()
}

async fn all_backups(e: &Env) -> Vec<String> {
    Api::<Backup>::namespaced(e.admin.clone(), OADP_NAMESPACE)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|b| b.metadata.name)
        .collect()
}

async fn upstream_backups_are_adopted_restored_and_deleted(cluster: TestCluster) {
    let e = env(cluster).await;
    // A NAB of a long name: its NACUUID is cut as upstream cuts it.
    let long = "nightly-backup-of-the-whole-namespace-kept-for-thirty-days-x";
    let done = upstream_nacuuid(NS, long, "2a6f1a9e-1c1e-4c57-9b33-7a2d0b3c1f00");
    assert!(done.len() <= 63 && done.ends_with("-2a6f1a9e-1c1e-4c57-9b33-7a2d0b3c1f00"));
    upstream_velero_backup(&e, &done, long).await;
    upstream_nab(&e, long, &done, false).await;
    // A NAB upstream's synchronizer made for a backup whose NAB was lost: the synced-from
    // label only.
    let synced = upstream_nacuuid(NS, "lost", "5d0c8a6e-8f5c-4d3e-b1b2-0a9c4e6d7f11");
    upstream_velero_backup(&e, &synced, "lost").await;
    let velero_spec = Api::<Backup>::namespaced(e.admin.clone(), OADP_NAMESPACE)
        .get(&synced)
        .await
        .unwrap()
        .spec;
    let nab: NonAdminBackup = serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
        "metadata": {"name": "lost", "labels": {"openshift.io/oadp-nab-synced-from-nacuuid": synced}},
        "spec": {"backupSpec": velero_spec}
    }))
    .unwrap();
    Api::<NonAdminBackup>::namespaced(e.admin.clone(), NS)
        .create(&PostParams::default(), &nab)
        .await
        .unwrap();
    let before = all_backups(&e).await;
    assert_eq!(before.len(), 2, "{before:?}");

    let nac = start_nac(&e);
    let nabs: Api<NonAdminBackup> = Api::namespaced(e.alice.clone(), NS);
    for (name, nacuuid) in [(long, &done), ("lost", &synced)] {
        let adopted = wait_until(&nabs, name, "NonAdminBackup", |v| {
            v.is_some_and(|v| {
                s(v, "/status/phase") == "Created"
                    && s(v, "/status/veleroBackup/status/phase") == "Completed"
            })
        })
        .await
        .unwrap();
        assert_eq!(
            s(&adopted, "/status/veleroBackup/nacuuid"),
            nacuuid,
            "{adopted}"
        );
        assert_eq!(
            s(&adopted, "/status/veleroBackup/name"),
            nacuuid,
            "{adopted}"
        );
    }
    // A few more reconciles: still exactly the two Velero Backups upstream made.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(backups_of(&e, &done).await, 1);
    assert_eq!(backups_of(&e, &synced).await, 1);
    assert_eq!(all_backups(&e).await.len(), 2);
    // Upstream records no namespace UID; NAC records the one of the namespace the adopting NAB
    // lives in, so its backup sync can recover these backups after a disaster.
    let uid = Api::<k8s_openapi::api::core::v1::Namespace>::all(e.admin.clone())
        .get(NS)
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    for nacuuid in [&done, &synced] {
        let recorded = Api::<Backup>::namespaced(e.admin.clone(), OADP_NAMESPACE)
            .get(nacuuid)
            .await
            .unwrap()
            .metadata
            .annotations
            .unwrap_or_default();
        assert_eq!(
            recorded.get("openshift.io/oadp-nab-origin-namespace-uid"),
            Some(&uid),
            "{nacuuid}: {recorded:?}"
        );
    }

    // A restore from the adopted backup works.
    let nars: Api<NonAdminRestore> = Api::namespaced(e.alice.clone(), NS);
    let nar: NonAdminRestore = serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminRestore",
        "metadata": {"name": "from-upstream"},
        "spec": {"restoreSpec": {"backupName": long}}
    }))
    .unwrap();
    nars.create(&PostParams::default(), &nar).await.unwrap();
    let restored = wait_until(&nars, "from-upstream", "NonAdminRestore", |v| {
        v.is_some_and(|v| s(v, "/status/veleroRestore/status/phase") == "Completed")
    })
    .await
    .unwrap();
    let velero_restore = s(&restored, "/status/veleroRestore/name").to_string();
    let restore = Api::<Restore>::namespaced(e.admin.clone(), OADP_NAMESPACE)
        .get(&velero_restore)
        .await
        .unwrap();
    assert_eq!(restore.spec.backup_name.as_deref(), Some(done.as_str()));

    // A permanent delete of the adopted backup removes it and its NAB.
    nabs.patch(
        long,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"deleteBackup": true}})),
    )
    .await
    .unwrap();
    wait_until(&nabs, long, "NonAdminBackup", |v| v.is_none()).await;
    let backups: Api<Backup> = Api::namespaced(e.admin.clone(), OADP_NAMESPACE);
    wait_until(&backups, &done, "Velero Backup", |v| v.is_none()).await;
    nac.abort();
}

async fn an_upstream_delete_in_flight_finishes_with_its_own_request(cluster: TestCluster) {
    let e = env(cluster).await;
    let nacuuid = upstream_nacuuid(NS, "going", "9e3c7b7a-5a52-4f5e-a1d1-4b3f0e2c6d22");
    upstream_velero_backup(&e, &nacuuid, "going").await;
    upstream_nab(&e, "going", &nacuuid, true).await;
    // Upstream asked Velero to delete it (a DeleteBackupRequest by generateName) and was
    // stopped before the NAB went away.
    let requests: Api<DeleteBackupRequest> = Api::namespaced(e.admin.clone(), OADP_NAMESPACE);
    let request: DeleteBackupRequest = serde_json::from_value(json!({
        "apiVersion": "velero.io/v1", "kind": "DeleteBackupRequest",
        "metadata": {"generateName": format!("{nacuuid}-"),
                     "labels": upstream_labels("openshift.io/oadp-nab-origin-nacuuid", &nacuuid)},
        "spec": {"backupName": nacuuid}
    }))
    .unwrap();
    let made = requests
        .create(&PostParams::default(), &request)
        .await
        .unwrap();
    Api::<NonAdminBackup>::namespaced(e.admin.clone(), NS)
        .patch_status(
            "going",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "veleroDeleteBackupRequest": {"nacuuid": nacuuid,
                    "name": made.metadata.name, "namespace": OADP_NAMESPACE},
            }})),
        )
        .await
        .unwrap();

    let nac = start_nac(&e);
    let nabs: Api<NonAdminBackup> = Api::namespaced(e.alice.clone(), NS);
    wait_until(&nabs, "going", "NonAdminBackup", |v| v.is_none()).await;
    let backups: Api<Backup> = Api::namespaced(e.admin.clone(), OADP_NAMESPACE);
    wait_until(&backups, &nacuuid, "Velero Backup", |v| v.is_none()).await;
    // NAC never asked a second time while upstream's request was there.
    let made_by_nac: Vec<_> = requests
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|r| r.metadata.name != made.metadata.name)
        .filter_map(|r| r.metadata.name)
        .collect();
    assert!(made_by_nac.is_empty(), "{made_by_nac:?}");
    nac.abort();
}

async fn an_upstream_restore_continues(cluster: TestCluster) {
    let e = env(cluster).await;
    let backup = upstream_nacuuid(NS, "source", "1b2c3d4e-0000-4000-8000-000000000001");
    upstream_velero_backup(&e, &backup, "source").await;
    upstream_nab(&e, "source", &backup, false).await;
    // Upstream made the Velero Restore of NAR "back" and was stopped.
    let nacuuid = upstream_nacuuid(NS, "back", "1b2c3d4e-0000-4000-8000-000000000002");
    let restore: Restore = serde_json::from_value(json!({
        "apiVersion": "velero.io/v1", "kind": "Restore",
        "metadata": {"name": nacuuid,
            "labels": upstream_labels("openshift.io/oadp-nar-origin-nacuuid", &nacuuid),
            "annotations": {"openshift.io/oadp-nar-origin-name": "back",
                            "openshift.io/oadp-nar-origin-namespace": NS}},
        "spec": {"backupName": backup, "includedNamespaces": [NS]}
    }))
    .unwrap();
    Api::<Restore>::namespaced(e.admin.clone(), OADP_NAMESPACE)
        .create(&PostParams::default(), &restore)
        .await
        .unwrap();
    let nar: NonAdminRestore = serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminRestore",
        "metadata": {"name": "back"},
        "spec": {"restoreSpec": {"backupName": "source"}}
    }))
    .unwrap();
    let nars: Api<NonAdminRestore> = Api::namespaced(e.alice.clone(), NS);
    nars.create(&PostParams::default(), &nar).await.unwrap();
    let admin: Api<NonAdminRestore> = Api::namespaced(e.admin.clone(), NS);
    admin
        .patch(
            "back",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["nonadminrestore.oadp.openshift.io/finalizer"]}})),
        )
        .await
        .unwrap();
    admin
        .patch_status(
            "back",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "phase": "Created",
                "conditions": [
                    condition("Accepted", "RestoreAccepted", "restore accepted"),
                    condition("Queued", "RestoreScheduled", "Created Velero Restore object"),
                ],
                "veleroRestore": {"nacuuid": nacuuid, "name": nacuuid, "namespace": OADP_NAMESPACE},
            }})),
        )
        .await
        .unwrap();

    let nac = start_nac(&e);
    let adopted = wait_until(&nars, "back", "NonAdminRestore", |v| {
        v.is_some_and(|v| s(v, "/status/veleroRestore/status/phase") == "Completed")
    })
    .await
    .unwrap();
    assert_eq!(s(&adopted, "/status/veleroRestore/nacuuid"), nacuuid);
    assert_eq!(s(&adopted, "/status/phase"), "Created");
    let restores = Api::<Restore>::namespaced(e.admin.clone(), OADP_NAMESPACE)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    assert_eq!(restores.len(), 1, "no second Velero Restore: {restores:?}");
    // Deleting the NAR releases upstream's finalizer.
    nars.delete("back", &Default::default()).await.unwrap();
    wait_until(&nars, "back", "NonAdminRestore", |v| v.is_none()).await;
    nac.abort();
}

#[test]
fn nacuuids_are_cut_as_upstream_cuts_them() {
    let uuid = "2a6f1a9e-1c1e-4c57-9b33-7a2d0b3c1f00";
    assert_eq!(
        upstream_nacuuid("team-a", "nightly", uuid),
        format!("team-a-nightly-{uuid}")
    );
    let long = upstream_nacuuid("team-a", &"n".repeat(60), uuid);
    assert_eq!(long.len(), 63);
    assert!(long.starts_with("team-a-nnn"));
    let long_namespace = upstream_nacuuid(&"a".repeat(63), "x", uuid);
    assert!(long_namespace.len() <= 63, "{long_namespace}");
    assert!(long_namespace.ends_with(uuid));
}

on_both_servers!(
    upstream_backups_are_adopted_restored_and_deleted,
    an_upstream_delete_in_flight_finishes_with_its_own_request,
    an_upstream_restore_continues,
);
