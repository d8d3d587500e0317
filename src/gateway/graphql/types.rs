//! GraphQL object types. Tenant objects wrap the cached custom resources (typed fields for
//! what dashboards show, `manifest` for the object as REST presents it); everything else
//! mirrors the service's views. Fields that fetch more go through the service again, with the
//! same caller: `Backup.restores` and `Restore.backup` through DataLoaders, `describe` through
//! `describe_backup`/`describe_restore`.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_graphql::dataloader::DataLoader;
use async_graphql::{Context, Enum, Json, Object, SimpleObject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};
use serde_json::Value;

use super::errors::GqlResult;
use super::loaders::{BackupLoader, ObjectKey, RestoresOfBackupLoader};
use super::{RequestCaller, service_of};
use crate::api::nonadmin::{
    NonAdminBackup, NonAdminBackupStorageLocation, NonAdminRestore, NonAdminSchedule,
};
use crate::gateway::resources::{TenantKind, TenantResource};
use crate::gateway::service::{self, GatewayService};
use crate::gateway::store::present;

/// The four tenant resources.
#[derive(Enum, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResourceKind {
    /// NonAdminBackup.
    Backups,
    /// NonAdminRestore.
    Restores,
    /// NonAdminBackupStorageLocation.
    StorageLocations,
    /// NonAdminSchedule.
    Schedules,
}

impl From<ResourceKind> for TenantResource {
    fn from(kind: ResourceKind) -> Self {
        match kind {
            ResourceKind::Backups => TenantResource::Backups,
            ResourceKind::Restores => TenantResource::Restores,
            ResourceKind::StorageLocations => TenantResource::StorageLocations,
            ResourceKind::Schedules => TenantResource::Schedules,
        }
    }
}

impl From<TenantResource> for ResourceKind {
    fn from(resource: TenantResource) -> Self {
        match resource {
            TenantResource::Backups => ResourceKind::Backups,
            TenantResource::Restores => ResourceKind::Restores,
            TenantResource::StorageLocations => ResourceKind::StorageLocations,
            TenantResource::Schedules => ResourceKind::Schedules,
        }
    }
}

/// RFC 3339 text of a Kubernetes time.
pub fn time_text(time: Option<&Time>) -> Option<String> {
    time.map(|t| t.0.to_string())
}

/// The phase a dashboard shows: Velero's when there is one, else NAC's request phase.
pub fn display_phase<K: TenantKind>(object: &K) -> Option<String> {
    object
        .velero_phase()
        .or_else(|| object.request_phase().map(|p| p.as_str().to_string()))
}

/// Object metadata.
pub struct Metadata<'a>(&'a ObjectMeta);

#[Object]
impl Metadata<'_> {
    /// Name.
    async fn name(&self) -> Option<&str> {
        self.0.name.as_deref()
    }
    /// Namespace.
    async fn namespace(&self) -> Option<&str> {
        self.0.namespace.as_deref()
    }
    /// UID.
    async fn uid(&self) -> Option<&str> {
        self.0.uid.as_deref()
    }
    /// Resource version (for optimistic concurrency).
    async fn resource_version(&self) -> Option<&str> {
        self.0.resource_version.as_deref()
    }
    /// Spec generation.
    async fn generation(&self) -> Option<i64> {
        self.0.generation
    }
    /// Creation time (RFC 3339).
    async fn creation_timestamp(&self) -> Option<String> {
        time_text(self.0.creation_timestamp.as_ref())
    }
    /// When deletion was requested (RFC 3339).
    async fn deletion_timestamp(&self) -> Option<String> {
        time_text(self.0.deletion_timestamp.as_ref())
    }
    /// Labels.
    async fn labels(&self) -> Json<BTreeMap<String, String>> {
        Json(self.0.labels.clone().unwrap_or_default())
    }
    /// Annotations.
    async fn annotations(&self) -> Json<BTreeMap<String, String>> {
        Json(self.0.annotations.clone().unwrap_or_default())
    }
}

