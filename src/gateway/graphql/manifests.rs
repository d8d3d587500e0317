//! GraphQL types and resolvers of backup manifests (seed 002): `backupManifest` (the stored
//! manifest's summary, counts by kind and a page of its items with the contents browser's
//! filters), `backupOwnerGraph`, `backupDiff`, `backupDryRun`, `restorePreview`, and
//! `backupOverlaps` / `restoreOverlaps` (whether a pending operation waits on running ones) on
//! `Query`.
//!
//! Each resolver calls the same [`GatewayService`] operation as REST, with the caller, so the
//! access checks and answers are REST's: a stored manifest is read like getting the
//! NonAdminBackup, a dry-run or preview like creating the object it previews (nothing is
//! created: they are queries). The types here wrap the service's views and the pure manifest
//! types, whose enums are GraphQL enums themselves (like their `ToSchema`, a derive with no
//! dependency on the gateway); labels and annotations are JSON objects, as on
//! [`super::types`]' `Metadata`.
//!
//! Cost: manifest items are leaf data already in memory (no resolver below them fetches
//! anything), so an items page costs one item's selection per 20 items asked for, not per
//! item; the resolvers that read the history store or the cluster carry a fixed cost
//! (`backupDryRun` and `restorePreview`, which read the namespace's live objects, the most).
//!
//! [`GatewayService`]: crate::gateway::service::GatewayService

use std::collections::BTreeMap;
use std::sync::Arc;

use async_graphql::{Context, Json, Object};
use chrono::SecondsFormat;
use serde_json::Value;

use super::errors::GqlResult;
use super::{caller_of, check_name, check_namespace, service_of};
use crate::gateway::error::GatewayError;
use crate::gateway::manifests::{
    BackupDiff, BackupDryRun, ContentsPage, ContentsQuery, OperationOverlaps, RestorePreviewView,
    contents_page,
};
use crate::manifest::collect::{UnreadableList, UnreadableReason};
use crate::manifest::diff::{ChangedField, ChangedItem};
use crate::manifest::export::{ManifestBackup, ManifestDocument};
use crate::manifest::graph::{MissingOwner, OwnerEdge, OwnerGraphView};
use crate::manifest::item::{ItemIdentity, KindCount, ManifestItem};
use crate::manifest::overlap::OperationOverlap;
use crate::manifest::preview::{PreviewCounts, PreviewEntry, RestoreAction, RestoreReason};
use crate::manifest::visibility::HiddenItems;

/// Items per unit of an items page's cost (see the module's documentation).
pub const ITEMS_PER_COST_UNIT: usize = 20;

// -------------------------------------------------------------------------------------------
// Arguments
// -------------------------------------------------------------------------------------------

/// The contents browser's query from `backupManifest.items`' arguments: REST's `ContentsQuery`
/// (`q` is the name text, `after` the previous page's `continue`). A negative `limit` is out
/// of range like 0.
pub fn contents_query(
    kind: Option<String>,
    q: Option<String>,
    label_selector: Option<String>,
    limit: Option<i32>,
    after: Option<String>,
) -> ContentsQuery {
    ContentsQuery {
        kind,
        text: q,
        selector: label_selector,
        limit: limit.map(|limit| usize::try_from(limit).unwrap_or(0)),
        continue_token: after,
    }
}

/// One page of `document` for `query`, with errors naming this API's arguments: the token
/// REST takes as `continue` is `after` here.
pub fn contents(
    document: &ManifestDocument,
    query: &ContentsQuery,
) -> Result<ContentsPage, GatewayError> {
    contents_page(document, query).map_err(|error| {
        let about_continue = error
            .field_errors()
            .iter()
            .any(|field| field.field == "continue");
        if about_continue {
            GatewayError::invalid_field(
                "after",
                "after is not a cursor this API gave; pass the `continue` of the previous page",
            )
        } else {
            error
        }
    })
}

/// The cost of an items page of `limit` items whose selection costs `child` (see the
/// module's documentation); out-of-range limits are refused by the resolver, not here.
pub fn items_complexity(limit: Option<i32>, child: usize) -> usize {
    let limit = usize::try_from(limit.unwrap_or(100))
        .unwrap_or(1)
        .clamp(1, crate::gateway::manifests::MAX_CONTENTS_LIMIT);
    5 + limit.div_ceil(ITEMS_PER_COST_UNIT) * child
}

