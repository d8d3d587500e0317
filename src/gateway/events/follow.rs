//! The one stream filter behind Server-Sent Events ([`super::sse`]) and GraphQL subscriptions
//! (`graphql/subscription.rs`): which namespaces and resources a stream covers
//! ([`scope_for`]), and what it tells its caller ([`follow`]) — `Ready` with the id of "now",
//! the changes of its scope with opaque ids (after a resume, what the client missed), `Reset`
//! when that is no longer known, and an end when the caller loses access or their token stops
//! being valid, or when the gateway stops. Both transports only translate these items into
//! their own frames, so what one shows the other shows too.
//!
//! A stream re-checks access (`watch` on every resource of its scope) every
//! [`RECHECK_INTERVAL`] and before every change, and the caller's token (TokenReview, through
//! the authenticator's cache) at least once per token-cache TTL: a deleted service account or
//! an expired token ends it within about that TTL.
//!
//! What a stream needs of the gateway is the [`StreamHost`] trait, implemented by the gateway's
//! service (which owns the event log): streams sit below the service and never name it.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, mpsc};
use tokio::time::Instant;

use super::slots::StreamSlot;
use super::{ChangeEvent, Resume, StreamScope};
use crate::api::names::is_dns1123_label;
use crate::gateway::auth::{
    AccessBudget, AccessCheck, Authenticator, Authorizer, Caller, CheckError,
};
use crate::gateway::error::GatewayError;
use crate::gateway::resources::TenantResource;
use crate::shutdown::Shutdown;

/// What a stream needs of the gateway: who the caller is and what they may watch, the event
/// log, the per-user stream slots and the gateway's stop signal.
pub trait StreamHost: Send + Sync {
    /// The authenticator (re-checks the caller's token; its cache TTL paces the re-checks).
    fn authenticator(&self) -> &Authenticator;
    /// The authorizer (`watch` grants; its allow TTL is how long an unverifiable review is
    /// tolerated).
    fn authorizer(&self) -> &Authorizer;
    /// Fires when the gateway stops.
    fn shutdown(&self) -> &Shutdown;
    /// Every namespace the caller may use, drawing access checks from `budget`.
    fn usable_namespaces(
        &self,
        caller: &Caller,
        budget: &AccessBudget,
    ) -> impl Future<Output = Result<Vec<String>, GatewayError>> + Send;
    /// Whether the caller may still watch `resource` in `namespace`: `None` when the review
    /// could not be made (the API server did not answer), which is no refusal.
    fn watch_access(
        &self,
        caller: &Caller,
        namespace: &str,
        resource: TenantResource,
    ) -> impl Future<Output = Option<bool>> + Send;
    /// A slot for one more live stream of `caller` (429 when they hold the most one user may).
    fn open_stream(&self, caller: &Caller) -> Result<StreamSlot, GatewayError>;
    /// The changes of `scope` since `last_event_id` (or a reset), the live changes from then
    /// on, and the id of "now".
    fn follow_changes(
        &self,
        scope: &StreamScope,
        last_event_id: Option<&str>,
    ) -> (Resume, broadcast::Receiver<Arc<ChangeEvent>>, String);
    /// The opaque id of `event` for a stream's item.
    fn event_id(&self, event: &ChangeEvent) -> String;
}

/// A shared host is a host (transports hold the gateway's service in an `Arc`).
impl<H: StreamHost> StreamHost for Arc<H> {
    fn authenticator(&self) -> &Authenticator {
        (**self).authenticator()
    }
    fn authorizer(&self) -> &Authorizer {
        (**self).authorizer()
    }
    fn shutdown(&self) -> &Shutdown {
        (**self).shutdown()
    }
    fn usable_namespaces(
        &self,
        caller: &Caller,
        budget: &AccessBudget,
    ) -> impl Future<Output = Result<Vec<String>, GatewayError>> + Send {
        (**self).usable_namespaces(caller, budget)
    }
    fn watch_access(
        &self,
        caller: &Caller,
        namespace: &str,
        resource: TenantResource,
    ) -> impl Future<Output = Option<bool>> + Send {
        (**self).watch_access(caller, namespace, resource)
    }
    fn open_stream(&self, caller: &Caller) -> Result<StreamSlot, GatewayError> {
        (**self).open_stream(caller)
    }
    fn follow_changes(
        &self,
        scope: &StreamScope,
        last_event_id: Option<&str>,
    ) -> (Resume, broadcast::Receiver<Arc<ChangeEvent>>, String) {
        (**self).follow_changes(scope, last_event_id)
    }
    fn event_id(&self, event: &ChangeEvent) -> String {
        (**self).event_id(event)
    }
}

