//! The NonAdminBackup controller: observes a NAB (read fresh), its Velero Backup and
//! DeleteBackupRequest (found by the NACUUID label in the OADP namespace) and the policy's
//! verdict, asks [`nab_decision::decide`] for the next step, and applies it.
use std::sync::Arc;

use futures::StreamExt;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;

use super::driver::{self, AFTER_OWN_WRITE, Applied, Reconciler, SOON};
use super::events::Notice;
use super::nab_decision::{self, NabObservation, NabStep};
use super::positions::Follower;
use super::velero_cache::{Change, Changes};
use super::{Context, ControllerError, velero_cache, writes};
use crate::api::nonadmin::conditions::{reasons, types};
use crate::api::nonadmin::labels::{self, finalizers};
use crate::api::nonadmin::{NonAdminBackup, NonAdminBackupStorageLocation, NonAdminRestore};
use crate::api::velero::{Backup, BackupSpec, DeleteBackupRequest};
use crate::queue::QueueKind;

/// Message when the Velero backup of a schedule's run vanished without the tenant asking.
pub const VANISHED_MESSAGE: &str = "the Velero Backup no longer exists (expired or deleted by the administrator); the NonAdminBackup follows it";

/// The tenant object a NAC-made Velero object was created for, from its origin annotations.
fn origin_ref(meta: &kube::core::ObjectMeta) -> Option<ObjectRef<NonAdminBackup>> {
    let a = meta.annotations.as_ref()?;
    let name = a.get(labels::NAB_ORIGIN_NAME_ANNOTATION)?;
    let namespace = a.get(labels::NAB_ORIGIN_NAMESPACE_ANNOTATION)?;
    Some(ObjectRef::new(name).within(namespace))
}

/// Whether a NAC-made Velero object records `namespace` as its origin (a NAB's, or for
/// scheduled backups the NonAdminSchedule's).
pub fn made_for_namespace(meta: &kube::core::ObjectMeta, namespace: &str) -> bool {
    meta.annotations.as_ref().is_some_and(|a| {
        [
            labels::NAB_ORIGIN_NAMESPACE_ANNOTATION,
            labels::NAS_ORIGIN_NAMESPACE_ANNOTATION,
        ]
        .iter()
        .any(|key| a.get(*key).map(String::as_str) == Some(namespace))
    })
}

/// The NACUUID a NAB's synced-from label names, if any.
fn synced_from(nab: &NonAdminBackup) -> Option<String> {
    nab.metadata
        .labels
        .as_ref()?
        .get(labels::NAB_SYNCED_FROM_NACUUID)
        .filter(|id| !id.is_empty())
        .cloned()
}

/// Whether `backup` (found by a NAB's synced-from label, in the NAB's namespace) may be
/// adopted by NAB `name` (pure): made for a NAB of that name, and recording no namespace UID
/// (upstream NAC records none) or `live_uid`, the one its namespace has now.
pub fn adoptable_sync(backup: &Backup, name: &str, live_uid: &str) -> bool {
    let annotations = backup.metadata.annotations.clone().unwrap_or_default();
    let for_this_nab = annotations
        .get(labels::NAB_ORIGIN_NAME_ANNOTATION)
        .is_some_and(|origin| origin == name);
    let same_namespace = match super::sync::recorded_identity(backup, live_uid) {
        super::sync::RecordedIdentity::Same | super::sync::RecordedIdentity::Unrecorded => true,
        super::sync::RecordedIdentity::Other => false,
    };
    for_this_nab && same_namespace
}

/// The one watch of every NonAdminBackup (run it while the controllers run), the cache it
/// fills ([`Context::nabs`]) and the changes it tells the NAB controller, the pool controller
/// and the NAR controller, in that order: 10k NABs are held once, lean, and decoded once per
/// change instead of once per controller.
pub fn watch_all(
    context: &Arc<Context>,
) -> (
    impl std::future::Future<Output = ()> + Send + 'static,
    Store<NonAdminBackup>,
    [Changes<NonAdminBackup>; 3],
) {
    let (watch, store, changes) = velero_cache::feed_shared(
        Api::<NonAdminBackup>::all(context.client.clone()),
        watcher::Config::default(),
        &context.nabs,
    );
    let installed = NabsUninstallOnDrop(context.clone());
    let watch = async move {
        let _installed = installed;
        watch.await;
    };
    (watch, store, changes)
}

