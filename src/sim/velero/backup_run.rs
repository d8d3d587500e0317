//! Runs one backup as Velero does once it is ReadyToStart: validation (FailedValidation with
//! Velero's messages), InProgress with start time and expiration, collection of the selected
//! objects through the API, progress as items are backed up, and Velero's object-store layout
//! written to the location's bucket — tarball, resource list, logs, results, metadata.
use std::time::{Duration, Instant};

use bytes::Bytes;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};
use serde_json::{Value, json};

use super::clock::timestamp;
use super::cluster::{list_objects, served_resources};
use super::context::{SimContext, SimError, as_json};
use super::operations;
use super::options::Outcome;
use super::validation::{
    BackupValidationContext, BslState, DEFAULT_BACKUP_STORAGE_LOCATION, choose_storage_location,
    effective_backup_ttl, validate_backup,
};
use crate::api::velero::labels::{STORAGE_LOCATION, valid_label_value};
use crate::manifest::collect::{CollectPlan, DiscoveredResource, ListOutcome};
use crate::manifest::selection::object_labels;
use crate::manifest::tarball::{BackupItem, gzip, resource_list, write_backup_tarball};

/// Label that keeps a namespace out of every backup.
const EXCLUDE_FROM_BACKUP: &str = "velero.io/exclude-from-backup";
/// Velero's backup format version.
const FORMAT_VERSION: &str = "1.1.0";

/// Velero's log lines (logrus text format).
pub(super) struct LogWriter {
    lines: Vec<String>,
    context: String,
}

impl LogWriter {
    pub(super) fn new(context: String) -> Self {
        LogWriter {
            lines: Vec::new(),
            context,
        }
    }

    pub(super) fn log(
        &mut self,
        now: chrono::DateTime<chrono::Utc>,
        level: &str,
        msg: &str,
        fields: &[(&str, &str)],
    ) {
        let mut line = format!(
            "time=\"{}\" level={level} msg={:?} {}",
            timestamp(now),
            msg,
            self.context
        );
        for (k, v) in fields {
            line.push_str(&format!(" {k}={v}"));
        }
        self.lines.push(line);
    }

    pub(super) fn gzipped(&self) -> Vec<u8> {
        let mut text = self.lines.join("\n");
        text.push('\n');
        gzip(text.as_bytes())
    }
}

/// Velero's results file: errors and warnings by scope.
pub(super) fn results_json(
    errors: &[(Option<String>, String)],
    warnings: &[(Option<String>, String)],
) -> Value {
    fn scoped(entries: &[(Option<String>, String)]) -> Value {
        let mut velero = Vec::new();
        let mut namespaces = serde_json::Map::new();
        for (ns, msg) in entries {
            match ns {
                Some(ns) => {
                    let list = namespaces.entry(ns.clone()).or_insert_with(|| json!([]));
                    if let Some(a) = list.as_array_mut() {
                        a.push(json!(msg));
                    }
                }
                None => velero.push(json!(msg)),
            }
        }
        let mut out = json!({});
        if !velero.is_empty() {
            out["velero"] = json!(velero);
        }
        if !namespaces.is_empty() {
            out["namespaces"] = Value::Object(namespaces);
        }
        out
    }
    json!({"errors": scoped(errors), "warnings": scoped(warnings)})
}

/// Velero's defaults for a backup: `--default-backup-ttl`, `--default-csi-snapshot-timeout`,
/// `--default-item-operation-timeout`, `--default-volumes-to-fs-backup`,
/// `--default-snapshot-move-data` and `--volume-group-snapshot-label-key` at their defaults.
pub const DEFAULT_CSI_SNAPSHOT_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// `--default-item-operation-timeout`'s default.
pub const DEFAULT_ITEM_OPERATION_TIMEOUT: Duration = Duration::from_secs(4 * 60 * 60);
/// `--volume-group-snapshot-label-key`'s default.
pub const DEFAULT_VGS_LABEL_KEY: &str = "velero.io/volume-group";
/// `--resource-timeout`'s default, recorded on every backup.
pub const DEFAULT_RESOURCE_TIMEOUT: &str = "10m0s";

