//! The administrator's rules for one kind of spec (backup, restore or storage location), and
//! how they are checked against and applied to a tenant's spec.
//!
//! Four kinds of rule, each keyed by a [`FieldPath`] relative to the tenant spec:
//! - **enforced** values: a tenant value that is set and differs is refused with upstream's
//!   message `the administrator has restricted spec.backupSpec.X field value to V`; an unset
//!   field gets the value (upstream `ValidateBackupSpec` + the fill loop of the NAB/NAR
//!   controllers);
//! - **defaults**: fill an unset field, the tenant may choose another value;
//! - **maxima** (durations or numbers): a larger value is refused; an unset field gets the
//!   maximum, because "unset" means a server-side default NAC cannot see (Velero's default
//!   TTL may be longer than the administrator allows);
//! - **allow-lists**: the value (each element, for lists) must be listed; an unset field is
//!   accepted only when the list contains `null`.
//!
//! "Unset" is what upstream's `reflect.Value.IsZero` calls zero once Go has decoded the JSON
//! into Velero's types ([`is_go_zero`]): absent, `null`, `""`, `0`, a zero duration held by
//! value (`ttl: 0s`), and a struct held by value whose fields are all unset (`hooks: {}`,
//! `metadata: {}`). An empty list or map is a non-nil slice or map in Go, so it is set
//! (`hooks: {resources: []}`), and so is `false` (Velero's booleans are pointers). The same
//! notion decides which DPA values are enforced, which tenant values are compared with an
//! enforced one, and which fields get an enforced, default or maximum value.
//! Values are compared as JSON, durations by their length (`720h` equals `720h0m0s`) and
//! numbers by value.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde_json::Value;

use crate::api::common::GoDuration;
use crate::policy::field_path::FieldPath;
use crate::policy::{PolicyViolation, ViolationReason};

/// Field names whose values are Go durations, compared by length.
const DURATION_FIELDS: &[&str] = &[
    "ttl",
    "csiSnapshotTimeout",
    "itemOperationTimeout",
    "backupSyncPeriod",
    "validationFrequency",
    "timeout",
    "execTimeout",
    "waitTimeout",
];

/// Whether the field at `path` holds a Go duration.
pub fn is_duration_field(path: &FieldPath) -> bool {
    DURATION_FIELDS.contains(&path.leaf())
}

/// An upper bound.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Maximum {
    /// For duration fields (`ttl <= 720h`).
    Duration(Duration),
    /// For numeric fields (`uploaderConfig.parallelFilesUpload <= 8`).
    Number(f64),
}

impl Maximum {
    /// The value written into a spec when the field is unset.
    pub fn to_json(self) -> Value {
        match self {
            Self::Duration(duration) => Value::String(GoDuration::from_std(duration).0),
            Self::Number(number) => serde_json::Number::from_f64(number)
                .map(|n| {
                    // Keep integers integral so typed fields (i64) still deserialize.
                    if number.fract() == 0.0 && number.abs() < 9.0e15 {
                        Value::from(number as i64)
                    } else {
                        Value::Number(n)
                    }
                })
                .unwrap_or(Value::Null),
        }
    }
}

impl fmt::Display for Maximum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Duration(duration) => write!(f, "{}", GoDuration::from_std(*duration)),
            Self::Number(number) => write!(f, "{number}"),
        }
    }
}

/// The administrator's rules for one spec kind.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SpecRules {
    enforced: BTreeMap<FieldPath, Value>,
    defaults: BTreeMap<FieldPath, Value>,
    maxima: BTreeMap<FieldPath, Maximum>,
    allowed: BTreeMap<FieldPath, Vec<Value>>,
}

impl SpecRules {
    /// Enforced values (the gateway can show them; upstream never does).
    pub fn enforced(&self) -> &BTreeMap<FieldPath, Value> {
        &self.enforced
    }

    /// Default values.
    pub fn defaults(&self) -> &BTreeMap<FieldPath, Value> {
        &self.defaults
    }

