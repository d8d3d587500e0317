//! Queries: the namespaces the caller may use, connections of backups, restores, storage
//! locations and schedules, single objects, describe, queue views, policy, the dashboard's
//! counts by phase, the operation history (`history`, `operation`, `stats`, `coverage`), and
//! backup manifests with the backup dry-run and restore preview ([`super::manifests`]), and the
//! namespace's place in the shared backup pool (`sharedStorage`).
//! Each resolver calls one service operation with the caller.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_graphql::connection::{Connection, Edge};
use async_graphql::{Context, Json, Object};
use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

use super::cursor::{DEFAULT_PAGE, PageCursor, edge_cursors, page_size};
use super::errors::{GqlResult, to_graphql};
use super::history::{HistoryArgs, history_connection};
use super::loaders::list_all;
use super::manifests;
use super::types::{
    Backup, NamespacePhaseCounts, Queue, ResourcePermissions, Restore, Schedule, StorageLocation,
    Viewer, display_phase,
};
use super::{RequestCaller, budget_of, caller_of, check_name, check_namespace, service_of};
use crate::api::nonadmin::{
    NonAdminBackup, NonAdminBackupStorageLocation, NonAdminRestore, NonAdminSchedule,
};
use crate::gateway::auth::Caller;
use crate::gateway::error::GatewayError;
use crate::gateway::manifests::{BackupDiff, BackupDryRun, OperationOverlaps, RestorePreviewView};
use crate::gateway::operations::{
    NamespaceCoverage, NamespaceStatistics, Operation, OperationKindView, PhaseCount, parse_time,
    stats_window,
};
use crate::gateway::resources::TenantResource;
use crate::gateway::service::{self, Description, GatewayService, ListQuery, PolicyView};
use crate::gateway::shared_storage::SharedStorage;
use crate::gateway::store::Cached;
use crate::manifest::export::ManifestDocument;
use crate::manifest::graph::OwnerGraphView;

fn bad_cursor() -> async_graphql::Error {
    to_graphql(&GatewayError::BadRequest(
        "the cursor is not valid; use one returned by this API".into(),
    ))
}

/// One connection page of `K` in `namespace`, filtered, after `after`.
pub async fn connection_of<K: Cached, N: async_graphql::OutputType>(
    service: &GatewayService,
    caller: &Caller,
    namespace: &str,
    filters: (Option<String>, Option<String>),
    first: Option<i32>,
    after: Option<String>,
    node: fn(Arc<K>) -> N,
) -> async_graphql::Result<Connection<PageCursor, N>> {
    use async_graphql::connection::CursorType;
    check_namespace(namespace).gql()?;
    let limit = page_size(first, DEFAULT_PAGE)
        .map_err(|_| to_graphql(&GatewayError::BadRequest("first must be at least 1".into())))?;
    let (phase, label_selector) = filters;
    let base = ListQuery {
        phase,
        label_selector,
        limit: None,
        continue_token: None,
    };
    let after = match after {
        Some(text) => Some(PageCursor::decode_cursor(&text).map_err(|_| bad_cursor())?),
        None => None,
    };
    let start = match &after {
        None => None,
        Some(PageCursor::Next { token }) => Some(token.clone()),
        Some(PageCursor::At { page, index }) => {
            // Re-list up to and including the edge, then continue after it.
            let query = ListQuery {
                limit: Some(index + 1),
                continue_token: Some(page.clone()).filter(|p| !p.is_empty()),
                ..base.clone()
            };
            match service.list::<K>(caller, namespace, &query).await.gql()? {
                service::Page {
                    continue_token: Some(token),
                    ..
                } => Some(token),
                _ => return Ok(Connection::new(true, false)),
            }
        }
    };
    let query = ListQuery {
        limit: Some(limit),
        continue_token: start.clone(),
        ..base
    };
    let page = service.list::<K>(caller, namespace, &query).await.gql()?;
    let cursors = edge_cursors(
        start.as_deref(),
        page.items.len(),
        page.continue_token.as_deref(),
    );
    let mut connection = Connection::new(after.is_some(), page.continue_token.is_some());
    connection.edges.extend(
        cursors
            .into_iter()
            .zip(page.items)
            .map(|(cursor, item)| Edge::new(cursor, node(item))),
    );
    Ok(connection)
}

