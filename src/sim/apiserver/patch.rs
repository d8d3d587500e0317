//! The three patch types kube-apiserver accepts, applied with kube's semantics and messages.
//!
//! * [`merge_patch`] (`application/merge-patch+json`): RFC 7386 as kube's
//!   `evanphx/json-patch.v4` `MergePatch` applies it (nulls are also dropped from objects
//!   nested in arrays that replace a non-object).
//! * [`json_patch`] (`application/json-patch+json`): RFC 6902 as `evanphx/json-patch.v4` applies
//!   it, quirks included, because clients rely on them: a `test` whose `value` is `null` succeeds
//!   when the path is absent (kube-runtime's finalizer helper depends on this); `replace` of an
//!   absent object member adds it; negative array indices count from the end; `copy` from an
//!   absent member copies `null`; object comparison in `test` only checks the target's members.
//!   Patches are atomic: on error the target is unchanged.
//! * [`strategic_merge_patch`] (`application/strategic-merge-patch+json`, built-in kinds only):
//!   merge-patch semantics plus apimachinery `strategicpatch`'s list handling, driven by the
//!   patch tags of the built-in types we store (see [`list_strategy`]):
//!   - lists merged by key: `containers`, `initContainers`, `ephemeralContainers`, `volumes`,
//!     `imagePullSecrets`, `resourceClaims`, `schedulingGates` (pod specs, by `name`),
//!     `hostAliases` (`ip`), `topologySpreadConstraints` (`topologyKey`), container `ports`
//!     (`containerPort`), `env` (`name`), `volumeMounts` (`mountPath`), `volumeDevices`
//!     (`devicePath`), Service `spec.ports` (`port`), `status.conditions` and Node
//!     `status.addresses` (`type`), `metadata.ownerReferences` (`uid`), ServiceAccount `secrets`
//!     (`name`);
//!   - primitive lists merged as sets: `metadata.finalizers`; every other list is replaced;
//!   - directives: `$patch: replace|delete|merge` in maps and list elements,
//!     `$deleteFromPrimitiveList/<field>`, `$setElementOrder/<field>` (order only, validated
//!     against the patch list), `$retainKeys`; merged lists keep kube's element order (patch
//!     order, server-only items interleaved by their live order).
//!
//!   Not implemented: per-field `replace` strategies on maps, and the OpenAPI-driven metadata kube
//!   uses for aggregated APIs; unknown kinds merge their lists atomically.
use std::cmp::Ordering;

use serde_json::{Map, Value};

use super::schema::{go_v, json_equal};

/// Why a patch could not be applied. The text is kube-apiserver's message; the variant tells
/// which HTTP status kube answers with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The patch document is malformed: 400 BadRequest.
    #[error("{0}")]
    BadRequest(String),
    /// The patch cannot be applied to this object: 422 (for JSON patch, a `Status` with this
    /// message and no reason, as kube's `NewGenericServerResponse(422, ...)`).
    #[error("{0}")]
    Unprocessable(String),
    /// A strategic-merge failure kube surfaces as a plain error: 500 with this message.
    #[error("{0}")]
    Internal(String),
}

impl PatchError {
    /// The HTTP status kube-apiserver answers this error with.
    pub fn status_code(&self) -> u16 {
        match self {
            Self::BadRequest(_) => 400,
            Self::Unprocessable(_) => 422,
            Self::Internal(_) => 500,
        }
    }
}

/// The Go type name `encoding/json` reports for a value it cannot unmarshal.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

// ---------------------------------------------------------------------------------------------
// JSON merge patch
// ---------------------------------------------------------------------------------------------

/// kube's answer to a merge patch that is not a JSON object or array: 400 `Invalid JSON Patch`.
pub fn check_merge_patch(patch: &Value) -> Result<(), PatchError> {
    match patch {
        Value::Object(_) | Value::Array(_) => Ok(()),
        _ => Err(PatchError::BadRequest("Invalid JSON Patch".to_string())),
    }
}

/// Applies an RFC 7386 merge patch: object members merge recursively, `null` deletes, anything
/// else replaces. (kube rejects non-object patches first: see [`check_merge_patch`].)
pub fn merge_patch(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(patch_map) => {
            if !target.is_object() {
                *target = Value::Object(Map::new());
            }
            if let Value::Object(doc) = target {
                merge_docs(doc, patch_map);
            }
        }
        other => {
            let mut replacement = other.clone();
            prune_nulls(&mut replacement);
            *target = replacement;
        }
    }
}

fn merge_docs(doc: &mut Map<String, Value>, patch: &Map<String, Value>) {
    for (key, value) in patch {
        if value.is_null() {
            doc.shift_remove(key);
            continue;
        }
        match doc.get_mut(key) {
            Some(current) if !current.is_null() => match (current, value) {
                (Value::Object(cur), Value::Object(p)) => merge_docs(cur, p),
                // evanphx keeps a non-object patch value as is over an object...
                (current @ Value::Object(_), _) => *current = value.clone(),
                // ...and drops nested nulls when it replaces a non-object.
                (current, _) => {
                    let mut replacement = value.clone();
                    prune_nulls(&mut replacement);
                    *current = replacement;
                }
            },
            _ => {
                let mut added = value.clone();
                prune_nulls(&mut added);
                doc.insert(key.clone(), added);
            }
        }
    }
}

/// Removes `null` members from objects, recursively (array elements that are `null` stay).
fn prune_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(prune_nulls);
        }
        Value::Array(list) => list.iter_mut().for_each(prune_nulls),
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// JSON patch
// ---------------------------------------------------------------------------------------------

/// Applies an RFC 6902 JSON patch (`add`, `remove`, `replace`, `move`, `copy`, `test`) with the
/// semantics and messages of kube-apiserver's `evanphx/json-patch.v4`. Atomic: on error
/// `target` is left unchanged.
pub fn json_patch(target: &mut Value, operations: &Value) -> Result<(), PatchError> {
    let ops = match operations {
        // `null` decodes to an empty patch in Go.
        Value::Null => return Ok(()),
        Value::Array(ops) => ops,
        other => {
            return Err(PatchError::BadRequest(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
                json_kind(other)
            )));
        }
    };
    for op in ops {
        if !op.is_object() && !op.is_null() {
            return Err(PatchError::BadRequest(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.Operation",
                json_kind(op)
            )));
        }
    }
    let mut doc = target.clone();
    for op in ops {
        apply_operation(&mut doc, op).map_err(PatchError::Unprocessable)?;
    }
    *target = doc;
    Ok(())
}

fn apply_operation(doc: &mut Value, op: &Value) -> Result<(), String> {
    let kind = match op.get("op") {
        Some(Value::String(s)) => s.as_str(),
        _ => "unknown",
    };
    match kind {
        "add" => op_add(doc, op),
        "remove" => op_remove(doc, op),
        "replace" => op_replace(doc, op),
        "move" => op_move(doc, op),
        "test" => op_test(doc, op),
        "copy" => op_copy(doc, op),
        other => Err(format!("Unexpected kind: {other}")),
    }
}

/// The operation's `value`; an absent value is `null` (Go adds a nil node).
fn op_value(op: &Value) -> Value {
    op.get("value").cloned().unwrap_or(Value::Null)
}

/// Reads `path` or `from`; `Err(None)` when absent/null, `Err(Some(msg))` when not a string.
fn op_string(op: &Value, field: &str) -> Result<String, Option<String>> {
    match op.get(field) {
        None | Some(Value::Null) => Err(None),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(Some(format!(
            "json: cannot unmarshal {} into Go value of type string",
            json_kind(other)
        ))),
    }
}

