//! Browser sessions: a person signs in once with their cluster token (or through OpenShift
//! OAuth) and the console then calls the public API with an HttpOnly cookie instead of a bearer
//! token.
//!
//! - The cookie (`nac_session`) carries a short-lived HS256 JWT (claims `sid`, `iat`, `exp`,
//!   `iss = "nac-gateway"`) naming a server-side session — never the token. Its key comes from
//!   `--session-key-file` (shared by replicas) or is drawn at random per process.
//! - The session lives in a bounded in-memory [`SessionStore`]: the cluster token, who it belongs
//!   to, when it ends and a random CSRF token. Revoking it (sign-out) makes every copy of the
//!   cookie useless at once.
//! - A request authenticated by the cookie that changes something (any method but GET, HEAD and
//!   OPTIONS, and every POST to `/graphql`) must carry the session's CSRF token in
//!   `X-CSRF-Token` (compared in constant time); bearer-token calls need nothing of the sort.
//!
//! Everything here is plain values in, plain values out: the HTTP side lives in
//! `gateway::credentials` and `gateway::rest::session`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use rand::RngCore;
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

use super::Identity;
use super::jwt::{ISSUER, JwtError, JwtKey, derive_key, epoch_secs, random_token};
use super::oauth::OAuthConfig;
use super::token::BearerToken;

/// Name of the session cookie.
pub const SESSION_COOKIE: &str = "nac_session";
/// Header carrying the session's CSRF token on mutating cookie-authenticated requests.
pub const CSRF_HEADER: &str = "x-csrf-token";
/// Longest session id accepted from a cookie (ours are 43 characters).
const MAX_SID_LEN: usize = 128;
/// Clock skew tolerated for `iat` in the future.
const SKEW_SECS: u64 = 60;

/// Settings of browser sessions.
#[derive(Clone)]
pub struct SessionConfig {
    /// How long a session lasts from sign-in (default one hour); also the cookie's `Max-Age`.
    pub ttl: Duration,
    /// Key signing session cookies and OAuth `state` (derived from `--session-key-file`);
    /// `None`: random per process, so a cookie works only on the replica that issued it.
    pub key: Option<[u8; 32]>,
    /// Most sessions kept at once (the ones closest to their end go first when full).
    pub capacity: usize,
    /// Most sessions one user keeps at once (their oldest goes first).
    pub max_per_user: usize,
    /// OpenShift OAuth sign-in, when configured.
    pub oauth: Option<OAuthConfig>,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            ttl: Duration::from_secs(3600),
            key: None,
            capacity: 10_000,
            max_per_user: 32,
            oauth: None,
        }
    }
}

impl std::fmt::Debug for SessionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionConfig")
            .field("ttl", &self.ttl)
            .field("key", &self.key.map(|_| "<redacted>"))
            .field("capacity", &self.capacity)
            .field("max_per_user", &self.max_per_user)
            .field("oauth", &self.oauth)
            .finish()
    }
}

/// Why a cookie does not name a live session. Every variant is answered 401; the variants are
/// for tests and debug logs (which never carry the cookie).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    /// No session cookie.
    #[error("no session cookie")]
    Missing,
    /// The JWT does not verify (signature, algorithm, issuer, shape).
    #[error("the session cookie is not valid")]
    Invalid,
    /// The JWT or the session has expired.
    #[error("the session has expired")]
    Expired,
    /// The session was revoked (signed out), evicted, or issued by another replica's key.
    #[error("the session is not known")]
    Unknown,
    /// Signing failed (cannot happen with an HMAC key).
    #[error("the session cookie could not be signed")]
    Signing,
}

impl From<JwtError> for SessionError {
    fn from(error: JwtError) -> Self {
        match error {
            JwtError::Invalid => SessionError::Invalid,
            JwtError::Signing => SessionError::Signing,
        }
    }
}

/// The claims of a session cookie's JWT.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionClaims {
    /// The session id.
    pub sid: String,
    /// Issued at (seconds since the epoch).
    pub iat: u64,
    /// Expires at (seconds since the epoch).
    pub exp: u64,
    /// Always [`ISSUER`].
    pub iss: String,
}

