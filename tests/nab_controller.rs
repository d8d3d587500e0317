//! NonAdminBackup scenarios on the emulator and on the real kube-apiserver (each case
//! `NAME::emulator` and `NAME::real`) with the Velero simulator and NAC's controllers
//! running as their own service accounts: seed 004's flowchart paths, the malicious-tenant
//! refusals, tenant isolation and a crash between every step.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;
use support::cluster::{TestCluster, eventually_seen, wait_for_object, wait_until_gone};
use support::controller_env::ControllerEnv as Env;
use support::sa_token;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use nac::api::client_identity::Component;
use nac::api::nonadmin::NonAdminBackup;
use nac::api::velero::{Backup, DeleteBackupRequest};
use nac::controllers::{self, Context};
use nac::sim::demo::{CONTROLLER_SERVICE_ACCOUNT, OADP_NAMESPACE};
use serde_json::{Value, json};

fn nab(name: &str, backup_spec: Value) -> NonAdminBackup {
    serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
        "metadata": {"name": name}, "spec": {"backupSpec": backup_spec}
    }))
    .unwrap()
}

fn nabs(c: &Client, ns: &str) -> Api<NonAdminBackup> {
    Api::namespaced(c.clone(), ns)
}

async fn wait_nab(
    c: &Client,
    ns: &str,
    name: &str,
    secs: u64,
    done: impl Fn(&Value) -> bool,
) -> Value {
    wait_for_object(&nabs(c, ns), name, secs, done).await
}

async fn wait_nab_gone(c: &Client, ns: &str, name: &str, secs: u64) {
    wait_until_gone(&nabs(c, ns), name, secs).await
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

async fn velero_backups(admin: &Client) -> Vec<Backup> {
    Api::<Backup>::namespaced(admin.clone(), OADP_NAMESPACE)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
}

async fn tenant_backup_reaches_created_with_velero_completed_and_others_see_nothing(
    cluster: TestCluster,
) {
    let e = Env::start(cluster, true, |_| {}).await;
    nabs(&e.alice, "team-a")
        .create(&PostParams::default(), &nab("first", json!({})))
        .await
        .unwrap();
    let done = wait_nab(&e.alice, "team-a", "first", 30, |v| {
        s(v, "/status/phase") == "Created"
            && s(v, "/status/veleroBackup/status/phase") == "Completed"
    })
    .await;
    assert_eq!(condition(&done, "Accepted")["reason"], "BackupAccepted");
    assert_eq!(
        condition(&done, "Queued")["message"],
        "Created Velero Backup object"
    );
    assert_eq!(
        done.pointer("/status/queueInfo/estimatedQueuePosition"),
        Some(&json!(0))
    );
    assert_eq!(
        done.pointer("/metadata/finalizers/0")
            .and_then(Value::as_str),
        Some("nonadminbackup.oadp.openshift.io/finalizer")
    );
    // The controller caches NABs without managedFields; its writes made from those copies leave
    // the server's record of who owns what whole: the tenant's spec, the controller's
    // finalizer and status.
    let managed = done
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (owned, subresource) in [
        ("/fieldsV1/f:spec", Value::Null),
        ("/fieldsV1/f:metadata/f:finalizers", Value::Null),
        ("/fieldsV1/f:status", json!("status")),
    ] {
        assert!(
            managed
                .iter()
                .any(|m| m.pointer(owned).is_some() && m["subresource"] == subresource),
            "{owned}: {managed:?}"
        );
    }
    // Events on the NAB explain what happened; alice reads them in her namespace.
    let reasons = eventually_seen("a BackupCompleted Event on team-a/first", 10, || async {
        let events: Api<k8s_openapi::api::core::v1::Event> =
            Api::namespaced(e.alice.clone(), "team-a");
        let reasons: Vec<String> = events
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|ev| ev.involved_object.name.as_deref() == Some("first"))
            .filter_map(|ev| ev.reason)
            .collect();
        if reasons.iter().any(|r| r == "BackupCompleted") {
            Ok(reasons)
        } else {
            Err(format!("{reasons:?}"))
        }
    })
    .await;
    assert!(
        reasons.contains(&"BackupScheduled".to_string()),
        "{reasons:?}"
    );
    assert!(
        reasons.contains(&"BackupCompleted".to_string()),
        "{reasons:?}"
    );
    let nacuuid = s(&done, "/status/veleroBackup/nacuuid").to_string();
    assert!(nacuuid.starts_with("team-a-first-"), "{nacuuid}");
    // The Velero Backup: named by the NACUUID, labelled, scoped to team-a, our CRs excluded.
    let vbs = velero_backups(&e.admin).await;
    assert_eq!(vbs.len(), 1);
    let vb = &vbs[0];
    assert_eq!(vb.metadata.name.as_deref(), Some(nacuuid.as_str()));
    let labels = vb.metadata.labels.clone().unwrap();
    assert_eq!(labels["openshift.io/oadp"], "True");
    assert_eq!(labels["openshift.io/oadp-nab-origin-nacuuid"], nacuuid);
    assert_eq!(
        vb.spec.included_namespaces,
        Some(vec!["team-a".to_string()])
    );
    let excluded = serde_json::to_string(&vb.spec).unwrap();
    assert!(
        excluded.contains("nonadminbackups.oadp.openshift.io"),
        "{excluded}"
    );
    // The mirrored Velero spec and status.
    assert_eq!(
        done.pointer("/status/veleroBackup/spec/includedNamespaces"),
        Some(&json!(["team-a"]))
    );
    assert!(
        done.pointer("/status/veleroBackup/status/progress/totalItems")
            .is_some()
    );
    // bob can neither list nor get team-a's backups; alice cannot see team-b's.
    assert!(
        nabs(&e.bob, "team-a")
            .list(&ListParams::default())
            .await
            .is_err()
    );
    assert!(nabs(&e.bob, "team-a").get("first").await.is_err());
    assert!(
        nabs(&e.alice, "team-b")
            .list(&ListParams::default())
            .await
            .is_err()
    );
}

