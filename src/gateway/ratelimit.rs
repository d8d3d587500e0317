//! Per-user rate limiting: a token bucket per caller (keyed by username once authenticated),
//! with the figures the `RateLimit-*` response headers report.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Settings: `burst` requests at once, refilled at `per_second`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateLimitConfig {
    /// Bucket size.
    pub burst: u32,
    /// Refill rate in requests per second.
    pub per_second: f64,
}

impl Default for RateLimitConfig {
    fn default() -> Self {
        RateLimitConfig {
            burst: 200,
            per_second: 50.0,
        }
    }
}

/// The outcome of one request's check, for the response headers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateLimitDecision {
    /// Whether the request may proceed.
    pub allowed: bool,
    /// Bucket size.
    pub limit: u32,
    /// Requests left right now.
    pub remaining: u32,
    /// Seconds until the bucket is full again (or, when refused, until one request is
    /// allowed).
    pub reset: Duration,
}

struct Bucket {
    tokens: f64,
    updated: Instant,
}

/// Buckets of every caller seen recently.
pub struct RateLimiter {
    config: RateLimitConfig,
    buckets: Mutex<HashMap<String, Bucket>>,
    max_callers: usize,
}

impl std::fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimiter")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl RateLimiter {
    /// A limiter with `config`.
    pub fn new(config: RateLimitConfig) -> Self {
        RateLimiter {
            config,
            buckets: Mutex::new(HashMap::new()),
            max_callers: 100_000,
        }
    }

    /// Takes one request from `caller`'s bucket at `now`.
    pub fn check_at(&self, caller: &str, now: Instant) -> RateLimitDecision {
        let burst = f64::from(self.config.burst.max(1));
        let rate = self.config.per_second.max(0.001);
        let Ok(mut buckets) = self.buckets.lock() else {
            return RateLimitDecision {
                allowed: true,
                limit: self.config.burst,
                remaining: self.config.burst,
                reset: Duration::ZERO,
            };
        };
        if buckets.len() >= self.max_callers && !buckets.contains_key(caller) {
            // Full buckets carry no information: forget them.
            buckets.retain(|_, bucket| {
                bucket.tokens + now.duration_since(bucket.updated).as_secs_f64() * rate < burst
            });
        }
        let bucket = buckets.entry(caller.to_string()).or_insert(Bucket {
            tokens: burst,
            updated: now,
        });
        let elapsed = now.saturating_duration_since(bucket.updated).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * rate).min(burst);
        bucket.updated = now;
        let allowed = bucket.tokens >= 1.0;
        if allowed {
            bucket.tokens -= 1.0;
        }
        let reset = if allowed {
            (burst - bucket.tokens) / rate
        } else {
            (1.0 - bucket.tokens) / rate
        };
        RateLimitDecision {
            allowed,
            limit: self.config.burst,
            remaining: bucket.tokens.floor().max(0.0) as u32,
            reset: Duration::from_secs_f64(reset.max(0.0)),
        }
    }

    /// Takes one request from `caller`'s bucket now.
    pub fn check(&self, caller: &str) -> RateLimitDecision {
        self.check_at(caller, Instant::now())
    }

    /// The settings.
    pub fn config(&self) -> RateLimitConfig {
        self.config
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_refusal_then_refill() {
        let limiter = RateLimiter::new(RateLimitConfig {
            burst: 3,
            per_second: 1.0,
        });
        let now = Instant::now();
        for expected_remaining in [2, 1, 0] {
            let decision = limiter.check_at("alice", now);
            assert!(decision.allowed);
            assert_eq!(decision.remaining, expected_remaining);
        }
        let refused = limiter.check_at("alice", now);
        assert!(!refused.allowed);
        assert!(refused.reset <= Duration::from_secs(1) && refused.reset > Duration::ZERO);
        // Another caller has its own bucket.
        assert!(limiter.check_at("bob", now).allowed);
        // One second later one more request is allowed.
        assert!(
            limiter
                .check_at("alice", now + Duration::from_secs(1))
                .allowed
        );
        assert!(
            !limiter
                .check_at("alice", now + Duration::from_secs(1))
                .allowed
        );
    }

    #[test]
    fn the_bucket_never_exceeds_its_size() {
        let limiter = RateLimiter::new(RateLimitConfig {
            burst: 2,
            per_second: 100.0,
        });
        let now = Instant::now();
        limiter.check_at("c", now);
        let later = limiter.check_at("c", now + Duration::from_secs(3600));
        assert_eq!(later.remaining, 1);
    }
}
