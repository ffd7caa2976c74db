//! Strict base64url (RFC 7515 §2): URL-safe alphabet, no padding, no whitespace, canonical
//! trailing bits, so every byte string has exactly one accepted encoding.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::Error;

/// Decodes strict base64url; `segment` names the input in the error.
pub(crate) fn decode(input: &str, segment: &'static str) -> Result<Vec<u8>, Error> {
    URL_SAFE_NO_PAD
        .decode(input)
        .map_err(|_| Error::Base64 { segment })
}

/// Encodes base64url without padding.
pub(crate) fn encode(input: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(input)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_decoding() {
        assert_eq!(decode("AQAB", "t").unwrap(), vec![1, 0, 1]);
        assert_eq!(decode("", "t").unwrap(), Vec::<u8>::new());
        for bad in [
            "AQAB=", "AQ==", "AQ=", "A", "AQA B", "AQAB\n", " AQAB", "+w", "/w", "_x", "AR",
        ] {
            assert!(decode(bad, "t").is_err(), "{bad:?}");
        }
        assert_eq!(decode("_w", "t").unwrap(), vec![0xff]);
        assert_eq!(decode("AQ", "t").unwrap(), vec![1]);
    }
}
