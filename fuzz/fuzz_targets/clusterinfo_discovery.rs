//! The discovery state machine fed arbitrary server responses: it always finishes (no hang),
//! never panics, and only succeeds with a kubeconfig signed by the token.
//!
//! Input: a control byte, then responses separated by `\0\0`; each response starts with a
//! kind byte (status or transport error).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::clusterinfo_discovery(data);
});
