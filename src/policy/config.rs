//! The administrator's policy: where it comes from, how it is checked, and how it resolves
//! for one namespace.
//!
//! # Sources
//!
//! 1. The DataProtectionApplication's `spec.nonAdmin` (OADP operator, `api/v1alpha1`
//!    `NonAdmin`), passed as JSON so NAC does not need the DPA CRD: `enforceBackupSpec`,
//!    `enforceRestoreSpec`, `enforceBSLSpec`, `requireApprovalForBSL`, `backupSyncPeriod`
//!    (default 2m), `garbageCollectionPeriod` (default 24h). As upstream, a top-level field of
//!    an `enforce*Spec` is enforced when it holds a non-zero value (booleans count whenever
//!    they are present: Velero declares them as pointers), and it is enforced **whole**:
//!    upstream compares each field with `reflect.DeepEqual` and fills it only when the tenant
//!    left it unset (`ValidateBackupSpec`/`ValidateRestoreSpec` and the controllers' fill
//!    loops in `migtools/oadp-non-admin`). So `enforceBSLSpec.config: {region: r, s3Url: u}`
//!    means the tenant's `config` must be exactly that map, or unset (then it becomes that
//!    map); enforcing single nested keys is what the ConfigMap's `rules` are for. The fields
//!    upstream refuses to enforce are refused here with its message
//!    (`DPA spec.nonAdmin.enforceBackupSpec.storageLocation is non-enforceable by admins`).
//! 2. NAC's own ConfigMap in the OADP namespace, key [`POLICY_CONFIGMAP_KEY`] (`policy.yaml`),
//!    reloaded by the caller whenever it changes. It can say what the DPA cannot: nested field
//!    paths, `false`/empty values enforced explicitly, defaults, maxima, allow-lists, and rules
//!    that apply only to namespaces matching a label selector.
//!
//! # ConfigMap format
//!
//! ```yaml
//! # every key is optional; top-level settings override the DPA's
//! requireApprovalForBSL: true
//! backupSyncPeriod: 2m            # NAC's backup sync; 0 disables it
//! garbageCollectionPeriod: 24h    # 0 disables it
//! veleroBackupSyncPeriod: 1m      # Velero's own --backup-sync-period (must stay below
//!                                 # backupSyncPeriod, or synced backups arrive late)
//! allowCrossNamespaceRecovery: false  # true: the backup sync also adopts backups whose
//!                                 # recorded namespace UID is missing or another one's into
//!                                 # the namespace of the same name (a re-created namespace)
//! storageEndpoints:               # where tenant storage locations may point (see
//!                                 # policy::endpoints): without `allow`, loopback, link-local,
//!                                 # metadata, private, CGNAT, cluster-internal names and the
//!   allow:                        # clusterNetworks are refused; with it, only listed URLs
//!     - https://minio.example.com           # origin (port defaults to 443/80)
//!     - http://minio.velero.svc:9000        # in-cluster storage, once listed
//!     - "*.s3.amazonaws.com"                # subdomains, https:443 (quote the *)
//!     - 10.40.0.0/16                        # IP hosts in this network, any port
//!   clusterNetworks: [10.96.0.0/12, 10.128.0.0/14]   # service and pod networks
//! allowAmbientIdentity: false     # true lets an AWS credential of a tenant location lack
//!                                 # static keys (Velero then uses the pod's or node's identity)
//! rules:                          # applied in order; a later matching rule replaces an
//!                                 # earlier rule's value for the same field
//!   - name: baseline              # optional, shown in configuration errors
//!     # no namespaceSelector: every tenant namespace
//!     backup:                     # paths relative to a NonAdminBackup's spec.backupSpec
//!       enforce:                  # tenant values must match; unset fields get the value
//!         defaultVolumesToFsBackup: true
//!         snapshotVolumes: false                  # false is enforced too
//!         uploaderConfig.parallelFilesUpload: 4   # nested path
//!         labelSelector.matchLabels["app.kubernetes.io/part-of"]: shop  # keys with dots
//!       defaults:                 # unset fields get the value; tenants may choose another
//!         ttl: 168h
//!       maximum:                  # durations or numbers; unset fields get the maximum
//!         ttl: 720h
//!       allowed:                  # allow-lists; list values are checked item by item;
//!         snapshotMoveData: [true, null]          # null = may be left unset
//!     restore:                    # relative to spec.restoreSpec
//!       enforce:
//!         restorePVs: true
//!     bsl:                        # relative to spec.backupStorageLocationSpec
//!       allowed:
//!         provider: [aws]
//!         config.s3Url: ["https://s3.eu-central-1.amazonaws.com", null]
//!       enforce:
//!         config.region: eu-central-1
//!   - name: regulated-teams
//!     namespaceSelector:          # a Kubernetes label selector over namespace labels
//!       matchLabels: {compliance: regulated}   # kubernetes.io/metadata.name selects by name
//!     backup:
//!       maximum:
//!         ttl: 2160h              # an exception: replaces the baseline's 720h
//! ```
//!
//! DPA enforcement applies first, to every namespace; ConfigMap rules come after it. A later
//! rule can replace a value but not remove one. Every field path is checked against the Velero
//! types when loaded (unknown fields, wrong types and invalid durations are errors naming the
//! key), so a typo cannot silently disable a rule.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde::Deserialize;
use serde_json::Value;

use crate::api::common::GoDuration;
use crate::api::oadp::policy_sources::POLICY_CONFIGMAP_KEY;
use crate::api::selector::Selector;
use crate::api::velero::{BackupSpec, BackupStorageLocationSpec, RestoreSpec};
use crate::policy::credentials::POD_IDENTITY_CONFIG_KEYS;
use crate::policy::endpoints::StorageEndpoints;
use crate::policy::field_path::FieldPath;
use crate::policy::rules::{Maximum, SpecRules, as_duration, is_duration_field, is_go_zero};
use crate::policy::selector::compile as compile_selector;

/// Upstream default of `spec.nonAdmin.backupSyncPeriod`.
pub const DEFAULT_BACKUP_SYNC_PERIOD: Duration = Duration::from_secs(2 * 60);
/// Upstream default of `spec.nonAdmin.garbageCollectionPeriod`.
pub const DEFAULT_GARBAGE_COLLECTION_PERIOD: Duration = Duration::from_secs(24 * 3600);
/// Velero's default `--backup-sync-period`.
pub const DEFAULT_VELERO_BACKUP_SYNC_PERIOD: Duration = Duration::from_secs(60);

/// A policy that cannot be loaded; the message names the source and the key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PolicyConfigError {
    /// The ConfigMap value is not a policy document.
    #[error("ConfigMap key {key} is not a valid policy document: {reason}")]
    Document {
        /// The ConfigMap key.
        key: String,
        /// The YAML parser's message (with the path and line).
        reason: String,
    },
    /// A value is wrong; `location` names the source and key
    /// (`DPA spec.nonAdmin.enforceBackupSpec.ttl`, `policy.yaml rules[0]: backup.maximum.ttl`).
    #[error("{location} {reason}")]
    Invalid {
        /// Where the value is.
        location: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Two settings contradict each other; the message is upstream's where it has one.
    #[error("{0}")]
    Conflict(String),
}

fn invalid(location: impl Into<String>, reason: impl Into<String>) -> PolicyConfigError {
    PolicyConfigError::Invalid {
        location: location.into(),
        reason: reason.into(),
    }
}

/// The three tenant specs a policy governs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpecKind {
    /// `NonAdminBackup.spec.backupSpec` (Velero `BackupSpec`).
    Backup,
    /// `NonAdminRestore.spec.restoreSpec` (Velero `RestoreSpec`).
    Restore,
    /// `NonAdminBackupStorageLocation.spec.backupStorageLocationSpec`.
    BackupStorageLocation,
}

