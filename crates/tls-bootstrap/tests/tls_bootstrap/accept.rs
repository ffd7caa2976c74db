//! Accepting the issued certificate: the hostile rows (oversized or multi-certificate
//! `status.certificate`, wrong key, wrong CA, expired, a certificate for another node), and
//! the kubelet kubeconfig.

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

use crate::support::Ca;
use tls_bootstrap::{
    CertificateRequest, CertificateSigningRequest, Condition, Error, KeyUsage, NodeKey, NodeName,
    SignerConfig, Signing, SigningPlan, accept_certificate, sign,
};

struct Node {
    name: NodeName,
    key: NodeKey,
    plan: SigningPlan,
}

fn node(name: &str, now: SystemTime) -> Node {
    let name: NodeName = name.parse().unwrap();
    let key = NodeKey::generate().unwrap();
    let req = CertificateRequest::for_node(&name, &key).unwrap();
    let mut csr = CertificateSigningRequest::for_node(&req, None).unwrap();
    csr.status
        .conditions
        .push(Condition::new("Approved", "AutoApproved", "ok"));
    let config = SignerConfig::new(now + Duration::from_secs(3650 * 86400));
    let Signing::Sign(plan) = sign(&csr, &config, now) else {
        panic!()
    };
    Node { name, key, plan }
}

#[test]
fn hostile_certificates_are_refused() {
    let now = SystemTime::now();
    let ca = Ca::new("cluster CA");
    let ca_pem = ca.pem();
    let a = node("node-a", now);
    let good = ca.issue(&a.plan);
    accept_certificate(good.as_bytes(), ca_pem.as_bytes(), &a.key, &a.name, now).unwrap();

    let accept = |cert: &str, key: &NodeKey, name: &NodeName, at: SystemTime| {
        accept_certificate(cert.as_bytes(), ca_pem.as_bytes(), key, name, at)
    };

    // Another CA.
    let rogue = Ca::new("cluster CA");
    assert_eq!(
        accept(&rogue.issue(&a.plan), &a.key, &a.name, now).unwrap_err(),
        Error::Untrusted
    );
    // The node's name and key, someone else's certificate.
    let b = node("node-b", now);
    let for_b = ca.issue(&b.plan);
    assert_eq!(
        accept(&for_b, &a.key, &a.name, now).unwrap_err(),
        Error::WrongKey
    );
    // Our key, but the subject of another node.
    let mut other_subject = a.plan.clone();
    other_subject.common_name = "system:node:node-b".to_owned();
    assert_eq!(
        accept(&ca.issue(&other_subject), &a.key, &a.name, now).unwrap_err(),
        Error::WrongSubject
    );
    let mut masters = a.plan.clone();
    masters.organizations.push("system:masters".to_owned());
    assert_eq!(
        accept(&ca.issue(&masters), &a.key, &a.name, now).unwrap_err(),
        Error::WrongSubject
    );
    // A server certificate.
    let mut server = a.plan.clone();
    server.extended_key_usages = vec![KeyUsage::ServerAuth];
    assert_eq!(
        accept(&ca.issue(&server), &a.key, &a.name, now).unwrap_err(),
        Error::WrongUsages
    );
    // Expired, not yet valid.
    let day = Duration::from_secs(86400);
    assert_eq!(
        accept(&good, &a.key, &a.name, a.plan.not_after + day).unwrap_err(),
        Error::Expired
    );
    assert_eq!(
        accept(&good, &a.key, &a.name, a.plan.not_before - day).unwrap_err(),
        Error::NotYetValid
    );
    // Multi-certificate: the first block is the node's; another node's first is refused,
    // ours followed by junk certificates up to the limit is accepted, past it refused.
    assert_eq!(
        accept(&format!("{for_b}{good}"), &a.key, &a.name, now).unwrap_err(),
        Error::WrongKey
    );
    accept(&format!("{good}{for_b}{ca_pem}"), &a.key, &a.name, now).unwrap();
    assert!(matches!(
        accept(&good.repeat(5), &a.key, &a.name, now).unwrap_err(),
        Error::Pem { .. }
    ));
    // Oversized, empty, junk, other block types.
    let huge = "A".repeat(tls_bootstrap::MAX_CERTIFICATE_PEM_BYTES + 1);
    assert!(matches!(
        accept(&huge, &a.key, &a.name, now).unwrap_err(),
        Error::TooLarge { .. }
    ));
    // Text around the blocks is explanatory text, as the API documents `status.certificate`.
    accept(&format!("{good}trailing text"), &a.key, &a.name, now).unwrap();
    for bad in [
        String::new(),
        good.replace("CERTIFICATE", "PRIVATE KEY"),
        good.replace("-----END CERTIFICATE-----", ""),
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".to_owned(),
    ] {
        assert!(accept(&bad, &a.key, &a.name, now).is_err(), "{bad}");
    }
    // A CA bundle that is not one.
    assert!(accept_certificate(good.as_bytes(), b"", &a.key, &a.name, now).is_err());
    assert!(accept_certificate(good.as_bytes(), good.as_bytes(), &a.key, &a.name, now).is_err());
}

