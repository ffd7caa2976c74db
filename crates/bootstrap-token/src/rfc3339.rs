//! RFC 3339 exactly as Go's `time.Parse(time.RFC3339, s)` accepts it, and Go's
//! `time.Format(time.RFC3339)` output.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::Error;

/// Parses an expiration exactly as Go's `time.Parse(time.RFC3339, value)` does, the parser
/// Kubernetes uses for the `expiration` data key.
///
/// Accepted: `2024-01-02T03:04:05Z`, fractional seconds of any length (with `.` or `,`, digits
/// past the ninth truncated), numeric offsets `±hh:mm` up to `+24:60`, a one-digit hour.
/// Rejected (where `chrono` or `time` would accept some of them): lowercase `t`/`z`, a space
/// separator, second `60`, hour `24`, `2024-02-30`, offsets without a colon, leading or trailing
/// whitespace, a signed or 5-digit year, missing zone. Kubernetes treats a token whose expiration
/// does not parse as **expired**, so accepting more than Go would be fail-open.
///
/// ```
/// use bootstrap_token::parse_expiration;
/// use std::time::{Duration, UNIX_EPOCH};
/// let t = parse_expiration("2024-01-02T03:04:05+01:00")?;
/// assert_eq!(t, UNIX_EPOCH + Duration::from_secs(1_704_161_045));
/// assert!(parse_expiration("2024-01-02t03:04:05z").is_err());
/// assert!(parse_expiration("2024-01-02T03:04:60Z").is_err());
/// # Ok::<(), bootstrap_token::Error>(())
/// ```
///
/// # Errors
///
/// [`Error::InvalidExpiration`] when Go would reject the string, [`Error::TimeOutOfRange`] if the
/// instant does not fit in a `SystemTime`.
pub fn parse_expiration(value: &str) -> Result<SystemTime, Error> {
    parse(value.as_bytes())?.to_system_time()
}

/// Like [`parse_expiration`], also returning the offset the time was written in (seconds east of
/// UTC), which `kubeadm token list` keeps when printing.
///
/// ```
/// use bootstrap_token::parse_expiration_with_offset;
/// let (_, offset) = parse_expiration_with_offset("2024-01-02T03:04:05-01:30")?;
/// assert_eq!(offset, -5400);
/// # Ok::<(), bootstrap_token::Error>(())
/// ```
///
/// # Errors
///
/// As [`parse_expiration`].
pub fn parse_expiration_with_offset(value: &str) -> Result<(SystemTime, i32), Error> {
    let t = parse(value.as_bytes())?;
    Ok((t.to_system_time()?, t.offset))
}

/// A parsed instant with the offset it was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GoTime {
    /// Seconds since the Unix epoch (UTC).
    pub(crate) unix: i64,
    /// Nanoseconds, `0..1_000_000_000`.
    pub(crate) nanos: u32,
    /// Offset east of UTC in seconds.
    pub(crate) offset: i32,
}

impl GoTime {
    pub(crate) fn to_system_time(self) -> Result<SystemTime, Error> {
        let nanos = Duration::from_nanos(u64::from(self.nanos));
        let t = if self.unix >= 0 {
            UNIX_EPOCH.checked_add(Duration::from_secs(self.unix.unsigned_abs()))
        } else {
            UNIX_EPOCH.checked_sub(Duration::from_secs(self.unix.unsigned_abs()))
        };
        t.and_then(|t| t.checked_add(nanos))
            .ok_or(Error::TimeOutOfRange)
    }

    /// Go's `Format(time.RFC3339)` in the stored offset: no fractional seconds.
    pub(crate) fn format(self) -> Result<String, Error> {
        let local = self
            .unix
            .checked_add(i64::from(self.offset))
            .ok_or(Error::TimeOutOfRange)?;
        let days = local.div_euclid(86_400);
        let secs_of_day = local.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days).ok_or(Error::TimeOutOfRange)?;
        if !(0..=9999).contains(&y) {
            return Err(Error::TimeOutOfRange);
        }
        let (hh, mm, ss) = (
            secs_of_day / 3600,
            (secs_of_day / 60) % 60,
            secs_of_day % 60,
        );
        let zone = if self.offset == 0 {
            "Z".to_owned()
        } else {
            let sign = if self.offset < 0 { '-' } else { '+' };
            let abs = self.offset.unsigned_abs();
            format!("{sign}{:02}:{:02}", abs / 3600, (abs / 60) % 60)
        };
        Ok(format!(
            "{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}{zone}"
        ))
    }

    /// The instant of a `SystemTime`, in UTC.
    pub(crate) fn from_system_time(t: SystemTime) -> Result<Self, Error> {
        let (unix, nanos) = match t.duration_since(UNIX_EPOCH) {
            Ok(d) => (
                i64::try_from(d.as_secs()).map_err(|_| Error::TimeOutOfRange)?,
                d.subsec_nanos(),
            ),
            Err(e) => {
                let d = e.duration();
                let secs = i64::try_from(d.as_secs()).map_err(|_| Error::TimeOutOfRange)?;
                if d.subsec_nanos() == 0 {
                    (secs.checked_neg().ok_or(Error::TimeOutOfRange)?, 0)
                } else {
                    let s = secs
                        .checked_add(1)
                        .and_then(i64::checked_neg)
                        .ok_or(Error::TimeOutOfRange)?;
                    (s, 1_000_000_000u32.saturating_sub(d.subsec_nanos()))
                }
            }
        };
        Ok(Self {
            unix,
            nanos,
            offset: 0,
        })
    }
}