impl SpecKind {
    /// The tenant spec's path, prefixing every field in messages.
    pub fn spec_prefix(self) -> &'static str {
        match self {
            Self::Backup => "spec.backupSpec",
            Self::Restore => "spec.restoreSpec",
            Self::BackupStorageLocation => "spec.backupStorageLocationSpec",
        }
    }

    /// The section name in `policy.yaml` rules.
    fn section(self) -> &'static str {
        match self {
            Self::Backup => "backup",
            Self::Restore => "restore",
            Self::BackupStorageLocation => "bsl",
        }
    }

    /// The DPA `spec.nonAdmin` field enforcing this spec.
    fn dpa_field(self) -> &'static str {
        match self {
            Self::Backup => "enforceBackupSpec",
            Self::Restore => "enforceRestoreSpec",
            Self::BackupStorageLocation => "enforceBSLSpec",
        }
    }

    /// Why `value` may not be enforced (or defaulted) at `path`: the fields upstream's DPA
    /// validation refuses, plus the ones NAC itself always controls.
    fn non_enforceable(self, path: &FieldPath, value: &Value) -> Option<&'static str> {
        const PLAIN: &str = "is non-enforceable by admins";
        let top = path.top_level();
        let single = path.segments().len() == 1;
        match self {
            Self::Backup => match top {
                "storageLocation"
                | "volumeSnapshotLocations"
                | "includedNamespaces"
                | "excludedNamespaces" => Some(PLAIN),
                "includeClusterResources" if value == &Value::Bool(true) => Some(
                    "is non-enforceable by admins as true, must be set to false if enforced by admins",
                ),
                "includedClusterScopedResources" if !is_empty_value(value) => {
                    Some("is non-enforceable by admins and must remain empty")
                }
                _ => None,
            },
            Self::Restore => match top {
                "scheduleName" | "includedNamespaces" | "excludedNamespaces"
                | "namespaceMapping" | "backupName" => Some(PLAIN),
                "includeClusterResources" if value == &Value::Bool(true) => Some(
                    "is non-enforceable by admins as true, must be set to false if enforced by admins",
                ),
                _ => None,
            },
            Self::BackupStorageLocation => {
                // A whole object (DPA enforcement) is refused for what it contains.
                let second = path.segments().get(1).map(String::as_str);
                let holds = |key: &str| {
                    single
                        && value
                            .as_object()
                            .is_some_and(|object| object.contains_key(key))
                };
                let pod_key = POD_IDENTITY_CONFIG_KEYS
                    .iter()
                    .any(|key| second == Some(*key) || (top == "config" && holds(key)));
                match (top, second) {
                    ("default", _) if single && value == &Value::Bool(true) => Some(
                        "is non-enforceable by admins as true, a NonAdminBackupStorageLocation can never be the default",
                    ),
                    ("objectStorage", Some("caCertRef")) => Some(
                        "is non-enforceable by admins: tenants cannot place Secrets in the OADP namespace",
                    ),
                    ("objectStorage", None) if holds("caCertRef") => Some(
                        "is non-enforceable by admins: tenants cannot place Secrets in the OADP namespace",
                    ),
                    ("config", _) if pod_key => Some(
                        "is non-enforceable by admins: it makes Velero use the Velero pod's own files, environment or identity",
                    ),
                    _ => None,
                }
            }
        }
    }

    /// Top-level and nested field names, from the Velero types' schemas.
    fn schema(self) -> schemars::Schema {
        match self {
            Self::Backup => schemars::schema_for!(BackupSpec),
            Self::Restore => schemars::schema_for!(RestoreSpec),
            Self::BackupStorageLocation => schemars::schema_for!(BackupStorageLocationSpec),
        }
    }

    /// Checks that `value` can stand at `path` in this spec: the path names known fields, the
    /// value has the field's type, and durations parse.
    fn check_value(self, path: &FieldPath, value: &Value) -> Result<(), String> {
        if let Some(reason) = unknown_field(&self.schema(), path, self.spec_prefix()) {
            return Err(reason);
        }
        if is_duration_field(path) && !value.is_null() && as_duration(value).is_none() {
            return Err(format!("must be a duration such as \"720h\" (got {value})"));
        }
        let mut document = match self {
            Self::Backup | Self::Restore => Value::Object(serde_json::Map::new()),
            // The required fields, so a single enforced key type-checks on its own.
            Self::BackupStorageLocation => serde_json::json!({
                "provider": "p",
                "objectStorage": {"bucket": "b"},
                "credential": {"name": "n", "key": "k"},
            }),
        };
        // A whole object (DPA enforcement) is checked over the required fields, as Go reads
        // a struct whose other fields are zero.
        let mut value = value.clone();
        if let (Value::Object(given), Some(Value::Object(required))) =
            (&mut value, path.get(&document))
        {
            for (key, default) in required {
                given.entry(key.clone()).or_insert_with(|| default.clone());
            }
        }
        if !path.set(&mut document, value) {
            return Err("cannot be set: a parent field is not an object".to_owned());
        }
        let typed = match self {
            Self::Backup => serde_json::from_value::<BackupSpec>(document).map(drop),
            Self::Restore => serde_json::from_value::<RestoreSpec>(document).map(drop),
            Self::BackupStorageLocation => {
                serde_json::from_value::<BackupStorageLocationSpec>(document).map(drop)
            }
        };
        typed.map_err(|error| format!("has the wrong type for {}: {error}", self.spec_prefix()))
    }
}

/// `null`, `""`, `[]` or `{}`.
fn is_empty_value(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(text) => text.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
        _ => false,
    }
}

/// The first segment of `path` that the schema says does not exist, as an error message.
/// Gives up (accepts) where the schema cannot tell (maps, preserved objects).
fn unknown_field(schema: &schemars::Schema, path: &FieldPath, spec_prefix: &str) -> Option<String> {
    let root = schema.as_value();
    let mut node = root;
    for (index, segment) in path.segments().iter().enumerate() {
        node = resolve_schema(root, node)?;
        let properties = node.get("properties").and_then(Value::as_object);
        let additional = node
            .get("additionalProperties")
            .filter(|additional| additional.is_object());
        match (properties.and_then(|p| p.get(segment)), additional) {
            (Some(child), _) => node = child,
            (None, Some(additional)) => node = additional,
            (None, None) => {
                let properties = properties?;
                let parent = FieldPath::from_segments(path.segments()[..index].iter().cloned());
                let parent = if index == 0 {
                    spec_prefix.to_owned()
                } else {
                    format!("{spec_prefix}.{parent}")
                };
                let known = properties.keys().cloned().collect::<Vec<_>>().join(", ");
                return Some(format!(
                    "names an unknown field {segment:?} of {parent} (known fields: {known})"
                ));
            }
        }
    }
    None
}

/// Follows `$ref`s and picks the non-null branch of `anyOf`/`oneOf` (how optional fields are
/// described).
fn resolve_schema<'a>(root: &'a Value, mut node: &'a Value) -> Option<&'a Value> {
    for _ in 0..16 {
        if let Some(reference) = node.get("$ref").and_then(Value::as_str) {
            node = root.pointer(reference.strip_prefix('#')?)?;
            continue;
        }
        let branches = node
            .get("anyOf")
            .or_else(|| node.get("oneOf"))
            .or_else(|| node.get("allOf"))
            .and_then(Value::as_array);
        if let Some(branches) = branches {
            node = branches
                .iter()
                .find(|branch| branch.get("type").and_then(Value::as_str) != Some("null"))?;
            continue;
        }
        return Some(node);
    }
    None
}

/// Settings that are not per namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlobalSettings {
    /// Whether a NonAdminBackupStorageLocation waits for the admin's approval (default false).
    pub require_approval_for_bsl: bool,
    /// Period of NAC's backup sync; zero disables it (default 2m).
    pub backup_sync_period: Duration,
    /// Period of NAC's garbage collection; zero disables it (default 24h).
    pub garbage_collection_period: Duration,
    /// Velero's own backup sync period, used for tenant locations that do not set one
    /// (default 1m).
    pub velero_backup_sync_period: Duration,
    /// Whether the backup sync may adopt a backup into a namespace of its origin's name whose
    /// UID is not the one the backup recorded (a namespace deleted and re-created, or a backup
    /// made before NAC recorded UIDs): `allowCrossNamespaceRecovery`, ConfigMap only (default
    /// false).
    pub allow_cross_namespace_recovery: bool,
    /// Whether a tenant location's AWS credential may lack static keys, letting the AWS SDK
    /// fall back to the Velero pod's or node's identity: `allowAmbientIdentity`, ConfigMap only
    /// (default false).
    pub allow_ambient_identity: bool,
}

