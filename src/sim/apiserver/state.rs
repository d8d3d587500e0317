//! The emulator's mutable state and its write semantics: admission of created/updated objects,
//! status subresource isolation, generation, finalizers and deletion, namespace termination,
//! owner-reference garbage collection, CRD registration and RBAC role aggregation.
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chrono::{SecondsFormat, Utc};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use rand::Rng;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::errors::{ApiError, ErrorTarget};
use super::managed_fields::{self, Writer};
use super::patch;
use super::rbac::{self, RbacPolicy, UserInfo};
use super::registry::{Behavior, Registry, ResourceInfo, ResourceKey, resource_from_crd};
use super::schema;
use super::store::{ObjectKey, Store, uid_of};
use super::validation::{self, NameRule};

/// Finalizer kube-apiserver puts on CRDs until their objects are gone.
pub const CRD_CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";
const FOREGROUND_FINALIZER: &str = "foregroundDeletion";
const NAMESPACE_FINALIZER: &str = "kubernetes";
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// How the server treats fields the schema does not know (`fieldValidation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    Ignore,
    #[default]
    Warn,
    Strict,
}

/// Options of one write.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    pub dry_run: bool,
    pub field_validation: FieldValidation,
    /// The field manager recorded in `managedFields` (see [`managed_fields::manager_name`]);
    /// empty means `unknown`.
    pub field_manager: String,
}

/// Which part of an object a write addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Main,
    Status,
}

/// Patch formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    Merge,
    Json,
    Strategic,
}

/// Deletion propagation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Propagation {
    #[default]
    Background,
    Foreground,
    Orphan,
}

/// Options of one delete.
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    /// `orphanDependents: false` was given (the one case kube answers 202 for a pending delete).
    pub explicitly_not_orphaning: bool,
    pub dry_run: bool,
    pub propagation: Option<Propagation>,
    pub precondition_uid: Option<String>,
    pub precondition_resource_version: Option<String>,
}

/// Result of a write.
#[derive(Debug, Clone)]
pub struct Written {
    pub object: Value,
    pub warnings: Vec<String>,
    /// 201 for creates, 200 for updates.
    pub created: bool,
}

/// Result of a delete.
#[derive(Debug, Clone)]
pub struct Deleted {
    pub object: Value,
    /// False while finalizers hold the object (answered 202).
    pub gone: bool,
}

/// Where an authenticated identity came from.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TokenRecord {
    pub username: String,
    pub uid: String,
    pub groups: Vec<String>,
    /// Service-account tokens stay valid only while that account (same uid) exists.
    pub service_account: Option<ServiceAccountRef>,
    /// RFC 3339 expiry, for issued service-account tokens.
    pub expires: Option<String>,
}

/// A service account a token was issued for.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ServiceAccountRef {
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

/// SHA-256 of a token: the only form tokens are kept in.
pub fn token_digest(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// A new random bearer token.
pub fn new_token(prefix: &str) -> String {
    let bytes: [u8; 24] = rand::rng().random();
    format!("{prefix}{}", hex::encode(bytes))
}

/// The current time as Kubernetes writes it.
pub fn now_rfc3339() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Everything the emulator knows, guarded by one lock in the server.
#[derive(Debug)]
pub struct State {
    pub registry: Registry,
    pub store: Store,
    /// Token digest → identity.
    pub tokens: BTreeMap<String, TokenRecord>,
    rbac_cache: Option<Arc<RbacPolicy>>,
    gc_queue: Vec<String>,
    terminating_namespaces: BTreeSet<String>,
    deleting_crds: BTreeSet<String>,
    foreground_waiting: BTreeSet<ObjectKey>,
    clusterroles_changed: bool,
}

fn meta(object: &Value) -> &Value {
    object.get("metadata").unwrap_or(&Value::Null)
}

fn meta_str<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    meta(object).get(field).and_then(Value::as_str)
}

/// `metadata` as a mutable map, created when missing. Callers pass JSON objects only.
fn meta_mut(object: &mut Value) -> &mut serde_json::Map<String, Value> {
    if !object.is_object() {
        *object = json!({});
    }
    let slot = &mut object["metadata"];
    if !slot.is_object() {
        *slot = json!({});
    }
    match slot {
        Value::Object(m) => m,
        _ => unreachable!("metadata was just made an object"),
    }
}

