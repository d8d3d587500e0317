//! OpenShift OAuth sign-in for the console (authorization code flow, as the OpenShift console
//! does it): the authorization server is discovered from the API server's
//! `/.well-known/oauth-authorization-server`; `start` sends the browser there with a signed,
//! short-lived `state` that is also kept in a SameSite=Lax HttpOnly cookie; the callback checks
//! that the two agree, exchanges the code at the token endpoint (client id and secret as HTTP
//! basic authentication, form body) and the access token then signs in like a pasted one.
//!
//! The pure parts (URLs, the `state`, the cookie, the answers' shapes) are plain functions; the
//! [`OAuthClient`] does the two HTTP exchanges. Neither the client secret, nor a code, nor an
//! access token is ever logged or put in an error.

use std::time::{Duration, SystemTime};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;
use tokio::sync::OnceCell;

use super::jwt::{ISSUER, JwtError, JwtKey, epoch_secs, random_token};
use super::token::BearerToken;

/// Name of the cookie binding the `state` to the browser that started the sign-in.
pub const STATE_COOKIE: &str = "nac_oauth_state";
/// Where the OAuth routes live (the state cookie's `Path`).
pub const OAUTH_PATH: &str = "/api/v1/session/oauth";
/// The callback path under the public URL.
pub const CALLBACK_PATH: &str = "/api/v1/session/oauth/callback";
/// How long a sign-in may take between start and callback.
pub const STATE_TTL: Duration = Duration::from_secs(600);
/// What the API server serves to say where its OAuth server is.
pub const DISCOVERY_PATH: &str = "/.well-known/oauth-authorization-server";
/// Largest answer read from the authorization server.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// How the console signs in through OpenShift OAuth.
#[derive(Clone)]
pub struct OAuthConfig {
    /// The OAuthClient's name.
    pub client_id: String,
    /// The OAuthClient's secret.
    pub client_secret: SecretString,
    /// The URL the browser reaches the gateway at (`https://nac.apps.example.com`); the redirect
    /// URI is `<public_url>/api/v1/session/oauth/callback`.
    pub public_url: String,
    /// Where to discover the authorization server instead of the API server (its
    /// `/.well-known/oauth-authorization-server` is read); `None` in production.
    pub issuer_url: Option<String>,
    /// CA certificates (PEM) to trust for the authorization server instead of the platform's
    /// roots (OpenShift's ingress CA); `None`: the platform's roots.
    pub ca_pem: Option<Vec<u8>>,
}

impl std::fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("client_id", &self.client_id)
            .field("client_secret", &"<redacted>")
            .field("public_url", &self.public_url)
            .field("issuer_url", &self.issuer_url)
            .finish_non_exhaustive()
    }
}

/// What went wrong in an OAuth sign-in. Texts never carry a secret, code or token.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OAuthError {
    /// OAuth sign-in is not configured.
    #[error("OpenShift OAuth sign-in is not configured on this gateway")]
    NotConfigured,
    /// The settings are unusable.
    #[error("OAuth settings: {0}")]
    Config(String),
    /// The authorization server could not be discovered.
    #[error("the OAuth server could not be discovered: {0}")]
    Discovery(String),
    /// The `state` is missing, forged, expired, or not this browser's.
    #[error(
        "the sign-in state is missing, expired or does not match this browser; start the sign-in again"
    )]
    BadState,
    /// The authorization server refused to sign in (`error` on the callback).
    #[error("the OAuth server refused the sign-in: {0}")]
    Refused(String),
    /// The code could not be exchanged for a token.
    #[error("the OAuth server did not exchange the code for a token: {0}")]
    Exchange(String),
}

/// The parts of the authorization server's metadata (RFC 8414) the sign-in needs.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct AuthorizationServer {
    /// `issuer`.
    #[serde(default)]
    pub issuer: String,
    /// `authorization_endpoint`.
    pub authorization_endpoint: String,
    /// `token_endpoint`.
    pub token_endpoint: String,
}

