//! The NonAdminRestore reconcile decision, pure: from what was observed (the NAR, its Velero
//! Restore, the verdict on its spec and source backup, the queue position) to the ONE next
//! step, following seed 004's flowchart as the NonAdminBackup does. The NACUUID is in the
//! status before the Velero Restore is created and the Restore is looked up by it, so a crash
//! between any two steps never yields two Velero Restores; a Restore that vanished after it was
//! made is never recreated (a restore is an action, not a state to keep): as upstream, the NAR
//! stays, BackingOff with Accepted=False `VeleroRestoreNotFound`, until the tenant deletes it.
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use uuid::Uuid;

use super::status::{self, set_condition};
use crate::api::nonadmin::conditions::{reasons, types};
use crate::api::nonadmin::labels::finalizers;
use crate::api::nonadmin::{
    NonAdminPhase, NonAdminRestore, NonAdminRestoreStatus, QueueInfo, RelatedVeleroRestore,
};
use crate::api::origin::{OriginKind, origin_annotations, origin_labels};
use crate::api::velero::{Restore, RestorePhase, RestoreSpec};
use crate::policy::nacuuid::nacuuid;

/// Message of the Accepted condition when the spec is valid.
pub const ACCEPTED_MESSAGE: &str = "restore accepted";
/// Message of the Queued condition once the Velero Restore exists.
pub const QUEUED_MESSAGE: &str = "Created Velero Restore object";
/// Deleting condition while the NAR's Velero Restore is removed.
pub const DELETE_MESSAGE: &str = "restore accepted for deletion";
/// Accepted=False message (reason `VeleroRestoreNotFound`, phase BackingOff) once the Velero
/// Restore the NAR made is gone: upstream NAC's text, word for word.
pub const VELERO_RESTORE_NOT_FOUND_MESSAGE: &str = "NonAdminRestore is finalized and its associated Velero Restore has been removed. Please create a new NonAdminRestore to initiate a new Restore";
/// How often to look again while Velero deletes a restore.
pub const DELETION_POLL: Duration = Duration::from_secs(2);
/// How often a restore that is still queued or running is looked at again, so its queue
/// position follows the queue (upstream never refreshes restore positions). Status writes are
/// skipped when nothing changed.
pub const QUEUE_REFRESH: Duration = Duration::from_secs(10);

/// Everything the decision depends on.
#[derive(Debug, Clone)]
pub struct NarObservation<'a> {
    /// The NAR as just read from the API server.
    pub nar: &'a NonAdminRestore,
    /// The Velero Restore carrying this NAR's NACUUID label, if any.
    pub velero_restore: Option<&'a Restore>,
    /// The verdict on the spec and on the backup it restores: the Velero spec to create, or
    /// the message refusing it.
    pub verdict: Result<RestoreSpec, String>,
    /// Estimated queue position of the Velero Restore (None when it has none).
    pub queue_position: Option<u64>,
    /// The OADP namespace where Velero objects live.
    pub oadp_namespace: &'a str,
    /// A fresh UUID, used only when a NACUUID must be generated.
    pub fresh_uuid: Uuid,
    /// Now, for condition transition times.
    pub now: Time,
}

/// The one step to take next.
#[derive(Debug, Clone, PartialEq)]
pub enum NarStep {
    /// Write this status (then reconcile again).
    WriteStatus(Box<NonAdminRestoreStatus>),
    /// Add the NAR finalizer.
    AddFinalizer,
    /// Create this Velero Restore.
    CreateVeleroRestore(Box<Restore>),
    /// Delete the Velero Restore of that name.
    DeleteVeleroRestore(String),
    /// Remove the NAR finalizer: nothing of it is left in the OADP namespace.
    RemoveFinalizer,
    /// Nothing to do until something changes (an invalid spec waits for the tenant).
    AwaitChange,
    /// Nothing to do now; look again after this long.
    RequeueAfter(Duration),
}

