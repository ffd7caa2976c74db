//! `CertificateRequest::from_pem` / `from_der` on arbitrary bytes: never panics; a parsed
//! request re-parses to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::tls_bootstrap_request(data);
});
