//! How a Velero 1.18 restore applies backed-up items: order, skips, object preparation and what
//! to do when the object already exists.
//!
//! Followed from `pkg/restore/restore.go` (`getOrderedResources`, `restoreItem`,
//! `resetMetadata`, `addRestoreLabels`, `isCompleted`, `resetVolumeBindingInfo`,
//! `remapClaimRefNS`, the existing-object handling with `existingResourcePolicy`), the default
//! priorities of `pkg/cmd/server/config/config.go`, the never-restored resources of
//! `pkg/controller/restore_controller.go`, the built-in restore item actions of
//! `pkg/restore/actions/` (pods, services, service accounts, PVCs, jobs, role bindings) and
//! `merge_service_account.go`. The label values go through `label.GetValidName`.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value, json};

use crate::api::velero::ExistingResourcePolicy;
use crate::api::velero::labels::{BACKUP_NAME, RESTORE_NAME, valid_label_value};
use crate::manifest::selection::NON_RESTORABLE_RESOURCES;
use crate::manifest::tarball::BackupItem;

/// Restored first, in this order: Velero 1.18's default `--restore-resource-priorities` high
/// list, as discovery resolves its entries on a standard cluster (`clusterroles` is
/// `clusterroles.rbac.authorization.k8s.io`, `volumesnapshotclass.snapshot.storage.k8s.io` the
/// plural `volumesnapshotclasses`...).
pub const HIGH_PRIORITY_RESOURCES: &[&str] = &[
    "customresourcedefinitions.apiextensions.k8s.io",
    "namespaces",
    "storageclasses.storage.k8s.io",
    "volumesnapshotclasses.snapshot.storage.k8s.io",
    "volumesnapshotcontents.snapshot.storage.k8s.io",
    "volumesnapshots.snapshot.storage.k8s.io",
    "datauploads.velero.io",
    "persistentvolumes",
    "persistentvolumeclaims",
    "clusterroles.rbac.authorization.k8s.io",
    "roles.rbac.authorization.k8s.io",
    "serviceaccounts",
    "clusterrolebindings.rbac.authorization.k8s.io",
    "rolebindings.rbac.authorization.k8s.io",
    "secrets",
    "configmaps",
    "limitranges",
    "priorityclasses.scheduling.k8s.io",
    "pods",
    "replicasets.apps",
    "clusterclasses.cluster.x-k8s.io",
    "endpoints",
    "services",
];

/// Restored last, in this order (the default low-priority list).
pub const LOW_PRIORITY_RESOURCES: &[&str] = &[
    "clusterbootstraps.run.tanzu.vmware.com",
    "clusters.cluster.x-k8s.io",
    "clusterresourcesets.addons.cluster.x-k8s.io",
    "apps.kappctrl.k14s.io",
    "packageinstalls.packaging.carvel.dev",
];

/// Where a resource type falls in the restore order; compares as Velero restores: the high
/// priorities in list order, then every other type alphabetically, then the low priorities.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum ResourceRank {
    /// Position in [`HIGH_PRIORITY_RESOURCES`].
    High(usize),
    /// Any other type, ordered by its group-resource name.
    Alphabetical(String),
    /// Position in [`LOW_PRIORITY_RESOURCES`].
    Low(usize),
}

/// The rank of a group-resource (`plural` or `plural.group`) in the restore order.
pub fn resource_restore_rank(group_resource: &str) -> ResourceRank {
    if let Some(index) = HIGH_PRIORITY_RESOURCES
        .iter()
        .position(|resource| *resource == group_resource)
    {
        return ResourceRank::High(index);
    }
    if let Some(index) = LOW_PRIORITY_RESOURCES
        .iter()
        .position(|resource| *resource == group_resource)
    {
        return ResourceRank::Low(index);
    }
    ResourceRank::Alphabetical(group_resource.to_owned())
}

/// Compares two items for restore: by resource rank, then cluster-scoped before namespaced,
/// then namespace and name (Velero walks namespaces in map order and names in file order; the
/// simulator makes that deterministic).
pub fn compare_for_restore(a: &BackupItem, b: &BackupItem) -> Ordering {
    resource_restore_rank(&a.group_resource())
        .cmp(&resource_restore_rank(&b.group_resource()))
        .then_with(|| a.namespace.cmp(&b.namespace))
        .then_with(|| a.name.cmp(&b.name))
}

/// The items in the order Velero restores them.
pub fn restore_order(mut items: Vec<BackupItem>) -> Vec<BackupItem> {
    items.sort_by(compare_for_restore);
    items
}

/// Whether Velero never restores this resource type (nodes, events, Velero's own backups,
/// restores and repositories, CSI node objects, volume attachments).
pub fn is_never_restored(group: &str, resource: &str) -> bool {
    let group_resource = crate::manifest::selection::group_resource(group, resource);
    NON_RESTORABLE_RESOURCES.contains(&group_resource.as_str())
}

/// Why an item selected for restore is nevertheless not created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RestoreSkip {
    /// A pod that Succeeded or Failed, or a job with a completion time (`isCompleted`).
    Completed {
        /// `namespace/name`, or `name` for cluster-scoped objects.
        object: String,
    },
    /// A static pod's mirror, which the kubelet recreates.
    MirrorPod,
    /// A persistent volume with reclaim policy Delete and no snapshot: Velero lets the PVC
    /// provision a new one.
    DynamicallyReprovisioned,
}

impl fmt::Display for RestoreSkip {
    /// The line Velero logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Completed { object } => write!(f, "{object} is complete - skipping"),
            Self::MirrorPod => f.write_str("Not restoring pod because it's a mirror pod"),
            Self::DynamicallyReprovisioned => f.write_str(
                "Dynamically re-provisioning persistent volume because it doesn't have a snapshot and its reclaim policy is Delete.",
            ),
        }
    }
}

