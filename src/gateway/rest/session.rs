//! Browser sessions over HTTP (the web console's sign-in):
//!
//! - `POST /api/v1/session` `{"token": "…"}` checks the token like a bearer token (TokenReview,
//!   pre-authentication limit) and answers 201 with the session cookie (`nac_session`,
//!   HttpOnly, Secure, SameSite=Strict) and `{"username", "groups", "expiresAt", "csrfToken"}`;
//! - `GET /api/v1/session` answers the same for the cookie's session (401 without one);
//! - `DELETE /api/v1/session` (with `X-CSRF-Token`) ends the session and clears the cookie;
//! - `GET /api/v1/session/config` tells the console whether OpenShift OAuth sign-in is on;
//! - `GET /api/v1/session/oauth/start` and `…/callback`: the OAuth authorization code flow,
//!   ending in the same session and a redirect to `/`.
//!
//! Every answer is `Cache-Control: no-store`; the token is never echoed.

use std::sync::Arc;
use std::time::SystemTime;

use axum::extract::State;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::answer::ApiJson;
use super::extract::{ApiQuery, JsonBody, admit};
use super::problem::Problem;
use super::schema::SessionErrorResponses;
use crate::gateway::Gateway;
use crate::gateway::auth::oauth::{
    self, OAuthError, STATE_COOKIE, STATE_TTL, authorize_url, check_state, new_state, state_cookie,
};
use crate::gateway::auth::session::{
    SessionInfo, clear_session_cookie, cookie_values, session_cookie,
};
use crate::gateway::auth::{BearerToken, Session};
use crate::gateway::credentials::{csrf_header, session_cookies};
use crate::gateway::error::GatewayError;
use crate::gateway::ratelimit::ClientAddress;

/// The sign-in body.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SignIn {
    /// A token the cluster accepts (`oc whoami -t`, a service-account token).
    pub token: String,
}

/// What the console needs to know before anyone signs in.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionSettings {
    /// Whether OpenShift OAuth sign-in is configured (`GET /api/v1/session/oauth/start`).
    pub oauth: bool,
}

/// The OAuth callback's query.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CallbackParams {
    /// The authorization code.
    code: Option<String>,
    /// The `state` the sign-in started with.
    state: Option<String>,
    /// Set by the OAuth server when it refused (e.g. `access_denied`).
    error: Option<String>,
}

fn no_store(response: &mut Response) {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

fn add_cookie(response: &mut Response, cookie: &str) {
    if let Ok(value) = HeaderValue::from_str(cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
}

fn session_answer(status: StatusCode, info: &SessionInfo, cookie: Option<&str>) -> Response {
    let mut response = (status, ApiJson(info)).into_response();
    if let Some(cookie) = cookie {
        add_cookie(&mut response, cookie);
    }
    no_store(&mut response);
    response
}

/// A problem answer that also clears the session cookie when the request sent one (a dead
/// session's cookie is of no use to keep).
fn problem_clearing(error: GatewayError, headers: &HeaderMap) -> Response {
    let mut response = Problem(error).into_response();
    if !session_cookies(headers).is_empty() {
        add_cookie(&mut response, &clear_session_cookie());
    }
    no_store(&mut response);
    response
}

/// Checks `token` like a bearer token and opens a session for it (ending the browser's
/// previous session, if any); the session and its cookie's JWT.
async fn sign_in(
    gateway: &Gateway,
    parts: &Parts,
    token: BearerToken,
) -> Result<(Arc<Session>, String), Problem> {
    let client = ClientAddress::from_request(
        &parts.extensions,
        &parts.headers,
        gateway.config.trust_forwarded_for,
    );
    let caller = gateway
        .service
        .authenticate(Some(token.clone()), client)
        .await?;
    admit(gateway, parts, &caller)?;
    if let Ok(previous) = gateway.session_of(&parts.headers) {
        gateway.sessions.revoke(previous.id());
    }
    gateway
        .sessions
        .create(caller.identity(), token, SystemTime::now())
        .map_err(|error| {
            tracing::error!(error = %error, "cannot open a session");
            Problem(GatewayError::Upstream)
        })
}

/// Signs in with a cluster token: sets the session cookie.
#[utoipa::path(
    post, path = "/api/v1/session", tag = "session",
    request_body(content = SignIn, description = "The token to sign in with; it stays on the server", content_type = "application/json"),
    responses(
        (status = 201, description = "Signed in. `Set-Cookie: nac_session=…; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=<session TTL>`", body = SessionInfo,
            headers(("Set-Cookie" = String, description = "The session cookie"))),
        SessionErrorResponses),
    security(())
)]
pub async fn create_session(
    State(gateway): State<Gateway>,
    parts: Parts,
    body: JsonBody,
) -> Result<Response, Problem> {
    // Only JSON: a cross-site HTML form cannot send it without the browser asking first.
    let is_json = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !is_json {
        return Err(Problem(GatewayError::UnsupportedMediaType));
    }
    let token = body
        .value
        .get("token")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|token| !token.is_empty() && token.len() <= 16 * 1024)
        .map(BearerToken::new)
        .ok_or_else(|| {
            Problem(GatewayError::BadRequest(
                "the body must be {\"token\": \"…\"} with a token the cluster accepts (oc whoami -t)"
                    .into(),
            ))
        })?;
    let (session, jwt) = sign_in(&gateway, &parts, token).await?;
    Ok(session_answer(
        StatusCode::CREATED,
        &session.info(),
        Some(&session_cookie(&jwt, gateway.sessions.config().ttl)),
    ))
}

