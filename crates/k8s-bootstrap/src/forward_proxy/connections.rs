//! The client connections: accepted (on the caller's runtime or on threads of their own,
//! balanced between them), each served beside its add-on connection.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http::Request;
use http_body_util::Either;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::watch;
use tower::Layer as _;

use crate::accept::{Acceptor, ConnectionPermit};
use crate::delegated::{DelegatedAuthLayer, VerifiedUser};
use crate::sidecar::SidecarLayer;

#[cfg(doc)]
use super::Config;
use super::Error;
use super::authentication::Handover;
use super::metrics::ProxyMetrics;
use super::upstream::{Link, Upstream, refusal, status};
use crate::tls_serving::{Handshake, Stream};

/// What decides whether a request goes on to the add-on.
#[derive(Clone)]
pub(super) enum Guard {
    /// The add-on JWT sidecar.
    Jwt(SidecarLayer),
    /// The delegated layer, and what a request it lets through gets before the add-on.
    Delegated {
        layer: DelegatedAuthLayer,
        handover: Arc<Handover>,
        metrics: Arc<ProxyMetrics>,
    },
}

/// What every client connection shares: the guard in front, the add-on behind.
pub(super) struct Connections {
    pub(super) guard: Guard,
    pub(super) upstream: Arc<Upstream>,
    pub(super) max_connection_duration: Duration,
    /// How long the connections may take to finish after the shutdown.
    pub(super) grace: Duration,
    /// The TLS handshake, unless plain HTTP is served.
    pub(super) tls: Option<Handshake>,
    /// The most blocking threads each connection thread's runtime keeps for the signature
    /// checks sent aside: as many as may run at once. Without the bound the pool grew to a
    /// score of threads under a forged-token flood (a check frees its slot before its thread
    /// is idle again, so the next check found no idle thread and started one), each living
    /// 10 s after its last check, and the threads' coming and going grew resident memory.
    pub(super) check_threads: NonZeroUsize,
}

impl Connections {
    /// Accepts and serves connections on the current runtime until `stop` turns true, then
    /// lets the open ones finish their requests (within the grace period).
    /// With `turn` (thread `i` of a [`Balance`]), it accepts only while no other thread
    /// serves fewer connections.
    pub(super) async fn accept_until_stopped(
        &self,
        acceptor: &Acceptor,
        stop: watch::Receiver<bool>,
        turn: Option<(&Arc<Balance>, usize)>,
    ) {
        let mut open = tokio::task::JoinSet::new();
        let mut shutdown = std::pin::pin!(stopped(stop.clone()));
        loop {
            let accepted = async {
                if let Some((balance, i)) = turn {
                    balance.wait_turn(i).await;
                }
                acceptor.accept().await
            };
            let (stream, peer, permit) = tokio::select! {
                accepted = accepted => accepted,
                () = &mut shutdown => break,
            };
            let counted = turn.map(|(balance, i)| balance.opened(i));
            let served = self.serve(stream, peer, permit, stopped(stop.clone()));
            open.spawn(async move {
                served.await;
                drop(counted);
            });
            // Reap finished connections.
            while open.try_join_next().is_some() {}
        }
        // Stop accepting, let the connections finish their requests.
        let _ = tokio::time::timeout(self.grace, async {
            while open.join_next().await.is_some() {}
        })
        .await;
    }

