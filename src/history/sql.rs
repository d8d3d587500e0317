//! The SQL both history backends share: one [`SqlCore`] on an sqlx `Any` pool runs the same
//! statements on Postgres and SQLite. Placeholders are `$N` (sqlx-sqlite binds `$N` by number,
//! so one text serves both), except in the multi-row inserts, which use `?` on SQLite (see
//! `values_placeholders`: thousands of named parameters are quadratic there) and take one array
//! per column on Postgres (see `upsert_unnest_query`). Times are BIGINT
//! epoch milliseconds (`Any` has no timestamp type), and orderings that reach callers are on
//! integers or on ids, which Postgres compares bytewise (`COLLATE "C"`) like SQLite, so both
//! backends answer identically.
//!
//! [`PostgresHistoryStore`](super::postgres::PostgresHistoryStore) and
//! [`SqliteHistoryStore`](super::sqlite::SqliteHistoryStore) only open the pool and pick their
//! migrations; [`sql_history_store!`] implements [`HistoryStore`](super::HistoryStore) for both
//! by delegating here.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sqlx::any::{AnyArguments, AnyPoolOptions, AnyRow};
use sqlx::migrate::{MigrateError, Migrator};
use sqlx::query::Query;
use sqlx::{Any, AnyPool, AssertSqlSafe, Row, Transaction};

use super::estimate;
use super::model::{
    Coverage, EpochMillis, IdempotencyAnswer, IdempotencyState, KindStats, ManifestKey,
    ManifestPut, ManifestSummary, ManifestTarget, NamespaceIdentity, NamespaceStats, Observation,
    OperationCursor, OperationFilter, OperationKind, OperationPage, OperationRecord,
    StoredManifest, StoredTransition, TenantNamespace, TimeWindow, Transition,
};
use super::reachability::{Attempt, RETRY_TIMEOUT, Reachability};
use super::{Backend, HistoryError, now_millis, redact_url};

/// Operations per multi-row upsert on SQLite: 400 rows × 23 columns = 9,200 bind variables,
/// well under its limit of 32,766. (Postgres batches are arrays, one parameter per column.)
pub const OPERATION_CHUNK: usize = 400;
/// Transitions per multi-row insert on SQLite (1,000 × 8 columns).
pub const TRANSITION_CHUNK: usize = 1_000;
/// Ids per `mark_deleted` statement.
const ID_CHUNK: usize = 500;
/// Largest page [`SqlCore::operations`] returns.
pub const MAX_PAGE_SIZE: u32 = 500;
/// Longest text filter accepted, in characters.
pub const MAX_TEXT_FILTER: usize = 200;
/// Most durations [`SqlCore::recent_durations`] returns.
pub const MAX_RECENT_DURATIONS: u32 = 1_000;
/// How often a process waiting for another's migration tries its lock file again.
const MIGRATE_LOCK_POLL: Duration = Duration::from_millis(25);
/// How long a process waits for another's migration before giving up: far longer than any
/// migration of an embedded store takes, so only a stuck holder makes it fail.
const MIGRATE_LOCK_WAIT: Duration = Duration::from_secs(600);

/// Phases after which an operation no longer changes: the same set as
/// [`estimate::is_finished_phase`] (a unit test keeps them in step).
pub const FINISHED_PHASES: [&str; 5] = [
    "Completed",
    "PartiallyFailed",
    "Failed",
    "FailedValidation",
    "Processed",
];

/// Finished phases that mean a schedule run did not complete.
const FAILED_PHASES: [&str; 3] = ["Failed", "PartiallyFailed", "FailedValidation"];

/// The columns of [`OperationRecord`], in the order [`operation_from_row`] reads them.
macro_rules! operation_columns {
    () => {
        "id, namespace, namespace_uid, kind, name, uid, velero_name, parent_name, requester, \
         created_at, started_at, completed_at, phase, phase_rank, nac_phase, items_total, \
         items_done, warnings, errors, failure_reason, queue_position, deleted_at"
    };
}

/// Bind variables per upserted operation: its columns plus `updated_at`.
const OPERATION_WIDTH: usize = 23;
const TRANSITION_WIDTH: usize = 8;

// SQLite refuses statements with more than 32,766 bind variables.
const _: () = assert!(OPERATION_CHUNK * OPERATION_WIDTH <= 32_766);
const _: () = assert!(TRANSITION_CHUNK * TRANSITION_WIDTH <= 32_766);
const _: () = assert!(ID_CHUNK + 2 <= 32_766);

const UPSERT_HEAD: &str = concat!(
    "INSERT INTO operations (",
    operation_columns!(),
    ", updated_at) VALUES "
);

/// The merge rules of an upsert: a known value is never replaced by an unknown one, the phase
/// only by one of the same or a higher rank, the requester and the deletion time never, the
/// creation time only by an earlier one, the namespace and its UID never once known (a row
/// cannot move tenants).
const UPSERT_MERGE: &str = " ON CONFLICT (id) DO UPDATE SET \
    namespace = CASE WHEN operations.namespace = '' THEN excluded.namespace \
        ELSE operations.namespace END, \
    namespace_uid = CASE WHEN operations.namespace_uid = '' \
        AND (operations.namespace = '' OR operations.namespace = excluded.namespace) \
        THEN excluded.namespace_uid ELSE operations.namespace_uid END, \
    kind = COALESCE(excluded.kind, operations.kind), \
    name = CASE WHEN excluded.name = '' THEN operations.name ELSE excluded.name END, \
    uid = CASE WHEN excluded.uid = '' THEN operations.uid ELSE excluded.uid END, \
    velero_name = COALESCE(excluded.velero_name, operations.velero_name), \
    parent_name = COALESCE(excluded.parent_name, operations.parent_name), \
    requester = COALESCE(operations.requester, excluded.requester), \
    created_at = CASE WHEN operations.created_at = 0 \
        OR (excluded.created_at <> 0 AND excluded.created_at < operations.created_at) \
        THEN excluded.created_at ELSE operations.created_at END, \
    started_at = COALESCE(excluded.started_at, operations.started_at), \
    completed_at = COALESCE(excluded.completed_at, operations.completed_at), \
    phase = CASE WHEN excluded.phase_rank >= operations.phase_rank \
        THEN COALESCE(excluded.phase, operations.phase) ELSE operations.phase END, \
    phase_rank = CASE WHEN excluded.phase_rank >= operations.phase_rank \
        THEN excluded.phase_rank ELSE operations.phase_rank END, \
    nac_phase = COALESCE(excluded.nac_phase, operations.nac_phase), \
    items_total = COALESCE(excluded.items_total, operations.items_total), \
    items_done = COALESCE(excluded.items_done, operations.items_done), \
    warnings = COALESCE(excluded.warnings, operations.warnings), \
    errors = COALESCE(excluded.errors, operations.errors), \
    failure_reason = COALESCE(excluded.failure_reason, operations.failure_reason), \
    queue_position = COALESCE(excluded.queue_position, operations.queue_position), \
    deleted_at = COALESCE(operations.deleted_at, excluded.deleted_at), \
    updated_at = excluded.updated_at";

const TRANSITION_HEAD: &str = "INSERT INTO transitions \
    (operation_id, namespace, at, attribute, value, reason, message, dedup) VALUES ";

type AnyQuery = Query<'static, Any, AnyArguments>;

/// Registers sqlx's Postgres and SQLite drivers for `Any` (sqlx does it once per process).
pub fn install_drivers() {
    sqlx::any::install_default_drivers();
}

