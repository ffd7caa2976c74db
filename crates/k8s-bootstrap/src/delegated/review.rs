//! Reviews through the API server: the decision caches first, then one TokenReview or
//! SubjectAccessReview per key in flight, under a bound on concurrent reviews and a timeout.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, SystemTime};

use delegated_auth::{
    AccessCache, AccessKey, AccessReviewKind, AccessReviewOutcome, Attributes, BearerTokenRef,
    CacheConfig, CachedToken, MAX_ACCESS_REVIEW_BYTES, MAX_TOKEN_REVIEW_BYTES, RequestInfo,
    TokenCache, TokenCacheKey, TokenReview, TokenReviewOutcome, UserInfo, access_review_json,
    read_access_review,
};
use http_body_util::BodyExt as _;
use tokio::sync::{OnceCell, Semaphore};

use super::authn::with_authenticated_group;
use super::metrics::{Counter, Metrics};
use super::rate_limit::{ReviewRateLimit, TokenBucket};

const TOKEN_REVIEWS: &str = "/apis/authentication.k8s.io/v1/tokenreviews";
const ACCESS_REVIEWS: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

/// Who a token belongs to.
#[derive(Debug, Clone)]
pub(super) enum Identity {
    User(Arc<UserInfo>),
    Unauthenticated,
}

/// Which review failed: the API server could not decide, or the review was not sent because
/// the rate limit was exhausted (retry after that many seconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Failure {
    TokenReview,
    AccessReview,
    Throttled { retry_after: u32 },
}

type TokenResult = Result<Identity, Failure>;
type AccessResult = Result<Arc<AccessReviewOutcome>, Failure>;

/// The caches, the flights in progress and the client that sends the reviews.
pub(super) struct Reviewer {
    client: kube::Client,
    audiences: Vec<String>,
    tokens: RwLock<TokenCache>,
    access: RwLock<AccessCache>,
    token_flights: Flights<TokenCacheKey, TokenResult>,
    access_flights: Flights<AccessKey, AccessResult>,
    slots: Semaphore,
    /// The rate limit's two buckets: reviews of what the caches never held allowed, and
    /// renewals of what they did (see [`Lane`]).
    buckets: Option<[Mutex<TokenBucket>; 2]>,
    timeout: Duration,
    clock: fn() -> SystemTime,
    metrics: Arc<Metrics>,
}

/// How a [`Reviewer`] is built.
#[derive(Debug, Clone)]
pub(super) struct ReviewerConfig {
    pub(super) audiences: Vec<String>,
    pub(super) token_cache: CacheConfig,
    pub(super) access_cache: CacheConfig,
    pub(super) max_concurrent_reviews: usize,
    pub(super) rate_limit: Option<ReviewRateLimit>,
    pub(super) timeout: Duration,
    pub(super) clock: fn() -> SystemTime,
}

impl Reviewer {
    pub(super) fn new(
        client: kube::Client,
        config: &ReviewerConfig,
        metrics: Arc<Metrics>,
    ) -> Reviewer {
        Reviewer {
            client,
            audiences: config.audiences.clone(),
            tokens: RwLock::new(TokenCache::new(config.token_cache)),
            access: RwLock::new(AccessCache::new(config.access_cache)),
            token_flights: Flights::default(),
            access_flights: Flights::default(),
            slots: Semaphore::new(
                config
                    .max_concurrent_reviews
                    .clamp(1, Semaphore::MAX_PERMITS),
            ),
            buckets: config.rate_limit.map(|l| {
                [
                    Mutex::new(TokenBucket::new(l)),
                    Mutex::new(TokenBucket::new(l)),
                ]
            }),
            timeout: config.timeout,
            clock: config.clock,
            metrics,
        }
    }

    pub(super) fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    pub(super) fn now(&self) -> SystemTime {
        (self.clock)()
    }

    /// Who `token` belongs to: from the cache, or from a TokenReview (one per token and
    /// audiences in flight, whoever else asks meanwhile waits for its answer).
    pub(super) async fn authenticate(&self, token: BearerTokenRef<'_>) -> TokenResult {
        let key = TokenCacheKey::new(token, &self.audiences);
        if let Some(hit) = self.cached_identity(&key) {
            self.metrics.inc(Counter::TokenCacheHit);
            return Ok(hit);
        }
        let flight = self.token_flights.join(key);
        let mut sent = false;
        let result = flight
            .cell
            .get_or_init(|| {
                sent = true;
                self.review_token(token, key)
            })
            .await
            .clone();
        if !sent {
            self.metrics.inc(Counter::Coalesced);
        }
        result
    }

