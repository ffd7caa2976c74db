//! `delegated-auth`: a decision cache hit, beside its floors. A token cache hit is the key
//! (SHA-256 over a 900-byte projected service-account token and one audience) plus a lookup;
//! an access cache hit is a keyed hash of the request's attributes, a lookup and an equality
//! check. Floors (`baseline/...`): the bare SHA-256 of the same bytes, a std `HashMap` lookup
//! by a 32-byte key, and a std `HashMap` lookup by the attributes' strings. The
//! `attributes_and_hit` cases are what the tower layer does per request once the token is
//! cached: the request's attributes (path, request info) and the access cache hit looked up
//! from them for a shared user (`AccessCache::get_request`: nothing of the request copied).
#![allow(
    missing_docs,
    clippy::expect_used,
    clippy::arithmetic_side_effects,
    clippy::cast_possible_truncation
)]

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use criterion::{Criterion, Throughput};
use delegated_auth::{
    AccessCache, AccessKey, AccessReviewKind, ApiPrefixes, Attributes, BearerToken, CacheConfig,
    RequestInfo, RequestPath, ResourceAttributes, TokenCache, TokenCacheKey, TokenReview, UserInfo,
    read_access_review,
};
use sha2::{Digest, Sha256};

/// The realistic token of Kubernetes' own benchmark (cached_token_authenticator_test.go), 906
/// bytes.
const JWT: &str = "eyJhbGciOiJSUzI1NiIsImtpZCI6IiJ9.eyJpc3MiOiJrdWJlcm5ldGVzL3NlcnZpY2VhY2NvdW50Iiwia3ViZXJuZXRlcy5pby9zZXJ2aWNlYWNjb3VudC9uYW1lc3BhY2UiOiJvcGVuc2hpZnQtc2RuIiwia3ViZXJuZXRlcy5pby9zZXJ2aWNlYWNjb3VudC9zZWNyZXQubmFtZSI6InNkbi10b2tlbi1nNndtYyIsImt1YmVybmV0ZXMuaW8vc2VydmljZWFjY291bnQvc2VydmljZS1hY2NvdW50Lm5hbWUiOiJzZG4iLCJrdWJlcm5ldGVzLmlvL3NlcnZpY2VhY2NvdW50L3NlcnZpY2UtYWNjb3VudC51aWQiOiIzYzM5YzNhYS1kM2Q5LTExZTktYTVkMC0wMmI3YjllODg1OWUiLCJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6b3BlbnNoaWZ0LXNkbjpzZG4ifQ.PIs0rsUTekj5AX8yJeLDyW4vQB17YS4IOgO026yjEvsCY7Wv_2TD0lwyZWqyQh639q3jPh2_3LTQq2Cp0cReBP1PYOIGgprNm3C-3OFZRnkls-GH09kvPYE8J_-a1YwjxucOwytzJvEM5QTC9iXfEJNSTBfLge-HMYT1y0AGKs8DWTSC4rtd_2PedK3OYiAyDg_xHA8qNpG9pRNM8vfjV9VsmqJtlbnTVlTngqC0t5vyMaWrmLNRxN0rTbN2W9L3diXRnYqI8BUfgPQb7uhYcPuXGeypaFrN4d3yNN4NbgVxnkgdd2IXQ8elSJuQn6ynrvLgG0JPMmThOHnwvsZDeA";
const AUDIENCE: &str = "https://metrics.example";
/// Entries in each cache besides the one looked up.
const ENTRIES: usize = 10_000;

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

/// The resource request of the `attributes_and_hit` cases.
const RESOURCE_PATH: &str = "/apis/apps/v1/namespaces/default/deployments/web";

fn user(name: &str) -> UserInfo {
    UserInfo::new(name)
        .with_uid("3c39c3aa-d3d9-11e9-a5d0-02b7b9e8859e")
        .with_groups([
            "system:serviceaccounts",
            "system:serviceaccounts:monitoring",
            "system:authenticated",
        ])
        .with_extra("authentication.kubernetes.io/pod-name", ["prometheus-0"])
}

fn attributes(name: &str) -> Attributes {
    Attributes::non_resource(user(name), "get", "/metrics")
}

fn resource_attributes(name: &str) -> Attributes {
    Attributes::resource(
        user(name),
        "get",
        ResourceAttributes::new("apps", "v1", "deployments")
            .in_namespace("default")
            .with_name("web"),
    )
}

fn token_cache(c: &mut Criterion) {
    let review = TokenReview::new(BearerToken::new(JWT.to_owned()).expect("token"))
        .with_audiences([AUDIENCE]);
    let answer = br#"{"status":{"authenticated":true,"audiences":["https://metrics.example"],
        "user":{"username":"system:serviceaccount:monitoring:prometheus","groups":["system:serviceaccounts","system:authenticated"]}}}"#;
    let mut cache = TokenCache::new(CacheConfig::default().with_max_entries(2 * ENTRIES));
    for i in 0..ENTRIES {
        let other = TokenReview::new(BearerToken::new(format!("{JWT}-{i}")).expect("token"))
            .with_audiences([AUDIENCE]);
        cache.insert(
            other.cache_key(),
            other.read_answer(201, answer).expect("answer"),
            now(),
        );
    }
    cache.insert(
        review.cache_key(),
        review.read_answer(201, answer).expect("answer"),
        now(),
    );
    let mut floor_map: HashMap<[u8; 32], u64> = HashMap::new();
    for i in 0..ENTRIES as u64 {
        floor_map.insert(Sha256::digest(i.to_le_bytes()).into(), i);
    }
    let floor_key: [u8; 32] = Sha256::digest(JWT).into();
    floor_map.insert(floor_key, 1);

    let mut group = c.benchmark_group("delegated_auth/token_cache");
    group.throughput(Throughput::Bytes(JWT.len() as u64));
    group.bench_function("baseline/sha256", |b| {
        b.iter(|| {
            let mut h = Sha256::new();
            h.update(black_box(JWT).as_bytes());
            h.update(black_box(AUDIENCE).as_bytes());
            black_box(h.finalize())
        })
    });
    group.bench_function("baseline/hashmap_get", |b| {
        b.iter(|| black_box(floor_map.get(black_box(&floor_key))))
    });
    group.bench_function("ours/key", |b| {
        b.iter(|| {
            black_box(TokenCacheKey::new(
                black_box(review.token()),
                black_box(review.audiences()),
            ))
        })
    });
    group.bench_function("ours/hit", |b| {
        b.iter(|| {
            let key = TokenCacheKey::new(black_box(review.token()), black_box(review.audiences()));
            black_box(cache.get(&key, now()).is_some())
        })
    });
    group.finish();
}