/// Implements [`HistoryStore`](crate::history::HistoryStore) for a store type with a
/// `core: SqlCore` field, by delegating every method to it: the two backends share this so
/// neither repeats the other.
macro_rules! sql_history_store {
    ($store:ty) => {
        impl $crate::history::HistoryStore for $store {
            fn backend(&self) -> $crate::history::Backend {
                self.core.backend()
            }

            fn migrate(&self) -> $crate::history::StoreFuture<'_, ()> {
                Box::pin(self.core.migrate())
            }

            fn record(
                &self,
                batch: Vec<$crate::history::Observation>,
            ) -> $crate::history::StoreFuture<'_, u64> {
                Box::pin(self.core.guarded(self.core.record(batch)))
            }

            fn note_requester(
                &self,
                operation: $crate::history::OperationRecord,
                requester: String,
            ) -> $crate::history::StoreFuture<'_, ()> {
                Box::pin(
                    self.core
                        .guarded(self.core.note_requester(operation, requester)),
                )
            }

            fn live_operation_ids(
                &self,
            ) -> $crate::history::StoreFuture<'_, Vec<(String, $crate::history::OperationKind)>>
            {
                Box::pin(self.core.guarded(self.core.live_operation_ids()))
            }

            fn mark_deleted(
                &self,
                ids: Vec<String>,
                at: $crate::history::EpochMillis,
            ) -> $crate::history::StoreFuture<'_, u64> {
                Box::pin(self.core.guarded(self.core.mark_deleted(ids, at)))
            }

            fn attribute_namespaces(
                &self,
                namespaces: Vec<$crate::history::NamespaceIdentity>,
            ) -> $crate::history::StoreFuture<'_, u64> {
                Box::pin(
                    self.core
                        .guarded(self.core.attribute_namespaces(namespaces)),
                )
            }

            fn operation<'a>(
                &'a self,
                tenant: &'a $crate::history::TenantNamespace,
                id: &'a str,
            ) -> $crate::history::StoreFuture<'a, Option<$crate::history::OperationRecord>> {
                Box::pin(self.core.guarded(self.core.operation(tenant, id)))
            }

            fn operation_by_name<'a>(
                &'a self,
                tenant: &'a $crate::history::TenantNamespace,
                kind: $crate::history::OperationKind,
                name: &'a str,
            ) -> $crate::history::StoreFuture<'a, Option<$crate::history::OperationRecord>> {
                Box::pin(
                    self.core
                        .guarded(self.core.operation_by_name(tenant, kind, name)),
                )
            }

            fn timeline<'a>(
                &'a self,
                tenant: &'a $crate::history::TenantNamespace,
                id: &'a str,
            ) -> $crate::history::StoreFuture<'a, Vec<$crate::history::StoredTransition>> {
                Box::pin(self.core.guarded(self.core.timeline(tenant, id)))
            }

            fn operations<'a>(
                &'a self,
                tenant: &'a $crate::history::TenantNamespace,
                filter: &'a $crate::history::OperationFilter,
                after: Option<&'a $crate::history::OperationCursor>,
                limit: u32,
            ) -> $crate::history::StoreFuture<'a, $crate::history::OperationPage> {
                Box::pin(
                    self.core
                        .guarded(self.core.operations(tenant, filter, after, limit)),
                )
            }

            fn stats<'a>(
                &'a self,
                tenant: &'a $crate::history::TenantNamespace,
                window: $crate::history::TimeWindow,
            ) -> $crate::history::StoreFuture<'a, $crate::history::NamespaceStats> {
                Box::pin(self.core.guarded(self.core.stats(tenant, window)))
            }

            fn recent_durations<'a>(
                &'a self,
                tenant: &'a $crate::history::TenantNamespace,
                kinds: &'a [$crate::history::OperationKind],
                limit: u32,
            ) -> $crate::history::StoreFuture<'a, Vec<i64>> {
                Box::pin(
                    self.core
                        .guarded(self.core.recent_durations(tenant, kinds, limit)),
                )
            }

            fn coverage<'a>(
                &'a self,
                namespaces: &'a [$crate::history::TenantNamespace],
            ) -> $crate::history::StoreFuture<'a, Vec<$crate::history::Coverage>> {
                Box::pin(self.core.guarded(self.core.coverage(namespaces)))
            }

            fn purge(
                &self,
                cutoff: $crate::history::EpochMillis,
            ) -> $crate::history::StoreFuture<'_, u64> {
                Box::pin(self.core.guarded(self.core.purge(cutoff)))
            }

            fn idempotency_begin<'a>(
                &'a self,
                caller: &'a str,
                path: &'a str,
                key: &'a str,
                namespace_uid: &'a str,
                body_digest: &'a [u8],
                in_flight_ttl_ms: i64,
            ) -> $crate::history::StoreFuture<'a, $crate::history::IdempotencyState> {
                Box::pin(self.core.guarded(self.core.idempotency_begin(
                    caller,
                    path,
                    key,
                    namespace_uid,
                    body_digest,
                    in_flight_ttl_ms,
                )))
            }

            fn idempotency_finish<'a>(
                &'a self,
                caller: &'a str,
                path: &'a str,
                key: &'a str,
                namespace_uid: &'a str,
                answer: $crate::history::IdempotencyAnswer,
                ttl_ms: i64,
            ) -> $crate::history::StoreFuture<'a, ()> {
                Box::pin(self.core.guarded(self.core.idempotency_finish(
                    caller,
                    path,
                    key,
                    namespace_uid,
                    answer,
                    ttl_ms,
                )))
            }

            fn idempotency_abandon<'a>(
                &'a self,
                caller: &'a str,
                path: &'a str,
                key: &'a str,
                namespace_uid: &'a str,
            ) -> $crate::history::StoreFuture<'a, ()> {
                Box::pin(
                    self.core.guarded(self.core.idempotency_abandon(
                        caller,
                        path,
                        key,
                        namespace_uid,
                    )),
                )
            }

            fn ping(&self) -> $crate::history::StoreFuture<'_, ()> {
                Box::pin(self.core.ping())
            }

            fn put_manifest(
                &self,
                manifest: $crate::history::StoredManifest,
            ) -> $crate::history::StoreFuture<'_, $crate::history::ManifestPut> {
                Box::pin(self.core.guarded(self.core.put_manifest(manifest)))
            }

            fn manifest<'a>(
                &'a self,
                tenant: &'a $crate::history::TenantNamespace,
                operation_id: &'a str,
            ) -> $crate::history::StoreFuture<'a, Option<$crate::history::StoredManifest>> {
                Box::pin(self.core.guarded(self.core.manifest(tenant, operation_id)))
            }

            fn manifest_by_name<'a>(
                &'a self,
                tenant: &'a $crate::history::TenantNamespace,
                backup_name: &'a str,
            ) -> $crate::history::StoreFuture<'a, Option<$crate::history::StoredManifest>> {
                Box::pin(
                    self.core
                        .guarded(self.core.manifest_by_name(tenant, backup_name)),
                )
            }

            fn manifest_summaries<'a>(
                &'a self,
                tenant: &'a $crate::history::TenantNamespace,
            ) -> $crate::history::StoreFuture<'a, Vec<$crate::history::ManifestSummary>> {
                Box::pin(self.core.guarded(self.core.manifest_summaries(tenant)))
            }

            fn manifests_missing(
                &self,
                limit: u32,
            ) -> $crate::history::StoreFuture<'_, Vec<$crate::history::ManifestTarget>> {
                Box::pin(self.core.guarded(self.core.manifests_missing(limit)))
            }
        }
    };
}

pub(crate) use sql_history_store;

/// The shared implementation of the history store on an sqlx `Any` pool.
#[derive(Clone)]
pub struct SqlCore {
    pool: AnyPool,
    backend: Backend,
    /// The database URL without its password, for errors and logs.
    target: String,
    /// The password of the URL, scrubbed from every error message.
    secret: Option<String>,
    migrator: &'static Migrator,
    /// The file [`SqlCore::migrate`] locks so that one process at a time migrates (SQLite
    /// files; see [`SqlCore::with_migrate_lock`]).
    migrate_lock: Option<PathBuf>,
    /// Whether the server was last found unreachable (Postgres: calls fail fast meanwhile).
    reachability: std::sync::Arc<std::sync::Mutex<Reachability>>,
}