/// How often a stream re-checks access when nothing happens.
pub const RECHECK_INTERVAL: Duration = Duration::from_secs(5);

/// Most namespaces a stream may name.
pub const MAX_NAMESPACES: usize = 100;

/// Why a stream asks its client to list again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResetReason {
    /// The changes since the client's resume point are no longer known.
    ResumeUnavailable,
    /// The stream fell behind the changes.
    FellBehind,
}

impl ResetReason {
    /// What the client is told.
    pub fn text(self) -> &'static str {
        match self {
            ResetReason::ResumeUnavailable => {
                "the changes since Last-Event-ID are no longer available; list again, then follow this stream"
            }
            ResetReason::FellBehind => {
                "the stream fell behind; list again, then follow this stream"
            }
        }
    }
}

/// Why a stream ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamEnd {
    /// The caller may no longer watch part of the stream's scope.
    Revoked,
    /// The caller's token is no longer valid (expired, revoked, its service account deleted).
    TokenInvalid,
    /// The caller's token could not be re-checked for longer than the token-cache TTL.
    TokenUnverified,
    /// The gateway is stopping: reconnect (another replica answers), resuming from the last
    /// event id.
    ShuttingDown,
    /// The caller's access could not be re-checked (the API server did not answer) for longer
    /// than the access cache's TTL: reconnect later, resuming from the last event id. Not a
    /// refusal: nothing says the caller lost access.
    Unavailable,
}

impl StreamEnd {
    /// What the client is told.
    pub fn text(self) -> &'static str {
        match self {
            StreamEnd::Revoked => "access to this stream was revoked",
            StreamEnd::TokenInvalid => {
                "the token is no longer valid; authenticate again, then reopen the stream"
            }
            StreamEnd::TokenUnverified => {
                "the token could not be re-checked; authenticate again, then reopen the stream"
            }
            StreamEnd::ShuttingDown => {
                "the gateway is shutting down; reconnect, resuming from the last event id"
            }
            StreamEnd::Unavailable => {
                "the API server cannot be reached to re-check access; reconnect later, resuming from the last event id"
            }
        }
    }
}

/// How long a client should wait before reconnecting after [`StreamEnd::Unavailable`]: the
/// API server is away (restarting, unreachable), which takes longer than a replica's stop.
pub const RETRY_UNAVAILABLE_AFTER: Duration = Duration::from_secs(5);

/// How long a client should wait before reconnecting after [`StreamEnd::ShuttingDown`]
/// (SSE `retry`, GraphQL `retryAfterSeconds`): long enough for the stopping replica to have
/// left the Service's endpoints.
pub const RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// One item of a stream.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamItem {
    /// The stream is live; `id` marks "now" (resume from it to miss nothing).
    Ready {
        /// Opaque id of "now".
        id: String,
        /// The namespaces the stream covers.
        namespaces: Vec<String>,
    },
    /// A change within the scope.
    Change {
        /// Opaque id of the change.
        id: String,
        /// The change.
        event: Arc<ChangeEvent>,
    },
    /// Changes were lost: list again, then follow.
    Reset(ResetReason),
    /// The last item: the stream ends.
    End(StreamEnd),
}

fn check_error(error: CheckError, budget: &AccessBudget) -> GatewayError {
    match error {
        CheckError::Failed(error) => error,
        CheckError::Exhausted(_) => GatewayError::BadRequest(format!(
            "this stream would check access to more namespaces than one request may ({} access checks); name at most {MAX_NAMESPACES} namespaces instead",
            budget.limit()
        )),
    }
}

/// Admits into `scope` the `watch` grants of `wanted` (all when `None`) the caller has in
/// `namespace`; returns whether any was admitted.
async fn admit_watchable(
    scope: &mut StreamScope,
    service: &impl StreamHost,
    caller: &Caller,
    namespace: &str,
    wanted: Option<&[TenantResource]>,
    budget: &AccessBudget,
) -> Result<bool, GatewayError> {
    let mut admitted = false;
    for resource in TenantResource::ALL {
        if wanted.is_some_and(|wanted| !wanted.contains(&resource)) {
            continue;
        }
        let check = AccessCheck::new("watch", resource.plural(), namespace);
        if let Some(grant) = budget
            .grant(service.authorizer(), caller.identity(), check)
            .await
            .map_err(|error| check_error(error, budget))?
        {
            admitted |= scope.admit(&grant);
        }
    }
    Ok(admitted)
}

