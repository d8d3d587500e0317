//! Kubernetes RBAC authorization for the API emulator: the decisions, denial messages, rules reviews and bootstrap policy kube-apiserver produces.
//!
//! Everything here is pure: the caller hands in the current Roles, ClusterRoles and bindings
//! ([`RbacPolicy`]) plus the request ([`RequestAttributes`]) and gets a [`Decision`] back. The
//! evaluation follows kube-apiserver's RBAC authorizer (`plugin/pkg/auth/authorizer/rbac`), its
//! rule resolver (`pkg/registry/rbac/validation/rule.go`) and rule matching
//! (`pkg/apis/rbac/v1/evaluation_helpers.go`), preceded by the `system:masters` short-cut that
//! kube-apiserver puts in front of RBAC.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::ControlFlow;

use k8s_openapi::api::authorization::v1::{NonResourceRule, ResourceRule};
use k8s_openapi::api::rbac::v1::{
    AggregationRule, ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef,
    Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use crate::api::common::go_quote;
use crate::api::selector::Selector;

/// The group whose members kube-apiserver allows everything, before RBAC is even asked.
pub const SYSTEM_MASTERS: &str = "system:masters";
/// The group every authenticated user carries.
pub const SYSTEM_AUTHENTICATED: &str = "system:authenticated";
/// The group the anonymous user carries.
pub const SYSTEM_UNAUTHENTICATED: &str = "system:unauthenticated";
/// The username of requests without credentials (when anonymous auth is on).
pub const ANONYMOUS_USER: &str = "system:anonymous";
/// The API group of Roles, ClusterRoles and their bindings.
pub const RBAC_API_GROUP: &str = "rbac.authorization.k8s.io";

const SERVICE_ACCOUNT_USERNAME_PREFIX: &str = "system:serviceaccount:";
const WILDCARD: &str = "*";

/// Who is asking: the authenticated identity, as in `user.Info`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub username: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

/// What is being asked, as in `authorizer.Attributes`.
///
/// A request is a resource request iff `non_resource_path` is `None`. `verb` is the Kubernetes
/// verb (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`, ...)
/// for resource requests and the lowercased HTTP method for non-resource URLs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestAttributes {
    pub user: UserInfo,
    pub verb: String,
    pub namespace: Option<String>,
    pub api_group: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
    pub non_resource_path: Option<String>,
}

impl RequestAttributes {
    /// True for requests about API objects, false for non-resource URLs such as `/healthz`.
    pub fn is_resource_request(&self) -> bool {
        self.non_resource_path.is_none()
    }

    /// The namespace RBAC evaluates in; empty means cluster scope. Non-resource URLs never have
    /// one, so RoleBindings can never grant them.
    fn effective_namespace(&self) -> &str {
        if self.is_resource_request() {
            self.namespace.as_deref().unwrap_or("")
        } else {
            ""
        }
    }
}

/// The RBAC objects currently stored in the cluster.
#[derive(Debug, Default, Clone)]
pub struct RbacPolicy {
    pub roles: Vec<Role>,
    pub cluster_roles: Vec<ClusterRole>,
    pub role_bindings: Vec<RoleBinding>,
    pub cluster_role_bindings: Vec<ClusterRoleBinding>,
}

/// The outcome of [`authorize`]; `reason` is what kube puts in `SubjectAccessReview.status.reason`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub reason: String,
}

/// Decides a request the way kube-apiserver's `system:masters` check followed by its RBAC
/// authorizer does.
///
/// Allowed decisions carry `RBAC: allowed by <binding> of <role> to <subject>` (empty for
/// `system:masters`, as kube). Denials carry an empty reason unless a binding that applies to the
/// user points at a role that does not exist, in which case kube reports the lookup errors
/// (`RBAC: clusterrole.rbac.authorization.k8s.io "x" not found`).
pub fn authorize(policy: &RbacPolicy, attrs: &RequestAttributes) -> Decision {
    if attrs
        .user
        .groups
        .iter()
        .any(|group| group == SYSTEM_MASTERS)
    {
        return Decision {
            allowed: true,
            reason: String::new(),
        };
    }

    let mut allowed_by = None;
    let mut errors = Vec::new();
    visit_rules(
        policy,
        &attrs.user,
        attrs.effective_namespace(),
        |visit| match visit {
            RuleVisit::Rule(source, rule) if rule_allows(attrs, rule) => {
                allowed_by = Some(source.to_string());
                ControlFlow::Break(())
            }
            RuleVisit::Rule(..) => ControlFlow::Continue(()),
            RuleVisit::ResolutionError(error) => {
                errors.push(error);
                ControlFlow::Continue(())
            }
        },
    );

    match allowed_by {
        Some(source) => Decision {
            allowed: true,
            reason: format!("RBAC: allowed by {source}"),
        },
        None if errors.is_empty() => Decision {
            allowed: false,
            reason: String::new(),
        },
        None => Decision {
            allowed: false,
            reason: format!("RBAC: {}", aggregate_errors(&errors)),
        },
    }
}

/// The message kube-apiserver puts after `<resource> "<name>" is forbidden: ` when a request is
/// denied, including its HTML sanitising of `&`, `<` and `>`.
pub fn forbidden_message(attrs: &RequestAttributes) -> String {
    let username = go_quote(&attrs.user.username);
    let message = match &attrs.non_resource_path {
        Some(path) => format!(
            "User {username} cannot {} path {}",
            attrs.verb,
            go_quote(path)
        ),
        None => {
            let mut resource = attrs.resource.clone();
            if !attrs.subresource.is_empty() {
                resource.push('/');
                resource.push_str(&attrs.subresource);
            }
            let scope = match attrs.namespace.as_deref() {
                Some(namespace) if !namespace.is_empty() => {
                    format!("in the namespace {}", go_quote(namespace))
                }
                _ => "at the cluster scope".to_string(),
            };
            format!(
                "User {username} cannot {} resource {} in API group {} {scope}",
                attrs.verb,
                go_quote(&resource),
                go_quote(&attrs.api_group)
            )
        }
    };
    sanitize_html(&message)
}

/// The rules a SelfSubjectRulesReview reports for `user` in `namespace` (empty: cluster-wide
/// bindings only): every rule of every ClusterRoleBinding and every RoleBinding in that namespace
/// that applies to the user, in binding order, undeduplicated, as kube does.
pub fn rules_for(
    policy: &RbacPolicy,
    user: &UserInfo,
    namespace: &str,
) -> (Vec<ResourceRule>, Vec<NonResourceRule>) {
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    visit_rules(policy, user, namespace, |visit| {
        if let RuleVisit::Rule(_, rule) = visit {
            if !list(&rule.resources).is_empty() {
                resource_rules.push(ResourceRule {
                    verbs: rule.verbs.clone(),
                    api_groups: non_empty(&rule.api_groups),
                    resources: non_empty(&rule.resources),
                    resource_names: non_empty(&rule.resource_names),
                });
            }
            if !list(&rule.non_resource_urls).is_empty() {
                non_resource_rules.push(NonResourceRule {
                    verbs: rule.verbs.clone(),
                    non_resource_urls: non_empty(&rule.non_resource_urls),
                });
            }
        }
        ControlFlow::Continue(())
    });
    (resource_rules, non_resource_rules)
}

