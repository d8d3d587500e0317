//! CRD structural-schema enforcement as kube-apiserver does it: pruning, defaulting, validation.
//!
//! kube-apiserver handles a custom resource write in this order, and the emulator must too:
//! 1. [`prune`]: drop every field the schema does not declare (`apiextensions-apiserver`
//!    `schema/pruning`), reporting the dropped paths for `fieldValidation=Strict|Warn`
//!    (`unknown field "spec.foo"`);
//! 2. [`apply_defaults`]: drop `null`s of non-nullable fields that have no default, then apply
//!    `default`s where a field is absent or a non-nullable `null` (`schema/defaulting`);
//! 3. [`validate`]: the OpenAPI value validations of kube-openapi (`validation/validate`), then
//!    the embedded-resource checks (`schema/objectmeta`) and the `x-kubernetes-list-type`
//!    uniqueness checks (`schema/listtype`), with kube's field paths and error wording.
//!
//! At the object root `apiVersion`, `kind` and `metadata` are never pruned, defaulted or validated
//! here: the server validates metadata itself.
//!
//! Left out: CEL (`x-kubernetes-validations`), validation ratcheting on update, pruning/coercion of
//! the `metadata` of embedded resources, tuple `items`, `patternProperties`/`dependencies`, and the
//! `isbn*`/`creditcard`/`ssn`/`rgbcolor` formats (accepted unchecked).
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{LazyLock, Mutex};

use base64::Engine as _;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use regex::Regex;
use serde_json::{Map, Value};

/// Fields the server owns at the root of every object and in embedded resources.
const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// The machine-readable kind of a [`FieldError`] (apimachinery's `field.ErrorType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldErrorKind {
    Required,
    Invalid,
    NotSupported,
    TypeInvalid,
    TooLong,
    TooMany,
    Duplicate,
    Forbidden,
}

impl FieldErrorKind {
    /// The `Status.details.causes[].reason` kube reports for this kind.
    pub fn cause_reason(&self) -> &'static str {
        match self {
            Self::Required => "FieldValueRequired",
            Self::Invalid => "FieldValueInvalid",
            Self::NotSupported => "FieldValueNotSupported",
            Self::TypeInvalid => "FieldValueTypeInvalid",
            Self::TooLong => "FieldValueTooLong",
            Self::TooMany => "FieldValueTooMany",
            Self::Duplicate => "FieldValueDuplicate",
            Self::Forbidden => "FieldValueForbidden",
        }
    }

    /// The words kube's messages start with (`field.ErrorType.String()`).
    pub fn label(&self) -> &'static str {
        match self {
            Self::Required => "Required value",
            Self::Invalid | Self::TypeInvalid => "Invalid value",
            Self::NotSupported => "Unsupported value",
            Self::TooLong => "Too long",
            Self::TooMany => "Too many",
            Self::Duplicate => "Duplicate value",
            Self::Forbidden => "Forbidden",
        }
    }
}

/// One field-level validation error, as apimachinery's `field.Error` renders it.
///
/// `detail` is everything kube prints after `<field>: ` — what it puts in
/// `Status.details.causes[].message` — e.g. `Required value` or
/// `Invalid value: "x": spec.a in body should match '^[a-z]+$'`. Build it with the constructors,
/// which render values the way Go does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub kind: FieldErrorKind,
    pub detail: String,
}

impl FieldError {
    /// `<field>: <detail>`, kube's `field.Error.Error()`.
    pub fn message(&self) -> String {
        format!("{}: {}", self.field, self.detail)
    }

    /// An error whose message shows no value: `Required value`, `Forbidden`, `Too long`.
    pub fn without_value(field: &str, kind: FieldErrorKind, detail: &str) -> Self {
        let mut body = kind.label().to_string();
        if !detail.is_empty() {
            let _ = write!(body, ": {detail}");
        }
        Self {
            field: field.to_string(),
            kind,
            detail: body,
        }
    }

    /// An error that shows the offending value (`Invalid value: "x": ...`), rendered as Go's
    /// `field.Error` does: strings quoted, numbers and booleans bare, anything else as JSON.
    pub fn with_value(field: &str, kind: FieldErrorKind, value: &Value, detail: &str) -> Self {
        let mut body = format!("{}: {}", kind.label(), go_bad_value(value));
        if !detail.is_empty() {
            let _ = write!(body, ": {detail}");
        }
        Self {
            field: field.to_string(),
            kind,
            detail: body,
        }
    }

    /// `<field>: Required value[: detail]`.
    pub fn required(field: &str, detail: &str) -> Self {
        Self::without_value(field, FieldErrorKind::Required, detail)
    }

    /// `<field>: Invalid value: <value>: detail`.
    pub fn invalid(field: &str, value: &Value, detail: &str) -> Self {
        Self::with_value(field, FieldErrorKind::Invalid, value, detail)
    }

    /// `<field>: Forbidden: detail`.
    pub fn forbidden(field: &str, detail: &str) -> Self {
        Self::without_value(field, FieldErrorKind::Forbidden, detail)
    }

    /// `<field>: Duplicate value: <value>`.
    pub fn duplicate(field: &str, value: &Value) -> Self {
        Self::with_value(field, FieldErrorKind::Duplicate, value, "")
    }

    /// `<field>: Unsupported value: <value>: supported values: "a", "b"`.
    pub fn not_supported(field: &str, value: &Value, supported: &[String]) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::with_value(field, FieldErrorKind::NotSupported, value, &detail)
    }

    /// `<field>: Too long: may not be more than N bytes` (`field.TooLong`).
    pub fn too_long(field: &str, max: i64) -> Self {
        let unit = if max == 1 { "byte" } else { "bytes" };
        Self::without_value(
            field,
            FieldErrorKind::TooLong,
            &format!("may not be more than {max} {unit}"),
        )
    }

    /// `<field>: Too many: <actual>: must have at most N items` (`field.TooMany`).
    pub fn too_many(field: &str, actual: i64, max: i64) -> Self {
        let unit = if max == 1 { "item" } else { "items" };
        Self::with_value(
            field,
            FieldErrorKind::TooMany,
            &Value::from(actual),
            &format!("must have at most {max} {unit}"),
        )
    }
}

/// kube's `ErrorList.ToAggregate().Error()`: one message as is, several as `[a, b]`, duplicates
/// dropped. This is what follows `<Kind> "<name>" is invalid: ` in a 422 `Status`.
pub fn aggregate_message(errors: &[FieldError]) -> String {
    let mut seen = Vec::new();
    for e in errors {
        let m = e.message();
        if !seen.contains(&m) {
            seen.push(m);
        }
    }
    match seen.len() {
        0 => String::new(),
        1 => seen.remove(0),
        _ => format!("[{}]", seen.join(", ")),
    }
}

// ---------------------------------------------------------------------------------------------
// Schema accessors
// ---------------------------------------------------------------------------------------------

/// What a node says about keys it does not declare in `properties`.
#[derive(Clone, Copy)]
enum Additional<'a> {
    /// No `additionalProperties`: unknown keys are pruned.
    Absent,
    /// `additionalProperties: <schema>`.
    Schema(&'a JSONSchemaProps),
    /// `additionalProperties: true|false`: kube keeps the keys but has no schema for their values.
    Schemaless,
}

fn additional(schema: &JSONSchemaProps) -> Additional<'_> {
    match &schema.additional_properties {
        None => Additional::Absent,
        Some(JSONSchemaPropsOrBool::Schema(s)) => Additional::Schema(s),
        Some(JSONSchemaPropsOrBool::Bool(_)) => Additional::Schemaless,
    }
}

fn property<'a>(schema: &'a JSONSchemaProps, key: &str) -> Option<&'a JSONSchemaProps> {
    schema.properties.as_ref().and_then(|p| p.get(key))
}

/// The schema of an undeclared-or-declared key: its property, else `additionalProperties`.
fn field_schema<'a>(schema: &'a JSONSchemaProps, key: &str) -> Option<&'a JSONSchemaProps> {
    property(schema, key).or(match additional(schema) {
        Additional::Schema(s) => Some(s),
        Additional::Absent | Additional::Schemaless => None,
    })
}

/// The single `items` schema; tuple `items` are not structural and are ignored.
fn items(schema: &JSONSchemaProps) -> Option<&JSONSchemaProps> {
    match &schema.items {
        Some(JSONSchemaPropsOrArray::Schema(s)) => Some(s),
        Some(JSONSchemaPropsOrArray::Schemas(_)) | None => None,
    }
}

fn nullable(schema: &JSONSchemaProps) -> bool {
    schema.nullable == Some(true)
}