    /// Maxima.
    pub fn maxima(&self) -> &BTreeMap<FieldPath, Maximum> {
        &self.maxima
    }

    /// Allow-lists.
    pub fn allowed(&self) -> &BTreeMap<FieldPath, Vec<Value>> {
        &self.allowed
    }

    /// True when there is no rule at all.
    pub fn is_empty(&self) -> bool {
        self.enforced.is_empty()
            && self.defaults.is_empty()
            && self.maxima.is_empty()
            && self.allowed.is_empty()
    }

    /// Enforces `value` at `path` (replacing an earlier rule for the same path).
    pub fn enforce(&mut self, path: FieldPath, value: Value) {
        self.enforced.insert(path, value);
    }

    /// Sets the default of `path`.
    pub fn set_default(&mut self, path: FieldPath, value: Value) {
        self.defaults.insert(path, value);
    }

    /// Sets the maximum of `path`.
    pub fn set_maximum(&mut self, path: FieldPath, maximum: Maximum) {
        self.maxima.insert(path, maximum);
    }

    /// Sets the allow-list of `path`.
    pub fn set_allowed(&mut self, path: FieldPath, values: Vec<Value>) {
        self.allowed.insert(path, values);
    }

    /// `other`'s rules on top of these: for each path, `other`'s rule replaces this one's.
    pub fn merge(&mut self, other: &Self) {
        self.enforced.extend(other.enforced.clone());
        self.defaults.extend(other.defaults.clone());
        self.maxima.extend(other.maxima.clone());
        self.allowed.extend(other.allowed.clone());
    }

    /// Tenant values that differ from enforced ones. `spec_prefix` is the tenant spec's own
    /// path (`spec.backupSpec`), used in fields and messages.
    pub fn enforced_differences(&self, spec: &Value, spec_prefix: &str) -> Vec<PolicyViolation> {
        self.enforced
            .iter()
            .filter_map(|(path, enforced)| {
                let current = path.get(spec).filter(|value| !is_go_zero(path, value))?;
                if values_equal(path, current, enforced) {
                    return None;
                }
                let field = format!("{spec_prefix}.{path}");
                Some(PolicyViolation::new(
                    ViolationReason::Enforced,
                    &field,
                    format!(
                        "the administrator has restricted {field} field value to {}",
                        display_value(enforced)
                    ),
                ))
            })
            .collect()
    }

    /// Fills unset fields ([`is_go_zero`]): enforced values first, then defaults, then maxima.
    pub fn fill(&self, spec: &mut Value) {
        let fills = self
            .enforced
            .iter()
            .map(|(path, value)| (path, value.clone()))
            .chain(
                self.defaults
                    .iter()
                    .map(|(path, value)| (path, value.clone())),
            )
            .chain(
                self.maxima
                    .iter()
                    .map(|(path, maximum)| (path, maximum.to_json())),
            );
        for (path, value) in fills {
            if path
                .get(spec)
                .is_none_or(|current| is_go_zero(path, current))
            {
                path.set(spec, value);
            }
        }
    }

