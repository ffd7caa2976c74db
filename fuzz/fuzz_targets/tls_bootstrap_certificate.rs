//! `accept_certificate`, `go_pem_blocks` and `Subject` on arbitrary bytes as
//! `status.certificate`: never panics; only the fixture node's certificate chained to the
//! fixture CA is accepted.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::tls_bootstrap_certificate(data);
});
