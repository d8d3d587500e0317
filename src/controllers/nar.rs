//! The NonAdminRestore controller: observes a NAR (read fresh), its Velero Restore (found by
//! the NACUUID label in the OADP namespace), the policy's verdict on its spec and the
//! NonAdminBackup it restores (same namespace only), asks [`nar_decision::decide`] for the next
//! step, and applies it.
use std::sync::Arc;

use futures::StreamExt;
use kube::api::{Api, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;

use super::driver::{self, AFTER_OWN_WRITE, Applied, Reconciler, SOON};
use super::events::Notice;
use super::nar_decision::{self, NarObservation, NarStep};
use super::positions::Follower;
use super::velero_cache::Changes;
use super::{Context, ControllerError, velero_cache, writes};
use crate::api::nonadmin::labels::{self, finalizers};
use crate::api::nonadmin::{NonAdminBackup, NonAdminPhase, NonAdminRestore, NonAdminRestoreStatus};
use crate::api::velero::{Restore, RestoreSpec};
use crate::queue::QueueKind;

const FIELD: &str = "spec.restoreSpec.backupName";

/// The NAR a NAC-made Velero Restore was created for, from its origin annotations.
fn origin_ref(meta: &kube::core::ObjectMeta) -> Option<ObjectRef<NonAdminRestore>> {
    let a = meta.annotations.as_ref()?;
    let name = a.get(labels::NAR_ORIGIN_NAME_ANNOTATION)?;
    let namespace = a.get(labels::NAR_ORIGIN_NAMESPACE_ANNOTATION)?;
    Some(ObjectRef::new(name).within(namespace))
}

/// Stops serving lookups from the cache once its watch is gone (leadership lost).
struct UninstallOnDrop(Arc<Context>);

impl Drop for UninstallOnDrop {
    fn drop(&mut self) {
        self.0.velero.restores.uninstall();
    }
}

/// Runs the controller until the task is dropped.
pub async fn run(context: Arc<Context>, nab_changes: Changes<NonAdminBackup>) {
    let client = context.client.clone();
    let nars: Api<NonAdminRestore> = Api::all(client.clone());
    let restores: Api<Restore> = Api::namespaced(client.clone(), &context.oadp_namespace);
    // Only NAC's own Velero objects matter, so the watch is scoped by label.
    let ours =
        watcher::Config::default().labels(&format!("{}={}", labels::OADP, labels::OADP_VALUE));
    let (restore_feed, restore_events) =
        velero_cache::feed(restores, ours, &context.velero.restores, |r: &Restore| {
            origin_ref(&r.metadata)
        });
    let _cache = UninstallOnDrop(context.clone());
    let wakes = context
        .positions
        .wakes(QueueKind::Restore)
        .map(|f| ObjectRef::new(&f.name).within(&f.namespace));
    let controller = velero_cache::lean_controller(nars, watcher::Config::default());
    let store = controller.store();
    // A NAR refused because its backup was not finished yet is looked at again when that
    // NonAdminBackup changes (the tenant should not have to touch the NAR).
    let waiting_on_backup = nab_changes.flat_map(move |change| {
        let nab = change.object();
        let waiting = store
            .state()
            .into_iter()
            .filter(|nar| {
                nar.metadata.namespace == nab.metadata.namespace
                    && nar.spec.restore_spec.backup_name == nab.metadata.name
                    && nar
                        .status
                        .as_ref()
                        .and_then(|s| s.phase)
                        .is_none_or(|p| p == NonAdminPhase::BackingOff)
            })
            .map(|nar| ObjectRef::from_obj(&*nar))
            .collect::<Vec<_>>();
        futures::stream::iter(waiting)
    });
    let controller = controller
        .reconcile_on(restore_events)
        .reconcile_on(wakes)
        .reconcile_on(waiting_on_backup);
    tokio::join!(
        restore_feed,
        driver::run(controller, NarReconciler, context.clone())
    );
}

fn invalid_source(detail: String) -> String {
    format!("NonAdminRestore {FIELD} is invalid: {detail}")
}

/// The Velero spec for a NAR, or the message refusing it: the spec must pass the policy and
/// `backupName` must name a NonAdminBackup of the NAR's own namespace whose Velero backup is
/// Completed or PartiallyFailed.
pub async fn verdict(
    context: &Context,
    nar: &NonAdminRestore,
) -> Result<Result<RestoreSpec, String>, ControllerError> {
    let namespace = nar.metadata.namespace.clone().unwrap_or_default();
    let policy = context.effective_policy(&namespace).await?;
    let spec = &nar.spec.restore_spec;
    if let Err(violations) = crate::policy::validate_restore_spec(&namespace, spec, &policy) {
        return Ok(Err(crate::policy::violations_message(&violations)));
    }
    let backup_name = spec.backup_name.clone().unwrap_or_default();
    // Only ever looked up in the NAR's own namespace.
    let nabs: Api<NonAdminBackup> = Api::namespaced(context.client.clone(), &namespace);
    let Some(nab) = nabs.get_opt(&backup_name).await? else {
        return Ok(Err(invalid_source(format!(
            "nonadminbackups.oadp.openshift.io {backup_name:?} not found (NonAdminBackup {backup_name:?} not found in namespace {namespace})"
        ))));
    };
    if nab.metadata.deletion_timestamp.is_some() {
        return Ok(Err(invalid_source(format!(
            "NonAdminBackup {backup_name:?} is being deleted"
        ))));
    }
    let status = nab.status.unwrap_or_default();
    let related = status.velero_backup.unwrap_or_default();
    let velero_phase = related
        .status
        .as_ref()
        .and_then(|s| s.phase.as_ref())
        .map(|p| p.as_str().to_string());
    if let Err(violation) = crate::policy::check_restore_source(
        status.phase.map(NonAdminPhase::as_str),
        velero_phase.as_deref(),
    ) {
        return Ok(Err(violation.message));
    }
    let Some(velero_backup) = related.name.filter(|n| !n.is_empty()) else {
        return Ok(Err(invalid_source(format!(
            "NonAdminBackup {backup_name:?} has no Velero backup"
        ))));
    };
    Ok(
        crate::policy::build_velero_restore_spec(&namespace, spec, &velero_backup, &policy)
            .map_err(|violation| violation.message),
    )
}

/// One reconcile of `nar` (through the [`driver`]).
pub async fn reconcile(
    nar: Arc<NonAdminRestore>,
    context: Arc<Context>,
) -> Result<Action, ControllerError> {
    driver::reconcile(&NarReconciler, nar, context).await
}

/// NonAdminRestores, run by the [`driver`]: observes the NAR's Velero Restore, the policy's
/// verdict (with the NonAdminBackup it restores) and the queue; [`nar_decision::decide`]
/// decides.
pub struct NarReconciler;

/// What a NAR's decision looks at besides the NAR.
pub struct NarObserved {
    velero_restore: Option<Restore>,
    verdict: Result<RestoreSpec, String>,
    queue_position: Option<u64>,
    fresh_uuid: uuid::Uuid,
    now: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
}

impl Reconciler for NarReconciler {
    type Object = NonAdminRestore;
    type Observed = NarObserved;
    type Step = NarStep;
    const KIND: &'static str = "nonadminrestore";

    fn api(&self, client: kube::Client, namespace: Option<&str>) -> Api<NonAdminRestore> {
        Api::namespaced(client, namespace.unwrap_or_default())
    }

    async fn observe(
        &self,
        context: &Context,
        nar: &NonAdminRestore,
    ) -> Result<NarObserved, ControllerError> {
        observe(context, nar).await
    }

    fn decide(&self, context: &Context, nar: &NonAdminRestore, observed: &NarObserved) -> NarStep {
        nar_decision::decide(&NarObservation {
            nar,
            velero_restore: observed.velero_restore.as_ref(),
            verdict: observed.verdict.clone(),
            queue_position: observed.queue_position,
            oadp_namespace: &context.oadp_namespace,
            fresh_uuid: observed.fresh_uuid,
            now: observed.now.clone(),
        })
    }

    const DECIDES_ON_CACHED_COPY: bool = true;

    fn writes_object(step: &NarStep) -> bool {
        matches!(
            step,
            NarStep::WriteStatus(_) | NarStep::AddFinalizer | NarStep::RemoveFinalizer
        )
    }

    /// Status and finalizer writes carry the resourceVersion read; waiting needs nothing.
    fn needs_fresh_read(step: &NarStep) -> bool {
        !matches!(
            step,
            NarStep::WriteStatus(_)
                | NarStep::AddFinalizer
                | NarStep::RemoveFinalizer
                | NarStep::AwaitChange
                | NarStep::RequeueAfter(_)
        )
    }

    fn step_name(step: &NarStep) -> &'static str {
        match step {
            NarStep::WriteStatus(_) => "WriteStatus",
            NarStep::AddFinalizer => "AddFinalizer",
            NarStep::CreateVeleroRestore(_) => "CreateVeleroRestore",
            NarStep::DeleteVeleroRestore(_) => "DeleteVeleroRestore",
            NarStep::RemoveFinalizer => "RemoveFinalizer",
            NarStep::AwaitChange => "AwaitChange",
            NarStep::RequeueAfter(_) => "RequeueAfter",
        }
    }

    fn notice(
        &self,
        nar: &NonAdminRestore,
        _: &NarObserved,
        step: &NarStep,
    ) -> Option<Notice<'static>> {
        super::outcome_notices::restore_notice(nar, step)
    }

    async fn apply(
        &self,
        context: &Context,
        api: &Api<NonAdminRestore>,
        nar: &NonAdminRestore,
        step: NarStep,
    ) -> Result<Applied, ControllerError> {
        apply(context, api, nar, step).await.map(Applied::done)
    }

    fn forget(&self, context: &Context, namespace: Option<&str>, name: &str) {
        context
            .positions
            .forget(&follower(namespace.unwrap_or_default(), name));
    }
}

