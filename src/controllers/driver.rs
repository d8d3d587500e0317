//! The one reconciler driver: every controller is a [`Reconciler`] (observe → decide → apply)
//! and this module runs it — the read of the object (the watch cache's copy, and a fresh read
//! only before a step that is not guarded by the resourceVersion), the per-object jittered
//! backoff, the metrics, the
//! Event of a step that took effect, and a tracing span per reconcile carrying the kind,
//! namespace, name and the step taken. A reader learns this shape once; each controller file
//! holds only what it observes and how it applies a step, and its `*_decision` module what it
//! decides.
use std::collections::HashMap;
use std::fmt::Debug;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::Resource;
use kube::api::Api;
use kube::runtime::controller::{Action, Controller};
use serde::de::DeserializeOwned;
use tracing::Instrument;

use super::events::{self, Notice};
use super::{Context, ControllerError, health};

/// Requeue delay after a step that changed something: the next reconcile sees its effect.
pub const SOON: Duration = Duration::from_millis(20);

/// Requeue delay after a write to the object itself (status, finalizers): the watch event of
/// that write reconciles it sooner, from a cache that has it (a reconcile 20 ms later would often
/// still see the copy before the write, and its write would only conflict). This is the safety
/// net should no event come.
pub const AFTER_OWN_WRITE: Duration = Duration::from_secs(2);

/// How long a copy this replica wrote over is skipped ([`Superseded`]): longer than a watch
/// takes to deliver the write even while it re-lists under load, short enough that a write the
/// server took as a no-op holds nothing up for long.
pub const SUPERSEDED_FOR: Duration = Duration::from_secs(10);

/// What applying a step did.
#[derive(Debug)]
pub struct Applied {
    /// When to look again.
    pub action: Action,
    /// Whether the step changed anything (a create that found its object already there did
    /// not): only then is its Event published, so one change is never announced twice.
    pub took_effect: bool,
}

impl Applied {
    /// A step that took effect; look again after `action`.
    pub fn done(action: Action) -> Self {
        Applied {
            action,
            took_effect: true,
        }
    }

    /// A step that found nothing to change; look again after `action`.
    pub fn unchanged(action: Action) -> Self {
        Applied {
            action,
            took_effect: false,
        }
    }
}

