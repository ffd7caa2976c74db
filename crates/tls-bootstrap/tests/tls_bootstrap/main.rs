//! The integration tests, one module per area, in one test binary: one link, and the
//! dependencies' generic code compiled once for all of them.

#![allow(
    clippy::arithmetic_side_effects,
    clippy::disallowed_methods,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::unwrap_used,
    reason = "tests fail loudly"
)]

mod accept;
mod api;
mod conditions;
mod flow;
mod hostile_rows;
mod keys;
#[cfg(all(feature = "k8s-openapi", feature = "yaml"))]
mod object;
mod proptests;
mod rotation;
mod rules;
mod serving;
mod serving_proptests;
mod signer_serving;
mod support;
