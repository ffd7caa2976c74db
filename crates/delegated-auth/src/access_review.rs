//! The SubjectAccessReview (`authorization.k8s.io/v1`), and its Local and Self variants: the
//! request that asks the API server whether a user may do something, built from
//! [`Attributes`], and the reading of its answer, decided as `k8s.io/apiserver`'s webhook
//! authorizer decides it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::attributes::{Attributes, ResourceAttributes, Target};
use crate::bounded_json;
use crate::error::Error;
use crate::token_review::{MAX_REVIEW_ERROR_BYTES, truncate};

/// The largest SubjectAccessReview answer read, in bytes.
pub const MAX_ACCESS_REVIEW_BYTES: usize = 256 * 1024;

const API_VERSION: &str = "authorization.k8s.io/v1";
const WHAT: &str = "SubjectAccessReview answer";

/// Which access review to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AccessReviewKind {
    /// `SubjectAccessReview` (`/apis/authorization.k8s.io/v1/subjectaccessreviews`): about any
    /// user, anywhere. What a delegating authorizer sends.
    Subject,
    /// `LocalSubjectAccessReview`
    /// (`/apis/authorization.k8s.io/v1/namespaces/<ns>/localsubjectaccessreviews`): about any
    /// user, in the namespace of the attributes (which must be a namespaced resource request).
    Local,
    /// `SelfSubjectAccessReview` (`/apis/authorization.k8s.io/v1/selfsubjectaccessreviews`):
    /// about the caller itself (`kubectl auth can-i`); the user in the attributes is not sent.
    SelfReview,
}

impl AccessReviewKind {
    /// The object's `kind`.
    #[must_use]
    pub fn kind(self) -> &'static str {
        match self {
            AccessReviewKind::Subject => "SubjectAccessReview",
            AccessReviewKind::Local => "LocalSubjectAccessReview",
            AccessReviewKind::SelfReview => "SelfSubjectAccessReview",
        }
    }
}

/// An access review's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decision {
    /// `allowed: true` (and not `denied`).
    Allow,
    /// `denied: true`: an authorizer refused explicitly (also when the answer says both
    /// allowed and denied, as Kubernetes decides it).
    Deny,
    /// Neither: no authorizer allowed it. A delegating authorizer answers 403.
    NoOpinion,
}

/// What an access review answer decides, with the server's reasons.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AccessReviewOutcome {
    /// The decision.
    pub decision: Decision,
    /// `status.reason`, cut to 1 KiB.
    pub reason: String,
    /// `status.evaluationError`, cut to 1 KiB: an authorizer failed while evaluating. With
    /// a `NoOpinion` decision this is a failed evaluation, not a refusal.
    pub evaluation_error: Option<String>,
}

impl AccessReviewOutcome {
    /// Whether a decision cache may keep this outcome. Every decision is, except one made
    /// while an evaluation failed that is not an allow: that is a failure to decide, and a
    /// decision cache never keeps it as a denial. (Kubernetes' webhook authorizer keeps it
    /// for the deny TTL; this crate is stricter.)
    #[must_use]
    pub fn is_cacheable(&self) -> bool {
        self.decision == Decision::Allow || self.evaluation_error.is_none()
    }

    /// Whether the request is allowed.
    #[must_use]
    pub fn is_allowed(&self) -> bool {
        self.decision == Decision::Allow
    }
}