impl std::fmt::Debug for SqlCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlCore")
            .field("backend", &self.backend)
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl SqlCore {
    /// Opens a pool on `url` with `options` (one connection is made now, so a wrong URL or an
    /// unreachable server fails here) and keeps `migrator` for [`SqlCore::migrate`].
    pub async fn connect(
        url: &str,
        backend: Backend,
        options: AnyPoolOptions,
        migrator: &'static Migrator,
    ) -> Result<Self, HistoryError> {
        install_drivers();
        let secret = url_password(url);
        let target = scrub(&redact_url(url), secret.as_deref());
        let pool = match options.connect(url).await {
            Ok(pool) => pool,
            Err(sqlx::Error::Configuration(e)) => {
                return Err(HistoryError::InvalidInput(scrub(
                    &format!("invalid history database URL {target}: {e}"),
                    secret.as_deref(),
                )));
            }
            Err(e) => {
                let error = classify(e, backend, &target, secret.as_deref());
                return Err(match error {
                    HistoryError::Database(m) => {
                        HistoryError::Database(format!("cannot open {target}: {m}"))
                    }
                    other => other,
                });
            }
        };
        Ok(Self {
            pool,
            backend,
            target,
            secret,
            migrator,
            migrate_lock: None,
            reachability: Default::default(),
        })
    }

    /// Makes [`SqlCore::migrate`] hold an exclusive lock on `path` (created when missing,
    /// left in place) while it migrates. sqlx's migrator locks nothing on SQLite, so processes
    /// starting together on one file each saw a migration pending and all but one failed
    /// applying it ("table … already exists"). Postgres needs none: sqlx holds an advisory
    /// lock there from before it creates its bookkeeping table.
    pub fn with_migrate_lock(mut self, path: PathBuf) -> Self {
        self.migrate_lock = Some(path);
        self
    }

    /// Which database this is.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The pool (the benchmark fills tables through it).
    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// The database URL without its password.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// Runs one store call, unless the server is known to be unreachable: then it fails fast
    /// ([`Reachability`]). A Postgres server can be away; a SQLite file's busy errors are not
    /// an outage, so SQLite calls always run.
    pub async fn guarded<T>(
        &self,
        call: impl std::future::Future<Output = Result<T, HistoryError>>,
    ) -> Result<T, HistoryError> {
        if self.backend != Backend::Postgres {
            return call.await;
        }
        // The guard must be gone before anything is awaited.
        let attempt = self.reachable().admit(Instant::now())?;
        if attempt == Attempt::Retry {
            // A quick `SELECT 1` finds out whether the server is back, so the call itself (a
            // large batch of the recorder's, say) is never cut short by the retry's deadline.
            tokio::time::timeout(RETRY_TIMEOUT, self.ping())
                .await
                .unwrap_or_else(|_| {
                    let error = HistoryError::Unavailable(format!(
                        "{}: no answer within {} s",
                        self.target,
                        RETRY_TIMEOUT.as_secs()
                    ));
                    let failed = Err(error);
                    self.reachable().observe(&failed, Instant::now());
                    failed
                })?;
        }
        let result = call.await;
        self.reachable().observe(&result, Instant::now());
        result
    }

    fn reachable(&self) -> std::sync::MutexGuard<'_, Reachability> {
        // The state is a few plain fields, valid whatever a panicking holder left.
        self.reachability
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn fail(&self, error: sqlx::Error) -> HistoryError {
        classify(error, self.backend, &self.target, self.secret.as_deref())
    }

    /// A transaction that will write. SQLite takes the write lock up front (`BEGIN
    /// IMMEDIATE`), so a concurrent writer waits on busy_timeout instead of failing when it
    /// upgrades a read snapshot.
    async fn begin_write(&self) -> Result<Transaction<'static, Any>, HistoryError> {
        let begun = match self.backend {
            Backend::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await,
            Backend::Postgres => self.pool.begin().await,
        };
        begun.map_err(|e| self.fail(e))
    }

    /// Applies pending migrations; applied ones are skipped, so running it again is a no-op.
    /// Safe when several processes (or stores in one process) migrate one database at once:
    /// they take turns, and each one after the first finds nothing left to apply.
    pub async fn migrate(&self) -> Result<(), HistoryError> {
        // Released when dropped, after the migrator is done.
        let _turn = match &self.migrate_lock {
            Some(path) => Some(self.lock_for_migration(path).await?),
            None => None,
        };
        let mut conn = self.pool.acquire().await.map_err(|e| self.fail(e))?;
        // What `Migrator::run` does on the connection it acquires; `run` itself cannot take
        // `&mut AnyConnection` in a `Send` future ("implementation of `Acquire` is not
        // general enough"), and sqlx points at `run_direct` for exactly that.
        let result = self.migrator.run_direct(None, &mut *conn, false).await;
        if result.is_err() {
            // sqlx releases its Postgres advisory lock (a session lock) only on success: back
            // in the pool, this connection would keep it and every later migrate would hang.
            conn.close_on_drop();
        }
        result.map_err(|e| match e {
            MigrateError::Execute(inner) if is_unavailable(&inner, self.backend) => {
                self.fail(inner)
            }
            other => HistoryError::Migration(scrub(
                &format!("{}: {other}", self.target),
                self.secret.as_deref(),
            )),
        })
    }

    /// Waits (polling, so a cancelled caller leaves no thread blocked) for the exclusive lock
    /// on `path` and returns the open file that holds it. The lock is the kernel's
    /// (`flock`): a process that dies holding it releases it.
    async fn lock_for_migration(&self, path: &Path) -> Result<File, HistoryError> {
        let file = open_lock_file(path).map_err(|e| {
            HistoryError::Migration(format!(
                "{}: cannot open the migration lock file {}: {e}",
                self.target,
                path.display()
            ))
        })?;
        let deadline = Instant::now() + MIGRATE_LOCK_WAIT;
        let mut logged = false;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(file),
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Error(e)) => {
                    return Err(HistoryError::Migration(format!(
                        "{}: cannot lock the migration lock file {}: {e}",
                        self.target,
                        path.display()
                    )));
                }
            }
            if Instant::now() >= deadline {
                return Err(HistoryError::Migration(format!(
                    "{}: another process has been migrating for more than {} s (it holds {})",
                    self.target,
                    MIGRATE_LOCK_WAIT.as_secs(),
                    path.display()
                )));
            }
            if !logged {
                tracing::info!(
                    lock = %path.display(),
                    "waiting for another process to finish migrating the history store"
                );
                logged = true;
            }
            tokio::time::sleep(MIGRATE_LOCK_POLL).await;
        }
    }

    /// Records a batch in one transaction: multi-row upserts of the operations (merge rules in
    /// [`UPSERT_MERGE`]: known values are never replaced by unknown ones, a phase never by a
    /// lower-ranked one, the requester and deletion time never, the creation time only by an
    /// earlier one), then multi-row inserts of the transitions that ignore already-stored ones
    /// (on Postgres one statement each, whatever the batch's size, unless an operation repeats).
    /// An operation appearing twice in a batch is applied in order. Returns the number of new
    /// transitions (0 when the batch is a replay).
    pub async fn record(&self, batch: Vec<Observation>) -> Result<u64, HistoryError> {
        if batch.is_empty() {
            return Ok(0);
        }
        let now = now_millis();
        // Postgres takes each column as one array (no bind-variable limit, so a chunk ends
        // only where an id repeats); SQLite has no arrays and keeps the multi-row VALUES.
        let (operation_limit, transition_limit) = match self.backend {
            Backend::Postgres => (usize::MAX, usize::MAX),
            Backend::Sqlite => (OPERATION_CHUNK, TRANSITION_CHUNK),
        };
        let mut tx = self.begin_write().await?;
        for chunk in operation_chunks(batch.iter().map(|o| &o.operation), operation_limit) {
            let query = match self.backend {
                Backend::Postgres => upsert_unnest_query(&chunk, now),
                Backend::Sqlite => upsert_query(self.backend, &chunk, now),
            };
            query.execute(&mut *tx).await.map_err(|e| self.fail(e))?;
        }
        let transitions: Vec<&Transition> = batch.iter().flat_map(|o| &o.transitions).collect();
        let mut inserted = 0;
        for chunk in transitions.chunks(transition_limit) {
            let query = match self.backend {
                Backend::Postgres => transition_unnest_query(chunk),
                Backend::Sqlite => transition_query(self.backend, chunk),
            };
            inserted += query
                .execute(&mut *tx)
                .await
                .map_err(|e| self.fail(e))?
                .rows_affected();
        }
        tx.commit().await.map_err(|e| self.fail(e))?;
        Ok(inserted)
    }

    /// [`SqlCore::record`] the slow way: one statement per operation and per transition, each
    /// in its own implicit transaction. Same result; the benchmark's baseline.
    pub async fn record_one_at_a_time(&self, batch: Vec<Observation>) -> Result<u64, HistoryError> {
        let now = now_millis();
        let mut conn = self.pool.acquire().await.map_err(|e| self.fail(e))?;
        let mut inserted = 0;
        for observation in &batch {
            upsert_query(self.backend, &[&observation.operation], now)
                .execute(&mut *conn)
                .await
                .map_err(|e| self.fail(e))?;
            for transition in &observation.transitions {
                inserted += transition_query(self.backend, &[transition])
                    .execute(&mut *conn)
                    .await
                    .map_err(|e| self.fail(e))?
                    .rows_affected();
            }
        }
        Ok(inserted)
    }

    /// Upserts `operation` with `requester` (creating the row when the recorder has not seen
    /// the object yet). The merge rules keep an existing requester, so the first one wins.
    pub async fn note_requester(
        &self,
        mut operation: OperationRecord,
        requester: String,
    ) -> Result<(), HistoryError> {
        operation.requester = Some(requester);
        upsert_query(self.backend, &[&operation], now_millis())
            .execute(&self.pool)
            .await
            .map_err(|e| self.fail(e))?;
        Ok(())
    }

    /// Ids and kinds of operations without `deleted_at` (rows whose kind is not known yet are
    /// left out), by id.
    pub async fn live_operation_ids(&self) -> Result<Vec<(String, OperationKind)>, HistoryError> {
        let rows = sqlx::query(
            "SELECT id, kind FROM operations \
             WHERE deleted_at IS NULL AND kind IS NOT NULL ORDER BY id",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(|e| self.fail(e))?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let id: String = row.try_get("id").map_err(|e| self.fail(e))?;
            let kind: String = row.try_get("kind").map_err(|e| self.fail(e))?;
            if let Some(kind) = OperationKind::parse(&kind) {
                out.push((id, kind));
            }
        }
        Ok(out)
    }

    /// Sets `deleted_at = at` on those of `ids` not deleted yet and appends their `deleted`
    /// transition (value `true`, empty dedup, so a replay adds nothing). Returns rows changed.
    pub async fn mark_deleted(
        &self,
        ids: Vec<String>,
        at: EpochMillis,
    ) -> Result<u64, HistoryError> {
        if ids.is_empty() {
            return Ok(0);
        }
        let now = now_millis();
        let mut tx = self.begin_write().await?;
        let mut changed = 0;
        for chunk in ids.chunks(ID_CHUNK) {
            // The transition first, while deleted_at still tells which rows are changing.
            let mut insert = SqlText::new(
                "INSERT INTO transitions \
                 (operation_id, namespace, at, attribute, value, reason, message, dedup) \
                 SELECT id, namespace, ",
            );
            let at_param = insert.int(at);
            let list = insert.text_list(chunk.iter().cloned());
            let _ = write!(
                insert.text,
                "{at_param}, 'deleted', 'true', NULL, NULL, '' FROM operations \
                 WHERE id IN ({list}) AND deleted_at IS NULL ON CONFLICT DO NOTHING"
            );
            insert
                .into_query()
                .execute(&mut *tx)
                .await
                .map_err(|e| self.fail(e))?;
            let mut update = SqlText::new("UPDATE operations SET deleted_at = ");
            let at_param = update.int(at);
            let now_param = update.int(now);
            let list = update.text_list(chunk.iter().cloned());
            let _ = write!(
                update.text,
                "{at_param}, updated_at = {now_param} WHERE id IN ({list}) AND deleted_at IS NULL"
            );
            changed += update
                .into_query()
                .execute(&mut *tx)
                .await
                .map_err(|e| self.fail(e))?
                .rows_affected();
        }
        tx.commit().await.map_err(|e| self.fail(e))?;
        Ok(changed)
    }

    /// Attributes operations recorded without a namespace UID (before NAC recorded it, or
    /// while the recorder did not know the namespace yet) to the namespaces that exist now: a
    /// row of namespace `n` gets `n`'s UID only when it was created no earlier than `n` (a
    /// namespace created after an operation cannot own it: the operation was its
    /// predecessor's). Rows with no creation time stay unattributed, and unattributed rows are
    /// never shown to a tenant. One transaction; returns the rows attributed.
    pub async fn attribute_namespaces(
        &self,
        namespaces: Vec<NamespaceIdentity>,
    ) -> Result<u64, HistoryError> {
        let namespaces: Vec<&NamespaceIdentity> = namespaces
            .iter()
            .filter(|n| !n.name.is_empty() && !n.uid.is_empty() && n.created_at > 0)
            .collect();
        if namespaces.is_empty() {
            return Ok(0);
        }
        let now = now_millis();
        let mut tx = self.begin_write().await?;
        let mut changed = 0;
        for namespace in namespaces {
            changed += sqlx::query(
                "UPDATE operations SET namespace_uid = $1, updated_at = $2 \
                 WHERE namespace = $3 AND namespace_uid = '' AND created_at <> 0 \
                 AND created_at >= $4",
            )
            .bind(namespace.uid.clone())
            .bind(now)
            .bind(namespace.name.clone())
            .bind(namespace.created_at)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.fail(e))?
            .rows_affected();
        }
        tx.commit().await.map_err(|e| self.fail(e))?;
        Ok(changed)
    }

    /// One operation of a namespace (of its current UID).
    pub async fn operation(
        &self,
        tenant: &TenantNamespace,
        id: &str,
    ) -> Result<Option<OperationRecord>, HistoryError> {
        let row = sqlx::query(concat!(
            "SELECT ",
            operation_columns!(),
            " FROM operations WHERE namespace = $1 AND namespace_uid = $2 AND id = $3"
        ))
        .bind(tenant.name().to_string())
        .bind(tenant.uid().to_string())
        .bind(id.to_string())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| self.fail(e))?;
        row.as_ref()
            .map(operation_from_row)
            .transpose()
            .map_err(|e| self.fail(e))
    }

    /// The newest-created operation of a namespace with this kind and tenant object name.
    pub async fn operation_by_name(
        &self,
        tenant: &TenantNamespace,
        kind: OperationKind,
        name: &str,
    ) -> Result<Option<OperationRecord>, HistoryError> {
        let row = sqlx::query(concat!(
            "SELECT ",
            operation_columns!(),
            " FROM operations WHERE namespace = $1 AND namespace_uid = $2 AND kind = $3 \
             AND name = $4 ORDER BY created_at DESC, id DESC LIMIT 1"
        ))
        .bind(tenant.name().to_string())
        .bind(tenant.uid().to_string())
        .bind(kind.as_str())
        .bind(name.to_string())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| self.fail(e))?;
        row.as_ref()
            .map(operation_from_row)
            .transpose()
            .map_err(|e| self.fail(e))
    }

    /// The timeline of one operation of a namespace, by time then insertion order (the
    /// operation must be of the namespace's current UID).
    pub async fn timeline(
        &self,
        tenant: &TenantNamespace,
        id: &str,
    ) -> Result<Vec<StoredTransition>, HistoryError> {
        let rows = sqlx::query(
            "SELECT t.seq, t.operation_id, t.namespace, t.at, t.attribute, t.value, t.reason, \
             t.message, t.dedup FROM transitions t JOIN operations o ON o.id = t.operation_id \
             WHERE t.namespace = $1 AND t.operation_id = $3 AND o.namespace = $1 \
             AND o.namespace_uid = $2 ORDER BY t.at, t.seq",
        )
        .bind(tenant.name().to_string())
        .bind(tenant.uid().to_string())
        .bind(id.to_string())
        .fetch_all(&self.pool)
        .await
        .map_err(|e| self.fail(e))?;
        rows.iter()
            .map(transition_from_row)
            .collect::<Result<_, _>>()
            .map_err(|e| self.fail(e))
    }

    /// A page of a namespace's operations, newest first by (created_at, id), after the keyset
    /// `after`. Kinds and phases filter with IN lists, `since`/`until` bound created_at
    /// (inclusive/exclusive), `text` is a case-insensitive substring (`%`, `_` and `\` match
    /// themselves) of the name, Velero name, requester or failure reason. `limit` is clamped
    /// to 1..=[`MAX_PAGE_SIZE`]; one row more is read to know whether there is a next page.
    pub async fn operations(
        &self,
        tenant: &TenantNamespace,
        filter: &OperationFilter,
        after: Option<&OperationCursor>,
        limit: u32,
    ) -> Result<OperationPage, HistoryError> {
        let limit = limit.clamp(1, MAX_PAGE_SIZE);
        let mut sql = SqlText::new(concat!(
            "SELECT ",
            operation_columns!(),
            " FROM operations WHERE namespace = "
        ));
        let ns = sql.text(tenant.name());
        let uid = sql.text(tenant.uid());
        let _ = write!(sql.text, "{ns} AND namespace_uid = {uid}");
        if !filter.kinds.is_empty() {
            let list = sql.text_list(filter.kinds.iter().map(|k| k.as_str().to_string()));
            let _ = write!(sql.text, " AND kind IN ({list})");
        }
        if !filter.phases.is_empty() {
            let list = sql.text_list(filter.phases.iter().cloned());
            let _ = write!(sql.text, " AND phase IN ({list})");
        }
        if let Some(since) = filter.since {
            let p = sql.int(since);
            let _ = write!(sql.text, " AND created_at >= {p}");
        }
        if let Some(until) = filter.until {
            let p = sql.int(until);
            let _ = write!(sql.text, " AND created_at < {p}");
        }
        if let Some(text) = filter.text.as_deref().filter(|t| !t.is_empty()) {
            if text.chars().count() > MAX_TEXT_FILTER {
                return Err(HistoryError::InvalidInput(format!(
                    "the text filter is longer than {MAX_TEXT_FILTER} characters"
                )));
            }
            let p = sql.text(&format!("%{}%", escape_like(&text.to_lowercase())));
            let _ = write!(
                sql.text,
                " AND (LOWER(name) LIKE {p} ESCAPE '\\' OR LOWER(velero_name) LIKE {p} ESCAPE '\\' \
                 OR LOWER(requester) LIKE {p} ESCAPE '\\' \
                 OR LOWER(failure_reason) LIKE {p} ESCAPE '\\')"
            );
        }
        if let Some(after) = after {
            let at = sql.int(after.created_at);
            let id = sql.text(&after.id);
            // `created_at <= at` bounds the index range; the OR is the portable row comparison.
            let _ = write!(
                sql.text,
                " AND created_at <= {at} AND (created_at < {at} OR id < {id})"
            );
        }
        let fetch = sql.int(i64::from(limit) + 1);
        let _ = write!(sql.text, " ORDER BY created_at DESC, id DESC LIMIT {fetch}");
        let rows = sql
            .into_query()
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.fail(e))?;
        let mut items = rows
            .iter()
            .map(operation_from_row)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.fail(e))?;
        let next = if items.len() > limit as usize {
            items.truncate(limit as usize);
            items.last().map(|last| OperationCursor {
                created_at: last.created_at,
                id: last.id.clone(),
            })
        } else {
            None
        };
        Ok(OperationPage { items, next })
    }

    /// Per kind, the operations of a namespace created in [from, to): count, count per phase
    /// (no phase yet → "Unknown"), success rate (Completed / finished), the nearest-rank p50
    /// and p95 of the durations of finished ones with a start and a completion not before it
    /// (the same values as [`estimate::percentile`]: the rows are picked by rank with
    /// [`estimate::percentile_index`]), and the sum of items done. Kinds without operations
    /// are left out; kinds come in [`OperationKind::ALL`] order.
    pub async fn stats(
        &self,
        tenant: &TenantNamespace,
        window: TimeWindow,
    ) -> Result<NamespaceStats, HistoryError> {
        if window.to < window.from {
            return Err(HistoryError::InvalidInput(
                "the statistics window ends before it starts".to_string(),
            ));
        }
        let mut sql = SqlText::new("");
        let ns = sql.text(tenant.name());
        let uid = sql.text(tenant.uid());
        let from = sql.int(window.from);
        let to = sql.int(window.to);
        let finished = sql.text_list(FINISHED_PHASES.iter().map(|p| p.to_string()));
        // `timed` counts the rows with a usable duration: the percentile ranks need it.
        sql.text = format!(
            "SELECT kind, phase, COUNT(*) AS total, \
             CAST(COALESCE(SUM(items_done), 0) AS BIGINT) AS items, \
             CAST(SUM(CASE WHEN started_at IS NOT NULL AND completed_at IS NOT NULL \
                 AND completed_at >= started_at AND phase IN ({finished}) THEN 1 ELSE 0 END) \
                 AS BIGINT) AS timed \
             FROM operations WHERE namespace = {ns} AND namespace_uid = {uid} \
             AND created_at >= {from} AND created_at < {to} AND kind IS NOT NULL \
             GROUP BY kind, phase"
        );
        let groups = sql
            .into_query()
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.fail(e))?;

        let mut per_kind: BTreeMap<OperationKind, (KindStats, i64)> = BTreeMap::new();
        for row in &groups {
            let kind: String = row.try_get("kind").map_err(|e| self.fail(e))?;
            let Some(kind) = OperationKind::parse(&kind) else {
                continue;
            };
            let phase: Option<String> = row.try_get("phase").map_err(|e| self.fail(e))?;
            let total: i64 = row.try_get("total").map_err(|e| self.fail(e))?;
            let items: i64 = row.try_get("items").map_err(|e| self.fail(e))?;
            let timed: i64 = row.try_get("timed").map_err(|e| self.fail(e))?;
            let (stats, timed_sum) = per_kind.entry(kind).or_insert_with(|| {
                (
                    KindStats {
                        kind: kind.as_str().to_string(),
                        ..KindStats::default()
                    },
                    0,
                )
            });
            stats.total += total;
            stats.items_done += items;
            *stats
                .by_phase
                .entry(phase.unwrap_or_else(|| "Unknown".to_string()))
                .or_default() += total;
            *timed_sum += timed;
        }

        // The ranks (1-based row numbers) of p50 and p95 per kind, then one query reading
        // exactly those rows.
        let mut wanted: Vec<(OperationKind, i64, i64)> = Vec::new();
        for (kind, (_, timed)) in &per_kind {
            if let Ok(count) = usize::try_from(*timed)
                && count > 0
            {
                let rank = |p: f64| estimate::percentile_index(count, p) as i64 + 1;
                wanted.push((*kind, rank(50.0), rank(95.0)));
            }
        }
        if !wanted.is_empty() {
            let mut sql = SqlText::new("");
            let ns = sql.text(tenant.name());
            let uid = sql.text(tenant.uid());
            let from = sql.int(window.from);
            let to = sql.int(window.to);
            let finished = sql.text_list(FINISHED_PHASES.iter().map(|p| p.to_string()));
            let mut picks = Vec::new();
            for (kind, p50, p95) in &wanted {
                let k = sql.text(kind.as_str());
                let a = sql.int(*p50);
                let b = sql.int(*p95);
                picks.push(format!("(kind = {k} AND (rn = {a} OR rn = {b}))"));
            }
            sql.text = format!(
                "SELECT kind, rn, duration FROM (\
                 SELECT kind, completed_at - started_at AS duration, ROW_NUMBER() OVER \
                 (PARTITION BY kind ORDER BY completed_at - started_at) AS rn \
                 FROM operations WHERE namespace = {ns} AND namespace_uid = {uid} \
                 AND created_at >= {from} AND created_at < {to} AND kind IS NOT NULL \
                 AND phase IN ({finished}) \
                 AND started_at IS NOT NULL AND completed_at IS NOT NULL \
                 AND completed_at >= started_at) ranked WHERE {}",
                picks.join(" OR ")
            );
            let rows = sql
                .into_query()
                .fetch_all(&self.pool)
                .await
                .map_err(|e| self.fail(e))?;
            for row in &rows {
                let kind: String = row.try_get("kind").map_err(|e| self.fail(e))?;
                let rn: i64 = row.try_get("rn").map_err(|e| self.fail(e))?;
                let duration: i64 = row.try_get("duration").map_err(|e| self.fail(e))?;
                let Some(kind) = OperationKind::parse(&kind) else {
                    continue;
                };
                let Some((_, p50, p95)) = wanted.iter().find(|w| w.0 == kind) else {
                    continue;
                };
                if let Some((stats, _)) = per_kind.get_mut(&kind) {
                    if rn == *p50 {
                        stats.p50_duration_ms = Some(duration);
                    }
                    if rn == *p95 {
                        stats.p95_duration_ms = Some(duration);
                    }
                }
            }
        }

        let kinds = per_kind
            .into_values()
            .map(|(mut stats, _)| {
                let succeeded: i64 = stats
                    .by_phase
                    .iter()
                    .filter(|(phase, _)| estimate::is_successful_phase(phase))
                    .map(|(_, n)| n)
                    .sum();
                let finished: i64 = stats
                    .by_phase
                    .iter()
                    .filter(|(phase, _)| estimate::is_finished_phase(phase))
                    .map(|(_, n)| n)
                    .sum();
                stats.success_rate = estimate::success_rate(succeeded, finished);
                stats
            })
            .collect();
        Ok(NamespaceStats {
            namespace: tenant.name().to_string(),
            from: window.from,
            to: window.to,
            kinds,
        })
    }

    /// Durations of the `limit` (at most [`MAX_RECENT_DURATIONS`]) most recently completed
    /// finished operations of `kinds` in a namespace that have a start and a completion not
    /// before it, newest completion first. No kinds, or a limit of 0, give nothing.
    pub async fn recent_durations(
        &self,
        tenant: &TenantNamespace,
        kinds: &[OperationKind],
        limit: u32,
    ) -> Result<Vec<i64>, HistoryError> {
        if kinds.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let mut sql = SqlText::new("SELECT completed_at - started_at AS duration FROM operations");
        let ns = sql.text(tenant.name());
        let uid = sql.text(tenant.uid());
        let kind_list = sql.text_list(kinds.iter().map(|k| k.as_str().to_string()));
        let finished = sql.text_list(FINISHED_PHASES.iter().map(|p| p.to_string()));
        let limit = sql.int(i64::from(limit.min(MAX_RECENT_DURATIONS)));
        let _ = write!(
            sql.text,
            " WHERE namespace = {ns} AND namespace_uid = {uid} AND kind IN ({kind_list}) \
             AND phase IN ({finished}) \
             AND started_at IS NOT NULL AND completed_at IS NOT NULL \
             AND completed_at >= started_at ORDER BY completed_at DESC, id DESC LIMIT {limit}"
        );
        let rows = sql
            .into_query()
            .fetch_all(&self.pool)
            .await
            .map_err(|e| self.fail(e))?;
        rows.iter()
            .map(|row| row.try_get::<i64, _>("duration"))
            .collect::<Result<_, _>>()
            .map_err(|e| self.fail(e))
    }

    /// Per namespace (in the order given): the newest Completed backup or schedule run (by
    /// completion), and the schedules (parent of schedule runs) whose newest finished run
    /// (by completion, else creation) Failed, PartiallyFailed or FailedValidation, sorted.
    pub async fn coverage(
        &self,
        namespaces: &[TenantNamespace],
    ) -> Result<Vec<Coverage>, HistoryError> {
        let mut out = Vec::with_capacity(namespaces.len());
        for tenant in namespaces {
            let last = sqlx::query(
                "SELECT name, completed_at FROM operations \
                 WHERE namespace = $1 AND namespace_uid = $4 AND kind IN ($2, $3) \
                 AND phase = 'Completed' AND completed_at IS NOT NULL \
                 ORDER BY completed_at DESC, id DESC LIMIT 1",
            )
            .bind(tenant.name().to_string())
            .bind(OperationKind::Backup.as_str())
            .bind(OperationKind::ScheduleRun.as_str())
            .bind(tenant.uid().to_string())
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| self.fail(e))?;
            let (name, at) = match &last {
                Some(row) => (
                    Some(row.try_get::<String, _>("name").map_err(|e| self.fail(e))?),
                    Some(
                        row.try_get::<i64, _>("completed_at")
                            .map_err(|e| self.fail(e))?,
                    ),
                ),
                None => (None, None),
            };

            let mut sql = SqlText::new("");
            let ns = sql.text(tenant.name());
            let uid = sql.text(tenant.uid());
            let kind = sql.text(OperationKind::ScheduleRun.as_str());
            let finished = sql.text_list(FINISHED_PHASES.iter().map(|p| p.to_string()));
            let failed = sql.text_list(FAILED_PHASES.iter().map(|p| p.to_string()));
            sql.text = format!(
                "SELECT parent_name FROM (\
                 SELECT parent_name, phase, ROW_NUMBER() OVER (PARTITION BY parent_name \
                 ORDER BY COALESCE(completed_at, created_at) DESC, created_at DESC, id DESC) \
                 AS rn FROM operations WHERE namespace = {ns} AND namespace_uid = {uid} \
                 AND kind = {kind} \
                 AND parent_name IS NOT NULL AND phase IN ({finished})) newest \
                 WHERE rn = 1 AND phase IN ({failed})"
            );
            let rows = sql
                .into_query()
                .fetch_all(&self.pool)
                .await
                .map_err(|e| self.fail(e))?;
            let mut failing = rows
                .iter()
                .map(|row| row.try_get::<String, _>("parent_name"))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| self.fail(e))?;
            // Sorted here, not in SQL: Postgres would sort by the database collation.
            failing.sort();
            out.push(Coverage {
                namespace: tenant.name().to_string(),
                last_successful_backup: name,
                last_successful_backup_at: at,
                failing_schedules: failing,
            });
        }
        Ok(out)
    }

    /// Deletes, in one transaction, the operations whose deletion time (else completion time)
    /// is before `cutoff` with their timelines and manifests (operations still in the cluster and not
    /// finished have neither, so they stay), and idempotency records already expired.
    /// Returns operations removed.
    pub async fn purge(&self, cutoff: EpochMillis) -> Result<u64, HistoryError> {
        let mut tx = self.begin_write().await?;
        // Manifests go with their operation (the foreign key cascades too; this does not rely
        // on SQLite's foreign_keys pragma).
        sqlx::query(
            "DELETE FROM manifests WHERE operation_id IN \
             (SELECT id FROM operations WHERE COALESCE(deleted_at, completed_at) < $1)",
        )
        .bind(cutoff)
        .execute(&mut *tx)
        .await
        .map_err(|e| self.fail(e))?;
        sqlx::query(
            "DELETE FROM transitions WHERE operation_id IN \
             (SELECT id FROM operations WHERE COALESCE(deleted_at, completed_at) < $1)",
        )
        .bind(cutoff)
        .execute(&mut *tx)
        .await
        .map_err(|e| self.fail(e))?;
        let removed =
            sqlx::query("DELETE FROM operations WHERE COALESCE(deleted_at, completed_at) < $1")
                .bind(cutoff)
                .execute(&mut *tx)
                .await
                .map_err(|e| self.fail(e))?
                .rows_affected();
        sqlx::query("DELETE FROM idempotency_keys WHERE expires_at < $1")
            .bind(now_millis())
            .execute(&mut *tx)
            .await
            .map_err(|e| self.fail(e))?;
        tx.commit().await.map_err(|e| self.fail(e))?;
        Ok(removed)
    }

    /// Claims (caller, path, key) in the namespace with UID `namespace_uid` for
    /// `body_digest`, in one transaction: an expired record, or one given in another namespace
    /// of the same name (another UID: it is not this namespace's answer), is deleted, then an
    /// in-flight record (expiring after `in_flight_ttl_ms`) is inserted unless one exists.
    /// Inserted → [`IdempotencyState::Claimed`]; otherwise the existing record decides:
    /// another digest → Mismatch, done → Done(answer), else InFlight. Of two concurrent claims
    /// exactly one wins: Postgres makes the second insert wait for the first transaction,
    /// SQLite serializes writers.
    pub async fn idempotency_begin(
        &self,
        caller: &str,
        path: &str,
        key: &str,
        namespace_uid: &str,
        body_digest: &[u8],
        in_flight_ttl_ms: i64,
    ) -> Result<IdempotencyState, HistoryError> {
        // A record abandoned (or replaced by another namespace's) between our insert and our
        // read is not ours: claim again.
        for _ in 0..3 {
            let now = now_millis();
            let mut tx = self.begin_write().await?;
            sqlx::query(
                "DELETE FROM idempotency_keys WHERE caller = $1 AND path = $2 AND key = $3 \
                 AND (expires_at <= $4 OR namespace_uid <> $5)",
            )
            .bind(caller.to_string())
            .bind(path.to_string())
            .bind(key.to_string())
            .bind(now)
            .bind(namespace_uid.to_string())
            .execute(&mut *tx)
            .await
            .map_err(|e| self.fail(e))?;
            let inserted = sqlx::query(
                "INSERT INTO idempotency_keys (caller, path, key, namespace_uid, body_digest, \
                 state, status, content_type, body, expires_at) \
                 VALUES ($1, $2, $3, $4, $5, 'in_flight', NULL, NULL, NULL, $6) \
                 ON CONFLICT (caller, path, key) DO NOTHING",
            )
            .bind(caller.to_string())
            .bind(path.to_string())
            .bind(key.to_string())
            .bind(namespace_uid.to_string())
            .bind(body_digest.to_vec())
            .bind(now.saturating_add(in_flight_ttl_ms.max(0)))
            .execute(&mut *tx)
            .await
            .map_err(|e| self.fail(e))?
            .rows_affected();
            if inserted == 1 {
                tx.commit().await.map_err(|e| self.fail(e))?;
                return Ok(IdempotencyState::Claimed);
            }
            let row = sqlx::query(
                "SELECT body_digest, state, status, content_type, body FROM idempotency_keys \
                 WHERE caller = $1 AND path = $2 AND key = $3 AND namespace_uid = $4",
            )
            .bind(caller.to_string())
            .bind(path.to_string())
            .bind(key.to_string())
            .bind(namespace_uid.to_string())
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| self.fail(e))?;
            tx.commit().await.map_err(|e| self.fail(e))?;
            let Some(row) = row else {
                continue;
            };
            return idempotency_state(&row, body_digest).map_err(|e| self.fail(e));
        }
        Err(HistoryError::Database(
            "the idempotency record kept changing while it was being claimed".to_string(),
        ))
    }

    /// Stores the answer of a key claimed in the namespace with UID `namespace_uid` (state
    /// done, kept `ttl_ms` from now). A key that is no longer held (abandoned, expired and
    /// purged, or claimed since in another namespace of the same name) is left as it is.
    pub async fn idempotency_finish(
        &self,
        caller: &str,
        path: &str,
        key: &str,
        namespace_uid: &str,
        answer: IdempotencyAnswer,
        ttl_ms: i64,
    ) -> Result<(), HistoryError> {
        sqlx::query(
            "UPDATE idempotency_keys SET state = 'done', status = $4, content_type = $5, \
             body = $6, expires_at = $7 WHERE caller = $1 AND path = $2 AND key = $3 \
             AND namespace_uid = $8",
        )
        .bind(caller.to_string())
        .bind(path.to_string())
        .bind(key.to_string())
        .bind(i64::from(answer.status))
        .bind(answer.content_type)
        .bind(answer.body)
        .bind(now_millis().saturating_add(ttl_ms.max(0)))
        .bind(namespace_uid.to_string())
        .execute(&self.pool)
        .await
        .map_err(|e| self.fail(e))?;
        Ok(())
    }

    /// Deletes the record of a key claimed in the namespace with UID `namespace_uid` (its
    /// request did not complete and may run again).
    pub async fn idempotency_abandon(
        &self,
        caller: &str,
        path: &str,
        key: &str,
        namespace_uid: &str,
    ) -> Result<(), HistoryError> {
        sqlx::query(
            "DELETE FROM idempotency_keys \
             WHERE caller = $1 AND path = $2 AND key = $3 AND namespace_uid = $4",
        )
        .bind(caller.to_string())
        .bind(path.to_string())
        .bind(key.to_string())
        .bind(namespace_uid.to_string())
        .execute(&self.pool)
        .await
        .map_err(|e| self.fail(e))?;
        Ok(())
    }

    /// `SELECT 1`. Always goes to the server (it is how health checks find out), and what it finds
    /// counts for the calls after it.
    pub async fn ping(&self) -> Result<(), HistoryError> {
        let result = sqlx::query("SELECT 1")
            .execute(&self.pool)
            .await
            .map(|_| ())
            .map_err(|e| self.fail(e));
        if self.backend == Backend::Postgres {
            self.reachable().observe(&result, Instant::now());
        }
        result
    }
}

