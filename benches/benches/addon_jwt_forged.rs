//! addon-jwt: the worst-case CPU cost of one forged token before authentication: a token with a
//! garbage signature against the largest key set allowed (`MAX_KEYS` RSA keys of the largest
//! allowed size, all for `RS256`), without `kid` and with a `kid` naming the last key.

// `criterion_group!`/`criterion_main!` expand to undocumented functions.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::{Duration, UNIX_EPOCH};

use addon_jwt::{Algorithm, KeySet, MAX_KEYS, verify};
use base64::Engine as _;
use criterion::{Criterion, criterion_group, criterion_main};

const RSA8192: &str = include_str!("../data/rsa8192_public.pem");
const RSA4096: &str = include_str!("../data/rsa4096_public.pem");

/// One key loaded with the largest RSA size the build allows.
fn load(pem: &str) -> KeySet {
    let policy = addon_jwt::KeyPolicy::new().max_rsa_bits(addon_jwt::MAX_RSA_BITS);
    KeySet::from_pem_with(pem, Algorithm::Rs256, &policy).unwrap_or_default()
}

/// `MAX_KEYS` copies of the key, named `k0`, `k1`, ...
fn key_set(pem: &str) -> KeySet {
    let mut set = KeySet::new();
    for i in 0..MAX_KEYS {
        if let Ok(named) = load(pem).with_key_id(&format!("k{i}")) {
            set.extend(named).unwrap_or_default();
        }
    }
    set
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A well-formed RS256 token whose signature (of the modulus' length) does not verify.
fn forged(kid: Option<&str>, modulus_bytes: usize) -> String {
    let header = match kid {
        Some(kid) => format!(r#"{{"alg":"RS256","kid":"{kid}"}}"#),
        None => r#"{"alg":"RS256"}"#.to_owned(),
    };
    let payload = r#"{"aud":["a"],"exp":1700000060,"iat":1700000000,"iss":"i","nbf":1700000000,"sub":"admin"}"#;
    format!(
        "{}.{}.{}",
        b64(header.as_bytes()),
        b64(payload.as_bytes()),
        b64(&vec![1u8; modulus_bytes])
    )
}

fn bench_forged(c: &mut Criterion) {
    let validation =
        addon_jwt::Validation::new(addon_jwt::Issuer::new("i"), addon_jwt::Audience::new("a"));
    let now = UNIX_EPOCH
        .checked_add(Duration::from_secs(1_700_000_030))
        .unwrap_or(UNIX_EPOCH);
    let mut g = c.benchmark_group("addon_jwt/forged_token");
    g.sample_size(10);
    for (name, pem, bytes) in [("rsa8192", RSA8192, 1024), ("rsa4096", RSA4096, 512)] {
        let keys = key_set(pem);
        assert_eq!(keys.len(), MAX_KEYS, "{name} key set");
        for (case, kid) in [("no_kid", None), ("kid_last", Some("k31"))] {
            let token = forged(kid, bytes);
            assert!(verify(&token, &keys, &validation, now).is_err());
            g.bench_function(format!("{case}/{MAX_KEYS}x{name}"), |b| {
                b.iter(|| black_box(verify(black_box(&token), &keys, &validation, now).is_err()))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench_forged);
criterion_main!(benches);
