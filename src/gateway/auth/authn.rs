//! Authentication: a bearer token becomes an [`Identity`] through a TokenReview made with the
//! gateway's own client. Answers are cached under the token's keyed hash — successes for
//! `success_ttl`, refusals for the shorter `failure_ttl`; an API server that cannot be reached is
//! never cached (the next request tries again).
//!
//! Before a TokenReview is sent — and for a token already refused — the request draws from its
//! client address's bucket in the [`PreAuthLimiter`]; an empty bucket is a 429 with
//! `Retry-After`, and no TokenReview. A token whose success is cached never touches that
//! limiter, so callers with valid tokens are not slowed by a flood of bad ones.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use kube::api::{Api, PostParams};

use super::cache::{SingleFlight, TtlCache};
use super::token::{BearerToken, TokenHasher};
use super::{Caller, Identity};
use crate::gateway::error::GatewayError;
use crate::gateway::ratelimit::{ClientAddress, PreAuthLimitConfig, PreAuthLimiter};

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
    /// Requests with a not-yet-known-good token refused by the pre-authentication limiter.
    pub pre_auth_limited: AtomicU64,
}

/// Turns tokens into identities.
pub struct Authenticator {
    client: kube::Client,
    config: AuthnConfig,
    hasher: TokenHasher,
    cache: TtlCache<super::TokenKey, Option<Arc<Identity>>>,
    /// Re-checks under way: the streams of one token missing the cache together share one
    /// TokenReview.
    rechecks: SingleFlight<super::TokenKey, Result<Option<Arc<Identity>>, GatewayError>>,
    pre_auth: PreAuthLimiter,
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
    /// An authenticator sending TokenReviews through `client` (the gateway's identity), with
    /// the default pre-authentication limit.
    pub fn new(client: kube::Client, config: AuthnConfig, hasher: TokenHasher) -> Self {
        let cache = TtlCache::new(config.capacity);
        Authenticator {
            client,
            config,
            hasher,
            cache,
            rechecks: SingleFlight::default(),
            pre_auth: PreAuthLimiter::new(PreAuthLimitConfig::default()),
            counters: AuthnCounters::default(),
        }
    }

    /// The same authenticator with the pre-authentication limit `limit`.
    pub fn with_pre_auth_limit(mut self, limit: PreAuthLimitConfig) -> Self {
        self.pre_auth = PreAuthLimiter::new(limit);
        self
    }

    /// The pre-authentication limiter.
    pub fn pre_auth_limiter(&self) -> &PreAuthLimiter {
        &self.pre_auth
    }

    /// The hasher the token keys come from.
    pub fn hasher(&self) -> &TokenHasher {
        &self.hasher
    }

