//! Leader election with a `coordination.k8s.io/v1` Lease (`nac-controller` in the OADP
//! namespace): acquire or renew with optimistic concurrency (every write carries the
//! resourceVersion read), take over an expired lease, and step down as soon as a renewal fails
//! so two replicas never reconcile at once.
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, PostParams};

use super::ControllerError;

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
    /// Defaults: 15 s lease, renewed every 5 s.
    pub fn new(identity: &str) -> Self {
        LeaderConfig {
            lease_name: LEASE_NAME.to_string(),
            identity: identity.to_string(),
            lease_duration: Duration::from_secs(15),
            retry_period: Duration::from_secs(5),
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

    /// Acquires the lease (retrying every `retry_period`), then runs `work` while renewing it.
    /// Returns `Some(output)` when `work` finished while leading, `None` when the lease was
    /// lost (a renewal failed or was refused) and `work` was dropped.
    pub async fn lead<F: Future>(&self, leading: &AtomicBool, work: F) -> Option<F::Output> {
        loop {
            match self.try_acquire_or_renew().await {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, "leader election: could not read the lease"),
            }
            tokio::time::sleep(self.config.retry_period).await;
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
        let result = tokio::select! {
            output = work => Some(output),
            () = renew => None,
        };
        leading.store(false, Ordering::SeqCst);
        if result.is_none() {
            tracing::warn!(identity = %self.config.identity, "lost the lease; stopped reconciling");
        }
        result
    }
}

static LEADING: LazyLock<Arc<AtomicBool>> = LazyLock::new(|| Arc::new(AtomicBool::new(false)));

/// The process-wide "this replica leads" flag set by [`crate::controllers::run`] (read by
/// `/readyz`).
pub fn leading_flag() -> Arc<AtomicBool> {
    LEADING.clone()
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
/// `work` finishes while leading. `leading` reflects the state (for `/readyz`).
pub async fn lead_forever<F, Fut>(elector: Elector, leading: Arc<AtomicBool>, mut work: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    loop {
        if elector.lead(&leading, work()).await.is_some() {
            return;
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
}