/// Most targets [`SqlCore::manifests_missing`] returns per call.
pub const MAX_MANIFEST_TARGETS: u32 = 1_000;

/// The operation kinds that own a backup (and so may have a manifest), as stored.
const BACKUP_KINDS_SQL: &str = "('backup', 'schedule_run')";

/// The summary columns of a manifest (table alias `m`), as [`manifest_summary_from_row`] reads
/// them.
macro_rules! manifest_summary_columns {
    () => {
        "m.operation_id, m.namespace, m.backup_name, m.velero_name, m.velero_uid, \
         m.format_version, m.item_count, m.counts_by_kind, m.encoded_size, m.built_at"
    };
}

/// Backup manifests (seed 002): one per backup operation, stored once, read per namespace.
impl SqlCore {
    /// Inserts the manifest unless its operation has one, in one transaction; the operation
    /// must exist in the key's namespace, be a backup or schedule run, and name the key's
    /// Velero backup (so a key can never attach a manifest to another tenant's operation).
    pub async fn put_manifest(
        &self,
        manifest: StoredManifest,
    ) -> Result<ManifestPut, HistoryError> {
        let StoredManifest { summary, encoded } = manifest;
        let counts = serde_json::to_string(&summary.counts_by_kind).map_err(|e| {
            HistoryError::InvalidInput(format!("manifest counts cannot be stored: {e}"))
        })?;
        let size = i64::try_from(encoded.len()).unwrap_or(i64::MAX);
        let key = summary.key;
        let mut tx = self.begin_write().await?;
        let inserted = sqlx::query(AssertSqlSafe(format!(
            "INSERT INTO manifests (operation_id, namespace, backup_name, velero_name, \
             velero_uid, format_version, item_count, counts_by_kind, encoded, encoded_size, \
             built_at) \
             SELECT id, namespace, $3, $4, $5, $6, $7, $8, $9, $10, $11 FROM operations \
             WHERE id = $1 AND namespace = $2 AND velero_name = $4 AND kind IN {BACKUP_KINDS_SQL} \
             ON CONFLICT (operation_id) DO NOTHING"
        )))
        .bind(key.operation_id.clone())
        .bind(key.namespace.clone())
        .bind(key.backup_name)
        .bind(key.velero_name)
        .bind(key.velero_uid)
        .bind(i64::from(summary.format_version))
        .bind(summary.item_count)
        .bind(counts)
        .bind(encoded)
        .bind(size)
        .bind(summary.built_at)
        .execute(&mut *tx)
        .await
        .map_err(|e| self.fail(e))?
        .rows_affected();
        let outcome = if inserted == 1 {
            ManifestPut::Stored
        } else {
            let existing =
                sqlx::query("SELECT 1 FROM manifests WHERE operation_id = $1 AND namespace = $2")
                    .bind(key.operation_id)
                    .bind(key.namespace)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(|e| self.fail(e))?;
            if existing.is_some() {
                ManifestPut::AlreadyStored
            } else {
                ManifestPut::UnknownOperation
            }
        };
        tx.commit().await.map_err(|e| self.fail(e))?;
        Ok(outcome)
    }

