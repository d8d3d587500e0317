//! Helpers shared by the integration suites: service-account tokens from the emulator and a
//! plain HTTP GET (no HTTP client crate in the tests). Each suite uses only some of them.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod cluster;
pub mod controller_env;
pub mod nac_stack;

use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::json;

/// A day-long token for a service account, as the controllers and Velero get theirs.
pub async fn sa_token(admin: &Client, ns: &str, name: &str) -> String {
    let sas: Api<k8s_openapi::api::core::v1::ServiceAccount> = Api::namespaced(admin.clone(), ns);
    let tr: k8s_openapi::api::authentication::v1::TokenRequest =
        serde_json::from_value(json!({"spec": {"audiences": [], "expirationSeconds": 86400}}))
            .unwrap();
    sas.create_token_request(name, &PostParams::default(), &tr)
        .await
        .unwrap()
        .status
        .unwrap()
        .token
}

/// A SQLite history store in a fresh temporary directory; keep the directory as long as the
/// store is used.
pub async fn sqlite_history() -> (nac::history::SharedHistory, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let url = nac::history::sqlite_url_for(&dir.path().join("history.db"));
    let store = nac::history::open(&url)
        .await
        .unwrap_or_else(|e| panic!("cannot open the SQLite history store: {e}"));
    (store, dir)
}

/// A plain HTTP GET (status, body) without pulling an HTTP client crate into the tests.
pub async fn http_get(url: &str) -> (u16, Vec<u8>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let parsed = url::Url::parse(url).unwrap();
    let addr = format!("{}:{}", parsed.host_str().unwrap(), parsed.port().unwrap());
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let path = match parsed.query() {
        Some(q) => format!("{}?{q}", parsed.path()),
        None => parsed.path().to_string(),
    };
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let status: u16 = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut body = raw[split + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = dechunk(&body);
    }
    (status, body)
}

/// One GET to a gateway at `addr` with `token` as bearer, on a connection of its own
/// (`Connection: close`): status, head and body (as sent: JSON answers are not chunked).
pub async fn bearer_get(addr: &str, path: &str, token: &str) -> (u16, String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(
            format!(
                "GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).await.unwrap();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head.to_string(), body.to_string())
}

pub fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(line_end) = data.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(
            // Chunk extensions (`;name=value`) may follow the size.
            std::str::from_utf8(&data[..line_end])
                .unwrap()
                .split(';')
                .next()
                .unwrap()
                .trim(),
            16,
        )
        .unwrap();
        if size == 0 {
            break;
        }
        out.extend_from_slice(&data[line_end + 2..line_end + 2 + size]);
        data = &data[line_end + 2 + size + 2..];
    }
    out
}

/// Every object of `api` the server announces from now on, as it was when announced (objects
/// deleted right after their creation — processed DeleteBackupRequests — are seen too, which
/// polling could miss).
pub fn record_applied<K>(api: Api<K>) -> std::sync::Arc<std::sync::Mutex<Vec<K>>>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    use futures::StreamExt;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let stream = kube::runtime::watcher(api, Default::default());
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            if let Ok(
                kube::runtime::watcher::Event::Apply(object)
                | kube::runtime::watcher::Event::InitApply(object),
            ) = event
            {
                sink.lock().unwrap().push(object);
            }
        }
    });
    seen
}

/// `K` in the OADP namespace, as `c`.
pub fn oadp_api<K>(c: &Client) -> Api<K>
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>,
{
    Api::namespaced(c.clone(), nac::sim::demo::OADP_NAMESPACE)
}

/// Creates `object` (a `K` as JSON) in the OADP namespace as `c`.
pub async fn create_in_oadp<K>(c: &Client, object: serde_json::Value) -> K
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    let typed: K = serde_json::from_value(object).unwrap();
    oadp_api::<K>(c)
        .create(&PostParams::default(), &typed)
        .await
        .unwrap()
}

/// Velero, played by the simulator as its own service account (resyncing every 100 ms), its
/// object store in the returned directory (keep it for the test's length).
pub async fn start_velero(cluster: &cluster::TestCluster) -> tempfile::TempDir {
    start_velero_with(cluster, |_| {}).await
}

