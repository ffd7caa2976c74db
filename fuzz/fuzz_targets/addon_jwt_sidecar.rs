//! The sidecar header decision. Input: header lines `name:value` separated by `\n`.
#![no_main]

use std::sync::Mutex;
use std::time::{Duration, UNIX_EPOCH};

use addon_jwt::{Decision, KeySet, Sidecar, Validation};
use libfuzzer_sys::fuzz_target;

const JWKS: &str = include_str!("../../vectors/jwt_jwks.json");

static SIDECAR: Mutex<Option<Sidecar>> = Mutex::new(None);

fuzz_target!(|data: &[u8]| {
    let headers: Vec<(String, &[u8])> = data
        .split(|b| *b == b'\n')
        .filter_map(|line| {
            let colon = line.iter().position(|b| *b == b':')?;
            let (name, value) = line.split_at(colon);
            Some((String::from_utf8_lossy(name).into_owned(), value.get(1..)?))
        })
        .collect();
    let mut guard = SIDECAR.lock().unwrap_or_else(|e| e.into_inner());
    let sidecar = guard.get_or_insert_with(|| {
        let keys = KeySet::from_jwks(JWKS).expect("reference JWKS loads");
        Sidecar::new(
            keys,
            Validation::new(
                "https://kubernetes.default.svc",
                "https://kubernetes.default.svc.cluster.local",
            ),
        )
        .cache_capacity(64)
    });
    let now = UNIX_EPOCH + Duration::from_secs(1_750_000_000);
    if let Decision::Forward(f) = sidecar.decide(headers.iter().map(|(n, v)| (n.as_str(), *v)), now)
    {
        let users = f
            .headers()
            .filter(|(n, _)| {
                n.replace('_', "-")
                    .eq_ignore_ascii_case("x-authenticated-user")
            })
            .count();
        assert_eq!(users, 1);
        assert_eq!(
            f.headers().last().map(|(n, _)| n),
            Some("X-Authenticated-User")
        );
        assert!(
            !f.headers()
                .any(|(n, _)| n.eq_ignore_ascii_case("authorization"))
        );
    }
});
