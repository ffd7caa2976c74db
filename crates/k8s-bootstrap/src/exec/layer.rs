//! The tower layer that authenticates requests with the exec credential.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use exec_credential::ClientIdentity;
use http::header::AUTHORIZATION;
use http::{Request, Response, StatusCode};
use tower::{BoxError, Layer, Service};
use tracing::Instrument as _;

use super::credentials::ExecCredentials;

/// A request body that can be sent again after an HTTP 401.
///
/// [`ExecService`] keeps a copy of each replayable request (its head and
/// [`try_replay`](Self::try_replay) of its body) and sends it once more with the refreshed
/// credential when the server answers 401. Bodies that are streams return `None` and are not
/// retried (the 401 is returned, and the credential is still refreshed for the next request).
pub trait ReplayableBody: Sized {
    /// A copy of the body to send again, or `None` when it cannot be replayed.
    fn try_replay(&self) -> Option<Self>;
}

impl ReplayableBody for kube::client::Body {
    /// kube's buffered bodies (every `kube::Api` call) are replayable; wrapped streams are not.
    fn try_replay(&self) -> Option<Self> {
        self.try_clone()
    }
}

impl<D: Clone> ReplayableBody for http_body_util::Full<D> {
    fn try_replay(&self) -> Option<Self> {
        Some(self.clone())
    }
}

impl<D> ReplayableBody for http_body_util::Empty<D> {
    fn try_replay(&self) -> Option<Self> {
        Some(http_body_util::Empty::new())
    }
}

impl ReplayableBody for bytes::Bytes {
    fn try_replay(&self) -> Option<Self> {
        Some(self.clone())
    }
}

impl ReplayableBody for String {
    fn try_replay(&self) -> Option<Self> {
        Some(self.clone())
    }
}

/// A [`Layer`] that authenticates every request with an [`ExecCredentials`]: see
/// [`ExecService`].
#[derive(Debug, Clone)]
pub struct ExecLayer {
    credentials: ExecCredentials,
}

impl ExecLayer {
    /// A layer using `credentials` (clone the handle to share it with other layers or clients).
    #[must_use]
    pub fn new(credentials: ExecCredentials) -> ExecLayer {
        ExecLayer { credentials }
    }

    /// The credentials this layer uses.
    #[must_use]
    pub fn credentials(&self) -> &ExecCredentials {
        &self.credentials
    }
}

impl<S> Layer<S> for ExecLayer {
    type Service = ExecService<S>;

    fn layer(&self, inner: S) -> ExecService<S> {
        ExecService {
            inner,
            credentials: self.credentials.clone(),
        }
    }
}

/// The service of [`ExecLayer`].
///
/// For each request without an `Authorization` header (one that has it is passed through
/// untouched, as in client-go):
///
/// 1. it gets the credential from [`ExecCredentials`] (the cached one, or after the one shared
///    plugin run);
/// 2. for a bearer token it sets `Authorization: Bearer <token>` (marked sensitive); a
///    certificate-only credential sets no header (the TLS connector presents the certificate:
///    see [`ExecCredentials::subscribe_client_identity`]);
/// 3. when the response is HTTP 401 it asks the core for a refresh
///    ([`ExecCredentials::refresh_after_unauthorized`]: at most one plugin run per credential,
///    shared by concurrent requests), and when that produced a new token and the body is
///    [`ReplayableBody`], sends the request once more with it. Otherwise the 401 response is
///    returned.
///
/// The inner service must be `Clone` (the retry calls it a second time from the response
/// future). kube's `ClientBuilder` stack is not; put a `tower::buffer::BufferLayer` below this
/// layer as [`kube_client_with_exec`](super::kube_client_with_exec) does.
///
/// On a cached credential the overhead per request is a lock taken briefly, a clock read, a
/// reference-counted header value clone, the copy of the request head kept for the retry, and
/// the boxed response future.
#[derive(Debug, Clone)]
pub struct ExecService<S> {
    inner: S,
    credentials: ExecCredentials,
}

/// The response future of [`ExecService`].
pub type ResponseFuture<R> = Pin<Box<dyn Future<Output = Result<Response<R>, BoxError>> + Send>>;

impl<S, B, R> Service<Request<B>> for ExecService<S>
where
    S: Service<Request<B>, Response = Response<R>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: ReplayableBody + Send + 'static,
    R: Send + 'static,
{
    type Response = Response<R>;
    type Error = BoxError;
    type Future = ResponseFuture<R>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<B>) -> ResponseFuture<R> {
        // The ready service serves this request; the clone takes its place for the next one.
        let clone = self.inner.clone();
        let inner = core::mem::replace(&mut self.inner, clone);
        Box::pin(authenticate(inner, self.credentials.clone(), request))
    }
}

