//! Content encoded once, signed or verified under many keys.

use core::fmt;

use crate::mac::Body;
use crate::sign::{check_content, check_key, sign_body};
use crate::verify::{verify_kube, verify_standards};
use crate::{Error, b64};

/// Content (a kubeconfig) base64url-encoded once, to sign or verify under many keys.
///
/// Kubernetes' bootstrap signer signs the same `cluster-info` kubeconfig once per signing
/// token; with a prepared payload each signature costs one HMAC over the signing input and no
/// re-encoding. Verification through it allocates nothing.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use jws_detached::PreparedPayload;
///
/// let payload = PreparedPayload::new(b"hello")?;
/// let a = payload.sign("abcdef", b"0123456789abcdef")?;
/// let b = payload.sign("ghijkl", b"ghijklmnopqrstuv")?;
/// assert_eq!(a, jws_detached::sign(b"hello", "abcdef", b"0123456789abcdef")?);
/// payload.verify_kubernetes(&b, "ghijkl", b"ghijklmnopqrstuv")?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct PreparedPayload {
    encoded: Vec<u8>,
}

impl PreparedPayload {
    /// Encodes `content` once.
    ///
    /// # Errors
    ///
    /// [`Error::ContentTooLarge`] for content over [`MAX_CONTENT_LEN`](crate::MAX_CONTENT_LEN).
    pub fn new(content: &[u8]) -> Result<PreparedPayload, Error> {
        check_content(content.len())?;
        let len = b64::encoded_len(content.len()).ok_or(Error::ContentTooLarge {
            len: content.len(),
            max: crate::MAX_CONTENT_LEN,
        })?;
        let mut encoded = vec![0; len];
        let written = b64::encode_content(content, &mut encoded);
        encoded.truncate(written);
        Ok(PreparedPayload { encoded })
    }

    /// The length of the base64url-encoded content in bytes.
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        self.encoded.len()
    }

    /// Signs the content; the same output as [`sign`](crate::sign).
    ///
    /// # Errors
    ///
    /// As [`sign`](crate::sign): [`Error::EmptyKey`], [`Error::EmptyKid`], [`Error::KidTooLong`].
    pub fn sign(&self, kid: &str, key: &[u8]) -> Result<String, Error> {
        check_key(key)?;
        sign_body(Body::Encoded(&self.encoded), kid, key)
    }

    /// Verifies `detached` over the content in standards mode, as [`verify`](crate::verify).
    ///
    /// # Errors
    ///
    /// As [`verify`](crate::verify).
    pub fn verify(&self, detached: &str, kid: &str, key: &[u8]) -> Result<(), Error> {
        verify_standards(detached, Body::Encoded(&self.encoded), kid, key)
    }

    /// Verifies `detached` over the content in Kubernetes mode, as
    /// [`verify_kubernetes`](crate::verify_kubernetes).
    ///
    /// # Errors
    ///
    /// As [`verify_kubernetes`](crate::verify_kubernetes).
    pub fn verify_kubernetes(&self, detached: &str, kid: &str, key: &[u8]) -> Result<(), Error> {
        verify_kube(detached, Body::Encoded(&self.encoded), kid, key)
    }
}

impl fmt::Debug for PreparedPayload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreparedPayload")
            .field("encoded_len", &self.encoded.len())
            .finish()
    }
}
