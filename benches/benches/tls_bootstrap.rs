//! `tls-bootstrap`: the node's side (key, request, accepting the issued certificate) and the
//! control plane's rules, each beside its floor (`baseline/...`, the raw ECDSA P-256 signature
//! or verification they cannot avoid) and, for the request, rcgen as peer, in the same run.
//! The kubelet-serving request (ECDSA P-256 and RSA 2048) beside ring's and aws-lc-rs's
//! signature alone, and the serving approver's decision beside its signature check and its
//! pattern matches.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::collections::BTreeMap;
use std::hint::black_box;
use std::net::IpAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use criterion::{Criterion, criterion_group, criterion_main};
use p256::ecdsa::signature::{Signer as _, Verifier as _};
use p256::pkcs8::EncodePrivateKey as _;
use tls_bootstrap::{
    CertificateRequest, CertificateSigningRequest, Condition, DnsCheck, IpPrefix,
    KUBELET_SERVING_SIGNER, NodeKey, NodeName, ServingDecision, ServingPolicy, SignerConfig,
    accept_certificate, approve, decide_serving, kubelet_serving_usages, sign,
};

const CA_PEM: &str = include_str!("../../fuzz/checks/fixtures/tls-bootstrap/ca.pem");
const KEY_PEM: &str = include_str!("../../fuzz/checks/fixtures/tls-bootstrap/node.key");
const CERT_PEM: &str = include_str!("../../fuzz/checks/fixtures/tls-bootstrap/node.pem");
/// An RSA 2048 key (PKCS#8, made by `openssl genpkey`), for the RSA serving request; the Go
/// side (`benches/go/servingcsr`) reads the same file.
const RSA_KEY_PEM: &str = include_str!("../data/rsa2048_node.key");

/// What the kubelet puts in its serving request here: its hostname and a FQDN, an IPv4 and an
/// IPv6 address (the same in `benches/go/servingcsr`).
const SERVING_HOSTNAMES: [&str; 2] = ["worker-1", "worker-1.cluster.example"];
const SERVING_IPS: [&str; 2] = ["10.0.0.5", "fd00::5"];

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_893_456_000)
}

