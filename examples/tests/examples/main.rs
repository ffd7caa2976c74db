//! The integration tests, one module per area, in one test binary: one link, and the
//! dependencies' generic code compiled once for all of them.

#![allow(
    clippy::arithmetic_side_effects,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::unwrap_used,
    reason = "tests fail loudly"
)]

mod addon_proxy;
mod canary_leaks;
mod clusterinfo_rbac_kubectl;
mod clusterinfo_tls_bootstrap_kubectl;
mod controller_metrics;
mod exec_kubectl;
mod exec_plugin_cache;
mod exec_policy_kubectl;
mod exec_runner;
mod forward_proxy_manifests;
mod join_demo;
mod jws_demo;
mod manifests;
