//! Decision caches: TokenReview outcomes by a hash of the token and its audiences, and access
//! review outcomes by the request's attributes. Bounded in entries and in bytes, with separate
//! lifetimes for allows and denials; the clock is a parameter.
//!
//! Only decisions are kept: a backend failure never reaches a cache (the readers return it as
//! an error), and an outcome that is a failure to decide (a TokenReview `status.error`, an
//! access review's `evaluationError` without an allow) is refused by [`TokenCache::insert`]
//! and [`AccessCache::insert`].
//!
//! A hit takes a shared reference and allocates nothing, so a caller may keep a cache behind a
//! read-write lock. Two requests that miss on the same key at once should send one review:
//! [`TokenCacheKey`] and [`AccessKey`] are what a single-flight map keys on.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher};
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

use sha2::{Digest as _, Sha256};

use crate::access_review::{AccessReviewOutcome, Decision};
use crate::attributes::{Attributes, Target};
use crate::request_info::RequestInfo;
use crate::token::BearerTokenRef;
use crate::token_review::TokenReviewOutcome;
use crate::user::UserInfo;

/// How long an authentication is kept by default: `k8s.io/apiserver`'s
/// `DelegatingAuthenticationOptions.CacheTTL` (10 s), which it uses for both authenticated and
/// unauthenticated tokens.
pub const DEFAULT_TOKEN_CACHE_TTL: Duration = Duration::from_secs(10);
/// How long an allow is kept by default: `DelegatingAuthorizationOptions.AllowCacheTTL`.
pub const DEFAULT_ALLOW_CACHE_TTL: Duration = Duration::from_secs(10);
/// How long a denial (or no opinion) is kept by default:
/// `DelegatingAuthorizationOptions.DenyCacheTTL`.
pub const DEFAULT_DENY_CACHE_TTL: Duration = Duration::from_secs(10);
/// The most entries a cache keeps by default.
pub const DEFAULT_CACHE_ENTRIES: usize = 16 * 1024;
/// The most bytes (keys, values and their bookkeeping, estimated) a cache keeps by default.
pub const DEFAULT_CACHE_BYTES: usize = 32 * 1024 * 1024;

/// A cache's bounds and lifetimes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheConfig {
    /// The most entries kept; the oldest go first.
    pub max_entries: usize,
    /// The most bytes kept (estimated from the entries' contents); the oldest go first.
    pub max_bytes: usize,
    /// How long a positive decision (authenticated, allowed) is kept. Zero keeps none.
    pub allow_ttl: Duration,
    /// How long a negative decision (not authenticated, denied, no opinion) is kept. Zero
    /// keeps none.
    pub deny_ttl: Duration,
}

impl Default for CacheConfig {
    /// `k8s.io/apiserver`'s delegating defaults (10 s for both, for authentication and for
    /// authorization), [`DEFAULT_CACHE_ENTRIES`] and [`DEFAULT_CACHE_BYTES`].
    fn default() -> CacheConfig {
        CacheConfig {
            max_entries: DEFAULT_CACHE_ENTRIES,
            max_bytes: DEFAULT_CACHE_BYTES,
            allow_ttl: DEFAULT_ALLOW_CACHE_TTL,
            deny_ttl: DEFAULT_DENY_CACHE_TTL,
        }
    }
}

impl CacheConfig {
    /// The same, keeping at most `max_entries`.
    #[must_use]
    pub fn with_max_entries(mut self, max_entries: usize) -> CacheConfig {
        self.max_entries = max_entries;
        self
    }

    /// The same, keeping at most `max_bytes`.
    #[must_use]
    pub fn with_max_bytes(mut self, max_bytes: usize) -> CacheConfig {
        self.max_bytes = max_bytes;
        self
    }

    /// The same, keeping positive decisions for `ttl`.
    #[must_use]
    pub fn with_allow_ttl(mut self, ttl: Duration) -> CacheConfig {
        self.allow_ttl = ttl;
        self
    }