#[test]
fn a_ca_that_expires_first_is_honoured() {
    let now = SystemTime::now();
    let hour = Duration::from_secs(3600);
    let ca = Ca::with_validity("short CA", Some((now - hour, now + 2 * hour)));
    let name: NodeName = "n".parse().unwrap();
    let key = NodeKey::generate().unwrap();
    let req = CertificateRequest::for_node(&name, &key).unwrap();
    let mut csr = CertificateSigningRequest::for_node(&req, None).unwrap();
    csr.status
        .conditions
        .push(Condition::new("Approved", "AutoApproved", "ok"));
    // The signer caps the certificate at the CA's notAfter.
    let ca_not_after = now + 2 * hour;
    let Signing::Sign(plan) = sign(&csr, &SignerConfig::new(ca_not_after), now) else {
        panic!()
    };
    assert_eq!(plan.not_after, ca_not_after);
    let cert = ca.issue(&plan);
    let ok = accept_certificate(cert.as_bytes(), ca.pem().as_bytes(), &key, &name, now).unwrap();
    let secs = |t: SystemTime| t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    assert_eq!(secs(ok.not_after()), secs(ca_not_after));
    // After the CA expires, the chain no longer verifies even though the leaf says otherwise.
    let mut long = plan.clone();
    long.not_after = now + 10 * hour;
    let cert = ca.issue(&long);
    assert_eq!(
        accept_certificate(
            cert.as_bytes(),
            ca.pem().as_bytes(),
            &key,
            &name,
            now + 3 * hour
        )
        .unwrap_err(),
        Error::Untrusted
    );
}

#[test]
fn kubelet_kubeconfig_is_what_kubectl_reads() {
    let now = SystemTime::now();
    let ca = Ca::new("cluster CA");
    let n = node("worker-9", now);
    let cert = accept_certificate(
        ca.issue(&n.plan).as_bytes(),
        ca.pem().as_bytes(),
        &n.key,
        &n.name,
        now,
    )
    .unwrap();
    assert!(format!("{cert:?}").contains("worker-9"));

    let dir = std::env::temp_dir().join(format!("tls-bootstrap-kc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pem_path = dir.join("kubelet-client-current.pem");
    std::fs::write(&pem_path, cert.to_kubelet_pem(&n.key).unwrap().as_bytes()).unwrap();
    let kubeconfig = tls_bootstrap::kubelet_kubeconfig(
        "https://10.0.0.1:6443",
        &ca.pem(),
        pem_path.to_str().unwrap(),
    )
    .unwrap();
    let kc_path = dir.join("kubelet.conf");
    std::fs::write(&kc_path, &kubeconfig).unwrap();
    let out = std::process::Command::new("kubectl")
        .args([
            "config",
            "view",
            "--kubeconfig",
            kc_path.to_str().unwrap(),
            "--raw",
            "-o",
            "jsonpath={.users[0].user.client-certificate} {.users[0].user.client-key} {.clusters[0].cluster.server} {.current-context} {.contexts[0].context.namespace}",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = pem_path.to_str().unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("{p} {p} https://10.0.0.1:6443 default-context default")
    );

    let inline =
        tls_bootstrap::kubelet_kubeconfig_inline("https://10.0.0.1:6443", &ca.pem(), &cert, &n.key)
            .unwrap();
    assert!(inline.contains("client-key-data: "));
    assert!(tls_bootstrap::kubelet_kubeconfig("http://x", &ca.pem(), p).is_err());
    assert!(tls_bootstrap::kubelet_kubeconfig("https://x", &ca.pem(), "a\nb").is_err());
}
