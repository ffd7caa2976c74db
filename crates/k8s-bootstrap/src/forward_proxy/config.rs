//! The forward proxy's settings and why it could not start.

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::time::Duration;

use crate::addon_jwt::Algorithm;
use crate::tls_serving::{ServingError, TlsServing};

#[cfg(doc)]
use super::{AuthHeaders, ClientCertificates, Server, SidecarLayer};
use super::{Authentication, Delegated, ServiceAudiences};

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

/// How [`Config::listen`] serves: over TLS, or in plain HTTP when that is asked for.
/// [`Config::new`] chooses neither; [`Server::bind`] refuses a [`Config`] without one.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Serving {
    /// TLS with a certificate and key from files, reloaded when they change.
    Tls(TlsServing),
    /// Plain HTTP: bearer tokens cross the network in clear text, so only behind something
    /// that encrypts (a mesh, a TLS terminator in the same pod) or on loopback.
    PlainHttp,
}

/// The forward proxy's settings; [`Config::new`] (add-on JWTs) and [`Config::delegated`]
/// (TokenReview and SubjectAccessReview) take what has no default, the other methods change
/// one setting each (the defaults are `k8s-bootstrap forward-proxy`'s). The settings marked
/// *add-on JWT mode* change nothing in the delegated mode, and audiences or Services given
/// there are refused ([`Error::NotDelegated`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// Where to accept requests (default `0.0.0.0:8443`), served as [`Config::serving`] says.
    pub listen: SocketAddr,
    /// TLS or plain HTTP on [`Config::listen`]; `None` (what [`Config::new`] leaves) is
    /// refused by [`Server::bind`], so plain HTTP is only ever served when asked for.
    pub serving: Option<Serving>,
    /// The add-on's address, as host:port (plain HTTP).
    pub forward: String,
    /// How requests are authenticated and authorized.
    pub authentication: Authentication,
    /// *Add-on JWT mode:* the accepted audiences (the `aud` claim), besides those of
    /// [`Config::services`]. (The delegated mode's token audiences are its layer's.)
    pub audiences: Vec<String>,
    /// *Add-on JWT mode:* the Services whose names are accepted as audiences too.
    pub services: Option<ServiceAudiences>,
    /// The longest a request may take, response body included (default 60 s).
    pub request_timeout: Duration,
    /// The longest a client connection stays open, requests in flight finishing first
    /// (default 10 min).
    pub max_connection_duration: Duration,
    /// *Add-on JWT mode:* how many verified tokens to remember (default 4096; 0 verifies every
    /// request).
    pub verified_cache_size: usize,
    /// *Add-on JWT mode:* requests that need a signature check decided at once, at most
    /// (`None`: half of [`available_cpus`], at least 1).
    pub max_concurrent_verifications: Option<NonZeroUsize>,
    /// *Add-on JWT mode:* the same limit while no known caller (a request whose token the proxy verified before)
    /// arrived in the last ten seconds (`None`: [`available_cpus`]); see
    /// [`SidecarLayer::max_concurrent_verifications_without_known_callers`].
    pub max_concurrent_verifications_without_known_callers: Option<NonZeroUsize>,
    /// How often the key file and the serving certificate files are checked for changes
    /// (default 5 s; a zero interval is taken as 1 ms).
    pub reload_interval: Duration,
    /// *Add-on JWT mode:* what a changed key file that cannot be loaded does.
    pub key_reload_failure: KeyReloadFailure,
    /// Request headers removed before the add-on besides the default identity headers
    /// (`addon_jwt::Sidecar::strip_headers`; a trailing `*` matches a prefix), in either mode.
    pub strip_headers: Vec<String>,
    /// Client connections open at once, at most (`None`: from the open-file limit,
    /// (limit − 64) / 2, at most 16384).
    pub max_connections: Option<NonZeroUsize>,
    /// Where to serve `/healthz`, `/readyz` and `/metrics` (plain HTTP; default
    /// `0.0.0.0:10267`).
    pub http_address: SocketAddr,
    /// *Add-on JWT mode:* whether a 403 tells the caller why (`WWW-Authenticate` with an `error_description`, as
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
        Config::with(
            forward,
            Authentication::AddonJwt {
                issuer: issuer.to_owned(),
                keys,
            },
        )
    }

    /// Forwards to `forward` (host:port) what the API server authenticates (`TokenReview`)
    /// and authorizes (`SubjectAccessReview`) through `delegated`'s layer, with the user in
    /// its [`AuthHeaders`] (a [`DelegatedAuthLayer`](crate::delegated::DelegatedAuthLayer)
    /// alone: kube-rbac-proxy's `x-remote-user` and `x-remote-groups`), as kube-rbac-proxy
    /// does.
    #[must_use]
    pub fn delegated(forward: &str, delegated: impl Into<Delegated>) -> Config {
        Config::with(forward, Authentication::Delegated(delegated.into()))
    }

    fn with(forward: &str, authentication: Authentication) -> Config {
        Config {
            listen: SocketAddr::from(([0, 0, 0, 0], 8443)),
            serving: None,
            forward: forward.to_owned(),
            authentication,
            audiences: Vec::new(),
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

    /// Serves TLS on [`Config::listen`] ([`Config::serving`]).
    #[must_use]
    pub fn tls(mut self, tls: TlsServing) -> Config {
        self.serving = Some(Serving::Tls(tls));
        self
    }

    /// Serves plain HTTP on [`Config::listen`] ([`Config::serving`]): tokens in clear text on
    /// the network.
    #[must_use]
    pub fn plain_http(mut self) -> Config {
        self.serving = Some(Serving::PlainHttp);
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
    /// [`Config::serving`] is `None`: neither TLS nor plain HTTP was chosen.
    #[error("neither TLS serving nor plain HTTP is configured")]
    NoServing,
    /// The serving certificate, its key, a client CA or the TLS settings of [`TlsServing`]
    /// could not be used (its message is the cause's).
    #[error(transparent)]
    Serving(#[from] ServingError),
    /// No audience is accepted: none given, none discovered.
    #[error("no audience to accept (none given, none discovered)")]
    NoAudience,
    /// A name of [`Config::strip_headers`] is not a header name.
    #[error("the headers to strip: {0}")]
    StripHeaders(#[source] crate::addon_jwt::Error),
    /// A name or the separator of [`AuthHeaders`] cannot be used.
    #[error("the identity headers: {what}")]
    AuthHeaders {
        /// What is wrong.
        what: &'static str,
    },
    /// A setting of the add-on JWT mode was given in the delegated mode.
    #[error("{setting} are a setting of the add-on JWT mode, not of the delegated mode")]
    NotDelegated {
        /// The setting (`audiences`, `services`).
        setting: &'static str,
    },
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
