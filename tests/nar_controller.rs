//! NonAdminRestore scenarios on the emulator and on the real kube-apiserver (each case
//! `NAME::emulator` and `NAME::real`) with the Velero simulator and NAC's controllers
//! running as their own service accounts: a restore end to end, the malicious-tenant
//! refusals (another namespace's backup, namespace widening, cluster resources, schedules), a
//! failed source backup, API delete, and a crash between every step.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;
use support::cluster::{TestCluster, wait_for_object as wait_for, wait_until_gone as wait_gone};
use support::controller_env::ControllerEnv as Env;
use support::sa_token;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use nac::api::client_identity::Component;
use nac::api::nonadmin::{NonAdminBackup, NonAdminRestore};
use nac::api::velero::Restore;
use nac::controllers::{self, Context};
use nac::sim::demo::{CONTROLLER_SERVICE_ACCOUNT, OADP_NAMESPACE};
use nac::sim::velero::options::Outcome;
use serde_json::{Value, json};

fn nab(name: &str) -> NonAdminBackup {
    serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
        "metadata": {"name": name}, "spec": {"backupSpec": {}}
    }))
    .unwrap()
}

fn nar(name: &str, restore_spec: Value) -> NonAdminRestore {
    serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminRestore",
        "metadata": {"name": name}, "spec": {"restoreSpec": restore_spec}
    }))
    .unwrap()
}

fn nabs(c: &Client, ns: &str) -> Api<NonAdminBackup> {
    Api::namespaced(c.clone(), ns)
}

