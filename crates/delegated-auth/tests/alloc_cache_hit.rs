//! Allocations on the caches' hit path, counted with a counting global allocator (this file is
//! its own test binary, with a single test, so nothing else allocates concurrently): a token
//! cache hit (key and lookup) and an access cache hit allocate nothing.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "tests"
)]

use std::alloc::System;
use std::time::{Duration, UNIX_EPOCH};

use delegated_auth::{
    AccessCache, AccessReviewKind, Attributes, BearerToken, CacheConfig, ResourceAttributes,
    TokenCache, TokenCacheKey, TokenReview, UserInfo, read_access_review,
};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

#[test]
fn cache_hits_allocate_nothing() {
    let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let review = TokenReview::new(BearerToken::new("a".repeat(900)).unwrap())
        .with_audiences(["https://metrics.example"]);
    let outcome = review
        .read_answer(201, br#"{"status":{"authenticated":true,"audiences":["https://metrics.example"],"user":{"username":"u","groups":["g"]}}}"#)
        .unwrap();
    let mut tokens = TokenCache::new(CacheConfig::default());
    tokens.insert(review.cache_key(), outcome, now);

    let attrs = Attributes::resource(
        UserInfo::new("system:serviceaccount:monitoring:prometheus")
            .with_groups(["system:serviceaccounts", "system:authenticated"])
            .with_extra("authentication.kubernetes.io/pod-name", ["prometheus-0"]),
        "get",
        ResourceAttributes::new("", "v1", "pods").in_namespace("monitoring"),
    );
    let mut access = AccessCache::new(CacheConfig::default());
    let allowed = read_access_review(
        AccessReviewKind::Subject,
        201,
        br#"{"status":{"allowed":true}}"#,
    )
    .unwrap();
    access.insert(&attrs, allowed, now);

    let region = Region::new(GLOBAL);
    let key = TokenCacheKey::new(review.token(), review.audiences());
    let hit = tokens.get(&key, now).is_some();
    let allowed = access.get(&attrs, now).is_some_and(|o| o.is_allowed());
    let stats = region.change();
    assert!(hit && allowed);
    assert_eq!(stats.allocations, 0, "{stats:?}");
    assert_eq!(stats.reallocations, 0, "{stats:?}");
}
