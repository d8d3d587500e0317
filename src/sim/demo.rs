//! Demo seeding: what `nac demo` installs into a fresh emulated cluster — NAC's and Velero's CRDs,
//! the tenant RBAC of `deploy/base/rbac/`, the OADP namespace with Velero's service account and a
//! default BackupStorageLocation on the local object store, tenant namespaces with their owners'
//! bindings, a CI service account, and sample workloads to back up; then the shared backup pool,
//! the admin's DeletionAction pointing to the demo's receiver, and two sample backups of team-a
//! whose contents differ (so manifests, diffs and previews have something to show).
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, PersistentVolumeClaim, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, GroupVersionKind, PostParams};
use kube::core::NamespaceResourceScope;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::api::crds;
use crate::api::velero::BackupStorageLocation;
use crate::sim::velero::storage::LOCAL_PROVIDER;

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

/// The CI service account (namespace/name) allowed to create NonAdminBackups in team-a.
pub const CI_BOT: Tenant = Tenant {
    user: "ci-bot",
    namespace: "team-a",
};
/// The service account Velero (here: the simulator) runs as.
pub const VELERO_SERVICE_ACCOUNT: &str = "velero";
/// The admin's default BackupStorageLocation.
pub const DEFAULT_LOCATION: &str = "default";
/// Its bucket on the local object store.
pub const DEFAULT_BUCKET: &str = "velero";

/// The tenant ClusterRoles shipped in `deploy/base/rbac/` (aggregated into admin/edit/view).
const TENANT_ROLES_YAML: &str = include_str!("../../deploy/base/rbac/nonadmin-tenant-roles.yaml");

/// The controller's service account and least-privilege RBAC (`deploy/base/rbac/`).
const CONTROLLER_RBAC_YAML: &str = include_str!("../../deploy/base/rbac/controller.yaml");
/// The service account the NAC controller runs as.
pub const CONTROLLER_SERVICE_ACCOUNT: &str = "nac-controller";

/// The gateway's service account and read-only RBAC (`deploy/base/rbac/gateway.yaml`).
const GATEWAY_RBAC_YAML: &str = include_str!("../../deploy/base/rbac/gateway.yaml");
/// The service account the NAC gateway runs as.
pub const GATEWAY_SERVICE_ACCOUNT: &str = "nac-gateway";

/// Creates every object of a multi-document manifest that does not exist yet.
pub async fn apply_manifests(
    client: &kube::Client,
    what: &str,
    yaml: &str,
) -> Result<(), DemoError> {
    for doc in serde_yaml::Deserializer::from_str(yaml) {
        let value = serde_json::Value::deserialize(doc).map_err(|e| DemoError::Manifest {
            what: what.to_string(),
            reason: e.to_string(),
        })?;
        if value.is_null() {
            continue;
        }
        let object: DynamicObject =
            serde_json::from_value(value).map_err(|source| DemoError::Build {
                what: what.to_string(),
                source,
            })?;
        let types = object.types.clone().unwrap_or_default();
        let gvk = GroupVersionKind::try_from(&types).map_err(|e| DemoError::Manifest {
            what: what.to_string(),
            reason: e.to_string(),
        })?;
        let (resource, caps) =
            kube::discovery::pinned_kind(client, &gvk)
                .await
                .map_err(|source| DemoError::Create {
                    what: format!("{what}: {}", gvk.kind),
                    source,
                })?;
        let api: Api<DynamicObject> = match (&caps.scope, object.metadata.namespace.as_deref()) {
            (kube::discovery::Scope::Namespaced, Some(ns)) => {
                Api::namespaced_with(client.clone(), ns, &resource)
            }
            _ => Api::all_with(client.clone(), &resource),
        };
        let label = format!(
            "{what}: {} {}",
            gvk.kind,
            object.metadata.name.as_deref().unwrap_or_default()
        );
        ensure(&api, &label, &object).await?;
    }
    Ok(())
}

