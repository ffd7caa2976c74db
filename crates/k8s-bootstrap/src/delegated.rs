//! Delegated authentication and authorization as a tower layer: each request is authenticated
//! (by the API server's front proxy, a client certificate, or a bearer token verified offline
//! or reviewed by the API server with a `TokenReview`), and authorized by the API server
//! (`SubjectAccessReview`), as `k8s.io/apiserver`'s delegating authenticator and authorizer and
//! controller-runtime's `filters.WithAuthenticationAndAuthorization` do. For a server's
//! `/metrics`, an aggregated API, any endpoint that pods and people call with their Kubernetes
//! credentials.
//!
//! The authenticators, tried in this order (`k8s.io/apiserver`'s union: the first that names a
//! user wins; one that refuses leaves the request to the next):
//!
//! 1. **the front proxy** ([`DelegatedAuthLayer::front_proxy`], off by default): a client
//!    certificate that verifies against the requestheader CA, with an allowed common name,
//!    and the user its `X-Remote-User`, `X-Remote-Group`, `X-Remote-Extra-*` headers name (as
//!    configured);
//! 2. **a client certificate** ([`DelegatedAuthLayer::client_ca`], off by default): one that
//!    verifies against the client CA is its common name, with its organizations as groups;
//! 3. **a service-account token verified offline**
//!    ([`DelegatedAuthLayer::service_account_tokens`], off by default): a projected token
//!    signed by the cluster's keys for one of the configured audiences, with no API call;
//! 4. **a TokenReview** (on by default, [`DelegatedAuthLayer::token_reviews`]): the API server
//!    authenticates the token for the [audiences](DelegatedAuthLayer::token_audiences).
//!
//! Client certificates are read from the [`ClientCertificates`] request extension, which the
//! server that terminated TLS puts there (the forward proxy does). The identity headers (the
//! front proxy's, as configured, and kube-apiserver's defaults `X-Remote-User`,
//! `X-Remote-Uid`, `X-Remote-Group`, `X-Remote-Extra-*`) are removed from every request before
//! the inner service sees it, whichever authenticator won: a client without the front proxy's
//! certificate can never name a user. Every user but `system:anonymous` is in
//! `system:authenticated`, as `k8s.io/apiserver`'s `AuthenticatedGroupAdder` makes it.
//!
//! [`DelegatedAuthLayer`] wraps any `tower::Service<http::Request<B>>` (an axum `Router`, a
//! hyper service):
//!
//! * the token is read from `Authorization: Bearer` only (never from the query string); a
//!   request no authenticator accepts (no certificate nor token, another scheme, two
//!   `Authorization` headers, a token neither verified offline nor authenticated by the API
//!   server) is answered `401`, with the `Status` kube-apiserver answers
//!   (`reason: Unauthorized`);
//! * the request's attributes are, by default, a non-resource request for its path with the
//!   lowercase method as verb (`get /metrics`), as kube-rbac-proxy authorizes without a
//!   configuration file; [`DelegatedAuthLayer::request_attributes`] resolves them as an
//!   aggregated API server does, and [`DelegatedAuthLayer::rbac_proxy_config`] as
//!   kube-rbac-proxy does with its file (resource attributes, rewrites, static authorizations,
//!   allowed and ignored paths). A user who is not allowed is answered `403` with
//!   kube-apiserver's `Status` (`forbidden: User "..." cannot get path "/metrics"`), the
//!   authorizer's reason appended only with [`DelegatedAuthLayer::explain_denials`];
//! * when the [review rate limit](DelegatedAuthLayer::review_rate_limit) is exhausted, a
//!   request that needs a review is answered `429` (`TooManyRequests`, with `Retry-After`) and
//!   nothing is cached;
//! * a path that is not clean (`//metrics`, `/metrics/../secret`, `%2e%2e`) is answered `301`
//!   to the clean path before anything else, as Go's `ServeMux` in front of kube-rbac-proxy
//!   does, so what is authorized is what is served;
//! * when a review fails (the API server unreachable or too slow, a 5xx, an `evaluationError`
//!   without an allow), the request is answered `500` (`InternalError`) and nothing is cached:
//!   the next request asks again;
//! * otherwise the inner service gets the request without its `Authorization` header (as
//!   kube-apiserver removes it once authenticated) and with the user as a [`VerifiedUser`]
//!   request extension (axum: `Extension<VerifiedUser>`): name, UID, groups and extra.
//!
//! Decisions are kept in `delegated-auth`'s caches ([`CacheConfig::default`]: 10 s for allows
//! and denials, as `k8s.io/apiserver`); a cache hit sends nothing. Requests that miss on the
//! same token (or the same attributes) at once send one review and share its answer. Reviews
//! are sent through the given `kube::Client` with at most
//! [`max_concurrent_reviews`](DelegatedAuthLayer::max_concurrent_reviews) at once, each within
//! [`review_timeout`](DelegatedAuthLayer::review_timeout). The token is never logged, and no
//! `Debug` output holds it.
//!
//! The API server must let the client's user create both reviews: the ClusterRole
//! `system:auth-delegator` grants it.
//!
//! ```no_run
//! use axum::{Extension, Router, routing::get};
//! use k8s_bootstrap::delegated::{DelegatedAuthLayer, VerifiedUser};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // In-cluster configuration, or the kubeconfig: whatever kube infers.
//! let client = kube::Client::try_default().await?;
//! let auth = DelegatedAuthLayer::new(client);
//! let metrics = auth.metrics(); // reviews sent, cache hits, allowed, denied...
//!
//! let app = Router::new()
//!     .route("/metrics", get(|Extension(user): Extension<VerifiedUser>| async move {
//!         format!("# scraped by {}\n", user.name)
//!     }))
//!     .layer(auth);
//! let listener = tokio::net::TcpListener::bind("0.0.0.0:8443").await?;
//! axum::serve(listener, app).await?;
//! # let _ = metrics;
//! # Ok(())
//! # }
//! ```

