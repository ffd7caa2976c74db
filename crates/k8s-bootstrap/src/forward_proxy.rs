//! The add-on sidecar as a server: verifies the identity token of every request
//! ([`SidecarLayer`]), forwards the request with `X-Authenticated-User` to the add-on, and
//! streams both bodies; `/healthz`, `/readyz` and `/metrics` on a second address. What
//! `k8s-bootstrap forward-proxy` runs.
//!
//! ```no_run
//! # async fn demo() -> Result<(), k8s_bootstrap::forward_proxy::Error> {
//! use k8s_bootstrap::addon_jwt::Algorithm;
//! use k8s_bootstrap::forward_proxy::{self, Config, KeySource};
//!
//! let config = Config::new(
//!     "127.0.0.1:8080",
//!     "https://kubernetes.default.svc",
//!     KeySource::Pem("/etc/keys/key.pem".into(), Algorithm::EdDsa),
//! )
//! .audience("kube-system/dashboard");
//! forward_proxy::serve(config, async { let _ = tokio::signal::ctrl_c().await; }).await?;
//! # Ok(())
//! # }
//! ```

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use http::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::sync::watch;
use tower::Layer as _;

use crate::accept::{Acceptor, ConnectionPermit};
use crate::addon_jwt::{Algorithm, Audience, Issuer, KeySet, Rejection, Sidecar, Validation};
use crate::sidecar::{DecisionObserver, SharedSidecar, SidecarLayer};

mod upstream;

use upstream::{Link, Upstream};

/// Where the verification keys come from; the file is re-read when it changes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeySource {
    /// A JWKS file.
    Jwks(PathBuf),
    /// A PEM public key file, for one algorithm.
    Pem(PathBuf, Algorithm),
}

/// What a key file that changed and cannot be loaded (broken, deleted) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum KeyReloadFailure {
    /// Serve on with the keys loaded before (`/readyz` stays 200 and says so).
    #[default]
    Keep,
    /// Refuse every request (403) and answer `/readyz` 503 until the file loads again, so a
    /// rotation meant to revoke a key cannot leave it accepted.
    FailClosed,
}

/// Accepting `<namespace>/<service>` for every Service of a namespace whose selector matches
/// the pod's labels, listed once before serving and again every `refresh_interval`.
#[derive(Clone)]
pub struct ServiceAudiences {
    api: kube::Api<k8s_openapi::api::core::v1::Service>,
    namespace: String,
    labels: BTreeMap<String, String>,
    refresh_interval: Duration,
}

impl ServiceAudiences {
    /// The Services of `namespace` (through `client`; needs `list` on Services) whose
    /// non-empty selector matches `labels`, refreshed every 30 s.
    #[must_use]
    pub fn new(
        client: kube::Client,
        namespace: &str,
        labels: BTreeMap<String, String>,
    ) -> ServiceAudiences {
        ServiceAudiences {
            api: kube::Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            labels,
            refresh_interval: Duration::from_secs(30),
        }
    }

    /// How often the Services are listed again (default 30 s).
    #[must_use]
    pub fn refresh_interval(mut self, interval: Duration) -> ServiceAudiences {
        self.refresh_interval = interval;
        self
    }
}

impl std::fmt::Debug for ServiceAudiences {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAudiences")
            .field("namespace", &self.namespace)
            .field("labels", &self.labels)
            .field("refresh_interval", &self.refresh_interval)
            .finish_non_exhaustive()
    }
}

