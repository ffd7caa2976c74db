//! The forward proxy bound ([`Server::bind`]) and serving ([`Server::serve`]).

use std::future::Future;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::accept::Acceptor;
use crate::delegated::DelegatedAuthLayer;
use crate::sidecar::{SharedSidecar, SidecarLayer};

use super::authentication::Handover;
use super::connections::{Connections, Guard, auto_max_connections, stopped};
use super::keys::{BuildConfig, BuildState, Inputs, KeyStamp};
use super::labels::ServiceAudiences;
use super::metrics::ProxyMetrics;
use super::upstream::Upstream;
use super::{AuthHeaders, Authentication, Config, Error, KeySource, Serving, available_cpus};
use crate::tls_serving::{Handshake, PairStamp, ServingCertificate, TlsVersion};

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
    mode: Mode,
    /// The serving certificate and its files' stamp when it was loaded (TLS only).
    certificate: Option<(Arc<ServingCertificate>, PairStamp)>,
    handshake: Option<Handshake>,
    metrics: Arc<ProxyMetrics>,
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

/// What authenticates requests, as bound.
#[allow(
    clippy::large_enum_variant,
    reason = "one per server, moved once into serving"
)]
enum Mode {
    /// Add-on JWTs: the keys, their reload and the sidecar built from them.
    Jwt {
        inputs: Arc<Inputs>,
        /// The key file's stamp when its keys were loaded.
        key_stamp: KeyStamp,
        services: Option<ServiceAudiences>,
        layer: SidecarLayer,
        /// The most signature checks at once (the larger of the sidecar's two limits): the
        /// most blocking threads a connection thread's runtime needs for them.
        check_threads: NonZeroUsize,
    },
    /// Delegated to the API server.
    Delegated {
        layer: DelegatedAuthLayer,
        handover: Arc<Handover>,
    },
}