/// Whether two statuses differ in anything but condition transition times (writes are skipped
/// when they do not).
pub fn status_changed(old: Option<&NonAdminRestoreStatus>, new: &NonAdminRestoreStatus) -> bool {
    status::differs_ignoring_transition_times(old, new, |s| &mut s.conditions)
}

/// Phases only move forward.
fn advance(status: &mut NonAdminRestoreStatus, to: NonAdminPhase) {
    status::advance_phase(&mut status.phase, to);
}

fn has_finalizer(nar: &NonAdminRestore) -> bool {
    status::has_finalizer(&nar.metadata, finalizers::NON_ADMIN_RESTORE)
}

/// Whether the NAR's Velero Restore was made already: Queued=True (upstream's test), phase
/// Created, or its status mirrored. A Velero Restore missing now vanished and is never made
/// again.
pub fn velero_restore_was_made(status: Option<&NonAdminRestoreStatus>) -> bool {
    status.is_some_and(|s| {
        s.phase == Some(NonAdminPhase::Created)
            || s.velero_restore
                .as_ref()
                .is_some_and(|v| v.status.is_some())
            || s.conditions
                .iter()
                .any(|c| c.type_ == types::QUEUED && c.status == "True")
    })
}

fn recorded_nacuuid(status: &NonAdminRestoreStatus) -> Option<String> {
    status
        .velero_restore
        .as_ref()
        .and_then(|v| v.nacuuid.clone())
        .filter(|u| !u.is_empty())
}

/// The Velero Restore NAC creates for `nar` under `nacuuid`.
pub fn velero_restore_for(
    nar: &NonAdminRestore,
    nacuuid: &str,
    oadp_namespace: &str,
    spec: RestoreSpec,
) -> Restore {
    let mut restore = Restore::new(nacuuid, spec);
    restore.metadata.namespace = Some(oadp_namespace.to_string());
    restore.metadata.labels = Some(origin_labels(OriginKind::NonAdminRestore, nacuuid));
    restore.metadata.annotations = Some(origin_annotations(
        OriginKind::NonAdminRestore,
        nar.metadata.namespace.as_deref().unwrap_or_default(),
        nar.metadata.name.as_deref().unwrap_or_default(),
    ));
    restore
}

fn velero_phase(restore: &Restore) -> Option<&RestorePhase> {
    restore.status.as_ref().and_then(|s| s.phase.as_ref())
}

/// Mirrors the Velero Restore into the NAR status: its status and the queue position (0 once
/// the restore is finished).
fn mirror(status: &mut NonAdminRestoreStatus, restore: &Restore, queue_position: Option<u64>) {
    let related = status
        .velero_restore
        .get_or_insert_with(RelatedVeleroRestore::default);
    related.status = restore.status.clone();
    let terminal = velero_phase(restore).is_some_and(RestorePhase::is_terminal);
    let position = if terminal {
        0
    } else {
        queue_position.unwrap_or(0)
    };
    status.queue_info = Some(QueueInfo {
        estimated_queue_position: i64::try_from(position).unwrap_or(i64::MAX),
    });
}

/// Decides the next step for a NonAdminRestore.
pub fn decide(obs: &NarObservation<'_>) -> NarStep {
    let nar = obs.nar;
    let current = nar.status.clone();
    let mut status = current.clone().unwrap_or_default();

    if nar.metadata.deletion_timestamp.is_some() {
        return decide_api_delete(obs, status, current.as_ref());
    }

    let Some(restore) = obs.velero_restore else {
        return decide_without_restore(obs, status, current.as_ref());
    };

    // The Velero Restore exists: Created, Queued, and mirror it.
    if !has_finalizer(nar) {
        return NarStep::AddFinalizer;
    }
    advance(&mut status, NonAdminPhase::Created);
    if !status
        .conditions
        .iter()
        .any(|c| c.type_ == types::ACCEPTED && c.status == "True")
    {
        set_condition(
            &mut status.conditions,
            types::ACCEPTED,
            true,
            reasons::RESTORE_ACCEPTED,
            ACCEPTED_MESSAGE,
            &obs.now,
        );
    }
    set_condition(
        &mut status.conditions,
        types::QUEUED,
        true,
        reasons::RESTORE_SCHEDULED,
        QUEUED_MESSAGE,
        &obs.now,
    );
    mirror(&mut status, restore, obs.queue_position);
    if status_changed(current.as_ref(), &status) {
        return NarStep::WriteStatus(Box::new(status));
    }
    if velero_phase(restore).is_some_and(RestorePhase::is_terminal) {
        NarStep::AwaitChange
    } else {
        NarStep::RequeueAfter(QUEUE_REFRESH)
    }
}

