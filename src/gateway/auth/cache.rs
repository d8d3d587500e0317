//! A bounded, sharded cache whose entries expire: the store behind the TokenReview, access-review
//! and per-token client caches. Each entry carries its own time to live, so allow and deny
//! answers (or successes and failures) can expire at different times.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, RandomState};
use std::sync::Mutex;
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

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