// -------------------------------------------------------------------------------------------
// Items and their pieces
// -------------------------------------------------------------------------------------------

/// One object of a backup, reduced to its selectable fields.
pub struct ManifestItemView<'a>(pub &'a ManifestItem);

#[Object(name = "ManifestItem")]
impl ManifestItemView<'_> {
    /// `<resource>[.<group>]/<namespace or "cluster">/<version>/<name>`: the item's path in
    /// Velero's tarball and its key in the manifest (items are sorted by it).
    async fn key(&self) -> String {
        self.0.key()
    }
    /// API group; empty for the core group.
    async fn group(&self) -> &str {
        &self.0.group
    }
    /// Version the backup stored.
    async fn version(&self) -> &str {
        &self.0.version
    }
    /// `apiVersion` (`<group>/<version>`, or `<version>` for the core group).
    async fn api_version(&self) -> String {
        self.0.api_version()
    }
    /// Kind, e.g. `Deployment`.
    async fn kind(&self) -> &str {
        &self.0.kind
    }
    /// Plural resource name, e.g. `deployments`.
    async fn resource(&self) -> &str {
        &self.0.resource
    }
    /// `<resource>[.<group>]`, as Velero's filters name types.
    async fn group_resource(&self) -> String {
        self.0.group_resource()
    }
    /// Namespace; null for cluster-scoped objects.
    async fn namespace(&self) -> Option<&str> {
        self.0.namespace.as_deref()
    }
    /// Object name.
    async fn name(&self) -> &str {
        &self.0.name
    }
    /// Labels at backup time.
    async fn labels(&self) -> Json<&BTreeMap<String, String>> {
        Json(&self.0.labels)
    }
    /// Annotations at backup time.
    async fn annotations(&self) -> Json<&BTreeMap<String, String>> {
        Json(&self.0.annotations)
    }
    /// UIDs of the objects named in `metadata.ownerReferences`.
    async fn owners(&self) -> &[String] {
        &self.0.owners
    }
    /// The object's UID at backup time (links owners; never used to restore).
    async fn uid(&self) -> Option<&str> {
        self.0.uid.as_deref()
    }
}

fn item_views(items: &[ManifestItem]) -> Vec<ManifestItemView<'_>> {
    items.iter().map(ManifestItemView).collect()
}

/// Which object an item is, whatever version it was stored at.
pub struct ItemIdentityView<'a>(pub &'a ItemIdentity);

#[Object(name = "ItemIdentity")]
impl ItemIdentityView<'_> {
    /// `<resource>[.<group>]`.
    async fn group_resource(&self) -> &str {
        &self.0.group_resource
    }
    /// Namespace; null for cluster-scoped objects.
    async fn namespace(&self) -> Option<&str> {
        self.0.namespace.as_deref()
    }
    /// Object name.
    async fn name(&self) -> &str {
        &self.0.name
    }
}

/// How many items of one kind.
pub struct KindCountView<'a>(pub &'a KindCount);

#[Object(name = "KindCount")]
impl KindCountView<'_> {
    /// API group; empty for the core group.
    async fn group(&self) -> &str {
        &self.0.group
    }
    /// Kind.
    async fn kind(&self) -> &str {
        &self.0.kind
    }
    /// Plural resource name.
    async fn resource(&self) -> &str {
        &self.0.resource
    }
    /// Number of items.
    async fn count(&self) -> u64 {
        self.0.count
    }
}

fn count_views(counts: &[KindCount]) -> Vec<KindCountView<'_>> {
    counts.iter().map(KindCountView).collect()
}

/// Which backup a manifest describes.
pub struct ManifestBackupView<'a>(pub &'a ManifestBackup);

