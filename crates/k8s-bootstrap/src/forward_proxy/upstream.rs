//! The forward proxy's side towards the add-on.
//!
//! Requests on an HTTP/1.1 connection come one at a time, so each client connection forwards
//! over one add-on connection of its own (a [`Link`]): opened at its first request, opened
//! again when the add-on closes it, closed with the client connection. A request is written
//! and its response read on the client connection's task (the response body as the client
//! reads it), so it crosses no other task, pool or lock shared with other connections. The
//! HTTP/1.1 framing is `addon_jwt::http1`'s: the request head written from the parsed request,
//! the response read by its strict, bounded decoder.

use std::collections::VecDeque;
use std::future::Future;
use std::io::IoSlice;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use http::header::{CONTENT_LENGTH, TRAILER};
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, Uri};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use tokio::io::AsyncWrite;
use tokio::net::TcpStream;
use tokio::time::Sleep;

use super::metrics::ProxyMetrics;
use crate::addon_jwt::http1::{
    Decoded, Http1Error, RequestBody, ResponseDecoder, encode_chunk, encode_last_chunk,
    encode_request_head,
};
use crate::sidecar::SharedSidecar;

/// How long opening a connection to the add-on may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a request sent with `Expect: 100-continue` waits for the add-on's go-ahead before
/// its body is sent anyway (as curl and Go's transport do).
const EXPECT_CONTINUE_WAIT: Duration = Duration::from_secs(1);
/// How much room a read from the add-on gets.
const READ_SIZE: usize = 16 * 1024;

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
    /// The sidecar in use, whose rule decides which trailer fields of a request go on.
    sidecar: SharedSidecar,
    /// The runtime the proxy was started on, whose blocking threads look names up: a
    /// connection thread's blocking threads run signature checks at the lowest priority.
    resolver: Option<tokio::runtime::Handle>,
    /// When a failed exchange was last logged at warn: an add-on that is down is said once
    /// every [`WARN_EVERY`], not once per request.
    last_warning: Mutex<Option<std::time::Instant>>,
}

/// How often, at most, an add-on failure is logged at warn (the others at debug; every one is
/// counted in `upstream_errors_total`).
const WARN_EVERY: Duration = Duration::from_secs(10);

