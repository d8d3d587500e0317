//! NonAdminBackup: validating `spec.backupSpec` and building the Velero `BackupSpec` from it.
//!
//! Restrictions follow upstream's `ValidateBackupSpec` (`migtools/oadp-non-admin`,
//! `internal/common/function/function.go`) and its messages (`NonAdminBackup %s is
//! restricted`), including its Go notion of "set": an empty list or map the tenant wrote
//! (`excludedNamespaces: []`) is a non-nil slice or map after JSON decoding, so it is set;
//! only an absent field or `null` is unset. Our additions: every violation is reported (not only the first); a
//! filter naming a kind NAC always excludes is refused up front (Velero would fail the backup
//! for listing it in both includes and excludes); mixing Velero's old- and new-style resource
//! filters is refused with a clear message instead of a Velero `FailedValidation`; and
//! `metadata.labels` may not carry NAC's or Velero's own label keys (a forged
//! `openshift.io/oadp-nab-origin-nacuuid` on a scheduled backup would make another tenant's
//! NonAdminBackup find it).
//!
//! The Velero spec keeps every field the tenant set (unknown fields too), gets the
//! administrator's enforced, default and maximum values where the tenant left a field unset
//! (upstream's fill loop in the NAB controller), `includedNamespaces` forced to the tenant's
//! namespace, and the always-excluded kinds added in the filter style the spec uses.

use crate::api::velero::BackupSpec;
use crate::policy::config::{EffectivePolicy, SpecKind};
use crate::policy::exclusions::{
    NAC_OWN_KINDS, SENSITIVE_CLUSTER_KINDS, backup_excluded_kinds, excluded_kind_named_by,
    with_appended,
};
use crate::policy::{PolicyViolation, ViolationReason, into_result};

const PREFIX: &str = "spec.backupSpec";

/// Label key prefixes a tenant may not put in `spec.backupSpec.metadata.labels`: they are how
/// NAC and Velero find their objects.
pub const RESERVED_LABEL_PREFIXES: &[&str] = &["openshift.io/oadp", "velero.io/"];
/// Exact label keys a tenant may not set, for the same reason.
pub const RESERVED_LABEL_KEYS: &[&str] = &[crate::api::nonadmin::labels::MANAGED_BY];

/// Whether `key` is a label key reserved for NAC and Velero.
pub fn is_reserved_label(key: &str) -> bool {
    RESERVED_LABEL_KEYS.contains(&key)
        || RESERVED_LABEL_PREFIXES
            .iter()
            .any(|prefix| key.starts_with(prefix))
}

/// Velero's resource-filter styles, which one backup may not mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilterStyle {
    /// No filter set.
    None,
    /// `includedResources`, `excludedResources`, `includeClusterResources`.
    Old,
    /// `included/excludedClusterScopedResources`, `included/excludedNamespaceScopedResources`.
    New,
    /// Both (Velero refuses the backup).
    Mixed,
}

/// The filter style of a backup spec, with Velero's own test (`UseOldResourceFilters`:
/// non-empty old lists or `includeClusterResources` set at all).
pub fn filter_style(spec: &BackupSpec) -> FilterStyle {
    let non_empty = |list: &Option<Vec<String>>| list.as_ref().is_some_and(|l| !l.is_empty());
    let old = non_empty(&spec.included_resources)
        || non_empty(&spec.excluded_resources)
        || spec.include_cluster_resources.is_some();
    let new = non_empty(&spec.included_cluster_scoped_resources)
        || non_empty(&spec.excluded_cluster_scoped_resources)
        || non_empty(&spec.included_namespace_scoped_resources)
        || non_empty(&spec.excluded_namespace_scoped_resources);
    match (old, new) {
        (false, false) => FilterStyle::None,
        (true, false) => FilterStyle::Old,
        (false, true) => FilterStyle::New,
        (true, true) => FilterStyle::Mixed,
    }
}

fn restricted(field: &str, detail: &str) -> PolicyViolation {
    let path = format!("{PREFIX}.{field}");
    PolicyViolation::new(
        ViolationReason::Restricted,
        &path,
        format!("NonAdminBackup {path} is restricted{detail}"),
    )
}

const MIXED_FILTERS: &str = ", old-style filters (includedResources, excludedResources, includeClusterResources) and new-style filters (includedClusterScopedResources, excludedClusterScopedResources, includedNamespaceScopedResources, excludedNamespaceScopedResources) can not be used together";

