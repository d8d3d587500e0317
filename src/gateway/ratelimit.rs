//! Rate limiting:
//! - per user ([`RateLimiter`]): a token bucket per caller (keyed by username once
//!   authenticated), with the figures the `RateLimit-*` response headers report;
//! - before authentication ([`PreAuthLimiter`]): a token bucket per client address that only
//!   requests whose token is not already known to be good draw from (a TokenReview is needed,
//!   or the token was refused), so a flood of random tokens cannot turn into a flood of
//!   TokenReviews against the API server, while callers with a cached valid token are never
//!   slowed by it.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::extract::ConnectInfo;
use axum::http::{Extensions, HeaderMap};

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

/// Settings of the pre-authentication limiter: `burst` unverified requests at once per client
/// address, refilled at `per_second`; at most `max_clients` addresses remembered.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PreAuthLimitConfig {
    /// Bucket size (requests whose token needs a TokenReview or was refused).
    pub burst: u32,
    /// Refill rate in requests per second.
    pub per_second: f64,
    /// Most client addresses remembered; beyond it full buckets are forgotten first, then the
    /// least recently used.
    pub max_clients: usize,
}

impl Default for PreAuthLimitConfig {
    fn default() -> Self {
        PreAuthLimitConfig {
            burst: 30,
            per_second: 5.0,
            max_clients: 10_000,
        }
    }
}

/// Who a request comes from, as far as the pre-authentication limiter can tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClientAddress {
    /// An IPv4 address, or the /64 network of an IPv6 address (one host usually holds a whole
    /// /64, so single IPv6 addresses would give it endless fresh buckets).
    Ip(IpAddr),
    /// No address known (the server was not run with connect info, e.g. in-process tests):
    /// every such request shares one bucket.
    Unknown,
}

impl ClientAddress {
    /// The bucket key of `ip`: IPv4 (also IPv4-mapped IPv6) as is, IPv6 by its /64 network.
    pub fn of_ip(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(v4) => ClientAddress::Ip(IpAddr::V4(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => ClientAddress::Ip(IpAddr::V4(v4)),
                None => {
                    let network = u128::from(v6) & !((1u128 << 64) - 1);
                    ClientAddress::Ip(IpAddr::V6(Ipv6Addr::from(network)))
                }
            },
        }
    }

    /// The client of a request: the last `X-Forwarded-For` entry (the one the proxy in front
    /// added) when `trust_forwarded_for`, else the TCP peer from [`ConnectInfo`], else
    /// [`ClientAddress::Unknown`]. Without `trust_forwarded_for` forwarded headers are ignored:
    /// anyone can write them.
    pub fn from_request(
        extensions: &Extensions,
        headers: &HeaderMap,
        trust_forwarded_for: bool,
    ) -> Self {
        if trust_forwarded_for && let Some(ip) = forwarded_for(headers) {
            return ClientAddress::of_ip(ip);
        }
        match extensions.get::<ConnectInfo<SocketAddr>>() {
            Some(ConnectInfo(peer)) => ClientAddress::of_ip(peer.ip()),
            None => ClientAddress::Unknown,
        }
    }
}

impl std::fmt::Display for ClientAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientAddress::Ip(ip @ IpAddr::V6(_)) => write!(f, "{ip}/64"),
            ClientAddress::Ip(ip) => write!(f, "{ip}"),
            ClientAddress::Unknown => f.write_str("unknown"),
        }
    }
}

/// The last address of the last `X-Forwarded-For` header (`ip` or `ip:port`), if it parses.
fn forwarded_for(headers: &HeaderMap) -> Option<IpAddr> {
    let value = headers.get_all("x-forwarded-for").iter().next_back()?;
    let last = value.to_str().ok()?.rsplit(',').next()?.trim();
    last.parse::<IpAddr>()
        .ok()
        .or_else(|| last.parse::<SocketAddr>().ok().map(|s| s.ip()))
}

/// Token buckets per client address for requests whose token is not known to be good.
pub struct PreAuthLimiter {
    config: PreAuthLimitConfig,
    buckets: Mutex<HashMap<ClientAddress, Bucket>>,
}

