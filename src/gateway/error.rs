//! What can go wrong in a gateway operation, independent of the transport. REST maps each
//! variant to an RFC 9457 problem (`rest::problem`); GraphQL to an error code. Messages name
//! only what the caller asked for: never another namespace's objects, never a token, never a
//! URL of object storage, never an internal error's text.

use std::time::Duration;

use crate::policy::{PolicyViolation, ViolationReason};

/// One refused field.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct FieldError {
    /// Path of the field, e.g. `spec.backupSpec.includedNamespaces`.
    pub field: String,
    /// What is wrong with it.
    pub message: String,
    /// Machine-readable category (restricted, enforced, above-maximum, not-allowed, missing,
    /// invalid).
    pub reason: String,
}

impl FieldError {
    /// A field error of category `reason`.
    pub fn new(field: impl Into<String>, message: impl Into<String>, reason: &str) -> Self {
        FieldError {
            field: field.into(),
            message: message.into(),
            reason: reason.to_string(),
        }
    }
}

impl From<&PolicyViolation> for FieldError {
    fn from(violation: &PolicyViolation) -> Self {
        let reason = match violation.reason {
            ViolationReason::Restricted => "restricted",
            ViolationReason::Enforced => "enforced",
            ViolationReason::AboveMaximum => "above-maximum",
            ViolationReason::NotAllowed => "not-allowed",
            ViolationReason::Missing => "missing",
            ViolationReason::Invalid => "invalid",
        };
        FieldError::new(&violation.field, &violation.message, reason)
    }
}

/// Failures of gateway operations.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum GatewayError {
    /// No token, a malformed one, or one the cluster does not accept.
    #[error("a valid bearer token is required")]
    Unauthenticated,
    /// The caller may not do `verb` on `resource` in `namespace`.
    #[error("you may not {verb} {resource} in namespace {namespace}")]
    Forbidden {
        /// Verb checked.
        verb: &'static str,
        /// Resource checked.
        resource: &'static str,
        /// Namespace checked.
        namespace: String,
    },
    /// A request authenticated by the session cookie that changes something came without the
    /// session's CSRF token in `X-CSRF-Token` (or with another one).
    #[error(
        "this request is authenticated by the session cookie and must carry the session's CSRF token in the X-CSRF-Token header"
    )]
    CsrfRejected,
    /// The object does not exist (only said inside a namespace the caller may read).
    #[error("{kind} {name:?} not found in namespace {namespace}")]
    NotFound {
        /// Kind.
        kind: &'static str,
        /// Namespace.
        namespace: String,
        /// Name asked for.
        name: String,
    },
    /// Creating an object whose name is taken.
    #[error("{kind} {name:?} already exists in namespace {namespace}")]
    AlreadyExists {
        /// Kind.
        kind: &'static str,
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
    },
    /// The object changed or is in a state that does not allow the operation.
    #[error("{0}")]
    Conflict(String),
    /// The request is well-formed but refused by policy or validation.
    #[error("{detail}")]
    Invalid {
        /// Summary.
        detail: String,
        /// The fields to change.
        errors: Vec<FieldError>,
    },
    /// The request cannot be understood (bad JSON, bad parameters, bad paging token).
    #[error("{0}")]
    BadRequest(String),
    /// The body is larger than allowed.
    #[error("the request body is larger than {limit} bytes")]
    PayloadTooLarge {
        /// The limit.
        limit: usize,
    },
    /// The body is not JSON.
    #[error("the request body must be JSON (Content-Type: application/json)")]
    UnsupportedMediaType,
    /// The Idempotency-Key was used before with another request body.
    #[error("this Idempotency-Key was already used with a different request")]
    IdempotencyKeyReused,
    /// A request with the same Idempotency-Key is still being processed.
    #[error("a request with this Idempotency-Key is still being processed")]
    IdempotencyKeyInFlight,
    /// Too many requests from this caller.
    #[error("too many requests; retry in {} s", retry_after.as_secs().max(1))]
    RateLimited {
        /// When the next request will be accepted.
        retry_after: Duration,
    },
    /// The caller already holds as many live streams as one user may on this replica.
    #[error(
        "you have {limit} live streams open on this gateway, the most one user may; close one (an event stream or a subscription), then open this one"
    )]
    TooManyStreams {
        /// The limit per user.
        limit: usize,
    },
    /// The route does not exist.
    #[error("no such endpoint: {0}")]
    NoRoute(String),
    /// The route exists but not with this method.
    #[error("method not allowed")]
    MethodNotAllowed,
    /// An artifact (log, results …) is not available (yet).
    #[error("{0}")]
    ArtifactUnavailable(String),
    /// The backup exists and has completed, but its manifest is still being built: not an
    /// error but an answer to retry (202 Accepted with `Retry-After`).
    #[error(
        "backup {name:?} in namespace {namespace} has completed and its manifest is being built; retry in {} s",
        retry_after.as_secs().max(1)
    )]
    ManifestPending {
        /// Namespace of the backup.
        namespace: String,
        /// The backup.
        name: String,
        /// When to ask again.
        retry_after: Duration,
    },
    /// The gateway cannot answer now (caches syncing, API server unreachable).
    #[error("{0}")]
    Unavailable(String),
    /// The API server or object storage failed; details are logged, not shown.
    #[error("the cluster did not complete the request")]
    Upstream,
}

