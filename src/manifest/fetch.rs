//! Downloading what Velero serves behind a download URL (logs, results, resource lists, backup
//! tarballs) and undoing its gzip — the one I/O edge of `manifest`: a plain HTTP(S) GET, no kube
//! client, axum or sqlx, so the gateway, the controllers and the history store's manifest
//! builder share it.
//!
//! A download URL is a credential for the bucket (a presigned URL): it never appears in an
//! error's text or in a log line written here, and callers must keep it that way.
//!
//! Every fetch names its [`FetchScope`], decided by [`fetch_scope`] from the Velero
//! BackupStorageLocation the artifact belongs to: an administrator's location is
//! [`FetchScope::Trusted`]; a location made from a tenant's NonAdminBackupStorageLocation only
//! admits URLs at its own origins, resolves the host itself and connects only to addresses the
//! storage-endpoint rule permits (every resolved address is checked, and the connection goes
//! to exactly those: no DNS rebinding in between), on a connection of its own (never a pooled
//! one). No scope follows redirects: a 3xx is an error.

use std::io::Read;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::client::legacy::connect::{Connect, HttpConnector};

use crate::policy::endpoints::{AddressClass, FetchRefusal, Host, Vouching};
pub use crate::policy::endpoints::{
    FetchScope, StorageEndpoints, TenantFetchScope, fetch_scope, is_tenant_location,
};

/// Largest artifact downloaded, compressed (and, by [`decompress`], decompressed) by default.
pub const MAX_ARTIFACT_BYTES: usize = 256 * 1024 * 1024;

/// Why an artifact could not be downloaded or decompressed. No variant carries the URL.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The download URL does not parse as a URI.
    #[error("the download URL is malformed")]
    InvalidUrl,
    /// The server did not answer, or did not send the whole body, in time.
    #[error("object storage did not answer in time")]
    Timeout,
    /// The connection failed or broke off.
    #[error("object storage could not be reached")]
    Transport,
    /// The server answered with a non-success status.
    #[error("object storage refused the download (HTTP {0})")]
    Status(u16),
    /// The body, or its decompressed form, exceeds the limit.
    #[error("the artifact exceeds {0} bytes")]
    TooLarge(u64),
    /// The gzip data is corrupt.
    #[error("the artifact is corrupt")]
    Corrupt,
    /// The URL is not at the tenant storage location's own endpoint.
    #[error("the download URL is not at the storage location's own endpoint")]
    OutsideLocation,
    /// The tenant storage location's endpoint is, or resolves to, an address NAC does not
    /// connect to (loopback, metadata, private, ... see `storageEndpoints`).
    #[error("the storage location's endpoint is at an address NAC does not connect to")]
    AddressRefused,
    /// The server answered with a redirect, which is never followed.
    #[error("object storage answered with a redirect (HTTP {0}), which is not followed")]
    Redirect(u16),
}

impl FetchError {
    /// Whether trying again later may succeed (the storage or network hiccuped), as opposed to
    /// an artifact that is unusable as it is.
    pub fn is_transient(&self) -> bool {
        match self {
            FetchError::Timeout | FetchError::Transport => true,
            // 5xx and throttling are the server's passing trouble; 403/404 may be an expired
            // URL, which a fresh download request fixes.
            FetchError::Status(_) => true,
            FetchError::InvalidUrl
            | FetchError::TooLarge(_)
            | FetchError::Corrupt
            | FetchError::OutsideLocation
            | FetchError::AddressRefused
            | FetchError::Redirect(_) => false,
        }
    }
}

/// Downloads the bytes behind a download URL.
pub trait ArtifactFetcher: Send + Sync {
    /// The body at `url`, as served (still gzip'd when the object is), if `scope` admits it.
    fn fetch<'a>(
        &'a self,
        url: &'a str,
        scope: &'a FetchScope,
    ) -> BoxFuture<'a, Result<Vec<u8>, FetchError>>;
}

/// Where the storage-endpoint rule comes from when a scope is decided: the live admin policy
/// (`RwLock<NacPolicy>`, reloaded when `nac-policy` changes) or fixed rules.
pub trait EndpointRules: Send + Sync {
    /// The rule in force now.
    fn storage_endpoints(&self) -> StorageEndpoints;
}

impl EndpointRules for StorageEndpoints {
    fn storage_endpoints(&self) -> StorageEndpoints {
        self.clone()
    }
}

