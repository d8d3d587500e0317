//! GraphQL errors: every [`GatewayError`] becomes an error whose `extensions.code` is one of
//! `UNAUTHENTICATED`, `FORBIDDEN`, `NOT_FOUND`, `INVALID` (with `extensions.fieldErrors`),
//! `BAD_REQUEST`, `CONFLICT`, `RATE_LIMITED` (with `extensions.retryAfterSeconds`),
//! `MANIFEST_PENDING` (a completed backup's manifest is still being built; with
//! `extensions.retryAfterSeconds`), `UNAVAILABLE` or `INTERNAL`, plus `extensions.reason`, the
//! gateway's finer kebab-case code.
//! The message is the gateway error's own text, which names only what the caller asked for.
//! Errors raised by GraphQL itself get a code too: `QUERY_TOO_DEEP`, `QUERY_TOO_COMPLEX`,
//! and `BAD_REQUEST` for parse and validation failures. `INCOMPLETE` is not a failure: it
//! comes beside a list (`namespaces`) that goes on, with `extensions.continue`.

use std::sync::Arc;

use async_graphql::extensions::{
    Extension, ExtensionContext, ExtensionFactory, NextParseQuery, NextValidation,
};
use async_graphql::parser::types::ExecutableDocument;
use async_graphql::{
    ErrorExtensions, ServerResult, ValidationResult, Value as GqlValue, Variables,
};

use crate::gateway::error::GatewayError;

/// `extensions.code` for missing or refused tokens.
pub const UNAUTHENTICATED: &str = "UNAUTHENTICATED";
/// `extensions.code` for refused access checks.
pub const FORBIDDEN: &str = "FORBIDDEN";
/// `extensions.code` for missing objects.
pub const NOT_FOUND: &str = "NOT_FOUND";
/// `extensions.code` for requests refused by validation or policy.
pub const INVALID: &str = "INVALID";
/// `extensions.code` for malformed requests (bad cursor, selector, query).
pub const BAD_REQUEST: &str = "BAD_REQUEST";
/// `extensions.code` for conflicts (name taken, concurrent change, not finished yet).
pub const CONFLICT: &str = "CONFLICT";
/// `extensions.code` when the caller is over their rate limit.
pub const RATE_LIMITED: &str = "RATE_LIMITED";
/// `extensions.code` when the gateway cannot answer now.
pub const UNAVAILABLE: &str = "UNAVAILABLE";
/// `extensions.code` for a completed backup whose manifest is still being built (with
/// `extensions.retryAfterSeconds`): ask again then.
pub const MANIFEST_PENDING: &str = "MANIFEST_PENDING";
/// `extensions.code` beside a list that goes on: more remained than one request may check;
/// `extensions.continue` is the `after` of the next page.
pub const INCOMPLETE: &str = "INCOMPLETE";
/// `extensions.code` for failures of the cluster or the gateway.
pub const INTERNAL: &str = "INTERNAL";
/// `extensions.code` for queries nested deeper than allowed.
pub const QUERY_TOO_DEEP: &str = "QUERY_TOO_DEEP";
/// `extensions.code` for queries above the complexity budget.
pub const QUERY_TOO_COMPLEX: &str = "QUERY_TOO_COMPLEX";

/// The GraphQL code of a gateway error.
pub fn code_of(error: &GatewayError) -> &'static str {
    match error {
        GatewayError::Unauthenticated => UNAUTHENTICATED,
        GatewayError::Forbidden { .. } | GatewayError::CsrfRejected => FORBIDDEN,
        GatewayError::NotFound { .. } | GatewayError::NoRoute(_) => NOT_FOUND,
        GatewayError::Invalid { .. } | GatewayError::IdempotencyKeyReused => INVALID,
        GatewayError::BadRequest(_)
        | GatewayError::PayloadTooLarge { .. }
        | GatewayError::UnsupportedMediaType
        | GatewayError::MethodNotAllowed => BAD_REQUEST,
        GatewayError::AlreadyExists { .. }
        | GatewayError::Conflict(_)
        | GatewayError::IdempotencyKeyInFlight
        | GatewayError::ArtifactUnavailable(_) => CONFLICT,
        GatewayError::RateLimited { .. } | GatewayError::TooManyStreams { .. } => RATE_LIMITED,
        GatewayError::ManifestPending { .. } => MANIFEST_PENDING,
        GatewayError::Unavailable(_) => UNAVAILABLE,
        GatewayError::Upstream => INTERNAL,
    }
}

