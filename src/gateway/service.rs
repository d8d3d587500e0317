//! The gateway's operations, independent of the transport: each takes the authenticated
//! [`Caller`], checks access with a SubjectAccessReview for exactly what it does, reads from the
//! watch caches or writes with the caller's own token, and returns typed results or a
//! [`GatewayError`]. REST (`rest/`) and GraphQL call these and only these.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde::Serialize;
use serde_json::{Value, json};

use crate::api::nonadmin::{
    NonAdminBackup, NonAdminBackupStorageLocation, NonAdminDownloadRequest, NonAdminPhase,
    NonAdminRestore, NonAdminSchedule, conditions,
};
use crate::api::velero::{BackupPhase, DownloadTargetKind, RestorePhase};
use crate::gateway::artifacts::{ArtifactFetcher, decompress};
use crate::gateway::auth::{
    AccessBudget, AccessCheck, Authenticator, Authorized, Authorizer, BearerToken, Caller,
    CheckError,
};
use crate::gateway::clients::SharedUserClients;
use crate::gateway::error::{FieldError, GatewayError, from_write_error};
use crate::gateway::operations::{HistoryCounters, QueueEta, operation_kind};
use crate::gateway::paging::{PageTokens, filter_digest};
use crate::gateway::resources::{TenantKind, TenantResource};
use crate::gateway::selector::LabelSelector;
use crate::gateway::store::{Cached, WatchCaches, present};
use crate::history::{OperationKind, SharedHistory};
use crate::policy::config::SpecKind;
use crate::policy::nacuuid::is_dns1123_subdomain;
use crate::policy::rules::SpecRules;
use crate::policy::{
    PolicyViolation, check_restore_source, validate_backup_spec, validate_bsl_spec,
    validate_restore_spec,
};
use crate::queue::{Activity, QueueKind};

/// Default page size of lists.
pub const DEFAULT_LIMIT: usize = 100;
/// Largest page size.
pub const MAX_LIMIT: usize = 500;
/// Verbs reported per resource in "my namespaces".
pub const REPORTED_VERBS: [&str; 6] = ["get", "list", "watch", "create", "patch", "delete"];

/// Settings of the service.
#[derive(Clone, Debug)]
pub struct ServiceConfig {
    /// Longest `wait` accepted.
    pub max_wait: Duration,
    /// How long an artifact download may take in all.
    pub artifact_timeout: Duration,
    /// How often a download request is looked at while waiting for its URL.
    pub artifact_poll: Duration,
    /// Distinct access checks one request may make when it fans out over namespaces ("my
    /// namespaces", phase counts, a stream's default scope); see [`AccessBudget`].
    pub review_budget: usize,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            max_wait: Duration::from_secs(600),
            artifact_timeout: Duration::from_secs(60),
            artifact_poll: Duration::from_millis(200),
            review_budget: crate::gateway::auth::budget::DEFAULT_REVIEW_BUDGET,
        }
    }
}

/// The answer of `GET /api/v1/namespaces`.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
pub struct NamespaceList {
    /// The namespaces the caller may use (may list backups in), by name.
    pub items: Vec<NamespaceAccess>,
    /// Present when more namespaces remain to be checked: pass it as `continue` for the next
    /// page. A page can hold fewer than `limit` items (even none) and still have one: one
    /// request checks at most a bounded number of namespaces.
    #[serde(rename = "continue", skip_serializing_if = "Option::is_none")]
    pub continue_token: Option<String>,
}

/// What a page of "my namespaces" asks for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NamespaceQuery {
    /// Most namespaces returned (default [`DEFAULT_LIMIT`], at most [`MAX_LIMIT`]).
    pub limit: Option<usize>,
    /// Continue token from the previous page.
    pub continue_token: Option<String>,
    /// Whether to report the permissions in each namespace (each costs 25 access checks); the
    /// names alone cost one check per namespace of the cluster.
    pub details: bool,
}

/// Access checks the permissions of one namespace take beyond the check that lists it.
pub const DETAIL_CHECKS: usize = REPORTED_VERBS.len() * TenantResource::ALL.len();

/// Purpose of the sealed `continue` tokens of "my namespaces".
const NAMESPACE_TOKEN: &str = "namespaces-continue";

/// What a namespace listing's `continue` token holds (sealed: the last namespace checked may
/// be one the caller may not see).
#[derive(serde::Serialize, serde::Deserialize)]
struct NamespaceCursor {
    /// The caller the token was issued to.
    user: String,
    /// The last namespace checked.
    after: String,
}

/// A namespace the caller may use and what they may do in it.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceAccess {
    /// The namespace.
    pub name: String,
    /// Allowed verbs per resource (`backups`, `restores`, `storage-locations`, `schedules`).
    pub permissions: BTreeMap<String, Vec<String>>,
    /// Whether the caller may download logs and results (create NonAdminDownloadRequests).
    pub can_download: bool,
}

/// List filters and paging.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListQuery {
    /// Request or Velero phase to keep (case-insensitive).
    pub phase: Option<String>,
    /// Label selector string.
    pub label_selector: Option<String>,
    /// Page size (default [`DEFAULT_LIMIT`], at most [`MAX_LIMIT`]).
    pub limit: Option<usize>,
    /// Continue token from the previous page.
    pub continue_token: Option<String>,
}

/// One page of a list.
#[derive(Clone, Debug)]
pub struct Page<K> {
    /// The objects.
    pub items: Vec<Arc<K>>,
    /// Token for the next page, when there is one.
    pub continue_token: Option<String>,
}

/// What a delete did.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
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

/// Downloadable artifacts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ArtifactKind {
    /// The Velero log.
    Log,
    /// Errors and warnings.
    Results,
    /// The list of resources backed up or restored.
    ResourceList,
}

impl ArtifactKind {
    fn target(self, resource: TenantResource) -> Option<DownloadTargetKind> {
        match (resource, self) {
            (TenantResource::Backups, ArtifactKind::Log) => Some(DownloadTargetKind::BackupLog),
            (TenantResource::Backups, ArtifactKind::Results) => {
                Some(DownloadTargetKind::BackupResults)
            }
            (TenantResource::Backups, ArtifactKind::ResourceList) => {
                Some(DownloadTargetKind::BackupResourceList)
            }
            (TenantResource::Restores, ArtifactKind::Log) => Some(DownloadTargetKind::RestoreLog),
            (TenantResource::Restores, ArtifactKind::Results) => {
                Some(DownloadTargetKind::RestoreResults)
            }
            (TenantResource::Restores, ArtifactKind::ResourceList) => {
                Some(DownloadTargetKind::RestoreResourceList)
            }
            _ => None,
        }
    }

    /// The content type of the decompressed artifact.
    pub fn content_type(self) -> &'static str {
        match self {
            ArtifactKind::Log => "text/plain; charset=utf-8",
            ArtifactKind::Results | ArtifactKind::ResourceList => "application/json",
        }
    }
}

/// One item of a queue view.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
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
    /// 1-based position in its queue (1: being served or next).
    pub position: u64,
    /// Estimated seconds until it finishes, from recent durations (once there is history).
    pub eta_seconds: Option<u64>,
    /// Expected start and finish from the durations of the namespace's recent comparable
    /// operations in the history (backups and schedule runs for a backup, restores for a
    /// restore); none with too few of them, or when the history is unavailable.
    pub eta: Option<QueueEta>,
}

/// The caller's items in one namespace.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceQueue {
    /// The namespace.
    pub namespace: String,
    /// Pending and running items, in queue order.
    pub items: Vec<QueueItem>,
}

/// Anonymous counts of one queue.
#[derive(Clone, Debug, Default, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueCounts {
    /// Waiting to start (every tenant's, and the admin's).
    pub pending: u64,
    /// Being worked on.
    pub running: u64,
    /// Mean duration of recent finished operations, in seconds.
    pub mean_duration_seconds: Option<f64>,
}

/// The cluster's queues: others only as counts, the caller's own items by name.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterQueue {
    /// Velero Backups.
    pub backups: QueueCounts,
    /// Velero Restores.
    pub restores: QueueCounts,
    /// The caller's own pending and running items, in the namespaces they may list.
    pub mine: Vec<QueueItem>,
}

/// Admin rules for one kind of spec, as field path → value.
#[derive(Clone, Debug, Default, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RulesView {
    /// Values the tenant must use (filled in when unset).
    #[schema(value_type = Object)]
    pub enforced: BTreeMap<String, Value>,
    /// Values used when the tenant sets none.
    #[schema(value_type = Object)]
    pub defaults: BTreeMap<String, Value>,
    /// Largest values allowed.
    #[schema(value_type = Object)]
    pub maximum: BTreeMap<String, Value>,
    /// Allow-lists.
    #[schema(value_type = Object)]
    pub allowed: BTreeMap<String, Vec<Value>>,
}

impl RulesView {
    fn of(rules: &SpecRules) -> Self {
        RulesView {
            enforced: rules
                .enforced()
                .iter()
                .map(|(path, value)| (path.to_string(), value.clone()))
                .collect(),
            defaults: rules
                .defaults()
                .iter()
                .map(|(path, value)| (path.to_string(), value.clone()))
                .collect(),
            maximum: rules
                .maxima()
                .iter()
                .map(|(path, maximum)| (path.to_string(), maximum.to_json()))
                .collect(),
            allowed: rules
                .allowed()
                .iter()
                .map(|(path, values)| (path.to_string(), values.clone()))
                .collect(),
        }
    }
}

