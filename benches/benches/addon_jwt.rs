//! addon-jwt: token verification beside the raw signature primitive and `jsonwebtoken`, the
//! sidecar cache-hit path beside a bare SHA-256 of the token, and minting with and without cache.

// `criterion_group!`/`criterion_main!` expand to undocumented functions.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::{Duration, UNIX_EPOCH};

use addon_jwt::{
    Algorithm, Audience, Decision, Issuer, KeySet, Minter, Sidecar, SigningKey, Validation, verify,
};
use base64::Engine as _;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::Value;
use sha2::Digest as _;
use signature::Verifier as _;

const VECTORS: &str = include_str!("../../crates/addon-jwt/tests/vectors/jwt.jsonl");
const AUD: &str = "https://kubernetes.default.svc";
const ISS: &str = "https://kubernetes.default.svc.cluster.local";

fn lines() -> Vec<Value> {
    VECTORS
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or(Value::Null))
        .collect()
}

fn field(lines: &[Value], kind: &str, key: &str, value: &str, out: &str) -> String {
    lines
        .iter()
        .find(|v| v["kind"] == kind && v[key] == value)
        .and_then(|v| v[out].as_str())
        .unwrap_or_default()
        .to_owned()
}

fn b64d(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s)
        .unwrap_or_default()
}

/// A raw signature check: `(signing input, signature) -> valid`.
type Primitive = Box<dyn Fn(&[u8], &[u8]) -> bool>;

/// The raw signature check over the same bytes: the floor for `verify`.
fn primitive(alg: Algorithm, public_pem: &str) -> Primitive {
    use p256::pkcs8::DecodePublicKey as _;
    match alg {
        Algorithm::Rs256 => {
            let key = rsa::RsaPublicKey::from_public_key_pem(public_pem).ok();
            let vk = key.map(rsa::pkcs1v15::VerifyingKey::<sha2::Sha256>::new);
            Box::new(move |m, s| {
                let (Some(vk), Ok(sig)) = (&vk, rsa::pkcs1v15::Signature::try_from(s)) else {
                    return false;
                };
                vk.verify(m, &sig).is_ok()
            })
        }
        Algorithm::Ps256 => {
            let key = rsa::RsaPublicKey::from_public_key_pem(public_pem).ok();
            let vk = key.map(rsa::pss::VerifyingKey::<sha2::Sha256>::new);
            Box::new(move |m, s| {
                let (Some(vk), Ok(sig)) = (&vk, rsa::pss::Signature::try_from(s)) else {
                    return false;
                };
                vk.verify(m, &sig).is_ok()
            })
        }
        Algorithm::Es256 => {
            let vk = p256::ecdsa::VerifyingKey::from_public_key_pem(public_pem).ok();
            Box::new(move |m, s| {
                let (Some(vk), Ok(sig)) = (&vk, p256::ecdsa::Signature::from_slice(s)) else {
                    return false;
                };
                vk.verify(m, &sig).is_ok()
            })
        }
        Algorithm::Es384 => {
            let vk = p384::ecdsa::VerifyingKey::from_public_key_pem(public_pem).ok();
            Box::new(move |m, s| {
                let (Some(vk), Ok(sig)) = (&vk, p384::ecdsa::Signature::from_slice(s)) else {
                    return false;
                };
                vk.verify(m, &sig).is_ok()
            })
        }
        _ => {
            let vk = ed25519_dalek::VerifyingKey::from_public_key_pem(public_pem).ok();
            Box::new(move |m, s| {
                let (Some(vk), Ok(sig)) = (&vk, ed25519_dalek::Signature::from_slice(s)) else {
                    return false;
                };
                vk.verify_strict(m, &sig).is_ok()
            })
        }
    }
}

/// The subjectPublicKey bytes of a SubjectPublicKeyInfo PEM (empty when it does not parse).
fn spki_key_bytes(public_pem: &str) -> Vec<u8> {
    let body: String = public_pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(body)
        .unwrap_or_default();
    spki::SubjectPublicKeyInfoRef::try_from(der.as_slice())
        .ok()
        .and_then(|info| info.subject_public_key.as_bytes().map(<[u8]>::to_vec))
        .unwrap_or_default()
}

