//! The NonAdminBackupStorageLocation reconcile decision, pure: from what was observed (the
//! NABSL, the policy verdict, its approval request, the tenant's credential Secret, NAC's copy of
//! it and the Velero BSL) to the ONE next step. The NACUUID is in the status before anything is
//! created; every object is named by it, so a crash between two steps resumes where it stopped.
//!
//! Approval: a NonAdminBackupStorageLocationRequest (in the OADP namespace, name = NACUUID)
//! records the spec the admin decides on (`status.nonAdminBackupStorageLocation.requestedSpec`).
//! The location is usable only while the decision is `approve` *for the current spec*. A spec
//! change after approval resets the decision to `pending` (the already approved Velero BSL keeps
//! its old spec meanwhile, SpecUpdateApproved=False); a later `reject` or `pending` set by the
//! admin revokes it: the copied Secret and the Velero BSL are removed. (Upstream refuses a spec
//! change after approval outright; sending it back for approval is our deliberate extension.)
//!
//! Phases and conditions as upstream writes them: `New` while the request is pending,
//! `BackingOff` on an invalid spec or a rejected request, `Created` once the Velero BSL is
//! written, `Deleting` on deletion. `SecretSynced` and `BackupStorageLocationSynced` carry
//! upstream's reasons (`SecretCreated`, `SecretUpdated`, `SecretSyncFailed`,
//! `BackupStorageLocationCreated`, `BackupStorageLocationUpdated`,
//! `BackupStorageLocationSyncError`) and messages. Deleting a NABSL deletes the
//! NonAdminBackups of its namespace that name it as their storage location (as upstream),
//! and waits until they are gone before its Velero BSL goes, so their backups are removed
//! through it.
//!
//! A location upstream's NAC made is taken over as it is (tests/upstream_takeover.rs): its
//! request, Secret copy and BSL carry the same NACUUID names and labels, and what the OADP
//! operator added to upstream's BSL is kept ([`keep_operator_adjustments`]).
use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Secret, SecretKeySelector};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use uuid::Uuid;

use super::status::{self, set_condition};
use crate::api::nonadmin::conditions::{reasons, types};
use crate::api::nonadmin::labels::finalizers;
use crate::api::nonadmin::{
    ApprovalDecision, NonAdminBackupStorageLocation, NonAdminBackupStorageLocationRequest,
    NonAdminBackupStorageLocationRequestPhase, NonAdminBackupStorageLocationRequestSpec,
    NonAdminBackupStorageLocationRequestStatus, NonAdminBackupStorageLocationStatus, NonAdminPhase,
    RelatedVeleroBackupStorageLocation, SourceNonAdminBackupStorageLocation,
};
use crate::api::origin::{OriginKind, origin_annotations, origin_labels};
use crate::api::velero::{BackupStorageLocation, BackupStorageLocationSpec};
use crate::policy::nacuuid::nacuuid;

/// Accepted=True message (upstream's).
pub const ACCEPTED_MESSAGE: &str = "NonAdminBackupStorageLocation spec validation successful";
/// ClusterAdminApproved=False while the request waits for the admin (upstream's).
pub const APPROVAL_PENDING_MESSAGE: &str = "NonAdminBackupStorageLocationRequest approval pending";
/// ClusterAdminApproved=True (upstream's).
pub const APPROVED_MESSAGE: &str =
    "NonAdminBackupStorageLocationRequest approval decision set to Approve";
/// ClusterAdminApproved=True when approval is not required (upstream's text, then why).
pub const AUTO_APPROVED_MESSAGE: &str = "NonAdminBackupStorageLocationRequest approval decision set to Approve: approved automatically (the administrator does not require approval)";
/// ClusterAdminApproved=False after a rejection (upstream's text, then what follows).
pub const REJECTED_MESSAGE: &str = "NonAdminBackupStorageLocationRequest approval decision set to Reject: its Secret copy and Velero BackupStorageLocation are removed";
/// ClusterAdminApproved=False after an approval was withdrawn (set back to pending).
pub const REVOKED_MESSAGE: &str = "NonAdminBackupStorageLocationRequest approval pending: the cluster administrator withdrew the approval; the Secret copy and Velero BackupStorageLocation are removed until it is approved again";
/// SpecUpdateApproved=False while a changed spec waits for a new approval (our extension:
/// upstream refuses the change).
pub const SPEC_UPDATE_PENDING_MESSAGE: &str = "the spec changed after approval: the change waits for the cluster administrator's approval; the Velero BackupStorageLocation keeps the approved spec meanwhile";
/// SpecUpdateApproved=True.
pub const SPEC_UPDATE_APPROVED_MESSAGE: &str = "the spec change was approved and applied";
/// SecretSynced=True, reason SecretCreated (upstream's).
pub const SECRET_CREATED_MESSAGE: &str = "Secret successfully created in the OADP namespace";
/// SecretSynced=True, reason SecretUpdated (upstream's).
pub const SECRET_UPDATED_MESSAGE: &str = "Secret successfully updated in the OADP namespace";
/// SecretSynced=False, reason SecretSyncFailed (upstream's).
pub const SECRET_SYNC_FAILED_MESSAGE: &str = "Failed to sync secret to OADP namespace";
/// BackupStorageLocationSynced=True, reason BackupStorageLocationCreated (upstream's).
pub const BSL_CREATED_MESSAGE: &str =
    "BackupStorageLocation successfully created in the OADP namespace";
/// BackupStorageLocationSynced=True, reason BackupStorageLocationUpdated (upstream's).
pub const BSL_UPDATED_MESSAGE: &str =
    "BackupStorageLocation successfully updated in the OADP namespace";
/// BackupStorageLocationSynced=False, reason BackupStorageLocationSyncError (upstream's).
pub const BSL_SYNC_ERROR_MESSAGE: &str = "BackupStorageLocation failure during sync";
/// Deleting=True.
pub const DELETING_MESSAGE: &str = "removing the NonAdminBackups that use this location, then the Velero BackupStorageLocation, the Secret copy and the approval request";
/// How often an active location's Velero status is looked at again (watches catch most changes).
pub const RESYNC: Duration = Duration::from_secs(60);
/// How often a deleted location looks again while the NonAdminBackups naming it are deleted.
pub const BACKUPS_DELETION_POLL: Duration = Duration::from_secs(1);

/// Everything the decision depends on.
#[derive(Debug, Clone)]
pub struct NabslObservation<'a> {
    /// The NABSL as just read from the API server.
    pub nabsl: &'a NonAdminBackupStorageLocation,
    /// The policy verdict: the Velero BSL spec to create (its credential name is replaced by the
    /// NACUUID), or the reason the spec is refused.
    pub verdict: Result<BackupStorageLocationSpec, String>,
    /// Whether the administrator requires approval.
    pub require_approval: bool,
    /// The approval request (OADP namespace, NACUUID label), if any.
    pub request: Option<&'a NonAdminBackupStorageLocationRequest>,
    /// The tenant's credential Secret, if it exists.
    pub tenant_secret: Option<&'a Secret>,
    /// NAC's copy of it in the OADP namespace, if any.
    pub copied_secret: Option<&'a Secret>,
    /// The Velero BSL, if any.
    pub velero_bsl: Option<&'a BackupStorageLocation>,
    /// On deletion: the NonAdminBackups of the NABSL's namespace whose
    /// `spec.backupSpec.storageLocation` is its name, and whether each is being deleted
    /// (empty otherwise).
    pub backups: Vec<(String, bool)>,
    /// The OADP namespace.
    pub oadp_namespace: &'a str,
    /// A fresh UUID, used only when a NACUUID must be generated.
    pub fresh_uuid: Uuid,
    /// Now, for condition transition times.
    pub now: Time,
}

/// A write of one of NAC's objects for the NABSL (its Secret copy or Velero BSL), with the
/// NABSL status to record once it is done (`SecretCreated`, `BackupStorageLocationUpdated`, …)
/// or failed (`SecretSyncFailed`, `BackupStorageLocationSyncError`), as upstream records them.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncWrite<T> {
    /// The object to create or replace (a replace carries the resourceVersion read).
    pub object: Box<T>,
    /// The NABSL status once the write succeeded.
    pub done: Box<NonAdminBackupStorageLocationStatus>,
    /// The NABSL status when the write failed.
    pub failed: Box<NonAdminBackupStorageLocationStatus>,
}

/// The one step to take next.
#[derive(Debug, Clone, PartialEq)]
pub enum NabslStep {
    /// Write this NABSL status.
    WriteStatus(Box<NonAdminBackupStorageLocationStatus>),
    /// Add the NABSL finalizer.
    AddFinalizer,
    /// Remove the NABSL finalizer.
    RemoveFinalizer,
    /// Create this approval request (its status is written by a later step).
    CreateRequest(Box<NonAdminBackupStorageLocationRequest>),
    /// Replace the status of the approval request (object as read, status changed).
    WriteRequestStatus(Box<NonAdminBackupStorageLocationRequest>),
    /// Set the request's decision back to pending (a spec change needs a new approval).
    ResetRequestDecision(String),
    /// Delete the approval request of that name.
    DeleteRequest(String),
    /// Create this Secret copy.
    CreateSecret(SyncWrite<Secret>),
    /// Replace the Secret copy (carries the resourceVersion read).
    ReplaceSecret(SyncWrite<Secret>),
    /// Delete the Secret copy of that name.
    DeleteSecret(String),
    /// Create this Velero BSL.
    CreateBsl(SyncWrite<BackupStorageLocation>),
    /// Replace the Velero BSL (carries the resourceVersion read).
    ReplaceBsl(SyncWrite<BackupStorageLocation>),
    /// Delete the Velero BSL of that name.
    DeleteBsl(String),
    /// Delete these NonAdminBackups (of the NABSL's namespace; they name it as their storage
    /// location).
    DeleteBackups(Vec<String>),
    /// Nothing to do until something changes.
    AwaitChange,
    /// Nothing to do now; look again after this long.
    RequeueAfter(Duration),
}

