//! Backup manifests through the gateway (seed 002): a backup's stored manifest (`manifest.json`,
//! the contents browser with filters and paging, the owner graph), the diff of two backups, the
//! backup dry-run (the backup's filters evaluated against the namespace's live objects, read
//! with the caller's own token), the restore preview, and overlaps with running operations:
//! those a dry-run or preview would wait on, and those a created backup or restore that has not
//! started yet waits on (`GET …/overlaps`, computed by the same collection and planning paths).
//!
//! This module holds the views (REST's and GraphQL's answers alike: they derive both; GraphQL's
//! computed fields are in `graphql/manifests.rs`) and the pure parts; the reads are in
//! `service/manifests.rs`. Reads of a stored manifest are authorized like getting the
//! NonAdminBackup (the manifest outlives it in the history store); a dry-run or preview like
//! creating the object it previews; a created operation's overlaps like getting it. Overlaps
//! are computed only against operations of the same namespace that the caller may list (an
//! overlap names them): a tenant is never told about another namespace's operations, nor about
//! ones it may not list.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use serde::Serialize;
use serde_json::Value;

use crate::api::nonadmin::{NonAdminBackup, NonAdminPhase, NonAdminRestore};
use crate::api::velero::{BackupPhase, RestorePhase};
use crate::gateway::error::GatewayError;
use crate::gateway::live::DiscoveryCache;
use crate::gateway::selector;
use crate::manifest::collect::UnreadableList;
use crate::manifest::diff::ManifestDiff;
use crate::manifest::export::{ManifestBackup, ManifestDocument};
use crate::manifest::item::{KindCount, ManifestItem};
use crate::manifest::overlap::OperationOverlap;
use crate::manifest::preview::{PreviewCounts, PreviewEntry};
use crate::manifest::visibility::HiddenItems;

/// Default page size of the contents browser.
pub const DEFAULT_CONTENTS_LIMIT: usize = 100;
/// Largest page size of the contents browser.
pub const MAX_CONTENTS_LIMIT: usize = 1000;
/// Overlapping items listed per running operation (all are counted).
pub const OVERLAP_ITEMS_SHOWN: usize = 50;
/// `Retry-After` of a completed backup whose manifest is still being built (the builder takes
/// a second or two after the backup completes).
pub const MANIFEST_RETRY_AFTER: Duration = Duration::from_secs(2);

/// A decoded manifest, by operation id and build time.
type DecodedManifest = ((String, i64), Arc<ManifestDocument>);

/// What the manifest endpoints keep between requests.
#[derive(Debug, Default)]
pub struct ManifestState {
    /// Discovery, shared by dry-runs and previews.
    pub discovery: DiscoveryCache,
    /// The last few decoded manifests, by operation id and build time.
    pub(crate) decoded: Mutex<VecDeque<DecodedManifest>>,
}

/// Filters and paging of the contents browser.
#[derive(Clone, Debug, Default)]
pub struct ContentsQuery {
    /// Kind, plural resource or `resource.group`, case-insensitive.
    pub kind: Option<String>,
    /// Text in the item's name, case-insensitive.
    pub text: Option<String>,
    /// A label selector (`app=web,tier!=db`).
    pub selector: Option<String>,
    /// Page size.
    pub limit: Option<usize>,
    /// The previous page's `continue`.
    pub continue_token: Option<String>,
}

/// One page of a backup's contents.
// In GraphQL, `BackupManifest.items`' answer: without `backup` and `counts` (on the manifest
// there); its `matched`, `continue` and `hidden` are resolvers (`graphql::manifests`),
// described for GraphQL.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
#[graphql(name = "ManifestContentsPage", complex)]
pub struct ContentsPage {
    /// The backup.
    #[graphql(skip)]
    pub backup: ManifestBackup,
    /// Items per kind in the whole backup.
    #[graphql(skip)]
    pub counts: Vec<KindCount>,
    /// Items in the backup.
    pub total: u64,
    /// Items matching the filters.
    #[graphql(skip)]
    pub matched: u64,
    /// This page, in key order.
    pub items: Vec<ManifestItem>,
    /// Token of the next page, when there is one.
    #[serde(rename = "continue", skip_serializing_if = "Option::is_none")]
    #[graphql(skip)]
    pub continue_token: Option<String>,
    /// Items of the backup the caller may not list, counted (`counts` and `total` leave them
    /// out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[graphql(skip)]
    pub hidden: Vec<HiddenItems>,
}

