//! `CertificateSigningRequest::from_yaml` on arbitrary bytes: never panics, stays within its
//! budget; a parsed object round-trips through JSON.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::tls_bootstrap_csr_yaml(data);
});
