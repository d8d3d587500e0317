//! Pure mapping of NAC's tenant objects and NAC-made Velero objects to history observations:
//! each object becomes its operation's latest state plus the timeline facts it shows. No I/O:
//! the recorder feeds objects in and sends what comes out.
//!
//! Facts carry a stable `dedup`, so replaying an object (a restart, a relist, a resync) adds
//! nothing; phases carry a rank ([`phase_rank`]) so a late or replayed event never moves an
//! operation backwards.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::core::ObjectMeta;
use uuid::Uuid;

use super::model::{EpochMillis, Observation, OperationKind, OperationRecord, Transition};
use crate::api::nonadmin::conditions::types;
use crate::api::nonadmin::deletion_action::action_of_condition_type;
use crate::api::nonadmin::labels;
use crate::api::nonadmin::{
    NonAdminBackup, NonAdminBackupStorageLocation, NonAdminDownloadRequest, NonAdminPhase,
    NonAdminRestore,
};
use crate::api::velero::{
    Backup, BackupStatus, BackupStorageLocationStatus, DeleteBackupRequest,
    DeleteBackupRequestStatus, DownloadRequestStatus, Restore, RestoreStatus,
};

/// Timeline attribute: NAC's phase.
pub const ATTR_PHASE: &str = "phase";
/// Timeline attribute: the Velero object's phase.
pub const ATTR_VELERO_PHASE: &str = "veleroPhase";
/// Timeline attribute: the published queue position.
pub const ATTR_QUEUE_POSITION: &str = "queuePosition";
/// Prefix of condition attributes (`condition/<Type>`).
pub const CONDITION_PREFIX: &str = "condition/";
/// Longest failure reason or condition message kept (in characters): Velero's validation
/// errors can be long, and the store refuses unbounded text.
pub const MAX_TEXT_CHARS: usize = 2000;

/// Whose phase a value is: NAC's one-word phase and Velero's phases share words ("New",
/// "Deleting") but not ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhaseSource {
    /// NAC's phase (New, BackingOff, Created, Deleting).
    Nac,
    /// A Velero object's phase (Backup, Restore, DeleteBackupRequest, BackupStorageLocation,
    /// DownloadRequest).
    Velero,
}

impl PhaseSource {
    /// Whose phase an operation's recorded phase is, from its rank: every NAC phase (a
    /// vanished request's included) ranks below every Velero phase.
    pub fn of_rank(rank: i64) -> Self {
        if rank < phase_rank(PhaseSource::Velero, "New") {
            PhaseSource::Nac
        } else {
            PhaseSource::Velero
        }
    }
}

/// Forward-only order of phases: an operation's phase is only replaced by one of equal or
/// higher rank. NAC phases rank 10..40, every Velero phase ranks above them (Velero knows more
/// once it has the object), terminal phases highest.
pub fn phase_rank(source: PhaseSource, phase: &str) -> i64 {
    match source {
        PhaseSource::Nac => match phase {
            "New" => 10,
            "BackingOff" => 20,
            "Created" => 30,
            "Deleting" => 40,
            _ => 0,
        },
        PhaseSource::Velero => match phase {
            "New" => 100,
            "Queued" => 110,
            "ReadyToStart" => 120,
            "InProgress" => 130,
            "WaitingForPluginOperations" => 140,
            "WaitingForPluginOperationsPartiallyFailed" => 145,
            "Finalizing" => 150,
            "FinalizingPartiallyFailed" => 155,
            // A location's phase flips both ways: equal ranks let the newest win.
            "Available" | "Unavailable" => 160,
            // Below the outcomes on purpose: a completed backup being deleted keeps its
            // outcome (the deletion is an operation of its own).
            "Deleting" => 190,
            "Completed" | "PartiallyFailed" | "Failed" | "FailedValidation" | "Processed" => 200,
            // A phase from a newer Velero: never let it hide known progress.
            _ => 100,
        },
    }
}

/// Whether a Velero backup or restore phase is final.
fn is_outcome(phase: &str) -> bool {
    matches!(
        phase,
        "Completed" | "PartiallyFailed" | "Failed" | "FailedValidation"
    )
}

/// The kinds of Velero objects the recorder resolves to operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VeleroKind {
    /// A Velero Backup (of a NonAdminBackup or a schedule run).
    Backup,
    /// A Velero Restore.
    Restore,
    /// A Velero DeleteBackupRequest (of a permanent deletion).
    DeleteBackupRequest,
}

/// How a Velero object finds its operation: its kind, the tenant namespace and the NACUUID
/// both sides record. The namespace is part of the key, so an object can only ever resolve to
/// an operation of the namespace its origin annotation names.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VeleroKey {
    /// Kind of Velero object.
    pub kind: VeleroKind,
    /// Tenant namespace.
    pub namespace: String,
    /// NACUUID label value.
    pub nacuuid: String,
}

/// What one tenant object shows: its operation(s), each with the key of the Velero object
/// whose observations belong to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TenantObservation {
    /// The object's uid.
    pub uid: String,
    /// The operation first; for a backup being deleted permanently, its Delete operation next.
    pub operations: Vec<(Observation, Option<VeleroKey>)>,
}

impl TenantObservation {
    /// Ids of the operations the object stands for.
    pub fn ids(&self) -> Vec<String> {
        self.operations
            .iter()
            .map(|(o, _)| o.operation.id.clone())
            .collect()
    }
}

/// What one NAC-made Velero object shows, before it is tied to an operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VeleroObservation {
    /// Which operation it belongs to.
    pub key: VeleroKey,
    /// Name of the Velero object.
    pub velero_name: String,
    /// Name of the tenant object, per the origin annotation (informational only).
    pub origin_name: Option<String>,
    /// The Velero-derived fields (identity fields empty until resolved).
    pub operation: OperationRecord,
    /// Facts (operation id empty until resolved).
    pub transitions: Vec<Transition>,
}

impl VeleroObservation {
    /// Ties the observation to `target` (the operation's identity, see [`identity`]); `None`
    /// when the target belongs to another namespace than the Velero object's origin.
    pub fn resolve(self, target: &OperationRecord) -> Option<Observation> {
        if target.namespace != self.key.namespace || target.id.is_empty() {
            return None;
        }
        let mut operation = self.operation;
        operation.id = target.id.clone();
        operation.namespace = target.namespace.clone();
        operation.namespace_uid = target.namespace_uid.clone();
        operation.kind = target.kind;
        operation.name = target.name.clone();
        operation.uid = target.uid.clone();
        operation.created_at = target.created_at;
        operation.parent_name = target.parent_name.clone();
        let transitions = self
            .transitions
            .into_iter()
            .map(|mut t| {
                t.operation_id = target.id.clone();
                t.namespace = target.namespace.clone();
                t
            })
            .collect();
        Some(Observation {
            operation,
            transitions,
        })
    }
}

/// The identity part of an operation (what resolving a Velero observation needs).
pub fn identity(record: &OperationRecord) -> OperationRecord {
    OperationRecord {
        id: record.id.clone(),
        namespace: record.namespace.clone(),
        namespace_uid: record.namespace_uid.clone(),
        kind: record.kind,
        name: record.name.clone(),
        uid: record.uid.clone(),
        parent_name: record.parent_name.clone(),
        created_at: record.created_at,
        ..Default::default()
    }
}

/// The id of the Delete operation of the NonAdminBackup with `uid`: derived, so every
/// observation (and every recorder) agrees on it.
pub fn delete_operation_id(uid: &str) -> String {
    Uuid::new_v5(&Uuid::NAMESPACE_OID, format!("nac-delete:{uid}").as_bytes()).to_string()
}

// ---------------------------------------------------------------------------------------------
// Time

fn millis(t: &Time) -> EpochMillis {
    t.0.as_millisecond()
}

fn rfc3339(t: &Time) -> String {
    t.0.to_string()
}

/// When a fact stamped `object_time` happened. Kubernetes stamps whole seconds, while facts
/// without a stamp of their own are timed when observed, to the millisecond; timelines are
/// ordered by time, so a whole-second stamp is placed within its second: at the observation
/// when that falls in the same second (the same instant, more precisely), else at the end of
/// the second, so a fact observed earlier in that second does not sort after it.
fn stamp(object_time: Option<&Time>, observed_at: EpochMillis) -> EpochMillis {
    match object_time.map(millis) {
        Some(t) if t % 1000 == 0 && (t..t + 1000).contains(&observed_at) => observed_at,
        Some(t) if t % 1000 == 0 && observed_at >= t + 1000 => t + 999,
        Some(t) => t,
        None => observed_at,
    }
}

// ---------------------------------------------------------------------------------------------
// Text and metadata