    /// Serves one client connection (and its add-on connection) until it closes, its
    /// lifetime is over or `stop` completes; the request in flight then finishes first. With
    /// TLS, its handshake comes first (within its timeout; a failed one closes the
    /// connection), and the client's verified certificates go into each request's extensions.
    fn serve(
        &self,
        stream: tokio::net::TcpStream,
        peer: SocketAddr,
        permit: ConnectionPermit,
        stop: impl Future<Output = ()> + Send + 'static,
    ) -> impl Future<Output = ()> + Send + 'static {
        let _ = stream.set_nodelay(true);
        let guard = self.guard.clone();
        let (upstream, tls) = (self.upstream.clone(), self.tls.clone());
        let lifetime = self.max_connection_duration;
        let mut builder = hyper::server::conn::http1::Builder::new();
        // hyper's default of at most 100 header lines (as Envoy's) keeps its parse on the
        // stack; more is answered 431.
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(Duration::from_secs(10))
            .max_buf_size(MAX_HEADER_BUFFER);
        async move {
            let _permit = permit;
            let limit = tokio::time::sleep(lifetime);
            let mut limit = std::pin::pin!(limit);
            let mut stop = std::pin::pin!(stop);
            // The TLS handshake first (within its timeout), before any byte is read as HTTP.
            let (stream, certificates) = match tls {
                None => (Stream::Plain(stream), None),
                Some(tls) => {
                    let handshake = tls.accept(stream, peer);
                    let done = tokio::select! {
                        done = handshake => done,
                        () = &mut stop => return,
                        () = &mut limit => return,
                    };
                    let Some(done) = done else { return };
                    done
                }
            };
            let link = Arc::new(Link::default());
            let forward = {
                let link = link.clone();
                move |request: Request<Incoming>| {
                    let upstream = upstream.clone();
                    let link = link.clone();
                    async move { Ok::<_, Infallible>(upstream.forward(&link, request).await) }
                }
            };
            let conn = Connection {
                builder,
                peer,
                link,
                certificates,
            };
            match guard {
                Guard::Jwt(layer) => {
                    let checked = layer.layer(tower::service_fn(forward));
                    conn.serve(stream, checked, stop, limit).await;
                }
                Guard::Delegated {
                    layer,
                    handover,
                    metrics,
                } => {
                    // What the layer let through: the client's identity headers out, the
                    // verified user's in, then the add-on.
                    let handed = tower::service_fn(move |mut request: Request<Incoming>| {
                        let user = request.extensions().get::<VerifiedUser>().cloned();
                        let handed = handover.apply(request.headers_mut(), user.as_deref());
                        let forward = handed.is_ok().then(|| forward(request));
                        let metrics = metrics.clone();
                        async move {
                            let Some(forward) = forward else {
                                tracing::debug!(
                                    "forward-proxy: the user's name or groups cannot be a header value (403)"
                                );
                                return Ok(status(http::StatusCode::FORBIDDEN));
                            };
                            metrics.forwarded.inc();
                            forward.await
                        }
                    });
                    let checked = layer.layer(handed);
                    conn.serve(stream, checked, stop, limit).await;
                }
            }
        }
    }

    /// Accepts and serves connections on `threads` threads of their own, each running a
    /// single-threaded runtime that accepts from the shared listener, until `stop` turns
    /// true and each thread's connections have finished; an error when a thread cannot start
    /// (the ones started are stopped first).
    pub(super) async fn on_threads(
        self: &Arc<Self>,
        threads: NonZeroUsize,
        acceptor: Acceptor,
        stop: watch::Receiver<bool>,
    ) -> Result<(), Error> {
        let shared = Arc::new(acceptor.into_shared().map_err(Error::Threads)?);
        let balance = Arc::new(Balance::new(threads.get()));
        // A failed start stops the threads already running, as a shutdown would, and so does
        // dropping this future (which drops `abort_tx`).
        let (abort_tx, abort_rx) = watch::channel(false);
        let both = {
            let (mut stop, mut abort) = (stop, abort_rx);
            let (tx, rx) = watch::channel(false);
            tokio::spawn(async move {
                tokio::select! {
                    _ = stop.wait_for(|s| *s) => {}
                    _ = abort.wait_for(|s| *s) => {}
                }
                let _ = tx.send(true);
            });
            rx
        };
        // The caller's tracing subscriber, for the threads' log lines too.
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        let mut handles = Vec::with_capacity(threads.get());
        let mut failed = None;
        for i in 0..threads.get() {
            let (started_tx, started) = tokio::sync::oneshot::channel();
            let (connections, shared, stop) = (self.clone(), shared.clone(), both.clone());
            let balance = balance.clone();
            let dispatch = dispatch.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("forward-proxy-{i}"))
                .spawn(move || {
                    let _log = tracing::dispatcher::set_default(&dispatch);
                    // Its blocking threads run the signature checks sent aside while known
                    // callers are served (`checks_on_blocking_threads`), and nothing else.
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .max_blocking_threads(connections.check_threads.get())
                        .thread_name(format!("proxy-check-{i}"))
                        .on_thread_start(lower_priority)
                        .build();
                    let started = runtime.and_then(|runtime| {
                        let acceptor = runtime.block_on(async { shared.acceptor() })?;
                        Ok((runtime, acceptor))
                    });
                    let (runtime, acceptor) = match started {
                        Ok(ready) => {
                            let _ = started_tx.send(Ok(()));
                            ready
                        }
                        Err(e) => {
                            let _ = started_tx.send(Err(e));
                            return;
                        }
                    };
                    runtime.block_on(connections.accept_until_stopped(
                        &acceptor,
                        stop,
                        Some((&balance, i)),
                    ));
                    // Connections past their grace period end with the runtime.
                    drop(acceptor);
                    drop(runtime);
                });
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
            match started.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    failed = Some(e);
                    break;
                }
                Err(_) => {
                    failed = Some(std::io::Error::other("the thread ended before serving"));
                    break;
                }
            }
        }
        if failed.is_some() {
            let _ = abort_tx.send(true);
        }
        // Each thread ends once its connections have (or its grace period is over), and is
        // joined, so none outlives `serve`.
        let _ = tokio::task::spawn_blocking(move || {
            for handle in handles {
                if handle.join().is_err() {
                    tracing::error!("forward-proxy: a connection thread panicked");
                }
            }
        })
        .await;
        failed.map_or(Ok(()), |e| Err(Error::Threads(e)))
    }
}

