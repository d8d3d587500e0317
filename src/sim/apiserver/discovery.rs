//! Discovery documents (`/api`, `/apis`, group and group-version resource lists, `/version`)
//! built from the registry, in kube-apiserver's legacy (unaggregated) format. Pure.
use serde_json::{Value, json};

use super::registry::{Registry, ResourceInfo};

/// The Kubernetes version the emulator presents.
pub const EMULATED_MINOR: &str = "33";

/// `/version`.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": EMULATED_MINOR,
        "gitVersion": format!("v1.{EMULATED_MINOR}.0-nac-emulator"),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "n/a (emulated)",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
    })
}

/// `/api`.
pub fn core_versions() -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
    })
}

fn group_json(name: &str, versions: &[String]) -> Value {
    let gv: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({
        "name": name,
        "versions": gv,
        "preferredVersion": gv.first().cloned().unwrap_or(json!({})),
    })
}

/// `/apis`.
pub fn groups(registry: &Registry) -> Value {
    let groups: Vec<Value> = registry
        .groups()
        .iter()
        .map(|(name, versions)| group_json(name, versions))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/{group}`, or `None` when the group is not served.
pub fn group(registry: &Registry, name: &str) -> Option<Value> {
    registry
        .groups()
        .into_iter()
        .find(|(g, _)| g == name)
        .map(|(g, versions)| {
            let mut v = group_json(&g, &versions);
            v["kind"] = json!("APIGroup");
            v["apiVersion"] = json!("v1");
            v
        })
}

fn resource_entries(info: &ResourceInfo) -> Vec<Value> {
    let mut main = json!({
        "name": info.plural,
        "singularName": info.singular,
        "namespaced": info.namespaced,
        "kind": info.kind,
        "verbs": info.verbs(),
    });
    if !info.short_names.is_empty() {
        main["shortNames"] = json!(info.short_names);
    }
    if !info.categories.is_empty() {
        main["categories"] = json!(info.categories);
    }
    let mut out = vec![main];
    if info.has_status {
        out.push(json!({
            "name": format!("{}/status", info.plural),
            "singularName": "",
            "namespaced": info.namespaced,
            "kind": info.kind,
            "verbs": ["get", "patch", "update"],
        }));
    }
    if info.group.is_empty() && info.plural == "serviceaccounts" {
        out.push(json!({
            "name": "serviceaccounts/token", "singularName": "", "namespaced": true,
            "group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest", "verbs": ["create"],
        }));
    }
    out
}

/// `/api/v1` or `/apis/{group}/{version}`, or `None` when not served.
pub fn resource_list(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let resources: Vec<Value> = registry
        .all()
        .filter(|r| r.group == group && r.serves(version))
        .flat_map(|r| resource_entries(r))
        .collect();
    if resources.is_empty() {
        return None;
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn core_resource_list_has_subresources() {
        let r = Registry::with_builtins();
        let list = resource_list(&r, "", "v1").unwrap();
        let names: Vec<&str> = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"namespaces"));
        assert!(names.contains(&"namespaces/status"));
        assert!(names.contains(&"serviceaccounts/token"));
        assert!(resource_list(&r, "", "v2").is_none());
    }

    #[test]
    fn groups_list_builtin_groups() {
        let r = Registry::with_builtins();
        let g = groups(&r);
        let names: Vec<&str> = g["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"rbac.authorization.k8s.io"));
        assert!(names.contains(&"apps"));
        assert!(group(&r, "apps").is_some());
        assert!(group(&r, "nope.example.com").is_none());
    }
}
