//! Decodes Kubernetes' protobuf request bodies (`application/vnd.kubernetes.protobuf`) into JSON for
//! the built-in kinds kubectl's typed clients send that way — access and token reviews
//! (`kubectl auth can-i`, `auth whoami`, `create token`), secrets, config maps, namespaces, service
//! accounts, RBAC objects and delete options. Client-go never falls back to JSON for request
//! bodies, so without this those kubectl commands fail. Field numbers follow k8s.io/api's
//! `generated.proto`. Pure.
use base64::Engine as _;
use serde_json::{Map, Value, json};

/// Why a body could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtoError {
    #[error("protobuf body does not start with the Kubernetes magic number")]
    MissingMagic,
    #[error("malformed protobuf body: {0}")]
    Malformed(&'static str),
    #[error("protobuf bodies of kind {0:?} are not supported by the emulator; send JSON instead")]
    UnsupportedKind(String),
}

#[derive(Clone, Copy)]
enum Ty {
    Str,
    Int,
    Bool,
    Msg(&'static [Field]),
    RepeatedStr,
    RepeatedMsg(&'static [Field]),
    MapStrStr,
    MapStrBytes,
    /// `map<string, ExtraValue>` where ExtraValue is `repeated string items = 1`.
    MapStrStrList,
}

#[derive(Clone, Copy)]
struct Field {
    number: u64,
    name: &'static str,
    ty: Ty,
}

const fn f(number: u64, name: &'static str, ty: Ty) -> Field {
    Field { number, name, ty }
}

const OWNER_REFERENCE: &[Field] = &[
    f(5, "apiVersion", Ty::Str),
    f(1, "kind", Ty::Str),
    f(3, "name", Ty::Str),
    f(4, "uid", Ty::Str),
    f(6, "controller", Ty::Bool),
    f(7, "blockOwnerDeletion", Ty::Bool),
];
const OBJECT_META: &[Field] = &[
    f(1, "name", Ty::Str),
    f(2, "generateName", Ty::Str),
    f(3, "namespace", Ty::Str),
    f(5, "uid", Ty::Str),
    f(6, "resourceVersion", Ty::Str),
    f(7, "generation", Ty::Int),
    f(11, "labels", Ty::MapStrStr),
    f(12, "annotations", Ty::MapStrStr),
    f(13, "ownerReferences", Ty::RepeatedMsg(OWNER_REFERENCE)),
    f(14, "finalizers", Ty::RepeatedStr),
];
const META: Field = f(1, "metadata", Ty::Msg(OBJECT_META));
const RESOURCE_ATTRIBUTES: &[Field] = &[
    f(1, "namespace", Ty::Str),
    f(2, "verb", Ty::Str),
    f(3, "group", Ty::Str),
    f(4, "version", Ty::Str),
    f(5, "resource", Ty::Str),
    f(6, "subresource", Ty::Str),
    f(7, "name", Ty::Str),
];
const NON_RESOURCE_ATTRIBUTES: &[Field] = &[f(1, "path", Ty::Str), f(2, "verb", Ty::Str)];
const SELF_ACCESS_SPEC: &[Field] = &[
    f(1, "resourceAttributes", Ty::Msg(RESOURCE_ATTRIBUTES)),
    f(2, "nonResourceAttributes", Ty::Msg(NON_RESOURCE_ATTRIBUTES)),
];
const ACCESS_SPEC: &[Field] = &[
    f(1, "resourceAttributes", Ty::Msg(RESOURCE_ATTRIBUTES)),
    f(2, "nonResourceAttributes", Ty::Msg(NON_RESOURCE_ATTRIBUTES)),
    f(3, "user", Ty::Str),
    f(4, "groups", Ty::RepeatedStr),
    f(5, "extra", Ty::MapStrStrList),
    f(6, "uid", Ty::Str),
];
const RULES_SPEC: &[Field] = &[f(1, "namespace", Ty::Str)];
const TOKEN_REVIEW_SPEC: &[Field] = &[f(1, "token", Ty::Str), f(2, "audiences", Ty::RepeatedStr)];
const BOUND_OBJECT: &[Field] = &[
    f(1, "kind", Ty::Str),
    f(2, "apiVersion", Ty::Str),
    f(3, "name", Ty::Str),
    f(4, "uid", Ty::Str),
];
const TOKEN_REQUEST_SPEC: &[Field] = &[
    f(1, "audiences", Ty::RepeatedStr),
    f(3, "boundObjectRef", Ty::Msg(BOUND_OBJECT)),
    f(4, "expirationSeconds", Ty::Int),
];
const OBJECT_REFERENCE: &[Field] = &[
    f(1, "kind", Ty::Str),
    f(2, "namespace", Ty::Str),
    f(3, "name", Ty::Str),
    f(4, "uid", Ty::Str),
    f(5, "apiVersion", Ty::Str),
];
const LOCAL_REFERENCE: &[Field] = &[f(1, "name", Ty::Str)];
const POLICY_RULE: &[Field] = &[
    f(1, "verbs", Ty::RepeatedStr),
    f(2, "apiGroups", Ty::RepeatedStr),
    f(3, "resources", Ty::RepeatedStr),
    f(4, "resourceNames", Ty::RepeatedStr),
    f(5, "nonResourceURLs", Ty::RepeatedStr),
];
const SUBJECT: &[Field] = &[
    f(1, "kind", Ty::Str),
    f(2, "apiGroup", Ty::Str),
    f(3, "name", Ty::Str),
    f(4, "namespace", Ty::Str),
];
const ROLE_REF: &[Field] = &[
    f(1, "apiGroup", Ty::Str),
    f(2, "kind", Ty::Str),
    f(3, "name", Ty::Str),
];
const PRECONDITIONS: &[Field] = &[f(1, "uid", Ty::Str), f(2, "resourceVersion", Ty::Str)];
const NAMESPACE_SPEC: &[Field] = &[f(1, "finalizers", Ty::RepeatedStr)];

/// The message layout of a top-level kind.
fn layout(kind: &str) -> Option<&'static [Field]> {
    const SSAR: &[Field] = &[META, f(2, "spec", Ty::Msg(SELF_ACCESS_SPEC))];
    const SAR: &[Field] = &[META, f(2, "spec", Ty::Msg(ACCESS_SPEC))];
    const SSRR: &[Field] = &[META, f(2, "spec", Ty::Msg(RULES_SPEC))];
    const SSR: &[Field] = &[META];
    const TOKEN_REVIEW: &[Field] = &[META, f(2, "spec", Ty::Msg(TOKEN_REVIEW_SPEC))];
    const TOKEN_REQUEST: &[Field] = &[META, f(2, "spec", Ty::Msg(TOKEN_REQUEST_SPEC))];
    const SECRET: &[Field] = &[
        META,
        f(2, "data", Ty::MapStrBytes),
        f(3, "type", Ty::Str),
        f(4, "stringData", Ty::MapStrStr),
        f(5, "immutable", Ty::Bool),
    ];
    const CONFIG_MAP: &[Field] = &[
        META,
        f(2, "data", Ty::MapStrStr),
        f(3, "binaryData", Ty::MapStrBytes),
        f(4, "immutable", Ty::Bool),
    ];
    const NAMESPACE: &[Field] = &[META, f(2, "spec", Ty::Msg(NAMESPACE_SPEC))];
    const SERVICE_ACCOUNT: &[Field] = &[
        META,
        f(2, "secrets", Ty::RepeatedMsg(OBJECT_REFERENCE)),
        f(3, "imagePullSecrets", Ty::RepeatedMsg(LOCAL_REFERENCE)),
        f(4, "automountServiceAccountToken", Ty::Bool),
    ];
    const ROLE: &[Field] = &[META, f(2, "rules", Ty::RepeatedMsg(POLICY_RULE))];
    const BINDING: &[Field] = &[
        META,
        f(2, "subjects", Ty::RepeatedMsg(SUBJECT)),
        f(3, "roleRef", Ty::Msg(ROLE_REF)),
    ];
    const DELETE_OPTIONS: &[Field] = &[
        f(1, "gracePeriodSeconds", Ty::Int),
        f(2, "preconditions", Ty::Msg(PRECONDITIONS)),
        f(3, "orphanDependents", Ty::Bool),
        f(4, "propagationPolicy", Ty::Str),
        f(5, "dryRun", Ty::RepeatedStr),
    ];
    Some(match kind {
        "SelfSubjectAccessReview" => SSAR,
        "SubjectAccessReview" | "LocalSubjectAccessReview" => SAR,
        "SelfSubjectRulesReview" => SSRR,
        "SelfSubjectReview" => SSR,
        "TokenReview" => TOKEN_REVIEW,
        "TokenRequest" => TOKEN_REQUEST,
        "Secret" => SECRET,
        "ConfigMap" => CONFIG_MAP,
        "Namespace" => NAMESPACE,
        "ServiceAccount" => SERVICE_ACCOUNT,
        "Role" | "ClusterRole" => ROLE,
        "RoleBinding" | "ClusterRoleBinding" => BINDING,
        "DeleteOptions" => DELETE_OPTIONS,
        _ => return None,
    })
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Skipped,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, pos: 0 }
    }

    fn done(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    fn varint(&mut self) -> Result<u64, ProtoError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self
                .bytes
                .get(self.pos)
                .ok_or(ProtoError::Malformed("truncated varint"))?;
            self.pos += 1;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(ProtoError::Malformed("varint too long"))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ProtoError> {
        let end = self
            .pos
            .checked_add(n)
            .ok_or(ProtoError::Malformed("length overflow"))?;
        let slice = self
            .bytes
            .get(self.pos..end)
            .ok_or(ProtoError::Malformed("truncated field"))?;
        self.pos = end;
        Ok(slice)
    }

    /// Next (field number, value).
    fn next(&mut self) -> Result<(u64, Wire<'a>), ProtoError> {
        let key = self.varint()?;
        let number = key >> 3;
        let wire = match key & 7 {
            0 => Wire::Varint(self.varint()?),
            1 => {
                self.take(8)?;
                Wire::Skipped
            }
            2 => {
                let len = usize::try_from(self.varint()?)
                    .map_err(|_| ProtoError::Malformed("length overflow"))?;
                Wire::Bytes(self.take(len)?)
            }
            5 => {
                self.take(4)?;
                Wire::Skipped
            }
            _ => return Err(ProtoError::Malformed("unsupported wire type")),
        };
        Ok((number, wire))
    }
}

