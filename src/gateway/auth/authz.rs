//! Authorization: every namespace-scoped action is a SubjectAccessReview for the caller's user,
//! uid, groups and extra, with the exact verb, group `oadp.openshift.io`, resource, subresource
//! and name. Decisions are cached keyed on the whole identity and every attribute: allows for
//! at most `allow_ttl` (so a removed RoleBinding takes effect within it), denials for
//! `deny_ttl`.
//!
//! A granted check yields an [`Authorized`] value, which only this module can make; the
//! service's read paths take one, so a handler cannot read a namespace it did not authorize.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};

use super::Identity;
use super::cache::{SingleFlight, TtlCache};
use crate::api::nonadmin::GROUP;
use crate::gateway::error::GatewayError;
use crate::history::TenantNamespace;
use crate::manifest::visibility::{ReadCheck, Readable};

/// Longest an allow decision may be cached.
pub const MAX_ALLOW_TTL: Duration = Duration::from_secs(30);

/// Settings of the authorizer.
#[derive(Clone, Debug)]
pub struct AuthzConfig {
    /// How long an allow is remembered (capped at [`MAX_ALLOW_TTL`]).
    pub allow_ttl: Duration,
    /// How long a denial is remembered.
    pub deny_ttl: Duration,
    /// Most decisions remembered.
    pub capacity: usize,
}

impl Default for AuthzConfig {
    fn default() -> Self {
        AuthzConfig {
            allow_ttl: MAX_ALLOW_TTL,
            deny_ttl: Duration::from_secs(5),
            capacity: 50_000,
        }
    }
}

/// One thing to check: `verb` on `resource` (group `oadp.openshift.io`) in `namespace`,
/// optionally a `subresource` and one object `name`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AccessCheck {
    /// Kubernetes verb (get, list, watch, create, patch, delete …).
    pub verb: &'static str,
    /// Plural resource, e.g. `nonadminbackups`.
    pub resource: &'static str,
    /// Subresource, empty for none.
    pub subresource: &'static str,
    /// Namespace.
    pub namespace: String,
    /// Object name, empty for collection verbs.
    pub name: String,
}

impl AccessCheck {
    /// `verb` on the collection `resource` in `namespace`.
    pub fn new(verb: &'static str, resource: &'static str, namespace: &str) -> Self {
        AccessCheck {
            verb,
            resource,
            subresource: "",
            namespace: namespace.to_string(),
            name: String::new(),
        }
    }

    /// The same check on the object `name`.
    pub fn named(mut self, name: &str) -> Self {
        self.name = name.to_string();
        self
    }
}

/// Proof that the caller passed an access check in `namespace`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Authorized {
    namespace: String,
    resource: &'static str,
    verb: &'static str,
}

impl Authorized {
    /// The proof for `check`, which a review allowed: made only in this module (and the
    /// per-request budget beside it), so only an allowed check yields one.
    pub(in crate::gateway::auth) fn granted(check: AccessCheck) -> Self {
        Authorized {
            namespace: check.namespace,
            resource: check.resource,
            verb: check.verb,
        }
    }

    /// A proof made up for unit tests of what takes one.
    #[cfg(test)]
    pub(crate) fn assumed_for_tests(
        verb: &'static str,
        resource: &'static str,
        namespace: &str,
    ) -> Self {
        Authorized::granted(AccessCheck::new(verb, resource, namespace))
    }

    /// The namespace the caller may act in.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The resource the check was about.
    pub fn resource(&self) -> &'static str {
        self.resource
    }

    /// The verb the check was about.
    pub fn verb(&self) -> &'static str {
        self.verb
    }

    /// The namespace the check was about as it is now — its name and UID — given `current`,
    /// the namespace of that name in the gateway's namespace cache; `None` when it does not
    /// exist. History reads take one: a namespace created again under the same name has
    /// another UID, so its owner reads nothing its predecessor left.
    pub fn tenant(&self, current: Option<&Namespace>) -> Option<TenantNamespace> {
        let current = current?;
        if current.metadata.name.as_deref() != Some(self.namespace.as_str()) {
            return None;
        }
        TenantNamespace::new(self.namespace.clone(), current.metadata.uid.clone()?)
    }
}

