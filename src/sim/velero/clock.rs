//! The simulator's clock: real time, or real time sped up by a factor so tests and demos can
//! watch TTLs expire, schedules fire and download URLs lapse without waiting hours; and times
//! written and read as Kubernetes does ([`timestamp`], [`parse_time`]).
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::Value;

/// A clock running `scale` times faster than real time from the moment it was made.
#[derive(Debug, Clone)]
pub struct SimClock {
    started_real: Instant,
    started_virtual: DateTime<Utc>,
    scale: f64,
}

impl SimClock {
    /// Real time (`scale` 1).
    pub fn real() -> Self {
        Self::scaled(1.0)
    }

    /// Time running `scale` times faster than real time (values ≤ 0 mean 1).
    pub fn scaled(scale: f64) -> Self {
        SimClock {
            started_real: Instant::now(),
            started_virtual: Utc::now(),
            scale: if scale > 0.0 && scale.is_finite() {
                scale
            } else {
                1.0
            },
        }
    }

    /// The simulated now.
    pub fn now(&self) -> DateTime<Utc> {
        let elapsed = self.started_real.elapsed().as_secs_f64() * self.scale;
        let elapsed = chrono::Duration::milliseconds((elapsed * 1000.0) as i64);
        self.started_virtual + elapsed
    }

    /// How long to really wait for `simulated` to pass.
    pub fn real_duration(&self, simulated: Duration) -> Duration {
        simulated.div_f64(self.scale)
    }

    /// Sleeps until `simulated` time has passed.
    pub async fn sleep(&self, simulated: Duration) {
        tokio::time::sleep(self.real_duration(simulated)).await;
    }

    /// The clock as the signed-URL server takes it.
    pub fn as_fn(&self) -> super::signed_url::Clock {
        let clock = self.clone();
        Arc::new(move || clock.now())
    }
}

/// RFC 3339 as Kubernetes writes times.
pub fn timestamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Parses a time field of an object read as JSON.
pub fn parse_time(value: Option<&Value>) -> Option<DateTime<Utc>> {
    value
        .and_then(Value::as_str)
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn scaled_clock_runs_faster() {
        let clock = SimClock::scaled(3600.0);
        let before = clock.now();
        std::thread::sleep(Duration::from_millis(20));
        let passed = clock.now() - before;
        assert!(passed >= chrono::Duration::seconds(60), "{passed:?}");
        assert_eq!(
            clock.real_duration(Duration::from_secs(3600)),
            Duration::from_secs(1)
        );
        assert_eq!(
            SimClock::scaled(-1.0).real_duration(Duration::from_secs(5)),
            Duration::from_secs(5)
        );
    }
}