#[Object(name = "ManifestBackup")]
impl ManifestBackupView<'_> {
    /// The tenant namespace of the NonAdminBackup.
    async fn namespace(&self) -> &str {
        &self.0.namespace
    }
    /// The NonAdminBackup's name.
    async fn name(&self) -> &str {
        &self.0.name
    }
    /// The Velero Backup's name.
    async fn velero_backup(&self) -> &str {
        &self.0.velero_backup
    }
    /// When the Velero Backup completed (RFC 3339).
    async fn completed_at(&self) -> Option<String> {
        self.0
            .completed_at
            .map(|at| at.to_rfc3339_opts(SecondsFormat::AutoSi, true))
    }
}

/// The objects a new backup or restore shares with an operation of the namespace that is
/// running: it would wait on it.
pub struct OperationOverlapView<'a>(pub &'a OperationOverlap);

#[Object(name = "OperationOverlap")]
impl OperationOverlapView<'_> {
    /// The running operation (`backup <name>` or `restore <name>`, of the same namespace).
    async fn operation(&self) -> &str {
        &self.0.operation
    }
    /// How many objects are shared.
    async fn total(&self) -> u64 {
        self.0.total
    }
    /// The first shared objects, in identity order.
    async fn items(&self) -> Vec<ItemIdentityView<'_>> {
        self.0.items.iter().map(ItemIdentityView).collect()
    }
    /// Whether `items` stops short of `total`.
    async fn truncated(&self) -> bool {
        self.0.truncated
    }
}

fn overlap_views(overlaps: &[OperationOverlap]) -> Vec<OperationOverlapView<'_>> {
    overlaps.iter().map(OperationOverlapView).collect()
}

/// Items of a backup left out because the caller may not list them: counted, never named.
pub struct HiddenItemsView<'a>(pub &'a HiddenItems);

#[Object(name = "HiddenItems")]
impl HiddenItemsView<'_> {
    /// API group; empty for the core group.
    async fn group(&self) -> &str {
        &self.0.group
    }
    /// Plural resource.
    async fn resource(&self) -> &str {
        &self.0.resource
    }
    /// Kind.
    async fn kind(&self) -> &str {
        &self.0.kind
    }
    /// Namespace; null for cluster-scoped items.
    async fn namespace(&self) -> Option<&str> {
        self.0.namespace.as_deref()
    }
    /// How many items are hidden.
    async fn count(&self) -> u64 {
        self.0.count
    }
    /// Why, in a sentence (`3 Secret items hidden: you may not list secrets in team-a`).
    async fn message(&self) -> &str {
        &self.0.message
    }
}

fn hidden_views(hidden: &[HiddenItems]) -> Vec<HiddenItemsView<'_>> {
    hidden.iter().map(HiddenItemsView).collect()
}

// -------------------------------------------------------------------------------------------
// backupManifest
// -------------------------------------------------------------------------------------------

/// A completed backup's manifest, as the history store keeps it (also after the backup is
/// gone).
pub struct BackupManifestView(pub Arc<ManifestDocument>);

#[Object(name = "BackupManifest")]
impl BackupManifestView {
    /// `oadp.openshift.io/v1alpha1`.
    async fn api_version(&self) -> &str {
        &self.0.api_version
    }
    /// `BackupManifest`.
    async fn kind(&self) -> &str {
        &self.0.kind
    }
    /// The stored document's format version.
    async fn format_version(&self) -> u32 {
        self.0.format_version
    }
    /// The backup described.
    async fn backup(&self) -> ManifestBackupView<'_> {
        ManifestBackupView(&self.0.backup)
    }
    /// Items per kind, sorted by group then kind.
    async fn counts(&self) -> Vec<KindCountView<'_>> {
        count_views(&self.0.counts)
    }
    /// How many items of the backup the caller may see.
    async fn total(&self) -> u64 {
        self.0.items.len() as u64
    }
    /// Items the caller may not list, counted per resource (left out of `counts` and `items`).
    async fn hidden(&self) -> Vec<HiddenItemsView<'_>> {
        hidden_views(&self.0.hidden)
    }
    /// One page of the items in key order, filtered as REST's contents browser filters:
    /// `kind` (kind, plural or `resource.group`, case-insensitive), `q` (text in the name,
    /// case-insensitive), `labelSelector` (`app=web,tier!=db`); `limit` (default 100, 1 to
    /// 1000) and `after` (the previous page's `continue`) page.
    #[graphql(complexity = "items_complexity(limit, child_complexity)")]
    async fn items(
        &self,
        kind: Option<String>,
        q: Option<String>,
        label_selector: Option<String>,
        limit: Option<i32>,
        after: Option<String>,
    ) -> async_graphql::Result<ManifestContentsPage> {
        let query = contents_query(kind, q, label_selector, limit, after);
        Ok(ManifestContentsPage(contents(&self.0, &query).gql()?))
    }
}

