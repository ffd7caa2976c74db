//! `read_access_review` on arbitrary bytes: never panics; a failed evaluation is never an allow
//! nor a cacheable denial.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::delegated_auth_access_review(data);
});