/// The admin policy in force in a namespace.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyView {
    /// The namespace.
    pub namespace: String,
    /// Rules for `spec.backupSpec` (paths relative to it).
    pub backup: RulesView,
    /// Rules for `spec.restoreSpec`.
    pub restore: RulesView,
    /// Rules for `spec.backupStorageLocationSpec`.
    pub storage_location: RulesView,
    /// Whether a new storage location waits for the administrator's approval.
    pub require_approval_for_storage_locations: bool,
    /// Restrictions that always apply, whatever the administrator configured.
    pub restrictions: Vec<String>,
}

/// Deletion state of a backup.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeletionView {
    /// Whether permanent deletion was requested.
    pub requested: bool,
    /// Phase of the Velero DeleteBackupRequest.
    pub phase: Option<String>,
    /// Errors of the deletion attempts.
    pub errors: Vec<String>,
}

/// `velero backup describe --details` for a tenant's backup or restore.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Description {
    /// `NonAdminBackup` or `NonAdminRestore`.
    pub kind: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// NAC's request phase.
    pub request_phase: Option<String>,
    /// Velero's phase.
    pub velero_phase: Option<String>,
    /// Position in the Velero queue while pending or running.
    pub queue_position: Option<u64>,
    /// Expected start and finish while pending or running (from the history).
    pub eta: Option<QueueEta>,
    /// Conditions (Accepted, Queued, Deleting).
    #[schema(value_type = Vec<Object>)]
    pub conditions: Vec<Value>,
    /// The spec Velero runs with (the tenant's, with the administrator's values filled in).
    #[schema(value_type = Object)]
    pub effective_spec: Value,
    /// Items done and total.
    #[schema(value_type = Object)]
    pub progress: Value,
    /// When Velero started.
    pub started: Option<String>,
    /// When Velero finished.
    pub completed: Option<String>,
    /// When the backup expires.
    pub expiration: Option<String>,
    /// Errors counted by Velero.
    pub errors: i64,
    /// Warnings counted by Velero.
    pub warnings: i64,
    /// Why it failed.
    pub failure_reason: Option<String>,
    /// Why validation failed.
    pub validation_errors: Vec<String>,
    /// Permanent deletion (backups).
    pub deletion: Option<DeletionView>,
    /// The resources backed up or restored (with `details=true`, once finished).
    #[schema(value_type = Option<Object>)]
    pub resource_list: Option<Value>,
    /// Why the resource list is missing although asked for.
    pub resource_list_unavailable: Option<String>,
}

/// The gateway's operations.
pub struct GatewayService {
    caches: Arc<WatchCaches>,
    authn: Authenticator,
    authz: Authorizer,
    users: SharedUserClients,
    fetcher: Arc<dyn ArtifactFetcher>,
    pages: PageTokens,
    config: ServiceConfig,
    history: SharedHistory,
    history_counters: HistoryCounters,
    manifests: crate::gateway::manifests::ManifestState,
    /// The gateway's own client: reads what tenants may not (the shared backup pool).
    reader: kube::Client,
    /// Whether the cluster serves OpenShift projects (found by discovery at start).
    openshift_projects: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for GatewayService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayService")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn name_of<K: kube::Resource>(object: &K) -> String {
    object.meta().name.clone().unwrap_or_default()
}

fn time_text(
    time: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
) -> Option<String> {
    time.map(|t| t.0.to_string())
}

fn conditions_json(conditions: &[Condition]) -> Vec<Value> {
    conditions
        .iter()
        .map(|c| serde_json::to_value(c).unwrap_or(Value::Null))
        .collect()
}

/// Whether `object` reached a phase it will not leave on its own.
pub trait Terminal {
    /// True at a terminal phase.
    fn is_terminal(&self) -> bool;
}

impl Terminal for NonAdminBackup {
    fn is_terminal(&self) -> bool {
        let status = self.status.as_ref();
        status.and_then(|s| s.phase) == Some(NonAdminPhase::BackingOff)
            || status
                .and_then(|s| s.velero_backup.as_ref())
                .and_then(|v| v.status.as_ref())
                .and_then(|s| s.phase.as_ref())
                .is_some_and(BackupPhase::is_terminal)
    }
}

impl Terminal for NonAdminRestore {
    fn is_terminal(&self) -> bool {
        let status = self.status.as_ref();
        status.and_then(|s| s.phase) == Some(NonAdminPhase::BackingOff)
            || status
                .and_then(|s| s.velero_restore.as_ref())
                .and_then(|v| v.status.as_ref())
                .and_then(|s| s.phase.as_ref())
                .is_some_and(RestorePhase::is_terminal)
    }
}

impl Terminal for NonAdminBackupStorageLocation {
    fn is_terminal(&self) -> bool {
        let phase = self.status.as_ref().and_then(|s| s.phase);
        phase == Some(NonAdminPhase::BackingOff)
            || (phase == Some(NonAdminPhase::Created) && self.velero_phase().is_some())
    }
}

impl Terminal for NonAdminSchedule {
    fn is_terminal(&self) -> bool {
        matches!(
            self.status.as_ref().and_then(|s| s.phase),
            Some(NonAdminPhase::BackingOff | NonAdminPhase::Created)
        )
    }
}

/// A kind the gateway can create from a request body.
pub trait Creatable: Cached {
    /// Checks a new object against the restrictions and the admin policy.
    fn violations<'a>(
        &'a self,
        service: &'a GatewayService,
        caller: &'a Caller,
        namespace: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<Vec<PolicyViolation>, GatewayError>>;

    /// Turns a short-form body into the CR's JSON spec, when the kind has a shortcut.
    fn short_form_spec(_body: &serde_json::Map<String, Value>) -> Option<Value> {
        None
    }

    /// The spec used when a body has none.
    fn default_spec() -> Option<Value> {
        None
    }
}

fn rewrite_prefix(
    mut violations: Vec<PolicyViolation>,
    from: &str,
    to: &str,
) -> Vec<PolicyViolation> {
    for violation in &mut violations {
        if let Some(rest) = violation.field.strip_prefix(from) {
            violation.field = format!("{to}{rest}");
        }
        violation.message = violation.message.replace(from, to);
    }
    violations
}

impl Creatable for NonAdminBackup {
    fn violations<'a>(
        &'a self,
        service: &'a GatewayService,
        _caller: &'a Caller,
        namespace: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<Vec<PolicyViolation>, GatewayError>> {
        Box::pin(async move {
            let policy = service.caches.effective_policy(namespace);
            let mut violations = validate_backup_spec(namespace, &self.spec.backup_spec, &policy)
                .err()
                .unwrap_or_default();
            if let Some(location) = self.spec.backup_spec.storage_location.as_deref()
                && !location.is_empty()
                && service
                    .caches
                    .storage_locations
                    .get(namespace, location)
                    .is_none()
            {
                violations.push(PolicyViolation::new(
                    crate::policy::ViolationReason::Invalid,
                    "spec.backupSpec.storageLocation",
                    format!(
                        "NonAdminBackup spec.backupSpec.storageLocation {location:?} is not a NonAdminBackupStorageLocation of this namespace"
                    ),
                ));
            }
            if self.spec.delete_backup == Some(true) {
                violations.push(PolicyViolation::new(
                    crate::policy::ViolationReason::Invalid,
                    "spec.deleteBackup",
                    "NonAdminBackup spec.deleteBackup can only be set on an existing backup (DELETE it instead)",
                ));
            }
            Ok(violations)
        })
    }

    fn default_spec() -> Option<Value> {
        Some(json!({"backupSpec": {}}))
    }
}

impl Creatable for NonAdminRestore {
    fn violations<'a>(
        &'a self,
        service: &'a GatewayService,
        _caller: &'a Caller,
        namespace: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<Vec<PolicyViolation>, GatewayError>> {
        Box::pin(async move {
            let policy = service.caches.effective_policy(namespace);
            let mut violations = validate_restore_spec(namespace, &self.spec.restore_spec, &policy)
                .err()
                .unwrap_or_default();
            if let Some(backup_name) = self.spec.restore_spec.backup_name.as_deref()
                && !backup_name.is_empty()
            {
                match service.caches.backups.get(namespace, backup_name) {
                    None => violations.push(PolicyViolation::new(
                        crate::policy::ViolationReason::Invalid,
                        "spec.restoreSpec.backupName",
                        format!(
                            "NonAdminRestore spec.restoreSpec.backupName is invalid: NonAdminBackup {backup_name:?} not found in this namespace"
                        ),
                    )),
                    Some(backup) => {
                        let request_phase = backup.request_phase().map(NonAdminPhase::as_str);
                        let velero_phase = backup.velero_phase();
                        if let Err(violation) =
                            check_restore_source(request_phase, velero_phase.as_deref())
                        {
                            violations.push(violation);
                        }
                    }
                }
            }
            Ok(violations)
        })
    }

    fn short_form_spec(body: &serde_json::Map<String, Value>) -> Option<Value> {
        let backup_name = body.get("backupName")?;
        Some(json!({"restoreSpec": {"backupName": backup_name}}))
    }
}

