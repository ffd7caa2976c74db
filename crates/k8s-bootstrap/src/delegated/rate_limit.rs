//! The review rate limit: a token bucket, refilled continuously at a rate up to a burst, read
//! at the layer's clock (so that tests move time instead of sleeping).

use std::num::NonZeroU32;
use std::time::SystemTime;

/// Nanoseconds per second, the bucket's unit of one review.
const NANOS_PER_REVIEW: u128 = 1_000_000_000;

/// How many reviews (TokenReviews and SubjectAccessReviews together) a
/// [`DelegatedAuthLayer`](super::DelegatedAuthLayer) may send: `per_second` on average, at most
/// `burst` at once after a quiet time. A request whose review would exceed it is answered 429
/// (`TooManyRequests`, with `Retry-After`), and nothing is cached; requests decided from the
/// caches never count. Renewals of what the caches held allowed have a bucket of their own of
/// the same size ([`DelegatedAuthLayer::review_rate_limit`](super::DelegatedAuthLayer::review_rate_limit)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReviewRateLimit {
    per_second: NonZeroU32,
    burst: NonZeroU32,
}

impl ReviewRateLimit {
    /// `per_second` reviews on average, `burst` at most at once.
    #[must_use]
    pub fn new(per_second: NonZeroU32, burst: NonZeroU32) -> ReviewRateLimit {
        ReviewRateLimit { per_second, burst }
    }

    /// The average rate, in reviews per second.
    #[must_use]
    pub fn per_second(&self) -> NonZeroU32 {
        self.per_second
    }

    /// The most reviews at once.
    #[must_use]
    pub fn burst(&self) -> NonZeroU32 {
        self.burst
    }
}

/// The bucket: `available` in billionths of a review, refilled by `per_second` billionths per
/// nanosecond elapsed.
#[derive(Debug)]
pub(super) struct TokenBucket {
    limit: ReviewRateLimit,
    available: u128,
    last: Option<SystemTime>,
}

impl TokenBucket {
    /// A full bucket.
    pub(super) fn new(limit: ReviewRateLimit) -> TokenBucket {
        TokenBucket {
            limit,
            available: capacity(limit),
            last: None,
        }
    }

    /// Takes one review at `now`; when none is available, `Err` with the whole seconds (at
    /// least 1) until one is. A clock that goes back refills nothing.
    pub(super) fn try_take(&mut self, now: SystemTime) -> Result<(), u32> {
        let per_second = u128::from(self.limit.per_second.get());
        if let Some(last) = self.last
            && let Ok(elapsed) = now.duration_since(last)
        {
            let refill = elapsed.as_nanos().saturating_mul(per_second);
            self.available = self
                .available
                .saturating_add(refill)
                .min(capacity(self.limit));
        }
        if self.last.is_none_or(|last| now > last) {
            self.last = Some(now);
        }
        if let Some(left) = self.available.checked_sub(NANOS_PER_REVIEW) {
            self.available = left;
            return Ok(());
        }
        // The nanoseconds until one review is available, rounded up to whole seconds.
        let missing = NANOS_PER_REVIEW.saturating_sub(self.available);
        let nanos = missing.div_ceil(per_second);
        let seconds = nanos.div_ceil(NANOS_PER_REVIEW).max(1);
        Err(u32::try_from(seconds).unwrap_or(u32::MAX))
    }
}

fn capacity(limit: ReviewRateLimit) -> u128 {
    u128::from(limit.burst.get()).saturating_mul(NANOS_PER_REVIEW)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    fn limit(per_second: u32, burst: u32) -> ReviewRateLimit {
        ReviewRateLimit::new(
            NonZeroU32::new(per_second).unwrap(),
            NonZeroU32::new(burst).unwrap(),
        )
    }

    #[test]
    fn a_burst_then_the_rate() {
        let t0 = UNIX_EPOCH + Duration::from_secs(1_000_000);
        let mut b = TokenBucket::new(limit(2, 3));
        for _ in 0..3 {
            assert_eq!(b.try_take(t0), Ok(()));
        }
        assert_eq!(b.try_take(t0), Err(1));
        // Half a second at 2/s refills one review.
        let t1 = t0 + Duration::from_millis(500);
        assert_eq!(b.try_take(t1), Ok(()));
        assert_eq!(b.try_take(t1), Err(1));
        // A long quiet time refills the burst, not more.
        let t2 = t1 + Duration::from_secs(3600);
        for _ in 0..3 {
            assert_eq!(b.try_take(t2), Ok(()));
        }
        assert_eq!(b.try_take(t2), Err(1));
    }

    #[test]
    fn retry_after_is_the_wait_for_one_review_in_whole_seconds() {
        let t0 = UNIX_EPOCH + Duration::from_secs(1_000_000);
        let mut slow = TokenBucket::new(limit(1, 1));
        assert_eq!(slow.try_take(t0), Ok(()));
        assert_eq!(slow.try_take(t0), Err(1));
        assert_eq!(slow.try_take(t0 + Duration::from_millis(999)), Err(1));
        assert_eq!(slow.try_take(t0 + Duration::from_secs(1)), Ok(()));
    }

    #[test]
    fn a_clock_that_goes_back_refills_nothing() {
        let t0 = UNIX_EPOCH + Duration::from_secs(1_000_000);
        let mut b = TokenBucket::new(limit(1, 1));
        assert_eq!(b.try_take(t0), Ok(()));
        let back = t0 - Duration::from_secs(100);
        assert_eq!(b.try_take(back), Err(1));
        // Time is counted from the latest reading, not from the earlier one.
        assert_eq!(b.try_take(t0 + Duration::from_millis(500)), Err(1));
        assert_eq!(b.try_take(t0 + Duration::from_secs(1)), Ok(()));
    }

    #[test]
    fn huge_rates_and_gaps_saturate() {
        let mut b = TokenBucket::new(limit(u32::MAX, u32::MAX));
        let far = UNIX_EPOCH + Duration::from_secs(u64::from(u32::MAX) * 100);
        assert_eq!(b.try_take(UNIX_EPOCH), Ok(()));
        assert_eq!(b.try_take(far), Ok(()));
    }
}
