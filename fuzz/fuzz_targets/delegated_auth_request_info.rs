//! `RequestPath::parse` and `RequestInfo::resolve` on a request line (method, space, target):
//! never panics; a clean path is a fixed point.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::delegated_auth_request_info(data);
});
