//! The web console's sign-in and serving against the real gateway on the in-process emulator:
//! alice signs in with her token and gets exactly the session cookie the console relies on;
//! the cookie alone lists team-a's backups, streams team-a's events and runs GraphQL queries,
//! but changes need the session's CSRF token (403 and nothing written without it); the cookie
//! reaches no further than her token (team-b: the same 403 as with the bearer token);
//! sign-out, a tampered or foreign cookie, an expired session and a refused token all end in
//! 401; bearer-token calls are unchanged (no CSRF header). The console is served at `/` with
//! its security headers (the built app, or the "not built" page), single-page-app routes get
//! the index, and API paths keep their problem+json 404. OpenShift OAuth sign-in runs against
//! a small OAuth server in the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/gateway.rs"]
mod gateway_support;
mod support;
#[path = "support/ws.rs"]
mod ws;
use gateway_support::{Answer, Auth, GatewayEnv, backup_names, call, without_request_id};

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::body::Body;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::BodyExt;
use nac::gateway::GatewayConfig;
use nac::gateway::auth::OAuthConfig;
use nac::gateway::auth::jwt::{ISSUER, JwtKey, epoch_secs};
use nac::gateway::auth::session::SessionClaims;
use nac::gateway::console::{self, CONTENT_SECURITY_POLICY};
use serde_json::{Value, json};
use tower::ServiceExt;
use ws::{Frame, Ws};

/// Each case's gateway: the shared harness on a fresh emulator (no Velero: nothing here needs
/// a backup to complete).
type Env = GatewayEnv;

async fn env_configured(configure: impl FnOnce(&mut GatewayConfig)) -> Env {
    GatewayEnv::emulator()
        .await
        .configure(configure)
        .start()
        .await
}

async fn env() -> Env {
    env_configured(|_| {}).await
}

const SESSION: &str = "/api/v1/session";
const TEAM_A_BACKUPS: &str = "/api/v1/namespaces/team-a/backups";
const TEAM_B_BACKUPS: &str = "/api/v1/namespaces/team-b/backups";
const SESSION_CONFIG: &str = "/api/v1/session/config";
const OAUTH_START: &str = "/api/v1/session/oauth/start";
const OAUTH_CALLBACK: &str = "/api/v1/session/oauth/callback";
/// What a browser accepts when it navigates to a page.
const HTML: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

/// `method path` with `auth`, no body and no other header.
async fn bare(env: &Env, method: Method, path: &str, auth: Auth<'_>) -> Answer {
    call(&env.router, method, path, auth, None, &[]).await
}

async fn get(env: &Env, path: &str, auth: Auth<'_>) -> Answer {
    bare(env, Method::GET, path, auth).await
}

/// `method path` as a browser navigating to a page (no credentials).
async fn navigate(env: &Env, method: Method, path: &str) -> Answer {
    call(
        &env.router,
        method,
        path,
        Auth::None,
        None,
        &[("accept", HTML)],
    )
    .await
}

/// The body creating a backup named `name`.
fn backup(name: &str) -> Value {
    json!({"name": name, "spec": {"backupSpec": {}}})
}

/// Creates the backup `name` in team-a with `auth` and the `extra` headers.
async fn create_in_team_a(env: &Env, auth: Auth<'_>, name: &str, extra: &[(&str, &str)]) -> Answer {
    call(
        &env.router,
        Method::POST,
        TEAM_A_BACKUPS,
        auth,
        Some(backup(name)),
        extra,
    )
    .await
}

/// The sign-in with `token`'s answer.
async fn sign_in_answer(env: &Env, token: &str) -> Answer {
    let body = Some(json!({"token": token}));
    call(&env.router, Method::POST, SESSION, Auth::None, body, &[]).await
}

/// Signs in with `token`: the cookie value and the session body.
async fn sign_in(env: &Env, token: &str) -> (String, Value) {
    let answer = sign_in_answer(env, token).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());
    let cookies = answer.set_cookies();
    assert_eq!(cookies.len(), 1, "{cookies:?}");
    (cookie_value(&cookies[0], "nac_session"), answer.json())
}

/// The value a `Set-Cookie` line gives the cookie `name` (it must be that cookie).
fn cookie_value(set_cookie: &str, name: &str) -> String {
    set_cookie
        .strip_prefix(&format!("{name}="))
        .and_then(|rest| rest.split(';').next())
        .unwrap_or_else(|| panic!("not a {name} cookie: {set_cookie}"))
        .to_string()
}