mod authn;
pub(crate) mod metrics;
mod rate_limit;
mod response;
mod review;
mod service_account_keys;

use std::fmt;
use std::future::Future;
use std::num::NonZeroUsize;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use delegated_auth::{
    ApiPrefixes, Attributes, BearerTokenRef, CacheConfig, ClientCa, FrontProxyAuthenticator,
    PathRule, RbacProxyConfig, RequestInfo, RequestPath, ServiceAccountAuthenticator, UserInfo,
};
use http::{Request, Response};

pub use self::authn::TokenReviews;
pub use self::metrics::{Metrics, MetricsSnapshot};
pub use self::rate_limit::ReviewRateLimit;
pub use self::response::ResponseBody;
pub use self::service_account_keys::{
    JWKS_PATH, OPENID_CONFIGURATION_PATH, ServiceAccountKeysError,
    fetch_service_account_authenticator,
};

use self::authn::Authenticators;
use crate::ClientCertificates;

use self::metrics::Counter;
use self::review::{Failure, Identity, Reviewer, ReviewerConfig};

/// The most reviews in flight at once by default, per layer.
pub const DEFAULT_MAX_CONCURRENT_REVIEWS: usize = 32;

/// How long a review may take by default: `k8s.io/apiserver`'s delegating authentication and
/// authorization client timeout (10 s).
pub const DEFAULT_REVIEW_TIMEOUT: Duration = Duration::from_secs(10);

/// The user the API server authenticated, as a request extension for the inner service
/// (axum: `Extension<VerifiedUser>`). Dereferences to [`UserInfo`]: name, UID, groups, extra.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedUser(Arc<UserInfo>);

impl VerifiedUser {
    /// The user.
    #[must_use]
    pub fn user(&self) -> &UserInfo {
        &self.0
    }