impl Creatable for NonAdminBackupStorageLocation {
    fn violations<'a>(
        &'a self,
        service: &'a GatewayService,
        caller: &'a Caller,
        namespace: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<Vec<PolicyViolation>, GatewayError>> {
        Box::pin(async move {
            let policy = service.caches.effective_policy(namespace);
            let spec = &self.spec.backup_storage_location_spec;
            // Whether the credential Secret exists, asked with the caller's own token; when
            // the caller may not read Secrets the controller decides later.
            let secret_exists = match spec.credential.as_ref().map(|c| c.name.as_str()) {
                Some(name) if !name.is_empty() => {
                    let client = service.user_client(caller)?;
                    match Api::<Secret>::namespaced(client, namespace)
                        .get_opt(name)
                        .await
                    {
                        Ok(found) => found.is_some(),
                        Err(_) => true,
                    }
                }
                _ => true,
            };
            let mut violations = validate_bsl_spec(namespace, spec, &policy, secret_exists)
                .err()
                .unwrap_or_default();
            // A bucket of the shared backup pool is never a tenant's (seed 001): refused here,
            // before anything is created (the controller refuses it too). The pool is read
            // as the gateway; the refusal names only the caller's own field.
            let pool = service.pool_buckets().await?;
            if let Err(violation) = crate::policy::bsl::check_not_pool_bucket(spec, &pool) {
                violations.push(violation);
            }
            Ok(violations)
        })
    }
}

impl Creatable for NonAdminSchedule {
    fn violations<'a>(
        &'a self,
        service: &'a GatewayService,
        _caller: &'a Caller,
        namespace: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<Vec<PolicyViolation>, GatewayError>> {
        Box::pin(async move {
            let policy = service.caches.effective_policy(namespace);
            let mut violations = Vec::new();
            if let Err(error) = self.spec.schedule.parse::<croner::Cron>() {
                violations.push(PolicyViolation::new(
                    crate::policy::ViolationReason::Invalid,
                    "spec.schedule",
                    format!(
                        "NonAdminSchedule spec.schedule is not a valid cron expression: {error}"
                    ),
                ));
            }
            let template =
                validate_backup_spec(namespace, &self.spec.template.backup_spec, &policy)
                    .err()
                    .unwrap_or_default();
            violations.extend(rewrite_prefix(
                template,
                "spec.backupSpec",
                "spec.template.backupSpec",
            ));
            Ok(violations)
        })
    }
}

/// Builds the object a create request describes: the CR's own JSON, or the short forms
/// `"name"`, `{"name": …, "spec": {…}}` (plus per-kind shortcuts).
pub fn object_from_body<K: Creatable>(namespace: &str, body: &Value) -> Result<K, GatewayError> {
    let kind = K::RESOURCE.kind();
    let api_version = format!(
        "{}/{}",
        crate::api::nonadmin::GROUP,
        crate::api::nonadmin::VERSION
    );
    let mut metadata = serde_json::Map::new();
    let spec = match body {
        Value::String(name) => {
            metadata.insert("name".into(), Value::String(name.clone()));
            K::default_spec()
        }
        Value::Object(map)
            if map.contains_key("metadata")
                || map.contains_key("apiVersion")
                || map.contains_key("kind") =>
        {
            if let Some(given) = map.get("apiVersion")
                && given.as_str() != Some(api_version.as_str())
            {
                return Err(GatewayError::invalid_field(
                    "apiVersion",
                    format!("apiVersion must be {api_version}"),
                ));
            }
            if let Some(given) = map.get("kind")
                && given.as_str() != Some(kind)
            {
                return Err(GatewayError::invalid_field(
                    "kind",
                    format!("kind must be {kind}"),
                ));
            }
            let given = match map.get("metadata") {
                None => serde_json::Map::new(),
                Some(Value::Object(given)) => given.clone(),
                Some(_) => {
                    return Err(GatewayError::invalid_field(
                        "metadata",
                        "metadata must be an object",
                    ));
                }
            };
            if let Some(ns) = given.get("namespace")
                && ns.as_str() != Some(namespace)
            {
                return Err(GatewayError::invalid_field(
                    "metadata.namespace",
                    format!("metadata.namespace must be {namespace} (the namespace in the path)"),
                ));
            }
            for key in ["name", "generateName", "labels", "annotations"] {
                if let Some(value) = given.get(key) {
                    metadata.insert(key.into(), value.clone());
                }
            }
            map.get("spec").cloned().or_else(K::default_spec)
        }
        Value::Object(map) => {
            const SHORT_KEYS: &[&str] = &[
                "name",
                "generateName",
                "labels",
                "annotations",
                "spec",
                "backupName",
            ];
            if let Some(unknown) = map.keys().find(|key| !SHORT_KEYS.contains(&key.as_str())) {
                return Err(GatewayError::invalid_field(
                    unknown,
                    format!(
                        "unknown field {unknown:?}; send the {kind} manifest or {{\"name\": …, \"spec\": {{…}}}}"
                    ),
                ));
            }
            for key in ["name", "generateName", "labels", "annotations"] {
                if let Some(value) = map.get(key) {
                    metadata.insert(key.into(), value.clone());
                }
            }
            map.get("spec")
                .cloned()
                .or_else(|| K::short_form_spec(map))
                .or_else(K::default_spec)
        }
        _ => {
            return Err(GatewayError::BadRequest(format!(
                "the body must be a {kind} manifest, {{\"name\": …, \"spec\": {{…}}}} or a JSON string naming it"
            )));
        }
    };
    let name = metadata.get("name").cloned();
    let generate_name = metadata.get("generateName").cloned();
    match (&name, &generate_name) {
        (Some(Value::String(name)), _) => {
            if !is_dns1123_subdomain(name) || name.is_empty() {
                return Err(GatewayError::invalid_field(
                    "metadata.name",
                    "metadata.name must be a lowercase RFC 1123 subdomain (a-z, 0-9, '-', '.'; at most 253 characters)",
                ));
            }
        }
        (None, Some(Value::String(prefix))) => {
            let probe = format!("{prefix}x");
            if prefix.len() > 200 || !is_dns1123_subdomain(&probe) {
                return Err(GatewayError::invalid_field(
                    "metadata.generateName",
                    "metadata.generateName must be a lowercase RFC 1123 prefix of at most 200 characters",
                ));
            }
        }
        (None, None) => {
            return Err(GatewayError::invalid_field(
                "metadata.name",
                "metadata.name (or metadata.generateName) is required",
            ));
        }
        _ => {
            return Err(GatewayError::invalid_field(
                "metadata.name",
                "metadata.name must be a string",
            ));
        }
    }
    metadata.insert("namespace".into(), Value::String(namespace.to_string()));
    let Some(spec) = spec else {
        return Err(GatewayError::invalid_field("spec", "spec is required"));
    };
    let document = json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": Value::Object(metadata),
        "spec": spec,
    });
    serde_json::from_value::<K>(document).map_err(|error| {
        let message = error.to_string();
        let field = if message.contains("labels") || message.contains("annotations") {
            "metadata"
        } else {
            "spec"
        };
        GatewayError::invalid_field(field, format!("{kind} is not valid: {message}"))
    })
}

