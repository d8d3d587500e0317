//! Labels, annotations and finalizers NAC puts on the objects it creates (seed 000 and the
//! upstream OADP non-admin controller's names).
//!
//! Labels identify NAC's objects (so they can be found by selector); annotations record which
//! tenant object a Velero object was created for.

/// Marks every object NAC creates in the OADP namespace.
pub const OADP: &str = "openshift.io/oadp";
/// Value of [`OADP`].
pub const OADP_VALUE: &str = "True";
/// Standard "managed by" label.
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// Value of [`MANAGED_BY`] on objects NAC creates (as upstream).
pub const MANAGED_BY_VALUE: &str = "oadp-nac-controller";

/// NACUUID of the NonAdminBackup a Velero Backup / DeleteBackupRequest was created for.
pub const NAB_ORIGIN_NACUUID: &str = "openshift.io/oadp-nab-origin-nacuuid";
/// NACUUID of the NonAdminRestore a Velero Restore was created for.
pub const NAR_ORIGIN_NACUUID: &str = "openshift.io/oadp-nar-origin-nacuuid";
/// NACUUID of the NonAdminBackupStorageLocation a Velero BSL, its Secret and its approval
/// request were created for.
pub const NABSL_ORIGIN_NACUUID: &str = "openshift.io/oadp-nabsl-origin-nacuuid";
/// NACUUID of the NonAdminDownloadRequest a Velero DownloadRequest was created for.
pub const NADR_ORIGIN_NACUUID: &str = "openshift.io/oadp-nadr-origin-nacuuid";
/// NACUUID of the NonAdminSchedule a Velero Schedule (and its backups) belongs to.
pub const NAS_ORIGIN_NACUUID: &str = "openshift.io/oadp-nas-origin-nacuuid";
/// On a NonAdminBackup recreated by the backup sync (or a schedule run): the Velero Backup
/// it mirrors.
pub const NAB_SYNCED_FROM_NACUUID: &str = "openshift.io/oadp-nab-synced-from-nacuuid";

/// Name of the originating NonAdminBackup.
pub const NAB_ORIGIN_NAME_ANNOTATION: &str = "openshift.io/oadp-nab-origin-name";
/// Namespace of the originating NonAdminBackup.
pub const NAB_ORIGIN_NAMESPACE_ANNOTATION: &str = "openshift.io/oadp-nab-origin-namespace";
/// UID of the originating NonAdminBackup's namespace when the Velero Backup was made: the
/// backup sync adopts the backup only into the namespace of that name *and* that UID (a
/// namespace deleted and re-created under the same name is another tenant).
pub const NAB_ORIGIN_NAMESPACE_UID_ANNOTATION: &str = "openshift.io/oadp-nab-origin-namespace-uid";
/// Name of the originating NonAdminRestore.
pub const NAR_ORIGIN_NAME_ANNOTATION: &str = "openshift.io/oadp-nar-origin-name";
/// Namespace of the originating NonAdminRestore.
pub const NAR_ORIGIN_NAMESPACE_ANNOTATION: &str = "openshift.io/oadp-nar-origin-namespace";
/// Name of the originating NonAdminBackupStorageLocation.
pub const NABSL_ORIGIN_NAME_ANNOTATION: &str = "openshift.io/oadp-nabsl-origin-name";
/// Namespace of the originating NonAdminBackupStorageLocation.
pub const NABSL_ORIGIN_NAMESPACE_ANNOTATION: &str = "openshift.io/oadp-nabsl-origin-namespace";
/// Name of the originating NonAdminDownloadRequest.
pub const NADR_ORIGIN_NAME_ANNOTATION: &str = "openshift.io/oadp-nadr-origin-name";
/// Namespace of the originating NonAdminDownloadRequest.
pub const NADR_ORIGIN_NAMESPACE_ANNOTATION: &str = "openshift.io/oadp-nadr-origin-namespace";
/// Name of the originating NonAdminSchedule.
pub const NAS_ORIGIN_NAME_ANNOTATION: &str = "openshift.io/oadp-nas-origin-name";
/// Namespace of the originating NonAdminSchedule.
pub const NAS_ORIGIN_NAMESPACE_ANNOTATION: &str = "openshift.io/oadp-nas-origin-namespace";
/// Tenant-facing storage location (NABSL name) of a NonAdminSchedule's backups, kept on the
/// Velero Schedule and its backups so child NonAdminBackups can show it.
pub const NAS_ORIGIN_STORAGE_LOCATION_ANNOTATION: &str =
    "openshift.io/oadp-nas-origin-storage-location";

/// Finalizer names.
pub mod finalizers {
    /// Keeps a NonAdminBackup until its Velero objects are gone.
    pub const NON_ADMIN_BACKUP: &str = "nonadminbackup.oadp.openshift.io/finalizer";
    /// Keeps a NonAdminRestore until its Velero Restore is gone.
    pub const NON_ADMIN_RESTORE: &str = "nonadminrestore.oadp.openshift.io/finalizer";
    /// Keeps a NonAdminBackupStorageLocation until its Velero BSL, Secret and request are gone.
    pub const NON_ADMIN_BACKUP_STORAGE_LOCATION: &str =
        "nonadminbackupstoragelocation.oadp.openshift.io/finalizer";
    /// Keeps a NonAdminSchedule until its Velero Schedule is gone.
    pub const NON_ADMIN_SCHEDULE: &str = "nonadminschedule.oadp.openshift.io/finalizer";
    /// Keeps a NonAdminDownloadRequest until its Velero DownloadRequest is gone.
    pub const NON_ADMIN_DOWNLOAD_REQUEST: &str =
        "nonadmindownloadrequest.oadp.openshift.io/finalizer";
}
