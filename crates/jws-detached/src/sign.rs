//! Signing: the byte-identical Kubernetes detached JWS.

use crate::header::with_canonical_header;
use crate::limits::MAC_LEN;
use crate::mac::{self, Body};
use crate::{Error, MAX_CONTENT_LEN, SIGNATURE_B64_LEN, b64};

/// Signs `content` as Kubernetes' bootstrap signer does and returns the detached JWS
/// `BASE64URL({"alg":"HS256","kid":"<kid>"})..BASE64URL(HMAC-SHA-256)`.
///
/// The output is byte-identical to `ComputeDetachedSignature(content, kid, key)` in Kubernetes'
/// `cluster-bootstrap`. The content is signed exactly as given, with no normalisation.
///
/// To sign the same content under many keys, use [`PreparedPayload`](crate::PreparedPayload),
/// which encodes the content once.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let jws = jws_detached::sign(b"hello", "abcdef", b"0123456789abcdef")?;
/// assert_eq!(
///     jws,
///     "eyJhbGciOiJIUzI1NiIsImtpZCI6ImFiY2RlZiJ9..MxsnbCjBaYzcbNIFa06F-wuF9LX26rhMlrL4zA1511s"
/// );
/// # Ok(())
/// # }
/// ```
///
/// # Errors
///
/// [`Error::EmptyKey`] for an empty key (Kubernetes would sign with it; we refuse),
/// [`Error::EmptyKid`] or [`Error::KidTooLong`] for a kid outside `1..=`[`MAX_KID_LEN`](crate::MAX_KID_LEN)
/// bytes, [`Error::ContentTooLarge`] for content over [`MAX_CONTENT_LEN`].
pub fn sign(content: &[u8], kid: &str, key: &[u8]) -> Result<String, Error> {
    check_key(key)?;
    check_content(content.len())?;
    sign_body(Body::Raw(content), kid, key)
}

pub(crate) fn sign_body(body: Body<'_>, kid: &str, key: &[u8]) -> Result<String, Error> {
    with_canonical_header(kid, |header| {
        mac::tag(key, header, body).map(|tag| assemble(header, &tag))
    })?
}

pub(crate) fn check_key(key: &[u8]) -> Result<(), Error> {
    if key.is_empty() {
        Err(Error::EmptyKey)
    } else {
        Ok(())
    }
}

pub(crate) fn check_content(len: usize) -> Result<(), Error> {
    if len > MAX_CONTENT_LEN {
        Err(Error::ContentTooLarge {
            len,
            max: MAX_CONTENT_LEN,
        })
    } else {
        Ok(())
    }
}

/// `header_b64 || ".." || BASE64URL(tag)`.
pub(crate) fn assemble(header_b64: &[u8], tag: &[u8; MAC_LEN]) -> String {
    let mut sig = [0u8; SIGNATURE_B64_LEN];
    let n = b64::encode(tag, &mut sig);
    let sig = sig.get(..n).unwrap_or_default();
    let mut out = Vec::with_capacity(
        header_b64
            .len()
            .saturating_add(2)
            .saturating_add(SIGNATURE_B64_LEN),
    );
    out.extend_from_slice(header_b64);
    out.extend_from_slice(b"..");
    out.extend_from_slice(sig);
    // Both parts are base64url, hence ASCII: the conversion always succeeds, and the lossy
    // fallback only keeps this free of a panic path.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}
