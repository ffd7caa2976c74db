//! The controllers' endpoints over TLS, with `/metrics` behind [`DelegatedAuthLayer`], as
//! controller-runtime's metrics server with `SecureServing` and
//! `filters.WithAuthenticationAndAuthorization` serves it.

use std::future::{Future, IntoFuture as _};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::delegated::DelegatedAuthLayer;
use crate::health::Livez;
use crate::tls_serving::{Handshake, ServingCertificate, Stream, TlsServing};

use super::{Error, Metrics};

/// How often the certificate and key files are checked for a change.
const RELOAD_INTERVAL: Duration = Duration::from_secs(10);

/// The most TLS handshakes in progress at once; further connections wait in the kernel's
/// backlog.
const MAX_HANDSHAKES: usize = 64;

/// How long accepting pauses after a failed accept (too many open files, say).
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// How many days the self-signed certificate is valid for.
const SELF_SIGNED_DAYS: u64 = 365;

/// Where [`serve_https`]'s certificate comes from.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum MetricsCertificate {
    /// The certificate and key files (and TLS version and suites) of `TlsServing`, reloaded
    /// for new handshakes when their contents change (checked every 10 s); its client CA
    /// fields are ignored: no client certificate is asked for.
    Files(TlsServing),
    /// A self-signed certificate for `localhost`, `127.0.0.1` and `::1`, with a new ECDSA
    /// P-256 key, generated at start and valid for a year, as controller-runtime's metrics
    /// server makes one when it is given no certificate: the traffic is encrypted, and a
    /// scraper that cannot verify it must skip verification (Prometheus:
    /// `insecure_skip_verify`). Needs the `ring` or `aws-lc-rs` feature.
    SelfSigned,
}

/// Serves the controllers' HTTP endpoints over TLS on `addr` until `shutdown` completes, then
/// finishes the requests in flight:
///
/// * `GET /healthz`, `GET /livez`, `GET /readyz`: as [`serve_http`](super::serve_http), open to
///   anyone (kubelet probes, `scheme: HTTPS`);
/// * `GET /metrics`: behind `auth`: a bearer token authenticated by a `TokenReview`, the
///   request authorized by a `SubjectAccessReview` (by default `get` on the non-resource URL
///   `/metrics`), else 401 or 403 as kube-apiserver answers them.
///
/// # Errors
///
/// [`Error::ServingCertificate`] when the certificate files cannot be loaded,
/// [`Error::SelfSigned`] when the self-signed one cannot be made, [`Error::Listen`] when
/// `addr` cannot be bound.
pub async fn serve_https(
    addr: SocketAddr,
    certificate: MetricsCertificate,
    auth: DelegatedAuthLayer,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    // The self-signed pair's directory lives as long as the server.
    let (tls, self_signed) = match certificate {
        MetricsCertificate::Files(mut tls) => {
            // Scrapers authenticate with their tokens; no client certificate is asked for.
            tls.client_ca_file = None;
            tls.requestheader_client_ca_file = None;
            (tls, None)
        }
        MetricsCertificate::SelfSigned => {
            let (tls, dir) = self_signed()?;
            (tls, Some(dir))
        }
    };
    let (certificate, handshake, stamp) =
        ServingCertificate::load(&tls, "controllers", metrics.tls.clone())
            .map_err(|source| Error::ServingCertificate { source })?;
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Listen { addr, source })?;
    let local = listener
        .local_addr()
        .map_err(|source| Error::Listen { addr, source })?;
    let (source, cert_file) = match &self_signed {
        Some(_) => ("self-signed, generated at start", String::new()),
        None => ("files", tls.cert_file.display().to_string()),
    };
    tracing::info!(
        %local,
        certificate = source,
        cert_file = %cert_file,
        "controllers: serving /healthz and /readyz over TLS, and /metrics over TLS behind \
         TokenReview and SubjectAccessReview"
    );
    let (sender, connections) = mpsc::channel(MAX_HANDSHAKES);
    let serve = axum::serve(TlsListener { connections, local }, router(metrics, auth))
        .with_graceful_shutdown(shutdown)
        .into_future();
    let reload = async {
        if self_signed.is_some() {
            std::future::pending::<()>().await;
        }
        certificate.watch(stamp, RELOAD_INTERVAL).await;
    };
    // Returning drops the accept loop (and its handshakes) and the reload.
    tokio::select! {
        result = serve => result.map_err(|source| Error::Listen { addr, source }),
        () = accept(listener, handshake, sender) => Ok(()),
        () = reload => Ok(()),
    }
}

