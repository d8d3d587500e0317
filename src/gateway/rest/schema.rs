//! The schemas the REST handlers name in their `#[utoipa::path]` attributes that are not types
//! of the service: the custom resources (from their CRDs), the Kubernetes list shape, and the
//! error answers. A leaf: it imports neither the handlers nor the document
//! ([`super::openapi`], which reaches the handlers through [`super::routes`]), so no handler
//! imports the document.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{LazyLock, Mutex};

use utoipa::openapi::{ObjectBuilder, RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

use super::problem::ProblemDetails;
use crate::api::crds;

/// The metadata of a Kubernetes object in NAC's answers (the `ObjectMeta` fields they carry).
#[derive(Debug, serde::Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    /// Name, unique in the namespace.
    pub name: String,
    /// Namespace.
    #[schema(nullable = false)]
    pub namespace: Option<String>,
    /// The object's UID.
    #[schema(nullable = false)]
    pub uid: Option<String>,
    /// The version to send back with a change (optimistic concurrency).
    #[schema(nullable = false)]
    pub resource_version: Option<String>,
    /// Changes of the spec so far.
    #[schema(nullable = false)]
    pub generation: Option<i64>,
    /// When it was created (RFC 3339).
    #[schema(nullable = false)]
    pub creation_timestamp: Option<String>,
    /// When its deletion was asked for (RFC 3339); it goes once its finalizers are done.
    #[schema(nullable = false)]
    pub deletion_timestamp: Option<String>,
    /// Labels.
    #[schema(nullable = false)]
    pub labels: Option<std::collections::BTreeMap<String, String>>,
    /// Annotations.
    #[schema(nullable = false)]
    pub annotations: Option<std::collections::BTreeMap<String, String>>,
    /// What must happen before the object goes (NAC's finalizer while its Velero objects are
    /// cleaned up).
    #[schema(nullable = false)]
    pub finalizers: Option<Vec<String>>,
}

/// The `openAPIV3Schema` of the NAC CRD named `plural`, as JSON. The CRDs are generated once:
/// every router build asks for the schemas of its paths.
fn crd_json(plural: &str) -> Option<serde_json::Value> {
    static SCHEMAS: LazyLock<BTreeMap<String, serde_json::Value>> = LazyLock::new(|| {
        crds::nac_crds()
            .into_iter()
            .filter_map(|crd| {
                let plural = crd.spec.names.plural.clone();
                let schema = crd
                    .spec
                    .versions
                    .into_iter()
                    .next()?
                    .schema?
                    .open_api_v3_schema?;
                Some((plural, serde_json::to_value(schema).ok()?))
            })
            .collect()
    });
    SCHEMAS.get(plural).cloned()
}

/// Velero's specs the CRDs embed (a NonAdminBackup's and a schedule's template's `backupSpec`,
/// a NonAdminRestore's `restoreSpec`): component name, CRD, and the field of its `spec`.
const VELERO_SPECS: [(&str, &str, &str); 2] = [
    ("BackupSpec", "nonadminbackups", "backupSpec"),
    ("RestoreSpec", "nonadminrestores", "restoreSpec"),
];

/// Velero's spec `name` (one of [`VELERO_SPECS`]) as its CRD embeds it, without the field's
/// own description.
fn velero_spec_json(name: &str) -> Option<serde_json::Value> {
    let (_, plural, field) = VELERO_SPECS.iter().find(|(spec, ..)| *spec == name)?;
    let mut spec = crd_json(plural)?
        .get("properties")?
        .get("spec")?
        .get("properties")?
        .get(*field)?
        .clone();
    spec.as_object_mut()?.remove("description");
    Some(spec)
}

/// Replaces every copy of one of Velero's specs inside `value` by a reference to its component
/// (keeping the field's description), so the document holds each once.
fn refer_to_velero_specs(value: &mut serde_json::Value, specs: &[(&str, serde_json::Value)]) {
    let Some(object) = value.as_object_mut() else {
        if let Some(items) = value.as_array_mut() {
            for item in items {
                refer_to_velero_specs(item, specs);
            }
        }
        return;
    };
    // The properties first: most objects differ there, and cloning each would be quadratic.
    let found = specs.iter().find(|(_, spec)| {
        object
            .get("properties")
            .is_some_and(|p| Some(p) == spec.get("properties"))
            && {
                let mut bare = object.clone();
                bare.remove("description");
                serde_json::Value::Object(bare) == *spec
            }
    });
    if let Some((name, _)) = found {
        let description = object.get("description").cloned();
        object.clear();
        object.insert(
            "$ref".into(),
            serde_json::Value::String(format!("#/components/schemas/{name}")),
        );
        if let Some(description) = description {
            object.insert("description".into(), description);
        }
        return;
    }
    for child in object.values_mut() {
        refer_to_velero_specs(child, specs);
    }
}