/// Validates a NonAdminBackup's `spec.backupSpec` in `namespace` against the restrictions
/// and the administrator's policy. Returns every violation found.
///
/// `spec.backupSpec.storageLocation` names a NonAdminBackupStorageLocation; whether it exists,
/// is approved and available is the caller's check (it needs the cluster).
pub fn validate_backup_spec(
    namespace: &str,
    spec: &BackupSpec,
    policy: &EffectivePolicy,
) -> Result<(), Vec<PolicyViolation>> {
    let mut violations = Vec::new();

    if let Some(namespaces) = &spec.included_namespaces
        && namespaces.iter().any(|included| included != namespace)
    {
        violations.push(restricted(
            "includedNamespaces",
            &format!(", can not contain namespaces other than: {namespace}"),
        ));
    }
    // Upstream tests `!= nil`: after JSON decoding `[]` is a non-nil slice, so an empty list
    // is set, and refused like any other (only absent or `null` passes).
    if spec.excluded_namespaces.is_some() {
        violations.push(restricted("excludedNamespaces", ""));
    }
    if spec.include_cluster_resources == Some(true) {
        violations.push(restricted(
            "includeClusterResources",
            ", can only be set to false",
        ));
    }
    if spec
        .included_cluster_scoped_resources
        .as_ref()
        .is_some_and(|l| !l.is_empty())
    {
        violations.push(restricted(
            "includedClusterScopedResources",
            ", must remain empty",
        ));
    }
    // `!= nil` upstream too; `includedClusterScopedResources` above is `len(...) > 0` there.
    if spec.volume_snapshot_locations.is_some() {
        violations.push(restricted("volumeSnapshotLocations", ""));
    }
    let tenant_style = filter_style(spec);
    if tenant_style == FilterStyle::Mixed {
        violations.push(PolicyViolation::new(
            ViolationReason::Invalid,
            PREFIX,
            format!("NonAdminBackup {PREFIX} is restricted{MIXED_FILTERS}"),
        ));
    }
    for (field, list) in [
        ("includedResources", &spec.included_resources),
        (
            "includedNamespaceScopedResources",
            &spec.included_namespace_scoped_resources,
        ),
    ] {
        for entry in list.iter().flatten() {
            if let Some(kind) = excluded_kind_named_by(backup_excluded_kinds(), entry) {
                violations.push(restricted(
                    field,
                    &format!(
                        ", can not contain {entry} (NAC always excludes {}: {})",
                        kind.qualified(),
                        kind.reason
                    ),
                ));
            }
        }
    }
    if let Some(labels) = spec.metadata.as_ref().and_then(|m| m.labels.as_ref()) {
        for key in labels.keys().filter(|key| is_reserved_label(key)) {
            violations.push(restricted(
                "metadata.labels",
                &format!(", can not set label {key} (reserved for NAC and Velero)"),
            ));
        }
    }

    let rules = policy.rules(SpecKind::Backup);
    match serde_json::to_value(spec) {
        Ok(tenant) => {
            violations.extend(rules.enforced_differences(&tenant, PREFIX));
            let mut filled = tenant;
            rules.fill(&mut filled);
            violations.extend(rules.limit_violations(&filled, PREFIX));
            if tenant_style != FilterStyle::Mixed
                && let Ok(filled_spec) = serde_json::from_value::<BackupSpec>(filled)
                && filter_style(&filled_spec) == FilterStyle::Mixed
            {
                violations.push(PolicyViolation::new(
                    ViolationReason::Enforced,
                    PREFIX,
                    format!(
                        "NonAdminBackup {PREFIX} must use the same resource filter style as the administrator's enforced filters{MIXED_FILTERS}"
                    ),
                ));
            }
        }
        Err(error) => violations.push(unreadable(&error)),
    }
    into_result(violations)
}

fn unreadable(error: &serde_json::Error) -> PolicyViolation {
    PolicyViolation::new(
        ViolationReason::Invalid,
        PREFIX,
        format!(
            "NonAdminBackup {PREFIX} could not be checked against the administrator's policy: {error}"
        ),
    )
}

