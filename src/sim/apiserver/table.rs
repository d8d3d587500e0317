//! Server-side printing: converts objects to `meta.k8s.io/v1` Tables (what `kubectl get` asks
//! for), with CRD printer columns and kube's human-readable ages. Pure.
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::registry::ResourceInfo;

/// How much of each object a Table row carries (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    None,
    #[default]
    Metadata,
    Object,
}

impl IncludeObject {
    /// Parses the `includeObject` query value.
    pub fn parse(value: Option<&str>) -> Self {
        match value {
            Some("None") => IncludeObject::None,
            Some("Object") => IncludeObject::Object,
            _ => IncludeObject::Metadata,
        }
    }
}

/// Whether an Accept header asks for a Table.
pub fn wants_table(accept: &str) -> bool {
    accept
        .split(',')
        .next()
        .is_some_and(|first| first.contains("as=Table") && first.contains("g=meta.k8s.io"))
}

struct Column {
    name: String,
    kind: String,
    format: String,
    description: String,
    priority: i32,
    path: Option<String>,
}

/// kube-apiserver's Event columns (`kubectl get events`): LAST SEEN, TYPE, REASON, OBJECT,
/// MESSAGE, and the wide ones.
fn event_columns() -> Vec<Column> {
    [
        ("Last Seen", "date", ".lastTimestamp", 0),
        ("Type", "string", ".type", 0),
        ("Reason", "string", ".reason", 0),
        ("Object", "string", "involvedobject()", 0),
        ("Subobject", "string", ".involvedObject.fieldPath", 1),
        ("Source", "string", ".source.component", 1),
        ("Message", "string", ".message", 0),
        ("First Seen", "date", ".firstTimestamp", 1),
        ("Count", "integer", ".count", 1),
        ("Name", "string", ".metadata.name", 1),
    ]
    .into_iter()
    .map(|(name, kind, path, priority)| Column {
        name: name.into(),
        kind: kind.into(),
        format: if name == "Name" {
            "name".into()
        } else {
            String::new()
        },
        description: String::new(),
        priority,
        path: Some(path.into()),
    })
    .collect()
}

fn columns(info: &ResourceInfo, version: &str) -> Vec<Column> {
    if info.group.is_empty() && info.plural == "events" {
        return event_columns();
    }
    let mut cols = vec![Column {
        name: "Name".into(),
        kind: "string".into(),
        format: "name".into(),
        description: "Name must be unique within a namespace.".into(),
        priority: 0,
        path: Some(".metadata.name".into()),
    }];
    let custom = info
        .printer_columns
        .get(version)
        .cloned()
        .unwrap_or_default();
    if info.is_custom && !custom.is_empty() {
        for c in custom {
            cols.push(Column {
                name: c.name,
                kind: c.type_,
                format: c.format.unwrap_or_default(),
                description: c.description.unwrap_or_default(),
                priority: c.priority.unwrap_or(0),
                path: Some(c.json_path),
            });
        }
        return cols;
    }
    let extra: &[(&str, &str, &str)] = match (info.group.as_str(), info.plural.as_str()) {
        ("", "namespaces") => &[("Status", "string", ".status.phase")],
        ("", "secrets") => &[
            ("Type", "string", ".type"),
            ("Data", "integer", "count(.data)"),
        ],
        ("", "configmaps") => &[("Data", "integer", "count(.data)")],
        ("", "serviceaccounts") => &[("Secrets", "integer", "count(.secrets)")],
        ("rbac.authorization.k8s.io", "roles" | "clusterroles") => {
            &[("Created At", "string", ".metadata.creationTimestamp")]
        }
        ("rbac.authorization.k8s.io", "rolebindings" | "clusterrolebindings") => {
            &[("Role", "string", "roleref()")]
        }
        ("", "persistentvolumeclaims") => &[("Status", "string", ".status.phase")],
        ("coordination.k8s.io", "leases") => &[("Holder", "string", ".spec.holderIdentity")],
        _ => &[],
    };
    for (name, kind, path) in extra {
        cols.push(Column {
            name: (*name).into(),
            kind: (*kind).into(),
            format: String::new(),
            description: String::new(),
            priority: 0,
            path: Some((*path).into()),
        });
    }
    if info.group == "rbac.authorization.k8s.io"
        && matches!(info.plural.as_str(), "roles" | "clusterroles")
    {
        return cols;
    }
    cols.push(Column {
        name: "Age".into(),
        kind: "date".into(),
        format: String::new(),
        description: "CreationTimestamp is a timestamp representing the server time when this object was created."
            .into(),
        priority: 0,
        path: Some(".metadata.creationTimestamp".into()),
    });
    if info.group == "rbac.authorization.k8s.io"
        && matches!(info.plural.as_str(), "rolebindings" | "clusterrolebindings")
    {
        for (name, kind) in [
            ("Users", "User"),
            ("Groups", "Group"),
            ("ServiceAccounts", "ServiceAccount"),
        ] {
            cols.push(Column {
                name: name.into(),
                kind: "string".into(),
                format: String::new(),
                description: String::new(),
                priority: 1,
                path: Some(format!("subjects({kind})")),
            });
        }
    }
    cols
}