impl GatewayError {
    /// A 422 from policy violations of a `kind` request.
    pub fn from_violations(kind: &str, violations: &[PolicyViolation]) -> Self {
        GatewayError::Invalid {
            detail: format!(
                "the {kind} is refused by policy: {}",
                crate::policy::violations_message(violations)
            ),
            errors: violations.iter().map(FieldError::from).collect(),
        }
    }

    /// A 422 about one field.
    pub fn invalid_field(field: &str, message: impl Into<String>) -> Self {
        let message = message.into();
        GatewayError::Invalid {
            detail: message.clone(),
            errors: vec![FieldError::new(field, message, "invalid")],
        }
    }

    /// The HTTP status code of this error.
    pub fn status_code(&self) -> u16 {
        match self {
            GatewayError::ManifestPending { .. } => 202,
            GatewayError::Unauthenticated => 401,
            GatewayError::Forbidden { .. } | GatewayError::CsrfRejected => 403,
            GatewayError::NotFound { .. } | GatewayError::NoRoute(_) => 404,
            GatewayError::MethodNotAllowed => 405,
            GatewayError::AlreadyExists { .. }
            | GatewayError::Conflict(_)
            | GatewayError::IdempotencyKeyInFlight
            | GatewayError::ArtifactUnavailable(_) => 409,
            GatewayError::PayloadTooLarge { .. } => 413,
            GatewayError::UnsupportedMediaType => 415,
            GatewayError::Invalid { .. } | GatewayError::IdempotencyKeyReused => 422,
            GatewayError::BadRequest(_) => 400,
            GatewayError::RateLimited { .. } | GatewayError::TooManyStreams { .. } => 429,
            GatewayError::Upstream => 502,
            GatewayError::Unavailable(_) => 503,
        }
    }

    /// A short stable identifier of the error kind (the problem type's last segment and the
    /// GraphQL error code).
    pub fn code(&self) -> &'static str {
        match self {
            GatewayError::Unauthenticated => "unauthenticated",
            GatewayError::Forbidden { .. } => "forbidden",
            GatewayError::CsrfRejected => "csrf-token",
            GatewayError::NotFound { .. } => "not-found",
            GatewayError::AlreadyExists { .. } => "already-exists",
            GatewayError::Conflict(_) => "conflict",
            GatewayError::Invalid { .. } => "invalid",
            GatewayError::BadRequest(_) => "bad-request",
            GatewayError::PayloadTooLarge { .. } => "payload-too-large",
            GatewayError::UnsupportedMediaType => "unsupported-media-type",
            GatewayError::IdempotencyKeyReused => "idempotency-key-reused",
            GatewayError::IdempotencyKeyInFlight => "idempotency-key-in-flight",
            GatewayError::RateLimited { .. } => "rate-limited",
            GatewayError::TooManyStreams { .. } => "too-many-streams",
            GatewayError::NoRoute(_) => "no-route",
            GatewayError::MethodNotAllowed => "method-not-allowed",
            GatewayError::ArtifactUnavailable(_) => "artifact-unavailable",
            GatewayError::ManifestPending { .. } => "manifest-pending",
            GatewayError::Unavailable(_) => "unavailable",
            GatewayError::Upstream => "upstream",
        }
    }

    /// A human title for the error kind.
    pub fn title(&self) -> &'static str {
        match self {
            GatewayError::Unauthenticated => "Unauthenticated",
            GatewayError::Forbidden { .. } => "Forbidden",
            GatewayError::CsrfRejected => "Missing or wrong CSRF token",
            GatewayError::NotFound { .. } => "Not found",
            GatewayError::AlreadyExists { .. } => "Already exists",
            GatewayError::Conflict(_) => "Conflict",
            GatewayError::Invalid { .. } => "Invalid request",
            GatewayError::BadRequest(_) => "Bad request",
            GatewayError::PayloadTooLarge { .. } => "Payload too large",
            GatewayError::UnsupportedMediaType => "Unsupported media type",
            GatewayError::IdempotencyKeyReused => "Idempotency-Key reused",
            GatewayError::IdempotencyKeyInFlight => "Idempotency-Key in flight",
            GatewayError::RateLimited { .. } => "Too many requests",
            GatewayError::TooManyStreams { .. } => "Too many open streams",
            GatewayError::NoRoute(_) => "Not found",
            GatewayError::MethodNotAllowed => "Method not allowed",
            GatewayError::ArtifactUnavailable(_) => "Artifact unavailable",
            GatewayError::ManifestPending { .. } => "Manifest being built",
            GatewayError::Unavailable(_) => "Service unavailable",
            GatewayError::Upstream => "Bad gateway",
        }
    }

    /// The field errors, if any.
    pub fn field_errors(&self) -> &[FieldError] {
        match self {
            GatewayError::Invalid { errors, .. } => errors,
            _ => &[],
        }
    }
}