async fn queue_positions_are_published_and_only_move_forward(cluster: TestCluster) {
    // One backup at a time, each taking a while: a queue forms behind the first.
    let e = Env::start(cluster, true, |o| o.item_delay = Duration::from_millis(30)).await;
    for i in 1..=4 {
        nabs(&e.alice, "team-a")
            .create(&PostParams::default(), &nab(&format!("q{i}"), json!({})))
            .await
            .unwrap();
    }
    // Every backup's position as its status shows it, over time. Which of them Velero takes
    // last is the order NAC created their Velero Backups in (Velero queues by arrival; NAC
    // reconciles the four at once), not the order they were written in.
    let names: Vec<String> = (1..=4).map(|i| format!("q{i}")).collect();
    let mut seen: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    let mut finished: BTreeMap<String, Value> = BTreeMap::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    while finished.len() < names.len() {
        assert!(tokio::time::Instant::now() < deadline, "seen {seen:?}");
        for name in &names {
            if finished.contains_key(name) {
                continue;
            }
            let v =
                serde_json::to_value(nabs(&e.alice, "team-a").get(name).await.unwrap()).unwrap();
            let positions = seen.entry(name.clone()).or_default();
            if let Some(p) = v
                .pointer("/status/queueInfo/estimatedQueuePosition")
                .and_then(Value::as_i64)
                && positions.last() != Some(&p)
            {
                positions.push(p);
            }
            if s(&v, "/status/veleroBackup/status/phase") == "Completed"
                && v.pointer("/status/queueInfo/estimatedQueuePosition") == Some(&json!(0))
            {
                finished.insert(name.clone(), v);
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        seen.values().flatten().any(|p| *p >= 2),
        "a queue formed: {seen:?}"
    );
    for (name, positions) in &seen {
        let waiting: Vec<i64> = positions.iter().copied().filter(|p| *p > 0).collect();
        assert!(
            waiting.windows(2).all(|w| w[1] < w[0]),
            "{name}'s position only moves forward: {seen:?}"
        );
    }
    for (name, done) in &finished {
        assert_eq!(s(done, "/status/phase"), "Created", "{name}");
    }
}

async fn invalid_specs_back_off_with_the_reason_and_a_fixed_spec_proceeds(cluster: TestCluster) {
    let e = Env::start(cluster, true, |_| {}).await;
    let api = nabs(&e.alice, "team-a");
    let refused = [
        (
            "other-ns",
            json!({"includedNamespaces": ["team-b"]}),
            "includedNamespaces",
        ),
        (
            "excluded",
            json!({"excludedNamespaces": ["x"]}),
            "excludedNamespaces",
        ),
        (
            "cluster",
            json!({"includeClusterResources": true}),
            "includeClusterResources",
        ),
        (
            "scoped",
            json!({"includedClusterScopedResources": ["clusterroles"]}),
            "includedClusterScopedResources",
        ),
        (
            "vsl",
            json!({"volumeSnapshotLocations": ["admin-vsl"]}),
            "volumeSnapshotLocations",
        ),
        (
            "bsl",
            json!({"storageLocation": "not-mine"}),
            "storageLocation",
        ),
    ];
    for (name, spec, _) in &refused {
        api.create(&PostParams::default(), &nab(name, spec.clone()))
            .await
            .unwrap();
    }
    for (name, _, field) in &refused {
        let v = wait_nab(&e.alice, "team-a", name, 20, |v| {
            s(v, "/status/phase") == "BackingOff"
        })
        .await;
        let accepted = condition(&v, "Accepted");
        assert_eq!(accepted["status"], "False", "{name}");
        assert_eq!(accepted["reason"], "InvalidBackupSpec", "{name}");
        assert!(
            accepted["message"].as_str().unwrap().contains(field),
            "{name}: {accepted}"
        );
        assert!(
            v.pointer("/status/veleroBackup/nacuuid").is_none(),
            "{name}: nothing created"
        );
    }
    assert!(
        velero_backups(&e.admin).await.is_empty(),
        "no Velero Backup for any refused spec"
    );
    // The tenant fixes the spec: the NAB moves forward.
    api.patch(
        "other-ns",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"backupSpec": {"includedNamespaces": ["team-a"]}}})),
    )
    .await
    .unwrap();
    wait_nab(&e.alice, "team-a", "other-ns", 30, |v| {
        s(v, "/status/phase") == "Created"
    })
    .await;
}

