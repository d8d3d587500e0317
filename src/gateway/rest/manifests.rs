//! REST handlers of backup manifests (seed 002): `manifest.json`, the contents browser, the
//! owner graph, the diff of two backups, and whether a pending backup or restore waits on
//! running ones (`…/overlaps`). (The backup dry-run and the restore preview answer
//! `POST …/backups?dryRun=true` and `POST …/restores?dryRun=true`, in [`super::handlers`].)

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use serde::Deserialize;
use utoipa::IntoParams;

use super::answer::ApiJson;
use super::extract::{ApiPath, ApiQuery, AuthCaller, check_name, check_namespace};
use super::problem::{Problem, ProblemDetails};
use super::schema::ErrorResponses;
use crate::gateway::Gateway;
use crate::gateway::error::GatewayError;
use crate::gateway::manifests::{BackupDiff, ContentsPage, ContentsQuery, OperationOverlaps};
use crate::manifest::export::ManifestDocument;
use crate::manifest::graph::OwnerGraphView;

/// `{namespace}/backups/{name}` (or `{namespace}/restores/{name}`).
#[derive(Debug, Deserialize)]
pub struct BackupPath {
    namespace: String,
    name: String,
}

/// `manifest.json` options.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ManifestParams {
    /// Answer as a file download (`Content-Disposition: attachment`).
    download: Option<bool>,
}

/// Contents browser filters and paging.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct ContentsParams {
    /// Kind (`Deployment`), plural (`deployments`) or `resource.group` (`deployments.apps`).
    kind: Option<String>,
    /// Case-insensitive text in the item's name.
    q: Option<String>,
    /// Label selector, e.g. `app=web,tier!=db`.
    label_selector: Option<String>,
    /// Page size (default 100, 1 to 1000).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<usize>,
    /// Token from the previous page's `continue`.
    #[serde(rename = "continue")]
    #[param(rename = "continue")]
    continue_token: Option<String>,
}

/// Which backup to compare with.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DiffParams {
    /// The earlier backup (a NonAdminBackup of the same namespace).
    against: Option<String>,
}

fn check(path: &BackupPath) -> Result<(), Problem> {
    check_namespace(&path.namespace)?;
    check_name(&path.name)?;
    Ok(())
}

/// The manifest of a completed backup (`manifest.json`): every item's group, version, kind,
/// namespace, name, labels, annotations, owners and UID, kept after the backup is gone.
///
/// For a second or two after the backup completes the manifest is still being built: the answer
/// is then 202 with `Retry-After` and a problem (as for the contents, the graph and the diff);
/// 404 means no such backup, or one that did not complete.
#[utoipa::path(
    get, path = "/api/v1/namespaces/{namespace}/backups/{name}/manifest", tag = "backups",
    params(("namespace" = String, Path, description = "Namespace"),
           ("name" = String, Path, description = "NonAdminBackup name"), ManifestParams),
    responses(
        (status = 200, description = "The manifest", body = ManifestDocument),
        (status = 202, description = "The backup has completed and its manifest is still being built: retry after `Retry-After` seconds", body = ProblemDetails, content_type = "application/problem+json",
            headers(("Retry-After" = u64, description = "Seconds to wait before asking again"))),
        ErrorResponses),
    security(("bearer" = []), ("session" = []))
)]
pub async fn backup_manifest(
    State(gateway): State<Gateway>,
    caller: AuthCaller,
    ApiPath(path): ApiPath<BackupPath>,
    ApiQuery(params): ApiQuery<ManifestParams>,
) -> Result<(HeaderMap, ApiJson<Arc<ManifestDocument>>), Problem> {
    check(&path)?;
    let document = gateway
        .service
        .backup_manifest(&caller.0, &path.namespace, &path.name)
        .await?;
    let mut headers = HeaderMap::new();
    if params.download == Some(true)
        && let Ok(value) = HeaderValue::from_str(&format!(
            "attachment; filename=\"{}-manifest.json\"",
            path.name
        ))
    {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    // Written straight to bytes: a manifest may hold 100,000 items.
    Ok((headers, ApiJson(document)))
}

/// One page of a backup's contents, filtered.
#[utoipa::path(
    get, path = "/api/v1/namespaces/{namespace}/backups/{name}/contents", tag = "backups",
    params(("namespace" = String, Path, description = "Namespace"),
           ("name" = String, Path, description = "NonAdminBackup name"), ContentsParams),
    responses(
        (status = 200, description = "One page; `continue` when more follow", body = ContentsPage),
        (status = 202, description = "The backup has completed and its manifest is still being built: retry after `Retry-After` seconds", body = ProblemDetails, content_type = "application/problem+json",
            headers(("Retry-After" = u64, description = "Seconds to wait before asking again"))),
        ErrorResponses),
    security(("bearer" = []), ("session" = []))
)]
pub async fn backup_contents(
    State(gateway): State<Gateway>,
    caller: AuthCaller,
    ApiPath(path): ApiPath<BackupPath>,
    ApiQuery(params): ApiQuery<ContentsParams>,
) -> Result<ApiJson<ContentsPage>, Problem> {
    check(&path)?;
    let query = ContentsQuery {
        kind: params.kind,
        text: params.q,
        selector: params.label_selector,
        limit: params.limit,
        continue_token: params.continue_token,
    };
    let page = gateway
        .service
        .backup_contents(&caller.0, &path.namespace, &path.name, &query)
        .await?;
    Ok(ApiJson(page))
}