/// Whether `claims` are acceptable at `now` for a session lasting at most `max_lifetime`: our
/// issuer, a plausible session id, issued not in the future (beyond [`SKEW_SECS`]), not expired,
/// and not living longer than a session may.
pub fn check_claims(
    claims: &SessionClaims,
    now: u64,
    max_lifetime: Duration,
) -> Result<(), SessionError> {
    if claims.iss != ISSUER
        || claims.sid.is_empty()
        || claims.sid.len() > MAX_SID_LEN
        || !claims
            .sid
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        || claims.exp < claims.iat
        || claims.exp - claims.iat > max_lifetime.as_secs().saturating_add(1)
        || claims.iat > now.saturating_add(SKEW_SECS)
    {
        return Err(SessionError::Invalid);
    }
    if claims.exp <= now {
        return Err(SessionError::Expired);
    }
    Ok(())
}

/// A signed-in browser session. `Debug` shows neither the token nor the CSRF token.
pub struct Session {
    id: String,
    token: BearerToken,
    username: String,
    groups: Vec<String>,
    created: SystemTime,
    expires_at: SystemTime,
    csrf: String,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("username", &self.username)
            .field("groups", &self.groups)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A new session for `identity` holding `token`, from `now` for `ttl`, with fresh random
    /// id and CSRF token.
    pub fn new(identity: &Identity, token: BearerToken, now: SystemTime, ttl: Duration) -> Self {
        Session {
            id: random_token(),
            token,
            username: identity.username.clone(),
            groups: identity.groups.clone(),
            created: now,
            expires_at: now + ttl,
            csrf: random_token(),
        }
    }

    /// The session id (what the cookie's JWT names).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The cluster token the session acts with.
    pub fn token(&self) -> &BearerToken {
        &self.token
    }

    /// Who signed in.
    pub fn username(&self) -> &str {
        &self.username
    }

    /// Their groups at sign-in.
    pub fn groups(&self) -> &[String] {
        &self.groups
    }

    /// When the session ends.
    pub fn expires_at(&self) -> SystemTime {
        self.expires_at
    }

    /// The CSRF token mutating requests must send in `X-CSRF-Token`.
    pub fn csrf_token(&self) -> &str {
        &self.csrf
    }

    /// Whether `presented` is this session's CSRF token (constant time).
    pub fn csrf_matches(&self, presented: Option<&str>) -> bool {
        csrf_matches(&self.csrf, presented)
    }

    /// What the session endpoints answer about it.
    pub fn info(&self) -> SessionInfo {
        SessionInfo {
            username: self.username.clone(),
            groups: self.groups.clone(),
            expires_at: rfc3339(self.expires_at),
            csrf_token: self.csrf.clone(),
        }
    }
}

/// `time` as RFC 3339 in UTC, to the second (`2025-06-01T12:00:00Z`).
pub fn rfc3339(time: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(time).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The body of `POST` and `GET /api/v1/session`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// Who signed in (the TokenReview's username).
    pub username: String,
    /// Their groups.
    pub groups: Vec<String>,
    /// When the session ends (RFC 3339, UTC); sign in again after it.
    pub expires_at: String,
    /// Send it as `X-CSRF-Token` on every request that changes something (and every POST to
    /// `/graphql`) made with the session cookie.
    pub csrf_token: String,
}

/// Whether `presented` equals `expected`, in time independent of where they differ.
pub fn csrf_matches(expected: &str, presented: Option<&str>) -> bool {
    match presented {
        Some(presented) if !expected.is_empty() => {
            bool::from(expected.as_bytes().ct_eq(presented.trim().as_bytes()))
        }
        _ => false,
    }
}

/// Whether a cookie-authenticated request with `method` needs the CSRF header: everything but
/// GET, HEAD and OPTIONS — and everything at all when `always` (POST `/graphql`, where a query
/// and a mutation look alike).
pub fn csrf_required(method: &str, always: bool) -> bool {
    always || !matches!(method, "GET" | "HEAD" | "OPTIONS")
}

/// The values of cookie `name` in `Cookie` header values, in order (a browser sends one
/// header; HTTP/2 may split it into several).
pub fn cookie_values<'a>(headers: impl IntoIterator<Item = &'a str>, name: &str) -> Vec<&'a str> {
    headers
        .into_iter()
        .flat_map(|header| header.split(';'))
        .filter_map(|pair| {
            let (key, value) = pair.split_once('=')?;
            (key.trim() == name).then(|| value.trim().trim_matches('"'))
        })
        .filter(|value| !value.is_empty())
        .collect()
}

/// The `Set-Cookie` value carrying `value` for `max_age`: HttpOnly, Secure, SameSite=Strict,
/// the whole site.
pub fn session_cookie(value: &str, max_age: Duration) -> String {
    format!(
        "{SESSION_COOKIE}={value}; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age={}",
        max_age.as_secs()
    )
}

