//! Queue positions on NonAdminBackup/NonAdminRestore status. One coalescing
//! [`PositionWriter`] decides which position each tenant object shows and when; the NAB and NAR
//! reconcilers stay the only writers of those statuses (no competing PUTs, no conflicts) and
//! are woken for exactly the objects whose published position changed.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use tokio::sync::broadcast;
use tokio_stream::wrappers::BroadcastStream;

use super::Context;
use crate::queue::{PositionWriter, QueueIndex, QueueKind, TrackedObject, WriterConfig};

/// How often the writer looks at the queue index (a look costs nothing when it did not change).
pub const TICK: Duration = Duration::from_millis(250);

/// A tenant object (namespace, name) following a Velero Backup or Restore.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Follower {
    pub kind: QueueKind,
    pub namespace: String,
    pub name: String,
}

#[derive(Default)]
struct Links {
    by_object: HashMap<TrackedObject, Follower>,
    by_follower: HashMap<Follower, TrackedObject>,
}

/// The position writer shared by the NAB and NAR reconcilers.
pub struct Positions {
    writer: Mutex<PositionWriter>,
    links: Mutex<Links>,
    wake: broadcast::Sender<Follower>,
}

impl Default for Positions {
    fn default() -> Self {
        Positions::new(WriterConfig::default())
    }
}

impl Positions {
    /// A writer coalescing moves as `config` says.
    pub fn new(config: WriterConfig) -> Self {
        let (wake, _) = broadcast::channel(4096);
        Positions {
            writer: Mutex::new(PositionWriter::new(config)),
            links: Mutex::new(Links::default()),
            wake,
        }
    }

    /// The position `follower`'s status must show for the Velero object `object`: what the
    /// writer last decided, or `live` when it has no decision. Starts tracking the pair from
    /// `status_holds` (what the status shows now), publishing at once when the object enters
    /// or leaves the queue.
    pub fn to_publish(
        &self,
        object: TrackedObject,
        follower: Follower,
        status_holds: Option<u64>,
        live: Option<u64>,
    ) -> Option<u64> {
        let Ok(mut writer) = self.writer.lock() else {
            return live;
        };
        // Entering or leaving the queue is published at once (the reconciler is writing this
        // status now anyway); a move between two numbers waits for the writer's coalescing.
        let first = match (status_holds, live) {
            (Some(_), Some(_)) => status_holds,
            _ => live,
        };
        writer.track(object.clone(), first);
        let decided = writer.published(&object);
        if let Ok(mut links) = self.links.lock() {
            if let Some(previous) = links.by_follower.insert(follower.clone(), object.clone())
                && previous != object
            {
                links.by_object.remove(&previous);
                writer.untrack(&previous);
            }
            links.by_object.insert(object, follower);
        }
        decided.unwrap_or(live)
    }

    /// The position `follower`'s status must show for its Velero object `velero_name`, given
    /// what the status shows now (`status_holds`, 0 meaning none) and whether the Velero object
    /// `finished`: the writer's decision (see [`Positions::to_publish`]); a finished object whose
    /// status shows no position is no longer tracked.
    pub fn for_status(
        &self,
        queue: &std::sync::RwLock<QueueIndex>,
        follower: Follower,
        velero_name: &str,
        status_holds: Option<i64>,
        finished: bool,
    ) -> Option<u64> {
        let status_holds = status_holds
            .and_then(|p| u64::try_from(p).ok())
            .filter(|p| *p > 0);
        if finished && status_holds.is_none() {
            self.forget(&follower);
            return None;
        }
        let live = queue.read().ok()?.position(follower.kind, velero_name);
        self.to_publish(
            TrackedObject::new(follower.kind, velero_name),
            follower,
            status_holds,
            live,
        )
    }

    /// Stops tracking `follower` (it is gone, or its Velero object finished and shows no
    /// position any more).
    pub fn forget(&self, follower: &Follower) {
        let object = self.links.lock().ok().and_then(|mut links| {
            let object = links.by_follower.remove(follower)?;
            links.by_object.remove(&object);
            Some(object)
        });
        if let (Some(object), Ok(mut writer)) = (object, self.writer.lock()) {
            writer.untrack(&object);
        }
    }

    /// Number of tracked tenant objects.
    pub fn tracked_len(&self) -> usize {
        self.writer.lock().map(|w| w.tracked_len()).unwrap_or(0)
    }

    /// Plans the writes due at `now` and wakes their followers; returns how many were woken.
    pub fn tick(&self, index: &QueueIndex, now: Instant) -> usize {
        let plan = match self.writer.lock() {
            Ok(mut writer) => writer.plan(index, now),
            Err(_) => return 0,
        };
        let Ok(links) = self.links.lock() else {
            return 0;
        };
        let mut woken = 0;
        for write in plan.writes {
            if let Some(follower) = links.by_object.get(&write.object) {
                // No receiver (the controllers are not running): the next reconcile publishes
                // the decided value anyway.
                let _ = self.wake.send(follower.clone());
                woken += 1;
            }
        }
        woken
    }