/// Who I am in this browser session (also gives the CSRF token again after a reload).
#[utoipa::path(
    get, path = "/api/v1/session", tag = "session",
    responses((status = 200, description = "The cookie's session", body = SessionInfo), SessionErrorResponses),
    security(("session" = []))
)]
pub async fn get_session(State(gateway): State<Gateway>, parts: Parts) -> Response {
    let result = async {
        let session = gateway.session_of(&parts.headers)?;
        let client = ClientAddress::from_request(
            &parts.extensions,
            &parts.headers,
            gateway.config.trust_forwarded_for,
        );
        let caller = gateway.session_caller(&session, client).await?;
        admit(&gateway, &parts, &caller).map_err(|problem| problem.0)?;
        Ok::<_, GatewayError>(session)
    }
    .await;
    match result {
        Ok(session) => session_answer(StatusCode::OK, &session.info(), None),
        Err(error @ GatewayError::Unauthenticated) => problem_clearing(error, &parts.headers),
        Err(error) => Problem(error).into_response(),
    }
}

/// Signs out: ends the session on the server and clears the cookie.
#[utoipa::path(
    delete, path = "/api/v1/session", tag = "session",
    params(("X-CSRF-Token" = String, Header, description = "The session's CSRF token")),
    responses((status = 204, description = "Signed out; `Set-Cookie: nac_session=; …; Max-Age=0`"), SessionErrorResponses),
    security(("session" = []))
)]
pub async fn delete_session(State(gateway): State<Gateway>, headers: HeaderMap) -> Response {
    let session = match gateway.session_of(&headers) {
        Ok(session) => session,
        Err(error) => return problem_clearing(error, &headers),
    };
    if !session.csrf_matches(csrf_header(&headers)) {
        return Problem(GatewayError::CsrfRejected).into_response();
    }
    gateway.sessions.revoke(session.id());
    let mut response = StatusCode::NO_CONTENT.into_response();
    add_cookie(&mut response, &clear_session_cookie());
    no_store(&mut response);
    response
}

/// How one may sign in (no authentication needed).
#[utoipa::path(
    get, path = "/api/v1/session/config", tag = "session",
    responses((status = 200, description = "Sign-in options", body = SessionSettings)),
    security(())
)]
pub async fn session_config(State(gateway): State<Gateway>) -> ApiJson<SessionSettings> {
    ApiJson(SessionSettings {
        oauth: gateway.oauth.is_some(),
    })
}

