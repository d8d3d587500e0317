//! The NonAdminDownloadRequest controller: observes a NADR (read fresh), the NAB or NAR it
//! names in its own namespace, and its Velero DownloadRequest `nadr-<uid>` in the OADP
//! namespace, asks [`nadr_decision::decide`] for the next step, and applies it.
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;

use super::nadr_decision::{self, NadrObservation, NadrStep, Target};
use super::{Context, ControllerError};
use crate::api::nonadmin::labels;
use crate::api::nonadmin::{NonAdminBackup, NonAdminDownloadRequest, NonAdminRestore};
use crate::api::velero::DownloadRequest;

fn key(nadr: &NonAdminDownloadRequest) -> String {
    format!(
        "nadr/{}/{}",
        nadr.metadata.namespace.as_deref().unwrap_or_default(),
        nadr.metadata.name.as_deref().unwrap_or_default()
    )
}

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
    Controller::new(nadrs, watcher::Config::default())
        .watches(requests, ours, |r: DownloadRequest| origin_ref(&r.metadata))
        .run(reconcile, error_policy, context)
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "nonadmindownloadrequest reconcile error");
            }
        })
        .await;
}

fn error_policy(
    nadr: Arc<NonAdminDownloadRequest>,
    error: &ControllerError,
    context: Arc<Context>,
) -> Action {
    let wait = context.backoff(&key(&nadr));
    tracing::warn!(nadr = %key(&nadr), error = %error, retry_in = ?wait, "reconcile failed");
    Action::requeue(wait)
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

/// One reconcile: observe, decide, apply.
pub async fn reconcile(
    nadr: Arc<NonAdminDownloadRequest>,
    context: Arc<Context>,
) -> Result<Action, ControllerError> {
    let namespace = nadr.metadata.namespace.clone().unwrap_or_default();
    let name = nadr.metadata.name.clone().unwrap_or_default();
    let api: Api<NonAdminDownloadRequest> = Api::namespaced(context.client.clone(), &namespace);
    let Some(nadr) = api.get_opt(&name).await? else {
        return Ok(Action::await_change());
    };
    let requests: Api<DownloadRequest> =
        Api::namespaced(context.client.clone(), &context.oadp_namespace);
    let velero_request = requests
        .get_opt(&nadr_decision::velero_request_name(&nadr))
        .await?;
    let target = if velero_request.is_none() {
        target(&context, &nadr).await?
    } else {
        Target::Ready(String::new())
    };
    let observation = NadrObservation {
        nadr: &nadr,
        target,
        velero_request: velero_request.as_ref(),
        oadp_namespace: &context.oadp_namespace,
        now: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::now(),
        ),
    };
    let step = nadr_decision::decide(&observation);
    tracing::debug!(nadr = %key(&nadr), ?step, "reconcile step");
    let action = apply(&requests, &api, &nadr, step).await?;
    context.succeeded(&key(&nadr));
    Ok(action)
}

const SOON: Duration = Duration::from_millis(20);

async fn apply(
    requests: &Api<DownloadRequest>,
    api: &Api<NonAdminDownloadRequest>,
    nadr: &NonAdminDownloadRequest,
    step: NadrStep,
) -> Result<Action, ControllerError> {
    match step {
        NadrStep::WriteStatus(status) => {
            let mut next = nadr.clone();
            next.status = Some(*status);
            api.replace_status(
                nadr.metadata.name.as_deref().unwrap_or_default(),
                &PostParams::default(),
                &next,
            )
            .await?;
            Ok(Action::requeue(SOON))
        }
        NadrStep::CreateVeleroRequest(request) => {
            match requests.create(&PostParams::default(), &request).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 409 => {}
                Err(e) => return Err(e.into()),
            }
            Ok(Action::requeue(SOON))
        }
        NadrStep::Expire => {
            let velero_name = nadr_decision::velero_request_name(nadr);
            ignore_not_found(
                requests
                    .delete(&velero_name, &DeleteParams::default())
                    .await,
            )?;
            let name = nadr.metadata.name.clone().unwrap_or_default();
            ignore_not_found(api.delete(&name, &DeleteParams::default()).await)?;
            Ok(Action::await_change())
        }
        NadrStep::AwaitChange => Ok(Action::await_change()),
        NadrStep::RequeueAfter(d) => Ok(Action::requeue(d)),
    }
}

fn ignore_not_found<T>(result: Result<T, kube::Error>) -> Result<(), ControllerError> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}
