//! Backup manifests through the service: stored manifests of the namespace as it is now, their contents, owner graph and diff filtered by what the caller may read, backup dry-runs, restore previews and the overlap checks of pending operations.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::Api;
use serde_json::{Value, json};

use crate::api::nonadmin::{NonAdminBackup, NonAdminRestore};
use crate::api::velero::artifacts::{ResourceList, VeleroResults};
use crate::api::velero::{BackupPhase, RestorePhase};
use crate::gateway::auth::{Authorized, Caller};
use crate::gateway::error::GatewayError;
use crate::gateway::live::{self, Read, ServedResource};
use crate::gateway::operations::store_error;
use crate::gateway::resources::TenantResource;
use crate::gateway::service::{Artifact, ArtifactKind, GatewayService, JsonArtifact};
use crate::gateway::store::present;
use crate::history::StoredManifest;
use crate::manifest::build::manifest_of_items;
use crate::manifest::collect::{CollectPlan, DiscoveredResource, ListOutcome};
use crate::manifest::diff::diff_manifests;
use crate::manifest::export::{ManifestDocument, decode_compact};
use crate::manifest::graph::{OwnerGraph, OwnerGraphView};
use crate::manifest::item::{ItemIdentity, MANIFEST_API_VERSION, Manifest};
use crate::manifest::overlap::{IdentitySet, OperationOverlap, RunningOperation, overlaps};
use crate::manifest::preview::{LiveObjects, RestorePlan, preview_restore};
use crate::manifest::selection::{ApiResourceInfo, BackupSelection, RestoreSelection};
use crate::manifest::tarball::{BackupItem, read_backup_tarball};
use crate::manifest::visibility::{
    BackedUpItem, Readable, log_checks, read_checks, readable_log, readable_resource_list,
    resource_list_checks,
};
use crate::policy::backup::build_velero_backup_spec;
use crate::policy::restore::build_velero_restore_spec;

/// Default page size of the contents browser.
use crate::gateway::manifests::*;

/// Decoded manifests kept for paging through the contents browser.
const DECODED_KEPT: usize = 4;
/// Longest wait for the history store.
const STORE_TIMEOUT: Duration = Duration::from_secs(10);

/// A running operation an overlap check leaves out: the operation asked about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Skip<'a> {
    /// Consider every running operation.
    Nothing,
    /// Leave out backup `name`.
    Backup(&'a str),
    /// Leave out restore `name`.
    Restore(&'a str),
}

/// The objects of an operation compared with the running ones: their identities, the full
/// objects (label checks of running backups' filters), discovery and the Namespace objects.
struct OverlapInput<'a> {
    identities: IdentitySet,
    items: &'a [BackupItem],
    infos: &'a [ApiResourceInfo],
    namespace_objects: &'a [Value],
}

/// What a backup spec would take now, with what the overlap check needs.
struct CollectedBackup {
    collection: crate::manifest::collect::Collection,
    manifest: crate::manifest::item::Manifest,
    infos: Vec<ApiResourceInfo>,
    namespace_object: Value,
}

impl CollectedBackup {
    fn overlap_input(&self) -> OverlapInput<'_> {
        OverlapInput {
            identities: IdentitySet::of_manifest(&self.manifest),
            items: &self.collection.items,
            infos: &self.infos,
            namespace_objects: std::slice::from_ref(&self.namespace_object),
        }
    }
}

/// A restore planned against its backup's contents.
struct PlannedRestore {
    plan: RestorePlan,
    served: Arc<Vec<ServedResource>>,
    infos: Vec<ApiResourceInfo>,
    client: kube::Client,
    backup_name: String,
}

/// Whether backup `backup` has not started yet: accepted (not invalid, not being deleted) and
/// its Velero backup not created yet, new, queued or about to start (pure).
/// A backup's name as shown to its own tenant in an overlap.
fn backup_label(name: &str) -> String {
    format!("backup {name}")
}

/// A restore's name as shown to its own tenant in an overlap.
fn restore_label(name: &str) -> String {
    format!("restore {name}")
}

fn upstream(error: kube::Error) -> GatewayError {
    tracing::warn!(error = %error, "a live read for a preview failed");
    GatewayError::Upstream
}

fn invalid_spec(field: &str, error: impl std::fmt::Display) -> GatewayError {
    GatewayError::invalid_field(field, error.to_string())
}