/// The forward proxy's settings; [`Config::new`] takes what has no default, the other
/// methods change one setting each (the defaults are `k8s-bootstrap forward-proxy`'s).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// Where to accept requests (plain HTTP; default `0.0.0.0:8443`).
    pub listen: SocketAddr,
    /// The add-on's address, as host:port (plain HTTP).
    pub forward: String,
    /// The accepted token issuer (the `iss` claim).
    pub issuer: String,
    /// The accepted audiences (the `aud` claim), besides those of [`Config::services`].
    pub audiences: Vec<String>,
    /// Where the keys come from.
    pub keys: KeySource,
    /// The Services whose names are accepted as audiences too.
    pub services: Option<ServiceAudiences>,
    /// The longest a request may take, response body included (default 60 s).
    pub request_timeout: Duration,
    /// The longest a client connection stays open, requests in flight finishing first
    /// (default 10 min).
    pub max_connection_duration: Duration,
    /// How many verified tokens to remember (default 4096; 0 verifies every request).
    pub verified_cache_size: usize,
    /// Requests that need a signature check decided at once, at most (`None`: half of
    /// [`available_cpus`], at least 1).
    pub max_concurrent_verifications: Option<NonZeroUsize>,
    /// The same limit while no known caller (a request whose token the proxy verified before)
    /// arrived in the last ten seconds (`None`: [`available_cpus`]); see
    /// [`SidecarLayer::max_concurrent_verifications_without_known_callers`].
    pub max_concurrent_verifications_without_known_callers: Option<NonZeroUsize>,
    /// How often the key file is checked for changes (default 5 s).
    pub reload_interval: Duration,
    /// What a changed key file that cannot be loaded does.
    pub key_reload_failure: KeyReloadFailure,
    /// Request headers removed before the add-on besides the default identity headers
    /// (`addon_jwt::Sidecar::strip_headers`; a trailing `*` matches a prefix).
    pub strip_headers: Vec<String>,
    /// Client connections open at once, at most (`None`: from the open-file limit,
    /// (limit − 64) / 2, at most 16384).
    pub max_connections: Option<NonZeroUsize>,
    /// Where to serve `/healthz`, `/readyz` and `/metrics` (plain HTTP; default
    /// `0.0.0.0:10267`).
    pub http_address: SocketAddr,
    /// Whether a 403 tells the caller why (`WWW-Authenticate` with an `error_description`, as
    /// [`SidecarLayer::explain_rejections`]; default off).
    pub explain_rejections: bool,
    /// Where client connections are served (`None`, the default: on the runtime
    /// [`Server::serve`] is awaited on). `Some(n)`: on `n` threads of their own, each running
    /// a single-threaded tokio runtime that accepts from the shared listener, so a connection,
    /// its add-on connection and its requests stay on one thread and no request wakes another
    /// thread. `k8s-bootstrap forward-proxy` uses one per CPU. The signature checks sent aside
    /// while known callers are served run on the blocking threads of these runtimes
    /// (`proxy-check-<n>`), on Linux at nice 19, so that the known callers' requests come
    /// first when the CPUs are busy. The health endpoints, the key reload, the Service listing
    /// and the add-on's name lookups stay on the caller's runtime.
    pub connection_threads: Option<NonZeroUsize>,
}

impl Config {
    /// Forwards to `forward` (host:port) what tokens of `issuer`, checked with `keys`, allow.
    /// Add at least one audience ([`Config::audience`]) or [`Config::services`].
    #[must_use]
    pub fn new(forward: &str, issuer: &str, keys: KeySource) -> Config {
        Config {
            listen: SocketAddr::from(([0, 0, 0, 0], 8443)),
            forward: forward.to_owned(),
            issuer: issuer.to_owned(),
            audiences: Vec::new(),
            keys,
            services: None,
            request_timeout: Duration::from_secs(60),
            max_connection_duration: Duration::from_secs(600),
            verified_cache_size: 4096,
            max_concurrent_verifications: None,
            max_concurrent_verifications_without_known_callers: None,
            reload_interval: Duration::from_secs(5),
            key_reload_failure: KeyReloadFailure::Keep,
            strip_headers: Vec::new(),
            max_connections: None,
            http_address: SocketAddr::from(([0, 0, 0, 0], 10267)),
            explain_rejections: false,
            connection_threads: None,
        }
    }

    /// Sets [`Config::connection_threads`].
    #[must_use]
    pub fn connection_threads(mut self, threads: Option<NonZeroUsize>) -> Config {
        self.connection_threads = threads;
        self
    }

    /// Sets [`Config::explain_rejections`].
    #[must_use]
    pub fn explain_rejections(mut self, explain: bool) -> Config {
        self.explain_rejections = explain;
        self
    }

    /// Sets [`Config::listen`].
    #[must_use]
    pub fn listen(mut self, addr: SocketAddr) -> Config {
        self.listen = addr;
        self
    }

    /// Adds an accepted audience.
    #[must_use]
    pub fn audience(mut self, audience: &str) -> Config {
        self.audiences.push(audience.to_owned());
        self
    }

