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

/// Problems with `name` as a DNS-1123 label (namespaces), or `None`.
pub fn dns1123_label_problem(name: &str) -> Option<String> {
    if name.len() > 63 {
        return Some("must be no more than 63 characters".into());
    }
    if !matches(&DNS1123_LABEL, name) {
        return Some(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', \
             and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', \
             regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
                .into(),
        );
    }
    None
}

/// Problems with `name` as a DNS-1123 subdomain (most kinds), or `None`.
pub fn dns1123_subdomain_problem(name: &str) -> Option<String> {
    if name.len() > 253 {
        return Some("must be no more than 253 characters".into());
    }
    if !matches(&DNS1123_SUBDOMAIN, name) {
        return Some(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' \
             or '.', and must start and end with an alphanumeric character (e.g. 'example.com', \
             regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
                .into(),
        );
    }
    None
}

/// Problems with a path-segment name (every kind): no `/`, `%`, `.` or `..`.
pub fn path_segment_problem(name: &str) -> Option<String> {
    if name == "." || name == ".." {
        return Some(format!("may not be '{name}'"));
    }
    for bad in ["/", "%"] {
        if name.contains(bad) {
            return Some(format!("may not contain '{bad}'"));
        }
    }
    None
}

/// Problems with a qualified name (label keys, finalizers): `[prefix/]name`.
pub fn qualified_name_problem(key: &str) -> Option<String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix {
        if p.is_empty() {
            return Some("prefix part must be non-empty".into());
        }
        if let Some(problem) = dns1123_subdomain_problem(p) {
            return Some(format!("prefix part {problem}"));
        }
    }
    if name.is_empty() {
        return Some("name part must be non-empty".into());
    }
    if name.len() > 63 {
        return Some("name part must be no more than 63 characters".into());
    }
    if !matches(&QUALIFIED_NAME_PART, name) {
        return Some(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and \
             end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex \
             used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
                .into(),
        );
    }
    None
}

/// Problems with a label value, or `None`.
pub fn label_value_problem(value: &str) -> Option<String> {
    if value.len() > 63 {
        return Some("must be no more than 63 characters".into());
    }
    if !matches(&LABEL_VALUE, value) {
        return Some(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' \
             or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or \
             'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
                .into(),
        );
    }
    None
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

/// Validates `metadata` of an object about to be stored; `name` is the final name.
pub fn validate_object_meta(object: &Value, rule: NameRule) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let meta = object.get("metadata").cloned().unwrap_or(Value::Null);
    let name = meta.get("name").and_then(Value::as_str).unwrap_or("");
    if name.is_empty() {
        errors.push(required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        let problem = path_segment_problem(name).or_else(|| match rule {
            NameRule::Dns1123Label => dns1123_label_problem(name),
            NameRule::Dns1123Subdomain => dns1123_subdomain_problem(name),
            NameRule::PathSegment => None,
        });
        if let Some(p) = problem {
            errors.push(invalid("metadata.name", name, &p));
        }
    }
    if let Some(labels) = meta.get("labels").and_then(Value::as_object) {
        for (k, v) in labels {
            if let Some(p) = qualified_name_problem(k) {
                errors.push(invalid("metadata.labels", k, &p));
            }
            match v.as_str() {
                Some(s) => {
                    if let Some(p) = label_value_problem(s) {
                        errors.push(invalid(&format!("metadata.labels[{k}]"), s, &p));
                    }
                }
                None => errors.push(invalid(
                    &format!("metadata.labels[{k}]"),
                    &v.to_string(),
                    "must be a string",
                )),
            }
        }
    }
    if let Some(annotations) = meta.get("annotations").and_then(Value::as_object) {
        let mut total = 0usize;
        for (k, v) in annotations {
            if let Some(p) = qualified_name_problem(&k.to_ascii_lowercase()) {
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
    if let Some(finalizers) = meta.get("finalizers").and_then(Value::as_array) {
        for (i, f) in finalizers.iter().enumerate() {
            let s = f.as_str().unwrap_or("");
            if let Some(p) = qualified_name_problem(s) {
                errors.push(invalid(&format!("metadata.finalizers[{i}]"), s, &p));
            } else if !s.contains('/') && !STANDARD_FINALIZERS.contains(&s) {
                // kube-apiserver only warns on unprefixed finalizers; accepted here too.
            }
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
        let errors = validate_object_meta(&obj, NameRule::Dns1123Subdomain);
        let fields: Vec<_> = errors.iter().map(|e| e.field.as_str()).collect();
        assert!(fields.contains(&"metadata.name"));
        assert!(fields.contains(&"metadata.labels[ok]"));
        assert!(fields.contains(&"metadata.ownerReferences[0].uid"));
        let missing = validate_object_meta(&json!({"metadata": {}}), NameRule::Dns1123Label);
        assert_eq!(missing[0].kind, FieldErrorKind::Required);
    }
}
