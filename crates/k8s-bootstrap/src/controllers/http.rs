//! `/healthz`, `/readyz` and `/metrics` for the controllers.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::http::StatusCode;

use crate::health::Livez;

use super::{Error, Metrics};

/// Serves the controllers' HTTP endpoints on `addr` (plain HTTP, for kubelet probes and
/// Prometheus inside the cluster; [`serve_https`](super::serve_https) serves them over TLS,
/// with `/metrics` behind delegated authentication and authorization) until `shutdown` completes, then finishes the requests in
/// flight:
///
/// * `GET /healthz`: 200 `ok` while the process runs;
/// * `GET /readyz`: 200 `ok` when [`Metrics::is_ready`] (a standby, or the watch caches of
///   every controller this process runs are filled), 503 before;
/// * `GET /metrics`: the Prometheus text format ([`Metrics::encode`]).
///
/// # Errors
///
/// [`Error::Listen`] when `addr` cannot be bound.
pub async fn serve_http(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Listen { addr, source })?;
    let local = listener
        .local_addr()
        .map_err(|source| Error::Listen { addr, source })?;
    tracing::info!(%local, "controllers: serving /healthz, /readyz and /metrics");
    axum::serve(listener, router(metrics))
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(|source| Error::Listen { addr, source })
}

fn router(metrics: Arc<Metrics>) -> Router {
    let ready = metrics.clone();
    crate::health::router(
        Livez::On,
        move || readiness(&ready),
        move || metrics.encode(),
    )
}

/// `/readyz`'s answer: 200 once [`Metrics::is_ready`], 503 before.
pub(super) fn readiness(metrics: &Metrics) -> (StatusCode, String) {
    if metrics.is_ready() {
        (StatusCode::OK, "ok".to_owned())
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "watch caches not synced".to_owned(),
        )
    }
}
