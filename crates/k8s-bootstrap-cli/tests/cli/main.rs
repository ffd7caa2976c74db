//! The integration tests, one module per area, in one test binary: one link, and the
//! dependencies' generic code compiled once for all of them.

#![allow(
    clippy::arithmetic_side_effects,
    clippy::disallowed_methods,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::string_slice,
    clippy::unwrap_used,
    reason = "tests fail loudly"
)]

#[cfg(all(feature = "sidecar", feature = "loopback-server"))]
mod cli_add_auth_kubectl;
mod cli_completion;
#[cfg(all(feature = "controllers", feature = "loopback-server"))]
mod cli_controllers;
#[cfg(all(
    feature = "controllers",
    feature = "sidecar",
    feature = "loopback-server"
))]
mod cli_controllers_secure_metrics;
#[cfg(feature = "sidecar")]
mod cli_forward_proxy;
#[cfg(all(feature = "sidecar", feature = "loopback-server"))]
mod cli_forward_proxy_authenticators;
#[cfg(all(feature = "sidecar", feature = "loopback-server"))]
mod cli_forward_proxy_delegated;
#[cfg(all(feature = "sidecar", feature = "loopback-server"))]
mod cli_forward_proxy_services;
#[cfg(feature = "sidecar")]
mod cli_forward_proxy_tls;
mod cli_help;
mod cli_join_serving;
#[cfg(all(
    feature = "controllers",
    feature = "sidecar",
    feature = "loopback-server"
))]
mod cli_logs;
#[cfg(feature = "loopback-server")]
mod cli_node_certificates;
#[cfg(all(feature = "controllers", feature = "sidecar"))]
mod cli_service_flags;
#[cfg(all(feature = "controllers", feature = "loopback-server"))]
mod cli_serving_chain;
#[cfg(feature = "loopback-server")]
mod cli_tls_bootstrap;
#[cfg(feature = "loopback-server")]
mod cli_token_join;
#[path = "../support/process.rs"]
mod support;