fn finalizers(object: &Value) -> Vec<String> {
    meta(object)
        .get("finalizers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn set_finalizers(object: &mut Value, list: &[String]) {
    let m = meta_mut(object);
    if list.is_empty() {
        m.remove("finalizers");
    } else {
        m.insert("finalizers".into(), json!(list));
    }
}

fn is_deleting(object: &Value) -> bool {
    meta(object)
        .get("deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

fn target(info: &ResourceInfo, name: &str) -> ErrorTarget {
    ErrorTarget {
        group: info.group.clone(),
        resource: info.plural.clone(),
        kind: info.kind.clone(),
        name: name.to_string(),
    }
}

/// Records the write in `metadata.managedFields` (as an Update by the request's manager).
fn track_fields(
    info: &ResourceInfo,
    version: &str,
    old: Option<&Value>,
    body: &mut Value,
    part: Part,
    options: &WriteOptions,
    server_owned: &[&str],
) {
    let writer = Writer {
        manager: managed_fields::manager_name(Some(&options.field_manager), None),
        api_version: info.api_version(version),
        subresource: if part == Part::Status {
            "status".into()
        } else {
            String::new()
        },
        time: now_rfc3339(),
    };
    let schema = info.schemas.get(&info.versions[0]);
    managed_fields::record_update(info, schema, old, body, &writer, server_owned);
}

fn name_rule(info: &ResourceInfo) -> NameRule {
    match (info.group.as_str(), info.behavior) {
        (_, Behavior::Namespace) => NameRule::Dns1123Label,
        // Services: RFC 1123 labels (kube >= 1.34 relaxed them from RFC 1035).
        ("", _) if info.plural == "services" => NameRule::Dns1123Label,
        (RBAC_GROUP, _) => NameRule::PathSegment,
        _ => NameRule::Dns1123Subdomain,
    }
}

/// The parts of an object whose change bumps `metadata.generation`.
fn spec_view(info: &ResourceInfo, object: &Value) -> Value {
    let mut v = object.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("metadata");
        m.remove("apiVersion");
        m.remove("kind");
        if info.has_status {
            m.remove("status");
        }
    }
    v
}

fn without_resource_version(object: &Value) -> Value {
    let mut v = object.clone();
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("resourceVersion");
    }
    v
}

const GENERATE_NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

fn generated_suffix() -> String {
    let mut rng = rand::rng();
    (0..5)
        .map(|_| GENERATE_NAME_ALPHABET[rng.random_range(0..GENERATE_NAME_ALPHABET.len())] as char)
        .collect()
}

/// kube-apiserver's `maxGeneratedNameLength`: a `generateName` prefix is cut to 63 - 5 bytes
/// before the random suffix, so generated names always fit a DNS-1123 label.
pub const MAX_GENERATED_NAME_PREFIX: usize = 63 - 5;

/// `SimpleNameGenerator.GenerateName`: the prefix cut to [`MAX_GENERATED_NAME_PREFIX`] bytes
/// (on a character boundary; kube cuts bytes, names are ASCII when valid), then the suffix.
pub fn generated_name(prefix: &str, suffix: &str) -> String {
    let mut cut = prefix.len().min(MAX_GENERATED_NAME_PREFIX);
    while !prefix.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{suffix}", &prefix[..cut])
}

impl State {
    /// A fresh state with built-in resources and nothing stored.
    pub fn new(history_capacity: usize) -> Self {
        State {
            registry: Registry::with_builtins(),
            store: Store::new(history_capacity),
            tokens: BTreeMap::new(),
            rbac_cache: None,
            gc_queue: Vec::new(),
            terminating_namespaces: BTreeSet::new(),
            deleting_crds: BTreeSet::new(),
            foreground_waiting: BTreeSet::new(),
            clusterroles_changed: false,
        }
    }

    /// Rebuilds registry entries and bookkeeping from stored objects (after loading a snapshot).
    pub fn rebuild_derived(&mut self) {
        let crd_key = ResourceKey {
            group: "apiextensions.k8s.io".into(),
            resource: "customresourcedefinitions".into(),
        };
        let crds: Vec<Value> = self
            .store
            .list(&crd_key, None, None)
            .map(|(_, v)| (**v).clone())
            .collect();
        for crd in crds {
            if let Ok(typed) = serde_json::from_value::<CustomResourceDefinition>(crd.clone())
                && let Ok(info) = resource_from_crd(&typed)
            {
                self.registry.insert(info);
            }
            if is_deleting(&crd)
                && let Some(name) = meta_str(&crd, "name")
            {
                self.deleting_crds.insert(name.to_string());
            }
        }
        let ns_key = ResourceKey {
            group: String::new(),
            resource: "namespaces".into(),
        };
        self.terminating_namespaces = self
            .store
            .list(&ns_key, None, None)
            .filter(|(_, v)| is_deleting(v))
            .map(|(k, _)| k.name.clone())
            .collect();
        self.rbac_cache = None;
    }

    /// Adds a static user and returns its new token.
    pub fn add_user(&mut self, username: &str, groups: &[String]) -> String {
        let token = new_token("nac-emu-");
        self.tokens.insert(
            token_digest(&token),
            TokenRecord {
                username: username.to_string(),
                uid: uuid::Uuid::new_v4().to_string(),
                groups: groups.to_vec(),
                service_account: None,
                expires: None,
            },
        );
        token
    }

    /// Registers an existing token (restored kubeconfigs keep working).
    pub fn add_token(&mut self, token: &str, record: TokenRecord) {
        self.tokens.insert(token_digest(token), record);
    }

    /// The identity behind a bearer token; `None` when unknown, expired or its account is gone.
    pub fn authenticate(&self, token: &str) -> Option<UserInfo> {
        let record = self.tokens.get(&token_digest(token))?;
        if let Some(exp) = &record.expires
            && chrono::DateTime::parse_from_rfc3339(exp).is_ok_and(|e| e < Utc::now())
        {
            return None;
        }
        let mut groups = record.groups.clone();
        if let Some(sa) = &record.service_account {
            let key = ObjectKey {
                group: String::new(),
                resource: "serviceaccounts".into(),
                namespace: sa.namespace.clone(),
                name: sa.name.clone(),
            };
            let current = self.store.get(&key)?;
            if uid_of(&current) != Some(sa.uid.as_str()) {
                return None;
            }
        }
        if !groups.iter().any(|g| g == "system:authenticated") {
            groups.push("system:authenticated".into());
        }
        Some(UserInfo {
            username: record.username.clone(),
            uid: record.uid.clone(),
            groups,
            extra: BTreeMap::new(),
        })
    }

    /// Issues a token for a service account (TokenRequest).
    pub fn issue_service_account_token(
        &mut self,
        namespace: &str,
        name: &str,
        expiration_seconds: i64,
    ) -> Result<(String, String), ApiError> {
        let info = self.lookup_builtin("", "serviceaccounts")?;
        let key = ObjectKey::new(&info.key(), namespace, name);
        let sa = self
            .store
            .get(&key)
            .ok_or_else(|| ApiError::NotFound(target(&info, name)))?;
        let uid = uid_of(&sa).unwrap_or_default().to_string();
        let token = new_token("nac-sa-");
        let expires = (Utc::now()
            + chrono::Duration::seconds(expiration_seconds.clamp(600, 86_400 * 366)))
        .to_rfc3339_opts(SecondsFormat::Secs, true);
        self.tokens.insert(
            token_digest(&token),
            TokenRecord {
                username: format!("system:serviceaccount:{namespace}:{name}"),
                uid: uid.clone(),
                groups: vec![
                    "system:serviceaccounts".into(),
                    format!("system:serviceaccounts:{namespace}"),
                ],
                service_account: Some(ServiceAccountRef {
                    namespace: namespace.into(),
                    name: name.into(),
                    uid,
                }),
                expires: Some(expires.clone()),
            },
        );
        Ok((token, expires))
    }

    fn lookup_builtin(&self, group: &str, resource: &str) -> Result<Arc<ResourceInfo>, ApiError> {
        self.registry
            .get(&ResourceKey {
                group: group.into(),
                resource: resource.into(),
            })
            .ok_or(ApiError::NoSuchResource)
    }

    /// The RBAC policy as stored now (cached until an RBAC object changes).
    pub fn rbac_policy(&mut self) -> Arc<RbacPolicy> {
        if let Some(p) = &self.rbac_cache {
            return p.clone();
        }
        fn typed<T: serde::de::DeserializeOwned>(store: &Store, resource: &str) -> Vec<T> {
            let key = ResourceKey {
                group: RBAC_GROUP.into(),
                resource: resource.into(),
            };
            store
                .list(&key, None, None)
                .filter_map(|(_, v)| serde_json::from_value((**v).clone()).ok())
                .collect()
        }
        let policy = Arc::new(RbacPolicy {
            roles: typed::<Role>(&self.store, "roles"),
            cluster_roles: typed::<ClusterRole>(&self.store, "clusterroles"),
            role_bindings: typed::<RoleBinding>(&self.store, "rolebindings"),
            cluster_role_bindings: typed::<ClusterRoleBinding>(&self.store, "clusterrolebindings"),
        });
        self.rbac_cache = Some(policy.clone());
        policy
    }

    /// The key and current value of an object that must exist (404 otherwise).
    fn existing(
        &self,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
    ) -> Result<(ObjectKey, Arc<Value>), ApiError> {
        let key = ObjectKey::new(
            &info.key(),
            if info.namespaced { namespace } else { "" },
            name,
        );
        let current = self
            .store
            .get(&key)
            .ok_or_else(|| ApiError::NotFound(target(info, name)))?;
        Ok((key, current))
    }

    /// Reads one object.
    pub fn get(
        &self,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
    ) -> Result<Arc<Value>, ApiError> {
        self.store
            .get(&ObjectKey::new(&info.key(), namespace, name))
            .ok_or_else(|| ApiError::NotFound(target(info, name)))
    }

    fn check_namespace_accepts(
        &self,
        info: &ResourceInfo,
        namespace: &str,
        name: &str,
    ) -> Result<(), ApiError> {
        if !info.namespaced {
            return Ok(());
        }
        let ns_info = self.lookup_builtin("", "namespaces")?;
        let ns = self
            .store
            .get(&ObjectKey::new(&ns_info.key(), "", namespace))
            .ok_or_else(|| ApiError::NotFound(target(&ns_info, namespace)))?;
        if is_deleting(&ns) {
            return Err(ApiError::Forbidden {
                target: target(info, name),
                message: format!(
                    "unable to create new content in namespace {namespace} because it is being terminated"
                ),
            });
        }
        Ok(())
    }

    /// Checks identity fields of a body against the request and fills them in.
    fn normalize_body(
        &self,
        info: &ResourceInfo,
        version: &str,
        namespace: &str,
        body: &mut Value,
    ) -> Result<(), ApiError> {
        if !body.is_object() {
            return Err(ApiError::BadRequest(
                "the body of the request must be a JSON object".into(),
            ));
        }
        let expected_api_version = info.api_version(version);
        match body.get("apiVersion").and_then(Value::as_str) {
            Some(v) if v != expected_api_version => {
                return Err(ApiError::BadRequest(format!(
                    "the API version in the data ({v}) does not match the expected API version ({expected_api_version})"
                )));
            }
            _ => {}
        }
        match body.get("kind").and_then(Value::as_str) {
            Some(k) if k != info.kind => {
                return Err(ApiError::BadRequest(format!(
                    "the kind in the data ({k}) does not match the expected kind ({})",
                    info.kind
                )));
            }
            _ => {}
        }
        body["apiVersion"] = json!(info.api_version(&info.versions[0]));
        body["kind"] = json!(info.kind);
        let m = meta_mut(body);
        if info.namespaced {
            match m.get("namespace").and_then(Value::as_str) {
                Some(ns) if !ns.is_empty() && ns != namespace => {
                    return Err(ApiError::BadRequest(
                        "the namespace of the provided object does not match the namespace sent on the request"
                            .into(),
                    ));
                }
                _ => {
                    m.insert("namespace".into(), json!(namespace));
                }
            }
        } else {
            m.remove("namespace");
        }
        m.remove("selfLink");
        // `managedFields` stays: the field manager decides what to keep (see `track_fields`).
        Ok(())
    }

    /// Schema enforcement and per-kind behaviour shared by create and update. Returns warnings.
    fn admit(
        &self,
        info: &ResourceInfo,
        object: &mut Value,
        options: &WriteOptions,
    ) -> Result<Vec<String>, ApiError> {
        let name = meta_str(object, "name").unwrap_or_default().to_string();
        let mut warnings = Vec::new();
        if let Some(schema_props) = info.schemas.get(&info.versions[0]) {
            let unknown = schema::prune(schema_props, object);
            if !unknown.is_empty() {
                match options.field_validation {
                    FieldValidation::Strict => {
                        let list: Vec<String> = unknown
                            .iter()
                            .map(|f| format!("unknown field \"{}\"", f.trim_start_matches('.')))
                            .collect();
                        // kube-apiserver's wording for strict decoding failures.
                        return Err(ApiError::BadRequest(format!(
                            "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
                            list.join(", "),
                            kind = info.kind,
                            version = info.versions[0],
                        )));
                    }
                    FieldValidation::Warn => {
                        warnings.extend(
                            unknown.iter().map(|f| {
                                format!("unknown field \"{}\"", f.trim_start_matches('.'))
                            }),
                        );
                    }
                    FieldValidation::Ignore => {}
                }
            }
            schema::apply_defaults(schema_props, object);
            let errors = schema::validate(schema_props, object);
            if !errors.is_empty() {
                return Err(ApiError::Invalid {
                    target: target(info, &name),
                    errors,
                });
            }
        }
        match info.behavior {
            Behavior::Secret => fold_string_data(info, object, &name)?,
            Behavior::CustomResourceDefinition => {
                let typed: CustomResourceDefinition = serde_json::from_value(object.clone())
                    .map_err(|e| {
                        ApiError::BadRequest(format!("invalid CustomResourceDefinition: {e}"))
                    })?;
                resource_from_crd(&typed).map_err(|e| ApiError::Invalid {
                    target: target(info, &name),
                    errors: vec![validation::invalid("spec", &name, &e.to_string())],
                })?;
            }
            _ => {}
        }
        // Only custom resources and CRDs merely warn about unqualified finalizers.
        let builtin = !info.is_custom && info.behavior != Behavior::CustomResourceDefinition;
        let errors = validation::validate_object_meta(object, name_rule(info), builtin);
        if !errors.is_empty() {
            return Err(ApiError::Invalid {
                target: target(info, &name),
                errors,
            });
        }
        Ok(warnings)
    }

    /// Creates an object.
    pub fn create(
        &mut self,
        info: &ResourceInfo,
        version: &str,
        namespace: &str,
        mut body: Value,
        options: &WriteOptions,
    ) -> Result<Written, ApiError> {
        self.normalize_body(info, version, namespace, &mut body)?;
        let m = meta_mut(&mut body);
        if m.get("resourceVersion")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
        {
            return Err(ApiError::BadRequest(
                "resourceVersion should not be set on objects to be created".into(),
            ));
        }
        let has_name = m
            .get("name")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty());
        if !has_name
            && let Some(prefix) = m
                .get("generateName")
                .and_then(Value::as_str)
                .map(str::to_string)
            && !prefix.is_empty()
        {
            m.insert(
                "name".into(),
                json!(generated_name(&prefix, &generated_suffix())),
            );
        }
        for f in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ] {
            m.remove(f);
        }
        if info.has_status
            && let Some(o) = body.as_object_mut()
        {
            o.remove("status");
        }
        match info.behavior {
            Behavior::Namespace => {
                body["spec"] = json!({"finalizers": [NAMESPACE_FINALIZER]});
                body["status"] = json!({"phase": "Active"});
                let name = meta_str(&body, "name").unwrap_or_default().to_string();
                let labels = meta_mut(&mut body)
                    .entry("labels")
                    .or_insert_with(|| json!({}));
                if let Some(l) = labels.as_object_mut() {
                    l.insert("kubernetes.io/metadata.name".into(), json!(name));
                }
            }
            Behavior::CustomResourceDefinition => {
                let mut f = finalizers(&body);
                if !f.iter().any(|x| x == CRD_CLEANUP_FINALIZER) {
                    f.push(CRD_CLEANUP_FINALIZER.into());
                }
                set_finalizers(&mut body, &f);
            }
            _ => {}
        }
        let mut warnings = self.admit(info, &mut body, options)?;
        if info.is_custom {
            // On create, custom resources get a warning where built-in kinds get an error.
            for f in finalizers(&body) {
                if !f.contains('/') && !validation::STANDARD_FINALIZERS.contains(&f.as_str()) {
                    warnings.push(format!(
                        "metadata.finalizers: {}: prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers",
                        managed_fields::go_quote(&f)
                    ));
                }
            }
        }
        let server_owned: &[&str] = if info.behavior == Behavior::Namespace {
            &["spec", "status"]
        } else {
            &[]
        };
        track_fields(
            info,
            version,
            None,
            &mut body,
            Part::Main,
            options,
            server_owned,
        );
        let name = meta_str(&body, "name").unwrap_or_default().to_string();
        self.check_namespace_accepts(info, namespace, &name)?;
        let key = ObjectKey::new(
            &info.key(),
            if info.namespaced { namespace } else { "" },
            &name,
        );
        if self.store.get(&key).is_some() {
            return Err(ApiError::AlreadyExists(target(info, &name)));
        }
        let m = meta_mut(&mut body);
        m.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
        m.insert("creationTimestamp".into(), json!(now_rfc3339()));
        if info.tracks_generation {
            m.insert("generation".into(), json!(1));
        }
        if info.behavior == Behavior::CustomResourceDefinition {
            set_crd_status(&mut body);
        }
        if options.dry_run {
            return Ok(Written {
                object: self.present(info, version, body),
                warnings,
                created: true,
            });
        }
        let stored = self.commit(&key, body);
        self.after_create(info, &stored);
        self.settle();
        Ok(Written {
            object: self.present(info, version, (*stored).clone()),
            warnings,
            created: true,
        })
    }

    fn after_create(&mut self, info: &ResourceInfo, stored: &Value) {
        match info.behavior {
            Behavior::Namespace => {
                // The service-account controller gives every namespace its `default` account.
                if let Some(ns) = meta_str(stored, "name").map(str::to_string)
                    && let Ok(sa) = self.lookup_builtin("", "serviceaccounts")
                {
                    let key = ObjectKey::new(&sa.key(), &ns, "default");
                    if self.store.get(&key).is_none() {
                        let object = json!({
                            "apiVersion": "v1", "kind": "ServiceAccount",
                            "metadata": {"name": "default", "namespace": ns,
                                "uid": uuid::Uuid::new_v4().to_string(),
                                "creationTimestamp": now_rfc3339()}
                        });
                        self.commit(&key, object);
                    }
                }
            }
            Behavior::CustomResourceDefinition => {
                if let Ok(typed) =
                    serde_json::from_value::<CustomResourceDefinition>(stored.clone())
                    && let Ok(r) = resource_from_crd(&typed)
                {
                    self.registry.insert(r);
                }
            }
            _ => {}
        }
    }

    /// Replaces an object (PUT), on the main resource or its status.
    #[allow(clippy::too_many_arguments)]
    pub fn update(
        &mut self,
        info: &ResourceInfo,
        version: &str,
        namespace: &str,
        name: &str,
        mut body: Value,
        part: Part,
        options: &WriteOptions,
    ) -> Result<Written, ApiError> {
        self.normalize_body(info, version, namespace, &mut body)?;
        let body_name = meta_str(&body, "name").unwrap_or_default().to_string();
        if body_name.is_empty() {
            meta_mut(&mut body).insert("name".into(), json!(name));
        } else if body_name != name {
            return Err(ApiError::BadRequest(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        let (key, old) = self.existing(info, namespace, name)?;
        match meta_str(&body, "resourceVersion").filter(|s| !s.is_empty()) {
            Some(rv) if Some(rv) != meta_str(&old, "resourceVersion") => {
                return Err(ApiError::Conflict {
                    target: target(info, name),
                    message: "the object has been modified; please apply your changes to the latest version and try again".into(),
                });
            }
            Some(_) => {}
            None if info.is_custom => {
                return Err(ApiError::Invalid {
                    target: target(info, name),
                    errors: vec![validation::invalid(
                        "metadata.resourceVersion",
                        "0x0",
                        "must be specified for an update",
                    )],
                });
            }
            None => {}
        }
        self.update_from(info, version, &key, &old, body, part, options)
    }

    /// Applies a patch to the current object and stores the result through the update path.
    #[allow(clippy::too_many_arguments)]
    pub fn patch(
        &mut self,
        info: &ResourceInfo,
        version: &str,
        namespace: &str,
        name: &str,
        kind: PatchKind,
        patch_body: &Value,
        part: Part,
        options: &WriteOptions,
    ) -> Result<Written, ApiError> {
        let (key, old) = self.existing(info, namespace, name)?;
        let mut current = self.present(info, version, (*old).clone());
        match kind {
            PatchKind::Merge => {
                patch::check_merge_patch(patch_body).map_err(patch_error)?;
                patch::merge_patch(&mut current, patch_body);
            }
            PatchKind::Json => patch::json_patch(&mut current, patch_body).map_err(patch_error)?,
            PatchKind::Strategic => {
                patch::strategic_merge_patch(&mut current, patch_body).map_err(patch_error)?
            }
        }
        self.normalize_body(info, version, namespace, &mut current)?;
        if meta_str(&current, "name") != Some(name) {
            return Err(ApiError::BadRequest(format!(
                "the name of the object ({}) does not match the name on the URL ({name})",
                meta_str(&current, "name").unwrap_or_default()
            )));
        }
        if meta_str(&current, "resourceVersion") != meta_str(&old, "resourceVersion")
            && meta_str(&current, "resourceVersion").is_some()
        {
            return Err(ApiError::Conflict {
                target: target(info, name),
                message: "the object has been modified; please apply your changes to the latest version and try again".into(),
            });
        }
        self.update_from(info, version, &key, &old, current, part, options)
    }

    #[allow(clippy::too_many_arguments)]
    fn update_from(
        &mut self,
        info: &ResourceInfo,
        version: &str,
        key: &ObjectKey,
        old: &Arc<Value>,
        mut body: Value,
        part: Part,
        options: &WriteOptions,
    ) -> Result<Written, ApiError> {
        let name = key.name.clone();
        if info.has_status {
            match part {
                Part::Main => {
                    // Writes to the main resource never change status.
                    match old.get("status") {
                        Some(s) => body["status"] = s.clone(),
                        None => {
                            if let Some(o) = body.as_object_mut() {
                                o.remove("status");
                            }
                        }
                    }
                }
                Part::Status => {
                    // Writes to /status change nothing but status.
                    let mut next = (**old).clone();
                    match body.get("status") {
                        Some(s) => next["status"] = s.clone(),
                        None => {
                            if let Some(o) = next.as_object_mut() {
                                o.remove("status");
                            }
                        }
                    }
                    body = next;
                }
            }
        }
        // Fields the server owns.
        {
            let old_meta = meta(old).clone();
            let m = meta_mut(&mut body);
            for f in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
                "generateName",
            ] {
                match old_meta.get(f) {
                    Some(v) => m.insert(f.into(), v.clone()),
                    None => m.remove(f),
                };
            }
            if let Some(ns) = old_meta.get("namespace") {
                m.insert("namespace".into(), ns.clone());
            }
        }
        if info.behavior == Behavior::Namespace {
            body["spec"] = old.get("spec").cloned().unwrap_or(json!({}));
            body["status"] = old.get("status").cloned().unwrap_or(json!({}));
        }
        if is_deleting(old) {
            let before: BTreeSet<String> = finalizers(old).into_iter().collect();
            let added: Vec<String> = finalizers(&body)
                .into_iter()
                .filter(|f| !before.contains(f))
                .collect();
            if !added.is_empty() {
                return Err(ApiError::Invalid {
                    target: target(info, &name),
                    errors: vec![validation::forbidden(
                        "metadata.finalizers",
                        &format!(
                            "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                            added
                                .iter()
                                .map(|f| format!("\"{f}\""))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    )],
                });
            }
        }
        let warnings = self.admit(info, &mut body, options)?;
        track_fields(info, version, Some(old), &mut body, part, options, &[]);
        if info.tracks_generation {
            let generation = meta(old)
                .get("generation")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            let bumped = if spec_view(info, &body) != spec_view(info, old) {
                generation + 1
            } else {
                generation
            };
            meta_mut(&mut body).insert("generation".into(), json!(bumped));
        }
        if info.behavior == Behavior::CustomResourceDefinition {
            set_crd_status(&mut body);
        }
        body["apiVersion"] = json!(info.api_version(&info.versions[0]));
        // An update that changes nothing is not a write: no new resourceVersion, no event.
        if without_resource_version(&body) == without_resource_version(old) {
            return Ok(Written {
                object: self.present(info, version, (**old).clone()),
                warnings,
                created: false,
            });
        }
        if options.dry_run {
            meta_mut(&mut body).insert(
                "resourceVersion".into(),
                meta(old)
                    .get("resourceVersion")
                    .cloned()
                    .unwrap_or(Value::Null),
            );
            return Ok(Written {
                object: self.present(info, version, body),
                warnings,
                created: false,
            });
        }
        if is_deleting(&body) && finalizers(&body).is_empty() {
            // The last finalizer went away: the deletion completes now.
            let gone = self.remove_now(key).unwrap_or_else(|| Arc::new(body));
            self.settle();
            return Ok(Written {
                object: self.present(info, version, (*gone).clone()),
                warnings,
                created: false,
            });
        }
        let stored = self.commit(key, body);
        if info.behavior == Behavior::CustomResourceDefinition {
            self.after_create(info, &stored);
        }
        self.settle();
        Ok(Written {
            object: self.present(info, version, (*stored).clone()),
            warnings,
            created: false,
        })
    }

    /// Deletes an object, honouring finalizers, preconditions and propagation.
    pub fn delete(
        &mut self,
        info: &ResourceInfo,
        version: &str,
        namespace: &str,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        let (key, old) = self.existing(info, namespace, name)?;
        if let Some(uid) = &options.precondition_uid
            && Some(uid.as_str()) != uid_of(&old)
        {
            return Err(ApiError::Conflict {
                target: target(info, name),
                message: format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    uid_of(&old).unwrap_or_default()
                ),
            });
        }
        if let Some(rv) = &options.precondition_resource_version
            && Some(rv.as_str()) != meta_str(&old, "resourceVersion")
        {
            return Err(ApiError::Conflict {
                target: target(info, name),
                message: format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                    meta_str(&old, "resourceVersion").unwrap_or_default()
                ),
            });
        }
        if options.dry_run {
            let gone = finalizers(&old).is_empty() && info.behavior != Behavior::Namespace;
            return Ok(Deleted {
                object: self.present(info, version, (*old).clone()),
                gone,
            });
        }
        let result = self.delete_key(info, &key, options.propagation.unwrap_or_default());
        self.settle();
        let (object, gone) = result;
        Ok(Deleted {
            object: self.present(info, version, (*object).clone()),
            gone,
        })
    }

    /// Deletion of one stored object; returns the object as last seen and whether it is gone.
    fn delete_key(
        &mut self,
        info: &ResourceInfo,
        key: &ObjectKey,
        propagation: Propagation,
    ) -> (Arc<Value>, bool) {
        let Some(old) = self.store.get(key) else {
            return (Arc::new(Value::Null), true);
        };
        let mut next = (*old).clone();
        let mut finals = finalizers(&next);
        if propagation == Propagation::Orphan
            && let Some(uid) = uid_of(&old).map(str::to_string)
        {
            self.orphan_dependents(&uid);
        }
        if propagation == Propagation::Foreground
            && !is_deleting(&old)
            && uid_of(&old).is_some_and(|u| !self.store.dependents_of(u).is_empty())
        {
            finals.push(FOREGROUND_FINALIZER.into());
            set_finalizers(&mut next, &finals);
            self.foreground_waiting.insert(key.clone());
            if let Some(uid) = uid_of(&old) {
                self.gc_queue.push(uid.to_string());
            }
        }
        match info.behavior {
            Behavior::Namespace => {
                if !is_deleting(&old) {
                    self.mark_deleting(&mut next, info);
                    next["status"] = json!({"phase": "Terminating"});
                    let stored = self.commit(key, next);
                    self.terminating_namespaces.insert(key.name.clone());
                    return (stored, false);
                }
                return (old, false);
            }
            Behavior::CustomResourceDefinition => {
                if !is_deleting(&old) {
                    self.mark_deleting(&mut next, info);
                    let stored = self.commit(key, next);
                    self.deleting_crds.insert(key.name.clone());
                    return (stored, false);
                }
                return (old, false);
            }
            _ => {}
        }
        if finals.is_empty() {
            let gone = self.remove_now(key).unwrap_or(old);
            return (gone, true);
        }
        if is_deleting(&old) && next == *old {
            return (old, false);
        }
        if !is_deleting(&old) {
            self.mark_deleting(&mut next, info);
        }
        let stored = self.commit(key, next);
        (stored, false)
    }

    fn mark_deleting(&self, object: &mut Value, info: &ResourceInfo) {
        let generation = meta(object).get("generation").and_then(Value::as_i64);
        let m = meta_mut(object);
        m.insert("deletionTimestamp".into(), json!(now_rfc3339()));
        m.insert("deletionGracePeriodSeconds".into(), json!(0));
        if info.tracks_generation
            && let Some(g) = generation
        {
            m.insert("generation".into(), json!(g + 1));
        }
    }

    fn orphan_dependents(&mut self, uid: &str) {
        for dep in self.store.dependents_of(uid) {
            if let Some(obj) = self.store.get(&dep) {
                let mut next = (*obj).clone();
                if let Some(refs) = next
                    .get_mut("metadata")
                    .and_then(|m| m.get_mut("ownerReferences"))
                    .and_then(Value::as_array_mut)
                {
                    refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid));
                    if refs.is_empty()
                        && let Some(m) = next.get_mut("metadata").and_then(Value::as_object_mut)
                    {
                        m.remove("ownerReferences");
                    }
                }
                self.commit(&dep, next);
            }
        }
    }

    fn remove_now(&mut self, key: &ObjectKey) -> Option<Arc<Value>> {
        let removed = self.store.remove(key)?;
        if let Some(uid) = uid_of(&removed) {
            self.gc_queue.push(uid.to_string());
        }
        self.note_change(key);
        if key.group == "apiextensions.k8s.io" && key.resource == "customresourcedefinitions" {
            self.deleting_crds.remove(&key.name);
            if let Ok(typed) =
                serde_json::from_value::<CustomResourceDefinition>((*removed).clone())
            {
                self.registry.remove(&ResourceKey {
                    group: typed.spec.group.clone(),
                    resource: typed.spec.names.plural.clone(),
                });
            }
        }
        if key.group.is_empty() && key.resource == "namespaces" {
            self.terminating_namespaces.remove(&key.name);
        }
        Some(removed)
    }

    fn commit(&mut self, key: &ObjectKey, object: Value) -> Arc<Value> {
        let stored = self.store.put(key.clone(), object);
        self.note_change(key);
        stored
    }

    fn note_change(&mut self, key: &ObjectKey) {
        if key.group == RBAC_GROUP {
            self.rbac_cache = None;
            if key.resource == "clusterroles" {
                self.clusterroles_changed = true;
            }
        }
    }

    /// Runs the in-server controllers until nothing changes: namespace termination, CRD cleanup,
    /// garbage collection of dependents, foreground deletion, cluster-role aggregation.
    fn settle(&mut self) {
        for _round in 0..10_000 {
            let mut progressed = false;
            for ns in self.terminating_namespaces.clone() {
                progressed |= self.advance_namespace_termination(&ns);
            }
            for crd in self.deleting_crds.clone() {
                progressed |= self.advance_crd_cleanup(&crd);
            }
            while let Some(uid) = self.gc_queue.pop() {
                for dep in self.store.dependents_of(&uid) {
                    let Some(obj) = self.store.get(&dep) else {
                        continue;
                    };
                    let owners_left = meta(&obj)
                        .get("ownerReferences")
                        .and_then(Value::as_array)
                        .is_some_and(|refs| {
                            refs.iter().any(|r| {
                                r.get("uid")
                                    .and_then(Value::as_str)
                                    .is_some_and(|u| self.store.key_of_uid(u).is_some())
                            })
                        });
                    if !owners_left
                        && !is_deleting(&obj)
                        && let Some(info) = self.registry.get(&dep.resource_key())
                    {
                        self.delete_key(&info, &dep, Propagation::Background);
                        progressed = true;
                    } else if owners_left && !is_deleting(&obj) {
                        // The owner is being deleted in the foreground: dependents go first.
                        let owner_foreground = self
                            .store
                            .key_of_uid(&uid)
                            .is_some_and(|k| self.foreground_waiting.contains(k));
                        if owner_foreground
                            && let Some(info) = self.registry.get(&dep.resource_key())
                        {
                            self.delete_key(&info, &dep, Propagation::Background);
                            progressed = true;
                        }
                    }
                }
            }
            for key in self.foreground_waiting.clone() {
                let Some(obj) = self.store.get(&key) else {
                    self.foreground_waiting.remove(&key);
                    continue;
                };
                let waiting = uid_of(&obj).is_some_and(|u| !self.store.dependents_of(u).is_empty());
                if !waiting {
                    self.foreground_waiting.remove(&key);
                    let rest: Vec<String> = finalizers(&obj)
                        .into_iter()
                        .filter(|f| f != FOREGROUND_FINALIZER)
                        .collect();
                    let mut next = (*obj).clone();
                    set_finalizers(&mut next, &rest);
                    if rest.is_empty() {
                        self.remove_now(&key);
                    } else {
                        self.commit(&key, next);
                    }
                    progressed = true;
                }
            }
            if self.clusterroles_changed {
                self.clusterroles_changed = false;
                progressed |= self.aggregate_cluster_roles();
            }
            if !progressed {
                return;
            }
        }
    }

    fn advance_namespace_termination(&mut self, ns: &str) -> bool {
        let mut progressed = false;
        for key in self.store.keys_in_namespace(ns) {
            let Some(obj) = self.store.get(&key) else {
                continue;
            };
            if is_deleting(&obj) {
                continue;
            }
            if let Some(info) = self.registry.get(&key.resource_key()) {
                self.delete_key(&info, &key, Propagation::Background);
                progressed = true;
            }
        }
        if self.store.namespace_is_empty(ns) {
            let Ok(info) = self.lookup_builtin("", "namespaces") else {
                return progressed;
            };
            let key = ObjectKey::new(&info.key(), "", ns);
            if let Some(obj) = self.store.get(&key) {
                if finalizers(&obj).is_empty() {
                    self.remove_now(&key);
                } else {
                    // Only metadata finalizers of others remain: spec finalizer is done.
                    let mut next = (*obj).clone();
                    next["spec"] = json!({});
                    if next != *obj {
                        self.commit(&key, next);
                    }
                    self.terminating_namespaces.remove(ns);
                }
                progressed = true;
            } else {
                self.terminating_namespaces.remove(ns);
            }
        }
        progressed
    }

    fn advance_crd_cleanup(&mut self, crd_name: &str) -> bool {
        let Ok(crd_info) = self.lookup_builtin("apiextensions.k8s.io", "customresourcedefinitions")
        else {
            return false;
        };
        let crd_key = ObjectKey::new(&crd_info.key(), "", crd_name);
        let Some(crd) = self.store.get(&crd_key) else {
            self.deleting_crds.remove(crd_name);
            return false;
        };
        let Ok(typed) = serde_json::from_value::<CustomResourceDefinition>((*crd).clone()) else {
            return false;
        };
        let resource = ResourceKey {
            group: typed.spec.group.clone(),
            resource: typed.spec.names.plural.clone(),
        };
        let keys: Vec<ObjectKey> = self
            .store
            .list(&resource, None, None)
            .map(|(k, _)| k.clone())
            .collect();
        let mut progressed = false;
        if let Some(info) = self.registry.get(&resource) {
            for key in &keys {
                if self.store.get(key).is_some_and(|o| !is_deleting(&o)) {
                    self.delete_key(&info, key, Propagation::Background);
                    progressed = true;
                }
            }
        }
        if self.store.list(&resource, None, None).next().is_none() {
            let rest: Vec<String> = finalizers(&crd)
                .into_iter()
                .filter(|f| f != CRD_CLEANUP_FINALIZER)
                .collect();
            if rest.is_empty() {
                self.remove_now(&crd_key);
            } else {
                let mut next = (*crd).clone();
                set_finalizers(&mut next, &rest);
                self.commit(&crd_key, next);
                self.deleting_crds.remove(crd_name);
            }
            progressed = true;
        }
        progressed
    }

    fn aggregate_cluster_roles(&mut self) -> bool {
        let policy = self.rbac_policy();
        let changed = rbac::aggregate_cluster_roles(&policy.cluster_roles);
        let mut progressed = false;
        for role in changed {
            let Some(name) = role.metadata.name.clone() else {
                continue;
            };
            let key = ObjectKey {
                group: RBAC_GROUP.into(),
                resource: "clusterroles".into(),
                namespace: String::new(),
                name,
            };
            let Some(old) = self.store.get(&key) else {
                continue;
            };
            let mut next = (*old).clone();
            next["rules"] = serde_json::to_value(&role.rules).unwrap_or(json!([]));
            if next != *old {
                self.commit(&key, next);
                progressed = true;
            }
        }
        progressed
    }

    /// Stores an object directly (bootstrap, seeding), bypassing admission. Assigns uid and
    /// creationTimestamp when missing.
    pub fn seed(&mut self, info: &ResourceInfo, mut object: Value) -> Arc<Value> {
        let namespace = meta_str(&object, "namespace")
            .unwrap_or_default()
            .to_string();
        let name = meta_str(&object, "name").unwrap_or_default().to_string();
        object["apiVersion"] = json!(info.api_version(&info.versions[0]));
        object["kind"] = json!(info.kind);
        let m = meta_mut(&mut object);
        m.entry("uid")
            .or_insert_with(|| json!(uuid::Uuid::new_v4().to_string()));
        m.entry("creationTimestamp")
            .or_insert_with(|| json!(now_rfc3339()));
        let key = ObjectKey::new(
            &info.key(),
            if info.namespaced { &namespace } else { "" },
            &name,
        );
        let stored = self.commit(&key, object);
        self.after_create(info, &stored);
        self.settle();
        stored
    }

    /// The object as served at `version` (storage keeps one version; conversion is `None`).
    pub fn present(&self, info: &ResourceInfo, version: &str, mut object: Value) -> Value {
        if object.is_object() {
            object["apiVersion"] = json!(info.api_version(version));
            object["kind"] = json!(info.kind);
        }
        object
    }
}

