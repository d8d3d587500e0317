//! How JSON answers are written: [`ApiJson`], a body of the type the handler's
//! `#[utoipa::path]` names (so the document's schema is the type serialized), and the byte-level
//! helpers for the answers written by hand (presented Kubernetes objects, served from cached
//! bytes).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::Value;

use super::problem::Problem;
use crate::gateway::error::GatewayError;

/// A JSON answer (`application/json`) of a documented type; 200 unless paired with another
/// status (`(StatusCode::ACCEPTED, ApiJson(…))`).
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

impl<T: Serialize> IntoResponse for ApiJson<T> {
    fn into_response(self) -> Response {
        match serde_json::to_vec(&self.0) {
            Ok(body) => json_bytes_response(StatusCode::OK, body),
            // Never with the gateway's view types; a 5xx problem rather than a half body.
            Err(_) => Problem(GatewayError::Upstream).into_response(),
        }
    }
}

/// A JSON answer from already serialized bytes.
pub(super) fn json_bytes_response(
    status: StatusCode,
    body: impl Into<axum::body::Body>,
) -> Response {
    let mut response = (status, body.into()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A JSON answer built by hand.
pub(super) fn json_response(status: StatusCode, body: &Value) -> Response {
    json_bytes_response(status, serde_json::to_vec(body).unwrap_or_default())
}
