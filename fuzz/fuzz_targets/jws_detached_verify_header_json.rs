//! `jws_detached::verify` (standards mode) with arbitrary protected-header JSON behind a valid
//! MAC, so the fuzzer reaches the header scanner directly. If the header is accepted, it must be
//! a JSON object whose `alg` is `HS256` and `kid` is `abcdef`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::jws_detached_verify_header_json(data);
});
