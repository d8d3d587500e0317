//! Demo seeding: what `nac demo` installs into a fresh emulated cluster — NAC's and Velero's CRDs,
//! the OADP namespace, tenant namespaces with their owners' RBAC, and sample workloads to back up.
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, PersistentVolumeClaim, Secret, Service};
use k8s_openapi::api::rbac::v1::{ClusterRole, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube::core::NamespaceResourceScope;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::api::crds;

/// The namespace where the admin's OADP/Velero objects live.
pub const OADP_NAMESPACE: &str = "openshift-adp";

/// A demo tenant: a user who owns one namespace.
#[derive(Debug, Clone, Copy)]
pub struct Tenant {
    pub user: &'static str,
    pub namespace: &'static str,
}

/// The demo's tenants.
pub const TENANTS: &[Tenant] = &[
    Tenant {
        user: "alice",
        namespace: "team-a",
    },
    Tenant {
        user: "bob",
        namespace: "team-b",
    },
];

/// Name of the ClusterRole that gives namespace admins/editors the non-admin resources.
pub const TENANT_EDIT_ROLE: &str = "nac-nonadmin-edit";
/// Name of the ClusterRole that gives namespace viewers read access to them.
pub const TENANT_VIEW_ROLE: &str = "nac-nonadmin-view";

/// Demo set-up failures.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("creating {what}: {source}")]
    Create { what: String, source: kube::Error },
    #[error("building {what}: {source}")]
    Build {
        what: String,
        source: serde_json::Error,
    },
}

fn build<T: DeserializeOwned>(what: &str, value: serde_json::Value) -> Result<T, DemoError> {
    serde_json::from_value(value).map_err(|source| DemoError::Build {
        what: what.to_string(),
        source,
    })
}

/// Creates `object` unless it already exists (a restarted demo keeps its state).
async fn ensure<K>(api: &Api<K>, what: &str, object: &K) -> Result<(), DemoError>
where
    K: kube::Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    match api.create(&PostParams::default(), object).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(source) => Err(DemoError::Create {
            what: what.to_string(),
            source,
        }),
    }
}

async fn ensure_namespaced<K>(
    client: &kube::Client,
    ns: &str,
    what: &str,
    value: serde_json::Value,
) -> Result<(), DemoError>
where
    K: kube::Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + Serialize
        + DeserializeOwned
        + std::fmt::Debug,
{
    let object: K = build(what, value)?;
    ensure(&Api::<K>::namespaced(client.clone(), ns), what, &object).await
}

/// Installs everything the demo needs, idempotently, through the API as `admin`.
pub async fn install(admin: &kube::Client) -> Result<(), DemoError> {
    let crd_api: Api<CustomResourceDefinition> = Api::all(admin.clone());
    for crd in crds::nac_crds().into_iter().chain(crds::velero_crds()) {
        let name = crd.metadata.name.clone().unwrap_or_default();
        ensure(&crd_api, &format!("CRD {name}"), &crd).await?;
    }
    let ns_api: Api<Namespace> = Api::all(admin.clone());
    for ns in std::iter::once(OADP_NAMESPACE).chain(TENANTS.iter().map(|t| t.namespace)) {
        let object: Namespace = build("namespace", json!({"metadata": {"name": ns}}))?;
        ensure(&ns_api, &format!("namespace {ns}"), &object).await?;
    }
    let roles: Api<ClusterRole> = Api::all(admin.clone());
    let resources = [
        "nonadminbackups",
        "nonadminrestores",
        "nonadminbackupstoragelocations",
        "nonadmindownloadrequests",
        "nonadminschedules",
    ];
    let status: Vec<String> = resources.iter().map(|r| format!("{r}/status")).collect();
    let edit: ClusterRole = build(
        "edit role",
        json!({
            "metadata": {"name": TENANT_EDIT_ROLE, "labels": {
                "rbac.authorization.k8s.io/aggregate-to-admin": "true",
                "rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
            "rules": [
                {"apiGroups": ["oadp.openshift.io"], "resources": resources,
                 "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]},
                {"apiGroups": ["oadp.openshift.io"], "resources": status, "verbs": ["get"]}
            ]
        }),
    )?;
    ensure(&roles, "edit role", &edit).await?;
    let view: ClusterRole = build(
        "view role",
        json!({
            "metadata": {"name": TENANT_VIEW_ROLE, "labels": {
                "rbac.authorization.k8s.io/aggregate-to-view": "true"}},
            "rules": [{"apiGroups": ["oadp.openshift.io"], "resources": resources, "verbs": ["get", "list", "watch"]}]
        }),
    )?;
    ensure(&roles, "view role", &view).await?;
    for t in TENANTS {
        let ns = t.namespace;
        ensure_namespaced::<RoleBinding>(
            admin,
            ns,
            "tenant binding",
            json!({
                "metadata": {"name": format!("{}-admin", t.user), "namespace": ns},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": t.user}]
            }),
        )
        .await?;
        seed_workload(admin, ns).await?;
    }
    Ok(())
}

/// A small application in `ns`: something worth backing up and restoring.
async fn seed_workload(client: &kube::Client, ns: &str) -> Result<(), DemoError> {
    let labels = json!({"app": "web"});
    ensure_namespaced::<ConfigMap>(
        client,
        ns,
        "configmap",
        json!({"metadata": {"name": "web-config", "namespace": ns, "labels": labels},
               "data": {"greeting": format!("hello from {ns}")}}),
    )
    .await?;
    ensure_namespaced::<Secret>(
        client,
        ns,
        "secret",
        json!({"metadata": {"name": "web-credentials", "namespace": ns, "labels": labels},
               "stringData": {"password": format!("{ns}-demo-password")}}),
    )
    .await?;
    ensure_namespaced::<PersistentVolumeClaim>(
        client,
        ns,
        "pvc",
        json!({"metadata": {"name": "web-data", "namespace": ns, "labels": labels},
               "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
    )
    .await?;
    ensure_namespaced::<Deployment>(
        client,
        ns,
        "deployment",
        json!({"metadata": {"name": "web", "namespace": ns, "labels": labels},
               "spec": {"replicas": 2, "selector": {"matchLabels": labels},
                        "template": {"metadata": {"labels": labels},
                                     "spec": {"containers": [{"name": "web", "image": "registry.example/web:1.0",
                                                              "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                                              "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "web-data"}}]}}}}),
    )
    .await?;
    ensure_namespaced::<Service>(
        client,
        ns,
        "service",
        json!({"metadata": {"name": "web", "namespace": ns, "labels": labels},
               "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": 8080}]}}),
    )
    .await?;
    Ok(())
}
