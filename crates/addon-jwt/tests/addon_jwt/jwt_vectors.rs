//! Every line of `vectors/jwt.jsonl` (tokens signed by PyJWT, keys as PEM, certificate and JWK)
//! verified to its verdict at the meta line's `now`.
//!
//! Where a line carries `strict_expect`, the verdict chosen is listed in `STRICT_CHOICES`:
//! * `*/sig_with_base64_padding`: `strict_expect` (invalid). RFC 7515 §2 forbids padding; a
//!   signature must have exactly one accepted encoding.
//! * `*/iat_in_future`: `expect` (invalid). `iat` in the future beyond the leeway is rejected by
//!   default, as kube-apiserver does ("service account token is issued in the future").

// Test helpers outside `#[test]` functions unwrap and index freely.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use std::collections::HashMap;
use std::time::{Duration, UNIX_EPOCH};

use addon_jwt::{Algorithm, Audience, Error, Issuer, KeySet, Validation, verify};
use serde_json::Value;

const VECTORS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/vectors/jwt.jsonl"
));
const JWKS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/vectors/jwt_jwks.json"
));

/// Cases where we pick `strict_expect` over `expect`, by case-name suffix.
const STRICT_CHOICES: [&str; 1] = ["/sig_with_base64_padding"];

struct Vectors {
    now: u64,
    keys: Vec<Value>,
    jwks: Value,
    tokens: Vec<Value>,
}

fn load() -> Vectors {
    let mut now = 0;
    let mut keys = Vec::new();
    let mut jwks = Value::Null;
    let mut tokens = Vec::new();
    for line in VECTORS.lines().filter(|l| !l.is_empty()) {
        let v: Value = serde_json::from_str(line).unwrap();
        match v["kind"].as_str().unwrap() {
            "meta" => now = v["now"].as_u64().unwrap(),
            "key" => keys.push(v),
            "jwks" => jwks = v["jwks"].clone(),
            "token" => tokens.push(v),
            other => panic!("unknown line kind {other}"),
        }
    }
    assert!(now > 0 && !keys.is_empty() && !tokens.is_empty());
    Vectors {
        now,
        keys,
        jwks,
        tokens,
    }
}

/// Every way of loading the key named `kid`: PEM, certificate, single-key JWKS.
fn key_sets(v: &Vectors, kid: &str) -> Vec<(&'static str, KeySet)> {
    let key = v.keys.iter().find(|k| k["kid"] == kid).unwrap();
    let alg: Algorithm = key["alg"].as_str().unwrap().parse().unwrap();
    if alg == Algorithm::Hs256 {
        let secret = key["secret"].as_str().unwrap();
        return vec![(
            "secret",
            KeySet::from_hmac_secret(secret.as_bytes()).unwrap(),
        )];
    }
    let jwks = serde_json::json!({ "keys": [key["jwk"].clone()] }).to_string();
    vec![
        (
            "public_pem",
            KeySet::from_pem(key["public_pem"].as_str().unwrap(), alg).unwrap(),
        ),
        (
            "cert_pem",
            KeySet::from_pem(key["cert_pem"].as_str().unwrap(), alg).unwrap(),
        ),
        ("jwk", KeySet::from_jwks(&jwks).unwrap()),
    ]
}

fn expected(t: &Value) -> bool {
    let case = t["case"].as_str().unwrap();
    let verdict = if STRICT_CHOICES.iter().any(|s| case.ends_with(s)) {
        t["strict_expect"].as_str().unwrap()
    } else {
        t["expect"].as_str().unwrap()
    };
    verdict == "valid"
}

