//! What the simulator needs from the API server besides Velero's own objects: the resources it
//! serves (discovery, preferred versions) and dynamic access to any of them.
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::discovery::{Discovery, Scope, verbs};
use serde_json::Value;

use crate::manifest::selection::ApiResourceInfo;

/// One served resource with what it takes to read and write it.
#[derive(Debug, Clone)]
pub struct ServedResource {
    pub info: ApiResourceInfo,
    pub api: ApiResource,
    pub listable: bool,
    pub creatable: bool,
}

/// The resources the cluster serves at their preferred versions, core group first (the order
/// Velero's discovery helper gives and its name resolution relies on).
pub async fn served_resources(client: &kube::Client) -> Result<Vec<ServedResource>, kube::Error> {
    let discovery = Discovery::new(client.clone()).run().await?;
    let mut out = Vec::new();
    let mut groups: Vec<_> = discovery.groups().collect();
    groups.sort_by_key(|g| (!g.name().is_empty(), g.name().to_string()));
    for group in groups {
        for (resource, caps) in group.recommended_resources() {
            // Subresources are not items of their own.
            if resource.plural.contains('/') {
                continue;
            }
            out.push(ServedResource {
                info: ApiResourceInfo {
                    group: resource.group.clone(),
                    version: resource.version.clone(),
                    kind: resource.kind.clone(),
                    plural: resource.plural.clone(),
                    namespaced: caps.scope == Scope::Namespaced,
                },
                listable: caps.supports_operation(verbs::LIST),
                creatable: caps.supports_operation(verbs::CREATE),
                api: resource,
            });
        }
    }
    Ok(out)
}

/// Every object of `resource`, in `namespace` or cluster-wide, as JSON with apiVersion/kind set.
pub async fn list_objects(
    client: &kube::Client,
    resource: &ServedResource,
    namespace: Option<&str>,
) -> Result<Vec<Value>, kube::Error> {
    let api: Api<DynamicObject> = match namespace {
        Some(ns) if resource.info.namespaced => {
            Api::namespaced_with(client.clone(), ns, &resource.api)
        }
        _ => Api::all_with(client.clone(), &resource.api),
    };
    let list = api.list(&ListParams::default()).await?;
    Ok(list
        .items
        .into_iter()
        .filter_map(|mut o| {
            o.types = Some(kube::api::TypeMeta {
                api_version: resource.api.api_version.clone(),
                kind: resource.api.kind.clone(),
            });
            serde_json::to_value(o).ok()
        })
        .collect())
}

/// Dynamic access to `resource` in `namespace` (ignored for cluster-scoped resources).
pub fn dynamic_api(
    client: &kube::Client,
    resource: &ApiResource,
    namespaced: bool,
    namespace: &str,
) -> Api<DynamicObject> {
    if namespaced {
        Api::namespaced_with(client.clone(), namespace, resource)
    } else {
        Api::all_with(client.clone(), resource)
    }
}
