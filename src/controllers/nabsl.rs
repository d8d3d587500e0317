//! The NonAdminBackupStorageLocation controller: observes a NABSL (read fresh), the policy's
//! verdict on it (including the content of the tenant's credential Secret), its approval request,
//! Secret copy and Velero BSL (found by the NACUUID label in the OADP namespace), asks
//! [`nabsl_decision::decide`] for the next step, and applies it.
//!
//! Secret rotation without reading Secrets the controller has no use for: NAC never lists or
//! watches Secrets outside the OADP namespace (its ClusterRole grants only `get`). Each
//! reconcile records, in an in-memory index, which tenant Secret a NABSL names (`(namespace,
//! secret name)` → NABSL names) and the resourceVersion it read; every [`SECRET_POLL`] the
//! controller GETs the metadata of just those Secrets, by name, and reconciles the NABSLs of
//! any whose resourceVersion moved (rotated, deleted, created). NAC's own copies in the OADP
//! namespace are watched there by NAC's label (a copy changed or removed is restored at once).
//! No Secret content is cached: the index holds names and resourceVersions only.
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use base64::Engine as _;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use serde_json::json;

use super::driver::{self, Applied, Reconciler, SOON};
use super::events::Notice;
use super::nabsl_decision::{self, NabslObservation, NabslStep, SyncWrite};
use super::{Context, ControllerError};
use crate::api::nonadmin::labels::{self, finalizers};
use crate::api::nonadmin::{
    NonAdminBackup, NonAdminBackupStorageLocation, NonAdminBackupStorageLocationRequest,
    NonAdminBackupStorageLocationStatus,
};
use crate::api::velero::{BackupStorageLocation, BackupStorageLocationSpec};
use crate::policy::PolicyViolation;

const CREDENTIAL_FIELD: &str = "spec.backupStorageLocationSpec.credential";
/// This controller's name in metrics.
pub const CONTROLLER_NAME: &str = "nonadminbackupstoragelocation";
/// How often the tenant Secrets NABSLs name are looked at (metadata only, by name) for a
/// rotation.
pub const SECRET_POLL: Duration = Duration::from_secs(10);

/// `(namespace, Secret name)` → names of the NABSLs in that namespace whose credential it is,
/// and the resourceVersion of that Secret their last reconcile read.
#[derive(Debug, Default)]
pub struct SecretIndex {
    by_secret: HashMap<(String, String), BTreeSet<String>>,
    by_nabsl: HashMap<(String, String), String>,
    /// resourceVersion read (`None`: the Secret did not exist), for Secrets in `by_secret`.
    read: HashMap<(String, String), Option<String>>,
}

impl SecretIndex {
    /// Records that NABSL `namespace/name` references Secret `secret` (None: no Secret, or the
    /// NABSL is gone).
    pub fn set(&mut self, namespace: &str, name: &str, secret: Option<&str>) {
        let key = (namespace.to_string(), name.to_string());
        if let Some(old) = self.by_nabsl.remove(&key) {
            let old_key = (namespace.to_string(), old);
            if let Some(set) = self.by_secret.get_mut(&old_key) {
                set.remove(name);
                if set.is_empty() {
                    self.by_secret.remove(&old_key);
                    self.read.remove(&old_key);
                }
            }
        }
        if let Some(secret) = secret.filter(|s| !s.is_empty()) {
            self.by_nabsl.insert(key, secret.to_string());
            self.by_secret
                .entry((namespace.to_string(), secret.to_string()))
                .or_default()
                .insert(name.to_string());
        }
    }

    /// Records the resourceVersion of Secret `namespace/secret` a reconcile just read (`None`:
    /// it does not exist), if a NABSL names it.
    pub fn record_read(&mut self, namespace: &str, secret: &str, resource_version: Option<&str>) {
        let key = (namespace.to_string(), secret.to_string());
        if self.by_secret.contains_key(&key) {
            self.read.insert(key, resource_version.map(str::to_string));
        }
    }

    /// The Secrets to look at for rotations: `(namespace, secret, resourceVersion read)`, for
    /// every named Secret a reconcile has read.
    pub fn watched(&self) -> Vec<(String, String, Option<String>)> {
        self.read
            .iter()
            .map(|((namespace, secret), read)| (namespace.clone(), secret.clone(), read.clone()))
            .collect()
    }

