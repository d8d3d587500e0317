//! Backup sync: recreates the NonAdminBackup of a NAC-made Velero Backup whose tenant object is
//! gone (a wiped or restored cluster), in the origin namespace only, so the NAB controller adopts
//! and mirrors it again.
//!
//! A backup is synced when it is NAC's ([`origin_of_kind`] with the NonAdminBackup kind), it is
//! finished (Completed, PartiallyFailed or Failed: upstream syncs every backup Velero completed,
//! so the tenant sees a failure after a disaster too; never FailedValidation, which Velero
//! neither runs nor uploads), its origin namespace exists, and it lives on the
//! default BSL, on a BSL made for a NonAdminBackupStorageLocation that still exists **in the
//! origin namespace** (a tenant's bucket can hold backups annotated for other namespaces; those
//! are never planted there), or on the BSL of a shared backup pool entry (seed 001) made for
//! **the origin namespace with the UID it has now** (a re-created namespace never inherits the
//! old one's backups, and an entry's prefix never feeds another namespace).
//!
//! Whatever the location, the namespace must also be the one the backup was made for: the NAB
//! and NAS controllers record the origin namespace's UID on every Velero Backup
//! ([`labels::NAB_ORIGIN_NAMESPACE_UID_ANNOTATION`]), and a backup is adopted only into the
//! namespace that has that UID now. A namespace deleted and re-created under the same name
//! (on OpenShift, anyone who may create projects can claim a deleted project's name) gets
//! none of its predecessor's backups; nor do backups that record no UID (made before NAC
//! recorded it, or planted without it). An admin who wants such backups recovered into the
//! namespace of the same name opts in with `allowCrossNamespaceRecovery: true` in NAC's policy
//! ConfigMap ([`SyncView::cross_namespace_recovery`]).
use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams, PostParams};

use super::bucket_decision::location_name;
use super::{Context, ControllerError};
use crate::api::nonadmin::labels;
use crate::api::nonadmin::{
    BackupEntry, ENTRY_ANNOTATION, ENTRY_NAMESPACE_ANNOTATION, NonAdminBackup,
    NonAdminBackupStatus, NonAdminBackupStorageLocation, NonAdminSchedule, POOL_LOCATION_LABEL,
    RelatedVeleroBackup,
};
use crate::api::origin::origin_of_kind;
use crate::api::origin::{Origin, OriginKind};
use crate::api::velero::{Backup, BackupPhase, BackupStorageLocation};
use crate::policy::pool::uid_matches;

/// Where a Velero Backup is stored, as far as the sync is concerned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// The admin's default BSL.
    Default,
    /// A BSL made for the NonAdminBackupStorageLocation `name` in `namespace`.
    Tenant { namespace: String, name: String },
    /// The BSL of a shared backup pool entry: the entry of namespace `namespace` whose UID is
    /// `namespace_uid` (in full, or its leading hex digits for an entry rebuilt from a bucket
    /// listing).
    Pool {
        namespace: String,
        namespace_uid: String,
    },
    /// A pool BSL (labelled [`POOL_LOCATION_LABEL`]) that no BackupEntry claims: nothing on it
    /// is synced until the pool controller has rebuilt its entry.
    UnclaimedPool,
    /// Any other BSL (an admin's non-default one, or one that does not exist).
    Other,
}

/// Classifies the Velero BSLs of the OADP namespace by name; `entries` are the BackupEntries
/// the pool's BSLs belong to.
pub fn classify_locations(
    bsls: &[BackupStorageLocation],
    entries: &[BackupEntry],
) -> HashMap<String, Location> {
    bsls.iter()
        .filter_map(|bsl| {
            let name = bsl.metadata.name.clone()?;
            if let Some(pool) = pool_location(bsl, &name, entries) {
                return Some((name, pool));
            }
            let l = bsl.metadata.labels.clone().unwrap_or_default();
            let a = bsl.metadata.annotations.clone().unwrap_or_default();
            let location = match origin_of_kind(OriginKind::NonAdminBackupStorageLocation, &l, &a) {
                Some(o) => Location::Tenant {
                    namespace: o.namespace,
                    name: o.name,
                },
                None if bsl.spec.default == Some(true) => Location::Default,
                None => Location::Other,
            };
            Some((name, location))
        })
        .collect()
}

/// The pool location `bsl` (named `name`) is, if it is one of the pool's. It belongs to the
/// BackupEntry its annotation names only when that entry exists, is for the namespace the BSL
/// names, and has this BSL as its location; else it is unclaimed.
fn pool_location(
    bsl: &BackupStorageLocation,
    name: &str,
    entries: &[BackupEntry],
) -> Option<Location> {
    let pool = bsl
        .metadata
        .labels
        .as_ref()
        .is_some_and(|l| l.contains_key(POOL_LOCATION_LABEL));
    if !pool {
        return None;
    }
    let annotations = bsl.metadata.annotations.clone().unwrap_or_default();
    let claimed = annotations.get(ENTRY_ANNOTATION).and_then(|entry_name| {
        entries.iter().find(|e| {
            e.metadata.name.as_deref() == Some(entry_name.as_str())
                && location_name(entry_name) == name
                && annotations.get(ENTRY_NAMESPACE_ANNOTATION) == Some(&e.spec.namespace)
                && !e.spec.namespace.is_empty()
                && !e.spec.namespace_uid.is_empty()
        })
    });
    Some(match claimed {
        Some(entry) => Location::Pool {
            namespace: entry.spec.namespace.clone(),
            namespace_uid: entry.spec.namespace_uid.clone(),
        },
        None => Location::UnclaimedPool,
    })
}