/// Counters for `/metrics`.
#[derive(Debug, Default)]
pub struct AuthzCounters {
    /// Decisions served from the cache.
    pub cache_hits: AtomicU64,
    /// SubjectAccessReviews sent.
    pub reviews: AtomicU64,
    /// Checks denied.
    pub denied: AtomicU64,
}

type DecisionKey = (Arc<Identity>, AccessCheck);
type ReadKey = (Arc<Identity>, ReadCheck);

/// Most distinct [`ReadCheck`]s one answer sends reviews for: a backup's contents rarely span
/// more than a few dozen resources, and a forged tarball naming thousands of namespaces must
/// not become thousands of reviews. Items whose check is past the bound are hidden.
pub const MAX_READ_CHECKS: usize = 128;

/// Answers access checks with SubjectAccessReviews.
pub struct Authorizer {
    client: kube::Client,
    config: AuthzConfig,
    cache: TtlCache<DecisionKey, bool>,
    /// Reviews under way: concurrent misses of one decision share one review.
    in_flight: SingleFlight<DecisionKey, Result<bool, GatewayError>>,
    reads: TtlCache<ReadKey, bool>,
    /// Counters for `/metrics`.
    pub counters: AuthzCounters,
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizer")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Authorizer {
    /// An authorizer sending reviews through `client` (the gateway's identity).
    pub fn new(client: kube::Client, mut config: AuthzConfig) -> Self {
        config.allow_ttl = config.allow_ttl.min(MAX_ALLOW_TTL);
        let cache = TtlCache::new(config.capacity);
        let reads = TtlCache::new(config.capacity);
        Authorizer {
            client,
            config,
            cache,
            in_flight: SingleFlight::default(),
            reads,
            counters: AuthzCounters::default(),
        }
    }

    /// The effective settings.
    pub fn config(&self) -> &AuthzConfig {
        &self.config
    }

    /// Whether `identity` may do `check`.
    pub async fn allowed(
        &self,
        identity: &Arc<Identity>,
        check: &AccessCheck,
    ) -> Result<bool, GatewayError> {
        let key = (identity.clone(), check.clone());
        if let Some(allowed) = self.cache.get(&key) {
            self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
            if !allowed {
                self.counters.denied.fetch_add(1, Ordering::Relaxed);
            }
            return Ok(allowed);
        }
        let allowed = self
            .in_flight
            .run(key.clone(), || async {
                // Answered by a review that finished since the miss above.
                if let Some(allowed) = self.cache.get(&key) {
                    return Ok(allowed);
                }
                self.counters.reviews.fetch_add(1, Ordering::Relaxed);
                let allowed = self.review(identity, check).await?;
                let ttl = if allowed {
                    self.config.allow_ttl
                } else {
                    self.config.deny_ttl
                };
                self.cache.insert(key.clone(), allowed, ttl);
                Ok(allowed)
            })
            .await?;
        if !allowed {
            self.counters.denied.fetch_add(1, Ordering::Relaxed);
        }
        Ok(allowed)
    }

    /// [`Authorized`] when `identity` may do `check`, else 403 naming only what the caller
    /// asked for (never whether the object exists).
    pub async fn require(
        &self,
        identity: &Arc<Identity>,
        check: AccessCheck,
    ) -> Result<Authorized, GatewayError> {
        if self.allowed(identity, &check).await? {
            Ok(Authorized::granted(check))
        } else {
            Err(GatewayError::Forbidden {
                verb: check.verb,
                resource: check.resource,
                namespace: check.namespace,
            })
        }
    }

    /// [`Authorized`] when `identity` may do `check`, `None` when not (for reads that skip
    /// what the caller may not see instead of refusing).
    pub async fn grant(
        &self,
        identity: &Arc<Identity>,
        check: AccessCheck,
    ) -> Result<Option<Authorized>, GatewayError> {
        Ok(self
            .allowed(identity, &check)
            .await?
            .then(|| Authorized::granted(check)))
    }

