//! GraphQL resolvers of backup manifests (seed 002): `backupManifest` (the stored manifest's
//! summary, counts by kind and a page of its items with the contents browser's filters),
//! `backupOwnerGraph`, `backupDiff`, `backupDryRun`, `restorePreview`, and `backupOverlaps` /
//! `restoreOverlaps` (whether a pending operation waits on running ones) on `Query`.
//!
//! Each resolver calls the same [`GatewayService`] operation as REST, with the caller, so the
//! access checks and answers are REST's: a stored manifest is read like getting the
//! NonAdminBackup, a dry-run or preview like creating the object it previews (nothing is
//! created: they are queries). The answers are REST's views themselves, one type per concept:
//! the pure manifest types (a derive with no dependency on the gateway, like their `ToSchema`;
//! their enums are GraphQL enums) and the service's views ([`crate::gateway::manifests`])
//! derive their GraphQL objects; labels and annotations are `JSON`, as on [`super::types`]'
//! `Metadata`. What GraphQL computes rather than reads (an item's `key`, a manifest's `items`
//! page with its arguments and cost, a time as RFC 3339 text), and the few fields it describes
//! otherwise than REST (`continue` is passed as `after` here), are the `ComplexObject` impls
//! below; the rest of this module is the resolvers `Query` calls.
//!
//! Cost: manifest items are leaf data already in memory (no resolver below them fetches
//! anything), so an items page costs one item's selection per 20 items asked for, not per
//! item; the resolvers that read the history store or the cluster carry a fixed cost
//! (`backupDryRun` and `restorePreview`, which read the namespace's live objects, the most).
//!
//! [`GatewayService`]: crate::gateway::service::GatewayService

use std::sync::Arc;

use async_graphql::{ComplexObject, Context};
use chrono::SecondsFormat;
use serde_json::Value;

use super::errors::GqlResult;
use super::{caller_of, check_name, check_namespace, service_of};
use crate::gateway::error::GatewayError;
use crate::gateway::manifests::{
    BackupDiff, BackupDryRun, ContentsPage, ContentsQuery, OperationOverlaps, RestorePreviewView,
    contents_page,
};
use crate::manifest::collect::UnreadableList;
use crate::manifest::export::{ManifestBackup, ManifestDocument};
use crate::manifest::graph::OwnerGraphView;
use crate::manifest::item::ManifestItem;
use crate::manifest::overlap::OperationOverlap;
use crate::manifest::preview::PreviewEntry;
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
// Computed fields of the views
// -------------------------------------------------------------------------------------------

#[ComplexObject]
impl ManifestItem {
    /// `<resource>[.<group>]/<namespace or "cluster">/<version>/<name>`: the item's path in
    /// Velero's tarball and its key in the manifest (items are sorted by it).
    #[graphql(name = "key")]
    async fn item_key(&self) -> String {
        self.key()
    }
    /// `apiVersion` (`<group>/<version>`, or `<version>` for the core group).
    #[graphql(name = "apiVersion")]
    async fn item_api_version(&self) -> String {
        self.api_version()
    }
    /// `<resource>[.<group>]`, as Velero's filters name types.
    #[graphql(name = "groupResource")]
    async fn item_group_resource(&self) -> String {
        self.group_resource()
    }
}

#[ComplexObject]
impl ManifestBackup {
    /// When the Velero Backup completed (RFC 3339).
    async fn completed_at(&self) -> Option<String> {
        self.completed_at
            .map(|at| at.to_rfc3339_opts(SecondsFormat::AutoSi, true))
    }
}

#[ComplexObject]
impl OperationOverlap {
    /// The running operation (`backup <name>` or `restore <name>`, of the same namespace).
    async fn operation(&self) -> &str {
        &self.operation
    }
}

#[ComplexObject]
impl UnreadableList {
    /// `<resource>[.<group>]`.
    #[graphql(name = "groupResource")]
    async fn list_group_resource(&self) -> String {
        self.group_resource()
    }
}