/// Stops serving NAB lookups from the cache once its watch is gone (leadership lost).
struct NabsUninstallOnDrop(Arc<Context>);

impl Drop for NabsUninstallOnDrop {
    fn drop(&mut self) {
        self.0.nabs.uninstall();
    }
}

/// Runs the controller until the task is dropped, on the NABs of [`watch_all`].
pub async fn run(
    context: Arc<Context>,
    nabs: Store<NonAdminBackup>,
    changes: Changes<NonAdminBackup>,
) {
    let client = context.client.clone();
    let backups: Api<Backup> = Api::namespaced(client.clone(), &context.oadp_namespace);
    let requests: Api<DeleteBackupRequest> =
        Api::namespaced(client.clone(), &context.oadp_namespace);
    // Only NAC's own Velero objects matter, so the watches are scoped by label. Each feeds a
    // cache the reconciler reads and wakes the NAB the object was made for.
    let ours =
        watcher::Config::default().labels(&format!("{}={}", labels::OADP, labels::OADP_VALUE));
    let (backup_feed, backup_events) = velero_cache::feed(
        backups,
        ours.clone(),
        &context.velero.backups,
        |b: &Backup| origin_ref(&b.metadata),
    );
    let (request_feed, request_events) = velero_cache::feed(
        requests,
        ours,
        &context.velero.delete_requests,
        |r: &DeleteBackupRequest| origin_ref(&r.metadata),
    );
    let _caches = UninstallOnDrop(context.clone());
    let wakes = context
        .positions
        .wakes(QueueKind::Backup)
        .map(|f| ObjectRef::new(&f.name).within(&f.namespace));
    let applied = changes.filter_map(|change| {
        std::future::ready(match change {
            Change::Applied(nab) => Some(nab),
            Change::Deleted(_) => None,
        })
    });
    let controller = Controller::for_shared_stream(applied, nabs)
        .reconcile_on(backup_events)
        .reconcile_on(request_events)
        .reconcile_on(wakes);
    tokio::join!(
        backup_feed,
        request_feed,
        driver::run(controller, NabReconciler, context.clone())
    );
}

/// Stops serving lookups from the caches once their watches are gone (leadership lost).
struct UninstallOnDrop(Arc<Context>);

impl Drop for UninstallOnDrop {
    fn drop(&mut self) {
        self.0.velero.backups.uninstall();
        self.0.velero.delete_requests.uninstall();
    }
}

/// The Velero spec for a NAB, or the message refusing it.
pub async fn verdict(
    context: &Context,
    nab: &NonAdminBackup,
) -> Result<Result<BackupSpec, String>, ControllerError> {
    let namespace = nab.metadata.namespace.clone().unwrap_or_default();
    let policy = context.effective_policy(&namespace).await?;
    if let Err(violations) =
        crate::policy::validate_backup_spec(&namespace, &nab.spec.backup_spec, &policy)
    {
        return Ok(Err(crate::policy::violations_message(&violations)));
    }
    let location = match nab
        .spec
        .backup_spec
        .storage_location
        .as_deref()
        .filter(|s| !s.is_empty())
    {
        None => None,
        Some(name) => match storage_location(context, &namespace, name).await? {
            Ok(velero_name) => Some(velero_name),
            Err(message) => return Ok(Err(message)),
        },
    };
    Ok(crate::policy::build_velero_backup_spec(
        &namespace,
        &nab.spec.backup_spec,
        &policy,
        location,
    )
    .map_err(|violation| violation.message))
}

/// Shared backup pool (seed 001): a backup without a storage location of its own goes to
/// its namespace's BackupEntry when the pool is configured (else to Velero's default location,
/// as without the pool), and waits, with the reason, while the entry is not ready. The
/// NonAdminSchedule controller routes its backup template through here too.
pub(super) async fn routed_to_pool(
    context: &Context,
    nab: &NonAdminBackup,
    verdict: Result<BackupSpec, String>,
) -> Result<(Result<BackupSpec, String>, Option<String>), ControllerError> {
    let Ok(mut spec) = verdict else {
        return Ok((verdict, None));
    };
    let own_location = spec
        .storage_location
        .as_deref()
        .is_some_and(|s| !s.is_empty());
    if own_location || nab.metadata.deletion_timestamp.is_some() {
        return Ok((Ok(spec), None));
    }
    let namespace = nab.metadata.namespace.as_deref().unwrap_or_default();
    Ok(match super::bucket::pool_route(context, namespace).await? {
        super::bucket_decision::PoolRoute::NotConfigured => (Ok(spec), None),
        super::bucket_decision::PoolRoute::Location(location) => {
            spec.storage_location = Some(location);
            (Ok(spec), None)
        }
        super::bucket_decision::PoolRoute::Wait(message) => (Ok(spec), Some(message)),
    })
}