/// The GraphQL error of a gateway error.
pub fn to_graphql(error: &GatewayError) -> async_graphql::Error {
    let code = code_of(error);
    let reason = error.code();
    let field_errors = error.field_errors().to_vec();
    let retry_after = match error {
        GatewayError::RateLimited { retry_after }
        | GatewayError::ManifestPending { retry_after, .. } => Some(retry_after.as_secs().max(1)),
        _ => None,
    };
    async_graphql::Error::new(error.to_string()).extend_with(move |_, extensions| {
        extensions.set("code", code);
        extensions.set("reason", reason);
        if !field_errors.is_empty() {
            let list: Vec<GqlValue> = field_errors
                .iter()
                .map(|field| {
                    let mut object = async_graphql::indexmap::IndexMap::new();
                    object.insert(
                        async_graphql::Name::new("field"),
                        GqlValue::from(field.field.clone()),
                    );
                    object.insert(
                        async_graphql::Name::new("message"),
                        GqlValue::from(field.message.clone()),
                    );
                    object.insert(
                        async_graphql::Name::new("reason"),
                        GqlValue::from(field.reason.clone()),
                    );
                    GqlValue::Object(object)
                })
                .collect();
            extensions.set("fieldErrors", GqlValue::List(list));
        }
        if let Some(seconds) = retry_after {
            extensions.set("retryAfterSeconds", seconds);
        }
    })
}

/// Converts service results in resolvers: `service.list(...).await.gql()?`.
pub trait GqlResult<T> {
    /// The result with a GraphQL error.
    fn gql(self) -> async_graphql::Result<T>;
}

impl<T> GqlResult<T> for Result<T, GatewayError> {
    fn gql(self) -> async_graphql::Result<T> {
        self.map_err(|error| to_graphql(&error))
    }
}

/// The code for an error GraphQL raised itself (parsing, validation, limits), from its message.
pub fn code_for_engine_error(message: &str) -> &'static str {
    if message.contains("nested too deep") {
        QUERY_TOO_DEEP
    } else if message.contains("too complex") {
        QUERY_TOO_COMPLEX
    } else {
        BAD_REQUEST
    }
}

fn give_code(error: &mut async_graphql::ServerError) {
    let has_code = error
        .extensions
        .as_ref()
        .is_some_and(|extensions| extensions.get("code").is_some());
    if !has_code {
        let code = code_for_engine_error(&error.message);
        error
            .extensions
            .get_or_insert_with(Default::default)
            .set("code", code);
    }
}

/// A schema extension giving parse and validation errors (including the depth and complexity
/// limits) their code, over HTTP and WebSocket alike.
#[derive(Debug, Default, Clone, Copy)]
pub struct EngineErrorCodes;

impl ExtensionFactory for EngineErrorCodes {
    fn create(&self) -> Arc<dyn Extension> {
        Arc::new(EngineErrorCodes)
    }
}

#[async_graphql::async_trait::async_trait]
impl Extension for EngineErrorCodes {
    async fn parse_query(
        &self,
        ctx: &ExtensionContext<'_>,
        query: &str,
        variables: &Variables,
        next: NextParseQuery<'_>,
    ) -> ServerResult<ExecutableDocument> {
        next.run(ctx, query, variables).await.map_err(|mut error| {
            give_code(&mut error);
            error
        })
    }

    async fn validation(
        &self,
        ctx: &ExtensionContext<'_>,
        next: NextValidation<'_>,
    ) -> Result<ValidationResult, Vec<async_graphql::ServerError>> {
        next.run(ctx).await.map_err(|mut errors| {
            errors.iter_mut().for_each(give_code);
            errors
        })
    }
}

