//! Taking over from upstream OADP NAC (migtools/oadp-non-admin), on the emulator and on the
//! real kube-apiserver (`NAME::emulator`, `NAME::real`): an admin turns off the DPA's
//! `spec.nonAdmin.enable` and starts NAC's controllers on a cluster holding what upstream left —
//! NonAdminBackups and NonAdminRestores with upstream's status, finalizers and NACUUIDs
//! (`<namespace>-<name>-<uuid>`, cut to 63 characters as upstream's `GenerateNacObjectUUID`
//! cuts it), Velero Backups and Restores with upstream's names, labels and annotations (no
//! namespace UID: upstream records none), a DeleteBackupRequest made by `generateName`, and a
//! NonAdminBackup upstream's synchronizer made (only the synced-from label, no status), and a
//! NonAdminBackupStorageLocation upstream made usable: its Secret copy and Velero
//! BackupStorageLocation in the OADP namespace (named by the NACUUID, labelled and annotated as
//! upstream's NABSL controller does) and its NonAdminBackupStorageLocationRequest (approved,
//! by the administrator or automatically).
//!
//! Nothing is lost: status continues, no second Velero object is made for any NACUUID, a
//! synced NAB refers to the existing backup, deletes and restores work, backups go to the
//! adopted storage location and deleting the location removes what upstream made for it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;
use support::cluster::{TestCluster, eventually_seen};
use support::controller_env::ControllerEnv as Env;

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use nac::api::nonadmin::{
    NonAdminBackup, NonAdminBackupStorageLocation, NonAdminBackupStorageLocationRequest,
    NonAdminRestore,
};
use nac::api::velero::{Backup, BackupStorageLocation, DeleteBackupRequest, Restore};
use nac::controllers;
use nac::controllers::policy_source;
use nac::sim::demo::OADP_NAMESPACE;
use serde_json::{Value, json};

const NS: &str = "team-a";

async fn env(cluster: TestCluster) -> Env {
    let env = Env::new(cluster).await;
    env.start_velero(|_| {}).await;
    env
}

fn start_nac(e: &Env) -> tokio::task::JoinHandle<()> {
    tokio::spawn(controllers::run(e.context()))
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
    eventually_seen(&format!("{what} {name}"), 60, || async {
        let last = api
            .get_opt(name)
            .await
            .unwrap()
            .map(|o| serde_json::to_value(o).unwrap());
        if done(last.as_ref()) {
            Ok(last)
        } else {
            Err(format!("{last:?}"))
        }
    })
    .await
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

/// How upstream's NABSL controller left a location.
#[derive(Clone, Copy, PartialEq)]
enum UpstreamNabsl {
    /// `requireApprovalForBSL` off: the request upstream made was approved at once.
    AutoApproved,
    /// `requireApprovalForBSL` on, and the administrator approved the request.
    AdminApproved,
    /// Made before upstream had approval requests: no request, no ClusterAdminApproved.
    BeforeRequests,
}

const NABSL_LABEL: &str = "openshift.io/oadp-nabsl-origin-nacuuid";
const LOCAL_PROVIDER: &str = "nac.openshift.io/local";
const NABSL_FINALIZER: &str = "nonadminbackupstoragelocation.oadp.openshift.io/finalizer";

fn nabsl_annotations(name: &str) -> Value {
    json!({"openshift.io/oadp-nabsl-origin-name": name,
           "openshift.io/oadp-nabsl-origin-namespace": NS})
}

/// The tenant's location spec, and the Velero spec upstream derives from it: the credential
/// names the Secret copy (the NACUUID) and the prefix is put under the namespace
/// (`ComputePrefixForObjectStorage`).
fn tenant_location_spec() -> Value {
    json!({"provider": LOCAL_PROVIDER,
           "objectStorage": {"bucket": "team-a-bucket", "prefix": "velero"},
           "credential": {"name": "creds", "key": "cloud"}})
}

fn upstream_velero_location_spec(nacuuid: &str) -> Value {
    json!({"provider": LOCAL_PROVIDER,
           "objectStorage": {"bucket": "team-a-bucket", "prefix": format!("{NS}/velero")},
           "credential": {"name": nacuuid, "key": "cloud"}})
}

/// Counts of the objects labelled with the NABSL NACUUID `nacuuid` in the OADP namespace:
/// (Velero BSLs, Secrets, approval requests).
async fn made_for_location(e: &Env, nacuuid: &str) -> (usize, usize, usize) {
    let by_label = ListParams::default().labels(&format!("{NABSL_LABEL}={nacuuid}"));
    let bsls = Api::<BackupStorageLocation>::namespaced(e.admin.clone(), OADP_NAMESPACE)
        .list(&by_label)
        .await
        .unwrap()
        .items
        .len();
    let secrets = Api::<Secret>::namespaced(e.admin.clone(), OADP_NAMESPACE)
        .list(&by_label)
        .await
        .unwrap()
        .items
        .len();
    let requests =
        Api::<NonAdminBackupStorageLocationRequest>::namespaced(e.admin.clone(), OADP_NAMESPACE)
            .list(&by_label)
            .await
            .unwrap()
            .items
            .len();
    (bsls, secrets, requests)
}

fn nabsl_condition<'a>(v: &'a Value, type_: &str) -> &'a Value {
    v.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .unwrap_or(&Value::Null)
}

