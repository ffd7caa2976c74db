//! Kubelet serving requests: Kubernetes' API validation (its test table as data) and the
//! approver's decision, one test per hostile row.

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

use rcgen::{KeyPair, SanType};
use regex::Regex;
use tls_bootstrap::{
    CertificateRequest, CertificateSigningRequest, DnsCheck, IpPrefix, KUBELET_SERVING_SIGNER,
    KUBELET_SERVING_USAGES, KUBELET_SERVING_USAGES_RSA, KeyType, KeyUsage, ServingDecision,
    ServingPolicy, decide_serving, kubelet_serving_usages, validate_kubelet_serving,
};

use KeyUsage::{ClientAuth, DigitalSignature, KeyEncipherment, ServerAuth};

fn request(org: &[&str], cn: &str, sans: Vec<SanType>) -> CertificateRequest {
    crate::support::node_request(&KeyPair::generate().unwrap(), org, cn, sans).unwrap()
}

fn dns(name: &str) -> SanType {
    SanType::DnsName(name.try_into().unwrap())
}

fn ip(a: &str) -> SanType {
    SanType::IpAddress(a.parse().unwrap())
}

#[test]
fn usages_by_key_type() {
    assert_eq!(
        kubelet_serving_usages(KeyType::Rsa),
        KUBELET_SERVING_USAGES_RSA
    );
    assert_eq!(
        kubelet_serving_usages(KeyType::EcdsaP256),
        KUBELET_SERVING_USAGES
    );
    assert_eq!(
        kubelet_serving_usages(KeyType::Ed25519),
        KUBELET_SERVING_USAGES
    );
    assert_eq!(KUBELET_SERVING_SIGNER, "kubernetes.io/kubelet-serving");
}

/// Kubernetes' `TestIsKubeletServingCSR` cases, plus each message in its order.
#[test]
fn kubelet_serving_validation_table() {
    let node = "system:node:worker-1";
    let nodes = &["system:nodes"][..];
    let rsa = &[DigitalSignature, KeyEncipherment, ServerAuth][..];
    let no_rsa = &[ServerAuth, DigitalSignature][..];
    let cases: Vec<(&str, CertificateRequest, &[KeyUsage], Option<&str>)> = vec![
        (
            "defaults for kubelet-serving",
            request(nodes, node, vec![dns("worker-1")]),
            rsa,
            None,
        ),
        (
            "without key encipherment",
            request(nodes, node, vec![ip("10.0.0.1")]),
            no_rsa,
            None,
        ),
        (
            "usages repeated still a set",
            request(nodes, node, vec![dns("a")]),
            &[ServerAuth, ServerAuth, DigitalSignature],
            None,
        ),
        (
            "org is not system:nodes",
            request(&["not-system:nodes"], node, vec![dns("a")]),
            rsa,
            Some("subject organization is not system:nodes"),
        ),
        (
            "two orgs",
            request(&["system:nodes", "x"], node, vec![dns("a")]),
            rsa,
            Some("subject organization is not system:nodes"),
        ),
        (
            "no org",
            request(&[], node, vec![dns("a")]),
            rsa,
            Some("subject organization is not system:nodes"),
        ),
        (
            "CN without system:node: prefix",
            request(nodes, "not-system:node:a", vec![dns("a")]),
            rsa,
            Some("subject common name does not begin with system:node:"),
        ),
        (
            "no CN",
            request(nodes, "", vec![dns("a")]),
            rsa,
            Some("subject common name does not begin with system:node:"),
        ),
        (
            "unexpected usage",
            request(nodes, node, vec![dns("a")]),
            &[DigitalSignature, KeyEncipherment, ServerAuth, ClientAuth],
            Some("usages did not match [digital signature key encipherment server auth]"),
        ),
        (
            "missing usage",
            request(nodes, node, vec![dns("a")]),
            &[DigitalSignature, KeyEncipherment],
            Some("usages did not match [digital signature key encipherment server auth]"),
        ),
        (
            "no usages",
            request(nodes, node, vec![dns("a")]),
            &[],
            Some("usages did not match [digital signature key encipherment server auth]"),
        ),
        (
            "no DNS or IP names",
            request(nodes, node, vec![]),
            rsa,
            Some("DNS or IP subjectAltName is required"),
        ),
        (
            "URI SAN",
            request(
                nodes,
                node,
                vec![dns("a"), SanType::URI("https://x".try_into().unwrap())],
            ),
            rsa,
            Some("URI subjectAltNames are not allowed"),
        ),
        (
            "email SAN",
            request(
                nodes,
                node,
                vec![dns("a"), SanType::Rfc822Name("a@b.c".try_into().unwrap())],
            ),
            rsa,
            Some("Email subjectAltNames are not allowed"),
        ),
        // Kubernetes' order: SANs before usages before the common name.
        (
            "order: names before usages",
            request(nodes, "x", vec![]),
            &[],
            Some("DNS or IP subjectAltName is required"),
        ),
        (
            "order: usages before CN",
            request(nodes, "x", vec![dns("a")]),
            &[],
            Some("usages did not match [digital signature key encipherment server auth]"),
        ),
    ];
    for (name, req, usages, want) in cases {
        let got = validate_kubelet_serving(&req, usages);
        assert_eq!(got.as_ref().err().map(|r| r.as_str()), want, "{name}");
    }
}

