//! The wall clock. The cores take `now` as a parameter; the drivers are where it is read.

use std::time::SystemTime;

/// The current wall-clock time, for the cores' `now` parameters.
#[allow(
    clippy::disallowed_methods,
    reason = "the drivers are the one place the clock is read"
)]
pub(crate) fn now() -> SystemTime {
    SystemTime::now()
}

/// The monotonic clock, for measuring latencies and scheduling wake-ups.
#[allow(
    clippy::disallowed_methods,
    reason = "the drivers are the one place the clock is read"
)]
pub(crate) fn instant() -> std::time::Instant {
    std::time::Instant::now()
}
