//! The API server's half of add-on authentication as a tower layer: on a request proxied to a
//! Service with `add-auth=true`, mint (or reuse) a token for the user and hand it to the add-on
//! as `Authorization: Bearer <token>`.
//!
//! **Kubernetes' own kube-apiserver never implemented this.** [`AddAuthLayer`] is for servers
//! and gateways that authenticate users themselves and proxy their requests to Services
//! (`/api/v1/namespaces/<ns>/services/<name>[:<port>]/proxy/<path>`): wrap the Service-proxy
//! handler in it. The add-on's half (`k8s_bootstrap::sidecar::SidecarLayer`, `k8s-bootstrap
//! forward-proxy`) verifies the token with the public key of the signing key (for an API
//! server, the key of its serving certificate) and audience `<namespace>/<name>`.
//!
//! The layer reads two request extensions the server sets once it has authenticated the
//! caller and resolved the proxy path: [`addon_jwt::RequestUser`] and
//! [`addon_jwt::add_auth::ProxiedService`]. Then [`addon_jwt::AddAuth`]'s decision:
//!
//! * no `add-auth=true` in the query (see [`addon_jwt::add_auth`] for exactly how it is read):
//!   the request goes to the inner service untouched;
//! * `add-auth=true`: the inner service gets the request with every `add-auth` parameter
//!   removed from the URI's query (the others kept byte for byte, in order), every
//!   `Authorization` and client `X-Authenticated-User` header removed, and `authorization:
//!   Bearer <token>` (marked sensitive) added. The token's `sub` is the user, `aud` is
//!   `<namespace>/<name>`, and it lives as long as the [`addon_jwt::Minter`]'s TTL (a minute by
//!   default); it is reused while less than half of that has passed;
//! * the user is over the per-user rate limit: `429 Too Many Requests` with `Retry-After`
//!   (whole seconds, rounded up) and a `metav1.Status` body (`reason: TooManyRequests`,
//!   `details.retryAfterSeconds`), as kube-apiserver answers a throttled request; the inner
//!   service is not called;
//! * either extension missing (the server did not set it: a wiring error): `500` with a
//!   `metav1.Status` body (`reason: InternalError`), whatever the query, so the error shows on
//!   the first request; the inner service is not called;
//! * a user name that cannot be a token's `sub` sent on as a header value (empty, control or
//!   non-ASCII characters, too long): `403` (`reason: Forbidden`); a Service whose namespace or
//!   name is not a DNS label, or a failed signature: `500`. The inner service is not called.
//!
//! Refusing a revoked user is the server's authentication's job, before this layer; bounding
//! how long a proxied request may run is its proxy's (e.g. `tower::timeout` around the inner
//! service).
//!
//! One [`addon_jwt::AddAuth`] (minter and rate limiter) is shared by every clone of the layer
//! and of its services, behind a mutex held only while deciding (a cache look-up, or one
//! signature on a miss), never across an `.await`. Metrics ([`AddAuthMetrics`], registered
//! with [`AddAuthLayer::register`]): tokens minted, cache hits, requests refused by the limit.
//!
//! ```
//! use std::convert::Infallible;
//! use std::num::NonZeroU32;
//! use std::time::Duration;
//! use addon_jwt::add_auth::{AddAuth, ProxiedService};
//! use addon_jwt::{RequestUser, Issuer, Minter, SigningKey};
//! use http::{Request, Response, StatusCode};
//! use k8s_bootstrap::addon_auth::AddAuthLayer;
//! use tower::{Layer as _, ServiceExt as _};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let pem = "-----BEGIN PRIVATE KEY-----\n\
//! MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
//! -----END PRIVATE KEY-----\n";
//! let minter = Minter::new(SigningKey::from_pkcs8_pem(pem)?, Issuer::new("https://apiserver.example"));
//! let layer = AddAuthLayer::new(
//!     AddAuth::new(minter).rate(NonZeroU32::new(5).unwrap(), Duration::from_secs(1)),
//! );
//! let mut registry = prometheus_client::registry::Registry::default();
//! layer.register(&mut registry);
//!
//! // The Service proxy: here, it answers with what it would send upstream.
//! let proxy = tower::service_fn(|req: Request<String>| async move {
//!     let authorized = req.headers().get("authorization").is_some();
//!     Ok::<_, Infallible>(Response::new(format!("{} {authorized}", req.uri())))
//! });
//! let service = layer.layer(proxy);
//!
//! // What the server does once it has authenticated the caller and resolved the path.
//! let mut request = Request::get(
//!     "/api/v1/namespaces/kube-system/services/dashboard:80/proxy/?add-auth=true&x=1",
//! )
//! .header("authorization", "Bearer the-user-s-own-credential")
//! .body(String::new())?;
//! request.extensions_mut().insert(RequestUser::new("jane"));
//! request.extensions_mut().insert(ProxiedService::new("kube-system", "dashboard"));
//!
//! let response = service.oneshot(request).await?;
//! assert_eq!(response.status(), StatusCode::OK);
//! assert_eq!(
//!     response.body(),
//!     "/api/v1/namespaces/kube-system/services/dashboard:80/proxy/?x=1 true"
//! );
//! assert_eq!(layer.metrics().tokens_minted(), 1);
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::SystemTime;

