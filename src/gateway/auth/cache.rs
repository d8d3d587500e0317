//! A bounded, sharded cache whose entries expire: the store behind the TokenReview, access-review
//! and per-token client caches. Each entry carries its own time to live, so allow and deny
//! answers (or successes and failures) can expire at different times. [`SingleFlight`] makes
//! concurrent misses of one key share one review.

use std::collections::HashMap;
use std::future::Future;
use std::hash::{BuildHasher, Hash, RandomState};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

const SHARDS: usize = 16;

struct Slot<V> {
    value: V,
    expires: Instant,
}

/// A map from `K` to `V` holding at most `capacity` entries, each for its own time to live.
///
/// When a shard is full, expired entries go first, then the ones closest to expiry (a tenth of
/// the shard at once, so a full cache does not pay a scan on every insert).
pub struct TtlCache<K, V> {
    shards: Vec<Mutex<HashMap<K, Slot<V>>>>,
    shard_capacity: usize,
    hasher: RandomState,
}

impl<K: Hash + Eq + Clone, V: Clone> TtlCache<K, V> {
    /// An empty cache for at most `capacity` entries (at least one per shard).
    pub fn new(capacity: usize) -> Self {
        let shard_capacity = capacity.div_ceil(SHARDS).max(1);
        TtlCache {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            shard_capacity,
            hasher: RandomState::new(),
        }
    }

    fn shard(&self, key: &K) -> Option<&Mutex<HashMap<K, Slot<V>>>> {
        let index = (self.hasher.hash_one(key) as usize) % SHARDS;
        self.shards.get(index)
    }

    /// The value under `key` if it has not expired at `now`.
    pub fn get_at(&self, key: &K, now: Instant) -> Option<V> {
        let mut shard = self.shard(key)?.lock().ok()?;
        match shard.get(key) {
            Some(slot) if slot.expires > now => Some(slot.value.clone()),
            Some(_) => {
                shard.remove(key);
                None
            }
            None => None,
        }
    }

    /// The value under `key` if it has not expired.
    pub fn get(&self, key: &K) -> Option<V> {
        self.get_at(key, Instant::now())
    }

    /// Stores `value` under `key` until `now + ttl`. A zero TTL stores nothing.
    pub fn insert_at(&self, key: K, value: V, ttl: Duration, now: Instant) {
        if ttl.is_zero() {
            return;
        }
        let Some(shard) = self.shard(&key) else {
            return;
        };
        let Ok(mut shard) = shard.lock() else {
            return;
        };
        if shard.len() >= self.shard_capacity && !shard.contains_key(&key) {
            shard.retain(|_, slot| slot.expires > now);
            if shard.len() >= self.shard_capacity {
                let mut by_expiry: Vec<(Instant, K)> = shard
                    .iter()
                    .map(|(key, slot)| (slot.expires, key.clone()))
                    .collect();
                by_expiry.sort_by_key(|(expires, _)| *expires);
                let evict = (self.shard_capacity / 10).max(1);
                for (_, key) in by_expiry.into_iter().take(evict) {
                    shard.remove(&key);
                }
            }
        }
        shard.insert(
            key,
            Slot {
                value,
                expires: now + ttl,
            },
        );
    }

    /// Stores `value` under `key` for `ttl`.
    pub fn insert(&self, key: K, value: V, ttl: Duration) {
        self.insert_at(key, value, ttl, Instant::now());
    }

    /// Number of entries held (expired ones included until they are noticed).
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .filter_map(|shard| shard.lock().ok().map(|shard| shard.len()))
            .sum()
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The most entries the cache holds.
    pub fn capacity(&self) -> usize {
        self.shard_capacity * SHARDS
    }
}

/// Concurrent calls for one key share the first one's answer. When a cached answer expires,
/// every long-lived stream of that user misses at the same moment: without this, each would
/// send the API server the same review.
pub struct SingleFlight<K, V> {
    calls: Mutex<HashMap<K, Arc<tokio::sync::OnceCell<V>>>>,
}

