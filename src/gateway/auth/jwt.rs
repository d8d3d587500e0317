//! The gateway's signed tokens: HS256 JWTs issued by [`ISSUER`] under a key derived per use
//! ([`derive_key`]), so a session cookie can never pass for an OAuth `state` or the other way
//! round, plus the random values (session ids, CSRF tokens, nonces) they carry. Browser sessions
//! (`super::session`) and the OpenShift OAuth sign-in (`super::oauth`) both sign with it.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use rand::RngCore;
use serde::Serialize;
use sha2::Sha256;

/// `iss` of every JWT the gateway signs.
pub const ISSUER: &str = "nac-gateway";
/// Longest cookie value looked at (a JWT of ours is well under 512 bytes).
const MAX_JWT_LEN: usize = 4096;

/// Why a JWT could not be signed or does not verify (no detail: the token is never described).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    /// The JWT does not verify (signature, algorithm, issuer, shape, length).
    #[error("the token is not valid")]
    Invalid,
    /// Signing failed (cannot happen with an HMAC key).
    #[error("the token could not be signed")]
    Signing,
}

/// Seconds since the epoch of `time` (0 before it).
pub fn epoch_secs(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// HS256 signing and verification under one key.
pub struct JwtKey {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
}

impl std::fmt::Debug for JwtKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JwtKey(<redacted>)")
    }
}

impl JwtKey {
    /// A key from `secret`. Expiry is checked by the caller against its own clock (a session
    /// cookie's `check_claims`, an OAuth `state`'s `check_state`), so verification here is the
    /// signature, the algorithm and the issuer.
    pub fn new(secret: &[u8]) -> Self {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.validate_exp = false;
        validation.validate_aud = false;
        validation.leeway = 0;
        validation.set_required_spec_claims(&["exp", "iss"]);
        validation.set_issuer(&[ISSUER]);
        JwtKey {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
            validation,
        }
    }

    /// `claims` signed.
    pub fn sign<T: Serialize>(&self, claims: &T) -> Result<String, JwtError> {
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), claims, &self.encoding)
            .map_err(|_| JwtError::Signing)
    }

    /// The claims of `jwt` if its signature is ours (no time checks).
    pub fn verify<T: serde::de::DeserializeOwned>(&self, jwt: &str) -> Result<T, JwtError> {
        if jwt.len() > MAX_JWT_LEN {
            return Err(JwtError::Invalid);
        }
        jsonwebtoken::decode::<T>(jwt, &self.decoding, &self.validation)
            .map(|data| data.claims)
            .map_err(|_| JwtError::Invalid)
    }
}

/// A sub-key of `master` for one use, so a session cookie can never pass for an OAuth `state`
/// or the other way round.
pub fn derive_key(master: &[u8; 32], purpose: &str) -> [u8; 32] {
    match Hmac::<Sha256>::new_from_slice(master) {
        Ok(mut mac) => {
            mac.update(purpose.as_bytes());
            mac.finalize().into_bytes().into()
        }
        // HMAC accepts keys of any length; this branch cannot be taken.
        Err(_) => *master,
    }
}

/// 32 random bytes, URL-safe base64 without padding (43 characters): session ids, CSRF
/// tokens, OAuth nonces.
pub fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn claims() -> Value {
        json!({"sid": "abcDEF-_09", "iat": 1, "exp": 2, "iss": ISSUER})
    }

    #[test]
    fn jwts_verify_only_under_their_key() {
        let key = JwtKey::new(b"0123456789abcdef0123456789abcdef");
        let other = JwtKey::new(b"another key of thirty-two bytes!");
        let jwt = key.sign(&claims()).unwrap();
        assert_eq!(key.verify::<Value>(&jwt).unwrap(), claims());
        assert_eq!(other.verify::<Value>(&jwt), Err(JwtError::Invalid));
        // A changed payload breaks the signature.
        let parts: Vec<&str> = jwt.split('.').collect();
        let mut payload: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        payload["sid"] = "someone-elses".into();
        let forged = format!(
            "{}.{}.{}",
            parts[0],
            URL_SAFE_NO_PAD.encode(serde_json::to_vec(&payload).unwrap()),
            parts[2]
        );
        assert_eq!(key.verify::<Value>(&forged), Err(JwtError::Invalid));
        // alg=none is refused.
        let none = format!(
            "{}.{}.",
            URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#),
            parts[1]
        );
        assert_eq!(key.verify::<Value>(&none), Err(JwtError::Invalid));
        assert_eq!(key.verify::<Value>("garbage"), Err(JwtError::Invalid));
    }
}
