//! CertificateSigningRequests (`certificates.k8s.io/v1`) as kube-apiserver's registry treats them:
//! the strategies of the object and of its `approval` and `status` subresources
//! (`pkg/registry/certificates/certificates/strategy.go`), the validation
//! (`pkg/apis/certificates/validation/validation.go`), and the hook where the automatic approver
//! and signer run after each change.

use std::collections::BTreeSet;
use std::time::SystemTime;

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::auth::User;
use super::handler::Shared;
use super::ids;
use super::status::{ApiError, FieldError};
use super::store::Subresource;
use super::x509;

/// The kind, for messages.
const KIND: &str = "CertificateSigningRequest";
/// The API group, for messages.
const GROUP: &str = "certificates.k8s.io";
/// The signer name the v1 API refuses.
const LEGACY_UNKNOWN_SIGNER: &str = "kubernetes.io/legacy-unknown";
/// The shortest `spec.expirationSeconds` allowed.
const MIN_EXPIRATION_SECONDS: i64 = 600;
/// Condition types whose status may only be `True`.
const TRUE_ONLY: [&str; 3] = ["Approved", "Denied", "Failed"];
/// The key usages the API accepts (`certificates.KeyUsage` values).
const USAGES: [&str; 23] = [
    "signing",
    "digital signature",
    "content commitment",
    "key encipherment",
    "key agreement",
    "data encipherment",
    "cert sign",
    "crl sign",
    "encipher only",
    "decipher only",
    "any",
    "server auth",
    "client auth",
    "code signing",
    "email protection",
    "s/mime",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "timestamping",
    "ocsp signing",
    "microsoft sgc",
    "netscape sgc",
];
/// Longest domain part of a signer name (a DNS-1123 subdomain).
const MAX_SIGNER_DOMAIN: usize = 253;
/// Longest signer name: domain, `/`, and a namespace and resource name joined by `.`.
const MAX_SIGNER_NAME: usize = 253 + 1 + 63 + 1 + 253;

impl Shared {
    /// Runs after every write to the CertificateSigningRequest `name` (create, update, patch, the
    /// `approval` and `status` subresources; not for dry runs): this is where the double's
    /// automatic approver and signer run, as kube-controller-manager's `csrapproving` and
    /// `csrsigning` controllers would react to the change. They read and write the object through
    /// `self.store` (an update through [`super::store::Store::update_part`] with
    /// [`Subresource::Approval`] or [`Subresource::Status`] follows the same rules a client's
    /// does) and sign with `self.ca` ([`super::ca::Ca::sign`]).
    ///
    /// The approver (when [`super::super::Builder::csr_approver`] is on) and then the signer
    /// (when [`super::super::Builder::csr_signer`] is on) each look at the object once; their
    /// writes go through the same subresource rules, and do not call this hook again.
    pub(crate) fn after_csr_change(&self, name: &str) {
        if self.csr_approver {
            super::kcm::approve(self, name);
        }
        if self.csr_signer {
            super::kcm::sign(self, name);
        }
    }
}

