//! Backup sync: recreates the NonAdminBackup of a NAC-made Velero Backup whose tenant object is
//! gone (a wiped or restored cluster), in the origin namespace only, so the NAB controller adopts
//! and mirrors it again.
//!
//! A backup is synced when it is NAC's ([`origin_of_kind`] with the NonAdminBackup kind), it is
//! finished (Completed or PartiallyFailed), its origin namespace exists, and it lives on the
//! default BSL or on a BSL made for a NonAdminBackupStorageLocation that still exists **in the
//! origin namespace** (a tenant's bucket can hold backups annotated for other namespaces; those
//! are never planted there).
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams, PostParams};

use super::{Context, ControllerError};
use crate::api::nonadmin::labels;
use crate::api::nonadmin::{
    NonAdminBackup, NonAdminBackupStatus, NonAdminBackupStorageLocation, NonAdminSchedule,
    RelatedVeleroBackup,
};
use crate::api::velero::{Backup, BackupPhase, BackupStorageLocation};
use crate::policy::origin::origin_of_kind;
use crate::policy::{Origin, OriginKind};

/// Where a Velero Backup is stored, as far as the sync is concerned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// The admin's default BSL.
    Default,
    /// A BSL made for the NonAdminBackupStorageLocation `name` in `namespace`.
    Tenant { namespace: String, name: String },
    /// Any other BSL (an admin's non-default one, or one that does not exist).
    Other,
}

/// Classifies the Velero BSLs of the OADP namespace by name.
pub fn classify_locations(bsls: &[BackupStorageLocation]) -> HashMap<String, Location> {
    bsls.iter()
        .filter_map(|bsl| {
            let name = bsl.metadata.name.clone()?;
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
    /// Names of existing namespaces.
    pub namespaces: HashSet<String>,
    /// Existing NABSLs as (namespace, name).
    pub nabsls: HashSet<(String, String)>,
    /// Per namespace: names of existing NABs and the NACUUIDs in their status.
    pub nabs: HashMap<String, (HashSet<String>, HashSet<String>)>,
    /// Velero BSLs by name.
    pub locations: HashMap<String, Location>,
    /// Existing NonAdminSchedules as (namespace, name): their backups' child NABs are the
    /// schedule controller's to make.
    pub schedules: HashSet<(String, String)>,
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
        .is_some_and(|p| matches!(p, BackupPhase::Completed | BackupPhase::PartiallyFailed));
    if !finished
        || !view.namespaces.contains(&origin.namespace)
        || owned_by_live_schedule(backup, view)
    {
        return None;
    }
    match location_of(backup, &view.locations) {
        Location::Default => Some(origin),
        Location::Tenant { namespace, name }
            if namespace == origin.namespace
                && view.nabsls.contains(&(namespace.clone(), name.clone())) =>
        {
            Some(origin)
        }
        _ => None,
    }
}

/// The NABs to recreate for `backups` (pure).
pub fn plan(backups: &[Backup], view: &SyncView, oadp_namespace: &str) -> Vec<SyncedNab> {
    let mut out = Vec::new();
    let mut planned: HashSet<(String, String)> = HashSet::new();
    for backup in backups {
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
pub async fn observe(context: &Context, backups: &[Backup]) -> Result<SyncView, ControllerError> {
    let client = context.client.clone();
    let mut view = SyncView {
        namespaces: Api::<Namespace>::all(client.clone())
            .list_metadata(&ListParams::default())
            .await?
            .items
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect(),
        ..Default::default()
    };
    let bsls: Api<BackupStorageLocation> = Api::namespaced(client.clone(), &context.oadp_namespace);
    view.locations = classify_locations(&bsls.list(&ListParams::default()).await?.items);
    let origins: HashSet<String> = backups
        .iter()
        .filter_map(|b| {
            let l = b.metadata.labels.clone().unwrap_or_default();
            let a = b.metadata.annotations.clone().unwrap_or_default();
            origin_of_kind(OriginKind::NonAdminBackup, &l, &a).map(|o| o.namespace)
        })
        .filter(|ns| view.namespaces.contains(ns))
        .collect();
    for ns in origins {
        let nabs: Api<NonAdminBackup> = Api::namespaced(client.clone(), &ns);
        let mut names = HashSet::new();
        let mut uuids = HashSet::new();
        for nab in nabs.list(&ListParams::default()).await?.items {
            if let Some(n) = nab.metadata.name.clone() {
                names.insert(n);
            }
            if let Some(u) = nab
                .status
                .and_then(|s| s.velero_backup)
                .and_then(|v| v.nacuuid)
            {
                uuids.insert(u);
            }
        }
        view.nabs.insert(ns.clone(), (names, uuids));
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

/// NAC-made Velero Backups of the OADP namespace (selected by NAC's label).
pub async fn nac_backups(context: &Context) -> Result<Vec<Backup>, ControllerError> {
    let api: Api<Backup> = Api::namespaced(context.client.clone(), &context.oadp_namespace);
    let selector =
        ListParams::default().labels(&format!("{}={}", labels::OADP, labels::OADP_VALUE));
    Ok(api.list(&selector).await?.items)
}

/// One pass: recreates every missing NAB. Returns the (namespace, name) of the NABs created.
pub async fn sync_once(context: &Context) -> Result<Vec<(String, String)>, ControllerError> {
    let backups = nac_backups(context).await?;
    let view = observe(context, &backups).await?;
    let mut created = Vec::new();
    for synced in plan(&backups, &view, &context.oadp_namespace) {
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

    fn backup(ns: &str, name: &str, uuid: &str, location: Option<&str>, phase: &str) -> Backup {
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

    fn view() -> SyncView {
        SyncView {
            namespaces: ["team-a", "team-b"].map(String::from).into(),
            nabsls: [("team-a".to_string(), "bucket".to_string())].into(),
            nabs: HashMap::new(),
            schedules: HashSet::new(),
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