    /// The NABSLs that reference Secret `namespace/secret`.
    pub fn nabsls_of(&self, namespace: &str, secret: &str) -> Vec<String> {
        self.by_secret
            .get(&(namespace.to_string(), secret.to_string()))
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default()
    }
}

type SharedIndex = Arc<RwLock<SecretIndex>>;

/// The NABSL a NAC-made object was created for, from its origin annotations.
fn origin_ref(meta: &kube::core::ObjectMeta) -> Option<ObjectRef<NonAdminBackupStorageLocation>> {
    let a = meta.annotations.as_ref()?;
    let name = a.get(labels::NABSL_ORIGIN_NAME_ANNOTATION)?;
    let namespace = a.get(labels::NABSL_ORIGIN_NAMESPACE_ANNOTATION)?;
    Some(ObjectRef::new(name).within(namespace))
}

/// Whether a Secret whose resourceVersion a reconcile read as `read` has changed since, now
/// that it is `now` (`None`: absent): rotated, deleted, or created after all.
pub fn secret_moved(read: Option<&str>, now: Option<&str>) -> bool {
    read != now
}

/// One look at the Secrets NABSLs name: the NABSLs whose Secret moved since their reconcile
/// read it. Metadata only, by name, in the NABSL's namespace.
async fn moved_secrets(
    client: &kube::Client,
    index: &SharedIndex,
) -> Vec<ObjectRef<NonAdminBackupStorageLocation>> {
    let watched = match index.read() {
        Ok(index) => index.watched(),
        Err(_) => return Vec::new(),
    };
    let mut refs = Vec::new();
    for (namespace, secret, read) in watched {
        let api: Api<Secret> = Api::namespaced(client.clone(), &namespace);
        let now = match api.get_metadata_opt(&secret).await {
            Ok(found) => found.and_then(|m| m.metadata.resource_version),
            Err(error) => {
                tracing::debug!(%namespace, %secret, %error, "cannot look at a NABSL's Secret");
                continue;
            }
        };
        if !secret_moved(read.as_deref(), now.as_deref()) {
            continue;
        }
        let Ok(index) = index.read() else {
            break;
        };
        refs.extend(
            index
                .nabsls_of(&namespace, &secret)
                .into_iter()
                .map(|n| ObjectRef::new(&n).within(&namespace)),
        );
    }
    refs
}

/// Every `period`, the NABSLs whose named Secret moved (see [`moved_secrets`]).
fn secret_rotations(
    client: kube::Client,
    index: SharedIndex,
    period: Duration,
) -> impl futures::Stream<Item = ObjectRef<NonAdminBackupStorageLocation>> {
    futures::stream::unfold((client, index), move |(client, index)| async move {
        tokio::time::sleep(period).await;
        let refs = moved_secrets(&client, &index).await;
        Some((futures::stream::iter(refs), (client, index)))
    })
    .flatten()
}

/// Runs the controller until the task is dropped.
pub async fn run(context: Arc<Context>) {
    let client = context.client.clone();
    let index: SharedIndex = Arc::default();
    let nabsls: Api<NonAdminBackupStorageLocation> = Api::all(client.clone());
    let bsls: Api<BackupStorageLocation> = Api::namespaced(client.clone(), &context.oadp_namespace);
    let requests: Api<NonAdminBackupStorageLocationRequest> =
        Api::namespaced(client.clone(), &context.oadp_namespace);
    // NAC's own Secret copies, in the OADP namespace only (a copy changed or vanished is
    // restored); tenant Secrets are looked at by name on a timer, never listed or watched.
    let copies: Api<Secret> = Api::namespaced(client.clone(), &context.oadp_namespace);
    let ours =
        watcher::Config::default().labels(&format!("{}={}", labels::OADP, labels::OADP_VALUE));
    let rotations = secret_rotations(client.clone(), index.clone(), SECRET_POLL);
    let controller = super::velero_cache::lean_controller(nabsls, watcher::Config::default())
        .watches(bsls, ours.clone(), |b: BackupStorageLocation| {
            origin_ref(&b.metadata)
        })
        .watches(
            requests,
            ours.clone(),
            |r: NonAdminBackupStorageLocationRequest| origin_ref(&r.metadata),
        )
        .watches(copies, ours, |s: Secret| origin_ref(&s.metadata))
        .reconcile_on(rotations);
    driver::run(controller, NabslReconciler { index: Some(index) }, context).await;
}

