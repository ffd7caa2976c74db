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
    /// is not a bearer credential (another scheme, or no token).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidToken`] when the token is longer than [`MAX_TOKEN_BYTES`] or holds a
    /// byte outside visible ASCII.
    pub fn from_authorization(value: &[u8]) -> Result<Option<BearerToken>, Error> {
        let value = value.trim_ascii();
        let mut parts = value.splitn(3, |b| *b == b' ');
        let (Some(scheme), Some(token)) = (parts.next(), parts.next()) else {
            return Ok(None);
        };
        if !scheme.eq_ignore_ascii_case(b"bearer") || token.is_empty() {
            return Ok(None);
        }
        check(token)?;
        let token = core::str::from_utf8(token).map_err(|_| Error::InvalidToken {
            reason: "not visible ASCII",
        })?;
        Ok(Some(BearerToken(Zeroizing::new(token.to_owned()))))
    }

    /// The token, for a TokenReview or an `Authorization: Bearer` header.
    #[must_use]
    pub fn expose_secret(&self) -> &str {
        &self.0
    }
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
    if !token.iter().all(|b| (b'!'..=b'~').contains(b)) {
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
