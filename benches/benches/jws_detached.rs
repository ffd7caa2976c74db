//! `jws-detached`: signing and verifying the Kubernetes detached JWS, beside the floor
//! (`baseline/hmac_sha256`: HMAC-SHA-256 over the exact, precomputed signing input) and peers
//! (`jsonwebtoken`'s lowest-level HS256 functions over the same precomputed signing input, and
//! a straightforward `base64` + `hmac` composition that builds the signing input itself).

use std::hint::black_box;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use criterion::{BenchmarkId, Criterion, Throughput};
use hmac::{Hmac, Mac};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey};
use jws_detached::PreparedPayload;
use k8s_bootstrap_benches::BENCH_KUBECONFIG;
use sha2::Sha256;

const KID: &str = "abcdef";
const KEY: &[u8] = b"0123456789abcdef";
const HEADER_B64: &str = "eyJhbGciOiJIUzI1NiIsImtpZCI6ImFiY2RlZiJ9";

fn contents() -> Vec<(&'static str, Vec<u8>)> {
    let kubeconfig = BENCH_KUBECONFIG.as_bytes().to_vec();
    let repeat = |n: usize| {
        kubeconfig
            .iter()
            .copied()
            .cycle()
            .take(n)
            .collect::<Vec<u8>>()
    };
    vec![
        ("0B", Vec::new()),
        ("2KiB", kubeconfig.clone()),
        ("64KiB", repeat(64 * 1024)),
        ("1MiB", repeat(1024 * 1024)),
    ]
}

fn signing_input(content: &[u8]) -> Vec<u8> {
    format!("{HEADER_B64}.{}", URL_SAFE_NO_PAD.encode(content)).into_bytes()
}

fn hmac_sha256(key: &[u8], input: &[u8]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap_or_else(|_| unreachable!());
    mac.update(input);
    mac.finalize().into_bytes().into()
}

/// What a straightforward implementation does: encode, concatenate, MAC, encode, concatenate.
fn naive_sign(content: &[u8], key: &[u8]) -> String {
    let input = format!("{HEADER_B64}.{}", URL_SAFE_NO_PAD.encode(content));
    let tag = hmac_sha256(key, input.as_bytes());
    format!("{HEADER_B64}..{}", URL_SAFE_NO_PAD.encode(tag))
}

fn sign(c: &mut Criterion) {
    let mut group = c.benchmark_group("jws_sign");
    let jwt_key = EncodingKey::from_secret(KEY);
    for (name, content) in contents() {
        let input = signing_input(&content);
        let payload = PreparedPayload::new(&content).unwrap_or_else(|_| unreachable!());
        group.throughput(Throughput::Bytes(content.len() as u64));
        group.bench_with_input(
            BenchmarkId::new("baseline/hmac_sha256", name),
            &input,
            |b, i| b.iter(|| hmac_sha256(black_box(KEY), black_box(i))),
        );
        group.bench_with_input(BenchmarkId::new("ours/sign", name), &content, |b, c| {
            b.iter(|| jws_detached::sign(black_box(c), black_box(KID), black_box(KEY)))
        });
        group.bench_with_input(
            BenchmarkId::new("ours/prepared_sign", name),
            &payload,
            |b, p| b.iter(|| p.sign(black_box(KID), black_box(KEY))),
        );
        group.bench_with_input(
            BenchmarkId::new("peer/jsonwebtoken_crypto_sign", name),
            &input,
            |b, i| {
                b.iter(|| {
                    jsonwebtoken::crypto::sign(black_box(i), black_box(&jwt_key), Algorithm::HS256)
                })
            },
        );
        group.bench_with_input(
            BenchmarkId::new("peer/naive_base64_hmac", name),
            &content,
            |b, c| b.iter(|| naive_sign(black_box(c), black_box(KEY))),
        );
    }
    group.finish();
}