fn bad(reason: &'static str) -> Error {
    Error::InvalidExpiration { reason }
}

struct Cursor<'a> {
    rest: &'a [u8],
}

impl Cursor<'_> {
    fn literal(&mut self, b: u8) -> Result<(), Error> {
        match self.rest.split_first() {
            Some((&c, rest)) if c == b => {
                self.rest = rest;
                Ok(())
            }
            _ => Err(bad("does not match the layout 2006-01-02T15:04:05Z07:00")),
        }
    }

    fn digit_at(&self, i: usize) -> Option<u32> {
        self.rest
            .get(i)
            .filter(|b| b.is_ascii_digit())
            .map(|b| u32::from(b.saturating_sub(b'0')))
    }

    /// Go's `getnum(value, fixed)`: one or two digits, exactly two when `fixed`.
    fn num(&mut self, fixed: bool) -> Result<u32, Error> {
        let err = || bad("does not match the layout 2006-01-02T15:04:05Z07:00");
        let first = self.digit_at(0).ok_or_else(err)?;
        match self.digit_at(1) {
            Some(second) => {
                self.rest = self.rest.get(2..).unwrap_or_default();
                Ok(first.saturating_mul(10).saturating_add(second))
            }
            None if fixed => Err(err()),
            None => {
                self.rest = self.rest.get(1..).unwrap_or_default();
                Ok(first)
            }
        }
    }
}

/// Go's general layout parser for `time.RFC3339`.
pub(crate) fn parse(value: &[u8]) -> Result<GoTime, Error> {
    let mut c = Cursor { rest: value };
    // stdLongYear: exactly four digits.
    let mut year: u32 = 0;
    for i in 0..4 {
        let d = c
            .digit_at(i)
            .ok_or_else(|| bad("does not match the layout 2006-01-02T15:04:05Z07:00"))?;
        year = year.saturating_mul(10).saturating_add(d);
    }
    c.rest = c.rest.get(4..).unwrap_or_default();
    c.literal(b'-')?;
    let month = c.num(true)?;
    if !(1..=12).contains(&month) {
        return Err(bad("month out of range"));
    }
    c.literal(b'-')?;
    let day = c.num(true)?;
    c.literal(b'T')?;
    let hour = c.num(false)?;
    if hour >= 24 {
        return Err(bad("hour out of range"));
    }
    c.literal(b':')?;
    let minute = c.num(true)?;
    if minute >= 60 {
        return Err(bad("minute out of range"));
    }
    c.literal(b':')?;
    let second = c.num(true)?;
    if second >= 60 {
        return Err(bad("second out of range"));
    }
    // Fractional seconds not in the layout: accepted after `.` or `,` when a digit follows.
    let mut nanos: u32 = 0;
    if matches!(c.rest.first(), Some(b'.' | b',')) && c.digit_at(1).is_some() {
        let mut n = 1usize;
        while c.digit_at(n).is_some() {
            n = n.saturating_add(1);
        }
        let digits = c.rest.get(1..n).unwrap_or_default();
        let mut scale = 0u32;
        for &d in digits.iter().take(9) {
            nanos = nanos
                .saturating_mul(10)
                .saturating_add(u32::from(d.saturating_sub(b'0')));
            scale = scale.saturating_add(1);
        }
        for _ in scale..9 {
            nanos = nanos.saturating_mul(10);
        }
        c.rest = c.rest.get(n..).unwrap_or_default();
    }
    // Z07:00
    let offset: i32 = if c.rest.first() == Some(&b'Z') {
        c.rest = c.rest.get(1..).unwrap_or_default();
        0
    } else {
        let zone = c
            .rest
            .get(..6)
            .ok_or_else(|| bad("does not match the layout 2006-01-02T15:04:05Z07:00"))?;
        let [sign, h1, h2, colon, m1, m2] = <[u8; 6]>::try_from(zone)
            .map_err(|_| bad("does not match the layout 2006-01-02T15:04:05Z07:00"))?;
        if colon != b':' {
            return Err(bad("does not match the layout 2006-01-02T15:04:05Z07:00"));
        }
        let two = |a: u8, b: u8| -> Result<i32, Error> {
            if a.is_ascii_digit() && b.is_ascii_digit() {
                Ok(i32::from(a.saturating_sub(b'0'))
                    .saturating_mul(10)
                    .saturating_add(i32::from(b.saturating_sub(b'0'))))
            } else {
                Err(bad("does not match the layout 2006-01-02T15:04:05Z07:00"))
            }
        };
        let hr = two(h1, h2)?;
        let mm = two(m1, m2)?;
        if hr > 24 {
            return Err(bad("time zone offset hour out of range"));
        }
        if mm > 60 {
            return Err(bad("time zone offset minute out of range"));
        }
        let off = hr.saturating_mul(60).saturating_add(mm).saturating_mul(60);
        c.rest = c.rest.get(6..).unwrap_or_default();
        match sign {
            b'+' => off,
            b'-' => off.saturating_neg(),
            _ => return Err(bad("does not match the layout 2006-01-02T15:04:05Z07:00")),
        }
    };
    if !c.rest.is_empty() {
        return Err(bad("extra text after the time"));
    }
    if day < 1 || day > days_in_month(month, year) {
        return Err(bad("day out of range"));
    }
    let days = days_from_civil(i64::from(year), month, day).ok_or(Error::TimeOutOfRange)?;
    let local = days
        .checked_mul(86_400)
        .and_then(|s| s.checked_add(i64::from(hour).checked_mul(3600)?))
        .and_then(|s| s.checked_add(i64::from(minute).checked_mul(60)?))
        .and_then(|s| s.checked_add(i64::from(second)))
        .ok_or(Error::TimeOutOfRange)?;
    let unix = local
        .checked_sub(i64::from(offset))
        .ok_or(Error::TimeOutOfRange)?;
    Ok(GoTime {
        unix,
        nanos,
        offset,
    })
}

