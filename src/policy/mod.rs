//! Validation and admin enforcement for tenant requests: pure functions, plain values in,
//! plain values out (no I/O, no async, no client).
//!
//! The same functions serve the reconcilers (the `Accepted=False` condition message) and the
//! gateway (422 field errors): every refusal is a [`PolicyViolation`] carrying the field path
//! the tenant has to change and the exact message shown to them.
//!
//! - [`mod@nacuuid`]: names of the Velero objects made for a tenant object (upstream's
//!   `GenerateNacObjectUUID`).
//! - [`origin`]: the labels and annotations tying a Velero object to its tenant object, and
//!   reading them back (sync, adoption, garbage collection).
//! - [`config`]: the administrator's policy, from the DataProtectionApplication's
//!   `spec.nonAdmin` and from NAC's own ConfigMap (format documented there), resolved per
//!   namespace into an [`EffectivePolicy`].
//! - [`backup`], [`restore`], [`bsl`]: validation of NonAdminBackup / NonAdminRestore /
//!   NonAdminBackupStorageLocation specs and the Velero specs built from them.
//! - [`exclusions`]: the resource kinds no tenant backup or restore may ever carry.
//! - [`credentials`]: credential files that would borrow the Velero pod's cloud identity.
//! - [`endpoints`]: which URLs a tenant storage location may name and which addresses NAC may
//!   connect to when it downloads from one (the `storageEndpoints` allow-list).
//! - [`schedule`]: NonAdminSchedule cron expressions (validity, next run).
//! - [`storage_location`]: whether a NonAdminBackup may use the storage location it names.
//! - [`pool`]: the shared backup pool's routing (which BackupEntry is a namespace's, where a
//!   backup without a storage location goes).

pub mod backup;
pub mod bsl;
pub mod config;
pub mod credentials;
pub mod endpoints;
pub mod exclusions;
pub mod field_path;
pub mod nacuuid;
pub mod pool;
pub mod restore;
pub mod rules;
pub mod schedule;
pub mod selector;
pub mod storage_location;

pub use backup::{build_velero_backup_spec, validate_backup_spec};
pub use bsl::{build_velero_bsl_spec, check_bsl_credential, validate_bsl_spec, velero_bsl_prefix};
pub use config::{EffectivePolicy, GlobalSettings, NacPolicy, PolicyConfigError};
pub use credentials::{PodIdentityMarker, credential_borrows_pod_identity, pod_identity_markers};
pub use nacuuid::nacuuid;
pub use pool::PoolRoute;
pub use restore::{build_velero_restore_spec, check_restore_source, validate_restore_spec};
pub use rules::{Maximum, SpecRules};
pub use schedule::{next_run, validate_cron};
pub use storage_location::{location_not_found, usable_location};

/// Why a request was refused, in machine-readable form (the gateway maps it to a problem
/// type; the message is what people read).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ViolationReason {
    /// The field can never be used by a tenant (other namespaces, cluster resources, ...).
    Restricted,
    /// The value differs from the one the administrator enforces.
    Enforced,
    /// The value is above the administrator's maximum.
    AboveMaximum,
    /// The value is not in the administrator's allow-list.
    NotAllowed,
    /// A required value is missing.
    Missing,
    /// The value is malformed or refers to something that does not exist or is not ready.
    Invalid,
}

/// One reason a tenant's request is refused.
///
/// `Display` is the exact user-facing message (it becomes the `Accepted=False` condition
/// message and the gateway's field error), so it always names the field to change.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PolicyViolation {
    /// Path of the offending field, e.g. `spec.backupSpec.includedNamespaces`.
    pub field: String,
    /// The user-facing message.
    pub message: String,
    /// Machine-readable category.
    pub reason: ViolationReason,
}

impl PolicyViolation {
    /// A violation of `field` with `message`.
    pub fn new(
        reason: ViolationReason,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
            reason,
        }
    }
}

/// Joins violations into one condition message, in the order they were found.
///
/// Upstream stops at the first error; listing all of them spares the tenant a
/// fix-one-resubmit-find-the-next loop.
pub fn violations_message(violations: &[PolicyViolation]) -> String {
    violations
        .iter()
        .map(|violation| violation.message.as_str())
        .collect::<Vec<_>>()
        .join("; ")
}

/// `Ok(())` when nothing was found, otherwise all the violations.
pub(crate) fn into_result(violations: Vec<PolicyViolation>) -> Result<(), Vec<PolicyViolation>> {
    if violations.is_empty() {
        Ok(())
    } else {
        Err(violations)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn display_is_the_user_facing_message() {
        let violation = PolicyViolation::new(
            ViolationReason::Restricted,
            "spec.backupSpec.excludedNamespaces",
            "NonAdminBackup spec.backupSpec.excludedNamespaces is restricted",
        );
        assert_eq!(
            violation.to_string(),
            "NonAdminBackup spec.backupSpec.excludedNamespaces is restricted"
        );
        assert_eq!(violation.field, "spec.backupSpec.excludedNamespaces");
    }

    #[test]
    fn messages_are_joined_in_order() {
        let first = PolicyViolation::new(ViolationReason::Invalid, "a", "first");
        let second = PolicyViolation::new(ViolationReason::Invalid, "b", "second");
        assert_eq!(violations_message(&[first, second]), "first; second");
        assert_eq!(violations_message(&[]), "");
    }

    #[test]
    fn into_result_is_ok_only_without_violations() {
        assert_eq!(into_result(Vec::new()), Ok(()));
        let violation = PolicyViolation::new(ViolationReason::Missing, "x", "x is not set");
        assert_eq!(into_result(vec![violation.clone()]), Err(vec![violation]));
    }
}
