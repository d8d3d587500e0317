//! The shared backup pool controller (seed 001): one pass observes the whole pool
//! (BackupBuckets, BackupEntries, namespaces, NonAdminBackups without a storage location, the
//! Velero BSLs of the OADP namespace, bucket listings now and then, and the backups of entries
//! being purged), asks [`bucket_decision::decide`] for the writes and applies them. A single
//! pass over everything (rather than one reconcile per object) keeps bucket quotas exact: two
//! entries can never both take a bucket's last place.
//!
//! Passes run on any change of the watched kinds, after the decision's `next_check` (a grace
//! period ending, a purge under way), and at least every [`PoolConfig::resync`]. Bucket
//! listings (for rebuilding entries lost from the API) run on the first pass, so no new entry
//! is made before the buckets were read, and then every [`PoolConfig::rescan`].
//!
//! Also here, for the other reconcilers: [`pool_route`] (where a NonAdminBackup without a
//! storage location goes) and [`pool_bucket_refs`] (the buckets tenants may not use).
//! NonAdminSchedules without a storage location make their namespace use the pool as such
//! NonAdminBackups do (their runs go there).
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::Store;
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;

use super::bucket_decision::{
    self, ListedPrefix, NamespaceInfo, PoolAction, PoolPlan, PoolRoute, PoolSettings, PoolView,
    PurgeObservation,
};
use super::bucket_store::{BucketAccess, BucketLister, ListError, ObjectStoreLister};
use super::clock::{Clock, SystemClock};
use super::{Context, ControllerError, writes};
use crate::api::nonadmin::{
    BACKUP_BUCKET_FINALIZER, BackupBucket, BackupEntry, ENTRY_NAMESPACE_UID_LABEL, NonAdminBackup,
    POOL_LOCATION_LABEL,
};
use crate::api::velero::{Backup, BackupStorageLocation, DeleteBackupRequest};
use crate::policy::bsl::PoolBucketRef;
use crate::policy::pool;

/// Name of this controller in the metrics.
const CONTROLLER_NAME: &str = "backuppool";
/// Pause after a pass that wrote something, before looking again.
const SOON: Duration = Duration::from_millis(50);

/// The pool controller's settings.
#[derive(Clone, Debug)]
pub struct PoolConfig {
    /// Grace period of entries whose namespace has no grace-period label.
    pub default_grace_period: Duration,
    /// Where "now" comes from (tests move it forward).
    pub clock: Arc<dyn Clock>,
    /// Longest time between two passes.
    pub resync: Duration,
    /// Time between two listings of the buckets.
    pub rescan: Duration,
    /// Reads the buckets.
    pub lister: Arc<dyn BucketLister>,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            default_grace_period: bucket_decision::DEFAULT_GRACE_PERIOD,
            clock: Arc::new(SystemClock),
            resync: Duration::from_secs(30),
            rescan: Duration::from_secs(600),
            lister: Arc::new(ObjectStoreLister::new()),
        }
    }
}

/// Where a NonAdminBackup in `namespace` without a storage location goes.
pub async fn pool_route(context: &Context, namespace: &str) -> Result<PoolRoute, ControllerError> {
    let configured = if context.cluster.buckets.is_installed() {
        !context.cluster.buckets.matching(|_| true).is_empty()
    } else {
        let buckets: Api<BackupBucket> = Api::all(context.client.clone());
        !buckets
            .list_metadata(&ListParams::default().limit(1))
            .await?
            .items
            .is_empty()
    };
    if !configured {
        return Ok(PoolRoute::NotConfigured);
    }
    let Some(uid) = Api::<Namespace>::all(context.client.clone())
        .get_opt(namespace)
        .await?
        .and_then(|n| n.metadata.uid)
    else {
        return Ok(pool::route(true, None));
    };
    let entries: Api<BackupEntry> = Api::all(context.client.clone());
    let selector = ListParams::default().labels(&pool::entry_selector(&uid));
    let found = entries.list(&selector).await?.items;
    Ok(pool::route(
        true,
        pool::namespace_entry(namespace, Some(&uid), &found),
    ))
}

