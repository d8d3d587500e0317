//! The emulator's resource registry: built-in kinds plus kinds registered from CustomResourceDefinitions.
use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceDefinition, JSONSchemaProps,
};

/// Special server behaviour attached to a kind beyond plain storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behavior {
    /// Stored as given.
    Plain,
    /// Cluster-scoped namespaces: phase, finalizers, cascading deletion.
    Namespace,
    /// `stringData` folds into base64 `data`.
    Secret,
    /// Registers and unregisters resources.
    CustomResourceDefinition,
    /// Create-only review kinds answered by the authenticator/authorizer, never stored.
    Review(ReviewKind),
    /// OpenShift's `project.openshift.io` projects: a read-only view of the namespaces the
    /// caller may view, never stored (see `projects`).
    Projects,
}

/// The review kinds the emulator answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReviewKind {
    TokenReview,
    SelfSubjectReview,
    SubjectAccessReview,
    LocalSubjectAccessReview,
    SelfSubjectAccessReview,
    SelfSubjectRulesReview,
}

/// One served resource (a group/resource, served at one or more versions).
#[derive(Debug, Clone)]
pub struct ResourceInfo {
    pub group: String,
    /// Served versions, storage/preferred version first.
    pub versions: Vec<String>,
    pub kind: String,
    pub list_kind: String,
    pub plural: String,
    pub singular: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub namespaced: bool,
    pub has_status: bool,
    /// Custom resources: conditional updates only, generation always tracked.
    pub is_custom: bool,
    /// Whether `metadata.generation` is maintained.
    pub tracks_generation: bool,
    pub behavior: Behavior,
    /// Structural schema per version (custom resources only).
    pub schemas: BTreeMap<String, JSONSchemaProps>,
    /// Printer columns per version (custom resources only).
    pub printer_columns: BTreeMap<String, Vec<CustomResourceColumnDefinition>>,
    /// Field selector paths besides `metadata.name` / `metadata.namespace`.
    pub extra_field_selectors: Vec<String>,
}

impl ResourceInfo {
    /// `group/version` as written in `apiVersion`.
    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{}", self.group, version)
        }
    }

    /// Verbs advertised by discovery.
    pub fn verbs(&self) -> Vec<&'static str> {
        match self.behavior {
            Behavior::Review(_) => vec!["create"],
            Behavior::Projects => vec!["get", "list"],
            _ => vec![
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ],
        }
    }

    /// Whether `version` is served.
    pub fn serves(&self, version: &str) -> bool {
        self.versions.iter().any(|v| v == version)
    }

    /// Storage key of this resource (all versions share one storage).
    pub fn key(&self) -> ResourceKey {
        ResourceKey {
            group: self.group.clone(),
            resource: self.plural.clone(),
        }
    }
}

/// Identifies a resource independent of version.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceKey {
    pub group: String,
    pub resource: String,
}

struct Builtin {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    short: &'static [&'static str],
    namespaced: bool,
    has_status: bool,
    generation: bool,
    behavior: Behavior,
    fields: &'static [&'static str],
}

const fn plain(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    short: &'static [&'static str],
    namespaced: bool,
) -> Builtin {
    Builtin {
        group,
        version,
        kind,
        plural,
        short,
        namespaced,
        has_status: false,
        generation: false,
        behavior: Behavior::Plain,
        fields: &[],
    }
}

const fn review(
    group: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    which: ReviewKind,
) -> Builtin {
    Builtin {
        group,
        version: "v1",
        kind,
        plural,
        short: &[],
        namespaced,
        has_status: false,
        generation: false,
        behavior: Behavior::Review(which),
        fields: &[],
    }
}

