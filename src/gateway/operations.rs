//! Operation history through the gateway — the views of the history store's records (times as
//! RFC 3339), the parsing of history parameters shared by REST and GraphQL, and queue ETAs
//! (pure). The reads themselves are in `service/history.rs`: authorized exactly like listing
//! NonAdminBackups in the namespace, so a tenant sees the history of the namespaces whose
//! backups it may list — including operations whose custom resources are gone — and nothing
//! else, and made through the door of [`crate::gateway::tenancy`], bound to the namespace as it
//! is now (name and UID): a namespace deleted and created again under the same name reads
//! nothing of its predecessor. The store is a cache that outlives the cluster objects: when it
//! is down, reads answer 503 and everything else (queue views, creates) goes on without it.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use serde::Serialize;

use crate::api::nonadmin::NonAdminPhase;
use crate::gateway::error::GatewayError;
use crate::gateway::phases::{OperationPhase, phase_text};
use crate::gateway::resources::TenantResource;
use crate::history::estimate::eta;
use crate::history::observe::PhaseSource;
use crate::history::{
    Coverage, EpochMillis, HistoryError, KindStats, NamespaceStats, OperationCursor,
    OperationFilter, OperationKind, OperationRecord, StoredTransition, TimeWindow, cursor,
};

/// Default page size of the history.
pub const DEFAULT_HISTORY_LIMIT: u32 = 50;
/// Largest page size of the history.
pub const MAX_HISTORY_LIMIT: u32 = 500;
/// Default statistics window.
pub const DEFAULT_STATS_WINDOW: Duration = Duration::from_secs(7 * 24 * 3600);
/// Longest statistics window.
pub const MAX_STATS_WINDOW: Duration = Duration::from_secs(366 * 24 * 3600);
/// Longest text filter.
pub const MAX_TEXT_LENGTH: usize = 200;
/// Seconds a client is asked to wait when the store is unavailable.
pub const RETRY_AFTER_SECONDS: u64 = 5;

/// What a client is told when the store cannot answer (never the database's own words).
pub const HISTORY_UNAVAILABLE: &str =
    "the operation history is unavailable right now; retry shortly";

/// Counters of the gateway's use of the history store (for `/metrics`).
#[derive(Debug, Default)]
pub struct HistoryCounters {
    /// History reads that failed because the store did not answer.
    pub read_failures: AtomicU64,
    /// Requesters that could not be recorded after a create.
    pub requester_failures: AtomicU64,
    /// Queue ETAs left out because the store did not answer.
    pub eta_failures: AtomicU64,
}

/// RFC 3339 (UTC, milliseconds) of an epoch-milliseconds time.
pub fn rfc3339(ms: EpochMillis) -> String {
    chrono::DateTime::<Utc>::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(SecondsFormat::Millis, true))
        .unwrap_or_default()
}

/// Epoch milliseconds of the RFC 3339 time given as parameter `param`.
pub fn parse_time(param: &str, text: &str) -> Result<EpochMillis, GatewayError> {
    chrono::DateTime::parse_from_rfc3339(text.trim())
        .map(|t| t.timestamp_millis())
        .map_err(|_| {
            GatewayError::invalid_field(
                param,
                format!("{param} must be an RFC 3339 time, e.g. 2025-01-31T00:00:00Z"),
            )
        })
}

