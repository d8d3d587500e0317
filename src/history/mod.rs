//! The history store: every operation and transition NAC sees, kept after the custom resources
//! are gone. The cluster is the source of truth; this is a cache that outlives it.
//!
//! - [`model`]: the records and the shapes of reads;
//! - [`observe`]: pure mapping of NAC and Velero objects to operations and timeline facts;
//! - [`estimate`]: pure statistics (percentiles, success rate) and the queue ETA estimator;
//! - [`cursor`]: keyset cursors for paging operations;
//! - [`sql`]: the SQL both backends share (sqlx `Any`, `$N` placeholders, times as epoch ms);
//! - [`postgres`] (production) and [`sqlite`] (embedded default) — the two [`HistoryStore`]s;
//! - [`retention`]: the purge job;
//! - [`recorder`]: watches the cluster and feeds the store in batches, buffering while the
//!   database is down and reconciling from cluster state when it is back;
//! - [`manifests`]: builds each completed backup's manifest once (seed 002) from its contents
//!   and keeps it in the store.
//!
//! Every read takes a [`TenantNamespace`] — the namespace's name *and* its UID: there is no
//! query that spans tenants except the recorder's and the manifest builder's own bookkeeping,
//! and a namespace deleted and created again under the same name (another UID) reads nothing
//! its predecessor left. The predecessor's rows stay until retention purges them; the admin
//! reads them in the database (`operations.namespace_uid`). Rows recorded before NAC kept the
//! UID are attributed by the recorder when it starts (see
//! [`HistoryStore::attribute_namespaces`]); those it cannot attribute are never shown to a
//! tenant.

pub mod cursor;
pub mod estimate;
pub mod manifests;
pub mod model;
pub mod observe;
pub mod postgres;
pub mod reachability;
pub mod recorder;
pub mod retention;
pub mod sql;
pub mod sqlite;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

pub use model::*;

/// A boxed future, so [`HistoryStore`] can be used as `dyn`.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, HistoryError>> + Send + 'a>>;

/// Errors of the history store.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The database URL is not one we support.
    #[error("unsupported database URL {0:?}: use postgres://… or sqlite://…")]
    UnsupportedUrl(String),
    /// The database cannot be reached (down, refused, timed out). Callers may retry.
    #[error("history database unavailable: {0}")]
    Unavailable(String),
    /// Migrations failed.
    #[error("history database migration failed: {0}")]
    Migration(String),
    /// A query failed for another reason.
    #[error("history database error: {0}")]
    Database(String),
    /// Input the store refuses (bad cursor, bad window, too long text).
    #[error("{0}")]
    InvalidInput(String),
}

impl HistoryError {
    /// Whether retrying later may succeed (the database was unreachable).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Self::Unavailable(_))
    }
}

/// Which database a store runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// Postgres (production).
    Postgres,
    /// SQLite (embedded default).
    Sqlite,
}

impl Backend {
    /// The backend a database URL names.
    pub fn from_url(url: &str) -> Result<Self, HistoryError> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(Self::Postgres)
        } else if url.starts_with("sqlite:") {
            Ok(Self::Sqlite)
        } else {
            Err(HistoryError::UnsupportedUrl(redact_url(url)))
        }
    }
}

/// A database URL with any password replaced, fit for logs and errors.
pub fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => url.to_string(),
    }
}

/// The history store. Every read is scoped to one namespace: its name and its UID.
pub trait HistoryStore: Send + Sync + std::fmt::Debug {
    /// Which database this is.
    fn backend(&self) -> Backend;

    /// Applies pending migrations (idempotent).
    fn migrate(&self) -> StoreFuture<'_, ()>;

    /// Records a batch in one transaction: upserts each operation (known values are never
    /// replaced by unknown ones, a phase never by a lower-ranked one, the requester never
    /// overwritten) and appends its transitions, ignoring ones already stored. Returns how many
    /// transitions were new.
    fn record(&self, batch: Vec<Observation>) -> StoreFuture<'_, u64>;

