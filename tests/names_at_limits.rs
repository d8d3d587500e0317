//! Every tenant flow with names as users give them — short ones, and names at Kubernetes'
//! limits (63-character namespaces, 253-character object names, dots included) — on the
//! emulator and on the real kube-apiserver, NAC running with exactly `deploy/`'s RBAC: backup,
//! manifest, restore, download request, delete; scheduled backups (their 78-character Velero
//! names), their manifests, deletion and expiry; a tenant storage location; the shared pool;
//! the backup sync after the tenant's objects are lost, and the admin's DeletionAction on a
//! permanent delete. Each flow must give
//! the same results whatever the names, with no 422 from the server, no label value over 63
//! bytes and no name over its limit.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;
use std::io::Read;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind, NamespaceResourceScope};
use nac::api::nonadmin::{
    BackupBucket, BackupEntry, NonAdminBackup, NonAdminBackupStorageLocation,
    NonAdminDownloadRequest, NonAdminRestore, NonAdminSchedule,
};
use nac::api::velero::Backup;
use nac::sim::demo::OADP_NAMESPACE;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use support::cluster::{
    Server, TestCluster, eventually, eventually_seen, wait_for_object, wait_until_gone,
};
use support::nac_stack;

/// How users name things in one run of a flow.
struct Names {
    namespace: String,
    backup: String,
    restore: String,
    download: String,
    schedule: String,
    location: String,
}

/// `prefix` filled with `fill` to exactly `len` characters (ending alphanumeric).
fn long_name(prefix: &str, fill: char, len: usize) -> String {
    let mut name = prefix.to_string();
    while name.len() < len {
        name.push(fill);
    }
    name.truncate(len);
    name
}

fn short_names(cluster: &TestCluster) -> Names {
    Names {
        namespace: cluster.unique_name("team-a", None),
        backup: "nightly".into(),
        restore: "restore-1".into(),
        download: "logs".into(),
        schedule: "nightly".into(),
        location: "own-bucket".into(),
    }
}

/// 63-character namespaces and 253-character object names (with dots, as DNS subdomains
/// allow).
fn names_at_limits(cluster: &TestCluster) -> Names {
    Names {
        namespace: cluster
            .unique_name("payments-platform-production-eu-west-1-blue-team", Some(63)),
        backup: long_name("nightly.database-and-config.before-upgrade.", 'b', 253),
        restore: long_name(
            "restore.after-failed-upgrade.of-the-payments-database.",
            'r',
            253,
        ),
        download: long_name("logs.of-the-nightly-backup.", 'l', 253),
        schedule: long_name("every-night.at-two.keep-for-thirty-days.", 's', 253),
        location: long_name("team-owned-bucket.in-another-region.", 'o', 253),
    }
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn condition<'a>(v: &'a Value, type_: &str) -> &'a Value {
    v.pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .unwrap_or(&Value::Null)
}

fn api<K>(c: &Client, ns: &str) -> Api<K>
where
    K: kube::Resource<Scope = NamespaceResourceScope>,
    <K as kube::Resource>::DynamicType: Default,
{
    Api::namespaced(c.clone(), ns)
}

async fn create<K>(c: &Client, ns: &str, value: Value)
where
    K: kube::Resource<Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
    <K as kube::Resource>::DynamicType: Default,
{
    let object: K = serde_json::from_value(value.clone()).unwrap();
    api::<K>(c, ns)
        .create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|e| panic!("creating {value}: {e}"));
}

async fn wait_for<K>(
    c: &Client,
    ns: &str,
    name: &str,
    secs: u64,
    done: impl Fn(&Value) -> bool,
) -> Value
where
    K: kube::Resource<Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
    <K as kube::Resource>::DynamicType: Default,
{
    wait_for_object(&api::<K>(c, ns), name, secs, done).await
}

