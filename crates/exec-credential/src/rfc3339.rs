//! RFC 3339 timestamps exactly as Go's `time.Parse(time.RFC3339, s)` reads them, and as
//! `metav1.Time` writes them (`t.UTC().Format(time.RFC3339)`: whole seconds, `Z`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Why a timestamp was rejected. The input itself is never part of the reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimeError {
    /// The text does not follow the layout `2006-01-02T15:04:05Z07:00`.
    Layout,
    /// A field is out of range (month, day, hour, minute, second or zone offset).
    Range(&'static str),
    /// Text after the zone.
    ExtraText,
    /// The instant cannot be represented as a `SystemTime` on this platform.
    Unrepresentable,
}

impl core::fmt::Display for TimeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            TimeError::Layout => f.write_str("does not match the RFC 3339 layout"),
            TimeError::Range(what) => write!(f, "{what} out of range"),
            TimeError::ExtraText => f.write_str("extra text after the time zone"),
            TimeError::Unrepresentable => f.write_str("not representable on this platform"),
        }
    }
}

#[cfg(test)]
/// Parses `s` as Go's `time.Parse(time.RFC3339, s)` does and returns the instant.
#[cfg(test)]
pub(crate) fn parse(s: &str) -> Result<SystemTime, TimeError> {
    let (secs, nanos) = parse_unix(s)?;
    to_system_time(secs, nanos)
}

/// Parses to Unix seconds (UTC) and nanoseconds.
pub(crate) fn parse_unix(s: &str) -> Result<(i64, u32), TimeError> {
    let b = s.as_bytes();
    let mut c = Cursor { b, pos: 0 };
    // Year: exactly four ASCII digits (newer Go rejects a sign).
    let year = c.fixed_digits(4)?;
    c.literal(b'-')?;
    let month = c.fixed_digits(2)?;
    if !(1..=12).contains(&month) {
        return Err(TimeError::Range("month"));
    }
    c.literal(b'-')?;
    let day = c.fixed_digits(2)?;
    c.literal(b'T')?;
    // Hour: one or two digits (Go's stdHour is not fixed-width).
    let hour = c.one_or_two_digits()?;
    if hour >= 24 {
        return Err(TimeError::Range("hour"));
    }
    c.literal(b':')?;
    let minute = c.fixed_digits(2)?;
    if minute >= 60 {
        return Err(TimeError::Range("minute"));
    }
    c.literal(b':')?;
    let second = c.fixed_digits(2)?;
    if second >= 60 {
        return Err(TimeError::Range("second"));
    }
    // Fractional seconds: '.' or ',' followed by at least one digit; all digits are consumed,
    // digits after the ninth are truncated.
    let mut nanos: u32 = 0;
    if matches!(c.peek(0), Some(b'.' | b',')) && c.peek(1).is_some_and(|d| d.is_ascii_digit()) {
        c.pos = c.pos.saturating_add(1);
        let mut n = 0u32;
        while let Some(d) = c.peek(0).filter(u8::is_ascii_digit) {
            if n < 9 {
                nanos = nanos.saturating_mul(10).saturating_add(digit(d));
                n = n.saturating_add(1);
            }
            c.pos = c.pos.saturating_add(1);
        }
        while n < 9 {
            nanos = nanos.saturating_mul(10);
            n = n.saturating_add(1);
        }
    }
    // Zone: 'Z' or ±hh:mm.
    let offset: i64 = match c.peek(0) {
        Some(b'Z') => {
            c.pos = c.pos.saturating_add(1);
            0
        }
        Some(sign @ (b'+' | b'-')) => {
            if c.peek(3) != Some(b':') {
                return Err(TimeError::Layout);
            }
            c.pos = c.pos.saturating_add(1);
            let hh = c.fixed_digits(2)?;
            c.pos = c.pos.saturating_add(1);
            let mm = c.fixed_digits(2)?;
            if hh > 24 {
                return Err(TimeError::Range("time zone offset hour"));
            }
            if mm > 60 {
                return Err(TimeError::Range("time zone offset minute"));
            }
            let off = i64::from(hh)
                .saturating_mul(3600)
                .saturating_add(i64::from(mm).saturating_mul(60));
            if sign == b'-' {
                off.saturating_neg()
            } else {
                off
            }
        }
        _ => return Err(TimeError::Layout),
    };
    if c.pos != b.len() {
        return Err(TimeError::ExtraText);
    }
    if day < 1 || day > days_in_month(i64::from(year), month) {
        return Err(TimeError::Range("day"));
    }
    let days = days_from_civil(i64::from(year), month, day);
    // All values are small (|days| < 4e6), so this cannot overflow an i64.
    let local = days
        .saturating_mul(86_400)
        .saturating_add(i64::from(hour).saturating_mul(3600))
        .saturating_add(i64::from(minute).saturating_mul(60))
        .saturating_add(i64::from(second));
    Ok((local.saturating_sub(offset), nanos))
}

/// Formats as `metav1.Time` marshals: UTC, whole seconds, `Z`.
pub(crate) fn format(t: SystemTime) -> String {
    let (secs, _) = to_unix(t);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let (hh, mm, ss) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    if y < 0 {
        format!(
            "-{:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z",
            y.unsigned_abs()
        )
    } else {
        format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z")
    }
}

