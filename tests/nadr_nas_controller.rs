//! NonAdminDownloadRequest and NonAdminSchedule scenarios on the emulator and on the real
//! kube-apiserver (each case `NAME::emulator` and `NAME::real`) with the Velero
//! simulator (its download endpoint served on a real port) and NAC's controllers running as
//! their own service account: downloads of a tenant's own logs, refusals across namespaces,
//! expiry and deletion before it; scheduled backups with child NABs, pause, invalid templates,
//! deletion, the Events tenants see, and a crash between every schedule step.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;
use support::cluster::{TestCluster, eventually_seen, wait_for_object, wait_until_gone};
use support::controller_env::ControllerEnv as Env;
use support::{http_get, sa_token};

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Event;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use nac::api::client_identity::Component;
use nac::api::nonadmin::{NonAdminBackup, NonAdminDownloadRequest, NonAdminSchedule};
use nac::api::velero::{Backup, DownloadRequest, Schedule};
use nac::controllers::{Context, nadr_decision, nas, nas_decision};
use nac::manifest::tarball::gunzip;
use nac::sim::demo::{CONTROLLER_SERVICE_ACCOUNT, OADP_NAMESPACE};
use nac::sim::velero::options::SimulatorOptions;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

async fn env(cluster: TestCluster, configure: impl FnOnce(&mut SimulatorOptions)) -> Env {
    env_with(cluster, true, configure).await
}

async fn env_with(
    cluster: TestCluster,
    with_controllers: bool,
    configure: impl FnOnce(&mut SimulatorOptions),
) -> Env {
    Env::start_with(cluster, with_controllers, true, configure).await
}

fn ns_api<K>(c: &Client, ns: &str) -> Api<K>
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope>,
    <K as kube::Resource>::DynamicType: Default,
{
    Api::namespaced(c.clone(), ns)
}

async fn create<K>(c: &Client, ns: &str, value: Value)
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope>
        + Clone
        + std::fmt::Debug
        + serde::Serialize
        + DeserializeOwned,
    <K as kube::Resource>::DynamicType: Default,
{
    let object: K = serde_json::from_value(value).unwrap();
    ns_api::<K>(c, ns)
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
}

async fn wait_for<K>(
    c: &Client,
    ns: &str,
    name: &str,
    secs: u64,
    done: impl Fn(&Value) -> bool,
) -> Value
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope>
        + Clone
        + std::fmt::Debug
        + serde::Serialize
        + DeserializeOwned,
    <K as kube::Resource>::DynamicType: Default,
{
    wait_for_object(&ns_api::<K>(c, ns), name, secs, done).await
}

