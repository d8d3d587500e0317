//! The NonAdminSchedule reconcile decision, pure: from the NAS, its Velero Schedule (named by
//! the NACUUID), the Velero Backups that schedule made, the NABs of the tenant namespace and the
//! policy's verdict on the template, to the ONE next step. Each scheduled Velero Backup gets the
//! origin labels and a child NonAdminBackup whose status already names that backup, so the NAB
//! controller adopts it instead of creating another. A template without a storage location of
//! its own goes, like a NAB's, to the namespace's place in the shared backup pool: while that is
//! not ready the schedule waits (Queued=False, WaitingForBackupStorage) and no Velero Schedule
//! is made; once ready, the Velero Schedule's template names the entry's location.
use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use uuid::Uuid;

use super::status::{self, set_condition};
use crate::api::nonadmin::conditions::{reasons, types};
use crate::api::nonadmin::labels::{self, finalizers};
use crate::api::nonadmin::{
    NonAdminBackup, NonAdminBackupStatus, NonAdminPhase, NonAdminSchedule, NonAdminScheduleStatus,
    RelatedVeleroBackup, RelatedVeleroSchedule, ScheduledBackup,
};
use crate::api::origin::{OriginKind, origin_annotations, origin_labels};
use crate::api::velero::{Backup, BackupSpec, Schedule, ScheduleSpec};
use crate::policy::nacuuid::nacuuid;
use crate::policy::schedule::{next_run, validate_cron};

/// Annotation on a scheduled Velero Backup once its child NAB was made (it is not made again
/// when the tenant deletes it).
pub const CHILD_CREATED_ANNOTATION: &str = "openshift.io/oadp-nas-child-nab-created";
/// Message of the Accepted condition when the schedule is valid.
pub const ACCEPTED_MESSAGE: &str = "schedule accepted";
/// How often a schedule with running backups is looked at again.
pub const RUNNING_POLL: Duration = Duration::from_secs(1);
/// How often an idle schedule is looked at again.
pub const IDLE_POLL: Duration = Duration::from_secs(30);
/// Message of the Deleting condition (the backups the schedule made are not deleted with it).
pub const DELETING_MESSAGE: &str =
    "removing the Velero Schedule; the backups it already made are kept";
/// How often a schedule waiting for its namespace's backup storage looks again (as a NAB does).
pub const STORAGE_WAIT_POLL: Duration = super::nab_decision::STORAGE_WAIT_POLL;
/// Reason of Queued=True once a schedule that waited for backup storage may run.
pub const STORAGE_READY_REASON: &str = "BackupStorageReady";
/// Message of Queued=True once a schedule that waited for backup storage may run.
pub const STORAGE_READY_MESSAGE: &str =
    "the namespace's backup storage is ready: the schedule's backups are stored there";

/// Event reasons of the NAS controller.
pub mod event_reasons {
    /// The Velero Schedule was created.
    pub const SCHEDULE_CREATED: &str = "ScheduleCreated";
    /// The tenant paused the schedule.
    pub const SCHEDULE_PAUSED: &str = "SchedulePaused";
    /// The tenant unpaused the schedule.
    pub const SCHEDULE_UNPAUSED: &str = "ScheduleUnpaused";
    /// Warning: the schedule or its backup template was refused.
    pub const INVALID_SCHEDULE: &str = "InvalidScheduleSpec";
}

/// Everything the decision depends on.
#[derive(Debug, Clone)]
pub struct NasObservation<'a> {
    /// The NAS as just read.
    pub nas: &'a NonAdminSchedule,
    /// Its Velero Schedule, if it exists.
    pub velero_schedule: Option<&'a Schedule>,
    /// The Velero Backups labelled `velero.io/schedule-name=<nacuuid>`.
    pub velero_backups: &'a [Backup],
    /// The NonAdminBackups of the NAS's namespace.
    pub nabs: &'a [NonAdminBackup],
    /// The policy's verdict on the template: the Velero spec, or the reason it is refused.
    pub verdict: Result<BackupSpec, String>,
    /// The OADP namespace.
    pub oadp_namespace: &'a str,
    /// A fresh UUID, used only when a NACUUID must be generated.
    pub fresh_uuid: Uuid,
    /// Now.
    pub now: Time,
    /// Why the schedule waits for its namespace's place in the shared backup pool, if it does
    /// (the verdict's template is then not routed yet).
    pub storage_wait: Option<String>,
    /// UID of the NAS's namespace, recorded on the scheduled Velero Backups next to their
    /// origin (the backup sync adopts a backup only into the namespace with that UID); `None`
    /// when it was not read.
    pub namespace_uid: Option<&'a str>,
}

/// The one step to take next.
#[derive(Debug, Clone, PartialEq)]
pub enum NasStep {
    /// Write this status.
    WriteStatus(Box<NonAdminScheduleStatus>),
    /// Add the NAS finalizer.
    AddFinalizer,
    /// Remove the NAS finalizer.
    RemoveFinalizer,
    /// Create this Velero Schedule.
    CreateVeleroSchedule(Box<Schedule>),
    /// Replace the Velero Schedule with this one (spec changed).
    UpdateVeleroSchedule(Box<Schedule>),
    /// Delete the Velero Schedule of that name.
    DeleteVeleroSchedule(String),
    /// Merge these labels and annotations into the Velero Backup of that name.
    LabelVeleroBackup {
        /// The Velero Backup.
        name: String,
        /// Labels to set.
        labels: BTreeMap<String, String>,
        /// Annotations to set.
        annotations: BTreeMap<String, String>,
    },
    /// Create this child NAB, then write its status (which names its Velero Backup).
    CreateChildNab(Box<NonAdminBackup>),
    /// Write the status of this existing child NAB (it was created but its status not written).
    WriteChildStatus(Box<NonAdminBackup>),
    /// Delete the child NAB of that name (it took a Velero Backup of its own; remade later).
    DeleteChildNab(String),
    /// Nothing to do until something changes.
    AwaitChange,
    /// Look again after this long.
    RequeueAfter(Duration),
}

/// Whether two statuses differ in anything but condition transition times.
pub fn status_changed(old: Option<&NonAdminScheduleStatus>, new: &NonAdminScheduleStatus) -> bool {
    status::differs_ignoring_transition_times(old, new, |s| &mut s.conditions)
}

fn advance(status: &mut NonAdminScheduleStatus, to: NonAdminPhase) {
    status::advance_phase(&mut status.phase, to);
}

fn has_finalizer(nas: &NonAdminSchedule) -> bool {
    status::has_finalizer(&nas.metadata, finalizers::NON_ADMIN_SCHEDULE)
}

fn nacuuid_of(status: &NonAdminScheduleStatus) -> Option<String> {
    status
        .velero_schedule
        .as_ref()
        .and_then(|v| v.nacuuid.clone())
        .filter(|u| !u.is_empty())
}