fn bounded(text: &str) -> String {
    match text.char_indices().nth(MAX_TEXT_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

fn nonempty(s: Option<&String>) -> Option<String> {
    s.filter(|s| !s.is_empty()).cloned()
}

fn label(meta: &ObjectMeta, key: &str) -> Option<String> {
    nonempty(meta.labels.as_ref().and_then(|l| l.get(key)))
}

fn annotation(meta: &ObjectMeta, key: &str) -> Option<String> {
    nonempty(meta.annotations.as_ref().and_then(|a| a.get(key)))
}

/// (namespace, name, uid) of a tenant object; `None` for one not stored by an API server.
fn tenant_identity(meta: &ObjectMeta) -> Option<(String, String, String)> {
    Some((
        nonempty(meta.namespace.as_ref())?,
        nonempty(meta.name.as_ref())?,
        nonempty(meta.uid.as_ref())?,
    ))
}

fn join_reasons(parts: impl IntoIterator<Item = String>) -> Option<String> {
    let parts: Vec<String> = parts
        .into_iter()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect();
    (!parts.is_empty()).then(|| bounded(&parts.join("; ")))
}

// ---------------------------------------------------------------------------------------------
// Facts

struct Facts {
    id: String,
    namespace: String,
    list: Vec<Transition>,
}

impl Facts {
    fn new(id: &str, namespace: &str) -> Self {
        Facts {
            id: id.to_string(),
            namespace: namespace.to_string(),
            list: Vec::new(),
        }
    }

    fn push(&mut self, at: EpochMillis, attribute: &str, value: &str) {
        self.list.push(Transition {
            operation_id: self.id.clone(),
            namespace: self.namespace.clone(),
            at,
            attribute: attribute.to_string(),
            value: value.to_string(),
            reason: None,
            message: None,
            dedup: String::new(),
        });
    }

    /// A fact marked with `mark` as its reason and dedup: told apart from the same value seen
    /// earlier for another reason (a NAB BackingOff on an invalid spec, later BackingOff
    /// because its Velero Backup vanished, has both on its timeline).
    fn push_marked(&mut self, at: EpochMillis, attribute: &str, value: &str, mark: &str) {
        self.list.push(Transition {
            operation_id: self.id.clone(),
            namespace: self.namespace.clone(),
            at,
            attribute: attribute.to_string(),
            value: value.to_string(),
            reason: Some(mark.to_string()),
            message: None,
            dedup: mark.to_string(),
        });
    }

    fn conditions(&mut self, conditions: &[Condition], observed_at: EpochMillis) {
        for c in conditions {
            if c.type_.is_empty() {
                continue;
            }
            self.list.push(Transition {
                operation_id: self.id.clone(),
                namespace: self.namespace.clone(),
                at: stamp(Some(&c.last_transition_time), observed_at),
                attribute: format!("{CONDITION_PREFIX}{}", c.type_),
                value: c.status.clone(),
                reason: Some(c.reason.clone()).filter(|r| !r.is_empty()),
                message: Some(bounded(&c.message)).filter(|m| !m.is_empty()),
                dedup: rfc3339(&c.last_transition_time),
            });
        }
    }
}

fn condition<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Rank of NAC's phase BackingOff reached because the Velero object vanished after it was made
/// (the one way NAC's phase moves back): after Created, before Deleting, so the timeline keeps
/// the order things happened in.
pub const VANISHED_RANK: i64 = 35;

/// The reason a NAB/NAR is BackingOff because its Velero object vanished after it was made
/// (`VeleroBackupNotFound`, `VeleroRestoreNotFound` on Accepted=False); `None` otherwise.
fn vanished_reason(phase: NonAdminPhase, conditions: &[Condition]) -> Option<&str> {
    use crate::api::nonadmin::conditions::reasons;
    if phase != NonAdminPhase::BackingOff {
        return None;
    }
    condition(conditions, types::ACCEPTED)
        .filter(|c| c.status == "False")
        .map(|c| c.reason.as_str())
        .filter(|r| {
            [
                reasons::VELERO_BACKUP_NOT_FOUND,
                reasons::VELERO_RESTORE_NOT_FOUND,
            ]
            .contains(r)
        })
}

/// When NAC's phase was reached, per the object's own stamps: creation for New, the condition
/// written with the phase for the others.
fn nac_phase_time(
    phase: NonAdminPhase,
    meta: &ObjectMeta,
    conditions: &[Condition],
) -> Option<Time> {
    let written_with = |type_: &str, status: &str| {
        condition(conditions, type_)
            .filter(|c| c.status == status)
            .map(|c| c.last_transition_time.clone())
    };
    match phase {
        NonAdminPhase::New => meta.creation_timestamp.clone(),
        NonAdminPhase::BackingOff => written_with(types::ACCEPTED, "False"),
        NonAdminPhase::Created => written_with(types::QUEUED, "True"),
        NonAdminPhase::Deleting => written_with(types::DELETING, "True"),
    }
}

/// Why NAC refused or cannot serve a request, from its conditions. A Velero object that
/// vanished after it was made (`VeleroBackupNotFound`, `VeleroRestoreNotFound`) is no refusal:
/// the operation ran; the timeline keeps the condition.
fn refusal(conditions: &[Condition]) -> Option<String> {
    use crate::api::nonadmin::conditions::reasons;
    conditions
        .iter()
        .find(|c| {
            let refused = (c.type_ == types::ACCEPTED || c.type_ == types::CLUSTER_ADMIN_APPROVED)
                && c.status == "False"
                && ![
                    reasons::BSL_SPEC_APPROVAL_PENDING,
                    reasons::VELERO_BACKUP_NOT_FOUND,
                    reasons::VELERO_RESTORE_NOT_FOUND,
                ]
                .contains(&c.reason.as_str());
            let unavailable = [
                types::NON_ADMIN_BACKUP_STORAGE_LOCATION_NOT_USED,
                types::NON_ADMIN_BACKUP_NOT_AVAILABLE,
                types::NON_ADMIN_RESTORE_NOT_AVAILABLE,
            ]
            .contains(&c.type_.as_str())
                && c.status == "True";
            refused || unavailable
        })
        .and_then(|c| join_reasons([c.message.clone()]))
}

// ---------------------------------------------------------------------------------------------
// What Velero reports

/// The Velero-derived part of an operation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct VeleroPart {
    phase: Option<String>,
    phase_at: EpochMillis,
    started_at: Option<EpochMillis>,
    completed_at: Option<EpochMillis>,
    items_total: Option<i64>,
    items_done: Option<i64>,
    warnings: Option<i64>,
    errors: Option<i64>,
    failure_reason: Option<String>,
}

/// The fields Velero's BackupStatus and RestoreStatus share (a run with a phase, times, item
/// progress, counts and failure reasons), so both map through [`VeleroPart::run`].
struct RunStatus<'a> {
    phase: Option<String>,
    start: Option<&'a Time>,
    completion: Option<&'a Time>,
    items_total: Option<i64>,
    items_done: Option<i64>,
    warnings: Option<i64>,
    errors: Option<i64>,
    failure_reason: Option<&'a String>,
    validation_errors: Option<&'a Vec<String>>,
}

impl VeleroPart {
    /// `created`: the Velero object's creation time when it is at hand (not in a mirror).
    fn backup(s: &BackupStatus, created: Option<&Time>, observed_at: EpochMillis) -> Self {
        let progress = s.progress.as_ref();
        Self::run(
            RunStatus {
                phase: s.phase.as_ref().map(|p| p.as_str().to_string()),
                start: s.start_timestamp.as_ref(),
                completion: s.completion_timestamp.as_ref(),
                items_total: progress.and_then(|p| p.total_items),
                items_done: progress.and_then(|p| p.items_backed_up),
                warnings: s.warnings,
                errors: s.errors,
                failure_reason: s.failure_reason.as_ref(),
                validation_errors: s.validation_errors.as_ref(),
            },
            created,
            observed_at,
        )
    }

    fn restore(s: &RestoreStatus, created: Option<&Time>, observed_at: EpochMillis) -> Self {
        let progress = s.progress.as_ref();
        Self::run(
            RunStatus {
                phase: s.phase.as_ref().map(|p| p.as_str().to_string()),
                start: s.start_timestamp.as_ref(),
                completion: s.completion_timestamp.as_ref(),
                items_total: progress.and_then(|p| p.total_items),
                items_done: progress.and_then(|p| p.items_restored),
                warnings: s.warnings,
                errors: s.errors,
                failure_reason: s.failure_reason.as_ref(),
                validation_errors: s.validation_errors.as_ref(),
            },
            created,
            observed_at,
        )
    }

    fn run(r: RunStatus<'_>, created: Option<&Time>, observed_at: EpochMillis) -> Self {
        VeleroPart {
            phase_at: run_phase_time(
                r.phase.as_deref(),
                created,
                r.start,
                r.completion,
                observed_at,
            ),
            phase: r.phase,
            started_at: r.start.map(millis),
            completed_at: r.completion.map(millis),
            items_total: r.items_total,
            items_done: r.items_done,
            warnings: r.warnings,
            errors: r.errors,
            failure_reason: join_reasons(
                r.failure_reason
                    .into_iter()
                    .cloned()
                    .chain(r.validation_errors.into_iter().flatten().cloned()),
            ),
        }
    }

    fn delete_request(
        s: &DeleteBackupRequestStatus,
        created: Option<&Time>,
        observed_at: EpochMillis,
    ) -> Self {
        let phase = s.phase.as_ref().map(|p| p.as_str().to_string());
        let errors = s.errors.clone().unwrap_or_default();
        VeleroPart {
            phase_at: match phase.as_deref() {
                Some("New") => stamp(created, observed_at),
                _ => observed_at,
            },
            phase,
            errors: s.errors.as_ref().map(|e| e.len() as i64),
            failure_reason: join_reasons(errors),
            ..Default::default()
        }
    }

    fn location(s: &BackupStorageLocationStatus, observed_at: EpochMillis) -> Self {
        VeleroPart {
            phase: s.phase.as_ref().map(|p| p.as_str().to_string()),
            phase_at: stamp(s.last_validation_time.as_ref(), observed_at),
            failure_reason: s.message.clone().and_then(|m| join_reasons([m])),
            ..Default::default()
        }
    }

    fn download(s: &DownloadRequestStatus, observed_at: EpochMillis) -> Self {
        VeleroPart {
            phase: s.phase.as_ref().map(|p| p.as_str().to_string()),
            phase_at: observed_at,
            ..Default::default()
        }
    }

    /// Writes the Velero fields into `record` (the phase wins over NAC's).
    fn apply(&self, record: &mut OperationRecord) {
        if let Some(phase) = &self.phase {
            record.phase = Some(phase.clone());
            record.phase_rank = phase_rank(PhaseSource::Velero, phase);
        }
        record.started_at = self.started_at;
        record.completed_at = self.completed_at;
        record.items_total = self.items_total;
        record.items_done = self.items_done;
        record.warnings = self.warnings;
        record.errors = self.errors;
        if self.failure_reason.is_some() {
            record.failure_reason = self.failure_reason.clone();
        }
    }

    fn facts(&self, facts: &mut Facts) {
        if let Some(phase) = &self.phase {
            facts.push(self.phase_at, ATTR_VELERO_PHASE, phase);
        }
    }
}

/// When a backup or restore reached `phase`: creation for New, start for InProgress,
/// completion for an outcome, else when observed.
fn run_phase_time(
    phase: Option<&str>,
    created: Option<&Time>,
    started: Option<&Time>,
    completed: Option<&Time>,
    observed_at: EpochMillis,
) -> EpochMillis {
    match phase {
        Some("New") => stamp(created, observed_at),
        Some("InProgress") => stamp(started, observed_at),
        Some(p) if is_outcome(p) => stamp(completed, observed_at),
        _ => observed_at,
    }
}

// ---------------------------------------------------------------------------------------------
// Tenant objects

struct Tenant<'a> {
    meta: &'a ObjectMeta,
    kind: OperationKind,
    parent_name: Option<String>,
    velero_name: Option<String>,
    nac_phase: Option<NonAdminPhase>,
    conditions: &'a [Condition],
    queue_position: Option<i64>,
    velero: Option<VeleroPart>,
}