fn preserves_unknown(schema: &JSONSchemaProps) -> bool {
    schema.x_kubernetes_preserve_unknown_fields == Some(true)
}

fn embedded(schema: &JSONSchemaProps) -> bool {
    schema.x_kubernetes_embedded_resource == Some(true)
}

/// The default value, if any; `default: null` counts as none (as kube's `Default.Object == nil`).
fn default_value(schema: &JSONSchemaProps) -> Option<&Value> {
    schema
        .default
        .as_ref()
        .map(|d| &d.0)
        .filter(|v| !v.is_null())
}

/// The types kube-openapi checks: int-or-string becomes `integer,string`.
fn schema_types(schema: &JSONSchemaProps) -> Vec<&str> {
    if schema.x_kubernetes_int_or_string == Some(true) {
        return vec!["integer", "string"];
    }
    match schema.type_.as_deref() {
        Some(t) if !t.is_empty() => vec![t],
        _ => Vec::new(),
    }
}

fn is_meta_at_root(is_root: bool, key: &str) -> bool {
    is_root && META_FIELDS.contains(&key)
}

// ---------------------------------------------------------------------------------------------
// Pruning
// ---------------------------------------------------------------------------------------------

/// Removes the fields `schema` does not declare and returns their paths, sorted, the way kube
/// reports them for `fieldValidation` (`spec.foo`, `spec.items[0].bar`; no leading dot).
///
/// `x-kubernetes-preserve-unknown-fields` keeps unknown keys at that node (declared properties
/// below it are still pruned); `x-kubernetes-embedded-resource` keeps `apiVersion`, `kind` and
/// `metadata` of that object. `null`s are left alone here: [`apply_defaults`] handles them.
pub fn prune(schema: &JSONSchemaProps, object: &mut Value) -> Vec<String> {
    let mut pruned = Vec::new();
    // The root is always treated as an embedded resource (kube's `isResourceRoot`).
    prune_node(Some(schema), true, object, "", &mut pruned);
    pruned.sort();
    pruned
}

fn child_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn prune_node(
    schema: Option<&JSONSchemaProps>,
    force_embedded: bool,
    value: &mut Value,
    path: &str,
    pruned: &mut Vec<String>,
) {
    if let Some(s) = schema.filter(|s| preserves_unknown(s)) {
        skip_prune(Some(s), force_embedded, value, path, pruned);
        return;
    }
    match value {
        Value::Object(map) => {
            let Some(s) = schema else {
                // No schema at all below here: every key is unknown.
                pruned.extend(map.keys().map(|k| child_path(path, k)));
                map.clear();
                return;
            };
            let is_embedded = force_embedded || embedded(s);
            let keys: Vec<String> = map.keys().cloned().collect();
            for key in keys {
                if is_embedded && META_FIELDS.contains(&key.as_str()) {
                    continue;
                }
                let sub = child_path(path, &key);
                if let Some(prop) = property(s, &key) {
                    if let Some(v) = map.get_mut(&key) {
                        prune_node(Some(prop), false, v, &sub, pruned);
                    }
                } else {
                    match additional(s) {
                        Additional::Schema(a) => {
                            if let Some(v) = map.get_mut(&key) {
                                prune_node(Some(a), false, v, &sub, pruned);
                            }
                        }
                        Additional::Schemaless => {
                            if let Some(v) = map.get_mut(&key) {
                                prune_node(None, false, v, &sub, pruned);
                            }
                        }
                        Additional::Absent => {
                            pruned.push(sub);
                            map.shift_remove(&key);
                        }
                    }
                }
            }
        }
        Value::Array(list) => {
            let item_schema = schema.and_then(items);
            for (i, v) in list.iter_mut().enumerate() {
                prune_node(item_schema, false, v, &format!("{path}[{i}]"), pruned);
            }
        }
        _ => {}
    }
}

