//! The phases the gateway's views report, typed: Velero's phase of a backup or a restore, and
//! an operation's phase in the history (NAC's request phase until Velero reports one).
//!
//! On the wire each is the phase's own string, as in the objects' status; the OpenAPI document
//! lists the values each is known to take (the union of the CRDs' enums) and admits any other
//! string, which a newer Velero may report. GraphQL keeps its `String` fields for existing
//! dashboards.

use std::borrow::Cow;
use std::fmt;

use serde::Serialize;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::Schema;
use utoipa::{PartialSchema, ToSchema};

use crate::api::common::open_enum_openapi_schema;
use crate::api::nonadmin::NonAdminPhase;
use crate::api::velero::{
    BackupPhase, BackupStorageLocationPhase, DeleteBackupRequestPhase, DownloadRequestPhase,
    RestorePhase,
};
use crate::history::OperationKind;

/// Velero's phase of a backup or of a restore.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum VeleroPhase {
    /// A Velero Backup's.
    Backup(BackupPhase),
    /// A Velero Restore's.
    Restore(RestorePhase),
}

impl VeleroPhase {
    /// The wire value.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Backup(phase) => phase.as_str(),
            Self::Restore(phase) => phase.as_str(),
        }
    }
}

impl PartialSchema for VeleroPhase {
    fn schema() -> RefOr<Schema> {
        string_of(
            "Velero's phase of a backup or a restore.",
            &[BackupPhase::KNOWN_VALUES, RestorePhase::KNOWN_VALUES],
        )
    }
}

impl ToSchema for VeleroPhase {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("VeleroPhase")
    }
}

/// The most advanced phase an operation reached: Velero's once there is a Velero object, NAC's
/// request phase before.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum OperationPhase {
    /// NAC's request phase (no Velero phase yet).
    Request(NonAdminPhase),
    /// A backup's or a schedule run's Velero Backup.
    Backup(BackupPhase),
    /// A restore's Velero Restore.
    Restore(RestorePhase),
    /// A storage location's Velero BackupStorageLocation.
    StorageLocation(BackupStorageLocationPhase),
    /// A download's Velero DownloadRequest.
    Download(DownloadRequestPhase),
    /// A permanent deletion's Velero DeleteBackupRequest.
    Deletion(DeleteBackupRequestPhase),
}

impl OperationPhase {
    /// Reads a phase the history stored for an operation of `kind`: `from_request` when the
    /// history took it from NAC's request phase rather than from Velero.
    pub fn of(kind: Option<OperationKind>, phase: &str, from_request: bool) -> Self {
        if from_request && let Some(request) = NonAdminPhase::parse(phase) {
            return Self::Request(request);
        }
        match kind {
            Some(OperationKind::Restore) => Self::Restore(phase.into()),
            Some(OperationKind::BackupStorageLocation) => Self::StorageLocation(phase.into()),
            Some(OperationKind::Download) => Self::Download(phase.into()),
            Some(OperationKind::Delete) => Self::Deletion(phase.into()),
            Some(OperationKind::Backup | OperationKind::ScheduleRun) | None => {
                Self::Backup(phase.into())
            }
        }
    }

    /// The wire value.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Request(phase) => phase.as_str(),
            Self::Backup(phase) => phase.as_str(),
            Self::Restore(phase) => phase.as_str(),
            Self::StorageLocation(phase) => phase.as_str(),
            Self::Download(phase) => phase.as_str(),
            Self::Deletion(phase) => phase.as_str(),
        }
    }
}

impl PartialSchema for OperationPhase {
    fn schema() -> RefOr<Schema> {
        string_of(
            "The most advanced phase an operation reached: Velero's (of its Backup, Restore, \
             BackupStorageLocation, DownloadRequest or DeleteBackupRequest) once there is one, \
             NAC's request phase before.",
            &[
                NonAdminPhase::KNOWN_VALUES,
                BackupPhase::KNOWN_VALUES,
                RestorePhase::KNOWN_VALUES,
                BackupStorageLocationPhase::KNOWN_VALUES,
                DownloadRequestPhase::KNOWN_VALUES,
                DeleteBackupRequestPhase::KNOWN_VALUES,
            ],
        )
    }
}