/// Maps a NABSL name to its Velero BSL: it must be in this namespace, approved, Created, and
/// its BSL Available ([`crate::policy::usable_location`] decides).
async fn storage_location(
    context: &Context,
    namespace: &str,
    name: &str,
) -> Result<Result<String, String>, ControllerError> {
    let api: Api<NonAdminBackupStorageLocation> =
        Api::namespaced(context.client.clone(), namespace);
    Ok(crate::policy::usable_location(
        name,
        namespace,
        api.get_opt(name).await?.as_ref(),
    ))
}

/// One reconcile of `nab` (through the [`driver`]).
pub async fn reconcile(
    nab: Arc<NonAdminBackup>,
    context: Arc<Context>,
) -> Result<Action, ControllerError> {
    driver::reconcile(&NabReconciler, nab, context).await
}

/// NonAdminBackups, run by the [`driver`]: observes the NAB's Velero Backup and
/// DeleteBackupRequest, the policy's verdict and the queue; [`nab_decision::decide`] decides.
pub struct NabReconciler;

/// What a NAB's decision looks at besides the NAB.
pub struct NabObserved {
    velero_backup: Option<Backup>,
    delete_request: Option<DeleteBackupRequest>,
    verdict: Result<BackupSpec, String>,
    storage_wait: Option<String>,
    namespace_uid: Option<String>,
    queue_position: Option<u64>,
    deletion_actions: Vec<crate::api::nonadmin::DeletionAction>,
    fresh_uuid: uuid::Uuid,
    now: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time,
}

impl Reconciler for NabReconciler {
    type Object = NonAdminBackup;
    type Observed = NabObserved;
    type Step = NabStep;
    const KIND: &'static str = "nonadminbackup";

    fn api(&self, client: kube::Client, namespace: Option<&str>) -> Api<NonAdminBackup> {
        Api::namespaced(client, namespace.unwrap_or_default())
    }

    async fn observe(
        &self,
        context: &Context,
        nab: &NonAdminBackup,
    ) -> Result<NabObserved, ControllerError> {
        observe(context, nab).await
    }

    fn decide(&self, context: &Context, nab: &NonAdminBackup, observed: &NabObserved) -> NabStep {
        nab_decision::decide(&NabObservation {
            nab,
            velero_backup: observed.velero_backup.as_ref(),
            delete_request: observed.delete_request.as_ref(),
            verdict: observed.verdict.clone(),
            queue_position: observed.queue_position,
            oadp_namespace: &context.oadp_namespace,
            fresh_uuid: observed.fresh_uuid,
            now: observed.now.clone(),
            deletion_actions: &observed.deletion_actions,
            storage_wait: observed.storage_wait.clone(),
            namespace_uid: observed.namespace_uid.as_deref(),
        })
    }

    fn step_name(step: &NabStep) -> &'static str {
        step_name(step)
    }

    const DECIDES_ON_CACHED_COPY: bool = true;

    fn writes_object(step: &NabStep) -> bool {
        matches!(
            step,
            NabStep::WriteStatus(_) | NabStep::AddFinalizer | NabStep::RemoveFinalizer
        )
    }

    /// Status and finalizer writes carry the resourceVersion read; waiting needs nothing.
    fn needs_fresh_read(step: &NabStep) -> bool {
        !matches!(
            step,
            NabStep::WriteStatus(_)
                | NabStep::AddFinalizer
                | NabStep::RemoveFinalizer
                | NabStep::AwaitChange
                | NabStep::RequeueAfter(_)
        )
    }

    fn notice(
        &self,
        nab: &NonAdminBackup,
        _: &NabObserved,
        step: &NabStep,
    ) -> Option<Notice<'static>> {
        super::outcome_notices::backup_notice(nab, step)
    }

    async fn apply(
        &self,
        context: &Context,
        api: &Api<NonAdminBackup>,
        nab: &NonAdminBackup,
        step: NabStep,
    ) -> Result<Applied, ControllerError> {
        apply(context, api, nab, step).await.map(Applied::done)
    }

    fn forget(&self, context: &Context, namespace: Option<&str>, name: &str) {
        context
            .positions
            .forget(&follower(namespace.unwrap_or_default(), name));
    }
}