/// Builds the Velero `BackupSpec` for a validated NonAdminBackup in `namespace`.
///
/// `storage_location` is the Velero BackupStorageLocation resolved from the tenant's
/// NonAdminBackupStorageLocation name (`None`: Velero's default location). Call
/// [`validate_backup_spec`] first: this function narrows what it can (namespaces, cluster
/// resources, locations, reserved labels) but does not re-report violations. It fails only
/// if the administrator's values cannot be written into the spec.
pub fn build_velero_backup_spec(
    namespace: &str,
    spec: &BackupSpec,
    policy: &EffectivePolicy,
    storage_location: Option<String>,
) -> Result<BackupSpec, PolicyViolation> {
    let mut document = serde_json::to_value(spec).map_err(|error| unreadable(&error))?;
    policy.rules(SpecKind::Backup).fill(&mut document);
    let mut velero: BackupSpec =
        serde_json::from_value(document).map_err(|error| unreadable(&error))?;

    velero.included_namespaces = Some(vec![namespace.to_owned()]);
    velero.excluded_namespaces = None;
    velero.included_cluster_scoped_resources = None;
    velero.volume_snapshot_locations = None;
    velero.storage_location = storage_location;
    if velero.include_cluster_resources == Some(true) {
        velero.include_cluster_resources = Some(false);
    }
    if let Some(labels) = velero.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
        labels.retain(|key, _| !is_reserved_label(key));
    }

    let own: Vec<String> = NAC_OWN_KINDS.iter().map(|kind| kind.qualified()).collect();
    let cluster: Vec<String> = SENSITIVE_CLUSTER_KINDS
        .iter()
        .map(|kind| kind.qualified())
        .collect();
    // Velero refuses a backup that mixes filter styles, so the exclusions go where the
    // tenant's filters are.
    if filter_style(&velero) == FilterStyle::New {
        velero.excluded_cluster_scoped_resources = Some(with_appended(
            velero.excluded_cluster_scoped_resources.take(),
            &cluster,
        ));
        velero.excluded_namespace_scoped_resources = Some(with_appended(
            velero.excluded_namespace_scoped_resources.take(),
            &own,
        ));
    } else {
        let all: Vec<String> = own.into_iter().chain(cluster).collect();
        velero.excluded_resources = Some(with_appended(velero.excluded_resources.take(), &all));
    }
    Ok(velero)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::{Value, json};

    use super::*;
    use crate::api::oadp::policy_sources::POLICY_CONFIGMAP_KEY;
    use crate::api::velero::BackupMetadata;
    use crate::policy::config::NacPolicy;
    use crate::policy::violations_message;

    fn spec(value: Value) -> BackupSpec {
        serde_json::from_value(value).unwrap()
    }

    fn policy(yaml: &str) -> EffectivePolicy {
        let data = BTreeMap::from([(POLICY_CONFIGMAP_KEY.to_owned(), yaml.to_owned())]);
        NacPolicy::from_sources(None, Some(&data))
            .unwrap()
            .for_namespace(&BTreeMap::new())
    }

    fn messages(result: Result<(), Vec<PolicyViolation>>) -> Vec<String> {
        result
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn none() -> EffectivePolicy {
        EffectivePolicy::default()
    }

    #[test]
    fn plain_backup_of_own_namespace_is_valid() {
        assert_eq!(
            validate_backup_spec("team-a", &spec(json!({})), &none()),
            Ok(())
        );
        let own = spec(json!({"includedNamespaces": ["team-a"], "ttl": "24h"}));
        assert_eq!(validate_backup_spec("team-a", &own, &none()), Ok(()));
    }

    #[test]
    fn malicious_other_namespace_is_refused_with_upstream_message() {
        let other = spec(json!({"includedNamespaces": ["team-a", "kube-system"]}));
        let violations = validate_backup_spec("team-a", &other, &none()).unwrap_err();
        assert_eq!(
            violations[0].message,
            "NonAdminBackup spec.backupSpec.includedNamespaces is restricted, can not contain namespaces other than: team-a"
        );
        assert_eq!(violations[0].field, "spec.backupSpec.includedNamespaces");
        assert_eq!(violations[0].reason, ViolationReason::Restricted);
        let wildcard = spec(json!({"includedNamespaces": ["*"]}));
        assert!(validate_backup_spec("team-a", &wildcard, &none()).is_err());
    }

    #[test]
    fn malicious_cluster_wide_fields_are_refused() {
        let attack = spec(json!({
            "excludedNamespaces": ["team-b"],
            "includeClusterResources": true,
            "volumeSnapshotLocations": ["admin-vsl"]
        }));
        assert_eq!(
            messages(validate_backup_spec("team-a", &attack, &none())),
            [
                "NonAdminBackup spec.backupSpec.excludedNamespaces is restricted",
                "NonAdminBackup spec.backupSpec.includeClusterResources is restricted, can only be set to false",
                "NonAdminBackup spec.backupSpec.volumeSnapshotLocations is restricted",
            ]
        );
        let scoped = spec(json!({"includedClusterScopedResources": ["clusterroles"]}));
        assert_eq!(
            messages(validate_backup_spec("team-a", &scoped, &none())),
            [
                "NonAdminBackup spec.backupSpec.includedClusterScopedResources is restricted, must remain empty"
            ]
        );
        let harmless = spec(json!({
            "includeClusterResources": false,
            "includedClusterScopedResources": [],
            "excludedNamespaces": null
        }));
        assert_eq!(validate_backup_spec("team-a", &harmless, &none()), Ok(()));
    }

    #[test]
    fn including_an_always_excluded_kind_is_refused() {
        let attack = spec(json!({"includedResources": ["pods", "ClusterRoleBindings", "nab"]}));
        let found = messages(validate_backup_spec("team-a", &attack, &none()));
        assert_eq!(found.len(), 2);
        assert!(found[0].starts_with(
            "NonAdminBackup spec.backupSpec.includedResources is restricted, can not contain ClusterRoleBindings (NAC always excludes clusterrolebindings.rbac.authorization.k8s.io"
        ), "{}", found[0]);
        assert!(found[1].contains("nonadminbackups.oadp.openshift.io"));
        let scoped = spec(json!({"includedNamespaceScopedResources": ["nonadminrestores"]}));
        assert!(validate_backup_spec("team-a", &scoped, &none()).is_err());
    }

    #[test]
    fn mixed_filter_styles_are_refused() {
        let mixed = spec(json!({
            "includedResources": ["pods"],
            "excludedNamespaceScopedResources": ["secrets"]
        }));
        let violations = validate_backup_spec("team-a", &mixed, &none()).unwrap_err();
        assert_eq!(violations[0].field, "spec.backupSpec");
        assert!(violations[0].message.contains("can not be used together"));
    }

    #[test]
    fn forged_nac_labels_in_metadata_are_refused() {
        let forged = BackupSpec {
            metadata: Some(BackupMetadata {
                labels: Some(BTreeMap::from([
                    (
                        "openshift.io/oadp-nab-origin-nacuuid".to_owned(),
                        "team-b-x".to_owned(),
                    ),
                    ("app".to_owned(), "shop".to_owned()),
                    ("velero.io/storage-location".to_owned(), "x".to_owned()),
                ])),
                ..Default::default()
            }),
            ..Default::default()
        };
        let found = messages(validate_backup_spec("team-a", &forged, &none()));
        assert_eq!(found.len(), 2);
        assert_eq!(
            found[0],
            "NonAdminBackup spec.backupSpec.metadata.labels is restricted, can not set label openshift.io/oadp-nab-origin-nacuuid (reserved for NAC and Velero)"
        );
        let built = build_velero_backup_spec("team-a", &forged, &none(), None).unwrap();
        let labels = built.metadata.unwrap().labels.unwrap();
        assert_eq!(labels.keys().collect::<Vec<_>>(), ["app"]);
    }

    #[test]
    fn forged_enforced_values_are_refused_with_upstream_message() {
        let policy = policy(
            "rules:\n  - backup:\n      enforce:\n        snapshotMoveData: true\n        ttl: 720h\n",
        );
        let forged = spec(json!({"snapshotMoveData": false, "ttl": "8760h"}));
        assert_eq!(
            messages(validate_backup_spec("team-a", &forged, &policy)),
            [
                "the administrator has restricted spec.backupSpec.snapshotMoveData field value to true",
                "the administrator has restricted spec.backupSpec.ttl field value to 720h",
            ]
        );
        let same = spec(json!({"snapshotMoveData": true, "ttl": "720h0m0s"}));
        assert_eq!(validate_backup_spec("team-a", &same, &policy), Ok(()));
    }

    #[test]
    fn maxima_and_allow_lists_apply_to_the_filled_spec() {
        let policy = policy(
            "rules:\n  - backup:\n      maximum:\n        ttl: 720h\n      allowed:\n        snapshotMoveData: [true]\n      defaults:\n        snapshotMoveData: true\n",
        );
        let long = spec(json!({"ttl": "9000h"}));
        assert_eq!(
            messages(validate_backup_spec("team-a", &long, &policy)),
            ["the administrator has limited spec.backupSpec.ttl to at most 720h0m0s, got 9000h"]
        );
        let refused = spec(json!({"snapshotMoveData": false}));
        assert_eq!(
            messages(validate_backup_spec("team-a", &refused, &policy)),
            [
                "the administrator has restricted spec.backupSpec.snapshotMoveData to one of: true; got false"
            ]
        );
        assert_eq!(
            validate_backup_spec("team-a", &spec(json!({})), &policy),
            Ok(())
        );
        let built = build_velero_backup_spec("team-a", &spec(json!({})), &policy, None).unwrap();
        assert_eq!(
            built.ttl.unwrap().as_str(),
            "720h0m0s",
            "unset TTL gets the maximum"
        );
        assert_eq!(built.snapshot_move_data, Some(true));
    }

    #[test]
    fn enforced_filters_of_the_other_style_are_reported() {
        let policy =
            policy("rules:\n  - backup:\n      enforce:\n        excludedResources: [secrets]\n");
        let new_style = spec(json!({"excludedNamespaceScopedResources": ["configmaps"]}));
        let violations = validate_backup_spec("team-a", &new_style, &policy).unwrap_err();
        assert_eq!(violations.len(), 1);
        assert!(violations[0].message.starts_with(
            "NonAdminBackup spec.backupSpec must use the same resource filter style as the administrator's enforced filters"
        ));
    }

    #[test]
    fn all_violations_are_reported_together() {
        let attack = spec(json!({
            "includedNamespaces": ["kube-system"],
            "includeClusterResources": true,
            "includedClusterScopedResources": ["*"]
        }));
        let violations = validate_backup_spec("team-a", &attack, &none()).unwrap_err();
        // namespaces, cluster resources, cluster-scoped resources, and the mixed filter styles.
        assert_eq!(violations.len(), 4);
        assert!(violations_message(&violations).contains("; "));
    }

    #[test]
    fn build_scopes_to_the_namespace_and_excludes_sensitive_kinds_old_style() {
        let tenant = spec(json!({
            "includedNamespaces": [],
            "excludedResources": ["events"],
            "ttl": "24h",
            "futureVeleroField": {"keep": true}
        }));
        let built =
            build_velero_backup_spec("team-a", &tenant, &none(), Some("team-a-bsl-uuid".into()))
                .unwrap();
        assert_eq!(built.included_namespaces, Some(vec!["team-a".to_owned()]));
        assert_eq!(built.storage_location.as_deref(), Some("team-a-bsl-uuid"));
        assert_eq!(built.ttl.as_ref().unwrap().as_str(), "24h");
        assert_eq!(
            built.unknown_fields["futureVeleroField"],
            json!({"keep": true})
        );
        let excluded = built.excluded_resources.clone().unwrap();
        assert_eq!(excluded[0], "events", "tenant entries first");
        for required in [
            "securitycontextconstraints.security.openshift.io",
            "clusterroles.rbac.authorization.k8s.io",
            "clusterrolebindings.rbac.authorization.k8s.io",
            "priorityclasses.scheduling.k8s.io",
            "customresourcedefinitions.apiextensions.k8s.io",
            "nonadminbackups.oadp.openshift.io",
            "nonadminbackupstoragelocations.oadp.openshift.io",
            "virtualmachineclusterinstancetypes.instancetype.kubevirt.io",
            "virtualmachineclusterpreferences.instancetype.kubevirt.io",
        ] {
            assert!(excluded.iter().any(|e| e == required), "{required}");
        }
        assert!(
            !excluded
                .iter()
                .any(|e| e.starts_with("volumesnapshotclasses"))
        );
        assert_eq!(filter_style(&built), FilterStyle::Old);
        assert_eq!(built.excluded_cluster_scoped_resources, None);
    }

    #[test]
    fn build_uses_new_style_exclusions_for_new_style_specs() {
        let tenant =
            spec(json!({"includedNamespaceScopedResources": ["deployments.apps", "pods"]}));
        assert_eq!(validate_backup_spec("team-a", &tenant, &none()), Ok(()));
        let built = build_velero_backup_spec("team-a", &tenant, &none(), None).unwrap();
        assert_eq!(filter_style(&built), FilterStyle::New);
        assert_eq!(built.excluded_resources, None);
        let cluster = built.excluded_cluster_scoped_resources.unwrap();
        assert!(cluster.contains(&"clusterroles.rbac.authorization.k8s.io".to_owned()));
        assert!(
            cluster
                .contains(&"virtualmachineclusterpreferences.instancetype.kubevirt.io".to_owned())
        );
        assert!(!cluster.iter().any(|e| e.starts_with("nonadmin")));
        let namespaced = built.excluded_namespace_scoped_resources.unwrap();
        assert!(namespaced.contains(&"nonadminrestores.oadp.openshift.io".to_owned()));
    }

    #[test]
    fn build_narrows_even_an_unvalidated_malicious_spec() {
        let attack = spec(json!({
            "includedNamespaces": ["kube-system"],
            "excludedNamespaces": ["team-a"],
            "includeClusterResources": true,
            "includedClusterScopedResources": ["*"],
            "volumeSnapshotLocations": ["admin"],
            "storageLocation": "admin-default"
        }));
        let built = build_velero_backup_spec("team-a", &attack, &none(), None).unwrap();
        assert_eq!(built.included_namespaces, Some(vec!["team-a".to_owned()]));
        assert_eq!(built.excluded_namespaces, None);
        assert_eq!(built.include_cluster_resources, Some(false));
        assert_eq!(built.included_cluster_scoped_resources, None);
        assert_eq!(built.volume_snapshot_locations, None);
        assert_eq!(built.storage_location, None);
    }

    #[test]
    fn build_fills_enforced_values_without_overriding_tenant_values() {
        let policy = policy(
            "rules:\n  - backup:\n      enforce:\n        defaultVolumesToFsBackup: true\n        uploaderConfig.parallelFilesUpload: 4\n      defaults:\n        ttl: 168h\n",
        );
        let tenant = spec(json!({"ttl": "48h", "defaultVolumesToFsBackup": true}));
        let built = build_velero_backup_spec("team-a", &tenant, &policy, None).unwrap();
        assert_eq!(built.ttl.unwrap().as_str(), "48h");
        assert_eq!(built.default_volumes_to_fs_backup, Some(true));
        assert_eq!(
            built.uploader_config.unwrap().parallel_files_upload,
            Some(4)
        );
    }

    fn dpa(enforce_backup_spec: Value) -> EffectivePolicy {
        let dpa = json!({"enable": true, "enforceBackupSpec": enforce_backup_spec});
        NacPolicy::from_sources(Some(&dpa), None)
            .unwrap()
            .for_namespace(&BTreeMap::new())
    }

    /// Upstream `ValidateBackupSpec` tests `excludedNamespaces != nil` and
    /// `volumeSnapshotLocations != nil`: the `[]` Go decodes is a non-nil slice, so an empty
    /// list is set and refused (only absent or `null` passes). `includedNamespaces != nil` is
    /// checked with `containsOnlyNamespace`, which an empty list passes (the Velero backup then
    /// names the tenant's namespace), and `includedClusterScopedResources` with
    /// `len(...) > 0`, which an empty list passes.
    #[test]
    fn empty_lists_are_set_as_upstream_decodes_them() {
        for field in ["excludedNamespaces", "volumeSnapshotLocations"] {
            let tenant = spec(json!({field: []}));
            assert_eq!(
                messages(validate_backup_spec("team-a", &tenant, &none())),
                [format!(
                    "NonAdminBackup spec.backupSpec.{field} is restricted"
                )]
            );
            let null = spec(json!({field: null}));
            assert_eq!(validate_backup_spec("team-a", &null, &none()), Ok(()));
        }
        let empty = spec(json!({"includedNamespaces": [], "includedClusterScopedResources": []}));
        assert_eq!(validate_backup_spec("team-a", &empty, &none()), Ok(()));
        let built = build_velero_backup_spec("team-a", &empty, &none(), None).unwrap();
        assert_eq!(built.included_namespaces, Some(vec!["team-a".to_owned()]));
    }

    /// Upstream `TestValidateBackupSpecEnforcedFields`, the cases whose values are empty:
    /// "ExcludedResources" (enforced `[nonadminbackups…]`, override `[]`),
    /// "IncludedNamespaceScopedResources" (enforced `[]`, override `[*]`),
    /// "ExcludedClusterScopedResources" and "ExcludedNamespaceScopedResources" (enforced
    /// `[*]`, override `[]`), "OrderedResources" (enforced a map, override `{}`). Each: unset
    /// passes, the enforced value passes, the override is refused.
    #[test]
    fn upstream_enforced_field_cases_with_empty_values() {
        let cases = [
            (
                "excludedResources",
                json!(["nonadminbackups.nac.oadp.openshift.io"]),
                json!([]),
            ),
            ("includedNamespaceScopedResources", json!([]), json!(["*"])),
            ("excludedClusterScopedResources", json!(["*"]), json!([])),
            ("excludedNamespaceScopedResources", json!(["*"]), json!([])),
            (
                "orderedResources",
                json!({"pods": "ns1/pod1,ns2/pod2"}),
                json!({}),
            ),
        ];
        for (field, enforced, overriding) in cases {
            let policy = dpa(json!({field: enforced.clone()}));
            assert_eq!(
                validate_backup_spec("team-a", &spec(json!({})), &policy),
                Ok(()),
                "{field} unset"
            );
            assert_eq!(
                validate_backup_spec("team-a", &spec(json!({field: enforced.clone()})), &policy),
                Ok(()),
                "{field} enforced value"
            );
            let found = messages(validate_backup_spec(
                "team-a",
                &spec(json!({field: overriding})),
                &policy,
            ));
            assert!(
                found.contains(&format!(
                    "the administrator has restricted spec.backupSpec.{field} field value to {}",
                    crate::policy::rules::display_value(&enforced)
                )),
                "{field}: {found:?}"
            );
        }
    }

    /// Upstream `TestValidateBackupSpecEnforcedFields` (`internal/common/function/
    /// function_test.go`), cases "TTL" (enforced `12h`, override `720h`) and "Hooks" (enforced
    /// resources `[{name: test}]`, override `[{name: another}]`): unset passes, the enforced
    /// value passes, the override is refused. With the values Go decodes as zero, which
    /// `ValidateBackupSpec` skips (`!currentField.IsZero()`) and the NAB controller's fill loop
    /// overwrites (`currentField.IsZero()`): `ttl: 0s` and `hooks: {}` pass and get the
    /// enforced value. `hooks: {resources: []}` holds a non-nil slice: it is set, differs from
    /// the enforced hooks (`reflect.DeepEqual`) and is refused.
    #[test]
    fn upstream_ttl_and_hooks_cases_with_go_zero_values() {
        let policy = dpa(json!({"ttl": "12h"}));
        for tenant in [json!({}), json!({"ttl": "12h"}), json!({"ttl": "12h0m0s"})] {
            assert_eq!(
                validate_backup_spec("team-a", &spec(tenant.clone()), &policy),
                Ok(()),
                "{tenant}"
            );
        }
        assert_eq!(
            messages(validate_backup_spec(
                "team-a",
                &spec(json!({"ttl": "720h"})),
                &policy
            )),
            ["the administrator has restricted spec.backupSpec.ttl field value to 12h"]
        );
        for zero in ["0s", "0h0m0s", "0"] {
            let tenant = spec(json!({"ttl": zero}));
            assert_eq!(
                validate_backup_spec("team-a", &tenant, &policy),
                Ok(()),
                "{zero}"
            );
            let built = build_velero_backup_spec("team-a", &tenant, &policy, None).unwrap();
            assert_eq!(built.ttl.unwrap().as_str(), "12h", "{zero}");
        }

        let enforced = json!({"resources": [{"name": "test"}]});
        let policy = dpa(json!({"hooks": enforced.clone()}));
        for tenant in [json!({}), json!({"hooks": enforced.clone()})] {
            assert_eq!(
                validate_backup_spec("team-a", &spec(tenant.clone()), &policy),
                Ok(()),
                "{tenant}"
            );
        }
        let refused = r#"the administrator has restricted spec.backupSpec.hooks field value to {"resources":[{"name":"test"}]}"#;
        for overriding in [
            json!({"resources": [{"name": "another"}]}),
            json!({"resources": []}),
        ] {
            assert_eq!(
                messages(validate_backup_spec(
                    "team-a",
                    &spec(json!({"hooks": overriding.clone()})),
                    &policy
                )),
                [refused],
                "{overriding}"
            );
        }
        let empty = spec(json!({"hooks": {}}));
        assert_eq!(validate_backup_spec("team-a", &empty, &policy), Ok(()));
        let built = build_velero_backup_spec("team-a", &empty, &policy, None).unwrap();
        assert_eq!(serde_json::to_value(built.hooks).unwrap(), enforced);
    }

    /// Upstream enforces a DPA field only when `!enforcedField.IsZero()`: `ttl: 0s` (a
    /// `metav1.Duration` held by value) and `hooks: {}` (a `BackupHooks` struct held by value,
    /// its `resources` slice nil) are zero, so they enforce nothing: the tenant's own values
    /// pass and reach the Velero spec, and unset fields stay unset (Velero's defaults).
    #[test]
    fn admin_enforcing_zero_ttl_or_empty_hooks_enforces_nothing() {
        let policy = dpa(json!({"ttl": "0s", "hooks": {}}));
        assert!(policy.backup.enforced().is_empty());
        let hooks = json!({"resources": [{"name": "freeze"}]});
        let tenant = spec(json!({"ttl": "720h", "hooks": hooks.clone()}));
        assert_eq!(validate_backup_spec("team-a", &tenant, &policy), Ok(()));
        let built = build_velero_backup_spec("team-a", &tenant, &policy, None).unwrap();
        assert_eq!(built.ttl.unwrap().as_str(), "720h");
        assert_eq!(serde_json::to_value(built.hooks).unwrap(), hooks);
        let built = build_velero_backup_spec("team-a", &spec(json!({})), &policy, None).unwrap();
        assert_eq!((built.ttl, built.hooks), (None, None));
        // `hooks: {resources: []}` is not zero (a non-nil slice): it is enforced.
        let policy = dpa(json!({"hooks": {"resources": []}}));
        assert_eq!(
            messages(validate_backup_spec(
                "team-a",
                &spec(json!({"hooks": hooks})),
                &policy
            )),
            [
                r#"the administrator has restricted spec.backupSpec.hooks field value to {"resources":[]}"#
            ]
        );
        let built = build_velero_backup_spec("team-a", &spec(json!({})), &policy, None).unwrap();
        assert_eq!(
            serde_json::to_value(built.hooks).unwrap(),
            json!({"resources": []})
        );
    }

    /// Defaults and maxima fill what upstream's fill loop would: a Go zero value is unset. A
    /// tenant's `ttl: 0s` means Velero's default TTL, which the administrator's maximum exists
    /// to bound, so it gets the maximum (or the default) like an absent `ttl`.
    #[test]
    fn zero_values_get_defaults_and_maxima() {
        let policy = policy(
            "rules:\n  - backup:\n      maximum:\n        ttl: 168h\n      defaults:\n        hooks:\n          resources: [{name: freeze}]\n",
        );
        let tenant = spec(json!({"ttl": "0s", "hooks": {}}));
        assert_eq!(validate_backup_spec("team-a", &tenant, &policy), Ok(()));
        let built = build_velero_backup_spec("team-a", &tenant, &policy, None).unwrap();
        assert_eq!(built.ttl.unwrap().as_str(), "168h0m0s");
        assert_eq!(
            serde_json::to_value(built.hooks).unwrap(),
            json!({"resources": [{"name": "freeze"}]})
        );
        // An empty list of hooks is the tenant's choice: kept.
        let tenant = spec(json!({"hooks": {"resources": []}}));
        let built = build_velero_backup_spec("team-a", &tenant, &policy, None).unwrap();
        assert_eq!(
            serde_json::to_value(built.hooks).unwrap(),
            json!({"resources": []})
        );
    }

    /// An enforced empty list or map is enforced: the controller's fill loop (upstream's
    /// `!enforcedField.IsZero() && currentField.IsZero()`) writes it into the Velero spec of a
    /// tenant who left the field unset.
    #[test]
    fn enforced_empty_values_reach_the_velero_spec() {
        let policy = dpa(json!({"includedResources": [], "orderedResources": {}}));
        let built = build_velero_backup_spec("team-a", &spec(json!({})), &policy, None).unwrap();
        assert_eq!(built.included_resources, Some(Vec::new()));
        assert_eq!(built.ordered_resources, Some(BTreeMap::new()));
        let narrowed = spec(json!({"includedResources": ["configmaps"]}));
        assert_eq!(
            messages(validate_backup_spec("team-a", &narrowed, &policy)),
            [
                "the administrator has restricted spec.backupSpec.includedResources field value to []"
            ]
        );
    }
}
