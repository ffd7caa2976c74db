//! Base64url without padding (RFC 4648 §5): a table-driven scalar encoder and a strict decoder.
//!
//! The encoder turns each 3 input bytes into 4 characters with two lookups in a 4096-entry
//! table of character pairs. The decoder accepts only the canonical encoding: the URL-safe
//! alphabet, no padding, no whitespace, no length ≡ 1 (mod 4) and zero unused trailing bits.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// `PAIRS[i]` is the two characters for the 12-bit value `i`.
static PAIRS: [[u8; 2]; 4096] = pairs();

/// `PAIRS16[i]` is `PAIRS[i]` as a little-endian `u16`, for word-sized stores.
static PAIRS16: [u16; 4096] = pairs16();

/// `DECODE[b]` is the 6-bit value of character `b`, or `INVALID`.
static DECODE: [u8; 256] = decode_table();

const INVALID: u8 = 0xff;

// Evaluated at compile time over constant bounds: an out-of-range index would fail the build.
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
const fn pairs() -> [[u8; 2]; 4096] {
    let mut table = [[0u8; 2]; 4096];
    let mut i = 0;
    while i < 4096 {
        table[i] = [ALPHABET[i >> 6], ALPHABET[i & 63]];
        i += 1;
    }
    table
}

// Evaluated at compile time over constant bounds: an out-of-range index would fail the build.
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
const fn pairs16() -> [u16; 4096] {
    let pairs = pairs();
    let mut table = [0u16; 4096];
    let mut i = 0;
    while i < 4096 {
        table[i] = u16::from_le_bytes(pairs[i]);
        i += 1;
    }
    table
}

// Evaluated at compile time over constant bounds: an out-of-range index would fail the build.
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
const fn decode_table() -> [u8; 256] {
    let mut table = [INVALID; 256];
    let mut i = 0;
    while i < 64 {
        table[ALPHABET[i] as usize] = i as u8;
        i += 1;
    }
    table
}

/// The encoded length of `n` input bytes, or `None` on overflow.
pub(crate) const fn encoded_len(n: usize) -> Option<usize> {
    let Some(full) = (n / 3).checked_mul(4) else {
        return None;
    };
    let tail = match n % 3 {
        0 => 0,
        1 => 2,
        _ => 3,
    };
    full.checked_add(tail)
}

#[inline(always)]
fn pair(i: usize) -> [u8; 2] {
    PAIRS.get(i & 0xfff).copied().unwrap_or([0; 2])
}

#[inline(always)]
fn pair16(i: u64) -> u64 {
    u64::from(PAIRS16.get((i & 0xfff) as usize).copied().unwrap_or(0))
}

/// Input bytes per iteration of the wide loop: four groups of 6 bytes.
const WIDE_IN: usize = 24;
/// Characters per iteration of the wide loop.
const WIDE_OUT: usize = 32;
/// Bytes the wide loop reads per iteration (2 past the ones it consumes).
const WIDE_READ: usize = 26;

/// Encodes content (kilobytes, not the short header or tag) into the front of `out` and returns
/// the number of characters written, with the fastest encoder this CPU offers: the `base64`
/// crate's SIMD engine (AVX2 on x86-64, NEON on AArch64) with the `simd` feature when the CPU
/// has it, else [`encode`]. Both give the same output; `out` is sized with [`encoded_len`].
pub(crate) fn encode_content(input: &[u8], out: &mut [u8]) -> usize {
    #[cfg(all(feature = "simd", any(target_arch = "x86_64", target_arch = "aarch64")))]
    if let Some(engine) = simd::engine() {
        // Only fails if `out` is too short, in which case the scalar encoder truncates.
        if let Ok(n) = base64::Engine::encode_slice(engine, input, out) {
            return n;
        }
    }
    encode(input, out)
}

