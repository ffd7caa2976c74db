//! Verification performs no heap allocation: a counting global allocator proves it.
//! (A dedicated test binary: the allocator is global.)

// Test helpers outside `#[test]` functions may unwrap and index as the tests do.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::alloc::System;

use jws_detached::{PreparedPayload, sign, verify, verify_kubernetes};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Heap allocations (including reallocations) made while `f` runs.
fn allocations_during(f: impl FnOnce()) -> usize {
    let region = Region::new(GLOBAL);
    f();
    let stats = region.change();
    stats.allocations + stats.reallocations
}

const KUBECONFIG: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/vectors/bench_kubeconfig.yaml"
));

fn verification_allocates_nothing() {
    let key = b"0123456789abcdef";
    let jws = sign(KUBECONFIG, "abcdef", key).unwrap();
    let standards_form = jws.clone();
    let payload = PreparedPayload::new(KUBECONFIG).unwrap();
    let big = vec![b'x'; 1 << 20];
    let big_jws = sign(&big, "abcdef", key).unwrap();
    let tampered = jws
        .replace("..", "..A")
        .chars()
        .take(jws.len())
        .collect::<String>();

    // The counter really counts.
    assert!(allocations_during(|| drop(std::hint::black_box(vec![0u8; 16]))) >= 1);

    let n = allocations_during(|| {
        for _ in 0..3 {
            assert!(verify_kubernetes(&jws, KUBECONFIG, "abcdef", key).is_ok());
            assert!(verify(&standards_form, KUBECONFIG, "abcdef", key).is_ok());
            assert!(payload.verify_kubernetes(&jws, "abcdef", key).is_ok());
            assert!(payload.verify(&jws, "abcdef", key).is_ok());
            assert!(verify_kubernetes(&big_jws, &big, "abcdef", key).is_ok());
            assert!(verify(&big_jws, &big, "abcdef", key).is_ok());
            // Failures allocate nothing either.
            assert!(verify_kubernetes(&jws, b"other", "abcdef", key).is_err());
            assert!(verify(&tampered, KUBECONFIG, "abcdef", key).is_err());
            assert!(verify(&jws, KUBECONFIG, "ghijkl", key).is_err());
            assert!(verify("..", KUBECONFIG, "abcdef", key).is_err());
        }
    });
    assert_eq!(n, 0, "verification allocated {n} times");

    // Signing allocates exactly the output string.
    let n = allocations_during(|| {
        std::hint::black_box(sign(KUBECONFIG, "abcdef", key).unwrap());
        std::hint::black_box(payload.sign("abcdef", key).unwrap());
    });
    assert_eq!(n, 2);
}

/// The test binary runs without libtest's harness (`harness = false` in Cargo.toml): the
/// allocator's counters are process-wide, and the harness's own threads allocate while a test
/// runs. Here the measured code runs on the only thread. Filters and `--list` behave as
/// libtest's do.
fn main() {
    const NAME: &str = "verification_allocates_nothing";
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
    verification_allocates_nothing();
    println!(
        "test {NAME} ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n"
    );
}
