//! Kubernetes clients that act AS THE CALLER: every write of the gateway (and, on OpenShift, the
//! projects list behind "my namespaces") goes to the API server with the caller's own bearer token, so RBAC and admission stay the enforcement point and
//! audit logs name the real user. Production builds them from the gateway's `kube::Config`
//! with the credentials replaced by the token (cached briefly under the token's keyed hash);
//! tests plug in any function, e.g. one returning an in-process emulator client.

use std::sync::Arc;
use std::time::Duration;

use crate::api::client_identity::Component;
use crate::gateway::auth::cache::TtlCache;
use crate::gateway::auth::{BearerToken, TokenKey};
use crate::gateway::error::GatewayError;

/// Makes a client that authenticates as the holder of a token.
pub trait UserClients: Send + Sync {
    /// A client sending `token` (whose keyed hash is `key`).
    fn client_for(&self, token: &BearerToken, key: TokenKey) -> Result<kube::Client, GatewayError>;
}

/// [`UserClients`] from a function (tests, the demo's in-process emulator).
pub struct FnUserClients<F>(pub F);

impl<F> UserClients for FnUserClients<F>
where
    F: Fn(&str) -> kube::Client + Send + Sync,
{
    fn client_for(
        &self,
        token: &BearerToken,
        _key: TokenKey,
    ) -> Result<kube::Client, GatewayError> {
        Ok((self.0)(token.expose()))
    }
}

/// [`UserClients`] from the gateway's kube configuration: same server, CA and timeouts; the
/// gateway's own credentials (token, client certificate, exec plugin) removed and the caller's
/// token put in their place.
pub struct KubeConfigClients {
    base: kube::Config,
    cache: TtlCache<TokenKey, kube::Client>,
    ttl: Duration,
}

impl KubeConfigClients {
    /// Clients derived from `base`, each kept for `ttl`.
    pub fn new(base: kube::Config, ttl: Duration, capacity: usize) -> Self {
        KubeConfigClients {
            base,
            cache: TtlCache::new(capacity),
            ttl,
        }
    }
}

impl UserClients for KubeConfigClients {
    fn client_for(&self, token: &BearerToken, key: TokenKey) -> Result<kube::Client, GatewayError> {
        if let Some(client) = self.cache.get(&key) {
            return Ok(client);
        }
        let mut config = self.base.clone();
        config.auth_info = kube::config::AuthInfo {
            token: Some(secrecy::SecretString::from(token.expose().to_string())),
            ..Default::default()
        };
        // Writes made with the caller's token are still the gateway's: same field manager.
        let client = Component::Gateway
            .identity()
            .client(config)
            .map_err(|error| {
                tracing::warn!(error = %error, "cannot build a client for the caller");
                GatewayError::Upstream
            })?;
        self.cache.insert(key, client.clone(), self.ttl);
        Ok(client)
    }
}

/// Shared handle.
pub type SharedUserClients = Arc<dyn UserClients>;
