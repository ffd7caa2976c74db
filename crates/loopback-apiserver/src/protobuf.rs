//! Request bodies in Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`), which
//! Go's typed clients send (kubectl's `auth whoami` and `certificate approve`, the kubelet), read
//! into the JSON the rest of the double works on: the `k8s\0` envelope (`runtime.Unknown`), and
//! the messages of the kinds the double accepts that way: SelfSubjectReview and
//! CertificateSigningRequest (fields as `k8s.io/api/certificates/v1/generated.proto` numbers
//! them), and, read by a table of their fields, Namespace, Secret, ServiceAccount, TokenRequest,
//! the RBAC objects and the reviews (`kubectl create namespace/secret/serviceaccount/token/...`,
//! `kubectl auth can-i`). Responses stay JSON, which those clients also accept.
//!
//! Why a reader of its own rather than kube-rs's generated types (`k8s-pb` with `prost`): the
//! double reads a dozen messages and a handful of their fields, in about 650 lines (bodies are at
//! most 3 MiB; property tests below feed it arbitrary and mutated bytes), while `k8s-pb` 0.9 is 39,000 generated lines for every API
//! group. Compiling it alone took 73 s of a 2-core machine, in every build of the double (its
//! tests, its package test, its minimal versions, each feature combination): minutes of CI and
//! of every user's test build, for two messages.

use std::time::{Duration, SystemTime};

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::ids;
use super::status::ApiError;

/// The media type.
pub(crate) const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// The envelope's magic prefix.
const MAGIC: &[u8] = b"k8s\x00";

/// Whether the double reads `kind` from protobuf.
pub(crate) fn decodes(kind: &str) -> bool {
    matches!(kind, "CertificateSigningRequest" | "SelfSubjectReview") || schema(kind).is_some()
}