/// One page of a backup's items.
pub struct ManifestContentsPage(pub ContentsPage);

#[Object]
impl ManifestContentsPage {
    /// Items in the backup.
    async fn total(&self) -> u64 {
        self.0.total
    }
    /// Items matching the filters (on every page).
    async fn matched(&self) -> u64 {
        self.0.matched
    }
    /// This page, in key order.
    async fn items(&self) -> Vec<ManifestItemView<'_>> {
        item_views(&self.0.items)
    }
    /// Pass as `after` for the next page; null on the last one.
    #[graphql(name = "continue")]
    async fn continue_token(&self) -> Option<&str> {
        self.0.continue_token.as_deref()
    }
    /// Items the caller may not list, counted per resource.
    async fn hidden(&self) -> Vec<HiddenItemsView<'_>> {
        hidden_views(&self.0.hidden)
    }
}

// -------------------------------------------------------------------------------------------
// backupOwnerGraph
// -------------------------------------------------------------------------------------------

/// A backup's owner graph: owners → dependents, from `metadata.ownerReferences`.
pub struct OwnerGraphResult(pub OwnerGraphView);

#[Object(name = "OwnerGraph")]
impl OwnerGraphResult {
    /// Every item's key, sorted.
    async fn nodes(&self) -> &[String] {
        &self.0.nodes
    }
    /// Ownership links, sorted by owner then dependent.
    async fn edges(&self) -> Vec<OwnerEdgeView<'_>> {
        self.0.edges.iter().map(OwnerEdgeView).collect()
    }
    /// Owner references to objects the backup does not hold.
    async fn missing_owners(&self) -> Vec<MissingOwnerView<'_>> {
        self.0.missing_owners.iter().map(MissingOwnerView).collect()
    }
}

/// One ownership link between two items of a backup.
pub struct OwnerEdgeView<'a>(pub &'a OwnerEdge);

#[Object(name = "OwnerEdge")]
impl OwnerEdgeView<'_> {
    /// Key of the owner.
    async fn owner(&self) -> &str {
        &self.0.owner
    }
    /// Key of the item it owns.
    async fn dependent(&self) -> &str {
        &self.0.dependent
    }
}

/// An owner reference to an object that is not in the backup.
pub struct MissingOwnerView<'a>(pub &'a MissingOwner);

#[Object(name = "MissingOwner")]
impl MissingOwnerView<'_> {
    /// Key of the item holding the reference.
    async fn dependent(&self) -> &str {
        &self.0.dependent
    }
    /// The owner UID it names.
    async fn owner_uid(&self) -> &str {
        &self.0.owner_uid
    }
}

// -------------------------------------------------------------------------------------------
// backupDiff
// -------------------------------------------------------------------------------------------

/// What changed from one backup (`against`) to a later one.
pub struct BackupDiffView(pub BackupDiff);

#[Object(name = "BackupDiff")]
impl BackupDiffView {
    /// The earlier backup (`against`).
    async fn from(&self) -> ManifestBackupView<'_> {
        ManifestBackupView(&self.0.from)
    }
    /// The later backup.
    async fn to(&self) -> ManifestBackupView<'_> {
        ManifestBackupView(&self.0.to)
    }
    /// Items only in the later backup, in identity order.
    async fn added(&self) -> Vec<ManifestItemView<'_>> {
        item_views(&self.0.diff.added)
    }
    /// Items only in the earlier backup, in identity order.
    async fn removed(&self) -> Vec<ManifestItemView<'_>> {
        item_views(&self.0.diff.removed)
    }
    /// Items in both whose fields differ, in identity order.
    async fn changed(&self) -> Vec<ChangedItemView<'_>> {
        self.0.diff.changed.iter().map(ChangedItemView).collect()
    }
    /// How many items are in both and the same.
    async fn unchanged(&self) -> u64 {
        self.0.diff.unchanged
    }
    /// Added, removed or changed items the caller may not list, counted per resource.
    async fn hidden(&self) -> Vec<HiddenItemsView<'_>> {
        hidden_views(&self.0.hidden)
    }
}