    /// Sets [`Config::services`].
    #[must_use]
    pub fn services(mut self, services: ServiceAudiences) -> Config {
        self.services = Some(services);
        self
    }

    /// Sets [`Config::request_timeout`].
    #[must_use]
    pub fn request_timeout(mut self, timeout: Duration) -> Config {
        self.request_timeout = timeout;
        self
    }

    /// Sets [`Config::max_connection_duration`].
    #[must_use]
    pub fn max_connection_duration(mut self, duration: Duration) -> Config {
        self.max_connection_duration = duration;
        self
    }

    /// Sets [`Config::verified_cache_size`].
    #[must_use]
    pub fn verified_cache_size(mut self, tokens: usize) -> Config {
        self.verified_cache_size = tokens;
        self
    }

    /// Sets [`Config::max_concurrent_verifications`].
    #[must_use]
    pub fn max_concurrent_verifications(mut self, n: Option<NonZeroUsize>) -> Config {
        self.max_concurrent_verifications = n;
        self
    }

    /// Sets [`Config::max_concurrent_verifications_without_known_callers`].
    #[must_use]
    pub fn max_concurrent_verifications_without_known_callers(
        mut self,
        n: Option<NonZeroUsize>,
    ) -> Config {
        self.max_concurrent_verifications_without_known_callers = n;
        self
    }

    /// Sets [`Config::reload_interval`].
    #[must_use]
    pub fn reload_interval(mut self, interval: Duration) -> Config {
        self.reload_interval = interval;
        self
    }

    /// Sets [`Config::key_reload_failure`].
    #[must_use]
    pub fn key_reload_failure(mut self, policy: KeyReloadFailure) -> Config {
        self.key_reload_failure = policy;
        self
    }

    /// Sets [`Config::strip_headers`].
    #[must_use]
    pub fn strip_headers(mut self, names: Vec<String>) -> Config {
        self.strip_headers = names;
        self
    }

    /// Sets [`Config::max_connections`].
    #[must_use]
    pub fn max_connections(mut self, n: Option<NonZeroUsize>) -> Config {
        self.max_connections = n;
        self
    }

    /// Sets [`Config::http_address`].
    #[must_use]
    pub fn http_address(mut self, addr: SocketAddr) -> Config {
        self.http_address = addr;
        self
    }
}