/// Demo set-up failures.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("creating {what}: {source}")]
    Create { what: String, source: kube::Error },
    #[error("{what}: {source}")]
    Api { what: String, source: kube::Error },
    #[error("timed out waiting for {0}")]
    Timeout(String),
    #[error("building {what}: {source}")]
    Build {
        what: String,
        source: serde_json::Error,
    },
    #[error("reading {what}: {reason}")]
    Manifest { what: String, reason: String },
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
    apply_manifests(
        admin,
        "deploy/base/rbac/nonadmin-tenant-roles.yaml",
        TENANT_ROLES_YAML,
    )
    .await?;
    apply_manifests(
        admin,
        "deploy/base/rbac/controller.yaml",
        CONTROLLER_RBAC_YAML,
    )
    .await?;
    apply_manifests(admin, "deploy/base/rbac/gateway.yaml", GATEWAY_RBAC_YAML).await?;
    // Velero runs as a service account with cluster-admin, as OADP installs it.
    ensure_namespaced::<ServiceAccount>(
        admin,
        OADP_NAMESPACE,
        "velero service account",
        json!({"metadata": {"name": VELERO_SERVICE_ACCOUNT, "namespace": OADP_NAMESPACE}}),
    )
    .await?;
    let cluster_bindings: Api<ClusterRoleBinding> = Api::all(admin.clone());
    let velero_binding: ClusterRoleBinding = build(
        "velero binding",
        json!({
            "metadata": {"name": "velero"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": VELERO_SERVICE_ACCOUNT, "namespace": OADP_NAMESPACE}]
        }),
    )?;
    ensure(&cluster_bindings, "velero binding", &velero_binding).await?;
    let locations: Api<BackupStorageLocation> = Api::namespaced(admin.clone(), OADP_NAMESPACE);
    let default_location: BackupStorageLocation = build(
        "default backup storage location",
        json!({
            "apiVersion": "velero.io/v1", "kind": "BackupStorageLocation",
            "metadata": {"name": DEFAULT_LOCATION, "namespace": OADP_NAMESPACE},
            "spec": {"provider": LOCAL_PROVIDER, "default": true,
                     "objectStorage": {"bucket": DEFAULT_BUCKET, "prefix": "velero"}}
        }),
    )?;
    ensure(
        &locations,
        "default backup storage location",
        &default_location,
    )
    .await?;
    // A CI pipeline's identity in team-a that may start backups there and nothing else.
    ensure_namespaced::<ServiceAccount>(
        admin,
        CI_BOT.namespace,
        "ci-bot service account",
        json!({"metadata": {"name": CI_BOT.user, "namespace": CI_BOT.namespace}}),
    )
    .await?;
    ensure_namespaced::<RoleBinding>(
        admin,
        CI_BOT.namespace,
        "ci-bot binding",
        json!({
            "metadata": {"name": "ci-bot-backup-creator", "namespace": CI_BOT.namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "nac-nonadmin-backup-creator"},
            "subjects": [{"kind": "ServiceAccount", "name": CI_BOT.user, "namespace": CI_BOT.namespace}]
        }),
    )
    .await?;
    for t in TENANTS {
        let ns = t.namespace;
        bind_tenant_admin(
            admin,
            t,
            &format!("{}-admin", t.user),
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": t.user}),
        )
        .await?;
        seed_workload(admin, ns).await?;
    }
    Ok(())
}

/// The service account a demo tenant signs in as on an existing cluster (`nac demo
/// --kubeconfig`), which has no demo users: `<user>` in the tenant's own namespace, bound to
/// `admin` there exactly as the user is.
pub async fn install_tenant_service_accounts(admin: &kube::Client) -> Result<(), DemoError> {
    for t in TENANTS {
        let ns = t.namespace;
        ensure_namespaced::<ServiceAccount>(
            admin,
            ns,
            "tenant service account",
            json!({"metadata": {"name": t.user, "namespace": ns}}),
        )
        .await?;
        bind_tenant_admin(
            admin,
            t,
            &format!("{}-admin-service-account", t.user),
            json!({"kind": "ServiceAccount", "name": t.user, "namespace": ns}),
        )
        .await?;
    }
    Ok(())
}

