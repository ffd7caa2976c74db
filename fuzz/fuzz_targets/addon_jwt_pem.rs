//! PEM public key and certificate loading; the first byte picks the algorithm.
#![no_main]

use addon_jwt::{Algorithm, KeySet};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((first, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let algs = Algorithm::ALL;
    let alg = algs[usize::from(*first) % algs.len()];
    if let Ok(keys) = KeySet::from_pem(text, alg) {
        assert!(alg != Algorithm::Hs256);
        assert!(!keys.is_empty());
    }
    let _ = KeySet::from_spki_der(rest, alg);
    let _ = addon_jwt::SigningKey::from_pkcs8_der(rest);
});
