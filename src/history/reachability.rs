//! Failing fast while the history database is known to be unreachable: once a call found the
//! server gone, the calls of the next [`RETRY_UNREACHABLE_AFTER`] are answered
//! [`HistoryError::Unavailable`] at once instead of each waiting out the pool's connect
//! timeout (seconds per request, every gateway request holding a task meanwhile); after that
//! one call at a time goes through, after a `SELECT 1` given at most [`RETRY_TIMEOUT`] found
//! the server back.
//!
//! Pure bookkeeping on instants handed in; [`super::sql::SqlCore`] keeps one per store.

use std::time::{Duration, Instant};

use super::HistoryError;

/// How long calls fail fast after the server was last found unreachable.
pub const RETRY_UNREACHABLE_AFTER: Duration = Duration::from_secs(1);

/// How long the `SELECT 1` of a call that tries an unreachable server again may wait for it
/// (connecting included) before the call is answered [`HistoryError::Unavailable`] too.
pub const RETRY_TIMEOUT: Duration = Duration::from_secs(1);

/// How a call admitted by [`Reachability::admit`] goes to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// The server is reachable as far as known: as usual.
    Usual,
    /// The server was unreachable: a `SELECT 1` within [`RETRY_TIMEOUT`] goes first.
    Retry,
}

/// What is known of the server's reachability.
#[derive(Debug, Default, Clone)]
pub struct Reachability {
    /// When a call first found the server unreachable (`None`: reachable, as far as known).
    unreachable_since: Option<Instant>,
    /// When the last call that went to the unreachable server started or failed: no other
    /// goes before [`RETRY_UNREACHABLE_AFTER`] has passed since.
    last_try: Option<Instant>,
    /// The last failure's words, repeated to the calls that fail fast.
    last_error: String,
}

impl Reachability {
    /// Whether a call starting `now` may go to the server; if not, the error to answer. A
    /// call let through while the server is unreachable is the next try (no other goes for
    /// [`RETRY_UNREACHABLE_AFTER`], so a cancelled try never blocks the ones after it).
    pub fn admit(&mut self, now: Instant) -> Result<Attempt, HistoryError> {
        let Some(since) = self.unreachable_since else {
            return Ok(Attempt::Usual);
        };
        let waited = self.last_try.map_or(RETRY_UNREACHABLE_AFTER, |t| {
            now.saturating_duration_since(t)
        });
        if waited >= RETRY_UNREACHABLE_AFTER {
            self.last_try = Some(now);
            return Ok(Attempt::Retry);
        }
        Err(HistoryError::Unavailable(format!(
            "{} (unreachable for {} s; tried again every {} s)",
            self.last_error,
            now.saturating_duration_since(since).as_secs(),
            RETRY_UNREACHABLE_AFTER.as_secs()
        )))
    }

    /// What a call that went to the server ended with, at `now`.
    pub fn observe<T>(&mut self, result: &Result<T, HistoryError>, now: Instant) {
        match result {
            Err(HistoryError::Unavailable(message)) => {
                self.unreachable_since.get_or_insert(now);
                self.last_try = Some(now);
                message.clone_into(&mut self.last_error);
            }
            // Any answer from the server, an error of its own included, means it is there.
            _ => {
                self.unreachable_since = None;
                self.last_try = None;
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn unavailable() -> Result<(), HistoryError> {
        Err(HistoryError::Unavailable(
            "postgres://db:5432/nac: connection refused".into(),
        ))
    }

    #[test]
    fn a_reachable_server_lets_every_call_through() {
        let mut reach = Reachability::default();
        let t0 = Instant::now();
        for i in 0..5 {
            assert_eq!(
                reach.admit(t0 + Duration::from_millis(i)).unwrap(),
                Attempt::Usual
            );
        }
        reach.observe(&Ok::<(), HistoryError>(()), t0);
        assert_eq!(reach.admit(t0).unwrap(), Attempt::Usual);
    }

    #[test]
    fn after_a_failure_calls_fail_fast_with_its_words_then_one_tries_again() {
        let mut reach = Reachability::default();
        let t0 = Instant::now();
        reach.observe(&unavailable(), t0);
        let fast = reach.admit(t0 + Duration::from_millis(300)).unwrap_err();
        assert!(fast.is_unavailable());
        assert!(fast.to_string().contains("connection refused"), "{fast}");
        // The next try, once the interval passed; the calls meanwhile fail fast.
        let next = t0 + RETRY_UNREACHABLE_AFTER;
        assert_eq!(reach.admit(next).unwrap(), Attempt::Retry);
        assert!(reach.admit(next + Duration::from_millis(10)).is_err());
        // It failed too: another interval from its failure.
        let failed = next + Duration::from_secs(5);
        reach.observe(&unavailable(), failed);
        assert!(reach.admit(failed + Duration::from_millis(999)).is_err());
        let message = reach
            .admit(failed + Duration::from_millis(500))
            .unwrap_err()
            .to_string();
        assert!(message.contains("unreachable for 6 s"), "{message}");
        assert_eq!(
            reach.admit(failed + RETRY_UNREACHABLE_AFTER).unwrap(),
            Attempt::Retry
        );
    }

    #[test]
    fn a_cancelled_try_does_not_block_the_next() {
        let mut reach = Reachability::default();
        let t0 = Instant::now();
        reach.observe(&unavailable(), t0);
        // Let through, then dropped without an answer (the request was cancelled).
        assert!(reach.admit(t0 + RETRY_UNREACHABLE_AFTER).is_ok());
        assert!(reach.admit(t0 + 2 * RETRY_UNREACHABLE_AFTER).is_ok());
    }

    #[test]
    fn any_answer_from_the_server_ends_the_outage() {
        let mut reach = Reachability::default();
        let t0 = Instant::now();
        reach.observe(&unavailable(), t0);
        let next = t0 + RETRY_UNREACHABLE_AFTER;
        assert!(reach.admit(next).is_ok());
        reach.observe(&Err::<(), _>(HistoryError::Database("syntax".into())), next);
        assert_eq!(
            reach.admit(next + Duration::from_millis(1)).unwrap(),
            Attempt::Usual
        );
        assert_eq!(
            reach.admit(next + Duration::from_millis(2)).unwrap(),
            Attempt::Usual
        );
    }
}