fn advance(status: &mut NonAdminBackupStorageLocationStatus, to: NonAdminPhase) {
    status::advance_phase(&mut status.phase, to);
}

/// Whether two statuses differ in anything but condition transition times.
pub fn status_changed(
    old: Option<&NonAdminBackupStorageLocationStatus>,
    new: &NonAdminBackupStorageLocationStatus,
) -> bool {
    status::differs_ignoring_transition_times(old, new, |s| &mut s.conditions)
}

fn has_finalizer(nabsl: &NonAdminBackupStorageLocation) -> bool {
    status::has_finalizer(
        &nabsl.metadata,
        finalizers::NON_ADMIN_BACKUP_STORAGE_LOCATION,
    )
}

fn condition_is(status: &NonAdminBackupStorageLocationStatus, type_: &str, value: &str) -> bool {
    status
        .conditions
        .iter()
        .any(|c| c.type_ == type_ && c.status == value)
}

fn own_meta(
    nabsl: &NonAdminBackupStorageLocation,
    nacuuid: &str,
    oadp_namespace: &str,
) -> kube::core::ObjectMeta {
    kube::core::ObjectMeta {
        name: Some(nacuuid.to_string()),
        namespace: Some(oadp_namespace.to_string()),
        labels: Some(origin_labels(
            OriginKind::NonAdminBackupStorageLocation,
            nacuuid,
        )),
        annotations: Some(origin_annotations(
            OriginKind::NonAdminBackupStorageLocation,
            nabsl.metadata.namespace.as_deref().unwrap_or_default(),
            nabsl.metadata.name.as_deref().unwrap_or_default(),
        )),
        ..Default::default()
    }
}

/// The approval request for a NABSL (created with `decision`; its status is written next).
pub fn request_for(
    nabsl: &NonAdminBackupStorageLocation,
    nacuuid: &str,
    oadp_namespace: &str,
    decision: ApprovalDecision,
) -> NonAdminBackupStorageLocationRequest {
    let mut request = NonAdminBackupStorageLocationRequest::new(
        nacuuid,
        NonAdminBackupStorageLocationRequestSpec {
            approval_decision: Some(decision),
        },
    );
    request.metadata = own_meta(nabsl, nacuuid, oadp_namespace);
    request
}

/// The request's status for the tenant's current spec.
fn request_status(
    nabsl: &NonAdminBackupStorageLocation,
    nacuuid: &str,
    decision: ApprovalDecision,
) -> NonAdminBackupStorageLocationRequestStatus {
    NonAdminBackupStorageLocationRequestStatus {
        non_admin_backup_storage_location: Some(SourceNonAdminBackupStorageLocation {
            requested_spec: Some(nabsl.spec.backup_storage_location_spec.clone()),
            nacuuid: Some(nacuuid.to_string()),
            name: nabsl.metadata.name.clone(),
            namespace: nabsl.metadata.namespace.clone(),
        }),
        phase: Some(decision.into()),
    }
}

/// NAC's copy of the tenant's credential Secret: same type and data, named by the NACUUID.
pub fn secret_copy(
    nabsl: &NonAdminBackupStorageLocation,
    tenant: &Secret,
    nacuuid: &str,
    oadp_namespace: &str,
) -> Secret {
    Secret {
        metadata: own_meta(nabsl, nacuuid, oadp_namespace),
        type_: tenant.type_.clone(),
        data: tenant.data.clone(),
        ..Default::default()
    }
}

fn secret_data(s: &Secret) -> (Option<&String>, &BTreeMap<String, ByteString>) {
    static EMPTY: BTreeMap<String, ByteString> = BTreeMap::new();
    (s.type_.as_ref(), s.data.as_ref().unwrap_or(&EMPTY))
}

/// The Velero BSL for a NABSL: the verdict's spec with the credential pointing at the copy.
pub fn velero_bsl_for(
    nabsl: &NonAdminBackupStorageLocation,
    nacuuid: &str,
    oadp_namespace: &str,
    mut spec: BackupStorageLocationSpec,
) -> BackupStorageLocation {
    let key = spec
        .credential
        .as_ref()
        .map(|c| c.key.clone())
        .unwrap_or_default();
    spec.credential = Some(SecretKeySelector {
        name: nacuuid.to_string(),
        key,
        optional: None,
    });
    spec.default = None;
    let mut bsl = BackupStorageLocation::new(nacuuid, spec);
    bsl.metadata = own_meta(nabsl, nacuuid, oadp_namespace);
    bsl
}

/// Decides the next step for a NonAdminBackupStorageLocation.
pub fn decide(obs: &NabslObservation<'_>) -> NabslStep {
    let nabsl = obs.nabsl;
    let current = nabsl.status.clone();
    let mut status = current.clone().unwrap_or_default();

    if nabsl.metadata.deletion_timestamp.is_some() {
        return decide_delete(obs, status, current.as_ref());
    }
    if status.phase.is_none() {
        status.phase = Some(NonAdminPhase::New);
    }
    let spec = match &obs.verdict {
        Err(message) => {
            // An invalid spec waits for the tenant (phase BackingOff, as upstream); what was
            // approved before stays as it is.
            status.phase = Some(NonAdminPhase::BackingOff);
            set_condition(
                &mut status.conditions,
                types::ACCEPTED,
                false,
                reasons::BSL_SPEC_VALIDATION,
                message,
                &obs.now,
            );
            if status_changed(current.as_ref(), &status) {
                return NabslStep::WriteStatus(Box::new(status));
            }
            return NabslStep::AwaitChange;
        }
        Ok(spec) => spec,
    };
    set_condition(
        &mut status.conditions,
        types::ACCEPTED,
        true,
        reasons::BSL_SPEC_VALIDATION,
        ACCEPTED_MESSAGE,
        &obs.now,
    );
    let id = match status
        .velero_backup_storage_location
        .as_ref()
        .and_then(|v| v.nacuuid.clone())
        .filter(|u| !u.is_empty())
    {
        Some(id) => id,
        None => {
            let id = nacuuid(
                nabsl.metadata.namespace.as_deref().unwrap_or_default(),
                nabsl.metadata.name.as_deref().unwrap_or_default(),
                &obs.fresh_uuid,
            );
            status.velero_backup_storage_location = Some(RelatedVeleroBackupStorageLocation {
                nacuuid: Some(id.clone()),
                name: Some(id.clone()),
                namespace: Some(obs.oadp_namespace.to_string()),
                status: None,
            });
            id
        }
    };
    if status_changed(current.as_ref(), &status) {
        // The NACUUID is persisted before anything is created.
        return NabslStep::WriteStatus(Box::new(status));
    }
    if !has_finalizer(nabsl) {
        return NabslStep::AddFinalizer;
    }

    // The approval request.
    let Some(request) = obs.request else {
        let decision = if obs.require_approval {
            ApprovalDecision::Pending
        } else {
            ApprovalDecision::Approve
        };
        return NabslStep::CreateRequest(Box::new(request_for(
            nabsl,
            &id,
            obs.oadp_namespace,
            decision,
        )));
    };
    let decision = request
        .spec
        .approval_decision
        .unwrap_or(ApprovalDecision::Pending);
    let request_name = request.metadata.name.clone().unwrap_or_default();
    let requested = request
        .status
        .as_ref()
        .and_then(|s| s.non_admin_backup_storage_location.as_ref())
        .and_then(|s| s.requested_spec.as_ref());
    let tenant_spec = &nabsl.spec.backup_storage_location_spec;
    let was_approved = condition_is(&status, types::CLUSTER_ADMIN_APPROVED, "True");
    match requested {
        None => return write_request_status(request, nabsl, &id, decision),
        Some(requested) if requested != tenant_spec => {
            if !obs.require_approval {
                // Nobody needs to approve: the new spec is approved as it comes.
                return write_request_status(request, nabsl, &id, decision);
            }
            if was_approved {
                set_condition(
                    &mut status.conditions,
                    types::SPEC_UPDATE_APPROVED,
                    false,
                    reasons::BSL_SPEC_UPDATE_REJECTED,
                    SPEC_UPDATE_PENDING_MESSAGE,
                    &obs.now,
                );
                if status_changed(current.as_ref(), &status) {
                    return NabslStep::WriteStatus(Box::new(status));
                }
            }
            if decision != ApprovalDecision::Pending {
                // The decision was about the old spec: it must be taken again.
                return NabslStep::ResetRequestDecision(request_name);
            }
            return write_request_status(request, nabsl, &id, ApprovalDecision::Pending);
        }
        Some(_) => {}
    }
    let phase = NonAdminBackupStorageLocationRequestPhase::from(decision);
    if request.status.as_ref().and_then(|s| s.phase) != Some(phase) {
        return write_request_status(request, nabsl, &id, decision);
    }

    let update_pending = condition_is(&status, types::SPEC_UPDATE_APPROVED, "False");
    match decision {
        ApprovalDecision::Approve => decide_approved(obs, status, current.as_ref(), spec, &id),
        ApprovalDecision::Pending if update_pending && was_approved => {
            // A spec update waits; the approved location keeps working with its old spec.
            mirror(&mut status, obs.velero_bsl);
            if status_changed(current.as_ref(), &status) {
                return NabslStep::WriteStatus(Box::new(status));
            }
            NabslStep::RequeueAfter(RESYNC)
        }
        ApprovalDecision::Pending | ApprovalDecision::Reject => {
            let (reason, message) = match decision {
                ApprovalDecision::Reject => (reasons::BSL_SPEC_REJECTED, REJECTED_MESSAGE),
                _ if was_approved
                    || obs.velero_bsl.is_some()
                    || obs.copied_secret.is_some()
                    || status.conditions.iter().any(|c| {
                        c.type_ == types::CLUSTER_ADMIN_APPROVED && c.message == REVOKED_MESSAGE
                    }) =>
                {
                    (reasons::BSL_SPEC_APPROVAL_PENDING, REVOKED_MESSAGE)
                }
                _ => (reasons::BSL_SPEC_APPROVAL_PENDING, APPROVAL_PENDING_MESSAGE),
            };
            // Revoke: nothing of the location stays usable.
            if let Some(bsl) = obs.velero_bsl {
                return NabslStep::DeleteBsl(bsl.metadata.name.clone().unwrap_or_default());
            }
            if let Some(secret) = obs.copied_secret {
                return NabslStep::DeleteSecret(secret.metadata.name.clone().unwrap_or_default());
            }
            set_condition(
                &mut status.conditions,
                types::CLUSTER_ADMIN_APPROVED,
                false,
                reason,
                message,
                &obs.now,
            );
            // As upstream: `New` while pending (again), `BackingOff` once rejected.
            status.phase = Some(if decision == ApprovalDecision::Reject {
                NonAdminPhase::BackingOff
            } else {
                NonAdminPhase::New
            });
            status.conditions.retain(|c| {
                c.type_ != types::SECRET_SYNCED
                    && c.type_ != types::BACKUP_STORAGE_LOCATION_SYNCED
                    && c.type_ != types::SPEC_UPDATE_APPROVED
            });
            if let Some(v) = status.velero_backup_storage_location.as_mut() {
                v.status = None;
            }
            if status_changed(current.as_ref(), &status) {
                return NabslStep::WriteStatus(Box::new(status));
            }
            NabslStep::AwaitChange
        }
    }
}

