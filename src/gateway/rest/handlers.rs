//! REST handlers: thin adapters from HTTP to [`GatewayService`] operations, each described for
//! the OpenAPI document.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{OriginalUri, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;
use utoipa::IntoParams;

use super::answer::{ApiJson, json_bytes_response, json_response};
use super::extract::{ApiPath, ApiQuery, AuthCaller, JsonBody, check_name, check_namespace};
use super::problem::{PROBLEM_CONTENT_TYPE, Problem, ProblemDetails};
use super::schema::{
    ErrorResponses, NonAdminBackupCreateDoc, NonAdminBackupDoc, NonAdminBackupListDoc,
    NonAdminBackupStorageLocationCreateDoc, NonAdminBackupStorageLocationDoc,
    NonAdminBackupStorageLocationListDoc, NonAdminRestoreCreateDoc, NonAdminRestoreDoc,
    NonAdminRestoreListDoc, NonAdminScheduleCreateDoc, NonAdminScheduleDoc,
    NonAdminScheduleListDoc,
};
use crate::api::nonadmin::{
    NonAdminBackup, NonAdminBackupStorageLocation, NonAdminRestore, NonAdminSchedule,
};
use crate::gateway::Gateway;
use crate::gateway::error::GatewayError;
use crate::gateway::events::follow::scope_for;
use crate::gateway::events::sse;
use crate::gateway::idempotency::{Begin, StoredResponse};
use crate::gateway::manifests::{BackupDryRun, RestorePreviewView};
use crate::gateway::resources::TenantResource;
use crate::gateway::service::{
    Artifact, ArtifactKind, ClusterQueue, Creatable, DeleteOutcome, Description, GatewayService,
    JsonArtifact, ListQuery, NamespaceList, NamespaceQuery, NamespaceQueue, PolicyView, Terminal,
};
use crate::gateway::shared_storage::SharedStorage;
use crate::gateway::store::{Cached, present};

/// `{namespace}`.
#[derive(Debug, Deserialize)]
pub struct NamespacePath {
    namespace: String,
}

/// `{namespace}/…/{name}`.
#[derive(Debug, Deserialize)]
pub struct ObjectPath {
    namespace: String,
    name: String,
}

/// List filters and paging.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct ListParams {
    /// Keep objects in this request phase (New, BackingOff, Created, Deleting) or Velero phase
    /// (Completed, Failed, InProgress …), case-insensitive.
    phase: Option<String>,
    /// Kubernetes label selector, e.g. `app=web,tier!=db`.
    label_selector: Option<String>,
    /// Page size (default 100, at most 500).
    limit: Option<usize>,
    /// Opaque token from the previous page's `metadata.continue`.
    #[serde(rename = "continue")]
    #[param(rename = "continue")]
    continue_token: Option<String>,
}

/// Waiting for a terminal phase.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct WaitParams {
    /// Answer only when the object reaches a terminal phase (or `timeout` passes: then 202).
    wait: Option<bool>,
    /// Longest wait, e.g. `90s`, `5m` (default 60s, at most 10m).
    timeout: Option<String>,
}

/// Create options.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct CreateParams {
    /// Validate (gateway policy and API server) without storing anything.
    dry_run: Option<bool>,
    /// Answer only when the new object reaches a terminal phase (or `timeout` passes: then 202).
    wait: Option<bool>,
    /// Longest wait, e.g. `90s`, `5m` (default 60s, at most 10m).
    timeout: Option<String>,
}

/// Which artifact to stream.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ArtifactParams {
    /// `log` (default), `results` or `resource-list`.
    artifact: Option<ArtifactKind>,
}

/// Describe options.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DescribeParams {
    /// Also fetch the resource list (as `velero describe --details`).
    details: Option<bool>,
}

/// Paging of "my namespaces".
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct NamespaceListParams {
    /// Page size (default 100, at most 500).
    limit: Option<usize>,
    /// Opaque token from the previous page's `continue`.
    #[serde(rename = "continue")]
    #[param(rename = "continue")]
    continue_token: Option<String>,
}

/// Namespaces of a multi-namespace stream.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StreamParams {
    /// Comma-separated namespaces, at most 100 (default: every namespace the caller may watch).
    namespaces: Option<String>,
}

/// Parses `90`, `90s`, `250ms`, `5m`, `1h`.
pub fn parse_timeout(text: &str) -> Result<Duration, GatewayError> {
    let invalid = || GatewayError::BadRequest("timeout must look like 30s, 5m or 1h".into());
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(index) => text.split_at(index),
        None => (text, "s"),
    };
    let value: u64 = number.parse().map_err(|_| invalid())?;
    match unit {
        "ms" => Ok(Duration::from_millis(value)),
        "s" => Ok(Duration::from_secs(value)),
        "m" => Ok(Duration::from_secs(value.saturating_mul(60))),
        "h" => Ok(Duration::from_secs(value.saturating_mul(3600))),
        _ => Err(invalid()),
    }
}

