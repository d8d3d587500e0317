//! Kubernetes Events on tenants' own objects (a NABSL, NADR or NAS), so `kubectl describe` and
//! `kubectl get events` in the tenant's namespace explain what NAC did and why.
//!
//! The pure `*_decision` modules say *which* transition deserves an Event ([`Notice`], plain
//! values); this module only publishes. Publishing is best effort: a failure is logged at debug
//! and never fails a reconcile, because an Event is an explanation, not state.
//!
//! Events are written through the core `v1` Events API, identified as kube-runtime's
//! [`Reporter`] `nac-controller`. Kubernetes serves the same Events under `events.k8s.io/v1`,
//! but tenants' `view`/`edit`/`admin` roles read only the core group's `events`, and the API
//! emulator keeps the two groups apart; the core group is the one every tenant can list.
//! Notes must only name objects of the tenant's own namespace: an Event is readable by anyone
//! who may view that namespace, so it never names another tenant's objects in the OADP namespace.
use std::sync::LazyLock;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, PostParams};
pub use kube::runtime::events::EventType;
use kube::runtime::events::Reporter;

/// The reporting controller named on every Event NAC publishes.
pub const REPORTING_CONTROLLER: &str = "nac-controller";
/// Longest note kept (the Events API's limit for `note`).
pub const MAX_NOTE_BYTES: usize = 1024;
/// Longest object name kept in an Event's name (`<object>.<16 hex digits>` must stay a valid
/// 253-character name).
const MAX_NAME_PREFIX: usize = 253 - 17;

/// NAC's identity as the reporter: `nac-controller` on this host (the pod name in a cluster).
static REPORTER: LazyLock<Reporter> = LazyLock::new(|| REPORTING_CONTROLLER.into());

/// An Event a reconcile decided to publish on the object it reconciled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice<'a> {
    /// Normal or Warning.
    pub type_: EventType,
    /// Why, in PascalCase (`BslSpecRefused`).
    pub reason: &'a str,
    /// What NAC did or tried, in PascalCase (`Validate`).
    pub action: &'a str,
    /// The explanation for the tenant; names only objects of the tenant's namespace.
    pub note: String,
}

impl<'a> Notice<'a> {
    /// A Normal notice.
    pub fn normal(reason: &'a str, action: &'a str, note: String) -> Self {
        Notice {
            type_: EventType::Normal,
            reason,
            action,
            note,
        }
    }

    /// A Warning notice.
    pub fn warning(reason: &'a str, action: &'a str, note: String) -> Self {
        Notice {
            type_: EventType::Warning,
            reason,
            action,
            note,
        }
    }
}

/// A reference to `object` for an Event (no resourceVersion: the Event is about the object,
/// not one version of it).
pub fn reference<K>(object: &K) -> ObjectReference
where
    K: kube::Resource<DynamicType = ()>,
{
    let mut reference = object.object_ref(&());
    reference.resource_version = None;
    reference
}

/// `note` cut to [`MAX_NOTE_BYTES`] on a character boundary.
fn bounded(mut note: String) -> String {
    if note.len() > MAX_NOTE_BYTES {
        let mut end = MAX_NOTE_BYTES;
        while !note.is_char_boundary(end) {
            end -= 1;
        }
        note.truncate(end);
    }
    note
}

/// The core `v1` Event for `object` (pure; `unique` makes the name unique, e.g. nanoseconds).
/// None when the object has no namespace or name: NAC never publishes outside a tenant's
/// namespace (a cluster-scoped reference would land in `default`).
pub fn event_for(
    object: &ObjectReference,
    notice: &Notice<'_>,
    now: &Time,
    unique: u128,
    instance: &str,
) -> Option<Event> {
    let namespace = object.namespace.clone().filter(|n| !n.is_empty())?;
    let name = object.name.as_deref().filter(|n| !n.is_empty())?;
    let prefix: String = name.chars().take(MAX_NAME_PREFIX).collect();
    Some(Event {
        metadata: kube::core::ObjectMeta {
            name: Some(format!("{prefix}.{:016x}", unique as u64)),
            namespace: Some(namespace),
            ..Default::default()
        },
        involved_object: object.clone(),
        reason: Some(notice.reason.to_string()),
        action: Some(notice.action.to_string()),
        message: Some(bounded(notice.note.clone())),
        type_: Some(
            match notice.type_ {
                EventType::Normal => "Normal",
                EventType::Warning => "Warning",
            }
            .to_string(),
        ),
        first_timestamp: Some(now.clone()),
        last_timestamp: Some(now.clone()),
        count: Some(1),
        source: Some(EventSource {
            component: Some(REPORTING_CONTROLLER.to_string()),
            host: None,
        }),
        reporting_component: Some(REPORTING_CONTROLLER.to_string()),
        reporting_instance: Some(instance.to_string()),
        ..Default::default()
    })
}