/// `path`, with the decode-failure wording of the operation (evanphx words them differently).
fn op_path(op: &Value, kind: &str) -> Result<String, String> {
    op_string(op, "path").map_err(|e| {
        let cause = e.unwrap_or_else(|| "operation missing path field: missing value".to_string());
        match kind {
            // These wrap ErrMissing itself rather than the decode error.
            "add" | "remove" | "copy" => {
                format!("{kind} operation failed to decode path: missing value")
            }
            _ => format!("{kind} operation failed to decode path: {cause}"),
        }
    })
}

fn op_from(op: &Value, kind: &str) -> Result<String, String> {
    op_string(op, "from").map_err(|e| {
        let cause = e.unwrap_or_else(|| "operation, missing from field: missing value".to_string());
        format!("{kind} operation failed to decode from: {cause}")
    })
}

/// RFC 6901 unescaping of one reference token.
fn decode_token(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// Go's `strconv.Atoi`, with its error text.
fn atoi(key: &str) -> Result<i64, String> {
    let digits = key.strip_prefix(['+', '-']).unwrap_or(key);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "strconv.Atoi: parsing {}: invalid syntax",
            super::schema::go_quote(key)
        ));
    }
    key.parse::<i64>().map_err(|_| {
        format!(
            "strconv.Atoi: parsing {}: value out of range",
            super::schema::go_quote(key)
        )
    })
}

fn invalid_index(idx: i64) -> String {
    format!("Unable to access invalid index: {idx}: invalid index referenced")
}

/// An index into an array of `len` elements, negative counting from the end.
fn resolve_index(key: &str, len: usize) -> Result<usize, String> {
    let idx = atoi(key)?;
    let len_i = i64::try_from(len).unwrap_or(i64::MAX);
    let resolved = if idx < 0 {
        if idx < -len_i {
            return Err(invalid_index(idx));
        }
        idx + len_i
    } else {
        idx
    };
    if resolved >= len_i {
        return Err(invalid_index(idx));
    }
    usize::try_from(resolved).map_err(|_| invalid_index(idx))
}

/// The container holding the last token of `path`, and that token (evanphx's `findObject`):
/// `None` when any intermediate step is missing, null or a scalar.
fn find_container<'a>(doc: &'a mut Value, path: &str) -> Option<(&'a mut Value, String)> {
    let tokens: Vec<&str> = path.split('/').collect();
    if tokens.len() < 2 {
        return None;
    }
    let mut current = doc;
    for part in &tokens[1..tokens.len() - 1] {
        let part = decode_token(part);
        let next = match current {
            Value::Object(map) => map.get_mut(&part)?,
            Value::Array(list) => {
                let idx = resolve_index(&part, list.len()).ok()?;
                list.get_mut(idx)?
            }
            _ => return None,
        };
        if !next.is_object() && !next.is_array() {
            return None;
        }
        current = next;
    }
    let key = decode_token(tokens[tokens.len() - 1]);
    Some((current, key))
}

/// A container's `get`: `Ok(None)` for an absent (or null) object member.
fn container_get(container: &Value, key: &str) -> Result<Option<Value>, String> {
    match container {
        Value::Object(map) => Ok(map.get(key).filter(|v| !v.is_null()).cloned()),
        Value::Array(list) => {
            let idx = resolve_index(key, list.len())?;
            Ok(list.get(idx).filter(|v| !v.is_null()).cloned())
        }
        _ => Ok(None),
    }
}

fn container_add(container: &mut Value, key: &str, value: Value) -> Result<(), String> {
    match container {
        Value::Object(map) => {
            map.insert(key.to_string(), value);
            Ok(())
        }
        Value::Array(list) => {
            if key == "-" {
                list.push(value);
                return Ok(());
            }
            let idx = atoi(key)
                .map_err(|e| format!("value was not a proper array index: '{key}': {e}"))?;
            let size = i64::try_from(list.len() + 1).unwrap_or(i64::MAX);
            if idx >= size || idx < -size {
                return Err(invalid_index(idx));
            }
            let at = if idx < 0 { idx + size } else { idx };
            list.insert(usize::try_from(at).map_err(|_| invalid_index(idx))?, value);
            Ok(())
        }
        _ => Err("invalid state detected".to_string()),
    }
}

fn container_remove(container: &mut Value, key: &str) -> Result<(), String> {
    match container {
        Value::Object(map) => match map.shift_remove(key) {
            Some(_) => Ok(()),
            None => Err(format!(
                "Unable to remove nonexistent key: {key}: missing value"
            )),
        },
        Value::Array(list) => {
            let idx = resolve_index(key, list.len())?;
            list.remove(idx);
            Ok(())
        }
        _ => Err("invalid state detected".to_string()),
    }
}

fn op_add(doc: &mut Value, op: &Value) -> Result<(), String> {
    let path = op_path(op, "add")?;
    let Some((container, key)) = find_container(doc, &path) else {
        return Err(format!(
            "add operation does not apply: doc is missing path: \"{path}\": missing value"
        ));
    };
    container_add(container, &key, op_value(op))
        .map_err(|e| format!("error in add for path: '{path}': {e}"))
}

fn op_remove(doc: &mut Value, op: &Value) -> Result<(), String> {
    let path = op_path(op, "remove")?;
    let Some((container, key)) = find_container(doc, &path) else {
        return Err(format!(
            "remove operation does not apply: doc is missing path: \"{path}\": missing value"
        ));
    };
    container_remove(container, &key)
        .map_err(|e| format!("error in remove for path: '{path}': {e}"))
}

fn op_replace(doc: &mut Value, op: &Value) -> Result<(), String> {
    let path = op_path(op, "replace")?;
    if path.is_empty() {
        // evanphx replaces the whole document with an object or array, and silently ignores
        // anything else (its error wraps a nil error).
        let value = op_value(op);
        if value.is_object() || value.is_array() {
            *doc = value;
        }
        return Ok(());
    }
    let Some((container, key)) = find_container(doc, &path) else {
        return Err(format!(
            "replace operation does not apply: doc is missing path: {path}: missing value"
        ));
    };
    if container_get(container, &key).is_err() {
        return Err(format!(
            "replace operation does not apply: doc is missing key: {path}: missing value"
        ));
    }
    // An absent object member is simply set (v4 does not check existence there).
    let value = op_value(op);
    match container {
        Value::Object(map) => {
            map.insert(key, value);
        }
        Value::Array(list) => {
            let idx = resolve_index(&key, list.len())
                .map_err(|e| format!("error in remove for path: '{path}': {e}"))?;
            list[idx] = value;
        }
        _ => {
            return Err(format!(
                "replace operation does not apply: doc is missing key: {path}: missing value"
            ));
        }
    }
    Ok(())
}

fn op_move(doc: &mut Value, op: &Value) -> Result<(), String> {
    let from = op_from(op, "move")?;
    let Some((container, key)) = find_container(doc, &from) else {
        return Err(format!(
            "move operation does not apply: doc is missing from path: {from}: missing value"
        ));
    };
    let value = container_get(container, &key)
        .map_err(|e| format!("error in move for path: '{key}': {e}"))?;
    container_remove(container, &key)
        .map_err(|e| format!("error in move for path: '{key}': {e}"))?;
    let path = op_path(op, "move")?;
    let Some((container, key)) = find_container(doc, &path) else {
        return Err(format!(
            "move operation does not apply: doc is missing destination path: {path}: missing value"
        ));
    };
    container_add(container, &key, value.unwrap_or(Value::Null))
        .map_err(|e| format!("error in move for path: '{path}': {e}"))
}

