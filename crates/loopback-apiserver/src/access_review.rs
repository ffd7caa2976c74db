//! The reviews that store nothing: `tokenreviews` (`authentication.k8s.io/v1`) and
//! `subjectaccessreviews`, `localsubjectaccessreviews`, `selfsubjectaccessreviews`,
//! `selfsubjectrulesreviews` (`authorization.k8s.io/v1`), answered as kube-apiserver's
//! registries (`pkg/registry/authentication/tokenreview`, `pkg/registry/authorization/*`) do,
//! by the double's authenticators and authorizer.

use std::collections::BTreeMap;
use std::time::SystemTime;

use delegated_auth::{Attributes, ResourceAttributes, UserInfo};
use serde_json::{Map, Value, json};

use super::auth::{self, MASTERS, TokenAuthenticators, User};
use super::rbac::{Decision, Policy, PolicyRule};
use super::status::{ApiError, FieldError};
use super::store::Store;

/// The review kinds (named as the API names them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(
    clippy::enum_variant_names,
    reason = "the variants are the API's kind names"
)]
pub(crate) enum Kind {
    TokenReview,
    SubjectAccessReview,
    LocalSubjectAccessReview,
    SelfSubjectAccessReview,
    SelfSubjectRulesReview,
}

impl Kind {
    /// The kind named by the plural of its resource.
    pub(crate) fn from_plural(group_version: &str, plural: &str) -> Option<Kind> {
        match (group_version, plural) {
            ("authentication.k8s.io/v1", "tokenreviews") => Some(Kind::TokenReview),
            ("authorization.k8s.io/v1", "subjectaccessreviews") => Some(Kind::SubjectAccessReview),
            ("authorization.k8s.io/v1", "localsubjectaccessreviews") => {
                Some(Kind::LocalSubjectAccessReview)
            }
            ("authorization.k8s.io/v1", "selfsubjectaccessreviews") => {
                Some(Kind::SelfSubjectAccessReview)
            }
            ("authorization.k8s.io/v1", "selfsubjectrulesreviews") => {
                Some(Kind::SelfSubjectRulesReview)
            }
            _ => None,
        }
    }

    /// `TokenReview`, `SubjectAccessReview`...
    pub(crate) fn kind(self) -> &'static str {
        match self {
            Kind::TokenReview => "TokenReview",
            Kind::SubjectAccessReview => "SubjectAccessReview",
            Kind::LocalSubjectAccessReview => "LocalSubjectAccessReview",
            Kind::SelfSubjectAccessReview => "SelfSubjectAccessReview",
            Kind::SelfSubjectRulesReview => "SelfSubjectRulesReview",
        }
    }

    /// The API group.
    pub(crate) fn group(self) -> &'static str {
        match self {
            Kind::TokenReview => "authentication.k8s.io",
            _ => "authorization.k8s.io",
        }
    }

    /// The resource's plural.
    pub(crate) fn plural(self) -> &'static str {
        match self {
            Kind::TokenReview => "tokenreviews",
            Kind::SubjectAccessReview => "subjectaccessreviews",
            Kind::LocalSubjectAccessReview => "localsubjectaccessreviews",
            Kind::SelfSubjectAccessReview => "selfsubjectaccessreviews",
            Kind::SelfSubjectRulesReview => "selfsubjectrulesreviews",
        }
    }

    /// Whether it is created in a namespace.
    pub(crate) fn namespaced(self) -> bool {
        self == Kind::LocalSubjectAccessReview
    }
}

