//! Compact JWS JWT verification.

use std::time::SystemTime;

use serde_json::Value;

use crate::key::MAX_KID_BYTES;
use crate::{Algorithm, Claims, Error, KeySet, Validation, b64, json};

/// Maximum length of a token in bytes.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;
/// Maximum length of the decoded header JSON in bytes.
pub const MAX_HEADER_BYTES: usize = 2 * 1024;
/// Most signature checks one token may cost: a token that more keys could verify (because it has
/// no `kid`, or the set has more keys without one) is refused with [`Error::KeyIdRequired`]
/// before any of them is tried.
pub const MAX_SIGNATURE_CHECKS: usize = 4;
/// Maximum length of a decoded signature in bytes (an RSA-8192 signature).
const MAX_SIGNATURE_BYTES: usize = 1024;
/// Base64url of [`MAX_HEADER_BYTES`] (4 characters per 3 bytes, rounded up).
const MAX_ENCODED_HEADER_BYTES: usize = MAX_HEADER_BYTES.div_ceil(3) * 4;

/// Header parameters that are refused: extensions we do not implement, key material or key
/// locations taken from the token, unencoded payloads, compression and encryption.
const FORBIDDEN_HEADERS: [&str; 8] = ["crit", "b64", "jwk", "jku", "x5u", "x5c", "zip", "enc"];

/// Verifies a compact JWS JWT and its claims at `now`.
///
/// In order, before any cryptography: the length limit ([`MAX_TOKEN_BYTES`]), exactly two dots,
/// strict base64url, a header that is a JSON object without duplicate members, a string `alg`
/// naming a supported algorithm allowed by `validation`, no `crit`/`b64`/`jwk`/`jku`/`x5u`/`x5c`/
/// `zip`/`enc`, no nested `cty: JWT`, `typ` (when present) `JWT` or `application/jwt` in any case,
/// and a `kid` (when present) of at most 256 bytes. Then the signature over the received
/// `header.payload` bytes with a key bound to that algorithm, then the claims (see [`Validation`]).
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use addon_jwt::{Algorithm, Audience, Issuer, KeySet, Validation, verify};
/// let keys = KeySet::from_hmac_secret(b"a shared secret of at least 32 bytes!")?;
/// // {"alg":"HS256","typ":"JWT"} . {"sub":"jane","aud":"ns/svc","iss":"apiserver",
/// //                                 "exp":1700000060,"nbf":1700000000,"iat":1700000000}
/// let token = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.\
///     eyJzdWIiOiJqYW5lIiwiYXVkIjoibnMvc3ZjIiwiaXNzIjoiYXBpc2VydmVyIiwiZXhwIjoxNzAwMDAwMDYwLCJuYmYiOjE3MDAwMDAwMDAsImlhdCI6MTcwMDAwMDAwMH0.\
///     aVbcL4REVFKX3tvQFuspvfMRBFGzpGsiSf41_bOR81Q";
/// let validation = Validation::new(Issuer::new("apiserver"), Audience::new("ns/svc")).algorithms(&[Algorithm::Hs256]);
/// let now = UNIX_EPOCH + Duration::from_secs(1_700_000_030);
/// let claims = verify(token, &keys, &validation, now)?;
/// assert_eq!(claims.subject(), "jane");
/// # Ok::<(), addon_jwt::Error>(())
/// ```
///
/// # Errors
///
/// A typed [`Error`] for the first check that fails: [`Error::TooLarge`], [`Error::Malformed`],
/// [`Error::Base64`], [`Error::Json`], [`Error::MissingAlgorithm`],
/// [`Error::UnsupportedAlgorithm`], [`Error::AlgorithmNotAllowed`], [`Error::ForbiddenHeader`],
/// [`Error::WrongType`], [`Error::InvalidKeyId`], [`Error::UnknownKeyId`] (the caller may
/// refresh its JWKS), [`Error::NoMatchingKey`], [`Error::BadSignature`], then the claim errors
/// [`Error::MissingClaim`], [`Error::InvalidClaim`], [`Error::Expired`], [`Error::NotYetValid`],
/// [`Error::IssuedInFuture`], [`Error::WrongIssuer`], [`Error::WrongAudience`].
pub fn verify(
    token: &str,
    keys: &KeySet,
    validation: &Validation,
    now: SystemTime,
) -> Result<Claims, Error> {
    let (header, payload) = verify_parts(token, keys, |alg| validation.allows(alg))?;
    let claims = json::parse_object(&payload, "payload")?;
    Claims::from_verified(&claims, validation, now, header.alg, header.kid.as_deref())
}

