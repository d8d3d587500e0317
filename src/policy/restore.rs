//! NonAdminRestore: validating `spec.restoreSpec`, checking the backup it restores from, and
//! building the Velero `RestoreSpec`.
//!
//! Restrictions follow upstream's `ValidateRestoreSpec` (`migtools/oadp-non-admin`,
//! `internal/common/function/function.go`: `scheduleName`, `includedNamespaces`,
//! `excludedNamespaces`, `namespaceMapping`, enforced fields, `backupName` required) and close
//! what upstream leaves open (issue 4): `includeClusterResources: true` is refused, filters
//! naming always-excluded kinds are refused, and the backup must have *finished* (Completed or
//! PartiallyFailed; upstream only looks at the NonAdminBackup's phase).
//!
//! The Velero spec, as upstream's NAR controller builds it: `backupName` replaced by the Velero
//! backup's name, `includedNamespaces` forced to the tenant's namespace, enforced values filled
//! in, `volumesnapshotclasses` excluded; plus every kind NAC excludes from backups, because a
//! backup on a tenant's own storage location can contain anything.

use crate::api::velero::{BackupPhase, RestoreSpec};
use crate::policy::config::{EffectivePolicy, SpecKind};
use crate::policy::exclusions::{excluded_kind_named_by, restore_excluded_kinds, with_appended};
use crate::policy::{PolicyViolation, ViolationReason, into_result};

const PREFIX: &str = "spec.restoreSpec";

fn restricted(field: &str, detail: &str) -> PolicyViolation {
    let path = format!("{PREFIX}.{field}");
    PolicyViolation::new(
        ViolationReason::Restricted,
        &path,
        // Upstream's text (`NARRestrictedErr` with its `nonAdminRestore.` path), then ours.
        format!("NonAdminRestore nonAdminRestore.{path} is restricted{detail}"),
    )
}

/// Validates a NonAdminRestore's `spec.restoreSpec` in `namespace`. Returns every violation.
///
/// Whether `backupName` names a usable NonAdminBackup of this namespace is checked by
/// [`check_restore_source`] once the caller has read it.
pub fn validate_restore_spec(
    namespace: &str,
    spec: &RestoreSpec,
    policy: &EffectivePolicy,
) -> Result<(), Vec<PolicyViolation>> {
    let mut violations = Vec::new();

    if spec
        .schedule_name
        .as_ref()
        .is_some_and(|name| !name.is_empty())
    {
        violations.push(restricted("scheduleName", ""));
    }
    if spec.backup_name.as_ref().is_none_or(|name| name.is_empty()) {
        violations.push(PolicyViolation::new(
            ViolationReason::Missing,
            format!("{PREFIX}.backupName"),
            format!("NonAdminRestore {PREFIX}.backupName is not set"),
        ));
    }
    // Upstream tests these three `!= nil`: after JSON decoding `[]` and `{}` are a non-nil
    // slice and map, so an empty list or map is set and refused; only absent or `null` passes.
    if spec.included_namespaces.is_some() {
        violations.push(restricted(
            "includedNamespaces",
            &format!(", restores always target namespace {namespace}"),
        ));
    }
    if spec.excluded_namespaces.is_some() {
        violations.push(restricted("excludedNamespaces", ""));
    }
    if spec.namespace_mapping.is_some() {
        violations.push(restricted("namespaceMapping", ""));
    }
    if spec.include_cluster_resources == Some(true) {
        violations.push(restricted(
            "includeClusterResources",
            ", can only be set to false",
        ));
    }
    for entry in spec.included_resources.iter().flatten() {
        if let Some(kind) = excluded_kind_named_by(restore_excluded_kinds(), entry) {
            violations.push(restricted(
                "includedResources",
                &format!(
                    ", can not contain {entry} (NAC always excludes {}: {})",
                    kind.qualified(),
                    kind.reason
                ),
            ));
        }
    }

    let rules = policy.rules(SpecKind::Restore);
    match serde_json::to_value(spec) {
        Ok(tenant) => {
            violations.extend(rules.enforced_differences(&tenant, PREFIX));
            let mut filled = tenant;
            rules.fill(&mut filled);
            violations.extend(rules.limit_violations(&filled, PREFIX));
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
            "NonAdminRestore {PREFIX} could not be checked against the administrator's policy: {error}"
        ),
    )
}

