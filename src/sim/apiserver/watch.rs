//! Watches: a stream of JSON lines (`ADDED`/`MODIFIED`/`DELETED`/`BOOKMARK`/`ERROR`) that starts
//! from a resourceVersion (410 Expired when it is too old), follows label/field selectors through
//! transitions, sends bookmarks and initial-events-end markers, and ends on timeout or when faults
//! drop it.
use std::sync::{Arc, MutexGuard};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use crate::api::selector::Selector;

use super::errors::ApiError;
use super::registry::ResourceInfo;
use super::selectors::{FieldSelector, object_matches};
use super::state::State;
use super::store::{EventType, StoredEvent};
use super::table::{self, IncludeObject};

/// A watch as asked for.
pub struct WatchRequest {
    pub info: Arc<ResourceInfo>,
    pub version: String,
    pub namespace: Option<String>,
    pub label: Selector,
    pub field: FieldSelector,
    /// `None` or `Some(0)`: start with the current state as ADDED events.
    pub resource_version: Option<u64>,
    pub bookmarks: bool,
    pub send_initial_events: bool,
    pub timeout: Duration,
    pub drop_after: Option<Duration>,
    /// Table rendering (kubectl get -w).
    pub table: Option<IncludeObject>,
}

/// What a watcher sees of one stored event, after selectors: `None` when it is not visible.
pub fn visible_event(
    event: &StoredEvent,
    namespace: Option<&str>,
    label: &Selector,
    field: &FieldSelector,
) -> Option<EventType> {
    if namespace.is_some_and(|ns| ns != event.key.namespace) {
        return None;
    }
    let now = object_matches(&event.object, label, field);
    let before = event
        .previous
        .as_ref()
        .is_some_and(|p| object_matches(p, label, field));
    match event.event_type {
        EventType::Added => now.then_some(EventType::Added),
        EventType::Deleted => before.then_some(EventType::Deleted),
        EventType::Modified => match (before, now) {
            (true, true) => Some(EventType::Modified),
            (false, true) => Some(EventType::Added),
            (true, false) => Some(EventType::Deleted),
            (false, false) => None,
        },
    }
}

struct Renderer {
    info: Arc<ResourceInfo>,
    version: String,
    table: Option<IncludeObject>,
}

impl Renderer {
    fn object(&self, object: &Value) -> Value {
        let mut o = object.clone();
        if o.is_object() {
            o["apiVersion"] = json!(self.info.api_version(&self.version));
            o["kind"] = json!(self.info.kind);
        }
        match self.table {
            Some(include) => {
                let rv = o
                    .pointer("/metadata/resourceVersion")
                    .cloned()
                    .unwrap_or(Value::Null);
                table::to_table(
                    &self.info,
                    &self.version,
                    &[o],
                    json!({"resourceVersion": rv}),
                    include,
                )
            }
            None => o,
        }
    }

    fn line(&self, event_type: &str, object: Value) -> Bytes {
        let mut text = json!({"type": event_type, "object": object}).to_string();
        text.push('\n');
        Bytes::from(text)
    }

    fn bookmark(&self, resource_version: u64, initial_events_end: bool) -> Bytes {
        let mut metadata = json!({"resourceVersion": resource_version.to_string()});
        if initial_events_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        self.line(
            "BOOKMARK",
            json!({"kind": self.info.kind, "apiVersion": self.info.api_version(&self.version), "metadata": metadata}),
        )
    }
}

/// Starts a watch and returns the streaming response: the current state (or the events since
/// the requested resourceVersion) from `state`, whose lock is released before streaming, then
/// the store's events until the timeout, a drop signalled on `drops`, or the client leaving;
/// bookmarks every `bookmark_every` when asked for.
pub fn start(
    state: MutexGuard<'_, State>,
    mut drops: tokio::sync::watch::Receiver<u64>,
    bookmark_every: Duration,
    req: WatchRequest,
) -> Result<Response, ApiError> {
    let renderer = Renderer {
        info: req.info.clone(),
        version: req.version.clone(),
        table: req.table,
    };
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(256);
    let mut initial: Vec<Bytes> = Vec::new();
    let receiver;
    let mut last_rv;
    {
        receiver = state.store.subscribe();
        last_rv = state.store.resource_version();
        let from_current_state =
            req.send_initial_events || matches!(req.resource_version, None | Some(0));
        if from_current_state {
            for (_, object) in state
                .store
                .list(&req.info.key(), req.namespace.as_deref(), None)
            {
                if object_matches(object, &req.label, &req.field) {
                    initial.push(renderer.line("ADDED", renderer.object(object)));
                }
            }
            if req.send_initial_events && req.bookmarks {
                initial.push(renderer.bookmark(last_rv, true));
            }
        } else if let Some(rv) = req.resource_version {
            match state.store.events_since(rv) {
                Ok(events) => {
                    for e in events
                        .iter()
                        .filter(|e| e.key.resource_key() == req.info.key())
                    {
                        if let Some(t) =
                            visible_event(e, req.namespace.as_deref(), &req.label, &req.field)
                        {
                            initial.push(renderer.line(t.as_str(), renderer.object(&e.object)));
                        }
                    }
                }
                Err(too_old) => {
                    let status = ApiError::Gone(format!(
                        "too old resource version: {} ({})",
                        too_old.requested, too_old.oldest_available
                    ))
                    .to_status();
                    initial.push(renderer.line("ERROR", status));
                    let _ = tx.try_send(Ok(initial.concat().into()));
                    return Ok(streaming_json(rx));
                }
            }
        }
    }
    drop(state);
    tokio::spawn(async move {
        for line in initial {
            if tx.send(Ok(line)).await.is_err() {
                return;
            }
        }
        let deadline = tokio::time::sleep(req.timeout);
        tokio::pin!(deadline);
        let dropped_after =
            tokio::time::sleep(req.drop_after.unwrap_or(Duration::from_secs(86_400 * 365)));
        tokio::pin!(dropped_after);
        let mut ticker = tokio::time::interval(bookmark_every);
        ticker.tick().await;
        let mut receiver: broadcast::Receiver<Arc<StoredEvent>> = receiver;
        loop {
            tokio::select! {
                _ = &mut deadline => return,
                _ = &mut dropped_after => return,
                _ = drops.changed() => return,
                _ = tx.closed() => return,
                _ = ticker.tick(), if req.bookmarks => {
                    if tx.send(Ok(renderer.bookmark(last_rv, false))).await.is_err() {
                        return;
                    }
                }
                received = receiver.recv() => match received {
                    Ok(event) => {
                        last_rv = last_rv.max(event.resource_version);
                        if event.key.resource_key() != req.info.key() {
                            continue;
                        }
                        if let Some(t) = visible_event(&event, req.namespace.as_deref(), &req.label, &req.field)
                            && tx.send(Ok(renderer.line(t.as_str(), renderer.object(&event.object)))).await.is_err()
                        {
                            return;
                        }
                    }
                    // A watcher that fell behind is closed; the client resumes from its last resourceVersion.
                    Err(broadcast::error::RecvError::Lagged(_)) | Err(broadcast::error::RecvError::Closed) => return,
                },
            }
        }
    });
    Ok(streaming_json(rx))
}

/// A response body streaming from a channel of lines (watches).
fn streaming_json(
    rx: tokio::sync::mpsc::Receiver<Result<bytes::Bytes, std::io::Error>>,
) -> Response {
    let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
    let mut response = Response::new(Body::from_stream(stream));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    response
}