/// The scope of a stream: `namespaces` (each must allow `watch` on one of `resources` at
/// least, else 403; at most [`MAX_NAMESPACES`]) or, when `None`, every namespace the caller may
/// use where they may watch one of them; `resources` `None` for all. Checks are drawn from
/// `budget`; a default scope that does not fit is refused with 400 (name the namespaces).
pub async fn scope_for(
    service: &impl StreamHost,
    caller: &Caller,
    namespaces: Option<Vec<String>>,
    resources: Option<Vec<TenantResource>>,
    budget: &AccessBudget,
) -> Result<StreamScope, GatewayError> {
    let wanted = resources.as_deref();
    let mut scope = StreamScope::new();
    match namespaces {
        Some(names) => {
            if names.len() > MAX_NAMESPACES {
                return Err(GatewayError::BadRequest(format!(
                    "at most {MAX_NAMESPACES} namespaces at once"
                )));
            }
            for namespace in names {
                if namespace.is_empty() || !is_dns1123_label(&namespace) {
                    return Err(GatewayError::BadRequest(
                        "namespace is not a valid namespace name".into(),
                    ));
                }
                if !admit_watchable(&mut scope, service, caller, &namespace, wanted, budget).await?
                {
                    return Err(GatewayError::Forbidden {
                        verb: "watch",
                        resource: TenantResource::Backups.plural(),
                        namespace,
                    });
                }
            }
        }
        None => {
            for namespace in service.usable_namespaces(caller, budget).await? {
                admit_watchable(&mut scope, service, caller, &namespace, wanted, budget).await?;
            }
        }
    }
    Ok(scope)
}

/// Follows the event log for `caller` over `scope`, resuming after `resume_after` when given.
/// The stream ends (the receiver closes) after an [`StreamItem::End`], or when the receiver is
/// dropped. Refused with [`GatewayError::TooManyStreams`] when the caller already holds the
/// most streams one user may ([`super::slots`]); the slot is held until the stream ends.
pub fn follow(
    service: Arc<impl StreamHost + 'static>,
    caller: Caller,
    scope: StreamScope,
    resume_after: Option<String>,
) -> Result<mpsc::Receiver<StreamItem>, GatewayError> {
    let slot = service.open_stream(&caller)?;
    let (sender, receiver) = mpsc::channel(64);
    tokio::spawn(async move {
        pump(service, caller, scope, resume_after, sender).await;
        drop(slot);
    });
    Ok(receiver)
}

/// How often a stream re-checks: every [`RECHECK_INTERVAL`], more often when the token cache's
/// TTL is shorter (so a review happens at least once per TTL).
pub fn recheck_interval(service: &impl StreamHost) -> Duration {
    RECHECK_INTERVAL
        .min(service.authenticator().success_ttl())
        .max(Duration::from_millis(100))
}

/// Whether the caller's token is still good, tolerating an API server that cannot be asked
/// for up to one token-cache TTL after the last confirmation.
pub(crate) async fn token_state(
    service: &impl StreamHost,
    caller: &Caller,
    confirmed: &mut Instant,
) -> Result<(), StreamEnd> {
    match service.authenticator().still_valid(caller).await {
        Ok(true) => {
            *confirmed = Instant::now();
            Ok(())
        }
        Ok(false) => Err(StreamEnd::TokenInvalid),
        Err(_) if confirmed.elapsed() <= service.authenticator().success_ttl() => Ok(()),
        Err(_) => Err(StreamEnd::TokenUnverified),
    }
}

/// Whether the caller may still watch everything in `scope`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    Allowed,
    /// A review said no.
    Denied,
    /// A review could not be made (the API server did not answer); none said no.
    Unverified,
}

impl From<Option<bool>> for Access {
    /// A review's answer ([`StreamHost::watch_access`]): `None` when it could not be made.
    fn from(answer: Option<bool>) -> Self {
        match answer {
            Some(true) => Access::Allowed,
            Some(false) => Access::Denied,
            None => Access::Unverified,
        }
    }
}

async fn access_to(service: &impl StreamHost, caller: &Caller, scope: &StreamScope) -> Access {
    let mut access = Access::Allowed;
    for (namespace, resources) in scope.iter() {
        for resource in resources {
            match Access::from(service.watch_access(caller, namespace, *resource).await) {
                Access::Allowed => {}
                Access::Denied => return Access::Denied,
                Access::Unverified => access = Access::Unverified,
            }
        }
    }
    access
}