async fn delete_backup_true_deletes_data_and_the_nab(cluster: TestCluster) {
    let e = Env::start(cluster, true, |_| {}).await;
    let api = nabs(&e.alice, "team-a");
    api.create(&PostParams::default(), &nab("doomed", json!({})))
        .await
        .unwrap();
    let done = wait_nab(&e.alice, "team-a", "doomed", 30, |v| {
        s(v, "/status/veleroBackup/status/phase") == "Completed"
    })
    .await;
    let nacuuid = s(&done, "/status/veleroBackup/nacuuid").to_string();
    // Velero removes a request it processed successfully: watched, not polled.
    let requests = support::record_applied(Api::<DeleteBackupRequest>::namespaced(
        e.admin.clone(),
        OADP_NAMESPACE,
    ));
    api.patch(
        "doomed",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"deleteBackup": true}})),
    )
    .await
    .unwrap();
    wait_nab_gone(&e.alice, "team-a", "doomed", 30).await;
    assert!(
        velero_backups(&e.admin)
            .await
            .iter()
            .all(|b| b.metadata.name.as_deref() != Some(nacuuid.as_str()))
    );
    let seen = requests.lock().unwrap().clone();
    let dbr = seen
        .iter()
        .find(|r| r.spec.backup_name == nacuuid)
        .expect("a DeleteBackupRequest was made");
    let l = dbr.metadata.labels.clone().unwrap();
    assert_eq!(l["velero.io/backup-name"], nacuuid);
    assert!(l.contains_key("velero.io/backup-uid"));
}

async fn api_delete_removes_the_velero_backup_object(cluster: TestCluster) {
    let e = Env::start(cluster, true, |_| {}).await;
    let api = nabs(&e.alice, "team-a");
    api.create(&PostParams::default(), &nab("plain", json!({})))
        .await
        .unwrap();
    wait_nab(&e.alice, "team-a", "plain", 30, |v| {
        s(v, "/status/veleroBackup/status/phase") == "Completed"
    })
    .await;
    api.delete("plain", &DeleteParams::default()).await.unwrap();
    wait_nab_gone(&e.alice, "team-a", "plain", 30).await;
    assert!(velero_backups(&e.admin).await.is_empty());
}

/// Upstream's Accepted=False message once the Velero Backup of a NAB is gone.
const VELERO_BACKUP_NOT_FOUND: &str = "NonAdminBackup is finalized and its associated Velero Backup has been removed. Please create a new NonAdminBackup to initiate a new Backup";

