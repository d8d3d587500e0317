//! The shared backup pool's routing rules (seed 001), the same for the controllers (where a
//! backup without a storage location goes) and the gateway (what a tenant sees of its place in
//! the pool): which BackupEntry is a namespace's, how entries are selected by namespace UID,
//! and where a backup is routed given that entry.
//!
//! An entry belongs to a namespace by name *and* UID: an entry of the same name but another UID
//! was made for an earlier namespace of that name and is never inherited. The UID an entry
//! records is the namespace's full UID, or (for an entry rebuilt from a bucket listing) at
//! least [`UID_DIGITS`] of its leading hex digits.

use std::cmp::Reverse;

use crate::api::nonadmin::{BackupEntry, ENTRY_NAMESPACE_UID_LABEL, TENANT_PROVISIONING_MESSAGE};

/// Hex digits of the namespace UID in a new entry's name (and the fewest an entry may record).
pub const UID_DIGITS: usize = 5;

/// How a backup without a storage location is routed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PoolRoute {
    /// No BackupBucket exists: Velero's default location, as without the pool.
    NotConfigured,
    /// The namespace's entry is Ready: its Velero BSL.
    Location(String),
    /// The pool is configured but the entry is not ready: wait, with this message.
    Wait(String),
}

/// Where a backup of a namespace without a storage location goes, given whether any
/// BackupBucket exists and the namespace's entry (see [`namespace_entry`]).
pub fn route(pool_configured: bool, entry: Option<&BackupEntry>) -> PoolRoute {
    if !pool_configured {
        return PoolRoute::NotConfigured;
    }
    let Some(entry) = entry else {
        return PoolRoute::Wait(format!(
            "waiting for backup storage: {TENANT_PROVISIONING_MESSAGE}"
        ));
    };
    match entry.ready_location() {
        Some(location) => PoolRoute::Location(location.to_owned()),
        None => PoolRoute::Wait(format!(
            "waiting for backup storage: {}",
            entry.tenant_view().message
        )),
    }
}