/// A status condition.
#[derive(SimpleObject, Clone, Debug)]
#[graphql(name = "Condition")]
pub struct ConditionView {
    /// Type (Accepted, Queued, Deleting, ClusterAdminApproved …).
    #[graphql(name = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Machine-readable reason.
    pub reason: String,
    /// Human-readable message.
    pub message: String,
    /// Last transition (RFC 3339).
    pub last_transition_time: Option<String>,
}

fn conditions(list: &[Condition]) -> Vec<ConditionView> {
    list.iter()
        .map(|c| ConditionView {
            type_: c.type_.clone(),
            status: c.status.clone(),
            reason: c.reason.clone(),
            message: c.message.clone(),
            last_transition_time: time_text(Some(&c.last_transition_time)),
        })
        .collect()
}

fn namespace_of<K: kube::Resource>(object: &K) -> &str {
    object.meta().namespace.as_deref().unwrap_or_default()
}

fn name_of<K: kube::Resource>(object: &K) -> &str {
    object.meta().name.as_deref().unwrap_or_default()
}

/// A NonAdminBackup.
#[derive(Clone)]
pub struct Backup(pub Arc<NonAdminBackup>);

#[Object]
impl Backup {
    /// Namespace.
    async fn namespace(&self) -> &str {
        namespace_of(&*self.0)
    }
    /// Name.
    async fn name(&self) -> &str {
        name_of(&*self.0)
    }
    /// Metadata.
    async fn metadata(&self) -> Metadata<'_> {
        Metadata(&self.0.metadata)
    }
    /// Velero's phase when there is one, else NAC's request phase.
    async fn phase(&self) -> Option<String> {
        display_phase(&*self.0)
    }
    /// NAC's request phase (New, BackingOff, Created, Deleting).
    async fn request_phase(&self) -> Option<&'static str> {
        self.0.request_phase().map(|p| p.as_str())
    }
    /// The Velero Backup's phase (New, InProgress, Completed, PartiallyFailed, Failed …).
    async fn velero_phase(&self) -> Option<String> {
        self.0.velero_phase()
    }
    /// The storage location asked for (none: the default).
    async fn storage_location(&self) -> Option<&str> {
        self.0.spec.backup_spec.storage_location.as_deref()
    }
    /// Whether permanent deletion was requested.
    async fn deletion_requested(&self) -> bool {
        self.0.spec.delete_backup == Some(true)
    }
    /// Errors counted by Velero.
    async fn errors(&self) -> Option<i64> {
        velero_backup_status(&self.0).and_then(|s| s.errors)
    }
    /// Warnings counted by Velero.
    async fn warnings(&self) -> Option<i64> {
        velero_backup_status(&self.0).and_then(|s| s.warnings)
    }
    /// When Velero started (RFC 3339).
    async fn started_at(&self) -> Option<String> {
        time_text(velero_backup_status(&self.0).and_then(|s| s.start_timestamp.as_ref()))
    }
    /// When Velero finished (RFC 3339).
    async fn completed_at(&self) -> Option<String> {
        time_text(velero_backup_status(&self.0).and_then(|s| s.completion_timestamp.as_ref()))
    }
    /// When the backup expires (RFC 3339).
    async fn expires_at(&self) -> Option<String> {
        time_text(velero_backup_status(&self.0).and_then(|s| s.expiration.as_ref()))
    }
    /// Conditions.
    async fn conditions(&self) -> Vec<ConditionView> {
        conditions(
            self.0
                .status
                .as_ref()
                .map(|s| s.conditions.as_slice())
                .unwrap_or_default(),
        )
    }
    /// The object as REST returns it (metadata, spec, status).
    async fn manifest(&self) -> Json<Value> {
        Json(present(&*self.0))
    }
    /// The restores made from this backup (needs `list` on restores).
    #[graphql(complexity = "10 * child_complexity")]
    async fn restores(&self, ctx: &Context<'_>) -> async_graphql::Result<Vec<Restore>> {
        let loader = ctx.data::<DataLoader<RestoresOfBackupLoader>>()?;
        let key = ObjectKey::new(namespace_of(&*self.0), name_of(&*self.0));
        match loader.load_one(key).await? {
            Some(result) => Ok(result.gql()?.into_iter().map(Restore).collect()),
            None => Ok(Vec::new()),
        }
    }
    /// `velero backup describe`; `details` also fetches the resource list (expensive).
    #[graphql(complexity = "if details { 50 + child_complexity } else { 5 + child_complexity }")]
    async fn describe(
        &self,
        ctx: &Context<'_>,
        #[graphql(default = false)] details: bool,
    ) -> async_graphql::Result<DescriptionView> {
        let caller = ctx.data::<RequestCaller>()?;
        Ok(DescriptionView(
            service_of(ctx)?
                .describe_backup(
                    &caller.0,
                    namespace_of(&*self.0),
                    name_of(&*self.0),
                    details,
                )
                .await
                .gql()?,
        ))
    }
}