    /// The user, shared.
    #[must_use]
    pub fn into_inner(self) -> Arc<UserInfo> {
        self.0
    }
}

impl Deref for VerifiedUser {
    type Target = UserInfo;

    fn deref(&self) -> &UserInfo {
        &self.0
    }
}

/// How a request's attributes are read.
#[derive(Debug, Clone)]
enum Authorization {
    /// `RequestInfo` with these prefixes.
    Request(ApiPrefixes),
    /// kube-rbac-proxy's configuration.
    Proxy(Arc<RbacProxyConfig>),
}

/// A tower layer that authenticates and authorizes each request through the API server (see
/// the [module](self) documentation). Cloning it shares its caches, flights and metrics; each
/// builder method starts new (empty) caches, so configure it before serving.
#[derive(Clone)]
pub struct DelegatedAuthLayer {
    shared: Arc<Shared>,
}

struct Shared {
    client: kube::Client,
    config: ReviewerConfig,
    authorization: Authorization,
    authenticators: Authenticators,
    explain: bool,
    reviewer: Reviewer,
    metrics: Arc<Metrics>,
}

impl DelegatedAuthLayer {
    /// A layer that sends its reviews through `client` (as `kube::Client::try_default` makes
    /// it: in-cluster, or from the kubeconfig), with no audiences, non-resource attributes,
    /// `k8s.io/apiserver`'s cache lifetimes, [`DEFAULT_MAX_CONCURRENT_REVIEWS`] and
    /// [`DEFAULT_REVIEW_TIMEOUT`].
    #[must_use]
    pub fn new(client: kube::Client) -> DelegatedAuthLayer {
        let config = ReviewerConfig {
            audiences: Vec::new(),
            token_cache: CacheConfig::default(),
            access_cache: CacheConfig::default(),
            max_concurrent_reviews: DEFAULT_MAX_CONCURRENT_REVIEWS,
            rate_limit: None,
            timeout: DEFAULT_REVIEW_TIMEOUT,
            clock: crate::clock::now,
        };
        let metrics = Arc::new(Metrics::default());
        DelegatedAuthLayer {
            shared: Arc::new(Shared {
                reviewer: Reviewer::new(client.clone(), &config, Arc::clone(&metrics)),
                client,
                config,
                authorization: Authorization::Request(ApiPrefixes::None),
                authenticators: Authenticators::default(),
                explain: false,
                metrics,
            }),
        }
    }