async fn wait_gone<K>(c: &Client, ns: &str, name: &str, secs: u64)
where
    K: kube::Resource<Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
    <K as kube::Resource>::DynamicType: Default,
{
    wait_until_gone(&api::<K>(c, ns), name, secs).await
}

/// Every label value of every NAC and Velero object in `namespaces` fits 63 bytes and every
/// name its limit (the real server refuses anything else; this also holds on the emulator).
async fn assert_names_and_labels_fit(admin: &Client, namespaces: &[&str]) {
    let kinds = [
        (
            "oadp.openshift.io",
            "v1alpha1",
            "NonAdminBackup",
            "nonadminbackups",
        ),
        (
            "oadp.openshift.io",
            "v1alpha1",
            "NonAdminRestore",
            "nonadminrestores",
        ),
        (
            "oadp.openshift.io",
            "v1alpha1",
            "NonAdminSchedule",
            "nonadminschedules",
        ),
        (
            "oadp.openshift.io",
            "v1alpha1",
            "NonAdminDownloadRequest",
            "nonadmindownloadrequests",
        ),
        ("velero.io", "v1", "Backup", "backups"),
        ("velero.io", "v1", "Restore", "restores"),
        ("velero.io", "v1", "Schedule", "schedules"),
        (
            "velero.io",
            "v1",
            "DeleteBackupRequest",
            "deletebackuprequests",
        ),
        ("velero.io", "v1", "DownloadRequest", "downloadrequests"),
        (
            "velero.io",
            "v1",
            "BackupStorageLocation",
            "backupstoragelocations",
        ),
    ];
    let mut seen = 0;
    for (group, version, kind, plural) in kinds {
        let resource =
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
        for ns in namespaces {
            let list = Api::<DynamicObject>::namespaced_with(admin.clone(), ns, &resource)
                .list(&ListParams::default())
                .await
                .unwrap();
            for object in list.items {
                seen += 1;
                let name = object.metadata.name.clone().unwrap_or_default();
                assert!(name.len() <= 253, "{kind} name over 253: {name}");
                for (key, value) in object.metadata.labels.iter().flatten() {
                    assert!(
                        value.len() <= 63,
                        "{kind} {ns}/{name}: label {key} is {} bytes: {value}",
                        value.len()
                    );
                }
            }
        }
    }
    assert!(seen > 0, "no objects were checked");
}

/// Creates NonAdminBackup `ns/name` with `backup_spec` and waits until it is Created with its
/// Velero backup Completed.
/// Deletes a NonAdminBackup for good (`deleteBackup: true`) as its owner and waits until NAC
/// removed its data, its Velero objects and then the NonAdminBackup itself.
async fn delete_for_good(owner: &Client, ns: &str, name: &str) {
    api::<NonAdminBackup>(owner, ns)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"deleteBackup": true}})),
        )
        .await
        .unwrap();
    wait_gone::<NonAdminBackup>(owner, ns, name, 90).await;
}

async fn backup_completed(c: &Client, ns: &str, name: &str, backup_spec: Value) -> Value {
    create::<NonAdminBackup>(
        c,
        ns,
        json!({"apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
               "metadata": {"name": name}, "spec": {"backupSpec": backup_spec}}),
    )
    .await;
    wait_for::<NonAdminBackup>(c, ns, name, 90, |v| {
        s(v, "/status/phase") == "Created"
            && s(v, "/status/veleroBackup/status/phase") == "Completed"
    })
    .await
}

/// The body behind a signed download URL (gunzipped when it is gzip).
async fn download(url: &str) -> String {
    let (status, body) = support::http_get(url).await;
    assert_eq!(status, 200, "GET {url}");
    if body.starts_with(&[0x1f, 0x8b]) {
        let mut text = String::new();
        flate2::read::GzDecoder::new(&body[..])
            .read_to_string(&mut text)
            .unwrap();
        text
    } else {
        String::from_utf8_lossy(&body).into_owned()
    }
}

