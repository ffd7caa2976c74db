//! A bearer token: a secret string.

use core::fmt;

use subtle::ConstantTimeEq as _;
use zeroize::Zeroizing;

/// A signed token (a credential): zeroised on drop, redacted in `Debug`, compared in constant
/// time, with no `Display`. Read it with [`BearerToken::expose_secret`].
#[derive(Clone)]
pub struct BearerToken(Zeroizing<String>);

impl BearerToken {
    pub(crate) fn new(token: String) -> BearerToken {
        BearerToken(Zeroizing::new(token))
    }

    /// The compact JWS, for an `Authorization: Bearer` header.
    #[must_use]
    pub fn expose_secret(&self) -> &str {
        &self.0
    }
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
