//! GraphQL at `/graphql` (async-graphql): the same data and the same access checks as REST,
//! because every resolver calls a [`GatewayService`] operation with the caller — queries,
//! mutations (written with the caller's own token by the service) and subscriptions over
//! WebSocket (`graphql-transport-ws`, and the legacy `graphql-ws`) fed by the gateway's event
//! log. Lists are Relay connections over the service's `limit`/`continue` paging
//! ([`cursor`]); queries deeper than [`MAX_DEPTH`] or above [`MAX_COMPLEXITY`] are refused
//! before anything runs; DataLoaders ([`loaders`]) batch a restore's backup and a backup's
//! restores. Errors carry `extensions.code` ([`errors`]). The objects are the service's own
//! views, which derive GraphQL's traits beside `ToSchema`: this layer keeps resolvers, loaders
//! and subscription wiring.
//!
//! Authentication:
//! - `POST /graphql` needs `Authorization: Bearer <token>` like REST. Without a valid token the
//!   answer is HTTP 401 with `WWW-Authenticate: Bearer realm="nac"` and a GraphQL body whose
//!   error has `extensions.code = UNAUTHENTICATED`; over the rate limit, HTTP 429 with
//!   `Retry-After` and `RATE_LIMITED` (also when the client address has sent too many tokens
//!   that needed a TokenReview or were refused: the pre-authentication limit). Errors inside
//!   an authenticated request (FORBIDDEN, NOT_FOUND, INVALID …) are HTTP 200 with `errors`, as
//!   GraphQL over HTTP expects.
//! - The web console's session cookie works instead of a bearer token (which takes precedence
//!   when both are sent); every POST authenticated by the cookie must carry the session's
//!   `X-CSRF-Token`, else HTTP 403 with `extensions.code = FORBIDDEN` and
//!   `extensions.reason = csrf-token`.
//! - `GET /graphql` with a WebSocket upgrade opens a subscription connection. The token comes
//!   from the `connection_init` payload (`{"Authorization": "Bearer …"}`, `{"token": "…"}` or
//!   `{"headers": {"Authorization": …}}`) or else from the upgrade request's Authorization
//!   header, or else from the upgrade request's session cookie — then the payload must carry
//!   the session's CSRF token (`{"csrfToken": "…"}`); a header token or cookie the cluster
//!   refuses is answered 401 before the upgrade, and a connection without a valid token is
//!   closed at `connection_init` (close code 1002 with the reason "a valid bearer token is
//!   required").
//! - On a WebSocket every operation (`subscribe`, or `start` in the legacy protocol) draws from
//!   the caller's per-user rate limit, as every HTTP request does: one over it is answered with
//!   a `RATE_LIMITED` error (with `retryAfterSeconds`) and completed without running, and a
//!   connection that sends [`MAX_REFUSED_IN_A_ROW`] such operations in a row is closed with
//!   4429. The connection's token is re-checked (TokenReview through the authenticator's cache)
//!   at least once per token-cache TTL; when it is no longer valid the connection is closed
//!   with 4401 (its subscriptions end with `UNAUTHENTICATED` first).
//! - When the gateway stops (SIGTERM), every subscription ends with an `UNAVAILABLE` error
//!   (`extensions.reason = shutdown`, `retryAfterSeconds`) and `complete`, then the connection
//!   is closed with 1012 ("service restart"): reconnect, and subscribe again with
//!   `resumeAfter`.
//! - Each request (each operation on a WebSocket) has its own budget of access checks for what
//!   fans out over namespaces ([`budget_of`]), shared by all its fields and aliases.
//! - `GET /graphql` otherwise serves a small query console that loads nothing from elsewhere.
//!
//! The SDL is checked in at `schema/schema.graphql` (`nac graphql-schema` prints it).

pub mod cursor;
pub mod errors;
pub mod history;
pub mod loaders;
pub mod manifests;
pub mod mutation;
pub mod query;
pub mod subscription;
pub mod types;

use std::sync::{Arc, OnceLock};