async fn manifest(stack: &nac_stack::NacStack, token: &str, ns: &str, backup: &str) -> Value {
    let path = format!("/api/v1/namespaces/{ns}/backups/{backup}/manifest");
    let what = format!("the manifest of {backup} to be served");
    eventually_seen(&what, 60, || async {
        let answer = stack.get(&path, token).await;
        if answer.status == 200 {
            Ok(answer.json())
        } else {
            Err(format!("{} {}", answer.status, answer.text()))
        }
    })
    .await
}

fn item_names(manifest: &Value, kind: &str) -> Vec<String> {
    manifest["items"]
        .as_array()
        .unwrap_or_else(|| panic!("manifest without items: {manifest}"))
        .iter()
        .filter(|item| item["kind"] == kind)
        .map(|item| item["name"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Backup, its manifest, restore, logs, delete: what every tenant does first.
async fn backup_restore_logs_and_delete(cluster: &TestCluster, names: Names) {
    let ns = names.namespace.as_str();
    cluster.tenant_namespace("alice", ns).await;
    let stack = nac_stack::start(cluster, |_| {}).await;
    let token = cluster.user_token("alice");
    let alice = cluster.client(&token);
    let admin = cluster.admin();

    let done = backup_completed(&alice, ns, &names.backup, json!({})).await;
    assert_eq!(condition(&done, "Accepted")["status"], "True", "{done}");
    let nacuuid = s(&done, "/status/veleroBackup/nacuuid").to_string();
    assert!(nacuuid.len() <= 63, "{nacuuid}");
    let velero = api::<Backup>(&admin, OADP_NAMESPACE)
        .get(&nacuuid)
        .await
        .unwrap();
    assert_eq!(
        velero.spec.included_namespaces.as_deref(),
        Some(&[ns.to_string()][..])
    );

    // NAC's writes say who made them (audit logs and managedFields tell them apart).
    let managers: Vec<String> = velero
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|entry| entry.manager.clone())
        .collect();
    assert!(
        managers.iter().any(|m| m.starts_with("nac-controller/")),
        "{managers:?}"
    );
    assert!(
        managers
            .iter()
            .any(|m| m.starts_with("nac-velero-simulator/")),
        "{managers:?}"
    );

    let items = manifest(&stack, &token, ns, &names.backup).await;
    assert!(
        item_names(&items, "ConfigMap").contains(&"web-config".to_string()),
        "{items}"
    );

    // Restore what a bad deploy deleted.
    api::<ConfigMap>(&alice, ns)
        .delete("web-config", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone::<ConfigMap>(&alice, ns, "web-config", 30).await;
    create::<NonAdminRestore>(
        &alice,
        ns,
        json!({"apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminRestore",
               "metadata": {"name": names.restore},
               "spec": {"restoreSpec": {"backupName": names.backup}}}),
    )
    .await;
    wait_for::<NonAdminRestore>(&alice, ns, &names.restore, 90, |v| {
        s(v, "/status/phase") == "Created"
            && s(v, "/status/veleroRestore/status/phase") == "Completed"
    })
    .await;
    let restored = api::<ConfigMap>(&alice, ns)
        .get("web-config")
        .await
        .unwrap();
    assert_eq!(
        restored.data.unwrap()["greeting"],
        format!("hello from {ns}")
    );

    // The backup's log.
    create::<NonAdminDownloadRequest>(
        &alice,
        ns,
        json!({"apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminDownloadRequest",
               "metadata": {"name": names.download},
               "spec": {"target": {"kind": "BackupLog", "name": names.backup}}}),
    )
    .await;
    let processed = wait_for::<NonAdminDownloadRequest>(&alice, ns, &names.download, 60, |v| {
        s(v, "/status/velero/status/phase") == "Processed"
    })
    .await;
    let log = download(s(&processed, "/status/velero/status/downloadURL")).await;
    assert!(log.contains("Backed up item"), "{log}");

    assert_names_and_labels_fit(&admin, &[ns, OADP_NAMESPACE]).await;

    // Delete it for good: the Velero Backup goes, then the NonAdminBackup.
    delete_for_good(&alice, ns, &names.backup).await;
    assert!(
        api::<Backup>(&admin, OADP_NAMESPACE)
            .get_opt(&nacuuid)
            .await
            .unwrap()
            .is_none()
    );
}

/// A schedule's runs become NonAdminBackups with manifests; one is deleted by its owner, the
/// others expire; and through all of it another tenant's backup still completes (the
/// simulator never stops its pass for one object).
async fn scheduled_backups(cluster: &TestCluster, names: Names) {
    let ns = names.namespace.as_str();
    cluster.tenant_namespace("alice", ns).await;
    let other = cluster.unique_name("team-b", None);
    cluster.tenant_namespace("bob", &other).await;
    // One simulated hour per real second: an hourly cron fires about once a second, and a
    // 90h TTL expires a run ninety seconds after it completes. The manifest must be built and
    // read before that: on a loaded machine building it took more than 40 s, the run expired
    // first and its manifest was (rightly) never served.
    let stack = nac_stack::start(cluster, |o| o.time_scale = 3600.0).await;
    let token = cluster.user_token("alice");
    let alice = cluster.client(&token);
    let bob = cluster.user("bob");
    let admin = cluster.admin();

    create::<NonAdminSchedule>(
        &alice,
        ns,
        json!({"apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminSchedule",
               "metadata": {"name": names.schedule},
               "spec": {"schedule": "0 * * * *", "template": {"backupSpec": {"ttl": "90h"}}}}),
    )
    .await;
    let schedule = wait_for::<NonAdminSchedule>(&alice, ns, &names.schedule, 90, |v| {
        v.pointer("/status/lastBackup/veleroBackupName").is_some()
    })
    .await;
    assert_eq!(s(&schedule, "/status/phase"), "Created", "{schedule}");

    // A completed child NonAdminBackup, named within 253 characters.
    let child = eventually("a completed scheduled NonAdminBackup", 90, || async {
        let list = api::<NonAdminBackup>(&alice, ns)
            .list(&ListParams::default())
            .await
            .unwrap();
        // The newest completed run (children are named `<schedule>-<timestamp>`): the most
        // time left before it expires.
        list.items
            .into_iter()
            .filter_map(|nab| {
                let v = serde_json::to_value(&nab).unwrap();
                (s(&v, "/status/veleroBackup/status/phase") == "Completed")
                    .then(|| nab.metadata.name.unwrap())
            })
            .max()
    })
    .await;
    assert!(child.len() <= 253, "{child}");
    let items = manifest(&stack, &token, ns, &child).await;
    assert!(
        item_names(&items, "Secret").contains(&"web-credentials".to_string()),
        "{items}"
    );

    // Its owner deletes it for good.
    delete_for_good(&alice, ns, &child).await;

    // Pause the schedule; runs expire (Velero's own DeleteBackupRequests, labelled with the
    // long names), and bob's backup is still taken.
    api::<NonAdminSchedule>(&alice, ns)
        .patch(
            &names.schedule,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"paused": true}})),
        )
        .await
        .unwrap();
    let schedule_nacuuid = s(&schedule, "/status/veleroSchedule/nacuuid").to_string();
    eventually("every scheduled run to expire", 300, || async {
        let backups = api::<Backup>(&admin, OADP_NAMESPACE)
            .list(&ListParams::default())
            .await
            .unwrap();
        let left = backups
            .items
            .iter()
            .filter(|b| {
                b.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with(&schedule_nacuuid))
            })
            .count();
        (left == 0).then_some(())
    })
    .await;
    create::<NonAdminBackup>(
        &bob,
        &other,
        json!({"apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
               "metadata": {"name": "after-expiry"}, "spec": {"backupSpec": {}}}),
    )
    .await;
    wait_for::<NonAdminBackup>(&bob, &other, "after-expiry", 60, |v| {
        s(v, "/status/veleroBackup/status/phase") == "Completed"
    })
    .await;
    assert_names_and_labels_fit(&admin, &[ns, OADP_NAMESPACE]).await;
}