/// Columns kube computes rather than reads: a binding's role, its subjects of one kind.
fn computed_cell(path: &str, object: &Value) -> Option<Value> {
    if path == "involvedobject()" {
        let kind = object
            .pointer("/involvedObject/kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_lowercase();
        let name = object
            .pointer("/involvedObject/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        return Some(json!(format!("{kind}/{name}")));
    }
    if path == "roleref()" {
        let kind = object
            .pointer("/roleRef/kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let name = object
            .pointer("/roleRef/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        return Some(json!(format!("{kind}/{name}")));
    }
    let kind = path.strip_prefix("subjects(")?.strip_suffix(')')?;
    let names: Vec<String> = object
        .get("subjects")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|s| s.get("kind").and_then(Value::as_str) == Some(kind))
        .map(|s| {
            let name = s.get("name").and_then(Value::as_str).unwrap_or_default();
            match s
                .get("namespace")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty() && kind == "ServiceAccount")
            {
                Some(ns) => format!("{ns}/{name}"),
                None => name.to_string(),
            }
        })
        .collect();
    Some(json!(names.join(", ")))
}

/// Evaluates the JSONPath forms printer columns use (`.a.b`, `.a[0].b`, `.a['x.y']`, and the
/// filter `.a[?(@.type=="Ready")].b` condition columns use). A filter takes the first element
/// that matches and resolves the rest of the path, as kube-apiserver's table convertor shows
/// the first result.
pub fn simple_json_path<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    let rest = path
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .trim_start_matches('$');
    resolve_path(object, rest)
}

fn resolve_path<'a>(mut current: &'a Value, mut rest: &str) -> Option<&'a Value> {
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let key = &r[..end];
            if !key.is_empty() {
                current = current.get(key)?;
            }
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix("[?(") {
            let end = r.find(")]")?;
            let (field, wanted) = r[..end].split_once("==")?;
            let field = field.trim().strip_prefix('@')?;
            let wanted = wanted.trim().trim_matches(|c| c == '\'' || c == '"');
            let after = &r[end + 2..];
            return current.as_array()?.iter().find_map(|element| {
                let value = resolve_path(element, field)?;
                let text = match value {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                (text == wanted)
                    .then(|| resolve_path(element, after))
                    .flatten()
            });
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            let inner = r[..end].trim_matches(|c| c == '\'' || c == '"');
            current = match inner.parse::<usize>() {
                Ok(i) => current.get(i)?,
                Err(_) => current.get(inner)?,
            };
            rest = &r[end + 1..];
        } else {
            return None;
        }
    }
    Some(current)
}

/// kube's `duration.HumanDuration` formatting of an age.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    let minutes = seconds / 60;
    let hours = minutes / 60;
    let days = hours / 24;
    let years = days / 365;
    if seconds < 60 * 2 {
        format!("{seconds}s")
    } else if minutes < 10 {
        let s = seconds % 60;
        if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        }
    } else if minutes < 60 * 3 {
        format!("{minutes}m")
    } else if hours < 8 {
        let m = minutes % 60;
        if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        }
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        let h = hours % 24;
        if h == 0 {
            format!("{days}d")
        } else {
            format!("{days}d{h}h")
        }
    } else if hours < 24 * 365 * 2 {
        format!("{days}d")
    } else if hours < 24 * 365 * 8 {
        let d = days % 365;
        if d == 0 {
            format!("{years}y")
        } else {
            format!("{years}y{d}d")
        }
    } else {
        format!("{years}y")
    }
}

fn cell(value: Option<&Value>, kind: &str, now: DateTime<Utc>) -> Value {
    let Some(v) = value else { return Value::Null };
    if kind == "date" {
        return match v
            .as_str()
            .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        {
            Some(t) => json!(human_duration((now - t.with_timezone(&Utc)).num_seconds())),
            None => Value::Null,
        };
    }
    match v {
        Value::String(_) | Value::Number(_) | Value::Bool(_) => v.clone(),
        Value::Null => Value::Null,
        other => json!(other.to_string()),
    }
}

