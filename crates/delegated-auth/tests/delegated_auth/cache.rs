//! The decision caches: Kubernetes' token cache tests
//! (pkg/authentication/token/cache/cached_token_authenticator_test.go, cache_test.go) as data
//! where they describe behaviour, the bounds, and what is never cached.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::type_complexity,
    reason = "tests"
)]

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use delegated_auth::{
    AccessCache, AccessKey, AccessReviewKind, Attributes, BearerToken, CacheConfig, CachedToken,
    DEFAULT_ALLOW_CACHE_TTL, DEFAULT_DENY_CACHE_TTL, DEFAULT_TOKEN_CACHE_TTL, ResourceAttributes,
    TokenCache, TokenCacheKey, TokenReview, TokenReviewOutcome, UserInfo, read_access_review,
};

fn t0() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

fn token(s: &str) -> BearerToken {
    BearerToken::new(s.to_owned()).unwrap()
}

fn key(s: &str, auds: &[&str]) -> TokenCacheKey {
    let auds: Vec<String> = auds.iter().map(|a| (*a).to_owned()).collect();
    TokenCacheKey::new(&token(s), &auds)
}

fn user(name: &str) -> TokenReviewOutcome {
    TokenReviewOutcome::Authenticated {
        user: UserInfo::new(name),
        audiences: Vec::new(),
    }
}

fn refused() -> TokenReviewOutcome {
    TokenReviewOutcome::Unauthenticated { error: None }
}

/// A cached authenticator over a scripted backend: what Kubernetes' test drives.
struct Cached {
    cache: TokenCache,
    called: Vec<String>,
}

impl Cached {
    fn authenticate(
        &mut self,
        tok: &str,
        backend: &dyn Fn(&str) -> TokenReviewOutcome,
        now: SystemTime,
    ) -> Option<String> {
        let k = key(tok, &[]);
        if let Some(hit) = self.cache.get(&k, now) {
            return match hit {
                CachedToken::Authenticated { user, .. } => Some(user.name.clone()),
                _ => None,
            };
        }
        self.called.push(tok.to_owned());
        let out = backend(tok);
        let name = match &out {
            TokenReviewOutcome::Authenticated { user, .. } => Some(user.name.clone()),
            _ => None,
        };
        self.cache.insert(k, out, now);
        name
    }
}

/// TestCachedTokenAuthenticator: success TTL one minute, failure TTL zero. Failures are not
/// kept; successes are, until the TTL passes.
#[test]
fn kubernetes_cached_token_authenticator() {
    let mut a = Cached {
        cache: TokenCache::new(
            CacheConfig::default()
                .with_allow_ttl(Duration::from_secs(60))
                .with_deny_ttl(Duration::ZERO),
        ),
        called: Vec::new(),
    };
    let mut now = t0();
    let fail = |_: &str| refused();
    for tok in ["bad1", "bad2", "bad3"] {
        a.authenticate(tok, &fail, now);
    }
    now += Duration::from_micros(2);
    for tok in ["bad1", "bad2", "bad3"] {
        a.authenticate(tok, &fail, now);
    }
    assert_eq!(
        a.called,
        ["bad1", "bad2", "bad3", "bad1", "bad2", "bad3"],
        "failing calls stay out of the cache"
    );

    a.called.clear();
    let ok = |t: &str| user(&t.replace("usertoken", "user"));
    for (tok, name) in [
        ("usertoken1", "user1"),
        ("usertoken2", "user2"),
        ("usertoken3", "user3"),
    ] {
        assert_eq!(a.authenticate(tok, &ok, now).as_deref(), Some(name));
    }
    assert_eq!(a.called, ["usertoken1", "usertoken2", "usertoken3"]);

    // The backend now fails: the cache answers, the backend is not asked.
    a.called.clear();
    for (tok, name) in [
        ("usertoken1", "user1"),
        ("usertoken2", "user2"),
        ("usertoken3", "user3"),
    ] {
        assert_eq!(a.authenticate(tok, &fail, now).as_deref(), Some(name));
    }
    assert!(a.called.is_empty());

    // Two minutes on: asked again, and it fails.
    now += Duration::from_secs(120);
    for tok in ["usertoken1", "usertoken2", "usertoken3"] {
        assert_eq!(a.authenticate(tok, &fail, now), None);
    }
    assert_eq!(a.called, ["usertoken1", "usertoken2", "usertoken3"]);
}