impl GatewayService {
    /// A service over `caches`, checking tokens with `authn` and access with `authz`, writing
    /// through `users`, downloading artifacts with `fetcher`, reading and noting operations in
    /// `history`, reading what tenants may not (the shared backup pool) with `reader`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        caches: Arc<WatchCaches>,
        authn: Authenticator,
        authz: Authorizer,
        users: SharedUserClients,
        fetcher: Arc<dyn ArtifactFetcher>,
        pages: PageTokens,
        history: SharedHistory,
        config: ServiceConfig,
        reader: kube::Client,
    ) -> Self {
        GatewayService {
            caches,
            authn,
            authz,
            users,
            fetcher,
            pages,
            config,
            history,
            history_counters: HistoryCounters::default(),
            manifests: crate::gateway::manifests::ManifestState::default(),
            reader,
            openshift_projects: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Finds out with discovery (as the gateway) whether OpenShift projects are served; when
    /// they are, "my namespaces" starts from the caller's projects list.
    pub async fn detect_openshift_projects(&self, reader: &kube::Client) -> bool {
        let served = crate::gateway::projects::served(reader).await;
        self.openshift_projects
            .store(served, std::sync::atomic::Ordering::Release);
        tracing::info!(served, "OpenShift projects for my namespaces");
        served
    }

    /// Whether "my namespaces" starts from the caller's OpenShift projects list.
    pub fn uses_openshift_projects(&self) -> bool {
        self.openshift_projects
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// The caller's OpenShift projects, listed with their own token; `None` when projects are
    /// not served or the list fails (then the namespace cache is used).
    async fn project_names(&self, caller: &Caller) -> Option<Vec<String>> {
        if !self.uses_openshift_projects() {
            return None;
        }
        let client = match self.user_client(caller) {
            Ok(client) => client,
            Err(error) => {
                tracing::debug!(error = %error, "no client for the caller; using the namespace cache");
                return None;
            }
        };
        match crate::gateway::projects::names(client).await {
            Ok(names) => Some(names),
            Err(error) => {
                tracing::debug!(error = %error, "projects list failed; using the namespace cache");
                None
            }
        }
    }

    /// The gateway's own client (reads only, after the caller's access check).
    pub fn reader(&self) -> &kube::Client {
        &self.reader
    }

    /// The watch caches.
    pub fn caches(&self) -> &Arc<WatchCaches> {
        &self.caches
    }

    /// The authenticator (for metrics).
    pub fn authenticator(&self) -> &Authenticator {
        &self.authn
    }

    /// The authorizer (for metrics and streams).
    pub fn authorizer(&self) -> &Authorizer {
        &self.authz
    }

    /// The settings.
    pub fn config(&self) -> &ServiceConfig {
        &self.config
    }

    /// The history store.
    pub fn history(&self) -> &SharedHistory {
        &self.history
    }

    /// What the manifest endpoints keep between requests (discovery, decoded manifests).
    pub fn manifest_state(&self) -> &crate::gateway::manifests::ManifestState {
        &self.manifests
    }

    /// Counters of the history store's use (for metrics).
    pub fn history_counters(&self) -> &HistoryCounters {
        &self.history_counters
    }

    /// The caller holding `token` (none: 401), asking from `client`: every transport (REST,
    /// SSE, GraphQL over HTTP and WebSocket) authenticates here, so the pre-authentication
    /// limit (429 before a TokenReview for a token not known to be good) covers them all.
    pub async fn authenticate(
        &self,
        token: Option<BearerToken>,
        client: crate::gateway::ratelimit::ClientAddress,
    ) -> Result<Caller, GatewayError> {
        let token = token.ok_or(GatewayError::Unauthenticated)?;
        self.authn.authenticate(token, client).await
    }

    pub(crate) fn ready(&self) -> Result<(), GatewayError> {
        if self.caches.is_synced() {
            Ok(())
        } else {
            Err(GatewayError::Unavailable(
                "the gateway is still loading its caches; retry shortly".into(),
            ))
        }
    }

    /// A client acting as `caller`.
    pub fn user_client(&self, caller: &Caller) -> Result<kube::Client, GatewayError> {
        self.users.client_for(caller.token(), caller.token_key())
    }

    /// Checks `verb` on `resource` (optionally the object `name`) in `namespace`.
    pub async fn authorize(
        &self,
        caller: &Caller,
        verb: &'static str,
        resource: TenantResource,
        namespace: &str,
        name: Option<&str>,
    ) -> Result<Authorized, GatewayError> {
        let mut check = AccessCheck::new(verb, resource.plural(), namespace);
        if let Some(name) = name {
            check = check.named(name);
        }
        self.authz.require(caller.identity(), check).await
    }

    async fn may_use_namespace(
        &self,
        caller: &Caller,
        namespace: &str,
    ) -> Result<bool, GatewayError> {
        for check in [
            AccessCheck::new("list", TenantResource::Backups.plural(), namespace),
            AccessCheck::new("create", TenantResource::Backups.plural(), namespace),
            AccessCheck::new("list", TenantResource::Restores.plural(), namespace),
        ] {
            if self.authz.allowed(caller.identity(), &check).await? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The check that puts a namespace in "my namespaces": may the caller list its backups
    /// (every NAC tenant role — view, edit, admin, backup-creator — grants it). One check per
    /// namespace of the cluster; a caller with access nowhere costs that and nothing more.
    fn listing_check(namespace: &str) -> AccessCheck {
        AccessCheck::new("list", TenantResource::Backups.plural(), namespace)
    }

    /// `namespace`, which the caller may use, as "my namespaces" shows it: its permissions
    /// only when `details` ([`DETAIL_CHECKS`] more checks: every reported verb on every
    /// resource, and downloads).
    async fn namespace_access(
        &self,
        caller: &Caller,
        namespace: String,
        details: bool,
        budget: &AccessBudget,
    ) -> Result<NamespaceAccess, CheckError> {
        let identity = caller.identity();
        let mut permissions = BTreeMap::new();
        let mut can_download = false;
        if details {
            for resource in TenantResource::ALL {
                let mut verbs = Vec::new();
                for verb in REPORTED_VERBS {
                    let check = AccessCheck::new(verb, resource.plural(), &namespace);
                    if budget.allowed(&self.authz, identity, &check).await? {
                        verbs.push(verb.to_string());
                    }
                }
                if !verbs.is_empty() {
                    permissions.insert(resource.segment().to_string(), verbs);
                }
            }
            let download = AccessCheck::new("create", "nonadmindownloadrequests", &namespace);
            can_download = budget.allowed(&self.authz, identity, &download).await?;
        }
        Ok(NamespaceAccess {
            name: namespace,
            permissions,
            can_download,
        })
    }

    /// A fresh budget of access checks for one request ([`ServiceConfig::review_budget`]).
    pub fn review_budget(&self) -> AccessBudget {
        AccessBudget::new(self.config.review_budget)
    }

    fn seal_namespace_cursor(&self, caller: &Caller, after: String) -> String {
        let cursor = NamespaceCursor {
            user: caller.username().to_string(),
            after,
        };
        let payload = serde_json::to_vec(&cursor).unwrap_or_default();
        self.pages.sealer().seal(NAMESPACE_TOKEN, &payload)
    }

    fn open_namespace_cursor(&self, caller: &Caller, token: &str) -> Result<String, GatewayError> {
        self.pages
            .sealer()
            .open(NAMESPACE_TOKEN, token)
            .and_then(|payload| serde_json::from_slice::<NamespaceCursor>(&payload).ok())
            .filter(|cursor| cursor.user == caller.username())
            .map(|cursor| cursor.after)
            .ok_or_else(|| {
                GatewayError::BadRequest("the continue token is not valid for this list".into())
            })
    }

    /// Candidates for "my namespaces", by name: on OpenShift the caller's projects (listed
    /// with their token), else every namespace in the cache.
    async fn namespace_candidates(&self, caller: &Caller) -> Vec<String> {
        let mut names: Vec<String> = match self.project_names(caller).await {
            Some(names) => names,
            None => self
                .caches
                .namespaces
                .all_in("")
                .iter()
                .map(|ns| name_of(&**ns))
                .collect(),
        };
        names.sort();
        names.dedup();
        names
    }

    /// The error of a request that needs every namespace the caller may use when they are more
    /// than one request may check.
    fn too_many_namespaces(&self, budget: &AccessBudget) -> GatewayError {
        GatewayError::BadRequest(format!(
            "this request would check access to more namespaces than one request may ({} access checks); name the namespaces instead, or list them page by page with GET /api/v1/namespaces?continue=",
            budget.limit()
        ))
    }

    /// Checks candidates in name order after `continue_token` until `limit` usable namespaces
    /// are found, the candidates run out or `budget` does; a `continue_token` in the answer
    /// when candidates remain. Candidates are probed (one check each) a few at a time, keeping
    /// enough of the budget for the details of the usable ones found (and one more), so every
    /// page makes progress; then the usable ones get their details, in order.
    async fn namespace_scan(
        &self,
        caller: &Caller,
        continue_token: Option<&str>,
        limit: usize,
        details: bool,
        budget: &AccessBudget,
    ) -> Result<NamespaceList, GatewayError> {
        /// Probes in flight at once.
        const PROBES_AT_ONCE: usize = 16;
        self.ready()?;
        let after = continue_token
            .map(|token| self.open_namespace_cursor(caller, token))
            .transpose()?;
        let mut names = self.namespace_candidates(caller).await;
        if let Some(after) = &after {
            names.retain(|name| name > after);
        }
        let total = names.len();
        let per_item = if details { DETAIL_CHECKS } else { 0 };
        let identity = caller.identity();
        // Probing: (name, usable) in name order.
        let mut probed: Vec<(String, bool)> = Vec::new();
        let mut usable = 0usize;
        let mut rest = names.into_iter().peekable();
        'probing: while rest.peek().is_some() && usable < limit {
            let reserve = per_item * (usable + 1);
            let take = budget
                .remaining()
                .saturating_sub(reserve)
                .min(PROBES_AT_ONCE);
            if take == 0 {
                break;
            }
            let chunk: Vec<String> = rest.by_ref().take(take).collect();
            let checks: Vec<AccessCheck> =
                chunk.iter().map(|name| Self::listing_check(name)).collect();
            let answers = futures::future::join_all(
                checks
                    .iter()
                    .map(|check| budget.allowed(&self.authz, identity, check)),
            )
            .await;
            for (name, answer) in chunk.into_iter().zip(answers) {
                match answer {
                    Ok(allowed) => {
                        probed.push((name, allowed));
                        if allowed {
                            usable += 1;
                            if usable >= limit {
                                break 'probing;
                            }
                        }
                    }
                    // Another field of the same request spent the rest.
                    Err(CheckError::Exhausted(_)) => break 'probing,
                    Err(CheckError::Failed(error)) => return Err(error),
                }
            }
        }
        // Details of the usable ones, in order, as far as the budget goes.
        let usable_names: Vec<String> = probed
            .iter()
            .filter(|(_, allowed)| *allowed)
            .map(|(name, _)| name.clone())
            .collect();
        let mut detailed = futures::stream::iter(usable_names)
            .map(|name| async move { self.namespace_access(caller, name, details, budget).await })
            .buffered(4);
        let mut items = Vec::new();
        let mut accounted = 0usize;
        let mut last = None;
        for (name, allowed) in &probed {
            if *allowed {
                match detailed.next().await {
                    Some(Ok(access)) => items.push(access),
                    Some(Err(CheckError::Failed(error))) => return Err(error),
                    Some(Err(CheckError::Exhausted(_))) | None => break,
                }
            }
            accounted += 1;
            last = Some(name.clone());
        }
        drop(detailed);
        if accounted == total {
            return Ok(NamespaceList {
                items,
                continue_token: None,
            });
        }
        match last {
            Some(after) => Ok(NamespaceList {
                items,
                continue_token: Some(self.seal_namespace_cursor(caller, after)),
            }),
            // Other fields of the same request spent the budget: ask again from here (a request
            // of its own has room for one namespace at least).
            None if budget.limit() > per_item => Ok(NamespaceList {
                items,
                continue_token: Some(self.seal_namespace_cursor(caller, after.unwrap_or_default())),
            }),
            // Not even one namespace fits in a whole budget.
            None => Err(self.too_many_namespaces(budget)),
        }
    }

    /// One page of the namespaces the caller may use (may list backups in), with their
    /// permissions when `query.details`. Bounded per request: at most `budget`'s access
    /// checks; when candidates remain the page carries a `continue` token (possibly with fewer
    /// than `limit` items, even none).
    pub async fn namespace_page(
        &self,
        caller: &Caller,
        query: &NamespaceQuery,
        budget: &AccessBudget,
    ) -> Result<NamespaceList, GatewayError> {
        let limit = query.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
        self.namespace_scan(
            caller,
            query.continue_token.as_deref(),
            limit,
            query.details,
            budget,
        )
        .await
    }

    /// Every namespace the caller may use, by name, within `budget`; 400 explaining when
    /// they cannot all be checked in one request.
    pub async fn usable_namespaces(
        &self,
        caller: &Caller,
        budget: &AccessBudget,
    ) -> Result<Vec<String>, GatewayError> {
        let list = self
            .namespace_scan(caller, None, usize::MAX, false, budget)
            .await?;
        if list.continue_token.is_some() {
            return Err(self.too_many_namespaces(budget));
        }
        Ok(list.items.into_iter().map(|access| access.name).collect())
    }

    /// Every namespace the caller may use, with their permissions in each, within one
    /// request's budget of access checks (400 explaining when that does not suffice).
    pub async fn namespaces(&self, caller: &Caller) -> Result<Vec<NamespaceAccess>, GatewayError> {
        let budget = self.review_budget();
        let list = self
            .namespace_scan(caller, None, usize::MAX, true, &budget)
            .await?;
        if list.continue_token.is_some() {
            return Err(self.too_many_namespaces(&budget));
        }
        Ok(list.items)
    }

    /// One page of `K` in `namespace`.
    pub async fn list<K: Cached>(
        &self,
        caller: &Caller,
        namespace: &str,
        query: &ListQuery,
    ) -> Result<Page<K>, GatewayError> {
        let authorized = self
            .authorize(caller, "list", K::RESOURCE, namespace, None)
            .await?;
        self.ready()?;
        self.page_of::<K>(&authorized, query)
    }

    fn page_of<K: Cached>(
        &self,
        authorized: &Authorized,
        query: &ListQuery,
    ) -> Result<Page<K>, GatewayError> {
        let namespace = authorized.namespace();
        let limit = match query.limit {
            None => DEFAULT_LIMIT,
            Some(0) => {
                return Err(GatewayError::BadRequest("limit must be at least 1".into()));
            }
            Some(limit) => limit.min(MAX_LIMIT),
        };
        let phase = query.phase.as_deref().filter(|p| !p.is_empty());
        if phase.is_some_and(|p| p.len() > 64 || !p.chars().all(|c| c.is_ascii_alphanumeric())) {
            return Err(GatewayError::BadRequest(
                "phase must be a phase name".into(),
            ));
        }
        let selector_text = query.label_selector.as_deref().unwrap_or_default();
        let selector = LabelSelector::parse(selector_text)?;
        let filters = filter_digest(&[phase.unwrap_or_default(), selector_text]);
        let resource = K::RESOURCE.plural();
        let after = match query.continue_token.as_deref().filter(|t| !t.is_empty()) {
            Some(token) => Some(self.pages.check(token, namespace, resource, &filters)?),
            None => None,
        };
        let (items, more) =
            K::cache(&self.caches).page(namespace, after.as_deref(), limit, |object| {
                phase.is_none_or(|p| object.phase_matches(p))
                    && selector.matches(object.meta().labels.as_ref())
            });
        let continue_token = match (more, items.last()) {
            (true, Some(last)) => {
                Some(
                    self.pages
                        .issue(namespace, resource, &filters, &name_of(&**last)),
                )
            }
            _ => None,
        };
        Ok(Page {
            items,
            continue_token,
        })
    }

    /// The object `name` of `K` in `namespace`.
    pub async fn get<K: Cached>(
        &self,
        caller: &Caller,
        namespace: &str,
        name: &str,
    ) -> Result<Arc<K>, GatewayError> {
        let authorized = self
            .authorize(caller, "get", K::RESOURCE, namespace, Some(name))
            .await?;
        self.ready()?;
        self.cached::<K>(&authorized, name)
    }

    fn cached<K: Cached>(
        &self,
        authorized: &Authorized,
        name: &str,
    ) -> Result<Arc<K>, GatewayError> {
        K::cache(&self.caches)
            .get(authorized.namespace(), name)
            .ok_or_else(|| GatewayError::NotFound {
                kind: K::RESOURCE.kind(),
                namespace: authorized.namespace().to_string(),
                name: name.to_string(),
            })
    }

    /// Validates a create request of `K` in `namespace` from `body` without writing: the
    /// object that would be created, or 403/422.
    pub async fn validate_create<K: Creatable>(
        &self,
        caller: &Caller,
        namespace: &str,
        body: &Value,
    ) -> Result<K, GatewayError> {
        self.authorize(caller, "create", K::RESOURCE, namespace, None)
            .await?;
        self.ready()?;
        let object = object_from_body::<K>(namespace, body)?;
        let violations = object.violations(self, caller, namespace).await?;
        if !violations.is_empty() {
            return Err(GatewayError::from_violations(
                K::RESOURCE.kind(),
                &violations,
            ));
        }
        Ok(object)
    }

    /// Creates `K` in `namespace` from `body` with the caller's token (`dry_run`: the API
    /// server validates but stores nothing).
    pub async fn create<K: Creatable>(
        &self,
        caller: &Caller,
        namespace: &str,
        body: &Value,
        dry_run: bool,
    ) -> Result<K, GatewayError> {
        let object = self.validate_create::<K>(caller, namespace, body).await?;
        let client = self.user_client(caller)?;
        let params = PostParams {
            dry_run,
            ..PostParams::default()
        };
        let name = name_of(&object);
        let created = Api::<K>::namespaced(client, namespace)
            .create(&params, &object)
            .await
            .map_err(|error| {
                from_write_error(
                    error,
                    K::RESOURCE.kind(),
                    namespace,
                    &name,
                    "create",
                    K::RESOURCE.plural(),
                )
            })?;
        if !dry_run {
            self.caches.record_write(created.clone());
            if let Some(kind) = operation_kind(K::RESOURCE) {
                self.note_requester(kind, created.meta(), caller).await;
            }
        }
        Ok(created)
    }

    /// Deletes `name` of `K`. A backup is deleted permanently — Velero removes its data from
    /// object storage, then NAC removes the NonAdminBackup — by setting `spec.deleteBackup`.
    pub async fn delete<K: Cached>(
        &self,
        caller: &Caller,
        namespace: &str,
        name: &str,
    ) -> Result<DeleteOutcome, GatewayError> {
        let kind = K::RESOURCE.kind();
        let client = self.user_client(caller)?;
        if K::RESOURCE == TenantResource::Backups {
            let authorized = self
                .authorize(caller, "patch", K::RESOURCE, namespace, Some(name))
                .await?;
            self.ready()?;
            self.cached::<K>(&authorized, name)?;
            let patch = json!({"spec": {"deleteBackup": true}});
            let patched = Api::<NonAdminBackup>::namespaced(client, namespace)
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(|error| {
                    from_write_error(error, kind, namespace, name, "patch", K::RESOURCE.plural())
                })?;
            self.caches.record_write(patched);
            return Ok(DeleteOutcome {
                kind: kind.to_string(),
                name: name.to_string(),
                permanent: true,
                message: "permanent deletion requested: Velero deletes the backup and its data in object storage, then the NonAdminBackup is removed; this cannot be undone".into(),
            });
        }
        let authorized = self
            .authorize(caller, "delete", K::RESOURCE, namespace, Some(name))
            .await?;
        self.ready()?;
        self.cached::<K>(&authorized, name)?;
        Api::<K>::namespaced(client, namespace)
            .delete(name, &DeleteParams::default())
            .await
            .map_err(|error| {
                from_write_error(error, kind, namespace, name, "delete", K::RESOURCE.plural())
            })?;
        let message = match K::RESOURCE {
            TenantResource::Restores => {
                "the restore record is deleted; restored objects stay in the namespace"
            }
            TenantResource::StorageLocations => {
                "the storage location is deleted; backups already stored there are not touched"
            }
            TenantResource::Schedules => {
                "the schedule is deleted; backups it already made are kept"
            }
            TenantResource::Backups => "",
        };
        Ok(DeleteOutcome {
            kind: kind.to_string(),
            name: name.to_string(),
            permanent: false,
            message: message.into(),
        })
    }

    /// Changes a schedule (`paused`, `schedule`, `skipImmediately`, `template`) with a JSON
    /// merge patch of its spec, validated like a new one.
    pub async fn patch_schedule(
        &self,
        caller: &Caller,
        namespace: &str,
        name: &str,
        spec_patch: &Value,
    ) -> Result<NonAdminSchedule, GatewayError> {
        let authorized = self
            .authorize(
                caller,
                "patch",
                TenantResource::Schedules,
                namespace,
                Some(name),
            )
            .await?;
        self.ready()?;
        let current = self.cached::<NonAdminSchedule>(&authorized, name)?;
        let Value::Object(fields) = spec_patch else {
            return Err(GatewayError::invalid_field(
                "spec",
                "the body must be a JSON object with spec fields",
            ));
        };
        const PATCHABLE: &[&str] = &["paused", "schedule", "skipImmediately", "template"];
        if let Some(unknown) = fields.keys().find(|k| !PATCHABLE.contains(&k.as_str())) {
            return Err(GatewayError::invalid_field(
                &format!("spec.{unknown}"),
                format!(
                    "spec.{unknown} cannot be changed; patchable: paused, schedule, skipImmediately, template"
                ),
            ));
        }
        let mut merged = serde_json::to_value(&current.spec).map_err(|_| GatewayError::Upstream)?;
        json_merge(&mut merged, spec_patch);
        let mut candidate = (*current).clone();
        candidate.spec = serde_json::from_value(merged).map_err(|error| {
            GatewayError::invalid_field("spec", format!("NonAdminSchedule is not valid: {error}"))
        })?;
        let violations = candidate.violations(self, caller, namespace).await?;
        if !violations.is_empty() {
            return Err(GatewayError::from_violations(
                "NonAdminSchedule",
                &violations,
            ));
        }
        let client = self.user_client(caller)?;
        let patched = Api::<NonAdminSchedule>::namespaced(client, namespace)
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"spec": spec_patch})),
            )
            .await
            .map_err(|error| {
                from_write_error(
                    error,
                    "NonAdminSchedule",
                    namespace,
                    name,
                    "patch",
                    TenantResource::Schedules.plural(),
                )
            })?;
        self.caches.record_write(patched.clone());
        Ok(patched)
    }

    /// Waits until `name` of `K` reaches a terminal phase or `timeout` passes; returns the
    /// object and whether it is terminal.
    pub async fn wait_terminal<K: Cached + Terminal>(
        &self,
        caller: &Caller,
        namespace: &str,
        name: &str,
        timeout: Duration,
    ) -> Result<(Arc<K>, bool), GatewayError> {
        let authorized = self
            .authorize(caller, "get", K::RESOURCE, namespace, Some(name))
            .await?;
        self.ready()?;
        let deadline = tokio::time::Instant::now() + timeout.min(self.config.max_wait);
        let (_, mut changes) = self.caches.events.subscribe(None);
        loop {
            let object = self.cached::<K>(&authorized, name)?;
            if object.is_terminal() {
                return Ok((object, true));
            }
            // Access is re-checked while waiting, so a revoked binding ends the wait.
            self.authorize(caller, "get", K::RESOURCE, namespace, Some(name))
                .await?;
            let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
            if remaining.is_zero() {
                return Ok((object, false));
            }
            let wake = tokio::time::timeout(remaining.min(Duration::from_secs(5)), async {
                loop {
                    match changes.recv().await {
                        Ok(event)
                            if event.namespace == namespace
                                && event.name == name
                                && event.resource == K::RESOURCE =>
                        {
                            break;
                        }
                        Ok(_) => continue,
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => break,
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                            tokio::time::sleep(Duration::from_millis(200)).await;
                            break;
                        }
                    }
                }
            });
            let _ = wake.await;
        }
    }

    /// The decompressed artifact of a backup or restore, fetched through a
    /// NonAdminDownloadRequest created with the caller's token.
    pub async fn artifact(
        &self,
        caller: &Caller,
        namespace: &str,
        resource: TenantResource,
        name: &str,
        artifact: ArtifactKind,
    ) -> Result<Vec<u8>, GatewayError> {
        let target = artifact
            .target(resource)
            .ok_or_else(|| GatewayError::BadRequest("no such artifact for this resource".into()))?;
        let authorized = self
            .authorize(caller, "get", resource, namespace, Some(name))
            .await?;
        self.authz
            .require(
                caller.identity(),
                AccessCheck::new("create", "nonadmindownloadrequests", namespace),
            )
            .await?;
        self.ready()?;
        let finished = match resource {
            TenantResource::Backups => self
                .cached::<NonAdminBackup>(&authorized, name)?
                .is_terminal(),
            TenantResource::Restores => self
                .cached::<NonAdminRestore>(&authorized, name)?
                .is_terminal(),
            _ => false,
        };
        if !finished {
            return Err(GatewayError::ArtifactUnavailable(format!(
                "{} {name:?} has not finished; its {} is available once it has",
                resource.kind(),
                target.as_str()
            )));
        }
        let bytes = self.download(caller, namespace, name, target).await?;
        self.readable_artifact(caller, artifact, decompress(bytes)?)
            .await
    }

    /// The backup tarball (`<backup>.tar.gz`, as stored) of NonAdminBackup `name`, fetched
    /// through a NonAdminDownloadRequest created with the caller's token: the backup must have
    /// finished and the caller may get it and create download requests.
    pub async fn backup_contents_tarball(
        &self,
        caller: &Caller,
        namespace: &str,
        name: &str,
    ) -> Result<Vec<u8>, GatewayError> {
        let authorized = self
            .authorize(
                caller,
                "get",
                TenantResource::Backups,
                namespace,
                Some(name),
            )
            .await?;
        self.authz
            .require(
                caller.identity(),
                AccessCheck::new("create", "nonadmindownloadrequests", namespace),
            )
            .await?;
        self.ready()?;
        if !self
            .cached::<NonAdminBackup>(&authorized, name)?
            .is_terminal()
        {
            return Err(GatewayError::ArtifactUnavailable(format!(
                "NonAdminBackup {name:?} has not finished; its contents are available once it has"
            )));
        }
        self.download(caller, namespace, name, DownloadTargetKind::BackupContents)
            .await
    }

    /// The bytes behind a NonAdminDownloadRequest for `target` of `name`, made with the
    /// caller's token (authorization is the callers').
    async fn download(
        &self,
        caller: &Caller,
        namespace: &str,
        name: &str,
        target: DownloadTargetKind,
    ) -> Result<Vec<u8>, GatewayError> {
        let client = self.user_client(caller)?;
        let requests: Api<NonAdminDownloadRequest> = Api::namespaced(client, namespace);
        let prefix: String = name.chars().take(40).collect();
        let request: NonAdminDownloadRequest = serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1",
            "kind": "NonAdminDownloadRequest",
            "metadata": {"generateName": format!("{}-download-", prefix.trim_end_matches(['.', '-']))},
            "spec": {"target": {"kind": target.as_str(), "name": name}},
        }))
        .map_err(|_| GatewayError::Upstream)?;
        let created = requests
            .create(&PostParams::default(), &request)
            .await
            .map_err(|error| {
                from_write_error(
                    error,
                    "NonAdminDownloadRequest",
                    namespace,
                    name,
                    "create",
                    "nonadmindownloadrequests",
                )
            })?;
        self.note_requester(OperationKind::Download, &created.metadata, caller)
            .await;
        let request_name = name_of(&created);
        let outcome = self.await_download_url(&requests, &request_name).await;
        // The request has done its job either way; the controller also expires it.
        let cleanup = requests.clone();
        tokio::spawn(async move {
            if let Err(error) = cleanup
                .delete(&request_name, &DeleteParams::default())
                .await
            {
                tracing::debug!(error = %error, "could not delete a download request");
            }
        });
        let url = outcome?;
        // Downloads of a tenant's own storage location stay at its endpoint (issue 17).
        let rules = crate::manifest::fetch::EndpointRules::storage_endpoints(&self.caches.policy);
        let scope = crate::gateway::storage_scope::download_scope(
            &self.reader,
            namespace,
            name,
            &target,
            &rules,
        )
        .await?;
        Ok(self.fetcher.fetch(&url, &scope).await?)
    }

    async fn await_download_url(
        &self,
        requests: &Api<NonAdminDownloadRequest>,
        request_name: &str,
    ) -> Result<String, GatewayError> {
        let deadline = tokio::time::Instant::now() + self.config.artifact_timeout;
        loop {
            let current = requests.get_opt(request_name).await.map_err(|error| {
                tracing::warn!(error = %error, "reading a download request failed");
                GatewayError::Upstream
            })?;
            if let Some(status) = current.and_then(|r| r.status) {
                if let Some(url) = status
                    .velero
                    .as_ref()
                    .and_then(|v| v.status.as_ref())
                    .and_then(|s| s.download_url.clone())
                    .filter(|u| !u.is_empty())
                {
                    return Ok(url);
                }
                if status.phase == Some(NonAdminPhase::BackingOff) {
                    let reason = status
                        .conditions
                        .iter()
                        .find(|c| c.status == "False")
                        .map(|c| c.message.clone())
                        .unwrap_or_else(|| "the download request was refused".into());
                    return Err(GatewayError::ArtifactUnavailable(reason));
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(GatewayError::ArtifactUnavailable(
                    "the artifact was not ready in time; retry later".into(),
                ));
            }
            tokio::time::sleep(self.config.artifact_poll).await;
        }
    }

    fn queue_item(
        &self,
        kind: QueueKind,
        namespace: &str,
        name: &str,
        velero_name: Option<&str>,
    ) -> Option<QueueItem> {
        let velero_name = velero_name?;
        let queue = self.caches.queue.read().ok()?;
        let entry = queue.get(kind, velero_name)?;
        let activity = entry.activity();
        if !activity.is_active() {
            return None;
        }
        let position = queue.position(kind, velero_name)?;
        let mean = self.caches.durations.lock().ok().and_then(|d| d.mean(kind));
        let phase = match &entry.phase {
            crate::queue::VeleroPhase::Backup(phase) => {
                phase.as_ref().map(|p| p.as_str().to_string())
            }
            crate::queue::VeleroPhase::Restore(phase) => {
                phase.as_ref().map(|p| p.as_str().to_string())
            }
        };
        Some(QueueItem {
            kind: match kind {
                QueueKind::Backup => "backup".into(),
                QueueKind::Restore => "restore".into(),
            },
            namespace: namespace.to_string(),
            name: name.to_string(),
            phase,
            state: if activity == Activity::Running {
                "running".into()
            } else {
                "pending".into()
            },
            position,
            eta_seconds: mean.map(|mean| (mean * position as f64).round() as u64),
            eta: None,
        })
    }

    async fn queued_with_eta(
        &self,
        kind: QueueKind,
        namespace: &str,
        name: &str,
        velero_name: Option<&str>,
    ) -> Option<QueueItem> {
        let mut item = self.queue_item(kind, namespace, name, velero_name)?;
        self.attach_etas(std::slice::from_mut(&mut item)).await;
        Some(item)
    }

    fn items_in(&self, namespace: &str, backups: bool, restores: bool) -> Vec<QueueItem> {
        let mut items = Vec::new();
        if backups {
            for nab in self.caches.backups.all_in(namespace) {
                let velero_name = nab
                    .status
                    .as_ref()
                    .and_then(|s| s.velero_backup.as_ref())
                    .and_then(|v| v.name.clone());
                items.extend(self.queue_item(
                    QueueKind::Backup,
                    namespace,
                    &name_of(&*nab),
                    velero_name.as_deref(),
                ));
            }
        }
        if restores {
            for nar in self.caches.restores.all_in(namespace) {
                let velero_name = nar
                    .status
                    .as_ref()
                    .and_then(|s| s.velero_restore.as_ref())
                    .and_then(|v| v.name.clone());
                items.extend(self.queue_item(
                    QueueKind::Restore,
                    namespace,
                    &name_of(&*nar),
                    velero_name.as_deref(),
                ));
            }
        }
        items.sort_by(|a, b| {
            a.kind
                .cmp(&b.kind)
                .then(a.position.cmp(&b.position))
                .then(a.name.cmp(&b.name))
        });
        items
    }

    /// The caller's pending and running backups and restores in `namespace`, with live
    /// positions.
    pub async fn namespace_queue(
        &self,
        caller: &Caller,
        namespace: &str,
    ) -> Result<NamespaceQueue, GatewayError> {
        let backups = self
            .authz
            .allowed(
                caller.identity(),
                &AccessCheck::new("list", TenantResource::Backups.plural(), namespace),
            )
            .await?;
        let restores = self
            .authz
            .allowed(
                caller.identity(),
                &AccessCheck::new("list", TenantResource::Restores.plural(), namespace),
            )
            .await?;
        if !backups && !restores {
            return Err(GatewayError::Forbidden {
                verb: "list",
                resource: TenantResource::Backups.plural(),
                namespace: namespace.to_string(),
            });
        }
        self.ready()?;
        let mut items = self.items_in(namespace, backups, restores);
        self.attach_etas(&mut items).await;
        Ok(NamespaceQueue {
            namespace: namespace.to_string(),
            items,
        })
    }

    /// The cluster's queues: totals only, plus the caller's own items.
    pub async fn cluster_queue(&self, caller: &Caller) -> Result<ClusterQueue, GatewayError> {
        self.ready()?;
        let counts = |kind: QueueKind| {
            let mut counts = QueueCounts::default();
            if let Ok(queue) = self.caches.queue.read() {
                for entry in queue.active_in_order(kind) {
                    match entry.activity() {
                        Activity::Running => counts.running += 1,
                        Activity::Pending => counts.pending += 1,
                        Activity::Finished => {}
                    }
                }
            }
            counts.mean_duration_seconds =
                self.caches.durations.lock().ok().and_then(|d| d.mean(kind));
            counts
        };
        let mut mine = Vec::new();
        for access in self.namespaces(caller).await? {
            let can = |segment: &str| {
                access
                    .permissions
                    .get(segment)
                    .is_some_and(|verbs| verbs.iter().any(|v| v == "list"))
            };
            mine.extend(self.items_in(&access.name, can("backups"), can("restores")));
        }
        self.attach_etas(&mut mine).await;
        Ok(ClusterQueue {
            backups: counts(QueueKind::Backup),
            restores: counts(QueueKind::Restore),
            mine,
        })
    }

    /// The admin policy in force in `namespace`.
    pub async fn policy(
        &self,
        caller: &Caller,
        namespace: &str,
    ) -> Result<PolicyView, GatewayError> {
        if !self.may_use_namespace(caller, namespace).await? {
            return Err(GatewayError::Forbidden {
                verb: "list",
                resource: TenantResource::Backups.plural(),
                namespace: namespace.to_string(),
            });
        }
        self.ready()?;
        let policy = self.caches.effective_policy(namespace);
        Ok(PolicyView {
            namespace: namespace.to_string(),
            backup: RulesView::of(policy.rules(SpecKind::Backup)),
            restore: RulesView::of(policy.rules(SpecKind::Restore)),
            storage_location: RulesView::of(policy.rules(SpecKind::BackupStorageLocation)),
            require_approval_for_storage_locations: policy.settings.require_approval_for_bsl,
            restrictions: vec![
                format!(
                    "backups and restores stay in namespace {namespace} (includedNamespaces, excludedNamespaces and namespaceMapping are restricted)"
                ),
                "cluster-scoped resources are never backed up or restored".into(),
                "volume snapshot locations are chosen by the administrator".into(),
                "NAC's and Velero's own kinds and labels are reserved".into(),
            ],
        })
    }

    /// Describes a backup: status, conditions, effective spec, progress, errors and warnings,
    /// deletion, and with `details` the resource list.
    pub async fn describe_backup(
        &self,
        caller: &Caller,
        namespace: &str,
        name: &str,
        details: bool,
    ) -> Result<Description, GatewayError> {
        let nab = self.get::<NonAdminBackup>(caller, namespace, name).await?;
        let status = nab.status.clone().unwrap_or_default();
        let velero = status.velero_backup.clone().unwrap_or_default();
        let velero_status = velero.status.clone().unwrap_or_default();
        let effective_spec = match &velero.spec {
            Some(spec) => serde_json::to_value(spec),
            None => serde_json::to_value(&nab.spec.backup_spec),
        }
        .unwrap_or(Value::Null);
        let queued = self
            .queued_with_eta(QueueKind::Backup, namespace, name, velero.name.as_deref())
            .await;
        let deletion = (nab.spec.delete_backup == Some(true)
            || status.velero_delete_backup_request.is_some())
        .then(|| {
            let request_status = status
                .velero_delete_backup_request
                .as_ref()
                .and_then(|r| r.status.clone())
                .unwrap_or_default();
            DeletionView {
                requested: nab.spec.delete_backup == Some(true),
                phase: request_status
                    .phase
                    .as_ref()
                    .map(|p| p.as_str().to_string()),
                errors: request_status.errors.unwrap_or_default(),
            }
        });
        let mut description = Description {
            kind: "NonAdminBackup".into(),
            namespace: namespace.to_string(),
            name: name.to_string(),
            request_phase: status.phase.map(|p| p.as_str().to_string()),
            velero_phase: velero_status.phase.as_ref().map(|p| p.as_str().to_string()),
            queue_position: queued.as_ref().map(|item| item.position),
            eta: queued.and_then(|item| item.eta),
            conditions: conditions_json(&status.conditions),
            effective_spec,
            progress: json!({
                "totalItems": velero_status.progress.as_ref().and_then(|p| p.total_items),
                "itemsBackedUp": velero_status.progress.as_ref().and_then(|p| p.items_backed_up),
                "volumeSnapshotsAttempted": velero_status.volume_snapshots_attempted,
                "volumeSnapshotsCompleted": velero_status.volume_snapshots_completed,
            }),
            started: time_text(velero_status.start_timestamp.as_ref()),
            completed: time_text(velero_status.completion_timestamp.as_ref()),
            expiration: time_text(velero_status.expiration.as_ref()),
            errors: velero_status.errors.unwrap_or(0),
            warnings: velero_status.warnings.unwrap_or(0),
            failure_reason: velero_status.failure_reason.clone(),
            validation_errors: velero_status.validation_errors.clone().unwrap_or_default(),
            deletion,
            resource_list: None,
            resource_list_unavailable: None,
        };
        if details {
            self.attach_resource_list(
                caller,
                namespace,
                TenantResource::Backups,
                name,
                &mut description,
            )
            .await;
        }
        Ok(description)
    }

    /// Describes a restore, like [`Self::describe_backup`].
    pub async fn describe_restore(
        &self,
        caller: &Caller,
        namespace: &str,
        name: &str,
        details: bool,
    ) -> Result<Description, GatewayError> {
        let nar = self.get::<NonAdminRestore>(caller, namespace, name).await?;
        let status = nar.status.clone().unwrap_or_default();
        let velero = status.velero_restore.clone().unwrap_or_default();
        let velero_status = velero.status.clone().unwrap_or_default();
        let queued = self
            .queued_with_eta(QueueKind::Restore, namespace, name, velero.name.as_deref())
            .await;
        let mut description = Description {
            kind: "NonAdminRestore".into(),
            namespace: namespace.to_string(),
            name: name.to_string(),
            request_phase: status.phase.map(|p| p.as_str().to_string()),
            velero_phase: velero_status.phase.as_ref().map(|p| p.as_str().to_string()),
            queue_position: queued.as_ref().map(|item| item.position),
            eta: queued.and_then(|item| item.eta),
            conditions: conditions_json(&status.conditions),
            effective_spec: serde_json::to_value(&nar.spec.restore_spec).unwrap_or(Value::Null),
            progress: json!({
                "totalItems": velero_status.progress.as_ref().and_then(|p| p.total_items),
                "itemsRestored": velero_status.progress.as_ref().and_then(|p| p.items_restored),
            }),
            started: time_text(velero_status.start_timestamp.as_ref()),
            completed: time_text(velero_status.completion_timestamp.as_ref()),
            expiration: None,
            errors: velero_status.errors.unwrap_or(0),
            warnings: velero_status.warnings.unwrap_or(0),
            failure_reason: velero_status.failure_reason.clone(),
            validation_errors: velero_status.validation_errors.clone().unwrap_or_default(),
            deletion: None,
            resource_list: None,
            resource_list_unavailable: None,
        };
        if details {
            self.attach_resource_list(
                caller,
                namespace,
                TenantResource::Restores,
                name,
                &mut description,
            )
            .await;
        }
        Ok(description)
    }

    async fn attach_resource_list(
        &self,
        caller: &Caller,
        namespace: &str,
        resource: TenantResource,
        name: &str,
        description: &mut Description,
    ) {
        match self
            .artifact(
                caller,
                namespace,
                resource,
                name,
                ArtifactKind::ResourceList,
            )
            .await
        {
            Ok(bytes) => {
                description.resource_list = serde_json::from_slice(&bytes).ok();
            }
            Err(error) => description.resource_list_unavailable = Some(error.to_string()),
        }
    }

    /// Which of `resources` the caller may watch in `namespace`.
    pub async fn watchable(
        &self,
        caller: &Caller,
        namespace: &str,
    ) -> Result<Vec<TenantResource>, GatewayError> {
        let mut allowed = Vec::new();
        for resource in TenantResource::ALL {
            let check = AccessCheck::new("watch", resource.plural(), namespace);
            if self.authz.allowed(caller.identity(), &check).await? {
                allowed.push(resource);
            }
        }
        Ok(allowed)
    }

    /// Whether the caller may still watch `resource` in `namespace` (decisions are cached for
    /// at most the allow TTL, so a revoked binding ends a stream within it).
    pub async fn may_watch(
        &self,
        caller: &Caller,
        namespace: &str,
        resource: TenantResource,
    ) -> bool {
        let check = AccessCheck::new("watch", resource.plural(), namespace);
        self.authz
            .allowed(caller.identity(), &check)
            .await
            .unwrap_or(false)
    }

    /// A snapshot of what a stream starts from: every watchable object, as presented JSON.
    pub fn snapshot(&self, namespace: &str, resource: TenantResource) -> Vec<Value> {
        match resource {
            TenantResource::Backups => self
                .caches
                .backups
                .all_in(namespace)
                .iter()
                .map(|o| present(&**o))
                .collect(),
            TenantResource::Restores => self
                .caches
                .restores
                .all_in(namespace)
                .iter()
                .map(|o| present(&**o))
                .collect(),
            TenantResource::StorageLocations => self
                .caches
                .storage_locations
                .all_in(namespace)
                .iter()
                .map(|o| present(&**o))
                .collect(),
            TenantResource::Schedules => self
                .caches
                .schedules
                .all_in(namespace)
                .iter()
                .map(|o| present(&**o))
                .collect(),
        }
    }

    /// The approval state of a storage location (`Approved`, `Pending`, `Rejected`, or
    /// `NotRequired`).
    pub fn approval_state(location: &NonAdminBackupStorageLocation) -> &'static str {
        let condition = location.status.as_ref().and_then(|s| {
            s.conditions
                .iter()
                .find(|c| c.type_ == conditions::types::CLUSTER_ADMIN_APPROVED)
        });
        match condition {
            None => "NotRequired",
            Some(c) if c.status == "True" => "Approved",
            Some(c) if c.reason == conditions::reasons::BSL_SPEC_REJECTED => "Rejected",
            Some(_) => "Pending",
        }
    }

    /// Field errors of a failed validation, for transports that show them.
    pub fn field_errors(error: &GatewayError) -> Vec<FieldError> {
        error.field_errors().to_vec()
    }
}

