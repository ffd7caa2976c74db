//! `k8s-bootstrap forward-proxy`: the add-on sidecar as a process. Verifies the identity token
//! of every request (`SidecarLayer`), forwards the request with `X-Authenticated-User` to the
//! add-on, and streams both bodies.

use std::convert::Infallible;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use http::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use k8s_bootstrap::accept::Acceptor;
use k8s_bootstrap::addon_jwt::{
    Algorithm, Audience, Issuer, KeySet, Rejection, Sidecar, Validation,
};
use k8s_bootstrap::sidecar::{DecisionObserver, SharedSidecar, SidecarLayer};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tower::Layer as _;

use crate::args::{ForwardProxyArgs, KeyReloadFailure};
use crate::error::CliError;
use crate::upstream::{Link, Upstream};

/// Where the keys come from; re-read when the file changes.
#[derive(Clone)]
enum KeySource {
    Jwks(PathBuf),
    Pem(PathBuf, Algorithm),
}

impl KeySource {
    fn path(&self) -> &Path {
        match self {
            KeySource::Jwks(p) | KeySource::Pem(p, _) => p,
        }
    }

    fn load(&self) -> Result<KeySet, String> {
        let path = self.path();
        let text = read_bounded(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        match self {
            KeySource::Jwks(_) => KeySet::from_jwks(&text),
            KeySource::Pem(_, alg) => KeySet::from_pem(&text, *alg),
        }
        .map_err(|e| format!("keys in {}: {e}", path.display()))
    }

    /// What changes when Kubernetes swaps a mounted ConfigMap or Secret (a new target behind
    /// the `..data` symlink) or someone rewrites the file.
    fn stamp(&self) -> Option<(u64, u64, SystemTime, u64)> {
        use std::os::unix::fs::MetadataExt as _;
        let m = std::fs::metadata(self.path()).ok()?;
        Some((m.dev(), m.ino(), m.modified().ok()?, m.len()))
    }
}

/// Key files are small: refuse anything larger than the JWKS limit's 4 times.
fn read_bounded(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let limit = 4 * k8s_bootstrap::addon_jwt::MAX_JWKS_BYTES;
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1))
        .read_to_string(&mut text)?;
    if text.len() > limit {
        return Err(std::io::Error::other("file too large for a key set"));
    }
    Ok(text)
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
struct Config {
    source: KeySource,
    issuer: String,
    fixed: Vec<String>,
    cache_size: usize,
    strip: Vec<String>,
    policy: KeyReloadFailure,
}

impl Config {
    /// The sidecar for `state`: no key at all while the key file fails under `fail-closed`.
    fn build(&self, state: &BuildState) -> Result<Sidecar, String> {
        let mut audiences = self.fixed.clone();
        audiences.extend(state.discovered.iter().cloned());
        audiences.sort();
        audiences.dedup();
        let validation = validation(&self.issuer, &audiences)
            .ok_or_else(|| "no audience to accept (none given, none discovered)".to_owned())?;
        let keys = match (&state.key_error, self.policy) {
            (Some(_), KeyReloadFailure::FailClosed) => KeySet::new(),
            _ => state.keys.clone(),
        };
        Sidecar::new(keys, validation)
            .cache_capacity(self.cache_size)
            .strip_headers(&self.strip)
            .map_err(|e| format!("--strip-header: {e}"))
    }
}

/// The sidecar in use and what it is built from; the keys and the discovered audiences may
/// change while serving.
struct Inputs {
    config: Config,
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
                tracing::warn!(error = %e, why, "forward-proxy: not rebuilt, the sidecar in use stays");
            }
        }
    }

    /// Loads the changed key file and rebuilds; on failure, `--key-reload-failure` decides.
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

