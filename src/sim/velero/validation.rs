//! Backup and Restore validation as Velero 1.18's controllers do it, with Velero's own messages.
//!
//! Backups: `prepareBackupRequest` in `pkg/controller/backup_controller.go` (storage location
//! missing, read-only or unavailable; volume snapshot locations; old and new resource filters
//! mixed; include/exclude list conflicts through `ValidateIncludesExcludes`,
//! `ValidateScopedIncludesExcludes` and `ValidateNamespaceIncludesExcludes` of
//! `pkg/util/collections/includes_excludes.go`; `labelSelector` with `orLabelSelectors`), plus
//! the defaults it fills in (TTL 720h, the storage location chosen when none is named).
//!
//! Restores: `validateAndComplete` in `pkg/controller/restore_controller.go` (non-restorable
//! resources, list conflicts, selectors, backup xor schedule, `existingResourcePolicy`, the
//! schedule's latest completed backup, the backup and its location, the backup's phase).
//!
//! Messages embedding a Kubernetes "not found" error spell it as kube-apiserver does
//! (`backupstoragelocations.velero.io "default" not found`). Everything is pure: the caller
//! lists the objects, this module only decides.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::api::common::DurationError;
use crate::api::velero::labels::{SCHEDULE_NAME, valid_label_value};
use crate::api::velero::{
    Backup, BackupPhase, BackupSpec, BackupStorageLocation, BackupStorageLocationAccessMode,
    BackupStorageLocationPhase, ExistingResourcePolicy, RestoreSpec,
};
use crate::manifest::selection::{
    NON_RESTORABLE_RESOURCES, includes_excludes_problems, scoped_includes_excludes_problems,
    wildcard_pattern_problem,
};
use crate::sim::apiserver::validation::dns1123_label_problem;

/// Velero's `--default-backup-ttl` default: 30 days.
pub const DEFAULT_BACKUP_TTL: Duration = Duration::from_secs(30 * 24 * 60 * 60);
/// Velero's `--default-backup-storage-location` default.
pub const DEFAULT_BACKUP_STORAGE_LOCATION: &str = "default";

/// The TTL a backup runs with: its own, or the default when unset or zero.
pub fn effective_backup_ttl(spec: &BackupSpec) -> Result<Duration, DurationError> {
    match &spec.ttl {
        None => Ok(DEFAULT_BACKUP_TTL),
        Some(ttl) => {
            let parsed = ttl.parse()?;
            Ok(if parsed.is_zero() {
                DEFAULT_BACKUP_TTL
            } else {
                parsed
            })
        }
    }
}

/// The storage location a backup uses and whether Velero chose it (the user named none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageLocationChoice {
    /// Name of the BackupStorageLocation.
    pub name: String,
    /// True when the spec named no location and Velero picked one.
    pub server_specified: bool,
}

/// `prepareBackupRequest`'s choice: the spec's location; else the first location marked
/// default (in list order, as the API server lists them: by name); else `server_default`.
pub fn choose_storage_location(
    spec: &BackupSpec,
    locations: &[BackupStorageLocation],
    server_default: &str,
) -> StorageLocationChoice {
    match spec.storage_location.as_deref() {
        Some(name) if !name.is_empty() => StorageLocationChoice {
            name: name.to_owned(),
            server_specified: false,
        },
        _ => {
            let marked_default = locations
                .iter()
                .find(|location| location.spec.default == Some(true))
                .and_then(|location| location.metadata.name.clone());
            StorageLocationChoice {
                name: marked_default.unwrap_or_else(|| server_default.to_owned()),
                server_specified: true,
            }
        }
    }
}

/// What the chosen storage location looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BslState {
    /// No BackupStorageLocation of that name exists.
    Missing,
    /// The location exists.
    Found {
        /// `spec.accessMode` is ReadOnly.
        read_only: bool,
        /// `status.phase` is Available (`BSLIsAvailable`: anything else, unset included, is not).
        available: bool,
    },
}

impl BslState {
    /// The state of a location as listed, `None` meaning it does not exist.
    pub fn of(location: Option<&BackupStorageLocation>) -> Self {
        match location {
            None => Self::Missing,
            Some(location) => Self::Found {
                read_only: location.spec.access_mode
                    == Some(BackupStorageLocationAccessMode::ReadOnly),
                available: bsl_is_available(location),
            },
        }
    }
}

/// `BSLIsAvailable`: the phase is Available.
pub fn bsl_is_available(location: &BackupStorageLocation) -> bool {
    location
        .status
        .as_ref()
        .and_then(|status| status.phase.as_ref())
        == Some(&BackupStorageLocationPhase::Available)
}

/// A VolumeSnapshotLocation as validation needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeSnapshotLocationInfo {
    /// Object name.
    pub name: String,
    /// `spec.provider`.
    pub provider: String,
}

/// Cluster facts backup validation depends on besides the storage location.
#[derive(Debug, Clone, Copy, Default)]
pub struct BackupValidationContext<'a> {
    /// Namespaces labelled `velero.io/exclude-from-backup=true`, which Velero adds to the
    /// excluded namespaces before validating them.
    pub namespaces_excluded_by_label: &'a [String],
    /// The VolumeSnapshotLocations in the Velero namespace.
    pub volume_snapshot_locations: &'a [VolumeSnapshotLocationInfo],
}

/// The error kube-apiserver returns for a missing object, as Go prints it.
fn not_found(resource: &str, name: &str) -> String {
    if name.is_empty() {
        return "resource name may not be empty".to_owned();
    }
    format!("{resource} \"{name}\" not found")
}