/// One kind of object NAC reconciles. Seed 004 asks every decision to act on the most recent
/// status, and a watch cache may be behind our own last write. The driver meets it without a
/// read per reconcile: it decides on the cached copy, and a step that writes the object itself
/// (status, finalizers) carries the resourceVersion read, so a stale copy makes the write fail
/// with a conflict and the object is reconciled again from the newer copy. Only a step with
/// effects elsewhere ([`Reconciler::needs_fresh_read`]: creating or deleting Velero objects,
/// deleting the object) is decided again on a fresh read first, when the fresh copy differs
/// from the cached one. It calls, in order: [`observe`](Reconciler::observe) (the I/O that gathers what
/// the decision needs), [`decide`](Reconciler::decide) (pure: the one next step),
/// [`notice`](Reconciler::notice) and [`apply`](Reconciler::apply).
pub trait Reconciler: Send + Sync + 'static {
    /// The object reconciled (a tenant's custom resource, or a cluster-scoped one).
    type Object: Resource<DynamicType = ()>
        + Clone
        + Debug
        + DeserializeOwned
        + Send
        + Sync
        + 'static;
    /// Everything the decision looks at besides the object, read by [`Reconciler::observe`].
    type Observed: Send;
    /// The step decided.
    type Step: Send;

    /// The controller's name in metrics and spans (`nonadminbackup`).
    const KIND: &'static str;

    /// Where the object lives (`Api::namespaced` for a tenant's object).
    fn api(&self, client: kube::Client, namespace: Option<&str>) -> Api<Self::Object>;

    /// Gathers what the decision needs (the Velero objects, the verdict of the policy, …).
    fn observe(
        &self,
        context: &Context,
        object: &Self::Object,
    ) -> impl Future<Output = Result<Self::Observed, ControllerError>> + Send;

    /// The next step (pure: no I/O).
    fn decide(
        &self,
        context: &Context,
        object: &Self::Object,
        observed: &Self::Observed,
    ) -> Self::Step;

    /// The step's name for the span and the log (a step may carry Secret data, never logged).
    fn step_name(step: &Self::Step) -> &'static str;

    /// The Event that tells the tenant about `step`, if it takes effect.
    fn notice(
        &self,
        object: &Self::Object,
        observed: &Self::Observed,
        step: &Self::Step,
    ) -> Option<Notice<'static>>;

    /// Carries `step` out.
    fn apply(
        &self,
        context: &Context,
        api: &Api<Self::Object>,
        object: &Self::Object,
        step: Self::Step,
    ) -> impl Future<Output = Result<Applied, ControllerError>> + Send;

    /// Whether this reconciler decides on the watch cache's copy (every write to its object
    /// carries the resourceVersion read, and [`Reconciler::needs_fresh_read`] names the steps
    /// with effects elsewhere). Otherwise every reconcile starts from a fresh read, as before.
    const DECIDES_ON_CACHED_COPY: bool = false;

    /// Whether `step` has effects the object's resourceVersion does not guard (creates and
    /// deletes of other objects), so it is decided again on a fresh read when the cached copy
    /// is not the latest. Default: every step (a reconciler whose writes to its object all carry
    /// the resourceVersion read overrides it).
    fn needs_fresh_read(_step: &Self::Step) -> bool {
        true
    }

    /// Whether `step` writes the object itself (status, finalizers): the copy it was decided
    /// on is then superseded ([`Superseded`]).
    fn writes_object(_step: &Self::Step) -> bool {
        false
    }

    /// The object is gone (its fresh read found nothing): forget what was kept about it.
    fn forget(&self, _context: &Context, _namespace: Option<&str>, _name: &str) {}
}

/// Copies of objects this replica has just written over (key → the resourceVersion written
/// over, and when): a reconcile handed such a copy by a watch cache that has not seen the write
/// yet is skipped instead of deciding on it (its write would only conflict). An entry counts for
/// [`SUPERSEDED_FOR`] only, so a write the server took as a no-op (no new version, no event)
/// never holds the object up for longer.
#[derive(Debug, Default)]
pub struct Superseded(Mutex<HashMap<String, (String, Instant)>>);

impl Superseded {
    /// Whether the copy at `resource_version` of `key` was written over moments ago; a newer
    /// copy (or an old entry) clears the entry.
    pub fn holds(&self, key: &str, resource_version: Option<&str>) -> bool {
        let Ok(mut map) = self.0.lock() else {
            return false;
        };
        let held = match (map.get(key), resource_version) {
            (Some((written_over, at)), Some(rv)) => {
                written_over == rv && at.elapsed() < SUPERSEDED_FOR
            }
            _ => false,
        };
        if !held {
            map.remove(key);
        }
        held
    }

    /// Records that the copy at `resource_version` of `key` was just written over.
    pub fn record(&self, key: String, resource_version: Option<String>) {
        if let (Ok(mut map), Some(rv)) = (self.0.lock(), resource_version) {
            map.insert(key, (rv, Instant::now()));
        }
    }
}

/// Versions of objects this replica has just written (key → the resourceVersion the write
/// made, and when). The server's answer to a write carrying the resourceVersion read is as
/// fresh as a read made at that moment, so a cached copy at exactly that version, within
/// [`OWN_WRITE_FRESH_FOR`], needs no fresh read before a step with effects elsewhere: a read
/// would only find the same version (an NAB's finalizer patch is followed by its Velero
/// Backup's creation, one read fewer per NAB).
#[derive(Debug, Default)]
pub struct OwnWrites(Mutex<HashMap<String, (String, Instant)>>);

/// How long a version this replica wrote stands for a fresh read ([`OwnWrites`]): about as
/// long as the watch takes to bring it back and the object to be reconciled, far shorter than
/// anything a tenant does after creating an object.
pub const OWN_WRITE_FRESH_FOR: Duration = Duration::from_secs(5);