/// A tenant's own storage location, then a backup into it.
async fn own_storage_location(cluster: &TestCluster, names: Names) {
    let ns = names.namespace.as_str();
    cluster.tenant_namespace("alice", ns).await;
    let _stack = nac_stack::start(cluster, |_| {}).await;
    let alice = cluster.user("alice");
    let admin = cluster.admin();
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "bucket-credentials"},
        "stringData": {"cloud": "[default]\naws_access_key_id=tenant\naws_secret_access_key=secret\n"}
    }))
    .unwrap();
    api::<Secret>(&alice, ns)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    create::<NonAdminBackupStorageLocation>(
        &alice,
        ns,
        json!({"apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackupStorageLocation",
               "metadata": {"name": names.location},
               "spec": {"backupStorageLocationSpec": {
                   "provider": nac::sim::velero::storage::LOCAL_PROVIDER,
                   "objectStorage": {"bucket": "tenant-bucket", "prefix": "backups"},
                   "credential": {"name": "bucket-credentials", "key": "cloud"}}}}),
    )
    .await;
    let location =
        wait_for::<NonAdminBackupStorageLocation>(&alice, ns, &names.location, 60, |v| {
            s(v, "/status/phase") == "Created"
                && s(v, "/status/veleroBackupStorageLocation/status/phase") == "Available"
        })
        .await;
    let bsl_name = s(&location, "/status/veleroBackupStorageLocation/nacuuid").to_string();
    assert!(bsl_name.len() <= 63, "{bsl_name}");
    create::<NonAdminBackup>(
        &alice,
        ns,
        json!({"apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
               "metadata": {"name": names.backup},
               "spec": {"backupSpec": {"storageLocation": names.location}}}),
    )
    .await;
    let done = wait_for::<NonAdminBackup>(&alice, ns, &names.backup, 90, |v| {
        s(v, "/status/veleroBackup/status/phase") == "Completed"
    })
    .await;
    let velero = api::<Backup>(&admin, OADP_NAMESPACE)
        .get(s(&done, "/status/veleroBackup/nacuuid"))
        .await
        .unwrap();
    assert_eq!(
        velero.spec.storage_location.as_deref(),
        Some(bsl_name.as_str())
    );
    assert_names_and_labels_fit(&admin, &[ns, OADP_NAMESPACE]).await;
    let labels: BTreeMap<String, String> = velero.metadata.labels.unwrap_or_default();
    assert!(labels.values().all(|v| v.len() <= 63), "{labels:?}");
}