/// The location a backup is stored on: its `storageLocation` (empty means the default).
pub fn location_of(backup: &Backup, locations: &HashMap<String, Location>) -> Location {
    match backup
        .spec
        .storage_location
        .as_deref()
        .filter(|s| !s.is_empty())
    {
        None => Location::Default,
        Some(name) => locations.get(name).cloned().unwrap_or(Location::Other),
    }
}

/// A NonAdminBackup to recreate.
#[derive(Clone, Debug, PartialEq)]
pub struct SyncedNab {
    /// The Velero Backup's origin (namespace, name, NACUUID).
    pub origin: Origin,
    /// Name of the Velero Backup.
    pub velero_name: String,
    /// The NAB (spec and labels; the status is written separately).
    pub nab: NonAdminBackup,
    /// The status that makes the NAB controller adopt the Velero Backup.
    pub status: NonAdminBackupStatus,
}

/// What the sync knows about the cluster, read once per pass.
#[derive(Clone, Debug, Default)]
pub struct SyncView {
    /// Existing namespaces: name → UID.
    pub namespaces: HashMap<String, String>,
    /// Existing NABSLs as (namespace, name).
    pub nabsls: HashSet<(String, String)>,
    /// Per namespace: names of existing NABs and the NACUUIDs in their status.
    pub nabs: HashMap<String, (HashSet<String>, HashSet<String>)>,
    /// Velero BSLs by name.
    pub locations: HashMap<String, Location>,
    /// Existing NonAdminSchedules as (namespace, name): their backups' child NABs are the
    /// schedule controller's to make.
    pub schedules: HashSet<(String, String)>,
    /// The admin's opt-in to cross-namespace recovery (`allowCrossNamespaceRecovery`): backups
    /// whose recorded namespace UID is missing or another one's are adopted into the
    /// namespace of the recorded name anyway.
    pub cross_namespace_recovery: bool,
}

/// What a backup records about the identity of its origin namespace, compared with the
/// namespace of that name now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordedIdentity {
    /// It recorded the UID the namespace has now.
    Same,
    /// It recorded no UID.
    Unrecorded,
    /// It recorded another UID: another namespace of the same name made it.
    Other,
}

/// How the namespace UID `backup` recorded compares with `live_uid`.
pub fn recorded_identity(backup: &Backup, live_uid: &str) -> RecordedIdentity {
    match backup
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(labels::NAB_ORIGIN_NAMESPACE_UID_ANNOTATION))
        .filter(|recorded| !recorded.is_empty())
    {
        None => RecordedIdentity::Unrecorded,
        Some(recorded) if !live_uid.is_empty() && recorded == live_uid => RecordedIdentity::Same,
        Some(_) => RecordedIdentity::Other,
    }
}

/// Whether `backup` was made by a NonAdminSchedule that still exists.
pub fn owned_by_live_schedule(backup: &Backup, view: &SyncView) -> bool {
    let l = backup.metadata.labels.clone().unwrap_or_default();
    let a = backup.metadata.annotations.clone().unwrap_or_default();
    origin_of_kind(OriginKind::NonAdminSchedule, &l, &a)
        .is_some_and(|o| view.schedules.contains(&(o.namespace, o.name)))
}

/// The origin of `backup` if the sync may recreate its NAB (ignoring whether it exists).
pub fn sync_origin(backup: &Backup, view: &SyncView) -> Option<Origin> {
    origin_if(backup, view, !view.cross_namespace_recovery)
}

/// The origin of `backup` if the sync would recreate its NAB once the admin opted in to
/// cross-namespace recovery — what garbage collection keeps: a backup a re-created namespace
/// does not get is still its predecessor's, recoverable by the admin (and deleting the Velero
/// Backup would not delete its data; Velero would only sync it back).
pub fn retained_origin(backup: &Backup, view: &SyncView) -> Option<Origin> {
    origin_if(backup, view, false)
}

/// Whether a Velero Backup in `phase` is synced: it completed, whatever its outcome (upstream
/// syncs every backup with a completion timestamp, which Velero sets on Completed,
/// PartiallyFailed and Failed).
pub fn synced_phase(phase: &BackupPhase) -> bool {
    matches!(
        phase,
        BackupPhase::Completed | BackupPhase::PartiallyFailed | BackupPhase::Failed
    )
}