/// Why the forward proxy could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The key file could not be read (or is larger than a key set can be).
    #[error("reading {}: {source}", .path.display())]
    ReadKeys {
        /// The key file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The key file holds no valid keys.
    #[error("keys in {}: {source}", .path.display())]
    Keys {
        /// The key file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: crate::addon_jwt::Error,
    },
    /// No audience is accepted: none given, none discovered.
    #[error("no audience to accept (none given, none discovered)")]
    NoAudience,
    /// A name of [`Config::strip_headers`] is not a header name.
    #[error("the headers to strip: {0}")]
    StripHeaders(#[source] crate::addon_jwt::Error),
    /// [`Config::forward`] is not host:port.
    #[error("the add-on address is not host:port")]
    Forward,
    /// An address could not be listened on.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A thread of [`Config::connection_threads`] (or its runtime) could not be started.
    #[error("starting the connection threads: {0}")]
    Threads(#[source] std::io::Error),
    /// The Services of [`Config::services`] could not be listed before serving.
    #[error("listing the Services of {namespace}: {source}")]
    ListServices {
        /// Their namespace.
        namespace: String,
        /// The cause.
        #[source]
        source: kube::Error,
    },
}

/// The CPUs this process may run on: [`std::thread::available_parallelism`], which counts
/// cgroup CPU quotas and the affinity mask (`taskset`), or 1 when that is unknown. The
/// defaults that scale with the machine derive from it: half of it (at least one) for
/// [`Config::max_concurrent_verifications`], all of it for
/// [`Config::max_concurrent_verifications_without_known_callers`], and, in
/// `k8s-bootstrap forward-proxy`, one [`Config::connection_threads`] each.
#[must_use]
pub fn available_cpus() -> NonZeroUsize {
    std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN)
}

/// Runs the forward proxy with `config` until `shutdown` completes, then finishes the
/// requests in flight (each within its request timeout) and returns.
///
/// # Errors
///
/// When it cannot start ([`Server::bind`]'s errors, and [`Server::serve`]'s).
pub async fn serve(
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    Server::bind(config).await?.serve(shutdown).await
}

/// A forward proxy whose keys are loaded and whose addresses are bound, not yet serving.
pub struct Server {
    args: Config,
    inputs: Arc<Inputs>,
    /// The key file's stamp when its keys were loaded.
    key_stamp: KeyStamp,
    metrics: Arc<ProxyMetrics>,
    services: Option<ServiceAudiences>,
    layer: SidecarLayer,
    upstream: Arc<Upstream>,
    acceptor: Acceptor,
    local: SocketAddr,
    http_listener: tokio::net::TcpListener,
    http_local: SocketAddr,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("local_addr", &self.local)
            .field("http_addr", &self.http_local)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Lists the Services (with [`Config::services`]), loads the keys, builds the sidecar and
    /// binds [`Config::listen`] and [`Config::http_address`], in that order.
    ///
    /// # Errors
    ///
    /// [`Error::ListServices`], [`Error::ReadKeys`], [`Error::Keys`], [`Error::NoAudience`],
    /// [`Error::StripHeaders`], [`Error::Forward`] or [`Error::Listen`]: the first step that
    /// failed.
    pub async fn bind(config: Config) -> Result<Server, Error> {
        let metrics = Arc::new(ProxyMetrics::new());
        // Services that select this pod, when asked: listed once before serving.
        let discovered = match &config.services {
            Some(s) => matching_services(&s.api, &s.namespace, &s.labels)
                .await
                .map_err(|source| Error::ListServices {
                    namespace: s.namespace.clone(),
                    source,
                })?,
            None => Vec::new(),
        };
        // The key file's stamp before its first load: a change from here on, even one made
        // before `serve` starts watching, is a change the watch reloads.
        let key_stamp = config.keys.stamp();
        let state = BuildState {
            keys: config.keys.load()?,
            discovered,
            key_error: None,
        };
        let build = BuildConfig {
            source: config.keys.clone(),
            issuer: config.issuer.clone(),
            fixed: config.audiences.clone(),
            cache_size: config.verified_cache_size,
            strip: config.strip_headers.clone(),
            policy: config.key_reload_failure,
        };
        let first = build.build(&state)?;
        let inputs = Arc::new(Inputs {
            config: build,
            sidecar: SharedSidecar::new(first),
            metrics: metrics.clone(),
            state: std::sync::Mutex::new(state),
        });
        // Known callers first: a request whose token the sidecar remembers is decided at once;
        // one that needs a signature check waits for one of a few slots, so a flood of forged
        // tokens queues behind itself instead of in front of everyone. Half the CPUs by default,
        // all of them while no known caller is being served.
        let cpus = available_cpus();
        let slots = config
            .max_concurrent_verifications
            .unwrap_or_else(|| NonZeroUsize::new(cpus.get() / 2).unwrap_or(NonZeroUsize::MIN));
        let layer = SidecarLayer::new(inputs.sidecar.clone())
            .observer(metrics.clone())
            .max_concurrent_verifications(slots)
            .max_concurrent_verifications_without_known_callers(
                config
                    .max_concurrent_verifications_without_known_callers
                    .unwrap_or(cpus),
            )
            .explain_rejections(config.explain_rejections)
            // While known callers are served, checks leave the connections' threads, so a flood
            // of forged tokens on a connection's thread does not hold its known callers back.
            .checks_on_blocking_threads(true);
        let upstream = Upstream::new(&config.forward, config.request_timeout, metrics.clone())
            .map(Arc::new)
            .ok_or(Error::Forward)?;
        let listen = config.listen;
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|source| Error::Listen {
                addr: listen,
                source,
            })?;
        let max_connections = config.max_connections.unwrap_or_else(auto_max_connections);
        // At most that many client connections at once (the others wait in the backlog, so
        // the health listener always has descriptors left), and a pause after a failed accept.
        let acceptor = Acceptor::new(listener, max_connections);
        let local = acceptor.local_addr().map_err(|source| Error::Listen {
            addr: listen,
            source,
        })?;
        let addr = config.http_address;
        let http_listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| Error::Listen { addr, source })?;
        let http_local = http_listener
            .local_addr()
            .map_err(|source| Error::Listen { addr, source })?;
        // Both addresses as bound (a port 0 in the flags is resolved here).
        tracing::info!(
            %local,
            http = %http_local,
            forward = %config.forward,
            max_connections,
            "forward-proxy: listening"
        );
        Ok(Server {
            services: config.services.clone(),
            args: config,
            inputs,
            key_stamp,
            metrics,
            layer,
            upstream,
            acceptor,
            local,
            http_listener,
            http_local,
        })
    }

    /// The address requests are accepted on.
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The address of `/healthz`, `/readyz` and `/metrics`.
    #[must_use]
    pub fn http_addr(&self) -> SocketAddr {
        self.http_local
    }

    /// Serves until `shutdown` completes, then stops accepting, lets the connections finish
    /// their requests (each within its request timeout) and returns.
    ///
    /// # Errors
    ///
    /// [`Error::Threads`] when [`Config::connection_threads`] are asked for and one of them
    /// cannot start (the others are stopped first, as by a shutdown).
    pub async fn serve(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), Error> {
        let Server {
            args,
            inputs,
            key_stamp,
            metrics,
            services,
            layer,
            upstream,
            acceptor,
            http_listener,
            ..
        } = self;
        let connections = Arc::new(Connections {
            layer,
            upstream,
            max_connection_duration: args.max_connection_duration,
            grace: args.request_timeout.saturating_add(Duration::from_secs(1)),
        });
        let (stop_tx, stop_rx) = watch::channel(false);
        // Health and metrics.
        let http = {
            let metrics = metrics.clone();
            let ready = inputs.clone();
            let router = crate::health::router(
                crate::health::Livez::Off,
                move || ready.readiness(),
                move || metrics.encode(),
            );
            tokio::spawn(
                axum::serve(http_listener, router)
                    .with_graceful_shutdown(stopped(stop_rx.clone()))
                    .into_future(),
            )
        };
        // Key reload when the mounted file changes.
        let reload = {
            let inputs = inputs.clone();
            let interval = args.reload_interval;
            tokio::spawn(async move {
                let mut stamp = key_stamp;
                let mut ticker = tokio::time::interval(interval);
                loop {
                    ticker.tick().await;
                    let now = inputs.config.source.stamp();
                    if now == stamp {
                        continue;
                    }
                    stamp = now;
                    inputs.reload_keys();
                }
            })
        };
        // Audiences from the Services that select this pod.
        let refresh = services.map(|s| {
            let inputs = inputs.clone();
            tokio::spawn(async move {
                let mut ticker = tokio::time::interval(s.refresh_interval);
                ticker.tick().await;
                loop {
                    ticker.tick().await;
                    match matching_services(&s.api, &s.namespace, &s.labels).await {
                        Ok(found) => inputs.set_discovered(found),
                        Err(e) => {
                            tracing::warn!(error = %e, "forward-proxy: listing Services failed");
                        }
                    }
                }
            })
        });
        let signals = tokio::spawn(async move {
            shutdown.await;
            tracing::info!("forward-proxy: shutting down");
            let _ = stop_tx.send(true);
        });

        let served = match args.connection_threads {
            None => {
                connections
                    .accept_until_stopped(&acceptor, stop_rx, None)
                    .await;
                Ok(())
            }
            Some(threads) => connections.on_threads(threads, acceptor, stop_rx).await,
        };
        signals.abort();
        reload.abort();
        if let Some(refresh) = refresh {
            refresh.abort();
        }
        let _ = http.await;
        served
    }
}