/// The Namespace object a dry-run considers: the live one when the caller may read it, else
/// what the gateway's namespace cache holds (its labels decide `velero.io/exclude-from-backup`).
async fn namespace_object(
    service: &GatewayService,
    client: &kube::Client,
    access: &Authorized,
) -> Value {
    let namespace = access.namespace();
    if let Ok(Some(live)) = Api::<Namespace>::all(client.clone())
        .get_opt(namespace)
        .await
    {
        let mut value = serde_json::to_value(live).unwrap_or(Value::Null);
        value["apiVersion"] = json!("v1");
        value["kind"] = json!("Namespace");
        return value;
    }
    let cached = service.data.namespace(access);
    let labels = cached
        .as_ref()
        .and_then(|ns| ns.metadata.labels.clone())
        .unwrap_or_default();
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": labels}})
}

fn served_infos(served: &[ServedResource]) -> (Vec<DiscoveredResource>, Vec<ApiResourceInfo>) {
    let discovered: Vec<DiscoveredResource> = served
        .iter()
        .map(|resource| resource.discovered.clone())
        .collect();
    let infos = discovered.iter().map(|d| d.info.clone()).collect();
    (discovered, infos)
}

fn is_running_backup(backup: &NonAdminBackup) -> bool {
    backup
        .status
        .as_ref()
        .and_then(|status| status.velero_backup.as_ref())
        .and_then(|velero| velero.status.as_ref())
        .and_then(|status| status.phase.as_ref())
        .is_some_and(|phase| {
            matches!(
                phase,
                BackupPhase::InProgress
                    | BackupPhase::WaitingForPluginOperations
                    | BackupPhase::WaitingForPluginOperationsPartiallyFailed
                    | BackupPhase::Finalizing
                    | BackupPhase::FinalizingPartiallyFailed
            )
        })
}

fn is_running_restore(restore: &NonAdminRestore) -> bool {
    restore
        .status
        .as_ref()
        .and_then(|status| status.velero_restore.as_ref())
        .and_then(|velero| velero.status.as_ref())
        .and_then(|status| status.phase.as_ref())
        .is_some_and(|phase| {
            matches!(
                phase,
                RestorePhase::InProgress
                    | RestorePhase::WaitingForPluginOperations
                    | RestorePhase::WaitingForPluginOperationsPartiallyFailed
                    | RestorePhase::Finalizing
                    | RestorePhase::FinalizingPartiallyFailed
            )
        })
}

impl GatewayService {
    /// The stored manifest of backup `name` of `namespace` as it is now (asked only once the
    /// caller may get the backup): a namespace created again under the same name has another
    /// UID and reads none of its predecessor's manifests.
    async fn stored_manifest(
        &self,
        access: &Authorized,
        name: &str,
    ) -> Result<Arc<ManifestDocument>, GatewayError> {
        let Some(history) = self.data.history(access)? else {
            return Err(self.missing_manifest(access, name));
        };
        let stored = tokio::time::timeout(STORE_TIMEOUT, history.manifest_by_name(name))
            .await
            .map_err(|_| {
                GatewayError::Unavailable(crate::gateway::operations::HISTORY_UNAVAILABLE.into())
            })?
            .map_err(store_error)?;
        let Some(stored) = stored else {
            return Err(self.missing_manifest(access, name));
        };
        self.decode_manifest(stored).await
    }

    /// Why backup `name` has no stored manifest (asked only once the caller may get it): a
    /// backup that has completed is having its manifest built (202 and `Retry-After`); one
    /// that does not exist, has not completed or failed has none (404).
    fn missing_manifest(&self, access: &Authorized, name: &str) -> GatewayError {
        let namespace = access.namespace();
        let pending = self
            .data
            .object::<NonAdminBackup>(access, name)
            .is_ok_and(|backup| manifest_is_due(&backup));
        if pending {
            GatewayError::ManifestPending {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                retry_after: MANIFEST_RETRY_AFTER,
            }
        } else {
            GatewayError::NotFound {
                kind: "BackupManifest",
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            }
        }
    }

