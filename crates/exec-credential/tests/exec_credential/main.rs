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

mod authenticator;
mod debug_output;
mod exec_config;
mod keypair;
mod kubectl_config_view;
mod output_validation;
mod plugin_side;
mod policy;
mod proptests;
mod rfc3339_vectors;
mod secrets;