const NODE: &str = "system:node:worker-1";

fn policy() -> ServingPolicy {
    ServingPolicy::new(
        Regex::new(r"^[a-z0-9-]+(\.cluster\.example)?$").unwrap(),
        vec!["10.0.0.0/8".parse().unwrap(), "fd00::/8".parse().unwrap()],
    )
}

fn addresses() -> Vec<(&'static str, &'static str)> {
    vec![
        ("Hostname", "worker-1"),
        ("InternalIP", "10.0.0.5"),
        ("InternalIP", "fd00::5"),
        ("ExternalIP", "203.0.113.9"),
    ]
}

fn answers() -> BTreeMap<String, Vec<IpAddr>> {
    let mut m = BTreeMap::new();
    m.insert("worker-1".to_owned(), vec!["10.0.0.5".parse().unwrap()]);
    m.insert(
        "worker-1.cluster.example".to_owned(),
        vec!["192.0.2.1".parse().unwrap(), "fd00::5".parse().unwrap()],
    );
    m.insert("other".to_owned(), vec!["10.0.0.6".parse().unwrap()]);
    m
}

fn object(req: &CertificateRequest, user: &str) -> CertificateSigningRequest {
    let mut csr = CertificateSigningRequest::for_node(req, None).unwrap();
    csr.spec.signer_name = KUBELET_SERVING_SIGNER.to_owned();
    csr.spec.usages = KUBELET_SERVING_USAGES.to_vec();
    csr.spec.username = Some(user.to_owned());
    csr
}

fn decide_with(
    sans: Vec<SanType>,
    edit: impl FnOnce(&mut CertificateSigningRequest, &mut ServingPolicy),
) -> ServingDecision {
    let req = request(&["system:nodes"], NODE, sans);
    let mut csr = object(&req, NODE);
    let mut p = policy();
    edit(&mut csr, &mut p);
    decide_serving(&csr, &req, &addresses(), &answers(), &p)
}

fn decide(sans: Vec<SanType>) -> ServingDecision {
    decide_with(sans, |_, _| {})
}

#[track_caller]
fn denied(d: ServingDecision, want: &str) {
    match d {
        ServingDecision::Deny { reason } => assert_eq!(reason, want),
        other => panic!("expected a denial ({want}), got {other:?}"),
    }
}

