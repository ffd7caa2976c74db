//! Property tests: round trips, tamper detection, agreement between the two modes and with an
//! independent HMAC + base64 computation, and no panics on arbitrary input.

// Test helpers outside `#[test]` functions may unwrap and index as the tests do.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hmac::{Hmac, Mac};
use jws_detached::{PreparedPayload, sign, verify, verify_kubernetes};
use proptest::prelude::*;

const MEMBERS: &[&str] = &[
    r#""alg":"HS256""#,
    r#""alg":"HS256""#,
    r#""kid":"abcdef""#,
    r#""kid":"abcdef""#,
    r#""\u0061lg":"HS\u0032\u0035\u0036""#,
    r#""kid":"\u0061bcdef""#,
    r#""alg":"none""#,
    r#""alg":"HS512""#,
    r#""kid":"ghijkl""#,
    r#""kid":1"#,
    r#""crit":["b64"]"#,
    r#""b64":false"#,
    r#""b64":true"#,
    r#""typ":"JWT""#,
    r#""x":{"y":[1,-2.5e3,null,"\ud83d\ude00"]}"#,
    r#""Alg":"HS256""#,
];

fn content() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..3000)
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 1..80)
}

/// What Kubernetes computes, written independently of the crate.
fn reference(content: &[u8], kid: &str, key: &[u8]) -> String {
    let header = B64.encode(format!(r#"{{"alg":"HS256","kid":"{kid}"}}"#));
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(key).unwrap();
    mac.update(header.as_bytes());
    mac.update(b".");
    mac.update(B64.encode(content).as_bytes());
    format!("{header}..{}", B64.encode(mac.finalize().into_bytes()))
}

proptest! {
    #[test]
    fn proptest_sign_matches_independent_reference(
        content in content(), kid in "[a-zA-Z0-9._~ -]{1,80}", key in key()
    ) {
        let ours = sign(&content, &kid, &key).unwrap();
        prop_assert_eq!(&ours, &reference(&content, &kid, &key));
        let payload = PreparedPayload::new(&content).unwrap();
        prop_assert_eq!(payload.sign(&kid, &key).unwrap(), ours);
    }

    #[test]
    fn proptest_sign_then_verify_round_trips_in_both_modes(
        content in content(), kid in "\\PC{1,32}", key in key()
    ) {
        let jws = sign(&content, &kid, &key).unwrap();
        prop_assert_eq!(verify_kubernetes(&jws, &content, &kid, &key), Ok(()));
        prop_assert_eq!(verify(&jws, &content, &kid, &key), Ok(()));
        let payload = PreparedPayload::new(&content).unwrap();
        prop_assert_eq!(payload.verify_kubernetes(&jws, &kid, &key), Ok(()));
        prop_assert_eq!(payload.verify(&jws, &kid, &key), Ok(()));
    }

    #[test]
    fn proptest_any_single_byte_change_to_the_jws_fails(
        content in content(), key in key(), pos in any::<prop::sample::Index>(),
        replacement in "[ -~]"
    ) {
        let jws = sign(&content, "abcdef", &key).unwrap();
        let i = pos.index(jws.len());
        let mut bytes = jws.clone().into_bytes();
        let r = replacement.as_bytes()[0];
        prop_assume!(bytes[i] != r);
        bytes[i] = r;
        let tampered = String::from_utf8(bytes).unwrap();
        prop_assert!(verify_kubernetes(&tampered, &content, "abcdef", &key).is_err());
        prop_assert!(verify(&tampered, &content, "abcdef", &key).is_err());
    }

    #[test]
    fn proptest_any_single_byte_change_to_the_content_fails(
        content in proptest::collection::vec(any::<u8>(), 1..3000), key in key(),
        pos in any::<prop::sample::Index>(), flip in 1u8..=255
    ) {
        let jws = sign(&content, "abcdef", &key).unwrap();
        let mut tampered = content.clone();
        tampered[pos.index(content.len())] ^= flip;
        prop_assert_eq!(
            verify_kubernetes(&jws, &tampered, "abcdef", &key),
            Err(jws_detached::Error::BadSignature)
        );
        prop_assert_eq!(
            verify(&jws, &tampered, "abcdef", &key),
            Err(jws_detached::Error::BadSignature)
        );
    }

    #[test]
    fn proptest_verifiers_never_panic(detached in "\\PC*", content in proptest::collection::vec(any::<u8>(), 0..64)) {
        prop_assert!(verify_kubernetes(&detached, &content, "abcdef", b"k").is_err());
        prop_assert!(verify(&detached, &content, "abcdef", b"k").is_err());
    }

    /// Headers assembled from known and unknown members, in any order, with whitespace,
    /// escapes and duplicates, behind a valid MAC: the standards verifier accepts exactly
    /// those an independent oracle (serde_json plus the RFC rules) accepts.
    #[test]
    fn proptest_standards_header_rules_agree_with_an_oracle(
        members in proptest::collection::vec(0usize..MEMBERS.len(), 0..6),
        ws in proptest::collection::vec(prop::sample::select(vec!["", " ", "\r\n", "\t"]), 6)
    ) {
        let body: Vec<String> = members
            .iter()
            .zip(ws.iter().cycle())
            .map(|(&m, w)| format!("{w}{}{w}", MEMBERS[m]))
            .collect();
        let header = format!("{{{}}}", body.join(","));
        let h = B64.encode(&header);
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(b"k").unwrap();
        mac.update(format!("{h}.").as_bytes());
        let jws = format!("{h}..{}", B64.encode(mac.finalize().into_bytes()));

        let map: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&header).unwrap();
        let expected = map.len() == members.len()
            && map.get("alg").and_then(|v| v.as_str()) == Some("HS256")
            && map.get("kid").and_then(|v| v.as_str()) == Some("abcdef")
            && !map.contains_key("crit")
            && map.get("b64").is_none_or(|v| v == &serde_json::Value::Bool(true));
        prop_assert_eq!(verify(&jws, b"", "abcdef", b"k").is_ok(), expected, "{}", header);
    }
}