    /// The manifest of one operation of a namespace (of its current UID).
    pub async fn manifest(
        &self,
        tenant: &TenantNamespace,
        operation_id: &str,
    ) -> Result<Option<StoredManifest>, HistoryError> {
        let row = sqlx::query(concat!(
            "SELECT ",
            manifest_summary_columns!(),
            ", m.encoded FROM manifests m JOIN operations o ON o.id = m.operation_id \
             WHERE m.namespace = $1 AND m.operation_id = $3 AND o.namespace = $1 \
             AND o.namespace_uid = $2"
        ))
        .bind(tenant.name().to_string())
        .bind(tenant.uid().to_string())
        .bind(operation_id.to_string())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| self.fail(e))?;
        row.as_ref().map(stored_manifest_from_row).transpose()
    }

    /// The manifest of the newest backup operation of a namespace (of its current UID) with
    /// this tenant name.
    pub async fn manifest_by_name(
        &self,
        tenant: &TenantNamespace,
        backup_name: &str,
    ) -> Result<Option<StoredManifest>, HistoryError> {
        let row = sqlx::query(AssertSqlSafe(format!(
            concat!(
                "SELECT ",
                manifest_summary_columns!(),
                ", m.encoded FROM manifests m WHERE m.namespace = $1 AND m.operation_id = \
                 (SELECT o.id FROM operations o WHERE o.namespace = $1 \
                 AND o.namespace_uid = $2 AND o.name = $3 \
                 AND o.kind IN {} ORDER BY o.created_at DESC, o.id DESC LIMIT 1)"
            ),
            BACKUP_KINDS_SQL
        )))
        .bind(tenant.name().to_string())
        .bind(tenant.uid().to_string())
        .bind(backup_name.to_string())
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| self.fail(e))?;
        row.as_ref().map(stored_manifest_from_row).transpose()
    }

    /// Summaries of a namespace's manifests, newest operation first (the encoded documents
    /// are not read).
    pub async fn manifest_summaries(
        &self,
        tenant: &TenantNamespace,
    ) -> Result<Vec<ManifestSummary>, HistoryError> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            manifest_summary_columns!(),
            " FROM manifests m JOIN operations o ON o.id = m.operation_id \
             WHERE m.namespace = $1 AND o.namespace = $1 AND o.namespace_uid = $2 \
             ORDER BY o.created_at DESC, m.operation_id DESC"
        ))
        .bind(tenant.name().to_string())
        .bind(tenant.uid().to_string())
        .fetch_all(&self.pool)
        .await
        .map_err(|e| self.fail(e))?;
        rows.iter().map(manifest_summary_from_row).collect()
    }

    /// Completed or partially failed backup operations not deleted, with a Velero backup name
    /// and no manifest, newest completed first; `limit` is clamped to
    /// 1..=[`MAX_MANIFEST_TARGETS`].
    pub async fn manifests_missing(&self, limit: u32) -> Result<Vec<ManifestTarget>, HistoryError> {
        let limit = i64::from(limit.clamp(1, MAX_MANIFEST_TARGETS));
        let rows = sqlx::query(AssertSqlSafe(format!(
            "SELECT o.id, o.namespace, o.name, o.velero_name, o.kind, o.completed_at \
             FROM operations o \
             WHERE o.kind IN {BACKUP_KINDS_SQL} AND o.phase IN ('Completed', 'PartiallyFailed') \
             AND o.velero_name IS NOT NULL AND o.deleted_at IS NULL \
             AND NOT EXISTS (SELECT 1 FROM manifests m WHERE m.operation_id = o.id) \
             ORDER BY COALESCE(o.completed_at, 0) DESC, o.id LIMIT $1"
        )))
        .bind(limit)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| self.fail(e))?;
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            let kind: String = row.try_get("kind").map_err(|e| self.fail(e))?;
            let Some(kind) = OperationKind::parse(&kind) else {
                continue;
            };
            out.push(ManifestTarget {
                operation_id: row.try_get("id").map_err(|e| self.fail(e))?,
                namespace: row.try_get("namespace").map_err(|e| self.fail(e))?,
                backup_name: row.try_get("name").map_err(|e| self.fail(e))?,
                velero_name: row.try_get("velero_name").map_err(|e| self.fail(e))?,
                kind,
                completed_at: row.try_get("completed_at").map_err(|e| self.fail(e))?,
            });
        }
        Ok(out)
    }
}