/// Verifies the signature of a compact JWS whose payload is not a JWT claim set, and returns
/// the payload bytes. No claim is checked: use [`verify`] for tokens.
///
/// The header and key rules of [`verify`] apply; `algorithms` is the allow-list.
///
/// # Errors
///
/// As [`verify`], up to and including [`Error::BadSignature`].
pub fn verify_jws(token: &str, keys: &KeySet, algorithms: &[Algorithm]) -> Result<Vec<u8>, Error> {
    verify_parts(token, keys, |alg| algorithms.contains(&alg)).map(|(_, payload)| payload)
}

fn verify_parts(
    token: &str,
    keys: &KeySet,
    allows: impl Fn(Algorithm) -> bool,
) -> Result<(Header, Vec<u8>), Error> {
    let parts = split(token)?;
    let header = parse_header(parts.header)?;
    if !allows(header.alg) {
        return Err(Error::AlgorithmNotAllowed(header.alg));
    }
    if parts.signature.len() > MAX_SIGNATURE_BYTES.saturating_mul(2) {
        return Err(Error::BadSignature);
    }
    let signature = b64::decode(parts.signature, "signature")?;
    verify_signature(
        keys,
        header.alg,
        header.kid.as_deref(),
        parts.signing_input.as_bytes(),
        &signature,
    )?;
    let payload = b64::decode(parts.payload, "payload")?;
    Ok((header, payload))
}

pub(crate) struct Parts<'a> {
    pub(crate) header: &'a str,
    pub(crate) payload: &'a str,
    pub(crate) signature: &'a str,
    pub(crate) signing_input: &'a str,
}

/// Splits a compact JWS, after checking its length, at its exactly two dots.
pub(crate) fn split(token: &str) -> Result<Parts<'_>, Error> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(Error::TooLarge {
            what: "token",
            limit: MAX_TOKEN_BYTES,
        });
    }
    // Exactly two dots: the last, the first, and none between them.
    let (signing_input, signature) = token.rsplit_once('.').ok_or(Error::Malformed)?;
    let (header, payload) = signing_input.split_once('.').ok_or(Error::Malformed)?;
    if payload.contains('.') {
        return Err(Error::Malformed);
    }
    Ok(Parts {
        header,
        payload,
        signature,
        signing_input,
    })
}

pub(crate) struct Header {
    pub(crate) alg: Algorithm,
    pub(crate) kid: Option<String>,
}

pub(crate) fn parse_header(encoded: &str) -> Result<Header, Error> {
    // base64url expands by 4/3; bound before decoding.
    if encoded.len() > MAX_ENCODED_HEADER_BYTES {
        return Err(Error::TooLarge {
            what: "header",
            limit: MAX_HEADER_BYTES,
        });
    }
    let bytes = b64::decode(encoded, "header")?;
    let header = json::parse_object(&bytes, "header")?;
    let alg = match header.get("alg") {
        Some(Value::String(name)) => name.parse::<Algorithm>()?,
        _ => return Err(Error::MissingAlgorithm),
    };
    if let Some(name) = FORBIDDEN_HEADERS.iter().find(|n| header.contains_key(**n)) {
        return Err(Error::ForbiddenHeader(name));
    }
    match header.get("cty") {
        None => {}
        Some(Value::String(cty)) if !is_jwt_media_type(cty) => {}
        Some(_) => return Err(Error::ForbiddenHeader("cty")),
    }
    match header.get("typ") {
        None => {}
        Some(Value::String(typ)) if is_jwt_media_type(typ) => {}
        Some(_) => return Err(Error::WrongType),
    }
    let kid = match header.get("kid") {
        None => None,
        Some(Value::String(kid)) if kid.len() <= MAX_KID_BYTES => Some(kid.clone()),
        Some(_) => return Err(Error::InvalidKeyId),
    };
    Ok(Header { alg, kid })
}

/// `JWT` or `application/jwt`, ASCII case-insensitive (RFC 7515 §4.1.9).
fn is_jwt_media_type(value: &str) -> bool {
    let bare = match value.get(..12) {
        Some(prefix) if prefix.eq_ignore_ascii_case("application/") => {
            value.get(12..).unwrap_or("")
        }
        _ => value,
    };
    bare.eq_ignore_ascii_case("JWT")
}