use async_graphql::dataloader::DataLoader;
use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextPrepareRequest,
};
use async_graphql::http::{ALL_WEBSOCKET_PROTOCOLS, WebSocketProtocols};
use async_graphql::{Context, Data, Schema, ServerResult};
use async_graphql_axum::{GraphQLProtocol, GraphQLWebSocket};
use axum::Router;
use axum::extract::ws::{CloseFrame, Message, WebSocket};
use axum::extract::{FromRequestParts, Request, State, WebSocketUpgrade};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::api::names::{is_dns1123_label, is_dns1123_subdomain};
use crate::gateway::Gateway;
use crate::gateway::auth::{AccessBudget, BearerToken, Caller};
use crate::gateway::credentials::{CsrfRule, session_cookies};
use crate::gateway::error::GatewayError;
use crate::gateway::ratelimit::ClientAddress;
use crate::gateway::service::GatewayService;
use loaders::{BackupLoader, RestoresOfBackupLoader};
use mutation::MutationRoot;
use query::QueryRoot;
use subscription::SubscriptionRoot;

/// Deepest selection accepted.
pub const MAX_DEPTH: usize = 12;
/// Largest complexity accepted (every field costs 1; lists cost their page size times their
/// selection; `describe(details: true)` costs 50).
pub const MAX_COMPLEXITY: usize = 500;

/// The schema type.
pub type NacSchema = Schema<QueryRoot, MutationRoot, SubscriptionRoot>;

/// Close code of a WebSocket whose token is no longer valid (graphql-transport-ws's
/// "Unauthorized").
pub const CLOSE_UNAUTHORIZED: u16 = 4401;
/// Close code of a WebSocket that keeps sending operations over its rate limit.
pub const CLOSE_TOO_MANY_REQUESTS: u16 = 4429;
/// Close code of a WebSocket closed because the gateway stops (RFC 6455 "Service Restart":
/// reconnect, another replica answers).
pub const CLOSE_SERVICE_RESTART: u16 = 1012;
/// How long a stopping gateway lets its subscriptions' last frames (an `UNAVAILABLE` error with
/// reason `shutdown`, then `complete`) go out before it closes their socket.
const SHUTDOWN_CLOSE_DELAY: std::time::Duration = std::time::Duration::from_millis(200);
/// How long a closing WebSocket still reads (and drops) what the client sends.
const CLOSE_DRAIN: std::time::Duration = std::time::Duration::from_secs(2);
/// Rate-limited operations in a row after which a WebSocket is closed.
pub const MAX_REFUSED_IN_A_ROW: u32 = 100;

/// The caller of the current request or subscription connection.
#[derive(Clone, Debug)]
pub struct RequestCaller(pub Caller);

/// The budget of access checks of the current request (one per document over HTTP, one per
/// operation on a WebSocket).
#[derive(Clone, Debug)]
pub struct RequestBudget(pub Arc<AccessBudget>);

/// Gives every request (every operation on a WebSocket) a fresh [`RequestBudget`].
struct Budgets {
    size: usize,
}

impl ExtensionFactory for Budgets {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(Budgets { size: self.size })
    }
}

#[async_graphql::async_trait::async_trait]
impl Extension for Budgets {
    async fn prepare_request(
        &self,
        ctx: &ExtensionContext<'_>,
        mut request: async_graphql::Request,
        next: NextPrepareRequest<'_>,
    ) -> ServerResult<async_graphql::Request> {
        request
            .data
            .insert(RequestBudget(Arc::new(AccessBudget::new(self.size))));
        next.run(ctx, request).await
    }
}

/// The schema, with `service` for resolvers (none: for printing the SDL).
pub fn schema(service: Option<Arc<GatewayService>>) -> NacSchema {
    let mut builder = Schema::build(QueryRoot, MutationRoot, SubscriptionRoot)
        .limit_depth(MAX_DEPTH)
        .limit_complexity(MAX_COMPLEXITY)
        .limit_recursive_depth(32)
        .extension(errors::EngineErrorCodes);
    if let Some(service) = service {
        builder = builder.extension(Budgets {
            size: service.config().review_budget,
        });
        builder = builder.data(service);
    }
    builder.finish()
}

/// The request's budget of access checks, shared by all its fields.
pub(crate) fn budget_of(ctx: &Context<'_>) -> async_graphql::Result<Arc<AccessBudget>> {
    match ctx.data_opt::<RequestBudget>() {
        Some(budget) => Ok(Arc::clone(&budget.0)),
        None => Ok(Arc::new(service_of(ctx)?.review_budget())),
    }
}

/// The schema in SDL, as checked in at `schema/schema.graphql`.
pub fn sdl() -> String {
    schema(None).sdl()
}

