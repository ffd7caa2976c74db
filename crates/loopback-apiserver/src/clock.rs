//! The wall clock. The cores take `now` as a parameter; the double is where it is read.

use std::time::SystemTime;

/// The current wall-clock time, for the cores' `now` parameters.
#[allow(
    clippy::disallowed_methods,
    reason = "the server is the one place the clock is read"
)]
pub(crate) fn now() -> SystemTime {
    SystemTime::now()
}