    async fn decode_manifest(
        &self,
        stored: StoredManifest,
    ) -> Result<Arc<ManifestDocument>, GatewayError> {
        let key = (
            stored.summary.key.operation_id.clone(),
            stored.summary.built_at,
        );
        let state = self.manifest_state();
        if let Ok(decoded) = state.decoded.lock()
            && let Some((_, document)) = decoded.iter().find(|(k, _)| *k == key)
        {
            return Ok(Arc::clone(document));
        }
        let document = tokio::task::spawn_blocking(move || decode_compact(&stored.encoded))
            .await
            .map_err(|_| GatewayError::Upstream)?
            .map_err(|error| {
                tracing::error!(error = %error, "a stored manifest cannot be decoded");
                GatewayError::Upstream
            })?;
        let document = Arc::new(document);
        if let Ok(mut decoded) = state.decoded.lock() {
            decoded.retain(|(k, _)| *k != key);
            decoded.push_front((key, Arc::clone(&document)));
            decoded.truncate(DECODED_KEPT);
        }
        Ok(document)
    }

    /// The manifest of backup `name` (`manifest.json`).
    pub async fn backup_manifest(
        &self,
        caller: &Caller,
        namespace: &str,
        name: &str,
    ) -> Result<Arc<ManifestDocument>, GatewayError> {
        let authorized = self
            .authorize(
                caller,
                "get",
                TenantResource::Backups,
                namespace,
                Some(name),
            )
            .await?;
        let document = self.stored_manifest(&authorized, name).await?;
        self.readable_document(caller, document).await
    }

    /// What `caller` may read of `items`: one review per distinct resource and namespace.
    async fn readable_by<'a, T: BackedUpItem + 'a>(
        &self,
        caller: &Caller,
        items: impl IntoIterator<Item = &'a T>,
    ) -> Result<Readable, GatewayError> {
        self.authorizer()
            .readable(caller.identity(), read_checks(items))
            .await
    }

    /// `document` as `caller` may read it: items of resources they may not list are left
    /// out and counted in `hidden` (the stored document itself when nothing is hidden).
    async fn readable_document(
        &self,
        caller: &Caller,
        document: Arc<ManifestDocument>,
    ) -> Result<Arc<ManifestDocument>, GatewayError> {
        let readable = self.readable_by(caller, &document.items).await?;
        if document.items.iter().all(|item| readable.may_read(item)) {
            return Ok(document);
        }
        let (items, hidden) = readable.split(document.items.clone());
        let visible = Manifest::from_items(items);
        Ok(Arc::new(ManifestDocument {
            api_version: document.api_version.clone(),
            kind: document.kind.clone(),
            format_version: document.format_version,
            backup: document.backup.clone(),
            counts: visible.counts_by_kind(),
            items: visible.into_items(),
            hidden,
        }))
    }

    /// An artifact of a backup or restore as `caller` may read it: log lines and resource-list
    /// entries about items they may not list are left out, as in manifests (a create-only CI
    /// account reads its backup's log, but not the names of the Secrets it took).
    pub(super) async fn readable_artifact(
        &self,
        caller: &Caller,
        artifact: ArtifactKind,
        bytes: Vec<u8>,
    ) -> Result<Artifact, GatewayError> {
        match artifact {
            ArtifactKind::Log => {
                let text = String::from_utf8_lossy(&bytes);
                let readable = self
                    .authorizer()
                    .readable(caller.identity(), log_checks(&text))
                    .await?;
                Ok(Artifact::Log(readable_log(&text, &readable)))
            }
            ArtifactKind::ResourceList => {
                let Ok(Value::Object(list)) = serde_json::from_slice::<Value>(&bytes) else {
                    // Not Velero's shape: nothing in it can be checked, so nothing is shown.
                    return Ok(Artifact::Json(JsonArtifact::ResourceList(
                        ResourceList::default(),
                    )));
                };
                let client = self.user_client(caller)?;
                let served = self
                    .manifest_state()
                    .discovery
                    .served(&client)
                    .await
                    .map_err(upstream)?;
                let plural_of = |group: &str, kind: &str| {
                    served
                        .iter()
                        .map(|resource| &resource.discovered.info)
                        .find(|info| info.group == group && info.kind == kind)
                        .map(|info| info.plural.clone())
                };
                let readable = self
                    .authorizer()
                    .readable(caller.identity(), resource_list_checks(&list, &plural_of))
                    .await?;
                Ok(Artifact::Json(JsonArtifact::ResourceList(
                    readable_resource_list(&list, &plural_of, &readable),
                )))
            }
            // Not Velero's shape: shown as no messages (what does not parse is not passed on).
            ArtifactKind::Results => Ok(Artifact::Json(JsonArtifact::Results(
                VeleroResults::parse(&bytes).unwrap_or_default(),
            ))),
        }
    }

