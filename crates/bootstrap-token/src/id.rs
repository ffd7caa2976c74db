//! The token ID.

use std::fmt;
use std::str::FromStr;

use crate::Error;
use crate::constants::{SECRET_NAME_PREFIX, TOKEN_ID_LEN, is_token_char};

/// A bootstrap token ID: exactly 6 characters of `[a-z0-9]`.
///
/// The ID is public: it names the Secret (`bootstrap-token-<id>`), the `jws-kubeconfig-<id>`
/// signature key and the user `system:bootstrap:<id>`, so it may be logged and displayed.
/// Stored inline: parsing and copying never allocate.
///
/// ```
/// use bootstrap_token::TokenId;
/// let id: TokenId = "abcdef".parse()?;
/// assert_eq!(id.as_str(), "abcdef");
/// assert_eq!(id.secret_name(), "bootstrap-token-abcdef");
/// assert!("ABCDEF".parse::<TokenId>().is_err());
/// # Ok::<(), bootstrap_token::Error>(())
/// ```
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub struct TokenId([u8; TOKEN_ID_LEN]);

impl TokenId {
    /// Parses a token ID from bytes (`\A([a-z0-9]{6})\z`).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidTokenId`] unless the input is exactly 6 bytes of `[a-z0-9]`.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let arr: [u8; TOKEN_ID_LEN] = bytes.try_into().map_err(|_| Error::InvalidTokenId)?;
        if arr.iter().all(|&b| is_token_char(b)) {
            Ok(Self(arr))
        } else {
            Err(Error::InvalidTokenId)
        }
    }

    /// The ID as a string.
    #[must_use]
    pub fn as_str(&self) -> &str {
        // Always ASCII by construction.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }

    /// The ID as bytes.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The name of the Secret storing this token: `bootstrap-token-<id>`.
    #[must_use]
    pub fn secret_name(&self) -> String {
        let mut s = String::with_capacity(SECRET_NAME_PREFIX.len().saturating_add(TOKEN_ID_LEN));
        s.push_str(SECRET_NAME_PREFIX);
        s.push_str(self.as_str());
        s
    }

    /// The user name the API server gives this token: `system:bootstrap:<id>`.
    #[must_use]
    pub fn user_name(&self) -> String {
        let prefix = crate::BOOTSTRAP_USER_PREFIX;
        let mut s = String::with_capacity(prefix.len().saturating_add(TOKEN_ID_LEN));
        s.push_str(prefix);
        s.push_str(self.as_str());
        s
    }

    pub(crate) const fn from_array(arr: [u8; TOKEN_ID_LEN]) -> Self {
        Self(arr)
    }
}

impl FromStr for TokenId {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        Self::from_bytes(s.as_bytes())
    }
}

impl fmt::Display for TokenId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for TokenId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TokenId").field(&self.as_str()).finish()
    }
}

impl AsRef<str> for TokenId {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

/// The token ID in a Secret name of the form `bootstrap-token-<id>` (`^bootstrap-token-([a-z0-9]{6})$`),
/// or `None`, like cluster-bootstrap's `ParseName`.
///
/// ```
/// use bootstrap_token::parse_secret_name;
/// assert_eq!(parse_secret_name("bootstrap-token-abcdef").unwrap().as_str(), "abcdef");
/// assert!(parse_secret_name("bootstrap-token-ABCDEF").is_none());
/// assert!(parse_secret_name("bootstrap-token-abcdef\n").is_none());
/// ```
#[must_use]
pub fn parse_secret_name(name: &str) -> Option<TokenId> {
    let id = name.strip_prefix(SECRET_NAME_PREFIX)?;
    TokenId::from_bytes(id.as_bytes()).ok()
}

impl TryFrom<String> for TokenId {
    type Error = Error;

    fn try_from(s: String) -> Result<Self, Error> {
        s.parse()
    }
}

impl From<TokenId> for String {
    fn from(id: TokenId) -> Self {
        id.as_str().to_owned()
    }
}