/// The step's name for the reconcile span.
fn step_name(step: &NabStep) -> &'static str {
    match step {
        NabStep::WriteStatus(_) => "WriteStatus",
        NabStep::AddFinalizer => "AddFinalizer",
        NabStep::RemoveFinalizer => "RemoveFinalizer",
        NabStep::CreateVeleroBackup(_) => "CreateVeleroBackup",
        NabStep::DeleteVeleroBackup(_) => "DeleteVeleroBackup",
        NabStep::DeleteDeleteBackupRequests => "DeleteDeleteBackupRequests",
        NabStep::RunDeletionActions { .. } => "RunDeletionActions",
        NabStep::CreateDeleteBackupRequest(_) => "CreateDeleteBackupRequest",
        NabStep::DeleteSelf => "DeleteSelf",
        NabStep::FollowVanishedBackup => "FollowVanishedBackup",
        NabStep::RecordNamespaceIdentity { .. } => "RecordNamespaceIdentity",
        NabStep::AwaitChange => "AwaitChange",
        NabStep::RequeueAfter(_) => "RequeueAfter",
    }
}

/// Reads what the decision on `nab` needs: its Velero Backup and DeleteBackupRequest (from the
/// watch caches), and only when they matter the policy's verdict, the pool route, the
/// namespace's UID, the queue position and the DeletionActions.
async fn observe(context: &Context, nab: &NonAdminBackup) -> Result<NabObserved, ControllerError> {
    let namespace = nab.metadata.namespace.clone().unwrap_or_default();
    let name = nab.metadata.name.clone().unwrap_or_default();
    let nacuuid = nab
        .status
        .as_ref()
        .and_then(|s| s.velero_backup.as_ref())
        .and_then(|v| v.nacuuid.clone())
        .filter(|u| !u.is_empty());
    let (velero_backup, delete_request) = match &nacuuid {
        Some(id) => {
            let velero_name = nab
                .status
                .as_ref()
                .and_then(|s| s.velero_backup.as_ref())
                .and_then(|v| v.name.clone())
                .unwrap_or_else(|| id.clone());
            (
                find_velero_backup(
                    context,
                    &namespace,
                    id,
                    &velero_name,
                    // Made already: a miss must be confirmed (it vanished, or the cache lags).
                    nab_decision::velero_backup_was_made(nab.status.as_ref()),
                )
                .await?,
                find_delete_request(context, id, &velero_name).await?,
            )
        }
        None => match synced_from(nab) {
            // Upstream NAC's synchronizer makes a NAB with only the synced-from label and lets
            // its controller find the backup: adopted when that backup was made for this very
            // NAB (same namespace and name), and never one recording another namespace's UID.
            Some(id) => {
                let found = find_velero_backup(context, &namespace, &id, &id, true).await?;
                let adoptable = match &found {
                    Some(backup) => {
                        let live_uid = context.namespace_uid(&namespace).await?;
                        adoptable_sync(backup, &name, live_uid.as_deref().unwrap_or_default())
                    }
                    None => false,
                };
                if adoptable {
                    (found, find_delete_request(context, &id, &id).await?)
                } else {
                    (None, None)
                }
            }
            None => (None, None),
        },
    };
    // A Velero Backup that vanished after it was made is never made again: no verdict then.
    let creating = velero_backup.is_none()
        && nab.spec.delete_backup != Some(true)
        && !nab_decision::velero_backup_was_made(nab.status.as_ref());
    let (verdict, storage_wait) = if creating {
        routed_to_pool(context, nab, verdict(context, nab).await?).await?
    } else {
        (Ok(BackupSpec::default()), None)
    };
    // Recorded on the Velero Backup about to be made, or on one adopted that records none
    // (read only then).
    let adopting = velero_backup
        .as_ref()
        .is_some_and(nab_decision::records_no_namespace);
    // Read from the API server, never a cache (a cache behind a re-created namespace would
    // tie the new owner to the previous owner's backups), and only for the pass that creates
    // the Velero Backup: the NACUUID written and the finalizer on.
    let about_to_create = creating
        && nab
            .status
            .as_ref()
            .and_then(|s| s.velero_backup.as_ref())
            .and_then(|v| v.nacuuid.as_deref())
            .is_some_and(|id| !id.is_empty())
        && nab
            .metadata
            .finalizers
            .as_ref()
            .is_some_and(|f| f.iter().any(|f| f == finalizers::NON_ADMIN_BACKUP));
    let namespace_uid = if about_to_create || adopting {
        context.namespace_uid(&namespace).await?
    } else {
        None
    };
    let queue_position = velero_backup
        .as_ref()
        .and_then(|vb| published_position(context, nab, vb));
    // DeletionActions matter only when a permanent deletion is about to create its
    // DeleteBackupRequest (seed 003): listed then, and only then.
    let deletion_actions = if nab.spec.delete_backup == Some(true)
        && nab.metadata.deletion_timestamp.is_some()
        && velero_backup.is_some()
        && delete_request.is_none()
    {
        super::deletion_actions::list_actions(&context.client).await?
    } else {
        Vec::new()
    };
    Ok(NabObserved {
        velero_backup,
        delete_request,
        verdict,
        storage_wait,
        namespace_uid,
        queue_position,
        deletion_actions,
        fresh_uuid: uuid::Uuid::new_v4(),
        now: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::now(),
        ),
    })
}