/// A violation's message, prefixed with its field when the message does not name it.
fn named(violation: &PolicyViolation) -> String {
    if violation.message.contains(&violation.field) {
        violation.message.clone()
    } else {
        format!("{}: {}", violation.field, violation.message)
    }
}

fn messages(violations: &[PolicyViolation]) -> String {
    violations.iter().map(named).collect::<Vec<_>>().join("; ")
}

/// The policy's verdict on a NABSL spec: the Velero spec (credential name `secret_copy_name`),
/// or the message refusing it. `tenant_secret` is the Secret its credential names, if it exists.
pub fn verdict(
    namespace: &str,
    spec: &BackupStorageLocationSpec,
    policy: &crate::policy::EffectivePolicy,
    tenant_secret: Option<&Secret>,
    secret_copy_name: &str,
) -> Result<BackupStorageLocationSpec, String> {
    crate::policy::validate_bsl_spec(namespace, spec, policy, tenant_secret.is_some())
        .map_err(|v| messages(&v))?;
    let key = spec
        .credential
        .as_ref()
        .map(|c| c.key.clone())
        .unwrap_or_default();
    let name = spec
        .credential
        .as_ref()
        .map(|c| c.name.clone())
        .unwrap_or_default();
    let Some(value) = tenant_secret
        .and_then(|s| s.data.as_ref())
        .and_then(|d| d.get(&key))
    else {
        return Err(format!(
            "{CREDENTIAL_FIELD}.key: Secret {name:?} has no key {key:?}"
        ));
    };
    let text = String::from_utf8_lossy(&value.0);
    crate::policy::check_bsl_credential(&text).map_err(|v| named(&v))?;
    // The file as Velero reads it must hold static keys (AWS; issue 17).
    crate::policy::bsl::check_static_credentials(spec, &text, policy).map_err(|v| named(&v))?;
    // A base64-wrapped file is checked too (some tools store the file encoded once more).
    if let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(text.trim()) {
        crate::policy::check_bsl_credential(&String::from_utf8_lossy(&decoded))
            .map_err(|v| named(&v))?;
    }
    crate::policy::build_velero_bsl_spec(namespace, spec, policy, secret_copy_name, &key)
        .map_err(|v| named(&v))
}

/// One reconcile without the Secret index (tests, one-shot runs).
pub async fn reconcile(
    nabsl: Arc<NonAdminBackupStorageLocation>,
    context: Arc<Context>,
) -> Result<Action, ControllerError> {
    driver::reconcile(&NabslReconciler { index: None }, nabsl, context).await
}

/// NonAdminBackupStorageLocations, run by the [`driver`]: observes the verdict on the NABSL
/// (with the content of its credential Secret), its approval request, Secret copy and Velero
/// BSL; [`nabsl_decision::decide`] decides. Keeps the Secret index (see the module's doc)
/// current when it has one.
pub struct NabslReconciler {
    index: Option<SharedIndex>,
}

/// What a NABSL's decision looks at besides the NABSL.
pub struct NabslObserved {
    verdict: Result<BackupStorageLocationSpec, String>,
    require_approval: bool,
    request: Option<NonAdminBackupStorageLocationRequest>,
    tenant_secret: Option<Secret>,
    copied_secret: Option<Secret>,
    velero_bsl: Option<BackupStorageLocation>,
    backups: Vec<(String, bool)>,
    fresh_uuid: uuid::Uuid,
    now: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
}

impl Reconciler for NabslReconciler {
    type Object = NonAdminBackupStorageLocation;
    type Observed = NabslObserved;
    type Step = NabslStep;
    const KIND: &'static str = CONTROLLER_NAME;

    fn api(
        &self,
        client: kube::Client,
        namespace: Option<&str>,
    ) -> Api<NonAdminBackupStorageLocation> {
        Api::namespaced(client, namespace.unwrap_or_default())
    }

    async fn observe(
        &self,
        context: &Context,
        nabsl: &NonAdminBackupStorageLocation,
    ) -> Result<NabslObserved, ControllerError> {
        self.observe_location(context, nabsl).await
    }

