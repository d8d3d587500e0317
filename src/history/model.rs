//! The history store's records: operations, their timeline facts, and the shapes of reads
//! (filters, pages, statistics, coverage, ETA). Plain values only.

use serde::{Deserialize, Serialize};

/// Milliseconds since the Unix epoch (UTC). Both backends store times this way, so the same SQL
/// works on Postgres and SQLite and ordering is exact.
pub type EpochMillis = i64;

/// What kind of operation a row is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperationKind {
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
    /// The permanent deletion of a backup (its Velero DeleteBackupRequest).
    Delete,
}

impl OperationKind {
    /// Every kind, in a stable order.
    pub const ALL: [OperationKind; 6] = [
        Self::Backup,
        Self::Restore,
        Self::BackupStorageLocation,
        Self::ScheduleRun,
        Self::Download,
        Self::Delete,
    ];

    /// The stored (and wire) value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Backup => "backup",
            Self::Restore => "restore",
            Self::BackupStorageLocation => "backup_storage_location",
            Self::ScheduleRun => "schedule_run",
            Self::Download => "download",
            Self::Delete => "delete",
        }
    }

    /// Parses a stored value.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Whether operations of this kind run through Velero's backup queue (their durations feed
    /// the ETA of a queued backup).
    pub fn is_backup_like(self) -> bool {
        matches!(self, Self::Backup | Self::ScheduleRun)
    }
}

impl std::fmt::Display for OperationKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One operation as the store keeps it: the latest known state of a tenant request and of the
/// Velero object made for it. Absent fields are "not known yet"; an upsert never replaces a known
/// value with an unknown one.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationRecord {
    /// Stable id: the tenant object's uid (for [`OperationKind::Delete`], derived from it).
    pub id: String,
    /// Tenant namespace: part of every read.
    pub namespace: String,
    /// UID of the tenant namespace the operation happened in (empty: not known yet). Every
    /// tenant read matches it as well as the name ([`TenantNamespace`]), so a namespace deleted
    /// and created again under the same name sees nothing of its predecessor; once known it
    /// never changes.
    pub namespace_uid: String,
    /// Kind.
    pub kind: Option<OperationKind>,
    /// Tenant object name.
    pub name: String,
    /// Tenant object uid.
    pub uid: String,
    /// Name of the Velero object (the NACUUID for backups and restores).
    pub velero_name: Option<String>,
    /// The object this one came from: a restore's backup, a schedule run's schedule, a
    /// download's backup, a deletion's backup.
    pub parent_name: Option<String>,
    /// Who asked for it, when it was created through the gateway.
    pub requester: Option<String>,
    /// When the tenant object was created.
    pub created_at: EpochMillis,
    /// When Velero started working on it.
    pub started_at: Option<EpochMillis>,
    /// When it reached a final phase.
    pub completed_at: Option<EpochMillis>,
    /// Most advanced phase seen (Velero's when there is a Velero object, else NAC's).
    pub phase: Option<String>,
    /// Rank of `phase` ([`crate::history::observe::phase_rank`]): a lower rank never replaces a
    /// higher one, so replayed or late events cannot move an operation backwards.
    pub phase_rank: i64,
    /// NAC's one-word phase (New, BackingOff, Created, Deleting).
    pub nac_phase: Option<String>,
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
    /// Latest published queue position (0 = not queued).
    pub queue_position: Option<i64>,
    /// When the tenant object disappeared from the cluster.
    pub deleted_at: Option<EpochMillis>,
}

impl OperationRecord {
    /// How long it ran (start to completion), when both are known.
    pub fn duration_ms(&self) -> Option<i64> {
        Some(self.completed_at? - self.started_at?).filter(|d| *d >= 0)
    }
}

/// A tenant namespace as it is now: its name and its UID. Every tenant read of the history
/// store takes one, and matches both: a namespace deleted and created again under the same name
/// has another UID, so it sees nothing its predecessor left (the rows stay, for the admin, until
/// retention purges them), and rows whose namespace UID is not known are never shown. The
/// gateway makes one only from an authorization (`Authorized::tenant`) and its namespace cache.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TenantNamespace {
    name: String,
    uid: String,
}