    /// `overlaps` as `caller` may read them: shared objects they may not list are not named.
    async fn readable_overlaps(
        &self,
        caller: &Caller,
        overlaps: Vec<OperationOverlap>,
    ) -> Result<Vec<OperationOverlap>, GatewayError> {
        let readable = self
            .readable_by(caller, overlaps.iter().flat_map(|overlap| &overlap.items))
            .await?;
        Ok(readable.overlaps(overlaps))
    }

    /// One page of backup `name`'s contents.
    pub async fn backup_contents(
        &self,
        caller: &Caller,
        namespace: &str,
        name: &str,
        query: &ContentsQuery,
    ) -> Result<ContentsPage, GatewayError> {
        contents_limit(query.limit)?;
        let document = self.backup_manifest(caller, namespace, name).await?;
        contents_page(&document, query)
    }

    /// The owner graph of backup `name`.
    pub async fn backup_owner_graph(
        &self,
        caller: &Caller,
        namespace: &str,
        name: &str,
    ) -> Result<OwnerGraphView, GatewayError> {
        let document = self.backup_manifest(caller, namespace, name).await?;
        let manifest = document.manifest();
        Ok(OwnerGraph::new(&manifest).view())
    }

    /// The changes from backup `against` to backup `name`.
    pub async fn backup_diff(
        &self,
        caller: &Caller,
        namespace: &str,
        name: &str,
        against: &str,
    ) -> Result<BackupDiff, GatewayError> {
        let to_grant = self
            .authorize(
                caller,
                "get",
                TenantResource::Backups,
                namespace,
                Some(name),
            )
            .await?;
        let from_grant = self
            .authorize(
                caller,
                "get",
                TenantResource::Backups,
                namespace,
                Some(against),
            )
            .await?;
        let to = self.stored_manifest(&to_grant, name).await?;
        let from = self.stored_manifest(&from_grant, against).await?;
        let readable = self
            .readable_by(caller, from.items.iter().chain(&to.items))
            .await?;
        let (diff, hidden) = readable.diff(diff_manifests(&from.manifest(), &to.manifest()));
        Ok(BackupDiff {
            from: from.backup.clone(),
            to: to.backup.clone(),
            diff,
            hidden,
        })
    }

    /// What a backup of `body` would take: validated as a create would be (policy and the API
    /// server's dry-run), then Velero's collection run against the namespace's live objects as
    /// the caller can read them. Creates nothing.
    pub async fn backup_dry_run(
        &self,
        caller: &Caller,
        namespace: &str,
        body: &Value,
    ) -> Result<BackupDryRun, GatewayError> {
        let (backup, grant) = self
            .create_granted::<NonAdminBackup>(caller, namespace, body, true)
            .await?;
        let policy = self.data.effective_policy(&grant);
        let spec = build_velero_backup_spec(namespace, &backup.spec.backup_spec, &policy, None)
            .map_err(|violation| GatewayError::from_violations("NonAdminBackup", &[violation]))?;
        let collected = self.collect_backup(caller, &grant, &spec).await?;
        let overlaps = self
            .running_overlaps(caller, namespace, &collected.overlap_input(), Skip::Nothing)
            .await?;
        let CollectedBackup {
            manifest,
            collection,
            ..
        } = collected;
        // Collected with the caller's own token, so normally all readable; the same rule
        // applies whatever the source.
        let readable = self.readable_by(caller, manifest.items()).await?;
        let (items, hidden) = readable.split(manifest.into_items());
        let visible = Manifest::from_items(items);
        Ok(BackupDryRun {
            api_version: MANIFEST_API_VERSION.into(),
            kind: "BackupDryRun".into(),
            backup: present(&backup),
            counts: visible.counts_by_kind(),
            total_items: visible.len() as u64,
            items: visible.into_items(),
            unreadable: collection.unreadable,
            overlaps,
            hidden,
        })
    }

