//! The operation history through the service: reads authorized exactly like listing NonAdminBackups in the namespace and made through the authorization's handle (the namespace as it is now, by UID), requesters noted after creates, queue ETAs.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::gateway::auth::{Authorized, Caller};
use crate::gateway::error::GatewayError;
use crate::gateway::resources::TenantResource;
use crate::gateway::service::{GatewayService, QueueItem, QueueItemKind, QueueState};
use crate::gateway::tenancy::TenantHistory;
use crate::history::estimate::ETA_SAMPLE_SIZE;
use crate::history::{
    Coverage, NamespaceStats, OperationKind, OperationRecord, TimeWindow, cursor, now_millis,
};

use crate::gateway::operations::*;

/// Longest wait for a history read.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wait for side lookups (ETA, requester) that must not slow their request down.
const SIDE_TIMEOUT: Duration = Duration::from_secs(2);

impl GatewayService {
    /// The ETA estimator's input for the namespace `history` is bound to; `None` (counted)
    /// when the store fails.
    async fn recent_durations(
        &self,
        history: &TenantHistory<'_>,
        kinds: &'static [OperationKind],
    ) -> Option<Vec<i64>> {
        let read = tokio::time::timeout(
            SIDE_TIMEOUT,
            history.recent_durations(kinds, ETA_SAMPLE_SIZE),
        )
        .await;
        let found = match read {
            Ok(Ok(found)) => Some(found),
            Ok(Err(error)) => {
                tracing::debug!(error = %error, "no queue ETA: history store failed");
                None
            }
            Err(_) => {
                tracing::debug!("no queue ETA: history store timed out");
                None
            }
        };
        if found.is_none() {
            self.history_counters()
                .eta_failures
                .fetch_add(1, Ordering::Relaxed);
        }
        found
    }
}

/// Which past operations a queue item's ETA rests on.
fn comparable_kinds(queue_kind: QueueItemKind) -> &'static [OperationKind] {
    match queue_kind {
        QueueItemKind::Restore => &[OperationKind::Restore],
        QueueItemKind::Backup => &[OperationKind::Backup, OperationKind::ScheduleRun],
    }
}

impl GatewayService {
    /// The history of `namespace` as the caller may read it: exactly the check of listing
    /// NonAdminBackups (the history is the backups' past), then the store bound to the
    /// namespace as it is now (`None`: it does not exist, so it has no history).
    async fn authorized_history(
        &self,
        caller: &Caller,
        namespace: &str,
    ) -> Result<(Authorized, Option<TenantHistory<'_>>), GatewayError> {
        let authorized = self
            .authorize(caller, "list", TenantResource::Backups, namespace, None)
            .await?;
        let history = self.data.history(&authorized)?;
        Ok((authorized, history))
    }

    pub(super) async fn read<T>(
        &self,
        call: crate::history::StoreFuture<'_, T>,
    ) -> Result<T, GatewayError> {
        let outcome = match tokio::time::timeout(READ_TIMEOUT, call).await {
            Ok(result) => result.map_err(store_error),
            Err(_) => {
                tracing::warn!("history store read timed out");
                Err(GatewayError::Unavailable(HISTORY_UNAVAILABLE.into()))
            }
        };
        if matches!(outcome, Err(GatewayError::Unavailable(_))) {
            self.history_counters()
                .read_failures
                .fetch_add(1, Ordering::Relaxed);
        }
        outcome
    }

    /// A page of `namespace`'s operation records, newest first (for transports that need the
    /// rows' own positions).
    pub async fn history_records(
        &self,
        caller: &Caller,
        namespace: &str,
        query: &HistoryQuery,
    ) -> Result<crate::history::OperationPage, GatewayError> {
        let (_, history) = self.authorized_history(caller, namespace).await?;
        let limit = query.limit.clamp(1, MAX_HISTORY_LIMIT);
        let Some(history) = history else {
            return Ok(crate::history::OperationPage::default());
        };
        self.read(history.operations(&query.filter, query.after.as_ref(), limit))
            .await
    }

    /// A page of `namespace`'s operations, newest first.
    pub async fn history_page(
        &self,
        caller: &Caller,
        namespace: &str,
        query: &HistoryQuery,
    ) -> Result<OperationPage, GatewayError> {
        let page = self.history_records(caller, namespace, query).await?;
        Ok(OperationPage {
            items: page.items.iter().map(Operation::from).collect(),
            continue_token: page.next.as_ref().map(cursor::encode),
        })
    }

    /// One operation of `namespace` (404 after authorization when there is none).
    pub async fn history_operation(
        &self,
        caller: &Caller,
        namespace: &str,
        id: &str,
    ) -> Result<Operation, GatewayError> {
        let (_, history) = self.authorized_history(caller, namespace).await?;
        check_operation_id(id)?;
        let record = match history {
            Some(history) => self.read(history.operation(id)).await?,
            None => None,
        }
        .ok_or_else(|| GatewayError::NotFound {
            kind: "operation",
            namespace: namespace.to_string(),
            name: id.to_string(),
        })?;
        Ok(Operation::from(&record))
    }

