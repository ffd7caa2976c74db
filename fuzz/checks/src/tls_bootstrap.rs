//! Checks for the `tls-bootstrap` entry points.

use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tls_bootstrap::{
    CertificateRequest, CertificateSigningRequest, KUBELET_CLIENT_SIGNER, KUBELET_CLIENT_USAGES,
    MAX_OBJECT_BYTES, NodeKey, NodeName, SignerConfig, accept_certificate, approve, node_csr_name,
    sign, validate_kubelet_client,
};

use crate::outcome::Outcome;

/// The fixture CA (made by openssl, valid 2026–2126).
pub const TLS_CA_PEM: &str = include_str!("../fixtures/tls-bootstrap/ca.pem");
/// The fixture node key (openssl `ecparam -genkey`, SEC 1).
pub const TLS_NODE_KEY_PEM: &str = include_str!("../fixtures/tls-bootstrap/node.key");
/// The fixture node certificate (`system:node:fuzz`, signed by the fixture CA with openssl).
pub const TLS_NODE_CERT_PEM: &str = include_str!("../fixtures/tls-bootstrap/node.pem");

/// A time inside the fixtures' validity (2030-01-01).
fn fixture_now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_893_456_000)
}

/// `CertificateRequest::from_pem`, then `from_der`, on the whole input.
///
/// A parsed request re-parses to itself from its DER and its PEM; the kubelet client rules
/// and the name derivation run on it without panicking. Accepted: the input parses.
pub fn tls_bootstrap_request(data: &[u8]) -> Outcome {
    let parsed = CertificateRequest::from_pem(data).or_else(|_| CertificateRequest::from_der(data));
    let Ok(request) = parsed else {
        return Outcome::Rejected;
    };
    assert_eq!(
        CertificateRequest::from_der(request.as_der()).unwrap(),
        request
    );
    assert_eq!(
        CertificateRequest::from_pem(request.to_pem().as_bytes()).unwrap(),
        request
    );
    let _ = validate_kubelet_client(&request, &KUBELET_CLIENT_USAGES);
    if request.common_name().is_some() {
        let name = node_csr_name(&request, &KUBELET_CLIENT_USAGES).unwrap();
        assert_eq!(name.len(), "node-csr-".len() + 43);
    }
    Outcome::Accepted
}

/// `CertificateSigningRequest::from_json` on the whole input.
///
/// A parsed object serialises and parses back to itself (when the output fits the limit); its
/// state, the reuse check (`ensure_compatible`, which reads `status.certificate`), the approver
/// and the signer run on it without panicking. Accepted: the input parses.
pub fn tls_bootstrap_csr_json(data: &[u8]) -> Outcome {
    let Ok(csr) = CertificateSigningRequest::from_json(data) else {
        return Outcome::Rejected;
    };
    let json = csr.to_json().unwrap();
    if json.len() <= MAX_OBJECT_BYTES {
        assert_eq!(CertificateSigningRequest::from_json(&json).unwrap(), csr);
    }
    let _ = csr.state();
    // As a node that finds this object under its request's name: may it be reused?
    static OURS: OnceLock<CertificateRequest> = OnceLock::new();
    let ours = OURS.get_or_init(|| {
        let key = NodeKey::from_pem(TLS_NODE_KEY_PEM.as_bytes()).unwrap();
        CertificateRequest::for_node(&"fuzz".parse().unwrap(), &key).unwrap()
    });
    let _ = csr.ensure_compatible(ours, KUBELET_CLIENT_SIGNER, fixture_now());
    let _ = approve(&csr, |r| {
        r.groups.iter().any(|g| g == "system:bootstrappers")
    });
    let now = fixture_now();
    let _ = sign(
        &csr,
        &SignerConfig::new(now + Duration::from_secs(86400)),
        now,
    );
    Outcome::Accepted
}

/// `CertificateSigningRequest::from_yaml` on the whole input.
///
/// A parsed object equals the one its JSON serialisation parses to; the approver and signer run
/// on it without panicking. Accepted: the input parses.
pub fn tls_bootstrap_csr_yaml(data: &[u8]) -> Outcome {
    let Ok(csr) = CertificateSigningRequest::from_yaml(data) else {
        return Outcome::Rejected;
    };
    let json = csr.to_json().unwrap();
    if json.len() <= MAX_OBJECT_BYTES {
        assert_eq!(CertificateSigningRequest::from_json(&json).unwrap(), csr);
    }
    let _ = approve(&csr, |_| true);
    let now = fixture_now();
    let _ = sign(
        &csr,
        &SignerConfig::new(now + Duration::from_secs(86400)),
        now,
    );
    Outcome::Accepted
}

/// `accept_certificate` on the input as `status.certificate`, for the fixture node, key and CA.
///
/// An accepted certificate is the fixture node's, re-accepts from its own PEM, and its
/// rotation deadline lies within its validity. Accepted: the certificate is accepted.
pub fn tls_bootstrap_certificate(data: &[u8]) -> Outcome {
    // The fixture key is parsed once: reading it computes its public point (a scalar
    // multiplication) and builds the provider's key pair, which cost more than rejecting most
    // inputs.
    static KEY: OnceLock<NodeKey> = OnceLock::new();
    let key = KEY.get_or_init(|| NodeKey::from_pem(TLS_NODE_KEY_PEM.as_bytes()).unwrap());
    let node: NodeName = "fuzz".parse().unwrap();
    let now = fixture_now();
    // The readers an API server's side uses on the same field: Go's PEM reading and the
    // subject as Go's x509 reads it. Never a panic; the blocks are bounded by the count asked.
    let blocks = tls_bootstrap::go_pem_blocks(data, 8);
    assert!(blocks.len() <= 8);
    for block in &blocks {
        if let Ok(subject) = tls_bootstrap::Subject::of_certificate(block.der()) {
            assert!(subject.values("2.5.4.3").count() <= tls_bootstrap::MAX_SUBJECT_ATTRIBUTES);
        }
    }
    let _ = tls_bootstrap::Subject::of_certificate(data);
    let Ok(cert) = accept_certificate(data, TLS_CA_PEM.as_bytes(), key, &node, now) else {
        return Outcome::Rejected;
    };
    assert_eq!(cert.node(), &node);
    let again = accept_certificate(
        cert.to_pem().as_bytes(),
        TLS_CA_PEM.as_bytes(),
        key,
        &node,
        now,
    )
    .unwrap();
    assert_eq!(again, cert);
    let deadline = cert.rotation_deadline(0.5);
    assert!(deadline >= cert.not_before() && deadline <= cert.not_after());
    Outcome::Accepted
}
