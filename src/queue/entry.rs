//! What the queue index knows about one Velero Backup or Restore, and how its phase counts.

use chrono::{DateTime, Utc};

use crate::api::velero::{Backup, BackupPhase, Restore, RestorePhase};

/// The two kinds of Velero object that wait in a queue. Each kind has its own queue: a backup
/// never waits behind a restore, as in Velero (separate controllers, separate workers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QueueKind {
    /// `velero.io/v1` Backup.
    Backup,
    /// `velero.io/v1` Restore.
    Restore,
}

impl QueueKind {
    /// Both kinds, in a fixed order.
    pub const ALL: [QueueKind; 2] = [QueueKind::Backup, QueueKind::Restore];

    /// The Kubernetes kind name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Backup => "Backup",
            Self::Restore => "Restore",
        }
    }
}

/// Velero's `status.phase` of the object, per kind. `None` inside is an object Velero has
/// not touched yet (no status), which Velero treats exactly like `New`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VeleroPhase {
    /// A Backup's phase.
    Backup(Option<BackupPhase>),
    /// A Restore's phase.
    Restore(Option<RestorePhase>),
}

/// Whether an object still occupies the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Activity {
    /// Created but not started: New, Queued (or no phase yet).
    Pending,
    /// Taken off the queue and being worked on: ReadyToStart, InProgress,
    /// WaitingForPluginOperations…, Finalizing….
    Running,
    /// Velero will not work on it again: Completed, PartiallyFailed, Failed,
    /// FailedValidation, Deleting.
    Finished,
}

impl Activity {
    /// Pending or running: the object counts for everything behind it.
    pub fn is_active(self) -> bool {
        !matches!(self, Self::Finished)
    }
}

impl VeleroPhase {
    /// The kind the phase belongs to.
    pub fn kind(&self) -> QueueKind {
        match self {
            Self::Backup(_) => QueueKind::Backup,
            Self::Restore(_) => QueueKind::Restore,
        }
    }

    /// How the phase counts in the queue.
    ///
    /// A phase this version of NAC does not know (`Other`) counts as pending: Velero's
    /// terminal phases have been stable for years, while every phase added since
    /// (WaitingForPluginOperations, Finalizing, Queued, ReadyToStart) was a non-terminal one,
    /// so an unknown phase is far more likely to still occupy the queue. Over-estimating a
    /// position by one is also the lesser error: telling a tenant "you are next" when you are
    /// not is the worse one.
    pub fn activity(&self) -> Activity {
        match self {
            Self::Backup(None) | Self::Restore(None) => Activity::Pending,
            Self::Backup(Some(phase)) => backup_activity(phase),
            Self::Restore(Some(phase)) => restore_activity(phase),
        }
    }

    /// True for a Backup in phase Queued, the only state in which Velero's own
    /// `queuePosition` is meaningful.
    pub fn is_velero_queued(&self) -> bool {
        matches!(self, Self::Backup(Some(BackupPhase::Queued)))
    }
}

fn backup_activity(phase: &BackupPhase) -> Activity {
    match phase {
        BackupPhase::New | BackupPhase::Queued | BackupPhase::Other(_) => Activity::Pending,
        BackupPhase::ReadyToStart
        | BackupPhase::InProgress
        | BackupPhase::WaitingForPluginOperations
        | BackupPhase::WaitingForPluginOperationsPartiallyFailed
        | BackupPhase::Finalizing
        | BackupPhase::FinalizingPartiallyFailed => Activity::Running,
        BackupPhase::Completed
        | BackupPhase::PartiallyFailed
        | BackupPhase::Failed
        | BackupPhase::FailedValidation
        | BackupPhase::Deleting => Activity::Finished,
    }
}

fn restore_activity(phase: &RestorePhase) -> Activity {
    match phase {
        RestorePhase::New | RestorePhase::Other(_) => Activity::Pending,
        RestorePhase::InProgress
        | RestorePhase::WaitingForPluginOperations
        | RestorePhase::WaitingForPluginOperationsPartiallyFailed
        | RestorePhase::Finalizing
        | RestorePhase::FinalizingPartiallyFailed => Activity::Running,
        RestorePhase::Completed
        | RestorePhase::PartiallyFailed
        | RestorePhase::Failed
        | RestorePhase::FailedValidation => Activity::Finished,
    }
}

