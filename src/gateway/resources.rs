//! The tenant resources the gateway serves, and what the gateway needs to know about each: its
//! plural (for access checks), kind, URL segment, and where its phases are.

use kube::core::NamespaceResourceScope;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::api::nonadmin::{
    NonAdminBackup, NonAdminBackupStorageLocation, NonAdminPhase, NonAdminRestore, NonAdminSchedule,
};

/// A tenant resource served under `/api/v1/namespaces/{namespace}/...`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
#[derive(async_graphql::Enum)]
#[graphql(name = "ResourceKind")]
pub enum TenantResource {
    /// NonAdminBackup.
    Backups,
    /// NonAdminRestore.
    Restores,
    /// NonAdminBackupStorageLocation.
    StorageLocations,
    /// NonAdminSchedule.
    Schedules,
}

impl TenantResource {
    /// Every resource, in a fixed order.
    pub const ALL: [TenantResource; 4] = [
        TenantResource::Backups,
        TenantResource::Restores,
        TenantResource::StorageLocations,
        TenantResource::Schedules,
    ];

    /// The Kubernetes plural (`nonadminbackups` …), used in access checks.
    pub fn plural(self) -> &'static str {
        match self {
            TenantResource::Backups => "nonadminbackups",
            TenantResource::Restores => "nonadminrestores",
            TenantResource::StorageLocations => "nonadminbackupstoragelocations",
            TenantResource::Schedules => "nonadminschedules",
        }
    }

    /// The Kubernetes kind.
    pub fn kind(self) -> &'static str {
        self.object_kind().as_str()
    }

    /// The Kubernetes kind, as views name it.
    pub fn object_kind(self) -> TenantObjectKind {
        match self {
            TenantResource::Backups => TenantObjectKind::NonAdminBackup,
            TenantResource::Restores => TenantObjectKind::NonAdminRestore,
            TenantResource::StorageLocations => TenantObjectKind::NonAdminBackupStorageLocation,
            TenantResource::Schedules => TenantObjectKind::NonAdminSchedule,
        }
    }

    /// The URL segment (`backups` …).
    pub fn segment(self) -> &'static str {
        match self {
            TenantResource::Backups => "backups",
            TenantResource::Restores => "restores",
            TenantResource::StorageLocations => "storage-locations",
            TenantResource::Schedules => "schedules",
        }
    }
}

/// The Kubernetes kind of a tenant resource's objects (what `kind` says in views).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, utoipa::ToSchema)]
pub enum TenantObjectKind {
    /// Of backups.
    NonAdminBackup,
    /// Of restores.
    NonAdminRestore,
    /// Of storage locations.
    NonAdminBackupStorageLocation,
    /// Of schedules.
    NonAdminSchedule,
}

impl TenantObjectKind {
    /// The kind's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NonAdminBackup => "NonAdminBackup",
            Self::NonAdminRestore => "NonAdminRestore",
            Self::NonAdminBackupStorageLocation => "NonAdminBackupStorageLocation",
            Self::NonAdminSchedule => "NonAdminSchedule",
        }
    }
}

/// A NAC kind the gateway caches and serves.
pub trait TenantKind:
    kube::Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + Serialize
    + DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
    /// Which resource this is.
    const RESOURCE: TenantResource;

    /// NAC's request phase (`status.phase`).
    fn request_phase(&self) -> Option<NonAdminPhase>;

    /// The phase of the Velero object behind it, if any.
    fn velero_phase(&self) -> Option<String>;

    /// Whether `filter` (a request or Velero phase, case-insensitive) matches.
    fn phase_matches(&self, filter: &str) -> bool {
        self.request_phase()
            .is_some_and(|phase| phase.as_str().eq_ignore_ascii_case(filter))
            || self
                .velero_phase()
                .is_some_and(|phase| phase.eq_ignore_ascii_case(filter))
    }
}

impl TenantKind for NonAdminBackup {
    const RESOURCE: TenantResource = TenantResource::Backups;

    fn request_phase(&self) -> Option<NonAdminPhase> {
        self.status.as_ref().and_then(|status| status.phase)
    }

    fn velero_phase(&self) -> Option<String> {
        self.status
            .as_ref()?
            .velero_backup
            .as_ref()?
            .status
            .as_ref()?
            .phase
            .as_ref()
            .map(|phase| phase.as_str().to_string())
    }
}

impl TenantKind for NonAdminRestore {
    const RESOURCE: TenantResource = TenantResource::Restores;

    fn request_phase(&self) -> Option<NonAdminPhase> {
        self.status.as_ref().and_then(|status| status.phase)
    }

    fn velero_phase(&self) -> Option<String> {
        self.status
            .as_ref()?
            .velero_restore
            .as_ref()?
            .status
            .as_ref()?
            .phase
            .as_ref()
            .map(|phase| phase.as_str().to_string())
    }
}

impl TenantKind for NonAdminBackupStorageLocation {
    const RESOURCE: TenantResource = TenantResource::StorageLocations;

    fn request_phase(&self) -> Option<NonAdminPhase> {
        self.status.as_ref().and_then(|status| status.phase)
    }

    fn velero_phase(&self) -> Option<String> {
        self.status
            .as_ref()?
            .velero_backup_storage_location
            .as_ref()?
            .status
            .as_ref()?
            .phase
            .as_ref()
            .map(|phase| phase.as_str().to_string())
    }
}

impl TenantKind for NonAdminSchedule {
    const RESOURCE: TenantResource = TenantResource::Schedules;

    fn request_phase(&self) -> Option<NonAdminPhase> {
        self.status.as_ref().and_then(|status| status.phase)
    }

    fn velero_phase(&self) -> Option<String> {
        self.status
            .as_ref()?
            .velero_schedule
            .as_ref()?
            .status
            .as_ref()?
            .phase
            .as_ref()
            .map(|phase| phase.as_str().to_string())
    }
}
