//! Failed attempts in a row per object, for a controller's error policy: the delay before the
//! next attempt doubles with each failure, from `Options::retry_delay` up to
//! `Options::max_retry_delay`, and a success forgets the object.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// Failed attempts in a row, by object name (only objects whose last attempt failed).
pub(super) struct Retries {
    retry_delay: Duration,
    max_retry_delay: Duration,
    failures: Mutex<HashMap<String, u32>>,
}

impl Retries {
    pub(super) fn new(retry_delay: Duration, max_retry_delay: Duration) -> Retries {
        Retries {
            retry_delay,
            max_retry_delay,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// The delay before the next attempt for `name`, after one more failure: the retry delay
    /// doubled per failure in a row, at most the maximum.
    pub(super) fn next_retry(&self, name: &str) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        let n = failures.entry(name.to_owned()).or_insert(0);
        let delay = self
            .retry_delay
            .saturating_mul(1_u32.checked_shl(*n).unwrap_or(u32::MAX))
            .min(self.max_retry_delay);
        *n = n.saturating_add(1);
        delay
    }

    /// Forgets the failures of `name` (it succeeded, or is no longer needed).
    pub(super) fn succeeded(&self, name: &str) {
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        if !failures.is_empty() {
            failures.remove(name);
        }
    }
}
