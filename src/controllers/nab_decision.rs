//! The NonAdminBackup reconcile decision, pure: from what was observed (the NAB, its Velero
//! Backup and DeleteBackupRequest, the policy verdict, the queue position) to the ONE next step,
//! following seed 004's flowchart. The controller applies the step and reconciles again, so a
//! crash between any two steps resumes where it stopped and never yields two Velero Backups:
//! the NACUUID is in the status before the Backup is created, and the Backup is looked up by it.
use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use uuid::Uuid;

use crate::api::nonadmin::conditions::{reasons, types};
use crate::api::nonadmin::labels::{self, finalizers};
use crate::api::nonadmin::{
    DeletionAction, NonAdminBackup, NonAdminBackupStatus, NonAdminPhase, QueueInfo,
    RelatedVeleroBackup, RelatedVeleroDeleteBackupRequest,
};
use crate::api::velero::{
    Backup, BackupPhase, BackupSpec, DeleteBackupRequest, DeleteBackupRequestPhase,
};
use crate::policy::nacuuid::nacuuid;

/// Message of the Accepted condition when the spec is valid.
pub const ACCEPTED_MESSAGE: &str = "backup accepted";
/// Message of the Queued condition once the Velero Backup exists.
pub const QUEUED_MESSAGE: &str = "Created Velero Backup object";
/// Deleting condition when the NAB was deleted through the API (data stays in storage).
pub const API_DELETE_MESSAGE: &str =
    "permanent backup deletion requires setting spec.deleteBackup to true";
/// Deleting condition for `spec.deleteBackup: true`.
pub const DELETE_BACKUP_MESSAGE: &str = "backup accepted for deletion";
/// Accepted=False message (reason `VeleroBackupNotFound`, phase BackingOff) once the Velero
/// Backup the NAB made is gone: upstream NAC's text, word for word.
pub const VELERO_BACKUP_NOT_FOUND_MESSAGE: &str = "NonAdminBackup is finalized and its associated Velero Backup has been removed. Please create a new NonAdminBackup to initiate a new Backup";
/// How long to wait before retrying a DeleteBackupRequest that ended with errors.
pub const DELETE_RETRY_BACKOFF: Duration = Duration::from_secs(30);
/// How long a NAB labelled as synced may wait for the status its creator writes next.
pub const SYNCED_STATUS_GRACE: Duration = Duration::from_secs(10);
/// How often to look again while Velero deletes a backup.
pub const DELETION_POLL: Duration = Duration::from_secs(2);
/// How often to look again while a backup waits for its namespace's shared-pool entry.
pub const STORAGE_WAIT_POLL: Duration = Duration::from_secs(2);

/// Everything the decision depends on.
#[derive(Debug, Clone)]
pub struct NabObservation<'a> {
    /// The NAB as just read from the API server.
    pub nab: &'a NonAdminBackup,
    /// The Velero Backup carrying this NAB's NACUUID label, if any.
    pub velero_backup: Option<&'a Backup>,
    /// The DeleteBackupRequest for that backup, if any.
    pub delete_request: Option<&'a DeleteBackupRequest>,
    /// The policy's verdict: the Velero spec to create, or the reason the spec is refused.
    pub verdict: Result<BackupSpec, String>,
    /// Estimated queue position of the Velero Backup (None when it has none).
    pub queue_position: Option<u64>,
    /// The OADP namespace where Velero objects live.
    pub oadp_namespace: &'a str,
    /// A fresh UUID, used only when a NACUUID must be generated.
    pub fresh_uuid: Uuid,
    /// Now, for condition transition times.
    pub now: Time,
    /// The cluster's DeletionActions (read only while a permanent deletion is about to create
    /// its DeleteBackupRequest; empty otherwise).
    pub deletion_actions: &'a [DeletionAction],
    /// Why the backup waits for storage: set when it has no storage location of its own and
    /// the shared backup pool is configured but its namespace's entry is not ready (seed 001).
    pub storage_wait: Option<String>,
    /// UID of the NAB's namespace (recorded on the Velero Backup it creates, so the backup
    /// sync never adopts the backup into a namespace re-created under the same name); `None`
    /// when it was not read.
    pub namespace_uid: Option<&'a str>,
}

/// The one step to take next.
#[derive(Debug, Clone, PartialEq)]
pub enum NabStep {
    /// Write this status (then reconcile again).
    WriteStatus(Box<NonAdminBackupStatus>),
    /// Add the NAB finalizer.
    AddFinalizer,
    /// Create this Velero Backup.
    CreateVeleroBackup(Box<Backup>),
    /// Delete the Velero Backup of that name.
    DeleteVeleroBackup(String),
    /// Delete the DeleteBackupRequests of this NAB.
    DeleteDeleteBackupRequests,
    /// Create this DeleteBackupRequest.
    CreateDeleteBackupRequest(Box<DeleteBackupRequest>),
    /// Run these deletion actions (ordered, not finished yet) on this Velero Backup before its
    /// DeleteBackupRequest is created (seed 003).
    RunDeletionActions {
        /// The Velero Backup being deleted.
        backup: Box<Backup>,
        /// The actions still to run, in alphanumeric order of their names.
        actions: Vec<DeletionAction>,
    },
    /// Delete the NonAdminRestores made from this NAB, then the NAB itself (spec.deleteBackup).
    DeleteSelf,
    /// The Velero Backup of a NonAdminSchedule's run went away without the tenant asking (TTL
    /// expiry, admin): the child NAB follows it (a NAB of the tenant's own stays, BackingOff).
    FollowVanishedBackup,
    /// Remove the NAB finalizer: nothing of it is left in the OADP namespace.
    RemoveFinalizer,
    /// Record the NAB's namespace UID on its Velero Backup of that name, which has none (made
    /// by upstream NAC, or by NAC before it recorded one).
    RecordNamespaceIdentity {
        /// The Velero Backup.
        backup: String,
        /// The UID of the NAB's namespace.
        namespace_uid: String,
    },
    /// Nothing to do until something changes (an invalid spec waits for the tenant).
    AwaitChange,
    /// Nothing to do now; look again after this long.
    RequeueAfter(Duration),
}

use super::status;
pub use super::status::set_condition;

/// Whether `backup` records no origin namespace UID (pure).
pub fn records_no_namespace(backup: &Backup) -> bool {
    backup
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(labels::NAB_ORIGIN_NAMESPACE_UID_ANNOTATION))
        .is_none_or(|uid| uid.is_empty())
}

/// Whether two statuses differ in anything but condition transition times (writes are skipped
/// when they do not).
pub fn status_changed(old: Option<&NonAdminBackupStatus>, new: &NonAdminBackupStatus) -> bool {
    status::differs_ignoring_transition_times(old, new, |s| &mut s.conditions)
}

