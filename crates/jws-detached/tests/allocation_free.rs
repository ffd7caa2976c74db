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
    "/../../vectors/bench_kubeconfig.yaml"
));

// One test function: the harness runs tests on threads, and another test's allocations would
// be counted.
#[test]
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