    fn decide(
        &self,
        context: &Context,
        nabsl: &NonAdminBackupStorageLocation,
        observed: &NabslObserved,
    ) -> NabslStep {
        nabsl_decision::decide(&NabslObservation {
            nabsl,
            verdict: observed.verdict.clone(),
            require_approval: observed.require_approval,
            request: observed.request.as_ref(),
            tenant_secret: observed.tenant_secret.as_ref(),
            copied_secret: observed.copied_secret.as_ref(),
            velero_bsl: observed.velero_bsl.as_ref(),
            backups: observed.backups.clone(),
            oadp_namespace: &context.oadp_namespace,
            fresh_uuid: observed.fresh_uuid,
            now: observed.now.clone(),
        })
    }

    const DECIDES_ON_CACHED_COPY: bool = true;

    fn writes_object(step: &NabslStep) -> bool {
        matches!(
            step,
            NabslStep::WriteStatus(_) | NabslStep::AddFinalizer | NabslStep::RemoveFinalizer
        )
    }

    /// Status and finalizer writes carry the resourceVersion read (a stale copy's write
    /// conflicts and is decided again); waiting needs nothing. Writes elsewhere read afresh.
    fn needs_fresh_read(step: &NabslStep) -> bool {
        !matches!(
            step,
            NabslStep::WriteStatus(_)
                | NabslStep::AddFinalizer
                | NabslStep::RemoveFinalizer
                | NabslStep::AwaitChange
                | NabslStep::RequeueAfter(_)
        )
    }

    fn step_name(step: &NabslStep) -> &'static str {
        step_name(step)
    }

    fn notice(
        &self,
        nabsl: &NonAdminBackupStorageLocation,
        _: &NabslObserved,
        step: &NabslStep,
    ) -> Option<Notice<'static>> {
        nabsl_decision::notice(nabsl, step)
    }

    async fn apply(
        &self,
        context: &Context,
        api: &Api<NonAdminBackupStorageLocation>,
        nabsl: &NonAdminBackupStorageLocation,
        step: NabslStep,
    ) -> Result<Applied, ControllerError> {
        let (action, took_effect) = apply(context, api, nabsl, step).await?;
        Ok(Applied {
            action,
            took_effect,
        })
    }

    fn forget(&self, _: &Context, namespace: Option<&str>, name: &str) {
        if let Some(index) = &self.index
            && let Ok(mut index) = index.write()
        {
            index.set(namespace.unwrap_or_default(), name, None);
        }
    }
}

