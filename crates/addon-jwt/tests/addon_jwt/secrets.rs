//! Canary secrets fed through every failure path: no error `Display`/`Debug`, rejection reason
//! or value `Debug` contains a token, a signature or key material (checklist §1.7).

// Test helpers outside `#[test]` functions unwrap and index freely.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use std::time::{Duration, UNIX_EPOCH};

use addon_jwt::{
    Algorithm, Audience, Decision, Issuer, KeySet, Minter, ServiceAccountVerifier, Sidecar,
    SigningKey, Validation, verify,
};
use base64::Engine as _;
use hmac::Mac as _;

const HMAC_CANARY: &[u8] = b"CANARY-KEY-0123456789abcdef0123456789";
const ED25519_PKCS8: &str = "-----BEGIN PRIVATE KEY-----\n\
MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
-----END PRIVATE KEY-----\n";

fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

fn mac(input: &str, key: &[u8]) -> String {
    let mut m = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).unwrap();
    m.update(input.as_bytes());
    b64(&m.finalize().into_bytes())
}

/// Every string that must never appear in output.
fn forbidden(token: &str) -> Vec<String> {
    let mut out = vec![
        token.to_owned(),
        "CANARY".to_owned(),
        String::from_utf8_lossy(HMAC_CANARY).into_owned(),
        "MC4CAQAwBQYDK2VwBCIEICyjEhHG".to_owned(),
    ];
    for part in token.split('.') {
        if part.len() >= 8 {
            out.push(part.to_owned());
        }
    }
    out
}

fn assert_clean(what: &str, text: &str, token: &str) {
    for f in forbidden(token) {
        assert!(!text.contains(&f), "{what} leaks a secret: {text}");
    }
}

#[test]
fn verification_errors_never_contain_the_token() {
    let now = UNIX_EPOCH + Duration::from_secs(1_750_000_000);
    let keys = KeySet::from_hmac_secret(HMAC_CANARY).unwrap();
    let v =
        Validation::new(Issuer::new("iss1"), Audience::new("aud1")).algorithms(&[Algorithm::Hs256]);
    let header = b64(br#"{"alg":"HS256","kid":"CANARY-KID"}"#);
    let payloads = [
        r#"{"sub":"CANARY-SUB","aud":"aud1","iss":"iss1","exp":1,"nbf":1,"iat":1}"#,
        r#"{"sub":"CANARY-SUB","aud":"CANARY-AUD","iss":"iss1","exp":2000000000,"nbf":1,"iat":1}"#,
        r#"{"sub":"CANARY-SUB","aud":"aud1","iss":"CANARY-ISS","exp":2000000000,"nbf":1,"iat":1}"#,
        r#"{"sub":"CANARY-SUB","aud":"aud1","iss":"iss1","exp":"CANARY-EXP","nbf":1,"iat":1}"#,
        r#"{"sub":"CANARY-SUB","aud":["CANARY",1],"iss":"iss1","exp":2000000000,"nbf":1,"iat":1}"#,
        r#"{"sub":"CANARY-SUB","sub":"CANARY"}"#,
        r#"["CANARY-ARRAY"]"#,
        r#"{"sub":"CANARY-SUB" trailing CANARY"#,
    ];
    let mut tokens = Vec::new();
    for p in payloads {
        let input = format!("{header}.{}", b64(p.as_bytes()));
        tokens.push(format!("{input}.{}", mac(&input, HMAC_CANARY)));
        tokens.push(format!("{input}.{}", mac(&input, b"CANARY-WRONG-KEY")));
    }
    tokens.push(format!("{header}.CANARY-NOT-BASE64!.CANARY"));
    tokens.push(format!("{}.e30.CANARYSIG", b64(br#"{"alg":"CANARY"}"#)));
    tokens.push(format!(
        "{}.e30.CANARYSIG",
        b64(br#"{"alg":"HS256","jku":"https://CANARY"}"#)
    ));
    tokens.push("CANARY.CANARY.CANARY.CANARY".to_owned());
    let sidecar = Sidecar::new(keys.clone(), v.clone());
    let sa = ServiceAccountVerifier::new(
        keys.clone(),
        &[Issuer::new("iss1")],
        &[Audience::new("aud1")],
    );
    for token in &tokens {
        let err = verify(token, &keys, &v, now).unwrap_err();
        assert_clean("Display", &err.to_string(), token);
        assert_clean("Debug", &format!("{err:?}"), token);
        let err = sa.verify(token, now).unwrap_err();
        assert_clean("Display", &err.to_string(), token);
        let auth = format!("Bearer {token}");
        match sidecar.decide(
            [
                ("Authorization", auth.as_str()),
                ("X-Authenticated-User", "CANARY"),
            ],
            now,
        ) {
            Decision::Reject(r) => {
                assert_clean("rejection Display", &r.to_string(), token);
                assert_clean("rejection Debug", &format!("{r:?}"), token);
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn key_and_token_values_redact() {
    let keys = KeySet::from_hmac_secret(HMAC_CANARY).unwrap();
    assert_clean("KeySet Debug", &format!("{keys:?}"), "x");
    let key = SigningKey::from_pkcs8_pem(ED25519_PKCS8).unwrap();
    let dbg = format!("{key:?}");
    assert!(dbg.contains("redacted"));
    assert_clean("SigningKey Debug", &dbg, "x");
    let mut minter = Minter::new(key, Issuer::new("iss1"));
    let now = UNIX_EPOCH + Duration::from_secs(1_750_000_000);
    let token = minter.mint("jane", &Audience::new("aud1"), now).unwrap();
    let secret = token.expose_secret().to_owned();
    assert_eq!(format!("{token:?}"), "BearerToken(<redacted>)");
    // The minter's Debug shows its cache: tokens stay redacted.
    assert_clean("Minter Debug", &format!("{minter:?}"), &secret);
    // Private key material in a JWKS or a PEM: errors carry no bytes of it.
    let jwks = r#"{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","d":"CANARY-PRIVATE"}]}"#;
    let err = KeySet::from_jwks(jwks).unwrap_err();
    assert_clean("JWKS error", &format!("{err} {err:?}"), "CANARY-PRIVATE");
    let err = KeySet::from_pem(ED25519_PKCS8, Algorithm::EdDsa).unwrap_err();
    assert_clean("PEM error", &format!("{err} {err:?}"), "x");
    let err = SigningKey::from_pkcs8_pem(
        "-----BEGIN PRIVATE KEY-----\nCANARY\n-----END PRIVATE KEY-----\n",
    )
    .unwrap_err();
    assert_clean("key error", &format!("{err} {err:?}"), "x");
    // Rejection because of an oversized or malformed Authorization header.
    let sidecar = Sidecar::new(keys, Validation::new(Issuer::new("i"), Audience::new("a")));
    let auth = format!("Bearer CANARY-{}", "x".repeat(100));
    if let Decision::Reject(r) = sidecar.decide([("Authorization", auth.as_str())], now) {
        assert_clean("rejection", &format!("{r} {r:?}"), &auth);
    } else {
        panic!("forwarded");
    }
}
