//! Where a request's credentials come from, for every transport (REST, SSE, GraphQL): an
//! `Authorization: Bearer` header (taking precedence, unchanged for scripts and CI), else the
//! browser's session cookie, whose session supplies the stored cluster token. Either way the
//! token then goes through the one authentication path ([`GatewayService::authenticate`]:
//! pre-authentication limit, TokenReview cache), so SubjectAccessReviews and rate limits apply
//! as for a bearer token.
//!
//! A cookie-authenticated request that changes something must carry the session's CSRF token
//! (see [`crate::gateway::auth::session`]); a session whose token the cluster refuses is ended.
//!
//! [`GatewayService::authenticate`]: crate::gateway::service::GatewayService::authenticate

use std::sync::Arc;
use std::time::SystemTime;

use http::{Extensions, HeaderMap, Method, header};

use crate::gateway::Gateway;
use crate::gateway::auth::session::{
    CSRF_HEADER, SESSION_COOKIE, SessionError, cookie_values, csrf_required,
};
use crate::gateway::auth::{BearerToken, Caller, Session};
use crate::gateway::error::GatewayError;
use crate::gateway::ratelimit::ClientAddress;

/// When a cookie-authenticated request must carry the CSRF header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CsrfRule {
    /// For every method but GET, HEAD and OPTIONS.
    UnsafeMethods,
    /// Always (every POST to `/graphql`: a query and a mutation look alike).
    Always,
    /// Never (checked later, e.g. in a WebSocket's `connection_init`).
    Never,
}

/// An authenticated request: the caller and, when the session cookie authenticated it, the
/// session.
#[derive(Clone, Debug)]
pub struct Authenticated {
    /// Who is calling.
    pub caller: Caller,
    /// The browser session, for cookie-authenticated requests.
    pub session: Option<Arc<Session>>,
}

/// The bearer token of an `Authorization` header.
pub fn bearer_of(headers: &HeaderMap) -> Option<BearerToken> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(BearerToken::from_authorization)
}

/// The values of the session cookie in `headers`.
pub fn session_cookies(headers: &HeaderMap) -> Vec<&str> {
    cookie_values(
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok()),
        SESSION_COOKIE,
    )
}

/// The `X-CSRF-Token` header.
pub fn csrf_header(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(CSRF_HEADER)
        .and_then(|value| value.to_str().ok())
}

impl Gateway {
    /// The live session the request's cookie names (401 without one).
    pub fn session_of(&self, headers: &HeaderMap) -> Result<Arc<Session>, GatewayError> {
        self.sessions
            .resolve_any(&session_cookies(headers), SystemTime::now())
            .map_err(|error: SessionError| {
                tracing::debug!(reason = %error, "session cookie refused");
                GatewayError::Unauthenticated
            })
    }

    /// The caller acting with `session`'s token; a token the cluster refuses ends the session.
    pub async fn session_caller(
        &self,
        session: &Arc<Session>,
        client: ClientAddress,
    ) -> Result<Caller, GatewayError> {
        let result = self
            .service
            .authenticate(Some(session.token().clone()), client)
            .await;
        if matches!(result, Err(GatewayError::Unauthenticated)) {
            self.sessions.revoke(session.id());
        }
        result
    }

    /// Authenticates a request: the bearer token if there is one, else the session cookie
    /// (with the CSRF header as `csrf` says). Rate limits per user are the caller's business.
    pub async fn authenticate_request(
        &self,
        method: &Method,
        headers: &HeaderMap,
        extensions: &Extensions,
        csrf: CsrfRule,
    ) -> Result<Authenticated, GatewayError> {
        let client =
            ClientAddress::from_request(extensions, headers, self.config.trust_forwarded_for);
        if let Some(token) = bearer_of(headers) {
            let caller = self.service.authenticate(Some(token), client).await?;
            return Ok(Authenticated {
                caller,
                session: None,
            });
        }
        if session_cookies(headers).is_empty() {
            return Err(GatewayError::Unauthenticated);
        }
        let session = self.session_of(headers)?;
        let needs_csrf = match csrf {
            CsrfRule::UnsafeMethods => csrf_required(method.as_str(), false),
            CsrfRule::Always => true,
            CsrfRule::Never => false,
        };
        if needs_csrf && !session.csrf_matches(csrf_header(headers)) {
            return Err(GatewayError::CsrfRejected);
        }
        let caller = self.session_caller(&session, client).await?;
        Ok(Authenticated {
            caller,
            session: Some(session),
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_read_from_the_headers() {
        let mut headers = HeaderMap::new();
        assert!(bearer_of(&headers).is_none());
        assert!(session_cookies(&headers).is_empty());
        assert!(csrf_header(&headers).is_none());
        headers.insert(header::AUTHORIZATION, "Bearer abc".parse().unwrap());
        headers.append(header::COOKIE, "theme=dark".parse().unwrap());
        headers.append(header::COOKIE, "nac_session=j.w.t".parse().unwrap());
        headers.insert("X-CSRF-Token", "c".parse().unwrap());
        assert_eq!(bearer_of(&headers).unwrap().expose(), "abc");
        assert_eq!(session_cookies(&headers), vec!["j.w.t"]);
        assert_eq!(csrf_header(&headers), Some("c"));
    }
}
