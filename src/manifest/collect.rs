//! Velero's item collection as pure steps, shared by the simulator's backups and the gateway's
//! backup dry-run: which lists to make (a [`CollectPlan`]), then, given what those lists
//! returned, which objects the backup takes ([`CollectPlan::finish`]).
//!
//! Follows `pkg/backup/item_collector.go`: every served, listable resource type the backup's
//! resource filter includes is listed once (of the types Velero serves in two groups, the first
//! met wins), namespace-scoped types in each selected namespace and cluster-scoped types
//! cluster-wide; each listed object then passes the per-object checks (namespace, label
//! selectors, `velero.io/exclude-from-backup`, not being deleted); finally the Namespace objects
//! are added: those selected on their own merit and those holding a collected object (the item
//! collector's namespace tracker).
//!
//! The I/O is the caller's: the simulator lists with Velero's identity, the gateway's dry-run
//! with the caller's own token. A list the caller may not read is not silently dropped: it comes
//! back in [`Collection::unreadable`], so a dry-run can say which resources it could not see.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::api::velero::BackupSpec;
use crate::manifest::selection::{
    ApiResourceInfo, BackupSelection, SelectionError, cohabiting_resource_key,
};
use crate::manifest::tarball::BackupItem;

/// A resource type the cluster serves, with whether it can be listed (discovery's verbs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveredResource {
    /// The resource as discovery describes it (at its preferred version).
    pub info: ApiResourceInfo,
    /// Whether discovery lists the `list` verb for it; Velero collects only listable types.
    pub listable: bool,
}

/// One list the collection needs: every object of `resource` in `namespace`, or cluster-wide
/// when `namespace` is `None` (cluster-scoped types).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListRequest {
    /// The resource type to list (its preferred version is the version the backup stores).
    pub resource: ApiResourceInfo,
    /// The namespace to list in; `None` for a cluster-scoped type.
    pub namespace: Option<String>,
}

/// What one [`ListRequest`] gave.
#[derive(Debug, Clone, PartialEq)]
pub enum ListOutcome {
    /// The objects listed, as JSON (with or without `apiVersion`/`kind`).
    Listed(Vec<Value>),
    /// The API server refused the list (HTTP 403); the text is the server's message.
    Forbidden(String),
    /// Any other failure (unreachable server, 5xx, a type that vanished...).
    Failed(String),
}

/// Why a list is missing from a collection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "PascalCase")]
#[derive(async_graphql::Enum)]
pub enum UnreadableReason {
    /// The identity that listed may not read this resource there (HTTP 403).
    Forbidden,
    /// The list failed for another reason.
    Failed,
}

/// A list that could not be read: its objects are missing from the collection.
// GraphQL's `groupResource` is a resolver (`gateway::graphql::manifests`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[derive(async_graphql::SimpleObject)]
#[graphql(complex)]
pub struct UnreadableList {
    /// API group; empty for the core group.
    pub group: String,
    /// Version listed.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Plural resource name.
    pub resource: String,
    /// Namespace listed; absent for a cluster-wide list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Why it is missing.
    pub reason: UnreadableReason,
    /// The API server's (or client's) message.
    pub message: String,
}

impl UnreadableList {
    /// `<resource>.<group>`, or `<resource>` for the core group.
    pub fn group_resource(&self) -> String {
        crate::manifest::selection::group_resource(&self.group, &self.resource)
    }
}

/// What a collection found: the items a backup takes, in Velero's collection order, and the
/// lists that could not be read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Collection {
    /// The selected objects, in collection order (resource types in discovery order, each
    /// type's namespaces in the order given), the Namespace objects last.
    pub items: Vec<BackupItem>,
    /// Lists that failed, in request order.
    pub unreadable: Vec<UnreadableList>,
}

/// The outcomes given to [`CollectPlan::finish`] do not match its requests.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{outcomes} list outcomes for {requests} list requests")]
pub struct OutcomeCountMismatch {
    /// Number of requests in the plan.
    pub requests: usize,
    /// Number of outcomes given.
    pub outcomes: usize,
}

/// The lists a backup's item collection makes, and how their results become items.
#[derive(Debug, Clone)]
pub struct CollectPlan {
    selection: BackupSelection,
    requests: Vec<ListRequest>,
    /// The core `namespaces` type when Namespace objects are to be added (served, listable and
    /// included by the resource filter).
    namespaces_resource: Option<ApiResourceInfo>,
    namespace_objects: Vec<Value>,
}

