//! The add-on sidecar decision as a tower layer: verify the identity token, hand the add-on
//! `X-Authenticated-User`.
//!
//! [`SidecarLayer`] wraps any `tower::Service<http::Request<B>>` (a hyper service, an axum
//! `Router`, a reverse proxy's upstream client) with [`addon_jwt::Sidecar`]'s decision:
//!
//! * a request without a valid `Authorization: Bearer <token>` (missing, forged, expired, wrong
//!   audience or issuer, a look-alike identity header, oversized headers) is answered `403
//!   Forbidden` with an empty body (with [`SidecarLayer::explain_rejections`], a
//!   `WWW-Authenticate` header says which check failed), and the inner service never sees it;
//! * otherwise the inner service gets the request with every `Authorization`, client-supplied
//!   `X-Authenticated-User` (any spelling), other identity header
//!   ([`addon_jwt::STRIPPED_IDENTITY_HEADERS`]: `X-Remote-User`, `Impersonate-*`,
//!   `X-Forwarded-User`, ..., and those added with [`Sidecar::strip_headers`]), hop-by-hop and
//!   `Connection`-named header removed and `x-authenticated-user: <sub>` added, and the
//!   verified user as an [`AuthenticatedUser`] request extension (axum:
//!   `Extension<AuthenticatedUser>`). `X-Authenticated-User` is the one identity header the
//!   inner service can trust.
//!
//! That covers both of the design's patterns: verify in process (the layer around the add-on's
//! own router) or behind a proxy (the layer around a client that forwards upstream, as
//! `k8s-bootstrap forward-proxy` does).
//!
//! The request path takes no global lock: the [`SharedSidecar`] is read with one atomic load
//! (`arc-swap`), and the sidecar's verified-token cache is sharded. Replacing the sidecar (new
//! keys, new audiences) with [`SharedSidecar::replace`] takes effect for the next request;
//! requests already decided keep the old one.
//!
//! Under a flood of forged tokens each one costs a signature check. With
//! [`SidecarLayer::max_concurrent_verifications`], tokens that need a check take turns on a
//! few slots while requests whose token the sidecar already verified are decided at once, so
//! known callers are not delayed by the flood (the inner service must then be `Clone`, as
//! axum routers and hyper clients are). With
//! [`SidecarLayer::max_concurrent_verifications_without_known_callers`], more slots open while
//! no known caller is being served, so that checks alone may use every CPU.
//!
//! ```
//! use std::convert::Infallible;
//! use std::time::SystemTime;
//! use addon_jwt::{Audience, Issuer, Minter, Sidecar, SigningKey, Validation};
//! use http::{Request, Response, StatusCode};
//! use k8s_bootstrap::sidecar::{AuthenticatedUser, SidecarLayer};
//! use tower::{Layer as _, Service as _, ServiceExt as _};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let pem = "-----BEGIN PRIVATE KEY-----\n\
//! MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
//! -----END PRIVATE KEY-----\n";
//! let key = SigningKey::from_pkcs8_pem(pem)?;
//! let (issuer, audience) = (Issuer::new("https://apiserver.example"), Audience::new("kube-system/dashboard"));
//! let sidecar = Sidecar::new(key.public_key_set()?, Validation::new(issuer.clone(), audience.clone()));
//!
//! // The add-on: answers with the user the layer verified.
//! let addon = tower::service_fn(|req: Request<String>| async move {
//!     let user = req.extensions().get::<AuthenticatedUser>().map(|u| u.name().to_owned());
//!     Ok::<_, Infallible>(Response::new(user.unwrap_or_default()))
//! });
//! let mut service = SidecarLayer::new(sidecar).layer(addon);
//!
//! let token = Minter::new(key, issuer).mint("jane", &audience, SystemTime::now())?;
//! let request = Request::get("/")
//!     .header("authorization", format!("Bearer {}", token.expose_secret()))
//!     .header("x-authenticated-user", "admin") // spoofed: removed
//!     .body(String::new())?;
//! let response = service.ready().await?.call(request).await?;
//! assert_eq!(response.body(), "jane");
//!
//! let forged = Request::get("/").header("authorization", "Bearer e30.e30.AA").body(String::new())?;
//! let response = service.ready().await?.call(forged).await?;
//! assert_eq!(response.status(), StatusCode::FORBIDDEN);
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::future::Future;
use std::num::NonZeroUsize;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::SystemTime;

use addon_jwt::{RejectReason, Rejection, Sidecar};
use arc_swap::ArcSwap;
use http::{Request, Response, StatusCode};
use tokio::sync::{AcquireError, OwnedSemaphorePermit, Semaphore};

