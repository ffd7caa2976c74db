//! The forward proxy bound ([`Server::bind`]) and serving ([`Server::serve`]).

use std::future::Future;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::accept::Acceptor;
use crate::sidecar::{SharedSidecar, SidecarLayer};

use super::connections::{Connections, auto_max_connections, stopped};
use super::keys::{BuildConfig, BuildState, Inputs, KeyStamp};
use super::labels::ServiceAudiences;
use super::metrics::ProxyMetrics;
use super::tls::{Handshake, PairStamp, ServingCertificate};
use super::upstream::Upstream;
use super::{Config, Error, Serving, TlsVersion, available_cpus};

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
    /// The serving certificate and its files' stamp when it was loaded (TLS only).
    certificate: Option<(Arc<ServingCertificate>, PairStamp)>,
    handshake: Option<Handshake>,
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
    /// Loads the serving certificate (with [`Serving::Tls`]), lists the Services (with
    /// [`Config::services`]), loads the keys, builds the sidecar and binds [`Config::listen`]
    /// and [`Config::http_address`], in that order.
    ///
    /// # Errors
    ///
    /// [`Error::NoServing`] (no [`Config::serving`]); [`Error::NoCryptoProvider`],
    /// [`Error::CipherSuite`], [`Error::ReadTlsFile`], [`Error::TlsFileContents`],
    /// [`Error::KeyMismatch`] or [`Error::Tls`] for TLS; [`Error::ListServices`],
    /// [`Error::ReadKeys`], [`Error::Keys`], [`Error::NoAudience`], [`Error::StripHeaders`],
    /// [`Error::Forward`] or [`Error::Listen`]: the first step that failed.
    pub async fn bind(config: Config) -> Result<Server, Error> {
        let metrics = Arc::new(ProxyMetrics::new());
        // Plain HTTP only when asked for; the certificate files before anything else.
        let (certificate, handshake) = match config.serving.as_ref().ok_or(Error::NoServing)? {
            Serving::Tls(tls) => {
                let (certificate, handshake, stamp) =
                    ServingCertificate::load(tls, metrics.clone())?;
                (Some((certificate, stamp)), Some(handshake))
            }
            Serving::PlainHttp => (None, None),
        };
        // Services that select this pod, when asked: listed once before serving.
        let discovered = match &config.services {
            Some(s) => s.matching().await.map_err(|source| Error::ListServices {
                namespace: s.namespace().to_owned(),
                source,
            })?,
            None => Vec::new(),
        };
        let discovered_services = discovered.len();
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
        let upstream = Upstream::new(
            &config.forward,
            config.request_timeout,
            metrics.clone(),
            inputs.sidecar.clone(),
        )
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
        // What an operator needs to know it runs as meant; no key, no token.
        let (serving, cert, key, client_ca, min_version) = match &config.serving {
            Some(Serving::Tls(tls)) => (
                "TLS",
                Some(tls.cert_file.display().to_string()),
                Some(tls.key_file.display().to_string()),
                tls.client_ca_file.as_ref().map(|p| p.display().to_string()),
                Some(match tls.min_version {
                    TlsVersion::Tls12 => "TLS 1.2",
                    TlsVersion::Tls13 => "TLS 1.3",
                }),
            ),
            _ => ("plain HTTP", None, None, None, None),
        };
        tracing::info!(
            %local,
            serving,
            cert,
            key,
            client_ca,
            min_version,
            http = %http_local,
            forward = %config.forward,
            keys = %config.keys.path().display(),
            audiences = config.audiences.len(),
            services = config.services.as_ref().map(ServiceAudiences::namespace),
            discovered = discovered_services,
            key_reload_failure = ?config.key_reload_failure,
            connection_threads = config.connection_threads.map(NonZeroUsize::get),
            max_connections,
            "forward-proxy: listening"
        );
        Ok(Server {
            services: config.services.clone(),
            args: config,
            inputs,
            key_stamp,
            certificate,
            handshake,
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
            certificate,
            handshake,
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
            tls: handshake,
        });
        let (stop_tx, stop_rx) = watch::channel(false);
        // Health and metrics.
        let http = {
            let metrics = metrics.clone();
            let ready = inputs.clone();
            let certificate = certificate.as_ref().map(|(c, _)| c.clone());
            let router = crate::health::router(
                crate::health::Livez::Off,
                move || with_certificate_note(ready.readiness(), certificate.as_deref()),
                move || metrics.encode(),
            );
            tokio::spawn(
                axum::serve(http_listener, router)
                    .with_graceful_shutdown(stopped(stop_rx.clone()))
                    .into_future(),
            )
        };
        // Key reload when the mounted file changes.
        let reload = tokio::spawn(inputs.clone().watch(key_stamp, args.reload_interval));
        // Serving certificate reload when its files change, at the same interval.
        let reload_certificate = certificate.map(|(certificate, stamp)| {
            tokio::spawn(certificate.watch(stamp, args.reload_interval))
        });
        // Audiences from the Services that select this pod.
        let refresh = services.map(|s| tokio::spawn(inputs.clone().refresh(s)));
        let signals = tokio::spawn(async move {
            shutdown.await;
            tracing::info!("forward-proxy: shutting down, finishing the requests in flight");
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
        if let Some(reload) = reload_certificate {
            reload.abort();
        }
        if let Some(refresh) = refresh {
            refresh.abort();
        }
        let _ = http.await;
        tracing::info!("forward-proxy: stopped");
        served
    }
}

/// `/readyz` as the keys make it, with a line saying when the serving certificate in use is
/// older than its files (which changes no status: the one in use still serves).
fn with_certificate_note(
    (status, text): (http::StatusCode, String),
    certificate: Option<&ServingCertificate>,
) -> (http::StatusCode, String) {
    match certificate.and_then(ServingCertificate::readiness_note) {
        None => (status, text),
        Some(note) if text == "ok" => (status, format!("ok: {note}\n")),
        Some(note) => (status, format!("{text}{note}\n")),
    }
}
