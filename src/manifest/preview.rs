//! The restore plan shared by Velero's restore (the simulator walks it) and the restore
//! preview (the gateway evaluates it against the namespace as it is now), so a preview says what
//! the restore then does: which backed-up items are restored, in which order, into which
//! namespace, and for each whether it is created, skipped (and why) or updated under
//! `existingResourcePolicy`, with the line Velero logs.
//!
//! Built from `restore_plan` and `selection` (Velero's own rules) in three pure steps:
//! - [`RestorePlan::new`]: the backup's items in restore order (Velero's resource priorities,
//!   then, within one priority, owners before their dependents by the backup's owner UIDs, then
//!   Velero's namespace/name order), each with its target namespace after `namespaceMapping`,
//!   whether the restore's filters exclude it, whether Velero skips it before looking at the
//!   cluster (completed pods and jobs, mirror pods, PVs to re-provision), and otherwise the
//!   object Velero would create ([`prepare_for_restore`]); the first item into each target
//!   namespace carries the Namespace Velero makes sure exists;
//! - [`PlannedEntry::decide`] / [`NamespaceToEnsure::decide`]: given the in-cluster object (or
//!   its absence), Velero's decision ([`decide_existing`]) with its reason and log line;
//! - [`preview_restore`]: every entry decided against a [`LiveCluster`] (objects read with the
//!   caller's own token; reads that failed make an entry `Undetermined`, never a guess).
//!
//! Backed-up Namespace objects are not items of their own: as in the simulator, a namespace is
//! created (from its backed-up labels, annotations and spec) when the first item is restored
//! into it, and the preview shows that as a Namespace entry just before that item.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::api::velero::{ExistingResourcePolicy, RestoreSpec};
use crate::manifest::collect::ListOutcome;
use crate::manifest::graph::{OwnerLinks, owners_first_order};
use crate::manifest::restore_plan::{
    ExistingAction, RestoreItemOptions, RestoreSkip, decide_existing, is_never_restored,
    namespace_for_restore, prepare_for_restore, resource_restore_rank, restore_order,
    restore_skip_reason,
};
use crate::manifest::selection::{
    ApiResourceInfo, NAMESPACES_RESOURCE, RestoreSelection, SelectionError,
};
use crate::manifest::tarball::BackupItem;

// ---------------------------------------------------------------------------------------------
// Order
// ---------------------------------------------------------------------------------------------

/// The items in the order the restore walks them: Velero's order ([`restore_order`]: resource
/// priorities, then namespace and name), refined within each resource rank so that an item
/// comes after the items of the same rank that own it (by `metadata.ownerReferences[].uid`
/// against the items' `metadata.uid`, through the manifest's owner graph). Across ranks Velero's priorities stand even when an
/// owner comes later (pods are restored before their replica sets). Owner cycles keep
/// Velero's order.
pub fn restore_sequence(items: Vec<BackupItem>) -> Vec<BackupItem> {
    let ordered = restore_order(items);
    let mut out = Vec::with_capacity(ordered.len());
    let mut run: Vec<BackupItem> = Vec::new();
    for item in ordered {
        let same_rank = run.last().is_some_and(|last| {
            resource_restore_rank(&last.group_resource())
                == resource_restore_rank(&item.group_resource())
        });
        if !same_rank && !run.is_empty() {
            out.extend(owners_first(std::mem::take(&mut run)));
        }
        run.push(item);
    }
    out.extend(owners_first(run));
    out
}

/// An item's links for the owner graph: its UID and the UIDs its `ownerReferences` name.
struct ItemLinks {
    uid: Option<String>,
    owners: Vec<String>,
}

impl OwnerLinks for ItemLinks {
    fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }

    fn owner_uids(&self) -> &[String] {
        &self.owners
    }
}

fn links_of(item: &BackupItem) -> ItemLinks {
    let metadata = item.object.get("metadata");
    ItemLinks {
        uid: metadata
            .and_then(|m| m.get("uid"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        owners: metadata
            .and_then(|m| m.get("ownerReferences"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|reference| reference.get("uid").and_then(Value::as_str))
            .map(str::to_owned)
            .collect(),
    }
}

/// `items` (already in Velero's order) reordered by the manifest's owner graph
/// ([`owners_first_order`]): each after its owners among `items`, Velero's order otherwise.
fn owners_first(items: Vec<BackupItem>) -> Vec<BackupItem> {
    if items.len() < 2 {
        return items;
    }
    let links: Vec<ItemLinks> = items.iter().map(links_of).collect();
    let order = owners_first_order(&links);
    let mut slots: Vec<Option<BackupItem>> = items.into_iter().map(Some).collect();
    order
        .into_iter()
        .filter_map(|index| slots.get_mut(index).and_then(Option::take))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The plan
// ---------------------------------------------------------------------------------------------

/// Why the restore's filters leave an item out (it is not part of the restore at all: Velero
/// does not count it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exclusion {
    /// A type Velero never restores (nodes, events, Velero's own objects...).
    NeverRestored,
    /// `includedResources`/`excludedResources` leave the type out.
    ResourceExcluded,
    /// `includedNamespaces`/`excludedNamespaces` leave the item's namespace out.
    NamespaceExcluded,
    /// A cluster-scoped item and the restore does not take cluster-scoped resources.
    ClusterScopedExcluded,
    /// The item's labels do not match `labelSelector`/`orLabelSelectors`.
    LabelSelector,
}

/// What the restore does with an item before looking at the cluster.
#[derive(Debug, Clone, PartialEq)]
pub enum PlannedStep {
    /// Left out by the restore's filters.
    Excluded(Exclusion),
    /// Skipped by Velero whatever the cluster holds.
    Skip(RestoreSkip),
    /// Cannot be restored (the type is not served, a restore item action failed); the text is
    /// the restore's error.
    Fail(String),
    /// Restored: `desired` is the object Velero creates (at the version the cluster prefers),
    /// `status` the backed-up status Velero then writes through the status subresource when
    /// the restore restores status.
    Apply {
        /// The object to create, without status.
        desired: Value,
        /// The status to write after creating, if restored.
        status: Option<Value>,
    },
}

/// The Namespace Velero makes sure exists before restoring into it.
#[derive(Debug, Clone, PartialEq)]
pub struct NamespaceToEnsure {
    /// Target namespace name.
    pub name: String,
    /// The Namespace object to create when it is missing (from the backed-up one's labels,
    /// annotations and spec).
    pub object: Value,
}

/// One backed-up item in the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedEntry {
    /// The item as backed up.
    pub item: BackupItem,
    /// Its namespace after `namespaceMapping`; `None` for cluster-scoped items.
    pub target_namespace: Option<String>,
    /// Set on the first restored item into each target namespace: that namespace is ensured
    /// before the item.
    pub ensure_namespace: Option<NamespaceToEnsure>,
    /// What happens to it before the cluster is consulted.
    pub step: PlannedStep,
}

/// The backed-up items of one restore, in restore order.
#[derive(Debug, Clone)]
pub struct RestorePlan {
    entries: Vec<PlannedEntry>,
    policy: Option<ExistingResourcePolicy>,
}

impl RestorePlan {
    /// Plans the restore of `items` (a backup's contents, e.g. from `read_backup_tarball`) by
    /// `spec`, on a cluster serving `discovery` (preferred versions, core group first).
    /// `backup_name` and `restore_name` go into the restore labels (a preview may use the
    /// name the restore will get; it changes only the labels written).
    pub fn new(
        items: Vec<BackupItem>,
        spec: &RestoreSpec,
        discovery: &[ApiResourceInfo],
        backup_name: &str,
        restore_name: &str,
    ) -> Result<Self, SelectionError> {
        let selection = RestoreSelection::new(spec, discovery)?;
        let (namespace_items, items): (Vec<BackupItem>, Vec<BackupItem>) = items
            .into_iter()
            .partition(|item| item.group.is_empty() && item.resource == NAMESPACES_RESOURCE);
        let backed_up_namespaces: BTreeMap<String, Value> = namespace_items
            .into_iter()
            .map(|item| (item.name, item.object))
            .collect();
        let preserve_node_ports = spec.preserve_node_ports == Some(true);
        let mut ensured = BTreeSet::new();
        let entries = restore_sequence(items)
            .into_iter()
            .map(|item| {
                let target_namespace = item
                    .namespace
                    .as_deref()
                    .map(|namespace| selection.target_namespace(namespace).to_owned());
                let exclusion = exclusion(&selection, &item);
                let ensure_namespace = match (&exclusion, &item.namespace, &target_namespace) {
                    (None, Some(source), Some(target)) if ensured.insert(target.clone()) => {
                        Some(NamespaceToEnsure {
                            name: target.clone(),
                            object: namespace_for_restore(backed_up_namespaces.get(source), target),
                        })
                    }
                    _ => None,
                };
                let step = match exclusion {
                    Some(exclusion) => PlannedStep::Excluded(exclusion),
                    None => prepare(
                        &item,
                        &selection,
                        discovery,
                        backup_name,
                        restore_name,
                        preserve_node_ports,
                    ),
                };
                PlannedEntry {
                    item,
                    target_namespace,
                    ensure_namespace,
                    step,
                }
            })
            .collect();
        Ok(Self {
            entries,
            policy: spec.existing_resource_policy.clone(),
        })
    }

    /// Every backed-up item but Namespaces, in restore order, excluded ones included.
    pub fn entries(&self) -> &[PlannedEntry] {
        &self.entries
    }

    /// The entries the restore processes (not excluded by its filters), in order.
    pub fn restored_entries(&self) -> impl Iterator<Item = &PlannedEntry> {
        self.entries
            .iter()
            .filter(|entry| !matches!(entry.step, PlannedStep::Excluded(_)))
    }

    /// How many items the restore processes (Velero's `progress.totalItems`).
    pub fn total_items(&self) -> usize {
        self.restored_entries().count()
    }

    /// The restore's `existingResourcePolicy`.
    pub fn policy(&self) -> Option<&ExistingResourcePolicy> {
        self.policy.as_ref()
    }

    /// What a preview has to read from the cluster to decide every entry: one list per
    /// (restored type, target namespace) — cluster-wide for cluster-scoped types — and one get
    /// per target namespace. Record the answers in a [`LiveObjects`].
    pub fn live_reads(&self, discovery: &[ApiResourceInfo]) -> Vec<LiveRead> {
        let mut reads = Vec::new();
        let mut seen = BTreeSet::new();
        let namespaces = discovery.iter().find(|info| info.is_namespaces());
        for entry in self.restored_entries() {
            if let (Some(ensure), Some(namespaces)) = (&entry.ensure_namespace, namespaces) {
                reads.push(LiveRead {
                    resource: namespaces.clone(),
                    namespace: None,
                    name: Some(ensure.name.clone()),
                });
            }
            if !matches!(entry.step, PlannedStep::Apply { .. }) {
                continue;
            }
            let Some(info) = served(discovery, &entry.item) else {
                continue;
            };
            if seen.insert((info.group_resource(), entry.target_namespace.clone())) {
                reads.push(LiveRead {
                    resource: info.clone(),
                    namespace: entry.target_namespace.clone(),
                    name: None,
                });
            }
        }
        reads
    }
}

fn exclusion(selection: &RestoreSelection, item: &BackupItem) -> Option<Exclusion> {
    let group_resource = item.group_resource();
    if is_never_restored(&item.group, &item.resource) {
        return Some(Exclusion::NeverRestored);
    }
    if !selection.includes_resource(&group_resource) {
        return Some(Exclusion::ResourceExcluded);
    }
    match item.namespace.as_deref() {
        Some(namespace) if !selection.includes_namespace(namespace) => {
            return Some(Exclusion::NamespaceExcluded);
        }
        None if !selection.includes_cluster_scoped() => {
            return Some(Exclusion::ClusterScopedExcluded);
        }
        _ => {}
    }
    if !selection.includes_item(&group_resource, item.namespace.as_deref(), &item.object) {
        return Some(Exclusion::LabelSelector);
    }
    None
}

fn served<'a>(discovery: &'a [ApiResourceInfo], item: &BackupItem) -> Option<&'a ApiResourceInfo> {
    discovery
        .iter()
        .find(|info| info.group == item.group && info.plural == item.resource)
}

