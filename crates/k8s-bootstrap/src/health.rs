//! `/healthz`, `/readyz` and `/metrics`: the HTTP endpoints the controllers, the forward proxy
//! and the node certificate managers serve beside their work, for probes and Prometheus.

use std::sync::Arc;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::routing::get;

/// Whether `/livez` is served too (as `/healthz`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    not(all(
        feature = "controllers",
        any(feature = "forward-proxy", feature = "node-certificates-http")
    )),
    allow(dead_code, reason = "one variant for each kind of server")
)]
pub(crate) enum Livez {
    /// The controllers'.
    On,
    /// The forward proxy's and the node certificate managers'.
    Off,
}

/// The router: `GET /healthz` (and `/livez` when asked) answers 200 `ok` while the process
/// runs; `GET /readyz` answers what `ready` says; `GET /metrics` answers `metrics` in the
/// OpenMetrics text format.
pub(crate) fn router(
    livez: Livez,
    ready: impl Fn() -> (StatusCode, String) + Send + Sync + 'static,
    metrics: impl Fn() -> String + Send + Sync + 'static,
) -> Router {
    probes(livez, ready).merge(metrics_route(metrics))
}

/// The probes alone: `GET /healthz` (and `/livez` when asked) and `GET /readyz`.
pub(crate) fn probes(
    livez: Livez,
    ready: impl Fn() -> (StatusCode, String) + Send + Sync + 'static,
) -> Router {
    let ready = Arc::new(ready);
    let mut router = Router::new().route("/healthz", get(|| async { "ok" }));
    if livez == Livez::On {
        router = router.route("/livez", get(|| async { "ok" }));
    }
    router.route(
        "/readyz",
        get(move || {
            let readiness = ready();
            async move { readiness }
        }),
    )
}

/// `GET /metrics` alone: `metrics` in the OpenMetrics text format.
pub(crate) fn metrics_route(metrics: impl Fn() -> String + Send + Sync + 'static) -> Router {
    let metrics = Arc::new(metrics);
    Router::new().route(
        "/metrics",
        get(move || {
            let text = metrics();
            async move {
                (
                    [(
                        header::CONTENT_TYPE,
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )],
                    text,
                )
            }
        }),
    )
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::Request;
    use http_body_util::BodyExt as _;
    use tower::ServiceExt as _;

    use super::*;

    async fn get(router: &Router, path: &str) -> (StatusCode, Option<String>, String) {
        let response = router
            .clone()
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap().to_owned());
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (
            status,
            content_type,
            String::from_utf8(body.to_vec()).unwrap(),
        )
    }

    #[tokio::test]
    async fn endpoints_answer_as_the_probes_and_prometheus_expect() {
        let text = Some("text/plain; charset=utf-8".to_owned());
        let open_metrics =
            Some("application/openmetrics-text; version=1.0.0; charset=utf-8".to_owned());
        for livez in [Livez::On, Livez::Off] {
            let router = router(
                livez,
                || (StatusCode::SERVICE_UNAVAILABLE, "not yet".to_owned()),
                || "# EOF\n".to_owned(),
            );
            let ok = (StatusCode::OK, text.clone(), "ok".to_owned());
            assert_eq!(get(&router, "/healthz").await, ok);
            let (status, _, _) = get(&router, "/livez").await;
            let expected = match livez {
                Livez::On => StatusCode::OK,
                Livez::Off => StatusCode::NOT_FOUND,
            };
            assert_eq!(status, expected);
            assert_eq!(
                get(&router, "/readyz").await,
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    text.clone(),
                    "not yet".to_owned()
                )
            );
            assert_eq!(
                get(&router, "/metrics").await,
                (StatusCode::OK, open_metrics.clone(), "# EOF\n".to_owned())
            );
            assert_eq!(get(&router, "/other").await.0, StatusCode::NOT_FOUND);
        }
    }
}
