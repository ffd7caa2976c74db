//! Replays every checked-in seed of the `addon_jwt_*` fuzz targets through the same entry points
//! the targets call, so a regression that crashes on a seed fails `cargo test`.

// Test helpers outside `#[test]` functions unwrap and index freely.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::arithmetic_side_effects
)]

use std::path::PathBuf;
use std::time::{Duration, UNIX_EPOCH};

use addon_jwt::{Algorithm, Decision, KeySet, Sidecar, SigningKey, Validation, verify, verify_jws};

const JWKS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../vectors/jwt_jwks.json"
));

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut out: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    assert!(!out.is_empty(), "no seeds in {}", dir.display());
    out.sort();
    out
}

fn validation() -> Validation {
    Validation::new(
        "https://kubernetes.default.svc",
        "https://kubernetes.default.svc.cluster.local",
    )
}

#[test]
fn replay_addon_jwt_verify() {
    let mut keys = KeySet::from_jwks(JWKS).unwrap();
    keys.extend(KeySet::from_hmac_secret(
        b"fuzz-shared-secret-0123456789abcdef",
    ))
    .unwrap();
    let v = validation()
        .algorithms(&Algorithm::ALL)
        .leeway(Duration::from_secs(60));
    let now = UNIX_EPOCH + Duration::from_secs(1_750_000_000);
    let mut accepted = 0;
    for seed in seeds("addon_jwt_verify") {
        let Ok(token) = std::str::from_utf8(&seed) else {
            continue;
        };
        if verify(token, &keys, &v, now).is_ok() {
            accepted += 1;
        }
        let _ = verify_jws(token, &keys, &Algorithm::ALL);
    }
    assert!(accepted > 0, "the corpus holds valid tokens");
}

#[test]
fn replay_addon_jwt_jwks() {
    let mut loaded = 0;
    for seed in seeds("addon_jwt_jwks") {
        let Ok(text) = std::str::from_utf8(&seed) else {
            continue;
        };
        if KeySet::from_jwks(text).is_ok() {
            loaded += 1;
        }
    }
    assert!(loaded > 0);
}

#[test]
fn replay_addon_jwt_pem() {
    let mut loaded = 0;
    for seed in seeds("addon_jwt_pem") {
        let Some((first, rest)) = seed.split_first() else {
            continue;
        };
        let Ok(text) = std::str::from_utf8(rest) else {
            continue;
        };
        let alg = Algorithm::ALL[usize::from(*first) % Algorithm::ALL.len()];
        if KeySet::from_pem(text, alg).is_ok() {
            loaded += 1;
        }
        let _ = KeySet::from_spki_der(rest, alg);
        let _ = SigningKey::from_pkcs8_der(rest);
    }
    assert!(loaded > 0);
}

#[test]
fn replay_addon_jwt_sidecar() {
    let mut sidecar =
        Sidecar::new(KeySet::from_jwks(JWKS).unwrap(), validation()).cache_capacity(64);
    let now = UNIX_EPOCH + Duration::from_secs(1_750_000_000);
    let mut forwarded = 0;
    for seed in seeds("addon_jwt_sidecar") {
        let headers: Vec<(String, &[u8])> = seed
            .split(|b| *b == b'\n')
            .filter_map(|line| {
                let colon = line.iter().position(|b| *b == b':')?;
                let (name, value) = line.split_at(colon);
                Some((String::from_utf8_lossy(name).into_owned(), value.get(1..)?))
            })
            .collect();
        if let Decision::Forward(f) =
            sidecar.decide(headers.iter().map(|(n, v)| (n.as_str(), *v)), now)
        {
            forwarded += 1;
            assert_eq!(
                f.headers().last().unwrap().1,
                b"system:serviceaccount:default:oracle"
            );
        }
    }
    assert!(forwarded > 0);
}
