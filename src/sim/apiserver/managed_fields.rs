//! `metadata.managedFields` as kube-apiserver records them for `Update` operations (create,
//! update, patch; the emulator serves no server-side apply): one entry per (manager,
//! operation, apiVersion, subresource), its `fieldsV1` the set of fields that manager last
//! added or changed, taken away from every other manager, and fields a write removes taken away
//! from everyone (structured-merge-diff's `Updater.Update` behind kube's field manager chain).
//!
//! Faithful: the manager (the `fieldManager` parameter, else the User-Agent up to its first `/`,
//! else `unknown`), operation, apiVersion, `subresource: status`, the time (bumped only when the
//! write changed that manager's fields), the entry order, the stripped metadata fields, `[{}]`
//! clearing the list, a request's own valid entries replacing the live ones, and no tracking
//! on updates of an object that has no entries (`skipNonApplied`).
//!
//! Approximated: kube walks the typed object. Here the JSON is walked with list semantics from
//! the CRD schema (`x-kubernetes-list-type`/`-list-map-keys`/`-map-type`) for custom resources
//! and from a table of the common associative lists for built-in kinds (containers, env,
//! ports, volumes, conditions, finalizers, owner references...); every other list is atomic. A
//! struct the typed object always carries (a built-in's `spec`, `status`, `template`,
//! `metadata`, `containers`) never gets a `.` entry itself; other value structs of built-in
//! kinds (a Deployment's `strategy`, a container's `resources`) would, where kube's do not.
//! Built-in defaulting is not emulated, so defaulted fields (and list keys such as a port's
//! `protocol`) kube would record are missing. The cap of 10 update managers
//! (`ancient-changes`) is not applied.
use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use serde_json::{Map, Value, json};

use super::registry::ResourceInfo;

/// kube's `FieldManagerMaxLength`.
pub const FIELD_MANAGER_MAX_LENGTH: usize = 128;

/// A set of field paths (structured-merge-diff's `fieldpath.Set`), keyed by the path elements
/// kube serializes: `f:<name>`, `k:<json of key fields>`, `v:<json value>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    member: bool,
    children: BTreeMap<String, FieldSet>,
}

impl FieldSet {
    fn insert(&mut self, path: &[String]) {
        match path.split_first() {
            None => self.member = true,
            Some((head, tail)) => self.children.entry(head.clone()).or_default().insert(tail),
        }
    }

    /// True when no path is a member.
    pub fn is_empty(&self) -> bool {
        !self.member && self.children.values().all(FieldSet::is_empty)
    }

    fn union(&mut self, other: &FieldSet) {
        self.member |= other.member;
        for (k, c) in &other.children {
            self.children.entry(k.clone()).or_default().union(c);
        }
    }

    fn difference(&mut self, other: &FieldSet) {
        if other.member {
            self.member = false;
        }
        for (k, c) in &other.children {
            if let Some(mine) = self.children.get_mut(k) {
                mine.difference(c);
            }
        }
        self.children.retain(|_, c| !c.is_empty());
    }

    /// The `fieldsV1` encoding: `.` marks a member that also has members below it.
    pub fn to_fields_v1(&self) -> Value {
        let mut m = Map::new();
        if self.member && self.children.values().any(|c| !c.is_empty()) {
            m.insert(".".into(), json!({}));
        }
        for (k, c) in &self.children {
            if !c.is_empty() {
                m.insert(k.clone(), c.to_fields_v1());
            }
        }
        Value::Object(m)
    }

    /// Decodes a `fieldsV1` object (the root is never a member itself).
    pub fn from_fields_v1(v: &Value) -> Option<FieldSet> {
        let mut root = Self::decode_node(v)?;
        root.member = false;
        Some(root)
    }

    fn decode_node(v: &Value) -> Option<FieldSet> {
        let m = v.as_object()?;
        let mut s = FieldSet {
            member: m.is_empty(),
            children: BTreeMap::new(),
        };
        for (k, c) in m {
            if k == "." {
                s.member = true;
            } else {
                s.children.insert(k.clone(), Self::decode_node(c)?);
            }
        }
        Some(s)
    }
}

