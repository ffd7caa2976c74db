//! The integration tests, one module per area, in one test binary: one link, and the
//! dependencies' generic code compiled once for all of them.

#![allow(
    clippy::arithmetic_side_effects,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::unwrap_used,
    dead_code,
    unreachable_pub,
    reason = "tests fail loudly"
)]

mod behaviour;
mod common;
mod generation;
mod hostile;
mod kubeadm;
mod kubectl;
mod proptests;
mod secret_hygiene;
mod vectors;
