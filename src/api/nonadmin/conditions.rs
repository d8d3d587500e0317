//! Condition types and reasons NAC writes into the `status.conditions` of its kinds
//! (standard `metav1.Condition`s), as the upstream OADP non-admin controller names them.

/// Condition types.
pub mod types {
    /// The request passed validation (True) or did not (False).
    pub const ACCEPTED: &str = "Accepted";
    /// The Velero object was created; Velero may still reject or fail it.
    pub const QUEUED: &str = "Queued";
    /// The request is being deleted; waits until its Velero objects are gone.
    pub const DELETING: &str = "Deleting";

    /// NABSL: the credential Secret was copied into the OADP namespace.
    pub const SECRET_SYNCED: &str = "SecretSynced";
    /// NABSL: the Velero BackupStorageLocation was created or updated.
    pub const BACKUP_STORAGE_LOCATION_SYNCED: &str = "BackupStorageLocationSynced";
    /// NABSL: the cluster admin approved (True) or rejected (False) the location.
    pub const CLUSTER_ADMIN_APPROVED: &str = "ClusterAdminApproved";
    /// NABSL: whether a change of the spec after approval was accepted.
    pub const SPEC_UPDATE_APPROVED: &str = "SpecUpdateApproved";

    /// NADR: the backup does not use a NonAdminBackupStorageLocation, so it cannot be served.
    pub const NON_ADMIN_BACKUP_STORAGE_LOCATION_NOT_USED: &str =
        "NonAdminBackupStorageLocationNotUsed";
    /// NADR: the target NonAdminBackup does not exist or is not usable.
    pub const NON_ADMIN_BACKUP_NOT_AVAILABLE: &str = "NonAdminBackupNotAvailable";
    /// NADR: the target NonAdminRestore does not exist or is not usable.
    pub const NON_ADMIN_RESTORE_NOT_AVAILABLE: &str = "NonAdminRestoreNotAvailable";
    /// NADR: processing finished (terminal).
    pub const PROCESSED: &str = "Processed";
}

/// Condition reasons.
pub mod reasons {
    /// NAB: Accepted=True.
    pub const BACKUP_ACCEPTED: &str = "BackupAccepted";
    /// NAB: Accepted=False, the backup spec is invalid or violates admin policy.
    pub const INVALID_BACKUP_SPEC: &str = "InvalidBackupSpec";
    /// NAB: Queued=True, the Velero Backup was created.
    pub const BACKUP_SCHEDULED: &str = "BackupScheduled";
    /// NAB: Accepted=False (phase BackingOff), the Velero Backup it made is gone (TTL expiry,
    /// an admin's delete): kept, never made again (upstream's reason).
    pub const VELERO_BACKUP_NOT_FOUND: &str = "VeleroBackupNotFound";
    /// NAB/NAR: Deleting=True.
    pub const DELETION_PENDING: &str = "DeletionPending";

    /// NAR: Accepted=True.
    pub const RESTORE_ACCEPTED: &str = "RestoreAccepted";
    /// NAR: Accepted=False, the restore spec is invalid or violates admin policy.
    pub const INVALID_RESTORE_SPEC: &str = "InvalidRestoreSpec";
    /// NAR: Queued=True, the Velero Restore was created.
    pub const RESTORE_SCHEDULED: &str = "RestoreScheduled";
    /// NAR: Accepted=False (phase BackingOff), the Velero Restore it made is gone: kept, never
    /// made again (upstream's reason).
    pub const VELERO_RESTORE_NOT_FOUND: &str = "VeleroRestoreNotFound";

    /// NABSL: Accepted, with status telling whether the spec passed validation.
    pub const BSL_SPEC_VALIDATION: &str = "BslSpecValidation";
    /// NABSL: ClusterAdminApproved=False, waiting for the admin's decision.
    pub const BSL_SPEC_APPROVAL_PENDING: &str = "BslSpecApprovalPending";
    /// NABSL: ClusterAdminApproved=True.
    pub const BSL_SPEC_APPROVED: &str = "BslSpecApproved";
    /// NABSL: ClusterAdminApproved=False, rejected by the admin.
    pub const BSL_SPEC_REJECTED: &str = "BslSpecRejected";
    /// NABSL: the approval decision is not a known value.
    pub const BSL_SPEC_INVALID: &str = "BslSpecInvalid";
    /// NABSL: SpecUpdateApproved=False, the spec changed after the request was made.
    pub const BSL_SPEC_UPDATE_REJECTED: &str = "BslSpecUpdateRejected";
    /// NABSL: SecretSynced=True, NAC's copy of the credential Secret was created (upstream's).
    pub const SECRET_CREATED: &str = "SecretCreated";
    /// NABSL: SecretSynced=True, NAC's copy was updated to the tenant's Secret (upstream's).
    pub const SECRET_UPDATED: &str = "SecretUpdated";
    /// NABSL: SecretSynced=False, the copy could not be written (upstream's).
    pub const SECRET_SYNC_FAILED: &str = "SecretSyncFailed";
    /// NABSL: BackupStorageLocationSynced=True, the Velero BSL was created (upstream's).
    pub const BACKUP_STORAGE_LOCATION_CREATED: &str = "BackupStorageLocationCreated";
    /// NABSL: BackupStorageLocationSynced=True, the Velero BSL was updated (upstream's).
    pub const BACKUP_STORAGE_LOCATION_UPDATED: &str = "BackupStorageLocationUpdated";
    /// NABSL: BackupStorageLocationSynced=False, the Velero BSL could not be written (upstream's).
    pub const BACKUP_STORAGE_LOCATION_SYNC_ERROR: &str = "BackupStorageLocationSyncError";

    /// NAS: Accepted=True.
    pub const SCHEDULE_ACCEPTED: &str = "ScheduleAccepted";
    /// NAS: Accepted=False, the schedule or its backup template is invalid.
    pub const INVALID_SCHEDULE_SPEC: &str = "InvalidScheduleSpec";
}