/// A summary read from [`manifest_summary_columns!`]. Column errors carry no secrets (no URL
/// is involved), so they are reported as they are.
fn manifest_summary_from_row(row: &AnyRow) -> Result<ManifestSummary, HistoryError> {
    let column = |e: sqlx::Error| HistoryError::Database(format!("reading a manifest: {e}"));
    let counts: String = row.try_get("counts_by_kind").map_err(column)?;
    let format_version: i64 = row.try_get("format_version").map_err(column)?;
    Ok(ManifestSummary {
        key: ManifestKey {
            operation_id: row.try_get("operation_id").map_err(column)?,
            namespace: row.try_get("namespace").map_err(column)?,
            backup_name: row.try_get("backup_name").map_err(column)?,
            velero_name: row.try_get("velero_name").map_err(column)?,
            velero_uid: row.try_get("velero_uid").map_err(column)?,
        },
        item_count: row.try_get("item_count").map_err(column)?,
        counts_by_kind: serde_json::from_str(&counts).map_err(|e| {
            HistoryError::Database(format!("a stored manifest's counts are corrupt: {e}"))
        })?,
        built_at: row.try_get("built_at").map_err(column)?,
        format_version: u32::try_from(format_version).map_err(|_| {
            HistoryError::Database(format!(
                "a stored manifest's format {format_version} is invalid"
            ))
        })?,
        encoded_size: row.try_get("encoded_size").map_err(column)?,
    })
}