pub(crate) fn service_of<'a>(ctx: &Context<'a>) -> async_graphql::Result<&'a Arc<GatewayService>> {
    ctx.data::<Arc<GatewayService>>()
}

pub(crate) fn caller_of<'a>(ctx: &Context<'a>) -> async_graphql::Result<&'a Caller> {
    ctx.data::<RequestCaller>()
        .map(|caller| &caller.0)
        .map_err(|_| errors::to_graphql(&GatewayError::Unauthenticated))
}

pub(crate) fn check_namespace(namespace: &str) -> Result<(), GatewayError> {
    if !namespace.is_empty() && is_dns1123_label(namespace) {
        Ok(())
    } else {
        Err(GatewayError::BadRequest(
            "namespace is not a valid namespace name".into(),
        ))
    }
}

pub(crate) fn check_name(name: &str) -> Result<(), GatewayError> {
    if !name.is_empty() && is_dns1123_subdomain(name) {
        Ok(())
    } else {
        Err(GatewayError::BadRequest(
            "name is not a valid object name".into(),
        ))
    }
}

/// What one request (or subscription connection) runs with: the caller and their loaders.
fn fill_data(data: &mut Data, service: &Arc<GatewayService>, caller: Caller) {
    data.insert(DataLoader::new(
        BackupLoader::new(Arc::clone(service), caller.clone()),
        tokio::spawn,
    ));
    data.insert(DataLoader::new(
        RestoresOfBackupLoader::new(Arc::clone(service), caller.clone()),
        tokio::spawn,
    ));
    data.insert(RequestCaller(caller));
}

#[derive(Clone)]
struct GraphqlState {
    gateway: Gateway,
    schema: NacSchema,
}

/// The `/graphql` routes over `gateway`'s service.
pub fn router(gateway: Gateway) -> Router {
    let schema = schema(Some(Arc::clone(gateway.service())));
    Router::new()
        .route("/graphql", get(graphql_get).post(graphql_post))
        .with_state(GraphqlState { gateway, schema })
}

fn json_response(status: StatusCode, body: &impl serde::Serialize) -> Response {
    let mut response = (status, serde_json::to_vec(body).unwrap_or_default()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// An HTTP answer carrying one GraphQL error (for failures before the query runs).
fn error_response(error: &GatewayError) -> Response {
    let status = StatusCode::from_u16(error.status_code()).unwrap_or(StatusCode::BAD_REQUEST);
    let mut extensions = json!({"code": errors::code_of(error), "reason": error.code()});
    if let GatewayError::RateLimited { retry_after } = error {
        extensions["retryAfterSeconds"] = json!(retry_after.as_secs().max(1));
    }
    let body = json!({"errors": [{"message": error.to_string(), "extensions": extensions}]});
    let mut response = json_response(status, &body);
    match error {
        GatewayError::Unauthenticated => {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"nac\""),
            );
        }
        GatewayError::RateLimited { retry_after } => {
            if let Ok(value) = HeaderValue::from_str(&retry_after.as_secs().max(1).to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
        }
        _ => {}
    }
    response
}

fn client_of(gateway: &Gateway, parts: &axum::http::request::Parts) -> ClientAddress {
    ClientAddress::from_request(
        &parts.extensions,
        &parts.headers,
        gateway.config.trust_forwarded_for,
    )
}

fn bearer(headers: &HeaderMap) -> Option<BearerToken> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(BearerToken::from_authorization)
}

/// The caller holding `token`, asking from `client`, within the rate limits.
async fn admit(
    gateway: &Gateway,
    token: Option<BearerToken>,
    client: ClientAddress,
) -> Result<Caller, GatewayError> {
    let caller = gateway.service().authenticate(token, client).await?;
    within_rate_limit(gateway, caller)
}

/// `caller` if they are within their per-user rate limit.
fn within_rate_limit(gateway: &Gateway, caller: Caller) -> Result<Caller, GatewayError> {
    let decision = gateway.limiter.check(caller.username());
    if !decision.allowed {
        return Err(GatewayError::RateLimited {
            retry_after: decision.reset,
        });
    }
    Ok(caller)
}