/// What a stream does with `access`, given when access was last confirmed: a review that could
/// not be made is tolerated for one access-cache TTL (as a cached answer would be), then the
/// stream ends with [`StreamEnd::Unavailable`]; a refusal ends it at once (pure).
fn access_verdict(
    access: Access,
    confirmed: &mut Instant,
    now: Instant,
    tolerated: Duration,
) -> Result<(), StreamEnd> {
    match access {
        Access::Allowed => {
            *confirmed = now;
            Ok(())
        }
        Access::Denied => Err(StreamEnd::Revoked),
        Access::Unverified if now.saturating_duration_since(*confirmed) <= tolerated => Ok(()),
        Access::Unverified => Err(StreamEnd::Unavailable),
    }
}

async fn pump(
    service: Arc<impl StreamHost>,
    caller: Caller,
    scope: StreamScope,
    resume_after: Option<String>,
    sender: mpsc::Sender<StreamItem>,
) {
    let (resume, mut live, now) = service.follow_changes(&scope, resume_after.as_deref());
    let ready = StreamItem::Ready {
        id: now,
        namespaces: scope.namespaces().cloned().collect(),
    };
    if sender.send(ready).await.is_err() {
        return;
    }
    let mut last_sent = 0u64;
    match resume {
        Resume::Reset => {
            let reset = StreamItem::Reset(ResetReason::ResumeUnavailable);
            if sender.send(reset).await.is_err() {
                return;
            }
        }
        Resume::Events(missed) => {
            for event in missed {
                last_sent = event.sequence;
                let item = StreamItem::Change {
                    id: service.event_id(&event),
                    event,
                };
                if sender.send(item).await.is_err() {
                    return;
                }
            }
        }
    }
    let end = |why: StreamEnd| {
        let sender = sender.clone();
        async move {
            let _ = sender.send(StreamItem::End(why)).await;
        }
    };
    let mut confirmed = Instant::now();
    let mut access_confirmed = Instant::now();
    let tolerated = service.authorizer().config().allow_ttl;
    let mut recheck = tokio::time::interval(recheck_interval(&service));
    recheck.tick().await;
    loop {
        tokio::select! {
            _ = sender.closed() => return,
            () = service.shutdown().triggered() => return end(StreamEnd::ShuttingDown).await,
            _ = recheck.tick() => {
                if let Err(why) = token_state(&service, &caller, &mut confirmed).await {
                    return end(why).await;
                }
                let access = access_to(&service, &caller, &scope).await;
                if let Err(why) = access_verdict(access, &mut access_confirmed, Instant::now(), tolerated) {
                    return end(why).await;
                }
            }
            received = live.recv() => match received {
                Ok(event) => {
                    if event.sequence <= last_sent || !scope.shows(&event) {
                        continue;
                    }
                    if let Err(why) = token_state(&service, &caller, &mut confirmed).await {
                        return end(why).await;
                    }
                    let access = Access::from(service.watch_access(&caller, &event.namespace, event.resource).await);
                    if let Err(why) = access_verdict(access, &mut access_confirmed, Instant::now(), tolerated) {
                        return end(why).await;
                    }
                    last_sent = event.sequence;
                    let item = StreamItem::Change { id: service.event_id(&event), event };
                    if sender.send(item).await.is_err() {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    if sender.send(StreamItem::Reset(ResetReason::FellBehind)).await.is_err() {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_review_that_cannot_be_made_is_tolerated_for_one_ttl_and_never_called_a_refusal() {
        let start = Instant::now();
        let ttl = Duration::from_secs(30);
        let mut confirmed = start;
        let later = |s| start + Duration::from_secs(s);
        // The API server away for less than the TTL: the stream goes on.
        assert_eq!(
            access_verdict(Access::Unverified, &mut confirmed, later(20), ttl),
            Ok(())
        );
        assert_eq!(confirmed, start);
        // Back: confirmed again, and the TTL counts from there.
        assert_eq!(
            access_verdict(Access::Allowed, &mut confirmed, later(25), ttl),
            Ok(())
        );
        assert_eq!(confirmed, later(25));
        assert_eq!(
            access_verdict(Access::Unverified, &mut confirmed, later(50), ttl),
            Ok(())
        );
        // Away for longer than the TTL: ended as unavailable (reconnect later), not revoked.
        assert_eq!(
            access_verdict(Access::Unverified, &mut confirmed, later(56), ttl),
            Err(StreamEnd::Unavailable)
        );
        // A refusal ends the stream at once, whenever access was last confirmed.
        let mut fresh = later(56);
        assert_eq!(
            access_verdict(Access::Denied, &mut fresh, later(56), ttl),
            Err(StreamEnd::Revoked)
        );
    }
}