/// `metadata.name`: anything that is a path segment ("We don't care what you call your
/// certificate requests"); otherwise a 400 as kube-apiserver's key function answers.
pub(crate) fn validate_name(name: &str) -> Result<(), ApiError> {
    let mut problems = Vec::new();
    if name == "." || name == ".." {
        problems.push(format!("may not be '{name}'"));
    }
    for bad in ['/', '%'] {
        if name.contains(bad) {
            problems.push(format!("may not contain '{bad}'"));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    let shown: String = name.chars().take(253).collect();
    Err(ApiError::bad_request(format!(
        "Name parameter invalid: {shown:?}: {}",
        problems.join(";")
    )))
}

/// Create: the requester's identity goes into `spec.username`, `spec.uid`, `spec.groups` and
/// `spec.extra`, whatever the client sent (kube-apiserver's `PrepareForCreate`).
pub(crate) fn set_requester(object: &mut Value, user: &User) -> Result<(), ApiError> {
    let Some(obj) = object.as_object_mut() else {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    };
    let spec = obj
        .entry("spec")
        .or_insert_with(|| Value::Object(Map::new()));
    if spec.is_null() {
        *spec = Value::Object(Map::new());
    }
    let Some(spec) = spec.as_object_mut() else {
        return Err(decode_error("spec must be an object"));
    };
    for field in ["username", "uid", "groups", "extra"] {
        spec.remove(field);
    }
    spec.insert("username".to_owned(), Value::String(user.name.clone()));
    if let Some(uid) = user.uid.as_ref().filter(|u| !u.is_empty()) {
        spec.insert("uid".to_owned(), Value::String(uid.clone()));
    }
    spec.insert("groups".to_owned(), json!(user.groups));
    if !user.extra.is_empty() {
        spec.insert("extra".to_owned(), json!(user.extra));
    }
    Ok(())
}

/// Create: no pre-approved requests, the status is cleared.
pub(crate) fn prepare_create(object: &mut Value) {
    if let Some(obj) = object.as_object_mut() {
        obj.insert("status".to_owned(), json!({}));
    }
}

/// Create validation (kube-apiserver's `ValidateCertificateSigningRequestCreate`).
pub(crate) fn validate_create(object: &Value, name: &str) -> Result<(), ApiError> {
    let csr = Csr::decode(object)?;
    let errors = validate(&csr, Options::default());
    finish(name, errors)
}

/// Update: what the client may change through `part` (kube-apiserver's `PrepareForUpdate` of
/// the object's, the approval's and the status strategy), and the conditions' timestamps.
pub(crate) fn prepare_update(
    new: &mut Value,
    old: &Value,
    part: Option<Subresource>,
    now: SystemTime,
) {
    let Some(new_obj) = new.as_object_mut() else {
        return;
    };
    copy_field(new_obj, old, "spec");
    match part {
        None => copy_field(new_obj, old, "status"),
        Some(Subresource::Approval) => {
            let conditions = new_obj
                .get("status")
                .and_then(|s| s.get("conditions"))
                .cloned();
            copy_field(new_obj, old, "status");
            set_conditions(new_obj, conditions);
            populate_condition_timestamps(new_obj, old, now);
        }
        Some(Subresource::Status) => {
            for kind in ["Approved", "Denied"] {
                preserve_condition_instances(new_obj, old, kind);
            }
            populate_condition_timestamps(new_obj, old, now);
        }
    }
}

/// Update validation (kube-apiserver's `ValidateCertificateSigningRequestUpdate`, `...StatusUpdate`
/// and `...ApprovalUpdate`).
pub(crate) fn validate_update(
    new: &Value,
    old: &Value,
    part: Option<Subresource>,
    name: &str,
) -> Result<(), ApiError> {
    let new_csr = Csr::decode(new)?;
    // The stored object decoded before; a failure here would be the double's own bug.
    let old_csr = Csr::decode(old)?;
    let options = Options {
        both_approved_and_denied: old_csr.has("Approved") && old_csr.has("Denied"),
        duplicate_condition_types: old_csr.duplicate_condition_types(),
        empty_condition_type: old_csr.conditions.iter().any(|c| c.kind.is_empty()),
        arbitrary_certificate: new_csr.certificate == old_csr.certificate
            || (!old_csr.certificate.is_empty()
                && x509::check_certificates(&old_csr.certificate).is_err()),
    };
    let mut errors = validate(&new_csr, options);
    for kind in TRUE_ONLY {
        if new_csr.count(kind) < old_csr.count(kind) {
            errors.push(FieldError::forbidden(
                "status.conditions",
                &format!("updates may not remove a condition of type {kind:?}"),
            ));
        }
    }
    if part != Some(Subresource::Approval) {
        for kind in ["Approved", "Denied"] {
            let (n, o) = (new_csr.of_type(kind), old_csr.of_type(kind));
            if n.len() > o.len() {
                errors.push(FieldError::forbidden(
                    "status.conditions",
                    &format!("updates may not add a condition of type {kind:?}"),
                ));
            } else if n.len() == o.len() && n != o {
                errors.push(FieldError::forbidden(
                    "status.conditions",
                    &format!("updates may not modify a condition of type {kind:?}"),
                ));
            }
        }
    }
    if new_csr.certificate != old_csr.certificate {
        if part != Some(Subresource::Status) {
            errors.push(FieldError::forbidden(
                "status.certificate",
                "updates may not set certificate content",
            ));
        } else if !old_csr.certificate.is_empty() {
            errors.push(FieldError::forbidden(
                "status.certificate",
                "updates may not modify existing certificate content",
            ));
        }
    }
    finish(name, errors)
}

/// Tolerances kube-apiserver grants an update when the stored object already breaks a rule.
#[derive(Debug, Default, Clone, Copy)]
struct Options {
    both_approved_and_denied: bool,
    duplicate_condition_types: bool,
    empty_condition_type: bool,
    arbitrary_certificate: bool,
}

/// One condition, as validation reads it.
#[derive(Debug, PartialEq)]
struct Condition {
    kind: String,
    status: String,
    raw: Value,
}

/// The fields validation reads, decoded (a wrongly typed field is a 400, as a decoding error is
/// in kube-apiserver).
#[derive(Debug)]
struct Csr {
    request: Vec<u8>,
    usages: Vec<String>,
    signer_name: String,
    expiration_seconds: Option<i64>,
    conditions: Vec<Condition>,
    certificate: Vec<u8>,
}

impl Csr {
    fn decode(object: &Value) -> Result<Csr, ApiError> {
        let bytes = |pointer: &str, field: &str| -> Result<Vec<u8>, ApiError> {
            match object.pointer(pointer) {
                None | Some(Value::Null) => Ok(Vec::new()),
                Some(Value::String(s)) => base64::engine::general_purpose::STANDARD
                    .decode(s)
                    .map_err(|e| decode_error(&format!("{field}: illegal base64 data: {e}"))),
                Some(_) => Err(decode_error(&format!("{field} must be a base64 string"))),
            }
        };
        let usages = match object.pointer("/spec/usages") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|u| {
                    u.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| decode_error("spec.usages must be strings"))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(decode_error("spec.usages must be an array")),
        };
        let signer_name = match object.pointer("/spec/signerName") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(_) => return Err(decode_error("spec.signerName must be a string")),
        };
        let expiration_seconds = match object.pointer("/spec/expirationSeconds") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_i64()
                    .filter(|s| i32::try_from(*s).is_ok())
                    .ok_or_else(|| decode_error("spec.expirationSeconds must be an int32"))?,
            ),
        };
        let conditions = match object.pointer("/status/conditions") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|c| {
                    let text = |key: &str| -> Result<String, ApiError> {
                        match c.get(key) {
                            None | Some(Value::Null) => Ok(String::new()),
                            Some(Value::String(s)) => Ok(s.clone()),
                            Some(_) => Err(decode_error(&format!(
                                "status.conditions[].{key} must be a string"
                            ))),
                        }
                    };
                    if !c.is_object() {
                        return Err(decode_error("status.conditions must be objects"));
                    }
                    Ok(Condition {
                        kind: text("type")?,
                        status: text("status")?,
                        raw: c.clone(),
                    })
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(decode_error("status.conditions must be an array")),
        };
        Ok(Csr {
            request: bytes("/spec/request", "spec.request")?,
            usages,
            signer_name,
            expiration_seconds,
            conditions,
            certificate: bytes("/status/certificate", "status.certificate")?,
        })
    }

    fn of_type(&self, kind: &str) -> Vec<&Value> {
        self.conditions
            .iter()
            .filter(|c| c.kind == kind)
            .map(|c| &c.raw)
            .collect()
    }

    fn count(&self, kind: &str) -> usize {
        self.conditions.iter().filter(|c| c.kind == kind).count()
    }

    fn has(&self, kind: &str) -> bool {
        self.count(kind) > 0
    }

    fn duplicate_condition_types(&self) -> bool {
        let mut seen = BTreeSet::new();
        self.conditions
            .iter()
            .any(|c| !seen.insert(c.kind.as_str()))
    }
}