/// The `base64` crate's SIMD engine, when the CPU supports it.
#[cfg(all(feature = "simd", any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(crate) mod simd {
    use std::sync::OnceLock;

    use base64::engine::{Simd, general_purpose::NO_PAD};

    static ENGINE: OnceLock<Option<Simd>> = OnceLock::new();

    /// The URL-safe unpadded SIMD engine, or `None` if the CPU lacks the instructions (then
    /// the engine would fall back to a scalar encoder slower than ours).
    pub(crate) fn engine() -> Option<&'static Simd> {
        ENGINE
            .get_or_init(|| detected().then(|| Simd::url_safe(NO_PAD)))
            .as_ref()
    }

    #[cfg(target_arch = "x86_64")]
    fn detected() -> bool {
        std::is_x86_feature_detected!("avx2")
    }

    #[cfg(target_arch = "aarch64")]
    fn detected() -> bool {
        std::arch::is_aarch64_feature_detected!("neon")
    }
}

/// Encodes `input` into the front of `out` with the scalar encoder and returns the number of
/// characters written.
///
/// Callers size `out` with [`encoded_len`]; if `out` is shorter, the output is truncated at a
/// 4-character boundary (or before the tail) and the shorter count is returned.
pub(crate) fn encode(input: &[u8], out: &mut [u8]) -> usize {
    // Wide loop: each 6 bytes, read as the top of a big-endian 64-bit load, become one 64-bit
    // word of 8 characters (four pair lookups); four words per iteration. The loads read 2
    // bytes past the 24 consumed, so the loop runs while 26 bytes remain.
    let mut rest_in = input;
    let mut rest_out: &mut [u8] = out;
    let mut written = 0usize;
    while let Some(i) = rest_in.first_chunk::<WIDE_READ>() {
        if rest_out.len() < WIDE_OUT {
            break;
        }
        let Some((o, o_rest)) = core::mem::take(&mut rest_out).split_at_mut_checked(WIDE_OUT)
        else {
            break;
        };
        let words = [
            word(load(i, 0)),
            word(load(i, 6)),
            word(load(i, 12)),
            word(load(i, 18)),
        ];
        for (dst, w) in o.chunks_exact_mut(8).zip(words) {
            dst.copy_from_slice(&w.to_le_bytes());
        }
        rest_in = rest_in.get(WIDE_IN..).unwrap_or_default();
        rest_out = o_rest;
        written = written.wrapping_add(WIDE_OUT);
    }
    written.wrapping_add(encode_narrow(rest_in, rest_out))
}

/// The 48 bits at `offset` of `chunk` as the top of a big-endian `u64`, shifted down.
#[inline(always)]
fn load(chunk: &[u8; WIDE_READ], offset: usize) -> u64 {
    let mut eight = [0u8; 8];
    if let Some(src) = chunk.get(offset..offset.wrapping_add(8)) {
        eight.copy_from_slice(src);
    }
    u64::from_be_bytes(eight) >> 16
}

/// Eight characters for the 48-bit value `n`, first character in the low byte.
#[inline(always)]
fn word(n: u64) -> u64 {
    pair16(n >> 36) | (pair16(n >> 24) << 16) | (pair16(n >> 12) << 32) | (pair16(n) << 48)
}

/// 3 bytes to 4 characters at a time, then the tail.
fn encode_narrow(input: &[u8], out: &mut [u8]) -> usize {
    let mut ins = input.chunks_exact(3);
    let mut outs = out.chunks_exact_mut(4);
    let mut written = 0usize;
    for (i, o) in (&mut ins).zip(&mut outs) {
        if let ([a, b, c], [o0, o1, o2, o3]) = (i, o) {
            let n = (usize::from(*a) << 16) | (usize::from(*b) << 8) | usize::from(*c);
            let [h0, h1] = pair(n >> 12);
            let [l0, l1] = pair(n);
            *o0 = h0;
            *o1 = h1;
            *o2 = l0;
            *o3 = l1;
        }
        written = written.wrapping_add(4);
    }
    let Some(rest) = out.get_mut(written..) else {
        return written;
    };
    match (ins.remainder(), rest) {
        ([a], [o0, o1, ..]) => {
            let [h0, h1] = pair(usize::from(*a) << 4);
            *o0 = h0;
            *o1 = h1;
            written.wrapping_add(2)
        }
        ([a, b], [o0, o1, o2, ..]) => {
            let n = (usize::from(*a) << 10) | (usize::from(*b) << 2);
            let [h0, h1] = pair(n >> 6);
            let [l0, _] = pair(n << 6);
            *o0 = h0;
            *o1 = h1;
            *o2 = l0;
            written.wrapping_add(3)
        }
        _ => written,
    }
}