/// Gives every error of `response` that has no code one (errors raised by the engine).
pub fn ensure_codes(response: &mut async_graphql::Response) {
    response.errors.iter_mut().for_each(give_code);
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::gateway::error::FieldError;

    fn extensions_of(error: &GatewayError) -> serde_json::Value {
        let graphql = to_graphql(error).into_server_error(async_graphql::Pos::default());
        serde_json::to_value(&graphql).unwrap()["extensions"].clone()
    }

    #[test]
    fn every_gateway_error_has_a_code() {
        let cases = [
            (GatewayError::Unauthenticated, UNAUTHENTICATED),
            (
                GatewayError::Forbidden {
                    verb: "list",
                    resource: "nonadminbackups",
                    namespace: "team-a".into(),
                },
                FORBIDDEN,
            ),
            (
                GatewayError::NotFound {
                    kind: "NonAdminBackup",
                    namespace: "team-a".into(),
                    name: "x".into(),
                },
                NOT_FOUND,
            ),
            (
                GatewayError::AlreadyExists {
                    kind: "NonAdminBackup",
                    namespace: "team-a".into(),
                    name: "x".into(),
                },
                CONFLICT,
            ),
            (GatewayError::Conflict("changed".into()), CONFLICT),
            (
                GatewayError::invalid_field("spec.schedule", "bad cron"),
                INVALID,
            ),
            (GatewayError::BadRequest("bad token".into()), BAD_REQUEST),
            (
                GatewayError::RateLimited {
                    retry_after: Duration::from_millis(300),
                },
                RATE_LIMITED,
            ),
            (GatewayError::Unavailable("syncing".into()), UNAVAILABLE),
            (GatewayError::Upstream, INTERNAL),
        ];
        for (error, code) in cases {
            let extensions = extensions_of(&error);
            assert_eq!(extensions["code"], code, "{error:?}");
            assert_eq!(extensions["reason"], error.code(), "{error:?}");
        }
    }

    #[test]
    fn invalid_carries_field_errors_and_rate_limits_the_retry() {
        let error = GatewayError::Invalid {
            detail: "refused by policy".into(),
            errors: vec![FieldError::new(
                "spec.backupSpec.includedNamespaces",
                "restricted",
                "restricted",
            )],
        };
        let extensions = extensions_of(&error);
        assert_eq!(
            extensions["fieldErrors"][0]["field"],
            "spec.backupSpec.includedNamespaces"
        );
        assert_eq!(extensions["fieldErrors"][0]["reason"], "restricted");
        let limited = extensions_of(&GatewayError::RateLimited {
            retry_after: Duration::from_millis(10),
        });
        assert_eq!(limited["retryAfterSeconds"], 1);
        let pending = extensions_of(&GatewayError::ManifestPending {
            namespace: "team-a".into(),
            name: "nightly".into(),
            retry_after: Duration::from_secs(2),
        });
        assert_eq!(pending["code"], MANIFEST_PENDING);
        assert_eq!(pending["reason"], "manifest-pending");
        assert_eq!(pending["retryAfterSeconds"], 2);
    }

    #[test]
    fn upstream_errors_say_nothing_internal() {
        let graphql = to_graphql(&GatewayError::Upstream);
        assert_eq!(graphql.message, "the cluster did not complete the request");
    }

    #[test]
    fn engine_errors_get_codes() {
        assert_eq!(
            code_for_engine_error("Query is nested too deep."),
            QUERY_TOO_DEEP
        );
        assert_eq!(
            code_for_engine_error("Query is too complex."),
            QUERY_TOO_COMPLEX
        );
        assert_eq!(
            code_for_engine_error("Unknown field \"x\" on type \"Query\"."),
            BAD_REQUEST
        );
        let mut response = async_graphql::Response::from_errors(vec![
            async_graphql::ServerError::new("Query is too complex.", None),
            to_graphql(&GatewayError::Unauthenticated)
                .into_server_error(async_graphql::Pos::default()),
        ]);
        ensure_codes(&mut response);
        let json = serde_json::to_value(&response).unwrap();
        assert_eq!(json["errors"][0]["extensions"]["code"], QUERY_TOO_COMPLEX);
        assert_eq!(json["errors"][1]["extensions"]["code"], UNAUTHENTICATED);
    }
}
