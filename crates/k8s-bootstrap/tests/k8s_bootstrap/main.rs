//! The integration tests, one module per area, in one test binary: one link, and the
//! dependencies' generic code compiled once for all of them.

#![allow(
    clippy::arithmetic_side_effects,
    clippy::disallowed_methods,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::type_complexity,
    clippy::unwrap_used,
    reason = "tests fail loudly"
)]

mod discovery_driver;
mod exec_kube_client;
#[cfg(feature = "exec")]
#[path = "../support/executable.rs"]
mod executable;
#[cfg(feature = "forward-proxy")]
mod forward_proxy_delegated;
#[cfg(feature = "forward-proxy")]
mod forward_proxy_tls;
#[cfg(feature = "forward-proxy")]
mod http1_differential;
mod loopback_csr_controllers;
mod node_certificate_manager;
mod node_certificate_rotation;
mod node_certificates;
#[cfg(feature = "forward-proxy")]
#[path = "../support/relay.rs"]
mod relay;
#[cfg(feature = "token")]
mod token_api;
