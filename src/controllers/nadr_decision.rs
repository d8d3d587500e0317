//! The NonAdminDownloadRequest reconcile decision, pure: from the NADR, what its target NAB or
//! NAR resolved to, and its Velero DownloadRequest (`nadr-<uid>` in the OADP namespace) to the
//! ONE next step. Backups on any storage location are served (upstream refuses the default
//! BSL); the NADR and its Velero request are deleted once the download URL expires. A finalizer
//! makes a NADR deleted before that remove its Velero request first, so no request (and no
//! signed URL) outlives the tenant's object.
//!
//! Conditions as upstream writes them: a NADR carries one condition, whose *type* is the
//! signal. A target that cannot be served gives phase `BackingOff` and
//! `NonAdminBackupNotAvailable` (backup kinds) or `NonAdminRestoreNotAvailable` (restore kinds),
//! True, reason `Error`, with upstream's message (`cannot get nonadminbackup`, `cannot get
//! nonadminrestore`) followed by why. A served URL gives phase `Created` and `Processed`, True,
//! reason `Success`, empty message. `NonAdminBackupStorageLocationNotUsed` is never written:
//! backups on any location are served.
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use super::status::{self, set_condition};
use crate::api::nonadmin::conditions::types;
use crate::api::nonadmin::labels::finalizers;
use crate::api::nonadmin::{
    NonAdminBackup, NonAdminDownloadRequest, NonAdminDownloadRequestStatus, NonAdminPhase,
    NonAdminRestore, RelatedVeleroDownloadRequest,
};
use crate::api::origin::{OriginKind, origin_annotations, origin_labels};
use crate::api::velero::{
    BackupPhase, DownloadRequest, DownloadRequestPhase, DownloadRequestSpec, DownloadTarget,
    RestorePhase,
};

/// Reason of the one condition of a NADR that cannot be served (upstream's).
pub const ERROR_REASON: &str = "Error";
/// Reason of the Processed condition once Velero produced the URL (upstream's).
pub const PROCESSED_REASON: &str = "Success";
/// Message of the Processed condition: empty, as upstream writes it.
pub const PROCESSED_MESSAGE: &str = "";
/// Upstream's message when the target NonAdminBackup cannot be had; ours adds why after `: `.
pub const BACKUP_NOT_AVAILABLE_MESSAGE: &str = "cannot get nonadminbackup";
/// Upstream's message when the target NonAdminRestore cannot be had; ours adds why after `: `.
pub const RESTORE_NOT_AVAILABLE_MESSAGE: &str = "cannot get nonadminrestore";
/// How often a NADR whose target is not usable yet (still running) is looked at again.
pub const TARGET_POLL: Duration = Duration::from_secs(5);
/// How often a deleted NADR looks again while its Velero request is being deleted.
pub const DELETION_POLL: Duration = Duration::from_secs(1);

/// Event reasons of the NADR controller.
pub mod event_reasons {
    /// The download URL is ready.
    pub const DOWNLOAD_READY: &str = "DownloadURLReady";
    /// The download URL expired; the request is removed.
    pub const DOWNLOAD_EXPIRED: &str = "DownloadURLExpired";
}

/// What the NADR's target resolved to.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// The Velero Backup or Restore to download from.
    Ready(String),
    /// Not servable (missing, another namespace, not finished): the reason.
    Unavailable(String),
    /// Exists but its Velero object has not finished yet: look again later.
    NotYet(String),
}

/// Everything the decision depends on.
#[derive(Debug, Clone)]
pub struct NadrObservation<'a> {
    /// The NADR as just read.
    pub nadr: &'a NonAdminDownloadRequest,
    /// What the target resolved to.
    pub target: Target,
    /// The Velero DownloadRequest `nadr-<uid>`, if it exists.
    pub velero_request: Option<&'a DownloadRequest>,
    /// The OADP namespace.
    pub oadp_namespace: &'a str,
    /// Now.
    pub now: Time,
}