/// One client connection, its TLS handshake done, about to be served.
struct Connection {
    builder: hyper::server::conn::http1::Builder,
    peer: SocketAddr,
    link: Arc<Link>,
    certificates: Option<super::ClientCertificates>,
}

impl Connection {
    /// Serves requests through `checked` (the guard around the add-on) until the client
    /// closes, or `stop` or `limit` completes; the request in flight then finishes first.
    async fn serve<S, B>(
        self,
        stream: Stream,
        checked: S,
        mut stop: Pin<&mut impl Future<Output = ()>>,
        mut limit: Pin<&mut tokio::time::Sleep>,
    ) where
        S: tower::Service<Request<Incoming>, Response = http::Response<B>, Error = Infallible>
            + Clone
            + Send
            + 'static,
        S::Future: Send + 'static,
        B: hyper::body::Body<Data = bytes::Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let Connection {
            builder,
            peer,
            link,
            certificates,
        } = self;
        // A request the proxy refuses whoever sends it (`CONNECT`, two `Host` lines) is
        // answered before the token is looked at, as nginx and HAProxy answer it.
        let service = hyper_util::service::TowerToHyperService::new(tower::service_fn(
            move |mut request: Request<Incoming>| {
                let refused = refusal(&request);
                if let Some(certificates) = &certificates {
                    request.extensions_mut().insert(certificates.clone());
                }
                let checked = checked.clone();
                async move {
                    match refused {
                        Some(refused) => Ok(refused.map(Either::Left)),
                        None => tower::ServiceExt::oneshot(checked, request)
                            .await
                            .map(|r| r.map(Either::Right)),
                    }
                }
            },
        ));
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        let mut connection = std::pin::pin!(connection);
        // The client connection and its add-on connection, driven together.
        let mut both = std::future::poll_fn(|cx| link.poll_beside(connection.as_mut(), cx));
        tokio::select! {
            result = &mut both => {
                if let Err(e) = result {
                    tracing::debug!(%peer, error = %e, "forward-proxy: connection ended");
                }
                return;
            }
            () = stop.as_mut() => {}
            () = limit.as_mut() => {}
        }
        // Finish the request in flight, then close; a request that does not finish
        // within its own timeout is cut by its deadline.
        connection.as_mut().graceful_shutdown();
        let _ = std::future::poll_fn(|cx| link.poll_beside(connection.as_mut(), cx)).await;
    }
}

/// Gives the calling thread the lowest priority, nice 19: it checks signatures while known
/// callers are served, so under a flood of new or forged tokens the operating system runs the
/// connection threads (the known callers' requests) first and the checks on what is left. On
/// Linux the nice value is per thread; elsewhere it would apply to the whole process, so
/// nothing is changed there.
fn lower_priority() {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if let Err(e) = rustix::process::setpriority_process(Some(rustix::thread::gettid()), 19) {
        tracing::debug!(error = %e, "forward-proxy: the check thread keeps its priority");
    }
}

/// The connections each connection thread serves. Every thread is woken by a new connection
/// and the first to call `accept` takes it (a thread woken first would take a whole burst, all
/// of a client's connections), so a thread accepts only while no other serves fewer.
pub(super) struct Balance {
    open: Vec<AtomicUsize>,
    /// Notified when a count changes.
    changed: tokio::sync::Notify,
}

/// One connection counted on its thread until dropped.
struct Counted {
    balance: Arc<Balance>,
    thread: usize,
}

impl Balance {
    fn new(threads: usize) -> Balance {
        Balance {
            open: (0..threads).map(|_| AtomicUsize::new(0)).collect(),
            changed: tokio::sync::Notify::new(),
        }
    }

    fn serving(&self, thread: usize) -> usize {
        self.open
            .get(thread)
            .map_or(0, |open| open.load(Ordering::Relaxed))
    }

