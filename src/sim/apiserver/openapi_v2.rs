//! The OpenAPI v2 document served at `/openapi/v2`, as JSON or as the gnostic protobuf
//! (`openapi_v2.Document`) client-go's `OpenAPISchema()` asks for.
//!
//! kubectl validates a manifest on the client against this document whenever the OpenAPI v3
//! document shows no PATCH operation for the kind (it then cannot rely on server-side field
//! validation): that is the case for the review kinds (TokenReview, SubjectAccessReview, ...),
//! which only accept POST. The document therefore carries those kinds' definitions, their paths
//! and what they reference, exactly as kube-apiserver v1.36 serves them
//! (`openapi_v2_reviews.json`, extracted from a real server's `/openapi/v2`). The other kinds
//! are only described in the v3 documents. Pure.
use std::sync::LazyLock;

use serde_json::{Map, Value, json};

use super::discovery::EMULATED_MINOR;
use super::registry::{Behavior, Registry};

/// The media type of the protobuf document (what kube-apiserver answers with).
pub const PROTOBUF_CONTENT_TYPE: &str =
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

static REVIEWS: LazyLock<Value> = LazyLock::new(|| {
    serde_json::from_str(include_str!("openapi_v2_reviews.json")).unwrap_or(Value::Null)
});

/// Whether a v2 path of the embedded document is served by `registry`.
fn path_served(registry: &Registry, path: &str) -> bool {
    registry.all().any(|r| {
        matches!(r.behavior, Behavior::Review(_))
            && path.ends_with(&format!("/{}", r.plural))
            && path.starts_with(&format!("/apis/{}/", r.group))
            && r.versions.iter().any(|v| path.contains(&format!("/{v}/")))
    })
}