async fn has_backup(env: &Env, namespace: &str, name: &str) -> bool {
    backup_names(&env.admin, namespace)
        .await
        .contains(&name.to_string())
}

#[tokio::test]
async fn a_cookie_session_acts_as_its_token_with_csrf_on_changes() {
    let env = env().await;

    // Sign-in: exactly the cookie the console relies on, and who I am.
    let answer = sign_in_answer(&env, &env.alice).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());
    assert_eq!(answer.header("cache-control"), Some("no-store"));
    let set_cookie = answer.set_cookies();
    assert_eq!(set_cookie.len(), 1);
    let jwt = cookie_value(&set_cookie[0], "nac_session");
    assert_eq!(
        set_cookie[0],
        format!("nac_session={jwt}; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=3600")
    );
    assert_eq!(jwt.split('.').count(), 3, "a JWT");
    assert!(
        !set_cookie[0].contains(&env.alice),
        "the token is not in the cookie"
    );
    let session = answer.json();
    assert_eq!(session["username"], "alice");
    assert!(
        session["groups"]
            .as_array()
            .unwrap()
            .contains(&json!("system:authenticated")),
        "{session}"
    );
    let csrf = session["csrfToken"].as_str().unwrap().to_string();
    assert!(csrf.len() >= 32);
    let expires =
        chrono::DateTime::parse_from_rfc3339(session["expiresAt"].as_str().unwrap()).unwrap();
    let in_an_hour = chrono::Utc::now() + chrono::Duration::seconds(3600);
    assert!((expires.timestamp() - in_an_hour.timestamp()).abs() <= 5);
    assert!(
        !answer.text().contains(&env.alice),
        "the token is not echoed"
    );

    // GET session: the same body.
    let answer = get(&env, SESSION, Auth::Cookie(&jwt, None)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert_eq!(answer.json(), session);

    // Reads with the cookie only.
    let answer = get(&env, TEAM_A_BACKUPS, Auth::Cookie(&jwt, None)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert_eq!(answer.json()["kind"], "NonAdminBackupList");
    assert!(answer.header("ratelimit-limit").is_some());

    // A change without the CSRF token, or with another session's, is refused and writes
    // nothing.
    let (other_jwt, other_session) = sign_in(&env, &env.alice).await;
    for csrf in [None, Some("wrong"), other_session["csrfToken"].as_str()] {
        let answer = create_in_team_a(&env, Auth::Cookie(&jwt, csrf), "from-cookie", &[]).await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{}", answer.text());
        assert!(answer.is_problem());
        let problem = answer.json();
        assert_eq!(problem["title"], "Missing or wrong CSRF token");
        assert_eq!(problem["code"], "csrf-token");
    }
    assert!(!has_backup(&env, "team-a", "from-cookie").await);
    // Deleting needs it too.
    let whatever = format!("{TEAM_A_BACKUPS}/whatever");
    let answer = bare(&env, Method::DELETE, &whatever, Auth::Cookie(&jwt, None)).await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN, "{}", answer.text());

    // With it: created, in alice's name.
    let answer = create_in_team_a(&env, Auth::Cookie(&jwt, Some(&csrf)), "from-cookie", &[]).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());
    assert!(has_backup(&env, "team-a", "from-cookie").await);

    // Bearer calls are unchanged: no CSRF header needed, and the bearer token wins over a
    // cookie.
    let garbage = [("cookie", "nac_session=garbage")];
    let answer = create_in_team_a(&env, Auth::Bearer(&env.alice), "from-bearer", &garbage).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());

    // The cookie reaches no further than alice's token: team-b is the same 403 as with the
    // bearer token, for reads and (with the CSRF token) writes.
    for (method, body) in [(Method::GET, None), (Method::POST, Some(backup("planted")))] {
        let cookie = Auth::Cookie(&jwt, Some(&csrf));
        let by_cookie = call(
            &env.router,
            method.clone(),
            TEAM_B_BACKUPS,
            cookie,
            body.clone(),
            &[],
        )
        .await;
        let bearer = Auth::Bearer(&env.alice);
        let by_bearer = call(
            &env.router,
            method.clone(),
            TEAM_B_BACKUPS,
            bearer,
            body,
            &[],
        )
        .await;
        assert_eq!(
            by_cookie.status,
            StatusCode::FORBIDDEN,
            "{}",
            by_cookie.text()
        );
        assert_eq!(
            without_request_id(by_cookie.json()),
            without_request_id(by_bearer.json()),
            "{method}"
        );
    }
    assert!(!has_backup(&env, "team-b", "planted").await);

    // Sign-out needs the CSRF token; then the cookie is dead everywhere.
    let answer = bare(&env, Method::DELETE, SESSION, Auth::Cookie(&jwt, None)).await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN, "{}", answer.text());
    let answer = bare(
        &env,
        Method::DELETE,
        SESSION,
        Auth::Cookie(&jwt, Some(&csrf)),
    )
    .await;
    assert_eq!(answer.status, StatusCode::NO_CONTENT, "{}", answer.text());
    assert_eq!(
        answer.set_cookies(),
        vec!["nac_session=; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=0".to_string()]
    );
    for (method, path, csrf) in [
        (Method::GET, SESSION, None),
        (Method::GET, TEAM_A_BACKUPS, None),
        (Method::POST, TEAM_A_BACKUPS, Some(csrf.as_str())),
        (Method::DELETE, SESSION, Some(csrf.as_str())),
    ] {
        let body = (method == Method::POST).then(|| backup("after-sign-out"));
        let answer = call(
            &env.router,
            method.clone(),
            path,
            Auth::Cookie(&jwt, csrf),
            body,
            &[],
        )
        .await;
        assert_eq!(
            answer.status,
            StatusCode::UNAUTHORIZED,
            "{method} {path}: {}",
            answer.text()
        );
        assert!(answer.is_problem());
    }
    // Alice's other session (another browser) lives on.
    let answer = get(&env, SESSION, Auth::Cookie(&other_jwt, None)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert_eq!(answer.json(), other_session);
}