    /// Accepts only tokens the API server finds valid for one of `audiences` (the TokenReview's
    /// `spec.audiences`, as `--authentication-token-webhook`'s audiences or kube-rbac-proxy's
    /// `--auth-token-audiences`): an answer for another audience is not an authentication.
    /// None by default: the API server's own audiences.
    #[must_use]
    pub fn token_audiences<I, S>(self, audiences: I) -> DelegatedAuthLayer
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let audiences: Vec<String> = audiences
            .into_iter()
            .map(Into::into)
            .filter(|a| !a.is_empty())
            .take(delegated_auth::MAX_REVIEW_AUDIENCES)
            .collect();
        self.rebuild(|s| s.config.audiences = audiences)
    }

    /// Reads each request's attributes as `k8s.io/apiserver`'s `RequestInfoFactory` with
    /// `prefixes`: [`ApiPrefixes::Kubernetes`] for an aggregated API server (resource requests
    /// under `/api` and `/apis`), [`ApiPrefixes::None`] (the default) for a non-resource
    /// request for every path.
    #[must_use]
    pub fn request_attributes(self, prefixes: ApiPrefixes) -> DelegatedAuthLayer {
        self.rebuild(|s| s.authorization = Authorization::Request(prefixes))
    }

    /// Reads each request's attributes as kube-rbac-proxy does with `config` (its
    /// `--config-file`, `--allow-paths`, `--ignore-paths`): an ignored path goes to the inner
    /// service unauthenticated (with no [`VerifiedUser`]); a path outside the allowed ones is
    /// answered 403 before any review; a static authorization allows without a review; with
    /// rewrites, every value's attributes must be allowed, and a request without a value is
    /// answered 500 (`InternalError`, "bad request. The request or configuration is
    /// malformed"), as kube-rbac-proxy answers it.
    #[must_use]
    pub fn rbac_proxy_config(self, config: RbacProxyConfig) -> DelegatedAuthLayer {
        let config = Arc::new(config);
        self.rebuild(|s| s.authorization = Authorization::Proxy(config))
    }

    /// The token cache's bounds and lifetimes ([`CacheConfig::default`]: 10 s for
    /// authenticated and unauthenticated tokens, as `k8s.io/apiserver`).
    #[must_use]
    pub fn token_cache(self, config: CacheConfig) -> DelegatedAuthLayer {
        self.rebuild(|s| s.config.token_cache = config)
    }

    /// The access cache's bounds and lifetimes ([`CacheConfig::default`]: 10 s for allows and
    /// for denials, as `k8s.io/apiserver`).
    #[must_use]
    pub fn access_cache(self, config: CacheConfig) -> DelegatedAuthLayer {
        self.rebuild(|s| s.config.access_cache = config)
    }

    /// At most `n` reviews in flight at once (both kinds, every service of this layer); the
    /// others wait their turn (within the review timeout). Requests decided from the caches
    /// never wait. [`DEFAULT_MAX_CONCURRENT_REVIEWS`] by default.
    #[must_use]
    pub fn max_concurrent_reviews(self, n: NonZeroUsize) -> DelegatedAuthLayer {
        self.rebuild(|s| s.config.max_concurrent_reviews = n.get())
    }

    /// How long a review may take, its wait for a slot included, before the request is
    /// answered 500 ([`DEFAULT_REVIEW_TIMEOUT`] by default).
    #[must_use]
    pub fn review_timeout(self, timeout: Duration) -> DelegatedAuthLayer {
        self.rebuild(|s| s.config.timeout = timeout)
    }

    /// At most `limit`'s rate and burst of reviews (both kinds, every service of this layer),
    /// on top of [`max_concurrent_reviews`](DelegatedAuthLayer::max_concurrent_reviews): under
    /// a flood of new (say, invalid) tokens, what the API server sees stays bounded. A request
    /// whose review would exceed it is answered 429 (`TooManyRequests`, `Retry-After` and
    /// `details.retryAfterSeconds` as kube-apiserver sets them) and nothing is cached; requests
    /// decided from the caches or offline never count and are never refused by it.
    ///
    /// Renewals have a bucket of their own, of the same rate and burst: the review of a token
    /// the token cache held authenticated, or of attributes the access cache held allowed,
    /// once that entry has expired (and until the caches' bounds evict it). So a flood of
    /// tokens never seen before cannot throttle the users already served when their entries
    /// expire, and the API server sees at most twice `limit`, half of it for credentials it
    /// accepted. The buckets are refilled at the layer's [`clock`](DelegatedAuthLayer::clock).
    /// None by default.
    #[must_use]
    pub fn review_rate_limit(self, limit: ReviewRateLimit) -> DelegatedAuthLayer {
        self.rebuild(|s| s.config.rate_limit = Some(limit))
    }

    /// Authenticates the API server's front proxy (the aggregation layer, or another
    /// authenticating proxy) as `k8s.io/apiserver`'s requestheader authenticator does, before
    /// any other authenticator: a request whose [`ClientCertificates`] verify against the
    /// requestheader CA, with a common name among the allowed names, is the user its identity
    /// headers name (`X-Remote-User`, `X-Remote-Group`, `X-Remote-Extra-*` as configured).
    /// Whatever authenticates a request, those headers (and kube-apiserver's defaults) are
    /// removed before the inner service sees it; from any other client they are never
    /// believed. The client certificates come from the server that terminated TLS, as a
    /// request extension.
    #[must_use]
    pub fn front_proxy(self, authenticator: FrontProxyAuthenticator) -> DelegatedAuthLayer {
        let authenticator = Arc::new(authenticator);
        self.rebuild(|s| s.authenticators.front_proxy = Some(authenticator))
    }

    /// Authenticates client certificates as `k8s.io/apiserver`'s x509 authenticator does,
    /// after the front proxy: a request whose [`ClientCertificates`] verify against `ca` for
    /// client authentication is the certificate's user (the common name, the organizations
    /// as groups). A chain that does not verify leaves the request to its bearer token.
    #[must_use]
    pub fn client_ca(self, ca: ClientCa) -> DelegatedAuthLayer {
        let ca = Arc::new(ca);
        self.rebuild(|s| s.authenticators.client_ca = Some(ca))
    }

    /// Verifies projected service-account tokens offline, before any TokenReview: a bearer
    /// token `authenticator` accepts (its issuer's keys, one of its audiences, not expired) is
    /// the service account's user without a call to the API server. A token it refuses goes
    /// to the TokenReview, as in `k8s.io/apiserver`'s union, unless
    /// [`token_reviews`](DelegatedAuthLayer::token_reviews) is [`TokenReviews::Disabled`];
    /// give [`token_audiences`](DelegatedAuthLayer::token_audiences) the same audiences so
    /// that the review binds the token to them too.
    ///
    /// The issuer comes from the cluster's `/.well-known/openid-configuration`, the keys from
    /// its `/openid/v1/jwks` (both readable by `system:service-account-issuer-discovery`,
    /// bound to every authenticated user by default); [`fetch_service_account_authenticator`] reads
    /// them with a `kube::Client`. Offline verification cannot see a deleted ServiceAccount
    /// or Pod: such a token stays valid until it expires.
    #[must_use]
    pub fn service_account_tokens(
        self,
        authenticator: ServiceAccountAuthenticator,
    ) -> DelegatedAuthLayer {
        let authenticator = Arc::new(authenticator);
        self.rebuild(|s| s.authenticators.service_accounts = Some(authenticator))
    }

    /// Whether bearer tokens that no offline authenticator accepts are reviewed by the API
    /// server ([`TokenReviews::Enabled`], the default) or refused ([`TokenReviews::Disabled`]:
    /// service-account tokens verified offline only, with no TokenReview ever sent).
    #[must_use]
    pub fn token_reviews(self, reviews: TokenReviews) -> DelegatedAuthLayer {
        self.rebuild(|s| s.authenticators.token_reviews = reviews)
    }

    /// Appends the authorizer's reason to each 403's message (`...: RBAC: ...`), as
    /// kube-apiserver does. Off by default: the reason may name roles and bindings.
    #[must_use]
    pub fn explain_denials(self, explain: bool) -> DelegatedAuthLayer {
        self.rebuild(|s| s.explain = explain)
    }

    /// Reads `now` for the caches from `clock` instead of the wall clock (tests, simulated
    /// time).
    #[must_use]
    pub fn clock(self, clock: fn() -> SystemTime) -> DelegatedAuthLayer {
        self.rebuild(|s| s.config.clock = clock)
    }

    /// The layer's counters, shared by every service it makes and by its clones.
    #[must_use]
    pub fn metrics(&self) -> Arc<Metrics> {
        Arc::clone(&self.shared.metrics)
    }

    fn rebuild(self, change: impl FnOnce(&mut Settings)) -> DelegatedAuthLayer {
        let shared = &self.shared;
        let mut settings = Settings {
            config: shared.config.clone(),
            authorization: shared.authorization.clone(),
            authenticators: shared.authenticators.clone(),
            explain: shared.explain,
        };
        change(&mut settings);
        let metrics = Arc::clone(&shared.metrics);
        let client = shared.client.clone();
        DelegatedAuthLayer {
            shared: Arc::new(Shared {
                reviewer: Reviewer::new(client.clone(), &settings.config, Arc::clone(&metrics)),
                client,
                config: settings.config,
                authorization: settings.authorization,
                authenticators: settings.authenticators,
                explain: settings.explain,
                metrics,
            }),
        }
    }
}