impl Default for GlobalSettings {
    fn default() -> Self {
        Self {
            require_approval_for_bsl: false,
            backup_sync_period: DEFAULT_BACKUP_SYNC_PERIOD,
            garbage_collection_period: DEFAULT_GARBAGE_COLLECTION_PERIOD,
            velero_backup_sync_period: DEFAULT_VELERO_BACKUP_SYNC_PERIOD,
            allow_cross_namespace_recovery: false,
            allow_ambient_identity: false,
        }
    }
}

/// The policy that applies to one namespace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EffectivePolicy {
    /// Rules for `spec.backupSpec`.
    pub backup: SpecRules,
    /// Rules for `spec.restoreSpec`.
    pub restore: SpecRules,
    /// Rules for `spec.backupStorageLocationSpec`.
    pub bsl: SpecRules,
    /// Cluster-wide settings.
    pub settings: GlobalSettings,
    /// Where tenant storage locations may point (cluster-wide).
    pub storage_endpoints: StorageEndpoints,
}

impl EffectivePolicy {
    /// The rules for `kind`.
    pub fn rules(&self, kind: SpecKind) -> &SpecRules {
        match kind {
            SpecKind::Backup => &self.backup,
            SpecKind::Restore => &self.restore,
            SpecKind::BackupStorageLocation => &self.bsl,
        }
    }
}

/// Rules for the three specs.
#[derive(Clone, Debug, Default, PartialEq)]
struct RuleSet {
    backup: SpecRules,
    restore: SpecRules,
    bsl: SpecRules,
}

impl RuleSet {
    fn rules_mut(&mut self, kind: SpecKind) -> &mut SpecRules {
        match kind {
            SpecKind::Backup => &mut self.backup,
            SpecKind::Restore => &mut self.restore,
            SpecKind::BackupStorageLocation => &mut self.bsl,
        }
    }

    fn merge(&mut self, other: &Self) {
        self.backup.merge(&other.backup);
        self.restore.merge(&other.restore);
        self.bsl.merge(&other.bsl);
    }
}

/// A ConfigMap rule.
#[derive(Clone, Debug, PartialEq)]
struct PolicyRule {
    /// `None` applies everywhere.
    selector: Option<Selector>,
    rules: RuleSet,
}

/// The whole administrator policy, loaded from the DPA and NAC's ConfigMap.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NacPolicy {
    settings: GlobalSettings,
    storage_endpoints: StorageEndpoints,
    dpa: RuleSet,
    rules: Vec<PolicyRule>,
}

/// Where a global setting came from, for conflict messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SettingSource {
    Default,
    Dpa,
    ConfigMap,
}

impl NacPolicy {
    /// Loads the policy from the DPA's `spec.nonAdmin` (when a DPA exists) and NAC's
    /// ConfigMap `data` (when it exists). Either may be absent; both absent is the default
    /// policy (no rules, upstream's default periods, no approval).
    pub fn from_sources(
        dpa_non_admin: Option<&Value>,
        configmap_data: Option<&BTreeMap<String, String>>,
    ) -> Result<Self, PolicyConfigError> {
        let mut policy = Self::default();
        let mut sync_source = SettingSource::Default;
        let mut gc_source = SettingSource::Default;
        if let Some(non_admin) = dpa_non_admin {
            policy.load_dpa(non_admin, &mut sync_source, &mut gc_source)?;
        }
        if let Some(data) = configmap_data {
            policy.load_configmap(data, &mut sync_source, &mut gc_source)?;
        }
        policy.check_settings(sync_source, gc_source)?;
        Ok(policy)
    }

    /// The cluster-wide settings.
    pub fn settings(&self) -> GlobalSettings {
        self.settings
    }

    /// Where tenant storage locations may point (`storageEndpoints`).
    pub fn storage_endpoints(&self) -> &StorageEndpoints {
        &self.storage_endpoints
    }

    /// The policy for a namespace with `namespace_labels` (Kubernetes sets
    /// `kubernetes.io/metadata.name`, so rules can select a namespace by name).
    pub fn for_namespace(&self, namespace_labels: &BTreeMap<String, String>) -> EffectivePolicy {
        let mut rules = self.dpa.clone();
        for rule in &self.rules {
            let applies = rule
                .selector
                .as_ref()
                .is_none_or(|selector| selector.matches(namespace_labels));
            if applies {
                rules.merge(&rule.rules);
            }
        }
        EffectivePolicy {
            backup: rules.backup,
            restore: rules.restore,
            bsl: rules.bsl,
            settings: self.settings,
            storage_endpoints: self.storage_endpoints.clone(),
        }
    }

    fn load_dpa(
        &mut self,
        non_admin: &Value,
        sync_source: &mut SettingSource,
        gc_source: &mut SettingSource,
    ) -> Result<(), PolicyConfigError> {
        const PREFIX: &str = "DPA spec.nonAdmin";
        let object = match non_admin {
            Value::Null => return Ok(()),
            Value::Object(object) => object,
            _ => return Err(invalid(PREFIX, "must be an object")),
        };
        match object.get("requireApprovalForBSL") {
            None | Some(Value::Null) => {}
            Some(Value::Bool(required)) => self.settings.require_approval_for_bsl = *required,
            Some(_) => {
                return Err(invalid(
                    format!("{PREFIX}.requireApprovalForBSL"),
                    "must be true or false",
                ));
            }
        }
        if let Some(period) = dpa_period(object, "garbageCollectionPeriod")? {
            self.settings.garbage_collection_period = period;
            *gc_source = SettingSource::Dpa;
        }
        if let Some(period) = dpa_period(object, "backupSyncPeriod")? {
            self.settings.backup_sync_period = period;
            *sync_source = SettingSource::Dpa;
        }
        for kind in [
            SpecKind::Backup,
            SpecKind::Restore,
            SpecKind::BackupStorageLocation,
        ] {
            let location = format!("{PREFIX}.{}", kind.dpa_field());
            let enforced = match object.get(kind.dpa_field()) {
                None | Some(Value::Null) => continue,
                Some(Value::Object(enforced)) => enforced,
                Some(_) => return Err(invalid(location, "must be an object")),
            };
            let mut leaves = Vec::new();
            flatten_enforced(enforced, &mut leaves);
            for (path, value) in leaves {
                let field_location = format!("{location}.{path}");
                if let Some(reason) = kind.non_enforceable(&path, &value) {
                    return Err(invalid(field_location, reason));
                }
                kind.check_value(&path, &value)
                    .map_err(|reason| invalid(&field_location, reason))?;
                self.dpa.rules_mut(kind).enforce(path, value);
            }
        }
        Ok(())
    }