/// The user an [`SidecarLayer`] verified, as a request extension for the inner service.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthenticatedUser(Arc<str>);

impl AuthenticatedUser {
    /// The token's `sub`: the name the add-on also receives in `X-Authenticated-User`.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for AuthenticatedUser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("AuthenticatedUser").field(&&*self.0).finish()
    }
}

/// A [`Sidecar`] that can be replaced while requests are served (keys reloaded from a mounted
/// file, audiences refreshed). Cloning shares it.
#[derive(Clone)]
pub struct SharedSidecar(Arc<ArcSwap<Sidecar>>);

impl SharedSidecar {
    /// Shares `sidecar`.
    #[must_use]
    pub fn new(sidecar: Sidecar) -> SharedSidecar {
        SharedSidecar(Arc::new(ArcSwap::from_pointee(sidecar)))
    }

    /// Replaces the sidecar for every request decided from now on. Its verified-token cache
    /// starts empty: tokens verified with the old keys are checked again with the new ones.
    pub fn replace(&self, sidecar: Sidecar) {
        self.0.store(Arc::new(sidecar));
    }

    /// The sidecar in use now.
    #[must_use]
    pub fn current(&self) -> Arc<Sidecar> {
        self.0.load_full()
    }
}

impl From<Sidecar> for SharedSidecar {
    fn from(sidecar: Sidecar) -> SharedSidecar {
        SharedSidecar::new(sidecar)
    }
}

impl fmt::Debug for SharedSidecar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedSidecar")
            .field("cached", &self.0.load().cached())
            .finish_non_exhaustive()
    }
}

/// What the layer reports for each decision, for metrics: called on the request path, so it
/// must be cheap (an atomic increment, a counter's `inc()`).
pub trait DecisionObserver: Send + Sync + 'static {
    /// A request was forwarded for a verified user.
    fn forwarded(&self) {}
    /// A request was answered 403.
    fn rejected(&self, _rejection: &Rejection) {}
}

/// The observer that records nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoObserver;

impl DecisionObserver for NoObserver {}

/// A tower layer that puts [`Sidecar`]'s decision in front of a service (see the
/// [module](self) documentation).
#[derive(Clone)]
pub struct SidecarLayer {
    sidecar: SharedSidecar,
    clock: fn() -> SystemTime,
    observer: Arc<dyn DecisionObserver>,
    verifications: Option<Arc<Gate>>,
    /// The limits the gate was built from: with known callers, and without.
    limits: (Option<NonZeroUsize>, Option<NonZeroUsize>),
    explain: bool,
    /// Whether checks run on tokio's blocking threads while known callers are served.
    checks_aside: bool,
}

/// How long after a request with a known token (one the sidecar verified before) the spare
/// verification slots stay closed.
const KNOWN_CALLER_WINDOW_MS: u64 = 10_000;

/// The verification slots of [`SidecarLayer::max_concurrent_verifications`].
#[derive(Debug)]
struct Gate {
    /// Always open to requests whose token needs a check.
    slots: Arc<Semaphore>,
    /// Open only while no known caller was seen within [`KNOWN_CALLER_WINDOW_MS`].
    spare: Option<Arc<Semaphore>>,
    /// When the last request with a known token was decided: milliseconds since the Unix
    /// epoch by the layer's clock; 0 before the first.
    last_known: AtomicU64,
}

impl Gate {
    fn new(limits: (Option<NonZeroUsize>, Option<NonZeroUsize>)) -> Option<Gate> {
        let (with_known, without) = limits;
        let with_known = with_known?.get().min(Semaphore::MAX_PERMITS);
        let spare = without
            .map(|n| {
                n.get()
                    .min(Semaphore::MAX_PERMITS)
                    .saturating_sub(with_known)
            })
            .filter(|n| *n > 0)
            .map(|n| Arc::new(Semaphore::new(n)));
        Some(Gate {
            slots: Arc::new(Semaphore::new(with_known)),
            spare,
            last_known: AtomicU64::new(0),
        })
    }

    /// Notes a request decided from the cache at `now`.
    fn known_caller(&self, now: SystemTime) {
        let ms = unix_ms(now);
        if ms > self.last_known.load(Ordering::Relaxed) {
            self.last_known.store(ms, Ordering::Relaxed);
        }
    }

    /// Whether a known caller was seen within the window before `now`.
    fn serving_known_callers(&self, now: SystemTime) -> bool {
        let last = self.last_known.load(Ordering::Relaxed);
        last != 0 && unix_ms(now).saturating_sub(last) < KNOWN_CALLER_WINDOW_MS
    }