fn write_request_status(
    request: &NonAdminBackupStorageLocationRequest,
    nabsl: &NonAdminBackupStorageLocation,
    nacuuid: &str,
    decision: ApprovalDecision,
) -> NabslStep {
    let mut next = request.clone();
    next.status = Some(request_status(nabsl, nacuuid, decision));
    NabslStep::WriteRequestStatus(Box::new(next))
}

fn mirror(status: &mut NonAdminBackupStorageLocationStatus, bsl: Option<&BackupStorageLocation>) {
    if let (Some(related), Some(bsl)) = (status.velero_backup_storage_location.as_mut(), bsl) {
        related.status = bsl.status.clone();
    }
}

fn decide_approved(
    obs: &NabslObservation<'_>,
    mut status: NonAdminBackupStorageLocationStatus,
    current: Option<&NonAdminBackupStorageLocationStatus>,
    spec: &BackupStorageLocationSpec,
    id: &str,
) -> NabslStep {
    let nabsl = obs.nabsl;
    // The approval is recorded first (as upstream, before the Secret and the BSL are synced).
    let auto = !obs.require_approval;
    set_condition(
        &mut status.conditions,
        types::CLUSTER_ADMIN_APPROVED,
        true,
        reasons::BSL_SPEC_APPROVED,
        if auto {
            AUTO_APPROVED_MESSAGE
        } else {
            APPROVED_MESSAGE
        },
        &obs.now,
    );
    if status_changed(current, &status) {
        return NabslStep::WriteStatus(Box::new(status));
    }
    // The Secret copy first, kept equal to the tenant's Secret.
    let Some(tenant) = obs.tenant_secret else {
        // The verdict checked it exists; it vanished since. Look again shortly.
        return NabslStep::RequeueAfter(Duration::from_secs(1));
    };
    let desired = secret_copy(nabsl, tenant, id, obs.oadp_namespace);
    match obs.copied_secret {
        None => {
            return NabslStep::CreateSecret(sync_write(
                desired,
                &status,
                Synced::Secret(true),
                &obs.now,
            ));
        }
        Some(copy) if secret_data(copy) != secret_data(&desired) => {
            let mut next = copy.clone();
            next.type_ = desired.type_;
            next.data = desired.data;
            next.string_data = None;
            return NabslStep::ReplaceSecret(sync_write(
                next,
                &status,
                Synced::Secret(false),
                &obs.now,
            ));
        }
        Some(_) => {}
    }
    // The copy is there (its write's status may have been lost to a conflict).
    if !synced_as_upstream(&status, types::SECRET_SYNCED) {
        record_synced(&mut status, Synced::Secret(true), &obs.now);
        return NabslStep::WriteStatus(Box::new(status));
    }
    let mut desired = velero_bsl_for(nabsl, id, obs.oadp_namespace, spec.clone());
    if let Some(bsl) = obs.velero_bsl {
        keep_operator_adjustments(&bsl.spec, &mut desired.spec);
    }
    match obs.velero_bsl {
        None => {
            return NabslStep::CreateBsl(sync_write(desired, &status, Synced::Bsl(true), &obs.now));
        }
        Some(bsl) if bsl.spec != desired.spec => {
            let mut next = bsl.clone();
            next.spec = desired.spec;
            return NabslStep::ReplaceBsl(sync_write(next, &status, Synced::Bsl(false), &obs.now));
        }
        Some(_) => {}
    }
    if !synced_as_upstream(&status, types::BACKUP_STORAGE_LOCATION_SYNCED) {
        record_synced(&mut status, Synced::Bsl(true), &obs.now);
    }
    // A spec change that waited is told approved once the BSL has it.
    if status
        .conditions
        .iter()
        .any(|c| c.type_ == types::SPEC_UPDATE_APPROVED)
    {
        set_condition(
            &mut status.conditions,
            types::SPEC_UPDATE_APPROVED,
            true,
            reasons::BSL_SPEC_APPROVED,
            SPEC_UPDATE_APPROVED_MESSAGE,
            &obs.now,
        );
    }
    status.phase = Some(NonAdminPhase::Created);
    mirror(&mut status, obs.velero_bsl);
    if status_changed(current, &status) {
        return NabslStep::WriteStatus(Box::new(status));
    }
    NabslStep::RequeueAfter(RESYNC)
}

/// Keeps, in the Velero BSL spec NAC wants, what the OADP operator's
/// `UpdateBackupStorageLocation` (`pkg/common`) added to the spec of a BSL upstream's NABSL
/// controller wrote (`createVeleroBSL`), so a location taken over from upstream is not
/// rewritten, nor its behaviour changed, for it: for provider `aws`, `config.checksumAlgorithm`
/// set to `""` when the tenant chose none (Velero would otherwise checksum with CRC32, which
/// some S3-compatible stores refuse), and `config.s3Url` without its default port
/// (`aws.StripDefaultPorts`: `:443` for https, `:80` for http).
pub fn keep_operator_adjustments(
    existing: &BackupStorageLocationSpec,
    desired: &mut BackupStorageLocationSpec,
) {
    const CHECKSUM: &str = "checksumAlgorithm";
    const S3_URL: &str = "s3Url";
    if desired.provider != "aws" || existing.provider != desired.provider {
        return;
    }
    let Some(existing_config) = existing.config.as_ref() else {
        return;
    };
    let config = desired.config.get_or_insert_with(BTreeMap::new);
    if !config.contains_key(CHECKSUM) && existing_config.get(CHECKSUM).is_some_and(String::is_empty)
    {
        config.insert(CHECKSUM.to_string(), String::new());
    }
    if let (Some(wanted), Some(written)) = (config.get(S3_URL), existing_config.get(S3_URL))
        && wanted != written
        && strip_default_port(wanted) == *written
    {
        config.insert(S3_URL.to_string(), written.clone());
    }
    if config.is_empty() {
        desired.config = None;
    }
}