/// `restoreItem` up to the create: Velero's skips, the served type, the prepared object.
fn prepare(
    item: &BackupItem,
    selection: &RestoreSelection,
    discovery: &[ApiResourceInfo],
    backup_name: &str,
    restore_name: &str,
    preserve_node_ports: bool,
) -> PlannedStep {
    let group_resource = item.group_resource();
    if let Some(skip) = restore_skip_reason(&group_resource, &item.object) {
        return PlannedStep::Skip(skip);
    }
    let Some(info) = served(discovery, item) else {
        return PlannedStep::Fail(format!("the cluster does not serve {group_resource}"));
    };
    let options = RestoreItemOptions {
        backup_name,
        restore_name,
        namespace_mapping: selection.namespace_mapping(),
        restore_status: selection.restores_status(&group_resource, &item.object),
        preserve_node_ports,
    };
    match prepare_for_restore(&item.object, &group_resource, &options) {
        Ok(mut desired) => {
            // Objects are created at the version the cluster prefers for the resource.
            desired["apiVersion"] = json!(api_version(info));
            let status = desired.as_object_mut().and_then(|o| o.remove("status"));
            PlannedStep::Apply { desired, status }
        }
        Err(error) => PlannedStep::Fail(error.to_string()),
    }
}

fn api_version(info: &ApiResourceInfo) -> String {
    if info.group.is_empty() {
        info.version.clone()
    } else {
        format!("{}/{}", info.group, info.version)
    }
}

// ---------------------------------------------------------------------------------------------
// Decisions
// ---------------------------------------------------------------------------------------------

/// What the restore does with one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "PascalCase")]
#[derive(async_graphql::Enum)]
pub enum RestoreAction {
    /// The object is created.
    Create,
    /// The in-cluster object is patched.
    Update,
    /// Nothing is written.
    Skip,
    /// The restore records an error for it.
    Fail,
    /// The preview could not read the cluster to tell (only in previews).
    Undetermined,
}

/// Why an entry gets its action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "PascalCase")]
#[derive(async_graphql::Enum)]
pub enum RestoreReason {
    /// Create: nothing of that name in the target namespace.
    Absent,
    /// Update (`existingResourcePolicy: update`): the in-cluster object differs and is
    /// patched to the backed-up one.
    PolicyUpdate,
    /// Update (`existingResourcePolicy: update`): the in-cluster object is the backed-up one;
    /// only the restore labels are written.
    RestoreLabels,
    /// Update: an existing ServiceAccount that differs gains the backup's secrets, image pull
    /// secrets, labels and annotations (whatever the policy).
    ServiceAccountMerged,
    /// Skip: the object exists and differs, and the policy is `none` or unset (a warning).
    AlreadyExists,
    /// Skip: the object exists and equals the backed-up one (status and server-set metadata
    /// aside, so an object differing only in its status counts as identical).
    Identical,
    /// Skip: an `existingResourcePolicy` Velero does not know; it leaves the object alone.
    UnsupportedPolicy,
    /// Skip (excluded): Velero never restores this type.
    NeverRestored,
    /// Skip (excluded): the restore's resource filter leaves the type out.
    ResourceExcluded,
    /// Skip (excluded): the restore's namespace filter leaves the item's namespace out.
    NamespaceExcluded,
    /// Skip (excluded): cluster-scoped and the restore takes no cluster-scoped resources.
    ClusterScopedExcluded,
    /// Skip (excluded): the labels do not match the restore's label selectors.
    LabelSelector,
    /// Skip: a pod that ended or a job that completed.
    Completed,
    /// Skip: a static pod's mirror.
    MirrorPod,
    /// Skip: a persistent volume with reclaim policy Delete and no snapshot.
    DynamicallyReprovisioned,
    /// Skip: the target namespace of a Namespace entry exists.
    NamespaceExists,
    /// Fail: the cluster does not serve the type, or preparing the object failed.
    CannotRestore,
    /// Undetermined: the in-cluster object could not be read.
    LiveStateUnknown,
}

