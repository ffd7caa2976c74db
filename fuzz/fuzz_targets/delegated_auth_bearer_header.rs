//! `BearerTokenRef::from_authorization` on arbitrary header values, against Kubernetes'
//! reading written out plainly: the same token or the same refusal, never shown in `Debug`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::delegated_auth_bearer_header(data);
});