fn tenant_observation(t: Tenant<'_>, observed_at: EpochMillis) -> Option<Observation> {
    let (namespace, name, uid) = tenant_identity(t.meta)?;
    let mut record = OperationRecord {
        id: uid.clone(),
        namespace: namespace.clone(),
        kind: Some(t.kind),
        name,
        uid: uid.clone(),
        velero_name: t.velero_name,
        parent_name: t.parent_name,
        created_at: t
            .meta
            .creation_timestamp
            .as_ref()
            .map(millis)
            .unwrap_or(observed_at),
        nac_phase: t.nac_phase.map(|p| p.as_str().to_string()),
        failure_reason: refusal(t.conditions),
        queue_position: t.queue_position,
        ..Default::default()
    };
    let vanished = t.nac_phase.and_then(|p| vanished_reason(p, t.conditions));
    if let Some(p) = t.nac_phase {
        record.phase = Some(p.as_str().to_string());
        record.phase_rank = match vanished {
            Some(_) => VANISHED_RANK,
            None => phase_rank(PhaseSource::Nac, p.as_str()),
        };
    }
    let mut facts = Facts::new(&uid, &namespace);
    if let Some(p) = t.nac_phase {
        let at = stamp(
            nac_phase_time(p, t.meta, t.conditions).as_ref(),
            observed_at,
        );
        match vanished {
            Some(reason) => facts.push_marked(at, ATTR_PHASE, p.as_str(), reason),
            None => facts.push(at, ATTR_PHASE, p.as_str()),
        }
    }
    if let Some(v) = &t.velero {
        v.apply(&mut record);
        v.facts(&mut facts);
    }
    if let Some(position) = t.queue_position.filter(|p| *p > 0) {
        facts.push(observed_at, ATTR_QUEUE_POSITION, &position.to_string());
    }
    facts.conditions(t.conditions, observed_at);
    Some(Observation {
        operation: record,
        transitions: facts.list,
    })
}

/// A NonAdminBackup: a Backup operation (a ScheduleRun when a NonAdminSchedule made it) and,
/// once permanent deletion was asked for, a Delete operation.
pub fn observe_backup(nab: &NonAdminBackup, observed_at: EpochMillis) -> Option<TenantObservation> {
    let meta = &nab.metadata;
    let (namespace, name, uid) = tenant_identity(meta)?;
    let status = nab.status.as_ref();
    let scheduled = label(meta, labels::NAS_ORIGIN_NACUUID).is_some();
    let related = status.and_then(|s| s.velero_backup.as_ref());
    let nacuuid = related.and_then(|r| nonempty(r.nacuuid.as_ref()));
    let conditions = status.map(|s| s.conditions.as_slice()).unwrap_or_default();
    // Deletion actions' outcomes (seed 003) are steps of the deletion, not of the backup.
    let (action_conditions, backup_conditions): (Vec<Condition>, Vec<Condition>) = conditions
        .iter()
        .cloned()
        .partition(|c| action_of_condition_type(&c.type_).is_some());
    let backup = tenant_observation(
        Tenant {
            meta,
            kind: if scheduled {
                OperationKind::ScheduleRun
            } else {
                OperationKind::Backup
            },
            parent_name: if scheduled {
                annotation(meta, labels::NAS_ORIGIN_NAME_ANNOTATION)
            } else {
                None
            },
            velero_name: related
                .and_then(|r| nonempty(r.name.as_ref()))
                .or_else(|| nacuuid.clone()),
            nac_phase: status.and_then(|s| s.phase),
            conditions: &backup_conditions,
            queue_position: status
                .and_then(|s| s.queue_info.as_ref())
                .map(|q| q.estimated_queue_position),
            velero: related
                .and_then(|r| r.status.as_ref())
                .map(|s| VeleroPart::backup(s, None, observed_at)),
        },
        observed_at,
    )?;
    let key = |kind| {
        nacuuid.clone().map(|nacuuid| VeleroKey {
            kind,
            namespace: namespace.clone(),
            nacuuid,
        })
    };
    let mut operations = vec![(backup, key(VeleroKind::Backup))];

    let request = status.and_then(|s| s.velero_delete_backup_request.as_ref());
    if nab.spec.delete_backup == Some(true) || request.is_some() {
        let id = delete_operation_id(&uid);
        let deleting = condition(conditions, types::DELETING);
        let mut record = OperationRecord {
            id: id.clone(),
            namespace: namespace.clone(),
            kind: Some(OperationKind::Delete),
            name: name.clone(),
            uid: uid.clone(),
            velero_name: request
                .and_then(|r| nonempty(r.name.as_ref()))
                .or_else(|| nacuuid.clone()),
            parent_name: Some(name.clone()),
            // The deletion began when NAC marked the NAB Deleting, or (not marked yet) about
            // now; the store keeps the earliest creation time it is given.
            created_at: deleting
                .map(|c| millis(&c.last_transition_time))
                .unwrap_or(observed_at),
            nac_phase: status.and_then(|s| s.phase).map(|p| p.as_str().to_string()),
            ..Default::default()
        };
        if let Some(p) = status.and_then(|s| s.phase) {
            record.phase = Some(p.as_str().to_string());
            record.phase_rank = phase_rank(PhaseSource::Nac, p.as_str());
        }
        let mut facts = Facts::new(&id, &namespace);
        if let Some(part) = request
            .and_then(|r| r.status.as_ref())
            .map(|s| VeleroPart::delete_request(s, None, observed_at))
        {
            part.apply(&mut record);
            part.facts(&mut facts);
        }
        if let Some(c) = deleting {
            facts.conditions(std::slice::from_ref(c), observed_at);
        }
        facts.conditions(&action_conditions, observed_at);
        operations.push((
            Observation {
                operation: record,
                transitions: facts.list,
            },
            key(VeleroKind::DeleteBackupRequest),
        ));
    }
    Some(TenantObservation { uid, operations })
}

/// A NonAdminRestore: a Restore operation of the backup it names.
pub fn observe_restore(
    nar: &NonAdminRestore,
    observed_at: EpochMillis,
) -> Option<TenantObservation> {
    let meta = &nar.metadata;
    let (namespace, _, uid) = tenant_identity(meta)?;
    let status = nar.status.as_ref();
    let related = status.and_then(|s| s.velero_restore.as_ref());
    let nacuuid = related.and_then(|r| nonempty(r.nacuuid.as_ref()));
    let observation = tenant_observation(
        Tenant {
            meta,
            kind: OperationKind::Restore,
            parent_name: nonempty(nar.spec.restore_spec.backup_name.as_ref()),
            velero_name: related
                .and_then(|r| nonempty(r.name.as_ref()))
                .or_else(|| nacuuid.clone()),
            nac_phase: status.and_then(|s| s.phase),
            conditions: status.map(|s| s.conditions.as_slice()).unwrap_or_default(),
            queue_position: status
                .and_then(|s| s.queue_info.as_ref())
                .map(|q| q.estimated_queue_position),
            velero: related
                .and_then(|r| r.status.as_ref())
                .map(|s| VeleroPart::restore(s, None, observed_at)),
        },
        observed_at,
    )?;
    let key = nacuuid.map(|nacuuid| VeleroKey {
        kind: VeleroKind::Restore,
        namespace,
        nacuuid,
    });
    Some(TenantObservation {
        uid,
        operations: vec![(observation, key)],
    })
}

/// A NonAdminBackupStorageLocation: its phase is the Velero location's (Available or
/// Unavailable) once there is one.
pub fn observe_storage_location(
    nabsl: &NonAdminBackupStorageLocation,
    observed_at: EpochMillis,
) -> Option<TenantObservation> {
    let meta = &nabsl.metadata;
    let (_, _, uid) = tenant_identity(meta)?;
    let status = nabsl.status.as_ref();
    let related = status.and_then(|s| s.velero_backup_storage_location.as_ref());
    let observation = tenant_observation(
        Tenant {
            meta,
            kind: OperationKind::BackupStorageLocation,
            parent_name: None,
            velero_name: related
                .and_then(|r| nonempty(r.name.as_ref()))
                .or_else(|| related.and_then(|r| nonempty(r.nacuuid.as_ref()))),
            nac_phase: status.and_then(|s| s.phase),
            conditions: status.map(|s| s.conditions.as_slice()).unwrap_or_default(),
            queue_position: None,
            velero: related
                .and_then(|r| r.status.as_ref())
                .map(|s| VeleroPart::location(s, observed_at)),
        },
        observed_at,
    )?;
    Some(TenantObservation {
        uid,
        operations: vec![(observation, None)],
    })
}

/// A NonAdminDownloadRequest: a Download of the backup or restore it targets.
pub fn observe_download(
    nadr: &NonAdminDownloadRequest,
    observed_at: EpochMillis,
) -> Option<TenantObservation> {
    let meta = &nadr.metadata;
    let (_, _, uid) = tenant_identity(meta)?;
    let status = nadr.status.as_ref();
    let observation = tenant_observation(
        Tenant {
            meta,
            kind: OperationKind::Download,
            parent_name: Some(nadr.spec.target.name.clone()).filter(|n| !n.is_empty()),
            velero_name: None,
            nac_phase: status.and_then(|s| s.phase),
            conditions: status.map(|s| s.conditions.as_slice()).unwrap_or_default(),
            queue_position: None,
            velero: status
                .and_then(|s| s.velero.as_ref())
                .and_then(|v| v.status.as_ref())
                .map(|s| VeleroPart::download(s, observed_at)),
        },
        observed_at,
    )?;
    Some(TenantObservation {
        uid,
        operations: vec![(observation, None)],
    })
}

// ---------------------------------------------------------------------------------------------
// Velero objects

/// `part`: what the object's status says, `None` without a status.
fn velero_observation(
    meta: &ObjectMeta,
    key: VeleroKey,
    origin_name: Option<String>,
    part: Option<VeleroPart>,
    observed_at: EpochMillis,
) -> Option<VeleroObservation> {
    let velero_name = nonempty(meta.name.as_ref())?;
    let mut operation = OperationRecord {
        namespace: key.namespace.clone(),
        velero_name: Some(velero_name.clone()),
        ..Default::default()
    };
    let mut part = part.unwrap_or_default();
    if part.phase.is_none() {
        // Velero reads an object without a phase as New (it has not processed it yet).
        part.phase = Some("New".to_string());
        part.phase_at = stamp(meta.creation_timestamp.as_ref(), observed_at);
    }
    let mut facts = Facts::new("", &key.namespace);
    part.apply(&mut operation);
    part.facts(&mut facts);
    Some(VeleroObservation {
        key,
        velero_name,
        origin_name,
        operation,
        transitions: facts.list,
    })
}

/// The key of a NAC-made Velero object: its NACUUID label and the tenant namespace of its
/// origin annotation (nothing else about the object is trusted for the namespace).
fn velero_key(
    meta: &ObjectMeta,
    kind: VeleroKind,
    nacuuid_label: &str,
    namespace_annotations: &[&str],
) -> Option<VeleroKey> {
    Some(VeleroKey {
        kind,
        nacuuid: label(meta, nacuuid_label)?,
        namespace: namespace_annotations
            .iter()
            .find_map(|a| annotation(meta, a))?,
    })
}

