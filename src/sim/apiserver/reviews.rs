//! Answers the review kinds — TokenReview, SelfSubjectReview, (Local/Self)SubjectAccessReview and
//! SelfSubjectRulesReview — from the same authenticator and RBAC evaluator the server uses.
use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::errors::ApiError;
use super::rbac::{self, RequestAttributes, UserInfo};
use super::registry::{ResourceInfo, ReviewKind};
use super::state::State;

fn user_json(user: &UserInfo) -> Value {
    let mut u = json!({"username": user.username, "groups": user.groups});
    if !user.uid.is_empty() {
        u["uid"] = json!(user.uid);
    }
    if !user.extra.is_empty() {
        u["extra"] = json!(user.extra);
    }
    u
}

fn attributes_from_spec(spec: &Value, user: UserInfo) -> Result<RequestAttributes, ApiError> {
    if let Some(r) = spec.get("resourceAttributes").filter(|v| v.is_object()) {
        let s = |k: &str| {
            r.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let namespace = s("namespace");
        return Ok(RequestAttributes {
            user,
            verb: s("verb"),
            namespace: (!namespace.is_empty()).then_some(namespace),
            api_group: s("group"),
            resource: s("resource"),
            subresource: s("subresource"),
            name: s("name"),
            non_resource_path: None,
        });
    }
    if let Some(n) = spec.get("nonResourceAttributes").filter(|v| v.is_object()) {
        let s = |k: &str| {
            n.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        return Ok(RequestAttributes {
            user,
            verb: s("verb"),
            namespace: None,
            api_group: String::new(),
            resource: String::new(),
            subresource: String::new(),
            name: String::new(),
            non_resource_path: Some(s("path")),
        });
    }
    Err(ApiError::BadRequest(
        "spec: Invalid value: exactly one of nonResourceAttributes or resourceAttributes must be specified".into(),
    ))
}

fn user_from_spec(spec: &Value) -> UserInfo {
    let groups = spec
        .get("groups")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|g| g.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let extra: BTreeMap<String, Vec<String>> = spec
        .get("extra")
        .and_then(|e| serde_json::from_value(e.clone()).ok())
        .unwrap_or_default();
    UserInfo {
        username: spec
            .get("user")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        uid: spec
            .get("uid")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        groups,
        extra,
    }
}

/// Answers a review `body` posted by `caller`; `namespace` is the URL namespace (local reviews).
pub fn answer(
    state: &mut State,
    info: &ResourceInfo,
    kind: ReviewKind,
    caller: &UserInfo,
    namespace: &str,
    mut body: Value,
) -> Result<Value, ApiError> {
    if !body.is_object() {
        return Err(ApiError::BadRequest(
            "the body of the request must be a JSON object".into(),
        ));
    }
    let spec = body.get("spec").cloned().unwrap_or(json!({}));
    let status = match kind {
        ReviewKind::TokenReview => {
            let token = spec
                .get("token")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let audiences = spec
                .get("audiences")
                .cloned()
                .unwrap_or(json!(["https://kubernetes.default.svc"]));
            match state.authenticate(token) {
                Some(user) => {
                    json!({"authenticated": true, "user": user_json(&user), "audiences": audiences})
                }
                // kube omits `authenticated: false` (omitempty).
                None => json!({"user": {}, "error": "invalid bearer token"}),
            }
        }
        ReviewKind::SelfSubjectReview => json!({"userInfo": user_json(caller)}),
        ReviewKind::SubjectAccessReview | ReviewKind::LocalSubjectAccessReview => {
            let user = user_from_spec(&spec);
            if user.username.is_empty() && user.groups.is_empty() {
                return Err(ApiError::BadRequest(
                    "spec.user: Invalid value: \"\": at least one of user or group must be specified".into(),
                ));
            }
            let attrs = attributes_from_spec(&spec, user)?;
            if kind == ReviewKind::LocalSubjectAccessReview
                && attrs.namespace.as_deref().unwrap_or_default() != namespace
            {
                return Err(ApiError::BadRequest(format!(
                    "spec.resourceAttributes.namespace: Invalid value: {:?}: must match metadata.namespace",
                    attrs.namespace.unwrap_or_default()
                )));
            }
            decision_status(state, &attrs)
        }
        ReviewKind::SelfSubjectAccessReview => {
            let attrs = attributes_from_spec(&spec, caller.clone())?;
            decision_status(state, &attrs)
        }
        ReviewKind::SelfSubjectRulesReview => {
            let ns = spec
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let policy = state.rbac_policy();
            let (resource_rules, non_resource_rules) = rbac::rules_for(&policy, caller, ns);
            json!({
                "resourceRules": resource_rules,
                "nonResourceRules": non_resource_rules,
                "incomplete": false,
            })
        }
    };
    body["apiVersion"] = json!(info.api_version(&info.versions[0]));
    body["kind"] = json!(info.kind);
    if body.get("metadata").is_none_or(|m| !m.is_object()) {
        body["metadata"] = json!({});
    }
    // kube v1.36 omits a zero creationTimestamp; a SelfSubjectReview carries the current time.
    if let Some(m) = body["metadata"].as_object_mut() {
        if kind == ReviewKind::SelfSubjectReview {
            m.insert(
                "creationTimestamp".into(),
                json!(super::state::now_rfc3339()),
            );
        } else {
            m.remove("creationTimestamp");
        }
    }
    body["status"] = status;
    Ok(body)
}

fn decision_status(state: &mut State, attrs: &RequestAttributes) -> Value {
    let policy = state.rbac_policy();
    let decision = rbac::authorize(&policy, attrs);
    let mut s = json!({"allowed": decision.allowed});
    if !decision.reason.is_empty() {
        s["reason"] = json!(decision.reason);
    }
    s
}
