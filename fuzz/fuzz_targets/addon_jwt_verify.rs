//! Token parsing and verification with a fixed key set (every algorithm, PEM and JWKS keys).
#![no_main]

use std::sync::OnceLock;
use std::time::{Duration, UNIX_EPOCH};

use addon_jwt::{Algorithm, KeySet, Validation, verify, verify_jws};
use libfuzzer_sys::fuzz_target;

const JWKS: &str = include_str!("../../vectors/jwt_jwks.json");

fn keys() -> &'static KeySet {
    static KEYS: OnceLock<KeySet> = OnceLock::new();
    KEYS.get_or_init(|| {
        let mut keys = KeySet::from_jwks(JWKS).expect("reference JWKS loads");
        keys.extend(KeySet::from_hmac_secret(
            b"fuzz-shared-secret-0123456789abcdef",
        ))
        .expect("room for one more key");
        keys
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(token) = std::str::from_utf8(data) else {
        return;
    };
    let validation = Validation::new(
        "https://kubernetes.default.svc",
        "https://kubernetes.default.svc.cluster.local",
    )
    .algorithms(&Algorithm::ALL)
    .leeway(Duration::from_secs(60));
    let now = UNIX_EPOCH + Duration::from_secs(1_750_000_000);
    if let Ok(claims) = verify(token, keys(), &validation, now) {
        assert!(!claims.subject().is_empty());
    }
    let _ = verify_jws(token, keys(), &Algorithm::ALL);
});