impl CollectPlan {
    /// Plans the collection of a backup with `spec`.
    ///
    /// `resources` are the cluster's served types in discovery order (core group first, the
    /// order Velero resolves names and walks types in); `namespace_objects` the Namespace
    /// objects the backup may consider: every namespace of the cluster for Velero itself, or
    /// only the caller's own namespace(s) for a tenant's dry-run. They drive namespace globs,
    /// the `velero.io/exclude-from-backup` label, which namespaces are listed and which
    /// Namespace objects the backup holds.
    pub fn new(
        spec: &BackupSpec,
        resources: &[DiscoveredResource],
        namespace_objects: &[Value],
    ) -> Result<Self, SelectionError> {
        let discovery: Vec<ApiResourceInfo> = resources.iter().map(|r| r.info.clone()).collect();
        let selection = BackupSelection::new(spec, namespace_objects, &discovery)?;
        let namespaces: Vec<String> = namespace_objects
            .iter()
            .filter_map(object_name)
            .filter(|name| selection.includes_namespace(name))
            .map(str::to_owned)
            .collect();
        let mut requests = Vec::new();
        let mut cohabiting_seen = BTreeSet::new();
        let mut namespaces_resource = None;
        for resource in resources {
            if !resource.listable {
                continue;
            }
            let info = &resource.info;
            if info.is_namespaces() {
                // Namespace objects come from the tracker below, never from a list of their own.
                if selection.includes_resource(info) {
                    namespaces_resource = Some(info.clone());
                }
                continue;
            }
            if !selection.includes_resource(info) {
                continue;
            }
            if let Some(key) = cohabiting_resource_key(info)
                && !cohabiting_seen.insert(key)
            {
                continue;
            }
            if info.namespaced {
                requests.extend(namespaces.iter().map(|namespace| ListRequest {
                    resource: info.clone(),
                    namespace: Some(namespace.clone()),
                }));
            } else {
                requests.push(ListRequest {
                    resource: info.clone(),
                    namespace: None,
                });
            }
        }
        Ok(Self {
            selection,
            requests,
            namespaces_resource,
            namespace_objects: namespace_objects.to_vec(),
        })
    }

    /// The lists to make, in Velero's order; give their outcomes to [`CollectPlan::finish`] in
    /// the same order.
    pub fn requests(&self) -> &[ListRequest] {
        &self.requests
    }

    /// The compiled filters.
    pub fn selection(&self) -> &BackupSelection {
        &self.selection
    }

    /// The items the backup takes given what each request listed (`outcomes[i]` answers
    /// `requests()[i]`): the listed objects that pass the object filters, then the Namespace
    /// objects Velero adds. Failed lists are reported, not fatal, as Velero logs them and
    /// goes on.
    pub fn finish(&self, outcomes: Vec<ListOutcome>) -> Result<Collection, OutcomeCountMismatch> {
        if outcomes.len() != self.requests.len() {
            return Err(OutcomeCountMismatch {
                requests: self.requests.len(),
                outcomes: outcomes.len(),
            });
        }
        let mut collection = Collection::default();
        for (request, outcome) in self.requests.iter().zip(outcomes) {
            let objects = match outcome {
                ListOutcome::Listed(objects) => objects,
                ListOutcome::Forbidden(message) => {
                    collection.unreadable.push(unreadable(
                        request,
                        UnreadableReason::Forbidden,
                        message,
                    ));
                    continue;
                }
                ListOutcome::Failed(message) => {
                    collection.unreadable.push(unreadable(
                        request,
                        UnreadableReason::Failed,
                        message,
                    ));
                    continue;
                }
            };
            for object in objects {
                // A list in one namespace only returns that namespace's objects; the check
                // also guards against a caller handing over a wider list.
                if request.namespace.is_some()
                    && object_namespace(&object) != request.namespace.as_deref()
                {
                    continue;
                }
                if self.selection.includes_object(&request.resource, &object) {
                    collection.items.push(backup_item(
                        &request.resource,
                        with_type(object, &request.resource),
                    ));
                }
            }
        }
        if let Some(namespaces) = &self.namespaces_resource {
            let with_items: BTreeSet<String> = collection
                .items
                .iter()
                .filter_map(|item| item.namespace.clone())
                .collect();
            let wanted = self
                .selection
                .namespaces_to_back_up(&self.namespace_objects, &with_items);
            for object in &self.namespace_objects {
                if object_name(object).is_some_and(|name| wanted.contains(name)) {
                    collection.items.push(backup_item(
                        namespaces,
                        with_type(object.clone(), namespaces),
                    ));
                }
            }
        }
        Ok(collection)
    }
}