fn wait_timeout(gateway: &Gateway, text: Option<&str>) -> Result<Duration, GatewayError> {
    let requested = match text {
        Some(text) => parse_timeout(text)?,
        None => Duration::from_secs(60),
    };
    Ok(requested.min(gateway.service.config().max_wait))
}

/// A list as the gateway answers it (Kubernetes list shape): the reference form; answers are
/// written by [`list_body`], which gives the same bytes without building this.
#[cfg(test)]
fn list_document<K: Cached>(items: Vec<Value>, continue_token: Option<String>) -> Value {
    let mut metadata = serde_json::Map::new();
    if let Some(token) = continue_token {
        metadata.insert("continue".into(), Value::String(token));
    }
    serde_json::json!({
        "apiVersion": "oadp.openshift.io/v1alpha1",
        "kind": format!("{}List", K::RESOURCE.kind()),
        "metadata": metadata,
        "items": items,
    })
}

/// A list answer's bytes from its items' presented JSON (already serialized, see
/// [`crate::gateway::store::PresentedJson`]), plus, for storage locations, each one's approval
/// state: byte for byte what serializing [`list_document`] (and `approvals` after it) gives.
fn list_body<K: Cached>(
    items: &[bytes::Bytes],
    continue_token: Option<&str>,
    approvals: Option<&BTreeMap<String, &str>>,
) -> Vec<u8> {
    let mut body = Vec::with_capacity(items.iter().map(|i| i.len() + 1).sum::<usize>() + 160);
    body.extend_from_slice(br#"{"apiVersion":"oadp.openshift.io/v1alpha1","kind":"#);
    // Serializing a String or a map into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut body, &format!("{}List", K::RESOURCE.kind()));
    body.extend_from_slice(br#","metadata":{"#);
    if let Some(token) = continue_token {
        body.extend_from_slice(br#""continue":"#);
        let _ = serde_json::to_writer(&mut body, token);
    }
    body.extend_from_slice(br#"},"items":["#);
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(item);
    }
    body.push(b']');
    if let Some(approvals) = approvals {
        body.extend_from_slice(br#","approvals":"#);
        let _ = serde_json::to_writer(&mut body, approvals);
    }
    body.push(b'}');
    body
}

async fn list_of<K: Cached>(
    gateway: &Gateway,
    caller: &AuthCaller,
    namespace: &str,
    params: ListParams,
) -> Result<Response, Problem> {
    check_namespace(namespace)?;
    let query = ListQuery {
        phase: params.phase,
        label_selector: params.label_selector,
        limit: params.limit,
        continue_token: params.continue_token,
    };
    let page = gateway
        .service
        .list::<K>(&caller.0, namespace, &query)
        .await?;
    let objects: Vec<&K> = page.items.iter().map(|o| &**o).collect();
    let items = gateway.presented.of(&objects);
    let approvals = (K::RESOURCE == TenantResource::StorageLocations).then(|| {
        // Approval state of each location, by name.
        page.items
            .iter()
            .filter_map(|o| {
                let value = serde_json::to_value(&**o).ok()?;
                let location: NonAdminBackupStorageLocation = serde_json::from_value(value).ok()?;
                Some((
                    location.metadata.name.clone().unwrap_or_default(),
                    GatewayService::approval_state(&location),
                ))
            })
            .collect::<BTreeMap<String, &str>>()
    });
    Ok(json_bytes_response(
        StatusCode::OK,
        list_body::<K>(&items, page.continue_token.as_deref(), approvals.as_ref()),
    ))
}

/// One object's answer, from its presented JSON.
fn object_response<K: Cached>(gateway: &Gateway, status: StatusCode, object: &K) -> Response {
    match gateway.presented.of(&[object]).pop() {
        Some(bytes) => json_bytes_response(status, bytes),
        None => json_response(status, &present(object)),
    }
}

async fn get_of<K: Cached + Terminal>(
    gateway: &Gateway,
    caller: &AuthCaller,
    path: ObjectPath,
    wait: WaitParams,
) -> Result<Response, Problem> {
    check_namespace(&path.namespace)?;
    check_name(&path.name)?;
    if wait.wait == Some(true) {
        let timeout = wait_timeout(gateway, wait.timeout.as_deref())?;
        let (object, terminal) = gateway
            .service
            .wait_terminal::<K>(&caller.0, &path.namespace, &path.name, timeout)
            .await?;
        let status = if terminal {
            StatusCode::OK
        } else {
            StatusCode::ACCEPTED
        };
        return Ok(object_response(gateway, status, &*object));
    }
    let object = gateway
        .service
        .get::<K>(&caller.0, &path.namespace, &path.name)
        .await?;
    Ok(object_response(gateway, StatusCode::OK, &*object))
}

async fn create_of<K: Creatable + Terminal>(
    gateway: &Gateway,
    caller: &AuthCaller,
    namespace: &str,
    params: CreateParams,
    headers: &HeaderMap,
    uri: &OriginalUri,
    body: JsonBody,
) -> Result<Response, Problem> {
    check_namespace(namespace)?;
    let key = headers
        .get("idempotency-key")
        .map(|value| value.to_str().map(str::to_string))
        .transpose()
        .map_err(|_| {
            Problem(GatewayError::BadRequest(
                "Idempotency-Key must be ASCII".into(),
            ))
        })?;
    let Some(key) = key else {
        return Ok(run_create::<K>(gateway, caller, namespace, &params, &body.value).await);
    };
    // The query (dryRun, wait) is part of what the key stands for.
    let mut fingerprint = uri.0.query().unwrap_or_default().as_bytes().to_vec();
    fingerprint.push(0);
    fingerprint.extend_from_slice(&body.bytes);
    // An answer is the namespace's as it is now: one created again under the same name never
    // gets its predecessor's.
    let namespace_uid = gateway.service.idempotency_scope(namespace);
    match gateway
        .idempotency
        .begin(
            caller.0.username(),
            uri.0.path(),
            &key,
            &namespace_uid,
            &fingerprint,
        )
        .await?
    {
        Begin::Replay(stored) => {
            let mut response = (
                StatusCode::from_u16(stored.status).unwrap_or(StatusCode::OK),
                stored.body,
            )
                .into_response();
            if let Ok(value) = HeaderValue::from_str(&stored.content_type) {
                response.headers_mut().insert(header::CONTENT_TYPE, value);
            }
            response
                .headers_mut()
                .insert("idempotency-replayed", HeaderValue::from_static("true"));
            Ok(response)
        }
        Begin::Run(ticket) => {
            let response = run_create::<K>(gateway, caller, namespace, &params, &body.value).await;
            let (parts, body) = response.into_parts();
            let bytes = axum::body::to_bytes(body, usize::MAX)
                .await
                .unwrap_or_default();
            let content_type = parts
                .headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("application/json")
                .to_string();
            gateway
                .idempotency
                .finish(
                    ticket,
                    StoredResponse {
                        status: parts.status.as_u16(),
                        content_type,
                        body: bytes.to_vec(),
                    },
                )
                .await;
            Ok(Response::from_parts(parts, axum::body::Body::from(bytes)))
        }
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<Value, GatewayError> {
    serde_json::to_value(value).map_err(|_| GatewayError::Upstream)
}

async fn run_create<K: Creatable + Terminal>(
    gateway: &Gateway,
    caller: &AuthCaller,
    namespace: &str,
    params: &CreateParams,
    body: &Value,
) -> Response {
    let outcome = async {
        let dry_run = params.dry_run == Some(true);
        // A backup's dry-run answers its manifest, a restore's its preview.
        if dry_run {
            let location = format!("/api/v1/namespaces/{namespace}/{}", K::RESOURCE.segment());
            match K::RESOURCE {
                TenantResource::Backups => {
                    let answer = gateway
                        .service
                        .backup_dry_run(&caller.0, namespace, body)
                        .await?;
                    return Ok((StatusCode::OK, to_json(&answer)?, location));
                }
                TenantResource::Restores => {
                    let answer = gateway
                        .service
                        .restore_preview(&caller.0, namespace, body)
                        .await?;
                    return Ok((StatusCode::OK, to_json(&answer)?, location));
                }
                _ => {}
            }
        }
        let created = gateway
            .service
            .create::<K>(&caller.0, namespace, body, dry_run)
            .await?;
        let name = created.meta().name.clone().unwrap_or_default();
        let location = format!(
            "/api/v1/namespaces/{namespace}/{}/{name}",
            K::RESOURCE.segment()
        );
        if params.wait == Some(true) && !dry_run {
            let timeout = wait_timeout(gateway, params.timeout.as_deref())?;
            let (object, terminal) = gateway
                .service
                .wait_terminal::<K>(&caller.0, namespace, &name, timeout)
                .await?;
            let status = if terminal {
                StatusCode::CREATED
            } else {
                StatusCode::ACCEPTED
            };
            return Ok::<_, GatewayError>((status, present(&*object), location));
        }
        let status = if dry_run {
            StatusCode::OK
        } else {
            StatusCode::CREATED
        };
        Ok((status, present(&created), location))
    }
    .await;
    match outcome {
        Ok((status, body, location)) => {
            let mut response = json_response(status, &body);
            if status != StatusCode::OK
                && let Ok(value) = HeaderValue::from_str(&location)
            {
                response.headers_mut().insert(header::LOCATION, value);
            }
            response
        }
        Err(error) => Problem(error).into_response(),
    }
}

async fn delete_of<K: Cached>(
    gateway: &Gateway,
    caller: &AuthCaller,
    path: ObjectPath,
) -> Result<(StatusCode, ApiJson<DeleteOutcome>), Problem> {
    check_namespace(&path.namespace)?;
    check_name(&path.name)?;
    let outcome = gateway
        .service
        .delete::<K>(&caller.0, &path.namespace, &path.name)
        .await?;
    let status = if outcome.permanent {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    Ok((status, ApiJson(outcome)))
}

/// Namespaces I can use (may list backups in), with my permissions in each.
///
/// One request checks a bounded number of namespaces: when more remain, the page carries
/// `continue` (it may then hold fewer than `limit` items, even none); follow it until it is
/// absent.
#[utoipa::path(
    get, path = "/api/v1/namespaces", tag = "namespaces",
    params(NamespaceListParams),
    responses((status = 200, description = "One page of the namespaces the caller may use; `continue` when more remain to be checked", body = NamespaceList), ErrorResponses),
    security(("bearer" = []), ("session" = []))
)]
pub async fn list_namespaces(
    State(gateway): State<Gateway>,
    caller: AuthCaller,
    ApiQuery(params): ApiQuery<NamespaceListParams>,
) -> Result<ApiJson<NamespaceList>, Problem> {
    let query = NamespaceQuery {
        limit: params.limit,
        continue_token: params.continue_token,
        details: true,
    };
    let budget = gateway.service.review_budget();
    let page = gateway
        .service
        .namespace_page(&caller.0, &query, &budget)
        .await?;
    Ok(ApiJson(page))
}

macro_rules! resource_handlers {
    (
        $kind:ty, $doc:ty, $create_doc:ty, $list_doc:ty, $dry_run_doc:ty, $dry_run_text:literal, $tag:literal,
        $collection:literal, $item:literal,
        $list:ident, $get:ident, $create:ident, $delete:ident, $delete_text:literal
    ) => {
        #[doc = concat!("Lists ", $tag, " in a namespace.")]
        #[utoipa::path(
            get, path = $collection, tag = $tag,
            params(("namespace" = String, Path, description = "Namespace"), ListParams),
            responses((status = 200, description = "One page, Kubernetes list shape; `metadata.continue` when more follow", body = $list_doc), ErrorResponses),
            security(("bearer" = []), ("session" = []))
        )]
        pub async fn $list(
            State(gateway): State<Gateway>,
            caller: AuthCaller,
            ApiPath(path): ApiPath<NamespacePath>,
            ApiQuery(params): ApiQuery<ListParams>,
        ) -> Result<Response, Problem> {
            list_of::<$kind>(&gateway, &caller, &path.namespace, params).await
        }

        #[doc = concat!("Gets one of the ", $tag, " (optionally waiting for a terminal phase).")]
        #[utoipa::path(
            get, path = $item, tag = $tag,
            params(("namespace" = String, Path, description = "Namespace"), ("name" = String, Path, description = "Name"), WaitParams),
            responses(
                (status = 200, description = "The object", body = $doc),
                (status = 202, description = "wait=true and the timeout passed first: the object as it is", body = $doc),
                ErrorResponses),
            security(("bearer" = []), ("session" = []))
        )]
        pub async fn $get(
            State(gateway): State<Gateway>,
            caller: AuthCaller,
            ApiPath(path): ApiPath<ObjectPath>,
            ApiQuery(wait): ApiQuery<WaitParams>,
        ) -> Result<Response, Problem> {
            get_of::<$kind>(&gateway, &caller, path, wait).await
        }

        #[doc = concat!("Creates one of the ", $tag, " with the caller's own token, after policy validation.")]
        #[utoipa::path(
            post, path = $collection, tag = $tag,
            params(
                ("namespace" = String, Path, description = "Namespace"),
                ("Idempotency-Key" = Option<String>, Header, description = "Same key and body: same answer; same key, other body: 422"),
                CreateParams),
            request_body(content = $create_doc, description = "The custom resource's own JSON, or the short form {\"name\": …, \"spec\": {…}}, or a JSON string naming it"),
            responses(
                (status = 201, description = "Created (with wait=true: and terminal)", body = $doc),
                (status = 200, description = $dry_run_text, body = $dry_run_doc),
                (status = 202, description = "Created; wait=true and the timeout passed first", body = $doc),
                ErrorResponses),
            security(("bearer" = []), ("session" = []))
        )]
        pub async fn $create(
            State(gateway): State<Gateway>,
            caller: AuthCaller,
            ApiPath(path): ApiPath<NamespacePath>,
            ApiQuery(params): ApiQuery<CreateParams>,
            headers: HeaderMap,
            uri: OriginalUri,
            body: JsonBody,
        ) -> Result<Response, Problem> {
            create_of::<$kind>(&gateway, &caller, &path.namespace, params, &headers, &uri, body).await
        }

        #[doc = $delete_text]
        #[utoipa::path(
            delete, path = $item, tag = $tag,
            params(("namespace" = String, Path, description = "Namespace"), ("name" = String, Path, description = "Name")),
            responses(
                (status = 200, description = "Deleted", body = DeleteOutcome),
                (status = 202, description = "Permanent deletion requested (backups)", body = DeleteOutcome),
                ErrorResponses),
            security(("bearer" = []), ("session" = []))
        )]
        pub async fn $delete(
            State(gateway): State<Gateway>,
            caller: AuthCaller,
            ApiPath(path): ApiPath<ObjectPath>,
        ) -> Result<(StatusCode, ApiJson<DeleteOutcome>), Problem> {
            delete_of::<$kind>(&gateway, &caller, path).await
        }
    };
}