fn op_copy(doc: &mut Value, op: &Value) -> Result<(), String> {
    let from = op_from(op, "copy")?;
    let Some((container, key)) = find_container(doc, &from) else {
        return Err(format!(
            "copy operation does not apply: doc is missing from path: {from}: missing value"
        ));
    };
    // An absent member copies as null (evanphx deep-copies a nil node).
    let value = container_get(container, &key)
        .map_err(|e| format!("error in copy for from: '{from}': {e}"))?;
    let path = op_path(op, "copy")?;
    let Some((container, key)) = find_container(doc, &path) else {
        return Err(format!(
            "copy operation does not apply: doc is missing destination path: {path}: missing value"
        ));
    };
    container_add(container, &key, value.unwrap_or(Value::Null))
        .map_err(|e| format!("error while adding value during copy: {e}"))
}

fn op_test(doc: &mut Value, op: &Value) -> Result<(), String> {
    let path = op_path(op, "test")?;
    let expected = op_value(op);
    let failed = || format!("testing value {path} failed: test failed");
    if path.is_empty() {
        return if v4_equal(doc, &expected) {
            Ok(())
        } else {
            Err(failed())
        };
    }
    let Some((container, key)) = find_container(doc, &path) else {
        return Err(format!(
            "test operation does not apply: is missing path: {path}: missing value"
        ));
    };
    let actual = container_get(container, &key)
        .map_err(|e| format!("error in test for path: '{path}': {e}"))?;
    match actual {
        // kube's json-patch treats an absent member like null: `test` with `null` passes.
        None if expected.is_null() => Ok(()),
        None => Err(failed()),
        Some(actual) if v4_equal(&actual, &expected) => Ok(()),
        Some(_) => Err(failed()),
    }
}

/// evanphx v4's `lazyNode.equal`: objects compare only the target's members (extra members in
/// the expected value are ignored), arrays element-wise, scalars by their JSON text.
fn v4_equal(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::Object(a), Value::Object(e)) => a.iter().all(|(k, v)| match e.get(k) {
            None => false,
            Some(w) if v.is_null() || w.is_null() => v.is_null() && w.is_null(),
            Some(w) => v4_equal(v, w),
        }),
        (Value::Object(_), _) | (_, Value::Object(_)) => false,
        (Value::Array(a), Value::Array(e)) => {
            a.len() == e.len()
                && a.iter().zip(e).all(|(v, w)| {
                    if v.is_null() || w.is_null() {
                        v.is_null() && w.is_null()
                    } else {
                        v4_equal(v, w)
                    }
                })
        }
        _ => actual == expected,
    }
}

// ---------------------------------------------------------------------------------------------
// Strategic merge patch
// ---------------------------------------------------------------------------------------------

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

fn bad_primitive_list() -> PatchError {
    PatchError::BadRequest("invalid patch format of primitive list".to_string())
}

fn bad_retain_keys() -> PatchError {
    PatchError::BadRequest("invalid patch format of retainKeys".to_string())
}

fn bad_set_element_order() -> PatchError {
    PatchError::BadRequest("invalid patch format of setElementOrder list".to_string())
}

fn no_merge_key(map: &Value, key: &str) -> PatchError {
    PatchError::Internal(format!(
        "map: {} does not contain declared merge key: {key}",
        go_v(map)
    ))
}

/// Go's `%s` of `reflect.TypeOf(v)` for a decoded JSON value.
fn go_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "%!s(<nil>)",
        Value::Bool(_) => "bool",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

fn bad_arg_type(expected: &str, actual: &Value) -> PatchError {
    PatchError::Internal(format!(
        "expected a {expected}, but received a {}",
        go_type(actual)
    ))
}

/// How a list field merges under strategic merge patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListStrategy {
    /// The patch list replaces the live list (no `patchStrategy` tag).
    Atomic,
    /// `patchStrategy:"merge"` on a list of scalars: a set union.
    MergePrimitives,
    /// `patchStrategy:"merge"` with `patchMergeKey`: elements matched by that key.
    MergeByKey(&'static str),
}

const POD_CONTAINER_LISTS: [&str; 3] = ["containers", "initContainers", "ephemeralContainers"];

/// The patch strategy of the list at `path` (field names from the object root, indices
/// omitted), from the Go struct tags of the built-in kinds the emulator stores.
pub fn list_strategy(path: &[String]) -> ListStrategy {
    let n = path.len();
    let Some(field) = path.last().map(String::as_str) else {
        return ListStrategy::Atomic;
    };
    let parent = if n >= 2 { path[n - 2].as_str() } else { "" };
    // A PodSpec sits at `spec` (Pod) or at `...template.spec` (workloads, CronJob).
    let in_pod_spec = parent == "spec" && (n == 2 || path[n - 3] == "template");
    match (parent, field) {
        ("metadata", "finalizers") => ListStrategy::MergePrimitives,
        ("metadata", "ownerReferences") => ListStrategy::MergeByKey("uid"),
        (p, "ports") if POD_CONTAINER_LISTS.contains(&p) => {
            ListStrategy::MergeByKey("containerPort")
        }
        (p, "env") if POD_CONTAINER_LISTS.contains(&p) => ListStrategy::MergeByKey("name"),
        (p, "volumeMounts") if POD_CONTAINER_LISTS.contains(&p) => {
            ListStrategy::MergeByKey("mountPath")
        }
        (p, "volumeDevices") if POD_CONTAINER_LISTS.contains(&p) => {
            ListStrategy::MergeByKey("devicePath")
        }
        (
            "spec",
            "containers"
            | "initContainers"
            | "ephemeralContainers"
            | "volumes"
            | "imagePullSecrets"
            | "resourceClaims"
            | "schedulingGates",
        ) if in_pod_spec => ListStrategy::MergeByKey("name"),
        ("spec", "hostAliases") if in_pod_spec => ListStrategy::MergeByKey("ip"),
        ("spec", "topologySpreadConstraints") if in_pod_spec => {
            ListStrategy::MergeByKey("topologyKey")
        }
        // Service.spec.ports; a PodSpec has no `ports`.
        ("spec", "ports") if n == 2 => ListStrategy::MergeByKey("port"),
        ("status", "conditions" | "addresses") if n == 2 => ListStrategy::MergeByKey("type"),
        // ServiceAccount.secrets.
        ("", "secrets") => ListStrategy::MergeByKey("name"),
        _ => ListStrategy::Atomic,
    }
}

/// Applies a strategic merge patch as kube-apiserver does for built-in kinds (see the module
/// documentation for what is covered). Atomic: on error `target` is unchanged.
pub fn strategic_merge_patch(target: &mut Value, patch: &Value) -> Result<(), PatchError> {
    let patch_map = match patch {
        Value::Object(m) => m.clone(),
        // Go unmarshals `null` into the map without error: nothing to apply.
        Value::Null => return Ok(()),
        other => {
            return Err(PatchError::BadRequest(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                json_kind(other)
            )));
        }
    };
    let original = match target {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    let merged = merge_map(original, patch_map, &mut Vec::new())?;
    *target = Value::Object(merged);
    Ok(())
}

/// Drops `null` members (kube's `IgnoreUnmatchedNulls`) and directives from patch content that
/// lands in the object as is; `None` when the value itself is a `$patch` map.
fn cleaned(value: Value) -> Option<Value> {
    match value {
        Value::Object(map) => {
            if map.contains_key(DIRECTIVE) {
                return None;
            }
            let kept = map
                .into_iter()
                .filter(|(k, v)| !v.is_null() && !is_directive_key(k))
                .filter_map(|(k, v)| cleaned(v).map(|v| (k, v)))
                .collect();
            Some(Value::Object(kept))
        }
        Value::Array(list) => Some(Value::Array(list.into_iter().filter_map(cleaned).collect())),
        other => Some(other),
    }
}

