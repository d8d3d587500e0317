//! The NonAdminSchedule controller: observes a NAS (read fresh), its Velero Schedule (name =
//! NACUUID, OADP namespace), the Velero Backups that schedule made (`velero.io/schedule-name`)
//! and the NABs of the tenant namespace, asks [`nas_decision::decide`] for the next step, and
//! applies it. The template is routed to the shared backup pool as a NAB's spec is.
use std::sync::Arc;

use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use serde_json::json;

use super::driver::{self, Applied, Reconciler, SOON};
use super::events::Notice;
use super::nas_decision::{self, NasObservation, NasStep};
use super::{Context, ControllerError, writes};
use crate::api::nonadmin::labels::{self, finalizers};
use crate::api::nonadmin::{NonAdminBackup, NonAdminBackupSpec, NonAdminSchedule};
use crate::api::velero::{Backup, BackupSpec, Schedule};

/// This controller's name in metrics.
pub const CONTROLLER_NAME: &str = "nonadminschedule";

/// The NAS a Velero Schedule or scheduled Backup belongs to, from its origin annotations.
fn origin_ref(meta: &kube::core::ObjectMeta) -> Option<ObjectRef<NonAdminSchedule>> {
    let a = meta.annotations.as_ref()?;
    let name = a.get(labels::NAS_ORIGIN_NAME_ANNOTATION)?;
    let namespace = a.get(labels::NAS_ORIGIN_NAMESPACE_ANNOTATION)?;
    Some(ObjectRef::new(name).within(namespace))
}

/// Runs the controller until the task is dropped.
pub async fn run(context: Arc<Context>) {
    let client = context.client.clone();
    let all: Api<NonAdminSchedule> = Api::all(client.clone());
    let schedules: Api<Schedule> = Api::namespaced(client.clone(), &context.oadp_namespace);
    let backups: Api<Backup> = Api::namespaced(client, &context.oadp_namespace);
    // Only NAC's own Velero objects matter, so the watches are scoped by label.
    let ours =
        watcher::Config::default().labels(&format!("{}={}", labels::OADP, labels::OADP_VALUE));
    let controller = super::velero_cache::lean_controller(all, watcher::Config::default())
        .watches(schedules, ours.clone(), |s: Schedule| {
            origin_ref(&s.metadata)
        })
        .watches(backups, ours, |b: Backup| origin_ref(&b.metadata));
    driver::run(controller, NasReconciler, context).await;
}

/// The policy's verdict on the template, validated, built and routed to the shared backup
/// pool exactly like a NAB's spec: the Velero spec (or the refusal), and while the
/// namespace's place in the pool is not ready, the message saying why the schedule waits.
async fn verdict(
    context: &Context,
    nas: &NonAdminSchedule,
) -> Result<(Result<BackupSpec, String>, Option<String>), ControllerError> {
    let mut as_nab = NonAdminBackup::new(
        nas.metadata.name.as_deref().unwrap_or_default(),
        NonAdminBackupSpec {
            backup_spec: nas.spec.template.backup_spec.clone(),
            ..Default::default()
        },
    );
    as_nab.metadata.namespace = nas.metadata.namespace.clone();
    let built = super::nab::verdict(context, &as_nab).await?;
    super::nab::routed_to_pool(context, &as_nab, built).await
}

/// One reconcile of `nas` (through the [`driver`]).
pub async fn reconcile(
    nas: Arc<NonAdminSchedule>,
    context: Arc<Context>,
) -> Result<Action, ControllerError> {
    driver::reconcile(&NasReconciler, nas, context).await
}

/// NonAdminSchedules, run by the [`driver`]: observes the NAS's Velero Schedule, the backups it
/// made, the tenant's NABs and the verdict on its template; [`nas_decision::decide`] decides.
pub struct NasReconciler;

/// What a NAS's decision looks at besides the NAS.
pub struct NasObserved {
    velero_schedule: Option<Schedule>,
    velero_backups: Vec<Backup>,
    nabs: Vec<NonAdminBackup>,
    verdict: Result<BackupSpec, String>,
    storage_wait: Option<String>,
    namespace_uid: Option<String>,
    fresh_uuid: uuid::Uuid,
    now: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
}

impl Reconciler for NasReconciler {
    type Object = NonAdminSchedule;
    type Observed = NasObserved;
    type Step = NasStep;
    const KIND: &'static str = CONTROLLER_NAME;

    fn api(&self, client: kube::Client, namespace: Option<&str>) -> Api<NonAdminSchedule> {
        Api::namespaced(client, namespace.unwrap_or_default())
    }

    async fn observe(
        &self,
        context: &Context,
        nas: &NonAdminSchedule,
    ) -> Result<NasObserved, ControllerError> {
        observe(context, nas).await
    }

