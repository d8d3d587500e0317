//! How many live streams (SSE and GraphQL subscriptions together) one user may hold open on a
//! gateway replica: each costs memory and a share of every change's delivery, so one user's
//! runaway dashboard or leaked EventSource must not take the replica's capacity from the
//! other tenants. Over the limit, a new stream is refused with 429 (`too-many-streams`) and
//! the streams already open are untouched.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::gateway::error::GatewayError;

/// Default [`StreamSlots`] limit per user.
pub const DEFAULT_MAX_STREAMS_PER_USER: usize = 50;

/// Open streams per user, bounded.
#[derive(Debug)]
pub struct StreamSlots {
    limit: usize,
    open: Arc<Mutex<HashMap<Arc<str>, usize>>>,
}

/// One open stream, counted until dropped.
#[derive(Debug)]
pub struct StreamSlot {
    user: Arc<str>,
    open: Arc<Mutex<HashMap<Arc<str>, usize>>>,
}

impl StreamSlots {
    /// At most `limit` (at least 1) open streams per user.
    pub fn new(limit: usize) -> Self {
        StreamSlots {
            limit: limit.max(1),
            open: Arc::default(),
        }
    }

    /// The limit per user.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// A slot for one more stream of `user`, or [`GatewayError::TooManyStreams`].
    pub fn open(&self, user: &str) -> Result<StreamSlot, GatewayError> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let key: Arc<str> = match open.get_key_value(user) {
            Some((key, _)) => Arc::clone(key),
            None => Arc::from(user),
        };
        let count = open.entry(Arc::clone(&key)).or_insert(0);
        if *count >= self.limit {
            return Err(GatewayError::TooManyStreams { limit: self.limit });
        }
        *count += 1;
        Ok(StreamSlot {
            user: key,
            open: Arc::clone(&self.open),
        })
    }

    /// Streams `user` has open now.
    pub fn open_by(&self, user: &str) -> usize {
        let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        open.get(user).copied().unwrap_or(0)
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = open.get_mut(&self.user) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                // Users with nothing open take no room.
                open.remove(&self.user);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn a_user_over_the_limit_is_refused_and_others_are_not() {
        let slots = StreamSlots::new(2);
        let first = slots.open("alice").unwrap();
        let _second = slots.open("alice").unwrap();
        let refused = slots.open("alice").unwrap_err();
        assert!(matches!(refused, GatewayError::TooManyStreams { limit: 2 }));
        assert_eq!(refused.status_code(), 429);
        assert_eq!(refused.code(), "too-many-streams");
        // Another user has their own count.
        let _bob = slots.open("bob").unwrap();
        assert_eq!(slots.open_by("alice"), 2);
        // Closing one frees its slot.
        drop(first);
        assert_eq!(slots.open_by("alice"), 1);
        let _again = slots.open("alice").unwrap();
    }

    #[test]
    fn closed_streams_leave_no_entry() {
        let slots = StreamSlots::new(3);
        let slot = slots.open("carol").unwrap();
        drop(slot);
        assert_eq!(slots.open_by("carol"), 0);
        assert!(slots.open.lock().unwrap().is_empty());
    }

    #[test]
    fn a_zero_limit_still_allows_one() {
        let slots = StreamSlots::new(0);
        assert_eq!(slots.limit(), 1);
        let _one = slots.open("dave").unwrap();
        assert!(slots.open("dave").is_err());
    }
}
