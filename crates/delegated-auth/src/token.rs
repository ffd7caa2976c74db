//! A bearer token: the credential a TokenReview asks about.

use core::fmt;

use subtle::ConstantTimeEq as _;
use zeroize::Zeroizing;

use crate::error::Error;

/// The longest bearer token accepted, in bytes (16 KiB: a projected service-account token is
/// about 1 KiB; OIDC ID tokens with many groups stay well below this).
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// A bearer token: zeroised on drop, redacted in `Debug`, compared in constant time, with no
/// `Display`. Only visible ASCII (`!` to `~`) is accepted, so a token with a NUL, a space, a
/// line break or any other control byte is refused before it reaches a review or a cache.
/// Read it with [`BearerToken::expose_secret`].
///
/// ```
/// use delegated_auth::BearerToken;
/// let token = BearerToken::new("abcdef.0123456789abcdef".to_owned())?;
/// assert_eq!(format!("{token:?}"), "BearerToken(<redacted>)");
/// assert!(BearerToken::new("a\0b".to_owned()).is_err());
/// # Ok::<(), delegated_auth::Error>(())
/// ```
#[derive(Clone)]
pub struct BearerToken(Zeroizing<String>);

impl BearerToken {
    /// Takes `token` (zeroised also when refused).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidToken`] when it is empty, longer than [`MAX_TOKEN_BYTES`] or holds a
    /// byte outside visible ASCII.
    pub fn new(token: String) -> Result<BearerToken, Error> {
        let token = Zeroizing::new(token);
        check(token.as_bytes())?;
        Ok(BearerToken(token))
    }

    /// The token from an `Authorization` header value, as Kubernetes' bearer-token
    /// authenticator reads it: surrounding spaces trimmed, then `Bearer` (any case), one
    /// space, the token; anything after a further space is ignored. `Ok(None)` when the header
    /// is not a bearer credential (another scheme, or no token). A copy of
    /// [`BearerTokenRef::from_authorization`]'s token.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidToken`] when the token is longer than [`MAX_TOKEN_BYTES`] or holds a
    /// byte outside visible ASCII.
    pub fn from_authorization(value: &[u8]) -> Result<Option<BearerToken>, Error> {
        Ok(BearerTokenRef::from_authorization(value)?.map(|t| t.to_bearer_token()))
    }

    /// The token borrowed, for a cache key or an offline check without a copy.
    #[must_use]
    pub fn borrow_token(&self) -> BearerTokenRef<'_> {
        BearerTokenRef(&self.0)
    }

    /// The token, for a TokenReview or an `Authorization: Bearer` header.
    #[must_use]
    pub fn expose_secret(&self) -> &str {
        &self.0
    }
}

/// A bearer token borrowed from where it arrived (a request's `Authorization` header), checked
/// as [`BearerToken`] is, without a copy: what a cache lookup needs. Redacted in `Debug`,
/// compared in constant time, with no `Display`; [`BearerTokenRef::to_bearer_token`] makes
/// the owned, zeroised copy a review sends.
///
/// ```
/// use delegated_auth::BearerTokenRef;
/// let token = BearerTokenRef::from_authorization(b"Bearer abc.def")?.expect("a bearer token");
/// assert_eq!(token.expose_secret(), "abc.def");
/// assert_eq!(format!("{token:?}"), "BearerTokenRef(<redacted>)");
/// # Ok::<(), delegated_auth::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct BearerTokenRef<'a>(&'a str);

impl<'a> BearerTokenRef<'a> {
    /// Checks `token` as [`BearerToken::new`] does.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidToken`] when it is empty or holds a byte outside visible ASCII;
    /// [`Error::TooLarge`] when it is longer than [`MAX_TOKEN_BYTES`].
    pub fn new(token: &'a str) -> Result<BearerTokenRef<'a>, Error> {
        check(token.as_bytes())?;
        Ok(BearerTokenRef(token))
    }

    /// The token of an `Authorization` header value, read as
    /// [`BearerToken::from_authorization`] reads it.
    ///
    /// # Errors
    ///
    /// As [`BearerToken::from_authorization`].
    pub fn from_authorization(value: &'a [u8]) -> Result<Option<BearerTokenRef<'a>>, Error> {
        let value = value.trim_ascii();
        let Some(space) = value.iter().position(|b| *b == b' ') else {
            return Ok(None);
        };
        let (scheme, rest) = value.split_at(space);
        let rest = rest.get(1..).unwrap_or_default();
        if !scheme.eq_ignore_ascii_case(b"bearer") || rest.is_empty() {
            return Ok(None);
        }
        // Nearly always the whole rest is the token: one pass over it, which the compiler
        // vectorises, instead of a search for a space and then a check.
        let token = if rest.len() <= MAX_TOKEN_BYTES && visible(rest) {
            rest
        } else {
            let token = rest.split(|b| *b == b' ').next().unwrap_or_default();
            if token.is_empty() {
                return Ok(None);
            }
            check(token)?;
            token
        };
        let token = core::str::from_utf8(token).map_err(|_| Error::InvalidToken {
            reason: "not visible ASCII",
        })?;
        Ok(Some(BearerTokenRef(token)))
    }

    /// The token.
    #[must_use]
    pub fn expose_secret(&self) -> &'a str {
        self.0
    }

    /// An owned, zeroised copy.
    #[must_use]
    pub fn to_bearer_token(&self) -> BearerToken {
        BearerToken(Zeroizing::new(self.0.to_owned()))
    }
}

impl<'a> From<&'a BearerToken> for BearerTokenRef<'a> {
    fn from(token: &'a BearerToken) -> BearerTokenRef<'a> {
        token.borrow_token()
    }
}

impl fmt::Debug for BearerTokenRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BearerTokenRef(<redacted>)")
    }
}