const BUILTINS: &[Builtin] = &[
    Builtin {
        behavior: Behavior::Namespace,
        has_status: true,
        fields: &["status.phase"],
        ..plain("", "v1", "Namespace", "namespaces", &["ns"], false)
    },
    Builtin {
        behavior: Behavior::Secret,
        fields: &["type"],
        ..plain("", "v1", "Secret", "secrets", &[], true)
    },
    plain("", "v1", "ConfigMap", "configmaps", &["cm"], true),
    plain("", "v1", "ServiceAccount", "serviceaccounts", &["sa"], true),
    Builtin {
        fields: &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        ..plain("", "v1", "Event", "events", &["ev"], true)
    },
    Builtin {
        has_status: true,
        ..plain("", "v1", "Service", "services", &["svc"], true)
    },
    Builtin {
        has_status: true,
        ..plain(
            "",
            "v1",
            "PersistentVolumeClaim",
            "persistentvolumeclaims",
            &["pvc"],
            true,
        )
    },
    Builtin {
        has_status: true,
        fields: &["spec.nodeName", "status.phase"],
        ..plain("", "v1", "Pod", "pods", &["po"], true)
    },
    Builtin {
        has_status: true,
        generation: true,
        ..plain("apps", "v1", "Deployment", "deployments", &["deploy"], true)
    },
    plain("events.k8s.io", "v1", "Event", "events", &["ev"], true),
    plain("coordination.k8s.io", "v1", "Lease", "leases", &[], true),
    plain(
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        "roles",
        &[],
        true,
    ),
    plain(
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
        &[],
        true,
    ),
    plain(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        &[],
        false,
    ),
    plain(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        &[],
        false,
    ),
    Builtin {
        behavior: Behavior::CustomResourceDefinition,
        has_status: true,
        generation: true,
        ..plain(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            &["crd", "crds"],
            false,
        )
    },
    review(
        "authentication.k8s.io",
        "TokenReview",
        "tokenreviews",
        false,
        ReviewKind::TokenReview,
    ),
    review(
        "authentication.k8s.io",
        "SelfSubjectReview",
        "selfsubjectreviews",
        false,
        ReviewKind::SelfSubjectReview,
    ),
    review(
        "authorization.k8s.io",
        "SubjectAccessReview",
        "subjectaccessreviews",
        false,
        ReviewKind::SubjectAccessReview,
    ),
    review(
        "authorization.k8s.io",
        "LocalSubjectAccessReview",
        "localsubjectaccessreviews",
        true,
        ReviewKind::LocalSubjectAccessReview,
    ),
    review(
        "authorization.k8s.io",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        false,
        ReviewKind::SelfSubjectAccessReview,
    ),
    review(
        "authorization.k8s.io",
        "SelfSubjectRulesReview",
        "selfsubjectrulesreviews",
        false,
        ReviewKind::SelfSubjectRulesReview,
    ),
];

/// Lower-cased singular name as kube derives it from a kind.
fn singular_of(kind: &str) -> String {
    kind.to_ascii_lowercase()
}

/// The built-in resources every emulated cluster serves.
pub fn builtin_resources() -> Vec<ResourceInfo> {
    BUILTINS
        .iter()
        .map(|b| ResourceInfo {
            group: b.group.into(),
            versions: vec![b.version.into()],
            kind: b.kind.into(),
            list_kind: format!("{}List", b.kind),
            plural: b.plural.into(),
            singular: singular_of(b.kind),
            short_names: b.short.iter().map(|s| s.to_string()).collect(),
            // kubectl's `get all` expands the `all` category from discovery.
            categories: if matches!(b.plural, "pods" | "services" | "deployments") {
                vec!["all".to_string()]
            } else {
                Vec::new()
            },
            namespaced: b.namespaced,
            has_status: b.has_status,
            is_custom: false,
            tracks_generation: b.generation,
            behavior: b.behavior,
            schemas: BTreeMap::new(),
            printer_columns: BTreeMap::new(),
            extra_field_selectors: b.fields.iter().map(|s| s.to_string()).collect(),
        })
        .collect()
}

/// Why a CustomResourceDefinition cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    #[error("metadata.name: Invalid value: \"{0}\": must be spec.names.plural+\".\"+spec.group")]
    NameMismatch(String),
    #[error(
        "spec.versions: Invalid value: must have exactly one version marked as storage version"
    )]
    StorageVersion,
    #[error("spec.versions[{0}].schema.openAPIV3Schema: Required value: schemas are required")]
    MissingSchema(usize),
}

/// Builds the served resource for a CRD (served versions only, storage version first).
pub fn resource_from_crd(crd: &CustomResourceDefinition) -> Result<ResourceInfo, CrdError> {
    let spec = &crd.spec;
    let name = crd.metadata.name.clone().unwrap_or_default();
    if name != format!("{}.{}", spec.names.plural, spec.group) {
        return Err(CrdError::NameMismatch(name));
    }
    if spec.versions.iter().filter(|v| v.storage).count() != 1 {
        return Err(CrdError::StorageVersion);
    }
    let mut versions: Vec<String> = Vec::new();
    let mut schemas = BTreeMap::new();
    let mut printer_columns = BTreeMap::new();
    let mut has_status = false;
    let mut ordered: Vec<_> = spec.versions.iter().enumerate().collect();
    ordered.sort_by_key(|(_, v)| !v.storage);
    for (index, v) in ordered {
        let schema = v
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.clone())
            .ok_or(CrdError::MissingSchema(index))?;
        if !v.served {
            continue;
        }
        versions.push(v.name.clone());
        schemas.insert(v.name.clone(), schema);
        printer_columns.insert(
            v.name.clone(),
            v.additional_printer_columns.clone().unwrap_or_default(),
        );
        if v.subresources
            .as_ref()
            .and_then(|s| s.status.as_ref())
            .is_some()
        {
            has_status = true;
        }
    }
    let field_selectors = spec
        .versions
        .iter()
        .flat_map(|v| v.selectable_fields.iter().flatten())
        .map(|f| f.json_path.trim_start_matches('.').to_string())
        .collect();
    Ok(ResourceInfo {
        group: spec.group.clone(),
        versions,
        kind: spec.names.kind.clone(),
        list_kind: spec
            .names
            .list_kind
            .clone()
            .unwrap_or_else(|| format!("{}List", spec.names.kind)),
        plural: spec.names.plural.clone(),
        singular: spec
            .names
            .singular
            .clone()
            .unwrap_or_else(|| singular_of(&spec.names.kind)),
        short_names: spec.names.short_names.clone().unwrap_or_default(),
        categories: spec.names.categories.clone().unwrap_or_default(),
        namespaced: spec.scope == "Namespaced",
        has_status,
        is_custom: true,
        tracks_generation: true,
        behavior: Behavior::Plain,
        schemas,
        printer_columns,
        extra_field_selectors: field_selectors,
    })
}

