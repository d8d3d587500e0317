//! Object metadata validation as kube-apiserver applies it to every kind (names, labels,
//! annotations, finalizers, owner references). Pure functions.
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::schema::{FieldError, FieldErrorKind};

static DNS1123_LABEL: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$").ok());
static DNS1123_SUBDOMAIN: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$").ok()
});
static QUALIFIED_NAME_PART: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$").ok());
static LABEL_VALUE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$").ok());

fn matches(re: &LazyLock<Option<Regex>>, s: &str) -> bool {
    re.as_ref().is_some_and(|r| r.is_match(s))
}

/// An Invalid field error with kube's `Invalid value: "v": detail` shape.
pub fn invalid(field: &str, value: &str, detail: &str) -> FieldError {
    FieldError {
        field: field.to_string(),
        kind: FieldErrorKind::Invalid,
        detail: format!(
            "Invalid value: {}: {detail}",
            Value::String(value.to_string())
        ),
    }
}

/// A Required field error.
pub fn required(field: &str, detail: &str) -> FieldError {
    FieldError {
        field: field.to_string(),
        kind: FieldErrorKind::Required,
        detail: if detail.is_empty() {
            "Required value".to_string()
        } else {
            format!("Required value: {detail}")
        },
    }
}

/// A Forbidden field error.
pub fn forbidden(field: &str, detail: &str) -> FieldError {
    FieldError {
        field: field.to_string(),
        kind: FieldErrorKind::Forbidden,
        detail: format!("Forbidden: {detail}"),
    }
}

const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric \
     characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or \
     '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case \
     alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. \
     'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must \
     start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex \
     used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric \
     characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. \
     'MyValue',  or 'my_value',  or '12345', regex used for validation is \
     '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/// Every problem with `name` as a DNS-1123 label (namespaces), in kube-apiserver's words and
/// order (`IsDNS1123Label`): the length, then the pattern.
pub fn dns1123_label_problems(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    if name.len() > 63 {
        out.push("must be no more than 63 characters".into());
    }
    if !matches(&DNS1123_LABEL, name) {
        out.push(DNS1123_LABEL_MSG.into());
    }
    out
}

/// The first problem with `name` as a DNS-1123 label, or `None`.
pub fn dns1123_label_problem(name: &str) -> Option<String> {
    dns1123_label_problems(name).into_iter().next()
}

/// Every problem with `name` as a DNS-1123 subdomain (most kinds): the length, then the pattern.
pub fn dns1123_subdomain_problems(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    if name.len() > 253 {
        out.push("must be no more than 253 characters".into());
    }
    if !matches(&DNS1123_SUBDOMAIN, name) {
        out.push(DNS1123_SUBDOMAIN_MSG.into());
    }
    out
}

/// The first problem with `name` as a DNS-1123 subdomain, or `None`.
pub fn dns1123_subdomain_problem(name: &str) -> Option<String> {
    dns1123_subdomain_problems(name).into_iter().next()
}

/// Problems with a path-segment name (RBAC kinds): not `.` or `..`, no `/` or `%`
/// (`IsValidPathSegmentName`; a `generateName` prefix is only checked for the characters).
pub fn path_segment_problems(name: &str, prefix: bool) -> Vec<String> {
    if !prefix && (name == "." || name == "..") {
        return vec![format!("may not be '{name}'")];
    }
    ["/", "%"]
        .iter()
        .filter(|bad| name.contains(**bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

/// The first problem with a path-segment name, or `None`.
pub fn path_segment_problem(name: &str) -> Option<String> {
    path_segment_problems(name, false).into_iter().next()
}

/// Every problem with a qualified name (label and annotation keys, finalizers):
/// `[prefix/]name`, worded as kube-apiserver v1.36 words them (limits in bytes).
pub fn qualified_name_problems(key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                out.push("prefix part must be non-empty".into());
            } else {
                if prefix.len() > 253 {
                    out.push("prefix part must be no more than 253 bytes".into());
                }
                if !matches(&DNS1123_SUBDOMAIN, prefix) {
                    out.push(format!("prefix part {DNS1123_SUBDOMAIN_MSG}"));
                }
            }
            *name
        }
        _ => {
            return vec![format!(
                "a valid label key {QUALIFIED_NAME_MSG} with an optional DNS subdomain prefix and \
                 '/' (e.g. 'example.com/MyName')"
            )];
        }
    };
    if name.is_empty() {
        out.push("name part must be non-empty".into());
    } else if name.len() > 63 {
        out.push("name part must be no more than 63 bytes".into());
    }
    if !matches(&QUALIFIED_NAME_PART, name) {
        out.push(format!("name part {QUALIFIED_NAME_MSG}"));
    }
    out
}

