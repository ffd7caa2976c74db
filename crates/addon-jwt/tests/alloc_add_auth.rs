//! Allocations on the add-auth decision's token-cache-hit path and on `Minter::mint`'s cache
//! hit, counted with a counting global allocator (this file is its own test binary, with a
//! single test, so nothing else allocates concurrently).
//!
//! A `Minter::mint` cache hit allocates once (the token handed back); an add-auth injection on a
//! cache hit once for `add-auth=true` alone (the `Authorization` value) and once more when other
//! parameters are kept (the rewritten query); a pass-through not at all.
#![allow(
    clippy::unwrap_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::alloc::System;
use std::num::NonZeroU32;
use std::time::{Duration, UNIX_EPOCH};

use addon_jwt::add_auth::{AddAuth, Decision, ProxiedService};
use addon_jwt::{Audience, Issuer, Minter, RequestUser, SigningKey};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const ED25519_PKCS8: &str = "-----BEGIN PRIVATE KEY-----\n\
MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
-----END PRIVATE KEY-----\n";

fn minter() -> Minter {
    let key = SigningKey::from_pkcs8_pem(ED25519_PKCS8).unwrap();
    Minter::new(key, Issuer::new("https://kubernetes.default.svc"))
}

fn cache_hits_allocate_only_what_they_hand_back() {
    let now = UNIX_EPOCH + Duration::from_secs(1_750_000_000);
    let audience = Audience::new("kube-system/dashboard");
    let mut bare = minter();
    let first = bare.mint("jane", &audience, now).unwrap();
    for _ in 0..3 {
        let region = Region::new(GLOBAL);
        let token = bare.mint("jane", &audience, now).unwrap();
        assert!(token == first);
        drop(token);
        let stats = region.change();
        assert_eq!(stats.allocations, 1, "mint: {stats:?}");
        assert_eq!(stats.reallocations, 0, "mint: {stats:?}");
    }

    let mut add_auth = AddAuth::new(minter()).rate(NonZeroU32::MIN, Duration::ZERO);
    let user = RequestUser::new("jane");
    let service = ProxiedService::new("kube-system", "dashboard");
    // The miss signs, fills the cache and the user's bucket; it allocates freely.
    let miss = add_auth.decide(&user, &service, Some("add-auth=true"), now);
    assert!(matches!(miss, Ok(Decision::Inject(_))));
    for (query, expected) in [
        ("add-auth=true", 1),
        ("watch=1&add-auth=true&resourceVersion=42", 2),
        ("watch=1&resourceVersion=42", 0),
    ] {
        for _ in 0..3 {
            let region = Region::new(GLOBAL);
            let decision = add_auth.decide(&user, &service, Some(query), now).unwrap();
            if let Decision::Inject(injection) = &decision {
                assert!(!injection.minted());
            }
            drop(decision);
            let stats = region.change();
            assert_eq!(stats.allocations, expected, "{query}: {stats:?}");
            assert_eq!(stats.reallocations, 0, "{query}: {stats:?}");
        }
    }
}

/// Without libtest's harness (`harness = false` in Cargo.toml): the allocator's counters are
/// process-wide, and the harness's own threads allocate while a test runs.
fn main() {
    const NAME: &str = "cache_hits_allocate_only_what_they_hand_back";
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
    cache_hits_allocate_only_what_they_hand_back();
    println!(
        "test {NAME} ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n"
    );
}
