//! RFC 3339 parsing as Go does it: never panic; accepted values sit in the years 0000-9999 and
//! the Secret expiry status agrees with the parser.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::bootstrap_token_expiration(data);
});
