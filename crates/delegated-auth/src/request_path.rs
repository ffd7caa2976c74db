//! A request's path as it is authorized: percent-decoded as Go's `URL.Path`, and clean, as Go's
//! `ServeMux` requires before any handler (kube-rbac-proxy's authorization filter, the kubelet's)
//! sees it.

use std::borrow::Cow;

use crate::error::Error;

/// The longest request target (path and query) this crate reads, in bytes.
pub const MAX_REQUEST_TARGET_BYTES: usize = 64 * 1024;

/// A request path, percent-decoded and clean: absolute, without `.` or `..` segments and
/// without empty segments (`//`); a trailing `/` is kept, as Go's `ServeMux` keeps it.
///
/// This is the path an authorizer may compare against non-resource rules (`/metrics`,
/// `/healthz/*`): a path that is not clean is never authorized, because the server behind may
/// clean it and serve another one (`/metrics/../secret` serves `/secret`). Parsing such a path
/// fails with [`Error::PathNotClean`], which carries the clean path for a 301 redirect, as Go's
/// `ServeMux` answers in front of kube-rbac-proxy and the kubelet; the redirected request is then
/// authorized for the path it will be served.
///
/// Comparison stays exact, as Kubernetes compares: `/METRICS` is not `/metrics`, and `/metrics/`
/// is not `/metrics` (but is matched by a rule `/metrics/*`).
///
/// The path borrows the request target when it has no percent-escape (the common case) and
/// owns its decoded form otherwise; [`RequestPath::into_owned`] detaches it from the target.
///
/// ```
/// use delegated_auth::{Error, RequestPath};
///
/// # fn main() -> Result<(), Error> {
/// assert_eq!(RequestPath::parse("/metrics")?.as_str(), "/metrics");
/// assert_eq!(RequestPath::parse("/a%20b")?.as_str(), "/a b");
/// match RequestPath::parse("/metrics/%2e%2e/secret") {
///     Err(Error::PathNotClean { clean }) => assert_eq!(clean, "/secret"),
///     other => panic!("{other:?}"),
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RequestPath<'a>(Cow<'a, str>);

impl<'a> RequestPath<'a> {
    /// Reads the path of a request target as it arrives on the wire (still percent-encoded,
    /// as `http::Uri::path` gives it), decodes it as Go's `url.URL.Path` is decoded and requires
    /// it to be clean.
    ///
    /// # Errors
    ///
    /// [`Error::TooLarge`] over [`MAX_REQUEST_TARGET_BYTES`]; [`Error::InvalidPath`] for a path
    /// that is not absolute (`*`, `metrics`), has a control character or a space, a malformed
    /// percent-escape, or decodes to bytes that are not UTF-8; [`Error::PathNotClean`] with the
    /// clean path to redirect to, when the decoded path is not clean (the empty path redirects
    /// to `/`).
    pub fn parse(raw: &'a str) -> Result<Self, Error> {
        if raw.len() > MAX_REQUEST_TARGET_BYTES {
            return Err(Error::TooLarge {
                what: "request path",
                limit: MAX_REQUEST_TARGET_BYTES,
            });
        }
        if raw.is_empty() {
            return Err(Error::PathNotClean {
                clean: "/".to_owned(),
            });
        }
        if !raw.starts_with('/') {
            return Err(Error::InvalidPath {
                reason: "not an absolute path",
            });
        }
        let bytes = raw.as_bytes();
        // One vectorized pass over each byte and the byte after it, rather than a byte loop:
        // control characters, `%`, and a `/` followed by `/` or `.` (the only way a path that
        // starts with `/` can hold an empty or a dot segment).
        let pairs = bytes.iter().zip(bytes.get(1..).unwrap_or_default());
        let seen = pairs.fold(0u8, |seen, (b, next)| {
            seen | byte_flags(*b) | (u8::from((*b == b'/') & ((*next & 0xfe) == b'.')) << 2)
        }) | bytes.last().map_or(0, |b| byte_flags(*b));
        if seen & 1 != 0 {
            return Err(Error::InvalidPath {
                reason: "control character or space",
            });
        }
        let decoded = if seen & 2 != 0 {
            percent_decode(raw)?
        } else if seen & 4 == 0 {
            // Its own decoded form, and clean.
            return Ok(Self(Cow::Borrowed(raw)));
        } else {
            Cow::Borrowed(raw)
        };
        if is_clean(&decoded) {
            Ok(Self(decoded))
        } else {
            Err(Error::PathNotClean {
                clean: clean_path(&decoded),
            })
        }
    }

    /// The decoded, clean path.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The path as a `String` (copied if it borrows the request target).
    #[must_use]
    pub fn into_string(self) -> String {
        self.0.into_owned()
    }

    /// The same path, owning its bytes (copied if it borrows the request target).
    #[must_use]
    pub fn into_owned(self) -> RequestPath<'static> {
        RequestPath(Cow::Owned(self.0.into_owned()))
    }
}