impl NabslReconciler {
    /// Reads what the decision on `nabsl` needs — the tenant's credential Secret (by name), NAC's
    /// request, Secret copy and Velero BSL (by the NACUUID label), on deletion the NABs naming
    /// it, the policy's verdict — and records in the Secret index what was read.
    async fn observe_location(
        &self,
        context: &Context,
        nabsl: &NonAdminBackupStorageLocation,
    ) -> Result<NabslObserved, ControllerError> {
        let namespace = nabsl.metadata.namespace.clone().unwrap_or_default();
        let name = nabsl.metadata.name.clone().unwrap_or_default();
        let spec = &nabsl.spec.backup_storage_location_spec;
        let secret_name = spec
            .credential
            .as_ref()
            .map(|c| c.name.clone())
            .filter(|n| !n.is_empty());
        if let Some(index) = &self.index
            && let Ok(mut index) = index.write()
        {
            let live = nabsl.metadata.deletion_timestamp.is_none();
            index.set(&namespace, &name, secret_name.as_deref().filter(|_| live));
        }
        let nacuuid = nabsl
            .status
            .as_ref()
            .and_then(|s| s.velero_backup_storage_location.as_ref())
            .and_then(|v| v.nacuuid.clone())
            .filter(|u| !u.is_empty());
        let oadp = &context.oadp_namespace;
        let tenant_secrets: Api<Secret> = Api::namespaced(context.client.clone(), &namespace);
        let tenant_secret = match &secret_name {
            Some(s) if nabsl.metadata.deletion_timestamp.is_none() => {
                tenant_secrets.get_opt(s).await?
            }
            _ => None,
        };
        // What was read is what a rotation is told apart from.
        if let (Some(index), Some(secret)) = (&self.index, &secret_name)
            && nabsl.metadata.deletion_timestamp.is_none()
            && let Ok(mut index) = index.write()
        {
            let read = tenant_secret
                .as_ref()
                .and_then(|s| s.metadata.resource_version.as_deref());
            index.record_read(&namespace, secret, read);
        }
        let (request, copied_secret, velero_bsl) = match &nacuuid {
            Some(id) => {
                let selector =
                    ListParams::default().labels(&format!("{}={id}", labels::NABSL_ORIGIN_NACUUID));
                let requests: Api<NonAdminBackupStorageLocationRequest> =
                    Api::namespaced(context.client.clone(), oadp);
                let secrets: Api<Secret> = Api::namespaced(context.client.clone(), oadp);
                let bsls: Api<BackupStorageLocation> =
                    Api::namespaced(context.client.clone(), oadp);
                (
                    requests.list(&selector).await?.items.into_iter().next(),
                    secrets.list(&selector).await?.items.into_iter().next(),
                    bsls.list(&selector).await?.items.into_iter().next(),
                )
            }
            None => (None, None, None),
        };
        // On deletion, the NonAdminBackups that name this location go with it (as upstream).
        let backups = if nabsl.metadata.deletion_timestamp.is_some() {
            let nabs: Api<NonAdminBackup> = Api::namespaced(context.client.clone(), &namespace);
            using_location(&nabs.list(&ListParams::default()).await?.items, &name)
        } else {
            Vec::new()
        };
        let policy = context.effective_policy(&namespace).await?;
        let verdict = verdict(
            &namespace,
            spec,
            &policy,
            tenant_secret.as_ref(),
            nacuuid.as_deref().unwrap_or_default(),
        );
        // A bucket of the shared backup pool is never a tenant's (seed 001): its credential would
        // reach every other tenant's entry.
        let verdict = match verdict {
            Ok(velero_spec) if nabsl.metadata.deletion_timestamp.is_none() => {
                let pool = super::bucket::pool_bucket_refs(context).await?;
                crate::policy::bsl::check_not_pool_bucket(spec, &pool)
                    .map(|()| velero_spec)
                    .map_err(|v| named(&v))
            }
            other => other,
        };
        Ok(NabslObserved {
            verdict,
            require_approval: policy.settings.require_approval_for_bsl,
            request,
            tenant_secret,
            copied_secret,
            velero_bsl,
            backups,
            fresh_uuid: uuid::Uuid::new_v4(),
            now: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::now(),
            ),
        })
    }
}

/// The NonAdminBackups among `nabs` whose `spec.backupSpec.storageLocation` is `location`, and
/// whether each is being deleted.
pub fn using_location(nabs: &[NonAdminBackup], location: &str) -> Vec<(String, bool)> {
    nabs.iter()
        .filter(|nab| nab.spec.backup_spec.storage_location.as_deref() == Some(location))
        .filter_map(|nab| {
            Some((
                nab.metadata.name.clone()?,
                nab.metadata.deletion_timestamp.is_some(),
            ))
        })
        .collect()
}

/// The step's name for logs (steps may carry Secret data, which is never logged).
fn step_name(step: &NabslStep) -> &'static str {
    match step {
        NabslStep::WriteStatus(_) => "WriteStatus",
        NabslStep::AddFinalizer => "AddFinalizer",
        NabslStep::RemoveFinalizer => "RemoveFinalizer",
        NabslStep::CreateRequest(_) => "CreateRequest",
        NabslStep::WriteRequestStatus(_) => "WriteRequestStatus",
        NabslStep::ResetRequestDecision(_) => "ResetRequestDecision",
        NabslStep::DeleteRequest(_) => "DeleteRequest",
        NabslStep::CreateSecret(_) => "CreateSecret",
        NabslStep::ReplaceSecret(_) => "ReplaceSecret",
        NabslStep::DeleteSecret(_) => "DeleteSecret",
        NabslStep::CreateBsl(_) => "CreateBsl",
        NabslStep::ReplaceBsl(_) => "ReplaceBsl",
        NabslStep::DeleteBsl(_) => "DeleteBsl",
        NabslStep::DeleteBackups(_) => "DeleteBackups",
        NabslStep::AwaitChange => "AwaitChange",
        NabslStep::RequeueAfter(_) => "RequeueAfter",
    }
}

/// Whether the call changed something: `Ok(false)` when it failed with `code` (already done).
fn ignore(result: Result<(), kube::Error>, code: u16) -> Result<bool, ControllerError> {
    match result {
        Ok(()) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == code => Ok(false),
        Err(e) => Err(e.into()),
    }
}

