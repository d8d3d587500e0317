//! NAC's reconcilers (kube-runtime controllers): each turns a tenant's non-admin object into
//! Velero objects in the OADP namespace and mirrors their status back. Decisions live in pure
//! `*_decision` modules; the controller files only observe, apply the decided step and report.
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::Api;
use rand::Rng;

use crate::policy::NacPolicy;
use crate::queue::QueueIndex;

pub mod bucket;
pub mod bucket_decision;
pub mod bucket_store;
pub mod clock;
pub mod cluster_cache;
pub mod deletion_action_decision;
pub mod deletion_actions;
pub mod driver;
pub mod events;
pub mod fetch_scope;
pub mod gc;
pub mod health;
pub mod leader;
pub mod nab;
pub mod nab_decision;
pub mod nabsl;
pub mod nabsl_decision;
pub mod nadr;
pub mod nadr_decision;
pub mod nar;
pub mod nar_decision;
pub mod nas;
pub mod nas_decision;
pub mod outcome_notices;
pub mod policy_source;
pub mod positions;
pub mod queue_feed;
pub mod status;
pub mod sync;
pub mod velero_cache;
pub mod writes;

/// Failures of one reconcile; each is retried with per-object exponential backoff.
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("{0}")]
    Invalid(String),
}

impl ControllerError {
    /// A write refused because the object changed since it was read (409 Conflict).
    pub fn is_conflict(&self) -> bool {
        matches!(self, ControllerError::Kube(kube::Error::Api(s)) if s.code == 409)
    }
}

/// Watch caches of NAC-made Velero objects in the OADP namespace.
#[derive(Default)]
pub struct VeleroCaches {
    pub backups: velero_cache::Cache<crate::api::velero::Backup>,
    pub delete_requests: velero_cache::Cache<crate::api::velero::DeleteBackupRequest>,
    pub restores: velero_cache::Cache<crate::api::velero::Restore>,
}

/// What every reconciler shares.
pub struct Context {
    pub client: kube::Client,
    /// Where Velero and NAC's admin-side objects live.
    pub oadp_namespace: String,
    /// The admin policy (reloaded when the DataProtectionApplication or its ConfigMap changes).
    pub policy: Arc<RwLock<NacPolicy>>,
    /// Queue positions of Velero Backups and Restores.
    pub queue: Arc<RwLock<QueueIndex>>,
    /// The one writer of queue positions on NAB/NAR status.
    pub positions: positions::Positions,
    /// Watch caches of NAC's Velero objects (filled while the controllers run).
    pub velero: VeleroCaches,
    /// Watch caches of namespaces and BackupBuckets (filled while the controllers run).
    pub cluster: cluster_cache::ClusterCaches,
    /// The one watch cache of every NonAdminBackup (filled while the controllers run): the
    /// NAB, pool and NAR controllers and the backup sync all read it ([`nab::watch_all`]).
    pub nabs: velero_cache::Cache<crate::api::nonadmin::NonAdminBackup>,
    /// Copies of objects this replica has just written over (see [`driver::Superseded`]).
    pub superseded: driver::Superseded,
    /// Versions this replica's own writes made (see [`driver::OwnWrites`]).
    pub own_writes: driver::OwnWrites,
    /// The shared backup pool's settings (grace period, clock, bucket listing).
    pub pool: bucket::PoolConfig,
    /// The process's stop: once it starts no reconcile or pass begins, and those running
    /// finish their writes before the lease is released (each holds a
    /// [`crate::shutdown::InFlight`]).
    pub shutdown: crate::shutdown::Shutdown,
    failures: Mutex<HashMap<String, u32>>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("oadp_namespace", &self.oadp_namespace)
            .finish_non_exhaustive()
    }
}