/// `url` without the scheme's default port in its authority (`https://s3.example.com:443/x`
/// is `https://s3.example.com/x`), as `aws.StripDefaultPorts` writes it.
fn strip_default_port(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let default = match scheme.to_ascii_lowercase().as_str() {
        "https" => ":443",
        "http" => ":80",
        _ => return url.to_string(),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    match authority.strip_suffix(default) {
        Some(host) if !host.is_empty() => format!("{scheme}://{host}{tail}"),
        _ => url.to_string(),
    }
}

/// Whether condition `type_` says True with one of upstream's reasons (a location synced by an
/// earlier NAC gets them on its next pass).
fn synced_as_upstream(status: &NonAdminBackupStorageLocationStatus, type_: &str) -> bool {
    status.conditions.iter().any(|c| {
        c.type_ == type_
            && c.status == "True"
            && [
                reasons::SECRET_CREATED,
                reasons::SECRET_UPDATED,
                reasons::BACKUP_STORAGE_LOCATION_CREATED,
                reasons::BACKUP_STORAGE_LOCATION_UPDATED,
            ]
            .contains(&c.reason.as_str())
    })
}

/// Which of NAC's objects was written, and whether it was created (else updated).
#[derive(Clone, Copy)]
enum Synced {
    Secret(bool),
    Bsl(bool),
}

/// Records a successful write as upstream does: the condition is set anew (its transition
/// time is the write's), and a written Velero BSL makes the phase `Created`.
fn record_synced(status: &mut NonAdminBackupStorageLocationStatus, what: Synced, now: &Time) {
    let (type_, reason, message) = match what {
        Synced::Secret(true) => (
            types::SECRET_SYNCED,
            reasons::SECRET_CREATED,
            SECRET_CREATED_MESSAGE,
        ),
        Synced::Secret(false) => (
            types::SECRET_SYNCED,
            reasons::SECRET_UPDATED,
            SECRET_UPDATED_MESSAGE,
        ),
        Synced::Bsl(true) => (
            types::BACKUP_STORAGE_LOCATION_SYNCED,
            reasons::BACKUP_STORAGE_LOCATION_CREATED,
            BSL_CREATED_MESSAGE,
        ),
        Synced::Bsl(false) => (
            types::BACKUP_STORAGE_LOCATION_SYNCED,
            reasons::BACKUP_STORAGE_LOCATION_UPDATED,
            BSL_UPDATED_MESSAGE,
        ),
    };
    status.conditions.retain(|c| c.type_ != type_);
    set_condition(&mut status.conditions, type_, true, reason, message, now);
    if matches!(what, Synced::Bsl(_)) {
        status.phase = Some(NonAdminPhase::Created);
    }
}

fn sync_write<T>(
    object: T,
    status: &NonAdminBackupStorageLocationStatus,
    what: Synced,
    now: &Time,
) -> SyncWrite<T> {
    let mut done = status.clone();
    record_synced(&mut done, what, now);
    let mut failed = status.clone();
    let (type_, reason, message) = match what {
        Synced::Secret(_) => (
            types::SECRET_SYNCED,
            reasons::SECRET_SYNC_FAILED,
            SECRET_SYNC_FAILED_MESSAGE,
        ),
        Synced::Bsl(_) => (
            types::BACKUP_STORAGE_LOCATION_SYNCED,
            reasons::BACKUP_STORAGE_LOCATION_SYNC_ERROR,
            BSL_SYNC_ERROR_MESSAGE,
        ),
    };
    set_condition(&mut failed.conditions, type_, false, reason, message, now);
    SyncWrite {
        object: Box::new(object),
        done: Box::new(done),
        failed: Box::new(failed),
    }
}

fn decide_delete(
    obs: &NabslObservation<'_>,
    mut status: NonAdminBackupStorageLocationStatus,
    current: Option<&NonAdminBackupStorageLocationStatus>,
) -> NabslStep {
    if !has_finalizer(obs.nabsl) {
        return NabslStep::AwaitChange;
    }
    advance(&mut status, NonAdminPhase::Deleting);
    set_condition(
        &mut status.conditions,
        types::DELETING,
        true,
        reasons::DELETION_PENDING,
        DELETING_MESSAGE,
        &obs.now,
    );
    if status_changed(current, &status) {
        return NabslStep::WriteStatus(Box::new(status));
    }
    // The NonAdminBackups naming this location go with it (as upstream), first: their
    // backups are removed through the Velero BSL, which stays until they are gone.
    let undeleted: Vec<String> = obs
        .backups
        .iter()
        .filter(|(_, deleting)| !deleting)
        .map(|(name, _)| name.clone())
        .collect();
    if !undeleted.is_empty() {
        return NabslStep::DeleteBackups(undeleted);
    }
    if !obs.backups.is_empty() {
        return NabslStep::RequeueAfter(BACKUPS_DELETION_POLL);
    }
    if let Some(bsl) = obs.velero_bsl {
        return NabslStep::DeleteBsl(bsl.metadata.name.clone().unwrap_or_default());
    }
    if let Some(secret) = obs.copied_secret {
        return NabslStep::DeleteSecret(secret.metadata.name.clone().unwrap_or_default());
    }
    if let Some(request) = obs.request {
        return NabslStep::DeleteRequest(request.metadata.name.clone().unwrap_or_default());
    }
    NabslStep::RemoveFinalizer
}

/// Event reasons of the NABSL controller.
pub mod event_reasons {
    /// Warning: the spec was refused (validation or admin policy).
    pub const SPEC_REFUSED: &str = "BslSpecRefused";
    /// The Velero BackupStorageLocation was created.
    pub const BSL_CREATED: &str = "BackupStorageLocationCreated";
    /// The location (or a change of it) waits for the cluster administrator.
    pub const APPROVAL_PENDING: &str = "ApprovalPending";
    /// Warning: the cluster administrator rejected the location.
    pub const APPROVAL_REJECTED: &str = "ApprovalRejected";
    /// Warning: the cluster administrator withdrew an approval.
    pub const APPROVAL_REVOKED: &str = "ApprovalRevoked";
    /// The credential Secret was copied again (rotated, or its copy was removed).
    pub const SECRET_RESYNCED: &str = "CredentialSecretResynced";
}

fn condition_of<'a>(
    status: Option<&'a NonAdminBackupStorageLocationStatus>,
    type_: &str,
) -> Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    status?.conditions.iter().find(|c| c.type_ == type_)
}

/// Whether condition `type_` newly says False with `message` (it did not say exactly that).
fn newly_false(
    old: Option<&NonAdminBackupStorageLocationStatus>,
    new: &NonAdminBackupStorageLocationStatus,
    type_: &str,
) -> Option<String> {
    let now = condition_of(Some(new), type_).filter(|c| c.status == "False")?;
    let before = condition_of(old, type_);
    let same = before.is_some_and(|c| c.status == "False" && c.message == now.message);
    (!same).then(|| now.message.clone())
}

/// The Event worth publishing once `step` was applied to `nabsl` (as observed), if any: only
/// transitions, never a repeated state. Notes name only the NABSL and the tenant's own Secret.
pub fn notice(
    nabsl: &NonAdminBackupStorageLocation,
    step: &NabslStep,
) -> Option<super::events::Notice<'static>> {
    use super::events::Notice;
    let name = nabsl.metadata.name.as_deref().unwrap_or_default();
    let old = nabsl.status.as_ref();
    match step {
        NabslStep::WriteStatus(new) => {
            if let Some(message) = newly_false(old, new, types::ACCEPTED) {
                return Some(Notice::warning(
                    event_reasons::SPEC_REFUSED,
                    "Validate",
                    format!("NonAdminBackupStorageLocation {name} was refused: {message}"),
                ));
            }
            if let Some(message) = newly_false(old, new, types::SPEC_UPDATE_APPROVED) {
                return Some(Notice::normal(
                    event_reasons::APPROVAL_PENDING,
                    "RequestApproval",
                    format!("NonAdminBackupStorageLocation {name}: {message}"),
                ));
            }
            let message = newly_false(old, new, types::CLUSTER_ADMIN_APPROVED)?;
            let (type_, reason) = match message.as_str() {
                REJECTED_MESSAGE => (
                    super::events::EventType::Warning,
                    event_reasons::APPROVAL_REJECTED,
                ),
                REVOKED_MESSAGE => (
                    super::events::EventType::Warning,
                    event_reasons::APPROVAL_REVOKED,
                ),
                _ => (
                    super::events::EventType::Normal,
                    event_reasons::APPROVAL_PENDING,
                ),
            };
            Some(Notice {
                type_,
                reason,
                action: "RequestApproval",
                note: format!("NonAdminBackupStorageLocation {name}: {message}"),
            })
        }
        NabslStep::CreateBsl(_) => Some(Notice::normal(
            event_reasons::BSL_CREATED,
            "CreateBackupStorageLocation",
            format!(
                "created the Velero BackupStorageLocation of NonAdminBackupStorageLocation {name}"
            ),
        )),
        NabslStep::ReplaceSecret(_) => Some(secret_resynced(nabsl, "it changed")),
        // The first copy is part of creating the location; a later one restores a removed copy.
        NabslStep::CreateSecret(_) if condition_is_true(old, types::SECRET_SYNCED) => {
            Some(secret_resynced(nabsl, "NAC's copy of it was removed"))
        }
        _ => None,
    }
}

fn condition_is_true(status: Option<&NonAdminBackupStorageLocationStatus>, type_: &str) -> bool {
    condition_of(status, type_).is_some_and(|c| c.status == "True")
}

