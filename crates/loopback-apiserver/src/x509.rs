//! X.509 as kube-apiserver reads it: the user a client certificate names (the x509
//! authenticator's `CommonNameUserConversion`), and the PEM checks of CertificateSigningRequest
//! validation (`certificates.ParseCSR` with `CheckSignature`, and `status.certificate`).

use std::collections::BTreeMap;

use base64::Engine as _;
use sha2::Digest as _;
use x509_cert::Certificate;
// BMPString comes from der itself: the type is in der 0.7.8 and later, the floor this crate
// declares.
use der::asn1::BmpString;
use x509_cert::der::asn1::{
    Ia5StringRef, ObjectIdentifier, PrintableStringRef, TeletexStringRef, Utf8StringRef,
};
use x509_cert::der::{Any, Decode as _, Encode as _, Tag, Tagged as _};
use x509_cert::request::CertReq;
use x509_cert::spki::AlgorithmIdentifierOwned;

use super::auth::User;
use super::ids;

/// `id-at-commonName`.
const COMMON_NAME: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.4.3");
/// `id-at-organizationName`.
const ORGANIZATION: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.4.10");
/// The subject attribute kube-apiserver reads the user's UID from (feature gate
/// `AllowParsingUserUIDFromCertAuth`, beta and on since 1.34).
const USER_UID: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.57683.2");
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
        let Ok(cert) = Certificate::from_der(der) else {
            return CertIdentity::Error;
        };
        let mut common_name = None;
        let mut groups = Vec::new();
        let mut uids = Vec::new();
        for rdn in cert.tbs_certificate.subject.0.iter() {
            for atv in rdn.0.iter() {
                let value = string_value(&atv.value);
                if atv.oid == COMMON_NAME {
                    if let Some(v) = value {
                        common_name = Some(v);
                    }
                } else if atv.oid == ORGANIZATION {
                    if let Some(v) = value {
                        groups.push(v);
                    }
                } else if atv.oid == USER_UID {
                    match value {
                        Some(v) => uids.push(v),
                        None => return CertIdentity::Error,
                    }
                }
            }
        }
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

/// A directory string's text (UTF8String, PrintableString, IA5String, T61String, BMPString), as
/// Go's `pkix.Name` accepts them.
fn string_value(value: &Any) -> Option<String> {
    match value.tag() {
        Tag::Utf8String => value
            .decode_as::<Utf8StringRef<'_>>()
            .ok()
            .map(|s| s.as_str().to_owned()),
        Tag::PrintableString => value
            .decode_as::<PrintableStringRef<'_>>()
            .ok()
            .map(|s| s.as_str().to_owned()),
        Tag::Ia5String => value
            .decode_as::<Ia5StringRef<'_>>()
            .ok()
            .map(|s| s.as_str().to_owned()),
        Tag::TeletexString => value
            .decode_as::<TeletexStringRef<'_>>()
            .ok()
            .map(|s| s.as_str().to_owned()),
        Tag::BmpString => value.decode_as::<BmpString>().ok().map(|s| s.to_string()),
        _ => None,
    }
}

/// One PEM block, as Go's `pem.Decode` finds it.
struct PemBlock {
    label: String,
    headers: bool,
    der: Vec<u8>,
}