/// Binds `subject` to `admin` in `tenant`'s namespace (RoleBinding `name`).
async fn bind_tenant_admin(
    admin: &kube::Client,
    tenant: &Tenant,
    name: &str,
    subject: serde_json::Value,
) -> Result<(), DemoError> {
    let ns = tenant.namespace;
    ensure_namespaced::<RoleBinding>(
        admin,
        ns,
        "tenant binding",
        json!({
            "metadata": {"name": name, "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
            "subjects": [subject]
        }),
    )
    .await
}

/// The demo's shared backup pool (seed 001): BackupBuckets on the local object store.
pub const POOL_BUCKETS: &[&str] = &["pool-1", "pool-2"];
/// The pool buckets' credential Secret in the OADP namespace (the local provider ignores its
/// content; a real pool's holds the bucket's cloud credentials, which tenants never get).
pub const POOL_CREDENTIAL_SECRET: &str = "pool-credentials";

/// Installs the shared backup pool: two BackupBuckets of one entry each, so the first two
/// tenant namespaces that back up without a storage location land in different buckets.
/// `nac demo` calls it after [`install`]; suites that want Velero's default location alone
/// do not.
pub async fn install_backup_pool(admin: &kube::Client) -> Result<(), DemoError> {
    ensure_namespaced::<Secret>(
        admin,
        OADP_NAMESPACE,
        "pool credential",
        json!({"metadata": {"name": POOL_CREDENTIAL_SECRET, "namespace": OADP_NAMESPACE},
               "stringData": {"cloud": "[default]\naws_access_key_id=demo\naws_secret_access_key=demo\n"}}),
    )
    .await?;
    let buckets: Api<crate::api::nonadmin::BackupBucket> = Api::all(admin.clone());
    for name in POOL_BUCKETS {
        let bucket = build(
            "backup bucket",
            json!({
                "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "BackupBucket",
                "metadata": {"name": name},
                "spec": {"provider": LOCAL_PROVIDER, "bucket": format!("shared-{name}"),
                         "credential": {"name": POOL_CREDENTIAL_SECRET, "key": "cloud"},
                         "maxEntries": 1}
            }),
        )?;
        ensure(&buckets, &format!("backup bucket {name}"), &bucket).await?;
    }
    Ok(())
}

/// A small application in `ns`: something worth backing up and restoring.
pub async fn seed_workload(client: &kube::Client, ns: &str) -> Result<(), DemoError> {
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

/// The DeletionAction `nac demo` registers (seed 003): every item of a permanently deleted
/// backup that is the tenant's — of its namespace, its Namespace object, its volumes — goes to
/// the demo's receiver ([`crate::sim::deletion_receiver`]).
pub const DELETION_ACTION: &str = "audit-deleted-items";

/// Registers [`DELETION_ACTION`] for the receiver at `hook_url` (verified by `ca_pem`), with
/// `failurePolicy: Ignore` so a stopped receiver never holds a tenant's deletion. The receiver
/// listens on a free port chosen at each start, so an existing action's webhook is pointed at
/// the current one; the rest of its spec (an admin may have narrowed `appliesTo`) is kept.
pub async fn install_deletion_action(
    admin: &kube::Client,
    hook_url: &str,
    ca_pem: &str,
) -> Result<(), DemoError> {
    use base64::Engine as _;
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let webhook = json!({"url": hook_url, "caBundle": ca_bundle, "timeoutSeconds": 5});
    let action: crate::api::nonadmin::DeletionAction = build(
        "deletion action",
        json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "DeletionAction",
            "metadata": {"name": DELETION_ACTION},
            // Besides the items of the backup's namespace, its Namespace object and the
            // volumes its claims were bound to.
            "spec": {"webhook": webhook, "failurePolicy": "Ignore",
                     "clusterScopedResources": ["namespaces", "persistentvolumes"]}
        }),
    )?;
    let api: Api<crate::api::nonadmin::DeletionAction> = Api::all(admin.clone());
    let what = format!("deletion action {DELETION_ACTION}");
    match api.create(&PostParams::default(), &action).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => api
            .patch(
                DELETION_ACTION,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(json!({"spec": {"webhook": webhook}})),
            )
            .await
            .map(|_| ())
            .map_err(|source| DemoError::Api { what, source }),
        Err(source) => Err(DemoError::Create { what, source }),
    }
}