fn velero_backup_status(nab: &NonAdminBackup) -> Option<&crate::api::velero::BackupStatus> {
    nab.status.as_ref()?.velero_backup.as_ref()?.status.as_ref()
}

/// A NonAdminRestore.
#[derive(Clone)]
pub struct Restore(pub Arc<NonAdminRestore>);

#[Object]
impl Restore {
    /// Namespace.
    async fn namespace(&self) -> &str {
        namespace_of(&*self.0)
    }
    /// Name.
    async fn name(&self) -> &str {
        name_of(&*self.0)
    }
    /// Metadata.
    async fn metadata(&self) -> Metadata<'_> {
        Metadata(&self.0.metadata)
    }
    /// Velero's phase when there is one, else NAC's request phase.
    async fn phase(&self) -> Option<String> {
        display_phase(&*self.0)
    }
    /// NAC's request phase.
    async fn request_phase(&self) -> Option<&'static str> {
        self.0.request_phase().map(|p| p.as_str())
    }
    /// The Velero Restore's phase.
    async fn velero_phase(&self) -> Option<String> {
        self.0.velero_phase()
    }
    /// Name of the NonAdminBackup restored from.
    async fn backup_name(&self) -> Option<&str> {
        self.0.spec.restore_spec.backup_name.as_deref()
    }
    /// The NonAdminBackup restored from (null when it is gone; needs `list` on backups).
    #[graphql(complexity = "2 + child_complexity")]
    async fn backup(&self, ctx: &Context<'_>) -> async_graphql::Result<Option<Backup>> {
        let Some(backup_name) = self
            .0
            .spec
            .restore_spec
            .backup_name
            .as_deref()
            .filter(|n| !n.is_empty())
        else {
            return Ok(None);
        };
        let loader = ctx.data::<DataLoader<BackupLoader>>()?;
        match loader
            .load_one(ObjectKey::new(namespace_of(&*self.0), backup_name))
            .await?
        {
            Some(result) => Ok(Some(Backup(result.gql()?))),
            None => Ok(None),
        }
    }
    /// Conditions.
    async fn conditions(&self) -> Vec<ConditionView> {
        conditions(
            self.0
                .status
                .as_ref()
                .map(|s| s.conditions.as_slice())
                .unwrap_or_default(),
        )
    }
    /// The object as REST returns it.
    async fn manifest(&self) -> Json<Value> {
        Json(present(&*self.0))
    }
    /// `velero restore describe`; `details` also fetches the resource list (expensive).
    #[graphql(complexity = "if details { 50 + child_complexity } else { 5 + child_complexity }")]
    async fn describe(
        &self,
        ctx: &Context<'_>,
        #[graphql(default = false)] details: bool,
    ) -> async_graphql::Result<DescriptionView> {
        let caller = ctx.data::<RequestCaller>()?;
        Ok(DescriptionView(
            service_of(ctx)?
                .describe_restore(
                    &caller.0,
                    namespace_of(&*self.0),
                    name_of(&*self.0),
                    details,
                )
                .await
                .gql()?,
        ))
    }
}

/// A NonAdminBackupStorageLocation.
#[derive(Clone)]
pub struct StorageLocation(pub Arc<NonAdminBackupStorageLocation>);