    /// A slot for a request arriving at `now` while known callers are (`known`) or are not
    /// being served: one of the slots, or, without known callers, whichever of them and the
    /// spare ones frees first.
    fn acquire(&self, known: bool) -> Acquire {
        let slots = Arc::clone(&self.slots);
        let spare = self.spare.as_ref().filter(|_| !known).map(Arc::clone);
        match spare {
            None => Box::pin(slots.acquire_owned()),
            Some(spare) => Box::pin(async move {
                tokio::select! {
                    biased;
                    permit = Arc::clone(&slots).acquire_owned() => permit,
                    permit = spare.acquire_owned() => permit,
                }
            }),
        }
    }
}

/// Milliseconds since the Unix epoch (0 before it), at least 1 after it.
fn unix_ms(now: SystemTime) -> u64 {
    now.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| {
        u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
    })
}

impl SidecarLayer {
    /// A layer deciding with `sidecar` (a [`Sidecar`], or a [`SharedSidecar`] to replace it
    /// later) at the wall clock's time.
    #[must_use]
    pub fn new(sidecar: impl Into<SharedSidecar>) -> SidecarLayer {
        SidecarLayer {
            sidecar: sidecar.into(),
            clock: crate::clock::now,
            observer: Arc::new(NoObserver),
            verifications: None,
            limits: (None, None),
            checks_aside: false,
            explain: false,
        }
    }

    /// Tells the caller why a request was refused: each 403 carries
    /// `WWW-Authenticate: Bearer error="invalid_token", error_description="<reason>"` (RFC 6750
    /// section 3), the reason being [`Rejection`]'s text (`token has expired`, `audience does
    /// not match`, `no authorization header`, ...). Off by default: the reason never contains
    /// token bytes, but it tells any caller which check failed.
    #[must_use]
    pub fn explain_rejections(mut self, explain: bool) -> SidecarLayer {
        self.explain = explain;
        self
    }

    /// Reads `now` from `clock` instead of the wall clock (tests, simulated time).
    #[must_use]
    pub fn clock(mut self, clock: fn() -> SystemTime) -> SidecarLayer {
        self.clock = clock;
        self
    }

    /// Reports each decision to `observer` (metrics).
    #[must_use]
    pub fn observer(mut self, observer: Arc<dyn DecisionObserver>) -> SidecarLayer {
        self.observer = observer;
        self
    }

    /// Known callers first: at most `n` requests whose token needs a signature check are
    /// decided at once, and the others wait for one of these slots in turn, while a request
    /// whose token the sidecar already verified (or that is refused before any check) is
    /// decided at once and never waits. A flood of forged tokens then queues behind itself,
    /// not in front of callers the sidecar knows. Without this, every request is decided in
    /// `call`.
    ///
    /// The slots are shared by every service this layer (or a clone of it) makes, so one
    /// layer for a whole server limits the server. Each request is still decided with one
    /// look-up of the verified-token cache.
    #[must_use]
    pub fn max_concurrent_verifications(mut self, n: NonZeroUsize) -> SidecarLayer {
        self.limits.0 = Some(n);
        self.verifications = Gate::new(self.limits).map(Arc::new);
        self
    }

    /// With [`max_concurrent_verifications`](Self::max_concurrent_verifications)`(m)`: up to
    /// `n` (at least `m`) requests whose token needs a check are decided at once while no
    /// known caller (a request whose token the sidecar already verified) arrived in the last
    /// ten seconds; `m` once one has. With no known caller to keep responsive, a burst of new
    /// tokens (a rollout, a cache that is off) may use every CPU; as soon as known callers are
    /// served, checks go back to `m` slots, and a flood of forged tokens cannot take the CPUs
    /// they need. A request's slots are chosen when it arrives. Without
    /// `max_concurrent_verifications`, this does nothing.
    #[must_use]
    pub fn max_concurrent_verifications_without_known_callers(
        mut self,
        n: NonZeroUsize,
    ) -> SidecarLayer {
        self.limits.1 = Some(n);
        self.verifications = Gate::new(self.limits).map(Arc::new);
        self
    }

    /// With [`max_concurrent_verifications`](Self::max_concurrent_verifications): while known
    /// callers are being served (one arrived in the last ten seconds), each signature check
    /// runs on tokio's blocking threads ([`tokio::task::spawn_blocking`]) instead of in the
    /// request's task, still within the slots. The operating system's scheduler then shares
    /// the CPUs between the checks and the runtime's threads, so a known caller's request is
    /// not queued behind a check on its thread: this matters on single-threaded runtimes (one
    /// per core), where the request's thread would otherwise run the checks of every forged
    /// token the flood sends it. Without known callers, and outside a tokio runtime, checks run
    /// in the task (no hand-over between threads). Off by default.
    #[must_use]
    pub fn checks_on_blocking_threads(mut self, on: bool) -> SidecarLayer {
        self.checks_aside = on;
        self
    }

