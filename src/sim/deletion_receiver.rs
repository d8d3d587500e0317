//! The demo's deletion-action receiver: a small HTTPS webhook that `nac demo` registers as the
//! cluster-scoped DeletionAction `audit-deleted-items` (seed 003), so permanently deleting a
//! NonAdminBackup visibly calls an admin's webhook with each item of the backup.
//!
//! Every call is logged (one `info` line per item, target `nac::sim::deletion_receiver`) and kept
//! in a bounded in-memory list that the admin reads at `GET /calls` with the receiver's read token
//! (a file next to its CA in the demo's data directory). The list keeps a summary of each call —
//! action, backup, group/kind, namespace/name — never the item itself: a backed-up Secret's data
//! has no business in an audit trail, and the list is readable by whoever holds the token.
//!
//! The parsing of a call, the bounded list and the token check are pure and unit-tested; the
//! listener, the certificates and the token file are the edges.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Json;
use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::api::nonadmin::deletion_action::{REQUEST_API_VERSION, REQUEST_KIND};
use crate::api::nonadmin::labels;
use crate::sim::apiserver::persist::write_private;
use crate::sim::apiserver::tls::{Pki, TlsError, serve_tls};

/// Where the deletion actions POST their calls.
pub const HOOK_PATH: &str = "/hook";
/// Where the admin reads the calls received (bearer token).
pub const CALLS_PATH: &str = "/calls";
/// Calls kept in memory; older ones are dropped first (and counted).
pub const DEFAULT_CAPACITY: usize = 1000;
/// The receiver's CA certificate (PEM), in its directory: the DeletionAction's `caBundle`, and
/// what `curl --cacert` needs.
pub const CA_FILE: &str = "ca.crt";
/// The token that reads `GET /calls`, in its directory (owner-only permissions).
pub const TOKEN_FILE: &str = "token";
/// `kind` of the `GET /calls` answer.
pub const CALL_LIST_KIND: &str = "DeletionActionCallList";

/// Start-up failures of the receiver.
#[derive(Debug, thiserror::Error)]
pub enum ReceiverError {
    #[error("deletion-action receiver certificates: {0}")]
    Tls(#[from] TlsError),
    #[error("deletion-action receiver cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("deletion-action receiver cannot use {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Why a call's body was refused (answered 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error("not a {REQUEST_KIND} (apiVersion {api_version:?}, kind {kind:?})")]
    NotARequest { api_version: String, kind: String },
    #[error("the request carries no item with a kind and a name")]
    NoItem,
}

/// One call received, as the list shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReceivedCall {
    /// When it arrived (RFC 3339).
    pub received_at: String,
    /// The DeletionAction that called.
    pub action: String,
    /// The Velero Backup being deleted.
    pub backup: String,
    /// The NonAdminBackup (`namespace/name`) the Velero Backup belongs to, when it says so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub non_admin_backup: Option<String>,
    /// The item's API group (empty for the core group).
    pub group: String,
    /// The item's API version.
    pub version: String,
    /// The item's kind.
    pub kind: String,
    /// The item's namespace (absent for cluster-scoped items).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The item's name.
    pub name: String,
}

impl ReceivedCall {
    /// `group/kind` (`core/` for the core group, so the field never starts with a slash).
    pub fn group_kind(&self) -> String {
        let group = if self.group.is_empty() {
            "core"
        } else {
            &self.group
        };
        format!("{group}/{}", self.kind)
    }

    /// `namespace/name`, or the name alone for a cluster-scoped item.
    pub fn object(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{ns}/{}", self.name),
            None => self.name.clone(),
        }
    }
}