/// The session's CSRF token in a `connection_init` payload (`{"csrfToken": "…"}`, or
/// `X-CSRF-Token` among its `headers`).
pub fn csrf_from_init_payload(payload: &Value) -> Option<&str> {
    payload
        .get("csrfToken")
        .and_then(Value::as_str)
        .or_else(|| {
            let headers = payload.get("headers")?;
            ["X-CSRF-Token", "x-csrf-token"]
                .iter()
                .find_map(|key| headers.get(*key).and_then(Value::as_str))
        })
}

/// The token of a `connection_init` payload.
pub fn token_from_init_payload(payload: &Value) -> Option<BearerToken> {
    let authorization = |object: &Value| {
        ["Authorization", "authorization"]
            .iter()
            .find_map(|key| object.get(*key).and_then(Value::as_str))
            .and_then(BearerToken::from_authorization)
    };
    authorization(payload)
        .or_else(|| payload.get("headers").and_then(authorization))
        .or_else(|| {
            payload
                .get("token")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|token| !token.is_empty() && token.len() <= 16 * 1024)
                .map(BearerToken::new)
        })
}

async fn graphql_post(State(state): State<GraphqlState>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    // A bearer token, or the console's session cookie with its CSRF token (every POST: a
    // query and a mutation look alike).
    let caller = match state
        .gateway
        .authenticate_request(
            &parts.method,
            &parts.headers,
            &parts.extensions,
            CsrfRule::Always,
        )
        .await
        .and_then(|authenticated| within_rate_limit(&state.gateway, authenticated.caller))
    {
        Ok(caller) => caller,
        Err(error) => return error_response(&error),
    };
    if let Some(content_type) = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    {
        let essence = content_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        if essence != "application/json" {
            return error_response(&GatewayError::UnsupportedMediaType);
        }
    }
    let limit = state.gateway.config.max_body_bytes;
    let Ok(bytes) = axum::body::to_bytes(body, limit).await else {
        return error_response(&GatewayError::PayloadTooLarge { limit });
    };
    let request: async_graphql::Request = match serde_json::from_slice(&bytes) {
        Ok(request) => request,
        Err(_) => {
            return error_response(&GatewayError::BadRequest(
                "the body must be one GraphQL request: {\"query\": …, \"variables\": {…}} (batches are not accepted)".into(),
            ));
        }
    };
    let service = state.gateway.service();
    let mut request = request;
    fill_data(&mut request.data, service, caller);
    let mut response = state.schema.execute(request).await;
    errors::ensure_codes(&mut response);
    json_response(StatusCode::OK, &response)
}

async fn graphql_get(State(state): State<GraphqlState>, request: Request) -> Response {
    let wants_upgrade = request
        .headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    if !wants_upgrade {
        return console();
    }
    let (mut parts, _body) = request.into_parts();
    let Ok(protocol) = GraphQLProtocol::from_request_parts(&mut parts, &()).await else {
        return error_response(&GatewayError::BadRequest(
            "Sec-WebSocket-Protocol must be graphql-transport-ws (or graphql-ws)".into(),
        ));
    };
    let upgrade = match WebSocketUpgrade::from_request_parts(&mut parts, &()).await {
        Ok(upgrade) => upgrade,
        Err(rejection) => return rejection.into_response(),
    };
    // The connection's address, for the pre-authentication limit of its `connection_init`.
    let client = client_of(&state.gateway, &parts);
    // A token in the upgrade request is checked now, so a refused one is a plain 401; so is
    // a session cookie (whose CSRF token must then come in `connection_init`).
    let header_caller = match bearer(&parts.headers) {
        Some(token) => match admit(&state.gateway, Some(token), client).await {
            Ok(caller) => Some(caller),
            Err(error) => return error_response(&error),
        },
        None => None,
    };
    let session_caller = match (&header_caller, session_cookies(&parts.headers).is_empty()) {
        (None, false) => {
            let caller = match state.gateway.session_of(&parts.headers) {
                Ok(session) => state
                    .gateway
                    .session_caller(&session, client)
                    .await
                    .and_then(|caller| within_rate_limit(&state.gateway, caller))
                    .map(|caller| (session, caller)),
                Err(error) => Err(error),
            };
            match caller {
                Ok(found) => Some(found),
                Err(error) => return error_response(&error),
            }
        }
        _ => None,
    };
    let gateway = state.gateway.clone();
    let schema = state.schema.clone();
    let kind = protocol_of(&parts.headers);
    let max_message = state.gateway.config.max_body_bytes;
    upgrade
        .protocols(ALL_WEBSOCKET_PROTOCOLS)
        // A subscription's frames are small and spaced out: buffers of tungstenite's default
        // 128 KiB each would be most of an idle connection's memory.
        .read_buffer_size(WEBSOCKET_BUFFER_BYTES)
        .write_buffer_size(WEBSOCKET_BUFFER_BYTES)
        // A client's message is a GraphQL request: the same limit as a POSTed one.
        .max_message_size(max_message)
        .max_frame_size(max_message)
        .on_upgrade(move |socket| {
            serve_socket(
                socket,
                gateway,
                schema,
                (protocol, kind),
                Pending {
                    client,
                    header_caller,
                    session_caller,
                },
            )
        })
}

