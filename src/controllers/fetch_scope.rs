//! The [`FetchScope`] of a Velero Backup's artifacts for the controllers (the deletion-action
//! executor downloads backup tarballs): its storage location's, decided by the pure
//! [`fetch_scope`] from the Velero BackupStorageLocation and the live `storageEndpoints` rule
//! (issue 17: a tenant location's downloads stay at its own endpoint).

use kube::Api;

use super::Context;
use crate::api::velero::{Backup, BackupStorageLocation};
use crate::manifest::fetch::{EndpointRules, FetchScope, fetch_scope};

impl Context {
    /// The scope for downloading `backup`'s artifacts. A backup without a storage location
    /// is on Velero's default (the administrator's); a location that cannot be read gives a
    /// scope that fetches nothing (logged).
    pub async fn fetch_scope(&self, backup: &Backup) -> FetchScope {
        let rules = self.policy.storage_endpoints();
        let Some(name) = backup
            .spec
            .storage_location
            .as_deref()
            .filter(|name| !name.is_empty())
        else {
            return FetchScope::Trusted;
        };
        let namespace = backup
            .metadata
            .namespace
            .as_deref()
            .unwrap_or(&self.oadp_namespace);
        let locations: Api<BackupStorageLocation> = Api::namespaced(self.client.clone(), namespace);
        match locations.get_opt(name).await {
            Ok(location) => fetch_scope(location.as_ref(), &rules),
            Err(error) => {
                tracing::warn!(error = %error, location = %name, "cannot read a backup's storage location; its artifacts are not downloaded");
                fetch_scope(None, &rules)
            }
        }
    }
}
