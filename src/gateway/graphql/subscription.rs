//! Subscriptions: live changes from the gateway's event log (`events/`), for the namespaces
//! and resources the caller may `watch` — checked when the subscription starts, re-checked
//! before every change and every few seconds, so a revoked binding ends it (with a FORBIDDEN
//! error) within the allow TTL. The first item is `READY` with the id of the newest change;
//! `resumeAfter` replays what a client missed, or sends `RESET` when the gateway no longer has
//! it (list again, then follow).

use std::collections::BTreeMap;
use std::sync::Arc;

use async_graphql::{Context, Enum, Json, SimpleObject, Subscription};
use futures::Stream;
use serde_json::Value;
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use super::errors::{GqlResult, to_graphql};
use super::types::ResourceKind;
use super::{caller_of, check_namespace, service_of};
use crate::gateway::auth::Caller;
use crate::gateway::error::GatewayError;
use crate::gateway::events::sse::RECHECK_INTERVAL;
use crate::gateway::events::{ChangeAction, ChangeEvent, Resume};
use crate::gateway::resources::TenantResource;
use crate::gateway::service::GatewayService;

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
    /// Event id, for `resumeAfter` (none for RESET).
    pub id: Option<String>,
    /// Namespace of the object (none for READY and RESET).
    pub namespace: Option<String>,
    /// Resource of the object.
    pub resource: Option<ResourceKind>,
    /// Name of the object.
    pub name: Option<String>,
    /// Velero's phase when there is one, else NAC's request phase.
    pub phase: Option<String>,
    /// The object after the change (before it, for a deletion), as REST presents it.
    pub object: Option<Json<Value>>,
    /// READY: the namespaces this subscription covers.
    pub namespaces: Vec<String>,
}

type Scope = BTreeMap<String, Vec<TenantResource>>;

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

fn change_of(service: &GatewayService, event: &ChangeEvent) -> Change {
    Change {
        kind: match event.action {
            ChangeAction::Added => ChangeKind::Added,
            ChangeAction::Modified => ChangeKind::Modified,
            ChangeAction::Deleted => ChangeKind::Deleted,
        },
        id: Some(service.caches().events.event_id(event)),
        namespace: Some(event.namespace.clone()),
        resource: Some(event.resource.into()),
        name: Some(event.name.clone()),
        phase: phase_in(event.resource, &event.object),
        object: Some(Json((*event.object).clone())),
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

fn in_scope(scope: &Scope, event: &ChangeEvent) -> bool {
    scope
        .get(&event.namespace)
        .is_some_and(|resources| resources.contains(&event.resource))
}

fn revoked() -> async_graphql::Error {
    use async_graphql::ErrorExtensions;
    async_graphql::Error::new("access to this subscription was revoked").extend_with(
        |_, extensions| {
            extensions.set("code", super::errors::FORBIDDEN);
            extensions.set("reason", "forbidden");
        },
    )
}

async fn still_allowed(service: &GatewayService, caller: &Caller, scope: &Scope) -> bool {
    for (namespace, resources) in scope {
        for resource in resources {
            if !service.may_watch(caller, namespace, *resource).await {
                return false;
            }
        }
    }
    true
}

type Item = async_graphql::Result<Change>;

async fn pump(
    service: Arc<GatewayService>,
    caller: Caller,
    scope: Scope,
    resume_after: Option<String>,
    sender: mpsc::Sender<Item>,
) {
    let events = &service.caches().events;
    let (resume, mut live) = events.subscribe(resume_after.as_deref());
    let ready = marker(
        ChangeKind::Ready,
        Some(events.head_id()),
        scope.keys().cloned().collect(),
    );
    if sender.send(Ok(ready)).await.is_err() {
        return;
    }
    let mut last_sent = 0u64;
    match resume {
        Resume::Reset => {
            if sender
                .send(Ok(marker(ChangeKind::Reset, None, Vec::new())))
                .await
                .is_err()
            {
                return;
            }
        }
        Resume::Events(missed) => {
            for event in missed {
                last_sent = event.sequence;
                if in_scope(&scope, &event)
                    && sender.send(Ok(change_of(&service, &event))).await.is_err()
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
                    let _ = sender.send(Err(revoked())).await;
                    return;
                }
            }
            received = live.recv() => match received {
                Ok(event) => {
                    if event.sequence <= last_sent || !in_scope(&scope, &event) {
                        continue;
                    }
                    if !service.may_watch(&caller, &event.namespace, event.resource).await {
                        let _ = sender.send(Err(revoked())).await;
                        return;
                    }
                    last_sent = event.sequence;
                    if sender.send(Ok(change_of(&service, &event))).await.is_err() {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    if sender.send(Ok(marker(ChangeKind::Reset, None, Vec::new()))).await.is_err() {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
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
        resources: Option<Vec<ResourceKind>>,
        resume_after: Option<String>,
    ) -> async_graphql::Result<impl Stream<Item = Item> + use<>> {
        let service = Arc::clone(service_of(ctx)?);
        let caller = caller_of(ctx)?.clone();
        let wanted: Option<Vec<TenantResource>> =
            resources.map(|list| list.into_iter().map(Into::into).collect());
        let keep = |allowed: Vec<TenantResource>| -> Vec<TenantResource> {
            allowed
                .into_iter()
                .filter(|r| wanted.as_ref().is_none_or(|w| w.contains(r)))
                .collect()
        };
        let mut scope = Scope::new();
        match namespaces {
            Some(names) => {
                if names.len() > 100 {
                    return Err(to_graphql(&GatewayError::BadRequest(
                        "at most 100 namespaces at once".into(),
                    )));
                }
                for namespace in names {
                    check_namespace(&namespace).gql()?;
                    let allowed = keep(service.watchable(&caller, &namespace).await.gql()?);
                    if allowed.is_empty() {
                        return Err(to_graphql(&GatewayError::Forbidden {
                            verb: "watch",
                            resource: TenantResource::Backups.plural(),
                            namespace,
                        }));
                    }
                    scope.insert(namespace, allowed);
                }
            }
            None => {
                for access in service.namespaces(&caller).await.gql()? {
                    let allowed = keep(service.watchable(&caller, &access.name).await.gql()?);
                    if !allowed.is_empty() {
                        scope.insert(access.name, allowed);
                    }
                }
            }
        }
        let (sender, receiver) = mpsc::channel::<Item>(64);
        tokio::spawn(pump(service, caller, scope, resume_after, sender));
        Ok(ReceiverStream::new(receiver))
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
    fn scope_keeps_only_allowed_namespaces_and_resources() {
        let scope: Scope = [("team-a".to_string(), vec![TenantResource::Backups])]
            .into_iter()
            .collect();
        let event = |namespace: &str, resource| ChangeEvent {
            sequence: 1,
            namespace: namespace.into(),
            resource,
            action: ChangeAction::Added,
            name: "x".into(),
            object: Arc::new(json!({})),
        };
        assert!(in_scope(&scope, &event("team-a", TenantResource::Backups)));
        assert!(!in_scope(
            &scope,
            &event("team-a", TenantResource::Restores)
        ));
        assert!(!in_scope(&scope, &event("team-b", TenantResource::Backups)));
    }
}
