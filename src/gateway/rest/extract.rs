//! Request extractors whose rejections are problem+json: the authenticated caller (with the
//! per-user rate limit), path and query parameters, and JSON bodies (size-limited); and the
//! [`RequestSlot`] through which they tell the request middleware the route and rate state.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::header;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::problem::Problem;
use crate::api::names::{is_dns1123_label, is_dns1123_subdomain};
use crate::gateway::Gateway;
use crate::gateway::auth::Caller;
use crate::gateway::credentials::CsrfRule;
use crate::gateway::error::GatewayError;
use crate::gateway::ratelimit::RateLimitDecision;

/// What handlers tell the request middleware: the matched route template and the caller's
/// rate-limit state.
#[derive(Debug, Default)]
pub struct SlotContents {
    /// The route template (`/api/v1/namespaces/{namespace}/backups`), never the raw path.
    pub route: Option<String>,
    /// The caller's bucket after this request.
    pub rate: Option<RateLimitDecision>,
}

/// Shared between the outer middleware and the handlers of one request.
#[derive(Debug, Clone, Default)]
pub struct RequestSlot(pub Arc<Mutex<SlotContents>>);

/// The authenticated caller of a request: `Authorization: Bearer` (taking precedence) or the
/// console's session cookie (401 without either, or with a refused token or a dead session;
/// 403 when a cookie-authenticated request that changes something lacks the session's
/// `X-CSRF-Token`; 429 over the per-user limit, or over the client address's
/// pre-authentication limit when the token still needs a TokenReview or was refused).
#[derive(Debug, Clone)]
pub struct AuthCaller(pub Caller);

impl FromRequestParts<Gateway> for AuthCaller {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, gateway: &Gateway) -> Result<Self, Problem> {
        let authenticated = gateway
            .authenticate_request(
                &parts.method,
                &parts.headers,
                &parts.extensions,
                CsrfRule::UnsafeMethods,
            )
            .await?;
        admit(gateway, parts, &authenticated.caller)?;
        Ok(AuthCaller(authenticated.caller))
    }
}

/// The per-user rate limit for `caller`, noted for the RateLimit headers.
pub(super) fn admit(gateway: &Gateway, parts: &Parts, caller: &Caller) -> Result<(), Problem> {
    let decision = gateway.limiter.check(caller.username());
    if let Some(slot) = parts.extensions.get::<RequestSlot>()
        && let Ok(mut slot) = slot.0.lock()
    {
        slot.rate = Some(decision);
    }
    if decision.allowed {
        Ok(())
    } else {
        Err(Problem(GatewayError::RateLimited {
            retry_after: decision.reset,
        }))
    }
}

/// Path parameters; a rejection is a 400 problem.
#[derive(Debug)]
pub struct ApiPath<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Problem> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(value)| ApiPath(value))
            .map_err(|_| Problem(GatewayError::BadRequest("invalid path parameters".into())))
    }
}

/// Query parameters; a rejection is a 400 problem naming the parameter problem.
#[derive(Debug)]
pub struct ApiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Problem> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(value)| ApiQuery(value))
            .map_err(|rejection| {
                Problem(GatewayError::BadRequest(format!(
                    "invalid query parameters: {}",
                    rejection.body_text()
                )))
            })
    }
}

/// A JSON body: the raw bytes (for idempotency) and the parsed value.
#[derive(Debug)]
pub struct JsonBody {
    /// As received.
    pub bytes: Bytes,
    /// Parsed.
    pub value: Value,
}

impl FromRequest<Gateway> for JsonBody {
    type Rejection = Problem;

    async fn from_request(request: Request, gateway: &Gateway) -> Result<Self, Problem> {
        let content_type = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .map(|value| {
                value
                    .split(';')
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .to_ascii_lowercase()
            });
        if let Some(content_type) = content_type
            && content_type != "application/json"
            && !(content_type.starts_with("application/") && content_type.ends_with("+json"))
        {
            return Err(Problem(GatewayError::UnsupportedMediaType));
        }
        let limit = gateway.config.max_body_bytes;
        let bytes = Bytes::from_request(request, gateway)
            .await
            .map_err(|rejection| {
                if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                    Problem(GatewayError::PayloadTooLarge { limit })
                } else {
                    Problem(GatewayError::BadRequest(
                        "the request body could not be read".into(),
                    ))
                }
            })?;
        if bytes.len() > limit {
            return Err(Problem(GatewayError::PayloadTooLarge { limit }));
        }
        let value = serde_json::from_slice(&bytes).map_err(|error| {
            Problem(GatewayError::BadRequest(format!(
                "the body is not valid JSON: {error}"
            )))
        })?;
        Ok(JsonBody { bytes, value })
    }
}

/// Checks a namespace path segment (a DNS-1123 label).
pub fn check_namespace(namespace: &str) -> Result<(), Problem> {
    if is_dns1123_label(namespace) && !namespace.is_empty() {
        Ok(())
    } else {
        Err(Problem(GatewayError::BadRequest(
            "namespace is not a valid namespace name".into(),
        )))
    }
}

/// Checks an object name path segment (a DNS-1123 subdomain).
pub fn check_name(name: &str) -> Result<(), Problem> {
    if is_dns1123_subdomain(name) && !name.is_empty() {
        Ok(())
    } else {
        Err(Problem(GatewayError::BadRequest(
            "name is not a valid object name".into(),
        )))
    }
}