resource_handlers!(
    NonAdminBackup,
    NonAdminBackupDoc,
    NonAdminBackupCreateDoc,
    NonAdminBackupListDoc,
    BackupDryRun,
    "dryRun=true: nothing is created; what the backup would take (its manifest: counts by kind and the items, from the namespace's live objects read with the caller's token), lists the caller could not read, and running operations it would wait on",
    "backups",
    "/api/v1/namespaces/{namespace}/backups",
    "/api/v1/namespaces/{namespace}/backups/{name}",
    list_backups,
    get_backup,
    create_backup,
    delete_backup,
    "PERMANENTLY deletes a backup: sets spec.deleteBackup, so Velero deletes the backup and its data in object storage, then the NonAdminBackup goes away."
);
resource_handlers!(
    NonAdminRestore,
    NonAdminRestoreDoc,
    NonAdminRestoreCreateDoc,
    NonAdminRestoreListDoc,
    RestorePreviewView,
    "dryRun=true: nothing is created; the restore preview — each backed-up item created, updated or skipped (and why) in restore order, against the namespace as it is now — and running operations it would wait on",
    "restores",
    "/api/v1/namespaces/{namespace}/restores",
    "/api/v1/namespaces/{namespace}/restores/{name}",
    list_restores,
    get_restore,
    create_restore,
    delete_restore,
    "Deletes a restore record (restored objects stay)."
);
resource_handlers!(
    NonAdminBackupStorageLocation,
    NonAdminBackupStorageLocationDoc,
    NonAdminBackupStorageLocationCreateDoc,
    NonAdminBackupStorageLocationListDoc,
    NonAdminBackupStorageLocationDoc,
    "dryRun=true: what would be created",
    "storage-locations",
    "/api/v1/namespaces/{namespace}/storage-locations",
    "/api/v1/namespaces/{namespace}/storage-locations/{name}",
    list_storage_locations,
    get_storage_location,
    create_storage_location,
    delete_storage_location,
    "Deletes a storage location (stored backups are not touched)."
);
resource_handlers!(
    NonAdminSchedule,
    NonAdminScheduleDoc,
    NonAdminScheduleCreateDoc,
    NonAdminScheduleListDoc,
    NonAdminScheduleDoc,
    "dryRun=true: what would be created",
    "schedules",
    "/api/v1/namespaces/{namespace}/schedules",
    "/api/v1/namespaces/{namespace}/schedules/{name}",
    list_schedules,
    get_schedule,
    create_schedule,
    delete_schedule,
    "Deletes a schedule (its backups are kept)."
);