/// The NAB as upstream keeps it once its Velero Backup vanished: BackingOff, Accepted=False
/// `VeleroBackupNotFound` with upstream's message, the rest of its status as it was.
fn assert_kept_backing_off(v: &Value, nacuuid: &str) {
    assert_eq!(s(v, "/status/phase"), "BackingOff", "{v}");
    let accepted = condition(v, "Accepted");
    assert_eq!(accepted["status"], "False", "{v}");
    assert_eq!(accepted["reason"], "VeleroBackupNotFound", "{v}");
    assert_eq!(accepted["message"], VELERO_BACKUP_NOT_FOUND, "{v}");
    assert_eq!(condition(v, "Queued")["status"], "True", "{v}");
    assert_eq!(s(v, "/status/veleroBackup/nacuuid"), nacuuid, "{v}");
    // The last Velero status mirrored stays: Completed, or Deleting when Velero deleted it
    // through a DeleteBackupRequest (TTL expiry, `velero backup delete`).
    assert!(
        ["Completed", "Deleting"].contains(&s(v, "/status/veleroBackup/status/phase")),
        "the last Velero status stays: {v}"
    );
    assert_eq!(
        v.pointer("/status/queueInfo/estimatedQueuePosition"),
        Some(&json!(0)),
        "{v}"
    );
}

/// Velero Backups (and NAC's DeleteBackupRequests) that carry `nacuuid`, by name or label.
async fn velero_objects_of(admin: &Client, nacuuid: &str) -> (Vec<String>, Vec<String>) {
    let label = |meta: &kube::core::ObjectMeta| {
        meta.labels
            .as_ref()
            .and_then(|l| l.get("openshift.io/oadp-nab-origin-nacuuid"))
            .map(String::as_str)
            == Some(nacuuid)
    };
    let backups = velero_backups(admin)
        .await
        .into_iter()
        .filter(|b| b.metadata.name.as_deref() == Some(nacuuid) || label(&b.metadata))
        .filter_map(|b| b.metadata.name)
        .collect();
    let requests = Api::<DeleteBackupRequest>::namespaced(admin.clone(), OADP_NAMESPACE)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|r| label(&r.metadata))
        .filter_map(|r| r.metadata.name)
        .collect();
    (backups, requests)
}

/// Wakes the NAB's controller a few times (metadata and spec changes of the tenant, as a
/// GitOps tool's re-apply would) and checks no Velero Backup is made again for `nacuuid`.
async fn poke_and_check_nothing_is_made(e: &Env, name: &str, nacuuid: &str) {
    let api = nabs(&e.alice, "team-a");
    for i in 0..3 {
        api.patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"annotations": {"example.com/poke": i.to_string()}},
                "spec": {"backupSpec": {"ttl": format!("{}h0m0s", 700 + i)}}}),
            ),
        )
        .await
        .unwrap();
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (backups, requests) = velero_objects_of(&e.admin, nacuuid).await;
    assert!(
        backups.is_empty(),
        "a Velero Backup was made again: {backups:?}"
    );
    assert!(requests.is_empty(), "{requests:?}");
    let v = serde_json::to_value(api.get(name).await.unwrap()).unwrap();
    assert_kept_backing_off(&v, nacuuid);
}

async fn event_reasons(c: &Client, ns: &str, name: &str) -> Vec<String> {
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(c.clone(), ns);
    events
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|ev| ev.involved_object.name.as_deref() == Some(name))
        .filter_map(|ev| ev.reason)
        .collect()
}

async fn completed(e: &Env, name: &str, backup_spec: Value) -> String {
    nabs(&e.alice, "team-a")
        .create(&PostParams::default(), &nab(name, backup_spec))
        .await
        .unwrap();
    let done = wait_nab(&e.alice, "team-a", name, 30, |v| {
        s(v, "/status/phase") == "Created"
            && s(v, "/status/veleroBackup/status/phase") == "Completed"
    })
    .await;
    s(&done, "/status/veleroBackup/nacuuid").to_string()
}