    /// The followers of `kind` whose published position changed, as they change. A receiver
    /// that falls behind skips ahead: the skipped objects show the decided value at their next
    /// reconcile.
    pub fn wakes(&self, kind: QueueKind) -> impl Stream<Item = Follower> + Send + 'static {
        BroadcastStream::new(self.wake.subscribe())
            .filter_map(move |woken| async move { woken.ok().filter(|f| f.kind == kind) })
    }
}

/// Runs the writer until the task is dropped.
pub async fn run(context: Arc<Context>) {
    let mut ticks = tokio::time::interval(TICK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let Ok(index) = context.queue.read() else {
            return;
        };
        context.positions.tick(&index, Instant::now());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::queue::Entry;

    fn follower(name: &str) -> Follower {
        Follower {
            kind: QueueKind::Backup,
            namespace: "team-a".into(),
            name: name.into(),
        }
    }

    fn pending(name: &str, order: i64) -> Entry {
        crate::queue::tests_support::backup(name, order, None)
    }

    #[tokio::test]
    async fn a_decided_position_wakes_its_follower_and_is_what_it_publishes() {
        let positions = Positions::default();
        let mut wakes = Box::pin(positions.wakes(QueueKind::Backup));
        let mut index = QueueIndex::new();
        for (i, name) in ["vb-0", "vb-1", "vb-2"].iter().enumerate() {
            index.upsert(pending(name, i as i64));
        }
        let object = TrackedObject::new(QueueKind::Backup, "vb-2");
        let publish = |holds: Option<u64>, live: Option<u64>| {
            positions.to_publish(object.clone(), follower("nab-2"), holds, live)
        };
        // First sight: entering the queue is published at once, with the live position.
        assert_eq!(publish(None, Some(3)), Some(3));
        let start = Instant::now();
        assert_eq!(positions.tick(&index, start), 0, "already published");
        // The head finishes: the writer decides the move and wakes the follower.
        index.remove(QueueKind::Backup, "vb-0");
        assert_eq!(positions.tick(&index, start), 1);
        assert_eq!(wakes.next().await.unwrap(), follower("nab-2"));
        assert_eq!(publish(Some(3), Some(2)), Some(2));
        // The next one finishes at once: moves of one object are at most one per interval,
        // and until the writer decides, the status keeps what was published.
        index.remove(QueueKind::Backup, "vb-1");
        assert_eq!(positions.tick(&index, start), 0, "moved too recently");
        assert_eq!(publish(Some(2), Some(1)), Some(2));
        assert_eq!(positions.tick(&index, start + Duration::from_secs(3)), 1);
        assert_eq!(wakes.next().await.unwrap(), follower("nab-2"));
        assert_eq!(publish(Some(2), Some(1)), Some(1));
    }

    #[test]
    fn finished_objects_showing_no_position_are_not_tracked() {
        let positions = Positions::default();
        let queue = std::sync::RwLock::new(QueueIndex::from_entries([pending("vb-1", 1)]));
        let f = follower("nab-1");
        assert_eq!(
            positions.for_status(&queue, f.clone(), "vb-1", Some(0), false),
            Some(1),
            "a queued object enters at its live position"
        );
        assert_eq!(positions.tracked_len(), 1);
        assert_eq!(
            positions.for_status(&queue, f.clone(), "vb-1", None, true),
            None
        );
        assert_eq!(
            positions.tracked_len(),
            0,
            "finished and showing none: forgotten"
        );
        assert_eq!(
            positions.for_status(&queue, f, "vb-1", Some(-3), true),
            None,
            "nonsense in the status counts as none"
        );
    }

    #[test]
    fn forgetting_a_follower_stops_its_tracking() {
        let positions = Positions::default();
        let object = TrackedObject::new(QueueKind::Backup, "vb-1");
        positions.to_publish(object, follower("nab-1"), None, None);
        assert_eq!(positions.tracked_len(), 1);
        positions.forget(&follower("nab-1"));
        assert_eq!(positions.tracked_len(), 0);
        positions.forget(&follower("nab-1"));
    }

    #[test]
    fn a_follower_that_changes_object_drops_the_old_one() {
        let positions = Positions::default();
        positions.to_publish(
            TrackedObject::new(QueueKind::Backup, "old"),
            follower("nab"),
            None,
            None,
        );
        positions.to_publish(
            TrackedObject::new(QueueKind::Backup, "new"),
            follower("nab"),
            None,
            None,
        );
        assert_eq!(positions.tracked_len(), 1);
    }

    #[test]
    fn a_thousand_queued_followers_are_not_all_woken_by_one_completion() {
        let positions = Positions::new(WriterConfig {
            min_interval: Duration::from_secs(2),
            max_moves_per_tick: 50,
        });
        let mut index = QueueIndex::new();
        let start = Instant::now();
        for i in 0..1000 {
            let name = format!("vb-{i:04}");
            index.upsert(pending(&name, i));
            positions.to_publish(
                TrackedObject::new(QueueKind::Backup, name),
                follower(&format!("nab-{i:04}")),
                Some(i as u64 + 1),
                Some(i as u64 + 1),
            );
        }
        assert_eq!(positions.tick(&index, start), 0, "all already published");
        index.remove(QueueKind::Backup, "vb-0000");
        let woken = positions.tick(&index, start + Duration::from_secs(3));
        // The finished one leaves (1 transition) and at most the per-tick budget of moves.
        assert!(woken <= 51, "woke {woken}");
    }
}
