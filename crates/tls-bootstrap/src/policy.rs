//! The control plane's rules for kubelet client requests: API validation and the CSR approver.

use std::collections::BTreeMap;
use std::fmt;

use crate::node_name::{NODE_USER_PREFIX, NODES_GROUP};
use crate::object::{CertificateSigningRequest, Condition, KUBELET_CLIENT_SIGNER};
use crate::request::CertificateRequest;
use crate::usage::KeyUsage;

/// Why a rule refused a request: Kubernetes' own message, for a human.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection(String);

impl Rejection {
    pub(crate) fn new(message: impl Into<String>) -> Rejection {
        Rejection(message.into())
    }

    /// The message.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Rejection {}

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
    /// `spec.request` does not parse; the approver retries later and sets no condition.
    Unparseable(Rejection),
}

/// The CSR approver (kube-controller-manager's `csrapproving`) for one object.
///
/// Skips objects that already have a certificate or an `Approved`/`Denied` condition. Parses
/// the request; tries [`Recognizer::SelfNodeClient`] (requester is the node itself) and then
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
            return Approval::Unparseable(Rejection::new(format!(
                "unable to parse csr {name:?}: {e}"
            )));
        }
    };
    let node_client = csr.spec.signer_name == KUBELET_CLIENT_SIGNER
        && validate_kubelet_client(&request, &csr.spec.usages).is_ok();
    if !node_client {
        return Approval::NotRecognized(Rejection::new(format!(
            "csr {name:?} is not a kubelet client certificate request"
        )));
    }
    let user = csr.spec.username.as_deref().unwrap_or_default();
    let mut tried = Vec::new();
    for recognizer in [Recognizer::SelfNodeClient, Recognizer::NodeClient] {
        if recognizer == Recognizer::SelfNodeClient && request.common_name() != Some(user) {
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
