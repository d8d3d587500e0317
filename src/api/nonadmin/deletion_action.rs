//! `DeletionAction` (seed 003): a cluster admin's HTTPS webhook that NAC calls, once per matching
//! item of the backup, when a NonAdminBackup is permanently deleted (`spec.deleteBackup: true`) —
//! the webhook form of Velero's DeleteItemAction plugins.
//!
//! Semantics, as Velero's design for DeleteItemActions has them:
//! - actions run BEFORE the Velero DeleteBackupRequest is created, in alphanumeric (byte) order
//!   of their names, each receiving the Velero Backup and one item of the backup tarball per call;
//! - an action's `appliesTo` is Velero's `ResourceSelector`: included/excluded namespaces and
//!   resources (globs, `*`, group-qualified names such as `deployments.apps`) and a label
//!   selector; an empty selector matches every item, and cluster-scoped items only match when
//!   the namespace filter takes every namespace;
//! - unlike Velero's plugins, an action only receives items of the backup's own namespace (the
//!   NonAdminBackup's), plus cluster-scoped items of the resources it lists in
//!   `clusterScopedResources`: a tenant may write its backups' bucket itself, so an item of
//!   another namespace in its tarball is forged and never reaches the admin's webhook;
//! - **there is no rollback**: an action that already ran is not undone when a later action
//!   fails or the deletion is abandoned, because the rest of the backup (other actions' effects,
//!   snapshots) cannot be restored either. Webhooks must therefore be idempotent: a retried
//!   action is called again for every one of its items.
//!
//! Each action's outcome is a condition of the NonAdminBackup being deleted (see
//! [`action_condition_type`]), which is also how a restarted controller knows which actions
//! already ran.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Default of `spec.webhook.timeoutSeconds`.
pub const DEFAULT_TIMEOUT_SECONDS: i32 = 10;
/// Largest `spec.webhook.timeoutSeconds` (and smallest: 1), as for admission webhooks.
pub const MAX_TIMEOUT_SECONDS: i32 = 30;

/// `apiVersion` of the body NAC POSTs to a deletion action's webhook (one call per item).
pub const REQUEST_API_VERSION: &str = "oadp.openshift.io/v1alpha1";
/// `kind` of the body NAC POSTs to a deletion action's webhook.
pub const REQUEST_KIND: &str = "DeletionActionRequest";

/// An admin-registered webhook run for each matching item of a backup being permanently deleted.
// kube's `printcolumn(...)` entries repeat keys like `type_` by design.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "oadp.openshift.io",
    version = "v1alpha1",
    kind = "DeletionAction",
    status = "DeletionActionStatus",
    derive = "Default",
    derive = "PartialEq",
    printcolumn(
        name = "Failure-Policy",
        type_ = "string",
        json_path = ".spec.failurePolicy"
    ),
    printcolumn(
        name = "Valid",
        type_ = "string",
        json_path = ".status.conditions[?(@.type=='Valid')].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    doc = "A cluster admin's webhook called for each matching item of a backup before NAC permanently deletes it (no rollback)."
)]
#[serde(rename_all = "camelCase")]
pub struct DeletionActionSpec {
    /// Which items of a backup the action is called for; absent or empty matches every item.
    #[serde(default, skip_serializing_if = "ResourceSelector::is_empty")]
    pub applies_to: ResourceSelector,
    /// Cluster-scoped resources (`namespaces`, `persistentvolumes`,
    /// `clusterroles.rbac.authorization.k8s.io`, globs, `*`) whose items of a backup this
    /// action may receive. A backup's contents are written by Velero into a bucket the tenant
    /// may own, so NAC treats them as forged: an action only ever receives items of the
    /// backup's own namespace, plus cluster-scoped items of the resources listed here (a
    /// `namespaces` item only when it is the backup's own namespace). Absent or empty: no
    /// cluster-scoped item. Items of other namespaces are never sent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_scoped_resources: Vec<String>,
    /// Where and how to call the action.
    pub webhook: DeletionActionWebhook,
    /// What a failed call does to the deletion: `Fail` (default) keeps the backup and retries
    /// with backoff; `Ignore` records the failure and lets the deletion go on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_policy: Option<FailurePolicy>,
}

impl DeletionActionSpec {
    /// The failure policy, `Fail` when unset.
    pub fn effective_failure_policy(&self) -> FailurePolicy {
        self.failure_policy.unwrap_or_default()
    }
}

/// Velero's `ResourceSelector` (the `AppliesTo` of its item actions).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSelector {
    /// Namespaces (globs allowed) whose items match; empty or `*` means all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub included_namespaces: Vec<String>,
    /// Namespaces (globs allowed) whose items never match.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded_namespaces: Vec<String>,
    /// Resources (`configmaps`, `deployments.apps`, globs) that match; empty or `*` means all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub included_resources: Vec<String>,
    /// Resources that never match.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded_resources: Vec<String>,
    /// Labels the item must carry (at backup time); absent matches every item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}

impl ResourceSelector {
    /// Whether nothing is selected on, so every item matches.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// The HTTPS endpoint of a deletion action.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeletionActionWebhook {
    /// `https://` URL receiving a POST per matching item (no user info or fragment).
    pub url: String,
    /// Base64 of the PEM CA certificate(s) that verify the server; the platform's CA roots
    /// when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "byte"))]
    pub ca_bundle: Option<String>,
    /// Seconds to wait for each call (1 to 30; 10 when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 30))]
    pub timeout_seconds: Option<i32>,
}