/// Changes a schedule: a JSON merge patch of its spec (`paused`, `schedule`, `skipImmediately`,
/// `template`), validated like a new one.
#[utoipa::path(
    patch, path = "/api/v1/namespaces/{namespace}/schedules/{name}", tag = "schedules",
    params(("namespace" = String, Path, description = "Namespace"), ("name" = String, Path, description = "Name")),
    request_body(content = Object, description = "Merge patch of spec, e.g. {\"paused\": true}", content_type = "application/merge-patch+json"),
    responses((status = 200, description = "The changed schedule", body = NonAdminScheduleDoc), ErrorResponses),
    security(("bearer" = []), ("session" = []))
)]
pub async fn patch_schedule(
    State(gateway): State<Gateway>,
    caller: AuthCaller,
    ApiPath(path): ApiPath<ObjectPath>,
    body: JsonBody,
) -> Result<Response, Problem> {
    check_namespace(&path.namespace)?;
    check_name(&path.name)?;
    let spec_patch = body.value.get("spec").cloned().unwrap_or(body.value);
    let patched = gateway
        .service
        .patch_schedule(&caller.0, &path.namespace, &path.name, &spec_patch)
        .await?;
    Ok(json_response(StatusCode::OK, &present(&patched)))
}

/// Describes a backup (`velero backup describe --details` for the tenant).
#[utoipa::path(
    get, path = "/api/v1/namespaces/{namespace}/backups/{name}/describe", tag = "backups",
    params(("namespace" = String, Path, description = "Namespace"), ("name" = String, Path, description = "Name"), DescribeParams),
    responses((status = 200, description = "The description", body = Description), ErrorResponses),
    security(("bearer" = []), ("session" = []))
)]
pub async fn describe_backup(
    State(gateway): State<Gateway>,
    caller: AuthCaller,
    ApiPath(path): ApiPath<ObjectPath>,
    ApiQuery(params): ApiQuery<DescribeParams>,
) -> Result<ApiJson<Description>, Problem> {
    check_namespace(&path.namespace)?;
    check_name(&path.name)?;
    let description = gateway
        .service
        .describe_backup(
            &caller.0,
            &path.namespace,
            &path.name,
            params.details == Some(true),
        )
        .await?;
    Ok(ApiJson(description))
}