/// NAC's policy ConfigMap (`nac-policy`, key `policy.yaml`) in the OADP namespace.
pub use crate::api::oadp::POLICY_CONFIG_MAP;
/// Annotation on it naming the storage endpoint the demo listed, so the next start (on
/// another free port) replaces its own entry and leaves the administrator's alone.
pub const DEMO_ENDPOINT_ANNOTATION: &str = "nac.openshift.io/demo-storage-endpoint";

/// `policy.yaml` with `origin` in `storageEndpoints.allow` (and `previous`, the demo's entry
/// of an earlier start, removed); `None` when `existing` already says exactly that. Other
/// settings are kept (comments are not).
pub fn demo_policy_yaml(
    existing: Option<&str>,
    origin: &str,
    previous: Option<&str>,
) -> Result<Option<String>, DemoError> {
    use serde_yaml::{Mapping, Value};
    let invalid = |reason: String| DemoError::Manifest {
        what: format!("ConfigMap {POLICY_CONFIG_MAP}"),
        reason,
    };
    let mut document = match existing.filter(|text| !text.trim().is_empty()) {
        None => Value::Mapping(Mapping::new()),
        Some(text) => serde_yaml::from_str(text).map_err(|e| invalid(e.to_string()))?,
    };
    let root = document
        .as_mapping_mut()
        .ok_or_else(|| invalid("policy.yaml is not a mapping".into()))?;
    let endpoints = root
        .entry(Value::from("storageEndpoints"))
        .or_insert_with(|| Value::Mapping(Mapping::new()))
        .as_mapping_mut()
        .ok_or_else(|| invalid("storageEndpoints is not a mapping".into()))?;
    let allow = endpoints
        .entry(Value::from("allow"))
        .or_insert_with(|| Value::Sequence(Vec::new()))
        .as_sequence_mut()
        .ok_or_else(|| invalid("storageEndpoints.allow is not a list".into()))?;
    let before = allow.clone();
    allow.retain(|entry| previous.is_none_or(|previous| entry.as_str() != Some(previous)));
    if !allow.iter().any(|entry| entry.as_str() == Some(origin)) {
        allow.push(Value::from(origin));
    }
    if existing.is_some() && *allow == before {
        return Ok(None);
    }
    serde_yaml::to_string(&document)
        .map(Some)
        .map_err(|e| invalid(e.to_string()))
}

