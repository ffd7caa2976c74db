//! HMAC-SHA-256 over the signing input, with base64url encoding of the content fused into the
//! MAC in stack-sized chunks (no heap allocation, one pass over the content; SIMD encoding with
//! the `simd` feature where the CPU supports it).

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::limits::MAC_LEN;
use crate::{Error, b64};

type HmacSha256 = Hmac<Sha256>;

/// Input bytes encoded per chunk: a multiple of 3, so only the last chunk has a tail.
const CHUNK_IN: usize = 768;
/// Characters produced per full chunk: 1 KiB, a multiple of the SHA-256 block size.
const CHUNK_OUT: usize = CHUNK_IN / 3 * 4;

/// The payload part of the signing input.
#[derive(Clone, Copy)]
pub(crate) enum Body<'a> {
    /// Raw content, encoded on the fly.
    Raw(&'a [u8]),
    /// Content already encoded as base64url.
    Encoded(&'a [u8]),
}

/// HMAC-SHA-256 of `header_b64 || "." || BASE64URL(content)` under `key`.
pub(crate) fn tag(key: &[u8], header_b64: &[u8], body: Body<'_>) -> Result<[u8; MAC_LEN], Error> {
    if key.is_empty() {
        return Err(Error::EmptyKey);
    }
    let mut mac = HmacSha256::new_from_slice(key).map_err(|_| Error::InvalidKey)?;
    mac.update(header_b64);
    mac.update(b".");
    match body {
        Body::Raw(content) => update_encoded(&mut mac, content),
        Body::Encoded(encoded) => mac.update(encoded),
    }
    Ok(mac.finalize().into_bytes().into())
}

fn update_encoded(mac: &mut HmacSha256, content: &[u8]) {
    let mut buf = [0u8; CHUNK_OUT];
    for chunk in content.chunks(CHUNK_IN) {
        let n = b64::encode_content(chunk, &mut buf);
        mac.update(buf.get(..n).unwrap_or_default());
    }
}
