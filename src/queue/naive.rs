//! The upstream algorithm, kept as the benchmark baseline and as a record of what NAC fixes
//! (see [`naive_position`]).

use super::entry::{Entry, QueueKind};

/// Upstream's queue position for the object `kind`/`name` among `entries`: a full scan,
/// O(n) per query. `None` where upstream writes 0 and for an object not in `entries`.
///
/// Upstream OADP non-admin (`migtools/oadp-non-admin`, `internal/common/function/function.go`,
/// `GetBackupQueueInfo` and its copy `GetRestoreQueueInfo`) computes `estimatedQueuePosition`
/// on every reconcile of a NAB or NAR, like this:
///
/// 1. the target has no `creationTimestamp` → no position (0);
/// 2. the target has a `status.completionTimestamp` → 0 ("already served");
/// 3. otherwise it **lists every Backup (Restore) of the Velero namespace** and returns
///    1 + the number of those without a `completionTimestamp` whose `creationTimestamp` is
///    strictly before the target's.
///
/// It never looks at the phase, which is where its flaws come from:
/// - Velero never sets `completionTimestamp` on a FailedValidation backup, so every backup
///   that ever failed validation is counted **forever** by everything created after it, and a
///   FailedValidation target itself keeps a position forever;
/// - a Deleting backup that never completed (e.g. deleted after failing validation) counts too;
/// - ties are not broken: backups created in the same second (timestamps have one-second
///   resolution) do not count each other and all report the same position;
/// - Velero's own `queuePosition` (Velero ≥ 1.17 reorders its queue around namespace
///   conflicts) is ignored;
/// - each query is a full list and scan, O(n), repeated for every NAB/NAR on every reconcile,
///   and a finished backup does not trigger any refresh of the others — upstream's restore
///   positions are never refreshed at all.
///
/// Here the scan runs over a slice of [`Entry`] instead of an API list, and upstream's
/// "0 = no position" is returned as `None`.
pub fn naive_position(entries: &[Entry], kind: QueueKind, name: &str) -> Option<u64> {
    let target = entries
        .iter()
        .find(|entry| entry.kind() == kind && entry.name == name)?;
    if target.has_completion_timestamp {
        return None;
    }
    let ahead = entries
        .iter()
        .filter(|entry| entry.kind() == kind)
        .filter(|entry| !entry.has_completion_timestamp)
        .filter(|entry| entry.created < target.created)
        .count();
    Some(1 + ahead as u64)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::api::velero::BackupPhase;
    use crate::queue::QueueIndex;
    use crate::queue::tests_support::backup;

    #[test]
    fn upstream_counts_failed_validation_forever_and_the_index_does_not() {
        let entries = vec![
            backup("invalid", 1, Some(BackupPhase::FailedValidation)),
            backup("done", 2, Some(BackupPhase::Completed)),
            backup("target", 3, None),
        ];
        assert_eq!(
            naive_position(&entries, QueueKind::Backup, "target"),
            Some(2)
        );
        assert_eq!(
            naive_position(&entries, QueueKind::Backup, "invalid"),
            Some(1),
            "a FailedValidation backup keeps a position forever upstream"
        );
        assert_eq!(naive_position(&entries, QueueKind::Backup, "done"), None);
        assert_eq!(naive_position(&entries, QueueKind::Backup, "nope"), None);
        assert_eq!(naive_position(&entries, QueueKind::Restore, "target"), None);

        let index = QueueIndex::from_entries(entries);
        assert_eq!(index.position(QueueKind::Backup, "target"), Some(1));
        assert_eq!(index.position(QueueKind::Backup, "invalid"), None);
    }

    #[test]
    fn upstream_gives_same_second_backups_the_same_position() {
        let entries = vec![
            backup("a", 5, None),
            backup("b", 5, None),
            backup("c", 5, None),
        ];
        for name in ["a", "b", "c"] {
            assert_eq!(naive_position(&entries, QueueKind::Backup, name), Some(1));
        }
        let index = QueueIndex::from_entries(entries);
        assert_eq!(index.position(QueueKind::Backup, "c"), Some(3));
    }
}