fn nars(c: &Client, ns: &str) -> Api<NonAdminRestore> {
    Api::namespaced(c.clone(), ns)
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

async fn velero_restores(admin: &Client) -> Vec<Restore> {
    Api::<Restore>::namespaced(admin.clone(), OADP_NAMESPACE)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
}

/// A NonAdminBackup `name` of `ns`, made by `c`, once its Velero backup finished in `phase`.
async fn finished_backup(c: &Client, ns: &str, name: &str, phase: &str) -> Value {
    nabs(c, ns)
        .create(&PostParams::default(), &nab(name))
        .await
        .unwrap();
    wait_for(&nabs(c, ns), name, 30, |v| {
        s(v, "/status/phase") == "Created" && s(v, "/status/veleroBackup/status/phase") == phase
    })
    .await
}

async fn tenant_restore_brings_back_a_deleted_configmap(cluster: TestCluster) {
    let e = Env::start(cluster, true, |_| {}).await;
    let backup = finished_backup(&e.alice, "team-a", "nightly", "Completed").await;
    let velero_backup = s(&backup, "/status/veleroBackup/name").to_string();
    let configmaps: Api<ConfigMap> = Api::namespaced(e.alice.clone(), "team-a");
    configmaps
        .delete("web-config", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&configmaps, "web-config", 10).await;

    nars(&e.alice, "team-a")
        .create(
            &PostParams::default(),
            &nar("undo", json!({"backupName": "nightly"})),
        )
        .await
        .unwrap();
    let done = wait_for(&nars(&e.alice, "team-a"), "undo", 30, |v| {
        s(v, "/status/phase") == "Created"
            && s(v, "/status/veleroRestore/status/phase") == "Completed"
    })
    .await;
    assert_eq!(condition(&done, "Accepted")["reason"], "RestoreAccepted");
    assert_eq!(condition(&done, "Accepted")["message"], "restore accepted");
    assert_eq!(condition(&done, "Queued")["reason"], "RestoreScheduled");
    assert_eq!(
        condition(&done, "Queued")["message"],
        "Created Velero Restore object"
    );
    assert_eq!(
        done.pointer("/status/queueInfo/estimatedQueuePosition"),
        Some(&json!(0))
    );
    assert_eq!(
        s(&done, "/metadata/finalizers/0"),
        "nonadminrestore.oadp.openshift.io/finalizer"
    );
    let nacuuid = s(&done, "/status/veleroRestore/nacuuid").to_string();
    assert!(nacuuid.starts_with("team-a-undo-"), "{nacuuid}");
    assert_eq!(s(&done, "/status/veleroRestore/name"), nacuuid);
    assert_eq!(s(&done, "/status/veleroRestore/namespace"), OADP_NAMESPACE);

    // The Velero Restore: named by the NACUUID, labelled, from the NAB's Velero backup,
    // scoped to team-a, the sensitive kinds excluded.
    let restores = velero_restores(&e.admin).await;
    assert_eq!(restores.len(), 1);
    let vr = &restores[0];
    assert_eq!(vr.metadata.name.as_deref(), Some(nacuuid.as_str()));
    let labels = vr.metadata.labels.clone().unwrap();
    assert_eq!(labels["openshift.io/oadp"], "True");
    assert_eq!(labels["openshift.io/oadp-nar-origin-nacuuid"], nacuuid);
    assert!(labels.contains_key("app.kubernetes.io/managed-by"));
    let annotations = vr.metadata.annotations.clone().unwrap();
    assert_eq!(annotations["openshift.io/oadp-nar-origin-name"], "undo");
    assert_eq!(
        annotations["openshift.io/oadp-nar-origin-namespace"],
        "team-a"
    );
    assert_eq!(vr.spec.backup_name.as_deref(), Some(velero_backup.as_str()));
    assert_eq!(
        vr.spec.included_namespaces,
        Some(vec!["team-a".to_string()])
    );
    let excluded = vr.spec.excluded_resources.clone().unwrap_or_default();
    for kind in [
        "volumesnapshotclasses.snapshot.storage.k8s.io",
        "clusterroles.rbac.authorization.k8s.io",
        "nonadminbackups.oadp.openshift.io",
    ] {
        assert!(excluded.iter().any(|e| e == kind), "{kind}: {excluded:?}");
    }

    // The ConfigMap is back, labelled by the restore.
    let back = configmaps.get("web-config").await.unwrap();
    assert_eq!(
        back.metadata.labels.unwrap()["velero.io/restore-name"],
        nacuuid
    );
    // bob sees nothing of team-a's restores.
    assert!(
        nars(&e.bob, "team-a")
            .list(&ListParams::default())
            .await
            .is_err()
    );
}

async fn malicious_restores_back_off_naming_the_field_and_create_nothing(cluster: TestCluster) {
    let e = Env::start(cluster, true, |_| {}).await;
    // team-a has a good backup; team-b (bob) has one too, which alice must never restore.
    finished_backup(&e.alice, "team-a", "nightly", "Completed").await;
    finished_backup(&e.bob, "team-b", "bobs-backup", "Completed").await;
    let refused = [
        (
            "other-namespace-backup",
            json!({"backupName": "bobs-backup"}),
            "backupName",
        ),
        (
            "mapping",
            json!({"backupName": "nightly", "namespaceMapping": {"team-a": "team-b"}}),
            "namespaceMapping",
        ),
        (
            "included",
            json!({"backupName": "nightly", "includedNamespaces": ["team-b"]}),
            "includedNamespaces",
        ),
        (
            "cluster",
            json!({"backupName": "nightly", "includeClusterResources": true}),
            "includeClusterResources",
        ),
        (
            "schedule",
            json!({"backupName": "nightly", "scheduleName": "admin-schedule"}),
            "scheduleName",
        ),
    ];
    let api = nars(&e.alice, "team-a");
    for (name, spec, _) in &refused {
        api.create(&PostParams::default(), &nar(name, spec.clone()))
            .await
            .unwrap();
    }
    for (name, _, field) in &refused {
        let v = wait_for(&api, name, 20, |v| s(v, "/status/phase") == "BackingOff").await;
        let accepted = condition(&v, "Accepted");
        assert_eq!(accepted["status"], "False", "{name}");
        assert_eq!(accepted["reason"], "InvalidRestoreSpec", "{name}");
        let message = accepted["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("spec.restoreSpec.{field}")),
            "{name}: {message}"
        );
        assert!(
            v.pointer("/status/veleroRestore").is_none(),
            "{name}: no NACUUID"
        );
    }
    let bobs = condition(
        &api.get("other-namespace-backup")
            .await
            .map(|o| serde_json::to_value(o).unwrap())
            .unwrap(),
        "Accepted",
    )["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(bobs.contains("not found in namespace team-a"), "{bobs}");
    assert!(
        velero_restores(&e.admin).await.is_empty(),
        "no Velero Restore for any refused spec"
    );
}

async fn restore_of_a_failed_backup_backs_off(cluster: TestCluster) {
    let e = Env::start(cluster, true, |o| o.default_outcome = Outcome::Fail).await;
    finished_backup(&e.alice, "team-a", "broken", "Failed").await;
    let api = nars(&e.alice, "team-a");
    api.create(
        &PostParams::default(),
        &nar("from-broken", json!({"backupName": "broken"})),
    )
    .await
    .unwrap();
    let v = wait_for(&api, "from-broken", 20, |v| {
        s(v, "/status/phase") == "BackingOff"
    })
    .await;
    let accepted = condition(&v, "Accepted");
    assert_eq!(accepted["reason"], "InvalidRestoreSpec");
    let message = accepted["message"].as_str().unwrap();
    assert!(
        message.contains("spec.restoreSpec.backupName") && message.contains("Failed"),
        "{message}"
    );
    assert!(velero_restores(&e.admin).await.is_empty());
}

async fn api_delete_removes_the_velero_restore(cluster: TestCluster) {
    let e = Env::start(cluster, true, |_| {}).await;
    finished_backup(&e.alice, "team-a", "nightly", "Completed").await;
    let api = nars(&e.alice, "team-a");
    api.create(
        &PostParams::default(),
        &nar("gone", json!({"backupName": "nightly"})),
    )
    .await
    .unwrap();
    wait_for(&api, "gone", 30, |v| {
        s(v, "/status/veleroRestore/status/phase") == "Completed"
    })
    .await;
    assert_eq!(velero_restores(&e.admin).await.len(), 1);
    api.delete("gone", &DeleteParams::default()).await.unwrap();
    wait_gone(&api, "gone", 30).await;
    assert!(velero_restores(&e.admin).await.is_empty());
}

/// Upstream: a NAR whose Velero Restore vanished (an admin's delete, garbage collection)
/// stays, BackingOff with Accepted=False `VeleroRestoreNotFound`; the restore is never run
/// again under its NACUUID; the tenant still deletes the NAR.
async fn a_vanished_velero_restore_leaves_its_nar_backing_off(cluster: TestCluster) {
    let e = Env::start(cluster, true, |_| {}).await;
    finished_backup(&e.alice, "team-a", "nightly", "Completed").await;
    let api = nars(&e.alice, "team-a");
    api.create(
        &PostParams::default(),
        &nar("once", json!({"backupName": "nightly"})),
    )
    .await
    .unwrap();
    let done = wait_for(&api, "once", 30, |v| {
        s(v, "/status/phase") == "Created"
            && s(v, "/status/veleroRestore/status/phase") == "Completed"
    })
    .await;
    let nacuuid = s(&done, "/status/veleroRestore/nacuuid").to_string();
    let velero_name = s(&done, "/status/veleroRestore/name").to_string();
    Api::<Restore>::namespaced(e.admin.clone(), OADP_NAMESPACE)
        .delete(&velero_name, &DeleteParams::default())
        .await
        .unwrap();
    let kept = wait_for(&api, "once", 30, |v| s(v, "/status/phase") == "BackingOff").await;
    let accepted = condition(&kept, "Accepted");
    assert_eq!(accepted["status"], "False", "{kept}");
    assert_eq!(accepted["reason"], "VeleroRestoreNotFound", "{kept}");
    assert_eq!(
        accepted["message"],
        "NonAdminRestore is finalized and its associated Velero Restore has been removed. Please create a new NonAdminRestore to initiate a new Restore"
    );
    assert_eq!(condition(&kept, "Queued")["status"], "True", "{kept}");
    assert_eq!(s(&kept, "/status/veleroRestore/nacuuid"), nacuuid);
    assert_eq!(
        s(&kept, "/status/veleroRestore/status/phase"),
        "Completed",
        "the last Velero status stays"
    );
    // A few reconciles later (the tenant touches it; its backup changes): nothing runs again.
    for i in 0..3 {
        api.patch(
            "once",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"annotations": {"example.com/poke": i.to_string()}}}),
            ),
        )
        .await
        .unwrap();
        nabs(&e.alice, "team-a")
            .patch(
                "nightly",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {"poke": i.to_string()}}})),
            )
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let again: Vec<String> = velero_restores(&e.admin)
        .await
        .into_iter()
        .filter(|r| {
            r.metadata.name.as_deref() == Some(nacuuid.as_str())
                || r.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("openshift.io/oadp-nar-origin-nacuuid"))
                    == Some(&nacuuid)
        })
        .filter_map(|r| r.metadata.name)
        .collect();
    assert!(again.is_empty(), "the restore was run again: {again:?}");
    let still = serde_json::to_value(api.get("once").await.unwrap()).unwrap();
    assert_eq!(s(&still, "/status/phase"), "BackingOff", "{still}");
    assert_eq!(
        condition(&still, "Accepted")["reason"],
        "VeleroRestoreNotFound"
    );
    // The tenant deletes it: the finalizer is released.
    api.delete("once", &DeleteParams::default()).await.unwrap();
    wait_gone(&api, "once", 30).await;
}