fn is_directive_key(key: &str) -> bool {
    key == RETAIN_KEYS
        || key.starts_with(SET_ELEMENT_ORDER)
        || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
}

/// The list field a `<prefix>/<field>` directive key names (kube matches the prefix without the
/// slash, then rejects a key that has none).
fn directive_target(key: &str, prefix: &str) -> Option<String> {
    let (head, rest) = key.split_once('/')?;
    (head == prefix).then(|| rest.to_string())
}

fn same_json_type(a: &Value, b: &Value) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    path: &mut Vec<String>,
) -> Result<Map<String, Value>, PatchError> {
    if let Some(directive) = patch.get(DIRECTIVE) {
        return match directive.as_str() {
            Some("replace") => {
                patch.shift_remove(DIRECTIVE);
                match cleaned(Value::Object(patch)) {
                    Some(Value::Object(m)) => Ok(m),
                    _ => Ok(Map::new()),
                }
            }
            Some("delete") => Ok(Map::new()),
            _ => Err(PatchError::Internal(format!(
                "unknown patch type: {} in map: {}",
                go_v(directive),
                go_v(&Value::Object(patch.clone()))
            ))),
        };
    }
    apply_retain_keys(&mut original, &mut patch)?;
    merge_set_element_order(&mut original, &mut patch, path)?;
    for (patch_key, patch_value) in patch {
        let (key, is_delete_list) = if patch_key.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
            (
                directive_target(&patch_key, DELETE_FROM_PRIMITIVE_LIST)
                    .ok_or_else(bad_primitive_list)?,
                true,
            )
        } else {
            (patch_key, false)
        };
        if patch_value.is_null() {
            original.shift_remove(&key);
            continue;
        }
        let Some(slot) = original.get_mut(&key) else {
            if !is_delete_list && let Some(v) = cleaned(patch_value) {
                original.insert(key, v);
            }
            continue;
        };
        if !same_json_type(slot, &patch_value) {
            if !is_delete_list {
                match cleaned(patch_value) {
                    Some(v) => *slot = v,
                    None => {
                        original.shift_remove(&key);
                    }
                }
            }
            continue;
        }
        let current = std::mem::take(slot);
        path.push(key.clone());
        let merged = match (current, patch_value) {
            (Value::Object(cur), Value::Object(p)) => merge_map(cur, p, path).map(Value::Object),
            (Value::Array(cur), Value::Array(p)) => {
                merge_list_field(cur, p, path, is_delete_list).map(Value::Array)
            }
            (_, scalar) => Ok(scalar),
        };
        path.pop();
        let merged = merged?;
        if let Some(slot) = original.get_mut(&key) {
            *slot = merged;
        }
    }
    Ok(original)
}

/// `$retainKeys`: every patched key must be listed; live keys not listed are cleared.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), PatchError> {
    let Some(retain) = patch.shift_remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(bad_retain_keys());
    };
    let listed = |k: &str| retain.iter().any(|r| r.as_str() == Some(k));
    for (k, v) in patch.iter() {
        if v.is_null()
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || k.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !listed(k) {
            return Err(bad_retain_keys());
        }
    }
    original.retain(|k, _| listed(k));
    Ok(())
}

/// `$setElementOrder/<field>`: merges that list now and orders it as the directive says.
fn merge_set_element_order(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    path: &mut Vec<String>,
) -> Result<(), PatchError> {
    let keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    for directive_key in keys {
        let Some(order) = patch.shift_remove(&directive_key) else {
            continue;
        };
        let Value::Array(order) = order else {
            return Err(bad_arg_type("[]interface {}", &order));
        };
        let field = directive_target(&directive_key, SET_ELEMENT_ORDER)
            .ok_or_else(bad_set_element_order)?;
        let live = match original.get(&field) {
            None => None,
            Some(Value::Array(list)) => Some(list.clone()),
            Some(other) => return Err(bad_arg_type("[]interface {}", other)),
        };
        let patched = match patch.get(&field) {
            None => None,
            Some(Value::Array(list)) => Some(list.clone()),
            Some(other) => return Err(bad_arg_type("[]interface {}", other)),
        };
        path.push(field.clone());
        let strategy = list_strategy(path);
        let result = (|| {
            let merge_key = match strategy {
                ListStrategy::MergeByKey(k) => Some(k),
                _ => None,
            };
            if let Some(patched) = &patched {
                validate_against_order(patched, &order, merge_key)?;
            }
            let merged = match (&live, &patched) {
                (Some(live), None) => live.clone(),
                (None, Some(patched)) => patched.iter().cloned().filter_map(cleaned).collect(),
                (Some(live), Some(patched)) => {
                    merge_list_field(live.clone(), patched.clone(), path, false)?
                }
                (None, None) => return Ok(None),
            };
            let (in_order, server_only) = partition(&merged, &order, merge_key)?;
            let live = live.unwrap_or_default();
            Ok(Some(normalize_element_order(
                in_order,
                server_only,
                &order,
                &live,
                merge_key,
            )?))
        })();
        path.pop();
        if let Some(ordered) = result? {
            original.insert(field.clone(), Value::Array(ordered));
            patch.shift_remove(&field);
        }
    }
    Ok(())
}

/// The patch list (deletions aside) must follow the relative order of `$setElementOrder`.
fn validate_against_order(
    patched: &[Value],
    order: &[Value],
    merge_key: Option<&str>,
) -> Result<(), PatchError> {
    if patched.is_empty() || order.is_empty() {
        return Ok(());
    }
    let non_delete: Vec<&Value> = match merge_key {
        Some(_) => patched
            .iter()
            .filter(|v| v.get(DIRECTIVE).and_then(Value::as_str) != Some("delete"))
            .collect(),
        None => patched.iter().collect(),
    };
    let (mut p, mut o) = (0, 0);
    while p < non_delete.len() && o < order.len() {
        if non_delete[p].get(DIRECTIVE).is_some() {
            p += 1;
            continue;
        }
        if same_item(non_delete[p], &order[o], merge_key)? {
            p += 1;
        }
        o += 1;
    }
    if p < non_delete.len() {
        return Err(PatchError::Internal(format!(
            "the order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER} list:\n{}",
            go_v(&Value::Array(patched.to_vec())),
            go_v(&Value::Array(order.to_vec()))
        )));
    }
    Ok(())
}

/// Whether two list items are the same element: by merge key for maps, by value otherwise.
fn same_item(a: &Value, b: &Value, merge_key: Option<&str>) -> Result<bool, PatchError> {
    let Some(key) = merge_key else {
        return Ok(json_equal(a, b));
    };
    let left = a.get(key).ok_or_else(|| no_merge_key(a, key))?;
    let right = b.get(key).ok_or_else(|| no_merge_key(b, key))?;
    Ok(json_equal(left, right))
}

fn merge_list_field(
    live: Vec<Value>,
    patched: Vec<Value>,
    path: &[String],
    is_delete_list: bool,
) -> Result<Vec<Value>, PatchError> {
    let strategy = list_strategy(path);
    if strategy == ListStrategy::Atomic && !is_delete_list {
        return Ok(patched.into_iter().filter_map(cleaned).collect());
    }
    let merge_key = match strategy {
        ListStrategy::MergeByKey(k) => Some(k),
        ListStrategy::MergePrimitives | ListStrategy::Atomic => None,
    };
    merge_list(live, patched, merge_key, is_delete_list, path)
}