/// [`sync_origin`], comparing the recorded namespace UID only when `compare_identity`.
fn origin_if(backup: &Backup, view: &SyncView, compare_identity: bool) -> Option<Origin> {
    if backup.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let l = backup.metadata.labels.clone().unwrap_or_default();
    let a = backup.metadata.annotations.clone().unwrap_or_default();
    let origin = origin_of_kind(OriginKind::NonAdminBackup, &l, &a)?;
    let finished = backup
        .status
        .as_ref()
        .and_then(|s| s.phase.as_ref())
        .is_some_and(synced_phase);
    let live_uid = view.namespaces.get(&origin.namespace)?;
    if !finished || owned_by_live_schedule(backup, view) {
        return None;
    }
    // The namespace of that name now must be the one the backup was made for, unless the
    // admin opted in to recovering backups across namespaces of the same name.
    let identity = match recorded_identity(backup, live_uid) {
        _ if !compare_identity => RecordedIdentity::Same,
        identity => identity,
    };
    match location_of(backup, &view.locations) {
        Location::Default if identity == RecordedIdentity::Same => Some(origin),
        Location::Tenant { namespace, name }
            if identity == RecordedIdentity::Same
                && namespace == origin.namespace
                && view.nabsls.contains(&(namespace.clone(), name.clone())) =>
        {
            Some(origin)
        }
        // The namespace that exists now must be the entry's: same name and same UID (which
        // proves the identity of a backup that recorded none; one that recorded another UID is
        // still refused).
        Location::Pool {
            namespace,
            namespace_uid,
        } if identity != RecordedIdentity::Other
            && namespace == origin.namespace
            && uid_matches(&namespace_uid, live_uid) =>
        {
            Some(origin)
        }
        _ => None,
    }
}

/// The NABs to recreate for `backups` (pure).
pub fn plan<B: Borrow<Backup>>(
    backups: &[B],
    view: &SyncView,
    oadp_namespace: &str,
) -> Vec<SyncedNab> {
    let mut out = Vec::new();
    let mut planned: HashSet<(String, String)> = HashSet::new();
    for backup in backups {
        let backup = backup.borrow();
        let Some(origin) = sync_origin(backup, view) else {
            continue;
        };
        let Some(velero_name) = backup.metadata.name.clone() else {
            continue;
        };
        if let Some((names, uuids)) = view.nabs.get(&origin.namespace)
            && (names.contains(&origin.name) || uuids.contains(&origin.nacuuid))
        {
            // Either the NAB is there, or its name is taken: never overwrite a tenant's NAB.
            continue;
        }
        if !planned.insert((origin.namespace.clone(), origin.name.clone())) {
            continue;
        }
        let mut spec = backup.spec.clone();
        // A pool backup's NAB names no location: that is what sends a NAB to its entry.
        spec.storage_location = match location_of(backup, &view.locations) {
            Location::Tenant { name, .. } => Some(name),
            _ => None,
        };
        let nab = NonAdminBackup {
            metadata: kube::core::ObjectMeta {
                name: Some(origin.name.clone()),
                namespace: Some(origin.namespace.clone()),
                labels: Some(BTreeMap::from([(
                    labels::NAB_SYNCED_FROM_NACUUID.to_string(),
                    origin.nacuuid.clone(),
                )])),
                ..Default::default()
            },
            spec: crate::api::nonadmin::NonAdminBackupSpec {
                backup_spec: spec,
                ..Default::default()
            },
            status: None,
        };
        let status = NonAdminBackupStatus {
            velero_backup: Some(RelatedVeleroBackup {
                nacuuid: Some(origin.nacuuid.clone()),
                name: Some(velero_name.clone()),
                namespace: Some(oadp_namespace.to_string()),
                ..Default::default()
            }),
            ..Default::default()
        };
        out.push(SyncedNab {
            origin,
            velero_name,
            nab,
            status,
        });
    }
    out
}

/// Reads what the sync needs. NABs and NABSLs are only listed in the origin namespaces of the
/// given backups.
pub async fn observe<B: Borrow<Backup>>(
    context: &Context,
    backups: &[B],
) -> Result<SyncView, ControllerError> {
    observe_with(context, backups, Detail::EveryOrigin).await
}

/// Which origin namespaces [`observe_with`] reads the NonAdminSchedules and NABSLs of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Detail {
    /// Every origin namespace of the backups (garbage collection judges every backup).
    EveryOrigin,
    /// Only those with a backup whose NAB is missing: no other backup is planned, so in the
    /// steady state (every NAB there) a sync pass lists nothing per namespace.
    MissingNabs,
}