impl PartialEq for BearerTokenRef<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.0.as_bytes().ct_eq(other.0.as_bytes()).into()
    }
}

impl Eq for BearerTokenRef<'_> {}

/// Whether every byte is visible ASCII (`!` to `~`): a fold with no early exit, so that it is
/// vectorised.
fn visible(bytes: &[u8]) -> bool {
    bytes.iter().fold(0u8, |bad, &b| {
        bad | u8::from(b.wrapping_sub(b'!') > b'~' - b'!')
    }) == 0
}

fn check(token: &[u8]) -> Result<(), Error> {
    if token.is_empty() {
        return Err(Error::InvalidToken { reason: "empty" });
    }
    if token.len() > MAX_TOKEN_BYTES {
        return Err(Error::TooLarge {
            what: "bearer token",
            limit: MAX_TOKEN_BYTES,
        });
    }
    if !visible(token) {
        return Err(Error::InvalidToken {
            reason: "not visible ASCII",
        });
    }
    Ok(())
}

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

impl PartialEq for BearerToken {
    fn eq(&self, other: &Self) -> bool {
        self.0.as_bytes().ct_eq(other.0.as_bytes()).into()
    }
}

impl Eq for BearerToken {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_is_no_token() {
        for bad in [
            "",
            "a b",
            "a\0b",
            "a\nb",
            "a\tb",
            "\u{e9}t\u{e9}",
            "a\u{7f}",
        ] {
            assert!(BearerToken::new(bad.to_owned()).is_err(), "{bad:?}");
        }
        let huge = "a".repeat(MAX_TOKEN_BYTES + 1);
        assert!(matches!(
            BearerToken::new(huge),
            Err(Error::TooLarge { .. })
        ));
        assert!(BearerToken::new("a".repeat(MAX_TOKEN_BYTES)).is_ok());
    }

    #[test]
    fn reads_authorization_as_kubernetes() {
        let read = |v: &str| {
            BearerToken::from_authorization(v.as_bytes())
                .unwrap()
                .map(|t| t.expose_secret().to_owned())
        };
        assert_eq!(read("Bearer abc").as_deref(), Some("abc"));
        assert_eq!(read("  bearer abc  ").as_deref(), Some("abc"));
        assert_eq!(read("BEARER abc extra").as_deref(), Some("abc"));
        assert_eq!(read("Basic abc"), None);
        assert_eq!(read("Bearer"), None);
        assert_eq!(read("Bearer "), None);
        assert_eq!(read("Bearer  abc"), None);
        assert!(BearerToken::from_authorization(b"Bearer a\0b").is_err());
        assert!(BearerToken::from_authorization(b"Bearer a\0b c").is_err());
        assert_eq!(read("Bearer abc d\0e").as_deref(), Some("abc"));
        assert!(BearerToken::from_authorization(b"Bearer abc\tdef").is_err());
    }

    /// The one-pass reading agrees with Kubernetes' `strings.SplitN(value, " ", 3)` then the
    /// check, for every header of up to six bytes over the bytes that matter.
    #[test]
    fn the_fast_reading_agrees_with_split_then_check() {
        fn reference(value: &[u8]) -> Result<Option<Vec<u8>>, ()> {
            let value = value.trim_ascii();
            let mut parts = value.splitn(3, |b| *b == b' ');
            let (Some(scheme), Some(token)) = (parts.next(), parts.next()) else {
                return Ok(None);
            };
            if !scheme.eq_ignore_ascii_case(b"bearer") || token.is_empty() {
                return Ok(None);
            }
            if token.iter().all(|b| (b'!'..=b'~').contains(b)) {
                Ok(Some(token.to_vec()))
            } else {
                Err(())
            }
        }
        let alphabet = [b'a', b' ', b'\t', b'\0', 0x7f, 0xc3, b'~', b'!'];
        let mut count = 0;
        for len in 0..=6u32 {
            for n in 0..alphabet.len().pow(len) {
                let mut value = b"Bearer ".to_vec();
                let mut n = n;
                for _ in 0..len {
                    value.push(alphabet[n % alphabet.len()]);
                    n /= alphabet.len();
                }
                let ours = BearerTokenRef::from_authorization(&value)
                    .map(|t| t.map(|t| t.expose_secret().as_bytes().to_vec()))
                    .map_err(|_| ());
                assert_eq!(ours, reference(&value), "{value:?}");
                count += 1;
            }
        }
        assert_eq!(count, 299_593);
    }

    #[test]
    fn visible_agrees_with_the_byte_by_byte_check_at_every_length_and_position() {
        for len in 0..70 {
            let good = vec![b'x'; len];
            assert!(visible(&good));
            for at in 0..len {
                for bad in [b' ', 0, 0x7f, 0x80, 0xff, b'\n'] {
                    let mut v = good.clone();
                    v[at] = bad;
                    assert!(!visible(&v), "{len} {at} {bad}");
                }
                for ok in [b'!', b'~'] {
                    let mut v = good.clone();
                    v[at] = ok;
                    assert!(visible(&v));
                }
            }
        }
    }

    #[test]
    fn debug_redacts_and_equality_is_by_value() {
        let a = BearerToken::new("secret-canary".to_owned()).unwrap();
        let b = BearerToken::new("secret-canary".to_owned()).unwrap();
        assert_eq!(a, b);
        assert!(!format!("{a:?}").contains("canary"));
        assert_ne!(a, BearerToken::new("secret-canarx".to_owned()).unwrap());
    }
}