fn request(c: &mut Criterion) {
    let mut g = c.benchmark_group("tls_bootstrap/request");
    let node: NodeName = "worker-1".parse().unwrap();
    let key = NodeKey::from_pem(KEY_PEM.as_bytes()).unwrap();
    let request = CertificateRequest::for_node(&node, &key).unwrap();
    let pem = request.to_pem();
    let message = vec![0x5a_u8; request.as_der().len() - 80];
    let signing = p256::ecdsa::SigningKey::from(p256::SecretKey::from_sec1_pem(KEY_PEM).unwrap());
    let signature: p256::ecdsa::Signature = signing.sign(&message);
    let verifying = *signing.verifying_key();

    g.bench_function("ours/for_node", |b| {
        b.iter(|| CertificateRequest::for_node(black_box(&node), black_box(&key)).unwrap());
    });
    // The floor: one ECDSA P-256 signature on ring (the provider the request is signed with,
    // randomised nonce) over as many bytes as the request's signed part.
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = p256::SecretKey::from_sec1_pem(KEY_PEM)
        .unwrap()
        .to_pkcs8_der()
        .unwrap();
    let ring_key = ring::signature::EcdsaKeyPair::from_pkcs8(
        &ring::signature::ECDSA_P256_SHA256_ASN1_SIGNING,
        pkcs8.as_bytes(),
        &rng,
    )
    .unwrap();
    g.bench_function("baseline/ring_p256_sign", |b| {
        b.iter(|| ring_key.sign(&rng, black_box(&message)).unwrap());
    });
    g.bench_function("reference/rustcrypto_p256_sign", |b| {
        b.iter(|| -> p256::ecdsa::Signature { signing.sign(black_box(&message)) });
    });
    let rcgen_key = rcgen::KeyPair::from_pem(
        &p256::SecretKey::from_sec1_pem(KEY_PEM)
            .unwrap()
            .to_pkcs8_pem(p256::pkcs8::LineEnding::LF)
            .unwrap(),
    )
    .unwrap();
    g.bench_function("peer/rcgen_serialize_request", |b| {
        b.iter(|| {
            let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            params.distinguished_name = rcgen::DistinguishedName::new();
            params
                .distinguished_name
                .push(rcgen::DnType::OrganizationName, "system:nodes");
            params
                .distinguished_name
                .push(rcgen::DnType::CommonName, "system:node:worker-1");
            params.serialize_request(black_box(&rcgen_key)).unwrap()
        });
    });
    g.bench_function("ours/from_pem", |b| {
        b.iter(|| CertificateRequest::from_pem(black_box(pem.as_bytes())).unwrap());
    });
    // The floor of parsing a request: its one signature check, on ring.
    let ring_sig = ring_key.sign(&rng, &message).unwrap();
    let ring_pub = ring::signature::UnparsedPublicKey::new(
        &ring::signature::ECDSA_P256_SHA256_ASN1,
        ring::signature::KeyPair::public_key(&ring_key)
            .as_ref()
            .to_vec(),
    );
    g.bench_function("baseline/ring_p256_verify", |b| {
        b.iter(|| {
            ring_pub
                .verify(black_box(&message), black_box(ring_sig.as_ref()))
                .unwrap()
        });
    });
    g.bench_function("reference/rustcrypto_p256_verify", |b| {
        b.iter(|| {
            verifying
                .verify(black_box(&message), black_box(&signature))
                .unwrap()
        });
    });
    g.bench_function("ours/generate_key", |b| {
        b.iter(|| NodeKey::generate().unwrap());
    });
    // The floor of key generation: ring's P-256 key pair, ready to sign.
    g.bench_function("baseline/ring_generate_key", |b| {
        b.iter(|| {
            let pkcs8 = ring::signature::EcdsaKeyPair::generate_pkcs8(
                &ring::signature::ECDSA_P256_SHA256_ASN1_SIGNING,
                &rng,
            )
            .unwrap();
            ring::signature::EcdsaKeyPair::from_pkcs8(
                &ring::signature::ECDSA_P256_SHA256_ASN1_SIGNING,
                pkcs8.as_ref(),
                &rng,
            )
            .unwrap()
        });
    });
    // The floor on aws-lc-rs, the provider that signs here (the benches enable both, as the
    // shipped binary's aws-lc-rs does): a key pair ready to sign, one base-point multiplication.
    g.bench_function("baseline/aws_lc_generate_key", |b| {
        b.iter(|| {
            aws_lc_rs::signature::EcdsaKeyPair::generate(
                &aws_lc_rs::signature::ECDSA_P256_SHA256_ASN1_SIGNING,
            )
            .unwrap()
        });
    });
    g.finish();
}

fn accept(c: &mut Criterion) {
    let mut g = c.benchmark_group("tls_bootstrap/accept");
    let node: NodeName = "fuzz".parse().unwrap();
    let key = NodeKey::from_pem(KEY_PEM.as_bytes()).unwrap();
    accept_certificate(CERT_PEM.as_bytes(), CA_PEM.as_bytes(), &key, &node, now()).unwrap();
    g.bench_function("ours/accept_certificate", |b| {
        b.iter(|| {
            accept_certificate(
                black_box(CERT_PEM.as_bytes()),
                black_box(CA_PEM.as_bytes()),
                &key,
                &node,
                now(),
            )
            .unwrap()
        });
    });
    // The floor: the one ECDSA P-256 verification of the certificate's signature by the CA
    // (ring, the provider rustls-webpki uses here), on the same bytes.
    let (tbs, sig, ca_point) = cert_parts();
    let ca_key =
        ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_ASN1, ca_point);
    ca_key.verify(&tbs, &sig).unwrap();
    g.bench_function("baseline/ring_p256_verify", |b| {
        b.iter(|| ca_key.verify(black_box(&tbs), black_box(&sig)).unwrap());
    });
    g.finish();
}

