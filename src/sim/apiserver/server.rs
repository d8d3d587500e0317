//! The emulator as a service: authentication, authorization, fault injection and audit around
//! every request, then dispatch to discovery, reviews, reads, writes and watches.
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Request, State as AxumState};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use rand::Rng;
use serde_json::{Value, json};

use crate::api::selector::Selector;

use super::audit::{AuditEntry, AuditLog};
use super::discovery;
use super::errors::{ApiError, ErrorTarget};
use super::faults::FaultPlan;
use super::managed_fields;
use super::openapi;
use super::openapi_v2;
use super::persist::{self, PersistError};
use super::projects;
use super::protobuf;
use super::rbac::{self, RequestAttributes, UserInfo};
use super::registry::{Behavior, ResourceInfo};
use super::request::{self, RequestTarget, ResourceRequest};
use super::reviews;
use super::schema::{FieldError, FieldErrorKind};
use super::selectors::{FieldSelector, object_matches};
use super::state::{
    DeleteOptions, FieldValidation, Part, PatchKind, Propagation, State, WriteOptions, now_rfc3339,
};
use super::store::ObjectKey;
use super::table::{self, IncludeObject};
use super::watch::{self, WatchRequest};

/// Largest request body accepted (kube-apiserver's limit is 3 MiB for most requests).
const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// Start-up failures of the emulator.
#[derive(Debug, thiserror::Error)]
pub enum EmulatorError {
    /// The data directory or the state saved in it.
    #[error(transparent)]
    Persist(#[from] PersistError),
    #[error("cannot open audit log: {0}")]
    Audit(std::io::Error),
}

/// Emulator settings.
#[derive(Debug, Clone)]
pub struct EmulatorConfig {
    /// Events kept for watches resuming from an older resourceVersion.
    pub history_capacity: usize,
    /// How often idle watches that asked for bookmarks get one.
    pub bookmark_interval: Duration,
    /// Where state is persisted (none: memory only).
    pub data_dir: Option<PathBuf>,
    /// JSON-lines audit file.
    pub audit_log: Option<PathBuf>,
    /// Audit entries kept in memory.
    pub audit_capacity: usize,
    /// Serve OpenShift's `project.openshift.io/v1` projects (a per-user view of namespaces).
    /// Off by default: plain Kubernetes has no projects API.
    pub openshift_projects: bool,
}

impl Default for EmulatorConfig {
    fn default() -> Self {
        EmulatorConfig {
            history_capacity: 10_000,
            bookmark_interval: Duration::from_secs(5),
            data_dir: None,
            audit_log: None,
            audit_capacity: 10_000,
            openshift_projects: false,
        }
    }
}

pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
    pub(crate) config: EmulatorConfig,
    faults: RwLock<FaultPlan>,
    audit: AuditLog,
    pub(crate) drop_watches: tokio::sync::watch::Sender<u64>,
    admin_token: String,
}

/// A running emulator: cheap to clone, shared by every connection.
#[derive(Clone)]
pub struct ApiServer {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for ApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiServer").finish_non_exhaustive()
    }
}