fn split_values(values: &[String]) -> impl Iterator<Item = &str> {
    values
        .iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// Operation kinds from repeated or comma-separated values of parameter `param`.
pub fn parse_kinds(param: &str, values: &[String]) -> Result<Vec<OperationKind>, GatewayError> {
    let mut kinds = Vec::new();
    for value in split_values(values) {
        let kind = OperationKind::parse(&value.to_ascii_lowercase()).ok_or_else(|| {
            let known: Vec<&str> = OperationKind::ALL.iter().map(|k| k.as_str()).collect();
            GatewayError::invalid_field(
                param,
                format!("{param} must be one of {}", known.join(", ")),
            )
        })?;
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    Ok(kinds)
}

/// Phases NAC and Velero report, for case-insensitive matching.
const KNOWN_PHASES: &[&str] = &[
    "New",
    "BackingOff",
    "Created",
    "Deleting",
    "Queued",
    "ReadyToStart",
    "InProgress",
    "WaitingForPluginOperations",
    "WaitingForPluginOperationsPartiallyFailed",
    "Finalizing",
    "FinalizingPartiallyFailed",
    "Completed",
    "PartiallyFailed",
    "Failed",
    "FailedValidation",
    "Processed",
    "Available",
    "Unavailable",
    "Deleted",
];

/// Phases from repeated or comma-separated values of parameter `param` (known phases match
/// case-insensitively).
pub fn parse_phases(param: &str, values: &[String]) -> Result<Vec<String>, GatewayError> {
    let mut phases = Vec::new();
    for value in split_values(values) {
        if value.len() > 64 || !value.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(GatewayError::invalid_field(
                param,
                format!("{param} must be a phase name such as Completed or Failed"),
            ));
        }
        let phase = KNOWN_PHASES
            .iter()
            .find(|known| known.eq_ignore_ascii_case(value))
            .map_or_else(|| value.to_string(), |known| (*known).to_string());
        if !phases.contains(&phase) {
            phases.push(phase);
        }
    }
    Ok(phases)
}

/// A text filter given as parameter `param`.
pub fn check_text(param: &str, text: Option<String>) -> Result<Option<String>, GatewayError> {
    let Some(text) = text.map(|t| t.trim().to_string()).filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    if text.chars().count() > MAX_TEXT_LENGTH || text.chars().any(char::is_control) {
        return Err(GatewayError::invalid_field(
            param,
            format!("{param} must be at most {MAX_TEXT_LENGTH} printable characters"),
        ));
    }
    Ok(Some(text))
}

/// A page size given as parameter `param` (text, as REST receives it).
pub fn parse_limit(param: &str, text: Option<&str>) -> Result<u32, GatewayError> {
    match text.map(str::trim).filter(|t| !t.is_empty()) {
        None => Ok(DEFAULT_HISTORY_LIMIT),
        Some(text) => text
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=MAX_HISTORY_LIMIT).contains(n))
            .ok_or_else(|| {
                GatewayError::BadRequest(format!(
                    "{param} must be a number from 1 to {MAX_HISTORY_LIMIT}"
                ))
            }),
    }
}

/// A paging token given as parameter `param`.
pub fn parse_continue(
    param: &str,
    token: Option<&str>,
) -> Result<Option<OperationCursor>, GatewayError> {
    match token.filter(|t| !t.is_empty()) {
        None => Ok(None),
        Some(token) => cursor::decode(token).map(Some).map_err(|_| {
            GatewayError::BadRequest(format!(
                "{param} is not a valid token; use the one from the previous page"
            ))
        }),
    }
}

/// Checks an operation id from a path or an argument.
pub fn check_operation_id(id: &str) -> Result<(), GatewayError> {
    let valid = !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
    if valid {
        Ok(())
    } else {
        Err(GatewayError::BadRequest(
            "operationId is not a valid operation id".into(),
        ))
    }
}

/// The statistics window from optional bounds: default the last 7 days; `to` after `from`;
/// at most 366 days.
pub fn stats_window(
    from: Option<EpochMillis>,
    to: Option<EpochMillis>,
    now: EpochMillis,
) -> Result<TimeWindow, GatewayError> {
    let default = i64::try_from(DEFAULT_STATS_WINDOW.as_millis()).unwrap_or(i64::MAX);
    let longest = i64::try_from(MAX_STATS_WINDOW.as_millis()).unwrap_or(i64::MAX);
    let to = to.unwrap_or(now);
    let from = from.unwrap_or(to.saturating_sub(default));
    if to <= from {
        return Err(GatewayError::invalid_field("to", "to must be after from"));
    }
    if to - from > longest {
        return Err(GatewayError::invalid_field(
            "from",
            "the window from..to must be at most 366 days",
        ));
    }
    Ok(TimeWindow { from, to })
}

/// The gateway error of a failed store call (the store's text is logged, never shown).
pub fn store_error(error: HistoryError) -> GatewayError {
    match error {
        HistoryError::InvalidInput(message) => GatewayError::BadRequest(message),
        other => {
            tracing::warn!(error = %other, "history store failed");
            GatewayError::Unavailable(HISTORY_UNAVAILABLE.into())
        }
    }
}