fn row(
    info: &ResourceInfo,
    cols: &[Column],
    object: &Value,
    include: IncludeObject,
    now: DateTime<Utc>,
) -> Value {
    let cells: Vec<Value> = cols
        .iter()
        .map(|c| {
            if let Some(v) = c.path.as_deref().and_then(|p| computed_cell(p, object)) {
                return v;
            }
            if let Some(inner) = c
                .path
                .as_deref()
                .and_then(|p| p.strip_prefix("count("))
                .and_then(|p| p.strip_suffix(')'))
            {
                // Columns like kubectl's DATA count the entries of a map or list.
                return json!(simple_json_path(object, inner).map_or(0, |v| match v {
                    Value::Object(m) => m.len(),
                    Value::Array(a) => a.len(),
                    _ => 0,
                }));
            }
            cell(
                c.path.as_deref().and_then(|p| simple_json_path(object, p)),
                &c.kind,
                now,
            )
        })
        .collect();
    let mut r = json!({"cells": cells});
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => {
            r["object"] = json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": object.get("metadata").cloned().unwrap_or(json!({})),
            });
        }
        IncludeObject::Object => r["object"] = object.clone(),
    }
    let _ = info;
    r
}

/// A Table of `objects` with the list's resourceVersion (and continue token, if any).
pub fn to_table(
    info: &ResourceInfo,
    version: &str,
    objects: &[Value],
    list_metadata: Value,
    include: IncludeObject,
) -> Value {
    let cols = columns(info, version);
    let now = Utc::now();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_metadata,
        "columnDefinitions": cols.iter().map(|c| json!({
            "name": c.name, "type": c.kind, "format": c.format,
            "description": c.description, "priority": c.priority,
        })).collect::<Vec<_>>(),
        "rows": objects.iter().map(|o| row(info, &cols, o, include, now)).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn human_durations_match_kube() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(119), "119s");
        assert_eq!(human_duration(150), "2m30s");
        assert_eq!(human_duration(600), "10m");
        assert_eq!(human_duration(3 * 3600 + 120), "3h2m");
        assert_eq!(human_duration(30 * 3600), "30h");
        assert_eq!(human_duration(3 * 86400 + 3600), "3d1h");
        assert_eq!(human_duration(100 * 86400), "100d");
        assert_eq!(human_duration(3 * 365 * 86400), "3y");
    }

    #[test]
    fn events_list_like_kubectl_get_events() {
        let cols = event_columns();
        let shown: Vec<&str> = cols
            .iter()
            .filter(|c| c.priority == 0)
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(shown, ["Last Seen", "Type", "Reason", "Object", "Message"]);
        let event = json!({"involvedObject": {"kind": "NonAdminBackup", "name": "b1"}});
        assert_eq!(
            computed_cell("involvedobject()", &event),
            Some(json!("nonadminbackup/b1"))
        );
    }

    #[test]
    fn json_paths() {
        let o = json!({"status": {"veleroBackup": {"status": {"phase": "Completed"}}, "items": [{"a": 1}]},
                       "metadata": {"labels": {"x.y/z": "v"}}});
        assert_eq!(
            simple_json_path(&o, ".status.veleroBackup.status.phase"),
            Some(&json!("Completed"))
        );
        assert_eq!(simple_json_path(&o, ".status.items[0].a"), Some(&json!(1)));
        assert_eq!(
            simple_json_path(&o, ".metadata.labels['x.y/z']"),
            Some(&json!("v"))
        );
        assert_eq!(simple_json_path(&o, ".status.missing"), None);
        let conditions = json!({"status": {"conditions": [
            {"type": "Available", "status": "False"},
            {"type": "Valid", "status": "True", "observedGeneration": 2},
        ]}});
        assert_eq!(
            simple_json_path(
                &conditions,
                r#".status.conditions[?(@.type=="Valid")].status"#
            ),
            Some(&json!("True"))
        );
        assert_eq!(
            simple_json_path(
                &conditions,
                ".status.conditions[?(@.type=='Available')].status"
            ),
            Some(&json!("False"))
        );
        assert_eq!(
            simple_json_path(
                &conditions,
                ".status.conditions[?(@.observedGeneration==2)].type"
            ),
            Some(&json!("Valid"))
        );
        assert_eq!(
            simple_json_path(&conditions, ".status.conditions[?(@.type=='Ready')].status"),
            None
        );
    }

    #[test]
    fn table_accept_detection() {
        assert!(wants_table(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
        ));
        assert!(!wants_table("application/json"));
    }
}
