//! The tenant's view of the administrator's shared backup pool (seed 001): whether the cluster
//! has a pool at all and, for one namespace, the state of its place in it — exactly
//! [`BackupEntry::tenant_view`], never a bucket, provider, prefix or another namespace's name —
//! and the pool's buckets, which a tenant's own storage location may not use.
//!
//! BackupBuckets and BackupEntries are cluster-scoped and never readable by tenants: the
//! gateway reads them with its own identity, only after the caller's access check (the view is
//! authorized like listing NonAdminBackups in the namespace; the reads are in
//! `service/shared_storage.rs`).

use serde::Serialize;

use crate::api::nonadmin::{
    BackupEntry, TENANT_PROVISIONING_MESSAGE, TenantStorageState, TenantStorageView,
};
use crate::policy::pool::namespace_entry;

/// The state of a namespace's place in the shared backup pool, as its tenants see it.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, utoipa::ToSchema, async_graphql::Enum,
)]
pub enum SharedStorageState {
    /// Being set up (no bucket assigned yet, or the location is not validated yet).
    Provisioning,
    /// Every shared bucket is full; backups wait until an administrator adds room.
    WaitingForCapacity,
    /// Backups without a storage location of their own go here.
    Ready,
    /// The shared storage cannot be reached right now; backups wait.
    Unavailable,
    /// The namespace was deleted; its backups are kept until `purgeAfter`.
    Retained,
    /// The backups are being deleted.
    Purging,
}

impl From<TenantStorageState> for SharedStorageState {
    fn from(state: TenantStorageState) -> Self {
        match state {
            TenantStorageState::Provisioning => SharedStorageState::Provisioning,
            TenantStorageState::WaitingForCapacity => SharedStorageState::WaitingForCapacity,
            TenantStorageState::Ready => SharedStorageState::Ready,
            TenantStorageState::Unavailable => SharedStorageState::Unavailable,
            TenantStorageState::Retained => SharedStorageState::Retained,
            TenantStorageState::Purging => SharedStorageState::Purging,
        }
    }
}

/// A namespace's place in the administrator's shared backup pool, as its tenants may see it:
/// `configured=false` (and nothing else) when the cluster has no BackupBucket at all. Never
/// names a bucket, provider, prefix or another namespace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema, async_graphql::SimpleObject)]
#[serde(rename_all = "camelCase")]
pub struct SharedStorage {
    /// Whether the cluster has a shared backup pool (at least one BackupBucket). Without one,
    /// backups without a storage location go to the administrator's default location.
    pub configured: bool,
    /// The state of the namespace's place in the pool (when configured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<SharedStorageState>,
    /// What the state means for the namespace's backups (when configured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the backups of a deleted namespace will be deleted (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purge_after: Option<String>,
}

impl SharedStorage {
    /// The answer on a cluster without a pool.
    pub fn not_configured() -> Self {
        SharedStorage {
            configured: false,
            state: None,
            message: None,
            purge_after: None,
        }
    }

    /// The answer for a namespace whose entry shows `view`.
    pub fn of_view(view: TenantStorageView) -> Self {
        SharedStorage {
            configured: true,
            state: Some(view.state.into()),
            message: Some(view.message),
            purge_after: view.purge_after.map(|at| at.0.to_string()),
        }
    }
}

