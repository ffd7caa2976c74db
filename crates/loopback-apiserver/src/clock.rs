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

/// The instant `after` from now, on tokio's clock (a request's deadline).
pub(crate) fn deadline(after: std::time::Duration) -> tokio::time::Instant {
    tokio::time::Instant::now()
        .checked_add(after)
        .unwrap_or_else(far_future)
}

/// An instant far enough ahead to be "never" (about 30 years, as tokio's own far future).
fn far_future() -> tokio::time::Instant {
    let now = tokio::time::Instant::now();
    now.checked_add(std::time::Duration::from_secs(86_400 * 365 * 30))
        .unwrap_or(now)
}