/// Whether `restoreItem` skips this backed-up object before creating anything. Volume data is
/// never snapshotted by the simulator, so every PV takes Velero's "no snapshot" path.
pub fn restore_skip_reason(group_resource: &str, object: &Value) -> Option<RestoreSkip> {
    let completed = match group_resource {
        "pods" => matches!(
            str_at(object, "/status/phase"),
            Some("Succeeded" | "Failed")
        ),
        "jobs.batch" => str_at(object, "/status/completionTime").is_some_and(|t| !t.is_empty()),
        _ => false,
    };
    if completed {
        return Some(RestoreSkip::Completed {
            object: namespace_and_name(object),
        });
    }
    if group_resource == "pods"
        && object
            .pointer("/metadata/annotations/kubernetes.io~1config.mirror")
            .and_then(Value::as_str)
            .is_some_and(|mirror| !mirror.is_empty())
    {
        return Some(RestoreSkip::MirrorPod);
    }
    if group_resource == "persistentvolumes"
        && str_at(object, "/spec/persistentVolumeReclaimPolicy") == Some("Delete")
    {
        return Some(RestoreSkip::DynamicallyReprovisioned);
    }
    None
}

fn str_at<'a>(object: &'a Value, pointer: &str) -> Option<&'a str> {
    object.pointer(pointer).and_then(Value::as_str)
}

/// `kube.NamespaceAndName`.
fn namespace_and_name(object: &Value) -> String {
    let name = str_at(object, "/metadata/name").unwrap_or_default();
    match str_at(object, "/metadata/namespace").filter(|namespace| !namespace.is_empty()) {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_owned(),
    }
}

/// What the restore of one item needs to know.
#[derive(Debug, Clone, Copy)]
pub struct RestoreItemOptions<'a> {
    /// The backup restored from (labelled `velero.io/backup-name`).
    pub backup_name: &'a str,
    /// The restore (labelled `velero.io/restore-name`).
    pub restore_name: &'a str,
    /// `spec.namespaceMapping`.
    pub namespace_mapping: &'a BTreeMap<String, String>,
    /// Whether the object's status is restored (see
    /// [`crate::manifest::selection::RestoreSelection::restores_status`]).
    pub restore_status: bool,
    /// `spec.preservePodNodePorts`: keep services' node ports.
    pub preserve_node_ports: bool,
}

/// Why an item could not be prepared; the text is what Velero records as the item's error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrepareError {
    /// The object has no `metadata` object.
    #[error("metadata not found")]
    MetadataNotFound,
    /// A restore item action failed on the object.
    #[error("error preparing {resource_id}: {reason}")]
    Action {
        /// `group-resource/namespace/name`.
        resource_id: String,
        /// The action's error.
        reason: String,
    },
}

/// Metadata fields `resetMetadata` removes; everything else (labels, annotations, finalizers,
/// managedFields...) is restored as backed up.
const RESET_METADATA_FIELDS: &[&str] = &[
    "generateName",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "ownerReferences",
];

/// `resetMetadataAndStatus`: server-owned metadata and the status go.
pub fn reset_metadata_and_status(object: &mut Value) -> Result<(), PrepareError> {
    let metadata = object
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .ok_or(PrepareError::MetadataNotFound)?;
    for field in RESET_METADATA_FIELDS {
        metadata.remove(*field);
    }
    if let Some(fields) = object.as_object_mut() {
        fields.remove("status");
    }
    Ok(())
}

/// The object Velero creates for a backed-up one: the PV claim namespace remapped and its
/// binding reset, server metadata and status removed, the built-in restore item actions
/// applied (pods lose `nodeName`, `priority` and service-account token volumes; services
/// their cluster IPs and, unless preserved, auto-assigned node ports; service accounts their
/// token secret; PVCs their binding annotations; jobs their controller-uid labels; role
/// bindings' subjects follow the namespace mapping), the namespace remapped and the
/// `velero.io/backup-name` and `velero.io/restore-name` labels set.
///
/// With `restore_status` the backed-up status is kept in the result: Velero creates the
/// object without it and then writes it through the status subresource, which the caller must
/// do too. `managedFields` are kept: Velero patches them back after creating.
pub fn prepare_for_restore(
    object: &Value,
    group_resource: &str,
    options: &RestoreItemOptions<'_>,
) -> Result<Value, PrepareError> {
    let mut prepared = object.clone();
    let original_namespace = str_at(object, "/metadata/namespace")
        .filter(|namespace| !namespace.is_empty())
        .map(str::to_owned);
    let target_namespace = original_namespace.as_ref().map(|namespace| {
        options
            .namespace_mapping
            .get(namespace)
            .cloned()
            .unwrap_or_else(|| namespace.clone())
    });

    if group_resource == "persistentvolumes" {
        remap_claim_ref_namespace(&mut prepared, options.namespace_mapping);
        reset_volume_binding_info(&mut prepared);
    }

    let status = prepared.get("status").cloned();
    reset_metadata_and_status(&mut prepared)?;

    let resource_id = resource_id(
        group_resource,
        target_namespace.as_deref(),
        str_at(object, "/metadata/name").unwrap_or_default(),
    );
    match group_resource {
        "pods" => pod_action(&mut prepared),
        "services" => {
            service_action(&mut prepared, options.preserve_node_ports).map_err(|reason| {
                PrepareError::Action {
                    resource_id: resource_id.clone(),
                    reason,
                }
            })?
        }
        "serviceaccounts" => service_account_action(&mut prepared),
        "persistentvolumeclaims" => {
            remove_annotations(&mut prepared, PVC_RESTORE_REMOVED_ANNOTATIONS);
            if str_at(&prepared, "/spec/volumeName").is_some_and(|name| !name.is_empty()) {
                reset_volume_binding_info(&mut prepared);
            }
        }
        "jobs.batch" => job_action(&mut prepared),
        "rolebindings.rbac.authorization.k8s.io"
        | "clusterrolebindings.rbac.authorization.k8s.io" => {
            remap_subject_namespaces(&mut prepared, options.namespace_mapping);
        }
        _ => {}
    }

    if let (Some(target), Some(metadata)) = (
        target_namespace,
        prepared.get_mut("metadata").and_then(Value::as_object_mut),
    ) {
        metadata.insert("namespace".into(), Value::String(target));
    }
    add_restore_labels(&mut prepared, options.restore_name, options.backup_name);

    if options.restore_status
        && let (Some(status), Some(fields)) = (status, prepared.as_object_mut())
    {
        fields.insert("status".into(), status);
    }
    Ok(prepared)
}

