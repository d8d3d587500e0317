//! Subscriptions: live changes from the gateway's event log through the same stream filter
//! as Server-Sent Events (`events/follow.rs`): the namespaces and resources the caller may
//! `watch` — checked when the subscription starts, re-checked before every change and every
//! few seconds, so a revoked binding ends it (with a FORBIDDEN error) within the allow TTL, and
//! a token that is no longer valid ends it with UNAUTHENTICATED within the token-cache TTL.
//! The first item is `READY` with the opaque id of "now"; `resumeAfter` replays what a client
//! missed, or sends `RESET` when the gateway no longer has it (list again, then follow).

use std::borrow::Cow;
use std::sync::Arc;

use async_graphql::parser::types::Field;
use async_graphql::registry::Registry;
use async_graphql::{
    Context, ContextSelectionSet, Enum, Json, OutputType, Positioned, ServerResult, SimpleObject,
    Subscription,
};
use futures::{Stream, StreamExt};
use serde_json::Value;
use tokio_stream::wrappers::ReceiverStream;

use super::errors::GqlResult;
use super::{budget_of, caller_of, service_of};
use crate::gateway::events::follow::{StreamEnd, StreamItem, follow, scope_for};
use crate::gateway::events::{ChangeAction, ChangeEvent};
use crate::gateway::resources::TenantResource;

/// What a change item says.
#[derive(Enum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    /// The subscription is live; `id` marks "now".
    Ready,
    /// An object appeared.
    Added,
    /// An object changed.
    Modified,
    /// An object is gone.
    Deleted,
    /// Changes were lost (resume point unknown, or the subscriber fell behind): list again.
    Reset,
}

/// One item of the change stream.
#[derive(SimpleObject, Clone, Debug)]
pub struct Change {
    /// What happened.
    pub kind: ChangeKind,
    /// Opaque event id, for `resumeAfter` (SSE's `Last-Event-ID` takes the same ids); none
    /// for RESET.
    pub id: Option<String>,
    /// Namespace of the object (none for READY and RESET).
    pub namespace: Option<String>,
    /// Resource of the object.
    pub resource: Option<TenantResource>,
    /// Name of the object.
    pub name: Option<String>,
    /// Velero's phase when there is one, else NAC's request phase.
    pub phase: Option<String>,
    /// The object after the change (before it, for a deletion), as REST presents it.
    pub object: Option<SharedJson>,
    /// READY: the namespaces this subscription covers.
    pub namespaces: Vec<String>,
}

/// An object's JSON, converted to a GraphQL value once per change and shared by every
/// subscriber ([`ChangeEvent::graphql_object`]); in the schema it is the `JSON` scalar, the
/// same type as `Json<Value>`.
#[derive(Clone, Debug)]
pub struct SharedJson(Arc<async_graphql::Value>);

impl OutputType for SharedJson {
    fn type_name() -> Cow<'static, str> {
        <Json<Value> as OutputType>::type_name()
    }

    fn create_type_info(registry: &mut Registry) -> String {
        // Registered as `Json<Value>` itself, so the schema has one `JSON` scalar.
        <Json<Value> as OutputType>::create_type_info(registry)
    }

    async fn resolve(
        &self,
        _ctx: &ContextSelectionSet<'_>,
        _field: &Positioned<Field>,
    ) -> ServerResult<async_graphql::Value> {
        Ok((*self.0).clone())
    }
}