#[tokio::test]
async fn forged_expired_and_refused_sessions_are_401() {
    let env = env_configured(|config| config.session.ttl = Duration::from_secs(2)).await;

    // A token the cluster refuses: 401, and no cookie.
    let answer = sign_in_answer(&env, "not-a-token").await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{}", answer.text());
    assert!(answer.is_problem());
    assert!(answer.set_cookies().is_empty());
    assert!(!answer.text().contains("not-a-token"));
    // Malformed sign-ins.
    let json = "application/json";
    for (body, content_type, status) in [
        (json!({}), json, StatusCode::BAD_REQUEST),
        (json!({"token": ""}), json, StatusCode::BAD_REQUEST),
        (json!({"token": 5}), json, StatusCode::BAD_REQUEST),
        (
            json!({"token": env.alice}),
            "text/plain",
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
    ] {
        let request = Request::post(SESSION)
            .header("content-type", content_type)
            .body(Body::from(serde_json::to_vec(&body).unwrap()))
            .unwrap();
        let answer = gateway_support::send(&env.router, request).await;
        assert_eq!(answer.status, status, "{body}");
        assert!(answer.set_cookies().is_empty());
    }
    // No cookie at all.
    let answer = get(&env, SESSION, Auth::None).await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    assert!(answer.set_cookies().is_empty());

    let (jwt, _) = sign_in(&env, &env.alice).await;
    let ok = get(&env, SESSION, Auth::Cookie(&jwt, None)).await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.text());

    // Tampered: a changed signature, or a changed payload.
    let mut tampered = jwt.clone().into_bytes();
    let last = tampered.len() - 2;
    tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    // Foreign: the same claims shape, valid times, another key.
    let now = epoch_secs(SystemTime::now());
    let sid_of = |jwt: &str| -> String {
        use base64::Engine;
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(jwt.split('.').nth(1).unwrap())
            .unwrap();
        serde_json::from_slice::<Value>(&payload).unwrap()["sid"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let foreign = JwtKey::new(&[42; 32])
        .sign(&SessionClaims {
            sid: sid_of(&jwt),
            iat: now,
            exp: now + 2,
            iss: ISSUER.into(),
        })
        .unwrap();
    for (what, cookie) in [
        ("tampered", tampered.as_str()),
        ("foreign key", foreign.as_str()),
        ("garbage", "x.y.z"),
    ] {
        for path in [SESSION, TEAM_A_BACKUPS] {
            let answer = get(&env, path, Auth::Cookie(cookie, None)).await;
            assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{what} {path}");
            assert!(answer.is_problem());
            assert_eq!(
                answer.header("www-authenticate"),
                Some("Bearer realm=\"nac\"")
            );
        }
    }
    // A dead cookie sent to the session endpoint is cleared.
    let answer = get(&env, SESSION, Auth::Cookie("x.y.z", None)).await;
    assert!(answer.set_cookies()[0].ends_with("Max-Age=0"));

    // Expired: the session lasts two seconds.
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    for path in [SESSION, TEAM_A_BACKUPS] {
        let answer = get(&env, path, Auth::Cookie(&jwt, None)).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "expired {path}");
    }
}

async fn graphql(env: &Env, auth: Auth<'_>, query: &str) -> Answer {
    let body = Some(json!({"query": query}));
    call(&env.router, Method::POST, "/graphql", auth, body, &[]).await
}

#[tokio::test]
async fn graphql_and_event_streams_take_the_cookie() {
    let env = env().await;
    let (jwt, session) = sign_in(&env, &env.alice).await;
    let csrf = session["csrfToken"].as_str().unwrap();

    // A query with the cookie and the CSRF token.
    let answer = graphql(
        &env,
        Auth::Cookie(&jwt, Some(csrf)),
        "{ viewer { username } backups(namespace: \"team-a\") { edges { node { name } } } }",
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    let body = answer.json();
    assert!(body.get("errors").is_none(), "{body}");
    assert_eq!(body["data"]["viewer"]["username"], "alice");

    // Every POST needs the CSRF token: a mutation without it is refused and writes nothing.
    let mutation =
        "mutation { createBackup(namespace: \"team-a\", input: {name: \"gql-cookie\"}) { name } }";
    for auth in [Auth::Cookie(&jwt, None), Auth::Cookie(&jwt, Some("wrong"))] {
        let answer = graphql(&env, auth, mutation).await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "{}", answer.text());
        let body = answer.json();
        assert_eq!(body["errors"][0]["extensions"]["code"], "FORBIDDEN");
        assert_eq!(body["errors"][0]["extensions"]["reason"], "csrf-token");
    }
    assert!(!has_backup(&env, "team-a", "gql-cookie").await);
    let answer = graphql(&env, Auth::Cookie(&jwt, Some(csrf)), mutation).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    assert_eq!(answer.json()["data"]["createBackup"]["name"], "gql-cookie");
    // And a bearer token needs none.
    let answer = graphql(&env, Auth::Bearer(&env.alice), "{ viewer { username } }").await;
    assert_eq!(answer.json()["data"]["viewer"]["username"], "alice");
    // A dead cookie is the usual UNAUTHENTICATED.
    let answer = graphql(
        &env,
        Auth::Cookie("x.y.z", Some(csrf)),
        "{ viewer { username } }",
    )
    .await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        answer.json()["errors"][0]["extensions"]["code"],
        "UNAUTHENTICATED"
    );

    // Server-Sent Events with the cookie: the stream opens and says ready, then carries a
    // change.
    let response = env
        .router
        .clone()
        .oneshot(
            Request::get("/api/v1/namespaces/team-a/events")
                .header("cookie", format!("nac_session={jwt}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let mut body = response.into_body();
    let mut text = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut created = false;
    while !text.contains("sse-cookie") && tokio::time::Instant::now() < deadline {
        if text.contains("event: ready") && !created {
            created = true;
            let auth = Auth::Cookie(&jwt, Some(csrf));
            let answer = create_in_team_a(&env, auth, "sse-cookie", &[]).await;
            assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());
        }
        match tokio::time::timeout(Duration::from_secs(5), body.frame()).await {
            Ok(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    text.push_str(&String::from_utf8_lossy(data));
                }
            }
            Ok(_) => break,
            Err(_) => {}
        }
    }
    assert!(text.contains("event: ready"), "{text}");
    assert!(text.contains("sse-cookie"), "{text}");
    // Bob's session cannot open team-a's stream.
    let (bob_jwt, _) = sign_in(&env, &env.bob).await;
    let events = "/api/v1/namespaces/team-a/events";
    let answer = get(&env, events, Auth::Cookie(&bob_jwt, None)).await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN, "{}", answer.text());
}

