//! The integration tests, one module per area, in one test binary (one link, and the
//! dependencies' generic code compiled once for all of them).

#![allow(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::unwrap_used,
    reason = "tests fail loudly"
)]

mod bootstrap;
mod csr;
mod edges;
mod kube_client;
mod kubectl;
mod kubectl_auth;
mod kubectl_default_policy;
mod kubectl_proxy;
mod nodes;
mod service_proxy;
mod support;
