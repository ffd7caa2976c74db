//! Standards-mode protected header checks: a strict, allocation-free JSON object scanner
//! (RFC 8259) that validates the whole header and picks out `alg`, `kid`, `crit` and `b64`.
//!
//! Member names and string values are compared after escape processing
//! (`"HS\u0032\u0035\u0036"` is `HS256`), names are case-sensitive, duplicate names are
//! rejected, lone surrogates and raw control characters are rejected.

use crate::{Error, HeaderError, MAX_HEADER_DEPTH, MAX_HEADER_MEMBERS};

/// Checks the decoded protected header `json` for standards-mode verification under `kid`.
pub(crate) fn check_header(json: &[u8], kid: &str) -> Result<(), Error> {
    if core::str::from_utf8(json).is_err() {
        return Err(HeaderError::NotUtf8.into());
    }
    let mut p = Parser {
        all: json,
        rest: json,
    };
    p.ws();
    match p.peek() {
        Some(b'{') => p.bump(),
        Some(b'[' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n') => {
            return Err(HeaderError::NotObject.into());
        }
        _ => return Err(p.syntax().into()),
    }

    let mut names: [&[u8]; MAX_HEADER_MEMBERS] = [&[]; MAX_HEADER_MEMBERS];
    let mut count = 0usize;
    let mut alg = None;
    let mut header_kid = None;
    let mut b64 = None;
    let mut crit = false;

    p.ws();
    if p.peek() == Some(b'}') {
        p.bump();
    } else {
        loop {
            p.ws();
            let name = p.string()?;
            if names
                .iter()
                .take(count)
                .any(|prev| json_str_eq_json(prev, name))
            {
                return Err(HeaderError::DuplicateMember.into());
            }
            *names.get_mut(count).ok_or(HeaderError::TooManyMembers)? = name;
            count = count.saturating_add(1);
            p.ws();
            p.expect(b':')?;
            p.ws();
            let value = p.value(0)?;
            if json_str_eq(name, b"alg") {
                alg = Some(value);
            } else if json_str_eq(name, b"kid") {
                header_kid = Some(value);
            } else if json_str_eq(name, b"b64") {
                b64 = Some(value);
            } else if json_str_eq(name, b"crit") {
                crit = true;
            }
            p.ws();
            match p.peek() {
                Some(b',') => p.bump(),
                Some(b'}') => {
                    p.bump();
                    break;
                }
                _ => return Err(p.syntax().into()),
            }
        }
    }
    p.ws();
    if !p.rest.is_empty() {
        return Err(HeaderError::TrailingData.into());
    }

    if crit {
        return Err(Error::CriticalHeader);
    }
    match b64 {
        None | Some(Value::Bool(true)) => {}
        Some(_) => return Err(Error::UnencodedPayload),
    }
    match alg {
        None => return Err(Error::MissingHeaderParameter { name: "alg" }),
        Some(Value::Str(raw)) if json_str_eq(raw, b"HS256") => {}
        Some(Value::Str(_)) => return Err(Error::UnsupportedAlgorithm),
        Some(_) => return Err(HeaderError::WrongType { name: "alg" }.into()),
    }
    match header_kid {
        None => Err(Error::MissingHeaderParameter { name: "kid" }),
        Some(Value::Str(raw)) if json_str_eq(raw, kid.as_bytes()) => Ok(()),
        Some(Value::Str(_)) => Err(Error::KidMismatch),
        Some(_) => Err(HeaderError::WrongType { name: "kid" }.into()),
    }
}

/// The part of a JSON value the checks need.
#[derive(Clone, Copy)]
enum Value<'a> {
    /// A string, as its raw (still escaped) bytes between the quotes.
    Str(&'a [u8]),
    Bool(bool),
    /// A number, `null`, an array or an object.
    Other,
}