impl ApiServer {
    /// Starts an emulator: restores state from `data_dir` when saved there, else bootstraps a
    /// fresh cluster (system namespaces, bootstrap RBAC) and an `admin` user in `system:masters`.
    pub fn new(config: EmulatorConfig) -> Result<Self, EmulatorError> {
        let mut state = State::new(config.history_capacity);
        let restored = match &config.data_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir).map_err(|source| PersistError::DataDir {
                    path: dir.clone(),
                    source,
                })?;
                persist::load(dir, &mut state)?
            }
            None => false,
        };
        if !restored {
            bootstrap(&mut state);
        }
        if config.openshift_projects {
            state.registry.insert(projects::resource());
        }
        // The admin identity is stable across restarts when persisted.
        let admin_token = match config
            .data_dir
            .as_ref()
            .and_then(|d| persist::read_admin_token(d))
        {
            Some(t) if state.authenticate(&t).is_some() => t,
            _ => {
                let t = state.add_user("admin", &["system:masters".to_string()]);
                if let Some(d) = &config.data_dir {
                    persist::write_admin_token(d, &t).map_err(|source| PersistError::DataDir {
                        path: d.clone(),
                        source,
                    })?;
                }
                t
            }
        };
        let audit = AuditLog::new(config.audit_capacity, config.audit_log.as_deref())
            .map_err(EmulatorError::Audit)?;
        let (drop_watches, _) = tokio::sync::watch::channel(0u64);
        let server = ApiServer {
            shared: Arc::new(Shared {
                state: Mutex::new(state),
                config,
                faults: RwLock::new(FaultPlan::default()),
                audit,
                drop_watches,
                admin_token,
            }),
        };
        server.save()?;
        Ok(server)
    }

    /// The axum router serving the Kubernetes API.
    pub fn router(&self) -> Router {
        Router::new().fallback(handle).with_state(self.clone())
    }

    /// Token of the built-in `admin` user (group `system:masters`).
    pub fn admin_token(&self) -> String {
        self.shared.admin_token.clone()
    }

    /// Adds a user with `groups`; earlier static tokens of the same user are revoked. Returns the
    /// new token. The user has no rights until bound, as in a real cluster.
    pub fn add_user(&self, username: &str, groups: &[String]) -> String {
        let token = {
            let mut s = self.lock();
            s.tokens
                .retain(|_, r| !(r.username == username && r.service_account.is_none()));
            s.add_user(username, groups)
        };
        if let Err(e) = self.save() {
            tracing::warn!(error = %e, "could not persist emulator state");
        }
        token
    }

    /// Runs `f` on the locked state (seeding, tests).
    pub fn with_state<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.lock())
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock must not take the whole emulator down.
        self.shared
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Replaces the fault plan.
    pub fn set_faults(&self, plan: FaultPlan) {
        if let Ok(mut f) = self.shared.faults.write() {
            *f = plan;
        }
    }

    /// Ends every open watch now (clients must re-watch).
    pub fn drop_watches(&self) {
        self.shared.drop_watches.send_modify(|g| *g += 1);
    }

    /// Recent audit entries, oldest first.
    pub fn audit_entries(&self) -> Vec<AuditEntry> {
        self.shared.audit.entries()
    }

    /// Writes state to the data directory, if any.
    pub fn save(&self) -> Result<(), EmulatorError> {
        if let Some(dir) = &self.shared.config.data_dir {
            let snapshot = persist::snapshot(&self.lock());
            persist::write(dir, &snapshot)?;
        }
        Ok(())
    }

    /// Saves state every `interval` while it changes (for `--data-dir`). Runs until dropped.
    pub async fn persist_periodically(self, interval: Duration) {
        let mut last = 0u64;
        loop {
            tokio::time::sleep(interval).await;
            let rv = self.lock().store.resource_version();
            if rv != last {
                match self.save() {
                    Ok(()) => last = rv,
                    Err(e) => tracing::warn!(error = %e, "could not persist emulator state"),
                }
            }
        }
    }

    /// A kube client talking to this emulator in-process (no socket) as the holder of `token`,
    /// identified as NAC's command line (`nac/<version>`).
    pub fn client(&self, token: &str) -> kube::Client {
        self.client_as(
            token,
            &crate::api::client_identity::Component::Cli.identity(),
        )
    }

    /// [`Self::client`] sending `identity`'s User-Agent and field manager, as the clients NAC
    /// builds for a real server do.
    pub fn client_as(
        &self,
        token: &str,
        identity: &crate::api::client_identity::ClientIdentity,
    ) -> kube::Client {
        let value = HeaderValue::from_str(&format!("Bearer {token}"))
            .unwrap_or_else(|_| HeaderValue::from_static("Bearer invalid"));
        let router = self.router();
        let service = tower::ServiceBuilder::new()
            .map_request(move |mut req: http::Request<kube::client::Body>| {
                req.headers_mut()
                    .insert(header::AUTHORIZATION, value.clone());
                req
            })
            .layer(identity.layer())
            .service(router);
        kube::Client::new(service, "default")
    }
}

/// Objects a fresh cluster has before anyone uses it.
fn bootstrap(state: &mut State) {
    let lookup = |s: &State, g: &str, r: &str| {
        s.registry.get(&super::registry::ResourceKey {
            group: g.into(),
            resource: r.into(),
        })
    };
    if let Some(ns) = lookup(state, "", "namespaces") {
        for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            state.seed(
                &ns,
                json!({"metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
                       "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}),
            );
        }
    }
    if let Some(cr) = lookup(state, rbac::RBAC_API_GROUP, "clusterroles") {
        for role in rbac::bootstrap_cluster_roles() {
            if let Ok(v) = serde_json::to_value(&role) {
                state.seed(&cr, v);
            }
        }
    }
    if let Some(crb) = lookup(state, rbac::RBAC_API_GROUP, "clusterrolebindings") {
        for binding in rbac::bootstrap_cluster_role_bindings() {
            if let Ok(v) = serde_json::to_value(&binding) {
                state.seed(&crb, v);
            }
        }
    }
}

fn bearer_token(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_string())
}