/// Describes a restore.
#[utoipa::path(
    get, path = "/api/v1/namespaces/{namespace}/restores/{name}/describe", tag = "restores",
    params(("namespace" = String, Path, description = "Namespace"), ("name" = String, Path, description = "Name"), DescribeParams),
    responses((status = 200, description = "The description", body = Description), ErrorResponses),
    security(("bearer" = []), ("session" = []))
)]
pub async fn describe_restore(
    State(gateway): State<Gateway>,
    caller: AuthCaller,
    ApiPath(path): ApiPath<ObjectPath>,
    ApiQuery(params): ApiQuery<DescribeParams>,
) -> Result<ApiJson<Description>, Problem> {
    check_namespace(&path.namespace)?;
    check_name(&path.name)?;
    let description = gateway
        .service
        .describe_restore(
            &caller.0,
            &path.namespace,
            &path.name,
            params.details == Some(true),
        )
        .await?;
    Ok(ApiJson(description))
}

async fn artifact_of(
    gateway: &Gateway,
    caller: &AuthCaller,
    resource: TenantResource,
    path: ObjectPath,
    params: ArtifactParams,
) -> Result<Response, Problem> {
    check_namespace(&path.namespace)?;
    check_name(&path.name)?;
    let artifact = params.artifact.unwrap_or(ArtifactKind::Log);
    let artifact = gateway
        .service
        .artifact(&caller.0, &path.namespace, resource, &path.name, artifact)
        .await?;
    Ok(match artifact {
        // A String answers `text/plain; charset=utf-8`.
        Artifact::Log(text) => (StatusCode::OK, text).into_response(),
        Artifact::Json(document) => ApiJson(document).into_response(),
    })
}

