//! The forward proxy's side towards the add-on.
//!
//! Requests on an HTTP/1.1 connection come one at a time, so each client connection forwards
//! over one add-on connection of its own (a [`Link`]): opened at its first request, opened
//! again when the add-on closes it, closed with the client connection. The client
//! connection's task drives both connections ([`Link::poll_beside`]), so a request crosses
//! no other task, pool or lock shared with other connections.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode, Uri};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::client::conn::http1::{Connection, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::time::Sleep;

use super::ProxyMetrics;

/// How long opening a connection to the add-on may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Where requests are forwarded, and how long each may take; shared by every client
/// connection.
pub(crate) struct Upstream {
    /// `--forward`: host:port.
    address: String,
    /// The same, as the `Host` of a request that has none (HTTP/1.0).
    host: HeaderValue,
    lifetime: Duration,
    metrics: Arc<ProxyMetrics>,
    /// The runtime the proxy was started on, whose blocking threads look names up: a
    /// connection thread's blocking threads run signature checks at the lowest priority.
    resolver: Option<tokio::runtime::Handle>,
}

impl Upstream {
    /// Forwards to `address` (host:port); `None` when it is not one.
    pub(crate) fn new(
        address: &str,
        lifetime: Duration,
        metrics: Arc<ProxyMetrics>,
    ) -> Option<Upstream> {
        let authority: http::uri::Authority = address.parse().ok()?;
        if authority.port_u16().is_none() || authority.as_str().contains('@') {
            return None;
        }
        Some(Upstream {
            address: address.to_owned(),
            host: HeaderValue::from_str(authority.as_str()).ok()?,
            lifetime,
            metrics,
            resolver: tokio::runtime::Handle::try_current().ok(),
        })
    }

    /// Sends `request` to the add-on over `link` and returns its response, whose body ends
    /// with an error when the request's lifetime is over; 502 when the add-on cannot be
    /// reached or fails, 504 when it does not answer within the lifetime.
    pub(crate) async fn forward(
        &self,
        link: &Link,
        request: Request<Incoming>,
    ) -> Response<ProxyBody> {
        let mut deadline = Box::pin(tokio::time::sleep(self.lifetime));
        let request = self.origin_form(request);
        let answered = tokio::select! {
            biased;
            answered = self.exchange(link, request) => answered,
            () = deadline.as_mut() => {
                self.metrics.upstream_errors.inc();
                return status(StatusCode::GATEWAY_TIMEOUT);
            }
        };
        match answered {
            Ok(mut response) => {
                // What concerns only the add-on's connection stays there: the client's
                // connection has its own (`Connection: close` from the add-on must not close
                // it), and hyper frames the body for the client itself.
                crate::addon_jwt::remove_hop_by_hop(response.headers_mut());
                response.map(|body| ProxyBody {
                    upstream: Some((body, deadline)),
                })
            }
            Err(e) => {
                self.metrics.upstream_errors.inc();
                tracing::warn!(error = %e, "forward-proxy: the add-on did not answer");
                status(StatusCode::BAD_GATEWAY)
            }
        }
    }

    /// The request as the add-on gets it: the target in origin form (`/path?query`, also when
    /// the client sent an absolute URI) and a `Host` (the client's, else the add-on's
    /// address).
    fn origin_form(&self, request: Request<Incoming>) -> Request<Incoming> {
        let (mut parts, body) = request.into_parts();
        if parts.uri.scheme().is_some() || parts.uri.authority().is_some() {
            let path = parts
                .uri
                .path_and_query()
                .filter(|p| p.as_str().starts_with('/'))
                .cloned()
                .unwrap_or_else(|| http::uri::PathAndQuery::from_static("/"));
            parts.uri = Uri::from(path);
        }
        parts
            .headers
            .entry(http::header::HOST)
            .or_insert_with(|| self.host.clone());
        Request::from_parts(parts, body)
    }

    /// One request and its response head. A request offered to a kept connection that the
    /// add-on closed meanwhile comes back unsent, and goes once more over a new connection.
    async fn exchange(
        &self,
        link: &Link,
        mut request: Request<Incoming>,
    ) -> Result<Response<Incoming>, BoxError> {
        loop {
            let (mut sender, kept) = match link.take_ready().await {
                Some(sender) => (sender, true),
                None => (self.connect(link).await?, false),
            };
            match sender.try_send_request(request).await {
                Ok(response) => {
                    link.put_back(sender);
                    return Ok(response);
                }
                Err(mut e) => match e.take_message() {
                    Some(unsent) if kept => request = unsent,
                    _ => return Err(e.into_error().into()),
                },
            }
        }
    }