/// The Velero Schedule NAC creates for `nas` under `nacuuid`.
pub fn velero_schedule_for(
    nas: &NonAdminSchedule,
    nacuuid: &str,
    oadp_namespace: &str,
    template: BackupSpec,
) -> Schedule {
    let mut schedule = Schedule::new(nacuuid, desired_spec(nas, template));
    schedule.metadata.namespace = Some(oadp_namespace.to_string());
    schedule.metadata.labels = Some(origin_labels(OriginKind::NonAdminSchedule, nacuuid));
    schedule.metadata.annotations = Some(nas_annotations(nas));
    schedule
}

fn desired_spec(nas: &NonAdminSchedule, template: BackupSpec) -> ScheduleSpec {
    ScheduleSpec {
        template,
        schedule: nas.spec.schedule.clone(),
        paused: nas.spec.paused,
        skip_immediately: nas.spec.skip_immediately,
        ..Default::default()
    }
}

fn nas_annotations(nas: &NonAdminSchedule) -> BTreeMap<String, String> {
    origin_annotations(
        OriginKind::NonAdminSchedule,
        nas.metadata.namespace.as_deref().unwrap_or_default(),
        nas.metadata.name.as_deref().unwrap_or_default(),
    )
}

/// Longest object name (a DNS-1123 subdomain).
const MAX_OBJECT_NAME_LENGTH: usize = 253;

/// Name of the child NAB of a scheduled Velero Backup `<nacuuid>-<timestamp>`:
/// `<nas name>-<timestamp>`. A schedule name too long for that (schedule names may use all 253
/// characters) is cut and marked with six hex characters of its SHA-256 so that two long names
/// with the same beginning still give different children.
pub fn child_name(nas: &NonAdminSchedule, nacuuid: &str, velero_backup: &str) -> String {
    let suffix = velero_backup
        .strip_prefix(nacuuid)
        .map(|s| s.trim_start_matches('-'))
        .filter(|s| !s.is_empty())
        .unwrap_or(velero_backup);
    let name = nas.metadata.name.as_deref().unwrap_or_default();
    let full = format!("{name}-{suffix}");
    if full.len() <= MAX_OBJECT_NAME_LENGTH {
        return full;
    }
    use sha2::Digest;
    let digest = hex::encode(sha2::Sha256::digest(name.as_bytes()));
    let keep = MAX_OBJECT_NAME_LENGTH.saturating_sub(suffix.len() + 1 + 7);
    let mut end = keep.min(name.len());
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    let head = name[..end].trim_end_matches(['-', '.']);
    format!("{head}-{}-{suffix}", &digest[..6])
}

/// The NACUUID of the child NAB of `backup`: `<namespace>-<child name>-<backup uid>` cut to
/// fit a label value, so it is the same on every pass (None when the uid is not a UUID).
pub fn child_nacuuid(nas: &NonAdminSchedule, nacuuid: &str, backup: &Backup) -> Option<String> {
    let uid = Uuid::parse_str(backup.metadata.uid.as_deref()?).ok()?;
    let vb_name = backup.metadata.name.clone().unwrap_or_default();
    Some(crate::policy::nacuuid::nacuuid(
        nas.metadata.namespace.as_deref().unwrap_or_default(),
        &child_name(nas, nacuuid, &vb_name),
        &uid,
    ))
}

/// The child NAB mirroring `backup` (its status names the Velero Backup, so it is adopted).
pub fn child_nab(
    nas: &NonAdminSchedule,
    nacuuid: &str,
    backup: &Backup,
    child_id: &str,
    oadp_namespace: &str,
) -> NonAdminBackup {
    let vb_name = backup.metadata.name.clone().unwrap_or_default();
    let mut nab = NonAdminBackup::new(
        &child_name(nas, nacuuid, &vb_name),
        crate::api::nonadmin::NonAdminBackupSpec {
            backup_spec: nas.spec.template.backup_spec.clone(),
            ..Default::default()
        },
    );
    nab.metadata.namespace = nas.metadata.namespace.clone();
    let mut l = BTreeMap::new();
    l.insert(
        labels::NAB_SYNCED_FROM_NACUUID.to_string(),
        child_id.to_string(),
    );
    l.insert(labels::NAS_ORIGIN_NACUUID.to_string(), nacuuid.to_string());
    nab.metadata.labels = Some(l);
    nab.metadata.annotations = Some(nas_annotations(nas));
    nab.status = Some(child_status(child_id, &vb_name, oadp_namespace));
    nab
}

fn child_status(child_id: &str, vb_name: &str, oadp_namespace: &str) -> NonAdminBackupStatus {
    NonAdminBackupStatus {
        velero_backup: Some(RelatedVeleroBackup {
            nacuuid: Some(child_id.to_string()),
            name: Some(vb_name.to_string()),
            namespace: Some(oadp_namespace.to_string()),
            ..Default::default()
        }),
        phase: Some(NonAdminPhase::New),
        ..Default::default()
    }
}

fn backup_labels(nacuuid: &str, child_id: &str) -> BTreeMap<String, String> {
    let mut l = origin_labels(OriginKind::NonAdminSchedule, nacuuid);
    l.extend(origin_labels(OriginKind::NonAdminBackup, child_id));
    l
}

fn backup_annotations(
    nas: &NonAdminSchedule,
    child: &str,
    namespace_uid: Option<&str>,
) -> BTreeMap<String, String> {
    let mut a = nas_annotations(nas);
    if let Some(uid) = namespace_uid.filter(|uid| !uid.is_empty()) {
        a.insert(
            labels::NAB_ORIGIN_NAMESPACE_UID_ANNOTATION.to_string(),
            uid.to_string(),
        );
    }
    a.extend(origin_annotations(
        OriginKind::NonAdminBackup,
        nas.metadata.namespace.as_deref().unwrap_or_default(),
        child,
    ));
    a
}

fn missing(have: Option<&BTreeMap<String, String>>, want: &BTreeMap<String, String>) -> bool {
    want.iter()
        .any(|(k, v)| have.and_then(|h| h.get(k)) != Some(v))
}