/// Maps a failed write made with the caller's token to a gateway error, without passing the
/// API server's text through for anything but validation causes of the caller's own object.
pub fn from_write_error(
    error: kube::Error,
    kind: &'static str,
    namespace: &str,
    name: &str,
    verb: &'static str,
    resource: &'static str,
) -> GatewayError {
    match error {
        kube::Error::Api(status) => match status.code {
            401 => GatewayError::Unauthenticated,
            403 => GatewayError::Forbidden {
                verb,
                resource,
                namespace: namespace.to_string(),
            },
            404 => GatewayError::NotFound {
                kind,
                namespace: namespace.to_string(),
                name: name.to_string(),
            },
            409 if status.reason == "AlreadyExists" => GatewayError::AlreadyExists {
                kind,
                namespace: namespace.to_string(),
                name: name.to_string(),
            },
            409 => {
                GatewayError::Conflict(format!("{kind} {name:?} was changed concurrently; retry"))
            }
            422 | 400 => GatewayError::Invalid {
                detail: format!("the API server refused the {kind}: {}", status.message),
                errors: Vec::new(),
            },
            429 => GatewayError::RateLimited {
                retry_after: Duration::from_secs(1),
            },
            code => {
                tracing::warn!(code, reason = %status.reason, "write refused by the API server");
                GatewayError::Upstream
            }
        },
        other => {
            tracing::warn!(error = %other, "write to the API server failed");
            GatewayError::Upstream
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn policy_violations_become_field_errors() {
        let violations = vec![PolicyViolation::new(
            ViolationReason::Restricted,
            "spec.backupSpec.includedNamespaces",
            "NonAdminBackup spec.backupSpec.includedNamespaces is restricted",
        )];
        let error = GatewayError::from_violations("NonAdminBackup", &violations);
        assert_eq!(error.status_code(), 422);
        assert_eq!(error.field_errors().len(), 1);
        assert_eq!(error.field_errors()[0].reason, "restricted");
        assert_eq!(
            error.field_errors()[0].field,
            "spec.backupSpec.includedNamespaces"
        );
    }

    #[test]
    fn api_server_errors_map_without_leaking_text() {
        let status = |code: u16, reason: &str, message: &str| {
            kube::Error::Api(
                kube::core::Status::failure(message, reason)
                    .with_code(code)
                    .boxed(),
            )
        };
        let forbidden = from_write_error(
            status(403, "Forbidden", "secret internals"),
            "NonAdminBackup",
            "team-a",
            "x",
            "create",
            "nonadminbackups",
        );
        assert_eq!(forbidden.status_code(), 403);
        assert!(!forbidden.to_string().contains("secret internals"));
        let exists = from_write_error(
            status(409, "AlreadyExists", "exists"),
            "NonAdminBackup",
            "team-a",
            "x",
            "create",
            "nonadminbackups",
        );
        assert_eq!(exists.code(), "already-exists");
        let server = from_write_error(
            status(500, "InternalError", "etcd at 10.0.0.1 down"),
            "NonAdminBackup",
            "team-a",
            "x",
            "create",
            "nonadminbackups",
        );
        assert_eq!(server.status_code(), 502);
        assert!(!server.to_string().contains("10.0.0.1"));
    }
}
