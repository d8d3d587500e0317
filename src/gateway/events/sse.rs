//! Server-Sent Events of tenant changes. A stream covers the namespaces and resources the caller
//! may `watch` (checked when it opens, re-checked before every event and every heartbeat, so a
//! revoked binding ends it within the allow TTL). It opens with a `ready` event whose id marks
//! "now"; each change is an `ADDED`/`MODIFIED`/`DELETED` event with a resumable id; a client
//! reconnecting with `Last-Event-ID` gets what it missed, or a `reset` event when the gateway
//! no longer has it (re-list, then follow).

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use serde_json::json;
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use super::{ChangeEvent, Resume};
use crate::gateway::auth::Caller;
use crate::gateway::resources::TenantResource;
use crate::gateway::service::GatewayService;

/// What one stream may show: resources per namespace.
pub type StreamScope = BTreeMap<String, Vec<TenantResource>>;

/// How often a stream re-checks access when nothing happens.
pub const RECHECK_INTERVAL: Duration = Duration::from_secs(5);

fn change_event(service: &GatewayService, event: &ChangeEvent) -> Event {
    let data = json!({
        "namespace": event.namespace,
        "resource": event.resource,
        "name": event.name,
        "object": &*event.object,
    });
    Event::default()
        .event(match event.action {
            super::ChangeAction::Added => "ADDED",
            super::ChangeAction::Modified => "MODIFIED",
            super::ChangeAction::Deleted => "DELETED",
        })
        .id(service.caches().events.event_id(event))
        .data(data.to_string())
}

fn in_scope(scope: &StreamScope, event: &ChangeEvent) -> bool {
    scope
        .get(&event.namespace)
        .is_some_and(|resources| resources.contains(&event.resource))
}

/// The SSE response for `caller` over `scope`, resuming after `last_event_id` when given.
pub fn stream(
    service: Arc<GatewayService>,
    caller: Caller,
    scope: StreamScope,
    last_event_id: Option<String>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let (sender, receiver) = mpsc::channel::<Result<Event, Infallible>>(64);
    tokio::spawn(pump(service, caller, scope, last_event_id, sender));
    Sse::new(ReceiverStream::new(receiver))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

async fn still_allowed(service: &GatewayService, caller: &Caller, scope: &StreamScope) -> bool {
    for (namespace, resources) in scope {
        for resource in resources {
            if !service.may_watch(caller, namespace, *resource).await {
                return false;
            }
        }
    }
    true
}

async fn pump(
    service: Arc<GatewayService>,
    caller: Caller,
    scope: StreamScope,
    last_event_id: Option<String>,
    sender: mpsc::Sender<Result<Event, Infallible>>,
) {
    let events = &service.caches().events;
    let (resume, mut live) = events.subscribe(last_event_id.as_deref());
    let mut last_sent = 0u64;
    let ready = Event::default()
        .event("ready")
        .id(events.head_id())
        .data(json!({"namespaces": scope.keys().collect::<Vec<_>>()}).to_string());
    if sender.send(Ok(ready)).await.is_err() {
        return;
    }
    match resume {
        Resume::Reset => {
            let reset = Event::default()
                .event("reset")
                .data(json!({"reason": "the changes since Last-Event-ID are no longer available; list again, then follow this stream"}).to_string());
            if sender.send(Ok(reset)).await.is_err() {
                return;
            }
        }
        Resume::Events(missed) => {
            for event in missed {
                last_sent = event.sequence;
                if in_scope(&scope, &event)
                    && sender
                        .send(Ok(change_event(&service, &event)))
                        .await
                        .is_err()
                {
                    return;
                }
            }
        }
    }
    let mut recheck = tokio::time::interval(RECHECK_INTERVAL);
    recheck.tick().await;
    loop {
        tokio::select! {
            _ = sender.closed() => return,
            _ = recheck.tick() => {
                if !still_allowed(&service, &caller, &scope).await {
                    let _ = sender.send(Ok(Event::default().event("forbidden").data(json!({"reason": "access to this stream was revoked"}).to_string()))).await;
                    return;
                }
            }
            received = live.recv() => match received {
                Ok(event) => {
                    if event.sequence <= last_sent || !in_scope(&scope, &event) {
                        continue;
                    }
                    if !service.may_watch(&caller, &event.namespace, event.resource).await {
                        let _ = sender.send(Ok(Event::default().event("forbidden").data(json!({"reason": "access to this stream was revoked"}).to_string()))).await;
                        return;
                    }
                    last_sent = event.sequence;
                    if sender.send(Ok(change_event(&service, &event))).await.is_err() {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    let reset = Event::default().event("reset").data(json!({"reason": "the stream fell behind; list again, then follow this stream"}).to_string());
                    if sender.send(Ok(reset)).await.is_err() {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }
}
