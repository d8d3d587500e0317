//! REST handlers of the operation history: a namespace's operations (filtered, paged), one
//! operation with its timeline, statistics over a window, and backup coverage. Each is
//! authorized like listing the namespace's NonAdminBackups; see [`crate::gateway::operations`].

use axum::extract::{RawQuery, State};
use serde::Deserialize;
use utoipa::IntoParams;

use super::answer::ApiJson;
use super::extract::{ApiPath, ApiQuery, AuthCaller, check_namespace};
use super::problem::Problem;
use super::schema::ErrorResponses;
use crate::gateway::Gateway;
use crate::gateway::error::GatewayError;
use crate::gateway::operations::{
    HistoryQuery, NamespaceCoverage, NamespaceStatistics, OperationDetail, OperationPage,
    check_text, parse_continue, parse_kinds, parse_limit, parse_phases, parse_time, stats_window,
};
use crate::history::{OperationFilter, now_millis};

/// `{namespace}`.
#[derive(Debug, Deserialize)]
pub struct HistoryNamespacePath {
    namespace: String,
}

/// `{namespace}/history/{operationId}`.
#[derive(Debug, Deserialize)]
pub struct OperationPath {
    namespace: String,
    #[serde(rename = "operationId")]
    operation_id: String,
}

/// History filters and paging (documentation of what [`history_query`] reads: `kind` and
/// `phase` repeat, which the usual query extractor cannot take).
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct HistoryParams {
    /// Only these kinds: backup, restore, backup_storage_location, schedule_run, download,
    /// delete (repeat the parameter or separate with commas).
    kind: Option<Vec<String>>,
    /// Only these phases, e.g. Completed, Failed, InProgress (repeat or separate with commas).
    phase: Option<Vec<String>>,
    /// Created at or after this time (RFC 3339).
    since: Option<String>,
    /// Created before this time (RFC 3339).
    until: Option<String>,
    /// Case-insensitive text in the name, Velero name, requester or failure reason.
    q: Option<String>,
    /// Page size (default 50, 1 to 500).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u32>,
    /// Token from the previous page's `continue`.
    #[serde(rename = "continue")]
    #[param(rename = "continue")]
    continue_token: Option<String>,
}

/// Statistics window.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StatsParams {
    /// Window start (RFC 3339; default: 7 days before `to`).
    from: Option<String>,
    /// Window end (RFC 3339; default: now). After `from`, at most 366 days later.
    to: Option<String>,
}

/// The history query of a raw query string. Unknown parameters are ignored, as on the other
/// endpoints; bad values are refused naming their parameter.
pub fn history_query(raw: Option<&str>) -> Result<HistoryQuery, GatewayError> {
    let mut kinds = Vec::new();
    let mut phases = Vec::new();
    let (mut since, mut until, mut text, mut limit, mut token) = (None, None, None, None, None);
    for (key, value) in url::form_urlencoded::parse(raw.unwrap_or_default().as_bytes()) {
        let value = value.into_owned();
        match key.as_ref() {
            "kind" => kinds.push(value),
            "phase" => phases.push(value),
            "since" => since = Some(value),
            "until" => until = Some(value),
            "q" => text = Some(value),
            "limit" => limit = Some(value),
            "continue" => token = Some(value),
            _ => {}
        }
    }
    let since = since
        .as_deref()
        .map(|t| parse_time("since", t))
        .transpose()?;
    let until = until
        .as_deref()
        .map(|t| parse_time("until", t))
        .transpose()?;
    if let (Some(since), Some(until)) = (since, until)
        && until <= since
    {
        return Err(GatewayError::invalid_field(
            "until",
            "until must be after since",
        ));
    }
    Ok(HistoryQuery {
        filter: OperationFilter {
            kinds: parse_kinds("kind", &kinds)?,
            phases: parse_phases("phase", &phases)?,
            since,
            until,
            text: check_text("q", text)?,
        },
        limit: parse_limit("limit", limit.as_deref())?,
        after: parse_continue("continue", token.as_deref())?,
    })
}

/// The namespace's operations, newest first — including those whose custom resources are
/// gone.
#[utoipa::path(
    get, path = "/api/v1/namespaces/{namespace}/history", tag = "history",
    params(("namespace" = String, Path, description = "Namespace"), HistoryParams),
    responses(
        (status = 200, description = "One page; `continue` when more follow", body = OperationPage),
        ErrorResponses),
    security(("bearer" = []), ("session" = []))
)]
pub async fn namespace_history(
    State(gateway): State<Gateway>,
    caller: AuthCaller,
    ApiPath(path): ApiPath<HistoryNamespacePath>,
    RawQuery(raw): RawQuery,
) -> Result<ApiJson<OperationPage>, Problem> {
    check_namespace(&path.namespace)?;
    let query = history_query(raw.as_deref())?;
    let page = gateway
        .service
        .history_page(&caller.0, &path.namespace, &query)
        .await?;
    Ok(ApiJson(page))
}

