//! apimachinery's `ShortHumanDuration`.

use std::time::SystemTime;

/// apimachinery's `ShortHumanDuration` for a whole number of seconds (truncated toward zero):
/// `<invalid>` below −1 s, `0s` at −1 s, then `{s}s`, `{m}m`, `{h}h`, `{d}d`, `{y}y`.
///
/// ```
/// use bootstrap_token::short_human_duration;
/// assert_eq!(short_human_duration(-2), "<invalid>");
/// assert_eq!(short_human_duration(-1), "0s");
/// assert_eq!(short_human_duration(59), "59s");
/// assert_eq!(short_human_duration(3599), "59m");
/// assert_eq!(short_human_duration(86_399), "23h");
/// assert_eq!(short_human_duration(86_400 * 364), "364d");
/// assert_eq!(short_human_duration(86_400 * 365 * 2), "2y");
/// ```
#[must_use]
pub fn short_human_duration(seconds: i64) -> String {
    if seconds < -1 {
        "<invalid>".to_owned()
    } else if seconds < 0 {
        "0s".to_owned()
    } else if seconds < 60 {
        format!("{seconds}s")
    } else if seconds / 60 < 60 {
        format!("{}m", seconds / 60)
    } else if seconds / 3600 < 24 {
        format!("{}h", seconds / 3600)
    } else if seconds / 3600 < 24 * 365 {
        format!("{}d", seconds / 3600 / 24)
    } else {
        format!("{}y", seconds / (3600 * 24 * 365))
    }
}

/// Whole seconds of `to − from`, truncated toward zero, saturating like Go's `time.Sub`.
pub(crate) fn signed_seconds(to: SystemTime, from: SystemTime) -> i64 {
    const MAX: i64 = i64::MAX / 1_000_000_000;
    match to.duration_since(from) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(MAX).min(MAX),
        Err(e) => i64::try_from(e.duration().as_secs())
            .unwrap_or(MAX)
            .min(MAX)
            .saturating_neg(),
    }
}
