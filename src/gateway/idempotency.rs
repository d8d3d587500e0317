//! `Idempotency-Key` on POST: the first request with a key runs; a repeat with the same key and
//! the same body gets the stored answer; a repeat with another body is refused (422); a repeat
//! while the first is still running is refused (409). Keys are per caller and per path and are
//! kept in the history store, so every gateway replica gives the same answer; when the store
//! cannot be reached the request is refused (503) rather than run unprotected. An answer is
//! bound to the UID of the namespace it was given in: in a namespace deleted and created again
//! under the same name (where a service account has the same user name) the predecessor's
//! answer is never replayed — the key runs anew.

use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::gateway::error::GatewayError;
use crate::history::{HistoryError, IdempotencyAnswer, IdempotencyState, SharedHistory};

/// Longest Idempotency-Key accepted.
pub const MAX_KEY_LENGTH: usize = 255;

/// How long a key stays claimed by a request that never finished (crashed replica): after it,
/// the key may run again.
pub const IN_FLIGHT_TTL: Duration = Duration::from_secs(15 * 60);

/// Longest wait for the store, so a hanging database cannot hold requests.
const STORE_TIMEOUT: Duration = Duration::from_secs(10);

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

/// What to do with a request carrying an Idempotency-Key.
#[derive(Debug)]
pub enum Begin {
    /// First time: run it, then [`IdempotencyStore::finish`] (or `abandon`).
    Run(IdempotencyTicket),
    /// Seen with the same body: answer with this.
    Replay(StoredResponse),
}

/// The right to record the answer of a first request.
#[derive(Debug)]
pub struct IdempotencyTicket {
    caller: String,
    path: String,
    key: String,
    namespace_uid: String,
}

/// Idempotency-Key records, kept in the history store.
pub struct IdempotencyStore {
    history: SharedHistory,
    ttl: Duration,
    in_flight_ttl: Duration,
}

impl std::fmt::Debug for IdempotencyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdempotencyStore")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// The answer when the store cannot be used: never its error text (it may name the database).
fn unavailable(error: Option<&HistoryError>) -> GatewayError {
    match error {
        Some(error) => tracing::warn!(error = %error, "idempotency store failed"),
        None => tracing::warn!("idempotency store timed out"),
    }
    GatewayError::Unavailable(
        "requests with an Idempotency-Key cannot be accepted right now; retry shortly".into(),
    )
}

/// Checks a key: 1 to [`MAX_KEY_LENGTH`] printable ASCII characters.
pub fn check_key(key: &str) -> Result<(), GatewayError> {
    if key.is_empty()
        || key.len() > MAX_KEY_LENGTH
        || !key.chars().all(|c| c.is_ascii_graphic() || c == ' ')
    {
        return Err(GatewayError::BadRequest(format!(
            "Idempotency-Key must be 1 to {MAX_KEY_LENGTH} printable ASCII characters"
        )));
    }
    Ok(())
}

impl IdempotencyStore {
    /// A store keeping answers in `history` for `ttl`.
    pub fn new(history: SharedHistory, ttl: Duration) -> Self {
        IdempotencyStore {
            history,
            ttl,
            in_flight_ttl: IN_FLIGHT_TTL,
        }
    }

    /// Checks `key` for `caller` on `path` in the namespace whose UID is `namespace_uid`
    /// (empty when it does not exist) with `fingerprint` (what the key stands for: the query
    /// and the body).
    pub async fn begin(
        &self,
        caller: &str,
        path: &str,
        key: &str,
        namespace_uid: &str,
        fingerprint: &[u8],
    ) -> Result<Begin, GatewayError> {
        check_key(key)?;
        let digest: [u8; 32] = Sha256::digest(fingerprint).into();
        let state = tokio::time::timeout(
            STORE_TIMEOUT,
            self.history.idempotency_begin(
                caller,
                path,
                key,
                namespace_uid,
                &digest,
                millis(self.in_flight_ttl),
            ),
        )
        .await
        .map_err(|_| unavailable(None))?
        .map_err(|error| unavailable(Some(&error)))?;
        match state {
            IdempotencyState::Claimed => Ok(Begin::Run(IdempotencyTicket {
                caller: caller.to_string(),
                path: path.to_string(),
                key: key.to_string(),
                namespace_uid: namespace_uid.to_string(),
            })),
            IdempotencyState::InFlight => Err(GatewayError::IdempotencyKeyInFlight),
            IdempotencyState::Mismatch => Err(GatewayError::IdempotencyKeyReused),
            IdempotencyState::Done(answer) => Ok(Begin::Replay(StoredResponse {
                status: answer.status,
                content_type: answer.content_type,
                body: answer.body,
            })),
        }
    }