/// How a list merges (its members' identities in the field set).
#[derive(Debug, Clone, PartialEq, Eq)]
enum ListKind {
    Atomic,
    Set,
    Map(Vec<String>),
}

/// The schema context of a node while walking an object.
#[derive(Clone, Copy)]
struct Shape<'a> {
    schema: Option<&'a JSONSchemaProps>,
    builtin: bool,
}

fn child_schema<'a>(s: Option<&'a JSONSchemaProps>, key: &str) -> Option<&'a JSONSchemaProps> {
    let s = s?;
    if let Some(p) = s.properties.as_ref().and_then(|p| p.get(key)) {
        return Some(p);
    }
    match &s.additional_properties {
        Some(JSONSchemaPropsOrBool::Schema(a)) => Some(a),
        _ => None,
    }
}

fn item_schema(s: Option<&JSONSchemaProps>) -> Option<&JSONSchemaProps> {
    match &s?.items {
        Some(JSONSchemaPropsOrArray::Schema(i)) => Some(i),
        _ => None,
    }
}

/// The merge semantics of the list at `names` (field names from the root; `[]` for items).
fn list_kind(shape: Shape<'_>, names: &[String]) -> ListKind {
    let strs: Vec<&str> = names.iter().map(String::as_str).collect();
    match strs.as_slice() {
        ["metadata", "finalizers"] => return ListKind::Set,
        ["metadata", "ownerReferences"] => return ListKind::Map(vec!["uid".into()]),
        _ => {}
    }
    if let Some(s) = shape.schema {
        return match s.x_kubernetes_list_type.as_deref() {
            Some("set") => ListKind::Set,
            Some("map") => ListKind::Map(s.x_kubernetes_list_map_keys.clone().unwrap_or_default()),
            _ => ListKind::Atomic,
        };
    }
    if !shape.builtin {
        return ListKind::Atomic;
    }
    let keys = |k: &[&str]| ListKind::Map(k.iter().map(|s| s.to_string()).collect());
    match strs.as_slice() {
        [
            ..,
            "containers" | "initContainers" | "ephemeralContainers",
            "[]",
            "ports",
        ] => keys(&["containerPort", "protocol"]),
        ["spec", "ports"] => keys(&["port", "protocol"]),
        [
            ..,
            "containers"
            | "initContainers"
            | "ephemeralContainers"
            | "env"
            | "volumes"
            | "imagePullSecrets",
        ] => keys(&["name"]),
        ["secrets"] => keys(&["name"]),
        [.., "volumeMounts"] => keys(&["mountPath"]),
        [.., "conditions"] => keys(&["type"]),
        _ => ListKind::Atomic,
    }
}

/// Maps kube treats as one value (`+mapType=atomic` / `+structType=atomic`).
fn atomic_map(shape: Shape<'_>, names: &[String]) -> bool {
    if names.len() == 3 && names[0] == "metadata" && names[1] == "ownerReferences" {
        // `OwnerReference` is `+structType=atomic`.
        return true;
    }
    if let Some(s) = shape.schema {
        return s.x_kubernetes_map_type.as_deref() == Some("atomic");
    }
    shape.builtin && names.last().is_some_and(|n| n == "selector")
}

#[derive(Default)]
struct Comparison {
    added: FieldSet,
    modified: FieldSet,
    removed: FieldSet,
}

struct Walker<'a> {
    info: &'a ResourceInfo,
    out: Comparison,
}

fn is_empty_container(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    }
}

fn list_item_id(kind: &ListKind, item: &Value) -> Option<String> {
    match kind {
        ListKind::Set => Some(format!("v:{item}")),
        ListKind::Map(keys) => {
            let mut id = BTreeMap::new();
            for k in keys {
                if let Some(v) = item.get(k) {
                    id.insert(k.clone(), v.clone());
                }
            }
            (!id.is_empty()).then(|| format!("k:{}", json!(id)))
        }
        ListKind::Atomic => None,
    }
}