impl OwnWrites {
    /// Records that this replica's write of `key` made `resource_version`.
    pub fn record(&self, key: String, resource_version: String) {
        if resource_version.is_empty() {
            return;
        }
        if let Ok(mut map) = self.0.lock() {
            // Bounded by the objects written in the last few seconds: older entries go.
            if map.len() >= 4096 {
                map.retain(|_, (_, at)| at.elapsed() < OWN_WRITE_FRESH_FOR);
            }
            map.insert(key, (resource_version, Instant::now()));
        }
    }

    /// Whether the copy at `resource_version` of `key` is the version this replica's write
    /// made moments ago; any other answer forgets the entry (a newer copy, or too old).
    pub fn is_own_latest(&self, key: &str, resource_version: Option<&str>) -> bool {
        let Ok(mut map) = self.0.lock() else {
            return false;
        };
        let own = match (map.get(key), resource_version) {
            (Some((written, at)), Some(rv)) => written == rv && at.elapsed() < OWN_WRITE_FRESH_FOR,
            _ => false,
        };
        if !own {
            map.remove(key);
        }
        own
    }
}

/// The key of an object's backoff and failure count (`nonadminbackup/ns/name`).
pub fn backoff_key<R: Reconciler>(object: &R::Object) -> String {
    let meta = object.meta();
    match meta.namespace.as_deref() {
        Some(namespace) => format!(
            "{}/{namespace}/{}",
            R::KIND,
            meta.name.as_deref().unwrap_or_default()
        ),
        None => format!("{}/{}", R::KIND, meta.name.as_deref().unwrap_or_default()),
    }
}

/// One reconcile of `object` by `reconciler`: counted in the metrics, inside a span carrying
/// kind, namespace, name and the step taken; a success forgets the object's failures. Once the
/// process is stopping none starts (the next leader reconciles the object), and one running
/// holds the shutdown until its writes are done.
pub async fn reconcile<R: Reconciler>(
    reconciler: &R,
    object: Arc<R::Object>,
    context: Arc<Context>,
) -> Result<Action, ControllerError> {
    let Some(_writing) = context.shutdown.begin() else {
        return Ok(Action::await_change());
    };
    let key = backoff_key::<R>(&object);
    if context
        .superseded
        .holds(&key, object.meta().resource_version.as_deref())
    {
        tracing::debug!(kind = R::KIND, object = %key, "the cache has not seen our last write yet");
        return Ok(Action::requeue(AFTER_OWN_WRITE));
    }
    let meta = object.meta();
    let namespace = meta.namespace.clone();
    let name = meta.name.clone().unwrap_or_default();
    let span = tracing::info_span!(
        "reconcile",
        kind = R::KIND,
        namespace = namespace.as_deref().unwrap_or_default(),
        name = %name,
        step = tracing::field::Empty,
    );
    let result = match pass(reconciler, &context, &object, namespace.as_deref(), &name)
        .instrument(span)
        .await
    {
        // A write carrying the resourceVersion of a cached copy that was behind: nothing was
        // written; the watch brings the newer copy and the object is decided again on it.
        Err(e) if e.is_conflict() => {
            tracing::debug!(kind = R::KIND, object = %name, "decided on a stale copy; deciding again");
            health::counters().record_conflict(R::KIND);
            Ok(Action::requeue(SOON))
        }
        other => other,
    };
    health::record(R::KIND, result.as_ref().err());
    if result.is_ok() {
        context.succeeded(&backoff_key::<R>(&object));
    }
    result
}