/// How a field is read.
#[derive(Clone, Copy)]
enum Shape {
    /// A string, omitted when empty.
    Text,
    /// A repeated string (empty strings kept: `apiGroups: [""]`).
    Texts,
    /// An integer (`int32`/`int64`, two's complement on the wire).
    Int,
    /// A `bool`.
    Bool,
    /// A `map<string, string>`.
    StringMap,
    /// A `map<string, bytes>`, each value base64 in JSON (a Secret's `data`).
    BytesMap,
    /// A `map<string, ExtraValue>` (a user's extra: each value a message of repeated strings,
    /// field 1), as `{"key": ["a", "b"]}`.
    ExtraMap,
    /// `ObjectMeta`.
    Meta,
    /// A nested message.
    Message(&'static [Field]),
    /// A repeated nested message.
    Messages(&'static [Field]),
}

/// One field of a message: its number, JSON name and shape.
type Field = (u64, &'static str, Shape);

const POLICY_RULE: &[Field] = &[
    (1, "verbs", Shape::Texts),
    (2, "apiGroups", Shape::Texts),
    (3, "resources", Shape::Texts),
    (4, "resourceNames", Shape::Texts),
    (5, "nonResourceURLs", Shape::Texts),
];
const LABEL_REQUIREMENT: &[Field] = &[
    (1, "key", Shape::Text),
    (2, "operator", Shape::Text),
    (3, "values", Shape::Texts),
];
const LABEL_SELECTOR: &[Field] = &[
    (1, "matchLabels", Shape::StringMap),
    (2, "matchExpressions", Shape::Messages(LABEL_REQUIREMENT)),
];
const AGGREGATION_RULE: &[Field] = &[(1, "clusterRoleSelectors", Shape::Messages(LABEL_SELECTOR))];
const ROLE: &[Field] = &[
    (1, "metadata", Shape::Meta),
    (2, "rules", Shape::Messages(POLICY_RULE)),
];
const CLUSTER_ROLE: &[Field] = &[
    (1, "metadata", Shape::Meta),
    (2, "rules", Shape::Messages(POLICY_RULE)),
    (3, "aggregationRule", Shape::Message(AGGREGATION_RULE)),
];
const SUBJECT: &[Field] = &[
    (1, "kind", Shape::Text),
    (2, "apiGroup", Shape::Text),
    (3, "name", Shape::Text),
    (4, "namespace", Shape::Text),
];
const ROLE_REF: &[Field] = &[
    (1, "apiGroup", Shape::Text),
    (2, "kind", Shape::Text),
    (3, "name", Shape::Text),
];
const BINDING: &[Field] = &[
    (1, "metadata", Shape::Meta),
    (2, "subjects", Shape::Messages(SUBJECT)),
    (3, "roleRef", Shape::Message(ROLE_REF)),
];
const METADATA_ONLY: &[Field] = &[(1, "metadata", Shape::Meta)];
const SECRET: &[Field] = &[
    (1, "metadata", Shape::Meta),
    (2, "data", Shape::BytesMap),
    (3, "type", Shape::Text),
    (4, "stringData", Shape::StringMap),
    (5, "immutable", Shape::Bool),
];
const SERVICE_ACCOUNT: &[Field] = &[
    (1, "metadata", Shape::Meta),
    (4, "automountServiceAccountToken", Shape::Bool),
];
const BOUND_OBJECT: &[Field] = &[
    (1, "kind", Shape::Text),
    (2, "apiVersion", Shape::Text),
    (3, "name", Shape::Text),
    (4, "uid", Shape::Text),
];
const TOKEN_REQUEST: &[Field] = &[
    (1, "metadata", Shape::Meta),
    (
        2,
        "spec",
        Shape::Message(&[
            (1, "audiences", Shape::Texts),
            (3, "boundObjectRef", Shape::Message(BOUND_OBJECT)),
            (4, "expirationSeconds", Shape::Int),
        ]),
    ),
];
const TOKEN_REVIEW: &[Field] = &[
    (1, "metadata", Shape::Meta),
    (
        2,
        "spec",
        Shape::Message(&[(1, "token", Shape::Text), (2, "audiences", Shape::Texts)]),
    ),
];
const RESOURCE_ATTRIBUTES: &[Field] = &[
    (1, "namespace", Shape::Text),
    (2, "verb", Shape::Text),
    (3, "group", Shape::Text),
    (4, "version", Shape::Text),
    (5, "resource", Shape::Text),
    (6, "subresource", Shape::Text),
    (7, "name", Shape::Text),
];
const NON_RESOURCE_ATTRIBUTES: &[Field] = &[(1, "path", Shape::Text), (2, "verb", Shape::Text)];
const SELF_ACCESS_REVIEW: &[Field] = &[
    (1, "metadata", Shape::Meta),
    (
        2,
        "spec",
        Shape::Message(&[
            (1, "resourceAttributes", Shape::Message(RESOURCE_ATTRIBUTES)),
            (
                2,
                "nonResourceAttributes",
                Shape::Message(NON_RESOURCE_ATTRIBUTES),
            ),
        ]),
    ),
];
const ACCESS_REVIEW: &[Field] = &[
    (1, "metadata", Shape::Meta),
    (
        2,
        "spec",
        Shape::Message(&[
            (1, "resourceAttributes", Shape::Message(RESOURCE_ATTRIBUTES)),
            (
                2,
                "nonResourceAttributes",
                Shape::Message(NON_RESOURCE_ATTRIBUTES),
            ),
            (3, "user", Shape::Text),
            (4, "groups", Shape::Texts),
            (5, "extra", Shape::ExtraMap),
            (6, "uid", Shape::Text),
        ]),
    ),
];
const RULES_REVIEW: &[Field] = &[
    (1, "metadata", Shape::Meta),
    (2, "spec", Shape::Message(&[(1, "namespace", Shape::Text)])),
];

/// The fields the double reads of `kind` (beside the two read by hand).
fn schema(kind: &str) -> Option<&'static [Field]> {
    Some(match kind {
        "Namespace" => METADATA_ONLY,
        "ServiceAccount" => SERVICE_ACCOUNT,
        "Secret" => SECRET,
        "Role" => ROLE,
        "ClusterRole" => CLUSTER_ROLE,
        "RoleBinding" | "ClusterRoleBinding" => BINDING,
        "TokenRequest" => TOKEN_REQUEST,
        "TokenReview" => TOKEN_REVIEW,
        "SelfSubjectAccessReview" => SELF_ACCESS_REVIEW,
        "SubjectAccessReview" | "LocalSubjectAccessReview" => ACCESS_REVIEW,
        "SelfSubjectRulesReview" => RULES_REVIEW,
        _ => return None,
    })
}

/// A message read by its `fields` (others skipped).
fn message(raw: &[u8], fields: &[Field], depth: usize) -> Result<Map<String, Value>, &'static str> {
    if depth > 8 {
        return Err("nested too deeply");
    }
    let mut out = Map::new();
    for f in Fields::new(raw) {
        let (number, wire) = f?;
        let Some(&(_, name, shape)) = fields.iter().find(|(n, _, _)| *n == number) else {
            continue;
        };
        match (shape, wire) {
            (Shape::Text, Wire::Bytes(b)) => put_text(&mut out, name, b)?,
            (Shape::Texts, Wire::Bytes(b)) => push_text(&mut out, name, b)?,
            (Shape::Int, Wire::Varint(v)) => {
                out.insert(name.to_owned(), json!(i64::from_ne_bytes(v.to_ne_bytes())));
            }
            (Shape::Bool, Wire::Varint(v)) => {
                out.insert(name.to_owned(), Value::Bool(v != 0));
            }
            (Shape::StringMap, Wire::Bytes(b)) => {
                let (key, value) = map_entry(b)?;
                if let Some(m) = out
                    .entry(name)
                    .or_insert_with(|| Value::Object(Map::new()))
                    .as_object_mut()
                {
                    m.insert(key, Value::String(text(&value)?));
                }
            }
            (Shape::BytesMap, Wire::Bytes(b)) => {
                let (key, value) = map_entry(b)?;
                let encoded = base64::engine::general_purpose::STANDARD.encode(value);
                if let Some(m) = out
                    .entry(name)
                    .or_insert_with(|| Value::Object(Map::new()))
                    .as_object_mut()
                {
                    m.insert(key, Value::String(encoded));
                }
            }
            (Shape::ExtraMap, Wire::Bytes(b)) => put_extra(&mut out, name, b)?,
            (Shape::Meta, Wire::Bytes(b)) => {
                out.insert(name.to_owned(), object_meta(b)?);
            }
            (Shape::Message(inner), Wire::Bytes(b)) => {
                let depth = depth.saturating_add(1);
                out.insert(name.to_owned(), Value::Object(message(b, inner, depth)?));
            }
            (Shape::Messages(inner), Wire::Bytes(b)) => {
                let item = Value::Object(message(b, inner, depth.saturating_add(1))?);
                if let Some(items) = out
                    .entry(name)
                    .or_insert_with(|| Value::Array(Vec::new()))
                    .as_array_mut()
                {
                    items.push(item);
                }
            }
            _ => return Err("unexpected wire type"),
        }
    }
    Ok(out)
}

/// The JSON object for a protobuf `body` whose envelope must name `kind` in `api_version`.
pub(crate) fn decode(body: &[u8], api_version: &str, kind: &str) -> Result<Value, ApiError> {
    let bad = |why: &str| {
        ApiError::bad_request(format!(
            "{kind} in version \"{}\" cannot be handled as a {kind}: {why}",
            api_version.rsplit('/').next().unwrap_or(api_version)
        ))
    };
    let Some(envelope) = body.strip_prefix(MAGIC) else {
        return Err(bad(
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]",
        ));
    };
    let mut type_meta = (String::new(), String::new());
    let mut raw: &[u8] = &[];
    for field in Fields::new(envelope) {
        match field.map_err(bad)? {
            (1, Wire::Bytes(b)) => {
                for f in Fields::new(b) {
                    match f.map_err(bad)? {
                        (1, Wire::Bytes(v)) => type_meta.0 = text(v).map_err(bad)?,
                        (2, Wire::Bytes(v)) => type_meta.1 = text(v).map_err(bad)?,
                        _ => {}
                    }
                }
            }
            (2, Wire::Bytes(b)) => raw = b,
            _ => {}
        }
    }
    if type_meta.0 != api_version || type_meta.1 != kind {
        let shown: String = format!("{}, Kind={}", type_meta.0, type_meta.1)
            .chars()
            .take(200)
            .collect();
        return Err(bad(&format!("the object provided is {shown}")));
    }
    let mut object = match (kind, schema(kind)) {
        ("CertificateSigningRequest", _) => certificate_signing_request(raw).map_err(bad)?,
        (_, Some(fields)) => message(raw, fields, 0).map_err(bad)?,
        // A SelfSubjectReview's content does not matter.
        _ => Map::new(),
    };
    object.insert(
        "apiVersion".to_owned(),
        Value::String(api_version.to_owned()),
    );
    object.insert("kind".to_owned(), Value::String(kind.to_owned()));
    Ok(Value::Object(object))
}

