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
        include_str!(concat!("data/", $f))
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
