//! Every line of `vectors/jws.jsonl` (go-jose, as Kubernetes' bootstrap signer) and the worked
//! examples of Kubernetes' `cluster-bootstrap` `token/jws/jws_test.go`.

// Test helpers outside `#[test]` functions may unwrap and index as the tests do.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use jws_detached::{Error, PreparedPayload, sign, verify, verify_kubernetes};

const VECTORS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/vectors/jws.jsonl"
));

struct Vector {
    category: String,
    kid: String,
    key: Vec<u8>,
    content: Vec<u8>,
    detached: String,
    header_json: String,
    signature_hex: String,
}

fn vectors() -> Vec<Vector> {
    let out: Vec<Vector> = VECTORS
        .lines()
        .filter(|l| !l.is_empty())
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let s = |k: &str| v[k].as_str().unwrap().to_string();
            Vector {
                category: s("category"),
                kid: s("token_id"),
                key: STANDARD.decode(s("token_secret_b64")).unwrap(),
                content: STANDARD.decode(s("content_b64")).unwrap(),
                detached: s("detached_jws"),
                header_json: s("header_json"),
                signature_hex: s("signature_hex"),
            }
        })
        .collect();
    assert_eq!(out.len(), 300, "every vector line is loaded");
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn signing_is_byte_identical_to_kubernetes_for_every_vector() {
    for v in vectors() {
        let ours = sign(&v.content, &v.kid, &v.key).unwrap();
        assert_eq!(ours, v.detached, "category {} kid {}", v.category, v.kid);
    }
}

#[test]
fn prepared_payload_signs_identically_for_every_vector() {
    for v in vectors() {
        let payload = PreparedPayload::new(&v.content).unwrap();
        assert_eq!(payload.sign(&v.kid, &v.key).unwrap(), v.detached);
        payload
            .verify_kubernetes(&v.detached, &v.kid, &v.key)
            .unwrap();
        payload.verify(&v.detached, &v.kid, &v.key).unwrap();
    }
}

#[test]
fn both_verifiers_accept_every_vector() {
    for v in vectors() {
        verify_kubernetes(&v.detached, &v.content, &v.kid, &v.key).unwrap();
        verify(&v.detached, &v.content, &v.kid, &v.key).unwrap();
    }
}

#[test]
fn header_and_signature_parts_match_the_vectors() {
    for v in vectors() {
        let (header_b64, sig_b64) = v.detached.split_once("..").unwrap();
        let header = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(header_b64)
            .unwrap();
        assert_eq!(header, v.header_json.as_bytes());
        assert_eq!(
            header,
            format!(r#"{{"alg":"HS256","kid":"{}"}}"#, v.kid).as_bytes()
        );
        let sig = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(sig_b64)
            .unwrap();
        assert_eq!(hex(&sig), v.signature_hex);
    }
}

#[test]
fn vectors_are_rejected_under_another_key_kid_or_content() {
    for v in vectors().iter().step_by(7) {
        let mut other_key = v.key.clone();
        other_key[0] ^= 1;
        assert_eq!(
            verify_kubernetes(&v.detached, &v.content, &v.kid, &other_key),
            Err(Error::BadSignature)
        );
        assert_eq!(
            verify(&v.detached, &v.content, &v.kid, &other_key),
            Err(Error::BadSignature)
        );
        let mut content = v.content.clone();
        content.push(b'\n');
        assert_eq!(
            verify_kubernetes(&v.detached, &content, &v.kid, &v.key),
            Err(Error::BadSignature)
        );
        assert_eq!(
            verify_kubernetes(&v.detached, &v.content, "zzzzzz", &v.key),
            Err(Error::NonCanonicalHeader)
        );
        assert_eq!(
            verify(&v.detached, &v.content, "zzzzzz", &v.key),
            Err(Error::KidMismatch)
        );
    }
}

/// `token/jws/jws_test.go` in Kubernetes' cluster-bootstrap and the worked example of the
/// reference (id `abcdef`, secret `0123456789abcdef`).
#[test]
fn upstream_worked_examples() {
    let content = b"Hello from the other side. I must have called a thousand times.";
    for (content, kid, key, expected) in [
        (
            &content[..],
            "joshua",
            &b"my voice is my passcode"[..],
            "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8",
        ),
        (
            &b""[..],
            "joshua",
            &b"my voice is my passcode"[..],
            "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..7Ui1ALizW4jXphVUB7xUqC9vLYLL9RZeOFfVLoB7Tgk",
        ),
        (
            &b"hello"[..],
            "abcdef",
            &b"0123456789abcdef"[..],
            "eyJhbGciOiJIUzI1NiIsImtpZCI6ImFiY2RlZiJ9..MxsnbCjBaYzcbNIFa06F-wuF9LX26rhMlrL4zA1511s",
        ),
        (
            &b""[..],
            "abcdef",
            &b"0123456789abcdef"[..],
            "eyJhbGciOiJIUzI1NiIsImtpZCI6ImFiY2RlZiJ9..MO2tlCpY1xB334qWeOe_XEv9c6DIMRNmKJZImOzY17k",
        ),
    ] {
        assert_eq!(sign(content, kid, key).unwrap(), expected);
        verify_kubernetes(expected, content, kid, key).unwrap();
        verify(expected, content, kid, key).unwrap();
    }
}

/// Kubernetes signs with an empty secret (jws_test.go has that vector). We refuse to sign or
/// verify under an empty key: anybody can compute such a MAC.
#[test]
fn upstream_empty_secret_vector_is_refused() {
    let content = b"Hello from the other side. I must have called a thousand times.";
    let upstream =
        "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..UfkqvDGiIFxrMnFseDj9LYJOLNrvjW8aHhF71mvvAs8";
    assert_eq!(sign(content, "joshua", b""), Err(Error::EmptyKey));
    assert_eq!(
        verify_kubernetes(upstream, content, "joshua", b""),
        Err(Error::EmptyKey)
    );
    assert_eq!(
        verify(upstream, content, "joshua", b""),
        Err(Error::EmptyKey)
    );
    // The vector itself is what HMAC-SHA-256 under an empty key gives, so the refusal is a
    // policy, not a computation difference.
    use hmac::{Hmac, Mac};
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(b"").unwrap();
    let header = upstream.split_once("..").unwrap().0;
    mac.update(format!("{header}.").as_bytes());
    mac.update(
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(content)
            .as_bytes(),
    );
    let tag = mac.finalize().into_bytes();
    assert_eq!(
        upstream.split_once("..").unwrap().1,
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(tag)
    );
}

/// Kubernetes zero-pads the key to 32 bytes; HMAC gives the same MAC without padding
/// (hostile-inputs A7): `s` and `s` + NULs verify alike.
#[test]
fn zero_padded_key_is_mac_identical() {
    for v in vectors().iter().step_by(13) {
        let mut padded = v.key.clone();
        padded.resize(32, 0);
        assert_eq!(sign(&v.content, &v.kid, &padded).unwrap(), v.detached);
        verify_kubernetes(&v.detached, &v.content, &v.kid, &padded).unwrap();
    }
}
