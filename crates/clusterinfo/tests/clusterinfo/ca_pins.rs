//! CA public-key pins against Go's `crypto/x509` vectors and kubeadm's `pubkeypin` rules.

// Test code: helpers outside `#[test]` functions may panic on broken fixtures.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use crate::fixtures::*;
use clusterinfo::{CaBundle, Error, Pin, PinSet};

#[test]
fn every_pubkeypin_vector_agrees() {
    let vectors = pin_vectors();
    assert!(vectors.len() >= 2);
    for (pem, expected) in vectors {
        let pin = Pin::from_certificate_pem(pem.as_bytes()).unwrap();
        assert_eq!(pin.to_string(), expected);
        assert_eq!(expected.parse::<Pin>().unwrap(), pin);
    }
}

#[test]
fn display_parse_round_trip_and_case_insensitivity() {
    let (pem, expected) = pin_vectors().remove(0);
    let pin = Pin::from_certificate_pem(pem.as_bytes()).unwrap();
    let upper = format!(
        "SHA256:{}",
        expected.trim_start_matches("sha256:").to_uppercase()
    );
    assert_eq!(
        upper.parse::<Pin>().unwrap(),
        pin,
        "kubeadm accepts SHA256: and uppercase hex"
    );
    assert_eq!(
        upper.parse::<Pin>().unwrap().to_string(),
        expected,
        "stored lower-cased"
    );
}

fn hex64() -> String {
    "ab".repeat(32)
}

#[test]
fn pin_syntax_errors_match_kubeadm() {
    let cases: Vec<(String, &str)> = vec![
        (
            format!("sha256:{}", &hex64()[..63]),
            "invalid hash \"sha256:",
        ),
        (
            format!("sha256:{}0", hex64()),
            "could not decode SHA-256 from hex: encoding/hex: odd length hex string",
        ),
        (
            format!("sha256:{}", "zz".repeat(32)),
            "encoding/hex: invalid byte: U+007A 'z'",
        ),
        (
            format!("sha1:{}", hex64()),
            "unknown hash format \"sha1\". Known format(s) are: sha256",
        ),
        (
            format!("sha256:{}:y", hex64()),
            "invalid hash, expected \"format:hex-value\". Known format(s) are: sha256",
        ),
        (hex64(), "invalid hash, expected \"format:hex-value\""),
        (
            format!(" sha256:{}", hex64()),
            "unknown hash format \" sha256\"",
        ),
        (
            format!("sha256:{}\n", hex64()),
            "encoding/hex: invalid byte: U+000A",
        ),
        (String::new(), "invalid hash, expected"),
    ];
    for (input, message) in cases {
        let err = input.parse::<Pin>().unwrap_err().to_string();
        assert!(err.contains(message), "{input:?}: {err}");
    }
    let err = format!("sha256:{}", &hex64()[..62])
        .parse::<Pin>()
        .unwrap_err();
    assert!(matches!(err, Error::PinLength { found: 31, .. }), "{err:?}");
    assert!(
        err.to_string()
            .ends_with("expected a 32 byte SHA-256 hash, found 31 bytes")
    );
}

#[test]
fn any_certificate_of_a_bundle_may_match() {
    let (a, b) = (ca_pem(), other_ca_pem());
    let bundle = CaBundle::from_pem(format!("{a}{b}").as_bytes()).unwrap();
    assert_eq!(bundle.len(), 2);
    let pin_b = Pin::from_certificate_pem(b.as_bytes()).unwrap();
    PinSet::from_iter([pin_b]).check_any(&bundle).unwrap();
    // Pin of the first certificate is what a join command prints.
    assert_eq!(
        bundle.first_pin(),
        Some(&Pin::from_certificate_pem(a.as_bytes()).unwrap())
    );
}

/// A self-signed P-256 certificate with `basicConstraints=critical,CA:FALSE` (openssl req -x509
/// -addext basicConstraints=critical,CA:FALSE): a server's or a client's, never a cluster CA.
const NOT_A_CA_PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIBbzCCARagAwIBAgIUNSKW3xp3ka764fw4lnNdxXw6ow4wCgYIKoZIzj0EAwIw\nDzENMAsGA1UEAwwEbGVhZjAeFw0yNjExMjgxMTE4MTFaFw0zNjExMjUxMTE4MTFa\nMA8xDTALBgNVBAMMBGxlYWYwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAATFvW20\nXchIxnpRZ+7cQU+EXzrJnOxnbzrDU3LEa5wcz5QE4BKZV9UH9+gRgtCR8lJg2GDb\nNad7KNP3u8yT433Qo1AwTjAdBgNVHQ4EFgQUWLj5E5XtmEJoN9aqF2Nf4ThO2E4w\nHwYDVR0jBBgwFoAUWLj5E5XtmEJoN9aqF2Nf4ThO2E4wDAYDVR0TAQH/BAIwADAK\nBggqhkjOPQQDAgNHADBEAiBDURf3kUN8xaGKNPoikA3N3nnkgTwBDsFHIK1/S5TV\nJQIgMx8syrnS0uSjcazXIT2OLo/8pWvfF/Vt22Kl4fzG0gE=\n-----END CERTIFICATE-----\n";