    /// The user the token cache holds for `token`, if it holds one (fresh and authenticated);
    /// counts nothing.
    pub(super) fn cached_user(&self, token: BearerTokenRef<'_>) -> Option<Arc<UserInfo>> {
        match self.cached_identity(&TokenCacheKey::new(token, &self.audiences))? {
            Identity::User(user) => Some(user),
            Identity::Unauthenticated => None,
        }
    }

    /// Whether the access cache holds an allow for what `request` asks for `user`: the hit
    /// path, without building the attributes or copying the kept outcome. A denial or a miss
    /// goes through [`Reviewer::authorize`], which answers with the reason.
    pub(super) fn cached_allow(&self, user: &Arc<UserInfo>, request: &RequestInfo<'_>) -> bool {
        let allowed = read(&self.access)
            .get_request(user, request, self.now())
            .is_some_and(AccessReviewOutcome::is_allowed);
        if allowed {
            self.metrics.inc(Counter::AccessCacheHit);
        }
        allowed
    }

    /// The decision for `attributes`: from the cache, or from a SubjectAccessReview (one per
    /// attributes in flight).
    pub(super) async fn authorize(&self, attributes: &Attributes) -> AccessResult {
        let now = self.now();
        if let Some(hit) = read(&self.access).get(attributes, now) {
            self.metrics.inc(Counter::AccessCacheHit);
            return Ok(Arc::new(hit.clone()));
        }
        let key = AccessKey::new(attributes);
        let flight = self.access_flights.join(key);
        let mut sent = false;
        let result = flight
            .cell
            .get_or_init(|| {
                sent = true;
                self.review_access(attributes)
            })
            .await
            .clone();
        if !sent {
            self.metrics.inc(Counter::Coalesced);
        }
        result
    }

    fn cached_identity(&self, key: &TokenCacheKey) -> Option<Identity> {
        match read(&self.tokens).get(key, self.now())? {
            CachedToken::Authenticated { user, .. } => Some(Identity::User(Arc::clone(user))),
            _ => Some(Identity::Unauthenticated),
        }
    }

    async fn review_token(&self, token: BearerTokenRef<'_>, key: TokenCacheKey) -> TokenResult {
        // The flight before this one may have filled the cache since this request missed it.
        if let Some(hit) = self.cached_identity(&key) {
            self.metrics.inc(Counter::TokenCacheHit);
            return Ok(hit);
        }
        let lane = Lane::of(read(&self.tokens).was_authenticated(&key));
        self.take_rate(lane)?;
        let review = TokenReview::new(token.to_bearer_token())
            .with_audiences(self.audiences.iter().cloned());
        let mut body = review.to_json();
        let answer = self
            .post(
                TOKEN_REVIEWS,
                std::mem::take(&mut *body),
                MAX_TOKEN_REVIEW_BYTES,
            )
            .await
            .ok_or(Failure::TokenReview)?;
        self.metrics.inc(Counter::TokenReview);
        let mut outcome = review.read_answer(answer.0, &answer.1).map_err(|error| {
            // The reader's errors never hold the token.
            tracing::warn!(%error, "delegated authentication: the TokenReview failed");
            Failure::TokenReview
        })?;
        if let TokenReviewOutcome::Authenticated { user, .. } = &mut outcome {
            *user = with_authenticated_group(std::mem::take(user));
        }
        let kept = write(&self.tokens).insert(key, outcome.clone(), self.now());
        // The user as the cache holds it, so that this request's SubjectAccessReview is kept
        // for the very user the next requests with the token get: their access cache hits
        // then compare the user by pointer.
        if kept && let Some(identity) = self.cached_identity(&key) {
            return Ok(identity);
        }
        Ok(match outcome {
            TokenReviewOutcome::Authenticated { user, .. } => Identity::User(Arc::new(user)),
            _ => Identity::Unauthenticated,
        })
    }

    async fn review_access(&self, attributes: &Attributes) -> AccessResult {
        if let Some(hit) = read(&self.access).get(attributes, self.now()) {
            self.metrics.inc(Counter::AccessCacheHit);
            return Ok(Arc::new(hit.clone()));
        }
        let lane = Lane::of(read(&self.access).was_allowed(attributes));
        self.take_rate(lane)?;
        let body = access_review_json(AccessReviewKind::Subject, attributes).map_err(|error| {
            tracing::warn!(%error, "delegated authorization: no SubjectAccessReview");
            Failure::AccessReview
        })?;
        let answer = self
            .post(ACCESS_REVIEWS, body, MAX_ACCESS_REVIEW_BYTES)
            .await
            .ok_or(Failure::AccessReview)?;
        self.metrics.inc(Counter::AccessReview);
        let outcome = read_access_review(AccessReviewKind::Subject, answer.0, &answer.1).map_err(
            |error| {
                tracing::warn!(%error, "delegated authorization: the SubjectAccessReview failed");
                Failure::AccessReview
            },
        )?;
        if !outcome.is_allowed()
            && let Some(error) = &outcome.evaluation_error
        {
            // A failure to decide: never a denial, never cached.
            tracing::warn!(
                evaluation_error = %error,
                "delegated authorization: the API server could not evaluate the SubjectAccessReview"
            );
            return Err(Failure::AccessReview);
        }
        write(&self.access).insert(attributes, outcome.clone(), self.now());
        Ok(Arc::new(outcome))
    }