    /// Maxima and allow-lists checked against a (filled) spec.
    pub fn limit_violations(&self, spec: &Value, spec_prefix: &str) -> Vec<PolicyViolation> {
        let mut violations = Vec::new();
        for (path, maximum) in &self.maxima {
            let Some(current) = path.get(spec).filter(|value| !is_go_zero(path, value)) else {
                continue;
            };
            let field = format!("{spec_prefix}.{path}");
            match exceeds(current, *maximum) {
                Some(false) => {}
                Some(true) => violations.push(PolicyViolation::new(
                    ViolationReason::AboveMaximum,
                    &field,
                    format!(
                        "the administrator has limited {field} to at most {maximum}, got {}",
                        display_value(current)
                    ),
                )),
                None => violations.push(PolicyViolation::new(
                    ViolationReason::Invalid,
                    &field,
                    format!(
                        "{field} value {} is not a valid {}",
                        display_value(current),
                        match maximum {
                            Maximum::Duration(_) => "duration",
                            Maximum::Number(_) => "number",
                        }
                    ),
                )),
            }
        }
        for (path, allowed) in &self.allowed {
            let field = format!("{spec_prefix}.{path}");
            let listing = allowed
                .iter()
                .map(display_value)
                .collect::<Vec<_>>()
                .join(", ");
            let current = path.get(spec).filter(|value| !is_go_zero(path, value));
            let refused: Vec<&Value> = match current {
                None if allowed.iter().any(Value::is_null) => Vec::new(),
                None => {
                    violations.push(PolicyViolation::new(
                        ViolationReason::Missing,
                        &field,
                        format!("{field} is not set; the administrator requires one of: {listing}"),
                    ));
                    continue;
                }
                Some(Value::Array(items)) => items
                    .iter()
                    .filter(|item| !allowed.iter().any(|ok| values_equal(path, item, ok)))
                    .collect(),
                Some(value) => {
                    if allowed.iter().any(|ok| values_equal(path, value, ok)) {
                        Vec::new()
                    } else {
                        vec![value]
                    }
                }
            };
            if !refused.is_empty() {
                let got = refused
                    .iter()
                    .map(|value| display_value(value))
                    .collect::<Vec<_>>()
                    .join(", ");
                violations.push(PolicyViolation::new(
                    ViolationReason::NotAllowed,
                    &field,
                    format!(
                        "the administrator has restricted {field} to one of: {listing}; got {got}"
                    ),
                ));
            }
        }
        violations
    }
}

/// Absent-equivalent values whatever the field: `null` and the empty string. See
/// [`is_go_zero`] for what a field's value counts as when a rule applies to it.
pub fn is_unset(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(text) => text.is_empty(),
        _ => false,
    }
}

/// Top-level fields whose Velero Go type is a struct held by value (not a pointer or a map):
/// `BackupSpec.Metadata`, `BackupSpec.Hooks` and `RestoreSpec.Hooks`.
const VALUE_STRUCT_FIELDS: &[&str] = &["metadata", "hooks"];

/// Duration fields Velero declares as `*metav1.Duration` (`BackupStorageLocationSpec`): a
/// zero there is a value (`backupSyncPeriod: 0s` turns the location's sync off). Every other
/// duration (`ttl`, `csiSnapshotTimeout`, `itemOperationTimeout`, hook timeouts) is held by
/// value, so zero is unset.
const POINTER_DURATION_FIELDS: &[&str] = &["backupSyncPeriod", "validationFrequency"];

/// Whether `value` at `path`, decoded into the field's Velero Go type, is that type's zero
/// value (`reflect.Value.IsZero`): what upstream neither enforces (`enforce*Spec` in the DPA),
/// nor compares with an enforced value (`ValidateBackupSpec`/`ValidateRestoreSpec` in
/// `internal/common/function/function.go`), and overwrites with the enforced value (the fill
/// loops of the NAB and NAR controllers; `getEnforcedBSLSpec` of the NABSL controller).
///
/// As Go decodes JSON: `null`, `""`, `0` and a zero duration held by value are zero; `[]` is a
/// non-nil slice and `{}` a non-nil map or pointer, so both are set (`excludedResources: []`,
/// `orderedResources: {}`, `uploaderConfig: {}`); `false` is set (Velero's booleans are
/// pointers) except the plain `bool` `default` of a storage location; a struct held by value
/// (`metadata`, `hooks`) is zero when each of its fields is, and its fields are all slices or
/// maps, so only `null`s (`hooks: {}` is zero, `hooks: {resources: []}` is not).
///
/// The field name decides: the backup, restore and storage-location specs never use one name
/// for fields of different Go types.
pub fn is_go_zero(path: &FieldPath, value: &Value) -> bool {
    let top_level = path.segments().len() == 1;
    match value {
        Value::Null => true,
        Value::String(text) if text.is_empty() => true,
        Value::Number(number) => number.as_f64() == Some(0.0),
        Value::Bool(false) => top_level && path.top_level() == "default",
        Value::Object(fields) if top_level && VALUE_STRUCT_FIELDS.contains(&path.top_level()) => {
            fields.values().all(Value::is_null)
        }
        _ => {
            is_duration_field(path)
                && !POINTER_DURATION_FIELDS.contains(&path.leaf())
                && as_duration(value) == Some(Duration::ZERO)
        }
    }
}

