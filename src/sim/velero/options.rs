//! Settings of the simulator and its knobs for demos and tests: per-item delay (so queues form),
//! failure injection by annotation or flag, and the clock speed.
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

/// Annotation on a Backup or Restore choosing how the simulator plays it.
pub const OUTCOME_ANNOTATION: &str = "sim.velero.nac.openshift.io/outcome";
/// Annotation on any object the simulator works on (a DeleteBackupRequest, a Backup...) making
/// each attempt at it fail with the annotation's value as the error, as a refused write would:
/// how tests show that one failing object never stops the others.
pub const INJECT_ERROR_ANNOTATION: &str = "sim.velero.nac.openshift.io/inject-error";

/// How the simulator plays one backup or restore.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Outcome {
    /// Do the work and succeed.
    #[default]
    Succeed,
    /// Fail after starting (phase Failed with a failure reason).
    Fail,
    /// Finish with one error (phase PartiallyFailed).
    PartiallyFail,
    /// Start and never progress (until the annotation changes).
    Hang,
    /// Ten times the per-item delay.
    Slow,
}

impl Outcome {
    /// Parses a knob value (`fail`, `partially-fail`, `hang`, `slow`, `succeed`).
    pub fn parse(value: &str) -> Option<Self> {
        Some(match value.trim().to_ascii_lowercase().as_str() {
            "succeed" | "success" | "" => Outcome::Succeed,
            "fail" | "failed" => Outcome::Fail,
            "partially-fail" | "partiallyfail" | "partially-failed" => Outcome::PartiallyFail,
            "hang" => Outcome::Hang,
            "slow" => Outcome::Slow,
            _ => return None,
        })
    }

    /// The outcome an object asks for by annotation, else `default`.
    pub fn of(object: &Value, default: Outcome) -> Outcome {
        object
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(OUTCOME_ANNOTATION))
            .and_then(Value::as_str)
            .and_then(Outcome::parse)
            .unwrap_or(default)
    }
}

/// Simulator settings.
#[derive(Debug, Clone)]
pub struct SimulatorOptions {
    /// The Velero namespace watched (`openshift-adp` for OADP).
    pub namespace: String,
    /// `--concurrent-backups`.
    pub concurrent_backups: usize,
    /// Simulated time spent on each backed-up or restored item.
    pub item_delay: Duration,
    /// Where the local object-store provider keeps its buckets.
    pub local_root: PathBuf,
    /// Base URL of the simulator's download endpoint (for local-provider DownloadRequests).
    pub download_base: url::Url,
    /// How much faster than real time the simulator's clock runs.
    pub time_scale: f64,
    /// How often each BackupStorageLocation is validated (Velero's default: 1 minute).
    pub bsl_validation_interval: Duration,
    /// How often backups are synced from object storage (Velero's default: 1 minute).
    pub backup_sync_interval: Duration,
    /// How often timers (schedules, expiry, validation) are looked at without any change.
    pub resync_interval: Duration,
    /// Outcome of backups and restores without an outcome annotation.
    pub default_outcome: Outcome,
    /// How long DownloadRequest URLs stay valid (Velero: 10 minutes).
    pub download_ttl: Duration,
    /// How often expired backups are garbage-collected (Velero's `--garbage-collection-frequency`,
    /// default 1 hour).
    pub gc_interval: Duration,
    /// The Velero server's `AWS_REGION`, which the AWS plugin's SDK uses to look up the region
    /// of a bucket whose location names neither `region` nor `s3Url` (none by default, so that
    /// lookup fails as it does on a server without one).
    pub aws_region: Option<String>,
    /// Where that lookup reaches S3 (`None`: AWS itself); tests point it at a local server.
    pub aws_s3_endpoint: Option<url::Url>,
    /// How long a simulated asynchronous item operation (a CSI snapshot's data upload or
    /// download) runs before it completes.
    pub item_operation_duration: Duration,
    /// How often the operations controllers look at backups and restores waiting for plugin
    /// operations (Velero: every 10 seconds).
    pub item_operation_poll_interval: Duration,
}

impl SimulatorOptions {
    /// Defaults for `namespace`, storing local buckets under `local_root` and serving downloads
    /// at `download_base`.
    pub fn new(namespace: &str, local_root: PathBuf, download_base: url::Url) -> Self {
        SimulatorOptions {
            namespace: namespace.to_string(),
            concurrent_backups: 1,
            item_delay: Duration::ZERO,
            local_root,
            download_base,
            time_scale: 1.0,
            bsl_validation_interval: Duration::from_secs(60),
            backup_sync_interval: Duration::from_secs(60),
            resync_interval: Duration::from_secs(1),
            default_outcome: Outcome::Succeed,
            download_ttl: Duration::from_secs(600),
            gc_interval: Duration::from_secs(60 * 60),
            aws_region: None,
            aws_s3_endpoint: None,
            item_operation_duration: Duration::from_secs(5),
            item_operation_poll_interval: Duration::from_secs(10),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn outcome_from_annotation_or_default() {
        let o = json!({"metadata": {"annotations": {OUTCOME_ANNOTATION: "partially-fail"}}});
        assert_eq!(Outcome::of(&o, Outcome::Succeed), Outcome::PartiallyFail);
        assert_eq!(
            Outcome::of(&json!({"metadata": {}}), Outcome::Slow),
            Outcome::Slow
        );
        let bad = json!({"metadata": {"annotations": {OUTCOME_ANNOTATION: "explode"}}});
        assert_eq!(Outcome::of(&bad, Outcome::Succeed), Outcome::Succeed);
        assert_eq!(Outcome::parse("HANG"), Some(Outcome::Hang));
    }
}
