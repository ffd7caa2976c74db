//! Known-answer examples from RFC 7515 (A.1 HS256, A.3 ES256) and RFC 8037 (A.4 Ed25519).
//! RFC 7520 §4.1 (RS256, Figure 13) and §4.4 (HS256, Figure 35) run with the Wycheproof JWS suite.

// Test helpers outside `#[test]` functions unwrap and index freely.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use addon_jwt::{Algorithm, Error, KeySet, verify_jws};
use base64::Engine as _;

fn b64(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .unwrap()
}

const RFC7515_PAYLOAD: &[u8] =
    b"{\"iss\":\"joe\",\r\n \"exp\":1300819380,\r\n \"http://example.com/is_root\":true}";

#[test]
fn rfc7515_a1_hs256_signing_input_is_the_received_bytes() {
    // The header contains "\r\n " inside the JSON: the MAC is over the received encoding.
    let key = b64(
        "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow",
    );
    let jws = "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.\
eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.\
dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    let keys = KeySet::from_hmac_secret(&key).unwrap();
    assert_eq!(
        verify_jws(jws, &keys, &[Algorithm::Hs256]).unwrap(),
        RFC7515_PAYLOAD
    );
    // HS256 is not in the default (asymmetric) allow-list.
    assert_eq!(
        verify_jws(jws, &keys, &Algorithm::ASYMMETRIC),
        Err(Error::AlgorithmNotAllowed(Algorithm::Hs256))
    );
}

#[test]
fn rfc7515_a3_es256() {
    let jwks = r#"{"keys":[{"kty":"EC","crv":"P-256",
        "x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
        "y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}"#;
    let jws = "eyJhbGciOiJFUzI1NiJ9.\
eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.\
DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q";
    let keys = KeySet::from_jwks(jwks).unwrap();
    assert_eq!(
        verify_jws(jws, &keys, &[Algorithm::Es256]).unwrap(),
        RFC7515_PAYLOAD
    );
}

#[test]
fn rfc8037_a4_ed25519() {
    let jwks = r#"{"keys":[{"kty":"OKP","crv":"Ed25519",
        "x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#;
    let jws = "eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc.\
hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg";
    let keys = KeySet::from_jwks(jwks).unwrap();
    assert_eq!(
        verify_jws(jws, &keys, &[Algorithm::EdDsa]).unwrap(),
        b"Example of Ed25519 signing"
    );
    // The private key of RFC 8037 A.1 in a JWKS is refused.
    let private = r#"{"keys":[{"kty":"OKP","crv":"Ed25519",
        "d":"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A",
        "x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#;
    assert!(KeySet::from_jwks(private).is_err());
}
