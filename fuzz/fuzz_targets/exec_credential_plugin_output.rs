//! Plugin stdout through the client's decoder and client-go's output rules.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::exec_credential_plugin_output(data);
});