/// Tries the keys that may verify a token with `alg` and `kid`: those named by `kid` and those
/// without one, at most [`MAX_SIGNATURE_CHECKS`] of them.
pub(crate) fn verify_signature(
    keys: &KeySet,
    alg: Algorithm,
    kid: Option<&str>,
    signing_input: &[u8],
    signature: &[u8],
) -> Result<(), Error> {
    let selected = |key: &&crate::key::Key| {
        key.alg == alg
            && match (kid, key.kid.as_deref()) {
                (Some(want), Some(have)) => want == have,
                _ => true,
            }
    };
    // Counted before anything is verified: the work per token is bounded whatever it claims.
    let candidates = keys.entries().iter().filter(selected).count();
    if candidates > MAX_SIGNATURE_CHECKS {
        return Err(Error::KeyIdRequired);
    }
    if candidates == 0 {
        let named = kid.is_some_and(|want| {
            keys.entries()
                .iter()
                .any(|k| k.kid.as_deref() == Some(want))
        });
        return if kid.is_some() && !named && !keys.entries().iter().any(|k| k.kid.is_none()) {
            Err(Error::UnknownKeyId)
        } else {
            Err(Error::NoMatchingKey(alg))
        };
    }
    for key in keys.entries().iter().filter(selected) {
        if key.verify(signing_input, signature).is_ok() {
            return Ok(());
        }
    }
    Err(Error::BadSignature)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jwt_media_types() {
        for ok in ["JWT", "jwt", "application/JWT", "APPLICATION/jwt", "Jwt"] {
            assert!(is_jwt_media_type(ok), "{ok}");
        }
        for bad in [
            "at+jwt",
            "application/at+jwt",
            "",
            "JWS",
            "application/",
            "xJWT",
        ] {
            assert!(!is_jwt_media_type(bad), "{bad}");
        }
    }

    /// `MAX_KEYS` HMAC keys named `k0`.. (or unnamed), and a token for them.
    fn many_keys(named: bool) -> KeySet {
        let mut set = KeySet::new();
        for i in 0..crate::MAX_KEYS {
            let key = KeySet::from_hmac_secret(&[u8::try_from(i).unwrap(); 32]).unwrap();
            let key = if named {
                key.with_key_id(&format!("k{i}")).unwrap()
            } else {
                key
            };
            set.extend(key).unwrap();
        }
        set
    }

    #[test]
    fn kidless_token_against_a_set_larger_than_the_bound_tries_no_key() {
        for named in [true, false] {
            let keys = many_keys(named);
            crate::key::reset_verifications();
            assert_eq!(
                verify_signature(&keys, Algorithm::Hs256, None, b"input", &[0; 32]),
                Err(Error::KeyIdRequired)
            );
            assert_eq!(crate::key::verifications(), 0);
        }
        // Unnamed keys are candidates for every kid, so a kid does not help either.
        let keys = many_keys(false);
        assert_eq!(
            verify_signature(&keys, Algorithm::Hs256, Some("k1"), b"input", &[0; 32]),
            Err(Error::KeyIdRequired)
        );
        assert_eq!(crate::key::verifications(), 0);
    }

    #[test]
    fn a_kid_selects_one_key_of_a_large_set() {
        let keys = many_keys(true);
        crate::key::reset_verifications();
        assert_eq!(
            verify_signature(&keys, Algorithm::Hs256, Some("k31"), b"input", &[0; 32]),
            Err(Error::BadSignature)
        );
        assert_eq!(crate::key::verifications(), 1);
    }

    #[test]
    fn up_to_the_bound_kidless_tokens_try_every_candidate() {
        let mut keys = KeySet::new();
        for i in 0..MAX_SIGNATURE_CHECKS {
            let key = KeySet::from_hmac_secret(&[u8::try_from(i).unwrap(); 32]).unwrap();
            keys.extend(key).unwrap();
        }
        crate::key::reset_verifications();
        assert_eq!(
            verify_signature(&keys, Algorithm::Hs256, None, b"input", &[0; 32]),
            Err(Error::BadSignature)
        );
        assert_eq!(crate::key::verifications(), MAX_SIGNATURE_CHECKS);
    }

    #[test]
    fn dots_are_counted_first() {
        assert_eq!(split("a.b").err(), Some(Error::Malformed));
        assert_eq!(split("a.b.c.d").err(), Some(Error::Malformed));
        assert_eq!(split("").err(), Some(Error::Malformed));
        let dots = ".".repeat(MAX_TOKEN_BYTES + 1);
        assert!(matches!(split(&dots), Err(Error::TooLarge { .. })));
        assert!(split("..").is_ok());
    }
}
