//! The Velero 1.18 backup queue: which New backups are queued, at which `queuePosition`, and
//! which queued backups may start now.
//!
//! Followed from `pkg/controller/backup_queue_controller.go` and `backup_tracker.go`:
//! - a New backup (phase unset or "New") becomes Queued at the highest queued position + 1,
//!   in the order Velero's watch delivers their creation (`resourceVersion` order; the
//!   creation second alone cannot tell backups created in the same second apart);
//! - a Queued backup moves to ReadyToStart (its position reset to 0) only while fewer than
//!   `--concurrent-backups` backups are running, where running means ReadyToStart or InProgress
//!   (`BackupTracker.RunningCount`; WaitingForPluginOperations and Finalizing backups no
//!   longer count and no longer block);
//! - and only if its namespaces share none with a running backup nor with any Queued backup
//!   ahead of it (`detectNSConflictsInternal`): a blocked backup keeps its place and blocks
//!   later ones touching its namespaces, while a later non-overlapping backup may pass it;
//! - a backup ahead that could start always starts first (`checkForEarlierRunnableBackups`);
//! - whenever a backup leaves the queue the remaining Queued backups are renumbered 1..n in
//!   queue order.
//!
//! A backup's namespaces are those its include/exclude lists select among the cluster's
//! namespaces (`namespacesForBackup`, see
//! [`crate::manifest::selection::backup_namespaces_for_queue`]): a backup of every
//! namespace overlaps every backup touching any namespace, and one selecting no existing
//! namespace overlaps nothing.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use chrono::{DateTime, Utc};

use crate::api::velero::BackupPhase;

/// One backup of the Velero namespace, as the queue sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueEntry {
    /// Backup name.
    pub name: String,
    /// `metadata.creationTimestamp`; orders New backups (Velero queues them as it sees them).
    pub creation_timestamp: DateTime<Utc>,
    /// `metadata.resourceVersion` as a number: within one second, the order New backups were
    /// created in (an untouched New backup still has the version it was created with), which
    /// is the order Velero's watch delivers them. Names break the remaining ties.
    pub resource_version: Option<u64>,
    /// `status.phase`; `None` is a backup no controller has touched yet.
    pub phase: Option<BackupPhase>,
    /// `status.queuePosition` (0 or `None` when not queued).
    pub queue_position: Option<i64>,
    /// The namespaces the backup would back up.
    pub namespaces: BTreeSet<String>,
}

/// A backup waiting in the queue after the plan is applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedBackup {
    /// Backup name.
    pub name: String,
    /// Its `status.queuePosition`, 1-based.
    pub position: i64,
}

/// What the queue controller does now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueuePlan {
    /// New backups that become Queued, in the order they join the queue. Some may also be in
    /// [`QueuePlan::ready_to_start`] when they can start at once (Velero queues them first).
    pub newly_queued: Vec<String>,
    /// Queued backups that move to ReadyToStart (`queuePosition` 0), in queue order.
    pub ready_to_start: Vec<String>,
    /// Every backup still Queued afterwards, in queue order, with its position.
    pub queued: Vec<QueuedBackup>,
}

impl QueuePlan {
    /// The position a backup has after the plan, if it is still queued.
    pub fn position_of(&self, name: &str) -> Option<i64> {
        self.queued
            .iter()
            .find(|queued| queued.name == name)
            .map(|queued| queued.position)
    }
}

fn is_new(phase: Option<&BackupPhase>) -> bool {
    match phase {
        None | Some(BackupPhase::New) => true,
        Some(BackupPhase::Other(value)) => value.is_empty(),
        Some(_) => false,
    }
}

fn is_running(phase: Option<&BackupPhase>) -> bool {
    matches!(
        phase,
        Some(BackupPhase::ReadyToStart | BackupPhase::InProgress)
    )
}