/// Streams a backup's log, results or resource list, decompressed (fetched through a
/// NonAdminDownloadRequest made with the caller's token; no storage URL is ever shown).
#[utoipa::path(
    get, path = "/api/v1/namespaces/{namespace}/backups/{name}/logs", tag = "backups",
    params(("namespace" = String, Path, description = "Namespace"), ("name" = String, Path, description = "Name"), ArtifactParams),
    responses((status = 200, description = "The artifact: the log as text/plain, the results or the resource list as JSON", content((String = "text/plain"), (JsonArtifact = "application/json"))), ErrorResponses),
    security(("bearer" = []), ("session" = []))
)]
pub async fn backup_logs(
    State(gateway): State<Gateway>,
    caller: AuthCaller,
    ApiPath(path): ApiPath<ObjectPath>,
    ApiQuery(params): ApiQuery<ArtifactParams>,
) -> Result<Response, Problem> {
    artifact_of(&gateway, &caller, TenantResource::Backups, path, params).await
}

/// Streams a restore's log, results or resource list, decompressed.
#[utoipa::path(
    get, path = "/api/v1/namespaces/{namespace}/restores/{name}/logs", tag = "restores",
    params(("namespace" = String, Path, description = "Namespace"), ("name" = String, Path, description = "Name"), ArtifactParams),
    responses((status = 200, description = "The artifact: the log as text/plain, the results or the resource list as JSON", content((String = "text/plain"), (JsonArtifact = "application/json"))), ErrorResponses),
    security(("bearer" = []), ("session" = []))
)]
pub async fn restore_logs(
    State(gateway): State<Gateway>,
    caller: AuthCaller,
    ApiPath(path): ApiPath<ObjectPath>,
    ApiQuery(params): ApiQuery<ArtifactParams>,
) -> Result<Response, Problem> {
    artifact_of(&gateway, &caller, TenantResource::Restores, path, params).await
}

/// My namespace's pending and running backups and restores with live queue positions.
#[utoipa::path(
    get, path = "/api/v1/namespaces/{namespace}/queue", tag = "queue",
    params(("namespace" = String, Path, description = "Namespace")),
    responses((status = 200, description = "Queue items of this namespace", body = NamespaceQueue), ErrorResponses),
    security(("bearer" = []), ("session" = []))
)]
pub async fn namespace_queue(
    State(gateway): State<Gateway>,
    caller: AuthCaller,
    ApiPath(path): ApiPath<NamespacePath>,
) -> Result<ApiJson<NamespaceQueue>, Problem> {
    check_namespace(&path.namespace)?;
    let queue = gateway
        .service
        .namespace_queue(&caller.0, &path.namespace)
        .await?;
    Ok(ApiJson(queue))
}

/// The cluster's queues: other tenants only as anonymous counts, mine by name.
#[utoipa::path(
    get, path = "/api/v1/queue", tag = "queue",
    responses((status = 200, description = "Queue summary", body = ClusterQueue), ErrorResponses),
    security(("bearer" = []), ("session" = []))
)]
pub async fn cluster_queue(
    State(gateway): State<Gateway>,
    caller: AuthCaller,
) -> Result<ApiJson<ClusterQueue>, Problem> {
    let queue = gateway.service.cluster_queue(&caller.0).await?;
    Ok(ApiJson(queue))
}