    /// The same, keeping negative decisions for `ttl`.
    #[must_use]
    pub fn with_deny_ttl(mut self, ttl: Duration) -> CacheConfig {
        self.deny_ttl = ttl;
        self
    }
}

/// The key a TokenReview outcome is kept under: SHA-256 over the token and the audiences
/// (each length-prefixed, so no two inputs share an encoding), never the token itself.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct TokenCacheKey([u8; 32]);

impl TokenCacheKey {
    /// The key of `token` (a [`BearerToken`](crate::BearerToken) or a [`BearerTokenRef`]) reviewed for
    /// `audiences` (in that order).
    #[must_use]
    pub fn new<'a>(token: impl Into<BearerTokenRef<'a>>, audiences: &[String]) -> TokenCacheKey {
        let mut h = Sha256::new();
        let token = token.into().expose_secret().as_bytes();
        h.update((token.len() as u64).to_be_bytes());
        h.update(token);
        h.update((audiences.len() as u64).to_be_bytes());
        for a in audiences {
            h.update((a.len() as u64).to_be_bytes());
            h.update(a.as_bytes());
        }
        TokenCacheKey(h.finalize().into())
    }
}

impl Hash for TokenCacheKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // The key is already a uniform hash an attacker cannot steer: eight bytes of it will do.
        let [a, b, c, d, e, f, g, h, ..] = self.0;
        state.write_u64(u64::from_le_bytes([a, b, c, d, e, f, g, h]));
    }
}

impl core::fmt::Debug for TokenCacheKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // A prefix of the hash: enough to tell keys apart in a log, too little to look one up.
        let [a, b, c, d, ..] = self.0;
        write!(f, "TokenCacheKey({a:02x}{b:02x}{c:02x}{d:02x}..)")
    }
}

/// A cached TokenReview outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CachedToken {
    /// Authenticated: the user (shared, so handing it to a request is a reference count) and
    /// the audiences the token was found valid for.
    Authenticated {
        /// Who the token belongs to.
        user: Arc<UserInfo>,
        /// The audiences asked for that the token is valid for.
        audiences: Arc<[String]>,
    },
    /// Not authenticated.
    Unauthenticated,
}

/// TokenReview outcomes, by [`TokenCacheKey`].
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use delegated_auth::{BearerToken, CacheConfig, CachedToken, TokenCache, TokenReview};
/// let mut cache = TokenCache::new(CacheConfig::default());
/// let review = TokenReview::new(BearerToken::new("a-token".to_owned())?);
/// let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
/// let outcome = review.read_answer(201, br#"{"status":{"authenticated":true,"user":{"username":"alice"}}}"#)?;
/// assert!(cache.insert(review.cache_key(), outcome, now));
/// assert!(matches!(cache.get(&review.cache_key(), now), Some(CachedToken::Authenticated { .. })));
/// assert!(cache.get(&review.cache_key(), now + Duration::from_secs(10)).is_none());
/// # Ok::<(), delegated_auth::Error>(())
/// ```
#[derive(Debug)]
pub struct TokenCache {
    store: Store<TokenCacheKey, CachedToken, BuildHasherDefault<PassThrough>>,
}

impl TokenCache {
    /// An empty cache. [`CacheConfig::default`] has `k8s.io/apiserver`'s lifetimes.
    #[must_use]
    pub fn new(config: CacheConfig) -> TokenCache {
        TokenCache {
            store: Store::new(config, BuildHasherDefault::default()),
        }
    }

    /// The outcome kept for `key`, if any and still fresh at `now`.
    #[must_use]
    pub fn get(&self, key: &TokenCacheKey, now: SystemTime) -> Option<&CachedToken> {
        self.store.get(key, now).map(|(_, v)| v)
    }

