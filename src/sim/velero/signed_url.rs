//! The simulator's own signed, expiring download URLs for objects of the local object store.
//!
//! S3 locations get real presigned URLs from the store; the local provider has no server of
//! its own, so the simulator serves its directory through [`download_router`] and hands out
//! `GET /download/<bucket>/<key...>?expires=<unix seconds>&signature=<hex HMAC-SHA256>` URLs,
//! good for the same ten minutes Velero's are. The signature covers bucket, key and expiry, so
//! none of them can be changed, and the endpoint never serves a file outside its root.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use chrono::{DateTime, Utc};
use hmac::digest::KeyInit;
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Path segment under which [`download_router`] serves objects.
pub const DOWNLOAD_PATH: &str = "download";

/// A source of the current time, so tests and a sped-up simulator clock can decide expiry.
pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

/// Why a signed URL is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// A required query parameter is absent.
    #[error("the URL has no {0} parameter")]
    Missing(&'static str),
    /// A query parameter is repeated or not in its expected form.
    #[error("the URL's {0} parameter is malformed")]
    Malformed(&'static str),
    /// The signature does not match bucket, key and expiry: the URL was altered or forged.
    #[error("the URL's signature is invalid")]
    Invalid,
    /// The URL was genuine but its time is up.
    #[error("the URL expired at {0}")]
    Expired(DateTime<Utc>),
}

/// Why a download URL cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DownloadUrlError {
    /// The base URL cannot take path segments (e.g. `mailto:`).
    #[error("base URL {0} cannot carry a path")]
    BaseCannotCarryPath(String),
    /// A bucket or key the endpoint would refuse to serve.
    #[error("{0}")]
    InvalidObjectPath(String),
}

/// Signs and verifies download URLs with HMAC-SHA256.
#[derive(Clone)]
pub struct UrlSigner {
    /// HMAC state keyed once; cloned for every message.
    keyed: HmacSha256,
}

impl std::fmt::Debug for UrlSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key stays out of logs: whoever has it can sign URLs for any object.
        f.debug_struct("UrlSigner").finish_non_exhaustive()
    }
}

impl UrlSigner {
    /// A signer with a fresh random key: URLs stop working when the simulator restarts.
    pub fn random() -> Self {
        Self::with_key(rand::random())
    }

    /// A signer with the given key, e.g. one kept across restarts.
    pub fn with_key(key: [u8; 32]) -> Self {
        // HMAC zero-pads keys shorter than SHA-256's 64-byte block, so keying with the padded
        // block is the same HMAC, through the constructor that cannot fail.
        let mut block = [0u8; 64];
        block[..32].copy_from_slice(&key);
        Self {
            keyed: <HmacSha256 as KeyInit>::new(&block.into()),
        }
    }

    /// The query part (`expires=<unix>&signature=<hex>`) authorizing a GET of `bucket`/`key`
    /// until `expires_at`.
    pub fn sign(&self, bucket: &str, key: &str, expires_at: DateTime<Utc>) -> String {
        let expires = expires_at.timestamp();
        let signature = hex::encode(self.mac(bucket, key, expires).finalize().into_bytes());
        format!("expires={expires}&signature={signature}")
    }