#[test]
fn approves_names_the_node_owns() {
    assert_eq!(
        decide(vec![
            dns("worker-1"),
            dns("worker-1.cluster.example"),
            ip("10.0.0.5"),
            ip("fd00::5")
        ]),
        ServingDecision::Approve
    );
    assert_eq!(decide(vec![ip("10.0.0.5")]), ServingDecision::Approve);
    assert_eq!(
        decide_with(vec![dns("worker-1")], |c, p| {
            c.spec.expiration_seconds = Some(p.max_expiration_seconds);
        }),
        ServingDecision::Approve
    );
}

#[test]
fn no_opinion_on_other_signers_and_non_nodes() {
    for signer in [
        "kubernetes.io/kube-apiserver-client-kubelet",
        "example.com/serving",
        "",
    ] {
        assert_eq!(
            decide_with(vec![dns("worker-1")], |c, _| c.spec.signer_name =
                signer.to_owned()),
            ServingDecision::NoOpinion,
            "{signer}"
        );
    }
    for user in ["system:bootstrap:abcdef", "admin", ""] {
        assert_eq!(
            decide_with(vec![dns("worker-1")], |c, _| c.spec.username =
                Some(user.to_owned())),
            ServingDecision::NoOpinion,
            "{user}"
        );
    }
    assert_eq!(
        decide_with(vec![dns("worker-1")], |c, _| c.spec.username = None),
        ServingDecision::NoOpinion
    );
}

#[test]
fn hostile_wrong_usages() {
    denied(
        decide_with(vec![dns("worker-1")], |c, _| {
            c.spec.usages = vec![ClientAuth]
        }),
        "usages did not match [digital signature key encipherment server auth]",
    );
}

#[test]
fn hostile_requester_is_another_node() {
    denied(
        decide_with(vec![dns("worker-1")], |c, _| {
            c.spec.username = Some("system:node:worker-2".to_owned());
        }),
        r#"requester "system:node:worker-2" is not the subject common name "system:node:worker-1""#,
    );
}

#[test]
fn hostile_empty_node_name() {
    let req = request(&["system:nodes"], "system:node:", vec![dns("worker-1")]);
    let csr = object(&req, "system:node:");
    denied(
        decide_serving(&csr, &req, &addresses(), &answers(), &policy()),
        "subject common name has an empty node name",
    );
}

#[test]
fn hostile_sans_the_node_does_not_own() {
    // A name that resolves to another node's address.
    denied(
        decide(vec![dns("other")]),
        r#"DNS subjectAltName "other" does not resolve to an address of the node"#,
    );
    // A name that does not resolve at all.
    denied(
        decide(vec![dns("ghost")]),
        r#"DNS subjectAltName "ghost" does not resolve to an address of the node"#,
    );
    // An IP inside the prefixes but not the node's.
    denied(
        decide(vec![dns("worker-1"), ip("10.0.0.6")]),
        "IP subjectAltName 10.0.0.6 is not an address of the node",
    );
    // The address of the Hostname entry is not an IP: it owns nothing.
    denied(
        decide(vec![ip("fd00::6")]),
        "IP subjectAltName fd00::6 is not an address of the node",
    );
}

#[test]
fn dns_check_bypasses() {
    let allow = |c: &mut CertificateSigningRequest, p: &mut ServingPolicy| {
        let _ = c;
        p.dns_check = DnsCheck::AllowUnresolved;
    };
    assert_eq!(
        decide_with(vec![dns("ghost")], allow),
        ServingDecision::Approve
    );
    // Resolving elsewhere is still refused when unresolved names are allowed.
    denied(
        decide_with(vec![dns("other")], allow),
        r#"DNS subjectAltName "other" does not resolve to an address of the node"#,
    );
    let skip = |_: &mut CertificateSigningRequest, p: &mut ServingPolicy| {
        p.dns_check = DnsCheck::DangerousSkip;
    };
    assert_eq!(
        decide_with(vec![dns("other")], skip),
        ServingDecision::Approve
    );
    // The regex still applies when resolution is skipped.
    denied(
        decide_with(vec![dns("worker-1.evil.example")], skip),
        r#"DNS subjectAltName "worker-1.evil.example" does not match the provider regex"#,
    );
}

