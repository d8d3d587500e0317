//! Who NAC is when it talks to the API server: a User-Agent and a field manager on every request.
//!
//! kube-rs sends neither by default, so a real API server records every write NAC makes under
//! field manager `unknown` and audit logs cannot tell NAC's writes apart. Every kube client NAC
//! builds goes through [`ClientIdentity`]: its tower layer sets the User-Agent and adds
//! `fieldManager=<name>` to creates, updates and patches that do not name one already (kube-rs
//! adds it only when `PostParams`/`PatchParams` set it; server-side apply always does).

use std::sync::Arc;
use std::task::{Context, Poll};

use http::header::USER_AGENT;
use http::uri::PathAndQuery;
use http::{HeaderValue, Method, Request, Uri};

/// First delay before retrying a 429, 503 or 504 (the server's `Retry-After` wins when longer).
pub const RETRY_MIN_DELAY: std::time::Duration = std::time::Duration::from_millis(5);
/// Longest delay between two tries of one request.
pub const RETRY_MAX_DELAY: std::time::Duration = std::time::Duration::from_secs(5);
/// Retries of one request before its error is returned.
pub const RETRY_ATTEMPTS: u32 = 10;
/// Requests a client may queue for its connection stack (the buffer the retry needs).
const RETRY_BUFFER: usize = 1024;

/// NAC's version, as in `Cargo.toml`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// Longest field manager kube-apiserver accepts (`ValidateFieldManager`).
pub const MAX_FIELD_MANAGER_LENGTH: usize = 128;
/// Query parameter naming the field manager of a write.
const FIELD_MANAGER_PARAM: &str = "fieldManager";

/// The part of NAC a client acts for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Component {
    /// `nac controller` and the controllers of `nac serve` / `nac demo`.
    Controller,
    /// The gateway: its own service account and the clients acting as a caller.
    Gateway,
    /// The Velero simulator.
    VeleroSimulator,
    /// Anything else the command line does (demo seeding, admin tasks).
    Cli,
}

impl Component {
    /// The name before `/<version>`.
    pub fn name(self) -> &'static str {
        match self {
            Component::Controller => "nac-controller",
            Component::Gateway => "nac-gateway",
            Component::VeleroSimulator => "nac-velero-simulator",
            Component::Cli => "nac",
        }
    }

    /// `<name>/<version>`.
    pub fn identity(self) -> ClientIdentity {
        ClientIdentity::new(&format!("{}/{VERSION}", self.name()))
    }
}

/// A User-Agent and field manager for the clients of one component.
#[derive(Debug, Clone)]
pub struct ClientIdentity {
    inner: Arc<Identity>,
}

#[derive(Debug)]
struct Identity {
    field_manager: String,
    user_agent: HeaderValue,
    /// `fieldManager=<encoded name>`, ready to append to a query.
    query_pair: String,
}

