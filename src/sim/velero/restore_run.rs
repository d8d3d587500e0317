//! Runs one restore as Velero does (one at a time): validation, reading the backup tarball from
//! the backup's location, the restore's filters and namespace mapping, Velero's resource
//! priority order, creating (or skipping/updating) each object with the restore labels, and
//! the restore's logs, results and resource list written under `restores/<name>/`.
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::backup_run::{LogWriter, results_json};
use super::cluster::{ServedResource, dynamic_api, served_resources};
use super::engine::{Inner, SimError, timestamp};
use super::options::Outcome;
use super::validation::validate_restore;
use crate::api::velero::labels::STORAGE_LOCATION;
use crate::manifest::restore_plan::{
    ExistingAction, RestoreItemOptions, decide_existing, is_never_restored, namespace_for_restore,
    prepare_for_restore, restore_order, restore_skip_reason,
};
use crate::manifest::selection::RestoreSelection;
use crate::manifest::tarball::{BackupItem, gzip, read_backup_tarball};

type Scoped = Vec<(Option<String>, String)>;

/// Runs restore `name` to its end.
pub(super) async fn run(inner: Arc<Inner>, name: &str) -> Result<(), SimError> {
    let restores = inner.restores();
    let restore = restores.get(name).await?;
    let backups = inner.backups().list(&ListParams::default()).await?.items;
    let locations = inner.locations().list(&ListParams::default()).await?.items;
    let validation = validate_restore(
        &restore.spec,
        &inner.options.namespace,
        &backups,
        &locations,
    );
    let backup_name = validation.backup_name.clone().unwrap_or_default();
    let backup = backups
        .iter()
        .find(|b| b.metadata.name.as_deref() == Some(backup_name.as_str()));
    let (Some(backup), true) = (backup, validation.errors.is_empty()) else {
        inner
            .patch(
                &restores,
                name,
                json!({"status": {"phase": "FailedValidation", "validationErrors": validation.errors}}),
            )
            .await?;
        return Ok(());
    };
    let started = inner.clock.now();
    inner
        .patch(
            &restores,
            name,
            json!({"spec": {"backupName": backup_name},
                   "status": {"phase": "InProgress", "startTimestamp": timestamp(started), "progress": {}}}),
        )
        .await?;
    let outcome = Outcome::of(
        &super::engine::as_json(&restore),
        inner.options.default_outcome,
    );
    if outcome == Outcome::Hang {
        return Ok(());
    }
    let location_name = backup
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(STORAGE_LOCATION).cloned())
        .or_else(|| backup.spec.storage_location.clone())
        .unwrap_or_default();
    let location = locations
        .iter()
        .find(|l| l.metadata.name.as_deref() == Some(location_name.as_str()))
        .ok_or_else(|| {
            SimError::Other(format!(
                "backup storage location {location_name:?} not found"
            ))
        })?;
    let store = inner.store_for(location).await?;
    let layout = store.layout().clone();
    let contents = store
        .get(&layout.backup_contents_key(&backup_name))
        .await?
        .ok_or_else(|| {
            SimError::Other(format!(
                "backup {backup_name} has no contents in object storage"
            ))
        })?;
    let items = read_backup_tarball(&contents)
        .map_err(|e| SimError::Other(format!("reading backup contents: {e}")))?;

    let resources = served_resources(&inner.client).await?;
    let infos: Vec<_> = resources.iter().map(|r| r.info.clone()).collect();
    let selection =
        RestoreSelection::new(&restore.spec, &infos).map_err(|e| SimError::Other(e.to_string()))?;
    let backed_up_namespaces: BTreeMap<String, Value> = items
        .iter()
        .filter(|i| i.group.is_empty() && i.resource == "namespaces")
        .map(|i| (i.name.clone(), i.object.clone()))
        .collect();
    let chosen: Vec<BackupItem> = restore_order(
        items
            .into_iter()
            .filter(|i| !(i.group.is_empty() && i.resource == "namespaces"))
            .filter(|i| !is_never_restored(&i.group, &i.resource))
            .filter(|i| {
                selection.includes_item(&i.group_resource(), i.namespace.as_deref(), &i.object)
            })
            .collect(),
    );

    let mut log = LogWriter::new(format!("restore={}/{name}", inner.options.namespace));
    log.log(
        started,
        "info",
        "starting restore",
        &[("backup", &backup_name)],
    );
    let total = chosen.len() as i64;
    inner
        .patch(
            &restores,
            name,
            json!({"status": {"progress": {"totalItems": total, "itemsRestored": 0}}}),
        )
        .await?;
    let mut errors: Scoped = Vec::new();
    let mut warnings: Scoped = Vec::new();
    let mut restored_list: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut ensured_namespaces = BTreeSet::new();
    let mut last_report = Instant::now();
    let delay = match outcome {
        Outcome::Slow => inner.options.item_delay * 10,
        _ => inner.options.item_delay,
    };
    for (done, item) in chosen.iter().enumerate() {
        if !delay.is_zero() {
            inner.clock.sleep(delay).await;
        }
        let target_namespace = item
            .namespace
            .as_deref()
            .map(|n| selection.target_namespace(n).to_string());
        if let Some(ns) = &target_namespace
            && ensured_namespaces.insert(ns.clone())
            && let Err(e) = ensure_namespace(
                &inner,
                &resources,
                ns,
                backed_up_namespaces.get(item.namespace.as_deref().unwrap_or_default()),
            )
            .await
        {
            errors.push((
                Some(ns.clone()),
                format!("error creating namespace {ns}: {e}"),
            ));
        }
        match restore_item(
            &inner,
            &resources,
            &selection,
            &restore.spec,
            &backup_name,
            name,
            item,
            target_namespace.as_deref(),
        )
        .await
        {
            Ok(ItemOutcome::Restored) => {
                let key = format!("{}/{}", item.api_version(), item.kind);
                let entry = match &target_namespace {
                    Some(ns) => format!("{ns}/{}", item.name),
                    None => item.name.clone(),
                };
                restored_list.entry(key).or_default().push(entry);
                log.log(
                    inner.clock.now(),
                    "info",
                    "Restored item",
                    &[("resource", &item.group_resource()), ("name", &item.name)],
                );
            }
            Ok(ItemOutcome::Skipped(Some(w))) => {
                log.log(inner.clock.now(), "warning", &w, &[]);
                warnings.push((target_namespace.clone(), w));
            }
            Ok(ItemOutcome::Skipped(None)) => {}
            Err(e) => {
                log.log(inner.clock.now(), "error", &e, &[]);
                errors.push((target_namespace.clone(), e));
            }
        }
        if done + 1 == chosen.len() || last_report.elapsed() >= Duration::from_millis(250) {
            last_report = Instant::now();
            inner
                .patch(&restores, name, json!({"status": {"progress": {"totalItems": total, "itemsRestored": done as i64 + 1}}}))
                .await?;
        }
    }
    if outcome == Outcome::PartiallyFail {
        errors.push((
            None,
            "simulated restore error (sim.velero.nac.openshift.io/outcome=partially-fail)".into(),
        ));
    }
    inner
        .patch(&restores, name, json!({"status": {"phase": "Finalizing"}}))
        .await?;
    let completed = inner.clock.now();
    log.log(completed, "info", "restore completed", &[]);
    store
        .put(&layout.restore_log_key(name), Bytes::from(log.gzipped()))
        .await?;
    let results = serde_json::to_vec(&results_json(&errors, &warnings))
        .map_err(|e| SimError::Other(e.to_string()))?;
    store
        .put(
            &layout.restore_results_key(name),
            Bytes::from(gzip(&results)),
        )
        .await?;
    let list = serde_json::to_vec(&restored_list).map_err(|e| SimError::Other(e.to_string()))?;
    store
        .put(
            &layout.restore_resource_list_key(name),
            Bytes::from(gzip(&list)),
        )
        .await?;
    let status = if outcome == Outcome::Fail {
        json!({"phase": "Failed", "failureReason": "simulated failure (sim.velero.nac.openshift.io/outcome=fail)",
               "completionTimestamp": timestamp(completed), "errors": errors.len() + 1, "warnings": warnings.len()})
    } else {
        json!({"phase": if errors.is_empty() { "Completed" } else { "PartiallyFailed" },
               "completionTimestamp": timestamp(completed), "errors": errors.len(), "warnings": warnings.len(),
               "progress": {"totalItems": total, "itemsRestored": total}})
    };
    inner
        .patch(&restores, name, json!({"status": status}))
        .await?;
    Ok(())
}

