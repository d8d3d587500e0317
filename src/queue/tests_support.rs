//! Helpers shared by the queue tests: entry builders and a small deterministic generator.

use chrono::DateTime;

use super::entry::{Entry, VeleroPhase};
use crate::api::velero::{BackupPhase, RestorePhase};

/// SplitMix64: a tiny, well-mixed, seedable generator, so every random test replays exactly.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform enough in `0..bound` for tests (`bound` > 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }
}

/// Whether Velero has set `completionTimestamp` by the time a backup is in `phase`: on
/// Completed, PartiallyFailed and Failed; never on FailedValidation; a Deleting backup keeps
/// the one it got when it finished.
fn backup_completed(phase: Option<&BackupPhase>) -> bool {
    matches!(
        phase,
        Some(
            BackupPhase::Completed
                | BackupPhase::PartiallyFailed
                | BackupPhase::Failed
                | BackupPhase::Deleting
        )
    )
}

/// A Backup entry created at `second`.
pub fn backup(name: &str, second: i64, phase: Option<BackupPhase>) -> Entry {
    Entry {
        name: name.to_owned(),
        created: DateTime::from_timestamp(second, 0).unwrap_or_default(),
        has_completion_timestamp: backup_completed(phase.as_ref()),
        phase: VeleroPhase::Backup(phase),
        velero_queue_position: None,
        resource_version: None,
    }
}

/// A Restore entry created at `second`.
pub fn restore(name: &str, second: i64, phase: Option<RestorePhase>) -> Entry {
    Entry {
        name: name.to_owned(),
        created: DateTime::from_timestamp(second, 0).unwrap_or_default(),
        has_completion_timestamp: matches!(
            phase,
            Some(RestorePhase::Completed | RestorePhase::PartiallyFailed | RestorePhase::Failed)
        ),
        phase: VeleroPhase::Restore(phase),
        velero_queue_position: None,
        resource_version: None,
    }
}