/// Creates the review `body` of `kind` (in `namespace` for a local one) for `requester`.
pub(crate) fn create(
    kind: Kind,
    body: &Value,
    namespace: &str,
    requester: &User,
    tokens: &TokenAuthenticators<'_>,
    now: SystemTime,
) -> Result<Value, ApiError> {
    let Value::Object(object) = body else {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    };
    match object.get("kind").and_then(Value::as_str) {
        None | Some("") => {}
        Some(k) if k == kind.kind() => {}
        Some(_) => {
            return Err(ApiError::bad_request(format!(
                "the object provided is not a {}",
                kind.kind()
            )));
        }
    }
    let api_version = format!("{}/v1", kind.group());
    match object.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => {}
        Some(v) if v == api_version => {}
        Some(_) => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data does not match the expected API version ({api_version})"
            )));
        }
    }
    let spec = match object.get("spec") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(spec)) => spec.clone(),
        Some(_) => return Err(ApiError::bad_request("spec must be an object")),
    };
    let status = match kind {
        Kind::TokenReview => token_review(&spec, tokens, now)?,
        Kind::SelfSubjectRulesReview => {
            let ns = spec.get("namespace").and_then(Value::as_str).unwrap_or("");
            rules_review(tokens.store, &requester.info(), ns)
        }
        Kind::SubjectAccessReview
        | Kind::LocalSubjectAccessReview
        | Kind::SelfSubjectAccessReview => {
            let user = if kind == Kind::SelfSubjectAccessReview {
                requester.info()
            } else {
                spec_user(&spec)?
            };
            let attrs = spec_attributes(kind, &spec, user, namespace)?;
            access_review(tokens.store, &attrs)
        }
    };
    let mut metadata = match object.get("metadata") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    metadata.insert("creationTimestamp".to_owned(), Value::Null);
    if kind.namespaced() {
        metadata.insert("namespace".to_owned(), Value::String(namespace.to_owned()));
    }
    let mut spec = spec;
    if kind == Kind::SelfSubjectAccessReview || kind == Kind::SelfSubjectRulesReview {
        spec.remove("user");
    }
    Ok(json!({
        "kind": kind.kind(),
        "apiVersion": api_version,
        "metadata": metadata,
        "spec": spec,
        "status": status,
    }))
}

/// A TokenReview's status: the token's user and the audiences it is accepted for, or
/// `authenticated: false` with the error.
fn token_review(
    spec: &Map<String, Value>,
    tokens: &TokenAuthenticators<'_>,
    now: SystemTime,
) -> Result<Value, ApiError> {
    let token = spec.get("token").and_then(Value::as_str).unwrap_or("");
    if token.is_empty() {
        return Err(ApiError::bad_request(
            "token is required for TokenReview in authentication",
        ));
    }
    let requested: Vec<String> = match spec.get("audiences") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => list
            .iter()
            .map(|a| a.as_str().map(str::to_owned))
            .collect::<Option<_>>()
            .ok_or_else(|| ApiError::bad_request("spec.audiences must be strings"))?,
        Some(_) => return Err(ApiError::bad_request("spec.audiences must be a list")),
    };
    let audiences = if requested.is_empty() {
        vec![tokens.issuer.issuer().to_owned()]
    } else {
        requested
    };
    Ok(match tokens.authenticate(token, &audiences, now) {
        Ok((user, accepted)) => {
            let mut info = json!({"username": user.name, "groups": user.groups});
            if let Some(map) = info.as_object_mut() {
                if let Some(uid) = user.uid.as_ref().filter(|u| !u.is_empty()) {
                    map.insert("uid".to_owned(), Value::String(uid.clone()));
                }
                if !user.extra.is_empty() {
                    map.insert("extra".to_owned(), json!(user.extra));
                }
            }
            json!({"authenticated": true, "user": info, "audiences": accepted})
        }
        Err(None) => json!({"user": {}}),
        Err(Some(error)) => json!({"user": {}, "error": error}),
    })
}

/// A SubjectAccessReview's status: `allowed` with the authorizer's reason, or not.
fn access_review(store: &Store, attrs: &Attributes) -> Value {
    match auth::authorize(store, attrs) {
        Decision::Allow(reason) if reason.is_empty() => json!({"allowed": true}),
        Decision::Allow(reason) => json!({"allowed": true, "reason": reason}),
        Decision::NoOpinion(reason) if reason.is_empty() => json!({"allowed": false}),
        Decision::NoOpinion(reason) => json!({"allowed": false, "reason": reason}),
    }
}