impl ClientIdentity {
    /// An identity named `name`, made valid for kube-apiserver: characters that are not
    /// printable become `-` and the name is cut to 128 characters (an invalid field manager
    /// would make every write fail with 422).
    pub fn new(name: &str) -> Self {
        let field_manager: String = name
            .chars()
            .map(|c| if c.is_control() { '-' } else { c })
            .take(MAX_FIELD_MANAGER_LENGTH)
            .collect();
        let field_manager = if field_manager.trim().is_empty() {
            Component::Cli.name().to_owned()
        } else {
            field_manager
        };
        // A header value must be visible ASCII; anything else is replaced.
        let ascii: String = field_manager
            .chars()
            .map(|c| {
                if c.is_ascii_graphic() || c == ' ' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        let user_agent =
            HeaderValue::from_str(&ascii).unwrap_or_else(|_| HeaderValue::from_static("nac"));
        let query_pair = form_urlencoded::Serializer::new(String::new())
            .append_pair(FIELD_MANAGER_PARAM, &field_manager)
            .finish();
        ClientIdentity {
            inner: Arc::new(Identity {
                field_manager,
                user_agent,
                query_pair,
            }),
        }
    }

    /// The field manager writes are recorded under.
    pub fn field_manager(&self) -> &str {
        &self.inner.field_manager
    }

    /// The User-Agent header sent.
    pub fn user_agent(&self) -> &HeaderValue {
        &self.inner.user_agent
    }

    /// The tower layer setting both on every request.
    pub fn layer(&self) -> ClientIdentityLayer {
        ClientIdentityLayer {
            identity: self.clone(),
        }
    }

    /// A client for `config` (kube-rs's stack) sending this identity, retrying 429, 503 and 504
    /// as kube-rs does (honouring `Retry-After`) but with [`RETRY_MAX_DELAY`] between tries at
    /// most: kube-rs's own policy lets a try wait up to 1,000 s, so under a tight API priority
    /// level a write could sit for minutes, past a stop's grace period. What still fails after
    /// [`RETRY_ATTEMPTS`] goes back to its caller (a controller requeues with its own backoff).
    pub fn client(&self, mut config: kube::Config) -> Result<kube::Client, kube::Error> {
        let retry = kube::client::retry::RetryPolicy::new(
            RETRY_MIN_DELAY,
            RETRY_MAX_DELAY,
            RETRY_ATTEMPTS,
            true,
        )
        .map_err(|e| kube::Error::Service(Box::new(e)))?;
        config.default_retry = false;
        Ok(kube::client::ClientBuilder::try_from(config)?
            // The retry sends copies of a request, so what it wraps must be cloneable: kube-rs's
            // stack is boxed, a buffer in front of it is.
            .with_layer(&tower::buffer::BufferLayer::new(RETRY_BUFFER))
            .with_layer(&tower::retry::RetryLayer::new(retry))
            .with_layer(&self.layer())
            .build())
    }

    /// Sets the User-Agent (unless the request has one) and, on a create, update or patch
    /// without a field manager, appends ours to the query.
    pub fn apply<B>(&self, mut request: Request<B>) -> Request<B> {
        request
            .headers_mut()
            .entry(USER_AGENT)
            .or_insert_with(|| self.inner.user_agent.clone());
        let writes = matches!(
            *request.method(),
            Method::POST | Method::PUT | Method::PATCH
        );
        if writes && let Some(uri) = self.with_field_manager(request.uri()) {
            *request.uri_mut() = uri;
        }
        request
    }

    /// `uri` with our field manager appended, or `None` when it names one already.
    fn with_field_manager(&self, uri: &Uri) -> Option<Uri> {
        let path_and_query = uri.path_and_query()?;
        let query = path_and_query.query().unwrap_or("");
        let named = form_urlencoded::parse(query.as_bytes()).any(|(k, _)| k == FIELD_MANAGER_PARAM);
        if named {
            return None;
        }
        let joined = if query.is_empty() {
            format!("{}?{}", path_and_query.path(), self.inner.query_pair)
        } else {
            format!(
                "{}?{query}&{}",
                path_and_query.path(),
                self.inner.query_pair
            )
        };
        let mut parts = uri.clone().into_parts();
        parts.path_and_query = Some(PathAndQuery::try_from(joined).ok()?);
        Uri::from_parts(parts).ok()
    }
}

/// Tower layer of [`ClientIdentity`] (for `kube::client::ClientBuilder::with_layer`).
#[derive(Debug, Clone)]
pub struct ClientIdentityLayer {
    identity: ClientIdentity,
}

impl<S> tower::Layer<S> for ClientIdentityLayer {
    type Service = ClientIdentityService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ClientIdentityService {
            inner,
            identity: self.identity.clone(),
        }
    }
}

/// Service of [`ClientIdentityLayer`].
#[derive(Debug, Clone)]
pub struct ClientIdentityService<S> {
    inner: S,
    identity: ClientIdentity,
}

impl<S, B> tower::Service<Request<B>> for ClientIdentityService<S>
where
    S: tower::Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        self.inner.call(self.identity.apply(request))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn request(method: Method, uri: &str) -> Request<()> {
        Request::builder().method(method).uri(uri).body(()).unwrap()
    }

    #[test]
    fn components_are_named_with_the_version() {
        let controller = Component::Controller.identity();
        assert_eq!(
            controller.field_manager(),
            format!("nac-controller/{VERSION}")
        );
        assert_eq!(
            controller.user_agent(),
            &format!("nac-controller/{VERSION}")
        );
        assert_eq!(
            Component::Gateway.identity().field_manager(),
            format!("nac-gateway/{VERSION}")
        );
        assert_eq!(
            Component::VeleroSimulator.identity().field_manager(),
            format!("nac-velero-simulator/{VERSION}")
        );
        assert_eq!(
            Component::Cli.identity().field_manager(),
            format!("nac/{VERSION}")
        );
    }