use addon_jwt::add_auth::{AddAuthError, Decision, ProxiedService, Refusal};
use addon_jwt::{AddAuth, RequestUser};
use http::header::{CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use http::{Request, Response, StatusCode};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;

/// The layer's counters. Cloning shares them.
#[derive(Debug, Clone, Default)]
pub struct AddAuthMetrics {
    minted: Counter,
    cache_hits: Counter,
    rate_limited: Counter,
    errors: Counter,
}

impl AddAuthMetrics {
    /// Tokens signed for a request (cache misses).
    #[must_use]
    pub fn tokens_minted(&self) -> u64 {
        self.minted.get()
    }

    /// Requests whose token came from the cache.
    #[must_use]
    pub fn cache_hits(&self) -> u64 {
        self.cache_hits.get()
    }

    /// Requests answered 429 by the per-user rate limit.
    #[must_use]
    pub fn rate_limited(&self) -> u64 {
        self.rate_limited.get()
    }

    /// Requests answered 403 or 500 (a missing extension, a user name that cannot be sent, a
    /// Service that is not a DNS label, a failed signature).
    #[must_use]
    pub fn errors(&self) -> u64 {
        self.errors.get()
    }

    /// Registers the counters in `registry` (use `Registry::sub_registry_with_prefix` for a
    /// prefix): `add_auth_tokens_minted_total`, `add_auth_token_cache_hits_total`,
    /// `add_auth_rate_limited_requests_total`, `add_auth_errors_total`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "add_auth_tokens_minted",
            "Add-on tokens signed for add-auth=true requests (token cache misses)",
            self.minted.clone(),
        );
        registry.register(
            "add_auth_token_cache_hits",
            "add-auth=true requests whose add-on token came from the cache",
            self.cache_hits.clone(),
        );
        registry.register(
            "add_auth_rate_limited_requests",
            "add-auth=true requests answered 429 by the per-user rate limit",
            self.rate_limited.clone(),
        );
        registry.register(
            "add_auth_errors",
            "Proxied requests answered 403 or 500 by the add-auth layer",
            self.errors.clone(),
        );
    }
}

/// A tower layer that puts the `add-auth` decision in front of a Service proxy (see the
/// [module](self) documentation). Cloning shares the minter, the rate limiter and the metrics.
#[derive(Clone)]
pub struct AddAuthLayer {
    add_auth: Arc<Mutex<AddAuth>>,
    clock: fn() -> SystemTime,
    metrics: AddAuthMetrics,
}

