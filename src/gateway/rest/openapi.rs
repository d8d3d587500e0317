//! The OpenAPI document of the REST API (utoipa), checked in at `openapi/openapi.json` and
//! served at `/openapi.json`. The custom resources' schemas come from their CRDs, so the
//! document describes exactly what the API server accepts.

use std::sync::LazyLock;

use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::routes;
use crate::gateway::events::{ChangeAction, StreamChange, StreamNotice, StreamReady};
use crate::gateway::resources::TenantResource;
use crate::gateway::service::ArtifactKind;

struct BearerSecurity;

impl Modify for BearerSecurity {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "A token the cluster accepts: an OpenShift user token, a service-account token …",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "session",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                "nac_session",
                "The web console's session cookie, set by POST /api/v1/session (HttpOnly, Secure, SameSite=Strict). A request it authenticates that changes something (any method but GET, HEAD and OPTIONS, and every POST to /graphql) must also send the session's csrfToken in the X-CSRF-Token header, else 403. A bearer token takes precedence and needs no CSRF header.",
            ))),
        );
    }
}

/// The REST API's OpenAPI document without its paths (see [`document`]).
#[derive(OpenApi)]
#[openapi(
    info(
        title = "NAC gateway",
        version = "v1",
        description = "Self-service Velero backups for namespace owners. Every call is authorized with a SubjectAccessReview for the caller; writes are made with the caller's own token (a bearer token, or the one a web console session holds). Errors are RFC 9457 problem+json. Responses carry X-Request-Id and RateLimit-* headers.",
        license(name = "Apache-2.0")
    ),
    // The schemas the operations name come with their paths (see `routes`); these are named by
    // a parameter only (`ArtifactKind`) or by no operation: the event streams' frames (their
    // data: `StreamReady`, `StreamChange`, `StreamNotice`; their names: `ChangeAction`) and
    // `TenantResource`.
    components(schemas(
        ArtifactKind,
        ChangeAction,
        StreamChange,
        StreamNotice,
        StreamReady,
        TenantResource
    )),
    modifiers(&BearerSecurity),
    tags(
        (name = "namespaces", description = "Namespaces the caller may use"),
        (name = "backups", description = "NonAdminBackups"),
        (name = "restores", description = "NonAdminRestores"),
        (name = "storage-locations", description = "NonAdminBackupStorageLocations"),
        (name = "schedules", description = "NonAdminSchedules"),
        (name = "queue", description = "Velero queue positions"),
        (name = "policy", description = "The administrator's policy in force"),
        (name = "shared-storage", description = "The namespace's place in the administrator's shared backup pool"),
        (name = "history", description = "Operation history, statistics and coverage (kept after the custom resources are gone)"),
        (name = "events", description = "Live changes (Server-Sent Events)"),
        (name = "session", description = "Web console sign-in: a session cookie instead of a bearer token"),
        (name = "health", description = "Health and metrics"),
    )
)]
pub struct ApiDoc;

/// The document: [`ApiDoc`] with the paths (and the schemas they name) of [`routes::api`].
pub fn document() -> utoipa::openapi::OpenApi {
    let mut document = ApiDoc::openapi();
    document.merge(routes::api().into_openapi());
    document
}

/// The document as pretty JSON with a trailing newline (the checked-in form).
pub fn openapi_json() -> String {
    static JSON: LazyLock<String> = LazyLock::new(|| {
        let mut text = document().to_pretty_json().unwrap_or_else(|_| "{}".into());
        text.push('\n');
        text
    });
    JSON.clone()
}