/// `getResourceID`.
fn resource_id(group_resource: &str, namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(namespace) => format!("{group_resource}/{namespace}/{name}"),
        None => format!("{group_resource}/{name}"),
    }
}

/// `addRestoreLabels`.
fn add_restore_labels(object: &mut Value, restore_name: &str, backup_name: &str) {
    if let Some(labels) = ensure_object(object, &["metadata", "labels"]) {
        labels.insert(
            BACKUP_NAME.into(),
            Value::String(valid_label_value(backup_name)),
        );
        labels.insert(
            RESTORE_NAME.into(),
            Value::String(valid_label_value(restore_name)),
        );
    }
}

/// The object at `path`, created (or replacing a non-object) on the way. Always `Some`; the
/// `Option` only spares an impossible panic.
fn ensure_object<'a>(object: &'a mut Value, path: &[&str]) -> Option<&'a mut Map<String, Value>> {
    let mut current = object;
    for key in path {
        if !current.is_object() {
            *current = Value::Object(Map::new());
        }
        current = current
            .as_object_mut()?
            .entry((*key).to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    if !current.is_object() {
        *current = Value::Object(Map::new());
    }
    current.as_object_mut()
}

fn remove_annotations(object: &mut Value, keys: &[&str]) {
    if let Some(annotations) = object
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        for key in keys {
            annotations.remove(*key);
        }
    }
}

/// Annotations the PVC restore action removes (`pkg/restore/actions/pvc_action.go`).
const PVC_RESTORE_REMOVED_ANNOTATIONS: &[&str] = &[
    "pv.kubernetes.io/bind-completed",
    "pv.kubernetes.io/bound-by-controller",
    "volume.kubernetes.io/storage-provisioner",
    "volume.beta.kubernetes.io/storage-provisioner",
    "volume.kubernetes.io/selected-node",
    "velero.io/volume-snapshot-name",
    "velero.io/data-upload-name",
];

/// `resetVolumeBindingInfo`: a restored PV or PVC looks statically bound, so the controllers
/// bind the pair again.
fn reset_volume_binding_info(object: &mut Value) {
    if let Some(claim_ref) = object
        .pointer_mut("/spec/claimRef")
        .and_then(Value::as_object_mut)
    {
        claim_ref.remove("uid");
        claim_ref.remove("resourceVersion");
    }
    remove_annotations(
        object,
        &[
            "pv.kubernetes.io/bind-completed",
            "pv.kubernetes.io/bound-by-controller",
        ],
    );
}

/// `remapClaimRefNS`.
fn remap_claim_ref_namespace(object: &mut Value, mapping: &BTreeMap<String, String>) {
    if let Some(namespace) = object.pointer_mut("/spec/claimRef/namespace")
        && let Some(target) = namespace.as_str().and_then(|current| mapping.get(current))
    {
        *namespace = Value::String(target.clone());
    }
}

/// The role binding actions: subjects in a remapped namespace follow it.
fn remap_subject_namespaces(object: &mut Value, mapping: &BTreeMap<String, String>) {
    if mapping.is_empty() {
        return;
    }
    let Some(subjects) = object.get_mut("subjects").and_then(Value::as_array_mut) else {
        return;
    };
    for subject in subjects {
        if let Some(namespace) = subject.get_mut("namespace")
            && let Some(target) = namespace.as_str().and_then(|current| mapping.get(current))
        {
            *namespace = Value::String(target.clone());
        }
    }
}

/// The pod action: no node, no priority (admission recomputes it), no legacy service-account
/// token volume or mounts.
fn pod_action(pod: &mut Value) {
    let token_prefix = format!(
        "{}-token-",
        str_at(pod, "/spec/serviceAccountName").unwrap_or_default()
    );
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    spec.remove("nodeName");
    spec.remove("priority");
    let is_token = |entry: &Value| {
        entry
            .get("name")
            .and_then(Value::as_str)
            .is_some_and(|name| name.starts_with(&token_prefix))
    };
    if let Some(volumes) = spec.get_mut("volumes").and_then(Value::as_array_mut) {
        volumes.retain(|volume| !is_token(volume));
    }
    for containers in ["containers", "initContainers", "ephemeralContainers"] {
        let Some(containers) = spec.get_mut(containers).and_then(Value::as_array_mut) else {
            continue;
        };
        for container in containers {
            if let Some(mounts) = container
                .get_mut("volumeMounts")
                .and_then(Value::as_array_mut)
            {
                mounts.retain(|mount| !is_token(mount));
            }
        }
    }
}

/// The job action: the controller-uid selector and template labels go, the job controller
/// assigns new ones.
fn job_action(job: &mut Value) {
    const CONTROLLER_UID_LABELS: [&str; 2] =
        ["batch.kubernetes.io/controller-uid", "controller-uid"];
    for pointer in [
        "/spec/selector/matchLabels",
        "/spec/template/metadata/labels",
    ] {
        if let Some(labels) = job.pointer_mut(pointer).and_then(Value::as_object_mut) {
            for label in CONTROLLER_UID_LABELS {
                labels.remove(label);
            }
        }
    }
}

/// The service account action: the first (from the end) `<name>-token-*` secret is dropped,
/// the token controller makes a new one.
fn service_account_action(account: &mut Value) {
    let prefix = format!(
        "{}-token-",
        str_at(account, "/metadata/name").unwrap_or_default()
    );
    if let Some(secrets) = account.get_mut("secrets").and_then(Value::as_array_mut)
        && let Some(index) = secrets.iter().rposition(|secret| {
            secret
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(|name| name.starts_with(&prefix))
        })
    {
        secrets.remove(index);
    }
}

