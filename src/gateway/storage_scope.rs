//! Which storage location an artifact download belongs to, and so which [`FetchScope`] it is
//! fetched under (issue 17, finding 2): a NonAdminBackup's artifacts come from its Velero
//! Backup's storage location, a NonAdminRestore's from the location of the backup it restored.
//! Read with the gateway's own client (Velero objects live in the OADP namespace, which
//! tenants cannot read); the decision itself is [`fetch_scope`], a pure function of the
//! Velero BackupStorageLocation and the administrator's `storageEndpoints`.

use kube::Api;

use crate::api::nonadmin::{NonAdminBackup, NonAdminRestore};
use crate::api::velero::{Backup, BackupStorageLocation, DownloadTargetKind, Restore};
use crate::gateway::error::GatewayError;
use crate::manifest::fetch::{FetchScope, StorageEndpoints, fetch_scope};

fn upstream(error: kube::Error) -> GatewayError {
    tracing::warn!(error = %error, "reading a download's storage location failed");
    GatewayError::Upstream
}

/// The scope for downloading `target` of the tenant object `name` in `namespace`. The Velero
/// objects are found through the tenant object's status (written by NAC's controller only) in
/// the namespace it records; a chain that breaks (an object gone) gives a scope that fetches
/// nothing.
pub async fn download_scope(
    reader: &kube::Client,
    namespace: &str,
    name: &str,
    target: &DownloadTargetKind,
    rules: &StorageEndpoints,
) -> Result<FetchScope, GatewayError> {
    let nowhere = || Ok(fetch_scope(None, rules));
    let backup_ref = if target.as_str().starts_with("Restore") {
        let restore = Api::<NonAdminRestore>::namespaced(reader.clone(), namespace)
            .get_opt(name)
            .await
            .map_err(upstream)?;
        let Some((velero_namespace, velero_name)) = restore
            .and_then(|r| r.status)
            .and_then(|s| s.velero_restore)
            .and_then(|v| Some((v.namespace?, v.name?)))
        else {
            return nowhere();
        };
        let velero = Api::<Restore>::namespaced(reader.clone(), &velero_namespace)
            .get_opt(&velero_name)
            .await
            .map_err(upstream)?;
        velero
            .and_then(|r| r.spec.backup_name)
            .map(|backup| (velero_namespace, backup))
    } else {
        let backup = Api::<NonAdminBackup>::namespaced(reader.clone(), namespace)
            .get_opt(name)
            .await
            .map_err(upstream)?;
        backup
            .and_then(|b| b.status)
            .and_then(|s| s.velero_backup)
            .and_then(|v| Some((v.namespace?, v.name?)))
    };
    let Some((velero_namespace, backup_name)) =
        backup_ref.filter(|(ns, n)| !ns.is_empty() && !n.is_empty())
    else {
        return nowhere();
    };
    let backup = Api::<Backup>::namespaced(reader.clone(), &velero_namespace)
        .get_opt(&backup_name)
        .await
        .map_err(upstream)?;
    let Some(backup) = backup else {
        return nowhere();
    };
    location_scope(reader, &velero_namespace, &backup, rules).await
}

/// The scope of downloads for the Velero `backup`'s storage location in `velero_namespace`
/// (none named: Velero's default location, the administrator's).
pub async fn location_scope(
    reader: &kube::Client,
    velero_namespace: &str,
    backup: &Backup,
    rules: &StorageEndpoints,
) -> Result<FetchScope, GatewayError> {
    let Some(location_name) = backup
        .spec
        .storage_location
        .clone()
        .filter(|n| !n.is_empty())
    else {
        return Ok(FetchScope::Trusted);
    };
    let location = Api::<BackupStorageLocation>::namespaced(reader.clone(), velero_namespace)
        .get_opt(&location_name)
        .await
        .map_err(upstream)?;
    Ok(fetch_scope(location.as_ref(), rules))
}