/// An object in both backups whose fields differ.
pub struct ChangedItemView<'a>(pub &'a ChangedItem);

#[Object(name = "ChangedItem")]
impl ChangedItemView<'_> {
    /// Which object.
    async fn identity(&self) -> ItemIdentityView<'_> {
        ItemIdentityView(&self.0.identity)
    }
    /// Which fields differ.
    async fn fields(&self) -> &[ChangedField] {
        &self.0.fields
    }
    /// The object in the earlier backup.
    async fn before(&self) -> ManifestItemView<'_> {
        ManifestItemView(&self.0.before)
    }
    /// The object in the later backup.
    async fn after(&self) -> ManifestItemView<'_> {
        ManifestItemView(&self.0.after)
    }
}

// -------------------------------------------------------------------------------------------
// backupDryRun
// -------------------------------------------------------------------------------------------

/// What a backup would take, before anything runs: its manifest from the namespace's live
/// objects as the caller can read them.
pub struct BackupDryRunView(pub BackupDryRun);

#[Object(name = "BackupDryRun")]
impl BackupDryRunView {
    /// `oadp.openshift.io/v1alpha1`.
    async fn api_version(&self) -> &str {
        &self.0.api_version
    }
    /// `BackupDryRun`.
    async fn kind(&self) -> &str {
        &self.0.kind
    }
    /// The NonAdminBackup as the API server would store it (validated, not stored).
    async fn backup(&self) -> Json<&Value> {
        Json(&self.0.backup)
    }
    /// Items per kind.
    async fn counts(&self) -> Vec<KindCountView<'_>> {
        count_views(&self.0.counts)
    }
    /// How many items the backup would take.
    async fn total_items(&self) -> u64 {
        self.0.total_items
    }
    /// The items, in key order (the manifest the backup would have).
    async fn items(&self) -> Vec<ManifestItemView<'_>> {
        item_views(&self.0.items)
    }
    /// Lists the caller could not read: their objects are missing from `items`, and the
    /// backup (run with Velero's identity) may take them.
    async fn unreadable(&self) -> Vec<UnreadableListView<'_>> {
        self.0.unreadable.iter().map(UnreadableListView).collect()
    }
    /// Running operations of this namespace sharing items with this backup: it would wait on
    /// them.
    async fn overlaps(&self) -> Vec<OperationOverlapView<'_>> {
        overlap_views(&self.0.overlaps)
    }
    /// Items the caller may not list, counted per resource (left out of `items`).
    async fn hidden(&self) -> Vec<HiddenItemsView<'_>> {
        hidden_views(&self.0.hidden)
    }
}

/// A list a dry-run could not read with the caller's token.
pub struct UnreadableListView<'a>(pub &'a UnreadableList);

#[Object(name = "UnreadableList")]
impl UnreadableListView<'_> {
    /// API group; empty for the core group.
    async fn group(&self) -> &str {
        &self.0.group
    }
    /// Version.
    async fn version(&self) -> &str {
        &self.0.version
    }
    /// Kind.
    async fn kind(&self) -> &str {
        &self.0.kind
    }
    /// Plural resource name.
    async fn resource(&self) -> &str {
        &self.0.resource
    }
    /// `<resource>[.<group>]`.
    async fn group_resource(&self) -> String {
        self.0.group_resource()
    }
    /// Namespace listed; null for a cluster-wide list.
    async fn namespace(&self) -> Option<&str> {
        self.0.namespace.as_deref()
    }
    /// Why it could not be read.
    async fn reason(&self) -> UnreadableReason {
        self.0.reason
    }
    /// What the API server said.
    async fn message(&self) -> &str {
        &self.0.message
    }
}

// -------------------------------------------------------------------------------------------
// restorePreview
// -------------------------------------------------------------------------------------------

