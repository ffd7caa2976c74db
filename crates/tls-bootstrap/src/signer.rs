//! The signer's rules for `kubernetes.io/kube-apiserver-client-kubelet` and
//! `kubernetes.io/kubelet-serving`.

use std::net::IpAddr;
use std::time::{Duration, SystemTime};

use crate::object::{CertificateSigningRequest, Condition, KUBELET_CLIENT_SIGNER};
use crate::policy::{Rejection, validate_kubelet_client};
use crate::request::KeyType;
use crate::serving::{KUBELET_SERVING_SIGNER, validate_kubelet_serving};
use crate::usage::KeyUsage;

/// kube-controller-manager's default `--cluster-signing-duration`: one year.
pub const DEFAULT_SIGNING_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);
/// How far `notBefore` is set before now, for clock skew (five minutes).
pub const BACKDATE: Duration = Duration::from_secs(5 * 60);
/// Lifetimes under this (eight hours) are not shortened by the backdate.
pub const SHORT_LIFETIME: Duration = Duration::from_secs(8 * 3600);
/// The shortest lifetime the signer issues (ten minutes).
pub const MIN_LIFETIME: Duration = Duration::from_secs(10 * 60);

/// The signer's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SignerConfig {
    /// The longest lifetime issued (`--cluster-signing-duration`).
    pub max_duration: Duration,
    /// The CA certificate's `notAfter`: no certificate outlives its CA.
    pub ca_not_after: SystemTime,
}

impl SignerConfig {
    /// The default lifetime cap for a CA valid until `ca_not_after`.
    pub fn new(ca_not_after: SystemTime) -> SignerConfig {
        SignerConfig {
            max_duration: DEFAULT_SIGNING_DURATION,
            ca_not_after,
        }
    }
}

/// What to put in the certificate: the subject, names and public key are the request's; these
/// are the signer's choices.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SigningPlan {
    /// `notBefore`: now minus [`BACKDATE`].
    pub not_before: SystemTime,
    /// `notAfter`.
    pub not_after: SystemTime,
    /// Key usage bits, canonical (`signing` is `digital signature`), in the API's order.
    pub key_usages: Vec<KeyUsage>,
    /// Extended key usages, canonical (`s/mime` is `email protection`), in Go's numeric order.
    pub extended_key_usages: Vec<KeyUsage>,
    /// The request's common name.
    pub common_name: String,
    /// The request's organizations.
    pub organizations: Vec<String>,
    /// The request's public key, DER `SubjectPublicKeyInfo`.
    pub public_key_der: Vec<u8>,
    /// The request's public key bits (see [`crate::CertificateRequest::public_key_bits`]).
    pub public_key_bits: Vec<u8>,
    /// The request's key type.
    pub key_type: KeyType,
    /// The request's DNS subject alternative names, in its order (serving requests).
    pub dns_names: Vec<String>,
    /// The request's IP subject alternative names, in its order (serving requests).
    pub ip_addresses: Vec<IpAddr>,
    /// The request's email subject alternative names (none passes either signer's
    /// validation; copied as Kubernetes' CA copies them).
    pub email_addresses: Vec<String>,
    /// The request's URI subject alternative names (none passes either signer's validation;
    /// copied as Kubernetes' CA copies them).
    pub uris: Vec<String>,
}

/// The signer's verdict on one object.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Signing {
    /// Issue a certificate as planned and store it in `status.certificate`.
    Sign(SigningPlan),
    /// Append this `Failed` condition (reason `SignerValidationFailure`) through the status
    /// subresource.
    Fail(Condition),
    /// Not for this signer, not approved, denied, failed or already issued: leave it.
    Ignore,
    /// Cannot sign now (unparseable request, expired CA); retry later, set nothing.
    Retry(Rejection),
}

