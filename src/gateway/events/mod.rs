//! Live changes: every change the watch caches see becomes a [`ChangeEvent`] in a bounded
//! in-memory log with a broadcast to live subscribers; [`follow`] turns the log into one
//! caller's stream (the one filter behind Server-Sent Events, [`sse`], and GraphQL
//! subscriptions).
//!
//! Event ids are opaque: each is the event's position in the log sealed under a random
//! per-process key ([`Sealer`]), so a stream's ids say nothing of the changes it does not show
//! (the position of the next event of one's own namespace, or of "now", reveals no count of
//! other tenants' changes), cannot be forged, and a client resuming with `Last-Event-ID` from
//! before a restart is told to re-list instead of silently missing changes. Whether a resume
//! is still possible depends only on the stream's own namespaces: the log remembers, per
//! namespace, the newest change it has had to forget (when one of a stream's own changes is
//! forgotten still depends on the log's capacity, which all namespaces share).

pub mod follow;
pub mod slots;
pub mod sse;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use tokio::sync::broadcast;

use crate::gateway::auth::{Authorized, Sealer};
use crate::gateway::resources::TenantResource;

/// What one stream may show: resources per namespace, each admitted from a `watch` grant
/// ([`Authorized`]); a scope cannot name anything its caller was not allowed to watch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamScope {
    grants: BTreeMap<String, Vec<TenantResource>>,
}

impl StreamScope {
    /// An empty scope (shows nothing).
    pub fn new() -> Self {
        StreamScope::default()
    }

    /// Adds what `grant` allows when it is a `watch` grant on a tenant resource; returns
    /// whether it was admitted.
    pub fn admit(&mut self, grant: &Authorized) -> bool {
        if grant.verb() != "watch" {
            return false;
        }
        let Some(resource) = TenantResource::ALL
            .into_iter()
            .find(|r| r.plural() == grant.resource())
        else {
            return false;
        };
        let resources = self
            .grants
            .entry(grant.namespace().to_string())
            .or_default();
        if !resources.contains(&resource) {
            resources.push(resource);
        }
        true
    }

    /// Whether `event` is one this scope shows.
    pub fn shows(&self, event: &ChangeEvent) -> bool {
        self.grants
            .get(&event.namespace)
            .is_some_and(|resources| resources.contains(&event.resource))
    }

    /// The namespaces covered, in name order.
    pub fn namespaces(&self) -> impl Iterator<Item = &String> {
        self.grants.keys()
    }

    /// Each namespace with the resources watched there.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Vec<TenantResource>)> {
        self.grants.iter()
    }

    /// Whether it shows nothing.
    pub fn is_empty(&self) -> bool {
        self.grants.is_empty()
    }

    /// Whether it covers `namespace`.
    pub fn covers_namespace(&self, namespace: &str) -> bool {
        self.grants.contains_key(namespace)
    }
}

/// Purpose of sealed event ids.
const EVENT_ID: &str = "event-id";

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

/// The data of an `ADDED`, `MODIFIED` or `DELETED` frame of an event stream.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct StreamChange<'a> {
    /// Namespace of the object.
    pub namespace: &'a str,
    /// Its resource.
    pub resource: TenantResource,
    /// Its name.
    pub name: &'a str,
    /// The object after the change (before it, for a deletion), as REST presents it.
    #[schema(value_type = Object)]
    pub object: &'a serde_json::Value,
}

/// The data of an event stream's `ready` frame, whose id marks "now".
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct StreamReady<'a> {
    /// The namespaces the stream covers.
    pub namespaces: &'a [String],
}

/// The data of a `reset` frame (re-list, then follow) and of the frame ending a stream
/// (`forbidden`, `unauthenticated`, `unavailable`, `shutdown`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StreamNotice<'a> {
    /// Why, in a sentence.
    pub reason: &'a str,
    /// `unavailable` and `shutdown`: seconds to wait before reconnecting (also the frame's
    /// `retry`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub retry_after_seconds: Option<u64>,
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
    /// The event's JSON as streams send it, made once for all of them ([`ChangeEvent::json`]).
    pub rendered: RenderedOnce,
}