/// What a restore would do, entry by entry in restore order, against the namespace as it is
/// now.
pub struct RestorePreviewResult(pub RestorePreviewView);

#[Object(name = "RestorePreview")]
impl RestorePreviewResult {
    /// `oadp.openshift.io/v1alpha1`.
    async fn api_version(&self) -> &str {
        &self.0.api_version
    }
    /// `RestorePreview`.
    async fn kind(&self) -> &str {
        &self.0.kind
    }
    /// The NonAdminRestore as the API server would store it (validated, not stored).
    async fn restore(&self) -> Json<&Value> {
        Json(&self.0.restore)
    }
    /// The NonAdminBackup restored from.
    async fn backup_name(&self) -> &str {
        &self.0.backup_name
    }
    /// Every backed-up item and every namespace the restore ensures, in restore order
    /// (Velero's priorities, then owners before dependents).
    async fn entries(&self) -> Vec<RestorePreviewEntry<'_>> {
        self.0.entries.iter().map(RestorePreviewEntry).collect()
    }
    /// Totals.
    async fn counts(&self) -> RestorePreviewCounts<'_> {
        RestorePreviewCounts(&self.0.counts)
    }
    /// Running operations of this namespace sharing items with this restore.
    async fn overlaps(&self) -> Vec<OperationOverlapView<'_>> {
        overlap_views(&self.0.overlaps)
    }
    /// Backed-up items the caller may not list, counted per resource (left out of
    /// `entries`; `counts` include them).
    async fn hidden(&self) -> Vec<HiddenItemsView<'_>> {
        hidden_views(&self.0.hidden)
    }
}

/// One line of a restore preview.
pub struct RestorePreviewEntry<'a>(pub &'a PreviewEntry);

#[Object]
impl RestorePreviewEntry<'_> {
    /// API group; empty for the core group.
    async fn group(&self) -> &str {
        &self.0.group
    }
    /// Version as backed up.
    async fn version(&self) -> &str {
        &self.0.version
    }
    /// Kind.
    async fn kind(&self) -> &str {
        &self.0.kind
    }
    /// Plural resource name.
    async fn resource(&self) -> &str {
        &self.0.resource
    }
    /// Namespace in the backup; null for cluster-scoped items and Namespace entries.
    async fn namespace(&self) -> Option<&str> {
        self.0.namespace.as_deref()
    }
    /// Namespace restored into, after `namespaceMapping`.
    async fn target_namespace(&self) -> Option<&str> {
        self.0.target_namespace.as_deref()
    }
    /// Object name (for a Namespace entry, the target namespace).
    async fn name(&self) -> &str {
        &self.0.name
    }
    /// What the restore does.
    async fn action(&self) -> RestoreAction {
        self.0.action
    }
    /// Why.
    async fn reason(&self) -> RestoreReason {
        self.0.reason
    }
    /// The line Velero logs (or records as the warning or error).
    async fn message(&self) -> &str {
        &self.0.message
    }
    /// Whether the restore records `message` as a warning.
    async fn warning(&self) -> bool {
        self.0.warning
    }
}

/// How many entries of a restore preview get each outcome.
pub struct RestorePreviewCounts<'a>(pub &'a PreviewCounts);

#[Object]
impl RestorePreviewCounts<'_> {
    /// Items the restore processes (Velero's `progress.totalItems`): all but the excluded.
    async fn total(&self) -> u64 {
        self.0.total
    }
    /// Items created.
    async fn create(&self) -> u64 {
        self.0.create
    }
    /// Items updated.
    async fn update(&self) -> u64 {
        self.0.update
    }
    /// Items skipped (not counting the excluded).
    async fn skip(&self) -> u64 {
        self.0.skip
    }
    /// Items the restore records an error for.
    async fn fail(&self) -> u64 {
        self.0.fail
    }
    /// Items whose fate depends on objects the preview could not read.
    async fn undetermined(&self) -> u64 {
        self.0.undetermined
    }
    /// Items left out by the restore's filters.
    async fn excluded(&self) -> u64 {
        self.0.excluded
    }
    /// Items whose skip or update the restore records as a warning.
    async fn warnings(&self) -> u64 {
        self.0.warnings
    }
    /// Target namespaces the restore creates.
    async fn namespaces_created(&self) -> u64 {
        self.0.namespaces_created
    }
}