/// The same check by ring (addon-jwt's `ring` backend), key parsed per check as ring does: the
/// floor for `verify` in a `ring` build.
fn ring_primitive(alg: Algorithm, public_pem: &str) -> Primitive {
    use ring::signature as sig;
    let key_bytes = spki_key_bytes(public_pem);
    let algorithm: &'static dyn sig::VerificationAlgorithm = match alg {
        Algorithm::Rs256 => &sig::RSA_PKCS1_2048_8192_SHA256,
        Algorithm::Ps256 => &sig::RSA_PSS_2048_8192_SHA256,
        Algorithm::Es256 => &sig::ECDSA_P256_SHA256_FIXED,
        Algorithm::Es384 => &sig::ECDSA_P384_SHA384_FIXED,
        _ => &sig::ED25519,
    };
    let key = sig::UnparsedPublicKey::new(algorithm, key_bytes);
    Box::new(move |m, s| key.verify(m, s).is_ok())
}

/// The same check by aws-lc-rs, addon-jwt's default backend, key parsed once as addon-jwt does:
/// the floor for `verify` in the default build.
fn aws_lc_primitive(alg: Algorithm, public_pem: &str) -> Primitive {
    use aws_lc_rs::signature as sig;
    let key_bytes = spki_key_bytes(public_pem);
    let algorithm: &'static dyn sig::VerificationAlgorithm = match alg {
        Algorithm::Rs256 => &sig::RSA_PKCS1_2048_8192_SHA256,
        Algorithm::Ps256 => &sig::RSA_PSS_2048_8192_SHA256,
        Algorithm::Es256 => &sig::ECDSA_P256_SHA256_FIXED,
        Algorithm::Es384 => &sig::ECDSA_P384_SHA384_FIXED,
        _ => &sig::ED25519,
    };
    match sig::ParsedPublicKey::new(algorithm, key_bytes) {
        Ok(key) => Box::new(move |m, s| key.verify_sig(m, s).is_ok()),
        Err(_) => Box::new(|_, _| false),
    }
}

/// The newest `jsonwebtoken` (11, aws-lc-rs backend): key and validation for the same token.
fn peer11(
    alg: Algorithm,
    public_pem: &str,
) -> (jsonwebtoken_11::DecodingKey, jsonwebtoken_11::Validation) {
    use jsonwebtoken_11::{Algorithm as A, DecodingKey};
    let (key, a) = match alg {
        Algorithm::Rs256 => (DecodingKey::from_rsa_pem(public_pem.as_bytes()), A::RS256),
        Algorithm::Ps256 => (DecodingKey::from_rsa_pem(public_pem.as_bytes()), A::PS256),
        Algorithm::Es256 => (DecodingKey::from_ec_pem(public_pem.as_bytes()), A::ES256),
        Algorithm::Es384 => (DecodingKey::from_ec_pem(public_pem.as_bytes()), A::ES384),
        _ => (DecodingKey::from_ed_pem(public_pem.as_bytes()), A::EdDSA),
    };
    let mut v = jsonwebtoken_11::Validation::new(a);
    v.set_audience(&[AUD]);
    v.set_issuer(&[ISS]);
    // As for `peer`: no wall-clock time comparison, everything else checked.
    v.validate_exp = false;
    v.validate_nbf = false;
    v.set_required_spec_claims(&["exp", "nbf", "iat", "iss", "sub", "aud"]);
    (key.unwrap_or_else(|_| DecodingKey::from_secret(b"")), v)
}

fn peer(alg: Algorithm, public_pem: &str) -> (jsonwebtoken::DecodingKey, jsonwebtoken::Validation) {
    use jsonwebtoken::{Algorithm as A, DecodingKey};
    let (key, a) = match alg {
        Algorithm::Rs256 => (DecodingKey::from_rsa_pem(public_pem.as_bytes()), A::RS256),
        Algorithm::Ps256 => (DecodingKey::from_rsa_pem(public_pem.as_bytes()), A::PS256),
        Algorithm::Es256 => (DecodingKey::from_ec_pem(public_pem.as_bytes()), A::ES256),
        Algorithm::Es384 => (DecodingKey::from_ec_pem(public_pem.as_bytes()), A::ES384),
        _ => (DecodingKey::from_ed_pem(public_pem.as_bytes()), A::EdDSA),
    };
    let mut v = jsonwebtoken::Validation::new(a);
    v.set_audience(&[AUD]);
    v.set_issuer(&[ISS]);
    // The reference tokens expired in 2025 and jsonwebtoken reads the wall clock: skip only the
    // time comparison; signature, header and claims parsing still run.
    v.validate_exp = false;
    v.validate_nbf = false;
    v.set_required_spec_claims(&["exp", "nbf", "iat", "iss", "sub", "aud"]);
    (key.unwrap_or_else(|_| DecodingKey::from_secret(b"")), v)
}