/// Applies `Impersonate-*` headers as kube-apiserver does: the caller must be allowed the
/// `impersonate` verb on each user, group, uid and extra it asks for; the request then runs as
/// the impersonated identity.
fn impersonate(
    server: &ApiServer,
    caller: UserInfo,
    headers: &HeaderMap,
) -> Result<UserInfo, ApiError> {
    let values = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_string))
            .collect()
    };
    let user = values("impersonate-user").into_iter().next();
    let groups = values("impersonate-group");
    let uid = values("impersonate-uid").into_iter().next();
    let mut extra: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (name, value) in headers {
        if let Some(key) = name.as_str().strip_prefix("impersonate-extra-")
            && let Ok(v) = value.to_str()
        {
            let key = percent_encoding::percent_decode_str(key)
                .decode_utf8_lossy()
                .to_string();
            extra.entry(key).or_default().push(v.to_string());
        }
    }
    let Some(username) = user else {
        if groups.is_empty() && uid.is_none() && extra.is_empty() {
            return Ok(caller);
        }
        return Err(ApiError::BadRequest(
            "impersonating groups, uid or extra requires impersonating a user (Impersonate-User)"
                .into(),
        ));
    };
    let policy = server.lock().rbac_policy();
    let check =
        |group: &str, resource: &str, subresource: &str, name: &str, namespace: Option<String>| {
            let attrs = RequestAttributes {
                user: caller.clone(),
                verb: "impersonate".into(),
                namespace,
                api_group: group.into(),
                resource: resource.into(),
                subresource: subresource.into(),
                name: name.into(),
                non_resource_path: None,
            };
            if rbac::authorize(&policy, &attrs).allowed {
                Ok(())
            } else {
                Err(ApiError::Forbidden {
                    target: ErrorTarget {
                        group: group.into(),
                        resource: resource.into(),
                        kind: String::new(),
                        name: name.into(),
                    },
                    message: rbac::forbidden_message(&attrs),
                })
            }
        };
    let mut implied_groups = Vec::new();
    match username
        .strip_prefix("system:serviceaccount:")
        .and_then(|rest| rest.split_once(':'))
    {
        Some((ns, sa)) => {
            check("", "serviceaccounts", "", sa, Some(ns.to_string()))?;
            implied_groups.push("system:serviceaccounts".to_string());
            implied_groups.push(format!("system:serviceaccounts:{ns}"));
        }
        None => check("", "users", "", &username, None)?,
    }
    for g in &groups {
        check("", "groups", "", g, None)?;
    }
    if let Some(u) = &uid {
        check("authentication.k8s.io", "uids", "", u, None)?;
    }
    for (key, vals) in &extra {
        for v in vals {
            check("authentication.k8s.io", "userextras", key, v, None)?;
        }
    }
    let mut all_groups = groups;
    all_groups.extend(implied_groups);
    if username != "system:anonymous" && !all_groups.iter().any(|g| g == "system:authenticated") {
        all_groups.push("system:authenticated".into());
    }
    Ok(UserInfo {
        username,
        uid: uid.unwrap_or_default(),
        groups: all_groups,
        extra,
    })
}

fn anonymous() -> UserInfo {
    UserInfo {
        username: "system:anonymous".into(),
        uid: String::new(),
        groups: vec!["system:unauthenticated".into()],
        extra: Default::default(),
    }
}

fn json_response(code: StatusCode, body: &Value) -> Response {
    (code, axum::Json(body)).into_response()
}

/// Parsed query string (last value wins, as Go's `url.Values.Get` takes the first — kube clients
/// never repeat these keys).
type Query = HashMap<String, String>;

fn parse_query(uri: &http::Uri) -> Query {
    uri.query()
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default()
}

fn is_true(q: &Query, key: &str) -> bool {
    matches!(q.get(key).map(String::as_str), Some("true" | "1"))
}

/// The single entry point for every request.
async fn handle(AxumState(server): AxumState<ApiServer>, req: Request) -> Response {
    let started = Instant::now();
    let method = req.method().as_str().to_string();
    let uri = req.uri().clone();
    let path = uri.path().to_string();
    let query = parse_query(&uri);
    let headers = req.headers().clone();
    let token = bearer_token(&headers);
    let user = match &token {
        None => Some(anonymous()),
        Some(t) => server.lock().authenticate(t),
    };
    let target = request::parse(&method, &path, is_true(&query, "watch"));
    let (verb, resource_label, namespace, name) = match &target {
        RequestTarget::Resource(r) => (
            r.verb.clone(),
            format!(
                "{}/{}{}",
                r.group,
                r.resource,
                if r.subresource.is_empty() {
                    String::new()
                } else {
                    format!("/{}", r.subresource)
                }
            ),
            r.namespace.clone(),
            r.name.clone(),
        ),
        RequestTarget::NonResource(p) => (
            method.to_ascii_lowercase(),
            p.clone(),
            String::new(),
            String::new(),
        ),
    };
    // The audit log names who authenticated (impersonation changes whom the request acts as).
    let username = match (&token, &user) {
        (None, _) => "system:anonymous".to_string(),
        (Some(_), Some(u)) => u.username.clone(),
        (Some(_), None) => "<invalid token>".to_string(),
    };
    let user = user.map(|u| impersonate(&server, u, &headers));
    let response = match user {
        None => ApiError::Unauthorized.into_response(),
        Some(Err(e)) => e.into_response(),
        Some(Ok(user)) => {
            let body = axum::body::to_bytes(req.into_body(), MAX_BODY_BYTES).await;
            match body {
                Err(_) => ApiError::Internal {
                    code: 413,
                    message: "Request entity too large: limit is 3145728".into(),
                }
                .into_response(),
                Ok(body) => {
                    let ctx = Ctx {
                        server: server.clone(),
                        user: user.clone(),
                        query,
                        headers,
                        body: body.to_vec(),
                    };
                    match serve(ctx, &method, target).await {
                        Ok(r) => r,
                        Err(e) => e.into_response(),
                    }
                }
            }
        }
    };
    server.shared.audit.record(AuditEntry {
        time: now_rfc3339(),
        user: username,
        verb,
        resource: resource_label,
        namespace,
        name,
        code: response.status().as_u16(),
        latency_ms: started.elapsed().as_millis() as u64,
    });
    response
}