fn text(bytes: &[u8]) -> Result<String, ProtoError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| ProtoError::Malformed("string is not UTF-8"))
}

fn map_entry(bytes: &[u8]) -> Result<(String, Vec<u8>), ProtoError> {
    let mut r = Reader::new(bytes);
    let (mut key, mut value) = (String::new(), Vec::new());
    while !r.done() {
        match r.next()? {
            (1, Wire::Bytes(b)) => key = text(b)?,
            (2, Wire::Bytes(b)) => value = b.to_vec(),
            _ => {}
        }
    }
    Ok((key, value))
}

fn decode_message(bytes: &[u8], fields: &[Field]) -> Result<Value, ProtoError> {
    let mut out = Map::new();
    let mut r = Reader::new(bytes);
    while !r.done() {
        let (number, wire) = r.next()?;
        let Some(field) = fields.iter().find(|f| f.number == number) else {
            continue;
        };
        let name = field.name.to_string();
        match (field.ty, wire) {
            // Go's generated marshallers write zero values that its JSON omits (`omitempty`):
            // drop them, as the JSON kube-apiserver stores never carries them.
            (Ty::Str, Wire::Bytes(b)) => {
                let value = text(b)?;
                if !value.is_empty() {
                    out.insert(name, json!(value));
                }
            }
            (Ty::Int, Wire::Varint(v)) => {
                if v != 0 {
                    out.insert(name, json!(v as i64));
                }
            }
            (Ty::Bool, Wire::Varint(v)) => {
                if v != 0 {
                    out.insert(name, json!(true));
                }
            }
            (Ty::Msg(inner), Wire::Bytes(b)) => {
                let message = decode_message(b, inner)?;
                if message.as_object().is_some_and(|m| !m.is_empty()) {
                    out.insert(name, message);
                }
            }
            (Ty::RepeatedStr, Wire::Bytes(b)) => {
                let list = out.entry(name).or_insert_with(|| json!([]));
                if let Some(a) = list.as_array_mut() {
                    a.push(json!(text(b)?));
                }
            }
            (Ty::RepeatedMsg(inner), Wire::Bytes(b)) => {
                let item = decode_message(b, inner)?;
                let list = out.entry(name).or_insert_with(|| json!([]));
                if let Some(a) = list.as_array_mut() {
                    a.push(item);
                }
            }
            (Ty::MapStrStr | Ty::MapStrBytes | Ty::MapStrStrList, Wire::Bytes(b)) => {
                let (key, value) = map_entry(b)?;
                let decoded = match field.ty {
                    Ty::MapStrStr => json!(text(&value)?),
                    Ty::MapStrBytes => {
                        json!(base64::engine::general_purpose::STANDARD.encode(&value))
                    }
                    _ => decode_message(&value, &[f(1, "items", Ty::RepeatedStr)])?
                        .get("items")
                        .cloned()
                        .unwrap_or(json!([])),
                };
                let map = out.entry(name).or_insert_with(|| json!({}));
                if let Some(m) = map.as_object_mut() {
                    m.insert(key, decoded);
                }
            }
            _ => return Err(ProtoError::Malformed("field has an unexpected wire type")),
        }
    }
    Ok(Value::Object(out))
}

