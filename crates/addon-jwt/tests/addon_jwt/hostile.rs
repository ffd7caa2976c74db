//! Hostile inputs (rows 65–81 of the hostile-input catalogue, checklist §1.1–1.6): each is a
//! typed error, never a panic, and fast.

// Test helpers outside `#[test]` functions unwrap and index freely.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use std::time::{Duration, UNIX_EPOCH};

use addon_jwt::{
    Algorithm, Audience, Error, Issuer, JsonProblem, KeyProblem, KeySet, Validation, verify,
};
use base64::Engine as _;
use hmac::Mac as _;
use serde_json::Value;
use signature::Signer as _;

const SECRET: &[u8] = b"CANARY-KEY-0123456789abcdef0123456789";
const VECTORS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/vectors/jwt.jsonl"
));
const GOOD: &str =
    r#"{"iss":"iss1","sub":"jane","aud":"aud1","exp":2000000000,"nbf":1000,"iat":1000}"#;
const HS: &str = r#"{"alg":"HS256","typ":"JWT"}"#;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn now() -> std::time::SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_750_000_000)
}

fn hs_raw(header: &[u8], payload: &[u8], key: &[u8]) -> String {
    let input = format!("{}.{}", b64(header), b64(payload));
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).unwrap();
    mac.update(input.as_bytes());
    format!("{input}.{}", b64(&mac.finalize().into_bytes()))
}

fn hs(header: &str, payload: &str) -> String {
    hs_raw(header.as_bytes(), payload.as_bytes(), SECRET)
}

fn hs_keys() -> KeySet {
    KeySet::from_hmac_secret(SECRET).unwrap()
}

fn hs_validation() -> Validation {
    Validation::new(Issuer::new("iss1"), Audience::new("aud1")).algorithms(&[Algorithm::Hs256])
}

fn check(header: &str, payload: &str) -> Result<addon_jwt::Claims, Error> {
    verify(&hs(header, payload), &hs_keys(), &hs_validation(), now())
}