    /// The sidecar this layer decides with.
    #[must_use]
    pub fn sidecar(&self) -> &SharedSidecar {
        &self.sidecar
    }

    /// Acts on a decision: the inner service is called with the verified request, or the
    /// request is answered 403 without it.
    fn finish<S, ReqBody, ResBody>(
        &self,
        decision: Result<Arc<str>, Rejection>,
        mut request: Request<ReqBody>,
        inner: &mut S,
    ) -> State<S, ReqBody>
    where
        S: tower::Service<Request<ReqBody>, Response = Response<ResBody>>,
    {
        match decision {
            Ok(user) => {
                self.observer.forwarded();
                request.extensions_mut().insert(AuthenticatedUser(user));
                State::Called {
                    future: inner.call(request),
                }
            }
            Err(rejection) => {
                // `Rejection`'s Display never contains the token.
                tracing::debug!(reason = %rejection, "sidecar: request rejected");
                self.observer.rejected(&rejection);
                State::Forbidden {
                    explanation: self.explain.then(|| explanation(&rejection)),
                }
            }
        }
    }
}

/// The `WWW-Authenticate` value that explains `rejection` (RFC 6750 section 3): the reason as
/// an `error_description`, with the characters its quoted string may not hold (`"`, a backslash,
/// controls, non-ASCII) replaced by `'`, and at most 200 of them.
fn explanation(rejection: &Rejection) -> http::HeaderValue {
    let reason = rejection.reason().to_string();
    let description: String = reason
        .chars()
        .take(200)
        .map(|c| match c {
            ' ' | '!' | '#'..='[' | ']'..='~' => c,
            _ => '\'',
        })
        .collect();
    let error = match rejection.reason() {
        RejectReason::MissingAuthorization
        | RejectReason::MultipleAuthorization
        | RejectReason::MalformedAuthorization
        | RejectReason::HeadersTooLarge
        | RejectReason::InvalidHeaderName => "invalid_request",
        _ => "invalid_token",
    };
    http::HeaderValue::from_str(&format!(
        "Bearer error=\"{error}\", error_description=\"{description}\""
    ))
    .unwrap_or_else(|_| http::HeaderValue::from_static("Bearer error=\"invalid_token\""))
}

impl fmt::Debug for SidecarLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SidecarLayer")
            .field("sidecar", &self.sidecar)
            .finish_non_exhaustive()
    }
}

impl<S> tower::Layer<S> for SidecarLayer {
    type Service = SidecarService<S>;

    fn layer(&self, inner: S) -> SidecarService<S> {
        SidecarService {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service [`SidecarLayer`] produces.
#[derive(Clone)]
pub struct SidecarService<S> {
    inner: S,
    layer: SidecarLayer,
}

impl<S> fmt::Debug for SidecarService<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SidecarService")
            .field("layer", &self.layer)
            .finish_non_exhaustive()
    }
}

impl<S> SidecarService<S> {
    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S, ReqBody, ResBody> tower::Service<Request<ReqBody>> for SidecarService<S>
where
    S: tower::Service<Request<ReqBody>, Response = Response<ResBody>> + Clone,
    ResBody: Default,
{
    type Response = Response<ResBody>;
    type Error = S::Error;
    type Future = ResponseFuture<S, ReqBody>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<ReqBody>) -> Self::Future {
        let now = (self.layer.clock)();
        let Some(gate) = &self.layer.verifications else {
            let decision = self
                .layer
                .sidecar
                .0
                .load()
                .decide_header_map(request.headers_mut(), now);
            let state = self.layer.finish(decision, request, &mut self.inner);
            return ResponseFuture { state };
        };
        let cached = self
            .layer
            .sidecar
            .0
            .load()
            .decide_header_map_if_cached(request.headers_mut(), now);
        let state = match cached {
            Some(decision) => {
                if decision.is_ok() {
                    gate.known_caller(now);
                }
                self.layer.finish(decision, request, &mut self.inner)
            }
            None => {
                // The token needs a signature check: it waits for a slot, and takes the inner
                // service that was made ready along (a clone stays for the next request).
                let clone = self.inner.clone();
                let known = gate.serving_known_callers(now);
                State::Waiting {
                    permit: gate.acquire(known),
                    aside: known && self.layer.checks_aside,
                    check: None,
                    request: Some(request),
                    inner: std::mem::replace(&mut self.inner, clone),
                    layer: self.layer.clone(),
                }
            }
        };
        ResponseFuture { state }
    }
}

/// A semaphore permit on its way.
type Acquire = Pin<Box<dyn Future<Output = Result<OwnedSemaphorePermit, AcquireError>> + Send>>;

/// A check on a blocking thread: it hands back the request's headers and the decision.
type Check = tokio::task::JoinHandle<(http::HeaderMap, Result<Arc<str>, Rejection>)>;

pin_project_lite::pin_project! {
    /// The future of [`SidecarService`]: the inner service's response, a 403, or (with
    /// [`SidecarLayer::max_concurrent_verifications`]) a wait for a verification slot first.
    pub struct ResponseFuture<S, ReqBody>
    where
        S: tower::Service<Request<ReqBody>>,
    {
        #[pin]
        state: State<S, ReqBody>,
    }
}

pin_project_lite::pin_project! {
    #[project = StateProj]
    enum State<S, ReqBody>
    where
        S: tower::Service<Request<ReqBody>>,
    {
        Called { #[pin] future: S::Future },
        Forbidden { explanation: Option<http::HeaderValue> },
        Waiting {
            permit: Acquire,
            // Whether the check runs on a blocking thread, and that check once started (the
            // request's headers are then with it).
            aside: bool,
            check: Option<Check>,
            request: Option<Request<ReqBody>>,
            inner: S,
            layer: SidecarLayer,
        },
    }
}

impl<S, ReqBody> fmt::Debug for ResponseFuture<S, ReqBody>
where
    S: tower::Service<Request<ReqBody>>,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Called { .. } => "called",
            State::Forbidden { .. } => "forbidden",
            State::Waiting { check: None, .. } => "waiting for a verification slot",
            State::Waiting { check: Some(_), .. } => "checking the token on a blocking thread",
        };
        f.debug_struct("ResponseFuture")
            .field("state", &state)
            .finish()
    }
}