/// kube-apiserver's `validateCertificateSigningRequest`.
fn validate(csr: &Csr, options: Options) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if let Err(e) = x509::check_certificate_request(&csr.request) {
        let shown = if csr.request.is_empty() {
            "[]byte(nil)"
        } else {
            // Go prints every byte; the double does not echo unbounded input.
            "[]byte{...}"
        };
        errors.push(FieldError::invalid("spec.request", shown, &e));
    }
    if csr.usages.is_empty() {
        errors.push(FieldError::required("spec.usages"));
    }
    let mut supported = USAGES;
    supported.sort_unstable();
    for (i, usage) in csr.usages.iter().enumerate() {
        if !USAGES.contains(&usage.as_str()) {
            let shown: String = usage.chars().take(64).collect();
            errors.push(FieldError::not_supported(
                format!("spec.usages[{i}]"),
                &shown,
                &supported,
            ));
        }
    }
    let mut seen = BTreeSet::new();
    for (i, usage) in csr.usages.iter().enumerate() {
        if !seen.insert(usage.as_str()) {
            let shown: String = usage.chars().take(64).collect();
            errors.push(FieldError::duplicate(format!("spec.usages[{i}]"), &shown));
        }
    }
    if csr.signer_name == LEGACY_UNKNOWN_SIGNER {
        errors.push(FieldError::invalid(
            "spec.signerName",
            &format!("{LEGACY_UNKNOWN_SIGNER:?}"),
            "the legacy signerName is not allowed via this API version",
        ));
    } else {
        errors.extend(validate_signer_name(&csr.signer_name));
    }
    if let Some(seconds) = csr
        .expiration_seconds
        .filter(|s| *s < MIN_EXPIRATION_SECONDS)
    {
        errors.push(FieldError::invalid(
            "spec.expirationSeconds",
            &seconds.to_string(),
            "may not specify a duration less than 600 seconds (10 minutes)",
        ));
    }
    errors.extend(validate_conditions(&csr.conditions, options));
    if !options.arbitrary_certificate
        && !csr.certificate.is_empty()
        && let Err(e) = x509::check_certificates(&csr.certificate)
    {
        errors.push(FieldError::invalid(
            "status.certificate",
            "\"<certificate data>\"",
            &e,
        ));
    }
    errors
}

