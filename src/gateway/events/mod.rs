//! Live changes: every change the watch caches see becomes a [`ChangeEvent`] in a bounded
//! in-memory log with a broadcast to live subscribers. Event ids are `<epoch>-<sequence>`,
//! the epoch random per process, so a client resuming with `Last-Event-ID` from before a
//! restart (or from beyond the log's memory) is told to re-list instead of silently missing
//! changes. Served as Server-Sent Events by [`sse`].

pub mod sse;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use tokio::sync::broadcast;

use crate::gateway::resources::TenantResource;

/// What happened to an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum ChangeAction {
    /// It appeared.
    Added,
    /// It changed.
    Modified,
    /// It is gone.
    Deleted,
}

/// One change of one tenant object.
#[derive(Clone, Debug, PartialEq)]
pub struct ChangeEvent {
    /// Position in the log.
    pub sequence: u64,
    /// Namespace of the object.
    pub namespace: String,
    /// Its resource.
    pub resource: TenantResource,
    /// What happened.
    pub action: ChangeAction,
    /// Its name.
    pub name: String,
    /// The object after the change (before it, for a deletion).
    pub object: Arc<serde_json::Value>,
}

/// Where a resuming client stands.
#[derive(Debug, PartialEq)]
pub enum Resume {
    /// Events after the client's last one (possibly none).
    Events(Vec<Arc<ChangeEvent>>),
    /// The log no longer covers the client's position: re-list, then follow.
    Reset,
}

/// The bounded log and the broadcast of new events.
pub struct EventLog {
    epoch: String,
    inner: Mutex<LogInner>,
    sender: broadcast::Sender<Arc<ChangeEvent>>,
}

struct LogInner {
    events: VecDeque<Arc<ChangeEvent>>,
    capacity: usize,
    next: u64,
}

impl std::fmt::Debug for EventLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventLog")
            .field("epoch", &self.epoch)
            .finish_non_exhaustive()
    }
}

impl EventLog {
    /// A log remembering the last `capacity` events.
    pub fn new(capacity: usize) -> Self {
        let (sender, _) = broadcast::channel(4096);
        EventLog {
            epoch: format!("{:08x}", rand::random::<u32>()),
            inner: Mutex::new(LogInner {
                events: VecDeque::with_capacity(capacity.min(65_536)),
                capacity: capacity.max(1),
                next: 1,
            }),
            sender,
        }
    }

    /// The id of `event` as sent to clients.
    pub fn event_id(&self, event: &ChangeEvent) -> String {
        format!("{}-{}", self.epoch, event.sequence)
    }

    /// The id of the newest event (`<epoch>-0` before the first): where a client that has
    /// seen everything up to now resumes from.
    pub fn head_id(&self) -> String {
        let next = self.inner.lock().map(|inner| inner.next).unwrap_or(1);
        format!("{}-{}", self.epoch, next - 1)
    }

    /// Appends a change and wakes subscribers.
    pub fn publish(
        &self,
        namespace: &str,
        resource: TenantResource,
        action: ChangeAction,
        name: &str,
        object: Arc<serde_json::Value>,
    ) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        let event = Arc::new(ChangeEvent {
            sequence: inner.next,
            namespace: namespace.to_string(),
            resource,
            action,
            name: name.to_string(),
            object,
        });
        inner.next += 1;
        if inner.events.len() >= inner.capacity {
            inner.events.pop_front();
        }
        inner.events.push_back(event.clone());
        // No subscriber is not an error.
        let _ = self.sender.send(event);
    }

    /// Subscribes to new events and, when `last_event_id` is given, returns what the client
    /// missed since it — atomically, so no event falls between replay and live stream.
    pub fn subscribe(
        &self,
        last_event_id: Option<&str>,
    ) -> (Resume, broadcast::Receiver<Arc<ChangeEvent>>) {
        let Ok(inner) = self.inner.lock() else {
            return (Resume::Reset, self.sender.subscribe());
        };
        let receiver = self.sender.subscribe();
        let Some(last) = last_event_id else {
            return (Resume::Events(Vec::new()), receiver);
        };
        let sequence = last
            .split_once('-')
            .filter(|(epoch, _)| *epoch == self.epoch)
            .and_then(|(_, sequence)| sequence.parse::<u64>().ok());
        let Some(sequence) = sequence else {
            return (Resume::Reset, receiver);
        };
        if sequence >= inner.next {
            return (Resume::Reset, receiver);
        }
        let oldest = inner.events.front().map_or(inner.next, |e| e.sequence);
        if sequence + 1 < oldest {
            return (Resume::Reset, receiver);
        }
        let missed = inner
            .events
            .iter()
            .filter(|event| event.sequence > sequence)
            .cloned()
            .collect();
        (Resume::Events(missed), receiver)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn publish(log: &EventLog, name: &str) {
        log.publish(
            "team-a",
            TenantResource::Backups,
            ChangeAction::Added,
            name,
            Arc::new(serde_json::json!({"metadata": {"name": name}})),
        );
    }

    #[test]
    fn resume_returns_exactly_the_missed_events() {
        let log = EventLog::new(10);
        publish(&log, "a");
        publish(&log, "b");
        publish(&log, "c");
        let first_id = format!("{}-1", log.epoch);
        let (resume, _rx) = log.subscribe(Some(&first_id));
        let Resume::Events(missed) = resume else {
            panic!("expected events")
        };
        let names: Vec<_> = missed.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["b", "c"]);
    }

    #[test]
    fn stale_foreign_or_future_ids_reset() {
        let log = EventLog::new(2);
        for name in ["a", "b", "c", "d"] {
            publish(&log, name);
        }
        // Event 1 fell out of the log (it holds 3 and 4).
        assert_eq!(
            log.subscribe(Some(&format!("{}-1", log.epoch))).0,
            Resume::Reset
        );
        assert_eq!(log.subscribe(Some("deadbeef-3")).0, Resume::Reset);
        assert_eq!(
            log.subscribe(Some(&format!("{}-99", log.epoch))).0,
            Resume::Reset
        );
        assert_eq!(log.subscribe(Some("garbage")).0, Resume::Reset);
        // Event 2 is just before the oldest held: nothing is missing.
        let Resume::Events(missed) = log.subscribe(Some(&format!("{}-2", log.epoch))).0 else {
            panic!()
        };
        assert_eq!(missed.len(), 2);
    }

    #[tokio::test]
    async fn live_events_reach_subscribers() {
        let log = EventLog::new(10);
        let (_, mut rx) = log.subscribe(None);
        publish(&log, "x");
        let event = rx.recv().await.unwrap();
        assert_eq!(event.name, "x");
        assert_eq!(log.event_id(&event), format!("{}-1", log.epoch));
    }
}