/// The pool's buckets, as far as tenant locations are concerned.
pub async fn pool_bucket_refs(context: &Context) -> Result<Vec<PoolBucketRef>, ControllerError> {
    let buckets: Api<BackupBucket> = Api::all(context.client.clone());
    Ok(buckets
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(|b| PoolBucketRef {
            provider: b.spec.provider,
            bucket: b.spec.bucket,
        })
        .collect())
}

/// Runs the pool controller until the task is dropped; which namespaces use the pool comes
/// from the NABs of [`super::nab::watch_all`].
pub async fn run(
    context: Arc<Context>,
    nabs: Store<NonAdminBackup>,
    nab_changes: super::velero_cache::Changes<NonAdminBackup>,
) {
    let client = context.client.clone();
    let oadp = context.oadp_namespace.clone();
    let nab_feed = nab_changes.map(|_| ());
    fn changes<K>(api: Api<K>, config: watcher::Config) -> futures::stream::BoxStream<'static, ()>
    where
        K: super::velero_cache::Watched,
    {
        watcher(api, config)
            .default_backoff()
            .touched_objects()
            .map(|_| ())
            .boxed()
    }
    let pool_label = watcher::Config::default().labels(POOL_LOCATION_LABEL);
    let triggers = futures::stream::select_all(vec![
        nab_feed.boxed(),
        changes(
            Api::<BackupBucket>::all(client.clone()),
            watcher::Config::default(),
        ),
        changes(
            Api::<BackupEntry>::all(client.clone()),
            watcher::Config::default(),
        ),
        // A schedule without a storage location makes its namespace a pool user too.
        changes(
            Api::<crate::api::nonadmin::NonAdminSchedule>::all(client.clone()),
            watcher::Config::default(),
        ),
        changes(
            Api::<Namespace>::all(client.clone()),
            watcher::Config::default(),
        ),
        changes(
            Api::<BackupStorageLocation>::namespaced(client.clone(), &oadp),
            watcher::Config::default(),
        ),
        changes(
            Api::<DeleteBackupRequest>::namespaced(client.clone(), &oadp),
            pool_label,
        ),
        // A credential Secret appearing makes its bucket Available.
        changes(
            Api::<Secret>::namespaced(client.clone(), &oadp),
            watcher::Config::default(),
        ),
    ]);
    drive(context, nabs, triggers).await;
}

async fn drive(
    context: Arc<Context>,
    nabs: Store<NonAdminBackup>,
    mut triggers: futures::stream::SelectAll<futures::stream::BoxStream<'static, ()>>,
) {
    // Which namespaces use the pool comes from the NAB cache: wait until it is filled, or a
    // pass would see no users at all.
    let ready = nabs.wait_until_ready();
    tokio::pin!(ready);
    loop {
        tokio::select! {
            result = &mut ready => {
                if result.is_err() {
                    return;
                }
                break;
            }
            next = triggers.next() => {
                if next.is_none() {
                    return;
                }
            }
        }
    }
    let config = context.pool.clone();
    let mut last_scan: Option<Instant> = None;
    let mut wait = Duration::ZERO;
    loop {
        tokio::select! {
            next = triggers.next() => {
                if next.is_none() {
                    return;
                }
            }
            _ = tokio::time::sleep(wait) => {}
        }
        // Coalesce a burst of changes into one pass.
        while let Some(Some(())) = triggers.next().now_or_never() {}
        let scan = last_scan.is_none_or(|at| at.elapsed() >= config.rescan);
        // Stopping: no pass starts; a running one holds the shutdown until its writes are done.
        let Some(_writing) = context.shutdown.begin() else {
            return;
        };
        let result = pass(&context, &nabs, scan).await;
        super::health::record(CONTROLLER_NAME, result.as_ref().err());
        wait = match result {
            Ok((acted, next_check)) => {
                context.succeeded(CONTROLLER_NAME);
                if scan {
                    last_scan = Some(Instant::now());
                }
                if acted {
                    SOON
                } else {
                    next_check.map_or(config.resync, |d| d.min(config.resync))
                }
            }
            Err(error) => {
                let retry = context.backoff(CONTROLLER_NAME);
                tracing::warn!(error = %error, retry_in = ?retry, "backup pool pass failed");
                retry
            }
        }
    }
}

