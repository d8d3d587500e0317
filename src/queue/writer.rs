//! Deciding which tenant objects get their `queueInfo.estimatedQueuePosition` written, and when
//! (see [`PositionWriter`]).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::entry::QueueKind;
use super::index::QueueIndex;

/// How positions are coalesced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriterConfig {
    /// Minimum time between two writes of a changed position to the same object.
    pub min_interval: Duration,
    /// Maximum number of position moves published per tick (0 is treated as 1).
    pub max_moves_per_tick: usize,
}

impl Default for WriterConfig {
    fn default() -> Self {
        Self {
            min_interval: Duration::from_secs(2),
            max_moves_per_tick: 50,
        }
    }
}

/// A tenant object, identified by the Velero Backup or Restore it follows.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TrackedObject {
    /// Kind of the Velero object.
    pub kind: QueueKind,
    /// Name of the Velero object (the NAB's / NAR's NACUUID).
    pub name: String,
}

impl TrackedObject {
    /// The object following Velero `kind`/`name`.
    pub fn new(kind: QueueKind, name: impl Into<String>) -> Self {
        Self {
            kind,
            name: name.into(),
        }
    }
}

/// Why a position is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WriteReason {
    /// The object got a position (it had none).
    Entered,
    /// The object lost its position (finished, or its Velero object is gone).
    Left,
    /// The position changed from one number to another.
    Moved,
    /// What the status holds is unknown (a write failed); the current value is written.
    Resync,
}

/// One status write to perform: `position` `None` is written as "no position" (0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PositionWrite {
    /// The object to write.
    pub object: TrackedObject,
    /// The position to publish.
    pub position: Option<u64>,
    /// Why.
    pub reason: WriteReason,
}

/// The writes due now, and when to look again.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WritePlan {
    /// Writes to perform now, transitions first, then moves least recently written first.
    pub writes: Vec<PositionWrite>,
    /// The earliest time a deferred move becomes due (equal to `now` when moves were cut by
    /// the per-tick budget); `None` when nothing is deferred and only index changes or newly
    /// tracked objects can produce writes.
    pub next_check: Option<Instant>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Published {
    /// Unknown (a write failed): the next plan writes the current value.
    Unknown,
    /// The status holds this value.
    Value(Option<u64>),
}

#[derive(Clone, Copy, Debug)]
struct Record {
    published: Published,
    /// When this writer last planned a write for the object; `None` when never.
    written_at: Option<Instant>,
}

/// Decides which tenant objects get their `queueInfo.estimatedQueuePosition` written, and
/// when.
///
/// When the backup at the head of a queue of N finishes, N−1 positions change at once.
/// Writing them all would be N−1 API writes for one event — a write storm with thousands of
/// queued NABs, most of which is wasted because the next completion changes them again. The
/// writer therefore splits changes in two:
///
/// - **transitions to or from "no position"** (an object enters the queue, finishes, or its
///   status holds an unknown value) are published at the next tick, unthrottled: each is caused
///   by a change of that very object, which the reconciler is writing the status of anyway, so
///   their number follows the number of objects that changed, never the queue length;
/// - **moves** (a position changing from one number to another) are published at most once per
///   `min_interval` per object, and at most `max_moves_per_tick` per tick, least recently
///   written first, so every object is eventually refreshed (no starvation) and the write rate
///   is bounded whatever the queue does.
///
/// Pure: time comes in as `now` arguments, the positions from a [`QueueIndex`]; the caller
/// performs the writes and reports failures with [`PositionWriter::write_failed`].
///
/// Cost of [`PositionWriter::plan`]: nothing when neither the index nor the writer's own state
/// changed and no deferred write is due; otherwise one index query per tracked object —
/// O(log n) for an active one, a single hash lookup for a finished one — plus sorting the
/// eligible moves.
#[derive(Debug, Clone)]
pub struct PositionWriter {
    config: WriterConfig,
    /// What each tracked object's status holds.
    tracked: HashMap<TrackedObject, Record>,
    /// Index revision at the last full scan.
    scanned_revision: Option<u64>,
    /// Set when tracked state changed since the last scan.
    dirty: bool,
    /// Earliest time a deferred move becomes due.
    next_check: Option<Instant>,
}

