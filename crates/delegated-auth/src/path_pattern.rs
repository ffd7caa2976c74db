//! Go's `path.Match` shell patterns, as kube-rbac-proxy matches `--allow-paths` and
//! `--ignore-paths` with them.

use crate::error::Error;

/// A validated `path.Match` pattern: `*` any run of characters but `/`, `?` one character but
/// `/`, `[a-z]`/`[^a-z]` a class, `\` an escape; everything else itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PathPattern(String);

impl PathPattern {
    /// Validates `pattern` as Go does (a malformed pattern is `path.ErrBadPattern`).
    pub(crate) fn parse(pattern: &str) -> Result<Self, Error> {
        // Matching against the empty name visits every chunk of the pattern (Go checks the
        // rest of a pattern after a failed match), so it reports any malformed part.
        path_match(pattern, "").map_err(|()| Error::InvalidProxyConfig {
            reason: "a path pattern (--allow-paths, --ignore-paths) is malformed",
        })?;
        Ok(Self(pattern.to_owned()))
    }

    /// Whether `name` matches the whole pattern.
    pub(crate) fn matches(&self, name: &str) -> bool {
        path_match(&self.0, name).unwrap_or(false)
    }
}

/// `path.Match(pattern, name)`; `Err` for a malformed pattern.
fn path_match(mut pattern: &str, mut name: &str) -> Result<bool, ()> {
    'chunks: while !pattern.is_empty() {
        let (star, chunk, rest) = scan_chunk(pattern);
        pattern = rest;
        if star && chunk.is_empty() {
            // A trailing `*` matches the rest of the name, if it has no `/`.
            return Ok(!name.contains('/'));
        }
        if let Some(t) = match_chunk(chunk, name)? {
            // The last chunk must use up the name.
            if t.is_empty() || !pattern.is_empty() {
                name = t;
                continue;
            }
        }
        if star {
            // Skip characters of the name (never a `/`) until the chunk matches.
            for (i, c) in name.char_indices() {
                if c == '/' {
                    break;
                }
                let Some(after) = name.get(i.saturating_add(c.len_utf8())..) else {
                    break;
                };
                if let Some(t) = match_chunk(chunk, after)? {
                    if pattern.is_empty() && !t.is_empty() {
                        continue;
                    }
                    name = t;
                    continue 'chunks;
                }
            }
        }
        // No match: the rest of the pattern must still be well-formed.
        while !pattern.is_empty() {
            let (_, chunk, rest) = scan_chunk(pattern);
            pattern = rest;
            match_chunk(chunk, "")?;
        }
        return Ok(false);
    }
    Ok(name.is_empty())
}

/// Leading stars, then the chunk up to the next `*` outside a class.
fn scan_chunk(pattern: &str) -> (bool, &str, &str) {
    let trimmed = pattern.trim_start_matches('*');
    let star = trimmed.len() != pattern.len();
    let bytes = trimmed.as_bytes();
    let mut in_range = false;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'\\' if i.saturating_add(1) < bytes.len() => i = i.saturating_add(1),
            b'[' => in_range = true,
            b']' => in_range = false,
            b'*' if !in_range => break,
            _ => {}
        }
        i = i.saturating_add(1);
    }
    // `*` is ASCII, so `i` is a character boundary whenever the loop stopped on one.
    match (trimmed.get(..i), trimmed.get(i..)) {
        (Some(chunk), Some(rest)) => (star, chunk, rest),
        _ => (star, trimmed, ""),
    }
}

/// Matches `chunk` (no `*`) at the start of `s`: `Ok(Some(rest))` on a match, `Ok(None)` on
/// none, `Err` for a malformed chunk (checked even after a mismatch).
fn match_chunk<'s>(chunk: &str, s: &'s str) -> Result<Option<&'s str>, ()> {
    let mut chunk = chunk.chars();
    let mut s_chars = s.chars();
    let mut failed = false;
    while let Some(c) = chunk.next() {
        let next = if failed { None } else { s_chars.next() };
        if next.is_none() {
            failed = true;
        }
        match c {
            '[' => {
                let mut rest = chunk.clone();
                let negated = rest.clone().next() == Some('^');
                if negated {
                    rest.next();
                }
                let mut matched = false;
                let mut ranges = 0usize;
                loop {
                    if ranges > 0 && rest.clone().next() == Some(']') {
                        rest.next();
                        break;
                    }
                    let lo = class_char(&mut rest)?;
                    let mut hi = lo;
                    if rest.clone().next() == Some('-') {
                        rest.next();
                        hi = class_char(&mut rest)?;
                    }
                    if let Some(r) = next
                        && lo <= r
                        && r <= hi
                    {
                        matched = true;
                    }
                    ranges = ranges.saturating_add(1);
                }
                if matched == negated {
                    failed = true;
                }
                chunk = rest;
            }
            '?' => {
                if next == Some('/') {
                    failed = true;
                }
            }
            '\\' => {
                let Some(escaped) = chunk.next() else {
                    return Err(());
                };
                if next != Some(escaped) {
                    failed = true;
                }
            }
            c => {
                if next != Some(c) {
                    failed = true;
                }
            }
        }
    }
    Ok(if failed { None } else { Some(s_chars.as_str()) })
}