    /// What a restore of `body` would do: validated as a create would be, then the backup's
    /// contents (downloaded with the caller's token) planned by Velero's restore rules and
    /// decided against the namespace as the caller can read it now. Creates nothing.
    pub async fn restore_preview(
        &self,
        caller: &Caller,
        namespace: &str,
        body: &Value,
    ) -> Result<RestorePreviewView, GatewayError> {
        let (restore, grant) = self
            .create_granted::<NonAdminRestore>(caller, namespace, body, true)
            .await?;
        let PlannedRestore {
            plan,
            served,
            infos,
            client,
            backup_name,
        } = self.plan_restore(caller, namespace, &restore).await?;
        let live_reads = plan.live_reads(&infos);
        let reads = live_reads
            .iter()
            .filter_map(|read| {
                live::find(&served, &read.resource).map(|resource| Read {
                    resource: resource.clone(),
                    namespace: read.namespace.clone(),
                    name: read.name.clone(),
                })
            })
            .collect::<Vec<_>>();
        if reads.len() != live_reads.len() {
            return Err(GatewayError::Upstream);
        }
        let outcomes = live::read_all(&client, reads).await;
        let mut live = LiveObjects::new();
        for (read, outcome) in live_reads.iter().zip(outcomes) {
            // A tenant may not be allowed to read its own Namespace object; the gateway knows
            // it exists.
            if read.resource.is_namespaces()
                && read.name.as_deref() == Some(namespace)
                && matches!(outcome, ListOutcome::Forbidden(_))
                && self.data.namespace(&grant).is_some()
            {
                live.record_object(
                    "namespaces",
                    None,
                    namespace,
                    Some(namespace_object(self, &client, &grant).await),
                );
                continue;
            }
            live.record(read, outcome);
        }
        let preview = preview_restore(&plan, &live);
        let restore_name = restore.metadata.name.clone().unwrap_or_default();
        let overlaps = self
            .restore_overlaps(caller, &grant, &client, &plan, &infos, &restore_name)
            .await?;
        let overlaps = self.readable_overlaps(caller, overlaps).await?;
        let readable = self.readable_by(caller, &preview.entries).await?;
        let (entries, hidden) = readable.split(preview.entries);
        Ok(RestorePreviewView {
            api_version: MANIFEST_API_VERSION.into(),
            kind: "RestorePreview".into(),
            restore: present(&restore),
            backup_name,
            entries,
            counts: preview.counts,
            overlaps,
            hidden,
        })
    }

    /// Velero's collection of `spec` run against `namespace`'s live objects as the caller can
    /// read them (the dry-run's and a pending backup's items).
    async fn collect_backup(
        &self,
        caller: &Caller,
        access: &Authorized,
        spec: &crate::api::velero::BackupSpec,
    ) -> Result<CollectedBackup, GatewayError> {
        let client = self.user_client(caller)?;
        let served = self
            .manifest_state()
            .discovery
            .served(&client)
            .await
            .map_err(upstream)?;
        let (discovered, infos) = served_infos(&served);
        let namespace_object = namespace_object(self, &client, access).await;
        let plan = CollectPlan::new(spec, &discovered, std::slice::from_ref(&namespace_object))
            .map_err(|error| invalid_spec("spec.backupSpec", error))?;
        let reads = plan
            .requests()
            .iter()
            .filter_map(|request| {
                live::find(&served, &request.resource).map(|resource| Read {
                    resource: resource.clone(),
                    namespace: request.namespace.clone(),
                    name: None,
                })
            })
            .collect::<Vec<_>>();
        if reads.len() != plan.requests().len() {
            return Err(GatewayError::Upstream);
        }
        let outcomes = live::read_all(&client, reads).await;
        let collection = plan.finish(outcomes).map_err(|_| GatewayError::Upstream)?;
        let manifest = manifest_of_items(&collection.items);
        Ok(CollectedBackup {
            collection,
            manifest,
            infos,
            namespace_object,
        })
    }