impl AuthorizationServer {
    /// The metadata in `body`, with both endpoints absolute http(s) URLs.
    pub fn parse(body: &[u8]) -> Result<Self, OAuthError> {
        let server: AuthorizationServer = serde_json::from_slice(body)
            .map_err(|_| OAuthError::Discovery("the metadata is not valid JSON".into()))?;
        for (name, endpoint) in [
            ("authorization_endpoint", &server.authorization_endpoint),
            ("token_endpoint", &server.token_endpoint),
        ] {
            let url = url::Url::parse(endpoint)
                .map_err(|_| OAuthError::Discovery(format!("{name} is not a URL")))?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(OAuthError::Discovery(format!(
                    "{name} is not an http(s) URL"
                )));
            }
        }
        Ok(server)
    }
}

/// The redirect URI for `public_url`.
pub fn redirect_uri(public_url: &str) -> String {
    format!("{}{CALLBACK_PATH}", public_url.trim_end_matches('/'))
}

/// Where `start` sends the browser.
pub fn authorize_url(
    server: &AuthorizationServer,
    client_id: &str,
    redirect_uri: &str,
    state: &str,
) -> Result<String, OAuthError> {
    let mut url = url::Url::parse(&server.authorization_endpoint)
        .map_err(|_| OAuthError::Discovery("authorization_endpoint is not a URL".into()))?;
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", client_id)
        .append_pair("redirect_uri", redirect_uri)
        .append_pair("scope", "user:full")
        .append_pair("state", state);
    Ok(url.into())
}

/// The form body of the code exchange.
pub fn token_request_body(code: &str, redirect_uri: &str) -> String {
    form_urlencoded::Serializer::new(String::new())
        .append_pair("grant_type", "authorization_code")
        .append_pair("code", code)
        .append_pair("redirect_uri", redirect_uri)
        .finish()
}

/// The `Authorization` header of the code exchange: the client id and secret, each
/// form-urlencoded, as HTTP basic authentication (RFC 6749 §2.3.1).
pub fn basic_authorization(client_id: &str, client_secret: &str) -> String {
    let encode = |text: &str| form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>();
    format!(
        "Basic {}",
        STANDARD.encode(format!("{}:{}", encode(client_id), encode(client_secret)))
    )
}

/// The access token of a token endpoint's answer.
pub fn access_token_of(body: &[u8]) -> Result<BearerToken, OAuthError> {
    #[derive(Deserialize)]
    struct Answer {
        access_token: Option<String>,
        error: Option<String>,
    }
    let answer: Answer = serde_json::from_slice(body)
        .map_err(|_| OAuthError::Exchange("the answer is not valid JSON".into()))?;
    match (answer.access_token, answer.error) {
        (Some(token), _) if !token.trim().is_empty() && token.len() <= 16 * 1024 => {
            Ok(BearerToken::new(token.trim()))
        }
        (_, Some(error)) => Err(OAuthError::Exchange(short_code(&error))),
        _ => Err(OAuthError::Exchange(
            "the answer holds no access token".into(),
        )),
    }
}

/// An OAuth `error` code as it may be shown: short, and only the characters RFC 6749 allows.
pub fn short_code(code: &str) -> String {
    code.chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        .take(64)
        .collect()
}

/// The claims of a signed `state`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateClaims {
    /// Random, so every sign-in's state is different.
    pub nonce: String,
    /// Issued at.
    pub iat: u64,
    /// Expires at.
    pub exp: u64,
    /// Always the gateway.
    pub iss: String,
}

/// A new signed `state`, valid from `now` for [`STATE_TTL`].
pub fn new_state(key: &JwtKey, now: SystemTime) -> Result<String, OAuthError> {
    let iat = epoch_secs(now);
    key.sign(&StateClaims {
        nonce: random_token(),
        iat,
        exp: iat + STATE_TTL.as_secs(),
        iss: ISSUER.to_string(),
    })
    .map_err(|_: JwtError| OAuthError::Config("cannot sign the state".into()))
}

