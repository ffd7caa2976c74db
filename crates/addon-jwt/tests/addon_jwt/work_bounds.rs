//! The work one token can cost before anyone is authenticated: RSA key sizes are capped when keys
//! are loaded, and no token is checked against more than `MAX_SIGNATURE_CHECKS` keys.

#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::time::{Duration, UNIX_EPOCH};

use addon_jwt::{
    Algorithm, Audience, DEFAULT_MAX_RSA_BITS, Error, Issuer, KeyPolicy, KeyProblem, KeySet,
    MAX_KEYS, MAX_SIGNATURE_CHECKS, Validation, verify,
};
use base64::Engine as _;

const RSA8192: &str = include_str!("../data/rsa8192_public.pem");
const RSA4096: &str = include_str!("../data/rsa4096_public.pem");

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn forged(kid: Option<&str>, signature_bytes: usize) -> String {
    let header = match kid {
        Some(kid) => format!(r#"{{"alg":"RS256","kid":"{kid}"}}"#),
        None => r#"{"alg":"RS256"}"#.to_owned(),
    };
    let payload = r#"{"aud":["a"],"exp":1700000060,"iat":1700000000,"iss":"i","nbf":1700000000,"sub":"admin"}"#;
    format!(
        "{}.{}.{}",
        b64(header.as_bytes()),
        b64(payload.as_bytes()),
        b64(&vec![1u8; signature_bytes])
    )
}

fn validation() -> Validation {
    Validation::new(Issuer::new("i"), Audience::new("a"))
}

fn now() -> std::time::SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_030)
}

#[test]
fn rsa_keys_above_the_cap_are_refused_at_load() {
    assert_eq!(DEFAULT_MAX_RSA_BITS, 4096);
    let too_large = Error::InvalidKey(KeyProblem::RsaTooLarge);
    assert_eq!(
        KeySet::from_pem(RSA8192, Algorithm::Rs256).unwrap_err(),
        too_large
    );
    let der = pem_rfc7468_der(RSA8192);
    assert_eq!(
        KeySet::from_spki_der(&der, Algorithm::Ps256).unwrap_err(),
        too_large
    );
    // The same key as a JWK.
    let spki = KeySet::from_pem_with(
        RSA8192,
        Algorithm::Rs256,
        &KeyPolicy::new().max_rsa_bits(8192),
    );
    assert_eq!(spki.unwrap().len(), 1, "allowed when the policy says so");
    let (n, e) = rsa_components(&der);
    let jwks = format!(r#"{{"keys":[{{"kty":"RSA","kid":"big","n":"{n}","e":"{e}"}}]}}"#);
    assert_eq!(
        KeySet::from_jwks(&jwks).unwrap_err(),
        Error::InvalidJwks(KeyProblem::RsaTooLarge)
    );
    let policy = KeyPolicy::new().max_rsa_bits(8192);
    assert_eq!(KeySet::from_jwks_with(&jwks, &policy).unwrap().len(), 1);
    // A 4096-bit key is within the default, and refused by a lower cap.
    assert!(KeySet::from_pem(RSA4096, Algorithm::Rs256).is_ok());
    let policy = KeyPolicy::new().max_rsa_bits(3072);
    assert_eq!(
        KeySet::from_pem_with(RSA4096, Algorithm::Rs256, &policy).unwrap_err(),
        too_large
    );
}

#[test]
fn kidless_token_against_a_set_larger_than_the_bound_is_rejected_unverified() {
    let policy = KeyPolicy::new().max_rsa_bits(8192);
    let mut keys = KeySet::new();
    for i in 0..MAX_KEYS {
        let key = KeySet::from_pem_with(RSA8192, Algorithm::Rs256, &policy).unwrap();
        keys.extend(key.with_key_id(&format!("k{i}")).unwrap())
            .unwrap();
    }
    // No kid: refused before any of the 32 RSA-8192 checks (which take ~0.4 s of CPU).
    assert_eq!(
        verify(&forged(None, 1024), &keys, &validation(), now()),
        Err(Error::KeyIdRequired)
    );
    // A kid selects one key: one check.
    assert_eq!(
        verify(&forged(Some("k31"), 1024), &keys, &validation(), now()),
        Err(Error::BadSignature)
    );
    // Up to the bound, kid-less tokens still work (a PEM file or two during a rotation).
    let mut small = KeySet::new();
    for _ in 0..MAX_SIGNATURE_CHECKS {
        small
            .extend(KeySet::from_pem(RSA4096, Algorithm::Rs256).unwrap())
            .unwrap();
    }
    assert_eq!(
        verify(&forged(None, 512), &small, &validation(), now()),
        Err(Error::BadSignature)
    );
    small
        .extend(KeySet::from_pem(RSA4096, Algorithm::Rs256).unwrap())
        .unwrap();
    assert_eq!(
        verify(&forged(None, 512), &small, &validation(), now()),
        Err(Error::KeyIdRequired)
    );
}

/// The DER inside a PEM document.
fn pem_rfc7468_der(pem: &str) -> Vec<u8> {
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .unwrap()
}

/// base64url `n` and `e` of an RSA SubjectPublicKeyInfo (a minimal DER walk for the test).
fn rsa_components(spki: &[u8]) -> (String, String) {
    // SEQUENCE { SEQUENCE { oid, NULL }, BIT STRING { 0, SEQUENCE { INTEGER n, INTEGER e } } }
    fn tlv(d: &[u8]) -> (u8, &[u8], &[u8]) {
        let tag = d[0];
        let (len, hdr) = if d[1] < 0x80 {
            (d[1] as usize, 2)
        } else {
            let k = (d[1] & 0x7f) as usize;
            let mut l = 0usize;
            for b in &d[2..2 + k] {
                l = (l << 8) | *b as usize;
            }
            (l, 2 + k)
        };
        (tag, &d[hdr..hdr + len], &d[hdr + len..])
    }
    let (_, outer, _) = tlv(spki);
    let (_, _, rest) = tlv(outer);
    let (_, bits, _) = tlv(rest);
    let (_, seq, _) = tlv(&bits[1..]);
    let (_, n, rest) = tlv(seq);
    let (_, e, _) = tlv(rest);
    let strip = |x: &[u8]| {
        x.iter()
            .skip_while(|b| **b == 0)
            .copied()
            .collect::<Vec<u8>>()
    };
    (b64(&strip(n)), b64(&strip(e)))
}