    /// Records who asked for an operation (from a gateway write). Creates the row when the
    /// recorder has not seen the object yet; never replaces an existing requester.
    fn note_requester(&self, operation: OperationRecord, requester: String) -> StoreFuture<'_, ()>;

    /// Ids of operations the store believes still exist in the cluster (no `deleted_at`), with
    /// their kind: the recorder marks the ones the cluster no longer has.
    fn live_operation_ids(&self) -> StoreFuture<'_, Vec<(String, OperationKind)>>;

    /// Marks operations deleted at `at` (and appends a `deleted` transition), unless already.
    fn mark_deleted(&self, ids: Vec<String>, at: EpochMillis) -> StoreFuture<'_, u64>;

    /// Gives operations recorded without a namespace UID the UID of the namespace of their
    /// name among `namespaces` (those that exist now), when that namespace was created no later
    /// than the operation: a namespace created after an operation cannot own it. Returns the
    /// rows attributed. The recorder's bookkeeping (spans namespaces).
    fn attribute_namespaces(&self, namespaces: Vec<NamespaceIdentity>) -> StoreFuture<'_, u64>;

    /// One operation of a namespace.
    fn operation<'a>(
        &'a self,
        tenant: &'a TenantNamespace,
        id: &'a str,
    ) -> StoreFuture<'a, Option<OperationRecord>>;

    /// One operation of a namespace found by kind and tenant object name (newest first when
    /// the name was reused).
    fn operation_by_name<'a>(
        &'a self,
        tenant: &'a TenantNamespace,
        kind: OperationKind,
        name: &'a str,
    ) -> StoreFuture<'a, Option<OperationRecord>>;

    /// The timeline of one operation of a namespace, oldest first (empty when there is no such
    /// operation in that namespace).
    fn timeline<'a>(
        &'a self,
        tenant: &'a TenantNamespace,
        id: &'a str,
    ) -> StoreFuture<'a, Vec<StoredTransition>>;

    /// A namespace's operations, newest first, filtered, `limit` per page after `after`.
    fn operations<'a>(
        &'a self,
        tenant: &'a TenantNamespace,
        filter: &'a OperationFilter,
        after: Option<&'a OperationCursor>,
        limit: u32,
    ) -> StoreFuture<'a, OperationPage>;

    /// Statistics of a namespace's operations created in `window`.
    fn stats<'a>(
        &'a self,
        tenant: &'a TenantNamespace,
        window: TimeWindow,
    ) -> StoreFuture<'a, NamespaceStats>;

    /// Durations (ms) of the `limit` most recently completed operations of `kinds` in a
    /// namespace, newest first: the ETA estimator's input.
    fn recent_durations<'a>(
        &'a self,
        tenant: &'a TenantNamespace,
        kinds: &'a [OperationKind],
        limit: u32,
    ) -> StoreFuture<'a, Vec<i64>>;

    /// Coverage of each of `namespaces` (one entry each, in the order given).
    fn coverage<'a>(&'a self, namespaces: &'a [TenantNamespace]) -> StoreFuture<'a, Vec<Coverage>>;

    /// Deletes operations (and their timelines) that finished or were deleted before
    /// `cutoff`, and expired idempotency records. Returns operations removed.
    fn purge(&self, cutoff: EpochMillis) -> StoreFuture<'_, u64>;

    /// Starts a request with an Idempotency-Key in the namespace whose UID is
    /// `namespace_uid` (empty when it does not exist): claims the key (caller, path, key) for
    /// `body_digest` unless a live record of that namespace exists; an expired record, or one
    /// given in another namespace of the same name, is replaced (never answered with).
    fn idempotency_begin<'a>(
        &'a self,
        caller: &'a str,
        path: &'a str,
        key: &'a str,
        namespace_uid: &'a str,
        body_digest: &'a [u8],
        in_flight_ttl_ms: i64,
    ) -> StoreFuture<'a, IdempotencyState>;

    /// Stores the answer of a key claimed in the namespace with UID `namespace_uid`, kept for
    /// `ttl_ms`.
    fn idempotency_finish<'a>(
        &'a self,
        caller: &'a str,
        path: &'a str,
        key: &'a str,
        namespace_uid: &'a str,
        answer: IdempotencyAnswer,
        ttl_ms: i64,
    ) -> StoreFuture<'a, ()>;

    /// Releases a key claimed in the namespace with UID `namespace_uid` (the request did not
    /// complete; it may run again).
    fn idempotency_abandon<'a>(
        &'a self,
        caller: &'a str,
        path: &'a str,
        key: &'a str,
        namespace_uid: &'a str,
    ) -> StoreFuture<'a, ()>;

    /// Whether the database answers now.
    fn ping(&self) -> StoreFuture<'_, ()>;

    // -- Backup manifests (seed 002).

    /// Stores the manifest of a backup operation, once: the operation must be known with that
    /// id, namespace and Velero backup name (else [`ManifestPut::UnknownOperation`]), and an
    /// operation that has one keeps it ([`ManifestPut::AlreadyStored`]). `encoded_size` is
    /// taken from the bytes. The manifest goes when its operation is purged.
    fn put_manifest(&self, manifest: StoredManifest) -> StoreFuture<'_, ManifestPut>;

    /// The manifest of one operation of a namespace (absent when there is none, or the
    /// operation is another namespace's).
    fn manifest<'a>(
        &'a self,
        tenant: &'a TenantNamespace,
        operation_id: &'a str,
    ) -> StoreFuture<'a, Option<StoredManifest>>;

    /// The manifest of a namespace's NonAdminBackup (or schedule run) by name: that of the
    /// newest operation with the name when it was reused (absent while that one has none — an
    /// older namesake's contents are never shown for it).
    fn manifest_by_name<'a>(
        &'a self,
        tenant: &'a TenantNamespace,
        backup_name: &'a str,
    ) -> StoreFuture<'a, Option<StoredManifest>>;

    /// Summaries of a namespace's manifests, newest operation first.
    fn manifest_summaries<'a>(
        &'a self,
        tenant: &'a TenantNamespace,
    ) -> StoreFuture<'a, Vec<ManifestSummary>>;

    /// Completed (or partially failed) backup operations still in the cluster that have a
    /// Velero backup name and no manifest, newest completed first, at most `limit`: the
    /// builder's own bookkeeping (spans namespaces; never serve it to a tenant).
    fn manifests_missing(&self, limit: u32) -> StoreFuture<'_, Vec<ManifestTarget>>;
}