async fn observe_with<B: Borrow<Backup>>(
    context: &Context,
    backups: &[B],
    detail: Detail,
) -> Result<SyncView, ControllerError> {
    let client = context.client.clone();
    let mut view = SyncView {
        namespaces: Api::<Namespace>::all(client.clone())
            .list_metadata(&ListParams::default())
            .await?
            .items
            .into_iter()
            .filter_map(|n| Some((n.metadata.name?, n.metadata.uid.unwrap_or_default())))
            .collect(),
        ..Default::default()
    };
    let bsls: Api<BackupStorageLocation> = Api::namespaced(client.clone(), &context.oadp_namespace);
    let bsls = bsls.list(&ListParams::default()).await?.items;
    // Entries matter only when the shared pool has locations.
    let pool_in_use = bsls.iter().any(|b| {
        b.metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key(POOL_LOCATION_LABEL))
    });
    let entries = if pool_in_use {
        Api::<BackupEntry>::all(client.clone())
            .list(&ListParams::default())
            .await?
            .items
    } else {
        Vec::new()
    };
    view.locations = classify_locations(&bsls, &entries);
    let origins: Vec<Origin> = backups
        .iter()
        .filter_map(|b| {
            let b = b.borrow();
            let l = b.metadata.labels.clone().unwrap_or_default();
            let a = b.metadata.annotations.clone().unwrap_or_default();
            origin_of_kind(OriginKind::NonAdminBackup, &l, &a)
        })
        .filter(|o| view.namespaces.contains_key(&o.namespace))
        .collect();
    let origin_namespaces: HashSet<String> = origins.iter().map(|o| o.namespace.clone()).collect();
    // The NABs: from the shared watch cache when it is synced (a NAB it has not seen yet is
    // only planned again: its create answers 409 and leaves the tenant's alone), else listed.
    let cached = context.nabs.matching(|nab| {
        nab.metadata
            .namespace
            .as_ref()
            .is_some_and(|ns| origin_namespaces.contains(ns))
    });
    if context.nabs.is_installed() {
        for nab in cached {
            let entry = view
                .nabs
                .entry(nab.metadata.namespace.clone().unwrap_or_default())
                .or_default();
            nab_identity(&nab, entry);
        }
        for ns in &origin_namespaces {
            view.nabs.entry(ns.clone()).or_default();
        }
    } else {
        for ns in &origin_namespaces {
            let nabs: Api<NonAdminBackup> = Api::namespaced(client.clone(), ns);
            let entry = view.nabs.entry(ns.clone()).or_default();
            for nab in nabs.list(&ListParams::default()).await?.items {
                nab_identity(&nab, entry);
            }
        }
    }
    let detailed: HashSet<String> = match detail {
        Detail::EveryOrigin => origin_namespaces,
        Detail::MissingNabs => origins
            .iter()
            .filter(|o| {
                view.nabs.get(&o.namespace).is_none_or(|(names, uuids)| {
                    !names.contains(&o.name) && !uuids.contains(&o.nacuuid)
                })
            })
            .map(|o| o.namespace.clone())
            .collect(),
    };
    for ns in detailed {
        let schedules: Api<NonAdminSchedule> = Api::namespaced(client.clone(), &ns);
        for n in schedules.list_metadata(&ListParams::default()).await?.items {
            if let Some(name) = n.metadata.name {
                view.schedules.insert((ns.clone(), name));
            }
        }
        let nabsls: Api<NonAdminBackupStorageLocation> = Api::namespaced(client.clone(), &ns);
        for n in nabsls.list_metadata(&ListParams::default()).await?.items {
            if let Some(name) = n.metadata.name {
                view.nabsls.insert((ns.clone(), name));
            }
        }
    }
    Ok(view)
}

/// Adds `nab`'s name and the NACUUID in its status to a namespace's entry of [`SyncView::nabs`].
fn nab_identity(nab: &NonAdminBackup, (names, uuids): &mut (HashSet<String>, HashSet<String>)) {
    if let Some(n) = nab.metadata.name.clone() {
        names.insert(n);
    }
    if let Some(u) = nab
        .status
        .as_ref()
        .and_then(|s| s.velero_backup.as_ref())
        .and_then(|v| v.nacuuid.clone())
    {
        uuids.insert(u);
    }
}

/// NAC-made Velero Backups of the OADP namespace (selected by NAC's label): the watch cache's
/// copies when it is synced (no list of every backup each period), else listed a page at a
/// time and kept [`lean`](super::velero_cache::lean).
pub async fn nac_backups(context: &Context) -> Result<Vec<Arc<Backup>>, ControllerError> {
    if context.velero.backups.is_installed() {
        return Ok(context.velero.backups.matching(|_| true));
    }
    let api: Api<Backup> = Api::namespaced(context.client.clone(), &context.oadp_namespace);
    let mut selector = ListParams::default()
        .labels(&format!("{}={}", labels::OADP, labels::OADP_VALUE))
        .limit(LIST_PAGE);
    let mut backups = Vec::new();
    loop {
        let page = api.list(&selector).await?;
        backups.extend(page.items.into_iter().map(|mut b| {
            super::velero_cache::lean(&mut b);
            Arc::new(b)
        }));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => selector = selector.continue_token(&token),
            None => return Ok(backups),
        }
    }
}

/// Objects per page when listing every NAC backup (as kube-runtime's watcher pages its lists).
const LIST_PAGE: u32 = 500;