/// The changes from one backup to another.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
pub struct BackupDiff {
    /// The earlier backup (`against`).
    pub from: ManifestBackup,
    /// The later backup.
    pub to: ManifestBackup,
    /// Added, removed and changed items.
    #[serde(flatten)]
    #[graphql(flatten)]
    pub diff: ManifestDiff,
    /// Added, removed or changed items the caller may not list, counted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<HiddenItems>,
}

/// What a backup would take, before anything runs (`POST …/backups?dryRun=true`).
// GraphQL's `unreadable` is a resolver (`graphql::manifests`), described for it.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
#[graphql(complex)]
pub struct BackupDryRun {
    /// `oadp.openshift.io/v1alpha1`.
    pub api_version: String,
    /// `BackupDryRun`.
    pub kind: String,
    /// The NonAdminBackup as the API server would store it (validated, not stored).
    #[schema(value_type = Object)]
    pub backup: Value,
    /// Items per kind.
    pub counts: Vec<KindCount>,
    /// How many items the backup would take.
    pub total_items: u64,
    /// The items, in key order (the manifest the backup would have).
    pub items: Vec<ManifestItem>,
    /// Lists the caller could not read: their objects are missing above, and the backup (run
    /// with Velero's identity) may take them.
    #[graphql(skip)]
    pub unreadable: Vec<UnreadableList>,
    /// Running operations of this namespace sharing items with this backup: it would wait on
    /// them.
    pub overlaps: Vec<OperationOverlap>,
    /// Items the caller may not list, counted (`counts` and `items` leave them out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<HiddenItems>,
}

/// What a restore would do, before anything runs (`POST …/restores?dryRun=true`).
// GraphQL's `entries` is a resolver (`graphql::manifests`), described with the order's rule.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
#[graphql(name = "RestorePreview", complex)]
pub struct RestorePreviewView {
    /// `oadp.openshift.io/v1alpha1`.
    pub api_version: String,
    /// `RestorePreview`.
    pub kind: String,
    /// The NonAdminRestore as the API server would store it (validated, not stored).
    #[schema(value_type = Object)]
    pub restore: Value,
    /// The NonAdminBackup restored from.
    pub backup_name: String,
    /// Every backed-up item and every namespace the restore ensures, in restore order.
    #[graphql(skip)]
    pub entries: Vec<PreviewEntry>,
    /// Totals.
    pub counts: PreviewCounts,
    /// Running operations of this namespace sharing items with this restore.
    pub overlaps: Vec<OperationOverlap>,
    /// Backed-up items the caller may not list, counted (`entries` leaves them out; `counts`
    /// include them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<HiddenItems>,
}

/// Whether a created backup or restore is waiting on running operations of its namespace
/// (`GET …/backups/{name}/overlaps`, `GET …/restores/{name}/overlaps`).
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
pub struct OperationOverlaps {
    /// The operation asked about (`backup <name>` or `restore <name>`).
    pub operation: String,
    /// Whether it has not started yet (new or queued).
    pub pending: bool,
    /// Whether it is pending and shares items with a running operation: it waits on them.
    pub waiting: bool,
    /// Running operations of this namespace sharing items with it; empty once it runs or has
    /// finished.
    pub overlaps: Vec<OperationOverlap>,
}

impl OperationOverlaps {
    /// The answer for an operation that is running or finished: nothing to wait on.
    pub(crate) fn not_pending(operation: String) -> Self {
        Self {
            operation,
            pending: false,
            waiting: false,
            overlaps: Vec::new(),
        }
    }

    /// The answer for a pending operation sharing items with `overlaps`. (Not `pending`: the
    /// GraphQL derive names the field's getter so.)
    pub(crate) fn pending_with(operation: String, overlaps: Vec<OperationOverlap>) -> Self {
        Self {
            operation,
            pending: true,
            waiting: !overlaps.is_empty(),
            overlaps,
        }
    }
}

