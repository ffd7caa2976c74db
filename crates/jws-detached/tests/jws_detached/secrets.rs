//! Secret hygiene (hostile-inputs §1.7): keys never appear in `Debug`, `Display` or errors.

// Test helpers outside `#[test]` functions may unwrap and index as the tests do.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use jws_detached::{Error, HmacKey, PreparedPayload, sign, verify, verify_kubernetes};

const CANARY: &str = "CANARY-KEY-4f1d9a2c";

fn assert_no_canary(text: &str) {
    assert!(!text.contains(CANARY), "leaked: {text}");
    assert!(!text.contains("CANARY"), "leaked: {text}");
}

#[test]
fn key_debug_is_redacted() {
    let key = HmacKey::new(CANARY.as_bytes()).unwrap();
    let debug = format!("{key:?}");
    assert_eq!(debug, "HmacKey(<redacted>)");
    assert_no_canary(&format!("{key:#?}"));
    assert_eq!(key.expose_secret(), CANARY.as_bytes());
}

#[test]
fn key_equality_and_construction() {
    let a = HmacKey::new(CANARY.as_bytes()).unwrap();
    let b = HmacKey::try_from(CANARY).unwrap();
    let c = HmacKey::try_from(&b"CANARY-KEY-4f1d9a2d"[..]).unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert_ne!(a, HmacKey::new(b"CANARY-KEY").unwrap());
    assert_eq!(HmacKey::new(b""), Err(Error::EmptyKey));
}

#[test]
fn errors_never_contain_the_key_or_the_signature() {
    let content = b"kubeconfig";
    let jws = sign(content, "abcdef", CANARY.as_bytes()).unwrap();
    let (_, sig) = jws.split_once("..").unwrap();
    let wrong_key = format!("{CANARY}-wrong");
    let mut errors = vec![
        verify(&jws, b"other", "abcdef", CANARY.as_bytes()).unwrap_err(),
        verify_kubernetes(&jws, b"other", "abcdef", CANARY.as_bytes()).unwrap_err(),
        verify(&jws, content, "abcdef", wrong_key.as_bytes()).unwrap_err(),
        verify_kubernetes(&jws, content, "ghijkl", CANARY.as_bytes()).unwrap_err(),
        verify(&format!("{jws}="), content, "abcdef", CANARY.as_bytes()).unwrap_err(),
        verify(&format!("{jws}.x"), content, "abcdef", CANARY.as_bytes()).unwrap_err(),
        verify("CANARY..CANARY", content, "abcdef", CANARY.as_bytes()).unwrap_err(),
        sign(&vec![0; 2 << 20], "abcdef", CANARY.as_bytes()).unwrap_err(),
    ];
    errors.push(
        PreparedPayload::new(content)
            .unwrap()
            .verify(&jws, "abcdef", wrong_key.as_bytes())
            .unwrap_err(),
    );
    for err in errors {
        for text in [err.to_string(), format!("{err:?}"), format!("{err:#?}")] {
            assert_no_canary(&text);
            assert!(!text.contains(sig), "signature echoed: {text}");
        }
    }
}

#[test]
fn prepared_payload_debug_does_not_print_content() {
    let payload = PreparedPayload::new(CANARY.as_bytes()).unwrap();
    let debug = format!("{payload:?}");
    assert_eq!(debug, "PreparedPayload { encoded_len: 26 }");
}