/// The `Set-Cookie` value that removes the session cookie.
pub fn clear_session_cookie() -> String {
    session_cookie("", Duration::ZERO)
}

/// The live sessions, bounded.
pub struct SessionStore {
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    capacity: usize,
    max_per_user: usize,
}

impl std::fmt::Debug for SessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionStore")
            .field("len", &self.len())
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl SessionStore {
    /// A store for at most `capacity` sessions, `max_per_user` of them per user.
    pub fn new(capacity: usize, max_per_user: usize) -> Self {
        SessionStore {
            sessions: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
            max_per_user: max_per_user.max(1),
        }
    }

    /// Sessions held (expired ones included until they are looked up or pushed out).
    pub fn len(&self) -> usize {
        self.sessions.lock().map(|s| s.len()).unwrap_or(0)
    }

    /// Whether no session is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keeps `session`, first dropping the user's oldest beyond their share and, when full,
    /// expired sessions and then the one closest to its end.
    pub fn insert(&self, session: Arc<Session>, now: SystemTime) {
        let Ok(mut sessions) = self.sessions.lock() else {
            return;
        };
        let mut mine: Vec<(SystemTime, String)> = sessions
            .values()
            .filter(|s| s.username == session.username)
            .map(|s| (s.created, s.id.clone()))
            .collect();
        if mine.len() >= self.max_per_user {
            mine.sort();
            let excess = mine.len() + 1 - self.max_per_user;
            for (_, id) in mine.into_iter().take(excess) {
                sessions.remove(&id);
            }
        }
        if sessions.len() >= self.capacity {
            sessions.retain(|_, s| s.expires_at > now);
        }
        while sessions.len() >= self.capacity {
            let Some(first) = sessions
                .values()
                .min_by_key(|s| s.expires_at)
                .map(|s| s.id.clone())
            else {
                break;
            };
            sessions.remove(&first);
        }
        sessions.insert(session.id.clone(), session);
    }

    /// The live session `id` at `now` (an expired one is dropped).
    pub fn get(&self, id: &str, now: SystemTime) -> Result<Arc<Session>, SessionError> {
        let Ok(mut sessions) = self.sessions.lock() else {
            return Err(SessionError::Unknown);
        };
        match sessions.get(id) {
            Some(session) if session.expires_at > now => Ok(Arc::clone(session)),
            Some(_) => {
                sessions.remove(id);
                Err(SessionError::Expired)
            }
            None => Err(SessionError::Unknown),
        }
    }

    /// Forgets session `id`; whether it was held.
    pub fn remove(&self, id: &str) -> bool {
        self.sessions
            .lock()
            .map(|mut s| s.remove(id).is_some())
            .unwrap_or(false)
    }
}

/// Sessions: the store and the key their cookies are signed with.
pub struct SessionManager {
    config: SessionConfig,
    cookie_key: JwtKey,
    state_key: JwtKey,
    store: SessionStore,
}

impl std::fmt::Debug for SessionManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionManager")
            .field("config", &self.config)
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

impl SessionManager {
    /// Sessions as `config` says (a random key when it has none).
    pub fn new(config: SessionConfig) -> Self {
        let master = config.key.unwrap_or_else(|| {
            let mut key = [0u8; 32];
            rand::rng().fill_bytes(&mut key);
            key
        });
        SessionManager {
            cookie_key: JwtKey::new(&derive_key(&master, "nac session cookie v1")),
            state_key: JwtKey::new(&derive_key(&master, "nac oauth state v1")),
            store: SessionStore::new(config.capacity, config.max_per_user),
            config,
        }
    }

    /// The settings.
    pub fn config(&self) -> &SessionConfig {
        &self.config
    }

    /// The store.
    pub fn store(&self) -> &SessionStore {
        &self.store
    }

    /// The key signing OAuth `state` values (a sub-key of the session key, so a `state` can
    /// never pass for a session cookie).
    pub fn state_key(&self) -> &JwtKey {
        &self.state_key
    }

    /// A new session for `identity` holding `token`, and its cookie's JWT.
    pub fn create(
        &self,
        identity: &Identity,
        token: BearerToken,
        now: SystemTime,
    ) -> Result<(Arc<Session>, String), SessionError> {
        let session = Arc::new(Session::new(identity, token, now, self.config.ttl));
        let claims = SessionClaims {
            sid: session.id.clone(),
            iat: epoch_secs(now),
            exp: epoch_secs(session.expires_at),
            iss: ISSUER.to_string(),
        };
        let jwt = self.cookie_key.sign(&claims)?;
        self.store.insert(Arc::clone(&session), now);
        Ok((session, jwt))
    }

