//! `GetExpiration`: what an `expiration` value means at a given instant.

use std::time::{Duration, SystemTime};

use crate::rfc3339;

/// Go's `time.Duration` is an `int64` of nanoseconds; `time.Sub` saturates at its maximum.
const GO_MAX_DURATION: Duration = Duration::from_nanos(i64::MAX.unsigned_abs());

/// The expiry state of a token at a given `now`, as cluster-bootstrap's `GetExpiration`
/// computes it.
///
/// ```
/// use bootstrap_token::ExpirationStatus;
/// use std::time::{Duration, UNIX_EPOCH};
/// let now = UNIX_EPOCH + Duration::from_secs(1_704_164_645); // 2024-01-02T03:04:05Z
/// assert_eq!(ExpirationStatus::at(b"", now), ExpirationStatus::Never);
/// assert!(ExpirationStatus::at(b"2024-01-02T03:04:05Z", now).is_expired()); // at the instant
/// assert!(ExpirationStatus::at(b"garbage", now).is_expired());
/// assert_eq!(
///     ExpirationStatus::at(b"2024-01-02T04:04:05Z", now).time_remaining(),
///     Duration::from_secs(3600),
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExpirationStatus {
    /// No `expiration` (missing or empty): the token never expires.
    Never,
    /// Expires later.
    Valid {
        /// The expiration instant.
        at: SystemTime,
        /// `at − now`, saturated at Go's largest duration (about 292 years) like `time.Sub`.
        remaining: Duration,
    },
    /// Expired: `at <= now` (a token is expired at exactly its expiration instant).
    Expired {
        /// The expiration instant.
        at: SystemTime,
    },
    /// The value is not an RFC 3339 time Go accepts: treated as expired.
    Unparseable,
}

impl ExpirationStatus {
    /// Evaluates an `expiration` data value at `now`.
    #[must_use]
    pub fn at(value: &[u8], now: SystemTime) -> Self {
        if value.is_empty() {
            return Self::Never;
        }
        let Ok(at) = rfc3339::parse(value).and_then(rfc3339::GoTime::to_system_time) else {
            return Self::Unparseable;
        };
        Self::from_instant(at, now)
    }

    /// The state of an expiration instant at `now`.
    #[must_use]
    pub fn from_instant(at: SystemTime, now: SystemTime) -> Self {
        match at.duration_since(now) {
            Ok(remaining) if !remaining.is_zero() => Self::Valid {
                at,
                remaining: remaining.min(GO_MAX_DURATION),
            },
            _ => Self::Expired { at },
        }
    }

    /// `HasExpired`: expired or unparseable.
    #[must_use]
    pub fn is_expired(&self) -> bool {
        matches!(self, Self::Expired { .. } | Self::Unparseable)
    }

    /// The time remaining; zero when expired, unparseable or never expiring (Go's
    /// `timeRemaining` half of `GetExpiration`).
    #[must_use]
    pub fn time_remaining(&self) -> Duration {
        match self {
            Self::Valid { remaining, .. } => *remaining,
            _ => Duration::ZERO,
        }
    }
}
