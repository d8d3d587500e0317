//! Per-object failure bookkeeping of the simulator: one object's failing operation is counted,
//! logged and backed off on its own (exponential, jittered, capped), so it never stops the pass
//! for every other object, as a controller's per-item rate limiter does. A change to the
//! object (a new resourceVersion) retries it at once, as a watch event re-queues an item.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::Rng;

/// First delay after a failure (before jitter).
pub const BASE_DELAY: Duration = Duration::from_millis(500);
/// Longest delay between two attempts on a failing object.
pub const MAX_DELAY: Duration = Duration::from_secs(300);

/// What failed: the step, the object's kind, namespace, name and UID (a recreated object of
/// the same name starts afresh).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// The simulator step (e.g. `delete-requests`), so one object's failure in one step does
    /// not hold back another step's work on it.
    pub step: &'static str,
    /// The object's kind.
    pub kind: &'static str,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its UID, when known.
    pub uid: String,
}

impl ObjectKey {
    /// The key of the object with `meta`, in `step`.
    pub fn of(step: &'static str, kind: &'static str, meta: &kube::core::ObjectMeta) -> Self {
        ObjectKey {
            step,
            kind,
            namespace: meta.namespace.clone().unwrap_or_default(),
            name: meta.name.clone().unwrap_or_default(),
            uid: meta.uid.clone().unwrap_or_default(),
        }
    }
}

/// The delay before attempt `failures + 1`: `BASE_DELAY * 2^(failures-1)`, capped at
/// `MAX_DELAY`, times `jitter` (in `[0.5, 1]`, so many objects failing together spread out).
pub fn backoff_delay(failures: u32, jitter: f64) -> Duration {
    let exponent = failures.saturating_sub(1).min(20);
    let delay = BASE_DELAY.saturating_mul(1u32 << exponent).min(MAX_DELAY);
    delay.mul_f64(jitter.clamp(0.5, 1.0))
}

#[derive(Debug, Clone)]
struct Backoff {
    failures: u32,
    retry_at: Instant,
    /// The resourceVersion that failed.
    version: String,
}

/// Failure counters and back-off state of one simulator.
#[derive(Debug, Default)]
pub struct Failures {
    total: AtomicU64,
    by_kind: Mutex<BTreeMap<&'static str, u64>>,
    backoff: Mutex<HashMap<ObjectKey, Backoff>>,
}

impl Failures {
    /// Whether work on `key` (at resourceVersion `version`) waits out its back-off at `now`.
    pub fn backing_off(&self, key: &ObjectKey, version: &str, now: Instant) -> bool {
        self.backoff
            .lock()
            .map(|b| {
                b.get(key)
                    .is_some_and(|state| now < state.retry_at && state.version == version)
            })
            .unwrap_or(false)
    }

    /// Records a failure of `key` (at resourceVersion `version`) at `now`; returns the delay
    /// before the next attempt.
    pub fn failed(&self, key: ObjectKey, version: &str, now: Instant) -> Duration {
        self.count(key.kind);
        let jitter = rand::rng().random_range(0.5..=1.0);
        let Ok(mut backoff) = self.backoff.lock() else {
            return Duration::ZERO;
        };
        let state = backoff.entry(key).or_insert(Backoff {
            failures: 0,
            retry_at: now,
            version: String::new(),
        });
        state.failures = state.failures.saturating_add(1);
        let delay = backoff_delay(state.failures, jitter);
        state.retry_at = now + delay;
        version.clone_into(&mut state.version);
        delay
    }

    /// Counts one failure of `kind` (with no object to back off, e.g. a list that failed).
    pub fn count(&self, kind: &'static str) {
        self.total.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut by_kind) = self.by_kind.lock() {
            *by_kind.entry(kind).or_default() += 1;
        }
    }

    /// Records a success of `key`: its back-off starts over.
    pub fn succeeded(&self, key: &ObjectKey) {
        if let Ok(mut backoff) = self.backoff.lock() {
            backoff.remove(key);
        }
    }

    /// Every failure counted so far.
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// Failures so far per kind.
    pub fn by_kind(&self) -> BTreeMap<String, u64> {
        self.by_kind
            .lock()
            .map(|m| m.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect())
            .unwrap_or_default()
    }

    /// How many objects are backed off now (failed last time they were tried).
    pub fn failing_objects(&self) -> usize {
        self.backoff.lock().map(|b| b.len()).unwrap_or(0)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey {
            step: "delete-requests",
            kind: "DeleteBackupRequest",
            namespace: "openshift-adp".into(),
            name: name.into(),
            uid: "u".into(),
        }
    }

    #[test]
    fn delays_double_with_jitter_and_stop_at_the_cap() {
        assert_eq!(backoff_delay(1, 1.0), BASE_DELAY);
        assert_eq!(backoff_delay(2, 1.0), BASE_DELAY * 2);
        assert_eq!(backoff_delay(3, 1.0), BASE_DELAY * 4);
        assert_eq!(backoff_delay(3, 0.5), BASE_DELAY * 2);
        // Jitter outside [0.5, 1] is clamped.
        assert_eq!(backoff_delay(1, 7.0), BASE_DELAY);
        assert_eq!(backoff_delay(1, 0.0), BASE_DELAY / 2);
        assert_eq!(backoff_delay(30, 1.0), MAX_DELAY);
        assert_eq!(backoff_delay(u32::MAX, 1.0), MAX_DELAY);
    }

    #[test]
    fn a_failing_object_is_backed_off_alone_and_reset_on_success() {
        let failures = Failures::default();
        let now = Instant::now();
        let first = failures.failed(key("stuck"), "1", now);
        assert!(first >= BASE_DELAY / 2 && first <= BASE_DELAY);
        assert!(failures.backing_off(&key("stuck"), "1", now));
        assert!(!failures.backing_off(&key("other"), "1", now));
        assert!(!failures.backing_off(&key("stuck"), "1", now + first));
        let second = failures.failed(key("stuck"), "1", now + first);
        assert!(second >= BASE_DELAY && second <= BASE_DELAY * 2);
        assert_eq!(failures.total(), 2);
        assert_eq!(failures.by_kind()["DeleteBackupRequest"], 2);
        assert_eq!(failures.failing_objects(), 1);
        failures.succeeded(&key("stuck"));
        assert!(!failures.backing_off(&key("stuck"), "1", now));
        assert_eq!(failures.failing_objects(), 0);
        // Counters keep history; the next failure starts from the base delay again.
        assert_eq!(failures.total(), 2);
        let again = failures.failed(key("stuck"), "1", now);
        assert!(again <= BASE_DELAY);
    }

    #[test]
    fn a_changed_object_is_retried_at_once_without_forgetting_its_failures() {
        let failures = Failures::default();
        let now = Instant::now();
        failures.failed(key("x"), "1", now);
        assert!(failures.backing_off(&key("x"), "1", now));
        assert!(!failures.backing_off(&key("x"), "2", now));
        let second = failures.failed(key("x"), "2", now);
        assert!(second >= BASE_DELAY, "still the second failure");
    }

    #[test]
    fn a_recreated_object_is_not_held_back_by_its_predecessor() {
        let failures = Failures::default();
        let now = Instant::now();
        failures.failed(key("x"), "1", now);
        let recreated = ObjectKey {
            uid: "v".into(),
            ..key("x")
        };
        assert!(!failures.backing_off(&recreated, "1", now));
    }
}