async fn wait_gone<K>(c: &Client, ns: &str, name: &str, secs: u64)
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope>
        + Clone
        + std::fmt::Debug
        + serde::Serialize
        + DeserializeOwned,
    <K as kube::Resource>::DynamicType: Default,
{
    wait_until_gone(&ns_api::<K>(c, ns), name, secs).await
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

fn nab(name: &str) -> Value {
    json!({"apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
           "metadata": {"name": name}, "spec": {"backupSpec": {}}})
}

fn nadr(name: &str, kind: &str, target: &str) -> Value {
    json!({"apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminDownloadRequest",
           "metadata": {"name": name}, "spec": {"target": {"kind": kind, "name": target}}})
}

fn nas(name: &str, schedule: &str, backup_spec: Value) -> Value {
    json!({"apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminSchedule",
           "metadata": {"name": name},
           "spec": {"schedule": schedule, "template": {"backupSpec": backup_spec}}})
}

async fn completed_nab(c: &Client, ns: &str, name: &str) {
    create::<NonAdminBackup>(c, ns, nab(name)).await;
    wait_for::<NonAdminBackup>(c, ns, name, 30, |v| {
        s(v, "/status/veleroBackup/status/phase") == "Completed"
    })
    .await;
}

/// The reasons of the Events on `name` in `ns`, listed as `c` (core v1, as `kubectl describe`).
async fn event_reasons(c: &Client, ns: &str, name: &str) -> Vec<String> {
    events_of(c, ns, name)
        .await
        .iter()
        .map(|e| e.reason.clone().unwrap_or_default())
        .collect()
}

async fn events_of(c: &Client, ns: &str, name: &str) -> Vec<Event> {
    ns_api::<Event>(c, ns)
        .list(&ListParams::default().fields(&format!("involvedObject.name={name}")))
        .await
        .unwrap()
        .items
}

async fn wait_event(c: &Client, ns: &str, name: &str, reason: &str) -> Event {
    let what = format!("a {reason} Event on {ns}/{name}");
    eventually_seen(&what, 30, || async {
        let events = events_of(c, ns, name).await;
        if let Some(e) = events.iter().find(|e| e.reason.as_deref() == Some(reason)) {
            // Events only ever name the tenant's own objects.
            let note = e.message.clone().unwrap_or_default();
            assert!(!note.contains(OADP_NAMESPACE), "{note}");
            return Ok(e.clone());
        }
        Err(format!(
            "no {reason} Event on {ns}/{name}; have {:?}",
            event_reasons(c, ns, name).await
        ))
    })
    .await
}

async fn download_requests(admin: &Client) -> Vec<DownloadRequest> {
    ns_api::<DownloadRequest>(admin, OADP_NAMESPACE)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
}

async fn tenant_downloads_its_backup_log_and_cannot_reach_other_namespaces(cluster: TestCluster) {
    let e = env(cluster, |_| {}).await;
    completed_nab(&e.alice, "team-a", "first").await;
    completed_nab(&e.bob, "team-b", "bobs").await;
    create::<NonAdminDownloadRequest>(&e.alice, "team-a", nadr("logs", "BackupLog", "first")).await;
    let done = wait_for::<NonAdminDownloadRequest>(&e.alice, "team-a", "logs", 30, |v| {
        s(v, "/status/velero/status/phase") == "Processed"
    })
    .await;
    assert_eq!(s(&done, "/status/phase"), "Created");
    // Upstream's one condition: Processed, True, reason Success, empty message.
    let conditions = done["status"]["conditions"].as_array().unwrap();
    assert_eq!(conditions.len(), 1, "{conditions:?}");
    let processed = condition(&done, "Processed");
    assert_eq!(processed["status"], "True");
    assert_eq!(processed["reason"], "Success");
    assert_eq!(processed["message"], "");
    assert!(done.pointer("/status/velero/status/expiration").is_some());
    let url = s(&done, "/status/velero/status/downloadURL").to_string();
    let ready = wait_event(
        &e.alice,
        "team-a",
        "logs",
        nadr_decision::event_reasons::DOWNLOAD_READY,
    )
    .await;
    let note = ready.message.clone().unwrap_or_default();
    assert!(
        !note.contains(&url),
        "the signed URL stays out of Events: {note}"
    );
    let (status, body) = http_get(&url).await;
    assert_eq!(status, 200);
    let log = String::from_utf8(gunzip(&body).unwrap()).unwrap();
    assert!(log.contains("Backed up item"), "{log}");
    // The Velero request: `nadr-<uid>`, labelled, annotated with its origin.
    let uid = s(&done, "/metadata/uid").to_string();
    let requests = download_requests(&e.admin).await;
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(
        r.metadata.name.as_deref(),
        Some(format!("nadr-{uid}").as_str())
    );
    let labels = r.metadata.labels.clone().unwrap();
    assert_eq!(labels["openshift.io/oadp"], "True");
    // The bare UID, as upstream labels it.
    assert_eq!(labels["openshift.io/oadp-nadr-origin-nacuuid"], uid);
    let annotations = r.metadata.annotations.clone().unwrap();
    assert_eq!(
        annotations["openshift.io/oadp-nadr-origin-namespace"],
        "team-a"
    );
    assert_eq!(annotations["openshift.io/oadp-nadr-origin-name"], "logs");

    // Another namespace's NAB and a missing one: refused, no Velero request.
    create::<NonAdminDownloadRequest>(&e.alice, "team-a", nadr("steal", "BackupLog", "bobs")).await;
    create::<NonAdminDownloadRequest>(&e.alice, "team-a", nadr("ghost", "BackupResults", "nope"))
        .await;
    create::<NonAdminDownloadRequest>(&e.alice, "team-a", nadr("rlog", "RestoreLog", "nope")).await;
    // Upstream's one condition whose type is the signal: True, reason Error, upstream's
    // message first, then why.
    for (name, type_, upstream) in [
        (
            "steal",
            "NonAdminBackupNotAvailable",
            "cannot get nonadminbackup: ",
        ),
        (
            "ghost",
            "NonAdminBackupNotAvailable",
            "cannot get nonadminbackup: ",
        ),
        (
            "rlog",
            "NonAdminRestoreNotAvailable",
            "cannot get nonadminrestore: ",
        ),
    ] {
        let v = wait_for::<NonAdminDownloadRequest>(&e.alice, "team-a", name, 20, |v| {
            s(v, "/status/phase") == "BackingOff"
        })
        .await;
        let conditions = v["status"]["conditions"].as_array().unwrap();
        assert_eq!(conditions.len(), 1, "{name}: {conditions:?}");
        let c = &conditions[0];
        assert_eq!(c["type"], type_, "{name}");
        assert_eq!(c["status"], "True", "{name}");
        assert_eq!(c["reason"], "Error", "{name}");
        let message = c["message"].as_str().unwrap();
        assert!(
            message.starts_with(upstream) && message.contains("not found"),
            "{name}: {c}"
        );
    }
    assert_eq!(download_requests(&e.admin).await.len(), 1);
    // bob cannot see alice's download requests.
    assert!(
        ns_api::<NonAdminDownloadRequest>(&e.bob, "team-a")
            .get("logs")
            .await
            .is_err()
    );
}

async fn download_request_is_deleted_at_expiry(cluster: TestCluster) {
    // Ten simulated minutes (the URL lifetime) pass in about two real seconds.
    let e = env(cluster, |o| o.time_scale = 300.0).await;
    completed_nab(&e.alice, "team-a", "first").await;
    create::<NonAdminDownloadRequest>(&e.alice, "team-a", nadr("logs", "BackupLog", "first")).await;
    wait_for::<NonAdminDownloadRequest>(&e.alice, "team-a", "logs", 30, |v| {
        s(v, "/status/velero/status/phase") == "Processed"
    })
    .await;
    wait_gone::<NonAdminDownloadRequest>(&e.alice, "team-a", "logs", 30).await;
    assert!(download_requests(&e.admin).await.is_empty());
    wait_event(
        &e.alice,
        "team-a",
        "logs",
        nadr_decision::event_reasons::DOWNLOAD_EXPIRED,
    )
    .await;
}

async fn a_download_request_deleted_before_expiry_takes_its_velero_request_along(
    cluster: TestCluster,
) {
    let e = env(cluster, |_| {}).await;
    completed_nab(&e.alice, "team-a", "first").await;
    create::<NonAdminDownloadRequest>(&e.alice, "team-a", nadr("logs", "BackupLog", "first")).await;
    let done = wait_for::<NonAdminDownloadRequest>(&e.alice, "team-a", "logs", 30, |v| {
        s(v, "/status/velero/status/phase") == "Processed"
    })
    .await;
    assert_eq!(
        s(&done, "/metadata/finalizers/0"),
        "nonadmindownloadrequest.oadp.openshift.io/finalizer"
    );
    let velero_name = format!("nadr-{}", s(&done, "/metadata/uid"));
    let expiration = s(&done, "/status/velero/status/expiration").to_string();
    assert!(
        download_requests(&e.admin)
            .await
            .iter()
            .any(|r| r.metadata.name.as_deref() == Some(velero_name.as_str())),
        "the Velero request exists while its URL is valid (until {expiration})"
    );
    ns_api::<NonAdminDownloadRequest>(&e.alice, "team-a")
        .delete("logs", &DeleteParams::default())
        .await
        .unwrap();
    // The finalizer holds the NADR until its Velero request is gone, so once the NADR is gone
    // no request (and no live signed URL) is left behind.
    wait_gone::<NonAdminDownloadRequest>(&e.alice, "team-a", "logs", 30).await;
    assert!(
        ns_api::<DownloadRequest>(&e.admin, OADP_NAMESPACE)
            .get_opt(&velero_name)
            .await
            .unwrap()
            .is_none()
    );
    assert!(download_requests(&e.admin).await.is_empty());
}

async fn velero_backups(admin: &Client) -> Vec<Backup> {
    ns_api::<Backup>(admin, OADP_NAMESPACE)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
}

async fn schedule_runs_make_child_nabs_pause_stops_them_and_delete_cascades(cluster: TestCluster) {
    // One simulated hour per real second: an hourly cron fires about once a second.
    let e = env(cluster, |o| o.time_scale = 3600.0).await;
    create::<NonAdminSchedule>(&e.alice, "team-a", nas("hourly", "0 * * * *", json!({}))).await;
    let v = wait_for::<NonAdminSchedule>(&e.alice, "team-a", "hourly", 60, |v| {
        s(v, "/status/phase") == "Created"
            && v.pointer("/status/recentBackups")
                .and_then(Value::as_array)
                .is_some_and(|r| r.len() >= 2)
    })
    .await;
    assert_eq!(condition(&v, "Accepted")["reason"], "ScheduleAccepted");
    assert!(v.pointer("/status/nextRun").is_some(), "{v}");
    assert!(
        v.pointer("/status/lastBackup/veleroBackupName").is_some(),
        "{v}"
    );
    let nacuuid = s(&v, "/status/veleroSchedule/nacuuid").to_string();
    assert!(nacuuid.starts_with("team-a-hourly-"), "{nacuuid}");
    // The Velero Schedule: named by the NACUUID, with origin labels and annotations.
    let schedule = ns_api::<Schedule>(&e.admin, OADP_NAMESPACE)
        .get(&nacuuid)
        .await
        .unwrap();
    let l = schedule.metadata.labels.clone().unwrap();
    assert_eq!(l["openshift.io/oadp"], "True");
    assert_eq!(l["openshift.io/oadp-nas-origin-nacuuid"], nacuuid);
    assert_eq!(
        schedule.metadata.annotations.clone().unwrap()["openshift.io/oadp-nas-origin-name"],
        "hourly"
    );
    assert_eq!(
        schedule.spec.template.included_namespaces,
        Some(vec!["team-a".to_string()])
    );
    // Each run has a child NAB in team-a, adopted (mirrors the scheduled backup).
    let first = v.pointer("/status/recentBackups/0").unwrap().clone();
    let child_name = first["name"].as_str().unwrap().to_string();
    let vb_name = first["veleroBackupName"].as_str().unwrap().to_string();
    let child = wait_for::<NonAdminBackup>(&e.alice, "team-a", &child_name, 30, |c| {
        s(c, "/status/veleroBackup/status/phase") == "Completed"
    })
    .await;
    // The child's NACUUID (a label value, so at most 63 characters) ties it to the backup.
    let child_id = s(&child, "/status/veleroBackup/nacuuid").to_string();
    assert!(
        child_id.starts_with("team-a-") && child_id.len() <= 63,
        "{child_id}"
    );
    assert_eq!(
        s(
            &child,
            "/metadata/labels/openshift.io~1oadp-nab-synced-from-nacuuid"
        ),
        child_id
    );
    assert_eq!(s(&child, "/status/veleroBackup/name"), vb_name);
    // Every Velero Backup is the schedule's: the NAB controller made none of its own.
    for b in velero_backups(&e.admin).await {
        let bl = b.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            bl.get("velero.io/schedule-name"),
            Some(&nacuuid),
            "{:?}",
            b.metadata.name
        );
    }
    let created = wait_event(
        &e.alice,
        "team-a",
        "hourly",
        nas_decision::event_reasons::SCHEDULE_CREATED,
    )
    .await;
    assert!(
        !created
            .message
            .clone()
            .unwrap_or_default()
            .contains(&nacuuid),
        "the Velero Schedule's name stays out of Events"
    );
    let labelled = ns_api::<Backup>(&e.admin, OADP_NAMESPACE)
        .get(&vb_name)
        .await
        .unwrap();
    let bl = labelled.metadata.labels.unwrap();
    assert_eq!(bl["openshift.io/oadp-nas-origin-nacuuid"], nacuuid);
    assert_eq!(bl["openshift.io/oadp-nab-origin-nacuuid"], child_id);

    // Paused: the Velero Schedule is paused and no new backups appear.
    ns_api::<NonAdminSchedule>(&e.alice, "team-a")
        .patch(
            "hourly",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"paused": true}})),
        )
        .await
        .unwrap();
    wait_for::<Schedule>(&e.admin, OADP_NAMESPACE, &nacuuid, 20, |o| {
        o.pointer("/spec/paused") == Some(&json!(true))
    })
    .await;
    let paused = wait_for::<NonAdminSchedule>(&e.alice, "team-a", "hourly", 20, |v| {
        v.pointer("/status/nextRun").is_none()
    })
    .await;
    assert_eq!(s(&paused, "/status/phase"), "Created");
    wait_event(
        &e.alice,
        "team-a",
        "hourly",
        nas_decision::event_reasons::SCHEDULE_PAUSED,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = velero_backups(&e.admin).await.len();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(
        velero_backups(&e.admin).await.len(),
        before,
        "no runs while paused"
    );

    // Deleting the NAS deletes its Velero Schedule; the backups it made stay.
    ns_api::<NonAdminSchedule>(&e.alice, "team-a")
        .delete("hourly", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone::<NonAdminSchedule>(&e.alice, "team-a", "hourly", 30).await;
    wait_gone::<Schedule>(&e.admin, OADP_NAMESPACE, &nacuuid, 10).await;
    assert!(
        ns_api::<NonAdminBackup>(&e.alice, "team-a")
            .get_opt(&child_name)
            .await
            .unwrap()
            .is_some()
    );
}

async fn invalid_schedule_template_backs_off_without_a_velero_schedule(cluster: TestCluster) {
    let e = env(cluster, |_| {}).await;
    create::<NonAdminSchedule>(
        &e.alice,
        "team-a",
        nas(
            "bad",
            "0 * * * *",
            json!({"includedNamespaces": ["team-b"]}),
        ),
    )
    .await;
    create::<NonAdminSchedule>(&e.alice, "team-a", nas("badcron", "not a cron", json!({}))).await;
    for (name, field) in [("bad", "includedNamespaces"), ("badcron", "spec.schedule")] {
        let v = wait_for::<NonAdminSchedule>(&e.alice, "team-a", name, 20, |v| {
            s(v, "/status/phase") == "BackingOff"
        })
        .await;
        let accepted = condition(&v, "Accepted");
        assert_eq!(accepted["status"], "False", "{name}");
        assert_eq!(accepted["reason"], "InvalidScheduleSpec", "{name}");
        assert!(
            accepted["message"].as_str().unwrap().contains(field),
            "{name}: {accepted}"
        );
        assert!(v.pointer("/status/veleroSchedule").is_none(), "{name}");
        let refused = wait_event(
            &e.alice,
            "team-a",
            name,
            nas_decision::event_reasons::INVALID_SCHEDULE,
        )
        .await;
        assert_eq!(refused.type_.as_deref(), Some("Warning"), "{name}");
        assert!(
            refused.message.clone().unwrap_or_default().contains(field),
            "{name}: {refused:?}"
        );
    }
    let schedules = ns_api::<Schedule>(&e.admin, OADP_NAMESPACE)
        .list(&ListParams::default())
        .await
        .unwrap();
    assert!(schedules.items.is_empty());
}

async fn velero_schedules(admin: &Client) -> Vec<Schedule> {
    ns_api::<Schedule>(admin, OADP_NAMESPACE)
        .list(&ListParams::default().labels("openshift.io/oadp-nas-origin-nacuuid"))
        .await
        .unwrap()
        .items
}

/// One NAS reconcile by a freshly started controller (new client, new context).
async fn reconcile_nas(e: &Env, token: &str, name: &str) {
    let context = Arc::new(Context::new(
        e.cluster.client_as(token, Component::Controller),
        OADP_NAMESPACE,
    ));
    let current = ns_api::<NonAdminSchedule>(&e.admin, "team-a")
        .get(name)
        .await
        .unwrap();
    nas::reconcile(Arc::new(current), context).await.unwrap();
}

async fn nas_value(e: &Env, name: &str) -> Option<Value> {
    ns_api::<NonAdminSchedule>(&e.admin, "team-a")
        .get_opt(name)
        .await
        .unwrap()
        .map(|n| serde_json::to_value(n).unwrap())
}

/// Reconciles NAS `name` step by step until the Velero Schedule exists and the NAS is Created,
/// checking after every step that at most one Velero Schedule exists.
async fn step_until_created(e: &Env, token: &str, name: &str) -> Value {
    let mut steps = 0;
    loop {
        steps += 1;
        assert!(steps < 60, "did not converge");
        reconcile_nas(e, token, name).await;
        let schedules = velero_schedules(&e.admin).await.len();
        assert!(schedules <= 1, "step {steps}: {schedules} Velero Schedules");
        let v = nas_value(e, name).await.unwrap();
        if s(&v, "/status/phase") == "Created" && schedules == 1 {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn a_crash_between_any_two_schedule_steps_yields_one_velero_schedule(cluster: TestCluster) {
    // No controller runs: each step is one reconcile by a freshly started controller.
    let e = env_with(cluster, false, |_| {}).await;
    let token = sa_token(&e.admin, OADP_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT).await;
    create::<NonAdminSchedule>(&e.alice, "team-a", nas("crashy", "0 * * * *", json!({}))).await;
    let v = step_until_created(&e, &token, "crashy").await;
    let nacuuid = s(&v, "/status/veleroSchedule/nacuuid").to_string();
    let schedules = velero_schedules(&e.admin).await;
    assert_eq!(schedules.len(), 1);
    assert_eq!(
        schedules[0].metadata.name.as_deref(),
        Some(nacuuid.as_str())
    );
    // Re-running steps after they were applied (a crash before the result was seen) changes
    // nothing.
    for _ in 0..3 {
        reconcile_nas(&e, &token, "crashy").await;
    }
    assert_eq!(velero_schedules(&e.admin).await.len(), 1);
    assert_eq!(
        event_reasons(&e.alice, "team-a", "crashy")
            .await
            .iter()
            .filter(|r| *r == nas_decision::event_reasons::SCHEDULE_CREATED)
            .count(),
        1,
        "one creation, one Event"
    );
}

async fn deleting_a_schedule_says_deleting_before_its_velero_schedule_goes(cluster: TestCluster) {
    let e = env_with(cluster, false, |_| {}).await;
    let token = sa_token(&e.admin, OADP_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT).await;
    create::<NonAdminSchedule>(&e.alice, "team-a", nas("doomed", "0 * * * *", json!({}))).await;
    let v = step_until_created(&e, &token, "doomed").await;
    let nacuuid = s(&v, "/status/veleroSchedule/nacuuid").to_string();
    ns_api::<NonAdminSchedule>(&e.alice, "team-a")
        .delete("doomed", &DeleteParams::default())
        .await
        .unwrap();
    // First pass: the tenant sees why its schedule lingers, and the Velero Schedule still exists.
    reconcile_nas(&e, &token, "doomed").await;
    let deleting = nas_value(&e, "doomed")
        .await
        .expect("held by the finalizer");
    assert_eq!(s(&deleting, "/status/phase"), "Deleting");
    let c = condition(&deleting, "Deleting");
    assert_eq!(c["status"], "True");
    assert_eq!(c["reason"], "DeletionPending");
    assert_eq!(c["message"], nas_decision::DELETING_MESSAGE);
    assert!(deleting.pointer("/status/nextRun").is_none());
    assert!(
        ns_api::<Schedule>(&e.admin, OADP_NAMESPACE)
            .get_opt(&nacuuid)
            .await
            .unwrap()
            .is_some()
    );
    // Then the Velero Schedule goes, then the finalizer (and with it the NAS).
    reconcile_nas(&e, &token, "doomed").await;
    assert!(velero_schedules(&e.admin).await.is_empty());
    assert_eq!(
        s(&nas_value(&e, "doomed").await.unwrap(), "/status/phase"),
        "Deleting"
    );
    reconcile_nas(&e, &token, "doomed").await;
    wait_gone::<NonAdminSchedule>(&e.alice, "team-a", "doomed", 10).await;
}

/// The resourceVersions of NAC's Velero Schedules and of the tenant's NABs: unchanged across a
/// reconcile when it made or changed nothing there.
async fn made_elsewhere(admin: &Client) -> Vec<(String, String)> {
    let key = |m: &kube::api::ObjectMeta| {
        (
            m.name.clone().unwrap_or_default(),
            m.resource_version.clone().unwrap_or_default(),
        )
    };
    let mut versions: Vec<(String, String)> = velero_schedules(admin)
        .await
        .iter()
        .map(|o| key(&o.metadata))
        .collect();
    versions.extend(
        ns_api::<NonAdminBackup>(admin, "team-a")
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .map(|o| key(&o.metadata)),
    );
    versions
}

/// What a settled NAS's status says that a replay must not change: phase, the Velero Schedule
/// it names (NACUUID, name, namespace, mirrored phase), the next run, its backups and its
/// conditions (type, status, reason).
fn settled_fields(v: &Value) -> Value {
    let conditions: Vec<Value> = v
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .map(|c| json!([c["type"], c["status"], c["reason"]]))
                .collect()
        })
        .unwrap_or_default();
    json!({
        "phase": s(v, "/status/phase"),
        "nacuuid": s(v, "/status/veleroSchedule/nacuuid"),
        "name": s(v, "/status/veleroSchedule/name"),
        "namespace": s(v, "/status/veleroSchedule/namespace"),
        "schedulePhase": s(v, "/status/veleroSchedule/status/phase"),
        "nextRun": v.pointer("/status/nextRun"),
        "recentBackups": v.pointer("/status/recentBackups"),
        "lastBackup": v.pointer("/status/lastBackup"),
        "conditions": conditions,
    })
}

/// Seed 004 (act on the most recent status) without a read per reconcile: the driver decides on
/// the cached copy of a NAS, and only its own status and finalizer writes (which carry the
/// resourceVersion read) go ahead on it. Every copy the NAS went through on its way to Created
/// (NACUUID, finalizer, Velero Schedule made, its Enabled phase mirrored), handed to a reconcile
/// afterwards (a cache that fell behind), makes nothing twice: one Velero Schedule, the same
/// NACUUID and status, no child NAB (a yearly cron does not fire meanwhile), no error.
async fn a_decision_on_a_stale_copy_of_a_schedule_makes_nothing_twice(cluster: TestCluster) {
    // No controller runs: each step is one reconcile by a freshly started controller.
    let e = env_with(cluster, false, |_| {}).await;
    let token = sa_token(&e.admin, OADP_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT).await;
    create::<NonAdminSchedule>(&e.alice, "team-a", nas("stale", "0 0 1 1 *", json!({}))).await;
    let fresh_context = || {
        Arc::new(Context::new(
            e.cluster.client_as(&token, Component::Controller),
            OADP_NAMESPACE,
        ))
    };
    let api = ns_api::<NonAdminSchedule>(&e.admin, "team-a");
    let mut copies = Vec::new();
    loop {
        assert!(copies.len() < 80, "did not converge");
        let current = api.get("stale").await.unwrap();
        copies.push(current.clone());
        let v = serde_json::to_value(&current).unwrap();
        let elsewhere = made_elsewhere(&e.admin).await;
        nas::reconcile(Arc::new(current.clone()), fresh_context())
            .await
            .unwrap();
        let schedules = velero_schedules(&e.admin).await.len();
        assert!(schedules <= 1, "{schedules} Velero Schedules");
        let after = api.get("stale").await.unwrap();
        // Settled: Created with the Velero Schedule's Enabled phase mirrored, and a reconcile of
        // the latest copy changes nothing.
        if s(&v, "/status/phase") == "Created"
            && s(&v, "/status/veleroSchedule/status/phase") == "Enabled"
            && after.metadata.resource_version == current.metadata.resource_version
            && made_elsewhere(&e.admin).await == elsewhere
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let settled = nas_value(&e, "stale").await.unwrap();
    let fields = settled_fields(&settled);
    let nacuuid = s(&settled, "/status/veleroSchedule/nacuuid").to_string();
    assert!(nacuuid.starts_with("team-a-stale-"), "{nacuuid}");
    assert!(copies.len() >= 4, "{} copies", copies.len());
    for (i, stale) in copies.iter().enumerate() {
        nas::reconcile(Arc::new(stale.clone()), fresh_context())
            .await
            .unwrap_or_else(|err| panic!("copy {i}: {err}"));
        let now = nas_value(&e, "stale").await.unwrap();
        assert_eq!(settled_fields(&now), fields, "copy {i}");
        let schedules = velero_schedules(&e.admin).await;
        assert_eq!(schedules.len(), 1, "copy {i}");
        assert_eq!(
            schedules[0].metadata.name.as_deref(),
            Some(nacuuid.as_str()),
            "copy {i}"
        );
        let children = ns_api::<NonAdminBackup>(&e.admin, "team-a")
            .list(&ListParams::default())
            .await
            .unwrap()
            .items;
        assert!(children.is_empty(), "copy {i}: {} NABs", children.len());
        assert!(velero_backups(&e.admin).await.is_empty(), "copy {i}");
    }
    assert_eq!(
        event_reasons(&e.alice, "team-a", "stale")
            .await
            .iter()
            .filter(|r| *r == nas_decision::event_reasons::SCHEDULE_CREATED)
            .count(),
        1,
        "one creation, one Event"
    );
    println!(
        "[{}] {} stale copies reconciled: one Velero Schedule, NACUUID {nacuuid} kept",
        e.cluster.server,
        copies.len()
    );
}

on_both_servers!(
    tenant_downloads_its_backup_log_and_cannot_reach_other_namespaces,
    download_request_is_deleted_at_expiry,
    a_download_request_deleted_before_expiry_takes_its_velero_request_along,
    schedule_runs_make_child_nabs_pause_stops_them_and_delete_cascades,
    invalid_schedule_template_backs_off_without_a_velero_schedule,
    a_crash_between_any_two_schedule_steps_yields_one_velero_schedule,
    deleting_a_schedule_says_deleting_before_its_velero_schedule_goes,
    a_decision_on_a_stale_copy_of_a_schedule_makes_nothing_twice,
);