/// JSON equality, with durations compared by length and numbers by value.
pub fn values_equal(path: &FieldPath, left: &Value, right: &Value) -> bool {
    if is_duration_field(path)
        && let (Some(left), Some(right)) = (as_duration(left), as_duration(right))
    {
        return left == right;
    }
    json_equal(left, right)
}

fn json_equal(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Number(left), Value::Number(right)) => left.as_f64() == right.as_f64(),
        (Value::Array(left), Value::Array(right)) => {
            left.len() == right.len() && left.iter().zip(right).all(|(l, r)| json_equal(l, r))
        }
        (Value::Object(left), Value::Object(right)) => {
            left.len() == right.len()
                && left
                    .iter()
                    .all(|(key, l)| right.get(key).is_some_and(|r| json_equal(l, r)))
        }
        _ => left == right,
    }
}

/// A duration value's length.
pub fn as_duration(value: &Value) -> Option<Duration> {
    GoDuration::new(value.as_str()?).parse().ok()
}

/// Whether `value` is above `maximum`; `None` when it cannot be compared.
fn exceeds(value: &Value, maximum: Maximum) -> Option<bool> {
    match maximum {
        Maximum::Duration(limit) => as_duration(value).map(|duration| duration > limit),
        Maximum::Number(limit) => value.as_f64().map(|number| number > limit),
    }
}