fn phase_counts<K: Cached>(objects: &[Arc<K>], since: Option<Timestamp>) -> Vec<PhaseCount> {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for object in objects {
        if let Some(since) = since {
            let created = object.meta().creation_timestamp.as_ref().map(|t| t.0);
            if created.is_none_or(|created| created < since) {
                continue;
            }
        }
        let phase = display_phase(&**object).unwrap_or_else(|| "Unknown".into());
        *counts.entry(phase).or_default() += 1;
    }
    counts
        .into_iter()
        .map(|(phase, count)| PhaseCount { phase, count })
        .collect()
}

async fn counts_of<K: Cached>(
    service: &GatewayService,
    caller: &Caller,
    namespace: &str,
    since: Option<Timestamp>,
) -> Result<Option<Vec<PhaseCount>>, GatewayError> {
    match list_all::<K>(service, caller, namespace).await {
        Ok(objects) => Ok(Some(phase_counts(&objects, since))),
        Err(GatewayError::Forbidden { .. }) => Ok(None),
        Err(other) => Err(other),
    }
}

/// Counts by phase of every resource the caller may list in `namespace`; Forbidden when they
/// may list none.
pub async fn namespace_counts(
    service: &GatewayService,
    caller: &Caller,
    namespace: &str,
    since: Option<Timestamp>,
) -> Result<NamespacePhaseCounts, GatewayError> {
    let counts = NamespacePhaseCounts {
        namespace: namespace.to_string(),
        backups: counts_of::<NonAdminBackup>(service, caller, namespace, since).await?,
        restores: counts_of::<NonAdminRestore>(service, caller, namespace, since).await?,
        storage_locations: counts_of::<NonAdminBackupStorageLocation>(
            service, caller, namespace, since,
        )
        .await?,
        schedules: counts_of::<NonAdminSchedule>(service, caller, namespace, since).await?,
    };
    if counts.backups.is_none()
        && counts.restores.is_none()
        && counts.storage_locations.is_none()
        && counts.schedules.is_none()
    {
        return Err(GatewayError::Forbidden {
            verb: "list",
            resource: TenantResource::Backups.plural(),
            namespace: namespace.to_string(),
        });
    }
    Ok(counts)
}

fn parse_since(since: Option<&str>) -> async_graphql::Result<Option<Timestamp>> {
    since
        .map(|text| {
            text.parse::<Timestamp>().map_err(|_| {
                to_graphql(&GatewayError::invalid_field(
                    "since",
                    "since must be an RFC 3339 time, e.g. 2025-01-31T00:00:00Z",
                ))
            })
        })
        .transpose()
}

/// A namespace the caller may use.
pub struct Namespace(pub service::NamespaceAccess);

#[Object]
impl Namespace {
    /// The namespace.
    async fn name(&self) -> &str {
        &self.0.name
    }
    /// Allowed verbs per resource.
    async fn permissions(&self) -> Vec<ResourcePermissions> {
        self.0
            .permissions
            .iter()
            .map(|(resource, verbs)| ResourcePermissions {
                resource: resource.clone(),
                verbs: verbs.clone(),
            })
            .collect()
    }
    /// Whether the caller may download logs and results.
    async fn can_download(&self) -> bool {
        self.0.can_download
    }
    /// Counts by phase of what the caller may list here, optionally only objects created
    /// at or after `since` (RFC 3339).
    #[graphql(complexity = "10 + child_complexity")]
    async fn phase_counts(
        &self,
        ctx: &Context<'_>,
        since: Option<String>,
    ) -> async_graphql::Result<NamespacePhaseCounts> {
        let since = parse_since(since.as_deref())?;
        namespace_counts(service_of(ctx)?, caller_of(ctx)?, &self.0.name, since)
            .await
            .gql()
    }
}

/// The error telling that a list of namespaces goes on after `token`.
fn incomplete(ctx: &Context<'_>, token: String) -> async_graphql::ServerError {
    use async_graphql::ErrorExtensions;
    let error = async_graphql::Error::new(
        "more namespaces remain to be checked than one request may check; ask again with after: extensions.continue",
    )
    .extend_with(|_, extensions| {
        extensions.set("code", super::errors::INCOMPLETE);
        extensions.set("reason", "incomplete");
        extensions.set("continue", token);
    });
    ctx.set_error_path(error.into_server_error(ctx.item.pos))
}