impl Walker<'_> {
    fn leaf(&mut self, l: Option<&Value>, r: Option<&Value>, path: &[String]) {
        match (l, r) {
            (None, Some(_)) => self.out.added.insert(path),
            (Some(_), None) => self.out.removed.insert(path),
            (Some(a), Some(b)) if a != b => self.out.modified.insert(path),
            _ => {}
        }
    }

    fn compare(
        &mut self,
        l: Option<&Value>,
        r: Option<&Value>,
        path: &mut Vec<String>,
        names: &mut Vec<String>,
        shape: Shape<'_>,
    ) {
        let obj = |v: Option<&Value>| matches!(v, None | Some(Value::Null | Value::Object(_)));
        let arr = |v: Option<&Value>| matches!(v, None | Some(Value::Null | Value::Array(_)));
        let both_empty = is_empty_container(l) && is_empty_container(r);
        let is_map = obj(l)
            && obj(r)
            && (l.is_some_and(Value::is_object) || r.is_some_and(Value::is_object));
        let is_list =
            arr(l) && arr(r) && (l.is_some_and(Value::is_array) || r.is_some_and(Value::is_array));
        let descended = if is_map && !both_empty && !atomic_map(shape, names) {
            self.compare_maps(l, r, path, names, shape);
            true
        } else if is_list && !both_empty {
            let kind = list_kind(shape, names);
            kind != ListKind::Atomic && self.compare_lists(&kind, l, r, path, names, shape)
        } else {
            false
        };
        // Value structs of built-in kinds exist (empty) in kube's typed objects, so they are
        // never added or removed themselves.
        let value_struct = shape.builtin
            && names.last().is_some_and(|n| {
                matches!(
                    n.as_str(),
                    "spec" | "status" | "template" | "metadata" | "containers"
                )
            });
        if descended && !value_struct {
            if l.is_none() {
                self.out.added.insert(path);
            } else if r.is_none() {
                self.out.removed.insert(path);
            }
        } else if !descended {
            self.leaf(l, r, path);
        }
    }

    fn compare_maps(
        &mut self,
        l: Option<&Value>,
        r: Option<&Value>,
        path: &mut Vec<String>,
        names: &mut Vec<String>,
        shape: Shape<'_>,
    ) {
        let empty = Map::new();
        let lm = l.and_then(Value::as_object).unwrap_or(&empty);
        let rm = r.and_then(Value::as_object).unwrap_or(&empty);
        let mut keys: Vec<&String> = lm.keys().collect();
        keys.extend(rm.keys().filter(|k| !lm.contains_key(*k)));
        for key in keys {
            path.push(format!("f:{key}"));
            names.push(key.clone());
            let child = Shape {
                schema: child_schema(shape.schema, key),
                builtin: shape.builtin,
            };
            self.compare(lm.get(key), rm.get(key), path, names, child);
            names.pop();
            path.pop();
        }
    }

    /// Compares keyed lists item by item; false (treat as atomic) when an item has no key.
    fn compare_lists(
        &mut self,
        kind: &ListKind,
        l: Option<&Value>,
        r: Option<&Value>,
        path: &mut Vec<String>,
        names: &mut Vec<String>,
        shape: Shape<'_>,
    ) -> bool {
        let index = |v: Option<&Value>| -> Option<Vec<(String, Value)>> {
            let mut out: Vec<(String, Value)> = Vec::new();
            for item in v
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[])
            {
                let id = list_item_id(kind, item)?;
                if !out.iter().any(|(k, _)| *k == id) {
                    out.push((id, item.clone()));
                }
            }
            Some(out)
        };
        let (Some(li), Some(ri)) = (index(l), index(r)) else {
            return false;
        };
        let mut ids: Vec<&String> = li.iter().map(|(k, _)| k).collect();
        ids.extend(
            ri.iter()
                .map(|(k, _)| k)
                .filter(|k| !li.iter().any(|(lk, _)| lk == *k)),
        );
        let item = Shape {
            schema: item_schema(shape.schema),
            builtin: shape.builtin,
        };
        for id in ids {
            let lv = li.iter().find(|(k, _)| k == id).map(|(_, v)| v);
            let rv = ri.iter().find(|(k, _)| k == id).map(|(_, v)| v);
            path.push(id.clone());
            names.push("[]".into());
            if *kind == ListKind::Set {
                self.leaf(lv, rv, path);
            } else {
                self.compare(lv, rv, path, names, item);
            }
            names.pop();
            path.pop();
        }
        true
    }
}

