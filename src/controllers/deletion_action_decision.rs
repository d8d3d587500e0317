//! Pure decisions of deletion actions (seed 003): whether a DeletionAction is usable, which items
//! of a backup it applies to (Velero's `ResourceSelector` rules), which actions a NonAdminBackup
//! being deleted still has to run and in which order, what each call sends, and how an outcome
//! becomes the NonAdminBackup's condition and the next retry. No I/O: the executor
//! ([`super::deletion_actions`]) downloads, calls and writes what these functions decide.
//!
//! Progress lives in the NonAdminBackup's conditions — one per action, typed
//! [`action_condition_type`] — so a restarted controller resumes after the last finished action
//! without calling it again. Finished means Succeeded, Skipped (nothing matched) or Ignored (failed
//! under `failurePolicy: Ignore`); Failed (under `Fail`) is retried, with exponential backoff
//! whose attempt count is kept in the condition's message.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine as _;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use serde_json::{Value, json};

use super::status::{differs_ignoring_transition_times, set_condition};
use crate::api::nonadmin::deletion_action::{
    INVALID_REASON, MAX_ACTION_NAME_LENGTH, MAX_TIMEOUT_SECONDS, REQUEST_API_VERSION, REQUEST_KIND,
    VALID_CONDITION, VALID_REASON, action_condition_type, reasons,
};
use crate::api::nonadmin::{
    DeletionAction, DeletionActionStatus, FailurePolicy, NonAdminBackup, ResourceSelector,
};
use crate::api::origin::{OriginKind, origin_annotations, origin_labels};
use crate::api::selector::Selector;
use crate::api::velero::{
    Backup, BackupPhase, DownloadRequest, DownloadRequestSpec, DownloadTarget, DownloadTargetKind,
};
use crate::manifest::item::ManifestItem;
use crate::manifest::selection::{
    ApiResourceInfo, Glob, IncludesExcludes, includes_excludes_problems,
};
use crate::manifest::tarball::BackupItem;
use crate::policy::selector::{compile as compile_selector, label_key_problem};

/// First retry delay of a failed action (before jitter).
pub const RETRY_BASE: Duration = Duration::from_secs(1);
/// Longest retry delay of a failed action.
pub const RETRY_CAP: Duration = Duration::from_secs(300);
/// Longest error text kept in a condition message (a webhook may answer with a whole page).
pub const MAX_ERROR_CHARS: usize = 512;
/// Message of `Valid=True`.
pub const VALID_MESSAGE: &str = "the deletion action is valid";
/// Longest excerpt of a webhook's answer written to the controller's log (never to the
/// tenant: see [`answer_failure`]).
pub const MAX_LOGGED_ANSWER_CHARS: usize = 1024;

// ---------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------

/// Where and how to call a valid action's webhook.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookTarget {
    /// The `https://` URL.
    pub url: url::Url,
    /// PEM CA certificates verifying the server; `None` means the platform's roots.
    pub ca_pem: Option<Vec<u8>>,
    /// Time allowed for each call.
    pub timeout: Duration,
}

/// A DeletionAction whose spec can be used.
#[derive(Clone, Debug)]
pub struct ValidAction {
    /// The action's name (its order among actions, and its condition type).
    pub name: String,
    /// What a failure does to the deletion.
    pub failure_policy: FailurePolicy,
    /// The webhook.
    pub webhook: WebhookTarget,
}

/// Checks a DeletionAction; every problem is reported as `field: message`.
pub fn validate(action: &DeletionAction) -> Result<ValidAction, Vec<String>> {
    let mut problems = Vec::new();
    let name = action.metadata.name.clone().unwrap_or_default();
    if name.len() > MAX_ACTION_NAME_LENGTH {
        problems.push(format!(
            "metadata.name: must be at most {MAX_ACTION_NAME_LENGTH} characters, as it names a condition of the NonAdminBackups it runs for"
        ));
    } else if let Some(reason) = label_key_problem(&action_condition_type(&name)) {
        problems.push(format!(
            "metadata.name: cannot name a condition type: {reason}"
        ));
    }
    let webhook = &action.spec.webhook;
    let url = match url::Url::parse(&webhook.url) {
        Err(error) => {
            problems.push(format!("spec.webhook.url: not a URL: {error}"));
            None
        }
        Ok(url) => {
            let before = problems.len();
            if url.scheme() != "https" {
                problems.push("spec.webhook.url: must be an https:// URL".to_string());
            }
            if url.host_str().is_none_or(str::is_empty) {
                problems.push("spec.webhook.url: has no host".to_string());
            }
            // As for admission webhooks: credentials belong in the CA/TLS set-up, and the URL is
            // called as written.
            if !url.username().is_empty() || url.password().is_some() {
                problems.push("spec.webhook.url: must not contain user information".to_string());
            }
            if url.fragment().is_some() {
                problems.push("spec.webhook.url: must not contain a fragment".to_string());
            }
            if url.query().is_some() {
                problems.push("spec.webhook.url: must not contain a query".to_string());
            }
            (problems.len() == before).then_some(url)
        }
    };
    let ca_pem = match webhook.ca_bundle.as_deref() {
        None | Some("") => None,
        Some(encoded) => match ca_bundle_problem(encoded) {
            Ok(pem) => Some(pem),
            Err(problem) => {
                problems.push(format!("spec.webhook.caBundle: {problem}"));
                None
            }
        },
    };
    let timeout = webhook.effective_timeout_seconds();
    if !(1..=MAX_TIMEOUT_SECONDS).contains(&timeout) {
        problems.push(format!(
            "spec.webhook.timeoutSeconds: must be between 1 and {MAX_TIMEOUT_SECONDS}"
        ));
    }
    problems.extend(applies_to_problems(&action.spec.applies_to));
    for (index, pattern) in action.spec.cluster_scoped_resources.iter().enumerate() {
        if pattern.is_empty() {
            problems.push(format!(
                "spec.clusterScopedResources[{index}]: must not be empty"
            ));
        } else if let Err(error) = Glob::compile(pattern) {
            problems.push(format!("spec.clusterScopedResources[{index}]: {error}"));
        }
    }
    match url {
        Some(url) if problems.is_empty() => Ok(ValidAction {
            name,
            failure_policy: action.spec.effective_failure_policy(),
            webhook: WebhookTarget {
                url,
                ca_pem,
                timeout: Duration::from_secs(timeout.unsigned_abs().into()),
            },
        }),
        _ => Err(problems),
    }
}

/// The PEM inside a `caBundle`, or what is wrong with it: base64 of one or more PEM
/// certificates that parse.
fn ca_bundle_problem(encoded: &str) -> Result<Vec<u8>, String> {
    use rustls::pki_types::{CertificateDer, pem::PemObject};
    let pem = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map_err(|error| format!("not base64: {error}"))?;
    let mut roots = rustls::RootCertStore::empty();
    for certificate in CertificateDer::pem_slice_iter(&pem) {
        let certificate = certificate.map_err(|error| format!("not PEM: {error}"))?;
        roots
            .add(certificate)
            .map_err(|error| format!("not a usable CA certificate: {error}"))?;
    }
    if roots.is_empty() {
        return Err("holds no PEM certificate".to_string());
    }
    Ok(pem)
}