/// One field's value on the wire.
enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

/// The fields of one message, in order.
struct Fields<'a> {
    rest: &'a [u8],
    failed: bool,
}

impl<'a> Fields<'a> {
    fn new(message: &'a [u8]) -> Fields<'a> {
        Fields {
            rest: message,
            failed: false,
        }
    }

    fn varint(&mut self) -> Result<u64, &'static str> {
        let mut value = 0u64;
        for shift in (0u32..64).step_by(7) {
            let (&byte, rest) = self.rest.split_first().ok_or("truncated varint")?;
            self.rest = rest;
            value |= u64::from(byte & 0x7f).checked_shl(shift).unwrap_or(0);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("varint too long")
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], &'static str> {
        if n > self.rest.len() {
            return Err("truncated field");
        }
        let (head, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(head)
    }

    fn field(&mut self) -> Result<(u64, Wire<'a>), &'static str> {
        let key = self.varint()?;
        let number = key >> 3;
        let wire = match key & 0x7 {
            0 => Wire::Varint(self.varint()?),
            1 => {
                self.take(8)?;
                Wire::Fixed
            }
            2 => {
                let len = usize::try_from(self.varint()?).map_err(|_| "length too large")?;
                Wire::Bytes(self.take(len)?)
            }
            5 => {
                self.take(4)?;
                Wire::Fixed
            }
            _ => return Err("unsupported wire type"),
        };
        Ok((number, wire))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u64, Wire<'a>), &'static str>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() || self.failed {
            return None;
        }
        let field = self.field();
        self.failed = field.is_err();
        Some(field)
    }
}

fn text(bytes: &[u8]) -> Result<String, &'static str> {
    String::from_utf8(bytes.to_vec()).map_err(|_| "invalid UTF-8 in a string")
}

/// Inserts a string field, unless empty (the JSON encoding omits empty strings).
fn put_text(map: &mut Map<String, Value>, key: &str, bytes: &[u8]) -> Result<(), &'static str> {
    let s = text(bytes)?;
    if !s.is_empty() {
        map.insert(key.to_owned(), Value::String(s));
    }
    Ok(())
}

