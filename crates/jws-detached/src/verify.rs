//! Verification in the two modes: Kubernetes-compatible and standards (RFC 7515 §5.2).

use subtle::ConstantTimeEq;

use crate::header::{check_kid, with_canonical_header};
use crate::limits::{MAC_LEN, MAX_HEADER_B64_LEN};
use crate::mac::{self, Body};
use crate::sign::{check_content, check_key};
use crate::{Error, MAX_HEADER_JSON_LEN, Segment, b64, detached, json};

/// Verifies a detached JWS over `content` in standards mode (RFC 7515 §5.2 with detached
/// content, RFC 7515 Appendix F).
///
/// The protected header may be any valid JSON object (any member order, whitespace, escapes)
/// with `alg` = `HS256` and `kid` equal to `kid`; `crit` (in any form) and `b64` other than
/// `true` are rejected, as are duplicate member names. Both segments must be canonical unpadded
/// base64url; the MAC is computed over the header segment as received and compared in constant
/// time. Allocates nothing.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let jws = jws_detached::sign(b"hello", "abcdef", b"0123456789abcdef")?;
/// jws_detached::verify(&jws, b"hello", "abcdef", b"0123456789abcdef")?;
/// assert!(jws_detached::verify(&jws, b"hello\n", "abcdef", b"0123456789abcdef").is_err());
/// # Ok(())
/// # }
/// ```
///
/// # Errors
///
/// [`Error::BadSignature`] if the MAC does not match; otherwise the variant naming the first
/// rule broken: key, kid and content limits, then the shape (length, dots, empty payload
/// segment), the signature encoding and length, then the header.
pub fn verify(detached: &str, content: &[u8], kid: &str, key: &[u8]) -> Result<(), Error> {
    check_content(content.len())?;
    verify_standards(detached, Body::Raw(content), kid, key)
}

/// Verifies a detached JWS over `content` exactly as Kubernetes' `DetachedTokenIsValid` decides
/// validity, but in constant time.
///
/// Accepted is only the string Kubernetes itself would compute: the header must be
/// byte-for-byte `{"alg":"HS256","kid":"<kid>"}` as go-jose writes it, and the signature the
/// canonical encoding of the HMAC. A JWS with a valid MAC but any other header encoding is
/// rejected, as Kubernetes rejects it. Unlike Kubernetes, an empty key is refused. Allocates
/// nothing.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let jws = "eyJhbGciOiJIUzI1NiIsImtpZCI6ImFiY2RlZiJ9..MxsnbCjBaYzcbNIFa06F-wuF9LX26rhMlrL4zA1511s";
/// jws_detached::verify_kubernetes(jws, b"hello", "abcdef", b"0123456789abcdef")?;
/// # Ok(())
/// # }
/// ```
///
/// # Errors
///
/// [`Error::NonCanonicalHeader`] if the header segment is not the canonical one for `kid`,
/// [`Error::BadSignature`] if the MAC does not match, and the limit and shape errors of
/// [`verify`].
pub fn verify_kubernetes(
    detached: &str,
    content: &[u8],
    kid: &str,
    key: &[u8],
) -> Result<(), Error> {
    check_content(content.len())?;
    verify_kube(detached, Body::Raw(content), kid, key)
}

pub(crate) fn verify_standards(
    detached: &str,
    body: Body<'_>,
    kid: &str,
    key: &[u8],
) -> Result<(), Error> {
    check_key(key)?;
    check_kid(kid)?;
    let parts = detached::split(detached)?;
    let given = detached::signature(parts.signature)?;
    if parts.header.len() > MAX_HEADER_B64_LEN {
        return Err(Error::HeaderTooLong {
            max: MAX_HEADER_JSON_LEN,
        });
    }
    // The header Kubernetes writes for this kid is valid by construction (alg HS256, this
    // kid, nothing else): recognise it by its bytes and skip decoding and parsing it.
    let canonical = with_canonical_header(kid, |canonical| canonical == parts.header)?;
    if !canonical {
        // Typical headers are short: decode them into a small buffer, not a 2 KiB one.
        if parts.header.len() <= SMALL_HEADER_B64_LEN {
            check_header::<SMALL_HEADER_JSON_LEN>(parts.header, kid)?;
        } else {
            check_header::<MAX_HEADER_JSON_LEN>(parts.header, kid)?;
        }
    }
    let computed = mac::tag(key, parts.header, body)?;
    compare(&computed, &given)
}

pub(crate) fn verify_kube(
    detached: &str,
    body: Body<'_>,
    kid: &str,
    key: &[u8],
) -> Result<(), Error> {
    check_key(key)?;
    with_canonical_header(kid, |header| {
        let parts = detached::split(detached)?;
        if parts.header != header {
            return Err(Error::NonCanonicalHeader);
        }
        let given = detached::signature(parts.signature)?;
        let computed = mac::tag(key, header, body)?;
        compare(&computed, &given)
    })?
}

const SMALL_HEADER_JSON_LEN: usize = 192;
const SMALL_HEADER_B64_LEN: usize = SMALL_HEADER_JSON_LEN / 3 * 4;

/// Decodes the header segment into a `J`-byte stack buffer and checks it.
fn check_header<const J: usize>(segment: &[u8], kid: &str) -> Result<(), Error> {
    let mut json = [0u8; J];
    let len = b64::decode(segment, &mut json).map_err(|()| Error::InvalidBase64 {
        segment: Segment::Header,
    })?;
    json::check_header(json.get(..len).unwrap_or_default(), kid)
}

/// Constant-time equality of two tags: the XOR of the four 64-bit words of each is folded into
/// one word, which is compared with zero in constant time.
fn compare(computed: &[u8; MAC_LEN], given: &[u8; MAC_LEN]) -> Result<(), Error> {
    let mut diff = 0u64;
    for (a, b) in computed.chunks_exact(8).zip(given.chunks_exact(8)) {
        if let (Ok(a), Ok(b)) = (<[u8; 8]>::try_from(a), <[u8; 8]>::try_from(b)) {
            diff |= u64::from_ne_bytes(a) ^ u64::from_ne_bytes(b);
        }
    }
    if bool::from(diff.ct_eq(&0)) {
        Ok(())
    } else {
        Err(Error::BadSignature)
    }
}