    /// The caller holding `token`, or 401; 429 when the token is not known to be good and
    /// `client` has used up its pre-authentication bucket (checked before any TokenReview).
    pub async fn authenticate(
        &self,
        token: BearerToken,
        client: ClientAddress,
    ) -> Result<Caller, GatewayError> {
        let key = self.hasher.key_of(&token);
        let known = match self.cache.get(&key) {
            Some(Some(identity)) => {
                self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
                Some(identity)
            }
            Some(None) => {
                self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
                self.admit_unverified(client)?;
                None
            }
            None => {
                self.admit_unverified(client)?;
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

    /// How long an accepted token is trusted without a new TokenReview: long-lived streams
    /// re-check their token at least this often.
    pub fn success_ttl(&self) -> Duration {
        self.config.success_ttl
    }

    /// Whether `caller`'s token still authenticates as the same identity, for long-lived
    /// streams: answered from the cache while the last review is fresh, else by a new
    /// TokenReview (cached as [`Authenticator::authenticate`] caches it). A stream's re-check
    /// is the server's own doing, so it never draws from the client's pre-authentication
    /// bucket. `Err` only when the API server cannot be asked (the caller decides how long to
    /// tolerate that).
    pub async fn still_valid(&self, caller: &Caller) -> Result<bool, GatewayError> {
        let key = caller.token_key();
        let current = match self.cache.get(&key) {
            Some(known) => {
                self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
                known
            }
            None => {
                self.rechecks
                    .run(key, || async {
                        // Answered by a review that finished since the miss above.
                        if let Some(known) = self.cache.get(&key) {
                            return Ok(known);
                        }
                        self.counters.reviews.fetch_add(1, Ordering::Relaxed);
                        let reviewed = self.review(caller.token()).await?;
                        let ttl = if reviewed.is_some() {
                            self.config.success_ttl
                        } else {
                            self.config.failure_ttl
                        };
                        self.cache.insert(key, reviewed.clone(), ttl);
                        Ok(reviewed)
                    })
                    .await?
            }
        };
        let valid = current.is_some_and(|identity| {
            identity.username == caller.identity().username && identity.uid == caller.identity().uid
        });
        if !valid {
            self.counters.refused.fetch_add(1, Ordering::Relaxed);
        }
        Ok(valid)
    }

    /// Draws one request with a not-yet-known-good token from `client`'s bucket.
    fn admit_unverified(&self, client: ClientAddress) -> Result<(), GatewayError> {
        self.pre_auth.check(client).map_err(|retry_after| {
            self.counters
                .pre_auth_limited
                .fetch_add(1, Ordering::Relaxed);
            tracing::debug!(client = %client, "unverified token over the pre-authentication limit");
            GatewayError::RateLimited { retry_after }
        })
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use axum::Json;
    use axum::routing::post;
    use serde_json::{Value, json};

    /// An API server that accepts only the token `good` (as alice), answering each TokenReview
    /// after `delay`, and the count of reviews it answered.
    fn token_reviews(delay: Duration) -> (kube::Client, Arc<AtomicU64>) {
        let reviews = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&reviews);
        let api = axum::Router::new().route(
            "/apis/authentication.k8s.io/v1/tokenreviews",
            post(move |Json(review): Json<Value>| {
                let counted = Arc::clone(&counted);
                async move {
                    counted.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(delay).await;
                    let good = review["spec"]["token"] == "good";
                    let status = if good {
                        json!({"authenticated": true, "user": {"username": "alice", "uid": "1"}})
                    } else {
                        json!({"authenticated": false})
                    };
                    Json(json!({
                        "apiVersion": "authentication.k8s.io/v1",
                        "kind": "TokenReview",
                        "spec": review["spec"],
                        "status": status,
                    }))
                }
            }),
        );
        (kube::Client::new(api, "default"), reviews)
    }

    /// An authenticator whose API server accepts only the token `good` (as alice) and counts
    /// the TokenReviews it answers.
    fn authenticator(burst: u32) -> (Authenticator, Arc<AtomicU64>) {
        let (client, reviews) = token_reviews(Duration::ZERO);
        let authenticator =
            Authenticator::new(client, AuthnConfig::default(), TokenHasher::random())
                .with_pre_auth_limit(PreAuthLimitConfig {
                    burst,
                    per_second: 0.001,
                    max_clients: 100,
                });
        (authenticator, reviews)
    }

    fn client(ip: &str) -> ClientAddress {
        ClientAddress::of_ip(ip.parse().unwrap())
    }

    #[tokio::test]
    async fn unverified_tokens_are_limited_before_review_and_cached_good_ones_never() {
        let (authn, reviews) = authenticator(3);
        let flooder = client("10.0.0.1");
        // alice's token is reviewed once (one unit of her address's bucket), then cached.
        let alice = authn
            .authenticate(BearerToken::new("good"), flooder)
            .await
            .unwrap();
        assert_eq!(alice.username(), "alice");
        for n in 0..2 {
            let refused = authn
                .authenticate(BearerToken::new(format!("bad-{n}")), flooder)
                .await;
            assert!(matches!(refused, Err(GatewayError::Unauthenticated)));
        }
        assert_eq!(reviews.load(Ordering::SeqCst), 3);
        for n in 2..20 {
            let limited = authn
                .authenticate(BearerToken::new(format!("bad-{n}")), flooder)
                .await;
            let Err(GatewayError::RateLimited { retry_after }) = limited else {
                panic!("not rate limited: {limited:?}");
            };
            assert!(retry_after >= Duration::from_secs(1));
        }
        // A cached refusal also draws from the bucket.
        assert!(matches!(
            authn.authenticate(BearerToken::new("bad-0"), flooder).await,
            Err(GatewayError::RateLimited { .. })
        ));
        // No TokenReview was sent for any of them.
        assert_eq!(reviews.load(Ordering::SeqCst), 3);
        assert_eq!(authn.counters.pre_auth_limited.load(Ordering::Relaxed), 19);
        // The cached valid token is not limited, from the same address.
        for _ in 0..50 {
            authn
                .authenticate(BearerToken::new("good"), flooder)
                .await
                .unwrap();
        }
        // Another address has its own bucket.
        assert!(matches!(
            authn
                .authenticate(BearerToken::new("bad-x"), client("10.0.0.2"))
                .await,
            Err(GatewayError::Unauthenticated)
        ));
        assert_eq!(reviews.load(Ordering::SeqCst), 4);
    }

    #[tokio::test]
    async fn a_stream_recheck_reviews_again_after_the_ttl_and_sees_a_revoked_token() {
        let revoked = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reviews = Arc::new(AtomicU64::new(0));
        let (seen, counted) = (Arc::clone(&revoked), Arc::clone(&reviews));
        let api = axum::Router::new().route(
            "/apis/authentication.k8s.io/v1/tokenreviews",
            post(move |Json(review): Json<Value>| {
                let (seen, counted) = (Arc::clone(&seen), Arc::clone(&counted));
                async move {
                    counted.fetch_add(1, Ordering::SeqCst);
                    let status = if seen.load(Ordering::SeqCst) {
                        json!({"authenticated": false})
                    } else {
                        json!({"authenticated": true, "user": {"username": "alice", "uid": "1"}})
                    };
                    Json(
                        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                        "spec": review["spec"], "status": status}),
                    )
                }
            }),
        );
        let config = AuthnConfig {
            success_ttl: Duration::from_millis(200),
            ..AuthnConfig::default()
        };
        let authn = Authenticator::new(
            kube::Client::new(api, "default"),
            config,
            TokenHasher::random(),
        )
        .with_pre_auth_limit(PreAuthLimitConfig {
            burst: 1,
            per_second: 0.001,
            max_clients: 10,
        });
        let caller = authn
            .authenticate(BearerToken::new("good"), ClientAddress::Unknown)
            .await
            .unwrap();
        // Within the TTL: the cache answers.
        assert!(authn.still_valid(&caller).await.unwrap());
        assert_eq!(reviews.load(Ordering::SeqCst), 1);
        revoked.store(true, Ordering::SeqCst);
        assert!(authn.still_valid(&caller).await.unwrap());
        // After it: a new review, which no pre-authentication bucket (spent) holds up.
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert!(!authn.still_valid(&caller).await.unwrap());
        assert_eq!(reviews.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn streams_rechecking_one_token_together_share_one_review() {
        // A review takes a while, as a real one does: the others arrive meanwhile.
        let (client, reviews) = token_reviews(Duration::from_millis(100));
        let config = AuthnConfig {
            success_ttl: Duration::from_millis(200),
            ..AuthnConfig::default()
        };
        let authn = Arc::new(Authenticator::new(client, config, TokenHasher::random()));
        let caller = authn
            .authenticate(BearerToken::new("good"), ClientAddress::Unknown)
            .await
            .unwrap();
        assert_eq!(reviews.load(Ordering::SeqCst), 1);
        tokio::time::sleep(Duration::from_millis(250)).await;
        // 100 streams of the token miss the expired entry at once.
        let rechecks: Vec<_> = (0..100)
            .map(|_| {
                let (authn, caller) = (Arc::clone(&authn), caller.clone());
                tokio::spawn(async move { authn.still_valid(&caller).await })
            })
            .collect();
        for recheck in rechecks {
            assert!(recheck.await.unwrap().unwrap());
        }
        assert_eq!(reviews.load(Ordering::SeqCst), 2);
    }
}
