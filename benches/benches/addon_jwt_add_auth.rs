//! addon-jwt's `add-auth` decision (the API server's half of add-on authentication) on a token
//! cache hit, beside the bare `Minter::mint` cache hit it is built on, in the same run.

// `criterion_group!`/`criterion_main!` expand to undocumented functions.
#![allow(missing_docs)]

use std::hint::black_box;
use std::num::NonZeroU32;
use std::time::{Duration, UNIX_EPOCH};

use addon_jwt::add_auth::{AddAuth, ProxiedService};
use addon_jwt::{Audience, Issuer, Minter, RequestUser, SigningKey};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};

const ED25519: &str = "-----BEGIN PRIVATE KEY-----\n\
MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
-----END PRIVATE KEY-----\n";
const ISS: &str = "https://kubernetes.default.svc";

fn minter() -> Option<Minter> {
    let key = SigningKey::from_pkcs8_pem(ED25519).ok()?;
    Some(Minter::new(key, Issuer::new(ISS)))
}

fn bench_add_auth(c: &mut Criterion) {
    let now = UNIX_EPOCH
        .checked_add(Duration::from_secs(1_750_000_000))
        .unwrap_or(UNIX_EPOCH);
    let (Some(mut bare), Some(for_decision)) = (minter(), minter()) else {
        return;
    };
    let audience = Audience::new("kube-system/dashboard");
    let user = RequestUser::new("jane");
    let service = ProxiedService::new("kube-system", "dashboard");
    // No limit (a zero period): the bucket is still looked up and updated on every request,
    // but never runs dry however many iterations criterion makes at one `now`.
    let mut add_auth = AddAuth::new(for_decision).rate(NonZeroU32::MIN, Duration::ZERO);
    let _ = bare.mint("jane", &audience, now);
    let _ = add_auth.decide(&user, &service, Some("add-auth=true"), now);

    let mut group = c.benchmark_group("addon_jwt/add_auth");
    group.bench_function("baseline/minter_mint_cache_hit", |b| {
        b.iter(|| bare.mint(black_box("jane"), black_box(&audience), now))
    });
    group.bench_function("ours/decide_cache_hit", |b| {
        b.iter(|| {
            add_auth.decide(
                black_box(&user),
                black_box(&service),
                black_box(Some("add-auth=true")),
                now,
            )
        })
    });
    group.bench_function("ours/decide_cache_hit_with_other_parameters", |b| {
        b.iter(|| {
            add_auth.decide(
                black_box(&user),
                black_box(&service),
                black_box(Some("watch=1&add-auth=true&resourceVersion=42")),
                now,
            )
        })
    });
    group.bench_function("ours/pass_through", |b| {
        b.iter(|| {
            add_auth.decide(
                black_box(&user),
                black_box(&service),
                black_box(Some("watch=1&resourceVersion=42")),
                now,
            )
        })
    });
    // What the tower layer does besides: the URI and an `http::HeaderMap` rewritten in place.
    let uri: http::Uri =
        "/api/v1/namespaces/kube-system/services/dashboard:80/proxy/?add-auth=true"
            .parse()
            .unwrap_or_default();
    let mut headers = http::HeaderMap::new();
    headers.insert(http::header::ACCEPT, http::HeaderValue::from_static("*/*"));
    headers.insert(
        http::header::USER_AGENT,
        http::HeaderValue::from_static("kubectl/v1.37.1"),
    );
    headers.insert(
        http::header::AUTHORIZATION,
        http::HeaderValue::from_static("Bearer the-user-s-own"),
    );
    group.bench_function("ours/decide_and_rewrite_request_cache_hit", |b| {
        b.iter_batched(
            || headers.clone(),
            |mut headers| {
                if let Ok(addon_jwt::add_auth::Decision::Inject(i)) =
                    add_auth.decide(&user, &service, uri.query(), now)
                {
                    i.apply_to_headers(&mut headers);
                    let uri = i.apply_to_uri(&uri);
                    return (headers, uri.ok());
                }
                (headers, None)
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, bench_add_auth);
criterion_main!(benches);
