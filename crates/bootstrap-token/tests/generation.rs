//! Token generation: always valid, uniform over the 36 characters, no modulo bias.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use bootstrap_token::BootstrapToken;
use rand::SeedableRng;
use rand::rngs::StdRng;

const CHARSET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";

/// A "random" source that yields 0, 1, ..., 255, 0, 1, ... : over each full cycle an unbiased
/// sampler must emit every character exactly 7 times (252 = 7 × 36 accepted bytes, 4 rejected).
struct Counter(u8);

impl rand::RngCore for Counter {
    fn next_u32(&mut self) -> u32 {
        rand_core_next_u32(self)
    }
    fn next_u64(&mut self) -> u64 {
        u64::from(self.next_u32())
    }
    fn fill_bytes(&mut self, dst: &mut [u8]) {
        for b in dst {
            *b = self.0;
            self.0 = self.0.wrapping_add(1);
        }
    }
}

fn rand_core_next_u32(c: &mut Counter) -> u32 {
    let mut b = [0u8; 4];
    rand::RngCore::fill_bytes(c, &mut b);
    u32::from_le_bytes(b)
}

impl rand::CryptoRng for Counter {}

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

#[test]
fn rejection_sampling_has_no_modulo_bias() {
    let mut rng = Counter(0);
    // 36 * 7 = 252 accepted bytes per cycle; 22 characters per token: lcm gives exact cycles.
    let n = 252 * 11 / 22 * 2; // 252 tokens = 22 full cycles
    let tokens: Vec<_> = (0..n).map(|_| BootstrapToken::generate(&mut rng)).collect();
    let c = counts(&tokens);
    assert!(c.iter().all(|&x| x == c[0]), "{c:?}");
    // A modulo-only sampler would give '0'..'3' (252..=255 % 36 = 0..=3) extra counts.
}

#[test]
fn generated_tokens_are_uniform_chi_squared() {
    let mut rng = StdRng::seed_from_u64(0x6b38_7362);
    let tokens: Vec<_> = (0..20_000)
        .map(|_| BootstrapToken::generate(&mut rng))
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
fn generated_tokens_parse_and_differ() {
    let mut rng = StdRng::seed_from_u64(1);
    let a = BootstrapToken::generate(&mut rng);
    let b = BootstrapToken::generate(&mut rng);
    assert_ne!(a, b);
    assert_eq!(a.to_string().parse::<BootstrapToken>().unwrap(), a);
    let os = BootstrapToken::generate_with_os_rng().unwrap();
    assert_eq!(os.to_string().parse::<BootstrapToken>().unwrap(), os);
    let thread = BootstrapToken::generate(&mut rand::rng());
    assert_eq!(thread.to_string().len(), 23);
}