/// The event's forms for the streams, each computed once on first use and shared by every
/// holder of the event; not part of the event's identity (equality ignores it).
#[derive(Clone, Debug, Default)]
pub struct RenderedOnce {
    /// SSE's JSON text ([`ChangeEvent::json`]).
    json: std::sync::OnceLock<Arc<str>>,
    /// The object as a GraphQL value ([`ChangeEvent::graphql_object`]).
    graphql_object: std::sync::OnceLock<Arc<async_graphql::Value>>,
}

impl PartialEq for RenderedOnce {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl ChangeEvent {
    /// `{"namespace", "resource", "name", "object"}` as JSON text: serialized on the first
    /// call, the same text afterwards. A change fans out to every stream following its
    /// namespace; serializing the object once instead of once per stream is most of a
    /// delivery's cost.
    pub fn json(&self) -> Arc<str> {
        self.rendered
            .json
            .get_or_init(|| {
                let data = StreamChange {
                    namespace: &self.namespace,
                    resource: self.resource,
                    name: &self.name,
                    object: &self.object,
                };
                serde_json::to_string(&data)
                    .unwrap_or_else(|_| "{}".to_string())
                    .into()
            })
            .clone()
    }

    /// The object as a GraphQL value, converted on the first call and shared afterwards, for
    /// the same reason as [`ChangeEvent::json`]: every subscription following the namespace
    /// delivers it.
    pub fn graphql_object(&self) -> Arc<async_graphql::Value> {
        self.rendered
            .graphql_object
            .get_or_init(|| Arc::new(async_graphql::to_value(&*self.object).unwrap_or_default()))
            .clone()
    }
}

/// Where a resuming client stands.
#[derive(Debug, PartialEq)]
pub enum Resume {
    /// The stream's events after the client's last one (possibly none).
    Events(Vec<Arc<ChangeEvent>>),
    /// The log no longer covers the client's position: re-list, then follow.
    Reset,
}

/// The bounded log and the broadcast of new events.
pub struct EventLog {
    sealer: Sealer,
    inner: Mutex<LogInner>,
    sender: broadcast::Sender<Arc<ChangeEvent>>,
}

struct LogInner {
    events: VecDeque<Arc<ChangeEvent>>,
    capacity: usize,
    next: u64,
    /// Per namespace, the newest sequence the log has forgotten.
    forgotten: HashMap<String, u64>,
}

impl std::fmt::Debug for EventLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventLog").finish_non_exhaustive()
    }
}

impl EventLog {
    /// A log remembering the last `capacity` events.
    pub fn new(capacity: usize) -> Self {
        let (sender, _) = broadcast::channel(4096);
        EventLog {
            sealer: Sealer::random(),
            inner: Mutex::new(LogInner {
                events: VecDeque::with_capacity(capacity.min(65_536)),
                capacity: capacity.max(1),
                next: 1,
                forgotten: HashMap::new(),
            }),
            sender,
        }
    }

    fn seal(&self, sequence: u64) -> String {
        self.sealer.seal(EVENT_ID, &sequence.to_be_bytes())
    }

    /// The log position an id stands for, when this process issued it.
    fn position_of(&self, id: &str) -> Option<u64> {
        let bytes: [u8; 8] = self.sealer.open(EVENT_ID, id)?.try_into().ok()?;
        Some(u64::from_be_bytes(bytes))
    }

    /// The id of `event` as sent to clients (opaque; a fresh one each time).
    pub fn event_id(&self, event: &ChangeEvent) -> String {
        self.seal(event.sequence)
    }