fn with(claim: &str, value: &str) -> String {
    let mut v: serde_json::Map<String, Value> = serde_json::from_str(GOOD).unwrap();
    v.remove(claim);
    let mut s = serde_json::to_string(&v).unwrap();
    if !value.is_empty() {
        s.pop();
        s.push_str(&format!(r#","{claim}":{value}}}"#));
    }
    s
}

fn vector_key(kid: &str, field: &str) -> String {
    VECTORS
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["kind"] == "key" && v["kid"] == kid)
        .unwrap()[field]
        .as_str()
        .unwrap()
        .to_owned()
}

fn es256_sign(header: &str, payload: &str) -> (String, Vec<u8>) {
    use p256::pkcs8::DecodePrivateKey as _;
    let key =
        p256::ecdsa::SigningKey::from_pkcs8_pem(&vector_key("ec-p256", "private_pem")).unwrap();
    let input = format!("{}.{}", b64(header.as_bytes()), b64(payload.as_bytes()));
    let sig: p256::ecdsa::Signature = key.sign(input.as_bytes());
    (input, sig.to_bytes().to_vec())
}

fn es_keys() -> KeySet {
    KeySet::from_pem(&vector_key("ec-p256", "public_pem"), Algorithm::Es256).unwrap()
}

fn es_validation() -> Validation {
    Validation::new(Issuer::new("iss1"), Audience::new("aud1"))
}

#[test]
fn good_token_is_accepted() {
    let claims = check(HS, GOOD).unwrap();
    assert_eq!(claims.subject(), "jane");
    let (input, sig) = es256_sign(r#"{"alg":"ES256"}"#, GOOD);
    let token = format!("{input}.{}", b64(&sig));
    assert!(verify(&token, &es_keys(), &es_validation(), now()).is_ok());
}

// Row 66.
#[test]
fn alg_none_missing_and_mistyped() {
    for header in [
        r#"{"alg":"none"}"#,
        r#"{"alg":"NONE"}"#,
        r#"{"alg":"None"}"#,
    ] {
        let unsigned = format!("{}.{}.", b64(header.as_bytes()), b64(GOOD.as_bytes()));
        assert_eq!(
            verify(&unsigned, &hs_keys(), &hs_validation(), now()).err(),
            Some(Error::UnsupportedAlgorithm)
        );
        assert_eq!(check(header, GOOD).err(), Some(Error::UnsupportedAlgorithm));
    }
    for header in [
        r#"{"typ":"JWT"}"#,
        r#"{"alg":256}"#,
        r#"{"alg":["HS256"]}"#,
        r#"{"alg":null}"#,
    ] {
        assert_eq!(
            check(header, GOOD).err(),
            Some(Error::MissingAlgorithm),
            "{header}"
        );
    }
    assert_eq!(
        check(r#"{"alg":"hs256"}"#, GOOD).err(),
        Some(Error::UnsupportedAlgorithm)
    );
    assert_eq!(
        check(r#"{"alg":"HS256\u0000"}"#, GOOD).err(),
        Some(Error::UnsupportedAlgorithm)
    );
    // JSON escapes are processed before comparing (RFC 7515 §10.13).
    assert!(check(r#"{"alg":"HS\u0032\u0035\u0036"}"#, GOOD).is_ok());
    // "Alg" is not "alg".
    assert_eq!(
        check(r#"{"Alg":"HS256"}"#, GOOD).err(),
        Some(Error::MissingAlgorithm)
    );
}

// Row 67.
#[test]
fn hs256_maced_with_public_key_bytes_is_rejected() {
    let pem = vector_key("rsa-rs256", "public_pem");
    let keys = KeySet::from_pem(&pem, Algorithm::Rs256).unwrap();
    let v = Validation::new(Issuer::new("iss1"), Audience::new("aud1")).algorithms(&Algorithm::ALL);
    let header = r#"{"alg":"HS256","kid":"rsa-rs256"}"#;
    let with_pem = hs_raw(header.as_bytes(), GOOD.as_bytes(), pem.as_bytes());
    assert_eq!(
        verify(&with_pem, &keys, &v, now()).err(),
        Some(Error::NoMatchingKey(Algorithm::Hs256))
    );
    let jwk: Value = serde_json::from_str(&vector_key_jwk("rsa-rs256")).unwrap();
    let mut ne = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(jwk["n"].as_str().unwrap())
        .unwrap();
    ne.extend([1, 0, 1]);
    let with_ne = hs_raw(header.as_bytes(), GOOD.as_bytes(), &ne);
    assert_eq!(
        verify(&with_ne, &keys, &v, now()).err(),
        Some(Error::NoMatchingKey(Algorithm::Hs256))
    );
    // PEM text never becomes an HMAC key.
    assert!(KeySet::from_pem(&pem, Algorithm::Hs256).is_err());
    // Nor does a JWKS `oct` key.
    let oct = r#"{"keys":[{"kty":"oct","k":"c2VjcmV0","alg":"HS256"}]}"#;
    assert_eq!(
        KeySet::from_jwks(oct).err(),
        Some(Error::InvalidJwks(KeyProblem::PrivateMaterial))
    );
}

fn vector_key_jwk(kid: &str) -> String {
    VECTORS
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["kind"] == "key" && v["kid"] == kid)
        .unwrap()["jwk"]
        .to_string()
}

// Row 68.
#[test]
fn algorithm_key_type_confusion_is_rejected() {
    let (input, sig) = es256_sign(r#"{"alg":"ES256"}"#, GOOD);
    let token = format!("{input}.{}", b64(&sig));
    let rsa = KeySet::from_pem(&vector_key("rsa-rs256", "public_pem"), Algorithm::Rs256).unwrap();
    assert_eq!(
        verify(&token, &rsa, &es_validation(), now()).err(),
        Some(Error::NoMatchingKey(Algorithm::Es256))
    );
    // EdDSA header over a P-256 key.
    let (input, sig) = es256_sign(r#"{"alg":"EdDSA"}"#, GOOD);
    let token = format!("{input}.{}", b64(&sig));
    assert_eq!(
        verify(&token, &es_keys(), &es_validation(), now()).err(),
        Some(Error::NoMatchingKey(Algorithm::EdDsa))
    );
    // A PS256 key does not verify RS256 and vice versa; keys of the wrong type do not load.
    assert!(KeySet::from_pem(&vector_key("ec-p256", "public_pem"), Algorithm::Rs256).is_err());
    assert!(KeySet::from_pem(&vector_key("ec-p384", "public_pem"), Algorithm::Es256).is_err());
    assert!(KeySet::from_pem(&vector_key("ed25519", "public_pem"), Algorithm::Es256).is_err());
    assert!(KeySet::from_pem(&vector_key("rsa-rs256", "public_pem"), Algorithm::EdDsa).is_err());
}

// Row 69.
#[test]
fn ecdsa_signature_encodings_are_rejected() {
    let (input, sig) = es256_sign(r#"{"alg":"ES256"}"#, GOOD);
    let keys = es_keys();
    let v = es_validation();
    let p256_n = hex_decode("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551");
    let der = p256::ecdsa::Signature::from_slice(&sig).unwrap().to_der();
    let mut cases: Vec<Vec<u8>> = vec![
        der.as_bytes().to_vec(),
        sig[..63].to_vec(),
        [sig.clone(), vec![0]].concat(),
        vec![0; 64],
    ];
    cases.push([p256_n.clone(), sig[32..].to_vec()].concat()); // r = n
    cases.push([sig[..32].to_vec(), p256_n.clone()].concat()); // s = n
    for bad in cases {
        let token = format!("{input}.{}", b64(&bad));
        assert_eq!(
            verify(&token, &keys, &v, now()).err(),
            Some(Error::BadSignature)
        );
    }
}

fn hex_decode(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

// Row 70.
#[test]
fn key_material_from_the_token_is_refused() {
    let attacker = r#"{"kty":"oct","k":"YXR0YWNrZXI"}"#;
    for (name, header) in [
        ("jwk", format!(r#"{{"alg":"HS256","jwk":{attacker}}}"#)),
        (
            "jku",
            r#"{"alg":"HS256","jku":"https://evil.example/jwks"}"#.to_owned(),
        ),
        (
            "x5u",
            r#"{"alg":"HS256","x5u":"https://evil.example/cert"}"#.to_owned(),
        ),
        ("x5c", r#"{"alg":"HS256","x5c":["MIIB"]}"#.to_owned()),
    ] {
        assert_eq!(
            check(&header, GOOD).err(),
            Some(Error::ForbiddenHeader(name))
        );
        // Signed by the attacker's key: rejected too.
        let token = hs_raw(header.as_bytes(), GOOD.as_bytes(), b"attacker");
        assert!(verify(&token, &hs_keys(), &hs_validation(), now()).is_err());
    }
}

// Row 71.
#[test]
fn crit_b64_zip_enc_are_rejected() {
    for (name, header) in [
        ("crit", r#"{"alg":"HS256","crit":["exp"],"exp":1}"#),
        ("crit", r#"{"alg":"HS256","crit":[]}"#),
        ("crit", r#"{"alg":"HS256","crit":"b64"}"#),
        ("crit", r#"{"alg":"HS256","crit":["b64"],"b64":false}"#),
        ("b64", r#"{"alg":"HS256","b64":false}"#),
        ("zip", r#"{"alg":"HS256","zip":"DEF"}"#),
        ("enc", r#"{"alg":"HS256","enc":"A128GCM"}"#),
    ] {
        assert_eq!(
            check(header, GOOD).err(),
            Some(Error::ForbiddenHeader(name)),
            "{header}"
        );
    }
}

// Row 72.
#[test]
fn malformed_headers_are_rejected() {
    let json = |p| {
        Some(Error::Json {
            what: "header",
            problem: p,
        })
    };
    assert_eq!(
        check(r#"["HS256"]"#, GOOD).err(),
        json(JsonProblem::NotObject)
    );
    assert_eq!(check("null", GOOD).err(), json(JsonProblem::NotObject));
    assert_eq!(
        check(r#"{"alg":"HS256","alg":"HS256"}"#, GOOD).err(),
        json(JsonProblem::DuplicateMember)
    );
    assert_eq!(
        check("\u{feff}{\"alg\":\"HS256\"}", GOOD).err(),
        json(JsonProblem::Syntax)
    );
    let not_utf8 = hs_raw(
        b"{\"alg\":\"HS256\",\"x\":\"\xff\"}",
        GOOD.as_bytes(),
        SECRET,
    );
    assert_eq!(
        verify(&not_utf8, &hs_keys(), &hs_validation(), now()).err(),
        json(JsonProblem::Syntax)
    );
    assert_eq!(
        check(r#"{"alg":"HS256"} {}"#, GOOD).err(),
        json(JsonProblem::Syntax)
    );
}

// Row 73.
#[test]
fn nested_tokens_are_rejected() {
    assert_eq!(
        check(r#"{"alg":"HS256","cty":"JWT"}"#, GOOD).err(),
        Some(Error::ForbiddenHeader("cty"))
    );
    assert_eq!(
        check(r#"{"alg":"HS256","cty":"application/jwt"}"#, GOOD).err(),
        Some(Error::ForbiddenHeader("cty"))
    );
    let inner = hs(HS, GOOD);
    let payload = serde_json::to_string(&inner).unwrap();
    assert_eq!(
        check(HS, &payload).err(),
        Some(Error::Json {
            what: "payload",
            problem: JsonProblem::NotObject
        })
    );
}

// Row 74.
#[test]
fn typ_is_checked() {
    assert_eq!(
        check(r#"{"alg":"HS256","typ":"at+jwt"}"#, GOOD).err(),
        Some(Error::WrongType)
    );
    assert_eq!(
        check(r#"{"alg":"HS256","typ":7}"#, GOOD).err(),
        Some(Error::WrongType)
    );
    assert!(check(r#"{"alg":"HS256","typ":"jwt"}"#, GOOD).is_ok());
    assert!(check(r#"{"alg":"HS256","typ":"application/JWT"}"#, GOOD).is_ok());
    assert!(check(r#"{"alg":"HS256"}"#, GOOD).is_ok());
}

// Row 75.
#[test]
fn exp_variants() {
    let now_s = 1_750_000_000u64;
    assert_eq!(
        check(HS, &with("exp", &(now_s - 1).to_string())).err(),
        Some(Error::Expired)
    );
    assert_eq!(
        check(HS, &with("exp", &now_s.to_string())).err(),
        Some(Error::Expired)
    );
    assert_eq!(check(HS, &with("exp", "1.5")).err(), Some(Error::Expired));
    assert_eq!(check(HS, &with("exp", "-1")).err(), Some(Error::Expired));
    for bad in [r#""1700000000""#, "null", "true", "[]", "{}"] {
        assert_eq!(
            check(HS, &with("exp", bad)).err(),
            Some(Error::InvalidClaim("exp")),
            "{bad}"
        );
    }
    assert!(matches!(
        check(HS, &with("exp", "1e400")).err(),
        Some(Error::Json { .. })
    ));
    assert_eq!(
        check(HS, &with("exp", "")).err(),
        Some(Error::MissingClaim("exp"))
    );
    // Far-future values: accepted, no overflow, even with a huge leeway.
    for far in [
        i64::MAX.to_string(),
        u64::MAX.to_string(),
        "1e300".to_owned(),
        "2000000000.9".to_owned(),
    ] {
        let claims = check(HS, &with("exp", &far)).unwrap();
        assert!(claims.expires_at_unix() >= 2_000_000_000);
    }
    let v = hs_validation().leeway(Duration::from_secs(u64::MAX));
    let token = hs(HS, &with("exp", &i64::MAX.to_string()));
    assert!(verify(&token, &hs_keys(), &v, now()).is_ok());
    // Leeway extends exp.
    let v = hs_validation().leeway(Duration::from_secs(60));
    let token = hs(HS, &with("exp", &(now_s - 30).to_string()));
    assert!(verify(&token, &hs_keys(), &v, now()).is_ok());
    // Time before 1970 is handled.
    assert_eq!(
        verify(
            &hs(HS, GOOD),
            &hs_keys(),
            &hs_validation(),
            UNIX_EPOCH - Duration::from_millis(1500)
        )
        .err(),
        Some(Error::NotYetValid)
    );
}

// Row 76.
#[test]
fn nbf_and_iat() {
    assert_eq!(
        check(HS, &with("nbf", "1750003600")).err(),
        Some(Error::NotYetValid)
    );
    assert_eq!(
        check(HS, &with("nbf", r#""1000""#)).err(),
        Some(Error::InvalidClaim("nbf"))
    );
    assert_eq!(
        check(HS, &with("nbf", "")).err(),
        Some(Error::MissingClaim("nbf"))
    );
    assert_eq!(
        check(HS, &with("iat", "1750003600")).err(),
        Some(Error::IssuedInFuture)
    );
    assert_eq!(
        check(HS, &with("iat", "")).err(),
        Some(Error::MissingClaim("iat"))
    );
    assert_eq!(
        check(HS, &with("iat", "null")).err(),
        Some(Error::InvalidClaim("iat"))
    );
    assert!(check(HS, &with("nbf", "1750000000")).is_ok());
}

// Row 77.
#[test]
fn aud_variants() {
    for bad in ["1", "{}", "[]", r#"[""]"#, r#"["x",1]"#, "null", r#""""#] {
        assert_eq!(
            check(HS, &with("aud", bad)).err(),
            Some(Error::InvalidClaim("aud")),
            "{bad}"
        );
    }
    assert_eq!(
        check(HS, &with("aud", r#""AUD1""#)).err(),
        Some(Error::WrongAudience)
    );
    assert_eq!(
        check(HS, &with("aud", "")).err(),
        Some(Error::MissingClaim("aud"))
    );
    assert!(check(HS, &with("aud", r#"["other","aud1"]"#)).is_ok());
    let many = format!("[{}]", vec![r#""aud1""#; 33].join(","));
    assert_eq!(
        check(HS, &with("aud", &many)).err(),
        Some(Error::InvalidClaim("aud"))
    );
    // Duplicate claim names (`aud` string + array).
    let dup = GOOD.replace(r#""aud":"aud1""#, r#""aud":"aud1","aud":["aud1"]"#);
    assert!(matches!(
        check(HS, &dup).err(),
        Some(Error::Json {
            problem: JsonProblem::DuplicateMember,
            ..
        })
    ));
}

// Row 78.
#[test]
fn iss_and_sub() {
    assert_eq!(
        check(HS, &with("iss", r#""iss2""#)).err(),
        Some(Error::WrongIssuer)
    );
    assert_eq!(
        check(HS, &with("iss", "")).err(),
        Some(Error::MissingClaim("iss"))
    );
    assert_eq!(
        check(HS, &with("sub", "")).err(),
        Some(Error::MissingClaim("sub"))
    );
    let long = format!("\"{}\"", "a".repeat(2_000));
    for bad in [
        r#""""#,
        long.as_str(),
        r#""jane\r\nX-Admin: 1""#,
        r#""jane\u0000""#,
        "7",
    ] {
        assert_eq!(
            check(HS, &with("sub", bad)).err(),
            Some(Error::InvalidClaim("sub"))
        );
    }
    let huge = format!("\"{}\"", "a".repeat(10_000));
    assert!(matches!(
        check(HS, &with("sub", &huge)).err(),
        Some(Error::TooLarge { .. })
    ));
    // Non-ASCII user names verify (the sidecar refuses to put them in a header: see sidecar tests).
    assert_eq!(
        check(HS, &with("sub", r#""d\u00e9faut""#))
            .unwrap()
            .subject(),
        "défaut"
    );
    // Keys of issuer A never validate a token claiming issuer B: issuers are per validation.
    let v =
        Validation::new(Issuer::new("iss2"), Audience::new("aud1")).algorithms(&[Algorithm::Hs256]);
    assert_eq!(
        verify(&hs(HS, GOOD), &hs_keys(), &v, now()).err(),
        Some(Error::WrongIssuer)
    );
}

// Row 79.
#[test]
fn oversized_inputs_fail_fast() {
    let dots = ".".repeat(1 << 20);
    assert_eq!(
        verify(&dots, &hs_keys(), &hs_validation(), now()).err(),
        Some(Error::TooLarge {
            what: "token",
            limit: addon_jwt::MAX_TOKEN_BYTES
        })
    );
    let big_header = format!(r#"{{"alg":"HS256","x":"{}"}}"#, "a".repeat(100_000));
    assert!(matches!(
        check(&big_header, GOOD).err(),
        Some(Error::TooLarge { .. })
    ));
    let header_3k = format!(r#"{{"alg":"HS256","x":"{}"}}"#, "a".repeat(3_000));
    assert!(matches!(
        check(&header_3k, GOOD).err(),
        Some(Error::TooLarge { what: "header", .. })
    ));
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let token = format!("{}.{}.", b64(HS.as_bytes()), b64(deep.as_bytes()));
    assert!(verify(&token, &hs_keys(), &hs_validation(), now()).is_err());
    let deep_claims = with("x", &format!("{}1{}", "[".repeat(40), "]".repeat(40)));
    assert_eq!(
        check(HS, &deep_claims).err(),
        Some(Error::Json {
            what: "payload",
            problem: JsonProblem::TooDeep
        })
    );
    let many = with("aud", &format!("[{}]", vec![r#""a""#; 1000].join(",")));
    assert!(check(HS, &many).is_err());
    let members: String = (0..300).map(|i| format!(r#","c{i}":1"#)).collect();
    let wide = GOOD.replacen('{', &format!("{{\"w\":0{members},"), 1);
    assert_eq!(
        check(HS, &wide).err(),
        Some(Error::Json {
            what: "payload",
            problem: JsonProblem::TooManyMembers
        })
    );
    // kid length bound.
    let kid = format!(r#"{{"alg":"HS256","kid":"{}"}}"#, "k".repeat(300));
    assert_eq!(check(&kid, GOOD).err(), Some(Error::InvalidKeyId));
}

// Row 80.
#[test]
fn hostile_jwks_are_rejected() {
    let ec = vector_key_jwk("ec-p256");
    let ec_v: Value = serde_json::from_str(&ec).unwrap();
    let bad = |doc: String, want: Error| {
        assert_eq!(KeySet::from_jwks(&doc).err(), Some(want), "{doc}");
    };
    bad(
        format!(r#"{{"keys":[{ec},{ec}]}}"#),
        Error::InvalidJwks(KeyProblem::DuplicateKeyId),
    );
    let mut private = ec_v.clone();
    private["d"] = Value::from("AAAA");
    bad(
        format!(r#"{{"keys":[{private}]}}"#),
        Error::InvalidJwks(KeyProblem::PrivateMaterial),
    );
    bad(
        r#"{"keys":[{"kty":"oct","k":"AAAA"}]}"#.to_owned(),
        Error::InvalidJwks(KeyProblem::PrivateMaterial),
    );
    let mut enc = ec_v.clone();
    enc["use"] = Value::from("enc");
    bad(
        format!(r#"{{"keys":[{enc}]}}"#),
        Error::InvalidJwks(KeyProblem::WrongUse),
    );
    let mut ops = ec_v.clone();
    ops["key_ops"] = serde_json::json!(["sign"]);
    bad(
        format!(r#"{{"keys":[{ops}]}}"#),
        Error::InvalidJwks(KeyProblem::WrongUse),
    );
    let n1024 = include_str!("../data/rsa1024_n.txt").trim();
    bad(
        format!(r#"{{"keys":[{{"kty":"RSA","n":"{n1024}","e":"AQAB"}}]}}"#),
        Error::InvalidJwks(KeyProblem::RsaParameters),
    );
    let rsa: Value = serde_json::from_str(&vector_key_jwk("rsa-rs256")).unwrap();
    let n = rsa["n"].as_str().unwrap();
    bad(
        format!(r#"{{"keys":[{{"kty":"RSA","n":"{n}","e":"AQ"}}]}}"#),
        Error::InvalidJwks(KeyProblem::RsaParameters),
    );
    bad(
        format!(r#"{{"keys":[{{"kty":"RSA","n":"{n}","e":"AAEAAQ"}}]}}"#),
        Error::InvalidJwks(KeyProblem::Parameter),
    );
    let mut off = ec_v.clone();
    off["y"] = Value::from(b64(&[1; 32]));
    bad(
        format!(r#"{{"keys":[{off}]}}"#),
        Error::InvalidJwks(KeyProblem::InvalidPoint),
    );
    let mut short = ec_v.clone();
    short["x"] = Value::from(b64(&[1; 31]));
    bad(
        format!(r#"{{"keys":[{short}]}}"#),
        Error::InvalidJwks(KeyProblem::Parameter),
    );
    let mut mismatch = ec_v.clone();
    mismatch["alg"] = Value::from("ES384");
    bad(
        format!(r#"{{"keys":[{mismatch}]}}"#),
        Error::InvalidJwks(KeyProblem::AlgorithmMismatch),
    );
    let huge = format!(r#"{{"keys":[],"pad":"{}"}}"#, "a".repeat(1 << 20));
    bad(
        huge,
        Error::TooLarge {
            what: "jwks",
            limit: addon_jwt::MAX_JWKS_BYTES,
        },
    );
    let many: Vec<Value> = (0..33)
        .map(|i| {
            let mut k = ec_v.clone();
            k["kid"] = Value::from(format!("k{i}"));
            k
        })
        .collect();
    bad(
        serde_json::json!({ "keys": many }).to_string(),
        Error::InvalidJwks(KeyProblem::TooManyKeys),
    );
    bad(
        r#"{"keys":{}}"#.to_owned(),
        Error::InvalidJwks(KeyProblem::Parameter),
    );
    bad(
        r#"{"keys":[]}"#.to_owned(),
        Error::InvalidJwks(KeyProblem::Empty),
    );
    // Unsupported key types are skipped, the rest load.
    let mixed = format!(
        r#"{{"keys":[{{"kty":"OKP","crv":"Ed448","x":"AAAA"}},{{"kty":"EC","crv":"P-521","x":"AA","y":"AA"}},{ec}]}}"#
    );
    assert_eq!(KeySet::from_jwks(&mixed).unwrap().len(), 1);
    // Small-order Ed25519 key.
    bad(
        format!(
            r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{}"}}]}}"#,
            b64(&[0; 32])
        ),
        Error::InvalidJwks(KeyProblem::InvalidPoint),
    );
}

// Row 81 and checklist K3.
#[test]
fn certificates_are_key_containers() {
    // SHA-1-signed certificate: the key is extracted.
    let sha1 = include_str!("../data/sha1_signed_cert.pem");
    assert_eq!(KeySet::from_pem(sha1, Algorithm::Rs256).unwrap().len(), 1);
    // Expired certificate (2000–2001): validity dates are not enforced, as kube-apiserver's
    // --service-account-key-file does not enforce them.
    let expired = include_str!("../data/expired_cert.pem");
    let keys = KeySet::from_pem(expired, Algorithm::Es256).unwrap();
    let minter =
        addon_jwt::SigningKey::from_pkcs8_pem(include_str!("../data/expired_cert_key.pem"))
            .unwrap();
    let token = minter
        .sign(
            &Issuer::new("iss1"),
            "jane",
            &Audience::new("aud1"),
            now(),
            Duration::from_secs(60),
        )
        .unwrap();
    assert!(verify(token.expose_secret(), &keys, &es_validation(), now()).is_ok());
    // Bundles: several certificates give several keys; junk after the last block is rejected.
    let rs = vector_key("rsa-rs256", "cert_pem");
    let ps = vector_key("rsa-ps256", "cert_pem");
    assert_eq!(
        KeySet::from_pem(&format!("{rs}{ps}"), Algorithm::Rs256)
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        KeySet::from_pem(&format!("{rs}junk"), Algorithm::Rs256).err(),
        Some(Error::InvalidKey(KeyProblem::Pem))
    );
    assert_eq!(
        KeySet::from_pem(&format!("junk{rs}"), Algorithm::Rs256).err(),
        Some(Error::InvalidKey(KeyProblem::Pem))
    );
    assert!(KeySet::from_pem("", Algorithm::Rs256).is_err());
    let private = vector_key("ec-p256", "private_pem");
    assert_eq!(
        KeySet::from_pem(&private, Algorithm::Es256).err(),
        Some(Error::InvalidKey(KeyProblem::Pem))
    );
}

// Checklist C1/C2.
#[test]
fn compact_serialization_and_base64_are_strict() {
    let token = hs(HS, GOOD);
    let keys = hs_keys();
    let v = hs_validation();
    let mut parts: Vec<&str> = token.split('.').collect();
    assert!(verify(&format!("{token}."), &keys, &v, now()).is_err());
    assert!(verify(&format!("{}.{}", parts[0], parts[1]), &keys, &v, now()).is_err());
    assert!(verify("", &keys, &v, now()).is_err());
    let json = format!(
        r#"{{"payload":"{}","protected":"{}","signature":"{}"}}"#,
        parts[1], parts[0], parts[2]
    );
    assert_eq!(
        verify(&json, &keys, &v, now()).err(),
        Some(Error::Malformed)
    );
    for bad_sig in [
        format!("{}=", parts[2]),
        format!(" {}", parts[2]),
        parts[2].replace('-', "+").replace('_', "/"),
    ] {
        parts[2] = &bad_sig;
        let t = parts.join(".");
        if t != token {
            assert!(verify(&t, &keys, &v, now()).is_err(), "{bad_sig}");
        }
        parts = token.split('.').collect();
    }
    let with_newline = format!("{}.{}\n.{}", parts[0], parts[1], parts[2]);
    assert_eq!(
        verify(&with_newline, &keys, &v, now()).err(),
        Some(Error::BadSignature)
    );
    let payload_newline = format!("{}.{}\n.{}", parts[0], parts[1], parts[2]);
    let resigned = hs_raw(HS.as_bytes(), GOOD.as_bytes(), SECRET);
    assert_ne!(payload_newline, resigned);
    // A MAC that covers the newline still fails: the payload is not canonical base64url.
    let input = format!("{}.{}\n", parts[0], parts[1]);
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(SECRET).unwrap();
    mac.update(input.as_bytes());
    let t = format!("{input}.{}", b64(&mac.finalize().into_bytes()));
    assert_eq!(
        verify(&t, &keys, &v, now()).err(),
        Some(Error::Base64 { segment: "payload" })
    );
}
