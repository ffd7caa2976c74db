//! The control plane's rules for kubelet client requests: API validation and the CSR approver.

use std::collections::BTreeMap;
use std::fmt;

use crate::error::Error;
use crate::node_name::{NODE_USER_PREFIX, NODES_GROUP};
use crate::object::{CertificateSigningRequest, Condition, KUBELET_CLIENT_SIGNER};
use crate::request::CertificateRequest;
use crate::usage::KeyUsage;

/// Why a rule refused a request: Kubernetes' own message, for a human, and the typed error
/// behind it when there is one (a request that does not parse).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    message: String,
    error: Option<Error>,
}

impl Rejection {
    pub(crate) fn new(message: impl Into<String>) -> Rejection {
        Rejection {
            message: message.into(),
            error: None,
        }
    }

    /// Kubernetes' message for `error`, wrapped as `context: <error>`.
    pub(crate) fn caused_by(context: &str, error: Error) -> Rejection {
        Rejection {
            message: format!("{context}: {error}"),
            error: Some(error),
        }
    }

    /// The message.
    pub fn as_str(&self) -> &str {
        &self.message
    }

    /// The typed error behind the message, if any (also [`std::error::Error::source`]).
    pub fn error(&self) -> Option<&Error> {
        self.error.as_ref()
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Rejection {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// Checks a request for signer `kubernetes.io/kube-apiserver-client-kubelet` as Kubernetes'
/// `ValidateKubeletClientCSR` does, in its order and with its messages: organization exactly
/// `system:nodes`; no DNS, email, IP or URI subject alternative names; common name starting
/// with `system:node:`; usages, as a set, exactly {digital signature, key encipherment,
/// client auth} or {digital signature, client auth}.
///
/// # Errors
///
/// The first rule broken, as a [`Rejection`].
pub fn validate_kubelet_client(
    request: &CertificateRequest,
    usages: &[KeyUsage],
) -> Result<(), Rejection> {
    if request.organizations() != [NODES_GROUP] {
        return Err(Rejection::new("subject organization is not system:nodes"));
    }
    if !request.dns_names().is_empty() {
        return Err(Rejection::new("DNS subjectAltNames are not allowed"));
    }
    if !request.email_addresses().is_empty() {
        return Err(Rejection::new("Email subjectAltNames are not allowed"));
    }
    if !request.ip_addresses().is_empty() {
        return Err(Rejection::new("IP subjectAltNames are not allowed"));
    }
    if !request.uris().is_empty() {
        return Err(Rejection::new("URI subjectAltNames are not allowed"));
    }
    if !request
        .common_name()
        .is_some_and(|cn| cn.starts_with(NODE_USER_PREFIX))
    {
        return Err(Rejection::new(
            "subject common name does not begin with system:node:",
        ));
    }
    let set: std::collections::BTreeSet<KeyUsage> = usages.iter().copied().collect();
    let with_rsa = [
        KeyUsage::DigitalSignature,
        KeyUsage::KeyEncipherment,
        KeyUsage::ClientAuth,
    ];
    let without_rsa = [KeyUsage::DigitalSignature, KeyUsage::ClientAuth];
    if !set.iter().eq(sorted(&with_rsa).iter()) && !set.iter().eq(sorted(&without_rsa).iter()) {
        return Err(Rejection::new(
            "usages did not match [client auth digital signature key encipherment]",
        ));
    }
    Ok(())
}

fn sorted(usages: &[KeyUsage]) -> Vec<KeyUsage> {
    let mut v = usages.to_vec();
    v.sort_unstable();
    v
}

/// What the approver asks the authorizer (a `SubjectAccessReview`): may the requester
/// `create` `certificatesigningrequests/<subresource>` in group `certificates.k8s.io`?
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct AccessReview<'a> {
    /// The requester (`spec.username`).
    pub user: &'a str,
    /// The requester's UID (`spec.uid`).
    pub uid: Option<&'a str>,
    /// The requester's groups (`spec.groups`).
    pub groups: &'a [String],
    /// The requester's extra attributes (`spec.extra`).
    pub extra: &'a BTreeMap<String, Vec<String>>,
    /// Always `create`.
    pub verb: &'static str,
    /// Always `certificates.k8s.io`.
    pub group: &'static str,
    /// Always `certificatesigningrequests`.
    pub resource: &'static str,
    /// `selfnodeclient` or `nodeclient`.
    pub subresource: &'static str,
}

/// The two kinds of request the approver recognizes, in the order it tries them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Recognizer {
    /// A node renewing its own client certificate (`spec.username` is the request's common
    /// name); subresource `selfnodeclient`.
    SelfNodeClient,
    /// Any valid kubelet client request, typically from a bootstrap token; subresource
    /// `nodeclient`.
    NodeClient,
}

impl Recognizer {
    /// The subresource the approver checks access to.
    pub fn subresource(self) -> &'static str {
        match self {
            Recognizer::SelfNodeClient => "selfnodeclient",
            Recognizer::NodeClient => "nodeclient",
        }
    }

    /// Whether this recognizer matches `csr`, whose parsed `spec.request` is `request`:
    /// [`is_self_node_client_cert`] or [`is_node_client_cert`].
    pub fn recognizes(self, csr: &CertificateSigningRequest, request: &CertificateRequest) -> bool {
        match self {
            Recognizer::SelfNodeClient => is_self_node_client_cert(csr, request),
            Recognizer::NodeClient => is_node_client_cert(csr, request),
        }
    }

