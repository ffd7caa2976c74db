//! Token, token-ID, extra-group and Secret-name parsing: never panic; what parses prints back
//! byte-identically.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::bootstrap_token_parse(data);
});