/// The one step to take next.
#[derive(Debug, Clone, PartialEq)]
pub enum NadrStep {
    /// Write this status (then reconcile again).
    WriteStatus(Box<NonAdminDownloadRequestStatus>),
    /// Add the NADR finalizer (before any Velero request exists).
    AddFinalizer,
    /// Remove the NADR finalizer (its Velero request is gone).
    RemoveFinalizer,
    /// Create this Velero DownloadRequest.
    CreateVeleroRequest(Box<DownloadRequest>),
    /// The NADR is being deleted: delete its Velero request of that name (absent is fine).
    DeleteVeleroRequest(String),
    /// The URL expired: delete the Velero request (if any) and the NADR.
    Expire,
    /// Nothing to do until something changes.
    AwaitChange,
    /// Look again after this long.
    RequeueAfter(Duration),
}

/// Name of the Velero DownloadRequest of a NADR.
pub fn velero_request_name(nadr: &NonAdminDownloadRequest) -> String {
    format!("nadr-{}", nadr.metadata.uid.as_deref().unwrap_or_default())
}

/// Resolves a NAB target: found in the NADR's namespace, its Velero backup finished.
pub fn backup_target(nab: Option<&NonAdminBackup>, name: &str) -> Target {
    let Some(nab) = nab else {
        return Target::Unavailable(format!(
            "NonAdminBackup {name:?} not found in this namespace"
        ));
    };
    let related = nab.status.as_ref().and_then(|s| s.velero_backup.as_ref());
    let velero_name = related
        .and_then(|v| v.name.clone().or_else(|| v.nacuuid.clone()))
        .filter(|n| !n.is_empty());
    let phase = related
        .and_then(|v| v.status.as_ref())
        .and_then(|s| s.phase.clone());
    match (velero_name, phase) {
        (None, _) => Target::Unavailable(format!("NonAdminBackup {name:?} has no Velero Backup")),
        (Some(_), Some(BackupPhase::FailedValidation)) => Target::Unavailable(format!(
            "NonAdminBackup {name:?} failed validation and has nothing to download"
        )),
        (Some(v), Some(p)) if p.is_terminal() => Target::Ready(v),
        (Some(_), _) => Target::NotYet(format!("NonAdminBackup {name:?} has not finished yet")),
    }
}

/// Resolves a NAR target: found in the NADR's namespace, its Velero restore finished.
pub fn restore_target(nar: Option<&NonAdminRestore>, name: &str) -> Target {
    let Some(nar) = nar else {
        return Target::Unavailable(format!(
            "NonAdminRestore {name:?} not found in this namespace"
        ));
    };
    let related = nar.status.as_ref().and_then(|s| s.velero_restore.as_ref());
    let velero_name = related
        .and_then(|v| v.name.clone().or_else(|| v.nacuuid.clone()))
        .filter(|n| !n.is_empty());
    let phase = related
        .and_then(|v| v.status.as_ref())
        .and_then(|s| s.phase.clone());
    match (velero_name, phase) {
        (None, _) => Target::Unavailable(format!("NonAdminRestore {name:?} has no Velero Restore")),
        (Some(_), Some(RestorePhase::FailedValidation)) => Target::Unavailable(format!(
            "NonAdminRestore {name:?} failed validation and has nothing to download"
        )),
        (Some(v), Some(p)) if p.is_terminal() => Target::Ready(v),
        (Some(_), _) => Target::NotYet(format!("NonAdminRestore {name:?} has not finished yet")),
    }
}