impl EndpointRules for std::sync::RwLock<crate::policy::NacPolicy> {
    fn storage_endpoints(&self) -> StorageEndpoints {
        // A poisoned lock gives the default rule: no allow-list, the strict one.
        self.read()
            .map(|policy| policy.storage_endpoints().clone())
            .unwrap_or_default()
    }
}

type HttpsConnector<R> = hyper_rustls::HttpsConnector<HttpConnector<R>>;

/// Plain HTTP(S) with the platform's CA roots (S3 presigned URLs, the simulator's endpoint).
pub struct HttpArtifactFetcher {
    /// For trusted locations: pooled connections, the system resolver.
    client:
        Client<HttpsConnector<hyper_util::client::legacy::connect::dns::GaiResolver>, Empty<Bytes>>,
    /// TLS settings (platform roots, ring), for the per-fetch clients of tenant scopes.
    tls: rustls::ClientConfig,
    timeout: Duration,
    max_bytes: usize,
}

impl HttpArtifactFetcher {
    /// A fetcher giving up after `timeout` (to connect and answer, then again for the body)
    /// and refusing bodies over [`MAX_ARTIFACT_BYTES`]; fails only when the platform's CA
    /// roots cannot be loaded.
    pub fn new(timeout: Duration) -> Result<Self, std::io::Error> {
        use hyper_rustls::ConfigBuilderExt;
        // ring named explicitly: the dependency graph enables more than one rustls provider,
        // so the process default cannot be guessed (and start-up may not have installed one).
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(std::io::Error::other)?
        .with_native_roots()?
        .with_no_client_auth();
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(timeout));
        let client = Client::builder(hyper_util::rt::TokioExecutor::new())
            .build(https_connector(tls.clone(), http));
        Ok(HttpArtifactFetcher {
            client,
            tls,
            timeout,
            max_bytes: MAX_ARTIFACT_BYTES,
        })
    }

    /// The same fetcher refusing bodies over `max_bytes` instead.
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// A tenant-scope download: admitted by the scope, resolved and checked by
    /// [`CheckedResolver`], on a client of its own that keeps no connection.
    async fn fetch_tenant(
        &self,
        url: &str,
        scope: &TenantFetchScope,
    ) -> Result<Vec<u8>, FetchError> {
        let admitted = scope.admit(url).map_err(|refusal| match refusal {
            FetchRefusal::Malformed => FetchError::InvalidUrl,
            FetchRefusal::OutsideLocation => {
                tracing::warn!("download refused: the URL is not at the tenant storage location's endpoint");
                FetchError::OutsideLocation
            }
            FetchRefusal::Address(class) => {
                tracing::warn!(address = %class, "download refused: tenant storage endpoint at a refused address");
                FetchError::AddressRefused
            }
        })?;
        let uri: http::Uri = url.parse().map_err(|_| FetchError::InvalidUrl)?;
        // What hyper will connect to must be what was admitted.
        if !same_authority(&uri, &admitted.endpoint) {
            return Err(FetchError::InvalidUrl);
        }
        let refused = Arc::new(Mutex::new(None));
        let resolver = CheckedResolver {
            scope: Arc::new(scope.clone()),
            vouching: admitted.vouching,
            refused: refused.clone(),
        };
        let mut http = HttpConnector::new_with_resolver(resolver);
        http.enforce_http(false);
        http.set_connect_timeout(Some(self.timeout));
        let client = Client::builder(hyper_util::rt::TokioExecutor::new())
            .pool_max_idle_per_host(0)
            .build(https_connector(self.tls.clone(), http));
        let outcome = get(&client, uri, self.timeout, self.max_bytes).await;
        let class = refused.lock().ok().and_then(|refused| *refused);
        match class {
            Some(class) => {
                tracing::warn!(address = %class, "download refused: tenant storage endpoint resolves to a refused address");
                Err(FetchError::AddressRefused)
            }
            None => outcome,
        }
    }
}

/// An HTTPS-or-HTTP/1 connector over `http` with `tls`.
fn https_connector<R>(tls: rustls::ClientConfig, http: HttpConnector<R>) -> HttpsConnector<R> {
    hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http)
}

/// Whether `uri`'s host and port are `endpoint`'s (names compared without case and trailing
/// dot, addresses by value).
fn same_authority(uri: &http::Uri, endpoint: &crate::policy::endpoints::Endpoint) -> bool {
    let Some(host) = uri.host() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port = uri.port_u16().unwrap_or(endpoint.scheme.default_port());
    let same_host = match &endpoint.host {
        Host::Name(name) => host.trim_end_matches('.').eq_ignore_ascii_case(name),
        Host::Ip(ip) => host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|parsed| parsed == *ip),
    };
    same_host && port == endpoint.port && uri.scheme_str() == Some(endpoint.scheme.as_str())
}