const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The service action: cluster IPs are reallocated (headless services keep "None"); node
/// ports are cleared unless preserved or set explicitly (by `kubectl apply`'s last applied
/// configuration, or by server-side apply's managed fields); so is an auto-assigned health
/// check node port.
fn service_action(service: &mut Value, preserve_node_ports: bool) -> Result<(), String> {
    let last_applied: Option<Value> =
        match str_at(service, &annotation_pointer(LAST_APPLIED_ANNOTATION)) {
            Some(text) => Some(serde_json::from_str(text).map_err(|error| error.to_string())?),
            None => None,
        };
    let managed_spec_fields: Vec<Value> = service
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.pointer("/fieldsV1/f:spec").cloned())
        .collect();
    let Some(spec) = service.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    if spec.get("clusterIP").and_then(Value::as_str) != Some("None") {
        spec.remove("clusterIP");
        spec.remove("clusterIPs");
    }
    if preserve_node_ports {
        return Ok(());
    }
    delete_node_ports(spec, last_applied.as_ref(), &managed_spec_fields);
    delete_health_check_node_port(spec, last_applied.as_ref(), &managed_spec_fields);
    Ok(())
}

/// JSON pointer of an annotation (`/` in keys escaped as `~1`).
fn annotation_pointer(key: &str) -> String {
    format!(
        "/metadata/annotations/{}",
        key.replace('~', "~0").replace('/', "~1")
    )
}

fn delete_node_ports(
    spec: &mut Map<String, Value>,
    last_applied: Option<&Value>,
    managed_spec_fields: &[Value],
) {
    if spec.get("type").and_then(Value::as_str) == Some("ExternalName") {
        return;
    }
    let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) else {
        return;
    };
    if let Some(applied) = last_applied {
        let mut named = BTreeSet::new();
        let mut unnamed = BTreeSet::new();
        for port in applied
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let node_port = port.get("nodePort").and_then(|value| {
                value
                    .as_i64()
                    .or_else(|| value.as_f64().map(|float| float as i64))
                    .or_else(|| value.as_str().and_then(|text| text.parse().ok()))
            });
            if let Some(node_port) = node_port.filter(|port| *port > 0) {
                match port.get("name").and_then(Value::as_str) {
                    Some(name) => {
                        named.insert(name.to_owned());
                    }
                    None => {
                        unnamed.insert(node_port);
                    }
                }
            }
        }
        for port in ports.iter_mut() {
            let name = port.get("name").and_then(Value::as_str).unwrap_or_default();
            let keep = if name.is_empty() {
                port.get("nodePort")
                    .and_then(Value::as_i64)
                    .is_some_and(|value| unnamed.contains(&value))
            } else {
                named.contains(name)
            };
            if !keep && let Some(fields) = port.as_object_mut() {
                fields.remove("nodePort");
            }
        }
        return;
    }
    let explicit: BTreeSet<String> = managed_spec_fields
        .iter()
        .filter_map(|spec_fields| spec_fields.get("f:ports").and_then(Value::as_object))
        .flat_map(|ports| {
            ports
                .iter()
                .filter(|(_, fields)| fields.get("f:nodePort").is_some())
                .map(|(key, _)| key.clone())
        })
        .collect();
    for port in ports.iter_mut() {
        let key = format!(
            r#"k:{{"port":{},"protocol":"{}"}}"#,
            port.get("port").and_then(Value::as_i64).unwrap_or_default(),
            port.get("protocol")
                .and_then(Value::as_str)
                .unwrap_or_default()
        );
        if !explicit.contains(&key)
            && let Some(fields) = port.as_object_mut()
        {
            fields.remove("nodePort");
        }
    }
}

fn delete_health_check_node_port(
    spec: &mut Map<String, Value>,
    last_applied: Option<&Value>,
    managed_spec_fields: &[Value],
) {
    let applies = spec.get("externalTrafficPolicy").and_then(Value::as_str) == Some("Local")
        && spec.get("type").and_then(Value::as_str) == Some("LoadBalancer")
        && spec
            .get("healthCheckNodePort")
            .and_then(Value::as_i64)
            .is_some_and(|port| port != 0);
    if !applies {
        return;
    }
    let explicitly_applied = last_applied
        .and_then(|applied| applied.pointer("/spec/healthCheckNodePort"))
        .and_then(Value::as_f64)
        .is_some_and(|port| port != 0.0);
    let server_side_applied = managed_spec_fields
        .iter()
        .any(|fields| fields.get("f:healthCheckNodePort").is_some());
    if !explicitly_applied && !server_side_applied {
        spec.remove("healthCheckNodePort");
    }
}

/// The Namespace Velero creates before restoring into `target_name`: the backed-up namespace's
/// labels, annotations and spec under the target name (`getNamespace`), or a bare namespace
/// when the backup holds none. Velero adds no restore labels to it.
pub fn namespace_for_restore(backed_up: Option<&Value>, target_name: &str) -> Value {
    let Some(backed_up) = backed_up else {
        return json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": target_name}});
    };
    let mut metadata = Map::new();
    metadata.insert("name".into(), Value::String(target_name.to_owned()));
    for field in ["labels", "annotations"] {
        if let Some(value) = backed_up.pointer(&format!("/metadata/{field}")) {
            metadata.insert(field.into(), value.clone());
        }
    }
    let mut namespace = Map::new();
    namespace.insert(
        "apiVersion".into(),
        backed_up.get("apiVersion").cloned().unwrap_or(json!("v1")),
    );
    namespace.insert(
        "kind".into(),
        backed_up.get("kind").cloned().unwrap_or(json!("Namespace")),
    );
    namespace.insert("metadata".into(), Value::Object(metadata));
    if let Some(spec) = backed_up.get("spec") {
        namespace.insert("spec".into(), spec.clone());
    }
    Value::Object(namespace)
}

// ---------------------------------------------------------------------------------------------
// Existing objects
// ---------------------------------------------------------------------------------------------

/// What to do with an item given what the cluster already holds.
#[derive(Debug, Clone, PartialEq)]
pub enum ExistingAction {
    /// Nothing there: create the prepared object.
    Create,
    /// Leave the in-cluster object alone; a warning is recorded when it differs from the
    /// backed-up one.
    Skip {
        /// Velero's warning, in the restore's warnings for the object's namespace.
        warning: Option<String>,
    },
    /// Apply this JSON merge patch (RFC 7386) to the in-cluster object.
    Update {
        /// The merge patch.
        patch: Value,
    },
}