    fn load_configmap(
        &mut self,
        data: &BTreeMap<String, String>,
        sync_source: &mut SettingSource,
        gc_source: &mut SettingSource,
    ) -> Result<(), PolicyConfigError> {
        let Some(text) = data.get(POLICY_CONFIGMAP_KEY) else {
            // Catch `policy.yml` and friends instead of silently running without a policy.
            if let Some(near_miss) = data.keys().find(|key| key.starts_with("policy")) {
                return Err(invalid(
                    format!("ConfigMap key {near_miss}"),
                    format!("is not read by NAC; the policy belongs under {POLICY_CONFIGMAP_KEY}"),
                ));
            }
            return Ok(());
        };
        if text.trim().is_empty() {
            return Ok(());
        }
        let document: PolicyDocument =
            serde_yaml::from_str(text).map_err(|error| PolicyConfigError::Document {
                key: POLICY_CONFIGMAP_KEY.to_owned(),
                reason: error.to_string(),
            })?;
        let location = |key: &str| format!("{POLICY_CONFIGMAP_KEY} {key}");
        if let Some(required) = document.require_approval_for_bsl {
            self.settings.require_approval_for_bsl = required;
        }
        if let Some(text) = &document.backup_sync_period {
            self.settings.backup_sync_period = parse_period(text, &location("backupSyncPeriod"))?;
            *sync_source = SettingSource::ConfigMap;
        }
        if let Some(text) = &document.garbage_collection_period {
            self.settings.garbage_collection_period =
                parse_period(text, &location("garbageCollectionPeriod"))?;
            *gc_source = SettingSource::ConfigMap;
        }
        if let Some(text) = &document.velero_backup_sync_period {
            self.settings.velero_backup_sync_period =
                parse_period(text, &location("veleroBackupSyncPeriod"))?;
        }
        if let Some(allowed) = document.allow_cross_namespace_recovery {
            self.settings.allow_cross_namespace_recovery = allowed;
        }
        if let Some(allowed) = document.allow_ambient_identity {
            self.settings.allow_ambient_identity = allowed;
        }
        if let Some(endpoints) = &document.storage_endpoints {
            self.storage_endpoints =
                StorageEndpoints::parse(&endpoints.allow, &endpoints.cluster_networks)
                    .map_err(|reason| invalid(location("storageEndpoints"), reason))?;
        }
        for (index, rule) in document.rules.iter().enumerate() {
            let rule_location = match &rule.name {
                Some(name) => format!("{POLICY_CONFIGMAP_KEY} rules[{index}] ({name}):"),
                None => format!("{POLICY_CONFIGMAP_KEY} rules[{index}]:"),
            };
            self.rules.push(parse_rule(rule, &rule_location)?);
        }
        Ok(())
    }

    /// Cross-setting checks, after both sources are loaded.
    fn check_settings(
        &self,
        sync_source: SettingSource,
        gc_source: SettingSource,
    ) -> Result<(), PolicyConfigError> {
        let settings = self.settings;
        let sync = settings.backup_sync_period;
        let gc = settings.garbage_collection_period;
        // Upstream refuses gc <= sync even when one is 0, which makes "0 disables" unusable;
        // the ordering only matters when both run.
        if !sync.is_zero() && !gc.is_zero() && gc <= sync {
            let from_configmap = [sync_source, gc_source].contains(&SettingSource::ConfigMap);
            let message = if from_configmap {
                format!(
                    "{} ({}) can not be greater or equal {} ({})",
                    setting_name(sync_source, "backupSyncPeriod"),
                    go(sync),
                    setting_name(gc_source, "garbageCollectionPeriod"),
                    go(gc)
                )
            } else {
                format!(
                    "DPA spec.nonAdmin.backupSyncPeriod ({}) can not be greater or equal spec.nonAdmin.garbageCollectionPeriod ({})",
                    go(sync),
                    go(gc)
                )
            };
            return Err(PolicyConfigError::Conflict(message));
        }
        if sync.is_zero() {
            return Ok(());
        }
        let velero = settings.velero_backup_sync_period;
        if !velero.is_zero() && velero >= sync {
            return Err(PolicyConfigError::Conflict(format!(
                "{POLICY_CONFIGMAP_KEY} veleroBackupSyncPeriod ({}) can not be greater or equal {} ({}): Velero would sync backups after NAC looks for them",
                go(velero),
                setting_name(sync_source, "backupSyncPeriod"),
                go(sync)
            )));
        }
        // A tenant location's sync period must stay below NAC's (oadp-operator PR 1638).
        let bsl_sync = FieldPath::from_segments(["backupSyncPeriod"]);
        let check = |value: Option<&Value>, source: String| match value.and_then(as_duration) {
            Some(period) if !period.is_zero() && period >= sync => {
                Err(PolicyConfigError::Conflict(format!(
                    "{source} ({}) can not be greater or equal {} ({})",
                    go(period),
                    setting_name(sync_source, "backupSyncPeriod"),
                    go(sync)
                )))
            }
            _ => Ok(()),
        };
        check(
            self.dpa.bsl.enforced().get(&bsl_sync),
            "DPA spec.nonAdmin.enforceBSLSpec.backupSyncPeriod".to_owned(),
        )?;
        for (index, rule) in self.rules.iter().enumerate() {
            let bsl = &rule.rules.bsl;
            let maximum = bsl.maxima().get(&bsl_sync).map(|maximum| maximum.to_json());
            for (section, value) in [
                ("enforce", bsl.enforced().get(&bsl_sync)),
                ("defaults", bsl.defaults().get(&bsl_sync)),
                ("maximum", maximum.as_ref()),
            ] {
                check(
                    value,
                    format!(
                        "{POLICY_CONFIGMAP_KEY} rules[{index}]: bsl.{section}.backupSyncPeriod"
                    ),
                )?;
            }
        }
        Ok(())
    }
}

fn setting_name(source: SettingSource, key: &str) -> String {
    match source {
        SettingSource::ConfigMap => format!("{POLICY_CONFIGMAP_KEY} {key}"),
        SettingSource::Dpa | SettingSource::Default => format!("DPA spec.nonAdmin.{key}"),
    }
}

fn go(duration: Duration) -> GoDuration {
    GoDuration::from_std(duration)
}

/// A DPA period, with upstream's "can not be negative" message.
fn dpa_period(
    object: &serde_json::Map<String, Value>,
    key: &str,
) -> Result<Option<Duration>, PolicyConfigError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => {
            parse_period(text, &format!("DPA spec.nonAdmin.{key}")).map(Some)
        }
        Some(_) => Err(invalid(
            format!("DPA spec.nonAdmin.{key}"),
            "must be a duration such as \"2m\"",
        )),
    }
}

fn parse_period(text: &str, location: &str) -> Result<Duration, PolicyConfigError> {
    match GoDuration::new(text).parse() {
        Ok(period) => Ok(period),
        Err(_) if text.trim_start().starts_with('-') => {
            Err(invalid(location, "can not be negative"))
        }
        Err(error) => Err(invalid(
            location,
            format!("is not a valid duration: {error}"),
        )),
    }
}

/// The fields of a DPA `enforce*Spec` that are enforced: each top-level field whole (maps and
/// structs included, as upstream's `reflect.DeepEqual`), skipping Go zero values (upstream's
/// `IsZero` check, see [`is_go_zero`]).
fn flatten_enforced(object: &serde_json::Map<String, Value>, leaves: &mut Vec<(FieldPath, Value)>) {
    for (key, value) in object {
        let path = FieldPath::from_segments([key.as_str()]);
        if !is_go_zero(&path, value) {
            leaves.push((path, value.clone()));
        }
    }
}

/// `policy.yaml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PolicyDocument {
    #[serde(rename = "requireApprovalForBSL")]
    require_approval_for_bsl: Option<bool>,
    backup_sync_period: Option<String>,
    garbage_collection_period: Option<String>,
    velero_backup_sync_period: Option<String>,
    allow_cross_namespace_recovery: Option<bool>,
    storage_endpoints: Option<StorageEndpointsDocument>,
    allow_ambient_identity: Option<bool>,
    #[serde(default)]
    rules: Vec<RuleDocument>,
}

/// `storageEndpoints` of `policy.yaml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct StorageEndpointsDocument {
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    cluster_networks: Vec<String>,
}

/// One entry of `rules`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RuleDocument {
    name: Option<String>,
    namespace_selector: Option<LabelSelector>,
    backup: Option<SectionDocument>,
    restore: Option<SectionDocument>,
    bsl: Option<SectionDocument>,
}

/// `backup`, `restore` or `bsl` of a rule.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SectionDocument {
    #[serde(default)]
    enforce: BTreeMap<String, Value>,
    #[serde(default)]
    defaults: BTreeMap<String, Value>,
    #[serde(default)]
    maximum: BTreeMap<String, Value>,
    #[serde(default)]
    allowed: BTreeMap<String, Vec<Value>>,
}

