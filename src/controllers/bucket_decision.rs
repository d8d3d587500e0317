//! The shared backup pool's decisions (seed 001), pure: from one observation of the pool
//! (BackupBuckets, BackupEntries, namespaces, which namespaces use the pool, NAC's Velero
//! BackupStorageLocations, bucket listings, the backups of entries being purged) to the writes
//! that bring the cluster to the desired state. The controller applies them and observes again.
//!
//! Rules:
//! - **Who uses the pool**: a namespace holding a NonAdminBackup without
//!   `spec.backupSpec.storageLocation` (the pool is the default location of such backups).
//!   Its entry then stays as long as the namespace exists, used or not.
//! - **Names**: an entry (and its prefix) is `<namespace>--<uid[:5]>`, the namespace UID's hex
//!   digits; when that name is taken by an entry of another namespace UID (an earlier
//!   namespace of the same name), more digits are used. Its Velero BSL has the same name
//!   when it fits in 63 characters, else a cut name with a hash.
//! - **Assignment**: the first bucket by name that is Available, not being deleted and below
//!   `maxEntries`; waiting entries are served oldest first, as soon as room appears.
//! - **Prefixes never nest**: an entry prefix is one path segment containing `--`, so two
//!   entries never nest; a bucket where another location's prefix would contain an entry's
//!   (an admin location at the bucket root, or whose first segment is an entry prefix), or
//!   where a tenant's own location lives, is not Available.
//! - **Deleted namespace**: the entry is kept until `namespaceDeletedAt + deletionGracePeriod`
//!   (or purged at once with the force-delete annotation); purging deletes every Velero
//!   Backup on the entry's BSL through a DeleteBackupRequest, waits until none is left and
//!   Velero has looked at the bucket again (or a listing shows no backup under the prefix),
//!   then deletes the BSL and the entry.
//! - **Rebuild**: an entry missing from the API is rebuilt from NAC's labelled BSL of it, or
//!   from a prefix holding backups in a bucket listing, keeping its bucket and prefix; an
//!   entry whose namespace is gone starts its grace period when rebuilt.
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::core::ObjectMeta;
use sha2::{Digest, Sha256};

use super::status::{differs_ignoring_transition_times, has_finalizer, set_condition};
use crate::api::common::GoDuration;
use crate::api::names::{is_dns1123_label, is_dns1123_subdomain};
use crate::api::nonadmin::{
    BACKUP_BUCKET_FINALIZER, BackupBucket, BackupBucketStatus, BackupEntry, BackupEntryPhase,
    BackupEntrySpec, BackupEntryStatus, ENTRY_ANNOTATION, ENTRY_BUCKET_ANNOTATION,
    ENTRY_GRACE_PERIOD_ANNOTATION, ENTRY_NAMESPACE_ANNOTATION, ENTRY_NAMESPACE_UID_LABEL,
    FORCE_DELETE_ANNOTATION, GRACE_PERIOD_LABEL, POOL_LOCATION_LABEL,
    RelatedVeleroBackupStorageLocation, bucket_conditions as bc, entry_conditions as ec,
};
use crate::api::origin::{OriginKind, nac_labels, origin_of_kind};
use crate::api::velero::{
    Backup, BackupPhase, BackupStorageLocation, BackupStorageLocationSpec,
    BackupStorageLocationStatus, DeleteBackupRequest, DeleteBackupRequestPhase,
    DeleteBackupRequestSpec, ObjectStorageLocation,
};
use crate::policy::bsl::{prefixes_nest, same_bucket};
pub use crate::policy::pool::{PoolRoute, UID_DIGITS, route, uid_matches};
use crate::policy::pool::{uid_hex, uid_label_value};

/// Default time an entry outlives its namespace: Velero's default backup TTL, so a deleted
/// namespace's backups live as long as they would have anyway.
pub const DEFAULT_GRACE_PERIOD: Duration = Duration::from_secs(30 * 24 * 3600);
/// How often to look again while a purge is under way.
pub const PURGE_POLL: Duration = Duration::from_secs(2);
/// How long a DeleteBackupRequest that left its backup behind stays before another is made.
pub const PURGE_RETRY: Duration = Duration::from_secs(60);
/// Longest Velero object name (also a label value).
const MAX_LOCATION_NAME: usize = crate::api::nonadmin::MAX_VELERO_OBJECT_NAME_LENGTH;

/// The pool's settings.
#[derive(Clone, Debug)]
pub struct PoolSettings {
    /// Where Velero lives (the entries' BSLs go there).
    pub oadp_namespace: String,
    /// Grace period of entries whose namespace has no grace-period label.
    pub default_grace_period: Duration,
}

/// A namespace as the pool sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NamespaceInfo {
    /// Its name.
    pub name: String,
    /// Its UID.
    pub uid: String,
    /// Its `oadp.openshift.io/backup-deletion-grace-period` label, if any.
    pub grace_period_label: Option<String>,
}

/// A top-level prefix found in a bucket listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedPrefix {
    /// The prefix (one path segment).
    pub prefix: String,
    /// Whether Velero backups are stored under it (`<prefix>/backups/` is not empty).
    pub has_backups: bool,
}

/// What a purge needs to see, read only for entries being purged.
#[derive(Clone, Debug, Default)]
pub struct PurgeObservation {
    /// Velero Backups stored on the entry's BSL.
    pub backups: Vec<Backup>,
    /// NAC's DeleteBackupRequests for the entry's BSL.
    pub requests: Vec<DeleteBackupRequest>,
    /// Whether a listing found no backup under the entry's prefix (None: not listable).
    pub storage_empty: Option<bool>,
}

/// One observation of the pool.
#[derive(Clone, Copy, Debug)]
pub struct PoolView<'a> {
    /// Now (the controller's clock).
    pub now: Timestamp,
    /// The settings.
    pub settings: &'a PoolSettings,
    /// Every BackupBucket.
    pub buckets: &'a [BackupBucket],
    /// Every BackupEntry.
    pub entries: &'a [BackupEntry],
    /// Every namespace.
    pub namespaces: &'a [NamespaceInfo],
    /// Names of the namespaces that use the pool (see the module documentation).
    pub pool_users: &'a BTreeSet<String>,
    /// Secrets of the OADP namespace: name → keys.
    pub secrets: &'a BTreeMap<String, BTreeSet<String>>,
    /// Every Velero BSL of the OADP namespace (NAC's entry BSLs and everybody else's).
    pub locations: &'a [BackupStorageLocation],
    /// Listings of buckets (by BackupBucket name) made for this pass; absent when not listed.
    pub listings: &'a BTreeMap<String, Vec<ListedPrefix>>,
    /// Purge observations by entry name.
    pub purges: &'a BTreeMap<String, PurgeObservation>,
}

/// One write.
#[derive(Clone, Debug, PartialEq)]
pub enum PoolAction {
    /// Create this entry (rebuilt or new).
    CreateEntry(Box<BackupEntry>),
    /// Replace the spec and the namespace-UID label of an entry.
    UpdateEntry {
        /// Entry name.
        name: String,
        /// The new spec.
        spec: Box<BackupEntrySpec>,
    },
    /// Write an entry's status.
    WriteEntryStatus {
        /// Entry name.
        name: String,
        /// The new status.
        status: Box<BackupEntryStatus>,
    },
    /// Delete an entry (its backups are gone, or it never held any).
    DeleteEntry(String),
    /// Write a bucket's status.
    WriteBucketStatus {
        /// Bucket name.
        name: String,
        /// The new status.
        status: Box<BackupBucketStatus>,
    },
    /// Add (or remove) the bucket finalizer.
    SetBucketFinalizer {
        /// Bucket name.
        name: String,
        /// Whether it should be present.
        present: bool,
    },
    /// Create this BSL, or bring an existing one's spec, labels and annotations to it.
    ApplyLocation(Box<BackupStorageLocation>),
    /// Delete the BSL of that name.
    DeleteLocation(String),
    /// Create this DeleteBackupRequest.
    CreateDeleteRequest(Box<DeleteBackupRequest>),
    /// Delete the DeleteBackupRequest of that name.
    DeleteDeleteRequest(String),
}

/// The writes of one pass and when to look again at the latest.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PoolPlan {
    /// The writes, in order.
    pub actions: Vec<PoolAction>,
    /// Look again after this long (a grace period ending, a purge under way).
    pub next_check: Option<Duration>,
}

impl PoolPlan {
    fn check_within(&mut self, after: Duration) {
        self.next_check = Some(self.next_check.map_or(after, |d| d.min(after)));
    }
}

/// The name (and prefix) of a new entry for namespace `namespace` with UID `uid`:
/// `<namespace>--<first hex digits of uid>`, with more digits while `taken` says the name
/// belongs to an entry of another namespace UID. None when no name is free.
pub fn entry_name(namespace: &str, uid: &str, taken: impl Fn(&str) -> bool) -> Option<String> {
    let hex = uid_hex(uid);
    (UID_DIGITS..=hex.len())
        .map(|digits| format!("{namespace}--{}", &hex[..digits]))
        .find(|name| !taken(name))
}

/// Splits an entry prefix `<namespace>--<hex digits>` into its namespace and digits.
pub fn parse_entry_prefix(prefix: &str) -> Option<(&str, &str)> {
    let (namespace, digits) = prefix.rsplit_once("--")?;
    let valid = is_dns1123_label(namespace)
        && digits.len() >= UID_DIGITS
        && digits
            .chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c));
    valid.then_some((namespace, digits))
}

fn short_hash(text: &str, digits: usize) -> String {
    let digest = hex::encode(Sha256::digest(text.as_bytes()));
    digest[..digits.min(digest.len())].to_owned()
}

/// The Velero BSL name of entry `entry`: the entry name when it fits in 63 characters, else
/// its first characters and a hash of the whole (still unique, still a DNS label).
pub fn location_name(entry: &str) -> String {
    if entry.len() <= MAX_LOCATION_NAME {
        return entry.to_owned();
    }
    let hash = short_hash(entry, 10);
    let keep = entry[..MAX_LOCATION_NAME - hash.len() - 1].trim_end_matches('-');
    format!("{keep}-{hash}")
}

/// A label value for `value` as Velero's `label.GetValidName` makes it: values over 63
/// characters are cut to 57 and completed with 6 digits of their hash.
pub fn label_value(value: &str) -> String {
    crate::api::velero::labels::valid_label_value(value)
}

/// The grace period a namespace asks for: its label when it parses as a duration, else the
/// default.
pub fn grace_period_for(namespace: &NamespaceInfo, default: Duration) -> Duration {
    namespace
        .grace_period_label
        .as_deref()
        .and_then(|v| GoDuration::new(v).parse().ok())
        .unwrap_or(default)
}

/// An entry's grace period: its spec, else the default.
pub fn entry_grace_period(entry: &BackupEntry, default: Duration) -> Duration {
    entry
        .spec
        .deletion_grace_period
        .as_ref()
        .and_then(|d| d.parse().ok())
        .unwrap_or(default)
}