/// Upstream: a NAB whose Velero Backup an admin deleted (directly, or through Velero's
/// DeleteBackupRequest) stays, BackingOff with Accepted=False `VeleroBackupNotFound`; no
/// Velero Backup is ever made again under its NACUUID (a GitOps tool re-applying the NAB takes
/// no new backup); a restore from it is refused; the tenant still deletes it either way.
async fn a_velero_backup_deleted_by_the_admin_leaves_its_nab_backing_off(cluster: TestCluster) {
    // Velero's backup sync would bring a directly deleted Backup back from storage: not
    // within this test.
    let e = Env::start(cluster, true, |o| {
        o.backup_sync_interval = Duration::from_secs(3600)
    })
    .await;
    let direct = completed(&e, "by-kubectl", json!({})).await;
    let through_velero = completed(&e, "by-velero", json!({})).await;
    let backups: Api<Backup> = Api::namespaced(e.admin.clone(), OADP_NAMESPACE);
    backups
        .delete(&direct, &DeleteParams::default())
        .await
        .unwrap();
    let request: DeleteBackupRequest = serde_json::from_value(json!({
        "apiVersion": "velero.io/v1", "kind": "DeleteBackupRequest",
        "metadata": {"generateName": "admin-delete-"},
        "spec": {"backupName": through_velero}
    }))
    .unwrap();
    Api::<DeleteBackupRequest>::namespaced(e.admin.clone(), OADP_NAMESPACE)
        .create(&PostParams::default(), &request)
        .await
        .unwrap();
    for (name, nacuuid) in [("by-kubectl", &direct), ("by-velero", &through_velero)] {
        let v = wait_nab(&e.alice, "team-a", name, 30, |v| {
            s(v, "/status/phase") == "BackingOff"
        })
        .await;
        assert_kept_backing_off(&v, nacuuid);
        assert_eq!(
            v.pointer("/metadata/finalizers/0").and_then(Value::as_str),
            Some("nonadminbackup.oadp.openshift.io/finalizer")
        );
    }
    poke_and_check_nothing_is_made(&e, "by-kubectl", &direct).await;
    poke_and_check_nothing_is_made(&e, "by-velero", &through_velero).await;
    // The tenant hears of it.
    eventually_seen(
        "a VeleroBackupNotFound Event on team-a/by-kubectl",
        10,
        || async {
            let reasons = event_reasons(&e.alice, "team-a", "by-kubectl").await;
            if reasons.iter().any(|r| r == "VeleroBackupNotFound") {
                Ok(())
            } else {
                Err(format!("{reasons:?}"))
            }
        },
    )
    .await;
    // A restore from it is refused (it is not Created any more).
    let restore: nac::api::nonadmin::NonAdminRestore = serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminRestore",
        "metadata": {"name": "from-gone"}, "spec": {"restoreSpec": {"backupName": "by-kubectl"}}
    }))
    .unwrap();
    let restores: Api<nac::api::nonadmin::NonAdminRestore> =
        Api::namespaced(e.alice.clone(), "team-a");
    restores
        .create(&PostParams::default(), &restore)
        .await
        .unwrap();
    let refused = wait_for_object(&restores, "from-gone", 30, |v| {
        s(v, "/status/phase") == "BackingOff"
    })
    .await;
    let accepted = condition(&refused, "Accepted");
    assert_eq!(accepted["reason"], "InvalidRestoreSpec", "{refused}");
    assert!(
        accepted["message"]
            .as_str()
            .unwrap()
            .contains("NonAdminBackup is not ready to be restored"),
        "{refused}"
    );
    // Deleting still works: through the API, and with spec.deleteBackup (nothing to delete
    // in storage: no DeleteBackupRequest is made, none is left waiting).
    let api = nabs(&e.alice, "team-a");
    api.delete("by-kubectl", &DeleteParams::default())
        .await
        .unwrap();
    api.patch(
        "by-velero",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"deleteBackup": true}})),
    )
    .await
    .unwrap();
    wait_nab_gone(&e.alice, "team-a", "by-kubectl", 30).await;
    wait_nab_gone(&e.alice, "team-a", "by-velero", 30).await;
    for nacuuid in [&direct, &through_velero] {
        let (backups, requests) = velero_objects_of(&e.admin, nacuuid).await;
        assert!(
            backups.is_empty() && requests.is_empty(),
            "{backups:?} {requests:?}"
        );
    }
}

/// Upstream: a NAB whose Velero Backup expired (TTL, Velero's garbage collection) stays,
/// BackingOff with Accepted=False `VeleroBackupNotFound`, and no backup is taken again; the
/// tenant deletes it with `spec.deleteBackup: true` (or through the API).
async fn an_expired_velero_backup_leaves_its_nab_backing_off(cluster: TestCluster) {
    // Two simulated hours per real second; the backup lives one simulated hour.
    let e = Env::start(cluster, true, |o| o.time_scale = 7200.0).await;
    let nacuuid = completed(&e, "short", json!({"ttl": "1h0m0s"})).await;
    let v = wait_nab(&e.alice, "team-a", "short", 30, |v| {
        s(v, "/status/phase") == "BackingOff"
    })
    .await;
    assert_kept_backing_off(&v, &nacuuid);
    poke_and_check_nothing_is_made(&e, "short", &nacuuid).await;
    nabs(&e.alice, "team-a")
        .patch(
            "short",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"deleteBackup": true}})),
        )
        .await
        .unwrap();
    wait_nab_gone(&e.alice, "team-a", "short", 30).await;
    let (backups, requests) = velero_objects_of(&e.admin, &nacuuid).await;
    assert!(
        backups.is_empty() && requests.is_empty(),
        "{backups:?} {requests:?}"
    );
}