fn access_cache(c: &mut Criterion) {
    const NAME: &str = "system:serviceaccount:monitoring:prometheus";
    let attrs = attributes(NAME);
    let resource_attrs = resource_attributes(NAME);
    let allowed = read_access_review(
        AccessReviewKind::Subject,
        201,
        br#"{"status":{"allowed":true}}"#,
    )
    .expect("answer");
    let mut cache = AccessCache::new(CacheConfig::default().with_max_entries(4 * ENTRIES));
    let mut floor_map: HashMap<(String, String, String), bool> = HashMap::new();
    for i in 0..ENTRIES {
        let name = format!("system:serviceaccount:monitoring:sa-{i}");
        cache.insert(&attributes(&name), allowed.clone(), now());
        cache.insert(&resource_attributes(&name), allowed.clone(), now());
        floor_map.insert((name, "get".into(), "/metrics".into()), true);
    }
    // Kept with the user as the tower layer holds it after authentication (shared with the
    // token cache: the request that was reviewed and the ones after it get the same
    // allocation). The `hit` cases look up with equal attributes that share nothing, as a
    // second token of the same user does: the user is compared field by field.
    let shared = Arc::new(user(NAME));
    let kept = |mut a: Attributes| {
        a.user = Arc::clone(&shared);
        a
    };
    cache.insert(&kept(attributes(NAME)), allowed.clone(), now());
    cache.insert(&kept(resource_attributes(NAME)), allowed, now());
    let floor_key = (
        attrs.user.name.clone(),
        "get".to_owned(),
        "/metrics".to_owned(),
    );
    floor_map.insert(floor_key.clone(), true);

    let mut group = c.benchmark_group("delegated_auth/access_cache");
    group.bench_function("baseline/hashmap_get_user_verb_path", |b| {
        b.iter(|| black_box(floor_map.get(black_box(&floor_key))))
    });
    group.bench_function("ours/hit", |b| {
        b.iter(|| black_box(cache.get(black_box(&attrs), now()).is_some()))
    });
    group.bench_function("ours/hit_resource", |b| {
        b.iter(|| black_box(cache.get(black_box(&resource_attrs), now()).is_some()))
    });
    group.bench_function("ours/single_flight_key", |b| {
        b.iter(|| black_box(AccessKey::new(black_box(&attrs))))
    });
    let attributes_and_hit = |user: &Arc<UserInfo>, path: &str| {
        let path = RequestPath::parse(black_box(path)).expect("path");
        let info = RequestInfo::resolve(black_box("GET"), &path, None, &ApiPrefixes::Kubernetes)
            .expect("info");
        cache
            .get_request(user, &info, now())
            .is_some_and(|o| o.is_allowed())
    };
    let unshared = Arc::new(user(NAME));
    assert!(attributes_and_hit(&shared, RESOURCE_PATH));
    assert!(attributes_and_hit(&shared, "/metrics"));
    assert!(attributes_and_hit(&unshared, RESOURCE_PATH));
    group.bench_function("ours/attributes_and_hit/resource_get", |b| {
        b.iter(|| black_box(attributes_and_hit(&shared, RESOURCE_PATH)))
    });
    group.bench_function("ours/attributes_and_hit/non_resource", |b| {
        b.iter(|| black_box(attributes_and_hit(&shared, "/metrics")))
    });
    group.bench_function("ours/attributes_and_hit/resource_get_another_token", |b| {
        b.iter(|| black_box(attributes_and_hit(&unshared, RESOURCE_PATH)))
    });
    // Its two halves: the request's attributes alone, and the lookup from them alone.
    group.bench_function("ours/attributes/resource_get", |b| {
        b.iter(|| {
            let path = RequestPath::parse(black_box(RESOURCE_PATH)).expect("path");
            let info =
                RequestInfo::resolve(black_box("GET"), &path, None, &ApiPrefixes::Kubernetes)
                    .expect("info");
            black_box(info.is_resource_request)
        })
    });
    let path = RequestPath::parse(RESOURCE_PATH).expect("path");
    let info = RequestInfo::resolve("GET", &path, None, &ApiPrefixes::Kubernetes).expect("info");
    group.bench_function("ours/get_request/resource_get", |b| {
        b.iter(|| {
            black_box(
                cache
                    .get_request(&shared, black_box(&info), now())
                    .is_some_and(|o| o.is_allowed()),
            )
        })
    });
    group.finish();
}

/// The groups of this file (what `criterion_group!` expands to, with a doc comment).
fn benches() {
    let mut c = Criterion::default().configure_from_args();
    token_cache(&mut c);
    access_cache(&mut c);
}

/// Runs the groups (what `criterion_main!` expands to, with a doc comment).
fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