/// A namespace without a storage location of its own backs up into the admin's shared pool
/// (seed 001): its BackupEntry (named after the namespace and its uid), a Velero location on the
/// entry's prefix, the backup stored there.
async fn shared_pool(cluster: &TestCluster, names: Names) {
    let ns = names.namespace.as_str();
    cluster.tenant_namespace("alice", ns).await;
    let _stack = nac_stack::start_with_pool(cluster, |o| {
        o.backup_sync_interval = Duration::from_millis(200);
        o.bsl_validation_interval = Duration::from_millis(500);
    })
    .await;
    let alice = cluster.user("alice");
    let admin = cluster.admin();
    // The pool's credential and one bucket, as an admin sets them up.
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "pool-credentials", "namespace": OADP_NAMESPACE},
        "stringData": {"cloud": "[default]\naws_access_key_id=x\naws_secret_access_key=y\n"}
    }))
    .unwrap();
    match api::<Secret>(&admin, OADP_NAMESPACE)
        .create(&PostParams::default(), &secret)
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(e) => panic!("creating the pool credential: {e}"),
    }
    let bucket: BackupBucket = serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "BackupBucket",
        "metadata": {"name": cluster.unique_name("pool", None)},
        "spec": {"provider": nac::sim::velero::storage::LOCAL_PROVIDER,
                 "bucket": cluster.unique_name("shared-pool", None),
                 "credential": {"name": "pool-credentials", "key": "cloud"}}
    }))
    .unwrap();
    Api::<BackupBucket>::all(admin.clone())
        .create(&PostParams::default(), &bucket)
        .await
        .unwrap();

    let done = backup_completed(&alice, ns, &names.backup, json!({})).await;
    let entry = eventually("the namespace's BackupEntry", 30, || async {
        Api::<BackupEntry>::all(admin.clone())
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .find(|e| e.spec.namespace == ns)
    })
    .await;
    let entry_name = entry.metadata.name.clone().unwrap();
    assert!(entry_name.starts_with(ns), "{entry_name}");
    assert!(entry_name.len() <= 253, "{entry_name}");
    let location = entry
        .status
        .as_ref()
        .and_then(|s| s.velero_backup_storage_location.as_ref())
        .and_then(|l| l.name.clone())
        .expect("the entry names its Velero location");
    assert_eq!(
        s(&done, "/status/veleroBackup/spec/storageLocation"),
        location.as_str()
    );
    let velero = api::<Backup>(&admin, OADP_NAMESPACE)
        .get(s(&done, "/status/veleroBackup/nacuuid"))
        .await
        .unwrap();
    let labels: BTreeMap<String, String> = velero.metadata.labels.unwrap_or_default();
    assert!(labels.values().all(|v| v.len() <= 63), "{labels:?}");
    assert_names_and_labels_fit(&admin, &[ns, OADP_NAMESPACE]).await;
}