/// Observe → decide → apply, on the cached copy; decided again on a fresh read before a step
/// that needs one (see [`Reconciler`]).
async fn pass<R: Reconciler>(
    reconciler: &R,
    context: &Context,
    cached: &R::Object,
    namespace: Option<&str>,
    name: &str,
) -> Result<Action, ControllerError> {
    let api = reconciler.api(context.client.clone(), namespace);
    if !R::DECIDES_ON_CACHED_COPY {
        let Some(latest) = api.get_opt(name).await? else {
            reconciler.forget(context, namespace, name);
            return Ok(Action::await_change());
        };
        let observed = reconciler.observe(context, &latest).await?;
        let step = reconciler.decide(context, &latest, &observed);
        return carry_out(reconciler, context, &api, &latest, observed, step).await;
    }
    let observed = reconciler.observe(context, cached).await?;
    let step = reconciler.decide(context, cached, &observed);
    if !R::needs_fresh_read(&step)
        || context.own_writes.is_own_latest(
            &backoff_key::<R>(cached),
            cached.meta().resource_version.as_deref(),
        )
    {
        return carry_out(reconciler, context, &api, cached, observed, step).await;
    }
    let Some(latest) = api.get_opt(name).await? else {
        reconciler.forget(context, namespace, name);
        return Ok(Action::await_change());
    };
    if same_version(&latest, cached) {
        return carry_out(reconciler, context, &api, cached, observed, step).await;
    }
    tracing::debug!("the cached copy was behind; deciding again on the fresh read");
    drop(observed);
    let observed = reconciler.observe(context, &latest).await?;
    let step = reconciler.decide(context, &latest, &observed);
    carry_out(reconciler, context, &api, &latest, observed, step).await
}

/// Applies the step decided on `object`, and tells the tenant when it took effect.
async fn carry_out<R: Reconciler>(
    reconciler: &R,
    context: &Context,
    api: &Api<R::Object>,
    object: &R::Object,
    observed: R::Observed,
    step: R::Step,
) -> Result<Action, ControllerError> {
    let step_name = R::step_name(&step);
    tracing::Span::current().record("step", step_name);
    tracing::debug!("reconcile step");
    let notice = reconciler.notice(object, &observed, &step);
    drop(observed);
    let writes_object = R::writes_object(&step);
    let applied = reconciler.apply(context, api, object, step).await?;
    if writes_object {
        context.superseded.record(
            backoff_key::<R>(object),
            object.meta().resource_version.clone(),
        );
    }
    if applied.took_effect && notice.is_some() {
        events::publish_notice(&context.client, &events::reference(object), notice).await;
    }
    Ok(applied.action)
}

/// Whether two copies are the same version of an object (same UID and resourceVersion).
fn same_version<K: Resource>(a: &K, b: &K) -> bool {
    let (a, b) = (a.meta(), b.meta());
    a.uid == b.uid && a.resource_version.is_some() && a.resource_version == b.resource_version
}

/// After a failed reconcile: retry with the object's own jittered exponential backoff.
pub fn error_policy<R: Reconciler>(
    object: Arc<R::Object>,
    error: &ControllerError,
    context: Arc<Context>,
) -> Action {
    let key = backoff_key::<R>(&object);
    let wait = context.backoff(&key);
    tracing::warn!(kind = R::KIND, object = %key, error = %error, retry_in = ?wait, "reconcile failed");
    Action::requeue(wait)
}

