//! The controllers' clock: wall-clock time in production, a clock tests can move forward so
//! day-long grace periods pass in milliseconds. Decisions take `now` as a plain value; only
//! the controller shells ask a clock.
use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// Where "now" comes from.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// Wall-clock time.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// Wall-clock time plus an offset that only grows (tests call [`ManualClock::advance`]).
#[derive(Debug, Default)]
pub struct ManualClock {
    offset: Mutex<SignedDuration>,
}

impl ManualClock {
    /// A clock showing wall-clock time until advanced.
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the clock `by` forward.
    pub fn advance(&self, by: Duration) {
        if let Ok(mut offset) = self.offset.lock() {
            let by = SignedDuration::try_from(by).unwrap_or(SignedDuration::MAX);
            *offset = offset.saturating_add(by);
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        let offset = self
            .offset
            .lock()
            .map(|o| *o)
            .unwrap_or(SignedDuration::ZERO);
        Timestamp::now()
            .checked_add(offset)
            .unwrap_or(Timestamp::MAX)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_forward_when_advanced() {
        let clock = ManualClock::new();
        let before = clock.now();
        clock.advance(Duration::from_secs(72 * 3600));
        let after = clock.now();
        let passed = after.duration_since(before);
        assert!(passed >= SignedDuration::from_hours(72), "{passed:?}");
        assert!(passed < SignedDuration::from_hours(73), "{passed:?}");
        assert!(SystemClock.now() < after);
    }
}