#[Object]
impl StorageLocation {
    /// Namespace.
    async fn namespace(&self) -> &str {
        namespace_of(&*self.0)
    }
    /// Name.
    async fn name(&self) -> &str {
        name_of(&*self.0)
    }
    /// Metadata.
    async fn metadata(&self) -> Metadata<'_> {
        Metadata(&self.0.metadata)
    }
    /// Velero's phase (Available, Unavailable) when there is one, else NAC's request phase.
    async fn phase(&self) -> Option<String> {
        display_phase(&*self.0)
    }
    /// NAC's request phase.
    async fn request_phase(&self) -> Option<&'static str> {
        self.0.request_phase().map(|p| p.as_str())
    }
    /// Velero's BackupStorageLocation phase.
    async fn velero_phase(&self) -> Option<String> {
        self.0.velero_phase()
    }
    /// Approval state: Approved, Pending, Rejected or NotRequired.
    async fn approval(&self) -> &'static str {
        GatewayService::approval_state(&self.0)
    }
    /// Object storage provider (aws, gcp, azure …).
    async fn provider(&self) -> &str {
        &self.0.spec.backup_storage_location_spec.provider
    }
    /// Conditions.
    async fn conditions(&self) -> Vec<ConditionView> {
        conditions(
            self.0
                .status
                .as_ref()
                .map(|s| s.conditions.as_slice())
                .unwrap_or_default(),
        )
    }
    /// The object as REST returns it.
    async fn manifest(&self) -> Json<Value> {
        Json(present(&*self.0))
    }
}

/// A NonAdminSchedule.
#[derive(Clone)]
pub struct Schedule(pub Arc<NonAdminSchedule>);

#[Object]
impl Schedule {
    /// Namespace.
    async fn namespace(&self) -> &str {
        namespace_of(&*self.0)
    }
    /// Name.
    async fn name(&self) -> &str {
        name_of(&*self.0)
    }
    /// Metadata.
    async fn metadata(&self) -> Metadata<'_> {
        Metadata(&self.0.metadata)
    }
    /// Velero's phase when there is one, else NAC's request phase.
    async fn phase(&self) -> Option<String> {
        display_phase(&*self.0)
    }
    /// NAC's request phase.
    async fn request_phase(&self) -> Option<&'static str> {
        self.0.request_phase().map(|p| p.as_str())
    }
    /// Cron expression.
    async fn schedule(&self) -> &str {
        &self.0.spec.schedule
    }
    /// Whether it is paused.
    async fn paused(&self) -> bool {
        self.0.spec.paused == Some(true)
    }
    /// Next run (RFC 3339).
    async fn next_run(&self) -> Option<String> {
        time_text(self.0.status.as_ref().and_then(|s| s.next_run.as_ref()))
    }
    /// Name of the last NonAdminBackup it made.
    async fn last_backup_name(&self) -> Option<&str> {
        self.0
            .status
            .as_ref()
            .and_then(|s| s.last_backup.as_ref())
            .map(|b| b.name.as_str())
    }
    /// Conditions.
    async fn conditions(&self) -> Vec<ConditionView> {
        conditions(
            self.0
                .status
                .as_ref()
                .map(|s| s.conditions.as_slice())
                .unwrap_or_default(),
        )
    }
    /// The object as REST returns it.
    async fn manifest(&self) -> Json<Value> {
        Json(present(&*self.0))
    }
}

/// `velero backup|restore describe --details` for the tenant.
pub struct DescriptionView(pub service::Description);

