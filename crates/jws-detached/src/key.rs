//! The HMAC key type.

use core::fmt;

use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::Error;

/// An HS256 key: for Kubernetes, the bytes of the bootstrap token secret.
///
/// The bytes are zeroised on drop, `Debug` prints `HmacKey(<redacted>)`, there is no `Display`,
/// and `==` compares in constant time. Read the bytes with [`expose_secret`](Self::expose_secret).
///
/// Any non-empty byte string is a valid key, as in Kubernetes' signer. HMAC zero-pads keys to the
/// 64-byte block, so keys that differ only by trailing zero bytes (`s` and `s\0`) produce the same
/// MAC; callers holding bootstrap tokens validate the secret's format (`[a-z0-9]{16}`) first.
#[derive(Clone)]
pub struct HmacKey(Zeroizing<Vec<u8>>);

impl HmacKey {
    /// Copies `key` into a new key.
    ///
    /// # Errors
    ///
    /// [`Error::EmptyKey`] if `key` is empty.
    pub fn new(key: &[u8]) -> Result<HmacKey, Error> {
        if key.is_empty() {
            return Err(Error::EmptyKey);
        }
        Ok(HmacKey(Zeroizing::new(key.to_vec())))
    }

    /// The key bytes. The name is a reminder that they are secret.
    #[must_use]
    pub fn expose_secret(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for HmacKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HmacKey(<redacted>)")
    }
}

impl PartialEq for HmacKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.as_slice().ct_eq(other.0.as_slice()).into()
    }
}

impl Eq for HmacKey {}

impl TryFrom<&[u8]> for HmacKey {
    type Error = Error;

    fn try_from(key: &[u8]) -> Result<Self, Self::Error> {
        HmacKey::new(key)
    }
}

impl TryFrom<&str> for HmacKey {
    type Error = Error;

    fn try_from(key: &str) -> Result<Self, Self::Error> {
        HmacKey::new(key.as_bytes())
    }
}