/// A filtered history page request, parsed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HistoryQuery {
    /// Which operations.
    pub filter: OperationFilter,
    /// Page size (1 to [`MAX_HISTORY_LIMIT`]).
    pub limit: u32,
    /// Where the page starts.
    pub after: Option<OperationCursor>,
}

/// What kind of operation.
// The view of `history::OperationKind`, which stays free of API derives (`remote` writes the
// conversions both ways).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = OperationKind)]
#[derive(async_graphql::Enum)]
#[graphql(name = "OperationKind", remote = "crate::history::OperationKind")]
pub enum OperationKindView {
    /// A NonAdminBackup made by a tenant.
    Backup,
    /// A NonAdminRestore.
    Restore,
    /// A NonAdminBackupStorageLocation.
    BackupStorageLocation,
    /// A NonAdminBackup made by a NonAdminSchedule run.
    ScheduleRun,
    /// A NonAdminDownloadRequest.
    Download,
    /// The permanent deletion of a backup.
    Delete,
}

/// One operation (a backup, restore, storage location, schedule run, download or deletion),
/// as the history keeps it.
// GraphQL's `timeline` is a resolver (`graphql::history`).
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
#[graphql(complex)]
pub struct Operation {
    /// Stable id (the tenant object's uid; derived from it for deletions).
    pub id: String,
    /// Namespace.
    pub namespace: String,
    /// backup, restore, backup_storage_location, schedule_run, download or delete.
    pub kind: Option<OperationKindView>,
    /// Name of the tenant object.
    pub name: String,
    /// Uid of the tenant object.
    pub uid: String,
    /// Name of the Velero object.
    pub velero_name: Option<String>,
    /// What it came from: a restore's backup, a schedule run's schedule, a download's or a
    /// deletion's backup.
    pub parent_name: Option<String>,
    /// Who asked for it (when created through the gateway).
    pub requester: Option<String>,
    /// When the tenant object was created (RFC 3339).
    pub created_at: String,
    /// When Velero started (RFC 3339).
    pub started_at: Option<String>,
    /// When it reached a final phase (RFC 3339).
    pub completed_at: Option<String>,
    /// Most advanced phase seen (Velero's when there is a Velero object, else NAC's).
    // GraphQL's phases have always been Strings: kept so for existing dashboards.
    #[graphql(
        skip,
        derived(name = "phase", into = "Option<String>", owned, with = "phase_text")
    )]
    pub phase: Option<OperationPhase>,
    /// Rank of `phase` (higher: further along).
    pub phase_rank: i64,
    /// NAC's phase (New, BackingOff, Created, Deleting).
    #[graphql(
        skip,
        derived(
            name = "nac_phase",
            into = "Option<String>",
            owned,
            with = "phase_text"
        )
    )]
    pub nac_phase: Option<NonAdminPhase>,
    /// Items Velero expects to handle.
    pub items_total: Option<i64>,
    /// Items handled.
    pub items_done: Option<i64>,
    /// Velero's warning count.
    pub warnings: Option<i64>,
    /// Velero's error count.
    pub errors: Option<i64>,
    /// Why it failed or was refused.
    pub failure_reason: Option<String>,
    /// Latest published queue position (0: not queued).
    pub queue_position: Option<i64>,
    /// When the tenant object disappeared from the cluster (RFC 3339).
    pub deleted_at: Option<String>,
    /// How long it ran, start to completion, in milliseconds.
    pub duration_ms: Option<i64>,
}

impl From<&OperationRecord> for Operation {
    fn from(record: &OperationRecord) -> Self {
        Operation {
            id: record.id.clone(),
            namespace: record.namespace.clone(),
            kind: record.kind.map(Into::into),
            name: record.name.clone(),
            uid: record.uid.clone(),
            velero_name: record.velero_name.clone(),
            parent_name: record.parent_name.clone(),
            requester: record.requester.clone(),
            created_at: rfc3339(record.created_at),
            started_at: record.started_at.map(rfc3339),
            completed_at: record.completed_at.map(rfc3339),
            phase: record.phase.as_deref().map(|phase| {
                let source = PhaseSource::of_rank(record.phase_rank);
                OperationPhase::of(record.kind, phase, source == PhaseSource::Nac)
            }),
            phase_rank: record.phase_rank,
            nac_phase: record.nac_phase.as_deref().and_then(NonAdminPhase::parse),
            items_total: record.items_total,
            items_done: record.items_done,
            warnings: record.warnings,
            errors: record.errors,
            failure_reason: record.failure_reason.clone(),
            queue_position: record.queue_position,
            deleted_at: record.deleted_at.map(rfc3339),
            duration_ms: record.duration_ms(),
        }
    }
}

