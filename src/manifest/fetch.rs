//! Downloading what Velero serves behind a download URL (logs, results, resource lists, backup
//! tarballs) and undoing its gzip — the one I/O edge of `manifest`: a plain HTTP(S) GET, no kube
//! client, axum or sqlx, so the gateway, the controllers and the history store's manifest
//! builder share it.
//!
//! A download URL is a credential for the bucket (a presigned URL): it never appears in an
//! error's text or in a log line written here, and callers must keep it that way.

use std::io::Read;
use std::time::Duration;

use futures::future::BoxFuture;
use http_body_util::{BodyExt, Limited};

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
            FetchError::InvalidUrl | FetchError::TooLarge(_) | FetchError::Corrupt => false,
        }
    }
}

/// Downloads the bytes behind a download URL.
pub trait ArtifactFetcher: Send + Sync {
    /// The body at `url`, as served (still gzip'd when the object is).
    fn fetch<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Vec<u8>, FetchError>>;
}

/// Plain HTTP(S) with the platform's CA roots (S3 presigned URLs, the simulator's endpoint).
pub struct HttpArtifactFetcher {
    client: hyper_util::client::legacy::Client<
        hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
        http_body_util::Empty<bytes::Bytes>,
    >,
    timeout: Duration,
    max_bytes: usize,
}

impl HttpArtifactFetcher {
    /// A fetcher giving up after `timeout` (for the answer, then again for the body) and refusing
    /// bodies over [`MAX_ARTIFACT_BYTES`]; fails only when the platform's CA roots cannot be
    /// loaded.
    pub fn new(timeout: Duration) -> Result<Self, std::io::Error> {
        // ring named explicitly: the dependency graph enables more than one rustls provider,
        // so the process default cannot be guessed (and start-up may not have installed one).
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_native_roots(rustls::crypto::ring::default_provider())?
            .https_or_http()
            .enable_http1()
            .build();
        let client =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build(connector);
        Ok(HttpArtifactFetcher {
            client,
            timeout,
            max_bytes: MAX_ARTIFACT_BYTES,
        })
    }

    /// The same fetcher refusing bodies over `max_bytes` instead.
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }
}

impl ArtifactFetcher for HttpArtifactFetcher {
    fn fetch<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Vec<u8>, FetchError>> {
        Box::pin(async move {
            let uri: http::Uri = url.parse().map_err(|_| FetchError::InvalidUrl)?;
            let response = tokio::time::timeout(self.timeout, self.client.get(uri))
                .await
                .map_err(|_| FetchError::Timeout)?
                .map_err(|error| {
                    // hyper's error text carries no URL; still, log only its kind.
                    tracing::warn!(connect = error.is_connect(), "artifact download failed");
                    FetchError::Transport
                })?;
            let status = response.status();
            if !status.is_success() {
                tracing::warn!(status = %status, "artifact download refused");
                return Err(FetchError::Status(status.as_u16()));
            }
            let body = Limited::new(response.into_body(), self.max_bytes);
            let collected = tokio::time::timeout(self.timeout, body.collect())
                .await
                .map_err(|_| FetchError::Timeout)?
                .map_err(|error| {
                    if error.is::<http_body_util::LengthLimitError>() {
                        FetchError::TooLarge(self.max_bytes as u64)
                    } else {
                        FetchError::Transport
                    }
                })?;
            Ok(collected.to_bytes().to_vec())
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
            .fetch("http://bucket/secret path?sig=abc")
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
            .fetch(&format!("http://{addr}/object"))
            .await
            .unwrap_err();
        assert!(matches!(error, FetchError::TooLarge(10)), "{error:?}");
    }
}
