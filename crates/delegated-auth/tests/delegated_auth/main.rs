//! The integration tests, one module per area, in one test binary: one link, and the
//! dependencies' generic code compiled once for all of them.

#![allow(
    clippy::arithmetic_side_effects,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::type_complexity,
    clippy::unwrap_used,
    reason = "tests fail loudly"
)]

mod access_review;
mod authentication_configmap;
mod cache;
mod kubelet;
#[cfg(feature = "yaml")]
mod proptests;
#[cfg(feature = "yaml")]
mod rbac;
#[cfg(feature = "yaml")]
mod rbac_proxy_config;
mod request_info;
mod requestheader;
mod service_account;
mod support;
mod token_review;
mod x509;
