//! Property tests: parsers never panic, round trips hold, any one-byte change to a request
//! is refused.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::disallowed_methods,
    reason = "tests"
)]

use std::sync::LazyLock;

use proptest::prelude::*;
use tls_bootstrap::{
    CertificateRequest, CertificateSigningRequest, NodeKey, NodeName, accept_certificate,
};

static KEY: LazyLock<NodeKey> = LazyLock::new(|| NodeKey::generate().unwrap());
static REQUEST: LazyLock<CertificateRequest> =
    LazyLock::new(|| CertificateRequest::for_node(&"worker-1".parse().unwrap(), &KEY).unwrap());

/// Key PEM blocks made by openssl once: (label, DER) for P-384 SEC 1, RSA-2048 PKCS#1 and
/// PKCS#8.
static KEY_BLOCKS: LazyLock<Vec<(&'static str, Vec<u8>)>> = LazyLock::new(|| {
    use base64::Engine as _;
    let dir = std::env::temp_dir().join(format!("tls-bootstrap-prop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p384 = dir.join("p384.key");
    let rsa8 = dir.join("rsa8.key");
    let rsa1 = dir.join("rsa1.key");
    let run = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let s = |p: &std::path::Path| p.to_str().unwrap().to_owned();
    run(&[
        "ecparam",
        "-name",
        "secp384r1",
        "-genkey",
        "-noout",
        "-out",
        &s(&p384),
    ]);
    run(&[
        "genpkey",
        "-algorithm",
        "RSA",
        "-pkeyopt",
        "rsa_keygen_bits:2048",
        "-out",
        &s(&rsa8),
    ]);
    run(&["rsa", "-in", &s(&rsa8), "-traditional", "-out", &s(&rsa1)]);
    [
        ("EC PRIVATE KEY", p384),
        ("PRIVATE KEY", rsa8),
        ("RSA PRIVATE KEY", rsa1),
    ]
    .into_iter()
    .map(|(label, path)| {
        let pem = std::fs::read_to_string(path).unwrap();
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        (
            label,
            base64::engine::general_purpose::STANDARD
                .decode(body)
                .unwrap(),
        )
    })
    .collect()
});

fn key_pem(label: &str, der: &[u8]) -> String {
    use base64::Engine as _;
    format!(
        "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
        base64::engine::general_purpose::STANDARD.encode(der)
    )
}

fn node_name() -> impl Strategy<Value = String> {
    "[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?){0,3}"
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn node_names_round_trip(name in node_name()) {
        let parsed: NodeName = name.parse().unwrap();
        prop_assert_eq!(parsed.to_string(), name.clone());
        prop_assert_eq!(NodeName::from_user_name(&parsed.user_name()).unwrap(), parsed);
    }

    #[test]
    fn node_name_parse_never_panics(s in "\\PC*") {
        if let Ok(n) = s.parse::<NodeName>() {
            prop_assert_eq!(n.as_str(), s.as_str());
        }
    }

    #[test]
    fn requests_round_trip(name in node_name()) {
        let node: NodeName = name.parse().unwrap();
        let req = CertificateRequest::for_node(&node, &KEY).unwrap();
        let back = CertificateRequest::from_pem(req.to_pem().as_bytes()).unwrap();
        let user = node.user_name();
        prop_assert_eq!(back.common_name(), Some(user.as_str()));
        prop_assert_eq!(&back, &req);
        let csr = CertificateSigningRequest::for_node(&req, None).unwrap();
        let json = csr.to_json().unwrap();
        prop_assert_eq!(CertificateSigningRequest::from_json(&json).unwrap(), csr);
    }

    #[test]
    fn any_one_byte_change_is_refused(index in any::<prop::sample::Index>(), flip in 1u8..=255) {
        let mut der = REQUEST.as_der().to_vec();
        let i = index.index(der.len());
        der[i] ^= flip;
        prop_assert!(CertificateRequest::from_der(&der).is_err());
    }

    #[test]
    fn request_parsers_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        let _ = CertificateRequest::from_der(&bytes);
        let _ = CertificateRequest::from_pem(&bytes);
        let _ = NodeKey::from_pem(&bytes);
    }

    #[test]
    fn key_parsers_never_panic(
        der in prop::collection::vec(any::<u8>(), 0..1400),
        label in prop::sample::select(vec!["EC PRIVATE KEY", "RSA PRIVATE KEY", "PRIVATE KEY"]),
    ) {
        let _ = NodeKey::from_pem(key_pem(label, &der).as_bytes());
    }

    /// A one-byte change to a P-384 or RSA key never panics; a changed key that is still read
    /// never signs a request that does not verify (a provider may also refuse to sign with it).
    #[test]
    fn changed_keys_are_refused_or_consistent(
        which in 0usize..3,
        index in any::<prop::sample::Index>(),
        flip in 1u8..=255,
    ) {
        let (label, der) = &KEY_BLOCKS[which];
        let mut der = der.clone();
        let i = index.index(der.len());
        der[i] ^= flip;
        if let Ok(key) = NodeKey::from_pem(key_pem(label, &der).as_bytes())
            && let Ok(req) = CertificateRequest::for_node(&"n".parse().unwrap(), &key)
        {
            prop_assert_eq!(CertificateRequest::from_der(req.as_der()).unwrap(), req);
        }
    }

    #[test]
    fn object_parser_never_panics(s in "\\PC*") {
        let _ = CertificateSigningRequest::from_json(s.as_bytes());
    }

    #[test]
    fn certificate_acceptance_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        let node: NodeName = "worker-1".parse().unwrap();
        let now = std::time::SystemTime::now();
        prop_assert!(accept_certificate(&bytes, &bytes, &KEY, &node, now).is_err());
    }
}