/// Publishes an Event on `object` in its namespace. Never fails: a refused or failed write is
/// logged at debug level.
pub async fn publish(
    client: &kube::Client,
    object: &ObjectReference,
    kind: EventType,
    reason: &str,
    action: &str,
    note: String,
) {
    let now = k8s_openapi::jiff::Timestamp::now();
    let instance = REPORTER
        .instance
        .clone()
        .unwrap_or_else(|| REPORTER.controller.clone());
    let notice = Notice {
        type_: kind,
        reason,
        action,
        note,
    };
    let unique = now.as_nanosecond().unsigned_abs();
    let Some(event) = event_for(object, &notice, &Time(now), unique, &instance) else {
        tracing::debug!(
            ?object,
            reason,
            "not publishing an Event outside a namespace"
        );
        return;
    };
    let namespace = event.metadata.namespace.clone().unwrap_or_default();
    let api: Api<Event> = Api::namespaced(client.clone(), &namespace);
    if let Err(e) = api.create(&PostParams::default(), &event).await {
        tracing::debug!(error = %e, namespace, reason, "could not publish an Event");
    }
}

/// Publishes `notice` (if any) on `object`; see [`publish`].
pub async fn publish_notice(
    client: &kube::Client,
    object: &ObjectReference,
    notice: Option<Notice<'_>>,
) {
    if let Some(n) = notice {
        publish(client, object, n.type_, n.reason, n.action, n.note).await;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn at() -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(1_800_000_000).unwrap())
    }

    fn object(namespace: Option<&str>, name: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("oadp.openshift.io/v1alpha1".into()),
            kind: Some("NonAdminBackupStorageLocation".into()),
            name: Some(name.into()),
            namespace: namespace.map(str::to_string),
            uid: Some("u-1".into()),
            ..Default::default()
        }
    }

    #[test]
    fn an_event_lands_in_the_objects_namespace_and_names_nac() {
        let notice = Notice::warning("BslSpecRefused", "Validate", "spec.x: no".into());
        let e = event_for(
            &object(Some("team-a"), "mine"),
            &notice,
            &at(),
            255,
            "pod-1",
        )
        .unwrap();
        assert_eq!(e.metadata.namespace.as_deref(), Some("team-a"));
        assert_eq!(e.metadata.name.as_deref(), Some("mine.00000000000000ff"));
        assert_eq!(e.involved_object.name.as_deref(), Some("mine"));
        assert_eq!(e.involved_object.uid.as_deref(), Some("u-1"));
        assert_eq!(e.type_.as_deref(), Some("Warning"));
        assert_eq!(e.reason.as_deref(), Some("BslSpecRefused"));
        assert_eq!(e.action.as_deref(), Some("Validate"));
        assert_eq!(e.message.as_deref(), Some("spec.x: no"));
        assert_eq!(e.reporting_component.as_deref(), Some(REPORTING_CONTROLLER));
        assert_eq!(e.reporting_instance.as_deref(), Some("pod-1"));
        assert_eq!(e.count, Some(1));
        assert_eq!(e.first_timestamp, Some(at()));
    }

    #[test]
    fn nothing_is_published_outside_a_namespace() {
        let notice = Notice::normal("R", "A", "n".into());
        assert!(event_for(&object(None, "mine"), &notice, &at(), 1, "i").is_none());
        assert!(event_for(&object(Some(""), "mine"), &notice, &at(), 1, "i").is_none());
        assert!(event_for(&object(Some("team-a"), ""), &notice, &at(), 1, "i").is_none());
    }

    #[test]
    fn long_names_and_notes_are_bounded() {
        let long = "a".repeat(253);
        let note = "é".repeat(MAX_NOTE_BYTES);
        let notice = Notice::normal("R", "A", note);
        let e = event_for(&object(Some("team-a"), &long), &notice, &at(), 1, "i").unwrap();
        assert!(e.metadata.name.unwrap().len() <= 253);
        let message = e.message.unwrap();
        assert!(message.len() <= MAX_NOTE_BYTES);
        assert!(message.chars().all(|c| c == 'é'));
    }

    #[test]
    fn references_drop_the_resource_version() {
        let mut cm = k8s_openapi::api::core::v1::ConfigMap::default();
        cm.metadata.name = Some("x".into());
        cm.metadata.namespace = Some("team-a".into());
        cm.metadata.resource_version = Some("7".into());
        let r = reference(&cm);
        assert_eq!(r.resource_version, None);
        assert_eq!(r.kind.as_deref(), Some("ConfigMap"));
        assert_eq!(r.namespace.as_deref(), Some("team-a"));
    }
}