/// One Velero Backup or Restore as the queue index sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// `metadata.name` (unique per kind within the Velero namespace).
    pub name: String,
    /// `metadata.creationTimestamp`: the queue order (ties within a second: see the index).
    pub created: DateTime<Utc>,
    /// `status.phase`, which also says the kind.
    pub phase: VeleroPhase,
    /// Velero's own `status.queuePosition` when positive (Backups only; `None` otherwise).
    pub velero_queue_position: Option<u64>,
    /// Whether `status.completionTimestamp` is set. Only the upstream baseline
    /// ([`crate::queue::naive_position`]) reads it: upstream decides on it instead of the phase.
    pub has_completion_timestamp: bool,
    /// `metadata.resourceVersion` when it is an integer (it is on every etcd-backed API
    /// server); lets the index drop an update older than the one it holds.
    pub resource_version: Option<u64>,
}

/// Why a Velero object cannot be indexed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    /// The object has no `metadata.name`.
    #[error("the Velero {kind} has no metadata.name")]
    MissingName {
        /// Kind of the object.
        kind: &'static str,
    },
    /// The object has no `metadata.creationTimestamp` (not yet stored by the API server).
    #[error("the Velero {kind} {name} has no metadata.creationTimestamp")]
    MissingCreationTimestamp {
        /// Kind of the object.
        kind: &'static str,
        /// Its name.
        name: String,
    },
    /// The creation timestamp does not fit the index's clock range (years 1677 to 2262).
    #[error("the Velero {kind} {name} has a creationTimestamp out of range")]
    CreationTimestampOutOfRange {
        /// Kind of the object.
        kind: &'static str,
        /// Its name.
        name: String,
    },
}

impl Entry {
    /// The kind, taken from the phase so the two can never disagree.
    pub fn kind(&self) -> QueueKind {
        self.phase.kind()
    }

    /// How the entry counts in the queue.
    pub fn activity(&self) -> Activity {
        self.phase.activity()
    }

    /// The entry for a Velero Backup, as delivered by a watch.
    pub fn from_backup(backup: &Backup) -> Result<Self, EntryError> {
        let kind = QueueKind::Backup.as_str();
        let meta = &backup.metadata;
        let status = backup.status.as_ref();
        let (name, created) = name_and_created(
            kind,
            meta.name.as_deref(),
            meta.creation_timestamp.as_ref().map(|time| &time.0),
        )?;
        Ok(Self {
            name,
            created,
            phase: VeleroPhase::Backup(status.and_then(|status| status.phase.clone())),
            velero_queue_position: status
                .and_then(|status| status.queue_position)
                .and_then(|position| u64::try_from(position).ok())
                .filter(|&position| position > 0),
            has_completion_timestamp: status
                .is_some_and(|status| status.completion_timestamp.is_some()),
            resource_version: parse_resource_version(meta.resource_version.as_deref()),
        })
    }

    /// The entry for a Velero Restore, as delivered by a watch.
    pub fn from_restore(restore: &Restore) -> Result<Self, EntryError> {
        let kind = QueueKind::Restore.as_str();
        let meta = &restore.metadata;
        let status = restore.status.as_ref();
        let (name, created) = name_and_created(
            kind,
            meta.name.as_deref(),
            meta.creation_timestamp.as_ref().map(|time| &time.0),
        )?;
        Ok(Self {
            name,
            created,
            phase: VeleroPhase::Restore(status.and_then(|status| status.phase.clone())),
            velero_queue_position: None,
            has_completion_timestamp: status
                .is_some_and(|status| status.completion_timestamp.is_some()),
            resource_version: parse_resource_version(meta.resource_version.as_deref()),
        })
    }
}

fn name_and_created(
    kind: &'static str,
    name: Option<&str>,
    created: Option<&k8s_openapi::jiff::Timestamp>,
) -> Result<(String, DateTime<Utc>), EntryError> {
    let name = match name {
        Some(name) if !name.is_empty() => name.to_owned(),
        _ => return Err(EntryError::MissingName { kind }),
    };
    let Some(created) = created else {
        return Err(EntryError::MissingCreationTimestamp { kind, name });
    };
    match i64::try_from(created.as_nanosecond()) {
        Ok(nanos) => Ok((name, DateTime::from_timestamp_nanos(nanos))),
        Err(_) => Err(EntryError::CreationTimestampOutOfRange { kind, name }),
    }
}

