//! `jws_detached::verify` (standards mode) on arbitrary input: `<detached JWS>\0<content>`,
//! kid `abcdef`, key `0123456789abcdef`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::jws_detached_verify(data);
});