struct Ctx {
    server: ApiServer,
    user: UserInfo,
    query: Query,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Ctx {
    fn authorize(&self, attrs: RequestAttributes, target: ErrorTarget) -> Result<(), ApiError> {
        let policy = self.server.lock().rbac_policy();
        let decision = rbac::authorize(&policy, &attrs);
        if decision.allowed {
            Ok(())
        } else {
            let mut message = rbac::forbidden_message(&attrs);
            if !decision.reason.is_empty() {
                message = format!("{message}: {}", decision.reason);
            }
            Err(ApiError::Forbidden { target, message })
        }
    }

    fn accept(&self) -> String {
        self.headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("application/json")
            .to_string()
    }

    fn content_type(&self) -> String {
        self.headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("application/json")
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase()
    }

    fn body_json(&self) -> Result<Value, ApiError> {
        if self.body.is_empty() {
            return Err(ApiError::BadRequest("the request body is empty".into()));
        }
        match self.content_type().as_str() {
            "application/vnd.kubernetes.protobuf" => {
                protobuf::decode(&self.body).map_err(|e| match e {
                    protobuf::ProtoError::UnsupportedKind(_) => {
                        ApiError::UnsupportedMediaType(e.to_string())
                    }
                    other => ApiError::BadRequest(other.to_string()),
                })
            }
            "application/yaml"
            | "application/x-yaml"
            | "text/yaml"
            | "application/apply-patch+yaml" => serde_yaml::from_slice(&self.body)
                .map_err(|e| ApiError::BadRequest(format!("error decoding YAML: {e}"))),
            _ => serde_json::from_slice(&self.body).map_err(|e| {
                ApiError::BadRequest(format!("couldn't get version/kind; json parse error: {e}"))
            }),
        }
    }

    /// The request's field manager: `fieldManager` (validated as kube does, answering 422 on the
    /// `CreateOptions`/`UpdateOptions`/`PatchOptions` kind), else from the User-Agent.
    fn field_manager(&self, options_kind: &str) -> Result<String, ApiError> {
        let param = self.query.get("fieldManager").map(String::as_str);
        if let Some(m) = param
            && let Some((too_long, detail)) = managed_fields::field_manager_problem(m)
        {
            let error = if too_long {
                FieldError::without_value("fieldManager", FieldErrorKind::TooLong, &detail)
            } else {
                FieldError {
                    field: "fieldManager".into(),
                    kind: FieldErrorKind::Invalid,
                    detail: format!("Invalid value: {}: {detail}", managed_fields::go_quote(m)),
                }
            };
            return Err(ApiError::Invalid {
                target: ErrorTarget {
                    group: "meta.k8s.io".into(),
                    resource: String::new(),
                    kind: options_kind.into(),
                    name: String::new(),
                },
                errors: vec![error],
            });
        }
        let agent = self
            .headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok());
        Ok(managed_fields::manager_name(param, agent))
    }

    fn write_options(&self, options_kind: &str) -> Result<WriteOptions, ApiError> {
        let field_validation = match self.query.get("fieldValidation").map(String::as_str) {
            None | Some("") | Some("Warn") => FieldValidation::Warn,
            Some("Strict") => FieldValidation::Strict,
            Some("Ignore") => FieldValidation::Ignore,
            Some(other) => {
                return Err(ApiError::BadRequest(format!(
                    "fieldValidation: Invalid value: {other:?}: must be one of Ignore, Warn, Strict"
                )));
            }
        };
        Ok(WriteOptions {
            dry_run: self.dry_run()?,
            field_validation,
            field_manager: self.field_manager(options_kind)?,
        })
    }

    fn dry_run(&self) -> Result<bool, ApiError> {
        match self.query.get("dryRun").map(String::as_str) {
            None | Some("") => Ok(false),
            Some("All") => Ok(true),
            Some(other) => Err(ApiError::BadRequest(format!(
                "dryRun: Unsupported value: {other:?}: supported values: \"All\""
            ))),
        }
    }
}

async fn serve(ctx: Ctx, method: &str, target: RequestTarget) -> Result<Response, ApiError> {
    match target {
        RequestTarget::NonResource(path) => serve_non_resource(ctx, method, &path).await,
        RequestTarget::Resource(r) => serve_resource(ctx, method, r).await,
    }
}