/// kube-controller-manager's `csrsigning` controllers for the kubelet client and kubelet
/// serving signers, on one object at `now`.
///
/// Signs requests for [`KUBELET_CLIENT_SIGNER`] or [`KUBELET_SERVING_SIGNER`] without a
/// certificate that are approved as
/// Kubernetes' signer reads conditions: [`CertificateSigningRequest::is_approved`] (a condition
/// of type `Approved` and none of type `Denied`, whatever their status) and no `Failed`
/// condition whose status is `True` or empty
/// ([`CertificateSigningRequest::has_true_condition`]). A request that breaks its signer's
/// validation ([`validate_kubelet_client`] or [`validate_kubelet_serving`]) gets a `Failed`
/// condition with reason `SignerValidationFailure` and the rule's message. Both signers give
/// the same lifetimes, and copy the request's subject and subject alternative names. The
/// lifetime is
/// [`signing_duration`], `notBefore` is backdated by [`BACKDATE`], and a lifetime of
/// [`SHORT_LIFETIME`] or more loses the backdate at its end; `notAfter` never passes the
/// CA's.
///
/// ```
/// # fn main() -> Result<(), tls_bootstrap::Error> {
/// use std::time::{Duration, UNIX_EPOCH};
/// use tls_bootstrap::{CertificateRequest, CertificateSigningRequest, Condition, KeyUsage, NodeKey,
///     SignerConfig, Signing, sign};
///
/// let key = NodeKey::generate()?;
/// let request = CertificateRequest::for_node(&"worker-1".parse()?, &key)?;
/// let mut csr = CertificateSigningRequest::for_node(&request, Some(Duration::from_secs(3600)))?;
/// csr.status.conditions.push(Condition::new("Approved", "AutoApproved", "approved"));
///
/// let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
/// let config = SignerConfig::new(now + Duration::from_secs(10 * 365 * 86400));
/// let Signing::Sign(plan) = sign(&csr, &config, now) else { panic!("not signed") };
/// assert_eq!(plan.not_after, now + Duration::from_secs(3600));
/// assert_eq!(plan.extended_key_usages, [KeyUsage::ClientAuth]);
/// // The caller's CA now issues a certificate with the request's subject and key and these
/// // dates and usages, and stores it in `status.certificate`.
/// # Ok(()) }
/// ```
pub fn sign(csr: &CertificateSigningRequest, config: &SignerConfig, now: SystemTime) -> Signing {
    let validate = match csr.spec.signer_name.as_str() {
        KUBELET_CLIENT_SIGNER => validate_kubelet_client,
        KUBELET_SERVING_SIGNER => validate_kubelet_serving,
        _ => return Signing::Ignore,
    };
    if !csr.is_approved()
        || csr.has_true_condition("Failed")
        || csr
            .status
            .certificate
            .as_ref()
            .is_some_and(|c| !c.is_empty())
    {
        return Signing::Ignore;
    }
    let request = match csr.certificate_request() {
        Ok(r) => r,
        Err(e) => {
            let name = csr.name().unwrap_or_default();
            return Signing::Retry(Rejection::caused_by(
                &format!("unable to parse csr {name:?}"),
                e,
            ));
        }
    };
    if let Err(e) = validate(&request, &csr.spec.usages) {
        return Signing::Fail(Condition::new(
            "Failed",
            "SignerValidationFailure",
            e.as_str(),
        ));
    }
    let ttl = signing_duration(csr.spec.expiration_seconds, config.max_duration);
    let (Some(not_before), Some(mut not_after)) = (
        now.checked_sub(BACKDATE),
        if ttl < SHORT_LIFETIME {
            now.checked_add(ttl)
        } else {
            now.checked_add(ttl).and_then(|t| t.checked_sub(BACKDATE))
        },
    ) else {
        return Signing::Retry(Rejection::new("time out of range"));
    };
    if config.ca_not_after < now {
        return Signing::Retry(Rejection::new(format!(
            "the signer has expired: NotAfter={}",
            crate::time::rfc3339(config.ca_not_after)
        )));
    }
    if not_after > config.ca_not_after {
        not_after = config.ca_not_after;
    }
    if not_after < now {
        return Signing::Retry(Rejection::new(format!(
            "refusing to sign a certificate that expired in the past: NotAfter={}",
            crate::time::rfc3339(not_after)
        )));
    }
    let (key_usages, extended_key_usages) = x509_usages(&csr.spec.usages);
    Signing::Sign(SigningPlan {
        not_before,
        not_after,
        key_usages,
        extended_key_usages,
        common_name: request.common_name().unwrap_or_default().to_owned(),
        organizations: request.organizations().to_vec(),
        public_key_der: request.public_key_der().to_vec(),
        public_key_bits: request.public_key_bits().to_vec(),
        key_type: request.key_type(),
        dns_names: request.dns_names().to_vec(),
        ip_addresses: request.ip_addresses().to_vec(),
        email_addresses: request.email_addresses().to_vec(),
        uris: request.uris().to_vec(),
    })
}