/// Lets tenant storage locations on the simulator's local object store be downloaded from:
/// its endpoint `download_base` is on 127.0.0.1, which NAC's storage-endpoint rule refuses
/// for tenant locations unless listed, so the demo lists it in `nac-policy` (created, or
/// updated keeping what the administrator wrote).
pub async fn install_policy(
    admin: &kube::Client,
    download_base: &url::Url,
) -> Result<(), DemoError> {
    use crate::api::oadp::policy_sources::POLICY_CONFIGMAP_KEY;
    let origin = download_base.origin().ascii_serialization();
    let api: Api<ConfigMap> = Api::namespaced(admin.clone(), OADP_NAMESPACE);
    let what = format!("ConfigMap {POLICY_CONFIG_MAP}");
    let current = api
        .get_opt(POLICY_CONFIG_MAP)
        .await
        .map_err(|source| DemoError::Api {
            what: what.clone(),
            source,
        })?;
    let Some(mut current) = current else {
        let text = demo_policy_yaml(None, &origin, None)?.unwrap_or_default();
        let map: ConfigMap = build(
            &what,
            json!({
                "metadata": {"name": POLICY_CONFIG_MAP, "namespace": OADP_NAMESPACE,
                             "annotations": {DEMO_ENDPOINT_ANNOTATION: origin}},
                "data": {POLICY_CONFIGMAP_KEY: format!(
                    "# Written by `nac demo`: tenant storage locations on the simulator's object store\n\
                     # are downloaded from its endpoint on 127.0.0.1, which NAC refuses unless listed.\n{text}"
                )}
            }),
        )?;
        return ensure(&api, &what, &map).await;
    };
    let previous = current
        .metadata
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(DEMO_ENDPOINT_ANNOTATION))
        .cloned();
    let existing = current
        .data
        .as_ref()
        .and_then(|data| data.get(POLICY_CONFIGMAP_KEY))
        .cloned();
    let Some(text) = demo_policy_yaml(
        Some(existing.as_deref().unwrap_or_default()),
        &origin,
        previous.as_deref(),
    )?
    else {
        return Ok(());
    };
    current
        .data
        .get_or_insert_with(Default::default)
        .insert(POLICY_CONFIGMAP_KEY.to_owned(), text);
    current
        .metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(DEMO_ENDPOINT_ANNOTATION.to_owned(), origin);
    api.replace(POLICY_CONFIG_MAP, &PostParams::default(), &current)
        .await
        .map(|_| ())
        .map_err(|source| DemoError::Api { what, source })
}

/// The tenant namespace that gets sample backups.
pub const SAMPLE_NAMESPACE: &str = "team-a";
/// The sample NonAdminBackups, in the order they are taken; the workload changes in between.
pub const SAMPLE_BACKUPS: [&str; 2] = ["sample-1", "sample-2"];
/// The ConfigMap added between the two samples (the diff's added item).
pub const SAMPLE_ADDED_CONFIGMAP: &str = "web-feature-flags";
/// ConfigMap in the OADP namespace recording that both samples were requested, so a later start
/// does not take them again after the user deleted them. It lives in the admin's namespace, not
/// in the tenant's: a marker there would itself be a difference between the two samples.
pub const SAMPLES_MARKER: &str = "nac-demo-sample-backups";
/// How long the sample seeding waits for the first sample to finish.
const SAMPLE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(300);
const SAMPLE_POLL: std::time::Duration = std::time::Duration::from_millis(300);

/// The next step of the sample seeding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleStep {
    /// Nothing left to do.
    Done,
    /// Both samples exist: record that ([`SAMPLES_MARKER`]).
    Mark,
    /// Back the namespace up as the first sample.
    CreateFirst,
    /// The first sample has not finished yet.
    WaitForFirst,
    /// Change the workload (a label, a new ConfigMap), then take the second sample.
    ChangeThenCreateSecond,
}

/// What the sample seeding does next, from the marker and the samples that exist.
/// The second sample is taken once the first has settled (Velero finished it, or NAC refused
/// it), so the change made in between lies between the two backups' contents.
pub fn sample_step(
    marked: bool,
    first: Option<&crate::api::nonadmin::NonAdminBackup>,
    second_exists: bool,
) -> SampleStep {
    if marked {
        return SampleStep::Done;
    }
    if second_exists {
        return SampleStep::Mark;
    }
    let Some(first) = first else {
        return SampleStep::CreateFirst;
    };
    let status = first.status.as_ref();
    let velero_done = status
        .and_then(|s| s.velero_backup.as_ref())
        .and_then(|v| v.status.as_ref())
        .and_then(|s| s.phase.as_ref())
        .is_some_and(crate::api::velero::BackupPhase::is_terminal);
    let refused =
        status.and_then(|s| s.phase) == Some(crate::api::nonadmin::NonAdminPhase::BackingOff);
    if velero_done || refused {
        SampleStep::ChangeThenCreateSecond
    } else {
        SampleStep::WaitForFirst
    }
}

