//! HTTP to the gateway: one bearer token, JSON in and out, RFC 9457 problems turned into
//! errors a pipeline can print, and artifact bodies streamed as they arrive.
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use serde_json::Value;

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The gateway answered with an error (its problem+json title and detail).
    #[error("{status}: {title}{}", detail.as_deref().map(|d| format!(": {d}")).unwrap_or_default())]
    Problem {
        status: StatusCode,
        title: String,
        detail: Option<String>,
        /// Field-level errors of a refused spec (`field: message`).
        errors: Vec<String>,
    },
    /// The gateway could not be reached, or the connection broke.
    #[error("cannot reach the gateway at {server}: {message}")]
    Transport { server: String, message: String },
    /// The gateway's answer was not what the API promises.
    #[error("unexpected answer from the gateway: {0}")]
    InvalidResponse(String),
    /// Local configuration (server address, token, CA file).
    #[error("{0}")]
    Config(String),
}

/// A response: status and body.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub body: Value,
}

type Connector = hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>;

/// A client of one gateway, acting with one token.
pub struct GatewayClient {
    server: url::Url,
    token: String,
    http: hyper_util::client::legacy::Client<Connector, Full<Bytes>>,
    /// Longest wait for any single HTTP exchange (long-polls included).
    request_timeout: Duration,
}

impl std::fmt::Debug for GatewayClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token stays out of every debug print.
        f.debug_struct("GatewayClient")
            .field("server", &self.server.as_str())
            .finish_non_exhaustive()
    }
}

impl GatewayClient {
    /// A client of `server` (http or https) sending `token`; TLS trusts the platform's roots
    /// plus the PEM certificates in `ca_file`.
    pub fn new(
        server: &str,
        token: &str,
        ca_file: Option<&std::path::Path>,
    ) -> Result<Self, ClientError> {
        let server = url::Url::parse(server)
            .map_err(|e| ClientError::Config(format!("--server {server:?}: {e}")))?;
        if !matches!(server.scheme(), "http" | "https") {
            return Err(ClientError::Config(format!(
                "--server must be an http:// or https:// URL, not {:?}",
                server.scheme()
            )));
        }
        let connector = match ca_file {
            None => hyper_rustls::HttpsConnectorBuilder::new()
                .with_native_roots()
                .map_err(|e| ClientError::Config(format!("cannot load the CA roots: {e}")))?,
            Some(path) => {
                use rustls::pki_types::{CertificateDer, pem::PemObject};
                let mut roots = rustls::RootCertStore::empty();
                for cert in CertificateDer::pem_file_iter(path).map_err(|e| {
                    ClientError::Config(format!("--certificate-authority {}: {e}", path.display()))
                })? {
                    let cert = cert.map_err(|e| {
                        ClientError::Config(format!(
                            "--certificate-authority {}: {e}",
                            path.display()
                        ))
                    })?;
                    roots.add(cert).map_err(|e| {
                        ClientError::Config(format!(
                            "--certificate-authority {}: {e}",
                            path.display()
                        ))
                    })?;
                }
                let config = rustls::ClientConfig::builder()
                    .with_root_certificates(roots)
                    .with_no_client_auth();
                hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(config)
            }
        }
        .https_or_http()
        .enable_http1()
        .build();
        let http =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build(connector);
        Ok(GatewayClient {
            server,
            token: token.to_string(),
            http,
            request_timeout: Duration::from_secs(15 * 60),
        })
    }

    fn url(&self, path_and_query: &str) -> String {
        format!(
            "{}{}",
            self.server.as_str().trim_end_matches('/'),
            path_and_query
        )
    }

    fn transport(&self, message: impl std::fmt::Display) -> ClientError {
        ClientError::Transport {
            server: self.server.to_string(),
            message: message.to_string(),
        }
    }

