//! The NonAdminBackupStorageLocation controller: observes a NABSL (read fresh), the policy's
//! verdict on it (including the content of the tenant's credential Secret), its approval request,
//! Secret copy and Velero BSL (found by the NACUUID label in the OADP namespace), asks
//! [`nabsl_decision::decide`] for the next step, and applies it.
//!
//! Secret rotation: a watch on Secrets is mapped back to the NABSLs that reference them through
//! an in-memory reverse index (`(namespace, secret name)` → NABSL names) that each reconcile
//! keeps current. Secret events are only mapped, never stored: no Secret content is cached.
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use base64::Engine as _;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use serde_json::json;

use super::nabsl_decision::{self, NabslObservation, NabslStep};
use super::{Context, ControllerError, events, health};
use crate::api::nonadmin::labels::{self, finalizers};
use crate::api::nonadmin::{NonAdminBackupStorageLocation, NonAdminBackupStorageLocationRequest};
use crate::api::velero::{BackupStorageLocation, BackupStorageLocationSpec};
use crate::policy::PolicyViolation;

const CREDENTIAL_FIELD: &str = "spec.backupStorageLocationSpec.credential";
/// This controller's name in metrics.
pub const CONTROLLER_NAME: &str = "nonadminbackupstoragelocation";
const SOON: Duration = Duration::from_millis(20);

/// `(namespace, Secret name)` → names of the NABSLs in that namespace whose credential it is.
#[derive(Debug, Default)]
pub struct SecretIndex {
    by_secret: HashMap<(String, String), BTreeSet<String>>,
    by_nabsl: HashMap<(String, String), String>,
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

    /// The NABSLs that reference Secret `namespace/secret`.
    pub fn nabsls_of(&self, namespace: &str, secret: &str) -> Vec<String> {
        self.by_secret
            .get(&(namespace.to_string(), secret.to_string()))
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default()
    }
}

type SharedIndex = Arc<RwLock<SecretIndex>>;

fn key(nabsl: &NonAdminBackupStorageLocation) -> String {
    format!(
        "nabsl/{}/{}",
        nabsl.metadata.namespace.as_deref().unwrap_or_default(),
        nabsl.metadata.name.as_deref().unwrap_or_default()
    )
}

/// The NABSL a NAC-made object was created for, from its origin annotations.
fn origin_ref(meta: &kube::core::ObjectMeta) -> Option<ObjectRef<NonAdminBackupStorageLocation>> {
    let a = meta.annotations.as_ref()?;
    let name = a.get(labels::NABSL_ORIGIN_NAME_ANNOTATION)?;
    let namespace = a.get(labels::NABSL_ORIGIN_NAMESPACE_ANNOTATION)?;
    Some(ObjectRef::new(name).within(namespace))
}

fn secret_refs(
    secret: &Secret,
    index: &SharedIndex,
    oadp_namespace: &str,
) -> Vec<ObjectRef<NonAdminBackupStorageLocation>> {
    let namespace = secret.metadata.namespace.as_deref().unwrap_or_default();
    if namespace == oadp_namespace {
        // A copy changed or vanished: restore it.
        return origin_ref(&secret.metadata).into_iter().collect();
    }
    let name = secret.metadata.name.as_deref().unwrap_or_default();
    let Ok(index) = index.read() else {
        return Vec::new();
    };
    index
        .nabsls_of(namespace, name)
        .into_iter()
        .map(|n| ObjectRef::new(&n).within(namespace))
        .collect()
}

/// Runs the controller until the task is dropped.
pub async fn run(context: Arc<Context>) {
    let client = context.client.clone();
    let index: SharedIndex = Arc::default();
    let nabsls: Api<NonAdminBackupStorageLocation> = Api::all(client.clone());
    let bsls: Api<BackupStorageLocation> = Api::namespaced(client.clone(), &context.oadp_namespace);
    let requests: Api<NonAdminBackupStorageLocationRequest> =
        Api::namespaced(client.clone(), &context.oadp_namespace);
    // Secret events are mapped through the index, never stored.
    let secrets: Api<Secret> = Api::all(client.clone());
    let ours =
        watcher::Config::default().labels(&format!("{}={}", labels::OADP, labels::OADP_VALUE));
    let mapper_index = index.clone();
    let oadp_namespace = context.oadp_namespace.clone();
    Controller::new(nabsls, watcher::Config::default())
        .watches(bsls, ours.clone(), |b: BackupStorageLocation| {
            origin_ref(&b.metadata)
        })
        .watches(requests, ours, |r: NonAdminBackupStorageLocationRequest| {
            origin_ref(&r.metadata)
        })
        .watches(secrets, watcher::Config::default(), move |s: Secret| {
            secret_refs(&s, &mapper_index, &oadp_namespace)
        })
        .run(
            move |nabsl, context| {
                let index = index.clone();
                async move { reconcile_indexed(nabsl, context, Some(&index)).await }
            },
            error_policy,
            context,
        )
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "nonadminbackupstoragelocation reconcile error");
            }
        })
        .await;
}

