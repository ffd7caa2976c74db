//! A raw query string read as Go's `url.ParseQuery` reads it (what `URL.Query()` returns).

use std::borrow::Cow;

use crate::request_path::hex_value;

/// One decoded query value, borrowed from the query when nothing needed decoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueryValue<'a> {
    /// The value; bytes that are not UTF-8 replaced by U+FFFD.
    pub(crate) value: Cow<'a, str>,
    /// Whether the decoded bytes were UTF-8 (the value is exactly what Go would see).
    pub(crate) exact: bool,
}

/// The values of `key`, in order, as Go's `url.Values` holds them: pairs split on `&`, a pair
/// containing `;` dropped (Go 1.17+), empty pairs skipped, key and value split at the first
/// `=`, `+` read as a space, a pair with a malformed `%` escape dropped.
pub(crate) fn values<'a>(query: &'a str, key: &str) -> Vec<QueryValue<'a>> {
    let mut out = Vec::new();
    for pair in query.split('&') {
        if pair.is_empty() || pair.contains(';') {
            continue;
        }
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let Some(k) = unescape(k) else { continue };
        if k.value != key {
            continue;
        }
        let Some(v) = unescape(v) else { continue };
        out.push(v);
    }
    out
}

/// The first value of `key`, if any.
#[cfg(test)]
pub(crate) fn first<'a>(query: &'a str, key: &str) -> Option<QueryValue<'a>> {
    values(query, key).into_iter().next()
}

/// The first values of the list options a request carries, read in one pass (each as
/// [`values`] would give it first).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ListParams<'a> {
    pub(crate) watch: Option<QueryValue<'a>>,
    pub(crate) field_selector: Option<QueryValue<'a>>,
    pub(crate) label_selector: Option<QueryValue<'a>>,
    pub(crate) limit: Option<QueryValue<'a>>,
    pub(crate) timeout_seconds: Option<QueryValue<'a>>,
}

impl<'a> ListParams<'a> {
    pub(crate) fn read(query: &'a str) -> Self {
        let mut params = Self::default();
        if query.is_empty() {
            return params;
        }
        for pair in query.split('&') {
            if pair.is_empty() || pair.contains(';') {
                continue;
            }
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let Some(k) = unescape(k) else { continue };
            let slot = match &*k.value {
                "watch" => &mut params.watch,
                "fieldSelector" => &mut params.field_selector,
                "labelSelector" => &mut params.label_selector,
                "limit" => &mut params.limit,
                "timeoutSeconds" => &mut params.timeout_seconds,
                _ => continue,
            };
            if slot.is_none() {
                *slot = unescape(v);
            }
        }
        params
    }
}

/// Go's `QueryUnescape`: `+` is a space, `%XX` a byte; `None` for a malformed escape. A value
/// without `%` or `+` is borrowed as it is.
fn unescape(s: &str) -> Option<QueryValue<'_>> {
    if !s.contains(['%', '+']) {
        return Some(QueryValue {
            value: Cow::Borrowed(s),
            exact: true,
        });
    }
    let mut out = Vec::with_capacity(s.len());
    let mut bytes = s.bytes();
    while let Some(b) = bytes.next() {
        match b {
            b'%' => {
                let hi = bytes.next().and_then(hex_value)?;
                let lo = bytes.next().and_then(hex_value)?;
                out.push(hi.wrapping_shl(4) | lo);
            }
            b'+' => out.push(b' '),
            b => out.push(b),
        }
    }
    Some(match String::from_utf8(out) {
        Ok(value) => QueryValue {
            value: Cow::Owned(value),
            exact: true,
        },
        Err(e) => QueryValue {
            value: Cow::Owned(String::from_utf8_lossy(e.as_bytes()).into_owned()),
            exact: false,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vals(q: &str, k: &str) -> Vec<String> {
        values(q, k)
            .into_iter()
            .map(|v| v.value.into_owned())
            .collect()
    }

    #[test]
    fn reads_as_go_parse_query() {
        assert_eq!(vals("a=1&a=2&b=3", "a"), ["1", "2"]);
        assert_eq!(vals("a", "a"), [""]);
        assert_eq!(vals("a=&&a=x%20y+z", "a"), ["", "x y z"]);
        assert_eq!(vals("a=1;b=2&a=3", "a"), ["3"]);
        assert_eq!(vals("a=%zz&a=4", "a"), ["4"]);
        assert_eq!(vals("%61=5", "a"), ["5"]);
        assert_eq!(vals("a=b=c", "a"), ["b=c"]);
        let v = first("a=%ff", "a").unwrap();
        assert!(!v.exact);
    }
}
