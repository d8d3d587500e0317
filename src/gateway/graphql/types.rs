//! GraphQL object types of what has no REST view of its own. Tenant objects wrap the cached
//! custom resources (typed fields for what dashboards show, `manifest` for the object as REST
//! presents it); the service's views (queue items, policy, descriptions …) are GraphQL
//! objects themselves. Fields that fetch more go through the service again, with the same
//! caller: `Backup.restores` and `Restore.backup` through DataLoaders, `describe` through
//! `describe_backup`/`describe_restore`.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_graphql::dataloader::DataLoader;
use async_graphql::{Context, Json, Object, SimpleObject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};
use serde_json::Value;

use super::errors::GqlResult;
use super::loaders::{BackupLoader, ObjectKey, RestoresOfBackupLoader};
use super::{caller_of, service_of};
use crate::api::nonadmin::{
    NonAdminBackup, NonAdminBackupStorageLocation, NonAdminRestore, NonAdminSchedule,
};
use crate::gateway::operations::PhaseCount;
use crate::gateway::resources::TenantKind;
use crate::gateway::service::{self, GatewayService};
use crate::gateway::store::present;

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
    ) -> async_graphql::Result<service::Description> {
        let (namespace, name) = (namespace_of(&*self.0), name_of(&*self.0));
        service_of(ctx)?
            .describe_backup(caller_of(ctx)?, namespace, name, details)
            .await
            .gql()
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
    ) -> async_graphql::Result<service::Description> {
        let (namespace, name) = (namespace_of(&*self.0), name_of(&*self.0));
        service_of(ctx)?
            .describe_restore(caller_of(ctx)?, namespace, name, details)
            .await
            .gql()
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

/// Verbs allowed on one resource.
#[derive(SimpleObject, Clone, Debug)]
pub struct ResourcePermissions {
    /// `backups`, `restores`, `storage-locations` or `schedules`.
    pub resource: String,
    /// Allowed verbs.
    pub verbs: Vec<String>,
}

/// The queue: the caller's namespace, or the cluster summary.
#[derive(SimpleObject, Clone, Debug)]
pub struct Queue {
    /// The caller's items in the namespace asked for (null when none was asked for).
    pub namespace: Option<service::NamespaceQueue>,
    /// Cluster totals (anonymous) and the caller's own items everywhere.
    pub cluster: service::ClusterQueue,
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
