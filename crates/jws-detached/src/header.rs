//! The canonical protected header Kubernetes writes: `{"alg":"HS256","kid":"<kid>"}`.
//!
//! go-jose serialises the header as a Go map with its fork of `encoding/json`: keys sorted, no
//! whitespace, and strings escaped as that encoder does (`"` and `\` with a backslash, `\n`, `\r`,
//! `\t`, other control bytes and `<`, `>`, `&` as `\u00XX`, U+2028 and U+2029 as `\u2028` and
//! `\u2029`). Kubernetes token ids are `[a-z0-9]{6}`, for which nothing is escaped.

use crate::limits::{MAX_CANONICAL_HEADER_B64_LEN, MAX_CANONICAL_HEADER_JSON_LEN};
use crate::{Error, MAX_KID_LEN, b64};

/// Kids up to this length use small stack buffers (no large zero-fill per call).
const SMALL_KID_LEN: usize = 32;
const SMALL_JSON_LEN: usize = 24 + 6 * SMALL_KID_LEN;
const SMALL_B64_LEN: usize = (SMALL_JSON_LEN * 4).div_ceil(3);

/// The first 21 bytes of every canonical header, `{"alg":"HS256","kid":`, a whole number of
/// base64 groups ...
#[cfg(test)]
const PREFIX_JSON: &[u8; 21] = br#"{"alg":"HS256","kid":"#;
/// ... and their encoding, so only `"<kid>"}` is encoded per call.
const PREFIX_B64: &[u8; 28] = b"eyJhbGciOiJIUzI1NiIsImtpZCI6";
/// Kids up to this length with nothing to escape take the fast path.
const FAST_KID_LEN: usize = 32;
/// `"` + kid + `"}`.
const FAST_TAIL_LEN: usize = FAST_KID_LEN + 3;
const FAST_B64_LEN: usize = PREFIX_B64.len() + FAST_TAIL_LEN.div_ceil(3) * 4;