fn phase_in(resource: TenantResource, object: &Value) -> Option<String> {
    let velero = match resource {
        TenantResource::Backups => "/status/veleroBackup/status/phase",
        TenantResource::Restores => "/status/veleroRestore/status/phase",
        TenantResource::StorageLocations => "/status/veleroBackupStorageLocation/status/phase",
        TenantResource::Schedules => "/status/veleroSchedule/status/phase",
    };
    object
        .pointer(velero)
        .or_else(|| object.pointer("/status/phase"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn change_of(id: String, event: &ChangeEvent) -> Change {
    Change {
        kind: match event.action {
            ChangeAction::Added => ChangeKind::Added,
            ChangeAction::Modified => ChangeKind::Modified,
            ChangeAction::Deleted => ChangeKind::Deleted,
        },
        id: Some(id),
        namespace: Some(event.namespace.clone()),
        resource: Some(event.resource),
        name: Some(event.name.clone()),
        phase: phase_in(event.resource, &event.object),
        object: Some(SharedJson(event.graphql_object())),
        namespaces: Vec::new(),
    }
}

fn marker(kind: ChangeKind, id: Option<String>, namespaces: Vec<String>) -> Change {
    Change {
        kind,
        id,
        namespace: None,
        resource: None,
        name: None,
        phase: None,
        object: None,
        namespaces,
    }
}

fn ended(why: StreamEnd) -> async_graphql::Error {
    use async_graphql::ErrorExtensions;
    let (code, reason) = match why {
        StreamEnd::Revoked => (super::errors::FORBIDDEN, "forbidden"),
        StreamEnd::TokenInvalid | StreamEnd::TokenUnverified => {
            (super::errors::UNAUTHENTICATED, "unauthenticated")
        }
        StreamEnd::ShuttingDown => (super::errors::UNAVAILABLE, "shutdown"),
        StreamEnd::Unavailable => (super::errors::UNAVAILABLE, "api-server-unavailable"),
    };
    let message = match why {
        StreamEnd::Revoked => "access to this subscription was revoked",
        StreamEnd::ShuttingDown => {
            "the gateway is shutting down; subscribe again (resumeAfter the last id) to continue"
        }
        _ => why.text(),
    };
    async_graphql::Error::new(message).extend_with(|_, extensions| {
        extensions.set("code", code);
        extensions.set("reason", reason);
        let retry_after = match why {
            StreamEnd::ShuttingDown => Some(crate::gateway::events::follow::RECONNECT_AFTER),
            StreamEnd::Unavailable => Some(crate::gateway::events::follow::RETRY_UNAVAILABLE_AFTER),
            _ => None,
        };
        if let Some(after) = retry_after {
            extensions.set("retryAfterSeconds", after.as_secs().max(1));
        }
    })
}

type Item = async_graphql::Result<Change>;

/// The GraphQL item of one stream item.
fn item_of(item: StreamItem) -> Item {
    match item {
        StreamItem::Ready { id, namespaces } => Ok(marker(ChangeKind::Ready, Some(id), namespaces)),
        StreamItem::Change { id, event } => Ok(change_of(id, &event)),
        StreamItem::Reset(_) => Ok(marker(ChangeKind::Reset, None, Vec::new())),
        StreamItem::End(why) => Err(ended(why)),
    }
}

/// The root of subscriptions.
#[derive(Debug, Default)]
pub struct SubscriptionRoot;

#[Subscription(name = "Subscription")]
impl SubscriptionRoot {
    /// Live changes in `namespaces` (default: every namespace the caller may watch) of
    /// `resources` (default: all the caller may watch), resuming after the event id
    /// `resumeAfter` when given.
    async fn changes(
        &self,
        ctx: &Context<'_>,
        namespaces: Option<Vec<String>>,
        resources: Option<Vec<TenantResource>>,
        resume_after: Option<String>,
    ) -> async_graphql::Result<impl Stream<Item = Item> + use<>> {
        let service = Arc::clone(service_of(ctx)?);
        let caller = caller_of(ctx)?.clone();
        let budget = budget_of(ctx)?;
        let scope = scope_for(&service, &caller, namespaces, resources, &budget)
            .await
            .gql()?;
        let items = follow(service, caller, scope, resume_after).gql()?;
        Ok(ReceiverStream::new(items).map(item_of))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn phases_prefer_velero() {
        let object = json!({"status": {"phase": "Created", "veleroBackup": {"status": {"phase": "Completed"}}}});
        assert_eq!(
            phase_in(TenantResource::Backups, &object).as_deref(),
            Some("Completed")
        );
        let fresh = json!({"status": {"phase": "New"}});
        assert_eq!(
            phase_in(TenantResource::Restores, &fresh).as_deref(),
            Some("New")
        );
        assert_eq!(phase_in(TenantResource::Schedules, &json!({})), None);
    }

    #[test]
    fn every_stream_item_has_its_graphql_form() {
        let event = Arc::new(ChangeEvent {
            sequence: 7,
            namespace: "team-a".into(),
            resource: TenantResource::Backups,
            action: ChangeAction::Added,
            name: "x".into(),
            object: Arc::new(json!({})),
            rendered: Default::default(),
        });
        let change = item_of(StreamItem::Change {
            id: "opaque".into(),
            event,
        })
        .unwrap();
        assert_eq!(change.kind, ChangeKind::Added);
        assert_eq!(change.id.as_deref(), Some("opaque"));
        let reset = item_of(StreamItem::Reset(
            crate::gateway::events::follow::ResetReason::FellBehind,
        ))
        .unwrap();
        assert_eq!(reset.kind, ChangeKind::Reset);
        let stopping = item_of(StreamItem::End(StreamEnd::ShuttingDown)).unwrap_err();
        let extensions = stopping.extensions.unwrap();
        assert_eq!(
            extensions.get("code"),
            Some(&async_graphql::Value::from(
                super::super::errors::UNAVAILABLE
            ))
        );
        assert_eq!(
            extensions.get("reason"),
            Some(&async_graphql::Value::from("shutdown"))
        );
        let token = item_of(StreamItem::End(StreamEnd::TokenInvalid)).unwrap_err();
        assert_eq!(
            token.extensions.unwrap().get("code"),
            Some(&async_graphql::Value::from(
                super::super::errors::UNAUTHENTICATED
            ))
        );
    }
}