/// RFC 7396 JSON merge patch.
pub fn json_merge(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(fields) => {
            if !target.is_object() {
                *target = Value::Object(serde_json::Map::new());
            }
            if let Value::Object(target_fields) = target {
                for (key, value) in fields {
                    if value.is_null() {
                        target_fields.remove(key);
                    } else {
                        json_merge(
                            target_fields.entry(key.clone()).or_insert(Value::Null),
                            value,
                        );
                    }
                }
            }
        }
        other => *target = other.clone(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn manifests_and_short_forms_build_the_same_object() {
        let manifest = json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
            "metadata": {"name": "nightly", "labels": {"app": "web"}},
            "spec": {"backupSpec": {"ttl": "24h0m0s"}}
        });
        let short = json!({"name": "nightly", "labels": {"app": "web"}, "spec": {"backupSpec": {"ttl": "24h0m0s"}}});
        let a: NonAdminBackup = object_from_body("team-a", &manifest).unwrap();
        let b: NonAdminBackup = object_from_body("team-a", &short).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.metadata.namespace.as_deref(), Some("team-a"));
        let named: NonAdminBackup = object_from_body("team-a", &json!("just-a-name")).unwrap();
        assert_eq!(named.metadata.name.as_deref(), Some("just-a-name"));
        let restore: NonAdminRestore =
            object_from_body("team-a", &json!({"name": "r", "backupName": "nightly"})).unwrap();
        assert_eq!(
            restore.spec.restore_spec.backup_name.as_deref(),
            Some("nightly")
        );
    }

    #[test]
    fn bad_bodies_are_refused_with_the_field() {
        let cases = [
            (
                json!({"metadata": {"name": "x", "namespace": "team-b"}, "spec": {"backupSpec": {}}}),
                "metadata.namespace",
            ),
            (
                json!({"apiVersion": "velero.io/v1", "metadata": {"name": "x"}}),
                "apiVersion",
            ),
            (
                json!({"kind": "NonAdminRestore", "metadata": {"name": "x"}}),
                "kind",
            ),
            (json!({"name": "Ünïcode"}), "metadata.name"),
            (json!({"name": "UPPER"}), "metadata.name"),
            (json!({"name": "a".repeat(300)}), "metadata.name"),
            (json!({"spec": {"backupSpec": {}}}), "metadata.name"),
            (json!({"name": "x", "bogus": 1}), "bogus"),
            (
                json!({"name": "x", "spec": {"backupSpec": {"ttl": 5}}}),
                "spec",
            ),
            (json!({"name": 7}), "metadata.name"),
        ];
        for (body, field) in cases {
            let error = object_from_body::<NonAdminBackup>("team-a", &body).unwrap_err();
            assert_eq!(error.status_code(), 422, "{body}");
            assert_eq!(error.field_errors()[0].field, field, "{body}");
        }
        assert_eq!(
            object_from_body::<NonAdminBackup>("team-a", &json!([1, 2]))
                .unwrap_err()
                .status_code(),
            400
        );
    }

    #[test]
    fn merge_patch_follows_rfc_7396() {
        let mut target = json!({"a": 1, "b": {"c": 2, "d": 3}});
        json_merge(&mut target, &json!({"a": null, "b": {"c": 5}, "e": true}));
        assert_eq!(target, json!({"b": {"c": 5, "d": 3}, "e": true}));
    }

    #[test]
    fn schedule_template_violations_name_the_template_field() {
        let violations = rewrite_prefix(
            vec![PolicyViolation::new(
                crate::policy::ViolationReason::Restricted,
                "spec.backupSpec.includedNamespaces",
                "NonAdminBackup spec.backupSpec.includedNamespaces is restricted",
            )],
            "spec.backupSpec",
            "spec.template.backupSpec",
        );
        assert_eq!(
            violations[0].field,
            "spec.template.backupSpec.includedNamespaces"
        );
        assert!(
            violations[0]
                .message
                .contains("spec.template.backupSpec.includedNamespaces")
        );
    }
}
