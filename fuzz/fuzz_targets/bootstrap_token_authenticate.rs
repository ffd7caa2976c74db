//! The authenticator over a fuzzed bearer token (first line) and a fuzzed Secret (the rest, as
//! JSON): never panic; an accepted token is exactly the Secret's token.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::bootstrap_token_authenticate(data);
});
