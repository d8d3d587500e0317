//! Opaque, tamper-evident `continue` tokens for list paging.
//!
//! A token carries the last name returned, bound to the namespace, the resource and a digest
//! of the filters of the list it continues, and is signed with HMAC-SHA256 under the gateway's
//! key. A token changed by a single bit, or replayed against another namespace, resource or
//! filter, is refused with 400. Lists are ordered by name, so a token stays valid while
//! objects come and go (as with Kubernetes, items created behind the cursor are not seen).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::gateway::error::GatewayError;

const VERSION: u8 = 1;
const SIGNATURE_BYTES: usize = 16;
/// Longest token accepted (anything longer is not one of ours).
pub const MAX_TOKEN_LENGTH: usize = 2048;

/// What a token says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Claims {
    v: u8,
    /// Namespace.
    ns: String,
    /// Resource (plural).
    r: String,
    /// Digest of the filters.
    f: String,
    /// Last name returned.
    after: String,
}

/// Signs and checks continue tokens.
#[derive(Clone)]
pub struct PageTokens {
    key: [u8; 32],
}

impl std::fmt::Debug for PageTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PageTokens(<key redacted>)")
    }
}

/// Digest of the filters a list was asked with (a token only continues the same list).
pub fn filter_digest(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part.as_bytes());
    }
    hex::encode(&hasher.finalize()[..8])
}

impl PageTokens {
    /// Tokens signed with `key`.
    pub fn new(key: [u8; 32]) -> Self {
        PageTokens { key }
    }

    /// A sealer under the same key (so its values open on every replica sharing the key),
    /// for tokens whose content the client must not read.
    pub fn sealer(&self) -> crate::gateway::auth::Sealer {
        crate::gateway::auth::Sealer::new(self.key)
    }

    /// Tokens signed with a random key (valid only in this process).
    pub fn random() -> Self {
        let mut key = [0u8; 32];
        rand::rng().fill_bytes(&mut key);
        PageTokens { key }
    }

    fn sign(&self, payload: &[u8]) -> Vec<u8> {
        match Hmac::<Sha256>::new_from_slice(&self.key) {
            Ok(mut mac) => {
                mac.update(payload);
                mac.finalize().into_bytes()[..SIGNATURE_BYTES].to_vec()
            }
            Err(_) => Vec::new(),
        }
    }

    /// A token continuing after `after` in the list of `resource` in `namespace` with
    /// filters digested as `filters`.
    pub fn issue(&self, namespace: &str, resource: &str, filters: &str, after: &str) -> String {
        let claims = Claims {
            v: VERSION,
            ns: namespace.to_string(),
            r: resource.to_string(),
            f: filters.to_string(),
            after: after.to_string(),
        };
        let payload = serde_json::to_vec(&claims).unwrap_or_default();
        let signature = self.sign(&payload);
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&payload),
            URL_SAFE_NO_PAD.encode(signature)
        )
    }

    /// The name to continue after, when `token` is genuine and continues this very list.
    pub fn check(
        &self,
        token: &str,
        namespace: &str,
        resource: &str,
        filters: &str,
    ) -> Result<String, GatewayError> {
        let refused =
            || GatewayError::BadRequest("the continue token is not valid for this list".into());
        if token.len() > MAX_TOKEN_LENGTH {
            return Err(refused());
        }
        let (payload, signature) = token.split_once('.').ok_or_else(refused)?;
        let payload = URL_SAFE_NO_PAD.decode(payload).map_err(|_| refused())?;
        let signature = URL_SAFE_NO_PAD.decode(signature).map_err(|_| refused())?;
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).map_err(|_| refused())?;
        mac.update(&payload);
        mac.verify_truncated_left(&signature)
            .map_err(|_| refused())?;
        if signature.len() != SIGNATURE_BYTES {
            return Err(refused());
        }
        let claims: Claims = serde_json::from_slice(&payload).map_err(|_| refused())?;
        if claims.v != VERSION
            || claims.ns != namespace
            || claims.r != resource
            || claims.f != filters
        {
            return Err(refused());
        }
        Ok(claims.after)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn a_token_round_trips_for_the_same_list_only() {
        let tokens = PageTokens::random();
        let filters = filter_digest(&["Completed", ""]);
        let token = tokens.issue("team-a", "nonadminbackups", &filters, "b-17");
        assert_eq!(
            tokens
                .check(&token, "team-a", "nonadminbackups", &filters)
                .unwrap(),
            "b-17"
        );
        assert!(
            tokens
                .check(&token, "team-b", "nonadminbackups", &filters)
                .is_err()
        );
        assert!(
            tokens
                .check(&token, "team-a", "nonadminrestores", &filters)
                .is_err()
        );
        assert!(
            tokens
                .check(
                    &token,
                    "team-a",
                    "nonadminbackups",
                    &filter_digest(&["Failed", ""])
                )
                .is_err()
        );
    }

    #[test]
    fn any_change_is_detected() {
        let tokens = PageTokens::random();
        let token = tokens.issue("team-a", "nonadminbackups", "f", "b-17");
        for index in 0..token.len() {
            let mut bytes = token.clone().into_bytes();
            bytes[index] = if bytes[index] == b'A' { b'B' } else { b'A' };
            let Ok(tampered) = String::from_utf8(bytes) else {
                continue;
            };
            if tampered == token {
                continue;
            }
            assert!(
                tokens
                    .check(&tampered, "team-a", "nonadminbackups", "f")
                    .is_err(),
                "tampered token at {index} accepted"
            );
        }
    }

    #[test]
    fn garbage_and_foreign_tokens_are_refused() {
        let tokens = PageTokens::random();
        let other = PageTokens::random();
        let foreign = other.issue("team-a", "nonadminbackups", "f", "x");
        for token in [
            "",
            ".",
            "abc",
            "!!!.???",
            foreign.as_str(),
            &"a".repeat(MAX_TOKEN_LENGTH + 1),
        ] {
            let error = tokens
                .check(token, "team-a", "nonadminbackups", "f")
                .unwrap_err();
            assert_eq!(error.status_code(), 400);
        }
    }

    #[test]
    fn filter_digest_separates_parts() {
        assert_ne!(filter_digest(&["ab", "c"]), filter_digest(&["a", "bc"]));
    }
}