/// A shared store.
pub type SharedHistory = Arc<dyn HistoryStore>;

/// Opens the store a URL names (`postgres://…`, `sqlite://path?mode=rwc`) and applies
/// migrations.
pub async fn open(url: &str) -> Result<SharedHistory, HistoryError> {
    let store: SharedHistory = match Backend::from_url(url)? {
        Backend::Postgres => Arc::new(postgres::PostgresHistoryStore::connect(url).await?),
        Backend::Sqlite => Arc::new(sqlite::SqliteHistoryStore::connect(url).await?),
    };
    store.migrate().await?;
    Ok(store)
}

/// The SQLite URL of a file (created when missing).
pub fn sqlite_url_for(path: &std::path::Path) -> String {
    format!("sqlite://{}?mode=rwc", path.display())
}

/// Now, in epoch milliseconds.
pub fn now_millis() -> EpochMillis {
    chrono::Utc::now().timestamp_millis()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_choose_the_backend_and_passwords_never_leak() {
        assert_eq!(
            Backend::from_url("postgres://u:p@h/db").ok(),
            Some(Backend::Postgres)
        );
        assert_eq!(
            Backend::from_url("sqlite:///tmp/x.db?mode=rwc").ok(),
            Some(Backend::Sqlite)
        );
        let err = Backend::from_url("mysql://u:secret@h/db")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("unsupported"), "{err}");
        assert!(!err.contains("secret"), "{err}");
    }
}