/// kube-apiserver's `validateConditions`.
fn validate_conditions(conditions: &[Condition], options: Options) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut seen = BTreeSet::new();
    let (mut approved, mut denied) = (false, false);
    for (i, c) in conditions.iter().enumerate() {
        let at = format!("status.conditions[{i}]");
        if !options.empty_condition_type && c.kind.is_empty() {
            errors.push(FieldError::required(format!("{at}.type")));
        }
        let allowed: &[&str] = if TRUE_ONLY.contains(&c.kind.as_str()) {
            &["True"]
        } else {
            &["False", "True", "Unknown"]
        };
        if c.status.is_empty() {
            errors.push(FieldError::required(format!("{at}.status")));
        } else if !allowed.contains(&c.status.as_str()) {
            let shown: String = c.status.chars().take(64).collect();
            errors.push(FieldError::not_supported(
                format!("{at}.status"),
                &shown,
                allowed,
            ));
        }
        if !options.both_approved_and_denied {
            let clash = match c.kind.as_str() {
                "Approved" => {
                    approved = true;
                    denied
                }
                "Denied" => {
                    denied = true;
                    approved
                }
                _ => false,
            };
            if clash {
                errors.push(FieldError::invalid(
                    format!("{at}.type"),
                    &format!("{:?}", c.kind),
                    "Approved and Denied conditions are mutually exclusive",
                ));
            }
        }
        if !options.duplicate_condition_types && !seen.insert(c.kind.as_str()) {
            let shown: String = c.kind.chars().take(64).collect();
            errors.push(FieldError::duplicate(format!("{at}.type"), &shown));
        }
    }
    errors
}

/// kube-apiserver's `ValidateSignerName`: `<fqdn>/<path>`, DNS-1123 labels in both parts.
fn validate_signer_name(signer: &str) -> Vec<FieldError> {
    const FIELD: &str = "spec.signerName";
    let mut errors = Vec::new();
    if signer.is_empty() {
        errors.push(FieldError::required(FIELD));
        return errors;
    }
    let shown = |s: &str| format!("{:?}", s.chars().take(MAX_SIGNER_NAME).collect::<String>());
    let Some((domain, path)) = signer.split_once('/').filter(|(_, p)| !p.contains('/')) else {
        errors.push(FieldError::invalid(
            FIELD,
            &shown(signer),
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        ));
        return errors;
    };
    if domain.len() > MAX_SIGNER_DOMAIN {
        errors.push(FieldError::too_long(FIELD, MAX_SIGNER_DOMAIN));
    }
    let labels: Vec<&str> = domain.split('.').collect();
    if let Some((label, problem)) = labels
        .iter()
        .find_map(|l| label_problem(l, 63).map(|p| (*l, p)))
    {
        errors.push(FieldError::invalid(
            FIELD,
            &shown(domain),
            &format!("validating label {label:?}: {problem}"),
        ));
    }
    if labels.len() < 2 {
        errors.push(FieldError::invalid(
            FIELD,
            &shown(domain),
            "should be a domain with at least two segments separated by dots",
        ));
    }
    if let Some((label, problem)) = path
        .split('.')
        .find_map(|l| subdomain_problem(l).map(|p| (l, p)))
    {
        errors.push(FieldError::invalid(
            FIELD,
            &shown(path),
            &format!("validating label {label:?}: {problem}"),
        ));
    }
    if signer.len() > MAX_SIGNER_NAME {
        errors.push(FieldError::too_long(FIELD, MAX_SIGNER_NAME));
    }
    errors
}