#[ComplexObject]
impl ManifestDocument {
    /// `oadp.openshift.io/v1alpha1`.
    async fn api_version(&self) -> &str {
        &self.api_version
    }
    /// `BackupManifest`.
    async fn kind(&self) -> &str {
        &self.kind
    }
    /// The stored document's format version.
    async fn format_version(&self) -> u32 {
        self.format_version
    }
    /// How many items of the backup the caller may see.
    async fn total(&self) -> u64 {
        self.items.len() as u64
    }
    /// Items the caller may not list, counted per resource (left out of `counts` and `items`).
    async fn hidden(&self) -> &[HiddenItems] {
        &self.hidden
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
    ) -> async_graphql::Result<ContentsPage> {
        let query = contents_query(kind, q, label_selector, limit, after);
        contents(self, &query).gql()
    }
}

#[ComplexObject]
impl ContentsPage {
    /// Items matching the filters (on every page).
    async fn matched(&self) -> u64 {
        self.matched
    }
    /// Pass as `after` for the next page; null on the last one.
    #[graphql(name = "continue")]
    async fn next_page(&self) -> Option<&str> {
        self.continue_token.as_deref()
    }
    /// Items the caller may not list, counted per resource.
    async fn hidden(&self) -> &[HiddenItems] {
        &self.hidden
    }
}

#[ComplexObject]
impl BackupDryRun {
    /// Lists the caller could not read: their objects are missing from `items`, and the
    /// backup (run with Velero's identity) may take them.
    async fn unreadable(&self) -> &[UnreadableList] {
        &self.unreadable
    }
}

#[ComplexObject]
impl RestorePreviewView {
    /// Every backed-up item and every namespace the restore ensures, in restore order
    /// (Velero's priorities, then owners before dependents).
    async fn entries(&self) -> &[PreviewEntry] {
        &self.entries
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
) -> async_graphql::Result<Arc<ManifestDocument>> {
    check_namespace(namespace).gql()?;
    check_name(name).gql()?;
    let document = service_of(ctx)?
        .backup_manifest(caller_of(ctx)?, namespace, name)
        .await
        .gql()?;
    Ok(document)
}

/// `backupOwnerGraph(namespace, name)`.
pub async fn backup_owner_graph(
    ctx: &Context<'_>,
    namespace: &str,
    name: &str,
) -> async_graphql::Result<OwnerGraphView> {
    check_namespace(namespace).gql()?;
    check_name(name).gql()?;
    let graph = service_of(ctx)?
        .backup_owner_graph(caller_of(ctx)?, namespace, name)
        .await
        .gql()?;
    Ok(graph)
}

/// `backupDiff(namespace, name, against)`.
pub async fn backup_diff(
    ctx: &Context<'_>,
    namespace: &str,
    name: &str,
    against: &str,
) -> async_graphql::Result<BackupDiff> {
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
    Ok(diff)
}

/// `backupDryRun(namespace, backup)`: `backup` is any body REST's create accepts.
pub async fn backup_dry_run(
    ctx: &Context<'_>,
    namespace: &str,
    backup: &Value,
) -> async_graphql::Result<BackupDryRun> {
    check_namespace(namespace).gql()?;
    let answer = service_of(ctx)?
        .backup_dry_run(caller_of(ctx)?, namespace, backup)
        .await
        .gql()?;
    Ok(answer)
}

/// `restorePreview(namespace, restore)`: `restore` is any body REST's create accepts.
pub async fn restore_preview(
    ctx: &Context<'_>,
    namespace: &str,
    restore: &Value,
) -> async_graphql::Result<RestorePreviewView> {
    check_namespace(namespace).gql()?;
    let answer = service_of(ctx)?
        .restore_preview(caller_of(ctx)?, namespace, restore)
        .await
        .gql()?;
    Ok(answer)
}

/// `backupOverlaps(namespace, name)`.
pub async fn backup_overlaps(
    ctx: &Context<'_>,
    namespace: &str,
    name: &str,
) -> async_graphql::Result<OperationOverlaps> {
    check_namespace(namespace).gql()?;
    check_name(name).gql()?;
    let answer = service_of(ctx)?
        .backup_overlaps(caller_of(ctx)?, namespace, name)
        .await
        .gql()?;
    Ok(answer)
}

/// `restoreOverlaps(namespace, name)`.
pub async fn restore_overlaps(
    ctx: &Context<'_>,
    namespace: &str,
    name: &str,
) -> async_graphql::Result<OperationOverlaps> {
    check_namespace(namespace).gql()?;
    check_name(name).gql()?;
    let answer = service_of(ctx)?
        .restore_overlaps_of(caller_of(ctx)?, namespace, name)
        .await
        .gql()?;
    Ok(answer)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::collections::BTreeMap;

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