/// The root of queries.
#[derive(Debug, Default)]
pub struct QueryRoot;

macro_rules! single {
    ($ctx:expr, $kind:ty, $namespace:expr, $name:expr) => {{
        check_namespace(&$namespace).gql()?;
        check_name(&$name).gql()?;
        service_of($ctx)?
            .get::<$kind>(caller_of($ctx)?, &$namespace, &$name)
            .await
            .gql()?
    }};
}

#[Object(name = "Query")]
impl QueryRoot {
    /// Who the caller is.
    async fn viewer(&self, ctx: &Context<'_>) -> async_graphql::Result<Viewer> {
        let caller = ctx.data::<RequestCaller>()?;
        Ok(Viewer {
            username: caller.0.username().to_string(),
            groups: caller.0.identity().groups.clone(),
        })
    }

    /// The namespaces the caller may use (may list backups in), with their permissions in
    /// each; `first` (default 100, at most 500) and `after` page. One request checks a bounded
    /// number of namespaces (shared by all its fields): when more remain, the list comes with
    /// an error `INCOMPLETE` whose `extensions.continue` is the `after` of the next page.
    /// Permissions are checked only when `permissions` or `canDownload` is selected.
    #[graphql(complexity = "20 * child_complexity")]
    async fn namespaces(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
    ) -> async_graphql::Result<Vec<Namespace>> {
        let look = ctx.look_ahead();
        let query = service::NamespaceQuery {
            limit: first.map(|n| n.max(1) as usize),
            continue_token: after,
            details: look.field("permissions").exists() || look.field("canDownload").exists(),
        };
        let budget = budget_of(ctx)?;
        let page = service_of(ctx)?
            .namespace_page(caller_of(ctx)?, &query, &budget)
            .await
            .gql()?;
        if let Some(token) = page.continue_token {
            ctx.add_error(incomplete(ctx, token));
        }
        Ok(page.items.into_iter().map(Namespace).collect())
    }

    /// Backups in a namespace, by name; `phase` (request or Velero phase) and `labelSelector`
    /// filter; `first` (default 20, at most 500) and `after` page.
    #[graphql(complexity = "first.unwrap_or(20).max(1) as usize * child_complexity")]
    async fn backups(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        phase: Option<String>,
        label_selector: Option<String>,
        first: Option<i32>,
        after: Option<String>,
    ) -> async_graphql::Result<Connection<PageCursor, Backup>> {
        connection_of::<NonAdminBackup, _>(
            service_of(ctx)?,
            caller_of(ctx)?,
            &namespace,
            (phase, label_selector),
            first,
            after,
            Backup,
        )
        .await
    }

    /// One backup.
    async fn backup(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        name: String,
    ) -> async_graphql::Result<Backup> {
        Ok(Backup(single!(ctx, NonAdminBackup, namespace, name)))
    }

    /// Restores in a namespace (filters and paging as `backups`).
    #[graphql(complexity = "first.unwrap_or(20).max(1) as usize * child_complexity")]
    async fn restores(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        phase: Option<String>,
        label_selector: Option<String>,
        first: Option<i32>,
        after: Option<String>,
    ) -> async_graphql::Result<Connection<PageCursor, Restore>> {
        connection_of::<NonAdminRestore, _>(
            service_of(ctx)?,
            caller_of(ctx)?,
            &namespace,
            (phase, label_selector),
            first,
            after,
            Restore,
        )
        .await
    }

    /// One restore.
    async fn restore(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        name: String,
    ) -> async_graphql::Result<Restore> {
        Ok(Restore(single!(ctx, NonAdminRestore, namespace, name)))
    }

    /// Storage locations in a namespace, with their approval state.
    #[graphql(complexity = "first.unwrap_or(20).max(1) as usize * child_complexity")]
    async fn storage_locations(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        phase: Option<String>,
        label_selector: Option<String>,
        first: Option<i32>,
        after: Option<String>,
    ) -> async_graphql::Result<Connection<PageCursor, StorageLocation>> {
        connection_of::<NonAdminBackupStorageLocation, _>(
            service_of(ctx)?,
            caller_of(ctx)?,
            &namespace,
            (phase, label_selector),
            first,
            after,
            StorageLocation,
        )
        .await
    }