/// One character of a class (`getEsc`): not `-` or `]` unescaped, and not the last of the
/// pattern (a class must be closed).
fn class_char(chunk: &mut std::str::Chars<'_>) -> Result<char, ()> {
    let mut c = chunk.next().ok_or(())?;
    if c == '-' || c == ']' {
        return Err(());
    }
    if c == '\\' {
        c = chunk.next().ok_or(())?;
    }
    if chunk.clone().next().is_none() {
        return Err(());
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Go's `path` package `matchTests`: pattern | name | match | malformed.
    #[test]
    fn go_match_table() {
        let rows: &[(&str, &str, bool, bool)] = &[
            ("abc", "abc", true, false),
            ("*", "abc", true, false),
            ("*c", "abc", true, false),
            ("a*", "a", true, false),
            ("a*", "abc", true, false),
            ("a*", "ab/c", false, false),
            ("a*/b", "abc/b", true, false),
            ("a*/b", "a/c/b", false, false),
            ("a*b*c*d*e*/f", "axbxcxdxe/f", true, false),
            ("a*b*c*d*e*/f", "axbxcxdxexxx/f", true, false),
            ("a*b*c*d*e*/f", "axbxcxdxe/xxx/f", false, false),
            ("a*b*c*d*e*/f", "axbxcxdxexxx/fff", false, false),
            ("a*b?c*x", "abxbbxdbxebxczzx", true, false),
            ("a*b?c*x", "abxbbxdbxebxczzy", false, false),
            ("ab[c]", "abc", true, false),
            ("ab[b-d]", "abc", true, false),
            ("ab[e-g]", "abc", false, false),
            ("ab[^c]", "abc", false, false),
            ("ab[^b-d]", "abc", false, false),
            ("ab[^e-g]", "abc", true, false),
            ("a\\*b", "a*b", true, false),
            ("a\\*b", "ab", false, false),
            ("a?b", "a☺b", true, false),
            ("a[^a]b", "a☺b", true, false),
            ("a???b", "a☺b", false, false),
            ("a[^a][^a][^a]b", "a☺b", false, false),
            ("[a-ζ]*", "α", true, false),
            ("*[a-ζ]", "A", false, false),
            ("a?b", "a/b", false, false),
            ("a*b", "a/b", false, false),
            ("[\\]a]", "]", true, false),
            ("[\\-]", "-", true, false),
            ("[x\\-]", "x", true, false),
            ("[x\\-]", "-", true, false),
            ("[x\\-]", "z", false, false),
            ("[\\-x]", "x", true, false),
            ("[\\-x]", "-", true, false),
            ("[\\-x]", "a", false, false),
            ("[]a]", "]", false, true),
            ("[-]", "-", false, true),
            ("[x-]", "x", false, true),
            ("[x-]", "-", false, true),
            ("[x-]", "z", false, true),
            ("[-x]", "x", false, true),
            ("[-x]", "-", false, true),
            ("[-x]", "a", false, true),
            ("\\", "a", false, true),
            ("[a-b-c]", "a", false, true),
            ("[", "a", false, true),
            ("[^", "a", false, true),
            ("[^bc", "a", false, true),
            ("a[", "a", false, true),
            ("a[", "ab", false, true),
            ("a[", "x", false, true),
            ("a/b[", "x", false, true),
            ("*x", "xxx", true, false),
        ];
        for &(pattern, name, want, malformed) in rows {
            match path_match(pattern, name) {
                Ok(got) => {
                    assert!(!malformed, "{pattern:?} should be malformed");
                    assert_eq!(got, want, "{pattern:?} vs {name:?}");
                }
                Err(()) => assert!(malformed, "{pattern:?} vs {name:?}: unexpected error"),
            }
        }
    }
}