#[Object(name = "Description")]
impl DescriptionView {
    /// NonAdminBackup or NonAdminRestore.
    async fn kind(&self) -> &str {
        &self.0.kind
    }
    /// Namespace.
    async fn namespace(&self) -> &str {
        &self.0.namespace
    }
    /// Name.
    async fn name(&self) -> &str {
        &self.0.name
    }
    /// NAC's request phase.
    async fn request_phase(&self) -> Option<&str> {
        self.0.request_phase.as_deref()
    }
    /// Velero's phase.
    async fn velero_phase(&self) -> Option<&str> {
        self.0.velero_phase.as_deref()
    }
    /// Position in the Velero queue while pending or running.
    async fn queue_position(&self) -> Option<u64> {
        self.0.queue_position
    }
    /// Expected start and finish while pending or running (from the history).
    async fn eta(&self) -> Option<QueueEta> {
        self.0.eta.map(Into::into)
    }
    /// Conditions (JSON).
    async fn conditions(&self) -> Json<Vec<Value>> {
        Json(self.0.conditions.clone())
    }
    /// The spec Velero runs with.
    async fn effective_spec(&self) -> Json<Value> {
        Json(self.0.effective_spec.clone())
    }
    /// Items done and total.
    async fn progress(&self) -> Json<Value> {
        Json(self.0.progress.clone())
    }
    /// When Velero started.
    async fn started(&self) -> Option<&str> {
        self.0.started.as_deref()
    }
    /// When Velero finished.
    async fn completed(&self) -> Option<&str> {
        self.0.completed.as_deref()
    }
    /// When the backup expires.
    async fn expiration(&self) -> Option<&str> {
        self.0.expiration.as_deref()
    }
    /// Errors counted by Velero.
    async fn errors(&self) -> i64 {
        self.0.errors
    }
    /// Warnings counted by Velero.
    async fn warnings(&self) -> i64 {
        self.0.warnings
    }
    /// Why it failed.
    async fn failure_reason(&self) -> Option<&str> {
        self.0.failure_reason.as_deref()
    }
    /// Why validation failed.
    async fn validation_errors(&self) -> &[String] {
        &self.0.validation_errors
    }
    /// Permanent deletion (backups).
    async fn deletion(&self) -> Option<DeletionInfo> {
        self.0.deletion.as_ref().map(|d| DeletionInfo {
            requested: d.requested,
            phase: d.phase.clone(),
            errors: d.errors.clone(),
        })
    }
    /// The resources backed up or restored (with `details`).
    async fn resource_list(&self) -> Option<Json<Value>> {
        self.0.resource_list.clone().map(Json)
    }
    /// Why the resource list is missing although asked for.
    async fn resource_list_unavailable(&self) -> Option<&str> {
        self.0.resource_list_unavailable.as_deref()
    }
}

/// Deletion state of a backup.
#[derive(SimpleObject, Clone, Debug)]
pub struct DeletionInfo {
    /// Whether permanent deletion was requested.
    pub requested: bool,
    /// Phase of the Velero DeleteBackupRequest.
    pub phase: Option<String>,
    /// Errors of the deletion attempts.
    pub errors: Vec<String>,
}

/// Verbs allowed on one resource.
#[derive(SimpleObject, Clone, Debug)]
pub struct ResourcePermissions {
    /// `backups`, `restores`, `storage-locations` or `schedules`.
    pub resource: String,
    /// Allowed verbs.
    pub verbs: Vec<String>,
}

/// One item of a queue view.
#[derive(SimpleObject, Clone, Debug)]
pub struct QueueItem {
    /// `backup` or `restore`.
    pub kind: String,
    /// Namespace of the tenant object.
    pub namespace: String,
    /// Name of the tenant object.
    pub name: String,
    /// Velero phase (none: not started).
    pub phase: Option<String>,
    /// `pending` or `running`.
    pub state: String,
    /// 1-based position in its queue.
    pub position: u64,
    /// Estimated seconds until it finishes (once there is history).
    pub eta_seconds: Option<u64>,
    /// Expected start and finish from the durations of the namespace's recent comparable
    /// operations (backups and schedule runs for a backup, restores for a restore); null with
    /// too few of them, or when the history is unavailable.
    pub eta: Option<QueueEta>,
}

/// When a queued operation is expected to start and finish.
#[derive(SimpleObject, Clone, Copy, Debug)]
pub struct QueueEta {
    /// Expected wait before it starts, in seconds.
    pub start_in_seconds: u64,
    /// Expected time until it finishes, in seconds.
    pub finish_in_seconds: u64,
    /// How many past durations the estimate rests on.
    pub samples: u64,
}