/// Appends to a repeated string field.
fn push_text(map: &mut Map<String, Value>, key: &str, bytes: &[u8]) -> Result<(), &'static str> {
    let s = text(bytes)?;
    if let Some(items) = map
        .entry(key)
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
    {
        items.push(Value::String(s));
    }
    Ok(())
}

/// A `map<string, string>` entry.
fn map_entry(entry: &[u8]) -> Result<(String, Vec<u8>), &'static str> {
    let (mut key, mut value) = (String::new(), Vec::new());
    for f in Fields::new(entry) {
        match f? {
            (1, Wire::Bytes(b)) => key = text(b)?,
            (2, Wire::Bytes(b)) => value = b.to_vec(),
            _ => {}
        }
    }
    Ok((key, value))
}

/// Inserts one entry of a `map<string, ExtraValue>` into the object at `key` (a later entry
/// for the same key replaces an earlier one, as protobuf's map merge does).
fn put_extra(map: &mut Map<String, Value>, key: &str, entry: &[u8]) -> Result<(), &'static str> {
    let (name, value) = map_entry(entry)?;
    let mut items = Vec::new();
    for item in Fields::new(&value) {
        match item? {
            (1, Wire::Bytes(v)) => items.push(Value::String(text(v)?)),
            (1, _) => return Err("unexpected wire type in an extra value"),
            _ => {}
        }
    }
    if let Some(extra) = map
        .entry(key)
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
    {
        extra.insert(name, Value::Array(items));
    }
    Ok(())
}

