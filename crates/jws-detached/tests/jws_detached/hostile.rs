//! Hostile inputs (hostile-inputs.md §1.1, §1.2 H2/H3/H6, §1.3 A6/A7, §1.6 L1, §5.3 rows 23–31):
//! each is a typed error, never a panic.

// Test helpers outside `#[test]` functions may unwrap and index as the tests do.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hmac::{Hmac, Mac};
use jws_detached::{
    Error, HeaderError, MAX_CONTENT_LEN, MAX_DETACHED_LEN, MAX_HEADER_JSON_LEN, MAX_KID_LEN,
    PreparedPayload, Segment, sign, verify, verify_kubernetes,
};

const KID: &str = "abcdef";
const KEY: &[u8] = b"0123456789abcdef";
const CONTENT: &[u8] = b"apiVersion: v1\nkind: Config\n";

/// A detached JWS with a valid MAC over an arbitrary header, computed independently of the crate.
fn forge(header_json: &[u8], content: &[u8], key: &[u8]) -> String {
    let header = B64.encode(header_json);
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(key).unwrap();
    mac.update(format!("{header}.{}", B64.encode(content)).as_bytes());
    format!("{header}..{}", B64.encode(mac.finalize().into_bytes()))
}

fn both(detached: &str, content: &[u8]) -> (Result<(), Error>, Result<(), Error>) {
    (
        verify_kubernetes(detached, content, KID, KEY),
        verify(detached, content, KID, KEY),
    )
}

fn good() -> String {
    sign(CONTENT, KID, KEY).unwrap()
}