/// Runs the clusterrole-aggregation controller to its fixed point: every ClusterRole with an
/// `aggregationRule` gets exactly the rules of the ClusterRoles its selectors match (per selector
/// sorted by name, itself skipped, duplicates dropped), chained aggregation (view → edit → admin)
/// included. Returns the updated roles whose rules changed; roles with an invalid selector are left
/// alone, as the controller only logs and retries them.
pub fn aggregate_cluster_roles(cluster_roles: &[ClusterRole]) -> Vec<ClusterRole> {
    let mut current = cluster_roles.to_vec();
    // Each pass sees the previous pass's results, as the controller requeues every aggregated
    // role on any change; the bound only guards against selector cycles that never settle.
    for _ in 0..=current.len() {
        let mut changed = false;
        for index in 0..current.len() {
            let Some(aggregation) = &current[index].aggregation_rule else {
                continue;
            };
            let Ok(rules) = aggregated_rules(&current, index, aggregation) else {
                continue;
            };
            if !rule_lists_equal(&rules, list(&current[index].rules)) {
                current[index].rules = Some(rules);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    current
        .into_iter()
        .zip(cluster_roles)
        .filter(|(updated, original)| {
            !rule_lists_equal(list(&updated.rules), list(&original.rules))
        })
        .map(|(updated, _)| updated)
        .collect()
}

/// The ClusterRoles of a fresh cluster that clients notice, with the labels, annotations and
/// aggregation rules of upstream's bootstrap policy; `admin`, `edit` and `view` already carry
/// their aggregated rules, as after the aggregation controller's first run.
pub fn bootstrap_cluster_roles() -> Vec<ClusterRole> {
    const READ: &[&str] = &["get", "list", "watch"];
    const WRITE: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];
    const READ_WRITE: &[&str] = &[
        "get",
        "list",
        "watch",
        "create",
        "update",
        "patch",
        "delete",
        "deletecollection",
    ];
    const AGGREGATE_TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
    const AGGREGATE_TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
    const AGGREGATE_TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";

    let mut roles = vec![
        bootstrap_cluster_role(
            "cluster-admin",
            &[],
            vec![
                rule(&["*"], &["*"], &["*"]),
                non_resource_rule(&["*"], &["*"]),
            ],
        ),
        bootstrap_cluster_role(
            "system:discovery",
            &[],
            vec![non_resource_rule(
                &["get"],
                &[
                    "/livez",
                    "/readyz",
                    "/healthz",
                    "/version",
                    "/version/",
                    "/openapi",
                    "/openapi/*",
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                ],
            )],
        ),
        bootstrap_cluster_role(
            "system:public-info-viewer",
            &[],
            vec![non_resource_rule(
                &["get"],
                &["/livez", "/readyz", "/healthz", "/version", "/version/"],
            )],
        ),
        bootstrap_cluster_role(
            "system:basic-user",
            &[],
            vec![
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                rule(
                    &["create"],
                    &["authentication.k8s.io"],
                    &["selfsubjectreviews"],
                ),
            ],
        ),
        bootstrap_cluster_role(
            "system:auth-delegator",
            &[],
            vec![
                rule(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["subjectaccessreviews"],
                ),
            ],
        ),
        aggregating_cluster_role("admin", &[], AGGREGATE_TO_ADMIN),
        aggregating_cluster_role("edit", &[AGGREGATE_TO_ADMIN], AGGREGATE_TO_EDIT),
        aggregating_cluster_role("view", &[AGGREGATE_TO_EDIT], AGGREGATE_TO_VIEW),
        bootstrap_cluster_role(
            "system:aggregate-to-admin",
            &[AGGREGATE_TO_ADMIN],
            vec![
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["localsubjectaccessreviews"],
                ),
                rule(READ_WRITE, &[RBAC_API_GROUP], &["roles", "rolebindings"]),
            ],
        ),
        bootstrap_cluster_role(
            "system:aggregate-to-edit",
            &[AGGREGATE_TO_EDIT],
            vec![
                // Reading these escalates (exec, secrets), so view lacks them and edit adds them.
                rule(
                    READ,
                    &[""],
                    &[
                        "pods/attach",
                        "pods/proxy",
                        "pods/exec",
                        "pods/portforward",
                        "secrets",
                        "services/proxy",
                    ],
                ),
                rule(&["impersonate"], &[""], &["serviceaccounts"]),
                rule(
                    WRITE,
                    &[""],
                    &[
                        "pods",
                        "pods/attach",
                        "pods/proxy",
                        "pods/exec",
                        "pods/portforward",
                    ],
                ),
                rule(&["create"], &[""], &["pods/eviction"]),
                rule(
                    WRITE,
                    &[""],
                    &[
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/proxy",
                        "persistentvolumeclaims",
                        "configmaps",
                        "secrets",
                    ],
                ),
                rule(&["create"], &[""], &["serviceaccounts/token"]),
                rule(
                    WRITE,
                    &["apps"],
                    &[
                        "statefulsets",
                        "statefulsets/scale",
                        "daemonsets",
                        "deployments",
                        "deployments/scale",
                        "deployments/rollback",
                        "replicasets",
                        "replicasets/scale",
                    ],
                ),
                rule(WRITE, &["autoscaling"], &["horizontalpodautoscalers"]),
                rule(WRITE, &["batch"], &["jobs", "cronjobs"]),
                rule(WRITE, &["policy"], &["poddisruptionbudgets"]),
                rule(
                    WRITE,
                    &["networking.k8s.io"],
                    &["networkpolicies", "ingresses"],
                ),
            ],
        ),
        bootstrap_cluster_role(
            "system:aggregate-to-view",
            &[AGGREGATE_TO_VIEW],
            vec![
                rule(
                    READ,
                    &[""],
                    &[
                        "pods",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/status",
                        "endpoints",
                        "persistentvolumeclaims",
                        "persistentvolumeclaims/status",
                        "configmaps",
                    ],
                ),
                rule(
                    READ,
                    &[""],
                    &[
                        "limitranges",
                        "resourcequotas",
                        "bindings",
                        "events",
                        "pods/status",
                        "resourcequotas/status",
                        "namespaces/status",
                        "replicationcontrollers/status",
                        "pods/log",
                    ],
                ),
                // Namespace-scoped read of `namespaces` lets a user read *their* namespace.
                rule(READ, &[""], &["namespaces"]),
                rule(READ, &["discovery.k8s.io"], &["endpointslices"]),
                rule(
                    READ,
                    &["apps"],
                    &[
                        "controllerrevisions",
                        "statefulsets",
                        "statefulsets/status",
                        "statefulsets/scale",
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/status",
                        "deployments/scale",
                        "replicasets",
                        "replicasets/status",
                        "replicasets/scale",
                    ],
                ),
                rule(
                    READ,
                    &["autoscaling"],
                    &[
                        "horizontalpodautoscalers",
                        "horizontalpodautoscalers/status",
                    ],
                ),
                rule(
                    READ,
                    &["batch"],
                    &["jobs", "jobs/status", "cronjobs", "cronjobs/status"],
                ),
                rule(
                    READ,
                    &["policy"],
                    &["poddisruptionbudgets", "poddisruptionbudgets/status"],
                ),
                rule(
                    READ,
                    &["networking.k8s.io"],
                    &["networkpolicies", "ingresses", "ingresses/status"],
                ),
            ],
        ),
    ];

    for aggregated in aggregate_cluster_roles(&roles) {
        if let Some(role) = roles
            .iter_mut()
            .find(|role| role.metadata.name == aggregated.metadata.name)
        {
            *role = aggregated;
        }
    }
    roles
}

/// The ClusterRoleBindings of a fresh cluster that clients notice.
pub fn bootstrap_cluster_role_bindings() -> Vec<ClusterRoleBinding> {
    vec![
        bootstrap_binding("cluster-admin", &[SYSTEM_MASTERS]),
        bootstrap_binding("system:discovery", &[SYSTEM_AUTHENTICATED]),
        bootstrap_binding("system:basic-user", &[SYSTEM_AUTHENTICATED]),
        bootstrap_binding(
            "system:public-info-viewer",
            &[SYSTEM_AUTHENTICATED, SYSTEM_UNAUTHENTICATED],
        ),
    ]
}

/// The username a ServiceAccount's tokens authenticate as.
pub fn service_account_username(namespace: &str, name: &str) -> String {
    format!("{SERVICE_ACCOUNT_USERNAME_PREFIX}{namespace}:{name}")
}

// ---------------------------------------------------------------------------------------------
// Rule resolution: which rules apply to a user in a namespace, and from which binding.
// ---------------------------------------------------------------------------------------------

/// The binding and subject a rule was granted through; displays as kube's describers do.
enum RuleSource<'a> {
    ClusterRoleBinding {
        binding: &'a ClusterRoleBinding,
        subject: &'a Subject,
    },
    RoleBinding {
        binding: &'a RoleBinding,
        subject: &'a Subject,
    },
}

impl fmt::Display for RuleSource<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ClusterRoleBinding { binding, subject } => write!(
                f,
                "ClusterRoleBinding {} of {} {} to {}",
                go_quote(object_name(&binding.metadata)),
                binding.role_ref.kind,
                go_quote(&binding.role_ref.name),
                describe_subject(subject, "")
            ),
            Self::RoleBinding { binding, subject } => {
                let namespace = object_namespace(&binding.metadata);
                write!(
                    f,
                    "RoleBinding {} of {} {} to {}",
                    go_quote(&format!("{}/{namespace}", object_name(&binding.metadata))),
                    binding.role_ref.kind,
                    go_quote(&binding.role_ref.name),
                    describe_subject(subject, namespace)
                )
            }
        }
    }
}

fn describe_subject(subject: &Subject, binding_namespace: &str) -> String {
    if subject.kind == "ServiceAccount" {
        let namespace = match subject.namespace.as_deref() {
            Some(namespace) if !namespace.is_empty() => namespace,
            _ => binding_namespace,
        };
        format!(
            "{} {}",
            subject.kind,
            go_quote(&format!("{}/{namespace}", subject.name))
        )
    } else {
        format!("{} {}", subject.kind, go_quote(&subject.name))
    }
}

enum RuleVisit<'a> {
    Rule(RuleSource<'a>, &'a PolicyRule),
    /// A binding applies to the user but its role cannot be resolved.
    ResolutionError(String),
}

/// Feeds `visit` every rule that applies to `user` in `namespace`: first those of
/// ClusterRoleBindings, then (only for a non-empty namespace) those of that namespace's
/// RoleBindings. Stops when `visit` breaks.
fn visit_rules<'a>(
    policy: &'a RbacPolicy,
    user: &UserInfo,
    namespace: &str,
    mut visit: impl FnMut(RuleVisit<'a>) -> ControlFlow<()>,
) {
    for binding in &policy.cluster_role_bindings {
        let Some(subject) = applying_subject(user, &binding.subjects, "") else {
            continue;
        };
        let flow = match role_ref_rules(policy, &binding.role_ref, "") {
            Ok(rules) => rules.iter().try_for_each(|rule| {
                visit(RuleVisit::Rule(
                    RuleSource::ClusterRoleBinding { binding, subject },
                    rule,
                ))
            }),
            Err(error) => visit(RuleVisit::ResolutionError(error)),
        };
        if flow.is_break() {
            return;
        }
    }

    if namespace.is_empty() {
        return;
    }
    for binding in policy
        .role_bindings
        .iter()
        .filter(|binding| object_namespace(&binding.metadata) == namespace)
    {
        let Some(subject) = applying_subject(user, &binding.subjects, namespace) else {
            continue;
        };
        let flow = match role_ref_rules(policy, &binding.role_ref, namespace) {
            Ok(rules) => rules.iter().try_for_each(|rule| {
                visit(RuleVisit::Rule(
                    RuleSource::RoleBinding { binding, subject },
                    rule,
                ))
            }),
            Err(error) => visit(RuleVisit::ResolutionError(error)),
        };
        if flow.is_break() {
            return;
        }
    }
}

/// Resolves a roleRef; a Role is looked up in the binding's namespace only, so a RoleBinding can
/// never reach another namespace's Role and a ClusterRoleBinding can never reach any Role.
fn role_ref_rules<'a>(
    policy: &'a RbacPolicy,
    role_ref: &RoleRef,
    binding_namespace: &str,
) -> Result<&'a [PolicyRule], String> {
    match role_ref.kind.as_str() {
        "Role" => policy
            .roles
            .iter()
            .find(|role| {
                !binding_namespace.is_empty()
                    && object_namespace(&role.metadata) == binding_namespace
                    && object_name(&role.metadata) == role_ref.name
            })
            .map(|role| list(&role.rules))
            .ok_or_else(|| not_found("role", &role_ref.name)),
        "ClusterRole" => policy
            .cluster_roles
            .iter()
            .find(|role| object_name(&role.metadata) == role_ref.name)
            .map(|role| list(&role.rules))
            .ok_or_else(|| not_found("clusterrole", &role_ref.name)),
        other => Err(format!(
            "unsupported role reference kind: {}",
            go_quote(other)
        )),
    }
}