/// Checks the NonAdminBackup named by `backupName` (read by the caller from the restore's own
/// namespace): it must be `Created` and its Velero backup `Completed` or `PartiallyFailed`.
///
/// `nab_status_phase` is the NonAdminBackup's `status.phase`, `velero_phase` its
/// `status.veleroBackup.status.phase`. A NonAdminBackup that does not exist is the caller's
/// "not found" message, never a lookup in another namespace.
pub fn check_restore_source(
    nab_status_phase: Option<&str>,
    velero_phase: Option<&str>,
) -> Result<(), PolicyViolation> {
    let invalid = |detail: String| {
        PolicyViolation::new(
            ViolationReason::Invalid,
            format!("{PREFIX}.backupName"),
            format!("NonAdminRestore {PREFIX}.backupName is invalid: {detail}"),
        )
    };
    if nab_status_phase != Some("Created") {
        return Err(invalid(
            "NonAdminBackup is not ready to be restored".to_owned(),
        ));
    }
    match velero_phase.map(BackupPhase::from) {
        Some(BackupPhase::Completed | BackupPhase::PartiallyFailed) => Ok(()),
        Some(phase) => Err(invalid(format!(
            "its Velero backup is {phase}; only Completed or PartiallyFailed backups can be restored"
        ))),
        None => Err(invalid(
            "its Velero backup has not started; only Completed or PartiallyFailed backups can be restored"
                .to_owned(),
        )),
    }
}