/// A SelfSubjectRulesReview's status: the rules `user` holds in `namespace`.
fn rules_review(store: &Store, user: &UserInfo, namespace: &str) -> Value {
    let mut rules: Vec<PolicyRule> = Vec::new();
    if user.groups.iter().any(|g| g == MASTERS) {
        rules.push(PolicyRule::new(["*"]).groups(["*"]).resources(["*"]));
        rules.push(PolicyRule::new(["*"]).urls(["*"]));
    }
    let held = Policy::from_store(store).rules_for(user, namespace);
    rules.extend(held.rules);
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    for r in rules {
        if r.non_resource_urls.is_empty() {
            let mut v =
                json!({"verbs": r.verbs, "apiGroups": r.api_groups, "resources": r.resources});
            if let (false, Some(m)) = (r.resource_names.is_empty(), v.as_object_mut()) {
                m.insert("resourceNames".to_owned(), json!(r.resource_names));
            }
            resource_rules.push(v);
        } else {
            non_resource_rules
                .push(json!({"verbs": r.verbs, "nonResourceURLs": r.non_resource_urls}));
        }
    }
    let mut status = json!({
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": !held.errors.is_empty(),
    });
    if let (false, Some(m)) = (held.errors.is_empty(), status.as_object_mut()) {
        m.insert(
            "evaluationError".to_owned(),
            Value::String(held.errors.join(", ")),
        );
    }
    status
}

/// The user a SubjectAccessReview asks about (`spec.user`, `uid`, `groups`, `extra`).
fn spec_user(spec: &Map<String, Value>) -> Result<UserInfo, ApiError> {
    let name = spec.get("user").and_then(Value::as_str).unwrap_or("");
    let groups: Vec<String> = spec
        .get("groups")
        .and_then(|g| serde_json::from_value(g.clone()).ok())
        .unwrap_or_default();
    if name.is_empty() && groups.is_empty() {
        return Err(ApiError::invalid_fields(
            "SubjectAccessReview",
            "authorization.k8s.io",
            "",
            &[FieldError::invalid(
                "spec.user",
                "\"\"",
                "at least one of user or group must be specified",
            )],
        ));
    }
    let mut user = UserInfo::new(name).with_groups(groups);
    if let Some(uid) = spec
        .get("uid")
        .and_then(Value::as_str)
        .filter(|u| !u.is_empty())
    {
        user = user.with_uid(uid);
    }
    let extra: BTreeMap<String, Vec<String>> = spec
        .get("extra")
        .and_then(|e| serde_json::from_value(e.clone()).ok())
        .unwrap_or_default();
    for (k, v) in extra {
        user = user.with_extra(k, v);
    }
    Ok(user)
}

/// The attributes a review asks about: exactly one of `resourceAttributes` and
/// `nonResourceAttributes`; a local review's namespace must be the request's.
fn spec_attributes(
    kind: Kind,
    spec: &Map<String, Value>,
    user: UserInfo,
    namespace: &str,
) -> Result<Attributes, ApiError> {
    let resource = spec.get("resourceAttributes").filter(|v| !v.is_null());
    let non_resource = spec.get("nonResourceAttributes").filter(|v| !v.is_null());
    let invalid = |field: &str, detail: &str| {
        ApiError::invalid_fields(
            kind.kind(),
            kind.group(),
            "",
            &[FieldError::invalid(field, "", detail)],
        )
    };
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    match (resource, non_resource) {
        (Some(r), None) => {
            let ns = s(r, "namespace");
            if kind == Kind::LocalSubjectAccessReview && ns != namespace {
                return Err(ApiError::bad_request(format!(
                    "spec.resourceAttributes.namespace must match namespace: {namespace}"
                )));
            }
            Ok(Attributes::resource(
                user,
                s(r, "verb"),
                ResourceAttributes::new(s(r, "group"), s(r, "version"), s(r, "resource"))
                    .in_namespace(ns)
                    .with_subresource(s(r, "subresource"))
                    .with_name(s(r, "name")),
            ))
        }
        (None, Some(n)) if kind != Kind::LocalSubjectAccessReview => {
            Ok(Attributes::non_resource(user, s(n, "verb"), s(n, "path")))
        }
        (None, Some(_)) => Err(invalid(
            "spec.nonResourceAttributes",
            "disallowed on this kind of request",
        )),
        _ => Err(invalid(
            "spec.resourceAttributes",
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
    }
}