    async fn send(
        &self,
        method: Method,
        path_and_query: &str,
        body: Option<&Value>,
        idempotency_key: Option<&str>,
    ) -> Result<hyper::Response<hyper::body::Incoming>, ClientError> {
        let mut request = Request::builder()
            .method(method)
            .uri(self.url(path_and_query))
            .header(header::AUTHORIZATION, format!("Bearer {}", self.token))
            .header(header::ACCEPT, "application/json");
        if let Some(key) = idempotency_key {
            request = request.header("Idempotency-Key", key);
        }
        let payload = match body {
            Some(b) => {
                request = request.header(header::CONTENT_TYPE, "application/json");
                Bytes::from(serde_json::to_vec(b).map_err(|e| ClientError::Config(e.to_string()))?)
            }
            None => Bytes::new(),
        };
        let request = request
            .body(Full::new(payload))
            .map_err(|e| ClientError::Config(e.to_string()))?;
        tokio::time::timeout(self.request_timeout, self.http.request(request))
            .await
            .map_err(|_| self.transport("no answer in time"))?
            .map_err(|e| self.transport(e))
    }

    /// Sends a JSON request and reads a JSON answer; error statuses become [`ClientError::Problem`].
    pub async fn call(
        &self,
        method: Method,
        path_and_query: &str,
        body: Option<&Value>,
        idempotency_key: Option<&str>,
    ) -> Result<Answer, ClientError> {
        let response = self
            .send(method, path_and_query, body, idempotency_key)
            .await?;
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| self.transport(e))?
            .to_bytes();
        let body: Value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).map_err(|_| {
                ClientError::InvalidResponse(format!(
                    "{status}: {}",
                    String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
                ))
            })?
        };
        if status.is_client_error() || status.is_server_error() {
            return Err(problem(status, &body));
        }
        Ok(Answer { status, body })
    }

    /// Streams a text artifact (logs) into `out` as it arrives.
    pub async fn stream_to(
        &self,
        path_and_query: &str,
        out: &mut (impl std::io::Write + Send),
    ) -> Result<u64, ClientError> {
        let response = self.send(Method::GET, path_and_query, None, None).await?;
        let status = response.status();
        let mut body = response.into_body();
        if !status.is_success() {
            let bytes = body
                .collect()
                .await
                .map_err(|e| self.transport(e))?
                .to_bytes();
            let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            return Err(problem(status, &value));
        }
        let mut written = 0u64;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| self.transport(e))?;
            if let Some(data) = frame.data_ref() {
                out.write_all(data)
                    .map_err(|e| ClientError::Config(format!("writing the output: {e}")))?;
                written += data.len() as u64;
            }
        }
        out.flush()
            .map_err(|e| ClientError::Config(format!("writing the output: {e}")))?;
        Ok(written)
    }
}

/// The error for an RFC 9457 problem answer (or whatever else came with an error status).
pub fn problem(status: StatusCode, body: &Value) -> ClientError {
    let title = body["title"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| status.canonical_reason().unwrap_or("error").to_string());
    let detail = body["detail"].as_str().map(str::to_string);
    let errors = body["errors"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|e| {
                    let field = e["field"].as_str().or(e["pointer"].as_str()).unwrap_or("");
                    let message = e["message"].as_str().or(e["detail"].as_str()).unwrap_or("");
                    if field.is_empty() {
                        message.to_string()
                    } else {
                        format!("{field}: {message}")
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    ClientError::Problem {
        status,
        title,
        detail,
        errors,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn problems_keep_title_detail_and_field_errors() {
        let err = problem(
            StatusCode::UNPROCESSABLE_ENTITY,
            &json!({"type": "about:blank", "title": "Invalid spec", "status": 422,
                    "detail": "the spec breaks the policy",
                    "errors": [{"field": "spec.backupSpec.ttl", "message": "at most 720h"}]}),
        );
        assert_eq!(
            err.to_string(),
            "422 Unprocessable Entity: Invalid spec: the spec breaks the policy"
        );
        let ClientError::Problem { errors, .. } = err else {
            panic!("not a problem")
        };
        assert_eq!(errors, vec!["spec.backupSpec.ttl: at most 720h"]);
    }

    #[test]
    fn an_error_without_a_problem_body_still_says_what_happened() {
        let err = problem(StatusCode::BAD_GATEWAY, &Value::Null);
        assert_eq!(err.to_string(), "502 Bad Gateway: Bad Gateway");
    }

    #[test]
    fn only_http_urls_are_servers_and_the_token_never_prints() {
        assert!(GatewayClient::new("ftp://x", "t", None).is_err());
        assert!(GatewayClient::new("not a url", "t", None).is_err());
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = GatewayClient::new("http://127.0.0.1:8080", "secret-token", None);
        if let Ok(client) = client {
            assert!(!format!("{client:?}").contains("secret-token"));
        }
    }
}
