#![no_main]
//! `ClusterInfo::parse` on arbitrary bytes: never panics; a parsed value survives a
//! serialise/parse round trip unchanged.

use clusterinfo::ClusterInfo;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(info) = ClusterInfo::parse(data) {
        // The published layout names the cluster "", so compare what it carries.
        let again =
            ClusterInfo::parse(info.to_kubeconfig_yaml().as_bytes()).expect("own output parses");
        assert_eq!(again.to_kubeconfig_yaml(), info.to_kubeconfig_yaml());
        assert_eq!(
            (again.server(), again.trust(), again.extension()),
            (info.server(), info.trust(), info.extension())
        );
        let client = ClusterInfo::parse(info.to_client_kubeconfig_yaml().as_bytes())
            .expect("client kubeconfig parses");
        assert_eq!(client.server(), info.server());
    }
});