struct Parser<'a> {
    all: &'a [u8],
    rest: &'a [u8],
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.rest.first().copied()
    }

    fn bump(&mut self) {
        if let Some((_, rest)) = self.rest.split_first() {
            self.rest = rest;
        }
    }

    fn syntax(&self) -> HeaderError {
        HeaderError::Syntax {
            offset: self.all.len().saturating_sub(self.rest.len()),
        }
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.bump();
        }
    }

    fn expect(&mut self, b: u8) -> Result<(), HeaderError> {
        if self.peek() == Some(b) {
            self.bump();
            Ok(())
        } else {
            Err(self.syntax())
        }
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), HeaderError> {
        match self.rest.strip_prefix(word) {
            Some(rest) => {
                self.rest = rest;
                Ok(())
            }
            None => Err(self.syntax()),
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value<'a>, HeaderError> {
        match self.peek() {
            Some(b'"') => self.string().map(Value::Str),
            Some(b'{') => self.container(depth, b'}', true).map(|()| Value::Other),
            Some(b'[') => self.container(depth, b']', false).map(|()| Value::Other),
            Some(b't') => self.literal(b"true").map(|()| Value::Bool(true)),
            Some(b'f') => self.literal(b"false").map(|()| Value::Bool(false)),
            Some(b'n') => self.literal(b"null").map(|()| Value::Other),
            Some(b'-' | b'0'..=b'9') => self.number().map(|()| Value::Other),
            _ => Err(self.syntax()),
        }
    }

    /// An object (`close` = `}`, members) or an array (`close` = `]`, elements) nested inside a
    /// header value.
    fn container(&mut self, depth: usize, close: u8, object: bool) -> Result<(), HeaderError> {
        let depth = depth.saturating_add(1);
        if depth > MAX_HEADER_DEPTH {
            return Err(HeaderError::TooDeep);
        }
        self.bump();
        self.ws();
        if self.peek() == Some(close) {
            self.bump();
            return Ok(());
        }
        loop {
            self.ws();
            if object {
                self.string()?;
                self.ws();
                self.expect(b':')?;
                self.ws();
            }
            self.value(depth)?;
            self.ws();
            match self.peek() {
                Some(b',') => self.bump(),
                Some(c) if c == close => {
                    self.bump();
                    return Ok(());
                }
                _ => return Err(self.syntax()),
            }
        }
    }

    fn digits(&mut self) -> usize {
        let mut n = 0usize;
        while let Some(b'0'..=b'9') = self.peek() {
            self.bump();
            n = n.saturating_add(1);
        }
        n
    }

    fn number(&mut self) -> Result<(), HeaderError> {
        if self.peek() == Some(b'-') {
            self.bump();
        }
        match self.peek() {
            Some(b'0') => self.bump(),
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.syntax()),
        }
        if self.peek() == Some(b'.') {
            self.bump();
            if self.digits() == 0 {
                return Err(self.syntax());
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.bump();
            if let Some(b'+' | b'-') = self.peek() {
                self.bump();
            }
            if self.digits() == 0 {
                return Err(self.syntax());
            }
        }
        Ok(())
    }

    /// A string; returns the raw bytes between the quotes after validating every escape.
    fn string(&mut self) -> Result<&'a [u8], HeaderError> {
        self.expect(b'"')?;
        let start = self.rest;
        loop {
            match self.peek() {
                None => return Err(self.syntax()),
                Some(b'"') => {
                    let len = start.len().saturating_sub(self.rest.len());
                    self.bump();
                    return start.get(..len).ok_or(HeaderError::Syntax { offset: 0 });
                }
                Some(b'\\') => {
                    self.bump();
                    match self.peek() {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.bump(),
                        Some(b'u') => {
                            self.bump();
                            let unit = self.hex4()?;
                            if (0xd800..0xdc00).contains(&unit) {
                                self.literal(b"\\u")?;
                                let low = self.hex4()?;
                                if !(0xdc00..0xe000).contains(&low) {
                                    return Err(self.syntax());
                                }
                            } else if (0xdc00..0xe000).contains(&unit) {
                                return Err(self.syntax());
                            }
                        }
                        _ => return Err(self.syntax()),
                    }
                }
                Some(0..=0x1f) => return Err(self.syntax()),
                Some(_) => self.bump(),
            }
        }
    }

    fn hex4(&mut self) -> Result<u16, HeaderError> {
        let Some((digits, rest)) = self.rest.split_first_chunk::<4>() else {
            return Err(self.syntax());
        };
        let unit = hex4(digits).ok_or_else(|| self.syntax())?;
        self.rest = rest;
        Ok(unit)
    }
}

fn hex4(digits: &[u8; 4]) -> Option<u16> {
    let mut unit = 0u16;
    for &d in digits {
        let v = char::from(d).to_digit(16)?;
        unit = (unit << 4) | u16::try_from(v).ok()?;
    }
    Some(unit)
}

/// The bytes of a validated raw JSON string after escape processing.
struct Unescaped<'a> {
    raw: &'a [u8],
    pending: [u8; 4],
    pending_len: usize,
    pending_pos: usize,
}

impl<'a> Unescaped<'a> {
    fn new(raw: &'a [u8]) -> Self {
        Unescaped {
            raw,
            pending: [0; 4],
            pending_len: 0,
            pending_pos: 0,
        }
    }

