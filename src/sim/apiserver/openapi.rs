//! OpenAPI v3 documents served at `/openapi/v3`: the root index and one document per
//! group-version with the operations and parameters kubectl inspects (it checks that PATCH
//! accepts `fieldValidation` before relying on server-side field validation), plus the CRD
//! schemas as components. Pure.
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::discovery::EMULATED_MINOR;
use super::registry::{Behavior, Registry, ResourceInfo};

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// Every group-version served, as (group, version).
fn group_versions(registry: &Registry) -> Vec<(String, String)> {
    let mut out = vec![(String::new(), "v1".to_string())];
    for (g, versions) in registry.groups() {
        for v in versions {
            out.push((g.clone(), v));
        }
    }
    out
}

/// `/openapi/v3`: the index of group-version documents with content hashes.
pub fn root(registry: &Registry) -> Value {
    let mut paths = Map::new();
    for (g, v) in group_versions(registry) {
        if let Some(doc) = group_version(registry, &g, &v) {
            let hash = hex::encode(Sha256::digest(doc.to_string().as_bytes()));
            let path = gv_path(&g, &v);
            paths.insert(path.clone(), json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={}", hash.to_uppercase())}));
        }
    }
    json!({"paths": paths})
}

fn schema_name(info: &ResourceInfo, version: &str) -> String {
    if info.group.is_empty() {
        format!("io.k8s.api.core.{version}.{}", info.kind)
    } else {
        let reversed: Vec<&str> = info.group.split('.').rev().collect();
        format!("{}.{version}.{}", reversed.join("."), info.kind)
    }
}

const WRITE_PARAMS: &[&str] = &["dryRun", "fieldManager", "fieldValidation", "pretty"];
const PATCH_PARAMS: &[&str] = &[
    "dryRun",
    "fieldManager",
    "fieldValidation",
    "force",
    "pretty",
];

fn operation(info: &ResourceInfo, version: &str, action: &str, params: &[&str]) -> Value {
    let parameters: Vec<Value> = params
        .iter()
        .map(|p| json!({"name": p, "in": "query", "schema": {"type": "string"}, "uniqueItems": true}))
        .collect();
    json!({
        "operationId": format!("{action}{}", info.kind),
        "parameters": parameters,
        "responses": {"200": {"description": "OK"}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": info.group, "version": version, "kind": info.kind},
    })
}

/// The document of one group-version, or `None` when it is not served.
pub fn group_version(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let resources: Vec<_> = registry
        .all()
        .filter(|r| r.group == group && r.serves(version))
        .collect();
    if resources.is_empty() {
        return None;
    }
    let prefix = format!("/{}", gv_path(group, version));
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for info in resources {
        let base = if info.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}", info.plural)
        } else {
            format!("{prefix}/{}", info.plural)
        };
        if let Behavior::Review(_) = info.behavior {
            paths.insert(
                base,
                json!({"post": operation(info, version, "post", WRITE_PARAMS)}),
            );
        } else if info.behavior == Behavior::Projects {
            paths.insert(
                base.clone(),
                json!({"get": operation(info, version, "list", &["labelSelector", "fieldSelector"])}),
            );
            paths.insert(
                format!("{base}/{{name}}"),
                json!({"get": operation(info, version, "get", &["pretty"])}),
            );
        } else {
            paths.insert(
                base.clone(),
                json!({
                    "get": operation(info, version, "list", &["labelSelector", "fieldSelector", "limit", "continue", "watch"]),
                    "post": operation(info, version, "post", WRITE_PARAMS),
                    "delete": operation(info, version, "deletecollection", &["dryRun", "labelSelector", "fieldSelector"]),
                }),
            );
            let item = format!("{base}/{{name}}");
            paths.insert(
                item.clone(),
                json!({
                    "get": operation(info, version, "get", &["pretty"]),
                    "put": operation(info, version, "put", WRITE_PARAMS),
                    "patch": operation(info, version, "patch", PATCH_PARAMS),
                    "delete": operation(info, version, "delete", &["dryRun", "propagationPolicy", "gracePeriodSeconds"]),
                }),
            );
            if info.has_status {
                paths.insert(
                    format!("{item}/status"),
                    json!({
                        "get": operation(info, version, "get", &["pretty"]),
                        "put": operation(info, version, "put", WRITE_PARAMS),
                        "patch": operation(info, version, "patch", PATCH_PARAMS),
                    }),
                );
            }
        }
        let mut schema = info
            .schemas
            .get(version)
            .and_then(|s| serde_json::to_value(s).ok())
            .unwrap_or_else(
                || json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
            );
        schema["x-kubernetes-group-version-kind"] =
            json!([{"group": info.group, "version": version, "kind": info.kind}]);
        schemas.insert(schema_name(info, version), schema);
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": format!("v1.{EMULATED_MINOR}.0")},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn root_indexes_every_group_version_with_a_hash() {
        let r = Registry::with_builtins();
        let root = root(&r);
        let url = root["paths"]["api/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap();
        assert!(url.starts_with("/openapi/v3/api/v1?hash="));
        assert!(root["paths"]["apis/rbac.authorization.k8s.io/v1"].is_object());
    }

    #[test]
    fn patch_operations_declare_field_validation_and_gvk() {
        let r = Registry::with_builtins();
        let doc = group_version(&r, "", "v1").unwrap();
        let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/secrets/{name}"]["patch"];
        assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "Secret");
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation")
        );
        assert!(group_version(&r, "nope", "v1").is_none());
    }
}