/// The UID's hex digits, lower case.
pub fn uid_hex(uid: &str) -> String {
    uid.chars()
        .filter(char::is_ascii_hexdigit)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Whether an entry's recorded UID (full, or leading hex digits for an entry rebuilt from a
/// listing) is the namespace UID `uid`.
pub fn uid_matches(recorded: &str, uid: &str) -> bool {
    if recorded.is_empty() {
        return false;
    }
    if recorded == uid {
        return true;
    }
    let recorded = uid_hex(recorded);
    recorded.len() >= UID_DIGITS && uid_hex(uid).starts_with(&recorded)
}

/// The value of an entry's [`ENTRY_NAMESPACE_UID_LABEL`] for the recorded namespace UID `uid`
/// (Velero's label-value rule, so writer and reader agree).
pub fn uid_label_value(uid: &str) -> String {
    crate::api::velero::labels::valid_label_value(uid)
}

/// The label selector of the entries recorded for namespace UID `uid` (a superset of the
/// namespace's own: filter with [`belongs_to`]).
pub fn entry_selector(uid: &str) -> String {
    format!("{ENTRY_NAMESPACE_UID_LABEL}={}", uid_label_value(uid))
}

/// Whether `entry` is the entry of namespace `namespace` with UID `uid` (`None`: the namespace
/// does not exist now, so any entry kept for that name).
pub fn belongs_to(entry: &BackupEntry, namespace: &str, uid: Option<&str>) -> bool {
    entry.spec.namespace == namespace
        && uid.is_none_or(|uid| uid_matches(&entry.spec.namespace_uid, uid))
}

/// The entry of namespace `namespace` (UID `uid`, `None` when the namespace does not exist now)
/// among `entries` (see [`belongs_to`]). Of several, the newest (then by name).
pub fn namespace_entry<'a>(
    namespace: &str,
    uid: Option<&str>,
    entries: &'a [BackupEntry],
) -> Option<&'a BackupEntry> {
    entries
        .iter()
        .filter(|entry| belongs_to(entry, namespace, uid))
        .min_by_key(|entry| {
            (
                Reverse(entry.metadata.creation_timestamp.as_ref().map(|t| t.0)),
                entry.metadata.name.clone(),
            )
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const UID: &str = "1a2b3c4d-0000-4000-8000-000000000001";
    const OLD_UID: &str = "9f8e7d6c-0000-4000-8000-000000000002";

    fn entry(name: &str, namespace: &str, uid: &str, created: &str, status: Value) -> BackupEntry {
        serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "BackupEntry",
            "metadata": {"name": name, "creationTimestamp": created,
                         "labels": {ENTRY_NAMESPACE_UID_LABEL: uid_label_value(uid)}},
            "spec": {"namespace": namespace, "namespaceUID": uid, "bucketName": "pool-1",
                     "prefix": name},
            "status": status
        }))
        .unwrap()
    }

    fn name(entry: Option<&BackupEntry>) -> Option<&str> {
        entry.and_then(|e| e.metadata.name.as_deref())
    }

    #[test]
    fn recorded_uids_match_in_full_or_by_leading_digits() {
        assert!(uid_matches("1a2b3", UID));
        assert!(uid_matches("1A2B3C", UID));
        assert!(uid_matches(UID, UID));
        assert!(!uid_matches("1a2b", UID));
        assert!(!uid_matches("9f8e7", UID));
        assert!(!uid_matches("", UID));
        assert_eq!(uid_hex("1A-2b"), "1a2b");
    }

    #[test]
    fn the_uid_label_follows_velero_and_selects_entries() {
        assert_eq!(uid_label_value(UID), UID);
        assert_eq!(uid_label_value(&"x".repeat(80)).len(), 63);
        assert_eq!(
            entry_selector(UID),
            format!("oadp.openshift.io/backup-entry-namespace-uid={UID}")
        );
    }

    #[test]
    fn an_earlier_namespace_of_the_same_name_is_not_inherited() {
        let old = entry(
            "team-a--9f8e7",
            "team-a",
            OLD_UID,
            "2024-01-01T00:00:00Z",
            json!({"phase": "NamespaceDeleted"}),
        );
        let new = entry(
            "team-a--1a2b3",
            "team-a",
            UID,
            "2025-01-01T00:00:00Z",
            json!({"phase": "Ready"}),
        );
        assert!(!belongs_to(&old, "team-a", Some(UID)));
        assert!(belongs_to(&new, "team-a", Some(UID)));
        assert_eq!(
            namespace_entry("team-a", Some(UID), std::slice::from_ref(&old)),
            None
        );
        let both = [old.clone(), new.clone()];
        assert_eq!(
            name(namespace_entry("team-a", Some(UID), &both)),
            Some("team-a--1a2b3")
        );
        // A namespace that does not exist now: the newest entry kept for its name.
        assert!(belongs_to(&old, "team-a", None));
        assert_eq!(
            name(namespace_entry("team-a", None, &both)),
            Some("team-a--1a2b3")
        );
        // Another namespace's entry is never taken, whatever UID it records.
        let foreign = entry(
            "team-b--1a2b3",
            "team-b",
            UID,
            "2026-01-01T00:00:00Z",
            json!({"phase": "Ready"}),
        );
        assert!(!belongs_to(&foreign, "team-a", Some(UID)));
        assert_eq!(namespace_entry("team-a", Some(UID), &[foreign]), None);
    }

    #[test]
    fn an_entry_rebuilt_from_a_listing_belongs_by_its_digits() {
        let rebuilt = entry(
            "team-a--1a2b3",
            "team-a",
            "1a2b3",
            "2025-01-01T00:00:00Z",
            json!({}),
        );
        assert!(belongs_to(&rebuilt, "team-a", Some(UID)));
        assert!(!belongs_to(&rebuilt, "team-a", Some(OLD_UID)));
    }

    #[test]
    fn routes_follow_the_pool_and_the_entry() {
        let ready = entry(
            "team-a--1a2b3",
            "team-a",
            UID,
            "2025-01-01T00:00:00Z",
            json!({"phase": "Ready",
                   "veleroBackupStorageLocation": {"name": "team-a--1a2b3"}}),
        );
        assert_eq!(
            route(true, Some(&ready)),
            PoolRoute::Location("team-a--1a2b3".into())
        );
        assert_eq!(route(false, Some(&ready)), PoolRoute::NotConfigured);
        assert_eq!(route(false, None), PoolRoute::NotConfigured);
        assert_eq!(
            route(true, None),
            PoolRoute::Wait(
                "waiting for backup storage: the namespace's backup storage in the shared pool is being set up"
                    .into()
            )
        );
        let waiting = entry(
            "team-a--1a2b3",
            "team-a",
            UID,
            "2025-01-01T00:00:00Z",
            json!({"phase": "WaitingForBucket"}),
        );
        assert_eq!(
            route(true, Some(&waiting)),
            PoolRoute::Wait(format!(
                "waiting for backup storage: {}",
                crate::api::nonadmin::TENANT_WAITING_MESSAGE
            ))
        );
    }
}