/// `at + after`, saturating.
pub fn add(at: Timestamp, after: Duration) -> Timestamp {
    SignedDuration::try_from(after)
        .ok()
        .and_then(|d| at.checked_add(d).ok())
        .unwrap_or(Timestamp::MAX)
}

/// How long from `now` until `at` (zero when past).
pub fn until(now: Timestamp, at: Timestamp) -> Duration {
    Duration::try_from(at.duration_since(now)).unwrap_or(Duration::ZERO)
}

/// When an entry whose namespace was deleted at `deleted_at` is purged.
pub fn purge_after(deleted_at: Timestamp, grace: Duration) -> Timestamp {
    add(deleted_at, grace)
}

/// Whether the force-delete annotation asks to purge now.
pub fn force_deleted(entry: &BackupEntry) -> bool {
    entry
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(FORCE_DELETE_ANNOTATION))
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// The live namespace an entry belongs to, if it still exists.
pub fn live_namespace<'a>(
    entry: &BackupEntry,
    namespaces: &'a [NamespaceInfo],
) -> Option<&'a NamespaceInfo> {
    namespaces
        .iter()
        .find(|n| n.name == entry.spec.namespace && uid_matches(&entry.spec.namespace_uid, &n.uid))
}

/// Whether the entry is to be purged now (its namespace is gone and the grace period is over
/// or force-delete is set): the controller then reads the purge observation.
pub fn purge_due(
    entry: &BackupEntry,
    namespaces: &[NamespaceInfo],
    now: Timestamp,
    default_grace: Duration,
) -> bool {
    if live_namespace(entry, namespaces).is_some() {
        return false;
    }
    if force_deleted(entry) {
        return true;
    }
    let deleted_at = entry
        .status
        .as_ref()
        .and_then(|s| s.namespace_deleted_at.as_ref())
        .map(|t| t.0);
    deleted_at.is_some_and(|at| now >= purge_after(at, entry_grace_period(entry, default_grace)))
}

fn name_of(meta: &ObjectMeta) -> &str {
    meta.name.as_deref().unwrap_or_default()
}

/// NAC's entry BSLs by entry name.
fn entry_locations(
    locations: &[BackupStorageLocation],
) -> BTreeMap<String, &BackupStorageLocation> {
    locations
        .iter()
        .filter(|l| {
            l.metadata
                .labels
                .as_ref()
                .is_some_and(|m| m.contains_key(POOL_LOCATION_LABEL))
        })
        .filter_map(|l| {
            let entry = l.metadata.annotations.as_ref()?.get(ENTRY_ANNOTATION)?;
            Some((entry.clone(), l))
        })
        .collect()
}

fn is_entry_location(location: &BackupStorageLocation) -> bool {
    location
        .metadata
        .labels
        .as_ref()
        .is_some_and(|m| m.contains_key(POOL_LOCATION_LABEL))
}

