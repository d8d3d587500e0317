//! Garbage collection: deletes NAC-made objects in the OADP namespace (Velero Backups, Restores,
//! BSLs, DeleteBackupRequests, DownloadRequests, Schedules, approval requests and copied
//! Secrets) whose tenant object no longer exists. Objects without both NAC labels are never
//! touched, and a Velero Backup the backup sync would recreate a NonAdminBackup for is kept.
//!
//! The shared backup pool (seed 001) is the pool controller's alone: its BSLs have no tenant
//! origin, so they are never candidates, and a backup stored on one of them outlives its
//! NonAdminBackup (and its namespace) until the entry's grace period ends and the pool
//! controller deletes it through a DeleteBackupRequest — GC never deletes it.
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams};

use super::{Context, ControllerError};
use crate::api::nonadmin::labels;
use crate::api::nonadmin::{
    NonAdminBackup, NonAdminBackupStorageLocation, NonAdminBackupStorageLocationRequest,
    NonAdminDownloadRequest, NonAdminRestore, NonAdminSchedule,
};
use crate::api::origin::{Origin, OriginKind, origin_of};
use crate::api::velero::{
    Backup, BackupStorageLocation, DeleteBackupRequest, DownloadRequest, Restore, Schedule,
};

/// An object NAC made in the OADP namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// Its kind (as listed).
    pub kind: &'static str,
    /// Its name.
    pub name: String,
    /// The tenant object it was made for.
    pub origin: Origin,
}

/// The origin of an object's metadata, when it is NAC's.
pub fn candidate(kind: &'static str, meta: &kube::core::ObjectMeta) -> Option<Candidate> {
    let l: BTreeMap<String, String> = meta.labels.clone().unwrap_or_default();
    let a: BTreeMap<String, String> = meta.annotations.clone().unwrap_or_default();
    Some(Candidate {
        kind,
        name: meta.name.clone()?,
        origin: origin_of(&l, &a)?,
    })
}

/// The orphans among `candidates` (pure): their origin does not exist and is not being synced.
pub fn orphans(
    candidates: Vec<Candidate>,
    exists: &HashSet<(OriginKind, String, String)>,
    syncing: &HashSet<String>,
) -> Vec<Candidate> {
    candidates
        .into_iter()
        .filter(|c| {
            let key = (
                c.origin.kind,
                c.origin.namespace.clone(),
                c.origin.name.clone(),
            );
            let synced = c.kind == "Backup" && syncing.contains(&c.name);
            !exists.contains(&key) && !synced
        })
        .collect()
}

fn tenant_resource(kind: OriginKind) -> ApiResource {
    match kind {
        OriginKind::NonAdminBackup => ApiResource::erase::<NonAdminBackup>(&()),
        OriginKind::NonAdminRestore => ApiResource::erase::<NonAdminRestore>(&()),
        OriginKind::NonAdminBackupStorageLocation => {
            ApiResource::erase::<NonAdminBackupStorageLocation>(&())
        }
        OriginKind::NonAdminDownloadRequest => ApiResource::erase::<NonAdminDownloadRequest>(&()),
        OriginKind::NonAdminSchedule => ApiResource::erase::<NonAdminSchedule>(&()),
    }
}

/// Names of the Velero Backups GC keeps whatever their origin: those the sync recreates a NAB
/// for or would with the admin's opt-in to cross-namespace recovery (a backup made by an
/// earlier namespace of the same name), those of a live schedule (whose controller makes their child NABs), and every backup
/// stored on a BSL of the shared backup pool (the pool controller's, see the module
/// documentation).
pub fn kept_backups<B: std::borrow::Borrow<Backup>>(
    backups: &[B],
    view: &super::sync::SyncView,
) -> HashSet<String> {
    backups
        .iter()
        .map(|b| b.borrow())
        .filter(|b| {
            super::sync::retained_origin(b, view).is_some()
                || super::sync::owned_by_live_schedule(b, view)
                || matches!(
                    super::sync::location_of(b, &view.locations),
                    super::sync::Location::Pool { .. } | super::sync::Location::UnclaimedPool
                )
        })
        .filter_map(|b| b.metadata.name.clone())
        .collect()
}

/// The resources GC looks at in the OADP namespace, by kind name.
fn admin_resources() -> Vec<(&'static str, ApiResource)> {
    vec![
        ("Backup", ApiResource::erase::<Backup>(&())),
        ("Restore", ApiResource::erase::<Restore>(&())),
        (
            "BackupStorageLocation",
            ApiResource::erase::<BackupStorageLocation>(&()),
        ),
        (
            "DeleteBackupRequest",
            ApiResource::erase::<DeleteBackupRequest>(&()),
        ),
        (
            "DownloadRequest",
            ApiResource::erase::<DownloadRequest>(&()),
        ),
        ("Schedule", ApiResource::erase::<Schedule>(&())),
        (
            "NonAdminBackupStorageLocationRequest",
            ApiResource::erase::<NonAdminBackupStorageLocationRequest>(&()),
        ),
        ("Secret", ApiResource::erase::<Secret>(&())),
    ]
}