    /// One storage location.
    async fn storage_location(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        name: String,
    ) -> async_graphql::Result<StorageLocation> {
        Ok(StorageLocation(single!(
            ctx,
            NonAdminBackupStorageLocation,
            namespace,
            name
        )))
    }

    /// Schedules in a namespace.
    #[graphql(complexity = "first.unwrap_or(20).max(1) as usize * child_complexity")]
    async fn schedules(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        phase: Option<String>,
        label_selector: Option<String>,
        first: Option<i32>,
        after: Option<String>,
    ) -> async_graphql::Result<Connection<PageCursor, Schedule>> {
        connection_of::<NonAdminSchedule, _>(
            service_of(ctx)?,
            caller_of(ctx)?,
            &namespace,
            (phase, label_selector),
            first,
            after,
            Schedule,
        )
        .await
    }

    /// One schedule.
    async fn schedule(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        name: String,
    ) -> async_graphql::Result<Schedule> {
        Ok(Schedule(single!(ctx, NonAdminSchedule, namespace, name)))
    }

    /// `velero backup describe` for a backup; `details` adds the resource list.
    #[graphql(complexity = "if details { 50 + child_complexity } else { 5 + child_complexity }")]
    async fn describe_backup(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        name: String,
        #[graphql(default = false)] details: bool,
    ) -> async_graphql::Result<Description> {
        check_namespace(&namespace).gql()?;
        check_name(&name).gql()?;
        service_of(ctx)?
            .describe_backup(caller_of(ctx)?, &namespace, &name, details)
            .await
            .gql()
    }

    /// `velero restore describe` for a restore; `details` adds the resource list.
    #[graphql(complexity = "if details { 50 + child_complexity } else { 5 + child_complexity }")]
    async fn describe_restore(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        name: String,
        #[graphql(default = false)] details: bool,
    ) -> async_graphql::Result<Description> {
        check_namespace(&namespace).gql()?;
        check_name(&name).gql()?;
        service_of(ctx)?
            .describe_restore(caller_of(ctx)?, &namespace, &name, details)
            .await
            .gql()
    }

    /// The queue: with `namespace`, the caller's pending and running items there with live
    /// positions; always the cluster summary (other tenants only as counts).
    #[graphql(complexity = "10 + child_complexity")]
    async fn queue(
        &self,
        ctx: &Context<'_>,
        namespace: Option<String>,
    ) -> async_graphql::Result<Queue> {
        let service = service_of(ctx)?;
        let caller = caller_of(ctx)?;
        let namespace = match namespace {
            Some(namespace) => {
                check_namespace(&namespace).gql()?;
                Some(service.namespace_queue(caller, &namespace).await.gql()?)
            }
            None => None,
        };
        let cluster = service.cluster_queue(caller).await.gql()?;
        Ok(Queue { namespace, cluster })
    }

    /// A namespace's operations from the history, newest first — including those whose
    /// custom resources are gone (needs `list` on backups). `kinds`, `phases`, `since`/`until`
    /// (RFC 3339, creation time) and `text` filter; `first` (default 20, at most 500) and
    /// `after` page.
    #[allow(clippy::too_many_arguments)]
    #[graphql(complexity = "first.unwrap_or(20).max(1) as usize * child_complexity")]
    async fn history(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        kinds: Option<Vec<OperationKindView>>,
        phases: Option<Vec<String>>,
        since: Option<String>,
        until: Option<String>,
        text: Option<String>,
        first: Option<i32>,
        after: Option<String>,
    ) -> async_graphql::Result<Connection<String, Operation>> {
        let args = HistoryArgs {
            kinds,
            phases,
            since,
            until,
            text,
            first,
            after,
        };
        history_connection(ctx, &namespace, args).await
    }

    /// One operation of a namespace's history, with its `timeline`.
    async fn operation(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        id: String,
    ) -> async_graphql::Result<Operation> {
        check_namespace(&namespace).gql()?;
        // The id is checked after authorization, by the service: as over REST.
        service_of(ctx)?
            .history_operation(caller_of(ctx)?, &namespace, &id)
            .await
            .gql()
    }

