//! REST under `/api/v1`: the router, the request middleware (request ids, per-route latency
//! metrics, RateLimit headers), browser sessions ([`session`]), health, metrics, the OpenAPI
//! document and its HTML page, and the web console at `/` (see [`console`]). Every error —
//! including unknown routes, wrong methods and rejected extractors — is problem+json.

pub mod answer;
pub mod docs;
pub mod extract;
pub mod handlers;
pub mod history;
pub mod manifests;
pub mod openapi;
pub mod problem;
pub mod routes;
pub mod schema;
pub mod session;

use std::time::Instant;

use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;

use crate::gateway::metrics::method_label;
use crate::gateway::{Gateway, console};
use extract::RequestSlot;
use problem::REQUEST_ID;

fn valid_request_id(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 64
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

async fn observe(State(gateway): State<Gateway>, mut request: Request, next: Next) -> Response {
    let started = Instant::now();
    let request_id = request
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| valid_request_id(v))
        .map(str::to_string)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let method = method_label(request.method());
    let slot = RequestSlot::default();
    request.extensions_mut().insert(slot.clone());
    let mut response = REQUEST_ID
        .scope(request_id.clone(), next.run(request))
        .await;
    let (route, rate) = slot
        .0
        .lock()
        .map(|mut s| (s.route.take(), s.rate.take()))
        .unwrap_or((None, None));
    let status = response.status().as_u16();
    let route = route.unwrap_or_else(|| "unmatched".into());
    gateway
        .metrics
        .observe(method, &route, status, started.elapsed());
    tracing::debug!(request_id = %request_id, method, route = %route, status, elapsed_ms = started.elapsed().as_millis() as u64, "request");
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        headers.insert("x-request-id", value);
    }
    if let Some(rate) = rate {
        let config = gateway.limiter.config();
        let window = (f64::from(config.burst) / config.per_second.max(0.001)).ceil() as u64;
        for (name, value) in [
            ("ratelimit-limit", rate.limit.to_string()),
            ("ratelimit-remaining", rate.remaining.to_string()),
            (
                "ratelimit-reset",
                rate.reset.as_secs_f64().ceil().to_string(),
            ),
            ("ratelimit-policy", format!("{};w={window}", rate.limit)),
        ] {
            if let Ok(value) = HeaderValue::from_str(&value) {
                headers.insert(name, value);
            }
        }
    }
    response
}

async fn record_route(request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string());
    if let (Some(route), Some(slot)) = (route, request.extensions().get::<RequestSlot>())
        && let Ok(mut slot) = slot.0.lock()
    {
        slot.route = Some(route);
    }
    next.run(request).await
}

async fn openapi_document() -> Response {
    let mut response = openapi::openapi_json().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

async fn documentation() -> Html<String> {
    let document: serde_json::Value =
        serde_json::from_str(&openapi::openapi_json()).unwrap_or_default();
    Html(docs::render(&document))
}

/// Unknown routes: the web console's files and single-page-app routes (browser navigations), else
/// the problem+json 404.
async fn console_or_no_route(request: Request) -> Response {
    let accept = request
        .headers()
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok());
    let accept_encoding = request
        .headers()
        .get(header::ACCEPT_ENCODING)
        .and_then(|value| value.to_str().ok());
    match console::serve(
        request.method(),
        request.uri().path(),
        accept,
        accept_encoding,
    ) {
        Some(response) => response,
        None => handlers::no_route().await.into_response(),
    }
}

/// The gateway's HTTP router: REST routes ([`routes::api`]) plus `others` (GraphQL), under one
/// request middleware.
pub fn router(gateway: Gateway, others: Router) -> Router {
    let (api, _) = routes::api().split_for_parts();
    let api = api
        .route("/openapi.json", get(openapi_document))
        .route("/docs", get(documentation))
        .route(
            "/",
            get(|headers: axum::http::HeaderMap| async move {
                console::index(console::accepts_gzip(
                    headers
                        .get(header::ACCEPT_ENCODING)
                        .and_then(|value| value.to_str().ok()),
                ))
            }),
        )
        .method_not_allowed_fallback(handlers::method_not_allowed)
        .route_layer(middleware::from_fn(record_route))
        .fallback(console_or_no_route);
    // Other transports mounted beside REST (GraphQL) get the same request ids, latency
    // metrics by route template and body limit.
    api.with_state(gateway.clone())
        .merge(others.route_layer(middleware::from_fn(record_route)))
        .layer(DefaultBodyLimit::max(gateway.config.max_body_bytes))
        .layer(middleware::from_fn_with_state(gateway, observe))
}