/// The JSON document.
pub fn document(registry: &Registry) -> Value {
    let embedded = &*REVIEWS;
    let paths: Map<String, Value> = embedded
        .get("paths")
        .and_then(Value::as_object)
        .map(|p| {
            p.iter()
                .filter(|(k, _)| path_served(registry, k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": format!("1.{EMULATED_MINOR}")},
        "paths": paths,
        "definitions": embedded.get("definitions").cloned().unwrap_or_else(|| json!({})),
        "parameters": embedded.get("parameters").cloned().unwrap_or_else(|| json!({})),
    })
}

/// Protobuf wire encoding, just what `openapi_v2.Document` needs.
#[derive(Default)]
struct Pb(Vec<u8>);

impl Pb {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn key(&mut self, field: u64, wire: u64) {
        self.varint((field << 3) | wire);
    }

    fn bytes(&mut self, field: u64, b: &[u8]) {
        self.key(field, 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    fn string(&mut self, field: u64, s: &str) {
        if !s.is_empty() {
            self.bytes(field, s.as_bytes());
        }
    }

    fn msg(&mut self, field: u64, m: Pb) {
        self.bytes(field, &m.0);
    }

    fn boolean(&mut self, field: u64, b: bool) {
        if b {
            self.key(field, 0);
            self.varint(1);
        }
    }

    fn int(&mut self, field: u64, i: i64) {
        if i != 0 {
            self.key(field, 0);
            self.varint(i as u64);
        }
    }

    fn double(&mut self, field: u64, f: f64) {
        if f != 0.0 {
            self.key(field, 1);
            self.0.extend_from_slice(&f.to_le_bytes());
        }
    }

    /// A JSON string field, if present.
    fn str_of(&mut self, field: u64, v: &Value, key: &str) {
        if let Some(s) = v.get(key).and_then(Value::as_str) {
            self.string(field, s);
        }
    }

    fn bool_of(&mut self, field: u64, v: &Value, key: &str) {
        self.boolean(field, v.get(key).and_then(Value::as_bool).unwrap_or(false));
    }

    fn strings_of(&mut self, field: u64, v: &Value, key: &str) {
        for s in v.get(key).and_then(Value::as_array).into_iter().flatten() {
            if let Some(s) = s.as_str() {
                self.bytes(field, s.as_bytes());
            }
        }
    }

    /// `x-` vendor extensions as `NamedAny` (the value as YAML).
    fn extensions(&mut self, field: u64, v: &Value) {
        for (k, x) in v.as_object().into_iter().flatten() {
            if k.starts_with("x-") {
                let mut named = Pb::default();
                named.string(1, k);
                named.msg(2, any(x));
                self.msg(field, named);
            }
        }
    }
}

/// gnostic's `Any`: the value as YAML.
fn any(v: &Value) -> Pb {
    let mut a = Pb::default();
    let yaml = serde_yaml::to_string(v).unwrap_or_default();
    a.string(2, &yaml);
    a
}

fn schema(s: &Value) -> Pb {
    let mut p = Pb::default();
    p.str_of(1, s, "$ref");
    p.str_of(2, s, "format");
    p.str_of(3, s, "title");
    p.str_of(4, s, "description");
    if let Some(d) = s.get("default") {
        p.msg(5, any(d));
    }
    for (field, key) in [(6, "multipleOf"), (7, "maximum"), (9, "minimum")] {
        if let Some(f) = s.get(key).and_then(Value::as_f64) {
            p.double(field, f);
        }
    }
    p.bool_of(8, s, "exclusiveMaximum");
    p.bool_of(10, s, "exclusiveMinimum");
    for (field, key) in [
        (11, "maxLength"),
        (12, "minLength"),
        (14, "maxItems"),
        (15, "minItems"),
        (17, "maxProperties"),
        (18, "minProperties"),
    ] {
        if let Some(i) = s.get(key).and_then(Value::as_i64) {
            p.int(field, i);
        }
    }
    p.str_of(13, s, "pattern");
    p.bool_of(16, s, "uniqueItems");
    p.strings_of(19, s, "required");
    for e in s
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        p.msg(20, any(e));
    }
    match s.get("additionalProperties") {
        Some(Value::Bool(b)) => {
            let mut a = Pb::default();
            a.key(2, 0);
            a.varint(u64::from(*b));
            p.msg(21, a);
        }
        Some(a @ Value::Object(_)) => {
            let mut item = Pb::default();
            item.msg(1, schema(a));
            p.msg(21, item);
        }
        _ => {}
    }
    match s.get("type") {
        Some(Value::String(t)) => {
            let mut t_item = Pb::default();
            t_item.string(1, t);
            p.msg(22, t_item);
        }
        Some(Value::Array(ts)) => {
            let mut t_item = Pb::default();
            for t in ts.iter().filter_map(Value::as_str) {
                t_item.bytes(1, t.as_bytes());
            }
            p.msg(22, t_item);
        }
        _ => {}
    }
    match s.get("items") {
        Some(i @ Value::Object(_)) => {
            let mut items = Pb::default();
            items.msg(1, schema(i));
            p.msg(23, items);
        }
        Some(Value::Array(list)) => {
            let mut items = Pb::default();
            for i in list {
                items.msg(1, schema(i));
            }
            p.msg(23, items);
        }
        _ => {}
    }
    for a in s
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        p.msg(24, schema(a));
    }
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        let mut pr = Pb::default();
        for (name, v) in props {
            let mut named = Pb::default();
            named.string(1, name);
            named.msg(2, schema(v));
            pr.msg(1, named);
        }
        p.msg(25, pr);
    }
    p.str_of(26, s, "discriminator");
    p.bool_of(27, s, "readOnly");
    if let Some(e) = s.get("example") {
        p.msg(30, any(e));
    }
    p.extensions(31, s);
    p
}

/// A `Parameter`: a body parameter, or a query/path one.
fn parameter(v: &Value) -> Pb {
    let mut param = Pb::default();
    if v.get("in").and_then(Value::as_str) == Some("body") {
        let mut body = Pb::default();
        body.str_of(1, v, "description");
        body.str_of(2, v, "name");
        body.str_of(3, v, "in");
        body.bool_of(4, v, "required");
        if let Some(s) = v.get("schema") {
            body.msg(5, schema(s));
        }
        body.extensions(6, v);
        param.msg(1, body);
    } else {
        let path = v.get("in").and_then(Value::as_str) == Some("path");
        let mut sub = Pb::default();
        sub.bool_of(1, v, "required");
        sub.str_of(2, v, "in");
        sub.str_of(3, v, "description");
        sub.str_of(4, v, "name");
        if path {
            sub.str_of(5, v, "type");
            sub.str_of(6, v, "format");
            sub.bool_of(19, v, "uniqueItems");
            sub.extensions(22, v);
        } else {
            sub.str_of(6, v, "type");
            sub.str_of(7, v, "format");
            sub.bool_of(20, v, "uniqueItems");
            sub.extensions(23, v);
        }
        let mut non_body = Pb::default();
        non_body.msg(if path { 4 } else { 3 }, sub);
        param.msg(2, non_body);
    }
    param
}

fn parameters_item(v: &Value) -> Pb {
    let mut item = Pb::default();
    if let Some(r) = v.get("$ref").and_then(Value::as_str) {
        let mut reference = Pb::default();
        reference.string(1, r);
        reference.str_of(2, v, "description");
        item.msg(2, reference);
    } else {
        item.msg(1, parameter(v));
    }
    item
}

fn operation(op: &Value) -> Pb {
    let mut p = Pb::default();
    p.strings_of(1, op, "tags");
    p.str_of(2, op, "summary");
    p.str_of(3, op, "description");
    p.str_of(5, op, "operationId");
    p.strings_of(6, op, "produces");
    p.strings_of(7, op, "consumes");
    for param in op
        .get("parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        p.msg(8, parameters_item(param));
    }
    if let Some(responses) = op.get("responses").and_then(Value::as_object) {
        let mut rs = Pb::default();
        for (code, r) in responses {
            let mut response = Pb::default();
            response.str_of(1, r, "description");
            if let Some(s) = r.get("schema") {
                let mut item = Pb::default();
                item.msg(1, schema(s));
                response.msg(2, item);
            }
            let mut value = Pb::default();
            value.msg(1, response);
            let mut named = Pb::default();
            named.string(1, code);
            named.msg(2, value);
            rs.msg(1, named);
        }
        p.msg(9, rs);
    }
    p.strings_of(10, op, "schemes");
    p.bool_of(11, op, "deprecated");
    p.extensions(13, op);
    p
}

/// The protobuf encoding of [`document`].
pub fn document_protobuf(registry: &Registry) -> Vec<u8> {
    let doc = document(registry);
    let mut p = Pb::default();
    p.str_of(1, &doc, "swagger");
    let mut info = Pb::default();
    info.str_of(1, &doc["info"], "title");
    info.str_of(2, &doc["info"], "version");
    p.msg(2, info);
    let mut paths = Pb::default();
    for (name, item) in doc["paths"].as_object().into_iter().flatten() {
        let mut pi = Pb::default();
        for (field, verb) in [
            (2, "get"),
            (3, "put"),
            (4, "post"),
            (5, "delete"),
            (6, "options"),
            (7, "head"),
            (8, "patch"),
        ] {
            if let Some(op) = item.get(verb) {
                pi.msg(field, operation(op));
            }
        }
        for param in item
            .get("parameters")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            pi.msg(9, parameters_item(param));
        }
        pi.extensions(10, item);
        let mut named = Pb::default();
        named.string(1, name);
        named.msg(2, pi);
        paths.msg(2, named);
    }
    p.msg(8, paths);
    let mut defs = Pb::default();
    for (name, s) in doc["definitions"].as_object().into_iter().flatten() {
        let mut named = Pb::default();
        named.string(1, name);
        named.msg(2, schema(s));
        defs.msg(1, named);
    }
    p.msg(9, defs);
    let mut params = Pb::default();
    for (name, v) in doc["parameters"].as_object().into_iter().flatten() {
        let mut named = Pb::default();
        named.string(1, name);
        named.msg(2, parameter(v));
        params.msg(1, named);
    }
    p.msg(10, params);
    p.0
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn reviews_are_defined_with_their_kinds() {
        let r = Registry::with_builtins();
        let doc = document(&r);
        let sar = &doc["definitions"]["io.k8s.api.authorization.v1.SubjectAccessReview"];
        assert_eq!(
            sar["x-kubernetes-group-version-kind"][0]["kind"],
            "SubjectAccessReview"
        );
        assert!(doc["definitions"]["io.k8s.api.authentication.v1.TokenReview"].is_object());
        assert!(
            doc["paths"]["/apis/authorization.k8s.io/v1/subjectaccessreviews"]["post"].is_object()
        );
        assert!(doc["definitions"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"].is_object());
    }

    #[test]
    fn protobuf_starts_with_the_swagger_version() {
        let r = Registry::with_builtins();
        let pb = document_protobuf(&r);
        assert_eq!(&pb[..5], b"\x0a\x032.0");
        assert!(pb.len() > 10_000);
    }
}