async fn serve_non_resource(ctx: Ctx, method: &str, path: &str) -> Result<Response, ApiError> {
    let verb = match method {
        "HEAD" => "get".to_string(),
        other => other.to_ascii_lowercase(),
    };
    let attrs = RequestAttributes {
        user: ctx.user.clone(),
        verb: verb.clone(),
        namespace: None,
        api_group: String::new(),
        resource: String::new(),
        subresource: String::new(),
        name: String::new(),
        non_resource_path: Some(path.to_string()),
    };
    ctx.authorize(attrs, ErrorTarget::default())?;
    let registry = ctx.server.lock().registry.clone();
    let segments: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let body = match (method, segments.as_slice()) {
        ("GET", ["version"]) => discovery::version(),
        ("GET", ["healthz" | "livez" | "readyz", ..]) => {
            return Ok((StatusCode::OK, "ok").into_response());
        }
        ("GET", ["api"]) => discovery::core_versions(),
        ("GET", ["api", v]) => {
            discovery::resource_list(&registry, "", v).ok_or(ApiError::NoSuchResource)?
        }
        ("GET", ["apis"]) => discovery::groups(&registry),
        ("GET", ["apis", g]) => discovery::group(&registry, g).ok_or(ApiError::NoSuchResource)?,
        ("GET", ["apis", g, v]) => {
            discovery::resource_list(&registry, g, v).ok_or(ApiError::NoSuchResource)?
        }
        ("GET", ["openapi", "v2"]) => {
            if ctx.accept().contains("protobuf") {
                let mut response =
                    (StatusCode::OK, openapi_v2::document_protobuf(&registry)).into_response();
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    http::HeaderValue::from_static(openapi_v2::PROTOBUF_CONTENT_TYPE),
                );
                return Ok(response);
            }
            openapi_v2::document(&registry)
        }
        ("GET", ["openapi", "v3"]) => openapi::root(&registry),
        ("GET", ["openapi", "v3", "api", v]) => {
            openapi::group_version(&registry, "", v).ok_or(ApiError::NoSuchResource)?
        }
        ("GET", ["openapi", "v3", "apis", g, v]) => {
            openapi::group_version(&registry, g, v).ok_or(ApiError::NoSuchResource)?
        }
        ("GET", ["emulator", "audit"]) => json!({"items": ctx.server.audit_entries()}),
        ("PUT", ["emulator", "faults"]) => {
            let plan: FaultPlan = serde_json::from_value(ctx.body_json()?)
                .map_err(|e| ApiError::BadRequest(format!("invalid fault plan: {e}")))?;
            ctx.server.set_faults(plan.clone());
            json!(plan)
        }
        ("GET", ["emulator", "faults"]) => {
            json!(
                ctx.server
                    .shared
                    .faults
                    .read()
                    .map(|f| f.clone())
                    .unwrap_or_default()
            )
        }
        ("POST", ["emulator", "drop-watches"]) => {
            ctx.server.drop_watches();
            json!({"dropped": true})
        }
        _ => return Err(ApiError::NoSuchResource),
    };
    Ok(json_response(StatusCode::OK, &body))
}