/// The probes open, `/metrics` behind `auth`.
fn router(metrics: Arc<Metrics>, auth: DelegatedAuthLayer) -> Router {
    let ready = metrics.clone();
    crate::health::probes(Livez::On, move || super::http::readiness(&ready))
        .merge(crate::health::metrics_route(move || metrics.encode()).route_layer(auth))
}

/// The connections whose handshake completed, for axum.
struct TlsListener {
    connections: mpsc::Receiver<(Stream, SocketAddr)>,
    local: SocketAddr,
}

impl axum::serve::Listener for TlsListener {
    type Io = Stream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Stream, SocketAddr) {
        match self.connections.recv().await {
            Some(connection) => connection,
            // The accept loop is gone only when the server is ending.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.local)
    }
}

/// Accepts TCP connections and runs their handshakes, at most [`MAX_HANDSHAKES`] at once,
/// each within its timeout; hands the completed ones to `ready`. Ends when `ready` is closed.
async fn accept(
    listener: TcpListener,
    handshake: Handshake,
    ready: mpsc::Sender<(Stream, SocketAddr)>,
) {
    let mut handshakes = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept(), if handshakes.len() < MAX_HANDSHAKES => match accepted {
                Ok((tcp, peer)) => {
                    let handshake = handshake.clone();
                    handshakes.spawn(async move {
                        handshake.accept(tcp, peer).await.map(|(stream, _)| (stream, peer))
                    });
                }
                Err(error) => {
                    tracing::debug!(%error, "controllers: accepting a connection failed");
                    tokio::time::sleep(ACCEPT_PAUSE).await;
                }
            },
            Some(done) = handshakes.join_next() => {
                if let Ok(Some(connection)) = done
                    && ready.send(connection).await.is_err()
                {
                    return;
                }
            }
        }
    }
}

/// A self-signed certificate and its key, written to a new private temporary directory.
fn self_signed() -> Result<(TlsServing, tempfile::TempDir), Error> {
    #[cfg(any(feature = "ring", feature = "aws-lc-rs"))]
    {
        let now = crate::clock::now();
        let day = Duration::from_secs(86_400);
        let date = |at: Option<std::time::SystemTime>| {
            let at = at.ok_or(Error::SelfSigned("the validity is out of range"))?;
            let at = der::DateTime::from_system_time(at)
                .map_err(|_| Error::SelfSigned("the validity is out of range"))?;
            Ok::<_, Error>(rcgen::date_time_ymd(
                i32::from(at.year()),
                at.month(),
                at.day(),
            ))
        };
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
            .map_err(|_| Error::SelfSigned("the certificate cannot be made"))?;
        params.subject_alt_names.extend([
            rcgen::SanType::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()),
            rcgen::SanType::IpAddress(std::net::Ipv6Addr::LOCALHOST.into()),
        ]);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "k8s-bootstrap-controllers");
        params.not_before = date(now.checked_sub(day))?;
        params.not_after =
            date(now.checked_add(
                day.saturating_mul(u32::try_from(SELF_SIGNED_DAYS).unwrap_or(u32::MAX)),
            ))?;
        let key = rcgen::KeyPair::generate()
            .map_err(|_| Error::SelfSigned("the key cannot be generated"))?;
        let cert = params
            .self_signed(&key)
            .map_err(|_| Error::SelfSigned("the certificate cannot be signed"))?;
        let io = |_: std::io::Error| {
            Error::SelfSigned("the certificate cannot be written to a temporary directory")
        };
        let dir = tempfile::Builder::new()
            .prefix("k8s-bootstrap-metrics-")
            .tempdir()
            .map_err(io)?;
        let cert_file = dir.path().join("tls.crt");
        let key_file = dir.path().join("tls.key");
        std::fs::write(&cert_file, cert.pem()).map_err(io)?;
        let key_pem = zeroize::Zeroizing::new(key.serialize_pem());
        std::fs::write(&key_file, key_pem.as_bytes()).map_err(io)?;
        Ok((TlsServing::new(cert_file, key_file), dir))
    }
    #[cfg(not(any(feature = "ring", feature = "aws-lc-rs")))]
    {
        Err(Error::SelfSigned(
            "it needs the ring or aws-lc-rs feature; give a certificate and key instead",
        ))
    }
}
