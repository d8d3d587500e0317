//! The OpenAPI document of the REST API (utoipa), checked in at `openapi/openapi.json` and
//! served at `/openapi.json`. The custom resources' schemas come from their CRDs, so the
//! document describes exactly what the API server accepts.

use std::borrow::Cow;

use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ObjectBuilder, RefOr, Schema};
use utoipa::{Modify, OpenApi, PartialSchema, ToSchema};

use super::handlers;
use super::history;
use super::manifests;
use super::problem::ProblemDetails;
use super::session;
use crate::api::crds;
use crate::gateway::auth::session::SessionInfo;
use crate::gateway::error::FieldError;
use crate::gateway::events::ChangeAction;
use crate::gateway::manifests::{
    BackupDiff, BackupDryRun, ContentsPage, OperationOverlaps, RestorePreviewView,
};
use crate::gateway::operations::{
    KindStatistics, NamespaceCoverage, NamespaceStatistics, Operation, OperationDetail,
    OperationPage, QueueEta, TimelineEntry,
};
use crate::gateway::resources::TenantResource;
use crate::gateway::service::{
    ArtifactKind, ClusterQueue, DeleteOutcome, DeletionView, Description, NamespaceAccess,
    NamespaceList, NamespaceQueue, PolicyView, QueueCounts, QueueItem, RulesView,
};
use crate::gateway::shared_storage::{SharedStorage, SharedStorageState};
use crate::manifest::export::ManifestDocument;
use crate::manifest::graph::OwnerGraphView;

/// The OpenAPI schema of a NAC custom resource, from its CRD (`openAPIV3Schema`).
fn crd_schema(plural: &str, description: &str) -> RefOr<Schema> {
    let schema = crds::nac_crds()
        .into_iter()
        .find(|crd| crd.spec.names.plural == plural)
        .and_then(|crd| crd.spec.versions.into_iter().next())
        .and_then(|version| version.schema)
        .and_then(|validation| validation.open_api_v3_schema)
        .and_then(|schema| serde_json::to_value(schema).ok())
        .and_then(|value| serde_json::from_value::<RefOr<Schema>>(value).ok());
    schema.unwrap_or_else(|| {
        RefOr::T(Schema::Object(
            ObjectBuilder::new().description(Some(description)).build(),
        ))
    })
}

macro_rules! crd_document {
    ($name:ident, $schema_name:literal, $plural:literal) => {
        #[doc = concat!("The `", $schema_name, "` custom resource (schema from its CRD).")]
        #[derive(Debug)]
        pub struct $name;

        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                crd_schema($plural, concat!("A ", $schema_name, " custom resource"))
            }
        }

        impl ToSchema for $name {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed($schema_name)
            }
        }
    };
}

crd_document!(NonAdminBackupDoc, "NonAdminBackup", "nonadminbackups");
crd_document!(NonAdminRestoreDoc, "NonAdminRestore", "nonadminrestores");
crd_document!(
    NonAdminBackupStorageLocationDoc,
    "NonAdminBackupStorageLocation",
    "nonadminbackupstoragelocations"
);
crd_document!(NonAdminScheduleDoc, "NonAdminSchedule", "nonadminschedules");

/// A page of objects in the Kubernetes list shape.
#[derive(Debug, serde::Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectList {
    /// `oadp.openshift.io/v1alpha1`.
    pub api_version: String,
    /// `<Kind>List`.
    pub kind: String,
    /// `continue`: the token of the next page, when there is one.
    #[schema(value_type = Object)]
    pub metadata: serde_json::Value,
    /// The objects (the custom resources' own JSON).
    #[schema(value_type = Vec<Object>)]
    pub items: Vec<serde_json::Value>,
    /// Storage locations only: approval state by name (Approved, Pending, Rejected,
    /// NotRequired).
    #[schema(value_type = Option<Object>)]
    pub approvals: Option<serde_json::Value>,
}

/// The error answers every operation may give (as problem+json).
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub enum ErrorResponses {
    /// Malformed request: bad JSON, parameters or paging token.
    #[response(
        status = 400,
        description = "Malformed request",
        content_type = "application/problem+json"
    )]
    BadRequest(ProblemDetails),
    /// No valid bearer token (`WWW-Authenticate: Bearer`).
    #[response(
        status = 401,
        description = "No valid bearer token",
        content_type = "application/problem+json"
    )]
    Unauthenticated(ProblemDetails),
    /// Not allowed (says nothing about whether the object exists).
    #[response(
        status = 403,
        description = "Not allowed; never says whether the object exists",
        content_type = "application/problem+json"
    )]
    Forbidden(ProblemDetails),
    /// Not found in a namespace the caller may read.
    #[response(
        status = 404,
        description = "Not found",
        content_type = "application/problem+json"
    )]
    NotFound(ProblemDetails),
    /// Already exists, changed concurrently, Idempotency-Key in flight, artifact not ready.
    #[response(
        status = 409,
        description = "Conflict",
        content_type = "application/problem+json"
    )]
    Conflict(ProblemDetails),
    /// Refused by policy or validation, with field errors; Idempotency-Key reused.
    #[response(
        status = 422,
        description = "Refused by policy or validation (field errors in `errors`)",
        content_type = "application/problem+json"
    )]
    Invalid(ProblemDetails),
    /// Over the per-user rate limit (`Retry-After`).
    #[response(
        status = 429,
        description = "Rate limited",
        content_type = "application/problem+json"
    )]
    RateLimited(ProblemDetails),
    /// Caches loading, the API server or the history store unreachable (`Retry-After`).
    #[response(
        status = 503,
        description = "Unavailable; retry after `Retry-After` seconds",
        content_type = "application/problem+json"
    )]
    Unavailable(ProblemDetails),
}