async fn write_status(
    api: &Api<NonAdminBackupStorageLocation>,
    nabsl: &NonAdminBackupStorageLocation,
    status: &NonAdminBackupStorageLocationStatus,
) -> Result<(), kube::Error> {
    let mut next = nabsl.clone();
    next.status = Some(status.clone());
    let name = nabsl.metadata.name.clone().unwrap_or_default();
    api.replace_status(&name, &PostParams::default(), &next)
        .await
        .map(|_| ())
}

/// Records the outcome of a Secret copy or Velero BSL write in the NABSL status, as upstream
/// does: `done` once written, `failed` (best effort) before the error is returned. A create that
/// found the object there took no effect; the next pass records it.
async fn recorded<T>(
    api: &Api<NonAdminBackupStorageLocation>,
    nabsl: &NonAdminBackupStorageLocation,
    result: Result<(), kube::Error>,
    write: &SyncWrite<T>,
) -> Result<bool, ControllerError> {
    match result {
        Ok(()) => {
            write_status(api, nabsl, &write.done).await?;
            Ok(true)
        }
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
        Err(error) => {
            if let Err(status_error) = write_status(api, nabsl, &write.failed).await {
                tracing::debug!(error = %status_error, "cannot record the failed sync");
            }
            Err(error.into())
        }
    }
}