/// Reads what the decision on `nar` needs: its Velero Restore (from the watch cache), and while
/// that is still to be created the policy's verdict; the queue position.
async fn observe(context: &Context, nar: &NonAdminRestore) -> Result<NarObserved, ControllerError> {
    let namespace = nar.metadata.namespace.clone().unwrap_or_default();
    let status = nar.status.clone().unwrap_or_default();
    let nacuuid = status
        .velero_restore
        .as_ref()
        .and_then(|v| v.nacuuid.clone())
        .filter(|u| !u.is_empty());
    let velero_restore = match &nacuuid {
        Some(id) => {
            let velero_name = status
                .velero_restore
                .as_ref()
                .and_then(|v| v.name.clone())
                .unwrap_or_else(|| id.clone());
            find_velero_restore(context, &namespace, id, &velero_name).await?
        }
        None => None,
    };
    // The verdict only matters while the Velero Restore is still to be created (one that
    // vanished after it was made is never made again).
    let created = matches!(
        status.phase,
        Some(NonAdminPhase::Created | NonAdminPhase::Deleting)
    ) || nar_decision::velero_restore_was_made(Some(&status));
    let verdict =
        if velero_restore.is_none() && !created && nar.metadata.deletion_timestamp.is_none() {
            verdict(context, nar).await?
        } else {
            Ok(RestoreSpec::default())
        };
    let queue_position = velero_restore
        .as_ref()
        .and_then(|vr| published_position(context, nar, vr));
    Ok(NarObserved {
        velero_restore,
        verdict,
        queue_position,
        fresh_uuid: uuid::Uuid::new_v4(),
        now: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::now(),
        ),
    })
}