fn text<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// Reads a [`REQUEST_KIND`] body (as the controller's `deletion_action_decision::request_body`
/// builds it) into its summary.
pub fn summarize(body: &Value, received_at: &str) -> Result<ReceivedCall, CallError> {
    let api_version = text(body, "/apiVersion").unwrap_or_default();
    let kind = text(body, "/kind").unwrap_or_default();
    if api_version != REQUEST_API_VERSION || kind != REQUEST_KIND {
        return Err(CallError::NotARequest {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
        });
    }
    let (Some(item_kind), Some(name)) =
        (text(body, "/item/kind"), text(body, "/item/metadata/name"))
    else {
        return Err(CallError::NoItem);
    };
    let api_version = text(body, "/item/apiVersion").unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    // Annotation keys hold a `/`: looked up by key, not by JSON pointer.
    let origin = |key: &str| {
        body.pointer("/backup/metadata/annotations")
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let non_admin_backup = match (
        origin(labels::NAB_ORIGIN_NAMESPACE_ANNOTATION),
        origin(labels::NAB_ORIGIN_NAME_ANNOTATION),
    ) {
        (Some(ns), Some(nab)) => Some(format!("{ns}/{nab}")),
        _ => None,
    };
    Ok(ReceivedCall {
        received_at: received_at.to_string(),
        action: text(body, "/action").unwrap_or_default().to_string(),
        backup: text(body, "/backup/metadata/name")
            .unwrap_or_default()
            .to_string(),
        non_admin_backup,
        group: group.to_string(),
        version: version.to_string(),
        kind: item_kind.to_string(),
        namespace: text(body, "/item/metadata/namespace").map(str::to_string),
        name: name.to_string(),
    })
}

/// The calls received, newest last, at most `capacity` of them.
#[derive(Debug, Clone)]
pub struct CallLog {
    capacity: usize,
    calls: VecDeque<ReceivedCall>,
    received: u64,
}

/// What `GET /calls` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallList {
    pub kind: &'static str,
    /// Calls received since the receiver started.
    pub received: u64,
    /// Calls no longer kept (the oldest go first).
    pub dropped: u64,
    /// The calls kept (filtered when asked), oldest first.
    pub items: Vec<ReceivedCall>,
}

/// `GET /calls` filters.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallFilter {
    /// Only calls for this NonAdminBackup (`namespace/name`).
    pub non_admin_backup: Option<String>,
    /// Only calls for this Velero Backup.
    pub backup: Option<String>,
    /// Only calls of this DeletionAction.
    pub action: Option<String>,
}

impl CallFilter {
    fn keeps(&self, call: &ReceivedCall) -> bool {
        self.non_admin_backup
            .as_ref()
            .is_none_or(|want| call.non_admin_backup.as_ref() == Some(want))
            && self.backup.as_ref().is_none_or(|want| &call.backup == want)
            && self.action.as_ref().is_none_or(|want| &call.action == want)
    }
}

impl CallLog {
    /// An empty log keeping at most `capacity` calls (at least one).
    pub fn new(capacity: usize) -> Self {
        CallLog {
            capacity: capacity.max(1),
            calls: VecDeque::new(),
            received: 0,
        }
    }

    /// Keeps `call`, dropping the oldest when full.
    pub fn push(&mut self, call: ReceivedCall) {
        if self.calls.len() == self.capacity {
            self.calls.pop_front();
        }
        self.calls.push_back(call);
        self.received += 1;
    }

    /// The calls kept that `filter` keeps, with the counters.
    pub fn list(&self, filter: &CallFilter) -> CallList {
        CallList {
            kind: CALL_LIST_KIND,
            received: self.received,
            dropped: self.received - self.calls.len() as u64,
            items: self
                .calls
                .iter()
                .filter(|c| filter.keeps(c))
                .cloned()
                .collect(),
        }
    }
}

/// Whether the `Authorization` header carries `token` (compared in constant time).
pub fn authorized(authorization: Option<&str>, token: &str) -> bool {
    use subtle::ConstantTimeEq;
    let Some(presented) = authorization.and_then(|h| h.strip_prefix("Bearer ")) else {
        return false;
    };
    !token.is_empty() && bool::from(presented.trim().as_bytes().ct_eq(token.as_bytes()))
}

#[derive(Clone)]
struct ReceiverState {
    log: Arc<Mutex<CallLog>>,
    token: Arc<str>,
}

fn lock(log: &Mutex<CallLog>) -> MutexGuard<'_, CallLog> {
    // A panic while holding the lock cannot leave a VecDeque push half done: keep serving.
    log.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn receive(State(state): State<ReceiverState>, Json(body): Json<Value>) -> Response {
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    match summarize(&body, &now) {
        Ok(call) => {
            tracing::info!(
                action = %call.action,
                backup = %call.backup,
                nab = call.non_admin_backup.as_deref().unwrap_or("-"),
                item = %call.group_kind(),
                object = %call.object(),
                "deletion action call received"
            );
            lock(&state.log).push(call);
            (StatusCode::OK, Json(json!({}))).into_response()
        }
        Err(error) => {
            tracing::warn!(error = %error, "deletion-action receiver refused a call");
            (
                StatusCode::BAD_REQUEST,
                Json(json!({"error": error.to_string()})),
            )
                .into_response()
        }
    }
}