impl AddAuthLayer {
    /// A layer deciding with `add_auth` at the wall clock's time.
    #[must_use]
    pub fn new(add_auth: AddAuth) -> AddAuthLayer {
        AddAuthLayer {
            add_auth: Arc::new(Mutex::new(add_auth)),
            clock: crate::clock::now,
            metrics: AddAuthMetrics::default(),
        }
    }

    /// Reads `now` from `clock` instead of the wall clock (tests, simulated time).
    #[must_use]
    pub fn clock(mut self, clock: fn() -> SystemTime) -> AddAuthLayer {
        self.clock = clock;
        self
    }

    /// The layer's counters.
    #[must_use]
    pub fn metrics(&self) -> &AddAuthMetrics {
        &self.metrics
    }

    /// Registers the layer's counters in `registry` (see [`AddAuthMetrics::register`]).
    pub fn register(&self, registry: &mut Registry) {
        self.metrics.register(registry);
    }

    /// Decides on `request` and rewrites it for an injection; `Err` is the answer to send
    /// instead of forwarding it.
    fn decide<B>(&self, request: &mut Request<B>) -> Result<(), Answer> {
        let extensions = request.extensions();
        let (Some(user), Some(service)) = (
            extensions.get::<RequestUser>(),
            extensions.get::<ProxiedService>(),
        ) else {
            tracing::error!("add-auth: the request has no RequestUser or ProxiedService extension");
            self.metrics.errors.inc();
            return Err(Answer::Internal(
                "the proxied request lacks the authenticated user or the Service",
            ));
        };
        let now = (self.clock)();
        let decision = self
            .add_auth
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .decide(user, service, request.uri().query(), now);
        match decision {
            Ok(Decision::Inject(injection)) => {
                if injection.minted() {
                    self.metrics.minted.inc();
                } else {
                    self.metrics.cache_hits.inc();
                }
                let uri = injection.apply_to_uri(request.uri()).map_err(|e| {
                    self.metrics.errors.inc();
                    Answer::from(e)
                })?;
                *request.uri_mut() = uri;
                injection.apply_to_headers(request.headers_mut());
                Ok(())
            }
            Ok(Decision::Refuse(refusal)) => {
                tracing::debug!(%refusal, "add-auth: rate limited");
                self.metrics.rate_limited.inc();
                Err(Answer::TooManyRequests(refusal))
            }
            Ok(_) => Ok(()),
            Err(e) => {
                tracing::warn!(error = %e, "add-auth: request refused");
                self.metrics.errors.inc();
                Err(Answer::from(e))
            }
        }
    }
}

impl fmt::Debug for AddAuthLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AddAuthLayer")
            .field("metrics", &self.metrics)
            .finish_non_exhaustive()
    }
}

impl<S> tower::Layer<S> for AddAuthLayer {
    type Service = AddAuthService<S>;

    fn layer(&self, inner: S) -> AddAuthService<S> {
        AddAuthService {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service [`AddAuthLayer`] produces.
#[derive(Clone)]
pub struct AddAuthService<S> {
    inner: S,
    layer: AddAuthLayer,
}

impl<S> fmt::Debug for AddAuthService<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AddAuthService")
            .field("layer", &self.layer)
            .finish_non_exhaustive()
    }
}

impl<S> AddAuthService<S> {
    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S, ReqBody, ResBody> tower::Service<Request<ReqBody>> for AddAuthService<S>
where
    S: tower::Service<Request<ReqBody>, Response = Response<ResBody>>,
    ResBody: From<String>,
{
    type Response = Response<ResBody>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future, ResBody>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<ReqBody>) -> Self::Future {
        let state = match self.layer.decide(&mut request) {
            Ok(()) => State::Called {
                future: self.inner.call(request),
            },
            Err(answer) => State::Answered {
                response: Some(answer.into_response()),
            },
        };
        ResponseFuture { state }
    }
}

pin_project_lite::pin_project! {
    /// The future of [`AddAuthService`]: the inner service's response, or the layer's own
    /// answer (429, 403, 500).
    pub struct ResponseFuture<F, ResBody> {
        #[pin]
        state: State<F, ResBody>,
    }
}

pin_project_lite::pin_project! {
    #[project = StateProj]
    enum State<F, ResBody> {
        Called { #[pin] future: F },
        Answered { response: Option<Response<ResBody>> },
    }
}

impl<F, ResBody> fmt::Debug for ResponseFuture<F, ResBody> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Called { .. } => "called",
            State::Answered { .. } => "answered by the layer",
        };
        f.debug_struct("ResponseFuture")
            .field("state", &state)
            .finish()
    }
}