/// Magic prefix of Kubernetes protobuf bodies.
pub const MAGIC: &[u8] = b"k8s\0";

/// Decodes a protobuf request body (magic + `runtime.Unknown` envelope) into the object's JSON.
pub fn decode(body: &[u8]) -> Result<Value, ProtoError> {
    let envelope = body.strip_prefix(MAGIC).ok_or(ProtoError::MissingMagic)?;
    let mut r = Reader::new(envelope);
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    while !r.done() {
        match r.next()? {
            (1, Wire::Bytes(type_meta)) => {
                let tm = decode_message(
                    type_meta,
                    &[f(1, "apiVersion", Ty::Str), f(2, "kind", Ty::Str)],
                )?;
                api_version = tm["apiVersion"].as_str().unwrap_or_default().to_string();
                kind = tm["kind"].as_str().unwrap_or_default().to_string();
            }
            (2, Wire::Bytes(b)) => raw = b,
            _ => {}
        }
    }
    let fields = layout(&kind).ok_or_else(|| ProtoError::UnsupportedKind(kind.clone()))?;
    let mut object = decode_message(raw, fields)?;
    object["apiVersion"] = json!(api_version);
    object["kind"] = json!(kind);
    Ok(object)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }

    fn bytes_field(number: u64, payload: &[u8], out: &mut Vec<u8>) {
        varint((number << 3) | 2, out);
        varint(payload.len() as u64, out);
        out.extend_from_slice(payload);
    }

    fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let mut tm = Vec::new();
        bytes_field(1, api_version.as_bytes(), &mut tm);
        bytes_field(2, kind.as_bytes(), &mut tm);
        let mut unknown = Vec::new();
        bytes_field(1, &tm, &mut unknown);
        bytes_field(2, raw, &mut unknown);
        bytes_field(4, b"application/vnd.kubernetes.protobuf", &mut unknown);
        let mut body = MAGIC.to_vec();
        body.extend(unknown);
        body
    }

    #[test]
    fn self_subject_access_review_as_kubectl_auth_can_i_sends_it() {
        let mut attrs = Vec::new();
        bytes_field(1, b"team-a", &mut attrs);
        bytes_field(2, b"create", &mut attrs);
        bytes_field(3, b"oadp.openshift.io", &mut attrs);
        bytes_field(5, b"nonadminbackups", &mut attrs);
        let mut spec = Vec::new();
        bytes_field(1, &attrs, &mut spec);
        let mut raw = Vec::new();
        bytes_field(1, &[], &mut raw);
        bytes_field(2, &spec, &mut raw);
        let v = decode(&envelope(
            "authorization.k8s.io/v1",
            "SelfSubjectAccessReview",
            &raw,
        ))
        .unwrap();
        assert_eq!(v["kind"], "SelfSubjectAccessReview");
        assert_eq!(v["spec"]["resourceAttributes"]["namespace"], "team-a");
        assert_eq!(
            v["spec"]["resourceAttributes"]["resource"],
            "nonadminbackups"
        );
    }

    #[test]
    fn secret_maps_and_metadata() {
        let mut entry = Vec::new();
        bytes_field(1, b"k", &mut entry);
        bytes_field(2, b"v", &mut entry);
        let mut label = Vec::new();
        bytes_field(1, b"app", &mut label);
        bytes_field(2, b"web", &mut label);
        let mut meta = Vec::new();
        bytes_field(1, b"s", &mut meta);
        bytes_field(11, &label, &mut meta);
        let mut raw = Vec::new();
        bytes_field(1, &meta, &mut raw);
        bytes_field(2, &entry, &mut raw);
        bytes_field(3, b"Opaque", &mut raw);
        let v = decode(&envelope("v1", "Secret", &raw)).unwrap();
        assert_eq!(v["metadata"]["name"], "s");
        assert_eq!(v["metadata"]["labels"]["app"], "web");
        assert_eq!(v["data"]["k"], "dg==");
        assert_eq!(v["type"], "Opaque");
    }

    #[test]
    fn zero_values_are_dropped_like_go_omitempty() {
        let mut meta = Vec::new();
        bytes_field(1, b"s", &mut meta);
        bytes_field(2, b"", &mut meta);
        let mut raw = Vec::new();
        bytes_field(1, &meta, &mut raw);
        bytes_field(3, b"", &mut raw);
        let v = decode(&envelope("v1", "Secret", &raw)).unwrap();
        assert!(v["metadata"].get("generateName").is_none(), "{v}");
        assert!(v.get("type").is_none(), "{v}");
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(decode(b"{}"), Err(ProtoError::MissingMagic));
        assert!(
            matches!(decode(&envelope("v1", "Pod", &[])), Err(ProtoError::UnsupportedKind(k)) if k == "Pod")
        );
        let mut truncated = envelope("v1", "Secret", b"\x0a\x05ab");
        truncated.truncate(truncated.len() - 1);
        assert!(decode(&truncated).is_err());
    }
}