/// What a builder method may change.
struct Settings {
    config: ReviewerConfig,
    authorization: Authorization,
    authenticators: Authenticators,
    explain: bool,
}

impl fmt::Debug for DelegatedAuthLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.shared;
        f.debug_struct("DelegatedAuthLayer")
            .field("audiences", &s.config.audiences)
            .field("authorization", &s.authorization)
            .field("token_cache", &s.config.token_cache)
            .field("access_cache", &s.config.access_cache)
            .field("authenticators", &s.authenticators.describe())
            .field("max_concurrent_reviews", &s.config.max_concurrent_reviews)
            .field("review_rate_limit", &s.config.rate_limit)
            .field("review_timeout", &s.config.timeout)
            .field("explain_denials", &s.explain)
            .field("metrics", &s.metrics.snapshot())
            .finish_non_exhaustive()
    }
}

impl<S> tower::Layer<S> for DelegatedAuthLayer {
    type Service = DelegatedAuthService<S>;

    fn layer(&self, inner: S) -> DelegatedAuthService<S> {
        DelegatedAuthService {
            inner,
            shared: Arc::clone(&self.shared),
        }
    }
}

/// The service [`DelegatedAuthLayer`] produces.
#[derive(Clone)]
pub struct DelegatedAuthService<S> {
    inner: S,
    shared: Arc<Shared>,
}