    /// Checks a URL's query for `bucket`/`key` at `now`: the signature first (in constant time),
    /// so an altered expiry reads as tampering rather than as expiry.
    pub fn verify(
        &self,
        bucket: &str,
        key: &str,
        query: &str,
        now: DateTime<Utc>,
    ) -> Result<(), SignatureError> {
        let mut expires = None;
        let mut signature = None;
        for (name, value) in form_urlencoded::parse(query.as_bytes()) {
            let slot = match name.as_ref() {
                "expires" => &mut expires,
                "signature" => &mut signature,
                _ => continue,
            };
            if slot.replace(value).is_some() {
                return Err(SignatureError::Malformed(if name == "expires" {
                    "expires"
                } else {
                    "signature"
                }));
            }
        }
        let expires = expires.ok_or(SignatureError::Missing("expires"))?;
        let signature = signature.ok_or(SignatureError::Missing("signature"))?;
        // Only canonical decimal is accepted, so one URL has exactly one valid spelling.
        let expires_unix: i64 = expires
            .parse()
            .ok()
            .filter(|parsed: &i64| parsed.to_string() == expires)
            .ok_or(SignatureError::Malformed("expires"))?;
        let signature = hex::decode(signature.as_bytes())
            .map_err(|_| SignatureError::Malformed("signature"))?;
        self.mac(bucket, key, expires_unix)
            .verify_slice(&signature)
            .map_err(|_| SignatureError::Invalid)?;
        let expires_at = DateTime::from_timestamp(expires_unix, 0)
            .ok_or(SignatureError::Malformed("expires"))?;
        if now >= expires_at {
            return Err(SignatureError::Expired(expires_at));
        }
        Ok(())
    }

    fn mac(&self, bucket: &str, key: &str, expires: i64) -> HmacSha256 {
        let mut mac = self.keyed.clone();
        // Length-prefixed fields: no bucket/key split can produce the same message as another.
        for part in [
            "nac-sim-download-v1".as_bytes(),
            bucket.len().to_string().as_bytes(),
            bucket.as_bytes(),
            key.len().to_string().as_bytes(),
            key.as_bytes(),
            expires.to_string().as_bytes(),
        ] {
            mac.update(part);
            mac.update(b"\n");
        }
        mac
    }
}

/// The URL under `base` (e.g. `http://127.0.0.1:8085/`) serving `bucket`/`key` until
/// `now + ttl`.
pub fn download_url(
    base: &url::Url,
    signer: &UrlSigner,
    bucket: &str,
    key: &str,
    ttl: Duration,
    now: DateTime<Utc>,
) -> Result<url::Url, DownloadUrlError> {
    check_object_path(bucket, key).map_err(DownloadUrlError::InvalidObjectPath)?;
    let mut url = base.clone();
    {
        let mut segments = url
            .path_segments_mut()
            .map_err(|()| DownloadUrlError::BaseCannotCarryPath(base.to_string()))?;
        segments.pop_if_empty().push(DOWNLOAD_PATH).push(bucket);
        // Each key segment is pushed (and so percent-encoded) on its own, so the router's
        // decoded path is exactly the key that was signed.
        segments.extend(key.split('/'));
    }
    let ttl = chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::MAX);
    let expires_at = now
        .checked_add_signed(ttl)
        .unwrap_or(DateTime::<Utc>::MAX_UTC);
    url.set_query(Some(&signer.sign(bucket, key, expires_at)));
    Ok(url)
}

/// Serves `GET /download/<bucket>/<key...>` from `local_root/<bucket>/<key>` for URLs signed
/// by `signer`, judging expiry by the system clock.
pub fn download_router(signer: Arc<UrlSigner>, local_root: PathBuf) -> Router {
    download_router_with_clock(signer, local_root, Arc::new(Utc::now))
}

/// [`download_router`] judging expiry by `clock`, for a simulator whose time runs faster.
pub fn download_router_with_clock(
    signer: Arc<UrlSigner>,
    local_root: PathBuf,
    clock: Clock,
) -> Router {
    let state = Arc::new(DownloadState {
        signer,
        local_root,
        clock,
    });
    Router::new()
        .route(
            &format!("/{DOWNLOAD_PATH}/{{bucket}}/{{*key}}"),
            get(serve_download),
        )
        .with_state(state)
}

struct DownloadState {
    signer: Arc<UrlSigner>,
    local_root: PathBuf,
    clock: Clock,
}