/// Whether the callback's `state` is ours, unexpired at `now`, and the one this browser's
/// state cookie holds (compared in constant time).
pub fn check_state(
    key: &JwtKey,
    state: Option<&str>,
    cookies: &[&str],
    now: SystemTime,
) -> Result<(), OAuthError> {
    let state = state
        .filter(|s| !s.is_empty())
        .ok_or(OAuthError::BadState)?;
    let claims: StateClaims = key.verify(state).map_err(|_| OAuthError::BadState)?;
    let now = epoch_secs(now);
    if claims.iss != ISSUER
        || claims.exp <= now
        || claims.exp.saturating_sub(claims.iat) > STATE_TTL.as_secs()
    {
        return Err(OAuthError::BadState);
    }
    let bound = cookies
        .iter()
        .any(|cookie| bool::from(cookie.as_bytes().ct_eq(state.as_bytes())));
    if bound {
        Ok(())
    } else {
        Err(OAuthError::BadState)
    }
}

/// The `Set-Cookie` value binding `state` to the browser: HttpOnly, Secure, SameSite=Lax (the
/// callback is a top-level navigation from the OAuth server's site), only the OAuth routes.
pub fn state_cookie(state: &str, max_age: Duration) -> String {
    format!(
        "{STATE_COOKIE}={state}; HttpOnly; Secure; SameSite=Lax; Path={OAUTH_PATH}; Max-Age={}",
        max_age.as_secs()
    )
}

type Connector = hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>;

/// Talks to the authorization server: discovery (once, retried until it works) and code
/// exchanges.
pub struct OAuthClient {
    config: OAuthConfig,
    http: hyper_util::client::legacy::Client<Connector, Full<Bytes>>,
    server: OnceCell<AuthorizationServer>,
    timeout: Duration,
}

impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl OAuthClient {
    /// A client for `config`; fails when the CA roots cannot be loaded or the settings are
    /// unusable.
    pub fn new(config: OAuthConfig) -> Result<Self, OAuthError> {
        let public = url::Url::parse(&config.public_url)
            .map_err(|_| OAuthError::Config("the public URL is not a URL".into()))?;
        if !matches!(public.scheme(), "http" | "https") {
            return Err(OAuthError::Config(
                "the public URL must be http:// or https://".into(),
            ));
        }
        if config.client_id.trim().is_empty() || config.client_secret.expose_secret().is_empty() {
            return Err(OAuthError::Config(
                "the client id and secret must not be empty".into(),
            ));
        }
        let builder = hyper_rustls::HttpsConnectorBuilder::new();
        // ring, explicitly: no reliance on a process-wide default provider.
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let connector = match &config.ca_pem {
            None => builder
                .with_provider_and_native_roots(provider)
                .map_err(|e| OAuthError::Config(format!("cannot load the CA roots: {e}")))?,
            Some(pem) => {
                use rustls::pki_types::{CertificateDer, pem::PemObject};
                let mut roots = rustls::RootCertStore::empty();
                let mut added = 0;
                for cert in CertificateDer::pem_slice_iter(pem) {
                    let cert = cert.map_err(|e| OAuthError::Config(format!("the CA file: {e}")))?;
                    roots
                        .add(cert)
                        .map_err(|e| OAuthError::Config(format!("the CA file: {e}")))?;
                    added += 1;
                }
                if added == 0 {
                    return Err(OAuthError::Config(
                        "the CA file holds no PEM certificate".into(),
                    ));
                }
                builder.with_tls_config(
                    rustls::ClientConfig::builder_with_provider(provider)
                        .with_safe_default_protocol_versions()
                        .map_err(|e| OAuthError::Config(format!("TLS: {e}")))?
                        .with_root_certificates(roots)
                        .with_no_client_auth(),
                )
            }
        }
        .https_or_http()
        .enable_http1()
        .build();
        let http =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build(connector);
        Ok(OAuthClient {
            config,
            http,
            server: OnceCell::new(),
            timeout: Duration::from_secs(15),
        })
    }

    /// The settings.
    pub fn config(&self) -> &OAuthConfig {
        &self.config
    }

    /// The redirect URI registered for the client.
    pub fn redirect_uri(&self) -> String {
        redirect_uri(&self.config.public_url)
    }

    /// The authorization server, discovered on first use through `api_server` (the gateway's
    /// own client) or from the configured issuer.
    pub async fn server(
        &self,
        api_server: &kube::Client,
    ) -> Result<&AuthorizationServer, OAuthError> {
        self.server
            .get_or_try_init(|| async {
                let body = match &self.config.issuer_url {
                    Some(issuer) => {
                        let url = format!("{}{DISCOVERY_PATH}", issuer.trim_end_matches('/'));
                        let request = http::Request::get(url)
                            .header(http::header::ACCEPT, "application/json")
                            .body(Full::new(Bytes::new()))
                            .map_err(|_| OAuthError::Config("the issuer URL is invalid".into()))?;
                        let (status, body) = self
                            .send(request)
                            .await
                            .map_err(OAuthError::Discovery)?;
                        if !status.is_success() {
                            return Err(OAuthError::Discovery(format!("answered {status}")));
                        }
                        body
                    }
                    None => {
                        let request = http::Request::get(DISCOVERY_PATH)
                            .body(Vec::new())
                            .map_err(|_| OAuthError::Discovery("bad request".into()))?;
                        api_server
                            .request_text(request)
                            .await
                            .map_err(|error| {
                                tracing::warn!(error = %error, "OAuth discovery through the API server failed");
                                OAuthError::Discovery(
                                    "the API server does not say where its OAuth server is".into(),
                                )
                            })?
                            .into_bytes()
                            .into()
                    }
                };
                AuthorizationServer::parse(&body)
            })
            .await
    }

    /// The access token for `code`.
    pub async fn exchange(
        &self,
        server: &AuthorizationServer,
        code: &str,
    ) -> Result<BearerToken, OAuthError> {
        let request = http::Request::post(&server.token_endpoint)
            .header(
                http::header::AUTHORIZATION,
                basic_authorization(
                    &self.config.client_id,
                    self.config.client_secret.expose_secret(),
                ),
            )
            .header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(http::header::ACCEPT, "application/json")
            .body(Full::new(Bytes::from(token_request_body(
                code,
                &self.redirect_uri(),
            ))))
            .map_err(|_| OAuthError::Exchange("the token endpoint is invalid".into()))?;
        let (status, body) = self.send(request).await.map_err(OAuthError::Exchange)?;
        match access_token_of(&body) {
            Ok(token) if status.is_success() => Ok(token),
            Ok(_) => Err(OAuthError::Exchange(format!("answered {status}"))),
            Err(error) if status.is_success() => Err(error),
            Err(OAuthError::Exchange(reason)) if !reason.contains(' ') => {
                Err(OAuthError::Exchange(reason))
            }
            Err(_) => Err(OAuthError::Exchange(format!("answered {status}"))),
        }
    }

    async fn send(
        &self,
        request: http::Request<Full<Bytes>>,
    ) -> Result<(http::StatusCode, Bytes), String> {
        let response = tokio::time::timeout(self.timeout, self.http.request(request))
            .await
            .map_err(|_| "timed out".to_string())?
            .map_err(|error| {
                tracing::warn!(connect = error.is_connect(), "OAuth server request failed");
                "unreachable".to_string()
            })?;
        let status = response.status();
        let body = tokio::time::timeout(
            self.timeout,
            Limited::new(response.into_body(), MAX_ANSWER_BYTES).collect(),
        )
        .await
        .map_err(|_| "timed out".to_string())?
        .map_err(|_| "the answer could not be read".to_string())?
        .to_bytes();
        Ok((status, body))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn server() -> AuthorizationServer {
        AuthorizationServer::parse(
            br#"{"issuer":"https://oauth.example","authorization_endpoint":"https://oauth.example/oauth/authorize","token_endpoint":"https://oauth.example/oauth/token","scopes_supported":["user:full"]}"#,
        )
        .unwrap()
    }

    #[test]
    fn metadata_needs_http_endpoints() {
        assert_eq!(server().token_endpoint, "https://oauth.example/oauth/token");
        assert!(AuthorizationServer::parse(b"{}").is_err());
        assert!(AuthorizationServer::parse(b"not json").is_err());
        assert!(
            AuthorizationServer::parse(
                br#"{"authorization_endpoint":"javascript:alert(1)","token_endpoint":"https://x/t"}"#
            )
            .is_err()
        );
    }

    #[test]
    fn the_authorize_url_carries_the_flow_parameters() {
        let url = authorize_url(
            &server(),
            "nac-console",
            &redirect_uri("https://nac.apps.example/"),
            "st&ate",
        )
        .unwrap();
        let parsed = url::Url::parse(&url).unwrap();
        let pairs: Vec<(String, String)> = parsed.query_pairs().into_owned().collect();
        assert_eq!(
            pairs,
            vec![
                ("response_type".into(), "code".into()),
                ("client_id".into(), "nac-console".into()),
                (
                    "redirect_uri".into(),
                    "https://nac.apps.example/api/v1/session/oauth/callback".into()
                ),
                ("scope".into(), "user:full".into()),
                ("state".into(), "st&ate".into()),
            ]
        );
        assert!(url.starts_with("https://oauth.example/oauth/authorize?"));
    }

    #[test]
    fn the_exchange_request_is_a_form_with_basic_auth() {
        assert_eq!(
            token_request_body("c/1", "https://x/cb"),
            "grant_type=authorization_code&code=c%2F1&redirect_uri=https%3A%2F%2Fx%2Fcb"
        );
        assert_eq!(
            basic_authorization("nac", "s:e"),
            format!("Basic {}", STANDARD.encode("nac:s%3Ae"))
        );
    }

    #[test]
    fn token_answers() {
        assert_eq!(
            access_token_of(br#"{"access_token":"sha256~abc","token_type":"Bearer"}"#)
                .unwrap()
                .expose(),
            "sha256~abc"
        );
        assert_eq!(
            access_token_of(br#"{"error":"invalid_grant","error_description":"x"}"#).err(),
            Some(OAuthError::Exchange("invalid_grant".into()))
        );
        assert!(access_token_of(br#"{"access_token":""}"#).is_err());
        assert!(access_token_of(b"<html>").is_err());
        assert_eq!(short_code("bad<script>"), "badscript");
    }

    #[test]
    fn state_must_be_ours_fresh_and_bound_to_the_cookie() {
        let key = JwtKey::new(&[1; 32]);
        let now = SystemTime::now();
        let state = new_state(&key, now).unwrap();
        assert_eq!(check_state(&key, Some(&state), &[&state], now), Ok(()));
        assert_eq!(
            check_state(&key, Some(&state), &["other", &state], now),
            Ok(())
        );
        // Not this browser's, no state, expired, or signed by another key.
        assert_eq!(
            check_state(&key, Some(&state), &[], now),
            Err(OAuthError::BadState)
        );
        assert_eq!(
            check_state(&key, None, &[&state], now),
            Err(OAuthError::BadState)
        );
        assert_eq!(
            check_state(&key, Some(&state), &[&state], now + STATE_TTL),
            Err(OAuthError::BadState)
        );
        let other = JwtKey::new(&[2; 32]);
        let foreign = new_state(&other, now).unwrap();
        assert_eq!(
            check_state(&key, Some(&foreign), &[&foreign], now),
            Err(OAuthError::BadState)
        );
        assert_ne!(new_state(&key, now).unwrap(), state);
    }

    #[test]
    fn the_state_cookie_is_lax_and_scoped() {
        assert_eq!(
            state_cookie("s", STATE_TTL),
            "nac_oauth_state=s; HttpOnly; Secure; SameSite=Lax; Path=/api/v1/session/oauth; Max-Age=600"
        );
    }

    #[test]
    fn settings_are_checked_and_never_print_the_secret() {
        let config = OAuthConfig {
            client_id: "nac".into(),
            client_secret: SecretString::from("hunter2"),
            public_url: "https://nac.example".into(),
            issuer_url: None,
            ca_pem: None,
        };
        assert!(!format!("{config:?}").contains("hunter2"));
        let client = OAuthClient::new(config.clone()).unwrap();
        assert_eq!(
            client.redirect_uri(),
            "https://nac.example/api/v1/session/oauth/callback"
        );
        assert!(!format!("{client:?}").contains("hunter2"));
        let bad = OAuthConfig {
            public_url: "nac.example".into(),
            ..config.clone()
        };
        assert!(OAuthClient::new(bad).is_err());
        let empty = OAuthConfig {
            client_secret: SecretString::from(""),
            ..config
        };
        assert!(OAuthClient::new(empty).is_err());
    }
}