    /// Opens a connection to the add-on and gives it to `link` to drive.
    async fn connect(&self, link: &Link) -> Result<SendRequest<Incoming>, BoxError> {
        let connecting = async { TcpStream::connect(&*self.resolve().await?).await };
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, connecting)
            .await
            .map_err(|_| format!("connecting to {} timed out", self.address))??;
        let _ = stream.set_nodelay(true);
        let (sender, connection) = hyper::client::conn::http1::Builder::new()
            .handshake(TokioIo::new(stream))
            .await?;
        link.install(connection);
        Ok(sender)
    }

    /// The add-on's addresses: the address itself, or what the name resolves to (as
    /// `TcpStream::connect` would), looked up on a blocking thread of [`Upstream::resolver`].
    async fn resolve(&self) -> std::io::Result<Vec<std::net::SocketAddr>> {
        if let Ok(address) = self.address.parse() {
            return Ok(vec![address]);
        }
        let address = self.address.clone();
        let lookup = move || std::net::ToSocketAddrs::to_socket_addrs(&address).map(Vec::from_iter);
        let looked_up = match &self.resolver {
            Some(runtime) => runtime.spawn_blocking(lookup),
            None => tokio::task::spawn_blocking(lookup),
        };
        looked_up.await.map_err(std::io::Error::other)?
    }
}

/// A response with an empty body.
fn status(code: StatusCode) -> Response<ProxyBody> {
    let mut response = Response::new(ProxyBody::default());
    *response.status_mut() = code;
    response
}

/// One client connection's connection to the add-on.
#[derive(Default)]
pub(crate) struct Link {
    state: Mutex<LinkState>,
}

type AddonConnection = Connection<TokioIo<TcpStream>, Incoming>;

#[derive(Default)]
struct LinkState {
    /// Taken by the request in flight, put back when its response head arrives.
    sender: Option<SendRequest<Incoming>>,
    connection: Option<Pin<Box<AddonConnection>>>,
    /// The task that drives the link, woken when a new connection is installed.
    waker: Option<Waker>,
}

impl Link {
    /// Drives the add-on connection, if there is one, on the client connection's task.
    fn poll_connection(&self, cx: &mut Context<'_>) {
        let mut state = self.lock();
        if !state
            .waker
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            state.waker = Some(cx.waker().clone());
        }
        if let Some(connection) = state.connection.as_mut()
            && let Poll::Ready(ended) = connection.as_mut().poll(cx)
        {
            if let Err(e) = ended {
                tracing::debug!(error = %e, "forward-proxy: add-on connection ended");
            }
            state.connection = None;
            state.sender = None;
        }
    }

    /// Polls `served` (the client connection) with the add-on connection driven before and
    /// after it on the same task, so a request the client connection just queued is written
    /// at once.
    pub(crate) fn poll_beside<F: Future>(
        &self,
        served: Pin<&mut F>,
        cx: &mut Context<'_>,
    ) -> Poll<F::Output> {
        self.poll_connection(cx);
        let polled = served.poll(cx);
        self.poll_connection(cx);
        polled
    }

    /// The kept connection's sender once it can take a request; `None` when there is none or
    /// the add-on closed it.
    async fn take_ready(&self) -> Option<SendRequest<Incoming>> {
        let mut sender = self.lock().sender.take()?;
        sender.ready().await.ok()?;
        Some(sender)
    }

    fn put_back(&self, sender: SendRequest<Incoming>) {
        self.lock().sender = Some(sender);
    }

    /// Replaces the connection (an old one is closed) and has the driving task poll the new
    /// one.
    fn install(&self, connection: AddonConnection) {
        let mut state = self.lock();
        state.connection = Some(Box::pin(connection));
        if let Some(waker) = &state.waker {
            waker.wake_by_ref();
        }
    }

    fn lock(&self) -> MutexGuard<'_, LinkState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A forwarded response's body: the add-on's, cut with an error once the request's lifetime
/// is over, so no response (a watch, a long download) outlives it. Empty for the proxy's own
/// answers (403, 502, 504).
#[derive(Default)]
pub(crate) struct ProxyBody {
    /// The add-on's body and the request's deadline; `None` when empty or ended.
    upstream: Option<(Incoming, Pin<Box<Sleep>>)>,
}

impl Body for ProxyBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let Some((inner, deadline)) = self.upstream.as_mut() else {
            return Poll::Ready(None);
        };
        if deadline.as_mut().poll(cx).is_ready() {
            self.upstream = None;
            return Poll::Ready(Some(Err("request lifetime exceeded".into())));
        }
        Pin::new(inner).poll_frame(cx).map_err(BoxError::from)
    }

    fn is_end_stream(&self) -> bool {
        self.upstream
            .as_ref()
            .is_none_or(|(inner, _)| inner.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        self.upstream
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), |(inner, _)| inner.size_hint())
    }
}