/// Go's `%q` of a plain string.
fn go_quote(value: &str) -> String {
    let mut quoted = String::with_capacity(value.len() + 2);
    quoted.push('"');
    for c in value.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            '\t' => quoted.push_str("\\t"),
            c if c.is_control() => quoted.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// `ValidateNamespaceIncludesExcludes`: the list rules, then every include and every exclude
/// (each in sorted order) as a namespace name whose glob characters are allowed.
pub fn namespace_includes_excludes_problems(
    includes: &[String],
    excludes: &[String],
) -> Vec<String> {
    let mut problems = includes_excludes_problems(includes, excludes);
    let includes: BTreeSet<&str> = includes.iter().map(String::as_str).collect();
    let excludes: BTreeSet<&str> = excludes.iter().map(String::as_str).collect();
    for name in includes.iter().chain(excludes.iter()) {
        problems.extend(namespace_name_problems(name));
    }
    problems
}

/// `validateNamespaceName`: empty is fine (Velero's "no namespace"); glob syntax is checked,
/// then the name with its glob characters replaced by `x` must be a DNS-1123 label.
fn namespace_name_problems(name: &str) -> Vec<String> {
    if name.is_empty() {
        return Vec::new();
    }
    if let Some(problem) = wildcard_pattern_problem(name) {
        return vec![problem.to_owned()];
    }
    let placeholder = name.replace(['*', '?', '[', ']'], "x");
    dns1123_label_problems(&placeholder)
        .into_iter()
        .map(|problem| format!("invalid namespace {}: {problem}", go_quote(name)))
        .collect()
}

/// `validation.IsDNS1123Label`, which reports the length and the pattern problems separately.
fn dns1123_label_problems(name: &str) -> Vec<String> {
    const MAX_LENGTH: usize = 63;
    let mut problems = Vec::new();
    if name.len() > MAX_LENGTH {
        problems.push(format!("must be no more than {MAX_LENGTH} characters"));
    }
    let well_formed = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if !well_formed {
        // The shared helper words the pattern problem exactly as apimachinery; "-" always fails
        // the pattern, never the length.
        problems.extend(dns1123_label_problem("-"));
    }
    problems
}

/// Old filters (`includedResources`, `excludedResources`, `includeClusterResources`) and new
/// scoped filters in one spec (`oldAndNewFilterParametersUsedTogether`).
pub fn old_and_new_filters_mixed(spec: &BackupSpec) -> bool {
    let some = |values: &Option<Vec<String>>| values.as_ref().is_some_and(|v| !v.is_empty());
    let old = some(&spec.included_resources)
        || some(&spec.excluded_resources)
        || spec.include_cluster_resources.is_some();
    let new = some(&spec.included_cluster_scoped_resources)
        || some(&spec.excluded_cluster_scoped_resources)
        || some(&spec.included_namespace_scoped_resources)
        || some(&spec.excluded_namespace_scoped_resources);
    old && new
}

/// The message Velero gives when old and new resource filters are mixed.
pub const MIXED_FILTERS_MESSAGE: &str = concat!(
    "include-resources, exclude-resources and include-cluster-resources are old filter parameters.\n",
    "include-cluster-scoped-resources, exclude-cluster-scoped-resources, include-namespace-scoped-resources and exclude-namespace-scoped-resources are new filter parameters.\n",
    "They cannot be used together"
);

fn list(values: &Option<Vec<String>>) -> &[String] {
    values.as_deref().unwrap_or_default()
}

/// A backup's validation errors, in the order Velero's `prepareBackupRequest` reports them;
/// empty means the backup may run. `location` is the storage location chosen for it (see
/// [`choose_storage_location`]) and `bsl` what was found under that name.
pub fn validate_backup(
    spec: &BackupSpec,
    location: &StorageLocationChoice,
    bsl: BslState,
    context: &BackupValidationContext<'_>,
) -> Vec<String> {
    let mut errors = Vec::new();

    match bsl {
        BslState::Missing => {
            let error = not_found("backupstoragelocations.velero.io", &location.name);
            errors.push(if location.server_specified {
                format!(
                    "an existing backup storage location was not specified at backup creation time and the server default {} does not exist. Please address this issue (see `velero backup-location -h` for options) and create a new backup. Error: {error}",
                    location.name
                )
            } else {
                format!(
                    "an existing backup storage location was not specified at backup creation time and the default {} was not found. Please address this issue (see `velero backup-location -h` for options) and create a new backup. Error: {error}",
                    location.name
                )
            });
        }
        BslState::Found {
            read_only,
            available,
        } => {
            if read_only {
                errors.push(format!(
                    "backup can't be created because backup storage location {} is currently in read-only mode",
                    location.name
                ));
            }
            if !available {
                errors.push(format!(
                    "backup can't be created because BackupStorageLocation {} is in Unavailable status.",
                    location.name
                ));
            }
        }
    }

    errors.extend(volume_snapshot_location_problems(
        list(&spec.volume_snapshot_locations),
        context.volume_snapshot_locations,
    ));

    if old_and_new_filters_mixed(spec) {
        errors.push(MIXED_FILTERS_MESSAGE.to_owned());
    }

    if crate::manifest::selection::uses_old_resource_filters(spec) {
        for problem in includes_excludes_problems(
            list(&spec.included_resources),
            list(&spec.excluded_resources),
        ) {
            errors.push(format!(
                "Invalid included/excluded resource lists: {problem}"
            ));
        }
    } else {
        for problem in scoped_includes_excludes_problems(
            list(&spec.included_cluster_scoped_resources),
            list(&spec.excluded_cluster_scoped_resources),
        ) {
            errors.push(format!(
                "Invalid cluster-scoped included/excluded resource lists: {problem}"
            ));
        }
        for problem in scoped_includes_excludes_problems(
            list(&spec.included_namespace_scoped_resources),
            list(&spec.excluded_namespace_scoped_resources),
        ) {
            errors.push(format!(
                "Invalid namespace-scoped included/excluded resource lists: {problem}"
            ));
        }
    }

    // Velero 1.18.1 (#9743) validates an empty include list as ["*"], after adding the
    // namespaces labelled velero.io/exclude-from-backup=true to the excludes.
    let mut included_namespaces = list(&spec.included_namespaces).to_vec();
    if included_namespaces.is_empty() {
        included_namespaces.push("*".to_owned());
    }
    let mut excluded_namespaces = list(&spec.excluded_namespaces).to_vec();
    excluded_namespaces.extend(context.namespaces_excluded_by_label.iter().cloned());
    for problem in namespace_includes_excludes_problems(&included_namespaces, &excluded_namespaces)
    {
        errors.push(format!(
            "Invalid included/excluded namespace lists: {problem}"
        ));
    }

    if spec.or_label_selectors.is_some() && spec.label_selector.is_some() {
        errors.push(
            "encountered labelSelector as well as orLabelSelectors in backup spec, only one can be specified"
                .to_owned(),
        );
    }

    errors
}

/// `validateAndGetSnapshotLocations`: every named location must exist, one per provider, and a
/// provider with several locations needs one named (the simulator has no server defaults).
fn volume_snapshot_location_problems(
    named: &[String],
    existing: &[VolumeSnapshotLocationInfo],
) -> Vec<String> {
    let mut errors = Vec::new();
    let mut chosen: Vec<&VolumeSnapshotLocationInfo> = Vec::new();
    for name in named {
        let Some(location) = existing.iter().find(|location| &location.name == name) else {
            errors.push(format!(
                "a VolumeSnapshotLocation CRD for the location {name} with the name specified in the backup spec needs to be created before this snapshot can be executed. Error: {}",
                not_found("volumesnapshotlocations.velero.io", name)
            ));
            continue;
        };
        match chosen
            .iter()
            .find(|other| other.provider == location.provider)
        {
            Some(other) if other.name != *name => errors.push(format!(
                "more than one VolumeSnapshotLocation name specified for provider {}: {name}; unexpected name was {}",
                location.provider, other.name
            )),
            Some(_) => {}
            None => chosen.push(location),
        }
    }
    if !errors.is_empty() {
        return errors;
    }
    let providers: BTreeSet<&str> = existing
        .iter()
        .map(|location| location.provider.as_str())
        .collect();
    for provider in providers {
        if chosen.iter().any(|location| location.provider == provider) {
            continue;
        }
        let count = existing
            .iter()
            .filter(|location| location.provider == provider)
            .count();
        if count > 1 {
            errors.push(format!(
                "provider {provider} has more than one possible volume snapshot location, and none were specified explicitly or as a default"
            ));
        }
    }
    errors
}

// ---------------------------------------------------------------------------------------------
// Restores
// ---------------------------------------------------------------------------------------------

/// The message of `hook.ValidateContainer` for an init container missing a field.
pub const INVALID_INIT_CONTAINER: &str =
    "invalid InitContainer in restore hook, it doesn't have Command, Name or Image field";

/// `validateAndComplete`'s hook checks: `hook.GetRestoreHooksFromSpec` stops at the first
/// resource hook whose `labelSelector` apimachinery cannot convert (and then no init container
/// is looked at); otherwise every init container of every post hook goes through
/// `hook.ValidateContainer` (decodes as a Container, with a command, a name and an image).
pub fn restore_hook_problems(spec: &RestoreSpec) -> Vec<String> {
    let resources = spec
        .hooks
        .as_ref()
        .and_then(|hooks| hooks.resources.as_deref())
        .unwrap_or_default();
    for resource in resources {
        if let Some(selector) = &resource.label_selector
            && let Err(error) = crate::api::selector::Selector::from_label_selector(selector)
        {
            return vec![error.to_string()];
        }
    }
    resources
        .iter()
        .flat_map(|resource| resource.post_hooks.as_deref().unwrap_or_default())
        .filter_map(|hook| hook.init.as_ref())
        .flat_map(|init| init.init_containers.as_deref().unwrap_or_default())
        .filter_map(init_container_problem)
        .collect()
}

/// `hook.ValidateContainer` over one raw init container: `json.Unmarshal` into a
/// `corev1.Container` (its type errors as Go words them), then the three required fields.
fn init_container_problem(raw: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    fn json_type(value: &Value) -> &'static str {
        match value {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }
    let container = match raw {
        Value::Object(container) => container,
        // Unmarshalling null into a struct leaves it empty.
        Value::Null => return Some(INVALID_INIT_CONTAINER.to_owned()),
        other => {
            return Some(format!(
                "json: cannot unmarshal {} into Go value of type v1.Container",
                json_type(other)
            ));
        }
    };
    let field_type_error = |field: &str, value: &Value, go_type: &str| {
        format!(
            "json: cannot unmarshal {} into Go struct field Container.{field} of type {go_type}",
            json_type(value)
        )
    };
    let filled = |field: &str| -> Result<bool, String> {
        match container.get(field) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::String(text)) => Ok(!text.is_empty()),
            Some(other) => Err(field_type_error(field, other, "string")),
        }
    };
    let name = filled("name");
    let image = filled("image");
    let command = match container.get("command") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Array(items)) => match items.iter().find(|item| !item.is_string()) {
            Some(item) => Err(field_type_error("command", item, "string")),
            None => Ok(!items.is_empty()),
        },
        Some(other) => Err(field_type_error("command", other, "[]string")),
    };
    match (name, image, command) {
        (Err(error), _, _) | (_, Err(error), _) | (_, _, Err(error)) => Some(error),
        (Ok(true), Ok(true), Ok(true)) => None,
        _ => Some(INVALID_INIT_CONTAINER.to_owned()),
    }
}