#[test]
fn hostile_email_and_uri_sans() {
    denied(
        decide(vec![
            dns("worker-1"),
            SanType::Rfc822Name("a@b.c".try_into().unwrap()),
        ]),
        "Email subjectAltNames are not allowed",
    );
    denied(
        decide(vec![
            dns("worker-1"),
            SanType::URI("spiffe://x/y".try_into().unwrap()),
        ]),
        "URI subjectAltNames are not allowed",
    );
}

#[test]
fn hostile_ip_outside_prefixes() {
    denied(
        decide(vec![ip("203.0.113.9")]),
        "IP subjectAltName 203.0.113.9 is outside the allowed prefixes",
    );
    denied(
        decide(vec![ip("127.0.0.1")]),
        "IP subjectAltName 127.0.0.1 is outside the allowed prefixes",
    );
    denied(
        decide_with(vec![ip("10.0.0.5")], |_, p| p.allowed_prefixes.clear()),
        "IP subjectAltName 10.0.0.5 is outside the allowed prefixes",
    );
    let p: IpPrefix = "203.0.113.0/24".parse().unwrap();
    assert_eq!(
        decide_with(vec![ip("203.0.113.9")], |_, pol| pol
            .allowed_prefixes
            .push(p)),
        ServingDecision::Approve
    );
}

#[test]
fn hostile_regex_mismatch() {
    denied(
        decide(vec![dns("kubernetes.default.svc")]),
        r#"DNS subjectAltName "kubernetes.default.svc" does not match the provider regex"#,
    );
    denied(
        decide(vec![dns("*.cluster.example")]),
        r#"DNS subjectAltName "*.cluster.example" does not match the provider regex"#,
    );
    let long = "a".repeat(100);
    denied(
        decide(vec![dns(&long)]),
        &format!(
            "DNS subjectAltName \"{}\"... does not resolve to an address of the node",
            "a".repeat(64)
        ),
    );
}

#[test]
fn hostile_too_long_expiration() {
    denied(
        decide_with(vec![dns("worker-1")], |c, p| {
            c.spec.expiration_seconds = Some(p.max_expiration_seconds + 1);
        }),
        "expirationSeconds 31708801 exceeds the maximum 31708800",
    );
}

#[test]
fn hostile_wrong_signer() {
    assert_eq!(
        decide_with(vec![dns("worker-1")], |c, _| {
            c.spec.signer_name = "kubernetes.io/kube-apiserver-client".to_owned();
        }),
        ServingDecision::NoOpinion
    );
}

#[test]
fn hostile_duplicate_empty_and_too_many_names() {
    denied(
        decide(vec![dns("worker-1"), dns("worker-1")]),
        r#"DNS subjectAltName "worker-1" is repeated"#,
    );
    denied(
        decide(vec![ip("10.0.0.5"), ip("10.0.0.5")]),
        "IP subjectAltName 10.0.0.5 is repeated",
    );
    denied(decide(vec![dns("")]), "DNS subjectAltName is empty");
    denied(decide(vec![]), "DNS or IP subjectAltName is required");
    denied(
        decide_with(vec![dns("worker-1"), ip("10.0.0.5")], |_, p| p.max_sans = 1),
        "2 subjectAltNames exceed the maximum 1",
    );
}