fn follower(namespace: &str, name: &str) -> Follower {
    Follower {
        kind: QueueKind::Restore,
        namespace: namespace.to_string(),
        name: name.to_string(),
    }
}

/// The queue position the NAR's status shows for `velero_restore`, as decided by the one
/// position writer (see [`super::positions`]).
fn published_position(
    context: &Context,
    nar: &NonAdminRestore,
    velero_restore: &Restore,
) -> Option<u64> {
    context.positions.for_status(
        &context.queue,
        follower(
            nar.metadata.namespace.as_deref().unwrap_or_default(),
            nar.metadata.name.as_deref().unwrap_or_default(),
        ),
        velero_restore.metadata.name.as_deref()?,
        nar.status
            .as_ref()
            .and_then(|s| s.queue_info.as_ref())
            .map(|q| q.estimated_queue_position),
        velero_restore
            .status
            .as_ref()
            .and_then(|s| s.phase.as_ref())
            .is_some_and(|p| p.is_terminal()),
    )
}

/// The Velero Restore a NAR follows: named `velero_name`, labelled with `nacuuid` and made for
/// `namespace`. Served from the watch cache; a miss is confirmed with one GET by name.
async fn find_velero_restore(
    context: &Context,
    namespace: &str,
    nacuuid: &str,
    velero_name: &str,
) -> Result<Option<Restore>, ControllerError> {
    let restores: Api<Restore> = Api::namespaced(context.client.clone(), &context.oadp_namespace);
    context
        .velero
        .restores
        .get(&restores, &context.oadp_namespace, velero_name, |r| {
            velero_cache::has_label(&r.metadata, labels::NAR_ORIGIN_NACUUID, nacuuid)
                && velero_cache::has_annotation(
                    &r.metadata,
                    labels::NAR_ORIGIN_NAMESPACE_ANNOTATION,
                    namespace,
                )
        })
        .await
}