/// Whether a created backup or restore that has not started yet waits on running operations
/// of its namespace.
pub struct OperationOverlapsView(pub OperationOverlaps);

#[Object(name = "OperationOverlaps")]
impl OperationOverlapsView {
    /// The operation asked about (`backup <name>` or `restore <name>`).
    async fn operation(&self) -> &str {
        &self.0.operation
    }
    /// Whether it has not started yet (new or queued).
    async fn pending(&self) -> bool {
        self.0.pending
    }
    /// Whether it is pending and shares items with a running operation: it waits on them.
    async fn waiting(&self) -> bool {
        self.0.waiting
    }
    /// Running operations of this namespace sharing items with it; empty once it runs or has
    /// finished.
    async fn overlaps(&self) -> Vec<OperationOverlapView<'_>> {
        overlap_views(&self.0.overlaps)
    }
}

// -------------------------------------------------------------------------------------------
// Resolvers (called by `Query`)
// -------------------------------------------------------------------------------------------

/// `backupManifest(namespace, name)`.
pub async fn backup_manifest(
    ctx: &Context<'_>,
    namespace: &str,
    name: &str,
) -> async_graphql::Result<BackupManifestView> {
    check_namespace(namespace).gql()?;
    check_name(name).gql()?;
    let document = service_of(ctx)?
        .backup_manifest(caller_of(ctx)?, namespace, name)
        .await
        .gql()?;
    Ok(BackupManifestView(document))
}

/// `backupOwnerGraph(namespace, name)`.
pub async fn backup_owner_graph(
    ctx: &Context<'_>,
    namespace: &str,
    name: &str,
) -> async_graphql::Result<OwnerGraphResult> {
    check_namespace(namespace).gql()?;
    check_name(name).gql()?;
    let graph = service_of(ctx)?
        .backup_owner_graph(caller_of(ctx)?, namespace, name)
        .await
        .gql()?;
    Ok(OwnerGraphResult(graph))
}

/// `backupDiff(namespace, name, against)`.
pub async fn backup_diff(
    ctx: &Context<'_>,
    namespace: &str,
    name: &str,
    against: &str,
) -> async_graphql::Result<BackupDiffView> {
    check_namespace(namespace).gql()?;
    check_name(name).gql()?;
    check_name(against)
        .map_err(|_| {
            GatewayError::invalid_field("against", "against must name a backup of the namespace")
        })
        .gql()?;
    let diff = service_of(ctx)?
        .backup_diff(caller_of(ctx)?, namespace, name, against)
        .await
        .gql()?;
    Ok(BackupDiffView(diff))
}

/// `backupDryRun(namespace, backup)`: `backup` is any body REST's create accepts.
pub async fn backup_dry_run(
    ctx: &Context<'_>,
    namespace: &str,
    backup: &Value,
) -> async_graphql::Result<BackupDryRunView> {
    check_namespace(namespace).gql()?;
    let answer = service_of(ctx)?
        .backup_dry_run(caller_of(ctx)?, namespace, backup)
        .await
        .gql()?;
    Ok(BackupDryRunView(answer))
}

/// `restorePreview(namespace, restore)`: `restore` is any body REST's create accepts.
pub async fn restore_preview(
    ctx: &Context<'_>,
    namespace: &str,
    restore: &Value,
) -> async_graphql::Result<RestorePreviewResult> {
    check_namespace(namespace).gql()?;
    let answer = service_of(ctx)?
        .restore_preview(caller_of(ctx)?, namespace, restore)
        .await
        .gql()?;
    Ok(RestorePreviewResult(answer))
}

/// `backupOverlaps(namespace, name)`.
pub async fn backup_overlaps(
    ctx: &Context<'_>,
    namespace: &str,
    name: &str,
) -> async_graphql::Result<OperationOverlapsView> {
    check_namespace(namespace).gql()?;
    check_name(name).gql()?;
    let answer = service_of(ctx)?
        .backup_overlaps(caller_of(ctx)?, namespace, name)
        .await
        .gql()?;
    Ok(OperationOverlapsView(answer))
}