/// Problems of `appliesTo`: Velero's include/exclude rules, globs that compile, a label
/// selector the API server would accept.
fn applies_to_problems(selector: &ResourceSelector) -> Vec<String> {
    let mut problems = Vec::new();
    for (field, includes, excludes) in [
        (
            "Namespaces",
            &selector.included_namespaces,
            &selector.excluded_namespaces,
        ),
        (
            "Resources",
            &selector.included_resources,
            &selector.excluded_resources,
        ),
    ] {
        for problem in includes_excludes_problems(includes, excludes) {
            problems.push(format!("spec.appliesTo: {field}: {problem}"));
        }
        for (list, patterns) in [("included", includes), ("excluded", excludes)] {
            for (index, pattern) in patterns.iter().enumerate() {
                if pattern.is_empty() {
                    problems.push(format!(
                        "spec.appliesTo.{list}{field}[{index}]: must not be empty"
                    ));
                } else if let Err(error) = Glob::compile(pattern) {
                    problems.push(format!("spec.appliesTo.{list}{field}[{index}]: {error}"));
                }
            }
        }
    }
    if let Some(labels) = &selector.label_selector
        && let Err(error) = compile_selector(labels)
    {
        problems.push(format!("spec.appliesTo.labelSelector: {error}"));
    }
    problems
}

/// The status NAC reports for a DeletionAction: `Valid` with the problems, for its generation.
pub fn action_status(action: &DeletionAction, now: &Time) -> DeletionActionStatus {
    let mut status = action.status.clone().unwrap_or_default();
    status.observed_generation = action.metadata.generation;
    match validate(action) {
        Ok(_) => set_condition(
            &mut status.conditions,
            VALID_CONDITION,
            true,
            VALID_REASON,
            VALID_MESSAGE,
            now,
        ),
        Err(problems) => set_condition(
            &mut status.conditions,
            VALID_CONDITION,
            false,
            INVALID_REASON,
            &problems.join("; "),
            now,
        ),
    }
    status
}

/// Whether a DeletionAction's status needs writing (transition times aside).
pub fn action_status_changed(
    old: Option<&DeletionActionStatus>,
    new: &DeletionActionStatus,
) -> bool {
    differs_ignoring_transition_times(old, new, |s| &mut s.conditions)
}

// ---------------------------------------------------------------------------------------------
// Matching items (Velero's ResourceSelector as its action resolver applies it)
// ---------------------------------------------------------------------------------------------

/// An item of a backup, as far as `appliesTo` looks at it: a manifest item or a tarball item.
pub trait DeletionItem {
    /// API group; empty for the core group.
    fn group(&self) -> &str;
    /// Version stored.
    fn version(&self) -> &str;
    /// Kind.
    fn kind(&self) -> &str;
    /// Plural resource name.
    fn resource(&self) -> &str;
    /// Namespace; `None` for cluster-scoped objects.
    fn namespace(&self) -> Option<&str>;
    /// Object name.
    fn name(&self) -> &str;
    /// Labels at backup time.
    fn labels(&self) -> Cow<'_, BTreeMap<String, String>>;
    /// Whether what the item's object says of itself (the `metadata.namespace` and
    /// `metadata.name` a webhook reads) is where the item is filed. A tarball item filed under
    /// one namespace that names another is forged.
    fn self_consistent(&self) -> bool {
        true
    }
}

impl DeletionItem for ManifestItem {
    fn group(&self) -> &str {
        &self.group
    }
    fn version(&self) -> &str {
        &self.version
    }
    fn kind(&self) -> &str {
        &self.kind
    }
    fn resource(&self) -> &str {
        &self.resource
    }
    fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }
    fn name(&self) -> &str {
        &self.name
    }
    fn labels(&self) -> Cow<'_, BTreeMap<String, String>> {
        Cow::Borrowed(&self.labels)
    }
}

impl DeletionItem for BackupItem {
    fn group(&self) -> &str {
        &self.group
    }
    fn version(&self) -> &str {
        &self.version
    }
    fn kind(&self) -> &str {
        &self.kind
    }
    fn resource(&self) -> &str {
        &self.resource
    }
    fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }
    fn name(&self) -> &str {
        &self.name
    }
    fn labels(&self) -> Cow<'_, BTreeMap<String, String>> {
        Cow::Owned(crate::manifest::selection::object_labels(&self.object))
    }
    fn self_consistent(&self) -> bool {
        let metadata = &self.object["metadata"];
        let namespace = metadata["namespace"].as_str().filter(|n| !n.is_empty());
        namespace == self.namespace.as_deref() && metadata["name"].as_str() == Some(&self.name)
    }
}

// ---------------------------------------------------------------------------------------------
// Which items an action may receive at all (the backup's namespace)
// ---------------------------------------------------------------------------------------------

/// Why an item of a backup is never sent to an action, whatever its `appliesTo`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutOfScope {
    /// It belongs to another namespace than the backup's (or is the Namespace object of one).
    OtherNamespace,
    /// It is cluster-scoped and its resource is not in the action's `clusterScopedResources`.
    UnlistedClusterScoped,
    /// Its object names another namespace or name than the one it is filed under.
    Inconsistent,
}

/// Items of a backup kept from an action by its scope, counted for the controller's log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dropped {
    /// Items of other namespaces.
    pub other_namespace: usize,
    /// Cluster-scoped items of resources the action does not list.
    pub unlisted_cluster_scoped: usize,
    /// Items whose object contradicts where it is filed.
    pub inconsistent: usize,
}

impl Dropped {
    /// Counts one item out of scope.
    pub fn count(&mut self, why: OutOfScope) {
        let counter = match why {
            OutOfScope::OtherNamespace => &mut self.other_namespace,
            OutOfScope::UnlistedClusterScoped => &mut self.unlisted_cluster_scoped,
            OutOfScope::Inconsistent => &mut self.inconsistent,
        };
        *counter = counter.saturating_add(1);
    }

    /// Items dropped in all.
    pub fn total(&self) -> usize {
        self.other_namespace
            .saturating_add(self.unlisted_cluster_scoped)
            .saturating_add(self.inconsistent)
    }
}

/// The items an action may receive from the backup of one NonAdminBackup: those of the NAB's
/// namespace, and cluster-scoped items of the resources the action lists (a Namespace only
/// when it is the NAB's). A tenant can write its backups' bucket itself, so the tarball is
/// treated as forged: an item's namespace is the tenant's claim, and only its own namespace
/// is believed.
#[derive(Clone, Debug)]
pub struct ItemScope {
    namespace: String,
    cluster_scoped: Option<IncludesExcludes>,
}

impl ItemScope {
    /// The scope of an action with `cluster_scoped_resources` on a backup of `namespace`;
    /// resource names resolve against `discovery` as `appliesTo`'s do.
    pub fn new(
        namespace: &str,
        cluster_scoped_resources: &[String],
        discovery: &[ApiResourceInfo],
    ) -> Self {
        let listed: Vec<String> = cluster_scoped_resources
            .iter()
            .filter(|name| !name.is_empty())
            .map(|name| resolve_resource_name(name, discovery))
            .collect();
        Self {
            namespace: namespace.to_string(),
            // An empty include list would mean "everything" to Velero's rules: here it means
            // no cluster-scoped item at all.
            cluster_scoped: (!listed.is_empty()).then(|| IncludesExcludes::new(listed, [])),
        }
    }