    #[test]
    fn writes_get_the_field_manager_appended() {
        let identity = Component::Controller.identity();
        let manager = format!("fieldManager=nac-controller%2F{VERSION}");
        let post = identity.apply(request(
            Method::POST,
            "/apis/velero.io/v1/namespaces/openshift-adp/backups?",
        ));
        assert_eq!(
            post.uri().to_string(),
            format!("/apis/velero.io/v1/namespaces/openshift-adp/backups?{manager}")
        );
        let patch = identity.apply(request(
            Method::PATCH,
            "/api/v1/namespaces/a/configmaps/b?dryRun=All",
        ));
        assert_eq!(
            patch.uri().to_string(),
            format!("/api/v1/namespaces/a/configmaps/b?dryRun=All&{manager}")
        );
        let put = identity.apply(request(
            Method::PUT,
            "https://10.0.0.1:6443/api/v1/namespaces/a/configmaps/b",
        ));
        assert_eq!(
            put.uri().to_string(),
            format!("https://10.0.0.1:6443/api/v1/namespaces/a/configmaps/b?{manager}")
        );
        assert_eq!(
            put.headers()[USER_AGENT],
            format!("nac-controller/{VERSION}")
        );
    }

    #[test]
    fn an_existing_field_manager_is_kept() {
        let identity = Component::Gateway.identity();
        let uri = "/api/v1/namespaces/a/configmaps/b?fieldManager=mine&force=true";
        let patch = identity.apply(request(Method::PATCH, uri));
        assert_eq!(patch.uri().to_string(), uri);
    }

    #[test]
    fn reads_and_deletes_are_untouched_but_carry_the_user_agent() {
        let identity = Component::VeleroSimulator.identity();
        for method in [Method::GET, Method::DELETE] {
            let uri = "/api/v1/namespaces?labelSelector=a%3Db&watch=true";
            let out = identity.apply(request(method, uri));
            assert_eq!(out.uri().to_string(), uri);
            assert_eq!(
                out.headers()[USER_AGENT],
                format!("nac-velero-simulator/{VERSION}")
            );
        }
    }

    #[test]
    fn an_existing_user_agent_is_kept() {
        let identity = Component::Cli.identity();
        let mut req = request(Method::GET, "/version");
        req.headers_mut()
            .insert(USER_AGENT, HeaderValue::from_static("kubectl/v1.36.2"));
        assert_eq!(identity.apply(req).headers()[USER_AGENT], "kubectl/v1.36.2");
    }

    #[test]
    fn names_are_made_valid_for_the_api_server() {
        let long = ClientIdentity::new(&"m".repeat(300));
        assert_eq!(
            long.field_manager().chars().count(),
            MAX_FIELD_MANAGER_LENGTH
        );
        let control = ClientIdentity::new("nac\ncontroller");
        assert_eq!(control.field_manager(), "nac-controller");
        assert_eq!(ClientIdentity::new("  ").field_manager(), "nac");
        let unicode = ClientIdentity::new("nac-ä/1");
        assert_eq!(unicode.user_agent(), "nac--/1");
        let out = unicode.apply(request(Method::POST, "/api/v1/namespaces"));
        assert_eq!(
            out.uri().to_string(),
            "/api/v1/namespaces?fieldManager=nac-%C3%A4%2F1"
        );
    }

    #[tokio::test]
    async fn the_layer_wraps_a_service() {
        use tower::{Layer, ServiceExt};
        let echo = tower::service_fn(|req: Request<()>| async move {
            Ok::<_, std::convert::Infallible>((
                req.uri().to_string(),
                req.headers().get(USER_AGENT).cloned(),
            ))
        });
        let service = Component::Controller.identity().layer().layer(echo);
        let (uri, agent) = service
            .oneshot(request(Method::POST, "/api/v1/namespaces"))
            .await
            .unwrap();
        assert_eq!(
            uri,
            format!("/api/v1/namespaces?fieldManager=nac-controller%2F{VERSION}")
        );
        assert_eq!(agent.unwrap(), format!("nac-controller/{VERSION}"));
    }
}