/// A `metav1.Time` (`seconds`, `nanos`) as JSON; the zero time is omitted.
fn time(message: &[u8]) -> Result<Option<Value>, &'static str> {
    let mut seconds = 0u64;
    for f in Fields::new(message) {
        if let (1, Wire::Varint(v)) = f? {
            seconds = v;
        }
    }
    // Negative seconds (before 1970) arrive as huge two's-complement values: not a time the
    // double stores.
    if seconds == 0 || seconds > i64::MAX.unsigned_abs() {
        return Ok(None);
    }
    let at = SystemTime::UNIX_EPOCH
        .checked_add(Duration::from_secs(seconds))
        .ok_or("time out of range")?;
    Ok(Some(Value::String(ids::timestamp(at))))
}

fn object_meta(message: &[u8]) -> Result<Value, &'static str> {
    let mut meta = Map::new();
    for f in Fields::new(message) {
        match f? {
            (1, Wire::Bytes(b)) => put_text(&mut meta, "name", b)?,
            (2, Wire::Bytes(b)) => put_text(&mut meta, "generateName", b)?,
            (3, Wire::Bytes(b)) => put_text(&mut meta, "namespace", b)?,
            (5, Wire::Bytes(b)) => put_text(&mut meta, "uid", b)?,
            (6, Wire::Bytes(b)) => put_text(&mut meta, "resourceVersion", b)?,
            (7, Wire::Varint(v)) if v != 0 => {
                meta.insert("generation".to_owned(), json!(v));
            }
            (8, Wire::Bytes(b)) => {
                if let Some(t) = time(b)? {
                    meta.insert("creationTimestamp".to_owned(), t);
                }
            }
            (field @ (11 | 12), Wire::Bytes(b)) => {
                let (key, value) = map_entry(b)?;
                let name = if field == 11 { "labels" } else { "annotations" };
                if let Some(m) = meta
                    .entry(name)
                    .or_insert_with(|| Value::Object(Map::new()))
                    .as_object_mut()
                {
                    m.insert(key, Value::String(text(&value)?));
                }
            }
            (14, Wire::Bytes(b)) => push_text(&mut meta, "finalizers", b)?,
            _ => {}
        }
    }
    Ok(Value::Object(meta))
}

fn certificate_signing_request(message: &[u8]) -> Result<Map<String, Value>, &'static str> {
    let mut object = Map::new();
    for f in Fields::new(message) {
        match f? {
            (1, Wire::Bytes(b)) => {
                object.insert("metadata".to_owned(), object_meta(b)?);
            }
            (2, Wire::Bytes(b)) => {
                object.insert("spec".to_owned(), csr_spec(b)?);
            }
            (3, Wire::Bytes(b)) => {
                object.insert("status".to_owned(), csr_status(b)?);
            }
            _ => {}
        }
    }
    Ok(object)
}

fn csr_spec(message: &[u8]) -> Result<Value, &'static str> {
    let mut spec = Map::new();
    for f in Fields::new(message) {
        match f? {
            (1, Wire::Bytes(b)) if !b.is_empty() => {
                let encoded = base64::engine::general_purpose::STANDARD.encode(b);
                spec.insert("request".to_owned(), Value::String(encoded));
            }
            (2, Wire::Bytes(b)) => put_text(&mut spec, "username", b)?,
            (3, Wire::Bytes(b)) => put_text(&mut spec, "uid", b)?,
            (4, Wire::Bytes(b)) => push_text(&mut spec, "groups", b)?,
            (5, Wire::Bytes(b)) => push_text(&mut spec, "usages", b)?,
            (6, Wire::Bytes(b)) => put_extra(&mut spec, "extra", b)?,
            (7, Wire::Bytes(b)) => put_text(&mut spec, "signerName", b)?,
            (8, Wire::Varint(v)) => {
                // int32, sign-extended to 64 bits on the wire when negative.
                let seconds = i64::from_ne_bytes(v.to_ne_bytes());
                spec.insert("expirationSeconds".to_owned(), json!(seconds));
            }
            _ => {}
        }
    }
    Ok(Value::Object(spec))
}