/// The first problem with a qualified name, or `None`.
pub fn qualified_name_problem(key: &str) -> Option<String> {
    qualified_name_problems(key).into_iter().next()
}

/// Every problem with a label value: the length (in bytes), then the pattern.
pub fn label_value_problems(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    if value.len() > 63 {
        out.push("must be no more than 63 bytes".into());
    }
    if !matches(&LABEL_VALUE, value) {
        out.push(LABEL_VALUE_MSG.into());
    }
    out
}

/// The first problem with a label value, or `None`.
pub fn label_value_problem(value: &str) -> Option<String> {
    label_value_problems(value).into_iter().next()
}

/// How a kind's names are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// Namespaces.
    Dns1123Label,
    /// Most kinds.
    Dns1123Subdomain,
    /// RBAC kinds and a few others accept any path segment.
    PathSegment,
}

/// kube's `maskTrailingDash`: a `generateName` may end in `-`; it masks the last two
/// characters with one `a` (sic) before checking the prefix as a name.
fn mask_trailing_dash(name: &str) -> String {
    if name.len() > 1
        && name.ends_with('-')
        && let Some((cut, _)) = name.char_indices().rev().nth(1)
    {
        return format!("{}a", &name[..cut]);
    }
    name.to_string()
}

fn name_problems(name: &str, rule: NameRule, prefix: bool) -> Vec<String> {
    match rule {
        NameRule::Dns1123Label => dns1123_label_problems(&if prefix {
            mask_trailing_dash(name)
        } else {
            name.to_string()
        }),
        NameRule::Dns1123Subdomain => dns1123_subdomain_problems(&if prefix {
            mask_trailing_dash(name)
        } else {
            name.to_string()
        }),
        NameRule::PathSegment => path_segment_problems(name, prefix),
    }
}