    /// The live session the cookie value `jwt` names at `now`.
    pub fn resolve(&self, jwt: &str, now: SystemTime) -> Result<Arc<Session>, SessionError> {
        let claims: SessionClaims = self.cookie_key.verify(jwt)?;
        check_claims(&claims, epoch_secs(now), self.config.ttl)?;
        self.store.get(&claims.sid, now)
    }

    /// The first of `cookies` (values of the session cookie) naming a live session; the error
    /// of the first one when none does.
    pub fn resolve_any(
        &self,
        cookies: &[&str],
        now: SystemTime,
    ) -> Result<Arc<Session>, SessionError> {
        let mut first_error = None;
        for cookie in cookies {
            match self.resolve(cookie, now) {
                Ok(session) => return Ok(session),
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        Err(first_error.unwrap_or(SessionError::Missing))
    }

    /// Ends session `id` (sign-out, or its token was refused); whether it was live.
    pub fn revoke(&self, id: &str) -> bool {
        self.store.remove(id)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use std::collections::BTreeMap;
    use std::time::UNIX_EPOCH;

    fn identity(name: &str) -> Identity {
        Identity {
            username: name.into(),
            uid: "u".into(),
            groups: vec!["system:authenticated".into()],
            extra: BTreeMap::new(),
        }
    }

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    fn claims(iat: u64, exp: u64) -> SessionClaims {
        SessionClaims {
            sid: "abcDEF-_09".into(),
            iat,
            exp,
            iss: ISSUER.into(),
        }
    }

    #[test]
    fn cookie_strings_are_exact() {
        assert_eq!(
            session_cookie("a.b.c", Duration::from_secs(3600)),
            "nac_session=a.b.c; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=3600"
        );
        assert_eq!(
            clear_session_cookie(),
            "nac_session=; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=0"
        );
    }

    #[test]
    fn cookies_are_found_among_others() {
        assert_eq!(
            cookie_values(["a=1; nac_session=x.y.z; b=2"], SESSION_COOKIE),
            vec!["x.y.z"]
        );
        assert_eq!(
            cookie_values(
                ["a=1", "nac_session=\"q\"", "nac_session=r"],
                SESSION_COOKIE
            ),
            vec!["q", "r"]
        );
        assert!(cookie_values(["nac_sessionx=1; x_nac_session=2"], SESSION_COOKIE).is_empty());
        assert!(cookie_values(["nac_session="], SESSION_COOKIE).is_empty());
        assert!(cookie_values([""], SESSION_COOKIE).is_empty());
    }

    #[test]
    fn csrf_is_needed_for_changes_and_every_graphql_post() {
        for method in ["GET", "HEAD", "OPTIONS"] {
            assert!(!csrf_required(method, false), "{method}");
            assert!(csrf_required(method, true), "{method}");
        }
        for method in ["POST", "PUT", "PATCH", "DELETE"] {
            assert!(csrf_required(method, false), "{method}");
        }
    }

    #[test]
    fn csrf_tokens_must_match_exactly() {
        assert!(csrf_matches("tok", Some("tok")));
        assert!(csrf_matches("tok", Some(" tok ")));
        assert!(!csrf_matches("tok", Some("tok2")));
        assert!(!csrf_matches("tok", Some("to")));
        assert!(!csrf_matches("tok", Some("")));
        assert!(!csrf_matches("tok", None));
        assert!(!csrf_matches("", Some("")));
    }

    #[test]
    fn claims_are_checked_against_the_clock_and_the_lifetime() {
        let hour = Duration::from_secs(3600);
        assert_eq!(check_claims(&claims(1000, 4600), 1000, hour), Ok(()));
        assert_eq!(check_claims(&claims(1000, 4600), 4599, hour), Ok(()));
        assert_eq!(
            check_claims(&claims(1000, 4600), 4600, hour),
            Err(SessionError::Expired)
        );
        // Living longer than a session may, or issued in the future.
        assert_eq!(
            check_claims(&claims(1000, 9000), 1000, hour),
            Err(SessionError::Invalid)
        );
        assert_eq!(
            check_claims(&claims(5000, 5100), 1000, hour),
            Err(SessionError::Invalid)
        );
        assert_eq!(
            check_claims(&claims(1000, 900), 950, hour),
            Err(SessionError::Invalid)
        );
        let mut foreign = claims(1000, 2000);
        foreign.iss = "someone-else".into();
        assert_eq!(
            check_claims(&foreign, 1000, hour),
            Err(SessionError::Invalid)
        );
        let mut odd = claims(1000, 2000);
        odd.sid = "../x".into();
        assert_eq!(check_claims(&odd, 1000, hour), Err(SessionError::Invalid));
        odd.sid = String::new();
        assert_eq!(check_claims(&odd, 1000, hour), Err(SessionError::Invalid));
    }

    #[test]
    fn sessions_resolve_until_revoked_or_expired() {
        let manager = SessionManager::new(SessionConfig {
            ttl: Duration::from_secs(60),
            ..SessionConfig::default()
        });
        let now = SystemTime::now();
        let (session, jwt) = manager
            .create(&identity("alice"), BearerToken::new("secret-token"), now)
            .unwrap();
        assert!(!jwt.contains("secret-token"));
        let payload = URL_SAFE_NO_PAD
            .decode(jwt.split('.').nth(1).unwrap())
            .unwrap();
        let payload: serde_json::Value = serde_json::from_slice(&payload).unwrap();
        assert_eq!(
            payload.as_object().unwrap().keys().collect::<Vec<_>>(),
            vec!["sid", "iat", "exp", "iss"]
        );
        let found = manager.resolve(&jwt, now).unwrap();
        assert_eq!(found.username(), "alice");
        assert_eq!(found.token().expose(), "secret-token");
        assert_eq!(
            manager.resolve(&jwt, now + Duration::from_secs(61)).err(),
            Some(SessionError::Expired)
        );
        assert!(manager.revoke(session.id()));
        assert_eq!(
            manager.resolve(&jwt, now).err(),
            Some(SessionError::Unknown)
        );
        // Another manager (another replica without a shared key) does not know the cookie.
        let other = SessionManager::new(SessionConfig::default());
        assert_eq!(other.resolve(&jwt, now).err(), Some(SessionError::Invalid));
        assert_eq!(
            manager.resolve_any(&[], now).err(),
            Some(SessionError::Missing)
        );
    }

    #[test]
    fn a_shared_key_lets_replicas_verify_each_others_cookies() {
        let config = SessionConfig {
            key: Some([7; 32]),
            ..SessionConfig::default()
        };
        let a = SessionManager::new(config.clone());
        let b = SessionManager::new(config);
        let now = SystemTime::now();
        let (_, jwt) = a
            .create(&identity("alice"), BearerToken::new("t"), now)
            .unwrap();
        // b verifies the signature but holds no such session.
        assert_eq!(b.resolve(&jwt, now).err(), Some(SessionError::Unknown));
        // A state signed by the same manager is no session cookie.
        let state = a
            .state_key()
            .sign(&claims(epoch_secs(now), epoch_secs(now) + 60))
            .unwrap();
        assert_eq!(a.resolve(&state, now).err(), Some(SessionError::Invalid));
        assert_ne!(derive_key(&[7; 32], "x"), derive_key(&[7; 32], "y"));
    }

    #[test]
    fn the_store_is_bounded_overall_and_per_user() {
        let store = SessionStore::new(3, 2);
        let now = at(1_000_000);
        let ttl = Duration::from_secs(100);
        let mut ids = Vec::new();
        for (i, user) in ["alice", "alice", "alice"].iter().enumerate() {
            let session = Arc::new(Session::new(
                &identity(user),
                BearerToken::new("t"),
                now + Duration::from_secs(i as u64),
                ttl,
            ));
            ids.push(session.id().to_string());
            store.insert(session, now);
        }
        // Alice keeps her two newest.
        assert_eq!(store.len(), 2);
        assert!(store.get(&ids[0], now).is_err());
        assert!(store.get(&ids[2], now).is_ok());
        for user in ["bob", "carol"] {
            store.insert(
                Arc::new(Session::new(
                    &identity(user),
                    BearerToken::new("t"),
                    now,
                    ttl,
                )),
                now,
            );
        }
        assert_eq!(store.len(), 3);
    }

    #[test]
    fn nothing_secret_prints() {
        let session = Session::new(
            &identity("alice"),
            BearerToken::new("s3cr3t"),
            SystemTime::now(),
            Duration::from_secs(5),
        );
        let printed = format!("{session:?}");
        assert!(!printed.contains("s3cr3t") && !printed.contains(session.csrf_token()));
        let config = SessionConfig {
            key: Some([9; 32]),
            ..SessionConfig::default()
        };
        assert!(format!("{config:?}").contains("<redacted>"));
        let info = session.info();
        assert!(info.expires_at.ends_with('Z'));
        assert_eq!(info.csrf_token, session.csrf_token());
    }
}