/// Read and write buffer of each WebSocket connection (tungstenite grows them for larger
/// messages).
const WEBSOCKET_BUFFER_BYTES: usize = 8 * 1024;

/// The protocol `GraphQLProtocol` chose from the upgrade request (the first one supported).
fn protocol_of(headers: &HeaderMap) -> WebSocketProtocols {
    headers
        .get(header::SEC_WEBSOCKET_PROTOCOL)
        .and_then(|value| value.to_str().ok())
        .and_then(|protocols| {
            protocols
                .split(',')
                .find_map(|p| p.trim().parse::<WebSocketProtocols>().ok())
        })
        .unwrap_or(WebSocketProtocols::GraphQLWS)
}

/// What a WebSocket knows of its caller before `connection_init`.
struct Pending {
    client: ClientAddress,
    header_caller: Option<Caller>,
    session_caller: Option<(Arc<crate::gateway::auth::Session>, Caller)>,
}

/// The caller of a `connection_init` with `payload`.
async fn init_caller(
    gateway: &Gateway,
    pending: Pending,
    payload: &Value,
) -> Result<Caller, GatewayError> {
    match (
        token_from_init_payload(payload),
        pending.header_caller,
        pending.session_caller,
    ) {
        (Some(token), _, _) => admit(gateway, Some(token), pending.client).await,
        (None, Some(caller), _) => Ok(caller),
        (None, None, Some((session, caller))) => {
            if session.csrf_matches(csrf_from_init_payload(payload)) {
                Ok(caller)
            } else {
                Err(GatewayError::CsrfRejected)
            }
        }
        (None, None, None) => Err(GatewayError::Unauthenticated),
    }
}

fn close(code: u16, reason: &str) -> Message {
    Message::Close(Some(CloseFrame {
        code,
        reason: reason.into(),
    }))
}

/// What one incoming frame asks for: an operation (with its id) or something else.
fn operation_id(message: &Message) -> Option<String> {
    let bytes: &[u8] = match message {
        Message::Text(text) => text.as_bytes(),
        Message::Binary(bytes) => bytes,
        _ => return None,
    };
    let value: Value = serde_json::from_slice(bytes).ok()?;
    let kind = value.get("type").and_then(Value::as_str)?;
    if kind != "subscribe" && kind != "start" {
        return None;
    }
    Some(
        value
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
    )
}

/// The frames answering operation `id` with `error` without running it: an error result,
/// then `complete`, in the connection's protocol.
fn refusal(protocol: WebSocketProtocols, id: &str, error: &GatewayError) -> [Message; 2] {
    let mut extensions = json!({"code": errors::code_of(error), "reason": error.code()});
    if let GatewayError::RateLimited { retry_after } = error {
        extensions["retryAfterSeconds"] = json!(retry_after.as_secs().max(1));
    }
    let next = match protocol {
        WebSocketProtocols::GraphQLWS => "next",
        WebSocketProtocols::SubscriptionsTransportWS => "data",
    };
    let result = json!({
        "id": id,
        "type": next,
        "payload": {"data": null, "errors": [{"message": error.to_string(), "extensions": extensions}]},
    });
    [
        Message::Text(result.to_string().into()),
        Message::Text(json!({"id": id, "type": "complete"}).to_string().into()),
    ]
}

