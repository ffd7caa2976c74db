//! Token generation: always valid, uniform over the 36 characters, no modulo bias.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use bootstrap_token::{BootstrapToken, Error};

const CHARSET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";

/// SplitMix64: a small deterministic generator, good enough for statistics (not for secrets).
struct SplitMix(u64);

impl SplitMix {
    fn fill(&mut self, dst: &mut [u8]) {
        for chunk in dst.chunks_mut(8) {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
        }
    }
}

fn counts(tokens: &[BootstrapToken]) -> [u64; 36] {
    let mut counts = [0u64; 36];
    for t in tokens {
        let s = t.to_string();
        for b in s.bytes().filter(|&b| b != b'.') {
            counts[CHARSET.iter().position(|&c| c == b).unwrap()] += 1;
        }
    }
    counts
}

/// A "random" source that yields 0, 1, ..., 255, 0, 1, ... : over each full cycle an unbiased
/// sampler must emit every character exactly 7 times (252 = 7 × 36 accepted bytes, 4 rejected).
#[test]
fn rejection_sampling_has_no_modulo_bias() {
    let mut next = 0u8;
    let mut counter = |dst: &mut [u8]| {
        for b in dst {
            *b = next;
            next = next.wrapping_add(1);
        }
    };
    // 36 * 7 = 252 accepted bytes per cycle; 22 characters per token: lcm gives exact cycles.
    let n = 252 * 11 / 22 * 2; // 252 tokens = 22 full cycles
    let tokens: Vec<_> = (0..n)
        .map(|_| BootstrapToken::generate_with(&mut counter).unwrap())
        .collect();
    let c = counts(&tokens);
    assert!(c.iter().all(|&x| x == c[0]), "{c:?}");
    // A modulo-only sampler would give '0'..'3' (252..=255 % 36 = 0..=3) extra counts.
}

#[test]
fn generated_tokens_are_uniform_chi_squared() {
    let mut rng = SplitMix(0x6b38_7362);
    let tokens: Vec<_> = (0..20_000)
        .map(|_| BootstrapToken::generate_with(|b| rng.fill(b)).unwrap())
        .collect();
    let c = counts(&tokens);
    let total: u64 = c.iter().sum();
    assert_eq!(total, 20_000 * 22);
    let expected = total as f64 / 36.0;
    let chi2: f64 = c
        .iter()
        .map(|&o| (o as f64 - expected).powi(2) / expected)
        .sum();
    // 35 degrees of freedom: p = 0.001 critical value is 66.6.
    assert!(chi2 < 66.6, "chi² = {chi2}, counts {c:?}");
}

#[test]
fn os_generated_tokens_parse_and_differ() {
    let a = BootstrapToken::generate().unwrap();
    let b = BootstrapToken::generate().unwrap();
    assert_ne!(a, b);
    assert_eq!(a.to_string().parse::<BootstrapToken>().unwrap(), a);
    assert_eq!(a.to_string().len(), 23);
}

#[test]
fn same_bytes_give_the_same_token() {
    let a = BootstrapToken::generate_with(|b| SplitMix(1).fill(b)).unwrap();
    let b = BootstrapToken::generate_with(|b| SplitMix(1).fill(b)).unwrap();
    assert_eq!(a, b);
}

/// A source stuck on unusable bytes (≥ 252) is an error after a bounded number of calls, never
/// an endless loop.
#[test]
fn a_stuck_source_is_an_error_not_a_hang() {
    let mut calls = 0usize;
    let err = BootstrapToken::generate_with(|b| {
        calls += 1;
        b.fill(255);
    })
    .unwrap_err();
    assert!(matches!(err, Error::Rng), "{err:?}");
    assert_eq!(calls, BootstrapToken::MAX_FILL_CALLS);
    // A source that is mostly unusable still finishes.
    let mut i = 0u32;
    let t = BootstrapToken::generate_with(|b| {
        for x in b {
            i += 1;
            *x = if i.is_multiple_of(10) { 1 } else { 254 };
        }
    });
    assert!(t.is_ok());
}
