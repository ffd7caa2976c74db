//! The detached compact form `header..signature` (RFC 7515 Appendix F): splitting and the
//! signature segment.

use crate::limits::MAC_LEN;
use crate::{Error, MAX_DETACHED_LEN, SIGNATURE_B64_LEN, Segment, b64};

/// The two non-empty-by-shape segments of a detached JWS.
pub(crate) struct Parts<'a> {
    pub(crate) header: &'a [u8],
    pub(crate) signature: &'a [u8],
}

/// Splits `detached` after checking its length, before anything else: exactly two dots, adjacent.
pub(crate) fn split(detached: &str) -> Result<Parts<'_>, Error> {
    let bytes = detached.as_bytes();
    if bytes.len() > MAX_DETACHED_LEN {
        return Err(Error::TooLong {
            len: bytes.len(),
            max: MAX_DETACHED_LEN,
        });
    }
    // The well-formed case in one scan: `header` `..` `signature` with no further dot.
    if let Some((header, rest)) = detached.split_once('.')
        && let Some(signature) = rest.strip_prefix('.')
        && !signature.contains('.')
    {
        return Ok(Parts {
            header: header.as_bytes(),
            signature: signature.as_bytes(),
        });
    }
    // Anything else is an error; count the dots to say which. Two dots that are not adjacent
    // enclose a payload.
    let dots = bytes.iter().filter(|&&b| b == b'.').count();
    Err(if dots == 2 {
        Error::PayloadNotDetached
    } else {
        Error::SegmentCount { dots }
    })
}

/// Decodes the signature segment, which must be exactly the canonical encoding of 32 bytes.
pub(crate) fn signature(segment: &[u8]) -> Result<[u8; MAC_LEN], Error> {
    let invalid = Error::InvalidBase64 {
        segment: Segment::Signature,
    };
    if segment.len() != SIGNATURE_B64_LEN {
        let len = b64::validate(segment).map_err(|()| invalid)?;
        return Err(Error::SignatureLength { len });
    }
    let mut tag = [0u8; MAC_LEN];
    b64::decode(segment, &mut tag).map_err(|()| invalid)?;
    Ok(tag)
}
