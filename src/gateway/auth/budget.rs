//! A per-request bound on access checks: what one request (one REST call, one GraphQL document
//! with all its fields and aliases, one GraphQL operation on a WebSocket, one stream opening)
//! may ask the [`Authorizer`] about when it fans out over many namespaces — "my namespaces",
//! phase counts of every namespace, the default scope of a change stream.
//!
//! Each distinct check of the request draws one unit, whether the authorizer answers it from
//! its cache or with a SubjectAccessReview, so the budget bounds the reviews a request can
//! cause; the same check asked twice in one request (two aliases of `namespaces`) is answered
//! once, even when asked concurrently. An empty budget refuses further checks with
//! [`BudgetExhausted`]; callers stop there and tell the client how to go on (a `continue`
//! token), never silently show less.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

use super::{AccessCheck, Authorized, Authorizer, Identity};
use crate::gateway::error::GatewayError;

/// Distinct access checks one request may make by default.
pub const DEFAULT_REVIEW_BUDGET: usize = 1000;

/// The request's budget is spent: the check was not made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BudgetExhausted;

/// Why a budgeted check has no answer.
#[derive(Clone, Debug, PartialEq)]
pub enum CheckError {
    /// The request's budget is spent.
    Exhausted(BudgetExhausted),
    /// The authorizer failed (API server unreachable …).
    Failed(GatewayError),
}

impl From<GatewayError> for CheckError {
    fn from(error: GatewayError) -> Self {
        CheckError::Failed(error)
    }
}

type Answer = Arc<OnceCell<bool>>;

/// The access checks of one request.
#[derive(Debug)]
pub struct AccessBudget {
    limit: usize,
    remaining: AtomicUsize,
    answers: Mutex<HashMap<(Arc<Identity>, AccessCheck), Answer>>,
    spent: AtomicU64,
}

impl Default for AccessBudget {
    fn default() -> Self {
        Self::new(DEFAULT_REVIEW_BUDGET)
    }
}

impl AccessBudget {
    /// A budget of `limit` distinct checks (at least one).
    pub fn new(limit: usize) -> Self {
        let limit = limit.max(1);
        AccessBudget {
            limit,
            remaining: AtomicUsize::new(limit),
            answers: Mutex::new(HashMap::new()),
            spent: AtomicU64::new(0),
        }
    }

    /// The budget's size.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Distinct checks made so far.
    pub fn spent(&self) -> u64 {
        self.spent.load(Ordering::Relaxed)
    }

    /// How many more distinct checks may be made.
    pub fn remaining(&self) -> usize {
        self.remaining.load(Ordering::Relaxed)
    }

    /// Whether at least `units` more distinct checks may be made.
    pub fn can_afford(&self, units: usize) -> bool {
        self.remaining.load(Ordering::Relaxed) >= units
    }