/// The object as the field manager sees it: identity and server-owned metadata stripped
/// (kube's `stripMeta`).
fn stripped(object: &Value) -> Value {
    let mut v = object.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("apiVersion");
        m.remove("kind");
    }
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in [
            "name",
            "namespace",
            "creationTimestamp",
            "selfLink",
            "uid",
            "generation",
            "managedFields",
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ] {
            meta.remove(f);
        }
    }
    v
}

/// One decoded entry.
#[derive(Debug, Clone)]
struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    subresource: String,
    time: Option<String>,
    fields: FieldSet,
}

impl Entry {
    fn decode(v: &Value) -> Option<Entry> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let operation = s("operation");
        if !matches!(operation.as_str(), "Apply" | "Update")
            || s("apiVersion").is_empty()
            || s("fieldsType") != "FieldsV1"
        {
            return None;
        }
        let fields = match v.get("fieldsV1") {
            None | Some(Value::Null) => FieldSet::default(),
            Some(f) => FieldSet::from_fields_v1(f)?,
        };
        Some(Entry {
            manager: s("manager"),
            operation,
            api_version: s("apiVersion"),
            subresource: s("subresource"),
            time: v.get("time").and_then(Value::as_str).map(str::to_string),
            fields,
        })
    }

    fn encode(&self) -> Value {
        let mut m = Map::new();
        m.insert("manager".into(), json!(self.manager));
        m.insert("operation".into(), json!(self.operation));
        m.insert("apiVersion".into(), json!(self.api_version));
        if let Some(t) = &self.time {
            m.insert("time".into(), json!(t));
        }
        m.insert("fieldsType".into(), json!("FieldsV1"));
        m.insert("fieldsV1".into(), self.fields.to_fields_v1());
        if !self.subresource.is_empty() {
            m.insert("subresource".into(), json!(self.subresource));
        }
        Value::Object(m)
    }

    fn same_manager(&self, other: &Entry) -> bool {
        self.manager == other.manager
            && self.operation == other.operation
            && self.subresource == other.subresource
            && (self.operation == "Apply" || self.api_version == other.api_version)
    }
}

/// Who is writing: the entry identity of one request.
#[derive(Debug, Clone)]
pub struct Writer {
    /// The resolved manager name ([`manager_name`]).
    pub manager: String,
    /// `group/version` of the request.
    pub api_version: String,
    /// `""` or `"status"`.
    pub subresource: String,
    /// RFC 3339 time of the write.
    pub time: String,
}

/// The manager of a request: `fieldManager`, else the User-Agent before its first `/`
/// (printable characters, at most 128 bytes), else `unknown`.
pub fn manager_name(field_manager: Option<&str>, user_agent: Option<&str>) -> String {
    if let Some(m) = field_manager.filter(|m| !m.is_empty()) {
        return m.to_string();
    }
    let mut out = String::new();
    for c in user_agent
        .unwrap_or("")
        .split('/')
        .next()
        .unwrap_or("")
        .chars()
    {
        if c.is_control() {
            continue;
        }
        if out.len() + c.len_utf8() > FIELD_MANAGER_MAX_LENGTH {
            break;
        }
        out.push(c);
    }
    if out.is_empty() {
        "unknown".into()
    } else {
        out
    }
}

/// The problem with a `fieldManager` parameter, as (cause reason kind, detail), or `None`.
pub fn field_manager_problem(m: &str) -> Option<(bool, String)> {
    if m.len() > FIELD_MANAGER_MAX_LENGTH {
        return Some((
            true,
            format!("may not be more than {FIELD_MANAGER_MAX_LENGTH} bytes"),
        ));
    }
    m.chars()
        .enumerate()
        .find(|(_, c)| c.is_control())
        .map(|(i, c)| {
            (
                false,
                format!("invalid character U+{:04X} (at position {i})", c as u32),
            )
        })
}