enum ItemOutcome {
    Restored,
    Skipped(Option<String>),
}

fn find_resource<'a>(
    resources: &'a [ServedResource],
    group: &str,
    plural: &str,
) -> Option<&'a ServedResource> {
    resources
        .iter()
        .find(|r| r.info.group == group && r.info.plural == plural)
}

/// Creates the target namespace when missing, from the backed-up one when the backup has it.
async fn ensure_namespace(
    inner: &Inner,
    resources: &[ServedResource],
    namespace: &str,
    backed_up: Option<&Value>,
) -> Result<(), String> {
    let ns_resource =
        find_resource(resources, "", "namespaces").ok_or("the cluster serves no namespaces")?;
    let api = dynamic_api(&inner.client, &ns_resource.api, false, "");
    match api.get_opt(namespace).await {
        Ok(Some(_)) => return Ok(()),
        Ok(None) => {}
        Err(e) => return Err(e.to_string()),
    }
    let object = namespace_for_restore(backed_up, namespace);
    let object: kube::api::DynamicObject =
        serde_json::from_value(object).map_err(|e| e.to_string())?;
    match api.create(&PostParams::default(), &object).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

#[allow(clippy::too_many_arguments)]
async fn restore_item(
    inner: &Inner,
    resources: &[ServedResource],
    selection: &RestoreSelection,
    spec: &crate::api::velero::RestoreSpec,
    backup_name: &str,
    restore_name: &str,
    item: &BackupItem,
    target_namespace: Option<&str>,
) -> Result<ItemOutcome, String> {
    let group_resource = item.group_resource();
    if let Some(skip) = restore_skip_reason(&group_resource, &item.object) {
        return Ok(ItemOutcome::Skipped(Some(skip.to_string())));
    }
    let resource = find_resource(resources, &item.group, &item.resource)
        .ok_or_else(|| format!("the cluster does not serve {group_resource}"))?;
    let options = RestoreItemOptions {
        backup_name,
        restore_name,
        namespace_mapping: selection.namespace_mapping(),
        restore_status: selection.restores_status(&group_resource, &item.object),
        preserve_node_ports: spec.preserve_node_ports == Some(true),
    };
    let mut desired =
        prepare_for_restore(&item.object, &group_resource, &options).map_err(|e| e.to_string())?;
    // Objects are created at the version the cluster prefers for the resource.
    desired["apiVersion"] = json!(resource.api.api_version);
    let status = desired.as_object_mut().and_then(|o| o.remove("status"));
    let api = dynamic_api(
        &inner.client,
        &resource.api,
        resource.info.namespaced,
        target_namespace.unwrap_or_default(),
    );
    let existing = api.get_opt(&item.name).await.map_err(|e| e.to_string())?;
    let existing_json = existing.as_ref().and_then(|e| serde_json::to_value(e).ok());
    match decide_existing(
        existing_json.as_ref(),
        &desired,
        spec.existing_resource_policy.as_ref(),
    ) {
        ExistingAction::Create => {
            let object: kube::api::DynamicObject =
                serde_json::from_value(desired).map_err(|e| e.to_string())?;
            api.create(&PostParams::default(), &object)
                .await
                .map_err(|e| format!("error restoring {group_resource}/{}: {e}", item.name))?;
            if let Some(status) = status {
                // Velero writes restored status through the status subresource when asked to.
                let _ = api
                    .patch_status(
                        &item.name,
                        &PatchParams::default(),
                        &Patch::Merge(json!({"status": status})),
                    )
                    .await;
            }
            Ok(ItemOutcome::Restored)
        }
        ExistingAction::Skip { warning } => Ok(ItemOutcome::Skipped(warning)),
        ExistingAction::Update { patch } => {
            api.patch(&item.name, &PatchParams::default(), &Patch::Merge(patch))
                .await
                .map_err(|e| format!("error updating {group_resource}/{}: {e}", item.name))?;
            Ok(ItemOutcome::Restored)
        }
    }
}