fn rules(c: &mut Criterion) {
    let mut g = c.benchmark_group("tls_bootstrap/rules");
    let node: NodeName = "worker-1".parse().unwrap();
    let key = NodeKey::from_pem(KEY_PEM.as_bytes()).unwrap();
    let request = CertificateRequest::for_node(&node, &key).unwrap();
    let mut csr = CertificateSigningRequest::for_node(&request, None).unwrap();
    csr.spec.username = Some("system:bootstrap:abcdef".to_owned());
    csr.spec.groups = vec!["system:bootstrappers".to_owned()];
    let json = csr.to_json().unwrap();
    g.bench_function("ours/from_json_and_approve", |b| {
        b.iter(|| {
            let csr = CertificateSigningRequest::from_json(black_box(&json)).unwrap();
            approve(&csr, |r| {
                r.groups.iter().any(|g| g == "system:bootstrappers")
            })
        });
    });
    csr.status
        .conditions
        .push(Condition::new("Approved", "AutoApproved", "ok"));
    let config = SignerConfig::new(now() + Duration::from_secs(86400 * 3650));
    g.bench_function("ours/sign_plan", |b| {
        b.iter(|| sign(black_box(&csr), &config, now()));
    });
    g.finish();
}

/// The fixture certificate's signed bytes, signature, and its CA's public point.
fn cert_parts() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    use der::{Decode as _, Encode as _};
    let cert_der = pem_der(CERT_PEM);
    let ca_der = pem_der(CA_PEM);
    let cert = x509_cert::Certificate::from_der(&cert_der).unwrap();
    let ca = x509_cert::Certificate::from_der(&ca_der).unwrap();
    (
        cert.tbs_certificate.to_der().unwrap(),
        cert.signature.raw_bytes().to_vec(),
        ca.tbs_certificate
            .subject_public_key_info
            .subject_public_key
            .raw_bytes()
            .to_vec(),
    )
}

fn pem_der(pem: &str) -> Vec<u8> {
    use base64::Engine as _;
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .unwrap()
}

fn serving_ips() -> Vec<IpAddr> {
    SERVING_IPS.iter().map(|ip| ip.parse().unwrap()).collect()
}

/// The signed part (`CertificationRequestInfo` DER) of a request: what the floor signs.
fn signed_part(der: &[u8]) -> Vec<u8> {
    use der::{Decode as _, Encode as _};
    x509_cert::request::CertReq::from_der(der)
        .unwrap()
        .info
        .to_der()
        .unwrap()
}