fn parse_rule(rule: &RuleDocument, location: &str) -> Result<PolicyRule, PolicyConfigError> {
    let selector = rule
        .namespace_selector
        .as_ref()
        .map(compile_selector)
        .transpose()
        .map_err(|error| invalid(format!("{location} namespaceSelector"), error.to_string()))?;
    let mut rules = RuleSet::default();
    for (kind, section) in [
        (SpecKind::Backup, &rule.backup),
        (SpecKind::Restore, &rule.restore),
        (SpecKind::BackupStorageLocation, &rule.bsl),
    ] {
        if let Some(section) = section {
            *rules.rules_mut(kind) = parse_section(kind, section, location)?;
        }
    }
    Ok(PolicyRule { selector, rules })
}

fn parse_section(
    kind: SpecKind,
    section: &SectionDocument,
    location: &str,
) -> Result<SpecRules, PolicyConfigError> {
    let name = kind.section();
    let at = |part: &str, key: &str| format!("{location} {name}.{part}.{key}");
    let path_of = |part: &str, key: &str| {
        FieldPath::parse(key).map_err(|error| invalid(at(part, key), error.to_string()))
    };
    let mut rules = SpecRules::default();
    for (key, value) in &section.enforce {
        let path = path_of("enforce", key)?;
        if let Some(reason) = kind.non_enforceable(&path, value) {
            return Err(invalid(at("enforce", key), reason));
        }
        kind.check_value(&path, value)
            .map_err(|reason| invalid(at("enforce", key), reason))?;
        rules.enforce(path, value.clone());
    }
    for (key, value) in &section.defaults {
        let path = path_of("defaults", key)?;
        if let Some(reason) = kind.non_enforceable(&path, value) {
            return Err(invalid(
                at("defaults", key),
                reason.replace("enforceable", "defaultable"),
            ));
        }
        kind.check_value(&path, value)
            .map_err(|reason| invalid(at("defaults", key), reason))?;
        rules.set_default(path, value.clone());
    }
    for (key, value) in &section.maximum {
        let path = path_of("maximum", key)?;
        let maximum =
            parse_maximum(&path, value).map_err(|reason| invalid(at("maximum", key), reason))?;
        kind.check_value(&path, &maximum.to_json())
            .map_err(|reason| invalid(at("maximum", key), reason))?;
        rules.set_maximum(path, maximum);
    }
    for (key, values) in &section.allowed {
        let path = path_of("allowed", key)?;
        if values.is_empty() {
            return Err(invalid(
                at("allowed", key),
                "is empty, so nothing would be accepted; list the allowed values (null allows leaving it unset)",
            ));
        }
        for value in values.iter().filter(|value| !value.is_null()) {
            // A list field's allow-list names its items: an item must fit as a one-item list.
            kind.check_value(&path, value)
                .or_else(|_| kind.check_value(&path, &Value::Array(vec![value.clone()])))
                .map_err(|reason| invalid(at("allowed", key), reason))?;
        }
        rules.set_allowed(path, values.clone());
    }
    check_consistency(&rules, kind, location)?;
    Ok(rules)
}

/// A maximum: a duration for duration fields, otherwise a number.
fn parse_maximum(path: &FieldPath, value: &Value) -> Result<Maximum, String> {
    if is_duration_field(path) {
        return match value {
            Value::String(text) if !text.trim_start().starts_with('-') => GoDuration::new(text)
                .parse()
                .map(Maximum::Duration)
                .map_err(|error| format!("is not a valid duration: {error}")),
            _ => Err(format!("must be a duration such as \"720h\" (got {value})")),
        };
    }
    value
        .as_f64()
        .map(Maximum::Number)
        .ok_or_else(|| format!("must be a number, or a duration for duration fields (got {value})"))
}