/// The element kind of the lists, as apimachinery's `sliceElementType` checks it.
fn element_is_map(lists: [&[Value]; 2]) -> Result<bool, PatchError> {
    let mut first: Option<&Value> = None;
    for v in lists.into_iter().flatten() {
        match first {
            None => {
                if v.is_array() {
                    return Err(PatchError::Unprocessable(
                        "lists of lists are not supported".to_string(),
                    ));
                }
                first = Some(v);
            }
            Some(f) if !same_json_type(f, v) => {
                return Err(PatchError::Internal(format!(
                    "list element types are not identical: [{} {}]",
                    go_v(&Value::Array(lists[0].to_vec())),
                    go_v(&Value::Array(lists[1].to_vec()))
                )));
            }
            Some(_) => {}
        }
    }
    Ok(first.is_some_and(Value::is_object))
}

fn merge_list(
    live: Vec<Value>,
    patched: Vec<Value>,
    merge_key: Option<&'static str>,
    is_delete_list: bool,
    path: &[String],
) -> Result<Vec<Value>, PatchError> {
    if live.is_empty() && patched.is_empty() {
        return Ok(live);
    }
    let of_maps = element_is_map([&live, &patched])?;
    let (server_order, patch_order, merged) = if of_maps {
        let Some(key) = merge_key else {
            let field = path.last().map(String::as_str).unwrap_or_default();
            return Err(PatchError::Internal(format!(
                "cannot merge lists without merge key for {field}"
            )));
        };
        let (live, patched) = apply_list_directives(live, patched, key)?;
        let merged = merge_by_key(live.clone(), &patched, key, path)?;
        (live, patched, merged)
    } else {
        if is_delete_list {
            return Ok(live
                .into_iter()
                .filter(|v| !patched.iter().any(|d| json_equal(v, d)))
                .collect());
        }
        let mut merged: Vec<Value> = Vec::new();
        for v in live.iter().chain(&patched) {
            if !merged.iter().any(|m| json_equal(m, v)) {
                merged.push(v.clone());
            }
        }
        (live, patched, merged)
    };
    let key = if of_maps { merge_key } else { None };
    let (in_patch, server_only) = partition(&merged, &patch_order, key)?;
    normalize_element_order(in_patch, server_only, &patch_order, &server_order, key)
}

/// Applies `$patch: delete|replace` elements of a keyed list; returns the live list after
/// deletions (or the replacement) and the patch without directive elements.
fn apply_list_directives(
    mut live: Vec<Value>,
    patched: Vec<Value>,
    key: &str,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut plain = Vec::new();
    let mut replace = false;
    for v in patched {
        let Some(directive) = v.get(DIRECTIVE) else {
            plain.push(v);
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                let target = v.get(key).ok_or_else(|| no_merge_key(&v, key))?;
                for (i, item) in live.iter().enumerate() {
                    if !item.is_object() {
                        return Err(PatchError::Internal(format!(
                            "value for key {i} is not a map"
                        )));
                    }
                }
                live.retain(|item| !item.get(key).is_some_and(|x| json_equal(x, target)));
            }
            Some("replace") => replace = true,
            Some("merge") => {
                return Err(PatchError::Internal(
                    "merging lists cannot yet be specified in the patch".to_string(),
                ));
            }
            _ => {
                return Err(PatchError::Internal(format!(
                    "unknown patch type: {} in map: {}",
                    go_v(directive),
                    go_v(&v)
                )));
            }
        }
    }
    if replace {
        return Ok((plain.into_iter().filter_map(cleaned).collect(), Vec::new()));
    }
    Ok((live, plain))
}

