//! RBAC objects (JSON, or YAML unless the input starts with `{`) into a `Policy`: never
//! panics; decisions agree with `rules_for`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::delegated_auth_rbac_objects(data);
});