/// TestCachedTokenAuthenticatorWithAudiences: one token, two audiences, two users.
#[test]
fn kubernetes_cached_token_authenticator_with_audiences() {
    let mut cache = TokenCache::new(CacheConfig::default());
    let now = t0();
    assert!(cache.insert(key("usertoken1", &["audA"]), user("user1"), now));
    assert!(cache.insert(key("usertoken1", &["audB"]), user("user1-different"), now));
    let name = |k| match cache.get(&k, now) {
        Some(CachedToken::Authenticated { user, .. }) => user.name.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(name(key("usertoken1", &["audA"])), "user1");
    assert_eq!(name(key("usertoken1", &["audB"])), "user1-different");
    assert!(cache.get(&key("usertoken1", &[]), now).is_none());
    assert!(
        cache
            .get(&key("usertoken1", &["audA", "audB"]), now)
            .is_none()
    );
}

/// cache_test.go (simple and striped caches): set, get, expiry at the TTL, overwrite.
#[test]
fn kubernetes_cache_set_get_expire() {
    let mut cache = TokenCache::new(CacheConfig::default().with_allow_ttl(Duration::from_secs(5)));
    let now = t0();
    // (step after start, token, expected name or None)
    let k = key("t", &[]);
    assert!(cache.get(&k, now).is_none());
    assert!(cache.insert(k, user("a"), now));
    let script: [(u64, Option<&str>); 4] = [(0, Some("a")), (4, Some("a")), (5, None), (6, None)];
    for (after, want) in script {
        let got = match cache.get(&k, now + Duration::from_secs(after)) {
            Some(CachedToken::Authenticated { user, .. }) => Some(user.name.clone()),
            _ => None,
        };
        assert_eq!(got.as_deref(), want, "after {after}s");
    }
    assert!(cache.insert(k, user("b"), now + Duration::from_secs(6)));
    assert!(
        matches!(cache.get(&k, now + Duration::from_secs(6)), Some(CachedToken::Authenticated { user, .. }) if user.name == "b")
    );
    assert_eq!(cache.len(), 1);
}

#[test]
fn defaults_are_kubernetes_delegating_defaults() {
    assert_eq!(DEFAULT_TOKEN_CACHE_TTL, Duration::from_secs(10));
    assert_eq!(DEFAULT_ALLOW_CACHE_TTL, Duration::from_secs(10));
    assert_eq!(DEFAULT_DENY_CACHE_TTL, Duration::from_secs(10));
    let c = CacheConfig::default();
    assert_eq!(
        (c.allow_ttl, c.deny_ttl),
        (Duration::from_secs(10), Duration::from_secs(10))
    );
}

#[test]
fn allow_and_deny_have_their_own_ttls() {
    let mut cache = TokenCache::new(
        CacheConfig::default()
            .with_allow_ttl(Duration::from_secs(30))
            .with_deny_ttl(Duration::from_secs(2)),
    );
    let now = t0();
    cache.insert(key("good", &[]), user("u"), now);
    cache.insert(key("bad", &[]), refused(), now);
    let later = now + Duration::from_secs(3);
    assert!(cache.get(&key("good", &[]), later).is_some());
    assert!(cache.get(&key("bad", &[]), later).is_none());
    assert_eq!(
        cache.get(&key("bad", &[]), now),
        Some(&CachedToken::Unauthenticated)
    );
}

#[test]
fn a_refusal_with_an_error_is_never_cached() {
    let mut cache = TokenCache::new(CacheConfig::default());
    let now = t0();
    let k = key("t", &[]);
    cache.insert(k, refused(), now);
    // A later answer with an error replaces nothing with a decision: the key is forgotten.
    assert!(!cache.insert(
        k,
        TokenReviewOutcome::Unauthenticated {
            error: Some("etcd down".into())
        },
        now
    ));
    assert!(cache.get(&k, now).is_none());
    assert!(cache.is_empty());
}

#[test]
fn backend_failures_never_reach_the_cache() {
    // A 5xx is an error from the reader: there is no outcome to insert.
    let review = TokenReview::new(token("t"));
    assert!(review.read_answer(503, b"{}").is_err());
    assert!(read_access_review(AccessReviewKind::Subject, 500, b"{}").is_err());
}

#[test]
fn bounded_in_entries_oldest_first() {
    let mut cache = TokenCache::new(CacheConfig::default().with_max_entries(3));
    let now = t0();
    for i in 0..10 {
        assert!(cache.insert(key(&format!("t{i}"), &[]), user(&format!("u{i}")), now));
        assert!(cache.len() <= 3);
    }
    for i in 0..7 {
        assert!(
            cache.get(&key(&format!("t{i}"), &[]), now).is_none(),
            "t{i}"
        );
    }
    for i in 7..10 {
        assert!(
            cache.get(&key(&format!("t{i}"), &[]), now).is_some(),
            "t{i}"
        );
    }
    // Replacing the same key again and again keeps the bookkeeping bounded.
    for _ in 0..10_000 {
        cache.insert(key("t9", &[]), user("u9"), now);
    }
    assert_eq!(cache.len(), 3);
}

#[test]
fn bounded_in_bytes() {
    let mut cache = TokenCache::new(CacheConfig::default().with_max_bytes(64 * 1024));
    let now = t0();
    let big = |i: usize| TokenReviewOutcome::Authenticated {
        user: UserInfo::new(format!("u{i}"))
            .with_groups((0..100).map(|g| format!("group-{g:04}-{}", "x".repeat(64)))),
        audiences: Vec::new(),
    };
    for i in 0..1000 {
        cache.insert(key(&format!("t{i}"), &[]), big(i), now);
        assert!(cache.bytes() <= 64 * 1024, "{}", cache.bytes());
    }
    assert!(cache.len() < 20, "{}", cache.len());
    // An entry larger than the whole bound is not kept, and evicts nothing.
    let before = cache.len();
    let huge = TokenReviewOutcome::Authenticated {
        user: UserInfo::new("h").with_groups(["g".repeat(100 * 1024)]),
        audiences: Vec::new(),
    };
    assert!(!cache.insert(key("huge", &[]), huge, now));
    assert_eq!(cache.len(), before);
}

#[test]
fn purge_frees_expired_entries() {
    let mut cache = TokenCache::new(CacheConfig::default());
    let now = t0();
    for i in 0..100 {
        cache.insert(key(&format!("t{i}"), &[]), user("u"), now);
    }
    assert!(cache.bytes() > 0);
    cache.purge_expired(now + Duration::from_secs(10));
    assert!(cache.is_empty());
    assert_eq!(cache.bytes(), 0);
}

#[test]
fn keys_never_hold_the_token() {
    let k = key("CANARY-secret-token", &["aud"]);
    assert!(!format!("{k:?}").contains("CANARY"));
    assert_ne!(key("ab", &["c"]), key("a", &["bc"]));
    assert_ne!(key("a", &["b", "c"]), key("a", &["bc"]));
    assert_ne!(key("a", &[""]), key("a", &[]));
    assert_eq!(key("a", &["b"]), key("a", &["b"]));
}

fn attrs(name: &str, verb: &str) -> Attributes {
    Attributes::resource(
        UserInfo::new(name).with_groups(["system:authenticated"]),
        verb,
        ResourceAttributes::new("", "v1", "pods").in_namespace("default"),
    )
}

fn sar(status: &str) -> delegated_auth::AccessReviewOutcome {
    read_access_review(
        AccessReviewKind::Subject,
        201,
        format!(r#"{{"status":{status}}}"#).as_bytes(),
    )
    .unwrap()
}

#[test]
fn access_decisions_are_cached_by_attributes() {
    let mut cache = AccessCache::new(
        CacheConfig::default()
            .with_allow_ttl(Duration::from_secs(10))
            .with_deny_ttl(Duration::from_secs(3)),
    );
    let now = t0();
    assert!(cache.insert(&attrs("alice", "get"), sar(r#"{"allowed":true}"#), now));
    assert!(cache.insert(
        &attrs("bob", "get"),
        sar(r#"{"allowed":false,"reason":"no"}"#),
        now
    ));
    assert!(cache.get(&attrs("alice", "get"), now).unwrap().is_allowed());
    assert!(cache.get(&attrs("alice", "list"), now).is_none());
    assert!(
        cache
            .get(&attrs("alice", "get"), now + Duration::from_secs(10))
            .is_none()
    );
    assert!(!cache.get(&attrs("bob", "get"), now).unwrap().is_allowed());
    assert!(
        cache
            .get(&attrs("bob", "get"), now + Duration::from_secs(3))
            .is_none()
    );
    // Any attribute tells entries apart: a group, an extra value, the UID.
    let mut a = attrs("alice", "get");
    Arc::make_mut(&mut a.user)
        .groups
        .push("system:masters".into());
    assert!(cache.get(&a, now).is_none());
    let mut a = attrs("alice", "get");
    Arc::make_mut(&mut a.user).uid = Some("u".into());
    assert!(cache.get(&a, now).is_none());
    assert_ne!(AccessKey::new(&a), AccessKey::new(&attrs("alice", "get")));
    assert_eq!(
        AccessKey::new(&attrs("alice", "get")),
        AccessKey::new(&attrs("alice", "get"))
    );
    // So do the selectors (an authorizer may decide on them: AuthorizeWithSelectors), in the
    // cache and in the key that shares one review among requests in flight.
    let mut selected = attrs("alice", "get");
    if let delegated_auth::Target::Resource(r) = &mut selected.target {
        r.label_selector = "app=web".into();
    }
    assert!(cache.get(&selected, now).is_none());
    assert_ne!(
        AccessKey::new(&selected),
        AccessKey::new(&attrs("alice", "get"))
    );
    let mut fields = attrs("alice", "get");
    if let delegated_auth::Target::Resource(r) = &mut fields.target {
        r.field_selector = "app=web".into();
    }
    assert_ne!(AccessKey::new(&selected), AccessKey::new(&fields));
}

#[test]
fn an_evaluation_error_is_never_cached_as_a_denial() {
    let mut cache = AccessCache::new(CacheConfig::default());
    let now = t0();
    let a = attrs("alice", "get");
    assert!(cache.insert(&a, sar(r#"{"allowed":false}"#), now));
    assert!(!cache.insert(
        &a,
        sar(r#"{"allowed":false,"evaluationError":"rbac informer not synced"}"#),
        now
    ));
    assert!(
        cache.get(&a, now).is_none(),
        "the failed evaluation replaced the old denial by nothing"
    );
    assert!(!cache.insert(&a, sar(r#"{"denied":true,"evaluationError":"x"}"#), now));
    assert!(cache.is_empty());
    assert!(cache.insert(&a, sar(r#"{"allowed":true,"evaluationError":"x"}"#), now));
}

#[test]
fn access_cache_is_bounded() {
    let mut cache = AccessCache::new(
        CacheConfig::default()
            .with_max_entries(50)
            .with_max_bytes(32 * 1024),
    );
    let now = t0();
    for i in 0..5000 {
        cache.insert(
            &attrs(&format!("user-{i}"), "get"),
            sar(r#"{"allowed":true}"#),
            now,
        );
        assert!(cache.len() <= 50);
        assert!(cache.bytes() <= 32 * 1024);
    }
    cache.purge_expired(now + Duration::from_secs(60));
    assert!(cache.is_empty());
}

/// What a layer renews ahead of new tokens: an authentication or an allow that was kept,
/// fresh or expired, until it is evicted or purged; never a refusal or a denial.
#[test]
fn what_was_allowed_is_remembered_after_it_expires_until_evicted() {
    let config = CacheConfig::default().with_max_entries(2);
    let mut tokens = TokenCache::new(config);
    tokens.insert(key("alice", &[]), user("alice"), t0());
    tokens.insert(key("mallory", &[]), refused(), t0());
    let later = t0() + DEFAULT_TOKEN_CACHE_TTL * 3;
    assert!(tokens.get(&key("alice", &[]), later).is_none());
    assert!(tokens.was_authenticated(&key("alice", &[])));
    assert!(!tokens.was_authenticated(&key("mallory", &[])));
    assert!(!tokens.was_authenticated(&key("bob", &[])));
    // The same token reviewed for other audiences is another key.
    assert!(!tokens.was_authenticated(&key("alice", &["api"])));
    // A refusal on renewal replaces it.
    tokens.insert(key("alice", &[]), refused(), later);
    assert!(!tokens.was_authenticated(&key("alice", &[])));
    // Evicted by newer entries, or purged: forgotten.
    tokens.insert(key("bob", &[]), user("bob"), later);
    tokens.insert(key("carol", &[]), user("carol"), later);
    tokens.insert(key("dave", &[]), user("dave"), later);
    assert!(!tokens.was_authenticated(&key("bob", &[])));
    assert!(tokens.was_authenticated(&key("carol", &[])));
    tokens.purge_expired(later + DEFAULT_TOKEN_CACHE_TTL * 3);
    assert!(!tokens.was_authenticated(&key("carol", &[])));

    let mut access = AccessCache::new(config);
    let (get, list) = (attrs("alice", "get"), attrs("alice", "list"));
    access.insert(&get, sar(r#"{"allowed":true}"#), t0());
    access.insert(&list, sar(r#"{"allowed":false,"denied":true}"#), t0());
    assert!(access.get(&get, later).is_none());
    assert!(access.was_allowed(&get));
    assert!(!access.was_allowed(&list));
    assert!(!access.was_allowed(&attrs("bob", "get")));
    assert!(!access.was_allowed(&attrs("alice", "delete")));
    access.purge_expired(later);
    assert!(!access.was_allowed(&get));
}