impl TenantNamespace {
    /// Namespace `name` with UID `uid`; `None` when either is empty (an unknown UID matches
    /// nothing).
    pub fn new(name: impl Into<String>, uid: impl Into<String>) -> Option<Self> {
        let (name, uid) = (name.into(), uid.into());
        (!name.is_empty() && !uid.is_empty()).then_some(TenantNamespace { name, uid })
    }

    /// The namespace's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The namespace's UID.
    pub fn uid(&self) -> &str {
        &self.uid
    }
}

impl std::fmt::Display for TenantNamespace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name, self.uid)
    }
}

/// Whether an operation created at `operation_created_at` in a namespace of some name can be
/// the operation of the namespace of that name created at `namespace_created_at` (whose deletion
/// was asked for at `deleting_since`, if it was): not when it is older than the namespace (it
/// was a predecessor's), nor when it is younger than the namespace's deletion (a terminating
/// namespace takes no new objects: it is a successor's). An unknown time never is.
pub fn namespace_may_own(
    namespace_created_at: EpochMillis,
    deleting_since: Option<EpochMillis>,
    operation_created_at: EpochMillis,
) -> bool {
    namespace_created_at > 0
        && operation_created_at > 0
        && operation_created_at >= namespace_created_at
        && deleting_since.is_none_or(|since| operation_created_at <= since)
}

/// A namespace that exists now, as the recorder lists it: what attributing rows recorded
/// without a namespace UID needs ([`crate::history::HistoryStore::attribute_namespaces`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamespaceIdentity {
    /// Name.
    pub name: String,
    /// UID.
    pub uid: String,
    /// Its `creationTimestamp`: an operation created before it cannot be its own.
    pub created_at: EpochMillis,
}

/// One entry of an operation's append-only timeline: an attribute took a value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transition {
    /// The operation.
    pub operation_id: String,
    /// Its namespace (every timeline read is namespace-scoped).
    pub namespace: String,
    /// When it happened (the object's own timestamp when it has one, else when observed).
    pub at: EpochMillis,
    /// What changed: `phase`, `veleroPhase`, `queuePosition`, `condition/<Type>`, `deleted`.
    pub attribute: String,
    /// The new value.
    pub value: String,
    /// A condition's reason.
    pub reason: Option<String>,
    /// A condition's message.
    pub message: Option<String>,
    /// Distinguishes repeats of the same attribute and value (a condition's
    /// lastTransitionTime); empty otherwise. (operation, attribute, value, dedup) is unique, so
    /// replays never duplicate rows.
    pub dedup: String,
}

/// A stored transition with its sequence number.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredTransition {
    /// Insertion order within the store.
    pub seq: i64,
    /// The transition.
    #[serde(flatten)]
    pub transition: Transition,
}

/// What the recorder hands the store: the operation's latest state and its new timeline facts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observation {
    /// Latest state.
    pub operation: OperationRecord,
    /// Facts to append (already-stored ones are ignored).
    pub transitions: Vec<Transition>,
}

/// Which operations a listing returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OperationFilter {
    /// Only these kinds (empty: all).
    pub kinds: Vec<OperationKind>,
    /// Only these phases (empty: all).
    pub phases: Vec<String>,
    /// Created at or after.
    pub since: Option<EpochMillis>,
    /// Created before.
    pub until: Option<EpochMillis>,
    /// Case-insensitive substring of the name, Velero name, requester or failure reason.
    pub text: Option<String>,
}

/// Keyset position: the (created_at, id) of the last row of the previous page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperationCursor {
    /// `created_at` of the last row seen.
    pub created_at: EpochMillis,
    /// `id` of the last row seen.
    pub id: String,
}

/// One page of operations, newest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OperationPage {
    /// The rows.
    pub items: Vec<OperationRecord>,
    /// Where the next page starts, when there is one.
    pub next: Option<OperationCursor>,
}

/// A time window for statistics: [from, to).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeWindow {
    /// Start (inclusive).
    pub from: EpochMillis,
    /// End (exclusive).
    pub to: EpochMillis,
}

/// Statistics of one namespace's operations of one kind created in a window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KindStats {
    /// The kind.
    pub kind: String,
    /// Operations counted.
    pub total: i64,
    /// Count per phase (operations with no phase yet are counted under "Unknown").
    pub by_phase: std::collections::BTreeMap<String, i64>,
    /// Completed / (finished ones), when any finished.
    pub success_rate: Option<f64>,
    /// Median duration (start to completion) of finished ones.
    pub p50_duration_ms: Option<i64>,
    /// 95th percentile duration.
    pub p95_duration_ms: Option<i64>,
    /// Sum of items handled.
    pub items_done: i64,
}

