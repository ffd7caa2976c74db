//! The sidecar header decision. Input: header lines `name:value` separated by `\n`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::addon_jwt_sidecar(data);
});