pub fn is_pending_backup(backup: &NonAdminBackup) -> bool {
    if backup.metadata.deletion_timestamp.is_some() {
        return false;
    }
    let status = backup.status.as_ref();
    let accepted = status
        .and_then(|s| s.phase.as_ref())
        .is_none_or(|phase| matches!(phase, NonAdminPhase::New | NonAdminPhase::Created));
    let phase = status
        .and_then(|s| s.velero_backup.as_ref())
        .and_then(|velero| velero.status.as_ref())
        .and_then(|status| status.phase.as_ref());
    accepted
        && phase.is_none_or(|phase| {
            matches!(
                phase,
                BackupPhase::New | BackupPhase::Queued | BackupPhase::ReadyToStart
            )
        })
}

/// Whether backup `backup` has completed (Velero's Completed or PartiallyFailed, the phases
/// the manifest builder builds for), so that a manifest it lacks is still being built (pure).
pub fn manifest_is_due(backup: &NonAdminBackup) -> bool {
    backup
        .status
        .as_ref()
        .and_then(|s| s.velero_backup.as_ref())
        .and_then(|velero| velero.status.as_ref())
        .and_then(|status| status.phase.as_ref())
        .is_some_and(|phase| matches!(phase, BackupPhase::Completed | BackupPhase::PartiallyFailed))
}

/// Whether restore `restore` has not started yet: accepted and its Velero restore not created
/// yet or new (pure).
pub fn is_pending_restore(restore: &NonAdminRestore) -> bool {
    if restore.metadata.deletion_timestamp.is_some() {
        return false;
    }
    let status = restore.status.as_ref();
    let accepted = status
        .and_then(|s| s.phase.as_ref())
        .is_none_or(|phase| matches!(phase, NonAdminPhase::New | NonAdminPhase::Created));
    let phase = status
        .and_then(|s| s.velero_restore.as_ref())
        .and_then(|velero| velero.status.as_ref())
        .and_then(|status| status.phase.as_ref());
    accepted && phase.is_none_or(|phase| matches!(phase, RestorePhase::New))
}

/// `limit` of the contents browser, checked.
pub fn contents_limit(limit: Option<usize>) -> Result<usize, GatewayError> {
    match limit {
        None => Ok(DEFAULT_CONTENTS_LIMIT),
        Some(limit) if (1..=MAX_CONTENTS_LIMIT).contains(&limit) => Ok(limit),
        Some(_) => Err(GatewayError::invalid_field(
            "limit",
            format!("limit must be between 1 and {MAX_CONTENTS_LIMIT}"),
        )),
    }
}

fn continue_token(last_key: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(last_key.as_bytes())
}

fn continue_key(token: &str) -> Result<String, GatewayError> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(|| {
            GatewayError::invalid_field("continue", "continue is not a token this endpoint gave")
        })
}