/// Runs `controller` (its watches already wired) with `reconciler` until the task is dropped.
pub async fn run<R: Reconciler>(
    controller: Controller<R::Object>,
    reconciler: R,
    context: Arc<Context>,
) where
    <R::Object as Resource>::DynamicType: Eq + std::hash::Hash + Clone + Debug + Unpin,
{
    let reconciler = Arc::new(reconciler);
    controller
        .run(
            move |object, context| {
                let reconciler = reconciler.clone();
                async move { reconcile(&*reconciler, object, context).await }
            },
            error_policy::<R>,
            context,
        )
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(kind = R::KIND, error = %e, "reconcile error");
            }
        })
        .await;
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::api::nonadmin::{DeletionAction, NonAdminBackup};

    struct Backups;

    impl Reconciler for Backups {
        type Object = NonAdminBackup;
        type Observed = ();
        type Step = ();
        const KIND: &'static str = "nonadminbackup";
        fn api(&self, client: kube::Client, namespace: Option<&str>) -> Api<NonAdminBackup> {
            Api::namespaced(client, namespace.unwrap_or_default())
        }
        async fn observe(&self, _: &Context, _: &NonAdminBackup) -> Result<(), ControllerError> {
            Ok(())
        }
        fn decide(&self, _: &Context, _: &NonAdminBackup, _: &()) {}
        fn step_name(_: &()) -> &'static str {
            "Nothing"
        }
        fn notice(&self, _: &NonAdminBackup, _: &(), _: &()) -> Option<Notice<'static>> {
            None
        }
        async fn apply(
            &self,
            _: &Context,
            _: &Api<NonAdminBackup>,
            _: &NonAdminBackup,
            _: (),
        ) -> Result<Applied, ControllerError> {
            Ok(Applied::unchanged(Action::await_change()))
        }
    }

    struct Actions;

    impl Reconciler for Actions {
        type Object = DeletionAction;
        type Observed = ();
        type Step = ();
        const KIND: &'static str = "deletionaction";
        fn api(&self, client: kube::Client, _: Option<&str>) -> Api<DeletionAction> {
            Api::all(client)
        }
        async fn observe(&self, _: &Context, _: &DeletionAction) -> Result<(), ControllerError> {
            Ok(())
        }
        fn decide(&self, _: &Context, _: &DeletionAction, _: &()) {}
        fn step_name(_: &()) -> &'static str {
            "Nothing"
        }
        fn notice(&self, _: &DeletionAction, _: &(), _: &()) -> Option<Notice<'static>> {
            None
        }
        async fn apply(
            &self,
            _: &Context,
            _: &Api<DeletionAction>,
            _: &DeletionAction,
            _: (),
        ) -> Result<Applied, ControllerError> {
            Ok(Applied::unchanged(Action::await_change()))
        }
    }

    /// Backoff keys name the kind, so a NAB and a NAR of one name never share a failure count,
    /// and cluster-scoped objects have no namespace part.
    #[test]
    fn backoff_keys_name_kind_namespace_and_name() {
        let mut nab = NonAdminBackup::new("nightly", Default::default());
        nab.metadata.namespace = Some("team-a".into());
        assert_eq!(
            backoff_key::<Backups>(&nab),
            "nonadminbackup/team-a/nightly"
        );
        let action: DeletionAction = serde_json::from_value(serde_json::json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "DeletionAction",
            "metadata": {"name": "purge-pvcs"}, "spec": {"webhook": {"url": "https://hooks.example/x"}}
        }))
        .unwrap();
        assert_eq!(backoff_key::<Actions>(&action), "deletionaction/purge-pvcs");
    }

    /// Only the very version this replica's write made stands for a fresh read, and only
    /// once: an older copy, a newer one, another object or an unrecorded object need the read.
    #[test]
    fn only_the_version_an_own_write_made_stands_for_a_fresh_read() {
        let writes = OwnWrites::default();
        writes.record("nonadminbackup/team-a/x".into(), "42".into());
        writes.record("nonadminbackup/team-a/blank".into(), String::new());
        assert!(!writes.is_own_latest("nonadminbackup/team-a/blank", Some("")));
        assert!(!writes.is_own_latest("nonadminbackup/team-b/x", Some("42")));
        assert!(!writes.is_own_latest("nonadminbackup/team-a/x", None));
        // Any miss forgets the entry; written again, its version stands.
        writes.record("nonadminbackup/team-a/x".into(), "42".into());
        assert!(writes.is_own_latest("nonadminbackup/team-a/x", Some("42")));
        // A copy at another version (newer or older) forgets the entry.
        assert!(!writes.is_own_latest("nonadminbackup/team-a/x", Some("43")));
        assert!(!writes.is_own_latest("nonadminbackup/team-a/x", Some("42")));
    }

    #[test]
    fn applied_says_whether_the_step_took_effect() {
        assert!(Applied::done(Action::await_change()).took_effect);
        assert!(!Applied::unchanged(Action::await_change()).took_effect);
    }
}