/// A Velero Backup NAC made for a NonAdminBackup (or labelled for a schedule run's child).
pub fn observe_velero_backup(b: &Backup, observed_at: EpochMillis) -> Option<VeleroObservation> {
    let meta = &b.metadata;
    let key = velero_key(
        meta,
        VeleroKind::Backup,
        labels::NAB_ORIGIN_NACUUID,
        &[
            labels::NAB_ORIGIN_NAMESPACE_ANNOTATION,
            labels::NAS_ORIGIN_NAMESPACE_ANNOTATION,
        ],
    )?;
    let part = b
        .status
        .as_ref()
        .map(|s| VeleroPart::backup(s, meta.creation_timestamp.as_ref(), observed_at));
    velero_observation(
        meta,
        key,
        annotation(meta, labels::NAB_ORIGIN_NAME_ANNOTATION),
        part,
        observed_at,
    )
}

/// A Velero Restore NAC made for a NonAdminRestore.
pub fn observe_velero_restore(r: &Restore, observed_at: EpochMillis) -> Option<VeleroObservation> {
    let meta = &r.metadata;
    let key = velero_key(
        meta,
        VeleroKind::Restore,
        labels::NAR_ORIGIN_NACUUID,
        &[labels::NAR_ORIGIN_NAMESPACE_ANNOTATION],
    )?;
    let part = r
        .status
        .as_ref()
        .map(|s| VeleroPart::restore(s, meta.creation_timestamp.as_ref(), observed_at));
    velero_observation(
        meta,
        key,
        annotation(meta, labels::NAR_ORIGIN_NAME_ANNOTATION),
        part,
        observed_at,
    )
}

/// A Velero DeleteBackupRequest NAC made to delete a NonAdminBackup's backup permanently.
pub fn observe_delete_request(
    r: &DeleteBackupRequest,
    observed_at: EpochMillis,
) -> Option<VeleroObservation> {
    let meta = &r.metadata;
    let key = velero_key(
        meta,
        VeleroKind::DeleteBackupRequest,
        labels::NAB_ORIGIN_NACUUID,
        &[labels::NAB_ORIGIN_NAMESPACE_ANNOTATION],
    )?;
    let part = r
        .status
        .as_ref()
        .map(|s| VeleroPart::delete_request(s, meta.creation_timestamp.as_ref(), observed_at));
    velero_observation(
        meta,
        key,
        annotation(meta, labels::NAB_ORIGIN_NAME_ANNOTATION),
        part,
        observed_at,
    )
}

// ---------------------------------------------------------------------------------------------
// What changed

fn fact_key(t: &Transition) -> u64 {
    let mut h = DefaultHasher::new();
    (&t.attribute, &t.value, &t.dedup).hash(&mut h);
    h.finish()
}

fn record_digest(r: &OperationRecord) -> u64 {
    let mut h = DefaultHasher::new();
    format!("{r:?}").hash(&mut h);
    h.finish()
}

/// The rank of a phase fact (`phase` or `veleroPhase`); `None` for any other attribute.
fn ranked(t: &Transition) -> Option<i64> {
    use crate::api::nonadmin::conditions::reasons;
    match t.attribute.as_str() {
        ATTR_PHASE => Some(match t.reason.as_deref() {
            Some(reasons::VELERO_BACKUP_NOT_FOUND | reasons::VELERO_RESTORE_NOT_FOUND) => {
                VANISHED_RANK
            }
            _ => phase_rank(PhaseSource::Nac, &t.value),
        }),
        ATTR_VELERO_PHASE => Some(phase_rank(PhaseSource::Velero, &t.value)),
        _ => None,
    }
}

/// Where a phase fact was placed on the timeline.
#[derive(Clone, Copy, Debug)]
struct Placed {
    fact: u64,
    velero: bool,
    rank: i64,
    at: EpochMillis,
}

/// What the recorder remembers of one operation between observations (compactly: hashes),
/// so it sends only what changed.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    facts: HashSet<u64>,
    best_rank: i64,
    queued: bool,
    last_record: Option<u64>,
    /// The phase facts sent so far and where they were placed (a handful per operation).
    placed: Vec<Placed>,
}

impl Seen {
    /// Places `current`'s phase facts on the timeline in rank order with the phase facts
    /// already sent: a fact timed when it was observed (Finalizing, say) can be observed after
    /// the whole second that stamps a later phase (Completed at its completion second) has
    /// passed, and a lagging mirror can show a phase after a later one was seen. A phase is
    /// therefore placed no earlier than any lower-ranked phase and (when that is possible)
    /// before any higher-ranked one already sent; a fact sent before keeps its place, so a
    /// resync sends it where it was.
    pub fn place(&mut self, current: &mut Observation) {
        for t in &mut current.transitions {
            let Some(rank) = ranked(t) else { continue };
            let velero = t.attribute == ATTR_VELERO_PHASE;
            let fact = fact_key(t);
            if let Some(p) = self.placed.iter().find(|p| p.fact == fact) {
                t.at = p.at;
                continue;
            }
            let same = || self.placed.iter().filter(|p| p.velero == velero);
            let after = same().filter(|p| p.rank < rank).map(|p| p.at).max();
            let before = same().filter(|p| p.rank > rank).map(|p| p.at).min();
            if let Some(before) = before
                && t.at >= before
            {
                t.at = before - 1;
            }
            if let Some(after) = after
                && t.at < after
            {
                t.at = after;
            }
            self.placed.push(Placed {
                fact,
                velero,
                rank,
                at: t.at,
            });
        }
    }

    /// What to send for `current`, observed at `observed_at`: its state and only its new facts
    /// (plus the final queue position 0 once it was queued), its phases placed in rank order
    /// ([`Seen::place`]); `None` when nothing changed.
    ///
    /// An observation ranked below what was seen (a lagging mirror) does not carry Velero's
    /// counters along, so they never move backwards either.
    pub fn update(
        &mut self,
        mut current: Observation,
        observed_at: EpochMillis,
    ) -> Option<Observation> {
        self.place(&mut current);
        let Observation {
            mut operation,
            transitions,
        } = current;
        let mut fresh = Vec::new();
        for t in transitions {
            if self.facts.insert(fact_key(&t)) {
                fresh.push(t);
            }
        }
        match operation.queue_position {
            Some(p) if p > 0 => self.queued = true,
            Some(0) if self.queued => {
                let zero = Transition {
                    operation_id: operation.id.clone(),
                    namespace: operation.namespace.clone(),
                    at: observed_at,
                    attribute: ATTR_QUEUE_POSITION.to_string(),
                    value: "0".to_string(),
                    reason: None,
                    message: None,
                    dedup: String::new(),
                };
                if self.facts.insert(fact_key(&zero)) {
                    fresh.push(zero);
                }
            }
            _ => {}
        }
        if operation.phase.is_some() && operation.phase_rank < self.best_rank {
            operation.items_total = None;
            operation.items_done = None;
            operation.warnings = None;
            operation.errors = None;
        }
        if operation.phase.is_some() {
            self.best_rank = self.best_rank.max(operation.phase_rank);
        }
        let digest = record_digest(&operation);
        let changed = self.last_record != Some(digest);
        self.last_record = Some(digest);
        (changed || !fresh.is_empty()).then_some(Observation {
            operation,
            transitions: fresh,
        })
    }
}

/// The facts of `current` that `previous` (the last observation of the same operation) did
/// not show, plus the final queue position 0 when `previous` was queued.
pub fn new_facts(
    previous: Option<&Observation>,
    current: &Observation,
    observed_at: EpochMillis,
) -> Vec<Transition> {
    let mut seen = Seen::default();
    if let Some(p) = previous {
        let _ = seen.update(p.clone(), observed_at);
    }
    seen.update(current.clone(), observed_at)
        .map(|o| o.transitions)
        .unwrap_or_default()
}

