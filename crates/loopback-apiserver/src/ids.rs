//! Random identifiers and timestamps the double fills into objects.

use std::fmt::Write as _;
use std::time::SystemTime;

/// `n` random bytes from the OS.
pub(crate) fn random_bytes<const N: usize>() -> Result<[u8; N], getrandom::Error> {
    let mut buf = [0u8; N];
    getrandom::fill(&mut buf)?;
    Ok(buf)
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len().saturating_mul(2));
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// A random UUID (version 4 layout), as `metadata.uid`.
pub(crate) fn uuid() -> Result<String, getrandom::Error> {
    let mut b = random_bytes::<16>()?;
    if let Some(v) = b.get_mut(6) {
        *v = (*v & 0x0f) | 0x40;
    }
    if let Some(v) = b.get_mut(8) {
        *v = (*v & 0x3f) | 0x80;
    }
    let h = hex(&b);
    let part = |from: usize, to: usize| h.get(from..to).unwrap_or_default();
    Ok(format!(
        "{}-{}-{}-{}-{}",
        part(0, 8),
        part(8, 12),
        part(12, 16),
        part(16, 20),
        part(20, 32)
    ))
}

/// The five random characters kube-apiserver appends to a `generateName`.
pub(crate) fn name_suffix() -> Result<String, getrandom::Error> {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let bytes = random_bytes::<5>()?;
    Ok(bytes
        .iter()
        .map(|b| {
            let i = usize::from(*b).checked_rem(ALPHABET.len()).unwrap_or(0);
            char::from(ALPHABET.get(i).copied().unwrap_or(b'x'))
        })
        .collect())
}

/// Seconds since the Unix epoch (0 before it).
fn unix_seconds(now: SystemTime) -> i64 {
    now.duration_since(SystemTime::UNIX_EPOCH)
        .ok()
        .and_then(|d| i64::try_from(d.as_secs()).ok())
        .unwrap_or(0)
}

/// `now` as a `metav1.Time` (`2006-01-02T15:04:05Z`).
pub(crate) fn timestamp(now: SystemTime) -> String {
    k8s_openapi::jiff::Timestamp::from_second(unix_seconds(now))
        .ok()
        .and_then(|t| k8s_openapi::jiff::fmt::strtime::format("%Y-%m-%dT%H:%M:%SZ", t).ok())
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".to_owned())
}

/// apimachinery's `duration.HumanDuration` of `seconds`: two or three significant figures
/// (`90s`, `9m30s`, `2h5m`, `3d4h`, `1y100d`), as kubectl tables show durations.
pub(crate) fn human_duration(seconds: i64) -> String {
    const MINUTE: i64 = 60;
    const HOUR: i64 = 60 * MINUTE;
    const DAY: i64 = 24 * HOUR;
    const YEAR: i64 = 365 * DAY;
    let (s, m, h, d) = (seconds, seconds / MINUTE, seconds / HOUR, seconds / DAY);
    if s < -1 {
        "<invalid>".to_owned()
    } else if s < 0 {
        "0s".to_owned()
    } else if s < 2 * MINUTE {
        format!("{s}s")
    } else if m < 10 {
        match s % MINUTE {
            0 => format!("{m}m"),
            rest => format!("{m}m{rest}s"),
        }
    } else if m < 3 * 60 {
        format!("{m}m")
    } else if h < 8 {
        match m % 60 {
            0 => format!("{h}h"),
            rest => format!("{h}h{rest}m"),
        }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 24 * 8 {
        match h % 24 {
            0 => format!("{d}d"),
            rest => format!("{d}d{rest}h"),
        }
    } else if h < 24 * 365 * 2 {
        format!("{d}d")
    } else if h < 24 * 365 * 8 {
        match d % 365 {
            0 => format!("{}y", s / YEAR),
            rest => format!("{}y{rest}d", s / YEAR),
        }
    } else {
        format!("{}y", s / YEAR)
    }
}

/// Whole seconds between a `metav1.Time` string and `now`, for table ages.
pub(crate) fn age(created: &str, now: SystemTime) -> Option<i64> {
    let t: k8s_openapi::jiff::Timestamp = created.parse().ok()?;
    unix_seconds(now).checked_sub(t.as_second())
}