impl Context {
    /// A context acting through `client` on `oadp_namespace`.
    pub fn new(client: kube::Client, oadp_namespace: &str) -> Self {
        Context {
            client,
            oadp_namespace: oadp_namespace.to_string(),
            policy: Arc::new(RwLock::new(NacPolicy::default())),
            queue: Arc::new(RwLock::new(QueueIndex::new())),
            positions: positions::Positions::default(),
            velero: VeleroCaches::default(),
            cluster: cluster_cache::ClusterCaches::default(),
            nabs: velero_cache::Cache::default(),
            superseded: driver::Superseded::default(),
            own_writes: driver::OwnWrites::default(),
            pool: bucket::PoolConfig::default(),
            shutdown: crate::shutdown::Shutdown::default(),
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// The same context with the shared backup pool's settings `pool`.
    pub fn with_pool(mut self, pool: bucket::PoolConfig) -> Self {
        self.pool = pool;
        self
    }

    /// The same context stopping with `shutdown` (the process's: SIGTERM or SIGINT).
    pub fn with_shutdown(mut self, shutdown: crate::shutdown::Shutdown) -> Self {
        self.shutdown = shutdown;
        self
    }

    /// Exponential backoff with jitter for an object's `attempt`-th consecutive failure:
    /// 0.5 s doubling up to 5 minutes, times a random factor in [0.5, 1.5) so retries of many
    /// objects that failed together spread out.
    pub fn backoff(&self, key: &str) -> Duration {
        let attempt = {
            let Ok(mut f) = self.failures.lock() else {
                return Duration::from_secs(5);
            };
            let n = f.entry(key.to_string()).or_insert(0);
            *n = n.saturating_add(1);
            *n
        };
        backoff_for(attempt, rand::rng().random_range(0.5..1.5))
    }

    /// Forgets an object's failures after a successful reconcile.
    pub fn succeeded(&self, key: &str) {
        if let Ok(mut f) = self.failures.lock() {
            f.remove(key);
        }
    }

    /// The policy that applies in `namespace` (its labels select per-namespace rules).
    pub async fn effective_policy(
        &self,
        namespace: &str,
    ) -> Result<crate::policy::EffectivePolicy, ControllerError> {
        // Labels only choose policy rules: the watch cache's copy is as good as the policy's own.
        let found = match self.cluster.namespaces.cached_cluster_object(namespace) {
            Some(Some(cached)) => Some((*cached).clone()),
            _ => {
                Api::<Namespace>::all(self.client.clone())
                    .get_opt(namespace)
                    .await?
            }
        };
        let labels = found.and_then(|n| n.metadata.labels).unwrap_or_default();
        let policy = self
            .policy
            .read()
            .map_err(|_| ControllerError::Invalid("policy lock poisoned".into()))?;
        Ok(policy.for_namespace(&labels))
    }

    /// The UID of `namespace` now (`None` when it does not exist): recorded on the Velero
    /// objects made for it, so a namespace re-created under the same name is told apart.
    pub async fn namespace_uid(&self, namespace: &str) -> Result<Option<String>, ControllerError> {
        Ok(Api::<Namespace>::all(self.client.clone())
            .get_metadata_opt(namespace)
            .await?
            .and_then(|n| n.metadata.uid)
            .filter(|uid| !uid.is_empty()))
    }

    /// Reads the admin policy now — the DataProtectionApplication's `spec.nonAdmin` and NAC's
    /// ConfigMap — (start-up, and tests).
    pub async fn load_policy(&self) -> Result<(), ControllerError> {
        policy_source::load(self).await
    }
}

/// Backoff for the `attempt`-th failure (1-based) scaled by `jitter`.
pub fn backoff_for(attempt: u32, jitter: f64) -> Duration {
    let base = Duration::from_millis(500).saturating_mul(1u32 << attempt.saturating_sub(1).min(10));
    base.min(Duration::from_secs(300)).mul_f64(jitter)
}

/// Runs every controller until the task is dropped (or the context's shutdown stops them).
/// Only while this replica holds the `nac-controller` Lease (a single instance acquires it at
/// once); on losing it the controllers stop and the replica contends again.
pub async fn run(context: Arc<Context>) {
    run_leading_with(context, || async {}).await;
}

/// As [`run`], and while this replica leads also runs `also()` (the CLI runs the history
/// recorder this way: one writer per cluster, without the controllers knowing about it).
/// Returns once the context's shutdown has stopped the controllers — the writes in flight
/// finished (`also()` counts as in flight while it holds a [`crate::shutdown::InFlight`]) and
/// the Lease released — saying how that went.
pub async fn run_leading_with<F, Fut>(context: Arc<Context>, also: F) -> Option<leader::Stopped>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let elector = leader::Elector::new(
        context.client.clone(),
        &context.oadp_namespace,
        leader::LeaderConfig::new(&leader::default_identity()),
    );
    let shutdown = context.shutdown.clone();
    leader::lead_forever(elector, leader::leading_flag(), shutdown, || {
        // Boxed: the controllers' future is large, and joined inline it overflows the stack.
        let controllers = Box::pin(run_controllers(context.clone()));
        let extra = Box::pin(also());
        async move {
            tokio::join!(controllers, extra);
        }
    })
    .await
}

/// Runs every controller (this replica leads) until the task is dropped.
async fn run_controllers(context: Arc<Context>) {
    if let Err(e) = context.load_policy().await {
        tracing::warn!(error = %e, "could not read the NAC policy; using defaults");
    }
    let (nab_watch, nab_store, [nab_changes, pool_changes, restore_changes]) =
        nab::watch_all(&context);
    tokio::join!(
        nab_watch,
        sync::run(context.clone(), None),
        gc::run(context.clone(), None),
        policy_source::watch(context.clone()),
        queue_feed::run(context.clone()),
        cluster_cache::run(context.clone()),
        positions::run(context.clone()),
        nab::run(context.clone(), nab_store.clone(), nab_changes),
        nabsl::run(context.clone()),
        nadr::run(context.clone()),
        nas::run(context.clone()),
        nar::run(context.clone(), restore_changes),
        bucket::run(context.clone(), nab_store, pool_changes),
        deletion_actions::run(context.clone()),
    );
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_then_caps_and_jitters() {
        assert_eq!(backoff_for(1, 1.0), Duration::from_millis(500));
        assert_eq!(backoff_for(2, 1.0), Duration::from_secs(1));
        assert_eq!(backoff_for(5, 1.0), Duration::from_secs(8));
        assert_eq!(backoff_for(30, 1.0), Duration::from_secs(300));
        assert_eq!(backoff_for(1, 0.5), Duration::from_millis(250));
    }
}