/// The Velero DownloadRequest NAC creates for `nadr`, targeting the Velero object `velero_name`.
pub fn velero_request_for(
    nadr: &NonAdminDownloadRequest,
    velero_name: &str,
    oadp_namespace: &str,
) -> DownloadRequest {
    let name = velero_request_name(nadr);
    let mut request = DownloadRequest::new(
        &name,
        DownloadRequestSpec {
            target: DownloadTarget {
                kind: nadr.spec.target.kind.clone(),
                name: velero_name.to_string(),
                ..Default::default()
            },
            ..Default::default()
        },
    );
    request.metadata.namespace = Some(oadp_namespace.to_string());
    // The NACUUID label holds the bare UID, as upstream labels it (the name is `nadr-<uid>`).
    request.metadata.labels = Some(origin_labels(
        OriginKind::NonAdminDownloadRequest,
        nadr.metadata.uid.as_deref().unwrap_or_default(),
    ));
    request.metadata.annotations = Some(origin_annotations(
        OriginKind::NonAdminDownloadRequest,
        nadr.metadata.namespace.as_deref().unwrap_or_default(),
        nadr.metadata.name.as_deref().unwrap_or_default(),
    ));
    request
}

/// Whether two statuses differ in anything but condition transition times.
pub fn status_changed(
    old: Option<&NonAdminDownloadRequestStatus>,
    new: &NonAdminDownloadRequestStatus,
) -> bool {
    status::differs_ignoring_transition_times(old, new, |s| &mut s.conditions)
}

fn expired(expiration: Option<&Time>, now: &Time) -> bool {
    expiration.is_some_and(|e| e.0 <= now.0)
}

/// The condition type and upstream's message for a target that cannot be served.
fn unavailable(nadr: &NonAdminDownloadRequest) -> (&'static str, &'static str) {
    if nadr.spec.target.kind.is_restore_artifact() {
        (
            types::NON_ADMIN_RESTORE_NOT_AVAILABLE,
            RESTORE_NOT_AVAILABLE_MESSAGE,
        )
    } else {
        (
            types::NON_ADMIN_BACKUP_NOT_AVAILABLE,
            BACKUP_NOT_AVAILABLE_MESSAGE,
        )
    }
}

/// The one condition a NADR carries, as upstream writes it: its type is the signal, True.
/// The transition time is kept while the same condition stays.
fn only_condition(
    conditions: &mut Vec<Condition>,
    type_: &str,
    reason: &str,
    message: &str,
    now: &Time,
) {
    conditions.retain(|c| c.type_ == type_);
    set_condition(conditions, type_, true, reason, message, now);
}

fn has_finalizer(nadr: &NonAdminDownloadRequest) -> bool {
    status::has_finalizer(&nadr.metadata, finalizers::NON_ADMIN_DOWNLOAD_REQUEST)
}

/// A deleted NADR: its Velero request goes first, then the finalizer.
fn decide_delete(obs: &NadrObservation<'_>) -> NadrStep {
    if let Some(request) = obs.velero_request {
        if request.metadata.deletion_timestamp.is_some() {
            return NadrStep::RequeueAfter(DELETION_POLL);
        }
        return NadrStep::DeleteVeleroRequest(velero_request_name(obs.nadr));
    }
    if has_finalizer(obs.nadr) {
        return NadrStep::RemoveFinalizer;
    }
    NadrStep::AwaitChange
}

