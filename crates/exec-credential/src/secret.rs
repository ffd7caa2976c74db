//! Secret values: bearer tokens and client private keys.

use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

/// A bearer token returned by an exec plugin.
///
/// `Debug` prints `Token(<redacted>)`; there is no `Display`; equality is constant-time; the
/// memory is zeroed on drop. Read the value with [`Token::expose_secret`].
#[derive(Clone)]
pub struct Token(Zeroizing<String>);

impl Token {
    /// Wraps a token.
    #[must_use]
    pub fn new(token: impl Into<String>) -> Token {
        Token(Zeroizing::new(token.into()))
    }

    /// The token text, for the `Authorization: Bearer` header.
    #[must_use]
    pub fn expose_secret(&self) -> &str {
        &self.0
    }
}

impl core::fmt::Debug for Token {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl PartialEq for Token {
    fn eq(&self, other: &Token) -> bool {
        self.0.as_bytes().ct_eq(other.0.as_bytes()).into()
    }
}

impl Eq for Token {}

/// A PEM-encoded client private key returned by an exec plugin (`clientKeyData`).
///
/// `Debug` prints `ClientKey(<redacted>)`; there is no `Display`; equality is constant-time;
/// the memory is zeroed on drop. Read the PEM with [`ClientKey::expose_secret`].
#[derive(Clone)]
pub struct ClientKey(Zeroizing<String>);

impl ClientKey {
    /// Wraps a PEM-encoded private key.
    #[must_use]
    pub fn new(pem: impl Into<String>) -> ClientKey {
        ClientKey(Zeroizing::new(pem.into()))
    }

    /// The PEM text, for building a TLS client identity.
    #[must_use]
    pub fn expose_secret(&self) -> &str {
        &self.0
    }
}

impl core::fmt::Debug for ClientKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("ClientKey(<redacted>)")
    }
}

impl PartialEq for ClientKey {
    fn eq(&self, other: &ClientKey) -> bool {
        self.0.as_bytes().ct_eq(other.0.as_bytes()).into()
    }
}

impl Eq for ClientKey {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_redacts_and_eq_compares_content() {
        let t = Token::new("CANARY-token-1234");
        assert_eq!(format!("{t:?}"), "Token(<redacted>)");
        assert_eq!(t, Token::new("CANARY-token-1234"));
        assert_ne!(t, Token::new("CANARY-token-1235"));
        assert_ne!(t, Token::new("CANARY"));
        let k = ClientKey::new("-----BEGIN PRIVATE KEY-----CANARY");
        assert_eq!(format!("{k:?}"), "ClientKey(<redacted>)");
        assert_eq!(k.expose_secret(), "-----BEGIN PRIVATE KEY-----CANARY");
    }
}