/// Unix seconds (floored) and nanoseconds of `t`, saturating far outside the representable range.
pub(crate) fn to_unix(t: SystemTime) -> (i64, u32) {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (
            i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            d.subsec_nanos(),
        ),
        Err(e) => {
            let d = e.duration();
            let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            if d.subsec_nanos() == 0 {
                (secs.saturating_neg(), 0)
            } else {
                (
                    secs.saturating_neg().saturating_sub(1),
                    1_000_000_000u32.saturating_sub(d.subsec_nanos()),
                )
            }
        }
    }
}

/// The instant `secs` + `nanos` after the Unix epoch.
pub(crate) fn to_system_time(secs: i64, nanos: u32) -> Result<SystemTime, TimeError> {
    if secs >= 0 {
        UNIX_EPOCH
            .checked_add(Duration::new(secs.unsigned_abs(), nanos))
            .ok_or(TimeError::Unrepresentable)
    } else {
        UNIX_EPOCH
            .checked_sub(Duration::from_secs(secs.unsigned_abs()))
            .and_then(|t| t.checked_add(Duration::from_nanos(u64::from(nanos))))
            .ok_or(TimeError::Unrepresentable)
    }
}

/// Go's zero `time.Time`, `0001-01-01T00:00:00Z`, as Unix seconds.
pub(crate) const GO_ZERO_UNIX: i64 = -62_135_596_800;

struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn peek(&self, ahead: usize) -> Option<u8> {
        self.b.get(self.pos.checked_add(ahead)?).copied()
    }
    fn literal(&mut self, want: u8) -> Result<(), TimeError> {
        if self.peek(0) == Some(want) {
            self.pos = self.pos.saturating_add(1);
            Ok(())
        } else {
            Err(TimeError::Layout)
        }
    }
    fn fixed_digits(&mut self, n: usize) -> Result<u32, TimeError> {
        let mut v = 0u32;
        for _ in 0..n {
            let d = self
                .peek(0)
                .filter(u8::is_ascii_digit)
                .ok_or(TimeError::Layout)?;
            v = v.saturating_mul(10).saturating_add(digit(d));
            self.pos = self.pos.saturating_add(1);
        }
        Ok(v)
    }
    fn one_or_two_digits(&mut self) -> Result<u32, TimeError> {
        let first = self
            .peek(0)
            .filter(u8::is_ascii_digit)
            .ok_or(TimeError::Layout)?;
        self.pos = self.pos.saturating_add(1);
        match self.peek(0).filter(u8::is_ascii_digit) {
            Some(second) => {
                self.pos = self.pos.saturating_add(1);
                Ok(digit(first)
                    .saturating_mul(10)
                    .saturating_add(digit(second)))
            }
            None => Ok(digit(first)),
        }
    }
}

/// The value of an ASCII digit (callers check `is_ascii_digit` first).
fn digit(d: u8) -> u32 {
    u32::from(d.wrapping_sub(b'0'))
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

// Howard Hinnant's `days_from_civil`; inputs are bounded (year 0..=9999), so plain arithmetic
// cannot overflow.
#[allow(clippy::arithmetic_side_effects)]
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

// Inverse of `days_from_civil`. `days` comes from a `SystemTime`, whose range keeps every
// intermediate value far from overflow.
#[allow(clippy::arithmetic_side_effects)]
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    (
        y,
        u32::try_from(m).unwrap_or(1),
        u32::try_from(d).unwrap_or(1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comma_fraction_and_wide_offsets() {
        assert_eq!(
            parse_unix("2024-01-02T03:04:05,5Z"),
            Ok((1_704_164_645, 500_000_000))
        );
        assert!(parse_unix("2024-01-02T03:04:05+24:00").is_ok());
        assert!(parse_unix("2024-01-02T03:04:05+23:60").is_ok());
        assert_eq!(
            parse_unix("2024-01-02T03:04:05+25:00"),
            Err(TimeError::Range("time zone offset hour"))
        );
        assert_eq!(
            parse_unix("2024-01-02T03:04:05+23:61"),
            Err(TimeError::Range("time zone offset minute"))
        );
        assert_eq!(parse_unix("+024-01-02T03:04:05Z"), Err(TimeError::Layout));
        assert_eq!(parse_unix("2024-01-02T03:04:05z"), Err(TimeError::Layout));
    }

    #[test]
    fn format_is_whole_seconds_utc() {
        let t = parse("2024-01-02T03:04:05.999+01:00").unwrap();
        assert_eq!(format(t), "2024-01-02T02:04:05Z");
        let t = parse("1969-12-31T23:59:59.5Z").unwrap();
        assert_eq!(format(t), "1969-12-31T23:59:59Z");
        assert_eq!(
            format(parse("0001-01-01T00:00:00Z").unwrap()),
            "0001-01-01T00:00:00Z"
        );
        assert_eq!(
            to_unix(parse("0001-01-01T00:00:00Z").unwrap()).0,
            GO_ZERO_UNIX
        );
    }
}