impl Upstream {
    /// Forwards to `address` (host:port); `None` when it is not one.
    pub(crate) fn new(
        address: &str,
        lifetime: Duration,
        metrics: Arc<ProxyMetrics>,
        sidecar: SharedSidecar,
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
            sidecar,
            resolver: tokio::runtime::Handle::try_current().ok(),
            last_warning: Mutex::new(None),
        })
    }

    /// Whether a failure now is to be logged at warn (none was in the last [`WARN_EVERY`]).
    fn warning_due(&self) -> bool {
        let now = crate::clock::instant();
        let mut last = self
            .last_warning
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let due = last.is_none_or(|at| now.saturating_duration_since(at) >= WARN_EVERY);
        if due {
            *last = Some(now);
        }
        due
    }

    /// Sends `request` to the add-on over `link` and returns its response, whose body ends
    /// with an error when the request's lifetime is over; 502 when the add-on cannot be
    /// reached or fails, 504 when it does not answer within the lifetime.
    pub(crate) async fn forward(
        &self,
        link: &Arc<Link>,
        request: Request<Incoming>,
    ) -> Response<ProxyBody> {
        let mut deadline = Box::pin(tokio::time::sleep(self.lifetime));
        let answered = tokio::select! {
            biased;
            answered = self.exchange(link, request) => answered,
            () = deadline.as_mut() => {
                self.metrics.upstream_errors.inc();
                return status(StatusCode::GATEWAY_TIMEOUT);
            }
        };
        match answered {
            Ok((mut head, exchange)) => {
                // The trailer fields the add-on declares for a body of unknown length (chunked):
                // `Trailer` goes with the hop-by-hop headers below, but hyper sends a client
                // (one that asked with `TE: trailers`) only the trailer fields its response
                // declares, so the add-on's declaration is declared again.
                let declared: Vec<HeaderValue> = match &exchange {
                    Some(exchange) if exchange.decoder.remaining().is_none() => {
                        head.headers().get_all(TRAILER).iter().cloned().collect()
                    }
                    _ => Vec::new(),
                };
                // What concerns only the add-on's connection stays there: the client's
                // connection has its own (`Connection: close` from the add-on must not close
                // it), and hyper frames the body for the client itself.
                crate::addon_jwt::remove_hop_by_hop(head.headers_mut());
                for value in declared {
                    head.headers_mut().append(TRAILER, value);
                }
                // A bodiless response (`HEAD`, 204, 304) may carry the `Content-Length` of
                // what it stands for: hyper sends no body for it, and checks (in debug builds)
                // a body of known length against the header, so its length is left unknown.
                // A body still to come gives its length itself (`ProxyBody::size_hint`).
                let length_unknown =
                    exchange.is_none() && head.headers().contains_key(CONTENT_LENGTH);
                head.map(|()| ProxyBody {
                    upstream: exchange.map(|exchange| (exchange, deadline)),
                    length_unknown,
                })
            }
            Err(e) => {
                self.metrics.upstream_errors.inc();
                if self.warning_due() {
                    tracing::warn!(
                        addon = %self.address,
                        error = %e,
                        "forward-proxy: the add-on did not answer (logged at most every 10 s; \
                         k8s_bootstrap_forward_proxy_upstream_errors_total counts every failure)"
                    );
                } else {
                    tracing::debug!(addon = %self.address, error = %e, "forward-proxy: the add-on did not answer");
                }
                status(StatusCode::BAD_GATEWAY)
            }
        }
    }

    /// The request's head as the add-on gets it: the target in origin form (`/path?query`,
    /// also when the client sent an absolute URI) and a `Host`: an absolute URI's authority
    /// (which replaces the client's `Host`, RFC 9112 §3.2.2), else the client's, else the
    /// add-on's address.
    fn origin_form(&self, parts: &mut http::request::Parts) {
        if parts.uri.scheme().is_some() || parts.uri.authority().is_some() {
            if let Some(authority) = parts.uri.authority() {
                // Without any user information (`user@`), which is no part of a `Host`.
                let host = match authority.port() {
                    Some(port) => format!("{}:{}", authority.host(), port.as_str()),
                    None => authority.host().to_owned(),
                };
                if let Ok(host) = HeaderValue::from_str(&host) {
                    parts.headers.insert(http::header::HOST, host);
                }
            }
            let path = parts
                .uri
                .path_and_query()
                .filter(|p| p.as_str().starts_with('/'))
                .cloned()
                .unwrap_or_else(|| http::uri::PathAndQuery::from_static("/"));
            parts.uri = Uri::from(path);
        }
        // Not `entry`: it makes room for one more line first, which regrows a full map (about
        // a thousand instructions) although nearly every request has its `Host`.
        if !parts.headers.contains_key(http::header::HOST) {
            parts.headers.insert(http::header::HOST, self.host.clone());
        }
    }

    /// Sends one request and reads its response head; the exchange that reads the body, or
    /// `None` when there is none (the connection is then back on `link`). A request without a
    /// body and with an idempotent method, sent on a kept connection that the add-on closed
    /// before answering, is sent once more on a new connection.
    async fn exchange(
        &self,
        link: &Arc<Link>,
        request: Request<Incoming>,
    ) -> Result<(Response<()>, Option<Box<Exchange>>), BoxError> {
        let (mut parts, body) = request.into_parts();
        self.origin_form(&mut parts);
        let framing = if body.is_end_stream() && !parts.headers.contains_key(CONTENT_LENGTH) {
            RequestBody::None
        } else {
            match body.size_hint().exact() {
                Some(n) if parts.headers.contains_key(CONTENT_LENGTH) => RequestBody::Length(n),
                _ => RequestBody::Chunked,
            }
        };
        let head = || {
            let mut head = Vec::with_capacity(512);
            encode_request_head(
                &parts.method,
                parts.uri.path_and_query(),
                &parts.headers,
                framing,
                &mut head,
            );
            Bytes::from(head)
        };
        let expects_continue = parts
            .headers
            .get(http::header::EXPECT)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
        let bodiless = framing == RequestBody::None || framing == RequestBody::Length(0);
        let resendable = bodiless && parts.method.is_idempotent();
        // A chunked body's trailers go on only as the sidecar's rule allows.
        let trailer_rule = (framing == RequestBody::Chunked).then(|| self.sidecar.clone());
        let mut sending = Some(Sending::new(
            head(),
            (!bodiless).then_some(body),
            trailer_rule,
            expects_continue,
        ));
        loop {
            let (connection, kept) = match link.take() {
                Some(connection) => (connection, true),
                None => (self.connect().await?, false),
            };
            let mut exchange = Exchange {
                connection,
                decoder: ResponseDecoder::new(&parts.method),
                // A request sent again is encoded again (the first went with its bytes).
                sending: sending
                    .take()
                    .unwrap_or_else(|| Sending::new(head(), None, None, false)),
                link: link.clone(),
                eof: false,
            };
            match std::future::poll_fn(|cx| exchange.poll_head(cx)).await {
                Ok(response) => {
                    // No body (`HEAD`, 204, 304, `Content-Length: 0`): the connection is done
                    // with at once.
                    if exchange.is_complete() {
                        exchange.finish();
                        return Ok((response, None));
                    }
                    return Ok((response, Some(Box::new(exchange))));
                }
                Err(Failure::Closed) if kept && resendable => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Opens a connection to the add-on.
    async fn connect(&self) -> Result<AddonConnection, BoxError> {
        let connecting = async { TcpStream::connect(&*self.resolve().await?).await };
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, connecting)
            .await
            .map_err(|_| format!("connecting to {} timed out", self.address))??;
        let _ = stream.set_nodelay(true);
        Ok(AddonConnection {
            stream,
            read: BytesMut::with_capacity(READ_SIZE),
        })
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

/// The proxy's own answer to a request it does not forward: `CONNECT` (405: it tunnels
/// nothing) and a request with more than one `Host` line (400, RFC 9112 §3.2: the add-on
/// and the proxy could each read another one). Logged at debug only, as any client can send
/// these.
pub(super) fn refusal(request: &Request<Incoming>) -> Option<Response<ProxyBody>> {
    if request.method() == http::Method::CONNECT {
        tracing::debug!("forward-proxy: CONNECT refused (405)");
        let mut response = status(StatusCode::METHOD_NOT_ALLOWED);
        response.headers_mut().insert(
            http::header::ALLOW,
            HeaderValue::from_static("GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"),
        );
        return Some(response);
    }
    if request
        .headers()
        .get_all(http::header::HOST)
        .iter()
        .nth(1)
        .is_some()
    {
        tracing::debug!("forward-proxy: a request with several Host lines refused (400)");
        return Some(status(StatusCode::BAD_REQUEST));
    }
    None
}

/// A response with an empty body.
pub(super) fn status(code: StatusCode) -> Response<ProxyBody> {
    let mut response = Response::new(ProxyBody::default());
    *response.status_mut() = code;
    response
}

/// A connection to the add-on and what was read from it and not yet decoded.
struct AddonConnection {
    stream: TcpStream,
    read: BytesMut,
}

impl AddonConnection {
    /// Whether nothing is left to read: the buffer is empty and the socket holds no byte, no
    /// end and no error. Asks the kernel itself (one `recv` with `MSG_PEEK | MSG_DONTWAIT`
    /// of one byte, no allocation), since the runtime's readiness may not have seen bytes
    /// that arrived since it last polled. When the runtime still holds the socket readable
    /// (the last read was not refused), the same `recv` goes through it, so its answer of
    /// nothing to read also clears that readiness and the next read waits for the kernel's
    /// word instead of making a call of its own that would be refused: one call per reuse.
    fn is_silent(&self) -> bool {
        use rustix::net::RecvFlags;
        if !self.read.is_empty() {
            return false;
        }
        let peek = || {
            let mut byte = [0u8; 1];
            rustix::net::recv(
                &self.stream,
                &mut byte[..],
                RecvFlags::PEEK | RecvFlags::DONTWAIT,
            )
            .map_err(std::io::Error::from)
        };
        let mut asked = false;
        let through_runtime = self.stream.try_io(tokio::io::Interest::READABLE, || {
            asked = true;
            peek()
        });
        let answer = if asked { through_runtime } else { peek() };
        matches!(answer, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
    }

    /// Reads what the add-on sent into the buffer; `Ok(0)` at the end of the connection.
    /// Through `AsyncRead`, so a read that leaves room in the buffer also clears the runtime's
    /// readiness: the next read (and the kept connection's watch) waits for the kernel's word
    /// instead of making a call that would be refused.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<usize>> {
        if self.read.capacity().saturating_sub(self.read.len()) < READ_SIZE / 4 {
            self.read.reserve(READ_SIZE);
        }
        tokio_util::io::poll_read_buf(Pin::new(&mut self.stream), cx, &mut self.read)
    }
}

/// Why an exchange failed.
#[derive(Debug, thiserror::Error)]
enum Failure {
    /// The add-on closed the connection (or reset it) before any byte of a response.
    #[error("the add-on closed the connection before answering")]
    Closed,
    #[error("reading the add-on's response: {0}")]
    Read(#[source] std::io::Error),
    #[error("the add-on's response: {0}")]
    Response(#[source] Http1Error),
    #[error("the client's request body: {0}")]
    RequestBody(#[source] hyper::Error),
}

/// What is left to send of a request: its head, bytes of the body queued for the connection,
/// then the rest of the body, pulled from the client as the connection takes it.
struct Sending {
    /// The head's bytes not yet written (a field of its own: a bodiless request queues nothing).
    head: Bytes,
    queue: VecDeque<Bytes>,
    body: Option<Incoming>,
    /// The body is chunked: its trailer fields go on as this sidecar's rule
    /// ([`addon_jwt::Sidecar::decide_trailers`](crate::addon_jwt::Sidecar::decide_trailers))
    /// allows, never an identity, framing or routing field.
    chunked: Option<SharedSidecar>,
    /// `Expect: 100-continue`: the body waits for the add-on's 100 or this timer.
    waiting: Option<Pin<Box<Sleep>>>,
    trailers: Option<HeaderMap>,
    /// A write failed: nothing more is sent, what the add-on answered is still read.
    failed: bool,
}

impl Sending {
    fn new(
        head: Bytes,
        body: Option<Incoming>,
        chunked: Option<SharedSidecar>,
        expects_continue: bool,
    ) -> Sending {
        Sending {
            head,
            queue: VecDeque::new(),
            waiting: (expects_continue && body.is_some())
                .then(|| Box::pin(tokio::time::sleep(EXPECT_CONTINUE_WAIT))),
            body,
            chunked,
            trailers: None,
            failed: false,
        }
    }

    /// Whether the whole request went out.
    fn is_sent(&self) -> bool {
        !self.failed && self.head.is_empty() && self.queue.is_empty() && self.body.is_none()
    }

    /// Sends what can be sent now; ready when everything is sent or a write failed. An error
    /// only when the client's body fails.
    fn poll_send(
        &mut self,
        cx: &mut Context<'_>,
        stream: &mut TcpStream,
    ) -> Poll<Result<(), hyper::Error>> {
        if self.failed {
            return Poll::Ready(Ok(()));
        }
        loop {
            while !self.head.is_empty() || !self.queue.is_empty() {
                let mut slices = [IoSlice::new(&[]); 8];
                let pending = std::iter::once(&self.head)
                    .filter(|head| !head.is_empty())
                    .chain(&self.queue);
                let mut filled = 0;
                for (i, (slice, bytes)) in slices.iter_mut().zip(pending).enumerate() {
                    *slice = IoSlice::new(bytes);
                    filled = i.saturating_add(1);
                }
                let slices = slices.get(..filled).unwrap_or_default();
                let written = match ready!(Pin::new(&mut *stream).poll_write_vectored(cx, slices)) {
                    Ok(0) | Err(_) => {
                        self.failed = true;
                        return Poll::Ready(Ok(()));
                    }
                    Ok(written) => written,
                };
                let from_head = written.min(self.head.len());
                self.head.advance(from_head);
                let mut left = written.saturating_sub(from_head);
                while left > 0 {
                    let Some(front) = self.queue.front_mut() else {
                        break;
                    };
                    if front.len() > left {
                        front.advance(left);
                        left = 0;
                    } else {
                        left = left.saturating_sub(front.len());
                        self.queue.pop_front();
                    }
                }
            }
            let Some(body) = self.body.as_mut() else {
                return Poll::Ready(Ok(()));
            };
            if let Some(waiting) = self.waiting.as_mut() {
                ready!(waiting.as_mut().poll(cx));
                self.waiting = None;
            }
            match ready!(Pin::new(body).poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) if data.is_empty() => {}
                    Ok(data) => {
                        if self.chunked.is_some() {
                            let mut line = Vec::with_capacity(18);
                            encode_chunk(data.len(), &mut line);
                            self.queue.push_back(line.into());
                            self.queue.push_back(data);
                            self.queue.push_back(Bytes::from_static(b"\r\n"));
                        } else {
                            self.queue.push_back(data);
                        }
                    }
                    Err(frame) => {
                        // Only a chunked body carries trailers, and only the fields a header
                        // line of the name would keep (and RFC 9110 allows in trailers).
                        if let (Ok(mut trailers), Some(rule)) =
                            (frame.into_trailers(), self.chunked.as_ref())
                        {
                            rule.current().decide_trailers(&mut trailers);
                            self.trailers = (!trailers.is_empty()).then_some(trailers);
                        }
                    }
                },
                Some(Err(e)) => return Poll::Ready(Err(e)),
                None => {
                    self.body = None;
                    if self.chunked.is_some() {
                        let mut end = Vec::new();
                        encode_last_chunk(self.trailers.take().as_ref(), &mut end);
                        self.queue.push_back(end.into());
                    }
                }
            }
        }
    }
}

/// One request on an add-on connection: sent as the connection takes it, its response read
/// as the client reads it.
pub(crate) struct Exchange {
    connection: AddonConnection,
    decoder: ResponseDecoder,
    sending: Sending,
    link: Arc<Link>,
    /// The add-on ended the connection.
    eof: bool,
}

impl Exchange {
    /// Sends while the connection takes it; an error only when the client's body fails.
    fn poll_send(&mut self, cx: &mut Context<'_>) -> Result<(), Failure> {
        match self.sending.poll_send(cx, &mut self.connection.stream) {
            Poll::Ready(Err(e)) => Err(Failure::RequestBody(e)),
            _ => Ok(()),
        }
    }

    /// The next part of the response: what the buffer holds, else what the add-on sends.
    fn poll_decoded(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Decoded>, Failure>> {
        loop {
            let decoded = if self.eof {
                self.decoder.decode_eof(&mut self.connection.read)
            } else {
                self.decoder.decode(&mut self.connection.read)
            };
            match decoded {
                Ok(None) if !self.eof => {}
                Ok(decoded) => return Poll::Ready(Ok(decoded)),
                Err(Http1Error::ClosedBeforeResponse) => return Poll::Ready(Err(Failure::Closed)),
                Err(e) => return Poll::Ready(Err(Failure::Response(e))),
            }
            match ready!(self.connection.poll_fill(cx)) {
                Ok(0) => self.eof = true,
                Ok(_) => {}
                // A reset before any byte of a response is read as a close before it (the
                // decoder tells which); within one, it is the error.
                Err(_) if self.connection.read.is_empty() && self.decoder.awaits_first_byte() => {
                    self.eof = true;
                }
                Err(e) => return Poll::Ready(Err(Failure::Read(e))),
            }
        }
    }

    /// Sends the request and reads up to the final response's head.
    fn poll_head(&mut self, cx: &mut Context<'_>) -> Poll<Result<Response<()>, Failure>> {
        loop {
            self.poll_send(cx)?;
            match ready!(self.poll_decoded(cx))? {
                Some(Decoded::Head(head)) => return Poll::Ready(Ok(head)),
                Some(Decoded::Informational(code)) => {
                    if code == StatusCode::CONTINUE {
                        self.sending.waiting = None;
                    }
                }
                Some(_) | None => {
                    return Poll::Ready(Err(Failure::Response(Http1Error::ClosedWithinResponse)));
                }
            }
        }
    }

    /// Whether nothing of the response is left to read (no body, or its last byte or its
    /// trailers handed on): the exchange can be finished before the client asks for the end.
    fn is_complete(&self) -> bool {
        self.decoder.remaining() == Some(0)
    }

    /// Gives the connection back to the link when the request went out whole, the response
    /// ended and the add-on keeps the connection; otherwise closes it. Called once the
    /// response is complete ([`Exchange::is_complete`]) or has ended.
    fn finish(mut self) {
        // Takes the decoder's `End` if it is still to come, so the decoder reads the
        // connection as ready for the next response.
        let _ = self.decoder.decode(&mut self.connection.read);
        if self.sending.is_sent()
            && self.decoder.is_reusable()
            && self.connection.read.is_empty()
            && !self.eof
        {
            self.link.put_back(self.connection);
        }
    }
}

/// One client connection's connection to the add-on, kept between requests.
#[derive(Default)]
pub(crate) struct Link {
    idle: Mutex<Option<AddonConnection>>,
}

impl Link {
    /// Watches the kept connection, if there is one, on the client connection's task: one the
    /// add-on closes (or sends anything on unasked) is dropped.
    fn poll_idle(&self, cx: &mut Context<'_>) {
        let mut idle = self.lock();
        let Some(connection) = idle.as_mut() else {
            return;
        };
        // Anything but silence (bytes, the end, an error) makes the connection unusable.
        if connection.poll_fill(cx).is_pending() {
            return;
        }
        tracing::debug!("forward-proxy: the add-on closed a kept connection");
        *idle = None;
    }

    /// Polls `served` (the client connection) with the kept add-on connection watched before
    /// and after it on the same task.
    pub(crate) fn poll_beside<F: Future>(
        &self,
        served: Pin<&mut F>,
        cx: &mut Context<'_>,
    ) -> Poll<F::Output> {
        self.poll_idle(cx);
        let polled = served.poll(cx);
        self.poll_idle(cx);
        polled
    }

    /// The kept connection, if there is one and nothing at all is left to read from it. A
    /// pipelined request takes it in the same poll that finished the response before, before
    /// [`Link::poll_idle`] could see what the add-on sent since: bytes sent behind a response
    /// (or a body after `HEAD`, 204, 304) would be read as this request's response.
    fn take(&self) -> Option<AddonConnection> {
        let connection = self.lock().take()?;
        if connection.is_silent() {
            return Some(connection);
        }
        tracing::debug!("forward-proxy: a kept connection had more to read, not reused");
        None
    }

    fn put_back(&self, connection: AddonConnection) {
        *self.lock() = Some(connection);
    }

    fn lock(&self) -> MutexGuard<'_, Option<AddonConnection>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A forwarded response's body: the add-on's, read as the client takes it (with the rest of
/// the request sent meanwhile), cut with an error once the request's lifetime is over, so no
/// response (a watch, a long download) outlives it. Empty for the proxy's own answers (403,
/// 502, 504) and for responses without a body.
#[derive(Default)]
pub(crate) struct ProxyBody {
    /// The exchange and the request's deadline; `None` when empty or ended.
    upstream: Option<(Box<Exchange>, Pin<Box<Sleep>>)>,
    /// An empty body's length is not given as 0 (see [`Upstream::forward`]).
    length_unknown: bool,
}

impl ProxyBody {
    /// Ends the body: the connection goes back to the link if it can carry another request.
    fn finish(&mut self) {
        if let Some((exchange, _)) = self.upstream.take() {
            exchange.finish();
        }
    }
}

impl Body for ProxyBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let Some((exchange, deadline)) = self.upstream.as_mut() else {
            return Poll::Ready(None);
        };
        if deadline.as_mut().poll(cx).is_ready() {
            self.upstream = None;
            return Poll::Ready(Some(Err("request lifetime exceeded".into())));
        }
        let decoded = match exchange.poll_send(cx) {
            Ok(()) => ready!(exchange.poll_decoded(cx)),
            Err(e) => Err(e),
        };
        let frame = match decoded {
            Ok(Some(Decoded::Data(data))) => Frame::data(data),
            // Trailers end the body (hyper asks for nothing after them).
            Ok(Some(Decoded::Trailers(trailers))) => Frame::trailers(trailers),
            Ok(Some(Decoded::End) | None) => {
                self.finish();
                return Poll::Ready(None);
            }
            Ok(Some(_)) => {
                self.upstream = None;
                return Poll::Ready(Some(Err("unexpected response part".into())));
            }
            Err(e) => {
                self.upstream = None;
                return Poll::Ready(Some(Err(e.into())));
            }
        };
        // The last bytes of a body of known length, or the trailers: the connection goes back
        // before the client asks for the end.
        if exchange.is_complete() {
            self.finish();
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.upstream.is_none() && !self.length_unknown
    }

    fn size_hint(&self) -> SizeHint {
        match &self.upstream {
            None if self.length_unknown => SizeHint::default(),
            None => SizeHint::with_exact(0),
            Some((exchange, _)) => exchange
                .decoder
                .remaining()
                .map_or_else(SizeHint::default, SizeHint::with_exact),
        }
    }
}
