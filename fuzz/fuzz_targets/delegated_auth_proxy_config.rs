//! kube-rbac-proxy's configuration in YAML, then a request target after a NUL: never panics;
//! attributes carry the lowercase method.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    k8s_bootstrap_fuzz_checks::delegated_auth_proxy_config(data);
});