impl<S> fmt::Debug for DelegatedAuthService<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelegatedAuthService")
            .field(
                "layer",
                &DelegatedAuthLayer {
                    shared: Arc::clone(&self.shared),
                },
            )
            .finish_non_exhaustive()
    }
}

impl<S> DelegatedAuthService<S> {
    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

/// The future of [`DelegatedAuthService`]: the decision, then the inner service's response or
/// the layer's own answer.
pub type ResponseFuture<ResBody, E> =
    Pin<Box<dyn Future<Output = Result<Response<ResponseBody<ResBody>>, E>> + Send>>;

impl<S, ReqBody, ResBody> tower::Service<Request<ReqBody>> for DelegatedAuthService<S>
where
    S: tower::Service<Request<ReqBody>, Response = Response<ResBody>> + Clone + Send + 'static,
    S::Future: Send,
    ReqBody: Send + 'static,
    ResBody: Send + 'static,
{
    type Response = Response<ResponseBody<ResBody>>;
    type Error = S::Error;
    type Future = ResponseFuture<ResBody, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        // The service made ready goes with the request; a clone stays for the next one.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let (mut parts, body) = request.into_parts();
        // What the caches decide is decided here, so that the request's future holds only the
        // inner service's (the future of `decide`, which may wait for reviews, is kilobytes).
        if let Some(user) = decide_cached(&self.shared, &mut parts) {
            parts.extensions.insert(user);
            let call = inner.call(Request::from_parts(parts, body));
            return Box::pin(async move { Ok(call.await?.map(ResponseBody::inner)) });
        }
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            match decide(&shared, &mut parts).await {
                Verdict::Forward(user) => {
                    if let Some(user) = user {
                        parts.extensions.insert(user);
                    }
                    let response = inner.call(Request::from_parts(parts, body)).await?;
                    Ok(response.map(ResponseBody::inner))
                }
                Verdict::Answer(response) => Ok(response),
            }
        })
    }
}

/// What the layer decided for a request.
enum Verdict<B> {
    /// To the inner service, for this user (none on an ignored path).
    Forward(Option<VerifiedUser>),
    /// Answered by the layer.
    Answer(Response<ResponseBody<B>>),
}

