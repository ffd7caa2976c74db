//! `bootstrap-token`: token parsing, generation, the authenticator over 10,000 token Secrets,
//! and Secret JSON parsing, each beside its floor (`baseline/...`) and peers in the same run.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing
)]

use std::collections::{BTreeMap, HashMap};
use std::hint::black_box;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bootstrap_token::{BootstrapToken, SecretObject, TokenId, authenticate};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::{Rng, RngCore, SeedableRng};
use subtle::ConstantTimeEq;

const TOKEN: &str = "abcdef.0123456789abcdef";

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_704_164_645)
}

fn token_parse(c: &mut Criterion) {
    let mut g = c.benchmark_group("bootstrap_token/token_parse");
    g.throughput(Throughput::Bytes(TOKEN.len() as u64));
    let re = regex::Regex::new(bootstrap_token::TOKEN_PATTERN).unwrap();
    g.bench_function("ours/from_str", |b| {
        b.iter(|| black_box(TOKEN).parse::<BootstrapToken>().unwrap())
    });
    g.bench_function("ours/from_str_reject", |b| {
        b.iter(|| {
            black_box("abcdef.0123456789abcdeF")
                .parse::<BootstrapToken>()
                .is_err()
        })
    });
    // What Kubernetes does: the token regex with captures (Go's regexp; here the regex crate).
    g.bench_function("baseline/regex_captures", |b| {
        b.iter(|| {
            let caps = re.captures(black_box(TOKEN)).unwrap();
            (
                caps.get(1).unwrap().as_str().len(),
                caps.get(2).unwrap().as_str().len(),
            )
        })
    });
    g.finish();
}

fn generation(c: &mut Criterion) {
    let mut g = c.benchmark_group("bootstrap_token/generate");
    g.throughput(Throughput::Bytes(23));
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    g.bench_function("ours/generate_stdrng", |b| {
        b.iter(|| BootstrapToken::generate_with(|buf| rng.fill_bytes(buf)).unwrap())
    });
    g.bench_function("ours/generate_os_rng", |b| {
        b.iter(|| BootstrapToken::generate().unwrap())
    });
    // Floor: drawing the 22 random bytes alone.
    g.bench_function("baseline/fill_22_bytes_stdrng", |b| {
        b.iter(|| {
            let mut buf = [0u8; 22];
            rng.fill_bytes(&mut buf);
            buf
        })
    });
    // Peer approach: rand's uniform integer sampling, 22 times.
    g.bench_function("peer/rand_random_range_x22", |b| {
        const CHARSET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
        b.iter(|| {
            let mut buf = [0u8; 22];
            for slot in &mut buf {
                *slot = CHARSET[rng.random_range(0..36)];
            }
            buf
        })
    });
    g.finish();
}

fn secrets(n: usize) -> HashMap<TokenId, SecretObject> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(2);
    let mut map = HashMap::with_capacity(n + 1);
    let add = |map: &mut HashMap<TokenId, SecretObject>, t: &BootstrapToken| {
        let data: BTreeMap<String, Vec<u8>> = [
            ("token-id", t.id().as_str()),
            ("token-secret", t.secret().expose_secret()),
            ("expiration", "2099-01-01T00:00:00Z"),
            ("usage-bootstrap-authentication", "true"),
            ("usage-bootstrap-signing", "true"),
            (
                "auth-extra-groups",
                "system:bootstrappers:kubeadm:default-node-token",
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.as_bytes().to_vec()))
        .collect();
        let s = SecretObject::new(
            t.id().secret_name(),
            "kube-system",
            "bootstrap.kubernetes.io/token",
            Some(data),
        );
        map.insert(*t.id(), s);
    };
    add(&mut map, &TOKEN.parse().unwrap());
    while map.len() < n {
        add(
            &mut map,
            &BootstrapToken::generate_with(|buf| rng.fill_bytes(buf)).unwrap(),
        );
    }
    map
}

fn authenticator(c: &mut Criterion) {
    let map = secrets(10_000);
    let mut g = c.benchmark_group("bootstrap_token/authenticate_10k");
    g.throughput(Throughput::Bytes(TOKEN.len() as u64));
    let lookup = |id: &TokenId| Ok::<_, ()>(map.get(id));
    g.bench_function("ours/accept", |b| {
        b.iter(|| authenticate(black_box(TOKEN), now(), lookup).unwrap())
    });
    g.bench_function("ours/reject_wrong_secret", |b| {
        b.iter(|| authenticate(black_box("abcdef.0123456789abcdeg"), now(), lookup).unwrap())
    });
    g.bench_function("ours/reject_unknown_id", |b| {
        b.iter(|| authenticate(black_box("zzzzzz.0123456789abcdef"), now(), lookup).unwrap())
    });
    g.bench_function("ours/reject_not_a_token", |b| {
        b.iter(|| authenticate(black_box("eyJhbGciOiJSUzI1NiJ9.e30.sig"), now(), lookup).unwrap())
    });
    // Floor: split, map lookup and a constant-time compare of the secret, nothing else.
    g.bench_function("baseline/lookup_and_ct_eq", |b| {
        b.iter(|| {
            let t = black_box(TOKEN).as_bytes();
            let id = TokenId::from_bytes(&t[..6]).unwrap();
            let s = map.get(&id).unwrap();
            bool::from(s.data("token-secret").unwrap().ct_eq(&t[7..]))
        })
    });
    g.finish();
}

fn secret_json(c: &mut Criterion) {
    let map = secrets(1);
    let json = map.values().next().unwrap().to_json().unwrap();
    let mut g = c.benchmark_group("bootstrap_token/secret_json");
    g.throughput(Throughput::Bytes(json.len() as u64));
    g.bench_function("ours/from_json", |b| {
        b.iter(|| SecretObject::from_json(black_box(json.as_bytes())).unwrap())
    });
    g.bench_function("baseline/serde_json_value", |b| {
        b.iter(|| serde_json::from_slice::<serde_json::Value>(black_box(json.as_bytes())).unwrap())
    });
    g.bench_function("peer/k8s_openapi_secret", |b| {
        b.iter(|| {
            serde_json::from_slice::<k8s_openapi::api::core::v1::Secret>(black_box(json.as_bytes()))
                .unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, token_parse, generation, authenticator, secret_json);
criterion_main!(benches);