impl<F, ResBody, E> Future for ResponseFuture<F, ResBody>
where
    F: Future<Output = Result<Response<ResBody>, E>>,
    ResBody: From<String>,
{
    type Output = Result<Response<ResBody>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Called { future } => future.poll(cx),
            StateProj::Answered { response } => match response.take() {
                Some(response) => Poll::Ready(Ok(response)),
                // Polled again after completion: an empty 500, never a forwarded request.
                None => Poll::Ready(Ok(
                    Answer::Internal("polled after completion").into_response()
                )),
            },
        }
    }
}

/// The layer's own answer, instead of forwarding the request.
enum Answer {
    TooManyRequests(Refusal),
    Forbidden(&'static str),
    Internal(&'static str),
}

impl From<AddAuthError> for Answer {
    fn from(e: AddAuthError) -> Answer {
        match e {
            AddAuthError::UserNotHeaderSafe => {
                Answer::Forbidden("the user's name cannot be sent to an add-on")
            }
            AddAuthError::InvalidService => {
                Answer::Internal("the proxied Service's namespace or name is not a DNS label")
            }
            _ => Answer::Internal("the add-on token could not be made"),
        }
    }
}

/// A `metav1.Status`, its fields in the order kube-apiserver writes them.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Status<'a> {
    kind: &'static str,
    api_version: &'static str,
    metadata: Empty,
    status: &'static str,
    message: &'a str,
    reason: &'static str,
    details: Details<'a>,
    code: u16,
}

#[derive(serde::Serialize)]
struct Empty {}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Details<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_after_seconds: Option<i32>,
    #[serde(skip_serializing_if = "<[Cause<'a>]>::is_empty")]
    causes: &'a [Cause<'a>],
}

#[derive(serde::Serialize)]
struct Cause<'a> {
    message: &'a str,
}

impl Answer {
    /// The response: a `metav1.Status` JSON body, as kube-apiserver writes its errors.
    fn into_response<B: From<String>>(self) -> Response<B> {
        let (code, reason, message, retry_after, cause) = match self {
            Answer::TooManyRequests(refusal) => {
                let secs = refusal.retry_after_secs();
                (
                    StatusCode::TOO_MANY_REQUESTS,
                    "TooManyRequests",
                    format!("too many add-auth requests, please try again in {secs} seconds"),
                    Some(secs),
                    None,
                )
            }
            Answer::Forbidden(message) => (
                StatusCode::FORBIDDEN,
                "Forbidden",
                message.to_owned(),
                None,
                None,
            ),
            Answer::Internal(message) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalError",
                format!("Internal error occurred: {message}"),
                None,
                Some(message),
            ),
        };
        let causes: Vec<Cause<'_>> = cause.map(|message| Cause { message }).into_iter().collect();
        let status = Status {
            kind: "Status",
            api_version: "v1",
            metadata: Empty {},
            status: "Failure",
            message: &message,
            reason,
            details: Details {
                retry_after_seconds: retry_after.map(|s| i32::try_from(s).unwrap_or(i32::MAX)),
                causes: &causes,
            },
            code: code.as_u16(),
        };
        // Serialising these fields cannot fail; were it to, the status line still tells.
        let body = serde_json::to_string(&status).unwrap_or_default();
        let mut response = Response::new(B::from(body));
        *response.status_mut() = code;
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(secs) = retry_after {
            headers.insert(RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}