/// [`start_velero`] with some of the simulator's options changed by `tune`.
pub async fn start_velero_with(
    cluster: &cluster::TestCluster,
    tune: impl FnOnce(&mut nac::sim::velero::options::SimulatorOptions),
) -> tempfile::TempDir {
    let object_store = tempfile::tempdir().unwrap();
    let simulator = velero_simulator(
        cluster,
        object_store.path(),
        url::Url::parse("http://127.0.0.1:9/").unwrap(),
        tune,
    )
    .await;
    tokio::spawn(simulator.run());
    object_store
}

/// The Velero simulator as Velero's own service account, its object store in `object_store`,
/// its signed download links under `download_base`, resyncing every 100 ms, then adjusted by
/// `configure`; not started yet (`run()` it, and serve its `download_router()` if wanted).
pub async fn velero_simulator(
    cluster: &cluster::TestCluster,
    object_store: &std::path::Path,
    download_base: url::Url,
    configure: impl FnOnce(&mut nac::sim::velero::options::SimulatorOptions),
) -> nac::sim::velero::engine::VeleroSimulator {
    use nac::sim::velero::{
        engine::VeleroSimulator, options::SimulatorOptions, signed_url::UrlSigner,
    };
    let mut options = SimulatorOptions::new(
        nac::sim::demo::OADP_NAMESPACE,
        object_store.to_path_buf(),
        download_base,
    );
    options.resync_interval = std::time::Duration::from_millis(100);
    configure(&mut options);
    let velero = cluster.client_as(
        &cluster
            .sa_token(
                nac::sim::demo::OADP_NAMESPACE,
                nac::sim::demo::VELERO_SERVICE_ACCOUNT,
            )
            .await,
        nac::api::client_identity::Component::VeleroSimulator,
    );
    VeleroSimulator::new(velero, options, std::sync::Arc::new(UrlSigner::random()))
}

/// A NonAdminBackup named `name` whose `spec.backupSpec` is `backup_spec`.
pub fn nab_with(name: &str, backup_spec: serde_json::Value) -> nac::api::nonadmin::NonAdminBackup {
    serde_json::from_value(json!({
        "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "NonAdminBackup",
        "metadata": {"name": name}, "spec": {"backupSpec": backup_spec}
    }))
    .unwrap()
}

/// Whether NonAdminBackup `name` is Created with its Velero Backup Completed.
pub async fn nab_finished(api: &Api<nac::api::nonadmin::NonAdminBackup>, name: &str) -> bool {
    let Some(nab) = api.get_opt(name).await.ok().flatten() else {
        return false;
    };
    let v = serde_json::to_value(&nab).unwrap();
    v.pointer("/status/phase") == Some(&json!("Created"))
        && v.pointer("/status/veleroBackup/status/phase") == Some(&json!("Completed"))
}

/// How many of `objects` carry label `key` with `value` (Velero objects per NACUUID, say).
pub fn labelled<K: kube::Resource>(objects: &[K], key: &str, value: &str) -> usize {
    objects
        .iter()
        .filter(|o| {
            o.meta()
                .labels
                .as_ref()
                .is_some_and(|l| l.get(key).is_some_and(|v| v == value))
        })
        .count()
}

/// Asserts a history timeline (`[{at, attribute, value}, ...]` as the gateway serves it) is
/// in time order, never repeats a transition twice in a row, and has the NAB's `Created`.
pub fn assert_timeline_sound(what: &str, timeline: &[serde_json::Value]) {
    let ats: Vec<&str> = timeline.iter().map(|t| t["at"].as_str().unwrap()).collect();
    let mut sorted = ats.clone();
    sorted.sort();
    assert_eq!(ats, sorted, "{what}: timeline out of order: {timeline:?}");
    for pair in timeline.windows(2) {
        assert!(
            (&pair[0]["attribute"], &pair[0]["value"])
                != (&pair[1]["attribute"], &pair[1]["value"]),
            "{what}: timeline repeats a transition: {timeline:?}"
        );
    }
    assert!(
        timeline
            .iter()
            .any(|t| t["attribute"] == "phase" && t["value"] == "Created"),
        "{what}: timeline misses Created: {timeline:?}"
    );
}
