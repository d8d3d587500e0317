//! The queue index: every Velero Backup and Restore by name, plus one order-statistic tree per
//! kind holding only the active (pending or running) ones in queue order.

use std::collections::HashMap;
use std::collections::hash_map::Entry as MapEntry;

use chrono::{DateTime, Utc};

use super::entry::{Activity, Entry, QueueKind};
use super::tree::OrderStatisticTree;

/// Queue order: creation time first. Kubernetes timestamps have one-second resolution, so ties
/// are common when a schedule, a script or NAC's concurrent reconciles create many objects at
/// once; within one second, an object further along is ahead (running, then queued by Velero,
/// then not taken yet), and objects not taken yet keep the order they were created in, which
/// is the order Velero's watch delivers and takes them in: their `resourceVersion` (nothing
/// changed them since their creation). The name breaks the remaining ties. A pure function of
/// the object's current state, so the index never depends on the order of events.
type OrderKey = (DateTime<Utc>, u8, Option<u64>, String);

fn order_key(entry: &Entry) -> OrderKey {
    let (stage, version) = match entry.activity() {
        Activity::Running => (0, None),
        _ if entry.phase.is_velero_queued() => (1, None),
        _ => (2, entry.resource_version),
    };
    (entry.created, stage, version, entry.name.clone())
}

/// What [`QueueIndex::upsert`] did with an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpsertOutcome {
    /// The object was not indexed before.
    Inserted,
    /// The object was indexed and something about it changed.
    Updated,
    /// The object was indexed with exactly this state already (a repeated event).
    Unchanged,
    /// The index holds a newer `resourceVersion` of the object; the entry was dropped.
    Stale,
}

#[derive(Debug, Clone)]
struct Indexed {
    entry: Entry,
    /// Cached `(entry.created, entry.name)`, so queries borrow it instead of building one.
    order_key: OrderKey,
}

/// One kind's objects.
#[derive(Debug, Clone, Default)]
struct KindIndex {
    by_name: HashMap<String, Indexed>,
    /// Order keys of the active entries only: the rank of a key is the number of active
    /// entries ahead of it.
    active: OrderStatisticTree<OrderKey>,
}

impl KindIndex {
    fn upsert(&mut self, entry: Entry) -> UpsertOutcome {
        match self.by_name.entry(entry.name.clone()) {
            MapEntry::Vacant(vacant) => {
                let order_key = order_key(&entry);
                if entry.activity().is_active() {
                    self.active.insert(order_key.clone());
                }
                vacant.insert(Indexed { entry, order_key });
                UpsertOutcome::Inserted
            }
            MapEntry::Occupied(mut occupied) => {
                let indexed = occupied.get_mut();
                if let (Some(held), Some(new)) =
                    (indexed.entry.resource_version, entry.resource_version)
                    && new < held
                {
                    return UpsertOutcome::Stale;
                }
                if indexed.entry == entry {
                    return UpsertOutcome::Unchanged;
                }
                let was_active = indexed.entry.activity().is_active();
                let is_active = entry.activity().is_active();
                // Moves within its second as it gets further along (and creationTimestamp
                // changes when a delete and re-create under the same name arrive as one
                // update after a missed watch event).
                let key = order_key(&entry);
                let moved = indexed.order_key != key;
                if was_active && (moved || !is_active) {
                    self.active.remove(&indexed.order_key);
                }
                if moved {
                    indexed.order_key = key;
                }
                if is_active && (moved || !was_active) {
                    self.active.insert(indexed.order_key.clone());
                }
                indexed.entry = entry;
                UpsertOutcome::Updated
            }
        }
    }

    fn remove(&mut self, name: &str) -> Option<Entry> {
        let indexed = self.by_name.remove(name)?;
        if indexed.entry.activity().is_active() {
            self.active.remove(&indexed.order_key);
        }
        Some(indexed.entry)
    }

    fn position(&self, name: &str) -> Option<u64> {
        let indexed = self.by_name.get(name)?;
        let entry = &indexed.entry;
        match entry.activity() {
            Activity::Finished => None,
            // Being worked on: nothing has to be processed before it any more.
            Activity::Running => Some(1),
            Activity::Pending => {
                if entry.phase.is_velero_queued()
                    && let Some(position) = entry.velero_queue_position
                {
                    return Some(position);
                }
                let ahead = self.active.rank(&indexed.order_key);
                Some(1 + ahead as u64)
            }
        }
    }
}