/// The error answers of the session endpoints (as problem+json).
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub enum SessionErrorResponses {
    /// Malformed request (sign-in body; OAuth state or code refused).
    #[response(
        status = 400,
        description = "Malformed request; for the OAuth callback: state not this browser's, sign-in refused, code not exchanged",
        content_type = "application/problem+json"
    )]
    BadRequest(ProblemDetails),
    /// The token is refused, or no live session (the cookie is then cleared).
    #[response(
        status = 401,
        description = "Token refused, or no live session (`Set-Cookie` clears a dead cookie)",
        content_type = "application/problem+json"
    )]
    Unauthenticated(ProblemDetails),
    /// Sign-out without the session's `X-CSRF-Token`.
    #[response(
        status = 403,
        description = "Missing or wrong CSRF token",
        content_type = "application/problem+json"
    )]
    Forbidden(ProblemDetails),
    /// The sign-in body is not JSON.
    #[response(
        status = 415,
        description = "Not `Content-Type: application/json`",
        content_type = "application/problem+json"
    )]
    UnsupportedMediaType(ProblemDetails),
    /// Over the per-user or the pre-authentication limit (`Retry-After`).
    #[response(
        status = 429,
        description = "Rate limited",
        content_type = "application/problem+json"
    )]
    RateLimited(ProblemDetails),
    /// The OAuth server cannot be reached now (`Retry-After`).
    #[response(
        status = 503,
        description = "Unavailable; retry after `Retry-After` seconds",
        content_type = "application/problem+json"
    )]
    Unavailable(ProblemDetails),
}

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

/// The REST API's OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "NAC gateway",
        version = "v1",
        description = "Self-service Velero backups for namespace owners. Every call is authorized with a SubjectAccessReview for the caller; writes are made with the caller's own token (a bearer token, or the one a web console session holds). Errors are RFC 9457 problem+json. Responses carry X-Request-Id and RateLimit-* headers.",
        license(name = "Apache-2.0")
    ),
    paths(
        handlers::list_namespaces,
        handlers::list_backups, handlers::create_backup, handlers::get_backup, handlers::delete_backup,
        handlers::describe_backup, handlers::backup_logs,
        manifests::backup_manifest, manifests::backup_contents, manifests::backup_graph,
        manifests::backup_diff, manifests::backup_overlaps, manifests::restore_overlaps,
        handlers::list_restores, handlers::create_restore, handlers::get_restore, handlers::delete_restore,
        handlers::describe_restore, handlers::restore_logs,
        handlers::list_storage_locations, handlers::create_storage_location,
        handlers::get_storage_location, handlers::delete_storage_location,
        handlers::list_schedules, handlers::create_schedule, handlers::get_schedule,
        handlers::patch_schedule, handlers::delete_schedule,
        handlers::namespace_queue, handlers::cluster_queue,
        handlers::namespace_policy,
        handlers::shared_storage,
        history::namespace_history, history::history_operation, history::namespace_stats,
        history::namespace_coverage,
        handlers::namespace_events, handlers::all_events,
        session::create_session, session::get_session, session::delete_session,
        session::session_config, session::oauth_start, session::oauth_callback,
        handlers::healthz, handlers::readyz, handlers::metrics,
    ),
    components(schemas(
        NonAdminBackupDoc, NonAdminRestoreDoc, NonAdminBackupStorageLocationDoc, NonAdminScheduleDoc,
        ObjectList, ProblemDetails, FieldError, NamespaceAccess, NamespaceList, DeleteOutcome, Description,
        DeletionView, NamespaceQueue, ClusterQueue, QueueItem, QueueCounts, PolicyView, RulesView,
        ArtifactKind, TenantResource, ChangeAction, QueueEta, Operation, OperationPage,
        OperationDetail, TimelineEntry, NamespaceStatistics, KindStatistics, NamespaceCoverage,
        SessionInfo, session::SignIn, session::SessionSettings,
        BackupDryRun, RestorePreviewView, OperationOverlaps, ContentsPage, BackupDiff, ManifestDocument, OwnerGraphView,
        SharedStorage, SharedStorageState,
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

/// The document as pretty JSON with a trailing newline (the checked-in form).
pub fn openapi_json() -> String {
    let mut text = ApiDoc::openapi()
        .to_pretty_json()
        .unwrap_or_else(|_| "{}".into());
    text.push('\n');
    text
}