    /// Whether the action may receive `item`, or why not.
    pub fn admits(&self, item: &impl DeletionItem) -> Result<(), OutOfScope> {
        if !item.self_consistent() {
            return Err(OutOfScope::Inconsistent);
        }
        if self.namespace.is_empty() {
            return Err(OutOfScope::OtherNamespace);
        }
        match item.namespace() {
            Some(namespace) if namespace == self.namespace => Ok(()),
            Some(_) => Err(OutOfScope::OtherNamespace),
            None => {
                let listed = self.cluster_scoped.as_ref().is_some_and(|listed| {
                    listed.should_include(&group_resource(item.group(), item.resource()))
                });
                if !listed {
                    return Err(OutOfScope::UnlistedClusterScoped);
                }
                let a_namespace = item.group().is_empty() && item.resource() == "namespaces";
                if a_namespace && item.name() != self.namespace {
                    return Err(OutOfScope::OtherNamespace);
                }
                Ok(())
            }
        }
    }
}

/// How an item is named in messages: `<resource>[.<group>]/<namespace>/<name>` (or without the
/// namespace for cluster-scoped items).
pub fn item_label(item: &impl DeletionItem) -> String {
    let resource = group_resource(item.group(), item.resource());
    match item.namespace() {
        Some(namespace) => format!("{resource}/{namespace}/{}", item.name()),
        None => format!("{resource}/{}", item.name()),
    }
}

fn group_resource(group: &str, resource: &str) -> String {
    crate::manifest::selection::group_resource(group, resource)
}

/// The resources the items belong to, in the order Velero's discovery helper lists them (core
/// group first, then groups by name) — what resource names in `appliesTo` resolve against.
pub fn discovery_of<'a, I: DeletionItem + 'a>(
    items: impl IntoIterator<Item = &'a I>,
) -> Vec<ApiResourceInfo> {
    let mut found: BTreeMap<(bool, String, String), ApiResourceInfo> = BTreeMap::new();
    for item in items {
        found
            .entry((
                !item.group().is_empty(),
                item.group().to_string(),
                item.resource().to_string(),
            ))
            .or_insert_with(|| ApiResourceInfo {
                group: item.group().to_string(),
                version: item.version().to_string(),
                kind: item.kind().to_string(),
                plural: item.resource().to_string(),
                namespaced: item.namespace().is_some(),
            });
    }
    found.into_values().collect()
}

/// An `appliesTo` ready for matching.
#[derive(Clone, Debug)]
pub struct AppliesTo {
    namespaces: IncludesExcludes,
    resources: IncludesExcludes,
    labels: Option<Selector>,
}

impl AppliesTo {
    /// Compiles `selector`, resolving resource names against `discovery` as Velero's
    /// `GetResourceIncludesExcludes` does: a plural or singular name (in the named group, or
    /// unqualified in the first group serving it) becomes `plural[.group]`; anything else —
    /// `*`, globs, unknown names — is kept as written, so an unknown include never widens into
    /// "everything". Fails only on a label selector validation refuses.
    pub fn compile(
        selector: &ResourceSelector,
        discovery: &[ApiResourceInfo],
    ) -> Result<Self, String> {
        let resolve = |names: &[String]| -> Vec<String> {
            names
                .iter()
                .map(|name| resolve_resource_name(name, discovery))
                .collect()
        };
        Ok(Self {
            namespaces: IncludesExcludes::new(
                selector.included_namespaces.iter().cloned(),
                selector.excluded_namespaces.iter().cloned(),
            ),
            resources: IncludesExcludes::new(
                resolve(&selector.included_resources),
                resolve(&selector.excluded_resources),
            ),
            labels: selector
                .label_selector
                .as_ref()
                .map(compile_selector)
                .transpose()
                .map_err(|error| error.to_string())?,
        })
    }

    /// Whether the action applies to `item` (Velero's `resolvedAction.ShouldUse`): its resource
    /// is included; a namespaced item's namespace is included, while a cluster-scoped item only
    /// matches when every namespace is; and its labels match the selector.
    pub fn matches(&self, item: &impl DeletionItem) -> bool {
        if !self
            .resources
            .should_include(&group_resource(item.group(), item.resource()))
        {
            return false;
        }
        match item.namespace() {
            Some(namespace) if !self.namespaces.should_include(namespace) => return false,
            None if !self.namespaces.include_everything() => return false,
            _ => {}
        }
        self.labels
            .as_ref()
            .is_none_or(|selector| selector.matches(&item.labels()))
    }
}

/// `schema.ParseGroupResource` then the discovery helper's `ResourceFor`: see
/// [`AppliesTo::compile`].
fn resolve_resource_name(name: &str, discovery: &[ApiResourceInfo]) -> String {
    if name == "*" {
        return name.to_string();
    }
    let lowered = name.to_lowercase();
    let (resource, group) = lowered.split_once('.').unwrap_or((lowered.as_str(), ""));
    let named =
        |info: &&ApiResourceInfo| info.plural == resource || info.kind.to_lowercase() == resource;
    let found = if group.is_empty() {
        discovery.iter().find(named)
    } else {
        discovery
            .iter()
            .filter(|info| info.group == group)
            .find(named)
    };
    found
        .map(ApiResourceInfo::group_resource)
        .unwrap_or_else(|| name.to_string())
}

// ---------------------------------------------------------------------------------------------
// Which actions, in which order, on which items
// ---------------------------------------------------------------------------------------------

/// Whether the NAB's conditions say the action named `name` is finished (Succeeded, Skipped or
/// Ignored): a restarted controller does not call it again.
pub fn is_done(conditions: &[Condition], name: &str) -> bool {
    let type_ = action_condition_type(name);
    conditions.iter().any(|c| {
        c.type_ == type_
            && [reasons::SUCCEEDED, reasons::SKIPPED, reasons::IGNORED].contains(&c.reason.as_str())
    })
}

/// The actions still to run for a NAB with `conditions`, in alphanumeric (byte) order of their
/// names, as Velero orders its DeleteItemAction plugins.
pub fn pending_actions(
    actions: &[DeletionAction],
    conditions: &[Condition],
) -> Vec<DeletionAction> {
    let mut pending: Vec<DeletionAction> = actions
        .iter()
        .filter(|action| {
            let name = action.metadata.name.as_deref().unwrap_or_default();
            !name.is_empty() && !is_done(conditions, name)
        })
        .cloned()
        .collect();
    pending.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    pending
}

/// What the deletion actions need from the backup before they can run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ContentsNeed {
    /// The backup has not finished: its contents are not final (and Velero would refuse to
    /// delete it anyway). Look again later.
    WaitForBackup,
    /// Download the tarball.
    Download,
    /// The backup holds no items (it failed before writing any); every action is skipped.
    NoContents,
}

/// What the actions need from `backup`, by its phase.
pub fn contents_need(backup: &Backup) -> ContentsNeed {
    match backup.status.as_ref().and_then(|s| s.phase.as_ref()) {
        Some(BackupPhase::Completed | BackupPhase::PartiallyFailed) => ContentsNeed::Download,
        Some(BackupPhase::Failed | BackupPhase::FailedValidation) => ContentsNeed::NoContents,
        _ => ContentsNeed::WaitForBackup,
    }
}

/// Name of the Velero DownloadRequest fetching the contents of `backup_name` for its deletion
/// actions.
pub fn contents_request_name(backup_name: &str) -> String {
    format!("{backup_name}-deletion-actions")
}