fn unreadable(request: &ListRequest, reason: UnreadableReason, message: String) -> UnreadableList {
    UnreadableList {
        group: request.resource.group.clone(),
        version: request.resource.version.clone(),
        kind: request.resource.kind.clone(),
        resource: request.resource.plural.clone(),
        namespace: request.namespace.clone(),
        reason,
        message,
    }
}

fn object_name(object: &Value) -> Option<&str> {
    object.pointer("/metadata/name").and_then(Value::as_str)
}

fn object_namespace(object: &Value) -> Option<&str> {
    object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|namespace| !namespace.is_empty())
}

/// Lists return items without `apiVersion`/`kind` (the list carries them); Velero writes each
/// item with its type, at the version it listed.
fn with_type(mut object: Value, info: &ApiResourceInfo) -> Value {
    if let Some(fields) = object.as_object_mut() {
        let api_version = if info.group.is_empty() {
            info.version.clone()
        } else {
            format!("{}/{}", info.group, info.version)
        };
        fields.insert("apiVersion".into(), json!(api_version));
        fields.insert("kind".into(), json!(info.kind));
    }
    object
}

/// The backup item of a listed object of `info`.
pub fn backup_item(info: &ApiResourceInfo, object: Value) -> BackupItem {
    let name = object_name(&object).unwrap_or_default().to_owned();
    let namespace = if info.namespaced {
        object_namespace(&object).map(str::to_owned)
    } else {
        None
    };
    BackupItem {
        group: info.group.clone(),
        version: info.version.clone(),
        kind: info.kind.clone(),
        resource: info.plural.clone(),
        namespace,
        name,
        object,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn info(
        group: &str,
        version: &str,
        kind: &str,
        plural: &str,
        namespaced: bool,
    ) -> ApiResourceInfo {
        ApiResourceInfo {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced,
        }
    }

    fn served(info: ApiResourceInfo) -> DiscoveredResource {
        DiscoveredResource {
            info,
            listable: true,
        }
    }

    /// A small cluster's discovery, core group first as Velero's discovery helper sorts it.
    fn discovery() -> Vec<DiscoveredResource> {
        let mut bindings = served(info("", "v1", "Binding", "bindings", true));
        bindings.listable = false;
        vec![
            served(info("", "v1", "ConfigMap", "configmaps", true)),
            served(info("", "v1", "Namespace", "namespaces", false)),
            served(info(
                "",
                "v1",
                "PersistentVolumeClaim",
                "persistentvolumeclaims",
                true,
            )),
            served(info(
                "",
                "v1",
                "PersistentVolume",
                "persistentvolumes",
                false,
            )),
            served(info("", "v1", "Pod", "pods", true)),
            served(info("", "v1", "Secret", "secrets", true)),
            served(info("", "v1", "Service", "services", true)),
            served(info("", "v1", "ServiceAccount", "serviceaccounts", true)),
            bindings,
            served(info("apps", "v1", "Deployment", "deployments", true)),
            served(info("apps", "v1", "ReplicaSet", "replicasets", true)),
            served(info(
                "extensions",
                "v1beta1",
                "Deployment",
                "deployments",
                true,
            )),
            served(info(
                "rbac.authorization.k8s.io",
                "v1",
                "ClusterRole",
                "clusterroles",
                false,
            )),
        ]
    }

    fn namespace(name: &str, labels: Value) -> Value {
        json!({"metadata": {"name": name, "labels": labels}, "status": {"phase": "Active"}})
    }

    fn object(namespace: &str, name: &str, labels: Value) -> Value {
        json!({"metadata": {"name": name, "namespace": namespace, "labels": labels}})
    }

    fn spec(value: Value) -> BackupSpec {
        serde_json::from_value(value).unwrap()
    }

    fn requested(plan: &CollectPlan) -> Vec<String> {
        plan.requests()
            .iter()
            .map(|r| {
                format!(
                    "{}@{}",
                    r.resource.group_resource(),
                    r.namespace.as_deref().unwrap_or("*")
                )
            })
            .collect()
    }

    fn names(collection: &Collection) -> Vec<String> {
        collection
            .items
            .iter()
            .map(|i| {
                format!(
                    "{}/{}/{}",
                    i.group_resource(),
                    i.namespace.as_deref().unwrap_or("-"),
                    i.name
                )
            })
            .collect()
    }

    /// Answers each request from a fixed set of objects per group-resource, as an API server
    /// would: only the requested namespace's objects.
    fn answer(plan: &CollectPlan, objects: &[(&str, Value)]) -> Vec<ListOutcome> {
        plan.requests()
            .iter()
            .map(|request| {
                let gr = request.resource.group_resource();
                ListOutcome::Listed(
                    objects
                        .iter()
                        .filter(|(r, o)| {
                            *r == gr
                                && (request.namespace.is_none()
                                    || object_namespace(o) == request.namespace.as_deref())
                        })
                        .map(|(_, o)| o.clone())
                        .collect(),
                )
            })
            .collect()
    }

    #[test]
    fn plan_lists_included_types_per_selected_namespace_once() {
        let namespaces = [
            namespace("shop", json!({})),
            namespace("shop-staging", json!({})),
            namespace("billing", json!({})),
        ];
        let plan = CollectPlan::new(
            &spec(json!({"includedNamespaces": ["shop*"], "excludedResources": ["secrets"]})),
            &discovery(),
            &namespaces,
        )
        .unwrap();
        let lists = requested(&plan);
        assert!(lists.contains(&"configmaps@shop".to_string()));
        assert!(lists.contains(&"configmaps@shop-staging".to_string()));
        assert!(!lists.iter().any(|l| l.ends_with("@billing")), "{lists:?}");
        assert!(
            !lists.iter().any(|l| l.starts_with("secrets@")),
            "{lists:?}"
        );
        // Not listable, and Velero keeps only the first group serving deployments.
        assert!(!lists.iter().any(|l| l.starts_with("bindings@")));
        assert!(lists.contains(&"deployments.apps@shop".to_string()));
        assert!(
            !lists
                .iter()
                .any(|l| l.starts_with("deployments.extensions"))
        );
        // Some namespaces only: cluster-scoped types stay out (includeClusterResources unset),
        // and namespaces are never listed as a type of their own.
        assert!(!lists.iter().any(|l| l.ends_with("@*")), "{lists:?}");
    }

    #[test]
    fn cluster_scoped_types_are_listed_cluster_wide_when_included() {
        let namespaces = [namespace("shop", json!({}))];
        let plan = CollectPlan::new(
            &spec(json!({"includedNamespaces": ["shop"], "includeClusterResources": true})),
            &discovery(),
            &namespaces,
        )
        .unwrap();
        let lists = requested(&plan);
        assert!(lists.contains(&"persistentvolumes@*".to_string()));
        assert!(lists.contains(&"clusterroles.rbac.authorization.k8s.io@*".to_string()));
        assert!(!lists.contains(&"namespaces@*".to_string()));
    }

    #[test]
    fn finish_applies_object_filters_and_adds_namespaces() {
        let namespaces = [
            namespace("shop", json!({"team": "shop"})),
            namespace("billing", json!({})),
        ];
        let plan = CollectPlan::new(
            &spec(json!({"includedNamespaces": ["*"],
                         "labelSelector": {"matchLabels": {"app": "web"}}})),
            &discovery(),
            &namespaces,
        )
        .unwrap();
        let mut deleting = object("shop", "old", json!({"app": "web"}));
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        let objects = [
            (
                "configmaps",
                object("shop", "web-config", json!({"app": "web"})),
            ),
            ("configmaps", object("shop", "other", json!({"app": "db"}))),
            ("configmaps", deleting),
            (
                "secrets",
                object(
                    "shop",
                    "skip-me",
                    json!({"app": "web", "velero.io/exclude-from-backup": "true"}),
                ),
            ),
            (
                "deployments.apps",
                object("shop", "web", json!({"app": "web"})),
            ),
            (
                "configmaps",
                object("billing", "ledger", json!({"app": "ledger"})),
            ),
        ];
        let collection = plan.finish(answer(&plan, &objects)).unwrap();
        assert_eq!(
            names(&collection),
            [
                "configmaps/shop/web-config",
                "deployments.apps/shop/web",
                // billing holds nothing selected and a selector is set: its Namespace stays out.
                "namespaces/-/shop",
            ]
        );
        let namespace_item = collection.items.last().unwrap();
        assert_eq!(namespace_item.object["kind"], "Namespace");
        assert_eq!(namespace_item.object["apiVersion"], "v1");
        let deployment = &collection.items[1];
        assert_eq!(deployment.object["apiVersion"], "apps/v1");
        assert_eq!(
            (deployment.group.as_str(), deployment.version.as_str()),
            ("apps", "v1")
        );
        assert!(collection.unreadable.is_empty());
    }

    #[test]
    fn forbidden_and_failed_lists_are_reported_not_dropped() {
        let namespaces = [namespace("shop", json!({}))];
        let plan = CollectPlan::new(
            &spec(json!({"includedNamespaces": ["shop"]})),
            &discovery(),
            &namespaces,
        )
        .unwrap();
        let outcomes: Vec<ListOutcome> = plan
            .requests()
            .iter()
            .map(|r| match r.resource.plural.as_str() {
                "secrets" => ListOutcome::Forbidden(
                    "secrets is forbidden: User \"alice\" cannot list resource \"secrets\"".into(),
                ),
                "pods" => ListOutcome::Failed(
                    "the server is currently unable to handle the request".into(),
                ),
                "configmaps" => ListOutcome::Listed(vec![object("shop", "c", json!({}))]),
                _ => ListOutcome::Listed(Vec::new()),
            })
            .collect();
        let collection = plan.finish(outcomes).unwrap();
        assert_eq!(
            names(&collection),
            ["configmaps/shop/c", "namespaces/-/shop"]
        );
        let unreadable: Vec<(String, Option<String>, UnreadableReason)> = collection
            .unreadable
            .iter()
            .map(|u| (u.group_resource(), u.namespace.clone(), u.reason))
            .collect();
        assert_eq!(
            unreadable,
            [
                (
                    "pods".to_string(),
                    Some("shop".to_string()),
                    UnreadableReason::Failed
                ),
                (
                    "secrets".to_string(),
                    Some("shop".to_string()),
                    UnreadableReason::Forbidden
                ),
            ]
        );
        let json = serde_json::to_value(&collection.unreadable[1]).unwrap();
        assert_eq!(json["reason"], "Forbidden");
        assert_eq!(json["resource"], "secrets");
    }

    #[test]
    fn outcomes_must_answer_every_request() {
        let plan = CollectPlan::new(
            &spec(json!({"includedNamespaces": ["shop"]})),
            &discovery(),
            &[namespace("shop", json!({}))],
        )
        .unwrap();
        let error = plan.finish(Vec::new()).unwrap_err();
        assert_eq!(error.outcomes, 0);
        assert_eq!(error.requests, plan.requests().len());
    }

    #[test]
    fn objects_of_other_namespaces_in_a_namespaced_answer_are_ignored() {
        let plan = CollectPlan::new(
            &spec(json!({"includedNamespaces": ["shop"]})),
            &discovery(),
            &[
                namespace("shop", json!({})),
                namespace("billing", json!({})),
            ],
        )
        .unwrap();
        let outcomes: Vec<ListOutcome> = plan
            .requests()
            .iter()
            .map(|r| {
                if r.resource.plural == "configmaps" {
                    ListOutcome::Listed(vec![
                        object("shop", "mine", json!({})),
                        object("billing", "theirs", json!({})),
                    ])
                } else {
                    ListOutcome::Listed(Vec::new())
                }
            })
            .collect();
        let collection = plan.finish(outcomes).unwrap();
        assert_eq!(
            names(&collection),
            ["configmaps/shop/mine", "namespaces/-/shop"]
        );
    }

    #[test]
    fn excluded_namespaces_type_adds_no_namespace_objects() {
        let plan = CollectPlan::new(
            &spec(
                json!({"includedNamespaces": ["shop"], "excludedNamespaceScopedResources": [],
                         "excludedClusterScopedResources": ["namespaces"]}),
            ),
            &discovery(),
            &[namespace("shop", json!({}))],
        )
        .unwrap();
        let outcomes = answer(&plan, &[("configmaps", object("shop", "c", json!({})))]);
        let collection = plan.finish(outcomes).unwrap();
        assert_eq!(names(&collection), ["configmaps/shop/c"]);
    }
}
