//! The whole TLS bootstrap through the public API, checked with openssl: the node's request,
//! the API server's fields, the approver, the signer, and the node accepting the certificate.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::disallowed_methods,
    reason = "tests"
)]

use std::time::{Duration, SystemTime};

use crate::support::{Ca, run};
use tls_bootstrap::{
    Approval, CertificateRequest, CertificateSigningRequest, NodeKey, NodeName, Recognizer,
    SignerConfig, Signing, State, accept_certificate, approve, sign,
};

const BOOTSTRAP_GROUP: &str = "system:bootstrappers:kubeadm:default-node-token";

/// kubeadm's RBAC: bootstrappers may have `nodeclient` approved, nodes `selfnodeclient`.
fn kubeadm_rbac(review: &tls_bootstrap::AccessReview<'_>) -> bool {
    let in_group = |g: &str| review.groups.iter().any(|x| x == g);
    match review.subresource {
        "nodeclient" => in_group(BOOTSTRAP_GROUP),
        "selfnodeclient" => in_group("system:nodes"),
        _ => false,
    }
}

fn tmp(name: &str, contents: &[u8]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tls-bootstrap-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

#[test]
fn token_to_node_certificate() {
    let now = SystemTime::now();
    let node: NodeName = "worker-1".parse().unwrap();
    let key = NodeKey::generate().unwrap();
    let request = CertificateRequest::for_node(&node, &key).unwrap();
    let mut csr = CertificateSigningRequest::for_node(&request, None).unwrap();

    // What the API server does on create: the requester's identity goes into the spec.
    csr.spec.username = Some("system:bootstrap:abcdef".to_owned());
    csr.spec.groups = vec![
        BOOTSTRAP_GROUP.to_owned(),
        "system:authenticated".to_owned(),
    ];
    let json = csr.to_json().unwrap();
    let mut csr = CertificateSigningRequest::from_json(&json).unwrap();
    assert_eq!(csr.state(), State::Pending);

    let Approval::Approve {
        recognizer,
        condition,
    } = approve(&csr, kubeadm_rbac)
    else {
        panic!("not approved")
    };
    assert_eq!(recognizer, Recognizer::NodeClient);
    assert_eq!(condition.reason.as_deref(), Some("AutoApproved"));
    assert_eq!(
        condition.message.as_deref(),
        Some("Auto approving kubelet client certificate after SubjectAccessReview.")
    );
    csr.status.conditions.push(condition);
    assert_eq!(csr.state(), State::Approved);
    assert_eq!(approve(&csr, kubeadm_rbac), Approval::AlreadyDecided);

    let ca = Ca::new("cluster CA");
    let config = SignerConfig::new(now + Duration::from_secs(10 * 365 * 86400));
    let Signing::Sign(plan) = sign(&csr, &config, now) else {
        panic!("not signed")
    };
    assert_eq!(plan.not_before, now - Duration::from_secs(300));
    assert_eq!(
        plan.not_after,
        now + Duration::from_secs(365 * 86400) - Duration::from_secs(300)
    );
    let cert_pem = ca.issue(&plan);
    csr.status.certificate = Some(cert_pem.clone().into_bytes());
    let State::Issued(issued) = csr.state() else {
        panic!("not issued")
    };
    assert_eq!(sign(&csr, &config, now), Signing::Ignore);

    let cert = accept_certificate(issued, ca.pem().as_bytes(), &key, &node, now).unwrap();
    assert_eq!(cert.node(), &node);
    let kubelet_pem = cert.to_kubelet_pem(&key).unwrap();
    assert!(kubelet_pem.starts_with("-----BEGIN CERTIFICATE-----\n"));
    assert!(kubelet_pem.contains("-----BEGIN EC PRIVATE KEY-----\n"));
    assert_eq!(NodeKey::from_pem(kubelet_pem.as_bytes()).unwrap(), key);

    // openssl agrees: the request verifies and names the node, the certificate chains to
    // the CA for client authentication, and the certificate holds the node's key.
    let csr_path = tmp("node.csr", request.to_pem().as_bytes());
    let (ok, out, err) = run(
        "openssl",
        &[
            "req",
            "-in",
            csr_path.to_str().unwrap(),
            "-noout",
            "-verify",
            "-text",
        ],
    );
    assert!(ok, "{err}");
    assert!(format!("{out}{err}").contains("verify OK"), "{out}{err}");
    assert!(
        out.contains("Subject: O=system:nodes, CN=system:node:worker-1")
            || out.contains("Subject: O = system:nodes, CN = system:node:worker-1"),
        "{out}"
    );
    assert!(!out.contains("Subject Alternative Name"), "{out}");
    assert!(out.contains("ecdsa-with-SHA256"), "{out}");

    let ca_path = tmp("ca.crt", ca.pem().as_bytes());
    let cert_path = tmp("node.crt", cert_pem.as_bytes());
    let (ok, out, err) = run(
        "openssl",
        &[
            "verify",
            "-purpose",
            "sslclient",
            "-CAfile",
            ca_path.to_str().unwrap(),
            cert_path.to_str().unwrap(),
        ],
    );
    assert!(ok && out.contains(": OK"), "{out}{err}");

    let key_path = tmp("node.key", key.to_pem().unwrap().as_bytes());
    let (_, cert_pub, _) = run(
        "openssl",
        &[
            "x509",
            "-in",
            cert_path.to_str().unwrap(),
            "-noout",
            "-pubkey",
        ],
    );
    let (_, key_pub, _) = run(
        "openssl",
        &["pkey", "-in", key_path.to_str().unwrap(), "-pubout"],
    );
    assert_eq!(cert_pub, key_pub);
    assert!(!cert_pub.is_empty());
}

#[test]
fn renewal_is_self_node_client() {
    let node: NodeName = "worker-2".parse().unwrap();
    let key = NodeKey::generate().unwrap();
    let request = CertificateRequest::for_node(&node, &key).unwrap();
    let mut csr = CertificateSigningRequest::for_node(&request, None).unwrap();
    csr.spec.username = Some("system:node:worker-2".to_owned());
    csr.spec.groups = vec!["system:nodes".to_owned(), "system:authenticated".to_owned()];
    let Approval::Approve {
        recognizer,
        condition,
    } = approve(&csr, kubeadm_rbac)
    else {
        panic!("not approved")
    };
    assert_eq!(recognizer, Recognizer::SelfNodeClient);
    assert_eq!(
        condition.message.as_deref(),
        Some("Auto approving self kubelet client certificate after SubjectAccessReview.")
    );

    // Another node may not renew for worker-2: it is only a `nodeclient` request, which
    // kubeadm's RBAC does not give to nodes.
    csr.spec.username = Some("system:node:worker-3".to_owned());
    let Approval::NotAuthorized(why) = approve(&csr, kubeadm_rbac) else {
        panic!("approved")
    };
    assert_eq!(
        why.as_str(),
        format!(
            "recognized csr {:?} as [nodeclient] but subject access review was not approved",
            csr.name().unwrap()
        )
    );
}

#[test]
fn openssl_requests_are_read_and_judged() {
    // An RSA request with a DNS name and an IP, made by openssl: it parses (RSA signature
    // checked), and the kubelet client rules refuse it for its names.
    let dir = std::env::temp_dir().join(format!("tls-bootstrap-ossl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key = dir.join("rsa.key");
    let csr = dir.join("rsa.csr");
    let (ok, _, err) = run(
        "openssl",
        &[
            "req",
            "-new",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            key.to_str().unwrap(),
            "-out",
            csr.to_str().unwrap(),
            "-subj",
            "/O=system:nodes/CN=system:node:rsa-node",
            "-addext",
            "subjectAltName=DNS:rsa-node.example,IP:10.0.0.7",
        ],
    );
    assert!(ok, "{err}");
    let pem = std::fs::read(&csr).unwrap();
    let request = CertificateRequest::from_pem(&pem).unwrap();
    assert_eq!(request.key_type(), tls_bootstrap::KeyType::Rsa);
    assert_eq!(request.common_name(), Some("system:node:rsa-node"));
    assert_eq!(request.organizations(), ["system:nodes"]);
    assert_eq!(request.dns_names(), ["rsa-node.example"]);
    assert_eq!(
        request.ip_addresses(),
        ["10.0.0.7".parse::<std::net::IpAddr>().unwrap()]
    );
    let usages = [
        tls_bootstrap::KeyUsage::DigitalSignature,
        tls_bootstrap::KeyUsage::KeyEncipherment,
        tls_bootstrap::KeyUsage::ClientAuth,
    ];
    assert_eq!(
        tls_bootstrap::validate_kubelet_client(&request, &usages)
            .unwrap_err()
            .as_str(),
        "DNS subjectAltNames are not allowed"
    );

    // Without names it is a valid kubelet client request (RSA usages included).
    let (ok, _, err) = run(
        "openssl",
        &[
            "req",
            "-new",
            "-key",
            key.to_str().unwrap(),
            "-out",
            csr.to_str().unwrap(),
            "-subj",
            "/O=system:nodes/CN=system:node:rsa-node",
        ],
    );
    assert!(ok, "{err}");
    let request = CertificateRequest::from_pem(&std::fs::read(&csr).unwrap()).unwrap();
    tls_bootstrap::validate_kubelet_client(&request, &usages).unwrap();

    // A request whose signature was altered is refused.
    let mut der = request.as_der().to_vec();
    let last = der.len() - 1;
    der[last] ^= 1;
    assert_eq!(
        CertificateRequest::from_der(&der).unwrap_err(),
        tls_bootstrap::Error::BadSignature
    );
}

#[test]
fn node_csr_name_matches_openssl_sha512_256() {
    // The name is SHA-512/256 over base64url(SPKI)|CN|O|usages|; check the digest against
    // openssl's SHA-512/256 over the same stream.
    use base64::Engine as _;
    let b64 = |d: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(d);
    let node: NodeName = "worker-1".parse().unwrap();
    let key = NodeKey::generate_with(|b| b.fill(42)).unwrap();
    let request = CertificateRequest::for_node(&node, &key).unwrap();
    let csr = CertificateSigningRequest::for_node(&request, None).unwrap();
    let mut stream = String::new();
    for part in [
        key.public_key_der(),
        b"system:node:worker-1",
        b"system:nodes",
        b"digital signature",
        b"client auth",
    ] {
        stream.push_str(&b64(part));
        stream.push('|');
    }
    let input = tmp("stream", stream.as_bytes());
    let out = std::process::Command::new("openssl")
        .args(["dgst", "-sha512-256", "-binary", input.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(out.stdout.len(), 32);
    assert_eq!(
        csr.name().unwrap(),
        format!("node-csr-{}", b64(&out.stdout))
    );
    // Same key, same name: a restarted node finds its request.
    let again = CertificateRequest::for_node(&node, &key).unwrap();
    assert_eq!(
        CertificateSigningRequest::for_node(&again, None)
            .unwrap()
            .name(),
        csr.name()
    );
    let now = SystemTime::now();
    csr.ensure_compatible(&again, tls_bootstrap::KUBELET_CLIENT_SIGNER, now)
        .unwrap();
    let other = CertificateRequest::for_node(&node, &NodeKey::generate().unwrap()).unwrap();
    assert_eq!(
        csr.ensure_compatible(&other, tls_bootstrap::KUBELET_CLIENT_SIGNER, now)
            .unwrap_err(),
        tls_bootstrap::Error::Incompatible { what: "public key" }
    );
}

#[test]
fn openssl_keys_are_read() {
    let dir = std::env::temp_dir().join(format!("tls-bootstrap-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sec1 = dir.join("sec1.key");
    let pkcs8 = dir.join("pkcs8.key");
    let p384 = dir.join("p384.key");
    let (ok, _, err) = run(
        "openssl",
        &[
            "ecparam",
            "-name",
            "prime256v1",
            "-genkey",
            "-noout",
            "-out",
            sec1.to_str().unwrap(),
        ],
    );
    assert!(ok, "{err}");
    let (ok, _, err) = run(
        "openssl",
        &[
            "pkcs8",
            "-topk8",
            "-nocrypt",
            "-in",
            sec1.to_str().unwrap(),
            "-out",
            pkcs8.to_str().unwrap(),
        ],
    );
    assert!(ok, "{err}");
    let (ok, _, err) = run(
        "openssl",
        &[
            "ecparam",
            "-name",
            "secp384r1",
            "-genkey",
            "-noout",
            "-out",
            p384.to_str().unwrap(),
        ],
    );
    assert!(ok, "{err}");
    let a = NodeKey::from_pem(&std::fs::read(&sec1).unwrap()).unwrap();
    let b = NodeKey::from_pem(&std::fs::read(&pkcs8).unwrap()).unwrap();
    assert_eq!(a, b);
    // Our SEC 1 encoding is openssl's, byte for byte (curve and public key included).
    assert_eq!(
        a.to_pem().unwrap().as_str(),
        std::fs::read_to_string(&sec1).unwrap()
    );
    // P-384 keys are read too (tests/keys.rs covers them).
    assert_eq!(
        NodeKey::from_pem(&std::fs::read(&p384).unwrap())
            .unwrap()
            .key_type(),
        tls_bootstrap::KeyType::EcdsaP384
    );
}

/// openssl with `string_mask = default` writes a subject value that PrintableString and
/// T61String cannot hold as a BMPString: Go reads it (UCS-2), and so do the request and the
/// certificate readers here; `Subject` reads every value of an attribute type.
#[test]
fn bmpstring_subjects_are_read_as_go_reads_them() {
    let dir = std::env::temp_dir().join(format!("tls-bootstrap-bmp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("openssl.cnf");
    std::fs::write(
        &config,
        "[req]\ndistinguished_name = dn\nstring_mask = default\nutf8 = yes\n[dn]\n",
    )
    .unwrap();
    let key = dir.join("p256.key");
    let csr = dir.join("bmp.csr");
    let cert = dir.join("bmp.crt");
    let subject = "/CN=n\u{3a9}de/O=gr\u{3a9}up/O=plain";
    for (out, extra) in [(&csr, None), (&cert, Some("-x509"))] {
        let mut args = vec![
            "req",
            "-new",
            "-config",
            config.to_str().unwrap(),
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            key.to_str().unwrap(),
            "-subj",
            subject,
            "-out",
            out.to_str().unwrap(),
        ];
        args.extend(extra);
        let (ok, _, err) = run("openssl", &args);
        assert!(ok, "openssl: {err}");
    }
    // The value is a BMPString (tag 0x1e) in both, as asn1parse shows.
    for file in [&csr, &cert] {
        let (ok, out, err) = run("openssl", &["asn1parse", "-in", file.to_str().unwrap()]);
        assert!(ok, "openssl: {err}");
        assert!(out.contains("BMPSTRING"), "{out}");
    }
    let request = CertificateRequest::from_pem(&std::fs::read(&csr).unwrap()).unwrap();
    assert_eq!(request.common_name(), Some("n\u{3a9}de"));
    assert_eq!(request.organizations(), ["gr\u{3a9}up", "plain"]);

    let pem = std::fs::read(&cert).unwrap();
    let blocks = tls_bootstrap::go_pem_blocks(&pem, 4);
    assert_eq!(blocks.len(), 1);
    assert_eq!(blocks[0].label(), "CERTIFICATE");
    assert!(!blocks[0].has_headers());
    let subject = tls_bootstrap::Subject::of_certificate(blocks[0].der()).unwrap();
    assert_eq!(subject.common_name(), Some("n\u{3a9}de"));
    assert_eq!(subject.organizations(), ["gr\u{3a9}up", "plain"]);
    assert_eq!(
        subject.values("2.5.4.10").collect::<Vec<_>>(),
        ["gr\u{3a9}up", "plain"]
    );
    assert_eq!(subject.values("not an oid").count(), 0);
    std::fs::remove_dir_all(&dir).ok();
}

/// A certificate whose subject holds a value that is not a string does not parse in Go
/// (`parseName`): neither does its `Subject`.
#[test]
fn a_non_string_subject_value_refuses_the_certificate() {
    let dir = std::env::temp_dir().join(format!("tls-bootstrap-int-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("openssl.cnf");
    // openssl writes subject values as strings only, so the certificate is edited: the
    // UTF8String tag (0x0c) of the O value "XX" (issuer and subject) becomes INTEGER (0x02).
    std::fs::write(&config, "[req]\ndistinguished_name = dn\n[dn]\n").unwrap();
    let key = dir.join("p256.key");
    let cert = dir.join("int.crt");
    let (ok, _, err) = run(
        "openssl",
        &[
            "req",
            "-new",
            "-x509",
            "-config",
            config.to_str().unwrap(),
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            key.to_str().unwrap(),
            "-subj",
            "/CN=node/O=XX",
            "-outform",
            "DER",
            "-out",
            cert.to_str().unwrap(),
        ],
    );
    assert!(ok, "openssl: {err}");
    let mut der = std::fs::read(&cert).unwrap();
    assert!(tls_bootstrap::Subject::of_certificate(&der).is_ok());
    let at: Vec<usize> = der
        .windows(4)
        .enumerate()
        .filter(|(_, w)| *w == [0x0c, 0x02, b'X', b'X'])
        .map(|(i, _)| i)
        .collect();
    assert_eq!(at.len(), 2);
    for i in at {
        der[i] = 0x02;
    }
    let error = tls_bootstrap::Subject::of_certificate(&der).unwrap_err();
    assert!(error.to_string().contains("not a string"), "{error}");
    std::fs::remove_dir_all(&dir).ok();
}