fn csr_status(message: &[u8]) -> Result<Value, &'static str> {
    let mut status = Map::new();
    for f in Fields::new(message) {
        match f? {
            (1, Wire::Bytes(b)) => {
                let condition = csr_condition(b)?;
                if let Some(items) = status
                    .entry("conditions")
                    .or_insert_with(|| Value::Array(Vec::new()))
                    .as_array_mut()
                {
                    items.push(condition);
                }
            }
            (2, Wire::Bytes(b)) if !b.is_empty() => {
                let encoded = base64::engine::general_purpose::STANDARD.encode(b);
                status.insert("certificate".to_owned(), Value::String(encoded));
            }
            _ => {}
        }
    }
    Ok(Value::Object(status))
}

fn csr_condition(message: &[u8]) -> Result<Value, &'static str> {
    let mut condition = Map::new();
    for f in Fields::new(message) {
        match f? {
            (1, Wire::Bytes(b)) => put_text(&mut condition, "type", b)?,
            (2, Wire::Bytes(b)) => put_text(&mut condition, "reason", b)?,
            (3, Wire::Bytes(b)) => put_text(&mut condition, "message", b)?,
            (field @ (4 | 5), Wire::Bytes(b)) => {
                if let Some(t) = time(b)? {
                    let key = if field == 4 {
                        "lastUpdateTime"
                    } else {
                        "lastTransitionTime"
                    };
                    condition.insert(key.to_owned(), t);
                }
            }
            (6, Wire::Bytes(b)) => put_text(&mut condition, "status", b)?,
            _ => {}
        }
    }
    Ok(Value::Object(condition))
}

#[cfg(test)]
mod tests {
    use super::decode;

    /// A field key.
    fn key(number: u8, wire: u8) -> u8 {
        (number << 3) | wire
    }

    /// A length-delimited field.
    fn bytes(number: u8, content: &[u8]) -> Vec<u8> {
        let mut out = vec![key(number, 2), u8::try_from(content.len()).unwrap()];
        out.extend_from_slice(content);
        out
    }

    fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let mut type_meta = bytes(1, api_version.as_bytes());
        type_meta.extend(bytes(2, kind.as_bytes()));
        let mut out = b"k8s\x00".to_vec();
        out.extend(bytes(1, &type_meta));
        out.extend(bytes(2, raw));
        out
    }

    #[test]
    fn decodes_a_csr_approval() {
        let meta = [bytes(1, b"demo"), bytes(6, b"42")].concat();
        let time = vec![key(1, 0), 0x80, 0xde, 0xb8, 0xd0, 0x06]; // 1779314432 s, in 2026
        let condition = [
            bytes(1, b"Approved"),
            bytes(2, b"KubectlApprove"),
            bytes(4, &time),
            bytes(5, &[]),
            bytes(6, b"True"),
        ]
        .concat();
        let status = bytes(1, &condition);
        let spec = [
            bytes(5, b"client auth"),
            bytes(7, b"example.com/x"),
            vec![key(8, 0), 0xd8, 0x04],
        ]
        .concat();
        let csr = [bytes(1, &meta), bytes(2, &spec), bytes(3, &status)].concat();
        let v = decode(
            &envelope("certificates.k8s.io/v1", "CertificateSigningRequest", &csr),
            "certificates.k8s.io/v1",
            "CertificateSigningRequest",
        )
        .unwrap();
        assert_eq!(v["metadata"]["name"], "demo");
        assert_eq!(v["metadata"]["resourceVersion"], "42");
        assert_eq!(v["spec"]["usages"][0], "client auth");
        assert_eq!(v["spec"]["signerName"], "example.com/x");
        assert_eq!(v["spec"]["expirationSeconds"], 600);
        let c = &v["status"]["conditions"][0];
        assert_eq!(c["type"], "Approved");
        assert_eq!(c["status"], "True");
        assert!(c["lastUpdateTime"].as_str().unwrap().ends_with('Z'));
        assert!(c.get("lastTransitionTime").is_none());
    }

    #[test]
    fn decodes_a_role_binding_and_a_token_request_by_their_field_tables() {
        let rule = [bytes(1, b"get"), bytes(2, b""), bytes(3, b"secrets")].concat();
        let role = [bytes(1, &bytes(1, b"reader")), bytes(2, &rule)].concat();
        let v = decode(
            &envelope("rbac.authorization.k8s.io/v1", "Role", &role),
            "rbac.authorization.k8s.io/v1",
            "Role",
        )
        .unwrap();
        assert_eq!(v["metadata"]["name"], "reader");
        assert_eq!(
            v["rules"],
            serde_json::json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}])
        );
        let subject = [bytes(1, b"User"), bytes(3, b"jane")].concat();
        let role_ref = [
            bytes(1, b"rbac.authorization.k8s.io"),
            bytes(2, b"Role"),
            bytes(3, b"reader"),
        ]
        .concat();
        let binding = [bytes(2, &subject), bytes(3, &role_ref)].concat();
        let v = decode(
            &envelope("rbac.authorization.k8s.io/v1", "RoleBinding", &binding),
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
        )
        .unwrap();
        assert_eq!(v["subjects"][0]["name"], "jane");
        assert_eq!(v["roleRef"]["kind"], "Role");
        let spec = [bytes(1, b"a"), bytes(1, b"b"), vec![key(4, 0), 0xb0, 0x09]].concat();
        let v = decode(
            &envelope("authentication.k8s.io/v1", "TokenRequest", &bytes(2, &spec)),
            "authentication.k8s.io/v1",
            "TokenRequest",
        )
        .unwrap();
        assert_eq!(v["spec"]["audiences"], serde_json::json!(["a", "b"]));
        assert_eq!(v["spec"]["expirationSeconds"], 1200);
        // A string where a message is expected, and messages nested past the bound.
        let wrong = [key(2, 0), 1].to_vec();
        assert!(
            decode(
                &envelope("rbac.authorization.k8s.io/v1", "Role", &wrong),
                "rbac.authorization.k8s.io/v1",
                "Role"
            )
            .is_err()
        );
    }

    #[test]
    fn decodes_a_subject_access_review_with_its_extra() {
        let attributes = [bytes(2, b"get"), bytes(5, b"secrets")].concat();
        let extra = |key: &[u8], values: &[&[u8]]| {
            let value: Vec<u8> = values.iter().flat_map(|v| bytes(1, v)).collect();
            bytes(5, &[bytes(1, key), bytes(2, &value)].concat())
        };
        let spec = [
            bytes(1, &attributes),
            bytes(3, b"jane"),
            bytes(4, b"dev"),
            extra(b"example.com/scopes", &[b"read", b"write"]),
            extra(b"team", &[b"red"]),
            // A later entry for a key replaces the earlier one; an empty value is an empty list.
            extra(b"team", &[b"blue"]),
            extra(b"none", &[]),
            bytes(6, b"uid-1"),
        ]
        .concat();
        let body = envelope(
            "authorization.k8s.io/v1",
            "SubjectAccessReview",
            &bytes(2, &spec),
        );
        let v = decode(&body, "authorization.k8s.io/v1", "SubjectAccessReview").unwrap();
        assert_eq!(
            v["spec"],
            serde_json::json!({
                "resourceAttributes": {"verb": "get", "resource": "secrets"},
                "user": "jane",
                "groups": ["dev"],
                "extra": {"example.com/scopes": ["read", "write"], "team": ["blue"], "none": []},
                "uid": "uid-1",
            })
        );
        // An extra value whose items are not strings, and one that is not UTF-8, are refused.
        for bad_value in [vec![key(1, 0), 7], bytes(1, &[0xff, 0xfe])] {
            let entry = bytes(5, &[bytes(1, b"k"), bytes(2, &bad_value)].concat());
            let body = envelope(
                "authorization.k8s.io/v1",
                "SubjectAccessReview",
                &bytes(2, &entry),
            );
            let e = decode(&body, "authorization.k8s.io/v1", "SubjectAccessReview").unwrap_err();
            assert_eq!(e.code, 400);
        }
        // The map itself as a varint.
        let body = envelope(
            "authorization.k8s.io/v1",
            "SubjectAccessReview",
            &bytes(2, &[key(5, 0), 1]),
        );
        assert!(decode(&body, "authorization.k8s.io/v1", "SubjectAccessReview").is_err());
    }

    #[test]
    fn decodes_a_secret_with_its_data_in_base64() {
        let data = bytes(2, &[bytes(1, b"key"), bytes(2, &[0, 0xff, b'x'])].concat());
        let string_data = bytes(4, &[bytes(1, b"s"), bytes(2, b"plain")].concat());
        let secret = [
            bytes(1, &bytes(1, b"anchor")),
            data,
            bytes(3, b"Opaque"),
            string_data,
            vec![key(5, 0), 1],
        ]
        .concat();
        let v = decode(&envelope("v1", "Secret", &secret), "v1", "Secret").unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "anchor"},
                "data": {"key": "AP94"},
                "type": "Opaque",
                "stringData": {"s": "plain"},
                "immutable": true,
            })
        );
    }

    #[test]
    fn refuses_other_kinds_and_garbage() {
        let e = decode(
            &envelope("v1", "ConfigMap", &[]),
            "certificates.k8s.io/v1",
            "CertificateSigningRequest",
        )
        .unwrap_err();
        assert_eq!(e.code, 400);
        assert!(decode(b"{}", "v1", "X").is_err());
        for cut in 0..20 {
            let body = envelope("authentication.k8s.io/v1", "SelfSubjectReview", &[1, 2, 3]);
            let _ = decode(
                body.get(..cut).unwrap_or(&body),
                "authentication.k8s.io/v1",
                "SelfSubjectReview",
            );
        }
    }

    /// A valid CertificateSigningRequest envelope to mutate.
    fn valid_csr() -> Vec<u8> {
        let meta = [bytes(1, b"demo"), bytes(6, b"42")].concat();
        let condition = [bytes(1, b"Approved"), bytes(6, b"True")].concat();
        let spec = [bytes(5, b"client auth"), bytes(7, b"example.com/x")].concat();
        let csr = [
            bytes(1, &meta),
            bytes(2, &spec),
            bytes(3, &bytes(1, &condition)),
        ]
        .concat();
        envelope("certificates.k8s.io/v1", "CertificateSigningRequest", &csr)
    }

    mod proptests {
        use super::{decode, valid_csr};

        proptest::proptest! {
            /// Arbitrary bytes after the magic prefix decode or are a 400, never a panic.
            #[test]
            fn arbitrary_bodies_are_decoded_or_refused(tail in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
                let body = [b"k8s\x00".as_slice(), &tail].concat();
                if let Err(e) = decode(&body, "certificates.k8s.io/v1", "CertificateSigningRequest") {
                    proptest::prop_assert_eq!(e.code, 400);
                }
            }

            /// Arbitrary SubjectAccessReview bodies (their spec carries the extra map) decode or
            /// are a 400.
            #[test]
            fn arbitrary_access_reviews_are_decoded_or_refused(spec in proptest::collection::vec(proptest::num::u8::ANY, 0..120)) {
                let body = super::envelope("authorization.k8s.io/v1", "SubjectAccessReview", &super::bytes(2, &spec));
                if let Err(e) = decode(&body, "authorization.k8s.io/v1", "SubjectAccessReview") {
                    proptest::prop_assert_eq!(e.code, 400);
                }
            }

            /// A valid request with bytes flipped, cut or inserted decodes or is a 400.
            #[test]
            fn mutated_requests_are_decoded_or_refused(
                at in 0usize..200,
                byte in proptest::num::u8::ANY,
                how in 0u8..3,
            ) {
                let mut body = valid_csr();
                let at = at.checked_rem(body.len()).unwrap_or(0);
                match how {
                    0 => body[at] ^= byte | 1,
                    1 => body.truncate(at),
                    _ => body.insert(at, byte),
                }
                if let Err(e) = decode(&body, "certificates.k8s.io/v1", "CertificateSigningRequest") {
                    proptest::prop_assert_eq!(e.code, 400);
                }
            }
        }
    }
}
