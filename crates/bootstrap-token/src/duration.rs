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

/// Go's `time.Duration.String()` for a non-negative duration (`24h0m0s`, `1m30s`, `1.5s`,
/// `500ms`, `0s`), saturating at Go's largest duration.
#[must_use]
pub fn format_go_duration(d: std::time::Duration) -> String {
    let max = u128::from(i64::MAX.unsigned_abs());
    let u = d.as_nanos().min(max);
    if u == 0 {
        return "0s".to_owned();
    }
    if u < 1_000 {
        return format!("{u}ns");
    }
    if u < 1_000_000 {
        return format!("{}µs", frac(u, 3));
    }
    if u < 1_000_000_000 {
        return format!("{}ms", frac(u, 6));
    }
    let secs = u / 1_000_000_000;
    let sub = u % 1_000_000_000;
    let s_part = if sub == 0 {
        format!("{}s", secs % 60)
    } else {
        format!(
            "{}s",
            frac(
                (secs % 60)
                    .saturating_mul(1_000_000_000)
                    .saturating_add(sub),
                9
            )
        )
    };
    let mins = secs / 60;
    if mins == 0 {
        return s_part;
    }
    let hours = mins / 60;
    if hours == 0 {
        return format!("{}m{s_part}", mins % 60);
    }
    format!("{hours}h{}m{s_part}", mins % 60)
}

/// `v / 10^prec` with the fraction's trailing zeros (and a bare `.`) removed, as Go's `fmtFrac`.
fn frac(v: u128, prec: u32) -> String {
    let scale = 10u128.saturating_pow(prec).max(1);
    let (int, mut f) = (
        v.checked_div(scale).unwrap_or(0),
        v.checked_rem(scale).unwrap_or(0),
    );
    if f == 0 {
        return int.to_string();
    }
    let mut digits = prec;
    while f % 10 == 0 {
        f /= 10;
        digits = digits.saturating_sub(1);
    }
    format!(
        "{int}.{f:0width$}",
        width = usize::try_from(digits).unwrap_or(0)
    )
}

/// Go's `time.ParseDuration` (`24h`, `1h30m`, `1.5s`, `300ms`, `-1h`, `0`). A negative duration
/// is returned as `Ok(None)`; callers treat it like zero (kubeadm: a TTL of zero or less means
/// "never expires"). Fractions are computed in integers (Go uses a float for them, which can
/// differ in the last nanosecond for long fractions).
///
/// # Errors
///
/// [`Error::InvalidDuration`] when Go would reject the string (missing unit, unknown unit, no
/// digits, overflow past Go's largest duration).
pub(crate) fn parse_go_duration(s: &str) -> Result<Option<std::time::Duration>, crate::Error> {
    let bad = |reason| crate::Error::InvalidDuration { reason };
    let max = u128::from(i64::MAX.unsigned_abs());
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, s.get(1..).unwrap_or_default()),
        Some(b'+') => (false, s.get(1..).unwrap_or_default()),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(Some(std::time::Duration::ZERO));
    }
    if rest.is_empty() {
        return Err(bad("empty duration"));
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int_digits, after) = rest.split_at_checked(int_len).ok_or(bad("invalid"))?;
        let (frac_digits, after) = match after.strip_prefix('.') {
            Some(a) => {
                let n = a.bytes().take_while(u8::is_ascii_digit).count();
                a.split_at_checked(n).ok_or(bad("invalid"))?
            }
            None => ("", after),
        };
        if int_digits.is_empty() && frac_digits.is_empty() {
            return Err(bad("expected a number"));
        }
        let unit_len = after
            .char_indices()
            .find(|&(_, c)| c == '.' || c.is_ascii_digit())
            .map_or(after.len(), |(i, _)| i);
        let (unit, next) = after.split_at_checked(unit_len).ok_or(bad("invalid"))?;
        let per: u128 = match unit {
            "ns" => 1,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "" => return Err(bad("missing unit in duration")),
            _ => return Err(bad("unknown unit in duration")),
        };
        let mut int: u128 = 0;
        for b in int_digits.bytes() {
            int = int
                .checked_mul(10)
                .and_then(|v| v.checked_add(u128::from(b.saturating_sub(b'0'))))
                .filter(|&v| v <= max)
                .ok_or(bad("duration out of range"))?;
        }
        let mut value = int.checked_mul(per).ok_or(bad("duration out of range"))?;
        // Fraction digits beyond what can matter are ignored, as Go does.
        let mut f: u128 = 0;
        let mut scale: u128 = 1;
        for b in frac_digits.bytes().take(30) {
            f = f
                .saturating_mul(10)
                .saturating_add(u128::from(b.saturating_sub(b'0')));
            scale = scale.saturating_mul(10);
        }
        value = value
            .checked_add(f.saturating_mul(per).checked_div(scale).unwrap_or(0))
            .ok_or(bad("duration out of range"))?;
        total = total
            .checked_add(value)
            .filter(|&v| v <= max)
            .ok_or(bad("duration out of range"))?;
        rest = next;
    }
    if neg && total > 0 {
        return Ok(None);
    }
    let nanos = u64::try_from(total).map_err(|_| bad("duration out of range"))?;
    Ok(Some(std::time::Duration::from_nanos(nanos)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn go_duration_strings() {
        for (d, s) in [
            (Duration::ZERO, "0s"),
            (Duration::from_nanos(1), "1ns"),
            (Duration::from_nanos(1_100), "1.1µs"),
            (Duration::from_micros(2_200), "2.2ms"),
            (Duration::from_millis(1_500), "1.5s"),
            (Duration::from_secs(90), "1m30s"),
            (Duration::from_secs(86_400), "24h0m0s"),
            (Duration::from_secs(3_600 * 48 + 1), "48h0m1s"),
            (Duration::from_nanos(3_600_000_000_001), "1h0m0.000000001s"),
        ] {
            assert_eq!(format_go_duration(d), s);
            assert_eq!(parse_go_duration(s).unwrap(), Some(d), "{s}");
        }
        assert_eq!(
            format_go_duration(Duration::MAX),
            "2562047h47m16.854775807s"
        );
    }

    #[test]
    fn go_duration_parsing() {
        assert_eq!(parse_go_duration("0").unwrap(), Some(Duration::ZERO));
        assert_eq!(
            parse_go_duration("1.5h").unwrap(),
            Some(Duration::from_secs(5400))
        );
        assert_eq!(
            parse_go_duration(".5s").unwrap(),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            parse_go_duration("1h30m").unwrap(),
            Some(Duration::from_secs(5400))
        );
        assert_eq!(
            parse_go_duration("+5s").unwrap(),
            Some(Duration::from_secs(5))
        );
        assert_eq!(parse_go_duration("-1h").unwrap(), None);
        assert_eq!(parse_go_duration("-0s").unwrap(), Some(Duration::ZERO));
        assert_eq!(
            parse_go_duration("2562047h47m16.854775807s").unwrap(),
            Some(Duration::from_nanos(i64::MAX as u64))
        );
        for bad in [
            "",
            "1",
            "h",
            "1x",
            "1d",
            ".s",
            "1h ",
            " 1h",
            "2562047h47m16.854775808s",
            "9999999999999999999h",
            "-",
            "1.h2",
        ] {
            let r = parse_go_duration(bad);
            assert!(r.is_err(), "{bad:?} -> {r:?}");
        }
    }
}
