//! Custom resource types: NAC's own (`oadp.openshift.io/v1alpha1`) and Velero's (`velero.io/v1`),
//! and the CustomResourceDefinitions generated from them; also how NAC's clients identify
//! themselves to the API server ([`client_identity`]), and the label-selector engine every layer
//! matches labels with ([`selector`]).

pub mod client_identity;
pub mod common;
pub mod crds;
pub mod names;
pub mod nonadmin;
pub mod oadp;
pub mod origin;
pub mod selector;
pub mod velero;

/// Whether a kind's CRD declares the `status` subresource.
///
/// With the subresource, status is written through `/status` (e.g. `Api::patch_status`) and
/// spec writes ignore it; without it, status is part of the main resource and `/status` does
/// not exist. Velero's own CRDs declare it only for DeleteBackupRequest and
/// ServerStatusRequest, so code writing the status of a Velero Backup, Restore, Schedule,
/// BackupStorageLocation or DownloadRequest (the Velero simulator) must use the main resource,
/// exactly as Velero does on a real cluster.
pub trait StatusSubresource {
    /// True when the CRD has `subresources.status`.
    const HAS_STATUS_SUBRESOURCE: bool;
}

macro_rules! status_subresource {
    ($value:literal: $($kind:ty),+ $(,)?) => {
        $( impl StatusSubresource for $kind { const HAS_STATUS_SUBRESOURCE: bool = $value; } )+
    };
}

status_subresource!(false:
    velero::Backup,
    velero::Restore,
    velero::BackupStorageLocation,
    velero::DownloadRequest,
    velero::Schedule,
);
status_subresource!(true:
    velero::DeleteBackupRequest,
    velero::ServerStatusRequest,
    nonadmin::NonAdminBackup,
    nonadmin::NonAdminRestore,
    nonadmin::NonAdminBackupStorageLocation,
    nonadmin::NonAdminBackupStorageLocationRequest,
    nonadmin::NonAdminDownloadRequest,
    nonadmin::NonAdminSchedule,
    nonadmin::DeletionAction,
    nonadmin::BackupBucket,
    nonadmin::BackupEntry,
);