impl std::fmt::Display for RequestPath<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for RequestPath<'_> {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Bit 0 for a control character or a space, bit 1 for `%`.
#[inline]
fn byte_flags(b: u8) -> u8 {
    u8::from((b <= b' ') | (b == 0x7f)) | (u8::from(b == b'%') << 1)
}

/// Decodes `%XX` escapes as Go's path unescaping does (`+` stays `+`); a `%` not followed by
/// two hex digits is an error, as in Go.
fn percent_decode(raw: &str) -> Result<Cow<'_, str>, Error> {
    let mut out = Vec::with_capacity(raw.len());
    let mut bytes = raw.bytes();
    while let Some(b) = bytes.next() {
        if b == b'%' {
            let (Some(hi), Some(lo)) = (
                bytes.next().and_then(hex_value),
                bytes.next().and_then(hex_value),
            ) else {
                return Err(Error::InvalidPath {
                    reason: "malformed percent-escape",
                });
            };
            out.push(hi.wrapping_shl(4) | lo);
        } else {
            out.push(b);
        }
    }
    String::from_utf8(out)
        .map(Cow::Owned)
        .map_err(|_| Error::InvalidPath {
            reason: "decodes to bytes that are not UTF-8",
        })
}

/// The value of one hex digit.
pub(crate) fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b.wrapping_sub(b'0')),
        b'a'..=b'f' => Some(b.wrapping_sub(b'a').wrapping_add(10)),
        b'A'..=b'F' => Some(b.wrapping_sub(b'A').wrapping_add(10)),
        _ => None,
    }
}

/// Calls `f` with the index of each `/` in `bytes`, in order, while it returns true; returns
/// whether it always did. Eight bytes at a time: the bytes equal to `/` are found in one word
/// (exactly, no borrow between bytes), then visited by their bits.
#[inline]
pub(crate) fn for_each_slash(bytes: &[u8], mut f: impl FnMut(usize) -> bool) -> bool {
    const SLASHES: u64 = u64::from_ne_bytes([b'/'; 8]);
    const LOW7: u64 = u64::from_ne_bytes([0x7f; 8]);
    let mut chunks = bytes.chunks_exact(8);
    let mut base: usize = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        // A byte of `x` is zero where the byte is `/`; its high bit in `found` is set then.
        let x = u64::from_le_bytes(word) ^ SLASHES;
        let mut found = !(((x & LOW7).wrapping_add(LOW7)) | x | LOW7);
        while found != 0 {
            let at = base.saturating_add((found.trailing_zeros() / 8) as usize);
            if !f(at) {
                return false;
            }
            found &= found.wrapping_sub(1);
        }
        base = base.saturating_add(8);
    }
    for (i, b) in chunks.remainder().iter().enumerate() {
        if *b == b'/' && !f(base.saturating_add(i)) {
            return false;
        }
    }
    true
}

/// Whether `clean_path(p) == p`, for a path that starts with `/`, without building the clean
/// path: no segment is `.` or `..`, and none but the last is empty (`//`; a trailing `/` is
/// kept).
fn is_clean(p: &str) -> bool {
    let Some(rest) = p.strip_prefix('/') else {
        return false;
    };
    let mut clean = Cleanliness::new();
    for b in rest.bytes() {
        clean.byte(b);
    }
    clean.finish()
}

/// [`is_clean`] byte by byte, from the byte after the leading `/`: the segment read so far
/// (its length, and whether it is all dots) and whether an earlier one made the path unclean.
struct Cleanliness {
    len: usize,
    dots: bool,
    clean: bool,
}

impl Cleanliness {
    fn new() -> Self {
        Cleanliness {
            len: 0,
            dots: true,
            clean: true,
        }
    }

    /// Whether the segment read so far is `.` or `..`.
    fn dot_segment(&self) -> bool {
        self.dots && (self.len == 1 || self.len == 2)
    }

    fn byte(&mut self, b: u8) {
        if b == b'/' {
            // An empty segment before another one (`//`), or a dot segment.
            if self.len == 0 || self.dot_segment() {
                self.clean = false;
            }
            self.len = 0;
            self.dots = true;
        } else {
            self.len = self.len.saturating_add(1);
            self.dots &= b == b'.';
        }
    }

    /// Whether the path read is clean: the last segment may be empty (a trailing `/`), not a
    /// dot segment.
    fn finish(&self) -> bool {
        self.clean && !self.dot_segment()
    }
}