async fn a_crash_between_any_two_steps_yields_one_velero_backup(cluster: TestCluster) {
    // No controller runs: each step is one reconcile by a freshly started controller.
    let e = Env::start(cluster, false, |_| {}).await;
    let token = sa_token(&e.admin, OADP_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT).await;
    nabs(&e.alice, "team-a")
        .create(&PostParams::default(), &nab("crashy", json!({})))
        .await
        .unwrap();
    let mut steps = 0;
    loop {
        steps += 1;
        assert!(steps < 60, "did not converge");
        // A new process: new client, new context, nothing remembered.
        let context = Arc::new(Context::new(
            e.cluster.client_as(&token, Component::Controller),
            OADP_NAMESPACE,
        ));
        let current = nabs(&e.admin, "team-a").get("crashy").await.unwrap();
        nac::controllers::nab::reconcile(Arc::new(current), context)
            .await
            .unwrap();
        let v =
            serde_json::to_value(nabs(&e.admin, "team-a").get("crashy").await.unwrap()).unwrap();
        let ours = velero_backups(&e.admin).await.len();
        assert!(ours <= 1, "step {steps}: {ours} Velero Backups");
        if s(&v, "/status/phase") == "Created"
            && s(&v, "/status/veleroBackup/status/phase") == "Completed"
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(velero_backups(&e.admin).await.len(), 1);
    // Re-running a step after it was applied (a crash before the result was seen) changes nothing.
    let context = Arc::new(Context::new(
        e.cluster.client_as(&token, Component::Controller),
        OADP_NAMESPACE,
    ));
    let current = nabs(&e.admin, "team-a").get("crashy").await.unwrap();
    nac::controllers::nab::reconcile(Arc::new(current), context)
        .await
        .unwrap();
    assert_eq!(velero_backups(&e.admin).await.len(), 1);
}

/// Seed 004 (act on the most recent status) without a read per reconcile: the driver decides on
/// the cached copy, and writes to the NAB carry the resourceVersion read. Every copy the NAB
/// went through on its way to Created, handed to a reconcile afterwards (a cache that fell
/// behind), changes nothing: no second Velero Backup, no other NACUUID, no error.
async fn a_decision_on_a_stale_copy_writes_nothing_and_makes_nothing(cluster: TestCluster) {
    let e = Env::start(cluster, false, |_| {}).await;
    let token = sa_token(&e.admin, OADP_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT).await;
    nabs(&e.alice, "team-a")
        .create(&PostParams::default(), &nab("stale", json!({})))
        .await
        .unwrap();
    let fresh_context = || {
        Arc::new(Context::new(
            e.cluster.client_as(&token, Component::Controller),
            OADP_NAMESPACE,
        ))
    };
    let mut copies = Vec::new();
    loop {
        assert!(copies.len() < 60, "did not converge");
        let current = nabs(&e.admin, "team-a").get("stale").await.unwrap();
        copies.push(current.clone());
        let v = serde_json::to_value(&current).unwrap();
        if s(&v, "/status/phase") == "Created"
            && s(&v, "/status/veleroBackup/status/phase") == "Completed"
        {
            break;
        }
        nac::controllers::nab::reconcile(Arc::new(current), fresh_context())
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let settled = nabs(&e.admin, "team-a").get("stale").await.unwrap();
    let settled_v = serde_json::to_value(&settled).unwrap();
    let nacuuid = s(&settled_v, "/status/veleroBackup/nacuuid").to_string();
    assert!(!nacuuid.is_empty());
    assert!(copies.len() >= 4, "{} copies", copies.len());
    for (i, stale) in copies.iter().enumerate() {
        nac::controllers::nab::reconcile(Arc::new(stale.clone()), fresh_context())
            .await
            .unwrap_or_else(|err| panic!("copy {i}: {err}"));
        let now =
            serde_json::to_value(nabs(&e.admin, "team-a").get("stale").await.unwrap()).unwrap();
        assert_eq!(s(&now, "/status/veleroBackup/nacuuid"), nacuuid, "copy {i}");
        assert_eq!(s(&now, "/status/phase"), "Created", "copy {i}");
        assert_eq!(velero_backups(&e.admin).await.len(), 1, "copy {i}");
    }
    println!(
        "[{}] {} stale copies reconciled: one Velero Backup, NACUUID {nacuuid} kept",
        e.cluster.server,
        copies.len()
    );
}

/// The `reconcile step` lines NAC logs, from the whole test process. A subscriber scoped to one
/// test (thread or future) is not enough: the cases of this binary run at once and tracing's
/// per-callsite interest cache, shared by all of them, then drops events at random. One global
/// subscriber at `nac=debug`, keeping only those lines, is installed once.
fn reconcile_steps_logged() -> Arc<std::sync::Mutex<Vec<String>>> {
    static LINES: std::sync::OnceLock<Arc<std::sync::Mutex<Vec<String>>>> =
        std::sync::OnceLock::new();
    LINES
        .get_or_init(|| {
            #[derive(Clone)]
            struct Keep(Arc<std::sync::Mutex<Vec<String>>>);
            impl std::io::Write for Keep {
                fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                    let text = String::from_utf8_lossy(bytes);
                    if text.contains("reconcile step") {
                        self.0.lock().unwrap().push(text.into_owned());
                    }
                    Ok(bytes.len())
                }
                fn flush(&mut self) -> std::io::Result<()> {
                    Ok(())
                }
            }
            let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
            let keep = Keep(lines.clone());
            let subscriber = tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::new("nac=debug"))
                .with_ansi(false)
                .with_writer(move || keep.clone())
                .finish();
            tracing::subscriber::set_global_default(subscriber)
                .expect("no other global subscriber in this test binary");
            lines
        })
        .clone()
}

