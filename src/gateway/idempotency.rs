//! `Idempotency-Key` on POST: the first request with a key runs; a repeat with the same key and
//! the same body gets the stored answer; a repeat with another body is refused (422); a repeat
//! while the first is still running is refused (409). Keys are per caller and per path, kept
//! for a bounded time in a bounded store.

use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::gateway::auth::cache::TtlCache;
use crate::gateway::error::GatewayError;

/// Longest Idempotency-Key accepted.
pub const MAX_KEY_LENGTH: usize = 255;

/// A stored answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredResponse {
    /// HTTP status.
    pub status: u16,
    /// Content type.
    pub content_type: String,
    /// Body.
    pub body: Vec<u8>,
}

#[derive(Clone, Debug)]
enum Record {
    InFlight {
        body_digest: [u8; 32],
    },
    Done {
        body_digest: [u8; 32],
        response: Arc<StoredResponse>,
    },
}

/// What to do with a request carrying an Idempotency-Key.
#[derive(Debug)]
pub enum Begin {
    /// First time: run it, then [`IdempotencyStore::finish`] (or `abandon`).
    Run(IdempotencyTicket),
    /// Seen with the same body: answer with this.
    Replay(Arc<StoredResponse>),
}

/// The right to record the answer of a first request.
#[derive(Debug)]
pub struct IdempotencyTicket {
    key: (String, String, String),
    body_digest: [u8; 32],
}

/// The store.
pub struct IdempotencyStore {
    records: TtlCache<(String, String, String), Record>,
    ttl: Duration,
    in_flight_ttl: Duration,
    lock: std::sync::Mutex<()>,
}

impl std::fmt::Debug for IdempotencyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdempotencyStore")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl IdempotencyStore {
    /// A store keeping answers for `ttl`, at most `capacity` of them.
    pub fn new(ttl: Duration, capacity: usize) -> Self {
        IdempotencyStore {
            records: TtlCache::new(capacity),
            ttl,
            in_flight_ttl: Duration::from_secs(15 * 60),
            lock: std::sync::Mutex::new(()),
        }
    }

    /// Checks `key` for `caller` on `path` with `body`.
    pub fn begin(
        &self,
        caller: &str,
        path: &str,
        key: &str,
        body: &[u8],
    ) -> Result<Begin, GatewayError> {
        if key.is_empty()
            || key.len() > MAX_KEY_LENGTH
            || !key.chars().all(|c| c.is_ascii_graphic() || c == ' ')
        {
            return Err(GatewayError::BadRequest(format!(
                "Idempotency-Key must be 1 to {MAX_KEY_LENGTH} printable ASCII characters"
            )));
        }
        let body_digest: [u8; 32] = Sha256::digest(body).into();
        let record_key = (caller.to_string(), path.to_string(), key.to_string());
        // One check-and-set at a time, so two concurrent first requests cannot both run.
        let _guard = self.lock.lock().map_err(|_| GatewayError::Upstream)?;
        match self.records.get(&record_key) {
            Some(Record::InFlight { body_digest: seen }) => {
                if seen == body_digest {
                    Err(GatewayError::IdempotencyKeyInFlight)
                } else {
                    Err(GatewayError::IdempotencyKeyReused)
                }
            }
            Some(Record::Done {
                body_digest: seen,
                response,
            }) => {
                if seen == body_digest {
                    Ok(Begin::Replay(response))
                } else {
                    Err(GatewayError::IdempotencyKeyReused)
                }
            }
            None => {
                self.records.insert(
                    record_key.clone(),
                    Record::InFlight { body_digest },
                    self.in_flight_ttl,
                );
                Ok(Begin::Run(IdempotencyTicket {
                    key: record_key,
                    body_digest,
                }))
            }
        }
    }

    /// Records the answer of the first request. Server errors (5xx) are not kept, so a retry
    /// runs again.
    pub fn finish(&self, ticket: IdempotencyTicket, response: StoredResponse) {
        if response.status >= 500 {
            self.abandon(ticket);
            return;
        }
        self.records.insert(
            ticket.key,
            Record::Done {
                body_digest: ticket.body_digest,
                response: Arc::new(response),
            },
            self.ttl,
        );
    }

    /// Forgets a first request that did not complete (the key may be used again).
    pub fn abandon(&self, ticket: IdempotencyTicket) {
        // A zero TTL insert stores nothing; overwrite with an already-expired record instead.
        self.records.insert_at(
            ticket.key,
            Record::InFlight {
                body_digest: ticket.body_digest,
            },
            Duration::from_nanos(1),
            std::time::Instant::now() - Duration::from_secs(1),
        );
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn response(status: u16) -> StoredResponse {
        StoredResponse {
            status,
            content_type: "application/json".into(),
            body: b"{}".to_vec(),
        }
    }

    #[test]
    fn same_key_same_body_replays_other_body_is_refused() {
        let store = IdempotencyStore::new(Duration::from_secs(60), 100);
        let Begin::Run(ticket) = store.begin("alice", "/p", "k1", b"body").unwrap() else {
            panic!("first request must run");
        };
        assert_eq!(
            store.begin("alice", "/p", "k1", b"body").unwrap_err(),
            GatewayError::IdempotencyKeyInFlight
        );
        store.finish(ticket, response(201));
        match store.begin("alice", "/p", "k1", b"body").unwrap() {
            Begin::Replay(stored) => assert_eq!(stored.status, 201),
            Begin::Run(_) => panic!("must replay"),
        }
        assert_eq!(
            store.begin("alice", "/p", "k1", b"other").unwrap_err(),
            GatewayError::IdempotencyKeyReused
        );
        // Keys are per caller and per path.
        assert!(matches!(
            store.begin("bob", "/p", "k1", b"other").unwrap(),
            Begin::Run(_)
        ));
        assert!(matches!(
            store.begin("alice", "/q", "k1", b"other").unwrap(),
            Begin::Run(_)
        ));
    }

    #[test]
    fn server_errors_and_abandoned_requests_free_the_key() {
        let store = IdempotencyStore::new(Duration::from_secs(60), 100);
        let Begin::Run(ticket) = store.begin("a", "/p", "k", b"x").unwrap() else {
            panic!()
        };
        store.finish(ticket, response(502));
        let Begin::Run(ticket) = store.begin("a", "/p", "k", b"x").unwrap() else {
            panic!("a 5xx answer must not be replayed")
        };
        store.abandon(ticket);
        assert!(matches!(
            store.begin("a", "/p", "k", b"x").unwrap(),
            Begin::Run(_)
        ));
    }

    #[test]
    fn malformed_keys_are_refused() {
        let store = IdempotencyStore::new(Duration::from_secs(60), 100);
        for key in ["", "ключ", &"k".repeat(MAX_KEY_LENGTH + 1), "a\nb"] {
            assert_eq!(
                store.begin("a", "/p", key, b"").unwrap_err().status_code(),
                400
            );
        }
    }
}