fn follower(namespace: &str, name: &str) -> Follower {
    Follower {
        kind: QueueKind::Backup,
        namespace: namespace.to_string(),
        name: name.to_string(),
    }
}

/// The queue position the NAB's status shows for `velero_backup`, as decided by the one
/// position writer (see [`super::positions`]).
fn published_position(
    context: &Context,
    nab: &NonAdminBackup,
    velero_backup: &Backup,
) -> Option<u64> {
    context.positions.for_status(
        &context.queue,
        follower(
            nab.metadata.namespace.as_deref().unwrap_or_default(),
            nab.metadata.name.as_deref().unwrap_or_default(),
        ),
        velero_backup.metadata.name.as_deref()?,
        nab.status
            .as_ref()
            .and_then(|s| s.queue_info.as_ref())
            .map(|q| q.estimated_queue_position),
        velero_backup
            .status
            .as_ref()
            .and_then(|s| s.phase.as_ref())
            .is_some_and(|p| p.is_terminal()),
    )
}

/// The Velero Backup a NAB follows: named `velero_name` (its NACUUID, or the scheduled
/// backup's name for a schedule's child), labelled with `nacuuid`, and made for `namespace` —
/// a NACUUID alone (which a forged status or label could carry) never links another tenant's
/// backup. Served from the watch cache; a miss is confirmed with one GET by name only when
/// `confirm_miss` (the backup was made: did it vanish?); before it is made, a miss is "not yet"
/// and a create racing the cache answers 409.
async fn find_velero_backup(
    context: &Context,
    namespace: &str,
    nacuuid: &str,
    velero_name: &str,
    confirm_miss: bool,
) -> Result<Option<Backup>, ControllerError> {
    let backups: Api<Backup> = Api::namespaced(context.client.clone(), &context.oadp_namespace);
    context
        .velero
        .backups
        .get_or_absent(
            &backups,
            &context.oadp_namespace,
            velero_name,
            confirm_miss,
            |b| {
                velero_cache::has_label(&b.metadata, labels::NAB_ORIGIN_NACUUID, nacuuid)
                    && made_for_namespace(&b.metadata, namespace)
            },
        )
        .await
}