async fn calls(
    State(state): State<ReceiverState>,
    headers: HeaderMap,
    Query(filter): Query<CallFilter>,
) -> Response {
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if !authorized(presented, &state.token) {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            Json(json!({"error": "the receiver's read token is required"})),
        )
            .into_response();
    }
    let list = lock(&state.log).list(&filter);
    (StatusCode::OK, Json(list)).into_response()
}

fn router(state: ReceiverState) -> Router {
    Router::new()
        .route(HOOK_PATH, post(receive))
        .route(CALLS_PATH, get(calls))
        .with_state(state)
}

/// A running receiver; stops when dropped.
pub struct RunningReceiver {
    /// `https://127.0.0.1:PORT`.
    pub base_url: String,
    /// The URL the DeletionAction calls.
    pub hook_url: String,
    /// The CA that verifies the receiver (the DeletionAction's `caBundle`).
    pub ca_pem: String,
    /// The CA's file.
    pub ca_file: PathBuf,
    /// The read token's file.
    pub token_file: PathBuf,
    log: Arc<Mutex<CallLog>>,
    task: tokio::task::JoinHandle<()>,
}

impl RunningReceiver {
    /// The calls kept so far.
    pub fn calls(&self, filter: &CallFilter) -> CallList {
        lock(&self.log).list(filter)
    }
}