/// Builds the base64url-encoded canonical header for `kid` in a stack buffer sized for the kid
/// and passes it to `f`.
pub(crate) fn with_canonical_header<R>(kid: &str, f: impl FnOnce(&[u8]) -> R) -> Result<R, Error> {
    check_kid(kid)?;
    // Token ids (`[a-z0-9]{6}`) and other short kids without characters to escape: the JSON
    // is the constant prefix, then `"<kid>"}`.
    if kid.len() <= FAST_KID_LEN && kid.bytes().all(|b| b.is_ascii() && is_plain(char::from(b))) {
        let mut tail = [0u8; FAST_TAIL_LEN];
        let mut b64 = [0u8; FAST_B64_LEN];
        let tail_len = kid.len().wrapping_add(3);
        if let (Some(t), Some((prefix, rest))) = (
            tail.get_mut(..tail_len),
            b64.split_first_chunk_mut::<{ PREFIX_B64.len() }>(),
        ) {
            if let Some((quote, t)) = t.split_first_mut() {
                *quote = b'"';
                if let Some((k, end)) = t.split_at_mut_checked(kid.len()) {
                    k.copy_from_slice(kid.as_bytes());
                    end.copy_from_slice(br#""}"#);
                }
            }
            *prefix = *PREFIX_B64;
            let n = b64::encode(tail.get(..tail_len).unwrap_or_default(), rest);
            return Ok(f(b64
                .get(..PREFIX_B64.len().wrapping_add(n))
                .unwrap_or_default()));
        }
    }
    if kid.len() <= SMALL_KID_LEN {
        let mut b64 = [0u8; SMALL_B64_LEN];
        let len = build::<SMALL_JSON_LEN>(kid, &mut b64)?;
        Ok(f(b64.get(..len).unwrap_or_default()))
    } else {
        let mut b64 = [0u8; MAX_CANONICAL_HEADER_B64_LEN];
        let len = build::<MAX_CANONICAL_HEADER_JSON_LEN>(kid, &mut b64)?;
        Ok(f(b64.get(..len).unwrap_or_default()))
    }
}

/// Writes the JSON header for `kid` into a `J`-byte buffer and its encoding into `out`.
fn build<const J: usize>(kid: &str, out: &mut [u8]) -> Result<usize, Error> {
    let mut json = Writer {
        buf: [0; J],
        len: 0,
    };
    // The buffers hold the worst case for the kid length, so this only fails if that sizing
    // is wrong.
    let built = json
        .push(br#"{"alg":"HS256","kid":""#)
        .and_then(|()| escape_into(kid, &mut json))
        .and_then(|()| json.push(br#""}"#));
    if built.is_none() {
        return Err(Error::KidTooLong {
            len: kid.len(),
            max: MAX_KID_LEN,
        });
    }
    Ok(b64::encode(json.as_bytes(), out))
}

/// Checks the kid limits shared by signing and both verification modes.
pub(crate) fn check_kid(kid: &str) -> Result<(), Error> {
    if kid.is_empty() {
        return Err(Error::EmptyKid);
    }
    if kid.len() > MAX_KID_LEN {
        return Err(Error::KidTooLong {
            len: kid.len(),
            max: MAX_KID_LEN,
        });
    }
    Ok(())
}

struct Writer<const J: usize> {
    buf: [u8; J],
    len: usize,
}

impl<const J: usize> Writer<J> {
    fn push(&mut self, bytes: &[u8]) -> Option<()> {
        let end = self.len.checked_add(bytes.len())?;
        self.buf.get_mut(self.len..end)?.copy_from_slice(bytes);
        self.len = end;
        Some(())
    }

    fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or_default()
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn hex(nibble: u8) -> u8 {
    HEX.get(usize::from(nibble & 0x0f)).copied().unwrap_or(b'0')
}

/// Whether go-jose's encoder writes this character unescaped.
fn is_plain(c: char) -> bool {
    !matches!(
        c,
        '"' | '\\' | '<' | '>' | '&' | '\u{0}'..='\u{1f}' | '\u{2028}' | '\u{2029}'
    )
}

/// Escapes `s` as go-jose's JSON encoder does, copying runs of plain characters at once.
fn escape_into<const J: usize>(s: &str, out: &mut Writer<J>) -> Option<()> {
    let mut rest = s;
    loop {
        let plain_len = rest.find(|c: char| !is_plain(c)).unwrap_or(rest.len());
        let (plain, tail) = rest.split_at_checked(plain_len)?;
        out.push(plain.as_bytes())?;
        let mut chars = tail.chars();
        let Some(c) = chars.next() else {
            return Some(());
        };
        match c {
            '"' => out.push(br#"\""#)?,
            '\\' => out.push(br"\\")?,
            '\n' => out.push(br"\n")?,
            '\r' => out.push(br"\r")?,
            '\t' => out.push(br"\t")?,
            '\u{2028}' => out.push(br"\u2028")?,
            '\u{2029}' => out.push(br"\u2029")?,
            c => {
                let b = u8::try_from(u32::from(c)).unwrap_or(0);
                out.push(&[b'\\', b'u', b'0', b'0', hex(b >> 4), hex(b)])?;
            }
        }
        rest = chars.as_str();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(kid: &str) -> String {
        let mut w = Writer::<MAX_CANONICAL_HEADER_JSON_LEN> {
            buf: [0; MAX_CANONICAL_HEADER_JSON_LEN],
            len: 0,
        };
        escape_into(kid, &mut w).unwrap();
        String::from_utf8(w.as_bytes().to_vec()).unwrap()
    }

    #[test]
    fn token_ids_are_not_escaped() {
        assert_eq!(json("abcdef"), "abcdef");
        assert_eq!(json("0a1b2c"), "0a1b2c");
    }

    #[test]
    fn go_jose_escaping() {
        assert_eq!(json("a\"b\\c"), r#"a\"b\\c"#);
        assert_eq!(json("\n\r\t"), r"\n\r\t");
        assert_eq!(json("<>&"), r"\u003c\u003e\u0026");
        assert_eq!(json("\u{0}\u{1f}\u{8}\u{c}"), r"\u0000\u001f\u0008\u000c");
        assert_eq!(json("\u{2028}\u{2029}"), r"\u2028\u2029");
        assert_eq!(json("é/日本"), "é/日本");
    }

    #[test]
    fn worst_case_kid_fits() {
        let kid = "\u{1}".repeat(MAX_KID_LEN);
        let len = with_canonical_header(&kid, <[u8]>::len).unwrap();
        assert_eq!(len, MAX_CANONICAL_HEADER_B64_LEN);
        let kid = "\u{1}".repeat(SMALL_KID_LEN);
        let len = with_canonical_header(&kid, <[u8]>::len).unwrap();
        assert_eq!(len, SMALL_B64_LEN);
    }

    /// The fast path's constant prefix is the encoding of the JSON prefix, and the fast path
    /// builds the same header as the general one for every kid length it takes.
    #[test]
    fn fast_path_matches_general_build() {
        let mut prefix = [0u8; 28];
        assert_eq!(b64::encode(PREFIX_JSON, &mut prefix), 28);
        assert_eq!(&prefix, PREFIX_B64);
        for len in 1..=FAST_KID_LEN + 1 {
            for kid in [
                "a".repeat(len),
                "Z9-_.~ /".chars().cycle().take(len).collect(),
            ] {
                let fast = with_canonical_header(&kid, <[u8]>::to_vec).unwrap();
                let mut general = [0u8; MAX_CANONICAL_HEADER_B64_LEN];
                let n = build::<MAX_CANONICAL_HEADER_JSON_LEN>(&kid, &mut general).unwrap();
                assert_eq!(fast, &general[..n], "kid {kid:?}");
            }
        }
    }

    #[test]
    fn reference_example_header() {
        // kubernetes-reference §5.3: id `abcdef`.
        let h = with_canonical_header("abcdef", <[u8]>::to_vec).unwrap();
        assert_eq!(h, b"eyJhbGciOiJIUzI1NiIsImtpZCI6ImFiY2RlZiJ9");
    }
}