/// The Velero DownloadRequest for the tarball of `backup` (kind `BackupContents`), labelled as
/// NAC's and annotated with the NAB it serves, so garbage collection removes it with the NAB.
pub fn contents_request(backup: &Backup, nab: &NonAdminBackup, nacuuid: &str) -> DownloadRequest {
    let backup_name = backup.metadata.name.clone().unwrap_or_default();
    let mut request = DownloadRequest::new(
        &contents_request_name(&backup_name),
        DownloadRequestSpec {
            target: DownloadTarget {
                kind: DownloadTargetKind::BackupContents,
                name: backup_name,
                ..Default::default()
            },
            ..Default::default()
        },
    );
    request.metadata.namespace = backup.metadata.namespace.clone();
    request.metadata.labels = Some(origin_labels(OriginKind::NonAdminBackup, nacuuid));
    request.metadata.annotations = Some(origin_annotations(
        OriginKind::NonAdminBackup,
        nab.metadata.namespace.as_deref().unwrap_or_default(),
        nab.metadata.name.as_deref().unwrap_or_default(),
    ));
    request
}

/// One pending action, planned against the backup's items.
#[derive(Clone, Debug)]
pub struct PlannedAction {
    /// The action's name.
    pub name: String,
    /// What a failure does.
    pub failure_policy: FailurePolicy,
    /// The webhook and the indices of the matching items (in item order), or why the action
    /// cannot run (an invalid spec).
    pub run: Result<(WebhookTarget, Vec<usize>), String>,
    /// Items `appliesTo` matches that the action's [`ItemScope`] keeps from it (other
    /// namespaces', unlisted cluster-scoped ones, forged ones), for the controller's log.
    pub dropped: Dropped,
}

/// Plans `pending` (already ordered) against `items` of a backup of the NonAdminBackup's
/// `namespace`: each action gets the items its `appliesTo` matches within its [`ItemScope`].
///
/// An invalid action is planned as a failure rather than left out: an admin who asked for
/// `failurePolicy: Fail` wants no backup deleted without the action, so a broken spec holds the
/// deletion (with the problem in the condition) until it is fixed.
pub fn plan<I: DeletionItem>(
    pending: &[DeletionAction],
    items: &[I],
    namespace: &str,
) -> Vec<PlannedAction> {
    let discovery = discovery_of(items);
    pending
        .iter()
        .map(|action| {
            let name = action.metadata.name.clone().unwrap_or_default();
            let failure_policy = action.spec.effective_failure_policy();
            let mut dropped = Dropped::default();
            let run = validate(action)
                .map_err(|problems| {
                    format!("the DeletionAction is invalid: {}", problems.join("; "))
                })
                .and_then(|valid| {
                    let applies_to = AppliesTo::compile(&action.spec.applies_to, &discovery)
                        .map_err(|error| format!("the DeletionAction is invalid: {error}"))?;
                    let scope = ItemScope::new(
                        namespace,
                        &action.spec.cluster_scoped_resources,
                        &discovery,
                    );
                    let mut matching = Vec::new();
                    for (index, item) in items.iter().enumerate() {
                        if !applies_to.matches(item) {
                            continue;
                        }
                        match scope.admits(item) {
                            Ok(()) => matching.push(index),
                            Err(why) => dropped.count(why),
                        }
                    }
                    Ok((valid.webhook, matching))
                });
            PlannedAction {
                name,
                failure_policy,
                run,
                dropped,
            }
        })
        .collect()
}

/// The JSON body POSTed to an action's webhook for one item: the action's name, the Velero
/// Backup being deleted and the item as stored in the backup tarball.
pub fn request_body(action: &str, backup: &Value, item: &Value) -> Value {
    json!({
        "apiVersion": REQUEST_API_VERSION,
        "kind": REQUEST_KIND,
        "action": action,
        "backup": backup,
        "item": item,
    })
}

// ---------------------------------------------------------------------------------------------
// Outcomes
// ---------------------------------------------------------------------------------------------

/// How running one action went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ActionOutcome {
    /// Every matching item was accepted (a 2xx answer).
    Succeeded {
        /// Number of calls made.
        calls: usize,
    },
    /// No item matched: the action was not called.
    NoMatchingItems,
    /// A call failed (or the action could not be run); the text says why.
    Failed {
        /// What went wrong, for the condition.
        error: String,
    },
}

/// What happens after recording an outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Go on with the next action (or the DeleteBackupRequest).
    Continue,
    /// Stop: the deletion waits, and the action is tried again after this long.
    RetryAfter(Duration),
}

/// The condition an outcome writes on the NAB, and what comes next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// Condition type ([`action_condition_type`]).
    pub type_: String,
    /// Condition status: True when the action is satisfied (Succeeded, Skipped).
    pub status: bool,
    /// Succeeded, Skipped, Failed or Ignored.
    pub reason: &'static str,
    /// Human-readable detail (the error for failures).
    pub message: String,
    /// Continue or retry.
    pub next: Next,
}

/// Records `outcome` of the action `name` under `policy`. `conditions` are the NAB's current
/// ones (a previous failure's attempt count is read from them); `jitter` in [0.5, 1.5) spreads
/// retries.
pub fn record(
    name: &str,
    policy: FailurePolicy,
    outcome: &ActionOutcome,
    conditions: &[Condition],
    jitter: f64,
) -> Recorded {
    let type_ = action_condition_type(name);
    match outcome {
        ActionOutcome::Succeeded { calls } => Recorded {
            type_,
            status: true,
            reason: reasons::SUCCEEDED,
            message: format!(
                "called for {calls} item{} of the backup",
                if *calls == 1 { "" } else { "s" }
            ),
            next: Next::Continue,
        },
        ActionOutcome::NoMatchingItems => Recorded {
            type_,
            status: true,
            reason: reasons::SKIPPED,
            message: "no item of the backup matches spec.appliesTo; not called".to_string(),
            next: Next::Continue,
        },
        ActionOutcome::Failed { error } => {
            let error = bounded(error);
            match policy {
                FailurePolicy::Ignore => Recorded {
                    type_,
                    status: false,
                    reason: reasons::IGNORED,
                    message: format!("failed, ignored (failurePolicy Ignore): {error}"),
                    next: Next::Continue,
                },
                FailurePolicy::Fail => {
                    let attempt = failed_attempts(conditions, name).saturating_add(1);
                    let delay = retry_delay(attempt, jitter);
                    Recorded {
                        type_,
                        status: false,
                        reason: reasons::FAILED,
                        message: format!(
                            "attempt {attempt} failed: {error}; the backup is kept and the action retried in {}s",
                            delay.as_secs().max(1)
                        ),
                        next: Next::RetryAfter(delay),
                    }
                }
            }
        }
    }
}

/// Attempts already failed, from the action's Failed condition (`attempt N failed: ...`).
pub fn failed_attempts(conditions: &[Condition], name: &str) -> u32 {
    let type_ = action_condition_type(name);
    conditions
        .iter()
        .find(|c| c.type_ == type_ && c.reason == reasons::FAILED)
        .and_then(|c| c.message.strip_prefix("attempt "))
        .and_then(|rest| rest.split_once(' '))
        .and_then(|(number, _)| number.parse().ok())
        .unwrap_or(0)
}

