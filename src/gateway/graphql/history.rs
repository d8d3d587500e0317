//! GraphQL types of the operation history (`history`, `operation`, `stats`, `coverage` on
//! `Query`) and the connection over the store's keyset pages: every edge's cursor is the
//! history's own continue token after that row, so paging resumes exactly there.

use async_graphql::connection::{Connection, Edge};
use async_graphql::{Context, Enum, Object, SimpleObject};

use super::errors::{GqlResult, to_graphql};
use super::query::DEFAULT_PAGE;
use super::types::PhaseCount;
use super::{caller_of, check_namespace, service_of};
use crate::gateway::error::GatewayError;
use crate::gateway::operations::{
    self, HistoryQuery, MAX_HISTORY_LIMIT, check_text, parse_continue, parse_phases, parse_time,
};
use crate::history::{OperationFilter, OperationKind, cursor};

/// What kind of operation.
#[derive(Enum, Clone, Copy, Debug, PartialEq, Eq)]
#[graphql(name = "OperationKind")]
pub enum OperationKindValue {
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

impl From<OperationKindValue> for OperationKind {
    fn from(kind: OperationKindValue) -> Self {
        match kind {
            OperationKindValue::Backup => OperationKind::Backup,
            OperationKindValue::Restore => OperationKind::Restore,
            OperationKindValue::BackupStorageLocation => OperationKind::BackupStorageLocation,
            OperationKindValue::ScheduleRun => OperationKind::ScheduleRun,
            OperationKindValue::Download => OperationKind::Download,
            OperationKindValue::Delete => OperationKind::Delete,
        }
    }
}

impl From<OperationKind> for OperationKindValue {
    fn from(kind: OperationKind) -> Self {
        match kind {
            OperationKind::Backup => OperationKindValue::Backup,
            OperationKind::Restore => OperationKindValue::Restore,
            OperationKind::BackupStorageLocation => OperationKindValue::BackupStorageLocation,
            OperationKind::ScheduleRun => OperationKindValue::ScheduleRun,
            OperationKind::Download => OperationKindValue::Download,
            OperationKind::Delete => OperationKindValue::Delete,
        }
    }
}

/// One operation as the history keeps it (also after its custom resource is gone).
#[derive(Clone, Debug)]
pub struct Operation(pub operations::Operation);

#[Object]
impl Operation {
    /// Stable id (the tenant object's uid; derived from it for deletions).
    async fn id(&self) -> &str {
        &self.0.id
    }
    /// Namespace.
    async fn namespace(&self) -> &str {
        &self.0.namespace
    }
    /// Kind.
    async fn kind(&self) -> Option<OperationKindValue> {
        self.0
            .kind
            .as_deref()
            .and_then(OperationKind::parse)
            .map(Into::into)
    }
    /// Name of the tenant object.
    async fn name(&self) -> &str {
        &self.0.name
    }
    /// Uid of the tenant object.
    async fn uid(&self) -> &str {
        &self.0.uid
    }
    /// Name of the Velero object.
    async fn velero_name(&self) -> Option<&str> {
        self.0.velero_name.as_deref()
    }
    /// What it came from (a restore's backup, a schedule run's schedule …).
    async fn parent_name(&self) -> Option<&str> {
        self.0.parent_name.as_deref()
    }
    /// Who asked for it (when created through the gateway).
    async fn requester(&self) -> Option<&str> {
        self.0.requester.as_deref()
    }
    /// When the tenant object was created (RFC 3339).
    async fn created_at(&self) -> &str {
        &self.0.created_at
    }
    /// When Velero started (RFC 3339).
    async fn started_at(&self) -> Option<&str> {
        self.0.started_at.as_deref()
    }
    /// When it reached a final phase (RFC 3339).
    async fn completed_at(&self) -> Option<&str> {
        self.0.completed_at.as_deref()
    }
    /// Most advanced phase seen.
    async fn phase(&self) -> Option<&str> {
        self.0.phase.as_deref()
    }
    /// Rank of the phase (higher: further along).
    async fn phase_rank(&self) -> i64 {
        self.0.phase_rank
    }
    /// NAC's phase.
    async fn nac_phase(&self) -> Option<&str> {
        self.0.nac_phase.as_deref()
    }
    /// Items Velero expects to handle.
    async fn items_total(&self) -> Option<i64> {
        self.0.items_total
    }
    /// Items handled.
    async fn items_done(&self) -> Option<i64> {
        self.0.items_done
    }
    /// Velero's warning count.
    async fn warnings(&self) -> Option<i64> {
        self.0.warnings
    }
    /// Velero's error count.
    async fn errors(&self) -> Option<i64> {
        self.0.errors
    }
    /// Why it failed or was refused.
    async fn failure_reason(&self) -> Option<&str> {
        self.0.failure_reason.as_deref()
    }
    /// Latest published queue position (0: not queued).
    async fn queue_position(&self) -> Option<i64> {
        self.0.queue_position
    }
    /// When the tenant object disappeared from the cluster (RFC 3339).
    async fn deleted_at(&self) -> Option<&str> {
        self.0.deleted_at.as_deref()
    }
    /// How long it ran, in milliseconds.
    async fn duration_ms(&self) -> Option<i64> {
        self.0.duration_ms
    }
    /// Its timeline, oldest fact first (read again with the caller's access).
    #[graphql(complexity = "10 + child_complexity")]
    async fn timeline(&self, ctx: &Context<'_>) -> async_graphql::Result<Vec<TimelineEntry>> {
        Ok(service_of(ctx)?
            .history_timeline(caller_of(ctx)?, &self.0.namespace, &self.0.id)
            .await
            .gql()?
            .into_iter()
            .map(Into::into)
            .collect())
    }
}

/// One fact of an operation's timeline.
#[derive(SimpleObject, Clone, Debug)]
pub struct TimelineEntry {
    /// When (RFC 3339).
    pub at: String,
    /// What changed: `phase`, `veleroPhase`, `queuePosition`, `condition/<Type>`, `deleted`.
    pub attribute: String,
    /// The new value.
    pub value: String,
    /// A condition's reason.
    pub reason: Option<String>,
    /// A condition's message.
    pub message: Option<String>,
}

impl From<operations::TimelineEntry> for TimelineEntry {
    fn from(entry: operations::TimelineEntry) -> Self {
        TimelineEntry {
            at: entry.at,
            attribute: entry.attribute,
            value: entry.value,
            reason: entry.reason,
            message: entry.message,
        }
    }
}

/// Statistics of one kind of operation.
#[derive(SimpleObject, Clone, Debug)]
pub struct KindStats {
    /// The kind.
    pub kind: String,
    /// Operations created in the window.
    pub total: i64,
    /// Count per phase (`Unknown`: no phase yet).
    pub by_phase: Vec<PhaseCount>,
    /// Completed / finished, when any finished.
    pub success_rate: Option<f64>,
    /// Median duration of finished ones (ms).
    pub p50_duration_ms: Option<i64>,
    /// 95th percentile duration (ms).
    pub p95_duration_ms: Option<i64>,
    /// Items handled in all.
    pub items_done: i64,
}

/// Statistics of a namespace's operations created in a window.
#[derive(SimpleObject, Clone, Debug)]
pub struct NamespaceStats {
    /// The namespace.
    pub namespace: String,
    /// Window start (RFC 3339, inclusive).
    pub from: String,
    /// Window end (RFC 3339, exclusive).
    pub to: String,
    /// Per kind (kinds with no operations are left out).
    pub kinds: Vec<KindStats>,
}

impl From<operations::NamespaceStatistics> for NamespaceStats {
    fn from(stats: operations::NamespaceStatistics) -> Self {
        NamespaceStats {
            namespace: stats.namespace,
            from: stats.from,
            to: stats.to,
            kinds: stats
                .kinds
                .into_iter()
                .map(|k| KindStats {
                    kind: k.kind,
                    total: k.total,
                    by_phase: k
                        .by_phase
                        .into_iter()
                        .map(|(phase, count)| PhaseCount {
                            phase,
                            count: u64::try_from(count).unwrap_or(0),
                        })
                        .collect(),
                    success_rate: k.success_rate,
                    p50_duration_ms: k.p50_duration_ms,
                    p95_duration_ms: k.p95_duration_ms,
                    items_done: k.items_done,
                })
                .collect(),
        }
    }
}

/// How well a namespace is protected.
#[derive(SimpleObject, Clone, Debug)]
pub struct Coverage {
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

impl From<operations::NamespaceCoverage> for Coverage {
    fn from(view: operations::NamespaceCoverage) -> Self {
        Coverage {
            namespace: view.namespace,
            last_successful_backup: view.last_successful_backup,
            last_successful_backup_at: view.last_successful_backup_at,
            last_successful_backup_age_seconds: view.last_successful_backup_age_seconds,
            failing_schedules: view.failing_schedules,
        }
    }
}

/// The arguments of `history`.
#[derive(Debug, Default)]
pub struct HistoryArgs {
    /// Only these kinds.
    pub kinds: Option<Vec<OperationKindValue>>,
    /// Only these phases.
    pub phases: Option<Vec<String>>,
    /// Created at or after (RFC 3339).
    pub since: Option<String>,
    /// Created before (RFC 3339).
    pub until: Option<String>,
    /// Text filter.
    pub text: Option<String>,
    /// Page size.
    pub first: Option<i32>,
    /// Cursor of the edge to continue after.
    pub after: Option<String>,
}

fn history_query(args: HistoryArgs) -> Result<HistoryQuery, GatewayError> {
    let limit = match args.first {
        None => DEFAULT_PAGE as u32,
        Some(n) if n < 1 => {
            return Err(GatewayError::BadRequest("first must be at least 1".into()));
        }
        Some(n) => u32::try_from(n)
            .unwrap_or(MAX_HISTORY_LIMIT)
            .min(MAX_HISTORY_LIMIT),
    };
    let since = args
        .since
        .as_deref()
        .map(|t| parse_time("since", t))
        .transpose()?;
    let until = args
        .until
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
    let mut kinds: Vec<OperationKind> = Vec::new();
    for kind in args.kinds.unwrap_or_default() {
        let kind = OperationKind::from(kind);
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    Ok(HistoryQuery {
        filter: OperationFilter {
            kinds,
            phases: parse_phases("phases", &args.phases.unwrap_or_default())?,
            since,
            until,
            text: check_text("text", args.text)?,
        },
        limit,
        after: parse_continue("after", args.after.as_deref())?,
    })
}

/// One connection page of `namespace`'s operations.
pub async fn history_connection(
    ctx: &Context<'_>,
    namespace: &str,
    args: HistoryArgs,
) -> async_graphql::Result<Connection<String, Operation>> {
    check_namespace(namespace).gql()?;
    let query = history_query(args).map_err(|e| to_graphql(&e))?;
    let page = service_of(ctx)?
        .history_records(caller_of(ctx)?, namespace, &query)
        .await
        .gql()?;
    let mut connection = Connection::new(query.after.is_some(), page.next.is_some());
    connection.edges.extend(page.items.iter().map(|record| {
        let position = crate::history::OperationCursor {
            created_at: record.created_at,
            id: record.id.clone(),
        };
        Edge::new(
            cursor::encode(&position),
            Operation(operations::Operation::from(record)),
        )
    }));
    Ok(connection)
}