/// One page of a namespace's operations, newest first.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
pub struct OperationPage {
    /// The operations.
    pub items: Vec<Operation>,
    /// Token of the next page (pass it as `continue`), when there is one.
    #[serde(rename = "continue", skip_serializing_if = "Option::is_none")]
    pub continue_token: Option<String>,
}

/// One fact of an operation's timeline: an attribute took a value.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema, async_graphql::SimpleObject)]
pub struct TimelineEntry {
    /// When (RFC 3339).
    pub at: String,
    /// What changed: `phase`, `veleroPhase`, `queuePosition`, `condition/<Type>`, `deleted`.
    pub attribute: String,
    /// The new value.
    pub value: String,
    /// A condition's reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A condition's message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl From<&StoredTransition> for TimelineEntry {
    fn from(stored: &StoredTransition) -> Self {
        let t = &stored.transition;
        TimelineEntry {
            at: rfc3339(t.at),
            attribute: t.attribute.clone(),
            value: t.value.clone(),
            reason: t.reason.clone(),
            message: t.message.clone(),
        }
    }
}

/// One operation with its timeline, oldest fact first.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
pub struct OperationDetail {
    /// The operation.
    pub operation: Operation,
    /// Its timeline.
    pub timeline: Vec<TimelineEntry>,
}

/// Statistics of one kind of operation.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
#[graphql(name = "KindStats")]
pub struct KindStatistics {
    /// The kind.
    // GraphQL has always typed it String: kept so for existing dashboards.
    #[graphql(skip, derived(name = "kind", into = "&str", owned, with = "kind_text"))]
    pub kind: OperationKindView,
    /// Operations created in the window.
    pub total: i64,
    /// Count per phase (`Unknown`: no phase yet).
    // A list of pairs in GraphQL, whose objects have no free-form keys.
    #[graphql(
        skip,
        derived(
            name = "by_phase",
            into = "Vec<PhaseCount>",
            owned,
            with = "phase_counts"
        )
    )]
    pub by_phase: BTreeMap<String, i64>,
    /// Completed / finished, when any finished.
    pub success_rate: Option<f64>,
    /// Median duration of finished ones (ms).
    pub p50_duration_ms: Option<i64>,
    /// 95th percentile duration (ms).
    pub p95_duration_ms: Option<i64>,
    /// Items handled in all.
    pub items_done: i64,
}

/// How many objects are in one phase.
// Also GraphQL's form of a phase → count map, whose objects have no free-form keys.
#[derive(Clone, Debug, PartialEq, Eq, async_graphql::SimpleObject)]
pub struct PhaseCount {
    /// The phase (Velero's when there is one, else NAC's; `Unknown` before either).
    pub phase: String,
    /// How many.
    pub count: u64,
}

fn kind_text(kind: OperationKindView) -> &'static str {
    OperationKind::from(kind).as_str()
}

fn phase_counts(by_phase: BTreeMap<String, i64>) -> Vec<PhaseCount> {
    by_phase
        .into_iter()
        .map(|(phase, count)| PhaseCount {
            phase,
            count: u64::try_from(count).unwrap_or(0),
        })
        .collect()
}

impl KindStatistics {
    /// The view of `stats`; `None` for a kind this gateway does not know (the store writes
    /// only [`OperationKind`]s).
    fn of(stats: KindStats) -> Option<Self> {
        Some(KindStatistics {
            kind: OperationKind::parse(&stats.kind)?.into(),
            total: stats.total,
            by_phase: stats.by_phase,
            success_rate: stats.success_rate,
            p50_duration_ms: stats.p50_duration_ms,
            p95_duration_ms: stats.p95_duration_ms,
            items_done: stats.items_done,
        })
    }
}

