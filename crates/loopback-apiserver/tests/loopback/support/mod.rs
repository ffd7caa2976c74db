//! What several test modules share: kubectl against the double, and an upstream for the
//! service proxy.

pub(crate) mod kubectl;
pub(crate) mod upstream;
