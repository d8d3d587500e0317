//! The gateway's side of fetching a backup's or restore's artifact (log, results, resource list):
//! the download itself lives in [`crate::manifest::fetch`], shared with the controllers and the
//! history store; here its errors become [`GatewayError`]s. The URL is a credential for the
//! bucket: it never leaves the gateway — not in a response, an error or a log line (the fetch
//! errors carry no URL, and the texts below are fixed).

use crate::gateway::error::GatewayError;
use crate::manifest::fetch::FetchError;

pub use crate::manifest::fetch::{ArtifactFetcher, HttpArtifactFetcher, MAX_ARTIFACT_BYTES};

impl From<FetchError> for GatewayError {
    fn from(error: FetchError) -> Self {
        let reason = match error {
            FetchError::Corrupt => "the artifact is corrupt",
            FetchError::TooLarge(_) => "the artifact is too large to serve",
            FetchError::InvalidUrl
            | FetchError::Timeout
            | FetchError::Transport
            | FetchError::Status(_) => "object storage did not serve the artifact",
            FetchError::OutsideLocation | FetchError::AddressRefused => {
                "NAC does not download from this storage location's endpoint (the administrator's storageEndpoints policy)"
            }
            FetchError::Redirect(_) => {
                "object storage answered with a redirect, which NAC does not follow"
            }
        };
        GatewayError::ArtifactUnavailable(reason.into())
    }
}

/// `bytes` gunzipped when they are gzip (Velero stores logs, results and resource lists
/// gzipped), else as they are; output is capped at [`MAX_ARTIFACT_BYTES`].
pub fn decompress(bytes: Vec<u8>) -> Result<Vec<u8>, GatewayError> {
    Ok(crate::manifest::fetch::decompress(bytes)?)
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
        assert!(matches!(
            decompress(vec![0x1f, 0x8b, 0, 1, 2]),
            Err(GatewayError::ArtifactUnavailable(reason)) if reason == "the artifact is corrupt"
        ));
    }

    #[test]
    fn fetch_errors_become_artifact_unavailable_with_fixed_texts() {
        for error in [
            FetchError::InvalidUrl,
            FetchError::Timeout,
            FetchError::Transport,
            FetchError::Status(403),
        ] {
            assert!(matches!(
                GatewayError::from(error),
                GatewayError::ArtifactUnavailable(reason)
                    if reason == "object storage did not serve the artifact"
            ));
        }
    }
}