/// Phases only move forward.
fn advance(status: &mut NonAdminBackupStatus, to: NonAdminPhase) {
    status::advance_phase(&mut status.phase, to);
}

fn has_finalizer(nab: &NonAdminBackup) -> bool {
    status::has_finalizer(&nab.metadata, finalizers::NON_ADMIN_BACKUP)
}

/// Whether the NAB's Velero Backup was made (or adopted) already: Queued=True (upstream's test),
/// phase Created, or its status mirrored. Its NACUUID is then used up: a Velero Backup missing
/// now vanished (TTL expiry, an admin's delete, orphan cleanup) and is never made again.
pub fn velero_backup_was_made(status: Option<&NonAdminBackupStatus>) -> bool {
    status.is_some_and(|s| {
        s.phase == Some(NonAdminPhase::Created)
            || s.velero_backup.as_ref().is_some_and(|v| v.status.is_some())
            || s.conditions
                .iter()
                .any(|c| c.type_ == types::QUEUED && c.status == "True")
    })
}

/// Whether a NonAdminSchedule made this NAB for one of its runs.
fn schedule_child(nab: &NonAdminBackup) -> bool {
    nab.metadata
        .labels
        .as_ref()
        .is_some_and(|l| l.contains_key(labels::NAS_ORIGIN_NACUUID))
}

/// The status of a NAB whose Velero Backup vanished, as upstream writes it: phase BackingOff
/// (the one way a phase moves back after Created), Accepted=False `VeleroBackupNotFound`
/// telling the tenant to create a new NonAdminBackup. The last mirrored Velero status stays
/// (what the backup was); nothing is queued any more.
fn vanished_status(mut status: NonAdminBackupStatus, now: &Time) -> NonAdminBackupStatus {
    status.phase = Some(NonAdminPhase::BackingOff);
    set_condition(
        &mut status.conditions,
        types::ACCEPTED,
        false,
        reasons::VELERO_BACKUP_NOT_FOUND,
        VELERO_BACKUP_NOT_FOUND_MESSAGE,
        now,
    );
    if let Some(queue) = status.queue_info.as_mut() {
        queue.estimated_queue_position = 0;
    }
    status
}

/// The Velero Backup NAC creates for `nab` under `nacuuid`; `namespace_uid` (the UID of the
/// NAB's namespace) is recorded next to the origin annotations.
pub fn velero_backup_for(
    nab: &NonAdminBackup,
    nacuuid: &str,
    oadp_namespace: &str,
    spec: BackupSpec,
    namespace_uid: Option<&str>,
) -> Backup {
    let mut backup = Backup::new(nacuuid, spec);
    backup.metadata.namespace = Some(oadp_namespace.to_string());
    let mut l = BTreeMap::new();
    l.insert(labels::OADP.to_string(), labels::OADP_VALUE.to_string());
    l.insert(
        labels::MANAGED_BY.to_string(),
        labels::MANAGED_BY_VALUE.to_string(),
    );
    l.insert(labels::NAB_ORIGIN_NACUUID.to_string(), nacuuid.to_string());
    backup.metadata.labels = Some(l);
    let mut a = BTreeMap::new();
    a.insert(
        labels::NAB_ORIGIN_NAME_ANNOTATION.to_string(),
        nab.metadata.name.clone().unwrap_or_default(),
    );
    a.insert(
        labels::NAB_ORIGIN_NAMESPACE_ANNOTATION.to_string(),
        nab.metadata.namespace.clone().unwrap_or_default(),
    );
    if let Some(uid) = namespace_uid.filter(|uid| !uid.is_empty()) {
        a.insert(
            labels::NAB_ORIGIN_NAMESPACE_UID_ANNOTATION.to_string(),
            uid.to_string(),
        );
    }
    backup.metadata.annotations = Some(a);
    backup
}

/// The DeleteBackupRequest for `backup` (labelled as Velero's CLI labels it, plus origin).
pub fn delete_request_for(
    backup: &Backup,
    nacuuid: &str,
    nab: &NonAdminBackup,
) -> DeleteBackupRequest {
    let name = backup.metadata.name.clone().unwrap_or_default();
    let mut request: DeleteBackupRequest = DeleteBackupRequest::new(
        &name,
        crate::api::velero::DeleteBackupRequestSpec {
            backup_name: name.clone(),
            ..Default::default()
        },
    );
    request.metadata.namespace = backup.metadata.namespace.clone();
    let mut l = BTreeMap::new();
    l.insert(labels::OADP.to_string(), labels::OADP_VALUE.to_string());
    l.insert(
        labels::MANAGED_BY.to_string(),
        labels::MANAGED_BY_VALUE.to_string(),
    );
    l.insert(labels::NAB_ORIGIN_NACUUID.to_string(), nacuuid.to_string());
    l.insert(
        crate::api::velero::labels::BACKUP_NAME.to_string(),
        crate::api::velero::labels::valid_label_value(&name),
    );
    if let Some(uid) = &backup.metadata.uid {
        l.insert(
            crate::api::velero::labels::BACKUP_UID.to_string(),
            uid.clone(),
        );
    }
    request.metadata.labels = Some(l);
    let mut a = BTreeMap::new();
    a.insert(
        labels::NAB_ORIGIN_NAME_ANNOTATION.to_string(),
        nab.metadata.name.clone().unwrap_or_default(),
    );
    a.insert(
        labels::NAB_ORIGIN_NAMESPACE_ANNOTATION.to_string(),
        nab.metadata.namespace.clone().unwrap_or_default(),
    );
    request.metadata.annotations = Some(a);
    request
}

fn velero_phase(backup: &Backup) -> Option<&BackupPhase> {
    backup.status.as_ref().and_then(|s| s.phase.as_ref())
}

/// Mirrors the Velero Backup into the NAB status: spec, status, queue position.
fn mirror(status: &mut NonAdminBackupStatus, backup: &Backup, queue_position: Option<u64>) {
    let related = status
        .velero_backup
        .get_or_insert_with(RelatedVeleroBackup::default);
    related.spec = Some(backup.spec.clone());
    related.status = backup.status.clone();
    let terminal = velero_phase(backup).is_some_and(BackupPhase::is_terminal);
    let position = if terminal {
        0
    } else {
        queue_position.unwrap_or(0)
    };
    status.queue_info = Some(QueueInfo {
        estimated_queue_position: position as i64,
    });
}

