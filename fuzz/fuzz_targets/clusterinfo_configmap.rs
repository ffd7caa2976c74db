#![no_main]
//! `ClusterInfoConfigMap::from_json` and `verify` on arbitrary bytes: never panic; a parsed
//! ConfigMap survives a JSON round trip.

use clusterinfo::ClusterInfoConfigMap;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(cm) = ClusterInfoConfigMap::from_json(data) {
        let again =
            ClusterInfoConfigMap::from_json(cm.to_json().as_bytes()).expect("own output parses");
        assert_eq!(again, cm);
        let token = "abcdef.0123456789abcdef".parse().expect("valid token");
        if let Ok(kubeconfig) = cm.verify(&token) {
            assert_eq!(Some(kubeconfig), cm.kubeconfig());
        }
    }
});