/// Plans one pass of the queue over the Velero namespace's backups with `--concurrent-backups`
/// set to `concurrency` (0 counts as 1, as in Velero). Deterministic; O(n log n) in the number
/// of backups plus the namespaces they name.
pub fn plan_queue(backups: &[QueueEntry], concurrency: usize) -> QueuePlan {
    let capacity = concurrency.max(1);

    let mut queued: Vec<&QueueEntry> = backups
        .iter()
        .filter(|backup| backup.phase.as_ref() == Some(&BackupPhase::Queued))
        .collect();
    queued.sort_by(|a, b| {
        (a.queue_position.unwrap_or(0), a.creation_timestamp, &a.name).cmp(&(
            b.queue_position.unwrap_or(0),
            b.creation_timestamp,
            &b.name,
        ))
    });
    let mut positions: BTreeMap<&str, i64> = queued
        .iter()
        .map(|backup| (backup.name.as_str(), backup.queue_position.unwrap_or(0)))
        .collect();

    let mut new: Vec<&QueueEntry> = backups
        .iter()
        .filter(|backup| is_new(backup.phase.as_ref()))
        .collect();
    new.sort_by(|a, b| {
        (a.creation_timestamp, a.resource_version, &a.name).cmp(&(
            b.creation_timestamp,
            b.resource_version,
            &b.name,
        ))
    });
    let mut highest = queued
        .iter()
        .map(|backup| backup.queue_position.unwrap_or(0))
        .max()
        .unwrap_or(0);
    let mut plan = QueuePlan::default();
    for backup in &new {
        highest += 1;
        positions.insert(backup.name.as_str(), highest);
        plan.newly_queued.push(backup.name.clone());
        queued.push(backup);
    }

    let running: Vec<&QueueEntry> = backups
        .iter()
        .filter(|backup| is_running(backup.phase.as_ref()))
        .collect();
    let mut running_count = running.len();
    // Namespaces of running backups and of every queued backup already passed over: a queued
    // backup touching any of them must wait.
    let mut claimed: HashSet<&str> = running
        .iter()
        .flat_map(|backup| backup.namespaces.iter().map(String::as_str))
        .collect();
    let mut started: HashSet<&str> = HashSet::new();
    for backup in &queued {
        if running_count >= capacity {
            break;
        }
        let overlaps = backup
            .namespaces
            .iter()
            .any(|namespace| claimed.contains(namespace.as_str()));
        if !overlaps {
            started.insert(backup.name.as_str());
            plan.ready_to_start.push(backup.name.clone());
            running_count += 1;
        }
        claimed.extend(backup.namespaces.iter().map(String::as_str));
    }

    let remaining = queued
        .iter()
        .filter(|backup| !started.contains(backup.name.as_str()));
    plan.queued = if started.is_empty() {
        remaining
            .map(|backup| QueuedBackup {
                name: backup.name.clone(),
                position: positions
                    .get(backup.name.as_str())
                    .copied()
                    .unwrap_or_default(),
            })
            .collect()
    } else {
        remaining
            .zip(1..)
            .map(|(backup, position)| QueuedBackup {
                name: backup.name.clone(),
                position,
            })
            .collect()
    };
    plan
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn entry(
        name: &str,
        minute: i64,
        phase: Option<BackupPhase>,
        namespaces: &[&str],
    ) -> QueueEntry {
        QueueEntry {
            name: name.to_owned(),
            creation_timestamp: DateTime::from_timestamp(minute * 60, 0).unwrap(),
            phase,
            queue_position: None,
            resource_version: None,
            namespaces: namespaces.iter().map(|ns| (*ns).to_owned()).collect(),
        }
    }

    fn queued(name: &str, minute: i64, position: i64, namespaces: &[&str]) -> QueueEntry {
        QueueEntry {
            queue_position: Some(position),
            ..entry(name, minute, Some(BackupPhase::Queued), namespaces)
        }
    }

    fn positions(plan: &QueuePlan) -> Vec<(&str, i64)> {
        plan.queued
            .iter()
            .map(|queued| (queued.name.as_str(), queued.position))
            .collect()
    }

    /// Applies a plan to the entries, as the controller would.
    fn apply(backups: &mut [QueueEntry], plan: &QueuePlan) {
        for backup in backups.iter_mut() {
            if plan.ready_to_start.contains(&backup.name) {
                backup.phase = Some(BackupPhase::ReadyToStart);
                backup.queue_position = Some(0);
            } else if let Some(position) = plan.position_of(&backup.name) {
                backup.phase = Some(BackupPhase::Queued);
                backup.queue_position = Some(position);
            }
        }
    }

    #[test]
    fn new_backups_queue_in_creation_order_and_one_starts() {
        let backups = [
            entry("c", 3, None, &["team-c"]),
            entry("a", 1, Some(BackupPhase::New), &["team-a"]),
            entry("b", 2, None, &["team-b"]),
        ];
        let plan = plan_queue(&backups, 1);
        assert_eq!(plan.newly_queued, vec!["a", "b", "c"]);
        assert_eq!(plan.ready_to_start, vec!["a"]);
        assert_eq!(positions(&plan), vec![("b", 1), ("c", 2)]);
    }

    #[test]
    fn new_backups_of_one_second_queue_in_the_order_they_were_created() {
        let created = |name: &str, version: u64| QueueEntry {
            resource_version: Some(version),
            ..entry(name, 1, None, &["team-a"])
        };
        // Created q4 first, then q1 and q2, all in one second: Velero's watch delivers them
        // in that order, whatever their names.
        let backups = [created("q1", 11), created("q4", 10), created("q2", 12)];
        let plan = plan_queue(&backups, 1);
        assert_eq!(plan.newly_queued, vec!["q4", "q1", "q2"]);
        assert_eq!(plan.ready_to_start, vec!["q4"]);
        assert_eq!(positions(&plan), vec![("q1", 1), ("q2", 2)]);
    }

    #[test]
    fn fifo_with_concurrency_one_waits_for_the_running_backup() {
        let mut backups = vec![
            entry("first", 1, Some(BackupPhase::InProgress), &["team-a"]),
            entry("second", 2, None, &["team-b"]),
            entry("third", 3, None, &["team-c"]),
        ];
        let plan = plan_queue(&backups, 1);
        assert!(plan.ready_to_start.is_empty());
        assert_eq!(positions(&plan), vec![("second", 1), ("third", 2)]);
        apply(&mut backups, &plan);

        // The running backup finishes; the queue moves and renumbers.
        backups[0].phase = Some(BackupPhase::Completed);
        let plan = plan_queue(&backups, 1);
        assert_eq!(plan.ready_to_start, vec!["second"]);
        assert_eq!(positions(&plan), vec![("third", 1)]);
    }

    #[test]
    fn concurrency_three_starts_three_disjoint_backups() {
        let backups = [
            entry("a", 1, None, &["team-a"]),
            entry("b", 2, None, &["team-b"]),
            entry("c", 3, None, &["team-c"]),
            entry("d", 4, None, &["team-d"]),
        ];
        let plan = plan_queue(&backups, 3);
        assert_eq!(plan.ready_to_start, vec!["a", "b", "c"]);
        assert_eq!(positions(&plan), vec![("d", 1)]);
        // Zero concurrency counts as one.
        assert_eq!(plan_queue(&backups, 0).ready_to_start, vec!["a"]);
    }

    #[test]
    fn overlap_blocks_while_a_later_disjoint_backup_may_start() {
        let backups = [
            entry("running", 1, Some(BackupPhase::InProgress), &["team-a"]),
            queued("same-ns", 2, 1, &["team-a", "team-b"]),
            queued("touches-blocked", 3, 2, &["team-b"]),
            queued("elsewhere", 4, 3, &["team-c"]),
        ];
        let plan = plan_queue(&backups, 3);
        // same-ns overlaps the running backup; touches-blocked overlaps same-ns ahead of it.
        assert_eq!(plan.ready_to_start, vec!["elsewhere"]);
        assert_eq!(
            positions(&plan),
            vec![("same-ns", 1), ("touches-blocked", 2)]
        );
    }

    #[test]
    fn cluster_wide_backup_overlaps_everything() {
        let all = ["team-a", "team-b", "team-c"];
        let backups = [
            entry("everything", 1, Some(BackupPhase::ReadyToStart), &all),
            queued("a", 2, 1, &["team-a"]),
            queued("c", 3, 2, &["team-c"]),
            // A backup selecting no existing namespace overlaps nothing.
            queued("cluster-only", 4, 3, &[]),
        ];
        let plan = plan_queue(&backups, 4);
        assert_eq!(plan.ready_to_start, vec!["cluster-only"]);
        assert_eq!(positions(&plan), vec![("a", 1), ("c", 2)]);
    }

    #[test]
    fn finalizing_backups_neither_count_nor_block() {
        let backups = [
            entry("finalizing", 1, Some(BackupPhase::Finalizing), &["team-a"]),
            entry(
                "waiting",
                2,
                Some(BackupPhase::WaitingForPluginOperations),
                &["team-a"],
            ),
            entry("next", 3, None, &["team-a"]),
        ];
        let plan = plan_queue(&backups, 1);
        assert_eq!(plan.ready_to_start, vec!["next"]);
    }

    #[test]
    fn capacity_is_checked_before_conflicts_and_terminal_backups_are_ignored() {
        let backups = [
            entry("done", 0, Some(BackupPhase::Completed), &["team-a"]),
            entry(
                "invalid",
                0,
                Some(BackupPhase::FailedValidation),
                &["team-a"],
            ),
            entry("r1", 1, Some(BackupPhase::InProgress), &["x"]),
            entry("r2", 2, Some(BackupPhase::ReadyToStart), &["y"]),
            queued("q", 3, 1, &["team-a"]),
        ];
        let plan = plan_queue(&backups, 2);
        assert!(plan.ready_to_start.is_empty());
        assert!(plan.newly_queued.is_empty());
        assert_eq!(positions(&plan), vec![("q", 1)]);
        assert_eq!(plan_queue(&backups, 3).ready_to_start, vec!["q"]);
    }

    #[test]
    fn positions_keep_gaps_until_the_queue_moves() {
        // Velero appends at the highest position + 1 and renumbers only when a backup leaves.
        let backups = [
            entry("running", 1, Some(BackupPhase::InProgress), &["team-a"]),
            queued("q2", 2, 2, &["team-a"]),
            queued("q5", 3, 5, &["team-a"]),
            entry("new", 4, None, &["team-a"]),
        ];
        let plan = plan_queue(&backups, 1);
        assert_eq!(positions(&plan), vec![("q2", 2), ("q5", 5), ("new", 6)]);

        let mut moved = backups.to_vec();
        moved[0].phase = Some(BackupPhase::Completed);
        let plan = plan_queue(&moved, 1);
        assert_eq!(plan.ready_to_start, vec!["q2"]);
        assert_eq!(positions(&plan), vec![("q5", 1), ("new", 2)]);
    }

    #[test]
    fn same_timestamp_orders_by_name() {
        let backups = [entry("b", 1, None, &["x"]), entry("a", 1, None, &["y"])];
        let plan = plan_queue(&backups, 1);
        assert_eq!(plan.newly_queued, vec!["a", "b"]);
        assert_eq!(plan.ready_to_start, vec!["a"]);
    }
}
