//! The kubelet's request attributes against its own table.
//!
//! Source of the rows: kubernetes/kubernetes, `pkg/kubelet/server/auth_test.go`
//! (`AuthzTestCases`, `TestGetRequestAttributes`): every path with each of POST, GET, PUT,
//! PATCH and DELETE, the gate off and on. Path templates (`{podNamespace}`) are filled with
//! sample values. The values are theirs; the format is ours.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "tests"
)]

use std::sync::Arc;

use delegated_auth::{
    Attributes, KubeletAuthz, RequestPath, ResourceAttributes, UserInfo, kubelet_attributes,
};

/// path | subresources with the gate off | extra subresource tried first with the gate on.
const PATHS: &[(&str, &str, &str)] = &[
    ("/attach/ns/pod/container", "proxy", ""),
    ("/attach/ns/pod/uid/container", "proxy", ""),
    ("/checkpoint/ns/pod/container", "checkpoint", ""),
    ("/configz", "proxy", "configz"),
    ("/statusz", "proxy", "statusz"),
    ("/containerLogs/ns/pod/container", "proxy", ""),
    ("/debug/flags/v", "proxy", ""),
    ("/debug/pprof/profile", "proxy", ""),
    ("/exec/ns/pod/container", "proxy", ""),
    ("/exec/ns/pod/uid/container", "proxy", ""),
    ("/healthz", "proxy", "healthz"),
    ("/healthz/log", "proxy", "healthz"),
    ("/healthz/ping", "proxy", "healthz"),
    ("/healthz/syncloop", "proxy", "healthz"),
    ("/logs/", "log", ""),
    ("/logs/kubelet.log", "log", ""),
    ("/metrics", "metrics", ""),
    ("/metrics/slis", "metrics", ""),
    ("/metrics/cadvisor", "metrics", ""),
    ("/metrics/probes", "metrics", ""),
    ("/metrics/resource", "metrics", ""),
    ("/pods/", "proxy", "pods"),
    ("/portForward/ns/pod", "proxy", ""),
    ("/portForward/ns/pod/uid", "proxy", ""),
    ("/run/ns/pod/container", "proxy", ""),
    ("/run/ns/pod/uid/container", "proxy", ""),
    ("/runningpods/", "proxy", "pods"),
    ("/stats/", "stats", ""),
    ("/stats/summary", "stats", ""),
];

const METHODS: &[(&str, &str)] = &[
    ("POST", "create"),
    ("GET", "get"),
    ("PUT", "update"),
    ("PATCH", "patch"),
    ("DELETE", "delete"),
];

fn expected(verb: &str, subs: &[&str]) -> Vec<Attributes> {
    subs.iter()
        .map(|s| {
            Attributes::resource(
                UserInfo::new("phibby"),
                verb,
                ResourceAttributes::new("", "v1", "nodes")
                    .with_subresource(*s)
                    .with_name("test"),
            )
        })
        .collect()
}

#[test]
fn kubelet_request_attributes_table() {
    let user = Arc::new(UserInfo::new("phibby"));
    for (path, coarse, fine) in PATHS {
        let p = RequestPath::parse(path).unwrap();
        for (method, verb) in METHODS {
            let got = kubelet_attributes(&user, method, &p, "test", KubeletAuthz::Coarse);
            assert_eq!(got, expected(verb, &[coarse]), "{method} {path} (coarse)");
            let subs: Vec<&str> = if fine.is_empty() {
                vec![coarse]
            } else {
                vec![fine, coarse]
            };
            let got = kubelet_attributes(&user, method, &p, "test", KubeletAuthz::FineGrained);
            assert_eq!(got, expected(verb, &subs), "{method} {path} (fine-grained)");
        }
    }
}

#[test]
fn other_methods_and_lookalike_paths() {
    let user = Arc::new(UserInfo::new("u"));
    let p = RequestPath::parse("/metrics").unwrap();
    let a = kubelet_attributes(&user, "HEAD", &p, "n", KubeletAuthz::FineGrained);
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].verb, "");
    for (path, sub) in [
        ("/metricsx", "proxy"),
        ("/statsz", "proxy"),
        ("/stats", "stats"),
        ("/logs", "log"),
        ("/spec/", "proxy"),
        ("/podsx", "proxy"),
        ("/pods", "pods"),
        ("/", "proxy"),
    ] {
        let p = RequestPath::parse(path).unwrap();
        let a = kubelet_attributes(&user, "GET", &p, "n", KubeletAuthz::FineGrained);
        let delegated_auth::Target::Resource(r) = &a[0].target else {
            panic!()
        };
        assert_eq!(r.subresource, sub, "{path}");
    }
}
