//! Sealed values: small payloads handed to clients that they must neither read nor forge — the
//! position behind a stream's event id, the last namespace name behind a namespace listing's
//! `continue` token. A sealed value is `nonce ‖ payload XOR keystream ‖ tag`, base64url: the
//! keystream is HMAC-SHA256 of the nonce and a block counter under an encryption key, the tag
//! HMAC-SHA256 of the purpose, the nonce and the ciphertext under a separate key
//! (encrypt-then-MAC). Both keys derive from one random per-process key, so values from another
//! process (or another purpose) are refused, and the same payload sealed twice looks unrelated.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

const NONCE_BYTES: usize = 12;
const TAG_BYTES: usize = 16;
/// Longest sealed text accepted (anything longer is not one of ours).
pub const MAX_SEALED_LENGTH: usize = 1024;

type HmacSha256 = Hmac<Sha256>;

fn mac(key: &[u8]) -> Option<HmacSha256> {
    HmacSha256::new_from_slice(key).ok()
}

/// Seals and opens values under a per-process key.
#[derive(Clone)]
pub struct Sealer {
    encryption: [u8; 32],
    authentication: [u8; 32],
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(<keys redacted>)")
    }
}

impl Default for Sealer {
    fn default() -> Self {
        Self::random()
    }
}

impl Sealer {
    /// A sealer with keys derived from `key`.
    pub fn new(key: [u8; 32]) -> Self {
        let derive = |label: &[u8]| -> [u8; 32] {
            match mac(&key) {
                Some(mut mac) => {
                    mac.update(label);
                    mac.finalize().into_bytes().into()
                }
                None => [0; 32],
            }
        };
        Sealer {
            encryption: derive(b"nac seal encryption"),
            authentication: derive(b"nac seal authentication"),
        }
    }

    /// A sealer with a fresh random key (values open only in this process).
    pub fn random() -> Self {
        let mut key = [0u8; 32];
        rand::rng().fill_bytes(&mut key);
        Self::new(key)
    }

    fn keystream(&self, nonce: &[u8], data: &mut [u8]) {
        for (block, chunk) in data.chunks_mut(32).enumerate() {
            let Some(mut mac) = mac(&self.encryption) else {
                return;
            };
            mac.update(nonce);
            mac.update(&(block as u64).to_be_bytes());
            let stream = mac.finalize().into_bytes();
            for (byte, key) in chunk.iter_mut().zip(stream.iter()) {
                *byte ^= key;
            }
        }
    }

    fn tag(&self, purpose: &str, nonce: &[u8], ciphertext: &[u8]) -> Option<HmacSha256> {
        let mut mac = mac(&self.authentication)?;
        mac.update(&(purpose.len() as u64).to_be_bytes());
        mac.update(purpose.as_bytes());
        mac.update(nonce);
        mac.update(ciphertext);
        Some(mac)
    }

    /// `payload` sealed for `purpose` (a value sealed for one purpose does not open for
    /// another).
    pub fn seal(&self, purpose: &str, payload: &[u8]) -> String {
        let mut nonce = [0u8; NONCE_BYTES];
        rand::rng().fill_bytes(&mut nonce);
        let mut sealed = Vec::with_capacity(NONCE_BYTES + payload.len() + TAG_BYTES);
        sealed.extend_from_slice(&nonce);
        let mut ciphertext = payload.to_vec();
        self.keystream(&nonce, &mut ciphertext);
        let tag = self
            .tag(purpose, &nonce, &ciphertext)
            .map(|mac| mac.finalize().into_bytes().to_vec())
            .unwrap_or_default();
        sealed.extend_from_slice(&ciphertext);
        sealed.extend_from_slice(tag.get(..TAG_BYTES).unwrap_or_default());
        URL_SAFE_NO_PAD.encode(sealed)
    }

    /// The payload of `sealed`, when this process sealed it for `purpose` and it is unchanged.
    pub fn open(&self, purpose: &str, sealed: &str) -> Option<Vec<u8>> {
        if sealed.len() > MAX_SEALED_LENGTH {
            return None;
        }
        let bytes = URL_SAFE_NO_PAD.decode(sealed).ok()?;
        if bytes.len() < NONCE_BYTES + TAG_BYTES {
            return None;
        }
        let (nonce, rest) = bytes.split_at(NONCE_BYTES);
        let (ciphertext, tag) = rest.split_at(rest.len() - TAG_BYTES);
        self.tag(purpose, nonce, ciphertext)?
            .verify_truncated_left(tag)
            .ok()?;
        let mut payload = ciphertext.to_vec();
        self.keystream(nonce, &mut payload);
        Some(payload)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_for_their_purpose_only() {
        let sealer = Sealer::random();
        let long = vec![7u8; 100];
        for payload in [&b""[..], b"42", &long] {
            let sealed = sealer.seal("event", payload);
            assert_eq!(sealer.open("event", &sealed).unwrap(), payload);
            assert!(sealer.open("namespaces", &sealed).is_none());
        }
        assert!(
            Sealer::random()
                .open("event", &sealer.seal("event", b"1"))
                .is_none()
        );
    }

    #[test]
    fn sealed_values_reveal_nothing_and_resist_tampering() {
        let sealer = Sealer::random();
        let a = sealer.seal("event", &1u64.to_be_bytes());
        let b = sealer.seal("event", &1u64.to_be_bytes());
        assert_ne!(a, b, "the same payload sealed twice looks unrelated");
        assert!(!a.contains("team-a"));
        let named = sealer.seal("namespaces", b"team-a");
        assert!(!named.contains("team") && !named.contains("dGVhbS1h"));
        for index in 0..a.len() {
            let mut bytes = a.clone().into_bytes();
            bytes[index] = if bytes[index] == b'A' { b'B' } else { b'A' };
            let tampered = String::from_utf8(bytes).unwrap();
            if tampered != a {
                assert!(sealer.open("event", &tampered).is_none(), "at {index}");
            }
        }
        for garbage in ["", "x", "00000000-1", &"A".repeat(2000)] {
            assert!(sealer.open("event", garbage).is_none());
        }
    }
}