async fn serve_resource(ctx: Ctx, method: &str, r: ResourceRequest) -> Result<Response, ApiError> {
    let info = ctx
        .server
        .lock()
        .registry
        .lookup(&r.group, &r.version, &r.resource)
        .ok_or(ApiError::NoSuchResource)?;
    if r.namespace.is_empty() && info.namespaced && !matches!(r.verb.as_str(), "list" | "watch") {
        return Err(ApiError::NoSuchResource);
    }
    if !r.namespace.is_empty() && !info.namespaced && info.behavior != Behavior::Namespace {
        return Err(ApiError::NoSuchResource);
    }
    // kube's request info puts a namespace's own name in `namespace` (so RoleBindings in it can
    // grant access to it); storage keys cluster-scoped objects without one.
    let storage_namespace = if info.namespaced {
        r.namespace.clone()
    } else {
        String::new()
    };
    let target = ErrorTarget {
        group: info.group.clone(),
        resource: info.plural.clone(),
        kind: info.kind.clone(),
        name: r.name.clone(),
    };
    // Faults apply before the authorizer, like a slow or failing server would.
    let decision = {
        let plan = ctx
            .server
            .shared
            .faults
            .read()
            .map(|p| p.clone())
            .unwrap_or_default();
        plan.decide(
            &r.verb,
            &r.group,
            &r.resource,
            &r.namespace,
            rand::rng().random::<f64>(),
        )
    };
    if !decision.delay.is_zero() {
        tokio::time::sleep(decision.delay).await;
    }
    if let Some(code) = decision.fail_with {
        return Err(ApiError::Internal {
            code,
            message: format!("injected fault: {} {} failed", r.verb, info.plural),
        });
    }
    if info.behavior == Behavior::Projects {
        return serve_projects(&ctx, &info, &r);
    }
    let mut name_for_authz = r.name.clone();
    if name_for_authz.is_empty()
        && matches!(r.verb.as_str(), "list" | "watch")
        && let Some(fs) = ctx.query.get("fieldSelector")
    {
        // list/watch pinned to one name by field selector may be authorized by resourceNames.
        if let Some(n) = fs
            .strip_prefix("metadata.name=")
            .filter(|n| !n.contains(','))
        {
            name_for_authz = n.to_string();
        }
    }
    ctx.authorize(
        RequestAttributes {
            user: ctx.user.clone(),
            verb: r.verb.clone(),
            namespace: (!r.namespace.is_empty()).then(|| r.namespace.clone()),
            api_group: r.group.clone(),
            resource: r.resource.clone(),
            subresource: r.subresource.clone(),
            name: name_for_authz,
            non_resource_path: None,
        },
        target.clone(),
    )?;
    let r = ResourceRequest {
        namespace: storage_namespace,
        ..r
    };
    if let Behavior::Review(kind) = info.behavior {
        if method != "POST" {
            return Err(ApiError::MethodNotAllowed(format!(
                "the server does not allow this method on the requested resource ({})",
                info.plural
            )));
        }
        let body = ctx.body_json()?;
        let answer = reviews::answer(
            &mut ctx.server.lock(),
            &info,
            kind,
            &ctx.user,
            &r.namespace,
            body,
        )?;
        return Ok(json_response(StatusCode::CREATED, &answer));
    }
    let part = match r.subresource.as_str() {
        "" => Part::Main,
        "status" if info.has_status => Part::Status,
        "token"
            if info.group.is_empty() && info.plural == "serviceaccounts" && r.verb == "create" =>
        {
            return token_request(&ctx, &r);
        }
        _ => return Err(ApiError::NoSuchResource),
    };
    let name_required = matches!(r.verb.as_str(), "update" | "patch");
    if (r.verb == "create" && !r.name.is_empty()) || (name_required && r.name.is_empty()) {
        return Err(ApiError::MethodNotAllowed(
            "the server does not allow this method on the requested resource".into(),
        ));
    }
    match r.verb.as_str() {
        "get" => {
            let object = ctx.server.lock().get(&info, &r.namespace, &r.name)?;
            let object = ctx
                .server
                .lock()
                .present(&info, &r.version, (*object).clone());
            if table::wants_table(&ctx.accept()) {
                let rv = object
                    .pointer("/metadata/resourceVersion")
                    .cloned()
                    .unwrap_or(Value::Null);
                let t = table::to_table(
                    &info,
                    &r.version,
                    &[object],
                    json!({"resourceVersion": rv}),
                    IncludeObject::parse(ctx.query.get("includeObject").map(String::as_str)),
                );
                return Ok(json_response(StatusCode::OK, &t));
            }
            Ok(json_response(StatusCode::OK, &object))
        }
        "list" => list(&ctx, &info, &r),
        "watch" => {
            let label = label_selector(&ctx)?;
            let field = field_selector(&ctx, &info)?;
            let resource_version = match ctx.query.get("resourceVersion").map(String::as_str) {
                None | Some("") => None,
                Some(v) => Some(v.parse::<u64>().map_err(|_| {
                    ApiError::BadRequest(format!(
                        "resourceVersion: Invalid value: {v:?}: must be a non-negative integer"
                    ))
                })?),
            };
            let timeout = ctx
                .query
                .get("timeoutSeconds")
                .and_then(|s| s.parse::<u64>().ok())
                .map(Duration::from_secs)
                .unwrap_or(Duration::from_secs(1800));
            let table_mode = table::wants_table(&ctx.accept())
                .then(|| IncludeObject::parse(ctx.query.get("includeObject").map(String::as_str)));
            watch::start(
                ctx.server.lock(),
                ctx.server.shared.drop_watches.subscribe(),
                ctx.server.shared.config.bookmark_interval,
                WatchRequest {
                    info,
                    version: r.version.clone(),
                    namespace: (!r.namespace.is_empty()).then(|| r.namespace.clone()),
                    label,
                    field,
                    resource_version,
                    bookmarks: is_true(&ctx.query, "allowWatchBookmarks"),
                    send_initial_events: is_true(&ctx.query, "sendInitialEvents"),
                    timeout,
                    drop_after: decision.watch_drop_after,
                    table: table_mode,
                },
            )
        }
        "create" => {
            let body = ctx.body_json()?;
            let options = ctx.write_options("CreateOptions")?;
            let written =
                ctx.server
                    .lock()
                    .create(&info, &r.version, &r.namespace, body, &options)?;
            Ok(with_warnings(
                json_response(StatusCode::CREATED, &written.object),
                &written.warnings,
            ))
        }
        "update" => {
            let body = ctx.body_json()?;
            let options = ctx.write_options("UpdateOptions")?;
            let written = ctx.server.lock().update(
                &info,
                &r.version,
                &r.namespace,
                &r.name,
                body,
                part,
                &options,
            )?;
            Ok(with_warnings(
                json_response(StatusCode::OK, &written.object),
                &written.warnings,
            ))
        }
        "patch" => {
            let kind = match ctx.content_type().as_str() {
                "application/merge-patch+json" => PatchKind::Merge,
                "application/json-patch+json" => PatchKind::Json,
                "application/strategic-merge-patch+json" if !info.is_custom => PatchKind::Strategic,
                other => {
                    let accepted = if info.is_custom {
                        "application/json-patch+json, application/merge-patch+json"
                    } else {
                        "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json"
                    };
                    let hint = if other == "application/apply-patch+yaml" {
                        " (server-side apply is not supported by this emulator; use client-side apply)"
                    } else {
                        ""
                    };
                    return Err(ApiError::UnsupportedMediaType(format!(
                        "the body of the request was in an unknown format - accepted media types include: {accepted}{hint}"
                    )));
                }
            };
            let patch_body: Value = serde_json::from_slice(&ctx.body)
                .map_err(|e| ApiError::BadRequest(format!("error decoding patch: {e}")))?;
            let options = ctx.write_options("PatchOptions")?;
            let written = ctx.server.lock().patch(
                &info,
                &r.version,
                &r.namespace,
                &r.name,
                kind,
                &patch_body,
                part,
                &options,
            )?;
            Ok(with_warnings(
                json_response(StatusCode::OK, &written.object),
                &written.warnings,
            ))
        }
        "delete" => {
            let options = delete_options(&ctx)?;
            let deleted =
                ctx.server
                    .lock()
                    .delete(&info, &r.version, &r.namespace, &r.name, &options)?;
            // kube answers 202 only for a pending deletion that explicitly asked not to orphan.
            let code = if !deleted.gone && options.explicitly_not_orphaning {
                StatusCode::ACCEPTED
            } else {
                StatusCode::OK
            };
            Ok(json_response(code, &deleted.object))
        }
        "deletecollection" => {
            let options = delete_options(&ctx)?;
            let label = label_selector(&ctx)?;
            let field = field_selector(&ctx, &info)?;
            let mut state = ctx.server.lock();
            let names: Vec<(String, String)> = state
                .store
                .list(
                    &info.key(),
                    (!r.namespace.is_empty()).then_some(r.namespace.as_str()),
                    None,
                )
                .filter(|(_, o)| object_matches(o, &label, &field))
                .map(|(k, _)| (k.namespace.clone(), k.name.clone()))
                .collect();
            let mut items = Vec::new();
            for (ns, name) in names {
                match state.delete(&info, &r.version, &ns, &name, &options) {
                    Ok(d) => items.push(d.object),
                    Err(ApiError::NotFound(_)) => {}
                    Err(e) => return Err(e),
                }
            }
            let rv = state.store.resource_version().to_string();
            Ok(json_response(
                StatusCode::OK,
                &json!({"kind": info.list_kind, "apiVersion": info.api_version(&r.version),
                        "metadata": {"resourceVersion": rv}, "items": items}),
            ))
        }
        _ => Err(ApiError::MethodNotAllowed(
            "the server does not allow this method on the requested resource".into(),
        )),
    }
}