    /// Whether `key` was authenticated the last time it was reviewed: an authentication kept
    /// for it, fresh or expired (an expired entry stays until the bounds evict it or
    /// [`TokenCache::purge_expired`] drops it). A layer can renew such a token's review ahead
    /// of tokens it has never seen.
    #[must_use]
    pub fn was_authenticated(&self, key: &TokenCacheKey) -> bool {
        matches!(
            self.store.map.get(key).map(|s| &s.value),
            Some(CachedToken::Authenticated { .. })
        )
    }

    /// Keeps `outcome` for `key` from `now`: an authentication for the allow TTL, a refusal
    /// for the deny TTL. Returns whether it was kept: not when the outcome is not
    /// [cacheable](TokenReviewOutcome::is_cacheable), its TTL is zero, or it alone is larger
    /// than the byte bound. Older entries make room for it.
    pub fn insert(
        &mut self,
        key: TokenCacheKey,
        outcome: TokenReviewOutcome,
        now: SystemTime,
    ) -> bool {
        if !outcome.is_cacheable() {
            self.store.remove(&key);
            return false;
        }
        let (value, ttl, cost) = match outcome {
            TokenReviewOutcome::Authenticated { user, audiences } => {
                let cost = user_bytes(&user).saturating_add(strings_bytes(&audiences));
                (
                    CachedToken::Authenticated {
                        user: Arc::new(user),
                        audiences: audiences.into(),
                    },
                    self.store.config.allow_ttl,
                    cost,
                )
            }
            TokenReviewOutcome::Unauthenticated { .. } => {
                (CachedToken::Unauthenticated, self.store.config.deny_ttl, 0)
            }
        };
        self.store.insert(key, value, cost, ttl, now)
    }

    /// Forgets `key`.
    pub fn remove(&mut self, key: &TokenCacheKey) {
        self.store.remove(key);
    }

    /// Drops every entry expired at `now`.
    pub fn purge_expired(&mut self, now: SystemTime) {
        self.store.purge_expired(now);
    }

    /// How many entries are kept (fresh or not yet purged).
    #[must_use]
    pub fn len(&self) -> usize {
        self.store.map.len()
    }

    /// Whether none is kept.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.store.map.is_empty()
    }

    /// The estimated bytes kept.
    #[must_use]
    pub fn bytes(&self) -> usize {
        self.store.bytes
    }
}

/// The key a single-flight map dedupes access reviews on: SHA-256 over every attribute (the
/// user, UID, groups, extra, verb and target with its field and label selectors, each
/// length-prefixed). Computed only on a miss;
/// [`AccessCache`] looks up by the attributes themselves.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct AccessKey([u8; 32]);

impl AccessKey {
    /// The key of `attributes`.
    #[must_use]
    pub fn new(attributes: &Attributes) -> AccessKey {
        let mut h = Sha256::new();
        encode(&View::of(attributes), &mut h);
        AccessKey(h.finalize().into())
    }
}

impl core::fmt::Debug for AccessKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let [a, b, c, d, ..] = self.0;
        write!(f, "AccessKey({a:02x}{b:02x}{c:02x}{d:02x}..)")
    }
}

