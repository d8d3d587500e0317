//! The one reconciler driver: every controller is a [`Reconciler`] (observe → decide → apply)
//! and this module runs it — the fresh read, the per-object jittered backoff, the metrics, the
//! Event of a step that took effect, and a tracing span per reconcile carrying the kind,
//! namespace, name and the step taken. A reader learns this shape once; each controller file
//! holds only what it observes and how it applies a step, and its `*_decision` module what it
//! decides.
use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

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

/// One kind of object NAC reconciles. The driver reads the object fresh (a watch cache may be
/// behind our own last write, and seed 004 asks every decision to start from the most recent
/// status), then calls, in order: [`observe`](Reconciler::observe) (the I/O that gathers what
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

    /// The object is gone (its fresh read found nothing): forget what was kept about it.
    fn forget(&self, _context: &Context, _namespace: Option<&str>, _name: &str) {}
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
    let result = pass(reconciler, &context, namespace.as_deref(), &name)
        .instrument(span)
        .await;
    health::record(R::KIND, result.as_ref().err());
    if result.is_ok() {
        context.succeeded(&backoff_key::<R>(&object));
    }
    result
}

/// Observe → decide → apply, from a fresh read.
async fn pass<R: Reconciler>(
    reconciler: &R,
    context: &Context,
    namespace: Option<&str>,
    name: &str,
) -> Result<Action, ControllerError> {
    let api = reconciler.api(context.client.clone(), namespace);
    let Some(object) = api.get_opt(name).await? else {
        reconciler.forget(context, namespace, name);
        return Ok(Action::await_change());
    };
    let observed = reconciler.observe(context, &object).await?;
    let step = reconciler.decide(context, &object, &observed);
    let step_name = R::step_name(&step);
    tracing::Span::current().record("step", step_name);
    tracing::debug!("reconcile step");
    let notice = reconciler.notice(&object, &observed, &step);
    drop(observed);
    let applied = reconciler.apply(context, &api, &object, step).await?;
    if applied.took_effect && notice.is_some() {
        events::publish_notice(&context.client, &events::reference(&object), notice).await;
    }
    Ok(applied.action)
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

    #[test]
    fn applied_says_whether_the_step_took_effect() {
        assert!(Applied::done(Action::await_change()).took_effect);
        assert!(!Applied::unchanged(Action::await_change()).took_effect);
    }
}