/// Validates `metadata` of an object about to be stored; `name` is the final name. Errors come
/// in kube-apiserver's order and with its fields: `generateName`, `name`, then labels, annotations,
/// owner references and finalizers; label and annotation errors are reported at
/// `metadata.labels` / `metadata.annotations` (not per key), with the key or value as the value.
/// `builtin` kinds (not custom resources) also refuse unqualified finalizers other than
/// kube's standard ones, as `pkg/apis/core/validation` does.
pub fn validate_object_meta(object: &Value, rule: NameRule, builtin: bool) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let meta = object.get("metadata").cloned().unwrap_or(Value::Null);
    if let Some(prefix) = meta
        .get("generateName")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        for p in name_problems(prefix, rule, true) {
            errors.push(invalid("metadata.generateName", prefix, &p));
        }
    }
    let name = meta.get("name").and_then(Value::as_str).unwrap_or("");
    if name.is_empty() {
        errors.push(required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        for p in name_problems(name, rule, false) {
            errors.push(invalid("metadata.name", name, &p));
        }
    }
    if let Some(labels) = meta.get("labels").and_then(Value::as_object) {
        for (k, v) in labels {
            for p in qualified_name_problems(k) {
                errors.push(invalid("metadata.labels", k, &p));
            }
            match v.as_str() {
                Some(s) => {
                    for p in label_value_problems(s) {
                        errors.push(invalid("metadata.labels", s, &p));
                    }
                }
                None => errors.push(invalid(
                    "metadata.labels",
                    &v.to_string(),
                    "must be a string",
                )),
            }
        }
    }
    if let Some(annotations) = meta.get("annotations").and_then(Value::as_object) {
        let mut total = 0usize;
        for (k, v) in annotations {
            for p in qualified_name_problems(&k.to_ascii_lowercase()) {
                errors.push(invalid("metadata.annotations", k, &p));
            }
            total += k.len() + v.as_str().map_or(0, str::len);
        }
        if total > 256 * 1024 {
            errors.push(FieldError {
                field: "metadata.annotations".into(),
                kind: FieldErrorKind::TooLong,
                detail: "Too long: may not be more than 262144 bytes".into(),
            });
        }
    }
    if let Some(refs) = meta.get("ownerReferences").and_then(Value::as_array) {
        let mut controllers = 0;
        for (i, r) in refs.iter().enumerate() {
            for field in ["apiVersion", "kind", "name", "uid"] {
                if r.get(field)
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
                {
                    errors.push(invalid(
                        &format!("metadata.ownerReferences[{i}].{field}"),
                        "",
                        &format!("{field} must not be empty"),
                    ));
                }
            }
            if r.get("controller").and_then(Value::as_bool) == Some(true) {
                controllers += 1;
            }
        }
        if controllers > 1 {
            errors.push(invalid(
                "metadata.ownerReferences",
                "",
                "Only one reference can have Controller set to true",
            ));
        }
    }
    if let Some(finalizers) = meta.get("finalizers").and_then(Value::as_array) {
        let names: Vec<&str> = finalizers
            .iter()
            .map(|f| f.as_str().unwrap_or(""))
            .collect();
        for s in &names {
            for p in qualified_name_problems(s) {
                errors.push(invalid("metadata.finalizers", s, &p));
            }
        }
        if builtin {
            for (i, s) in names.iter().enumerate() {
                if !s.contains('/') && !STANDARD_FINALIZERS.contains(s) {
                    errors.push(invalid(
                        &format!("metadata.finalizers[{i}]"),
                        s,
                        "name is neither a standard finalizer name nor is it fully qualified",
                    ));
                }
            }
        }
    }
    errors
}

/// Finalizers kube-apiserver itself knows without a domain prefix.
pub const STANDARD_FINALIZERS: &[&str] = &["kubernetes", "orphan", "foregroundDeletion"];

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_follow_dns_rules() {
        assert!(dns1123_label_problem("team-a").is_none());
        assert!(dns1123_label_problem("Team-A").is_some());
        assert!(dns1123_label_problem(&"a".repeat(64)).is_some());
        assert!(dns1123_subdomain_problem("a.b-c").is_none());
        assert!(dns1123_subdomain_problem("-a").is_some());
    }

    #[test]
    fn label_keys_and_values() {
        assert!(qualified_name_problem("app.kubernetes.io/name").is_none());
        assert!(qualified_name_problem("/name").is_some());
        assert!(qualified_name_problem("bad key").is_some());
        assert!(label_value_problem("").is_none());
        assert!(label_value_problem("True").is_none());
        assert!(label_value_problem("-x").is_some());
    }

    #[test]
    fn meta_validation_reports_fields() {
        let obj = json!({"metadata": {"name": "Bad_Name", "labels": {"ok": "-bad"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "n"}]}});
        let errors = validate_object_meta(&obj, NameRule::Dns1123Subdomain, true);
        let fields: Vec<_> = errors.iter().map(|e| e.field.as_str()).collect();
        assert!(fields.contains(&"metadata.name"));
        assert!(fields.contains(&"metadata.labels"));
        assert!(fields.contains(&"metadata.ownerReferences[0].uid"));
        let missing = validate_object_meta(&json!({"metadata": {}}), NameRule::Dns1123Label, true);
        assert_eq!(missing[0].kind, FieldErrorKind::Required);
    }
}
