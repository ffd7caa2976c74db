//! Token parsing and verification with a fixed key set (every algorithm, PEM and JWKS keys).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::addon_jwt_verify(data);
});