/// What every client connection shares: the sidecar in front, the add-on behind.
struct Connections {
    layer: SidecarLayer,
    upstream: Arc<Upstream>,
    max_connection_duration: Duration,
    /// How long the connections may take to finish after the shutdown.
    grace: Duration,
}

impl Connections {
    /// Accepts and serves connections on the current runtime until `stop` turns true, then
    /// lets the open ones finish their requests (within the grace period).
    /// With `turn` (thread `i` of a [`Balance`]), it accepts only while no other thread
    /// serves fewer connections.
    async fn accept_until_stopped(
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
    /// lifetime is over or `stop` completes; the request in flight then finishes first.
    fn serve(
        &self,
        stream: tokio::net::TcpStream,
        peer: SocketAddr,
        permit: ConnectionPermit,
        stop: impl Future<Output = ()> + Send + 'static,
    ) -> impl Future<Output = ()> + Send + 'static {
        let _ = stream.set_nodelay(true);
        let link = Arc::new(Link::default());
        let service = {
            let upstream = self.upstream.clone();
            let link = link.clone();
            hyper_util::service::TowerToHyperService::new(self.layer.layer(tower::service_fn(
                move |request: Request<Incoming>| {
                    let upstream = upstream.clone();
                    let link = link.clone();
                    async move { Ok::<_, Infallible>(upstream.forward(&link, request).await) }
                },
            )))
        };
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
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            let mut connection = std::pin::pin!(connection);
            // The client connection and its add-on connection, driven together.
            let mut both = std::future::poll_fn(|cx| link.poll_beside(connection.as_mut(), cx));
            let limit = tokio::time::sleep(lifetime);
            let mut limit = std::pin::pin!(limit);
            let mut stop = std::pin::pin!(stop);
            tokio::select! {
                result = &mut both => {
                    if let Err(e) = result {
                        tracing::debug!(%peer, error = %e, "forward-proxy: connection ended");
                    }
                    return;
                }
                () = &mut stop => {}
                () = &mut limit => {}
            }
            // Finish the request in flight, then close; a request that does not finish
            // within its own timeout is cut by its deadline.
            connection.as_mut().graceful_shutdown();
            let _ = std::future::poll_fn(|cx| link.poll_beside(connection.as_mut(), cx)).await;
        }
    }

    /// Accepts and serves connections on `threads` threads of their own, each running a
    /// single-threaded runtime that accepts from the shared listener, until `stop` turns
    /// true and each thread's connections have finished; an error when a thread cannot start
    /// (the ones started are stopped first).
    async fn on_threads(
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
struct Balance {
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
async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// What identifies one version of the key file: device, inode, modification time and size;
/// `None` while it cannot be read.
type KeyStamp = Option<(u64, u64, SystemTime, u64)>;

impl KeySource {
    fn path(&self) -> &Path {
        match self {
            KeySource::Jwks(p) | KeySource::Pem(p, _) => p,
        }
    }

    fn load(&self) -> Result<KeySet, Error> {
        let path = self.path();
        let text = read_bounded(path).map_err(|source| Error::ReadKeys {
            path: path.to_owned(),
            source,
        })?;
        match self {
            KeySource::Jwks(_) => KeySet::from_jwks(&text),
            KeySource::Pem(_, alg) => KeySet::from_pem(&text, *alg),
        }
        .map_err(|source| Error::Keys {
            path: path.to_owned(),
            source,
        })
    }

    /// What changes when Kubernetes swaps a mounted ConfigMap or Secret (a new target behind
    /// the `..data` symlink) or someone rewrites the file.
    fn stamp(&self) -> KeyStamp {
        use std::os::unix::fs::MetadataExt as _;
        let m = std::fs::metadata(self.path()).ok()?;
        Some((m.dev(), m.ino(), m.modified().ok()?, m.len()))
    }
}

/// Reads the pod's labels as the downward API writes them (`key="value"` lines), for
/// [`ServiceAudiences::new`]; lines of another form are skipped.
///
/// # Errors
///
/// The file's I/O error, or [`std::io::ErrorKind::Other`] when it is larger than four times
/// [`addon_jwt::MAX_JWKS_BYTES`].
pub fn read_pod_labels(path: &Path) -> std::io::Result<BTreeMap<String, String>> {
    read_bounded(path).map(|text| parse_labels(&text))
}

/// Key files (and the labels file) are small: refuse anything larger than the JWKS limit's 4
/// times.
fn read_bounded(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let limit = 4 * crate::addon_jwt::MAX_JWKS_BYTES;
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1))
        .read_to_string(&mut text)?;
    if text.len() > limit {
        return Err(std::io::Error::other("file too large for a key set"));
    }
    Ok(text)
}