impl<K, V> Default for SingleFlight<K, V> {
    fn default() -> Self {
        SingleFlight {
            calls: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Hash + Eq + Clone, V: Clone> SingleFlight<K, V> {
    /// `call`'s answer, or the answer of the call for `key` already under way. `call` should
    /// look in the cache first: a caller that missed just before the previous call finished
    /// starts a new one. A cancelled call hands the work to one of its waiters.
    pub async fn run<F, Fut>(&self, key: K, call: F) -> V
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = V>,
    {
        let cell = {
            let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(calls.entry(key.clone()).or_default())
        };
        let value = cell.get_or_init(call).await.clone();
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        if calls
            .get(&key)
            .is_some_and(|current| Arc::ptr_eq(current, &cell))
        {
            calls.remove(&key);
        }
        value
    }

    /// Calls under way.
    pub fn in_flight(&self) -> usize {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn concurrent_calls_for_one_key_share_one_call() {
        let flights: Arc<SingleFlight<&str, u32>> = Arc::default();
        let calls = Arc::new(AtomicUsize::new(0));
        let (release, released) = tokio::sync::watch::channel(false);
        let mut waiters = Vec::new();
        for _ in 0..50 {
            let (flights, calls, mut released) =
                (Arc::clone(&flights), Arc::clone(&calls), released.clone());
            waiters.push(tokio::spawn(async move {
                flights
                    .run("alice", || async move {
                        calls.fetch_add(1, Ordering::SeqCst);
                        let _ = released.wait_for(|go| *go).await;
                        7
                    })
                    .await
            }));
        }
        // Another key is its own call.
        let other = flights.run("bob", || async { 9 }).await;
        assert_eq!(other, 9);
        tokio::task::yield_now().await;
        release.send_replace(true);
        for waiter in waiters {
            assert_eq!(waiter.await.unwrap(), 7);
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(flights.in_flight(), 0);
        // Once done, the next call runs again.
        assert_eq!(flights.run("alice", || async { 8 }).await, 8);
    }

    #[tokio::test]
    async fn a_cancelled_call_hands_over_to_a_waiter() {
        let flights: Arc<SingleFlight<&str, u32>> = Arc::default();
        let first = {
            let flights = Arc::clone(&flights);
            tokio::spawn(async move {
                flights
                    .run("k", || async {
                        tokio::time::sleep(Duration::from_secs(3600)).await;
                        1
                    })
                    .await
            })
        };
        tokio::task::yield_now().await;
        let second = {
            let flights = Arc::clone(&flights);
            tokio::spawn(async move { flights.run("k", || async { 2 }).await })
        };
        tokio::task::yield_now().await;
        first.abort();
        assert_eq!(second.await.unwrap(), 2);
    }

    #[test]
    fn entries_expire_after_their_own_ttl() {
        let cache = TtlCache::new(100);
        let now = Instant::now();
        cache.insert_at("allow", 1, Duration::from_secs(30), now);
        cache.insert_at("deny", 2, Duration::from_secs(5), now);
        let later = now + Duration::from_secs(6);
        assert_eq!(cache.get_at(&"allow", later), Some(1));
        assert_eq!(cache.get_at(&"deny", later), None);
        assert_eq!(cache.get_at(&"allow", now + Duration::from_secs(31)), None);
    }

    #[test]
    fn zero_ttl_stores_nothing() {
        let cache = TtlCache::new(10);
        cache.insert("k", 1, Duration::ZERO);
        assert!(cache.is_empty());
    }

    #[test]
    fn size_stays_bounded_and_fresh_entries_survive() {
        let cache = TtlCache::new(160);
        let now = Instant::now();
        for i in 0..10_000u32 {
            cache.insert_at(i, i, Duration::from_secs(60 + u64::from(i)), now);
        }
        assert!(cache.len() <= cache.capacity(), "{} entries", cache.len());
        // The newest insert (longest TTL) is still there.
        assert_eq!(cache.get_at(&9_999, now), Some(9_999));
    }

    #[test]
    fn expired_entries_are_evicted_before_live_ones() {
        // 16 shards of 100: every shard fills up with entries that then expire.
        let cache = TtlCache::new(1600);
        let now = Instant::now();
        for i in 0..5000u32 {
            cache.insert_at(i, i, Duration::from_secs(1), now);
        }
        let later = now + Duration::from_secs(2);
        // Fewer live entries than one shard holds: none may be evicted.
        for i in 10_000..10_050u32 {
            cache.insert_at(i, i, Duration::from_secs(60), later);
        }
        for i in 10_000..10_050u32 {
            assert_eq!(cache.get_at(&i, later), Some(i));
        }
    }
}