/// Decides the next step for a NonAdminBackup.
pub fn decide(obs: &NabObservation<'_>) -> NabStep {
    let nab = obs.nab;
    let current = nab.status.clone();
    let mut status = current.clone().unwrap_or_default();
    let deleting = nab.metadata.deletion_timestamp.is_some();
    let delete_backup = nab.spec.delete_backup == Some(true);

    if delete_backup {
        return decide_permanent_delete(obs, status, current.as_ref(), deleting);
    }
    if deleting {
        return decide_api_delete(obs, status, current.as_ref());
    }

    // Create/update path.
    let vb_exists = obs.velero_backup.is_some();
    let has_uuid = status
        .velero_backup
        .as_ref()
        .and_then(|v| v.nacuuid.as_ref())
        .is_some_and(|u| !u.is_empty());
    let synced = nab
        .metadata
        .labels
        .as_ref()
        .is_some_and(|l| l.contains_key(labels::NAB_SYNCED_FROM_NACUUID));
    if synced && !has_uuid {
        // Backup sync and schedules create the NAB first and write its status (which names
        // the existing Velero Backup) right after: give that write a moment before treating
        // the NAB as a new request (a copied or forged label then only delays it).
        let age = nab
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|created| obs.now.0.as_second() - created.0.as_second())
            .unwrap_or(i64::MAX);
        if (0..SYNCED_STATUS_GRACE.as_secs() as i64).contains(&age) {
            return NabStep::RequeueAfter(Duration::from_secs(1));
        }
    }
    if !vb_exists {
        if status.phase.is_none() {
            status.phase = Some(NonAdminPhase::New);
        }
        if velero_backup_was_made(current.as_ref()) {
            // Velero's backup is gone (TTL expiry, an admin, orphan cleanup). Making another
            // under the used NACUUID would take a backup nobody asked for (a GitOps tool keeps
            // the NAB): as upstream, the NAB stays, BackingOff, until the tenant deletes it. A
            // schedule's run is NAC's own object and follows its backup away instead.
            if schedule_child(nab) && has_finalizer(nab) {
                return NabStep::FollowVanishedBackup;
            }
            let next = vanished_status(status, &obs.now);
            if status_changed(current.as_ref(), &next) {
                return NabStep::WriteStatus(Box::new(next));
            }
            return NabStep::AwaitChange;
        }
        match &obs.verdict {
            Err(message) => {
                advance(&mut status, NonAdminPhase::BackingOff);
                set_condition(
                    &mut status.conditions,
                    types::ACCEPTED,
                    false,
                    reasons::INVALID_BACKUP_SPEC,
                    message,
                    &obs.now,
                );
                if status_changed(current.as_ref(), &status) {
                    return NabStep::WriteStatus(Box::new(status));
                }
                return NabStep::AwaitChange;
            }
            Ok(spec) => {
                set_condition(
                    &mut status.conditions,
                    types::ACCEPTED,
                    true,
                    reasons::BACKUP_ACCEPTED,
                    ACCEPTED_MESSAGE,
                    &obs.now,
                );
                let has_uuid = status
                    .velero_backup
                    .as_ref()
                    .and_then(|v| v.nacuuid.as_ref())
                    .is_some_and(|u| !u.is_empty());
                if !has_uuid {
                    let id = nacuuid(
                        nab.metadata.namespace.as_deref().unwrap_or_default(),
                        nab.metadata.name.as_deref().unwrap_or_default(),
                        &obs.fresh_uuid,
                    );
                    status.velero_backup = Some(RelatedVeleroBackup {
                        nacuuid: Some(id.clone()),
                        name: Some(id),
                        namespace: Some(obs.oadp_namespace.to_string()),
                        ..Default::default()
                    });
                }
                if let Some(wait) = &obs.storage_wait {
                    set_condition(
                        &mut status.conditions,
                        types::QUEUED,
                        false,
                        crate::api::nonadmin::entry_conditions::REASON_WAITING_FOR_BACKUP_STORAGE,
                        wait,
                        &obs.now,
                    );
                }
                if status_changed(current.as_ref(), &status) {
                    // The NACUUID is persisted before anything is created.
                    return NabStep::WriteStatus(Box::new(status));
                }
                if !has_finalizer(nab) {
                    return NabStep::AddFinalizer;
                }
                if obs.storage_wait.is_some() {
                    // Never the default location instead: the pool is where these go.
                    return NabStep::RequeueAfter(STORAGE_WAIT_POLL);
                }
                let id = status
                    .velero_backup
                    .as_ref()
                    .and_then(|v| v.nacuuid.clone())
                    .unwrap_or_default();
                return NabStep::CreateVeleroBackup(Box::new(velero_backup_for(
                    nab,
                    &id,
                    obs.oadp_namespace,
                    spec.clone(),
                    obs.namespace_uid,
                )));
            }
        }
    }

    // The Velero Backup exists: Created, Queued, and mirror it.
    let Some(backup) = obs.velero_backup else {
        return NabStep::AwaitChange;
    };
    if !has_uuid {
        // Found through the synced-from label (a NAB upstream NAC's synchronizer made): the
        // status names the backup from now on.
        let related = status
            .velero_backup
            .get_or_insert_with(RelatedVeleroBackup::default);
        related.nacuuid = backup
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(labels::NAB_ORIGIN_NACUUID))
            .cloned();
        related.name = backup.metadata.name.clone();
        related.namespace = Some(obs.oadp_namespace.to_string());
    }
    if !has_finalizer(nab) {
        return NabStep::AddFinalizer;
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
            reasons::BACKUP_ACCEPTED,
            ACCEPTED_MESSAGE,
            &obs.now,
        );
    }
    set_condition(
        &mut status.conditions,
        types::QUEUED,
        true,
        reasons::BACKUP_SCHEDULED,
        QUEUED_MESSAGE,
        &obs.now,
    );
    mirror(&mut status, backup, obs.queue_position);
    if status_changed(current.as_ref(), &status) {
        return NabStep::WriteStatus(Box::new(status));
    }
    // A backup made before NAC recorded namespace identity (upstream NAC records none): the
    // NAB lives in its namespace now, so the backup is that namespace's — recorded once, so
    // the backup sync recovers it after a disaster as it recovers NAC's own.
    if let Some(uid) = obs.namespace_uid.filter(|uid| !uid.is_empty())
        && records_no_namespace(backup)
        && backup.metadata.deletion_timestamp.is_none()
        && let Some(name) = backup.metadata.name.clone()
    {
        return NabStep::RecordNamespaceIdentity {
            backup: name,
            namespace_uid: uid.to_string(),
        };
    }
    let terminal = velero_phase(backup).is_some_and(BackupPhase::is_terminal);
    if terminal {
        NabStep::AwaitChange
    } else {
        NabStep::RequeueAfter(Duration::from_secs(30))
    }
}

