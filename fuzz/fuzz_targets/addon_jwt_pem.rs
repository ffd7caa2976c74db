//! PEM public key and certificate loading; the first byte picks the algorithm.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::addon_jwt_pem(data);
});