/// Whether a bucket can take entries, or why not (reason, message).
pub fn bucket_availability(
    bucket: &BackupBucket,
    secrets: &BTreeMap<String, BTreeSet<String>>,
    locations: &[BackupStorageLocation],
    entry_prefixes: &BTreeSet<String>,
) -> Result<(), (&'static str, String)> {
    let spec = &bucket.spec;
    if spec.provider.trim().is_empty() || spec.bucket.trim_matches('/').is_empty() {
        return Err((
            bc::REASON_INVALID_SPEC,
            "spec.provider and spec.bucket must be set".to_owned(),
        ));
    }
    if spec.bucket.trim_matches('/').contains('/') {
        return Err((
            bc::REASON_INVALID_SPEC,
            format!("spec.bucket {:?} must not contain '/'", spec.bucket),
        ));
    }
    if let Some(credential) = &spec.credential {
        match secrets.get(&credential.name) {
            None => {
                return Err((
                    bc::REASON_CREDENTIAL_MISSING,
                    format!(
                        "credential Secret {:?} not found in the OADP namespace",
                        credential.name
                    ),
                ));
            }
            Some(keys) if !keys.contains(&credential.key) => {
                return Err((
                    bc::REASON_CREDENTIAL_MISSING,
                    format!(
                        "credential Secret {:?} has no key {:?}",
                        credential.name, credential.key
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    for location in locations.iter().filter(|l| !is_entry_location(l)) {
        let on_bucket = same_bucket(
            &location.spec.provider,
            &location.spec.object_storage.bucket,
            &spec.provider,
            &spec.bucket,
        );
        if !on_bucket {
            continue;
        }
        let name = name_of(&location.metadata);
        let labels = location.metadata.labels.clone().unwrap_or_default();
        let annotations = location.metadata.annotations.clone().unwrap_or_default();
        if origin_of_kind(
            OriginKind::NonAdminBackupStorageLocation,
            &labels,
            &annotations,
        )
        .is_some()
        {
            return Err((
                bc::REASON_SHARED_WITH_TENANT,
                format!(
                    "BackupStorageLocation {name} of a NonAdminBackupStorageLocation uses this bucket: a tenant holding credentials for it could read every entry"
                ),
            ));
        }
        let prefix = location.spec.object_storage.prefix.as_deref().unwrap_or("");
        let nested = prefix.trim_matches('/').is_empty()
            || entry_prefixes.iter().any(|p| prefixes_nest(prefix, p));
        if nested {
            return Err((
                bc::REASON_PREFIX_CONFLICT,
                format!(
                    "BackupStorageLocation {name} stores at prefix {prefix:?} of this bucket, which would contain or be contained in the entries' prefixes"
                ),
            ));
        }
    }
    Ok(())
}

/// The BSL an entry needs on `bucket`.
pub fn location_for(
    entry_name: &str,
    spec: &BackupEntrySpec,
    bucket: &BackupBucket,
    oadp_namespace: &str,
) -> BackupStorageLocation {
    let name = location_name(entry_name);
    let mut config = bucket.spec.config.clone().unwrap_or_default();
    if let Some(region) = bucket.spec.region.as_ref().filter(|r| !r.is_empty()) {
        config
            .entry("region".to_owned())
            .or_insert_with(|| region.clone());
    }
    let mut labels = nac_labels();
    labels.insert(POOL_LOCATION_LABEL.to_owned(), name.clone());
    labels.insert(
        ENTRY_NAMESPACE_UID_LABEL.to_owned(),
        uid_label_value(&spec.namespace_uid),
    );
    let mut annotations = BTreeMap::from([
        (ENTRY_ANNOTATION.to_owned(), entry_name.to_owned()),
        (
            ENTRY_NAMESPACE_ANNOTATION.to_owned(),
            spec.namespace.clone(),
        ),
        (
            ENTRY_BUCKET_ANNOTATION.to_owned(),
            name_of(&bucket.metadata).to_owned(),
        ),
    ]);
    if let Some(grace) = &spec.deletion_grace_period {
        annotations.insert(ENTRY_GRACE_PERIOD_ANNOTATION.to_owned(), grace.0.clone());
    }
    let mut location = BackupStorageLocation::new(
        &name,
        BackupStorageLocationSpec {
            provider: bucket.spec.provider.clone(),
            config: (!config.is_empty()).then_some(config),
            credential: bucket.spec.credential.clone(),
            object_storage: ObjectStorageLocation {
                bucket: bucket.spec.bucket.trim_matches('/').to_owned(),
                prefix: Some(spec.prefix.clone()),
                ..Default::default()
            },
            ..Default::default()
        },
    );
    location.metadata.namespace = Some(oadp_namespace.to_owned());
    location.metadata.labels = Some(labels);
    location.metadata.annotations = Some(annotations);
    location
}

/// Whether `existing` already has what `desired` sets (NAC's spec fields, labels and
/// annotations; anything else an admin added is left alone).
pub fn location_up_to_date(
    existing: &BackupStorageLocation,
    desired: &BackupStorageLocation,
) -> bool {
    let (e, d) = (&existing.spec, &desired.spec);
    let subset = |have: &Option<BTreeMap<String, String>>,
                  want: &Option<BTreeMap<String, String>>| {
        let have = have.clone().unwrap_or_default();
        want.iter().flatten().all(|(k, v)| have.get(k) == Some(v))
    };
    e.provider == d.provider
        && e.config == d.config
        && e.credential == d.credential
        && e.object_storage.bucket == d.object_storage.bucket
        && e.object_storage.prefix == d.object_storage.prefix
        && subset(&existing.metadata.labels, &desired.metadata.labels)
        && subset(
            &existing.metadata.annotations,
            &desired.metadata.annotations,
        )
}

/// An entry rebuilt from NAC's BSL of it (the annotations and labels the BSL carries).
pub fn entry_from_location(location: &BackupStorageLocation) -> Option<BackupEntry> {
    let annotations = location.metadata.annotations.as_ref()?;
    let labels = location.metadata.labels.as_ref()?;
    let name = annotations.get(ENTRY_ANNOTATION)?;
    let namespace = annotations.get(ENTRY_NAMESPACE_ANNOTATION)?;
    let prefix = location.spec.object_storage.prefix.clone()?;
    if !is_dns1123_subdomain(name) || !is_dns1123_label(namespace) || prefix.is_empty() {
        return None;
    }
    let spec = BackupEntrySpec {
        namespace: namespace.clone(),
        namespace_uid: labels
            .get(ENTRY_NAMESPACE_UID_LABEL)
            .cloned()
            .unwrap_or_default(),
        bucket_name: annotations.get(ENTRY_BUCKET_ANNOTATION).cloned(),
        prefix: prefix.trim_matches('/').to_owned(),
        deletion_grace_period: annotations
            .get(ENTRY_GRACE_PERIOD_ANNOTATION)
            .map(|g| GoDuration::new(g.clone())),
    };
    Some(new_entry(name, spec))
}

/// An entry rebuilt from a prefix holding backups in bucket `bucket`; the UID is the live
/// namespace's when its UID starts with the prefix's digits, else just those digits.
pub fn entry_from_listing(
    bucket: &str,
    prefix: &str,
    namespaces: &[NamespaceInfo],
    default_grace: Duration,
) -> Option<BackupEntry> {
    let (namespace, digits) = parse_entry_prefix(prefix)?;
    let live = namespaces
        .iter()
        .find(|n| n.name == namespace && uid_matches(digits, &n.uid));
    let spec = BackupEntrySpec {
        namespace: namespace.to_owned(),
        namespace_uid: live.map_or_else(|| digits.to_owned(), |n| n.uid.clone()),
        bucket_name: Some(bucket.to_owned()),
        prefix: prefix.to_owned(),
        deletion_grace_period: Some(GoDuration::from_std(
            live.map_or(default_grace, |n| grace_period_for(n, default_grace)),
        )),
    };
    Some(new_entry(prefix, spec))
}

fn new_entry(name: &str, spec: BackupEntrySpec) -> BackupEntry {
    let mut entry = BackupEntry::new(name, spec);
    entry.metadata.labels = Some(BTreeMap::from([(
        ENTRY_NAMESPACE_UID_LABEL.to_owned(),
        uid_label_value(&entry.spec.namespace_uid),
    )]));
    entry
}

/// Buckets in assignment order with their room.
struct Capacity<'a> {
    /// (bucket name, bucket, assignable) in name order.
    buckets: Vec<(&'a str, &'a BackupBucket, bool)>,
    /// Entries per bucket name.
    counts: BTreeMap<String, usize>,
}

impl Capacity<'_> {
    fn has_room(&self, bucket: &BackupBucket, name: &str) -> bool {
        let count = self.counts.get(name).copied().unwrap_or(0);
        bucket
            .spec
            .max_entries
            .is_none_or(|max| count < max as usize)
    }

    /// The first bucket with room, counted as taken.
    fn assign(&mut self) -> Option<String> {
        let name = self
            .buckets
            .iter()
            .find(|(name, bucket, assignable)| *assignable && self.has_room(bucket, name))
            .map(|(name, _, _)| (*name).to_owned())?;
        *self.counts.entry(name.clone()).or_insert(0) += 1;
        Some(name)
    }

    /// Why no bucket can take an entry, for the admin.
    fn why_full(
        &self,
        availability: &BTreeMap<String, Result<(), (&'static str, String)>>,
    ) -> String {
        if self.buckets.is_empty() {
            return "no BackupBucket exists".to_owned();
        }
        let states: Vec<String> = self
            .buckets
            .iter()
            .map(|(name, bucket, _)| {
                let count = self.counts.get(*name).copied().unwrap_or(0);
                if bucket.metadata.deletion_timestamp.is_some() {
                    format!("{name} (being deleted)")
                } else if let Some(Err((reason, _))) = availability.get(*name) {
                    format!("{name} (not available: {reason})")
                } else {
                    let max = bucket
                        .spec
                        .max_entries
                        .map_or_else(|| "unlimited".to_owned(), |m| m.to_string());
                    format!("{name} ({count}/{max} entries)")
                }
            })
            .collect();
        format!(
            "every BackupBucket is full or unavailable: {}; add a BackupBucket or raise a maxEntries",
            states.join(", ")
        )
    }
}

/// Decides the writes of one pass over the pool.
pub fn decide(view: &PoolView<'_>) -> PoolPlan {
    let mut plan = PoolPlan::default();
    let now = view.now;
    let default_grace = view.settings.default_grace_period;
    let our_locations = entry_locations(view.locations);

    // 1. Every entry the pool knows of: existing, then rebuilt from NAC's BSLs, then rebuilt
    //    from bucket listings (a prefix holding backups that no entry accounts for).
    let mut known: Vec<BackupEntry> = view.entries.to_vec();
    let mut rebuilt: Vec<BackupEntry> = Vec::new();
    for (entry, location) in &our_locations {
        let exists = known.iter().any(|e| name_of(&e.metadata) == entry.as_str());
        if exists || location.metadata.deletion_timestamp.is_some() {
            continue;
        }
        if let Some(entry) = entry_from_location(location) {
            known.push(entry.clone());
            rebuilt.push(entry);
        }
    }
    for (bucket, prefixes) in view.listings {
        for listed in prefixes.iter().filter(|p| p.has_backups) {
            let accounted = known.iter().any(|e| {
                e.spec.prefix == listed.prefix
                    && e.spec.bucket_name.as_deref() == Some(bucket.as_str())
            });
            let name_taken = known
                .iter()
                .any(|e| name_of(&e.metadata) == listed.prefix.as_str());
            if accounted || name_taken {
                continue;
            }
            if let Some(entry) =
                entry_from_listing(bucket, &listed.prefix, view.namespaces, default_grace)
            {
                known.push(entry.clone());
                rebuilt.push(entry);
            }
        }
    }

    // 2. Bucket availability (entry prefixes per bucket for the nesting check).
    let mut prefixes_by_bucket: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for e in &known {
        if let Some(b) = &e.spec.bucket_name {
            prefixes_by_bucket
                .entry(b.clone())
                .or_default()
                .insert(e.spec.prefix.clone());
        }
    }
    let empty = BTreeSet::new();
    let availability: BTreeMap<String, Result<(), (&'static str, String)>> = view
        .buckets
        .iter()
        .map(|b| {
            let name = name_of(&b.metadata).to_owned();
            let prefixes = prefixes_by_bucket.get(&name).unwrap_or(&empty);
            let verdict = bucket_availability(b, view.secrets, view.locations, prefixes);
            (name, verdict)
        })
        .collect();
    let mut sorted_buckets: Vec<&BackupBucket> = view.buckets.iter().collect();
    sorted_buckets.sort_by(|a, b| name_of(&a.metadata).cmp(name_of(&b.metadata)));
    let mut capacity = Capacity {
        buckets: sorted_buckets
            .iter()
            .map(|b| {
                let name = name_of(&b.metadata);
                let assignable = b.metadata.deletion_timestamp.is_none()
                    && matches!(availability.get(name), Some(Ok(())));
                (name, *b, assignable)
            })
            .collect(),
        counts: BTreeMap::new(),
    };
    for e in &known {
        if let Some(b) = &e.spec.bucket_name {
            *capacity.counts.entry(b.clone()).or_insert(0) += 1;
        }
    }

    // 3. Assignments: waiting entries of live namespaces oldest first, then new entries.
    let mut assigned: BTreeMap<String, String> = BTreeMap::new();
    let mut waiting: Vec<&BackupEntry> = known
        .iter()
        .filter(|e| e.spec.bucket_name.is_none() && live_namespace(e, view.namespaces).is_some())
        .collect();
    waiting.sort_by(|a, b| {
        let created = |e: &BackupEntry| e.metadata.creation_timestamp.as_ref().map(|t| t.0);
        created(a)
            .cmp(&created(b))
            .then_with(|| name_of(&a.metadata).cmp(name_of(&b.metadata)))
    });
    for e in waiting {
        match capacity.assign() {
            Some(bucket) => {
                assigned.insert(name_of(&e.metadata).to_owned(), bucket);
            }
            None => break,
        }
    }
    for mut entry in rebuilt {
        if let Some(bucket) = assigned.remove(name_of(&entry.metadata)) {
            entry.spec.bucket_name = Some(bucket);
        }
        plan.actions.push(PoolAction::CreateEntry(Box::new(entry)));
    }
    let mut new_entries = Vec::new();
    for namespace in view.namespaces {
        if !view.pool_users.contains(&namespace.name)
            || namespace.name == view.settings.oadp_namespace
            || sorted_buckets.is_empty()
        {
            continue;
        }
        let has_entry = known.iter().chain(new_entries.iter()).any(|e| {
            e.spec.namespace == namespace.name && uid_matches(&e.spec.namespace_uid, &namespace.uid)
        });
        if has_entry {
            continue;
        }
        let taken = |name: &str| {
            known
                .iter()
                .chain(new_entries.iter())
                .any(|e| name_of(&e.metadata) == name || e.spec.prefix == name)
        };
        let Some(name) = entry_name(&namespace.name, &namespace.uid, taken) else {
            continue;
        };
        let spec = BackupEntrySpec {
            namespace: namespace.name.clone(),
            namespace_uid: namespace.uid.clone(),
            bucket_name: capacity.assign(),
            prefix: name.clone(),
            deletion_grace_period: Some(GoDuration::from_std(grace_period_for(
                namespace,
                default_grace,
            ))),
        };
        new_entries.push(new_entry(&name, spec));
    }
    for entry in new_entries {
        plan.actions.push(PoolAction::CreateEntry(Box::new(entry)));
    }

    // 4. Existing entries.
    let waiting_message = capacity.why_full(&availability);
    let buckets_by_name: BTreeMap<&str, &BackupBucket> = view
        .buckets
        .iter()
        .map(|b| (name_of(&b.metadata), b))
        .collect();
    for entry in view.entries {
        let name = name_of(&entry.metadata);
        let bucket_name = assigned
            .get(name)
            .cloned()
            .or_else(|| entry.spec.bucket_name.clone());
        let bucket = bucket_name
            .as_deref()
            .and_then(|b| buckets_by_name.get(b).copied());
        let location = our_locations.get(name).copied();
        let ctx = EntryContext {
            view,
            entry,
            bucket_name: bucket_name.as_deref(),
            bucket,
            location,
            waiting_message: &waiting_message,
        };
        decide_entry(&ctx, &mut plan);
    }

    // 5. Buckets: status, finalizer, deletion.
    let mut on_buckets: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for e in &known {
        let name = name_of(&e.metadata);
        let bucket = assigned
            .get(name)
            .map(String::as_str)
            .or(e.spec.bucket_name.as_deref());
        if let Some(bucket) = bucket {
            on_buckets.entry(bucket).or_default().insert(name);
        }
    }
    // Entries deleted by this pass no longer hold their bucket.
    for action in &plan.actions {
        if let PoolAction::DeleteEntry(gone) = action {
            for names in on_buckets.values_mut() {
                names.remove(gone.as_str());
            }
        }
    }
    for action in &plan.actions {
        if let PoolAction::CreateEntry(e) = action
            && let Some(bucket) = e.spec.bucket_name.as_deref()
        {
            on_buckets
                .entry(bucket)
                .or_default()
                .insert(name_of(&e.metadata));
        }
    }
    let mut bucket_actions = Vec::new();
    for bucket in view.buckets {
        let name = name_of(&bucket.metadata);
        let entries: Vec<&str> = on_buckets
            .get(name)
            .map(|set| set.iter().copied().collect())
            .unwrap_or_default();
        decide_bucket(
            bucket,
            availability.get(name),
            &entries,
            now,
            &mut bucket_actions,
        );
    }
    plan.actions.extend(bucket_actions);
    plan
}

fn time(at: Timestamp) -> Time {
    Time(at)
}

fn decide_bucket(
    bucket: &BackupBucket,
    availability: Option<&Result<(), (&'static str, String)>>,
    entries: &[&str],
    now: Timestamp,
    actions: &mut Vec<PoolAction>,
) {
    let name = name_of(&bucket.metadata).to_owned();
    let current = bucket.status.clone();
    let mut status = current.clone().unwrap_or_default();
    let now = time(now);
    let deleting = bucket.metadata.deletion_timestamp.is_some();
    status.observed_generation = bucket.metadata.generation;
    status.entry_count = entries.len() as i64;
    match (deleting, availability) {
        (true, _) => {
            status.last_error = None;
            set_condition(
                &mut status.conditions,
                bc::AVAILABLE,
                false,
                bc::REASON_DELETING,
                "the bucket is being deleted and takes no new entries",
                &now,
            );
        }
        (false, Some(Err((reason, message)))) => {
            status.last_error = Some(message.clone());
            set_condition(
                &mut status.conditions,
                bc::AVAILABLE,
                false,
                reason,
                message,
                &now,
            );
        }
        (false, _) => {
            status.last_error = None;
            set_condition(
                &mut status.conditions,
                bc::AVAILABLE,
                true,
                bc::REASON_AVAILABLE,
                "the bucket takes entries",
                &now,
            );
        }
    }
    if deleting && !entries.is_empty() {
        let shown: Vec<&str> = entries.iter().take(5).copied().collect();
        let more = entries.len().saturating_sub(shown.len());
        let list = if more > 0 {
            format!("{} and {more} more", shown.join(", "))
        } else {
            shown.join(", ")
        };
        set_condition(
            &mut status.conditions,
            bc::DELETING,
            true,
            bc::REASON_ENTRIES_REMAIN,
            &format!(
                "{} backup entries are stored in this bucket ({list}); it is deleted once they are purged",
                entries.len()
            ),
            &now,
        );
    } else {
        status.conditions.retain(|c| c.type_ != bc::DELETING);
    }
    if differs_ignoring_transition_times(current.as_ref(), &status, |s| &mut s.conditions) {
        actions.push(PoolAction::WriteBucketStatus {
            name: name.clone(),
            status: Box::new(status),
        });
    }
    let finalized = has_finalizer(&bucket.metadata, BACKUP_BUCKET_FINALIZER);
    if !deleting && !finalized {
        actions.push(PoolAction::SetBucketFinalizer {
            name,
            present: true,
        });
    } else if deleting && finalized && entries.is_empty() {
        actions.push(PoolAction::SetBucketFinalizer {
            name,
            present: false,
        });
    }
}

struct EntryContext<'a> {
    view: &'a PoolView<'a>,
    entry: &'a BackupEntry,
    /// The bucket assigned (before or in this pass).
    bucket_name: Option<&'a str>,
    bucket: Option<&'a BackupBucket>,
    location: Option<&'a BackupStorageLocation>,
    waiting_message: &'a str,
}

fn mirror_location(
    status: &mut BackupEntryStatus,
    location: Option<&BackupStorageLocation>,
    oadp: &str,
) {
    // Phase and message only: Velero rewrites the sync and validation times every minute,
    // and copying them would rewrite every entry's status as often.
    status.velero_backup_storage_location = location.map(|l| RelatedVeleroBackupStorageLocation {
        status: l.status.as_ref().map(|s| BackupStorageLocationStatus {
            phase: s.phase.clone(),
            message: s.message.clone(),
            ..Default::default()
        }),
        nacuuid: None,
        name: l.metadata.name.clone(),
        namespace: Some(oadp.to_owned()),
    });
}

fn location_available(location: Option<&BackupStorageLocation>) -> bool {
    location
        .and_then(|l| l.status.as_ref())
        .and_then(|s| s.phase.as_ref())
        .is_some_and(|p| p.as_str() == "Available")
}

fn push_status(ctx: &EntryContext<'_>, status: BackupEntryStatus, plan: &mut PoolPlan) {
    if differs_ignoring_transition_times(ctx.entry.status.as_ref(), &status, |s| &mut s.conditions)
    {
        plan.actions.push(PoolAction::WriteEntryStatus {
            name: name_of(&ctx.entry.metadata).to_owned(),
            status: Box::new(status),
        });
    }
}

/// The BSL write an entry needs, if any.
fn ensure_location(ctx: &EntryContext<'_>, spec: &BackupEntrySpec, plan: &mut PoolPlan) {
    let Some(bucket) = ctx.bucket else { return };
    let desired = location_for(
        name_of(&ctx.entry.metadata),
        spec,
        bucket,
        &ctx.view.settings.oadp_namespace,
    );
    let current = ctx.location.or_else(|| {
        ctx.view
            .locations
            .iter()
            .find(|l| l.metadata.name == desired.metadata.name)
    });
    let up_to_date = current.is_some_and(|c| location_up_to_date(c, &desired));
    if !up_to_date {
        plan.actions
            .push(PoolAction::ApplyLocation(Box::new(desired)));
    }
}

fn decide_entry(ctx: &EntryContext<'_>, plan: &mut PoolPlan) {
    let view = ctx.view;
    let entry = ctx.entry;
    let name = name_of(&entry.metadata).to_owned();
    let now = time(view.now);
    let oadp = &view.settings.oadp_namespace;
    let mut status = entry.status.clone().unwrap_or_default();
    status.observed_generation = entry.metadata.generation;

    if let Some(namespace) = live_namespace(entry, view.namespaces) {
        // The spec follows the namespace while it exists: full UID, grace period label,
        // bucket assignment.
        let mut spec = entry.spec.clone();
        spec.namespace_uid = namespace.uid.clone();
        spec.deletion_grace_period = Some(GoDuration::from_std(grace_period_for(
            namespace,
            view.settings.default_grace_period,
        )));
        spec.bucket_name = ctx.bucket_name.map(str::to_owned);
        let same_grace = entry
            .spec
            .deletion_grace_period
            .as_ref()
            .and_then(|g| g.parse().ok())
            == spec
                .deletion_grace_period
                .as_ref()
                .and_then(|g| g.parse().ok());
        if same_grace {
            spec.deletion_grace_period = entry.spec.deletion_grace_period.clone();
        }
        if spec != entry.spec {
            plan.actions.push(PoolAction::UpdateEntry {
                name: name.clone(),
                spec: Box::new(spec.clone()),
            });
        }
        status.namespace_deleted_at = None;
        status.purge_after = None;
        status.purge = None;
        status
            .conditions
            .retain(|c| c.type_ != ec::NAMESPACE_DELETED && c.type_ != ec::PURGING);
        match (ctx.bucket_name, ctx.bucket) {
            (None, _) => {
                status.phase = Some(BackupEntryPhase::WaitingForBucket);
                set_condition(
                    &mut status.conditions,
                    ec::ASSIGNED,
                    false,
                    ec::REASON_WAITING_FOR_BUCKET,
                    ctx.waiting_message,
                    &now,
                );
                set_condition(
                    &mut status.conditions,
                    ec::READY,
                    false,
                    ec::REASON_NOT_ASSIGNED,
                    "no bucket assigned yet",
                    &now,
                );
                mirror_location(&mut status, ctx.location, oadp);
            }
            (Some(bucket), None) => {
                status.phase = Some(BackupEntryPhase::Assigned);
                set_condition(
                    &mut status.conditions,
                    ec::ASSIGNED,
                    false,
                    ec::REASON_BUCKET_MISSING,
                    &format!("BackupBucket {bucket} does not exist"),
                    &now,
                );
                set_condition(
                    &mut status.conditions,
                    ec::READY,
                    false,
                    ec::REASON_LOCATION_UNAVAILABLE,
                    &format!("BackupBucket {bucket} does not exist"),
                    &now,
                );
                mirror_location(&mut status, ctx.location, oadp);
            }
            (Some(bucket), Some(_)) => {
                set_condition(
                    &mut status.conditions,
                    ec::ASSIGNED,
                    true,
                    ec::REASON_BUCKET_ASSIGNED,
                    &format!("stored in BackupBucket {bucket} at prefix {}", spec.prefix),
                    &now,
                );
                ensure_location(ctx, &spec, plan);
                mirror_location(&mut status, ctx.location, oadp);
                if location_available(ctx.location) {
                    status.phase = Some(BackupEntryPhase::Ready);
                    set_condition(
                        &mut status.conditions,
                        ec::READY,
                        true,
                        ec::REASON_LOCATION_AVAILABLE,
                        "the BackupStorageLocation is Available",
                        &now,
                    );
                } else {
                    status.phase = Some(BackupEntryPhase::Assigned);
                    let message = ctx
                        .location
                        .and_then(|l| l.status.as_ref())
                        .and_then(|s| s.message.clone())
                        .unwrap_or_else(|| {
                            "waiting for Velero to validate the BackupStorageLocation".to_owned()
                        });
                    set_condition(
                        &mut status.conditions,
                        ec::READY,
                        false,
                        ec::REASON_LOCATION_UNAVAILABLE,
                        &message,
                        &now,
                    );
                }
            }
        }
        push_status(ctx, status, plan);
        return;
    }

    // The namespace is gone (or re-created with another UID).
    if entry.spec.bucket_name.is_none() {
        // Never assigned: nothing was stored.
        plan.actions.push(PoolAction::DeleteEntry(name));
        return;
    }
    let default_grace = view.settings.default_grace_period;
    let grace = entry_grace_period(entry, default_grace);
    let deleted_at = status
        .namespace_deleted_at
        .as_ref()
        .map_or(view.now, |t| t.0);
    let purge_at = purge_after(deleted_at, grace);
    status.namespace_deleted_at = Some(time(deleted_at));
    status.purge_after = Some(time(purge_at));
    let force = force_deleted(entry);
    let due = force || view.now >= purge_at;
    set_condition(
        &mut status.conditions,
        ec::NAMESPACE_DELETED,
        true,
        ec::REASON_NAMESPACE_DELETED,
        &format!(
            "namespace {} (UID {}) was deleted at {deleted_at}; its backups are kept until {purge_at} (grace period {}); annotate {FORCE_DELETE_ANNOTATION}=true to purge now",
            entry.spec.namespace,
            entry.spec.namespace_uid,
            GoDuration::from_std(grace)
        ),
        &now,
    );
    set_condition(
        &mut status.conditions,
        ec::READY,
        false,
        ec::REASON_NAMESPACE_DELETED,
        "the namespace was deleted",
        &now,
    );
    // Keep (or rebuild) the location: Velero keeps syncing the backups, and the purge
    // deletes them through it.
    if ctx.bucket.is_some() {
        ensure_location(ctx, &entry.spec, plan);
    }
    mirror_location(&mut status, ctx.location, oadp);
    if !due {
        status.phase = Some(BackupEntryPhase::NamespaceDeleted);
        status.purge = None;
        status.conditions.retain(|c| c.type_ != ec::PURGING);
        push_status(ctx, status, plan);
        plan.check_within(until(view.now, purge_at));
        return;
    }

    // Purge.
    status.phase = Some(BackupEntryPhase::Purging);
    let (reason, why) = if force && view.now < purge_at {
        (
            ec::REASON_FORCE_DELETE,
            format!("{FORCE_DELETE_ANNOTATION} is set"),
        )
    } else {
        (
            ec::REASON_GRACE_PERIOD_OVER,
            "the grace period is over".to_owned(),
        )
    };
    set_condition(
        &mut status.conditions,
        ec::PURGING,
        true,
        reason,
        &format!(
            "{why}: deleting the entry's backups through DeleteBackupRequests, then its BackupStorageLocation and the entry"
        ),
        &now,
    );
    plan.check_within(PURGE_POLL);
    let Some(location) = ctx.location else {
        if ctx.bucket.is_none() {
            // Neither the bucket nor the location is left: nothing can be reached or deleted.
            plan.actions.push(PoolAction::DeleteEntry(name));
        } else {
            push_status(ctx, status, plan);
        }
        return;
    };
    let location_name = name_of(&location.metadata).to_owned();
    let persisted = entry
        .status
        .as_ref()
        .and_then(|s| s.purge.as_ref())
        .and_then(|p| p.started_at.as_ref())
        .is_some();
    let synced_now = location
        .status
        .as_ref()
        .and_then(|s| s.last_synced_time.clone());
    let mut purge = status.purge.clone().unwrap_or_default();
    if purge.started_at.is_none() {
        purge.started_at = Some(now.clone());
        purge.synced_at_start = synced_now.clone();
    }
    let Some(observed) = view.purges.get(&name) else {
        status.purge = Some(purge);
        push_status(ctx, status, plan);
        return;
    };
    if !location_available(Some(location)) {
        purge.last_error = Some(format!(
            "BackupStorageLocation {location_name} is not Available ({}); the purge resumes once Velero reaches the bucket",
            location
                .status
                .as_ref()
                .and_then(|s| s.message.clone())
                .unwrap_or_else(|| "not validated yet".to_owned())
        ));
        purge.backups_remaining = observed.backups.len() as i64;
        status.purge = Some(purge);
        push_status(ctx, status, plan);
        return;
    }

    // A DeleteBackupRequest per backup still on the location.
    let mut deleted: BTreeSet<&str> = BTreeSet::new();
    for request in &observed.requests {
        let processed = request
            .status
            .as_ref()
            .and_then(|s| s.phase.as_ref())
            .is_some_and(|p| *p == DeleteBackupRequestPhase::Processed);
        let clean = request
            .status
            .as_ref()
            .and_then(|s| s.errors.as_ref())
            .is_none_or(Vec::is_empty);
        if processed && clean {
            deleted.insert(request.spec.backup_name.as_str());
        }
    }
    status.backups_deleted = status.backups_deleted.max(deleted.len() as i64);
    let mut last_error = None;
    for backup in &observed.backups {
        let backup_name = name_of(&backup.metadata);
        let deleting = backup
            .status
            .as_ref()
            .and_then(|s| s.phase.as_ref())
            .is_some_and(|p| *p == BackupPhase::Deleting);
        let requests: Vec<&DeleteBackupRequest> = observed
            .requests
            .iter()
            .filter(|r| r.spec.backup_name == backup_name)
            .collect();
        let pending = requests.iter().any(|r| {
            !r.status
                .as_ref()
                .and_then(|s| s.phase.as_ref())
                .is_some_and(|p| *p == DeleteBackupRequestPhase::Processed)
        });
        if pending || deleting {
            continue;
        }
        for r in &requests {
            if let Some(errors) = r.status.as_ref().and_then(|s| s.errors.as_ref())
                && !errors.is_empty()
            {
                last_error = Some(format!("backup {backup_name}: {}", errors.join("; ")));
            }
        }
        let recent = requests.iter().any(|r| {
            r.metadata
                .creation_timestamp
                .as_ref()
                .is_some_and(|t| until(t.0, view.now) < PURGE_RETRY)
        });
        if recent {
            continue;
        }
        for r in &requests {
            plan.actions.push(PoolAction::DeleteDeleteRequest(
                name_of(&r.metadata).to_owned(),
            ));
        }
        plan.actions
            .push(PoolAction::CreateDeleteRequest(Box::new(purge_request(
                backup,
                &location_name,
                &name,
                oadp,
            ))));
    }
    purge.backups_remaining = observed.backups.len() as i64;
    if last_error.is_some() {
        purge.last_error = last_error;
    } else if observed.backups.is_empty() {
        purge.last_error = None;
    }
    let synced_since = match (&purge.synced_at_start, &synced_now) {
        (Some(start), Some(latest)) => latest.0 > start.0,
        (None, Some(_)) => true,
        _ => false,
    };
    let done = observed.backups.is_empty()
        && persisted
        && (observed.storage_empty == Some(true) || synced_since);
    status.purge = Some(purge);
    if done {
        for r in &observed.requests {
            plan.actions.push(PoolAction::DeleteDeleteRequest(
                name_of(&r.metadata).to_owned(),
            ));
        }
        plan.actions.push(PoolAction::DeleteLocation(location_name));
        plan.actions.push(PoolAction::DeleteEntry(name));
        return;
    }
    push_status(ctx, status, plan);
}

/// The DeleteBackupRequest the purge of entry `entry` makes for `backup` (on BSL
/// `location`): labelled as Velero's CLI labels it, plus NAC's pool label.
pub fn purge_request(
    backup: &Backup,
    location: &str,
    entry: &str,
    oadp_namespace: &str,
) -> DeleteBackupRequest {
    let backup_name = name_of(&backup.metadata).to_owned();
    let mut request = DeleteBackupRequest::new(
        "",
        DeleteBackupRequestSpec {
            backup_name: backup_name.clone(),
            ..Default::default()
        },
    );
    let stem: String = backup_name.chars().take(40).collect();
    request.metadata.name = None;
    request.metadata.generate_name = Some(format!("{}-purge-", stem.trim_end_matches('-')));
    request.metadata.namespace = Some(oadp_namespace.to_owned());
    let mut labels = nac_labels();
    labels.insert(POOL_LOCATION_LABEL.to_owned(), location.to_owned());
    labels.insert(
        crate::api::velero::labels::BACKUP_NAME.to_owned(),
        label_value(&backup_name),
    );
    if let Some(uid) = &backup.metadata.uid {
        labels.insert(
            crate::api::velero::labels::BACKUP_UID.to_owned(),
            uid.clone(),
        );
    }
    request.metadata.labels = Some(labels);
    request.metadata.annotations = Some(BTreeMap::from([(
        ENTRY_ANNOTATION.to_owned(),
        entry.to_owned(),
    )]));
    request
}

/// Whether a Velero Backup is stored on BSL `location` (Velero's label, else the spec).
pub fn stored_on(backup: &Backup, location: &str) -> bool {
    match backup
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(crate::api::velero::labels::STORAGE_LOCATION))
    {
        Some(label) => *label == label_value(location),
        None => backup.spec.storage_location.as_deref() == Some(location),
    }
}

/// The namespace of a NonAdminBackup that makes its namespace use the pool, if it does: no
/// storage location of its own, not being deleted.
pub fn pool_user(nab: &crate::api::nonadmin::NonAdminBackup) -> Option<&str> {
    let uses_pool = nab
        .spec
        .backup_spec
        .storage_location
        .as_deref()
        .is_none_or(str::is_empty)
        && nab.metadata.deletion_timestamp.is_none()
        && nab.spec.delete_backup != Some(true);
    uses_pool
        .then_some(nab.metadata.namespace.as_deref())
        .flatten()
}

/// The namespace of a NonAdminSchedule that makes its namespace use the pool, if it does: its
/// backup template has no storage location of its own and it is not being deleted (its runs
/// go to the namespace's entry, so the entry is made before the first run).
pub fn schedule_pool_user(nas: &crate::api::nonadmin::NonAdminSchedule) -> Option<&str> {
    let uses_pool = nas
        .spec
        .template
        .backup_spec
        .storage_location
        .as_deref()
        .is_none_or(str::is_empty)
        && nas.metadata.deletion_timestamp.is_none();
    uses_pool
        .then_some(nas.metadata.namespace.as_deref())
        .flatten()
}

/// The grace period label of a namespace's labels.
pub fn grace_label(labels: Option<&BTreeMap<String, String>>) -> Option<String> {
    labels.and_then(|l| l.get(GRACE_PERIOD_LABEL)).cloned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const OADP: &str = "openshift-adp";
    const UID_A: &str = "aaaaaaaa-1111-2222-3333-444444444444";
    const UID_B: &str = "bbbbbbbb-1111-2222-3333-444444444444";
    const UID_C: &str = "cccccccc-1111-2222-3333-444444444444";
    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn purge_request_labels_a_78_byte_backup_name_within_63_bytes() {
        let name = format!("team-a-nightly-{}-20260101020304", "0".repeat(48));
        assert_eq!(name.len(), 78);
        let backup = Backup::new(&name, Default::default());
        let request = purge_request(&backup, "team-a--aaaaa", "entry", OADP);
        assert_eq!(request.spec.backup_name, name);
        let labels = request.metadata.labels.unwrap();
        let value = &labels[crate::api::velero::labels::BACKUP_NAME];
        assert!(value.len() <= 63);
        assert_eq!(*value, crate::api::velero::labels::valid_label_value(&name));
        assert!(labels.values().all(|v| v.len() <= 63));
    }

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + second).unwrap()
    }

    fn settings() -> PoolSettings {
        PoolSettings {
            oadp_namespace: OADP.into(),
            default_grace_period: 720 * HOUR,
        }
    }

    fn bucket(name: &str, max: Option<u32>) -> BackupBucket {
        let mut b: BackupBucket = serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "BackupBucket",
            "metadata": {"name": name, "generation": 1,
                         "finalizers": [BACKUP_BUCKET_FINALIZER]},
            "spec": {"provider": "aws", "bucket": format!("s3-{name}"), "region": "eu-west-1",
                     "config": {"s3Url": "http://minio:9000", "s3ForcePathStyle": "true"},
                     "credential": {"name": "pool-credentials", "key": "cloud"}}
        }))
        .unwrap();
        b.spec.max_entries = max;
        b
    }

    fn ns(name: &str, uid: &str) -> NamespaceInfo {
        NamespaceInfo {
            name: name.into(),
            uid: uid.into(),
            grace_period_label: None,
        }
    }

    fn entry(
        name: &str,
        namespace: &str,
        uid: &str,
        bucket: Option<&str>,
        extra: Value,
    ) -> BackupEntry {
        let mut value = json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "BackupEntry",
            "metadata": {"name": name, "generation": 1,
                         "creationTimestamp": "2023-11-14T00:00:00Z"},
            "spec": {"namespace": namespace, "namespaceUID": uid, "prefix": name,
                     "deletionGracePeriod": "72h"}
        });
        if let Some(b) = bucket {
            value["spec"]["bucketName"] = json!(b);
        }
        crate::sim::apiserver::patch::merge_patch(&mut value, &extra);
        serde_json::from_value(value).unwrap()
    }

    fn location(
        entry: &BackupEntry,
        bucket: &BackupBucket,
        phase: Option<&str>,
    ) -> BackupStorageLocation {
        let mut l = location_for(
            entry.metadata.name.as_deref().unwrap(),
            &entry.spec,
            bucket,
            OADP,
        );
        if let Some(phase) = phase {
            l.status = Some(serde_json::from_value(json!({"phase": phase})).unwrap());
        }
        l
    }

    struct Fixture {
        now: Timestamp,
        buckets: Vec<BackupBucket>,
        entries: Vec<BackupEntry>,
        namespaces: Vec<NamespaceInfo>,
        users: BTreeSet<String>,
        secrets: BTreeMap<String, BTreeSet<String>>,
        locations: Vec<BackupStorageLocation>,
        listings: BTreeMap<String, Vec<ListedPrefix>>,
        purges: BTreeMap<String, PurgeObservation>,
    }

    impl Fixture {
        fn new() -> Self {
            Fixture {
                now: at(0),
                buckets: vec![bucket("pool-1", Some(1)), bucket("pool-2", Some(1))],
                entries: Vec::new(),
                namespaces: vec![
                    ns("team-a", UID_A),
                    ns("team-b", UID_B),
                    ns("team-c", UID_C),
                ],
                users: BTreeSet::new(),
                secrets: BTreeMap::from([(
                    "pool-credentials".to_owned(),
                    BTreeSet::from(["cloud".to_owned()]),
                )]),
                locations: Vec::new(),
                listings: BTreeMap::new(),
                purges: BTreeMap::new(),
            }
        }

        fn users(mut self, names: &[&str]) -> Self {
            self.users = names.iter().map(|n| (*n).to_owned()).collect();
            self
        }

        fn decide(&self) -> PoolPlan {
            let settings = settings();
            decide(&PoolView {
                now: self.now,
                settings: &settings,
                buckets: &self.buckets,
                entries: &self.entries,
                namespaces: &self.namespaces,
                pool_users: &self.users,
                secrets: &self.secrets,
                locations: &self.locations,
                listings: &self.listings,
                purges: &self.purges,
            })
        }
    }

    /// The plan's writes other than the buckets' own.
    fn entry_actions(plan: &PoolPlan) -> Vec<PoolAction> {
        plan.actions
            .iter()
            .filter(|a| {
                !matches!(
                    a,
                    PoolAction::WriteBucketStatus { .. } | PoolAction::SetBucketFinalizer { .. }
                )
            })
            .cloned()
            .collect()
    }

    fn created(plan: &PoolPlan) -> Vec<(String, Option<String>)> {
        plan.actions
            .iter()
            .filter_map(|a| match a {
                PoolAction::CreateEntry(e) => {
                    Some((e.metadata.name.clone().unwrap(), e.spec.bucket_name.clone()))
                }
                _ => None,
            })
            .collect()
    }

    fn entry_status(plan: &PoolPlan, name: &str) -> BackupEntryStatus {
        plan.actions
            .iter()
            .find_map(|a| match a {
                PoolAction::WriteEntryStatus { name: n, status } if n == name => {
                    Some((**status).clone())
                }
                _ => None,
            })
            .unwrap_or_else(|| panic!("no status write for {name}: {:#?}", plan.actions))
    }

    fn bucket_status(plan: &PoolPlan, name: &str) -> BackupBucketStatus {
        plan.actions
            .iter()
            .find_map(|a| match a {
                PoolAction::WriteBucketStatus { name: n, status } if n == name => {
                    Some((**status).clone())
                }
                _ => None,
            })
            .unwrap_or_else(|| panic!("no status write for {name}: {:#?}", plan.actions))
    }

    fn condition<'a>(
        conditions: &'a [k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
        type_: &str,
    ) -> &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
        conditions
            .iter()
            .find(|c| c.type_ == type_)
            .unwrap_or_else(|| panic!("no {type_} condition in {conditions:?}"))
    }

    #[test]
    fn entries_fill_buckets_in_name_order_and_wait_at_quota() {
        let f = Fixture::new().users(&["team-a", "team-b", "team-c"]);
        let plan = f.decide();
        assert_eq!(
            created(&plan),
            vec![
                ("team-a--aaaaa".to_owned(), Some("pool-1".to_owned())),
                ("team-b--bbbbb".to_owned(), Some("pool-2".to_owned())),
                ("team-c--ccccc".to_owned(), None),
            ]
        );
        assert_eq!(bucket_status(&plan, "pool-1").entry_count, 1);
        assert_eq!(bucket_status(&plan, "pool-2").entry_count, 1);
        let available = bucket_status(&plan, "pool-1");
        assert_eq!(
            condition(&available.conditions, bc::AVAILABLE).status,
            "True"
        );
        // Entries are labelled with their namespace UID (how a NAB finds its entry).
        let PoolAction::CreateEntry(first) = &plan.actions[0] else {
            panic!("{:?}", plan.actions[0]);
        };
        assert_eq!(
            first.metadata.labels.as_ref().unwrap()[ENTRY_NAMESPACE_UID_LABEL],
            UID_A
        );
        assert_eq!(first.spec.prefix, "team-a--aaaaa");
        assert_eq!(
            first.spec.deletion_grace_period,
            Some(GoDuration::new("720h0m0s"))
        );
    }

    #[test]
    fn a_waiting_entry_says_why_and_takes_the_next_bucket_with_room() {
        let mut f = Fixture::new().users(&["team-a", "team-b", "team-c"]);
        f.entries = vec![
            entry("team-a--aaaaa", "team-a", UID_A, Some("pool-1"), json!({})),
            entry("team-b--bbbbb", "team-b", UID_B, Some("pool-2"), json!({})),
            entry("team-c--ccccc", "team-c", UID_C, None, json!({})),
        ];
        let plan = f.decide();
        assert!(created(&plan).is_empty());
        let waiting = entry_status(&plan, "team-c--ccccc");
        assert_eq!(waiting.phase, Some(BackupEntryPhase::WaitingForBucket));
        let assigned = condition(&waiting.conditions, ec::ASSIGNED);
        assert_eq!(
            (assigned.status.as_str(), assigned.reason.as_str()),
            ("False", ec::REASON_WAITING_FOR_BUCKET)
        );
        assert!(
            assigned.message.contains("pool-1 (1/1 entries)")
                && assigned
                    .message
                    .contains("add a BackupBucket or raise a maxEntries"),
            "{}",
            assigned.message
        );

        // The admin adds a bucket: the waiting entry takes it.
        f.buckets.push(bucket("pool-3", Some(1)));
        let plan = f.decide();
        let update = plan.actions.iter().find_map(|a| match a {
            PoolAction::UpdateEntry { name, spec } if name == "team-c--ccccc" => Some(spec),
            _ => None,
        });
        assert_eq!(update.unwrap().bucket_name.as_deref(), Some("pool-3"));
        assert_eq!(bucket_status(&plan, "pool-3").entry_count, 1);

        // Or raises a quota instead.
        f.buckets.pop();
        f.buckets[0].spec.max_entries = Some(2);
        let plan = f.decide();
        let update = plan.actions.iter().find_map(|a| match a {
            PoolAction::UpdateEntry { name, spec } if name == "team-c--ccccc" => Some(spec),
            _ => None,
        });
        assert_eq!(update.unwrap().bucket_name.as_deref(), Some("pool-1"));
    }

    #[test]
    fn unavailable_and_conflicting_buckets_take_no_entries() {
        let mut f = Fixture::new().users(&["team-a"]);
        f.buckets[0].spec.credential.as_mut().unwrap().name = "missing".into();
        let plan = f.decide();
        assert_eq!(
            created(&plan),
            vec![("team-a--aaaaa".to_owned(), Some("pool-2".to_owned()))]
        );
        let s = bucket_status(&plan, "pool-1");
        let c = condition(&s.conditions, bc::AVAILABLE);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", bc::REASON_CREDENTIAL_MISSING)
        );
        assert_eq!(s.last_error.as_deref(), Some(c.message.as_str()));

        // An admin location at the root of pool-2's bucket would contain every entry.
        let mut f = Fixture::new().users(&["team-a"]);
        let root: BackupStorageLocation = serde_json::from_value(json!({
            "metadata": {"name": "default", "namespace": OADP},
            "spec": {"provider": "velero.io/aws", "objectStorage": {"bucket": "s3-pool-1"}}
        }))
        .unwrap();
        f.locations.push(root);
        let plan = f.decide();
        assert_eq!(created(&plan)[0].1.as_deref(), Some("pool-2"));
        let c = condition(&bucket_status(&plan, "pool-1").conditions, bc::AVAILABLE).clone();
        assert_eq!(c.reason, bc::REASON_PREFIX_CONFLICT);
        // Beside the entries (another top-level prefix) is fine.
        f.locations[0].spec.object_storage.prefix = Some("velero".into());
        assert_eq!(created(&f.decide())[0].1.as_deref(), Some("pool-1"));

        // A tenant's own location on the bucket: its credential reaches every entry.
        let mut tenant = f.locations[0].clone();
        tenant.metadata.name = Some("team-b-own-uuid".into());
        tenant.metadata.labels = Some(crate::api::origin::origin_labels(
            OriginKind::NonAdminBackupStorageLocation,
            "team-b-own-uuid",
        ));
        tenant.metadata.annotations = Some(crate::api::origin::origin_annotations(
            OriginKind::NonAdminBackupStorageLocation,
            "team-b",
            "own",
        ));
        f.locations.push(tenant);
        let plan = f.decide();
        let c = condition(&bucket_status(&plan, "pool-1").conditions, bc::AVAILABLE).clone();
        assert_eq!(c.reason, bc::REASON_SHARED_WITH_TENANT);
    }

    #[test]
    fn names_prefixes_and_location_names() {
        assert_eq!(
            entry_name("team-a", UID_A, |_| false).unwrap(),
            "team-a--aaaaa"
        );
        // A re-created namespace whose UID starts the same never shares the old prefix.
        let taken = |n: &str| n == "team-a--aaaaa";
        assert_eq!(
            entry_name("team-a", UID_A, taken).unwrap(),
            "team-a--aaaaaa"
        );
        assert_eq!(entry_name("team-a", "", |_| false), None);
        assert_eq!(
            parse_entry_prefix("team-a--aaaaa"),
            Some(("team-a", "aaaaa"))
        );
        assert_eq!(
            parse_entry_prefix("my--ns--0f1e2d"),
            Some(("my--ns", "0f1e2d"))
        );
        assert_eq!(parse_entry_prefix("velero"), None);
        assert_eq!(parse_entry_prefix("team-a--xyzzy"), None);
        assert_eq!(parse_entry_prefix("team-a--abc"), None);

        let long_ns = "n".repeat(63);
        let name = entry_name(&long_ns, UID_A, |_| false).unwrap();
        assert_eq!(name.len(), 70);
        let location = location_name(&name);
        assert_eq!(location.len(), 63);
        assert!(is_dns1123_label(&location), "{location}");
        assert_ne!(
            location_name(&entry_name(&long_ns, UID_B, |_| false).unwrap()),
            location
        );
        assert_eq!(location_name("team-a--aaaaa"), "team-a--aaaaa");
        assert_eq!(label_value(&"x".repeat(80)).len(), 63);
    }

    #[test]
    fn an_assigned_entry_gets_its_location_then_becomes_ready() {
        let mut f = Fixture::new();
        f.namespaces[0].grace_period_label = Some("72h".into());
        let e = entry("team-a--aaaaa", "team-a", UID_A, Some("pool-1"), json!({}));
        f.entries = vec![e.clone()];
        let plan = f.decide();
        let applied = plan
            .actions
            .iter()
            .find_map(|a| match a {
                PoolAction::ApplyLocation(l) => Some(l.clone()),
                _ => None,
            })
            .unwrap();
        assert_eq!(applied.metadata.name.as_deref(), Some("team-a--aaaaa"));
        assert_eq!(applied.metadata.namespace.as_deref(), Some(OADP));
        assert_eq!(applied.spec.provider, "aws");
        assert_eq!(applied.spec.object_storage.bucket, "s3-pool-1");
        assert_eq!(
            applied.spec.object_storage.prefix.as_deref(),
            Some("team-a--aaaaa")
        );
        assert_eq!(
            applied.spec.credential.as_ref().unwrap().name,
            "pool-credentials"
        );
        let config = applied.spec.config.clone().unwrap();
        assert_eq!(config["region"], "eu-west-1");
        assert_eq!(config["s3Url"], "http://minio:9000");
        assert_eq!(applied.spec.default, None);
        let labels = applied.metadata.labels.clone().unwrap();
        assert_eq!(labels[POOL_LOCATION_LABEL], "team-a--aaaaa");
        assert_eq!(labels[ENTRY_NAMESPACE_UID_LABEL], UID_A);
        let s = entry_status(&plan, "team-a--aaaaa");
        assert_eq!(s.phase, Some(BackupEntryPhase::Assigned));

        // Velero validated it.
        f.locations = vec![location(&e, &f.buckets[0], Some("Available"))];
        let plan = f.decide();
        assert!(
            !plan
                .actions
                .iter()
                .any(|a| matches!(a, PoolAction::ApplyLocation(_)))
        );
        let s = entry_status(&plan, "team-a--aaaaa");
        assert_eq!(s.phase, Some(BackupEntryPhase::Ready));
        assert_eq!(condition(&s.conditions, ec::READY).status, "True");
        let mut ready = e.clone();
        ready.status = Some(s);
        assert_eq!(
            route(true, Some(&ready)),
            PoolRoute::Location("team-a--aaaaa".into())
        );
        assert_eq!(route(false, Some(&ready)), PoolRoute::NotConfigured);
        assert!(matches!(route(true, None), PoolRoute::Wait(_)));
        assert!(matches!(route(true, Some(&e)), PoolRoute::Wait(_)));

        // A location that drifted (someone changed the prefix) is put back.
        f.locations[0].spec.object_storage.prefix = Some("elsewhere".into());
        let plan = f.decide();
        assert!(
            plan.actions
                .iter()
                .any(|a| matches!(a, PoolAction::ApplyLocation(_)))
        );
    }

    #[test]
    fn the_namespace_label_sets_the_grace_period_while_the_namespace_exists() {
        let mut f = Fixture::new();
        f.namespaces[0].grace_period_label = Some("96h".into());
        f.entries = vec![entry(
            "team-a--aaaaa",
            "team-a",
            UID_A,
            Some("pool-1"),
            json!({}),
        )];
        let plan = f.decide();
        let spec = plan
            .actions
            .iter()
            .find_map(|a| match a {
                PoolAction::UpdateEntry { spec, .. } => Some(spec.clone()),
                _ => None,
            })
            .unwrap();
        assert_eq!(
            spec.deletion_grace_period.unwrap().parse().unwrap(),
            96 * HOUR
        );
        // Unparsable: the default.
        f.namespaces[0].grace_period_label = Some("soon".into());
        assert_eq!(grace_period_for(&f.namespaces[0], 720 * HOUR), 720 * HOUR);
        // The same duration written differently is no change.
        f.namespaces[0].grace_period_label = Some("72h0m0s".into());
        assert!(
            !f.decide()
                .actions
                .iter()
                .any(|a| matches!(a, PoolAction::UpdateEntry { .. }))
        );
    }

    #[test]
    fn a_deleted_namespace_keeps_its_entry_for_the_grace_period_then_purges() {
        let mut f = Fixture::new();
        let e = entry("team-a--aaaaa", "team-a", UID_A, Some("pool-1"), json!({}));
        f.entries = vec![e.clone()];
        f.locations = vec![location(&e, &f.buckets[0], Some("Available"))];
        f.namespaces.retain(|n| n.name != "team-a");
        let plan = f.decide();
        let s = entry_status(&plan, "team-a--aaaaa");
        assert_eq!(s.phase, Some(BackupEntryPhase::NamespaceDeleted));
        assert_eq!(s.namespace_deleted_at, Some(Time(at(0))));
        assert_eq!(s.purge_after, Some(Time(at(72 * 3600))));
        assert_eq!(plan.next_check, Some(72 * HOUR));
        let c = condition(&s.conditions, ec::NAMESPACE_DELETED);
        assert!(c.message.contains("72h0m0s") && c.message.contains(FORCE_DELETE_ANNOTATION));
        let mut kept = e.clone();
        kept.status = Some(s.clone());
        assert_eq!(kept.tenant_view().purge_after, Some(Time(at(72 * 3600))));
        // The location stays meanwhile.
        assert!(
            !plan
                .actions
                .iter()
                .any(|a| matches!(a, PoolAction::DeleteLocation(_)))
        );

        // 71 hours later nothing changes but the wait.
        f.entries = vec![kept.clone()];
        f.now = at(71 * 3600);
        assert!(!purge_due(&kept, &f.namespaces, f.now, 720 * HOUR));
        let plan = f.decide();
        assert!(entry_actions(&plan).is_empty(), "{:?}", plan.actions);
        assert_eq!(plan.next_check, Some(HOUR));

        // At 72 hours the purge starts (recording where Velero's sync stood).
        f.now = at(72 * 3600);
        assert!(purge_due(&kept, &f.namespaces, f.now, 720 * HOUR));
        f.locations[0].status.as_mut().unwrap().last_synced_time = Some(Time(at(100)));
        let plan = f.decide();
        let s = entry_status(&plan, "team-a--aaaaa");
        assert_eq!(s.phase, Some(BackupEntryPhase::Purging));
        assert_eq!(
            condition(&s.conditions, ec::PURGING).reason,
            ec::REASON_GRACE_PERIOD_OVER
        );
        let purge = s.purge.clone().unwrap();
        assert_eq!(purge.started_at, Some(Time(at(72 * 3600))));
        assert_eq!(purge.synced_at_start, Some(Time(at(100))));
        assert_eq!(plan.next_check, Some(PURGE_POLL));
    }

    fn backup(name: &str, location: &str, phase: &str) -> Backup {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": OADP, "uid": format!("uid-{name}"),
                         "labels": {"velero.io/storage-location": location}},
            "spec": {"storageLocation": location},
            "status": {"phase": phase}
        }))
        .unwrap()
    }

    fn request(
        name: &str,
        backup: &str,
        phase: Option<&str>,
        errors: &[&str],
        created: i64,
    ) -> DeleteBackupRequest {
        let mut value = json!({
            "metadata": {"name": name, "namespace": OADP,
                         "creationTimestamp": Time(at(created)),
                         "labels": {POOL_LOCATION_LABEL: "team-a--aaaaa"}},
            "spec": {"backupName": backup}
        });
        if let Some(phase) = phase {
            value["status"] = json!({"phase": phase});
            if !errors.is_empty() {
                value["status"]["errors"] = json!(errors);
            }
        }
        serde_json::from_value(value).unwrap()
    }

    /// An entry of a deleted namespace, its purge started (persisted) at `at(0)`.
    fn purging_fixture(force: bool) -> Fixture {
        let mut f = Fixture::new();
        let annotations = if force {
            json!({FORCE_DELETE_ANNOTATION: "true"})
        } else {
            json!({})
        };
        let e = entry(
            "team-a--aaaaa",
            "team-a",
            UID_A,
            Some("pool-1"),
            json!({"metadata": {"annotations": annotations},
                   "status": {"phase": "Purging", "namespaceDeletedAt": Time(at(0)),
                              "purge": {"startedAt": Time(at(0)), "syncedAtStart": Time(at(0))}}}),
        );
        f.locations = vec![location(&e, &f.buckets[0], Some("Available"))];
        f.locations[0].status.as_mut().unwrap().last_synced_time = Some(Time(at(0)));
        f.entries = vec![e];
        f.namespaces.retain(|n| n.name != "team-a");
        f.now = at(if force { 60 } else { 73 * 3600 });
        f
    }

    #[test]
    fn force_delete_purges_before_the_grace_period_ends() {
        let mut f = Fixture::new();
        let e = entry(
            "team-a--aaaaa",
            "team-a",
            UID_A,
            Some("pool-1"),
            json!({"metadata": {"annotations": {FORCE_DELETE_ANNOTATION: "true"}}}),
        );
        f.locations = vec![location(&e, &f.buckets[0], Some("Available"))];
        f.entries = vec![e.clone()];
        f.namespaces.retain(|n| n.name != "team-a");
        assert!(purge_due(&e, &f.namespaces, f.now, 720 * HOUR));
        let s = entry_status(&f.decide(), "team-a--aaaaa");
        assert_eq!(s.phase, Some(BackupEntryPhase::Purging));
        assert_eq!(
            condition(&s.conditions, ec::PURGING).reason,
            ec::REASON_FORCE_DELETE
        );
        // The annotation on a live namespace's entry does nothing.
        let mut f2 = Fixture::new();
        f2.entries = vec![e.clone()];
        f2.locations = f.locations.clone();
        assert!(!purge_due(&e, &f2.namespaces, f2.now, 720 * HOUR));
        assert_eq!(
            entry_status(&f2.decide(), "team-a--aaaaa").phase,
            Some(BackupEntryPhase::Ready)
        );
    }

    #[test]
    fn purging_deletes_every_backup_through_a_delete_backup_request() {
        let mut f = purging_fixture(true);
        f.purges.insert(
            "team-a--aaaaa".into(),
            PurgeObservation {
                backups: vec![
                    backup("b1", "team-a--aaaaa", "Completed"),
                    backup("b2", "team-a--aaaaa", "PartiallyFailed"),
                ],
                requests: Vec::new(),
                storage_empty: Some(false),
            },
        );
        let plan = f.decide();
        let requests: Vec<&DeleteBackupRequest> = plan
            .actions
            .iter()
            .filter_map(|a| match a {
                PoolAction::CreateDeleteRequest(r) => Some(&**r),
                _ => None,
            })
            .collect();
        assert_eq!(requests.len(), 2);
        let r = requests[0];
        assert_eq!(r.spec.backup_name, "b1");
        assert_eq!(r.metadata.generate_name.as_deref(), Some("b1-purge-"));
        assert_eq!(r.metadata.namespace.as_deref(), Some(OADP));
        let labels = r.metadata.labels.clone().unwrap();
        assert_eq!(labels["velero.io/backup-name"], "b1");
        assert_eq!(labels["velero.io/backup-uid"], "uid-b1");
        assert_eq!(labels[POOL_LOCATION_LABEL], "team-a--aaaaa");
        assert!(
            !plan
                .actions
                .iter()
                .any(|a| matches!(a, PoolAction::DeleteEntry(_)))
        );
        let s = entry_status(&plan, "team-a--aaaaa");
        assert_eq!(s.purge.unwrap().backups_remaining, 2);

        // Pending requests are waited for; a backup Velero is deleting gets none.
        f.purges.get_mut("team-a--aaaaa").unwrap().requests =
            vec![request("b1-purge-x", "b1", Some("InProgress"), &[], 0)];
        f.purges.get_mut("team-a--aaaaa").unwrap().backups[1] =
            backup("b2", "team-a--aaaaa", "Deleting");
        let plan = f.decide();
        assert!(
            !plan
                .actions
                .iter()
                .any(|a| matches!(a, PoolAction::CreateDeleteRequest(_)))
        );
    }

    #[test]
    fn a_failed_delete_backup_request_is_retried_after_a_pause() {
        let mut f = purging_fixture(true);
        f.purges.insert(
            "team-a--aaaaa".into(),
            PurgeObservation {
                backups: vec![backup("b1", "team-a--aaaaa", "Completed")],
                requests: vec![request(
                    "b1-purge-x",
                    "b1",
                    Some("Processed"),
                    &["store unreachable"],
                    30,
                )],
                storage_empty: None,
            },
        );
        let plan = f.decide();
        assert!(
            !plan
                .actions
                .iter()
                .any(|a| matches!(a, PoolAction::CreateDeleteRequest(_)))
        );
        let s = entry_status(&plan, "team-a--aaaaa");
        assert_eq!(
            s.purge.unwrap().last_error.as_deref(),
            Some("backup b1: store unreachable")
        );
        f.now = at(30 + PURGE_RETRY.as_secs() as i64);
        let plan = f.decide();
        // The old request goes, a fresh one for the same backup comes.
        let actions = entry_actions(&plan);
        assert_eq!(
            actions[0],
            PoolAction::DeleteDeleteRequest("b1-purge-x".into())
        );
        assert!(
            matches!(&actions[1], PoolAction::CreateDeleteRequest(r) if r.spec.backup_name == "b1"),
            "{actions:?}"
        );
    }

    #[test]
    fn the_purge_ends_once_velero_has_nothing_left_then_location_and_entry_go() {
        let mut f = purging_fixture(false);
        let done = request("b1-purge-x", "b1", Some("Processed"), &[], 10);
        f.purges.insert(
            "team-a--aaaaa".into(),
            PurgeObservation {
                backups: Vec::new(),
                requests: vec![done.clone()],
                storage_empty: None,
            },
        );
        // No backup left in the cluster, but Velero has not synced the bucket since: wait.
        let plan = f.decide();
        assert!(
            !plan
                .actions
                .iter()
                .any(|a| matches!(a, PoolAction::DeleteEntry(_)))
        );
        assert_eq!(entry_status(&plan, "team-a--aaaaa").backups_deleted, 1);
        // Velero synced since the purge started: done.
        f.locations[0].status.as_mut().unwrap().last_synced_time = Some(Time(at(50)));
        let plan = f.decide();
        // The bucket no longer counts the entry.
        assert_eq!(bucket_status(&plan, "pool-1").entry_count, 0);
        assert_eq!(
            entry_actions(&plan),
            vec![
                PoolAction::DeleteDeleteRequest("b1-purge-x".into()),
                PoolAction::DeleteLocation("team-a--aaaaa".into()),
                PoolAction::DeleteEntry("team-a--aaaaa".into()),
            ]
        );
        // A listing showing the prefix empty is enough too.
        f.locations[0].status.as_mut().unwrap().last_synced_time = Some(Time(at(0)));
        f.purges.get_mut("team-a--aaaaa").unwrap().storage_empty = Some(true);
        assert!(
            f.decide()
                .actions
                .contains(&PoolAction::DeleteEntry("team-a--aaaaa".into()))
        );
        // An unavailable location blocks the purge, with the reason.
        f.locations[0].status = Some(
            serde_json::from_value(json!({"phase": "Unavailable", "message": "no route"})).unwrap(),
        );
        let plan = f.decide();
        assert!(
            !plan
                .actions
                .iter()
                .any(|a| matches!(a, PoolAction::DeleteEntry(_)))
        );
        let error = entry_status(&plan, "team-a--aaaaa")
            .purge
            .unwrap()
            .last_error
            .unwrap();
        assert!(error.contains("no route"), "{error}");
    }

    #[test]
    fn entries_that_never_held_anything_go_with_their_namespace() {
        let mut f = Fixture::new();
        f.entries = vec![entry("team-c--ccccc", "team-c", UID_C, None, json!({}))];
        f.namespaces.retain(|n| n.name != "team-c");
        assert_eq!(
            entry_actions(&f.decide()),
            vec![PoolAction::DeleteEntry("team-c--ccccc".into())]
        );
    }

    #[test]
    fn a_recreated_namespace_gets_a_new_entry_and_the_old_one_its_grace_period() {
        let mut f = Fixture::new().users(&["team-a"]);
        let old = entry("team-a--aaaaa", "team-a", UID_A, Some("pool-1"), json!({}));
        f.locations = vec![location(&old, &f.buckets[0], Some("Available"))];
        f.entries = vec![old];
        f.buckets[0].spec.max_entries = Some(5);
        f.namespaces[0].uid = "dddddddd-0000-0000-0000-000000000000".into();
        let plan = f.decide();
        assert_eq!(
            created(&plan),
            vec![("team-a--ddddd".to_owned(), Some("pool-1".to_owned()))]
        );
        assert_eq!(
            entry_status(&plan, "team-a--aaaaa").phase,
            Some(BackupEntryPhase::NamespaceDeleted)
        );
        assert_eq!(bucket_status(&plan, "pool-1").entry_count, 2);
    }

    #[test]
    fn lost_entries_are_rebuilt_from_locations_and_bucket_listings() {
        let mut f = Fixture::new().users(&["team-a"]);
        let lost = entry("team-a--aaaaa", "team-a", UID_A, Some("pool-2"), json!({}));
        f.locations = vec![location(&lost, &f.buckets[1], Some("Available"))];
        f.listings.insert(
            "pool-1".into(),
            vec![
                // team-x is gone; its backups are still in the bucket.
                ListedPrefix {
                    prefix: "team-x--0f0f0".into(),
                    has_backups: true,
                },
                // team-b's prefix holds backups; team-b exists with a matching UID.
                ListedPrefix {
                    prefix: "team-b--bbbbb".into(),
                    has_backups: true,
                },
                ListedPrefix {
                    prefix: "team-y--12345".into(),
                    has_backups: false,
                },
                ListedPrefix {
                    prefix: "velero".into(),
                    has_backups: true,
                },
            ],
        );
        let plan = f.decide();
        let rebuilt: Vec<BackupEntry> = plan
            .actions
            .iter()
            .filter_map(|a| match a {
                PoolAction::CreateEntry(e) => Some((**e).clone()),
                _ => None,
            })
            .collect();
        let names: Vec<&str> = rebuilt
            .iter()
            .map(|e| e.metadata.name.as_deref().unwrap())
            .collect();
        // team-a is a pool user but gets no second entry: its rebuilt one keeps pool-2.
        assert_eq!(names, ["team-a--aaaaa", "team-x--0f0f0", "team-b--bbbbb"]);
        assert_eq!(rebuilt[0].spec, lost.spec);
        assert_eq!(rebuilt[1].spec.bucket_name.as_deref(), Some("pool-1"));
        assert_eq!(rebuilt[1].spec.namespace, "team-x");
        assert_eq!(rebuilt[1].spec.namespace_uid, "0f0f0");
        assert_eq!(rebuilt[1].spec.prefix, "team-x--0f0f0");
        assert_eq!(rebuilt[2].spec.namespace_uid, UID_B);
        // Rebuilt entries count: pool-1 holds two now (over its quota of one; nothing moves).
        assert_eq!(bucket_status(&plan, "pool-1").entry_count, 2);

        // Next pass, the rebuilt entry of a gone namespace starts its grace period.
        let mut next = Fixture::new();
        next.entries = vec![rebuilt[1].clone()];
        let s = entry_status(&next.decide(), "team-x--0f0f0");
        assert_eq!(s.phase, Some(BackupEntryPhase::NamespaceDeleted));
        assert_eq!(s.purge_after, Some(Time(at(720 * 3600))));
    }

    #[test]
    fn a_bucket_with_entries_is_not_let_go() {
        let mut f = Fixture::new();
        f.buckets[0].metadata.deletion_timestamp = Some(Time(at(0)));
        f.entries = vec![entry(
            "team-a--aaaaa",
            "team-a",
            UID_A,
            Some("pool-1"),
            json!({}),
        )];
        let plan = f.decide();
        assert!(
            !plan
                .actions
                .iter()
                .any(|a| matches!(a, PoolAction::SetBucketFinalizer { .. }))
        );
        let s = bucket_status(&plan, "pool-1");
        let deleting = condition(&s.conditions, bc::DELETING);
        assert_eq!(deleting.reason, bc::REASON_ENTRIES_REMAIN);
        assert!(
            deleting.message.contains("team-a--aaaaa"),
            "{}",
            deleting.message
        );
        assert_eq!(
            condition(&s.conditions, bc::AVAILABLE).reason,
            bc::REASON_DELETING
        );

        f.entries.clear();
        let plan = f.decide();
        assert!(plan.actions.contains(&PoolAction::SetBucketFinalizer {
            name: "pool-1".into(),
            present: false
        }));
        // A new bucket gets the finalizer.
        let mut f = Fixture::new();
        f.buckets[1].metadata.finalizers = None;
        assert!(
            f.decide()
                .actions
                .contains(&PoolAction::SetBucketFinalizer {
                    name: "pool-2".into(),
                    present: true
                })
        );
    }

    #[test]
    fn nothing_changes_when_everything_is_in_place() {
        let mut f = Fixture::new().users(&["team-a"]);
        let mut e = entry("team-a--aaaaa", "team-a", UID_A, Some("pool-1"), json!({}));
        e.spec.deletion_grace_period = Some(GoDuration::new("720h0m0s"));
        f.locations = vec![location(&e, &f.buckets[0], Some("Available"))];
        f.entries = vec![e];
        let first = f.decide();
        let PoolAction::WriteEntryStatus { status, .. } = &first
            .actions
            .iter()
            .find(|a| matches!(a, PoolAction::WriteEntryStatus { .. }))
            .unwrap()
        else {
            unreachable!()
        };
        f.entries[0].status = Some((**status).clone());
        for b in &mut f.buckets {
            let plan = first.clone();
            let name = b.metadata.name.clone().unwrap();
            b.status = Some(bucket_status(&plan, &name));
        }
        assert_eq!(f.decide().actions, Vec::new());
    }

    #[test]
    fn a_schedule_without_a_storage_location_makes_its_namespace_a_pool_user() {
        let schedule = |location: Value, deleting: bool| {
            let mut meta = json!({"name": "nightly", "namespace": "team-a"});
            if deleting {
                meta["deletionTimestamp"] = json!("2030-01-01T00:00:00Z");
            }
            serde_json::from_value::<crate::api::nonadmin::NonAdminSchedule>(json!({
                "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminSchedule",
                "metadata": meta,
                "spec": {"schedule": "0 3 * * *",
                         "template": {"backupSpec": {"storageLocation": location}}}
            }))
            .unwrap()
        };
        assert_eq!(
            schedule_pool_user(&schedule(Value::Null, false)),
            Some("team-a")
        );
        assert_eq!(
            schedule_pool_user(&schedule(json!(""), false)),
            Some("team-a")
        );
        assert_eq!(schedule_pool_user(&schedule(json!("mine"), false)), None);
        assert_eq!(schedule_pool_user(&schedule(Value::Null, true)), None);
    }
}