impl Server {
    /// Loads the serving certificate (with [`Serving::Tls`]); in the add-on JWT mode, lists
    /// the Services (with [`Config::services`]), loads the keys and builds the sidecar; then
    /// binds [`Config::listen`] and [`Config::http_address`], in that order.
    ///
    /// # Errors
    ///
    /// [`Error::NoServing`] (no [`Config::serving`]); [`Error::Serving`] for TLS;
    /// [`Error::ListServices`], [`Error::ReadKeys`], [`Error::Keys`], [`Error::NoAudience`] in
    /// the add-on JWT mode, [`Error::NotDelegated`] in the delegated mode;
    /// [`Error::StripHeaders`], [`Error::Forward`] or [`Error::Listen`]: the first step that
    /// failed.
    pub async fn bind(config: Config) -> Result<Server, Error> {
        let mut metrics = ProxyMetrics::new();
        if let Authentication::Delegated(delegated) = &config.authentication {
            metrics.register_delegated(delegated.layer.metrics());
        }
        let metrics = Arc::new(metrics);
        // Plain HTTP only when asked for; the certificate files before anything else.
        let (certificate, handshake) = match config.serving.as_ref().ok_or(Error::NoServing)? {
            Serving::Tls(tls) => {
                let (certificate, handshake, stamp) =
                    ServingCertificate::load(tls, "forward-proxy", metrics.tls.clone())?;
                (Some((certificate, stamp)), Some(handshake))
            }
            Serving::PlainHttp => (None, None),
        };
        let (mode, trailer_rule) = match &config.authentication {
            Authentication::AddonJwt { issuer, keys } => {
                bind_jwt(&config, issuer, keys, &metrics).await?
            }
            Authentication::Delegated(delegated) => {
                if !config.audiences.is_empty() {
                    return Err(Error::NotDelegated {
                        setting: "audiences",
                    });
                }
                if config.services.is_some() {
                    return Err(Error::NotDelegated {
                        setting: "services",
                    });
                }
                let handover =
                    Handover::new(delegated.auth_headers.clone(), &config.strip_headers)?;
                // The request trailers lose what the header section loses.
                let rule = SharedSidecar::new(handover.rule.clone());
                let mode = Mode::Delegated {
                    layer: delegated.layer.clone(),
                    handover: Arc::new(handover),
                };
                (mode, rule)
            }
        };
        let upstream = Upstream::new(
            &config.forward,
            config.request_timeout,
            metrics.clone(),
            trailer_rule,
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
        // Which mode, and what the add-on is told: the key file and audiences, or the headers.
        let (authentication, keys, discovered, user_header, groups_header, groups_separator) =
            match (&config.authentication, &mode) {
                (Authentication::AddonJwt { keys, .. }, Mode::Jwt { inputs, .. }) => {
                    let discovered = inputs
                        .state
                        .lock()
                        .map_or(0, |state| state.discovered.len());
                    let keys = Some(keys.path().display().to_string());
                    let keys = keys.map(tracing::field::display);
                    let user = Some(crate::addon_jwt::AUTHENTICATED_USER_HEADER);
                    ("add-on JWT", keys, Some(discovered), user, None, None)
                }
                (_, Mode::Delegated { handover, .. }) => {
                    let headers = handover.headers.as_ref();
                    (
                        "token-review",
                        None,
                        None,
                        headers.map(AuthHeaders::user_header),
                        headers.map(AuthHeaders::groups_header),
                        headers.map(AuthHeaders::groups_separator),
                    )
                }
                _ => ("add-on JWT", None, None, None, None, None),
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
            authentication,
            user_header,
            groups_header,
            groups_separator,
            keys,
            audiences = config.audiences.len(),
            services = config.services.as_ref().map(ServiceAudiences::namespace),
            discovered,
            key_reload_failure = ?config.key_reload_failure,
            connection_threads = config.connection_threads.map(NonZeroUsize::get),
            max_connections,
            "forward-proxy: listening"
        );
        Ok(Server {
            args: config,
            mode,
            certificate,
            handshake,
            metrics,
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
            mode,
            certificate,
            handshake,
            metrics,
            upstream,
            acceptor,
            http_listener,
            ..
        } = self;
        // The key reload and the Service refresh (add-on JWT mode), and the readiness.
        let (guard, jwt, check_threads) = match mode {
            Mode::Jwt {
                inputs,
                key_stamp,
                services,
                layer,
                check_threads,
            } => (
                Guard::Jwt(layer),
                Some((inputs, key_stamp, services)),
                check_threads,
            ),
            Mode::Delegated { layer, handover } => (
                Guard::Delegated {
                    layer,
                    handover,
                    metrics: metrics.clone(),
                },
                None,
                // Nothing runs on the connection threads' blocking threads in this mode.
                NonZeroUsize::MIN,
            ),
        };
        let ready = jwt.as_ref().map(|(inputs, _, _)| inputs.clone());
        let connections = Arc::new(Connections {
            guard,
            upstream,
            max_connection_duration: args.max_connection_duration,
            grace: args.request_timeout.saturating_add(Duration::from_secs(1)),
            tls: handshake,
            check_threads,
        });
        let (stop_tx, stop_rx) = watch::channel(false);
        // Health and metrics.
        let http = {
            let metrics = metrics.clone();
            let certificate = certificate.as_ref().map(|(c, _)| c.clone());
            // The delegated mode has no keys to be ready with: ready once bound (a review that
            // fails is the request's 500, as in kube-rbac-proxy).
            let router = crate::health::router(
                crate::health::Livez::Off,
                move || {
                    let keys = ready.as_ref().map_or_else(
                        || (http::StatusCode::OK, "ok".to_owned()),
                        |inputs| inputs.readiness(),
                    );
                    with_certificate_note(keys, certificate.as_deref())
                },
                move || metrics.encode(),
            );
            tokio::spawn(
                axum::serve(http_listener, router)
                    .with_graceful_shutdown(stopped(stop_rx.clone()))
                    .into_future(),
            )
        };
        // Key reload when the mounted file changes; audiences from the Services that select
        // this pod.
        let (reload, refresh) = match jwt {
            Some((inputs, key_stamp, services)) => (
                Some(tokio::spawn(
                    inputs.clone().watch(key_stamp, args.reload_interval),
                )),
                services.map(|s| tokio::spawn(inputs.refresh(s))),
            ),
            None => (None, None),
        };
        // Serving certificate reload when its files change, at the same interval.
        let reload_certificate = certificate.map(|(certificate, stamp)| {
            tokio::spawn(certificate.watch(stamp, args.reload_interval))
        });
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
        if let Some(reload) = reload {
            reload.abort();
        }
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

/// The add-on JWT mode's part of [`Server::bind`]: the Services listed, the keys loaded, the
/// sidecar built; the mode, and the sidecar whose rule the request trailers follow.
async fn bind_jwt(
    config: &Config,
    issuer: &str,
    keys: &KeySource,
    metrics: &Arc<ProxyMetrics>,
) -> Result<(Mode, SharedSidecar), Error> {
    // Services that select this pod, when asked: listed once before serving.
    let discovered = match &config.services {
        Some(s) => s.matching().await.map_err(|source| Error::ListServices {
            namespace: s.namespace().to_owned(),
            source,
        })?,
        None => Vec::new(),
    };
    // The key file's stamp before its first load: a change from here on, even one made
    // before `serve` starts watching, is a change the watch reloads.
    let key_stamp = keys.stamp();
    let state = BuildState {
        keys: keys.load()?,
        discovered,
        key_error: None,
    };
    let build = BuildConfig {
        source: keys.clone(),
        issuer: issuer.to_owned(),
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
    let slots_alone = config
        .max_concurrent_verifications_without_known_callers
        .unwrap_or(cpus);
    let layer = SidecarLayer::new(inputs.sidecar.clone())
        .observer(metrics.clone())
        .max_concurrent_verifications(slots)
        .max_concurrent_verifications_without_known_callers(slots_alone)
        .explain_rejections(config.explain_rejections)
        // While known callers are served, checks leave the connections' threads, so a flood
        // of forged tokens on a connection's thread does not hold its known callers back.
        .checks_on_blocking_threads(true);
    let rule = inputs.sidecar.clone();
    let mode = Mode::Jwt {
        inputs,
        key_stamp,
        services: config.services.clone(),
        layer,
        check_threads: slots.max(slots_alone),
    };
    Ok((mode, rule))
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