/// Access review outcomes, by the request's [`Attributes`] (compared in full on a hit: a
/// keyed 64-bit hash finds the entry, equality confirms it).
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use delegated_auth::{AccessCache, AccessReviewKind, Attributes, CacheConfig, UserInfo, read_access_review};
/// let mut cache = AccessCache::new(CacheConfig::default());
/// let attrs = Attributes::non_resource(UserInfo::new("alice"), "get", "/metrics");
/// let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
/// let outcome = read_access_review(AccessReviewKind::Subject, 201, br#"{"status":{"allowed":true}}"#)?;
/// assert!(cache.insert(&attrs, outcome, now));
/// assert!(cache.get(&attrs, now).is_some_and(|o| o.is_allowed()));
/// # Ok::<(), delegated_auth::Error>(())
/// ```
#[derive(Debug)]
pub struct AccessCache {
    store: Store<u64, (Attributes, AccessReviewOutcome), BuildHasherDefault<PassThrough>>,
    /// Keyed per cache from a process-wide random seed (foldhash): an attacker who cannot read
    /// it cannot aim requests at one bucket, and two attribute sets that share a hash only
    /// evict each other (a hit is confirmed by equality).
    hasher: foldhash::fast::RandomState,
    /// The hash of each user the kept entries hold, by the user's allocation: a request whose
    /// user is one of them (the layer hands every request with one token the token cache's
    /// `Arc`) is keyed without hashing its name, groups and extra again. Each holds a `Weak`,
    /// so the allocation is never freed, and its address never reused by another user, while
    /// it is here; a user shared this way cannot change (`Arc::get_mut` needs no other `Weak`).
    /// Pruned of users no entry holds when it outgrows twice the entries.
    /// (Addresses are not hashes: aligned and alike in their high bits, they are hashed.)
    users: HashMap<usize, (Weak<UserInfo>, u64), foldhash::fast::RandomState>,
}

impl AccessCache {
    /// An empty cache. [`CacheConfig::default`] has `k8s.io/apiserver`'s lifetimes.
    #[must_use]
    pub fn new(config: CacheConfig) -> AccessCache {
        AccessCache {
            store: Store::new(config, BuildHasherDefault::default()),
            hasher: foldhash::fast::RandomState::default(),
            users: HashMap::default(),
        }
    }

    /// The outcome kept for `attributes`, if any and still fresh at `now`.
    #[must_use]
    pub fn get(&self, attributes: &Attributes, now: SystemTime) -> Option<&AccessReviewOutcome> {
        self.get_view(&View::of(attributes), now)
    }

    /// The outcome kept for the attributes `request` has for `user`, if any and still fresh at
    /// `now`: what [`AccessCache::get`] answers for `request.to_attributes(user)`, without
    /// copying a string of the request (a hit on a request's path allocates nothing).
    #[must_use]
    pub fn get_request(
        &self,
        user: &Arc<UserInfo>,
        request: &RequestInfo<'_>,
        now: SystemTime,
    ) -> Option<&AccessReviewOutcome> {
        self.get_view(&View::of_request(user, request), now)
    }

    /// Whether `attributes` were allowed the last time they were reviewed: an allow kept for
    /// them, fresh or expired (an expired entry stays until the bounds evict it or
    /// [`AccessCache::purge_expired`] drops it).
    #[must_use]
    pub fn was_allowed(&self, attributes: &Attributes) -> bool {
        let view = View::of(attributes);
        let key = self.key(&view, self.user_hash(view.user));
        matches!(
            self.store.map.get(&key),
            Some(slot) if View::of(&slot.value.0) == view && slot.value.1.is_allowed()
        )
    }

    fn get_view(&self, view: &View<'_>, now: SystemTime) -> Option<&AccessReviewOutcome> {
        let key = self.key(view, self.user_hash(view.user));
        match self.store.get(&key, now) {
            Some((_, (kept, outcome))) if View::of(kept) == *view => Some(outcome),
            _ => None,
        }
    }

    /// Keeps `outcome` for `attributes` from `now`: an allow for the allow TTL, a denial or
    /// no opinion for the deny TTL. Returns whether it was kept: not when the outcome is not
    /// [cacheable](AccessReviewOutcome::is_cacheable) (an `evaluationError` without an allow),
    /// its TTL is zero, or it alone is larger than the byte bound.
    pub fn insert(
        &mut self,
        attributes: &Attributes,
        outcome: AccessReviewOutcome,
        now: SystemTime,
    ) -> bool {
        let user_hash = self.user_hash(&attributes.user);
        let key = self.key(&View::of(attributes), user_hash);
        if !outcome.is_cacheable() {
            // Only forget what was kept for these very attributes.
            if self.get(attributes, SystemTime::UNIX_EPOCH).is_some() {
                self.store.remove(&key);
            }
            return false;
        }
        let ttl = if outcome.decision == Decision::Allow {
            self.store.config.allow_ttl
        } else {
            self.store.config.deny_ttl
        };
        let cost = attributes_bytes(attributes)
            .saturating_add(outcome.reason.len())
            .saturating_add(outcome.evaluation_error.as_ref().map_or(0, String::len));
        let kept = self
            .store
            .insert(key, (attributes.clone(), outcome), cost, ttl, now);
        if kept {
            self.remember(&attributes.user, user_hash);
        }
        kept
    }

