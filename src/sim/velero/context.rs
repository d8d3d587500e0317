//! What the simulator's control loop ([`super::engine`]) shares with the backup and restore runs
//! it starts ([`super::backup_run`], [`super::restore_run`]): the client, the options, the clock,
//! the Velero objects of the simulator's namespace and each location's object store, and the
//! error every step reports. The loop keeps its own bookkeeping apart, so a run never reaches
//! back into it.
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams};
use serde_json::Value;

use super::clock::SimClock;
use super::options::SimulatorOptions;
use super::storage::{AwsEnvironment, BackupStore, StorageError};
use crate::api::velero::{
    Backup, BackupStorageLocation, DeleteBackupRequest, DownloadRequest, Restore, Schedule,
};

/// Failures of one simulator pass; the loop logs them and tries again.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("object storage: {0}")]
    Storage(#[from] StorageError),
    #[error("{0}")]
    Other(String),
}

/// A typed object as JSON (status times, annotations).
pub fn as_json<T: serde::Serialize>(object: &T) -> Value {
    serde_json::to_value(object).unwrap_or(Value::Null)
}

/// The cluster, the settings and the time a simulated Velero works with.
pub(super) struct SimContext {
    pub(super) client: kube::Client,
    pub(super) options: SimulatorOptions,
    pub(super) clock: SimClock,
}

impl SimContext {
    /// Objects of kind `K` in the simulator's namespace (where Velero keeps its own).
    fn namespaced<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.options.namespace)
    }

    /// Backups in the simulator's namespace.
    pub(super) fn backups(&self) -> Api<Backup> {
        self.namespaced()
    }

    /// Restores in the simulator's namespace.
    pub(super) fn restores(&self) -> Api<Restore> {
        self.namespaced()
    }

    /// BackupStorageLocations in the simulator's namespace.
    pub(super) fn locations(&self) -> Api<BackupStorageLocation> {
        self.namespaced()
    }

    /// DeleteBackupRequests in the simulator's namespace.
    pub(super) fn delete_requests(&self) -> Api<DeleteBackupRequest> {
        self.namespaced()
    }

    /// DownloadRequests in the simulator's namespace.
    pub(super) fn download_requests(&self) -> Api<DownloadRequest> {
        self.namespaced()
    }

    /// Schedules in the simulator's namespace.
    pub(super) fn schedules(&self) -> Api<Schedule> {
        self.namespaced()
    }

    /// Merge-patches a Velero object (Backup, Restore, Schedule, BSL and DownloadRequest have
    /// no status subresource in Velero's CRDs: status is written through the object).
    pub(super) async fn patch<K>(
        &self,
        api: &Api<K>,
        name: &str,
        patch: Value,
    ) -> Result<(), SimError>
    where
        K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    {
        api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await?;
        Ok(())
    }

    /// The object store of a location, with its credential Secret resolved.
    pub(super) async fn store_for(
        &self,
        location: &BackupStorageLocation,
    ) -> Result<BackupStore, SimError> {
        let credentials = self.credentials(location).await?;
        let aws = AwsEnvironment {
            region: self.options.aws_region.clone(),
            s3_endpoint: self.options.aws_s3_endpoint.clone(),
        };
        Ok(BackupStore::for_location_in(
            &location.spec,
            credentials.as_deref(),
            &self.options.local_root,
            &aws,
        )
        .await?)
    }

    /// The text of a location's credential, if its Secret exists.
    async fn credentials(
        &self,
        location: &BackupStorageLocation,
    ) -> Result<Option<String>, SimError> {
        // The BSL's own credential, else OADP's default `cloud-credentials` Secret (key `cloud`).
        let (name, key) = match &location.spec.credential {
            Some(selector) => (selector.name.clone(), selector.key.clone()),
            None => ("cloud-credentials".to_string(), "cloud".to_string()),
        };
        let secrets: Api<Secret> = self.namespaced();
        let Some(secret) = secrets.get_opt(&name).await? else {
            return Ok(None);
        };
        Ok(secret
            .data
            .and_then(|d| d.get(&key).cloned())
            .map(|bytes| String::from_utf8_lossy(&bytes.0).into_owned()))
    }

    /// The location named `name`, if it exists.
    pub(super) async fn location(
        &self,
        name: &str,
    ) -> Result<Option<BackupStorageLocation>, SimError> {
        Ok(self.locations().get_opt(name).await?)
    }
}