/// Delay before retrying after the `attempt`-th failure (1-based): 1 s doubling up to 5 minutes,
/// times `jitter` (in [0.5, 1.5)) so NABs that failed together do not retry together, never above
/// the cap.
pub fn retry_delay(attempt: u32, jitter: f64) -> Duration {
    let doublings = attempt.saturating_sub(1).min(16);
    let base = RETRY_BASE.saturating_mul(1u32 << doublings).min(RETRY_CAP);
    base.mul_f64(jitter.clamp(0.5, 1.5)).min(RETRY_CAP)
}

/// What the tenant (the NAB's condition and Event) is told about a webhook's answer that is not
/// a success: its status code and a fixed text. The answer's body is the admin's webhook
/// talking to the admin — it may echo items, internal names or credentials — so it only goes to
/// the controller's log ([`log_excerpt`]).
pub fn answer_failure(status: u16) -> String {
    format!("the webhook answered HTTP {status} (its answer is in NAC's controller log)")
}

/// The body of a webhook's answer as the controller logs it: on one line, cut to
/// [`MAX_LOGGED_ANSWER_CHARS`].
pub fn log_excerpt(text: &str) -> String {
    cut(text, MAX_LOGGED_ANSWER_CHARS)
}

/// `text` on one line, cut to [`MAX_ERROR_CHARS`].
fn bounded(text: &str) -> String {
    cut(text, MAX_ERROR_CHARS)
}

