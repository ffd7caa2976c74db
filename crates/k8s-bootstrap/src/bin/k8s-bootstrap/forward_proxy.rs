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
use k8s_bootstrap::addon_jwt::{
    Algorithm, Audience, Issuer, KeySet, Rejection, Sidecar, Validation,
};
use k8s_bootstrap::sidecar::{DecisionObserver, SharedSidecar, SidecarLayer};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;
use tower::Layer as _;

use crate::args::ForwardProxyArgs;
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
            "Changed key files that could not be loaded (the old keys stay)",
        );
        ProxyMetrics {
            registry,
            forwarded,
            rejected,
            upstream_errors,
            key_reloads,
            key_reload_errors,
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

/// What the sidecar is built from; either part may change while serving.
struct Inputs {
    source: KeySource,
    issuer: String,
    fixed: Vec<String>,
    discovered: std::sync::Mutex<Vec<String>>,
    sidecar: SharedSidecar,
    metrics: Arc<ProxyMetrics>,
    cache_size: usize,
}

impl Inputs {
    fn audiences(&self) -> Vec<String> {
        let discovered = self
            .discovered
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let mut all = self.fixed.clone();
        all.extend(discovered);
        all.sort();
        all.dedup();
        all
    }

    /// Rebuilds the sidecar from the key file and the audiences now; whether it was replaced
    /// (on failure the old keys and audiences stay, and the error is counted).
    fn rebuild(&self, why: &str) -> bool {
        match build_sidecar(
            &self.source,
            &self.issuer,
            &self.audiences(),
            self.cache_size,
        ) {
            Ok(sidecar) => {
                self.sidecar.replace(sidecar);
                tracing::info!(why, "forward-proxy: sidecar rebuilt");
                true
            }
            Err(e) => {
                self.metrics.key_reload_errors.inc();
                tracing::warn!(error = %e, why, "forward-proxy: not rebuilt, the old keys and audiences stay");
                false
            }
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
    let mut audiences = args.audience.clone();
    audiences.extend(discovered.iter().cloned());
    audiences.sort();
    audiences.dedup();
    let first = build_sidecar(&source, &args.issuer, &audiences, args.verified_cache_size)
        .map_err(CliError::Proxy)?;
    let inputs = Arc::new(Inputs {
        source: source.clone(),
        issuer: args.issuer.clone(),
        fixed: args.audience.clone(),
        discovered: std::sync::Mutex::new(discovered),
        sidecar: SharedSidecar::new(first),
        metrics: metrics.clone(),
        cache_size: args.verified_cache_size,
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
    let local = listener
        .local_addr()
        .map_err(|e| CliError::Proxy(format!("cannot listen on {}: {e}", args.listen)))?;
    tracing::info!(%local, forward = %args.forward, "forward-proxy: listening");

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
        let router = axum::Router::new()
            .route("/healthz", axum::routing::get(|| async { "ok" }))
            .route("/readyz", axum::routing::get(|| async { "ok" }))
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
            let mut stamp = inputs.source.stamp();
            let mut ticker = tokio::time::interval(interval);
            loop {
                ticker.tick().await;
                let now = inputs.source.stamp();
                if now == stamp {
                    continue;
                }
                stamp = now;
                if inputs.rebuild("the key file changed") {
                    inputs.metrics.key_reloads.inc();
                }
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
                    Ok(found) => {
                        let changed = {
                            let mut d = inputs
                                .discovered
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner);
                            let changed = *d != found;
                            *d = found;
                            changed
                        };
                        if changed {
                            inputs.rebuild("the Services selecting this pod changed");
                        }
                    }
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
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "forward-proxy: accept failed");
                    continue;
                }
            },
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

/// The sidecar for the keys in `source` and these audiences.
fn build_sidecar(
    source: &KeySource,
    issuer: &str,
    audiences: &[String],
    cache_size: usize,
) -> Result<Sidecar, String> {
    let keys = source.load()?;
    let validation = validation(issuer, audiences)
        .ok_or_else(|| "no audience to accept (none given, none discovered)".to_owned())?;
    Ok(Sidecar::new(keys, validation).cache_capacity(cache_size))
}

/// Read buffer per connection, which bounds a request's header block (hyper's minimum is
/// 8 KiB; the sidecar also refuses header lists over 64 KiB).
const MAX_HEADER_BUFFER: usize = 64 * 1024;