/// The body of an access review of `attributes`, to `POST` to the path of `kind`: user, groups,
/// UID and extra (not for [`AccessReviewKind::SelfReview`]), then `resourceAttributes` with the
/// verb, or `nonResourceAttributes` with the path and verb. Empty fields are left out, as Go's
/// `omitempty` leaves them.
///
/// ```
/// use delegated_auth::{AccessReviewKind, Attributes, UserInfo, access_review_json};
/// let user = UserInfo::new("alice").with_groups(["devs"]);
/// let body = access_review_json(AccessReviewKind::Subject, &Attributes::non_resource(user, "get", "/metrics"))?;
/// assert_eq!(
///     String::from_utf8(body).unwrap(),
///     r#"{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"nonResourceAttributes":{"path":"/metrics","verb":"get"},"user":"alice","groups":["devs"]}}"#,
/// );
/// # Ok::<(), delegated_auth::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::Invalid`] for a [`AccessReviewKind::Local`] review of a request that is not for a
/// namespaced resource.
pub fn access_review_json(
    kind: AccessReviewKind,
    attributes: &Attributes,
) -> Result<Vec<u8>, Error> {
    let (resource, non_resource) = match &attributes.target {
        Target::Resource(r) => (Some(WireResource::new(r, &attributes.verb)), None),
        Target::NonResource { path } => (
            None,
            Some(WireNonResource {
                path,
                verb: &attributes.verb,
            }),
        ),
    };
    let namespace = match (kind, &attributes.target) {
        (AccessReviewKind::Local, Target::Resource(r)) if !r.namespace.is_empty() => {
            Some(r.namespace.as_str())
        }
        (AccessReviewKind::Local, _) => {
            return Err(Error::Invalid {
                what: "LocalSubjectAccessReview",
                reason: "needs a namespaced resource request",
            });
        }
        _ => None,
    };
    let user = &attributes.user;
    let subject = kind != AccessReviewKind::SelfReview;
    let body = Body {
        api_version: API_VERSION,
        kind: kind.kind(),
        metadata: namespace.map(|namespace| Metadata { namespace }),
        spec: Spec {
            resource_attributes: resource,
            non_resource_attributes: non_resource,
            user: if subject { &user.name } else { "" },
            groups: if subject { &user.groups } else { &[] },
            extra: subject.then_some(&user.extra).filter(|e| !e.is_empty()),
            uid: if subject {
                user.uid.as_deref().unwrap_or_default()
            } else {
                ""
            },
        },
    };
    serde_json::to_vec(&body).map_err(|e| Error::Json {
        what: "access review",
        line: e.line(),
        column: e.column(),
    })
}

/// Reads the API server's answer to an access review of `kind`: `http_status` and the body.
///
/// Decided as `k8s.io/apiserver`'s webhook authorizer decides: a status other than 200 or 201
/// is a backend failure (an error: the caller answers as on any failure, never with an allow);
/// `denied` wins (also over `allowed`); then `allowed`; otherwise no opinion. An
/// `evaluationError` is kept beside the decision, and makes a decision other than an allow
/// [not cacheable](AccessReviewOutcome::is_cacheable).
///
/// # Errors
///
/// [`Error::ReviewFailed`] for another HTTP status; [`Error::TooLarge`] beyond
/// [`MAX_ACCESS_REVIEW_BYTES`]; [`Error::Json`] when the body is not an access review's JSON;
/// [`Error::Invalid`] for another `apiVersion` or `kind`.
pub fn read_access_review(
    kind: AccessReviewKind,
    http_status: u16,
    body: &[u8],
) -> Result<AccessReviewOutcome, Error> {
    if !matches!(http_status, 200 | 201) {
        return Err(Error::ReviewFailed {
            what: kind.kind(),
            status: http_status,
        });
    }
    let answer: Answer = bounded_json::from_slice(WHAT, MAX_ACCESS_REVIEW_BYTES, body)?;
    bounded_json::check_type(
        WHAT,
        answer.api_version.as_deref(),
        answer.kind.as_deref(),
        API_VERSION,
        kind.kind(),
    )?;
    let status = answer.status.unwrap_or_default();
    let allowed = status.allowed == Some(true);
    let denied = status.denied == Some(true);
    let decision = if denied {
        Decision::Deny
    } else if allowed {
        Decision::Allow
    } else {
        Decision::NoOpinion
    };
    Ok(AccessReviewOutcome {
        decision,
        reason: truncate(status.reason.unwrap_or_default(), MAX_REVIEW_ERROR_BYTES),
        evaluation_error: status
            .evaluation_error
            .filter(|e| !e.is_empty())
            .map(|e| truncate(e, MAX_REVIEW_ERROR_BYTES)),
    })
}