/// `project.openshift.io` projects: authorized per namespace by [`projects`], not by the
/// generic authorizer (any authenticated user may list; the list is filtered).
fn serve_projects(
    ctx: &Ctx,
    info: &ResourceInfo,
    r: &ResourceRequest,
) -> Result<Response, ApiError> {
    if !r.subresource.is_empty() {
        return Err(ApiError::NoSuchResource);
    }
    let object = match r.verb.as_str() {
        "get" => projects::get(&mut ctx.server.lock(), &ctx.user, &r.name)?,
        "list" => {
            let label = label_selector(ctx)?;
            let field = field_selector(ctx, info)?;
            projects::list(&mut ctx.server.lock(), &ctx.user, &label, &field)?
        }
        _ => {
            return Err(ApiError::MethodNotAllowed(format!(
                "the server does not allow this method on the requested resource ({})",
                info.plural
            )));
        }
    };
    Ok(json_response(StatusCode::OK, &object))
}

fn with_warnings(mut response: Response, warnings: &[String]) -> Response {
    for w in warnings {
        let escaped = w.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            response.headers_mut().append("Warning", v);
        }
    }
    response
}

/// The `labelSelector` parameter, refused in kube-apiserver's words.
fn label_selector(ctx: &Ctx) -> Result<Selector, ApiError> {
    Selector::parse(
        ctx.query
            .get("labelSelector")
            .map(String::as_str)
            .unwrap_or(""),
    )
    .map_err(|e| ApiError::BadRequest(e.to_string()))
}

fn field_selector(ctx: &Ctx, info: &ResourceInfo) -> Result<FieldSelector, ApiError> {
    let mut supported: Vec<&str> = vec!["metadata.name", "metadata.namespace"];
    supported.extend(info.extra_field_selectors.iter().map(String::as_str));
    FieldSelector::parse(
        ctx.query
            .get("fieldSelector")
            .map(String::as_str)
            .unwrap_or(""),
        &supported,
    )
    .map_err(|e| ApiError::BadRequest(e.to_string()))
}

#[derive(serde::Serialize, serde::Deserialize)]
struct ContinueToken {
    rv: u64,
    ns: String,
    name: String,
}