fn stored_manifest_from_row(row: &AnyRow) -> Result<StoredManifest, HistoryError> {
    Ok(StoredManifest {
        summary: manifest_summary_from_row(row)?,
        encoded: row
            .try_get("encoded")
            .map_err(|e| HistoryError::Database(format!("reading a manifest: {e}")))?,
    })
}

/// A statement under construction whose values are all bound: only `$N` placeholders are
/// written into the text.
struct SqlText {
    text: String,
    params: Vec<Param>,
}

enum Param {
    Text(String),
    Int(i64),
}

impl SqlText {
    fn new(head: &str) -> Self {
        Self {
            text: head.to_string(),
            params: Vec::new(),
        }
    }

    fn push(&mut self, param: Param) -> String {
        self.params.push(param);
        format!("${}", self.params.len())
    }

    fn text(&mut self, value: &str) -> String {
        self.push(Param::Text(value.to_string()))
    }

    fn int(&mut self, value: i64) -> String {
        self.push(Param::Int(value))
    }

    /// Placeholders for an IN list.
    fn text_list(&mut self, values: impl Iterator<Item = String>) -> String {
        values
            .map(|v| self.push(Param::Text(v)))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn into_query(self) -> AnyQuery {
        let mut query = sqlx::query(AssertSqlSafe(self.text));
        for param in self.params {
            query = match param {
                Param::Text(v) => query.bind(v),
                Param::Int(v) => query.bind(v),
            };
        }
        query
    }
}

/// Splits operations into upsert chunks of at most `limit`, starting a new chunk when an id
/// repeats: Postgres refuses to update one row twice in a statement, and applying repeats in
/// order keeps the batch equal to its one-at-a-time replay.
fn operation_chunks<'a>(
    operations: impl Iterator<Item = &'a OperationRecord>,
    limit: usize,
) -> Vec<Vec<&'a OperationRecord>> {
    let mut chunks = Vec::new();
    let mut current: Vec<&OperationRecord> = Vec::new();
    let mut ids: HashSet<&str> = HashSet::new();
    for op in operations {
        if current.len() == limit || ids.contains(op.id.as_str()) {
            chunks.push(std::mem::take(&mut current));
            ids.clear();
        }
        ids.insert(op.id.as_str());
        current.push(op);
    }
    if !current.is_empty() {
        chunks.push(current);
    }
    chunks
}

/// `(…), (…)` placeholders for `rows` rows of `width` values: `$1…` on Postgres, plain `?` on
/// SQLite. SQLite looks a named parameter (`$N`) up by a linear scan, both when preparing and
/// when sqlx binds each value, so a statement with n of them costs O(n²): with the thousands of
/// a multi-row insert that made batching slower than one row at a time. Anonymous `?` are bound
/// by position; the rows' values come in order, so the statement is the same.
fn values_placeholders(backend: Backend, rows: usize, width: usize) -> String {
    let mut text = String::with_capacity(rows * width * 5);
    let mut n = 1;
    for row in 0..rows {
        if row > 0 {
            text.push_str(", ");
        }
        text.push('(');
        for column in 0..width {
            if column > 0 {
                text.push_str(", ");
            }
            match backend {
                Backend::Postgres => {
                    let _ = write!(text, "${n}");
                }
                Backend::Sqlite => text.push('?'),
            }
            n += 1;
        }
        text.push(')');
    }
    text
}

fn upsert_query(backend: Backend, operations: &[&OperationRecord], now: EpochMillis) -> AnyQuery {
    let sql = format!(
        "{UPSERT_HEAD}{}{UPSERT_MERGE}",
        values_placeholders(backend, operations.len(), OPERATION_WIDTH)
    );
    let mut query = sqlx::query(AssertSqlSafe(sql));
    for op in operations {
        query = query
            .bind(op.id.clone())
            .bind(op.namespace.clone())
            .bind(op.namespace_uid.clone())
            .bind(op.kind.map(OperationKind::as_str))
            .bind(op.name.clone())
            .bind(op.uid.clone())
            .bind(op.velero_name.clone())
            .bind(op.parent_name.clone())
            .bind(op.requester.clone())
            .bind(op.created_at)
            .bind(op.started_at)
            .bind(op.completed_at)
            .bind(op.phase.clone())
            .bind(op.phase_rank)
            .bind(op.nac_phase.clone())
            .bind(op.items_total)
            .bind(op.items_done)
            .bind(op.warnings)
            .bind(op.errors)
            .bind(op.failure_reason.clone())
            .bind(op.queue_position)
            .bind(op.deleted_at)
            .bind(now);
    }
    query
}

fn transition_query(backend: Backend, transitions: &[&Transition]) -> AnyQuery {
    let sql = format!(
        "{TRANSITION_HEAD}{} ON CONFLICT DO NOTHING",
        values_placeholders(backend, transitions.len(), TRANSITION_WIDTH)
    );
    let mut query = sqlx::query(AssertSqlSafe(sql));
    for t in transitions {
        query = query
            .bind(t.operation_id.clone())
            .bind(t.namespace.clone())
            .bind(t.at)
            .bind(t.attribute.clone())
            .bind(t.value.clone())
            .bind(t.reason.clone())
            .bind(t.message.clone())
            .bind(t.dedup.clone());
    }
    query
}

/// [`upsert_query`] on Postgres for any number of operations: each column is one array
/// parameter, unnested by the server. A multi-row VALUES binds 23 parameters per row, and
/// binding and planning those cost about as much as the upsert itself; the text is also the
/// same for every batch size, so it is prepared once per connection.
fn upsert_unnest_query(operations: &[&OperationRecord], now: EpochMillis) -> AnyQuery {
    let sql = format!(
        "INSERT INTO operations ({}, updated_at) SELECT *, $23 FROM unnest(\
         $1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], \
         $8::text[], $9::text[], $10::bigint[], $11::bigint[], $12::bigint[], $13::text[], \
         $14::bigint[], $15::text[], $16::bigint[], $17::bigint[], $18::bigint[], \
         $19::bigint[], $20::text[], $21::bigint[], $22::bigint[]){UPSERT_MERGE}",
        operation_columns!()
    );
    let column = |value: &dyn Fn(&mut PgArray, &OperationRecord)| {
        let mut array = PgArray::new(operations.len());
        for op in operations {
            value(&mut array, op);
        }
        array.finish()
    };
    sqlx::query(AssertSqlSafe(sql))
        .bind(column(&|a, op| a.text(Some(&op.id))))
        .bind(column(&|a, op| a.text(Some(&op.namespace))))
        .bind(column(&|a, op| a.text(Some(&op.namespace_uid))))
        .bind(column(&|a, op| a.text(op.kind.map(OperationKind::as_str))))
        .bind(column(&|a, op| a.text(Some(&op.name))))
        .bind(column(&|a, op| a.text(Some(&op.uid))))
        .bind(column(&|a, op| a.text(op.velero_name.as_deref())))
        .bind(column(&|a, op| a.text(op.parent_name.as_deref())))
        .bind(column(&|a, op| a.text(op.requester.as_deref())))
        .bind(column(&|a, op| a.int(Some(op.created_at))))
        .bind(column(&|a, op| a.int(op.started_at)))
        .bind(column(&|a, op| a.int(op.completed_at)))
        .bind(column(&|a, op| a.text(op.phase.as_deref())))
        .bind(column(&|a, op| a.int(Some(op.phase_rank))))
        .bind(column(&|a, op| a.text(op.nac_phase.as_deref())))
        .bind(column(&|a, op| a.int(op.items_total)))
        .bind(column(&|a, op| a.int(op.items_done)))
        .bind(column(&|a, op| a.int(op.warnings)))
        .bind(column(&|a, op| a.int(op.errors)))
        .bind(column(&|a, op| a.text(op.failure_reason.as_deref())))
        .bind(column(&|a, op| a.int(op.queue_position)))
        .bind(column(&|a, op| a.int(op.deleted_at)))
        .bind(now)
}

/// [`transition_query`] on Postgres for any number of transitions, one array per column (see
/// [`upsert_unnest_query`]). The function scan yields rows in array order, so `seq` follows
/// the batch's order as with VALUES.
fn transition_unnest_query(transitions: &[&Transition]) -> AnyQuery {
    let column = |value: &dyn Fn(&mut PgArray, &Transition)| {
        let mut array = PgArray::new(transitions.len());
        for t in transitions {
            value(&mut array, t);
        }
        array.finish()
    };
    sqlx::query(
        "INSERT INTO transitions \
         (operation_id, namespace, at, attribute, value, reason, message, dedup) \
         SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], \
         $6::text[], $7::text[], $8::text[]) ON CONFLICT DO NOTHING",
    )
    .bind(column(&|a, t| a.text(Some(&t.operation_id))))
    .bind(column(&|a, t| a.text(Some(&t.namespace))))
    .bind(column(&|a, t| a.int(Some(t.at))))
    .bind(column(&|a, t| a.text(Some(&t.attribute))))
    .bind(column(&|a, t| a.text(Some(&t.value))))
    .bind(column(&|a, t| a.text(t.reason.as_deref())))
    .bind(column(&|a, t| a.text(t.message.as_deref())))
    .bind(column(&|a, t| a.text(Some(&t.dedup))))
}

/// One column of a batch as a Postgres array literal (`{"a",NULL}`), bound as a single text
/// parameter and cast to `text[]` or `bigint[]` by the statement: sqlx's `Any` driver binds
/// no arrays.
struct PgArray {
    text: String,
    first: bool,
}