/// Parses the downward API's labels file: `key="value"` lines.
fn parse_labels(text: &str) -> std::collections::BTreeMap<String, String> {
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

/// `<namespace>/<name>` of each Service whose non-empty selector matches `labels`.
async fn matching_services(
    api: &kube::Api<k8s_bootstrap::k8s_openapi::api::core::v1::Service>,
    namespace: &str,
    labels: &std::collections::BTreeMap<String, String>,
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

fn key_source(args: &ForwardProxyArgs) -> Result<KeySource, CliError> {
    match (&args.jwks_file, &args.public_key_file) {
        (Some(p), None) => Ok(KeySource::Jwks(p.clone())),
        (None, Some(p)) => {
            let alg: Algorithm = args.algorithm.parse().map_err(|_| {
                CliError::Proxy(format!(
                    "unknown --algorithm {:?} (RS256, PS256, ES256, ES384, EdDSA)",
                    args.algorithm.chars().take(16).collect::<String>()
                ))
            })?;
            Ok(KeySource::Pem(p.clone(), alg))
        }
        _ => Err(CliError::Proxy(
            "exactly one of --jwks-file and --public-key-file is required".to_owned(),
        )),
    }
}

pub(crate) async fn run(args: &ForwardProxyArgs) -> Result<(), CliError> {
    let source = key_source(args)?;
    let metrics = Arc::new(ProxyMetrics::new());
    // Services that select this pod, when asked: listed once before serving.
    let services = if args.audience_from_services {
        let namespace = args
            .pod_namespace
            .clone()
            .filter(|n| !n.is_empty())
            .ok_or_else(|| {
                CliError::Proxy(
                    "--audience-from-services needs --pod-namespace (or POD_NAMESPACE)".to_owned(),
                )
            })?;
        let text = read_bounded(&args.pod_labels_file).map_err(|e| {
            CliError::Proxy(format!("reading {}: {e}", args.pod_labels_file.display()))
        })?;
        let labels = parse_labels(&text);
        let config = kube::Config::infer().await.map_err(CliError::InferConfig)?;
        let client = kube::Client::try_from(config).map_err(CliError::Client)?;
        let api = kube::Api::namespaced(client, &namespace);
        let found = matching_services(&api, &namespace, &labels)
            .await
            .map_err(|e| CliError::Proxy(format!("listing the Services of {namespace}: {e}")))?;
        Some((api, namespace, labels, found))
    } else {
        None
    };
    let discovered = services
        .as_ref()
        .map(|(_, _, _, found)| found.clone())
        .unwrap_or_default();
    let state = BuildState {
        keys: source.load().map_err(CliError::Proxy)?,
        discovered,
        key_error: None,
    };
    let config = Config {
        source: source.clone(),
        issuer: args.issuer.clone(),
        fixed: args.audience.clone(),
        cache_size: args.verified_cache_size,
        strip: args.strip_header.clone(),
        policy: args.key_reload_failure,
    };
    let first = config.build(&state).map_err(CliError::Proxy)?;
    let inputs = Arc::new(Inputs {
        config,
        sidecar: SharedSidecar::new(first),
        metrics: metrics.clone(),
        state: std::sync::Mutex::new(state),
    });
    // Known callers first: a request whose token the sidecar remembers is decided at once; one
    // that needs a signature check waits for one of a few slots, so a flood of forged tokens
    // queues behind itself instead of in front of everyone. Half the CPUs by default.
    let slots = NonZeroUsize::new(args.max_concurrent_verifications).unwrap_or_else(|| {
        std::thread::available_parallelism()
            .ok()
            .and_then(|n| NonZeroUsize::new(n.get() / 2))
            .unwrap_or(NonZeroUsize::MIN)
    });
    let layer = SidecarLayer::new(inputs.sidecar.clone())
        .observer(metrics.clone())
        .max_concurrent_verifications(slots);
    let upstream = Upstream::new(&args.forward, args.request_timeout, metrics.clone())
        .map(Arc::new)
        .ok_or_else(|| {
            CliError::Proxy(format!(
                "--forward {:?} is not host:port",
                args.forward.chars().take(64).collect::<String>()
            ))
        })?;
    // One service for each client connection, forwarding over that connection's link.
    let connection_service = move |link: Arc<Link>| {
        let upstream = upstream.clone();
        layer.layer(tower::service_fn(move |request: Request<Incoming>| {
            let upstream = upstream.clone();
            let link = link.clone();
            async move { Ok::<_, Infallible>(upstream.forward(&link, request).await) }
        }))
    };

    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| CliError::Proxy(format!("cannot listen on {}: {e}", args.listen)))?;
    let max_connections =
        NonZeroUsize::new(args.max_connections).unwrap_or_else(auto_max_connections);
    // At most that many client connections at once (the others wait in the backlog, so the
    // health listener always has descriptors left), and a pause after a failed accept.
    let acceptor = Acceptor::new(listener, max_connections);
    let local = acceptor
        .local_addr()
        .map_err(|e| CliError::Proxy(format!("cannot listen on {}: {e}", args.listen)))?;
    tracing::info!(%local, forward = %args.forward, max_connections, "forward-proxy: listening");

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopped = move || {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    };
    // Health and metrics.
    let http = {
        let metrics = metrics.clone();
        let ready = inputs.clone();
        let router = axum::Router::new()
            .route("/healthz", axum::routing::get(|| async { "ok" }))
            .route(
                "/readyz",
                axum::routing::get(move || {
                    let readiness = ready.readiness();
                    async move { readiness }
                }),
            )
            .route(
                "/metrics",
                axum::routing::get(move || {
                    let metrics = metrics.clone();
                    async move {
                        (
                            [(
                                http::header::CONTENT_TYPE,
                                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                            )],
                            metrics.encode(),
                        )
                    }
                }),
            );
        let addr = args.http_address;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| CliError::Proxy(format!("cannot listen on {addr}: {e}")))?;
        tokio::spawn(
            axum::serve(listener, router)
                .with_graceful_shutdown(stopped())
                .into_future(),
        )
    };
    // Key reload when the mounted file changes.
    let reload = {
        let inputs = inputs.clone();
        let interval = args.reload_interval;
        tokio::spawn(async move {
            let mut stamp = inputs.config.source.stamp();
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
    let refresh = services.map(|(api, namespace, labels, _)| {
        let inputs = inputs.clone();
        let interval = args.audience_refresh_interval;
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(interval);
            ticker.tick().await;
            loop {
                ticker.tick().await;
                match matching_services(&api, &namespace, &labels).await {
                    Ok(found) => inputs.set_discovered(found),
                    Err(e) => tracing::warn!(error = %e, "forward-proxy: listing Services failed"),
                }
            }
        })
    });
    let signals = tokio::spawn(async move {
        crate::signals::terminated().await;
        tracing::info!("forward-proxy: shutting down");
        let _ = stop_tx.send(true);
    });

    let mut connections = tokio::task::JoinSet::new();
    let mut shutdown = std::pin::pin!(stopped());
    loop {
        let (stream, peer, permit) = tokio::select! {
            accepted = acceptor.accept() => accepted,
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let link = Arc::new(Link::default());
        let service =
            hyper_util::service::TowerToHyperService::new(connection_service(link.clone()));
        let lifetime = args.max_connection_duration;
        let stop = stopped();
        let mut builder = hyper::server::conn::http1::Builder::new();
        // hyper's default of at most 100 header lines (as Envoy's) keeps its parse on the
        // stack; more is answered 431.
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(Duration::from_secs(10))
            .max_buf_size(MAX_HEADER_BUFFER);
        connections.spawn(async move {
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
            // Finish the request in flight, then close; a request that does not finish within
            // its own timeout is cut by its deadline.
            connection.as_mut().graceful_shutdown();
            let _ = std::future::poll_fn(|cx| link.poll_beside(connection.as_mut(), cx)).await;
        });
        // Reap finished connections.
        while connections.try_join_next().is_some() {}
    }
    // Graceful shutdown: stop accepting, let the connections finish their requests.
    let grace = args.request_timeout.saturating_add(Duration::from_secs(1));
    let _ = tokio::time::timeout(grace, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    signals.abort();
    reload.abort();
    if let Some(refresh) = refresh {
        refresh.abort();
    }
    let _ = http.await;
    Ok(())
}

/// Read buffer per connection, which bounds a request's header block (hyper's minimum is
/// 8 KiB; the sidecar also refuses header lists over 64 KiB).
const MAX_HEADER_BUFFER: usize = 64 * 1024;

/// The most client connections `--max-connections=0` allows.
const MAX_AUTO_CONNECTIONS: usize = 16_384;

/// `--max-connections=0`: from the open-file limit (see [`connections_for_open_files`]).
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