/// The decision for the common case the caches settle: a bearer token the token cache holds
/// authenticated, asking for what the access cache holds allowed, with request attributes and
/// no certificate authenticator configured: the user, the request let through as [`allow`]
/// lets it. `None` for every other request, which [`decide`] then takes from the start (nothing
/// here changed the request or counted anything).
fn decide_cached(shared: &Shared, request: &mut http::request::Parts) -> Option<VerifiedUser> {
    let Authorization::Request(prefixes) = &shared.authorization else {
        return None;
    };
    let authenticators = &shared.authenticators;
    if authenticators.front_proxy.is_some()
        || authenticators.client_ca.is_some()
        || authenticators.service_accounts.is_some()
    {
        return None;
    }
    let path = RequestPath::parse(request.uri.path()).ok()?;
    let user = shared
        .reviewer
        .cached_user(bearer_token(&request.headers)?)?;
    let info = RequestInfo::resolve(
        request.method.as_str(),
        &path,
        request.uri.query(),
        prefixes,
    )
    .ok()?;
    if !shared.reviewer.cached_allow(&user, &info) {
        return None;
    }
    let metrics = shared.reviewer.metrics();
    metrics.inc(Counter::TokenCacheHit);
    authenticators.remove_identity_headers(&mut request.headers);
    Some(let_through(metrics, request, user))
}

async fn decide<B>(shared: &Shared, request: &mut http::request::Parts) -> Verdict<B> {
    let metrics = shared.reviewer.metrics();
    let query = request.uri.query();
    let path = match RequestPath::parse(request.uri.path()) {
        Ok(path) => path,
        Err(delegated_auth::Error::PathNotClean { clean }) => {
            return Verdict::Answer(response::redirect(&clean, query));
        }
        Err(error) => {
            return Verdict::Answer(response::bad_request(&error.to_string()));
        }
    };
    if let Authorization::Proxy(config) = &shared.authorization {
        match config.path_rule(&path) {
            PathRule::Authorize => {}
            PathRule::Ignore => {
                shared
                    .authenticators
                    .remove_identity_headers(&mut request.headers);
                return Verdict::Forward(None);
            }
            _ => {
                metrics.inc(Counter::Denied);
                let attributes = Attributes::non_resource(
                    UserInfo::default(),
                    request.method.as_str().to_lowercase(),
                    path.as_str(),
                );
                return Verdict::Answer(response::forbidden(&attributes, None));
            }
        }
    }

    // Who: in `k8s.io/apiserver`'s union order, the front proxy, the client certificate,
    // then the bearer token (offline, then reviewed). The identity headers go, whoever won.
    let authenticators = &shared.authenticators;
    let clock = shared.config.clock;
    let certificate_user = authenticators.certificate_user(
        request.extensions.get::<ClientCertificates>(),
        &request.headers,
        clock,
    );
    authenticators.remove_identity_headers(&mut request.headers);
    let user = match certificate_user {
        Some(user) => Arc::new(user),
        None => match authenticate_token(shared, &request.headers, clock).await {
            Ok(Some(user)) => user,
            Ok(None) => {
                metrics.inc(Counter::Unauthenticated);
                return Verdict::Answer(response::unauthorized());
            }
            Err(failure) => return failed(shared, failure),
        },
    };

    // May they: every attribute set allowed (statically or by the API server).
    let method = request.method.as_str();
    let attributes = match &shared.authorization {
        Authorization::Request(prefixes) => {
            match RequestInfo::resolve(method, &path, query, prefixes) {
                // A cached allow: nothing of the request is copied.
                Ok(info) if shared.reviewer.cached_allow(&user, &info) => {
                    return allow(metrics, request, user);
                }
                Ok(info) => vec![info.into_attributes(Arc::clone(&user))],
                Err(error) => return Verdict::Answer(response::bad_request(&error.to_string())),
            }
        }
        Authorization::Proxy(config) => {
            let values: Vec<&str> = config
                .rewrite_header()
                .map(|name| {
                    request
                        .headers
                        .get_all(name)
                        .iter()
                        .filter_map(|v| v.to_str().ok())
                        .collect()
                })
                .unwrap_or_default();
            let attributes = config.attributes(&user, method, &path, query, &values);
            if attributes.is_empty() {
                // kube-rbac-proxy's rewriting authorizer denies with an error, which
                // `k8s.io/apiserver`'s authorization filter answers 500.
                metrics.inc(Counter::Errored);
                return Verdict::Answer(response::internal_error(
                    "bad request. The request or configuration is malformed",
                ));
            }
            attributes
        }
    };
    for attributes in &attributes {
        if let Authorization::Proxy(config) = &shared.authorization
            && config.static_allows(attributes)
        {
            continue;
        }
        match shared.reviewer.authorize(attributes).await {
            Ok(outcome) if outcome.is_allowed() => {}
            Ok(outcome) => {
                metrics.inc(Counter::Denied);
                tracing::debug!(
                    user = %attributes.user.name,
                    verb = %attributes.verb,
                    reason = %outcome.reason,
                    "delegated authorization: denied"
                );
                let reason = shared.explain.then_some(outcome.reason.as_str());
                return Verdict::Answer(response::forbidden(attributes, reason));
            }
            Err(failure) => return failed(shared, failure),
        }
    }
    allow(metrics, request, user)
}