/// Statistics of one namespace in a window, per kind (kinds with no operations are left out).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NamespaceStats {
    /// The namespace.
    pub namespace: String,
    /// Window start.
    pub from: EpochMillis,
    /// Window end.
    pub to: EpochMillis,
    /// Per kind.
    pub kinds: Vec<KindStats>,
}

/// How well one namespace is protected.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    /// The namespace.
    pub namespace: String,
    /// Name of the newest backup (or schedule run) that Completed.
    pub last_successful_backup: Option<String>,
    /// When it completed.
    pub last_successful_backup_at: Option<EpochMillis>,
    /// Schedules whose newest finished run did not complete (Failed, PartiallyFailed,
    /// FailedValidation).
    pub failing_schedules: Vec<String>,
}

/// When a queued operation is expected to start and finish.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Eta {
    /// Expected wait before it starts.
    pub start_in_ms: i64,
    /// Expected time until it finishes.
    pub finish_in_ms: i64,
    /// How many past durations the estimate rests on.
    pub samples: usize,
}

/// A stored Idempotency-Key answer (see [`crate::history::HistoryStore::idempotency_begin`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdempotencyAnswer {
    /// HTTP status.
    pub status: u16,
    /// Content type.
    pub content_type: String,
    /// Body.
    pub body: Vec<u8>,
}

/// What the store says about a request carrying an Idempotency-Key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdempotencyState {
    /// First time (the key is now held as in flight): run it.
    Claimed,
    /// Another request with the same key and body is still running.
    InFlight,
    /// The same key was used with another body.
    Mismatch,
    /// Done before with this body: answer with this.
    Done(IdempotencyAnswer),
}

// ---------------------------------------------------------------------------------------------
// Backup manifests (seed 002)

/// Which backup operation a manifest belongs to: the operation (the NonAdminBackup's uid), its
/// tenant namespace and name, and the Velero Backup the contents were read from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestKey {
    /// The operation's id ([`OperationRecord::id`]).
    pub operation_id: String,
    /// Tenant namespace: part of every read.
    pub namespace: String,
    /// The NonAdminBackup's name.
    pub backup_name: String,
    /// The Velero Backup's name (the NACUUID).
    pub velero_name: String,
    /// The Velero Backup's uid (empty when unknown).
    pub velero_uid: String,
}

/// What the store says about a manifest without its items.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManifestSummary {
    /// The backup it describes.
    #[serde(flatten)]
    pub key: ManifestKey,
    /// Items in the manifest.
    pub item_count: i64,
    /// Items per kind, sorted by group then kind.
    pub counts_by_kind: Vec<crate::manifest::item::KindCount>,
    /// When it was built.
    pub built_at: EpochMillis,
    /// Format of the stored document
    /// ([`crate::manifest::export::MANIFEST_FORMAT_VERSION`] when this code wrote it).
    pub format_version: u32,
    /// Size of the encoded document, in bytes.
    pub encoded_size: i64,
}

/// A stored manifest: its summary and the document in the store's compact encoding (read it
/// with [`crate::manifest::export::decode_compact`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredManifest {
    /// The summary (`encoded_size` is the length of `encoded`; the store sets it).
    pub summary: ManifestSummary,
    /// The encoded document.
    pub encoded: Vec<u8>,
}

/// What storing a manifest did: manifests are built once, so a second put is a no-op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ManifestPut {
    /// Stored now.
    Stored,
    /// The operation already had one; nothing changed.
    AlreadyStored,
    /// No operation with that id, namespace and Velero backup name is known (not recorded
    /// yet, purged, or the key names another tenant's operation): nothing was stored.
    UnknownOperation,
}

/// A completed backup operation that has no manifest yet (the builder's backfill input).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestTarget {
    /// The operation's id.
    pub operation_id: String,
    /// Tenant namespace.
    pub namespace: String,
    /// The NonAdminBackup's name.
    pub backup_name: String,
    /// The Velero Backup's name.
    pub velero_name: String,
    /// Backup or ScheduleRun.
    pub kind: OperationKind,
    /// When it completed, when known.
    pub completed_at: Option<EpochMillis>,
}
