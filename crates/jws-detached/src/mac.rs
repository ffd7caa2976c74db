//! HMAC-SHA-256 over the signing input, with base64url encoding of the content fused into the
//! MAC in stack-sized chunks (no heap allocation, one pass over the content; SIMD encoding with
//! the `simd` feature where the CPU supports it).

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::limits::MAC_LEN;
use crate::{Error, b64};

type HmacSha256 = Hmac<Sha256>;

/// SHA-256 block size.
const BLOCK: usize = 64;
/// Input bytes encoded per chunk: a multiple of 3, so only the last chunk has a tail.
const CHUNK_IN: usize = 768;
/// Characters produced per full chunk: 1 KiB.
const CHUNK_OUT: usize = CHUNK_IN / 3 * 4;
/// The staging buffer: characters carried over from the previous chunk (less than a block)
/// followed by one chunk's encoding.
const STAGE: usize = CHUNK_OUT + BLOCK;

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
    match body {
        Body::Raw(content) => update_encoded(&mut mac, header_b64, content),
        Body::Encoded(encoded) => {
            mac.update(header_b64);
            mac.update(b".");
            mac.update(encoded);
        }
    }
    Ok(mac.finalize().into_bytes().into())
}

/// Feeds `header || "." || BASE64URL(content)` to `mac` in updates that end on block
/// boundaries: each chunk is encoded behind the characters left over from the previous one (at
/// first, a short header and the dot), and everything up to the last whole block goes to the
/// MAC in one update, which the hash compresses in place with one call and no copying into its
/// buffer.
fn update_encoded(mac: &mut HmacSha256, header: &[u8], content: &[u8]) {
    let mut stage = [0u8; STAGE];
    let mut carried = 0usize;
    // Bytes still needed to complete the MAC's partly filled block (the key block before the
    // header is exactly one block, so the buffer starts empty).
    let mut need = 0usize;
    match stage.get_mut(..header.len().wrapping_add(1)) {
        Some(start) if start.len() <= BLOCK => {
            if let Some((dot, h)) = start.split_last_mut() {
                h.copy_from_slice(header);
                *dot = b'.';
            }
            carried = start.len();
        }
        _ => {
            mac.update(header);
            mac.update(b".");
            need = BLOCK.wrapping_sub(header.len().wrapping_add(1) % BLOCK) % BLOCK;
        }
    }
    for chunk in content.chunks(CHUNK_IN) {
        let Some(out) = stage.get_mut(carried..) else {
            break;
        };
        let filled = carried.wrapping_add(b64::encode_content(chunk, out));
        let send = if filled < need {
            0
        } else {
            filled.wrapping_sub(filled.wrapping_sub(need) % BLOCK)
        };
        mac.update(stage.get(..send).unwrap_or_default());
        if send > 0 {
            need = 0;
        }
        stage.copy_within(send..filled, 0);
        carried = filled.wrapping_sub(send);
    }
    mac.update(stage.get(..carried).unwrap_or_default());
}