/// One WebSocket connection: the GraphQL protocol (async-graphql) between a guard on the
/// incoming frames — every operation within the caller's rate limit — and a writer that also
/// carries the gateway's own frames; beside them a watch on the caller's token.
async fn serve_socket(
    socket: WebSocket,
    gateway: Gateway,
    schema: NacSchema,
    (protocol, kind): (GraphQLProtocol, WebSocketProtocols),
    pending: Pending,
) {
    // Counted until closed: a stopping gateway waits for its close frame to go out.
    let _open = gateway.service().shutdown().begin();
    let (mut sink, incoming) = socket.split();
    let (outgoing, mut to_send) = futures::channel::mpsc::channel::<Message>(32);
    let writer = tokio::spawn(async move {
        while let Some(message) = to_send.next().await {
            let closing = matches!(message, Message::Close(_));
            if sink.send(message).await.is_err() || closing {
                break;
            }
        }
        let _ = sink.close().await;
    });
    let caller: Arc<OnceLock<Caller>> = Arc::default();
    let (stop, stopped) = watch::channel(false);
    let stop = Arc::new(stop);
    // Once stopped, incoming frames are still read (and dropped) for a moment: a socket closed
    // with unread data is reset, and the client would lose the close frame and its code.
    let until_stopped = {
        let mut stopped = stopped.clone();
        async move {
            let _ = stopped.wait_for(|stop| *stop).await;
            tokio::time::sleep(CLOSE_DRAIN).await;
        }
    };
    let guarded = {
        let (gateway, caller, outgoing, stop) = (
            gateway.clone(),
            Arc::clone(&caller),
            outgoing.clone(),
            Arc::clone(&stop),
        );
        let refused_in_a_row = Arc::new(std::sync::atomic::AtomicU32::new(0));
        incoming.take_until(until_stopped).filter_map(move |frame| {
            let (gateway, caller, mut outgoing, stop, refused_in_a_row) = (
                gateway.clone(),
                Arc::clone(&caller),
                outgoing.clone(),
                Arc::clone(&stop),
                Arc::clone(&refused_in_a_row),
            );
            async move {
                if *stop.borrow() {
                    return None;
                }
                let Ok(message) = &frame else {
                    return Some(frame);
                };
                let (Some(id), Some(caller)) = (operation_id(message), caller.get()) else {
                    return Some(frame);
                };
                let Err(error) = within_rate_limit(&gateway, caller.clone()) else {
                    refused_in_a_row.store(0, std::sync::atomic::Ordering::Relaxed);
                    return Some(frame);
                };
                let refused =
                    refused_in_a_row.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                if refused >= MAX_REFUSED_IN_A_ROW {
                    let _ = outgoing
                        .send(close(CLOSE_TOO_MANY_REQUESTS, "too many requests"))
                        .await;
                    stop.send_replace(true);
                    return None;
                }
                for reply in refusal(kind, &id, &error) {
                    if outgoing.send(reply).await.is_err() {
                        break;
                    }
                }
                None
            }
        })
    };
    let watchdog = tokio::spawn(watch_token(
        gateway.clone(),
        Arc::clone(&caller),
        outgoing.clone(),
        Arc::clone(&stop),
        stopped,
    ));
    let known = Arc::clone(&caller);
    GraphQLWebSocket::new_with_pair(outgoing, guarded, schema, protocol)
        .on_connection_init(move |payload| async move {
            let caller = init_caller(&gateway, pending, &payload)
                .await
                .map_err(|error| async_graphql::Error::new(error.to_string()))?;
            let _ = known.set(caller.clone());
            let mut data = Data::default();
            fill_data(&mut data, gateway.service(), caller);
            Ok(data)
        })
        .serve()
        .await;
    stop.send_replace(true);
    let _ = watchdog.await;
    let _ = writer.await;
}

/// Closes the connection with 4401 once its caller's token is no longer valid (checked at
/// least once per token-cache TTL, through the authenticator's cache), and with 1012 when the
/// gateway stops.
async fn watch_token(
    gateway: Gateway,
    caller: Arc<OnceLock<Caller>>,
    mut outgoing: futures::channel::mpsc::Sender<Message>,
    stop: Arc<watch::Sender<bool>>,
    mut stopped: watch::Receiver<bool>,
) {
    let service = gateway.service();
    let mut every =
        tokio::time::interval(crate::gateway::events::follow::recheck_interval(service));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut confirmed = tokio::time::Instant::now();
    loop {
        let stopping = tokio::select! {
            _ = stopped.wait_for(|stop| *stop) => return,
            () = service.shutdown().triggered() => true,
            _ = every.tick() => false,
        };
        if stopping {
            // The subscriptions end by themselves (their last frames are on their way).
            tokio::time::sleep(SHUTDOWN_CLOSE_DELAY).await;
            let reason = "the gateway is shutting down; reconnect";
            let _ = outgoing.send(close(CLOSE_SERVICE_RESTART, reason)).await;
            stop.send_replace(true);
            return;
        }
        let Some(caller) = caller.get() else {
            continue;
        };
        if let Err(why) =
            crate::gateway::events::follow::token_state(service, caller, &mut confirmed).await
        {
            let _ = outgoing.send(close(CLOSE_UNAUTHORIZED, why.text())).await;
            stop.send_replace(true);
            return;
        }
    }
}

