//! kubeadm `BootstrapToken` JSON: never panic; what parses validates without panicking, converts
//! to a Secret, and survives a JSON round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::bootstrap_token_kubeadm_json(data);
});