    /// The id of "now": where a client that has seen everything up to now resumes from.
    pub fn head_id(&self) -> String {
        let next = self.inner.lock().map(|inner| inner.next).unwrap_or(1);
        self.seal(next - 1)
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
            rendered: RenderedOnce::default(),
        });
        inner.next += 1;
        if inner.events.len() >= inner.capacity
            && let Some(forgotten) = inner.events.pop_front()
        {
            inner
                .forgotten
                .insert(forgotten.namespace.clone(), forgotten.sequence);
        }
        inner.events.push_back(event.clone());
        // No subscriber is not an error.
        let _ = self.sender.send(event);
    }

    /// Subscribes to every new event, for the gateway's own waits; nothing is replayed (a
    /// replay is always of one stream's scope: [`EventLog::resume`]).
    pub fn subscribe(
        &self,
        last_event_id: Option<&str>,
    ) -> (Resume, broadcast::Receiver<Arc<ChangeEvent>>) {
        let (resume, receiver, _) = self.resume(last_event_id, &StreamScope::new());
        (resume, receiver)
    }

    /// Subscribes to new events and, when `last_event_id` is given, returns the events of
    /// `scope` the client missed since it — atomically, so no event falls between replay and
    /// live stream — with the id of "now" (the newest event before the live stream). A resume
    /// is refused ([`Resume::Reset`]) only when the log has forgotten an event of `scope`'s
    /// namespaces after the client's position (or the id is not one of this process's).
    pub fn resume(
        &self,
        last_event_id: Option<&str>,
        scope: &StreamScope,
    ) -> (Resume, broadcast::Receiver<Arc<ChangeEvent>>, String) {
        let Ok(inner) = self.inner.lock() else {
            return (Resume::Reset, self.sender.subscribe(), self.seal(0));
        };
        let receiver = self.sender.subscribe();
        let now = self.seal(inner.next - 1);
        let Some(last) = last_event_id else {
            return (Resume::Events(Vec::new()), receiver, now);
        };
        let Some(sequence) = self.position_of(last) else {
            return (Resume::Reset, receiver, now);
        };
        if sequence >= inner.next {
            return (Resume::Reset, receiver, now);
        }
        let lost = scope.namespaces().any(|namespace| {
            inner
                .forgotten
                .get(namespace)
                .is_some_and(|&forgotten| forgotten > sequence)
        });
        if lost {
            return (Resume::Reset, receiver, now);
        }
        let missed = inner
            .events
            .iter()
            .filter(|event| event.sequence > sequence && scope.shows(event))
            .cloned()
            .collect();
        (Resume::Events(missed), receiver, now)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn publish_in(log: &EventLog, namespace: &str, name: &str) {
        log.publish(
            namespace,
            TenantResource::Backups,
            ChangeAction::Added,
            name,
            Arc::new(serde_json::json!({"metadata": {"name": name}})),
        );
    }

    fn publish(log: &EventLog, name: &str) {
        publish_in(log, "team-a", name);
    }

    fn scope(namespaces: &[&str]) -> StreamScope {
        let mut scope = StreamScope::new();
        for ns in namespaces {
            for resource in TenantResource::ALL {
                let grant = Authorized::assumed_for_tests("watch", resource.plural(), ns);
                assert!(scope.admit(&grant));
            }
        }
        scope
    }

    #[test]
    fn a_scope_admits_only_watch_grants_on_tenant_resources() {
        let mut scope = StreamScope::new();
        assert!(!scope.admit(&Authorized::assumed_for_tests(
            "list",
            "nonadminbackups",
            "team-a"
        )));
        assert!(!scope.admit(&Authorized::assumed_for_tests("watch", "secrets", "team-a")));
        assert!(scope.is_empty());
        assert!(scope.admit(&Authorized::assumed_for_tests(
            "watch",
            "nonadminbackups",
            "team-a"
        )));
        let event = |namespace: &str, resource| ChangeEvent {
            sequence: 1,
            namespace: namespace.into(),
            resource,
            action: ChangeAction::Added,
            name: "x".into(),
            object: Arc::new(serde_json::Value::Null),
            rendered: RenderedOnce::default(),
        };
        assert!(scope.shows(&event("team-a", TenantResource::Backups)));
        assert!(!scope.shows(&event("team-a", TenantResource::Restores)));
        assert!(!scope.shows(&event("team-b", TenantResource::Backups)));
    }

    fn id_of(log: &EventLog, sequence: u64) -> String {
        log.seal(sequence)
    }

    #[test]
    fn resume_returns_exactly_the_missed_events_of_the_scope() {
        let log = EventLog::new(10);
        publish(&log, "a");
        publish_in(&log, "team-b", "other");
        publish(&log, "b");
        publish(&log, "c");
        let (resume, _rx, _) = log.resume(Some(&id_of(&log, 1)), &scope(&["team-a"]));
        let Resume::Events(missed) = resume else {
            panic!("expected events")
        };
        let names: Vec<_> = missed.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["b", "c"]);
    }

    #[test]
    fn ids_are_opaque_and_say_nothing_of_other_namespaces() {
        let log = EventLog::new(10);
        let before = log.head_id();
        for n in 0..5 {
            publish_in(&log, "team-a", &format!("a-{n}"));
        }
        let after = log.head_id();
        // Same length, no visible counter, and a fresh id each time for the same position.
        assert_eq!(before.len(), after.len());
        assert_ne!(log.head_id(), after);
        assert_eq!(log.position_of(&before), Some(0));
        assert_eq!(log.position_of(&after), Some(5));
        assert!(!after.ends_with("-5"));
        // Another process's log (another key) does not know them.
        assert_eq!(EventLog::new(10).position_of(&after), None);
    }

    #[test]
    fn stale_foreign_or_future_ids_reset() {
        let log = EventLog::new(2);
        for name in ["a", "b", "c", "d"] {
            publish(&log, name);
        }
        let team_a = scope(&["team-a"]);
        // Event 2 fell out of the log (it holds 3 and 4): from 1, 2 is lost.
        assert_eq!(log.resume(Some(&id_of(&log, 1)), &team_a).0, Resume::Reset);
        assert_eq!(log.resume(Some("deadbeef-3"), &team_a).0, Resume::Reset);
        assert_eq!(
            log.resume(Some(&EventLog::new(2).seal(3)), &team_a).0,
            Resume::Reset
        );
        assert_eq!(log.resume(Some(&id_of(&log, 99)), &team_a).0, Resume::Reset);
        assert_eq!(log.resume(Some("garbage"), &team_a).0, Resume::Reset);
        // Event 2 is just before the oldest held: nothing is missing.
        let Resume::Events(missed) = log.resume(Some(&id_of(&log, 2)), &team_a).0 else {
            panic!()
        };
        assert_eq!(missed.len(), 2);
    }

    #[test]
    fn other_namespaces_forgotten_events_do_not_reset_a_stream() {
        let log = EventLog::new(2);
        publish_in(&log, "team-b", "mine");
        let position = log.head_id();
        // team-a's activity pushes everything of team-b's out of the log …
        for n in 0..5 {
            publish_in(&log, "team-a", &format!("a-{n}"));
        }
        // … which bob, following team-b from `position`, cannot tell: nothing of his is lost.
        assert_eq!(
            log.resume(Some(&position), &scope(&["team-b"])).0,
            Resume::Events(Vec::new())
        );
        // Whereas a team-a stream from there has lost events.
        assert_eq!(
            log.resume(Some(&position), &scope(&["team-a"])).0,
            Resume::Reset
        );
    }

    #[tokio::test]
    async fn live_events_reach_subscribers() {
        let log = EventLog::new(10);
        let (_, mut rx, _) = log.resume(None, &scope(&["team-a"]));
        publish(&log, "x");
        let event = rx.recv().await.unwrap();
        assert_eq!(event.name, "x");
        assert_eq!(log.position_of(&log.event_id(&event)), Some(1));
    }
}