/// A `x-kubernetes-preserve-unknown-fields` node: keep unknown keys, prune below declared ones.
fn skip_prune(
    schema: Option<&JSONSchemaProps>,
    force_embedded: bool,
    value: &mut Value,
    path: &str,
    pruned: &mut Vec<String>,
) {
    let Some(s) = schema else { return };
    match value {
        Value::Object(map) => {
            let is_embedded = force_embedded || embedded(s);
            for (key, v) in map.iter_mut() {
                if is_embedded && META_FIELDS.contains(&key.as_str()) {
                    continue;
                }
                let sub = child_path(path, key);
                if let Some(prop) = property(s, key) {
                    prune_node(Some(prop), false, v, &sub, pruned);
                } else {
                    match additional(s) {
                        Additional::Schema(a) => prune_node(Some(a), false, v, &sub, pruned),
                        Additional::Schemaless => prune_node(None, false, v, &sub, pruned),
                        Additional::Absent => {}
                    }
                }
            }
        }
        Value::Array(list) => {
            for (i, v) in list.iter_mut().enumerate() {
                skip_prune(items(s), false, v, &format!("{path}[{i}]"), pruned);
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Defaulting
// ---------------------------------------------------------------------------------------------

/// Applies `default`s as kube does on create/update (and on read): first `null`s of non-nullable
/// fields without a default are dropped, then a field that is absent — or `null` while not
/// nullable — gets its default, recursively (so a defaulted `{}` gets its own fields' defaults).
/// Defaults apply inside `properties`, `additionalProperties` and array `items`.
pub fn apply_defaults(schema: &JSONSchemaProps, object: &mut Value) {
    prune_non_nullable_nulls(Some(schema), object, true);
    default_node(schema, object, true);
}

fn prune_non_nullable_nulls(schema: Option<&JSONSchemaProps>, value: &mut Value, is_root: bool) {
    match value {
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for key in keys {
                if is_meta_at_root(is_root, &key) {
                    continue;
                }
                let sub = schema.and_then(|s| field_schema(s, &key));
                let drop = map.get(&key).is_some_and(Value::is_null)
                    && sub.is_some_and(|s| !nullable(s) && default_value(s).is_none());
                if drop {
                    map.shift_remove(&key);
                } else if let Some(v) = map.get_mut(&key) {
                    prune_non_nullable_nulls(sub, v, false);
                }
            }
        }
        Value::Array(list) => {
            let item_schema = schema.and_then(items);
            for v in list {
                prune_non_nullable_nulls(item_schema, v, false);
            }
        }
        _ => {}
    }
}

fn default_node(schema: &JSONSchemaProps, value: &mut Value, is_root: bool) {
    match value {
        Value::Object(map) => {
            if let Some(props) = &schema.properties {
                for (key, prop) in props {
                    if is_meta_at_root(is_root, key) {
                        continue;
                    }
                    let Some(default) = default_value(prop) else {
                        continue;
                    };
                    let needs_default = match map.get(key) {
                        None => true,
                        Some(v) => v.is_null() && !nullable(prop),
                    };
                    if needs_default {
                        map.insert(key.clone(), default.clone());
                    }
                }
            }
            for (key, v) in map.iter_mut() {
                if is_meta_at_root(is_root, key) {
                    continue;
                }
                if let Some(prop) = property(schema, key) {
                    default_node(prop, v, false);
                } else if let Additional::Schema(a) = additional(schema) {
                    if v.is_null()
                        && !nullable(a)
                        && let Some(d) = default_value(a)
                    {
                        *v = d.clone();
                    }
                    default_node(a, v, false);
                }
            }
        }
        Value::Array(list) => {
            if let Some(item_schema) = items(schema) {
                for v in list {
                    if v.is_null()
                        && !nullable(item_schema)
                        && let Some(d) = default_value(item_schema)
                    {
                        *v = d.clone();
                    }
                    default_node(item_schema, v, false);
                }
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------------

/// Validates `object` against `schema` the way kube-apiserver validates a custom resource,
/// returning kube's field errors in a deterministic order (schema order, then object order).
pub fn validate(schema: &JSONSchemaProps, object: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    validate_node(schema, object, "", true, &mut errors);
    validate_embedded(schema, object, "", true, &mut errors);
    validate_list_types(schema, object, "", true, &mut errors);
    errors
}

/// The field of a kube-openapi error: its name without the leading dot; `<nil>` at the root
/// (kube builds the path with `field.NewPath` from a nil parent).
fn openapi_field(name: &str) -> String {
    if name.is_empty() || name == "." {
        "<nil>".to_string()
    } else {
        name.strip_prefix('.').unwrap_or(name).to_string()
    }
}

/// The JSON type kube-openapi infers for a value; integers beyond int64 decode as float64.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_integral_float(value: &Value) -> bool {
    matches!(value, Value::Number(n) if !n.is_i64() && n.as_f64().is_some_and(|f| f.fract() == 0.0 && f.is_finite()))
}

/// One kube-openapi `SchemaValidator` pass over a node: type, allOf/anyOf/oneOf/not, string,
/// format, number, array, enum, object — in that order, as kube runs them.
fn validate_node(
    schema: &JSONSchemaProps,
    value: &Value,
    name: &str,
    is_root: bool,
    errors: &mut Vec<FieldError>,
) {
    let types = schema_types(schema);
    if value.is_null() {
        if !types.is_empty() && !nullable(schema) {
            errors.push(type_error(name, &types.join(","), "null"));
        }
        check_enum(schema, value, name, errors);
        return;
    }
    check_type(schema, &types, value, name, errors);
    check_composition(schema, value, name, errors);
    if let Value::String(s) = value {
        check_string(schema, s, name, errors);
        check_format(schema, s, name, errors);
    }
    if let Value::Number(_) = value {
        check_number(schema, value, name, errors);
    }
    if let Value::Array(list) = value {
        check_array(schema, list, name, errors);
    }
    check_enum(schema, value, name, errors);
    if let Value::Object(map) = value {
        check_object(schema, map, name, is_root, errors);
    }
}

fn type_error(name: &str, expected: &str, actual: &str) -> FieldError {
    FieldError::with_value(
        &openapi_field(name),
        FieldErrorKind::TypeInvalid,
        &Value::String(actual.to_string()),
        &format!(
            "{name} in body must be of type {expected}: {}",
            go_quote(actual)
        ),
    )
}

fn check_type(
    schema: &JSONSchemaProps,
    types: &[&str],
    value: &Value,
    name: &str,
    errors: &mut Vec<FieldError>,
) {
    if types.is_empty() {
        return;
    }
    let numeric = types.iter().any(|t| *t == "integer" || *t == "number");
    // kube-openapi skips the type check of strings/arrays on non-numeric formatted schemas.
    let has_format = schema.format.as_deref().is_some_and(|f| !f.is_empty());
    if !numeric && has_format && matches!(value, Value::String(_) | Value::Array(_)) {
        return;
    }
    let actual = json_type(value);
    let accepted = types.contains(&actual)
        || (actual == "number" && types.contains(&"integer") && is_integral_float(value))
        || (actual == "integer" && types.contains(&"number"));
    if !accepted {
        errors.push(type_error(name, &types.join(","), actual));
    }
}

/// A kube-openapi composite error: not a `*Validation`, so kube reports it at field `<nil>`.
fn composite_error(detail: String) -> FieldError {
    FieldError::invalid("<nil>", &Value::String(String::new()), &detail)
}

fn sub_errors(schema: &JSONSchemaProps, value: &Value, name: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    validate_node(schema, value, name, false, &mut errs);
    errs
}

fn check_composition(
    schema: &JSONSchemaProps,
    value: &Value,
    name: &str,
    errors: &mut Vec<FieldError>,
) {
    let quoted = go_quote(name);
    if let Some(any_of) = schema.any_of.as_ref().filter(|v| !v.is_empty()) {
        let results: Vec<Vec<FieldError>> =
            any_of.iter().map(|s| sub_errors(s, value, name)).collect();
        if !results.iter().any(Vec::is_empty) {
            errors.push(composite_error(format!(
                "{quoted} must validate at least one schema (anyOf)"
            )));
            if let Some(best) = results.into_iter().min_by_key(Vec::len) {
                errors.extend(best);
            }
        }
    }
    if let Some(one_of) = schema.one_of.as_ref().filter(|v| !v.is_empty()) {
        let results: Vec<Vec<FieldError>> =
            one_of.iter().map(|s| sub_errors(s, value, name)).collect();
        let valid = results.iter().filter(|r| r.is_empty()).count();
        if valid != 1 {
            let found = if valid == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {valid} valid alternatives")
            };
            errors.push(composite_error(format!(
                "{quoted} must validate one and only one schema (oneOf). {found}"
            )));
            if valid == 0
                && let Some(best) = results.into_iter().min_by_key(Vec::len)
            {
                errors.extend(best);
            }
        }
    }
    if let Some(all_of) = schema.all_of.as_ref().filter(|v| !v.is_empty()) {
        let mut valid = 0;
        for s in all_of {
            let errs = sub_errors(s, value, name);
            if errs.is_empty() {
                valid += 1;
            }
            errors.extend(errs);
        }
        if valid != all_of.len() {
            let none = if valid == 0 { ". None validated" } else { "" };
            errors.push(composite_error(format!(
                "{quoted} must validate all the schemas (allOf){none}"
            )));
        }
    }
    if let Some(not) = &schema.not
        && sub_errors(not, value, name).is_empty()
    {
        errors.push(composite_error(format!(
            "{quoted} must not validate the schema (not)"
        )));
    }
}

static PATTERN_CACHE: LazyLock<Mutex<HashMap<String, Result<Regex, String>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Compiles (once) a schema `pattern`.
fn compiled_pattern(pattern: &str) -> Result<Regex, String> {
    if let Ok(mut cache) = PATTERN_CACHE.lock() {
        return cache
            .entry(pattern.to_string())
            .or_insert_with(|| Regex::new(pattern).map_err(|e| e.to_string()))
            .clone();
    }
    Regex::new(pattern).map_err(|e| e.to_string())
}

/// maxLength, minLength, pattern; kube stops at the first failure. Lengths count characters.
fn check_string(schema: &JSONSchemaProps, s: &str, name: &str, errors: &mut Vec<FieldError>) {
    let len = i64::try_from(s.chars().count()).unwrap_or(i64::MAX);
    let field = openapi_field(name);
    if let Some(max) = schema.max_length
        && len > max
    {
        errors.push(FieldError::too_long(&field, max));
        return;
    }
    if let Some(min) = schema.min_length
        && len < min
    {
        errors.push(FieldError::invalid(
            &field,
            &Value::String(s.to_string()),
            &format!("{name} in body should be at least {min} chars long"),
        ));
        return;
    }
    if let Some(pattern) = schema.pattern.as_deref().filter(|p| !p.is_empty()) {
        let failure = match compiled_pattern(pattern) {
            Ok(re) if re.is_match(s) => None,
            Ok(_) => Some(pattern.to_string()),
            Err(e) => Some(format!("{pattern}, but pattern is invalid: {e}")),
        };
        if let Some(shown) = failure {
            errors.push(FieldError::invalid(
                &field,
                &Value::String(s.to_string()),
                &format!("{name} in body should match '{shown}'"),
            ));
        }
    }
}

fn check_format(schema: &JSONSchemaProps, s: &str, name: &str, errors: &mut Vec<FieldError>) {
    let Some(format) = schema.format.as_deref().filter(|f| !f.is_empty()) else {
        return;
    };
    if string_format_valid(format, s) == Some(false) {
        errors.push(FieldError::with_value(
            &openapi_field(name),
            FieldErrorKind::TypeInvalid,
            &Value::String(s.to_string()),
            &format!("{name} in body must be of type {format}: {}", go_quote(s)),
        ));
    }
}

fn compile(pattern: &str) -> Option<Regex> {
    Regex::new(pattern).ok()
}

static UUID: LazyLock<Option<Regex>> = LazyLock::new(|| {
    compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static UUID3: LazyLock<Option<Regex>> = LazyLock::new(|| {
    compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static UUID4: LazyLock<Option<Regex>> = LazyLock::new(|| {
    compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static UUID5: LazyLock<Option<Regex>> = LazyLock::new(|| {
    compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static HOSTNAME: LazyLock<Option<Regex>> = LazyLock::new(|| {
    compile(
        r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9\-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$",
    )
});
static DATE: LazyLock<Option<Regex>> = LazyLock::new(|| compile(r"^\d{4}-\d{2}-\d{2}$"));
static MAC: LazyLock<Option<Regex>> = LazyLock::new(|| {
    compile(
        r"^([0-9a-fA-F]{2}([:-])[0-9a-fA-F]{2}(([:-])[0-9a-fA-F]{2}){4}(([:-])[0-9a-fA-F]{2}){0,2}|[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}(\.[0-9a-fA-F]{4})?)$",
    )
});
static GO_DURATION: LazyLock<Option<Regex>> =
    LazyLock::new(|| compile(r"^[-+]?(0|((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+)$"));
static WORD_DURATION: LazyLock<Option<Regex>> = LazyLock::new(|| {
    compile(
        r"^\s*\d+\s*(ns|us|µs|ms|s|m|h|d|w|nanoseconds?|microseconds?|milliseconds?|seconds?|minutes?|hours?|days?|weeks?|sec|min|hr)\s*$",
    )
});
static QUANTITY: LazyLock<Option<Regex>> =
    LazyLock::new(|| compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[numkMGTPE]|[eE][+-]?\d+)?$"));
static HEX_COLOR: LazyLock<Option<Regex>> =
    LazyLock::new(|| compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static BSON_OBJECT_ID: LazyLock<Option<Regex>> = LazyLock::new(|| compile(r"^[0-9a-fA-F]{24}$"));
static EMAIL: LazyLock<Option<Regex>> =
    LazyLock::new(|| compile(r"^([^<>@\s]+@[^<>@\s]+|[^<>]*<[^<>@\s]+@[^<>@\s]+>)$"));
static URI: LazyLock<Option<Regex>> =
    LazyLock::new(|| compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*:\S*|/\S*)$"));

fn re_match(re: &LazyLock<Option<Regex>>, s: &str) -> bool {
    re.as_ref().is_some_and(|r| r.is_match(s))
}

/// Whether `s` is a valid string of the CRD `format`; `None` for formats kube does not check
/// (or that this emulator accepts unchecked). Format names are normalised without dashes, as
/// go-openapi's registry does.
fn string_format_valid(format: &str, s: &str) -> Option<bool> {
    let normalized = format.replace('-', "");
    let ok = match normalized.as_str() {
        "datetime" => chrono::DateTime::parse_from_rfc3339(s).is_ok() && s.contains('T'),
        "date" => re_match(&DATE, s) && chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok(),
        "uuid" => re_match(&UUID, s),
        "uuid3" => re_match(&UUID3, s),
        "uuid4" => re_match(&UUID4, s),
        "uuid5" => re_match(&UUID5, s),
        "ipv4" => s.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => s.contains(':') && s.parse::<std::net::IpAddr>().is_ok(),
        "cidr" => s.split_once('/').is_some_and(|(ip, bits)| {
            let max = match ip.parse::<std::net::IpAddr>() {
                Ok(std::net::IpAddr::V4(_)) => 32,
                Ok(std::net::IpAddr::V6(_)) => 128,
                Err(_) => return false,
            };
            bits.parse::<u8>().is_ok_and(|b| b <= max) && !bits.starts_with('+')
        }),
        "hostname" => s.len() <= 255 && re_match(&HOSTNAME, s),
        "byte" => base64::engine::general_purpose::STANDARD.decode(s).is_ok(),
        "mac" => re_match(&MAC, s),
        "duration" => re_match(&GO_DURATION, s) || re_match(&WORD_DURATION, s),
        "quantity" => re_match(&QUANTITY, s),
        "hexcolor" => re_match(&HEX_COLOR, s),
        "bsonobjectid" => re_match(&BSON_OBJECT_ID, s),
        "email" => re_match(&EMAIL, s),
        "uri" => re_match(&URI, s),
        "password" => true,
        _ => return None,
    };
    Some(ok)
}

/// multipleOf, maximum, minimum — all reported. Integers compare against the bound truncated to
/// an integer and print it as one (kube-openapi's `*NativeType` helpers).
fn check_number(schema: &JSONSchemaProps, value: &Value, name: &str, errors: &mut Vec<FieldError>) {
    let field = openapi_field(name);
    let as_int = value.as_i64();
    let as_float = value.as_f64().unwrap_or(0.0);
    let bound_text = |bound: f64| match as_int {
        // Truncation toward zero is what Go's int64(float64) conversion does.
        Some(_) => format!("{}", bound.trunc()),
        None => go_float(bound),
    };
    if let Some(factor) = schema.multiple_of {
        let is_multiple = match as_int {
            // Go checks integers against int64(factor), which truncates.
            Some(i) if factor.trunc() != 0.0 => i % (factor.trunc() as i64) == 0,
            _ => {
                let quotient = if factor < 1.0 {
                    (1.0 / factor) * as_float
                } else {
                    as_float / factor
                };
                (quotient - quotient.round()).abs() < 1e-9
            }
        };
        if !is_multiple {
            errors.push(FieldError::invalid(
                &field,
                value,
                &format!(
                    "{name} in body should be a multiple of {}",
                    bound_text(factor)
                ),
            ));
        }
    }
    if let Some(max) = schema.maximum {
        let exclusive = schema.exclusive_maximum == Some(true);
        let exceeds = match as_int {
            Some(i) => {
                let (i, m) = (i as f64, max.trunc());
                if exclusive { i >= m } else { i > m }
            }
            None => {
                if exclusive {
                    as_float >= max
                } else {
                    as_float > max
                }
            }
        };
        if exceeds {
            let relation = if exclusive {
                "less than"
            } else {
                "less than or equal to"
            };
            errors.push(FieldError::invalid(
                &field,
                value,
                &format!("{name} in body should be {relation} {}", bound_text(max)),
            ));
        }
    }
    if let Some(min) = schema.minimum {
        let exclusive = schema.exclusive_minimum == Some(true);
        let below = match as_int {
            Some(i) => {
                let (i, m) = (i as f64, min.trunc());
                if exclusive { i <= m } else { i < m }
            }
            None => {
                if exclusive {
                    as_float <= min
                } else {
                    as_float < min
                }
            }
        };
        if below {
            let relation = if exclusive {
                "greater than"
            } else {
                "greater than or equal to"
            };
            errors.push(FieldError::invalid(
                &field,
                value,
                &format!("{name} in body should be {relation} {}", bound_text(min)),
            ));
        }
    }
}

/// Items first, then minItems, maxItems, uniqueItems (kube-openapi's order).
fn check_array(schema: &JSONSchemaProps, list: &[Value], name: &str, errors: &mut Vec<FieldError>) {
    if let Some(item_schema) = items(schema) {
        for (i, v) in list.iter().enumerate() {
            validate_node(item_schema, v, &format!("{name}[{i}]"), false, errors);
        }
    }
    let size = i64::try_from(list.len()).unwrap_or(i64::MAX);
    let field = openapi_field(name);
    if let Some(min) = schema.min_items
        && size < min
    {
        errors.push(FieldError::invalid(
            &field,
            &Value::from(size),
            &format!("{name} in body should have at least {min} items"),
        ));
    }
    if let Some(max) = schema.max_items
        && size > max
    {
        errors.push(FieldError::too_many(&field, size, max));
    }
    if schema.unique_items == Some(true) {
        let has_duplicate = list
            .iter()
            .enumerate()
            .any(|(i, a)| list[..i].iter().any(|b| json_equal(a, b)));
        if has_duplicate {
            errors.push(FieldError::invalid(
                &field,
                &Value::String(String::new()),
                &format!("{name} in body shouldn't contain duplicates"),
            ));
        }
    }
}

/// JSON equality where numbers compare by value (Go converts int64 to float64 to compare).
pub(crate) fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

fn check_enum(schema: &JSONSchemaProps, value: &Value, name: &str, errors: &mut Vec<FieldError>) {
    let Some(allowed) = schema.enum_.as_ref().filter(|e| !e.is_empty()) else {
        return;
    };
    // A null never matches (kube-openapi cannot convert a nil value to the enum's type).
    if !value.is_null()
        && allowed
            .iter()
            .any(|e| !e.0.is_null() && json_equal(value, &e.0))
    {
        return;
    }
    let supported: Vec<String> = allowed
        .iter()
        .map(|e| match &e.0 {
            Value::String(s) => s.clone(),
            other => go_json(other),
        })
        .collect();
    errors.push(FieldError::not_supported(
        &openapi_field(name),
        value,
        &supported,
    ));
}

fn check_object(
    schema: &JSONSchemaProps,
    map: &Map<String, Value>,
    name: &str,
    is_root: bool,
    errors: &mut Vec<FieldError>,
) {
    let field = openapi_field(name);
    let size = i64::try_from(map.len()).unwrap_or(i64::MAX);
    // kube-openapi returns early on a property-count failure.
    if let Some(min) = schema.min_properties
        && size < min
    {
        errors.push(FieldError::invalid(
            &field,
            &Value::from(size),
            &format!("{name} in body should have at least {min} properties"),
        ));
        return;
    }
    if let Some(max) = schema.max_properties
        && size > max
    {
        errors.push(FieldError::too_many(&field, size, max));
        return;
    }
    let declared = |k: &str| property(schema, k).is_some();
    match &schema.additional_properties {
        Some(JSONSchemaPropsOrBool::Bool(false)) => {
            for key in map.keys() {
                if !declared(key) && !is_meta_at_root(is_root, key) {
                    errors.push(FieldError::invalid(
                        &field,
                        &Value::String(key.clone()),
                        &format!("{name}.{key} in body is a forbidden property"),
                    ));
                }
            }
        }
        Some(JSONSchemaPropsOrBool::Schema(a)) => {
            for (key, v) in map {
                if !declared(key) && !is_meta_at_root(is_root, key) {
                    validate_node(a, v, &format!("{name}.{key}"), false, errors);
                }
            }
        }
        Some(JSONSchemaPropsOrBool::Bool(true)) | None => {}
    }
    if let Some(props) = &schema.properties {
        for (key, prop) in props {
            if is_meta_at_root(is_root, key) {
                continue;
            }
            if let Some(v) = map.get(key) {
                let child = if name.is_empty() {
                    key.clone()
                } else {
                    format!("{name}.{key}")
                };
                validate_node(prop, v, &child, false, errors);
            }
        }
    }
    for key in schema.required.iter().flatten() {
        if !map.contains_key(key) && !is_meta_at_root(is_root, key) {
            errors.push(FieldError::required(
                &openapi_field(&format!("{name}.{key}")),
                "",
            ));
        }
    }
}

/// apimachinery `field.Path` rendering: `a.b`, `a[key]`, `a[0]`.
fn path_child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// kube's `schema/objectmeta` checks of `x-kubernetes-embedded-resource` objects below the root:
/// `apiVersion` and `kind` are required strings, `kind` a (mixed-case) DNS-1035 label.
fn validate_embedded(
    schema: &JSONSchemaProps,
    value: &Value,
    path: &str,
    is_root: bool,
    errors: &mut Vec<FieldError>,
) {
    match value {
        Value::Object(map) => {
            if embedded(schema) && !is_root {
                check_embedded_type_meta(map, path, errors);
            }
            for (key, v) in map {
                if is_meta_at_root(is_root, key) {
                    continue;
                }
                if let Some(prop) = property(schema, key) {
                    validate_embedded(prop, v, &path_child(path, key), false, errors);
                } else if let Additional::Schema(a) = additional(schema) {
                    validate_embedded(a, v, &format!("{path}[{key}]"), false, errors);
                }
            }
        }
        Value::Array(list) => {
            if let Some(item_schema) = items(schema) {
                for (i, v) in list.iter().enumerate() {
                    validate_embedded(item_schema, v, &format!("{path}[{i}]"), false, errors);
                }
            }
        }
        _ => {}
    }
}

static DNS1035_LABEL: LazyLock<Option<Regex>> =
    LazyLock::new(|| compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$"));

fn check_embedded_type_meta(map: &Map<String, Value>, path: &str, errors: &mut Vec<FieldError>) {
    let api_version_path = path_child(path, "apiVersion");
    let kind_path = path_child(path, "kind");
    match map.get("apiVersion") {
        None => errors.push(FieldError::required(&api_version_path, "")),
        Some(Value::String(v)) if v.is_empty() => {
            errors.push(FieldError::required(&api_version_path, ""))
        }
        Some(Value::String(v)) => {
            if v.matches('/').count() > 1 {
                errors.push(FieldError::invalid(
                    &api_version_path,
                    &Value::String(v.clone()),
                    &format!("unexpected GroupVersion string: {v}"),
                ));
            }
        }
        Some(other) => errors.push(FieldError::invalid(
            &api_version_path,
            other,
            "must be a string",
        )),
    }
    match map.get("kind") {
        None => errors.push(FieldError::required(&kind_path, "")),
        Some(Value::String(k)) if k.is_empty() => errors.push(FieldError::required(&kind_path, "")),
        Some(Value::String(k)) => {
            let lower = k.to_lowercase();
            let mut problems = Vec::new();
            if lower.len() > 63 {
                problems.push("must be no more than 63 characters".to_string());
            }
            if !re_match(&DNS1035_LABEL, &lower) {
                problems.push(
                    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an \
                     alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', \
                     regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
                        .to_string(),
                );
            }
            if !problems.is_empty() {
                errors.push(FieldError::invalid(
                    &kind_path,
                    &Value::String(k.clone()),
                    &format!(
                        "may have mixed case, but should otherwise match: {}",
                        problems.join(",")
                    ),
                ));
            }
        }
        Some(other) => errors.push(FieldError::invalid(&kind_path, other, "must be a string")),
    }
}

/// kube's `schema/listtype`: `x-kubernetes-list-type: set` elements and `map` keys must be unique.
fn validate_list_types(
    schema: &JSONSchemaProps,
    value: &Value,
    path: &str,
    is_root: bool,
    errors: &mut Vec<FieldError>,
) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                if is_meta_at_root(is_root, key) {
                    continue;
                }
                if let Additional::Schema(a) = additional(schema) {
                    validate_list_types(a, v, &format!("{path}[{key}]"), false, errors);
                }
                if let Some(prop) = property(schema, key) {
                    validate_list_types(prop, v, &path_child(path, key), false, errors);
                }
            }
        }
        Value::Array(list) => {
            match schema.x_kubernetes_list_type.as_deref() {
                Some("set") => {
                    for i in first_repeats(list) {
                        errors.push(FieldError::duplicate(&format!("{path}[{i}]"), &list[i]));
                    }
                }
                Some("map") => check_list_map(schema, list, path, errors),
                _ => {}
            }
            if let Some(item_schema) = items(schema) {
                for (i, v) in list.iter().enumerate() {
                    validate_list_types(item_schema, v, &format!("{path}[{i}]"), false, errors);
                }
            }
        }
        _ => {}
    }
}

/// Indices of the second occurrence of each repeated element (kube reports each value once).
fn first_repeats(list: &[Value]) -> Vec<usize> {
    let mut result = Vec::new();
    for (i, v) in list.iter().enumerate() {
        let earlier = list[..i].iter().filter(|w| json_equal(v, w)).count();
        if earlier == 1 {
            result.push(i);
        }
    }
    result
}

fn check_list_map(
    schema: &JSONSchemaProps,
    list: &[Value],
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    for (i, v) in list.iter().enumerate() {
        if !v.is_null() && !v.is_object() {
            errors.push(FieldError::invalid(
                &format!("{path}[{i}]"),
                v,
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    let key_fields: Vec<&String> = schema.x_kubernetes_list_map_keys.iter().flatten().collect();
    let keys: Vec<Value> = list
        .iter()
        .map(|v| {
            let mut key = Map::new();
            if let Some(obj) = v.as_object() {
                for k in &key_fields {
                    if let Some(x) = obj.get(k.as_str()) {
                        key.insert((*k).clone(), x.clone());
                    }
                }
            }
            Value::Object(key)
        })
        .collect();
    for i in first_repeats(&keys) {
        errors.push(FieldError::duplicate(&format!("{path}[{i}]"), &keys[i]));
    }
}

// ---------------------------------------------------------------------------------------------
// Go formatting, so messages read exactly like kube's
// ---------------------------------------------------------------------------------------------

/// Go's `strconv.Quote`, shared with the label-selector engine's messages.
pub(crate) use crate::api::common::go_quote;

/// The digits and decimal exponent of the shortest round-trip representation of `f`.
fn shortest_digits(f: f64) -> (String, i32) {
    // Rust's `{:e}` is the shortest representation that round-trips, like Go's.
    let repr = format!("{:e}", f.abs());
    let (mantissa, exponent) = repr.split_once('e').unwrap_or((repr.as_str(), "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (digits, exponent.parse().unwrap_or(0))
}

fn format_float(f: f64, use_exponent: bool) -> String {
    if f == 0.0 {
        return "0".to_string();
    }
    let sign = if f < 0.0 { "-" } else { "" };
    let (digits, exp) = shortest_digits(f);
    if use_exponent {
        let (first, rest) = digits.split_at(1);
        let mantissa = if rest.is_empty() {
            first.to_string()
        } else {
            format!("{first}.{rest}")
        };
        let exp_sign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{mantissa}e{exp_sign}{:02}", exp.abs());
    }
    let point = exp + 1; // digits before the decimal point
    let body = if point <= 0 {
        format!(
            "0.{}{digits}",
            "0".repeat(usize::try_from(-point).unwrap_or(0))
        )
    } else {
        let point = usize::try_from(point).unwrap_or(0);
        if digits.len() <= point {
            format!("{digits}{}", "0".repeat(point - digits.len()))
        } else {
            format!("{}.{}", &digits[..point], &digits[point..])
        }
    };
    format!("{sign}{body}")
}

/// Go's `%v` of a float64 (`%g` with the shortest precision): `1.5`, `1e+06`, `1e-05`.
pub(crate) fn go_float(f: f64) -> String {
    if !f.is_finite() {
        return if f.is_nan() {
            "NaN".into()
        } else if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return "0".to_string();
    }
    let (_, exp) = shortest_digits(f);
    format_float(f, !(-4..6).contains(&exp))
}

/// Go's `encoding/json` rendering of a float64: plain unless tiny or huge.
fn go_json_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let s = format_float(f, true);
        // encoding/json trims `e-07` to `e-7` (negative exponents only).
        return s.replace("e-0", "e-");
    }
    format_float(f, false)
}

fn go_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn go_json_into(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => {
                let _ = write!(out, "{i}");
            }
            (None, Some(u)) => {
                let _ = write!(out, "{u}");
            }
            _ => out.push_str(&go_json_float(n.as_f64().unwrap_or(0.0))),
        },
        Value::String(s) => go_json_string(s, out),
        Value::Array(list) => {
            out.push('[');
            for (i, v) in list.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json_into(v, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // Go marshals maps with sorted keys.
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json_string(k, out);
                out.push(':');
                if let Some(v) = map.get(k) {
                    go_json_into(v, out);
                }
            }
            out.push('}');
        }
    }
}

/// Go's `json.Marshal` of a decoded JSON value: sorted keys, HTML-safe escapes.
pub(crate) fn go_json(value: &Value) -> String {
    let mut out = String::new();
    go_json_into(value, &mut out);
    out
}

/// How `field.Error` prints a bad value: `%v` for numbers and booleans, `%q` for strings, JSON
/// otherwise.
fn go_bad_value(value: &Value) -> String {
    match value {
        Value::String(s) => go_quote(s),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(u)) => u.to_string(),
            _ => go_float(n.as_f64().unwrap_or(0.0)),
        },
        other => go_json(other),
    }
}

/// Go's `%v` of a decoded JSON value, as error messages built with `fmt` print it: maps as
/// `map[k:v]` with sorted keys, slices as `[a b]`, strings bare, nil as `<nil>`; numbers are
/// float64 as `encoding/json` decodes them into `interface{}`.
pub(crate) fn go_v(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_float(n.as_f64().unwrap_or(0.0)),
        Value::String(s) => s.clone(),
        Value::Array(list) => format!("[{}]", list.iter().map(go_v).collect::<Vec<_>>().join(" ")),
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{k}:{}", map.get(k).map(go_v).unwrap_or_default()))
                .collect();
            format!("map[{}]", parts.join(" "))
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema(v: Value) -> JSONSchemaProps {
        serde_json::from_value(v).expect("valid JSONSchemaProps")
    }

    fn messages(errors: &[FieldError]) -> Vec<String> {
        errors.iter().map(FieldError::message).collect()
    }

    /// A CRD root schema with `spec` built from `spec_properties`.
    fn crd(spec: Value) -> JSONSchemaProps {
        schema(json!({
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": spec,
            }
        }))
    }

    fn object(spec: Value) -> Value {
        json!({"apiVersion": "x.io/v1", "kind": "Thing", "metadata": {"name": "a"}, "spec": spec})
    }

    fn validate_spec(spec_schema: Value, spec: Value) -> Vec<String> {
        messages(&validate(&crd(spec_schema), &object(spec)))
    }

    #[test]
    fn kinds_report_kubes_cause_reasons() {
        let cases = [
            (FieldErrorKind::Required, "FieldValueRequired"),
            (FieldErrorKind::Invalid, "FieldValueInvalid"),
            (FieldErrorKind::NotSupported, "FieldValueNotSupported"),
            (FieldErrorKind::TypeInvalid, "FieldValueTypeInvalid"),
            (FieldErrorKind::TooLong, "FieldValueTooLong"),
            (FieldErrorKind::TooMany, "FieldValueTooMany"),
            (FieldErrorKind::Duplicate, "FieldValueDuplicate"),
            (FieldErrorKind::Forbidden, "FieldValueForbidden"),
        ];
        for (kind, reason) in cases {
            assert_eq!(kind.cause_reason(), reason);
        }
    }

    #[test]
    fn constructors_render_values_like_go() {
        assert_eq!(
            FieldError::required("spec.a", "").message(),
            "spec.a: Required value"
        );
        assert_eq!(
            FieldError::forbidden("spec.a", "no").message(),
            "spec.a: Forbidden: no"
        );
        assert_eq!(
            FieldError::invalid("spec.a", &json!("x\"y"), "bad").message(),
            r#"spec.a: Invalid value: "x\"y": bad"#
        );
        assert_eq!(
            FieldError::invalid("spec.a", &json!(1.5), "bad").message(),
            "spec.a: Invalid value: 1.5: bad"
        );
        assert_eq!(
            FieldError::invalid("spec.a", &json!({"b": 1, "a": "<"}), "bad").message(),
            r#"spec.a: Invalid value: {"a":"\u003c","b":1}: bad"#
        );
        assert_eq!(
            FieldError::too_long("spec.a", 1).message(),
            "spec.a: Too long: may not be more than 1 byte"
        );
        assert_eq!(
            FieldError::too_many("spec.a", 2, 1).message(),
            "spec.a: Too many: 2: must have at most 1 item"
        );
        assert_eq!(
            FieldError::not_supported("spec.a", &json!("X"), &["a".into(), "b".into()]).message(),
            r#"spec.a: Unsupported value: "X": supported values: "a", "b""#
        );
    }

    #[test]
    fn aggregate_message_matches_to_aggregate() {
        let a = FieldError::required("spec.a", "");
        let b = FieldError::required("spec.b", "");
        assert_eq!(
            aggregate_message(std::slice::from_ref(&a)),
            "spec.a: Required value"
        );
        assert_eq!(
            aggregate_message(&[a.clone(), b, a]),
            "[spec.a: Required value, spec.b: Required value]"
        );
        assert_eq!(aggregate_message(&[]), "");
    }

    #[test]
    fn prune_drops_undeclared_fields_and_reports_them_sorted() {
        let s = crd(json!({
            "type": "object",
            "properties": {
                "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                "ttl": {"type": "string"},
            }
        }));
        let mut obj = json!({
            "apiVersion": "x.io/v1", "kind": "Thing",
            "metadata": {"name": "a", "labels": {"x": "y"}},
            "spec": {"ttl": "1h", "foo": 1, "items": [{"name": "a", "extra": true}, {"name": "b"}]},
            "zzz": {},
        });
        let pruned = prune(&s, &mut obj);
        assert_eq!(pruned, vec!["spec.foo", "spec.items[0].extra", "zzz"]);
        assert_eq!(
            obj,
            json!({
                "apiVersion": "x.io/v1", "kind": "Thing",
                "metadata": {"name": "a", "labels": {"x": "y"}},
                "spec": {"ttl": "1h", "items": [{"name": "a"}, {"name": "b"}]},
            })
        );
    }

    #[test]
    fn prune_keeps_unknown_fields_where_preserved_but_prunes_declared_children() {
        let s = crd(json!({
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}},
        }));
        let mut obj =
            object(json!({"anything": {"deep": [1, {"x": 1}]}, "known": {"a": "1", "b": "2"}}));
        assert_eq!(prune(&s, &mut obj), vec!["spec.known.b"]);
        assert_eq!(
            obj["spec"],
            json!({"anything": {"deep": [1, {"x": 1}]}, "known": {"a": "1"}})
        );
    }

    #[test]
    fn prune_keeps_type_and_object_meta_of_embedded_resources() {
        let s = crd(json!({
            "type": "object",
            "properties": {"template": {
                "type": "object",
                "x-kubernetes-embedded-resource": true,
                "properties": {"spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}}},
            }},
        }));
        let mut obj = object(json!({"template": {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "whatever": 1},
            "spec": {"replicas": 1, "other": 2}, "status": {},
        }}));
        assert_eq!(
            prune(&s, &mut obj),
            vec!["spec.template.spec.other", "spec.template.status"]
        );
        assert_eq!(
            obj["spec"]["template"],
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "whatever": 1}, "spec": {"replicas": 1}})
        );
    }

    #[test]
    fn prune_applies_the_additional_properties_schema_to_every_value() {
        let s = crd(json!({
            "type": "object",
            "properties": {"byName": {
                "type": "object",
                "additionalProperties": {"type": "object", "properties": {"size": {"type": "integer"}}},
            }},
        }));
        let mut obj =
            object(json!({"byName": {"a": {"size": 1, "color": "red"}, "b": {"size": 2}}}));
        assert_eq!(prune(&s, &mut obj), vec!["spec.byName.a.color"]);
        assert_eq!(
            obj["spec"]["byName"],
            json!({"a": {"size": 1}, "b": {"size": 2}})
        );
    }

    #[test]
    fn defaults_fill_absent_fields_recursively_through_defaulted_objects() {
        let s = crd(json!({
            "type": "object",
            "default": {},
            "properties": {
                "ttl": {"type": "string", "default": "720h0m0s"},
                "options": {
                    "type": "object",
                    "default": {},
                    "properties": {"retries": {"type": "integer", "default": 3}},
                },
                "given": {"type": "string", "default": "theirs"},
            },
        }));
        let mut obj = json!({"apiVersion": "x.io/v1", "kind": "Thing", "metadata": {"name": "a"}});
        apply_defaults(&s, &mut obj);
        assert_eq!(
            obj["spec"],
            json!({"ttl": "720h0m0s", "options": {"retries": 3}, "given": "theirs"})
        );

        let mut obj = object(json!({"given": "mine"}));
        apply_defaults(&s, &mut obj);
        assert_eq!(obj["spec"]["given"], "mine");
    }

    #[test]
    fn defaults_drop_or_replace_nulls_of_non_nullable_fields_and_keep_nullable_nulls() {
        let s = crd(json!({
            "type": "object",
            "properties": {
                "noDefault": {"type": "string"},
                "withDefault": {"type": "string", "default": "d"},
                "nullable": {"type": "string", "nullable": true, "default": "unused"},
            },
        }));
        let mut obj = object(json!({"noDefault": null, "withDefault": null, "nullable": null}));
        apply_defaults(&s, &mut obj);
        assert_eq!(obj["spec"], json!({"withDefault": "d", "nullable": null}));
        assert!(validate(&s, &obj).is_empty());
    }

    #[test]
    fn defaults_apply_inside_array_items_and_additional_properties() {
        let s = crd(json!({
            "type": "object",
            "properties": {
                "hooks": {"type": "array", "items": {
                    "type": "object",
                    "default": {"onError": "Fail"},
                    "properties": {"onError": {"type": "string", "default": "Continue"}},
                }},
                "byName": {"type": "object", "additionalProperties": {
                    "type": "object",
                    "properties": {"enabled": {"type": "boolean", "default": true}},
                }},
            },
        }));
        let mut obj =
            object(json!({"hooks": [{}, null, {"onError": "Fail"}], "byName": {"a": {}}}));
        apply_defaults(&s, &mut obj);
        assert_eq!(
            obj["spec"],
            json!({
                "hooks": [{"onError": "Continue"}, {"onError": "Fail"}, {"onError": "Fail"}],
                "byName": {"a": {"enabled": true}},
            })
        );
    }

    #[test]
    fn defaults_never_touch_root_metadata() {
        let s = schema(json!({
            "type": "object",
            "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "default": "x"}}}},
        }));
        let mut obj = json!({"metadata": {"generateName": "a-"}});
        apply_defaults(&s, &mut obj);
        assert_eq!(obj, json!({"metadata": {"generateName": "a-"}}));
    }

    #[test]
    fn required_fields_are_reported_with_kubes_wording() {
        let spec = json!({"type": "object", "required": ["backupSpec"], "properties": {"backupSpec": {"type": "object"}}});
        let errors = validate(&crd(spec.clone()), &object(json!({})));
        assert_eq!(messages(&errors), vec!["spec.backupSpec: Required value"]);
        assert_eq!(errors[0].kind, FieldErrorKind::Required);
        assert_eq!(errors[0].field, "spec.backupSpec");
        assert_eq!(errors[0].detail, "Required value");

        let root =
            schema(json!({"type": "object", "required": ["spec"], "properties": {"spec": spec}}));
        let obj = json!({"apiVersion": "x.io/v1", "kind": "Thing", "metadata": {"name": "a"}});
        assert_eq!(
            messages(&validate(&root, &obj)),
            vec!["spec: Required value"]
        );
    }

    #[test]
    fn enums_report_the_supported_values() {
        let spec = json!({"type": "object", "properties": {
            "phase": {"type": "string", "enum": ["New", "Completed"]},
            "level": {"type": "integer", "enum": [1, 2]},
        }});
        let errors = validate(
            &crd(spec.clone()),
            &object(json!({"phase": "X", "level": 3})),
        );
        assert_eq!(
            messages(&errors),
            vec![
                r#"spec.level: Unsupported value: 3: supported values: "1", "2""#,
                r#"spec.phase: Unsupported value: "X": supported values: "New", "Completed""#,
            ]
        );
        assert_eq!(errors[0].kind, FieldErrorKind::NotSupported);
        assert!(validate_spec(spec, json!({"phase": "New", "level": 2.0})).is_empty());
    }

    #[test]
    fn type_mismatches_use_kube_openapi_wording() {
        let spec = json!({"type": "object", "properties": {
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "flags": {"type": "array", "items": {"type": "boolean"}},
            "name": {"type": "string"},
        }});
        let errors = validate(
            &crd(spec.clone()),
            &object(json!({"count": "string", "ratio": true, "flags": [1], "name": {}})),
        );
        assert_eq!(
            messages(&errors),
            vec![
                r#"spec.count: Invalid value: "string": spec.count in body must be of type integer: "string""#,
                r#"spec.flags[0]: Invalid value: "integer": spec.flags[0] in body must be of type boolean: "integer""#,
                r#"spec.name: Invalid value: "object": spec.name in body must be of type string: "object""#,
                r#"spec.ratio: Invalid value: "boolean": spec.ratio in body must be of type number: "boolean""#,
            ]
        );
        assert!(errors.iter().all(|e| e.kind == FieldErrorKind::TypeInvalid));
        // Integral floats are integers, integers are numbers.
        assert!(validate_spec(spec.clone(), json!({"count": 3.0, "ratio": 2})).is_empty());
        assert_eq!(
            validate_spec(spec, json!({"count": 1.5})),
            vec![
                r#"spec.count: Invalid value: "number": spec.count in body must be of type integer: "number""#
            ]
        );
    }

    #[test]
    fn int_or_string_and_nullable() {
        let spec = json!({"type": "object", "properties": {
            "size": {"x-kubernetes-int-or-string": true},
            "note": {"type": "string", "nullable": true},
            "name": {"type": "string"},
        }});
        assert!(validate_spec(spec.clone(), json!({"size": 5, "note": null})).is_empty());
        assert!(validate_spec(spec.clone(), json!({"size": "50%"})).is_empty());
        assert_eq!(
            validate_spec(spec, json!({"size": true, "name": null})),
            vec![
                r#"spec.name: Invalid value: "null": spec.name in body must be of type string: "null""#,
                r#"spec.size: Invalid value: "boolean": spec.size in body must be of type integer,string: "boolean""#,
            ]
        );
    }

    #[test]
    fn string_constraints_stop_at_the_first_failure() {
        let spec = json!({"type": "object", "properties": {
            "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
            "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}},
        }});
        let errors = validate(&crd(spec.clone()), &object(json!({"name": "ABCDEFG"})));
        assert_eq!(
            messages(&errors),
            vec!["spec.name: Too long: may not be more than 5 bytes"]
        );
        assert_eq!(errors[0].kind, FieldErrorKind::TooLong);
        assert_eq!(
            validate_spec(spec.clone(), json!({"name": "A"})),
            vec![
                r#"spec.name: Invalid value: "A": spec.name in body should be at least 2 chars long"#
            ]
        );
        assert_eq!(
            validate_spec(spec.clone(), json!({"name": "AB"})),
            vec![r#"spec.name: Invalid value: "AB": spec.name in body should match '^[a-z]+$'"#]
        );
        // Lengths count characters, not bytes.
        assert!(
            validate_spec(spec.clone(), json!({"name": "ab", "labels": {"x": "äöü"}})).is_empty()
        );
        // kube-openapi names additionalProperties values with dots.
        assert_eq!(
            validate_spec(spec, json!({"labels": {"team": "abcd"}})),
            vec!["spec.labels.team: Too long: may not be more than 3 bytes"]
        );
    }

    #[test]
    fn number_bounds_print_like_kube() {
        let spec = json!({"type": "object", "properties": {
            "count": {"type": "integer", "minimum": 1, "maximum": 10, "multipleOf": 2},
            "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 1e6, "exclusiveMaximum": true},
        }});
        assert_eq!(
            validate_spec(spec.clone(), json!({"count": 0})),
            vec![
                "spec.count: Invalid value: 0: spec.count in body should be greater than or equal to 1"
            ]
        );
        assert_eq!(
            validate_spec(spec.clone(), json!({"count": 13})),
            vec![
                "spec.count: Invalid value: 13: spec.count in body should be a multiple of 2",
                "spec.count: Invalid value: 13: spec.count in body should be less than or equal to 10",
            ]
        );
        assert_eq!(
            validate_spec(spec.clone(), json!({"ratio": 0.0})),
            vec!["spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0"]
        );
        assert_eq!(
            validate_spec(spec.clone(), json!({"ratio": 1.5e6})),
            vec![
                "spec.ratio: Invalid value: 1.5e+06: spec.ratio in body should be less than 1e+06"
            ]
        );
        assert!(validate_spec(spec, json!({"count": 4, "ratio": 0.5})).is_empty());
    }

    #[test]
    fn array_constraints() {
        let spec = json!({"type": "object", "properties": {
            "list": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2, "uniqueItems": true},
        }});
        let errors = validate(
            &crd(spec.clone()),
            &object(json!({"list": ["a", "b", "a"]})),
        );
        assert_eq!(
            messages(&errors),
            vec![
                "spec.list: Too many: 3: must have at most 2 items",
                r#"spec.list: Invalid value: "": spec.list in body shouldn't contain duplicates"#,
            ]
        );
        assert_eq!(errors[0].kind, FieldErrorKind::TooMany);
        assert_eq!(
            validate_spec(spec, json!({"list": []})),
            vec!["spec.list: Invalid value: 0: spec.list in body should have at least 1 items"]
        );
    }

    #[test]
    fn object_property_counts_and_forbidden_properties() {
        let spec = json!({"type": "object", "properties": {
            "m": {"type": "object", "minProperties": 1, "maxProperties": 2, "additionalProperties": {"type": "string"}},
            "closed": {"type": "object", "additionalProperties": false, "properties": {"a": {"type": "string"}}},
        }});
        assert_eq!(
            validate_spec(spec.clone(), json!({"m": {}})),
            vec!["spec.m: Invalid value: 0: spec.m in body should have at least 1 properties"]
        );
        assert_eq!(
            validate_spec(spec.clone(), json!({"m": {"a": "1", "b": "2", "c": "3"}})),
            vec!["spec.m: Too many: 3: must have at most 2 items"]
        );
        assert_eq!(
            validate_spec(spec, json!({"closed": {"a": "1", "b": "2"}})),
            vec![
                r#"spec.closed: Invalid value: "b": spec.closed.b in body is a forbidden property"#
            ]
        );
    }

    #[test]
    fn formats_are_checked() {
        let spec = json!({"type": "object", "properties": {
            "when": {"type": "string", "format": "date-time"},
            "day": {"type": "string", "format": "date"},
            "id": {"type": "string", "format": "uuid"},
            "blob": {"type": "string", "format": "byte"},
            "ttl": {"type": "string", "format": "duration"},
            "count": {"type": "integer", "format": "int32"},
            "odd": {"type": "string", "format": "isbn"},
        }});
        let ok = json!({
            "when": "2024-05-01T10:00:00Z", "day": "2024-05-01", "id": "123e4567-e89b-12d3-a456-426614174000",
            "blob": "aGVsbG8=", "ttl": "720h0m0s", "count": 5_000_000_000_i64, "odd": "anything",
        });
        assert!(validate_spec(spec.clone(), ok).is_empty());
        let errors = validate(&crd(spec.clone()), &object(json!({"when": "yesterday"})));
        assert_eq!(
            messages(&errors),
            vec![
                r#"spec.when: Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday""#
            ]
        );
        assert_eq!(errors[0].kind, FieldErrorKind::TypeInvalid);
        assert_eq!(
            validate_spec(spec, json!({"day": "2024-13-01", "id": "nope"})),
            vec![
                r#"spec.day: Invalid value: "2024-13-01": spec.day in body must be of type date: "2024-13-01""#,
                r#"spec.id: Invalid value: "nope": spec.id in body must be of type uuid: "nope""#,
            ]
        );
    }

    #[test]
    fn list_types_reject_duplicates() {
        let spec = json!({"type": "object", "properties": {
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "ports": {
                "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}},
            },
        }});
        let errors = validate(
            &crd(spec),
            &object(json!({
                "tags": ["a", "b", "a", "a"],
                "ports": [{"name": "http", "port": 80}, {"name": "http", "port": 8080}],
            })),
        );
        assert_eq!(
            messages(&errors),
            vec![
                r#"spec.tags[2]: Duplicate value: "a""#,
                r#"spec.ports[1]: Duplicate value: {"name":"http"}"#
            ]
        );
        assert!(errors.iter().all(|e| e.kind == FieldErrorKind::Duplicate));
    }

    #[test]
    fn composition_failures_are_reported_at_nil_like_kube() {
        let spec = json!({"type": "object", "properties": {
            "size": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "mode": {"type": "string", "oneOf": [{"enum": ["a"]}, {"enum": ["a", "b"]}]},
            "name": {"type": "string", "not": {"enum": ["forbidden"]}},
        }});
        assert!(
            validate_spec(spec.clone(), json!({"size": 1, "mode": "b", "name": "x"})).is_empty()
        );
        assert_eq!(
            validate_spec(spec.clone(), json!({"size": true})),
            vec![
                r#"<nil>: Invalid value: "": "spec.size" must validate at least one schema (anyOf)"#,
                r#"spec.size: Invalid value: "boolean": spec.size in body must be of type integer: "boolean""#,
            ]
        );
        assert_eq!(
            validate_spec(spec.clone(), json!({"mode": "a"})),
            vec![
                r#"<nil>: Invalid value: "": "spec.mode" must validate one and only one schema (oneOf). Found 2 valid alternatives"#
            ]
        );
        assert_eq!(
            validate_spec(spec, json!({"name": "forbidden"})),
            vec![r#"<nil>: Invalid value: "": "spec.name" must not validate the schema (not)"#]
        );
    }

    #[test]
    fn embedded_resources_need_api_version_and_kind() {
        let spec = json!({"type": "object", "properties": {"template": {
            "type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
        }}});
        assert_eq!(
            validate_spec(
                spec.clone(),
                json!({"template": {"metadata": {"name": "x"}}})
            ),
            vec![
                "spec.template.apiVersion: Required value",
                "spec.template.kind: Required value"
            ]
        );
        assert_eq!(
            validate_spec(
                spec.clone(),
                json!({"template": {"apiVersion": "a/b/c", "kind": "Bad_Kind"}})
            ),
            vec![
                r#"spec.template.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c"#,
                r#"spec.template.kind: Invalid value: "Bad_Kind": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"#,
            ]
        );
        assert!(
            validate_spec(
                spec,
                json!({"template": {"apiVersion": "v1", "kind": "ConfigMap"}})
            )
            .is_empty()
        );
    }

    #[test]
    fn root_type_and_object_meta_are_left_to_the_server() {
        let s = schema(json!({
            "type": "object",
            "required": ["metadata"],
            "properties": {"metadata": {"type": "string"}, "kind": {"type": "integer"}},
        }));
        assert!(validate(&s, &json!({"kind": "Thing", "metadata": {"name": "a"}})).is_empty());
        assert!(validate(&s, &json!({"kind": "Thing"})).is_empty());
    }

    #[test]
    fn a_velero_like_write_goes_through_prune_default_validate() {
        let s = crd(json!({
            "type": "object",
            "required": ["storageLocation"],
            "properties": {
                "storageLocation": {"type": "string", "minLength": 1},
                "ttl": {"type": "string", "default": "720h0m0s"},
                "includedNamespaces": {"type": "array", "items": {"type": "string"}, "nullable": true},
            },
        }));
        let mut obj =
            object(json!({"storageLocation": "default", "includedNamespaces": null, "typo": 1}));
        assert_eq!(prune(&s, &mut obj), vec!["spec.typo"]);
        apply_defaults(&s, &mut obj);
        assert!(validate(&s, &obj).is_empty());
        assert_eq!(
            obj["spec"],
            json!({"storageLocation": "default", "includedNamespaces": null, "ttl": "720h0m0s"})
        );

        let mut obj = object(json!({}));
        apply_defaults(&s, &mut obj);
        assert_eq!(
            messages(&validate(&s, &obj)),
            vec!["spec.storageLocation: Required value"]
        );
    }

    #[test]
    fn go_number_and_json_formatting() {
        assert_eq!(go_float(1.5), "1.5");
        assert_eq!(go_float(123_456.0), "123456");
        assert_eq!(go_float(1e6), "1e+06");
        assert_eq!(go_float(1_234_567.0), "1.234567e+06");
        assert_eq!(go_float(0.0001), "0.0001");
        assert_eq!(go_float(0.000_01), "1e-05");
        assert_eq!(go_float(-2.5), "-2.5");
        assert_eq!(
            go_json(&json!({"b": [1, 1.5, 1e-7], "a": "x&y"})),
            r#"{"a":"x\u0026y","b":[1,1.5,1e-7]}"#
        );
        assert_eq!(go_quote("tab\there"), r#""tab\there""#);
        assert_eq!(
            go_v(&json!({"name": "a", "port": 80})),
            "map[name:a port:80]"
        );
    }
}