/// Resolves a tenant endpoint's host with the system resolver and hands hyper the addresses
/// only when every one of them is permitted; otherwise records why and fails the connection.
#[derive(Clone)]
struct CheckedResolver {
    scope: Arc<TenantFetchScope>,
    vouching: Vouching,
    refused: Arc<Mutex<Option<AddressClass>>>,
}

impl tower::Service<Name> for CheckedResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = std::io::Error;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let resolver = self.clone();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addresses: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if addresses.is_empty() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "the host has no address",
                ));
            }
            for address in &addresses {
                if let Err(class) = resolver
                    .scope
                    .check_address(address.ip(), resolver.vouching)
                {
                    if let Ok(mut refused) = resolver.refused.lock() {
                        *refused = Some(class);
                    }
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::PermissionDenied,
                        "a resolved address is refused",
                    ));
                }
            }
            Ok(addresses.into_iter())
        })
    }
}

/// GETs `uri` with `client`: `timeout` to answer, again for the body; never a redirect; at
/// most `max_bytes`.
async fn get<C>(
    client: &Client<C, Empty<Bytes>>,
    uri: http::Uri,
    timeout: Duration,
    max_bytes: usize,
) -> Result<Vec<u8>, FetchError>
where
    C: Connect + Clone + Send + Sync + 'static,
{
    let response = tokio::time::timeout(timeout, client.get(uri))
        .await
        .map_err(|_| FetchError::Timeout)?
        .map_err(|error| {
            // hyper's error text carries no URL; still, log only its kind.
            tracing::warn!(connect = error.is_connect(), "artifact download failed");
            FetchError::Transport
        })?;
    let status = response.status();
    if status.is_redirection() {
        tracing::warn!(status = %status, "artifact download answered with a redirect; not followed");
        return Err(FetchError::Redirect(status.as_u16()));
    }
    if !status.is_success() {
        tracing::warn!(status = %status, "artifact download refused");
        return Err(FetchError::Status(status.as_u16()));
    }
    let body = Limited::new(response.into_body(), max_bytes);
    let collected = tokio::time::timeout(timeout, body.collect())
        .await
        .map_err(|_| FetchError::Timeout)?
        .map_err(|error| {
            if error.is::<http_body_util::LengthLimitError>() {
                FetchError::TooLarge(max_bytes as u64)
            } else {
                FetchError::Transport
            }
        })?;
    Ok(collected.to_bytes().to_vec())
}

impl ArtifactFetcher for HttpArtifactFetcher {
    fn fetch<'a>(
        &'a self,
        url: &'a str,
        scope: &'a FetchScope,
    ) -> BoxFuture<'a, Result<Vec<u8>, FetchError>> {
        Box::pin(async move {
            match scope {
                FetchScope::Trusted => {
                    let uri: http::Uri = url.parse().map_err(|_| FetchError::InvalidUrl)?;
                    get(&self.client, uri, self.timeout, self.max_bytes).await
                }
                FetchScope::TenantLocation(tenant) => self.fetch_tenant(url, tenant).await,
            }
        })
    }
}

/// Whether `bytes` start like gzip data.
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.len() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b
}

/// `bytes` gunzipped when they are gzip (Velero stores logs, results and resource lists
/// gzipped), else as they are. Output is capped at [`MAX_ARTIFACT_BYTES`]: a longer log is cut
/// there rather than refused, as a reader of a log still wants its beginning.
pub fn decompress(bytes: Vec<u8>) -> Result<Vec<u8>, FetchError> {
    if !is_gzip(&bytes) {
        return Ok(bytes);
    }
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes.as_slice())
        .take(MAX_ARTIFACT_BYTES as u64)
        .read_to_end(&mut out)
        .map_err(|_| FetchError::Corrupt)?;
    Ok(out)
}

/// A reader of `bytes` gunzipped on the fly when they are gzip (else as they are), failing with
/// an [`std::io::Error`] wrapping [`FetchError::TooLarge`] once more than `limit` bytes come out.
/// This is the streaming form of [`decompress`] for large artifacts (a backup tarball of 100k
/// items): only the compressed bytes are held, and nothing is silently cut.
pub fn decompressing_reader(bytes: &[u8], limit: u64) -> impl Read + '_ {
    let inner: Box<dyn Read + '_> = if is_gzip(bytes) {
        Box::new(flate2::read::MultiGzDecoder::new(bytes))
    } else {
        Box::new(bytes)
    };
    CappedReader {
        inner,
        remaining: limit,
        limit,
    }
}