/// Go's `cleanPath` in `net/http`: `path.Clean` of the rooted path, with a trailing slash put
/// back.
fn clean_path(p: &str) -> String {
    let mut segments: Vec<&str> = Vec::new();
    for segment in p.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            s => segments.push(s),
        }
    }
    let mut clean = String::with_capacity(p.len());
    for s in &segments {
        clean.push('/');
        clean.push_str(s);
    }
    if clean.is_empty() || p.ends_with('/') {
        clean.push('/');
    }
    clean
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redirect(raw: &str) -> String {
        match RequestPath::parse(raw) {
            Err(Error::PathNotClean { clean }) => clean,
            other => panic!("{raw}: {other:?}"),
        }
    }

    /// The one-pass check agrees with the byte-by-byte reading (`is_clean`, `clean_path`) on
    /// every path of up to seven bytes over `/`, `.`, `a`, `%`, `2`, `e`, a space and `0`
    /// (so with escapes, dot segments, empty segments and control characters in every place).
    #[test]
    fn the_one_pass_check_agrees_with_the_byte_reading() {
        let alphabet = ['/', '.', 'a', '%', '2', 'e', ' ', '0'];
        let mut frontier = vec![String::from("/")];
        for _ in 0..6 {
            let mut next = Vec::new();
            for p in &frontier {
                for c in alphabet {
                    let raw = format!("{p}{c}");
                    let expected = if raw.bytes().any(|b| b <= b' ' || b == 0x7f) {
                        Err("control")
                    } else if raw.contains('%') {
                        Err("escaped")
                    } else if is_clean(&raw) {
                        Ok(raw.clone())
                    } else {
                        Err("unclean")
                    };
                    match (RequestPath::parse(&raw), expected) {
                        (Ok(p), Ok(e)) => assert_eq!(p.as_str(), e, "{raw:?}"),
                        (Err(Error::InvalidPath { .. }), Err("control")) => {}
                        (Err(Error::PathNotClean { clean }), Err("unclean")) => {
                            assert_eq!(clean, clean_path(&raw), "{raw:?}");
                        }
                        (_, Err("escaped")) => {}
                        (got, want) => panic!("{raw:?}: {got:?}, expected {want:?}"),
                    }
                    next.push(raw);
                }
            }
            frontier = next;
        }
    }

    #[test]
    fn clean_paths_pass_unchanged() {
        for p in [
            "/",
            "/metrics",
            "/metrics/",
            "/METRICS",
            "/a/b/c",
            "/api/v1/pods",
            "/a+b",
        ] {
            assert_eq!(RequestPath::parse(p).unwrap().as_str(), p);
        }
    }

    #[test]
    fn unclean_paths_redirect_as_go_servemux() {
        assert_eq!(redirect("/metrics/../secret"), "/secret");
        assert_eq!(redirect("/metrics/%2e%2e/secret"), "/secret");
        assert_eq!(redirect("/metrics/%2E%2E/secret"), "/secret");
        assert_eq!(redirect("/metrics%2f..%2fsecret"), "/secret");
        assert_eq!(redirect("/%2e%2e/"), "/");
        assert_eq!(redirect("//metrics"), "/metrics");
        assert_eq!(redirect("/metrics//"), "/metrics/");
        assert_eq!(redirect("/./metrics"), "/metrics");
        assert_eq!(redirect("/.."), "/");
        assert_eq!(redirect("/metrics/."), "/metrics");
        assert_eq!(redirect("/metrics/./"), "/metrics/");
        assert_eq!(redirect(""), "/");
    }

    #[test]
    fn malformed_paths_are_refused() {
        for p in [
            "*", "metrics", "/a%", "/a%2", "/a%zz", "/%ff", "/a b", "/a\u{0}", "/a\n",
        ] {
            assert!(
                matches!(RequestPath::parse(p), Err(Error::InvalidPath { .. })),
                "{p:?}"
            );
        }
        let long = format!("/{}", "a".repeat(MAX_REQUEST_TARGET_BYTES));
        assert!(matches!(
            RequestPath::parse(&long),
            Err(Error::TooLarge { .. })
        ));
    }

    /// `is_clean`, and `RequestPath::parse`'s own pass for a path without escapes, agree with
    /// building the clean path, for every path of up to eight characters over `/`, `.` and `a`.
    #[test]
    fn is_clean_agrees_with_clean_path() {
        let mut paths = vec!["/".to_owned()];
        let mut frontier = paths.clone();
        for _ in 0..7 {
            let mut next = Vec::new();
            for p in &frontier {
                for c in ['/', '.', 'a'] {
                    next.push(format!("{p}{c}"));
                }
            }
            paths.extend(next.iter().cloned());
            frontier = next;
        }
        assert!(paths.len() > 3000);
        for p in &paths {
            assert_eq!(is_clean(p), clean_path(p) == *p, "{p:?}");
            match RequestPath::parse(p) {
                Ok(parsed) => assert_eq!(parsed.as_str(), p),
                Err(Error::PathNotClean { clean }) => {
                    assert_ne!(clean_path(p), *p, "{p:?}");
                    assert_eq!(clean, clean_path(p), "{p:?}");
                }
                Err(e) => panic!("{p:?}: {e}"),
            }
        }
    }

    #[test]
    fn borrows_unless_decoded() {
        let raw = "/api/v1/pods";
        assert!(matches!(
            RequestPath::parse(raw).unwrap().0,
            Cow::Borrowed(_)
        ));
        assert!(matches!(
            RequestPath::parse("/a%20b").unwrap().0,
            Cow::Owned(ref s) if s == "/a b"
        ));
    }

    #[test]
    fn decoded_utf8_and_slashes() {
        assert_eq!(RequestPath::parse("/%C3%A9").unwrap().as_str(), "/é");
        assert_eq!(RequestPath::parse("/a%2Fb").unwrap().as_str(), "/a/b");
    }
}
