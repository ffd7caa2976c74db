//! JWKS document parsing.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(keys) = addon_jwt::KeySet::from_jwks(text) {
        assert!(!keys.is_empty() && keys.len() <= addon_jwt::MAX_KEYS);
    }
});
