//! X.509 as kube-apiserver reads it: the user a client certificate names (the x509
//! authenticator's `CommonNameUserConversion`), and the PEM checks of CertificateSigningRequest
//! validation (`certificates.ParseCSR` with `CheckSignature`, and `status.certificate`).

use std::collections::BTreeMap;

use sha2::Digest as _;
use x509_cert::Certificate;
use x509_cert::der::Decode as _;
use x509_cert::request::CertReq;

use super::auth::User;
use super::ids;

/// The subject attribute kube-apiserver reads the user's UID from (feature gate
/// `AllowParsingUserUIDFromCertAuth`, beta and on since 1.34).
const USER_UID: &str = "1.3.6.1.4.1.57683.2";
/// The `user.Info` extra key kube-apiserver records the credential in.
pub(crate) const CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";
/// Most PEM blocks read from one field (a bound on untrusted input).
const MAX_PEM_BLOCKS: usize = 64;

/// What a connection's client certificate (verified against the CA in the TLS handshake) says
/// about the user, as kube-apiserver's x509 authenticator decides it.
#[derive(Debug, Clone)]
pub(crate) enum CertIdentity {
    /// No certificate, or one without a subject common name: the authenticator has no opinion
    /// and the token authenticators decide.
    None,
    /// The certificate's user.
    User(User),
    /// The certificate does not verify against the CA, or names its user wrongly (several or
    /// empty UIDs, or a value that is not a string): an authentication error, so the request is
    /// 401 unless a token authenticates it.
    Error,
}

impl CertIdentity {
    /// The identity in the end-entity certificate `der`: username the subject's common name (the
    /// last, as Go's `pkix.Name` keeps it), groups its organizations, UID from attribute
    /// 1.3.6.1.4.1.57683.2, and extra `authentication.kubernetes.io/credential-id` =
    /// `X509SHA256=<hex SHA-256 of the certificate>` (kube-apiserver's
    /// `x509.CommonNameUserConversion`). `system:authenticated` is added as the authenticated
    /// group adder adds it.
    pub(crate) fn from_der(der: &[u8]) -> CertIdentity {
        // Go's TLS stack parses the certificate (`parseName`) before the authenticator sees it:
        // a subject value that is not a valid string fails it.
        let Ok(subject) = tls_bootstrap::Subject::of_certificate(der) else {
            return CertIdentity::Error;
        };
        let common_name = subject.common_name().map(str::to_owned);
        let groups = subject.organizations().to_vec();
        let uids: Vec<String> = subject.values(USER_UID).map(str::to_owned).collect();
        let Some(name) = common_name.filter(|n| !n.is_empty()) else {
            return CertIdentity::None;
        };
        let uid = match uids.as_slice() {
            [] => None,
            [uid] if !uid.is_empty() => Some(uid.clone()),
            _ => return CertIdentity::Error,
        };
        let fingerprint = ids::hex(&sha2::Sha256::digest(der));
        let extra = BTreeMap::from([(
            CREDENTIAL_ID.to_owned(),
            vec![format!("X509SHA256={fingerprint}")],
        )]);
        CertIdentity::User(User::authenticated_with(name, uid, groups, extra))
    }
}

/// `spec.request`: the first PEM block must be a `CERTIFICATE REQUEST` whose self-signature
/// verifies (kube-apiserver's `certificates.ParseCSR` and `CheckSignature`, as the
/// `tls-bootstrap` core reads them). The error is Go's sentence.
pub(crate) fn check_certificate_request(pem: &[u8]) -> Result<(), String> {
    let block = tls_bootstrap::go_pem_blocks(pem, 1).into_iter().next();
    let Some(block) = block.filter(|b| b.label() == "CERTIFICATE REQUEST") else {
        return Err("PEM block type must be CERTIFICATE REQUEST".to_owned());
    };
    match tls_bootstrap::CertificateRequest::from_der(block.der()) {
        Ok(_) => Ok(()),
        Err(tls_bootstrap::Error::BadSignature) => Err(verification_failure(block.der())),
        Err(tls_bootstrap::Error::UnsupportedAlgorithm | tls_bootstrap::Error::NoCryptoBackend) => {
            Err("x509: cannot verify signature: algorithm unimplemented".to_owned())
        }
        Err(_) => Err("x509: malformed certificate request".to_owned()),
    }
}

/// Go's `CheckSignature` message for a signature that does not verify, by the signature
/// algorithm.
fn verification_failure(der: &[u8]) -> String {
    let oid = CertReq::from_der(der)
        .map(|r| r.algorithm.oid.to_string())
        .unwrap_or_default();
    if oid.starts_with("1.2.840.10045.4.") {
        "x509: ECDSA verification failure".to_owned()
    } else if oid == "1.3.101.112" {
        "x509: Ed25519 verification failure".to_owned()
    } else {
        "crypto/rsa: verification error".to_owned()
    }
}

/// `status.certificate`: one or more `CERTIFICATE` PEM blocks without headers, each an X.509
/// certificate (kube-apiserver's `validateCertificate`). The error is Go's sentence.
pub(crate) fn check_certificates(pem: &[u8]) -> Result<(), String> {
    let blocks = tls_bootstrap::go_pem_blocks(pem, MAX_PEM_BLOCKS);
    if blocks.is_empty() {
        return Err("must contain at least one CERTIFICATE PEM block".to_owned());
    }
    for block in blocks {
        if block.label() != "CERTIFICATE" {
            let shown: String = block.label().chars().take(64).collect();
            return Err(format!(
                "only CERTIFICATE PEM blocks are allowed, found {shown:?}"
            ));
        }
        if block.has_headers() {
            return Err("no PEM block headers are permitted".to_owned());
        }
        Certificate::from_der(block.der()).map_err(|_| "x509: malformed certificate".to_owned())?;
    }
    Ok(())
}