/// Building the kubelet-serving request (subject, SANs, DER, signature) for each key type,
/// beside one signature over as many bytes on ring and on aws-lc-rs (aws-lc-rs is the provider
/// that signs here: the benches enable both, as the shipped binary does).
fn serving_request(c: &mut Criterion) {
    let mut g = c.benchmark_group("tls_bootstrap/serving_request");
    let node: NodeName = "worker-1".parse().unwrap();
    let ips = serving_ips();
    let p256_pkcs8 = p256::SecretKey::from_sec1_pem(KEY_PEM)
        .unwrap()
        .to_pkcs8_der()
        .unwrap()
        .as_bytes()
        .to_vec();
    let rsa_pkcs8 = pem_der(RSA_KEY_PEM);
    for (name, key_pem, pkcs8) in [
        ("p256", KEY_PEM, &p256_pkcs8),
        ("rsa2048", RSA_KEY_PEM, &rsa_pkcs8),
    ] {
        let key = NodeKey::from_pem(key_pem.as_bytes()).unwrap();
        let request =
            CertificateRequest::for_node_serving(&node, &key, &SERVING_HOSTNAMES, &ips).unwrap();
        let tbs = signed_part(request.as_der());
        g.bench_function(format!("ours/for_node_serving_{name}"), |b| {
            b.iter(|| {
                CertificateRequest::for_node_serving(
                    black_box(&node),
                    black_box(&key),
                    black_box(&SERVING_HOSTNAMES),
                    black_box(&ips),
                )
                .unwrap()
            });
        });
        g.bench_function(format!("ours/for_node_serving_pem_{name}"), |b| {
            b.iter(|| {
                CertificateRequest::for_node_serving(
                    black_box(&node),
                    black_box(&key),
                    black_box(&SERVING_HOSTNAMES),
                    black_box(&ips),
                )
                .unwrap()
                .to_pem()
            });
        });
        let ring_rng = ring::rand::SystemRandom::new();
        let aws_rng = aws_lc_rs::rand::SystemRandom::new();
        if name == "p256" {
            let ring_key = ring::signature::EcdsaKeyPair::from_pkcs8(
                &ring::signature::ECDSA_P256_SHA256_ASN1_SIGNING,
                pkcs8,
                &ring_rng,
            )
            .unwrap();
            g.bench_function(format!("baseline/ring_sign_{name}"), |b| {
                b.iter(|| ring_key.sign(&ring_rng, black_box(&tbs)).unwrap());
            });
            let aws_key = aws_lc_rs::signature::EcdsaKeyPair::from_pkcs8(
                &aws_lc_rs::signature::ECDSA_P256_SHA256_ASN1_SIGNING,
                pkcs8,
            )
            .unwrap();
            g.bench_function(format!("baseline/aws_lc_sign_{name}"), |b| {
                b.iter(|| aws_key.sign(&aws_rng, black_box(&tbs)).unwrap());
            });
        } else {
            let ring_key = ring::signature::RsaKeyPair::from_pkcs8(pkcs8).unwrap();
            let mut out = vec![0u8; ring_key.public().modulus_len()];
            g.bench_function(format!("baseline/ring_sign_{name}"), |b| {
                b.iter(|| {
                    ring_key
                        .sign(
                            &ring::signature::RSA_PKCS1_SHA256,
                            &ring_rng,
                            black_box(&tbs),
                            &mut out,
                        )
                        .unwrap();
                });
            });
            let aws_key = aws_lc_rs::signature::RsaKeyPair::from_pkcs8(pkcs8).unwrap();
            let mut out = vec![0u8; aws_key.public_modulus_len()];
            g.bench_function(format!("baseline/aws_lc_sign_{name}"), |b| {
                b.iter(|| {
                    aws_key
                        .sign(
                            &aws_lc_rs::signature::RSA_PKCS1_SHA256,
                            &aws_rng,
                            black_box(&tbs),
                            &mut out,
                        )
                        .unwrap();
                });
            });
        }
    }
    g.finish();
}