async fn a_crash_between_any_two_steps_yields_one_velero_restore(cluster: TestCluster) {
    // No controller runs: each step is one reconcile by a freshly started controller.
    let e = Env::start(cluster, false, |_| {}).await;
    let token = sa_token(&e.admin, OADP_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT).await;
    let fresh = || {
        Arc::new(Context::new(
            e.cluster.client_as(&token, Component::Controller),
            OADP_NAMESPACE,
        ))
    };
    nabs(&e.alice, "team-a")
        .create(&PostParams::default(), &nab("source"))
        .await
        .unwrap();
    let mut steps = 0;
    loop {
        steps += 1;
        assert!(steps < 100, "the backup did not converge");
        let current = nabs(&e.admin, "team-a").get("source").await.unwrap();
        controllers::nab::reconcile(Arc::new(current), fresh())
            .await
            .unwrap();
        let v =
            serde_json::to_value(nabs(&e.admin, "team-a").get("source").await.unwrap()).unwrap();
        if s(&v, "/status/phase") == "Created"
            && s(&v, "/status/veleroBackup/status/phase") == "Completed"
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    nars(&e.alice, "team-a")
        .create(
            &PostParams::default(),
            &nar("crashy", json!({"backupName": "source"})),
        )
        .await
        .unwrap();
    let mut steps = 0;
    loop {
        steps += 1;
        assert!(steps < 100, "the restore did not converge");
        // A new process: new client, new context, nothing remembered.
        let current = nars(&e.admin, "team-a").get("crashy").await.unwrap();
        controllers::nar::reconcile(Arc::new(current), fresh())
            .await
            .unwrap();
        let v =
            serde_json::to_value(nars(&e.admin, "team-a").get("crashy").await.unwrap()).unwrap();
        let ours = velero_restores(&e.admin).await.len();
        assert!(ours <= 1, "step {steps}: {ours} Velero Restores");
        if s(&v, "/status/phase") == "Created"
            && s(&v, "/status/veleroRestore/status/phase") == "Completed"
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(velero_restores(&e.admin).await.len(), 1);
    // Re-running a step after it was applied (a crash before the result was seen) changes nothing.
    let current = nars(&e.admin, "team-a").get("crashy").await.unwrap();
    controllers::nar::reconcile(Arc::new(current), fresh())
        .await
        .unwrap();
    assert_eq!(velero_restores(&e.admin).await.len(), 1);
}

async fn a_restore_waiting_for_its_backup_proceeds_once_the_backup_finishes(cluster: TestCluster) {
    // Upstream leaves such a NAR in BackingOff until the tenant edits it; NAC looks at it again
    // when the NonAdminBackup it names changes.
    let e = Env::start(cluster, true, |_| {}).await;
    let api = nars(&e.alice, "team-a");
    api.create(
        &PostParams::default(),
        &nar("early", json!({"backupName": "later"})),
    )
    .await
    .unwrap();
    let v = wait_for(&api, "early", 20, |v| s(v, "/status/phase") == "BackingOff").await;
    assert!(
        condition(&v, "Accepted")["message"]
            .as_str()
            .unwrap()
            .contains("not found"),
        "{v}"
    );
    finished_backup(&e.alice, "team-a", "later", "Completed").await;
    let done = wait_for(&api, "early", 30, |v| {
        s(v, "/status/phase") == "Created"
            && s(v, "/status/veleroRestore/status/phase") == "Completed"
    })
    .await;
    assert_eq!(condition(&done, "Accepted")["status"], "True");
    assert_eq!(velero_restores(&e.admin).await.len(), 1);
}

on_both_servers!(
    tenant_restore_brings_back_a_deleted_configmap,
    malicious_restores_back_off_naming_the_field_and_create_nothing,
    restore_of_a_failed_backup_backs_off,
    api_delete_removes_the_velero_restore,
    a_vanished_velero_restore_leaves_its_nar_backing_off,
    a_crash_between_any_two_steps_yields_one_velero_restore,
    a_restore_waiting_for_its_backup_proceeds_once_the_backup_finishes,
);
