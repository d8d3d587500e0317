//! Pure statistics over operation durations: percentiles, success rate, and the ETA estimator
//! the queue views use (from the recent durations of comparable operations in the namespace).

use super::model::Eta;

/// Fewest past durations an ETA rests on; with fewer there is no estimate.
pub const MIN_ETA_SAMPLES: usize = 3;

/// How many recent durations the ETA estimator reads.
pub const ETA_SAMPLE_SIZE: u32 = 20;

/// The nearest-rank percentile `p` (0..=100) of `values` (any order); `None` when empty.
pub fn percentile(values: &[i64], p: f64) -> Option<i64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    Some(sorted[percentile_index(sorted.len(), p)])
}

/// Index of the nearest-rank percentile `p` in a sorted list of `len` values (`len` > 0): the
/// SQL backends use it to pick the row with `OFFSET`.
pub fn percentile_index(len: usize, p: f64) -> usize {
    let p = p.clamp(0.0, 100.0);
    let rank = ((p / 100.0) * len as f64).ceil() as usize;
    rank.clamp(1, len) - 1
}

/// Completed / finished, when anything finished.
pub fn success_rate(completed: i64, finished: i64) -> Option<f64> {
    (finished > 0).then(|| completed as f64 / finished as f64)
}

/// Whether a final phase is a success: Velero's `Completed`, or `Processed` for deletions and
/// downloads (which have no `Completed`).
pub fn is_successful_phase(phase: &str) -> bool {
    matches!(phase, "Completed" | "Processed")
}

/// Whether a phase is final (the operation will not change any more).
pub fn is_finished_phase(phase: &str) -> bool {
    matches!(
        phase,
        "Completed" | "PartiallyFailed" | "Failed" | "FailedValidation" | "Processed"
    )
}

/// Expected start and finish of an operation with `queue_position` operations ahead of it
/// (0 = not queued, running or about to run), from recent durations of comparable operations
/// (newest first). Velero runs the operations ahead one after another in the common case, so
/// the wait is one typical duration per position; the median resists outliers.
pub fn eta(recent_durations_ms: &[i64], queue_position: i64) -> Option<Eta> {
    let usable: Vec<i64> = recent_durations_ms
        .iter()
        .copied()
        .filter(|d| *d >= 0)
        .collect();
    if usable.len() < MIN_ETA_SAMPLES {
        return None;
    }
    let typical = percentile(&usable, 50.0)?;
    let ahead = queue_position.max(0);
    let start_in_ms = typical.saturating_mul(ahead);
    Some(Eta {
        start_in_ms,
        finish_in_ms: start_in_ms.saturating_add(typical),
        samples: usable.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<i64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), Some(50));
        assert_eq!(percentile(&v, 95.0), Some(95));
        assert_eq!(percentile(&v, 100.0), Some(100));
        assert_eq!(percentile(&v, 0.0), Some(1));
        assert_eq!(percentile(&[7], 95.0), Some(7));
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[30, 10, 20], 50.0), Some(20));
        assert_eq!(percentile_index(4, 50.0), 1);
        assert_eq!(percentile_index(4, 95.0), 3);
    }

    #[test]
    fn success_rate_needs_a_finished_operation() {
        assert!(is_successful_phase("Processed") && is_successful_phase("Completed"));
        assert!(!is_successful_phase("PartiallyFailed") && !is_successful_phase("Failed"));
        assert_eq!(success_rate(0, 0), None);
        assert_eq!(success_rate(3, 4), Some(0.75));
    }

    #[test]
    fn eta_is_one_median_per_position_ahead() {
        let d = [10_000, 12_000, 11_000, 900_000];
        let e = eta(&d, 3);
        assert_eq!(
            e,
            Some(Eta {
                start_in_ms: 33_000,
                finish_in_ms: 44_000,
                samples: 4
            })
        );
        let running = eta(&d, 0);
        assert_eq!(
            running.map(|e| (e.start_in_ms, e.finish_in_ms)),
            Some((0, 11_000))
        );
    }

    #[test]
    fn eta_needs_enough_samples_and_ignores_nonsense() {
        assert_eq!(eta(&[1000, 2000], 1), None);
        assert_eq!(eta(&[1000, -5, 2000], 1), None);
        assert!(eta(&[1000, 2000, 3000], -4).is_some_and(|e| e.start_in_ms == 0));
    }

    #[test]
    fn finished_phases() {
        for p in [
            "Completed",
            "PartiallyFailed",
            "Failed",
            "FailedValidation",
            "Processed",
        ] {
            assert!(is_finished_phase(p));
        }
        for p in ["New", "Queued", "InProgress", "Finalizing", "Deleting"] {
            assert!(!is_finished_phase(p));
        }
    }
}