/// The owner graph of a backup's items (owners → dependents, from `ownerReferences`).
#[utoipa::path(
    get, path = "/api/v1/namespaces/{namespace}/backups/{name}/graph", tag = "backups",
    params(("namespace" = String, Path, description = "Namespace"),
           ("name" = String, Path, description = "NonAdminBackup name")),
    responses(
        (status = 200, description = "The owner graph", body = OwnerGraphView),
        (status = 202, description = "The backup has completed and its manifest is still being built: retry after `Retry-After` seconds", body = ProblemDetails, content_type = "application/problem+json",
            headers(("Retry-After" = u64, description = "Seconds to wait before asking again"))),
        ErrorResponses),
    security(("bearer" = []), ("session" = []))
)]
pub async fn backup_graph(
    State(gateway): State<Gateway>,
    caller: AuthCaller,
    ApiPath(path): ApiPath<BackupPath>,
) -> Result<ApiJson<OwnerGraphView>, Problem> {
    check(&path)?;
    let graph = gateway
        .service
        .backup_owner_graph(&caller.0, &path.namespace, &path.name)
        .await?;
    Ok(ApiJson(graph))
}

/// What changed from backup `against` to this one: items added, removed and changed.
#[utoipa::path(
    get, path = "/api/v1/namespaces/{namespace}/backups/{name}/diff", tag = "backups",
    params(("namespace" = String, Path, description = "Namespace"),
           ("name" = String, Path, description = "NonAdminBackup name (the later one)"), DiffParams),
    responses(
        (status = 200, description = "The differences", body = BackupDiff),
        (status = 202, description = "The backup has completed and its manifest is still being built: retry after `Retry-After` seconds", body = ProblemDetails, content_type = "application/problem+json",
            headers(("Retry-After" = u64, description = "Seconds to wait before asking again"))),
        ErrorResponses),
    security(("bearer" = []), ("session" = []))
)]
pub async fn backup_diff(
    State(gateway): State<Gateway>,
    caller: AuthCaller,
    ApiPath(path): ApiPath<BackupPath>,
    ApiQuery(params): ApiQuery<DiffParams>,
) -> Result<ApiJson<BackupDiff>, Problem> {
    check(&path)?;
    let against = params.against.ok_or_else(|| {
        Problem(GatewayError::invalid_field(
            "against",
            "against must name the backup to compare with",
        ))
    })?;
    check_name(&against)?;
    let diff = gateway
        .service
        .backup_diff(&caller.0, &path.namespace, &path.name, &against)
        .await?;
    Ok(ApiJson(diff))
}

/// Whether a created backup that has not started yet (new or queued) waits on running
/// operations of its namespace, and on which items: its items are what its spec would take
/// now, read with the caller's token. A running or finished backup answers `waiting: false`.
#[utoipa::path(
    get, path = "/api/v1/namespaces/{namespace}/backups/{name}/overlaps", tag = "backups",
    params(("namespace" = String, Path, description = "Namespace"),
           ("name" = String, Path, description = "NonAdminBackup name")),
    responses(
        (status = 200, description = "The running operations it waits on", body = OperationOverlaps),
        ErrorResponses),
    security(("bearer" = []), ("session" = []))
)]
pub async fn backup_overlaps(
    State(gateway): State<Gateway>,
    caller: AuthCaller,
    ApiPath(path): ApiPath<BackupPath>,
) -> Result<ApiJson<OperationOverlaps>, Problem> {
    check(&path)?;
    let answer = gateway
        .service
        .backup_overlaps(&caller.0, &path.namespace, &path.name)
        .await?;
    Ok(ApiJson(answer))
}

/// Whether a created restore that has not started yet waits on running operations of its
/// namespace, and on which items: its items are what it would write, planned as the preview
/// plans them. A running or finished restore answers `waiting: false`.
#[utoipa::path(
    get, path = "/api/v1/namespaces/{namespace}/restores/{name}/overlaps", tag = "restores",
    params(("namespace" = String, Path, description = "Namespace"),
           ("name" = String, Path, description = "NonAdminRestore name")),
    responses(
        (status = 200, description = "The running operations it waits on", body = OperationOverlaps),
        ErrorResponses),
    security(("bearer" = []), ("session" = []))
)]
pub async fn restore_overlaps(
    State(gateway): State<Gateway>,
    caller: AuthCaller,
    ApiPath(path): ApiPath<BackupPath>,
) -> Result<ApiJson<OperationOverlaps>, Problem> {
    check(&path)?;
    let answer = gateway
        .service
        .restore_overlaps_of(&caller.0, &path.namespace, &path.name)
        .await?;
    Ok(ApiJson(answer))
}
