//! API errors of the emulator, rendered as Kubernetes `Status` objects with kube-apiserver's wording.
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::schema::{FieldError, aggregate_message};

/// Identifies the resource an error is about, for `Status.details` and messages.
#[derive(Debug, Clone, Default)]
pub struct ErrorTarget {
    /// API group ("" for core).
    pub group: String,
    /// Resource plural, e.g. `nonadminbackups`.
    pub resource: String,
    /// Kind, e.g. `NonAdminBackup` (used by Invalid errors).
    pub kind: String,
    /// Object name, when the request named one.
    pub name: String,
}

impl ErrorTarget {
    /// `nonadminbackups.oadp.openshift.io` or `secrets` for the core group.
    pub fn qualified_resource(&self) -> String {
        if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }

    fn qualified_kind(&self) -> String {
        if self.group.is_empty() {
            self.kind.clone()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }
}

/// An error answered to a client; each variant maps to one Kubernetes `StatusReason`.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("Unauthorized")]
    Unauthorized,
    #[error("forbidden: {message}")]
    Forbidden {
        target: ErrorTarget,
        message: String,
    },
    #[error("not found")]
    NotFound(ErrorTarget),
    #[error("the server could not find the requested resource")]
    NoSuchResource,
    #[error("already exists")]
    AlreadyExists(ErrorTarget),
    #[error("conflict: {message}")]
    Conflict {
        target: ErrorTarget,
        message: String,
    },
    #[error("invalid")]
    Invalid {
        target: ErrorTarget,
        errors: Vec<FieldError>,
    },
    #[error("too old resource version")]
    Gone(String),
    /// A 422 without field causes (a JSON patch that cannot be applied).
    #[error("{0}")]
    Unprocessable(String),
    #[error("method not allowed")]
    MethodNotAllowed(String),
    #[error("unsupported media type")]
    UnsupportedMediaType(String),
    #[error("not acceptable")]
    NotAcceptable(String),
    #[error("{message}")]
    Internal { code: u16, message: String },
}

impl ApiError {
    /// HTTP status code of this error.
    pub fn code(&self) -> u16 {
        match self {
            ApiError::BadRequest(_) => 400,
            ApiError::Unauthorized => 401,
            ApiError::Forbidden { .. } => 403,
            ApiError::NotFound(_) | ApiError::NoSuchResource => 404,
            ApiError::MethodNotAllowed(_) => 405,
            ApiError::NotAcceptable(_) => 406,
            ApiError::AlreadyExists(_) | ApiError::Conflict { .. } => 409,
            ApiError::Gone(_) => 410,
            ApiError::UnsupportedMediaType(_) => 415,
            ApiError::Invalid { .. } | ApiError::Unprocessable(_) => 422,
            ApiError::Internal { code, .. } => *code,
        }
    }

    /// The `Status` object kube-apiserver would answer.
    pub fn to_status(&self) -> Value {
        let (reason, message, details): (&str, String, Option<Value>) = match self {
            ApiError::BadRequest(m) => ("BadRequest", m.clone(), None),
            ApiError::Unauthorized => ("Unauthorized", "Unauthorized".into(), None),
            ApiError::Forbidden { target, message } => {
                let prefix = if target.resource.is_empty() {
                    "forbidden: ".to_string()
                } else if target.name.is_empty() {
                    format!("{} is forbidden: ", target.qualified_resource())
                } else {
                    format!(
                        "{} \"{}\" is forbidden: ",
                        target.qualified_resource(),
                        target.name
                    )
                };
                (
                    "Forbidden",
                    format!("{prefix}{message}"),
                    Some(details(target, &target.resource)),
                )
            }
            ApiError::NotFound(t) => (
                "NotFound",
                format!("{} \"{}\" not found", t.qualified_resource(), t.name),
                Some(details(t, &t.resource)),
            ),
            ApiError::NoSuchResource => (
                "NotFound",
                "the server could not find the requested resource".into(),
                None,
            ),
            ApiError::AlreadyExists(t) => (
                "AlreadyExists",
                format!("{} \"{}\" already exists", t.qualified_resource(), t.name),
                Some(details(t, &t.resource)),
            ),
            ApiError::Conflict { target, message } => (
                "Conflict",
                format!(
                    "Operation cannot be fulfilled on {} \"{}\": {message}",
                    target.qualified_resource(),
                    target.name
                ),
                Some(details(target, &target.resource)),
            ),
            ApiError::Invalid { target, errors } => {
                // `ErrorList.ToAggregate`: identical messages once, several in brackets.
                let joined = aggregate_message(errors);
                let mut d = details(target, &target.kind);
                d["causes"] = errors
                    .iter()
                    .map(|e| {
                        json!({"reason": e.kind.cause_reason(), "message": cause_message(e), "field": e.field})
                    })
                    .collect();
                let head = format!("{} \"{}\" is invalid", target.qualified_kind(), target.name);
                (
                    "Invalid",
                    if joined.is_empty() {
                        head
                    } else {
                        format!("{head}: {joined}")
                    },
                    Some(d),
                )
            }
            ApiError::Gone(m) => ("Expired", m.clone(), None),
            // kube's NewGenericServerResponse(422) carries reason Invalid and no causes.
            ApiError::Unprocessable(m) => ("Invalid", m.clone(), None),
            ApiError::MethodNotAllowed(m) => ("MethodNotAllowed", m.clone(), None),
            ApiError::NotAcceptable(m) => ("NotAcceptable", m.clone(), None),
            ApiError::UnsupportedMediaType(m) => ("UnsupportedMediaType", m.clone(), None),
            ApiError::Internal { message, .. } => ("InternalError", message.clone(), None),
        };
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": self.code(),
        });
        if let Some(d) = details {
            status["details"] = d;
        }
        status
    }
}

/// The message of one cause: kube puts the part after the field name there.
fn cause_message(e: &FieldError) -> String {
    let full = e.message();
    let prefix = format!("{}: ", e.field);
    full.strip_prefix(&prefix)
        .map(str::to_string)
        .unwrap_or(full)
}

/// `StatusDetails`: kube omits an empty `group` (core kinds), `kind` and `name`.
fn details(t: &ErrorTarget, kind: &str) -> Value {
    let mut d = json!({});
    if !kind.is_empty() {
        d["kind"] = json!(kind);
    }
    if !t.group.is_empty() {
        d["group"] = json!(t.group);
    }
    if !t.name.is_empty() {
        d["name"] = json!(t.name);
    }
    d
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (code, axum::Json(self.to_status())).into_response();
        if code == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                http::header::WWW_AUTHENTICATE,
                http::HeaderValue::from_static("Bearer realm=\"nac-emulator\""),
            );
        }
        response
    }
}