/// The component of Velero's spec `name` (one of [`VELERO_SPECS`]).
fn velero_spec_schema(name: &str) -> RefOr<Schema> {
    static SCHEMAS: LazyLock<BTreeMap<&'static str, RefOr<Schema>>> = LazyLock::new(|| {
        VELERO_SPECS
            .iter()
            .map(|(name, ..)| (*name, build_velero_spec_schema(name)))
            .collect()
    });
    SCHEMAS
        .get(name)
        .cloned()
        .unwrap_or_else(|| build_velero_spec_schema(name))
}

fn build_velero_spec_schema(name: &str) -> RefOr<Schema> {
    velero_spec_json(name)
        .map(|mut spec| {
            spec["description"] = serde_json::Value::String(format!(
                "Velero's {name} (`velero.io/v1`), as NAC's custom resources embed it."
            ));
            spec
        })
        .and_then(|spec| serde_json::from_value::<RefOr<Schema>>(spec).ok())
        .unwrap_or_else(|| {
            RefOr::T(Schema::Object(
                ObjectBuilder::new()
                    .description(Some(format!("Velero's {name}")))
                    .build(),
            ))
        })
}

/// The OpenAPI schema of a NAC custom resource: its CRD's `openAPIV3Schema` (`spec` and
/// `status`) plus what every Kubernetes object carries and a CRD leaves out (`apiVersion`,
/// `kind`, `metadata`); Velero's specs in it are references to their components.
fn crd_schema(plural: &str, kind: &str, description: &str) -> RefOr<Schema> {
    static MADE: LazyLock<Mutex<BTreeMap<String, RefOr<Schema>>>> = LazyLock::new(Mutex::default);
    let key = format!("{plural}/{kind}/{description}");
    if let Some(made) = MADE.lock().ok().and_then(|made| made.get(&key).cloned()) {
        return made;
    }
    let schema = build_crd_schema(plural, kind, description);
    if let Ok(mut made) = MADE.lock() {
        made.insert(key, schema.clone());
    }
    schema
}

fn build_crd_schema(plural: &str, kind: &str, description: &str) -> RefOr<Schema> {
    let specs: Vec<(&str, serde_json::Value)> = VELERO_SPECS
        .iter()
        .filter_map(|(name, ..)| Some((*name, velero_spec_json(name)?)))
        .collect();
    let schema = crd_json(plural)
        .map(|mut value| {
            refer_to_velero_specs(&mut value, &specs);
            if let Some(properties) = value
                .get_mut("properties")
                .and_then(serde_json::Value::as_object_mut)
            {
                properties.insert(
                    "apiVersion".into(),
                    serde_json::json!({"type": "string", "description": "`oadp.openshift.io/v1alpha1`."}),
                );
                properties.insert(
                    "kind".into(),
                    serde_json::json!({"type": "string", "description": format!("`{kind}`.")}),
                );
                properties.insert(
                    "metadata".into(),
                    serde_json::json!({"$ref": "#/components/schemas/ObjectMeta"}),
                );
            }
            value
        })
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
                crd_schema(
                    $plural,
                    $schema_name,
                    concat!("A ", $schema_name, " custom resource"),
                )
            }
        }

        impl ToSchema for $name {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed($schema_name)
            }

            fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
                schemas.push((ObjectMeta::name().into(), ObjectMeta::schema()));
                for (spec, ..) in VELERO_SPECS {
                    schemas.push((spec.into(), velero_spec_schema(spec)));
                }
            }
        }
    };
}

