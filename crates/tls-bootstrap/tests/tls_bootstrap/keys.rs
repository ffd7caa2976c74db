//! Node keys of every supported type, made by openssl: read in each PEM form, the curve and
//! the stored public key checked, requests signed with them verified by `openssl req
//! -verify`, the kubelet's usages and names for RSA, and the hostile-input rows that apply.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::disallowed_methods,
    reason = "tests"
)]

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::support::{Ca, run};
use tls_bootstrap::{
    CertificateRequest, CertificateSigningRequest, Condition, Error, KUBELET_CLIENT_USAGES,
    KUBELET_CLIENT_USAGES_RSA, KeyType, KeyUsage, NodeKey, NodeName, SignerConfig, Signing,
    accept_certificate, sign, validate_kubelet_client,
};

/// A fresh directory for one test's files.
fn dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tls-bootstrap-keys-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn openssl(args: &[&str]) -> String {
    let (ok, out, err) = run("openssl", args);
    assert!(ok, "openssl {args:?}: {err}");
    out
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

/// An EC key on `curve` by openssl: (SEC 1 with its public key, SEC 1 without it, PKCS#8).
fn ec_keys(d: &Path, curve: &str) -> (PathBuf, PathBuf, PathBuf) {
    let sec1 = d.join(format!("{curve}.key"));
    let bare = d.join(format!("{curve}-no-public.key"));
    let pkcs8 = d.join(format!("{curve}-pkcs8.key"));
    openssl(&[
        "ecparam",
        "-name",
        curve,
        "-genkey",
        "-noout",
        "-out",
        path(&sec1),
    ]);
    openssl(&["ec", "-in", path(&sec1), "-no_public", "-out", path(&bare)]);
    openssl(&[
        "pkcs8",
        "-topk8",
        "-nocrypt",
        "-in",
        path(&sec1),
        "-out",
        path(&pkcs8),
    ]);
    (sec1, bare, pkcs8)
}

/// An RSA key of `bits` by openssl: (PKCS#1 `RSA PRIVATE KEY`, PKCS#8 `PRIVATE KEY`).
fn rsa_keys(d: &Path, bits: u32) -> (PathBuf, PathBuf) {
    let pkcs8 = d.join(format!("rsa{bits}-pkcs8.key"));
    let pkcs1 = d.join(format!("rsa{bits}.key"));
    openssl(&[
        "genpkey",
        "-algorithm",
        "RSA",
        "-pkeyopt",
        &format!("rsa_keygen_bits:{bits}"),
        "-out",
        path(&pkcs8),
    ]);
    openssl(&[
        "rsa",
        "-in",
        path(&pkcs8),
        "-traditional",
        "-out",
        path(&pkcs1),
    ]);
    (pkcs1, pkcs8)
}

/// The node's request for `key`, written as PEM and verified by `openssl req -verify`; the
/// public key openssl reads from it is the key's (`openssl pkey -pubout`); returns openssl's
/// text dump of the request.
fn verified_request(d: &Path, key: &NodeKey, key_file: &Path) -> (CertificateRequest, String) {
    let node: NodeName = "worker-1".parse().unwrap();
    let request = CertificateRequest::for_node(&node, key).unwrap();
    let req_file = d.join("node.csr");
    std::fs::write(&req_file, request.to_pem()).unwrap();
    let (ok, _, err) = run(
        "openssl",
        &["req", "-in", path(&req_file), "-noout", "-verify"],
    );
    assert!(ok && err.contains("verify OK"), "{err}");
    let from_request = openssl(&["req", "-in", path(&req_file), "-noout", "-pubkey"]);
    let from_key = openssl(&["pkey", "-in", path(key_file), "-pubout"]);
    assert_eq!(from_request, from_key);
    let text = openssl(&["req", "-in", path(&req_file), "-noout", "-text"]);
    // And we read back what we wrote (signature checked).
    assert_eq!(
        CertificateRequest::from_pem(request.to_pem().as_bytes()).unwrap(),
        request
    );
    (request, text)
}

/// Issue 1: a P-224 `EC PRIVATE KEY` without its optional public key (RFC 5915; `openssl ec
/// -no_public`) was read as a P-256 key with the same scalar bytes. Every form naming P-224
/// is refused, naming the curve.
#[test]
fn p224_keys_are_refused_naming_the_curve() {
    let d = dir("p224");
    let (sec1, bare, pkcs8) = ec_keys(&d, "secp224r1");
    for file in [&bare, &sec1, &pkcs8] {
        let err = NodeKey::from_pem(&read(file)).expect_err(path(file));
        let Error::InvalidKey { reason } = &err else {
            panic!("{}: {err:?}", path(file));
        };
        assert!(reason.contains("P-224"), "{}: {reason}", path(file));
    }
}

#[test]
fn other_curves_are_refused_naming_them() {
    let d = dir("curves");
    for (curve, name) in [
        ("secp521r1", "P-521"),
        ("secp256k1", "secp256k1"),
        ("prime192v1", "P-192"),
        ("brainpoolP256r1", "brainpoolP256r1"),
    ] {
        let (sec1, bare, pkcs8) = ec_keys(&d, curve);
        for file in [&sec1, &bare, &pkcs8] {
            match NodeKey::from_pem(&read(file)) {
                Err(Error::InvalidKey { reason }) => assert!(reason.contains(name), "{reason}"),
                other => panic!("{curve}: {other:?}"),
            }
        }
    }
}

/// P-256 and P-384 keys in every form; the stored public key is checked.
#[test]
fn p256_and_p384_keys_in_every_form() {
    let d = dir("ec");
    for (curve, key_type, sig_alg) in [
        ("prime256v1", KeyType::EcdsaP256, "ecdsa-with-SHA256"),
        ("secp384r1", KeyType::EcdsaP384, "ecdsa-with-SHA384"),
    ] {
        let (sec1, bare, pkcs8) = ec_keys(&d, curve);
        let a = NodeKey::from_pem(&read(&sec1)).unwrap();
        let b = NodeKey::from_pem(&read(&bare)).unwrap();
        let c = NodeKey::from_pem(&read(&pkcs8)).unwrap();
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert_eq!(a.key_type(), key_type);
        assert_eq!(a.public_key_der(), c.public_key_der());
        // Our SEC 1 encoding is openssl's, byte for byte (curve and public key included).
        assert_eq!(
            a.to_pem().unwrap().as_str(),
            std::fs::read_to_string(&sec1).unwrap()
        );
        let (request, text) = verified_request(&d, &a, &sec1);
        assert!(
            text.contains(&format!("Signature Algorithm: {sig_alg}")),
            "{text}"
        );
        assert_eq!(request.key_type(), key_type);
        let csr = CertificateSigningRequest::for_node(&request, None).unwrap();
        assert_eq!(csr.spec.usages, KUBELET_CLIENT_USAGES);
    }
    let debug = format!(
        "{:?}",
        NodeKey::from_pem(&read(&d.join("secp384r1.key"))).unwrap()
    );
    assert_eq!(debug, "NodeKey(P-384, <redacted>)");
}

/// A SEC 1 key whose stored public key is another key's is refused (not silently replaced).
#[test]
fn a_public_key_that_is_not_the_private_keys_is_refused() {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let der = |k: &NodeKey| {
        let pem = k.to_pem().unwrap();
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        b64.decode(body).unwrap()
    };
    let a = der(&NodeKey::generate().unwrap());
    let b = der(&NodeKey::generate().unwrap());
    // SEQUENCE { INTEGER 1, OCTET STRING (32) scalar, ... }: the scalar is bytes 7..39.
    assert_eq!(&a[..7], [0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20]);
    let mut mixed = a.clone();
    mixed[7..39].copy_from_slice(&b[7..39]);
    let pem = format!(
        "-----BEGIN EC PRIVATE KEY-----\n{}\n-----END EC PRIVATE KEY-----\n",
        b64.encode(&mixed)
    );
    match NodeKey::from_pem(pem.as_bytes()) {
        Err(Error::InvalidKey { reason }) => assert!(reason.contains("public key"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

/// Issue 4: RSA-2048 in PKCS#1 (as kubeadm writes it) and PKCS#8; the request is signed
/// sha256WithRSAEncryption and verified by openssl; the object carries the kubelet's RSA
/// usages (`key encipherment` last) and its name hashes them in that order (checked against
/// openssl's SHA-512/256); the approver's rules accept it; the signer plans key encipherment;
/// the issued certificate is accepted.
#[cfg(any(feature = "ring", feature = "aws-lc-rs"))]
#[test]
fn rsa_keys_file_the_kubelets_request() {
    use base64::Engine as _;
    let d = dir("rsa");
    let (pkcs1, pkcs8) = rsa_keys(&d, 2048);
    assert!(
        std::fs::read_to_string(&pkcs1)
            .unwrap()
            .starts_with("-----BEGIN RSA PRIVATE KEY-----")
    );
    let key = NodeKey::from_pem(&read(&pkcs1)).unwrap();
    assert_eq!(key, NodeKey::from_pem(&read(&pkcs8)).unwrap());
    assert_eq!(key.key_type(), KeyType::Rsa);
    assert_eq!(format!("{key:?}"), "NodeKey(RSA-2048, <redacted>)");
    // Written back as kubeadm writes it.
    assert_eq!(
        key.to_pem().unwrap().as_str(),
        std::fs::read_to_string(&pkcs1).unwrap()
    );

    let (request, text) = verified_request(&d, &key, &pkcs1);
    assert!(
        text.contains("Signature Algorithm: sha256WithRSAEncryption"),
        "{text}"
    );
    assert_eq!(request.key_type(), KeyType::Rsa);
    let csr = CertificateSigningRequest::for_node(&request, None).unwrap();
    assert_eq!(
        csr.spec.usages,
        [
            KeyUsage::DigitalSignature,
            KeyUsage::ClientAuth,
            KeyUsage::KeyEncipherment
        ]
    );
    assert_eq!(csr.spec.usages, KUBELET_CLIENT_USAGES_RSA);
    validate_kubelet_client(&request, &csr.spec.usages).unwrap();

    // The kubelet's name: SHA-512/256 over base64url(SPKI)|CN|O|usages in its order.
    let b64 = |d: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(d);
    let mut stream = String::new();
    for part in [
        key.public_key_der(),
        b"system:node:worker-1",
        b"system:nodes",
        b"digital signature",
        b"client auth",
        b"key encipherment",
    ] {
        stream.push_str(&b64(part));
        stream.push('|');
    }
    let stream_file = d.join("stream");
    std::fs::write(&stream_file, stream).unwrap();
    let out = std::process::Command::new("openssl")
        .args(["dgst", "-sha512-256", "-binary", path(&stream_file)])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        csr.name().unwrap(),
        format!("node-csr-{}", b64(&out.stdout))
    );

    // Signed and accepted.
    let now = SystemTime::now();
    let ca = Ca::new("cluster CA");
    let mut approved = csr.clone();
    approved
        .status
        .conditions
        .push(Condition::new("Approved", "AutoApproved", "ok"));
    let Signing::Sign(plan) = sign(
        &approved,
        &SignerConfig::new(now + Duration::from_secs(86400 * 3650)),
        now,
    ) else {
        panic!("not signed")
    };
    assert_eq!(plan.key_type, KeyType::Rsa);
    assert_eq!(
        plan.key_usages,
        [KeyUsage::DigitalSignature, KeyUsage::KeyEncipherment]
    );
    let issued = ca.issue(&plan);
    let node: NodeName = "worker-1".parse().unwrap();
    let cert =
        accept_certificate(issued.as_bytes(), ca.pem().as_bytes(), &key, &node, now).unwrap();
    let kubelet_pem = cert.to_kubelet_pem(&key).unwrap();
    assert!(kubelet_pem.contains("-----BEGIN RSA PRIVATE KEY-----"));
}

/// RSA keys outside 2048–4096 bits are refused before any signing.
#[test]
fn small_rsa_keys_are_refused() {
    let d = dir("rsa-small");
    let (pkcs1, pkcs8) = rsa_keys(&d, 1024);
    for file in [&pkcs1, &pkcs8] {
        match NodeKey::from_pem(&read(file)) {
            Err(Error::InvalidKey { reason }) => assert!(reason.contains("2048"), "{reason}"),
            other => panic!("{other:?}"),
        }
    }
}

/// Without a provider no RSA private-key operation is done: the key is refused as such.
#[cfg(not(any(feature = "ring", feature = "aws-lc-rs")))]
#[test]
fn rsa_keys_need_a_provider() {
    let d = dir("rsa-no-provider");
    let (pkcs1, _) = rsa_keys(&d, 2048);
    assert_eq!(
        NodeKey::from_pem(&read(&pkcs1)).unwrap_err(),
        Error::NoCryptoBackend
    );
}

/// Hostile-input row 55 for the new key forms: not PEM, encrypted (PKCS#8 and legacy PEM
/// encryption), truncated, a block with trailing junk in its DER, an Ed25519 key; the errors
/// are typed and never echo the key.
#[test]
fn row_55_rsa_and_p384_keys() {
    let d = dir("row55");
    let (p384, _, _) = ec_keys(&d, "secp384r1");
    let (rsa, _) = rsa_keys(&d, 2048);
    let encrypted = d.join("enc.key");
    openssl(&[
        "pkcs8",
        "-topk8",
        "-in",
        path(&rsa),
        "-passout",
        "pass:secret",
        "-out",
        path(&encrypted),
    ]);
    let legacy = d.join("legacy.key");
    openssl(&[
        "rsa",
        "-in",
        path(&rsa),
        "-traditional",
        "-aes128",
        "-passout",
        "pass:secret",
        "-out",
        path(&legacy),
    ]);
    let ed = d.join("ed.key");
    openssl(&["genpkey", "-algorithm", "ed25519", "-out", path(&ed)]);
    for file in [&p384, &rsa] {
        let pem = std::fs::read_to_string(file).unwrap();
        let body = pem.lines().nth(1).unwrap().to_owned();
        let label = pem.lines().next().unwrap().to_owned();
        let mut lines: Vec<&str> = pem.lines().collect();
        let keep = lines.len() / 2;
        lines.drain(keep..lines.len() - 1);
        let truncated = lines.join("\n") + "\n";
        let cases = [
            ("not PEM", body.clone()),
            ("truncated", truncated),
            (
                "wrong label",
                pem.replace(&label[11..label.len() - 5], "PRIVATE KEY"),
            ),
        ];
        for (what, input) in cases {
            let err = NodeKey::from_pem(input.as_bytes()).expect_err(what);
            assert!(
                matches!(err, Error::InvalidKey { .. } | Error::Pem { .. }),
                "{what}: {err:?}"
            );
            assert!(
                !format!("{err}{err:?}").contains(&body[..16]),
                "{what}: {err}"
            );
        }
    }
    for file in [&encrypted, &legacy, &ed] {
        let err = NodeKey::from_pem(&read(file)).expect_err(path(file));
        assert!(
            matches!(err, Error::InvalidKey { .. } | Error::Pem { .. }),
            "{err:?}"
        );
    }
    match NodeKey::from_pem(&read(&ed)) {
        Err(Error::InvalidKey { reason }) => assert!(reason.contains("Ed25519"), "{reason}"),
        other => panic!("{other:?}"),
    }
    // An RSA key in Debug shows its size only.
    #[cfg(any(feature = "ring", feature = "aws-lc-rs"))]
    {
        let key = NodeKey::from_pem(&read(&rsa)).unwrap();
        let pem = std::fs::read_to_string(&rsa).unwrap();
        let body = pem.lines().nth(1).unwrap();
        assert!(!format!("{key:?}").contains(&body[..16]));
    }
}

/// DER of one TLV.
fn tlv(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = body.len();
    if len < 0x80 {
        out.push(len as u8);
    } else if len < 0x100 {
        out.extend([0x81, len as u8]);
    } else {
        out.extend([0x82, (len >> 8) as u8, len as u8]);
    }
    out.extend_from_slice(body);
    out
}

/// Limit L5 (RSA modulus at most 8192 bits; here 4096, what kubeadm writes and ring signs
/// with): a PKCS#1 key with a 4104-bit modulus is refused on its size, before any provider
/// sees it, in both PEM forms.
#[test]
fn rsa_moduli_over_4096_bits_are_refused_on_size() {
    use base64::Engine as _;
    let int = |bytes: &[u8]| tlv(0x02, bytes);
    let mut modulus = vec![0x00, 0xc5];
    modulus.extend(std::iter::repeat_n(0x5a, 512));
    let mut body = int(&[0]);
    body.extend(int(&modulus));
    body.extend(int(&[0x01, 0x00, 0x01]));
    for _ in 0..6 {
        body.extend(int(&[0x33; 64]));
    }
    let pkcs1 = tlv(0x30, &body);
    // PKCS#8: version 0, rsaEncryption with NULL, the PKCS#1 key in an OCTET STRING.
    let mut info = int(&[0]);
    info.extend(tlv(
        0x30,
        &[
            0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00,
        ],
    ));
    info.extend(tlv(0x04, &pkcs1));
    let pkcs8 = tlv(0x30, &info);
    let b64 = base64::engine::general_purpose::STANDARD;
    for (label, der) in [("RSA PRIVATE KEY", &pkcs1), ("PRIVATE KEY", &pkcs8)] {
        let pem = format!(
            "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
            b64.encode(der)
        );
        match NodeKey::from_pem(pem.as_bytes()) {
            Err(Error::InvalidKey { reason }) => assert!(reason.contains("4096"), "{reason}"),
            other => panic!("{label}: {other:?}"),
        }
    }
}