/// Velero's handling of an object that already exists (`restoreItem` after its create fails
/// with AlreadyExists, or is known to exist):
/// - the in-cluster object, without server metadata and status and given the restore labels,
///   equal to `desired`: nothing to do, silently; with policy `update` the restore labels are
///   patched on;
/// - a ServiceAccount that differs: secrets, image pull secrets, labels and annotations from
///   the backup are merged in (whatever the policy);
/// - otherwise policy `none`: `could not restore, Kind "name" already exists...`; policy
///   `update`: the difference is patched; no policy: `could not restore, Kind:name already
///   exists...`.
///
/// `desired` is the result of [`prepare_for_restore`]; its status is not compared (Velero
/// compares before restoring status).
pub fn decide_existing(
    existing: Option<&Value>,
    desired: &Value,
    policy: Option<&ExistingResourcePolicy>,
) -> ExistingAction {
    let Some(existing) = existing else {
        return ExistingAction::Create;
    };
    let mut desired = desired.clone();
    if let Some(fields) = desired.as_object_mut() {
        fields.remove("status");
    }
    let mut from_cluster = existing.clone();
    if reset_metadata_and_status(&mut from_cluster).is_err() {
        return ExistingAction::Skip { warning: None };
    }
    let restore_labels = [BACKUP_NAME, RESTORE_NAME].map(|key| {
        (
            key,
            desired
                .pointer(&format!("/metadata/labels/{}", key.replace('/', "~1")))
                .cloned()
                .unwrap_or(Value::String(String::new())),
        )
    });
    if let Some(labels) = ensure_object(&mut from_cluster, &["metadata", "labels"]) {
        for (key, value) in &restore_labels {
            labels.insert((*key).to_owned(), value.clone());
        }
    }
    let with_labels = from_cluster.clone();
    // `removeRestoreLabels` blanks them, so a patch always (re)writes them.
    if let Some(labels) = ensure_object(&mut from_cluster, &["metadata", "labels"]) {
        for (key, _) in &restore_labels {
            labels.insert((*key).to_owned(), Value::String(String::new()));
        }
    }
    let without_labels = from_cluster;

    let update_policy = policy == Some(&ExistingResourcePolicy::Update);
    if with_labels == desired {
        return match update_policy
            .then(|| create_merge_patch(&without_labels, &with_labels))
            .flatten()
        {
            Some(patch) => ExistingAction::Update { patch },
            None => ExistingAction::Skip { warning: None },
        };
    }

    let kind = str_at(&desired, "/kind").unwrap_or_default().to_owned();
    let name = str_at(&desired, "/metadata/name")
        .unwrap_or_default()
        .to_owned();
    if kind == "ServiceAccount" && str_at(&desired, "/apiVersion") == Some("v1") {
        let merged = merge_service_accounts(&with_labels, &desired);
        return match create_merge_patch(&with_labels, &merged) {
            Some(patch) => ExistingAction::Update { patch },
            None => ExistingAction::Skip { warning: None },
        };
    }
    let difference =
        "already exists. Warning: the in-cluster version is different than the backed-up version";
    match policy {
        Some(ExistingResourcePolicy::None) => ExistingAction::Skip {
            warning: Some(format!(
                "could not restore, {kind} {} {difference}",
                serde_json::to_string(&name).unwrap_or_default()
            )),
        },
        Some(ExistingResourcePolicy::Update) => match create_merge_patch(&without_labels, &desired)
        {
            Some(patch) => ExistingAction::Update { patch },
            None => ExistingAction::Skip { warning: None },
        },
        // An unknown non-empty policy (refused by validation) does nothing, as in Velero.
        Some(ExistingResourcePolicy::Other(other)) if !other.is_empty() => {
            ExistingAction::Skip { warning: None }
        }
        _ => ExistingAction::Skip {
            warning: Some(format!("could not restore, {kind}:{name} {difference}")),
        },
    }
}

/// `mergeServiceAccounts`: the in-cluster account keeps everything it has and gains the
/// backup's missing secrets, image pull secrets, labels and annotations.
fn merge_service_accounts(from_cluster: &Value, from_backup: &Value) -> Value {
    let mut merged = from_cluster.clone();
    for field in ["secrets", "imagePullSecrets"] {
        let additions: Vec<Value> = from_backup
            .get(field)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        if additions.is_empty() {
            continue;
        }
        let Some(fields) = merged.as_object_mut() else {
            continue;
        };
        let list = fields
            .entry(field)
            .or_insert_with(|| Value::Array(Vec::new()));
        if !list.is_array() {
            *list = Value::Array(Vec::new());
        }
        if let Value::Array(list) = list {
            for addition in additions {
                let name = addition.get("name");
                if !list.iter().any(|existing| existing.get("name") == name) {
                    list.push(addition);
                }
            }
        }
    }
    for field in ["labels", "annotations"] {
        let additions = from_backup
            .pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        if additions.is_empty() {
            continue;
        }
        if let Some(map) = ensure_object(&mut merged, &["metadata", field]) {
            for (key, value) in additions {
                map.entry(key).or_insert(value);
            }
        }
    }
    merged
}

/// `jsonpatch.CreateMergePatch`: the RFC 7386 merge patch turning `original` into `target`,
/// `None` when they are equal.
pub fn create_merge_patch(original: &Value, target: &Value) -> Option<Value> {
    if original == target {
        return None;
    }
    match (original, target) {
        (Value::Object(original), Value::Object(target)) => {
            let mut patch = Map::new();
            for (key, value) in target {
                match original.get(key) {
                    Some(before) => {
                        if let Some(change) = create_merge_patch(before, value) {
                            patch.insert(key.clone(), change);
                        }
                    }
                    None => {
                        patch.insert(key.clone(), value.clone());
                    }
                }
            }
            for key in original.keys() {
                if !target.contains_key(key) {
                    patch.insert(key.clone(), Value::Null);
                }
            }
            Some(Value::Object(patch))
        }
        _ => Some(target.clone()),
    }
}