/// Patch elements merge into the live element with the same key, or are appended.
fn merge_by_key(
    mut live: Vec<Value>,
    patched: &[Value],
    key: &str,
    path: &[String],
) -> Result<Vec<Value>, PatchError> {
    for element in patched {
        let Value::Object(element_map) = element else {
            return Err(bad_arg_type("map[string]interface {}", element));
        };
        let wanted = element_map
            .get(key)
            .ok_or_else(|| no_merge_key(element, key))?;
        let mut found = None;
        for (i, item) in live.iter().enumerate() {
            let Value::Object(item_map) = item else {
                return Err(PatchError::Internal(format!(
                    "value for key {i} is not a map"
                )));
            };
            if item_map.get(key).is_some_and(|v| json_equal(v, wanted)) {
                found = Some(i);
                break;
            }
        }
        match found {
            Some(i) => {
                let current = match std::mem::take(&mut live[i]) {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
                let mut element_path = path.to_vec();
                live[i] =
                    Value::Object(merge_map(current, element_map.clone(), &mut element_path)?);
            }
            None => {
                if let Some(v) = cleaned(element.clone()) {
                    live.push(v);
                }
            }
        }
    }
    Ok(live)
}

/// Splits `merged` into the items present in `by` and the server-only rest.
fn partition(
    merged: &[Value],
    by: &[Value],
    merge_key: Option<&str>,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut present = Vec::new();
    let mut server_only = Vec::new();
    for item in merged {
        let found = match merge_key {
            None => by.iter().any(|b| json_equal(item, b)),
            Some(key) => {
                let value = item.get(key).ok_or_else(|| no_merge_key(item, key))?;
                by.iter()
                    .any(|b| b.get(key).is_some_and(|v| json_equal(v, value)))
            }
        };
        if found {
            present.push(item.clone())
        } else {
            server_only.push(item.clone())
        }
    }
    Ok((present, server_only))
}

/// Position of `item` in `list` (by merge key for maps).
fn index_in(list: &[Value], item: &Value, merge_key: Option<&str>) -> Option<usize> {
    let probe = |v: &Value| match merge_key {
        Some(k) => v.get(k).cloned().unwrap_or(Value::Null),
        None => v.clone(),
    };
    let wanted = probe(item);
    list.iter().position(|v| json_equal(&probe(v), &wanted))
}

/// apimachinery's `normalizeElementOrder`: patch items in patch order, server-only items in
/// live order, then interleaved so each keeps its place relative to the live list.
fn normalize_element_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: Option<&str>,
) -> Result<Vec<Value>, PatchError> {
    if let Some(key) = merge_key {
        for v in patch_items.iter().chain(&server_only).chain(patch_order) {
            if v.get(key).is_none() {
                return Err(no_merge_key(v, key));
            }
        }
    }
    let sort = |mut items: Vec<Value>, order: &[Value]| {
        items.sort_by(|a, b| {
            match (index_in(order, a, merge_key), index_in(order, b, merge_key)) {
                (Some(x), Some(y)) => x.cmp(&y),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            }
        });
        items
    };
    let right = sort(patch_items, patch_order);
    let left = sort(server_only, server_order);
    // mergeSortedSlice: take a server-only item first only when both sit in the live list and it
    // comes earlier there.
    let mut result = Vec::with_capacity(left.len() + right.len());
    let (mut i, mut j) = (0, 0);
    while i < left.len() || j < right.len() {
        let take_left = if i >= left.len() {
            false
        } else if j >= right.len() {
            true
        } else {
            matches!(
                (index_in(server_order, &left[i], merge_key), index_in(server_order, &right[j], merge_key)),
                (Some(l), Some(r)) if l < r
            )
        };
        if take_left {
            result.push(left[i].clone());
            i += 1;
        } else {
            result.push(right[j].clone());
            j += 1;
        }
    }
    Ok(result)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn merged(target: Value, patch: Value) -> Value {
        let mut t = target;
        merge_patch(&mut t, &patch);
        t
    }

    /// RFC 7386 appendix A, plus the `{}`-parent case.
    #[test]
    fn merge_patch_follows_rfc_7386() {
        let cases = [
            (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
            (
                json!({"a": "b"}),
                json!({"b": "c"}),
                json!({"a": "b", "b": "c"}),
            ),
            (json!({"a": "b"}), json!({"a": null}), json!({})),
            (
                json!({"a": "b", "b": "c"}),
                json!({"a": null}),
                json!({"b": "c"}),
            ),
            (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
            (
                json!({"a": {"b": "c"}}),
                json!({"a": {"b": "d", "c": null}}),
                json!({"a": {"b": "d"}}),
            ),
            (
                json!({"a": [{"b": "c"}]}),
                json!({"a": [1]}),
                json!({"a": [1]}),
            ),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a": "b"}), json!(["c"]), json!(["c"])),
            (
                json!({"e": null}),
                json!({"a": 1}),
                json!({"e": null, "a": 1}),
            ),
            (
                json!([1, 2]),
                json!({"a": "b", "c": null}),
                json!({"a": "b"}),
            ),
            (
                json!({}),
                json!({"a": {"bb": {"ccc": null}}}),
                json!({"a": {"bb": {}}}),
            ),
        ];
        for (target, patch, expected) in cases {
            assert_eq!(
                merged(target.clone(), patch.clone()),
                expected,
                "{target} + {patch}"
            );
        }
    }

    #[test]
    fn merge_patch_keeps_key_order_and_drops_nulls_in_new_arrays_of_objects() {
        let out = merged(
            json!({"metadata": {"labels": {"a": "1", "b": "2", "c": "3"}}}),
            json!({"metadata": {"labels": {"a": "9", "b": null}}}),
        );
        assert_eq!(
            serde_json::to_string(&out).unwrap(),
            r#"{"metadata":{"labels":{"a":"9","c":"3"}}}"#
        );
        // evanphx prunes nulls inside objects of an array that replaces a non-object.
        assert_eq!(
            merged(json!({"a": 1}), json!({"a": [{"x": null, "y": 1}]})),
            json!({"a": [{"y": 1}]})
        );
    }

    #[test]
    fn merge_patches_that_are_not_objects_are_rejected_like_kube() {
        for bad in [json!(null), json!(1), json!("x")] {
            let err = check_merge_patch(&bad).unwrap_err();
            assert_eq!(err, PatchError::BadRequest("Invalid JSON Patch".into()));
            assert_eq!(err.status_code(), 400);
        }
        assert!(check_merge_patch(&json!({})).is_ok());
    }

    fn patched(target: Value, ops: Value) -> Result<Value, PatchError> {
        let mut t = target;
        json_patch(&mut t, &ops).map(|()| t)
    }

    fn patch_error(target: Value, ops: Value) -> String {
        let before = target.clone();
        let mut t = target;
        let err = json_patch(&mut t, &ops).unwrap_err();
        assert_eq!(t, before, "a failed patch must leave the target unchanged");
        err.to_string()
    }

    #[test]
    fn json_patch_add_remove_replace() {
        let out = patched(
            json!({"spec": {"list": ["a", "c"], "n": 1}}),
            json!([
                {"op": "add", "path": "/spec/list/1", "value": "b"},
                {"op": "add", "path": "/spec/list/-", "value": "d"},
                {"op": "replace", "path": "/spec/n", "value": 2},
                {"op": "remove", "path": "/spec/list/0"},
                {"op": "add", "path": "/spec/new", "value": {"x": true}},
            ]),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"spec": {"list": ["b", "c", "d"], "n": 2, "new": {"x": true}}})
        );
    }

    #[test]
    fn json_pointer_escapes_and_negative_indices() {
        let out = patched(
            json!({"metadata": {"annotations": {"a/b": "1", "c~d": "2"}}, "l": [1, 2, 3]}),
            json!([
                {"op": "replace", "path": "/metadata/annotations/a~1b", "value": "x"},
                {"op": "remove", "path": "/metadata/annotations/c~0d"},
                {"op": "remove", "path": "/l/-1"},
            ]),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"annotations": {"a/b": "x"}}, "l": [1, 2]})
        );
    }

    /// kube-runtime's finalizer helper: `test` for `null` on an absent list, then `add` it; later
    /// `test` the whole list and append; removal tests the element before removing it.
    #[test]
    fn test_with_null_succeeds_on_an_absent_path_as_kube_runtime_relies_on() {
        let obj = json!({"metadata": {"name": "b1"}});
        let add_first = json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": ["nac.io/cleanup"]},
        ]);
        let obj = patched(obj, add_first.clone()).unwrap();
        assert_eq!(obj["metadata"]["finalizers"], json!(["nac.io/cleanup"]));
        // A second writer racing the same patch now fails the test.
        assert_eq!(
            patch_error(obj.clone(), add_first),
            "testing value /metadata/finalizers failed: test failed"
        );
        let obj = patched(
            obj,
            json!([
                {"op": "test", "path": "/metadata/finalizers", "value": ["nac.io/cleanup"]},
                {"op": "add", "path": "/metadata/finalizers/-", "value": "other"},
            ]),
        )
        .unwrap();
        let obj = patched(
            obj,
            json!([
                {"op": "test", "path": "/metadata/finalizers/0", "value": "nac.io/cleanup"},
                {"op": "remove", "path": "/metadata/finalizers/0"},
            ]),
        )
        .unwrap();
        assert_eq!(obj["metadata"]["finalizers"], json!(["other"]));
    }

    #[test]
    fn test_operation_failures() {
        let obj = json!({"spec": {"a": 1, "l": [1]}});
        assert_eq!(
            patch_error(
                obj.clone(),
                json!([{"op": "test", "path": "/spec/a", "value": null}])
            ),
            "testing value /spec/a failed: test failed"
        );
        assert_eq!(
            patch_error(
                obj.clone(),
                json!([{"op": "test", "path": "/spec/missing", "value": 1}])
            ),
            "testing value /spec/missing failed: test failed"
        );
        assert_eq!(
            patch_error(
                obj.clone(),
                json!([{"op": "test", "path": "/nope/x", "value": null}])
            ),
            "test operation does not apply: is missing path: /nope/x: missing value"
        );
        assert_eq!(
            patch_error(
                obj.clone(),
                json!([{"op": "test", "path": "/spec/l/3", "value": null}])
            ),
            "error in test for path: '/spec/l/3': Unable to access invalid index: 3: invalid index referenced"
        );
        // 1 and 1.0 differ as JSON text, as in kube.
        assert!(
            patched(
                obj.clone(),
                json!([{"op": "test", "path": "/spec/a", "value": 1.0}])
            )
            .is_err()
        );
        assert!(
            patched(
                obj.clone(),
                json!([{"op": "test", "path": "", "value": obj}])
            )
            .is_ok()
        );
    }

    #[test]
    fn test_compares_objects_by_the_targets_members_as_json_patch_v4_does() {
        let obj = json!({"spec": {"sel": {"a": "1"}}});
        assert!(
            patched(
                obj.clone(),
                json!([{"op": "test", "path": "/spec/sel", "value": {"a": "1", "b": "2"}}])
            )
            .is_ok()
        );
        assert!(
            patched(
                obj,
                json!([{"op": "test", "path": "/spec/sel", "value": {}}])
            )
            .is_err()
        );
    }

    #[test]
    fn json_patch_errors_use_json_patch_v4_wording_and_are_atomic() {
        let obj = json!({"spec": {"list": ["a"], "n": 1}});
        let cases = [
            (
                json!([{"op": "add", "path": "/spec/n", "value": 2}, {"op": "add", "path": "/spec/x/y", "value": 1}]),
                r#"add operation does not apply: doc is missing path: "/spec/x/y": missing value"#,
            ),
            (
                json!([{"op": "remove", "path": "/spec/nope"}]),
                "error in remove for path: '/spec/nope': Unable to remove nonexistent key: nope: missing value",
            ),
            (
                json!([{"op": "remove", "path": "/spec/list/5"}]),
                "error in remove for path: '/spec/list/5': Unable to access invalid index: 5: invalid index referenced",
            ),
            (
                json!([{"op": "add", "path": "/spec/list/x", "value": 1}]),
                r#"error in add for path: '/spec/list/x': value was not a proper array index: 'x': strconv.Atoi: parsing "x": invalid syntax"#,
            ),
            (
                json!([{"op": "replace", "path": "/spec/list/9", "value": 1}]),
                "replace operation does not apply: doc is missing key: /spec/list/9: missing value",
            ),
            (
                json!([{"op": "replace", "path": "/nope/x", "value": 1}]),
                "replace operation does not apply: doc is missing path: /nope/x: missing value",
            ),
            (
                json!([{"op": "move", "from": "/spec/gone", "path": "/spec/here"}]),
                "error in move for path: 'gone': Unable to remove nonexistent key: gone: missing value",
            ),
            (
                json!([{"op": "frobnicate", "path": "/spec"}]),
                "Unexpected kind: frobnicate",
            ),
            (
                json!([{"op": "add", "value": 1}]),
                "add operation failed to decode path: missing value",
            ),
            (
                json!([{"op": "move", "path": "/a"}]),
                "move operation failed to decode from: operation, missing from field: missing value",
            ),
        ];
        for (ops, message) in cases {
            assert_eq!(patch_error(obj.clone(), ops), message);
        }
        let err =
            json_patch(&mut obj.clone(), &json!([{"op": "remove", "path": "/x"}])).unwrap_err();
        assert_eq!(err.status_code(), 422);
    }

    #[test]
    fn malformed_json_patches_are_bad_requests() {
        let err = json_patch(&mut json!({}), &json!({"op": "add"})).unwrap_err();
        assert_eq!(
            err,
            PatchError::BadRequest(
                "json: cannot unmarshal object into Go value of type jsonpatch.Patch".into()
            )
        );
        assert_eq!(err.status_code(), 400);
        assert_eq!(
            json_patch(&mut json!({}), &json!(["add"]))
                .unwrap_err()
                .to_string(),
            "json: cannot unmarshal string into Go value of type jsonpatch.Operation"
        );
        // `null` decodes to an empty patch.
        assert_eq!(
            patched(json!({"a": 1}), json!(null)).unwrap(),
            json!({"a": 1})
        );
    }

    #[test]
    fn json_patch_v4_quirks() {
        // replace of an absent object member adds it
        assert_eq!(
            patched(
                json!({"spec": {}}),
                json!([{"op": "replace", "path": "/spec/x", "value": 1}])
            )
            .unwrap(),
            json!({"spec": {"x": 1}})
        );
        // copy from an absent member copies null
        assert_eq!(
            patched(
                json!({"a": {}}),
                json!([{"op": "copy", "from": "/a/nope", "path": "/a/b"}])
            )
            .unwrap(),
            json!({"a": {"b": null}})
        );
        // replace of the whole document
        assert_eq!(
            patched(
                json!({"a": 1}),
                json!([{"op": "replace", "path": "", "value": {"b": 2}}])
            )
            .unwrap(),
            json!({"b": 2})
        );
    }

    #[test]
    fn json_patch_move_and_copy() {
        let out = patched(
            json!({"spec": {"a": {"x": 1}, "l": ["p", "q"]}}),
            json!([
                {"op": "copy", "from": "/spec/a", "path": "/spec/b"},
                {"op": "move", "from": "/spec/a", "path": "/spec/c"},
                {"op": "move", "from": "/spec/l/0", "path": "/spec/l/-"},
            ]),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"spec": {"b": {"x": 1}, "c": {"x": 1}, "l": ["q", "p"]}})
        );
    }

    fn smp(target: Value, patch: Value) -> Value {
        let mut t = target;
        strategic_merge_patch(&mut t, &patch).unwrap();
        t
    }

    fn smp_error(target: Value, patch: Value) -> PatchError {
        let before = target.clone();
        let mut t = target;
        let err = strategic_merge_patch(&mut t, &patch).unwrap_err();
        assert_eq!(t, before, "a failed patch must leave the target unchanged");
        err
    }

    fn pod(containers: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": containers}})
    }

    #[test]
    fn strategic_patch_merges_maps_like_a_merge_patch() {
        let out = smp(
            json!({"metadata": {"labels": {"a": "1", "b": "2"}, "annotations": {"x": "y"}}}),
            json!({"metadata": {"labels": {"a": "9", "b": null, "c": "3"}, "annotations": null}}),
        );
        assert_eq!(out, json!({"metadata": {"labels": {"a": "9", "c": "3"}}}));
    }

    #[test]
    fn containers_merge_by_name_in_kubes_order() {
        let out = smp(
            pod(
                json!([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}, {"name": "c", "image": "c:1"}]),
            ),
            json!({"spec": {"containers": [{"name": "b", "image": "b:2"}, {"name": "d", "image": "d:1"}]}}),
        );
        // Patched items keep patch order; server-only items keep their live position relative to them.
        assert_eq!(
            out["spec"]["containers"],
            json!([
                {"name": "a", "image": "a:1"},
                {"name": "b", "image": "b:2"},
                {"name": "d", "image": "d:1"},
                {"name": "c", "image": "c:1"},
            ])
        );
    }

    /// The exercise of kubernetes.io "Update API Objects in Place Using kubectl patch": the added
    /// container is listed first, tolerations (no patch strategy) are replaced.
    #[test]
    fn kubectl_patch_documentation_examples() {
        let deployment = json!({"spec": {"template": {"spec": {
            "containers": [{"name": "patch-demo-ctr", "image": "nginx"}],
            "tolerations": [{"effect": "NoSchedule", "key": "dedicated", "value": "test-team"}],
        }}}});
        let out = smp(
            deployment,
            json!({"spec": {"template": {"spec": {
                "containers": [{"name": "patch-demo-ctr-2", "image": "redis"}],
                "tolerations": [{"effect": "NoSchedule", "key": "disktype", "value": "ssd"}],
            }}}}),
        );
        assert_eq!(
            out["spec"]["template"]["spec"],
            json!({
                "containers": [
                    {"name": "patch-demo-ctr-2", "image": "redis"},
                    {"name": "patch-demo-ctr", "image": "nginx"},
                ],
                "tolerations": [{"effect": "NoSchedule", "key": "disktype", "value": "ssd"}],
            })
        );
        let retain = json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "30%"}}}});
        let out = smp(
            retain,
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
        );
        assert_eq!(out, json!({"spec": {"strategy": {"type": "Recreate"}}}));
    }

    #[test]
    fn nested_lists_of_workload_templates_merge_by_their_keys() {
        let deployment = json!({"spec": {"template": {"spec": {"containers": [{
            "name": "app",
            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
            "ports": [{"containerPort": 80, "protocol": "TCP"}],
            "volumeMounts": [{"name": "data", "mountPath": "/data"}],
        }]}}}});
        let out = smp(
            deployment,
            json!({"spec": {"template": {"spec": {"containers": [{
                "name": "app",
                "env": [{"name": "B", "value": "3"}, {"name": "A", "$patch": "delete"}],
                "ports": [{"containerPort": 8080}],
                "volumeMounts": [{"name": "cache", "mountPath": "/cache"}],
            }]}}}}),
        );
        // Items the live list lacks go before the server-only ones (apimachinery's
        // mergeSortedSlice cannot place them), so entries added by SMP land first.
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"][0],
            json!({
                "name": "app",
                "env": [{"name": "B", "value": "3"}],
                "ports": [{"containerPort": 8080}, {"containerPort": 80, "protocol": "TCP"}],
                "volumeMounts": [{"name": "cache", "mountPath": "/cache"}, {"name": "data", "mountPath": "/data"}],
            })
        );
    }

    #[test]
    fn list_directives_delete_and_replace() {
        let live = pod(json!([{"name": "a"}, {"name": "b"}]));
        let out = smp(
            live.clone(),
            json!({"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}),
        );
        assert_eq!(out["spec"]["containers"], json!([{"name": "b"}]));
        let out = smp(
            live,
            json!({"spec": {"containers": [{"$patch": "replace"}, {"name": "z", "image": "z"}]}}),
        );
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "z", "image": "z"}])
        );
    }

    #[test]
    fn map_directives_replace_and_delete() {
        let live = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"strategy": {"type": "Recreate"}}});
        let out = smp(
            live,
            json!({
                "metadata": {"labels": {"$patch": "replace", "c": "3"}},
                "spec": {"strategy": {"$patch": "delete"}},
            }),
        );
        assert_eq!(
            out,
            json!({"metadata": {"labels": {"c": "3"}}, "spec": {"strategy": {}}})
        );
    }

    #[test]
    fn finalizers_merge_as_a_set_and_can_be_deleted_or_reordered() {
        let live = json!({"metadata": {"finalizers": ["a", "b"]}});
        let out = smp(
            live.clone(),
            json!({"metadata": {"finalizers": ["b", "c"]}}),
        );
        assert_eq!(out["metadata"]["finalizers"], json!(["a", "b", "c"]));
        let out = smp(live.clone(), json!({"metadata": {"finalizers": ["c"]}}));
        assert_eq!(out["metadata"]["finalizers"], json!(["c", "a", "b"]));
        let out = smp(
            live.clone(),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
        );
        assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
        let out = smp(
            live,
            json!({"metadata": {"$setElementOrder/finalizers": ["b", "a"]}}),
        );
        assert_eq!(out["metadata"]["finalizers"], json!(["b", "a"]));
    }

    #[test]
    fn set_element_order_orders_keyed_lists_and_must_match_the_patch() {
        let live = pod(json!([{"name": "a"}, {"name": "b"}]));
        let out = smp(
            live.clone(),
            json!({"spec": {
                "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
                "containers": [{"name": "a", "image": "x"}],
            }}),
        );
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "b"}, {"name": "a", "image": "x"}])
        );
        let err = smp_error(
            live,
            json!({"spec": {
                "$setElementOrder/containers": [{"name": "a"}],
                "containers": [{"name": "b", "image": "x"}],
            }}),
        );
        assert_eq!(
            err,
            PatchError::Internal(
                "the order in patch list:\n[map[image:x name:b]]\n doesn't match $setElementOrder list:\n[map[name:a]]"
                    .into()
            )
        );
    }

    #[test]
    fn retain_keys_clears_unlisted_fields() {
        let live = json!({"spec": {"volumes": [{"name": "v", "hostPath": {"path": "/x"}}]}});
        let out = smp(
            live.clone(),
            json!({"spec": {"volumes": [{"name": "v", "$retainKeys": ["emptyDir", "name"], "emptyDir": {}}]}}),
        );
        assert_eq!(
            out["spec"]["volumes"],
            json!([{"name": "v", "emptyDir": {}}])
        );
        let err = smp_error(
            live,
            json!({"spec": {"volumes": [{"name": "v", "$retainKeys": ["name"], "emptyDir": {}}]}}),
        );
        assert_eq!(
            err,
            PatchError::BadRequest("invalid patch format of retainKeys".into())
        );
    }

    #[test]
    fn other_keyed_lists_of_built_in_kinds() {
        let service = json!({"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}});
        let out = smp(
            service,
            json!({"spec": {"ports": [{"port": 443, "targetPort": 8443}]}}),
        );
        assert_eq!(
            out["spec"]["ports"],
            json!([{"port": 80, "name": "http"}, {"port": 443, "name": "https", "targetPort": 8443}])
        );
        let owned = json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}]}});
        let out = smp(
            owned,
            json!({"metadata": {"ownerReferences": [{"uid": "2", "name": "b"}]}}),
        );
        assert_eq!(
            out["metadata"]["ownerReferences"],
            json!([{"uid": "2", "name": "b"}, {"uid": "1", "name": "a"}])
        );
        let status = json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}});
        let out = smp(
            status,
            json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
        );
        assert_eq!(
            out["status"]["conditions"],
            json!([{"type": "Ready", "status": "True"}])
        );
    }

    #[test]
    fn lists_without_a_strategy_are_replaced() {
        let role = json!({"rules": [{"verbs": ["get"]}, {"verbs": ["list"]}]});
        assert_eq!(
            smp(role, json!({"rules": [{"verbs": ["watch"]}]})),
            json!({"rules": [{"verbs": ["watch"]}]})
        );
        let sa = json!({"imagePullSecrets": [{"name": "a"}], "secrets": [{"name": "s"}]});
        let out = smp(
            sa,
            json!({"imagePullSecrets": [{"name": "b"}], "secrets": [{"name": "t"}]}),
        );
        assert_eq!(
            out,
            json!({"imagePullSecrets": [{"name": "b"}], "secrets": [{"name": "t"}, {"name": "s"}]})
        );
        let pod_spec = json!({"spec": {"tolerations": [{"key": "a"}]}});
        assert_eq!(
            smp(pod_spec, json!({"spec": {"tolerations": [{"key": "b"}]}})),
            json!({"spec": {"tolerations": [{"key": "b"}]}})
        );
    }

    #[test]
    fn strategic_patch_errors() {
        let live = pod(json!([{"name": "a"}]));
        let err = smp_error(live.clone(), json!(["x"]));
        assert_eq!(
            err,
            PatchError::BadRequest(
                "json: cannot unmarshal array into Go value of type map[string]interface {}".into()
            )
        );
        let err = smp_error(
            live.clone(),
            json!({"spec": {"containers": [{"image": "x"}]}}),
        );
        assert_eq!(
            err,
            PatchError::Internal(
                "map: map[image:x] does not contain declared merge key: name".into()
            )
        );
        assert_eq!(err.status_code(), 500);
        let err = smp_error(
            live.clone(),
            json!({"spec": {"containers": [{"name": "a", "$patch": "bogus"}]}}),
        );
        assert_eq!(
            err,
            PatchError::Internal(
                "unknown patch type: bogus in map: map[$patch:bogus name:a]".into()
            )
        );
        let err = smp_error(
            json!({"metadata": {"finalizers": [["a"]]}}),
            json!({"metadata": {"finalizers": [["b"]]}}),
        );
        assert_eq!(
            err,
            PatchError::Unprocessable("lists of lists are not supported".into())
        );
        let err = smp_error(
            live,
            json!({"metadata": {"$deleteFromPrimitiveList": ["a"]}}),
        );
        assert_eq!(
            err,
            PatchError::BadRequest("invalid patch format of primitive list".into())
        );
    }

    #[test]
    fn new_content_loses_nulls_and_directives() {
        let out = smp(
            json!({"spec": {}}),
            json!({"spec": {"template": {"metadata": {"labels": {"a": "1", "b": null}}, "$retainKeys": ["metadata"]}}}),
        );
        assert_eq!(
            out,
            json!({"spec": {"template": {"metadata": {"labels": {"a": "1"}}}}})
        );
    }
}