impl<S, ReqBody, ResBody> Future for ResponseFuture<S, ReqBody>
where
    S: tower::Service<Request<ReqBody>, Response = Response<ResBody>>,
    ResBody: Default,
{
    type Output = Result<Response<ResBody>, S::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.project().state;
        loop {
            let next = match state.as_mut().project() {
                StateProj::Called { future } => return future.poll(cx),
                StateProj::Forbidden { explanation } => {
                    let mut response = Response::new(ResBody::default());
                    *response.status_mut() = StatusCode::FORBIDDEN;
                    if let Some(value) = explanation.take() {
                        response
                            .headers_mut()
                            .insert(http::header::WWW_AUTHENTICATE, value);
                    }
                    return Poll::Ready(Ok(response));
                }
                StateProj::Waiting {
                    permit,
                    aside,
                    check,
                    request,
                    inner,
                    layer,
                } => {
                    if let Some(started) = check.as_mut() {
                        let checked = ready!(Pin::new(started).poll(cx));
                        match (request.take(), checked) {
                            (Some(mut request), Ok((headers, decision))) => {
                                *request.headers_mut() = headers;
                                layer.finish(decision, request, inner)
                            }
                            // The check panicked or its runtime is shutting down: refused.
                            (_, Err(_)) | (None, _) => State::Forbidden { explanation: None },
                        }
                    } else {
                        // The semaphore is never closed; were it, the request is decided anyway.
                        let permit = ready!(permit.as_mut().poll(cx)).ok();
                        let runtime = aside
                            .then(tokio::runtime::Handle::try_current)
                            .and_then(Result::ok);
                        match (request.take(), runtime) {
                            (Some(mut waiting), Some(runtime)) => {
                                let mut headers = std::mem::take(waiting.headers_mut());
                                let (sidecar, clock) = (layer.sidecar.current(), layer.clock);
                                // The slot is held until the check ends, even if the request
                                // is dropped meanwhile.
                                *check = Some(runtime.spawn_blocking(move || {
                                    let decision = sidecar.decide_header_map(&mut headers, clock());
                                    drop(permit);
                                    (headers, decision)
                                }));
                                // The request waits here for its headers.
                                *request = Some(waiting);
                                continue;
                            }
                            (Some(mut request), None) => {
                                let decision = layer
                                    .sidecar
                                    .0
                                    .load()
                                    .decide_header_map(request.headers_mut(), (layer.clock)());
                                // The slot is free again before the inner service is waited for.
                                drop(permit);
                                layer.finish(decision, request, inner)
                            }
                            // Only after the request went on: nothing is forwarded.
                            (None, _) => State::Forbidden { explanation: None },
                        }
                    }
                }
            };
            state.set(next);
        }
    }
}