/// Everything one pass reads.
struct Observed {
    buckets: Vec<BackupBucket>,
    entries: Vec<BackupEntry>,
    namespaces: Vec<NamespaceInfo>,
    pool_users: BTreeSet<String>,
    secrets: BTreeMap<String, BTreeSet<String>>,
    locations: Vec<BackupStorageLocation>,
    listings: BTreeMap<String, Vec<ListedPrefix>>,
    purges: BTreeMap<String, PurgeObservation>,
}

/// One pass: observe, decide, apply. Returns whether anything was written and when to look
/// again.
pub async fn pass(
    context: &Context,
    nabs: &Store<NonAdminBackup>,
    scan: bool,
) -> Result<(bool, Option<Duration>), ControllerError> {
    let mut pool_users: BTreeSet<String> = nabs
        .state()
        .iter()
        .filter_map(|nab| bucket_decision::pool_user(nab).map(str::to_owned))
        .collect();
    // Schedules are few: read fresh each pass rather than cached.
    let schedules = Api::<crate::api::nonadmin::NonAdminSchedule>::all(context.client.clone())
        .list(&ListParams::default())
        .await?
        .items;
    pool_users.extend(
        schedules
            .iter()
            .filter_map(|nas| bucket_decision::schedule_pool_user(nas).map(str::to_owned)),
    );
    let observed = observe(context, pool_users, scan).await?;
    let settings = PoolSettings {
        oadp_namespace: context.oadp_namespace.clone(),
        default_grace_period: context.pool.default_grace_period,
    };
    let view = PoolView {
        now: context.pool.clock.now(),
        settings: &settings,
        buckets: &observed.buckets,
        entries: &observed.entries,
        namespaces: &observed.namespaces,
        pool_users: &observed.pool_users,
        secrets: &observed.secrets,
        locations: &observed.locations,
        listings: &observed.listings,
        purges: &observed.purges,
    };
    let plan = bucket_decision::decide(&view);
    let acted = !plan.actions.is_empty();
    let next = plan.next_check;
    apply(context, &observed, plan).await?;
    Ok((acted, next))
}

