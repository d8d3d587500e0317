//! OpenShift's `project.openshift.io/v1` projects, served when `EmulatorConfig::openshift_projects`
//! is on: a read-only, never-stored view of Namespaces as OpenShift's project API answers it. A
//! caller's list holds exactly the namespaces they may view (RBAC `get` on the namespace, or on
//! the project), any authenticated user may list, and `get` of a project the caller cannot view
//! is 403 whether it exists or not (only callers who may view it learn it is missing).
use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::api::selector::Selector;

use super::errors::{ApiError, ErrorTarget};
use super::rbac::{self, RbacPolicy, RequestAttributes, UserInfo};
use super::registry::{Behavior, ResourceInfo, ResourceKey};
use super::selectors::{FieldSelector, object_matches};
use super::state::State;
use super::store::ObjectKey;

/// The API group of projects.
pub const GROUP: &str = "project.openshift.io";
/// The served version.
pub const VERSION: &str = "v1";
/// The resource plural.
pub const RESOURCE: &str = "projects";

/// Groups every authenticated user belongs to (OpenShift binds `basic-user`, which may list
/// projects, to it).
const SYSTEM_AUTHENTICATED: &str = "system:authenticated";

/// The registry entry of projects (cluster-scoped, kind `Project`, `get` and `list`).
pub fn resource() -> ResourceInfo {
    ResourceInfo {
        group: GROUP.into(),
        versions: vec![VERSION.into()],
        kind: "Project".into(),
        list_kind: "ProjectList".into(),
        plural: RESOURCE.into(),
        singular: "project".into(),
        short_names: Vec::new(),
        categories: Vec::new(),
        namespaced: false,
        has_status: false,
        is_custom: false,
        tracks_generation: false,
        behavior: Behavior::Projects,
        schemas: BTreeMap::new(),
        printer_columns: BTreeMap::new(),
        extra_field_selectors: vec!["status.phase".into()],
    }
}

fn namespaces_key() -> ResourceKey {
    ResourceKey {
        group: String::new(),
        resource: "namespaces".into(),
    }
}

fn attributes(user: &UserInfo, verb: &str, name: &str) -> RequestAttributes {
    RequestAttributes {
        user: user.clone(),
        verb: verb.into(),
        namespace: None,
        api_group: GROUP.into(),
        resource: RESOURCE.into(),
        subresource: String::new(),
        name: name.into(),
        non_resource_path: None,
    }
}

fn forbidden(attrs: &RequestAttributes) -> ApiError {
    ApiError::Forbidden {
        target: ErrorTarget {
            group: GROUP.into(),
            resource: RESOURCE.into(),
            kind: "Project".into(),
            name: attrs.name.clone(),
        },
        message: rbac::forbidden_message(attrs),
    }
}

/// Whether `user` may view the project `name`: RBAC allows `get` of the namespace itself or of
/// the project, with the namespace's own name as the request's namespace (as OpenShift's project
/// cache asks).
pub fn may_view(policy: &RbacPolicy, user: &UserInfo, name: &str) -> bool {
    [("", "namespaces"), (GROUP, RESOURCE)]
        .iter()
        .any(|(group, resource)| {
            rbac::authorize(
                policy,
                &RequestAttributes {
                    user: user.clone(),
                    verb: "get".into(),
                    namespace: Some(name.to_string()),
                    api_group: (*group).into(),
                    resource: (*resource).into(),
                    subresource: String::new(),
                    name: name.into(),
                    non_resource_path: None,
                },
            )
            .allowed
        })
}

/// The Project presenting a stored Namespace: the namespace's metadata, its finalizers and phase.
pub fn project_of(namespace: &Value) -> Value {
    let mut metadata = namespace.get("metadata").cloned().unwrap_or(json!({}));
    if let Some(m) = metadata.as_object_mut() {
        m.remove("managedFields");
    }
    let mut spec = json!({});
    if let Some(finalizers) = namespace.pointer("/spec/finalizers") {
        spec["finalizers"] = finalizers.clone();
    }
    let mut status = json!({});
    if let Some(phase) = namespace.pointer("/status/phase") {
        status["phase"] = phase.clone();
    }
    json!({
        "kind": "Project",
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "metadata": metadata,
        "spec": spec,
        "status": status,
    })
}

/// `get` of the project `name` as `user`.
pub fn get(state: &mut State, user: &UserInfo, name: &str) -> Result<Value, ApiError> {
    let policy = state.rbac_policy();
    if !may_view(&policy, user, name) {
        return Err(forbidden(&attributes(user, "get", name)));
    }
    state
        .store
        .get(&ObjectKey::new(&namespaces_key(), "", name))
        .map(|ns| project_of(&ns))
        .ok_or_else(|| {
            ApiError::NotFound(ErrorTarget {
                group: GROUP.into(),
                resource: RESOURCE.into(),
                kind: "Project".into(),
                name: name.into(),
            })
        })
}

/// `list` of projects as `user`: the ProjectList of the namespaces they may view that pass the
/// selectors. Any authenticated user may list; others need RBAC `list` on projects.
pub fn list(
    state: &mut State,
    user: &UserInfo,
    label: &Selector,
    field: &FieldSelector,
) -> Result<Value, ApiError> {
    let policy = state.rbac_policy();
    let attrs = attributes(user, "list", "");
    let authenticated = user.groups.iter().any(|g| g == SYSTEM_AUTHENTICATED);
    if !authenticated && !rbac::authorize(&policy, &attrs).allowed {
        return Err(forbidden(&attrs));
    }
    let items: Vec<Value> = state
        .store
        .list(&namespaces_key(), None, None)
        .filter(|(key, _)| may_view(&policy, user, &key.name))
        .map(|(_, ns)| project_of(ns))
        .filter(|project| object_matches(project, label, field))
        .collect();
    Ok(json!({
        "kind": "ProjectList",
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "metadata": {"resourceVersion": state.store.resource_version().to_string()},
        "items": items,
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn project_carries_namespace_metadata_and_phase() {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "team-a", "uid": "u-1", "labels": {"a": "b"},
                "annotations": {"x": "y"}, "creationTimestamp": "2026-01-01T00:00:00Z",
                "managedFields": []},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
        let p = project_of(&ns);
        assert_eq!(p["kind"], "Project");
        assert_eq!(p["apiVersion"], "project.openshift.io/v1");
        assert_eq!(p["metadata"]["name"], "team-a");
        assert_eq!(p["metadata"]["uid"], "u-1");
        assert_eq!(p["metadata"]["labels"]["a"], "b");
        assert_eq!(p["metadata"]["annotations"]["x"], "y");
        assert_eq!(p["metadata"]["creationTimestamp"], "2026-01-01T00:00:00Z");
        assert!(p["metadata"].get("managedFields").is_none());
        assert_eq!(p["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(p["status"]["phase"], "Active");
    }

    #[test]
    fn resource_is_cluster_scoped_get_and_list() {
        let r = resource();
        assert!(!r.namespaced);
        assert_eq!(r.verbs(), vec!["get", "list"]);
        assert_eq!(r.api_version(VERSION), "project.openshift.io/v1");
    }
}