impl ToSchema for OperationPhase {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("OperationPhase")
    }
}

/// The open-enum schema of the values of `sets`, each once, in first-seen order.
fn string_of(description: &str, sets: &[&[&str]]) -> RefOr<Schema> {
    let mut values: Vec<&str> = Vec::new();
    for value in sets.iter().flat_map(|set| set.iter()) {
        if !values.contains(value) {
            values.push(value);
        }
    }
    match open_enum_openapi_schema(&values) {
        RefOr::T(Schema::AnyOf(mut any_of)) => {
            any_of.description = Some(description.to_string());
            RefOr::T(Schema::AnyOf(any_of))
        }
        other => other,
    }
}

/// GraphQL's form of an optional phase: its string, as the schema has always typed it.
pub fn phase_text<P: fmt::Display>(phase: Option<P>) -> Option<String> {
    phase.map(|p| p.to_string())
}

impl fmt::Display for VeleroPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for OperationPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn enum_values<T: PartialSchema>() -> Vec<String> {
        let schema = serde_json::to_value(T::schema()).unwrap();
        // anyOf: the known values, then any string (a newer Velero's).
        assert_eq!(schema["anyOf"][1]["type"], "string", "{schema}");
        serde_json::from_value(schema["anyOf"][0]["enum"].clone()).unwrap()
    }

    #[test]
    fn a_velero_phase_is_its_own_string_on_the_wire() {
        let phase = VeleroPhase::Restore(RestorePhase::InProgress);
        assert_eq!(serde_json::to_value(&phase).unwrap(), "InProgress");
        assert_eq!(phase.as_str(), "InProgress");
    }

    #[test]
    fn the_velero_phase_schema_lists_backup_and_restore_phases_once_each() {
        let values = enum_values::<VeleroPhase>();
        for value in BackupPhase::KNOWN_VALUES
            .iter()
            .chain(RestorePhase::KNOWN_VALUES)
        {
            assert_eq!(values.iter().filter(|v| v == value).count(), 1, "{value}");
        }
        assert!(values.contains(&"WaitingForPluginOperations".to_string()));
    }

    #[test]
    fn an_operation_phase_is_read_per_kind_and_per_source() {
        assert_eq!(
            OperationPhase::of(Some(OperationKind::Backup), "BackingOff", true),
            OperationPhase::Request(NonAdminPhase::BackingOff)
        );
        // Velero's New is not NAC's New.
        assert_eq!(
            OperationPhase::of(Some(OperationKind::Restore), "New", false),
            OperationPhase::Restore(RestorePhase::New)
        );
        assert_eq!(
            OperationPhase::of(Some(OperationKind::Delete), "Processed", false),
            OperationPhase::Deletion(DeleteBackupRequestPhase::Processed)
        );
        assert_eq!(
            OperationPhase::of(
                Some(OperationKind::BackupStorageLocation),
                "Available",
                false
            ),
            OperationPhase::StorageLocation(BackupStorageLocationPhase::Available)
        );
        assert_eq!(
            OperationPhase::of(Some(OperationKind::ScheduleRun), "Completed", false),
            OperationPhase::Backup(BackupPhase::Completed)
        );
    }

    #[test]
    fn a_phase_from_a_newer_velero_is_kept_verbatim() {
        let phase = OperationPhase::of(Some(OperationKind::Backup), "Resuming", false);
        assert_eq!(phase.as_str(), "Resuming");
        assert_eq!(serde_json::to_value(&phase).unwrap(), "Resuming");
    }

    #[test]
    fn the_operation_phase_schema_lists_every_source() {
        let values = enum_values::<OperationPhase>();
        for value in ["BackingOff", "Queued", "Available", "Processed", "Deleting"] {
            assert!(values.contains(&value.to_string()), "{value}");
        }
    }

    #[test]
    fn graphql_reads_a_phase_as_its_string() {
        assert_eq!(
            phase_text(Some(VeleroPhase::Backup(BackupPhase::Completed))),
            Some("Completed".to_string())
        );
        assert_eq!(phase_text(None::<VeleroPhase>), None);
    }
}