fn oauth_problem(error: OAuthError) -> Problem {
    Problem(match error {
        OAuthError::NotConfigured => GatewayError::NoRoute(error.to_string()),
        OAuthError::Discovery(_) => {
            tracing::warn!(error = %error, "OpenShift OAuth unavailable");
            GatewayError::Unavailable(
                "OpenShift OAuth sign-in is not available now; retry, or paste a token".into(),
            )
        }
        OAuthError::Config(_) => {
            tracing::error!(error = %error, "OpenShift OAuth misconfigured");
            GatewayError::Upstream
        }
        OAuthError::BadState | OAuthError::Refused(_) | OAuthError::Exchange(_) => {
            GatewayError::BadRequest(error.to_string())
        }
    })
}

fn redirect(location: &str) -> Response {
    let mut response = StatusCode::FOUND.into_response();
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    no_store(&mut response);
    response
}

/// Starts an OpenShift OAuth sign-in: redirects to the OAuth server's authorization endpoint.
#[utoipa::path(
    get, path = "/api/v1/session/oauth/start", tag = "session",
    responses(
        (status = 302, description = "To the authorization endpoint (`response_type=code`, `client_id`, `redirect_uri`, `state`); sets the `nac_oauth_state` cookie (HttpOnly, Secure, SameSite=Lax)"),
        (status = 404, description = "OAuth sign-in is not configured", body = super::problem::ProblemDetails, content_type = "application/problem+json"),
        (status = 503, description = "The OAuth server cannot be discovered now", body = super::problem::ProblemDetails, content_type = "application/problem+json")),
    security(())
)]
pub async fn oauth_start(State(gateway): State<Gateway>) -> Result<Response, Problem> {
    let client = gateway
        .oauth
        .as_ref()
        .ok_or_else(|| oauth_problem(OAuthError::NotConfigured))?;
    let server = client
        .server(gateway.reader())
        .await
        .map_err(oauth_problem)?;
    let state =
        new_state(gateway.sessions.state_key(), SystemTime::now()).map_err(oauth_problem)?;
    let location = authorize_url(
        server,
        &client.config().client_id,
        &client.redirect_uri(),
        &state,
    )
    .map_err(oauth_problem)?;
    let mut response = redirect(&location);
    add_cookie(&mut response, &state_cookie(&state, STATE_TTL));
    Ok(response)
}

/// Where the OAuth server sends the browser back: checks the state, exchanges the code, opens
/// the session and redirects to the console.
#[utoipa::path(
    get, path = "/api/v1/session/oauth/callback", tag = "session",
    params(CallbackParams),
    responses(
        (status = 302, description = "Signed in: to `/`, with the session cookie set and the state cookie cleared"),
        SessionErrorResponses),
    security(())
)]
pub async fn oauth_callback(
    State(gateway): State<Gateway>,
    parts: Parts,
    ApiQuery(params): ApiQuery<CallbackParams>,
) -> Result<Response, Problem> {
    let client = gateway
        .oauth
        .as_ref()
        .ok_or_else(|| oauth_problem(OAuthError::NotConfigured))?;
    let cookies = cookie_values(
        parts
            .headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok()),
        STATE_COOKIE,
    );
    check_state(
        gateway.sessions.state_key(),
        params.state.as_deref(),
        &cookies,
        SystemTime::now(),
    )
    .map_err(oauth_problem)?;
    if let Some(error) = params.error.as_deref() {
        return Err(oauth_problem(OAuthError::Refused(oauth::short_code(error))));
    }
    let code = params
        .code
        .as_deref()
        .filter(|code| !code.is_empty() && code.len() <= 4096)
        .ok_or_else(|| oauth_problem(OAuthError::Exchange("no code was given".into())))?;
    let server = client
        .server(gateway.reader())
        .await
        .map_err(oauth_problem)?;
    let token = client.exchange(server, code).await.map_err(oauth_problem)?;
    let (_, jwt) = sign_in(&gateway, &parts, token).await?;
    let mut response = redirect("/");
    add_cookie(
        &mut response,
        &session_cookie(&jwt, gateway.sessions.config().ttl),
    );
    add_cookie(&mut response, &state_cookie("", std::time::Duration::ZERO));
    Ok(response)
}