fn assert_console_headers(answer: &Answer, cache: &str) {
    assert_eq!(
        answer.header("content-security-policy"),
        Some(CONTENT_SECURITY_POLICY)
    );
    assert_eq!(answer.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(answer.header("referrer-policy"), Some("no-referrer"));
    assert_eq!(answer.header("cache-control"), Some(cache));
}

#[tokio::test]
async fn the_console_is_served_with_its_headers_and_routes() {
    let env = env().await;
    let root = navigate(&env, Method::GET, "/").await;
    assert_eq!(root.status, StatusCode::OK);
    assert!(
        root.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    assert_console_headers(&root, "no-cache");
    assert!(
        CONTENT_SECURITY_POLICY.contains("frame-ancestors 'none'")
            && CONTENT_SECURITY_POLICY.contains("connect-src 'self'")
    );
    let built = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("web/dist/index.html")
        .exists();
    assert_eq!(console::is_built(), built);
    if built {
        assert!(!root.text().contains("console is not built"));
    } else {
        assert!(
            root.text().contains("console is not built"),
            "{}",
            root.text()
        );
        assert!(root.text().contains("npm ci &amp;&amp; npm run build"));
    }

    // Single-page-app routes get the same page when a browser navigates to them.
    for path in ["/ns/team-a/backups", "/ns/team-a/backups/x"] {
        let page = navigate(&env, Method::GET, path).await;
        assert_eq!(page.status, StatusCode::OK, "{path}");
        assert_eq!(page.body, root.body, "{path}");
        assert_console_headers(&page, "no-cache");
    }
    // Not for API clients, nor for API paths, nor for missing assets: problem+json 404.
    for (path, accept) in [
        ("/ns/team-a/backups", "application/json"),
        ("/api/v1/nope", HTML),
        ("/api/v1/nope", "application/json"),
        ("/graphql/x", HTML),
        ("/assets/missing-0000.js", HTML),
    ] {
        let answer = call(
            &env.router,
            Method::GET,
            path,
            Auth::None,
            None,
            &[("accept", accept)],
        )
        .await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{path} {accept}");
        assert!(answer.is_problem(), "{path} {accept}");
        assert!(answer.header("content-security-policy").is_none());
    }
    // Writes to a console route are not the console's.
    let answer = navigate(&env, Method::POST, "/ns/team-a").await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
    assert!(answer.is_problem());
    // The API's own pages are untouched.
    let docs = navigate(&env, Method::GET, "/docs").await;
    assert_eq!(docs.status, StatusCode::OK);
    let health = navigate(&env, Method::GET, "/healthz").await;
    assert_eq!(health.text(), "ok");

    // A built asset is served with its type and cached for good.
    if built {
        let assets = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("web/dist/assets");
        let first = std::fs::read_dir(&assets)
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .find(|name| name.ends_with(".js"));
        if let Some(name) = first {
            let answer = get(&env, &format!("/assets/{name}"), Auth::None).await;
            assert_eq!(answer.status, StatusCode::OK);
            assert_eq!(
                answer.header("content-type"),
                Some("text/javascript; charset=utf-8")
            );
            assert_console_headers(&answer, "public, max-age=31536000, immutable");
        }
    }

    // Without OAuth configured, the console is told so and the flow is not there.
    let answer = get(&env, SESSION_CONFIG, Auth::None).await;
    assert_eq!(answer.json(), json!({"oauth": false}));
    let answer = get(&env, OAUTH_START, Auth::None).await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
    assert!(answer.is_problem());
}

// ---- OpenShift OAuth ------------------------------------------------------------------------

#[derive(Clone, Default)]
struct OAuthServerState {
    /// `(authorization header, form body)` of every token request.
    token_requests: Arc<Mutex<Vec<(String, String)>>>,
    /// The access token handed out for the good code.
    access_token: Arc<Mutex<String>>,
}

/// A small OAuth server: metadata, and a token endpoint that exchanges `good-code` (sent with
/// the right client credentials and redirect URI) for alice's token.
async fn oauth_server(state: OAuthServerState) -> String {
    use axum::extract::State;
    use axum::routing::{get, post};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let metadata = json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/oauth/authorize"),
        "token_endpoint": format!("{base}/oauth/token"),
        "scopes_supported": ["user:full"],
        "response_types_supported": ["code", "token"],
    });
    let router = axum::Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            get(move || async move { axum::Json(metadata) }),
        )
        .route(
            "/oauth/token",
            post(
                |State(state): State<OAuthServerState>, headers: HeaderMap, body: String| async move {
                    let authorization = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_string();
                    state
                        .token_requests
                        .lock()
                        .unwrap()
                        .push((authorization.clone(), body.clone()));
                    let form: std::collections::HashMap<String, String> =
                        form_urlencoded::parse(body.as_bytes()).into_owned().collect();
                    use base64::Engine;
                    let expected = format!(
                        "Basic {}",
                        base64::engine::general_purpose::STANDARD.encode("nac-console:s3cret")
                    );
                    let good = authorization == expected
                        && form.get("grant_type").map(String::as_str) == Some("authorization_code")
                        && form.get("code").map(String::as_str) == Some("good-code")
                        && form.get("redirect_uri").map(String::as_str)
                            == Some("https://nac.example.test/api/v1/session/oauth/callback");
                    if good {
                        let token = state.access_token.lock().unwrap().clone();
                        (
                            StatusCode::OK,
                            axum::Json(json!({"access_token": token, "token_type": "Bearer", "expires_in": 86400})),
                        )
                    } else {
                        (
                            StatusCode::BAD_REQUEST,
                            axum::Json(json!({"error": "invalid_grant", "error_description": "nope"})),
                        )
                    }
                },
            ),
        )
        .with_state(state);
    tokio::spawn(async move { axum::serve(listener, router).await });
    base
}

