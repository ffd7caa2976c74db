//! Allocations on the caches' hit path, counted with a counting global allocator (this file is
//! its own test binary, with a single test, so nothing else allocates concurrently): a token
//! cache hit (key and lookup) and an access cache hit allocate nothing, and a request's
//! attributes cost one allocation per non-empty attribute string (none for the path, the
//! request info or the user), and a hit looked up from the request itself allocates nothing.

#![allow(
    clippy::unwrap_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "tests"
)]

use std::alloc::System;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use delegated_auth::{
    AccessCache, AccessReviewKind, ApiPrefixes, Attributes, BearerToken, CacheConfig, RequestInfo,
    RequestPath, ResourceAttributes, TokenCache, TokenCacheKey, TokenReview, UserInfo,
    read_access_review,
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

    // A request's attributes, from its target to a cache hit, as the tower layer builds them
    // for a user it holds in an `Arc` (from the token cache).
    let user = Arc::new(
        UserInfo::new("system:serviceaccount:monitoring:prometheus").with_groups([
            "system:serviceaccounts",
            "system:serviceaccounts:monitoring",
            "system:authenticated",
        ]),
    );
    let attributes_of = |method: &str, target: &str| {
        let (path, query) = target
            .split_once('?')
            .map_or((target, None), |(p, q)| (p, Some(q)));
        let path = RequestPath::parse(path).unwrap();
        RequestInfo::resolve(method, &path, query, &ApiPrefixes::Kubernetes)
            .unwrap()
            .into_attributes(Arc::clone(&user))
    };
    let cases = [
        // The verb, group, version, resource, namespace and name: six strings.
        ("GET", "/apis/apps/v1/namespaces/default/deployments/web", 6),
        // The verb and the path.
        ("GET", "/metrics", 2),
        // The verb, version, resource, namespace, the name from the field selector and the two
        // selectors (unescaped: `%3D`), plus three temporaries of the selectors' checks.
        (
            "GET",
            "/api/v1/namespaces/default/pods?watch=1&fieldSelector=metadata.name%3Dweb-0&labelSelector=app%3Dweb",
            10,
        ),
    ];
    for (method, target, expected) in cases {
        let kept = attributes_of(method, target);
        access.insert(&kept, allowed_outcome(), now);
        let region = Region::new(GLOBAL);
        let attrs = attributes_of(method, target);
        let attributes = region.change();
        let region = Region::new(GLOBAL);
        let allowed = access.get(&attrs, now).is_some_and(|o| o.is_allowed());
        let hit = region.change();
        assert!(allowed, "{target}");
        assert_eq!(attributes.allocations, expected, "{target}: {attributes:?}");
        assert_eq!(attributes.reallocations, 0, "{target}: {attributes:?}");
        assert_eq!(hit.allocations, 0, "{target}: {hit:?}");
        assert_eq!(hit.reallocations, 0, "{target}: {hit:?}");
        // The user is shared, never copied.
        assert!(Arc::ptr_eq(&attrs.user, &user), "{target}");
    }

    // The same hits straight from the request (`AccessCache::get_request`): nothing is copied,
    // so only selectors that had to be unescaped allocate (the two selectors, the name read
    // from the field selector, and three temporaries of their checks).
    let lookups = [
        ("GET", "/apis/apps/v1/namespaces/default/deployments/web", 0),
        ("GET", "/metrics", 0),
        (
            "GET",
            "/api/v1/namespaces/default/pods?watch=1&fieldSelector=metadata.name%3Dweb-0&labelSelector=app%3Dweb",
            6,
        ),
    ];
    for (method, target, expected) in lookups {
        let region = Region::new(GLOBAL);
        let (path, query) = target
            .split_once('?')
            .map_or((target, None), |(p, q)| (p, Some(q)));
        let path = RequestPath::parse(path).unwrap();
        let info = RequestInfo::resolve(method, &path, query, &ApiPrefixes::Kubernetes).unwrap();
        let allowed = access
            .get_request(&user, &info, now)
            .is_some_and(|o| o.is_allowed());
        let stats = region.change();
        assert!(allowed, "{target}");
        assert_eq!(stats.allocations, expected, "{target}: {stats:?}");
        assert_eq!(stats.reallocations, 0, "{target}: {stats:?}");
    }
}

fn allowed_outcome() -> delegated_auth::AccessReviewOutcome {
    read_access_review(
        AccessReviewKind::Subject,
        201,
        br#"{"status":{"allowed":true}}"#,
    )
    .unwrap()
}
