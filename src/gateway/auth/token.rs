//! Bearer tokens: a wrapper that never prints the token, and the keyed hash (HMAC-SHA256 under a
//! per-process random key) under which everything derived from a token is cached. The token
//! itself is never a cache key, a log field, a metric label or part of an error.

use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

/// A caller's bearer token. `Debug` and `Display` are redacted.
#[derive(Clone, PartialEq, Eq)]
pub struct BearerToken(String);

impl BearerToken {
    /// Wraps `token`.
    pub fn new(token: impl Into<String>) -> Self {
        BearerToken(token.into())
    }

    /// The token, for the one place that needs it: the Authorization header towards the API
    /// server (and the TokenReview body).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The token from an `Authorization` header value: `Bearer <token>` (scheme
    /// case-insensitive). `None` for other schemes or an empty token.
    pub fn from_authorization(value: &str) -> Option<Self> {
        let (scheme, token) = value.trim().split_once(' ')?;
        let token = token.trim();
        (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && token.len() <= 16 * 1024)
            .then(|| BearerToken(token.to_string()))
    }
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

/// HMAC-SHA256 of a token under the process's key: what caches are keyed by.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TokenKey([u8; 32]);

impl std::fmt::Debug for TokenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TokenKey({}…)", hex::encode(&self.0[..4]))
    }
}

/// Computes [`TokenKey`]s under a key drawn at random when the process starts, so the hashes
/// are useless outside this process (no offline guessing of tokens from a memory dump).
#[derive(Clone)]
pub struct TokenHasher {
    key: [u8; 32],
}

impl std::fmt::Debug for TokenHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenHasher(<key redacted>)")
    }
}

impl Default for TokenHasher {
    fn default() -> Self {
        Self::random()
    }
}

impl TokenHasher {
    /// A hasher with a fresh random key.
    pub fn random() -> Self {
        let mut key = [0u8; 32];
        rand::rng().fill_bytes(&mut key);
        TokenHasher { key }
    }

    /// The keyed hash of `token`.
    pub fn key_of(&self, token: &BearerToken) -> TokenKey {
        let mut mac = match Hmac::<Sha256>::new_from_slice(&self.key) {
            Ok(mac) => mac,
            // HMAC accepts keys of any length; this branch cannot be taken.
            Err(_) => return TokenKey([0; 32]),
        };
        mac.update(token.expose().as_bytes());
        TokenKey(mac.finalize().into_bytes().into())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn bearer_scheme_is_parsed_and_others_refused() {
        assert_eq!(
            BearerToken::from_authorization("Bearer abc")
                .unwrap()
                .expose(),
            "abc"
        );
        assert_eq!(
            BearerToken::from_authorization("bearer  sha256~x ")
                .unwrap()
                .expose(),
            "sha256~x"
        );
        assert!(BearerToken::from_authorization("Basic abc").is_none());
        assert!(BearerToken::from_authorization("Bearer ").is_none());
        assert!(BearerToken::from_authorization("Bearer").is_none());
    }

    #[test]
    fn the_token_never_prints() {
        let token = BearerToken::new("s3cr3t-token");
        assert!(!format!("{token:?}").contains("s3cr3t"));
        let hasher = TokenHasher::random();
        let key = hasher.key_of(&token);
        assert!(!format!("{key:?}").contains("s3cr3t"));
        assert!(!format!("{hasher:?}").contains("s3cr3t"));
    }

    #[test]
    fn keys_are_stable_per_process_and_differ_between_keys() {
        let token = BearerToken::new("t");
        let a = TokenHasher::random();
        let b = TokenHasher::random();
        assert_eq!(a.key_of(&token), a.key_of(&token));
        assert_ne!(a.key_of(&token), a.key_of(&BearerToken::new("u")));
        assert_ne!(a.key_of(&token), b.key_of(&token));
    }
}