/// The serving approver's decision with a realistic policy: a provider regex, two IP
/// prefixes, a Node with three addresses, DNS answers not consulted (the controller's default,
/// `--bypass-dns-resolution`). From the request's PEM (parsed, its signature checked), from
/// the CertificateSigningRequest's JSON, and on a request already parsed; beside the
/// signature check alone and the regex matches alone.
fn serving_approver(c: &mut Criterion) {
    let mut g = c.benchmark_group("tls_bootstrap/serving_approver");
    let node: NodeName = "worker-1".parse().unwrap();
    let key = NodeKey::from_pem(KEY_PEM.as_bytes()).unwrap();
    let request =
        CertificateRequest::for_node_serving(&node, &key, &SERVING_HOSTNAMES, &serving_ips())
            .unwrap();
    let pem = request.to_pem();
    let mut csr = CertificateSigningRequest::for_node(&request, None).unwrap();
    csr.spec.signer_name = KUBELET_SERVING_SIGNER.to_owned();
    csr.spec.usages = kubelet_serving_usages(key.key_type()).to_vec();
    csr.spec.username = Some("system:node:worker-1".to_owned());
    csr.spec.groups = vec!["system:nodes".to_owned(), "system:authenticated".to_owned()];
    let json = csr.to_json().unwrap();
    let regex = regex::Regex::new(r"^worker-[0-9]+(\.cluster\.example)?$").unwrap();
    let prefixes: Vec<IpPrefix> = ["10.0.0.0/8", "fd00::/8"]
        .iter()
        .map(|p| p.parse().unwrap())
        .collect();
    let mut policy = ServingPolicy::new(regex.clone(), prefixes);
    policy.dns_check = DnsCheck::DangerousSkip;
    let addresses = [
        ("Hostname", "worker-1"),
        ("InternalIP", "10.0.0.5"),
        ("InternalIP", "fd00::5"),
    ];
    let answers: BTreeMap<String, Vec<IpAddr>> = BTreeMap::new();
    let parsed = CertificateRequest::from_pem(pem.as_bytes()).unwrap();
    assert_eq!(
        decide_serving(&csr, &parsed, &addresses, &answers, &policy),
        ServingDecision::Approve
    );

    g.bench_function("ours/decide_parsed", |b| {
        b.iter(|| {
            decide_serving(
                black_box(&csr),
                black_box(&parsed),
                &addresses,
                &answers,
                &policy,
            )
        });
    });
    g.bench_function("ours/decide_from_pem", |b| {
        b.iter(|| {
            let request = CertificateRequest::from_pem(black_box(pem.as_bytes())).unwrap();
            decide_serving(&csr, &request, &addresses, &answers, &policy)
        });
    });
    g.bench_function("ours/decide_from_der", |b| {
        b.iter(|| {
            let request = CertificateRequest::from_der(black_box(request.as_der())).unwrap();
            decide_serving(&csr, &request, &addresses, &answers, &policy)
        });
    });
    g.bench_function("ours/decide_from_json", |b| {
        b.iter(|| {
            let csr = CertificateSigningRequest::from_json(black_box(&json)).unwrap();
            let request = csr.certificate_request().unwrap();
            decide_serving(&csr, &request, &addresses, &answers, &policy)
        });
    });
    // The floors: the request's one signature check (ring, and aws-lc-rs, the verifier with
    // both providers on), and the regex matching its two DNS names.
    let tbs = signed_part(request.as_der());
    let signature = {
        use der::Decode as _;
        x509_cert::request::CertReq::from_der(request.as_der())
            .unwrap()
            .signature
            .raw_bytes()
            .to_vec()
    };
    let point = key.public_key_der()[key.public_key_der().len() - 65..].to_vec();
    let ring_pub =
        ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_ASN1, &point);
    ring_pub.verify(&tbs, &signature).unwrap();
    g.bench_function("baseline/ring_p256_verify", |b| {
        b.iter(|| {
            ring_pub
                .verify(black_box(&tbs), black_box(&signature))
                .unwrap()
        });
    });
    let aws_pub = aws_lc_rs::signature::UnparsedPublicKey::new(
        &aws_lc_rs::signature::ECDSA_P256_SHA256_ASN1,
        &point,
    );
    aws_pub.verify(&tbs, &signature).unwrap();
    g.bench_function("baseline/aws_lc_p256_verify", |b| {
        b.iter(|| {
            aws_pub
                .verify(black_box(&tbs), black_box(&signature))
                .unwrap()
        });
    });
    g.bench_function("baseline/regex_is_match_dns_names", |b| {
        b.iter(|| {
            SERVING_HOSTNAMES
                .iter()
                .all(|n| regex.is_match(black_box(n)))
        });
    });
    g.finish();
}

criterion_group!(
    benches,
    request,
    accept,
    rules,
    serving_request,
    serving_approver
);
criterion_main!(benches);
