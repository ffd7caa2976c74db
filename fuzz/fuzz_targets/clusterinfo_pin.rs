//! `Pin::from_str` on arbitrary text: never panics; a parsed pin displays as its input,
//! lower-cased.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::clusterinfo_pin(data);
});