/// The step for one scheduled Velero Backup, if it needs one.
fn backup_step(obs: &NasObservation<'_>, nacuuid: &str, backup: &Backup) -> Option<NasStep> {
    let nas = obs.nas;
    let vb_name = backup.metadata.name.clone().unwrap_or_default();
    let child = child_name(nas, nacuuid, &vb_name);
    let child_id = child_nacuuid(nas, nacuuid, backup)?;
    let want_labels = backup_labels(nacuuid, &child_id);
    let want_annotations = backup_annotations(nas, &child, obs.namespace_uid);
    if missing(backup.metadata.labels.as_ref(), &want_labels)
        || missing(backup.metadata.annotations.as_ref(), &want_annotations)
    {
        return Some(NasStep::LabelVeleroBackup {
            name: vb_name,
            labels: want_labels,
            annotations: want_annotations,
        });
    }
    let marked = backup
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(CHILD_CREATED_ANNOTATION));
    let mark = || NasStep::LabelVeleroBackup {
        name: vb_name.clone(),
        labels: BTreeMap::new(),
        annotations: BTreeMap::from([(CHILD_CREATED_ANNOTATION.to_string(), child.clone())]),
    };
    let existing = obs
        .nabs
        .iter()
        .find(|n| n.metadata.name.as_deref() == Some(child.as_str()));
    match existing {
        None if marked => None,
        None => Some(NasStep::CreateChildNab(Box::new(child_nab(
            nas,
            nacuuid,
            backup,
            &child_id,
            obs.oadp_namespace,
        )))),
        Some(nab) => {
            let ours = nab
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(labels::NAB_SYNCED_FROM_NACUUID))
                == Some(&child_id);
            if !ours {
                // A tenant's own NAB holds the name: leave it, never make the child.
                return (!marked).then(mark);
            }
            if nab.metadata.deletion_timestamp.is_some() {
                return None;
            }
            let its = nab
                .status
                .as_ref()
                .and_then(|s| s.velero_backup.as_ref())
                .and_then(|v| v.nacuuid.clone())
                .filter(|u| !u.is_empty());
            match its {
                None => {
                    let mut next = nab.clone();
                    let mut status = next.status.clone().unwrap_or_default();
                    let wanted = child_status(&child_id, &vb_name, obs.oadp_namespace);
                    status.velero_backup = wanted.velero_backup;
                    if status.phase.is_none() {
                        status.phase = wanted.phase;
                    }
                    next.status = Some(status);
                    Some(NasStep::WriteChildStatus(Box::new(next)))
                }
                Some(u) if u != child_id => Some(NasStep::DeleteChildNab(child)),
                Some(_) => (!marked).then(mark),
            }
        }
    }
}

fn scheduled_backup(nas: &NonAdminSchedule, nacuuid: &str, backup: &Backup) -> ScheduledBackup {
    let vb_name = backup.metadata.name.clone().unwrap_or_default();
    let status = backup.status.as_ref();
    ScheduledBackup {
        name: child_name(nas, nacuuid, &vb_name),
        velero_backup_name: vb_name,
        phase: status.and_then(|s| s.phase.clone()),
        start_timestamp: status.and_then(|s| s.start_timestamp.clone()),
        completion_timestamp: status.and_then(|s| s.completion_timestamp.clone()),
        expiration: status.and_then(|s| s.expiration.clone()),
    }
}

/// A deleted NAS: says so in its status (phase Deleting, Deleting=True/DeletionPending) while
/// its finalizer holds it, then deletes the Velero Schedule, then removes the finalizer.
fn decide_delete(
    obs: &NasObservation<'_>,
    mut status: NonAdminScheduleStatus,
    current: Option<&NonAdminScheduleStatus>,
) -> NasStep {
    let nas = obs.nas;
    // Without our finalizer the object may vanish any moment: nothing to report on then.
    if has_finalizer(nas) {
        advance(&mut status, NonAdminPhase::Deleting);
        set_condition(
            &mut status.conditions,
            types::DELETING,
            true,
            reasons::DELETION_PENDING,
            DELETING_MESSAGE,
            &obs.now,
        );
        status.next_run = None;
        if status_changed(current, &status) {
            return NasStep::WriteStatus(Box::new(status));
        }
    }
    if let Some(s) = obs.velero_schedule {
        return NasStep::DeleteVeleroSchedule(s.metadata.name.clone().unwrap_or_default());
    }
    if has_finalizer(nas) {
        return NasStep::RemoveFinalizer;
    }
    NasStep::AwaitChange
}

/// Says in the Queued condition whether the schedule waits for backup storage: False with the
/// route's message while it does; True once it no longer does, for a schedule that waited
/// (schedules that never waited do not get the condition).
fn set_storage_condition(status: &mut NonAdminScheduleStatus, wait: Option<&str>, now: &Time) {
    match wait {
        Some(message) => set_condition(
            &mut status.conditions,
            types::QUEUED,
            false,
            crate::api::nonadmin::entry_conditions::REASON_WAITING_FOR_BACKUP_STORAGE,
            message,
            now,
        ),
        None if status.conditions.iter().any(|c| c.type_ == types::QUEUED) => set_condition(
            &mut status.conditions,
            types::QUEUED,
            true,
            STORAGE_READY_REASON,
            STORAGE_READY_MESSAGE,
            now,
        ),
        None => {}
    }
}

fn accepted_refusal(status: Option<&NonAdminScheduleStatus>) -> Option<&str> {
    status?
        .conditions
        .iter()
        .find(|c| c.type_ == types::ACCEPTED && c.status == "False")
        .map(|c| c.message.as_str())
}

/// The Event worth publishing once `step` was applied to `nas` (as observed, with its Velero
/// Schedule `velero_schedule`), if any: created, paused or unpaused by the tenant, refused.
/// Notes name only the NAS (the Velero Schedule's name is another namespace's object).
pub fn notice(
    nas: &NonAdminSchedule,
    velero_schedule: Option<&Schedule>,
    step: &NasStep,
) -> Option<super::events::Notice<'static>> {
    use super::events::Notice;
    let name = nas.metadata.name.as_deref().unwrap_or_default();
    match step {
        NasStep::CreateVeleroSchedule(s) => Some(Notice::normal(
            event_reasons::SCHEDULE_CREATED,
            "CreateSchedule",
            format!(
                "created the Velero Schedule of NonAdminSchedule {name} (cron {:?}{})",
                s.spec.schedule,
                if s.spec.paused == Some(true) {
                    ", paused"
                } else {
                    ""
                }
            ),
        )),
        NasStep::UpdateVeleroSchedule(next) => {
            let was = velero_schedule.is_some_and(|s| s.spec.paused == Some(true));
            let now = next.spec.paused == Some(true);
            let asked = nas.spec.paused == Some(true);
            // A pause because the template became invalid is told by the refusal's Event.
            match (was, now, asked) {
                (false, true, true) => Some(Notice::normal(
                    event_reasons::SCHEDULE_PAUSED,
                    "PauseSchedule",
                    format!(
                        "NonAdminSchedule {name} is paused: no backups run until it is unpaused"
                    ),
                )),
                (true, false, false) => Some(Notice::normal(
                    event_reasons::SCHEDULE_UNPAUSED,
                    "UnpauseSchedule",
                    format!(
                        "the Velero Schedule of NonAdminSchedule {name} is no longer paused: backups run on its schedule again"
                    ),
                )),
                _ => None,
            }
        }
        NasStep::WriteStatus(new) => {
            let refused = accepted_refusal(Some(new))?;
            if accepted_refusal(nas.status.as_ref()) == Some(refused) {
                return None;
            }
            Some(Notice::warning(
                event_reasons::INVALID_SCHEDULE,
                "Validate",
                format!("NonAdminSchedule {name} was refused: {refused}"),
            ))
        }
        _ => None,
    }
}