impl From<crate::gateway::operations::QueueEta> for QueueEta {
    fn from(eta: crate::gateway::operations::QueueEta) -> Self {
        QueueEta {
            start_in_seconds: eta.start_in_seconds,
            finish_in_seconds: eta.finish_in_seconds,
            samples: eta.samples,
        }
    }
}

impl From<service::QueueItem> for QueueItem {
    fn from(item: service::QueueItem) -> Self {
        QueueItem {
            kind: item.kind,
            namespace: item.namespace,
            name: item.name,
            phase: item.phase,
            state: item.state,
            position: item.position,
            eta_seconds: item.eta_seconds,
            eta: item.eta.map(Into::into),
        }
    }
}

/// The caller's items in one namespace.
#[derive(SimpleObject, Clone, Debug)]
pub struct NamespaceQueue {
    /// The namespace.
    pub namespace: String,
    /// Pending and running items, in queue order.
    pub items: Vec<QueueItem>,
}

/// Anonymous counts of one queue.
#[derive(SimpleObject, Clone, Debug)]
pub struct QueueCounts {
    /// Waiting to start (every tenant's).
    pub pending: u64,
    /// Being worked on.
    pub running: u64,
    /// Mean duration of recent finished operations, in seconds.
    pub mean_duration_seconds: Option<f64>,
}

impl From<service::QueueCounts> for QueueCounts {
    fn from(counts: service::QueueCounts) -> Self {
        QueueCounts {
            pending: counts.pending,
            running: counts.running,
            mean_duration_seconds: counts.mean_duration_seconds,
        }
    }
}

/// The cluster's queues: other tenants only as counts, the caller's own items by name.
#[derive(SimpleObject, Clone, Debug)]
pub struct ClusterQueue {
    /// Velero Backups.
    pub backups: QueueCounts,
    /// Velero Restores.
    pub restores: QueueCounts,
    /// The caller's own pending and running items.
    pub mine: Vec<QueueItem>,
}

/// The queue: the caller's namespace, or the cluster summary.
#[derive(SimpleObject, Clone, Debug)]
pub struct Queue {
    /// The caller's items in the namespace asked for (null when none was asked for).
    pub namespace: Option<NamespaceQueue>,
    /// Cluster totals (anonymous) and the caller's own items everywhere.
    pub cluster: ClusterQueue,
}

/// Admin rules for one kind of spec, as field path → value.
#[derive(SimpleObject, Clone, Debug)]
pub struct Rules {
    /// Values the tenant must use.
    pub enforced: Json<BTreeMap<String, Value>>,
    /// Values used when the tenant sets none.
    pub defaults: Json<BTreeMap<String, Value>>,
    /// Largest values allowed.
    pub maximum: Json<BTreeMap<String, Value>>,
    /// Allow-lists.
    pub allowed: Json<BTreeMap<String, Vec<Value>>>,
}

impl From<service::RulesView> for Rules {
    fn from(view: service::RulesView) -> Self {
        Rules {
            enforced: Json(view.enforced),
            defaults: Json(view.defaults),
            maximum: Json(view.maximum),
            allowed: Json(view.allowed),
        }
    }
}

/// The admin policy in force in a namespace.
#[derive(SimpleObject, Clone, Debug)]
pub struct Policy {
    /// The namespace.
    pub namespace: String,
    /// Rules for `spec.backupSpec`.
    pub backup: Rules,
    /// Rules for `spec.restoreSpec`.
    pub restore: Rules,
    /// Rules for `spec.backupStorageLocationSpec`.
    pub storage_location: Rules,
    /// Whether a new storage location waits for the administrator's approval.
    pub require_approval_for_storage_locations: bool,
    /// Restrictions that always apply.
    pub restrictions: Vec<String>,
}

impl From<service::PolicyView> for Policy {
    fn from(view: service::PolicyView) -> Self {
        Policy {
            namespace: view.namespace,
            backup: view.backup.into(),
            restore: view.restore.into(),
            storage_location: view.storage_location.into(),
            require_approval_for_storage_locations: view.require_approval_for_storage_locations,
            restrictions: view.restrictions,
        }
    }
}