/// What `IsDNS1123Label` says about `label` (at most `max` characters), if anything.
fn label_problem(label: &str, max: usize) -> Option<String> {
    if label.len() > max {
        return Some(format!("must be no more than {max} characters"));
    }
    let ok = !label.is_empty()
        && label
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !label.starts_with('-')
        && !label.ends_with('-');
    (!ok).then(|| "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".to_owned())
}

/// What `IsDNS1123Subdomain` says about a dot-free `label`, if anything.
fn subdomain_problem(label: &str) -> Option<String> {
    if label.len() > 253 {
        return Some("must be no more than 253 characters".to_owned());
    }
    label_problem(label, 253).map(|_| "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_owned())
}

fn finish(name: &str, errors: Vec<FieldError>) -> Result<(), ApiError> {
    if errors.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid_fields(KIND, GROUP, name, &errors))
}

/// A body kube-apiserver could not decode into a CertificateSigningRequest: 400.
fn decode_error(detail: &str) -> ApiError {
    ApiError::bad_request(format!(
        "CertificateSigningRequest in version \"v1\" cannot be handled as a CertificateSigningRequest: {detail}"
    ))
}

/// `new[field] = old[field]` (removed when `old` has none).
fn copy_field(new: &mut Map<String, Value>, old: &Value, field: &str) {
    match old.get(field) {
        Some(v) => {
            new.insert(field.to_owned(), v.clone());
        }
        None => {
            new.remove(field);
        }
    }
}

/// Sets `status.conditions` (removes it when `None`).
fn set_conditions(new: &mut Map<String, Value>, conditions: Option<Value>) {
    let status = new
        .entry("status")
        .or_insert_with(|| Value::Object(Map::new()));
    if !status.is_object() {
        *status = Value::Object(Map::new());
    }
    if let Some(status) = status.as_object_mut() {
        match conditions {
            Some(c) => {
                status.insert("conditions".to_owned(), c);
            }
            None => {
                status.remove("conditions");
            }
        }
    }
}

fn conditions_mut(new: &mut Map<String, Value>) -> Option<&mut Vec<Value>> {
    new.get_mut("status")?.get_mut("conditions")?.as_array_mut()
}

fn condition_type(c: &Value) -> &str {
    c.get("type").and_then(Value::as_str).unwrap_or_default()
}

/// The status strategy keeps the stored Approved/Denied conditions as they were, when the update
/// has as many of them (otherwise validation refuses the addition or removal).
fn preserve_condition_instances(new: &mut Map<String, Value>, old: &Value, kind: &str) {
    let old_ones: Vec<Value> = old
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .filter(|c| condition_type(c) == kind)
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let Some(conditions) = conditions_mut(new) else {
        return;
    };
    let slots: Vec<&mut Value> = conditions
        .iter_mut()
        .filter(|c| condition_type(c) == kind)
        .collect();
    if slots.len() != old_ones.len() {
        return;
    }
    for (slot, old) in slots.into_iter().zip(old_ones) {
        *slot = old;
    }
}

/// Fills a condition's missing `lastUpdateTime` with now and its missing `lastTransitionTime`
/// with the stored condition's of the same type and status, else now.
fn populate_condition_timestamps(new: &mut Map<String, Value>, old: &Value, now: SystemTime) {
    let now = ids::timestamp(now);
    let old_conditions: Vec<Value> = old
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let Some(conditions) = conditions_mut(new) else {
        return;
    };
    let unset = |v: Option<&Value>| v.and_then(Value::as_str).is_none_or(str::is_empty);
    for c in conditions.iter_mut() {
        let kind = condition_type(c).to_owned();
        let status = c
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let Some(map) = c.as_object_mut() else {
            continue;
        };
        if unset(map.get("lastUpdateTime")) {
            map.insert("lastUpdateTime".to_owned(), Value::String(now.clone()));
        }
        if unset(map.get("lastTransitionTime")) {
            let previous = old_conditions
                .iter()
                .filter(|o| {
                    condition_type(o) == kind
                        && o.get("status").and_then(Value::as_str) == Some(status.as_str())
                })
                .find_map(|o| {
                    o.get("lastTransitionTime")
                        .and_then(Value::as_str)
                        .filter(|t| !t.is_empty())
                        .map(str::to_owned)
                });
            map.insert(
                "lastTransitionTime".to_owned(),
                Value::String(previous.unwrap_or_else(|| now.clone())),
            );
        }
    }
}