/// `text` on one line, cut to `max` characters (an ellipsis marks the cut).
fn cut(text: &str, max: usize) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let trimmed = one_line.trim();
    if trimmed.chars().count() <= max {
        return trimmed.to_string();
    }
    let mut cut: String = trimmed.chars().take(max).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::api::nonadmin::DeletionActionWebhook;

    fn time() -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(1_700_000_000).unwrap())
    }

    fn action(name: &str, spec: Value) -> DeletionAction {
        let mut base = json!({
            "apiVersion": "oadp.openshift.io/v1alpha1", "kind": "DeletionAction",
            "metadata": {"name": name, "generation": 3},
            "spec": {"webhook": {"url": "https://hooks.example:8443/delete"}}
        });
        crate::sim::apiserver::patch::merge_patch(&mut base, &json!({ "spec": spec }));
        serde_json::from_value(base).unwrap()
    }

    fn ca_pem() -> String {
        crate::sim::apiserver::tls::Pki::generate(&[])
            .unwrap()
            .ca_cert_pem
    }

    fn b64(text: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(text)
    }

    fn item(group: &str, resource: &str, namespace: Option<&str>, name: &str) -> BackupItem {
        let mut object = json!({"metadata": {"name": name}});
        if let Some(namespace) = namespace {
            object["metadata"]["namespace"] = json!(namespace);
        }
        BackupItem {
            group: group.into(),
            version: "v1".into(),
            kind: match resource {
                "configmaps" => "ConfigMap",
                "deployments" => "Deployment",
                "namespaces" => "Namespace",
                "events" => "Event",
                "secrets" => "Secret",
                _ => "Thing",
            }
            .into(),
            resource: resource.into(),
            namespace: namespace.map(Into::into),
            name: name.into(),
            object,
        }
    }

    fn labelled(mut item: BackupItem, labels: Value) -> BackupItem {
        item.object["metadata"]["labels"] = labels;
        item
    }

    fn condition(type_: &str, reason: &str, message: &str) -> Condition {
        Condition {
            type_: type_.into(),
            status: "False".into(),
            reason: reason.into(),
            message: message.into(),
            last_transition_time: time(),
            observed_generation: None,
        }
    }

    // --- validation ---

    #[test]
    fn a_plain_https_action_is_valid_with_defaults() {
        let valid = validate(&action("a-cleanup", json!({}))).unwrap();
        assert_eq!(valid.name, "a-cleanup");
        assert_eq!(valid.failure_policy, FailurePolicy::Fail);
        assert_eq!(valid.webhook.timeout, Duration::from_secs(10));
        assert_eq!(
            valid.webhook.url.as_str(),
            "https://hooks.example:8443/delete"
        );
        assert_eq!(valid.webhook.ca_pem, None);
    }

    #[test]
    fn the_url_must_be_https_without_credentials_query_or_fragment() {
        let problems =
            |url: &str| validate(&action("x", json!({"webhook": {"url": url}}))).unwrap_err();
        assert_eq!(
            problems("http://hooks.example/delete"),
            ["spec.webhook.url: must be an https:// URL"]
        );
        assert!(problems("not a url")[0].starts_with("spec.webhook.url: not a URL"));
        assert_eq!(
            problems("https://user:pw@hooks.example/d?x=1#f"),
            [
                "spec.webhook.url: must not contain user information",
                "spec.webhook.url: must not contain a fragment",
                "spec.webhook.url: must not contain a query",
            ]
        );
    }

    #[test]
    fn the_ca_bundle_must_be_base64_pem_certificates() {
        let pem = ca_pem();
        let valid = validate(&action(
            "x",
            json!({"webhook": {"url": "https://h.example/", "caBundle": b64(&pem)}}),
        ))
        .unwrap();
        assert_eq!(valid.webhook.ca_pem.as_deref(), Some(pem.as_bytes()));
        let problem = |bundle: &str| {
            validate(&action(
                "x",
                json!({"webhook": {"url": "https://h.example/", "caBundle": bundle}}),
            ))
            .unwrap_err()
            .join("; ")
        };
        assert!(
            problem("%%%").contains("caBundle: not base64"),
            "{}",
            problem("%%%")
        );
        assert!(problem(&b64("hello")).contains("holds no PEM certificate"));
        assert!(
            problem(&b64(
                "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
            ))
            .contains("caBundle: not")
        );
    }

    #[test]
    fn timeout_selectors_and_names_are_checked() {
        let problems = validate(&action(
            "x",
            json!({"webhook": {"url": "https://h.example/", "timeoutSeconds": 31},
                   "appliesTo": {"includedResources": ["*", "pods"], "excludedNamespaces": ["*"],
                                 "includedNamespaces": ["[a"],
                                 "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}}),
        ))
        .unwrap_err();
        let all = problems.join("\n");
        assert!(
            all.contains("spec.webhook.timeoutSeconds: must be between 1 and 30"),
            "{all}"
        );
        assert!(
            all.contains("Resources: includes list must either contain '*' only"),
            "{all}"
        );
        assert!(
            all.contains("Namespaces: excludes list cannot contain '*'"),
            "{all}"
        );
        assert!(
            all.contains("spec.appliesTo.includedNamespaces[0]: invalid glob"),
            "{all}"
        );
        assert!(
            all.contains("spec.appliesTo.labelSelector: matchExpressions[0]"),
            "{all}"
        );
        let long = "a".repeat(64);
        assert!(validate(&action(&long, json!({}))).unwrap_err()[0].contains("at most 63"));
        assert!(validate(&action(&"a".repeat(63), json!({}))).is_ok());
    }

    #[test]
    fn status_reports_validity_for_the_generation_and_skips_unchanged_writes() {
        let good = action("a", json!({}));
        let status = action_status(&good, &time());
        assert_eq!(status.observed_generation, Some(3));
        assert_eq!(status.conditions[0].type_, VALID_CONDITION);
        assert_eq!(status.conditions[0].status, "True");
        assert_eq!(status.conditions[0].reason, VALID_REASON);
        assert!(action_status_changed(None, &status));
        let mut written = good.clone();
        written.status = Some(status.clone());
        assert!(!action_status_changed(
            Some(&status),
            &action_status(&written, &time())
        ));

        let mut bad = written.clone();
        bad.spec.webhook = DeletionActionWebhook {
            url: "http://h.example/".into(),
            ..Default::default()
        };
        let status = action_status(&bad, &time());
        assert_eq!(status.conditions.len(), 1);
        assert_eq!(
            (
                status.conditions[0].status.as_str(),
                status.conditions[0].reason.as_str()
            ),
            ("False", INVALID_REASON)
        );
        assert_eq!(
            status.conditions[0].message,
            "spec.webhook.url: must be an https:// URL"
        );
    }

    // --- matching ---

    fn applies(selector: Value, items: &[BackupItem]) -> Vec<String> {
        let selector: ResourceSelector = serde_json::from_value(selector).unwrap();
        let compiled = AppliesTo::compile(&selector, &discovery_of(items)).unwrap();
        items
            .iter()
            .filter(|i| compiled.matches(*i))
            .map(item_label)
            .collect()
    }

    fn sample() -> Vec<BackupItem> {
        vec![
            labelled(
                item("", "configmaps", Some("team-a"), "app"),
                json!({"tier": "web"}),
            ),
            item("", "secrets", Some("team-a"), "token"),
            labelled(
                item("apps", "deployments", Some("team-a"), "web"),
                json!({"tier": "web"}),
            ),
            item("", "configmaps", Some("team-b"), "other"),
            item("", "namespaces", None, "team-a"),
            item("events.k8s.io", "events", Some("team-a"), "e1"),
            item("", "events", Some("team-a"), "e2"),
        ]
    }

    #[test]
    fn an_empty_selector_matches_everything() {
        assert_eq!(applies(json!({}), &sample()).len(), 7);
    }

    #[test]
    fn resources_resolve_like_velero_discovery() {
        let items = sample();
        // Plural, singular and group-qualified names; globs on plural.group.
        assert_eq!(
            applies(json!({"includedResources": ["configmap"]}), &items),
            ["configmaps/team-a/app", "configmaps/team-b/other"]
        );
        assert_eq!(
            applies(json!({"includedResources": ["deployments"]}), &items),
            ["deployments.apps/team-a/web"]
        );
        assert_eq!(
            applies(json!({"includedResources": ["Deployments.apps"]}), &items),
            ["deployments.apps/team-a/web"]
        );
        assert_eq!(
            applies(json!({"includedResources": ["*.apps"]}), &items),
            ["deployments.apps/team-a/web"]
        );
        // An unqualified name takes the core group first.
        assert_eq!(
            applies(json!({"includedResources": ["events"]}), &items),
            ["events/team-a/e2"]
        );
        assert_eq!(
            applies(
                json!({"includedResources": ["events.events.k8s.io"]}),
                &items
            ),
            ["events.events.k8s.io/team-a/e1"]
        );
        // An unknown include stays as written and matches nothing (never "everything").
        assert!(applies(json!({"includedResources": ["widgets"]}), &items).is_empty());
        // Excludes win.
        let all_but = applies(
            json!({"includedResources": ["*"], "excludedResources": ["configmaps", "events*"]}),
            &items,
        );
        assert_eq!(
            all_but,
            [
                "secrets/team-a/token",
                "deployments.apps/team-a/web",
                "namespaces/team-a"
            ]
        );
    }

    #[test]
    fn namespaces_filter_namespaced_items_and_cluster_items_need_all_namespaces() {
        let items = sample();
        let in_b = applies(json!({"includedNamespaces": ["team-b"]}), &items);
        assert_eq!(in_b, ["configmaps/team-b/other"]);
        let globbed = applies(
            json!({"includedNamespaces": ["team-*"], "includedResources": ["configmaps"]}),
            &items,
        );
        assert_eq!(
            globbed,
            ["configmaps/team-a/app", "configmaps/team-b/other"]
        );
        // Cluster-scoped items match only when every namespace is included.
        let star = applies(
            json!({"includedNamespaces": ["*"], "includedResources": ["namespaces"]}),
            &items,
        );
        assert_eq!(star, ["namespaces/team-a"]);
        let excluding = applies(
            json!({"excludedNamespaces": ["team-b"], "includedResources": ["namespaces"]}),
            &items,
        );
        assert!(excluding.is_empty());
        let named = applies(
            json!({"includedNamespaces": ["team-a"], "includedResources": ["namespaces"]}),
            &items,
        );
        assert!(named.is_empty());
    }

    #[test]
    fn label_selectors_match_item_labels() {
        let items = sample();
        assert_eq!(
            applies(
                json!({"labelSelector": {"matchLabels": {"tier": "web"}}}),
                &items
            ),
            ["configmaps/team-a/app", "deployments.apps/team-a/web"]
        );
        assert_eq!(
            applies(
                json!({"includedResources": ["configmaps"],
                       "labelSelector": {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}}),
                &items
            ),
            ["configmaps/team-b/other"]
        );
    }

    #[test]
    fn manifest_items_match_like_tarball_items() {
        let tarball = sample();
        let manifest: Vec<ManifestItem> = tarball
            .iter()
            .map(|i| ManifestItem {
                group: i.group.clone(),
                version: i.version.clone(),
                kind: i.kind.clone(),
                resource: i.resource.clone(),
                namespace: i.namespace.clone(),
                name: i.name.clone(),
                labels: crate::manifest::selection::object_labels(&i.object),
                annotations: BTreeMap::new(),
                owners: Vec::new(),
                uid: None,
            })
            .collect();
        let selector: ResourceSelector = serde_json::from_value(json!({
            "includedResources": ["deployment", "configmaps"], "excludedNamespaces": ["team-b"],
            "labelSelector": {"matchLabels": {"tier": "web"}}
        }))
        .unwrap();
        let compiled = AppliesTo::compile(&selector, &discovery_of(&manifest)).unwrap();
        let from_manifest: Vec<String> = manifest
            .iter()
            .filter(|i| compiled.matches(*i))
            .map(item_label)
            .collect();
        assert_eq!(
            from_manifest,
            ["configmaps/team-a/app", "deployments.apps/team-a/web"]
        );
        assert_eq!(
            from_manifest,
            applies(serde_json::to_value(&selector).unwrap(), &tarball)
        );
    }

    #[test]
    fn discovery_lists_the_core_group_first() {
        let discovery = discovery_of(&sample());
        let names: Vec<String> = discovery
            .iter()
            .map(ApiResourceInfo::group_resource)
            .collect();
        assert_eq!(
            names,
            [
                "configmaps",
                "events",
                "namespaces",
                "secrets",
                "deployments.apps",
                "events.events.k8s.io"
            ]
        );
        assert!(!discovery[2].namespaced);
    }

    // --- order, progress, plan ---

    #[test]
    fn pending_actions_run_in_name_order_and_skip_finished_ones() {
        let actions = vec![
            action("b-audit", json!({})),
            action("a-cleanup", json!({})),
            action("B-upper", json!({})),
            action("c-notify", json!({})),
        ];
        let names = |pending: Vec<DeletionAction>| -> Vec<String> {
            pending
                .into_iter()
                .map(|a| a.metadata.name.unwrap())
                .collect()
        };
        assert_eq!(
            names(pending_actions(&actions, &[])),
            ["B-upper", "a-cleanup", "b-audit", "c-notify"]
        );
        let conditions = vec![
            condition(&action_condition_type("a-cleanup"), reasons::SUCCEEDED, ""),
            condition(&action_condition_type("B-upper"), reasons::SKIPPED, ""),
            condition(&action_condition_type("c-notify"), reasons::IGNORED, ""),
            condition(
                &action_condition_type("b-audit"),
                reasons::FAILED,
                "attempt 1 failed: x",
            ),
        ];
        assert_eq!(names(pending_actions(&actions, &conditions)), ["b-audit"]);
        assert!(is_done(&conditions, "c-notify"));
        assert!(!is_done(&conditions, "b-audit"));
    }

    #[test]
    fn the_plan_gives_each_action_its_items_and_fails_invalid_ones() {
        let items = sample();
        let pending = vec![
            action(
                "a",
                json!({"appliesTo": {"includedResources": ["secrets"]}}),
            ),
            action("b", json!({"appliesTo": {"includedResources": ["pods"]}})),
            action(
                "c",
                json!({"webhook": {"url": "http://h.example/"}, "failurePolicy": "Ignore"}),
            ),
        ];
        let planned = plan(&pending, &items, "team-a");
        assert_eq!(planned.len(), 3);
        let (target, matching) = planned[0].run.as_ref().unwrap();
        assert_eq!(target.url.host_str(), Some("hooks.example"));
        assert_eq!(matching, &vec![1]);
        assert!(planned[1].run.as_ref().unwrap().1.is_empty());
        assert_eq!(planned[2].failure_policy, FailurePolicy::Ignore);
        assert_eq!(
            planned[2].run.as_ref().unwrap_err(),
            "the DeletionAction is invalid: spec.webhook.url: must be an https:// URL"
        );
    }

    fn calls_of(planned: &PlannedAction, items: &[BackupItem]) -> Vec<String> {
        planned
            .run
            .as_ref()
            .unwrap()
            .1
            .iter()
            .map(|index| item_label(&items[*index]))
            .collect()
    }

    /// An item filed under `filed_in` whose object says it lives in `claims` (a forged tarball
    /// written into the tenant's own bucket).
    fn filed_as(mut item: BackupItem, claims: &str) -> BackupItem {
        item.object["metadata"]["namespace"] = json!(claims);
        item
    }

    #[test]
    fn forged_items_of_another_namespace_never_reach_an_action() {
        // team-a's backup, on team-a's own bucket, holding what team-a wrote there.
        let items = vec![
            item("", "configmaps", Some("team-a"), "app"),
            item("", "configmaps", Some("team-b"), "planted"),
            item("", "secrets", Some("kube-system"), "admin-token"),
            filed_as(
                item("", "configmaps", Some("team-a"), "disguised"),
                "team-b",
            ),
            item("", "namespaces", None, "team-a"),
            item("", "persistentvolumes", None, "pv-of-team-b"),
        ];
        // Every item, as an admin's audit action asks.
        let planned = plan(&[action("audit", json!({}))], &items, "team-a");
        assert_eq!(calls_of(&planned[0], &items), ["configmaps/team-a/app"]);
        assert_eq!(
            planned[0].dropped,
            Dropped {
                other_namespace: 2,
                unlisted_cluster_scoped: 2,
                inconsistent: 1
            }
        );
        assert_eq!(planned[0].dropped.total(), 5);
        // An action aimed at another namespace gets nothing from team-a's backup.
        let planned = plan(
            &[action(
                "b",
                json!({"appliesTo": {"includedNamespaces": ["team-b", "kube-system"]}}),
            )],
            &items,
            "team-a",
        );
        assert!(calls_of(&planned[0], &items).is_empty());
        assert_eq!(planned[0].dropped.other_namespace, 2);
        // A NAB without a namespace (never in practice) gets nothing at all.
        let planned = plan(&[action("audit", json!({}))], &items, "");
        assert!(calls_of(&planned[0], &items).is_empty());
    }

    #[test]
    fn cluster_scoped_items_reach_an_action_only_when_it_lists_them() {
        let items = vec![
            item("", "configmaps", Some("team-a"), "app"),
            item("", "namespaces", None, "team-a"),
            item("", "namespaces", None, "kube-system"),
            item("", "persistentvolumes", None, "pv-1"),
            item("rbac.authorization.k8s.io", "clusterroles", None, "admin"),
            // Filed as cluster-scoped, but the object says it is team-b's.
            filed_as(item("", "persistentvolumes", None, "pv-2"), "team-b"),
        ];
        let listing = |listed: Value| {
            let planned = plan(
                &[action("x", json!({"clusterScopedResources": listed}))],
                &items,
                "team-a",
            );
            (calls_of(&planned[0], &items), planned[0].dropped)
        };
        let (calls, dropped) = listing(json!(["namespace", "persistentvolumes"]));
        assert_eq!(
            calls,
            [
                "configmaps/team-a/app",
                "namespaces/team-a",
                "persistentvolumes/pv-1"
            ]
        );
        // Another namespace's Namespace object is another namespace's item.
        assert_eq!(
            dropped,
            Dropped {
                other_namespace: 1,
                unlisted_cluster_scoped: 1,
                inconsistent: 1
            }
        );
        let (calls, _) = listing(json!(["*"]));
        assert_eq!(
            calls,
            [
                "configmaps/team-a/app",
                "namespaces/team-a",
                "persistentvolumes/pv-1",
                "clusterroles.rbac.authorization.k8s.io/admin"
            ]
        );
        let (calls, _) = listing(json!(["*.rbac.authorization.k8s.io"]));
        assert_eq!(
            calls,
            [
                "configmaps/team-a/app",
                "clusterroles.rbac.authorization.k8s.io/admin"
            ]
        );
        // `appliesTo` still decides among the admitted items.
        let planned = plan(
            &[action(
                "y",
                json!({"clusterScopedResources": ["namespaces"],
                       "appliesTo": {"includedResources": ["namespaces"]}}),
            )],
            &items,
            "team-a",
        );
        assert_eq!(calls_of(&planned[0], &items), ["namespaces/team-a"]);
    }

    #[test]
    fn cluster_scoped_resources_are_validated_and_round_trip() {
        let problems = validate(&action(
            "x",
            json!({"clusterScopedResources": ["namespaces", "", "[a"]}),
        ))
        .unwrap_err();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert_eq!(
            problems[0],
            "spec.clusterScopedResources[1]: must not be empty"
        );
        assert!(
            problems[1].starts_with("spec.clusterScopedResources[2]: invalid glob"),
            "{problems:?}"
        );
        let valid = action("x", json!({"clusterScopedResources": ["namespaces"]}));
        assert!(validate(&valid).is_ok());
        assert_eq!(
            serde_json::to_value(&valid.spec).unwrap()["clusterScopedResources"],
            json!(["namespaces"])
        );
    }

    #[test]
    fn a_webhook_answer_reaches_the_tenant_as_its_status_only() {
        let body = "stack trace: db password hunter2 at 10.0.3.7";
        let told = answer_failure(500);
        assert_eq!(
            told,
            "the webhook answered HTTP 500 (its answer is in NAC's controller log)"
        );
        let outcome = ActionOutcome::Failed {
            error: format!("configmaps/team-a/app: {told}"),
        };
        for policy in [FailurePolicy::Fail, FailurePolicy::Ignore] {
            let recorded = record("a", policy, &outcome, &[], 1.0);
            assert!(
                recorded.message.contains("HTTP 500"),
                "{}",
                recorded.message
            );
            assert!(
                !recorded.message.contains("hunter2"),
                "{}",
                recorded.message
            );
        }
        // The log keeps the body, on one line and bounded.
        assert_eq!(log_excerpt(&format!("{body}\n")), body);
        let long = log_excerpt(&"x".repeat(10_000));
        assert_eq!(long.chars().count(), MAX_LOGGED_ANSWER_CHARS + 1);
        assert!(long.ends_with('…'));
        assert_eq!(log_excerpt("a\r\nb"), "a  b");
    }

    #[test]
    fn contents_are_downloaded_only_for_finished_backups_with_data() {
        let backup = |phase: Option<&str>| -> Backup {
            let mut value =
                json!({"metadata": {"name": "b", "namespace": "openshift-adp"}, "spec": {}});
            if let Some(phase) = phase {
                value["status"] = json!({"phase": phase});
            }
            serde_json::from_value(value).unwrap()
        };
        assert_eq!(
            contents_need(&backup(Some("Completed"))),
            ContentsNeed::Download
        );
        assert_eq!(
            contents_need(&backup(Some("PartiallyFailed"))),
            ContentsNeed::Download
        );
        assert_eq!(
            contents_need(&backup(Some("Failed"))),
            ContentsNeed::NoContents
        );
        assert_eq!(
            contents_need(&backup(Some("FailedValidation"))),
            ContentsNeed::NoContents
        );
        assert_eq!(
            contents_need(&backup(Some("InProgress"))),
            ContentsNeed::WaitForBackup
        );
        assert_eq!(contents_need(&backup(None)), ContentsNeed::WaitForBackup);
    }

    #[test]
    fn the_contents_request_is_nacs_and_names_its_nab() {
        let backup: Backup = serde_json::from_value(
            json!({"metadata": {"name": "team-a-x-1", "namespace": "openshift-adp"}, "spec": {}}),
        )
        .unwrap();
        let nab: NonAdminBackup = serde_json::from_value(json!({
            "metadata": {"name": "x", "namespace": "team-a"}, "spec": {"backupSpec": {}}
        }))
        .unwrap();
        let request = contents_request(&backup, &nab, "team-a-x-1");
        assert_eq!(
            request.metadata.name.as_deref(),
            Some("team-a-x-1-deletion-actions")
        );
        assert_eq!(request.metadata.namespace.as_deref(), Some("openshift-adp"));
        assert_eq!(request.spec.target.kind, DownloadTargetKind::BackupContents);
        assert_eq!(request.spec.target.name, "team-a-x-1");
        let labels_ = request.metadata.labels.clone().unwrap();
        let annotations = request.metadata.annotations.clone().unwrap();
        let origin = crate::api::origin::origin_of(&labels_, &annotations).unwrap();
        assert_eq!(
            (origin.namespace.as_str(), origin.name.as_str()),
            ("team-a", "x")
        );
    }

    #[test]
    fn the_request_body_carries_action_backup_and_item() {
        let body = request_body(
            "a-cleanup",
            &json!({"kind": "Backup"}),
            &json!({"kind": "ConfigMap"}),
        );
        assert_eq!(
            body,
            json!({"apiVersion": "oadp.openshift.io/v1alpha1", "kind": "DeletionActionRequest",
                   "action": "a-cleanup", "backup": {"kind": "Backup"}, "item": {"kind": "ConfigMap"}})
        );
    }

    // --- outcomes ---

    #[test]
    fn successes_and_skips_are_true_and_go_on() {
        let ok = record(
            "a",
            FailurePolicy::Fail,
            &ActionOutcome::Succeeded { calls: 2 },
            &[],
            1.0,
        );
        assert_eq!(
            (
                ok.type_.as_str(),
                ok.status,
                ok.reason,
                ok.message.as_str(),
                ok.next
            ),
            (
                "deletionaction.oadp.openshift.io/a",
                true,
                reasons::SUCCEEDED,
                "called for 2 items of the backup",
                Next::Continue
            )
        );
        let skipped = record(
            "a",
            FailurePolicy::Fail,
            &ActionOutcome::NoMatchingItems,
            &[],
            1.0,
        );
        assert_eq!((skipped.status, skipped.reason), (true, reasons::SKIPPED));
        assert_eq!(skipped.next, Next::Continue);
    }

    #[test]
    fn ignored_failures_are_false_and_go_on() {
        let ignored = record(
            "a",
            FailurePolicy::Ignore,
            &ActionOutcome::Failed {
                error: "HTTP 503:\nbusy".into(),
            },
            &[],
            1.0,
        );
        assert_eq!((ignored.status, ignored.reason), (false, reasons::IGNORED));
        assert_eq!(
            ignored.message,
            "failed, ignored (failurePolicy Ignore): HTTP 503: busy"
        );
        assert_eq!(ignored.next, Next::Continue);
    }

    #[test]
    fn failures_retry_with_growing_backoff_counted_in_the_condition() {
        let failed = |conditions: &[Condition]| {
            record(
                "a",
                FailurePolicy::Fail,
                &ActionOutcome::Failed {
                    error: "HTTP 500: boom".into(),
                },
                conditions,
                1.0,
            )
        };
        let first = failed(&[]);
        assert_eq!((first.status, first.reason), (false, reasons::FAILED));
        assert_eq!(
            first.message,
            "attempt 1 failed: HTTP 500: boom; the backup is kept and the action retried in 1s"
        );
        assert_eq!(first.next, Next::RetryAfter(Duration::from_secs(1)));
        let conditions = vec![condition(&first.type_, first.reason, &first.message)];
        assert_eq!(failed_attempts(&conditions, "a"), 1);
        let second = failed(&conditions);
        assert!(
            second.message.starts_with("attempt 2 failed"),
            "{}",
            second.message
        );
        assert_eq!(second.next, Next::RetryAfter(Duration::from_secs(2)));
        // Another action's condition or a foreign message counts as no attempt.
        assert_eq!(failed_attempts(&conditions, "b"), 0);
        let odd = vec![condition(&first.type_, reasons::FAILED, "something else")];
        assert_eq!(failed_attempts(&odd, "a"), 0);
    }

    #[test]
    fn backoff_doubles_jitters_and_caps() {
        assert_eq!(retry_delay(1, 1.0), Duration::from_secs(1));
        assert_eq!(retry_delay(3, 1.0), Duration::from_secs(4));
        assert_eq!(retry_delay(3, 0.5), Duration::from_secs(2));
        assert_eq!(retry_delay(3, 1.25), Duration::from_secs(5));
        assert_eq!(retry_delay(9, 1.0), Duration::from_secs(256));
        assert_eq!(retry_delay(10, 1.0), RETRY_CAP);
        assert_eq!(retry_delay(u32::MAX, 1.49), RETRY_CAP);
        assert_eq!(retry_delay(0, 1.0), Duration::from_secs(1));
        // Jitter outside its range is clamped.
        assert_eq!(retry_delay(1, 9.0), Duration::from_millis(1500));
    }

    #[test]
    fn long_errors_are_cut() {
        let outcome = ActionOutcome::Failed {
            error: "x".repeat(5000),
        };
        let recorded = record("a", FailurePolicy::Ignore, &outcome, &[], 1.0);
        assert!(recorded.message.chars().count() < MAX_ERROR_CHARS + 60);
        assert!(recorded.message.ends_with('…'));
    }
}
