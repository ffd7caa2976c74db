//! `/healthz`, `/readyz` and `/metrics` for a node's certificate managers.

use std::future::Future;

use axum::Router;
use axum::http::StatusCode;

use crate::health::Livez;

use super::{CertificateMetrics, Error};

/// Serves the certificate managers' HTTP endpoints on `listener` (plain HTTP, meant for a
/// loopback address on the node) until `shutdown` completes or the future is dropped:
///
/// * `GET /healthz`: 200 `ok` while the process runs;
/// * `GET /readyz`: 200 `ok` while every manager `metrics` was given has a certificate in use
///   that has not expired, 503 with the reason otherwise ([`CertificateMetrics::not_ready_at`]);
/// * `GET /metrics`: [`CertificateMetrics::encode`], in the OpenMetrics text format.
///
/// The caller binds `listener`, so that a busy address is reported before any other work. The
/// address served is logged at info.
///
/// # Errors
///
/// [`Error::Serve`] when the listener's address cannot be read or serving fails.
pub async fn serve_http(
    listener: tokio::net::TcpListener,
    metrics: CertificateMetrics,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    let local = listener
        .local_addr()
        .map_err(|source| Error::Serve { source })?;
    tracing::info!(%local, "node-certificates: serving /healthz, /readyz and /metrics");
    axum::serve(listener, router(metrics))
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(|source| Error::Serve { source })
}

fn router(metrics: CertificateMetrics) -> Router {
    let ready = metrics.clone();
    crate::health::router(
        Livez::Off,
        move || readiness(&ready),
        move || {
            let mut text = metrics.encode();
            text.push_str("# EOF\n");
            text
        },
    )
}

/// `/readyz`'s answer: 200 `ok`, or 503 with the reason.
fn readiness(metrics: &CertificateMetrics) -> (StatusCode, String) {
    match metrics.not_ready_at(crate::clock::now()) {
        None => (StatusCode::OK, "ok".to_owned()),
        Some(reason) => (StatusCode::SERVICE_UNAVAILABLE, reason),
    }
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::Request;
    use http_body_util::BodyExt as _;
    use tokio::sync::watch;
    use tower::ServiceExt as _;

    use super::*;
    use crate::node_certificates::{CLIENT_ROTATIONS_METRIC, Snapshot};

    async fn get(router: &Router, path: &str) -> (StatusCode, String) {
        let response = router
            .clone()
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn readyz_says_why_and_metrics_end_with_eof() {
        let (_client, rx) = watch::channel(Snapshot::default());
        let router = router(CertificateMetrics::new().with_client(rx));
        assert_eq!(
            get(&router, "/healthz").await,
            (StatusCode::OK, "ok".to_owned())
        );
        assert_eq!(
            get(&router, "/readyz").await,
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "no client certificate yet".to_owned()
            )
        );
        let (status, text) = get(&router, "/metrics").await;
        assert_eq!(status, StatusCode::OK);
        assert!(text.ends_with("\n# EOF\n"), "{text}");
        assert!(
            text.lines()
                .any(|l| l == format!("{CLIENT_ROTATIONS_METRIC}_total 0")),
            "{text}"
        );
        assert_eq!(get(&router, "/livez").await.0, StatusCode::NOT_FOUND);
    }
}