/// Applies `step`; also says whether it took effect (a create that found the object already
/// there did not, so its Event is not published twice).
async fn apply(
    context: &Context,
    api: &Api<NonAdminBackupStorageLocation>,
    nabsl: &NonAdminBackupStorageLocation,
    step: NabslStep,
) -> Result<(Action, bool), ControllerError> {
    let name = nabsl.metadata.name.clone().unwrap_or_default();
    let oadp = &context.oadp_namespace;
    let client = context.client.clone();
    let requests: Api<NonAdminBackupStorageLocationRequest> = Api::namespaced(client.clone(), oadp);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), oadp);
    let bsls: Api<BackupStorageLocation> = Api::namespaced(client.clone(), oadp);
    let post = PostParams::default();
    let delete = DeleteParams::default();
    let took_effect = match step {
        NabslStep::WriteStatus(status) => {
            let mut next = nabsl.clone();
            next.status = Some(*status);
            api.replace_status(&name, &post, &next).await?;
            true
        }
        NabslStep::AddFinalizer | NabslStep::RemoveFinalizer => {
            let mut list: Vec<String> = nabsl
                .metadata
                .finalizers
                .clone()
                .unwrap_or_default()
                .into_iter()
                .filter(|f| f != finalizers::NON_ADMIN_BACKUP_STORAGE_LOCATION)
                .collect();
            let adding = matches!(step, NabslStep::AddFinalizer);
            if adding {
                list.push(finalizers::NON_ADMIN_BACKUP_STORAGE_LOCATION.to_string());
            }
            // The resourceVersion makes this a compare-and-swap: no finalizer of others is lost.
            let patch = json!({"metadata": {"finalizers": list, "resourceVersion": nabsl.metadata.resource_version}});
            let result = api
                .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                .await
                .map(|_| ());
            let patched = ignore(result, 404)?;
            if !adding {
                return Ok((Action::await_change(), patched));
            }
            patched
        }
        NabslStep::CreateRequest(request) => {
            ignore(requests.create(&post, &request).await.map(|_| ()), 409)?
        }
        NabslStep::WriteRequestStatus(request) => {
            let rname = request.metadata.name.clone().unwrap_or_default();
            requests.replace_status(&rname, &post, &request).await?;
            true
        }
        NabslStep::ResetRequestDecision(rname) => {
            let patch = json!({"spec": {"approvalDecision": "pending"}});
            requests
                .patch(&rname, &PatchParams::default(), &Patch::Merge(patch))
                .await?;
            true
        }
        NabslStep::DeleteRequest(rname) => {
            ignore(requests.delete(&rname, &delete).await.map(|_| ()), 404)?
        }
        NabslStep::CreateSecret(write) => {
            let result = secrets.create(&post, &write.object).await.map(|_| ());
            recorded(api, nabsl, result, &write).await?
        }
        NabslStep::ReplaceSecret(write) => {
            let sname = write.object.metadata.name.clone().unwrap_or_default();
            let result = secrets.replace(&sname, &post, &write.object).await;
            recorded(api, nabsl, result.map(|_| ()), &write).await?
        }
        NabslStep::DeleteSecret(sname) => {
            ignore(secrets.delete(&sname, &delete).await.map(|_| ()), 404)?
        }
        NabslStep::CreateBsl(write) => {
            let result = bsls.create(&post, &write.object).await.map(|_| ());
            recorded(api, nabsl, result, &write).await?
        }
        NabslStep::ReplaceBsl(write) => {
            let bname = write.object.metadata.name.clone().unwrap_or_default();
            let result = bsls.replace(&bname, &post, &write.object).await;
            recorded(api, nabsl, result.map(|_| ()), &write).await?
        }
        NabslStep::DeleteBsl(bname) => ignore(bsls.delete(&bname, &delete).await.map(|_| ()), 404)?,
        NabslStep::DeleteBackups(names) => {
            let namespace = nabsl.metadata.namespace.clone().unwrap_or_default();
            let nabs: Api<NonAdminBackup> = Api::namespaced(client.clone(), &namespace);
            let mut any = false;
            for nab in names {
                any |= ignore(nabs.delete(&nab, &delete).await.map(|_| ()), 404)?;
            }
            any
        }
        NabslStep::AwaitChange => return Ok((Action::await_change(), false)),
        NabslStep::RequeueAfter(d) => return Ok((Action::requeue(d), false)),
    };
    Ok((Action::requeue(SOON), took_effect))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn the_backups_naming_a_location_are_found_by_their_storage_location() {
        let nab = |name: &str, location: Option<&str>, deleting: bool| -> NonAdminBackup {
            let mut v = json!({"apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
                "metadata": {"name": name, "namespace": "team-a"}, "spec": {"backupSpec": {}}});
            if let Some(l) = location {
                v["spec"]["backupSpec"]["storageLocation"] = json!(l);
            }
            if deleting {
                v["metadata"]["deletionTimestamp"] = json!("2027-01-15T08:00:00Z");
            }
            serde_json::from_value(v).unwrap()
        };
        let nabs = [
            nab("a", Some("mine"), false),
            nab("b", Some("other"), false),
            nab("c", None, false),
            nab("d", Some("mine"), true),
        ];
        assert_eq!(
            using_location(&nabs, "mine"),
            [("a".to_string(), false), ("d".to_string(), true)]
        );
        assert!(using_location(&nabs, "none").is_empty());
    }

    #[test]
    fn the_index_maps_named_secrets_to_their_nabsls_and_what_was_read() {
        let mut index = SecretIndex::default();
        index.set("team-a", "one", Some("creds"));
        index.set("team-a", "two", Some("creds"));
        index.set("team-b", "three", Some("creds"));
        assert_eq!(index.nabsls_of("team-a", "creds"), ["one", "two"]);
        assert_eq!(index.nabsls_of("team-b", "creds"), ["three"]);
        // Nothing to look at before a reconcile read the Secret.
        assert!(index.watched().is_empty());
        index.record_read("team-a", "creds", Some("41"));
        index.record_read("team-b", "creds", None);
        // A Secret no NABSL names is never looked at.
        index.record_read("team-c", "unrelated", Some("7"));
        let mut watched = index.watched();
        watched.sort();
        assert_eq!(
            watched,
            [
                ("team-a".into(), "creds".into(), Some("41".into())),
                ("team-b".into(), "creds".into(), None),
            ]
        );
        // A NABSL that names another Secret (or is gone) stops its old one being looked at
        // once no NABSL names it.
        index.set("team-b", "three", Some("other"));
        index.set("team-a", "one", None);
        assert_eq!(index.nabsls_of("team-a", "creds"), ["two"]);
        let watched = index.watched();
        assert_eq!(
            watched,
            [("team-a".into(), "creds".into(), Some("41".into()))]
        );
        index.set("team-a", "two", None);
        assert!(index.watched().is_empty());
        assert!(index.nabsls_of("team-a", "creds").is_empty());
    }

    #[test]
    fn a_secret_moved_when_its_resource_version_did() {
        assert!(!secret_moved(Some("41"), Some("41")));
        assert!(secret_moved(Some("41"), Some("42")), "rotated");
        assert!(secret_moved(Some("41"), None), "deleted");
        assert!(secret_moved(None, Some("1")), "created after the NABSL");
        assert!(!secret_moved(None, None));
    }
}