/// kube's answers to patches that are malformed (400), cannot be applied (422) or break the
/// strategic merge (500).
fn patch_error(e: patch::PatchError) -> ApiError {
    match e {
        patch::PatchError::BadRequest(m) => ApiError::BadRequest(m),
        patch::PatchError::Unprocessable(m) => ApiError::Unprocessable(m),
        patch::PatchError::Internal(m) => ApiError::Internal {
            code: 500,
            message: m,
        },
    }
}

fn fold_string_data(info: &ResourceInfo, object: &mut Value, name: &str) -> Result<(), ApiError> {
    use base64::Engine as _;
    let Some(map) = object.as_object_mut() else {
        return Ok(());
    };
    if let Some(data) = map.get("data").and_then(Value::as_object) {
        for (k, v) in data {
            let valid = v
                .as_str()
                .is_some_and(|s| base64::engine::general_purpose::STANDARD.decode(s).is_ok());
            if !valid {
                return Err(ApiError::Invalid {
                    target: target(info, name),
                    errors: vec![validation::invalid(
                        &format!("data[{k}]"),
                        "<value>",
                        "must be base64 encoded",
                    )],
                });
            }
        }
    }
    if let Some(Value::Object(string_data)) = map.remove("stringData") {
        let data = map.entry("data").or_insert_with(|| json!({}));
        if let Some(d) = data.as_object_mut() {
            for (k, v) in string_data {
                let text = v.as_str().unwrap_or_default();
                d.insert(
                    k,
                    json!(base64::engine::general_purpose::STANDARD.encode(text)),
                );
            }
        }
    }
    // kube defaults a missing or empty type.
    if map
        .get("type")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        map.insert("type".into(), json!("Opaque"));
    }
    Ok(())
}

fn set_crd_status(object: &mut Value) {
    let names = object.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let stored: Vec<Value> = object
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .filter_map(|v| v.get("name").cloned())
                .collect()
        })
        .unwrap_or_default();
    let now = now_rfc3339();
    let previous = object.get("status").cloned().unwrap_or(json!({}));
    let since = |t: &str| {
        previous
            .get("conditions")
            .and_then(Value::as_array)
            .and_then(|cs| {
                cs.iter()
                    .find(|c| c.get("type").and_then(Value::as_str) == Some(t))
            })
            .and_then(|c| c.get("lastTransitionTime").cloned())
            .unwrap_or(json!(now))
    };
    object["status"] = json!({
        "acceptedNames": names,
        "storedVersions": stored,
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
             "message": "no conflicts found", "lastTransitionTime": since("NamesAccepted")},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted", "lastTransitionTime": since("Established")}
        ]
    });
}
