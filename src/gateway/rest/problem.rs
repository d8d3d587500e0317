//! RFC 9457 problem details: every error the gateway answers — its own, a rejected extractor, an
//! unknown route — is `application/problem+json` with a stable `type`, the request id, and for
//! validation errors the fields to change. 5xx bodies never carry internal error text.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::gateway::error::{FieldError, GatewayError};

/// Base of every problem `type` URI.
pub const PROBLEM_TYPE_BASE: &str = "https://nac.openshift.io/problems/";
/// The media type.
pub const PROBLEM_CONTENT_TYPE: &str = "application/problem+json";

tokio::task_local! {
    /// The id of the request being served (set by the request middleware).
    pub static REQUEST_ID: String;
}

/// The body of an error answer.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProblemDetails {
    /// URI identifying the kind of problem.
    #[serde(rename = "type")]
    pub problem_type: String,
    /// Short summary of the kind of problem.
    pub title: String,
    /// HTTP status.
    pub status: u16,
    /// What went wrong, for people.
    pub detail: String,
    /// Stable machine-readable code (the last segment of `type`).
    pub code: String,
    /// The request's id (also in the `X-Request-Id` header).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// Fields to change, for validation errors.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FieldError>,
}

impl ProblemDetails {
    /// The problem for `error`.
    pub fn of(error: &GatewayError) -> Self {
        let request_id = REQUEST_ID.try_with(|id| id.clone()).ok();
        ProblemDetails {
            problem_type: format!("{PROBLEM_TYPE_BASE}{}", error.code()),
            title: error.title().to_string(),
            status: error.status_code(),
            detail: error.to_string(),
            code: error.code().to_string(),
            request_id,
            errors: error.field_errors().to_vec(),
        }
    }
}

/// An error answer.
#[derive(Debug)]
pub struct Problem(pub GatewayError);

impl From<GatewayError> for Problem {
    fn from(error: GatewayError) -> Self {
        Problem(error)
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let details = ProblemDetails::of(&self.0);
        let status =
            StatusCode::from_u16(details.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = serde_json::to_vec(&details).unwrap_or_default();
        let mut response = (status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(PROBLEM_CONTENT_TYPE),
        );
        match &self.0 {
            GatewayError::Unauthenticated => {
                headers.insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"nac\""),
                );
            }
            GatewayError::RateLimited { retry_after }
            | GatewayError::ManifestPending { retry_after, .. } => {
                if let Ok(value) = HeaderValue::from_str(&retry_after.as_secs().max(1).to_string())
                {
                    headers.insert(header::RETRY_AFTER, value);
                }
            }
            GatewayError::Unavailable(_) => {
                // Every 503 is temporary (caches loading, history store down): say when to retry.
                headers.insert(
                    header::RETRY_AFTER,
                    HeaderValue::from(crate::gateway::operations::RETRY_AFTER_SECONDS),
                );
            }
            _ => {}
        }
        response
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    async fn answer(error: GatewayError) -> (StatusCode, axum::http::HeaderMap, serde_json::Value) {
        let response = REQUEST_ID
            .scope("req-1".to_string(), async move {
                Problem(error).into_response()
            })
            .await;
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, headers, serde_json::from_slice(&body).unwrap())
    }

    #[tokio::test]
    async fn every_error_is_problem_json_with_its_status() {
        let cases = [
            (GatewayError::Unauthenticated, 401),
            (
                GatewayError::Forbidden {
                    verb: "get",
                    resource: "nonadminbackups",
                    namespace: "team-b".into(),
                },
                403,
            ),
            (GatewayError::CsrfRejected, 403),
            (GatewayError::NoRoute("/x".into()), 404),
            (GatewayError::MethodNotAllowed, 405),
            (GatewayError::IdempotencyKeyInFlight, 409),
            (GatewayError::PayloadTooLarge { limit: 10 }, 413),
            (GatewayError::UnsupportedMediaType, 415),
            (GatewayError::invalid_field("spec", "bad"), 422),
            (
                GatewayError::RateLimited {
                    retry_after: std::time::Duration::from_secs(3),
                },
                429,
            ),
            (GatewayError::Upstream, 502),
            (GatewayError::Unavailable("loading".into()), 503),
        ];
        for (error, status) in cases {
            let code = error.code();
            let (got, headers, body) = answer(error).await;
            assert_eq!(got.as_u16(), status);
            assert_eq!(headers[header::CONTENT_TYPE], PROBLEM_CONTENT_TYPE);
            assert_eq!(body["status"], status);
            assert_eq!(body["type"], format!("{PROBLEM_TYPE_BASE}{code}"));
            assert_eq!(body["requestId"], "req-1");
        }
    }

    #[tokio::test]
    async fn auth_and_rate_limit_problems_carry_their_headers() {
        let (_, headers, _) = answer(GatewayError::Unauthenticated).await;
        assert_eq!(headers[header::WWW_AUTHENTICATE], "Bearer realm=\"nac\"");
        let (_, headers, _) = answer(GatewayError::RateLimited {
            retry_after: std::time::Duration::from_secs(3),
        })
        .await;
        assert_eq!(headers[header::RETRY_AFTER], "3");
        let (_, headers, _) = answer(GatewayError::Unavailable("down".into())).await;
        assert_eq!(headers[header::RETRY_AFTER], "5");
        let (status, headers, body) = answer(GatewayError::ManifestPending {
            namespace: "team-a".into(),
            name: "nightly".into(),
            retry_after: std::time::Duration::from_secs(2),
        })
        .await;
        assert_eq!(status, StatusCode::ACCEPTED);
        assert_eq!(headers[header::RETRY_AFTER], "2");
        assert_eq!(headers[header::CONTENT_TYPE], PROBLEM_CONTENT_TYPE);
        assert_eq!(body["code"], "manifest-pending");
        assert_eq!(body["status"], 202);
        assert!(
            body["detail"]
                .as_str()
                .unwrap()
                .contains("manifest is being built")
        );
        let (_, _, body) = answer(GatewayError::CsrfRejected).await;
        assert_eq!(body["title"], "Missing or wrong CSRF token");
        assert!(body["detail"].as_str().unwrap().contains("X-CSRF-Token"));
        let (_, _, body) = answer(GatewayError::invalid_field("spec.x", "bad x")).await;
        assert_eq!(body["errors"][0]["field"], "spec.x");
    }
}