fn is_leap(year: u32) -> bool {
    year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400))
}

fn days_in_month(month: u32, year: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> Option<i64> {
    let m = i64::from(month);
    let d = i64::from(day);
    let y = if m <= 2 { year.checked_sub(1)? } else { year };
    let era = y
        .checked_sub(if y >= 0 { 0 } else { 399 })?
        .checked_div(400)?;
    let yoe = y.checked_sub(era.checked_mul(400)?)?;
    let mp = if m > 2 {
        m.checked_sub(3)?
    } else {
        m.checked_add(9)?
    };
    let doy = mp
        .checked_mul(153)?
        .checked_add(2)?
        .checked_div(5)?
        .checked_add(d)?
        .checked_sub(1)?;
    let doe = yoe
        .checked_mul(365)?
        .checked_add(yoe.checked_div(4)?)?
        .checked_sub(yoe.checked_div(100)?)?
        .checked_add(doy)?;
    era.checked_mul(146_097)?
        .checked_add(doe)?
        .checked_sub(719_468)
}

/// The proleptic Gregorian date of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> Option<(i64, u32, u32)> {
    let z = days.checked_add(719_468)?;
    let era = z
        .checked_sub(if z >= 0 { 0 } else { 146_096 })?
        .checked_div(146_097)?;
    let doe = z.checked_sub(era.checked_mul(146_097)?)?;
    let yoe = doe
        .checked_sub(doe.checked_div(1460)?)?
        .checked_add(doe.checked_div(36_524)?)?
        .checked_sub(doe.checked_div(146_096)?)?
        .checked_div(365)?;
    let y = yoe.checked_add(era.checked_mul(400)?)?;
    let doy = doe.checked_sub(
        yoe.checked_mul(365)?
            .checked_add(yoe.checked_div(4)?)?
            .checked_sub(yoe.checked_div(100)?)?,
    )?;
    let mp = doy.checked_mul(5)?.checked_add(2)?.checked_div(153)?;
    let d = doy
        .checked_sub(mp.checked_mul(153)?.checked_add(2)?.checked_div(5)?)?
        .checked_add(1)?;
    let m = if mp < 10 {
        mp.checked_add(3)?
    } else {
        mp.checked_sub(9)?
    };
    let y = if m <= 2 { y.checked_add(1)? } else { y };
    Some((y, u32::try_from(m).ok()?, u32::try_from(d).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trip() {
        for days in [-719_528i64, -1, 0, 1, 19_723, 2_932_896] {
            let (y, m, d) = civil_from_days(days).unwrap();
            assert_eq!(days_from_civil(y, m, d), Some(days));
        }
    }

    #[test]
    fn format_offsets() {
        let t = parse(b"2024-01-02T03:04:05.9+01:30").unwrap();
        assert_eq!(t.format().unwrap(), "2024-01-02T03:04:05+01:30");
        let t = parse(b"2024-01-02T03:04:05-00:00").unwrap();
        assert_eq!(t.format().unwrap(), "2024-01-02T03:04:05Z");
    }
}