    /// The approval message Kubernetes writes.
    pub fn message(self) -> &'static str {
        match self {
            Recognizer::SelfNodeClient => {
                "Auto approving self kubelet client certificate after SubjectAccessReview."
            }
            Recognizer::NodeClient => {
                "Auto approving kubelet client certificate after SubjectAccessReview."
            }
        }
    }
}

/// The approver's `nodeclient` recognizer (`isNodeClientCert`): signer
/// [`KUBELET_CLIENT_SIGNER`] and a request that passes [`validate_kubelet_client`] with the
/// object's usages.
pub fn is_node_client_cert(csr: &CertificateSigningRequest, request: &CertificateRequest) -> bool {
    csr.spec.signer_name == KUBELET_CLIENT_SIGNER
        && validate_kubelet_client(request, &csr.spec.usages).is_ok()
}

/// The approver's `selfnodeclient` recognizer (`isSelfNodeClientCert`): the requester
/// (`spec.username`, empty if unset) is the request's common name, and
/// [`is_node_client_cert`].
pub fn is_self_node_client_cert(
    csr: &CertificateSigningRequest,
    request: &CertificateRequest,
) -> bool {
    csr.spec.username.as_deref().unwrap_or_default() == request.common_name().unwrap_or_default()
        && is_node_client_cert(csr, request)
}

/// The approver's verdict on one object.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Approval {
    /// Append this `Approved` condition (reason `AutoApproved`) through the approval
    /// subresource.
    Approve {
        /// Which recognizer matched and was authorized.
        recognizer: Recognizer,
        /// The condition to append.
        condition: Condition,
    },
    /// Leave it: already approved or denied, or already issued.
    AlreadyDecided,
    /// Leave it: not a kubelet client request this approver handles.
    NotRecognized(Rejection),
    /// Recognized, but the requester may not have it approved; the approver retries later.
    NotAuthorized(Rejection),
    /// `spec.request` does not parse; the approver retries later and sets no condition. The
    /// message is Kubernetes' (`unable to parse csr "<name>": ...`);
    /// [`Rejection::error`] holds the typed parse error.
    Unparseable(Rejection),
}

/// The CSR approver (kube-controller-manager's `csrapproving`) for one object.
///
/// Skips objects that already have a certificate or a condition of type `Approved` or
/// `Denied`, whatever its status (Kubernetes' `GetCertApprovalCondition` reads types only).
/// Parses the request as Kubernetes' `ParseCSR` does; tries [`Recognizer::SelfNodeClient`] (requester is the node itself) and then
/// [`Recognizer::NodeClient`]; for each that matches, asks `authorize` (the caller's
/// `SubjectAccessReview`) and approves on the first yes.
///
/// ```
/// # fn main() -> Result<(), tls_bootstrap::Error> {
/// use tls_bootstrap::{Approval, CertificateRequest, CertificateSigningRequest, NodeKey, approve};
///
/// let key = NodeKey::generate()?;
/// let request = CertificateRequest::for_node(&"worker-1".parse()?, &key)?;
/// let mut csr = CertificateSigningRequest::for_node(&request, None)?;
/// // The API server fills in who filed it.
/// csr.spec.username = Some("system:bootstrap:abcdef".into());
/// csr.spec.groups = vec!["system:bootstrappers:kubeadm:default-node-token".into()];
///
/// // kubeadm binds `nodeclient` to its tokens' group.
/// let verdict = approve(&csr, |review| {
///     review.subresource == "nodeclient"
///         && review.groups.iter().any(|g| g == "system:bootstrappers:kubeadm:default-node-token")
/// });
/// let Approval::Approve { condition, .. } = verdict else { panic!("not approved") };
/// assert_eq!(condition.reason.as_deref(), Some("AutoApproved"));
/// # Ok(()) }
/// ```
pub fn approve(
    csr: &CertificateSigningRequest,
    mut authorize: impl FnMut(&AccessReview<'_>) -> bool,
) -> Approval {
    if csr
        .status
        .certificate
        .as_ref()
        .is_some_and(|c| !c.is_empty())
        || csr.condition("Approved").is_some()
        || csr.condition("Denied").is_some()
    {
        return Approval::AlreadyDecided;
    }
    let name = csr.name().unwrap_or_default();
    let request = match csr.certificate_request() {
        Ok(r) => r,
        Err(e) => {
            return Approval::Unparseable(Rejection::caused_by(
                &format!("unable to parse csr {name:?}"),
                e,
            ));
        }
    };
    if !is_node_client_cert(csr, &request) {
        return Approval::NotRecognized(Rejection::new(format!(
            "csr {name:?} is not a kubelet client certificate request"
        )));
    }
    let user = csr.spec.username.as_deref().unwrap_or_default();
    let mut tried = Vec::new();
    for recognizer in [Recognizer::SelfNodeClient, Recognizer::NodeClient] {
        if !recognizer.recognizes(csr, &request) {
            continue;
        }
        tried.push(recognizer.subresource());
        let review = AccessReview {
            user,
            uid: csr.spec.uid.as_deref(),
            groups: &csr.spec.groups,
            extra: &csr.spec.extra,
            verb: "create",
            group: "certificates.k8s.io",
            resource: "certificatesigningrequests",
            subresource: recognizer.subresource(),
        };
        if authorize(&review) {
            return Approval::Approve {
                recognizer,
                condition: Condition::new("Approved", "AutoApproved", recognizer.message()),
            };
        }
    }
    Approval::NotAuthorized(Rejection::new(format!(
        "recognized csr {name:?} as [{}] but subject access review was not approved",
        tried.join(" ")
    )))
}