/// One pass: deletes the orphans and returns them as (kind, name).
pub async fn collect_once(context: &Context) -> Result<Vec<(String, String)>, ControllerError> {
    let selector = ListParams::default().labels(&format!(
        "{}={},{}={}",
        labels::OADP,
        labels::OADP_VALUE,
        labels::MANAGED_BY,
        labels::MANAGED_BY_VALUE
    ));
    let mut candidates = Vec::new();
    let mut apis: HashMap<&'static str, Api<DynamicObject>> = HashMap::new();
    for (kind, resource) in admin_resources() {
        let api: Api<DynamicObject> =
            Api::namespaced_with(context.client.clone(), &context.oadp_namespace, &resource);
        for object in api.list_metadata(&selector).await?.items {
            if let Some(c) = candidate(kind, &object.metadata) {
                candidates.push(c);
            }
        }
        apis.insert(kind, api);
    }
    let mut exists = HashSet::new();
    let mut checked = HashSet::new();
    for c in &candidates {
        let key = (
            c.origin.kind,
            c.origin.namespace.clone(),
            c.origin.name.clone(),
        );
        if !checked.insert(key.clone()) {
            continue;
        }
        let api: Api<DynamicObject> = Api::namespaced_with(
            context.client.clone(),
            &c.origin.namespace,
            &tenant_resource(c.origin.kind),
        );
        if api.get_metadata_opt(&c.origin.name).await?.is_some() {
            exists.insert(key);
        }
    }
    // Backups the sync recreates a NonAdminBackup for, those of a live schedule and those on
    // the shared pool's locations are not orphans.
    let backups = super::sync::nac_backups(context).await?;
    let view = super::sync::observe(context, &backups).await?;
    let syncing = kept_backups(&backups, &view);
    let mut deleted = Vec::new();
    for orphan in orphans(candidates, &exists, &syncing) {
        let Some(api) = apis.get(orphan.kind) else {
            continue;
        };
        match api.delete(&orphan.name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
        tracing::info!(
            kind = orphan.kind,
            name = %orphan.name,
            origin_namespace = %orphan.origin.namespace,
            origin_name = %orphan.origin.name,
            "garbage-collected an object whose tenant object is gone"
        );
        deleted.push((orphan.kind.to_string(), orphan.name));
    }
    Ok(deleted)
}

/// Runs GC every period until the task is dropped; `fixed` overrides the policy's
/// `garbageCollectionPeriod` (0 disables).
pub async fn run(context: Arc<Context>, fixed: Option<Duration>) {
    loop {
        let every = fixed.unwrap_or_else(|| {
            context
                .policy
                .read()
                .map(|p| p.settings().garbage_collection_period)
                .unwrap_or(Duration::from_secs(24 * 3600))
        });
        if every.is_zero() {
            tokio::time::sleep(Duration::from_secs(60)).await;
            continue;
        }
        // The first pass waits a period: at start-up the tenant caches of other replicas may
        // still be filling, and a freshly restored cluster needs the sync first.
        tokio::time::sleep(every).await;
        // Stopping: no pass starts; a running one holds the shutdown until its writes are done.
        let Some(_writing) = context.shutdown.begin() else {
            return;
        };
        match collect_once(&context).await {
            Ok(_) => super::health::record("gc", None),
            Err(e) => {
                tracing::warn!(error = %e, "garbage collection failed");
                super::health::record("gc", Some(&e));
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::api::origin::{origin_annotations, origin_labels};

    fn meta(kind: OriginKind, ns: &str, name: &str, uuid: &str) -> kube::core::ObjectMeta {
        kube::core::ObjectMeta {
            name: Some(uuid.into()),
            labels: Some(origin_labels(kind, uuid)),
            annotations: Some(origin_annotations(kind, ns, name)),
            ..Default::default()
        }
    }

    #[test]
    fn orphans_are_objects_whose_origin_is_gone_and_not_synced() {
        let cs = vec![
            candidate(
                "Backup",
                &meta(OriginKind::NonAdminBackup, "a", "live", "u1"),
            )
            .unwrap(),
            candidate(
                "Backup",
                &meta(OriginKind::NonAdminBackup, "a", "gone", "u2"),
            )
            .unwrap(),
            candidate(
                "Backup",
                &meta(OriginKind::NonAdminBackup, "a", "sync", "u3"),
            )
            .unwrap(),
            candidate(
                "Restore",
                &meta(OriginKind::NonAdminRestore, "a", "r", "u4"),
            )
            .unwrap(),
            candidate(
                "Secret",
                &meta(OriginKind::NonAdminBackupStorageLocation, "a", "bsl", "u5"),
            )
            .unwrap(),
        ];
        let exists = [(
            OriginKind::NonAdminBackup,
            "a".to_string(),
            "live".to_string(),
        )]
        .into();
        let syncing = ["u3".to_string()].into();
        let names: Vec<_> = orphans(cs, &exists, &syncing)
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, ["u2", "u4", "u5"]);
    }

    /// The pool controller's BSL of team-a's entry, and the entry.
    fn pool_location() -> (crate::api::nonadmin::BackupEntry, BackupStorageLocation) {
        let entry: crate::api::nonadmin::BackupEntry = serde_json::from_value(serde_json::json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "BackupEntry",
            "metadata": {"name": "team-a--aaaaa"},
            "spec": {"namespace": "team-a", "namespaceUID": "aaaaaaaa-1111-2222-3333-444444444444",
                     "bucketName": "pool-1", "prefix": "team-a--aaaaa"}
        }))
        .unwrap();
        let bucket: crate::api::nonadmin::BackupBucket =
            serde_json::from_value(serde_json::json!({
                "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "BackupBucket",
                "metadata": {"name": "pool-1"},
                "spec": {"provider": "aws", "bucket": "shared-1"}
            }))
            .unwrap();
        let bsl = super::super::bucket_decision::location_for(
            "team-a--aaaaa",
            &entry.spec,
            &bucket,
            "openshift-adp",
        );
        (entry, bsl)
    }

    fn pool_backup(ns: &str, name: &str, uuid: &str, location: &str) -> Backup {
        let mut m = meta(OriginKind::NonAdminBackup, ns, name, uuid);
        m.namespace = Some("openshift-adp".into());
        Backup {
            metadata: m,
            spec: crate::api::velero::BackupSpec {
                storage_location: Some(location.into()),
                ..Default::default()
            },
            status: serde_json::from_value(serde_json::json!({"phase": "Completed"})).unwrap(),
        }
    }

    #[test]
    fn pool_locations_are_listed_by_gc_but_never_candidates() {
        let (_, bsl) = pool_location();
        let l = bsl.metadata.labels.clone().unwrap();
        // GC's list selector picks it up (NAC's labels)...
        assert_eq!(l[labels::OADP], labels::OADP_VALUE);
        assert_eq!(l[labels::MANAGED_BY], labels::MANAGED_BY_VALUE);
        // ...but it has no tenant origin, so it is never deleted, entry or not.
        assert_eq!(candidate("BackupStorageLocation", &bsl.metadata), None);
        let none_exists = HashSet::new();
        let candidates: Vec<Candidate> = candidate("BackupStorageLocation", &bsl.metadata)
            .into_iter()
            .collect();
        assert!(orphans(candidates, &none_exists, &HashSet::new()).is_empty());
    }

    #[test]
    fn backups_on_pool_locations_are_left_to_the_pool_controller() {
        let (entry, bsl) = pool_location();
        let on_pool = bsl.metadata.name.clone().unwrap();
        // team-a was deleted: its entry keeps the backups for the grace period.
        let mut view = crate::controllers::sync::SyncView::default();
        view.namespaces.insert(
            "team-b".into(),
            "bbbbbbbb-1111-2222-3333-444444444444".into(),
        );
        let backups = vec![
            pool_backup("team-a", "nightly", "u1", &on_pool),
            pool_backup("team-a", "old", "u2", "default"),
        ];
        for entries in [vec![entry], vec![]] {
            view.locations =
                crate::controllers::sync::classify_locations(std::slice::from_ref(&bsl), &entries);
            let kept = kept_backups(&backups, &view);
            assert_eq!(kept, HashSet::from(["u1".to_string()]));
            let candidates: Vec<Candidate> = backups
                .iter()
                .filter_map(|b| candidate("Backup", &b.metadata))
                .collect();
            let names: Vec<String> = orphans(candidates, &HashSet::new(), &kept)
                .into_iter()
                .map(|c| c.name)
                .collect();
            assert_eq!(names, ["u2"], "only the default location's orphan goes");
        }
    }

    #[test]
    fn objects_without_nac_labels_are_not_candidates() {
        let mut m = meta(OriginKind::NonAdminBackup, "a", "x", "u");
        m.labels.as_mut().unwrap().remove(labels::MANAGED_BY);
        assert!(candidate("Backup", &m).is_none());
    }
}