/// The DeleteBackupRequest for the NAB of `nacuuid`, whose Velero Backup is `velero_name`, if
/// any: the one NAC made (its NACUUID label) or, taking over from upstream NAC — which finds
/// its requests by Velero's `velero.io/backup-name` label and makes them by `generateName` —
/// any request deleting that backup, so a deletion in flight is never asked for twice.
async fn find_delete_request(
    context: &Context,
    nacuuid: &str,
    velero_name: &str,
) -> Result<Option<DeleteBackupRequest>, ControllerError> {
    let deletes_it = |r: &DeleteBackupRequest| {
        velero_cache::has_label(&r.metadata, labels::NAB_ORIGIN_NACUUID, nacuuid)
            || r.spec.backup_name == velero_name
    };
    if context.velero.delete_requests.is_installed() {
        let mut found = context.velero.delete_requests.matching(deletes_it);
        // NAC's own request first.
        found.sort_by_key(|r| {
            !velero_cache::has_label(&r.metadata, labels::NAB_ORIGIN_NACUUID, nacuuid)
        });
        return Ok(found.first().map(|r| (**r).clone()));
    }
    let requests: Api<DeleteBackupRequest> =
        Api::namespaced(context.client.clone(), &context.oadp_namespace);
    let selector =
        ListParams::default().labels(&format!("{}={nacuuid}", labels::NAB_ORIGIN_NACUUID));
    if let Some(own) = requests.list(&selector).await?.items.into_iter().next() {
        return Ok(Some(own));
    }
    Ok(requests
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .find(|r| deletes_it(r)))
}

async fn apply(
    context: &Context,
    api: &Api<NonAdminBackup>,
    nab: &NonAdminBackup,
    step: NabStep,
) -> Result<Action, ControllerError> {
    let name = nab.metadata.name.clone().unwrap_or_default();
    let namespace = nab.metadata.namespace.clone().unwrap_or_default();
    match step {
        NabStep::WriteStatus(status) => {
            write_status(api, nab, *status).await?;
            Ok(Action::requeue(AFTER_OWN_WRITE))
        }
        NabStep::AddFinalizer => {
            if let Some(written) =
                writes::set_finalizer(api, nab, finalizers::NON_ADMIN_BACKUP, true).await?
            {
                // The next step creates the Velero Backup: the cache's copy of this version
                // needs no fresh read first.
                context
                    .own_writes
                    .record(driver::backoff_key::<NabReconciler>(nab), written);
            }
            Ok(Action::requeue(AFTER_OWN_WRITE))
        }
        NabStep::RemoveFinalizer => {
            writes::set_finalizer(api, nab, finalizers::NON_ADMIN_BACKUP, false).await?;
            Ok(Action::await_change())
        }
        NabStep::CreateVeleroBackup(backup) => {
            let backups: Api<Backup> =
                Api::namespaced(context.client.clone(), &context.oadp_namespace);
            writes::create_if_absent(&backups, &backup).await?;
            // Its watch event reconciles the NAB sooner, once the cache has it.
            Ok(Action::requeue(AFTER_OWN_WRITE))
        }
        NabStep::DeleteVeleroBackup(velero_name) => {
            let backups: Api<Backup> =
                Api::namespaced(context.client.clone(), &context.oadp_namespace);
            writes::delete_if_present(&backups, &velero_name).await?;
            Ok(Action::requeue(SOON))
        }
        NabStep::DeleteDeleteBackupRequests => {
            let requests: Api<DeleteBackupRequest> =
                Api::namespaced(context.client.clone(), &context.oadp_namespace);
            let nacuuid = nab
                .status
                .as_ref()
                .and_then(|s| s.velero_backup.as_ref())
                .and_then(|v| v.nacuuid.clone())
                .unwrap_or_default();
            let selector =
                ListParams::default().labels(&format!("{}={nacuuid}", labels::NAB_ORIGIN_NACUUID));
            let retrying = nab.spec.delete_backup == Some(true);
            for r in requests.list(&selector).await?.items {
                let rname = r.metadata.name.clone().unwrap_or_default();
                writes::delete_if_present(&requests, &rname).await?;
            }
            if retrying {
                // A failed permanent deletion is retried with a fresh request after a pause.
                Ok(Action::requeue(context.backoff(&format!(
                    "{}/delete",
                    driver::backoff_key::<NabReconciler>(nab)
                ))))
            } else {
                Ok(Action::requeue(SOON))
            }
        }
        NabStep::RunDeletionActions { backup, actions } => {
            super::deletion_actions::execute(context, api, nab, &backup, &actions).await
        }
        NabStep::CreateDeleteBackupRequest(request) => {
            let requests: Api<DeleteBackupRequest> =
                Api::namespaced(context.client.clone(), &context.oadp_namespace);
            writes::create_if_absent(&requests, &request).await?;
            Ok(Action::requeue(nab_decision::DELETION_POLL))
        }
        NabStep::DeleteSelf => {
            // Restores made from this backup go with it.
            let restores: Api<NonAdminRestore> =
                Api::namespaced(context.client.clone(), &namespace);
            for r in restores.list(&ListParams::default()).await?.items {
                if r.spec.restore_spec.backup_name.as_deref() == Some(name.as_str()) {
                    let rname = r.metadata.name.clone().unwrap_or_default();
                    writes::delete_if_present(&restores, &rname).await?;
                }
            }
            writes::delete_if_present(api, &name).await?;
            Ok(Action::requeue(SOON))
        }
        NabStep::FollowVanishedBackup => {
            let mut status = nab.status.clone().unwrap_or_default();
            let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::now(),
            );
            nab_decision::set_condition(
                &mut status.conditions,
                types::DELETING,
                true,
                reasons::DELETION_PENDING,
                VANISHED_MESSAGE,
                &now,
            );
            status.phase = Some(crate::api::nonadmin::NonAdminPhase::Deleting);
            write_status(api, nab, status).await?;
            writes::delete_if_present(api, &name).await?;
            Ok(Action::requeue(SOON))
        }
        NabStep::RecordNamespaceIdentity {
            backup,
            namespace_uid,
        } => {
            let backups: Api<Backup> =
                Api::namespaced(context.client.clone(), &context.oadp_namespace);
            let patch = serde_json::json!({"metadata": {"annotations": {
                labels::NAB_ORIGIN_NAMESPACE_UID_ANNOTATION: namespace_uid,
            }}});
            match backups
                .patch(&backup, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => Ok(Action::requeue(SOON)),
                // Gone meanwhile: the next reconcile sees it.
                Err(kube::Error::Api(status)) if status.code == 404 => Ok(Action::requeue(SOON)),
                Err(error) => Err(error.into()),
            }
        }
        NabStep::AwaitChange => Ok(Action::await_change()),
        NabStep::RequeueAfter(d) => Ok(Action::requeue(d)),
    }
}