impl PgArray {
    fn new(rows: usize) -> Self {
        let mut text = String::with_capacity(2 + rows * 16);
        text.push('{');
        Self { text, first: true }
    }

    fn separate(&mut self) {
        if !std::mem::take(&mut self.first) {
            self.text.push(',');
        }
    }

    /// A text element, always quoted: unquoted, `NULL`, blanks, commas and braces would be
    /// read as syntax. Inside quotes only `"` and `\` need a backslash.
    fn text(&mut self, value: Option<&str>) {
        self.separate();
        let Some(value) = value else {
            self.text.push_str("NULL");
            return;
        };
        self.text.push('"');
        let mut rest = value;
        while let Some(at) = rest.find(['"', '\\']) {
            self.text.push_str(&rest[..at]);
            self.text.push('\\');
            self.text.push_str(&rest[at..=at]);
            rest = &rest[at + 1..];
        }
        self.text.push_str(rest);
        self.text.push('"');
    }

    fn int(&mut self, value: Option<i64>) {
        self.separate();
        match value {
            Some(v) => {
                let _ = write!(self.text, "{v}");
            }
            None => self.text.push_str("NULL"),
        }
    }

    fn finish(mut self) -> String {
        self.text.push('}');
        self.text
    }
}

fn operation_from_row(row: &AnyRow) -> Result<OperationRecord, sqlx::Error> {
    let kind: Option<String> = row.try_get("kind")?;
    Ok(OperationRecord {
        id: row.try_get("id")?,
        namespace: row.try_get("namespace")?,
        namespace_uid: row.try_get("namespace_uid")?,
        kind: kind.as_deref().and_then(OperationKind::parse),
        name: row.try_get("name")?,
        uid: row.try_get("uid")?,
        velero_name: row.try_get("velero_name")?,
        parent_name: row.try_get("parent_name")?,
        requester: row.try_get("requester")?,
        created_at: row.try_get("created_at")?,
        started_at: row.try_get("started_at")?,
        completed_at: row.try_get("completed_at")?,
        phase: row.try_get("phase")?,
        phase_rank: row.try_get("phase_rank")?,
        nac_phase: row.try_get("nac_phase")?,
        items_total: row.try_get("items_total")?,
        items_done: row.try_get("items_done")?,
        warnings: row.try_get("warnings")?,
        errors: row.try_get("errors")?,
        failure_reason: row.try_get("failure_reason")?,
        queue_position: row.try_get("queue_position")?,
        deleted_at: row.try_get("deleted_at")?,
    })
}

fn transition_from_row(row: &AnyRow) -> Result<StoredTransition, sqlx::Error> {
    Ok(StoredTransition {
        seq: row.try_get("seq")?,
        transition: Transition {
            operation_id: row.try_get("operation_id")?,
            namespace: row.try_get("namespace")?,
            at: row.try_get("at")?,
            attribute: row.try_get("attribute")?,
            value: row.try_get("value")?,
            reason: row.try_get("reason")?,
            message: row.try_get("message")?,
            dedup: row.try_get("dedup")?,
        },
    })
}

fn idempotency_state(row: &AnyRow, body_digest: &[u8]) -> Result<IdempotencyState, sqlx::Error> {
    let digest: Vec<u8> = row.try_get("body_digest")?;
    if digest != body_digest {
        return Ok(IdempotencyState::Mismatch);
    }
    let state: String = row.try_get("state")?;
    if state != "done" {
        return Ok(IdempotencyState::InFlight);
    }
    let status: Option<i64> = row.try_get("status")?;
    Ok(IdempotencyState::Done(IdempotencyAnswer {
        status: status.and_then(|s| u16::try_from(s).ok()).unwrap_or(500),
        content_type: row
            .try_get::<Option<String>, _>("content_type")?
            .unwrap_or_default(),
        body: row
            .try_get::<Option<Vec<u8>>, _>("body")?
            .unwrap_or_default(),
    }))
}

/// `text` with the LIKE wildcards `%`, `_` and the escape `\` escaped, to match literally.
pub fn escape_like(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 4);
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Opens (creating it when missing) the file a migration lock is taken on. flock needs no
/// write access, so a file another user created is opened read-only.
fn open_lock_file(path: &Path) -> std::io::Result<File> {
    match OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
    {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => File::open(path),
        other => other,
    }
}

/// Whether an error means the database cannot be reached right now (retrying may succeed).
fn is_unavailable(error: &sqlx::Error, backend: Backend) -> bool {
    match error {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Protocol(message) => {
            let message = message.to_ascii_lowercase();
            ["closed", "eof", "connection", "reset"]
                .iter()
                .any(|m| message.contains(m))
        }
        sqlx::Error::Database(db) => db.code().is_some_and(|code| match backend {
            // Connection exceptions (08…), shutting down / starting up (57P01–57P03), too
            // many connections (53300).
            Backend::Postgres => {
                code.starts_with("08") || matches!(&*code, "57P01" | "57P02" | "57P03" | "53300")
            }
            // SQLITE_BUSY and SQLITE_LOCKED (extended codes keep the primary in the low byte).
            Backend::Sqlite => code.parse::<i32>().is_ok_and(|c| matches!(c & 0xff, 5 | 6)),
        }),
        _ => false,
    }
}

/// Maps an sqlx error: unreachable → [`HistoryError::Unavailable`], anything else →
/// [`HistoryError::Database`]. Messages name the database without its password.
pub fn classify(
    error: sqlx::Error,
    backend: Backend,
    target: &str,
    secret: Option<&str>,
) -> HistoryError {
    if is_unavailable(&error, backend) {
        HistoryError::Unavailable(scrub(&format!("{target}: {error}"), secret))
    } else {
        HistoryError::Database(scrub(&error.to_string(), secret))
    }
}

/// The password of a URL, also when the URL does not parse (then [`redact_url`] cannot hide
/// it and [`scrub`] must).
fn url_password(url: &str) -> Option<String> {
    if let Ok(parsed) = url::Url::parse(url) {
        return parsed.password().map(|p| {
            percent_encoding::percent_decode_str(p)
                .decode_utf8_lossy()
                .into_owned()
        });
    }
    let rest = url.split_once("://")?.1;
    let userinfo = &rest[..rest.rfind('@')?];
    let (_, password) = userinfo.split_once(':')?;
    (!password.is_empty()).then(|| password.to_string())
}

/// `text` with every occurrence of `secret` (raw and percent-encoded) replaced by `***`.
fn scrub(text: &str, secret: Option<&str>) -> String {
    let Some(secret) = secret.filter(|s| !s.is_empty()) else {
        return text.to_string();
    };
    let encoded = percent_encoding::utf8_percent_encode(secret, percent_encoding::NON_ALPHANUMERIC)
        .to_string();
    text.replace(secret, "***").replace(&encoded, "***")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finished_phases_match_the_estimator() {
        for phase in FINISHED_PHASES {
            assert!(estimate::is_finished_phase(phase), "{phase}");
        }
        for phase in ["New", "InProgress", "Deleting", "Unknown", ""] {
            assert!(!FINISHED_PHASES.contains(&phase));
        }
    }

    #[test]
    fn like_wildcards_match_literally() {
        assert_eq!(escape_like("50%_a\\b"), "50\\%\\_a\\\\b");
        assert_eq!(escape_like("plain"), "plain");
    }

    #[test]
    fn chunks_split_on_repeated_ids_and_size() {
        let op = |id: &str| OperationRecord {
            id: id.to_string(),
            ..OperationRecord::default()
        };
        let ops = [op("a"), op("b"), op("a"), op("c")];
        let chunks = operation_chunks(ops.iter(), OPERATION_CHUNK);
        let ids: Vec<Vec<&str>> = chunks
            .iter()
            .map(|c| c.iter().map(|o| o.id.as_str()).collect())
            .collect();
        assert_eq!(ids, vec![vec!["a", "b"], vec!["a", "c"]]);
        let many: Vec<OperationRecord> = (0..1000).map(|i| op(&i.to_string())).collect();
        let sizes: Vec<usize> = operation_chunks(many.iter(), OPERATION_CHUNK)
            .iter()
            .map(Vec::len)
            .collect();
        assert_eq!(sizes, vec![400, 400, 200]);
        let sizes: Vec<usize> = operation_chunks(many.iter(), usize::MAX)
            .iter()
            .map(Vec::len)
            .collect();
        assert_eq!(sizes, vec![1000]);
    }

    #[test]
    fn array_literals_quote_every_text_and_escape_quotes_and_backslashes() {
        let mut texts = PgArray::new(4);
        texts.text(Some("plain"));
        texts.text(None);
        texts.text(Some("NULL"));
        texts.text(Some("a \"b\" \\c {d}, é"));
        texts.text(Some(""));
        assert_eq!(
            texts.finish(),
            r#"{"plain",NULL,"NULL","a \"b\" \\c {d}, é",""}"#
        );
        let mut ints = PgArray::new(3);
        ints.int(Some(-12));
        ints.int(None);
        ints.int(Some(i64::MAX));
        assert_eq!(ints.finish(), "{-12,NULL,9223372036854775807}");
        assert_eq!(PgArray::new(0).finish(), "{}");
    }

    #[test]
    fn placeholders_are_numbered_across_rows() {
        assert_eq!(
            values_placeholders(Backend::Postgres, 2, 2),
            "($1, $2), ($3, $4)"
        );
        assert_eq!(values_placeholders(Backend::Sqlite, 2, 2), "(?, ?), (?, ?)");
    }

    #[test]
    fn passwords_are_scrubbed_even_from_unparsable_urls() {
        let url = "postgres://nac:s3cr%t@db:notaport/history";
        let secret = url_password(url);
        assert_eq!(secret.as_deref(), Some("s3cr%t"));
        let text = scrub(&format!("cannot open {url}"), secret.as_deref());
        assert!(!text.contains("s3cr"), "{text}");
        let parsed = url_password("postgres://nac:p%40ss@db/history");
        assert_eq!(parsed.as_deref(), Some("p@ss"));
        assert_eq!(
            scrub("postgres://nac:p%40ss@db/history", parsed.as_deref()),
            "postgres://nac:***@db/history"
        );
    }
}