    /// `restore` planned by Velero's restore rules against its backup's contents (downloaded
    /// with the caller's token): the preview's and a pending restore's items.
    async fn plan_restore(
        &self,
        caller: &Caller,
        namespace: &str,
        restore: &NonAdminRestore,
    ) -> Result<PlannedRestore, GatewayError> {
        let backup_name = restore
            .spec
            .restore_spec
            .backup_name
            .clone()
            .unwrap_or_default();
        let (backup_grant, backup) = self
            .get_granted::<NonAdminBackup>(caller, namespace, &backup_name)
            .await?;
        let velero_backup = backup
            .status
            .as_ref()
            .and_then(|status| status.velero_backup.as_ref())
            .and_then(|velero| velero.name.clone())
            .ok_or_else(|| {
                GatewayError::ArtifactUnavailable(format!(
                    "backup {backup_name:?} has no Velero backup yet; preview it once it has completed"
                ))
            })?;
        let policy = self.data.effective_policy(&backup_grant);
        let spec = build_velero_restore_spec(
            namespace,
            &restore.spec.restore_spec,
            &velero_backup,
            &policy,
        )
        .map_err(|violation| GatewayError::from_violations("NonAdminRestore", &[violation]))?;
        let contents = self
            .backup_contents_tarball(caller, namespace, &backup_name)
            .await?;
        let items = tokio::task::spawn_blocking(move || read_backup_tarball(&contents))
            .await
            .map_err(|_| GatewayError::Upstream)?
            .map_err(|error| {
                tracing::warn!(error = %error, "a backup tarball cannot be read");
                GatewayError::ArtifactUnavailable(
                    "the backup's contents cannot be read; its data may be damaged".into(),
                )
            })?;
        let client = self.user_client(caller)?;
        let served = self
            .manifest_state()
            .discovery
            .served(&client)
            .await
            .map_err(upstream)?;
        let (_, infos) = served_infos(&served);
        let restore_name = restore.metadata.name.clone().unwrap_or_default();
        let plan = RestorePlan::new(items, &spec, &infos, &velero_backup, &restore_name)
            .map_err(|error| invalid_spec("spec.restoreSpec", error))?;
        Ok(PlannedRestore {
            plan,
            served,
            infos,
            client,
            backup_name,
        })
    }

    /// Running operations of `namespace` (other than restore `restore_name`) sharing objects
    /// with what `plan` writes.
    async fn restore_overlaps(
        &self,
        caller: &Caller,
        access: &Authorized,
        client: &kube::Client,
        plan: &RestorePlan,
        infos: &[ApiResourceInfo],
        restore_name: &str,
    ) -> Result<Vec<OperationOverlap>, GatewayError> {
        // The objects the restore writes, in their target namespaces.
        let restored: Vec<BackupItem> = plan
            .restored_entries()
            .map(|entry| {
                let mut item = entry.item.clone();
                item.namespace = entry.target_namespace.clone();
                item
            })
            .collect();
        let namespace_object = namespace_object(self, client, access).await;
        let input = OverlapInput {
            identities: IdentitySet::of_manifest(&manifest_of_items(&restored)),
            items: &restored,
            infos,
            namespace_objects: std::slice::from_ref(&namespace_object),
        };
        self.running_overlaps(
            caller,
            access.namespace(),
            &input,
            Skip::Restore(restore_name),
        )
        .await
    }

    /// Whether backup `name`, created and not started yet, waits on running operations of its
    /// namespace: its items are what its spec would take now (read with the caller's token).
    /// Authorized like getting the backup; a running or finished backup answers at once.
    pub async fn backup_overlaps(
        &self,
        caller: &Caller,
        namespace: &str,
        name: &str,
    ) -> Result<OperationOverlaps, GatewayError> {
        let (grant, backup) = self
            .get_granted::<NonAdminBackup>(caller, namespace, name)
            .await?;
        let operation = backup_label(name);
        if !is_pending_backup(&backup) {
            return Ok(OperationOverlaps::not_pending(operation));
        }
        // The Velero backup's spec once the controller has created it; before, the one it
        // will create.
        let mirrored = backup
            .status
            .as_ref()
            .and_then(|status| status.velero_backup.as_ref())
            .and_then(|velero| velero.spec.clone());
        let spec = match mirrored {
            Some(spec) => spec,
            None => {
                let policy = self.data.effective_policy(&grant);
                build_velero_backup_spec(namespace, &backup.spec.backup_spec, &policy, None)
                    .map_err(|violation| {
                        GatewayError::from_violations("NonAdminBackup", &[violation])
                    })?
            }
        };
        let collected = self.collect_backup(caller, &grant, &spec).await?;
        let overlaps = self
            .running_overlaps(
                caller,
                namespace,
                &collected.overlap_input(),
                Skip::Backup(name),
            )
            .await?;
        Ok(OperationOverlaps::pending_with(operation, overlaps))
    }

