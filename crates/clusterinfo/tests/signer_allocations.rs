//! The bootstrap signer's allocations per token, counted with a global allocator (this file is
//! its own test binary, with a single test, so nothing else allocates concurrently).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::alloc::System;
use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

use bootstrap_token::SecretObject;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const TOKENS: usize = 2_000;

fn secret(i: usize) -> SecretObject {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut n = i;
    let id: String = (0..6)
        .map(|_| {
            let c = char::from(CHARS[n % 36]);
            n /= 36;
            c
        })
        .collect();
    let data: BTreeMap<String, Vec<u8>> = [
        ("token-id", id.clone()),
        (
            "token-secret",
            format!("{:016x}", i.wrapping_mul(0x9e37_79b9)),
        ),
        ("usage-bootstrap-signing", "true".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.into_bytes()))
    .collect();
    SecretObject::new(
        format!("bootstrap-token-{id}"),
        "kube-system",
        "bootstrap.kubernetes.io/token",
        Some(data),
    )
}

/// Per token the output needs two strings (the `jws-kubeconfig-<id>` key and the signature);
/// everything else is per call or amortised over many tokens (map nodes, a few vectors).
fn reconcile_allocates_two_strings_per_token_plus_amortised_nodes() {
    let secrets: Vec<SecretObject> = (0..TOKENS).map(secret).collect();
    let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let unsigned: BTreeMap<String, String> = [
        ("kubeconfig".to_owned(), "k".repeat(2048)),
        ("note".to_owned(), "kept".to_owned()),
    ]
    .into();

    let region = Region::new(GLOBAL);
    let fresh = clusterinfo::reconcile(&unsigned, &secrets, now);
    let fresh_allocs = region.change().allocations;
    assert!(fresh.update_needed());
    assert_eq!(fresh.signed_token_ids().len(), TOKENS);

    let signed = fresh.into_data();
    let region = Region::new(GLOBAL);
    let unchanged = clusterinfo::reconcile(&signed, &secrets, now);
    let unchanged_allocs = region.change().allocations;
    assert!(!unchanged.update_needed());
    assert_eq!(unchanged.data(), &signed);

    // Two strings per token, about a tenth of an allocation more per token for the nodes of
    // the new map (bulk-built, 11 entries per leaf), and a fixed number per call.
    let bound = 2 * TOKENS + TOKENS / 8 + 16;
    for (case, n) in [("fresh", fresh_allocs), ("unchanged", unchanged_allocs)] {
        println!("{case}: {n} allocations for {TOKENS} tokens");
        assert!(n >= 2 * TOKENS, "{case}: {n}");
        assert!(n <= bound, "{case}: {n} allocations, bound {bound}");
    }
}

/// The test binary runs without libtest's harness (`harness = false` in Cargo.toml): the
/// allocator's counters are process-wide, and the harness's own threads allocate while a test
/// runs. Here the measured code runs on the only thread. Filters and `--list` behave as
/// libtest's do.
fn main() {
    const NAME: &str = "reconcile_allocates_two_strings_per_token_plus_amortised_nodes";
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        println!("{NAME}: test");
        return;
    }
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    if !filters.is_empty() && !filters.iter().any(|f| NAME.contains(f.as_str())) {
        println!(
            "\nrunning 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 1 filtered out\n"
        );
        return;
    }
    println!("\nrunning 1 test");
    reconcile_allocates_two_strings_per_token_plus_amortised_nodes();
    println!(
        "test {NAME} ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n"
    );
}