#[inline(always)]
fn value(c: u8) -> u32 {
    u32::from(DECODE.get(usize::from(c)).copied().unwrap_or(INVALID))
}

/// The decoded length of a canonical encoding of `n` characters, or `None` if no canonical
/// encoding has that length (`n` ≡ 1 mod 4).
pub(crate) const fn decoded_len(n: usize) -> Option<usize> {
    let tail = match n % 4 {
        0 => 0,
        2 => 1,
        3 => 2,
        _ => return None,
    };
    let Some(full) = (n / 4).checked_mul(3) else {
        return None;
    };
    full.checked_add(tail)
}

/// Checks that `input` is canonical unpadded base64url and returns its decoded length.
pub(crate) fn validate(input: &[u8]) -> Result<usize, ()> {
    let len = decoded_len(input.len()).ok_or(())?;
    let mut acc = 0u32;
    for &c in input {
        acc |= value(c);
    }
    if acc > 63 {
        return Err(());
    }
    check_tail(input)?;
    Ok(len)
}

fn check_tail(input: &[u8]) -> Result<(), ()> {
    let tail = input.len() % 4;
    let last = input.last().copied().map_or(0, value);
    // The unused low bits of the last character must be zero.
    let ok = match tail {
        2 => last & 0x0f == 0,
        3 => last & 0x03 == 0,
        _ => true,
    };
    if ok { Ok(()) } else { Err(()) }
}

/// Decodes canonical unpadded base64url `input` into the front of `out`, returning the number
/// of bytes written.
pub(crate) fn decode(input: &[u8], out: &mut [u8]) -> Result<usize, ()> {
    let len = decoded_len(input.len()).ok_or(())?;
    let out = out.get_mut(..len).ok_or(())?;
    let mut ins = input.chunks_exact(4);
    let mut outs = out.chunks_exact_mut(3);
    let mut acc = 0u32;
    for (i, o) in (&mut ins).zip(&mut outs) {
        if let ([a, b, c, d], [o0, o1, o2]) = (i, o) {
            let (a, b, c, d) = (value(*a), value(*b), value(*c), value(*d));
            acc |= a | b | c | d;
            let n = (a << 18) | (b << 12) | (c << 6) | d;
            let [_, x, y, z] = n.to_be_bytes();
            *o0 = x;
            *o1 = y;
            *o2 = z;
        }
    }
    match (ins.remainder(), outs.into_remainder()) {
        ([a, b], [o0]) => {
            let (a, b) = (value(*a), value(*b));
            acc |= a | b;
            let [_, x, _, _] = ((a << 18) | (b << 12)).to_be_bytes();
            *o0 = x;
        }
        ([a, b, c], [o0, o1]) => {
            let (a, b, c) = (value(*a), value(*b), value(*c));
            acc |= a | b | c;
            let [_, x, y, _] = ((a << 18) | (b << 12) | (c << 6)).to_be_bytes();
            *o0 = x;
            *o1 = y;
        }
        ([], []) => {}
        _ => return Err(()),
    }
    if acc > 63 {
        return Err(());
    }
    check_tail(input)?;
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(input: &[u8]) -> String {
        let mut out = vec![0; encoded_len(input.len()).unwrap()];
        let n = encode(input, &mut out);
        assert_eq!(n, out.len());
        String::from_utf8(out).unwrap()
    }

    fn dec(input: &str) -> Result<Vec<u8>, ()> {
        let mut out = vec![0; input.len()];
        let n = decode(input.as_bytes(), &mut out)?;
        assert_eq!(validate(input.as_bytes()), Ok(n));
        out.truncate(n);
        Ok(out)
    }

    #[test]
    fn rfc4648_test_vectors() {
        // RFC 4648 §10, without padding.
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg"),
            ("fo", "Zm8"),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg"),
            ("fooba", "Zm9vYmE"),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(enc(plain.as_bytes()), encoded);
            assert_eq!(dec(encoded).unwrap(), plain.as_bytes());
        }
    }

    #[test]
    fn url_safe_alphabet() {
        assert_eq!(enc(&[0xfb, 0xff, 0xbf]), "-_-_");
        assert_eq!(dec("-_-_").unwrap(), [0xfb, 0xff, 0xbf]);
        assert!(dec("+/+/").is_err());
    }

    /// With the `simd` feature on a CPU that has AVX2 (x86-64) or NEON (AArch64), content goes
    /// through the SIMD engine; a short output buffer still truncates safely.
    #[test]
    #[cfg(all(feature = "simd", target_arch = "x86_64"))]
    fn simd_engine_selected_when_the_cpu_has_it() {
        assert_eq!(
            simd::engine().is_some(),
            std::is_x86_feature_detected!("avx2")
        );
        let input = [0xa5u8; 300];
        let mut short = [0u8; 100];
        let n = encode_content(&input, &mut short);
        assert!(n <= short.len());
        assert_eq!(&short[..n], &enc(&input).as_bytes()[..n]);
    }

    #[test]
    fn strict_decoding() {
        assert!(dec("Zg==").is_err(), "padding");
        assert!(dec("Zh").is_err(), "non-zero trailing bits");
        assert!(dec("Zm9").is_err(), "non-zero trailing bits");
        assert!(dec("Z").is_err(), "length 1 mod 4");
        assert!(dec("Zm9v Yg").is_err(), "whitespace");
        assert!(dec("Zm9v\nYg").is_err(), "newline");
    }
}