/// Parses the downward API's labels file: `key="value"` lines.
fn parse_labels(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| {
            let (k, v) = line.split_once('=')?;
            let v = v.trim().strip_prefix('"')?.strip_suffix('"')?;
            Some((
                k.trim().to_owned(),
                v.replace("\\\"", "\"").replace("\\\\", "\\"),
            ))
        })
        .collect()
}

/// The proxy's metrics.
pub(crate) struct ProxyMetrics {
    registry: Registry,
    forwarded: Counter,
    rejected: Counter,
    pub(crate) upstream_errors: Counter,
    key_reloads: Counter,
    key_reload_errors: Counter,
    key_file_failing: Gauge,
}

impl ProxyMetrics {
    fn new() -> ProxyMetrics {
        let mut registry = Registry::with_prefix("k8s_bootstrap_forward_proxy");
        let mut counter = |name: &str, help: &str| {
            let c = Counter::default();
            registry.register(name, help, c.clone());
            c
        };
        let forwarded = counter(
            "forwarded_requests",
            "Requests forwarded for a verified user",
        );
        let rejected = counter("rejected_requests", "Requests answered 403");
        let upstream_errors = counter(
            "upstream_errors",
            "Requests answered 502 or 504 because the add-on failed or timed out",
        );
        let key_reloads = counter("key_reloads", "Key files loaded after a change");
        let key_reload_errors = counter(
            "key_reload_errors",
            "Changed key files that could not be loaded (see --key-reload-failure)",
        );
        let key_file_failing = Gauge::default();
        registry.register(
            "key_file_failing",
            "1 while the key file, changed, cannot be loaded",
            key_file_failing.clone(),
        );
        ProxyMetrics {
            registry,
            forwarded,
            rejected,
            upstream_errors,
            key_reloads,
            key_reload_errors,
            key_file_failing,
        }
    }