/// My namespace's place in the administrator's shared backup pool: whether the cluster has a
/// pool and, if so, the state of the namespace's storage in it (never a bucket, provider,
/// prefix or other namespace's name). Authorized like listing backups in the namespace.
#[utoipa::path(
    get, path = "/api/v1/namespaces/{namespace}/sharedstorage", tag = "shared-storage",
    params(("namespace" = String, Path, description = "Namespace")),
    responses((status = 200, description = "`configured=false` alone when the cluster has no shared backup pool; else the state of the namespace's place in it", body = SharedStorage), ErrorResponses),
    security(("bearer" = []), ("session" = []))
)]
pub async fn shared_storage(
    State(gateway): State<Gateway>,
    caller: AuthCaller,
    ApiPath(path): ApiPath<NamespacePath>,
) -> Result<ApiJson<SharedStorage>, Problem> {
    check_namespace(&path.namespace)?;
    let storage = gateway
        .service
        .shared_storage(&caller.0, &path.namespace)
        .await?;
    Ok(ApiJson(storage))
}

/// The administrator's policy in force in my namespace.
#[utoipa::path(
    get, path = "/api/v1/namespaces/{namespace}/policy", tag = "policy",
    params(("namespace" = String, Path, description = "Namespace")),
    responses((status = 200, description = "Enforced values, defaults, maxima and allow-lists", body = PolicyView), ErrorResponses),
    security(("bearer" = []), ("session" = []))
)]
pub async fn namespace_policy(
    State(gateway): State<Gateway>,
    caller: AuthCaller,
    ApiPath(path): ApiPath<NamespacePath>,
) -> Result<ApiJson<PolicyView>, Problem> {
    check_namespace(&path.namespace)?;
    let policy = gateway.service.policy(&caller.0, &path.namespace).await?;
    Ok(ApiJson(policy))
}

fn last_event_id(headers: &HeaderMap) -> Option<String> {
    headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .filter(|v| v.len() <= 64)
}

/// Live changes in one namespace as Server-Sent Events (resumable with `Last-Event-ID`).
#[utoipa::path(
    get, path = "/api/v1/namespaces/{namespace}/events", tag = "events",
    params(("namespace" = String, Path, description = "Namespace"),
           ("Last-Event-ID" = Option<String>, Header, description = "Resume after this event (an opaque id of this stream)")),
    responses((status = 200, description = "text/event-stream: `ready` (data: StreamReady), then ADDED/MODIFIED/DELETED events with opaque ids (data: StreamChange); `reset` when a resume is impossible; the stream ends with `forbidden` when access is revoked, `unauthenticated` when the token is no longer valid, `unavailable` (with a `retry` hint) when the API server could not be reached to re-check access for a whole access-cache TTL, or `shutdown` (with a `retry` hint) when the gateway stops: reconnect with `Last-Event-ID` (data of reset and the ends: StreamNotice; the schemas are under components)", body = String, content_type = "text/event-stream"), ErrorResponses),
    security(("bearer" = []), ("session" = []))
)]
pub async fn namespace_events(
    State(gateway): State<Gateway>,
    caller: AuthCaller,
    ApiPath(path): ApiPath<NamespacePath>,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    check_namespace(&path.namespace)?;
    let budget = gateway.service.review_budget();
    let scope = scope_for(
        &gateway.service,
        &caller.0,
        Some(vec![path.namespace]),
        None,
        &budget,
    )
    .await?;
    Ok(sse::stream(
        Arc::clone(&gateway.service),
        caller.0,
        scope,
        last_event_id(&headers),
    )?
    .into_response())
}

/// Live changes in several namespaces (default: all I may watch) as Server-Sent Events.
#[utoipa::path(
    get, path = "/api/v1/events", tag = "events",
    params(StreamParams, ("Last-Event-ID" = Option<String>, Header, description = "Resume after this event (an opaque id of this stream)")),
    responses((status = 200, description = "text/event-stream, as the per-namespace stream", body = String, content_type = "text/event-stream"), ErrorResponses),
    security(("bearer" = []), ("session" = []))
)]
pub async fn all_events(
    State(gateway): State<Gateway>,
    caller: AuthCaller,
    ApiQuery(params): ApiQuery<StreamParams>,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    let namespaces = params
        .namespaces
        .as_deref()
        .filter(|n| !n.trim().is_empty())
        .map(|list| list.split(',').map(|ns| ns.trim().to_string()).collect());
    let budget = gateway.service.review_budget();
    let scope = scope_for(&gateway.service, &caller.0, namespaces, None, &budget).await?;
    Ok(sse::stream(
        Arc::clone(&gateway.service),
        caller.0,
        scope,
        last_event_id(&headers),
    )?
    .into_response())
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "health", responses((status = 200, description = "Alive", body = String)))]
pub async fn healthz() -> &'static str {
    "ok"
}

/// Readiness: the watch caches are loaded.
#[utoipa::path(get, path = "/readyz", tag = "health",
    responses((status = 200, description = "Ready", body = String), (status = 503, description = "Caches still loading", body = ProblemDetails, content_type = "application/problem+json")))]
pub async fn readyz(State(gateway): State<Gateway>) -> Response {
    if gateway.service.is_synced() {
        "ok".into_response()
    } else {
        Problem(GatewayError::Unavailable(
            "the watch caches are still loading".into(),
        ))
        .into_response()
    }
}