    /// Remembers `user`'s hash for the requests that share its allocation, first dropping the
    /// users no entry (nor anyone else) holds any more once there are more than twice as many
    /// remembered as entries.
    fn remember(&mut self, user: &Arc<UserInfo>, hash: u64) {
        if self.users.len() >= self.store.map.len().saturating_mul(2).max(64) {
            self.users.retain(|_, (weak, _)| weak.strong_count() > 0);
        }
        self.users
            .entry(Arc::as_ptr(user) as usize)
            .or_insert_with(|| (Arc::downgrade(user), hash));
    }

    /// Drops every entry expired at `now`.
    pub fn purge_expired(&mut self, now: SystemTime) {
        self.store.purge_expired(now);
        self.users.retain(|_, (weak, _)| weak.strong_count() > 0);
    }

    /// How many entries are kept (fresh or not yet purged).
    #[must_use]
    pub fn len(&self) -> usize {
        self.store.map.len()
    }

    /// Whether none is kept.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.store.map.is_empty()
    }

    /// The estimated bytes kept.
    #[must_use]
    pub fn bytes(&self) -> usize {
        self.store.bytes
    }

    /// The hash of `user`: remembered for its allocation, else computed.
    fn user_hash(&self, user: &Arc<UserInfo>) -> u64 {
        if let Some((_, hash)) = self.users.get(&(Arc::as_ptr(user) as usize)) {
            // Remembered with a `Weak` to this very allocation: the same user.
            return *hash;
        }
        let mut h = self.hasher.build_hasher();
        encode_user(user, &mut h);
        h.finish()
    }

    fn key(&self, view: &View<'_>, user_hash: u64) -> u64 {
        let mut h = self.hasher.build_hasher();
        h.write_u64(user_hash);
        encode_request(view, &mut h);
        h.finish()
    }
}

/// Attributes as the access cache reads them, borrowed from kept [`Attributes`] or from a
/// request's [`RequestInfo`]: a request is looked up without copying its strings.
#[derive(Debug)]
struct View<'a> {
    user: &'a Arc<UserInfo>,
    verb: &'a str,
    target: ViewTarget<'a>,
}