/// The body a create accepts (`service::objects::object_from_body`): the custom resource's own
/// JSON, the short form `{"name": …, "spec": {…}}` (a restore may name just its `backupName`),
/// or a JSON string naming it (with the kind's default spec).
fn create_body_schema(resource: &str) -> RefOr<Schema> {
    let strings = serde_json::json!({"type": "object", "additionalProperties": {"type": "string"}});
    let mut short = serde_json::json!({
        "type": "object",
        "description": "The short form: `name` (or `generateName`) and the spec, the kind's default spec when left out.",
        "additionalProperties": false,
        "properties": {
            "name": {"type": "string", "description": "The object's name."},
            "generateName": {"type": "string", "description": "A prefix the API server completes into a unique name."},
            "labels": strings,
            "annotations": strings,
            "spec": {"$ref": format!("#/components/schemas/{resource}/properties/spec")}
        }
    });
    if resource == "NonAdminRestore" {
        short["properties"]["backupName"] = serde_json::json!({
            "type": "string",
            "description": "Shortcut for `spec.restoreSpec.backupName`."
        });
    }
    let value = serde_json::json!({
        "description": format!(
            "The {resource}'s own JSON, the short form, or a JSON string naming it (with the kind's default spec)."
        ),
        "oneOf": [
            {"$ref": format!("#/components/schemas/{resource}")},
            short,
            {"type": "string", "description": "The object's name."}
        ]
    });
    serde_json::from_value(value).unwrap_or_else(|_| {
        RefOr::T(Schema::Object(
            ObjectBuilder::new()
                .description(Some(format!("A {resource} to create")))
                .build(),
        ))
    })
}

/// A schema made from a custom resource's by `build` (its create body, its list answer), the
/// resource's own schema registered beside it.
macro_rules! resource_document {
    ($name:ident, $schema_name:literal, $resource:ty, $build:ident) => {
        #[doc = concat!("The `", $schema_name, "` schema.")]
        #[derive(Debug)]
        pub struct $name;

        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                $build(&<$resource as ToSchema>::name())
            }
        }

        impl ToSchema for $name {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed($schema_name)
            }

            fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
                schemas.push((<$resource>::name().into(), <$resource>::schema()));
                <$resource as ToSchema>::schemas(schemas);
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

resource_document!(
    NonAdminBackupCreateDoc,
    "NonAdminBackupCreate",
    NonAdminBackupDoc,
    create_body_schema
);
resource_document!(
    NonAdminRestoreCreateDoc,
    "NonAdminRestoreCreate",
    NonAdminRestoreDoc,
    create_body_schema
);
resource_document!(
    NonAdminBackupStorageLocationCreateDoc,
    "NonAdminBackupStorageLocationCreate",
    NonAdminBackupStorageLocationDoc,
    create_body_schema
);
resource_document!(
    NonAdminScheduleCreateDoc,
    "NonAdminScheduleCreate",
    NonAdminScheduleDoc,
    create_body_schema
);

/// A page of one kind of custom resource in the Kubernetes list shape (what `list_body`
/// writes): `metadata.continue` when more follow; storage locations add `approvals`.
fn list_schema(resource: &str) -> RefOr<Schema> {
    let mut value = serde_json::json!({
        "type": "object",
        "description": format!("A page of {resource}s in the Kubernetes list shape."),
        "required": ["apiVersion", "kind", "metadata", "items"],
        "properties": {
            "apiVersion": {"type": "string", "description": "`oadp.openshift.io/v1alpha1`."},
            "kind": {"type": "string", "description": format!("`{resource}List`.")},
            "metadata": {
                "type": "object",
                "properties": {"continue": {
                    "type": "string",
                    "description": "The token of the next page (the `continue` parameter), when there is one."
                }}
            },
            "items": {"type": "array", "items": {"$ref": format!("#/components/schemas/{resource}")}}
        }
    });
    if resource == "NonAdminBackupStorageLocation" {
        value["properties"]["approvals"] = serde_json::json!({
            "type": "object",
            "description": "Each listed location's approval state, by name.",
            "additionalProperties": {
                "type": "string",
                "enum": ["Approved", "Pending", "Rejected", "NotRequired"]
            }
        });
    }
    serde_json::from_value(value).unwrap_or_else(|_| {
        RefOr::T(Schema::Object(
            ObjectBuilder::new()
                .description(Some(format!("A page of {resource}s")))
                .build(),
        ))
    })
}

resource_document!(
    NonAdminBackupListDoc,
    "NonAdminBackupList",
    NonAdminBackupDoc,
    list_schema
);
resource_document!(
    NonAdminRestoreListDoc,
    "NonAdminRestoreList",
    NonAdminRestoreDoc,
    list_schema
);
resource_document!(
    NonAdminBackupStorageLocationListDoc,
    "NonAdminBackupStorageLocationList",
    NonAdminBackupStorageLocationDoc,
    list_schema
);
resource_document!(
    NonAdminScheduleListDoc,
    "NonAdminScheduleList",
    NonAdminScheduleDoc,
    list_schema
);

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
