//! The NonAdminDownloadRequest controller: observes a NADR (read fresh), the NAB or NAR it
//! names in its own namespace, and its Velero DownloadRequest `nadr-<uid>` in the OADP
//! namespace, asks [`nadr_decision::decide`] for the next step, and applies it. Its finalizer
//! removes the Velero request of a NADR deleted before the URL expired.
use std::sync::Arc;

use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use serde_json::json;

use super::driver::{self, Applied, Reconciler, SOON};
use super::events::Notice;
use super::nadr_decision::{self, NadrObservation, NadrStep, Target};
use super::{Context, ControllerError};
use crate::api::nonadmin::labels::{self, finalizers};
use crate::api::nonadmin::{NonAdminBackup, NonAdminDownloadRequest, NonAdminRestore};
use crate::api::velero::DownloadRequest;

/// This controller's name in metrics.
pub const CONTROLLER_NAME: &str = "nonadmindownloadrequest";

/// The NADR a Velero DownloadRequest was created for, from its origin annotations.
fn origin_ref(meta: &kube::core::ObjectMeta) -> Option<ObjectRef<NonAdminDownloadRequest>> {
    let a = meta.annotations.as_ref()?;
    let name = a.get(labels::NADR_ORIGIN_NAME_ANNOTATION)?;
    let namespace = a.get(labels::NADR_ORIGIN_NAMESPACE_ANNOTATION)?;
    Some(ObjectRef::new(name).within(namespace))
}

/// Runs the controller until the task is dropped.
pub async fn run(context: Arc<Context>) {
    let client = context.client.clone();
    let nadrs: Api<NonAdminDownloadRequest> = Api::all(client.clone());
    let requests: Api<DownloadRequest> = Api::namespaced(client, &context.oadp_namespace);
    // Only NAC's own Velero objects matter, so the watch is scoped by label.
    let ours =
        watcher::Config::default().labels(&format!("{}={}", labels::OADP, labels::OADP_VALUE));
    let controller = super::velero_cache::lean_controller(nadrs, watcher::Config::default())
        .watches(requests, ours, |r: DownloadRequest| origin_ref(&r.metadata));
    driver::run(controller, NadrReconciler, context).await;
}

/// Resolves the NADR's target in its own namespace (never another one).
async fn target(
    context: &Context,
    nadr: &NonAdminDownloadRequest,
) -> Result<Target, ControllerError> {
    let namespace = nadr.metadata.namespace.clone().unwrap_or_default();
    let name = nadr.spec.target.name.clone();
    if name.is_empty() {
        return Ok(Target::Unavailable("spec.target.name is empty".into()));
    }
    if nadr.spec.target.kind.is_restore_artifact() {
        let api: Api<NonAdminRestore> = Api::namespaced(context.client.clone(), &namespace);
        let nar = api.get_opt(&name).await?;
        Ok(nadr_decision::restore_target(nar.as_ref(), &name))
    } else {
        let api: Api<NonAdminBackup> = Api::namespaced(context.client.clone(), &namespace);
        let nab = api.get_opt(&name).await?;
        Ok(nadr_decision::backup_target(nab.as_ref(), &name))
    }
}

/// One reconcile of `nadr` (through the [`driver`]).
pub async fn reconcile(
    nadr: Arc<NonAdminDownloadRequest>,
    context: Arc<Context>,
) -> Result<Action, ControllerError> {
    driver::reconcile(&NadrReconciler, nadr, context).await
}

/// NonAdminDownloadRequests, run by the [`driver`]: observes the NADR's Velero DownloadRequest
/// and the NAB or NAR it names; [`nadr_decision::decide`] decides.
pub struct NadrReconciler;

/// What a NADR's decision looks at besides the NADR.
pub struct NadrObserved {
    target: Target,
    velero_request: Option<DownloadRequest>,
    now: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
}

impl Reconciler for NadrReconciler {
    type Object = NonAdminDownloadRequest;
    type Observed = NadrObserved;
    type Step = NadrStep;
    const KIND: &'static str = CONTROLLER_NAME;

    fn api(&self, client: kube::Client, namespace: Option<&str>) -> Api<NonAdminDownloadRequest> {
        Api::namespaced(client, namespace.unwrap_or_default())
    }

