//! The rows of the hostile-input table that apply to this crate's inputs: the cluster CA bundle
//! (row 44), the node key (row 55), the object JSON (row 60), each with a typed error that never
//! echoes the input.

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
    CertificateRequest, CertificateSigningRequest, Condition, Error, NodeKey, NodeName,
    SignerConfig, Signing, accept_certificate, sign,
};

fn issued(ca: &Ca, now: SystemTime) -> (String, NodeKey, NodeName) {
    let name: NodeName = "n".parse().unwrap();
    let key = NodeKey::generate().unwrap();
    let req = CertificateRequest::for_node(&name, &key).unwrap();
    let mut csr = CertificateSigningRequest::for_node(&req, None).unwrap();
    csr.status
        .conditions
        .push(Condition::new("Approved", "AutoApproved", "ok"));
    let Signing::Sign(plan) = sign(
        &csr,
        &SignerConfig::new(now + Duration::from_secs(86400 * 3650)),
        now,
    ) else {
        panic!()
    };
    (ca.issue(&plan), key, name)
}

/// Row 44: CA data: garbage PEM, cert + trailing junk, empty, truncated DER, a private key
/// block, 10,000 certificates.
#[test]
fn row_44_ca_bundles() {
    let now = SystemTime::now();
    let ca = Ca::new("cluster CA");
    let (cert, key, name) = issued(&ca, now);
    let ca_pem = ca.pem();
    accept_certificate(cert.as_bytes(), ca_pem.as_bytes(), &key, &name, now).unwrap();
    // Several CAs, ours among them: accepted.
    let other = Ca::new("another CA").pem();
    let two = format!("{other}{ca_pem}");
    accept_certificate(cert.as_bytes(), two.as_bytes(), &key, &name, now).unwrap();

    let body: String = ca_pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let truncated = format!(
        "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
        &body[..body.len() / 2 / 4 * 4]
    );
    let key_block = key.to_pem().unwrap();
    let thousands = ca_pem.repeat(10_000);
    let cases: Vec<(&str, String)> = vec![
        ("garbage", "not a PEM at all".to_owned()),
        ("trailing junk", format!("{ca_pem}junk")),
        ("empty", String::new()),
        ("truncated DER", truncated),
        ("a private key block", key_block.to_string()),
        ("10,000 certificates", thousands),
    ];
    for (what, bundle) in cases {
        let err = accept_certificate(cert.as_bytes(), bundle.as_bytes(), &key, &name, now)
            .expect_err(what);
        assert!(
            matches!(
                err,
                Error::Pem { .. }
                    | Error::TooLarge { .. }
                    | Error::InvalidCertificate { .. }
                    | Error::Untrusted
            ),
            "{what}: {err:?}"
        );
        assert!(!err.to_string().contains("BEGIN"), "{what}: {err}");
    }
}

/// Row 55: keys not PEM, a key not matching the certificate, an encrypted key; key bytes are
/// never echoed.
#[test]
fn row_55_node_keys() {
    let now = SystemTime::now();
    let ca = Ca::new("cluster CA");
    let (cert, key, name) = issued(&ca, now);
    let pem = key.to_pem().unwrap();
    let body = pem.lines().nth(1).unwrap().to_owned();
    for (what, input) in [
        ("not PEM", body.clone()),
        (
            "encrypted",
            pem.replace("EC PRIVATE KEY", "ENCRYPTED PRIVATE KEY"),
        ),
        (
            "legacy encrypted",
            pem.replace(
                "-----BEGIN EC PRIVATE KEY-----\n",
                "-----BEGIN EC PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\n",
            ),
        ),
        ("truncated", pem.replace(&body, &body[..20])),
    ] {
        let err = NodeKey::from_pem(input.as_bytes()).expect_err(what);
        assert!(!err.to_string().contains(&body[..16]), "{what}: {err}");
        assert!(!format!("{err:?}").contains(&body[..16]), "{what}: {err:?}");
    }
    // A key that does not match the certificate.
    let other = NodeKey::generate().unwrap();
    assert_eq!(
        accept_certificate(cert.as_bytes(), ca.pem().as_bytes(), &other, &name, now).unwrap_err(),
        Error::WrongKey
    );
    // Neither the key nor its PEM appear in Debug output of what holds them.
    let accepted =
        accept_certificate(cert.as_bytes(), ca.pem().as_bytes(), &key, &name, now).unwrap();
    assert!(!format!("{key:?}{accepted:?}").contains(&body[..16]));
}

/// Row 60: non-UTF-8 bytes, a UTF-8 BOM, two JSON documents, trailing garbage.
#[test]
fn row_60_object_json() {
    let key = NodeKey::generate().unwrap();
    let req = CertificateRequest::for_node(&"n".parse().unwrap(), &key).unwrap();
    let json = CertificateSigningRequest::for_node(&req, None)
        .unwrap()
        .to_json()
        .unwrap();
    CertificateSigningRequest::from_json(&json).unwrap();
    let mut bom = b"\xef\xbb\xbf".to_vec();
    bom.extend_from_slice(&json);
    let mut two = json.clone();
    two.extend_from_slice(&json);
    let mut trailing = json.clone();
    trailing.extend_from_slice(b" x");
    let mut latin1 = json.clone();
    latin1.push(0xe9);
    for (what, input) in [
        ("BOM", bom),
        ("two documents", two),
        ("trailing garbage", trailing),
        ("non-UTF-8", latin1),
        ("an array", b"[1]".to_vec()),
        ("null", b"null".to_vec()),
    ] {
        assert!(
            matches!(
                CertificateSigningRequest::from_json(&input),
                Err(Error::Json { .. })
            ),
            "{what}"
        );
    }
}