/// The one reconciler driver: a reconcile is one span carrying the kind, namespace, name and the
/// step taken, and is counted in the controller metrics under its kind.
async fn each_reconcile_is_one_span_with_kind_namespace_name_and_step(cluster: TestCluster) {
    let e = Env::start(cluster, false, |_| {}).await;
    let token = sa_token(&e.admin, OADP_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT).await;
    let name = e.cluster.unique_name("traced", None);
    nabs(&e.alice, "team-a")
        .create(&PostParams::default(), &nab(&name, json!({})))
        .await
        .unwrap();
    let context = Arc::new(Context::new(
        e.cluster.client_as(&token, Component::Controller),
        OADP_NAMESPACE,
    ));
    let captured = reconcile_steps_logged();
    let before = nac::controllers::health::counters().reconciles_of("nonadminbackup");
    let current = nabs(&e.admin, "team-a").get(&name).await.unwrap();
    nac::controllers::nab::reconcile(Arc::new(current), context)
        .await
        .unwrap();
    let text = captured.lock().unwrap().join("");
    let line = text
        .lines()
        .find(|l| l.contains("reconcile step") && l.contains(&format!("name={name}")))
        .unwrap_or_else(|| panic!("no reconcile step logged for {name}: {text}"));
    for field in [
        "kind=\"nonadminbackup\"",
        "namespace=\"team-a\"",
        "step=\"WriteStatus\"",
    ] {
        assert!(line.contains(field), "{field} missing from {line}");
    }
    assert!(
        nac::controllers::health::counters().reconciles_of("nonadminbackup") > before,
        "the reconcile was not counted"
    );
}

/// The OADP operator's DataProtectionApplication CRD (the dev copy of `deploy/dev/oadp-crds/`).
const DPA_CRD: &str =
    include_str!("../deploy/dev/oadp-crds/oadp.openshift.io_dataprotectionapplications.yaml");