impl PositionWriter {
    /// A writer tracking nothing.
    pub fn new(config: WriterConfig) -> Self {
        Self {
            config,
            tracked: HashMap::new(),
            scanned_revision: None,
            dirty: false,
            next_check: None,
        }
    }

    /// The configuration in use.
    pub fn config(&self) -> WriterConfig {
        self.config
    }

    /// Starts tracking an object whose status currently holds `published` (`None` for 0 or
    /// absent), as read by the reconciler when it first sees the object. False, and no change,
    /// when the object is already tracked: the writer's own record is then more recent than
    /// a possibly stale read.
    pub fn track(&mut self, object: TrackedObject, published: Option<u64>) -> bool {
        if self.tracked.contains_key(&object) {
            return false;
        }
        self.tracked.insert(
            object,
            Record {
                published: Published::Value(published),
                written_at: None,
            },
        );
        self.dirty = true;
        true
    }

    /// Stops tracking an object (the tenant object is gone). True when it was tracked.
    pub fn untrack(&mut self, object: &TrackedObject) -> bool {
        self.tracked.remove(object).is_some()
    }

    /// Reports that a planned write did not happen: the object's status is now unknown and
    /// the next plan writes its current position regardless of the interval.
    pub fn write_failed(&mut self, object: &TrackedObject) {
        if let Some(record) = self.tracked.get_mut(object) {
            record.published = Published::Unknown;
            self.dirty = true;
        }
    }

    /// The position this writer decided `object`'s status shows: `Some(None)` for "no
    /// position", `None` when the object is untracked or its status is unknown (a write
    /// failed) — then the caller publishes the current position.
    pub fn published(&self, object: &TrackedObject) -> Option<Option<u64>> {
        match self.tracked.get(object)?.published {
            Published::Value(value) => Some(value),
            Published::Unknown => None,
        }
    }

    /// Number of tracked objects.
    pub fn tracked_len(&self) -> usize {
        self.tracked.len()
    }