    /// One review from `lane`'s bucket of the rate limit, if there is one.
    fn take_rate(&self, lane: Lane) -> Result<(), Failure> {
        let Some(buckets) = &self.buckets else {
            return Ok(());
        };
        let [new, renewal] = buckets;
        let bucket = match lane {
            Lane::New => new,
            Lane::Renewal => renewal,
        };
        let now = self.now();
        let mut bucket = bucket.lock().unwrap_or_else(PoisonError::into_inner);
        bucket
            .try_take(now)
            .map_err(|retry_after| Failure::Throttled { retry_after })
    }

    /// POSTs `body` to `path`, within a review slot and the timeout: the answer's status and
    /// body (at most `limit` bytes), or `None` (logged) when there is none.
    async fn post(&self, path: &str, body: Vec<u8>, limit: usize) -> Option<(u16, bytes::Bytes)> {
        let exchange = async {
            // The semaphore is never closed.
            let _slot = self.slots.acquire().await.ok()?;
            let request = http::Request::post(path)
                .header(http::header::CONTENT_TYPE, "application/json")
                .header(http::header::ACCEPT, "application/json")
                .body(kube::client::Body::from(body))
                .ok()?;
            let response = match self.client.send(request).await {
                Ok(response) => response,
                Err(error) => {
                    tracing::warn!(%error, path, "delegated auth: the API server is unreachable");
                    return None;
                }
            };
            let status = response.status().as_u16();
            match http_body_util::Limited::new(response.into_body(), limit)
                .collect()
                .await
            {
                Ok(collected) => Some((status, collected.to_bytes())),
                Err(error) => {
                    tracing::warn!(%error, path, status, "delegated auth: the answer could not be read");
                    None
                }
            }
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(answer) => answer,
            Err(_) => {
                tracing::warn!(path, timeout = ?self.timeout, "delegated auth: the API server did not answer in time");
                None
            }
        }
    }
}

/// Which of the rate limit's buckets a review is taken from. A flood of tokens never seen
/// before empties the first; the renewal of a token or an access the caches held allowed (its
/// entry expired, not yet evicted) takes from the second, so that the users already served
/// keep being served while the flood is throttled. Only a review that allowed fills the
/// caches with what makes a renewal, so the second bucket is spent only on credentials the
/// API server accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lane {
    New,
    Renewal,
}

impl Lane {
    fn of(known: bool) -> Lane {
        if known { Lane::Renewal } else { Lane::New }
    }
}

/// The reviews in flight, by key: the first request to miss starts one, the others wait for
/// its answer.
struct Flights<K, V> {
    map: Mutex<HashMap<K, Arc<OnceCell<V>>>>,
}

impl<K, V> Default for Flights<K, V> {
    fn default() -> Self {
        Flights {
            map: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash + Copy, V> Flights<K, V> {
    /// The flight for `key`, new or in progress; it is forgotten when the last request that
    /// joined it is done with it (answered or dropped), so the next miss starts a new one.
    fn join(&self, key: K) -> Flight<'_, K, V> {
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        let cell = Arc::clone(map.entry(key).or_default());
        Flight {
            flights: self,
            key,
            cell,
        }
    }
}

/// One request's share of a flight.
struct Flight<'a, K: Eq + Hash + Copy, V> {
    flights: &'a Flights<K, V>,
    key: K,
    cell: Arc<OnceCell<V>>,
}

impl<K: Eq + Hash + Copy, V> Drop for Flight<'_, K, V> {
    fn drop(&mut self) {
        let mut map = self
            .flights
            .map
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Only the flight this request joined, once it has landed or every request left it.
        if map
            .get(&self.key)
            .is_some_and(|f| Arc::ptr_eq(f, &self.cell))
            && (self.cell.initialized() || Arc::strong_count(&self.cell) <= 2)
        {
            map.remove(&self.key);
        }
    }
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}
