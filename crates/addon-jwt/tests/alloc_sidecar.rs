//! Allocations on the sidecar's cache-hit path, counted with a counting global allocator (this
//! file is its own test binary, with a single test, so nothing else allocates concurrently).
//!
//! A cache hit allocates exactly once for a list of pairs (the vector the lines are moved into)
//! and not at all when an `http::HeaderMap` is edited in place (also when only the cache may
//! decide), also when the request carries identity headers the sidecar strips.
#![allow(
    clippy::unwrap_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::alloc::System;
use std::time::{Duration, UNIX_EPOCH};

use addon_jwt::{Audience, Decision, Issuer, Minter, Sidecar, SigningKey, Validation};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const ED25519_PKCS8: &str = "-----BEGIN PRIVATE KEY-----\n\
MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
-----END PRIVATE KEY-----\n";

fn cache_hits_allocate_once_for_pairs_and_never_in_place() {
    let key = SigningKey::from_pkcs8_pem(ED25519_PKCS8).unwrap();
    let validation = Validation::new(
        Issuer::new("https://kubernetes.default.svc"),
        Audience::new("kube-system/dashboard"),
    );
    let sidecar = Sidecar::new(key.public_key_set().unwrap(), validation);
    let now = UNIX_EPOCH + Duration::from_secs(1_750_000_000);
    let token = Minter::new(key, Issuer::new("https://kubernetes.default.svc"))
        .mint("jane", &Audience::new("kube-system/dashboard"), now)
        .unwrap();
    let auth = format!("Bearer {}", token.expose_secret());
    let headers = [
        ("Host", "dashboard.kube-system.svc"),
        ("Accept", "text/html"),
        ("Authorization", auth.as_str()),
        ("X-Authenticated-User", "admin"),
        ("X-Remote-User", "admin"),
        ("Impersonate-Group", "system:masters"),
        ("Connection", "keep-alive"),
        ("Keep-Alive", "timeout=5"),
    ];

    // The miss verifies and fills the cache; it allocates freely.
    assert!(matches!(sidecar.decide(headers, now), Decision::Forward(_)));
    assert_eq!(sidecar.cached(), 1);

    for _ in 0..3 {
        let region = Region::new(GLOBAL);
        let decision = sidecar.decide(headers, now);
        let Decision::Forward(forward) = &decision else {
            panic!("rejected");
        };
        assert_eq!(forward.user(), "jane");
        assert_eq!(forward.headers().len(), 3);
        drop(decision);
        let stats = region.change();
        assert_eq!(stats.allocations, 1, "{stats:?}");
        assert_eq!(stats.reallocations, 0, "{stats:?}");
    }

    #[cfg(feature = "http")]
    {
        let request = || {
            let mut map = http::HeaderMap::new();
            for (name, value) in headers {
                map.append(
                    http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                    value.parse().unwrap(),
                );
            }
            map
        };
        for round in 0..4 {
            let mut map = request();
            let region = Region::new(GLOBAL);
            let user = sidecar.decide_header_map(&mut map, now).unwrap();
            drop(user);
            let stats = region.change();
            assert_eq!(map.len(), 3);
            assert_eq!(map["x-authenticated-user"], "jane");
            // The cached header value is shared from the second use on (the first turns it
            // into a reference-counted buffer).
            if round > 0 {
                assert_eq!(stats.allocations, 0, "{stats:?}");
                assert_eq!(stats.reallocations, 0, "{stats:?}");
            }
        }
        // The cache-only decision on a hit allocates nothing either.
        let mut map = request();
        let region = Region::new(GLOBAL);
        let user = sidecar.decide_header_map_if_cached(&mut map, now);
        assert_eq!(user.as_ref().map(|u| u.as_deref().ok()), Some(Some("jane")));
        drop(user);
        let stats = region.change();
        assert_eq!(map["x-authenticated-user"], "jane");
        assert_eq!(stats.allocations, 0, "{stats:?}");
        assert_eq!(stats.reallocations, 0, "{stats:?}");
    }
}

/// The test binary runs without libtest's harness (`harness = false` in Cargo.toml): the
/// allocator's counters are process-wide, and the harness's own threads allocate while a test
/// runs. Here the measured code runs on the only thread. Filters and `--list` behave as
/// libtest's do.
fn main() {
    const NAME: &str = "cache_hits_allocate_once_for_pairs_and_never_in_place";
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
    cache_hits_allocate_once_for_pairs_and_never_in_place();
    println!(
        "test {NAME} ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n"
    );
}
