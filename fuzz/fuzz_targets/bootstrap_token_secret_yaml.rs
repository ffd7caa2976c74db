//! Secret YAML parsing and everything that reads a parsed Secret: never panic; a parsed
//! Secret survives a JSON round trip; Debug never shows the token secret.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::bootstrap_token_secret_yaml(data);
});