/// The lifetime the signer gives a request with `spec.expirationSeconds`
/// `expiration_seconds` when its cap (`--cluster-signing-duration`) is `max_duration`, as
/// Kubernetes' signer decides it: the cap when none is requested or more than the cap is;
/// otherwise at least [`MIN_LIFETIME`] (negative requests included); otherwise what is
/// requested. (With a cap under ten minutes, a request over the cap gets the cap.)
///
/// ```
/// use std::time::Duration;
/// let hour = Duration::from_secs(3600);
/// assert_eq!(tls_bootstrap::signing_duration(None, hour), hour);
/// assert_eq!(tls_bootstrap::signing_duration(Some(1800), hour), hour / 2);
/// assert_eq!(tls_bootstrap::signing_duration(Some(-60), hour), Duration::from_secs(600));
/// ```
pub fn signing_duration(expiration_seconds: Option<i32>, max_duration: Duration) -> Duration {
    let Some(seconds) = expiration_seconds else {
        return max_duration;
    };
    // A negative request is shorter than the minimum; the magnitude does not matter.
    let requested = u64::try_from(seconds).map_or(Duration::ZERO, Duration::from_secs);
    if requested > max_duration {
        max_duration
    } else if requested < MIN_LIFETIME {
        MIN_LIFETIME
    } else {
        requested
    }
}

/// Splits API usages into key usage bits and extended key usages, canonical and deduplicated.
fn x509_usages(usages: &[KeyUsage]) -> (Vec<KeyUsage>, Vec<KeyUsage>) {
    use KeyUsage as U;
    let mut key = Vec::new();
    let mut ext = Vec::new();
    for u in usages {
        let (target, canonical) = match *u {
            U::Signing | U::DigitalSignature => (&mut key, U::DigitalSignature),
            U::ContentCommitment
            | U::KeyEncipherment
            | U::KeyAgreement
            | U::DataEncipherment
            | U::CertSign
            | U::CrlSign
            | U::EncipherOnly
            | U::DecipherOnly => (&mut key, *u),
            U::Smime | U::EmailProtection => (&mut ext, U::EmailProtection),
            _ => (&mut ext, *u),
        };
        if !target.contains(&canonical) {
            target.push(canonical);
        }
    }
    key.sort_unstable();
    ext.sort_by_key(|u| go_ext_key_usage_order(*u));
    (key, ext)
}

/// Go's `x509.ExtKeyUsage` numbering, which the signer sorts by.
fn go_ext_key_usage_order(u: KeyUsage) -> u8 {
    match u {
        KeyUsage::Any => 0,
        KeyUsage::ServerAuth => 1,
        KeyUsage::ClientAuth => 2,
        KeyUsage::CodeSigning => 3,
        KeyUsage::EmailProtection => 4,
        KeyUsage::IpsecEndSystem => 5,
        KeyUsage::IpsecTunnel => 6,
        KeyUsage::IpsecUser => 7,
        KeyUsage::Timestamping => 8,
        KeyUsage::OcspSigning => 9,
        KeyUsage::MicrosoftSgc => 10,
        KeyUsage::NetscapeSgc => 11,
        _ => u8::MAX,
    }
}
