//! `ClusterInfo::parse` on arbitrary bytes: never panics; a parsed value survives a
//! serialise/parse round trip unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::clusterinfo_kubeconfig(data);
});