/// Lets `request` through for `user`.
fn allow<B>(
    metrics: &Metrics,
    request: &mut http::request::Parts,
    user: Arc<UserInfo>,
) -> Verdict<B> {
    Verdict::Forward(Some(let_through(metrics, request, user)))
}

/// What [`allow`] does, for [`decide_cached`], which needs no [`Verdict`].
fn let_through(
    metrics: &Metrics,
    request: &mut http::request::Parts,
    user: Arc<UserInfo>,
) -> VerifiedUser {
    metrics.inc(Counter::Allowed);
    // As kube-apiserver, once authenticated: the credential stays here.
    request.headers.remove(http::header::AUTHORIZATION);
    VerifiedUser(user)
}

/// The user of the request's bearer token: verified offline, else reviewed (when enabled);
/// `None` for no token or one no authenticator accepts.
async fn authenticate_token(
    shared: &Shared,
    headers: &http::HeaderMap,
    clock: fn() -> SystemTime,
) -> Result<Option<Arc<UserInfo>>, Failure> {
    let Some(token) = bearer_token(headers) else {
        return Ok(None);
    };
    if let Some(user) = shared.authenticators.offline_token_user(token, clock) {
        return Ok(Some(Arc::new(user)));
    }
    if shared.authenticators.token_reviews == TokenReviews::Disabled {
        return Ok(None);
    }
    Ok(match shared.reviewer.authenticate(token).await? {
        Identity::User(user) => Some(user),
        Identity::Unauthenticated => None,
    })
}

fn failed<B>(shared: &Shared, failure: Failure) -> Verdict<B> {
    let message = match failure {
        Failure::TokenReview => "the API server could not review the token",
        Failure::AccessReview => "the API server could not review the access",
        Failure::Throttled { retry_after } => {
            shared.reviewer.metrics().inc(Counter::Throttled);
            return Verdict::Answer(response::too_many_requests(retry_after));
        }
    };
    shared.reviewer.metrics().inc(Counter::Errored);
    Verdict::Answer(response::internal_error(message))
}

/// The token of the one `Authorization: Bearer` header, borrowed (a copy is made only for a
/// review); `None` for none, two, another scheme or a token that cannot be one (too long, not
/// visible ASCII).
fn bearer_token(headers: &http::HeaderMap) -> Option<BearerTokenRef<'_>> {
    let mut values = headers.get_all(http::header::AUTHORIZATION).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    BearerTokenRef::from_authorization(value.as_bytes())
        .ok()
        .flatten()
}