fn query_of(location: &str) -> std::collections::HashMap<String, String> {
    url::Url::parse(location)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect()
}

/// The OAuth callback with `query`, sending the state `cookie` (none when empty).
async fn oauth_callback(env: &Env, query: &str, cookie: &str) -> Answer {
    let path = format!("{OAUTH_CALLBACK}?{query}");
    let extra: &[(&str, &str)] = if cookie.is_empty() {
        &[]
    } else {
        &[("cookie", cookie)]
    };
    call(&env.router, Method::GET, &path, Auth::None, None, extra).await
}

#[tokio::test]
async fn openshift_oauth_sign_in() {
    let oauth = OAuthServerState::default();
    let base = oauth_server(oauth.clone()).await;
    let issuer = base.clone();
    let env = env_configured(move |config| {
        config.session.oauth = Some(OAuthConfig {
            client_id: "nac-console".into(),
            client_secret: "s3cret".to_string().into(),
            public_url: "https://nac.example.test/".into(),
            issuer_url: Some(issuer),
            ca_pem: None,
        });
    })
    .await;
    *oauth.access_token.lock().unwrap() = env.alice.clone();

    let answer = get(&env, SESSION_CONFIG, Auth::None).await;
    assert_eq!(answer.json(), json!({"oauth": true}));

    // Start: to the authorization endpoint, with the state also in a Lax cookie.
    let start = get(&env, OAUTH_START, Auth::None).await;
    assert_eq!(start.status, StatusCode::FOUND, "{}", start.text());
    let location = start.header("location").unwrap().to_string();
    assert!(
        location.starts_with(&format!("{base}/oauth/authorize?")),
        "{location}"
    );
    let query = query_of(&location);
    assert_eq!(query["response_type"], "code");
    assert_eq!(query["client_id"], "nac-console");
    assert_eq!(
        query["redirect_uri"],
        "https://nac.example.test/api/v1/session/oauth/callback"
    );
    let state = query["state"].clone();
    assert_eq!(
        start.set_cookies(),
        vec![format!(
            "nac_oauth_state={state}; HttpOnly; Secure; SameSite=Lax; Path=/api/v1/session/oauth; Max-Age=600"
        )]
    );
    let state_cookie = format!("nac_oauth_state={state}");

    // A callback whose state is not this browser's, or is missing, is refused before any
    // exchange.
    let again = get(&env, OAUTH_START, Auth::None).await;
    let other_state = query_of(again.header("location").unwrap())["state"].clone();
    for (query, cookie) in [
        (
            format!("code=good-code&state={state}"),
            format!("nac_oauth_state={other_state}"),
        ),
        (format!("code=good-code&state={state}"), String::new()),
        ("code=good-code".to_string(), state_cookie.clone()),
        (
            "code=good-code&state=forged.state.x".to_string(),
            "nac_oauth_state=forged.state.x".to_string(),
        ),
    ] {
        let answer = oauth_callback(&env, &query, &cookie).await;
        assert_eq!(
            answer.status,
            StatusCode::BAD_REQUEST,
            "{query}: {}",
            answer.text()
        );
        assert!(answer.is_problem());
        assert!(answer.set_cookies().is_empty());
    }
    assert!(oauth.token_requests.lock().unwrap().is_empty());

    // The OAuth server refused, or the code is bad: 400, no session.
    let refused_query = format!("error=access_denied&state={state}");
    let refused = oauth_callback(&env, &refused_query, &state_cookie).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert!(
        refused.json()["detail"]
            .as_str()
            .unwrap()
            .contains("access_denied")
    );
    let bad_query = format!("code=bad-code&state={state}");
    let bad_code = oauth_callback(&env, &bad_query, &state_cookie).await;
    assert_eq!(
        bad_code.status,
        StatusCode::BAD_REQUEST,
        "{}",
        bad_code.text()
    );
    assert!(
        bad_code.json()["detail"]
            .as_str()
            .unwrap()
            .contains("invalid_grant")
    );
    assert!(bad_code.set_cookies().is_empty());

    // The good code: a session, and back to the console.
    let good_query = format!("code=good-code&state={state}");
    let callback = oauth_callback(&env, &good_query, &format!("other=1; {state_cookie}")).await;
    assert_eq!(callback.status, StatusCode::FOUND, "{}", callback.text());
    assert_eq!(callback.header("location"), Some("/"));
    let cookies = callback.set_cookies();
    assert_eq!(cookies.len(), 2, "{cookies:?}");
    assert!(cookies[0].starts_with("nac_session="));
    assert!(cookies[0].ends_with("; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=3600"));
    assert_eq!(
        cookies[1],
        "nac_oauth_state=; HttpOnly; Secure; SameSite=Lax; Path=/api/v1/session/oauth; Max-Age=0"
    );
    let jwt = cookie_value(&cookies[0], "nac_session");
    // The exchange used basic authentication and a form body.
    let requests = oauth.token_requests.lock().unwrap().clone();
    let (authorization, body) = requests.last().unwrap();
    assert!(authorization.starts_with("Basic "));
    assert!(body.contains("grant_type=authorization_code") && body.contains("code=good-code"));
    assert!(!body.contains("s3cret"));

    let session = get(&env, SESSION, Auth::Cookie(&jwt, None)).await;
    assert_eq!(session.status, StatusCode::OK, "{}", session.text());
    assert_eq!(session.json()["username"], "alice");
    let answer = get(&env, TEAM_A_BACKUPS, Auth::Cookie(&jwt, None)).await;
    assert_eq!(answer.status, StatusCode::OK);
}