/// One operation with its timeline, oldest fact first.
#[utoipa::path(
    get, path = "/api/v1/namespaces/{namespace}/history/{operationId}", tag = "history",
    params(("namespace" = String, Path, description = "Namespace"),
           ("operationId" = String, Path, description = "The operation's id")),
    responses((status = 200, description = "The operation and its timeline", body = OperationDetail), ErrorResponses),
    security(("bearer" = []), ("session" = []))
)]
pub async fn history_operation(
    State(gateway): State<Gateway>,
    caller: AuthCaller,
    ApiPath(path): ApiPath<OperationPath>,
) -> Result<ApiJson<OperationDetail>, Problem> {
    check_namespace(&path.namespace)?;
    let detail = gateway
        .service
        .history_detail(&caller.0, &path.namespace, &path.operation_id)
        .await?;
    Ok(ApiJson(detail))
}

/// Statistics of the namespace's operations created in a window, per kind.
#[utoipa::path(
    get, path = "/api/v1/namespaces/{namespace}/stats", tag = "history",
    params(("namespace" = String, Path, description = "Namespace"), StatsParams),
    responses((status = 200, description = "Counts per phase, success rate and durations per kind", body = NamespaceStatistics), ErrorResponses),
    security(("bearer" = []), ("session" = []))
)]
pub async fn namespace_stats(
    State(gateway): State<Gateway>,
    caller: AuthCaller,
    ApiPath(path): ApiPath<HistoryNamespacePath>,
    ApiQuery(params): ApiQuery<StatsParams>,
) -> Result<ApiJson<NamespaceStatistics>, Problem> {
    check_namespace(&path.namespace)?;
    let from = params
        .from
        .as_deref()
        .map(|t| parse_time("from", t))
        .transpose()?;
    let to = params
        .to
        .as_deref()
        .map(|t| parse_time("to", t))
        .transpose()?;
    let window = stats_window(from, to, now_millis())?;
    let stats = gateway
        .service
        .history_stats(&caller.0, &path.namespace, window)
        .await?;
    Ok(ApiJson(stats))
}

/// How well the namespace is protected: its last successful backup and failing schedules.
#[utoipa::path(
    get, path = "/api/v1/namespaces/{namespace}/coverage", tag = "history",
    params(("namespace" = String, Path, description = "Namespace")),
    responses((status = 200, description = "Coverage now", body = NamespaceCoverage), ErrorResponses),
    security(("bearer" = []), ("session" = []))
)]
pub async fn namespace_coverage(
    State(gateway): State<Gateway>,
    caller: AuthCaller,
    ApiPath(path): ApiPath<HistoryNamespacePath>,
) -> Result<ApiJson<NamespaceCoverage>, Problem> {
    check_namespace(&path.namespace)?;
    let coverage = gateway
        .service
        .history_coverage(&caller.0, &path.namespace)
        .await?;
    Ok(ApiJson(coverage))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::history::OperationKind;

    #[test]
    fn repeated_and_comma_separated_parameters() {
        let query = history_query(Some(
            "kind=backup&kind=restore,schedule_run&phase=completed&q=night&limit=5&other=1",
        ))
        .unwrap();
        assert_eq!(
            query.filter.kinds,
            vec![
                OperationKind::Backup,
                OperationKind::Restore,
                OperationKind::ScheduleRun
            ]
        );
        assert_eq!(query.filter.phases, vec!["Completed".to_string()]);
        assert_eq!(query.filter.text.as_deref(), Some("night"));
        assert_eq!(query.limit, 5);
        assert_eq!(history_query(None).unwrap().limit, 50);
    }

    #[test]
    fn bad_values_name_their_parameter() {
        for (raw, param) in [
            ("since=yesterday", "since"),
            ("until=2025-13-01", "until"),
            (
                "since=2025-02-01T00:00:00Z&until=2025-01-01T00:00:00Z",
                "until",
            ),
            ("kind=nope", "kind"),
            ("phase=a%20b", "phase"),
        ] {
            let error = history_query(Some(raw)).unwrap_err();
            assert_eq!(error.status_code(), 422, "{raw}");
            assert_eq!(error.field_errors()[0].field, param, "{raw}");
        }
        for (raw, param) in [("limit=0", "limit"), ("continue=%21%21", "continue")] {
            let error = history_query(Some(raw)).unwrap_err();
            assert_eq!(error.status_code(), 400, "{raw}");
            assert!(error.to_string().starts_with(param), "{error}");
        }
    }
}