    fn take_unit(&mut self) -> Option<u16> {
        let (digits, rest) = self.raw.split_first_chunk::<4>()?;
        self.raw = rest;
        hex4(digits)
    }
}

impl Iterator for Unescaped<'_> {
    type Item = u8;

    fn next(&mut self) -> Option<u8> {
        if self.pending_pos < self.pending_len {
            let b = self.pending.get(self.pending_pos).copied();
            self.pending_pos = self.pending_pos.saturating_add(1);
            return b;
        }
        let (&b, rest) = self.raw.split_first()?;
        self.raw = rest;
        if b != b'\\' {
            return Some(b);
        }
        let (&e, rest) = self.raw.split_first()?;
        self.raw = rest;
        let simple = match e {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            // Only validated strings are unescaped; anything else yields a byte that never
            // occurs in UTF-8, so it compares unequal to every string.
            _ => 0xff,
        };
        if e != b'u' {
            return Some(simple);
        }
        let first = self.take_unit();
        let second = match first {
            Some(0xd800..=0xdbff) => {
                self.raw = self.raw.get(2..).unwrap_or_default();
                self.take_unit()
            }
            _ => None,
        };
        let units = first.into_iter().chain(second);
        let Some(Ok(c)) = char::decode_utf16(units).next() else {
            return Some(0xff);
        };
        let len = c.encode_utf8(&mut self.pending).len();
        self.pending_len = len;
        self.pending_pos = 1;
        self.pending.first().copied()
    }
}

/// Whether the raw JSON string `raw` denotes exactly the bytes `target`.
fn json_str_eq(raw: &[u8], target: &[u8]) -> bool {
    if !raw.contains(&b'\\') {
        return raw == target;
    }
    Unescaped::new(raw).eq(target.iter().copied())
}