// ---- GraphQL subscriptions over WebSocket with the cookie ------------------------------------

/// Opens `/graphql` as a WebSocket with the session `cookie` and sends `connection_init` with
/// `payload`: the server's answer, or the HTTP status of a refused upgrade.
async fn ws_init(addr: &str, cookie: &str, payload: Value) -> Result<Frame, u16> {
    let cookie = format!("nac_session={cookie}");
    let mut ws = Ws::connect_with(addr, &[("Cookie", &cookie)]).await?;
    Ok(ws.init(payload).await)
}

#[tokio::test]
async fn graphql_websockets_take_the_cookie_with_the_csrf_token_in_connection_init() {
    let env = env().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let service = env
        .router
        .clone()
        .into_make_service_with_connect_info::<std::net::SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, service).await });
    let (jwt, session) = sign_in(&env, &env.alice).await;
    let csrf = session["csrfToken"].as_str().unwrap();

    let acked = ws_init(&addr, &jwt, json!({"csrfToken": csrf}))
        .await
        .unwrap();
    assert!(
        matches!(&acked, Frame::Text(text) if text.contains("connection_ack")),
        "{acked:?}"
    );
    for payload in [json!({}), json!({"csrfToken": "wrong"})] {
        let refused = ws_init(&addr, &jwt, payload.clone()).await.unwrap();
        assert!(
            matches!(&refused, Frame::Close(1002, reason) if reason.contains("CSRF")),
            "{payload}: {refused:?}"
        );
    }
    // A dead cookie is refused before the upgrade.
    assert_eq!(ws_init(&addr, "x.y.z", json!({})).await.err(), Some(401));
}
