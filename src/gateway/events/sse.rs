//! Server-Sent Events of tenant changes: the items of [`super::follow`] as SSE frames. A stream
//! opens with a `ready` event whose id marks "now"; each change is an
//! `ADDED`/`MODIFIED`/`DELETED` event with an opaque resumable id; a client reconnecting with
//! `Last-Event-ID` gets what it missed, or a `reset` event when the gateway no longer has it
//! (re-list, then follow). A stream ends with `forbidden` when the caller may no longer watch
//! its scope, or `unauthenticated` when their token is no longer valid (authenticate again
//! before reconnecting), `unavailable` when the API server could not be reached to re-check
//! access for a whole access-cache TTL (with `retry` set), or `shutdown` when the gateway stops (with `retry` set: an
//! EventSource reconnects by itself, to another replica, sending `Last-Event-ID`).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures::{Stream, StreamExt};
use tokio_stream::wrappers::ReceiverStream;

use super::follow::{
    RECONNECT_AFTER, RETRY_UNAVAILABLE_AFTER, StreamEnd, StreamHost, StreamItem, follow,
};
use super::{ChangeAction, StreamNotice, StreamReady};
use crate::gateway::auth::Caller;
use crate::gateway::error::GatewayError;

pub use super::StreamScope;
pub use super::follow::RECHECK_INTERVAL;

/// A frame's data: the JSON of one of the stream types the OpenAPI document names.
fn data(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "{}".to_string())
}

/// The SSE frame of one stream item.
pub fn frame_of(item: StreamItem) -> Event {
    match item {
        StreamItem::Ready { id, namespaces } => {
            Event::default()
                .event("ready")
                .id(id)
                .data(data(&StreamReady {
                    namespaces: &namespaces,
                }))
        }
        StreamItem::Change { id, event } => {
            let data = event.json();
            Event::default()
                .event(match event.action {
                    ChangeAction::Added => "ADDED",
                    ChangeAction::Modified => "MODIFIED",
                    ChangeAction::Deleted => "DELETED",
                })
                .id(id)
                .data(&*data)
        }
        StreamItem::Reset(reason) => Event::default().event("reset").data(data(&StreamNotice {
            reason: reason.text(),
            retry_after_seconds: None,
        })),
        StreamItem::End(why @ (StreamEnd::ShuttingDown | StreamEnd::Unavailable)) => {
            let (event, after) = match why {
                StreamEnd::ShuttingDown => ("shutdown", RECONNECT_AFTER),
                _ => ("unavailable", RETRY_UNAVAILABLE_AFTER),
            };
            Event::default()
                .event(event)
                .retry(after)
                .data(data(&StreamNotice {
                    reason: why.text(),
                    retry_after_seconds: Some(after.as_secs().max(1)),
                }))
        }
        StreamItem::End(why) => Event::default()
            .event(match why {
                StreamEnd::Revoked => "forbidden",
                StreamEnd::TokenInvalid | StreamEnd::TokenUnverified => "unauthenticated",
                StreamEnd::ShuttingDown => "shutdown",
                StreamEnd::Unavailable => "unavailable",
            })
            .data(data(&StreamNotice {
                reason: why.text(),
                retry_after_seconds: None,
            })),
    }
}

/// The SSE response for `caller` over `scope`, resuming after `last_event_id` when given.
pub fn stream(
    service: Arc<impl StreamHost + 'static>,
    caller: Caller,
    scope: StreamScope,
    last_event_id: Option<String>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, GatewayError> {
    let items = follow(service, caller, scope, last_event_id)?;
    Ok(
        Sse::new(ReceiverStream::new(items).map(|item| Ok(frame_of(item))))
            .keep_alive(KeepAlive::new().interval(Duration::from_secs(15))),
    )
}