fn decide_without_restore(
    obs: &NarObservation<'_>,
    mut status: NonAdminRestoreStatus,
    current: Option<&NonAdminRestoreStatus>,
) -> NarStep {
    let nar = obs.nar;
    if status.phase.is_none() {
        status.phase = Some(NonAdminPhase::New);
    }
    if velero_restore_was_made(current) {
        // The Velero Restore was made and is gone (an admin, garbage collection): running the
        // restore again would be a surprise, so it is not recreated. As upstream: phase
        // BackingOff (the one way a phase moves back after Created), Accepted=False
        // `VeleroRestoreNotFound`; the last mirrored Velero status stays, no queue position.
        status.phase = Some(NonAdminPhase::BackingOff);
        set_condition(
            &mut status.conditions,
            types::ACCEPTED,
            false,
            reasons::VELERO_RESTORE_NOT_FOUND,
            VELERO_RESTORE_NOT_FOUND_MESSAGE,
            &obs.now,
        );
        status.queue_info = Some(QueueInfo {
            estimated_queue_position: 0,
        });
        if status_changed(current, &status) {
            return NarStep::WriteStatus(Box::new(status));
        }
        return NarStep::AwaitChange;
    }
    match &obs.verdict {
        Err(message) => {
            advance(&mut status, NonAdminPhase::BackingOff);
            set_condition(
                &mut status.conditions,
                types::ACCEPTED,
                false,
                reasons::INVALID_RESTORE_SPEC,
                message,
                &obs.now,
            );
            if status_changed(current, &status) {
                return NarStep::WriteStatus(Box::new(status));
            }
            NarStep::AwaitChange
        }
        Ok(spec) => {
            set_condition(
                &mut status.conditions,
                types::ACCEPTED,
                true,
                reasons::RESTORE_ACCEPTED,
                ACCEPTED_MESSAGE,
                &obs.now,
            );
            let id = match recorded_nacuuid(&status) {
                Some(id) => id,
                None => {
                    let id = nacuuid(
                        nar.metadata.namespace.as_deref().unwrap_or_default(),
                        nar.metadata.name.as_deref().unwrap_or_default(),
                        &obs.fresh_uuid,
                    );
                    status.velero_restore = Some(RelatedVeleroRestore {
                        nacuuid: Some(id.clone()),
                        name: Some(id.clone()),
                        namespace: Some(obs.oadp_namespace.to_string()),
                        ..Default::default()
                    });
                    id
                }
            };
            if status_changed(current, &status) {
                // The NACUUID is persisted before anything is created.
                return NarStep::WriteStatus(Box::new(status));
            }
            if !has_finalizer(nar) {
                return NarStep::AddFinalizer;
            }
            NarStep::CreateVeleroRestore(Box::new(velero_restore_for(
                nar,
                &id,
                obs.oadp_namespace,
                spec.clone(),
            )))
        }
    }
}