/// The `skipImmediately` NAC must write on the Velero Schedule, if any (pure). Velero treats it
/// as a one-shot: it writes `false` where it is unset and sets a `true` back to `false` once it
/// skipped a run (`schedule_controller.go`). So a Velero `false` against the tenant's `true` is
/// the skip done, not drift; only a pending `true` the tenant no longer wants is undone, and the
/// tenant's `true` is armed again when the schedule is being unpaused.
pub fn skip_immediately_to_write(
    velero: Option<bool>,
    wanted: Option<bool>,
    unpausing: bool,
) -> Option<bool> {
    let velero = velero.unwrap_or(false);
    let wanted = wanted.unwrap_or(false);
    match (velero, wanted) {
        (true, false) => Some(false),
        (false, true) if unpausing => Some(true),
        _ => None,
    }
}

/// Decides the next step for a NonAdminSchedule.
pub fn decide(obs: &NasObservation<'_>) -> NasStep {
    let nas = obs.nas;
    let current = nas.status.clone();
    let mut status = current.clone().unwrap_or_default();

    if nas.metadata.deletion_timestamp.is_some() {
        return decide_delete(obs, status, current.as_ref());
    }

    let verdict = validate_cron(&nas.spec.schedule)
        .map_err(|violation| violation.to_string())
        .and(obs.verdict.clone());
    let Some(id) = nacuuid_of(&status) else {
        if status.phase.is_none() {
            status.phase = Some(NonAdminPhase::New);
        }
        return match verdict {
            Err(message) => {
                advance(&mut status, NonAdminPhase::BackingOff);
                set_condition(
                    &mut status.conditions,
                    types::ACCEPTED,
                    false,
                    reasons::INVALID_SCHEDULE_SPEC,
                    &message,
                    &obs.now,
                );
                if status_changed(current.as_ref(), &status) {
                    NasStep::WriteStatus(Box::new(status))
                } else {
                    NasStep::AwaitChange
                }
            }
            Ok(_) => {
                set_condition(
                    &mut status.conditions,
                    types::ACCEPTED,
                    true,
                    reasons::SCHEDULE_ACCEPTED,
                    ACCEPTED_MESSAGE,
                    &obs.now,
                );
                let id = nacuuid(
                    nas.metadata.namespace.as_deref().unwrap_or_default(),
                    nas.metadata.name.as_deref().unwrap_or_default(),
                    &obs.fresh_uuid,
                );
                // The NACUUID is persisted before anything is created.
                status.velero_schedule = Some(RelatedVeleroSchedule {
                    nacuuid: Some(id.clone()),
                    name: Some(id),
                    namespace: Some(obs.oadp_namespace.to_string()),
                    status: None,
                });
                NasStep::WriteStatus(Box::new(status))
            }
        };
    };
    if !has_finalizer(nas) {
        return NasStep::AddFinalizer;
    }
    let template = match verdict {
        Err(message) => {
            // A spec made invalid after creation: no more runs with it until it is fixed.
            if let Some(s) = obs.velero_schedule
                && s.spec.paused != Some(true)
            {
                let mut paused = s.clone();
                paused.spec.paused = Some(true);
                return NasStep::UpdateVeleroSchedule(Box::new(paused));
            }
            advance(&mut status, NonAdminPhase::BackingOff);
            set_condition(
                &mut status.conditions,
                types::ACCEPTED,
                false,
                reasons::INVALID_SCHEDULE_SPEC,
                &message,
                &obs.now,
            );
            if status_changed(current.as_ref(), &status) {
                return NasStep::WriteStatus(Box::new(status));
            }
            return NasStep::AwaitChange;
        }
        Ok(t) => t,
    };
    let storage_wait = obs.storage_wait.as_deref();
    let Some(schedule) = obs.velero_schedule else {
        if let Some(message) = storage_wait {
            // Never Velero's default location instead: the pool is where these backups go.
            set_storage_condition(&mut status, Some(message), &obs.now);
            if status_changed(current.as_ref(), &status) {
                return NasStep::WriteStatus(Box::new(status));
            }
            return NasStep::RequeueAfter(STORAGE_WAIT_POLL);
        }
        return NasStep::CreateVeleroSchedule(Box::new(velero_schedule_for(
            nas,
            &id,
            obs.oadp_namespace,
            template,
        )));
    };
    let mut template = template;
    if storage_wait.is_some() {
        // The existing Velero Schedule keeps its location until the entry is ready (a pause
        // or a new cron still applies at once).
        template
            .storage_location
            .clone_from(&schedule.spec.template.storage_location);
    }
    let want = desired_spec(nas, template);
    let skip = skip_immediately_to_write(
        schedule.spec.skip_immediately,
        want.skip_immediately,
        schedule.spec.paused.unwrap_or(false) && !want.paused.unwrap_or(false),
    );
    if schedule.spec.template != want.template
        || schedule.spec.schedule != want.schedule
        || schedule.spec.paused != want.paused
        || skip.is_some()
    {
        let mut next = schedule.clone();
        next.spec.template = want.template;
        next.spec.schedule = want.schedule;
        next.spec.paused = want.paused;
        if let Some(skip) = skip {
            next.spec.skip_immediately = Some(skip);
        }
        return NasStep::UpdateVeleroSchedule(Box::new(next));
    }

    let mut backups: Vec<&Backup> = obs
        .velero_backups
        .iter()
        .filter(|b| b.metadata.deletion_timestamp.is_none())
        .collect();
    // `<nacuuid>-YYYYMMDDhhmmss`: newest first by name.
    backups.sort_by(|a, b| b.metadata.name.cmp(&a.metadata.name));
    for backup in backups.iter().rev() {
        if let Some(step) = backup_step(obs, &id, backup) {
            return step;
        }
    }

    advance(&mut status, NonAdminPhase::Created);
    set_condition(
        &mut status.conditions,
        types::ACCEPTED,
        true,
        reasons::SCHEDULE_ACCEPTED,
        ACCEPTED_MESSAGE,
        &obs.now,
    );
    set_storage_condition(&mut status, storage_wait, &obs.now);
    if let Some(related) = status.velero_schedule.as_mut() {
        related.status = schedule.status.clone();
    }
    status.recent_backups = backups
        .iter()
        .take(NonAdminScheduleStatus::RECENT_BACKUPS_LIMIT)
        .map(|b| scheduled_backup(nas, &id, b))
        .collect();
    status.last_backup = status.recent_backups.first().cloned();
    let paused = nas.spec.paused == Some(true);
    status.next_run = if paused {
        None
    } else {
        let base = schedule
            .status
            .as_ref()
            .and_then(|s| s.last_backup.clone())
            .or_else(|| schedule.metadata.creation_timestamp.clone())
            .unwrap_or_else(|| obs.now.clone());
        next_run(&nas.spec.schedule, &base)
    };
    if status_changed(current.as_ref(), &status) {
        return NasStep::WriteStatus(Box::new(status));
    }
    let running = backups.iter().any(|b| {
        !b.status
            .as_ref()
            .and_then(|s| s.phase.as_ref())
            .is_some_and(|p| p.is_terminal())
    });
    if running {
        NasStep::RequeueAfter(RUNNING_POLL)
    } else if storage_wait.is_some() {
        NasStep::RequeueAfter(STORAGE_WAIT_POLL)
    } else if paused {
        NasStep::AwaitChange
    } else {
        NasStep::RequeueAfter(IDLE_POLL)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// Velero consumes `skipImmediately`: its reset of the tenant's `true` is not drift.
    #[test]
    fn skip_immediately_is_a_one_shot_as_velero_treats_it() {
        assert_eq!(skip_immediately_to_write(None, None, false), None);
        assert_eq!(skip_immediately_to_write(Some(false), None, false), None);
        assert_eq!(
            skip_immediately_to_write(Some(false), Some(true), false),
            None
        );
        assert_eq!(
            skip_immediately_to_write(Some(true), Some(true), false),
            None
        );
        assert_eq!(
            skip_immediately_to_write(Some(true), None, false),
            Some(false)
        );
        assert_eq!(
            skip_immediately_to_write(Some(false), Some(true), true),
            Some(true)
        );
    }
    use serde_json::json;

    const ID: &str = "team-a-hourly-00000000-0000-4000-8000-000000000000";

    fn time(secs: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(1_800_000_000 + secs).unwrap())
    }

    fn nas(
        extra_spec: serde_json::Value,
        status: serde_json::Value,
        finalizer: bool,
    ) -> NonAdminSchedule {
        let mut spec = json!({"schedule": "0 * * * *", "template": {"backupSpec": {}}});
        if let (Some(s), Some(e)) = (spec.as_object_mut(), extra_spec.as_object()) {
            for (k, v) in e {
                s.insert(k.clone(), v.clone());
            }
        }
        let finalizers: Vec<&str> = if finalizer {
            vec![finalizers::NON_ADMIN_SCHEDULE]
        } else {
            vec![]
        };
        serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminSchedule",
            "metadata": {"name": "hourly", "namespace": "team-a", "finalizers": finalizers},
            "spec": spec, "status": status
        }))
        .unwrap()
    }

    fn with_id() -> serde_json::Value {
        json!({"veleroSchedule": {"nacuuid": ID, "name": ID, "namespace": "openshift-adp"}, "phase": "New"})
    }

    fn valid() -> Result<BackupSpec, String> {
        Ok(BackupSpec {
            included_namespaces: Some(vec!["team-a".into()]),
            ..Default::default()
        })
    }

    fn obs<'a>(
        nas: &'a NonAdminSchedule,
        schedule: Option<&'a Schedule>,
        backups: &'a [Backup],
        nabs: &'a [NonAdminBackup],
        verdict: Result<BackupSpec, String>,
    ) -> NasObservation<'a> {
        NasObservation {
            nas,
            velero_schedule: schedule,
            velero_backups: backups,
            nabs,
            verdict,
            oadp_namespace: "openshift-adp",
            fresh_uuid: Uuid::nil(),
            now: time(0),
            storage_wait: None,
            namespace_uid: Some(NS_UID),
        }
    }

    const NS_UID: &str = "aaaaaaaa-1111-2222-3333-444444444444";

    fn status_of(step: NasStep) -> NonAdminScheduleStatus {
        match step {
            NasStep::WriteStatus(s) => *s,
            other => panic!("expected a status write, got {other:?}"),
        }
    }

    fn schedule_for(n: &NonAdminSchedule) -> Schedule {
        let mut s = velero_schedule_for(n, ID, "openshift-adp", valid().unwrap());
        s.metadata.creation_timestamp = Some(time(0));
        s
    }

    fn vb(stamp: &str, uid_tail: u32, phase: &str) -> Backup {
        serde_json::from_value(json!({
            "apiVersion": "velero.io/v1", "kind": "Backup",
            "metadata": {"name": format!("{ID}-{stamp}"), "namespace": "openshift-adp",
                          "uid": format!("00000000-0000-4000-8000-{uid_tail:012}"),
                          "labels": {"velero.io/schedule-name": ID}},
            "spec": {}, "status": {"phase": phase}
        }))
        .unwrap()
    }

    /// A backup as the controller leaves it: labelled, annotated, child made.
    fn settled(n: &NonAdminSchedule, b: &Backup) -> Backup {
        let mut b = b.clone();
        let name = b.metadata.name.clone().unwrap();
        let child = child_name(n, ID, &name);
        let id = child_nacuuid(n, ID, &b).unwrap();
        b.metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .extend(backup_labels(ID, &id));
        let a = b.metadata.annotations.get_or_insert_with(BTreeMap::new);
        a.extend(backup_annotations(n, &child, Some(NS_UID)));
        a.insert(CHILD_CREATED_ANNOTATION.into(), child);
        b
    }

    #[test]
    fn deletion_says_deleting_then_removes_the_velero_schedule_then_the_finalizer() {
        let mut n = nas(json!({}), with_id(), true);
        n.metadata.deletion_timestamp = Some(time(0));
        let s = schedule_for(&n);
        // First the status, while the Velero Schedule still exists.
        let st = status_of(decide(&obs(&n, Some(&s), &[], &[], valid())));
        assert_eq!(st.phase, Some(NonAdminPhase::Deleting));
        let c = st
            .conditions
            .iter()
            .find(|c| c.type_ == types::DELETING)
            .unwrap();
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            ("True", reasons::DELETION_PENDING, DELETING_MESSAGE)
        );
        assert!(st.next_run.is_none());
        assert_eq!(
            st.velero_schedule.as_ref().unwrap().nacuuid.as_deref(),
            Some(ID),
            "the status still names what is being removed"
        );
        n.status = Some(st);
        assert_eq!(
            decide(&obs(&n, Some(&s), &[], &[], valid())),
            NasStep::DeleteVeleroSchedule(ID.into())
        );
        assert_eq!(
            decide(&obs(&n, None, &[], &[], valid())),
            NasStep::RemoveFinalizer
        );
        n.metadata.finalizers = None;
        assert_eq!(
            decide(&obs(&n, None, &[], &[], valid())),
            NasStep::AwaitChange
        );
    }

    #[test]
    fn a_deleted_schedule_without_our_finalizer_only_removes_the_velero_schedule() {
        let mut n = nas(json!({}), with_id(), false);
        n.metadata.deletion_timestamp = Some(time(0));
        let s = schedule_for(&n);
        assert_eq!(
            decide(&obs(&n, Some(&s), &[], &[], valid())),
            NasStep::DeleteVeleroSchedule(ID.into())
        );
        assert_eq!(
            decide(&obs(&n, None, &[], &[], valid())),
            NasStep::AwaitChange
        );
    }

    #[test]
    fn events_mark_creation_tenant_pauses_and_refusals_only() {
        use crate::controllers::events::EventType;
        let n = nas(json!({}), with_id(), true);
        let created = decide(&obs(&n, None, &[], &[], valid()));
        let e = notice(&n, None, &created).unwrap();
        assert_eq!(e.reason, event_reasons::SCHEDULE_CREATED);
        assert!(
            e.note.contains("hourly") && e.note.contains("0 * * * *"),
            "{}",
            e.note
        );
        assert!(!e.note.contains(ID), "the Velero Schedule's name stays out");

        let s = schedule_for(&n);
        let paused = nas(json!({"paused": true}), with_id(), true);
        let step = decide(&obs(&paused, Some(&s), &[], &[], valid()));
        let e = notice(&paused, Some(&s), &step).unwrap();
        assert_eq!(e.reason, event_reasons::SCHEDULE_PAUSED);
        let NasStep::UpdateVeleroSchedule(ps) = step else {
            panic!("expected the pause")
        };
        let step = decide(&obs(&n, Some(&ps), &[], &[], valid()));
        let e = notice(&n, Some(&ps), &step).unwrap();
        assert_eq!(e.reason, event_reasons::SCHEDULE_UNPAUSED);

        // An invalid template pauses the Velero Schedule silently; the refusal is the Event.
        let refused = Err("spec.backupSpec.includedNamespaces: team-b".to_string());
        let step = decide(&obs(&n, Some(&s), &[], &[], refused.clone()));
        assert!(matches!(step, NasStep::UpdateVeleroSchedule(_)));
        assert_eq!(notice(&n, Some(&s), &step), None);
        let step = decide(&obs(&n, Some(&ps), &[], &[], refused.clone()));
        let e = notice(&n, Some(&ps), &step).unwrap();
        assert_eq!(e.reason, event_reasons::INVALID_SCHEDULE);
        assert_eq!(e.type_, EventType::Warning);
        assert!(e.note.contains("includedNamespaces"), "{}", e.note);
        // Once written, the same refusal is no new Event.
        let mut told = n.clone();
        told.status = Some(status_of(step));
        let again = NasStep::WriteStatus(Box::new(told.status.clone().unwrap()));
        assert_eq!(notice(&told, Some(&ps), &again), None);
        assert_eq!(notice(&n, None, &NasStep::AwaitChange), None);
    }

    #[test]
    fn invalid_template_or_cron_backs_off_with_the_message() {
        let mut n = nas(json!({}), json!(null), false);
        let refused = Err("spec.backupSpec.includedNamespaces: team-b".to_string());
        let s = status_of(decide(&obs(&n, None, &[], &[], refused.clone())));
        assert_eq!(s.phase, Some(NonAdminPhase::BackingOff));
        let c = &s.conditions[0];
        assert_eq!((c.type_.as_str(), c.status.as_str()), ("Accepted", "False"));
        assert_eq!(c.reason, reasons::INVALID_SCHEDULE_SPEC);
        assert!(c.message.contains("includedNamespaces"));
        assert!(s.velero_schedule.is_none());
        n.status = Some(s);
        assert_eq!(
            decide(&obs(&n, None, &[], &[], refused)),
            NasStep::AwaitChange
        );
        let bad_cron = nas(json!({"schedule": "every day"}), json!(null), false);
        let s = status_of(decide(&obs(&bad_cron, None, &[], &[], valid())));
        assert!(s.conditions[0].message.contains("spec.schedule"), "{s:?}");
    }

    #[test]
    fn valid_schedule_gets_its_nacuuid_then_finalizer_then_velero_schedule() {
        let n = nas(
            json!({"paused": false, "skipImmediately": true}),
            json!(null),
            false,
        );
        let s = status_of(decide(&obs(&n, None, &[], &[], valid())));
        let id = s.velero_schedule.as_ref().unwrap().nacuuid.clone().unwrap();
        assert!(id.starts_with("team-a-hourly-"), "{id}");
        assert_eq!(s.conditions[0].reason, reasons::SCHEDULE_ACCEPTED);
        let mut n = nas(
            json!({"paused": false, "skipImmediately": true}),
            with_id(),
            false,
        );
        assert_eq!(
            decide(&obs(&n, None, &[], &[], valid())),
            NasStep::AddFinalizer
        );
        n.metadata.finalizers = Some(vec![finalizers::NON_ADMIN_SCHEDULE.into()]);
        let NasStep::CreateVeleroSchedule(created) = decide(&obs(&n, None, &[], &[], valid()))
        else {
            panic!("expected a create")
        };
        assert_eq!(created.metadata.name.as_deref(), Some(ID));
        assert_eq!(created.metadata.namespace.as_deref(), Some("openshift-adp"));
        assert_eq!(created.spec.schedule, "0 * * * *");
        assert_eq!(created.spec.paused, Some(false));
        assert_eq!(created.spec.skip_immediately, Some(true));
        assert_eq!(
            created.spec.template.included_namespaces,
            Some(vec!["team-a".into()])
        );
        let l = created.metadata.labels.unwrap();
        assert_eq!(l[labels::NAS_ORIGIN_NACUUID], ID);
        assert_eq!(l[labels::OADP], "True");
        let a = created.metadata.annotations.unwrap();
        assert_eq!(a[labels::NAS_ORIGIN_NAME_ANNOTATION], "hourly");
        assert_eq!(a[labels::NAS_ORIGIN_NAMESPACE_ANNOTATION], "team-a");
    }

    #[test]
    fn spec_changes_update_the_velero_schedule_and_invalid_ones_pause_it() {
        let n = nas(json!({}), with_id(), true);
        let s = schedule_for(&n);
        let paused = nas(json!({"paused": true}), with_id(), true);
        let NasStep::UpdateVeleroSchedule(u) = decide(&obs(&paused, Some(&s), &[], &[], valid()))
        else {
            panic!("expected an update")
        };
        assert_eq!(u.spec.paused, Some(true));
        let refused = Err("nope".to_string());
        let NasStep::UpdateVeleroSchedule(u) =
            decide(&obs(&n, Some(&s), &[], &[], refused.clone()))
        else {
            panic!("expected a pause")
        };
        assert_eq!(u.spec.paused, Some(true));
        let st = status_of(decide(&obs(&n, Some(&u), &[], &[], refused)));
        assert_eq!(st.conditions[0].status, "False");
        assert_eq!(st.phase, Some(NonAdminPhase::BackingOff));
    }

    #[test]
    fn scheduled_backups_are_labelled_then_get_a_child_then_are_marked() {
        let n = nas(json!({}), with_id(), true);
        let s = schedule_for(&n);
        let raw = vb("20270101000000", 1, "InProgress");
        let NasStep::LabelVeleroBackup {
            name,
            labels: l,
            annotations,
        } = decide(&obs(&n, Some(&s), std::slice::from_ref(&raw), &[], valid()))
        else {
            panic!("expected labelling")
        };
        assert_eq!(name, format!("{ID}-20270101000000"));
        let child_id = child_nacuuid(&n, ID, &raw).unwrap();
        assert!(child_id.len() <= 63);
        assert_eq!(l[labels::NAB_ORIGIN_NACUUID], child_id);
        assert_eq!(l[labels::NAS_ORIGIN_NACUUID], ID);
        assert_eq!(
            annotations[labels::NAB_ORIGIN_NAME_ANNOTATION],
            "hourly-20270101000000"
        );
        assert_eq!(annotations[labels::NAS_ORIGIN_NAME_ANNOTATION], "hourly");
        // The namespace's identity goes with the origin, for the backup sync.
        assert_eq!(
            annotations[labels::NAB_ORIGIN_NAMESPACE_UID_ANNOTATION],
            NS_UID
        );

        let mut labelled = raw.clone();
        labelled.metadata.labels.as_mut().unwrap().extend(l);
        labelled.metadata.annotations = Some(annotations);
        let step = decide(&obs(
            &n,
            Some(&s),
            std::slice::from_ref(&labelled),
            &[],
            valid(),
        ));
        let NasStep::CreateChildNab(child) = step else {
            panic!("expected a child, got {step:?}")
        };
        assert_eq!(
            child.metadata.name.as_deref(),
            Some("hourly-20270101000000")
        );
        assert_eq!(child.metadata.namespace.as_deref(), Some("team-a"));
        assert_eq!(
            child.metadata.labels.as_ref().unwrap()[labels::NAB_SYNCED_FROM_NACUUID],
            child_id
        );
        let related = child
            .status
            .as_ref()
            .unwrap()
            .velero_backup
            .clone()
            .unwrap();
        assert_eq!(related.nacuuid.as_deref(), Some(child_id.as_str()));
        assert_eq!(related.name, labelled.metadata.name);

        // Created but its status not written (crash): written now.
        let mut bare = (*child).clone();
        bare.status = None;
        let step = decide(&obs(
            &n,
            Some(&s),
            std::slice::from_ref(&labelled),
            std::slice::from_ref(&bare),
            valid(),
        ));
        let NasStep::WriteChildStatus(w) = step else {
            panic!("expected a child status write, got {step:?}")
        };
        assert_eq!(
            w.status.unwrap().velero_backup.unwrap().nacuuid,
            Some(child_id.clone())
        );

        // Adopted: the backup is marked.
        let step = decide(&obs(
            &n,
            Some(&s),
            std::slice::from_ref(&labelled),
            std::slice::from_ref(&*child),
            valid(),
        ));
        let NasStep::LabelVeleroBackup {
            annotations,
            labels: l,
            ..
        } = step
        else {
            panic!("expected the mark, got {step:?}")
        };
        assert!(l.is_empty());
        assert_eq!(
            annotations[CHILD_CREATED_ANNOTATION],
            "hourly-20270101000000"
        );

        // The NAB controller gave it a NACUUID of its own: it is deleted (and made again).
        let mut stray = (*child).clone();
        stray
            .status
            .as_mut()
            .unwrap()
            .velero_backup
            .as_mut()
            .unwrap()
            .nacuuid = Some("other".into());
        assert_eq!(
            decide(&obs(
                &n,
                Some(&s),
                std::slice::from_ref(&labelled),
                std::slice::from_ref(&stray),
                valid()
            )),
            NasStep::DeleteChildNab("hourly-20270101000000".into())
        );
    }

    #[test]
    fn deleted_children_are_not_remade_and_foreign_nabs_are_left_alone() {
        let n = nas(json!({}), with_id(), true);
        let s = schedule_for(&n);
        let done = settled(&n, &vb("20270101000000", 1, "Completed"));
        // Marked and the child is gone (the tenant deleted it): no step for it, status only.
        let st = status_of(decide(&obs(
            &n,
            Some(&s),
            std::slice::from_ref(&done),
            &[],
            valid(),
        )));
        assert_eq!(st.recent_backups.len(), 1);
        // A tenant's own NAB holds the child's name: the backup is only marked.
        let mut unmarked = done.clone();
        unmarked
            .metadata
            .annotations
            .as_mut()
            .unwrap()
            .remove(CHILD_CREATED_ANNOTATION);
        let foreign: NonAdminBackup = serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
            "metadata": {"name": "hourly-20270101000000", "namespace": "team-a"},
            "spec": {"backupSpec": {}}
        }))
        .unwrap();
        let step = decide(&obs(
            &n,
            Some(&s),
            std::slice::from_ref(&unmarked),
            std::slice::from_ref(&foreign),
            valid(),
        ));
        assert!(
            matches!(step, NasStep::LabelVeleroBackup { ref labels, .. } if labels.is_empty()),
            "{step:?}"
        );
    }

    #[test]
    fn status_lists_the_newest_five_with_next_run_and_polls_while_running() {
        let n = nas(json!({}), with_id(), true);
        let mut s = schedule_for(&n);
        s.status = Some(crate::api::velero::ScheduleStatus {
            last_backup: Some(time(0)),
            ..Default::default()
        });
        let backups: Vec<Backup> = (0..7)
            .map(|i| {
                settled(
                    &n,
                    &vb(
                        &format!("2027010100000{i}"),
                        i,
                        if i == 6 { "InProgress" } else { "Completed" },
                    ),
                )
            })
            .collect();
        let st = status_of(decide(&obs(&n, Some(&s), &backups, &[], valid())));
        assert_eq!(st.phase, Some(NonAdminPhase::Created));
        assert_eq!(
            st.recent_backups.len(),
            NonAdminScheduleStatus::RECENT_BACKUPS_LIMIT
        );
        assert_eq!(st.recent_backups[0].name, "hourly-20270101000006");
        assert_eq!(
            st.last_backup.as_ref().unwrap().velero_backup_name,
            format!("{ID}-20270101000006")
        );
        assert_eq!(st.next_run, next_run("0 * * * *", &time(0)));
        assert!(st.next_run.as_ref().unwrap().0 > time(0).0);
        let mut written = n.clone();
        written.status = Some(st);
        assert_eq!(
            decide(&obs(&written, Some(&s), &backups, &[], valid())),
            NasStep::RequeueAfter(RUNNING_POLL)
        );
        assert_eq!(
            decide(&obs(&written, Some(&s), &backups[..6], &[], valid())),
            NasStep::WriteStatus(Box::new({
                let mut x = status_of(decide(&obs(&n, Some(&s), &backups[..6], &[], valid())));
                x.conditions = written.status.clone().unwrap().conditions;
                x
            }))
        );
    }

    #[test]
    fn idle_schedules_poll_slowly_and_paused_ones_wait_without_next_run() {
        let mut n = nas(json!({}), with_id(), true);
        let s = schedule_for(&n);
        n.status = Some(status_of(decide(&obs(&n, Some(&s), &[], &[], valid()))));
        assert_eq!(
            decide(&obs(&n, Some(&s), &[], &[], valid())),
            NasStep::RequeueAfter(IDLE_POLL)
        );
        let mut p = nas(json!({"paused": true}), with_id(), true);
        let ps = schedule_for(&p);
        let st = status_of(decide(&obs(&p, Some(&ps), &[], &[], valid())));
        assert!(st.next_run.is_none());
        p.status = Some(st);
        assert_eq!(
            decide(&obs(&p, Some(&ps), &[], &[], valid())),
            NasStep::AwaitChange
        );
    }

    const WAIT: &str = "waiting for backup storage: every shared backup bucket is full; backups without a storage location wait until the cluster administrator adds a bucket or raises a quota";

    fn routed(location: &str) -> Result<BackupSpec, String> {
        Ok(BackupSpec {
            storage_location: Some(location.into()),
            ..valid().unwrap()
        })
    }

    fn waiting<'a>(o: NasObservation<'a>) -> NasObservation<'a> {
        NasObservation {
            storage_wait: Some(WAIT.into()),
            ..o
        }
    }

    fn queued(
        st: &NonAdminScheduleStatus,
    ) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
        st.conditions
            .iter()
            .find(|c| c.type_ == types::QUEUED)
            .expect("a Queued condition")
    }

    #[test]
    fn a_schedule_waiting_for_the_pool_says_why_and_makes_no_velero_schedule_until_ready() {
        let mut n = nas(json!({}), with_id(), true);
        let st = status_of(decide(&waiting(obs(&n, None, &[], &[], valid()))));
        let c = queued(&st);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            ("False", "WaitingForBackupStorage", WAIT)
        );
        assert_eq!(st.phase, Some(NonAdminPhase::New));
        assert!(st.next_run.is_none());
        n.status = Some(st);
        // Written: it polls, and never makes a Velero Schedule to the default location.
        assert_eq!(
            decide(&waiting(obs(&n, None, &[], &[], valid()))),
            NasStep::RequeueAfter(STORAGE_WAIT_POLL)
        );
        // The entry is ready: the Velero Schedule's template names its location.
        let NasStep::CreateVeleroSchedule(created) =
            decide(&obs(&n, None, &[], &[], routed("team-a--aaaaa")))
        else {
            panic!("expected the Velero Schedule")
        };
        assert_eq!(
            created.spec.template.storage_location.as_deref(),
            Some("team-a--aaaaa")
        );
        assert_eq!(
            created.spec.template.included_namespaces,
            Some(vec!["team-a".into()])
        );
        // Then Queued turns True: the tenant sees the wait is over.
        let st = status_of(decide(&obs(
            &n,
            Some(&created),
            &[],
            &[],
            routed("team-a--aaaaa"),
        )));
        let c = queued(&st);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("True", STORAGE_READY_REASON)
        );
        assert_eq!(st.phase, Some(NonAdminPhase::Created));
    }

    #[test]
    fn schedules_that_never_waited_get_no_queued_condition() {
        let n = nas(json!({}), with_id(), true);
        let s = schedule_for(&n);
        let st = status_of(decide(&obs(&n, Some(&s), &[], &[], valid())));
        assert!(
            st.conditions.iter().all(|c| c.type_ != types::QUEUED),
            "{st:?}"
        );
    }

    #[test]
    fn an_existing_velero_schedule_keeps_its_location_while_the_entry_is_not_ready() {
        let n = nas(json!({}), with_id(), true);
        let mut s = schedule_for(&n);
        s.spec.template.storage_location = Some("team-a--aaaaa".into());
        // The entry became unready: the status says so, the Velero Schedule is not rewritten.
        let st = status_of(decide(&waiting(obs(&n, Some(&s), &[], &[], valid()))));
        assert_eq!(queued(&st).reason, "WaitingForBackupStorage");
        let mut written = n.clone();
        written.status = Some(st);
        assert_eq!(
            decide(&waiting(obs(&written, Some(&s), &[], &[], valid()))),
            NasStep::RequeueAfter(STORAGE_WAIT_POLL)
        );
        // A pause still applies at once, without moving the schedule's backups elsewhere.
        let paused = nas(json!({"paused": true}), with_id(), true);
        let NasStep::UpdateVeleroSchedule(u) =
            decide(&waiting(obs(&paused, Some(&s), &[], &[], valid())))
        else {
            panic!("expected the pause")
        };
        assert_eq!(u.spec.paused, Some(true));
        assert_eq!(
            u.spec.template.storage_location.as_deref(),
            Some("team-a--aaaaa")
        );
    }

    #[test]
    fn a_schedule_made_before_the_pool_moves_to_its_entry_once_ready() {
        let n = nas(json!({}), with_id(), true);
        let s = schedule_for(&n);
        assert_eq!(s.spec.template.storage_location, None);
        // Waiting: still as it was.
        assert!(matches!(
            decide(&waiting(obs(&n, Some(&s), &[], &[], valid()))),
            NasStep::WriteStatus(_)
        ));
        let NasStep::UpdateVeleroSchedule(u) =
            decide(&obs(&n, Some(&s), &[], &[], routed("team-a--aaaaa")))
        else {
            panic!("expected the template to move to the entry")
        };
        assert_eq!(
            u.spec.template.storage_location.as_deref(),
            Some("team-a--aaaaa")
        );
    }

    #[test]
    fn child_names_drop_the_nacuuid() {
        let n = nas(json!({}), json!(null), false);
        assert_eq!(
            child_name(&n, ID, &format!("{ID}-20270101000000")),
            "hourly-20270101000000"
        );
        assert_eq!(child_name(&n, ID, "other"), "hourly-other");
        // A schedule named with all 253 characters still gets valid, distinct child names.
        let long = |fill: char| {
            let mut n = nas(json!({}), json!(null), false);
            n.metadata.name = Some(format!("nightly.{}", fill.to_string().repeat(245)));
            n
        };
        let (a, b) = (long('a'), long('b'));
        let child_a = child_name(&a, ID, &format!("{ID}-20270101000000"));
        let child_b = child_name(&b, ID, &format!("{ID}-20270101000000"));
        assert_eq!(child_a.len(), 253, "{child_a}");
        assert!(child_a.ends_with("-20270101000000"), "{child_a}");
        assert!(
            crate::api::names::is_dns1123_subdomain(&child_a),
            "{child_a}"
        );
        assert_ne!(child_a[..240], child_b[..240]);
        assert_eq!(child_a, child_name(&a, ID, &format!("{ID}-20270101000000")));
        let mut b = vb("x", 1, "Completed");
        b.metadata.uid = Some("not-a-uuid".into());
        assert_eq!(child_nacuuid(&n, ID, &b), None);
    }
}