    /// Statistics of a namespace's operations created between `from` and `to` (RFC 3339;
    /// default the last 7 days; at most 366 days).
    #[graphql(complexity = "10 + child_complexity")]
    async fn stats(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        from: Option<String>,
        to: Option<String>,
    ) -> async_graphql::Result<NamespaceStatistics> {
        check_namespace(&namespace).gql()?;
        let from = from
            .as_deref()
            .map(|t| parse_time("from", t))
            .transpose()
            .gql()?;
        let to = to
            .as_deref()
            .map(|t| parse_time("to", t))
            .transpose()
            .gql()?;
        let window = stats_window(from, to, crate::history::now_millis()).gql()?;
        service_of(ctx)?
            .history_stats(caller_of(ctx)?, &namespace, window)
            .await
            .gql()
    }

    /// How well a namespace is protected: its last successful backup and failing schedules.
    #[graphql(complexity = "5 + child_complexity")]
    async fn coverage(
        &self,
        ctx: &Context<'_>,
        namespace: String,
    ) -> async_graphql::Result<NamespaceCoverage> {
        check_namespace(&namespace).gql()?;
        service_of(ctx)?
            .history_coverage(caller_of(ctx)?, &namespace)
            .await
            .gql()
    }

    /// A completed backup's manifest (kept in the history store, also after the backup is
    /// gone): which backup, counts by kind, and its items page by page (needs `get` on the
    /// backup). For a second or two after the backup completes its manifest is still being
    /// built: the error then has `extensions.code` `MANIFEST_PENDING` and
    /// `extensions.retryAfterSeconds` (as for the owner graph and the diff).
    #[graphql(complexity = "10 + child_complexity")]
    async fn backup_manifest(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        name: String,
    ) -> async_graphql::Result<Arc<ManifestDocument>> {
        manifests::backup_manifest(ctx, &namespace, &name).await
    }

    /// The owner graph of a backup's items (owners → dependents, from `ownerReferences`).
    #[graphql(complexity = "10 + child_complexity")]
    async fn backup_owner_graph(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        name: String,
    ) -> async_graphql::Result<OwnerGraphView> {
        manifests::backup_owner_graph(ctx, &namespace, &name).await
    }

    /// What changed from backup `against` to backup `name`: items added, removed and
    /// changed (needs `get` on both).
    #[graphql(complexity = "20 + child_complexity")]
    async fn backup_diff(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        name: String,
        against: String,
    ) -> async_graphql::Result<BackupDiff> {
        manifests::backup_diff(ctx, &namespace, &name, &against).await
    }

    /// What a backup would take, before anything runs: `backup` (any body REST's create
    /// accepts: `{"name": …, "spec": {"backupSpec": {…}}}`, the manifest, or a name) is
    /// validated as a create would be, then its filters are evaluated against the
    /// namespace's live objects read with the caller's token. Creates nothing (needs
    /// `create` on backups); answers as REST's `POST …/backups?dryRun=true`.
    #[graphql(complexity = "50 + child_complexity")]
    async fn backup_dry_run(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        backup: Json<Value>,
    ) -> async_graphql::Result<BackupDryRun> {
        manifests::backup_dry_run(ctx, &namespace, &backup.0).await
    }

    /// What a restore would do, before anything runs: `restore` (any body REST's create
    /// accepts, e.g. `{"name": …, "backupName": …}`) is validated as a create would be, then
    /// each item of the backup is decided (created, updated or skipped, and why) in restore
    /// order against the namespace as it is now. Creates nothing (needs `create` on
    /// restores); answers as REST's `POST …/restores?dryRun=true`.
    #[graphql(complexity = "50 + child_complexity")]
    async fn restore_preview(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        restore: Json<Value>,
    ) -> async_graphql::Result<RestorePreviewView> {
        manifests::restore_preview(ctx, &namespace, &restore.0).await
    }

    /// Whether a created backup that has not started yet (new or queued) waits on running
    /// operations of its namespace, and on which items: its items are what its spec would
    /// take now, read with the caller's token (needs `get` on the backup). A running or
    /// finished backup answers `waiting: false`; answers as REST's `GET …/overlaps`.
    #[graphql(complexity = "50 + child_complexity")]
    async fn backup_overlaps(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        name: String,
    ) -> async_graphql::Result<OperationOverlaps> {
        manifests::backup_overlaps(ctx, &namespace, &name).await
    }

