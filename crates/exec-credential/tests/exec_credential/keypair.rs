//! Client certificate and key must belong together, as Go's `tls.X509KeyPair` requires, for
//! every key type and encoding a plugin may print.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::time::{Duration, UNIX_EPOCH};

use exec_credential::{ApiVersion, ClientKey, Error, ExecCredential, ExecCredentialStatus};

macro_rules! data {
    ($f:literal) => {
        include_str!(concat!("../data/", $f))
    };
}

fn check(cert: &str, key: &str) -> Result<(), Error> {
    let status = ExecCredentialStatus::with_client_certificate(cert, ClientKey::new(key));
    ExecCredential::response(ApiVersion::V1, status)
        .into_credential(
            ApiVersion::V1,
            UNIX_EPOCH + Duration::from_secs(1_700_000_000),
        )
        .map(|_| ())
}

#[test]
fn matching_pairs_of_every_supported_kind() {
    for (name, cert, key) in [
        ("p256 pkcs8", data!("client1.crt"), data!("client1.key")),
        ("p256 sec1", data!("client1.crt"), data!("client1.sec1.key")),
        ("p384 pkcs8", data!("p384.crt"), data!("p384.key")),
        ("p384 sec1", data!("p384.crt"), data!("p384.sec1.key")),
        ("rsa pkcs8", data!("rsa.crt"), data!("rsa.key")),
        ("rsa pkcs1", data!("rsa.crt"), data!("rsa.pkcs1.key")),
        ("ed25519", data!("ed25519.crt"), data!("ed25519.key")),
    ] {
        check(cert, key).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    // A chain: the leaf is the first certificate.
    let chain = format!("{}{}", data!("client1.crt"), data!("rsa.crt"));
    check(&chain, data!("client1.key")).unwrap();
}

#[test]
fn row55_key_not_matching_the_certificate() {
    for (name, cert, key, want) in [
        (
            "other p256 key",
            data!("client1.crt"),
            data!("client2.key"),
            "private key does not match public key",
        ),
        (
            "other p256 sec1",
            data!("client2.crt"),
            data!("client1.sec1.key"),
            "private key does not match public key",
        ),
        (
            "rsa key, ec cert",
            data!("client1.crt"),
            data!("rsa.key"),
            "private key type does not match public key type",
        ),
        (
            "ec key, rsa cert",
            data!("rsa.crt"),
            data!("client1.key"),
            "private key type does not match public key type",
        ),
        (
            "ed25519 key, p384 cert",
            data!("p384.crt"),
            data!("ed25519.key"),
            "private key type does not match public key type",
        ),
        (
            "leaf is not the key's",
            &format!("{}{}", data!("rsa.crt"), data!("client1.crt")),
            data!("client1.key"),
            "private key type does not match public key type",
        ),
    ] {
        let e = check(cert, key).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("failed parsing client key/certificate: {want}"),
            "{name}"
        );
        for line in key.lines().filter(|l| !l.starts_with("-----")) {
            assert!(!e.to_string().contains(line) && !format!("{e:?}").contains(line));
        }
    }
}

/// Go's `tls.X509KeyPair` takes the first PEM block whose label ends in `PRIVATE KEY` and
/// parses it as PKCS#1, PKCS#8 or SEC1 by content, so a key is accepted under any such label
/// (Go's own test helpers write SEC1 DER under `PRIVATE KEY`). Keys made with `openssl`
/// (`data/openssl/generate.sh`).
#[test]
fn keys_parse_by_content_under_any_private_key_label() {
    let ec_crt = data!("openssl/ec.crt");
    let sec1 = data!("openssl/ec.sec1.key");
    let pkcs8 = data!("openssl/ec.pkcs8.key");
    let rsa_crt = data!("openssl/rsa.crt");
    let pkcs1 = data!("openssl/rsa.pkcs1.key");
    let relabel = |pem: &str, from: &str, to: &str| pem.replace(from, to);
    let cases: Vec<(&str, &str, String)> = vec![
        ("openssl SEC1 as written", ec_crt, sec1.to_owned()),
        (
            "openssl SEC1 relabelled PRIVATE KEY (checked-in)",
            ec_crt,
            data!("openssl/ec.sec1-labelled-pkcs8.key").to_owned(),
        ),
        ("openssl PKCS#8 as written", ec_crt, pkcs8.to_owned()),
        (
            "PKCS#8 relabelled EC PRIVATE KEY",
            ec_crt,
            relabel(pkcs8, "PRIVATE KEY", "EC PRIVATE KEY"),
        ),
        (
            "PKCS#8 relabelled RSA PRIVATE KEY",
            ec_crt,
            relabel(pkcs8, "PRIVATE KEY", "RSA PRIVATE KEY"),
        ),
        ("openssl PKCS#1 as written", rsa_crt, pkcs1.to_owned()),
        (
            "PKCS#1 relabelled PRIVATE KEY",
            rsa_crt,
            relabel(pkcs1, "RSA PRIVATE KEY", "PRIVATE KEY"),
        ),
        (
            "PKCS#1 relabelled EC PRIVATE KEY",
            rsa_crt,
            relabel(pkcs1, "RSA PRIVATE KEY", "EC PRIVATE KEY"),
        ),
        (
            "openssl ecparam -genkey: EC PARAMETERS before the key",
            data!("openssl/ec-params.crt"),
            data!("openssl/ec-params.key").to_owned(),
        ),
        (
            "EC PARAMETERS before a key relabelled PRIVATE KEY",
            data!("openssl/ec-params.crt"),
            relabel(
                data!("openssl/ec-params.key"),
                "EC PRIVATE KEY",
                "PRIVATE KEY",
            ),
        ),
        (
            "P-384 SEC1 relabelled PRIVATE KEY",
            data!("p384.crt"),
            relabel(data!("p384.sec1.key"), "EC PRIVATE KEY", "PRIVATE KEY"),
        ),
    ];
    for (name, cert, key) in &cases {
        check(cert, key).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    // Content decides, and still has to match the certificate.
    let e = check(rsa_crt, &relabel(sec1, "EC PRIVATE KEY", "PRIVATE KEY")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "failed parsing client key/certificate: private key type does not match public key type"
    );
    let e = check(
        ec_crt,
        &relabel(data!("client1.sec1.key"), "EC PRIVATE KEY", "PRIVATE KEY"),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "failed parsing client key/certificate: private key does not match public key"
    );
    // A P-256 SEC1 key names its curve: it is not read as P-384 for a P-384 certificate.
    let e = check(data!("p384.crt"), sec1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "failed parsing client key/certificate: private key type does not match public key type"
    );
    // Not a key at all under a PRIVATE KEY label.
    let garbage = "-----BEGIN PRIVATE KEY-----\nMAMCAQA=\n-----END PRIVATE KEY-----\n";
    let e = check(ec_crt, garbage).unwrap_err();
    assert_eq!(
        e.to_string(),
        "failed parsing client key/certificate: failed to parse private key"
    );
}