/// The tenant's objects are lost (an etcd restore, a namespace re-applied from Git): the backup
/// sync brings the NonAdminBackup back from its Velero Backup under its whole name; deleting it
/// for good then calls the admin's DeletionAction for its items, which are told the whole
/// NonAdminBackup name and namespace.
async fn sync_and_deletion_action(cluster: &TestCluster, names: Names) {
    use nac::sim::deletion_receiver::{self, CallFilter};
    let ns = names.namespace.as_str();
    cluster.tenant_namespace("alice", ns).await;
    let mut stack = nac_stack::start(cluster, |_| {}).await;
    let alice = cluster.user("alice");
    let admin = cluster.admin();
    let receiver_dir = tempfile::tempdir().unwrap();
    let receiver = deletion_receiver::start(
        receiver_dir.path(),
        "127.0.0.1:0".parse().unwrap(),
        deletion_receiver::DEFAULT_CAPACITY,
    )
    .await
    .unwrap();
    nac::sim::demo::install_deletion_action(&admin, &receiver.hook_url, &receiver.ca_pem)
        .await
        .unwrap();

    let done = backup_completed(&alice, ns, &names.backup, json!({})).await;
    let nacuuid = s(&done, "/status/veleroBackup/nacuuid").to_string();

    // Lost while NAC's controller is down: gone from the API without NAC's finalizer
    // running; the Velero Backup stays.
    stack.stop_controllers().await;
    let nabs = api::<NonAdminBackup>(&admin, ns);
    nabs.patch(
        &names.backup,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    nabs.delete(&names.backup, &DeleteParams::default())
        .await
        .unwrap();
    wait_gone::<NonAdminBackup>(&alice, ns, &names.backup, 30).await;
    assert!(
        api::<Backup>(&admin, OADP_NAMESPACE)
            .get_opt(&nacuuid)
            .await
            .unwrap()
            .is_some()
    );

    // One sync pass, as the controller's service account.
    let controller = cluster.client_as(
        &cluster
            .sa_token(OADP_NAMESPACE, nac::sim::demo::CONTROLLER_SERVICE_ACCOUNT)
            .await,
        nac::api::client_identity::Component::Controller,
    );
    let context = nac::controllers::Context::new(controller, OADP_NAMESPACE);
    let synced = nac::controllers::sync::sync_once(&context).await.unwrap();
    assert!(
        synced.contains(&(ns.to_string(), names.backup.clone())),
        "{synced:?}"
    );
    // The controller, back, adopts it.
    stack.start_controllers();
    let back = wait_for::<NonAdminBackup>(&alice, ns, &names.backup, 60, |v| {
        s(v, "/status/phase") == "Created"
            && s(v, "/status/veleroBackup/nacuuid") == nacuuid
            && s(v, "/status/veleroBackup/status/phase") == "Completed"
    })
    .await;
    let synced_from = back
        .pointer("/metadata/labels")
        .and_then(|l| l.get(nac::api::nonadmin::labels::NAB_SYNCED_FROM_NACUUID))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    assert_eq!(synced_from, nacuuid, "{back}");
    assert_names_and_labels_fit(&admin, &[ns, OADP_NAMESPACE]).await;

    // Deleted for good: the DeletionAction is called for its items first.
    delete_for_good(&alice, ns, &names.backup).await;
    let calls = receiver
        .calls(&CallFilter {
            non_admin_backup: Some(format!("{ns}/{}", names.backup)),
            ..CallFilter::default()
        })
        .items;
    assert!(
        calls
            .iter()
            .any(|c| c.kind == "ConfigMap" && c.name == "web-config"),
        "{calls:?}"
    );
    // Every item is the tenant's: in its namespace, or that namespace itself.
    assert!(
        calls.iter().all(|c| c.backup == nacuuid
            && c.action == nac::sim::demo::DELETION_ACTION
            && (c.namespace.as_deref() == Some(ns) || (c.kind == "Namespace" && c.name == ns))),
        "{calls:?}"
    );
    Api::<nac::api::nonadmin::DeletionAction>::all(admin.clone())
        .delete(nac::sim::demo::DELETION_ACTION, &DeleteParams::default())
        .await
        .unwrap();
}

/// Each flow as two cases: `FLOW_with_short_names` and `FLOW_with_names_at_their_limits`.
macro_rules! with_short_and_long_names {
    ($($flow:ident => $short:ident, $long:ident;)*) => {$(
        async fn $short(cluster: TestCluster) {
            let names = short_names(&cluster);
            $flow(&cluster, names).await;
        }
        async fn $long(cluster: TestCluster) {
            let names = names_at_limits(&cluster);
            $flow(&cluster, names).await;
        }
    )*};
}

with_short_and_long_names! {
    backup_restore_logs_and_delete => backup_restore_logs_and_delete_with_short_names, backup_restore_logs_and_delete_with_names_at_their_limits;
    scheduled_backups => scheduled_backups_with_short_names, scheduled_backups_with_names_at_their_limits;
    own_storage_location => own_storage_location_with_short_names, own_storage_location_with_names_at_their_limits;
    shared_pool => shared_pool_with_short_names, shared_pool_with_names_at_their_limits;
    sync_and_deletion_action => sync_and_deletion_action_with_short_names, sync_and_deletion_action_with_names_at_their_limits;
}

/// The names used are really at the limits (a guard against the fixtures drifting).
#[test]
fn the_long_names_are_at_the_limits() {
    let name = long_name("nightly.database-and-config.before-upgrade.", 'b', 253);
    assert_eq!(name.len(), 253);
    assert!(nac::api::names::is_dns1123_subdomain(&name));
    let _ = Server::Real;
}

on_both_servers!(
    backup_restore_logs_and_delete_with_short_names,
    backup_restore_logs_and_delete_with_names_at_their_limits,
    scheduled_backups_with_short_names,
    scheduled_backups_with_names_at_their_limits,
    own_storage_location_with_short_names,
    own_storage_location_with_names_at_their_limits,
    shared_pool_with_short_names,
    shared_pool_with_names_at_their_limits,
    sync_and_deletion_action_with_short_names,
    sync_and_deletion_action_with_names_at_their_limits,
);