/// `restoreOverlaps(namespace, name)`.
pub async fn restore_overlaps(
    ctx: &Context<'_>,
    namespace: &str,
    name: &str,
) -> async_graphql::Result<OperationOverlapsView> {
    check_namespace(namespace).gql()?;
    check_name(name).gql()?;
    let answer = service_of(ctx)?
        .restore_overlaps_of(caller_of(ctx)?, namespace, name)
        .await
        .gql()?;
    Ok(OperationOverlapsView(answer))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::manifest::export::MANIFEST_FORMAT_VERSION;
    use crate::manifest::item::Manifest;

    fn item(resource: &str, name: &str, app: &str) -> ManifestItem {
        ManifestItem {
            group: String::new(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
            resource: resource.into(),
            namespace: Some("team-a".into()),
            name: name.into(),
            labels: BTreeMap::from([("app".to_string(), app.to_string())]),
            annotations: BTreeMap::new(),
            owners: Vec::new(),
            uid: None,
        }
    }

    fn document() -> ManifestDocument {
        let manifest = Manifest::from_items(vec![
            item("configmaps", "a", "web"),
            item("configmaps", "b", "db"),
            item("configmaps", "c", "web"),
        ]);
        let document = ManifestDocument::new(
            ManifestBackup {
                namespace: "team-a".into(),
                name: "nightly".into(),
                velero_backup: "team-a-nightly".into(),
                completed_at: None,
            },
            manifest,
        );
        assert_eq!(document.format_version, MANIFEST_FORMAT_VERSION);
        document
    }

    fn names(page: &ContentsPage) -> Vec<&str> {
        page.items.iter().map(|i| i.name.as_str()).collect()
    }

    #[test]
    fn arguments_page_as_rest_does_with_after_for_continue() {
        let document = document();
        let first = contents(
            &document,
            &contents_query(None, None, Some("app=web".into()), Some(1), None),
        )
        .unwrap();
        assert_eq!(names(&first), ["a"]);
        assert_eq!((first.total, first.matched), (3, 2));
        let next = contents(
            &document,
            &contents_query(
                None,
                None,
                Some("app=web".into()),
                Some(1),
                first.continue_token,
            ),
        )
        .unwrap();
        assert_eq!(names(&next), ["c"]);
        assert!(next.continue_token.is_none());
        let text = contents(
            &document,
            &contents_query(None, Some("B".into()), None, None, None),
        )
        .unwrap();
        assert_eq!(names(&text), ["b"]);
        let kind = contents(
            &document,
            &contents_query(Some("configmap".into()), None, None, None, None),
        )
        .unwrap();
        assert_eq!(kind.matched, 3);
    }

    #[test]
    fn bad_arguments_name_the_graphql_argument() {
        let document = document();
        for limit in [0, -1, 1001] {
            let error = contents(
                &document,
                &contents_query(None, None, None, Some(limit), None),
            )
            .unwrap_err();
            assert_eq!(error.field_errors()[0].field, "limit", "{limit}");
        }
        let error = contents(
            &document,
            &contents_query(None, None, None, None, Some("%%%".into())),
        )
        .unwrap_err();
        assert_eq!(error.field_errors()[0].field, "after");
        assert!(error.to_string().starts_with("after "), "{error}");
        let error = contents(
            &document,
            &contents_query(None, None, Some("a b c".into()), None, None),
        )
        .unwrap_err();
        assert!(error.to_string().contains("labelSelector"), "{error}");
    }

    #[test]
    fn items_cost_scales_with_the_page_not_per_item() {
        assert_eq!(items_complexity(None, 10), 5 + 5 * 10);
        assert_eq!(items_complexity(Some(1), 10), 5 + 10);
        assert_eq!(items_complexity(Some(1000), 4), 5 + 50 * 4);
        // Out-of-range limits are refused by the resolver; the cost stays bounded.
        assert_eq!(items_complexity(Some(-5), 4), 5 + 4);
        assert_eq!(items_complexity(Some(i32::MAX), 4), 5 + 50 * 4);
    }
}