async fn apply(
    context: &Context,
    api: &Api<NonAdminRestore>,
    nar: &NonAdminRestore,
    step: NarStep,
) -> Result<Action, ControllerError> {
    match step {
        NarStep::WriteStatus(status) => {
            write_status(api, nar, *status).await?;
            Ok(Action::requeue(AFTER_OWN_WRITE))
        }
        NarStep::AddFinalizer => {
            writes::set_finalizer(api, nar, finalizers::NON_ADMIN_RESTORE, true).await?;
            Ok(Action::requeue(AFTER_OWN_WRITE))
        }
        NarStep::RemoveFinalizer => {
            writes::set_finalizer(api, nar, finalizers::NON_ADMIN_RESTORE, false).await?;
            Ok(Action::await_change())
        }
        NarStep::CreateVeleroRestore(restore) => {
            let restores: Api<Restore> =
                Api::namespaced(context.client.clone(), &context.oadp_namespace);
            writes::create_if_absent(&restores, &restore).await?;
            Ok(Action::requeue(SOON))
        }
        NarStep::DeleteVeleroRestore(velero_name) => {
            let restores: Api<Restore> =
                Api::namespaced(context.client.clone(), &context.oadp_namespace);
            writes::delete_if_present(&restores, &velero_name).await?;
            Ok(Action::requeue(SOON))
        }
        NarStep::AwaitChange => Ok(Action::await_change()),
        NarStep::RequeueAfter(d) => Ok(Action::requeue(d)),
    }
}

/// Replaces the status (PUT on /status with the resourceVersion just read): fields that vanished
/// from the Velero object vanish here too, and a concurrent change makes this fail with a
/// conflict instead of being overwritten.
async fn write_status(
    api: &Api<NonAdminRestore>,
    nar: &NonAdminRestore,
    status: NonAdminRestoreStatus,
) -> Result<(), ControllerError> {
    let mut next = nar.clone();
    next.status = Some(status);
    api.replace_status(
        nar.metadata.name.as_deref().unwrap_or_default(),
        &PostParams::default(),
        &next,
    )
    .await?;
    Ok(())
}