impl RestoreReason {
    /// Whether the restore's filters (or Velero's never-restored list) leave the item out.
    pub fn is_exclusion(self) -> bool {
        matches!(
            self,
            Self::NeverRestored
                | Self::ResourceExcluded
                | Self::NamespaceExcluded
                | Self::ClusterScopedExcluded
                | Self::LabelSelector
        )
    }
}

/// Velero's decision for one entry given the cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// What is done.
    pub action: RestoreAction,
    /// Why.
    pub reason: RestoreReason,
    /// The line Velero logs (for a warning or an error, its text in the restore's results).
    pub message: String,
    /// Whether `message` is recorded as a warning of the target namespace.
    pub warning: bool,
    /// For [`RestoreAction::Update`], the JSON merge patch applied to the in-cluster object.
    pub patch: Option<Value>,
}

impl Decision {
    fn new(action: RestoreAction, reason: RestoreReason, message: String) -> Self {
        Self {
            action,
            reason,
            message,
            warning: false,
            patch: None,
        }
    }
}

impl NamespaceToEnsure {
    /// Created when missing (`EnsureNamespaceExistsAndIsReady`), else left alone.
    pub fn decide(&self, existing: Option<&Value>) -> Decision {
        match existing {
            None => Decision::new(
                RestoreAction::Create,
                RestoreReason::Absent,
                format!("Creating namespace {}", self.name),
            ),
            Some(_) => Decision::new(
                RestoreAction::Skip,
                RestoreReason::NamespaceExists,
                format!("Namespace {} already exists", self.name),
            ),
        }
    }
}

impl PlannedEntry {
    /// `namespace/name`, or `name` for cluster-scoped items, at the target.
    fn target_name(&self) -> String {
        match &self.target_namespace {
            Some(namespace) => format!("{namespace}/{}", self.item.name),
            None => self.item.name.clone(),
        }
    }

    /// Velero's decision for this entry given `existing`, the object of that name in the
    /// target namespace (ignored unless the step is [`PlannedStep::Apply`]).
    pub fn decide(
        &self,
        existing: Option<&Value>,
        policy: Option<&ExistingResourcePolicy>,
    ) -> Decision {
        let kind = &self.item.kind;
        let name = &self.item.name;
        let desired = match &self.step {
            PlannedStep::Excluded(exclusion) => return excluded(*exclusion),
            PlannedStep::Skip(skip) => {
                let reason = match skip {
                    RestoreSkip::Completed { .. } => RestoreReason::Completed,
                    RestoreSkip::MirrorPod => RestoreReason::MirrorPod,
                    RestoreSkip::DynamicallyReprovisioned => {
                        RestoreReason::DynamicallyReprovisioned
                    }
                };
                // Velero logs these at info level: no warning.
                return Decision::new(RestoreAction::Skip, reason, skip.to_string());
            }
            PlannedStep::Fail(error) => {
                return Decision::new(
                    RestoreAction::Fail,
                    RestoreReason::CannotRestore,
                    error.clone(),
                );
            }
            PlannedStep::Apply { desired, .. } => desired,
        };
        let action = decide_existing(existing, desired, policy);
        // The same comparison without a policy tells why: identical objects are skipped
        // silently, differing service accounts merged, anything else differs.
        let without_policy = decide_existing(existing, desired, None);
        let policy_name = policy
            .map(ExistingResourcePolicy::as_str)
            .unwrap_or_default();
        match action {
            ExistingAction::Create => Decision::new(
                RestoreAction::Create,
                RestoreReason::Absent,
                format!("Attempting to restore {kind}: {name}"),
            ),
            ExistingAction::Update { patch } => {
                let (reason, message) = match without_policy {
                    ExistingAction::Update { .. } => (
                        RestoreReason::ServiceAccountMerged,
                        format!("ServiceAccount {} successfully updated", self.target_name()),
                    ),
                    ExistingAction::Skip { warning: None } => (
                        RestoreReason::RestoreLabels,
                        format!(
                            "restore API has resource policy defined {policy_name} , executing restore workflow accordingly for unchanged resource {kind} {}",
                            self.target_name()
                        ),
                    ),
                    _ => (
                        RestoreReason::PolicyUpdate,
                        format!(
                            "restore API has resource policy defined {policy_name} , executing restore workflow accordingly for changed resource {kind} {}",
                            self.target_name()
                        ),
                    ),
                };
                Decision {
                    patch: Some(patch),
                    ..Decision::new(RestoreAction::Update, reason, message)
                }
            }
            ExistingAction::Skip {
                warning: Some(warning),
            } => Decision {
                warning: true,
                ..Decision::new(RestoreAction::Skip, RestoreReason::AlreadyExists, warning)
            },
            ExistingAction::Skip { warning: None } => match without_policy {
                ExistingAction::Skip {
                    warning: Some(_), ..
                } => Decision::new(
                    RestoreAction::Skip,
                    RestoreReason::UnsupportedPolicy,
                    format!(
                        "restore API has resource policy defined {policy_name} , executing restore workflow accordingly for changed resource {kind} {}",
                        self.target_name()
                    ),
                ),
                _ => Decision::new(
                    RestoreAction::Skip,
                    RestoreReason::Identical,
                    format!(
                        "Restore of {kind}, {name} skipped: it already exists in the cluster and is the same as the backed up version"
                    ),
                ),
            },
        }
    }
}

fn excluded(exclusion: Exclusion) -> Decision {
    let (reason, message) = match exclusion {
        // Velero adds its never-restored types to every restore's excluded resources.
        Exclusion::NeverRestored => (
            RestoreReason::NeverRestored,
            "Not restoring item because resource is excluded",
        ),
        Exclusion::ResourceExcluded => (
            RestoreReason::ResourceExcluded,
            "Not restoring item because resource is excluded",
        ),
        Exclusion::NamespaceExcluded => (
            RestoreReason::NamespaceExcluded,
            "Not restoring item because namespace is excluded",
        ),
        Exclusion::ClusterScopedExcluded => (
            RestoreReason::ClusterScopedExcluded,
            "Not restoring item because it's cluster-scoped",
        ),
        Exclusion::LabelSelector => (
            RestoreReason::LabelSelector,
            "Not restoring item because it does not match the restore's label selector",
        ),
    };
    Decision::new(RestoreAction::Skip, reason, message.to_owned())
}

// ---------------------------------------------------------------------------------------------
// The cluster as it is now
// ---------------------------------------------------------------------------------------------

/// One read a preview needs: a list of `resource` in `namespace` (cluster-wide when `None`),
/// or, with `name`, a get of that one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveRead {
    /// The type to read.
    pub resource: ApiResourceInfo,
    /// The namespace to read in; `None` for cluster-scoped types.
    pub namespace: Option<String>,
    /// The one object to get, or `None` to list.
    pub name: Option<String>,
}

