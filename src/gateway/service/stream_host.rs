//! The gateway's service as the host of live streams (Server-Sent Events and GraphQL
//! subscriptions): the narrow interface streams use ([`StreamHost`]), answered by the service's
//! own methods, so the streams never depend on the service.

use std::sync::Arc;

use tokio::sync::broadcast;

use super::GatewayService;
use crate::gateway::auth::{AccessBudget, Authenticator, Authorizer, Caller};
use crate::gateway::error::GatewayError;
use crate::gateway::events::follow::StreamHost;
use crate::gateway::events::slots::StreamSlot;
use crate::gateway::events::{ChangeEvent, Resume, StreamScope};
use crate::gateway::resources::TenantResource;
use crate::shutdown::Shutdown;

// Each method calls the service's inherent method of the same name (inherent methods take
// precedence over trait methods in `GatewayService::name` paths).
impl StreamHost for GatewayService {
    fn authenticator(&self) -> &Authenticator {
        GatewayService::authenticator(self)
    }

    fn authorizer(&self) -> &Authorizer {
        GatewayService::authorizer(self)
    }

    fn shutdown(&self) -> &Shutdown {
        GatewayService::shutdown(self)
    }

    async fn usable_namespaces(
        &self,
        caller: &Caller,
        budget: &AccessBudget,
    ) -> Result<Vec<String>, GatewayError> {
        GatewayService::usable_namespaces(self, caller, budget).await
    }

    async fn watch_access(
        &self,
        caller: &Caller,
        namespace: &str,
        resource: TenantResource,
    ) -> Option<bool> {
        GatewayService::watch_access(self, caller, namespace, resource).await
    }

    fn open_stream(&self, caller: &Caller) -> Result<StreamSlot, GatewayError> {
        GatewayService::open_stream(self, caller)
    }

    fn follow_changes(
        &self,
        scope: &StreamScope,
        last_event_id: Option<&str>,
    ) -> (Resume, broadcast::Receiver<Arc<ChangeEvent>>, String) {
        GatewayService::follow_changes(self, scope, last_event_id)
    }

    fn event_id(&self, event: &ChangeEvent) -> String {
        GatewayService::event_id(self, event)
    }
}