/// What the tenants of `namespace` see of the pool: not configured without a bucket; else its
/// entry's tenant view, or Provisioning while NAC has not made the entry yet.
pub fn shared_storage_of(
    pool_configured: bool,
    namespace: &str,
    uid: Option<&str>,
    entries: &[BackupEntry],
) -> SharedStorage {
    if !pool_configured {
        return SharedStorage::not_configured();
    }
    match namespace_entry(namespace, uid, entries) {
        Some(entry) => SharedStorage::of_view(entry.tenant_view()),
        None => SharedStorage::of_view(TenantStorageView {
            state: TenantStorageState::Provisioning,
            message: TENANT_PROVISIONING_MESSAGE.to_owned(),
            purge_after: None,
        }),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::api::nonadmin::ENTRY_NAMESPACE_UID_LABEL;
    use serde_json::json;

    const UID: &str = "1a2b3c4d-0000-4000-8000-000000000001";
    const OLD_UID: &str = "9f8e7d6c-0000-4000-8000-000000000002";

    fn entry(
        name: &str,
        namespace: &str,
        uid: &str,
        created: &str,
        status: serde_json::Value,
    ) -> BackupEntry {
        serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "BackupEntry",
            "metadata": {"name": name, "creationTimestamp": created,
                         "labels": {ENTRY_NAMESPACE_UID_LABEL: uid}},
            "spec": {"namespace": namespace, "namespaceUID": uid, "bucketName": "secret-pool-1",
                     "prefix": name},
            "status": status
        }))
        .unwrap()
    }

    fn text(answer: &SharedStorage) -> String {
        serde_json::to_string(answer).unwrap()
    }

    #[test]
    fn no_pool_says_only_not_configured() {
        let entries = [entry(
            "team-a--1a2b3",
            "team-a",
            UID,
            "2025-01-01T00:00:00Z",
            json!({"phase": "Ready"}),
        )];
        let answer = shared_storage_of(false, "team-a", Some(UID), &entries);
        assert_eq!(answer, SharedStorage::not_configured());
        assert_eq!(
            serde_json::to_value(&answer).unwrap(),
            json!({"configured": false})
        );
    }

    #[test]
    fn no_entry_yet_is_provisioning() {
        let answer = shared_storage_of(true, "team-a", Some(UID), &[]);
        assert!(answer.configured);
        assert_eq!(answer.state, Some(SharedStorageState::Provisioning));
        assert_eq!(answer.message.as_deref(), Some(TENANT_PROVISIONING_MESSAGE));
        assert_eq!(answer.purge_after, None);
    }

    #[test]
    fn the_namespace_entry_is_its_tenant_view_and_names_nothing() {
        let ready = entry(
            "team-a--1a2b3",
            "team-a",
            UID,
            "2025-01-01T00:00:00Z",
            json!({"phase": "Ready", "veleroBackupStorageLocation": {"name": "team-a--1a2b3",
                   "status": {"phase": "Available"}}}),
        );
        let other = entry(
            "team-b--77777",
            "team-b",
            "77777777-0000-4000-8000-000000000003",
            "2025-01-01T00:00:00Z",
            json!({"phase": "WaitingForBucket"}),
        );
        let entries = [other, ready.clone()];
        let answer = shared_storage_of(true, "team-a", Some(UID), &entries);
        let view = ready.tenant_view();
        assert_eq!(answer.state, Some(SharedStorageState::Ready));
        assert_eq!(answer.message.as_deref(), Some(view.message.as_str()));
        let wire = text(&answer);
        for secret in ["secret-pool-1", "team-a--1a2b3", "team-b", UID] {
            assert!(!wire.contains(secret), "{secret} in {wire}");
        }
    }

    #[test]
    fn each_tenant_state_maps() {
        let cases = [
            (
                json!({"phase": "WaitingForBucket"}),
                SharedStorageState::WaitingForCapacity,
            ),
            (
                json!({"phase": "Assigned"}),
                SharedStorageState::Provisioning,
            ),
            (
                json!({"phase": "Assigned", "veleroBackupStorageLocation": {"name": "x",
                "status": {"phase": "Unavailable", "message": "bucket secret-pool-1 missing"}}}),
                SharedStorageState::Unavailable,
            ),
            (
                json!({"phase": "Purging", "purgeAfter": "2030-01-01T00:00:00Z"}),
                SharedStorageState::Purging,
            ),
            (json!({}), SharedStorageState::Provisioning),
        ];
        for (status, expected) in cases {
            let e = entry(
                "team-a--1a2b3",
                "team-a",
                UID,
                "2025-01-01T00:00:00Z",
                status,
            );
            let answer = shared_storage_of(true, "team-a", Some(UID), &[e]);
            assert_eq!(answer.state, Some(expected));
            assert!(
                !text(&answer).contains("secret-pool-1"),
                "{}",
                text(&answer)
            );
        }
    }

    #[test]
    fn a_retained_entry_shows_when_it_is_purged() {
        let e = entry(
            "team-a--1a2b3",
            "team-a",
            UID,
            "2025-01-01T00:00:00Z",
            json!({"phase": "NamespaceDeleted", "purgeAfter": "2030-01-01T00:00:00Z"}),
        );
        let answer = shared_storage_of(true, "team-a", None, &[e]);
        assert_eq!(answer.state, Some(SharedStorageState::Retained));
        assert_eq!(answer.purge_after.as_deref(), Some("2030-01-01T00:00:00Z"));
        assert_eq!(
            serde_json::to_value(&answer).unwrap()["purgeAfter"],
            "2030-01-01T00:00:00Z"
        );
    }

    #[test]
    fn an_earlier_namespace_of_the_same_name_is_not_inherited() {
        let old = entry(
            "team-a--9f8e7",
            "team-a",
            OLD_UID,
            "2024-01-01T00:00:00Z",
            json!({"phase": "NamespaceDeleted", "purgeAfter": "2030-01-01T00:00:00Z"}),
        );
        // The live namespace (new UID) has no entry yet: Provisioning, not the old one's state.
        let answer = shared_storage_of(true, "team-a", Some(UID), std::slice::from_ref(&old));
        assert_eq!(answer.state, Some(SharedStorageState::Provisioning));
        assert_eq!(answer.purge_after, None);
        // With its own entry, that one.
        let new = entry(
            "team-a--1a2b3",
            "team-a",
            UID,
            "2025-01-01T00:00:00Z",
            json!({"phase": "Ready"}),
        );
        let entries = [old.clone(), new];
        assert_eq!(
            namespace_entry("team-a", Some(UID), &entries).and_then(|e| e.metadata.name.as_deref()),
            Some("team-a--1a2b3")
        );
        // A namespace that does not exist now: the newest entry kept for its name.
        let gone = entry(
            "team-a--1a2b3",
            "team-a",
            UID,
            "2025-01-01T00:00:00Z",
            json!({"phase": "NamespaceDeleted", "purgeAfter": "2031-01-01T00:00:00Z"}),
        );
        let entries = [old, gone];
        assert_eq!(
            namespace_entry("team-a", None, &entries).and_then(|e| e.metadata.name.as_deref()),
            Some("team-a--1a2b3")
        );
        // Another namespace's entry is never taken, whatever its UID label says.
        let foreign = entry(
            "team-b--1a2b3",
            "team-b",
            UID,
            "2026-01-01T00:00:00Z",
            json!({"phase": "Ready"}),
        );
        assert!(namespace_entry("team-a", Some(UID), &[foreign]).is_none());
    }

    #[test]
    fn the_wire_state_names_are_the_tenant_view_names() {
        for state in [
            TenantStorageState::Provisioning,
            TenantStorageState::WaitingForCapacity,
            TenantStorageState::Ready,
            TenantStorageState::Unavailable,
            TenantStorageState::Retained,
            TenantStorageState::Purging,
        ] {
            assert_eq!(
                serde_json::to_value(SharedStorageState::from(state)).unwrap(),
                serde_json::to_value(state).unwrap()
            );
        }
    }
}
