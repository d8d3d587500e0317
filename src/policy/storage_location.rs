//! Whether a NonAdminBackup may use the NonAdminBackupStorageLocation its
//! `spec.backupSpec.storageLocation` names, and which Velero BackupStorageLocation that means.
//!
//! A location is usable once NAC made its Velero BSL (phase `Created`), the administrator
//! approved it (`ClusterAdminApproved=True`) and Velero reports that BSL `Available`; the backup
//! then names the Velero BSL. The gateway refuses a name that is no location of the namespace
//! with the same words ([`location_not_found`]); approval and availability are the
//! controller's to wait for.

use crate::api::nonadmin::NonAdminBackupStorageLocation;
use crate::api::nonadmin::conditions::types;
use crate::policy::{PolicyViolation, ViolationReason};

/// The NonAdminBackup field naming its storage location.
pub const STORAGE_LOCATION_FIELD: &str = "spec.backupSpec.storageLocation";

/// The refusal of a storage location `name` that is no NonAdminBackupStorageLocation of
/// `namespace`.
pub fn location_not_found(name: &str, namespace: &str) -> PolicyViolation {
    let field = STORAGE_LOCATION_FIELD;
    PolicyViolation::new(
        ViolationReason::Invalid,
        field,
        format!(
            "NonAdminBackupStorageLocation not found in the namespace: nonadminbackupstoragelocations.oadp.openshift.io {name:?} not found ({field}: NonAdminBackupStorageLocation {name:?} not found in namespace {namespace})"
        ),
    )
}

/// The Velero BackupStorageLocation a NonAdminBackup of `namespace` naming the storage location
/// `name` uses, given that NonAdminBackupStorageLocation as read (`None`: it does not exist);
/// else why it may not use it yet (the `Accepted=False` message).
pub fn usable_location(
    name: &str,
    namespace: &str,
    nabsl: Option<&NonAdminBackupStorageLocation>,
) -> Result<String, String> {
    let field = STORAGE_LOCATION_FIELD;
    let Some(nabsl) = nabsl else {
        return Err(location_not_found(name, namespace).message);
    };
    let status = nabsl.status.as_ref();
    let created = status
        .and_then(|s| s.phase)
        .is_some_and(|p| p.as_str() == "Created");
    let approved = status.is_some_and(|s| {
        s.conditions
            .iter()
            .any(|c| c.type_ == types::CLUSTER_ADMIN_APPROVED && c.status == "True")
    });
    let velero = status.and_then(|s| s.velero_backup_storage_location.as_ref());
    let available = velero
        .and_then(|v| v.status.as_ref())
        .and_then(|s| s.phase.as_ref())
        .is_some_and(|p| p.as_str() == "Available");
    match (
        created && approved,
        available,
        velero.and_then(|v| v.name.clone()),
    ) {
        (true, true, Some(velero_name)) => Ok(velero_name),
        (false, _, _) => Err(format!(
            "{field}: NonAdminBackupStorageLocation {name:?} is not approved and created yet"
        )),
        _ => Err(format!(
            "{field}: the BackupStorageLocation of NonAdminBackupStorageLocation {name:?} is not Available"
        )),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn nabsl(status: Value) -> NonAdminBackupStorageLocation {
        serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackupStorageLocation",
            "metadata": {"name": "mine", "namespace": "team-a"},
            "spec": {"backupStorageLocationSpec": {
                "provider": "aws",
                "objectStorage": {"bucket": "b"},
                "credential": {"name": "c", "key": "k"}}},
            "status": status
        }))
        .unwrap()
    }

    fn approved(phase: &str, bsl_phase: Option<&str>, bsl_name: Option<&str>) -> Value {
        let mut velero = json!({"namespace": "openshift-adp"});
        if let Some(name) = bsl_name {
            velero["name"] = json!(name);
        }
        if let Some(bsl_phase) = bsl_phase {
            velero["status"] = json!({"phase": bsl_phase});
        }
        json!({
            "phase": phase,
            "conditions": [{"type": "ClusterAdminApproved", "status": "True", "reason": "Approved",
                            "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "veleroBackupStorageLocation": velero
        })
    }

    const NOT_APPROVED: &str = "spec.backupSpec.storageLocation: NonAdminBackupStorageLocation \"mine\" is not approved and created yet";
    const NOT_AVAILABLE: &str = "spec.backupSpec.storageLocation: the BackupStorageLocation of NonAdminBackupStorageLocation \"mine\" is not Available";

    #[test]
    fn created_approved_and_available_gives_the_velero_location() {
        let location = nabsl(approved(
            "Created",
            Some("Available"),
            Some("team-a-mine-x"),
        ));
        assert_eq!(
            usable_location("mine", "team-a", Some(&location)),
            Ok("team-a-mine-x".to_owned())
        );
    }

    #[test]
    fn a_missing_location_is_not_found_in_the_gateways_words_too() {
        let message = "NonAdminBackupStorageLocation not found in the namespace: nonadminbackupstoragelocations.oadp.openshift.io \"mine\" not found (spec.backupSpec.storageLocation: NonAdminBackupStorageLocation \"mine\" not found in namespace team-a)";
        assert_eq!(
            usable_location("mine", "team-a", None),
            Err(message.to_owned())
        );
        let violation = location_not_found("mine", "team-a");
        assert_eq!(violation.message, message);
        assert_eq!(violation.field, "spec.backupSpec.storageLocation");
        assert_eq!(violation.reason, ViolationReason::Invalid);
    }

    #[test]
    fn not_created_or_not_approved_waits_for_approval() {
        let usable = |status: Value| usable_location("mine", "team-a", Some(&nabsl(status)));
        // No status at all, or still New.
        assert_eq!(usable(Value::Null), Err(NOT_APPROVED.to_owned()));
        assert_eq!(
            usable(approved("New", Some("Available"), Some("x"))),
            Err(NOT_APPROVED.to_owned())
        );
        // Created but approval withdrawn or pending.
        let mut pending = approved("Created", Some("Available"), Some("x"));
        pending["conditions"][0]["status"] = json!("False");
        assert_eq!(usable(pending), Err(NOT_APPROVED.to_owned()));
        let mut unset = approved("Created", Some("Available"), Some("x"));
        unset["conditions"] = json!([]);
        assert_eq!(usable(unset), Err(NOT_APPROVED.to_owned()));
    }

    #[test]
    fn an_unavailable_or_unnamed_velero_location_is_not_available() {
        let usable = |status: Value| usable_location("mine", "team-a", Some(&nabsl(status)));
        assert_eq!(
            usable(approved("Created", Some("Unavailable"), Some("x"))),
            Err(NOT_AVAILABLE.to_owned())
        );
        assert_eq!(
            usable(approved("Created", None, Some("x"))),
            Err(NOT_AVAILABLE.to_owned())
        );
        assert_eq!(
            usable(approved("Created", Some("Available"), None)),
            Err(NOT_AVAILABLE.to_owned())
        );
    }
}
