//! `CaBundle::from_pem` (and so `Pin::from_certificate_pem`) on arbitrary bytes: never panics;
//! a parsed bundle has one pin per certificate.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::clusterinfo_ca_bundle(data);
});
