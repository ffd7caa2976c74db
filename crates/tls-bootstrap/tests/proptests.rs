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