fn error_policy(
    nabsl: Arc<NonAdminBackupStorageLocation>,
    error: &ControllerError,
    context: Arc<Context>,
) -> Action {
    let wait = context.backoff(&key(&nabsl));
    tracing::warn!(nabsl = %key(&nabsl), error = %error, retry_in = ?wait, "reconcile failed");
    Action::requeue(wait)
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
    reconcile_indexed(nabsl, context, None).await
}

async fn reconcile_indexed(
    nabsl: Arc<NonAdminBackupStorageLocation>,
    context: Arc<Context>,
    index: Option<&SharedIndex>,
) -> Result<Action, ControllerError> {
    let result = reconcile_once(&nabsl, &context, index).await;
    health::record(CONTROLLER_NAME, result.as_ref().err());
    result
}

async fn reconcile_once(
    nabsl: &NonAdminBackupStorageLocation,
    context: &Context,
    index: Option<&SharedIndex>,
) -> Result<Action, ControllerError> {
    let namespace = nabsl.metadata.namespace.clone().unwrap_or_default();
    let name = nabsl.metadata.name.clone().unwrap_or_default();
    let api: Api<NonAdminBackupStorageLocation> =
        Api::namespaced(context.client.clone(), &namespace);
    // Every decision starts from a fresh read.
    let Some(nabsl) = api.get_opt(&name).await? else {
        if let Some(index) = index
            && let Ok(mut index) = index.write()
        {
            index.set(&namespace, &name, None);
        }
        return Ok(Action::await_change());
    };
    let spec = &nabsl.spec.backup_storage_location_spec;
    let secret_name = spec
        .credential
        .as_ref()
        .map(|c| c.name.clone())
        .filter(|n| !n.is_empty());
    if let Some(index) = index
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
        Some(s) if nabsl.metadata.deletion_timestamp.is_none() => tenant_secrets.get_opt(s).await?,
        _ => None,
    };
    let (request, copied_secret, velero_bsl) = match &nacuuid {
        Some(id) => {
            let selector =
                ListParams::default().labels(&format!("{}={id}", labels::NABSL_ORIGIN_NACUUID));
            let requests: Api<NonAdminBackupStorageLocationRequest> =
                Api::namespaced(context.client.clone(), oadp);
            let secrets: Api<Secret> = Api::namespaced(context.client.clone(), oadp);
            let bsls: Api<BackupStorageLocation> = Api::namespaced(context.client.clone(), oadp);
            (
                requests.list(&selector).await?.items.into_iter().next(),
                secrets.list(&selector).await?.items.into_iter().next(),
                bsls.list(&selector).await?.items.into_iter().next(),
            )
        }
        None => (None, None, None),
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
    let observation = NabslObservation {
        nabsl: &nabsl,
        verdict,
        require_approval: policy.settings.require_approval_for_bsl,
        request: request.as_ref(),
        tenant_secret: tenant_secret.as_ref(),
        copied_secret: copied_secret.as_ref(),
        velero_bsl: velero_bsl.as_ref(),
        oadp_namespace: oadp,
        fresh_uuid: uuid::Uuid::new_v4(),
        now: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::now(),
        ),
    };
    let step = nabsl_decision::decide(&observation);
    tracing::debug!(nabsl = %key(&nabsl), step = step_name(&step), "reconcile step");
    let notice = nabsl_decision::notice(&nabsl, &step);
    let (action, took_effect) = apply(context, &api, &nabsl, step).await?;
    if took_effect {
        events::publish_notice(&context.client, &events::reference(&nabsl), notice).await;
    }
    context.succeeded(&key(&nabsl));
    Ok(action)
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
        NabslStep::CreateSecret(secret) => {
            ignore(secrets.create(&post, &secret).await.map(|_| ()), 409)?
        }
        NabslStep::ReplaceSecret(secret) => {
            let sname = secret.metadata.name.clone().unwrap_or_default();
            secrets.replace(&sname, &post, &secret).await?;
            true
        }
        NabslStep::DeleteSecret(sname) => {
            ignore(secrets.delete(&sname, &delete).await.map(|_| ()), 404)?
        }
        NabslStep::CreateBsl(bsl) => ignore(bsls.create(&post, &bsl).await.map(|_| ()), 409)?,
        NabslStep::ReplaceBsl(bsl) => {
            let bname = bsl.metadata.name.clone().unwrap_or_default();
            bsls.replace(&bname, &post, &bsl).await?;
            true
        }
        NabslStep::DeleteBsl(bname) => ignore(bsls.delete(&bname, &delete).await.map(|_| ()), 404)?,
        NabslStep::AwaitChange => return Ok((Action::await_change(), false)),
        NabslStep::RequeueAfter(d) => return Ok((Action::requeue(d), false)),
    };
    Ok((Action::requeue(SOON), took_effect))
}
