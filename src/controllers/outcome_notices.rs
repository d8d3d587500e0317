//! Which NonAdminBackup/NonAdminRestore transitions deserve a Kubernetes Event, decided from
//! the step a reconcile is about to apply (pure: plain values in, an optional [`Notice`] out).
//! Events go on the tenant's object and name only what the tenant owns.
use super::events::Notice;
use super::nab_decision::NabStep;
use super::nar_decision::NarStep;
use crate::api::nonadmin::conditions::types;
use crate::api::nonadmin::{
    NonAdminBackup, NonAdminBackupStatus, NonAdminPhase, NonAdminRestore, NonAdminRestoreStatus,
};
use crate::api::velero::{BackupPhase, BackupStatus, RestorePhase, RestoreStatus};

/// Note when the Velero Backup of a schedule's run vanished without the tenant asking.
pub const VANISHED_NOTE: &str = "the backup no longer exists (expired or deleted by the administrator); the NonAdminBackup follows it";

fn accepted_message(
    conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
) -> &str {
    conditions
        .iter()
        .find(|c| c.type_ == types::ACCEPTED)
        .map(|c| c.message.as_str())
        .unwrap_or("")
}

/// The Event reason of a move to BackingOff: the Accepted condition's reason (an invalid spec,
/// or `VeleroBackupNotFound`/`VeleroRestoreNotFound` once the Velero object vanished).
fn backing_off_reason(
    conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    otherwise: &'static str,
) -> &'static str {
    use crate::api::nonadmin::conditions::reasons;
    let reason = conditions
        .iter()
        .find(|c| c.type_ == types::ACCEPTED)
        .map(|c| c.reason.as_str());
    match reason {
        Some(reasons::VELERO_BACKUP_NOT_FOUND) => reasons::VELERO_BACKUP_NOT_FOUND,
        Some(reasons::VELERO_RESTORE_NOT_FOUND) => reasons::VELERO_RESTORE_NOT_FOUND,
        _ => otherwise,
    }
}

fn counts(errors: Option<i64>, warnings: Option<i64>) -> String {
    format!(
        "{} errors, {} warnings",
        errors.unwrap_or(0),
        warnings.unwrap_or(0)
    )
}

/// The Event for a NAB about to take `step`, if the step is a transition the tenant should hear of.
pub fn backup_notice(nab: &NonAdminBackup, step: &NabStep) -> Option<Notice<'static>> {
    match step {
        NabStep::WriteStatus(next) => backup_status_notice(nab.status.as_ref(), next),
        NabStep::CreateVeleroBackup(_) => Some(Notice::normal(
            "BackupScheduled",
            "Create",
            "Created Velero Backup object; the backup is queued".into(),
        )),
        NabStep::CreateDeleteBackupRequest(_) => Some(Notice::normal(
            "DeletionRequested",
            "Delete",
            "Requested permanent deletion of the backup and its data".into(),
        )),
        NabStep::FollowVanishedBackup => Some(Notice::warning(
            "BackupVanished",
            "Delete",
            VANISHED_NOTE.into(),
        )),
        _ => None,
    }
}