/// One pass: recreates every missing NAB. Returns the (namespace, name) of the NABs created.
pub async fn sync_once(context: &Context) -> Result<Vec<(String, String)>, ControllerError> {
    let backups = nac_backups(context).await?;
    sync_backups(context, &backups).await
}

/// One pass over `backups` only (NAC's Velero Backups, as [`nac_backups`] lists them):
/// recreates their missing NABs, with the admin's policy as loaded in `context`.
pub async fn sync_backups<B: Borrow<Backup>>(
    context: &Context,
    backups: &[B],
) -> Result<Vec<(String, String)>, ControllerError> {
    let mut view = observe_with(context, backups, Detail::MissingNabs).await?;
    view.cross_namespace_recovery = context
        .policy
        .read()
        .map(|p| p.settings().allow_cross_namespace_recovery)
        .unwrap_or(false);
    let mut created = Vec::new();
    for synced in plan(backups, &view, &context.oadp_namespace) {
        if create(context, &synced).await? {
            created.push((synced.origin.namespace.clone(), synced.origin.name.clone()));
        }
    }
    Ok(created)
}

/// Creates the NAB, then writes its status (create ignores the status subresource).
async fn create(context: &Context, synced: &SyncedNab) -> Result<bool, ControllerError> {
    let api: Api<NonAdminBackup> =
        Api::namespaced(context.client.clone(), &synced.origin.namespace);
    let made = match api.create(&PostParams::default(), &synced.nab).await {
        Ok(made) => made,
        // Someone (the tenant, another replica) made it meanwhile: leave theirs alone.
        Err(kube::Error::Api(s)) if s.code == 409 => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    tracing::info!(
        namespace = %synced.origin.namespace,
        name = %synced.origin.name,
        velero_backup = %synced.velero_name,
        "recreated NonAdminBackup from its Velero Backup"
    );
    let mut current = made;
    for _ in 0..5 {
        let uid_ours = current
            .status
            .as_ref()
            .and_then(|s| s.velero_backup.as_ref())
            .and_then(|v| v.nacuuid.as_deref())
            == Some(synced.origin.nacuuid.as_str());
        if uid_ours {
            return Ok(true);
        }
        let mut next = current.clone();
        next.status = Some(synced.status.clone());
        match api
            .replace_status(&synced.origin.name, &PostParams::default(), &next)
            .await
        {
            Ok(_) => return Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => {
                let Some(fresh) = api.get_opt(&synced.origin.name).await? else {
                    return Ok(true);
                };
                current = fresh;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(ControllerError::Invalid(format!(
        "could not write the status of synced NonAdminBackup {}/{}",
        synced.origin.namespace, synced.origin.name
    )))
}

/// The sync period: `fixed` when given, else the policy's `backupSyncPeriod` (0 disables).
fn period(context: &Context, fixed: Option<Duration>) -> Duration {
    fixed.unwrap_or_else(|| {
        context
            .policy
            .read()
            .map(|p| p.settings().backup_sync_period)
            .unwrap_or(Duration::from_secs(120))
    })
}

/// Runs the sync every period until the task is dropped; `fixed` overrides the policy's period.
pub async fn run(context: Arc<Context>, fixed: Option<Duration>) {
    loop {
        let every = period(&context, fixed);
        if every.is_zero() {
            tokio::time::sleep(Duration::from_secs(30)).await;
            continue;
        }
        // Each pass waits a period first: at start-up the reconcilers settle before the sync
        // looks for missing NonAdminBackups.
        tokio::time::sleep(every).await;
        // Stopping: no pass starts; a running one holds the shutdown until its writes are done.
        let Some(_writing) = context.shutdown.begin() else {
            return;
        };
        match sync_once(&context).await {
            Ok(created) if !created.is_empty() => {
                tracing::info!(
                    count = created.len(),
                    "backup sync recreated NonAdminBackups"
                );
                super::health::record("sync", None);
            }
            Ok(_) => super::health::record("sync", None),
            Err(e) => {
                tracing::warn!(error = %e, "backup sync failed");
                super::health::record("sync", Some(&e));
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A NAC-made backup of `ns`, recording the UID `ns` has in [`view`].
    fn backup(ns: &str, name: &str, uuid: &str, location: Option<&str>, phase: &str) -> Backup {
        let uid = match ns {
            "team-a" => UID_A,
            "team-b" => UID_B,
            _ => "dddddddd-1111-2222-3333-444444444444",
        };
        recording(unrecorded(ns, name, uuid, location, phase), uid)
    }

    fn recording(mut backup: Backup, uid: &str) -> Backup {
        backup
            .metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(
                labels::NAB_ORIGIN_NAMESPACE_UID_ANNOTATION.to_string(),
                uid.to_string(),
            );
        backup
    }

    /// As NAC made backups before it recorded the namespace's UID.
    fn unrecorded(ns: &str, name: &str, uuid: &str, location: Option<&str>, phase: &str) -> Backup {
        serde_json::from_value(json!({
            "apiVersion": "velero.io/v1", "kind": "Backup",
            "metadata": {"name": uuid, "namespace": "openshift-adp",
                "labels": {labels::OADP: labels::OADP_VALUE, labels::MANAGED_BY: labels::MANAGED_BY_VALUE,
                    labels::NAB_ORIGIN_NACUUID: uuid},
                "annotations": {labels::NAB_ORIGIN_NAMESPACE_ANNOTATION: ns, labels::NAB_ORIGIN_NAME_ANNOTATION: name}},
            "spec": {"storageLocation": location, "includedNamespaces": [ns]},
            "status": {"phase": phase}
        }))
        .unwrap()
    }

    const UID_A: &str = "aaaaaaaa-1111-2222-3333-444444444444";
    const UID_B: &str = "bbbbbbbb-1111-2222-3333-444444444444";

    fn view() -> SyncView {
        SyncView {
            namespaces: [
                ("team-a".to_string(), UID_A.to_string()),
                ("team-b".to_string(), UID_B.to_string()),
            ]
            .into(),
            nabsls: [("team-a".to_string(), "bucket".to_string())].into(),
            nabs: HashMap::new(),
            schedules: HashSet::new(),
            cross_namespace_recovery: false,
            locations: [
                ("default".to_string(), Location::Default),
                (
                    "team-a-bsl".to_string(),
                    Location::Tenant {
                        namespace: "team-a".into(),
                        name: "bucket".into(),
                    },
                ),
                ("admin-other".to_string(), Location::Other),
            ]
            .into(),
        }
    }

    #[test]
    fn plans_default_and_own_bucket_only() {
        let backups = vec![
            backup("team-a", "one", "u1", None, "Completed"),
            backup("team-a", "two", "u2", Some("team-a-bsl"), "PartiallyFailed"),
            // Planted in team-a's bucket, annotated for team-b.
            backup("team-b", "evil", "u3", Some("team-a-bsl"), "Completed"),
            backup("team-a", "other", "u4", Some("admin-other"), "Completed"),
            backup("team-gone", "x", "u5", None, "Completed"),
            backup("team-a", "running", "u6", None, "InProgress"),
        ];
        let planned = plan(&backups, &view(), "openshift-adp");
        let names: Vec<_> = planned.iter().map(|s| s.origin.name.as_str()).collect();
        assert_eq!(names, ["one", "two"]);
        assert_eq!(
            planned[1].nab.spec.backup_spec.storage_location.as_deref(),
            Some("bucket")
        );
        assert_eq!(planned[0].nab.spec.backup_spec.storage_location, None);
        let l = planned[0].nab.metadata.labels.as_ref().unwrap();
        assert_eq!(l[labels::NAB_SYNCED_FROM_NACUUID], "u1");
        let vb = planned[0].status.velero_backup.as_ref().unwrap();
        assert_eq!(vb.nacuuid.as_deref(), Some("u1"));
        assert_eq!(vb.namespace.as_deref(), Some("openshift-adp"));
    }

    #[test]
    fn failed_backups_are_synced_too_as_upstream() {
        let backups = vec![
            backup("team-a", "broken", "u1", None, "Failed"),
            backup("team-a", "partial", "u2", None, "PartiallyFailed"),
            backup("team-a", "invalid", "u3", None, "FailedValidation"),
            backup("team-a", "new", "u4", None, "New"),
            backup("team-a", "finalizing", "u5", None, "Finalizing"),
        ];
        let planned = plan(&backups, &view(), "openshift-adp");
        let names: Vec<_> = planned.iter().map(|s| s.origin.name.as_str()).collect();
        assert_eq!(names, ["broken", "partial"]);
        let vb = planned[0].status.velero_backup.as_ref().unwrap();
        assert_eq!(vb.nacuuid.as_deref(), Some("u1"));
        assert!(synced_phase(&BackupPhase::Failed));
        assert!(!synced_phase(&BackupPhase::FailedValidation));
        assert!(!synced_phase(&BackupPhase::WaitingForPluginOperations));
    }

    #[test]
    fn skips_existing_or_taken_names_and_deleted_nabsls() {
        let mut v = view();
        v.nabs.insert(
            "team-a".into(),
            (["one".to_string()].into(), ["u2".to_string()].into()),
        );
        v.nabsls.clear();
        let backups = vec![
            backup("team-a", "one", "u1", None, "Completed"),
            backup("team-a", "two", "u2", None, "Completed"),
            backup("team-a", "three", "u3", Some("team-a-bsl"), "Completed"),
        ];
        assert!(plan(&backups, &v, "openshift-adp").is_empty());
    }

    #[test]
    fn backups_of_a_live_schedule_are_left_to_it() {
        let mut b = backup("team-a", "child", "u1", None, "Completed");
        b.metadata
            .labels
            .as_mut()
            .unwrap()
            .insert(labels::NAS_ORIGIN_NACUUID.into(), "team-a-nightly-x".into());
        let a = b.metadata.annotations.as_mut().unwrap();
        a.insert(
            labels::NAS_ORIGIN_NAMESPACE_ANNOTATION.into(),
            "team-a".into(),
        );
        a.insert(labels::NAS_ORIGIN_NAME_ANNOTATION.into(), "nightly".into());
        let mut v = view();
        assert_eq!(plan(std::slice::from_ref(&b), &v, "openshift-adp").len(), 1);
        v.schedules.insert(("team-a".into(), "nightly".into()));
        assert!(plan(&[b], &v, "openshift-adp").is_empty());
    }

    /// A BackupEntry of the pool for `namespace` with UID `uid`, and the Velero BSL the pool
    /// controller makes for it.
    fn pool_entry(namespace: &str, uid: &str) -> (BackupEntry, BackupStorageLocation) {
        let name = format!("{namespace}--{}", &uid[..5]);
        let entry: BackupEntry = serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "BackupEntry",
            "metadata": {"name": name},
            "spec": {"namespace": namespace, "namespaceUID": uid, "bucketName": "pool-1",
                     "prefix": name}
        }))
        .unwrap();
        let bucket: crate::api::nonadmin::BackupBucket = serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "BackupBucket",
            "metadata": {"name": "pool-1"},
            "spec": {"provider": "aws", "bucket": "shared-1",
                     "credential": {"name": "pool-credentials", "key": "cloud"}}
        }))
        .unwrap();
        let bsl = super::super::bucket_decision::location_for(
            &name,
            &entry.spec,
            &bucket,
            "openshift-adp",
        );
        (entry, bsl)
    }

    #[test]
    fn pool_locations_belong_to_the_entry_that_claims_them() {
        let (entry, bsl) = pool_entry("team-a", UID_A);
        let bsl_name = bsl.metadata.name.clone().unwrap();
        let located = classify_locations(std::slice::from_ref(&bsl), std::slice::from_ref(&entry));
        assert_eq!(
            located[&bsl_name],
            Location::Pool {
                namespace: "team-a".into(),
                namespace_uid: UID_A.into()
            }
        );
        // Its entry lost (the pool controller rebuilds it): unclaimed meanwhile.
        let located = classify_locations(std::slice::from_ref(&bsl), &[]);
        assert_eq!(located[&bsl_name], Location::UnclaimedPool);
        // An entry of another namespace with the annotated name claims nothing.
        let mut other = entry.clone();
        other.spec.namespace = "team-b".into();
        let located = classify_locations(std::slice::from_ref(&bsl), &[other]);
        assert_eq!(located[&bsl_name], Location::UnclaimedPool);
        // Nor does the entry claim a BSL of another name carrying its annotation.
        let mut renamed = bsl.clone();
        renamed.metadata.name = Some("copied".into());
        let located = classify_locations(&[renamed], std::slice::from_ref(&entry));
        assert_eq!(located["copied"], Location::UnclaimedPool);
    }

    #[test]
    fn pool_backups_sync_into_their_entrys_namespace_only_while_its_uid_is_the_same() {
        let (entry_a, bsl_a) = pool_entry("team-a", UID_A);
        let on_a = bsl_a.metadata.name.clone().unwrap();
        let mut v = view();
        v.locations = classify_locations(&[bsl_a], &[entry_a]);
        let backups = vec![
            backup("team-a", "nightly-1", "u1", Some(&on_a), "Completed"),
            // Annotated for team-b but stored in team-a's prefix: never planted in team-b.
            backup("team-b", "evil", "u2", Some(&on_a), "Completed"),
            backup("team-a", "running", "u3", Some(&on_a), "InProgress"),
        ];
        let planned = plan(&backups, &v, "openshift-adp");
        let names: Vec<_> = planned
            .iter()
            .map(|p| (p.origin.namespace.as_str(), p.origin.name.as_str()))
            .collect();
        assert_eq!(names, [("team-a", "nightly-1")]);
        // Its NAB names no location: a NAB without one goes to its namespace's entry.
        assert_eq!(planned[0].nab.spec.backup_spec.storage_location, None);
        assert_eq!(
            planned[0]
                .status
                .velero_backup
                .as_ref()
                .unwrap()
                .name
                .as_deref(),
            Some("u1")
        );

        // team-a deleted and created again: a new UID, so none of the old backups.
        v.namespaces.insert(
            "team-a".into(),
            "cccccccc-1111-2222-3333-444444444444".into(),
        );
        assert!(plan(&backups, &v, "openshift-adp").is_empty());
        // Gone altogether: nothing either.
        v.namespaces.remove("team-a");
        assert!(plan(&backups, &v, "openshift-adp").is_empty());
    }

    #[test]
    fn an_entry_rebuilt_from_a_listing_matches_the_namespace_by_its_uid_digits() {
        let (mut entry, bsl) = pool_entry("team-a", UID_A);
        entry.spec.namespace_uid = "aaaaa".into();
        let on_a = bsl.metadata.name.clone().unwrap();
        let mut v = view();
        v.locations = classify_locations(&[bsl], &[entry]);
        let b = backup("team-a", "one", "u1", Some(&on_a), "Completed");
        assert_eq!(plan(std::slice::from_ref(&b), &v, "openshift-adp").len(), 1);
        v.namespaces.insert("team-a".into(), UID_B.into());
        assert!(plan(&[b], &v, "openshift-adp").is_empty());
    }

    #[test]
    fn nothing_on_an_unclaimed_pool_location_is_synced() {
        let (_, bsl) = pool_entry("team-a", UID_A);
        let on_a = bsl.metadata.name.clone().unwrap();
        let mut v = view();
        v.locations = classify_locations(&[bsl], &[]);
        let b = backup("team-a", "one", "u1", Some(&on_a), "Completed");
        assert!(plan(&[b], &v, "openshift-adp").is_empty());
    }

    #[test]
    fn a_recreated_namespace_gets_none_of_its_predecessors_backups() {
        const UID_NEW: &str = "eeeeeeee-1111-2222-3333-444444444444";
        let backups = vec![
            backup("team-a", "one", "u1", None, "Completed"),
            backup("team-a", "two", "u2", Some("team-a-bsl"), "Completed"),
        ];
        assert_eq!(plan(&backups, &view(), "openshift-adp").len(), 2);
        // team-a deleted and created again under the same name (a new owner, a new UID).
        let mut v = view();
        v.namespaces.insert("team-a".into(), UID_NEW.into());
        assert!(sync_origin(&backups[0], &v).is_none());
        assert!(plan(&backups, &v, "openshift-adp").is_empty());
        // GC still keeps them: the admin may recover them (and deleting the Velero Backup
        // would not delete its data).
        assert!(retained_origin(&backups[0], &v).is_some());
        // Unless the admin opts in to cross-namespace recovery.
        v.cross_namespace_recovery = true;
        let names: Vec<_> = plan(&backups, &v, "openshift-adp")
            .into_iter()
            .map(|p| p.origin.name)
            .collect();
        assert_eq!(names, ["one", "two"]);
    }

    #[test]
    fn backups_that_record_no_namespace_uid_need_the_opt_in() {
        let old = unrecorded("team-a", "old", "u1", None, "Completed");
        let own_bucket = unrecorded("team-a", "bucket", "u2", Some("team-a-bsl"), "Completed");
        let empty = recording(unrecorded("team-a", "empty", "u3", None, "Completed"), "");
        let mut v = view();
        for b in [&old, &own_bucket, &empty] {
            assert!(sync_origin(b, &v).is_none(), "{:?}", b.metadata.annotations);
        }
        v.cross_namespace_recovery = true;
        for b in [&old, &own_bucket, &empty] {
            assert!(sync_origin(b, &v).is_some(), "{:?}", b.metadata.annotations);
        }
        assert_eq!(
            recorded_identity(&backup("team-a", "x", "u", None, "Completed"), UID_A),
            RecordedIdentity::Same
        );
        assert_eq!(recorded_identity(&old, UID_A), RecordedIdentity::Unrecorded);
        assert_eq!(
            recorded_identity(&backup("team-b", "x", "u", None, "Completed"), UID_A),
            RecordedIdentity::Other
        );
        // A live namespace without a UID never matches a recorded one.
        assert_eq!(
            recorded_identity(&recording(old.clone(), ""), ""),
            RecordedIdentity::Unrecorded
        );
    }

    #[test]
    fn pool_backups_are_proven_by_their_entry_but_never_against_a_recorded_uid() {
        let (entry_a, bsl_a) = pool_entry("team-a", UID_A);
        let on_a = bsl_a.metadata.name.clone().unwrap();
        let mut v = view();
        v.locations = classify_locations(&[bsl_a], &[entry_a]);
        // Made before NAC recorded UIDs: the entry's UID is the proof, as before.
        let old = unrecorded("team-a", "old", "u1", Some(&on_a), "Completed");
        assert!(sync_origin(&old, &v).is_some());
        // Recording another namespace's UID: refused even on the entry of the right UID.
        let other = recording(
            unrecorded("team-a", "other", "u2", Some(&on_a), "Completed"),
            UID_B,
        );
        assert!(sync_origin(&other, &v).is_none());
        // The opt-in stops comparing recorded UIDs, never the entry's own check.
        v.cross_namespace_recovery = true;
        assert!(sync_origin(&other, &v).is_some());
        v.namespaces.insert(
            "team-a".into(),
            "ffffffff-1111-2222-3333-444444444444".into(),
        );
        assert!(sync_origin(&old, &v).is_none());
    }

    #[test]
    fn unlabelled_backups_are_never_synced() {
        let mut b = backup("team-a", "one", "u1", None, "Completed");
        b.metadata
            .labels
            .as_mut()
            .unwrap()
            .remove(labels::MANAGED_BY);
        assert!(plan(&[b], &view(), "openshift-adp").is_empty());
    }
}