    fn decide(&self, context: &Context, nas: &NonAdminSchedule, observed: &NasObserved) -> NasStep {
        nas_decision::decide(&NasObservation {
            nas,
            velero_schedule: observed.velero_schedule.as_ref(),
            velero_backups: &observed.velero_backups,
            nabs: &observed.nabs,
            verdict: observed.verdict.clone(),
            oadp_namespace: &context.oadp_namespace,
            fresh_uuid: observed.fresh_uuid,
            now: observed.now.clone(),
            storage_wait: observed.storage_wait.clone(),
            namespace_uid: observed.namespace_uid.as_deref(),
        })
    }

    const DECIDES_ON_CACHED_COPY: bool = true;

    fn writes_object(step: &NasStep) -> bool {
        matches!(
            step,
            NasStep::WriteStatus(_) | NasStep::AddFinalizer | NasStep::RemoveFinalizer
        )
    }

    /// Status and finalizer writes carry the resourceVersion read (a stale copy's write
    /// conflicts and is decided again); waiting needs nothing. Writes elsewhere read afresh.
    fn needs_fresh_read(step: &NasStep) -> bool {
        !matches!(
            step,
            NasStep::WriteStatus(_)
                | NasStep::AddFinalizer
                | NasStep::RemoveFinalizer
                | NasStep::AwaitChange
                | NasStep::RequeueAfter(_)
        )
    }

    fn step_name(step: &NasStep) -> &'static str {
        match step {
            NasStep::WriteStatus(_) => "WriteStatus",
            NasStep::AddFinalizer => "AddFinalizer",
            NasStep::RemoveFinalizer => "RemoveFinalizer",
            NasStep::CreateVeleroSchedule(_) => "CreateVeleroSchedule",
            NasStep::UpdateVeleroSchedule(_) => "UpdateVeleroSchedule",
            NasStep::DeleteVeleroSchedule(_) => "DeleteVeleroSchedule",
            NasStep::LabelVeleroBackup { .. } => "LabelVeleroBackup",
            NasStep::CreateChildNab(_) => "CreateChildNab",
            NasStep::WriteChildStatus(_) => "WriteChildStatus",
            NasStep::DeleteChildNab(_) => "DeleteChildNab",
            NasStep::AwaitChange => "AwaitChange",
            NasStep::RequeueAfter(_) => "RequeueAfter",
        }
    }

    fn notice(
        &self,
        nas: &NonAdminSchedule,
        observed: &NasObserved,
        step: &NasStep,
    ) -> Option<Notice<'static>> {
        nas_decision::notice(nas, observed.velero_schedule.as_ref(), step)
    }

    async fn apply(
        &self,
        context: &Context,
        api: &Api<NonAdminSchedule>,
        nas: &NonAdminSchedule,
        step: NasStep,
    ) -> Result<Applied, ControllerError> {
        let namespace = nas.metadata.namespace.as_deref().unwrap_or_default();
        let nab_api: Api<NonAdminBackup> = Api::namespaced(context.client.clone(), namespace);
        let (action, took_effect) = apply(context, api, &nab_api, nas, step).await?;
        Ok(Applied {
            action,
            took_effect,
        })
    }
}

/// Reads what the decision on `nas` needs: its Velero Schedule, the Velero Backups it made and
/// (only when there are some) the tenant's NABs and namespace UID, and the template's verdict.
async fn observe(
    context: &Context,
    nas: &NonAdminSchedule,
) -> Result<NasObserved, ControllerError> {
    let namespace = nas.metadata.namespace.clone().unwrap_or_default();
    let nacuuid = nas
        .status
        .as_ref()
        .and_then(|s| s.velero_schedule.as_ref())
        .and_then(|v| v.nacuuid.clone())
        .filter(|u| !u.is_empty());
    let schedules: Api<Schedule> = Api::namespaced(context.client.clone(), &context.oadp_namespace);
    let backups: Api<Backup> = Api::namespaced(context.client.clone(), &context.oadp_namespace);
    let nab_api: Api<NonAdminBackup> = Api::namespaced(context.client.clone(), &namespace);
    let (velero_schedule, velero_backups, nabs) = match &nacuuid {
        Some(id) => {
            let schedule = schedules.get_opt(id).await?;
            let selector = ListParams::default().labels(&format!(
                "{}={}",
                crate::api::velero::labels::SCHEDULE_NAME,
                crate::api::velero::labels::valid_label_value(id)
            ));
            let vbs = backups.list(&selector).await?.items;
            let nabs = if nas.metadata.deletion_timestamp.is_none() && !vbs.is_empty() {
                nab_api.list(&ListParams::default()).await?.items
            } else {
                Vec::new()
            };
            (schedule, vbs, nabs)
        }
        None => (None, Vec::new(), Vec::new()),
    };
    let (verdict, storage_wait) = if nas.metadata.deletion_timestamp.is_none() {
        verdict(context, nas).await?
    } else {
        (Ok(BackupSpec::default()), None)
    };
    // Recorded on the scheduled backups being labelled (read only when there are some).
    let namespace_uid = if velero_backups.is_empty() || nas.metadata.deletion_timestamp.is_some() {
        None
    } else {
        context.namespace_uid(&namespace).await?
    };
    Ok(NasObserved {
        velero_schedule,
        velero_backups,
        nabs,
        verdict,
        storage_wait,
        namespace_uid,
        fresh_uuid: uuid::Uuid::new_v4(),
        now: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::now(),
        ),
    })
}