/// The spec fields `prepareBackupRequest` fills in, as a merge patch (only fields that were
/// unset or zero; a field already set is left as written).
pub fn prepared_spec_defaults(
    spec: &crate::api::velero::BackupSpec,
    choice: &super::validation::StorageLocationChoice,
    namespaces_excluded_by_label: &[String],
) -> Value {
    use crate::api::common::GoDuration;
    let zero = |d: &Option<GoDuration>| {
        d.as_ref()
            .is_none_or(|d| d.parse().is_ok_and(|d| d.is_zero()))
    };
    let mut patch = serde_json::Map::new();
    if zero(&spec.ttl) {
        patch.insert(
            "ttl".into(),
            json!(GoDuration::from_std(super::validation::DEFAULT_BACKUP_TTL).as_str()),
        );
    }
    if spec
        .volume_group_snapshot_label_key
        .as_deref()
        .is_none_or(str::is_empty)
    {
        patch.insert(
            "volumeGroupSnapshotLabelKey".into(),
            json!(DEFAULT_VGS_LABEL_KEY),
        );
    }
    if zero(&spec.csi_snapshot_timeout) {
        patch.insert(
            "csiSnapshotTimeout".into(),
            json!(GoDuration::from_std(DEFAULT_CSI_SNAPSHOT_TIMEOUT).as_str()),
        );
    }
    if zero(&spec.item_operation_timeout) {
        patch.insert(
            "itemOperationTimeout".into(),
            json!(GoDuration::from_std(DEFAULT_ITEM_OPERATION_TIMEOUT).as_str()),
        );
    }
    if spec.default_volumes_to_restic == Some(true) {
        patch.insert("defaultVolumesToFsBackup".into(), json!(true));
    } else if spec.default_volumes_to_fs_backup.is_none() {
        patch.insert("defaultVolumesToFsBackup".into(), json!(false));
    }
    if spec.snapshot_move_data.is_none() {
        patch.insert("snapshotMoveData".into(), json!(false));
    }
    if choice.server_specified {
        patch.insert("storageLocation".into(), json!(choice.name));
    }
    if !namespaces_excluded_by_label.is_empty() {
        let mut excluded = spec.excluded_namespaces.clone().unwrap_or_default();
        excluded.extend(namespaces_excluded_by_label.iter().cloned());
        patch.insert("excludedNamespaces".into(), json!(excluded));
    }
    Value::Object(patch)
}

/// The annotations `prepareBackupRequest` records: the source cluster's version and the
/// resource timeout.
pub fn prepared_annotations(
    version: Option<&k8s_openapi::apimachinery::pkg::version::Info>,
) -> Value {
    let mut annotations = json!({"velero.io/resource-timeout": DEFAULT_RESOURCE_TIMEOUT});
    if let Some(v) = version {
        annotations["velero.io/source-cluster-k8s-gitversion"] = json!(v.git_version);
        annotations["velero.io/source-cluster-k8s-major-version"] = json!(v.major);
        annotations["velero.io/source-cluster-k8s-minor-version"] = json!(v.minor);
    }
    annotations
}