#[derive(Serialize)]
struct Body<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<Metadata<'a>>,
    spec: Spec<'a>,
}

#[derive(Serialize)]
struct Metadata<'a> {
    namespace: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Spec<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    resource_attributes: Option<WireResource<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    non_resource_attributes: Option<WireNonResource<'a>>,
    #[serde(skip_serializing_if = "str::is_empty")]
    user: &'a str,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    groups: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    extra: Option<&'a BTreeMap<String, Vec<String>>>,
    #[serde(skip_serializing_if = "str::is_empty")]
    uid: &'a str,
}

#[derive(Serialize)]
struct WireResource<'a> {
    #[serde(skip_serializing_if = "str::is_empty")]
    namespace: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    verb: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    group: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    version: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    resource: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    subresource: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    name: &'a str,
}

impl<'a> WireResource<'a> {
    fn new(r: &'a ResourceAttributes, verb: &'a str) -> WireResource<'a> {
        WireResource {
            namespace: &r.namespace,
            verb,
            group: &r.api_group,
            version: &r.api_version,
            resource: &r.resource,
            subresource: &r.subresource,
            name: &r.name,
        }
    }
}

#[derive(Serialize)]
struct WireNonResource<'a> {
    #[serde(skip_serializing_if = "str::is_empty")]
    path: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    verb: &'a str,
}

#[derive(Deserialize)]
struct Answer {
    #[serde(rename = "apiVersion")]
    api_version: Option<String>,
    kind: Option<String>,
    status: Option<Status>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Status {
    allowed: Option<bool>,
    denied: Option<bool>,
    reason: Option<String>,
    evaluation_error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::user::UserInfo;

    #[test]
    fn resource_review_carries_every_attribute() {
        let user = UserInfo::new("alice")
            .with_uid("u-1")
            .with_groups(["g1", "g2"])
            .with_extra("scopes", ["a", "b"]);
        let attrs = Attributes::resource(
            user,
            "get",
            ResourceAttributes::new("apps", "v1", "deployments")
                .in_namespace("ns")
                .with_subresource("scale")
                .with_name("web"),
        );
        let v: serde_json::Value =
            serde_json::from_slice(&access_review_json(AccessReviewKind::Subject, &attrs).unwrap())
                .unwrap();
        assert_eq!(
            v,
            serde_json::json!({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview",
              "spec":{"resourceAttributes":{"namespace":"ns","verb":"get","group":"apps","version":"v1",
                "resource":"deployments","subresource":"scale","name":"web"},
                "user":"alice","groups":["g1","g2"],"extra":{"scopes":["a","b"]},"uid":"u-1"}})
        );
        let local: serde_json::Value =
            serde_json::from_slice(&access_review_json(AccessReviewKind::Local, &attrs).unwrap())
                .unwrap();
        assert_eq!(local["kind"], "LocalSubjectAccessReview");
        assert_eq!(local["metadata"]["namespace"], "ns");
        let own: serde_json::Value = serde_json::from_slice(
            &access_review_json(AccessReviewKind::SelfReview, &attrs).unwrap(),
        )
        .unwrap();
        assert_eq!(own["kind"], "SelfSubjectAccessReview");
        assert!(own["spec"].get("user").is_none());
        assert!(own["spec"].get("groups").is_none());
        assert!(own["spec"].get("extra").is_none());
        assert!(own["spec"].get("uid").is_none());
    }

    #[test]
    fn local_review_needs_a_namespace() {
        let attrs = Attributes::non_resource(UserInfo::new("a"), "get", "/metrics");
        assert!(access_review_json(AccessReviewKind::Local, &attrs).is_err());
    }
}
