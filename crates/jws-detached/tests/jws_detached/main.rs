//! The integration tests, one module per area, in one test binary: one link, and the
//! dependencies' generic code compiled once for all of them.

#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::unwrap_used,
    reason = "tests fail loudly"
)]

mod hostile;
mod proptests;
mod secrets;
mod vectors;
