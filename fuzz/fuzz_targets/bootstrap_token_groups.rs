//! `auth-extra-groups` parsing (`GetGroups`): never panic; the result is sorted, deduplicated and
//! contains the default group.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::bootstrap_token_groups(data);
});