/// What a delete did.
#[derive(SimpleObject, Clone, Debug)]
pub struct DeleteOutcome {
    /// Kind of the object.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// True when the backup data in object storage is deleted too (backups always).
    pub permanent: bool,
    /// What happens now.
    pub message: String,
}

impl From<service::DeleteOutcome> for DeleteOutcome {
    fn from(outcome: service::DeleteOutcome) -> Self {
        DeleteOutcome {
            kind: outcome.kind,
            name: outcome.name,
            permanent: outcome.permanent,
            message: outcome.message,
        }
    }
}

/// How many objects are in one phase.
#[derive(SimpleObject, Clone, Debug, PartialEq, Eq)]
pub struct PhaseCount {
    /// The phase (Velero's when there is one, else NAC's; `Unknown` before either).
    pub phase: String,
    /// How many.
    pub count: u64,
}

/// Counts by phase in one namespace; a resource the caller may not list is null.
#[derive(SimpleObject, Clone, Debug)]
pub struct NamespacePhaseCounts {
    /// The namespace.
    pub namespace: String,
    /// Backups by phase.
    pub backups: Option<Vec<PhaseCount>>,
    /// Restores by phase.
    pub restores: Option<Vec<PhaseCount>>,
    /// Storage locations by phase.
    pub storage_locations: Option<Vec<PhaseCount>>,
    /// Schedules by phase.
    pub schedules: Option<Vec<PhaseCount>>,
}

/// Who the caller is.
#[derive(SimpleObject, Clone, Debug)]
pub struct Viewer {
    /// Username as the cluster knows it.
    pub username: String,
    /// Groups.
    pub groups: Vec<String>,
}

/// The state of a namespace's place in the shared backup pool, as its tenants see it.
#[derive(Enum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SharedStorageState {
    /// Being set up (no bucket assigned yet, or the location is not validated yet).
    Provisioning,
    /// Every shared bucket is full; backups wait until an administrator adds room.
    WaitingForCapacity,
    /// Backups without a storage location of their own go here.
    Ready,
    /// The shared storage cannot be reached right now; backups wait.
    Unavailable,
    /// The namespace was deleted; its backups are kept until `purgeAfter`.
    Retained,
    /// The backups are being deleted.
    Purging,
}

impl From<crate::gateway::shared_storage::SharedStorageState> for SharedStorageState {
    fn from(state: crate::gateway::shared_storage::SharedStorageState) -> Self {
        use crate::gateway::shared_storage::SharedStorageState as S;
        match state {
            S::Provisioning => SharedStorageState::Provisioning,
            S::WaitingForCapacity => SharedStorageState::WaitingForCapacity,
            S::Ready => SharedStorageState::Ready,
            S::Unavailable => SharedStorageState::Unavailable,
            S::Retained => SharedStorageState::Retained,
            S::Purging => SharedStorageState::Purging,
        }
    }
}

/// A namespace's place in the administrator's shared backup pool: `configured` false (and
/// nothing else) when the cluster has no pool. Never names a bucket, provider, prefix or
/// another namespace.
#[derive(SimpleObject, Clone, Debug, PartialEq, Eq)]
pub struct SharedStorage {
    /// Whether the cluster has a shared backup pool (at least one BackupBucket).
    pub configured: bool,
    /// The state of the namespace's place in the pool (when configured).
    pub state: Option<SharedStorageState>,
    /// What the state means for the namespace's backups (when configured).
    pub message: Option<String>,
    /// When the backups of a deleted namespace will be deleted (RFC 3339).
    pub purge_after: Option<String>,
}

impl From<crate::gateway::shared_storage::SharedStorage> for SharedStorage {
    fn from(view: crate::gateway::shared_storage::SharedStorage) -> Self {
        SharedStorage {
            configured: view.configured,
            state: view.state.map(Into::into),
            message: view.message,
            purge_after: view.purge_after,
        }
    }
}
