//! Fetching a backup's or restore's artifact (log, results, resource list) from the download
//! URL Velero produced, and decompressing it. The URL is a credential for the bucket: it never
//! leaves the gateway — not in a response, an error or a log line.

use std::io::Read;
use std::time::Duration;

use futures::future::BoxFuture;
use http_body_util::{BodyExt, Limited};

use crate::gateway::error::GatewayError;

/// Largest artifact served (compressed or not).
pub const MAX_ARTIFACT_BYTES: usize = 256 * 1024 * 1024;

/// Downloads the bytes behind a download URL.
pub trait ArtifactFetcher: Send + Sync {
    /// The body at `url`.
    fn fetch<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Vec<u8>, GatewayError>>;
}

/// Plain HTTP(S) with the platform's CA roots (S3 presigned URLs, the simulator's endpoint).
pub struct HttpArtifactFetcher {
    client: hyper_util::client::legacy::Client<
        hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
        http_body_util::Empty<bytes::Bytes>,
    >,
    timeout: Duration,
}

impl HttpArtifactFetcher {
    /// A fetcher; fails only when the platform's CA roots cannot be loaded.
    pub fn new(timeout: Duration) -> Result<Self, std::io::Error> {
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_native_roots()?
            .https_or_http()
            .enable_http1()
            .build();
        let client =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build(connector);
        Ok(HttpArtifactFetcher { client, timeout })
    }
}

impl ArtifactFetcher for HttpArtifactFetcher {
    fn fetch<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Vec<u8>, GatewayError>> {
        Box::pin(async move {
            let unavailable = || {
                GatewayError::ArtifactUnavailable(
                    "object storage did not serve the artifact".into(),
                )
            };
            let uri: http::Uri = url.parse().map_err(|_| unavailable())?;
            let response = tokio::time::timeout(self.timeout, self.client.get(uri))
                .await
                .map_err(|_| unavailable())?
                .map_err(|error| {
                    // hyper's error text carries no URL; still, log only its kind.
                    tracing::warn!(connect = error.is_connect(), "artifact download failed");
                    unavailable()
                })?;
            if !response.status().is_success() {
                tracing::warn!(status = %response.status(), "artifact download refused");
                return Err(unavailable());
            }
            let body = Limited::new(response.into_body(), MAX_ARTIFACT_BYTES);
            let collected = tokio::time::timeout(self.timeout, body.collect())
                .await
                .map_err(|_| unavailable())?
                .map_err(|_| unavailable())?;
            Ok(collected.to_bytes().to_vec())
        })
    }
}

/// `bytes` gunzipped when they are gzip (Velero stores logs, results and resource lists
/// gzipped), else as they are. Output is capped at [`MAX_ARTIFACT_BYTES`].
pub fn decompress(bytes: Vec<u8>) -> Result<Vec<u8>, GatewayError> {
    if bytes.len() < 2 || bytes[0] != 0x1f || bytes[1] != 0x8b {
        return Ok(bytes);
    }
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes.as_slice())
        .take(MAX_ARTIFACT_BYTES as u64)
        .read_to_end(&mut out)
        .map_err(|_| GatewayError::ArtifactUnavailable("the artifact is corrupt".into()))?;
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn gzip_is_decompressed_and_plain_text_kept() {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(b"line 1\nline 2\n").unwrap();
        let compressed = encoder.finish().unwrap();
        assert_eq!(decompress(compressed).unwrap(), b"line 1\nline 2\n");
        assert_eq!(decompress(b"plain".to_vec()).unwrap(), b"plain");
        assert!(decompress(vec![0x1f, 0x8b, 0, 1, 2]).is_err());
    }
}
