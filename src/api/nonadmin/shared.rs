//! Types shared by several NAC kinds: the request phase, queue information and the
//! counters of Velero's per-volume operations.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::common::is_zero;

/// One-word summary of a NAC request's lifecycle. It only moves forward.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, utoipa::ToSchema,
)]
pub enum NonAdminPhase {
    /// Accepted by the API server, not yet validated by NAC.
    New,
    /// Invalid; NAC waits for the user to change the spec.
    BackingOff,
    /// Validated, and the Velero object was created.
    Created,
    /// Marked for deletion; the Velero object is being removed.
    Deleting,
}

impl NonAdminPhase {
    /// Every phase, in order.
    pub const ALL: [NonAdminPhase; 4] =
        [Self::New, Self::BackingOff, Self::Created, Self::Deleting];

    /// Every wire value, in order.
    pub const KNOWN_VALUES: &'static [&'static str] = &["New", "BackingOff", "Created", "Deleting"];

    /// The phase whose wire value is `value`.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|phase| phase.as_str() == value)
    }

    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::New => "New",
            Self::BackingOff => "BackingOff",
            Self::Created => "Created",
            Self::Deleting => "Deleting",
        }
    }

    /// Position in the forward-only order New < BackingOff < Created < Deleting; a phase
    /// may only be replaced by one of a higher rank.
    pub fn rank(self) -> u8 {
        match self {
            Self::New => 0,
            Self::BackingOff => 1,
            Self::Created => 2,
            Self::Deleting => 3,
        }
    }
}

impl std::fmt::Display for NonAdminPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Best-effort estimate of how far a request is from being processed by Velero.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueInfo {
    /// Velero operations ahead of this one (0 when not queued).
    pub estimated_queue_position: i64,
}

/// Counts, per phase, of the DataUploads (backup) or DataDownloads (restore) of one Velero
/// backup or restore.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DataMoverOperationCounts {
    /// All operations.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub total: i64,
    /// Operations in phase New.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub new: i64,
    /// Operations in phase Accepted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub accepted: i64,
    /// Operations in phase Prepared.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub prepared: i64,
    /// Operations in phase InProgress.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub in_progress: i64,
    /// Operations in phase Canceling.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub canceling: i64,
    /// Operations in phase Canceled.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub canceled: i64,
    /// Operations in phase Failed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failed: i64,
    /// Operations in phase Completed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub completed: i64,
}

/// Counts, per phase, of the PodVolumeBackups (backup) or PodVolumeRestores (restore) of one
/// Velero backup or restore.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodVolumeOperationCounts {
    /// All operations.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub total: i64,
    /// Operations in phase New.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub new: i64,
    /// Operations in phase InProgress.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub in_progress: i64,
    /// Operations in phase Failed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failed: i64,
    /// Operations in phase Completed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub completed: i64,
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn phase_wire_values_and_order() {
        for (phase, known) in NonAdminPhase::ALL
            .into_iter()
            .zip(NonAdminPhase::KNOWN_VALUES)
        {
            let wire = serde_json::to_value(phase).unwrap();
            assert_eq!(wire, phase.as_str());
            assert_eq!(phase.as_str(), *known);
            assert_eq!(NonAdminPhase::parse(known), Some(phase));
            assert_eq!(
                serde_json::from_value::<NonAdminPhase>(wire).unwrap(),
                phase
            );
        }
        assert!(NonAdminPhase::New.rank() < NonAdminPhase::Created.rank());
        assert!(NonAdminPhase::Created.rank() < NonAdminPhase::Deleting.rank());
        assert!(serde_json::from_str::<NonAdminPhase>("\"Unknown\"").is_err());
        assert_eq!(NonAdminPhase::parse("Unknown"), None);
    }

    #[test]
    fn zero_counters_are_omitted() {
        let counts = PodVolumeOperationCounts {
            total: 2,
            completed: 2,
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(&counts).unwrap(),
            serde_json::json!({"total": 2, "completed": 2})
        );
    }
}