impl Drop for RunningReceiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Reads the read token from `path`, creating a random one on first use (so a script that read
/// it keeps working across demo restarts).
fn load_or_create_token(path: &Path) -> Result<String, ReceiverError> {
    let io = |source| ReceiverError::Io {
        path: path.to_path_buf(),
        source,
    };
    match std::fs::read_to_string(path) {
        Ok(token) if !token.trim().is_empty() => Ok(token.trim().to_string()),
        Ok(_) => create_token(path).map_err(io),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => create_token(path).map_err(io),
        Err(e) => Err(io(e)),
    }
}

fn create_token(path: &Path) -> std::io::Result<String> {
    let token = format!("nac-receiver-{}", hex::encode(rand::random::<[u8; 24]>()));
    write_private(path, token.as_bytes())?;
    Ok(token)
}

/// Starts the receiver on `listen` (port 0 picks a free one), its CA, serving certificate and
/// read token kept in `dir` (generated on first use).
pub async fn start(
    dir: &Path,
    listen: SocketAddr,
    capacity: usize,
) -> Result<RunningReceiver, ReceiverError> {
    std::fs::create_dir_all(dir).map_err(|source| ReceiverError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let pki = Pki::load_or_generate(dir)?;
    let token_file = dir.join(TOKEN_FILE);
    let token = load_or_create_token(&token_file)?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|source| ReceiverError::Listen {
            addr: listen,
            source,
        })?;
    let bound = listener
        .local_addr()
        .map_err(|source| ReceiverError::Listen {
            addr: listen,
            source,
        })?;
    let log = Arc::new(Mutex::new(CallLog::new(capacity)));
    let state = ReceiverState {
        log: log.clone(),
        token: token.into(),
    };
    let config = pki.server_config()?;
    let task = tokio::spawn(serve_tls(listener, router(state), config));
    let base_url = format!("https://{bound}");
    Ok(RunningReceiver {
        hook_url: format!("{base_url}{HOOK_PATH}"),
        base_url,
        ca_pem: pki.ca_cert_pem,
        ca_file: dir.join(CA_FILE),
        token_file,
        log,
        task,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn body(item: Value) -> Value {
        json!({
            "apiVersion": REQUEST_API_VERSION, "kind": REQUEST_KIND,
            "action": "audit-deleted-items",
            "backup": {"apiVersion": "velero.io/v1", "kind": "Backup",
                       "metadata": {"name": "team-a-mine-1234", "namespace": "openshift-adp",
                                    "annotations": {
                                        labels::NAB_ORIGIN_NAMESPACE_ANNOTATION: "team-a",
                                        labels::NAB_ORIGIN_NAME_ANNOTATION: "mine"}}},
            "item": item,
        })
    }

    fn call(name: &str, nab: &str) -> ReceivedCall {
        ReceivedCall {
            received_at: "t".into(),
            action: "a".into(),
            backup: format!("velero-{nab}"),
            non_admin_backup: Some(format!("team-a/{nab}")),
            group: String::new(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some("team-a".into()),
            name: name.into(),
        }
    }

    #[test]
    fn a_call_is_summarized_by_backup_group_kind_namespace_and_name() {
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                                "metadata": {"name": "web", "namespace": "team-a"},
                                "spec": {"replicas": 2}});
        let got = summarize(&body(deployment), "2026-01-01T00:00:00Z").unwrap();
        assert_eq!(
            got,
            ReceivedCall {
                received_at: "2026-01-01T00:00:00Z".into(),
                action: "audit-deleted-items".into(),
                backup: "team-a-mine-1234".into(),
                non_admin_backup: Some("team-a/mine".into()),
                group: "apps".into(),
                version: "v1".into(),
                kind: "Deployment".into(),
                namespace: Some("team-a".into()),
                name: "web".into(),
            }
        );
        assert_eq!(got.group_kind(), "apps/Deployment");
        assert_eq!(got.object(), "team-a/web");
        // The summary never carries the item's content.
        assert!(!serde_json::to_string(&got).unwrap().contains("replicas"));
    }

    #[test]
    fn core_and_cluster_scoped_items_read_naturally() {
        let namespace =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}});
        let got = summarize(&body(namespace), "t").unwrap();
        assert_eq!((got.group.as_str(), got.version.as_str()), ("", "v1"));
        assert_eq!(got.group_kind(), "core/Namespace");
        assert_eq!(got.object(), "team-a");
        let json = serde_json::to_value(&got).unwrap();
        assert!(json.get("namespace").is_none(), "{json}");
        assert_eq!(json["nonAdminBackup"], "team-a/mine");
    }

    #[test]
    fn other_bodies_are_refused() {
        assert_eq!(
            summarize(
                &json!({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1"}),
                "t"
            ),
            Err(CallError::NotARequest {
                api_version: "admission.k8s.io/v1".into(),
                kind: "AdmissionReview".into()
            })
        );
        assert_eq!(
            summarize(&body(json!({"kind": "ConfigMap", "metadata": {}})), "t"),
            Err(CallError::NoItem)
        );
        assert_eq!(summarize(&body(Value::Null), "t"), Err(CallError::NoItem));
    }

    #[test]
    fn a_backup_without_origin_annotations_has_no_non_admin_backup() {
        let mut b = body(json!({"apiVersion": "v1", "kind": "Secret",
                                 "metadata": {"name": "s", "namespace": "x"}}));
        b["backup"]["metadata"]["annotations"] = json!({});
        assert_eq!(summarize(&b, "t").unwrap().non_admin_backup, None);
    }

    #[test]
    fn the_log_is_bounded_drops_the_oldest_and_counts_them() {
        let mut log = CallLog::new(2);
        for name in ["one", "two", "three"] {
            log.push(call(name, "mine"));
        }
        let list = log.list(&CallFilter::default());
        assert_eq!(list.kind, CALL_LIST_KIND);
        assert_eq!((list.received, list.dropped), (3, 1));
        let names: Vec<_> = list.items.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["two", "three"]);
        // A zero capacity still keeps the latest call.
        let mut tiny = CallLog::new(0);
        tiny.push(call("x", "mine"));
        assert_eq!(tiny.list(&CallFilter::default()).items.len(), 1);
    }

    #[test]
    fn the_list_filters_by_non_admin_backup_backup_and_action() {
        let mut log = CallLog::new(10);
        log.push(call("a", "mine"));
        log.push(call("b", "other"));
        let only = |filter: CallFilter| -> Vec<String> {
            log.list(&filter)
                .items
                .into_iter()
                .map(|c| c.name)
                .collect()
        };
        assert_eq!(
            only(CallFilter {
                non_admin_backup: Some("team-a/other".into()),
                ..Default::default()
            }),
            ["b"]
        );
        assert_eq!(
            only(CallFilter {
                backup: Some("velero-mine".into()),
                ..Default::default()
            }),
            ["a"]
        );
        assert!(
            only(CallFilter {
                action: Some("nope".into()),
                ..Default::default()
            })
            .is_empty()
        );
        assert_eq!(only(CallFilter::default()).len(), 2);
    }

    #[test]
    fn reading_the_calls_needs_the_exact_token() {
        assert!(authorized(Some("Bearer s3cret"), "s3cret"));
        assert!(!authorized(Some("Bearer s3cre"), "s3cret"));
        assert!(!authorized(Some("Basic s3cret"), "s3cret"));
        assert!(!authorized(None, "s3cret"));
        assert!(!authorized(Some("Bearer "), ""));
    }

    /// The receiver over real HTTPS: a call is accepted, a bad one refused, the list needs the
    /// token; the token and CA survive a restart.
    #[tokio::test]
    async fn the_receiver_serves_calls_over_https_and_keeps_its_token() {
        use http_body_util::{BodyExt, Full};
        use hyper_util::client::legacy::Client;
        use rustls::pki_types::{CertificateDer, pem::PemObject};
        let dir = tempfile::tempdir().unwrap();
        let receiver = start(dir.path(), "127.0.0.1:0".parse().unwrap(), 10)
            .await
            .unwrap();
        let token = std::fs::read_to_string(&receiver.token_file).unwrap();
        assert!(receiver.hook_url.starts_with("https://127.0.0.1:"));
        assert_eq!(
            std::fs::read_to_string(&receiver.ca_file).unwrap(),
            receiver.ca_pem
        );

        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(receiver.ca_pem.as_bytes()) {
            roots.add(cert.unwrap()).unwrap();
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_only()
            .enable_http1()
            .build();
        let client: Client<_, Full<bytes::Bytes>> =
            Client::builder(hyper_util::rt::TokioExecutor::new()).build(connector);
        let send = |method: &str, url: String, auth: Option<String>, body: Option<Value>| {
            let mut request = http::Request::builder().method(method).uri(url);
            if let Some(auth) = auth {
                request = request.header("authorization", auth);
            }
            let bytes = body
                .map(|b| serde_json::to_vec(&b).unwrap())
                .unwrap_or_default();
            let request = request
                .header("content-type", "application/json")
                .body(Full::new(bytes::Bytes::from(bytes)))
                .unwrap();
            let client = client.clone();
            async move {
                let response = client.request(request).await.unwrap();
                let status = response.status();
                let body = response.into_body().collect().await.unwrap().to_bytes();
                (
                    status,
                    serde_json::from_slice::<Value>(&body).unwrap_or(Value::Null),
                )
            }
        };

        let item = json!({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": "web-config", "namespace": "team-a"}});
        let (status, _) = send("POST", receiver.hook_url.clone(), None, Some(body(item))).await;
        assert_eq!(status, StatusCode::OK);
        let (status, answer) = send(
            "POST",
            receiver.hook_url.clone(),
            None,
            Some(json!({"kind": "Other"})),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(answer["error"].as_str().unwrap().contains(REQUEST_KIND));

        let calls_url = format!(
            "{}{CALLS_PATH}?nonAdminBackup=team-a/mine",
            receiver.base_url
        );
        let (status, _) = send("GET", calls_url.clone(), None, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        let (status, list) = send("GET", calls_url, Some(format!("Bearer {token}")), None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(list["kind"], CALL_LIST_KIND);
        assert_eq!(list["received"], 1);
        assert_eq!(list["items"][0]["name"], "web-config");
        assert_eq!(list["items"][0]["backup"], "team-a-mine-1234");
        assert_eq!(receiver.calls(&CallFilter::default()).items.len(), 1);

        // A restart keeps the CA (the registered caBundle stays right) and the token.
        let ca = receiver.ca_pem.clone();
        drop(receiver);
        let again = start(dir.path(), "127.0.0.1:0".parse().unwrap(), 10)
            .await
            .unwrap();
        assert_eq!(again.ca_pem, ca);
        assert_eq!(std::fs::read_to_string(&again.token_file).unwrap(), token);
        assert!(again.calls(&CallFilter::default()).items.is_empty());
    }
}
