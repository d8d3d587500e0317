//! OpenShift's `project.openshift.io/v1` projects, used for "my namespaces" when the cluster
//! serves them: the projects list taken with the caller's own token holds the namespaces the
//! caller may view, so the gateway SubjectAccessReviews only those instead of every namespace
//! in its cache. Whether projects are served is found once, by discovery, when the gateway starts.

use std::time::Duration;

use kube::api::{Api, ApiResource, DynamicObject, ListParams};

/// The API group of projects.
pub const GROUP: &str = "project.openshift.io";
/// The version used.
pub const VERSION: &str = "v1";
/// The resource plural.
pub const RESOURCE: &str = "projects";

/// How long discovery may take before projects count as not served.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(10);

fn api_resource() -> ApiResource {
    ApiResource {
        group: GROUP.into(),
        version: VERSION.into(),
        api_version: format!("{GROUP}/{VERSION}"),
        kind: "Project".into(),
        plural: RESOURCE.into(),
    }
}

/// Whether the cluster serves `project.openshift.io/v1` projects with `list` (asked with the
/// gateway's own identity; any failure counts as "not served").
pub async fn served(client: &kube::Client) -> bool {
    let gv = format!("{GROUP}/{VERSION}");
    match tokio::time::timeout(DISCOVERY_TIMEOUT, client.list_api_group_resources(&gv)).await {
        Ok(Ok(list)) => list
            .resources
            .iter()
            .any(|r| r.name == RESOURCE && r.verbs.iter().any(|v| v == "list")),
        Ok(Err(error)) => {
            tracing::debug!(error = %error, "{gv} is not served; my namespaces use the namespace cache");
            false
        }
        Err(_) => {
            tracing::debug!("discovery of {gv} timed out; my namespaces use the namespace cache");
            false
        }
    }
}

/// The names of the projects `client` (acting as the caller) may see, sorted, without repeats.
pub async fn names(client: kube::Client) -> Result<Vec<String>, kube::Error> {
    let api: Api<DynamicObject> = Api::all_with(client, &api_resource());
    let list = api.list(&ListParams::default()).await?;
    let mut names: Vec<String> = list
        .items
        .into_iter()
        .filter_map(|project| project.metadata.name)
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}