async fn observe(
    context: &Context,
    pool_users: BTreeSet<String>,
    scan: bool,
) -> Result<Observed, ControllerError> {
    let client = context.client.clone();
    let oadp = &context.oadp_namespace;
    let buckets = Api::<BackupBucket>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items;
    let entries = Api::<BackupEntry>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items;
    // Fresh from the API server, never from a cache: an entry whose namespace looks gone
    // starts towards its purge.
    let namespaces = Api::<Namespace>::all(client.clone())
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(|n| NamespaceInfo {
            grace_period_label: bucket_decision::grace_label(n.metadata.labels.as_ref()),
            name: n.metadata.name.unwrap_or_default(),
            uid: n.metadata.uid.unwrap_or_default(),
        })
        .collect();
    let locations = Api::<BackupStorageLocation>::namespaced(client.clone(), oadp)
        .list(&ListParams::default())
        .await?
        .items;
    let secrets_api = Api::<Secret>::namespaced(client.clone(), oadp);
    let mut secrets = BTreeMap::new();
    let mut credential_files: BTreeMap<String, Option<String>> = BTreeMap::new();
    for bucket in &buckets {
        let Some(credential) = &bucket.spec.credential else {
            continue;
        };
        if !secrets.contains_key(&credential.name)
            && let Some(secret) = secrets_api.get_opt(&credential.name).await?
        {
            let data = secret.data.unwrap_or_default();
            secrets.insert(
                credential.name.clone(),
                data.keys().cloned().collect::<BTreeSet<String>>(),
            );
            for (key, value) in data {
                credential_files.insert(
                    format!("{}/{key}", credential.name),
                    Some(String::from_utf8_lossy(&value.0).into_owned()),
                );
            }
        }
    }
    let access_of = |bucket: &BackupBucket| BucketAccess {
        provider: bucket.spec.provider.clone(),
        bucket: bucket.spec.bucket.clone(),
        region: bucket.spec.region.clone(),
        config: bucket.spec.config.clone().unwrap_or_default(),
        credentials: bucket.spec.credential.as_ref().and_then(|c| {
            credential_files
                .get(&format!("{}/{}", c.name, c.key))
                .cloned()
                .flatten()
        }),
    };
    let lister = &context.pool.lister;
    let mut listings = BTreeMap::new();
    if scan {
        for bucket in &buckets {
            let name = bucket.metadata.name.clone().unwrap_or_default();
            match lister.top_level(&access_of(bucket)).await {
                Ok(prefixes) => {
                    listings.insert(name, prefixes);
                }
                Err(ListError::Unsupported(_)) => {}
                Err(error) => {
                    tracing::warn!(bucket = %name, error = %error, "cannot list a pool bucket");
                }
            }
        }
    }
    let mut namespaces_view: Vec<NamespaceInfo> = namespaces;
    namespaces_view.sort_by(|a, b| a.name.cmp(&b.name));
    let now = context.pool.clock.now();
    let mut purges = BTreeMap::new();
    let backups_api = Api::<Backup>::namespaced(client.clone(), oadp);
    let requests_api = Api::<DeleteBackupRequest>::namespaced(client.clone(), oadp);
    for entry in &entries {
        let purging = entry.phase() == Some(crate::api::nonadmin::BackupEntryPhase::Purging)
            || bucket_decision::purge_due(
                entry,
                &namespaces_view,
                now,
                context.pool.default_grace_period,
            );
        if !purging {
            continue;
        }
        let entry_name = entry.metadata.name.clone().unwrap_or_default();
        let location = locations.iter().find(|l| {
            l.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(crate::api::nonadmin::ENTRY_ANNOTATION))
                == Some(&entry_name)
                && l.metadata
                    .labels
                    .as_ref()
                    .is_some_and(|m| m.contains_key(POOL_LOCATION_LABEL))
        });
        let Some(location) = location else { continue };
        let location_name = location.metadata.name.clone().unwrap_or_default();
        // Read the location before the backups: a sync it reports has already created the
        // Backups it found.
        let storage_location = crate::api::velero::labels::STORAGE_LOCATION;
        let backups = backups_api
            .list(&ListParams::default().labels(&format!(
                "{storage_location}={}",
                bucket_decision::label_value(&location_name)
            )))
            .await?
            .items
            .into_iter()
            .filter(|b| bucket_decision::stored_on(b, &location_name))
            .collect();
        let requests = requests_api
            .list(&ListParams::default().labels(&format!("{POOL_LOCATION_LABEL}={location_name}")))
            .await?
            .items;
        let bucket = entry.spec.bucket_name.as_deref().and_then(|b| {
            buckets
                .iter()
                .find(|x| x.metadata.name.as_deref() == Some(b))
        });
        let storage_empty = match bucket {
            Some(bucket) => lister
                .has_backups(&access_of(bucket), &entry.spec.prefix)
                .await
                .ok()
                .map(|any| !any),
            None => None,
        };
        purges.insert(
            entry_name,
            PurgeObservation {
                backups,
                requests,
                storage_empty,
            },
        );
    }
    Ok(Observed {
        buckets,
        entries,
        namespaces: namespaces_view,
        pool_users,
        secrets,
        locations,
        listings,
        purges,
    })
}