/// Applies `step`; also says whether it took effect (a create that found the object already
/// there did not, so its Event is not published twice).
async fn apply(
    context: &Context,
    api: &Api<NonAdminSchedule>,
    nab_api: &Api<NonAdminBackup>,
    nas: &NonAdminSchedule,
    step: NasStep,
) -> Result<(Action, bool), ControllerError> {
    let name = nas.metadata.name.clone().unwrap_or_default();
    let params = PatchParams::default();
    let schedules: Api<Schedule> = Api::namespaced(context.client.clone(), &context.oadp_namespace);
    let backups: Api<Backup> = Api::namespaced(context.client.clone(), &context.oadp_namespace);
    match step {
        NasStep::WriteStatus(status) => {
            let mut next = nas.clone();
            next.status = Some(*status);
            api.replace_status(&name, &PostParams::default(), &next)
                .await?;
            Ok((Action::requeue(SOON), true))
        }
        NasStep::AddFinalizer => {
            writes::set_finalizer(api, nas, finalizers::NON_ADMIN_SCHEDULE, true).await?;
            Ok((Action::requeue(SOON), true))
        }
        NasStep::RemoveFinalizer => {
            writes::set_finalizer(api, nas, finalizers::NON_ADMIN_SCHEDULE, false).await?;
            Ok((Action::await_change(), true))
        }
        NasStep::CreateVeleroSchedule(schedule) => {
            let created = match schedules.create(&PostParams::default(), &schedule).await {
                Ok(_) => true,
                // Made by an earlier attempt: already told.
                Err(kube::Error::Api(s)) if s.code == 409 => false,
                Err(e) => return Err(e.into()),
            };
            Ok((Action::requeue(SOON), created))
        }
        NasStep::UpdateVeleroSchedule(schedule) => {
            let sname = schedule.metadata.name.clone().unwrap_or_default();
            schedules
                .replace(&sname, &PostParams::default(), &schedule)
                .await?;
            Ok((Action::requeue(SOON), true))
        }
        NasStep::DeleteVeleroSchedule(sname) => {
            ignore_not_found(schedules.delete(&sname, &DeleteParams::default()).await)?;
            Ok((Action::requeue(SOON), true))
        }
        NasStep::LabelVeleroBackup {
            name: vb,
            labels,
            annotations,
        } => {
            let patch = json!({"metadata": {"labels": labels, "annotations": annotations}});
            ignore_not_found(backups.patch(&vb, &params, &Patch::Merge(patch)).await)?;
            Ok((Action::requeue(SOON), true))
        }
        NasStep::CreateChildNab(child) => {
            let created = match nab_api.create(&PostParams::default(), &child).await {
                Ok(c) => c,
                // Made by an earlier attempt: the next pass checks its status.
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    return Ok((Action::requeue(SOON), false));
                }
                Err(e) => return Err(e.into()),
            };
            // Name the Velero Backup in its status at once, so the NAB controller adopts it.
            write_child_status(nab_api, created, child.status.clone()).await?;
            Ok((Action::requeue(SOON), true))
        }
        NasStep::WriteChildStatus(child) => {
            let status = child.status.clone();
            write_child_status(nab_api, *child, status).await?;
            Ok((Action::requeue(SOON), true))
        }
        NasStep::DeleteChildNab(child) => {
            ignore_not_found(nab_api.delete(&child, &DeleteParams::default()).await)?;
            Ok((Action::requeue(SOON), true))
        }
        NasStep::AwaitChange => Ok((Action::await_change(), false)),
        NasStep::RequeueAfter(d) => Ok((Action::requeue(d), false)),
    }
}

/// Writes a child NAB's status; a conflict (the NAB controller got there first) is left for
/// the next pass, which sees what it wrote.
async fn write_child_status(
    nab_api: &Api<NonAdminBackup>,
    mut child: NonAdminBackup,
    status: Option<crate::api::nonadmin::NonAdminBackupStatus>,
) -> Result<(), ControllerError> {
    let name = child.metadata.name.clone().unwrap_or_default();
    child.status = status;
    match nab_api
        .replace_status(&name, &PostParams::default(), &child)
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 || s.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

fn ignore_not_found<T>(result: Result<T, kube::Error>) -> Result<(), ControllerError> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}