/// What the cluster holds at a target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Live<'a> {
    /// Nothing of that name.
    Absent,
    /// The in-cluster object.
    Present(&'a Value),
    /// Not known: the read failed or was not made; the text says why.
    Unknown(&'a str),
}

/// The cluster's objects as a preview sees them.
pub trait LiveCluster {
    /// The object of `group_resource` (`plural[.group]`) named `name` in `namespace` (`None`
    /// for cluster-scoped types).
    fn lookup(&self, group_resource: &str, namespace: Option<&str>, name: &str) -> Live<'_>;
}

type ScopeKey = (String, Option<String>);
type ObjectKey = (String, Option<String>, String);

/// What reads of the cluster returned: whole lists (anything not in a complete list is
/// absent), single gets, and reads that failed.
#[derive(Debug, Clone, Default)]
pub struct LiveObjects {
    listed: BTreeSet<ScopeKey>,
    unreadable: BTreeMap<ScopeKey, String>,
    objects: BTreeMap<ObjectKey, Value>,
    absent: BTreeSet<ObjectKey>,
    unreadable_objects: BTreeMap<ObjectKey, String>,
}

const NOT_READ: &str = "not read";

impl LiveObjects {
    /// Nothing known yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records the answer to `read`: for a list, [`ListOutcome::Listed`] with every object;
    /// for a get, `Listed` with the object, or empty when it was not found (404).
    pub fn record(&mut self, read: &LiveRead, outcome: ListOutcome) {
        let group_resource = read.resource.group_resource();
        let namespace = read.namespace.clone();
        match (outcome, &read.name) {
            (ListOutcome::Listed(objects), None) => {
                self.record_list(&group_resource, namespace.as_deref(), objects)
            }
            (ListOutcome::Listed(objects), Some(name)) => self.record_object(
                &group_resource,
                namespace.as_deref(),
                name,
                objects.into_iter().next(),
            ),
            (ListOutcome::Forbidden(message) | ListOutcome::Failed(message), None) => {
                self.unreadable.insert((group_resource, namespace), message);
            }
            (ListOutcome::Forbidden(message) | ListOutcome::Failed(message), Some(name)) => {
                self.unreadable_objects
                    .insert((group_resource, namespace, name.clone()), message);
            }
        }
    }

    /// Records the complete list of `group_resource` in `namespace`.
    pub fn record_list(
        &mut self,
        group_resource: &str,
        namespace: Option<&str>,
        objects: Vec<Value>,
    ) {
        let scope = (group_resource.to_owned(), namespace.map(str::to_owned));
        for object in objects {
            let Some(name) = object.pointer("/metadata/name").and_then(Value::as_str) else {
                continue;
            };
            self.objects
                .insert((scope.0.clone(), scope.1.clone(), name.to_owned()), object);
        }
        self.unreadable.remove(&scope);
        self.listed.insert(scope);
    }

    /// Records one object read by name: `Some` when found, `None` when not (404).
    pub fn record_object(
        &mut self,
        group_resource: &str,
        namespace: Option<&str>,
        name: &str,
        object: Option<Value>,
    ) {
        let key = (
            group_resource.to_owned(),
            namespace.map(str::to_owned),
            name.to_owned(),
        );
        match object {
            Some(object) => {
                self.absent.remove(&key);
                self.objects.insert(key, object);
            }
            None => {
                self.objects.remove(&key);
                self.absent.insert(key);
            }
        }
    }
}

impl LiveCluster for LiveObjects {
    fn lookup(&self, group_resource: &str, namespace: Option<&str>, name: &str) -> Live<'_> {
        let key = (
            group_resource.to_owned(),
            namespace.map(str::to_owned),
            name.to_owned(),
        );
        if let Some(object) = self.objects.get(&key) {
            return Live::Present(object);
        }
        if self.absent.contains(&key) {
            return Live::Absent;
        }
        if let Some(message) = self.unreadable_objects.get(&key) {
            return Live::Unknown(message);
        }
        let scope = (key.0, key.1);
        if self.listed.contains(&scope) {
            return Live::Absent;
        }
        match self.unreadable.get(&scope) {
            Some(message) => Live::Unknown(message),
            None => Live::Unknown(NOT_READ),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The preview
// ---------------------------------------------------------------------------------------------

/// One line of a restore preview.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
#[graphql(name = "RestorePreviewEntry")]
pub struct PreviewEntry {
    /// API group; empty for the core group.
    pub group: String,
    /// Version as backed up.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Plural resource name.
    pub resource: String,
    /// Namespace in the backup; absent for cluster-scoped items (and Namespace entries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Namespace restored into, after `namespaceMapping`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_namespace: Option<String>,
    /// Object name (for a Namespace entry, the target namespace).
    pub name: String,
    /// What the restore does.
    pub action: RestoreAction,
    /// Why.
    pub reason: RestoreReason,
    /// The line Velero logs (or records as the warning or error).
    pub message: String,
    /// Whether the restore records `message` as a warning.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warning: bool,
}

/// How many entries of a preview get each outcome.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
#[graphql(name = "RestorePreviewCounts")]
pub struct PreviewCounts {
    /// Items the restore processes (Velero's `progress.totalItems`): all but the excluded.
    pub total: u64,
    /// Items created.
    pub create: u64,
    /// Items updated.
    pub update: u64,
    /// Items skipped (not counting the excluded).
    pub skip: u64,
    /// Items the restore records an error for.
    pub fail: u64,
    /// Items whose fate depends on objects the preview could not read.
    pub undetermined: u64,
    /// Items left out by the restore's filters.
    pub excluded: u64,
    /// Items whose skip or update the restore records as a warning.
    pub warnings: u64,
    /// Target namespaces the restore creates.
    pub namespaces_created: u64,
}

/// What a restore would do, entry by entry in restore order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RestorePreview {
    /// Every backed-up item (Namespaces aside) and every namespace the restore ensures, in the
    /// order the restore walks them.
    pub entries: Vec<PreviewEntry>,
    /// Totals.
    pub counts: PreviewCounts,
}

/// The preview of `plan` against the cluster as `live` shows it.
///
/// Entries are decided in order, each seeing the effect of the ones before (a namespace the
/// restore creates holds only what Kubernetes puts in every new namespace, see
/// [`in_new_namespace`]; an object created earlier by the same restore exists), as the restore
/// itself would.
pub fn preview_restore(plan: &RestorePlan, live: &impl LiveCluster) -> RestorePreview {
    let mut preview = RestorePreview::default();
    // Objects as the restore leaves them, by (group-resource, namespace, name).
    let mut written: BTreeMap<ObjectKey, Option<Value>> = BTreeMap::new();
    let mut created_namespaces: BTreeSet<String> = BTreeSet::new();
    for entry in plan.entries() {
        if let Some(ensure) = &entry.ensure_namespace {
            let decision = match live.lookup(NAMESPACES_RESOURCE, None, &ensure.name) {
                Live::Unknown(why) => undetermined("Namespace", &ensure.name, why),
                Live::Present(object) => ensure.decide(Some(object)),
                Live::Absent => ensure.decide(None),
            };
            if decision.action == RestoreAction::Create {
                created_namespaces.insert(ensure.name.clone());
                preview.counts.namespaces_created += 1;
            }
            preview.entries.push(PreviewEntry {
                group: String::new(),
                version: "v1".into(),
                kind: "Namespace".into(),
                resource: NAMESPACES_RESOURCE.into(),
                namespace: None,
                target_namespace: None,
                name: ensure.name.clone(),
                action: decision.action,
                reason: decision.reason,
                message: decision.message,
                warning: false,
            });
        }
        let key = (
            entry.item.group_resource(),
            entry.target_namespace.clone(),
            entry.item.name.clone(),
        );
        let decision = if matches!(entry.step, PlannedStep::Apply { .. }) {
            let fresh_namespace = entry
                .target_namespace
                .as_ref()
                .is_some_and(|namespace| created_namespaces.contains(namespace));
            let current: Result<Option<Value>, String> = match written.get(&key) {
                Some(object) => Ok(object.clone()),
                None if fresh_namespace => in_new_namespace(&key.0, key.1.as_deref(), &key.2),
                None => match live.lookup(&key.0, key.1.as_deref(), &key.2) {
                    Live::Absent => Ok(None),
                    Live::Present(object) => Ok(Some(object.clone())),
                    Live::Unknown(why) => Err(why.to_owned()),
                },
            };
            match current {
                Ok(current) => {
                    let decision = entry.decide(current.as_ref(), plan.policy());
                    record_write(&mut written, key, entry, current, &decision);
                    decision
                }
                Err(why) => undetermined(&entry.item.kind, &entry.target_name(), &why),
            }
        } else {
            entry.decide(None, plan.policy())
        };
        count(&mut preview.counts, &decision);
        preview.entries.push(PreviewEntry {
            group: entry.item.group.clone(),
            version: entry.item.version.clone(),
            kind: entry.item.kind.clone(),
            resource: entry.item.resource.clone(),
            namespace: entry.item.namespace.clone(),
            target_namespace: entry.target_namespace.clone(),
            name: entry.item.name.clone(),
            action: decision.action,
            reason: decision.reason,
            message: decision.message,
            warning: decision.warning,
        });
    }
    preview
}

/// The ConfigMap kube-controller-manager's root CA publisher puts in every namespace.
pub const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";

/// What a namespace the restore has just created already holds by the time items are restored
/// into it: the `default` ServiceAccount (the service-account controller creates it, bare)
/// and the root CA ConfigMap, whose content depends on the cluster (so a restored one can only
/// be told apart once the namespace exists). Anything else is absent.
pub fn in_new_namespace(
    group_resource: &str,
    namespace: Option<&str>,
    name: &str,
) -> Result<Option<Value>, String> {
    match (group_resource, name) {
        ("serviceaccounts", "default") => Ok(Some(json!({
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "default", "namespace": namespace.unwrap_or_default()}
        }))),
        ("configmaps", ROOT_CA_CONFIG_MAP) => Err(
            "Kubernetes publishes it in every new namespace with the cluster's own CA".to_owned(),
        ),
        _ => Ok(None),
    }
}

fn undetermined(kind: &str, name: &str, why: &str) -> Decision {
    Decision::new(
        RestoreAction::Undetermined,
        RestoreReason::LiveStateUnknown,
        format!("cannot tell whether {kind} {name} exists: {why}"),
    )
}

/// Keeps what the restore leaves at `key`, for later entries restored to the same object.
fn record_write(
    written: &mut BTreeMap<ObjectKey, Option<Value>>,
    key: ObjectKey,
    entry: &PlannedEntry,
    current: Option<Value>,
    decision: &Decision,
) {
    match (decision.action, &entry.step) {
        (RestoreAction::Create, PlannedStep::Apply { desired, .. }) => {
            written.insert(key, Some(desired.clone()));
        }
        (RestoreAction::Update, _) => {
            if let (Some(mut object), Some(patch)) = (current, &decision.patch) {
                apply_merge_patch(&mut object, patch);
                written.insert(key, Some(object));
            }
        }
        _ => {}
    }
}

fn count(counts: &mut PreviewCounts, decision: &Decision) {
    if decision.reason.is_exclusion() {
        counts.excluded += 1;
        return;
    }
    counts.total += 1;
    match decision.action {
        RestoreAction::Create => counts.create += 1,
        RestoreAction::Update => counts.update += 1,
        RestoreAction::Skip => counts.skip += 1,
        RestoreAction::Fail => counts.fail += 1,
        RestoreAction::Undetermined => counts.undetermined += 1,
    }
    if decision.warning {
        counts.warnings += 1;
    }
}

/// RFC 7386: applies a JSON merge patch.
fn apply_merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(fields) = target else {
        return;
    };
    for (key, value) in patch {
        if value.is_null() {
            fields.remove(key);
        } else {
            apply_merge_patch(fields.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn info(group: &str, kind: &str, plural: &str, namespaced: bool) -> ApiResourceInfo {
        ApiResourceInfo {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced,
        }
    }

    fn discovery() -> Vec<ApiResourceInfo> {
        vec![
            info("", "ConfigMap", "configmaps", true),
            info("", "Event", "events", true),
            info("", "Namespace", "namespaces", false),
            info("", "PersistentVolume", "persistentvolumes", false),
            info("", "PersistentVolumeClaim", "persistentvolumeclaims", true),
            info("", "Pod", "pods", true),
            info("", "Secret", "secrets", true),
            info("", "Service", "services", true),
            info("", "ServiceAccount", "serviceaccounts", true),
            info("apps", "Deployment", "deployments", true),
            info("apps", "ReplicaSet", "replicasets", true),
            info("example.com", "Widget", "widgets", true),
        ]
    }

    fn item(group: &str, kind: &str, plural: &str, object: Value) -> BackupItem {
        let namespace = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .map(str::to_owned);
        BackupItem {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            resource: plural.into(),
            namespace,
            name: object["metadata"]["name"].as_str().unwrap().to_owned(),
            object,
        }
    }

    fn owner(kind: &str, name: &str, uid: &str) -> Value {
        json!([{"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": uid, "controller": true}])
    }

    /// A realistic "shop" namespace as Velero backs it up: a deployment with its replica set
    /// and pods (owner references), a service, config, a secret, a claim, a service account,
    /// an event, the Namespace object and a cluster-scoped PV.
    fn shop_backup() -> Vec<BackupItem> {
        let apps = json!({"app": "web"});
        vec![
            item(
                "",
                "Namespace",
                "namespaces",
                json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "shop", "uid": "ns-1", "labels": {"tenant": "shop"}},
                "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}),
            ),
            item(
                "apps",
                "Deployment",
                "deployments",
                json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "shop", "uid": "dep-1", "labels": apps, "resourceVersion": "10"},
                "spec": {"replicas": 2, "selector": {"matchLabels": apps},
                         "template": {"metadata": {"labels": apps}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}}},
                "status": {"readyReplicas": 2}}),
            ),
            item(
                "apps",
                "ReplicaSet",
                "replicasets",
                json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": "web-5d4f", "namespace": "shop", "uid": "rs-1", "labels": apps,
                             "ownerReferences": owner("Deployment", "web", "dep-1")},
                "spec": {"replicas": 2, "selector": {"matchLabels": apps}}}),
            ),
            item(
                "",
                "Pod",
                "pods",
                json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "web-5d4f-a", "namespace": "shop", "uid": "pod-a", "labels": apps,
                             "ownerReferences": owner("ReplicaSet", "web-5d4f", "rs-1")},
                "spec": {"nodeName": "node-1", "containers": [{"name": "web", "image": "nginx"}]},
                "status": {"phase": "Running"}}),
            ),
            item(
                "",
                "Pod",
                "pods",
                json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "web-5d4f-b", "namespace": "shop", "uid": "pod-b", "labels": apps,
                             "ownerReferences": owner("ReplicaSet", "web-5d4f", "rs-1")},
                "spec": {"nodeName": "node-2", "containers": [{"name": "web", "image": "nginx"}]},
                "status": {"phase": "Running"}}),
            ),
            item(
                "",
                "Pod",
                "pods",
                json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "migrate-x", "namespace": "shop", "uid": "pod-m"},
                "spec": {"containers": [{"name": "m", "image": "migrate"}]},
                "status": {"phase": "Succeeded"}}),
            ),
            item(
                "",
                "Service",
                "services",
                json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "web", "namespace": "shop", "uid": "svc-1", "labels": apps},
                "spec": {"clusterIP": "10.0.0.7", "clusterIPs": ["10.0.0.7"], "selector": apps,
                         "ports": [{"port": 80, "protocol": "TCP"}]}}),
            ),
            item(
                "",
                "ConfigMap",
                "configmaps",
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "web-config", "namespace": "shop", "uid": "cm-1", "labels": apps},
                "data": {"greeting": "hello"}}),
            ),
            item(
                "",
                "ConfigMap",
                "configmaps",
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "feature-flags", "namespace": "shop", "uid": "cm-2"},
                "data": {"beta": "off"}}),
            ),
            item(
                "",
                "Secret",
                "secrets",
                json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "web-credentials", "namespace": "shop", "uid": "sec-1", "labels": apps},
                "type": "Opaque", "data": {"password": "czNjcjN0"}}),
            ),
            item(
                "",
                "PersistentVolumeClaim",
                "persistentvolumeclaims",
                json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": "web-data", "namespace": "shop", "uid": "pvc-1", "labels": apps},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
            ),
            item(
                "",
                "ServiceAccount",
                "serviceaccounts",
                json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": "web", "namespace": "shop", "uid": "sa-1", "labels": apps},
                "imagePullSecrets": [{"name": "registry"}]}),
            ),
            item(
                "",
                "Event",
                "events",
                json!({"apiVersion": "v1", "kind": "Event",
                "metadata": {"name": "web.17a", "namespace": "shop", "uid": "ev-1"}, "reason": "Scheduled"}),
            ),
            item(
                "",
                "PersistentVolume",
                "persistentvolumes",
                json!({"apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": {"name": "pv-7", "uid": "pv-1"},
                "spec": {"persistentVolumeReclaimPolicy": "Retain",
                         "claimRef": {"namespace": "shop", "name": "web-data"}}}),
            ),
        ]
    }

    fn spec(value: Value) -> RestoreSpec {
        serde_json::from_value(value).unwrap()
    }

    fn plan(spec_json: Value) -> RestorePlan {
        RestorePlan::new(
            shop_backup(),
            &spec(spec_json),
            &discovery(),
            "nightly",
            "nightly-restore",
        )
        .unwrap()
    }

    fn line(entry: &PreviewEntry) -> String {
        format!(
            "{}/{}/{} {:?}:{:?}",
            crate::manifest::selection::group_resource(&entry.group, &entry.resource),
            entry
                .target_namespace
                .as_deref()
                .or(entry.namespace.as_deref())
                .unwrap_or("-"),
            entry.name,
            entry.action,
            entry.reason
        )
    }

    fn lines(preview: &RestorePreview) -> Vec<String> {
        preview.entries.iter().map(line).collect()
    }

    /// The cluster where the target namespace exists and holds `objects`.
    fn cluster(namespace: &str, objects: &[(&str, Value)]) -> LiveObjects {
        let mut live = LiveObjects::new();
        live.record_object(
            "namespaces",
            None,
            namespace,
            Some(json!({"metadata": {"name": namespace}})),
        );
        for info in discovery() {
            let group_resource = info.group_resource();
            if info.namespaced {
                let listed = objects
                    .iter()
                    .filter(|(gr, _)| *gr == group_resource)
                    .map(|(_, o)| o.clone())
                    .collect();
                live.record_list(&group_resource, Some(namespace), listed);
            } else {
                live.record_list(&group_resource, None, Vec::new());
            }
        }
        live
    }

    fn find<'a>(preview: &'a RestorePreview, kind: &str, name: &str) -> &'a PreviewEntry {
        preview
            .entries
            .iter()
            .find(|e| e.kind == kind && e.name == name)
            .unwrap_or_else(|| panic!("no {kind} {name} in {:?}", lines(preview)))
    }

    /// What the cluster holds for a backed-up object: the same object with new server fields.
    fn in_cluster(backup: &[BackupItem], kind: &str, name: &str) -> Value {
        let mut object = backup
            .iter()
            .find(|i| i.kind == kind && i.name == name)
            .unwrap()
            .object
            .clone();
        object["metadata"]["uid"] = json!("live-uid");
        object["metadata"]["resourceVersion"] = json!("999");
        object["metadata"]["creationTimestamp"] = json!("2026-03-01T00:00:00Z");
        object
    }

    #[test]
    fn into_an_empty_namespace_everything_is_created_in_velero_order() {
        let preview = preview_restore(
            &plan(json!({"backupName": "nightly"})),
            &cluster("shop", &[]),
        );
        assert_eq!(
            lines(&preview),
            [
                // Cluster-scoped items come first within a rank; the PV is restored (Retain).
                "persistentvolumes/-/pv-7 Create:Absent",
                "namespaces/-/shop Skip:NamespaceExists",
                "persistentvolumeclaims/shop/web-data Create:Absent",
                "serviceaccounts/shop/web Create:Absent",
                "secrets/shop/web-credentials Create:Absent",
                "configmaps/shop/feature-flags Create:Absent",
                "configmaps/shop/web-config Create:Absent",
                "pods/shop/migrate-x Skip:Completed",
                // Velero's priorities: pods before their replica set, which comes before its
                // deployment (alphabetical types come after the high-priority list).
                "pods/shop/web-5d4f-a Create:Absent",
                "pods/shop/web-5d4f-b Create:Absent",
                "replicasets.apps/shop/web-5d4f Create:Absent",
                "services/shop/web Create:Absent",
                "deployments.apps/shop/web Create:Absent",
                "events/shop/web.17a Skip:NeverRestored",
            ]
        );
        assert_eq!(
            find(&preview, "Pod", "migrate-x").message,
            "shop/migrate-x is complete - skipping"
        );
        assert!(!find(&preview, "Pod", "migrate-x").warning);
        assert_eq!(
            find(&preview, "ConfigMap", "web-config").message,
            "Attempting to restore ConfigMap: web-config"
        );
        assert_eq!(
            preview.counts,
            PreviewCounts {
                total: 12,
                create: 11,
                skip: 1,
                excluded: 1,
                ..PreviewCounts::default()
            }
        );
    }

    #[test]
    fn prepared_objects_follow_velero_and_target_the_preferred_version() {
        let plan = plan(json!({"backupName": "nightly"}));
        let pod = plan
            .entries()
            .iter()
            .find(|e| e.item.name == "web-5d4f-a")
            .unwrap();
        let PlannedStep::Apply { desired, status } = &pod.step else {
            panic!("pods are restored: {:?}", pod.step);
        };
        assert!(desired["metadata"].get("ownerReferences").is_none());
        assert!(desired["metadata"].get("uid").is_none());
        assert!(desired["spec"].get("nodeName").is_none());
        assert_eq!(
            desired["metadata"]["labels"]["velero.io/restore-name"],
            "nightly-restore"
        );
        assert_eq!(*status, None);
        assert_eq!(plan.total_items(), 12);
        // Namespaces are ensured once, on the first item restored into them.
        let ensured: Vec<&str> = plan
            .entries()
            .iter()
            .filter_map(|e| e.ensure_namespace.as_ref().map(|n| n.name.as_str()))
            .collect();
        assert_eq!(ensured, ["shop"]);
    }

    #[test]
    fn namespace_mapping_targets_and_creates_the_new_namespace() {
        let plan = plan(
            json!({"backupName": "nightly", "namespaceMapping": {"shop": "shop-copy"},
                               "includedResources": ["configmaps", "secrets", "deployments"]}),
        );
        let mut live = LiveObjects::new();
        live.record_object("namespaces", None, "shop-copy", None);
        let preview = preview_restore(&plan, &live);
        assert_eq!(
            lines(&preview)
                .into_iter()
                .filter(|l| !l.contains("Excluded") && !l.contains("NeverRestored"))
                .collect::<Vec<_>>(),
            [
                "namespaces/-/shop-copy Create:Absent",
                "secrets/shop-copy/web-credentials Create:Absent",
                "configmaps/shop-copy/feature-flags Create:Absent",
                "configmaps/shop-copy/web-config Create:Absent",
                "deployments.apps/shop-copy/web Create:Absent",
            ]
        );
        let config = find(&preview, "ConfigMap", "web-config");
        assert_eq!(config.namespace.as_deref(), Some("shop"));
        assert_eq!(config.target_namespace.as_deref(), Some("shop-copy"));
        assert_eq!(preview.counts.namespaces_created, 1);
        assert_eq!(preview.counts.excluded, 9);
        // The namespace is created from the backed-up one.
        let ensure = plan
            .entries()
            .iter()
            .find_map(|e| e.ensure_namespace.as_ref())
            .unwrap();
        assert_eq!(ensure.object["metadata"]["name"], "shop-copy");
        assert_eq!(ensure.object["metadata"]["labels"]["tenant"], "shop");
        // Cluster-scoped types stay out when only some namespaces... here the resource filter.
        assert_eq!(
            find(&preview, "PersistentVolume", "pv-7").reason,
            RestoreReason::ResourceExcluded
        );
    }

    #[test]
    fn filters_exclude_with_the_reason() {
        let preview = preview_restore(
            &plan(
                json!({"backupName": "nightly", "includedNamespaces": ["shop"],
                         "labelSelector": {"matchLabels": {"app": "web"}}}),
            ),
            &cluster("shop", &[]),
        );
        assert_eq!(
            find(&preview, "ConfigMap", "feature-flags").reason,
            RestoreReason::LabelSelector
        );
        assert_eq!(
            find(&preview, "ConfigMap", "web-config").action,
            RestoreAction::Create
        );
        // Some namespaces only and includeClusterResources unset: no cluster-scoped items.
        let pv = find(&preview, "PersistentVolume", "pv-7");
        assert_eq!(pv.reason, RestoreReason::ClusterScopedExcluded);
        assert_eq!(pv.message, "Not restoring item because it's cluster-scoped");

        let preview = preview_restore(
            &plan(json!({"backupName": "nightly", "excludedNamespaces": ["shop"]})),
            &cluster("shop", &[]),
        );
        let config = find(&preview, "ConfigMap", "web-config");
        assert_eq!(config.reason, RestoreReason::NamespaceExcluded);
        assert_eq!(config.action, RestoreAction::Skip);
        assert!(!preview.entries.iter().any(|e| e.kind == "Namespace"));
        // Excluding a namespace also leaves cluster-scoped items out (not "every namespace").
        assert_eq!(
            find(&preview, "PersistentVolume", "pv-7").reason,
            RestoreReason::ClusterScopedExcluded
        );
        assert_eq!(preview.counts.total, 0, "{:?}", lines(&preview));
    }

    #[test]
    fn existing_objects_without_a_policy_are_skipped_with_velero_warnings() {
        let backup = shop_backup();
        let mut changed = in_cluster(&backup, "ConfigMap", "web-config");
        changed["data"]["greeting"] = json!("changed by hand");
        let mut status_only = in_cluster(&backup, "ConfigMap", "feature-flags");
        status_only["status"] = json!({"observed": true});
        let live = cluster(
            "shop",
            &[
                ("configmaps", changed),
                ("configmaps", status_only),
                ("secrets", in_cluster(&backup, "Secret", "web-credentials")),
            ],
        );
        let preview = preview_restore(&plan(json!({"backupName": "nightly"})), &live);
        let config = find(&preview, "ConfigMap", "web-config");
        assert_eq!(
            (config.action, config.reason),
            (RestoreAction::Skip, RestoreReason::AlreadyExists)
        );
        assert!(config.warning);
        assert_eq!(
            config.message,
            "could not restore, ConfigMap:web-config already exists. Warning: the in-cluster version is different than the backed-up version"
        );
        // Differing only in its status counts as identical.
        let same = find(&preview, "ConfigMap", "feature-flags");
        assert_eq!(
            (same.action, same.reason),
            (RestoreAction::Skip, RestoreReason::Identical)
        );
        assert!(!same.warning);
        let secret = find(&preview, "Secret", "web-credentials");
        assert_eq!(secret.reason, RestoreReason::Identical);
        assert_eq!(
            secret.message,
            "Restore of Secret, web-credentials skipped: it already exists in the cluster and is the same as the backed up version"
        );
        assert_eq!(preview.counts.warnings, 1);
        assert_eq!(preview.counts.skip, 4);

        let none = preview_restore(
            &plan(json!({"backupName": "nightly", "existingResourcePolicy": "none"})),
            &live,
        );
        assert_eq!(
            find(&none, "ConfigMap", "web-config").message,
            "could not restore, ConfigMap \"web-config\" already exists. Warning: the in-cluster version is different than the backed-up version"
        );
    }

    #[test]
    fn policy_update_patches_changed_and_relabels_unchanged_objects() {
        let backup = shop_backup();
        let mut changed = in_cluster(&backup, "ConfigMap", "web-config");
        changed["data"]["greeting"] = json!("changed by hand");
        let live = cluster(
            "shop",
            &[
                ("configmaps", changed),
                (
                    "configmaps",
                    in_cluster(&backup, "ConfigMap", "feature-flags"),
                ),
            ],
        );
        let plan = plan(json!({"backupName": "nightly", "existingResourcePolicy": "update"}));
        let preview = preview_restore(&plan, &live);
        let config = find(&preview, "ConfigMap", "web-config");
        assert_eq!(
            (config.action, config.reason),
            (RestoreAction::Update, RestoreReason::PolicyUpdate)
        );
        assert_eq!(
            config.message,
            "restore API has resource policy defined update , executing restore workflow accordingly for changed resource ConfigMap shop/web-config"
        );
        let flags = find(&preview, "ConfigMap", "feature-flags");
        assert_eq!(
            (flags.action, flags.reason),
            (RestoreAction::Update, RestoreReason::RestoreLabels)
        );
        assert_eq!(preview.counts.update, 2);

        // The decision carries the patch the restore applies.
        let entry = plan
            .entries()
            .iter()
            .find(|e| e.item.name == "web-config")
            .unwrap();
        let mut changed = in_cluster(&backup, "ConfigMap", "web-config");
        changed["data"]["greeting"] = json!("changed by hand");
        let decision = entry.decide(Some(&changed), plan.policy());
        assert_eq!(decision.patch.unwrap()["data"]["greeting"], "hello");
    }

    #[test]
    fn existing_service_accounts_are_merged_and_pods_differ_by_their_node() {
        let backup = shop_backup();
        let mut account = in_cluster(&backup, "ServiceAccount", "web");
        account.as_object_mut().unwrap().remove("imagePullSecrets");
        account["secrets"] = json!([{"name": "web-token-new"}]);
        let live = cluster(
            "shop",
            &[
                ("serviceaccounts", account),
                ("pods", in_cluster(&backup, "Pod", "web-5d4f-a")),
            ],
        );
        let preview = preview_restore(&plan(json!({"backupName": "nightly"})), &live);
        let account = find(&preview, "ServiceAccount", "web");
        assert_eq!(
            (account.action, account.reason),
            (RestoreAction::Update, RestoreReason::ServiceAccountMerged)
        );
        assert_eq!(
            account.message,
            "ServiceAccount shop/web successfully updated"
        );
        // The running pod keeps its node; the restored one would not: they differ.
        assert_eq!(
            find(&preview, "Pod", "web-5d4f-a").reason,
            RestoreReason::AlreadyExists
        );
    }

    #[test]
    fn unreadable_objects_are_undetermined_and_new_namespaces_hold_nothing() {
        let plan =
            plan(json!({"backupName": "nightly", "includedResources": ["configmaps", "secrets"]}));
        let mut live = LiveObjects::new();
        for read in plan.live_reads(&discovery()) {
            let outcome = match (read.resource.plural.as_str(), &read.name) {
                ("namespaces", _) => {
                    ListOutcome::Listed(vec![json!({"metadata": {"name": "shop"}})])
                }
                ("secrets", None) => ListOutcome::Forbidden("secrets is forbidden".into()),
                _ => ListOutcome::Listed(Vec::new()),
            };
            live.record(&read, outcome);
        }
        let preview = preview_restore(&plan, &live);
        let secret = find(&preview, "Secret", "web-credentials");
        assert_eq!(
            (secret.action, secret.reason),
            (RestoreAction::Undetermined, RestoreReason::LiveStateUnknown)
        );
        assert_eq!(
            secret.message,
            "cannot tell whether Secret shop/web-credentials exists: secrets is forbidden"
        );
        assert_eq!(
            find(&preview, "ConfigMap", "web-config").action,
            RestoreAction::Create
        );
        assert_eq!(preview.counts.undetermined, 1);

        // Into a namespace the restore creates, nothing exists yet whatever could be read.
        let mut live = LiveObjects::new();
        live.record_object("namespaces", None, "shop", None);
        let preview = preview_restore(&plan, &live);
        assert_eq!(preview.counts.undetermined, 0);
        assert_eq!(preview.counts.create, 3);
        assert_eq!(preview.counts.namespaces_created, 1);
    }

    #[test]
    fn a_new_namespace_already_holds_its_default_service_account() {
        let mut items = shop_backup();
        items.push(item("", "ServiceAccount", "serviceaccounts", json!({"apiVersion": "v1",
            "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": "shop", "uid": "sa-0"}})));
        items.push(item(
            "",
            "ConfigMap",
            "configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kube-root-ca.crt", "namespace": "shop", "uid": "cm-ca"},
            "data": {"ca.crt": "-----BEGIN CERTIFICATE-----"}}),
        ));
        let plan = RestorePlan::new(
            items,
            &spec(json!({"backupName": "nightly", "namespaceMapping": {"shop": "shop-copy"}})),
            &discovery(),
            "nightly",
            "r",
        )
        .unwrap();
        let mut live = LiveObjects::new();
        live.record_object("namespaces", None, "shop-copy", None);
        let preview = preview_restore(&plan, &live);
        let default = find(&preview, "ServiceAccount", "default");
        assert_eq!(
            (default.action, default.reason),
            (RestoreAction::Skip, RestoreReason::Identical)
        );
        // Only `default` comes with the namespace.
        assert_eq!(
            find(&preview, "ServiceAccount", "web").action,
            RestoreAction::Create
        );
        assert_eq!(
            find(&preview, "ConfigMap", ROOT_CA_CONFIG_MAP).action,
            RestoreAction::Undetermined
        );
    }

    #[test]
    fn live_reads_list_each_type_once_per_target_namespace() {
        let plan = plan(
            json!({"backupName": "nightly", "namespaceMapping": {"shop": "shop-copy"},
                               "includedNamespaces": ["shop"]}),
        );
        let reads: Vec<String> = plan
            .live_reads(&discovery())
            .iter()
            .map(|r| {
                format!(
                    "{}@{}{}",
                    r.resource.group_resource(),
                    r.namespace.as_deref().unwrap_or("*"),
                    r.name
                        .as_deref()
                        .map(|n| format!("/{n}"))
                        .unwrap_or_default()
                )
            })
            .collect();
        assert_eq!(
            reads,
            [
                "namespaces@*/shop-copy",
                "persistentvolumeclaims@shop-copy",
                "serviceaccounts@shop-copy",
                "secrets@shop-copy",
                "configmaps@shop-copy",
                "pods@shop-copy",
                "replicasets.apps@shop-copy",
                "services@shop-copy",
                "deployments.apps@shop-copy",
            ]
        );
    }

    #[test]
    fn owners_come_before_dependents_within_a_rank_only() {
        let widget = |name: &str, uid: &str, owner_uid: Option<&str>| {
            let mut object = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": name, "namespace": "shop", "uid": uid}});
            if let Some(owner_uid) = owner_uid {
                object["metadata"]["ownerReferences"] = json!([{"apiVersion": "example.com/v1", "kind": "Widget", "name": "x", "uid": owner_uid}]);
            }
            item("example.com", "Widget", "widgets", object)
        };
        let mut items = shop_backup();
        items.extend([
            widget("a-leaf", "w-leaf", Some("w-mid")),
            widget("m-mid", "w-mid", Some("w-root")),
            widget("b-free", "w-free", None),
            widget("z-root", "w-root", None),
            // An ownership cycle keeps Velero's (name) order.
            widget("c-cycle", "w-c", Some("w-d")),
            widget("d-cycle", "w-d", Some("w-c")),
        ]);
        let order: Vec<String> = restore_sequence(items)
            .iter()
            .map(|i| format!("{}/{}", i.group_resource(), i.name))
            .collect();
        let widgets: Vec<&str> = order
            .iter()
            .filter_map(|o| o.strip_prefix("widgets.example.com/"))
            .collect();
        assert_eq!(
            widgets,
            ["b-free", "z-root", "m-mid", "a-leaf", "c-cycle", "d-cycle"]
        );
        // Across ranks Velero's priorities stand: pods before their replica set.
        let position = |name: &str| order.iter().position(|o| o == name).unwrap();
        assert!(position("pods/web-5d4f-a") < position("replicasets.apps/web-5d4f"));
        assert!(position("replicasets.apps/web-5d4f") < position("deployments.apps/web"));
        assert!(position("deployments.apps/web") < position("widgets.example.com/b-free"));
    }

    #[test]
    fn unserved_types_fail_and_unknown_policies_leave_objects_alone() {
        let mut items = shop_backup();
        items.push(item(
            "example.com",
            "Gadget",
            "gadgets",
            json!({"metadata": {"name": "g", "namespace": "shop"}}),
        ));
        let backup = shop_backup();
        let mut changed = in_cluster(&backup, "ConfigMap", "web-config");
        changed["data"]["greeting"] = json!("changed");
        let plan = RestorePlan::new(
            items,
            &spec(json!({"backupName": "nightly", "existingResourcePolicy": "replace"})),
            &discovery(),
            "nightly",
            "r",
        )
        .unwrap();
        let preview = preview_restore(&plan, &cluster("shop", &[("configmaps", changed)]));
        let gadget = find(&preview, "Gadget", "g");
        assert_eq!(
            (gadget.action, gadget.reason),
            (RestoreAction::Fail, RestoreReason::CannotRestore)
        );
        assert_eq!(
            gadget.message,
            "the cluster does not serve gadgets.example.com"
        );
        assert_eq!(
            find(&preview, "ConfigMap", "web-config").reason,
            RestoreReason::UnsupportedPolicy
        );
        assert_eq!(preview.counts.fail, 1);
    }

    #[test]
    fn a_later_item_sees_what_the_restore_wrote_before() {
        // Two backed-up namespaces mapped onto one: the second config map of the same name
        // finds the first one created.
        let mut items = shop_backup();
        items.push(item(
            "",
            "ConfigMap",
            "configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "web-config", "namespace": "shop-old", "uid": "cm-9"},
            "data": {"greeting": "old"}}),
        ));
        let plan = RestorePlan::new(
            items,
            &spec(
                json!({"backupName": "nightly", "namespaceMapping": {"shop-old": "shop"},
                         "includedResources": ["configmaps"]}),
            ),
            &discovery(),
            "nightly",
            "r",
        )
        .unwrap();
        let preview = preview_restore(&plan, &cluster("shop", &[]));
        let configs: Vec<String> = preview
            .entries
            .iter()
            .filter(|e| e.name == "web-config")
            .map(line)
            .collect();
        assert_eq!(
            configs,
            [
                "configmaps/shop/web-config Create:Absent",
                "configmaps/shop/web-config Skip:AlreadyExists",
            ]
        );
    }

    #[test]
    fn live_objects_know_what_was_read() {
        let mut live = LiveObjects::new();
        live.record_list(
            "configmaps",
            Some("shop"),
            vec![json!({"metadata": {"name": "a"}})],
        );
        live.record_object("namespaces", None, "gone", None);
        let read = LiveRead {
            resource: info("", "Secret", "secrets", true),
            namespace: Some("shop".into()),
            name: None,
        };
        live.record(&read, ListOutcome::Failed("timeout".into()));
        assert!(matches!(
            live.lookup("configmaps", Some("shop"), "a"),
            Live::Present(_)
        ));
        assert_eq!(live.lookup("configmaps", Some("shop"), "b"), Live::Absent);
        assert_eq!(live.lookup("namespaces", None, "gone"), Live::Absent);
        assert_eq!(
            live.lookup("secrets", Some("shop"), "s"),
            Live::Unknown("timeout")
        );
        assert_eq!(
            live.lookup("configmaps", Some("other"), "a"),
            Live::Unknown(NOT_READ)
        );
    }

    #[test]
    fn previews_serialize_in_camel_case() {
        let preview = preview_restore(
            &plan(json!({"backupName": "nightly", "namespaceMapping": {"shop": "shop-copy"}})),
            &LiveObjects::new(),
        );
        let json = serde_json::to_value(&preview).unwrap();
        assert_eq!(json["entries"][0]["kind"], "PersistentVolume");
        assert_eq!(json["entries"][0]["action"], "Undetermined");
        let config = json["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "web-config")
            .unwrap();
        assert_eq!(config["targetNamespace"], "shop-copy");
        assert_eq!(config["reason"], "LiveStateUnknown");
        assert!(config.get("warning").is_none());
        assert!(json["counts"]["namespacesCreated"].is_number());
        let back: RestorePreview = serde_json::from_value(json).unwrap();
        assert_eq!(back, preview);
    }

    #[test]
    fn merge_patches_apply_as_rfc_7386() {
        let mut target = json!({"a": 1, "b": {"c": 2, "d": 3}, "e": [1]});
        apply_merge_patch(
            &mut target,
            &json!({"a": null, "b": {"c": 5, "x": {"y": null, "z": 1}}, "e": [2]}),
        );
        assert_eq!(
            target,
            json!({"b": {"c": 5, "d": 3, "x": {"z": 1}}, "e": [2]})
        );
    }
}