/// Takes the demo's two sample backups of [`SAMPLE_NAMESPACE`] as its owner `tenant` (once per
/// demo; resumed after a restart), with a change of the workload in between, so their manifests
/// differ: `web-config` gains a label and [`SAMPLE_ADDED_CONFIGMAP`] appears. `nac demo` runs
/// it in the background after its banner (a backup takes seconds).
pub async fn seed_sample_backups(
    admin: &kube::Client,
    tenant: &kube::Client,
) -> Result<(), DemoError> {
    use crate::api::nonadmin::NonAdminBackup;
    let markers: Api<ConfigMap> = Api::namespaced(admin.clone(), OADP_NAMESPACE);
    let nabs: Api<NonAdminBackup> = Api::namespaced(tenant.clone(), SAMPLE_NAMESPACE);
    let api_error = |what: &str| {
        let what = what.to_string();
        move |source| DemoError::Api { what, source }
    };
    let [first_name, second_name] = SAMPLE_BACKUPS;
    let deadline = tokio::time::Instant::now() + SAMPLE_DEADLINE;
    loop {
        let marked = markers
            .get_opt(SAMPLES_MARKER)
            .await
            .map_err(api_error("reading the sample backups' marker"))?
            .is_some();
        let first = nabs
            .get_opt(first_name)
            .await
            .map_err(api_error("reading the first sample backup"))?;
        let second_exists = nabs
            .get_opt(second_name)
            .await
            .map_err(api_error("reading the second sample backup"))?
            .is_some();
        match sample_step(marked, first.as_ref(), second_exists) {
            SampleStep::Done => return Ok(()),
            SampleStep::Mark => {
                ensure_namespaced::<ConfigMap>(
                    admin,
                    OADP_NAMESPACE,
                    "sample backups' marker",
                    json!({"metadata": {"name": SAMPLES_MARKER, "namespace": OADP_NAMESPACE},
                           "data": {"namespace": SAMPLE_NAMESPACE,
                                    "backups": SAMPLE_BACKUPS.join(",")}}),
                )
                .await?;
            }
            SampleStep::CreateFirst => create_sample(&nabs, first_name).await?,
            SampleStep::WaitForFirst => {
                if tokio::time::Instant::now() > deadline {
                    return Err(DemoError::Timeout(format!(
                        "the sample backup {SAMPLE_NAMESPACE}/{first_name}"
                    )));
                }
                tokio::time::sleep(SAMPLE_POLL).await;
            }
            SampleStep::ChangeThenCreateSecond => {
                change_sample_workload(tenant).await?;
                create_sample(&nabs, second_name).await?;
            }
        }
    }
}

async fn create_sample(
    nabs: &Api<crate::api::nonadmin::NonAdminBackup>,
    name: &str,
) -> Result<(), DemoError> {
    let nab = build(
        "sample backup",
        json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
            "metadata": {"name": name, "labels": {"demo.nac.openshift.io/sample": "true"}},
            "spec": {"backupSpec": {}}
        }),
    )?;
    ensure(nabs, &format!("sample backup {name}"), &nab).await
}