    /// [`Authorized`] for the first of `checks` that is allowed; 403 for the first check when
    /// none is.
    pub async fn require_any(
        &self,
        identity: &Arc<Identity>,
        checks: Vec<AccessCheck>,
    ) -> Result<Authorized, GatewayError> {
        let mut first = None;
        for check in checks {
            if self.allowed(identity, &check).await? {
                return Ok(Authorized::granted(check));
            }
            first.get_or_insert(check);
        }
        Err(match first {
            Some(check) => GatewayError::Forbidden {
                verb: check.verb,
                resource: check.resource,
                namespace: check.namespace,
            },
            None => GatewayError::BadRequest("nothing to authorize".into()),
        })
    }

    /// Whether `identity` may read what `check` names (a resource of any group, for what a
    /// backup contains), cached as [`allowed`](Self::allowed) is.
    pub async fn may_read(
        &self,
        identity: &Arc<Identity>,
        check: &ReadCheck,
    ) -> Result<bool, GatewayError> {
        let key = (identity.clone(), check.clone());
        if let Some(allowed) = self.reads.get(&key) {
            self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(allowed);
        }
        self.counters.reviews.fetch_add(1, Ordering::Relaxed);
        let allowed = self
            .send_review(
                identity,
                ResourceAttributes {
                    group: Some(check.group.clone()),
                    resource: Some(check.resource.clone()),
                    verb: Some(check.verb.to_string()),
                    namespace: (!check.namespace.is_empty()).then(|| check.namespace.clone()),
                    name: (!check.name.is_empty()).then(|| check.name.clone()),
                    ..Default::default()
                },
            )
            .await?;
        let ttl = if allowed {
            self.config.allow_ttl
        } else {
            self.config.deny_ttl
        };
        self.reads.insert(key, allowed, ttl);
        Ok(allowed)
    }

    /// What of `checks` `identity` passes, as a [`Readable`]: at most [`MAX_READ_CHECKS`]
    /// reviews (the rest count as denied), a few at a time.
    pub async fn readable(
        &self,
        identity: &Arc<Identity>,
        checks: impl IntoIterator<Item = ReadCheck>,
    ) -> Result<Readable, GatewayError> {
        use futures::StreamExt as _;
        let answers: Vec<Result<(ReadCheck, bool), GatewayError>> =
            futures::stream::iter(checks.into_iter().take(MAX_READ_CHECKS))
                .map(|check| async move {
                    let allowed = self.may_read(identity, &check).await?;
                    Ok((check, allowed))
                })
                .buffer_unordered(8)
                .collect()
                .await;
        let mut granted = Vec::new();
        for answer in answers {
            let (check, allowed) = answer?;
            if allowed {
                granted.push(check);
            }
        }
        Ok(Readable::granted(granted))
    }

    async fn review(&self, identity: &Identity, check: &AccessCheck) -> Result<bool, GatewayError> {
        self.send_review(
            identity,
            ResourceAttributes {
                group: Some(GROUP.to_string()),
                resource: Some(check.resource.to_string()),
                verb: Some(check.verb.to_string()),
                namespace: Some(check.namespace.clone()),
                subresource: (!check.subresource.is_empty()).then(|| check.subresource.to_string()),
                name: (!check.name.is_empty()).then(|| check.name.clone()),
                ..Default::default()
            },
        )
        .await
    }

    async fn send_review(
        &self,
        identity: &Identity,
        attributes: ResourceAttributes,
    ) -> Result<bool, GatewayError> {
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(identity.username.clone()),
                uid: (!identity.uid.is_empty()).then(|| identity.uid.clone()),
                groups: Some(identity.groups.clone()),
                extra: (!identity.extra.is_empty()).then(|| identity.extra.clone()),
                resource_attributes: Some(attributes),
                ..Default::default()
            },
            ..Default::default()
        };
        let answer = Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(|error| {
                tracing::warn!(error = %error, "SubjectAccessReview failed");
                GatewayError::Unavailable("the API server could not check permissions".into())
            })?;
        Ok(answer
            .status
            .is_some_and(|status| status.allowed && status.denied != Some(true)))
    }
}