fn parse_resource_version(resource_version: Option<&str>) -> Option<u64> {
    resource_version.and_then(|version| version.parse().ok())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    use super::*;
    use crate::api::velero::{BackupStatus, RestoreStatus};

    fn meta(name: Option<&str>, second: Option<i64>, resource_version: &str) -> ObjectMeta {
        ObjectMeta {
            name: name.map(str::to_owned),
            creation_timestamp: second
                .map(|second| Time(k8s_openapi::jiff::Timestamp::from_second(second).unwrap())),
            resource_version: Some(resource_version.to_owned()),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn backup_entry_reads_phase_queue_position_and_resource_version() {
        let backup = Backup {
            metadata: meta(Some("b1"), Some(1_700_000_000), "42"),
            spec: Default::default(),
            status: Some(BackupStatus {
                phase: Some(BackupPhase::Queued),
                queue_position: Some(3),
                ..BackupStatus::default()
            }),
        };
        let entry = Entry::from_backup(&backup).unwrap();
        assert_eq!(entry.name, "b1");
        assert_eq!(entry.created.timestamp(), 1_700_000_000);
        assert_eq!(entry.kind(), QueueKind::Backup);
        assert_eq!(entry.velero_queue_position, Some(3));
        assert_eq!(entry.resource_version, Some(42));
        assert!(!entry.has_completion_timestamp);
        assert_eq!(entry.activity(), Activity::Pending);
    }

    #[test]
    fn zero_or_negative_velero_queue_position_is_absent() {
        for position in [0, -1] {
            let backup = Backup {
                metadata: meta(Some("b1"), Some(1), "x"),
                spec: Default::default(),
                status: Some(BackupStatus {
                    queue_position: Some(position),
                    ..BackupStatus::default()
                }),
            };
            let entry = Entry::from_backup(&backup).unwrap();
            assert_eq!(entry.velero_queue_position, None);
            assert_eq!(
                entry.resource_version, None,
                "non-integer version is unknown"
            );
        }
    }

    #[test]
    fn restore_entry_without_status_is_pending() {
        let restore = Restore {
            metadata: meta(Some("r1"), Some(5), "7"),
            spec: Default::default(),
            status: None,
        };
        let entry = Entry::from_restore(&restore).unwrap();
        assert_eq!(entry.kind(), QueueKind::Restore);
        assert_eq!(entry.activity(), Activity::Pending);
        let finished = Restore {
            status: Some(RestoreStatus {
                phase: Some(RestorePhase::Completed),
                completion_timestamp: Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)),
                ..RestoreStatus::default()
            }),
            ..restore
        };
        let entry = Entry::from_restore(&finished).unwrap();
        assert_eq!(entry.activity(), Activity::Finished);
        assert!(entry.has_completion_timestamp);
    }

    #[test]
    fn missing_metadata_is_an_error() {
        let no_name = Backup {
            metadata: meta(None, Some(1), "1"),
            spec: Default::default(),
            status: None,
        };
        assert_eq!(
            Entry::from_backup(&no_name),
            Err(EntryError::MissingName { kind: "Backup" })
        );
        let no_time = Backup {
            metadata: meta(Some("b"), None, "1"),
            spec: Default::default(),
            status: None,
        };
        assert_eq!(
            Entry::from_backup(&no_time).unwrap_err().to_string(),
            "the Velero Backup b has no metadata.creationTimestamp"
        );
    }

    #[test]
    fn phases_classify_as_velero_treats_them() {
        use BackupPhase as B;
        for phase in [B::New, B::Queued, B::Other("SomethingNew".into())] {
            assert_eq!(backup_activity(&phase), Activity::Pending, "{phase:?}");
        }
        for phase in [
            B::ReadyToStart,
            B::InProgress,
            B::WaitingForPluginOperations,
            B::WaitingForPluginOperationsPartiallyFailed,
            B::Finalizing,
            B::FinalizingPartiallyFailed,
        ] {
            assert_eq!(backup_activity(&phase), Activity::Running, "{phase:?}");
        }
        for phase in [
            B::Completed,
            B::PartiallyFailed,
            B::Failed,
            B::FailedValidation,
            B::Deleting,
        ] {
            assert_eq!(backup_activity(&phase), Activity::Finished, "{phase:?}");
        }
        assert_eq!(
            restore_activity(&RestorePhase::FailedValidation),
            Activity::Finished
        );
        assert_eq!(
            restore_activity(&RestorePhase::Other("Queued".into())),
            Activity::Pending
        );
        assert!(VeleroPhase::Backup(Some(B::Queued)).is_velero_queued());
        assert!(!VeleroPhase::Backup(Some(B::New)).is_velero_queued());
    }
}