#[cfg(test)]
mod proptests {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn encode_matches_base64_crate(input in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let mut out = vec![0; encoded_len(input.len()).unwrap()];
            prop_assert_eq!(encode(&input, &mut out), out.len());
            prop_assert_eq!(String::from_utf8(out).unwrap(), URL_SAFE_NO_PAD.encode(&input));
        }

        /// The content encoder (SIMD where the CPU has it) agrees with the scalar one, across
        /// the SIMD engine's minimum input length and chunk boundaries.
        #[test]
        fn content_encoder_matches_scalar(input in proptest::collection::vec(any::<u8>(), 0..4096)) {
            let len = encoded_len(input.len()).unwrap();
            let (mut simd, mut scalar) = (vec![0; len], vec![0; len]);
            prop_assert_eq!(encode_content(&input, &mut simd), len);
            prop_assert_eq!(encode(&input, &mut scalar), len);
            prop_assert_eq!(simd, scalar);
        }

        #[test]
        fn decode_inverts_encode(input in proptest::collection::vec(any::<u8>(), 0..512)) {
            let encoded = URL_SAFE_NO_PAD.encode(&input);
            let mut out = vec![0; input.len()];
            prop_assert_eq!(decode(encoded.as_bytes(), &mut out), Ok(input.len()));
            prop_assert_eq!(out, input);
        }

        /// Strictness agrees with the `base64` crate's canonical no-padding decoder.
        #[test]
        fn decode_accepts_exactly_what_base64_crate_accepts(s in "[A-Za-z0-9_=+/ .-]{0,64}") {
            let mut out = vec![0; s.len()];
            let ours = decode(s.as_bytes(), &mut out).map(|n| out[..n].to_vec());
            let theirs = URL_SAFE_NO_PAD.decode(&s).map_err(|_| ());
            prop_assert_eq!(&ours, &theirs);
            prop_assert_eq!(validate(s.as_bytes()), theirs.map(|v| v.len()));
        }
    }
}
