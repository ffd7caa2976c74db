//! Helpers shared by the integration tests.
#![allow(dead_code, unreachable_pub)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bootstrap_token::SecretObject;

/// The canary token of `docs/hostile-inputs.md`.
pub const TOKEN: &str = "abcdef.0123456789abcdef";
/// Its secret half: must never show up in Debug/Display/error output.
pub const CANARY: &str = "0123456789abcdef";

/// 2024-01-02T03:04:05Z.
pub fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_704_164_645)
}

/// A data map from string pairs.
pub fn data(pairs: &[(&str, &str)]) -> BTreeMap<String, Vec<u8>> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.as_bytes().to_vec()))
        .collect()
}

/// A valid, authenticating, signing, never-expiring token Secret for [`TOKEN`], with `extra`
/// data pairs replacing or adding keys.
pub fn secret_with(extra: &[(&str, &str)]) -> SecretObject {
    let mut d = data(&[
        ("token-id", "abcdef"),
        ("token-secret", CANARY),
        ("usage-bootstrap-authentication", "true"),
        ("usage-bootstrap-signing", "true"),
    ]);
    for (k, v) in extra {
        d.insert((*k).to_owned(), v.as_bytes().to_vec());
    }
    SecretObject::new(
        "bootstrap-token-abcdef",
        "kube-system",
        "bootstrap.kubernetes.io/token",
        Some(d),
    )
}

/// `secret` without the data key `key`.
pub fn without(secret: &SecretObject, key: &str) -> SecretObject {
    let mut d = secret.data_map().cloned().unwrap_or_default();
    d.remove(key);
    SecretObject::new(
        secret.name(),
        secret.namespace(),
        secret.secret_type(),
        Some(d),
    )
}

/// Asserts that neither `Debug` nor (when given) `Display` output contains the canary secret.
pub fn assert_no_canary(debug: &dyn std::fmt::Debug) {
    let s = format!("{debug:?}");
    assert!(!s.contains(CANARY), "secret leaked in Debug: {s}");
    let alt = format!("{debug:#?}");
    assert!(!alt.contains(CANARY), "secret leaked in Debug: {alt}");
}

/// Asserts that an error's `Debug` and `Display` contain no part of the canary secret.
pub fn assert_error_clean(e: &bootstrap_token::Error) {
    assert_no_canary(e);
    let s = e.to_string();
    assert!(!s.contains(CANARY), "secret leaked in Display: {s}");
    assert!(!s.contains("0123456789abcde"), "partial secret leaked: {s}");
}
