//! `KUBERNETES_EXEC_INFO` as a plugin reads it.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::exec_credential_exec_info(data);
});