/// The change between the samples (idempotent: a resumed seeding may make it twice).
async fn change_sample_workload(tenant: &kube::Client) -> Result<(), DemoError> {
    ensure_namespaced::<ConfigMap>(
        tenant,
        SAMPLE_NAMESPACE,
        "sample configmap",
        json!({"metadata": {"name": SAMPLE_ADDED_CONFIGMAP, "namespace": SAMPLE_NAMESPACE,
                            "labels": {"app": "web"}},
               "data": {"new-checkout": "on"}}),
    )
    .await?;
    Api::<ConfigMap>::namespaced(tenant.clone(), SAMPLE_NAMESPACE)
        .patch(
            "web-config",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"metadata": {"labels": {"tier": "front"}},
                                            "data": {"greeting": "hello again"}})),
        )
        .await
        .map(|_| ())
        .map_err(|source| DemoError::Api {
            what: "changing the sample workload".to_string(),
            source,
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::api::nonadmin::NonAdminBackup;

    #[test]
    fn the_demo_lists_its_object_store_endpoint_and_keeps_the_admins_policy() {
        let load = |text: &str| {
            let data = std::collections::BTreeMap::from([(
                crate::api::oadp::policy_sources::POLICY_CONFIGMAP_KEY.to_owned(),
                text.to_owned(),
            )]);
            crate::policy::NacPolicy::from_sources(None, Some(&data)).unwrap()
        };
        let fresh = demo_policy_yaml(None, "http://127.0.0.1:8085", None)
            .unwrap()
            .unwrap();
        let policy = load(&fresh);
        assert_eq!(
            policy
                .storage_endpoints()
                .check_url("http://127.0.0.1:8085/download/b/k"),
            Ok(crate::policy::endpoints::Vouching::ListedAddress(
                "127.0.0.1".parse().unwrap()
            ))
        );
        // Unchanged on a restart on the same port.
        assert_eq!(
            demo_policy_yaml(
                Some(&fresh),
                "http://127.0.0.1:8085",
                Some("http://127.0.0.1:8085")
            )
            .unwrap(),
            None
        );
        // Another port: the demo's old entry is replaced, the administrator's entries and
        // settings stay.
        let admin = "requireApprovalForBSL: true\nstorageEndpoints:\n  allow:\n    - https://minio.example.com\n    - http://127.0.0.1:8085\n";
        let next = demo_policy_yaml(
            Some(admin),
            "http://127.0.0.1:9999",
            Some("http://127.0.0.1:8085"),
        )
        .unwrap()
        .unwrap();
        let policy = load(&next);
        assert!(policy.settings().require_approval_for_bsl);
        let listed: Vec<String> = policy
            .storage_endpoints()
            .allow()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            listed,
            ["https://minio.example.com:443", "http://127.0.0.1:9999"]
        );
    }

    fn nab(status: serde_json::Value) -> NonAdminBackup {
        serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
            "metadata": {"name": "sample-1", "namespace": SAMPLE_NAMESPACE},
            "spec": {"backupSpec": {}},
            "status": status
        }))
        .unwrap()
    }

    #[test]
    fn the_samples_are_taken_in_order_with_the_change_after_the_first_settles() {
        assert_eq!(sample_step(false, None, false), SampleStep::CreateFirst);
        let running = nab(json!({"phase": "Created",
                                 "veleroBackup": {"status": {"phase": "InProgress"}}}));
        assert_eq!(
            sample_step(false, Some(&running), false),
            SampleStep::WaitForFirst
        );
        let queued = nab(json!({"phase": "New"}));
        assert_eq!(
            sample_step(false, Some(&queued), false),
            SampleStep::WaitForFirst
        );
        for phase in ["Completed", "PartiallyFailed", "Failed"] {
            let done = nab(json!({"phase": "Created",
                                  "veleroBackup": {"status": {"phase": phase}}}));
            assert_eq!(
                sample_step(false, Some(&done), false),
                SampleStep::ChangeThenCreateSecond,
                "{phase}"
            );
        }
        // Refused by NAC: it will not complete, the second is taken anyway.
        let refused = nab(json!({"phase": "BackingOff"}));
        assert_eq!(
            sample_step(false, Some(&refused), false),
            SampleStep::ChangeThenCreateSecond
        );
    }

    #[test]
    fn the_samples_are_taken_once() {
        let done = nab(json!({"phase": "Created",
                              "veleroBackup": {"status": {"phase": "Completed"}}}));
        assert_eq!(sample_step(false, Some(&done), true), SampleStep::Mark);
        // The first may be gone (deleted by the user) once the second exists.
        assert_eq!(sample_step(false, None, true), SampleStep::Mark);
        // Marked: deleted samples do not come back on the next start.
        assert_eq!(sample_step(true, None, false), SampleStep::Done);
    }
}