impl DeletionActionWebhook {
    /// The timeout in seconds, [`DEFAULT_TIMEOUT_SECONDS`] when unset.
    pub fn effective_timeout_seconds(&self) -> i32 {
        self.timeout_seconds.unwrap_or(DEFAULT_TIMEOUT_SECONDS)
    }
}

/// What a failed call does to the deletion (the admission-webhook vocabulary).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum FailurePolicy {
    /// The deletion waits: the backup is kept and the action retried with backoff.
    #[default]
    Fail,
    /// The failure is recorded and the deletion goes on.
    Ignore,
}

impl FailurePolicy {
    /// The value as written in the spec.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Fail => "Fail",
            Self::Ignore => "Ignore",
        }
    }
}

/// What NAC reports about a deletion action.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeletionActionStatus {
    /// The `metadata.generation` the conditions describe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Valid`: whether the spec can be used (False with the problems in the message).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// Condition type on a DeletionAction: the spec is usable.
pub const VALID_CONDITION: &str = "Valid";
/// Reason of `Valid=True`.
pub const VALID_REASON: &str = "SpecValid";
/// Reason of `Valid=False`.
pub const INVALID_REASON: &str = "InvalidSpec";

/// Prefix of the per-action condition types NAC writes on a NonAdminBackup being deleted.
///
/// `metav1.Condition.type` is a qualified name: an optional DNS-subdomain prefix (lower case)
/// and a name part of at most 63 characters. A CamelCase prefix such as `DeletionAction/` would
/// fail apimachinery's condition validation, so the prefix is a subdomain of NAC's API group,
/// and DeletionAction names are limited to 63 characters.
pub const ACTION_CONDITION_PREFIX: &str = "deletionaction.oadp.openshift.io/";
/// Longest DeletionAction name (the name part of a qualified condition type).
pub const MAX_ACTION_NAME_LENGTH: usize = 63;

/// Reasons of the per-action conditions on a NonAdminBackup.
pub mod reasons {
    /// True: every matching item was accepted by the webhook.
    pub const SUCCEEDED: &str = "Succeeded";
    /// True: no item of the backup matches the action, so it was not called.
    pub const SKIPPED: &str = "Skipped";
    /// False: the action failed under `failurePolicy: Fail`; the deletion waits and retries.
    pub const FAILED: &str = "Failed";
    /// False: the action failed under `failurePolicy: Ignore`; the deletion went on.
    pub const IGNORED: &str = "Ignored";
}

/// The condition type recording the outcome of the action named `action`.
pub fn action_condition_type(action: &str) -> String {
    format!("{ACTION_CONDITION_PREFIX}{action}")
}

/// The action name of a per-action condition type, if `type_` is one.
pub fn action_of_condition_type(type_: &str) -> Option<&str> {
    type_
        .strip_prefix(ACTION_CONDITION_PREFIX)
        .filter(|name| !name.is_empty())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use kube::{CustomResourceExt, Resource};
    use serde_json::json;

    #[test]
    fn the_kind_is_cluster_scoped_with_a_status_subresource() {
        let crd = DeletionAction::crd();
        assert_eq!(crd.spec.scope, "Cluster");
        assert_eq!(crd.spec.names.plural, "deletionactions");
        assert!(
            crd.spec.versions[0]
                .subresources
                .as_ref()
                .is_some_and(|s| s.status.is_some())
        );
        assert_eq!(
            DeletionAction::api_version(&()),
            "oadp.openshift.io/v1alpha1"
        );
    }

    #[test]
    fn spec_reads_with_defaults_and_writes_sparse() {
        let action: DeletionAction = serde_json::from_value(json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "DeletionAction",
            "metadata": {"name": "a-cleanup"},
            "spec": {"webhook": {"url": "https://hooks.example/cleanup"}}
        }))
        .unwrap();
        assert_eq!(action.spec.effective_failure_policy(), FailurePolicy::Fail);
        assert_eq!(
            action.spec.webhook.effective_timeout_seconds(),
            DEFAULT_TIMEOUT_SECONDS
        );
        assert_eq!(action.spec.applies_to, ResourceSelector::default());
        let written = serde_json::to_value(&action.spec).unwrap();
        assert_eq!(
            written,
            json!({"webhook": {"url": "https://hooks.example/cleanup"}})
        );
        let ignore: FailurePolicy = serde_json::from_value(json!("Ignore")).unwrap();
        assert_eq!(ignore.as_str(), "Ignore");
    }

    #[test]
    fn the_schema_bounds_the_timeout_and_declares_the_ca_bundle_as_bytes() {
        let crd = serde_json::to_value(DeletionAction::crd()).unwrap();
        let webhook = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["properties"]["webhook"]["properties"];
        assert_eq!(webhook["timeoutSeconds"]["minimum"], json!(1.0));
        assert_eq!(webhook["timeoutSeconds"]["maximum"], json!(30.0));
        assert_eq!(webhook["caBundle"]["format"], "byte");
    }

    #[test]
    fn condition_types_are_qualified_names() {
        let type_ = action_condition_type("a-cleanup");
        assert_eq!(type_, "deletionaction.oadp.openshift.io/a-cleanup");
        assert_eq!(action_of_condition_type(&type_), Some("a-cleanup"));
        assert_eq!(action_of_condition_type("Deleting"), None);
        assert_eq!(action_of_condition_type(ACTION_CONDITION_PREFIX), None);
    }
}