fn backup_status_notice(
    before: Option<&NonAdminBackupStatus>,
    next: &NonAdminBackupStatus,
) -> Option<Notice<'static>> {
    let was = before.and_then(|s| s.phase);
    if next.phase == Some(NonAdminPhase::BackingOff) && was != Some(NonAdminPhase::BackingOff) {
        return Some(Notice::warning(
            backing_off_reason(&next.conditions, "InvalidBackupSpec"),
            "Validate",
            accepted_message(&next.conditions).to_string(),
        ));
    }
    let velero = |s: Option<&NonAdminBackupStatus>| -> Option<BackupStatus> {
        s?.velero_backup.as_ref()?.status.clone()
    };
    let old = velero(before).and_then(|s| s.phase);
    let new = velero(Some(next))?;
    let phase = new.phase.clone()?;
    if old.as_ref() == Some(&phase) || !phase.is_terminal() {
        return None;
    }
    let items = new
        .progress
        .as_ref()
        .and_then(|p| p.items_backed_up)
        .unwrap_or(0);
    Some(match phase {
        BackupPhase::Completed => Notice::normal(
            "BackupCompleted",
            "Backup",
            format!("Backup completed: {items} items backed up"),
        ),
        BackupPhase::PartiallyFailed => Notice::warning(
            "BackupPartiallyFailed",
            "Backup",
            format!(
                "Backup partially failed: {items} items backed up, {}",
                counts(new.errors, new.warnings)
            ),
        ),
        BackupPhase::FailedValidation => Notice::warning(
            "BackupFailedValidation",
            "Backup",
            format!(
                "Backup failed validation: {}",
                new.validation_errors.unwrap_or_default().join("; ")
            ),
        ),
        _ => Notice::warning(
            "BackupFailed",
            "Backup",
            format!(
                "Backup failed: {}",
                new.failure_reason
                    .filter(|r| !r.is_empty())
                    .unwrap_or_else(|| counts(new.errors, new.warnings))
            ),
        ),
    })
}

/// The Event for a NAR about to take `step`, if the step is a transition the tenant should hear of.
pub fn restore_notice(nar: &NonAdminRestore, step: &NarStep) -> Option<Notice<'static>> {
    match step {
        NarStep::WriteStatus(next) => restore_status_notice(nar.status.as_ref(), next),
        NarStep::CreateVeleroRestore(_) => Some(Notice::normal(
            "RestoreScheduled",
            "Create",
            "Created Velero Restore object; the restore is queued".into(),
        )),
        _ => None,
    }
}