/// One page of `document`'s items matching `query` (pure).
pub fn contents_page(
    document: &ManifestDocument,
    query: &ContentsQuery,
) -> Result<ContentsPage, GatewayError> {
    let limit = contents_limit(query.limit)?;
    let selector = query.selector.as_deref().map(selector::parse).transpose()?;
    let after = query
        .continue_token
        .as_deref()
        .map(continue_key)
        .transpose()?;
    let kind = query.kind.as_deref().map(str::to_ascii_lowercase);
    let text = query.text.as_deref().map(str::to_ascii_lowercase);
    let matches = |item: &ManifestItem| {
        kind.as_deref().is_none_or(|kind| {
            item.kind.eq_ignore_ascii_case(kind)
                || item.resource == kind
                || item.group_resource() == kind
        }) && text
            .as_deref()
            .is_none_or(|text| item.name.to_ascii_lowercase().contains(text))
            && selector
                .as_ref()
                .is_none_or(|selector| selector.matches(&item.labels))
    };
    let mut matched = 0u64;
    let mut items = Vec::new();
    let mut more = false;
    for item in document.items.iter().filter(|item| matches(item)) {
        matched += 1;
        if after
            .as_deref()
            .is_some_and(|after| item.key().as_str() <= after)
        {
            continue;
        }
        if items.len() < limit {
            items.push(item.clone());
        } else {
            more = true;
        }
    }
    let continue_token = more
        .then(|| items.last().map(|item| continue_token(&item.key())))
        .flatten();
    Ok(ContentsPage {
        backup: document.backup.clone(),
        counts: document.counts.clone(),
        total: document.items.len() as u64,
        matched,
        items,
        continue_token,
        hidden: document.hidden.clone(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn backup(status: Value) -> NonAdminBackup {
        serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
            "metadata": {"name": "b", "namespace": "team-a"},
            "spec": {"backupSpec": {}}, "status": status,
        }))
        .unwrap()
    }

    fn restore(status: Value) -> NonAdminRestore {
        serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminRestore",
            "metadata": {"name": "r", "namespace": "team-a"},
            "spec": {"restoreSpec": {"backupName": "b"}}, "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn a_backup_is_pending_until_velero_starts_it() {
        assert!(is_pending_backup(&backup(json!({}))));
        assert!(is_pending_backup(&backup(json!({"phase": "New"}))));
        for phase in ["New", "Queued", "ReadyToStart"] {
            let b =
                backup(json!({"phase": "Created", "veleroBackup": {"status": {"phase": phase}}}));
            assert!(is_pending_backup(&b), "{phase}");
        }
        for phase in [
            "InProgress",
            "Completed",
            "Failed",
            "FailedValidation",
            "Finalizing",
        ] {
            let b =
                backup(json!({"phase": "Created", "veleroBackup": {"status": {"phase": phase}}}));
            assert!(!is_pending_backup(&b), "{phase}");
        }
        // An invalid backup never runs; one being deleted will not.
        assert!(!is_pending_backup(&backup(json!({"phase": "BackingOff"}))));
        assert!(!is_pending_backup(&backup(json!({"phase": "Deleting"}))));
        let mut deleted = backup(json!({}));
        deleted.metadata.deletion_timestamp =
            serde_json::from_value(json!("2026-01-01T00:00:00Z")).ok();
        assert!(deleted.metadata.deletion_timestamp.is_some());
        assert!(!is_pending_backup(&deleted));
    }

    #[test]
    fn a_restore_is_pending_until_velero_starts_it() {
        assert!(is_pending_restore(&restore(json!({}))));
        let new =
            restore(json!({"phase": "Created", "veleroRestore": {"status": {"phase": "New"}}}));
        assert!(is_pending_restore(&new));
        for phase in [
            "InProgress",
            "Completed",
            "PartiallyFailed",
            "FailedValidation",
        ] {
            let r =
                restore(json!({"phase": "Created", "veleroRestore": {"status": {"phase": phase}}}));
            assert!(!is_pending_restore(&r), "{phase}");
        }
        assert!(!is_pending_restore(&restore(
            json!({"phase": "BackingOff"})
        )));
    }

    #[test]
    fn a_missing_manifest_is_due_only_for_a_completed_backup() {
        for phase in ["Completed", "PartiallyFailed"] {
            let b =
                backup(json!({"phase": "Created", "veleroBackup": {"status": {"phase": phase}}}));
            assert!(manifest_is_due(&b), "{phase}");
        }
        for phase in [
            "New",
            "InProgress",
            "Finalizing",
            "Failed",
            "FailedValidation",
        ] {
            let b =
                backup(json!({"phase": "Created", "veleroBackup": {"status": {"phase": phase}}}));
            assert!(!manifest_is_due(&b), "{phase}");
        }
        assert!(!manifest_is_due(&backup(json!({}))));
        assert!(!manifest_is_due(&backup(json!({"phase": "BackingOff"}))));
    }

    #[test]
    fn only_a_pending_operation_with_overlaps_waits() {
        let running = OperationOverlaps::not_pending("backup a".into());
        assert!(!running.pending && !running.waiting && running.overlaps.is_empty());
        let alone = OperationOverlaps::pending_with("backup a".into(), Vec::new());
        assert!(alone.pending && !alone.waiting);
    }
}