async fn apply(
    context: &Context,
    observed: &Observed,
    plan: PoolPlan,
) -> Result<(), ControllerError> {
    let client = context.client.clone();
    let oadp = &context.oadp_namespace;
    let entries: Api<BackupEntry> = Api::all(client.clone());
    let buckets: Api<BackupBucket> = Api::all(client.clone());
    let locations: Api<BackupStorageLocation> = Api::namespaced(client.clone(), oadp);
    let requests: Api<DeleteBackupRequest> = Api::namespaced(client.clone(), oadp);
    // Each write answers with the object's new resourceVersion; the next write to the same
    // object in this pass carries it (a stale one would fail with a conflict).
    let mut latest_entries: BTreeMap<String, BackupEntry> = observed
        .entries
        .iter()
        .map(|e| (e.metadata.name.clone().unwrap_or_default(), e.clone()))
        .collect();
    let mut latest_buckets: BTreeMap<String, BackupBucket> = observed
        .buckets
        .iter()
        .map(|b| (b.metadata.name.clone().unwrap_or_default(), b.clone()))
        .collect();
    for action in plan.actions {
        match action {
            PoolAction::CreateEntry(entry) => {
                tracing::info!(
                    entry = entry.metadata.name.as_deref().unwrap_or_default(),
                    namespace = %entry.spec.namespace,
                    bucket = entry.spec.bucket_name.as_deref().unwrap_or("-"),
                    "creating backup entry"
                );
                writes::create_if_absent(&entries, &entry).await?;
            }
            PoolAction::UpdateEntry { name, spec } => {
                let patch = json!({
                    "metadata": {"labels": {
                        ENTRY_NAMESPACE_UID_LABEL: pool::uid_label_value(&spec.namespace_uid)
                    }},
                    "spec": spec,
                });
                let updated = entries
                    .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                    .await?;
                latest_entries.insert(name, updated);
            }
            PoolAction::WriteEntryStatus { name, status } => {
                if let Some(current) = latest_entries.get(&name) {
                    let mut next = current.clone();
                    next.status = Some(*status);
                    let written = entries
                        .replace_status(&name, &PostParams::default(), &next)
                        .await?;
                    latest_entries.insert(name, written);
                }
            }
            PoolAction::DeleteEntry(name) => {
                tracing::info!(entry = %name, "deleting backup entry");
                writes::delete_if_present(&entries, &name).await?;
            }
            PoolAction::WriteBucketStatus { name, status } => {
                if let Some(current) = latest_buckets.get(&name) {
                    let mut next = current.clone();
                    next.status = Some(*status);
                    let written = buckets
                        .replace_status(&name, &PostParams::default(), &next)
                        .await?;
                    latest_buckets.insert(name, written);
                }
            }
            PoolAction::SetBucketFinalizer { name, present } => {
                if let Some(current) = latest_buckets.get(&name) {
                    writes::set_finalizer(&buckets, current, BACKUP_BUCKET_FINALIZER, present)
                        .await?;
                }
            }
            PoolAction::ApplyLocation(desired) => apply_location(&locations, *desired).await?,
            PoolAction::DeleteLocation(name) => {
                writes::delete_if_present(&locations, &name).await?;
            }
            PoolAction::CreateDeleteRequest(request) => {
                requests.create(&PostParams::default(), &request).await?;
            }
            PoolAction::DeleteDeleteRequest(name) => {
                writes::delete_if_present(&requests, &name).await?;
            }
        }
    }
    Ok(())
}

/// Creates the BSL, or brings NAC's fields of an existing one of NAC's to `desired` (the
/// status Velero wrote, and anything an admin added, stay). A BSL of that name that is not
/// NAC's entry BSL is never touched.
async fn apply_location(
    api: &Api<BackupStorageLocation>,
    desired: BackupStorageLocation,
) -> Result<(), ControllerError> {
    let name = desired.metadata.name.clone().unwrap_or_default();
    let Some(mut current) = api.get_opt(&name).await? else {
        writes::create_if_absent(api, &desired).await?;
        return Ok(());
    };
    let ours = current
        .metadata
        .labels
        .as_ref()
        .is_some_and(|l| l.contains_key(POOL_LOCATION_LABEL));
    if !ours {
        return Err(ControllerError::Invalid(format!(
            "BackupStorageLocation {name} exists and is not a backup entry's; rename it or delete it"
        )));
    }
    current.spec.provider = desired.spec.provider;
    current.spec.config = desired.spec.config;
    current.spec.credential = desired.spec.credential;
    current.spec.object_storage.bucket = desired.spec.object_storage.bucket;
    current.spec.object_storage.prefix = desired.spec.object_storage.prefix;
    current
        .metadata
        .labels
        .get_or_insert_with(Default::default)
        .extend(desired.metadata.labels.unwrap_or_default());
    current
        .metadata
        .annotations
        .get_or_insert_with(Default::default)
        .extend(desired.metadata.annotations.unwrap_or_default());
    api.replace(&name, &PostParams::default(), &current).await?;
    Ok(())
}