    /// The Velero request `nadr-<uid>`, and while none exists (and the NADR is not deleted)
    /// what its target resolves to.
    async fn observe(
        &self,
        context: &Context,
        nadr: &NonAdminDownloadRequest,
    ) -> Result<NadrObserved, ControllerError> {
        let requests: Api<DownloadRequest> =
            Api::namespaced(context.client.clone(), &context.oadp_namespace);
        let velero_request = requests
            .get_opt(&nadr_decision::velero_request_name(nadr))
            .await?;
        let target = if velero_request.is_none() && nadr.metadata.deletion_timestamp.is_none() {
            target(context, nadr).await?
        } else {
            Target::Ready(String::new())
        };
        Ok(NadrObserved {
            target,
            velero_request,
            now: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::now(),
            ),
        })
    }

    fn decide(
        &self,
        context: &Context,
        nadr: &NonAdminDownloadRequest,
        observed: &NadrObserved,
    ) -> NadrStep {
        nadr_decision::decide(&NadrObservation {
            nadr,
            target: observed.target.clone(),
            velero_request: observed.velero_request.as_ref(),
            oadp_namespace: &context.oadp_namespace,
            now: observed.now.clone(),
        })
    }

    fn step_name(step: &NadrStep) -> &'static str {
        match step {
            NadrStep::WriteStatus(_) => "WriteStatus",
            NadrStep::AddFinalizer => "AddFinalizer",
            NadrStep::RemoveFinalizer => "RemoveFinalizer",
            NadrStep::CreateVeleroRequest(_) => "CreateVeleroRequest",
            NadrStep::DeleteVeleroRequest(_) => "DeleteVeleroRequest",
            NadrStep::Expire => "Expire",
            NadrStep::AwaitChange => "AwaitChange",
            NadrStep::RequeueAfter(_) => "RequeueAfter",
        }
    }

    fn notice(
        &self,
        nadr: &NonAdminDownloadRequest,
        _: &NadrObserved,
        step: &NadrStep,
    ) -> Option<Notice<'static>> {
        nadr_decision::notice(nadr, step)
    }

    async fn apply(
        &self,
        context: &Context,
        api: &Api<NonAdminDownloadRequest>,
        nadr: &NonAdminDownloadRequest,
        step: NadrStep,
    ) -> Result<Applied, ControllerError> {
        let requests: Api<DownloadRequest> =
            Api::namespaced(context.client.clone(), &context.oadp_namespace);
        let (action, took_effect) = apply(&requests, api, nadr, step).await?;
        Ok(Applied {
            action,
            took_effect,
        })
    }
}

/// Applies `step`; also says whether it took effect (a create that found the request already
/// there did not).
async fn apply(
    requests: &Api<DownloadRequest>,
    api: &Api<NonAdminDownloadRequest>,
    nadr: &NonAdminDownloadRequest,
    step: NadrStep,
) -> Result<(Action, bool), ControllerError> {
    let name = nadr.metadata.name.clone().unwrap_or_default();
    match step {
        NadrStep::WriteStatus(status) => {
            let mut next = nadr.clone();
            next.status = Some(*status);
            api.replace_status(&name, &PostParams::default(), &next)
                .await?;
            Ok((Action::requeue(SOON), true))
        }
        NadrStep::AddFinalizer | NadrStep::RemoveFinalizer => {
            let adding = matches!(step, NadrStep::AddFinalizer);
            let mut list: Vec<String> = nadr
                .metadata
                .finalizers
                .clone()
                .unwrap_or_default()
                .into_iter()
                .filter(|f| f != finalizers::NON_ADMIN_DOWNLOAD_REQUEST)
                .collect();
            if adding {
                list.push(finalizers::NON_ADMIN_DOWNLOAD_REQUEST.to_string());
            }
            // The resourceVersion makes this a compare-and-swap: no finalizer of others is lost.
            let patch = json!({"metadata": {"finalizers": list, "resourceVersion": nadr.metadata.resource_version}});
            let patched = ignore_not_found(
                api.patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                    .await,
            )?;
            let action = if adding {
                Action::requeue(SOON)
            } else {
                Action::await_change()
            };
            Ok((action, patched))
        }
        NadrStep::CreateVeleroRequest(request) => {
            let created = match requests.create(&PostParams::default(), &request).await {
                Ok(_) => true,
                Err(kube::Error::Api(s)) if s.code == 409 => false,
                Err(e) => return Err(e.into()),
            };
            Ok((Action::requeue(SOON), created))
        }
        NadrStep::DeleteVeleroRequest(velero_name) => {
            let deleted = ignore_not_found(
                requests
                    .delete(&velero_name, &DeleteParams::default())
                    .await,
            )?;
            Ok((Action::requeue(SOON), deleted))
        }
        NadrStep::Expire => {
            let velero_name = nadr_decision::velero_request_name(nadr);
            ignore_not_found(
                requests
                    .delete(&velero_name, &DeleteParams::default())
                    .await,
            )?;
            let deleted = ignore_not_found(api.delete(&name, &DeleteParams::default()).await)?;
            // The finalizer is removed by the pass the deletion triggers.
            Ok((Action::await_change(), deleted))
        }
        NadrStep::AwaitChange => Ok((Action::await_change(), false)),
        NadrStep::RequeueAfter(d) => Ok((Action::requeue(d), false)),
    }
}

/// `Ok(true)` when the call succeeded, `Ok(false)` when the object was already gone.
fn ignore_not_found<T>(result: Result<T, kube::Error>) -> Result<bool, ControllerError> {
    match result {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
        Err(e) => Err(e.into()),
    }
}