fn bench_verify(c: &mut Criterion) {
    let lines = lines();
    let now = at(1_750_000_000);
    let mut group = c.benchmark_group("addon_jwt/verify");
    for (alg, kid, case) in [
        (Algorithm::Rs256, "rsa-rs256", "RS256/valid_aud_string"),
        (Algorithm::Ps256, "rsa-ps256", "PS256/valid_aud_string"),
        (Algorithm::Es256, "ec-p256", "ES256/valid_aud_list"),
        (Algorithm::Es384, "ec-p384", "ES384/valid_aud_string"),
        (Algorithm::EdDsa, "ed25519", "EdDSA/valid_aud_list"),
    ] {
        let pem = field(&lines, "key", "kid", kid, "public_pem");
        let token = field(&lines, "token", "case", case, "token");
        let keys = KeySet::from_pem(&pem, alg).unwrap_or_default();
        let validation = Validation::new(Issuer::new(ISS), Audience::new(AUD)).algorithms(&[alg]);
        assert!(verify(&token, &keys, &validation, now).is_ok(), "{case}");
        let (signing_input, sig_b64) = token.rsplit_once('.').unwrap_or_default();
        let sig = b64d(sig_b64);
        let raw = primitive(alg, &pem);
        assert!(raw(signing_input.as_bytes(), &sig), "{case} primitive");
        let ring_raw = ring_primitive(alg, &pem);
        assert!(
            ring_raw(signing_input.as_bytes(), &sig),
            "{case} ring primitive"
        );
        let lc_raw = aws_lc_primitive(alg, &pem);
        assert!(
            lc_raw(signing_input.as_bytes(), &sig),
            "{case} aws-lc-rs primitive"
        );
        let (peer11_key, peer11_validation) = peer11(alg, &pem);
        assert!(
            jsonwebtoken_11::decode::<Value>(&token, &peer11_key, &peer11_validation).is_ok(),
            "{case} jsonwebtoken 11"
        );
        let (peer_key, peer_validation) = peer(alg, &pem);
        assert!(
            jsonwebtoken::decode::<Value>(&token, &peer_key, &peer_validation).is_ok(),
            "{case} jsonwebtoken"
        );
        group.throughput(Throughput::Bytes(token.len() as u64));
        group.bench_function(format!("ours/{alg}"), |b| {
            b.iter(|| verify(black_box(&token), &keys, &validation, now))
        });
        group.bench_function(format!("baseline/{alg}_signature"), |b| {
            b.iter(|| raw(black_box(signing_input.as_bytes()), black_box(&sig)))
        });
        group.bench_function(format!("baseline/{alg}_ring_signature"), |b| {
            b.iter(|| ring_raw(black_box(signing_input.as_bytes()), black_box(&sig)))
        });
        group.bench_function(format!("baseline/{alg}_aws_lc_signature"), |b| {
            b.iter(|| lc_raw(black_box(signing_input.as_bytes()), black_box(&sig)))
        });
        group.bench_function(format!("peer/jsonwebtoken11_{alg}"), |b| {
            b.iter(|| {
                jsonwebtoken_11::decode::<Value>(black_box(&token), &peer11_key, &peer11_validation)
            })
        });
        group.bench_function(format!("peer/jsonwebtoken_{alg}"), |b| {
            b.iter(|| jsonwebtoken::decode::<Value>(black_box(&token), &peer_key, &peer_validation))
        });
    }
    group.finish();
}