async fn serve_download(
    State(state): State<Arc<DownloadState>>,
    UrlPath((bucket, key)): UrlPath<(String, String)>,
    RawQuery(query): RawQuery,
) -> Response {
    if check_object_path(&bucket, &key).is_err() {
        return text(StatusCode::NOT_FOUND, "not found");
    }
    let now = (state.clock)();
    match state
        .signer
        .verify(&bucket, &key, query.as_deref().unwrap_or_default(), now)
    {
        Ok(()) => {}
        Err(SignatureError::Expired(_)) => {
            return text(StatusCode::FORBIDDEN, "forbidden: the URL has expired");
        }
        Err(_) => return text(StatusCode::FORBIDDEN, "forbidden: invalid signature"),
    }
    match read_object(&state.local_root, &bucket, &key).await {
        Some(bytes) => {
            let content_type = if key.ends_with(".gz") {
                "application/gzip"
            } else {
                "application/octet-stream"
            };
            (
                StatusCode::OK,
                [
                    (header::CONTENT_TYPE, content_type),
                    (header::CACHE_CONTROL, "no-store"),
                ],
                bytes,
            )
                .into_response()
        }
        None => text(StatusCode::NOT_FOUND, "not found"),
    }
}

fn text(status: StatusCode, body: &'static str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}

/// The object's bytes, or `None` when it is missing, not a regular file, or resolves (through
/// a symbolic link) to somewhere outside `local_root`.
async fn read_object(local_root: &Path, bucket: &str, key: &str) -> Option<Vec<u8>> {
    let root = tokio::fs::canonicalize(local_root).await.ok()?;
    let path = tokio::fs::canonicalize(local_root.join(bucket).join(key))
        .await
        .ok()?;
    if !path.starts_with(&root) {
        return None;
    }
    let metadata = tokio::fs::metadata(&path).await.ok()?;
    if !metadata.is_file() {
        return None;
    }
    tokio::fs::read(&path).await.ok()
}

/// Bucket and key as the endpoint accepts them: a bucket of one segment, a key of non-empty
/// segments, none of them `.` or `..`, no backslashes or control characters.
fn check_object_path(bucket: &str, key: &str) -> Result<(), String> {
    let bad_segment = |segment: &str| {
        segment.is_empty()
            || segment == "."
            || segment == ".."
            || segment.contains('\\')
            || segment.chars().any(char::is_control)
    };
    if bad_segment(bucket) || bucket.contains('/') {
        return Err(format!("invalid bucket {bucket:?}"));
    }
    if key.split('/').any(bad_segment) {
        return Err(format!("invalid object key {key:?}"));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    fn at(unix: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(unix, 0).unwrap()
    }

    #[test]
    fn signed_queries_verify_until_expiry() {
        let signer = UrlSigner::with_key([7; 32]);
        let query = signer.sign("bucket", "backups/b/b-logs.gz", at(1_000));
        assert!(query.starts_with("expires=1000&signature="));
        assert_eq!(
            signer.verify("bucket", "backups/b/b-logs.gz", &query, at(999)),
            Ok(())
        );
        assert_eq!(
            signer.verify("bucket", "backups/b/b-logs.gz", &query, at(1_000)),
            Err(SignatureError::Expired(at(1_000)))
        );
    }

    #[test]
    fn tampering_is_detected() {
        let signer = UrlSigner::with_key([7; 32]);
        let query = signer.sign("bucket", "backups/b/b-logs.gz", at(1_000));
        let now = at(10);
        assert_eq!(
            signer.verify("bucket", "backups/c/c-logs.gz", &query, now),
            Err(SignatureError::Invalid)
        );
        assert_eq!(
            signer.verify("other", "backups/b/b-logs.gz", &query, now),
            Err(SignatureError::Invalid)
        );
        let later = query.replace("expires=1000", "expires=2000");
        assert_eq!(
            signer.verify("bucket", "backups/b/b-logs.gz", &later, now),
            Err(SignatureError::Invalid)
        );
        let padded = query.replace("expires=1000", "expires=01000");
        assert_eq!(
            signer.verify("bucket", "backups/b/b-logs.gz", &padded, now),
            Err(SignatureError::Malformed("expires"))
        );
        let mut flipped = query.clone();
        let last = flipped.pop().unwrap();
        flipped.push(if last == '0' { '1' } else { '0' });
        assert_eq!(
            signer.verify("bucket", "backups/b/b-logs.gz", &flipped, now),
            Err(SignatureError::Invalid)
        );
        let other_key = UrlSigner::with_key([8; 32]);
        assert_eq!(
            other_key.verify("bucket", "backups/b/b-logs.gz", &query, now),
            Err(SignatureError::Invalid)
        );
        assert_eq!(
            signer.verify("bucket", "k", "expires=5", now),
            Err(SignatureError::Missing("signature"))
        );
        assert_eq!(
            signer.verify("bucket", "k", "signature=00", now),
            Err(SignatureError::Missing("expires"))
        );
        assert_eq!(
            signer.verify("bucket", "k", "expires=5&signature=zz", now),
            Err(SignatureError::Malformed("signature"))
        );
        assert_eq!(
            signer.verify("bucket", "k", &format!("{query}&expires=1000"), now),
            Err(SignatureError::Malformed("expires"))
        );
        // Field boundaries are part of the message: moving a slash does not keep the signature.
        let split = signer.sign("a", "b/c", at(1_000));
        assert_eq!(
            signer.verify("a/b", "c", &split, now),
            Err(SignatureError::Invalid)
        );
    }

    #[test]
    fn padded_key_is_plain_hmac_sha256() {
        let key = [9u8; 32];
        let query = UrlSigner::with_key(key).sign("b", "k", at(100));
        let mut reference = <HmacSha256 as Mac>::new_from_slice(&key).unwrap();
        for part in ["nac-sim-download-v1", "1", "b", "1", "k", "100"] {
            reference.update(part.as_bytes());
            reference.update(b"\n");
        }
        let expected = hex::encode(reference.finalize().into_bytes());
        assert_eq!(query, format!("expires=100&signature={expected}"));
    }

    #[test]
    fn random_signers_differ_and_hide_their_key() {
        let one = UrlSigner::random();
        let two = UrlSigner::random();
        let query = one.sign("b", "k", at(100));
        assert_eq!(
            two.verify("b", "k", &query, at(0)),
            Err(SignatureError::Invalid)
        );
        assert_eq!(format!("{one:?}"), "UrlSigner { .. }");
    }

    #[test]
    fn download_urls_encode_each_segment() {
        let signer = UrlSigner::with_key([1; 32]);
        let base = url::Url::parse("http://127.0.0.1:8085/sim/").unwrap();
        let url = download_url(
            &base,
            &signer,
            "velero",
            "prefix/backups/b 1/b 1-logs.gz",
            Duration::from_secs(600),
            at(1_000),
        )
        .unwrap();
        assert_eq!(
            url.path(),
            "/sim/download/velero/prefix/backups/b%201/b%201-logs.gz"
        );
        assert!(url.query().unwrap().starts_with("expires=1600&signature="));
        assert!(matches!(
            download_url(&base, &signer, "velero", "a/../b", Duration::ZERO, at(0)),
            Err(DownloadUrlError::InvalidObjectPath(_))
        ));
        assert!(matches!(
            download_url(
                &url::Url::parse("mailto:x@example.com").unwrap(),
                &signer,
                "velero",
                "k",
                Duration::ZERO,
                at(0)
            ),
            Err(DownloadUrlError::BaseCannotCarryPath(_))
        ));
    }

    async fn get_path(router: &Router, path_and_query: &str) -> (StatusCode, String, Vec<u8>) {
        let response = router
            .clone()
            .oneshot(
                Request::builder()
                    .uri(path_and_query)
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        let status = response.status();
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|value| value.to_str().unwrap().to_owned())
            .unwrap_or_default();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, content_type, body.to_vec())
    }

    fn path_and_query(url: &url::Url) -> String {
        format!("{}?{}", url.path(), url.query().unwrap_or_default())
    }

    #[tokio::test]
    async fn router_serves_signed_objects_only() {
        let root = tempfile::tempdir().unwrap();
        let bucket_dir = root.path().join("velero/backups/b");
        std::fs::create_dir_all(&bucket_dir).unwrap();
        std::fs::write(bucket_dir.join("b-logs.gz"), b"\x1f\x8blog").unwrap();
        std::fs::write(bucket_dir.join("velero-backup.json"), b"{}").unwrap();
        std::fs::write(root.path().join("outside.txt"), b"secret").unwrap();

        let now = Arc::new(std::sync::Mutex::new(at(1_000)));
        let clock_now = Arc::clone(&now);
        let signer = Arc::new(UrlSigner::random());
        let router = download_router_with_clock(
            Arc::clone(&signer),
            root.path().to_path_buf(),
            Arc::new(move || *clock_now.lock().unwrap()),
        );
        let base = url::Url::parse("http://sim.local/").unwrap();
        let ttl = Duration::from_secs(600);
        let sign = |key: &str| download_url(&base, &signer, "velero", key, ttl, at(1_000)).unwrap();

        let log = sign("backups/b/b-logs.gz");
        let (status, content_type, body) = get_path(&router, &path_and_query(&log)).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(content_type, "application/gzip");
        assert_eq!(body, b"\x1f\x8blog");

        let json = sign("backups/b/velero-backup.json");
        let (status, content_type, body) = get_path(&router, &path_and_query(&json)).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(content_type, "application/octet-stream");
        assert_eq!(body, b"{}");

        // Tampered: another object under the same signature.
        let tampered = path_and_query(&log).replace("b-logs.gz", "velero-backup.json");
        let (status, _, body) = get_path(&router, &tampered).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert_eq!(body, b"forbidden: invalid signature");

        // No signature at all.
        let (status, _, _) = get_path(&router, log.path()).await;
        assert_eq!(status, StatusCode::FORBIDDEN);

        // Missing object with a valid signature.
        let missing = sign("backups/b/b-results.gz");
        let (status, _, _) = get_path(&router, &path_and_query(&missing)).await;
        assert_eq!(status, StatusCode::NOT_FOUND);

        // A directory is no object.
        let dir = sign("backups/b");
        let (status, _, _) = get_path(&router, &path_and_query(&dir)).await;
        assert_eq!(status, StatusCode::NOT_FOUND);

        // Escapes are refused whatever the signature says.
        let query = signer.sign("velero", "../outside.txt", at(2_000));
        for escape in [
            format!("/download/velero/../outside.txt?{query}"),
            format!("/download/velero/%2E%2E/outside.txt?{query}"),
            format!("/download/velero/..%2Foutside.txt?{query}"),
            format!("/download/../outside.txt?{query}"),
        ] {
            let (status, _, body) = get_path(&router, &escape).await;
            assert_ne!(status, StatusCode::OK, "{escape}");
            assert_ne!(body, b"secret", "{escape}");
        }

        // Expired once the clock passes the expiry.
        *now.lock().unwrap() = at(1_600);
        let (status, _, body) = get_path(&router, &path_and_query(&log)).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert_eq!(body, b"forbidden: the URL has expired");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn router_does_not_follow_links_out_of_its_root() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), b"secret").unwrap();
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("velero")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret"),
            root.path().join("velero/link"),
        )
        .unwrap();
        let signer = Arc::new(UrlSigner::random());
        let router = download_router(Arc::clone(&signer), root.path().to_path_buf());
        let url = download_url(
            &url::Url::parse("http://sim.local").unwrap(),
            &signer,
            "velero",
            "link",
            Duration::from_secs(60),
            Utc::now(),
        )
        .unwrap();
        let (status, _, _) = get_path(&router, &path_and_query(&url)).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
}