fn list(ctx: &Ctx, info: &Arc<ResourceInfo>, r: &ResourceRequest) -> Result<Response, ApiError> {
    let label = label_selector(ctx)?;
    let field = field_selector(ctx, info)?;
    let limit = match ctx.query.get("limit").map(String::as_str) {
        None | Some("") | Some("0") => None,
        Some(s) => Some(
            s.parse::<usize>()
                .map_err(|_| ApiError::BadRequest(format!("limit: Invalid value: {s:?}")))?,
        ),
    };
    let after = match ctx.query.get("continue").filter(|s| !s.is_empty()) {
        None => None,
        Some(token) => {
            let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(token)
                .map_err(|_| {
                    ApiError::BadRequest("continue key is not valid: invalid encoding".into())
                })?;
            let t: ContinueToken = serde_json::from_slice(&bytes).map_err(|_| {
                ApiError::BadRequest("continue key is not valid: invalid format".into())
            })?;
            Some(t)
        }
    };
    let state = ctx.server.lock();
    let list_rv = after
        .as_ref()
        .map_or(state.store.resource_version(), |t| t.rv);
    let after_key = after
        .as_ref()
        .map(|t| ObjectKey::new(&info.key(), &t.ns, &t.name));
    let namespace = (!r.namespace.is_empty()).then_some(r.namespace.as_str());
    let mut items = Vec::new();
    let mut last_key: Option<ObjectKey> = None;
    let mut remaining = 0usize;
    for (key, object) in state.store.list(&info.key(), namespace, after_key.as_ref()) {
        if !object_matches(object, &label, &field) {
            continue;
        }
        if limit.is_some_and(|l| items.len() >= l) {
            remaining += 1;
            continue;
        }
        items.push(state.present(info, &r.version, (**object).clone()));
        last_key = Some(key.clone());
    }
    drop(state);
    let mut metadata = json!({"resourceVersion": list_rv.to_string()});
    if remaining > 0
        && let Some(k) = last_key
    {
        let token = ContinueToken {
            rv: list_rv,
            ns: k.namespace,
            name: k.name,
        };
        let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(serde_json::to_vec(&token).unwrap_or_default());
        metadata["continue"] = json!(encoded);
        metadata["remainingItemCount"] = json!(remaining);
    }
    if table::wants_table(&ctx.accept()) {
        let t = table::to_table(
            info,
            &r.version,
            &items,
            metadata,
            IncludeObject::parse(ctx.query.get("includeObject").map(String::as_str)),
        );
        return Ok(json_response(StatusCode::OK, &t));
    }
    Ok(json_response(
        StatusCode::OK,
        &json!({"kind": info.list_kind, "apiVersion": info.api_version(&r.version), "metadata": metadata, "items": items}),
    ))
}

fn delete_options(ctx: &Ctx) -> Result<DeleteOptions, ApiError> {
    let body: Value = if ctx.body.is_empty() {
        json!({})
    } else {
        serde_json::from_slice(&ctx.body)
            .map_err(|e| ApiError::BadRequest(format!("invalid DeleteOptions: {e}")))?
    };
    let policy = ctx.query.get("propagationPolicy").cloned().or_else(|| {
        body.get("propagationPolicy")
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let propagation = match policy.as_deref() {
        None | Some("") => {
            let orphan = body.get("orphanDependents").and_then(Value::as_bool) == Some(true)
                || ctx.query.get("orphanDependents").map(String::as_str) == Some("true");
            orphan.then_some(Propagation::Orphan)
        }
        Some("Background") => Some(Propagation::Background),
        Some("Foreground") => Some(Propagation::Foreground),
        Some("Orphan") => Some(Propagation::Orphan),
        Some(other) => {
            return Err(ApiError::BadRequest(format!(
                "propagationPolicy: Unsupported value: {other:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""
            )));
        }
    };
    let body_dry_run = body
        .get("dryRun")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|v| v == "All"));
    let explicitly_not_orphaning = body.get("orphanDependents").and_then(Value::as_bool)
        == Some(false)
        || ctx.query.get("orphanDependents").map(String::as_str) == Some("false");
    Ok(DeleteOptions {
        explicitly_not_orphaning,
        dry_run: ctx.dry_run()? || body_dry_run,
        propagation,
        precondition_uid: body
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_string),
        precondition_resource_version: body
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

fn token_request(ctx: &Ctx, r: &ResourceRequest) -> Result<Response, ApiError> {
    let body: Value = if ctx.body.is_empty() {
        json!({})
    } else {
        ctx.body_json()?
    };
    let seconds = body
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(3600);
    let (token, expires) =
        ctx.server
            .lock()
            .issue_service_account_token(&r.namespace, &r.name, seconds)?;
    let mut answer = json!({
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": r.name, "namespace": r.namespace, "creationTimestamp": Value::Null},
        "spec": body.get("spec").cloned().unwrap_or(json!({})),
        "status": {"token": token, "expirationTimestamp": expires},
    });
    answer["spec"]["expirationSeconds"] = json!(seconds);
    if let Err(e) = ctx.server.save() {
        tracing::warn!(error = %e, "could not persist emulator state");
    }
    Ok(json_response(StatusCode::CREATED, &answer))
}