    /// Whether restore `name`, created and not started yet, waits on running operations of
    /// its namespace: its items are what it would write, planned as the preview plans them.
    /// Authorized like getting the restore; a running or finished restore answers at once.
    pub async fn restore_overlaps_of(
        &self,
        caller: &Caller,
        namespace: &str,
        name: &str,
    ) -> Result<OperationOverlaps, GatewayError> {
        let (grant, restore) = self
            .get_granted::<NonAdminRestore>(caller, namespace, name)
            .await?;
        let operation = restore_label(name);
        if !is_pending_restore(&restore) {
            return Ok(OperationOverlaps::not_pending(operation));
        }
        let planned = self.plan_restore(caller, namespace, &restore).await?;
        let overlaps = self
            .restore_overlaps(
                caller,
                &grant,
                &planned.client,
                &planned.plan,
                &planned.infos,
                name,
            )
            .await?;
        let overlaps = self.readable_overlaps(caller, overlaps).await?;
        Ok(OperationOverlaps::pending_with(operation, overlaps))
    }

    /// Running backups and restores of `namespace` sharing objects with an operation whose
    /// objects are `input` (leaving out `skip`, the operation itself). Another namespace's
    /// operations are never considered.
    async fn running_overlaps(
        &self,
        caller: &Caller,
        namespace: &str,
        input: &OverlapInput<'_>,
        skip: Skip<'_>,
    ) -> Result<Vec<OperationOverlap>, GatewayError> {
        // Only operations the caller may list are considered: an overlap names them.
        let (backups, restores) = self.queue_grants(caller, namespace).await?;
        let OverlapInput {
            identities,
            items,
            infos,
            namespace_objects,
        } = input;
        let (items, infos, namespace_objects) = (*items, *infos, *namespace_objects);
        let mut running: Vec<(String, IdentitySet)> = Vec::new();
        let running_backups = match &backups {
            Some(grant) => self.data.objects::<NonAdminBackup>(grant)?,
            None => Vec::new(),
        };
        for backup in running_backups {
            let name = backup.metadata.name.as_deref().unwrap_or_default();
            if !is_running_backup(&backup) || skip == Skip::Backup(name) {
                continue;
            }
            let Some(spec) = backup
                .status
                .as_ref()
                .and_then(|s| s.velero_backup.as_ref())
                .and_then(|v| v.spec.clone())
            else {
                continue;
            };
            let Ok(selection) = BackupSelection::new(&spec, namespace_objects, infos) else {
                continue;
            };
            let taken: IdentitySet = items
                .iter()
                .filter(|item| {
                    infos
                        .iter()
                        .find(|info| info.group == item.group && info.plural == item.resource)
                        .is_some_and(|info| {
                            selection.includes_resource(info)
                                && selection.includes_object(info, &item.object)
                        })
                })
                .map(|item| crate::manifest::build::manifest_item_of(item).identity())
                .collect();
            running.push((backup_label(name), taken));
        }
        let running_restores = match &restores {
            Some(grant) => self.data.objects::<NonAdminRestore>(grant)?,
            None => Vec::new(),
        };
        for (grant, restore) in running_restores
            .into_iter()
            .filter_map(|restore| Some((restores.as_ref()?, restore)))
        {
            let name = restore.metadata.name.clone().unwrap_or_default();
            if !is_running_restore(&restore) || skip == Skip::Restore(name.as_str()) {
                continue;
            }
            let Some(source) = restore.spec.restore_spec.backup_name.clone() else {
                continue;
            };
            // The Velero Restore's spec is not mirrored on the NonAdminRestore; the controller
            // builds it from the tenant's spec and the policy exactly so.
            let policy = self.data.effective_policy(grant);
            let Ok(spec) =
                build_velero_restore_spec(namespace, &restore.spec.restore_spec, &source, &policy)
            else {
                continue;
            };
            let Ok(document) = self.stored_manifest(grant, &source).await else {
                continue;
            };
            let Ok(selection) = RestoreSelection::new(&spec, infos) else {
                continue;
            };
            let written: IdentitySet = document
                .items
                .iter()
                .filter(|item| {
                    let object = json!({"metadata": {"name": item.name, "labels": item.labels}});
                    selection.includes_item(
                        &item.group_resource(),
                        item.namespace.as_deref(),
                        &object,
                    )
                })
                .map(|item| ItemIdentity {
                    group_resource: item.group_resource(),
                    namespace: item
                        .namespace
                        .as_deref()
                        .map(|ns| selection.target_namespace(ns).to_owned()),
                    name: item.name.clone(),
                })
                .collect();
            running.push((restore_label(&name), written));
        }
        let operations: Vec<RunningOperation<'_>> = running
            .iter()
            .map(|(operation, items)| RunningOperation { operation, items })
            .collect();
        Ok(overlaps(identities, &operations, OVERLAP_ITEMS_SHOWN))
    }
}
