//! Checks for the `jws_detached_*` targets.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use jws_detached::{PreparedPayload, sign, verify, verify_kubernetes};
use serde::Deserialize as _;

use crate::fixtures::{KEY, KEY_TEXT, KID};
use crate::hygiene::assert_hidden;
use crate::input::split_at_first;
use crate::outcome::Outcome;

/// `jws_detached::verify` (standards mode) on arbitrary input: `<detached JWS>\0<content>`,
/// kid [`KID`](crate::KID), key [`KEY`](crate::KEY).
///
/// Whatever Kubernetes mode accepts, standards mode accepts too, and it is exactly what the
/// signer writes; errors never carry the key. Accepted: standards mode verifies.
pub fn jws_detached_verify(data: &[u8]) -> Outcome {
    let Some((detached, content)) = detached_and_content(data) else {
        return Outcome::Rejected;
    };
    let standards = verify(detached, content, KID, KEY);
    let kubernetes = verify_kubernetes(detached, content, KID, KEY);
    if kubernetes.is_ok() {
        assert!(standards.is_ok());
        assert_eq!(sign(content, KID, KEY).unwrap(), detached);
    }
    if let Err(e) = &standards {
        assert_hidden(&format!("{e} {e:?}"), KEY_TEXT, "");
    }
    Outcome::accepted_if(standards.is_ok())
}

/// `jws_detached::verify_kubernetes` on arbitrary input: `<detached JWS>\0<content>`, kid
/// [`KID`](crate::KID), key [`KEY`](crate::KEY), also through `PreparedPayload`.
///
/// Both paths agree, and an accepted signature is exactly the string Kubernetes computes.
/// Accepted: the signature verifies.
pub fn jws_detached_verify_kubernetes(data: &[u8]) -> Outcome {
    let Some((detached, content)) = detached_and_content(data) else {
        return Outcome::Rejected;
    };
    let direct = verify_kubernetes(detached, content, KID, KEY);
    let prepared =
        PreparedPayload::new(content).and_then(|p| p.verify_kubernetes(detached, KID, KEY));
    assert_eq!(direct, prepared);
    if direct.is_ok() {
        assert_eq!(sign(content, KID, KEY).unwrap(), detached);
    }
    Outcome::accepted_if(direct.is_ok())
}

/// `jws_detached::verify` (standards mode) with arbitrary protected-header JSON (the whole
/// input) behind a valid MAC, so the fuzzer reaches the header scanner directly.
///
/// An accepted header is a JSON object whose `alg` is `HS256` and whose `kid` is
/// [`KID`](crate::KID), without `crit`. Accepted: the header is accepted.
pub fn jws_detached_verify_header_json(header: &[u8]) -> Outcome {
    let h = URL_SAFE_NO_PAD.encode(header);
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(KEY).unwrap();
    mac.update(h.as_bytes());
    mac.update(b".");
    let jws = format!(
        "{h}..{}",
        URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    );
    if verify(&jws, b"", KID, KEY).is_err() {
        return Outcome::Rejected;
    }
    let text = std::str::from_utf8(header).unwrap();
    assert!(text.trim_start().starts_with('{'));
    for name in ["\"alg\"", "\"kid\""] {
        assert!(text.contains(name) || text.contains("\\u"), "{text}");
    }
    // An independent JSON parser reads the same `alg` and `kid` and finds no `crit` member
    // (other members are skipped unconverted, so numbers beyond f64 range cannot fail it).
    // `"crit"` may still appear in the text as a string value or inside a nested object.
    let parsed: Header = serde_json::from_str(text).unwrap();
    assert_eq!((parsed.alg.as_str(), parsed.kid.as_str()), ("HS256", KID));
    assert!(!parsed.crit, "{text}");
    Outcome::Accepted
}

/// The members of a protected header this crate checks: `alg` and `kid` must be present, and a
/// `crit` member, whatever its value, must have been refused.
#[derive(serde::Deserialize)]
struct Header {
    alg: String,
    kid: String,
    /// Whether a `crit` member is present, even as `null`.
    #[serde(default, deserialize_with = "present")]
    crit: bool,
}

/// `true` for any member value, `null` included; the value itself is skipped.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(d).map(|_| true)
}

/// `<detached JWS>\0<content>`, the JWS as UTF-8.
fn detached_and_content(data: &[u8]) -> Option<(&str, &[u8])> {
    let (detached, content) = split_at_first(data, 0);
    Some((std::str::from_utf8(detached).ok()?, content))
}
