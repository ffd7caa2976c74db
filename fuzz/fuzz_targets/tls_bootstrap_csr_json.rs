//! `CertificateSigningRequest::from_json` on arbitrary bytes: never panics; a parsed object
//! round-trips; the approver and signer never panic on it.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::tls_bootstrap_csr_json(data);
});