/// Statistics of a namespace's operations created in a window, per kind (kinds with none are
/// left out).
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
#[graphql(name = "NamespaceStats")]
pub struct NamespaceStatistics {
    /// The namespace.
    pub namespace: String,
    /// Window start (RFC 3339, inclusive).
    pub from: String,
    /// Window end (RFC 3339, exclusive).
    pub to: String,
    /// Per kind.
    pub kinds: Vec<KindStatistics>,
}

impl From<NamespaceStats> for NamespaceStatistics {
    fn from(stats: NamespaceStats) -> Self {
        NamespaceStatistics {
            namespace: stats.namespace,
            from: rfc3339(stats.from),
            to: rfc3339(stats.to),
            kinds: stats
                .kinds
                .into_iter()
                .filter_map(KindStatistics::of)
                .collect(),
        }
    }
}

/// How well a namespace is protected.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
#[graphql(name = "Coverage")]
pub struct NamespaceCoverage {
    /// The namespace.
    pub namespace: String,
    /// The newest backup (or schedule run) that completed.
    pub last_successful_backup: Option<String>,
    /// When it completed (RFC 3339).
    pub last_successful_backup_at: Option<String>,
    /// Its age now, in seconds.
    pub last_successful_backup_age_seconds: Option<i64>,
    /// Schedules whose newest finished run did not complete.
    pub failing_schedules: Vec<String>,
}

impl NamespaceCoverage {
    /// The view of `coverage` at `now`.
    pub fn of(coverage: Coverage, now: EpochMillis) -> Self {
        NamespaceCoverage {
            namespace: coverage.namespace,
            last_successful_backup: coverage.last_successful_backup,
            last_successful_backup_at: coverage.last_successful_backup_at.map(rfc3339),
            last_successful_backup_age_seconds: coverage
                .last_successful_backup_at
                .map(|at| (now - at).max(0) / 1000),
            failing_schedules: coverage.failing_schedules,
        }
    }
}

/// When a queued operation is expected to start and finish, from the recent durations of
/// comparable operations in its namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
pub struct QueueEta {
    /// Expected wait before it starts, in seconds.
    pub start_in_seconds: u64,
    /// Expected time until it finishes, in seconds.
    pub finish_in_seconds: u64,
    /// How many past durations the estimate rests on.
    pub samples: u64,
}

fn seconds_up(ms: i64) -> u64 {
    u64::try_from(ms.max(0)).unwrap_or(0).div_ceil(1000)
}

/// The ETA of an item at 1-based `position` (running or not), from `durations` (ms, newest
/// first); `None` with too few samples.
pub fn queue_eta(durations: &[i64], position: u64, running: bool) -> Option<QueueEta> {
    let ahead = if running {
        0
    } else {
        i64::try_from(position.saturating_sub(1)).unwrap_or(i64::MAX)
    };
    eta(durations, ahead).map(|e| QueueEta {
        start_in_seconds: seconds_up(e.start_in_ms),
        finish_in_seconds: seconds_up(e.finish_in_ms),
        samples: e.samples as u64,
    })
}

