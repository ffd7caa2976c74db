//! `AuthenticationConfigMap::from_json` on arbitrary bytes: never panics; the identity headers
//! it configures are removed by its own `remove_identity_headers`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::delegated_auth_configmap(data);
});