/// Everything upstream's NABSL controller leaves for location `name` of NACUUID `nacuuid`,
/// once its Velero BSL is made: the tenant's Secret and NABSL (finalizer, phase Created,
/// upstream's conditions, the NACUUID and the mirrored BSL status), the Secret copy, the
/// Velero BSL (Available) and, but `BeforeRequests`, the approved request.
async fn upstream_location(e: &Env, name: &str, nacuuid: &str, how: UpstreamNabsl) {
    // The real server keeps an earlier case's policy and tenant Secret.
    let policies: Api<ConfigMap> = Api::namespaced(e.admin.clone(), OADP_NAMESPACE);
    let _ = policies
        .delete(policy_source::POLICY_CONFIG_MAP, &Default::default())
        .await;
    let _ = Api::<Secret>::namespaced(e.admin.clone(), NS)
        .delete("creds", &Default::default())
        .await;
    if how == UpstreamNabsl::AdminApproved {
        let policy: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": policy_source::POLICY_CONFIG_MAP, "namespace": OADP_NAMESPACE},
            "data": {"policy.yaml": "requireApprovalForBSL: true\n"}
        }))
        .unwrap();
        policies
            .create(&PostParams::default(), &policy)
            .await
            .unwrap();
    }
    let tenant_secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "creds", "namespace": NS},
        "stringData": {"cloud": "[default]\naws_access_key_id=one\naws_secret_access_key=s1\n"}
    }))
    .unwrap();
    let tenant_secret = Api::<Secret>::namespaced(e.admin.clone(), NS)
        .create(&PostParams::default(), &tenant_secret)
        .await
        .unwrap();

    // Upstream's copy: same type and data, named by the NACUUID (`syncSecrets`).
    let copy = Secret {
        metadata: serde_json::from_value(json!({
            "name": nacuuid, "namespace": OADP_NAMESPACE,
            "labels": upstream_labels(NABSL_LABEL, nacuuid),
            "annotations": nabsl_annotations(name),
        }))
        .unwrap(),
        type_: tenant_secret.type_.clone(),
        data: tenant_secret.data.clone(),
        ..Default::default()
    };
    Api::<Secret>::namespaced(e.admin.clone(), OADP_NAMESPACE)
        .create(&PostParams::default(), &copy)
        .await
        .unwrap();

    // Upstream's Velero BSL (`createVeleroBSL`; oadp-operator's `UpdateBackupStorageLocation`
    // adds the registry label).
    let mut bsl_labels = upstream_labels(NABSL_LABEL, nacuuid);
    bsl_labels["openshift.io/oadp-registry"] = json!("True");
    let bsl: BackupStorageLocation = serde_json::from_value(json!({
        "apiVersion": "velero.io/v1", "kind": "BackupStorageLocation",
        "metadata": {"name": nacuuid, "labels": bsl_labels,
                     "annotations": nabsl_annotations(name)},
        "spec": upstream_velero_location_spec(nacuuid),
    }))
    .unwrap();
    let bsls: Api<BackupStorageLocation> = Api::namespaced(e.admin.clone(), OADP_NAMESPACE);
    bsls.create(&PostParams::default(), &bsl).await.unwrap();
    let available = wait_until(&bsls, nacuuid, "Velero BackupStorageLocation", |b| {
        b.is_some_and(|b| s(b, "/status/phase") == "Available")
    })
    .await
    .unwrap();

    if how != UpstreamNabsl::BeforeRequests {
        // `createNonAdminRequest`: named by the NACUUID, `approve` at once when approval is
        // not required, else `pending` until the administrator approves.
        let request: NonAdminBackupStorageLocationRequest = serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1",
            "kind": "NonAdminBackupStorageLocationRequest",
            "metadata": {"name": nacuuid, "labels": upstream_labels(NABSL_LABEL, nacuuid),
                         "annotations": nabsl_annotations(name)},
            "spec": {"approvalDecision": "approve"}
        }))
        .unwrap();
        let requests: Api<NonAdminBackupStorageLocationRequest> =
            Api::namespaced(e.admin.clone(), OADP_NAMESPACE);
        requests
            .create(&PostParams::default(), &request)
            .await
            .unwrap();
        requests
            .patch_status(
                nacuuid,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {
                    "nonAdminBackupStorageLocation": {
                        "requestedSpec": tenant_location_spec(),
                        "nacuuid": nacuuid, "name": name, "namespace": NS,
                    },
                    "phase": "Approved",
                }})),
            )
            .await
            .unwrap();
    }

    let nabsl: NonAdminBackupStorageLocation = serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackupStorageLocation",
        "metadata": {"name": name},
        "spec": {"backupStorageLocationSpec": tenant_location_spec()}
    }))
    .unwrap();
    Api::<NonAdminBackupStorageLocation>::namespaced(e.alice.clone(), NS)
        .create(&PostParams::default(), &nabsl)
        .await
        .unwrap();
    let admin: Api<NonAdminBackupStorageLocation> = Api::namespaced(e.admin.clone(), NS);
    admin
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": [NABSL_FINALIZER]}})),
        )
        .await
        .unwrap();
    let mut conditions = vec![condition(
        "Accepted",
        "BslSpecValidation",
        "NonAdminBackupStorageLocation spec validation successful",
    )];
    if how != UpstreamNabsl::BeforeRequests {
        conditions.push(condition(
            "ClusterAdminApproved",
            "BslSpecApproved",
            "NonAdminBackupStorageLocationRequest approval decision set to Approve",
        ));
    }
    conditions.push(condition(
        "SecretSynced",
        "SecretCreated",
        "Secret successfully created in the OADP namespace",
    ));
    conditions.push(condition(
        "BackupStorageLocationSynced",
        "BackupStorageLocationCreated",
        "BackupStorageLocation successfully created in the OADP namespace",
    ));
    admin
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "phase": "Created",
                "conditions": conditions,
                "veleroBackupStorageLocation": {
                    "nacuuid": nacuuid, "name": nacuuid, "namespace": OADP_NAMESPACE,
                    "status": available["status"].clone(),
                },
            }})),
        )
        .await
        .unwrap();
}