fn not_found(resource: &str, name: &str) -> String {
    format!("{resource}.{RBAC_API_GROUP} {} not found", go_quote(name))
}

/// Joins resolution errors like apimachinery's `NewAggregate(...).Error()`: one message as is,
/// several deduplicated inside brackets.
fn aggregate_errors(errors: &[String]) -> String {
    let mut seen = BTreeSet::new();
    let unique: Vec<&str> = errors
        .iter()
        .filter(|error| seen.insert(error.as_str()))
        .map(String::as_str)
        .collect();
    match unique.as_slice() {
        [single] => (*single).to_string(),
        many => format!("[{}]", many.join(", ")),
    }
}

fn applying_subject<'a>(
    user: &UserInfo,
    subjects: &'a Option<Vec<Subject>>,
    binding_namespace: &str,
) -> Option<&'a Subject> {
    list(subjects)
        .iter()
        .find(|subject| subject_applies(user, subject, binding_namespace))
}

fn subject_applies(user: &UserInfo, subject: &Subject, binding_namespace: &str) -> bool {
    match subject.kind.as_str() {
        "User" => user.username == subject.name,
        "Group" => user.groups.contains(&subject.name),
        "ServiceAccount" => {
            // An unqualified ServiceAccount in a RoleBinding means one in the binding's namespace;
            // in a ClusterRoleBinding there is no such default, so it matches nobody.
            let namespace = match subject.namespace.as_deref() {
                Some(namespace) if !namespace.is_empty() => namespace,
                _ => binding_namespace,
            };
            !namespace.is_empty()
                && user.username == service_account_username(namespace, &subject.name)
        }
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------------
// Rule matching (evaluation_helpers.go).
// ---------------------------------------------------------------------------------------------

fn rule_allows(attrs: &RequestAttributes, rule: &PolicyRule) -> bool {
    if !verb_matches(rule, &attrs.verb) {
        return false;
    }
    match &attrs.non_resource_path {
        Some(path) => non_resource_url_matches(rule, path),
        None => {
            api_group_matches(rule, &attrs.api_group)
                && resource_matches(rule, &attrs.resource, &attrs.subresource)
                && resource_name_matches(rule, &attrs.name)
        }
    }
}

fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs
        .iter()
        .any(|rule_verb| rule_verb == WILDCARD || rule_verb == verb)
}

fn api_group_matches(rule: &PolicyRule, api_group: &str) -> bool {
    list(&rule.api_groups)
        .iter()
        .any(|rule_group| rule_group == WILDCARD || rule_group == api_group)
}

/// `*` matches everything (subresources too), `res` and `res/sub` match exactly, `*/sub` matches
/// that subresource of any resource. kube has no `res/*` form: it only matches literally.
fn resource_matches(rule: &PolicyRule, resource: &str, subresource: &str) -> bool {
    let combined = if subresource.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}/{subresource}")
    };
    list(&rule.resources).iter().any(|rule_resource| {
        rule_resource == WILDCARD
            || *rule_resource == combined
            || (!subresource.is_empty()
                && rule_resource
                    .strip_prefix("*/")
                    .is_some_and(|rule_subresource| rule_subresource == subresource))
    })
}

/// An empty resourceNames list allows any name; otherwise the request must name one of them, so
/// such rules never allow unnamed requests (create, plain list/watch, deletecollection).
fn resource_name_matches(rule: &PolicyRule, name: &str) -> bool {
    let names = list(&rule.resource_names);
    names.is_empty() || names.iter().any(|rule_name| rule_name == name)
}

fn non_resource_url_matches(rule: &PolicyRule, path: &str) -> bool {
    list(&rule.non_resource_urls).iter().any(|rule_url| {
        rule_url == WILDCARD
            || rule_url == path
            || (rule_url.ends_with('*') && path.starts_with(rule_url.trim_end_matches('*')))
    })
}

// ---------------------------------------------------------------------------------------------
// ClusterRole aggregation.
// ---------------------------------------------------------------------------------------------

fn aggregated_rules(
    cluster_roles: &[ClusterRole],
    target: usize,
    aggregation: &AggregationRule,
) -> Result<Vec<PolicyRule>, String> {
    let target_name = object_name(&cluster_roles[target].metadata);
    let mut rules: Vec<PolicyRule> = Vec::new();
    for selector in list(&aggregation.cluster_role_selectors) {
        let mut matched = Vec::new();
        for role in cluster_roles {
            if label_selector_matches(selector, role.metadata.labels.as_ref())? {
                matched.push(role);
            }
        }
        matched.sort_by(|a, b| object_name(&a.metadata).cmp(object_name(&b.metadata)));
        for role in matched {
            if object_name(&role.metadata) == target_name {
                continue;
            }
            for rule in list(&role.rules) {
                if !rules.iter().any(|existing| rules_equal(existing, rule)) {
                    rules.push(rule.clone());
                }
            }
        }
    }
    Ok(rules)
}

/// `metav1.LabelSelectorAsSelector` then `Matches`: an empty selector matches everything; a
/// selector apimachinery refuses is an error.
fn label_selector_matches(
    selector: &LabelSelector,
    labels: Option<&BTreeMap<String, String>>,
) -> Result<bool, String> {
    Selector::from_label_selector(selector)
        .map(|selector| selector.matches_option(labels))
        .map_err(|error| error.to_string())
}

/// Semantic equality of rules: an absent list equals an empty one, as apimachinery's
/// `equality.Semantic` treats nil and empty slices.
fn rules_equal(a: &PolicyRule, b: &PolicyRule) -> bool {
    a.verbs == b.verbs
        && list(&a.api_groups) == list(&b.api_groups)
        && list(&a.resources) == list(&b.resources)
        && list(&a.resource_names) == list(&b.resource_names)
        && list(&a.non_resource_urls) == list(&b.non_resource_urls)
}

fn rule_lists_equal(a: &[PolicyRule], b: &[PolicyRule]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| rules_equal(a, b))
}

// ---------------------------------------------------------------------------------------------
// Bootstrap policy builders.
// ---------------------------------------------------------------------------------------------

/// Sorted and deduplicated, as upstream's `PolicyRuleBuilder` emits its lists.
fn sorted_strings(values: &[&str]) -> Vec<String> {
    values
        .iter()
        .copied()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(str::to_string)
        .collect()
}

fn rule(verbs: &[&str], api_groups: &[&str], resources: &[&str]) -> PolicyRule {
    PolicyRule {
        verbs: sorted_strings(verbs),
        api_groups: Some(sorted_strings(api_groups)),
        resources: Some(sorted_strings(resources)),
        ..PolicyRule::default()
    }
}

fn non_resource_rule(verbs: &[&str], urls: &[&str]) -> PolicyRule {
    PolicyRule {
        verbs: sorted_strings(verbs),
        non_resource_urls: Some(sorted_strings(urls)),
        ..PolicyRule::default()
    }
}

fn bootstrap_metadata(name: &str, extra_labels: &[&str]) -> ObjectMeta {
    let mut labels = BTreeMap::from([(
        "kubernetes.io/bootstrapping".to_string(),
        "rbac-defaults".to_string(),
    )]);
    labels.extend(
        extra_labels
            .iter()
            .map(|label| (label.to_string(), "true".to_string())),
    );
    ObjectMeta {
        name: Some(name.to_string()),
        labels: Some(labels),
        annotations: Some(BTreeMap::from([(
            "rbac.authorization.kubernetes.io/autoupdate".to_string(),
            "true".to_string(),
        )])),
        ..ObjectMeta::default()
    }
}

fn bootstrap_cluster_role(name: &str, labels: &[&str], rules: Vec<PolicyRule>) -> ClusterRole {
    ClusterRole {
        metadata: bootstrap_metadata(name, labels),
        rules: Some(rules),
        aggregation_rule: None,
    }
}

fn aggregating_cluster_role(
    name: &str,
    labels: &[&str],
    aggregate_from_label: &str,
) -> ClusterRole {
    ClusterRole {
        metadata: bootstrap_metadata(name, labels),
        rules: None,
        aggregation_rule: Some(AggregationRule {
            cluster_role_selectors: Some(vec![LabelSelector {
                match_labels: Some(BTreeMap::from([(
                    aggregate_from_label.to_string(),
                    "true".to_string(),
                )])),
                match_expressions: None,
            }]),
        }),
    }
}