fn decide_api_delete(
    obs: &NabObservation<'_>,
    mut status: NonAdminBackupStatus,
    current: Option<&NonAdminBackupStatus>,
) -> NabStep {
    advance(&mut status, NonAdminPhase::Deleting);
    // A NAB following its vanished backup already says why it is deleting.
    if !status.conditions.iter().any(|c| c.type_ == types::DELETING) {
        set_condition(
            &mut status.conditions,
            types::DELETING,
            true,
            reasons::DELETION_PENDING,
            API_DELETE_MESSAGE,
            &obs.now,
        );
    }
    if status_changed(current, &status) {
        return NabStep::WriteStatus(Box::new(status));
    }
    if let Some(backup) = obs.velero_backup {
        if backup.metadata.deletion_timestamp.is_none() {
            return NabStep::DeleteVeleroBackup(backup.metadata.name.clone().unwrap_or_default());
        }
        return NabStep::RequeueAfter(DELETION_POLL);
    }
    if obs.delete_request.is_some() {
        return NabStep::DeleteDeleteBackupRequests;
    }
    if has_finalizer(obs.nab) {
        return NabStep::RemoveFinalizer;
    }
    NabStep::AwaitChange
}

fn decide_permanent_delete(
    obs: &NabObservation<'_>,
    mut status: NonAdminBackupStatus,
    current: Option<&NonAdminBackupStatus>,
    deleting: bool,
) -> NabStep {
    advance(&mut status, NonAdminPhase::Deleting);
    set_condition(
        &mut status.conditions,
        types::DELETING,
        true,
        reasons::DELETION_PENDING,
        DELETE_BACKUP_MESSAGE,
        &obs.now,
    );
    if let Some(request) = obs.delete_request {
        status.velero_delete_backup_request = Some(RelatedVeleroDeleteBackupRequest {
            nacuuid: status
                .velero_backup
                .as_ref()
                .and_then(|v| v.nacuuid.clone()),
            name: request.metadata.name.clone(),
            namespace: request.metadata.namespace.clone(),
            status: request.status.clone(),
        });
    }
    if let Some(backup) = obs.velero_backup {
        mirror(&mut status, backup, obs.queue_position);
    }
    if status_changed(current, &status) {
        return NabStep::WriteStatus(Box::new(status));
    }
    if !deleting {
        return NabStep::DeleteSelf;
    }
    if !has_finalizer(obs.nab) {
        return NabStep::AwaitChange;
    }
    let Some(backup) = obs.velero_backup else {
        return NabStep::RemoveFinalizer;
    };
    match obs.delete_request {
        None => {
            // Deletion actions run first, and only once each: finished ones are recorded in
            // the conditions (seed 003).
            let actions = super::deletion_action_decision::pending_actions(
                obs.deletion_actions,
                &status.conditions,
            );
            if !actions.is_empty() {
                return NabStep::RunDeletionActions {
                    backup: Box::new(backup.clone()),
                    actions,
                };
            }
            let id = status
                .velero_backup
                .as_ref()
                .and_then(|v| v.nacuuid.clone())
                .unwrap_or_default();
            NabStep::CreateDeleteBackupRequest(Box::new(delete_request_for(backup, &id, obs.nab)))
        }
        Some(request) => {
            let processed = request
                .status
                .as_ref()
                .and_then(|s| s.phase.as_ref())
                .is_some_and(|p| *p == DeleteBackupRequestPhase::Processed);
            let failed = request
                .status
                .as_ref()
                .and_then(|s| s.errors.as_ref())
                .is_some_and(|e| !e.is_empty());
            if processed && failed {
                // Velero gave up; a fresh request retries after a pause (the errors stay visible
                // in the status meanwhile).
                return NabStep::DeleteDeleteBackupRequests;
            }
            NabStep::RequeueAfter(DELETION_POLL)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A NonAdminSchedule's child backup is named `<NACUUID>-<yyyymmddhhmmss>` (78 bytes at
    /// most); a label carrying it must be cut as Velero cuts it, or the server refuses the
    /// DeleteBackupRequest with 422 and the NAB stays Deleting forever.
    #[test]
    fn delete_request_labels_a_78_byte_backup_name_within_63_bytes() {
        let nacuuid = format!("team-a-nightly-{}", "0".repeat(48));
        assert_eq!(nacuuid.len(), 63);
        let name = format!("{nacuuid}-20260101020304");
        assert_eq!(name.len(), 78);
        let mut backup = Backup::new(&name, BackupSpec::default());
        backup.metadata.namespace = Some("openshift-adp".into());
        let request = delete_request_for(&backup, &nacuuid, &nab(json!({})));
        assert_eq!(request.spec.backup_name, name);
        let l = request.metadata.labels.unwrap();
        let value = &l[crate::api::velero::labels::BACKUP_NAME];
        assert!(value.len() <= 63);
        assert_eq!(*value, crate::api::velero::labels::valid_label_value(&name));
        assert!(l.values().all(|v| v.len() <= 63));
    }

    fn time() -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(1_700_000_000).unwrap())
    }

    fn nab(value: serde_json::Value) -> NonAdminBackup {
        let mut base = json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
            "metadata": {"name": "nightly", "namespace": "team-a", "uid": "u-1"},
            "spec": {"backupSpec": {}}
        });
        crate::sim::apiserver::patch::merge_patch(&mut base, &value);
        serde_json::from_value(base).unwrap()
    }

    fn obs<'a>(
        n: &'a NonAdminBackup,
        vb: Option<&'a Backup>,
        verdict: Result<BackupSpec, String>,
    ) -> NabObservation<'a> {
        NabObservation {
            nab: n,
            velero_backup: vb,
            delete_request: None,
            verdict,
            queue_position: Some(3),
            oadp_namespace: "openshift-adp",
            fresh_uuid: Uuid::from_u128(0x1234),
            now: time(),
            deletion_actions: &[],
            storage_wait: None,
            namespace_uid: Some("ns-uid-a"),
        }
    }

    fn valid() -> Result<BackupSpec, String> {
        Ok(BackupSpec {
            included_namespaces: Some(vec!["team-a".into()]),
            ..Default::default()
        })
    }

    fn status_of(step: NabStep) -> NonAdminBackupStatus {
        match step {
            NabStep::WriteStatus(s) => *s,
            other => panic!("expected a status write, got {other:?}"),
        }
    }

    #[test]
    fn new_valid_nab_gets_accepted_and_nacuuid_in_one_write() {
        let n = nab(json!({}));
        let s = status_of(decide(&obs(&n, None, valid())));
        assert_eq!(s.phase, Some(NonAdminPhase::New));
        let accepted = s
            .conditions
            .iter()
            .find(|c| c.type_ == types::ACCEPTED)
            .unwrap();
        assert_eq!(
            (accepted.status.as_str(), accepted.reason.as_str()),
            ("True", reasons::BACKUP_ACCEPTED)
        );
        let vb = s.velero_backup.unwrap();
        assert_eq!(
            vb.nacuuid.as_deref(),
            Some("team-a-nightly-00000000-0000-0000-0000-000000001234")
        );
        assert_eq!(vb.namespace.as_deref(), Some("openshift-adp"));
    }

    #[test]
    fn invalid_spec_backs_off_and_then_waits() {
        let n = nab(json!({}));
        let s = status_of(decide(&obs(
            &n,
            None,
            Err("spec.backupSpec.includedNamespaces: no".into()),
        )));
        assert_eq!(s.phase, Some(NonAdminPhase::BackingOff));
        let c = s
            .conditions
            .iter()
            .find(|c| c.type_ == types::ACCEPTED)
            .unwrap();
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", reasons::INVALID_BACKUP_SPEC)
        );
        assert_eq!(c.message, "spec.backupSpec.includedNamespaces: no");
        let written = nab(json!({"status": serde_json::to_value(&s).unwrap()}));
        assert_eq!(
            decide(&obs(
                &written,
                None,
                Err("spec.backupSpec.includedNamespaces: no".into())
            )),
            NabStep::AwaitChange
        );
        // A fixed spec moves forward from BackingOff.
        let fixed = status_of(decide(&obs(&written, None, valid())));
        assert_eq!(
            fixed.phase,
            Some(NonAdminPhase::BackingOff),
            "phase stays until Created"
        );
        assert!(fixed.velero_backup.is_some());
    }

    #[test]
    fn finalizer_comes_after_the_nacuuid_and_creation_after_the_finalizer() {
        let with_uuid = nab(json!({"status": {"phase": "New",
            "conditions": [{"type": "Accepted", "status": "True", "reason": "BackupAccepted", "message": ACCEPTED_MESSAGE, "lastTransitionTime": "2023-11-14T22:13:20Z"}],
            "veleroBackup": {"nacuuid": "team-a-nightly-x", "name": "team-a-nightly-x", "namespace": "openshift-adp"}}}));
        assert_eq!(
            decide(&obs(&with_uuid, None, valid())),
            NabStep::AddFinalizer
        );
        let mut with_finalizer = with_uuid.clone();
        with_finalizer.metadata.finalizers = Some(vec![finalizers::NON_ADMIN_BACKUP.into()]);
        match decide(&obs(&with_finalizer, None, valid())) {
            NabStep::CreateVeleroBackup(b) => {
                assert_eq!(b.metadata.name.as_deref(), Some("team-a-nightly-x"));
                assert_eq!(b.metadata.namespace.as_deref(), Some("openshift-adp"));
                let l = b.metadata.labels.unwrap();
                assert_eq!(l[labels::NAB_ORIGIN_NACUUID], "team-a-nightly-x");
                assert_eq!(l[labels::OADP], "True");
                let a = b.metadata.annotations.unwrap();
                assert_eq!(a[labels::NAB_ORIGIN_NAMESPACE_ANNOTATION], "team-a");
                // The namespace's identity, not only its name, is recorded.
                assert_eq!(a[labels::NAB_ORIGIN_NAMESPACE_UID_ANNOTATION], "ns-uid-a");
                assert_eq!(b.spec.included_namespaces, Some(vec!["team-a".to_string()]));
            }
            other => panic!("expected creation, got {other:?}"),
        }
    }

    #[test]
    fn existing_velero_backup_is_mirrored_and_unchanged_status_is_not_rewritten() {
        let mut n = nab(
            json!({"status": {"phase": "New", "veleroBackup": {"nacuuid": "x", "name": "x", "namespace": "openshift-adp"}}}),
        );
        n.metadata.finalizers = Some(vec![finalizers::NON_ADMIN_BACKUP.into()]);
        let vb: Backup = serde_json::from_value(json!({"metadata": {"name": "x", "namespace": "openshift-adp",
                "annotations": {"openshift.io/oadp-nab-origin-namespace-uid": "ns-uid-a"}},
            "spec": {"includedNamespaces": ["team-a"]}, "status": {"phase": "Queued", "queuePosition": 2}})).unwrap();
        let s = status_of(decide(&obs(&n, Some(&vb), valid())));
        assert_eq!(s.phase, Some(NonAdminPhase::Created));
        let q = s
            .conditions
            .iter()
            .find(|c| c.type_ == types::QUEUED)
            .unwrap();
        assert_eq!(
            (q.reason.as_str(), q.message.as_str()),
            (reasons::BACKUP_SCHEDULED, QUEUED_MESSAGE)
        );
        assert_eq!(s.queue_info.as_ref().unwrap().estimated_queue_position, 3);
        assert_eq!(
            s.velero_backup
                .as_ref()
                .unwrap()
                .status
                .as_ref()
                .unwrap()
                .phase,
            Some(BackupPhase::Queued)
        );
        let mut written = n.clone();
        written.status = Some(s);
        assert!(matches!(
            decide(&obs(&written, Some(&vb), valid())),
            NabStep::RequeueAfter(_)
        ));
        // Spec validity no longer matters once created: phase never goes back.
        let mut again = written.clone();
        again.metadata.generation = Some(5);
        assert!(matches!(
            decide(&obs(&again, Some(&vb), Err("now invalid".into()))),
            NabStep::RequeueAfter(_)
        ));
    }

    #[test]
    fn synced_nab_waits_briefly_for_its_status_then_proceeds() {
        let young = nab(
            json!({"metadata": {"creationTimestamp": "2023-11-14T22:13:15Z",
            "labels": {labels::NAB_SYNCED_FROM_NACUUID: "team-a-x"}}}),
        );
        assert_eq!(
            decide(&obs(&young, None, valid())),
            NabStep::RequeueAfter(Duration::from_secs(1))
        );
        let old = nab(
            json!({"metadata": {"creationTimestamp": "2023-11-14T22:00:00Z",
            "labels": {labels::NAB_SYNCED_FROM_NACUUID: "team-a-x"}}}),
        );
        assert!(matches!(
            decide(&obs(&old, None, valid())),
            NabStep::WriteStatus(_)
        ));
    }

    /// A completed NAB as the controller left it: Created, Accepted and Queued, Velero's
    /// status mirrored, the finalizer on.
    fn completed_nab(extra: serde_json::Value) -> NonAdminBackup {
        let mut v = json!({"status": {"phase": "Created",
            "conditions": [
                {"type": "Accepted", "status": "True", "reason": "BackupAccepted", "message": ACCEPTED_MESSAGE, "lastTransitionTime": "2023-11-14T22:13:20Z"},
                {"type": "Queued", "status": "True", "reason": "BackupScheduled", "message": QUEUED_MESSAGE, "lastTransitionTime": "2023-11-14T22:13:20Z"}],
            "queueInfo": {"estimatedQueuePosition": 0},
            "veleroBackup": {"nacuuid": "x", "name": "x", "namespace": "openshift-adp", "status": {"phase": "Completed"}}}});
        crate::sim::apiserver::patch::merge_patch(&mut v, &extra);
        let mut n = nab(v);
        n.metadata.finalizers = Some(vec![finalizers::NON_ADMIN_BACKUP.into()]);
        n
    }

    fn accepted(
        s: &NonAdminBackupStatus,
    ) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
        s.conditions
            .iter()
            .find(|c| c.type_ == types::ACCEPTED)
            .unwrap()
    }

    /// Taking over from upstream NAC: its Velero Backups record no namespace UID. Once the
    /// NAB's status is mirrored, the UID of the namespace the NAB lives in is recorded (so the
    /// backup sync can recover the backup later); a backup that records one is left alone.
    #[test]
    fn an_adopted_backup_without_namespace_identity_gets_the_nabs() {
        let n = completed_nab(json!({}));
        let mut upstream = Backup::new("x", BackupSpec::default());
        upstream.status = Some(serde_json::from_value(json!({"phase": "Completed"})).unwrap());
        // The status is mirrored first (as for any adopted backup), then the UID recorded.
        let mirrored = status_of(decide(&obs(&n, Some(&upstream), valid())));
        let mut n = n.clone();
        n.status = Some(mirrored);
        let mut o = obs(&n, Some(&upstream), valid());
        o.queue_position = Some(0);
        assert_eq!(
            decide(&o),
            NabStep::RecordNamespaceIdentity {
                backup: "x".into(),
                namespace_uid: "ns-uid-a".into()
            }
        );
        // Not read (None): nothing to record.
        o.namespace_uid = None;
        assert_eq!(decide(&o), NabStep::AwaitChange);
        let mut recorded = upstream.clone();
        recorded.metadata.annotations = Some(
            [(
                labels::NAB_ORIGIN_NAMESPACE_UID_ANNOTATION.to_string(),
                "ns-uid-a".to_string(),
            )]
            .into(),
        );
        let mut o = obs(&n, Some(&recorded), valid());
        o.queue_position = Some(0);
        assert!(!records_no_namespace(&recorded));
        assert_eq!(decide(&o), NabStep::AwaitChange);
    }

    #[test]
    fn vanished_backup_keeps_the_nab_backing_off_and_is_never_made_again() {
        let n = completed_nab(json!({}));
        let s = status_of(decide(&obs(&n, None, valid())));
        // Upstream's status: BackingOff, Accepted=False VeleroBackupNotFound with its message.
        assert_eq!(s.phase, Some(NonAdminPhase::BackingOff));
        let a = accepted(&s);
        assert_eq!(
            (a.status.as_str(), a.reason.as_str(), a.message.as_str()),
            (
                "False",
                reasons::VELERO_BACKUP_NOT_FOUND,
                VELERO_BACKUP_NOT_FOUND_MESSAGE
            )
        );
        assert_eq!(
            a.message,
            "NonAdminBackup is finalized and its associated Velero Backup has been removed. Please create a new NonAdminBackup to initiate a new Backup"
        );
        assert_eq!(a.last_transition_time, time(), "Accepted changed status");
        // The rest of the story stays: Queued, the NACUUID, what Velero last said.
        let q = s
            .conditions
            .iter()
            .find(|c| c.type_ == types::QUEUED)
            .unwrap();
        assert_eq!(
            (q.status.as_str(), q.reason.as_str()),
            ("True", reasons::BACKUP_SCHEDULED)
        );
        let vb = s.velero_backup.clone().unwrap();
        assert_eq!(vb.nacuuid.as_deref(), Some("x"));
        assert_eq!(
            vb.status.unwrap().phase.unwrap().as_str(),
            "Completed",
            "the last mirrored Velero status stays"
        );
        assert_eq!(s.queue_info.as_ref().unwrap().estimated_queue_position, 0);
        // Written: nothing more to do, whatever the spec says now; never a new Velero Backup.
        let mut w = n.clone();
        w.status = Some(s);
        assert_eq!(decide(&obs(&w, None, valid())), NabStep::AwaitChange);
        assert_eq!(
            decide(&obs(&w, None, Err("spec.backupSpec.ttl: no".into()))),
            NabStep::AwaitChange
        );
        let mut edited = w.clone();
        edited.metadata.generation = Some(7);
        assert_eq!(decide(&obs(&edited, None, valid())), NabStep::AwaitChange);
        // Without the finalizer the NAB is kept all the same.
        let mut bare = n.clone();
        bare.metadata.finalizers = None;
        assert_eq!(
            status_of(decide(&obs(&bare, None, valid()))).phase,
            Some(NonAdminPhase::BackingOff)
        );
    }

    #[test]
    fn a_backup_gone_before_its_status_was_mirrored_is_not_made_again_either() {
        // Queued=True (upstream's own test) or phase Created is enough: the NACUUID is used.
        let queued =
            completed_nab(json!({"status": {"phase": "New", "veleroBackup": {"status": null}}}));
        assert!(
            queued
                .status
                .as_ref()
                .unwrap()
                .velero_backup
                .as_ref()
                .unwrap()
                .status
                .is_none()
        );
        let s = status_of(decide(&obs(&queued, None, valid())));
        assert_eq!(s.phase, Some(NonAdminPhase::BackingOff));
        assert_eq!(accepted(&s).reason, reasons::VELERO_BACKUP_NOT_FOUND);
        // Still queued when it vanished: no position left.
        let waiting = completed_nab(
            json!({"status": {"queueInfo": {"estimatedQueuePosition": 4},
            "veleroBackup": {"status": {"phase": "New"}}}}),
        );
        let s = status_of(decide(&obs(&waiting, None, valid())));
        assert_eq!(s.queue_info.unwrap().estimated_queue_position, 0);
        // Never made: the usual path (the Velero Backup is created).
        let fresh = nab(json!({"status": {"phase": "New",
            "conditions": [{"type": "Accepted", "status": "True", "reason": "BackupAccepted", "message": ACCEPTED_MESSAGE, "lastTransitionTime": "2023-11-14T22:13:20Z"}],
            "veleroBackup": {"nacuuid": "x", "name": "x", "namespace": "openshift-adp"}},
            "metadata": {"finalizers": [finalizers::NON_ADMIN_BACKUP]}}));
        assert!(!velero_backup_was_made(fresh.status.as_ref()));
        assert!(matches!(
            decide(&obs(&fresh, None, valid())),
            NabStep::CreateVeleroBackup(_)
        ));
    }

    #[test]
    fn a_schedule_run_follows_its_vanished_backup_away() {
        let child = completed_nab(
            json!({"metadata": {"labels": {labels::NAS_ORIGIN_NACUUID: "team-a-hourly-x"}}}),
        );
        assert_eq!(
            decide(&obs(&child, None, valid())),
            NabStep::FollowVanishedBackup
        );
    }

    #[test]
    fn a_vanished_backup_that_comes_back_is_followed_again() {
        let n = completed_nab(json!({}));
        let mut w = n.clone();
        w.status = Some(status_of(decide(&obs(&n, None, valid()))));
        // Velero's backup sync brings it back from storage: Created and accepted again.
        let vb: Backup = serde_json::from_value(
            json!({"metadata": {"name": "x", "namespace": "openshift-adp"},
            "spec": {"includedNamespaces": ["team-a"]}, "status": {"phase": "Completed"}}),
        )
        .unwrap();
        let s = status_of(decide(&obs(&w, Some(&vb), valid())));
        assert_eq!(s.phase, Some(NonAdminPhase::Created));
        assert_eq!(
            (accepted(&s).status.as_str(), accepted(&s).reason.as_str()),
            ("True", reasons::BACKUP_ACCEPTED)
        );
    }

    #[test]
    fn a_nab_whose_backup_vanished_is_still_deleted_both_ways() {
        let n = completed_nab(json!({}));
        let mut kept = n.clone();
        kept.status = Some(status_of(decide(&obs(&n, None, valid()))));
        // Deleted through the API: Deleting, then the finalizer goes (nothing left to delete).
        let mut deleted = kept.clone();
        deleted.metadata.deletion_timestamp = Some(time());
        let s = status_of(decide(&obs(&deleted, None, valid())));
        assert_eq!(s.phase, Some(NonAdminPhase::Deleting));
        deleted.status = Some(s);
        assert_eq!(
            decide(&obs(&deleted, None, valid())),
            NabStep::RemoveFinalizer
        );
        // spec.deleteBackup: Deleting, the NAB is deleted, then released without any
        // DeleteBackupRequest (there is no backup to delete).
        let mut permanent = kept.clone();
        permanent.spec.delete_backup = Some(true);
        let s = status_of(decide(&obs(&permanent, None, valid())));
        assert_eq!(s.phase, Some(NonAdminPhase::Deleting));
        permanent.status = Some(s);
        assert_eq!(decide(&obs(&permanent, None, valid())), NabStep::DeleteSelf);
        permanent.metadata.deletion_timestamp = Some(time());
        assert_eq!(
            decide(&obs(&permanent, None, valid())),
            NabStep::RemoveFinalizer
        );
    }

    #[test]
    fn api_delete_removes_the_velero_backup_then_the_finalizer() {
        let mut n = nab(
            json!({"metadata": {"deletionTimestamp": "2023-11-14T22:13:20Z"},
            "status": {"phase": "Created", "veleroBackup": {"nacuuid": "x", "name": "x"}}}),
        );
        n.metadata.finalizers = Some(vec![finalizers::NON_ADMIN_BACKUP.into()]);
        let s = status_of(decide(&obs(&n, None, valid())));
        assert_eq!(s.phase, Some(NonAdminPhase::Deleting));
        assert_eq!(
            s.conditions
                .iter()
                .find(|c| c.type_ == types::DELETING)
                .unwrap()
                .message,
            API_DELETE_MESSAGE
        );
        n.status = Some(s);
        let vb: Backup =
            serde_json::from_value(json!({"metadata": {"name": "x"}, "spec": {}})).unwrap();
        assert_eq!(
            decide(&obs(&n, Some(&vb), valid())),
            NabStep::DeleteVeleroBackup("x".into())
        );
        assert_eq!(decide(&obs(&n, None, valid())), NabStep::RemoveFinalizer);
    }

    #[test]
    fn deletion_actions_run_before_the_delete_backup_request_and_only_once() {
        let action = |name: &str| -> DeletionAction {
            serde_json::from_value(json!({
                "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "DeletionAction",
                "metadata": {"name": name},
                "spec": {"webhook": {"url": "https://hooks.example/"}}
            }))
            .unwrap()
        };
        let actions = [action("b-audit"), action("a-cleanup")];
        let mut n = nab(json!({"spec": {"deleteBackup": true},
            "metadata": {"deletionTimestamp": "2023-11-14T22:13:20Z"},
            "status": {"phase": "Deleting", "veleroBackup": {"nacuuid": "x", "name": "x"},
                "conditions": [{"type": "Deleting", "status": "True", "reason": "DeletionPending",
                    "message": DELETE_BACKUP_MESSAGE, "lastTransitionTime": "2023-11-14T22:13:20Z"}]}}));
        n.metadata.finalizers = Some(vec![finalizers::NON_ADMIN_BACKUP.into()]);
        let vb: Backup = serde_json::from_value(
            json!({"metadata": {"name": "x", "namespace": "openshift-adp"},
            "spec": {}, "status": {"phase": "Completed"}}),
        )
        .unwrap();
        let decide_with = |n: &NonAdminBackup, request: Option<&DeleteBackupRequest>| {
            let mut o = obs(n, Some(&vb), valid());
            o.queue_position = None;
            o.deletion_actions = &actions;
            o.delete_request = request;
            decide(&o)
        };
        // Both pending: run them, in name order, on the backup.
        let step = decide_with(&n, None);
        let n = match step {
            NabStep::RunDeletionActions { backup, actions } => {
                assert_eq!(backup.metadata.name.as_deref(), Some("x"));
                let names: Vec<_> = actions
                    .iter()
                    .map(|a| a.metadata.name.clone().unwrap())
                    .collect();
                assert_eq!(names, ["a-cleanup", "b-audit"]);
                // The status the decision reached first (mirrored backup) is what it compares.
                n
            }
            NabStep::WriteStatus(status) => {
                let mut written = n.clone();
                written.status = Some(*status);
                match decide_with(&written, None) {
                    NabStep::RunDeletionActions { actions, .. } => assert_eq!(actions.len(), 2),
                    other => panic!("expected the actions, got {other:?}"),
                }
                written
            }
            other => panic!("expected the actions, got {other:?}"),
        };
        // a-cleanup finished: only b-audit is left.
        let mut one_done = n.clone();
        let conditions = &mut one_done.status.as_mut().unwrap().conditions;
        set_condition(
            conditions,
            "deletionaction.oadp.openshift.io/a-cleanup",
            true,
            "Succeeded",
            "called",
            &time(),
        );
        match decide_with(&one_done, None) {
            NabStep::RunDeletionActions { actions, .. } => {
                assert_eq!(actions.len(), 1);
                assert_eq!(actions[0].metadata.name.as_deref(), Some("b-audit"));
            }
            other => panic!("expected b-audit, got {other:?}"),
        }
        // Both finished (one ignored): now the DeleteBackupRequest.
        let mut all_done = one_done.clone();
        let conditions = &mut all_done.status.as_mut().unwrap().conditions;
        set_condition(
            conditions,
            "deletionaction.oadp.openshift.io/b-audit",
            false,
            "Ignored",
            "failed",
            &time(),
        );
        assert!(matches!(
            decide_with(&all_done, None),
            NabStep::CreateDeleteBackupRequest(_)
        ));
        // A failed (Fail) action is still pending.
        let mut failed = one_done.clone();
        let conditions = &mut failed.status.as_mut().unwrap().conditions;
        set_condition(
            conditions,
            "deletionaction.oadp.openshift.io/b-audit",
            false,
            "Failed",
            "attempt 1 failed: x",
            &time(),
        );
        assert!(matches!(
            decide_with(&failed, None),
            NabStep::RunDeletionActions { .. }
        ));
        // Once a DeleteBackupRequest exists, actions are not looked at again.
        let request: DeleteBackupRequest = serde_json::from_value(json!({
            "metadata": {"name": "x", "namespace": "openshift-adp"}, "spec": {"backupName": "x"}
        }))
        .unwrap();
        let mut with_request = n.clone();
        with_request
            .status
            .as_mut()
            .unwrap()
            .velero_delete_backup_request = Some(RelatedVeleroDeleteBackupRequest {
            nacuuid: Some("x".into()),
            name: Some("x".into()),
            namespace: Some("openshift-adp".into()),
            status: None,
        });
        assert_eq!(
            decide_with(&with_request, Some(&request)),
            NabStep::RequeueAfter(DELETION_POLL)
        );
    }

    #[test]
    fn permanent_delete_goes_through_a_delete_backup_request() {
        let mut n = nab(json!({"spec": {"deleteBackup": true},
            "status": {"phase": "Created", "veleroBackup": {"nacuuid": "x", "name": "x"}}}));
        n.metadata.finalizers = Some(vec![finalizers::NON_ADMIN_BACKUP.into()]);
        let s = status_of(decide(&obs(&n, None, valid())));
        assert_eq!(
            s.conditions
                .iter()
                .find(|c| c.type_ == types::DELETING)
                .unwrap()
                .message,
            DELETE_BACKUP_MESSAGE
        );
        n.status = Some(s);
        let vb: Backup = serde_json::from_value(json!({"metadata": {"name": "x", "namespace": "openshift-adp", "uid": "vb-uid"}, "spec": {}})).unwrap();
        // Not yet deleted through the API: delete the NAB (the finalizer holds it).
        let mut o = obs(&n, Some(&vb), valid());
        o.queue_position = None;
        let step = decide(&o);
        let n2 = if let NabStep::WriteStatus(s) = step {
            let mut x = n.clone();
            x.status = Some(*s);
            x
        } else {
            n.clone()
        };
        let mut o = obs(&n2, Some(&vb), valid());
        o.queue_position = None;
        assert_eq!(decide(&o), NabStep::DeleteSelf);
        let mut deleting = n2.clone();
        deleting.metadata.deletion_timestamp = Some(time());
        let mut o = obs(&deleting, Some(&vb), valid());
        o.queue_position = None;
        match decide(&o) {
            NabStep::CreateDeleteBackupRequest(r) => {
                assert_eq!(r.spec.backup_name, "x");
                let l = r.metadata.labels.unwrap();
                assert_eq!(l["velero.io/backup-name"], "x");
                assert_eq!(l["velero.io/backup-uid"], "vb-uid");
                assert_eq!(l[labels::NAB_ORIGIN_NACUUID], "x");
            }
            other => panic!("expected a DBR, got {other:?}"),
        }
        let failed: DeleteBackupRequest = serde_json::from_value(
            json!({"metadata": {"name": "x", "namespace": "openshift-adp"},
            "spec": {"backupName": "x"}, "status": {"phase": "Processed", "errors": ["boom"]}}),
        )
        .unwrap();
        let mut o = obs(&deleting, Some(&vb), valid());
        o.queue_position = None;
        o.delete_request = Some(&failed);
        let s = status_of(decide(&o));
        assert_eq!(
            s.velero_delete_backup_request
                .as_ref()
                .unwrap()
                .status
                .as_ref()
                .unwrap()
                .errors,
            Some(vec!["boom".to_string()])
        );
        let mut with_dbr_status = deleting.clone();
        with_dbr_status.status = Some(s);
        let mut o = obs(&with_dbr_status, Some(&vb), valid());
        o.queue_position = None;
        o.delete_request = Some(&failed);
        assert_eq!(decide(&o), NabStep::DeleteDeleteBackupRequests);
        let mut o = obs(&with_dbr_status, None, valid());
        o.queue_position = None;
        assert_eq!(decide(&o), NabStep::RemoveFinalizer);
    }
    #[test]
    fn a_backup_waiting_for_the_shared_pool_says_why_and_creates_nothing() {
        let n = nab(json!({}));
        let mut o = obs(&n, None, valid());
        o.storage_wait =
            Some("waiting for backup storage: every shared backup bucket is full".into());
        let s = status_of(decide(&o));
        let queued = s
            .conditions
            .iter()
            .find(|c| c.type_ == types::QUEUED)
            .unwrap();
        assert_eq!(
            (queued.status.as_str(), queued.reason.as_str()),
            ("False", "WaitingForBackupStorage")
        );
        assert!(
            queued
                .message
                .contains("every shared backup bucket is full")
        );
        assert_eq!(s.phase, Some(NonAdminPhase::New));
        // Status written and finalizer on: it polls, never creating a Velero Backup.
        let written = nab(json!({
            "metadata": {"finalizers": [finalizers::NON_ADMIN_BACKUP]},
            "status": serde_json::to_value(&s).unwrap()
        }));
        let mut o = obs(&written, None, valid());
        o.storage_wait =
            Some("waiting for backup storage: every shared backup bucket is full".into());
        assert_eq!(decide(&o), NabStep::RequeueAfter(STORAGE_WAIT_POLL));
        // Once the entry is ready the backup is created (with the routed location).
        let routed = Ok(BackupSpec {
            storage_location: Some("team-a--aaaaa".into()),
            ..valid().unwrap()
        });
        match decide(&obs(&written, None, routed)) {
            NabStep::CreateVeleroBackup(b) => {
                assert_eq!(b.spec.storage_location.as_deref(), Some("team-a--aaaaa"))
            }
            other => panic!("expected the Velero Backup, got {other:?}"),
        }
    }
}