impl std::fmt::Debug for PreAuthLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreAuthLimiter")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl PreAuthLimiter {
    /// A limiter with `config`.
    pub fn new(config: PreAuthLimitConfig) -> Self {
        PreAuthLimiter {
            config,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one request from `client`'s bucket at `now`; when it is empty, the time until
    /// one request is allowed again (whole seconds, at least one: what `Retry-After` says).
    pub fn check_at(&self, client: ClientAddress, now: Instant) -> Result<(), Duration> {
        let burst = f64::from(self.config.burst.max(1));
        let rate = self.config.per_second.max(0.001);
        let max_clients = self.config.max_clients.max(1);
        // A panic elsewhere while holding the lock leaves consistent buckets: keep using them.
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        if buckets.len() >= max_clients && !buckets.contains_key(&client) {
            // Full buckets carry no information: forget them first.
            buckets.retain(|_, bucket| {
                bucket.tokens + now.saturating_duration_since(bucket.updated).as_secs_f64() * rate
                    < burst
            });
            while buckets.len() >= max_clients {
                let Some(stalest) = buckets
                    .iter()
                    .min_by_key(|(_, bucket)| bucket.updated)
                    .map(|(key, _)| *key)
                else {
                    break;
                };
                buckets.remove(&stalest);
            }
        }
        let bucket = buckets.entry(client).or_insert(Bucket {
            tokens: burst,
            updated: now,
        });
        let elapsed = now.saturating_duration_since(bucket.updated).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * rate).min(burst);
        bucket.updated = bucket.updated.max(now);
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            let wait = ((1.0 - bucket.tokens) / rate).ceil().max(1.0);
            Err(Duration::from_secs_f64(wait.min(86_400.0)))
        }
    }

    /// Takes one request from `client`'s bucket now.
    pub fn check(&self, client: ClientAddress) -> Result<(), Duration> {
        self.check_at(client, Instant::now())
    }

    /// How many client addresses are remembered.
    pub fn tracked(&self) -> usize {
        self.buckets
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// The settings.
    pub fn config(&self) -> PreAuthLimitConfig {
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

    fn ip(text: &str) -> ClientAddress {
        ClientAddress::of_ip(text.parse().unwrap())
    }

    fn pre_auth(burst: u32, per_second: f64, max_clients: usize) -> PreAuthLimiter {
        PreAuthLimiter::new(PreAuthLimitConfig {
            burst,
            per_second,
            max_clients,
        })
    }

    #[test]
    fn pre_auth_burst_then_retry_after_then_refill() {
        let limiter = pre_auth(3, 0.5, 100);
        let now = Instant::now();
        let client = ip("10.0.0.1");
        for _ in 0..3 {
            assert_eq!(limiter.check_at(client, now), Ok(()));
        }
        // Empty: one request comes back after 1 / 0.5 = 2 s.
        assert_eq!(limiter.check_at(client, now), Err(Duration::from_secs(2)));
        // Refusals take nothing more: the wait does not grow.
        assert_eq!(limiter.check_at(client, now), Err(Duration::from_secs(2)));
        // Half-way, one more second; a fraction of a second rounds up to a whole one.
        assert_eq!(
            limiter.check_at(client, now + Duration::from_secs(1)),
            Err(Duration::from_secs(1))
        );
        assert_eq!(
            limiter.check_at(client, now + Duration::from_millis(1900)),
            Err(Duration::from_secs(1))
        );
        assert_eq!(
            limiter.check_at(client, now + Duration::from_secs(2)),
            Ok(())
        );
        assert!(
            limiter
                .check_at(client, now + Duration::from_secs(2))
                .is_err()
        );
        // Never more than the burst, however long the client was away.
        let later = now + Duration::from_secs(3600);
        for _ in 0..3 {
            assert_eq!(limiter.check_at(client, later), Ok(()));
        }
        assert!(limiter.check_at(client, later).is_err());
    }

    #[test]
    fn pre_auth_buckets_are_per_address_and_unknown_is_one_bucket() {
        let limiter = pre_auth(2, 1.0, 100);
        let now = Instant::now();
        for _ in 0..2 {
            assert!(limiter.check_at(ip("10.0.0.1"), now).is_ok());
            assert!(limiter.check_at(ClientAddress::Unknown, now).is_ok());
        }
        assert!(limiter.check_at(ip("10.0.0.1"), now).is_err());
        assert!(limiter.check_at(ClientAddress::Unknown, now).is_err());
        assert!(limiter.check_at(ip("10.0.0.2"), now).is_ok());
        // An IPv4-mapped IPv6 peer is the IPv4 address.
        assert!(limiter.check_at(ip("::ffff:10.0.0.1"), now).is_err());
        // IPv6 addresses of one /64 share a bucket; another /64 has its own.
        assert!(limiter.check_at(ip("2001:db8:1:2::1"), now).is_ok());
        assert!(limiter.check_at(ip("2001:db8:1:2:ffff::9"), now).is_ok());
        assert!(limiter.check_at(ip("2001:db8:1:2::77"), now).is_err());
        assert!(limiter.check_at(ip("2001:db8:1:3::1"), now).is_ok());
        assert_eq!(ip("2001:db8:1:2::1").to_string(), "2001:db8:1:2::/64");
        assert_eq!(ip("10.0.0.1").to_string(), "10.0.0.1");
        assert_eq!(ClientAddress::Unknown.to_string(), "unknown");
    }

    #[test]
    fn pre_auth_memory_is_bounded_and_full_buckets_go_first() {
        let limiter = pre_auth(2, 1.0, 3);
        let now = Instant::now();
        // a and b are emptied; c used once.
        for _ in 0..2 {
            limiter.check_at(ip("10.0.0.1"), now).unwrap();
            limiter
                .check_at(ip("10.0.0.2"), now + Duration::from_millis(1))
                .unwrap();
        }
        limiter
            .check_at(ip("10.0.0.3"), now + Duration::from_millis(1))
            .unwrap();
        assert_eq!(limiter.tracked(), 3);
        // Nothing is full: the least recently used (a) is evicted for d.
        limiter
            .check_at(ip("10.0.0.4"), now + Duration::from_millis(2))
            .unwrap();
        assert_eq!(limiter.tracked(), 3);
        assert!(
            limiter
                .check_at(ip("10.0.0.2"), now + Duration::from_millis(2))
                .is_err(),
            "b is remembered (still empty)"
        );
        assert!(
            limiter
                .check_at(ip("10.0.0.1"), now + Duration::from_millis(3))
                .is_ok(),
            "a was forgotten: it starts with a full bucket again"
        );
        assert_eq!(limiter.tracked(), 3);
        // Much later every bucket has refilled: they are all forgotten for the newcomer.
        let later = now + Duration::from_secs(60);
        limiter.check_at(ip("10.0.0.5"), later).unwrap();
        assert_eq!(limiter.tracked(), 1);
        for n in 0..1000 {
            let _ = limiter.check_at(ip(&format!("10.1.{}.{}", n / 256, n % 256)), later);
            assert!(limiter.tracked() <= 3);
        }
    }

    #[test]
    fn the_client_is_the_peer_unless_a_trusted_proxy_forwards_it() {
        let mut extensions = Extensions::new();
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-forwarded-for",
            "203.0.113.9, 198.51.100.7".parse().unwrap(),
        );
        // Neither peer nor trust: one shared bucket.
        assert_eq!(
            ClientAddress::from_request(&extensions, &headers, false),
            ClientAddress::Unknown
        );
        // Trusted: the entry the proxy added (the last one).
        assert_eq!(
            ClientAddress::from_request(&extensions, &headers, true),
            ip("198.51.100.7")
        );
        extensions.insert(ConnectInfo::<SocketAddr>("192.0.2.5:4242".parse().unwrap()));
        // Not trusted: the header changes nothing.
        assert_eq!(
            ClientAddress::from_request(&extensions, &headers, false),
            ip("192.0.2.5")
        );
        assert_eq!(
            ClientAddress::from_request(&extensions, &headers, true),
            ip("198.51.100.7")
        );
        // A garbled header falls back to the peer.
        headers.insert("x-forwarded-for", "not-an-address".parse().unwrap());
        assert_eq!(
            ClientAddress::from_request(&extensions, &headers, true),
            ip("192.0.2.5")
        );
        headers.insert("x-forwarded-for", "[2001:db8::1]:443".parse().unwrap());
        assert_eq!(
            ClientAddress::from_request(&extensions, &headers, true),
            ip("2001:db8::")
        );
    }
}
