//! The live cluster as a caller sees it, for backup dry-runs and restore previews: the served
//! resource types (discovery, cached briefly: it is the same for every caller and readable by
//! every authenticated user) and lists or gets made with the CALLER's token. A refused read is
//! reported as such rather than raised, so a dry-run can say what it could not see instead of
//! quietly showing less.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::stream::{self, StreamExt};
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::discovery::{Discovery, Scope, verbs};
use serde_json::Value;
use tokio::sync::Mutex;

use crate::manifest::collect::{DiscoveredResource, ListOutcome};
use crate::manifest::selection::ApiResourceInfo;

/// How long a discovery answer is reused.
pub const DISCOVERY_TTL: Duration = Duration::from_secs(60);
/// Reads in flight at once for one request (the API server's fairness is per user anyway).
const PARALLEL_READS: usize = 4;

/// A served resource type and how to address it.
#[derive(Debug, Clone)]
pub struct ServedResource {
    /// What the collection and restore rules need to know of it.
    pub discovered: DiscoveredResource,
    /// How the dynamic client addresses it.
    pub api: ApiResource,
}

/// Discovery, cached for [`DISCOVERY_TTL`].
#[derive(Debug, Default)]
pub struct DiscoveryCache {
    cached: Mutex<Option<(Instant, Arc<Vec<ServedResource>>)>>,
}

impl DiscoveryCache {
    /// The served resource types at their preferred versions, core group first (the order
    /// Velero's discovery helper gives), read with `client` when the cache is stale.
    pub async fn served(
        &self,
        client: &kube::Client,
    ) -> Result<Arc<Vec<ServedResource>>, kube::Error> {
        let mut cached = self.cached.lock().await;
        if let Some((at, served)) = cached.as_ref()
            && at.elapsed() < DISCOVERY_TTL
        {
            return Ok(Arc::clone(served));
        }
        let served = Arc::new(discover(client).await?);
        *cached = Some((Instant::now(), Arc::clone(&served)));
        Ok(served)
    }
}

async fn discover(client: &kube::Client) -> Result<Vec<ServedResource>, kube::Error> {
    let discovery = Discovery::new(client.clone()).run().await?;
    let mut groups: Vec<_> = discovery.groups().collect();
    groups.sort_by_key(|group| (!group.name().is_empty(), group.name().to_owned()));
    let mut served = Vec::new();
    for group in groups {
        for (resource, capabilities) in group.recommended_resources() {
            // Subresources are not items of their own.
            if resource.plural.contains('/') {
                continue;
            }
            served.push(ServedResource {
                discovered: DiscoveredResource {
                    info: ApiResourceInfo {
                        group: resource.group.clone(),
                        version: resource.version.clone(),
                        kind: resource.kind.clone(),
                        plural: resource.plural.clone(),
                        namespaced: capabilities.scope == Scope::Namespaced,
                    },
                    listable: capabilities.supports_operation(verbs::LIST),
                },
                api: resource,
            });
        }
    }
    Ok(served)
}

/// The served type `info` names (by group and plural).
pub fn find<'a>(
    served: &'a [ServedResource],
    info: &ApiResourceInfo,
) -> Option<&'a ServedResource> {
    served.iter().find(|resource| {
        resource.discovered.info.group == info.group
            && resource.discovered.info.plural == info.plural
    })
}

/// One read: every object of a type in a namespace (or cluster-wide), or one object by name.
#[derive(Debug, Clone)]
pub struct Read {
    /// The type.
    pub resource: ServedResource,
    /// The namespace; `None` for a cluster-scoped type.
    pub namespace: Option<String>,
    /// One object's name; `None` to list.
    pub name: Option<String>,
}

/// Makes `reads` with `client` (a few at a time), answering in the order given. A get of an
/// object that does not exist answers an empty list.
pub async fn read_all(client: &kube::Client, reads: Vec<Read>) -> Vec<ListOutcome> {
    // Each read owns what it needs, so the stream holds plain futures and stays `Send` for
    // any caller.
    let reads: Vec<_> = reads
        .into_iter()
        .map(|read| {
            let client = client.clone();
            async move { read_one(&client, &read).await }
        })
        .collect();
    stream::iter(reads).buffered(PARALLEL_READS).collect().await
}

async fn read_one(client: &kube::Client, read: &Read) -> ListOutcome {
    let resource = &read.resource;
    let api: Api<DynamicObject> = match read.namespace.as_deref() {
        Some(namespace) if resource.discovered.info.namespaced => {
            Api::namespaced_with(client.clone(), namespace, &resource.api)
        }
        _ => Api::all_with(client.clone(), &resource.api),
    };
    let answer = match read.name.as_deref() {
        None => api
            .list(&ListParams::default())
            .await
            .map(|list| list.items),
        Some(name) => api
            .get_opt(name)
            .await
            .map(|found| found.into_iter().collect()),
    };
    match answer {
        Ok(objects) => ListOutcome::Listed(
            objects
                .into_iter()
                .filter_map(|mut object| {
                    object.types = Some(kube::api::TypeMeta {
                        api_version: resource.api.api_version.clone(),
                        kind: resource.api.kind.clone(),
                    });
                    serde_json::to_value(object).ok()
                })
                .collect::<Vec<Value>>(),
        ),
        Err(kube::Error::Api(status)) if status.code == 403 => {
            ListOutcome::Forbidden(status.message.clone())
        }
        Err(kube::Error::Api(status)) => ListOutcome::Failed(format!(
            "the API server answered {} {}",
            status.code, status.reason
        )),
        Err(error) => {
            tracing::warn!(error = %error, resource = %resource.discovered.info.plural, "a live read failed");
            ListOutcome::Failed("the API server could not be read".into())
        }
    }
}