/// Empty values are values, as Go decodes them: the admin's DPA enforces `includedResources: []`
/// (a non-nil slice, so not upstream's zero value) and every Velero Backup gets the empty list
/// while a tenant's narrower list is refused with upstream's message; a tenant's
/// `excludedNamespaces: []` is set (upstream: `ExcludedNamespaces != nil`), so refused as
/// restricted, as is `volumeSnapshotLocations: []`.
async fn an_enforced_empty_list_is_enforced_and_an_empty_excluded_namespaces_is_refused(
    cluster: TestCluster,
) {
    let admin = cluster.admin();
    demo_apply_dpa_crd(&admin).await;
    let dpa_api: Api<kube::api::DynamicObject> = Api::namespaced_with(
        admin.clone(),
        OADP_NAMESPACE,
        &nac::api::oadp::dpa_resource(),
    );
    let non_admin = json!({"enable": true, "enforceBackupSpec": {"includedResources": []}});
    let mut dpa = kube::api::DynamicObject::new("dpa", &nac::api::oadp::dpa_resource())
        .within(OADP_NAMESPACE);
    dpa.data = json!({"spec": {"nonAdmin": non_admin.clone()}});
    support::cluster::eventually("the DPA to be created", 30, || {
        let (api, dpa) = (dpa_api.clone(), dpa.clone());
        async move { api.create(&PostParams::default(), &dpa).await.ok() }
    })
    .await;

    let e = Env::start(cluster, false, |_| {}).await;
    let token = sa_token(&e.admin, OADP_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT).await;
    let context = Arc::new(Context::new(
        e.cluster.client_as(&token, Component::Controller),
        OADP_NAMESPACE,
    ));
    tokio::spawn(controllers::run(context.clone()));
    let expected = nac::policy::NacPolicy::from_sources(Some(&non_admin), None).unwrap();
    support::cluster::eventually("the DPA's enforcement in the controllers", 30, || {
        let in_force = *context.policy.read().unwrap() == expected;
        async move { in_force.then_some(()) }
    })
    .await;

    let api = nabs(&e.alice, "team-a");
    for (name, spec) in [
        ("empty-excluded", json!({"excludedNamespaces": []})),
        ("empty-vsl", json!({"volumeSnapshotLocations": []})),
        ("narrowed", json!({"includedResources": ["configmaps"]})),
        ("plain", json!({"includedNamespaces": []})),
    ] {
        api.create(&PostParams::default(), &nab(name, spec))
            .await
            .unwrap();
    }
    for (name, message) in [
        (
            "empty-excluded",
            "NonAdminBackup spec.backupSpec.excludedNamespaces is restricted",
        ),
        (
            "empty-vsl",
            "NonAdminBackup spec.backupSpec.volumeSnapshotLocations is restricted",
        ),
        (
            "narrowed",
            "the administrator has restricted spec.backupSpec.includedResources field value to []",
        ),
    ] {
        let v = wait_nab(&e.alice, "team-a", name, 30, |v| {
            s(v, "/status/phase") == "BackingOff"
        })
        .await;
        let accepted = condition(&v, "Accepted");
        assert_eq!(accepted["status"], "False", "{name}: {v}");
        assert_eq!(accepted["reason"], "InvalidBackupSpec", "{name}");
        assert!(
            accepted["message"].as_str().unwrap().contains(message),
            "{name}: {accepted}"
        );
    }
    // The tenant's `includedNamespaces: []` passes (upstream's containsOnlyNamespace), and the
    // enforced empty list is on the Velero Backup: the whole namespace, nothing narrowed.
    let v = wait_nab(&e.alice, "team-a", "plain", 60, |v| {
        s(v, "/status/phase") == "Created"
    })
    .await;
    let velero_name = s(&v, "/status/veleroBackup/name").to_owned();
    let backup = Api::<Backup>::namespaced(e.admin.clone(), OADP_NAMESPACE)
        .get(&velero_name)
        .await
        .unwrap();
    let stored = serde_json::to_value(&backup.spec).unwrap();
    assert_eq!(stored["includedResources"], json!([]), "{stored}");
    assert_eq!(stored["includedNamespaces"], json!(["team-a"]), "{stored}");
    assert_eq!(velero_backups(&e.admin).await.len(), 1, "only for 'plain'");

    dpa_api
        .delete("dpa", &DeleteParams::default())
        .await
        .unwrap();
}

/// Installs the DPA CRD (idempotent on the real server, where cases share it).
async fn demo_apply_dpa_crd(admin: &Client) {
    nac::sim::demo::apply_manifests(admin, "DataProtectionApplication CRD", DPA_CRD)
        .await
        .unwrap();
}

on_both_servers!(
    tenant_backup_reaches_created_with_velero_completed_and_others_see_nothing,
    queue_positions_are_published_and_only_move_forward,
    invalid_specs_back_off_with_the_reason_and_a_fixed_spec_proceeds,
    delete_backup_true_deletes_data_and_the_nab,
    api_delete_removes_the_velero_backup_object,
    a_velero_backup_deleted_by_the_admin_leaves_its_nab_backing_off,
    an_expired_velero_backup_leaves_its_nab_backing_off,
    a_crash_between_any_two_steps_yields_one_velero_backup,
    a_decision_on_a_stale_copy_writes_nothing_and_makes_nothing,
    each_reconcile_is_one_span_with_kind_namespace_name_and_step,
    an_enforced_empty_list_is_enforced_and_an_empty_excluded_namespaces_is_refused,
);