/// Enforced and default values of one rule must satisfy the same rule's maxima and
/// allow-lists, or every tenant request would be refused.
fn check_consistency(
    rules: &SpecRules,
    kind: SpecKind,
    location: &str,
) -> Result<(), PolicyConfigError> {
    let mut limits = SpecRules::default();
    for (path, maximum) in rules.maxima() {
        limits.set_maximum(path.clone(), *maximum);
    }
    for (path, values) in rules.allowed() {
        limits.set_allowed(path.clone(), values.clone());
    }
    let sections = [
        ("enforce", rules.enforced()),
        ("defaults", rules.defaults()),
    ];
    for (part, values) in sections {
        for (path, value) in values {
            let mut spec = Value::Object(serde_json::Map::new());
            path.set(&mut spec, value.clone());
            let field = format!("{}.{path}", kind.spec_prefix());
            let conflict = limits
                .limit_violations(&spec, kind.spec_prefix())
                .into_iter()
                .find(|violation| {
                    violation.field == field && !crate::policy::rules::is_unset(value)
                });
            if let Some(violation) = conflict {
                return Err(invalid(
                    format!("{location} {}.{part}.{path}", kind.section()),
                    format!("contradicts the rule's own limits: {violation}"),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn path(text: &str) -> FieldPath {
        FieldPath::parse(text).unwrap()
    }

    fn configmap(yaml: &str) -> BTreeMap<String, String> {
        BTreeMap::from([(POLICY_CONFIGMAP_KEY.to_owned(), yaml.to_owned())])
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect()
    }

    fn error_of(dpa: Option<Value>, yaml: Option<&str>) -> String {
        let data = yaml.map(configmap);
        NacPolicy::from_sources(dpa.as_ref(), data.as_ref())
            .unwrap_err()
            .to_string()
    }

    const DOC_EXAMPLE: &str = r#"
requireApprovalForBSL: true
backupSyncPeriod: 2m
garbageCollectionPeriod: 24h
veleroBackupSyncPeriod: 1m
storageEndpoints:
  allow:
    - https://minio.example.com
    - http://minio.velero.svc:9000
    - "*.s3.amazonaws.com"
    - 10.40.0.0/16
  clusterNetworks: [10.96.0.0/12, 10.128.0.0/14]
allowAmbientIdentity: false
rules:
  - name: baseline
    backup:
      enforce:
        defaultVolumesToFsBackup: true
        snapshotVolumes: false
        uploaderConfig.parallelFilesUpload: 4
        labelSelector.matchLabels["app.kubernetes.io/part-of"]: shop
      defaults:
        ttl: 168h
      maximum:
        ttl: 720h
      allowed:
        snapshotMoveData: [true, null]
    restore:
      enforce:
        restorePVs: true
    bsl:
      allowed:
        provider: [aws]
        config.s3Url: ["https://s3.eu-central-1.amazonaws.com", null]
      enforce:
        config.region: eu-central-1
  - name: regulated-teams
    namespaceSelector:
      matchLabels: {compliance: regulated}
    backup:
      maximum:
        ttl: 2160h
"#;

    #[test]
    fn defaults_without_sources() {
        let policy = NacPolicy::from_sources(None, None).unwrap();
        assert_eq!(policy.settings(), GlobalSettings::default());
        assert_eq!(
            policy.settings().backup_sync_period,
            Duration::from_secs(120)
        );
        assert_eq!(
            policy.for_namespace(&BTreeMap::new()),
            EffectivePolicy::default()
        );
    }

    #[test]
    fn cross_namespace_recovery_is_off_unless_the_configmap_opts_in() {
        assert!(!GlobalSettings::default().allow_cross_namespace_recovery);
        let on = NacPolicy::from_sources(
            None,
            Some(&configmap("allowCrossNamespaceRecovery: true\n")),
        )
        .unwrap();
        assert!(on.settings().allow_cross_namespace_recovery);
        let off = NacPolicy::from_sources(
            None,
            Some(&configmap("allowCrossNamespaceRecovery: false\n")),
        )
        .unwrap();
        assert!(!off.settings().allow_cross_namespace_recovery);
        assert!(
            error_of(None, Some("allowCrossNamespaceRecovery: sometimes\n"))
                .contains("allowCrossNamespaceRecovery"),
            "{}",
            error_of(None, Some("allowCrossNamespaceRecovery: sometimes\n"))
        );
    }

    #[test]
    fn documented_example_loads_and_resolves_per_namespace() {
        let policy = NacPolicy::from_sources(None, Some(&configmap(DOC_EXAMPLE))).unwrap();
        assert!(policy.settings().require_approval_for_bsl);
        assert!(!policy.settings().allow_ambient_identity);
        assert_eq!(policy.storage_endpoints().allow().len(), 4);
        assert_eq!(policy.storage_endpoints().cluster_networks().len(), 2);

        let plain = policy.for_namespace(&labels(&[("kubernetes.io/metadata.name", "team-a")]));
        assert_eq!(
            plain.backup.enforced()[&path("snapshotVolumes")],
            json!(false)
        );
        assert_eq!(
            plain.backup.enforced()[&path("uploaderConfig.parallelFilesUpload")],
            json!(4)
        );
        assert_eq!(plain.backup.defaults()[&path("ttl")], json!("168h"));
        assert_eq!(
            plain.backup.maxima()[&path("ttl")],
            Maximum::Duration(Duration::from_secs(720 * 3600))
        );
        assert_eq!(plain.restore.enforced()[&path("restorePVs")], json!(true));
        assert_eq!(
            plain.bsl.enforced()[&path("config.region")],
            json!("eu-central-1")
        );

        let regulated = policy.for_namespace(&labels(&[("compliance", "regulated")]));
        assert_eq!(
            regulated.backup.maxima()[&path("ttl")],
            Maximum::Duration(Duration::from_secs(2160 * 3600)),
            "the later, more specific rule replaces the baseline maximum"
        );
        assert_eq!(
            regulated.backup.enforced()[&path("snapshotVolumes")],
            json!(false),
            "baseline enforcement still applies"
        );
    }

    #[test]
    fn dpa_enforcement_matches_upstream_semantics() {
        let dpa = json!({
            "enable": true,
            "requireApprovalForBSL": true,
            "backupSyncPeriod": "5m",
            "garbageCollectionPeriod": "1h",
            "enforceBackupSpec": {
                "ttl": "48h",
                "snapshotMoveData": false,
                "datamover": "",
                "includedResources": [],
                "csiSnapshotTimeout": "0s",
                "uploaderConfig": {"parallelFilesUpload": 0},
                "labelSelector": {"matchLabels": {"backup": "yes"}}
            },
            "enforceRestoreSpec": {"restorePVs": true},
            "enforceBSLSpec": {
                "provider": "aws",
                "config": {"region": "eu-central-1"},
                "objectStorage": {"prefix": "non-admin"}
            }
        });
        let policy = NacPolicy::from_sources(Some(&dpa), None).unwrap();
        let settings = policy.settings();
        assert!(settings.require_approval_for_bsl);
        assert_eq!(settings.backup_sync_period, Duration::from_secs(300));
        assert_eq!(
            settings.garbage_collection_period,
            Duration::from_secs(3600)
        );

        let effective = policy.for_namespace(&BTreeMap::new());
        let enforced: Vec<String> = effective
            .backup
            .enforced()
            .keys()
            .map(ToString::to_string)
            .collect();
        // Go zero values ("", 0, "0s") are not enforced; false is (a pointer in Go), and so is
        // [] (a non-nil slice after JSON decoding: upstream's IsZero is false); objects are
        // enforced whole, as upstream's reflect.DeepEqual on top-level fields (a non-nil
        // pointer is not zero, whatever it points at).
        assert_eq!(
            enforced,
            [
                "includedResources",
                "labelSelector",
                "snapshotMoveData",
                "ttl",
                "uploaderConfig"
            ]
        );
        assert_eq!(
            effective.backup.enforced()[&path("includedResources")],
            json!([])
        );
        assert_eq!(
            effective.backup.enforced()[&path("labelSelector")],
            json!({"matchLabels": {"backup": "yes"}})
        );
        assert_eq!(
            effective.restore.enforced()[&path("restorePVs")],
            json!(true)
        );
        let bsl: Vec<String> = effective
            .bsl
            .enforced()
            .keys()
            .map(ToString::to_string)
            .collect();
        assert_eq!(bsl, ["config", "objectStorage", "provider"]);
    }

    #[test]
    fn storage_endpoint_errors_name_the_entry() {
        assert_eq!(
            error_of(
                None,
                Some("storageEndpoints:\n  allow: [\"ftp://x.example.com\"]\n")
            ),
            "policy.yaml storageEndpoints allow[0] (\"ftp://x.example.com\"): only http and https origins can be allowed"
        );
        let message = error_of(None, Some("storageEndpoints:\n  clusterNetwork: []\n"));
        assert!(
            message.contains("unknown field `clusterNetwork`"),
            "{message}"
        );
        // Without the section: no allow-list, the default rule.
        let policy =
            NacPolicy::from_sources(None, Some(&configmap("backupSyncPeriod: 2m\n"))).unwrap();
        assert!(policy.storage_endpoints().allow().is_empty());
        assert_eq!(
            policy.for_namespace(&BTreeMap::new()).storage_endpoints,
            StorageEndpoints::default()
        );
    }

    #[test]
    fn dpa_enforced_maps_are_compared_as_whole_values() {
        use crate::api::velero::BackupStorageLocationSpec;
        use crate::policy::bsl::validate_bsl_spec;
        let dpa = json!({"enforceBSLSpec": {
            "config": {"region": "eu-central-1", "s3Url": "https://s3.internal.example"}
        }});
        let policy = NacPolicy::from_sources(Some(&dpa), None)
            .unwrap()
            .for_namespace(&BTreeMap::new());
        let location = |config: Value| -> BackupStorageLocationSpec {
            let mut spec = json!({
                "provider": "aws",
                "objectStorage": {"bucket": "b"},
                "credential": {"name": "c", "key": "k"}
            });
            if !config.is_null() {
                spec["config"] = config;
            }
            serde_json::from_value(spec).unwrap()
        };
        // Exactly the enforced map, or no config at all (then it is filled in), is accepted.
        let exact =
            location(json!({"region": "eu-central-1", "s3Url": "https://s3.internal.example"}));
        assert_eq!(validate_bsl_spec("team-a", &exact, &policy, true), Ok(()));
        assert_eq!(
            validate_bsl_spec("team-a", &location(Value::Null), &policy, true),
            Ok(())
        );
        let filled = crate::policy::bsl::build_velero_bsl_spec(
            "team-a",
            &location(Value::Null),
            &policy,
            "copy",
            "k",
        )
        .unwrap();
        assert_eq!(filled.config.unwrap().len(), 2);
        // Matching keys plus one more, or a subset, is another map: refused (key by key, the
        // extra publicUrl would have slipped through).
        for config in [
            json!({"region": "eu-central-1", "s3Url": "https://s3.internal.example", "publicUrl": "https://elsewhere.example"}),
            json!({"region": "eu-central-1"}),
            json!({}),
        ] {
            let violations =
                validate_bsl_spec("team-a", &location(config.clone()), &policy, true).unwrap_err();
            assert_eq!(
                violations[0].field, "spec.backupStorageLocationSpec.config",
                "{config}"
            );
            assert!(
                violations[0]
                    .message
                    .starts_with("the administrator has restricted spec.backupStorageLocationSpec.config field value to"),
                "{}",
                violations[0].message
            );
        }
        // Whole objects are refused for what they hold.
        let message = error_of(
            Some(json!({"enforceBSLSpec": {"config": {"region": "r", "credentialsFile": "/x"}}})),
            None,
        );
        assert!(message.contains("Velero pod's own files"), "{message}");
        let message = error_of(
            Some(
                json!({"enforceBSLSpec": {"objectStorage": {"bucket": "b", "caCertRef": {"name": "n", "key": "k"}}}}),
            ),
            None,
        );
        assert!(message.contains("cannot place Secrets"), "{message}");
    }

    #[test]
    fn dpa_non_enforceable_fields_use_upstream_messages() {
        let cases = [
            (
                json!({"enforceBackupSpec": {"storageLocation": "default"}}),
                "DPA spec.nonAdmin.enforceBackupSpec.storageLocation is non-enforceable by admins",
            ),
            (
                json!({"enforceBackupSpec": {"includedNamespaces": ["a"]}}),
                "DPA spec.nonAdmin.enforceBackupSpec.includedNamespaces is non-enforceable by admins",
            ),
            (
                json!({"enforceBackupSpec": {"volumeSnapshotLocations": ["vsl"]}}),
                "DPA spec.nonAdmin.enforceBackupSpec.volumeSnapshotLocations is non-enforceable by admins",
            ),
            (
                json!({"enforceBackupSpec": {"includeClusterResources": true}}),
                "DPA spec.nonAdmin.enforceBackupSpec.includeClusterResources is non-enforceable by admins as true, must be set to false if enforced by admins",
            ),
            (
                json!({"enforceBackupSpec": {"includedClusterScopedResources": ["nodes"]}}),
                "DPA spec.nonAdmin.enforceBackupSpec.includedClusterScopedResources is non-enforceable by admins and must remain empty",
            ),
            (
                json!({"enforceRestoreSpec": {"namespaceMapping": {"a": "b"}}}),
                "DPA spec.nonAdmin.enforceRestoreSpec.namespaceMapping is non-enforceable by admins",
            ),
            (
                json!({"enforceRestoreSpec": {"scheduleName": "s"}}),
                "DPA spec.nonAdmin.enforceRestoreSpec.scheduleName is non-enforceable by admins",
            ),
        ];
        for (dpa, expected) in cases {
            assert_eq!(error_of(Some(dpa), None), expected);
        }
        // includeClusterResources: false may be enforced.
        let dpa = json!({"enforceBackupSpec": {"includeClusterResources": false}});
        assert!(NacPolicy::from_sources(Some(&dpa), None).is_ok());
        // The OADP operator checks `!= nil` here: an empty list or map is set, so refused too.
        for (dpa, expected) in [
            (
                json!({"enforceBackupSpec": {"excludedNamespaces": []}}),
                "DPA spec.nonAdmin.enforceBackupSpec.excludedNamespaces is non-enforceable by admins",
            ),
            (
                json!({"enforceBackupSpec": {"volumeSnapshotLocations": []}}),
                "DPA spec.nonAdmin.enforceBackupSpec.volumeSnapshotLocations is non-enforceable by admins",
            ),
            (
                json!({"enforceRestoreSpec": {"namespaceMapping": {}}}),
                "DPA spec.nonAdmin.enforceRestoreSpec.namespaceMapping is non-enforceable by admins",
            ),
        ] {
            assert_eq!(error_of(Some(dpa), None), expected);
        }
        // ... but not `len(...) > 0`: an empty includedClusterScopedResources may be enforced.
        let dpa = json!({"enforceBackupSpec": {"includedClusterScopedResources": []}});
        assert!(NacPolicy::from_sources(Some(&dpa), None).is_ok());
    }

    #[test]
    fn dpa_empty_lists_and_maps_are_enforced_go_zero_values_are_not() {
        let dpa = json!({
            "enforceBackupSpec": {
                "excludedResources": [],
                "orderedResources": {},
                "hooks": {},
                "metadata": {"labels": null},
                "uploaderConfig": {},
                "datamover": "",
                "ttl": "0s"
            },
            "enforceRestoreSpec": {"includedResources": [], "hooks": {"resources": []}},
            "enforceBSLSpec": {"default": false, "config": {}}
        });
        let effective = NacPolicy::from_sources(Some(&dpa), None)
            .unwrap()
            .for_namespace(&BTreeMap::new());
        let keys = |rules: &SpecRules| -> Vec<String> {
            rules.enforced().keys().map(ToString::to_string).collect()
        };
        assert_eq!(
            keys(&effective.backup),
            ["excludedResources", "orderedResources", "uploaderConfig"]
        );
        assert_eq!(
            effective.backup.enforced()[&path("orderedResources")],
            json!({})
        );
        // `hooks: {resources: []}` holds a non-nil slice: not zero.
        assert_eq!(keys(&effective.restore), ["hooks", "includedResources"]);
        // A storage location's `default` is a plain bool: false is its zero value.
        assert_eq!(keys(&effective.bsl), ["config"]);
    }

    /// Upstream enforces a DPA field when `!enforcedField.IsZero()`, on the field's Go type:
    /// `ttl` and `hooks` are held by value, so `0s` and `{}` enforce nothing; a storage
    /// location's `backupSyncPeriod` is a `*metav1.Duration` (OADP's
    /// `EnforceBackupStorageLocationSpec`), so `0s` is a non-nil pointer and is enforced (it
    /// turns the location's sync off, as Velero documents for 0).
    #[test]
    fn dpa_zero_durations_are_enforced_only_behind_pointers() {
        let dpa = json!({
            "enforceBackupSpec": {"ttl": "0s", "hooks": {}, "csiSnapshotTimeout": "0m"},
            "enforceRestoreSpec": {"itemOperationTimeout": "0s", "hooks": {"resources": null}},
            "enforceBSLSpec": {"backupSyncPeriod": "0s", "validationFrequency": "0s"}
        });
        let effective = NacPolicy::from_sources(Some(&dpa), None)
            .unwrap()
            .for_namespace(&BTreeMap::new());
        assert!(effective.backup.enforced().is_empty());
        assert!(effective.restore.enforced().is_empty());
        let bsl: Vec<String> = effective
            .bsl
            .enforced()
            .keys()
            .map(ToString::to_string)
            .collect();
        assert_eq!(bsl, ["backupSyncPeriod", "validationFrequency"]);
    }

    #[test]
    fn dpa_period_rules() {
        assert_eq!(
            error_of(Some(json!({"backupSyncPeriod": "-5m"})), None),
            "DPA spec.nonAdmin.backupSyncPeriod can not be negative"
        );
        assert_eq!(
            error_of(Some(json!({"garbageCollectionPeriod": "-3h"})), None),
            "DPA spec.nonAdmin.garbageCollectionPeriod can not be negative"
        );
        assert_eq!(
            error_of(Some(json!({"garbageCollectionPeriod": "1m"})), None),
            "DPA spec.nonAdmin.backupSyncPeriod (2m0s) can not be greater or equal spec.nonAdmin.garbageCollectionPeriod (1m0s)"
        );
        assert_eq!(
            error_of(
                Some(json!({
                    "backupSyncPeriod": "3m",
                    "enforceBSLSpec": {"backupSyncPeriod": "3m"}
                })),
                None
            ),
            "DPA spec.nonAdmin.enforceBSLSpec.backupSyncPeriod (3m0s) can not be greater or equal DPA spec.nonAdmin.backupSyncPeriod (3m0s)"
        );
        // Zero disables: no ordering is required then (upstream refuses this).
        let dpa = json!({"garbageCollectionPeriod": "0s"});
        let policy = NacPolicy::from_sources(Some(&dpa), None).unwrap();
        assert!(policy.settings().garbage_collection_period.is_zero());
        let dpa = json!({"backupSyncPeriod": "0", "enforceBSLSpec": {"backupSyncPeriod": "10m"}});
        assert!(NacPolicy::from_sources(Some(&dpa), None).is_ok());
    }

    #[test]
    fn dpa_type_errors_name_the_field() {
        assert_eq!(
            error_of(Some(json!({"requireApprovalForBSL": "yes"})), None),
            "DPA spec.nonAdmin.requireApprovalForBSL must be true or false"
        );
        let message = error_of(Some(json!({"enforceBackupSpec": {"ttl": "forever"}})), None);
        assert!(
            message.starts_with("DPA spec.nonAdmin.enforceBackupSpec.ttl must be a duration"),
            "{message}"
        );
        let message = error_of(
            Some(json!({"enforceBackupSpec": {"snapshotVolumes": "no"}})),
            None,
        );
        assert!(
            message.starts_with(
                "DPA spec.nonAdmin.enforceBackupSpec.snapshotVolumes has the wrong type"
            ),
            "{message}"
        );
    }

    #[test]
    fn configmap_can_enforce_false_and_empty_values() {
        let yaml = r#"
rules:
  - backup:
      enforce:
        snapshotVolumes: false
        excludedResources: []
        hooks: {}
"#;
        let policy = NacPolicy::from_sources(None, Some(&configmap(yaml))).unwrap();
        let effective = policy.for_namespace(&BTreeMap::new());
        assert_eq!(effective.backup.enforced().len(), 3);
        assert_eq!(
            effective.backup.enforced()[&path("excludedResources")],
            json!([])
        );
    }

    #[test]
    fn configmap_rules_follow_dpa_rules() {
        let dpa = json!({"enforceBackupSpec": {"ttl": "48h", "snapshotVolumes": true}});
        let yaml = "rules:\n  - backup:\n      enforce:\n        ttl: 24h\n";
        let policy = NacPolicy::from_sources(Some(&dpa), Some(&configmap(yaml))).unwrap();
        let effective = policy.for_namespace(&BTreeMap::new());
        assert_eq!(effective.backup.enforced()[&path("ttl")], json!("24h"));
        assert_eq!(
            effective.backup.enforced()[&path("snapshotVolumes")],
            json!(true)
        );
    }

    #[test]
    fn configmap_errors_name_the_key() {
        let message = error_of(
            None,
            Some("rules:\n  - backup:\n      enforced:\n        ttl: 1h\n"),
        );
        assert!(
            message.starts_with("ConfigMap key policy.yaml is not a valid policy document: rules[0].backup: unknown field `enforced`"),
            "{message}"
        );
        assert_eq!(
            error_of(
                None,
                Some("rules:\n  - name: base\n    backup:\n      enforce:\n        tll: 1h\n")
            ),
            "policy.yaml rules[0] (base): backup.enforce.tll names an unknown field \"tll\" of spec.backupSpec (known fields: metadata, includedNamespaces, excludedNamespaces, includedResources, excludedResources, includedClusterScopedResources, excludedClusterScopedResources, includedNamespaceScopedResources, excludedNamespaceScopedResources, labelSelector, orLabelSelectors, snapshotVolumes, ttl, volumeGroupSnapshotLabelKey, includeClusterResources, hooks, storageLocation, volumeSnapshotLocations, defaultVolumesToRestic, defaultVolumesToFsBackup, orderedResources, csiSnapshotTimeout, itemOperationTimeout, resourcePolicy, snapshotMoveData, datamover, uploaderConfig)"
        );
        let message = error_of(
            None,
            Some(
                "rules:\n  - backup:\n      enforce:\n        uploaderConfig.parallelFileUpload: 4\n",
            ),
        );
        assert!(
            message.starts_with("policy.yaml rules[0]: backup.enforce.uploaderConfig.parallelFileUpload names an unknown field \"parallelFileUpload\" of spec.backupSpec.uploaderConfig"),
            "{message}"
        );
        let message = error_of(
            None,
            Some("rules:\n  - backup:\n      maximum:\n        ttl: 30\n"),
        );
        assert_eq!(
            message,
            "policy.yaml rules[0]: backup.maximum.ttl must be a duration such as \"720h\" (got 30)"
        );
        let message = error_of(
            None,
            Some("rules:\n  - backup:\n      maximum:\n        snapshotVolumes: 3\n"),
        );
        assert!(message.contains("has the wrong type"), "{message}");
        let message = error_of(
            None,
            Some("rules:\n  - backup:\n      allowed:\n        snapshotMoveData: []\n"),
        );
        assert!(
            message.contains("is empty, so nothing would be accepted"),
            "{message}"
        );
        let message = error_of(
            None,
            Some("rules:\n  - restore:\n      enforce:\n        namespaceMapping: {a: b}\n"),
        );
        assert_eq!(
            message,
            "policy.yaml rules[0]: restore.enforce.namespaceMapping is non-enforceable by admins"
        );
        let message = error_of(
            None,
            Some(
                "rules:\n  - bsl:\n      enforce:\n        config.credentialsFile: /credentials/cloud\n",
            ),
        );
        assert!(message.contains("Velero pod's own files"), "{message}");
        let message = error_of(
            None,
            Some(
                "rules:\n  - namespaceSelector:\n      matchExpressions:\n        - {key: a, operator: Equals, values: [b]}\n",
            ),
        );
        assert_eq!(
            message,
            "policy.yaml rules[0]: namespaceSelector matchExpressions[0]: unknown operator \"Equals\" (use In, NotIn, Exists or DoesNotExist)"
        );
    }

    #[test]
    fn configmap_settings_conflicts() {
        assert_eq!(
            error_of(None, Some("backupSyncPeriod: 30s\n")),
            "policy.yaml veleroBackupSyncPeriod (1m0s) can not be greater or equal policy.yaml backupSyncPeriod (30s): Velero would sync backups after NAC looks for them"
        );
        assert_eq!(
            error_of(None, Some("garbageCollectionPeriod: 1m\n")),
            "DPA spec.nonAdmin.backupSyncPeriod (2m0s) can not be greater or equal policy.yaml garbageCollectionPeriod (1m0s)"
        );
        assert_eq!(
            error_of(
                None,
                Some("rules:\n  - bsl:\n      enforce:\n        backupSyncPeriod: 5m\n")
            ),
            "policy.yaml rules[0]: bsl.enforce.backupSyncPeriod (5m0s) can not be greater or equal DPA spec.nonAdmin.backupSyncPeriod (2m0s)"
        );
        assert_eq!(
            error_of(None, Some("backupSyncPeriod: -1m\n")),
            "policy.yaml backupSyncPeriod can not be negative"
        );
    }

    #[test]
    fn rule_values_must_respect_the_rules_own_limits() {
        let yaml = "rules:\n  - backup:\n      enforce:\n        ttl: 2000h\n      maximum:\n        ttl: 720h\n";
        assert_eq!(
            error_of(None, Some(yaml)),
            "policy.yaml rules[0]: backup.enforce.ttl contradicts the rule's own limits: the administrator has limited spec.backupSpec.ttl to at most 720h0m0s, got 2000h"
        );
        let yaml = "rules:\n  - backup:\n      defaults:\n        snapshotMoveData: false\n      allowed:\n        snapshotMoveData: [true]\n";
        assert!(
            error_of(None, Some(yaml)).contains("backup.defaults.snapshotMoveData contradicts")
        );
    }

    #[test]
    fn configmap_key_handling() {
        let near_miss = BTreeMap::from([("policy.yml".to_owned(), "rules: []".to_owned())]);
        assert_eq!(
            NacPolicy::from_sources(None, Some(&near_miss))
                .unwrap_err()
                .to_string(),
            "ConfigMap key policy.yml is not read by NAC; the policy belongs under policy.yaml"
        );
        let unrelated = BTreeMap::from([("other".to_owned(), "x".to_owned())]);
        assert!(NacPolicy::from_sources(None, Some(&unrelated)).is_ok());
        assert!(NacPolicy::from_sources(None, Some(&configmap("  \n"))).is_ok());
    }

    #[test]
    fn quoted_keys_and_list_allow_lists() {
        let yaml = r#"
rules:
  - backup:
      enforce:
        labelSelector.matchLabels["app.kubernetes.io/part-of"]: shop
      allowed:
        includedResources: [pods, deployments.apps]
"#;
        let policy = NacPolicy::from_sources(None, Some(&configmap(yaml))).unwrap();
        let effective = policy.for_namespace(&BTreeMap::new());
        let key =
            FieldPath::from_segments(["labelSelector", "matchLabels", "app.kubernetes.io/part-of"]);
        assert_eq!(effective.backup.enforced()[&key], json!("shop"));
        assert_eq!(effective.backup.allowed().len(), 1);
    }

    #[test]
    fn selector_rules_apply_only_where_they_match() {
        let yaml = r#"
rules:
  - namespaceSelector:
      matchExpressions:
        - {key: kubernetes.io/metadata.name, operator: In, values: [team-a]}
    restore:
      enforce:
        existingResourcePolicy: none
"#;
        let policy = NacPolicy::from_sources(None, Some(&configmap(yaml))).unwrap();
        let team_a = policy.for_namespace(&labels(&[("kubernetes.io/metadata.name", "team-a")]));
        let team_b = policy.for_namespace(&labels(&[("kubernetes.io/metadata.name", "team-b")]));
        assert_eq!(team_a.restore.enforced().len(), 1);
        assert!(team_b.restore.is_empty());
        assert_eq!(team_a.rules(SpecKind::Restore), &team_a.restore);
    }
}
