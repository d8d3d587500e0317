//! Retention: a background job that purges operations (and their timelines) that finished or
//! were deleted longer ago than the configured number of days, plus expired idempotency records.

use std::time::Duration;

use super::{SharedHistory, now_millis};

/// Default days kept.
pub const DEFAULT_RETENTION_DAYS: u32 = 90;

/// How often the purge runs.
pub const PURGE_INTERVAL: Duration = Duration::from_secs(3600);

/// The cut-off for `days` of retention at `now` (epoch ms): rows finished before it go.
pub fn cutoff(now: i64, days: u32) -> i64 {
    now.saturating_sub(i64::from(days).saturating_mul(86_400_000))
}

/// Purges every `interval` (first run at once) until dropped. Errors are logged and the next
/// run tries again: a purge that fails loses nothing.
pub async fn run(store: SharedHistory, days: u32, interval: Duration) {
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        match store.purge(cutoff(now_millis(), days)).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                operations = n,
                days,
                "history retention purged old operations"
            ),
            Err(e) => tracing::warn!(error = %e, "history retention purge failed; will retry"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cutoff_is_days_before_now() {
        assert_eq!(cutoff(10 * 86_400_000, 3), 7 * 86_400_000);
        assert_eq!(cutoff(0, 0), 0);
        assert!(cutoff(i64::MIN + 5, 90) <= i64::MIN + 5);
    }
}
