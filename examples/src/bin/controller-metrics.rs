//! A kube-runtime controller whose `/metrics` only callers the API server allows can scrape:
//! `DelegatedAuthLayer` reviews each request's bearer token (TokenReview) and authorizes
//! `get` on the non-resource URL `/metrics` (SubjectAccessReview), as a controller-runtime
//! operator's metrics endpoint does.
//!
//! ```sh
//! cargo run -p k8s-bootstrap-examples --bin controller-metrics -- 127.0.0.1:8443
//! ```
//!
//! The client is inferred as kubectl infers it (`KUBECONFIG`, `~/.kube/config`, in-cluster);
//! its user needs `create` on tokenreviews and subjectaccessreviews (`system:auth-delegator`)
//! and `list`/`watch` on configmaps. A scraper needs a role with
//! `nonResourceURLs: ["/metrics"]`, `verbs: ["get"]`; without a token it gets 401, without the
//! role 403. Prints `serving http://<address>/metrics` once listening (the address defaults to
//! `0.0.0.0:8443`; port 0 picks a free one).

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::extract::State;
use axum::{Router, routing::get};
use futures_util::StreamExt as _;
use k8s_bootstrap::delegated::{DelegatedAuthLayer, Metrics};
use k8s_bootstrap::k8s_openapi::api::core::v1::ConfigMap;
use k8s_bootstrap::kube::runtime::{Controller, controller::Action, watcher};
use k8s_bootstrap::kube::{Api, Client};

/// The controller's own counter: ConfigMaps reconciled.
type Reconciles = Arc<AtomicU64>;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listen = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "0.0.0.0:8443".to_owned());
    let client = Client::try_default().await?;

    // The controller: reconciles every ConfigMap, and counts it.
    let reconciles = Reconciles::default();
    let controller = Controller::new(
        Api::<ConfigMap>::all(client.clone()),
        watcher::Config::default(),
    )
    .run(
        reconcile,
        |_, _, _| Action::requeue(Duration::from_secs(60)),
        Arc::clone(&reconciles),
    )
    .for_each(|_| async {});

    // Its /metrics, behind the API server's authentication and authorization.
    let auth = DelegatedAuthLayer::new(client);
    let app = Router::new()
        .route("/metrics", get(metrics))
        .with_state((reconciles, auth.metrics()))
        .layer(auth);

    let listener = tokio::net::TcpListener::bind(&listen).await?;
    println!("serving http://{}/metrics", listener.local_addr()?);
    tokio::select! {
        served = axum::serve(listener, app) => served?,
        () = controller => {}
    }
    Ok(())
}

async fn reconcile(_: Arc<ConfigMap>, reconciles: Reconciles) -> Result<Action, Infallible> {
    reconciles.fetch_add(1, Ordering::Relaxed);
    Ok(Action::await_change())
}

/// Prometheus' text format: the controller's counter and the layer's.
async fn metrics(State((reconciles, auth)): State<(Reconciles, Arc<Metrics>)>) -> String {
    let a = auth.snapshot();
    let mut text = format!(
        "# TYPE configmap_reconciles_total counter\nconfigmap_reconciles_total {}\n",
        reconciles.load(Ordering::Relaxed)
    );
    text.push_str("# TYPE delegated_auth_reviews_total counter\n");
    for (kind, n) in [("token", a.token_reviews), ("access", a.access_reviews)] {
        text.push_str(&format!(
            "delegated_auth_reviews_total{{kind=\"{kind}\"}} {n}\n"
        ));
    }
    text.push_str("# TYPE delegated_auth_requests_total counter\n");
    for (decision, n) in [
        ("allowed", a.allowed),
        ("unauthenticated", a.unauthenticated),
        ("denied", a.denied),
        ("errored", a.errored),
    ] {
        text.push_str(&format!(
            "delegated_auth_requests_total{{decision=\"{decision}\"}} {n}\n"
        ));
    }
    text
}
