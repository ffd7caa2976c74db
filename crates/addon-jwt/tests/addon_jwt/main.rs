//! The integration tests, one module per area, in one test binary: one link, and the
//! dependencies' generic code compiled once for all of them.

#![allow(
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::unwrap_used,
    reason = "tests fail loudly"
)]

mod add_auth;
mod hostile;
mod http1;
mod jwt_vectors;
mod mint_and_serviceaccount;
mod private_key_pem;
mod proptests;
mod rfc_examples;
mod secrets;
mod sidecar;
mod work_bounds;