    /// Whether a created restore that has not started yet waits on running operations of its
    /// namespace, and on which items it would write (needs `get` on the restore). A running
    /// or finished restore answers `waiting: false`; answers as REST's `GET …/overlaps`.
    #[graphql(complexity = "50 + child_complexity")]
    async fn restore_overlaps(
        &self,
        ctx: &Context<'_>,
        namespace: String,
        name: String,
    ) -> async_graphql::Result<OperationOverlaps> {
        manifests::restore_overlaps(ctx, &namespace, &name).await
    }

    /// The admin policy in force in a namespace.
    async fn policy(
        &self,
        ctx: &Context<'_>,
        namespace: String,
    ) -> async_graphql::Result<PolicyView> {
        check_namespace(&namespace).gql()?;
        service_of(ctx)?
            .policy(caller_of(ctx)?, &namespace)
            .await
            .gql()
    }

    /// The namespace's place in the administrator's shared backup pool (authorized like
    /// listing its backups): whether the cluster has a pool and the state of the namespace's
    /// storage in it; never a bucket, provider, prefix or another namespace's name.
    async fn shared_storage(
        &self,
        ctx: &Context<'_>,
        namespace: String,
    ) -> async_graphql::Result<SharedStorage> {
        check_namespace(&namespace).gql()?;
        service_of(ctx)?
            .shared_storage(caller_of(ctx)?, &namespace)
            .await
            .gql()
    }

    /// Dashboard counts by phase per namespace (from the gateway's caches): the namespaces
    /// given (each must be usable) or every namespace the caller may use; `since` (RFC 3339)
    /// keeps objects created at or after it.
    #[graphql(complexity = "20 * child_complexity")]
    async fn phase_counts(
        &self,
        ctx: &Context<'_>,
        namespaces: Option<Vec<String>>,
        since: Option<String>,
    ) -> async_graphql::Result<Vec<NamespacePhaseCounts>> {
        let service = service_of(ctx)?;
        let caller = caller_of(ctx)?;
        let since = parse_since(since.as_deref())?;
        let names = match namespaces {
            Some(names) => {
                if names.len() > 100 {
                    return Err(to_graphql(&GatewayError::BadRequest(
                        "at most 100 namespaces at once".into(),
                    )));
                }
                for name in &names {
                    check_namespace(name).gql()?;
                }
                names
            }
            None => service
                .usable_namespaces(caller, &*budget_of(ctx)?)
                .await
                .gql()?,
        };
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            out.push(
                namespace_counts(service, caller, &name, since)
                    .await
                    .gql()?,
            );
        }
        Ok(out)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn backup(name: &str, created: &str, velero_phase: Option<&str>) -> Arc<NonAdminBackup> {
        let mut status = json!({"phase": "Created"});
        if let Some(phase) = velero_phase {
            status["veleroBackup"] = json!({"status": {"phase": phase}});
        }
        Arc::new(
            serde_json::from_value(json!({
                "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
                "metadata": {"name": name, "namespace": "team-a", "creationTimestamp": created},
                "spec": {"backupSpec": {}},
                "status": status,
            }))
            .unwrap(),
        )
    }

    #[test]
    fn phases_count_velero_first_and_respect_since() {
        let objects = vec![
            backup("a", "2025-01-01T00:00:00Z", Some("Completed")),
            backup("b", "2025-01-02T00:00:00Z", Some("Completed")),
            backup("c", "2025-01-03T00:00:00Z", None),
        ];
        assert_eq!(
            phase_counts(&objects, None),
            vec![
                PhaseCount {
                    phase: "Completed".into(),
                    count: 2
                },
                PhaseCount {
                    phase: "Created".into(),
                    count: 1
                },
            ]
        );
        let since = parse_since(Some("2025-01-02T00:00:00Z")).unwrap();
        let recent = phase_counts(&objects, since);
        assert_eq!(recent.iter().map(|c| c.count).sum::<u64>(), 2);
        assert!(parse_since(Some("yesterday")).is_err());
    }
}