/// The outcome of restore validation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RestoreValidation {
    /// Velero's validation errors in its order; empty means the restore may run.
    pub errors: Vec<String>,
    /// The backup the restore reads: `spec.backupName`, or the schedule's latest completed
    /// backup, which Velero writes back into `spec.backupName`.
    pub backup_name: Option<String>,
}

/// `mostRecentCompletedBackup`: the Completed backup with the latest start time.
pub fn latest_completed_backup<'a>(
    backups: impl IntoIterator<Item = &'a Backup>,
) -> Option<&'a Backup> {
    backups
        .into_iter()
        .filter(|backup| backup_phase(backup) == Some(&BackupPhase::Completed))
        .max_by_key(|backup| {
            backup
                .status
                .as_ref()
                .and_then(|status| status.start_timestamp.as_ref())
                .map(|time| time.0)
        })
}

fn backup_phase(backup: &Backup) -> Option<&BackupPhase> {
    backup
        .status
        .as_ref()
        .and_then(|status| status.phase.as_ref())
}

/// A restore's validation as `validateAndComplete` runs it over the Velero namespace's
/// backups and storage locations.
pub fn validate_restore(
    spec: &RestoreSpec,
    velero_namespace: &str,
    backups: &[Backup],
    locations: &[BackupStorageLocation],
) -> RestoreValidation {
    let mut outcome = RestoreValidation::default();
    let errors = &mut outcome.errors;

    let included_resources = list(&spec.included_resources);
    let mut excluded_resources = list(&spec.excluded_resources).to_vec();
    for resource in NON_RESTORABLE_RESOURCES {
        if !excluded_resources
            .iter()
            .any(|excluded| excluded == resource)
        {
            excluded_resources.push((*resource).to_owned());
        }
    }
    for resource in NON_RESTORABLE_RESOURCES {
        if included_resources
            .iter()
            .any(|included| included == resource)
        {
            errors.push(format!("{resource} are non-restorable resources"));
        }
    }
    for problem in includes_excludes_problems(included_resources, &excluded_resources) {
        errors.push(format!(
            "Invalid included/excluded resource lists: {problem}"
        ));
    }
    for problem in includes_excludes_problems(
        list(&spec.included_namespaces),
        list(&spec.excluded_namespaces),
    ) {
        errors.push(format!(
            "Invalid included/excluded namespace lists: {problem}"
        ));
    }
    if spec.or_label_selectors.is_some() && spec.label_selector.is_some() {
        errors.push(
            "encountered labelSelector as well as orLabelSelectors in restore spec, only one can be specified"
                .to_owned(),
        );
    }

    let backup_name = spec.backup_name.as_deref().unwrap_or_default();
    let schedule_name = spec.schedule_name.as_deref().unwrap_or_default();
    if backup_name.is_empty() == schedule_name.is_empty() {
        errors.push(
            "Either a backup or schedule must be specified as a source for the restore, but not both"
                .to_owned(),
        );
        return outcome;
    }

    errors.extend(restore_hook_problems(spec));

    if let Some(policy) = &spec.existing_resource_policy
        && !policy.as_str().is_empty()
        && !matches!(
            policy,
            ExistingResourcePolicy::None | ExistingResourcePolicy::Update
        )
    {
        errors.push(format!(
            "Invalid ExistingResourcePolicy: {}",
            policy.as_str()
        ));
    }

    let mut source = backup_name.to_owned();
    if !schedule_name.is_empty() {
        let of_schedule: Vec<&Backup> = backups
            .iter()
            .filter(|backup| {
                backup
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|labels| labels.get(SCHEDULE_NAME))
                    .is_some_and(|value| *value == valid_label_value(schedule_name))
            })
            .collect();
        if of_schedule.is_empty() {
            errors.push("No backups found for schedule".to_owned());
        }
        match latest_completed_backup(of_schedule).and_then(|backup| backup.metadata.name.clone()) {
            Some(name) => source = name,
            None => {
                errors.push("No completed backups found for schedule".to_owned());
                return outcome;
            }
        }
    }
    outcome.backup_name = Some(source.clone());

    let Some(backup) = backups
        .iter()
        .find(|backup| backup.metadata.name.as_deref() == Some(source.as_str()))
    else {
        errors.push(format!(
            "Error retrieving backup: can't find backup {velero_namespace}/{source}: {}",
            not_found("backups.velero.io", &source)
        ));
        return outcome;
    };
    let location_name = backup.spec.storage_location.as_deref().unwrap_or_default();
    let Some(location) = locations
        .iter()
        .find(|location| location.metadata.name.as_deref() == Some(location_name))
    else {
        errors.push(format!(
            "Error retrieving backup: {}",
            not_found("backupstoragelocations.velero.io", location_name)
        ));
        return outcome;
    };
    if !bsl_is_available(location) {
        errors.push(format!(
            "The BSL {location_name} is unavailable, cannot retrieve the backup"
        ));
        return outcome;
    }
    match backup_phase(backup) {
        Some(BackupPhase::Completed | BackupPhase::PartiallyFailed) => {}
        phase => errors.push(format!(
            "backup {} is in phase {} and cannot be used as a restore source",
            go_quote(&source),
            go_quote(phase.map(BackupPhase::as_str).unwrap_or_default())
        )),
    }
    outcome
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::api::velero::{
        BackupStatus, BackupStorageLocationSpec, BackupStorageLocationStatus, GoDuration,
    };

    fn strings(values: &[&str]) -> Option<Vec<String>> {
        Some(values.iter().map(|value| (*value).to_owned()).collect())
    }

    fn chosen(name: &str) -> StorageLocationChoice {
        StorageLocationChoice {
            name: name.to_owned(),
            server_specified: false,
        }
    }

    const AVAILABLE: BslState = BslState::Found {
        read_only: false,
        available: true,
    };

    fn validate(spec: &BackupSpec) -> Vec<String> {
        validate_backup(
            spec,
            &chosen("default"),
            AVAILABLE,
            &BackupValidationContext::default(),
        )
    }

    fn location(name: &str, default: bool, phase: Option<&str>) -> BackupStorageLocation {
        BackupStorageLocation {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..Default::default()
            },
            spec: BackupStorageLocationSpec {
                provider: "aws".into(),
                default: Some(default),
                ..Default::default()
            },
            status: phase.map(|phase| BackupStorageLocationStatus {
                phase: Some(BackupStorageLocationPhase::from(phase)),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn a_plain_backup_is_valid() {
        assert!(validate(&BackupSpec::default()).is_empty());
        assert!(
            validate(&BackupSpec {
                included_namespaces: strings(&["team-a", "prod-*"]),
                label_selector: Some(LabelSelector::default()),
                ..Default::default()
            })
            .is_empty()
        );
    }

    #[test]
    fn ttl_defaults_to_thirty_days() {
        assert_eq!(
            effective_backup_ttl(&BackupSpec::default()).unwrap(),
            Duration::from_secs(720 * 3600)
        );
        let zero = BackupSpec {
            ttl: Some(GoDuration::new("0s")),
            ..Default::default()
        };
        assert_eq!(effective_backup_ttl(&zero).unwrap(), DEFAULT_BACKUP_TTL);
        let day = BackupSpec {
            ttl: Some(GoDuration::new("24h")),
            ..Default::default()
        };
        assert_eq!(
            effective_backup_ttl(&day).unwrap(),
            Duration::from_secs(86400)
        );
        let bad = BackupSpec {
            ttl: Some(GoDuration::new("soon")),
            ..Default::default()
        };
        assert!(effective_backup_ttl(&bad).is_err());
    }

    #[test]
    fn storage_location_choice_prefers_spec_then_default_marker_then_server_default() {
        let locations = [location("a", false, None), location("b", true, None)];
        let named = BackupSpec {
            storage_location: Some("a".into()),
            ..Default::default()
        };
        assert_eq!(
            choose_storage_location(&named, &locations, "default"),
            chosen("a")
        );
        assert_eq!(
            choose_storage_location(&BackupSpec::default(), &locations, "default"),
            StorageLocationChoice {
                name: "b".into(),
                server_specified: true
            }
        );
        assert_eq!(
            choose_storage_location(&BackupSpec::default(), &locations[..1], "default"),
            StorageLocationChoice {
                name: "default".into(),
                server_specified: true
            }
        );
    }

    #[test]
    fn storage_location_messages() {
        let spec = BackupSpec::default();
        let context = BackupValidationContext::default();
        assert_eq!(
            validate_backup(&spec, &chosen("x"), BslState::Missing, &context),
            vec![
                "an existing backup storage location was not specified at backup creation time and the default x was not found. Please address this issue (see `velero backup-location -h` for options) and create a new backup. Error: backupstoragelocations.velero.io \"x\" not found"
            ]
        );
        let server = StorageLocationChoice {
            name: "default".into(),
            server_specified: true,
        };
        assert_eq!(
            validate_backup(&spec, &server, BslState::Missing, &context),
            vec![
                "an existing backup storage location was not specified at backup creation time and the server default default does not exist. Please address this issue (see `velero backup-location -h` for options) and create a new backup. Error: backupstoragelocations.velero.io \"default\" not found"
            ]
        );
        assert_eq!(
            validate_backup(
                &spec,
                &chosen("ro"),
                BslState::Found {
                    read_only: true,
                    available: false
                },
                &context
            ),
            vec![
                "backup can't be created because backup storage location ro is currently in read-only mode",
                "backup can't be created because BackupStorageLocation ro is in Unavailable status.",
            ]
        );
        let never_validated = location("new", false, None);
        assert_eq!(
            BslState::of(Some(&never_validated)),
            BslState::Found {
                read_only: false,
                available: false
            }
        );
        assert_eq!(BslState::of(None), BslState::Missing);
        assert_eq!(
            BslState::of(Some(&location("ok", false, Some("Available")))),
            AVAILABLE
        );
    }

    #[test]
    fn resource_list_conflicts() {
        assert_eq!(
            validate(&BackupSpec {
                included_resources: strings(&["configmaps", "secrets"]),
                excluded_resources: strings(&["secrets", "*"]),
                ..Default::default()
            }),
            vec![
                "Invalid included/excluded resource lists: excludes list cannot contain '*'",
                "Invalid included/excluded resource lists: excludes list cannot contain an item in the includes list: secrets",
            ]
        );
        assert_eq!(
            validate(&BackupSpec {
                included_resources: strings(&["*", "pods"]),
                ..Default::default()
            }),
            vec![
                "Invalid included/excluded resource lists: includes list must either contain '*' only, or a non-empty list of items"
            ]
        );
        assert_eq!(
            validate(&BackupSpec {
                included_cluster_scoped_resources: strings(&["storageclasses"]),
                excluded_cluster_scoped_resources: strings(&["*"]),
                included_namespace_scoped_resources: strings(&["pods"]),
                excluded_namespace_scoped_resources: strings(&["pods", "*"]),
                ..Default::default()
            }),
            vec![
                "Invalid cluster-scoped included/excluded resource lists: when exclude is '*', include cannot have value",
                "Invalid namespace-scoped included/excluded resource lists: excludes list must either contain '*' only, or a non-empty list of items",
                "Invalid namespace-scoped included/excluded resource lists: when exclude is '*', include cannot have value",
                "Invalid namespace-scoped included/excluded resource lists: excludes list cannot contain an item in the includes list: pods",
            ]
        );
        // Excluding every cluster-scoped type alone is fine with the new filters.
        assert!(
            validate(&BackupSpec {
                excluded_cluster_scoped_resources: strings(&["*"]),
                ..Default::default()
            })
            .is_empty()
        );
    }

    #[test]
    fn old_and_new_filters_cannot_be_mixed() {
        let errors = validate(&BackupSpec {
            include_cluster_resources: Some(true),
            included_namespace_scoped_resources: strings(&["pods"]),
            ..Default::default()
        });
        assert_eq!(errors, vec![MIXED_FILTERS_MESSAGE]);
        assert!(errors[0].starts_with("include-resources, exclude-resources and include-cluster-resources are old filter parameters.\ninclude-cluster-scoped-resources"));
        assert!(errors[0].ends_with("are new filter parameters.\nThey cannot be used together"));
    }

    #[test]
    fn namespace_list_problems() {
        assert_eq!(
            validate(&BackupSpec {
                included_namespaces: strings(&["team-a"]),
                excluded_namespaces: strings(&["team-a", "*"]),
                ..Default::default()
            }),
            vec![
                "Invalid included/excluded namespace lists: excludes list cannot contain '*'",
                "Invalid included/excluded namespace lists: excludes list cannot contain an item in the includes list: team-a",
            ]
        );
        assert_eq!(
            validate(&BackupSpec {
                included_namespaces: strings(&["Team_A", "a{b,c}"]),
                ..Default::default()
            }),
            vec![
                "Invalid included/excluded namespace lists: invalid namespace \"Team_A\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "Invalid included/excluded namespace lists: wildcard pattern contains unsupported characters: |, (, ), !, {, }, ,",
            ]
        );
        let long = "a".repeat(64);
        assert_eq!(
            validate(&BackupSpec {
                included_namespaces: Some(vec![long.clone()]),
                ..Default::default()
            }),
            vec![format!(
                "Invalid included/excluded namespace lists: invalid namespace \"{long}\": must be no more than 63 characters"
            )]
        );
        // A namespace labelled velero.io/exclude-from-backup=true cannot also be included.
        let labelled = ["team-a".to_owned()];
        assert_eq!(
            validate_backup(
                &BackupSpec {
                    included_namespaces: strings(&["team-a"]),
                    ..Default::default()
                },
                &chosen("default"),
                AVAILABLE,
                &BackupValidationContext {
                    namespaces_excluded_by_label: &labelled,
                    ..Default::default()
                }
            ),
            vec![
                "Invalid included/excluded namespace lists: excludes list cannot contain an item in the includes list: team-a"
            ]
        );
        // With the default ["*"], a labelled namespace is just excluded.
        assert!(
            validate_backup(
                &BackupSpec::default(),
                &chosen("default"),
                AVAILABLE,
                &BackupValidationContext {
                    namespaces_excluded_by_label: &labelled,
                    ..Default::default()
                }
            )
            .is_empty()
        );
    }

    #[test]
    fn label_selector_with_or_label_selectors() {
        assert_eq!(
            validate(&BackupSpec {
                label_selector: Some(LabelSelector::default()),
                or_label_selectors: Some(vec![]),
                ..Default::default()
            }),
            vec![
                "encountered labelSelector as well as orLabelSelectors in backup spec, only one can be specified"
            ]
        );
    }

    #[test]
    fn volume_snapshot_locations() {
        let existing = [
            VolumeSnapshotLocationInfo {
                name: "aws-east".into(),
                provider: "aws".into(),
            },
            VolumeSnapshotLocationInfo {
                name: "aws-west".into(),
                provider: "aws".into(),
            },
        ];
        let context = BackupValidationContext {
            volume_snapshot_locations: &existing,
            ..Default::default()
        };
        let check = |names: &[&str]| {
            validate_backup(
                &BackupSpec {
                    volume_snapshot_locations: strings(names),
                    ..Default::default()
                },
                &chosen("default"),
                AVAILABLE,
                &context,
            )
        };
        assert_eq!(
            check(&["gone"]),
            vec![
                "a VolumeSnapshotLocation CRD for the location gone with the name specified in the backup spec needs to be created before this snapshot can be executed. Error: volumesnapshotlocations.velero.io \"gone\" not found"
            ]
        );
        assert_eq!(
            check(&["aws-east", "aws-west"]),
            vec![
                "more than one VolumeSnapshotLocation name specified for provider aws: aws-west; unexpected name was aws-east"
            ]
        );
        assert_eq!(
            check(&[]),
            vec![
                "provider aws has more than one possible volume snapshot location, and none were specified explicitly or as a default"
            ]
        );
        assert!(check(&["aws-east"]).is_empty());
    }

    fn backup(name: &str, phase: Option<&str>, schedule: Option<&str>, started: i64) -> Backup {
        let mut backup = Backup::new(
            name,
            BackupSpec {
                storage_location: Some("default".into()),
                ..Default::default()
            },
        );
        backup.metadata.namespace = Some("openshift-adp".into());
        if let Some(schedule) = schedule {
            backup.metadata.labels =
                Some(BTreeMap::from([(SCHEDULE_NAME.into(), schedule.into())]));
        }
        backup.status = Some(BackupStatus {
            phase: phase.map(BackupPhase::from),
            start_timestamp: Some(Time(
                k8s_openapi::jiff::Timestamp::from_second(started).unwrap(),
            )),
            ..Default::default()
        });
        backup
    }

    fn restore_of(backup_name: &str) -> RestoreSpec {
        RestoreSpec {
            backup_name: Some(backup_name.into()),
            ..Default::default()
        }
    }

    fn run(
        spec: &RestoreSpec,
        backups: &[Backup],
        locations: &[BackupStorageLocation],
    ) -> RestoreValidation {
        validate_restore(spec, "openshift-adp", backups, locations)
    }

    #[test]
    fn restore_of_a_completed_backup_is_valid() {
        let backups = [backup("b1", Some("PartiallyFailed"), None, 1)];
        let locations = [location("default", true, Some("Available"))];
        assert_eq!(
            run(&restore_of("b1"), &backups, &locations),
            RestoreValidation {
                errors: vec![],
                backup_name: Some("b1".into())
            }
        );
    }

    #[test]
    fn restore_backup_missing_unavailable_or_unusable() {
        let locations = [location("default", true, Some("Available"))];
        assert_eq!(
            run(&restore_of("gone"), &[], &locations).errors,
            vec![
                "Error retrieving backup: can't find backup openshift-adp/gone: backups.velero.io \"gone\" not found"
            ]
        );
        let failed = [backup("b1", Some("Failed"), None, 1)];
        assert_eq!(
            run(&restore_of("b1"), &failed, &locations).errors,
            vec!["backup \"b1\" is in phase \"Failed\" and cannot be used as a restore source"]
        );
        let fresh = [backup("b1", None, None, 1)];
        assert_eq!(
            run(&restore_of("b1"), &fresh, &locations).errors,
            vec!["backup \"b1\" is in phase \"\" and cannot be used as a restore source"]
        );
        let completed = [backup("b1", Some("Completed"), None, 1)];
        assert_eq!(
            run(
                &restore_of("b1"),
                &completed,
                &[location("default", true, Some("Unavailable"))]
            )
            .errors,
            vec!["The BSL default is unavailable, cannot retrieve the backup"]
        );
        assert_eq!(
            run(&restore_of("b1"), &completed, &[]).errors,
            vec!["Error retrieving backup: backupstoragelocations.velero.io \"default\" not found"]
        );
    }

    #[test]
    fn restore_source_must_be_backup_xor_schedule() {
        let message = "Either a backup or schedule must be specified as a source for the restore, but not both";
        assert_eq!(run(&RestoreSpec::default(), &[], &[]).errors, vec![message]);
        let both = RestoreSpec {
            backup_name: Some("b".into()),
            schedule_name: Some("s".into()),
            ..Default::default()
        };
        assert_eq!(run(&both, &[], &[]).errors, vec![message]);
    }

    #[test]
    fn restore_from_schedule_takes_latest_completed_backup() {
        let backups = [
            backup("daily-1", Some("Completed"), Some("daily"), 100),
            backup("daily-2", Some("Completed"), Some("daily"), 200),
            backup("daily-3", Some("PartiallyFailed"), Some("daily"), 300),
            backup("other", Some("Completed"), Some("weekly"), 400),
        ];
        let locations = [location("default", true, Some("Available"))];
        let spec = RestoreSpec {
            schedule_name: Some("daily".into()),
            ..Default::default()
        };
        let outcome = run(&spec, &backups, &locations);
        assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
        assert_eq!(outcome.backup_name.as_deref(), Some("daily-2"));

        let none = RestoreSpec {
            schedule_name: Some("hourly".into()),
            ..Default::default()
        };
        assert_eq!(
            run(&none, &backups, &locations).errors,
            vec![
                "No backups found for schedule",
                "No completed backups found for schedule"
            ]
        );
        let only_partial = RestoreSpec {
            schedule_name: Some("daily".into()),
            ..Default::default()
        };
        assert_eq!(
            run(&only_partial, &backups[2..3], &locations).errors,
            vec!["No completed backups found for schedule"]
        );
    }

    #[test]
    fn restore_filter_and_policy_problems() {
        let backups = [backup("b1", Some("Completed"), None, 1)];
        let locations = [location("default", true, Some("Available"))];
        let spec = RestoreSpec {
            backup_name: Some("b1".into()),
            included_resources: strings(&["nodes", "pods"]),
            included_namespaces: strings(&["a"]),
            excluded_namespaces: strings(&["a"]),
            label_selector: Some(LabelSelector::default()),
            or_label_selectors: Some(vec![LabelSelector::default()]),
            existing_resource_policy: Some(ExistingResourcePolicy::from("replace")),
            ..Default::default()
        };
        assert_eq!(
            run(&spec, &backups, &locations).errors,
            vec![
                "nodes are non-restorable resources",
                "Invalid included/excluded resource lists: excludes list cannot contain an item in the includes list: nodes",
                "Invalid included/excluded namespace lists: excludes list cannot contain an item in the includes list: a",
                "encountered labelSelector as well as orLabelSelectors in restore spec, only one can be specified",
                "Invalid ExistingResourcePolicy: replace",
            ]
        );
        let fine = RestoreSpec {
            backup_name: Some("b1".into()),
            existing_resource_policy: Some(ExistingResourcePolicy::Update),
            ..Default::default()
        };
        assert!(run(&fine, &backups, &locations).errors.is_empty());
    }

    /// Velero `pkg/util/collections/includes_excludes_test.go`
    /// `TestValidateNamespaceIncludesExcludes` (`ValidateNamespaceIncludesExcludes`).
    #[test]
    fn velero_test_validate_namespace_includes_excludes() {
        let owned = |values: &[&str]| values.iter().map(|v| (*v).to_owned()).collect::<Vec<_>>();
        let cases: &[(&str, &[&str], &[&str], bool)] = &[
            ("empty slice doesn't return error", &[], &[], false),
            ("asterisk by itself is valid", &["*"], &[], false),
            (
                "alphanumeric names with optional dash inside are valid",
                &["foobar", "bar-321", "foo123bar"],
                &["123bar", "barfoo", "foo-321", "bar123foo"],
                false,
            ),
            (
                "not starting or ending with an alphanumeric character is invalid",
                &["-123foo"],
                &["foo321-", "foo321-"],
                true,
            ),
            (
                "special characters in name is invalid",
                &["foo?", "foo.bar", "bar_321"],
                &["$foo", "foo>bar", "bar=321"],
                true,
            ),
            ("empty includes (everything) is valid", &[], &[], false),
            (
                "empty string includes is valid (includes nothing)",
                &[""],
                &[],
                false,
            ),
            (
                "empty string excludes is valid (excludes nothing)",
                &[],
                &[""],
                false,
            ),
            (
                "include everything using asterisk is valid",
                &["*"],
                &[],
                false,
            ),
            (
                "excludes can contain wildcard",
                &["foo", "bar"],
                &["nginx-ingress-*", "*-bar", "*-ingress-*"],
                false,
            ),
            (
                "includes can contain wildcard",
                &["*-foo", "kube-*", "*kube*"],
                &["bar"],
                false,
            ),
            (
                "include everything not allowed with other includes",
                &["*", "foo"],
                &[],
                true,
            ),
            ("exclude everything not allowed", &["foo"], &["*"], true),
            (
                "excludes cannot contain items in includes",
                &["foo", "bar"],
                &["bar"],
                true,
            ),
        ];
        for (name, includes, excludes, want_error) in cases {
            let problems = namespace_includes_excludes_problems(&owned(includes), &owned(excludes));
            assert_eq!(!problems.is_empty(), *want_error, "{name}: {problems:?}");
        }
    }

    fn restore_with_hooks(hooks: serde_json::Value) -> RestoreSpec {
        serde_json::from_value(serde_json::json!({"backupName": "b1", "hooks": hooks})).unwrap()
    }

    /// `validateAndComplete`'s restore hook checks (`hook.GetRestoreHooksFromSpec`,
    /// `hook.ValidateContainer`; the message as Velero's `TestHandleRestoreHooks` expects it).
    #[test]
    fn restore_hook_init_containers_are_validated() {
        let backups = [backup("b1", Some("Completed"), None, 1)];
        let locations = [location("default", true, Some("Available"))];
        let init = |containers: serde_json::Value| {
            restore_with_hooks(serde_json::json!({"resources": [{"name": "h1",
                "postHooks": [{"init": {"initContainers": containers}}]}]}))
        };
        let valid = init(serde_json::json!([
            {"name": "restore-init-container-1", "image": "nginx", "command": ["a", "b", "c"]}
        ]));
        assert!(run(&valid, &backups, &locations).errors.is_empty());
        let missing = init(serde_json::json!([
            {"name": "no-command", "image": "nginx"},
            {"image": "nginx", "command": ["a"]},
            {"name": "ok", "image": "nginx", "command": ["a"]},
            {"name": "typed", "image": 5, "command": ["a"]}
        ]));
        assert_eq!(
            run(&missing, &backups, &locations).errors,
            vec![
                INVALID_INIT_CONTAINER.to_owned(),
                INVALID_INIT_CONTAINER.to_owned(),
                "json: cannot unmarshal number into Go struct field Container.image of type string"
                    .to_owned(),
            ]
        );
        // A label selector apimachinery refuses stops the hook parsing: no container is looked at.
        let bad_selector = restore_with_hooks(serde_json::json!({"resources": [
            {"name": "h1", "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Equals", "values": ["x"]}]},
             "postHooks": [{"init": {"initContainers": [{"name": "x"}]}}]}
        ]}));
        assert_eq!(
            run(&bad_selector, &backups, &locations).errors,
            vec!["\"Equals\" is not a valid label selector operator"]
        );
        // Hooks are checked after the source: no backup or schedule, only that message.
        let mut no_source = missing.clone();
        no_source.backup_name = None;
        assert_eq!(
            run(&no_source, &backups, &locations).errors,
            vec![
                "Either a backup or schedule must be specified as a source for the restore, but not both"
            ]
        );
    }
}
