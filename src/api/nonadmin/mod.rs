//! NAC's own API types (`oadp.openshift.io/v1alpha1`), following the public OADP non-admin
//! API so that existing manifests and `oc` habits carry over.
//!
//! Embedded Velero specs are the [`crate::api::velero`] types and so keep unknown fields.
//! Copies of Velero objects that the controllers write into a status use a tolerant CRD
//! schema (no `enum`, unknown fields kept) so a newer Velero's status is stored whole.

mod backup;
mod backup_bucket;
mod backup_entry;
mod backup_storage_location;
mod backup_storage_location_request;
pub mod conditions;
pub mod deletion_action;
mod download_request;
pub mod labels;
mod restore;
mod schedule;
mod shared;

pub use backup::{
    NonAdminBackup, NonAdminBackupSpec, NonAdminBackupStatus, RelatedVeleroBackup,
    RelatedVeleroDeleteBackupRequest,
};
pub use backup_bucket::{
    BACKUP_BUCKET_FINALIZER, BackupBucket, BackupBucketSpec, BackupBucketStatus, bucket_conditions,
};
pub use backup_entry::{
    BackupEntry, BackupEntryPhase, BackupEntrySpec, BackupEntryStatus, ENTRY_ANNOTATION,
    ENTRY_BUCKET_ANNOTATION, ENTRY_GRACE_PERIOD_ANNOTATION, ENTRY_NAMESPACE_ANNOTATION,
    ENTRY_NAMESPACE_UID_LABEL, EntryPurgeStatus, FORCE_DELETE_ANNOTATION, GRACE_PERIOD_LABEL,
    POOL_LOCATION_LABEL, TENANT_PROVISIONING_MESSAGE, TENANT_READY_MESSAGE,
    TENANT_UNAVAILABLE_MESSAGE, TENANT_WAITING_MESSAGE, TenantStorageState, TenantStorageView,
    entry_conditions,
};
pub use backup_storage_location::{
    NonAdminBackupStorageLocation, NonAdminBackupStorageLocationSpec,
    NonAdminBackupStorageLocationStatus, RelatedVeleroBackupStorageLocation,
};
pub use backup_storage_location_request::{
    ApprovalDecision, NonAdminBackupStorageLocationRequest,
    NonAdminBackupStorageLocationRequestPhase, NonAdminBackupStorageLocationRequestSpec,
    NonAdminBackupStorageLocationRequestStatus, SourceNonAdminBackupStorageLocation,
};
pub use deletion_action::{
    DeletionAction, DeletionActionSpec, DeletionActionStatus, DeletionActionWebhook, FailurePolicy,
    ResourceSelector,
};
pub use download_request::{
    NonAdminDownloadRequest, NonAdminDownloadRequestSpec, NonAdminDownloadRequestStatus,
    RelatedVeleroDownloadRequest,
};
pub use restore::{
    NonAdminRestore, NonAdminRestoreSpec, NonAdminRestoreStatus, RelatedVeleroRestore,
};
pub use schedule::{
    NonAdminSchedule, NonAdminScheduleSpec, NonAdminScheduleStatus, NonAdminScheduleTemplate,
    RelatedVeleroSchedule, ScheduledBackup,
};
pub use shared::{DataMoverOperationCounts, NonAdminPhase, PodVolumeOperationCounts, QueueInfo};

/// The API group of every NAC kind.
pub const GROUP: &str = "oadp.openshift.io";
/// The API version of every NAC kind.
pub const VERSION: &str = "v1alpha1";
/// Longest name of a Velero object NAC creates; it is also used as a label value.
pub const MAX_VELERO_OBJECT_NAME_LENGTH: usize = 63;