fn decide_api_delete(
    obs: &NarObservation<'_>,
    mut status: NonAdminRestoreStatus,
    current: Option<&NonAdminRestoreStatus>,
) -> NarStep {
    advance(&mut status, NonAdminPhase::Deleting);
    set_condition(
        &mut status.conditions,
        types::DELETING,
        true,
        reasons::DELETION_PENDING,
        DELETE_MESSAGE,
        &obs.now,
    );
    if status_changed(current, &status) {
        return NarStep::WriteStatus(Box::new(status));
    }
    if let Some(restore) = obs.velero_restore {
        if restore.metadata.deletion_timestamp.is_none() {
            return NarStep::DeleteVeleroRestore(restore.metadata.name.clone().unwrap_or_default());
        }
        return NarStep::RequeueAfter(DELETION_POLL);
    }
    if has_finalizer(obs.nar) {
        return NarStep::RemoveFinalizer;
    }
    NarStep::AwaitChange
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::api::nonadmin::labels;
    use serde_json::json;

    fn time() -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(1_700_000_000).unwrap())
    }

    fn nar(value: serde_json::Value) -> NonAdminRestore {
        let mut base = json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminRestore",
            "metadata": {"name": "undo", "namespace": "team-a", "uid": "u-1"},
            "spec": {"restoreSpec": {"backupName": "nightly"}}
        });
        crate::sim::apiserver::patch::merge_patch(&mut base, &value);
        serde_json::from_value(base).unwrap()
    }

    fn with_finalizer(mut n: NonAdminRestore) -> NonAdminRestore {
        n.metadata.finalizers = Some(vec![finalizers::NON_ADMIN_RESTORE.into()]);
        n
    }

    fn obs<'a>(
        n: &'a NonAdminRestore,
        vr: Option<&'a Restore>,
        verdict: Result<RestoreSpec, String>,
    ) -> NarObservation<'a> {
        NarObservation {
            nar: n,
            velero_restore: vr,
            verdict,
            queue_position: Some(3),
            oadp_namespace: "openshift-adp",
            fresh_uuid: Uuid::from_u128(0x1234),
            now: time(),
        }
    }

    fn valid() -> Result<RestoreSpec, String> {
        Ok(RestoreSpec {
            backup_name: Some("team-a-nightly-vb".into()),
            included_namespaces: Some(vec!["team-a".into()]),
            ..Default::default()
        })
    }

    fn restore(phase: &str) -> Restore {
        serde_json::from_value(
            json!({"metadata": {"name": "x", "namespace": "openshift-adp"},
            "spec": {"backupName": "team-a-nightly-vb"}, "status": {"phase": phase}}),
        )
        .unwrap()
    }

    fn status_of(step: NarStep) -> NonAdminRestoreStatus {
        match step {
            NarStep::WriteStatus(s) => *s,
            other => panic!("expected a status write, got {other:?}"),
        }
    }

    fn written(n: &NonAdminRestore, s: NonAdminRestoreStatus) -> NonAdminRestore {
        let mut x = n.clone();
        x.status = Some(s);
        x
    }

    fn condition<'a>(
        s: &'a NonAdminRestoreStatus,
        type_: &str,
    ) -> &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
        s.conditions.iter().find(|c| c.type_ == type_).unwrap()
    }

    #[test]
    fn new_valid_nar_gets_accepted_and_nacuuid_in_one_write() {
        let n = nar(json!({}));
        let s = status_of(decide(&obs(&n, None, valid())));
        assert_eq!(s.phase, Some(NonAdminPhase::New));
        let accepted = condition(&s, types::ACCEPTED);
        assert_eq!(
            (
                accepted.status.as_str(),
                accepted.reason.as_str(),
                accepted.message.as_str()
            ),
            ("True", reasons::RESTORE_ACCEPTED, ACCEPTED_MESSAGE)
        );
        let vr = s.velero_restore.unwrap();
        assert_eq!(
            vr.nacuuid.as_deref(),
            Some("team-a-undo-00000000-0000-0000-0000-000000001234")
        );
        assert_eq!(vr.name, vr.nacuuid);
        assert_eq!(vr.namespace.as_deref(), Some("openshift-adp"));
    }

    #[test]
    fn invalid_spec_backs_off_then_waits_and_a_fix_moves_on() {
        let n = nar(json!({}));
        let refused =
            "NonAdminRestore nonAdminRestore.spec.restoreSpec.namespaceMapping is restricted";
        let s = status_of(decide(&obs(&n, None, Err(refused.into()))));
        assert_eq!(s.phase, Some(NonAdminPhase::BackingOff));
        let c = condition(&s, types::ACCEPTED);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            ("False", reasons::INVALID_RESTORE_SPEC, refused)
        );
        assert!(s.velero_restore.is_none(), "no NACUUID for a refused spec");
        let w = written(&n, s);
        assert_eq!(
            decide(&obs(&w, None, Err(refused.into()))),
            NarStep::AwaitChange
        );
        let fixed = status_of(decide(&obs(&w, None, valid())));
        assert_eq!(fixed.phase, Some(NonAdminPhase::BackingOff));
        assert_eq!(condition(&fixed, types::ACCEPTED).status, "True");
        assert!(fixed.velero_restore.is_some());
    }

    #[test]
    fn finalizer_comes_after_the_nacuuid_and_creation_after_the_finalizer() {
        let with_uuid = nar(json!({"status": {"phase": "New",
            "conditions": [{"type": "Accepted", "status": "True", "reason": "RestoreAccepted",
                "message": ACCEPTED_MESSAGE, "lastTransitionTime": "2023-11-14T22:13:20Z"}],
            "veleroRestore": {"nacuuid": "team-a-undo-x", "name": "team-a-undo-x", "namespace": "openshift-adp"}}}));
        assert_eq!(
            decide(&obs(&with_uuid, None, valid())),
            NarStep::AddFinalizer
        );
        let ready = with_finalizer(with_uuid);
        match decide(&obs(&ready, None, valid())) {
            NarStep::CreateVeleroRestore(r) => {
                assert_eq!(r.metadata.name.as_deref(), Some("team-a-undo-x"));
                assert_eq!(r.metadata.namespace.as_deref(), Some("openshift-adp"));
                let l = r.metadata.labels.unwrap();
                assert_eq!(l[labels::NAR_ORIGIN_NACUUID], "team-a-undo-x");
                assert_eq!(l[labels::OADP], "True");
                assert_eq!(l[labels::MANAGED_BY], labels::MANAGED_BY_VALUE);
                let a = r.metadata.annotations.unwrap();
                assert_eq!(a[labels::NAR_ORIGIN_NAME_ANNOTATION], "undo");
                assert_eq!(a[labels::NAR_ORIGIN_NAMESPACE_ANNOTATION], "team-a");
                assert_eq!(r.spec.backup_name.as_deref(), Some("team-a-nightly-vb"));
            }
            other => panic!("expected creation, got {other:?}"),
        }
    }

    #[test]
    fn existing_restore_adds_a_missing_finalizer_first() {
        let n = nar(json!({"status": {"phase": "New",
            "veleroRestore": {"nacuuid": "x", "name": "x", "namespace": "openshift-adp"}}}));
        assert_eq!(
            decide(&obs(&n, Some(&restore("New")), valid())),
            NarStep::AddFinalizer
        );
    }

    #[test]
    fn existing_restore_is_mirrored_with_its_queue_position() {
        let n = with_finalizer(nar(json!({"status": {"phase": "New",
            "veleroRestore": {"nacuuid": "x", "name": "x", "namespace": "openshift-adp"}}})));
        let queued = restore("New");
        let s = status_of(decide(&obs(&n, Some(&queued), valid())));
        assert_eq!(s.phase, Some(NonAdminPhase::Created));
        let q = condition(&s, types::QUEUED);
        assert_eq!(
            (q.status.as_str(), q.reason.as_str(), q.message.as_str()),
            ("True", reasons::RESTORE_SCHEDULED, QUEUED_MESSAGE)
        );
        assert_eq!(
            condition(&s, types::ACCEPTED).reason,
            reasons::RESTORE_ACCEPTED
        );
        assert_eq!(s.queue_info.as_ref().unwrap().estimated_queue_position, 3);
        let w = written(&n, s);
        // Nothing changed: no write, and a queued restore is looked at again later.
        assert_eq!(
            decide(&obs(&w, Some(&queued), valid())),
            NarStep::RequeueAfter(QUEUE_REFRESH)
        );
        // The queue moved: the position is refreshed.
        let mut moved = obs(&w, Some(&queued), valid());
        moved.queue_position = Some(1);
        let s = status_of(decide(&moved));
        assert_eq!(s.queue_info.unwrap().estimated_queue_position, 1);
        // Once created, spec validity no longer matters.
        assert_eq!(
            decide(&obs(&w, Some(&queued), Err("now invalid".into()))),
            NarStep::RequeueAfter(QUEUE_REFRESH)
        );
    }

    #[test]
    fn finished_restore_has_position_zero_and_waits() {
        let n = with_finalizer(nar(json!({"status": {"phase": "Created",
            "veleroRestore": {"nacuuid": "x", "name": "x", "namespace": "openshift-adp"},
            "queueInfo": {"estimatedQueuePosition": 2}}})));
        for phase in ["Completed", "PartiallyFailed", "Failed", "FailedValidation"] {
            let done = restore(phase);
            let s = status_of(decide(&obs(&n, Some(&done), valid())));
            assert_eq!(s.queue_info.as_ref().unwrap().estimated_queue_position, 0);
            assert_eq!(
                s.velero_restore
                    .as_ref()
                    .unwrap()
                    .status
                    .as_ref()
                    .unwrap()
                    .phase
                    .as_ref()
                    .unwrap()
                    .as_str(),
                phase
            );
            let w = written(&n, s);
            assert_eq!(decide(&obs(&w, Some(&done), valid())), NarStep::AwaitChange);
        }
    }

    #[test]
    fn vanished_restore_keeps_the_nar_backing_off_and_is_never_made_again() {
        let n = with_finalizer(nar(json!({"status": {"phase": "Created",
            "conditions": [
                {"type": "Accepted", "status": "True", "reason": "RestoreAccepted", "message": ACCEPTED_MESSAGE, "lastTransitionTime": "2023-11-14T22:13:20Z"},
                {"type": "Queued", "status": "True", "reason": "RestoreScheduled", "message": QUEUED_MESSAGE, "lastTransitionTime": "2023-11-14T22:13:20Z"}],
            "veleroRestore": {"nacuuid": "x", "name": "x", "namespace": "openshift-adp", "status": {"phase": "InProgress"}},
            "queueInfo": {"estimatedQueuePosition": 1}}})));
        let s = status_of(decide(&obs(&n, None, valid())));
        // Upstream's status: BackingOff, Accepted=False VeleroRestoreNotFound with its message.
        assert_eq!(s.phase, Some(NonAdminPhase::BackingOff));
        let a = condition(&s, types::ACCEPTED);
        assert_eq!(
            (a.status.as_str(), a.reason.as_str(), a.message.as_str()),
            (
                "False",
                reasons::VELERO_RESTORE_NOT_FOUND,
                "NonAdminRestore is finalized and its associated Velero Restore has been removed. Please create a new NonAdminRestore to initiate a new Restore"
            )
        );
        assert_eq!(condition(&s, types::QUEUED).status, "True");
        assert_eq!(
            s.velero_restore
                .as_ref()
                .unwrap()
                .status
                .as_ref()
                .unwrap()
                .phase
                .as_ref()
                .unwrap()
                .as_str(),
            "InProgress",
            "the last mirrored Velero status stays"
        );
        assert_eq!(s.queue_info.as_ref().unwrap().estimated_queue_position, 0);
        let w = written(&n, s);
        assert_eq!(decide(&obs(&w, None, valid())), NarStep::AwaitChange);
        assert_eq!(
            decide(&obs(&w, None, Err("its backup is gone".into()))),
            NarStep::AwaitChange
        );
        // Queued=True alone (the status not mirrored yet) is enough, as upstream.
        let queued_only = with_finalizer(nar(json!({"status": {"phase": "New",
            "conditions": [{"type": "Queued", "status": "True", "reason": "RestoreScheduled", "message": QUEUED_MESSAGE, "lastTransitionTime": "2023-11-14T22:13:20Z"}],
            "veleroRestore": {"nacuuid": "x", "name": "x", "namespace": "openshift-adp"}}})));
        let s = status_of(decide(&obs(&queued_only, None, valid())));
        assert_eq!(s.phase, Some(NonAdminPhase::BackingOff));
        assert_eq!(
            condition(&s, types::ACCEPTED).reason,
            reasons::VELERO_RESTORE_NOT_FOUND
        );
        // Deleting it still works: Deleting, then the finalizer goes.
        let mut deleted = w.clone();
        deleted.metadata.deletion_timestamp = Some(time());
        let s = status_of(decide(&obs(&deleted, None, valid())));
        assert_eq!(s.phase, Some(NonAdminPhase::Deleting));
        let deleted = written(&deleted, s);
        assert_eq!(
            decide(&obs(&deleted, None, valid())),
            NarStep::RemoveFinalizer
        );
    }

    #[test]
    fn api_delete_removes_the_velero_restore_then_the_finalizer() {
        let n = with_finalizer(nar(
            json!({"metadata": {"deletionTimestamp": "2023-11-14T22:13:20Z"},
            "status": {"phase": "Created", "veleroRestore": {"nacuuid": "x", "name": "x"}}}),
        ));
        let s = status_of(decide(&obs(&n, Some(&restore("Completed")), valid())));
        assert_eq!(s.phase, Some(NonAdminPhase::Deleting));
        let d = condition(&s, types::DELETING);
        assert_eq!(
            (d.status.as_str(), d.reason.as_str(), d.message.as_str()),
            ("True", reasons::DELETION_PENDING, DELETE_MESSAGE)
        );
        let w = written(&n, s);
        assert_eq!(
            decide(&obs(&w, Some(&restore("Completed")), valid())),
            NarStep::DeleteVeleroRestore("x".into())
        );
        let mut going = restore("Completed");
        going.metadata.deletion_timestamp = Some(time());
        assert_eq!(
            decide(&obs(&w, Some(&going), valid())),
            NarStep::RequeueAfter(DELETION_POLL)
        );
        assert_eq!(decide(&obs(&w, None, valid())), NarStep::RemoveFinalizer);
        let mut released = w.clone();
        released.metadata.finalizers = None;
        assert_eq!(decide(&obs(&released, None, valid())), NarStep::AwaitChange);
    }

    #[test]
    fn phase_never_goes_back() {
        let mut s = NonAdminRestoreStatus {
            phase: Some(NonAdminPhase::Created),
            ..Default::default()
        };
        advance(&mut s, NonAdminPhase::BackingOff);
        assert_eq!(s.phase, Some(NonAdminPhase::Created));
        advance(&mut s, NonAdminPhase::Deleting);
        assert_eq!(s.phase, Some(NonAdminPhase::Deleting));
    }

    #[test]
    fn status_comparison_ignores_transition_times_only() {
        let n = nar(json!({}));
        let s = status_of(decide(&obs(&n, None, valid())));
        let mut later = s.clone();
        later.conditions[0].last_transition_time =
            Time(k8s_openapi::jiff::Timestamp::from_second(1_800_000_000).unwrap());
        assert!(!status_changed(Some(&s), &later));
        later.conditions[0].message = "other".into();
        assert!(status_changed(Some(&s), &later));
        assert!(status_changed(None, &s));
    }
}