fn bench_sidecar(c: &mut Criterion) {
    let lines = lines();
    let now = at(1_750_000_000);
    let pem = field(&lines, "key", "kid", "ed25519", "public_pem");
    let token = field(&lines, "token", "case", "EdDSA/valid_aud_list", "token");
    let keys = KeySet::from_pem(&pem, Algorithm::EdDsa).unwrap_or_default();
    let sidecar = Sidecar::new(
        keys.clone(),
        Validation::new(Issuer::new(ISS), Audience::new(AUD)),
    );
    let uncached =
        Sidecar::new(keys, Validation::new(Issuer::new(ISS), Audience::new(AUD))).cache_capacity(0);
    let auth = format!("Bearer {token}");
    let headers = [
        ("Host", "dashboard.kube-system.svc"),
        ("Accept", "text/html"),
        ("Authorization", auth.as_str()),
        ("X-Authenticated-User", "admin"),
    ];
    assert!(matches!(sidecar.decide(headers, now), Decision::Forward(_)));
    let mut group = c.benchmark_group("addon_jwt/sidecar");
    group.throughput(Throughput::Bytes(token.len() as u64));
    group.bench_function("ours/decide_cache_hit", |b| {
        b.iter(|| sidecar.decide(black_box(headers), now))
    });
    let mut map = http::HeaderMap::new();
    for (name, value) in headers {
        if let (Ok(n), Ok(v)) = (
            http::HeaderName::from_bytes(name.as_bytes()),
            http::HeaderValue::from_str(value),
        ) {
            map.append(n, v);
        }
    }
    assert!(sidecar.decide_header_map(&mut map.clone(), now).is_ok());
    // In place on the proxy's own `HeaderMap`; the per-request copy of the map is set-up, not timed.
    group.bench_function("ours/decide_header_map_cache_hit", |b| {
        b.iter_batched_ref(
            || map.clone(),
            |m| sidecar.decide_header_map(black_box(m), now),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("ours/decide_uncached_eddsa", |b| {
        b.iter(|| uncached.decide(black_box(headers), now))
    });
    group.bench_function("baseline/sha256_of_token", |b| {
        b.iter(|| sha2::Sha256::digest(black_box(token.as_bytes())))
    });
    group.finish();
}

fn bench_mint(c: &mut Criterion) {
    let lines = lines();
    let now = at(1_750_000_000);
    let mut group = c.benchmark_group("addon_jwt/mint");
    for (kid, alg) in [("ec-p256", Algorithm::Es256), ("ed25519", Algorithm::EdDsa)] {
        let pem = field(&lines, "key", "kid", kid, "private_pem");
        let Ok(key) = SigningKey::from_pkcs8_pem(&pem) else {
            continue;
        };
        let mut cached = Minter::new(key, Issuer::new(ISS));
        let Ok(key) = SigningKey::from_pkcs8_pem(&pem) else {
            continue;
        };
        let mut uncached = Minter::new(key, Issuer::new(ISS)).cache_capacity(0);
        let _ = cached.mint("jane", &Audience::new("kube-system/dashboard"), now);
        group.bench_function(format!("ours/{alg}_cache_hit"), |b| {
            b.iter(|| {
                cached.mint(
                    black_box("jane"),
                    &Audience::new(black_box("kube-system/dashboard")),
                    now,
                )
            })
        });
        group.bench_function(format!("ours/{alg}_sign"), |b| {
            b.iter(|| {
                uncached.mint(
                    black_box("jane"),
                    &Audience::new(black_box("kube-system/dashboard")),
                    now,
                )
            })
        });
        let message = [0x61u8; 200];
        if alg == Algorithm::Es256 {
            use p256::pkcs8::DecodePrivateKey as _;
            use signature::Signer as _;
            if let Ok(sk) = p256::ecdsa::SigningKey::from_pkcs8_pem(&pem) {
                group.bench_function("baseline/es256_sign_200B", |b| {
                    b.iter(|| -> p256::ecdsa::Signature { sk.sign(black_box(&message)) })
                });
            }
        } else {
            use ed25519_dalek::pkcs8::DecodePrivateKey as _;
            use signature::Signer as _;
            if let Ok(sk) = ed25519_dalek::SigningKey::from_pkcs8_pem(&pem) {
                group.bench_function("baseline/ed25519_sign_200B", |b| {
                    b.iter(|| -> ed25519_dalek::Signature { sk.sign(black_box(&message)) })
                });
            }
        }
    }
    group.finish();
}

criterion_group!(benches, bench_verify, bench_sidecar, bench_mint);
criterion_main!(benches);

/// `UNIX_EPOCH` plus `secs` seconds (saturating at the epoch: never reached for these inputs).
fn at(secs: u64) -> std::time::SystemTime {
    UNIX_EPOCH
        .checked_add(Duration::from_secs(secs))
        .unwrap_or(UNIX_EPOCH)
}