    fn draw(&self) -> Result<(), BudgetExhausted> {
        self.remaining
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                left.checked_sub(1)
            })
            .map(|_| ())
            .map_err(|_| BudgetExhausted)
    }

    /// Whether `identity` may do `check`, drawing one unit the first time this request asks.
    pub async fn allowed(
        &self,
        authz: &Authorizer,
        identity: &Arc<Identity>,
        check: &AccessCheck,
    ) -> Result<bool, CheckError> {
        let key = (Arc::clone(identity), check.clone());
        let answer: Answer = {
            let Ok(mut answers) = self.answers.lock() else {
                return Err(CheckError::Failed(GatewayError::Unavailable(
                    "the access checks of this request are unavailable".into(),
                )));
            };
            match answers.get(&key) {
                Some(answer) => answer.clone(),
                None => {
                    self.draw().map_err(CheckError::Exhausted)?;
                    self.spent.fetch_add(1, Ordering::Relaxed);
                    let answer = Answer::default();
                    answers.insert(key, answer.clone());
                    answer
                }
            }
        };
        let allowed = answer
            .get_or_try_init(|| authz.allowed(identity, check))
            .await?;
        Ok(*allowed)
    }

    /// [`Authorized`] when `identity` may do `check` (drawn as [`AccessBudget::allowed`]),
    /// `None` when not.
    pub async fn grant(
        &self,
        authz: &Authorizer,
        identity: &Arc<Identity>,
        check: AccessCheck,
    ) -> Result<Option<Authorized>, CheckError> {
        Ok(self
            .allowed(authz, identity, &check)
            .await?
            .then(|| Authorized::granted(check)))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::gateway::auth::AuthzConfig;
    use axum::Json;
    use axum::routing::post;
    use serde_json::{Value, json};

    /// An authorizer whose API server allows only `list` and counts the reviews it answers.
    fn authorizer() -> (Authorizer, Arc<AtomicU64>) {
        let reviews = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&reviews);
        let api = axum::Router::new().route(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            post(move |Json(review): Json<Value>| {
                let counted = Arc::clone(&counted);
                async move {
                    counted.fetch_add(1, Ordering::SeqCst);
                    // Slow enough that concurrent askers overlap.
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    let allowed = review["spec"]["resourceAttributes"]["verb"] == "list";
                    Json(json!({
                        "apiVersion": "authorization.k8s.io/v1",
                        "kind": "SubjectAccessReview",
                        "spec": review["spec"],
                        "status": {"allowed": allowed},
                    }))
                }
            }),
        );
        let client = kube::Client::new(api, "default");
        (Authorizer::new(client, AuthzConfig::default()), reviews)
    }

    fn identity() -> Arc<Identity> {
        Arc::new(Identity {
            username: "bob".into(),
            uid: "1".into(),
            groups: Vec::new(),
            extra: Default::default(),
        })
    }

    #[tokio::test]
    async fn concurrent_misses_from_different_requests_share_one_review() {
        // Many streams of one user re-checking at the same moment, each without a budget.
        let (authz, reviews) = authorizer();
        let bob = identity();
        let check = AccessCheck::new("list", "nonadminbackups", "team-a");
        let answers =
            futures::future::join_all((0..100).map(|_| authz.allowed(&bob, &check))).await;
        assert!(answers.iter().all(|a| a == &Ok(true)));
        assert_eq!(reviews.load(Ordering::SeqCst), 1);
        // A denied answer is shared the same way.
        let denied = AccessCheck::new("delete", "nonadminbackups", "team-a");
        let answers =
            futures::future::join_all((0..100).map(|_| authz.allowed(&bob, &denied))).await;
        assert!(answers.iter().all(|a| a == &Ok(false)));
        assert_eq!(reviews.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn the_same_check_is_paid_once_even_concurrently_and_the_budget_bounds_the_rest() {
        let (authz, reviews) = authorizer();
        let bob = identity();
        let budget = AccessBudget::new(3);
        let check = AccessCheck::new("list", "nonadminbackups", "team-a");
        let answers =
            futures::future::join_all((0..5).map(|_| budget.allowed(&authz, &bob, &check))).await;
        assert!(answers.iter().all(|a| a == &Ok(true)));
        assert_eq!(reviews.load(Ordering::SeqCst), 1);
        assert_eq!(budget.spent(), 1);
        for ns in ["b", "c"] {
            let denied = AccessCheck::new("create", "nonadminbackups", ns);
            assert_eq!(budget.allowed(&authz, &bob, &denied).await, Ok(false));
        }
        let one_more = AccessCheck::new("create", "nonadminbackups", "d");
        assert_eq!(
            budget.allowed(&authz, &bob, &one_more).await,
            Err(CheckError::Exhausted(BudgetExhausted))
        );
        // Asked before: still answered, free.
        assert_eq!(budget.allowed(&authz, &bob, &check).await, Ok(true));
        assert_eq!(reviews.load(Ordering::SeqCst), 3);
        assert!(!budget.can_afford(1));
    }
}