/// Replaces the status (PUT on /status with the resourceVersion just read): fields that vanished
/// from the Velero object vanish here too, and a concurrent change makes this fail with a
/// conflict instead of being overwritten.
async fn write_status(
    api: &Api<NonAdminBackup>,
    nab: &NonAdminBackup,
    status: crate::api::nonadmin::NonAdminBackupStatus,
) -> Result<(), ControllerError> {
    let mut next = nab.clone();
    next.status = Some(status);
    api.replace_status(
        nab.metadata.name.as_deref().unwrap_or_default(),
        &PostParams::default(),
        &next,
    )
    .await?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn backup(annotations: serde_json::Value) -> Backup {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "velero.io/v1", "kind": "Backup",
            "metadata": {"name": "team-a-lost-u", "namespace": "openshift-adp",
                         "annotations": annotations},
            "spec": {}
        }))
        .unwrap()
    }

    /// A NAB made by upstream NAC's synchronizer (the synced-from label only) adopts the
    /// backup made for a NAB of its name in its namespace — recording no namespace UID as
    /// upstream's do, or the namespace's own — and nothing else.
    #[test]
    fn a_synced_nab_adopts_only_its_own_backup() {
        let upstream = backup(serde_json::json!({
            "openshift.io/oadp-nab-origin-name": "lost",
            "openshift.io/oadp-nab-origin-namespace": "team-a"}));
        assert!(adoptable_sync(&upstream, "lost", "uid-a"));
        assert!(!adoptable_sync(&upstream, "other-name", "uid-a"));
        let recorded = backup(serde_json::json!({
            "openshift.io/oadp-nab-origin-name": "lost",
            "openshift.io/oadp-nab-origin-namespace": "team-a",
            "openshift.io/oadp-nab-origin-namespace-uid": "uid-a"}));
        assert!(adoptable_sync(&recorded, "lost", "uid-a"));
        // A namespace created again under the same name is another tenant.
        assert!(!adoptable_sync(&recorded, "lost", "uid-new"));
    }
}
