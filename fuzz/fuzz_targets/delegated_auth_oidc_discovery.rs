//! `OidcDiscovery::from_json` on arbitrary bytes: never panics; an accepted document has an
//! issuer and an https key set URL.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::delegated_auth_oidc_discovery(data);
});