    fn encode(&self) -> String {
        let mut out = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

impl DecisionObserver for ProxyMetrics {
    fn forwarded(&self) {
        self.forwarded.inc();
    }
    fn rejected(&self, _: &Rejection) {
        self.rejected.inc();
    }
}

/// The validation for `audiences` (None when there is none: nothing could be accepted).
fn validation(issuer: &str, audiences: &[String]) -> Option<Validation> {
    let (first, rest) = audiences.split_first()?;
    let mut v = Validation::new(Issuer::new(issuer), Audience::new(first));
    for a in rest {
        v = v.audience(Audience::new(a));
    }
    Some(v)
}

/// What the sidecar is built from and does not change.
struct BuildConfig {
    source: KeySource,
    issuer: String,
    fixed: Vec<String>,
    cache_size: usize,
    strip: Vec<String>,
    policy: KeyReloadFailure,
}

impl BuildConfig {
    /// The sidecar for `state`: no key at all while the key file fails under `fail-closed`.
    fn build(&self, state: &BuildState) -> Result<Sidecar, Error> {
        let mut audiences = self.fixed.clone();
        audiences.extend(state.discovered.iter().cloned());
        audiences.sort();
        audiences.dedup();
        let validation = validation(&self.issuer, &audiences).ok_or(Error::NoAudience)?;
        let keys = match (&state.key_error, self.policy) {
            (Some(_), KeyReloadFailure::FailClosed) => KeySet::new(),
            _ => state.keys.clone(),
        };
        Sidecar::new(keys, validation)
            .cache_capacity(self.cache_size)
            .strip_headers(&self.strip)
            .map_err(Error::StripHeaders)
    }
}

/// The sidecar in use and what it is built from; the keys and the discovered audiences may
/// change while serving.
struct Inputs {
    config: BuildConfig,
    sidecar: SharedSidecar,
    metrics: Arc<ProxyMetrics>,
    /// What the sidecar in use was built from. Held for a whole rebuild (read, build,
    /// replace), so key reloads and audience refreshes take turns: the sidecar in use is always
    /// built from the latest keys and audiences together, never replaced by a rebuild that
    /// started earlier.
    state: std::sync::Mutex<BuildState>,
}

struct BuildState {
    /// The keys last loaded.
    keys: KeySet,
    discovered: Vec<String>,
    /// Why the key file, since it changed, cannot be loaded.
    key_error: Option<String>,
}

impl Inputs {
    fn lock(&self) -> std::sync::MutexGuard<'_, BuildState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Rebuilds the sidecar from `state` (locked by the caller); on failure the sidecar in use
    /// stays.
    fn install(&self, state: &BuildState, why: &str) {
        match self.config.build(state) {
            Ok(sidecar) => {
                self.sidecar.replace(sidecar);
                tracing::info!(why, "forward-proxy: sidecar rebuilt");
            }
            Err(e) => {
                let e = startup_message(&e);
                tracing::warn!(error = %e, why, "forward-proxy: not rebuilt, the sidecar in use stays");
            }
        }
    }

    /// Loads the changed key file and rebuilds; on failure, the key reload policy decides.
    fn reload_keys(&self) {
        let mut state = self.lock();
        match self.config.source.load() {
            Ok(keys) => {
                state.keys = keys;
                state.key_error = None;
                self.metrics.key_file_failing.set(0);
                self.metrics.key_reloads.inc();
                self.install(&state, "the key file changed");
            }
            Err(e) => {
                let e = e.to_string();
                self.metrics.key_reload_errors.inc();
                self.metrics.key_file_failing.set(1);
                match self.config.policy {
                    KeyReloadFailure::Keep => tracing::warn!(
                        error = %e,
                        "forward-proxy: the key file cannot be loaded; the keys loaded before stay"
                    ),
                    KeyReloadFailure::FailClosed => tracing::warn!(
                        error = %e,
                        "forward-proxy: the key file cannot be loaded; every request is refused until it loads"
                    ),
                }
                let was_failing = state.key_error.replace(e).is_some();
                if self.config.policy == KeyReloadFailure::FailClosed && !was_failing {
                    self.install(&state, "the key file cannot be loaded");
                }
            }
        }
    }

    /// Takes the Services that select this pod now, and rebuilds when they changed.
    fn set_discovered(&self, found: Vec<String>) {
        let mut state = self.lock();
        if state.discovered != found {
            state.discovered = found;
            self.install(&state, "the Services selecting this pod changed");
        }
    }

    /// `/readyz`: 503 while the key file fails under `fail-closed`; 200 otherwise, saying
    /// when the keys in use are older than the file.
    fn readiness(&self) -> (http::StatusCode, String) {
        let state = self.lock();
        match (&state.key_error, self.config.policy) {
            (None, _) => (http::StatusCode::OK, "ok".to_owned()),
            (Some(e), KeyReloadFailure::Keep) => (
                http::StatusCode::OK,
                format!(
                    "ok: the keys loaded before are in use; the key file cannot be loaded: {e}\n"
                ),
            ),
            (Some(e), KeyReloadFailure::FailClosed) => (
                http::StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "not ready: every request is refused; the key file cannot be loaded: {e}\n"
                ),
            ),
        }
    }
}

/// A rebuild's error as the command's flags name it (the rebuild log line predates the
/// library).
fn startup_message(e: &Error) -> String {
    match e {
        Error::StripHeaders(e) => format!("--strip-header: {e}"),
        other => other.to_string(),
    }
}

/// `<namespace>/<name>` of each Service whose non-empty selector matches `labels`.
async fn matching_services(
    api: &kube::Api<k8s_openapi::api::core::v1::Service>,
    namespace: &str,
    labels: &BTreeMap<String, String>,
) -> Result<Vec<String>, kube::Error> {
    let services = api.list(&kube::api::ListParams::default()).await?;
    let mut out: Vec<String> = services
        .items
        .iter()
        .filter(|svc| {
            svc.spec
                .as_ref()
                .and_then(|s| s.selector.as_ref())
                .is_some_and(|sel| {
                    !sel.is_empty() && sel.iter().all(|(k, v)| labels.get(k) == Some(v))
                })
        })
        .filter_map(|svc| {
            svc.metadata
                .name
                .as_ref()
                .map(|n| format!("{namespace}/{n}"))
        })
        .collect();
    out.sort();
    Ok(out)
}

/// Read buffer per connection, which bounds a request's header block (hyper's minimum is
/// 8 KiB; the sidecar also refuses header lists over 64 KiB).
const MAX_HEADER_BUFFER: usize = 64 * 1024;

/// The most client connections an automatic [`Config::max_connections`] allows.
const MAX_AUTO_CONNECTIONS: usize = 16_384;

/// [`Config::max_connections`] `None`: from the open-file limit (see
/// [`connections_for_open_files`]).
fn auto_max_connections() -> NonZeroUsize {
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