/// Prometheus metrics.
#[utoipa::path(get, path = "/metrics", tag = "health", responses((status = 200, description = "Prometheus text format", body = String, content_type = "text/plain")))]
pub async fn metrics(State(gateway): State<Gateway>) -> Response {
    use std::fmt::Write;
    use std::sync::atomic::Ordering;
    let mut out = String::new();
    gateway.metrics.render(&mut out);
    let authn = &gateway.service.authenticator().counters;
    let authz = &gateway.service.authorizer().counters;
    let history = gateway.service.history_counters();
    let counters = [
        (
            "nac_gateway_tokenreview_cache_hits_total",
            "TokenReview answers served from the cache.",
            authn.cache_hits.load(Ordering::Relaxed),
        ),
        (
            "nac_gateway_tokenreviews_total",
            "TokenReviews sent to the API server.",
            authn.reviews.load(Ordering::Relaxed),
        ),
        (
            "nac_gateway_tokens_refused_total",
            "Requests with a refused token.",
            authn.refused.load(Ordering::Relaxed),
        ),
        (
            "nac_gateway_preauth_rate_limited_total",
            "Requests refused by the pre-authentication limit (token not known to be good).",
            authn.pre_auth_limited.load(Ordering::Relaxed),
        ),
        (
            "nac_gateway_access_cache_hits_total",
            "Access decisions served from the cache.",
            authz.cache_hits.load(Ordering::Relaxed),
        ),
        (
            "nac_gateway_subjectaccessreviews_total",
            "SubjectAccessReviews sent to the API server.",
            authz.reviews.load(Ordering::Relaxed),
        ),
        (
            "nac_gateway_access_denied_total",
            "Access checks denied.",
            authz.denied.load(Ordering::Relaxed),
        ),
        (
            "nac_gateway_history_read_failures_total",
            "History reads answered 503 because the history store did not answer.",
            history.read_failures.load(Ordering::Relaxed),
        ),
        (
            "nac_gateway_history_requester_failures_total",
            "Creates whose requester could not be recorded in the history store.",
            history.requester_failures.load(Ordering::Relaxed),
        ),
        (
            "nac_gateway_history_eta_failures_total",
            "Queue ETAs left out because the history store did not answer.",
            history.eta_failures.load(Ordering::Relaxed),
        ),
    ];
    for (name, help, value) in counters {
        let _ = writeln!(
            out,
            "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}"
        );
    }
    let ready = u8::from(gateway.service.is_synced());
    let _ = writeln!(
        out,
        "# HELP nac_gateway_ready Whether the watch caches are loaded.\n# TYPE nac_gateway_ready gauge\nnac_gateway_ready {ready}"
    );
    let mut response = out.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}

/// Answers for unknown routes.
pub async fn no_route() -> Problem {
    Problem(GatewayError::NoRoute("see /docs for the API".into()))
}

/// Answers for known routes with another method.
pub async fn method_not_allowed() -> Problem {
    Problem(GatewayError::MethodNotAllowed)
}

/// The content type of problem answers (for the OpenAPI document).
pub const ERROR_CONTENT_TYPE: &str = PROBLEM_CONTENT_TYPE;

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(name: &str, phase: &str) -> NonAdminBackup {
        serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
            "metadata": {"name": name, "namespace": "team-a", "uid": format!("uid-{name}"),
                         "resourceVersion": "7", "labels": {"app": "wéb \"quoted\""},
                         "managedFields": [{"manager": "kubectl"}]},
            "spec": {"backupSpec": {"ttl": "24h0m0s", "includedNamespaces": ["team-a"]}},
            "status": {"phase": phase, "queueInfo": {"estimatedQueuePosition": 3}}
        }))
        .unwrap()
    }

    /// The bytes written from cached items are those of the list document serialized whole.
    #[test]
    fn list_body_is_byte_for_byte_the_list_document() {
        let objects = [
            object("a", "New"),
            object("b", "Created"),
            object("c", "Created"),
        ];
        let presented = crate::gateway::store::PresentedJson::default();
        let refs: Vec<&NonAdminBackup> = objects.iter().collect();
        let items = presented.of(&refs);
        for (subset, token) in [
            (&items[..0], None),
            (&items[..1], None),
            (&items[..], Some("opaque\"token/ü")),
        ] {
            let values: Vec<Value> = objects[..subset.len()].iter().map(present).collect();
            let expected = serde_json::to_vec(&list_document::<NonAdminBackup>(
                values,
                token.map(String::from),
            ))
            .unwrap();
            assert_eq!(
                String::from_utf8(list_body::<NonAdminBackup>(subset, token, None)).unwrap(),
                String::from_utf8(expected).unwrap()
            );
        }
        let approvals: BTreeMap<String, &str> = [
            ("loc-a".to_string(), "Approved"),
            ("loc-b".to_string(), "Pending"),
        ]
        .into();
        let values: Vec<Value> = objects.iter().map(present).collect();
        let mut expected = list_document::<NonAdminBackupStorageLocation>(values, None);
        expected["approvals"] = json!(approvals);
        assert_eq!(
            String::from_utf8(list_body::<NonAdminBackupStorageLocation>(
                &items,
                None,
                Some(&approvals)
            ))
            .unwrap(),
            serde_json::to_string(&expected).unwrap()
        );
    }
}