/// Reads through `inner` and fails once more than `limit` bytes have been read.
struct CappedReader<R> {
    inner: R,
    remaining: u64,
    limit: u64,
}

impl<R: Read> Read for CappedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.remaining == 0 {
            // At the limit: only a clean end of data is acceptable.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(std::io::Error::other(FetchError::TooLarge(self.limit))),
            };
        }
        let want = buf
            .len()
            .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        let read = self.inner.read(&mut buf[..want])?;
        self.remaining -= read as u64;
        Ok(read)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn gzip_is_decompressed_and_plain_text_kept() {
        assert_eq!(
            decompress(gzip(b"line 1\nline 2\n")).unwrap(),
            b"line 1\nline 2\n"
        );
        assert_eq!(decompress(b"plain".to_vec()).unwrap(), b"plain");
        assert!(matches!(
            decompress(vec![0x1f, 0x8b, 0, 1, 2]),
            Err(FetchError::Corrupt)
        ));
    }

    #[test]
    fn streaming_reader_decompresses_within_the_limit() {
        let data = b"0123456789".repeat(100);
        let compressed = gzip(&data);
        let mut out = Vec::new();
        decompressing_reader(&compressed, data.len() as u64)
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, data);

        let mut plain = Vec::new();
        decompressing_reader(b"plain", 5)
            .read_to_end(&mut plain)
            .unwrap();
        assert_eq!(plain, b"plain");
    }

    #[test]
    fn streaming_reader_refuses_to_expand_past_the_limit() {
        let compressed = gzip(&vec![0u8; 10_000]);
        let mut out = Vec::new();
        let error = decompressing_reader(&compressed, 9_999)
            .read_to_end(&mut out)
            .unwrap_err();
        let inner = error.into_inner().unwrap();
        assert!(matches!(
            inner.downcast_ref::<FetchError>(),
            Some(FetchError::TooLarge(9_999))
        ));
    }

    #[test]
    fn errors_never_name_the_url_and_say_whether_to_retry() {
        for error in [
            FetchError::InvalidUrl,
            FetchError::Timeout,
            FetchError::Transport,
            FetchError::Status(403),
            FetchError::TooLarge(1),
            FetchError::Corrupt,
            FetchError::OutsideLocation,
            FetchError::AddressRefused,
            FetchError::Redirect(307),
        ] {
            assert!(!error.to_string().contains("http"), "{error}");
        }
        assert!(FetchError::Timeout.is_transient());
        assert!(FetchError::Status(503).is_transient());
        assert!(!FetchError::Corrupt.is_transient());
        assert!(!FetchError::TooLarge(1).is_transient());
    }

    #[tokio::test]
    async fn a_malformed_url_is_refused_without_echoing_it() {
        let fetcher = HttpArtifactFetcher::new(Duration::from_secs(1)).unwrap();
        let error = fetcher
            .fetch("http://bucket/secret path?sig=abc", &FetchScope::Trusted)
            .await
            .unwrap_err();
        assert!(matches!(error, FetchError::InvalidUrl));
        assert!(!error.to_string().contains("sig=abc"));
    }

    #[tokio::test]
    async fn bodies_over_the_limit_are_refused() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = [0u8; 1024];
            let _ = socket.read(&mut request).await.unwrap();
            let body = vec![b'x'; 100];
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            socket.write_all(head.as_bytes()).await.unwrap();
            socket.write_all(&body).await.unwrap();
        });
        let fetcher = HttpArtifactFetcher::new(Duration::from_secs(5))
            .unwrap()
            .with_max_bytes(10);
        let error = fetcher
            .fetch(&format!("http://{addr}/object"), &FetchScope::Trusted)
            .await
            .unwrap_err();
        assert!(matches!(error, FetchError::TooLarge(10)), "{error:?}");
    }

    /// A local object-store stand-in: answers every request with `response` (`slow`: the
    /// body one byte every 200 ms) and counts the connections it accepted.
    struct Server {
        addr: std::net::SocketAddr,
        connections: Arc<std::sync::atomic::AtomicUsize>,
    }

    impl Server {
        async fn start(head: &str, body: Vec<u8>, slow: bool) -> Self {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let connections = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let counter = connections.clone();
            let head = head.to_owned();
            tokio::spawn(async move {
                loop {
                    let Ok((mut socket, _)) = listener.accept().await else {
                        return;
                    };
                    counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let (head, body) = (head.clone(), body.clone());
                    tokio::spawn(async move {
                        let mut request = [0u8; 4096];
                        let _ = socket.read(&mut request).await;
                        let _ = socket.write_all(head.as_bytes()).await;
                        if slow {
                            for byte in body {
                                if socket.write_all(&[byte]).await.is_err() {
                                    return;
                                }
                                tokio::time::sleep(Duration::from_millis(200)).await;
                            }
                        } else {
                            let _ = socket.write_all(&body).await;
                        }
                    });
                }
            });
            Server { addr, connections }
        }

        async fn ok(body: &[u8]) -> Self {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            Self::start(&head, body.to_vec(), false).await
        }

        fn connections(&self) -> usize {
            self.connections.load(std::sync::atomic::Ordering::SeqCst)
        }
    }

    fn rules(allow: &[String]) -> StorageEndpoints {
        StorageEndpoints::parse(allow, &[]).unwrap()
    }

    /// The scope of a tenant location (a NAC-labelled Velero BSL) of `provider` with `config`.
    fn tenant_scope(
        provider: &str,
        config: serde_json::Value,
        rules: &StorageEndpoints,
    ) -> FetchScope {
        let location: crate::api::velero::BackupStorageLocation =
            serde_json::from_value(serde_json::json!({
                "apiVersion": "velero.io/v1", "kind": "BackupStorageLocation",
                "metadata": {"name": "team-a-loc", "namespace": "openshift-adp",
                             "labels": {"openshift.io/oadp-nabsl-origin-nacuuid": "team-a-loc"}},
                "spec": {"provider": provider, "objectStorage": {"bucket": "b"}, "config": config}
            }))
            .unwrap();
        let scope = fetch_scope(Some(&location), rules);
        assert!(matches!(scope, FetchScope::TenantLocation(_)));
        scope
    }

    fn fetcher() -> HttpArtifactFetcher {
        HttpArtifactFetcher::new(Duration::from_secs(5)).unwrap()
    }

    #[tokio::test]
    async fn the_trusted_scope_still_fetches_from_loopback() {
        let server = Server::ok(b"velero log").await;
        let body = fetcher()
            .fetch(
                &format!("http://{}/download/b/k?sig=1", server.addr),
                &FetchScope::Trusted,
            )
            .await
            .unwrap();
        assert_eq!(body, b"velero log");
    }

    #[tokio::test]
    async fn a_tenant_location_at_loopback_is_refused_without_connecting() {
        let server = Server::ok(b"secret").await;
        let url = format!("http://{}/download/b/k", server.addr);
        // The location names the loopback endpoint; without an allow-list it has no origin.
        let scope = tenant_scope(
            "aws",
            serde_json::json!({"s3Url": format!("http://{}", server.addr)}),
            &StorageEndpoints::default(),
        );
        let error = fetcher().fetch(&url, &scope).await.unwrap_err();
        assert!(matches!(error, FetchError::OutsideLocation), "{error:?}");
        // An origin admitted by an earlier rule still cannot reach a loopback address.
        let stale = FetchScope::TenantLocation(TenantFetchScope::new(
            vec![crate::policy::endpoints::TenantOrigin {
                scheme: crate::policy::endpoints::Scheme::Http,
                host: crate::policy::endpoints::HostPattern::Exact(Host::Ip(server.addr.ip())),
                port: server.addr.port(),
                vouching: Vouching::Unlisted,
            }],
            StorageEndpoints::default(),
        ));
        let error = fetcher().fetch(&url, &stale).await.unwrap_err();
        assert!(matches!(error, FetchError::AddressRefused), "{error:?}");
        assert_eq!(server.connections(), 0);
        assert!(!error.to_string().contains("127.0.0.1"));
    }

    #[tokio::test]
    async fn a_listed_name_resolving_to_loopback_is_refused_at_connect_time() {
        // The administrator listed the name; the address it resolves to is checked on every
        // fetch (here: localhost, as a rebinding name would resolve), not trusted.
        let server = Server::ok(b"secret").await;
        let origin = format!("http://localhost:{}", server.addr.port());
        let rules = rules(std::slice::from_ref(&origin));
        let scope = tenant_scope("aws", serde_json::json!({"s3Url": origin}), &rules);
        let error = fetcher()
            .fetch(&format!("{origin}/b/k"), &scope)
            .await
            .unwrap_err();
        assert!(matches!(error, FetchError::AddressRefused), "{error:?}");
        assert_eq!(server.connections(), 0);
    }

    #[tokio::test]
    async fn an_allow_listed_loopback_origin_is_fetched_under_a_tenant_scope() {
        // The demo: the simulator's object store on 127.0.0.1, listed by the administrator.
        let server = Server::ok(b"tarball").await;
        let origin = format!("http://{}", server.addr);
        let scope = tenant_scope(
            "nac.openshift.io/local",
            serde_json::json!({}),
            &rules(std::slice::from_ref(&origin)),
        );
        let body = fetcher()
            .fetch(&format!("{origin}/download/b/k"), &scope)
            .await
            .unwrap();
        assert_eq!(body, b"tarball");
    }

    #[tokio::test]
    async fn a_url_outside_the_locations_origin_is_refused() {
        let server = Server::ok(b"x").await;
        let other = Server::ok(b"y").await;
        let origin = format!("http://{}", server.addr);
        let scope = tenant_scope(
            "aws",
            serde_json::json!({"s3Url": origin}),
            &rules(std::slice::from_ref(&origin)),
        );
        for url in [
            format!("http://{}/b/k", other.addr),
            format!("https://{}/b/k", server.addr),
            format!("http://localhost:{}/b/k", server.addr.port()),
            "http://169.254.169.254/latest/meta-data/".to_owned(),
            "file:///etc/passwd".to_owned(),
        ] {
            let error = fetcher().fetch(&url, &scope).await.unwrap_err();
            assert!(
                matches!(error, FetchError::OutsideLocation | FetchError::InvalidUrl),
                "{url}: {error:?}"
            );
        }
        assert_eq!(other.connections(), 0);
        assert_eq!(server.connections(), 0);
        assert_eq!(
            fetcher()
                .fetch(&format!("{origin}/b/k"), &scope)
                .await
                .unwrap(),
            b"x"
        );
    }

    #[tokio::test]
    async fn redirects_are_refused_not_followed() {
        let target = Server::ok(b"metadata credentials").await;
        let head = format!(
            "HTTP/1.1 302 Found\r\nlocation: http://{}/latest/meta-data/\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            target.addr
        );
        let redirecting = Server::start(&head, Vec::new(), false).await;
        let origin = format!("http://{}", redirecting.addr);
        let scope = tenant_scope(
            "aws",
            serde_json::json!({"s3Url": origin}),
            &rules(std::slice::from_ref(&origin)),
        );
        for scope in [&scope, &FetchScope::Trusted] {
            let error = fetcher()
                .fetch(&format!("{origin}/b/k"), scope)
                .await
                .unwrap_err();
            assert!(matches!(error, FetchError::Redirect(302)), "{error:?}");
            assert!(!error.is_transient());
        }
        assert_eq!(target.connections(), 0);
    }

    #[tokio::test]
    async fn slow_and_oversized_bodies_are_cut_off_under_a_tenant_scope() {
        let slow = Server::start(
            "HTTP/1.1 200 OK\r\ncontent-length: 100\r\nconnection: close\r\n\r\n",
            vec![b'x'; 100],
            true,
        )
        .await;
        let origin = format!("http://{}", slow.addr);
        let scope = tenant_scope(
            "aws",
            serde_json::json!({"s3Url": origin}),
            &rules(std::slice::from_ref(&origin)),
        );
        let quick = HttpArtifactFetcher::new(Duration::from_millis(600)).unwrap();
        let started = std::time::Instant::now();
        let error = quick
            .fetch(&format!("{origin}/b/k"), &scope)
            .await
            .unwrap_err();
        assert!(matches!(error, FetchError::Timeout), "{error:?}");
        assert!(started.elapsed() < Duration::from_secs(3));

        let big = Server::ok(&[b'x'; 100]).await;
        let origin = format!("http://{}", big.addr);
        let scope = tenant_scope(
            "aws",
            serde_json::json!({"s3Url": origin}),
            &rules(std::slice::from_ref(&origin)),
        );
        let error = fetcher()
            .with_max_bytes(10)
            .fetch(&format!("{origin}/b/k"), &scope)
            .await
            .unwrap_err();
        assert!(matches!(error, FetchError::TooLarge(10)), "{error:?}");
    }
}