/// The merge patch that only writes the restore labels (Velero's fallback when a full patch
/// fails with policy `update`).
pub fn restore_labels_patch(backup_name: &str, restore_name: &str) -> Value {
    json!({"metadata": {"labels": {
        BACKUP_NAME: valid_label_value(backup_name),
        RESTORE_NAME: valid_label_value(restore_name),
    }}})
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use pretty_assertions::assert_eq;
    use sha2::{Digest, Sha256};

    use super::*;

    fn item(group: &str, resource: &str, namespace: Option<&str>, name: &str) -> BackupItem {
        BackupItem {
            group: group.to_owned(),
            version: "v1".to_owned(),
            kind: "Thing".to_owned(),
            resource: resource.to_owned(),
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
            object: json!({}),
        }
    }

    fn options<'a>(mapping: &'a BTreeMap<String, String>) -> RestoreItemOptions<'a> {
        RestoreItemOptions {
            backup_name: "nightly",
            restore_name: "nightly-restore",
            namespace_mapping: mapping,
            restore_status: false,
            preserve_node_ports: false,
        }
    }

    #[test]
    fn restore_order_follows_velero_priorities() {
        let items = vec![
            item("apps", "deployments", Some("team-a"), "web"),
            item("cluster.x-k8s.io", "clusters", Some("team-a"), "c1"),
            item("", "services", Some("team-a"), "web"),
            item("", "configmaps", Some("team-b"), "b"),
            item("", "configmaps", Some("team-a"), "z"),
            item("", "configmaps", Some("team-a"), "a"),
            item("", "namespaces", None, "team-a"),
            item(
                "apiextensions.k8s.io",
                "customresourcedefinitions",
                None,
                "x",
            ),
            item("batch", "cronjobs", Some("team-a"), "nightly"),
            item("", "secrets", Some("team-a"), "creds"),
            item(
                "rbac.authorization.k8s.io",
                "rolebindings",
                Some("team-a"),
                "rb",
            ),
            item("", "persistentvolumeclaims", Some("team-a"), "data"),
            item("", "serviceaccounts", Some("team-a"), "ci"),
        ];
        let order: Vec<String> = restore_order(items)
            .into_iter()
            .map(|item| format!("{}:{}", item.group_resource(), item.name))
            .collect();
        assert_eq!(
            order,
            vec![
                "customresourcedefinitions.apiextensions.k8s.io:x",
                "namespaces:team-a",
                "persistentvolumeclaims:data",
                "serviceaccounts:ci",
                "rolebindings.rbac.authorization.k8s.io:rb",
                "secrets:creds",
                "configmaps:a",
                "configmaps:z",
                "configmaps:b",
                "services:web",
                "cronjobs.batch:nightly",
                "deployments.apps:web",
                "clusters.cluster.x-k8s.io:c1",
            ]
        );
        assert!(resource_restore_rank("pods") < resource_restore_rank("replicasets.apps"));
        assert!(
            resource_restore_rank("zzz.example.com")
                < resource_restore_rank("clusters.cluster.x-k8s.io")
        );
    }

    #[test]
    fn never_restored_resources() {
        for (group, resource) in [
            ("", "nodes"),
            ("", "events"),
            ("events.k8s.io", "events"),
            ("velero.io", "backups"),
            ("velero.io", "restores"),
            ("velero.io", "resticrepositories"),
            ("velero.io", "backuprepositories"),
            ("storage.k8s.io", "csinodes"),
            ("storage.k8s.io", "volumeattachments"),
        ] {
            assert!(is_never_restored(group, resource), "{group}/{resource}");
        }
        assert!(!is_never_restored("", "configmaps"));
        assert!(!is_never_restored("velero.io", "schedules"));
    }

    #[test]
    fn prepare_resets_metadata_labels_and_remaps_namespace() {
        let backed_up = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {
                "name": "settings", "namespace": "team-a",
                "uid": "123", "resourceVersion": "42", "generation": 3,
                "creationTimestamp": "2026-01-01T00:00:00Z", "selfLink": "/x",
                "generateName": "settings-", "deletionGracePeriodSeconds": 30,
                "deletionTimestamp": "2026-01-02T00:00:00Z",
                "ownerReferences": [{"uid": "9"}],
                "labels": {"app": "web"}, "annotations": {"note": "kept"},
                "finalizers": ["example.com/keep"],
                "managedFields": [{"manager": "kubectl"}]
            },
            "data": {"k": "v"},
            "status": {"ignored": true}
        });
        let mapping = BTreeMap::from([("team-a".to_owned(), "team-a-copy".to_owned())]);
        let prepared = prepare_for_restore(&backed_up, "configmaps", &options(&mapping)).unwrap();
        assert_eq!(
            prepared,
            json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {
                    "name": "settings", "namespace": "team-a-copy",
                    "labels": {"app": "web", "velero.io/backup-name": "nightly",
                               "velero.io/restore-name": "nightly-restore"},
                    "annotations": {"note": "kept"},
                    "finalizers": ["example.com/keep"],
                    "managedFields": [{"manager": "kubectl"}]
                },
                "data": {"k": "v"}
            })
        );
        let keep_status = RestoreItemOptions {
            restore_status: true,
            ..options(&mapping)
        };
        let with_status = prepare_for_restore(&backed_up, "configmaps", &keep_status).unwrap();
        assert_eq!(with_status["status"], json!({"ignored": true}));
        assert_eq!(
            prepare_for_restore(&json!({"kind": "X"}), "things", &options(&mapping)),
            Err(PrepareError::MetadataNotFound)
        );
    }

    #[test]
    fn long_names_are_shortened_in_labels() {
        let long = "b".repeat(70);
        let value = valid_label_value(&long);
        assert_eq!(value.len(), 63);
        assert!(value.starts_with(&"b".repeat(57)));
        let digest = hex::encode(Sha256::digest(long.as_bytes()));
        assert_eq!(&value[57..], &digest[..6]);
        assert_eq!(valid_label_value("short"), "short");
    }

    #[test]
    fn role_binding_subjects_and_pv_claims_follow_the_mapping() {
        let mapping = BTreeMap::from([("team-a".to_owned(), "team-b".to_owned())]);
        let binding = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "ci", "namespace": "team-a"},
            "subjects": [
                {"kind": "ServiceAccount", "name": "ci-bot", "namespace": "team-a"},
                {"kind": "ServiceAccount", "name": "other", "namespace": "elsewhere"},
                {"kind": "User", "name": "alice"}
            ],
            "roleRef": {"kind": "ClusterRole", "name": "edit"}
        });
        let prepared = prepare_for_restore(
            &binding,
            "rolebindings.rbac.authorization.k8s.io",
            &options(&mapping),
        )
        .unwrap();
        assert_eq!(prepared["metadata"]["namespace"], "team-b");
        assert_eq!(prepared["subjects"][0]["namespace"], "team-b");
        assert_eq!(prepared["subjects"][1]["namespace"], "elsewhere");
        assert!(prepared["subjects"][2].get("namespace").is_none());

        let volume = json!({
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": "pv-1", "annotations": {
                "pv.kubernetes.io/bound-by-controller": "yes", "keep": "me"}},
            "spec": {"persistentVolumeReclaimPolicy": "Retain",
                     "claimRef": {"namespace": "team-a", "name": "data", "uid": "u", "resourceVersion": "7"}}
        });
        let prepared =
            prepare_for_restore(&volume, "persistentvolumes", &options(&mapping)).unwrap();
        assert_eq!(
            prepared["spec"]["claimRef"],
            json!({"namespace": "team-b", "name": "data"})
        );
        assert_eq!(prepared["metadata"]["annotations"], json!({"keep": "me"}));
        assert!(prepared["metadata"].get("namespace").is_none());
    }

    #[test]
    fn builtin_actions_for_pods_services_accounts_claims_and_jobs() {
        let mapping = BTreeMap::new();
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-0", "namespace": "team-a"},
            "spec": {
                "nodeName": "node-1", "priority": 0, "serviceAccountName": "web",
                "volumes": [{"name": "web-token-abcde"}, {"name": "data"}],
                "containers": [{"name": "c", "volumeMounts": [
                    {"name": "web-token-abcde", "mountPath": "/t"}, {"name": "data", "mountPath": "/d"}]}]
            }
        });
        let prepared = prepare_for_restore(&pod, "pods", &options(&mapping)).unwrap();
        assert!(prepared["spec"].get("nodeName").is_none());
        assert!(prepared["spec"].get("priority").is_none());
        assert_eq!(prepared["spec"]["volumes"], json!([{"name": "data"}]));
        assert_eq!(
            prepared["spec"]["containers"][0]["volumeMounts"],
            json!([{"name": "data", "mountPath": "/d"}])
        );

        let service = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "team-a", "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration":
                    "{\"spec\":{\"ports\":[{\"name\":\"http\",\"nodePort\":30080}]}}"}},
            "spec": {"type": "NodePort", "clusterIP": "10.0.0.5", "clusterIPs": ["10.0.0.5"],
                     "ports": [{"name": "http", "port": 80, "nodePort": 30080},
                               {"name": "metrics", "port": 9090, "nodePort": 31999}]}
        });
        let prepared = prepare_for_restore(&service, "services", &options(&mapping)).unwrap();
        assert!(prepared["spec"].get("clusterIP").is_none());
        assert!(prepared["spec"].get("clusterIPs").is_none());
        assert_eq!(prepared["spec"]["ports"][0]["nodePort"], 30080);
        assert!(prepared["spec"]["ports"][1].get("nodePort").is_none());
        let preserving = RestoreItemOptions {
            preserve_node_ports: true,
            ..options(&mapping)
        };
        let kept = prepare_for_restore(&service, "services", &preserving).unwrap();
        assert_eq!(kept["spec"]["ports"][1]["nodePort"], 31999);

        let headless = json!({"metadata": {"name": "h", "namespace": "team-a"},
                              "spec": {"clusterIP": "None", "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30001}]}});
        let prepared = prepare_for_restore(&headless, "services", &options(&mapping)).unwrap();
        assert_eq!(prepared["spec"]["clusterIP"], "None");
        assert!(prepared["spec"]["ports"][0].get("nodePort").is_none());

        let server_side = json!({"metadata": {"name": "s", "namespace": "team-a", "managedFields": [
                {"manager": "kubectl", "fieldsV1": {"f:spec": {"f:ports": {
                    "k:{\"port\":80,\"protocol\":\"TCP\"}": {"f:nodePort": {}}}}}}]},
            "spec": {"ports": [{"port": 80, "protocol": "TCP", "nodePort": 30002}]}});
        let prepared = prepare_for_restore(&server_side, "services", &options(&mapping)).unwrap();
        assert_eq!(prepared["spec"]["ports"][0]["nodePort"], 30002);

        let broken = json!({"metadata": {"name": "b", "namespace": "team-a", "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{not json"}}, "spec": {}});
        let error = prepare_for_restore(&broken, "services", &options(&mapping)).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("error preparing services/team-a/b: ")
        );

        let account = json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "ci", "namespace": "team-a"},
            "secrets": [{"name": "ci-token-x1"}, {"name": "ci-dockercfg"}]});
        let prepared =
            prepare_for_restore(&account, "serviceaccounts", &options(&mapping)).unwrap();
        assert_eq!(prepared["secrets"], json!([{"name": "ci-dockercfg"}]));

        let claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "team-a", "annotations": {
                "pv.kubernetes.io/bind-completed": "yes",
                "volume.kubernetes.io/selected-node": "node-1", "keep": "me"}},
            "spec": {"volumeName": "pv-1"}});
        let prepared =
            prepare_for_restore(&claim, "persistentvolumeclaims", &options(&mapping)).unwrap();
        assert_eq!(prepared["metadata"]["annotations"], json!({"keep": "me"}));
        assert_eq!(prepared["spec"]["volumeName"], "pv-1");

        let job = json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "team-a"},
            "spec": {"selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u", "app": "j"}},
                     "template": {"metadata": {"labels": {"controller-uid": "u", "app": "j"}}}}});
        let prepared = prepare_for_restore(&job, "jobs.batch", &options(&mapping)).unwrap();
        assert_eq!(
            prepared["spec"]["selector"]["matchLabels"],
            json!({"app": "j"})
        );
        assert_eq!(
            prepared["spec"]["template"]["metadata"]["labels"],
            json!({"app": "j"})
        );
    }

    #[test]
    fn skip_reasons() {
        let done = json!({"metadata": {"name": "p", "namespace": "team-a"}, "status": {"phase": "Succeeded"}});
        assert_eq!(
            restore_skip_reason("pods", &done).map(|skip| skip.to_string()),
            Some("team-a/p is complete - skipping".into())
        );
        let finished_job = json!({"metadata": {"name": "j", "namespace": "team-a"},
                                  "status": {"completionTime": "2026-01-01T00:00:00Z"}});
        assert!(matches!(
            restore_skip_reason("jobs.batch", &finished_job),
            Some(RestoreSkip::Completed { .. })
        ));
        let mirror = json!({"metadata": {"name": "m", "namespace": "kube-system",
            "annotations": {"kubernetes.io/config.mirror": "abc"}}, "status": {"phase": "Running"}});
        assert_eq!(
            restore_skip_reason("pods", &mirror),
            Some(RestoreSkip::MirrorPod)
        );
        let delete_pv = json!({"metadata": {"name": "pv"}, "spec": {"persistentVolumeReclaimPolicy": "Delete"}});
        assert_eq!(
            restore_skip_reason("persistentvolumes", &delete_pv),
            Some(RestoreSkip::DynamicallyReprovisioned)
        );
        let running = json!({"metadata": {"name": "p", "namespace": "team-a"}, "status": {"phase": "Running"}});
        assert_eq!(restore_skip_reason("pods", &running), None);
    }

    #[test]
    fn namespace_objects_keep_labels_annotations_and_spec() {
        let backed_up = json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "team-a", "uid": "x", "labels": {"tenant": "a"},
                         "annotations": {"owner": "alice"}},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
        assert_eq!(
            namespace_for_restore(Some(&backed_up), "team-a-copy"),
            json!({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": "team-a-copy", "labels": {"tenant": "a"},
                                "annotations": {"owner": "alice"}},
                   "spec": {"finalizers": ["kubernetes"]}})
        );
        assert_eq!(
            namespace_for_restore(None, "fresh"),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fresh"}})
        );
    }

    fn prepared_config_map(data: Value) -> Value {
        let backed_up = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "team-a", "labels": {"app": "web"}},
            "data": data});
        prepare_for_restore(&backed_up, "configmaps", &options(&BTreeMap::new())).unwrap()
    }

    fn in_cluster(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "settings", "namespace": "team-a", "labels": {"app": "web"},
                            "uid": "other", "resourceVersion": "99",
                            "creationTimestamp": "2026-02-02T00:00:00Z"},
               "data": data})
    }

    #[test]
    fn existing_objects_are_created_skipped_or_updated_as_velero() {
        let desired = prepared_config_map(json!({"k": "v"}));
        assert_eq!(
            decide_existing(None, &desired, None),
            ExistingAction::Create
        );

        // Identical apart from server fields: silently skipped.
        let same = in_cluster(json!({"k": "v"}));
        assert_eq!(
            decide_existing(Some(&same), &desired, None),
            ExistingAction::Skip { warning: None }
        );
        assert_eq!(
            decide_existing(Some(&same), &desired, Some(&ExistingResourcePolicy::None)),
            ExistingAction::Skip { warning: None }
        );
        // ... and with policy update, only the restore labels are written.
        assert_eq!(
            decide_existing(Some(&same), &desired, Some(&ExistingResourcePolicy::Update)),
            ExistingAction::Update {
                patch: restore_labels_patch("nightly", "nightly-restore")
            }
        );

        let changed = in_cluster(json!({"k": "changed", "extra": "x"}));
        assert_eq!(
            decide_existing(Some(&changed), &desired, None),
            ExistingAction::Skip {
                warning: Some(
                    "could not restore, ConfigMap:settings already exists. Warning: the in-cluster version is different than the backed-up version".into()
                )
            }
        );
        assert_eq!(
            decide_existing(Some(&changed), &desired, Some(&ExistingResourcePolicy::None)),
            ExistingAction::Skip {
                warning: Some(
                    "could not restore, ConfigMap \"settings\" already exists. Warning: the in-cluster version is different than the backed-up version".into()
                )
            }
        );
        assert_eq!(
            decide_existing(
                Some(&changed),
                &desired,
                Some(&ExistingResourcePolicy::Update)
            ),
            ExistingAction::Update {
                patch: json!({
                    "metadata": {"labels": {"velero.io/backup-name": "nightly",
                                            "velero.io/restore-name": "nightly-restore"}},
                    "data": {"k": "v", "extra": null}
                })
            }
        );
    }

    #[test]
    fn existing_service_accounts_are_merged() {
        let backed_up = json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "ci", "namespace": "team-a", "labels": {"team": "a"}},
            "imagePullSecrets": [{"name": "registry"}]});
        let desired =
            prepare_for_restore(&backed_up, "serviceaccounts", &options(&BTreeMap::new())).unwrap();
        let existing = json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "ci", "namespace": "team-a", "uid": "u",
                         "labels": {"team": "b"}},
            "secrets": [{"name": "ci-token-new"}]});
        let ExistingAction::Update { patch } = decide_existing(Some(&existing), &desired, None)
        else {
            panic!("service accounts that differ are merged");
        };
        assert_eq!(patch, json!({"imagePullSecrets": [{"name": "registry"}]}));
    }

    #[test]
    fn merge_patches_follow_rfc_7386() {
        assert_eq!(create_merge_patch(&json!({"a": 1}), &json!({"a": 1})), None);
        assert_eq!(
            create_merge_patch(
                &json!({"a": {"b": 1, "c": 2}, "d": [1, 2], "gone": true}),
                &json!({"a": {"b": 1, "c": 3}, "d": [1], "new": "x"})
            ),
            Some(json!({"a": {"c": 3}, "d": [1], "gone": null, "new": "x"}))
        );
    }
}