const CONSOLE: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>NAC GraphQL</title>
<style>body{font-family:sans-serif;margin:1rem;max-width:70rem}textarea,input{width:100%;font-family:monospace;box-sizing:border-box}textarea{height:14rem}pre{background:#f4f4f4;padding:.5rem;overflow:auto}</style>
</head><body>
<h1>NAC GraphQL</h1>
<p>POST <code>/graphql</code> with <code>Authorization: Bearer TOKEN</code>. The schema is in <code>schema/schema.graphql</code>; subscriptions use <code>graphql-transport-ws</code> on this URL.</p>
<label>Token <input id="token" type="password" autocomplete="off"></label>
<label>Query <textarea id="query">{ viewer { username } namespaces { name permissions { resource verbs } } }</textarea></label>
<label>Variables (JSON) <textarea id="variables" style="height:4rem">{}</textarea></label>
<button id="run">Run</button>
<pre id="out"></pre>
<script>
document.getElementById('run').onclick = async () => {
  const out = document.getElementById('out');
  let variables = {};
  try { variables = JSON.parse(document.getElementById('variables').value || '{}'); }
  catch (e) { out.textContent = 'variables: ' + e; return; }
  const response = await fetch('/graphql', {method: 'POST', headers: {
    'content-type': 'application/json',
    'authorization': 'Bearer ' + document.getElementById('token').value}, body: JSON.stringify({
    query: document.getElementById('query').value, variables})});
  out.textContent = response.status + '\n' + JSON.stringify(await response.json(), null, 2);
};
</script></body></html>
"#;

fn console() -> Response {
    let mut response = axum::response::Html(CONSOLE).into_response();
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'",
        ),
    );
    response
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn init_payload_tokens() {
        for payload in [
            json!({"Authorization": "Bearer abc"}),
            json!({"authorization": "bearer abc"}),
            json!({"headers": {"Authorization": "Bearer abc"}}),
            json!({"token": "abc"}),
        ] {
            assert_eq!(
                token_from_init_payload(&payload).map(|t| t.expose().to_string()),
                Some("abc".to_string()),
                "{payload}"
            );
        }
        for payload in [
            json!({}),
            json!(null),
            json!({"Authorization": "Basic abc"}),
            json!({"token": ""}),
            json!({"token": 5}),
        ] {
            assert!(token_from_init_payload(&payload).is_none(), "{payload}");
        }
    }

    #[test]
    fn init_payload_csrf_tokens() {
        assert_eq!(
            csrf_from_init_payload(&json!({"csrfToken": "c"})),
            Some("c")
        );
        assert_eq!(
            csrf_from_init_payload(&json!({"headers": {"X-CSRF-Token": "c"}})),
            Some("c")
        );
        assert_eq!(csrf_from_init_payload(&json!({"token": "t"})), None);
        assert_eq!(
            errors::code_of(&GatewayError::CsrfRejected),
            errors::FORBIDDEN
        );
    }

    #[test]
    fn the_sdl_has_the_main_types_and_no_limits_are_lost() {
        let sdl = sdl();
        for needle in [
            "type BackupConnection",
            "type Mutation {",
            "type Subscription",
            "changes(",
            "phaseCounts(",
        ] {
            assert!(sdl.contains(needle), "{needle} missing from the SDL");
        }
    }

    #[test]
    fn unauthenticated_answers_carry_www_authenticate() {
        let response = error_response(&GatewayError::Unauthenticated);
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            response.headers()[header::WWW_AUTHENTICATE],
            "Bearer realm=\"nac\""
        );
    }

    #[test]
    fn the_console_loads_nothing_from_elsewhere() {
        assert!(!CONSOLE.contains("http://") && !CONSOLE.contains("https://"));
        assert!(!CONSOLE.contains("<script src"));
    }
}