/// Folds `newer` into `older` (two observations of one operation, in order) as the store
/// would apply them one after the other: known values replace unknown ones, a phase is only
/// replaced by one of equal or higher rank, the requester is never replaced, and every
/// transition is kept (once).
pub fn merge_observations(older: &mut Observation, newer: Observation) {
    let o = &mut older.operation;
    let n = newer.operation;
    let keep = |old: &mut Option<i64>, new: Option<i64>| {
        if new.is_some() {
            *old = new;
        }
    };
    if !n.namespace.is_empty() {
        o.namespace = n.namespace;
    }
    if o.namespace_uid.is_empty() {
        o.namespace_uid = n.namespace_uid;
    }
    if n.kind.is_some() {
        o.kind = n.kind;
    }
    if !n.name.is_empty() {
        o.name = n.name;
    }
    if !n.uid.is_empty() {
        o.uid = n.uid;
    }
    if n.velero_name.is_some() {
        o.velero_name = n.velero_name;
    }
    if n.parent_name.is_some() {
        o.parent_name = n.parent_name;
    }
    if o.requester.is_none() {
        o.requester = n.requester;
    }
    if n.created_at != 0 {
        o.created_at = n.created_at;
    }
    keep(&mut o.started_at, n.started_at);
    keep(&mut o.completed_at, n.completed_at);
    if n.phase.is_some() && (o.phase.is_none() || n.phase_rank >= o.phase_rank) {
        o.phase = n.phase;
        o.phase_rank = n.phase_rank;
    }
    if n.nac_phase.is_some() {
        o.nac_phase = n.nac_phase;
    }
    keep(&mut o.items_total, n.items_total);
    keep(&mut o.items_done, n.items_done);
    keep(&mut o.warnings, n.warnings);
    keep(&mut o.errors, n.errors);
    if n.failure_reason.is_some() {
        o.failure_reason = n.failure_reason;
    }
    keep(&mut o.queue_position, n.queue_position);
    if n.deleted_at.is_some() {
        o.deleted_at = n.deleted_at;
    }
    let mut have: HashSet<u64> = older.transitions.iter().map(fact_key).collect();
    for t in newer.transitions {
        if have.insert(fact_key(&t)) {
            older.transitions.push(t);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const T0: &str = "2025-03-01T10:00:00Z";
    const T0_MS: i64 = 1_740_823_200_000;

    fn at(offset_ms: i64) -> i64 {
        T0_MS + offset_ms
    }

    fn nab(extra: Value) -> NonAdminBackup {
        let mut base = json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
            "metadata": {"name": "nightly", "namespace": "team-a", "uid": "u-1",
                         "creationTimestamp": T0},
            "spec": {"backupSpec": {}}
        });
        merge(&mut base, extra);
        serde_json::from_value(base).unwrap()
    }

    fn merge(base: &mut Value, extra: Value) {
        match (base, extra) {
            (Value::Object(b), Value::Object(e)) => {
                for (k, v) in e {
                    merge(b.entry(k).or_insert(Value::Null), v);
                }
            }
            (b, e) => *b = e,
        }
    }

    fn facts(o: &Observation) -> Vec<(String, String)> {
        o.transitions
            .iter()
            .map(|t| (t.attribute.clone(), t.value.clone()))
            .collect()
    }

    fn fact<'a>(o: &'a Observation, attribute: &str) -> &'a Transition {
        o.transitions
            .iter()
            .find(|t| t.attribute == attribute)
            .unwrap_or_else(|| panic!("no {attribute} in {:?}", facts(o)))
    }

    fn completed_nab() -> NonAdminBackup {
        nab(json!({"status": {
            "phase": "Created",
            "queueInfo": {"estimatedQueuePosition": 0},
            "conditions": [
                {"type": "Accepted", "status": "True", "reason": "BackupAccepted",
                 "message": "backup accepted", "lastTransitionTime": "2025-03-01T10:00:01Z"},
                {"type": "Queued", "status": "True", "reason": "BackupScheduled",
                 "message": "Created Velero Backup object",
                 "lastTransitionTime": "2025-03-01T10:00:02Z"}
            ],
            "veleroBackup": {"nacuuid": "team-a-nightly-x", "name": "team-a-nightly-x",
                "namespace": "openshift-adp",
                "status": {"phase": "Completed", "startTimestamp": "2025-03-01T10:00:05Z",
                    "completionTimestamp": "2025-03-01T10:00:09Z", "warnings": 1,
                    "progress": {"totalItems": 12, "itemsBackedUp": 12}}}
        }}))
    }

    #[test]
    fn nac_and_velero_phases_rank_forward_only() {
        let nac = ["New", "BackingOff", "Created", "Deleting"];
        for w in nac.windows(2) {
            assert!(phase_rank(PhaseSource::Nac, w[0]) < phase_rank(PhaseSource::Nac, w[1]));
        }
        let backup = [
            "New",
            "Queued",
            "ReadyToStart",
            "InProgress",
            "WaitingForPluginOperations",
            "WaitingForPluginOperationsPartiallyFailed",
            "Finalizing",
            "FinalizingPartiallyFailed",
            "Completed",
        ];
        for w in backup.windows(2) {
            assert!(
                phase_rank(PhaseSource::Velero, w[0]) < phase_rank(PhaseSource::Velero, w[1]),
                "{w:?}"
            );
        }
        let top = phase_rank(PhaseSource::Velero, "Completed");
        for p in ["PartiallyFailed", "Failed", "FailedValidation", "Processed"] {
            assert_eq!(phase_rank(PhaseSource::Velero, p), top, "{p}");
        }
        // Every Velero phase outranks every NAC phase.
        assert!(phase_rank(PhaseSource::Nac, "Deleting") < phase_rank(PhaseSource::Velero, "New"));
        // Deletion requests, download requests.
        let dbr = ["New", "InProgress", "Processed"];
        for w in dbr.windows(2) {
            assert!(phase_rank(PhaseSource::Velero, w[0]) < phase_rank(PhaseSource::Velero, w[1]));
        }
        assert!(
            phase_rank(PhaseSource::Velero, "New") < phase_rank(PhaseSource::Velero, "Processed")
        );
        // A location flips both ways.
        assert_eq!(
            phase_rank(PhaseSource::Velero, "Available"),
            phase_rank(PhaseSource::Velero, "Unavailable")
        );
        // A backup being deleted keeps its outcome; unknown phases never hide progress.
        assert!(phase_rank(PhaseSource::Velero, "Deleting") < top);
        assert!(
            phase_rank(PhaseSource::Velero, "Deleting")
                > phase_rank(PhaseSource::Velero, "InProgress")
        );
        assert_eq!(
            phase_rank(PhaseSource::Velero, "SomethingNew"),
            phase_rank(PhaseSource::Velero, "New")
        );
        assert_eq!(phase_rank(PhaseSource::Nac, "SomethingNew"), 0);
    }

    #[test]
    fn a_recorded_phase_s_source_is_read_back_from_its_rank() {
        for phase in ["New", "BackingOff", "Created", "Deleting"] {
            let rank = phase_rank(PhaseSource::Nac, phase);
            assert_eq!(PhaseSource::of_rank(rank), PhaseSource::Nac, "{phase}");
        }
        assert_eq!(PhaseSource::of_rank(VANISHED_RANK), PhaseSource::Nac);
        for phase in [
            "New",
            "Deleting",
            "Available",
            "Processed",
            "Completed",
            "Resuming",
        ] {
            let rank = phase_rank(PhaseSource::Velero, phase);
            assert_eq!(PhaseSource::of_rank(rank), PhaseSource::Velero, "{phase}");
        }
    }

    #[test]
    fn a_completed_backup_maps_to_its_operation_and_facts() {
        let observed_at = at(60_000);
        let obs = observe_backup(&completed_nab(), observed_at).unwrap();
        assert_eq!(obs.uid, "u-1");
        assert_eq!(obs.operations.len(), 1, "no deletion asked for");
        let (o, key) = &obs.operations[0];
        assert_eq!(
            key.as_ref(),
            Some(&VeleroKey {
                kind: VeleroKind::Backup,
                namespace: "team-a".into(),
                nacuuid: "team-a-nightly-x".into()
            })
        );
        let r = &o.operation;
        assert_eq!(r.id, "u-1");
        assert_eq!(r.uid, "u-1");
        assert_eq!(r.namespace, "team-a");
        assert_eq!(r.name, "nightly");
        assert_eq!(r.kind, Some(OperationKind::Backup));
        assert_eq!(r.parent_name, None);
        assert_eq!(r.velero_name.as_deref(), Some("team-a-nightly-x"));
        assert_eq!(r.created_at, T0_MS);
        assert_eq!(r.started_at, Some(at(5_000)));
        assert_eq!(r.completed_at, Some(at(9_000)));
        assert_eq!(r.duration_ms(), Some(4_000));
        assert_eq!(r.phase.as_deref(), Some("Completed"));
        assert_eq!(r.phase_rank, phase_rank(PhaseSource::Velero, "Completed"));
        assert_eq!(r.nac_phase.as_deref(), Some("Created"));
        assert_eq!((r.items_total, r.items_done), (Some(12), Some(12)));
        assert_eq!((r.warnings, r.errors), (Some(1), None));
        assert_eq!(r.failure_reason, None);
        assert_eq!(r.queue_position, Some(0));
        assert_eq!(r.deleted_at, None);
        assert_eq!(
            facts(o),
            vec![
                ("phase".into(), "Created".into()),
                ("veleroPhase".into(), "Completed".into()),
                ("condition/Accepted".into(), "True".into()),
                ("condition/Queued".into(), "True".into()),
            ],
            "no queue position 0 without having been queued"
        );
        // Stamps: NAC's phase when the Queued condition was written, Velero's outcome at its
        // completion, conditions at their transition; all in this namespace and operation.
        assert_eq!(fact(o, "phase").at, at(2_999));
        assert_eq!(fact(o, "veleroPhase").at, at(9_999));
        let accepted = fact(o, "condition/Accepted");
        assert_eq!(accepted.at, at(1_999));
        assert_eq!(accepted.reason.as_deref(), Some("BackupAccepted"));
        assert_eq!(accepted.message.as_deref(), Some("backup accepted"));
        assert_eq!(accepted.dedup, "2025-03-01T10:00:01Z");
        for t in &o.transitions {
            assert_eq!(
                (t.operation_id.as_str(), t.namespace.as_str()),
                ("u-1", "team-a")
            );
            if !t.attribute.starts_with(CONDITION_PREFIX) {
                assert_eq!(t.dedup, "", "{t:?}");
            }
        }
    }

    #[test]
    fn observations_are_deterministic_so_replays_add_nothing() {
        let a = observe_backup(&completed_nab(), at(60_000)).unwrap();
        let b = observe_backup(&completed_nab(), at(90_000)).unwrap();
        assert_eq!(a.operations[0].0.operation, b.operations[0].0.operation);
        let keys = |o: &TenantObservation| -> Vec<(String, String, String)> {
            o.operations[0]
                .0
                .transitions
                .iter()
                .map(|t| (t.attribute.clone(), t.value.clone(), t.dedup.clone()))
                .collect()
        };
        assert_eq!(keys(&a), keys(&b));
        assert!(new_facts(Some(&a.operations[0].0), &b.operations[0].0, at(90_000)).is_empty());
    }

    #[test]
    fn a_stamp_within_the_observed_second_takes_the_observed_millisecond() {
        let t = Time(k8s_openapi::jiff::Timestamp::from_second(T0_MS / 1000).unwrap());
        assert_eq!(stamp(Some(&t), at(250)), at(250));
        assert_eq!(
            stamp(Some(&t), at(1_000)),
            at(999),
            "observed later: the end of its second"
        );
        assert_eq!(stamp(Some(&t), at(-5)), T0_MS, "clock skew keeps the stamp");
        assert_eq!(stamp(None, at(77)), at(77));
        let precise = Time(k8s_openapi::jiff::Timestamp::from_millisecond(at(123)).unwrap());
        assert_eq!(stamp(Some(&precise), at(500)), at(123));
    }

    #[test]
    fn a_new_backup_is_stamped_at_creation_and_queued_positions_are_facts() {
        let fresh = nab(json!({"status": {"phase": "New"}}));
        let o = observe_backup(&fresh, at(400))
            .unwrap()
            .operations
            .remove(0);
        assert_eq!(o.0.operation.phase.as_deref(), Some("New"));
        assert_eq!(o.0.operation.phase_rank, 10);
        assert_eq!(o.1, None, "no NACUUID yet, nothing to resolve");
        assert_eq!(fact(&o.0, "phase").at, at(400));
        let late = observe_backup(&fresh, at(30_000))
            .unwrap()
            .operations
            .remove(0);
        assert_eq!(fact(&late.0, "phase").at, at(999));

        let queued = nab(json!({"status": {"phase": "Created",
            "queueInfo": {"estimatedQueuePosition": 3},
            "veleroBackup": {"nacuuid": "n", "status": {"phase": "Queued"}}}}));
        let o = observe_backup(&queued, at(5_000))
            .unwrap()
            .operations
            .remove(0)
            .0;
        assert_eq!(o.operation.queue_position, Some(3));
        assert_eq!(
            o.operation.velero_name.as_deref(),
            Some("n"),
            "named by the NACUUID"
        );
        assert_eq!(fact(&o, "queuePosition").value, "3");
        assert_eq!(fact(&o, "queuePosition").at, at(5_000));
        assert_eq!(fact(&o, "veleroPhase").value, "Queued");
        assert_eq!(o.operation.phase.as_deref(), Some("Queued"));
    }

    #[test]
    fn the_final_queue_position_zero_follows_having_been_queued() {
        let with_position = |p: i64, phase: &str| {
            observe_backup(
                &nab(json!({"status": {"phase": "Created",
                    "queueInfo": {"estimatedQueuePosition": p},
                    "veleroBackup": {"nacuuid": "n", "status": {"phase": phase}}}})),
                at(0),
            )
            .unwrap()
            .operations
            .remove(0)
            .0
        };
        let q2 = with_position(2, "Queued");
        let q1 = with_position(1, "Queued");
        let running = with_position(0, "InProgress");
        let new = new_facts(Some(&q2), &q1, at(100));
        assert_eq!(
            new.iter()
                .map(|t| (t.attribute.as_str(), t.value.as_str()))
                .collect::<Vec<_>>(),
            vec![("queuePosition", "1")]
        );
        let new = new_facts(Some(&q1), &running, at(200));
        let pairs: Vec<_> = new
            .iter()
            .map(|t| (t.attribute.as_str(), t.value.as_str(), t.at))
            .collect();
        assert!(
            pairs.contains(&("veleroPhase", "InProgress", at(0))),
            "{pairs:?}"
        );
        assert!(
            pairs.contains(&("queuePosition", "0", at(200))),
            "{pairs:?}"
        );
        // Never queued: no 0.
        assert!(
            new_facts(None, &running, at(200))
                .iter()
                .all(|t| t.attribute != ATTR_QUEUE_POSITION)
        );
    }

    #[test]
    fn refused_backup_says_why() {
        let refused = nab(json!({"status": {"phase": "BackingOff", "conditions": [
            {"type": "Accepted", "status": "False", "reason": "InvalidBackupSpec",
             "message": "spec.backupSpec.includedNamespaces: only team-a",
             "lastTransitionTime": "2025-03-01T10:00:03Z"}]}}));
        let o = observe_backup(&refused, at(60_000))
            .unwrap()
            .operations
            .remove(0)
            .0;
        assert_eq!(o.operation.phase.as_deref(), Some("BackingOff"));
        assert_eq!(
            o.operation.failure_reason.as_deref(),
            Some("spec.backupSpec.includedNamespaces: only team-a")
        );
        assert_eq!(
            fact(&o, "phase").at,
            at(3_999),
            "stamped by the Accepted=False condition"
        );
    }

    #[test]
    fn a_vanished_backup_adds_backing_off_after_created_and_keeps_its_outcome() {
        let completed = observe_backup(&completed_nab(), at(60_000))
            .unwrap()
            .operations
            .remove(0)
            .0;
        // The Velero Backup expired: the NAB stays, BackingOff, Accepted=False (upstream).
        let vanished_nab = nab(json!({"status": {
            "phase": "BackingOff",
            "queueInfo": {"estimatedQueuePosition": 0},
            "conditions": [
                {"type": "Accepted", "status": "False", "reason": "VeleroBackupNotFound",
                 "message": "NonAdminBackup is finalized and its associated Velero Backup has been removed. Please create a new NonAdminBackup to initiate a new Backup",
                 "lastTransitionTime": "2025-03-01T10:00:30Z"},
                {"type": "Queued", "status": "True", "reason": "BackupScheduled",
                 "message": "Created Velero Backup object",
                 "lastTransitionTime": "2025-03-01T10:00:02Z"}
            ],
            "veleroBackup": {"nacuuid": "team-a-nightly-x", "name": "team-a-nightly-x",
                "namespace": "openshift-adp",
                "status": {"phase": "Completed", "startTimestamp": "2025-03-01T10:00:05Z",
                    "completionTimestamp": "2025-03-01T10:00:09Z", "warnings": 1,
                    "progress": {"totalItems": 12, "itemsBackedUp": 12}}}
        }}));
        let o = observe_backup(&vanished_nab, at(61_000))
            .unwrap()
            .operations
            .remove(0)
            .0;
        // The operation keeps its outcome, and vanishing is no refusal.
        assert_eq!(o.operation.phase.as_deref(), Some("Completed"));
        assert_eq!(o.operation.nac_phase.as_deref(), Some("BackingOff"));
        assert_eq!(o.operation.failure_reason, None);
        // The timeline: BackingOff (marked, so an earlier BackingOff on an invalid spec does
        // not hide it) stamped when Accepted turned False, and the condition with its text.
        let phase = fact(&o, "phase");
        assert_eq!(phase.value, "BackingOff");
        assert_eq!(phase.reason.as_deref(), Some("VeleroBackupNotFound"));
        assert_eq!(phase.dedup, "VeleroBackupNotFound");
        assert_eq!(phase.at, at(30_999));
        let accepted = fact(&o, "condition/Accepted");
        assert_eq!(accepted.value, "False");
        assert_eq!(accepted.reason.as_deref(), Some("VeleroBackupNotFound"));
        assert!(
            accepted
                .message
                .as_deref()
                .unwrap()
                .contains("Please create a new NonAdminBackup")
        );
        // Recorded after what was seen, BackingOff is placed after Created, not before it.
        let mut seen = Seen::default();
        seen.update(completed.clone(), at(60_000)).unwrap();
        let sent = seen.update(o, at(61_000)).unwrap();
        let created_at = fact(&completed, "phase").at;
        let backing_off = sent
            .transitions
            .iter()
            .find(|t| t.attribute == "phase")
            .unwrap();
        assert_eq!(backing_off.value, "BackingOff");
        assert!(backing_off.at > created_at, "{backing_off:?}");
        let mut merged = completed;
        merge_observations(&mut merged, sent);
        assert_eq!(merged.operation.phase.as_deref(), Some("Completed"));
        assert_eq!(
            merged
                .transitions
                .iter()
                .filter(|t| t.attribute == "phase")
                .map(|t| t.value.as_str())
                .collect::<Vec<_>>(),
            vec!["Created", "BackingOff"]
        );
    }

    #[test]
    fn velero_failures_join_reason_and_validation_errors_bounded() {
        let long = "x".repeat(MAX_TEXT_CHARS + 50);
        let failed = nab(
            json!({"status": {"phase": "Created", "veleroBackup": {"nacuuid": "n",
            "status": {"phase": "FailedValidation", "failureReason": "bad",
                "validationErrors": ["no location", long],
                "completionTimestamp": "2025-03-01T10:00:04Z", "errors": 2}}}}),
        );
        let o = observe_backup(&failed, at(60_000))
            .unwrap()
            .operations
            .remove(0)
            .0;
        let reason = o.operation.failure_reason.unwrap();
        assert!(reason.starts_with("bad; no location; xxx"), "{reason}");
        assert_eq!(
            reason.chars().count(),
            MAX_TEXT_CHARS + 1,
            "bounded, with an ellipsis"
        );
        assert_eq!(o.operation.errors, Some(2));
        assert_eq!(o.operation.phase_rank, 200);
    }

    #[test]
    fn schedule_runs_name_their_schedule() {
        let child = nab(json!({"metadata": {
            "labels": {labels::NAS_ORIGIN_NACUUID: "team-a-daily-1",
                       labels::NAB_SYNCED_FROM_NACUUID: "child-1"},
            "annotations": {labels::NAS_ORIGIN_NAME_ANNOTATION: "daily",
                            labels::NAS_ORIGIN_NAMESPACE_ANNOTATION: "team-a"}},
            "status": {"phase": "New", "veleroBackup": {"nacuuid": "child-1",
                "name": "team-a-daily-1-20250301100000", "namespace": "openshift-adp"}}}));
        let obs = observe_backup(&child, at(0)).unwrap();
        let (o, key) = &obs.operations[0];
        assert_eq!(o.operation.kind, Some(OperationKind::ScheduleRun));
        assert_eq!(o.operation.parent_name.as_deref(), Some("daily"));
        assert_eq!(
            o.operation.velero_name.as_deref(),
            Some("team-a-daily-1-20250301100000")
        );
        assert_eq!(key.as_ref().map(|k| k.nacuuid.as_str()), Some("child-1"));
    }

    #[test]
    fn permanent_deletion_is_an_operation_of_its_own() {
        let mut doomed = completed_nab();
        doomed.spec.delete_backup = Some(true);
        let obs = observe_backup(&doomed, at(60_000)).unwrap();
        assert_eq!(obs.operations.len(), 2);
        let (d, key) = &obs.operations[1];
        let id = delete_operation_id("u-1");
        assert_eq!(d.operation.id, id);
        assert_eq!(obs.ids(), vec!["u-1".to_string(), id.clone()]);
        assert_eq!(d.operation.kind, Some(OperationKind::Delete));
        assert_eq!(d.operation.parent_name.as_deref(), Some("nightly"));
        assert_eq!(d.operation.uid, "u-1");
        assert_eq!(d.operation.namespace, "team-a");
        assert_eq!(d.operation.velero_name.as_deref(), Some("team-a-nightly-x"));
        assert_eq!(
            d.operation.created_at,
            at(60_000),
            "not marked Deleting yet: now"
        );
        assert_eq!(
            key.as_ref().map(|k| k.kind),
            Some(VeleroKind::DeleteBackupRequest)
        );
        // The request's progress, then its errors.
        let processing = nab(json!({"spec": {"deleteBackup": true}, "status": {
            "phase": "Deleting",
            "conditions": [{"type": "Deleting", "status": "True", "reason": "DeletionPending",
                "message": "permanent", "lastTransitionTime": "2025-03-01T11:00:00Z"}],
            "veleroBackup": {"nacuuid": "n"},
            "veleroDeleteBackupRequest": {"name": "n", "nacuuid": "n",
                "status": {"phase": "Processed", "errors": ["bucket gone", "timeout"]}}}}));
        let obs = observe_backup(&processing, at(70_000)).unwrap();
        let d = &obs.operations[1].0;
        assert_eq!(d.operation.phase.as_deref(), Some("Processed"));
        assert_eq!(d.operation.phase_rank, 200);
        assert_eq!(
            d.operation.failure_reason.as_deref(),
            Some("bucket gone; timeout")
        );
        assert_eq!(d.operation.errors, Some(2));
        assert_eq!(
            d.operation.created_at,
            T0_MS + 3_600_000,
            "when deletion began"
        );
        assert_eq!(fact(d, "veleroPhase").value, "Processed");
        assert_eq!(fact(d, "condition/Deleting").value, "True");
        // The id is derived: stable, distinct per backup, a UUID.
        assert_eq!(delete_operation_id("u-1"), id);
        assert_ne!(delete_operation_id("u-2"), id);
        assert!(Uuid::parse_str(&id).is_ok());
    }

    #[test]
    fn deletion_action_outcomes_are_steps_of_the_delete_operation() {
        let deleting = nab(json!({"spec": {"deleteBackup": true}, "status": {
            "phase": "Deleting",
            "conditions": [
                {"type": "Accepted", "status": "True", "reason": "BackupAccepted",
                 "message": "ok", "lastTransitionTime": T0},
                {"type": "Deleting", "status": "True", "reason": "DeletionPending",
                 "message": "permanent", "lastTransitionTime": "2025-03-01T11:00:00Z"},
                {"type": "deletionaction.oadp.openshift.io/a-cleanup", "status": "True",
                 "reason": "Succeeded", "message": "called for 2 items of the backup",
                 "lastTransitionTime": "2025-03-01T11:00:01Z"},
                {"type": "deletionaction.oadp.openshift.io/b-audit", "status": "False",
                 "reason": "Failed", "message": "attempt 1 failed: HTTP 500",
                 "lastTransitionTime": "2025-03-01T11:00:02Z"}],
            "veleroBackup": {"nacuuid": "n"}}}));
        let obs = observe_backup(&deleting, at(70_000)).unwrap();
        let backup = &obs.operations[0].0;
        let delete = &obs.operations[1].0;
        assert_eq!(delete.operation.kind, Some(OperationKind::Delete));
        let cleanup = fact(
            delete,
            "condition/deletionaction.oadp.openshift.io/a-cleanup",
        );
        assert_eq!(cleanup.value, "True");
        assert_eq!(cleanup.reason.as_deref(), Some("Succeeded"));
        let audit = fact(delete, "condition/deletionaction.oadp.openshift.io/b-audit");
        assert_eq!(audit.value, "False");
        assert_eq!(audit.message.as_deref(), Some("attempt 1 failed: HTTP 500"));
        assert!(
            facts(backup)
                .iter()
                .all(|(attribute, _)| !attribute.contains("deletionaction")),
            "{:?}",
            facts(backup)
        );
        assert_eq!(fact(backup, "condition/Accepted").value, "True");
    }

    #[test]
    fn objects_without_identity_are_ignored() {
        let mut anonymous = completed_nab();
        anonymous.metadata.uid = None;
        assert!(observe_backup(&anonymous, 0).is_none());
        let mut nowhere = completed_nab();
        nowhere.metadata.namespace = Some(String::new());
        assert!(observe_backup(&nowhere, 0).is_none());
    }

    #[test]
    fn restores_name_their_backup_and_count_restored_items() {
        let nar: NonAdminRestore = serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminRestore",
            "metadata": {"name": "back", "namespace": "team-a", "uid": "r-1",
                         "creationTimestamp": T0},
            "spec": {"restoreSpec": {"backupName": "nightly"}},
            "status": {"phase": "Created", "queueInfo": {"estimatedQueuePosition": 1},
                "veleroRestore": {"nacuuid": "team-a-back-y", "name": "team-a-back-y",
                    "status": {"phase": "InProgress", "startTimestamp": "2025-03-01T10:00:06Z",
                        "progress": {"totalItems": 8, "itemsRestored": 3}}}}
        }))
        .unwrap();
        let obs = observe_restore(&nar, at(60_000)).unwrap();
        let (o, key) = &obs.operations[0];
        assert_eq!(o.operation.kind, Some(OperationKind::Restore));
        assert_eq!(o.operation.parent_name.as_deref(), Some("nightly"));
        assert_eq!(o.operation.velero_name.as_deref(), Some("team-a-back-y"));
        assert_eq!(
            (o.operation.items_total, o.operation.items_done),
            (Some(8), Some(3))
        );
        assert_eq!(o.operation.started_at, Some(at(6_000)));
        assert_eq!(o.operation.completed_at, None);
        assert_eq!(o.operation.phase.as_deref(), Some("InProgress"));
        assert_eq!(fact(o, "veleroPhase").at, at(6_999));
        assert_eq!(fact(o, "queuePosition").value, "1");
        assert_eq!(
            key.clone().unwrap(),
            VeleroKey {
                kind: VeleroKind::Restore,
                namespace: "team-a".into(),
                nacuuid: "team-a-back-y".into()
            }
        );
    }

    #[test]
    fn locations_take_velero_availability_and_its_message() {
        let with_status = |status: Value| -> NonAdminBackupStorageLocation {
            serde_json::from_value(json!({
                "apiVersion": "oadp.openshift.io/v1alpha1",
                "kind": "NonAdminBackupStorageLocation",
                "metadata": {"name": "mine", "namespace": "team-a", "uid": "l-1",
                             "creationTimestamp": T0},
                "spec": {"backupStorageLocationSpec": {"provider": "aws",
                    "objectStorage": {"bucket": "b"}}},
                "status": status
            }))
            .unwrap()
        };
        let pending = with_status(json!({"phase": "Created", "conditions": [
            {"type": "ClusterAdminApproved", "status": "False", "reason": "BslSpecApprovalPending",
             "message": "waiting", "lastTransitionTime": T0}]}));
        let o = observe_storage_location(&pending, at(0))
            .unwrap()
            .operations
            .remove(0);
        assert_eq!(o.1, None);
        assert_eq!(
            o.0.operation.kind,
            Some(OperationKind::BackupStorageLocation)
        );
        assert_eq!(o.0.operation.phase.as_deref(), Some("Created"));
        assert_eq!(
            o.0.operation.failure_reason, None,
            "pending approval is no failure"
        );

        let down = with_status(json!({"phase": "Created",
            "veleroBackupStorageLocation": {"name": "team-a-mine-z", "nacuuid": "team-a-mine-z",
                "status": {"phase": "Unavailable", "message": "bucket not found",
                    "lastValidationTime": "2025-03-01T10:01:00Z"}}}));
        let o = observe_storage_location(&down, at(90_000))
            .unwrap()
            .operations
            .remove(0)
            .0;
        assert_eq!(o.operation.phase.as_deref(), Some("Unavailable"));
        assert_eq!(
            o.operation.failure_reason.as_deref(),
            Some("bucket not found")
        );
        assert_eq!(o.operation.velero_name.as_deref(), Some("team-a-mine-z"));
        assert_eq!(fact(&o, "veleroPhase").at, at(60_999));
        let up = with_status(json!({"phase": "Created",
            "veleroBackupStorageLocation": {"status": {"phase": "Available"}}}));
        let u = observe_storage_location(&up, at(0))
            .unwrap()
            .operations
            .remove(0)
            .0;
        assert_eq!(u.operation.phase_rank, o.operation.phase_rank);

        let rejected = with_status(json!({"phase": "BackingOff", "conditions": [
            {"type": "ClusterAdminApproved", "status": "False", "reason": "BslSpecRejected",
             "message": "not this bucket", "lastTransitionTime": T0}]}));
        let r = observe_storage_location(&rejected, at(0))
            .unwrap()
            .operations
            .remove(0)
            .0;
        assert_eq!(
            r.operation.failure_reason.as_deref(),
            Some("not this bucket")
        );
    }

    #[test]
    fn downloads_take_the_velero_request_phase() {
        let nadr: NonAdminDownloadRequest = serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminDownloadRequest",
            "metadata": {"name": "logs", "namespace": "team-a", "uid": "d-1",
                         "creationTimestamp": T0},
            "spec": {"target": {"kind": "BackupLog", "name": "nightly"}},
            "status": {"phase": "Created", "velero": {"status": {"phase": "Processed",
                "downloadURL": "http://x/y"}}}
        }))
        .unwrap();
        let o = observe_download(&nadr, at(0))
            .unwrap()
            .operations
            .remove(0)
            .0;
        assert_eq!(o.operation.kind, Some(OperationKind::Download));
        assert_eq!(o.operation.parent_name.as_deref(), Some("nightly"));
        assert_eq!(o.operation.phase.as_deref(), Some("Processed"));
        assert_eq!(o.operation.nac_phase.as_deref(), Some("Created"));
        assert_eq!(fact(&o, "veleroPhase").value, "Processed");
        let unavailable: NonAdminDownloadRequest = serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminDownloadRequest",
            "metadata": {"name": "logs", "namespace": "team-a", "uid": "d-2"},
            "spec": {"target": {"kind": "BackupLog", "name": "gone"}},
            "status": {"phase": "BackingOff", "conditions": [
                {"type": "NonAdminBackupNotAvailable", "status": "True", "reason": "NotFound",
                 "message": "no backup gone", "lastTransitionTime": T0}]}
        }))
        .unwrap();
        let o = observe_download(&unavailable, at(5))
            .unwrap()
            .operations
            .remove(0)
            .0;
        assert_eq!(
            o.operation.failure_reason.as_deref(),
            Some("no backup gone")
        );
        assert_eq!(
            o.operation.created_at,
            at(5),
            "no creation stamp: when observed"
        );
    }

    fn velero_backup(meta: Value, status: Value) -> Backup {
        serde_json::from_value(json!({
            "apiVersion": "velero.io/v1", "kind": "Backup",
            "metadata": meta, "spec": {}, "status": status
        }))
        .unwrap()
    }

    fn nac_meta() -> Value {
        json!({"name": "team-a-nightly-x", "namespace": "openshift-adp",
            "creationTimestamp": T0,
            "labels": {labels::OADP: "True", labels::NAB_ORIGIN_NACUUID: "team-a-nightly-x"},
            "annotations": {labels::NAB_ORIGIN_NAME_ANNOTATION: "nightly",
                            labels::NAB_ORIGIN_NAMESPACE_ANNOTATION: "team-a"}})
    }

    #[test]
    fn velero_backups_resolve_to_their_operation_in_their_origin_namespace() {
        let vb = velero_backup(nac_meta(), json!({"phase": "New"}));
        let v = observe_velero_backup(&vb, at(300)).unwrap();
        assert_eq!(
            v.key,
            VeleroKey {
                kind: VeleroKind::Backup,
                namespace: "team-a".into(),
                nacuuid: "team-a-nightly-x".into()
            }
        );
        assert_eq!(v.velero_name, "team-a-nightly-x");
        assert_eq!(v.origin_name.as_deref(), Some("nightly"));
        assert_eq!(
            v.transitions[0].at,
            at(300),
            "New at creation, observed within it"
        );
        let tenant = observe_backup(&completed_nab(), at(0)).unwrap();
        let target = identity(&tenant.operations[0].0.operation);
        assert_eq!(target.phase, None, "identity only");
        let resolved = v.clone().resolve(&target).unwrap();
        assert_eq!(resolved.operation.id, "u-1");
        assert_eq!(resolved.operation.kind, Some(OperationKind::Backup));
        assert_eq!(resolved.operation.name, "nightly");
        assert_eq!(resolved.operation.created_at, T0_MS);
        assert_eq!(resolved.operation.phase.as_deref(), Some("New"));
        assert_eq!(resolved.operation.phase_rank, 100);
        assert_eq!(resolved.operation.nac_phase, None, "not Velero's to say");
        assert_eq!(resolved.operation.queue_position, None);
        assert_eq!(
            resolved.transitions[0].operation_id, "u-1",
            "facts follow the operation"
        );
        // Never into another namespace's operation.
        let mut elsewhere = target.clone();
        elsewhere.namespace = "team-b".into();
        assert!(v.resolve(&elsewhere).is_none());
    }

    #[test]
    fn velero_backups_without_nac_labels_or_origin_are_not_ours() {
        let mut meta = nac_meta();
        meta["labels"] = json!({labels::OADP: "True"});
        assert!(observe_velero_backup(&velero_backup(meta, json!({})), 0).is_none());
        let mut meta = nac_meta();
        meta["annotations"] = json!({labels::NAB_ORIGIN_NAME_ANNOTATION: "nightly"});
        assert!(observe_velero_backup(&velero_backup(meta, json!({})), 0).is_none());
        // A schedule's backup labelled for its child NAB: the NAS origin namespace counts.
        let meta = json!({"name": "team-a-daily-1-2025", "namespace": "openshift-adp",
            "labels": {labels::NAB_ORIGIN_NACUUID: "child-1", labels::NAS_ORIGIN_NACUUID: "d"},
            "annotations": {labels::NAS_ORIGIN_NAMESPACE_ANNOTATION: "team-a"}});
        let v = observe_velero_backup(&velero_backup(meta, json!({"phase": "Queued"})), 0).unwrap();
        assert_eq!(v.key.nacuuid, "child-1");
        assert_eq!(v.key.namespace, "team-a");
        assert_eq!(v.operation.phase.as_deref(), Some("Queued"));
    }

    #[test]
    fn velero_backup_fields_and_stamps() {
        let vb = velero_backup(
            nac_meta(),
            json!({"phase": "PartiallyFailed", "startTimestamp": "2025-03-01T10:00:05Z",
                "completionTimestamp": "2025-03-01T10:00:20Z", "errors": 3, "warnings": 2,
                "progress": {"totalItems": 30, "itemsBackedUp": 29}}),
        );
        let v = observe_velero_backup(&vb, at(600_000)).unwrap();
        let r = &v.operation;
        assert_eq!(
            (r.started_at, r.completed_at),
            (Some(at(5_000)), Some(at(20_000)))
        );
        assert_eq!((r.items_total, r.items_done), (Some(30), Some(29)));
        assert_eq!((r.warnings, r.errors), (Some(2), Some(3)));
        assert_eq!(v.transitions.len(), 1);
        assert_eq!(v.transitions[0].attribute, "veleroPhase");
        assert_eq!(v.transitions[0].at, at(20_999));
        let running = velero_backup(
            nac_meta(),
            json!({"phase": "InProgress", "startTimestamp": "2025-03-01T10:00:05Z"}),
        );
        let v = observe_velero_backup(&running, at(5_400)).unwrap();
        assert_eq!(v.transitions[0].at, at(5_400));
        let queued = velero_backup(nac_meta(), json!({"phase": "Queued"}));
        let v = observe_velero_backup(&queued, at(3_333)).unwrap();
        assert_eq!(v.transitions[0].at, at(3_333));
        // Not processed yet: Velero reads no phase as New.
        let bare = velero_backup(nac_meta(), Value::Null);
        let v = observe_velero_backup(&bare, at(700)).unwrap();
        assert_eq!(v.operation.phase.as_deref(), Some("New"));
        assert_eq!(v.operation.phase_rank, 100);
        assert_eq!(v.transitions.len(), 1);
        assert_eq!(v.transitions[0].value, "New");
        assert_eq!(v.transitions[0].at, at(700));
    }

    #[test]
    fn velero_restores_and_deletion_requests() {
        let r: Restore = serde_json::from_value(json!({
            "apiVersion": "velero.io/v1", "kind": "Restore",
            "metadata": {"name": "team-a-back-y", "namespace": "openshift-adp",
                "labels": {labels::NAR_ORIGIN_NACUUID: "team-a-back-y"},
                "annotations": {labels::NAR_ORIGIN_NAMESPACE_ANNOTATION: "team-a",
                                labels::NAR_ORIGIN_NAME_ANNOTATION: "back"}},
            "spec": {"backupName": "team-a-nightly-x"},
            "status": {"phase": "Completed", "progress": {"totalItems": 4, "itemsRestored": 4}}
        }))
        .unwrap();
        let v = observe_velero_restore(&r, 0).unwrap();
        assert_eq!(v.key.kind, VeleroKind::Restore);
        assert_eq!(v.key.namespace, "team-a");
        assert_eq!(v.operation.items_done, Some(4));
        // A restore labelled as a backup's is not resolved as a restore.
        let wrong: Restore = serde_json::from_value(json!({
            "apiVersion": "velero.io/v1", "kind": "Restore",
            "metadata": {"name": "x", "labels": {labels::NAB_ORIGIN_NACUUID: "x"},
                "annotations": {labels::NAB_ORIGIN_NAMESPACE_ANNOTATION: "team-a"}},
            "spec": {}
        }))
        .unwrap();
        assert!(observe_velero_restore(&wrong, 0).is_none());

        let dbr: DeleteBackupRequest = serde_json::from_value(json!({
            "apiVersion": "velero.io/v1", "kind": "DeleteBackupRequest",
            "metadata": {"name": "team-a-nightly-x", "namespace": "openshift-adp",
                "labels": {labels::NAB_ORIGIN_NACUUID: "team-a-nightly-x"},
                "annotations": {labels::NAB_ORIGIN_NAMESPACE_ANNOTATION: "team-a"}},
            "spec": {"backupName": "team-a-nightly-x"},
            "status": {"phase": "Processed"}
        }))
        .unwrap();
        let v = observe_delete_request(&dbr, 0).unwrap();
        assert_eq!(v.key.kind, VeleroKind::DeleteBackupRequest);
        assert_eq!(v.operation.phase.as_deref(), Some("Processed"));
        assert_eq!(v.operation.failure_reason, None);
        let mut doomed = completed_nab();
        doomed.spec.delete_backup = Some(true);
        let tenant = observe_backup(&doomed, 0).unwrap();
        let (delete, key) = &tenant.operations[1];
        assert_eq!(
            key.as_ref(),
            Some(&v.key),
            "the request finds the Delete operation"
        );
        let resolved = v.resolve(&identity(&delete.operation)).unwrap();
        assert_eq!(resolved.operation.id, delete_operation_id("u-1"));
        assert_eq!(resolved.operation.kind, Some(OperationKind::Delete));
    }

    #[test]
    fn seen_sends_only_changes_and_keeps_counters_from_moving_back() {
        let mut seen = Seen::default();
        let first = observe_backup(&completed_nab(), at(0))
            .unwrap()
            .operations
            .remove(0)
            .0;
        let sent = seen.update(first.clone(), at(0)).unwrap();
        assert_eq!(sent.transitions.len(), first.transitions.len());
        assert!(
            seen.update(first.clone(), at(10)).is_none(),
            "nothing changed"
        );
        // A lagging mirror (InProgress after Completed): its facts still go, its counters not.
        let lagging = observe_backup(
            &nab(
                json!({"status": {"phase": "Created", "veleroBackup": {"nacuuid": "n",
                "status": {"phase": "InProgress", "startTimestamp": "2025-03-01T10:00:05Z",
                    "progress": {"totalItems": 12, "itemsBackedUp": 4}}}}}),
            ),
            at(20),
        )
        .unwrap()
        .operations
        .remove(0)
        .0;
        let sent = seen.update(lagging, at(20)).unwrap();
        assert_eq!(sent.operation.items_done, None);
        assert_eq!(sent.operation.items_total, None);
        assert_eq!(
            sent.transitions
                .iter()
                .map(|t| t.value.as_str())
                .collect::<Vec<_>>(),
            vec!["InProgress"]
        );
    }

    #[test]
    fn seen_places_phases_in_rank_order_whatever_the_observation_times() {
        let with_velero = |status: Value, observed: i64| {
            observe_backup(
                &nab(json!({"status": {"phase": "Created",
                    "veleroBackup": {"nacuuid": "n", "status": status}}})),
                at(observed),
            )
            .unwrap()
            .operations
            .remove(0)
            .0
        };
        let velero_at = |o: &Observation, value: &str| {
            o.transitions
                .iter()
                .find(|t| t.attribute == ATTR_VELERO_PHASE && t.value == value)
                .map(|t| t.at)
        };
        let mut seen = Seen::default();
        // Finalizing, timed when observed: just after the second Velero completed in.
        let finalizing = with_velero(json!({"phase": "Finalizing"}), 9_050);
        let sent = seen.update(finalizing, at(9_050)).unwrap();
        assert_eq!(velero_at(&sent, "Finalizing"), Some(at(9_050)));
        // Completed, stamped with its whole completion second (10:00:08), observed later:
        // alone it would sit at the end of that second, before Finalizing.
        let completed = with_velero(
            json!({"phase": "Completed", "completionTimestamp": "2025-03-01T10:00:08Z"}),
            9_100,
        );
        let mut alone = completed.clone();
        Seen::default().place(&mut alone);
        assert_eq!(velero_at(&alone, "Completed"), Some(at(8_999)));
        let sent = seen.update(completed.clone(), at(9_100)).unwrap();
        assert_eq!(velero_at(&sent, "Completed"), Some(at(9_050)));
        // A phase first seen late (a lagging mirror) goes before the higher ones sent.
        let lagging = with_velero(json!({"phase": "InProgress"}), 20_000);
        let sent = seen.update(lagging, at(20_000)).unwrap();
        assert_eq!(velero_at(&sent, "InProgress"), Some(at(9_049)));
        // A fact sent before keeps its place when sent whole again (a resync).
        let mut again = completed;
        seen.place(&mut again);
        assert_eq!(velero_at(&again, "Completed"), Some(at(9_050)));
    }

    #[test]
    fn merging_keeps_known_values_forward_phases_and_every_fact() {
        let tenant = observe_backup(&completed_nab(), at(0))
            .unwrap()
            .operations
            .remove(0)
            .0;
        let mut merged = tenant.clone();
        let vb = velero_backup(
            nac_meta(),
            json!({"phase": "InProgress",
            "startTimestamp": "2025-03-01T10:00:05Z"}),
        );
        let velero = observe_velero_backup(&vb, at(5_100))
            .unwrap()
            .resolve(&identity(&tenant.operation))
            .unwrap();
        merge_observations(&mut merged, velero);
        let r = &merged.operation;
        assert_eq!(
            r.phase.as_deref(),
            Some("Completed"),
            "a lower rank never wins"
        );
        assert_eq!(
            r.nac_phase.as_deref(),
            Some("Created"),
            "unknown never replaces known"
        );
        assert_eq!(r.queue_position, Some(0));
        assert_eq!(r.completed_at, Some(at(9_000)));
        let values: Vec<_> = merged
            .transitions
            .iter()
            .map(|t| t.value.as_str())
            .collect();
        assert!(
            values.contains(&"InProgress") && values.contains(&"Completed"),
            "{values:?}"
        );
        let count = merged.transitions.len();
        merge_observations(&mut merged, tenant.clone());
        assert_eq!(merged.transitions.len(), count, "no duplicate facts");

        let mut a = tenant.clone();
        a.operation.requester = Some("alice".into());
        let mut b = tenant;
        b.operation.requester = Some("mallory".into());
        b.operation.phase = Some("Completed".into());
        merge_observations(&mut a, b);
        assert_eq!(a.operation.requester.as_deref(), Some("alice"));
    }
}
