//! The token secret.

use std::fmt;
use std::str::FromStr;

use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::Error;
use crate::constants::{TOKEN_SECRET_LEN, is_token_char};

/// A bootstrap token secret: exactly 16 characters of `[a-z0-9]`.
///
/// Stored inline and zeroed on drop; `Debug` prints `TokenSecret(<redacted>)`; there is no
/// `Display`, `Hash` or `Serialize`; equality is constant-time (`subtle`). Read it with
/// [`expose_secret`](Self::expose_secret).
///
/// ```
/// use bootstrap_token::TokenSecret;
/// let s: TokenSecret = "0123456789abcdef".parse()?;
/// assert_eq!(s.expose_secret(), "0123456789abcdef");
/// assert_eq!(format!("{s:?}"), "TokenSecret(<redacted>)");
/// # Ok::<(), bootstrap_token::Error>(())
/// ```
#[derive(Clone)]
pub struct TokenSecret(Zeroizing<[u8; TOKEN_SECRET_LEN]>);

impl TokenSecret {
    /// Parses a token secret from bytes. Every byte is examined, whatever the earlier bytes were
    /// (no early exit on the first bad character).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTokenSecret`] unless the input is exactly 16 bytes of `[a-z0-9]`.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let arr: [u8; TOKEN_SECRET_LEN] =
            bytes.try_into().map_err(|_| Error::InvalidTokenSecret)?;
        let arr = Zeroizing::new(arr);
        let mut ok = true;
        for &b in arr.iter() {
            ok &= is_token_char(b);
        }
        if ok {
            Ok(Self(arr))
        } else {
            Err(Error::InvalidTokenSecret)
        }
    }

    /// The secret. Handle with care: never log it.
    #[must_use]
    pub fn expose_secret(&self) -> &str {
        // Always ASCII by construction.
        std::str::from_utf8(&self.0[..]).unwrap_or_default()
    }

    /// Constant-time comparison with presented bytes (unequal at once when lengths differ, as
    /// Go's `subtle.ConstantTimeCompare`).
    #[must_use]
    pub fn ct_eq_bytes(&self, other: &[u8]) -> bool {
        bool::from(self.0[..].ct_eq(other))
    }

    pub(crate) fn from_array(arr: [u8; TOKEN_SECRET_LEN]) -> Self {
        Self(Zeroizing::new(arr))
    }
}

impl FromStr for TokenSecret {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        Self::from_bytes(s.as_bytes())
    }
}

impl PartialEq for TokenSecret {
    fn eq(&self, other: &Self) -> bool {
        self.ct_eq_bytes(&other.0[..])
    }
}

impl Eq for TokenSecret {}

impl fmt::Debug for TokenSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TokenSecret(<redacted>)")
    }
}
