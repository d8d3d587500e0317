//! Leader election with a `coordination.k8s.io/v1` Lease (`nac-controller` in the OADP
//! namespace): acquire or renew with optimistic concurrency (every write carries the
//! resourceVersion read), take over an expired lease, and step down as soon as a renewal fails
//! so two replicas never reconcile at once. On shutdown (SIGTERM) the leader lets the writes in
//! flight finish, then releases the lease as client-go's `ReleaseOnCancel` does — holder
//! emptied, `leaseDurationSeconds` 1, written with the resourceVersion read and only while it
//! still holds it — so a contender takes over at its next retry instead of waiting for the
//! lease to expire.
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, PostParams};

use super::ControllerError;
use crate::shutdown::Shutdown;

/// Name of the Lease.
pub const LEASE_NAME: &str = "nac-controller";

/// Timing of the election.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderConfig {
    /// Name of the Lease.
    pub lease_name: String,
    /// This replica's identity (pod name).
    pub identity: String,
    /// How long a lease is valid without renewal (`leaseDurationSeconds`).
    pub lease_duration: Duration,
    /// How often the leader renews, and contenders retry.
    pub retry_period: Duration,
}

impl LeaderConfig {
    /// Defaults (client-go's): 15 s lease, renewed and contended for every 2 s — a released
    /// lease is taken over within 2 s.
    pub fn new(identity: &str) -> Self {
        LeaderConfig {
            lease_name: LEASE_NAME.to_string(),
            identity: identity.to_string(),
            lease_duration: Duration::from_secs(15),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// What to do with the lease as read (pure decision).
#[derive(Clone, Debug, PartialEq)]
pub enum LeaseAction {
    /// No lease: create one held by us.
    Create(LeaseSpec),
    /// We hold it: renew (same spec with a fresh renewTime).
    Renew(LeaseSpec),
    /// Another holder's lease expired: take it over (transitions + 1).
    TakeOver(LeaseSpec),
    /// Another holder's lease is valid.
    Wait,
}

fn micro(t: Timestamp) -> MicroTime {
    MicroTime(t)
}

/// Decides the next write for `lease` as read at `now`.
pub fn decide(lease: Option<&Lease>, config: &LeaderConfig, now: Timestamp) -> LeaseAction {
    let seconds = i32::try_from(config.lease_duration.as_secs().max(1)).unwrap_or(15);
    let fresh = LeaseSpec {
        holder_identity: Some(config.identity.clone()),
        lease_duration_seconds: Some(seconds),
        acquire_time: Some(micro(now)),
        renew_time: Some(micro(now)),
        lease_transitions: Some(0),
        ..Default::default()
    };
    let Some(lease) = lease else {
        return LeaseAction::Create(fresh);
    };
    let spec = lease.spec.clone().unwrap_or_default();
    let holder = spec.holder_identity.clone().unwrap_or_default();
    if holder == config.identity {
        let mut next = spec;
        next.renew_time = Some(micro(now));
        next.lease_duration_seconds = Some(seconds);
        return LeaseAction::Renew(next);
    }
    let duration =
        SignedDuration::from_secs(i64::from(spec.lease_duration_seconds.unwrap_or(seconds)));
    let expired = holder.is_empty()
        || spec
            .renew_time
            .as_ref()
            .or(spec.acquire_time.as_ref())
            .is_none_or(|t| t.0.checked_add(duration).is_ok_and(|end| end <= now));
    if expired {
        LeaseAction::TakeOver(LeaseSpec {
            lease_transitions: Some(spec.lease_transitions.unwrap_or(0).saturating_add(1)),
            ..fresh
        })
    } else {
        LeaseAction::Wait
    }
}

/// The lease as a leader leaving it writes it (client-go's `ReleaseOnCancel`): no holder,
/// `leaseDurationSeconds` 1, renewed and acquired `now`, transitions kept — or `None` when
/// `lease` is not held by this replica (then it is not ours to release).
pub fn released(lease: &Lease, config: &LeaderConfig, now: Timestamp) -> Option<LeaseSpec> {
    let spec = lease.spec.clone().unwrap_or_default();
    if spec.holder_identity.as_deref() != Some(config.identity.as_str()) {
        return None;
    }
    Some(LeaseSpec {
        holder_identity: Some(String::new()),
        lease_duration_seconds: Some(1),
        acquire_time: Some(micro(now)),
        renew_time: Some(micro(now)),
        ..spec
    })
}

/// How one term of leadership ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Term<T> {
    /// The work finished while leading.
    Finished(T),
    /// The lease was lost (a renewal failed or was refused) and the work dropped.
    Lost,
    /// The shutdown started: the work was stopped, and the lease released when held.
    Stopped(Stopped),
}

/// What a leader's (or contender's) shutdown did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stopped {
    /// The work in flight finished within the grace period (false: some was cut off).
    pub drained: bool,
    /// The lease is not left held by this replica: released, or never held, or taken over
    /// meanwhile (false: releasing failed, and the lease expires by itself).
    pub released: bool,
}

/// Time kept from the grace period for releasing the lease after the writes in flight.
const RELEASE_RESERVE: Duration = Duration::from_secs(2);
/// Longest wait for the release itself.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(5);

/// One replica's side of the election.
#[derive(Clone)]
pub struct Elector {
    api: Api<Lease>,
    config: LeaderConfig,
}

impl std::fmt::Debug for Elector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Elector")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Elector {
    /// An elector for the Lease in `namespace`.
    pub fn new(client: kube::Client, namespace: &str, config: LeaderConfig) -> Self {
        Elector {
            api: Api::namespaced(client, namespace),
            config,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &LeaderConfig {
        &self.config
    }

    /// Tries once to acquire or renew; true when this replica holds the lease afterwards.
    /// A conflict (someone wrote in between) is "not leading", never an error.
    pub async fn try_acquire_or_renew(&self) -> Result<bool, ControllerError> {
        let current = self.api.get_opt(&self.config.lease_name).await?;
        LEASE_READ.record(self.config.lease_duration);
        let action = decide(current.as_ref(), &self.config, Timestamp::now());
        let spec = match action {
            LeaseAction::Wait => return Ok(false),
            LeaseAction::Create(spec) => {
                let lease = Lease {
                    metadata: kube::core::ObjectMeta {
                        name: Some(self.config.lease_name.clone()),
                        ..Default::default()
                    },
                    spec: Some(spec),
                };
                return match self.api.create(&PostParams::default(), &lease).await {
                    Ok(_) => Ok(true),
                    Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                    Err(e) => Err(e.into()),
                };
            }
            LeaseAction::Renew(spec) | LeaseAction::TakeOver(spec) => spec,
        };
        let Some(mut lease) = current else {
            return Ok(false);
        };
        // The resourceVersion read stays in the object: a concurrent write makes this a 409.
        lease.spec = Some(spec);
        match self
            .api
            .replace(&self.config.lease_name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Gives the lease up if this replica still holds it ([`released`]); true when it did.
    /// The write carries the resourceVersion read: when another replica wrote in between the
    /// lease is read again, and left alone once it is someone else's.
    pub async fn release(&self) -> Result<bool, ControllerError> {
        for _ in 0..3 {
            let Some(mut lease) = self.api.get_opt(&self.config.lease_name).await? else {
                return Ok(false);
            };
            let Some(spec) = released(&lease, &self.config, Timestamp::now()) else {
                return Ok(false);
            };
            lease.spec = Some(spec);
            match self
                .api
                .replace(&self.config.lease_name, &PostParams::default(), &lease)
                .await
            {
                Ok(_) => return Ok(true),
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(false)
    }

    /// Acquires the lease (retrying every `retry_period`), then runs `work` while renewing it.
    /// Returns `Some(output)` when `work` finished while leading, `None` when the lease was
    /// lost (a renewal failed or was refused) and `work` was dropped.
    pub async fn lead<F: Future>(&self, leading: &AtomicBool, work: F) -> Option<F::Output> {
        match self.lead_until(leading, work, &Shutdown::default()).await {
            Term::Finished(output) => Some(output),
            Term::Lost | Term::Stopped(_) => None,
        }
    }

    /// As [`Elector::lead`], until `shutdown` starts: then no new work begins
    /// ([`Shutdown::begin`] refuses), the work in flight gets what is left of the grace period
    /// (less a moment for the release) while the lease is still renewed, `work` is dropped and
    /// the lease released.
    pub async fn lead_until<F: Future>(
        &self,
        leading: &AtomicBool,
        work: F,
        shutdown: &Shutdown,
    ) -> Term<F::Output> {
        loop {
            if shutdown.is_triggered() {
                return Term::Stopped(Stopped {
                    drained: true,
                    released: true,
                });
            }
            match self.try_acquire_or_renew().await {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, "leader election: could not read the lease"),
            }
            tokio::select! {
                () = tokio::time::sleep(self.config.retry_period) => {}
                () = shutdown.triggered() => {}
            }
        }
        tracing::info!(identity = %self.config.identity, "leading");
        leading.store(true, Ordering::SeqCst);
        let renew = async {
            // A refused renewal steps down at once; failing ones (API errors) are retried
            // until two thirds of the lease have passed since the last renewal, so the lease
            // is given up before another replica may take it over.
            let deadline = self.config.lease_duration.mul_f64(2.0 / 3.0);
            let mut renewed = tokio::time::Instant::now();
            loop {
                tokio::time::sleep(self.config.retry_period).await;
                match self.try_acquire_or_renew().await {
                    Ok(true) => renewed = tokio::time::Instant::now(),
                    Ok(false) => return,
                    Err(e) if renewed.elapsed() >= deadline => {
                        tracing::warn!(error = %e, "leader election: renewal failed; stepping down");
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "leader election: renewal failed; retrying")
                    }
                }
            }
        };
        // Boxed, so that dropping it below really stops the work before the lease goes.
        let mut work = Box::pin(work);
        tokio::pin!(renew);
        let ended = tokio::select! {
            output = &mut work => Term::Finished(output),
            () = &mut renew => Term::Lost,
            () = shutdown.triggered() => {
                // Still polling `work` (the reconciles in flight run inside it) and renewing.
                let bound = shutdown.remaining().saturating_sub(RELEASE_RESERVE);
                tracing::info!(
                    in_flight = shutdown.in_flight(),
                    bound_seconds = bound.as_secs_f64(),
                    "stopping: letting the writes in flight finish"
                );
                tokio::select! {
                    output = &mut work => Term::Finished(output),
                    () = &mut renew => Term::Lost,
                    drained = tokio::time::timeout(bound, shutdown.drained()) => {
                        Term::Stopped(Stopped { drained: drained.is_ok(), released: false })
                    }
                }
            }
        };
        // The controllers (and what runs beside them) stop here, before the lease goes.
        drop(work);
        leading.store(false, Ordering::SeqCst);
        match ended {
            Term::Lost => {
                tracing::warn!(identity = %self.config.identity, "lost the lease; stopped reconciling");
                Term::Lost
            }
            Term::Finished(output) if !shutdown.is_triggered() => Term::Finished(output),
            Term::Finished(_) => self.step_down(shutdown, true).await,
            Term::Stopped(Stopped { drained, .. }) => {
                if !drained {
                    tracing::warn!(
                        in_flight = shutdown.in_flight(),
                        "stopping: writes still in flight at the end of the grace period were cut off"
                    );
                }
                self.step_down(shutdown, drained).await
            }
        }
    }

    /// Releases the lease on shutdown, within what is left of the grace period.
    async fn step_down<T>(&self, shutdown: &Shutdown, drained: bool) -> Term<T> {
        let bound = shutdown.remaining().min(RELEASE_TIMEOUT);
        let released = match tokio::time::timeout(bound, self.release()).await {
            Ok(Ok(done)) => {
                tracing::info!(identity = %self.config.identity, released = done, "stopped leading");
                true
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "could not release the lease; it expires by itself");
                false
            }
            Err(_) => {
                tracing::warn!("releasing the lease timed out; it expires by itself");
                false
            }
        };
        Term::Stopped(Stopped { drained, released })
    }
}

static LEADING: LazyLock<Arc<AtomicBool>> = LazyLock::new(|| Arc::new(AtomicBool::new(false)));

/// The process-wide "this replica leads" flag set by [`crate::controllers::run`] (read by
/// `/readyz`).
pub fn leading_flag() -> Arc<AtomicBool> {
    LEADING.clone()
}

/// When this replica last read the Lease, and how long such a read stays fresh (the lease
/// duration): a standby replica that reads it is healthy and ready to take over; one that has
/// not read it for a whole lease duration cannot reach the API server.
#[derive(Debug, Default)]
pub struct LeaseReads {
    last: Mutex<Option<(Instant, Duration)>>,
}

impl LeaseReads {
    /// Records a successful read of the Lease, fresh for `fresh_for`.
    pub fn record(&self, fresh_for: Duration) {
        if let Ok(mut last) = self.last.lock() {
            *last = Some((Instant::now(), fresh_for));
        }
    }

    /// Whether the last read is recent enough to vouch for this replica: `Some(age)` of the last
    /// read when it is still fresh, `None` when there was none or it is stale.
    pub fn fresh(&self) -> Option<Duration> {
        let last = *self.last.lock().ok()?;
        let (at, fresh_for) = last?;
        let age = at.elapsed();
        (age <= fresh_for).then_some(age)
    }
}

static LEASE_READ: LazyLock<Arc<LeaseReads>> = LazyLock::new(|| Arc::new(LeaseReads::default()));

/// The process-wide record of this replica's reads of the Lease (read by `/readyz`).
pub fn lease_reads() -> Arc<LeaseReads> {
    LEASE_READ.clone()
}

/// This replica's identity: `$POD_NAME` (set from the Downward API in the Deployment), else the
/// host name, else `nac-controller`. A restarted process with the same identity renews its own
/// lease at once instead of waiting for it to expire.
pub fn default_identity() -> String {
    std::env::var("POD_NAME")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| LEASE_NAME.to_string())
}

/// Runs `work()` only while this replica leads, re-contending after losing the lease, until
/// `work` finishes while leading (`None`) or `shutdown` has stopped it (and released the
/// lease). `leading` reflects the state (for `/readyz`).
pub async fn lead_forever<F, Fut>(
    elector: Elector,
    leading: Arc<AtomicBool>,
    shutdown: Shutdown,
    mut work: F,
) -> Option<Stopped>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    loop {
        match elector.lead_until(&leading, work(), &shutdown).await {
            Term::Finished(()) => return None,
            Term::Stopped(stopped) => return Some(stopped),
            Term::Lost => {}
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn lease(holder: &str, renewed: Timestamp, transitions: i32) -> Lease {
        Lease {
            metadata: Default::default(),
            spec: Some(LeaseSpec {
                holder_identity: Some(holder.into()),
                lease_duration_seconds: Some(15),
                acquire_time: Some(micro(renewed)),
                renew_time: Some(micro(renewed)),
                lease_transitions: Some(transitions),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn creates_renews_waits_and_takes_over() {
        let now = Timestamp::from_second(1_000_000).unwrap();
        let me = LeaderConfig::new("a");
        assert!(matches!(decide(None, &me, now), LeaseAction::Create(_)));
        let mine = lease("a", now - SignedDuration::from_secs(5), 2);
        match decide(Some(&mine), &me, now) {
            LeaseAction::Renew(s) => {
                assert_eq!(s.renew_time, Some(micro(now)));
                assert_eq!(s.lease_transitions, Some(2));
                assert_eq!(
                    s.acquire_time,
                    Some(micro(now - SignedDuration::from_secs(5)))
                );
            }
            other => panic!("{other:?}"),
        }
        let theirs = lease("b", now - SignedDuration::from_secs(10), 2);
        assert_eq!(decide(Some(&theirs), &me, now), LeaseAction::Wait);
        let expired = lease("b", now - SignedDuration::from_secs(15), 2);
        match decide(Some(&expired), &me, now) {
            LeaseAction::TakeOver(s) => {
                assert_eq!(s.holder_identity.as_deref(), Some("a"));
                assert_eq!(s.lease_transitions, Some(3));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_released_lease_has_no_holder_and_is_taken_over_at_once() {
        let now = Timestamp::from_second(1_000_000).unwrap();
        let me = LeaderConfig::new("a");
        let mine = lease("a", now - SignedDuration::from_secs(1), 4);
        let spec = released(&mine, &me, now).unwrap();
        assert_eq!(spec.holder_identity.as_deref(), Some(""));
        assert_eq!(spec.lease_duration_seconds, Some(1));
        assert_eq!(spec.renew_time, Some(micro(now)));
        assert_eq!(spec.lease_transitions, Some(4));
        // Someone else's lease is not ours to release.
        assert_eq!(released(&lease("b", now, 4), &me, now), None);
        // The next contender takes it over at once, though it was renewed just now.
        let left = Lease {
            metadata: Default::default(),
            spec: Some(spec),
        };
        match decide(Some(&left), &LeaderConfig::new("b"), now) {
            LeaseAction::TakeOver(s) => {
                assert_eq!(s.holder_identity.as_deref(), Some("b"));
                assert_eq!(s.lease_transitions, Some(5));
            }
            other => panic!("{other:?}"),
        }
    }
}
