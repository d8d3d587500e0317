//! The shared backup pool through the service: read with the gateway's own identity, only after the caller's access check.

use kube::api::{Api, ListParams};

use crate::api::nonadmin::{BackupBucket, BackupEntry};
use crate::gateway::auth::Caller;
use crate::gateway::error::GatewayError;
use crate::gateway::resources::TenantResource;
use crate::gateway::service::GatewayService;
use crate::policy::bsl::PoolBucketRef;

use crate::gateway::shared_storage::*;

/// A failed read of the pool: logged (the cause is the administrator's business), answered as
/// temporary without the API server's text.
fn pool_read_failed(error: &kube::Error, what: &str) -> GatewayError {
    tracing::warn!(error = %error, what, "cannot read the shared backup pool");
    GatewayError::Unavailable(
        "the shared backup pool cannot be read right now; retry shortly".into(),
    )
}

/// Whether a read failed because the pool's CRD is not installed (no pool on this cluster).
fn not_served(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 404)
}

impl GatewayService {
    /// Whether the cluster has at least one BackupBucket (read as the gateway).
    async fn pool_configured(&self) -> Result<bool, GatewayError> {
        let buckets: Api<BackupBucket> = Api::all(self.reader().clone());
        match buckets.list_metadata(&ListParams::default().limit(1)).await {
            Ok(list) => Ok(!list.items.is_empty()),
            Err(error) if not_served(&error) => Ok(false),
            Err(error) => Err(pool_read_failed(&error, "BackupBuckets")),
        }
    }

    /// The pool's buckets (provider and bucket), read as the gateway: a tenant's own storage
    /// location may not use one of them.
    pub(super) async fn pool_buckets(&self) -> Result<Vec<PoolBucketRef>, GatewayError> {
        let buckets: Api<BackupBucket> = Api::all(self.reader().clone());
        match buckets.list(&ListParams::default()).await {
            Ok(list) => Ok(list
                .items
                .into_iter()
                .map(|bucket| PoolBucketRef {
                    provider: bucket.spec.provider,
                    bucket: bucket.spec.bucket,
                })
                .collect()),
            Err(error) if not_served(&error) => Ok(Vec::new()),
            Err(error) => Err(pool_read_failed(&error, "BackupBuckets")),
        }
    }

    /// The entries that may be `namespace`'s (UID `uid`): selected by the UID label when the
    /// namespace exists, else every entry (only the rare caller allowed in a namespace that
    /// does not exist gets here; the pure part keeps those of that name).
    async fn candidate_entries(&self, uid: Option<&str>) -> Result<Vec<BackupEntry>, GatewayError> {
        let entries: Api<BackupEntry> = Api::all(self.reader().clone());
        let params = match uid {
            Some(uid) => ListParams::default().labels(&crate::policy::pool::entry_selector(uid)),
            None => ListParams::default(),
        };
        match entries.list(&params).await {
            Ok(list) => Ok(list.items),
            Err(error) if not_served(&error) => Ok(Vec::new()),
            Err(error) => Err(pool_read_failed(&error, "BackupEntries")),
        }
    }

    /// The namespace's place in the shared backup pool, authorized like listing its
    /// NonAdminBackups (the same 403 whether or not the namespace exists).
    pub async fn shared_storage(
        &self,
        caller: &Caller,
        namespace: &str,
    ) -> Result<SharedStorage, GatewayError> {
        let authorized = self
            .authorize(caller, "list", TenantResource::Backups, namespace, None)
            .await?;
        self.ready()?;
        if !self.pool_configured().await? {
            return Ok(SharedStorage::not_configured());
        }
        let uid = self
            .data
            .namespace(&authorized)
            .and_then(|ns| ns.metadata.uid.clone());
        let entries = self.candidate_entries(uid.as_deref()).await?;
        Ok(shared_storage_of(true, namespace, uid.as_deref(), &entries))
    }
}