/// How a value is shown in messages: strings bare (as upstream's `%v`), others as JSON.
pub fn display_value(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn path(text: &str) -> FieldPath {
        FieldPath::parse(text).unwrap()
    }

    fn rules() -> SpecRules {
        let mut rules = SpecRules::default();
        rules.enforce(path("snapshotVolumes"), json!(false));
        rules.enforce(path("uploaderConfig.parallelFilesUpload"), json!(4));
        rules.enforce(path("ttl"), json!("720h"));
        rules.set_default(path("defaultVolumesToFsBackup"), json!(true));
        rules.set_maximum(
            path("itemOperationTimeout"),
            Maximum::Duration(Duration::from_secs(3600)),
        );
        rules.set_allowed(path("snapshotMoveData"), vec![json!(true), Value::Null]);
        rules
    }

    #[test]
    fn enforced_difference_message_is_upstreams() {
        let spec = json!({"snapshotVolumes": true, "ttl": "720h0m0s"});
        let violations = rules().enforced_differences(&spec, "spec.backupSpec");
        assert_eq!(violations.len(), 1);
        assert_eq!(
            violations[0].message,
            "the administrator has restricted spec.backupSpec.snapshotVolumes field value to false"
        );
        assert_eq!(violations[0].field, "spec.backupSpec.snapshotVolumes");
        assert_eq!(violations[0].reason, ViolationReason::Enforced);
    }

    #[test]
    fn durations_compare_by_length_and_numbers_by_value() {
        let spec = json!({"ttl": "43200m", "uploaderConfig": {"parallelFilesUpload": 4.0}});
        assert!(
            rules()
                .enforced_differences(&spec, "spec.backupSpec")
                .is_empty()
        );
        let spec = json!({"ttl": "719h"});
        let violations = rules().enforced_differences(&spec, "spec.backupSpec");
        assert_eq!(
            violations[0].to_string(),
            "the administrator has restricted spec.backupSpec.ttl field value to 720h"
        );
    }

    #[test]
    fn unset_values_are_not_differences_and_get_filled() {
        let mut spec =
            json!({"ttl": "", "uploaderConfig": null, "defaultVolumesToFsBackup": false});
        assert!(
            rules()
                .enforced_differences(&spec, "spec.backupSpec")
                .is_empty()
        );
        rules().fill(&mut spec);
        assert_eq!(
            spec,
            json!({
                "ttl": "720h",
                "uploaderConfig": {"parallelFilesUpload": 4},
                "snapshotVolumes": false,
                "defaultVolumesToFsBackup": false,
                "itemOperationTimeout": "1h0m0s",
            })
        );
    }

    /// What upstream's `reflect.Value.IsZero` says of each value once Go has decoded it into
    /// Velero's types (`ValidateBackupSpec`'s `!currentField.IsZero()` and the fill loops'
    /// `currentField.IsZero()` in `migtools/oadp-non-admin`).
    #[test]
    fn go_zero_values_follow_the_velero_go_types() {
        let zero = [
            ("ttl", json!(null)),
            ("ttl", json!("")),
            ("ttl", json!("0s")),
            ("ttl", json!("0h0m0s")),
            ("csiSnapshotTimeout", json!("0")),
            ("hooks", json!({})),
            ("hooks", json!({"resources": null})),
            ("metadata", json!({})),
            ("datamover", json!("")),
            ("uploaderConfig.parallelFilesUpload", json!(0)),
            // A storage location's `default` is a plain bool.
            ("default", json!(false)),
        ];
        for (field, value) in zero {
            assert!(is_go_zero(&path(field), &value), "{field}: {value}");
        }
        let set = [
            ("ttl", json!("1s")),
            ("hooks", json!({"resources": []})),
            ("metadata", json!({"labels": {}})),
            ("excludedResources", json!([])),
            ("orderedResources", json!({})),
            ("uploaderConfig", json!({})),
            ("labelSelector", json!({})),
            ("snapshotVolumes", json!(false)),
            // `*metav1.Duration` in the storage location: a zero period turns sync off.
            ("backupSyncPeriod", json!("0s")),
            ("validationFrequency", json!("0s")),
            // Nested, `hooks` is not the value struct of the spec.
            ("resourcePolicy.hooks", json!({})),
        ];
        for (field, value) in set {
            assert!(!is_go_zero(&path(field), &value), "{field}: {value}");
        }
    }

    #[test]
    fn zero_tenant_values_are_not_differences_and_get_filled() {
        let mut rules = SpecRules::default();
        rules.enforce(path("ttl"), json!("12h"));
        rules.enforce(path("hooks"), json!({"resources": [{"name": "test"}]}));
        let mut spec = json!({"ttl": "0s", "hooks": {}});
        assert!(
            rules
                .enforced_differences(&spec, "spec.backupSpec")
                .is_empty()
        );
        rules.fill(&mut spec);
        assert_eq!(
            spec,
            json!({"ttl": "12h", "hooks": {"resources": [{"name": "test"}]}})
        );
        // An empty list is a value: compared, and not overwritten.
        let mut spec = json!({"hooks": {"resources": []}});
        assert_eq!(
            rules.enforced_differences(&spec, "spec.backupSpec")[0].field,
            "spec.backupSpec.hooks"
        );
        rules.fill(&mut spec);
        assert_eq!(spec["hooks"], json!({"resources": []}));
    }

    #[test]
    fn a_zero_duration_is_unset_for_maxima_and_allow_lists() {
        let mut rules = SpecRules::default();
        rules.set_maximum(path("ttl"), Maximum::Duration(Duration::from_secs(3600)));
        rules.set_allowed(path("csiSnapshotTimeout"), vec![json!("10m")]);
        let mut spec = json!({"ttl": "0s", "csiSnapshotTimeout": "0s"});
        rules.fill(&mut spec);
        assert_eq!(spec["ttl"], json!("1h0m0s"));
        let violations = rules.limit_violations(&spec, "spec.backupSpec");
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].reason, ViolationReason::Missing);
    }

    #[test]
    fn maxima_and_allow_lists() {
        let spec = json!({"itemOperationTimeout": "2h", "snapshotMoveData": false});
        let violations = rules().limit_violations(&spec, "spec.backupSpec");
        let messages: Vec<String> = violations.iter().map(ToString::to_string).collect();
        assert_eq!(
            messages,
            [
                "the administrator has limited spec.backupSpec.itemOperationTimeout to at most 1h0m0s, got 2h",
                "the administrator has restricted spec.backupSpec.snapshotMoveData to one of: true, null; got false",
            ]
        );
        let spec = json!({"itemOperationTimeout": "60m"});
        assert!(
            rules()
                .limit_violations(&spec, "spec.backupSpec")
                .is_empty()
        );
        let spec = json!({"itemOperationTimeout": "soon"});
        assert_eq!(
            rules().limit_violations(&spec, "spec.backupSpec")[0].message,
            "spec.backupSpec.itemOperationTimeout value soon is not a valid duration"
        );
    }

    #[test]
    fn allow_list_without_null_requires_a_value() {
        let mut rules = SpecRules::default();
        rules.set_allowed(path("config.s3Url"), vec![json!("https://s3.example.com")]);
        let violations =
            rules.limit_violations(&json!({"config": {}}), "spec.backupStorageLocationSpec");
        assert_eq!(violations[0].reason, ViolationReason::Missing);
        assert_eq!(
            violations[0].message,
            "spec.backupStorageLocationSpec.config.s3Url is not set; the administrator requires one of: https://s3.example.com"
        );
    }

    #[test]
    fn allow_list_checks_each_list_element() {
        let mut rules = SpecRules::default();
        rules.set_allowed(
            path("includedResources"),
            vec![json!("pods"), json!("deployments.apps")],
        );
        let spec = json!({"includedResources": ["pods", "secrets", "configmaps"]});
        let violations = rules.limit_violations(&spec, "spec.restoreSpec");
        assert_eq!(
            violations[0].message,
            "the administrator has restricted spec.restoreSpec.includedResources to one of: pods, deployments.apps; got secrets, configmaps"
        );
        let spec = json!({"includedResources": ["pods"]});
        assert!(rules.limit_violations(&spec, "spec.restoreSpec").is_empty());
    }

    #[test]
    fn numeric_maximum_fills_integers() {
        let mut rules = SpecRules::default();
        rules.set_maximum(
            path("uploaderConfig.parallelFilesUpload"),
            Maximum::Number(8.0),
        );
        let mut spec = json!({});
        rules.fill(&mut spec);
        assert_eq!(spec, json!({"uploaderConfig": {"parallelFilesUpload": 8}}));
        let violations = rules.limit_violations(
            &json!({"uploaderConfig": {"parallelFilesUpload": 16}}),
            "spec.backupSpec",
        );
        assert_eq!(
            violations[0].message,
            "the administrator has limited spec.backupSpec.uploaderConfig.parallelFilesUpload to at most 8, got 16"
        );
    }

    #[test]
    fn merge_lets_later_rules_replace_earlier_ones() {
        let mut base = rules();
        let mut exception = SpecRules::default();
        exception.set_maximum(
            path("itemOperationTimeout"),
            Maximum::Duration(Duration::from_secs(7200)),
        );
        base.merge(&exception);
        assert_eq!(
            base.maxima()[&path("itemOperationTimeout")],
            Maximum::Duration(Duration::from_secs(7200))
        );
        assert_eq!(base.enforced().len(), 3, "other rules kept");
        assert!(!base.is_empty());
        assert!(SpecRules::default().is_empty());
    }

    #[test]
    fn display_of_values() {
        assert_eq!(display_value(&json!("720h")), "720h");
        assert_eq!(display_value(&json!(true)), "true");
        assert_eq!(display_value(&json!(["a", "b"])), "[\"a\",\"b\"]");
        assert_eq!(Maximum::Number(2.5).to_string(), "2.5");
        assert_eq!(
            Maximum::Duration(Duration::from_secs(90)).to_string(),
            "1m30s"
        );
    }
}