/// Go's `%q` of a string: the one implementation (`\a`, `\b`, `\f`, `\v` as Go writes them).
pub use crate::api::common::go_quote;

fn entries_of(v: Option<&Value>) -> Vec<Value> {
    v.and_then(|o| o.pointer("/metadata/managedFields"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Records an Update by `writer` that turns `old` (`None` on create) into `new`, whose
/// `metadata.managedFields` holds what the request sent (or nothing). `server_owned` lists
/// top-level fields the server sets on create and no manager owns (a Namespace's spec/status).
pub fn record_update(
    info: &ResourceInfo,
    schema: Option<&JSONSchemaProps>,
    old: Option<&Value>,
    new: &mut Value,
    writer: &Writer,
    server_owned: &[&str],
) {
    let sent = new.pointer("/metadata/managedFields").cloned();
    let live = entries_of(old);
    let explicit_list = matches!(sent, Some(Value::Array(_)));
    let base: Vec<Value> = match sent {
        None | Some(Value::Null) => live,
        // A subresource write never replaces the entries.
        Some(_) if !writer.subresource.is_empty() => live,
        Some(Value::Array(list)) => list,
        // Not a list: nothing kube could decode.
        Some(_) => vec![Value::Null],
    };
    if base.is_empty() && explicit_list && writer.subresource.is_empty() {
        // An explicit empty list clears the entries (kube v1.36 does, for PUT and patches).
        remove_entries(new);
        return;
    }
    let decoded: Option<Vec<Entry>> = base.iter().map(Entry::decode).collect();
    let Some(mut entries) = decoded else {
        // Entries kube cannot decode (e.g. `[{}]`): the field manager fails and the object is
        // stored without any.
        remove_entries(new);
        return;
    };
    if entries.is_empty() && old.is_some() {
        // kube does not start tracking on updates of an object without entries.
        remove_entries(new);
        return;
    }
    let mut before = old.map(stripped).unwrap_or_else(|| json!({"metadata": {}}));
    let mut after = stripped(new);
    for f in server_owned {
        for v in [&mut before, &mut after] {
            if let Some(m) = v.as_object_mut() {
                m.remove(*f);
            }
        }
    }
    let mut walker = Walker {
        info,
        out: Comparison::default(),
    };
    let shape = Shape {
        schema,
        builtin: !walker.info.is_custom,
    };
    walker.compare(
        Some(&before),
        Some(&after),
        &mut Vec::new(),
        &mut Vec::new(),
        shape,
    );
    let Comparison {
        added,
        modified,
        removed,
    } = walker.out;
    let mut changed = added;
    changed.union(&modified);
    let mut taken = changed.clone();
    taken.union(&removed);
    for e in &mut entries {
        e.fields.difference(&taken);
    }
    if !changed.is_empty() {
        let me = Entry {
            manager: writer.manager.clone(),
            operation: "Update".into(),
            api_version: writer.api_version.clone(),
            subresource: writer.subresource.clone(),
            time: Some(writer.time.clone()),
            fields: changed,
        };
        match entries.iter_mut().find(|e| e.same_manager(&me)) {
            Some(e) => {
                e.fields.union(&me.fields);
                e.time = me.time;
            }
            None => entries.push(me),
        }
    }
    entries.retain(|e| !e.fields.is_empty());
    // kube's `sortEncodedManagedFields`.
    entries.sort_by(|a, b| {
        (
            &a.operation,
            &a.time,
            &a.manager,
            &a.api_version,
            &a.subresource,
        )
            .cmp(&(
                &b.operation,
                &b.time,
                &b.manager,
                &b.api_version,
                &b.subresource,
            ))
    });
    if entries.is_empty() {
        remove_entries(new);
    } else if let Some(m) = new.get_mut("metadata").and_then(Value::as_object_mut) {
        m.insert(
            "managedFields".into(),
            Value::Array(entries.iter().map(Entry::encode).collect()),
        );
    }
}

fn remove_entries(object: &mut Value) {
    if let Some(m) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::sim::apiserver::registry::Registry;

    fn configmaps() -> std::sync::Arc<ResourceInfo> {
        Registry::with_builtins()
            .lookup("", "v1", "configmaps")
            .unwrap()
    }

    fn writer(manager: &str, time: &str) -> Writer {
        Writer {
            manager: manager.into(),
            api_version: "v1".into(),
            subresource: String::new(),
            time: time.into(),
        }
    }

    #[test]
    fn create_then_patch_by_another_manager() {
        let info = configmaps();
        let mut created = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "d"}, "data": {"a": "1"}});
        record_update(
            &info,
            None,
            None,
            &mut created,
            &writer("kubectl-create", "t1"),
            &[],
        );
        assert_eq!(
            created["metadata"]["managedFields"],
            json!([{"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1",
                "time": "t1", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {".": {}, "f:a": {}}}}])
        );
        let mut patched = created.clone();
        patched["data"]["a"] = json!("2");
        patched["data"]["b"] = json!("3");
        patched["metadata"]["labels"] = json!({"x": "y"});
        patched["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        record_update(
            &info,
            None,
            Some(&created),
            &mut patched,
            &writer("my-mgr", "t2"),
            &[],
        );
        let mf = &patched["metadata"]["managedFields"];
        // kube-apiserver shows the same: the creator keeps only the map itself.
        assert_eq!(mf[0]["fieldsV1"], json!({"f:data": {}}));
        assert_eq!(
            mf[1]["fieldsV1"],
            json!({"f:data": {"f:a": {}, "f:b": {}}, "f:metadata": {"f:labels": {".": {}, "f:x": {}}}})
        );
        assert_eq!(mf[1]["manager"], "my-mgr");
    }

    #[test]
    fn clearing_and_untracked_updates() {
        let info = configmaps();
        let mut created = json!({"metadata": {"name": "c"}, "data": {"a": "1"}});
        record_update(&info, None, None, &mut created, &writer("m", "t1"), &[]);
        let mut cleared = created.clone();
        cleared["metadata"]["managedFields"] = json!([{}]);
        record_update(
            &info,
            None,
            Some(&created),
            &mut cleared,
            &writer("m", "t2"),
            &[],
        );
        assert!(cleared["metadata"].get("managedFields").is_none());
        let mut next = cleared.clone();
        next["data"]["b"] = json!("2");
        record_update(
            &info,
            None,
            Some(&cleared),
            &mut next,
            &writer("m", "t3"),
            &[],
        );
        assert!(next["metadata"].get("managedFields").is_none());
    }

    #[test]
    fn keyed_lists_and_sets() {
        let info = Registry::with_builtins()
            .lookup("apps", "v1", "deployments")
            .unwrap();
        let mut d = json!({"metadata": {"name": "d", "finalizers": ["a.io/x"]},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        record_update(&info, None, None, &mut d, &writer("m", "t"), &[]);
        assert_eq!(
            d["metadata"]["managedFields"][0]["fieldsV1"],
            json!({"f:metadata": {"f:finalizers": {".": {}, "v:\"a.io/x\"": {}}},
                "f:spec": {"f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}})
        );
    }

    #[test]
    fn manager_names() {
        assert_eq!(manager_name(Some("x"), Some("kubectl/v1")), "x");
        assert_eq!(
            manager_name(None, Some("kubectl-edit/v1.36 (linux)")),
            "kubectl-edit"
        );
        assert_eq!(manager_name(Some(""), None), "unknown");
        assert!(field_manager_problem(&"m".repeat(129)).unwrap().0);
        assert_eq!(
            field_manager_problem("a\u{1}b").unwrap().1,
            "invalid character U+0001 (at position 1)"
        );
        assert_eq!(go_quote("a\u{1}b"), "\"a\\x01b\"");
        assert_eq!(go_quote("a\u{8}\u{c}b"), "\"a\\b\\fb\"");
    }
}