/// Builds the Velero `RestoreSpec` for a validated NonAdminRestore in `namespace`, restoring
/// from the Velero backup `velero_backup_name` (the NonAdminBackup's
/// `status.veleroBackup.name`). Narrows what it can even for an unvalidated spec; fails only
/// if the administrator's values cannot be written into the spec.
pub fn build_velero_restore_spec(
    namespace: &str,
    spec: &RestoreSpec,
    velero_backup_name: &str,
    policy: &EffectivePolicy,
) -> Result<RestoreSpec, PolicyViolation> {
    let mut document = serde_json::to_value(spec).map_err(|error| unreadable(&error))?;
    policy.rules(SpecKind::Restore).fill(&mut document);
    let mut velero: RestoreSpec =
        serde_json::from_value(document).map_err(|error| unreadable(&error))?;

    velero.backup_name = Some(velero_backup_name.to_owned());
    velero.schedule_name = None;
    velero.included_namespaces = Some(vec![namespace.to_owned()]);
    velero.excluded_namespaces = None;
    velero.namespace_mapping = None;
    if velero.include_cluster_resources == Some(true) {
        velero.include_cluster_resources = Some(false);
    }
    let excluded: Vec<String> = restore_excluded_kinds()
        .map(|kind| kind.qualified())
        .collect();
    velero.excluded_resources = Some(with_appended(velero.excluded_resources.take(), &excluded));
    Ok(velero)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::{Value, json};

    use super::*;
    use crate::api::oadp::policy_sources::POLICY_CONFIGMAP_KEY;
    use crate::policy::config::NacPolicy;

    fn spec(value: Value) -> RestoreSpec {
        serde_json::from_value(value).unwrap()
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
    fn restore_of_own_backup_is_valid() {
        let tenant = spec(json!({"backupName": "nightly", "restorePVs": true}));
        assert_eq!(validate_restore_spec("team-a", &tenant, &none()), Ok(()));
    }

    #[test]
    fn backup_name_is_required() {
        assert_eq!(
            messages(validate_restore_spec("team-a", &spec(json!({})), &none())),
            ["NonAdminRestore spec.restoreSpec.backupName is not set"]
        );
        let empty = spec(json!({"backupName": ""}));
        assert!(validate_restore_spec("team-a", &empty, &none()).is_err());
    }

    #[test]
    fn malicious_namespace_widening_is_refused() {
        let attack = spec(json!({
            "backupName": "nightly",
            "scheduleName": "admin-schedule",
            "includedNamespaces": ["team-b"],
            "excludedNamespaces": ["team-a"],
            "namespaceMapping": {"team-b": "team-a"}
        }));
        assert_eq!(
            messages(validate_restore_spec("team-a", &attack, &none())),
            [
                "NonAdminRestore nonAdminRestore.spec.restoreSpec.scheduleName is restricted",
                "NonAdminRestore nonAdminRestore.spec.restoreSpec.includedNamespaces is restricted, restores always target namespace team-a",
                "NonAdminRestore nonAdminRestore.spec.restoreSpec.excludedNamespaces is restricted",
                "NonAdminRestore nonAdminRestore.spec.restoreSpec.namespaceMapping is restricted",
            ]
        );
    }

    #[test]
    fn malicious_cluster_resources_are_refused() {
        let attack = spec(json!({"backupName": "nightly", "includeClusterResources": true}));
        assert_eq!(
            messages(validate_restore_spec("team-a", &attack, &none())),
            [
                "NonAdminRestore nonAdminRestore.spec.restoreSpec.includeClusterResources is restricted, can only be set to false"
            ]
        );
        let attack = spec(json!({
            "backupName": "nightly",
            "includedResources": ["securitycontextconstraints", "volumesnapshotclasses.snapshot.storage.k8s.io"]
        }));
        let found = messages(validate_restore_spec("team-a", &attack, &none()));
        assert_eq!(found.len(), 2);
        assert!(found[0].contains("securitycontextconstraints.security.openshift.io"));
        assert!(found[1].contains("volumesnapshotclasses.snapshot.storage.k8s.io"));
    }

    #[test]
    fn forged_enforced_values_are_refused() {
        let data = BTreeMap::from([(
            POLICY_CONFIGMAP_KEY.to_owned(),
            "rules:\n  - restore:\n      enforce:\n        restorePVs: false\n        existingResourcePolicy: none\n".to_owned(),
        )]);
        let policy = NacPolicy::from_sources(None, Some(&data))
            .unwrap()
            .for_namespace(&BTreeMap::new());
        let forged = spec(
            json!({"backupName": "b", "restorePVs": true, "existingResourcePolicy": "update"}),
        );
        assert_eq!(
            messages(validate_restore_spec("team-a", &forged, &policy)),
            [
                "the administrator has restricted spec.restoreSpec.existingResourcePolicy field value to none",
                "the administrator has restricted spec.restoreSpec.restorePVs field value to false",
            ]
        );
        let built =
            build_velero_restore_spec("team-a", &spec(json!({"backupName": "b"})), "v", &policy)
                .unwrap();
        assert_eq!(built.restore_pvs, Some(false));
        assert_eq!(built.existing_resource_policy.unwrap().as_str(), "none");
    }

    #[test]
    fn restore_source_must_be_a_finished_backup() {
        assert_eq!(
            check_restore_source(Some("Created"), Some("Completed")),
            Ok(())
        );
        assert_eq!(
            check_restore_source(Some("Created"), Some("PartiallyFailed")),
            Ok(())
        );
        assert_eq!(
            check_restore_source(Some("BackingOff"), Some("Completed"))
                .unwrap_err()
                .message,
            "NonAdminRestore spec.restoreSpec.backupName is invalid: NonAdminBackup is not ready to be restored"
        );
        assert!(check_restore_source(None, None).is_err());
        assert!(check_restore_source(Some("Deleting"), Some("Completed")).is_err());
        for phase in [
            "New",
            "InProgress",
            "Failed",
            "FailedValidation",
            "Deleting",
            "Finalizing",
        ] {
            let error = check_restore_source(Some("Created"), Some(phase)).unwrap_err();
            assert_eq!(
                error.message,
                format!(
                    "NonAdminRestore spec.restoreSpec.backupName is invalid: its Velero backup is {phase}; only Completed or PartiallyFailed backups can be restored"
                )
            );
            assert_eq!(error.field, "spec.restoreSpec.backupName");
        }
        assert!(
            check_restore_source(Some("Created"), None)
                .unwrap_err()
                .message
                .contains("has not started")
        );
    }

    #[test]
    fn build_targets_the_velero_backup_and_the_namespace() {
        let tenant = spec(json!({
            "backupName": "nightly",
            "excludedResources": ["secrets"],
            "restorePVs": true,
            "futureField": 1
        }));
        let built =
            build_velero_restore_spec("team-a", &tenant, "team-a-nightly-uuid", &none()).unwrap();
        assert_eq!(built.backup_name.as_deref(), Some("team-a-nightly-uuid"));
        assert_eq!(built.included_namespaces, Some(vec!["team-a".to_owned()]));
        assert_eq!(built.restore_pvs, Some(true));
        assert_eq!(built.unknown_fields["futureField"], json!(1));
        let excluded = built.excluded_resources.unwrap();
        assert_eq!(excluded[0], "secrets");
        for required in [
            "volumesnapshotclasses.snapshot.storage.k8s.io",
            "clusterroles.rbac.authorization.k8s.io",
            "clusterrolebindings.rbac.authorization.k8s.io",
            "securitycontextconstraints.security.openshift.io",
            "priorityclasses.scheduling.k8s.io",
            "customresourcedefinitions.apiextensions.k8s.io",
            "nonadminbackups.oadp.openshift.io",
        ] {
            assert!(excluded.iter().any(|e| e == required), "{required}");
        }
    }

    #[test]
    fn build_narrows_an_unvalidated_malicious_spec() {
        let attack = spec(json!({
            "backupName": "team-b-backup",
            "scheduleName": "x",
            "includedNamespaces": ["team-b"],
            "excludedNamespaces": ["team-a"],
            "namespaceMapping": {"team-b": "team-a"},
            "includeClusterResources": true
        }));
        let built = build_velero_restore_spec("team-a", &attack, "resolved", &none()).unwrap();
        assert_eq!(built.backup_name.as_deref(), Some("resolved"));
        assert_eq!(built.schedule_name, None);
        assert_eq!(built.included_namespaces, Some(vec!["team-a".to_owned()]));
        assert_eq!(built.excluded_namespaces, None);
        assert_eq!(built.namespace_mapping, None);
        assert_eq!(built.include_cluster_resources, Some(false));
    }

    fn dpa(enforce_restore_spec: Value) -> EffectivePolicy {
        let dpa = json!({"enable": true, "enforceRestoreSpec": enforce_restore_spec});
        NacPolicy::from_sources(Some(&dpa), None)
            .unwrap()
            .for_namespace(&BTreeMap::new())
    }

    /// Upstream `TestValidateRestoreSpec` ("[invalid] spec.restoreSpec.includedNamespaces /
    /// excludedNamespaces / namespaceMapping is restricted"), with the empty values Go decodes
    /// from `[]` and `{}`: `ValidateRestoreSpec` tests `!= nil`, so they are refused too.
    #[test]
    fn empty_namespace_lists_and_mapping_are_set_and_refused() {
        for (field, value) in [
            ("includedNamespaces", json!([])),
            ("excludedNamespaces", json!([])),
            ("namespaceMapping", json!({})),
        ] {
            let tenant = spec(json!({"backupName": "nightly", field: value}));
            let found = messages(validate_restore_spec("team-a", &tenant, &none()));
            assert_eq!(found.len(), 1, "{field}: {found:?}");
            assert!(
                found[0].starts_with(&format!(
                    "NonAdminRestore nonAdminRestore.spec.restoreSpec.{field} is restricted"
                )),
                "{found:?}"
            );
            // null is Go's nil: unset.
            let tenant = spec(json!({"backupName": "nightly", field: null}));
            assert_eq!(validate_restore_spec("team-a", &tenant, &none()), Ok(()));
        }
    }

    /// Upstream `TestValidateRestoreSpecEnforcedFields`, case "ExcludedResources": enforced
    /// `[foobar.io]`, a tenant's `[]` overrides it (refused); unset or equal passes.
    #[test]
    fn enforced_list_refuses_a_tenants_empty_list() {
        let policy = dpa(json!({"excludedResources": ["foobar.io"]}));
        let unset = spec(json!({"backupName": "b"}));
        assert_eq!(validate_restore_spec("team-a", &unset, &policy), Ok(()));
        let same = spec(json!({"backupName": "b", "excludedResources": ["foobar.io"]}));
        assert_eq!(validate_restore_spec("team-a", &same, &policy), Ok(()));
        let empty = spec(json!({"backupName": "b", "excludedResources": []}));
        assert_eq!(
            messages(validate_restore_spec("team-a", &empty, &policy)),
            [
                "the administrator has restricted spec.restoreSpec.excludedResources field value to [\"foobar.io\"]"
            ]
        );
    }

    /// Upstream `TestValidateRestoreSpecEnforcedFields` (`internal/common/function/
    /// function_test.go`), cases "Hooks" (enforced resources `[{name: computer}]`, override
    /// `[{name: microwave}]`) and "ItemOperationTimeout" (enforced `30m`, override `1h`):
    /// unset passes, the enforced value passes, the override is refused. With Go's zero values,
    /// which `ValidateRestoreSpec` skips and the NAR controller's fill loop overwrites:
    /// `hooks: {}` and `itemOperationTimeout: 0s` pass and get the enforced value;
    /// `hooks: {resources: []}` (a non-nil slice) is set and refused.
    #[test]
    fn upstream_hooks_and_timeout_cases_with_go_zero_values() {
        let enforced = json!({"resources": [{"name": "computer"}]});
        let policy = dpa(json!({"hooks": enforced.clone(), "itemOperationTimeout": "30m"}));
        for tenant in [
            json!({"backupName": "b"}),
            json!({"backupName": "b", "hooks": enforced.clone(), "itemOperationTimeout": "30m"}),
        ] {
            assert_eq!(
                validate_restore_spec("team-a", &spec(tenant.clone()), &policy),
                Ok(()),
                "{tenant}"
            );
        }
        let hooks_refused = r#"the administrator has restricted spec.restoreSpec.hooks field value to {"resources":[{"name":"computer"}]}"#;
        for (tenant, refused) in [
            (
                json!({"hooks": {"resources": [{"name": "microwave"}]}}),
                hooks_refused,
            ),
            (json!({"hooks": {"resources": []}}), hooks_refused),
            (
                json!({"itemOperationTimeout": "1h"}),
                "the administrator has restricted spec.restoreSpec.itemOperationTimeout field value to 30m",
            ),
        ] {
            let mut tenant = tenant;
            tenant["backupName"] = json!("b");
            assert_eq!(
                messages(validate_restore_spec(
                    "team-a",
                    &spec(tenant.clone()),
                    &policy
                )),
                [refused],
                "{tenant}"
            );
        }
        let zero = spec(json!({"backupName": "b", "hooks": {}, "itemOperationTimeout": "0s"}));
        assert_eq!(validate_restore_spec("team-a", &zero, &policy), Ok(()));
        let built = build_velero_restore_spec("team-a", &zero, "v", &policy).unwrap();
        assert_eq!(serde_json::to_value(&built.hooks).unwrap(), enforced);
        assert_eq!(built.item_operation_timeout.unwrap().as_str(), "30m");

        // An administrator's `hooks: {}` or `itemOperationTimeout: 0s` is zero: not enforced.
        let policy = dpa(json!({"hooks": {}, "itemOperationTimeout": "0s"}));
        assert!(policy.restore.enforced().is_empty());
        let own = spec(json!({"backupName": "b", "hooks": {"resources": [{"name": "mine"}]}}));
        assert_eq!(validate_restore_spec("team-a", &own, &policy), Ok(()));
    }

    /// An enforced empty list is a non-zero value upstream (a non-nil slice): a tenant's
    /// other value is refused, and an unset field gets the empty list.
    #[test]
    fn enforced_empty_list_is_enforced() {
        let policy = dpa(json!({"includedResources": []}));
        let narrowed = spec(json!({"backupName": "b", "includedResources": ["configmaps"]}));
        assert_eq!(
            messages(validate_restore_spec("team-a", &narrowed, &policy)),
            [
                "the administrator has restricted spec.restoreSpec.includedResources field value to []"
            ]
        );
        let unset = spec(json!({"backupName": "b"}));
        assert_eq!(validate_restore_spec("team-a", &unset, &policy), Ok(()));
        let built = build_velero_restore_spec("team-a", &unset, "v", &policy).unwrap();
        assert_eq!(built.included_resources, Some(Vec::new()));
    }
}