#[test]
fn a_bundle_says_which_certificates_are_cas() {
    let bundle = CaBundle::from_pem(format!("{}{NOT_A_CA_PEM}", ca_pem()).as_bytes()).unwrap();
    assert_eq!(bundle.ca_flags().collect::<Vec<_>>(), [true, false]);
    // A certificate that is not a CA still has a pin: the bundle's use does not depend on it.
    assert_eq!(bundle.pins().count(), 2);
}

#[test]
fn unpinned_bundle_lists_every_hash_joined_with_colons() {
    let (a, b) = (ca_pem(), other_ca_pem());
    let bundle = CaBundle::from_pem(format!("{a}{b}").as_bytes()).unwrap();
    let mut pins = PinSet::new();
    pins.allow(&format!("sha256:{}", "00".repeat(32))).unwrap();
    let err = pins.check_any(&bundle).unwrap_err().to_string();
    let v = pin_vectors();
    assert_eq!(
        err,
        format!(
            "cluster CA found in cluster-info ConfigMap is invalid: none of the public keys \"{}:{}\" are pinned",
            v[0].1, v[1].1
        )
    );
}

#[test]
fn hostile_bundles_are_rejected() {
    let a = ca_pem();
    let junk = format!("{a}junk\n");
    let truncated = {
        let lines: Vec<&str> = a.lines().collect();
        let mut t: Vec<&str> = lines[..lines.len() - 4].to_vec();
        t.push(lines[lines.len() - 1]);
        t.join("\n")
    };
    let key = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF\n-----END PRIVATE KEY-----\n";
    let with_headers = a.replacen(
        "-----BEGIN CERTIFICATE-----\n",
        "-----BEGIN CERTIFICATE-----\nProc-Type: 4,ENCRYPTED\n",
        1,
    );
    let cases: Vec<(&str, String)> = vec![
        ("garbage", "not a certificate at all".to_owned()),
        ("trailing junk", junk),
        ("empty", String::new()),
        ("whitespace only", " \n\n ".to_owned()),
        ("truncated DER", truncated),
        ("private key block", key.to_owned()),
        ("PEM headers", with_headers),
        (
            "no END line",
            a.lines().take(5).collect::<Vec<_>>().join("\n"),
        ),
        (
            "bad base64",
            "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n".to_owned(),
        ),
    ];
    for (name, input) in cases {
        let err = CaBundle::from_pem(input.as_bytes()).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Pem { .. } | Error::NoCertificates | Error::Certificate { .. }
            ),
            "{name}: {err:?}"
        );
        assert!(
            Pin::from_certificate_pem(input.as_bytes()).is_err(),
            "{name}"
        );
    }
    assert_eq!(
        CaBundle::from_pem(b"").unwrap_err().to_string(),
        "data does not contain any valid RSA or ECDSA certificates"
    );
}

#[test]
fn ten_thousand_certificates_are_rejected_bounded() {
    let a = ca_pem();
    let many = a.repeat(10_000);
    let err = CaBundle::from_pem(many.as_bytes()).unwrap_err();
    assert!(
        matches!(err, Error::TooLarge { .. } | Error::Pem { .. }),
        "{err:?}"
    );
    // Just over the certificate limit but under the size limit.
    let over = a.repeat(clusterinfo::MAX_BUNDLE_CERTIFICATES + 1);
    assert_eq!(
        CaBundle::from_pem(over.as_bytes()).unwrap_err(),
        Error::Pem {
            reason: "too many certificates in the bundle"
        }
    );
    let at = a.repeat(clusterinfo::MAX_BUNDLE_CERTIFICATES);
    assert_eq!(
        CaBundle::from_pem(at.as_bytes()).unwrap().len(),
        clusterinfo::MAX_BUNDLE_CERTIFICATES
    );
}

#[test]
fn spki_is_hashed_verbatim() {
    // The pin is SHA-256 over the SPKI bytes as found in the certificate.
    use sha2::Digest;
    use x509_cert::der::{Decode, Encode};
    let pem = ca_pem();
    let bundle = CaBundle::from_pem(pem.as_bytes()).unwrap();
    let der = bundle.certificates_der().next().unwrap().to_vec();
    let cert = x509_cert::Certificate::from_der(&der).unwrap();
    let spki = cert
        .tbs_certificate
        .subject_public_key_info
        .to_der()
        .unwrap();
    // For a DER certificate the re-encoding equals the original; the test pins the value.
    let pos = der
        .windows(spki.len())
        .position(|w| w == spki.as_slice())
        .unwrap();
    let expected = sha2::Sha256::digest(&der[pos..pos + spki.len()]);
    assert_eq!(
        bundle.first_pin().unwrap().as_bytes().as_slice(),
        expected.as_slice()
    );
}