    /// Records the answer of the first request. Server errors (5xx) are not kept, so a retry
    /// runs again. A store failure is logged: the answer still goes out, and the key stays
    /// claimed until it expires (a retry meanwhile gets 409, never a second run).
    pub async fn finish(&self, ticket: IdempotencyTicket, response: StoredResponse) {
        if response.status >= 500 {
            self.abandon(ticket).await;
            return;
        }
        let answer = IdempotencyAnswer {
            status: response.status,
            content_type: response.content_type,
            body: response.body,
        };
        let stored = tokio::time::timeout(
            STORE_TIMEOUT,
            self.history.idempotency_finish(
                &ticket.caller,
                &ticket.path,
                &ticket.key,
                &ticket.namespace_uid,
                answer,
                millis(self.ttl),
            ),
        )
        .await;
        match stored {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                tracing::warn!(error = %error, "could not store an Idempotency-Key answer");
            }
            Err(_) => tracing::warn!("storing an Idempotency-Key answer timed out"),
        }
    }

    /// Forgets a first request that did not complete (the key may be used again).
    pub async fn abandon(&self, ticket: IdempotencyTicket) {
        let released = tokio::time::timeout(
            STORE_TIMEOUT,
            self.history.idempotency_abandon(
                &ticket.caller,
                &ticket.path,
                &ticket.key,
                &ticket.namespace_uid,
            ),
        )
        .await;
        match released {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                tracing::warn!(error = %error, "could not release an Idempotency-Key");
            }
            Err(_) => tracing::warn!("releasing an Idempotency-Key timed out"),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// The UID of the namespace the keys are used in.
    const NS: &str = "4f1c0de5-0000-4000-8000-000000000001";

    async fn sqlite() -> (SharedHistory, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let url = crate::history::sqlite_url_for(&dir.path().join("history.db"));
        let store = crate::history::open(&url).await.unwrap();
        (store, dir)
    }

    fn response(status: u16) -> StoredResponse {
        StoredResponse {
            status,
            content_type: "application/json".into(),
            body: b"{}".to_vec(),
        }
    }

    #[tokio::test]
    async fn same_key_same_body_replays_other_body_is_refused() {
        let (history, _dir) = sqlite().await;
        let store = IdempotencyStore::new(history, Duration::from_secs(60));
        let Begin::Run(ticket) = store.begin("alice", "/p", "k1", NS, b"body").await.unwrap()
        else {
            panic!("first request must run");
        };
        assert_eq!(
            store
                .begin("alice", "/p", "k1", NS, b"body")
                .await
                .unwrap_err(),
            GatewayError::IdempotencyKeyInFlight
        );
        assert_eq!(
            store
                .begin("alice", "/p", "k1", NS, b"other")
                .await
                .unwrap_err(),
            GatewayError::IdempotencyKeyReused
        );
        store.finish(ticket, response(201)).await;
        match store.begin("alice", "/p", "k1", NS, b"body").await.unwrap() {
            Begin::Replay(stored) => assert_eq!(stored, response(201)),
            Begin::Run(_) => panic!("must replay"),
        }
        assert_eq!(
            store
                .begin("alice", "/p", "k1", NS, b"other")
                .await
                .unwrap_err(),
            GatewayError::IdempotencyKeyReused
        );
        // Keys are per caller and per path.
        assert!(matches!(
            store.begin("bob", "/p", "k1", NS, b"other").await.unwrap(),
            Begin::Run(_)
        ));
        assert!(matches!(
            store
                .begin("alice", "/q", "k1", NS, b"other")
                .await
                .unwrap(),
            Begin::Run(_)
        ));
    }

    #[tokio::test]
    async fn a_namespace_created_again_never_gets_its_predecessors_answer() {
        let (history, _dir) = sqlite().await;
        let store = IdempotencyStore::new(history, Duration::from_secs(60));
        let reborn = "4f1c0de5-0000-4000-8000-000000000002";
        let Begin::Run(ticket) = store.begin("ci", "/p", "k", NS, b"x").await.unwrap() else {
            panic!("first request must run");
        };
        store.finish(ticket, response(201)).await;
        // Same caller, path, key and body in the namespace of the same name, another UID: a
        // new request, not a replay (nor a mismatch for another body).
        let Begin::Run(again) = store.begin("ci", "/p", "k", reborn, b"x").await.unwrap() else {
            panic!("the predecessor's answer must not be replayed");
        };
        store.finish(again, response(200)).await;
        match store.begin("ci", "/p", "k", reborn, b"x").await.unwrap() {
            Begin::Replay(stored) => assert_eq!(stored, response(200)),
            Begin::Run(_) => panic!("must replay in its own namespace"),
        }
        // A predecessor's request still running when the name is claimed again: its late
        // answer does not land on the new namespace's claim.
        let Begin::Run(late) = store.begin("ci", "/p", "k2", NS, b"x").await.unwrap() else {
            panic!("first request must run");
        };
        let Begin::Run(_claim) = store.begin("ci", "/p", "k2", reborn, b"x").await.unwrap() else {
            panic!("the predecessor's claim is not this namespace's");
        };
        store.finish(late, response(201)).await;
        assert_eq!(
            store
                .begin("ci", "/p", "k2", reborn, b"x")
                .await
                .unwrap_err(),
            GatewayError::IdempotencyKeyInFlight
        );
    }

    #[tokio::test]
    async fn two_stores_on_one_database_agree() {
        let (history, _dir) = sqlite().await;
        let a = IdempotencyStore::new(history.clone(), Duration::from_secs(60));
        let b = IdempotencyStore::new(history, Duration::from_secs(60));
        let Begin::Run(ticket) = a.begin("alice", "/p", "k", NS, b"x").await.unwrap() else {
            panic!("first request must run");
        };
        assert_eq!(
            b.begin("alice", "/p", "k", NS, b"x").await.unwrap_err(),
            GatewayError::IdempotencyKeyInFlight
        );
        a.finish(ticket, response(200)).await;
        assert!(matches!(
            b.begin("alice", "/p", "k", NS, b"x").await.unwrap(),
            Begin::Replay(_)
        ));
    }

    #[tokio::test]
    async fn server_errors_and_abandoned_requests_free_the_key() {
        let (history, _dir) = sqlite().await;
        let store = IdempotencyStore::new(history, Duration::from_secs(60));
        let Begin::Run(ticket) = store.begin("a", "/p", "k", NS, b"x").await.unwrap() else {
            panic!()
        };
        store.finish(ticket, response(502)).await;
        let Begin::Run(ticket) = store.begin("a", "/p", "k", NS, b"x").await.unwrap() else {
            panic!("a 5xx answer must not be replayed")
        };
        store.abandon(ticket).await;
        assert!(matches!(
            store.begin("a", "/p", "k", NS, b"x").await.unwrap(),
            Begin::Run(_)
        ));
    }

    #[tokio::test]
    async fn malformed_keys_are_refused_before_the_store() {
        let (history, _dir) = sqlite().await;
        let store = IdempotencyStore::new(history, Duration::from_secs(60));
        for key in ["", "ключ", &"k".repeat(MAX_KEY_LENGTH + 1), "a\nb"] {
            assert_eq!(
                store
                    .begin("a", "/p", key, NS, b"")
                    .await
                    .unwrap_err()
                    .status_code(),
                400
            );
        }
    }
}