fn verify(c: &mut Criterion) {
    let mut group = c.benchmark_group("jws_verify");
    let jwt_key = DecodingKey::from_secret(KEY);
    for (name, content) in contents() {
        let input = signing_input(&content);
        let detached = jws_detached::sign(&content, KID, KEY).unwrap_or_else(|_| unreachable!());
        let signature = detached
            .split_once("..")
            .map(|(_, s)| s.to_string())
            .unwrap_or_default();
        let payload = PreparedPayload::new(&content).unwrap_or_else(|_| unreachable!());
        group.throughput(Throughput::Bytes(content.len() as u64));
        group.bench_with_input(
            BenchmarkId::new("baseline/hmac_sha256", name),
            &input,
            |b, i| b.iter(|| hmac_sha256(black_box(KEY), black_box(i))),
        );
        group.bench_with_input(
            BenchmarkId::new("ours/verify_kubernetes", name),
            &content,
            |b, c| {
                b.iter(|| {
                    jws_detached::verify_kubernetes(black_box(&detached), black_box(c), KID, KEY)
                })
            },
        );
        group.bench_with_input(BenchmarkId::new("ours/verify", name), &content, |b, c| {
            b.iter(|| jws_detached::verify(black_box(&detached), black_box(c), KID, KEY))
        });
        group.bench_with_input(
            BenchmarkId::new("ours/prepared_verify_kubernetes", name),
            &payload,
            |b, p| b.iter(|| p.verify_kubernetes(black_box(&detached), KID, KEY)),
        );
        group.bench_with_input(
            BenchmarkId::new("peer/jsonwebtoken_crypto_verify", name),
            &input,
            |b, i| {
                b.iter(|| {
                    jsonwebtoken::crypto::verify(
                        black_box(&signature),
                        black_box(i),
                        black_box(&jwt_key),
                        Algorithm::HS256,
                    )
                })
            },
        );
    }
    group.finish();
}

/// The bootstrap signer's reconcile: one kubeconfig signed for N tokens.
fn sign_many(c: &mut Criterion) {
    const TOKENS: usize = 100;
    let content = BENCH_KUBECONFIG.as_bytes();
    let tokens: Vec<(String, Vec<u8>)> = (0..TOKENS)
        .map(|i| (format!("tok{i:03}"), format!("{i:016}").into_bytes()))
        .collect();
    let inputs: Vec<(Vec<u8>, &[u8])> = tokens
        .iter()
        .map(|(kid, key)| {
            let header = URL_SAFE_NO_PAD.encode(format!(r#"{{"alg":"HS256","kid":"{kid}"}}"#));
            let input = format!("{header}.{}", URL_SAFE_NO_PAD.encode(content)).into_bytes();
            (input, key.as_slice())
        })
        .collect();
    let mut group = c.benchmark_group("jws_sign_100_tokens");
    group.throughput(Throughput::Bytes(
        content.len().saturating_mul(TOKENS) as u64
    ));
    group.bench_function("baseline/hmac_sha256", |b| {
        b.iter(|| {
            for (input, key) in &inputs {
                black_box(hmac_sha256(black_box(key), black_box(input)));
            }
        })
    });
    group.bench_function("ours/prepared_sign", |b| {
        b.iter(|| {
            let payload =
                PreparedPayload::new(black_box(content)).unwrap_or_else(|_| unreachable!());
            for (kid, key) in &tokens {
                black_box(payload.sign(black_box(kid), black_box(key)).ok());
            }
        })
    });
    group.bench_function("ours/sign", |b| {
        b.iter(|| {
            for (kid, key) in &tokens {
                black_box(
                    jws_detached::sign(black_box(content), black_box(kid), black_box(key)).ok(),
                );
            }
        })
    });
    group.bench_function("peer/jsonwebtoken_crypto_sign", |b| {
        let keys: Vec<EncodingKey> = tokens
            .iter()
            .map(|(_, k)| EncodingKey::from_secret(k))
            .collect();
        b.iter(|| {
            for ((input, _), key) in inputs.iter().zip(&keys) {
                black_box(jsonwebtoken::crypto::sign(black_box(input), key, Algorithm::HS256).ok());
            }
        })
    });
    group.finish();
}

/// The groups of this file (what `criterion_group!` expands to, with a doc comment).
fn benches() {
    let mut c = Criterion::default().configure_from_args();
    sign(&mut c);
    verify(&mut c);
    sign_many(&mut c);
}
/// Runs the groups (what `criterion_main!` expands to, with a doc comment).
fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