#[test]
fn row23_canonical_signature_verifies_in_both_modes() {
    let jws = good();
    assert_eq!(both(&jws, CONTENT), (Ok(()), Ok(())));
    assert_eq!(
        forge(br#"{"alg":"HS256","kid":"abcdef"}"#, CONTENT, KEY),
        jws
    );
}

#[test]
fn row24_valid_mac_over_non_canonical_header() {
    for header in [
        r#"{"kid":"abcdef","alg":"HS256"}"#,
        r#"{"alg": "HS256", "kid": "abcdef"}"#,
        "{\"alg\":\"HS256\",\r\n \"kid\":\"abcdef\"}",
        r#"{"alg":"HS256","kid":"abcdef","typ":"JWT"}"#,
        r#"{"alg":"HS\u0032\u0035\u0036","kid":"abcdef"}"#,
    ] {
        let jws = forge(header.as_bytes(), CONTENT, KEY);
        // Kubernetes recomputes and compares the whole string: rejected.
        assert_eq!(
            verify_kubernetes(&jws, CONTENT, KID, KEY),
            Err(Error::NonCanonicalHeader),
            "{header}"
        );
        // RFC 7515: a valid JSON object with the right alg and kid, MAC over the received
        // segment (C3), so accepted.
        assert_eq!(verify(&jws, CONTENT, KID, KEY), Ok(()), "{header}");
    }
}

#[test]
fn row25_wrong_algorithms_and_critical_extensions() {
    for (header, standards) in [
        (
            r#"{"alg":"none","kid":"abcdef"}"#,
            Error::UnsupportedAlgorithm,
        ),
        (
            r#"{"alg":"HS512","kid":"abcdef"}"#,
            Error::UnsupportedAlgorithm,
        ),
        (
            r#"{"alg":"RS256","kid":"abcdef"}"#,
            Error::UnsupportedAlgorithm,
        ),
        (
            r#"{"alg":"hs256","kid":"abcdef"}"#,
            Error::UnsupportedAlgorithm,
        ),
        (
            r#"{"alg":"HS256\u0000","kid":"abcdef"}"#,
            Error::UnsupportedAlgorithm,
        ),
        (
            r#"{"alg":"HS256","b64":false,"crit":["b64"],"kid":"abcdef"}"#,
            Error::CriticalHeader,
        ),
        (
            r#"{"alg":"HS256","crit":[],"kid":"abcdef"}"#,
            Error::CriticalHeader,
        ),
        (
            r#"{"alg":"HS256","crit":"exp","kid":"abcdef"}"#,
            Error::CriticalHeader,
        ),
        (
            r#"{"alg":"HS256","b64":false,"kid":"abcdef"}"#,
            Error::UnencodedPayload,
        ),
    ] {
        let jws = forge(header.as_bytes(), CONTENT, KEY);
        assert_eq!(
            both(&jws, CONTENT),
            (Err(Error::NonCanonicalHeader), Err(standards)),
            "{header}"
        );
    }
    // alg none with an empty signature.
    let none = format!("{}..", B64.encode(r#"{"alg":"none","kid":"abcdef"}"#));
    assert!(verify(&none, CONTENT, KID, KEY).is_err());
    assert!(verify_kubernetes(&none, CONTENT, KID, KEY).is_err());
}

#[test]
fn row26_kid_mismatch_or_missing() {
    let other = forge(br#"{"alg":"HS256","kid":"ghijkl"}"#, CONTENT, KEY);
    assert_eq!(
        both(&other, CONTENT),
        (Err(Error::NonCanonicalHeader), Err(Error::KidMismatch))
    );
    let missing = forge(br#"{"alg":"HS256"}"#, CONTENT, KEY);
    assert_eq!(
        both(&missing, CONTENT),
        (
            Err(Error::NonCanonicalHeader),
            Err(Error::MissingHeaderParameter { name: "kid" })
        )
    );
    // The signature is over the token's own header; a different expected kid never verifies.
    let jws = good();
    assert_eq!(
        verify_kubernetes(&jws, CONTENT, "ghijkl", KEY),
        Err(Error::NonCanonicalHeader)
    );
    assert_eq!(
        verify(&jws, CONTENT, "ghijkl", KEY),
        Err(Error::KidMismatch)
    );
}

#[test]
fn row27_full_compact_serialisation_is_rejected() {
    let jws = good();
    let (header, sig) = jws.split_once("..").unwrap();
    // Even with the correct payload in the middle.
    let full = format!("{header}.{}.{sig}", B64.encode(CONTENT));
    assert_eq!(
        both(&full, CONTENT),
        (
            Err(Error::PayloadNotDetached),
            Err(Error::PayloadNotDetached)
        )
    );
}

#[test]
fn row28_signature_encodings() {
    let jws = good();
    let (header, sig) = jws.split_once("..").unwrap();
    let invalid = Err(Error::InvalidBase64 {
        segment: Segment::Signature,
    });
    let mut non_canonical_last = sig.to_string();
    // The last of 43 characters carries 2 unused bits; flip one of them.
    let last = non_canonical_last.pop().unwrap();
    let idx = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
        .iter()
        .position(|&c| c == last as u8)
        .unwrap();
    non_canonical_last
        .push(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[idx ^ 1] as char);
    for bad_sig in [
        format!("{sig}="),
        sig.replace('-', "+").replace('_', "/"),
        format!(" {sig}"),
        format!("{sig}\n"),
        format!("{}\r\n{}", &sig[..20], &sig[20..]),
        non_canonical_last,
    ] {
        let jws = format!("{header}..{bad_sig}");
        // The `+`/`/` replacement is a no-op when the signature has neither `-` nor `_`.
        if bad_sig == sig {
            continue;
        }
        assert_eq!(
            both(&jws, CONTENT),
            (invalid.clone(), invalid.clone()),
            "{bad_sig:?}"
        );
    }
    // A signature with `+` or `/` for sure.
    let plus = format!("{header}..{}", "+".repeat(43));
    assert_eq!(both(&plus, CONTENT), (invalid.clone(), invalid.clone()));
    // A 16-byte truncated tag (Wycheproof tagSize 128): must reject.
    let truncated_tag = &B64.decode(sig).unwrap()[..16];
    let truncated = format!("{header}..{}", B64.encode(truncated_tag));
    let length = Err(Error::SignatureLength { len: 16 });
    assert_eq!(both(&truncated, CONTENT), (length.clone(), length));
    // An over-long one as well.
    let long = format!("{header}..{sig}AAAA");
    let length = Err(Error::SignatureLength { len: 35 });
    assert_eq!(both(&long, CONTENT), (length.clone(), length));
}

#[test]
fn row29_content_differing_by_a_newline_or_crlf() {
    let jws = good();
    let mut newline = CONTENT.to_vec();
    newline.push(b'\n');
    let crlf = String::from_utf8(CONTENT.to_vec())
        .unwrap()
        .replace('\n', "\r\n");
    for content in [
        &newline[..],
        crlf.as_bytes(),
        &CONTENT[..CONTENT.len() - 1],
        b"",
    ] {
        assert_eq!(
            both(&jws, content),
            (Err(Error::BadSignature), Err(Error::BadSignature))
        );
    }
}

#[test]
fn row30_segment_shapes() {
    let jws = good();
    let (header, sig) = jws.split_once("..").unwrap();
    // From Kubernetes' jws_test.go: a valid token with junk appended.
    // 46 characters: the final `o` leaves non-zero unused bits, so it is not even canonical.
    let appended = format!("{jws}foo");
    let invalid = Err(Error::InvalidBase64 {
        segment: Segment::Signature,
    });
    assert_eq!(both(&appended, CONTENT), (invalid.clone(), invalid));
    for (input, dots) in [
        (format!("{header}...{sig}"), 3),
        (String::new(), 0),
        (format!("{header}.{sig}"), 1),
        (header.to_string(), 0),
        (format!("{header}..{sig}."), 3),
        (".".repeat(100), 100),
        (
            format!(r#"{{"protected":"{header}","payload":"","signature":"{sig}"}}"#),
            0,
        ),
    ] {
        let expected = Err(Error::SegmentCount { dots });
        assert_eq!(
            both(&input, CONTENT),
            (expected.clone(), expected),
            "{input}"
        );
    }
    let empty_segments = "..";
    assert_eq!(
        both(empty_segments, CONTENT),
        (
            Err(Error::NonCanonicalHeader),
            Err(Error::SignatureLength { len: 0 })
        )
    );
}

#[test]
fn row31_empty_key_is_refused() {
    assert_eq!(sign(CONTENT, KID, b""), Err(Error::EmptyKey));
    let payload = PreparedPayload::new(CONTENT).unwrap();
    assert_eq!(payload.sign(KID, b""), Err(Error::EmptyKey));
    let jws = good();
    assert_eq!(both(&jws, CONTENT), (Ok(()), Ok(())));
    assert_eq!(
        verify_kubernetes(&jws, CONTENT, KID, b""),
        Err(Error::EmptyKey)
    );
    assert_eq!(verify(&jws, CONTENT, KID, b""), Err(Error::EmptyKey));
    assert_eq!(payload.verify(&jws, KID, b""), Err(Error::EmptyKey));
    assert_eq!(
        payload.verify_kubernetes(&jws, KID, b""),
        Err(Error::EmptyKey)
    );
}

/// A7: any non-empty key signs, as in Kubernetes; the token format is not imposed here.
#[test]
fn a7_any_non_empty_key_signs() {
    for key in [&b"x"[..], b"NOT A TOKEN SECRET", &[0u8; 100], &[0xff; 65]] {
        let jws = sign(CONTENT, KID, key).unwrap();
        verify_kubernetes(&jws, CONTENT, KID, key).unwrap();
    }
    // Trailing NULs are MAC-identical (HMAC zero-pads keys to the block size).
    let jws = sign(CONTENT, KID, b"s").unwrap();
    assert_eq!(verify_kubernetes(&jws, CONTENT, KID, b"s\0"), Ok(()));
}

#[test]
fn c1_header_segment_problems() {
    let jws = good();
    let (_, sig) = jws.split_once("..").unwrap();
    let empty_header = format!("..{sig}");
    assert_eq!(
        both(&empty_header, CONTENT),
        (
            Err(Error::NonCanonicalHeader),
            Err(Error::InvalidHeader {
                reason: HeaderError::Syntax { offset: 0 }
            })
        )
    );
    let padded = format!(
        "{}=..{sig}",
        B64.encode(r#"{"alg":"HS256","kid":"abcdef"}"#)
    );
    assert_eq!(
        verify(&padded, CONTENT, KID, KEY),
        Err(Error::InvalidBase64 {
            segment: Segment::Header
        })
    );
}

#[test]
fn c4_c5_header_json_rules_with_valid_macs() {
    for (header, reason) in [
        (&br#"["HS256","abcdef"]"#[..], HeaderError::NotObject),
        (b"null", HeaderError::NotObject),
        (
            b"\xef\xbb\xbf{\"alg\":\"HS256\",\"kid\":\"abcdef\"}",
            HeaderError::Syntax { offset: 0 },
        ),
        (
            b"{\"alg\":\"HS256\",\"kid\":\"abc\xffdef\"}",
            HeaderError::NotUtf8,
        ),
        (
            br#"{"alg":"HS256","kid":"abcdef"}{"alg":"none"}"#,
            HeaderError::TrailingData,
        ),
        (
            br#"{"alg":"HS256","alg":"none","kid":"abcdef"}"#,
            HeaderError::DuplicateMember,
        ),
        (
            br#"{"alg":"HS256","kid":"abcdef","kid":"abcdef"}"#,
            HeaderError::DuplicateMember,
        ),
    ] {
        let jws = forge(header, CONTENT, KEY);
        assert_eq!(
            both(&jws, CONTENT),
            (
                Err(Error::NonCanonicalHeader),
                Err(Error::InvalidHeader { reason })
            ),
            "{}",
            String::from_utf8_lossy(header)
        );
    }
}

/// H3: key material named in the header is ignored; the caller's key decides.
#[test]
fn h3_header_keys_are_ignored() {
    let header = br#"{"alg":"HS256","jku":"https://evil.example/jwks","jwk":{"kty":"oct","k":"ZXZpbA"},"kid":"abcdef"}"#;
    let attacker = forge(header, CONTENT, b"evil");
    assert_eq!(
        verify(&attacker, CONTENT, KID, KEY),
        Err(Error::BadSignature)
    );
    let ours = forge(header, CONTENT, KEY);
    assert_eq!(verify(&ours, CONTENT, KID, KEY), Ok(()));
}

#[test]
fn l1_size_limits_fail_fast() {
    let jws = good();
    let huge = "A".repeat(MAX_DETACHED_LEN + 1);
    let too_long = Err(Error::TooLong {
        len: MAX_DETACHED_LEN + 1,
        max: MAX_DETACHED_LEN,
    });
    assert_eq!(both(&huge, CONTENT), (too_long.clone(), too_long));
    let dots = ".".repeat(1 << 20);
    assert!(matches!(both(&dots, CONTENT).0, Err(Error::TooLong { .. })));

    // A header over 2 KiB of JSON (still under 4 KiB of JWS).
    let filler = "x".repeat(MAX_HEADER_JSON_LEN);
    let header = format!(r#"{{"alg":"HS256","kid":"abcdef","f":"{filler}"}}"#);
    let big = forge(header.as_bytes(), CONTENT, KEY);
    assert!(big.len() <= MAX_DETACHED_LEN);
    assert_eq!(
        verify(&big, CONTENT, KID, KEY),
        Err(Error::HeaderTooLong {
            max: MAX_HEADER_JSON_LEN
        })
    );

    let content = vec![b'a'; MAX_CONTENT_LEN + 1];
    let too_large = Err(Error::ContentTooLarge {
        len: MAX_CONTENT_LEN + 1,
        max: MAX_CONTENT_LEN,
    });
    assert_eq!(
        sign(&content, KID, KEY),
        too_large.clone().map(|()| String::new())
    );
    assert_eq!(both(&jws, &content), (too_large.clone(), too_large.clone()));
    assert_eq!(
        PreparedPayload::new(&content),
        too_large.map(|()| unreachable!())
    );
    // Exactly at the limit is fine.
    let max = vec![b'a'; MAX_CONTENT_LEN];
    let jws = sign(&max, KID, KEY).unwrap();
    assert_eq!(both(&jws, &max), (Ok(()), Ok(())));
}

#[test]
fn kid_limits() {
    assert_eq!(sign(CONTENT, "", KEY), Err(Error::EmptyKid));
    let long = "a".repeat(MAX_KID_LEN + 1);
    let err = Err(Error::KidTooLong {
        len: MAX_KID_LEN + 1,
        max: MAX_KID_LEN,
    });
    assert_eq!(
        sign(CONTENT, &long, KEY),
        err.clone().map(|()| String::new())
    );
    let jws = good();
    assert_eq!(verify(&jws, CONTENT, &long, KEY), err.clone());
    assert_eq!(verify_kubernetes(&jws, CONTENT, &long, KEY), err);
    assert_eq!(verify(&jws, CONTENT, "", KEY), Err(Error::EmptyKid));
    // The longest kid, worst-case escaped, still signs and verifies in both modes.
    let max = "<".repeat(MAX_KID_LEN);
    let jws = sign(CONTENT, &max, KEY).unwrap();
    assert_eq!(
        (
            verify_kubernetes(&jws, CONTENT, &max, KEY),
            verify(&jws, CONTENT, &max, KEY)
        ),
        (Ok(()), Ok(()))
    );
}

/// Kids outside `[a-z0-9]` are escaped as go-jose's encoder does; both modes agree.
#[test]
fn escaped_kids_round_trip() {
    for kid in [
        "a\"b",
        "a\\b",
        "<script>",
        "tab\there",
        "line\u{2028}sep",
        "é日本",
        "\u{1}",
    ] {
        let jws = sign(CONTENT, kid, KEY).unwrap();
        assert_eq!(
            (
                verify_kubernetes(&jws, CONTENT, kid, KEY),
                verify(&jws, CONTENT, kid, KEY)
            ),
            (Ok(()), Ok(())),
            "{kid:?}"
        );
        let (header, _) = jws.split_once("..").unwrap();
        let json = String::from_utf8(B64.decode(header).unwrap()).unwrap();
        let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(parsed["kid"], kid);
        assert!(!json.contains(['<', '>', '&']), "{json}");
    }
}
