//! Runs one restore as Velero does (one at a time): validation, reading the backup tarball from
//! the backup's location, the restore's filters and namespace mapping, Velero's resource
//! priority order, creating (or skipping/updating) each object with the restore labels, and
//! the restore's logs, results and resource list written under `restores/<name>/`.
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use super::backup_run::{LogWriter, results_json};
use super::clock::timestamp;
use super::cluster::{ServedResource, dynamic_api, served_resources};
use super::context::{SimContext, SimError, as_json};
use super::operations;
use super::options::Outcome;
use super::validation::validate_restore;
use crate::api::velero::labels::STORAGE_LOCATION;
use crate::manifest::preview::{
    Decision, NamespaceToEnsure, PlannedEntry, PlannedStep, RestoreAction, RestorePlan,
};
use crate::manifest::tarball::{gzip, read_backup_tarball};

type Scoped = Vec<(Option<String>, String)>;

/// Runs restore `name` to its end.
pub(super) async fn run(context: &SimContext, name: &str) -> Result<(), SimError> {
    let restores = context.restores();
    let restore = restores.get(name).await?;
    let backups = context.backups().list(&ListParams::default()).await?.items;
    let locations = context
        .locations()
        .list(&ListParams::default())
        .await?
        .items;
    let validation = validate_restore(
        &restore.spec,
        &context.options.namespace,
        &backups,
        &locations,
    );
    let backup_name = validation.backup_name.clone().unwrap_or_default();
    let backup = backups
        .iter()
        .find(|b| b.metadata.name.as_deref() == Some(backup_name.as_str()));
    // `validateAndComplete` adds the non-restorable resources to the excluded ones, fills in
    // the backup a schedule resolved to and the backup's schedule, and the reconciler sets the
    // default item operation timeout; all of it is patched back with the phase.
    let mut spec_patch = serde_json::Map::new();
    let mut excluded = restore.spec.excluded_resources.clone().unwrap_or_default();
    let mut added = false;
    for resource in crate::manifest::selection::NON_RESTORABLE_RESOURCES {
        if !excluded.iter().any(|e| e == resource) {
            excluded.push((*resource).to_owned());
            added = true;
        }
    }
    if added {
        spec_patch.insert("excludedResources".into(), json!(excluded));
    }
    if restore
        .spec
        .item_operation_timeout
        .as_ref()
        .is_none_or(|d| d.parse().is_ok_and(|d| d.is_zero()))
    {
        spec_patch.insert("itemOperationTimeout".into(), json!("4h0m0s"));
    }
    let (Some(backup), true) = (backup, validation.errors.is_empty()) else {
        if validation.backup_name.is_some()
            && restore.spec.backup_name.as_deref().unwrap_or("").is_empty()
        {
            spec_patch.insert("backupName".into(), json!(backup_name));
        }
        context
            .patch(
                &restores,
                name,
                json!({"spec": spec_patch,
                       "status": {"phase": "FailedValidation", "validationErrors": validation.errors}}),
            )
            .await?;
        return Ok(());
    };
    spec_patch.insert("backupName".into(), json!(backup_name));
    if restore
        .spec
        .schedule_name
        .as_deref()
        .unwrap_or("")
        .is_empty()
        && let Some(schedule) = backup
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(crate::api::velero::labels::SCHEDULE_NAME))
    {
        spec_patch.insert("scheduleName".into(), json!(schedule));
    }
    let started = context.clock.now();
    context
        .patch(
            &restores,
            name,
            json!({"spec": spec_patch,
                   "status": {"phase": "InProgress", "startTimestamp": timestamp(started), "progress": {}}}),
        )
        .await?;
    let outcome = Outcome::of(&as_json(&restore), context.options.default_outcome);
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
    let store = context.store_for(location).await?;
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

    let resources = served_resources(&context.client).await?;
    let infos: Vec<_> = resources.iter().map(|r| r.info.clone()).collect();
    // The same plan a restore preview evaluates: order, filters, skips, prepared objects.
    let plan = RestorePlan::new(items, &restore.spec, &infos, &backup_name, name)
        .map_err(|e| SimError::Other(e.to_string()))?;

    let mut log = LogWriter::new(format!("restore={}/{name}", context.options.namespace));
    log.log(
        started,
        "info",
        "starting restore",
        &[("backup", &backup_name)],
    );
    let total = plan.total_items() as i64;
    context
        .patch(
            &restores,
            name,
            json!({"status": {"progress": {"totalItems": total, "itemsRestored": 0}}}),
        )
        .await?;
    let mut errors: Scoped = Vec::new();
    let mut warnings: Scoped = Vec::new();
    let mut restored_list: BTreeMap<String, Vec<String>> = BTreeMap::new();
    // The CSI plugin's DataDownloads for PVCs whose data the backup moved.
    let restore_json = as_json(&restore);
    let mut operations = Vec::new();
    let mut last_report = Instant::now();
    let delay = match outcome {
        Outcome::Slow => context.options.item_delay * 10,
        _ => context.options.item_delay,
    };
    for (done, entry) in plan.restored_entries().enumerate() {
        if !delay.is_zero() {
            context.clock.sleep(delay).await;
        }
        let item = &entry.item;
        let target_namespace = &entry.target_namespace;
        if let Some(ensure) = &entry.ensure_namespace
            && let Err(e) = ensure_namespace(context, &resources, ensure).await
        {
            errors.push((
                Some(ensure.name.clone()),
                format!("error creating namespace {}: {e}", ensure.name),
            ));
        }
        match restore_entry(context, &resources, &plan, entry).await {
            Ok(decision) => {
                // Every item's outcome is logged with what it was and what was done, so the
                // log says what the restore did item by item (as a preview predicts it).
                let group_resource = item.group_resource();
                let fields = [
                    ("resource", group_resource.as_str()),
                    ("namespace", target_namespace.as_deref().unwrap_or("")),
                    ("name", item.name.as_str()),
                    ("action", action_name(decision.action)),
                ];
                if decision.action == RestoreAction::Create
                    && operations::restores_moved_data(&backup.spec, restore.spec.restore_pvs, item)
                {
                    let operation = operations::restore_operation(
                        &restore_json,
                        &context.options.namespace,
                        item,
                        target_namespace.as_deref(),
                        context.clock.now(),
                    );
                    let id = operation
                        .pointer("/spec/operationID")
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    log.log(
                        context.clock.now(),
                        "info",
                        "DataDownload is submitted successfully.",
                        &[("Operation ID", &id), ("restore", name)],
                    );
                    operations.push(operation);
                }
                match decision.action {
                    RestoreAction::Create | RestoreAction::Update => {
                        let key = format!("{}/{}", item.api_version(), item.kind);
                        let entry = match target_namespace {
                            Some(ns) => format!("{ns}/{}", item.name),
                            None => item.name.clone(),
                        };
                        restored_list.entry(key).or_default().push(entry);
                        log.log(context.clock.now(), "info", "Restored item", &fields);
                    }
                    RestoreAction::Fail => {
                        log.log(context.clock.now(), "error", &decision.message, &fields);
                        errors.push((target_namespace.clone(), decision.message));
                    }
                    RestoreAction::Skip | RestoreAction::Undetermined => {
                        let level = if decision.warning { "warning" } else { "info" };
                        log.log(context.clock.now(), level, &decision.message, &fields);
                        if decision.warning {
                            warnings.push((target_namespace.clone(), decision.message));
                        }
                    }
                }
            }
            Err(e) => {
                log.log(context.clock.now(), "error", &e, &[]);
                errors.push((target_namespace.clone(), e));
            }
        }
        if done + 1 == plan.total_items() || last_report.elapsed() >= Duration::from_millis(250) {
            last_report = Instant::now();
            context
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
    // runValidatedRestore ends in WaitingForPluginOperations while operations run, else
    // Finalizing; partially failed when there were errors. The operations controller, then the
    // finalizer controller, take it on.
    let waiting = !operations.is_empty() && outcome != Outcome::Fail;
    let mut status = json!({"phase": operations::phase_after_run(!errors.is_empty(), waiting)});
    if waiting {
        status["restoreItemOperationsAttempted"] = json!(operations.len());
        status["errors"] = json!(errors.len());
        status["warnings"] = json!(warnings.len());
    } else if outcome != Outcome::Fail {
        context
            .patch(&restores, name, json!({"status": status}))
            .await?;
    }
    let completed = context.clock.now();
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
    // The restore's item operations (its DataDownloads, if any) and volume information (none
    // in a simulated restore).
    let empty = Bytes::from(gzip(b"[]\n"));
    store
        .put(
            &layout.restore_item_operations_key(name),
            Bytes::from(gzip(&serde_json::to_vec(&operations).unwrap_or_default())),
        )
        .await?;
    store
        .put(&layout.restore_volume_info_key(name), empty)
        .await?;
    let list = serde_json::to_vec(&restored_list).map_err(|e| SimError::Other(e.to_string()))?;
    store
        .put(
            &layout.restore_resource_list_key(name),
            Bytes::from(gzip(&list)),
        )
        .await?;
    if waiting {
        // Patched once everything is uploaded, as the restore controller does after
        // runValidatedRestore; the operations controller (`advance_restore_operations` in the
        // engine) finishes it.
        context
            .patch(&restores, name, json!({"status": status}))
            .await?;
        return Ok(());
    }
    let status = if outcome == Outcome::Fail {
        json!({"phase": "Failed", "failureReason": "simulated failure (sim.velero.nac.openshift.io/outcome=fail)",
               "completionTimestamp": timestamp(completed), "errors": errors.len() + 1, "warnings": warnings.len()})
    } else {
        json!({"phase": if errors.is_empty() { "Completed" } else { "PartiallyFailed" },
               "completionTimestamp": timestamp(completed), "errors": errors.len(), "warnings": warnings.len(),
               "progress": {"totalItems": total, "itemsRestored": total}})
    };
    context
        .patch(&restores, name, json!({"status": status}))
        .await?;
    Ok(())
}

fn action_name(action: RestoreAction) -> &'static str {
    match action {
        RestoreAction::Create => "created",
        RestoreAction::Update => "updated",
        RestoreAction::Skip => "skipped",
        RestoreAction::Fail => "failed",
        RestoreAction::Undetermined => "undetermined",
    }
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

/// Creates the target namespace when missing, as the plan's decision says.
async fn ensure_namespace(
    context: &SimContext,
    resources: &[ServedResource],
    ensure: &NamespaceToEnsure,
) -> Result<(), String> {
    let ns_resource =
        find_resource(resources, "", "namespaces").ok_or("the cluster serves no namespaces")?;
    let api = dynamic_api(&context.client, &ns_resource.api, false, "");
    let existing = api.get_opt(&ensure.name).await.map_err(|e| e.to_string())?;
    let existing = existing.as_ref().and_then(|e| serde_json::to_value(e).ok());
    if ensure.decide(existing.as_ref()).action != RestoreAction::Create {
        return Ok(());
    }
    let object: kube::api::DynamicObject =
        serde_json::from_value(ensure.object.clone()).map_err(|e| e.to_string())?;
    match api.create(&PostParams::default(), &object).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

/// Carries out the plan's decision for one entry against the cluster: reads the object at the
/// target, decides as the preview does, then creates or patches it. `Err` is an error reading
/// or writing the cluster.
async fn restore_entry(
    context: &SimContext,
    resources: &[ServedResource],
    plan: &RestorePlan,
    entry: &PlannedEntry,
) -> Result<Decision, String> {
    let PlannedStep::Apply { desired, status } = &entry.step else {
        return Ok(entry.decide(None, plan.policy()));
    };
    let item = &entry.item;
    let group_resource = item.group_resource();
    let resource = find_resource(resources, &item.group, &item.resource)
        .ok_or_else(|| format!("the cluster does not serve {group_resource}"))?;
    let api = dynamic_api(
        &context.client,
        &resource.api,
        resource.info.namespaced,
        entry.target_namespace.as_deref().unwrap_or_default(),
    );
    let existing = api.get_opt(&item.name).await.map_err(|e| e.to_string())?;
    let existing_json = existing.as_ref().and_then(|e| serde_json::to_value(e).ok());
    let decision = entry.decide(existing_json.as_ref(), plan.policy());
    match (&decision.action, &decision.patch) {
        (RestoreAction::Create, _) => {
            let object: kube::api::DynamicObject =
                serde_json::from_value(desired.clone()).map_err(|e| e.to_string())?;
            let created = api
                .create(&PostParams::default(), &object)
                .await
                .map_err(|e| format!("error restoring {group_resource}/{}: {e}", item.name))?;
            // Velero then patches the backed-up managedFields back (the server rewrote them on
            // create), so a restored object says who manages it as it did when backed up.
            let backed_up = desired.pointer("/metadata/managedFields");
            let now = serde_json::to_value(&created.metadata.managed_fields).ok();
            if let Some(fields) = backed_up.filter(|f| Some(*f) != now.as_ref()) {
                api.patch(
                    &item.name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"metadata": {"managedFields": fields}})),
                )
                .await
                .map_err(|e| {
                    format!(
                        "error patch for managed fields {group_resource}/{}: {e}",
                        item.name
                    )
                })?;
            }
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
        }
        (RestoreAction::Update, Some(patch)) => {
            api.patch(&item.name, &PatchParams::default(), &Patch::Merge(patch))
                .await
                .map_err(|e| format!("error updating {group_resource}/{}: {e}", item.name))?;
        }
        _ => {}
    }
    Ok(decision)
}
