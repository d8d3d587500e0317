//! Health and metrics over HTTP: `/healthz` (the process answers), `/readyz` (this replica
//! leads, or stands by having read the Lease within its duration — as controller-runtime, a
//! healthy standby is Ready, so a 2-replica Deployment shows 2/2; which replica leads is the
//! `nac_controller_leading` gauge) and `/metrics` in the Prometheus text format (queue length per
//! kind, reconciles and errors by controller and bounded category, approval backlog).
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use kube::api::{Api, ListParams};

use super::leader::LeaseReads;
use super::{Context, ControllerError};
use crate::api::nonadmin::{
    NonAdminBackupStorageLocationRequest, NonAdminBackupStorageLocationRequestPhase,
};
use crate::queue::{QueueIndex, QueueKind};

/// Bounded error categories (label values never come from user input).
pub fn category(error: &ControllerError) -> &'static str {
    match error {
        ControllerError::Kube(kube::Error::Api(s)) => match s.code {
            404 => "not_found",
            409 => "conflict",
            401 | 403 => "forbidden",
            422 | 400 => "invalid",
            429 => "throttled",
            500..=599 => "server",
            _ => "api_other",
        },
        ControllerError::Kube(_) => "transport",
        ControllerError::Invalid(_) => "invalid",
    }
}

/// Error counts by (controller, category).
type ErrorCounts = BTreeMap<(String, &'static str), u64>;

/// Reconcile and error counters by (controller, category).
#[derive(Debug, Default)]
pub struct Counters {
    reconciles: Mutex<BTreeMap<String, u64>>,
    errors: Mutex<ErrorCounts>,
    conflicts: Mutex<BTreeMap<String, u64>>,
}

impl Counters {
    /// Counts one reconcile of `controller`, and its error if any.
    pub fn record(&self, controller: &str, error: Option<&ControllerError>) {
        if let Ok(mut r) = self.reconciles.lock() {
            *r.entry(controller.to_string()).or_insert(0) += 1;
        }
        if let Some(e) = error
            && let Ok(mut m) = self.errors.lock()
        {
            *m.entry((controller.to_string(), category(e))).or_insert(0) += 1;
        }
    }

    /// Counts one write of `controller` refused with 409 Conflict: it was decided on a cached
    /// copy that was behind, nothing was written, and the object is decided again.
    pub fn record_conflict(&self, controller: &str) {
        if let Ok(mut c) = self.conflicts.lock() {
            *c.entry(controller.to_string()).or_insert(0) += 1;
        }
    }

    /// How many writes of `controller` were refused with 409 Conflict.
    pub fn conflicts_of(&self, controller: &str) -> u64 {
        self.conflicts
            .lock()
            .ok()
            .and_then(|c| c.get(controller).copied())
            .unwrap_or(0)
    }

    /// How many reconciles of `controller` were counted.
    pub fn reconciles_of(&self, controller: &str) -> u64 {
        self.reconciles
            .lock()
            .ok()
            .and_then(|r| r.get(controller).copied())
            .unwrap_or(0)
    }

    fn snapshot(&self) -> (BTreeMap<String, u64>, ErrorCounts, BTreeMap<String, u64>) {
        let r = self
            .reconciles
            .lock()
            .map(|m| m.clone())
            .unwrap_or_default();
        let e = self.errors.lock().map(|m| m.clone()).unwrap_or_default();
        let c = self.conflicts.lock().map(|m| m.clone()).unwrap_or_default();
        (r, e, c)
    }
}

static COUNTERS: LazyLock<Counters> = LazyLock::new(Counters::default);

/// Counts one reconcile (pass) of `controller` in the process-wide counters.
pub fn record(controller: &str, error: Option<&ControllerError>) {
    COUNTERS.record(controller, error);
}

/// The process-wide counters.
pub fn counters() -> &'static Counters {
    &COUNTERS
}

/// Renders the metrics text (pure).
pub fn render(queue: &QueueIndex, counters: &Counters, approval_backlog: Option<usize>) -> String {
    let mut out = String::new();
    out.push_str("# HELP nac_queue_length Velero objects pending or running, by kind.\n");
    out.push_str("# TYPE nac_queue_length gauge\n");
    for kind in [QueueKind::Backup, QueueKind::Restore] {
        out.push_str(&format!(
            "nac_queue_length{{kind=\"{}\"}} {}\n",
            kind.as_str(),
            queue.active_len(kind)
        ));
    }
    let (reconciles, errors, conflicts) = counters.snapshot();
    out.push_str("# HELP nac_reconciles_total Reconciles by controller.\n");
    out.push_str("# TYPE nac_reconciles_total counter\n");
    for (controller, n) in reconciles {
        out.push_str(&format!(
            "nac_reconciles_total{{controller=\"{}\"}} {n}\n",
            escape(&controller)
        ));
    }
    out.push_str(
        "# HELP nac_reconcile_errors_total Reconcile errors by controller and category.\n",
    );
    out.push_str("# TYPE nac_reconcile_errors_total counter\n");
    for ((controller, cat), n) in errors {
        out.push_str(&format!(
            "nac_reconcile_errors_total{{controller=\"{}\",category=\"{cat}\"}} {n}\n",
            escape(&controller)
        ));
    }
    out.push_str(
        "# HELP nac_reconcile_conflicts_total Writes refused with 409 Conflict (decided on a cached copy that was behind; decided again), by controller.\n",
    );
    out.push_str("# TYPE nac_reconcile_conflicts_total counter\n");
    for (controller, n) in conflicts {
        out.push_str(&format!(
            "nac_reconcile_conflicts_total{{controller=\"{}\"}} {n}\n",
            escape(&controller)
        ));
    }
    if let Some(backlog) = approval_backlog {
        out.push_str(
            "# HELP nac_approval_backlog NonAdminBackupStorageLocationRequests pending approval.\n",
        );
        out.push_str("# TYPE nac_approval_backlog gauge\n");
        out.push_str(&format!("nac_approval_backlog {backlog}\n"));
    }
    out
}

fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Pending NonAdminBackupStorageLocationRequests in the OADP namespace.
pub async fn approval_backlog(context: &Context) -> Result<usize, ControllerError> {
    let api: Api<NonAdminBackupStorageLocationRequest> =
        Api::namespaced(context.client.clone(), &context.oadp_namespace);
    Ok(api
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .filter(|r| {
            r.status
                .as_ref()
                .and_then(|s| s.phase)
                .is_none_or(|p| p == NonAdminBackupStorageLocationRequestPhase::Pending)
        })
        .count())
}

/// The metrics text for `context` (the backlog is left out when it cannot be read).
pub async fn metrics_text(context: &Context) -> String {
    let backlog = approval_backlog(context).await.ok();
    match context.queue.read() {
        Ok(queue) => render(&queue, counters(), backlog),
        Err(_) => render(&QueueIndex::new(), counters(), backlog),
    }
}

/// What the endpoints report on.
#[derive(Clone, Debug)]
pub struct Health {
    /// The controllers' context.
    pub context: Arc<Context>,
    /// Set while this replica holds the lease and its controllers run.
    pub ready: Arc<AtomicBool>,
    /// This replica's reads of the Lease (a standby that reads it is ready to take over).
    pub lease_reads: Arc<LeaseReads>,
}

/// What `/readyz` answers (pure decision over the election's state).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Readiness {
    /// This replica holds the Lease and runs the controllers.
    Leading,
    /// Another replica leads; this one read the Lease recently and takes over when it is
    /// released or expires.
    StandingBy,
    /// Neither leading nor able to read the Lease (the API server is unreachable, or the
    /// election has not started yet).
    Unready,
}

/// Ready when leading, or when the last read of the Lease is still fresh.
pub fn readiness(leading: bool, lease_read_fresh: bool) -> Readiness {
    match (leading, lease_read_fresh) {
        (true, _) => Readiness::Leading,
        (false, true) => Readiness::StandingBy,
        (false, false) => Readiness::Unready,
    }
}

/// The router serving `/healthz`, `/readyz` and `/metrics`.
pub fn router(health: Health) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(health)
}

async fn readyz(State(h): State<Health>) -> impl IntoResponse {
    let leading = h.ready.load(Ordering::Relaxed);
    match readiness(leading, h.lease_reads.fresh().is_some()) {
        Readiness::Leading => (StatusCode::OK, "ready: leading"),
        Readiness::StandingBy => (StatusCode::OK, "ready: standing by (another replica leads)"),
        Readiness::Unready => (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: not leading, and the Lease has not been read within its duration",
        ),
    }
}

async fn metrics(State(h): State<Health>) -> impl IntoResponse {
    let mut text = metrics_text(&h.context).await;
    text.push_str(&leading_gauge(h.ready.load(Ordering::Relaxed)));
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text)
}

/// `nac_controller_leading`: 1 on the replica holding the Lease, 0 on a standby (the
/// `NACControllerNotLeading` alert sums it over the replicas).
pub fn leading_gauge(leading: bool) -> String {
    format!(
        "# HELP nac_controller_leading Whether this controller replica holds the Lease (1) or stands by (0).\n\
         # TYPE nac_controller_leading gauge\n\
         nac_controller_leading {}\n",
        u8::from(leading)
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn renders_counters_with_bounded_categories() {
        let c = Counters::default();
        c.record("sync", None);
        c.record("sync", Some(&ControllerError::Invalid("x\"y".into())));
        c.record_conflict("nonadminbackup");
        c.record_conflict("nonadminbackup");
        let text = render(&QueueIndex::new(), &c, Some(3));
        assert!(text.contains("nac_reconcile_conflicts_total{controller=\"nonadminbackup\"} 2"));
        assert_eq!(c.conflicts_of("nonadminbackup"), 2);
        assert_eq!(c.conflicts_of("sync"), 0);
        assert!(text.contains("nac_queue_length{kind=\"Backup\"} 0"));
        assert!(text.contains("nac_reconciles_total{controller=\"sync\"} 2"));
        assert!(
            text.contains("nac_reconcile_errors_total{controller=\"sync\",category=\"invalid\"} 1")
        );
        assert!(text.contains("nac_approval_backlog 3"));
        assert!(!text.contains("x\"y"));
    }

    #[test]
    fn a_standby_that_reads_the_lease_is_ready() {
        assert_eq!(readiness(true, false), Readiness::Leading);
        assert_eq!(readiness(true, true), Readiness::Leading);
        assert_eq!(readiness(false, true), Readiness::StandingBy);
        assert_eq!(readiness(false, false), Readiness::Unready);
    }

    #[test]
    fn lease_reads_go_stale_after_their_duration() {
        let reads = LeaseReads::default();
        assert_eq!(reads.fresh(), None, "never read");
        reads.record(Duration::from_secs(15));
        assert!(reads.fresh().is_some());
        reads.record(Duration::ZERO);
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(reads.fresh(), None, "older than its duration");
    }

    #[test]
    fn the_leading_gauge_is_one_only_on_the_leader() {
        assert!(leading_gauge(true).ends_with("nac_controller_leading 1\n"));
        assert!(leading_gauge(false).ends_with("nac_controller_leading 0\n"));
        assert!(leading_gauge(false).contains("# TYPE nac_controller_leading gauge\n"));
    }

    #[test]
    fn escapes_label_values() {
        assert_eq!(escape("a\"b\\c\n"), "a\\\"b\\\\c\\n");
    }
}
