//! Velero API types (`velero.io/v1`), with every field of Velero 1.18 and room for more.
//!
//! Every struct keeps fields it does not know in `unknown_fields`, and every enum-like field
//! keeps values it does not know in an `Other` variant, because NAC copies whole Velero specs
//! and statuses between objects: a field added by a newer Velero must survive the copy.
//!
//! Which kinds have a `status` subresource mirrors Velero's own CRDs (see
//! [`crate::api::StatusSubresource`]): only DeleteBackupRequest and ServerStatusRequest do;
//! Velero writes the status of the others through the main resource.

pub mod artifacts;
mod backup;
mod backup_storage_location;
mod delete_backup_request;
mod download_request;
pub mod labels;
mod restore;
mod schedule;
mod server_status_request;
mod shared;

pub use crate::api::common::{GoDuration, UnknownFields};
pub use backup::{
    Backup, BackupHooks, BackupMetadata, BackupPhase, BackupProgress, BackupResourceHook,
    BackupResourceHookSpec, BackupSpec, BackupStatus, ExecHook, UploaderConfigForBackup,
};
pub use backup_storage_location::{
    BackupStorageLocation, BackupStorageLocationAccessMode, BackupStorageLocationPhase,
    BackupStorageLocationSpec, BackupStorageLocationStatus, LOCAL_OBJECT_STORE_PROVIDER,
    ObjectStorageLocation,
};
pub use delete_backup_request::{
    DeleteBackupRequest, DeleteBackupRequestPhase, DeleteBackupRequestSpec,
    DeleteBackupRequestStatus,
};
pub use download_request::{
    DownloadRequest, DownloadRequestPhase, DownloadRequestSpec, DownloadRequestStatus,
    DownloadTarget, DownloadTargetKind,
};
pub use restore::{
    ExecRestoreHook, ExistingResourcePolicy, InitRestoreHook, Restore, RestoreHooks, RestorePhase,
    RestoreProgress, RestoreResourceHook, RestoreResourceHookSpec, RestoreSpec, RestoreStatus,
    RestoreStatusSpec, UploaderConfigForRestore,
};
pub use schedule::{Schedule, SchedulePhase, ScheduleSpec, ScheduleStatus};
pub use server_status_request::{
    PluginInfo, ServerStatusRequest, ServerStatusRequestPhase, ServerStatusRequestSpec,
    ServerStatusRequestStatus,
};
pub use shared::{HookErrorMode, HookStatus};

/// The API group of every Velero kind.
pub const GROUP: &str = "velero.io";
/// The API version of every Velero kind NAC uses.
pub const VERSION: &str = "v1";