/// The history's kind for operations the gateway creates of `resource` (schedules have none of
/// their own: their runs are recorded as they happen).
pub fn operation_kind(resource: TenantResource) -> Option<OperationKind> {
    match resource {
        TenantResource::Backups => Some(OperationKind::Backup),
        TenantResource::Restores => Some(OperationKind::Restore),
        TenantResource::StorageLocations => Some(OperationKind::BackupStorageLocation),
        TenantResource::Schedules => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_as_rfc3339() {
        let ms = parse_time("since", "2025-01-31T10:00:00.250+01:00").unwrap();
        assert_eq!(rfc3339(ms), "2025-01-31T09:00:00.250Z");
        let error = parse_time("since", "yesterday").unwrap_err();
        assert_eq!(error.status_code(), 422);
        assert_eq!(error.field_errors()[0].field, "since");
    }

    #[test]
    fn kinds_and_phases_accept_lists_and_refuse_unknowns() {
        let kinds = parse_kinds("kind", &["backup,restore".into(), "backup".into()]).unwrap();
        assert_eq!(kinds, vec![OperationKind::Backup, OperationKind::Restore]);
        let error = parse_kinds("kind", &["nope".into()]).unwrap_err();
        assert_eq!(error.field_errors()[0].field, "kind");
        assert!(error.to_string().contains("schedule_run"), "{error}");
        let phases = parse_phases("phase", &["completed, Failed".into()]).unwrap();
        assert_eq!(phases, vec!["Completed".to_string(), "Failed".to_string()]);
        assert!(parse_phases("phase", &["a b".into()]).is_err());
        assert_eq!(check_text("q", Some("  ".into())).unwrap(), None);
        assert!(check_text("q", Some("x".repeat(201))).is_err());
    }

    #[test]
    fn limits_and_tokens_name_their_parameter() {
        assert_eq!(parse_limit("limit", None).unwrap(), DEFAULT_HISTORY_LIMIT);
        assert_eq!(parse_limit("limit", Some("500")).unwrap(), 500);
        for bad in ["0", "501", "-1", "ten"] {
            let error = parse_limit("limit", Some(bad)).unwrap_err();
            assert_eq!(error.status_code(), 400);
            assert!(error.to_string().starts_with("limit"), "{error}");
        }
        let error = parse_continue("continue", Some("garbage!")).unwrap_err();
        assert!(error.to_string().starts_with("continue"), "{error}");
        let token = cursor::encode(&OperationCursor {
            created_at: 5,
            id: "x".into(),
        });
        assert!(parse_continue("continue", Some(&token)).unwrap().is_some());
        assert!(check_operation_id("6c1c7c2e-0000-4000-8000-000000000001").is_ok());
        assert!(check_operation_id("../x").is_err());
    }

    #[test]
    fn stats_windows_default_and_are_bounded() {
        let now = 1_000 * 24 * 3600 * 1000;
        let window = stats_window(None, None, now).unwrap();
        assert_eq!(window.to, now);
        assert_eq!(window.to - window.from, 7 * 24 * 3600 * 1000);
        assert_eq!(
            stats_window(Some(now), Some(now), now)
                .unwrap_err()
                .field_errors()[0]
                .field,
            "to"
        );
        let year = 367 * 24 * 3600 * 1000;
        assert_eq!(
            stats_window(Some(now - year), None, now)
                .unwrap_err()
                .field_errors()[0]
                .field,
            "from"
        );
    }

    #[test]
    fn queue_etas_count_the_items_ahead() {
        let durations = [10_000, 12_000, 11_000];
        let running = queue_eta(&durations, 1, true).unwrap();
        assert_eq!(
            (running.start_in_seconds, running.finish_in_seconds),
            (0, 11)
        );
        let third = queue_eta(&durations, 3, false).unwrap();
        assert_eq!((third.start_in_seconds, third.finish_in_seconds), (22, 33));
        assert_eq!(third.samples, 3);
        assert_eq!(queue_eta(&durations[..2], 3, false), None);
    }

    #[test]
    fn views_name_kinds_and_states_as_the_wire_always_has() {
        for kind in OperationKind::ALL {
            let view = OperationKindView::from(kind);
            assert_eq!(serde_json::to_value(view).unwrap(), kind.as_str());
            assert_eq!(kind_text(view), kind.as_str());
            assert_eq!(OperationKind::from(view), kind);
        }
        for resource in TenantResource::ALL {
            let kind = resource.object_kind();
            assert_eq!(serde_json::to_value(kind).unwrap(), resource.kind());
        }
        use crate::gateway::service::{QueueItemKind, QueueState};
        for kind in [QueueItemKind::Backup, QueueItemKind::Restore] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
        for state in [QueueState::Pending, QueueState::Running] {
            assert_eq!(serde_json::to_value(state).unwrap(), state.as_str());
        }
    }

    #[test]
    fn coverage_age_is_computed_now() {
        let view = NamespaceCoverage::of(
            Coverage {
                namespace: "team-a".into(),
                last_successful_backup: Some("nightly".into()),
                last_successful_backup_at: Some(1_000_000),
                failing_schedules: vec!["hourly".into()],
            },
            1_090_500,
        );
        assert_eq!(view.last_successful_backup_age_seconds, Some(90));
        assert_eq!(
            view.last_successful_backup_at.as_deref(),
            Some("1970-01-01T00:16:40.000Z")
        );
    }
}