fn secret_resynced(
    nabsl: &NonAdminBackupStorageLocation,
    why: &str,
) -> super::events::Notice<'static> {
    let name = nabsl.metadata.name.as_deref().unwrap_or_default();
    let secret = nabsl
        .spec
        .backup_storage_location_spec
        .credential
        .as_ref()
        .map(|c| c.name.as_str())
        .unwrap_or_default();
    super::events::Notice::normal(
        event_reasons::SECRET_RESYNCED,
        "SyncSecret",
        format!(
            "copied credential Secret {secret} of NonAdminBackupStorageLocation {name} again ({why})"
        ),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::api::nonadmin::labels;
    use serde_json::{Value, json};

    const OADP: &str = "openshift-adp";
    const ID: &str = "team-a-mine-x";

    fn time() -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(1_700_000_000).unwrap())
    }

    fn tenant_spec() -> Value {
        json!({"provider": "aws", "objectStorage": {"bucket": "b", "prefix": "p"},
               "credential": {"name": "creds", "key": "cloud"}})
    }

    fn nabsl(value: Value) -> NonAdminBackupStorageLocation {
        let mut base = json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackupStorageLocation",
            "metadata": {"name": "mine", "namespace": "team-a", "uid": "u-1"},
            "spec": {"backupStorageLocationSpec": tenant_spec()}
        });
        crate::sim::apiserver::patch::merge_patch(&mut base, &value);
        serde_json::from_value(base).unwrap()
    }

    /// A NABSL with the NACUUID written and the finalizer on.
    fn started(extra_conditions: Value) -> NonAdminBackupStorageLocation {
        let mut n = nabsl(json!({"status": {"phase": "New",
            "conditions": extra_conditions,
            "veleroBackupStorageLocation": {"nacuuid": ID, "name": ID, "namespace": OADP}}}));
        let mut s = n.status.clone().unwrap();
        set_condition(
            &mut s.conditions,
            types::ACCEPTED,
            true,
            reasons::BSL_SPEC_VALIDATION,
            ACCEPTED_MESSAGE,
            &time(),
        );
        n.status = Some(s);
        n.metadata.finalizers = Some(vec![finalizers::NON_ADMIN_BACKUP_STORAGE_LOCATION.into()]);
        n
    }

    fn velero_spec() -> BackupStorageLocationSpec {
        serde_json::from_value(json!({"provider": "aws",
            "objectStorage": {"bucket": "b", "prefix": "team-a/p"},
            "credential": {"name": "", "key": "cloud"}}))
        .unwrap()
    }

    fn tenant_secret(value: &str) -> Secret {
        serde_json::from_value(json!({"metadata": {"name": "creds", "namespace": "team-a"},
            "type": "Opaque", "data": {"cloud": base64_of(value)}}))
        .unwrap()
    }

    fn base64_of(v: &str) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(v)
    }

    fn request(
        decision: &str,
        requested: Option<Value>,
        phase: Option<&str>,
    ) -> NonAdminBackupStorageLocationRequest {
        let mut v = json!({"metadata": {"name": ID, "namespace": OADP},
            "spec": {"approvalDecision": decision}});
        if let Some(r) = requested {
            v["status"] = json!({"nonAdminBackupStorageLocation":
                {"requestedSpec": r, "nacuuid": ID, "name": "mine", "namespace": "team-a"}});
            if let Some(p) = phase {
                v["status"]["phase"] = json!(p);
            }
        }
        serde_json::from_value(v).unwrap()
    }

    fn obs<'a>(n: &'a NonAdminBackupStorageLocation) -> NabslObservation<'a> {
        NabslObservation {
            nabsl: n,
            verdict: Ok(velero_spec()),
            require_approval: false,
            request: None,
            tenant_secret: None,
            copied_secret: None,
            velero_bsl: None,
            backups: Vec::new(),
            oadp_namespace: OADP,
            fresh_uuid: Uuid::from_u128(0x1234),
            now: time(),
        }
    }

    fn status_of(step: NabslStep) -> NonAdminBackupStorageLocationStatus {
        match step {
            NabslStep::WriteStatus(s) => *s,
            other => panic!("expected a status write, got {other:?}"),
        }
    }

    fn cond<'a>(
        s: &'a NonAdminBackupStorageLocationStatus,
        t: &str,
    ) -> &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
        s.conditions.iter().find(|c| c.type_ == t).unwrap()
    }

    fn with_status(
        n: &NonAdminBackupStorageLocation,
        s: NonAdminBackupStorageLocationStatus,
    ) -> NonAdminBackupStorageLocation {
        let mut n = n.clone();
        n.status = Some(s);
        n
    }

    /// Applies the status writes `base` leads to, as the controller would; returns the NABSL
    /// as written and the first other step.
    fn settle(base: &NabslObservation<'_>) -> (NonAdminBackupStorageLocation, NabslStep) {
        let mut n = base.nabsl.clone();
        for _ in 0..10 {
            let mut o = base.clone();
            o.nabsl = &n;
            match decide(&o) {
                NabslStep::WriteStatus(s) => n = with_status(&n, *s),
                other => return (n, other),
            }
        }
        panic!("the status never settles");
    }

    /// A write step with its recorded outcomes, for steps built by hand.
    fn write_of<T>(object: T) -> SyncWrite<T> {
        SyncWrite {
            object: Box::new(object),
            done: Box::default(),
            failed: Box::default(),
        }
    }

    #[test]
    fn invalid_spec_backs_off_with_the_message_then_waits() {
        let n = nabsl(json!({}));
        let mut o = obs(&n);
        o.verdict = Err("spec.backupStorageLocationSpec.default: no".into());
        let s = status_of(decide(&o));
        assert_eq!(s.phase, Some(NonAdminPhase::BackingOff));
        let c = cond(&s, types::ACCEPTED);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", reasons::BSL_SPEC_VALIDATION)
        );
        assert_eq!(c.message, "spec.backupStorageLocationSpec.default: no");
        assert!(
            s.velero_backup_storage_location.is_none(),
            "nothing named yet"
        );
        let written = with_status(&n, s);
        let mut o = obs(&written);
        o.verdict = Err("spec.backupStorageLocationSpec.default: no".into());
        assert_eq!(decide(&o), NabslStep::AwaitChange);
    }

    #[test]
    fn valid_spec_gets_accepted_and_a_nacuuid_then_the_finalizer() {
        let n = nabsl(json!({}));
        let s = status_of(decide(&obs(&n)));
        assert_eq!(s.phase, Some(NonAdminPhase::New));
        assert_eq!(cond(&s, types::ACCEPTED).status, "True");
        let v = s.velero_backup_storage_location.clone().unwrap();
        assert_eq!(
            v.nacuuid.as_deref(),
            Some("team-a-mine-00000000-0000-0000-0000-000000001234")
        );
        assert_eq!(v.namespace.as_deref(), Some(OADP));
        let written = with_status(&n, s);
        assert_eq!(decide(&obs(&written)), NabslStep::AddFinalizer);
    }

    #[test]
    fn request_is_created_pending_or_auto_approved() {
        let n = started(json!([]));
        for (required, decision) in [
            (true, ApprovalDecision::Pending),
            (false, ApprovalDecision::Approve),
        ] {
            let mut o = obs(&n);
            o.require_approval = required;
            match decide(&o) {
                NabslStep::CreateRequest(r) => {
                    assert_eq!(r.metadata.name.as_deref(), Some(ID));
                    assert_eq!(r.metadata.namespace.as_deref(), Some(OADP));
                    assert_eq!(r.spec.approval_decision, Some(decision));
                    let l = r.metadata.labels.unwrap();
                    assert_eq!(l[labels::NABSL_ORIGIN_NACUUID], ID);
                    let a = r.metadata.annotations.unwrap();
                    assert_eq!(a[labels::NABSL_ORIGIN_NAMESPACE_ANNOTATION], "team-a");
                }
                other => panic!("expected a request, got {other:?}"),
            }
        }
    }

    #[test]
    fn request_status_records_the_requested_spec() {
        let n = started(json!([]));
        let r = request("pending", None, None);
        let mut o = obs(&n);
        o.require_approval = true;
        o.request = Some(&r);
        match decide(&o) {
            NabslStep::WriteRequestStatus(r) => {
                let s = r.status.unwrap();
                assert_eq!(
                    s.phase,
                    Some(NonAdminBackupStorageLocationRequestPhase::Pending)
                );
                let src = s.non_admin_backup_storage_location.unwrap();
                assert_eq!(
                    src.requested_spec.as_ref(),
                    Some(&n.spec.backup_storage_location_spec)
                );
                assert_eq!(
                    (
                        src.name.as_deref(),
                        src.namespace.as_deref(),
                        src.nacuuid.as_deref()
                    ),
                    (Some("mine"), Some("team-a"), Some(ID))
                );
            }
            other => panic!("expected a request status write, got {other:?}"),
        }
        // The phase follows the admin's decision.
        let r = request("approve", Some(tenant_spec()), Some("Pending"));
        o.request = Some(&r);
        match decide(&o) {
            NabslStep::WriteRequestStatus(r) => assert_eq!(
                r.status.unwrap().phase,
                Some(NonAdminBackupStorageLocationRequestPhase::Approved)
            ),
            other => panic!("expected a request status write, got {other:?}"),
        }
    }

    #[test]
    fn pending_request_waits_with_approval_pending() {
        let n = started(json!([]));
        let r = request("pending", Some(tenant_spec()), Some("Pending"));
        let mut o = obs(&n);
        o.require_approval = true;
        o.request = Some(&r);
        let s = status_of(decide(&o));
        let c = cond(&s, types::CLUSTER_ADMIN_APPROVED);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            (
                "False",
                reasons::BSL_SPEC_APPROVAL_PENDING,
                APPROVAL_PENDING_MESSAGE
            )
        );
        let written = with_status(&n, s);
        let mut o = obs(&written);
        o.require_approval = true;
        o.request = Some(&r);
        assert_eq!(decide(&o), NabslStep::AwaitChange);
    }

    #[test]
    fn approved_copies_the_secret_then_creates_the_bsl_then_reports_created() {
        let n = started(json!([]));
        let r = request("approve", Some(tenant_spec()), Some("Approved"));
        let tenant = tenant_secret("[default]\naws_access_key_id=a\n");
        let mut o = obs(&n);
        o.request = Some(&r);
        o.tenant_secret = Some(&tenant);
        // 1. The approval is recorded first, as upstream.
        let s = status_of(decide(&o));
        let c = cond(&s, types::CLUSTER_ADMIN_APPROVED);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            ("True", "BslSpecApproved", AUTO_APPROVED_MESSAGE)
        );
        assert!(
            c.message.starts_with(
                "NonAdminBackupStorageLocationRequest approval decision set to Approve"
            )
        );
        let n = with_status(&n, s);
        o.nabsl = &n;
        // 2. The Secret copy, recorded as upstream: SecretCreated, or SecretSyncFailed.
        let write = match decide(&o) {
            NabslStep::CreateSecret(w) => w,
            other => panic!("expected the Secret copy, got {other:?}"),
        };
        let copy = *write.object.clone();
        assert_eq!(copy.metadata.name.as_deref(), Some(ID));
        assert_eq!(copy.metadata.namespace.as_deref(), Some(OADP));
        assert_eq!(copy.data, tenant.data);
        assert_eq!(
            copy.metadata.labels.as_ref().unwrap()[labels::NABSL_ORIGIN_NACUUID],
            ID
        );
        let c = cond(&write.done, types::SECRET_SYNCED);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            (
                "True",
                "SecretCreated",
                "Secret successfully created in the OADP namespace"
            )
        );
        let c = cond(&write.failed, types::SECRET_SYNCED);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            (
                "False",
                "SecretSyncFailed",
                "Failed to sync secret to OADP namespace"
            )
        );
        assert_eq!(
            write.done.phase,
            Some(NonAdminPhase::New),
            "not Created yet"
        );
        let n = with_status(&n, *write.done);
        o.nabsl = &n;
        o.copied_secret = Some(&copy);
        // 3. The Velero BSL: BackupStorageLocationCreated and phase Created once written.
        let write = match decide(&o) {
            NabslStep::CreateBsl(w) => w,
            other => panic!("expected the BSL, got {other:?}"),
        };
        let bsl = *write.object.clone();
        assert_eq!(bsl.metadata.name.as_deref(), Some(ID));
        let cred = bsl.spec.credential.clone().unwrap();
        assert_eq!((cred.name.as_str(), cred.key.as_str()), (ID, "cloud"));
        assert_eq!(bsl.spec.object_storage.prefix.as_deref(), Some("team-a/p"));
        let c = cond(&write.done, types::BACKUP_STORAGE_LOCATION_SYNCED);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            (
                "True",
                "BackupStorageLocationCreated",
                "BackupStorageLocation successfully created in the OADP namespace"
            )
        );
        assert_eq!(write.done.phase, Some(NonAdminPhase::Created));
        let c = cond(&write.failed, types::BACKUP_STORAGE_LOCATION_SYNCED);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            (
                "False",
                "BackupStorageLocationSyncError",
                "BackupStorageLocation failure during sync"
            )
        );
        let n = with_status(&n, *write.done);
        o.nabsl = &n;
        let mut live = bsl.clone();
        live.status = serde_json::from_value(json!({"phase": "Available"})).unwrap();
        o.velero_bsl = Some(&live);
        // 4. Velero's status is mirrored.
        let s = status_of(decide(&o));
        assert_eq!(s.phase, Some(NonAdminPhase::Created));
        for t in [
            types::CLUSTER_ADMIN_APPROVED,
            types::SECRET_SYNCED,
            types::BACKUP_STORAGE_LOCATION_SYNCED,
        ] {
            assert_eq!(cond(&s, t).status, "True", "{t}");
        }
        assert_eq!(
            s.velero_backup_storage_location
                .as_ref()
                .unwrap()
                .status
                .as_ref()
                .unwrap()
                .phase
                .as_ref()
                .unwrap()
                .as_str(),
            "Available"
        );
        let written = with_status(&n, s);
        let mut o2 = o.clone();
        o2.nabsl = &written;
        assert_eq!(decide(&o2), NabslStep::RequeueAfter(RESYNC));
    }

    #[test]
    fn a_write_whose_status_was_lost_is_recorded_by_the_next_pass() {
        // The copy and the BSL exist, the status does not say so (a conflict on the status
        // write, or a location synced by an earlier NAC with other reasons).
        let n = started_with(&[
            (types::CLUSTER_ADMIN_APPROVED, "True", AUTO_APPROVED_MESSAGE),
            (types::SECRET_SYNCED, "True", "credential Secret copied"),
        ]);
        let mut status = n.status.clone().unwrap();
        for c in &mut status.conditions {
            if c.type_ == types::CLUSTER_ADMIN_APPROVED {
                c.reason = reasons::BSL_SPEC_APPROVED.into();
            }
        }
        let n = with_status(&n, status);
        let r = request("approve", Some(tenant_spec()), Some("Approved"));
        let tenant = tenant_secret("a");
        let copy = secret_copy(&n, &tenant, ID, OADP);
        let bsl = velero_bsl_for(&n, ID, OADP, velero_spec());
        let mut o = obs(&n);
        o.request = Some(&r);
        o.tenant_secret = Some(&tenant);
        o.copied_secret = Some(&copy);
        o.velero_bsl = Some(&bsl);
        let (settled, step) = settle(&o);
        assert_eq!(step, NabslStep::RequeueAfter(RESYNC));
        let s = settled.status.unwrap();
        assert_eq!(cond(&s, types::SECRET_SYNCED).reason, "SecretCreated");
        assert_eq!(
            cond(&s, types::BACKUP_STORAGE_LOCATION_SYNCED).reason,
            "BackupStorageLocationCreated"
        );
        assert_eq!(s.phase, Some(NonAdminPhase::Created));
    }

    /// A Velero BSL upstream's NABSL controller wrote through the OADP operator's
    /// `UpdateBackupStorageLocation`, which adds `checksumAlgorithm: ""` to an `aws`
    /// location's config and strips the default port from `s3Url`, is taken over as it is:
    /// not replaced, and a later change keeps what the operator added.
    #[test]
    fn an_upstream_aws_bsl_keeps_what_the_oadp_operator_added() {
        let spec = json!({"provider": "aws", "objectStorage": {"bucket": "b", "prefix": "p"},
            "config": {"region": "r", "s3Url": "https://s3.example.com:443"},
            "credential": {"name": "creds", "key": "cloud"}});
        let n = started_with(&[
            (types::CLUSTER_ADMIN_APPROVED, "True", AUTO_APPROVED_MESSAGE),
            (types::SECRET_SYNCED, "True", SECRET_CREATED_MESSAGE),
        ]);
        let mut n = with_status(&n, {
            let mut s = n.status.clone().unwrap();
            for c in &mut s.conditions {
                c.reason = match c.type_.as_str() {
                    types::CLUSTER_ADMIN_APPROVED => reasons::BSL_SPEC_APPROVED.into(),
                    types::SECRET_SYNCED => reasons::SECRET_CREATED.into(),
                    _ => c.reason.clone(),
                };
            }
            s
        });
        n.spec.backup_storage_location_spec = serde_json::from_value(spec.clone()).unwrap();
        let r = request("approve", Some(spec), Some("Approved"));
        let tenant = tenant_secret("a");
        let copy = secret_copy(&n, &tenant, ID, OADP);
        let verdict: BackupStorageLocationSpec = serde_json::from_value(json!({
            "provider": "aws", "objectStorage": {"bucket": "b", "prefix": "team-a/p"},
            "config": {"region": "r", "s3Url": "https://s3.example.com:443"},
            "credential": {"name": "", "key": "cloud"}}))
        .unwrap();
        let mut upstream = velero_bsl_for(&n, ID, OADP, verdict.clone());
        upstream.spec.config = Some(BTreeMap::from([
            ("region".to_string(), "r".to_string()),
            ("s3Url".to_string(), "https://s3.example.com".to_string()),
            ("checksumAlgorithm".to_string(), String::new()),
        ]));
        let mut o = obs(&n);
        o.verdict = Ok(verdict.clone());
        o.request = Some(&r);
        o.tenant_secret = Some(&tenant);
        o.copied_secret = Some(&copy);
        o.velero_bsl = Some(&upstream);
        let (_, step) = settle(&o);
        assert_eq!(step, NabslStep::RequeueAfter(RESYNC));

        // A real change (another region) is written with the operator's additions kept.
        let mut changed = verdict;
        changed
            .config
            .as_mut()
            .unwrap()
            .insert("region".into(), "r2".into());
        o.verdict = Ok(changed);
        let (_, step) = settle(&o);
        let NabslStep::ReplaceBsl(write) = step else {
            panic!("expected a replace, got {step:?}");
        };
        assert_eq!(
            write.object.spec.config,
            Some(BTreeMap::from([
                ("region".to_string(), "r2".to_string()),
                ("s3Url".to_string(), "https://s3.example.com".to_string()),
                ("checksumAlgorithm".to_string(), String::new()),
            ]))
        );
    }

    #[test]
    fn default_ports_are_stripped_as_the_oadp_operator_strips_them() {
        for (url, stripped) in [
            ("https://s3.example.com:443", "https://s3.example.com"),
            (
                "https://s3.example.com:443/bucket?x=1",
                "https://s3.example.com/bucket?x=1",
            ),
            ("http://minio.svc:80/", "http://minio.svc/"),
            ("http://minio.svc:9000", "http://minio.svc:9000"),
            ("https://s3.example.com:80", "https://s3.example.com:80"),
            ("s3.example.com:443", "s3.example.com:443"),
        ] {
            assert_eq!(strip_default_port(url), stripped, "{url}");
        }
    }

    #[test]
    fn rotated_secret_and_changed_bsl_are_replaced() {
        let n = started(json!([]));
        let r = request("approve", Some(tenant_spec()), Some("Approved"));
        let tenant = tenant_secret("new");
        let old = secret_copy(&n, &tenant_secret("old"), ID, OADP);
        let mut o = obs(&n);
        o.request = Some(&r);
        o.tenant_secret = Some(&tenant);
        o.copied_secret = Some(&old);
        let (n, step) = settle(&o);
        o.nabsl = &n;
        match step {
            NabslStep::ReplaceSecret(w) => {
                assert_eq!(w.object.data, tenant.data);
                let c = cond(&w.done, types::SECRET_SYNCED);
                assert_eq!(
                    (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
                    (
                        "True",
                        "SecretUpdated",
                        "Secret successfully updated in the OADP namespace"
                    )
                );
            }
            other => panic!("expected a replaced Secret, got {other:?}"),
        }
        let fresh = secret_copy(&n, &tenant, ID, OADP);
        o.copied_secret = Some(&fresh);
        let mut drifted = velero_bsl_for(&n, ID, OADP, velero_spec());
        drifted.spec.object_storage.bucket = "tampered".into();
        o.velero_bsl = Some(&drifted);
        let (_, step) = settle(&o);
        match step {
            NabslStep::ReplaceBsl(w) => {
                assert_eq!(w.object.spec.object_storage.bucket, "b");
                let c = cond(&w.done, types::BACKUP_STORAGE_LOCATION_SYNCED);
                assert_eq!(
                    (c.reason.as_str(), c.message.as_str()),
                    (
                        "BackupStorageLocationUpdated",
                        "BackupStorageLocation successfully updated in the OADP namespace"
                    )
                );
                assert_eq!(w.done.phase, Some(NonAdminPhase::Created));
            }
            other => panic!("expected a replaced BSL, got {other:?}"),
        }
    }

    #[test]
    fn vanished_tenant_secret_is_looked_at_again() {
        let n = started(json!([]));
        let r = request("approve", Some(tenant_spec()), Some("Approved"));
        let mut o = obs(&n);
        o.request = Some(&r);
        assert!(matches!(settle(&o).1, NabslStep::RequeueAfter(_)));
    }

    #[test]
    fn reject_and_revoke_remove_bsl_then_secret_then_report() {
        let approved = json!([{"type": "ClusterAdminApproved", "status": "True", "reason": "BslSpecApproved", "message": APPROVED_MESSAGE, "lastTransitionTime": "2023-11-14T22:13:20Z"},
            {"type": "SecretSynced", "status": "True", "reason": "SecretSynced", "message": "x", "lastTransitionTime": "2023-11-14T22:13:20Z"}]);
        let n = started(approved);
        let tenant = tenant_secret("a");
        let copy = secret_copy(&n, &tenant, ID, OADP);
        let bsl = velero_bsl_for(&n, ID, OADP, velero_spec());
        for (decision, phase, reason, message) in [
            (
                "reject",
                "Rejected",
                reasons::BSL_SPEC_REJECTED,
                REJECTED_MESSAGE,
            ),
            (
                "pending",
                "Pending",
                reasons::BSL_SPEC_APPROVAL_PENDING,
                REVOKED_MESSAGE,
            ),
        ] {
            let r = request(decision, Some(tenant_spec()), Some(phase));
            let mut o = obs(&n);
            o.require_approval = true;
            o.request = Some(&r);
            o.tenant_secret = Some(&tenant);
            o.copied_secret = Some(&copy);
            o.velero_bsl = Some(&bsl);
            assert_eq!(decide(&o), NabslStep::DeleteBsl(ID.into()));
            o.velero_bsl = None;
            assert_eq!(decide(&o), NabslStep::DeleteSecret(ID.into()));
            o.copied_secret = None;
            let s = status_of(decide(&o));
            let c = cond(&s, types::CLUSTER_ADMIN_APPROVED);
            assert_eq!(
                (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
                ("False", reason, message)
            );
            // As upstream: BackingOff once rejected, New while pending again.
            let phase = if decision == "reject" {
                NonAdminPhase::BackingOff
            } else {
                NonAdminPhase::New
            };
            assert_eq!(s.phase, Some(phase), "{decision}");
            assert!(s.conditions.iter().all(|c| c.type_ != types::SECRET_SYNCED));
            let written = with_status(&n, s);
            o.nabsl = &written;
            assert_eq!(decide(&o), NabslStep::AwaitChange, "{decision}");
        }
    }

    #[test]
    fn events_mark_refusals_creation_and_resyncs_once() {
        use crate::controllers::events::EventType;
        // A refusal is told once, and again only when the reason changes.
        let n = nabsl(json!({}));
        let mut o = obs(&n);
        o.verdict = Err("spec.backupStorageLocationSpec.default: no".into());
        let step = decide(&o);
        let e = notice(&n, &step).unwrap();
        assert_eq!(
            (e.type_, e.reason),
            (EventType::Warning, event_reasons::SPEC_REFUSED)
        );
        assert!(
            e.note.contains("mine") && e.note.contains("default: no"),
            "{}",
            e.note
        );
        let told = with_status(&n, status_of(step));
        let same = NabslStep::WriteStatus(Box::new(told.status.clone().unwrap()));
        assert_eq!(notice(&told, &same), None);
        let mut o = obs(&told);
        o.verdict = Err("spec.backupStorageLocationSpec.objectStorage.prefix: no".into());
        assert!(notice(&told, &decide(&o)).is_some());

        // Creating the Velero BSL is told; the first Secret copy is part of it, not a resync.
        let started = started(json!([]));
        let tenant = tenant_secret("a");
        let copy = secret_copy(&started, &tenant, ID, OADP);
        let e = notice(&started, &NabslStep::CreateSecret(write_of(copy.clone())));
        assert_eq!(e, None);
        let bsl = velero_bsl_for(&started, ID, OADP, velero_spec());
        let e = notice(&started, &NabslStep::CreateBsl(write_of(bsl))).unwrap();
        assert_eq!(e.reason, event_reasons::BSL_CREATED);
        assert!(
            !e.note.contains(ID),
            "OADP-namespace names stay out: {}",
            e.note
        );
        let e = notice(&started, &NabslStep::ReplaceSecret(write_of(copy.clone()))).unwrap();
        assert_eq!(e.reason, event_reasons::SECRET_RESYNCED);
        assert!(
            e.note.contains("creds") && !e.note.contains(ID),
            "{}",
            e.note
        );
        // A copy made again after it was synced (someone removed it) is a resync.
        let synced = started_with(&[(types::SECRET_SYNCED, "True", "x")]);
        let e = notice(&synced, &NabslStep::CreateSecret(write_of(copy))).unwrap();
        assert_eq!(e.reason, event_reasons::SECRET_RESYNCED);
        assert_eq!(notice(&synced, &NabslStep::AwaitChange), None);
    }

    fn started_with(conditions: &[(&str, &str, &str)]) -> NonAdminBackupStorageLocation {
        let list: Vec<Value> = conditions
            .iter()
            .map(|(t, status, message)| {
                json!({"type": t, "status": status, "reason": "R", "message": message,
                       "lastTransitionTime": "2023-11-14T22:13:20Z"})
            })
            .collect();
        started(json!(list))
    }

    #[test]
    fn events_tell_pending_rejected_and_revoked_approvals_apart() {
        use crate::controllers::events::EventType;
        let approved = started_with(&[(types::CLUSTER_ADMIN_APPROVED, "True", APPROVED_MESSAGE)]);
        for (message, reason, type_) in [
            (
                APPROVAL_PENDING_MESSAGE,
                event_reasons::APPROVAL_PENDING,
                EventType::Normal,
            ),
            (
                REJECTED_MESSAGE,
                event_reasons::APPROVAL_REJECTED,
                EventType::Warning,
            ),
            (
                REVOKED_MESSAGE,
                event_reasons::APPROVAL_REVOKED,
                EventType::Warning,
            ),
        ] {
            let mut next = approved.status.clone().unwrap();
            set_condition(
                &mut next.conditions,
                types::CLUSTER_ADMIN_APPROVED,
                false,
                reasons::BSL_SPEC_APPROVAL_PENDING,
                message,
                &time(),
            );
            let step = NabslStep::WriteStatus(Box::new(next.clone()));
            let e = notice(&approved, &step).unwrap();
            assert_eq!((e.reason, e.type_), (reason, type_), "{message}");
            assert!(
                e.note.contains("mine") && !e.note.contains(ID),
                "{}",
                e.note
            );
            // Written: the same condition again is not a transition.
            assert_eq!(notice(&with_status(&approved, next), &step), None);
        }
        // A spec change waiting for a new approval is told as pending too.
        let mut next = approved.status.clone().unwrap();
        set_condition(
            &mut next.conditions,
            types::SPEC_UPDATE_APPROVED,
            false,
            reasons::BSL_SPEC_UPDATE_REJECTED,
            SPEC_UPDATE_PENDING_MESSAGE,
            &time(),
        );
        let e = notice(&approved, &NabslStep::WriteStatus(Box::new(next))).unwrap();
        assert_eq!(e.reason, event_reasons::APPROVAL_PENDING);
    }

    #[test]
    fn spec_update_after_approval_needs_a_new_approval() {
        let approved = json!([{"type": "ClusterAdminApproved", "status": "True", "reason": "BslSpecApproved", "message": APPROVED_MESSAGE, "lastTransitionTime": "2023-11-14T22:13:20Z"}]);
        let mut n = started(approved);
        n.status.as_mut().unwrap().phase = Some(NonAdminPhase::Created);
        let old_spec = tenant_spec();
        n.spec.backup_storage_location_spec.object_storage.bucket = "other".into();
        let tenant = tenant_secret("a");
        let copy = secret_copy(&n, &tenant, ID, OADP);
        let bsl = velero_bsl_for(&n, ID, OADP, velero_spec());
        let r = request("approve", Some(old_spec.clone()), Some("Approved"));
        let mut o = obs(&n);
        o.require_approval = true;
        o.request = Some(&r);
        o.tenant_secret = Some(&tenant);
        o.copied_secret = Some(&copy);
        o.velero_bsl = Some(&bsl);
        // 1. The tenant sees that the change waits.
        let s = status_of(decide(&o));
        let c = cond(&s, types::SPEC_UPDATE_APPROVED);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", reasons::BSL_SPEC_UPDATE_REJECTED)
        );
        let n = with_status(&n, s);
        o.nabsl = &n;
        // 2. The old decision is withdrawn, 3. the request shows the new spec.
        assert_eq!(decide(&o), NabslStep::ResetRequestDecision(ID.into()));
        let r = request("pending", Some(old_spec), Some("Approved"));
        o.request = Some(&r);
        let next = match decide(&o) {
            NabslStep::WriteRequestStatus(r) => *r,
            other => panic!("expected a request status write, got {other:?}"),
        };
        let st = next.status.clone().unwrap();
        assert_eq!(
            st.phase,
            Some(NonAdminBackupStorageLocationRequestPhase::Pending)
        );
        assert_eq!(
            st.non_admin_backup_storage_location
                .unwrap()
                .requested_spec
                .unwrap()
                .object_storage
                .bucket,
            "other"
        );
        // 4. Meanwhile the approved BSL stays as it is.
        o.request = Some(&next);
        assert_eq!(decide(&o), NabslStep::RequeueAfter(RESYNC));
        // 5. Approved: the BSL follows, SpecUpdateApproved=True.
        let mut approved = next.clone();
        approved.spec.approval_decision = Some(ApprovalDecision::Approve);
        approved.status.as_mut().unwrap().phase =
            Some(NonAdminBackupStorageLocationRequestPhase::Approved);
        o.request = Some(&approved);
        let mut o2 = o.clone();
        let mut v = velero_spec();
        v.object_storage.bucket = "other".into();
        o2.verdict = Ok(v);
        let (n2, step) = settle(&o2);
        let NabslStep::ReplaceBsl(write) = step else {
            panic!("expected the BSL replaced, got {step:?}");
        };
        assert_eq!(
            cond(n2.status.as_ref().unwrap(), types::SPEC_UPDATE_APPROVED).status,
            "False",
            "told approved only once the BSL has the change"
        );
        let n3 = with_status(&n2, *write.done);
        o2.nabsl = &n3;
        let updated = *write.object;
        o2.velero_bsl = Some(&updated);
        let (n4, _) = settle(&o2);
        let s = n4.status.clone().unwrap();
        assert_eq!(cond(&s, types::SPEC_UPDATE_APPROVED).status, "True");
        assert_eq!(
            s.phase,
            Some(NonAdminPhase::Created),
            "kept while the change waited and once approved"
        );
    }

    #[test]
    fn spec_update_without_approval_is_taken_as_it_comes() {
        let mut n = started(json!([]));
        n.spec.backup_storage_location_spec.object_storage.bucket = "other".into();
        let r = request("approve", Some(tenant_spec()), Some("Approved"));
        let mut o = obs(&n);
        o.request = Some(&r);
        match decide(&o) {
            NabslStep::WriteRequestStatus(r) => {
                assert_eq!(r.spec.approval_decision, Some(ApprovalDecision::Approve));
                assert_eq!(
                    r.status
                        .unwrap()
                        .non_admin_backup_storage_location
                        .unwrap()
                        .requested_spec
                        .unwrap()
                        .object_storage
                        .bucket,
                    "other"
                );
            }
            other => panic!("expected a request status write, got {other:?}"),
        }
    }

    #[test]
    fn a_change_before_any_approval_just_updates_the_pending_request() {
        let mut n = started(json!([]));
        n.spec.backup_storage_location_spec.object_storage.bucket = "other".into();
        let r = request("pending", Some(tenant_spec()), Some("Pending"));
        let mut o = obs(&n);
        o.require_approval = true;
        o.request = Some(&r);
        assert!(matches!(decide(&o), NabslStep::WriteRequestStatus(_)));
    }

    #[test]
    fn deletion_cascades_bsl_secret_request_then_finalizer() {
        let mut n = started(json!([]));
        n.metadata.deletion_timestamp = Some(time());
        let s = status_of(decide(&obs(&n)));
        assert_eq!(s.phase, Some(NonAdminPhase::Deleting));
        assert_eq!(cond(&s, types::DELETING).reason, reasons::DELETION_PENDING);
        let n = with_status(&n, s);
        let tenant = tenant_secret("a");
        let copy = secret_copy(&n, &tenant, ID, OADP);
        let bsl = velero_bsl_for(&n, ID, OADP, velero_spec());
        let r = request("approve", Some(tenant_spec()), Some("Approved"));
        let mut o = obs(&n);
        o.request = Some(&r);
        o.copied_secret = Some(&copy);
        o.velero_bsl = Some(&bsl);
        // The NonAdminBackups naming the location go first (as upstream); the BSL stays
        // until they are gone, so their backups are removed through it.
        o.backups = vec![("nightly".into(), false), ("weekly".into(), true)];
        assert_eq!(decide(&o), NabslStep::DeleteBackups(vec!["nightly".into()]));
        o.backups = vec![("nightly".into(), true), ("weekly".into(), true)];
        assert_eq!(decide(&o), NabslStep::RequeueAfter(BACKUPS_DELETION_POLL));
        o.backups = Vec::new();
        assert_eq!(decide(&o), NabslStep::DeleteBsl(ID.into()));
        o.velero_bsl = None;
        assert_eq!(decide(&o), NabslStep::DeleteSecret(ID.into()));
        o.copied_secret = None;
        assert_eq!(decide(&o), NabslStep::DeleteRequest(ID.into()));
        o.request = None;
        assert_eq!(decide(&o), NabslStep::RemoveFinalizer);
        let mut gone = n.clone();
        gone.metadata.finalizers = None;
        assert_eq!(decide(&obs(&gone)), NabslStep::AwaitChange);
    }

    #[test]
    fn an_invalid_spec_backs_off_even_after_creation_and_pending_is_new_again() {
        let mut n = started(json!([]));
        n.status.as_mut().unwrap().phase = Some(NonAdminPhase::Created);
        let mut o = obs(&n);
        o.verdict = Err("spec.backupStorageLocationSpec.objectStorage.bucket: no".into());
        let s = status_of(decide(&o));
        assert_eq!(s.phase, Some(NonAdminPhase::BackingOff));
        // Fixed, and waiting for the admin: New, as upstream.
        let n = with_status(&n, s);
        let r = request("pending", Some(tenant_spec()), Some("Pending"));
        let mut o = obs(&n);
        o.require_approval = true;
        o.request = Some(&r);
        let (n, step) = settle(&o);
        assert_eq!(step, NabslStep::AwaitChange);
        let s = n.status.unwrap();
        assert_eq!(s.phase, Some(NonAdminPhase::New));
        let c = cond(&s, types::CLUSTER_ADMIN_APPROVED);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            (
                "False",
                "BslSpecApprovalPending",
                "NonAdminBackupStorageLocationRequest approval pending"
            )
        );
        assert_eq!(
            cond(&s, types::ACCEPTED).message,
            "NonAdminBackupStorageLocation spec validation successful"
        );
    }

    #[test]
    fn unchanged_status_ignores_transition_times() {
        let n = started(json!([]));
        let mut later = n.status.clone().unwrap();
        later.conditions[0].last_transition_time =
            Time(k8s_openapi::jiff::Timestamp::from_second(1).unwrap());
        assert!(!status_changed(n.status.as_ref(), &later));
        later.conditions[0].message = "other".into();
        assert!(status_changed(n.status.as_ref(), &later));
    }
}
