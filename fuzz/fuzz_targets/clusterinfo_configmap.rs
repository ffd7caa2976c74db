//! `ClusterInfoConfigMap::from_json` and `verify` on arbitrary bytes: never panic; a parsed
//! ConfigMap survives a JSON round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::clusterinfo_configmap(data);
});