#[test]
fn every_token_line_gets_its_verdict() {
    let v = load();
    let jwks = KeySet::from_jwks(&v.jwks.to_string()).unwrap();
    let mut checked = 0;
    let mut by_alg: HashMap<String, (usize, usize)> = HashMap::new();
    for t in &v.tokens {
        let case = t["case"].as_str().unwrap();
        let token = t["token"].as_str().unwrap();
        let spec = &t["verify"];
        let algs: Vec<Algorithm> = spec["algorithms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().parse().unwrap())
            .collect();
        let validation = Validation::new(
            Issuer::new(spec["issuer"].as_str().unwrap()),
            Audience::new(spec["audience"].as_str().unwrap()),
        )
        .algorithms(&algs)
        .leeway(Duration::from_secs(spec["leeway"].as_u64().unwrap()));
        let now = UNIX_EPOCH + Duration::from_secs(spec["now"].as_u64().unwrap_or(v.now));
        let key_name = spec["key"].as_str().unwrap();
        let sets: Vec<(&str, KeySet)> = if key_name == "jwks" {
            vec![("jwks", jwks.clone())]
        } else if let Some(kid) = key_name.strip_suffix(":public_pem") {
            // A misconfigured verifier holding the PEM text "as its key": the only keys this
            // crate can build from PEM text are public keys bound to their own algorithm.
            let key = v.keys.iter().find(|k| k["kid"] == kid).unwrap();
            let pem = key["public_pem"].as_str().unwrap();
            assert!(KeySet::from_pem(pem, Algorithm::Hs256).is_err(), "{case}");
            vec![(
                "public_pem",
                KeySet::from_pem(pem, key["alg"].as_str().unwrap().parse().unwrap()).unwrap(),
            )]
        } else {
            key_sets(&v, key_name)
        };
        let want = expected(t);
        for (how, keys) in &sets {
            let got = verify(token, keys, &validation, now);
            assert_eq!(
                got.is_ok(),
                want,
                "{case} with {how}: got {got:?}, reason: {}",
                t["reason"]
            );
            if let Ok(claims) = got {
                assert!(!claims.subject().is_empty());
                assert!(
                    claims
                        .audiences()
                        .iter()
                        .any(|a| a == spec["audience"].as_str().unwrap())
                );
            }
        }
        let alg = case.split('/').next().unwrap().to_owned();
        let e = by_alg.entry(alg).or_default();
        e.0 += 1;
        if want {
            e.1 += 1;
        }
        checked += 1;
    }
    assert_eq!(checked, v.tokens.len());
    // Every algorithm has valid and invalid lines.
    for alg in ["RS256", "PS256", "ES256", "ES384", "EdDSA", "HS256"] {
        let (n, ok) = by_alg[alg];
        assert!(ok > 0 && ok < n, "{alg}: {ok}/{n}");
    }
}

#[test]
fn strict_expect_choices_are_exercised() {
    let v = load();
    let with_strict: Vec<&str> = v
        .tokens
        .iter()
        .filter(|t| t["strict_expect"].is_string())
        .map(|t| t["case"].as_str().unwrap())
        .collect();
    assert!(!with_strict.is_empty());
    for case in with_strict {
        assert!(
            case.ends_with("/sig_with_base64_padding") || case.ends_with("/iat_in_future"),
            "undocumented strict_expect line {case}"
        );
    }
}

#[test]
fn specific_failures_have_specific_errors() {
    let v = load();
    let find = |case: &str| v.tokens.iter().find(|t| t["case"] == case).unwrap();
    let check = |case: &str, want: Error| {
        let t = find(case);
        let spec = &t["verify"];
        let key = spec["key"].as_str().unwrap();
        let keys = if key == "jwks" {
            KeySet::from_jwks(JWKS).unwrap()
        } else {
            key_sets(&v, key).remove(0).1
        };
        let algs: Vec<Algorithm> = spec["algorithms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().parse().unwrap())
            .collect();
        let validation = Validation::new(
            Issuer::new(spec["issuer"].as_str().unwrap()),
            Audience::new(spec["audience"].as_str().unwrap()),
        )
        .algorithms(&algs);
        let now = UNIX_EPOCH + Duration::from_secs(v.now);
        let got = verify(t["token"].as_str().unwrap(), &keys, &validation, now);
        assert_eq!(got.err(), Some(want), "{case}");
    };
    check("RS256/exp_equals_now", Error::Expired);
    check("ES256/expired", Error::Expired);
    check("ES256/not_yet_valid", Error::NotYetValid);
    check("ES256/iat_in_future", Error::IssuedInFuture);
    check("ES256/wrong_aud_list", Error::WrongAudience);
    check("ES256/wrong_iss", Error::WrongIssuer);
    check("RS256/missing_exp", Error::MissingClaim("exp"));
    check("ES256/tampered_payload", Error::BadSignature);
    check("RS256/tampered_signature", Error::BadSignature);
    check("RS256/alg_none_mixed_case", Error::UnsupportedAlgorithm);
    check("ES256/alg_none", Error::UnsupportedAlgorithm);
    check("ES256/four_segments", Error::Malformed);
    check("RS256/kid_missing_from_jwks", Error::UnknownKeyId);
    check(
        "ES256/kid_points_to_other_key",
        Error::NoMatchingKey(Algorithm::Es256),
    );
    check(
        "ES384/alg_header_relabelled",
        Error::NoMatchingKey(Algorithm::Es256),
    );
    check(
        "PS256/ps256_token_verifier_allows_rs256_only",
        Error::AlgorithmNotAllowed(Algorithm::Ps256),
    );
    check(
        "RS256/sig_with_base64_padding",
        Error::Base64 {
            segment: "signature",
        },
    );
    check(
        "ES256/sig_nonzero_base64_pad_bits",
        Error::Base64 {
            segment: "signature",
        },
    );
    check("RS256/empty_aud_list", Error::InvalidClaim("aud"));
}

#[test]
fn jwks_file_matches_the_jwks_line() {
    let v = load();
    let from_file = KeySet::from_jwks(JWKS).unwrap();
    let from_line = KeySet::from_jwks(&v.jwks.to_string()).unwrap();
    let ids = |k: &KeySet| {
        k.keys()
            .map(|(kid, alg)| (kid.map(str::to_owned), alg))
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&from_file), ids(&from_line));
    assert_eq!(from_file.len(), 5);
}