/// The PEM blocks in `data`, in order, as Go's `pem.Decode` called in a loop finds them: text
/// around and between blocks is ignored, and so is a block whose body is not base64.
fn pem_blocks(data: &[u8]) -> Vec<PemBlock> {
    const BEGIN: &[u8] = b"-----BEGIN ";
    const DASHES: &[u8] = b"-----";
    let mut blocks = Vec::new();
    let mut rest = data;
    while blocks.len() < MAX_PEM_BLOCKS {
        let Some(start) = find(rest, BEGIN) else {
            break;
        };
        let Some(after_begin) = rest.get(start.saturating_add(BEGIN.len())..) else {
            break;
        };
        // Whatever happens to this block, the search goes on after its BEGIN.
        rest = after_begin;
        let Some(label_end) = find(after_begin, DASHES) else {
            break;
        };
        let label = after_begin.get(..label_end).unwrap_or_default();
        let Ok(label) = std::str::from_utf8(label) else {
            continue;
        };
        if label.contains('\n') {
            continue;
        }
        let body_start = label_end.saturating_add(DASHES.len());
        let end_marker = format!("-----END {label}-----");
        let Some(body) = after_begin.get(body_start..) else {
            continue;
        };
        let Some(body_len) = find(body, end_marker.as_bytes()) else {
            continue;
        };
        let body_text = body.get(..body_len).unwrap_or_default();
        let mut headers = false;
        let mut encoded = Vec::new();
        let mut in_headers = true;
        for line in body_text.split(|b| *b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if in_headers && line.contains(&b':') {
                headers = true;
                continue;
            }
            in_headers = false;
            encoded.extend(line.iter().filter(|b| !b.is_ascii_whitespace()));
        }
        let Ok(der) = base64::engine::general_purpose::STANDARD.decode(&encoded) else {
            continue;
        };
        blocks.push(PemBlock {
            label: label.to_owned(),
            headers,
            der,
        });
        rest = body
            .get(body_len.saturating_add(end_marker.len())..)
            .unwrap_or_default();
    }
    blocks
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// `spec.request`: the first PEM block must be a `CERTIFICATE REQUEST` whose self-signature
/// verifies (kube-apiserver's `certificates.ParseCSR` and `CheckSignature`). The error is Go's
/// sentence.
pub(crate) fn check_certificate_request(pem: &[u8]) -> Result<(), String> {
    let block = pem_blocks(pem).into_iter().next();
    let Some(block) = block.filter(|b| b.label == "CERTIFICATE REQUEST") else {
        return Err("PEM block type must be CERTIFICATE REQUEST".to_owned());
    };
    let request = CertReq::from_der(&block.der)
        .map_err(|_| "x509: malformed certificate request".to_owned())?;
    let message = request
        .info
        .to_der()
        .map_err(|_| "x509: malformed certificate request".to_owned())?;
    verify_signature(
        &request.info.public_key.algorithm,
        request.info.public_key.subject_public_key.raw_bytes(),
        &request.algorithm,
        &message,
        request.signature.raw_bytes(),
    )
}

/// Checks `signature` over `message` with the crypto provider's verification algorithms (the ones
/// rustls verifies TLS certificates with), matching the key's and the signature's algorithm
/// identifiers.
fn verify_signature(
    key_algorithm: &AlgorithmIdentifierOwned,
    public_key: &[u8],
    signature_algorithm: &AlgorithmIdentifierOwned,
    message: &[u8],
    signature: &[u8],
) -> Result<(), String> {
    let unimplemented = || "x509: cannot verify signature: algorithm unimplemented".to_owned();
    let key_id = algorithm_contents(key_algorithm).ok_or_else(unimplemented)?;
    let signature_id = algorithm_contents(signature_algorithm).ok_or_else(unimplemented)?;
    let provider = crate::crypto::provider().ok_or_else(unimplemented)?;
    let algorithm = provider
        .signature_verification_algorithms
        .all
        .iter()
        .find(|a| {
            a.public_key_alg_id().as_ref() == key_id.as_slice()
                && a.signature_alg_id().as_ref() == signature_id.as_slice()
        })
        .ok_or_else(unimplemented)?;
    algorithm
        .verify_signature(public_key, message, signature)
        .map_err(|_| {
            let oid = signature_algorithm.oid.to_string();
            if oid.starts_with("1.2.840.10045.4.") {
                "x509: ECDSA verification failure".to_owned()
            } else if oid == "1.3.101.112" {
                "x509: Ed25519 verification failure".to_owned()
            } else {
                "crypto/rsa: verification error".to_owned()
            }
        })
}

/// The contents of an `AlgorithmIdentifier` SEQUENCE (the OID and the parameters, encoded), as
/// rustls's algorithm descriptions hold them.
fn algorithm_contents(algorithm: &AlgorithmIdentifierOwned) -> Option<Vec<u8>> {
    let mut out = algorithm.oid.to_der().ok()?;
    if let Some(parameters) = &algorithm.parameters {
        out.extend(parameters.to_der().ok()?);
    }
    Some(out)
}

/// `status.certificate`: one or more `CERTIFICATE` PEM blocks without headers, each an X.509
/// certificate (kube-apiserver's `validateCertificate`). The error is Go's sentence.
pub(crate) fn check_certificates(pem: &[u8]) -> Result<(), String> {
    let blocks = pem_blocks(pem);
    if blocks.is_empty() {
        return Err("must contain at least one CERTIFICATE PEM block".to_owned());
    }
    for block in blocks {
        if block.label != "CERTIFICATE" {
            let shown: String = block.label.chars().take(64).collect();
            return Err(format!(
                "only CERTIFICATE PEM blocks are allowed, found {shown:?}"
            ));
        }
        if block.headers {
            return Err("no PEM block headers are permitted".to_owned());
        }
        Certificate::from_der(&block.der).map_err(|_| "x509: malformed certificate".to_owned())?;
    }
    Ok(())
}