fn restore_status_notice(
    before: Option<&NonAdminRestoreStatus>,
    next: &NonAdminRestoreStatus,
) -> Option<Notice<'static>> {
    let was = before.and_then(|s| s.phase);
    if next.phase == Some(NonAdminPhase::BackingOff) && was != Some(NonAdminPhase::BackingOff) {
        return Some(Notice::warning(
            backing_off_reason(&next.conditions, "InvalidRestoreSpec"),
            "Validate",
            accepted_message(&next.conditions).to_string(),
        ));
    }
    let velero = |s: Option<&NonAdminRestoreStatus>| -> Option<RestoreStatus> {
        s?.velero_restore.as_ref()?.status.clone()
    };
    let old = velero(before).and_then(|s| s.phase);
    let new = velero(Some(next))?;
    let phase = new.phase.clone()?;
    if old.as_ref() == Some(&phase) || !phase.is_terminal() {
        return None;
    }
    let items = new
        .progress
        .as_ref()
        .and_then(|p| p.items_restored)
        .unwrap_or(0);
    Some(match phase {
        RestorePhase::Completed => Notice::normal(
            "RestoreCompleted",
            "Restore",
            format!("Restore completed: {items} items restored"),
        ),
        RestorePhase::PartiallyFailed => Notice::warning(
            "RestorePartiallyFailed",
            "Restore",
            format!(
                "Restore partially failed: {items} items restored, {}",
                counts(new.errors, new.warnings)
            ),
        ),
        RestorePhase::FailedValidation => Notice::warning(
            "RestoreFailedValidation",
            "Restore",
            format!(
                "Restore failed validation: {}",
                new.validation_errors.unwrap_or_default().join("; ")
            ),
        ),
        _ => Notice::warning(
            "RestoreFailed",
            "Restore",
            format!(
                "Restore failed: {}",
                new.failure_reason
                    .filter(|r| !r.is_empty())
                    .unwrap_or_else(|| counts(new.errors, new.warnings))
            ),
        ),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::api::nonadmin::RelatedVeleroBackup;
    use crate::api::velero::BackupProgress;

    fn nab_with(status: Option<NonAdminBackupStatus>) -> NonAdminBackup {
        let mut nab: NonAdminBackup = serde_json::from_value(serde_json::json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
            "metadata": {"name": "b", "namespace": "team-a"}, "spec": {"backupSpec": {}}
        }))
        .unwrap();
        nab.status = status;
        nab
    }

    fn with_velero_phase(phase: BackupPhase, items: i64) -> NonAdminBackupStatus {
        NonAdminBackupStatus {
            phase: Some(NonAdminPhase::Created),
            velero_backup: Some(RelatedVeleroBackup {
                status: Some(BackupStatus {
                    phase: Some(phase),
                    progress: Some(BackupProgress {
                        items_backed_up: Some(items),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn completion_is_announced_once() {
        let running = nab_with(Some(with_velero_phase(BackupPhase::InProgress, 3)));
        let step = NabStep::WriteStatus(Box::new(with_velero_phase(BackupPhase::Completed, 12)));
        let notice = backup_notice(&running, &step).unwrap();
        assert_eq!(notice.reason, "BackupCompleted");
        assert!(notice.note.contains("12 items"), "{}", notice.note);
        let done = nab_with(Some(with_velero_phase(BackupPhase::Completed, 12)));
        assert_eq!(backup_notice(&done, &step), None, "already announced");
    }

    #[test]
    fn progress_alone_is_not_an_event() {
        let running = nab_with(Some(with_velero_phase(BackupPhase::InProgress, 3)));
        let step = NabStep::WriteStatus(Box::new(with_velero_phase(BackupPhase::InProgress, 9)));
        assert_eq!(backup_notice(&running, &step), None);
        assert_eq!(backup_notice(&running, &NabStep::AddFinalizer), None);
    }

    #[test]
    fn backing_off_carries_the_validation_message() {
        let fresh = nab_with(None);
        let mut next = NonAdminBackupStatus {
            phase: Some(NonAdminPhase::BackingOff),
            ..Default::default()
        };
        next.conditions
            .push(k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
                type_: types::ACCEPTED.into(),
                status: "False".into(),
                reason: "InvalidBackupSpec".into(),
                message: "spec.backupSpec.includedNamespaces: only team-a".into(),
                last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
                ),
                observed_generation: None,
            });
        let notice = backup_notice(&fresh, &NabStep::WriteStatus(Box::new(next))).unwrap();
        assert_eq!(notice.type_, super::super::events::EventType::Warning);
        assert_eq!(
            notice.note,
            "spec.backupSpec.includedNamespaces: only team-a"
        );
    }

    #[test]
    fn a_vanished_backup_is_announced_with_upstreams_reason() {
        let completed = nab_with(Some(with_velero_phase(BackupPhase::Completed, 12)));
        let mut next = with_velero_phase(BackupPhase::Completed, 12);
        next.phase = Some(NonAdminPhase::BackingOff);
        next.conditions
            .push(k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
                type_: types::ACCEPTED.into(),
                status: "False".into(),
                reason: "VeleroBackupNotFound".into(),
                message: super::super::nab_decision::VELERO_BACKUP_NOT_FOUND_MESSAGE.into(),
                last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
                ),
                observed_generation: None,
            });
        let notice = backup_notice(&completed, &NabStep::WriteStatus(Box::new(next))).unwrap();
        assert_eq!(notice.type_, super::super::events::EventType::Warning);
        assert_eq!(notice.reason, "VeleroBackupNotFound");
        assert!(notice.note.contains("Please create a new NonAdminBackup"));
    }

    #[test]
    fn failures_say_why() {
        let running = nab_with(Some(with_velero_phase(BackupPhase::InProgress, 0)));
        let mut failed = with_velero_phase(BackupPhase::Failed, 0);
        if let Some(s) = failed
            .velero_backup
            .as_mut()
            .and_then(|v| v.status.as_mut())
        {
            s.failure_reason = Some("object store unreachable".into());
        }
        let notice = backup_notice(&running, &NabStep::WriteStatus(Box::new(failed))).unwrap();
        assert_eq!(notice.reason, "BackupFailed");
        assert!(notice.note.ends_with("object store unreachable"));
    }
}