    /// Completes once no thread serves fewer connections than `thread`.
    async fn wait_turn(&self, thread: usize) {
        loop {
            let changed = self.changed.notified();
            let mut changed = std::pin::pin!(changed);
            changed.as_mut().enable();
            let mine = self.serving(thread);
            if self.open.iter().all(|o| o.load(Ordering::Relaxed) >= mine) {
                return;
            }
            changed.await;
        }
    }

    fn opened(self: &Arc<Self>, thread: usize) -> Counted {
        if let Some(open) = self.open.get(thread) {
            open.fetch_add(1, Ordering::Relaxed);
        }
        self.changed.notify_waiters();
        Counted {
            balance: Arc::clone(self),
            thread,
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        if let Some(open) = self.balance.open.get(self.thread) {
            open.fetch_sub(1, Ordering::Relaxed);
        }
        self.balance.changed.notify_waiters();
    }
}

/// Completes once `stop` turns true (or its sender is gone).
pub(super) async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// Read buffer per connection, which bounds a request's header block (hyper's minimum is
/// 8 KiB; the sidecar also refuses header lists over 64 KiB).
const MAX_HEADER_BUFFER: usize = 64 * 1024;

/// The most client connections an automatic [`Config::max_connections`] allows.
const MAX_AUTO_CONNECTIONS: usize = 16_384;

/// [`Config::max_connections`] `None`: from the open-file limit (see
/// [`connections_for_open_files`]).
pub(super) fn auto_max_connections() -> NonZeroUsize {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
    connections_for_open_files(limit)
}

/// Client connections for an open-file limit (`None`: unlimited): each may hold two
/// descriptors (its own, its add-on connection's), and 64 stay for the listeners, the key
/// file and the Kubernetes client; at least 1, at most [`MAX_AUTO_CONNECTIONS`].
fn connections_for_open_files(limit: Option<u64>) -> NonZeroUsize {
    let n = limit.map_or(MAX_AUTO_CONNECTIONS, |l| {
        usize::try_from(l.saturating_sub(64) / 2).unwrap_or(usize::MAX)
    });
    NonZeroUsize::new(n.min(MAX_AUTO_CONNECTIONS)).unwrap_or(NonZeroUsize::MIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread's turn to accept comes only while no other serves fewer connections, and a
    /// thread waiting for it is woken when the counts change.
    #[test]
    fn a_thread_accepts_only_while_no_other_serves_fewer() {
        use std::task::{Context, Poll, Wake, Waker};
        struct Woken(AtomicUsize);
        impl Wake for Woken {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let woken = Arc::new(Woken(AtomicUsize::new(0)));
        let waker = Waker::from(woken.clone());
        let mut cx = Context::from_waker(&waker);
        let balance = Arc::new(Balance::new(2));
        let ready = |thread: usize, cx: &mut Context<'_>| {
            let turn = balance.wait_turn(thread);
            std::pin::pin!(turn).poll(cx).is_ready()
        };

        assert!(ready(0, &mut cx) && ready(1, &mut cx), "both serve none");
        let first = balance.opened(0);
        assert!(!ready(0, &mut cx), "thread 0 serves more than thread 1");
        assert!(ready(1, &mut cx));

        // Waiting, then woken once thread 1 catches up.
        let mut waiting = std::pin::pin!(balance.wait_turn(0));
        assert_eq!(waiting.as_mut().poll(&mut cx), Poll::Pending);
        let before = woken.0.load(Ordering::SeqCst);
        let second = balance.opened(1);
        assert!(
            woken.0.load(Ordering::SeqCst) > before,
            "the waiting thread is woken"
        );
        assert_eq!(waiting.as_mut().poll(&mut cx), Poll::Ready(()));

        // A connection that ends counts no more.
        drop(second);
        assert!(!ready(0, &mut cx));
        drop(first);
        assert!(ready(0, &mut cx) && ready(1, &mut cx));
    }

    #[test]
    fn connections_from_the_open_file_limit() {
        assert_eq!(connections_for_open_files(Some(1024)).get(), 480);
        assert_eq!(connections_for_open_files(Some(128)).get(), 32);
        assert_eq!(connections_for_open_files(Some(64)).get(), 1);
        assert_eq!(connections_for_open_files(Some(0)).get(), 1);
        assert_eq!(
            connections_for_open_files(Some(1 << 20)).get(),
            MAX_AUTO_CONNECTIONS
        );
        assert_eq!(connections_for_open_files(None).get(), MAX_AUTO_CONNECTIONS);
    }
}