/// Runs backup `name` to its end.
pub(super) async fn run(context: &SimContext, name: &str) -> Result<(), SimError> {
    let backups = context.backups();
    let backup = backups.get(name).await?;
    let locations = context
        .locations()
        .list(&ListParams::default())
        .await?
        .items;
    let choice = choose_storage_location(&backup.spec, &locations, DEFAULT_BACKUP_STORAGE_LOCATION);
    let location = locations
        .iter()
        .find(|l| l.metadata.name.as_deref() == Some(choice.name.as_str()));
    let namespace_objects: Vec<Value> = Api::<Namespace>::all(context.client.clone())
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .map(as_json)
        .collect();
    let excluded_by_label: Vec<String> = namespace_objects
        .iter()
        .filter(|n| {
            object_labels(n)
                .get(EXCLUDE_FROM_BACKUP)
                .is_some_and(|v| v == "true")
        })
        .filter_map(|n| {
            n.pointer("/metadata/name")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect();
    let validation_context = BackupValidationContext {
        namespaces_excluded_by_label: &excluded_by_label,
        volume_snapshot_locations: &[],
    };
    let mut errors = validate_backup(
        &backup.spec,
        &choice,
        BslState::of(location),
        &validation_context,
    );
    let ttl = match effective_backup_ttl(&backup.spec) {
        Ok(t) => t,
        Err(e) => {
            errors.push(format!("invalid TTL: {e}"));
            Duration::ZERO
        }
    };
    // `prepareBackupRequest` writes its defaults and the expiration into the Backup whether it
    // then runs or fails validation (the whole request is patched back either way).
    let now = context.clock.now();
    let expiration = now + chrono::Duration::from_std(ttl).unwrap_or_default();
    let mut spec_patch = prepared_spec_defaults(&backup.spec, &choice, &excluded_by_label);
    let server_version = context.client.apiserver_version().await.ok();
    let annotations = prepared_annotations(server_version.as_ref());
    let labels = json!({STORAGE_LOCATION: valid_label_value(&choice.name)});
    let (Some(location), true) = (location, errors.is_empty()) else {
        context
            .patch(
                &backups,
                name,
                json!({"metadata": {"labels": labels, "annotations": annotations},
                       "spec": spec_patch,
                       "status": {"phase": "FailedValidation", "validationErrors": errors, "version": 1,
                                  "formatVersion": FORMAT_VERSION, "expiration": timestamp(expiration),
                                  "queuePosition": null}}),
            )
            .await?;
        return Ok(());
    };
    let started = now;
    if let Some(spec) = spec_patch.as_object_mut() {
        spec.retain(|_, v| !v.is_null());
    }
    context
        .patch(
            &backups,
            name,
            json!({
                "metadata": {"labels": labels, "annotations": annotations},
                "spec": spec_patch,
                "status": {"phase": "InProgress", "startTimestamp": timestamp(started), "expiration": timestamp(expiration),
                           "version": 1, "formatVersion": FORMAT_VERSION, "queuePosition": null, "progress": {}}
            }),
        )
        .await?;
    let outcome = Outcome::of(&as_json(&backup), context.options.default_outcome);
    if outcome == Outcome::Hang {
        tracing::info!(backup = %name, "simulating a hung backup: it stays InProgress");
        return Ok(());
    }

    let mut log = LogWriter::new(format!("backup={}/{name}", context.options.namespace));
    log.log(started, "info", "Setting up backup temp file", &[]);
    log.log(started, "info", "Starting backup", &[]);
    let mut items = collect(context, &backup.spec, &namespace_objects, &mut log).await?;
    let total = items.len() as i64;
    context
        .patch(
            &backups,
            name,
            json!({"status": {"progress": {"totalItems": total, "itemsBackedUp": 0}}}),
        )
        .await?;
    let delay = match outcome {
        Outcome::Slow => context.options.item_delay * 10,
        _ => context.options.item_delay,
    };
    let mut last_report = Instant::now();
    for (done, item) in items.iter().enumerate() {
        if !delay.is_zero() {
            context.clock.sleep(delay).await;
        }
        log.log(
            context.clock.now(),
            "info",
            "Backed up item",
            &[
                ("name", &item.name),
                ("namespace", item.namespace.as_deref().unwrap_or("")),
                ("resource", &item.group_resource()),
            ],
        );
        let finished = done + 1 == items.len();
        if finished || last_report.elapsed() >= Duration::from_millis(250) {
            last_report = Instant::now();
            context
                .patch(
                    &backups,
                    name,
                    json!({"status": {"progress": {"totalItems": total, "itemsBackedUp": done as i64 + 1}}}),
                )
                .await?;
        }
    }

    let store = context.store_for(location).await?;
    let layout = store.layout().clone();
    if outcome == Outcome::Fail {
        let reason = "simulated failure (sim.velero.nac.openshift.io/outcome=fail)";
        log.log(context.clock.now(), "error", reason, &[]);
        store
            .put(&layout.backup_log_key(name), Bytes::from(log.gzipped()))
            .await?;
        context
            .patch(
                &backups,
                name,
                json!({"status": {"phase": "Failed", "failureReason": reason, "completionTimestamp": timestamp(context.clock.now()), "errors": 1}}),
            )
            .await?;
        return Ok(());
    }
    let mut item_errors = Vec::new();
    if outcome == Outcome::PartiallyFail
        && let Some(first) = items.first()
    {
        item_errors.push((
            first.namespace.clone(),
            format!(
                "simulated error backing up {} {}",
                first.group_resource(),
                first.name
            ),
        ));
    }
    // The CSI plugin's DataUploads (snapshotMoveData): asynchronous operations still running
    // when the items are written.
    let operations = if operations::moves_data(&backup.spec) {
        operations::backup_operations(
            &as_json(&backup),
            &context.options.namespace,
            &mut items,
            context.clock.now(),
        )
    } else {
        Vec::new()
    };
    for operation in &operations {
        let text = |pointer: &str| {
            operation
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let pvc = format!(
            "{}/{}",
            text("/spec/resourceIdentifier/Namespace"),
            text("/spec/resourceIdentifier/Name")
        );
        log.log(
            context.clock.now(),
            "info",
            "DataUpload is submitted successfully.",
            &[
                ("Backup", name),
                ("Operation ID", &text("/spec/operationID")),
                ("Source PVC", &pvc),
            ],
        );
    }
    let tarball = write_backup_tarball(&items).map_err(|e| SimError::Other(e.to_string()))?;
    let list =
        serde_json::to_vec(&resource_list(&items)).map_err(|e| SimError::Other(e.to_string()))?;
    // runBackup ends in WaitingForPluginOperations while operations run, else Finalizing;
    // partially failed when errors were logged. The operations controller, then the finalizer
    // controller, take it on.
    let waiting = !operations.is_empty();
    let after_run = operations::phase_after_run(!item_errors.is_empty(), waiting);
    let mut status = json!({"phase": after_run});
    if waiting {
        status["backupItemOperationsAttempted"] = json!(operations.len());
        status["errors"] = json!(item_errors.len());
        status["warnings"] = json!(0);
    }
    if !waiting {
        context
            .patch(&backups, name, json!({"status": status}))
            .await?;
    }
    store
        .put(&layout.backup_contents_key(name), Bytes::from(tarball))
        .await?;
    // Every other file `persistBackup` uploads: no pod volume backups, native or CSI
    // snapshots or volumes in a simulated backup, so each is an empty list; the item
    // operations are the DataUploads, if any.
    let empty = Bytes::from(gzip(b"[]\n"));
    for key in [
        layout.pod_volume_backups_key(name),
        layout.backup_volume_snapshots_key(name),
        layout.csi_volume_snapshot_classes_key(name),
        layout.backup_volume_info_key(name),
    ] {
        store.put(&key, empty.clone()).await?;
    }
    store
        .put(
            &layout.backup_item_operations_key(name),
            Bytes::from(gzip(&serde_json::to_vec(&operations).unwrap_or_default())),
        )
        .await?;
    store
        .put(
            &layout.backup_resource_list_key(name),
            Bytes::from(gzip(&list)),
        )
        .await?;
    let completed = context.clock.now();
    log.log(completed, "info", "Backup completed", &[]);
    store
        .put(&layout.backup_log_key(name), Bytes::from(log.gzipped()))
        .await?;
    let results = serde_json::to_vec(&results_json(&item_errors, &[]))
        .map_err(|e| SimError::Other(e.to_string()))?;
    store
        .put(
            &layout.backup_results_key(name),
            Bytes::from(gzip(&results)),
        )
        .await?;
    if waiting {
        // persistBackup uploads the backup as it stands, waiting; only then is the Backup
        // patched (as the backup controller does once runBackup returns), and the operations
        // controller (`advance_backup_operations` in the engine) finishes it.
        let metadata = stored_backup_metadata(as_json(&backups.get(name).await?), &status)?;
        store
            .put(&layout.backup_metadata_key(name), Bytes::from(metadata))
            .await?;
        context
            .patch(&backups, name, json!({"status": status}))
            .await?;
        return Ok(());
    }
    let phase = if item_errors.is_empty() {
        "Completed"
    } else {
        "PartiallyFailed"
    };
    let final_status = json!({
        "phase": phase, "completionTimestamp": timestamp(completed), "errors": item_errors.len(), "warnings": 0,
        "progress": {"totalItems": total, "itemsBackedUp": total}
    });
    // velero-backup.json carries the backup as it ends, so a sync elsewhere recreates it whole.
    let metadata = stored_backup_metadata(as_json(&backups.get(name).await?), &final_status)?;
    store
        .put(&layout.backup_metadata_key(name), Bytes::from(metadata))
        .await?;
    context
        .patch(&backups, name, json!({"status": final_status}))
        .await?;
    Ok(())
}

/// `velero-backup.json`: the Backup as read, with `status` overlaid by `status_patch`, without
/// the server-managed metadata a sync elsewhere must not carry over.
pub(super) fn stored_backup_metadata(
    mut backup: Value,
    status_patch: &Value,
) -> Result<Vec<u8>, SimError> {
    merge(&mut backup["status"], status_patch);
    if let Some(m) = backup.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in [
            "uid",
            "resourceVersion",
            "managedFields",
            "generation",
            "creationTimestamp",
        ] {
            m.remove(f);
        }
    }
    serde_json::to_vec(&backup).map_err(|e| SimError::Other(e.to_string()))
}

fn merge(target: &mut Value, patch: &Value) {
    if !target.is_object() {
        *target = json!({});
    }
    if let (Some(t), Some(p)) = (target.as_object_mut(), patch.as_object()) {
        for (k, v) in p {
            t.insert(k.clone(), v.clone());
        }
    }
}

/// Reads every selected object through the API, as Velero's item collector does: the lists
/// [`CollectPlan`] asks for, made with Velero's identity, then the plan's object filters.
async fn collect(
    context: &SimContext,
    spec: &crate::api::velero::BackupSpec,
    namespace_objects: &[Value],
    log: &mut LogWriter,
) -> Result<Vec<BackupItem>, SimError> {
    let resources = served_resources(&context.client).await?;
    let discovered: Vec<DiscoveredResource> = resources
        .iter()
        .map(|r| DiscoveredResource {
            info: r.info.clone(),
            listable: r.listable,
        })
        .collect();
    let plan = CollectPlan::new(spec, &discovered, namespace_objects)
        .map_err(|e| SimError::Other(e.to_string()))?;
    let mut outcomes = Vec::with_capacity(plan.requests().len());
    for request in plan.requests() {
        let Some(resource) = resources.iter().find(|r| r.info == request.resource) else {
            outcomes.push(ListOutcome::Failed("the resource is not served".into()));
            continue;
        };
        let listed = list_objects(&context.client, resource, request.namespace.as_deref()).await;
        outcomes.push(list_outcome(listed));
    }
    let collection = plan
        .finish(outcomes)
        .map_err(|e| SimError::Other(e.to_string()))?;
    for unreadable in &collection.unreadable {
        log.log(
            context.clock.now(),
            "warning",
            &format!(
                "cannot list {}: {}",
                unreadable.resource, unreadable.message
            ),
            &[],
        );
    }
    Ok(collection.items)
}

/// A list's result as the collection plan takes it: a 403 is "forbidden", anything else
/// that failed is "failed".
pub(super) fn list_outcome(result: Result<Vec<Value>, kube::Error>) -> ListOutcome {
    match result {
        Ok(objects) => ListOutcome::Listed(objects),
        Err(kube::Error::Api(status)) if status.code == 403 => {
            ListOutcome::Forbidden(kube::Error::Api(status).to_string())
        }
        Err(error) => ListOutcome::Failed(error.to_string()),
    }
}