    /// The timeline of one operation of `namespace`, oldest first.
    pub async fn history_timeline(
        &self,
        caller: &Caller,
        namespace: &str,
        id: &str,
    ) -> Result<Vec<TimelineEntry>, GatewayError> {
        let (_, history) = self.authorized_history(caller, namespace).await?;
        check_operation_id(id)?;
        let timeline = match history {
            Some(history) => self.read(history.timeline(id)).await?,
            None => Vec::new(),
        };
        Ok(timeline.iter().map(TimelineEntry::from).collect())
    }

    /// One operation of `namespace` with its timeline.
    pub async fn history_detail(
        &self,
        caller: &Caller,
        namespace: &str,
        id: &str,
    ) -> Result<OperationDetail, GatewayError> {
        let operation = self.history_operation(caller, namespace, id).await?;
        let timeline = self.history_timeline(caller, namespace, id).await?;
        Ok(OperationDetail {
            operation,
            timeline,
        })
    }

    /// Statistics of `namespace`'s operations created in `window`.
    pub async fn history_stats(
        &self,
        caller: &Caller,
        namespace: &str,
        window: TimeWindow,
    ) -> Result<NamespaceStatistics, GatewayError> {
        let (authorized, history) = self.authorized_history(caller, namespace).await?;
        let stats = match history {
            Some(history) => self.read(history.stats(window)).await?,
            None => NamespaceStats {
                namespace: authorized.namespace().to_string(),
                from: window.from,
                to: window.to,
                kinds: Vec::new(),
            },
        };
        Ok(stats.into())
    }

    /// How well `namespace` is protected, now.
    pub async fn history_coverage(
        &self,
        caller: &Caller,
        namespace: &str,
    ) -> Result<NamespaceCoverage, GatewayError> {
        let (_, history) = self.authorized_history(caller, namespace).await?;
        let found = match history {
            Some(history) => self.read(history.coverage()).await?,
            None => Vec::new(),
        };
        let coverage = found
            .into_iter()
            .find(|c| c.namespace == namespace)
            .unwrap_or_else(|| Coverage {
                namespace: namespace.to_string(),
                ..Coverage::default()
            });
        Ok(NamespaceCoverage::of(coverage, now_millis()))
    }

    /// Records who created `meta` (an operation of `kind`, created under the `create` grant
    /// `authorized`). A store failure never fails the create: it is logged and counted. The row
    /// gets the namespace's UID when that namespace can own the object (created no later than
    /// it, not being deleted before it); else the recorder fills it in.
    pub(super) async fn note_requester(
        &self,
        authorized: &Authorized,
        kind: OperationKind,
        meta: &ObjectMeta,
        caller: &Caller,
    ) {
        let (Some(uid), Some(namespace), Some(name)) = (&meta.uid, &meta.namespace, &meta.name)
        else {
            return;
        };
        if namespace != authorized.namespace() {
            return;
        }
        let created_at = meta
            .creation_timestamp
            .as_ref()
            .map_or_else(now_millis, |t| t.0.as_millisecond());
        let namespace_uid = self
            .data
            .owning_namespace_uid(authorized, created_at)
            .unwrap_or_default();
        let operation = OperationRecord {
            id: uid.clone(),
            namespace: namespace.clone(),
            namespace_uid,
            kind: Some(kind),
            name: name.clone(),
            uid: uid.clone(),
            created_at,
            ..OperationRecord::default()
        };
        let noted = tokio::time::timeout(
            SIDE_TIMEOUT,
            self.data
                .history_writer(authorized)
                .note_requester(operation, caller.username().to_string()),
        )
        .await;
        let failure = match noted {
            Ok(Ok(())) => return,
            Ok(Err(error)) => error.to_string(),
            Err(_) => "timed out".to_string(),
        };
        self.history_counters()
            .requester_failures
            .fetch_add(1, Ordering::Relaxed);
        tracing::warn!(error = %failure, %namespace, %name, kind = %kind, "could not record the requester of an operation");
    }

    /// Fills in the ETA of `items`, all of the namespace `authorized` covers (backups or
    /// restores), from its history (one read per kind). A store that does not answer leaves
    /// the ETAs out: queue views never fail because of it.
    pub(super) async fn attach_etas(&self, authorized: &Authorized, items: &mut [QueueItem]) {
        // The namespace as it is now: a predecessor's durations are not its own.
        let history = match self.data.history(authorized) {
            Ok(history) => history,
            Err(_) => return,
        };
        let mut durations: HashMap<&'static [OperationKind], Option<Vec<i64>>> = HashMap::new();
        for item in items.iter_mut() {
            if item.namespace != authorized.namespace() {
                continue;
            }
            let kinds = comparable_kinds(item.kind);
            if !durations.contains_key(kinds) {
                let found = match &history {
                    Some(history) => self.recent_durations(history, kinds).await,
                    None => Some(Vec::new()),
                };
                durations.insert(kinds, found);
            }
            item.eta = durations
                .get(kinds)
                .and_then(Option::as_deref)
                .and_then(|d| queue_eta(d, item.position, item.state == QueueState::Running));
        }
    }
}
