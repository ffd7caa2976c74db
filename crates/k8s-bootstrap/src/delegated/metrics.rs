//! The layer's counters: plain atomics, read with [`Metrics::snapshot`].

use std::sync::atomic::{AtomicU64, Ordering};

/// What a [`DelegatedAuthLayer`](super::DelegatedAuthLayer) counted since it was built, shared by
/// every service it made. Each counter is an atomic incremented on the request path; read them
/// with [`Metrics::snapshot`] (for example to export them to Prometheus).
#[derive(Debug, Default)]
pub struct Metrics {
    token_reviews: AtomicU64,
    access_reviews: AtomicU64,
    token_cache_hits: AtomicU64,
    access_cache_hits: AtomicU64,
    coalesced: AtomicU64,
    allowed: AtomicU64,
    unauthenticated: AtomicU64,
    denied: AtomicU64,
    errored: AtomicU64,
    throttled: AtomicU64,
}

/// The counters of [`Metrics`] at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct MetricsSnapshot {
    /// TokenReviews sent to the API server (whatever their answer).
    pub token_reviews: u64,
    /// SubjectAccessReviews sent to the API server (whatever their answer).
    pub access_reviews: u64,
    /// Tokens decided from the token cache, without a review.
    pub token_cache_hits: u64,
    /// Authorizations decided from the access cache, without a review.
    pub access_cache_hits: u64,
    /// Reviews a request waited for instead of sending its own: another request with the same
    /// token (or the same attributes) was already being reviewed.
    pub coalesced: u64,
    /// Requests passed to the inner service for an authenticated, authorized user.
    pub allowed: u64,
    /// Requests answered 401: no bearer token, or one the API server did not authenticate.
    pub unauthenticated: u64,
    /// Requests answered 403: the user is not allowed.
    pub denied: u64,
    /// Requests answered 500 because a review failed (the API server unreachable, too slow,
    /// answering with an error, or failing to evaluate the access review), or because a
    /// kube-rbac-proxy configuration's rewrite found no value in the request.
    pub errored: u64,
    /// Requests answered 429 because their review would have exceeded the
    /// [review rate limit](super::DelegatedAuthLayer::review_rate_limit); nothing was sent.
    pub throttled: u64,
}

impl Metrics {
    /// The counters now.
    #[must_use]
    pub fn snapshot(&self) -> MetricsSnapshot {
        let read = |c: &AtomicU64| c.load(Ordering::Relaxed);
        MetricsSnapshot {
            token_reviews: read(&self.token_reviews),
            access_reviews: read(&self.access_reviews),
            token_cache_hits: read(&self.token_cache_hits),
            access_cache_hits: read(&self.access_cache_hits),
            coalesced: read(&self.coalesced),
            allowed: read(&self.allowed),
            unauthenticated: read(&self.unauthenticated),
            denied: read(&self.denied),
            errored: read(&self.errored),
            throttled: read(&self.throttled),
        }
    }
}

/// The counters the layer increments.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Counter {
    TokenReview,
    AccessReview,
    TokenCacheHit,
    AccessCacheHit,
    Coalesced,
    Allowed,
    Unauthenticated,
    Denied,
    Errored,
    Throttled,
}

impl Metrics {
    pub(crate) fn inc(&self, counter: Counter) {
        let c = match counter {
            Counter::TokenReview => &self.token_reviews,
            Counter::AccessReview => &self.access_reviews,
            Counter::TokenCacheHit => &self.token_cache_hits,
            Counter::AccessCacheHit => &self.access_cache_hits,
            Counter::Coalesced => &self.coalesced,
            Counter::Allowed => &self.allowed,
            Counter::Unauthenticated => &self.unauthenticated,
            Counter::Denied => &self.denied,
            Counter::Errored => &self.errored,
            Counter::Throttled => &self.throttled,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }
}
