//! The forward proxy's HTTP/1.1 response decoder held to hyper's client on the same bytes.
//! Input: a byte choosing the method and the piece size, then the bytes of a response.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::addon_jwt_http1_differential(data);
});