#[test]
fn serving_request_round_trips_and_is_approved() {
    use tls_bootstrap::{Error, NodeKey, NodeName};
    let node: NodeName = "worker-1".parse().unwrap();
    let key = NodeKey::generate().unwrap();
    let v4: IpAddr = "10.0.0.5".parse().unwrap();
    let v6: IpAddr = "fd00::5".parse().unwrap();
    let req = CertificateRequest::for_node_serving(
        &node,
        &key,
        &["worker-1", "worker-1.cluster.example", "worker-1"],
        &[v4, v6, v4],
    )
    .unwrap();
    assert_eq!(req.dns_names(), ["worker-1", "worker-1.cluster.example"]);
    assert_eq!(req.ip_addresses(), [v4, v6]);
    // What was built is what a parser reads back, signature checked.
    let parsed = CertificateRequest::from_pem(req.to_pem().as_bytes()).unwrap();
    assert_eq!(parsed, req);
    assert_eq!(parsed.common_name(), Some(NODE));
    assert_eq!(parsed.organizations(), ["system:nodes"]);
    assert!(parsed.email_addresses().is_empty() && parsed.uris().is_empty());
    validate_kubelet_serving(&parsed, kubelet_serving_usages(parsed.key_type())).unwrap();
    let csr = object(&parsed, NODE);
    assert_eq!(
        decide_serving(&csr, &parsed, &addresses(), &answers(), &policy()),
        ServingDecision::Approve
    );

    let only_ip = CertificateRequest::for_node_serving(&node, &key, &[], &[v4]).unwrap();
    let parsed = CertificateRequest::from_der(only_ip.as_der()).unwrap();
    assert!(parsed.dns_names().is_empty());
    assert_eq!(parsed.ip_addresses(), [v4]);

    let invalid = |hosts: &[&str], ips: &[IpAddr]| {
        matches!(
            CertificateRequest::for_node_serving(&node, &key, hosts, ips),
            Err(Error::InvalidRequest { .. })
        )
    };
    assert!(invalid(&[], &[]));
    assert!(invalid(&[""], &[v4]));
    assert!(invalid(&["wörker"], &[]));
    let long = "a".repeat(254);
    assert!(invalid(&[long.as_str()], &[]));
    let many: Vec<String> = (0..257).map(|i| format!("n{i}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    assert!(invalid(&many, &[]));
    assert!(!invalid(&many[..256], &[]));
    let ips: Vec<IpAddr> = (0..200_u32)
        .map(|i| IpAddr::from((0x0a00_0000 + i).to_be_bytes()))
        .collect();
    assert!(invalid(&many[..100], &ips));
    // Repeats do not count against the limit.
    let repeated = vec!["worker-1"; 10_000];
    assert!(!invalid(&repeated, &[]));
}

/// The rows of postfinance/kubelet-csr-approver's controller tests that the cases above do not
/// already cover, as data: (what, SANs, expirationSeconds, the denial or `None` for approval).
#[test]
fn kubelet_csr_approver_rows() {
    let max = policy().max_expiration_seconds;
    type Row = (
        &'static str,
        Vec<SanType>,
        Option<i32>,
        Option<&'static str>,
    );
    let rows: [Row; 4] = [
        (
            "IPv6 outside the prefixes, with a DNS name",
            vec![dns("worker-1"), ip("2001:c0fe:beef::14")],
            None,
            Some("IP subjectAltName 2001:c0fe:beef::14 is outside the allowed prefixes"),
        ),
        (
            "IPv6 outside the prefixes, no DNS name",
            vec![ip("2001:c0fe:beef::14")],
            None,
            Some("IP subjectAltName 2001:c0fe:beef::14 is outside the allowed prefixes"),
        ),
        (
            "expiration at the maximum (367 days)",
            vec![dns("worker-1")],
            Some(max),
            None,
        ),
        (
            "expiration a day over the maximum",
            vec![dns("worker-1")],
            Some(max + 24 * 3600),
            Some("expirationSeconds 31795200 exceeds the maximum 31708800"),
        ),
    ];
    for (what, sans, expiration, want) in rows {
        let got = decide_with(sans, |c, _| c.spec.expiration_seconds = expiration);
        match want {
            None => assert_eq!(got, ServingDecision::Approve, "{what}"),
            Some(reason) => assert_eq!(
                got,
                ServingDecision::Deny {
                    reason: reason.to_owned()
                },
                "{what}"
            ),
        }
    }
}
