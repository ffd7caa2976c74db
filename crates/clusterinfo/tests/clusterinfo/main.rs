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

mod ca_pins;
mod configmap;
mod discovery;
#[path = "support/fixtures.rs"]
mod fixtures;
mod kubeconfig;
mod proptests;
mod signer;