async fn authenticate<S, B, R>(
    mut inner: S,
    credentials: ExecCredentials,
    mut request: Request<B>,
) -> Result<Response<R>, BoxError>
where
    S: Service<Request<B>, Response = Response<R>>,
    S::Error: Into<BoxError>,
    B: ReplayableBody,
{
    if request.headers().contains_key(AUTHORIZATION) {
        return inner.call(request).await.map_err(Into::into);
    }
    let authorization = credentials.authorization().await?;
    let used = authorization.credential;
    let replay = match &authorization.header {
        Some(_) => replay_copy(&request),
        None => None,
    };
    if let Some(value) = authorization.header {
        request.headers_mut().insert(AUTHORIZATION, value);
    }
    let response = inner.call(request).await.map_err(Into::into)?;
    if response.status() != StatusCode::UNAUTHORIZED {
        return Ok(response);
    }
    let span = tracing::info_span!("exec_unauthorized", credential = used.get());
    async move {
        let refreshed = match credentials.reauthorize(used).await {
            Ok(refreshed) => refreshed,
            Err(e) => {
                tracing::warn!(error = %e, "refreshing the exec credential after 401 failed");
                return Ok(response);
            }
        };
        if refreshed.credential == used {
            tracing::debug!("no newer exec credential: returning the 401");
            return Ok(response);
        }
        let (Some(mut again), Some(value)) = (replay, refreshed.header) else {
            tracing::debug!("request not replayable: returning the 401");
            return Ok(response);
        };
        drop(response);
        again.headers_mut().insert(AUTHORIZATION, value);
        tracing::info!(
            credential = refreshed.credential.get(),
            "retrying the request once with the refreshed exec credential"
        );
        core::future::poll_fn(|cx| inner.poll_ready(cx))
            .await
            .map_err(Into::into)?;
        inner.call(again).await.map_err(Into::into)
    }
    .instrument(span)
    .await
}

/// A copy of the request to send again, when its body is replayable.
fn replay_copy<B: ReplayableBody>(request: &Request<B>) -> Option<Request<B>> {
    let body = request.body().try_replay()?;
    let mut copy = Request::new(body);
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.version_mut() = request.version();
    *copy.headers_mut() = request.headers().clone();
    *copy.extensions_mut() = request.extensions().clone();
    Some(copy)
}

/// A `kube::Client` for `config` (without the `exec` stanza) authenticated by `credentials`,
/// whose connections present the plugin's current TLS client certificate: one kube client per
/// certificate, replaced when the plugin returns another (the previous one's idle connections
/// close when its last request ends), and a plain one for requests without a certificate.
/// Building it does not run the plugin.
pub(crate) fn following_client(
    config: kube::Config,
    credentials: ExecCredentials,
) -> Result<kube::Client, super::Error> {
    let default_namespace = config.default_namespace.clone();
    let plain = kube::Client::try_from(config.clone()).map_err(super::Error::KubeClient)?;
    let service = FollowingService {
        backends: Arc::new(Backends {
            config,
            plain,
            certified: Mutex::new(None),
        }),
        credentials,
    };
    Ok(kube::client::ClientBuilder::new(service, default_namespace).build())
}

struct Backends {
    config: kube::Config,
    plain: kube::Client,
    certified: Mutex<Option<(Arc<ClientIdentity>, kube::Client)>>,
}

impl Backends {
    /// The client presenting `identity` (built on first use of each new identity).
    fn client_for(
        &self,
        identity: Option<&Arc<ClientIdentity>>,
    ) -> Result<kube::Client, super::Error> {
        let Some(identity) = identity else {
            return Ok(self.plain.clone());
        };
        let mut slot = self
            .certified
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((current, client)) = &*slot
            && (Arc::ptr_eq(current, identity) || **current == **identity)
        {
            return Ok(client.clone());
        }
        let mut config = self.config.clone();
        let auth = &mut config.auth_info;
        auth.client_certificate = None;
        auth.client_key = None;
        auth.client_certificate_data = Some(STANDARD.encode(identity.certificate_pem()));
        auth.client_key_data = Some(STANDARD.encode(identity.key().expose_secret()).into());
        let client = kube::Client::try_from(config).map_err(super::Error::KubeClient)?;
        if slot.is_some() {
            tracing::info!("exec TLS client certificate rotated: new connections present it");
        }
        *slot = Some((Arc::clone(identity), client.clone()));
        Ok(client)
    }
}

/// The service under [`following_client`]'s `kube::Client`.
#[derive(Clone)]
struct FollowingService {
    backends: Arc<Backends>,
    credentials: ExecCredentials,
}

impl Service<Request<kube::client::Body>> for FollowingService {
    type Response = Response<kube::client::Body>;
    type Error = BoxError;
    type Future = ResponseFuture<kube::client::Body>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<kube::client::Body>) -> Self::Future {
        Box::pin(follow(self.clone(), request))
    }
}

async fn follow(
    svc: FollowingService,
    mut request: Request<kube::client::Body>,
) -> Result<Response<kube::client::Body>, BoxError> {
    if request.headers().contains_key(AUTHORIZATION) {
        return Ok(svc.backends.plain.send(request).await?);
    }
    let authorization = svc.credentials.authorization().await?;
    let used = authorization.credential;
    let client = svc.backends.client_for(authorization.identity.as_ref())?;
    let replay = replay_copy(&request);
    if let Some(value) = authorization.header {
        request.headers_mut().insert(AUTHORIZATION, value);
    }
    let response = client.send(request).await?;
    if response.status() != StatusCode::UNAUTHORIZED {
        return Ok(response);
    }
    let span = tracing::info_span!("exec_unauthorized", credential = used.get());
    async move {
        let refreshed = match svc.credentials.reauthorize(used).await {
            Ok(refreshed) => refreshed,
            Err(e) => {
                tracing::warn!(error = %e, "refreshing the exec credential after 401 failed");
                return Ok(response);
            }
        };
        if refreshed.credential == used {
            tracing::debug!("no newer exec credential: returning the 401");
            return Ok(response);
        }
        let Some(mut again) = replay else {
            tracing::debug!("request not replayable: returning the 401");
            return Ok(response);
        };
        drop(response);
        let client = svc.backends.client_for(refreshed.identity.as_ref())?;
        if let Some(value) = refreshed.header {
            again.headers_mut().insert(AUTHORIZATION, value);
        }
        tracing::info!(
            credential = refreshed.credential.get(),
            "retrying the request once with the refreshed exec credential"
        );
        Ok(client.send(again).await?)
    }
    .instrument(span)
    .await
}