fn bootstrap_binding(cluster_role: &str, groups: &[&str]) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: bootstrap_metadata(cluster_role, &[]),
        role_ref: RoleRef {
            api_group: RBAC_API_GROUP.to_string(),
            kind: "ClusterRole".to_string(),
            name: cluster_role.to_string(),
        },
        subjects: Some(
            groups
                .iter()
                .map(|group| Subject {
                    api_group: Some(RBAC_API_GROUP.to_string()),
                    kind: "Group".to_string(),
                    name: group.to_string(),
                    namespace: None,
                })
                .collect(),
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// Small helpers.
// ---------------------------------------------------------------------------------------------

fn list<T>(values: &Option<Vec<T>>) -> &[T] {
    values.as_deref().unwrap_or_default()
}

fn non_empty(values: &Option<Vec<String>>) -> Option<Vec<String>> {
    values.as_ref().filter(|values| !values.is_empty()).cloned()
}

fn object_name(metadata: &ObjectMeta) -> &str {
    metadata.name.as_deref().unwrap_or("")
}

fn object_namespace(metadata: &ObjectMeta) -> &str {
    metadata.namespace.as_deref().unwrap_or("")
}

/// kube-apiserver's `responsewriters` sanitizer: denial messages must never look like HTML.
fn sanitize_html(message: &str) -> String {
    message
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
    use pretty_assertions::assert_eq;

    const NAC_GROUP: &str = "oadp.openshift.io";

    // ---- fixtures ------------------------------------------------------------------------

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            username: name.to_string(),
            uid: format!("uid-{name}"),
            groups: groups.iter().map(|group| group.to_string()).collect(),
            extra: BTreeMap::new(),
        }
    }

    fn authenticated(name: &str) -> UserInfo {
        user(name, &[SYSTEM_AUTHENTICATED])
    }

    fn anonymous() -> UserInfo {
        user(ANONYMOUS_USER, &[SYSTEM_UNAUTHENTICATED])
    }

    fn service_account_user(namespace: &str, name: &str) -> UserInfo {
        let namespace_group = format!("system:serviceaccounts:{namespace}");
        user(
            &service_account_username(namespace, name),
            &[
                "system:serviceaccounts",
                &namespace_group,
                SYSTEM_AUTHENTICATED,
            ],
        )
    }

    fn request(
        user: &UserInfo,
        verb: &str,
        namespace: Option<&str>,
        api_group: &str,
        resource: &str,
    ) -> RequestAttributes {
        RequestAttributes {
            user: user.clone(),
            verb: verb.to_string(),
            namespace: namespace.map(str::to_string),
            api_group: api_group.to_string(),
            resource: resource.to_string(),
            ..RequestAttributes::default()
        }
    }

    fn named(mut attrs: RequestAttributes, name: &str) -> RequestAttributes {
        attrs.name = name.to_string();
        attrs
    }

    fn with_subresource(mut attrs: RequestAttributes, subresource: &str) -> RequestAttributes {
        attrs.subresource = subresource.to_string();
        attrs
    }

    fn path_request(user: &UserInfo, verb: &str, path: &str) -> RequestAttributes {
        RequestAttributes {
            user: user.clone(),
            verb: verb.to_string(),
            non_resource_path: Some(path.to_string()),
            ..RequestAttributes::default()
        }
    }

    fn subject(kind: &str, name: &str, namespace: Option<&str>) -> Subject {
        Subject {
            api_group: (kind != "ServiceAccount").then(|| RBAC_API_GROUP.to_string()),
            kind: kind.to_string(),
            name: name.to_string(),
            namespace: namespace.map(str::to_string),
        }
    }

    fn user_subject(name: &str) -> Subject {
        subject("User", name, None)
    }

    fn group_subject(name: &str) -> Subject {
        subject("Group", name, None)
    }

    fn service_account_subject(namespace: Option<&str>, name: &str) -> Subject {
        subject("ServiceAccount", name, namespace)
    }

    fn metadata(namespace: Option<&str>, name: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_string()),
            namespace: namespace.map(str::to_string),
            ..ObjectMeta::default()
        }
    }

    fn named_rule(
        verbs: &[&str],
        groups: &[&str],
        resources: &[&str],
        names: &[&str],
    ) -> PolicyRule {
        PolicyRule {
            resource_names: Some(names.iter().map(|name| name.to_string()).collect()),
            ..rule(verbs, groups, resources)
        }
    }

    fn role(namespace: &str, name: &str, rules: Vec<PolicyRule>) -> Role {
        Role {
            metadata: metadata(Some(namespace), name),
            rules: Some(rules),
        }
    }

    fn cluster_role(name: &str, rules: Vec<PolicyRule>) -> ClusterRole {
        ClusterRole {
            metadata: metadata(None, name),
            rules: Some(rules),
            aggregation_rule: None,
        }
    }

    fn role_ref(kind: &str, name: &str) -> RoleRef {
        RoleRef {
            api_group: RBAC_API_GROUP.to_string(),
            kind: kind.to_string(),
            name: name.to_string(),
        }
    }

    fn role_binding(
        namespace: &str,
        name: &str,
        role_kind: &str,
        role_name: &str,
        subjects: Vec<Subject>,
    ) -> RoleBinding {
        RoleBinding {
            metadata: metadata(Some(namespace), name),
            role_ref: role_ref(role_kind, role_name),
            subjects: Some(subjects),
        }
    }

    fn cluster_role_binding(
        name: &str,
        role_name: &str,
        subjects: Vec<Subject>,
    ) -> ClusterRoleBinding {
        ClusterRoleBinding {
            metadata: metadata(None, name),
            role_ref: role_ref("ClusterRole", role_name),
            subjects: Some(subjects),
        }
    }

    fn allowed(policy: &RbacPolicy, attrs: &RequestAttributes) -> bool {
        authorize(policy, attrs).allowed
    }

    /// A tenant "alice" who owns team-a through a Role + RoleBinding on NAC's backups.
    fn tenant_policy() -> RbacPolicy {
        RbacPolicy {
            roles: vec![role(
                "team-a",
                "nab-owner",
                vec![rule(
                    &["get", "list", "watch", "create", "delete"],
                    &[NAC_GROUP],
                    &["nonadminbackups"],
                )],
            )],
            role_bindings: vec![role_binding(
                "team-a",
                "alice-owns-backups",
                "Role",
                "nab-owner",
                vec![user_subject("alice")],
            )],
            ..RbacPolicy::default()
        }
    }

    fn bootstrap_policy() -> RbacPolicy {
        RbacPolicy {
            cluster_roles: bootstrap_cluster_roles(),
            cluster_role_bindings: bootstrap_cluster_role_bindings(),
            ..RbacPolicy::default()
        }
    }

    fn cluster_role_named<'a>(roles: &'a [ClusterRole], name: &str) -> &'a ClusterRole {
        roles
            .iter()
            .find(|role| object_name(&role.metadata) == name)
            .unwrap_or_else(|| panic!("no ClusterRole {name}"))
    }

    // ---- system:masters ------------------------------------------------------------------

    #[test]
    fn system_masters_is_allowed_everything_even_without_any_policy() {
        let root = user("root", &[SYSTEM_AUTHENTICATED, SYSTEM_MASTERS]);
        let empty = RbacPolicy::default();
        for attrs in [
            request(
                &root,
                "delete",
                Some("team-b"),
                NAC_GROUP,
                "nonadminbackups",
            ),
            request(&root, "create", None, RBAC_API_GROUP, "clusterroles"),
            path_request(&root, "post", "/anything/at/all"),
        ] {
            assert_eq!(
                authorize(&empty, &attrs),
                Decision {
                    allowed: true,
                    reason: String::new()
                }
            );
        }
    }

    #[test]
    fn a_user_merely_named_like_the_group_is_not_a_master() {
        let impostor = authenticated(SYSTEM_MASTERS);
        let attrs = request(&impostor, "get", None, "", "nodes");
        assert!(!allowed(&RbacPolicy::default(), &attrs));
    }

    // ---- binding scope -------------------------------------------------------------------

    #[test]
    fn role_binding_grants_in_its_namespace_with_kube_reason() {
        let attrs = request(
            &authenticated("alice"),
            "list",
            Some("team-a"),
            NAC_GROUP,
            "nonadminbackups",
        );
        assert_eq!(
            authorize(&tenant_policy(), &attrs),
            Decision {
                allowed: true,
                reason: r#"RBAC: allowed by RoleBinding "alice-owns-backups/team-a" of Role "nab-owner" to User "alice""#
                    .to_string()
            }
        );
    }

    #[test]
    fn tenant_bound_in_team_a_is_denied_in_team_b_and_at_cluster_scope() {
        let alice = authenticated("alice");
        let policy = tenant_policy();
        for namespace in [Some("team-b"), None, Some("")] {
            let attrs = request(&alice, "list", namespace, NAC_GROUP, "nonadminbackups");
            assert_eq!(
                authorize(&policy, &attrs),
                Decision {
                    allowed: false,
                    reason: String::new()
                },
                "namespace {namespace:?}"
            );
        }
    }

    #[test]
    fn other_users_get_nothing_from_alices_binding() {
        let attrs = request(
            &authenticated("bob"),
            "get",
            Some("team-a"),
            NAC_GROUP,
            "nonadminbackups",
        );
        assert!(!allowed(&tenant_policy(), &attrs));
    }

    #[test]
    fn cluster_role_binding_grants_cluster_wide_and_in_every_namespace() {
        let policy = RbacPolicy {
            cluster_roles: vec![cluster_role(
                "nab-reader",
                vec![rule(&["get", "list"], &[NAC_GROUP], &["nonadminbackups"])],
            )],
            cluster_role_bindings: vec![cluster_role_binding(
                "auditors-read-backups",
                "nab-reader",
                vec![group_subject("auditors")],
            )],
            ..RbacPolicy::default()
        };
        let carol = user("carol", &[SYSTEM_AUTHENTICATED, "auditors"]);
        for namespace in [None, Some("team-a"), Some("team-b")] {
            let decision = authorize(
                &policy,
                &request(&carol, "list", namespace, NAC_GROUP, "nonadminbackups"),
            );
            assert_eq!(
                decision,
                Decision {
                    allowed: true,
                    reason: r#"RBAC: allowed by ClusterRoleBinding "auditors-read-backups" of ClusterRole "nab-reader" to Group "auditors""#
                        .to_string()
                }
            );
        }
        assert!(!allowed(
            &policy,
            &request(
                &carol,
                "delete",
                Some("team-a"),
                NAC_GROUP,
                "nonadminbackups"
            )
        ));
    }

    #[test]
    fn role_binding_to_a_cluster_role_is_scoped_to_the_binding_namespace() {
        let policy = RbacPolicy {
            cluster_roles: vec![cluster_role(
                "nab-editor",
                vec![rule(&["*"], &[NAC_GROUP], &["nonadminbackups"])],
            )],
            role_bindings: vec![role_binding(
                "team-a",
                "alice-edits",
                "ClusterRole",
                "nab-editor",
                vec![user_subject("alice")],
            )],
            ..RbacPolicy::default()
        };
        let alice = authenticated("alice");
        let in_team_a = request(
            &alice,
            "create",
            Some("team-a"),
            NAC_GROUP,
            "nonadminbackups",
        );
        assert_eq!(
            authorize(&policy, &in_team_a).reason,
            r#"RBAC: allowed by RoleBinding "alice-edits/team-a" of ClusterRole "nab-editor" to User "alice""#
        );
        assert!(!allowed(
            &policy,
            &request(
                &alice,
                "create",
                Some("team-b"),
                NAC_GROUP,
                "nonadminbackups"
            )
        ));
        assert!(!allowed(
            &policy,
            &request(&alice, "list", None, NAC_GROUP, "nonadminbackups")
        ));
    }

    #[test]
    fn a_role_in_team_a_bound_from_team_b_grants_nothing_anywhere() {
        let policy = RbacPolicy {
            roles: vec![role(
                "team-a",
                "nab-owner",
                vec![rule(&["*"], &["*"], &["*"])],
            )],
            role_bindings: vec![role_binding(
                "team-b",
                "sneaky",
                "Role",
                "nab-owner",
                vec![user_subject("mallory")],
            )],
            ..RbacPolicy::default()
        };
        let mallory = authenticated("mallory");
        let in_team_b = authorize(
            &policy,
            &request(
                &mallory,
                "get",
                Some("team-b"),
                NAC_GROUP,
                "nonadminbackups",
            ),
        );
        assert_eq!(
            in_team_b,
            Decision {
                allowed: false,
                reason: r#"RBAC: role.rbac.authorization.k8s.io "nab-owner" not found"#.to_string()
            }
        );
        assert!(!allowed(
            &policy,
            &request(
                &mallory,
                "get",
                Some("team-a"),
                NAC_GROUP,
                "nonadminbackups"
            )
        ));
        assert!(!allowed(
            &policy,
            &request(&mallory, "get", None, NAC_GROUP, "nonadminbackups")
        ));
    }

    #[test]
    fn a_cluster_role_binding_cannot_reference_a_role() {
        let policy = RbacPolicy {
            roles: vec![role(
                "team-a",
                "everything",
                vec![rule(&["*"], &["*"], &["*"])],
            )],
            cluster_role_bindings: vec![ClusterRoleBinding {
                role_ref: role_ref("Role", "everything"),
                ..cluster_role_binding("bad", "unused", vec![user_subject("alice")])
            }],
            ..RbacPolicy::default()
        };
        let decision = authorize(
            &policy,
            &request(&authenticated("alice"), "get", Some("team-a"), "", "pods"),
        );
        assert!(!decision.allowed);
        assert_eq!(
            decision.reason,
            r#"RBAC: role.rbac.authorization.k8s.io "everything" not found"#
        );
    }

    #[test]
    fn missing_role_refs_grant_nothing_and_are_reported_once_each() {
        let policy = RbacPolicy {
            cluster_role_bindings: vec![
                cluster_role_binding("ghost-1", "ghost", vec![user_subject("alice")]),
                cluster_role_binding("ghost-2", "ghost", vec![user_subject("alice")]),
                ClusterRoleBinding {
                    role_ref: role_ref("Policy", "weird"),
                    ..cluster_role_binding("weird", "unused", vec![user_subject("alice")])
                },
                // Applies to someone else: its broken roleRef must not leak into alice's reason.
                cluster_role_binding("bobs", "bobs-missing", vec![user_subject("bob")]),
            ],
            role_bindings: vec![role_binding(
                "team-a",
                "gone",
                "Role",
                "deleted-role",
                vec![user_subject("alice")],
            )],
            ..RbacPolicy::default()
        };
        let decision = authorize(
            &policy,
            &request(&authenticated("alice"), "get", Some("team-a"), "", "pods"),
        );
        assert_eq!(
            decision,
            Decision {
                allowed: false,
                reason: concat!(
                    r#"RBAC: [clusterrole.rbac.authorization.k8s.io "ghost" not found, "#,
                    r#"unsupported role reference kind: "Policy", "#,
                    r#"role.rbac.authorization.k8s.io "deleted-role" not found]"#
                )
                .to_string()
            }
        );
    }

    #[test]
    fn an_allowing_rule_wins_over_resolution_errors() {
        let mut policy = tenant_policy();
        policy.cluster_role_bindings.push(cluster_role_binding(
            "ghost",
            "ghost",
            vec![user_subject("alice")],
        ));
        let attrs = request(
            &authenticated("alice"),
            "get",
            Some("team-a"),
            NAC_GROUP,
            "nonadminbackups",
        );
        assert!(allowed(&policy, &attrs));
    }

    #[test]
    fn bindings_without_subjects_or_with_unknown_kinds_apply_to_nobody() {
        let policy = RbacPolicy {
            cluster_roles: vec![cluster_role("all", vec![rule(&["*"], &["*"], &["*"])])],
            cluster_role_bindings: vec![
                ClusterRoleBinding {
                    subjects: None,
                    ..cluster_role_binding("empty", "all", vec![])
                },
                cluster_role_binding("robot", "all", vec![subject("Robot", "alice", None)]),
            ],
            ..RbacPolicy::default()
        };
        assert!(!allowed(
            &policy,
            &request(&authenticated("alice"), "get", None, "", "nodes")
        ));
    }

    // ---- subjects ------------------------------------------------------------------------

    fn pod_reader_bound_in_team_a(subjects: Vec<Subject>) -> RbacPolicy {
        RbacPolicy {
            roles: vec![role(
                "team-a",
                "pod-reader",
                vec![rule(&["get"], &[""], &["pods"])],
            )],
            role_bindings: vec![role_binding(
                "team-a",
                "read-pods",
                "Role",
                "pod-reader",
                subjects,
            )],
            ..RbacPolicy::default()
        }
    }

    #[test]
    fn group_subject_matches_members_only() {
        let policy = pod_reader_bound_in_team_a(vec![group_subject("team-a-devs")]);
        let member = user("dave", &[SYSTEM_AUTHENTICATED, "team-a-devs"]);
        let outsider = authenticated("erin");
        assert_eq!(
            authorize(
                &policy,
                &request(&member, "get", Some("team-a"), "", "pods")
            )
            .reason,
            r#"RBAC: allowed by RoleBinding "read-pods/team-a" of Role "pod-reader" to Group "team-a-devs""#
        );
        assert!(!allowed(
            &policy,
            &request(&outsider, "get", Some("team-a"), "", "pods")
        ));
    }

    #[test]
    fn service_account_subject_with_explicit_namespace() {
        let policy =
            pod_reader_bound_in_team_a(vec![service_account_subject(Some("ci"), "deployer")]);
        let deployer = service_account_user("ci", "deployer");
        assert_eq!(
            authorize(
                &policy,
                &request(&deployer, "get", Some("team-a"), "", "pods")
            )
            .reason,
            r#"RBAC: allowed by RoleBinding "read-pods/team-a" of Role "pod-reader" to ServiceAccount "deployer/ci""#
        );
        for stranger in [
            service_account_user("team-a", "deployer"),
            service_account_user("ci", "other"),
            authenticated("deployer"),
        ] {
            assert!(
                !allowed(
                    &policy,
                    &request(&stranger, "get", Some("team-a"), "", "pods")
                ),
                "{}",
                stranger.username
            );
        }
    }

    #[test]
    fn unqualified_service_account_in_a_role_binding_means_the_binding_namespace() {
        for namespace in [None, Some("")] {
            let policy =
                pod_reader_bound_in_team_a(vec![service_account_subject(namespace, "builder")]);
            let local = service_account_user("team-a", "builder");
            let foreign = service_account_user("team-b", "builder");
            assert_eq!(
                authorize(&policy, &request(&local, "get", Some("team-a"), "", "pods")).reason,
                r#"RBAC: allowed by RoleBinding "read-pods/team-a" of Role "pod-reader" to ServiceAccount "builder/team-a""#
            );
            assert!(!allowed(
                &policy,
                &request(&foreign, "get", Some("team-a"), "", "pods")
            ));
        }
    }

    #[test]
    fn unqualified_service_account_in_a_cluster_role_binding_matches_nobody() {
        let policy = RbacPolicy {
            cluster_roles: vec![cluster_role("all", vec![rule(&["*"], &["*"], &["*"])])],
            cluster_role_bindings: vec![cluster_role_binding(
                "sa",
                "all",
                vec![service_account_subject(None, "builder")],
            )],
            ..RbacPolicy::default()
        };
        for user in [
            service_account_user("default", "builder"),
            service_account_user("", "builder"),
            authenticated("system:serviceaccount::builder"),
        ] {
            assert!(!allowed(
                &policy,
                &request(&user, "get", Some("default"), "", "pods")
            ));
        }
    }

    #[test]
    fn service_account_subject_matches_by_username_as_kube_does() {
        // kube compares the username only; the SA groups are the authenticator's business.
        let policy =
            pod_reader_bound_in_team_a(vec![service_account_subject(Some("ci"), "deployer")]);
        let bare = authenticated("system:serviceaccount:ci:deployer");
        assert!(allowed(
            &policy,
            &request(&bare, "get", Some("team-a"), "", "pods")
        ));
    }

    #[test]
    fn first_applying_subject_is_the_one_named_in_the_reason() {
        let policy = pod_reader_bound_in_team_a(vec![
            user_subject("zed"),
            group_subject("readers"),
            user_subject("alice"),
        ]);
        let alice = user("alice", &["readers"]);
        assert_eq!(
            authorize(&policy, &request(&alice, "get", Some("team-a"), "", "pods")).reason,
            r#"RBAC: allowed by RoleBinding "read-pods/team-a" of Role "pod-reader" to Group "readers""#
        );
    }

    // ---- rule matching -------------------------------------------------------------------

    /// A policy granting `rules` cluster-wide to the user "u".
    fn granting(rules: Vec<PolicyRule>) -> RbacPolicy {
        RbacPolicy {
            cluster_roles: vec![cluster_role("under-test", rules)],
            cluster_role_bindings: vec![cluster_role_binding(
                "under-test",
                "under-test",
                vec![user_subject("u")],
            )],
            ..RbacPolicy::default()
        }
    }

    fn u() -> UserInfo {
        authenticated("u")
    }

    #[test]
    fn verb_wildcard_matches_every_verb_and_verbs_are_exact_otherwise() {
        let star = granting(vec![rule(&["*"], &[""], &["pods"])]);
        for verb in [
            "get",
            "list",
            "watch",
            "deletecollection",
            "escalate",
            "impersonate",
        ] {
            assert!(
                allowed(&star, &request(&u(), verb, Some("x"), "", "pods")),
                "{verb}"
            );
        }
        let get_only = granting(vec![rule(&["get"], &[""], &["pods"])]);
        for verb in ["list", "GET", "Get", "getx", ""] {
            assert!(
                !allowed(&get_only, &request(&u(), verb, Some("x"), "", "pods")),
                "{verb}"
            );
        }
    }

    #[test]
    fn api_groups_match_exactly_with_core_as_empty_string_and_star_for_all() {
        let core = granting(vec![rule(&["get"], &[""], &["deployments"])]);
        assert!(allowed(
            &core,
            &request(&u(), "get", Some("x"), "", "deployments")
        ));
        assert!(!allowed(
            &core,
            &request(&u(), "get", Some("x"), "apps", "deployments")
        ));

        let apps = granting(vec![rule(&["get"], &["apps"], &["deployments"])]);
        assert!(!allowed(
            &apps,
            &request(&u(), "get", Some("x"), "", "deployments")
        ));
        assert!(!allowed(
            &apps,
            &request(&u(), "get", Some("x"), "apps.example", "deployments")
        ));

        let any = granting(vec![rule(&["get"], &["*"], &["deployments"])]);
        for group in ["", "apps", NAC_GROUP] {
            assert!(allowed(
                &any,
                &request(&u(), "get", Some("x"), group, "deployments")
            ));
        }

        let no_groups = granting(vec![PolicyRule {
            api_groups: None,
            ..rule(&["get"], &[], &["deployments"])
        }]);
        assert!(!allowed(
            &no_groups,
            &request(&u(), "get", Some("x"), "", "deployments")
        ));
    }

    #[test]
    fn resource_star_matches_resources_and_subresources() {
        let policy = granting(vec![rule(&["get"], &[""], &["*"])]);
        assert!(allowed(
            &policy,
            &request(&u(), "get", Some("x"), "", "pods")
        ));
        assert!(allowed(
            &policy,
            &with_subresource(request(&u(), "get", Some("x"), "", "pods"), "log")
        ));
    }

    #[test]
    fn a_resource_does_not_grant_its_subresources_nor_the_reverse() {
        let pods = granting(vec![rule(&["get"], &[""], &["pods"])]);
        assert!(!allowed(
            &pods,
            &with_subresource(request(&u(), "get", Some("x"), "", "pods"), "log")
        ));
        let pod_logs = granting(vec![rule(&["get"], &[""], &["pods/log"])]);
        assert!(allowed(
            &pod_logs,
            &with_subresource(request(&u(), "get", Some("x"), "", "pods"), "log")
        ));
        assert!(!allowed(
            &pod_logs,
            &request(&u(), "get", Some("x"), "", "pods")
        ));
        assert!(!allowed(
            &pod_logs,
            &with_subresource(request(&u(), "get", Some("x"), "", "pods"), "exec")
        ));
    }

    #[test]
    fn star_slash_subresource_matches_that_subresource_of_any_resource() {
        let policy = granting(vec![rule(&["update"], &["apps"], &["*/scale"])]);
        for resource in ["deployments", "statefulsets", "replicasets"] {
            assert!(allowed(
                &policy,
                &with_subresource(
                    request(&u(), "update", Some("x"), "apps", resource),
                    "scale"
                )
            ));
        }
        assert!(!allowed(
            &policy,
            &request(&u(), "update", Some("x"), "apps", "deployments")
        ));
        assert!(!allowed(
            &policy,
            &with_subresource(
                request(&u(), "update", Some("x"), "apps", "deployments"),
                "status"
            )
        ));
        assert!(!allowed(
            &policy,
            &with_subresource(
                request(&u(), "update", Some("x"), "apps", "deployments"),
                "scalex"
            )
        ));
    }

    #[test]
    fn resource_slash_star_is_not_a_wildcard_in_kube() {
        let policy = granting(vec![rule(&["get"], &[""], &["pods/*"])]);
        for subresource in ["", "log", "status"] {
            assert!(
                !allowed(
                    &policy,
                    &with_subresource(request(&u(), "get", Some("x"), "", "pods"), subresource)
                ),
                "pods/{subresource}"
            );
        }
    }

    #[test]
    fn resource_names_restrict_to_named_requests() {
        let policy = granting(vec![named_rule(
            &[
                "get",
                "list",
                "watch",
                "create",
                "update",
                "delete",
                "deletecollection",
            ],
            &[""],
            &["configmaps"],
            &["settings"],
        )]);
        let configmaps = |verb: &str| request(&u(), verb, Some("team-a"), "", "configmaps");
        for verb in ["get", "update", "delete"] {
            assert!(
                allowed(&policy, &named(configmaps(verb), "settings")),
                "{verb}"
            );
            assert!(
                !allowed(&policy, &named(configmaps(verb), "other")),
                "{verb}"
            );
        }
        // No name on the request: create, plain list/watch and deletecollection never match.
        for verb in ["create", "list", "watch", "deletecollection"] {
            assert!(!allowed(&policy, &configmaps(verb)), "{verb}");
        }
        // list/watch with fieldSelector metadata.name=settings carry the name.
        assert!(allowed(&policy, &named(configmaps("list"), "settings")));
        assert!(allowed(&policy, &named(configmaps("watch"), "settings")));
    }

    #[test]
    fn empty_resource_names_allow_any_name() {
        for names in [None, Some(vec![])] {
            let policy = granting(vec![PolicyRule {
                resource_names: names,
                ..rule(&["get"], &[""], &["configmaps"])
            }]);
            assert!(allowed(
                &policy,
                &named(
                    request(&u(), "get", Some("x"), "", "configmaps"),
                    "anything"
                )
            ));
        }
    }

    #[test]
    fn non_resource_urls_match_exactly_by_prefix_star_or_everything() {
        let policy = granting(vec![non_resource_rule(
            &["get"],
            &["/healthz", "/logs/*", "/metrics*"],
        )]);
        for path in [
            "/healthz",
            "/logs/",
            "/logs/kube.log",
            "/metrics",
            "/metricsfoo/bar",
        ] {
            assert!(allowed(&policy, &path_request(&u(), "get", path)), "{path}");
        }
        for path in ["/healthz/etcd", "/logs", "/healthzx", "/"] {
            assert!(
                !allowed(&policy, &path_request(&u(), "get", path)),
                "{path}"
            );
        }
        assert!(!allowed(&policy, &path_request(&u(), "post", "/healthz")));

        let everything = granting(vec![non_resource_rule(&["*"], &["*"])]);
        assert!(allowed(
            &everything,
            &path_request(&u(), "delete", "/any/path")
        ));
    }

    #[test]
    fn resource_rules_and_non_resource_rules_never_cross() {
        let resources = granting(vec![rule(&["*"], &["*"], &["*"])]);
        assert!(!allowed(&resources, &path_request(&u(), "get", "/apis")));
        let urls = granting(vec![non_resource_rule(&["*"], &["*"])]);
        assert!(!allowed(
            &urls,
            &request(&u(), "get", Some("x"), "", "pods")
        ));
    }

    #[test]
    fn role_bindings_never_grant_non_resource_urls() {
        let policy = RbacPolicy {
            cluster_roles: vec![cluster_role(
                "urls",
                vec![non_resource_rule(&["get"], &["*"])],
            )],
            role_bindings: vec![role_binding(
                "team-a",
                "urls",
                "ClusterRole",
                "urls",
                vec![user_subject("u")],
            )],
            ..RbacPolicy::default()
        };
        // Even if the caller fills a namespace in, a non-resource request has none.
        let mut attrs = path_request(&u(), "get", "/healthz");
        attrs.namespace = Some("team-a".to_string());
        assert!(!allowed(&policy, &attrs));
    }

    // ---- forbidden messages --------------------------------------------------------------

    #[test]
    fn forbidden_message_in_a_namespace() {
        let attrs = request(
            &authenticated("alice"),
            "list",
            Some("team-a"),
            NAC_GROUP,
            "nonadminbackups",
        );
        assert_eq!(
            forbidden_message(&attrs),
            r#"User "alice" cannot list resource "nonadminbackups" in API group "oadp.openshift.io" in the namespace "team-a""#
        );
    }

    #[test]
    fn forbidden_message_at_cluster_scope_and_core_group() {
        let alice = authenticated("alice");
        for namespace in [None, Some("")] {
            assert_eq!(
                forbidden_message(&request(&alice, "list", namespace, "", "namespaces")),
                r#"User "alice" cannot list resource "namespaces" in API group "" at the cluster scope"#
            );
        }
    }

    #[test]
    fn forbidden_message_names_the_subresource_but_not_the_object() {
        let attrs = named(
            with_subresource(
                request(
                    &authenticated("alice"),
                    "get",
                    Some("team-b"),
                    NAC_GROUP,
                    "nonadminbackups",
                ),
                "status",
            ),
            "nightly",
        );
        assert_eq!(
            forbidden_message(&attrs),
            r#"User "alice" cannot get resource "nonadminbackups/status" in API group "oadp.openshift.io" in the namespace "team-b""#
        );
    }

    #[test]
    fn forbidden_message_for_paths_and_anonymous() {
        assert_eq!(
            forbidden_message(&path_request(&authenticated("bob"), "get", "/apis")),
            r#"User "bob" cannot get path "/apis""#
        );
        assert_eq!(
            forbidden_message(&request(&anonymous(), "get", Some("team-a"), "", "pods")),
            r#"User "system:anonymous" cannot get resource "pods" in API group "" in the namespace "team-a""#
        );
    }

    #[test]
    fn forbidden_message_quotes_like_go_and_sanitizes_html() {
        let weird = authenticated("ev\"il\\<b>&\n\u{1}\u{85}é");
        assert_eq!(
            forbidden_message(&path_request(&weird, "get", "/x")),
            r#"User "ev\"il\\&lt;b&gt;&amp;\n\x01\u0085é" cannot get path "/x""#
        );
    }

    // ---- rules_for (SelfSubjectRulesReview) -----------------------------------------------

    #[test]
    fn rules_for_unions_cluster_and_namespace_bindings_only() {
        let mut policy = tenant_policy();
        policy.cluster_roles.push(cluster_role(
            "reader",
            vec![
                named_rule(&["get"], &[""], &["configmaps"], &["settings"]),
                non_resource_rule(&["get"], &["/healthz"]),
            ],
        ));
        policy.cluster_role_bindings.push(cluster_role_binding(
            "everyone-reads",
            "reader",
            vec![group_subject(SYSTEM_AUTHENTICATED)],
        ));
        policy
            .roles
            .push(role("team-b", "b-only", vec![rule(&["*"], &["*"], &["*"])]));
        policy.role_bindings.push(role_binding(
            "team-b",
            "alice-in-b",
            "Role",
            "b-only",
            vec![user_subject("alice")],
        ));
        let alice = authenticated("alice");

        let (resource_rules, non_resource_rules) = rules_for(&policy, &alice, "team-a");
        assert_eq!(
            resource_rules,
            vec![
                ResourceRule {
                    verbs: vec!["get".to_string()],
                    api_groups: Some(vec![String::new()]),
                    resources: Some(vec!["configmaps".to_string()]),
                    resource_names: Some(vec!["settings".to_string()]),
                },
                ResourceRule {
                    verbs: sorted_strings(&["get", "list", "watch", "create", "delete"]),
                    api_groups: Some(vec![NAC_GROUP.to_string()]),
                    resources: Some(vec!["nonadminbackups".to_string()]),
                    resource_names: None,
                },
            ]
        );
        assert_eq!(
            non_resource_rules,
            vec![NonResourceRule {
                verbs: vec!["get".to_string()],
                non_resource_urls: Some(vec!["/healthz".to_string()]),
            }]
        );

        let (cluster_only, _) = rules_for(&policy, &alice, "");
        assert_eq!(cluster_only.len(), 1);
        let (someone_else, _) = rules_for(&policy, &authenticated("bob"), "team-a");
        assert_eq!(
            someone_else.len(),
            1,
            "bob only gets the system:authenticated rules"
        );
    }

    #[test]
    fn rules_for_drops_empty_optional_lists_and_skips_broken_bindings() {
        let policy = RbacPolicy {
            cluster_roles: vec![cluster_role(
                "r",
                vec![PolicyRule {
                    resource_names: Some(vec![]),
                    ..rule(&["get"], &[""], &["pods"])
                }],
            )],
            cluster_role_bindings: vec![
                cluster_role_binding("ok", "r", vec![user_subject("u")]),
                cluster_role_binding("broken", "missing", vec![user_subject("u")]),
            ],
            ..RbacPolicy::default()
        };
        let (resource_rules, non_resource_rules) = rules_for(&policy, &u(), "x");
        assert_eq!(resource_rules.len(), 1);
        assert_eq!(resource_rules[0].resource_names, None);
        assert!(non_resource_rules.is_empty());
    }

    #[test]
    fn rules_for_system_masters_comes_from_the_cluster_admin_binding() {
        let root = user("root", &[SYSTEM_MASTERS, SYSTEM_AUTHENTICATED]);
        let (resource_rules, non_resource_rules) = rules_for(&bootstrap_policy(), &root, "team-a");
        assert!(resource_rules.contains(&ResourceRule {
            verbs: vec!["*".to_string()],
            api_groups: Some(vec!["*".to_string()]),
            resources: Some(vec!["*".to_string()]),
            resource_names: None,
        }));
        assert!(non_resource_rules.contains(&NonResourceRule {
            verbs: vec!["*".to_string()],
            non_resource_urls: Some(vec!["*".to_string()]),
        }));
    }

    // ---- aggregation ---------------------------------------------------------------------

    fn labelled(mut role: ClusterRole, labels: &[(&str, &str)]) -> ClusterRole {
        role.metadata.labels = Some(
            labels
                .iter()
                .map(|(key, value)| (key.to_string(), value.to_string()))
                .collect(),
        );
        role
    }

    fn aggregating(name: &str, selectors: Vec<LabelSelector>) -> ClusterRole {
        ClusterRole {
            aggregation_rule: Some(AggregationRule {
                cluster_role_selectors: Some(selectors),
            }),
            rules: None,
            ..cluster_role(name, vec![])
        }
    }

    fn match_labels(key: &str, value: &str) -> LabelSelector {
        LabelSelector {
            match_labels: Some(BTreeMap::from([(key.to_string(), value.to_string())])),
            match_expressions: None,
        }
    }

    fn match_expression(key: &str, operator: &str, values: &[&str]) -> LabelSelector {
        LabelSelector {
            match_labels: None,
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: key.to_string(),
                operator: operator.to_string(),
                values: (!values.is_empty())
                    .then(|| values.iter().map(|v| v.to_string()).collect()),
            }]),
        }
    }

    fn nab_rule(verb: &str) -> PolicyRule {
        rule(&[verb], &[NAC_GROUP], &["nonadminbackups"])
    }

    #[test]
    fn aggregation_collects_matching_roles_sorted_by_name_without_duplicates() {
        let roles = vec![
            aggregating("nac-admin", vec![match_labels("nac/aggregate", "true")]),
            labelled(
                cluster_role("zz-delete", vec![nab_rule("delete"), nab_rule("get")]),
                &[("nac/aggregate", "true")],
            ),
            labelled(
                cluster_role("aa-read", vec![nab_rule("get")]),
                &[("nac/aggregate", "true")],
            ),
            labelled(
                cluster_role("unlabelled-ish", vec![nab_rule("patch")]),
                &[("nac/aggregate", "false")],
            ),
        ];
        let changed = aggregate_cluster_roles(&roles);
        assert_eq!(changed.len(), 1);
        assert_eq!(object_name(&changed[0].metadata), "nac-admin");
        assert_eq!(
            changed[0].rules,
            Some(vec![nab_rule("get"), nab_rule("delete")])
        );
        assert_eq!(changed[0].aggregation_rule, roles[0].aggregation_rule);
    }

    #[test]
    fn aggregation_grants_through_bindings_once_applied() {
        let mut policy = RbacPolicy {
            cluster_roles: vec![
                aggregating("nac-admin", vec![match_labels("nac/aggregate", "true")]),
                labelled(
                    cluster_role("nab-read", vec![nab_rule("get")]),
                    &[("nac/aggregate", "true")],
                ),
            ],
            role_bindings: vec![role_binding(
                "team-a",
                "admins",
                "ClusterRole",
                "nac-admin",
                vec![user_subject("alice")],
            )],
            ..RbacPolicy::default()
        };
        let attrs = request(
            &authenticated("alice"),
            "get",
            Some("team-a"),
            NAC_GROUP,
            "nonadminbackups",
        );
        assert!(!allowed(&policy, &attrs), "nothing aggregated yet");
        for updated in aggregate_cluster_roles(&policy.cluster_roles) {
            let slot = policy
                .cluster_roles
                .iter_mut()
                .find(|role| role.metadata.name == updated.metadata.name)
                .unwrap();
            *slot = updated;
        }
        assert!(allowed(&policy, &attrs));
    }

    #[test]
    fn aggregation_skips_the_role_itself_and_overwrites_manual_rules() {
        let mut own = aggregating("self-labelled", vec![match_labels("agg", "yes")]);
        own.rules = Some(vec![nab_rule("create")]);
        let own = labelled(own, &[("agg", "yes")]);
        let roles = vec![
            own,
            labelled(
                cluster_role("source", vec![nab_rule("get")]),
                &[("agg", "yes")],
            ),
        ];
        let changed = aggregate_cluster_roles(&roles);
        assert_eq!(changed.len(), 1);
        assert_eq!(changed[0].rules, Some(vec![nab_rule("get")]));
    }

    #[test]
    fn aggregation_with_no_matches_clears_rules_and_reports_only_real_changes() {
        let mut stale = aggregating("stale", vec![match_labels("nothing", "matches")]);
        stale.rules = Some(vec![nab_rule("get")]);
        let untouched_empty =
            aggregating("already-empty", vec![match_labels("nothing", "matches")]);
        let mut explicit_empty =
            aggregating("explicit-empty", vec![match_labels("nothing", "matches")]);
        explicit_empty.rules = Some(vec![]);
        let changed = aggregate_cluster_roles(&[stale, untouched_empty, explicit_empty]);
        assert_eq!(changed.len(), 1);
        assert_eq!(object_name(&changed[0].metadata), "stale");
        assert_eq!(changed[0].rules, Some(vec![]));
    }

    #[test]
    fn aggregation_selectors_support_expressions_and_empty_selector_matches_all() {
        let sources = vec![
            labelled(
                cluster_role("a", vec![nab_rule("get")]),
                &[("tier", "gold")],
            ),
            labelled(
                cluster_role("b", vec![nab_rule("list")]),
                &[("tier", "silver")],
            ),
            cluster_role("c", vec![nab_rule("watch")]),
        ];
        let cases: Vec<(LabelSelector, Vec<PolicyRule>)> = vec![
            (
                match_expression("tier", "In", &["gold", "bronze"]),
                vec![nab_rule("get")],
            ),
            (
                match_expression("tier", "NotIn", &["gold"]),
                vec![nab_rule("list"), nab_rule("watch")],
            ),
            (
                match_expression("tier", "Exists", &[]),
                vec![nab_rule("get"), nab_rule("list")],
            ),
            (
                match_expression("tier", "DoesNotExist", &[]),
                vec![nab_rule("watch")],
            ),
            (
                LabelSelector::default(),
                vec![nab_rule("get"), nab_rule("list"), nab_rule("watch")],
            ),
        ];
        for (selector, expected) in cases {
            let mut roles = sources.clone();
            roles.push(aggregating("target", vec![selector.clone()]));
            let changed = aggregate_cluster_roles(&roles);
            assert_eq!(changed.len(), 1, "{selector:?}");
            assert_eq!(changed[0].rules, Some(expected), "{selector:?}");
        }
    }

    #[test]
    fn aggregation_leaves_roles_with_invalid_selectors_alone() {
        let mut broken = aggregating(
            "broken",
            vec![
                match_expression("tier", "In", &[]),
                match_labels("tier", "gold"),
            ],
        );
        broken.rules = Some(vec![nab_rule("patch")]);
        for bad in [
            broken.clone(),
            aggregating("bad-op", vec![match_expression("tier", "Matches", &["x"])]),
            aggregating(
                "exists-with-values",
                vec![match_expression("tier", "Exists", &["x"])],
            ),
        ] {
            let roles = vec![
                labelled(
                    cluster_role("a", vec![nab_rule("get")]),
                    &[("tier", "gold")],
                ),
                bad,
            ];
            assert!(aggregate_cluster_roles(&roles).is_empty());
        }
    }

    #[test]
    fn chained_aggregation_reaches_a_fixed_point_in_any_order() {
        // admin <- edit <- view, listed in the least helpful order.
        let roles = vec![
            aggregating("admin", vec![match_labels("to-admin", "true")]),
            labelled(
                aggregating("edit", vec![match_labels("to-edit", "true")]),
                &[("to-admin", "true")],
            ),
            labelled(
                aggregating("view", vec![match_labels("to-view", "true")]),
                &[("to-edit", "true")],
            ),
            labelled(
                cluster_role("view-rules", vec![nab_rule("get")]),
                &[("to-view", "true")],
            ),
            labelled(
                cluster_role("edit-rules", vec![nab_rule("create")]),
                &[("to-edit", "true")],
            ),
            labelled(
                cluster_role("admin-rules", vec![nab_rule("delete")]),
                &[("to-admin", "true")],
            ),
        ];
        let changed = aggregate_cluster_roles(&roles);
        let admin = cluster_role_named(&changed, "admin");
        // Per selector sorted by name: "admin-rules" < "edit".
        assert_eq!(
            admin.rules,
            Some(vec![
                nab_rule("delete"),
                nab_rule("create"),
                nab_rule("get")
            ])
        );
        assert_eq!(
            cluster_role_named(&changed, "edit").rules,
            Some(vec![nab_rule("create"), nab_rule("get")])
        );
        assert_eq!(
            cluster_role_named(&changed, "view").rules,
            Some(vec![nab_rule("get")])
        );
        assert_eq!(changed.len(), 3);
    }

    #[test]
    fn aggregation_cycles_terminate() {
        let roles = vec![
            labelled(
                aggregating("a", vec![match_labels("to-a", "true")]),
                &[("to-b", "true")],
            ),
            labelled(
                aggregating("b", vec![match_labels("to-b", "true")]),
                &[("to-a", "true")],
            ),
            labelled(
                cluster_role("seed", vec![nab_rule("get")]),
                &[("to-a", "true")],
            ),
        ];
        let changed = aggregate_cluster_roles(&roles);
        assert_eq!(
            cluster_role_named(&changed, "a").rules,
            Some(vec![nab_rule("get")])
        );
        assert_eq!(
            cluster_role_named(&changed, "b").rules,
            Some(vec![nab_rule("get")])
        );
    }

    // ---- bootstrap policy ----------------------------------------------------------------

    #[test]
    fn bootstrap_roles_are_already_aggregated_and_labelled() {
        let roles = bootstrap_cluster_roles();
        assert!(
            aggregate_cluster_roles(&roles).is_empty(),
            "bootstrap is a fixed point"
        );
        for role in &roles {
            let labels = role.metadata.labels.as_ref().unwrap();
            assert_eq!(labels["kubernetes.io/bootstrapping"], "rbac-defaults");
            assert_eq!(
                role.metadata.annotations.as_ref().unwrap()["rbac.authorization.kubernetes.io/autoupdate"],
                "true"
            );
            assert!(
                !list(&role.rules).is_empty(),
                "{:?} has no rules",
                role.metadata.name
            );
        }
        for (name, label) in [
            ("admin", "rbac.authorization.k8s.io/aggregate-to-admin"),
            ("edit", "rbac.authorization.k8s.io/aggregate-to-edit"),
            ("view", "rbac.authorization.k8s.io/aggregate-to-view"),
        ] {
            let role = cluster_role_named(&roles, name);
            let selectors = role
                .aggregation_rule
                .as_ref()
                .and_then(|rule| rule.cluster_role_selectors.clone())
                .unwrap();
            assert_eq!(selectors, vec![match_labels(label, "true")]);
        }
        let edit_labels = cluster_role_named(&roles, "edit")
            .metadata
            .labels
            .clone()
            .unwrap();
        assert_eq!(
            edit_labels["rbac.authorization.k8s.io/aggregate-to-admin"],
            "true"
        );
        let view_labels = cluster_role_named(&roles, "view")
            .metadata
            .labels
            .clone()
            .unwrap();
        assert_eq!(
            view_labels["rbac.authorization.k8s.io/aggregate-to-edit"],
            "true"
        );
    }

    #[test]
    fn bootstrap_bindings_reference_existing_roles() {
        let roles = bootstrap_cluster_roles();
        for binding in bootstrap_cluster_role_bindings() {
            assert_eq!(binding.role_ref.kind, "ClusterRole");
            assert_eq!(binding.role_ref.api_group, RBAC_API_GROUP);
            cluster_role_named(&roles, &binding.role_ref.name);
        }
    }

    #[test]
    fn bootstrap_masters_allowed_through_cluster_admin_too() {
        // Without the group short-cut the cluster-admin binding alone would also allow it.
        let policy = bootstrap_policy();
        let (rules, _) = rules_for(&policy, &user("root", &[SYSTEM_MASTERS]), "");
        assert!(!rules.is_empty());
    }

    #[test]
    fn bootstrap_discovery_and_health_for_authenticated_users() {
        let policy = bootstrap_policy();
        let bob = authenticated("bob");
        for path in [
            "/api",
            "/api/v1",
            "/apis",
            "/apis/oadp.openshift.io/v1alpha1",
            "/version",
            "/healthz",
            "/livez",
            "/readyz",
            "/openapi/v3",
            "/openapi",
        ] {
            assert!(allowed(&policy, &path_request(&bob, "get", path)), "{path}");
        }
        assert_eq!(
            authorize(&policy, &path_request(&bob, "get", "/apis")).reason,
            r#"RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated""#
        );
        assert!(!allowed(&policy, &path_request(&bob, "post", "/apis")));
        assert!(!allowed(&policy, &path_request(&bob, "get", "/metrics")));
        assert!(!allowed(&policy, &path_request(&bob, "get", "/logs/")));
    }

    #[test]
    fn bootstrap_anonymous_sees_public_info_only() {
        let policy = bootstrap_policy();
        let nobody = anonymous();
        for path in ["/healthz", "/livez", "/readyz", "/version"] {
            assert!(
                allowed(&policy, &path_request(&nobody, "get", path)),
                "{path}"
            );
        }
        for path in ["/api", "/apis", "/openapi/v2", "/healthz/etcd"] {
            assert!(
                !allowed(&policy, &path_request(&nobody, "get", path)),
                "{path}"
            );
        }
        assert!(!allowed(
            &policy,
            &request(
                &nobody,
                "create",
                None,
                "authorization.k8s.io",
                "selfsubjectaccessreviews"
            )
        ));
        assert!(!allowed(
            &policy,
            &request(&nobody, "list", Some("default"), "", "pods")
        ));
    }

    #[test]
    fn bootstrap_basic_user_may_ask_about_itself_only() {
        let policy = bootstrap_policy();
        let bob = authenticated("bob");
        for (group, resource) in [
            ("authorization.k8s.io", "selfsubjectaccessreviews"),
            ("authorization.k8s.io", "selfsubjectrulesreviews"),
            ("authentication.k8s.io", "selfsubjectreviews"),
        ] {
            assert!(
                allowed(&policy, &request(&bob, "create", None, group, resource)),
                "{resource}"
            );
        }
        assert!(!allowed(
            &policy,
            &request(
                &bob,
                "create",
                None,
                "authorization.k8s.io",
                "subjectaccessreviews"
            )
        ));
        assert!(!allowed(
            &policy,
            &request(
                &bob,
                "create",
                None,
                "authentication.k8s.io",
                "tokenreviews"
            )
        ));
        assert!(!allowed(
            &policy,
            &request(&bob, "list", Some("team-a"), NAC_GROUP, "nonadminbackups")
        ));
    }

    #[test]
    fn bootstrap_view_edit_admin_bound_in_a_namespace() {
        let mut policy = bootstrap_policy();
        for (who, role) in [("viewer", "view"), ("editor", "edit"), ("owner", "admin")] {
            policy.role_bindings.push(role_binding(
                "team-a",
                &format!("{who}-binding"),
                "ClusterRole",
                role,
                vec![user_subject(who)],
            ));
        }
        let can = |who: &str, verb: &str, group: &str, resource: &str| {
            allowed(
                &policy,
                &request(&authenticated(who), verb, Some("team-a"), group, resource),
            )
        };

        assert!(can("viewer", "list", "", "pods"));
        assert!(can("viewer", "get", "apps", "deployments"));
        assert!(can("viewer", "get", "", "namespaces"));
        assert!(!can("viewer", "get", "", "secrets"));
        assert!(!can("viewer", "create", "", "configmaps"));

        assert!(can("editor", "create", "", "secrets"));
        assert!(can("editor", "get", "", "secrets"));
        assert!(can("editor", "patch", "apps", "deployments"));
        assert!(can("editor", "list", "", "pods"), "edit includes view");
        assert!(!can("editor", "create", RBAC_API_GROUP, "rolebindings"));

        assert!(can("owner", "create", RBAC_API_GROUP, "rolebindings"));
        assert!(can(
            "owner",
            "create",
            "authorization.k8s.io",
            "localsubjectaccessreviews"
        ));
        assert!(can("owner", "delete", "", "secrets"), "admin includes edit");
        assert!(can("owner", "watch", "", "pods"), "admin includes view");
        assert!(!can("owner", "create", RBAC_API_GROUP, "clusterroles"));

        let owner = authenticated("owner");
        assert!(!allowed(
            &policy,
            &request(&owner, "list", Some("team-b"), "", "pods")
        ));
        assert!(!allowed(
            &policy,
            &request(&owner, "list", None, "", "pods")
        ));
    }
}
