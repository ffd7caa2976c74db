//! An on-disk credential cache entry, as a plugin reads it back.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::exec_credential_cache_entry(data);
});
