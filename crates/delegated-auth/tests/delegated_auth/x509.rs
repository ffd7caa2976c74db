//! x509 client-certificate users, as Kubernetes' x509 authenticator
//! (pkg/authentication/request/x509, `CommonNameUserConversion`) decides them: the cases of
//! its table that apply (a chain from the CA, another CA, expired, not yet valid, server-only
//! usage, no client certificate, no common name).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::type_complexity,
    reason = "tests"
)]

use std::time::Duration;

use crate::support::{Ca, now};
use delegated_auth::{CREDENTIAL_ID_EXTRA, ClientCa, Error};
use rcgen::ExtendedKeyUsagePurpose;
use sha2::{Digest as _, Sha256};

#[test]
fn user_is_cn_groups_are_o() {
    let ca = Ca::new("client-ca");
    let client = ClientCa::from_pem(ca.pem().as_bytes()).unwrap();
    // rcgen keeps one value per attribute type: one organization here (several are read by
    // tls-bootstrap's `Subject`, tested there).
    let cert = ca.issue("alice", &["system:masters"]);
    let user = client.authenticate(&[&cert], now()).unwrap().unwrap();
    assert_eq!(user.name, "alice");
    assert_eq!(user.groups, ["system:masters"]);
    assert_eq!(user.uid, None);
    let fp: String = Sha256::digest(&cert)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        user.extra[CREDENTIAL_ID_EXTRA],
        [format!("X509SHA256={fp}")]
    );
}

#[test]
fn kubernetes_x509_table() {
    let ca = Ca::new("client-ca");
    let other = Ca::new("other-ca");
    let client = ClientCa::from_pem(ca.pem().as_bytes()).unwrap();
    let hour = Duration::from_secs(3600);
    let cases: Vec<(&str, Vec<Vec<u8>>, Result<Option<&str>, ()>)> = vec![
        ("no client certificate", vec![], Ok(None)),
        (
            "a client certificate",
            vec![ca.issue("bob", &[])],
            Ok(Some("bob")),
        ),
        ("no common name", vec![ca.issue("", &["o"])], Ok(None)),
        ("from another CA", vec![other.issue("bob", &[])], Err(())),
        (
            "expired",
            vec![ca.issue_with(
                "bob",
                &[],
                vec![ExtendedKeyUsagePurpose::ClientAuth],
                (now() - 2 * hour, now() - hour),
            )],
            Err(()),
        ),
        (
            "not yet valid",
            vec![ca.issue_with(
                "bob",
                &[],
                vec![ExtendedKeyUsagePurpose::ClientAuth],
                (now() + hour, now() + 2 * hour),
            )],
            Err(()),
        ),
        (
            "for server authentication only",
            vec![ca.issue_with(
                "bob",
                &[],
                vec![ExtendedKeyUsagePurpose::ServerAuth],
                (now() - hour, now() + hour),
            )],
            Err(()),
        ),
        (
            "any extended usage (none named)",
            vec![ca.issue_with("bob", &[], vec![], (now() - hour, now() + hour))],
            Ok(Some("bob")),
        ),
        (
            "the CA itself as a client",
            vec![ca.cert.der().to_vec()],
            Err(()),
        ),
        ("not a certificate", vec![b"garbage".to_vec()], Err(())),
        ("too long a chain", vec![ca.issue("bob", &[]); 5], Err(())),
    ];
    for (name, chain, want) in cases {
        let got = client.authenticate(&chain, now());
        match (got, want) {
            (Ok(user), Ok(want)) => assert_eq!(user.map(|u| u.name).as_deref(), want, "{name}"),
            (Err(e), Err(())) => assert!(matches!(e, Error::Certificate(_)), "{name}: {e}"),
            (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn ca_bundles_are_bounded_and_checked() {
    assert!(ClientCa::from_pem(b"").is_err());
    assert!(ClientCa::from_pem(b"not pem").is_err());
    let huge = vec![b'a'; 2 * 1024 * 1024];
    assert!(ClientCa::from_pem(&huge).is_err());
    let a = Ca::new("a");
    let b = Ca::new("b");
    let both = ClientCa::from_pem(format!("{}{}", a.pem(), b.pem()).as_bytes()).unwrap();
    assert_eq!(both.len(), 2);
    assert!(
        both.authenticate(&[b.issue("x", &[])], now())
            .unwrap()
            .is_some()
    );
}
