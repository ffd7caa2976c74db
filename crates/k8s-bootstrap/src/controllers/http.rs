//! `/healthz`, `/readyz` and `/metrics` for the controllers.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use super::{Error, Metrics};

/// Serves the controllers' HTTP endpoints on `addr` (plain HTTP, for kubelet probes and
/// Prometheus inside the cluster) until `shutdown` completes, then finishes the requests in
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
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/livez", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .with_state(metrics)
}

async fn readyz(State(metrics): State<Arc<Metrics>>) -> impl IntoResponse {
    if metrics.is_ready() {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "watch caches not synced")
    }
}

async fn metrics_text(State(metrics): State<Arc<Metrics>>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        metrics.encode(),
    )
}