/// One in-memory index over the Velero Backups and Restores of the Velero namespace, answering
/// "where is this object in its queue" in O(log n).
///
/// Fed from watch events: [`QueueIndex::upsert`] for Added/Modified (and each object of a
/// re-list), [`QueueIndex::remove`] for Deleted, [`QueueIndex::replace_kind`] when a re-list
/// completes. Every method is idempotent, and `upsert` drops an entry older (by
/// `resourceVersion`) than the one held, so a replayed or reordered event cannot move an
/// object back in time.
#[derive(Debug, Clone, Default)]
pub struct QueueIndex {
    backups: KindIndex,
    restores: KindIndex,
    revision: u64,
}

impl QueueIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// An index holding `entries` (later entries of the same kind and name win, unless stale).
    pub fn from_entries(entries: impl IntoIterator<Item = Entry>) -> Self {
        let mut index = Self::new();
        for entry in entries {
            index.upsert(entry);
        }
        index
    }

    fn kind(&self, kind: QueueKind) -> &KindIndex {
        match kind {
            QueueKind::Backup => &self.backups,
            QueueKind::Restore => &self.restores,
        }
    }

    fn kind_mut(&mut self, kind: QueueKind) -> &mut KindIndex {
        match kind {
            QueueKind::Backup => &mut self.backups,
            QueueKind::Restore => &mut self.restores,
        }
    }

    /// Adds or updates one object (watch event Added or Modified). O(log n).
    pub fn upsert(&mut self, entry: Entry) -> UpsertOutcome {
        let outcome = self.kind_mut(entry.kind()).upsert(entry);
        if matches!(outcome, UpsertOutcome::Inserted | UpsertOutcome::Updated) {
            self.revision += 1;
        }
        outcome
    }

    /// Forgets one object (watch event Deleted); returns what was held. O(log n).
    pub fn remove(&mut self, kind: QueueKind, name: &str) -> Option<Entry> {
        let removed = self.kind_mut(kind).remove(name);
        if removed.is_some() {
            self.revision += 1;
        }
        removed
    }

    /// Replaces every object of `kind` with `entries` (a completed re-list: objects deleted
    /// while the watch was down disappear). O(n log n).
    pub fn replace_kind(&mut self, kind: QueueKind, entries: impl IntoIterator<Item = Entry>) {
        let mut fresh = KindIndex::default();
        for entry in entries.into_iter().filter(|entry| entry.kind() == kind) {
            fresh.upsert(entry);
        }
        *self.kind_mut(kind) = fresh;
        self.revision += 1;
    }

    /// Queue position of an object: 1 + the number of objects of the same kind ahead of it
    /// (created earlier; within one second, further along or created first, see
    /// [`OrderKey`]) that are pending or running.
    ///
    /// - a Backup in phase Queued with Velero's own `queuePosition` gets that position, since
    ///   Velero may let a later backup pass one whose namespaces are busy;
    /// - a running object is being served: position 1;
    /// - a finished object (Completed, PartiallyFailed, Failed, FailedValidation, Deleting) and
    ///   an object the index does not know have no position.
    ///
    /// O(log n).
    pub fn position(&self, kind: QueueKind, name: &str) -> Option<u64> {
        self.kind(kind).position(name)
    }

    /// The entry held for an object.
    pub fn get(&self, kind: QueueKind, name: &str) -> Option<&Entry> {
        self.kind(kind)
            .by_name
            .get(name)
            .map(|indexed| &indexed.entry)
    }

    /// Number of objects of `kind` still pending or running (the queue length metric). O(1).
    pub fn active_len(&self, kind: QueueKind) -> usize {
        self.kind(kind).active.len()
    }

    /// Number of objects of `kind` held, finished ones included. O(1).
    pub fn len(&self, kind: QueueKind) -> usize {
        self.kind(kind).by_name.len()
    }

    /// True when no object of either kind is held.
    pub fn is_empty(&self) -> bool {
        QueueKind::ALL.iter().all(|&kind| self.len(kind) == 0)
    }

    /// The active objects of `kind` in queue order (see [`OrderKey`]), for the
    /// gateway's queue views. O(log n) to start, O(1) amortized per item.
    pub fn active_in_order(&self, kind: QueueKind) -> impl Iterator<Item = &Entry> + '_ {
        let index = self.kind(kind);
        index
            .active
            .iter()
            .filter_map(|(_, _, _, name)| index.by_name.get(name).map(|indexed| &indexed.entry))
    }

    /// A counter that grows whenever the indexed state changes, so a consumer (the position
    /// writer) can skip work when nothing happened since it last looked.
    pub fn revision(&self) -> u64 {
        self.revision
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::api::velero::{BackupPhase, RestorePhase};
    use crate::queue::entry::VeleroPhase;
    use crate::queue::tests_support::{backup, restore};

    #[test]
    fn positions_count_only_active_entries_ahead() {
        let mut index = QueueIndex::new();
        index.upsert(backup("done", 1, Some(BackupPhase::Completed)));
        index.upsert(backup("invalid", 2, Some(BackupPhase::FailedValidation)));
        index.upsert(backup("running", 3, Some(BackupPhase::InProgress)));
        index.upsert(backup(
            "waiting",
            4,
            Some(BackupPhase::WaitingForPluginOperations),
        ));
        index.upsert(backup("a-new", 5, None));
        index.upsert(backup("b-new", 5, Some(BackupPhase::New)));
        index.upsert(restore("r", 1, None));

        assert_eq!(index.position(QueueKind::Backup, "done"), None);
        assert_eq!(index.position(QueueKind::Backup, "invalid"), None);
        assert_eq!(index.position(QueueKind::Backup, "running"), Some(1));
        assert_eq!(index.position(QueueKind::Backup, "waiting"), Some(1));
        assert_eq!(index.position(QueueKind::Backup, "a-new"), Some(3));
        // Same second: the name breaks the tie, so the two never share a position.
        assert_eq!(index.position(QueueKind::Backup, "b-new"), Some(4));
        assert_eq!(index.position(QueueKind::Backup, "nope"), None);
        // Restores queue separately.
        assert_eq!(index.position(QueueKind::Restore, "r"), Some(1));
        assert_eq!(index.active_len(QueueKind::Backup), 4);
        assert_eq!(index.len(QueueKind::Backup), 6);

        let order: Vec<&str> = index
            .active_in_order(QueueKind::Backup)
            .map(|entry| entry.name.as_str())
            .collect();
        assert_eq!(order, ["running", "waiting", "a-new", "b-new"]);
    }

    #[test]
    fn within_one_second_creation_order_decides_before_the_name() {
        let with_version = |name: &str, version: u64| {
            let mut entry = backup(name, 5, None);
            entry.resource_version = Some(version);
            entry
        };
        let mut index = QueueIndex::new();
        // NAC's concurrent reconciles created q4's backup first, then q1's, in one second.
        index.upsert(with_version("team-a-q4", 100));
        assert_eq!(index.position(QueueKind::Backup, "team-a-q4"), Some(1));
        index.upsert(with_version("team-a-q1", 101));
        assert_eq!(index.position(QueueKind::Backup, "team-a-q4"), Some(1));
        assert_eq!(index.position(QueueKind::Backup, "team-a-q1"), Some(2));
        // Taken by Velero (a later resourceVersion), it stays ahead of those not taken yet.
        let mut queued = with_version("team-a-q4", 102);
        queued.phase = VeleroPhase::Backup(Some(BackupPhase::Queued));
        index.upsert(queued);
        assert_eq!(index.position(QueueKind::Backup, "team-a-q1"), Some(2));
        let order: Vec<&str> = index
            .active_in_order(QueueKind::Backup)
            .map(|entry| entry.name.as_str())
            .collect();
        assert_eq!(order, ["team-a-q4", "team-a-q1"]);
        // Running, whatever its name and version, it is ahead of the rest of its second.
        let mut running = with_version("team-a-q9", 200);
        running.phase = VeleroPhase::Backup(Some(BackupPhase::InProgress));
        index.upsert(running);
        assert_eq!(index.position(QueueKind::Backup, "team-a-q1"), Some(3));
        let order: Vec<&str> = index
            .active_in_order(QueueKind::Backup)
            .map(|entry| entry.name.as_str())
            .collect();
        assert_eq!(order, ["team-a-q9", "team-a-q4", "team-a-q1"]);
    }

    #[test]
    fn completion_moves_everyone_behind_forward() {
        let mut index = QueueIndex::new();
        index.upsert(backup("first", 1, Some(BackupPhase::InProgress)));
        index.upsert(backup("second", 2, None));
        index.upsert(backup("third", 3, None));
        assert_eq!(index.position(QueueKind::Backup, "third"), Some(3));
        index.upsert(backup("first", 1, Some(BackupPhase::Completed)));
        assert_eq!(index.position(QueueKind::Backup, "first"), None);
        assert_eq!(index.position(QueueKind::Backup, "second"), Some(1));
        assert_eq!(index.position(QueueKind::Backup, "third"), Some(2));
        index.upsert(backup("second", 2, Some(BackupPhase::Deleting)));
        assert_eq!(index.position(QueueKind::Backup, "third"), Some(1));
    }

    #[test]
    fn velero_queue_position_wins_for_queued_backups_only() {
        let mut index = QueueIndex::new();
        index.upsert(backup("running", 1, Some(BackupPhase::InProgress)));
        let mut queued = backup("queued", 2, Some(BackupPhase::Queued));
        queued.velero_queue_position = Some(7);
        index.upsert(queued);
        assert_eq!(index.position(QueueKind::Backup, "queued"), Some(7));
        // A stale queuePosition left on a backup that moved on is ignored.
        let mut started = backup("queued", 2, Some(BackupPhase::ReadyToStart));
        started.velero_queue_position = Some(7);
        index.upsert(started);
        assert_eq!(index.position(QueueKind::Backup, "queued"), Some(1));
        let mut new = backup("new", 3, Some(BackupPhase::New));
        new.velero_queue_position = Some(9);
        index.upsert(new);
        assert_eq!(index.position(QueueKind::Backup, "new"), Some(3));
    }

    #[test]
    fn upsert_is_idempotent_and_drops_stale_versions() {
        let mut index = QueueIndex::new();
        let mut v5 = backup("b", 1, Some(BackupPhase::Completed));
        v5.resource_version = Some(5);
        let mut v3 = backup("b", 1, Some(BackupPhase::InProgress));
        v3.resource_version = Some(3);
        assert_eq!(index.upsert(v5.clone()), UpsertOutcome::Inserted);
        let revision = index.revision();
        assert_eq!(index.upsert(v5.clone()), UpsertOutcome::Unchanged);
        assert_eq!(index.upsert(v3), UpsertOutcome::Stale);
        assert_eq!(
            index.revision(),
            revision,
            "no-ops do not bump the revision"
        );
        assert_eq!(index.position(QueueKind::Backup, "b"), None);
        assert_eq!(index.active_len(QueueKind::Backup), 0);

        // Without versions, the latest delivered state wins.
        let mut unversioned = backup("b", 1, Some(BackupPhase::InProgress));
        unversioned.resource_version = None;
        assert_eq!(index.upsert(unversioned), UpsertOutcome::Updated);
        assert_eq!(index.position(QueueKind::Backup, "b"), Some(1));
        assert!(index.revision() > revision);
    }

    #[test]
    fn remove_and_replace_kind() {
        let mut index = QueueIndex::from_entries([
            backup("a", 1, None),
            backup("b", 2, None),
            restore("r", 1, Some(RestorePhase::InProgress)),
        ]);
        assert!(index.remove(QueueKind::Backup, "a").is_some());
        assert!(index.remove(QueueKind::Backup, "a").is_none());
        assert_eq!(index.position(QueueKind::Backup, "b"), Some(1));

        index.replace_kind(
            QueueKind::Backup,
            [
                backup("c", 0, None),
                backup("b", 2, None),
                // Entries of the other kind are ignored.
                restore("x", 0, None),
            ],
        );
        assert_eq!(index.get(QueueKind::Backup, "a"), None);
        assert_eq!(index.position(QueueKind::Backup, "b"), Some(2));
        assert_eq!(index.position(QueueKind::Restore, "r"), Some(1));
        assert_eq!(index.position(QueueKind::Restore, "x"), None);
        assert!(!index.is_empty());
    }

    #[test]
    fn a_changed_creation_time_reorders() {
        let mut index = QueueIndex::from_entries([backup("a", 1, None), backup("b", 2, None)]);
        index.upsert(backup("a", 3, None));
        assert_eq!(index.position(QueueKind::Backup, "a"), Some(2));
        assert_eq!(index.position(QueueKind::Backup, "b"), Some(1));
        assert_eq!(index.active_len(QueueKind::Backup), 2);
        let failed = Entry {
            phase: VeleroPhase::Backup(Some(BackupPhase::Failed)),
            ..backup("a", 0, None)
        };
        index.upsert(failed);
        assert_eq!(index.active_len(QueueKind::Backup), 1);
        assert_eq!(index.position(QueueKind::Backup, "b"), Some(1));
    }
}