    /// Decides the writes due at `now` against the positions in `index`, and records them as
    /// published (report failures with [`PositionWriter::write_failed`]).
    pub fn plan(&mut self, index: &QueueIndex, now: Instant) -> WritePlan {
        let unchanged = !self.dirty && self.scanned_revision == Some(index.revision());
        if unchanged && self.next_check.is_none_or(|due| now < due) {
            return WritePlan {
                writes: Vec::new(),
                next_check: self.next_check,
            };
        }

        let mut transitions: Vec<PositionWrite> = Vec::new();
        let mut moves: Vec<(Option<Instant>, u64, &TrackedObject)> = Vec::new();
        let mut next_check: Option<Instant> = None;
        for (object, record) in &self.tracked {
            let current = index.position(object.kind, &object.name);
            let reason = match (record.published, current) {
                (Published::Value(published), current) if published == current => continue,
                (Published::Unknown, _) => WriteReason::Resync,
                (Published::Value(None), Some(_)) => WriteReason::Entered,
                (Published::Value(Some(_)), None) => WriteReason::Left,
                (Published::Value(Some(_)), Some(position)) => {
                    let due = record
                        .written_at
                        .map(|written| written + self.config.min_interval);
                    match due {
                        Some(due) if due > now => {
                            next_check = Some(next_check.map_or(due, |check| check.min(due)));
                        }
                        _ => moves.push((record.written_at, position, object)),
                    }
                    continue;
                }
                // Equal values were skipped above.
                (Published::Value(None), None) => continue,
            };
            transitions.push(PositionWrite {
                object: object.clone(),
                position: current,
                reason,
            });
        }

        // Least recently written first (never written before all), then nearest the head.
        moves.sort_unstable();
        let budget = self.config.max_moves_per_tick.max(1);
        if moves.len() > budget {
            next_check = Some(now);
        }
        transitions.sort_unstable_by(|a, b| a.object.cmp(&b.object));
        let mut writes = transitions;
        writes.extend(
            moves
                .into_iter()
                .take(budget)
                .map(|(_, position, object)| PositionWrite {
                    object: object.clone(),
                    position: Some(position),
                    reason: WriteReason::Moved,
                }),
        );

        for write in &writes {
            if let Some(record) = self.tracked.get_mut(&write.object) {
                record.published = Published::Value(write.position);
                record.written_at = Some(now);
            }
        }
        self.scanned_revision = Some(index.revision());
        self.dirty = false;
        self.next_check = next_check;
        WritePlan { writes, next_check }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::api::velero::BackupPhase;
    use crate::queue::tests_support::{SplitMix64, backup};

    fn object(name: &str) -> TrackedObject {
        TrackedObject::new(QueueKind::Backup, name)
    }

    fn config(seconds: u64, budget: usize) -> WriterConfig {
        WriterConfig {
            min_interval: Duration::from_secs(seconds),
            max_moves_per_tick: budget,
        }
    }

    fn summary(plan: &WritePlan) -> Vec<(String, Option<u64>, WriteReason)> {
        plan.writes
            .iter()
            .map(|write| (write.object.name.clone(), write.position, write.reason))
            .collect()
    }

    /// A running head and `queued` pending backups behind it, all tracked with their current
    /// positions already published at `start`.
    fn queue_of(queued: usize, writer: &mut PositionWriter, start: Instant) -> QueueIndex {
        let mut index = QueueIndex::new();
        index.upsert(backup("head", 0, Some(BackupPhase::InProgress)));
        writer.track(object("head"), None);
        for i in 0..queued {
            let name = format!("q{i:03}");
            index.upsert(backup(&name, 1 + i as i64, None));
            writer.track(object(&name), None);
        }
        let plan = writer.plan(&index, start);
        assert_eq!(plan.writes.len(), queued + 1);
        assert!(
            plan.writes
                .iter()
                .all(|write| write.reason == WriteReason::Entered)
        );
        index
    }

    #[test]
    fn entering_the_queue_is_published_at_once() {
        let mut writer = PositionWriter::new(WriterConfig::default());
        let start = Instant::now();
        let index = QueueIndex::from_entries([backup("a", 1, None), backup("b", 2, None)]);
        assert!(writer.track(object("a"), None));
        assert!(!writer.track(object("a"), Some(9)), "already tracked");
        writer.track(object("b"), Some(2));
        let plan = writer.plan(&index, start);
        assert_eq!(
            summary(&plan),
            vec![("a".to_owned(), Some(1), WriteReason::Entered)]
        );
        assert_eq!(plan.next_check, None);
        // Nothing changed: nothing to do.
        assert_eq!(writer.plan(&index, start), WritePlan::default());
    }

    #[test]
    fn published_follows_plans_and_failures() {
        let mut writer = PositionWriter::new(WriterConfig::default());
        let index = QueueIndex::from_entries([backup("a", 1, None)]);
        assert_eq!(writer.published(&object("a")), None, "untracked");
        writer.track(object("a"), Some(7));
        assert_eq!(writer.published(&object("a")), Some(Some(7)));
        writer.plan(&index, Instant::now());
        assert_eq!(writer.published(&object("a")), Some(Some(1)));
        writer.write_failed(&object("a"));
        assert_eq!(
            writer.published(&object("a")),
            None,
            "unknown after a failure"
        );
    }

    #[test]
    fn one_completion_does_not_write_to_the_whole_queue() {
        let mut writer = PositionWriter::new(config(2, 3));
        let start = Instant::now();
        let mut index = queue_of(10, &mut writer, start);

        index.upsert(backup("head", 0, Some(BackupPhase::Completed)));
        // Within the interval of the initial writes: only the transition goes out.
        let soon = start + Duration::from_millis(500);
        let plan = writer.plan(&index, soon);
        assert_eq!(
            summary(&plan),
            vec![("head".to_owned(), None, WriteReason::Left)]
        );
        assert_eq!(plan.next_check, Some(start + Duration::from_secs(2)));

        // Once due, moves go out in batches of three, nearest the head first.
        let due = start + Duration::from_secs(2);
        let plan = writer.plan(&index, due);
        assert_eq!(
            summary(&plan),
            vec![
                ("q000".to_owned(), Some(1), WriteReason::Moved),
                ("q001".to_owned(), Some(2), WriteReason::Moved),
                ("q002".to_owned(), Some(3), WriteReason::Moved),
            ]
        );
        assert_eq!(plan.next_check, Some(due), "more are waiting");
        let mut written = 3;
        let mut tick = due;
        while written < 10 {
            tick += Duration::from_millis(100);
            let plan = writer.plan(&index, tick);
            assert!(plan.writes.len() <= 3);
            assert!(!plan.writes.is_empty());
            written += plan.writes.len();
        }
        assert_eq!(written, 10);
        assert_eq!(writer.plan(&index, tick).writes, Vec::new());
    }

    #[test]
    fn moves_within_the_interval_coalesce_to_the_latest_value() {
        let mut writer = PositionWriter::new(config(2, 10));
        let start = Instant::now();
        let mut index = queue_of(3, &mut writer, start);
        // q002 is at 4; three completions in quick succession move it to 1.
        for (step, name) in ["head", "q000", "q001"].into_iter().enumerate() {
            let second = if name == "head" { 0 } else { step as i64 };
            index.upsert(backup(name, second, Some(BackupPhase::Completed)));
            let at = start + Duration::from_millis(300 * (step as u64 + 1));
            let plan = writer.plan(&index, at);
            assert!(
                plan.writes
                    .iter()
                    .all(|write| write.reason == WriteReason::Left),
                "{plan:?}"
            );
        }
        let plan = writer.plan(&index, start + Duration::from_secs(2));
        assert_eq!(
            summary(&plan),
            vec![("q002".to_owned(), Some(1), WriteReason::Moved)]
        );
    }

    #[test]
    fn least_recently_written_goes_first() {
        let mut writer = PositionWriter::new(config(1, 1));
        let start = Instant::now();
        let mut index = queue_of(3, &mut writer, start);
        index.upsert(backup("head", 0, Some(BackupPhase::Completed)));
        let t1 = start + Duration::from_secs(1);
        writer.plan(&index, t1); // Left for head, Moved for q000 (budget 1)
        index.upsert(backup("q000", 1, Some(BackupPhase::InProgress)));
        index.upsert(backup("late", 9, None));
        writer.track(object("late"), None);
        let t2 = start + Duration::from_secs(2);
        let plan = writer.plan(&index, t2);
        // q000 stays at 1 (now running); late entered behind everyone; q001 and q002 are both
        // due (last written at start) and q001, nearer the head, takes the one slot.
        assert_eq!(
            summary(&plan),
            vec![
                ("late".to_owned(), Some(4), WriteReason::Entered),
                ("q001".to_owned(), Some(2), WriteReason::Moved),
            ]
        );
    }

    #[test]
    fn failed_writes_and_vanished_objects_are_resynchronised() {
        let mut writer = PositionWriter::new(WriterConfig::default());
        let start = Instant::now();
        let mut index = queue_of(1, &mut writer, start);
        writer.write_failed(&object("q000"));
        let plan = writer.plan(&index, start);
        assert_eq!(
            summary(&plan),
            vec![("q000".to_owned(), Some(2), WriteReason::Resync)]
        );
        // The Velero backup disappears: no position, at once.
        index.remove(QueueKind::Backup, "q000");
        let plan = writer.plan(&index, start);
        assert_eq!(
            summary(&plan),
            vec![("q000".to_owned(), None, WriteReason::Left)]
        );
    }

    #[test]
    fn finished_objects_are_rewritten_only_after_a_failed_write() {
        let mut writer = PositionWriter::new(WriterConfig::default());
        let start = Instant::now();
        let mut index = queue_of(0, &mut writer, start);
        index.upsert(backup("head", 0, Some(BackupPhase::Completed)));
        let plan = writer.plan(&index, start);
        assert_eq!(
            summary(&plan),
            vec![("head".to_owned(), None, WriteReason::Left)]
        );
        index.upsert(backup("other", 1, None));
        assert_eq!(writer.plan(&index, start).writes, Vec::new());
        writer.write_failed(&object("head"));
        let plan = writer.plan(&index, start);
        assert_eq!(
            summary(&plan),
            vec![("head".to_owned(), None, WriteReason::Resync)]
        );
        assert_eq!(writer.tracked_len(), 1);
        assert!(writer.untrack(&object("head")));
        assert_eq!(writer.tracked_len(), 0);
    }

    /// Random queues and ticks: moves stay within the budget and the interval, transitions go
    /// out on the tick that sees them, and once the index stops changing every object
    /// converges to its current position.
    #[test]
    fn random_workloads_respect_the_bounds_and_converge() {
        let interval = Duration::from_secs(2);
        let budget = 4;
        let mut random = SplitMix64::new(0xc0a1e5ce);
        let mut writer = PositionWriter::new(config(2, budget));
        let mut index = QueueIndex::new();
        let mut published: HashMap<String, Option<u64>> = HashMap::new();
        let mut last_move: HashMap<String, Instant> = HashMap::new();
        let start = Instant::now();
        let mut now = start;
        let (mut total_moves, mut total_transitions) = (0, 0);
        let phases = [
            None,
            Some(BackupPhase::Queued),
            Some(BackupPhase::InProgress),
            Some(BackupPhase::Completed),
            Some(BackupPhase::FailedValidation),
        ];
        for round in 0..3_000 {
            let quiet = round >= 2_500;
            if !quiet {
                for _ in 0..random.below(4) {
                    let name = format!("b{:02}", random.below(60));
                    let phase = phases[random.below(phases.len() as u64) as usize].clone();
                    index.upsert(backup(&name, random.below(20) as i64, phase));
                    if writer.track(object(&name), None) {
                        published.insert(name, None);
                    }
                }
            }
            now += Duration::from_millis(250);
            let plan = writer.plan(&index, now);
            let moves = plan
                .writes
                .iter()
                .filter(|write| write.reason == WriteReason::Moved)
                .count();
            assert!(moves <= budget, "round {round}: {moves} moves");
            total_moves += moves;
            total_transitions += plan.writes.len() - moves;
            for write in &plan.writes {
                let name = &write.object.name;
                assert_eq!(write.position, index.position(QueueKind::Backup, name));
                if write.reason == WriteReason::Moved {
                    if let Some(previous) = last_move.get(name) {
                        assert!(now - *previous >= interval, "{name} moved twice too soon");
                    }
                    last_move.insert(name.clone(), now);
                } else {
                    // Transitions reset the interval for moves too.
                    last_move.insert(name.clone(), now);
                }
                published.insert(name.clone(), write.position);
            }
            // Every transition visible now was published by this tick.
            for (name, value) in &published {
                let current = index.position(QueueKind::Backup, name);
                assert_eq!(
                    value.is_some(),
                    current.is_some(),
                    "round {round}: {name} {value:?} vs {current:?}"
                );
            }
        }
        for (name, value) in &published {
            assert_eq!(*value, index.position(QueueKind::Backup, name), "{name}");
        }
        // The workload really exercised both paths.
        assert!(total_moves > 500, "{total_moves} moves");
        assert!(total_transitions > 500, "{total_transitions} transitions");
    }
}