/// Decides the next step for a NonAdminDownloadRequest.
pub fn decide(obs: &NadrObservation<'_>) -> NadrStep {
    let nadr = obs.nadr;
    if nadr.metadata.deletion_timestamp.is_some() {
        return decide_delete(obs);
    }
    if !has_finalizer(nadr) {
        // Before a Velero request can exist, so a deletion always finds it.
        return NadrStep::AddFinalizer;
    }
    let current = nadr.status.clone();
    let mut status = current.clone().unwrap_or_default();
    let mirrored = status
        .velero
        .as_ref()
        .and_then(|v| v.status.as_ref())
        .cloned();
    if let Some(request) = obs.velero_request {
        let velero_status = request.status.clone();
        if expired(
            velero_status.as_ref().and_then(|s| s.expiration.as_ref()),
            &obs.now,
        ) {
            return NadrStep::Expire;
        }
        status.velero = Some(RelatedVeleroDownloadRequest {
            status: velero_status.clone(),
        });
        status.phase = Some(NonAdminPhase::Created);
        let processed = velero_status
            .as_ref()
            .and_then(|s| s.phase.as_ref())
            .is_some_and(|p| *p == DownloadRequestPhase::Processed);
        if processed {
            // Upstream: the conditions become the one `Processed` (reason `Success`).
            only_condition(
                &mut status.conditions,
                types::PROCESSED,
                PROCESSED_REASON,
                PROCESSED_MESSAGE,
                &obs.now,
            );
        } else {
            // The Velero request exists and waits for Velero: no refusal stands any more.
            status.conditions.clear();
        }
        if status_changed(current.as_ref(), &status) {
            return NadrStep::WriteStatus(Box::new(status));
        }
        let expiration = velero_status.as_ref().and_then(|s| s.expiration.as_ref());
        return match expiration {
            Some(e) => {
                let left = e.0.duration_since(obs.now.0);
                let secs = left.as_secs_f64().max(0.0);
                NadrStep::RequeueAfter(Duration::from_secs_f64(secs).max(Duration::from_millis(50)))
            }
            None => NadrStep::AwaitChange,
        };
    }
    // No Velero request: it was served once and Velero removed it, or it expired.
    let served = mirrored
        .as_ref()
        .and_then(|s| s.phase.as_ref())
        .is_some_and(|p| *p == DownloadRequestPhase::Processed);
    if served
        || expired(
            mirrored.as_ref().and_then(|s| s.expiration.as_ref()),
            &obs.now,
        )
    {
        return NadrStep::Expire;
    }
    match &obs.target {
        Target::Ready(velero_name) => NadrStep::CreateVeleroRequest(Box::new(velero_request_for(
            nadr,
            velero_name,
            obs.oadp_namespace,
        ))),
        Target::Unavailable(detail) | Target::NotYet(detail) => {
            // Upstream: phase BackingOff and one condition whose type is the signal, reason
            // `Error`, upstream's message followed by why.
            let (type_, upstream) = unavailable(nadr);
            status.phase = Some(NonAdminPhase::BackingOff);
            only_condition(
                &mut status.conditions,
                type_,
                ERROR_REASON,
                &format!("{upstream}: {detail}"),
                &obs.now,
            );
            if status_changed(current.as_ref(), &status) {
                NadrStep::WriteStatus(Box::new(status))
            } else if matches!(obs.target, Target::NotYet(_)) {
                NadrStep::RequeueAfter(TARGET_POLL)
            } else {
                NadrStep::AwaitChange
            }
        }
    }
}

fn processed(status: Option<&NonAdminDownloadRequestStatus>) -> bool {
    status.is_some_and(|s| {
        s.conditions
            .iter()
            .any(|c| c.type_ == types::PROCESSED && c.status == "True")
    })
}