/// Whether two raw JSON strings denote the same string.
fn json_str_eq_json(a: &[u8], b: &[u8]) -> bool {
    if a == b {
        return true;
    }
    Unescaped::new(a).eq(Unescaped::new(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(json: &str) -> Result<(), Error> {
        check_header(json.as_bytes(), "abcdef")
    }

    fn syntax(json: &str) -> bool {
        matches!(
            check(json),
            Err(Error::InvalidHeader {
                reason: HeaderError::Syntax { .. }
            })
        )
    }

    #[test]
    fn accepts_any_valid_object_form() {
        for ok in [
            r#"{"alg":"HS256","kid":"abcdef"}"#,
            r#"{"kid":"abcdef","alg":"HS256"}"#,
            " {\r\n \"alg\" : \"HS256\" ,\t\"kid\":\"abcdef\" } ",
            r#"{"alg":"HS\u0032\u0035\u0036","kid":"\u0061bcdef"}"#,
            r#"{"alg":"HS256","kid":"abcdef","typ":"JOSE","x":[1,-2.5e+3,{"a":null}],"b64":true}"#,
            r#"{"alg":"HS256","kid":"abcdef","\ud83d\ude00":"\ud83d\ude00 \/ \b\f\n\r\t"}"#,
        ] {
            assert_eq!(check(ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn rejects_non_objects() {
        for bad in [r#"["HS256","abcdef"]"#, r#""HS256""#, "1", "null", "true"] {
            assert_eq!(check(bad), Err(HeaderError::NotObject.into()), "{bad}");
        }
        assert!(syntax(""));
        assert!(syntax("\u{feff}{}"), "BOM");
    }

    #[test]
    fn rejects_trailing_data_and_multiple_texts() {
        for bad in [
            r#"{"alg":"HS256","kid":"abcdef"}x"#,
            r#"{"alg":"HS256","kid":"abcdef"}{}"#,
        ] {
            assert_eq!(check(bad), Err(HeaderError::TrailingData.into()));
        }
    }

    #[test]
    fn rejects_malformed_json() {
        for bad in [
            r#"{"alg":"HS256","kid":"abcdef",}"#,
            r#"{"alg":"HS256" "kid":"abcdef"}"#,
            r#"{"alg":HS256,"kid":"abcdef"}"#,
            r#"{'alg':'HS256'}"#,
            r#"{"alg":"HS256","kid":"abcdef","n":01}"#,
            r#"{"alg":"HS256","kid":"abcdef","n":1.}"#,
            r#"{"alg":"HS256","kid":"abcdef","n":+1}"#,
            r#"{"alg":"HS256","kid":"abcdef","n":1e}"#,
            r#"{"alg":"HS256","kid":"abcdef","s":"\x"}"#,
            r#"{"alg":"HS256","kid":"abcdef","s":"\ud800"}"#,
            r#"{"alg":"HS256","kid":"abcdef","s":"\udc00"}"#,
            r#"{"alg":"HS256","kid":"abcdef","s":"\ud800\u0041"}"#,
            r#"{"alg":"HS256","kid":"abcdef","s":"\u12"}"#,
            "{\"alg\":\"HS256\",\"kid\":\"abc\ndef\"}",
            r#"{"alg":"HS256","kid":"abcdef","a":[1,2"#,
            r#"{"alg":"HS256","kid":"abcdef","a":tru}"#,
            r#"{"alg":"HS256""#,
        ] {
            assert!(syntax(bad), "{bad}: {:?}", check(bad));
        }
        assert_eq!(
            check_header(b"{\"alg\":\"\xff\"}", "abcdef"),
            Err(HeaderError::NotUtf8.into())
        );
    }

    #[test]
    fn rejects_duplicates_even_when_escaped() {
        for bad in [
            r#"{"alg":"HS256","alg":"HS256","kid":"abcdef"}"#,
            r#"{"alg":"HS256","\u0061lg":"none","kid":"abcdef"}"#,
            r#"{"alg":"HS256","kid":"abcdef","x":1,"x":2}"#,
        ] {
            assert_eq!(
                check(bad),
                Err(HeaderError::DuplicateMember.into()),
                "{bad}"
            );
        }
    }

    #[test]
    fn header_parameter_rules() {
        assert_eq!(
            check(r#"{"alg":"HS256","kid":"abcdef","crit":["b64"],"b64":false}"#),
            Err(Error::CriticalHeader)
        );
        assert_eq!(
            check(r#"{"alg":"HS256","kid":"abcdef","crit":[]}"#),
            Err(Error::CriticalHeader)
        );
        assert_eq!(
            check(r#"{"alg":"HS256","kid":"abcdef","b64":false}"#),
            Err(Error::UnencodedPayload)
        );
        assert_eq!(
            check(r#"{"alg":"HS256","kid":"abcdef","b64":"true"}"#),
            Err(Error::UnencodedPayload)
        );
        for alg in ["none", "HS512", "RS256", "hs256", "HS256\\u0000", "HS256 "] {
            let h = format!(r#"{{"alg":"{alg}","kid":"abcdef"}}"#);
            assert_eq!(check(&h), Err(Error::UnsupportedAlgorithm), "{h}");
        }
        assert_eq!(
            check(r#"{"alg":["HS256"],"kid":"abcdef"}"#),
            Err(HeaderError::WrongType { name: "alg" }.into())
        );
        assert_eq!(
            check(r#"{"kid":"abcdef"}"#),
            Err(Error::MissingHeaderParameter { name: "alg" })
        );
        assert_eq!(
            check(r#"{"Alg":"HS256","kid":"abcdef"}"#),
            Err(Error::MissingHeaderParameter { name: "alg" })
        );
        assert_eq!(
            check(r#"{"alg":"HS256"}"#),
            Err(Error::MissingHeaderParameter { name: "kid" })
        );
        assert_eq!(
            check(r#"{"alg":"HS256","kid":"abcdeg"}"#),
            Err(Error::KidMismatch)
        );
        assert_eq!(
            check(r#"{"alg":"HS256","kid":"ABCDEF"}"#),
            Err(Error::KidMismatch)
        );
        assert_eq!(
            check(r#"{"alg":"HS256","kid":7}"#),
            Err(HeaderError::WrongType { name: "kid" }.into())
        );
    }

    #[test]
    fn limits() {
        let deep = format!(
            r#"{{"alg":"HS256","kid":"abcdef","x":{}{}}}"#,
            "[".repeat(MAX_HEADER_DEPTH + 1),
            "]".repeat(MAX_HEADER_DEPTH + 1)
        );
        assert_eq!(check(&deep), Err(HeaderError::TooDeep.into()));
        let ok_deep = format!(
            r#"{{"alg":"HS256","kid":"abcdef","x":{}{}}}"#,
            "[".repeat(MAX_HEADER_DEPTH),
            "]".repeat(MAX_HEADER_DEPTH)
        );
        assert_eq!(check(&ok_deep), Ok(()));
        let mut many = String::from(r#"{"alg":"HS256","kid":"abcdef""#);
        for i in 0..MAX_HEADER_MEMBERS {
            many.push_str(&format!(r#","m{i}":0"#));
        }
        many.push('}');
        assert_eq!(check(&many), Err(HeaderError::TooManyMembers.into()));
    }
}
