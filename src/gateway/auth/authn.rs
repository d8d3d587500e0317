//! Authentication: a bearer token becomes an [`Identity`] through a TokenReview made with the
//! gateway's own client. Answers are cached under the token's keyed hash — successes for
//! `success_ttl`, refusals for the shorter `failure_ttl`; an API server that cannot be reached is
//! never cached (the next request tries again).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use kube::api::{Api, PostParams};

use super::cache::TtlCache;
use super::token::{BearerToken, TokenHasher};
use super::{Caller, Identity};
use crate::gateway::error::GatewayError;

/// Settings of the authenticator.
#[derive(Clone, Debug)]
pub struct AuthnConfig {
    /// Audiences sent in the TokenReview; when not empty the token must be valid for one of
    /// them. Empty: the API server's own audiences.
    pub audiences: Vec<String>,
    /// How long an accepted token's identity is remembered.
    pub success_ttl: Duration,
    /// How long a refused token is remembered (shorter).
    pub failure_ttl: Duration,
    /// Most tokens remembered.
    pub capacity: usize,
}

impl Default for AuthnConfig {
    fn default() -> Self {
        AuthnConfig {
            audiences: Vec::new(),
            success_ttl: Duration::from_secs(30),
            failure_ttl: Duration::from_secs(5),
            capacity: 10_000,
        }
    }
}

/// Counters for `/metrics`.
#[derive(Debug, Default)]
pub struct AuthnCounters {
    /// Answers served from the cache.
    pub cache_hits: AtomicU64,
    /// TokenReviews sent.
    pub reviews: AtomicU64,
    /// Tokens refused (cached or not).
    pub refused: AtomicU64,
}

/// Turns tokens into identities.
pub struct Authenticator {
    client: kube::Client,
    config: AuthnConfig,
    hasher: TokenHasher,
    cache: TtlCache<super::TokenKey, Option<Arc<Identity>>>,
    /// Counters for `/metrics`.
    pub counters: AuthnCounters,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Authenticator {
    /// An authenticator sending TokenReviews through `client` (the gateway's identity).
    pub fn new(client: kube::Client, config: AuthnConfig, hasher: TokenHasher) -> Self {
        let cache = TtlCache::new(config.capacity);
        Authenticator {
            client,
            config,
            hasher,
            cache,
            counters: AuthnCounters::default(),
        }
    }

    /// The hasher the token keys come from.
    pub fn hasher(&self) -> &TokenHasher {
        &self.hasher
    }

    /// The caller holding `token`, or 401.
    pub async fn authenticate(&self, token: BearerToken) -> Result<Caller, GatewayError> {
        let key = self.hasher.key_of(&token);
        let known = match self.cache.get(&key) {
            Some(known) => {
                self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
                known
            }
            None => {
                self.counters.reviews.fetch_add(1, Ordering::Relaxed);
                let reviewed = self.review(&token).await?;
                let ttl = if reviewed.is_some() {
                    self.config.success_ttl
                } else {
                    self.config.failure_ttl
                };
                self.cache.insert(key, reviewed.clone(), ttl);
                reviewed
            }
        };
        match known {
            Some(identity) => Ok(Caller::new(identity, token, key)),
            None => {
                self.counters.refused.fetch_add(1, Ordering::Relaxed);
                Err(GatewayError::Unauthenticated)
            }
        }
    }

    async fn review(&self, token: &BearerToken) -> Result<Option<Arc<Identity>>, GatewayError> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.expose().to_string()),
                audiences: (!self.config.audiences.is_empty())
                    .then(|| self.config.audiences.clone()),
            },
            ..Default::default()
        };
        let answer = Api::<TokenReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(|error| {
                // kube's error text never contains the request body (the token).
                tracing::warn!(error = %error, "TokenReview failed");
                GatewayError::Unavailable("the API server could not check the token".into())
            })?;
        let Some(status) = answer.status else {
            return Ok(None);
        };
        if status.authenticated != Some(true) {
            return Ok(None);
        }
        if !self.config.audiences.is_empty() {
            let granted = status.audiences.unwrap_or_default();
            if !granted.iter().any(|a| self.config.audiences.contains(a)) {
                return Ok(None);
            }
        }
        let Some(user) = status.user else {
            return Ok(None);
        };
        let username = user.username.unwrap_or_default();
        if username.is_empty() {
            return Ok(None);
        }
        Ok(Some(Arc::new(Identity {
            username,
            uid: user.uid.unwrap_or_default(),
            groups: user.groups.unwrap_or_default(),
            extra: user.extra.unwrap_or_default(),
        })))
    }
}