#[derive(Debug)]
enum ViewTarget<'a> {
    /// Namespace, group, version, resource, subresource, name, field selector, label selector.
    Resource([&'a str; 8]),
    NonResource(&'a str),
}

impl<'a> View<'a> {
    fn of(a: &'a Attributes) -> View<'a> {
        let target = match &a.target {
            Target::Resource(r) => ViewTarget::Resource([
                &r.namespace,
                &r.api_group,
                &r.api_version,
                &r.resource,
                &r.subresource,
                &r.name,
                &r.field_selector,
                &r.label_selector,
            ]),
            Target::NonResource { path } => ViewTarget::NonResource(path),
        };
        View {
            user: &a.user,
            verb: &a.verb,
            target,
        }
    }

    /// The view of `request.to_attributes(user)`, field for field (see
    /// `RequestInfo::into_attributes`).
    fn of_request(user: &'a Arc<UserInfo>, r: &'a RequestInfo<'_>) -> View<'a> {
        let target = if r.is_resource_request {
            ViewTarget::Resource([
                r.namespace,
                r.api_group,
                r.api_version,
                r.resource,
                r.subresource,
                &r.name,
                &r.field_selector,
                &r.label_selector,
            ])
        } else {
            ViewTarget::NonResource(r.path)
        };
        View {
            user,
            verb: &r.verb,
            target,
        }
    }
}

impl PartialEq for View<'_> {
    fn eq(&self, other: &Self) -> bool {
        // The same user is usually the same allocation (the token cache's): no need to walk
        // its groups and extra then.
        (Arc::ptr_eq(self.user, other.user) || self.user == other.user)
            && same(self.verb, other.verb)
            && match (&self.target, &other.target) {
                (ViewTarget::Resource(a), ViewTarget::Resource(b)) => {
                    a.iter().zip(b).all(|(a, b)| same(a, b))
                }
                (ViewTarget::NonResource(a), ViewTarget::NonResource(b)) => same(a, b),
                _ => false,
            }
    }
}

/// Whether `a` and `b` are equal: the short strings attributes are made of (a verb, a group,
/// a name) by a few word compares, without a call; longer ones as `==` compares them.
#[inline]
fn same(a: &str, b: &str) -> bool {
    /// The `N` bytes of `s` from `at`, if it holds them.
    fn word<const N: usize>(s: &[u8], at: usize) -> Option<[u8; N]> {
        s.get(at..at.checked_add(N)?)?.try_into().ok()
    }
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len();
    if n != b.len() {
        return false;
    }
    match n {
        0 => true,
        // First, middle and last bytes cover every byte of a string this short.
        1..=3 => a.first() == b.first() && a.get(n / 2) == b.get(n / 2) && a.last() == b.last(),
        // The first and last words overlap and cover it all.
        4..=7 => {
            let end = n.wrapping_sub(4);
            word::<4>(a, 0) == word::<4>(b, 0) && word::<4>(a, end) == word::<4>(b, end)
        }
        8..=16 => {
            let end = n.wrapping_sub(8);
            word::<8>(a, 0) == word::<8>(b, 0) && word::<8>(a, end) == word::<8>(b, end)
        }
        _ => a == b,
    }
}

/// Where [`encode`] writes: a digest takes counts as bytes, a hasher as one word (a single
/// multiply in foldhash, where bytes take a call each).
trait Sink {
    fn bytes(&mut self, b: &[u8]);
    fn count(&mut self, n: usize);
    /// One string, length-prefixed.
    #[inline]
    fn field(&mut self, s: &str) {
        self.count(s.len());
        self.bytes(s.as_bytes());
    }
}

impl Sink for Sha256 {
    fn bytes(&mut self, b: &[u8]) {
        self.update(b);
    }
    fn count(&mut self, n: usize) {
        self.update((n as u64).to_le_bytes());
    }
}

impl Sink for foldhash::fast::FoldHasher<'_> {
    fn bytes(&mut self, b: &[u8]) {
        self.write(b);
    }
    fn count(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    /// The string alone: foldhash folds the length of what it is given in already, and a key
    /// only needs to tell attributes apart most of the time (a hit is compared in full).
    #[inline]
    fn field(&mut self, s: &str) {
        self.write(s.as_bytes());
    }
}

/// Feeds every attribute, length-prefixed, to `out`: the user, then the request.
fn encode(a: &View<'_>, out: &mut impl Sink) {
    encode_user(a.user, out);
    encode_request(a, out);
}

/// Feeds the user's name, UID, groups and extra, length-prefixed, to `out`.
fn encode_user(u: &UserInfo, out: &mut impl Sink) {
    out.field(&u.name);
    match &u.uid {
        Some(uid) => {
            out.count(1);
            out.field(uid);
        }
        None => out.count(0),
    }
    out.count(u.groups.len());
    for g in &u.groups {
        out.field(g);
    }
    out.count(u.extra.len());
    for (k, vs) in &u.extra {
        out.field(k);
        out.count(vs.len());
        for v in vs {
            out.field(v);
        }
    }
}

/// Feeds the verb and what the request is about, length-prefixed, to `out`.
fn encode_request(a: &View<'_>, out: &mut impl Sink) {
    out.field(a.verb);
    match &a.target {
        ViewTarget::Resource(fields) => {
            out.count(1);
            for s in fields {
                out.field(s);
            }
        }
        ViewTarget::NonResource(path) => {
            out.count(2);
            out.field(path);
        }
    }
}

const SLOT_OVERHEAD: usize = 96;

fn strings_bytes(strings: &[String]) -> usize {
    strings.iter().fold(0usize, |n, s| {
        n.saturating_add(s.len())
            .saturating_add(core::mem::size_of::<String>())
    })
}

fn user_bytes(u: &UserInfo) -> usize {
    let extra = u.extra.iter().fold(0usize, |n, (k, vs)| {
        n.saturating_add(k.len())
            .saturating_add(strings_bytes(vs))
            .saturating_add(64)
    });
    u.name
        .len()
        .saturating_add(u.uid.as_ref().map_or(0, String::len))
        .saturating_add(strings_bytes(&u.groups))
        .saturating_add(extra)
        .saturating_add(core::mem::size_of::<UserInfo>())
}

fn attributes_bytes(a: &Attributes) -> usize {
    let target = match View::of(a).target {
        ViewTarget::Resource(fields) => {
            fields.iter().fold(0usize, |n, s| n.saturating_add(s.len()))
        }
        ViewTarget::NonResource(path) => path.len(),
    };
    user_bytes(&a.user)
        .saturating_add(a.verb.len())
        .saturating_add(target)
        .saturating_add(core::mem::size_of::<Attributes>())
}

/// A hasher for keys that are already hashes: it keeps the last `u64` written.
#[derive(Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// The bounded store under both caches: a map, and the insertion order for eviction.
#[derive(Debug)]
struct Store<K, V, S> {
    config: CacheConfig,
    map: HashMap<K, Slot<V>, S>,
    order: VecDeque<(K, u64)>,
    next_seq: u64,
    bytes: usize,
}

#[derive(Debug)]
struct Slot<V> {
    value: V,
    expires: SystemTime,
    seq: u64,
    cost: usize,
}

impl<K: Copy + Eq + Hash, V, S: BuildHasher> Store<K, V, S> {
    fn new(config: CacheConfig, hasher: S) -> Self {
        Store {
            config,
            map: HashMap::with_hasher(hasher),
            order: VecDeque::new(),
            next_seq: 0,
            bytes: 0,
        }
    }

    fn get(&self, key: &K, now: SystemTime) -> Option<(SystemTime, &V)> {
        let slot = self.map.get(key)?;
        (now < slot.expires).then_some((slot.expires, &slot.value))
    }

    fn insert(&mut self, key: K, value: V, cost: usize, ttl: Duration, now: SystemTime) -> bool {
        self.remove(&key);
        let cost = cost.saturating_add(SLOT_OVERHEAD);
        if ttl.is_zero() || self.config.max_entries == 0 || cost > self.config.max_bytes {
            return false;
        }
        let Some(expires) = now.checked_add(ttl) else {
            return false;
        };
        while self.map.len() >= self.config.max_entries
            || self.bytes.saturating_add(cost) > self.config.max_bytes
        {
            let Some((old, seq)) = self.order.pop_front() else {
                break;
            };
            if self.map.get(&old).is_some_and(|s| s.seq == seq) {
                self.remove(&old);
            }
        }
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1);
        self.map.insert(
            key,
            Slot {
                value,
                expires,
                seq,
                cost,
            },
        );
        self.bytes = self.bytes.saturating_add(cost);
        self.order.push_back((key, seq));
        // Keys removed or replaced leave stale places in the order: compact it now and then,
        // so it stays within twice the map.
        if self.order.len() > self.map.len().saturating_mul(2).saturating_add(64) {
            let map = &self.map;
            self.order
                .retain(|(k, seq)| map.get(k).is_some_and(|s| s.seq == *seq));
        }
        true
    }

    fn remove(&mut self, key: &K) {
        if let Some(slot) = self.map.remove(key) {
            self.bytes = self.bytes.saturating_sub(slot.cost);
        }
    }

    fn purge_expired(&mut self, now: SystemTime) {
        let mut freed = 0usize;
        self.map.retain(|_, s| {
            let keep = now < s.expires;
            if !keep {
                freed = freed.saturating_add(s.cost);
            }
            keep
        });
        self.bytes = self.bytes.saturating_sub(freed);
        let map = &self.map;
        self.order
            .retain(|(k, seq)| map.get(k).is_some_and(|s| s.seq == *seq));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, SystemTime};

    use super::{AccessCache, CacheConfig, same};

    /// `same` answers as `==` for every pair of strings of up to 20 bytes that differ in one
    /// byte at any position, and for equal ones, across its word-size boundaries.
    #[test]
    fn same_agrees_with_eq() {
        for n in 0..=20 {
            let a: String = (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
            assert!(same(&a, &a.clone()), "{a:?}");
            for at in 0..n {
                let mut b = a.clone().into_bytes();
                b[at] = b'Z';
                let b = String::from_utf8(b).unwrap();
                assert_eq!(same(&a, &b), a == b, "{a:?} {b:?}");
                assert!(!same(&a, &b), "{a:?} {b:?}");
            }
            let longer = format!("{a}x");
            assert!(!same(&a, &longer));
            assert!(!same(&longer, &a));
        }
    }
    use crate::{AccessReviewKind, Attributes, UserInfo, read_access_review};

    fn user(name: &str) -> UserInfo {
        UserInfo::new(name)
            .with_groups(["system:authenticated"])
            .with_extra("authentication.kubernetes.io/pod-name", ["web-0"])
    }

    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH
            .checked_add(Duration::from_secs(1_800_000_000))
            .unwrap()
    }

    fn allowed() -> crate::AccessReviewOutcome {
        read_access_review(
            AccessReviewKind::Subject,
            201,
            br#"{"status":{"allowed":true}}"#,
        )
        .unwrap()
    }

    /// A kept user's own allocation and an equal user of its own find the same entry; a user
    /// that differs in its extra alone does not.
    #[test]
    fn a_remembered_user_and_an_equal_one_find_the_same_entry() {
        let mut cache = AccessCache::new(CacheConfig::default());
        let kept = Arc::new(user("alice"));
        assert!(cache.insert(
            &Attributes::non_resource(Arc::clone(&kept), "get", "/metrics"),
            allowed(),
            now()
        ));
        assert_eq!(cache.users.len(), 1);
        for who in [Arc::clone(&kept), Arc::new(user("alice"))] {
            let a = Attributes::non_resource(who, "get", "/metrics");
            assert!(cache.get(&a, now()).is_some_and(|o| o.is_allowed()));
        }
        let other_pod = UserInfo::new("alice")
            .with_groups(["system:authenticated"])
            .with_extra("authentication.kubernetes.io/pod-name", ["web-1"]);
        let a = Attributes::non_resource(other_pod, "get", "/metrics");
        assert!(cache.get(&a, now()).is_none());
    }

    /// The remembered users stay within twice the entries (or 64), and purging forgets those
    /// no entry holds.
    #[test]
    fn remembered_users_are_bounded_by_the_entries() {
        let mut cache = AccessCache::new(CacheConfig::default().with_max_entries(10));
        for i in 0..1000 {
            let a = Attributes::non_resource(user(&format!("user-{i}")), "get", "/metrics");
            assert!(cache.insert(&a, allowed(), now()));
            assert!(cache.users.len() <= 65, "{}", cache.users.len());
        }
        cache.purge_expired(now().checked_add(Duration::from_secs(3600)).unwrap());
        assert_eq!(cache.len(), 0);
        assert!(cache.users.is_empty());
    }
}