/// All resources currently served, looked up by group/resource or by group/version/plural.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    resources: BTreeMap<ResourceKey, Arc<ResourceInfo>>,
}

impl Registry {
    /// A registry holding the built-in resources.
    pub fn with_builtins() -> Self {
        let mut r = Registry::default();
        for info in builtin_resources() {
            r.resources.insert(info.key(), Arc::new(info));
        }
        r
    }

    /// Adds or replaces a resource.
    pub fn insert(&mut self, info: ResourceInfo) {
        self.resources.insert(info.key(), Arc::new(info));
    }

    /// Removes a resource (CRD deleted).
    pub fn remove(&mut self, key: &ResourceKey) -> Option<Arc<ResourceInfo>> {
        self.resources.remove(key)
    }

    /// The resource at `group`/`resource`.
    pub fn get(&self, key: &ResourceKey) -> Option<Arc<ResourceInfo>> {
        self.resources.get(key).cloned()
    }

    /// The resource served at `group/version` under plural `resource`.
    pub fn lookup(&self, group: &str, version: &str, resource: &str) -> Option<Arc<ResourceInfo>> {
        self.resources
            .get(&ResourceKey {
                group: group.to_string(),
                resource: resource.to_string(),
            })
            .filter(|r| r.serves(version))
            .cloned()
    }

    /// Every resource.
    pub fn all(&self) -> impl Iterator<Item = &Arc<ResourceInfo>> {
        self.resources.values()
    }

    /// Groups with their served versions, legacy core group excluded, in a stable order
    /// (built-in groups first as kube-apiserver lists them, then custom groups by name).
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for r in self.resources.values().filter(|r| !r.group.is_empty()) {
            let versions = groups.entry(r.group.clone()).or_default();
            for v in &r.versions {
                if !versions.contains(v) {
                    versions.push(v.clone());
                }
            }
        }
        groups.into_iter().collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn builtins_have_core_and_rbac_kinds() {
        let r = Registry::with_builtins();
        assert!(
            r.lookup("", "v1", "namespaces")
                .is_some_and(|n| !n.namespaced)
        );
        assert!(r.lookup("", "v1", "secrets").is_some_and(|n| n.namespaced));
        assert!(
            r.lookup("rbac.authorization.k8s.io", "v1", "clusterroles")
                .is_some()
        );
        assert!(r.lookup("", "v2", "secrets").is_none());
        assert_eq!(
            r.lookup("authorization.k8s.io", "v1", "selfsubjectaccessreviews")
                .unwrap()
                .verbs(),
            vec!["create"]
        );
    }

    #[test]
    fn crd_name_must_match_plural_and_group() {
        let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "wrong.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object"}}}]}
        }))
        .unwrap();
        assert!(matches!(
            resource_from_crd(&crd),
            Err(CrdError::NameMismatch(_))
        ));
    }

    #[test]
    fn crd_versions_storage_first_and_status_detected() {
        let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
                "versions": [
                    {"name": "v1beta1", "served": true, "storage": false,
                     "schema": {"openAPIV3Schema": {"type": "object"}}},
                    {"name": "v1", "served": true, "storage": true,
                     "subresources": {"status": {}},
                     "schema": {"openAPIV3Schema": {"type": "object"}}}]}
        }))
        .unwrap();
        let info = resource_from_crd(&crd).unwrap();
        assert_eq!(info.versions, vec!["v1", "v1beta1"]);
        assert!(info.has_status);
        assert_eq!(info.singular, "widget");
        assert_eq!(info.list_kind, "WidgetList");
        assert_eq!(info.short_names, vec!["wd"]);
    }
}
