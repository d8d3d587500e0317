//! DataLoaders for the fields that would otherwise ask once per parent object: a restore's
//! backup and a backup's restores. Each loader belongs to one request and one caller, and
//! loads through [`GatewayService::list`] — one access check per namespace and resource, the
//! same one a REST list makes — never around it. A namespace the caller may not list answers
//! every key in it with that refusal.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use async_graphql::dataloader::Loader;

use crate::api::nonadmin::{NonAdminBackup, NonAdminRestore};
use crate::gateway::auth::Caller;
use crate::gateway::error::GatewayError;
use crate::gateway::service::{GatewayService, ListQuery, MAX_LIMIT};
use crate::gateway::store::Cached;

/// An object by namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl ObjectKey {
    /// The key of `name` in `namespace`.
    pub fn new(namespace: &str, name: &str) -> Self {
        ObjectKey {
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }
}

/// Every `K` in `namespace` the caller may list, page by page through the service.
pub async fn list_all<K: Cached>(
    service: &GatewayService,
    caller: &Caller,
    namespace: &str,
) -> Result<Vec<Arc<K>>, GatewayError> {
    let mut out = Vec::new();
    let mut query = ListQuery {
        limit: Some(MAX_LIMIT),
        ..ListQuery::default()
    };
    loop {
        let page = service.list::<K>(caller, namespace, &query).await?;
        out.extend(page.items);
        match page.continue_token {
            Some(token) => query.continue_token = Some(token),
            None => return Ok(out),
        }
    }
}

fn by_namespace(keys: &[ObjectKey]) -> BTreeMap<&str, Vec<&ObjectKey>> {
    let mut grouped: BTreeMap<&str, Vec<&ObjectKey>> = BTreeMap::new();
    for key in keys {
        grouped.entry(&key.namespace).or_default().push(key);
    }
    grouped
}

/// NonAdminBackups by namespace and name.
pub struct BackupLoader {
    service: Arc<GatewayService>,
    caller: Caller,
}

impl BackupLoader {
    /// A loader for `caller`.
    pub fn new(service: Arc<GatewayService>, caller: Caller) -> Self {
        BackupLoader { service, caller }
    }
}

impl Loader<ObjectKey> for BackupLoader {
    type Value = Result<Arc<NonAdminBackup>, GatewayError>;
    type Error = Arc<GatewayError>;

    async fn load(
        &self,
        keys: &[ObjectKey],
    ) -> Result<HashMap<ObjectKey, Self::Value>, Self::Error> {
        let mut out = HashMap::new();
        for (namespace, wanted) in by_namespace(keys) {
            match list_all::<NonAdminBackup>(&self.service, &self.caller, namespace).await {
                Ok(all) => {
                    let names: HashMap<&str, &Arc<NonAdminBackup>> = all
                        .iter()
                        .map(|b| (b.metadata.name.as_deref().unwrap_or_default(), b))
                        .collect();
                    for key in wanted {
                        if let Some(found) = names.get(key.name.as_str()) {
                            out.insert(key.clone(), Ok(Arc::clone(found)));
                        }
                    }
                }
                Err(error) => {
                    for key in wanted {
                        out.insert(key.clone(), Err(error.clone()));
                    }
                }
            }
        }
        Ok(out)
    }
}

/// The NonAdminRestores made from a backup, by the backup's namespace and name.
pub struct RestoresOfBackupLoader {
    service: Arc<GatewayService>,
    caller: Caller,
}

impl RestoresOfBackupLoader {
    /// A loader for `caller`.
    pub fn new(service: Arc<GatewayService>, caller: Caller) -> Self {
        RestoresOfBackupLoader { service, caller }
    }
}

impl Loader<ObjectKey> for RestoresOfBackupLoader {
    type Value = Result<Vec<Arc<NonAdminRestore>>, GatewayError>;
    type Error = Arc<GatewayError>;

    async fn load(
        &self,
        keys: &[ObjectKey],
    ) -> Result<HashMap<ObjectKey, Self::Value>, Self::Error> {
        let mut out = HashMap::new();
        for (namespace, wanted) in by_namespace(keys) {
            match list_all::<NonAdminRestore>(&self.service, &self.caller, namespace).await {
                Ok(all) => {
                    let mut by_backup: HashMap<&str, Vec<Arc<NonAdminRestore>>> = HashMap::new();
                    for restore in &all {
                        if let Some(backup) = restore.spec.restore_spec.backup_name.as_deref() {
                            by_backup
                                .entry(backup)
                                .or_default()
                                .push(Arc::clone(restore));
                        }
                    }
                    for key in wanted {
                        let restores = by_backup.get(key.name.as_str()).cloned();
                        out.insert(key.clone(), Ok(restores.unwrap_or_default()));
                    }
                }
                Err(error) => {
                    for key in wanted {
                        out.insert(key.clone(), Err(error.clone()));
                    }
                }
            }
        }
        Ok(out)
    }
}
