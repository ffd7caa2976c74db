//! Property tests for kubelet serving requests: the approver and the prefix parser never panic
//! on arbitrary names, addresses and prefixes, and never approve an address the node lacks.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "tests"
)]

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::LazyLock;

use proptest::prelude::*;
use rcgen::{KeyPair, SanType};
use regex::Regex;
use tls_bootstrap::{
    CertificateRequest, CertificateSigningRequest, DnsCheck, IpPrefix, KUBELET_SERVING_SIGNER,
    KUBELET_SERVING_USAGES, ServingDecision, ServingPolicy, decide_serving,
};

static KEY: LazyLock<KeyPair> = LazyLock::new(|| KeyPair::generate().unwrap());

fn request(cn: &str, sans: Vec<SanType>) -> Option<CertificateRequest> {
    crate::support::node_request(&KEY, &["system:nodes"], cn, sans)
}

fn any_ip() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        any::<[u8; 4]>().prop_map(IpAddr::from),
        any::<[u8; 16]>().prop_map(IpAddr::from),
        Just("10.0.0.5".parse().unwrap()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn approver_never_panics(
        names in prop::collection::vec("[ -~]{0,80}", 0..6),
        ips in prop::collection::vec(any_ip(), 0..6),
        addresses in prop::collection::vec(("\\PC{0,12}", "\\PC{0,40}"), 0..6),
        answer_ips in prop::collection::vec(any_ip(), 0..4),
        prefixes in prop::collection::vec("\\PC{0,45}", 0..4),
        node in "\\PC{0,20}",
        user_is_cn in any::<bool>(),
        expiration in prop::option::of(any::<i32>()),
        check in 0..3_u8,
    ) {
        let mut sans: Vec<SanType> = Vec::new();
        for n in &names {
            if let Ok(n) = n.as_str().try_into() {
                sans.push(SanType::DnsName(n));
            }
        }
        sans.extend(ips.iter().map(|i| SanType::IpAddress(*i)));
        let cn = format!("system:node:{node}");
        let Some(req) = request(&cn, sans) else { return Ok(()) };
        let mut csr = CertificateSigningRequest::for_node(&req, None).unwrap();
        csr.spec.signer_name = KUBELET_SERVING_SIGNER.to_owned();
        csr.spec.usages = KUBELET_SERVING_USAGES.to_vec();
        csr.spec.username = Some(if user_is_cn { cn.clone() } else { format!("system:node:x{node}") });
        csr.spec.expiration_seconds = expiration;
        let pairs: Vec<(&str, &str)> =
            addresses.iter().map(|(t, a)| (t.as_str(), a.as_str())).collect();
        let answers: BTreeMap<String, Vec<IpAddr>> =
            names.iter().map(|n| (n.clone(), answer_ips.clone())).collect();
        let mut allowed: Vec<IpPrefix> =
            prefixes.iter().filter_map(|p| p.parse().ok()).collect();
        allowed.push("0.0.0.0/0".parse().unwrap());
        allowed.push("::/0".parse().unwrap());
        let mut policy = ServingPolicy::new(Regex::new(".*").unwrap(), allowed);
        policy.dns_check = match check {
            0 => DnsCheck::Resolve,
            1 => DnsCheck::AllowUnresolved,
            _ => DnsCheck::DangerousSkip,
        };
        let decision = decide_serving(&csr, &req, &pairs, &answers, &policy);
        if decision == ServingDecision::Approve {
            // Approval means every IP is one of the node's addresses and the requester is the
            // subject.
            prop_assert!(user_is_cn);
            for i in req.ip_addresses() {
                prop_assert!(pairs.iter().any(|(_, a)| a.parse::<IpAddr>().ok() == Some(*i)));
            }
        }
        if let ServingDecision::Deny { reason } = decision {
            prop_assert!(reason.len() < 400, "{reason}");
        }
    }

    #[test]
    fn prefix_parser_never_panics(s in "\\PC{0,60}", ip in any_ip()) {
        if let Ok(p) = s.parse::<IpPrefix>() {
            let _ = p.contains(ip);
            prop_assert_eq!(p.to_string().parse::<IpPrefix>().ok(), Some(p));
        }
    }

    #[test]
    fn prefix_contains_matches_leading_bits(a in any::<[u8; 4]>(), b in any::<[u8; 4]>(), len in 0..=32_u8) {
        let p: IpPrefix = format!("{}/{len}", IpAddr::from(a)).parse().unwrap();
        let (x, y) = (u32::from_be_bytes(a), u32::from_be_bytes(b));
        let same = len == 0 || (x >> (32 - u32::from(len))) == (y >> (32 - u32::from(len)));
        prop_assert_eq!(p.contains(IpAddr::from(b)), same);
    }
}