/// The Event worth publishing once `step` was applied to `nadr` (as observed), if any: the
/// URL became ready, or it expired. Notes name only the NADR and its target (same namespace);
/// the URL itself stays in the status, out of Events.
pub fn notice(
    nadr: &NonAdminDownloadRequest,
    step: &NadrStep,
) -> Option<super::events::Notice<'static>> {
    use super::events::Notice;
    let name = nadr.metadata.name.as_deref().unwrap_or_default();
    let what = format!(
        "{} of {} {}",
        nadr.spec.target.kind.as_str(),
        if nadr.spec.target.kind.is_restore_artifact() {
            "NonAdminRestore"
        } else {
            "NonAdminBackup"
        },
        nadr.spec.target.name
    );
    match step {
        NadrStep::WriteStatus(new) if processed(Some(new)) && !processed(nadr.status.as_ref()) => {
            Some(Notice::normal(
                event_reasons::DOWNLOAD_READY,
                "Download",
                format!(
                    "the download URL for {what} is ready in the status of NonAdminDownloadRequest {name}"
                ),
            ))
        }
        NadrStep::Expire => Some(Notice::normal(
            event_reasons::DOWNLOAD_EXPIRED,
            "Expire",
            format!(
                "the download URL for {what} expired; NonAdminDownloadRequest {name} is deleted"
            ),
        )),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::api::nonadmin::labels;
    use serde_json::json;

    fn time(secs: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(1_800_000_000 + secs).unwrap())
    }

    /// A NADR as the controller keeps it: with its finalizer.
    fn nadr(kind: &str) -> NonAdminDownloadRequest {
        serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminDownloadRequest",
            "metadata": {"name": "logs", "namespace": "team-a", "uid": "u-1",
                         "finalizers": [finalizers::NON_ADMIN_DOWNLOAD_REQUEST]},
            "spec": {"target": {"kind": kind, "name": "first"}}
        }))
        .unwrap()
    }

    fn obs<'a>(
        nadr: &'a NonAdminDownloadRequest,
        target: Target,
        velero_request: Option<&'a DownloadRequest>,
    ) -> NadrObservation<'a> {
        NadrObservation {
            nadr,
            target,
            velero_request,
            oadp_namespace: "openshift-adp",
            now: time(0),
        }
    }

    fn request(status: serde_json::Value) -> DownloadRequest {
        serde_json::from_value(json!({
            "apiVersion": "velero.io/v1", "kind": "DownloadRequest",
            "metadata": {"name": "nadr-u-1", "namespace": "openshift-adp"},
            "spec": {"target": {"kind": "BackupLog", "name": "vb"}},
            "status": status
        }))
        .unwrap()
    }

    fn nab(status: serde_json::Value) -> NonAdminBackup {
        serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
            "metadata": {"name": "first", "namespace": "team-a"},
            "spec": {"backupSpec": {}}, "status": status
        }))
        .unwrap()
    }

    fn nar(status: serde_json::Value) -> NonAdminRestore {
        serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminRestore",
            "metadata": {"name": "r", "namespace": "team-a"},
            "spec": {"restoreSpec": {"backupName": "first"}}, "status": status
        }))
        .unwrap()
    }

    fn written(step: NadrStep) -> NonAdminDownloadRequestStatus {
        match step {
            NadrStep::WriteStatus(s) => *s,
            other => panic!("expected a status write, got {other:?}"),
        }
    }

    #[test]
    fn backup_targets_resolve_by_presence_and_phase() {
        assert!(
            matches!(backup_target(None, "x"), Target::Unavailable(m) if m.contains("not found"))
        );
        assert!(matches!(
            backup_target(Some(&nab(json!({}))), "x"),
            Target::Unavailable(_)
        ));
        let running =
            nab(json!({"veleroBackup": {"nacuuid": "vb", "status": {"phase": "InProgress"}}}));
        assert!(matches!(
            backup_target(Some(&running), "x"),
            Target::NotYet(_)
        ));
        let failed_validation =
            nab(json!({"veleroBackup": {"name": "vb", "status": {"phase": "FailedValidation"}}}));
        assert!(matches!(
            backup_target(Some(&failed_validation), "x"),
            Target::Unavailable(_)
        ));
        let done = nab(
            json!({"veleroBackup": {"name": "vb", "nacuuid": "n", "status": {"phase": "PartiallyFailed"}}}),
        );
        assert_eq!(backup_target(Some(&done), "x"), Target::Ready("vb".into()));
    }

    #[test]
    fn restore_targets_resolve_by_presence_and_phase() {
        assert!(matches!(restore_target(None, "r"), Target::Unavailable(_)));
        assert!(matches!(
            restore_target(Some(&nar(json!({}))), "r"),
            Target::Unavailable(_)
        ));
        let running =
            nar(json!({"veleroRestore": {"nacuuid": "vr", "status": {"phase": "InProgress"}}}));
        assert!(matches!(
            restore_target(Some(&running), "r"),
            Target::NotYet(_)
        ));
        let invalid = nar(
            json!({"veleroRestore": {"nacuuid": "vr", "status": {"phase": "FailedValidation"}}}),
        );
        assert!(matches!(
            restore_target(Some(&invalid), "r"),
            Target::Unavailable(_)
        ));
        let done =
            nar(json!({"veleroRestore": {"nacuuid": "vr", "status": {"phase": "Completed"}}}));
        assert_eq!(restore_target(Some(&done), "r"), Target::Ready("vr".into()));
    }

    #[test]
    fn ready_target_creates_the_velero_request_with_origin_metadata() {
        let n = nadr("BackupLog");
        let step = decide(&obs(&n, Target::Ready("vb".into()), None));
        let NadrStep::CreateVeleroRequest(r) = step else {
            panic!("{step:?}")
        };
        assert_eq!(r.metadata.name.as_deref(), Some("nadr-u-1"));
        assert_eq!(r.metadata.namespace.as_deref(), Some("openshift-adp"));
        assert_eq!(r.spec.target.name, "vb");
        assert_eq!(r.spec.target.kind.as_str(), "BackupLog");
        let l = r.metadata.labels.unwrap();
        assert_eq!(l[labels::OADP], "True");
        assert_eq!(
            l[labels::NADR_ORIGIN_NACUUID],
            "u-1",
            "the bare UID, as upstream"
        );
        let a = r.metadata.annotations.unwrap();
        assert_eq!(a[labels::NADR_ORIGIN_NAME_ANNOTATION], "logs");
        assert_eq!(a[labels::NADR_ORIGIN_NAMESPACE_ANNOTATION], "team-a");
    }

    #[test]
    fn unavailable_target_backs_off_with_the_reason_then_waits() {
        let mut n = nadr("BackupLog");
        let s = written(decide(&obs(&n, Target::Unavailable("gone".into()), None)));
        assert_eq!(s.phase, Some(NonAdminPhase::BackingOff));
        assert_eq!(s.conditions.len(), 1, "one condition, as upstream");
        let c = &s.conditions[0];
        assert_eq!(
            (c.type_.as_str(), c.status.as_str(), c.reason.as_str()),
            ("NonAdminBackupNotAvailable", "True", "Error")
        );
        assert_eq!(c.message, "cannot get nonadminbackup: gone");
        n.status = Some(s);
        assert_eq!(
            decide(&obs(&n, Target::Unavailable("gone".into()), None)),
            NadrStep::AwaitChange
        );
        // Still running: look again later.
        let s = written(decide(&obs(&n, Target::NotYet("running".into()), None)));
        n.status = Some(s);
        assert_eq!(
            decide(&obs(&n, Target::NotYet("running".into()), None)),
            NadrStep::RequeueAfter(TARGET_POLL)
        );
    }

    #[test]
    fn restore_kinds_use_the_restore_condition() {
        let n = nadr("RestoreLog");
        let s = written(decide(&obs(&n, Target::Unavailable("no".into()), None)));
        assert_eq!(s.phase, Some(NonAdminPhase::BackingOff));
        assert_eq!(s.conditions.len(), 1);
        let c = &s.conditions[0];
        assert_eq!(
            (c.type_.as_str(), c.status.as_str(), c.reason.as_str()),
            ("NonAdminRestoreNotAvailable", "True", "Error")
        );
        assert_eq!(c.message, "cannot get nonadminrestore: no");
    }

    #[test]
    fn velero_status_is_mirrored_then_requeued_until_expiry() {
        let mut n = nadr("BackupLog");
        let pending = request(json!({}));
        let s = written(decide(&obs(&n, Target::Ready("vb".into()), Some(&pending))));
        assert_eq!(s.phase, Some(NonAdminPhase::Created));
        assert!(s.conditions.iter().all(|c| c.type_ != types::PROCESSED));
        n.status = Some(s);
        assert_eq!(
            decide(&obs(&n, Target::Ready("vb".into()), Some(&pending))),
            NadrStep::AwaitChange
        );
        let expiration = serde_json::to_value(time(60)).unwrap();
        let done = request(
            json!({"phase": "Processed", "downloadURL": "http://x/y", "expiration": expiration}),
        );
        let s = written(decide(&obs(&n, Target::Ready("vb".into()), Some(&done))));
        let v = s.velero.clone().unwrap().status.unwrap();
        assert_eq!(v.download_url.as_deref(), Some("http://x/y"));
        assert_eq!(s.phase, Some(NonAdminPhase::Created));
        assert_eq!(s.conditions.len(), 1, "only Processed, as upstream");
        let c = &s.conditions[0];
        assert_eq!(
            (
                c.type_.as_str(),
                c.status.as_str(),
                c.reason.as_str(),
                c.message.as_str()
            ),
            ("Processed", "True", "Success", "")
        );
        n.status = Some(s);
        assert_eq!(
            decide(&obs(&n, Target::Ready("vb".into()), Some(&done))),
            NadrStep::RequeueAfter(Duration::from_secs(60))
        );
    }

    #[test]
    fn a_backing_off_request_moves_on_and_drops_the_refusal() {
        let mut n = nadr("BackupLog");
        n.status = Some(written(decide(&obs(&n, Target::NotYet("r".into()), None))));
        let pending = request(json!({}));
        let s = written(decide(&obs(&n, Target::Ready("vb".into()), Some(&pending))));
        assert_eq!(s.phase, Some(NonAdminPhase::Created));
        assert!(s.conditions.is_empty(), "{:?}", s.conditions);
    }

    #[test]
    fn the_one_condition_replaces_any_other_as_upstream() {
        // A NADR written by an earlier NAC (reasons on Accepted) or backing off: each new
        // state leaves exactly one condition, whose type is the signal.
        let mut n = nadr("BackupLog");
        n.status = Some(
            serde_json::from_value(json!({"phase": "BackingOff", "conditions": [
                {"type": "Accepted", "status": "False", "reason": "NonAdminBackupNotAvailable",
                 "message": "old", "lastTransitionTime": "2027-01-15T08:00:00Z"}]}))
            .unwrap(),
        );
        let running = written(decide(&obs(
            &n,
            backup_target(
                Some(&nab(
                    json!({"veleroBackup": {"name": "vb", "status": {"phase": "InProgress"}}}),
                )),
                "first",
            ),
            None,
        )));
        assert_eq!(running.conditions.len(), 1);
        assert_eq!(running.conditions[0].type_, "NonAdminBackupNotAvailable");
        assert_eq!(
            running.conditions[0].message,
            "cannot get nonadminbackup: NonAdminBackup \"first\" has not finished yet"
        );
        n.status = Some(running);
        let missing = written(decide(&obs(&n, backup_target(None, "first"), None)));
        assert_eq!(
            missing.conditions[0].message,
            "cannot get nonadminbackup: NonAdminBackup \"first\" not found in this namespace"
        );
        n.status = Some(missing);
        let expiration = serde_json::to_value(time(60)).unwrap();
        let done = request(
            json!({"phase": "Processed", "downloadURL": "http://x/y", "expiration": expiration}),
        );
        let s = written(decide(&obs(&n, Target::Ready("vb".into()), Some(&done))));
        let types_: Vec<&str> = s.conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types_, ["Processed"]);
        assert_eq!(s.phase, Some(NonAdminPhase::Created));
    }

    #[test]
    fn expiry_deletes_the_request_and_the_nadr() {
        let mut n = nadr("BackupLog");
        let past = serde_json::to_value(time(-1)).unwrap();
        let old = request(json!({"phase": "Processed", "expiration": past}));
        assert_eq!(
            decide(&obs(&n, Target::Ready("vb".into()), Some(&old))),
            NadrStep::Expire
        );
        // Velero removed its expired request: the NADR follows, it is never recreated.
        n.status = Some(written(decide(&obs(
            &n,
            Target::Ready("vb".into()),
            Some(&request(json!({"phase": "Processed"}))),
        ))));
        assert_eq!(
            decide(&obs(&n, Target::Ready("vb".into()), None)),
            NadrStep::Expire
        );
    }

    #[test]
    fn the_finalizer_comes_before_anything_else() {
        let mut n = nadr("BackupLog");
        n.metadata.finalizers = None;
        assert_eq!(
            decide(&obs(&n, Target::Ready("vb".into()), None)),
            NadrStep::AddFinalizer
        );
        assert_eq!(
            decide(&obs(&n, Target::Unavailable("gone".into()), None)),
            NadrStep::AddFinalizer
        );
    }

    #[test]
    fn a_deleted_nadr_removes_its_velero_request_then_its_finalizer() {
        let mut n = nadr("BackupLog");
        n.metadata.deletion_timestamp = Some(time(0));
        let live = request(json!({"phase": "Processed"}));
        assert_eq!(
            decide(&obs(&n, Target::Ready("vb".into()), Some(&live))),
            NadrStep::DeleteVeleroRequest("nadr-u-1".into())
        );
        // Velero's own finalizers may hold the request a while: look again, do not re-delete.
        let mut going = live.clone();
        going.metadata.deletion_timestamp = Some(time(0));
        assert_eq!(
            decide(&obs(&n, Target::Ready("vb".into()), Some(&going))),
            NadrStep::RequeueAfter(DELETION_POLL)
        );
        assert_eq!(
            decide(&obs(&n, Target::Ready("vb".into()), None)),
            NadrStep::RemoveFinalizer
        );
        n.metadata.finalizers = None;
        assert_eq!(
            decide(&obs(&n, Target::Ready("vb".into()), None)),
            NadrStep::AwaitChange
        );
    }

    #[test]
    fn events_mark_the_url_becoming_ready_and_expiring_only() {
        let mut n = nadr("BackupLog");
        let pending = request(json!({}));
        let first = decide(&obs(&n, Target::Ready("vb".into()), Some(&pending)));
        assert_eq!(notice(&n, &first), None, "accepted but not ready: no Event");
        n.status = Some(written(first));
        let done = request(json!({"phase": "Processed", "downloadURL": "http://x/secret"}));
        let ready = decide(&obs(&n, Target::Ready("vb".into()), Some(&done)));
        let event = notice(&n, &ready).unwrap();
        assert_eq!(event.reason, event_reasons::DOWNLOAD_READY);
        assert_eq!(event.type_, crate::controllers::events::EventType::Normal);
        assert!(
            event.note.contains("BackupLog of NonAdminBackup first"),
            "{}",
            event.note
        );
        assert!(event.note.contains("logs"), "{}", event.note);
        assert!(
            !event.note.contains("http://"),
            "the URL stays out of Events"
        );
        assert!(!event.note.contains("nadr-u-1"), "no OADP-namespace names");
        // Written once: the same state again is no transition.
        n.status = Some(written(ready.clone()));
        assert_eq!(notice(&n, &ready), None);
        let expired = notice(&n, &NadrStep::Expire).unwrap();
        assert_eq!(expired.reason, event_reasons::DOWNLOAD_EXPIRED);
        assert_eq!(notice(&n, &NadrStep::RemoveFinalizer), None);
        let restore = nadr("RestoreLog");
        let note = notice(&restore, &NadrStep::Expire).unwrap().note;
        assert!(
            note.contains("RestoreLog of NonAdminRestore first"),
            "{note}"
        );
    }
}