async fn upstream_location_is_adopted_used_and_deleted(cluster: TestCluster, how: UpstreamNabsl) {
    let e = env(cluster).await;
    let uuid = match how {
        UpstreamNabsl::AutoApproved => "7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e51",
        UpstreamNabsl::AdminApproved => "7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e52",
        UpstreamNabsl::BeforeRequests => "7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e53",
    };
    let nacuuid = upstream_nacuuid(NS, "mine", uuid);
    upstream_location(&e, "mine", &nacuuid, how).await;
    let before = made_for_location(&e, &nacuuid).await;
    let expected_requests = usize::from(how != UpstreamNabsl::BeforeRequests);
    assert_eq!(before, (1, 1, expected_requests));
    let bsls: Api<BackupStorageLocation> = Api::namespaced(e.admin.clone(), OADP_NAMESPACE);
    let bsl_before = bsls.get(&nacuuid).await.unwrap();

    let nac = start_nac(&e);
    let nabsls: Api<NonAdminBackupStorageLocation> = Api::namespaced(e.alice.clone(), NS);
    let adopted = wait_until(&nabsls, "mine", "NonAdminBackupStorageLocation", |v| {
        v.is_some_and(|v| {
            s(v, "/status/phase") == "Created"
                && nabsl_condition(v, "ClusterAdminApproved")["status"] == "True"
                && s(v, "/status/veleroBackupStorageLocation/status/phase") == "Available"
        })
    })
    .await
    .unwrap();
    // A few more reconciles: nothing is made a second time, nothing is rewritten.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(made_for_location(&e, &nacuuid).await, (1, 1, 1));
    let adopted = nabsls
        .get("mine")
        .await
        .map(|n| serde_json::to_value(n).unwrap())
        .unwrap_or(adopted);
    assert_eq!(s(&adopted, "/status/phase"), "Created", "{adopted}");
    for (pointer, value) in [
        ("/status/veleroBackupStorageLocation/nacuuid", &nacuuid),
        ("/status/veleroBackupStorageLocation/name", &nacuuid),
    ] {
        assert_eq!(s(&adopted, pointer), value, "{adopted}");
    }
    // Upstream's conditions continue: same reasons, same transition times (no Secret or BSL
    // was written again).
    for (type_, reason) in [
        ("Accepted", "BslSpecValidation"),
        ("SecretSynced", "SecretCreated"),
        (
            "BackupStorageLocationSynced",
            "BackupStorageLocationCreated",
        ),
    ] {
        let c = nabsl_condition(&adopted, type_);
        assert_eq!(c["status"], "True", "{type_}: {adopted}");
        assert_eq!(c["reason"], reason, "{type_}: {adopted}");
        assert_eq!(
            c["lastTransitionTime"], "2026-11-01T10:00:00Z",
            "{type_}: {adopted}"
        );
    }
    let bsl_after = bsls.get(&nacuuid).await.unwrap();
    assert_eq!(bsl_after.spec, bsl_before.spec);
    assert_eq!(
        bsl_after.metadata.labels, bsl_before.metadata.labels,
        "upstream's labels stay"
    );
    let request =
        Api::<NonAdminBackupStorageLocationRequest>::namespaced(e.admin.clone(), OADP_NAMESPACE)
            .get(&nacuuid)
            .await
            .unwrap();
    let request = serde_json::to_value(request).unwrap();
    assert_eq!(
        s(&request, "/spec/approvalDecision"),
        "approve",
        "{request}"
    );
    assert_eq!(s(&request, "/status/phase"), "Approved", "{request}");
    assert_eq!(
        request.pointer("/status/nonAdminBackupStorageLocation/requestedSpec"),
        Some(&tenant_location_spec()),
        "{request}"
    );

    // A backup naming the location goes to the adopted Velero BSL.
    let nabs: Api<NonAdminBackup> = Api::namespaced(e.alice.clone(), NS);
    let nab: NonAdminBackup = serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
        "metadata": {"name": "to-mine"},
        "spec": {"backupSpec": {"storageLocation": "mine"}}
    }))
    .unwrap();
    nabs.create(&PostParams::default(), &nab).await.unwrap();
    let backed_up = wait_until(&nabs, "to-mine", "NonAdminBackup", |v| {
        v.is_some_and(|v| s(v, "/status/veleroBackup/status/phase") == "Completed")
    })
    .await
    .unwrap();
    let velero_backup = Api::<Backup>::namespaced(e.admin.clone(), OADP_NAMESPACE)
        .get(s(&backed_up, "/status/veleroBackup/name"))
        .await
        .unwrap();
    assert_eq!(
        velero_backup.spec.storage_location.as_deref(),
        Some(nacuuid.as_str())
    );

    // Deleting the location deletes the NAB naming it (as upstream), the Velero BSL, the
    // Secret copy and the request, then releases upstream's finalizer.
    nabsls.delete("mine", &Default::default()).await.unwrap();
    wait_until(&nabsls, "mine", "NonAdminBackupStorageLocation", |v| {
        v.is_none()
    })
    .await;
    wait_until(&nabs, "to-mine", "NonAdminBackup", |v| v.is_none()).await;
    assert_eq!(made_for_location(&e, &nacuuid).await, (0, 0, 0));
    nac.abort();
    let _ = Api::<ConfigMap>::namespaced(e.admin.clone(), OADP_NAMESPACE)
        .delete(policy_source::POLICY_CONFIG_MAP, &Default::default())
        .await;
}

async fn an_auto_approved_upstream_location_is_adopted(cluster: TestCluster) {
    upstream_location_is_adopted_used_and_deleted(cluster, UpstreamNabsl::AutoApproved).await;
}

async fn an_admin_approved_upstream_location_is_adopted(cluster: TestCluster) {
    upstream_location_is_adopted_used_and_deleted(cluster, UpstreamNabsl::AdminApproved).await;
}

async fn a_location_from_before_approval_requests_gets_one_request(cluster: TestCluster) {
    upstream_location_is_adopted_used_and_deleted(cluster, UpstreamNabsl::BeforeRequests).await;
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
    an_auto_approved_upstream_location_is_adopted,
    an_admin_approved_upstream_location_is_adopted,
    a_location_from_before_approval_requests_gets_one_request,
);
