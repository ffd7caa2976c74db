//! `k8s-bootstrap`: the exec layer's per-request overhead on a cached credential, beside the
//! same service without the layer (`baseline/...`); and token discovery end to end on loopback
//! (two TLS fetches and every check), beside the same two GETs with no checks.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::convert::Infallible;
use std::hint::black_box;
use std::time::Duration;

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use http_body_util::{BodyExt as _, Empty, Full};
use k8s_bootstrap::clusterinfo::{CaBundle, PinSet, TokenDiscoveryConfig};
use k8s_bootstrap::discovery::{self, Source};
use k8s_bootstrap::exec::{ExecCredentials, ExecLayer};
use k8s_bootstrap::exec_credential::{ApiVersion, Cluster, ExecConfig, InteractiveMode};
use loopback_apiserver::LoopbackApiServer;
use tower::{Layer as _, Service, ServiceExt as _};

const PLUGIN: &str = r#"#!/bin/sh
echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"bench-token-0123456789"}}'
"#;

/// The innermost service: answers 200 at once, as a pooled connection to a fast server would
/// at best.
fn bare() -> impl Service<
    http::Request<Full<Bytes>>,
    Response = http::Response<Empty<Bytes>>,
    Error = Infallible,
    Future = impl std::future::Future<Output = Result<http::Response<Empty<Bytes>>, Infallible>> + Send,
> + Clone
+ Send
+ 'static {
    tower::service_fn(|req: http::Request<Full<Bytes>>| async move {
        black_box(req.headers().len());
        Ok::<_, Infallible>(http::Response::new(Empty::new()))
    })
}

fn request() -> http::Request<Full<Bytes>> {
    http::Request::get("https://127.0.0.1:6443/api/v1/namespaces/default/pods")
        .body(Full::new(Bytes::from_static(b"")))
        .unwrap()
}

fn exec_layer(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plugin = dir.path().join("plugin.sh");
    std::fs::write(&plugin, PLUGIN).unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let config = ExecConfig::new(
        plugin.to_str().unwrap(),
        ApiVersion::V1,
        InteractiveMode::Never,
    );
    let credentials = ExecCredentials::new(config, Cluster::new("https://127.0.0.1:6443")).unwrap();
    // One plugin run fills the cache; every measured request is a cache hit.
    rt.block_on(credentials.credential()).unwrap();

    let mut g = c.benchmark_group("k8s_bootstrap/exec_layer");
    g.bench_function("baseline/bare_service", |b| {
        let mut svc = bare();
        b.iter(|| {
            rt.block_on(async {
                let svc = svc.ready().await.unwrap();
                black_box(svc.call(request()).await.unwrap())
            })
        });
    });
    g.bench_function("exec_layer_cached_token", |b| {
        let mut svc = ExecLayer::new(credentials.clone()).layer(bare());
        b.iter(|| {
            rt.block_on(async {
                let svc = svc.ready().await.unwrap();
                black_box(svc.call(request()).await.unwrap())
            })
        });
    });
    g.finish();
    assert_eq!(
        credentials.plugin_runs(),
        1,
        "the plugin ran again during the bench"
    );
}

fn discovery(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = rt.block_on(async {
        let server = LoopbackApiServer::builder().start().await.unwrap();
        server
            .insert(
                "kube-system",
                "secrets",
                serde_json::json!({
                    "metadata": {"name": "bootstrap-token-abcdef"},
                    "type": "bootstrap.kubernetes.io/token",
                    "stringData": {
                        "token-id": "abcdef",
                        "token-secret": "0123456789abcdef",
                        "usage-bootstrap-signing": "true",
                    },
                }),
            )
            .unwrap();
        server
    });
    let ca = CaBundle::from_pem(server.ca_pem().as_bytes()).unwrap();
    let mut pins = PinSet::new();
    pins.allow(&ca.first_pin().unwrap().to_string()).unwrap();
    let config = TokenDiscoveryConfig::new(
        &server.endpoint(),
        "abcdef.0123456789abcdef".parse().unwrap(),
    )
    .unwrap()
    .with_pins(pins)
    .with_timeout(Duration::from_secs(10));
    let url = format!(
        "{}/api/v1/namespaces/kube-public/configmaps/cluster-info",
        server.url()
    );

    let mut g = c.benchmark_group("k8s_bootstrap/discovery");
    g.sample_size(30);
    g.bench_function("baseline/two_tls_gets_no_checks", |b| {
        b.iter(|| {
            rt.block_on(async {
                for _ in 0..2 {
                    // A new connection each time, as each discovery fetch makes one.
                    let client = plain_client(&ca);
                    let resp = client.get(url.parse().unwrap()).await.unwrap();
                    black_box(resp.into_body().collect().await.unwrap().to_bytes());
                }
            })
        });
    });
    g.bench_function("token_discovery_end_to_end", |b| {
        b.iter(|| {
            let found = rt
                .block_on(discovery::discover(Source::Token(config.clone())))
                .unwrap();
            black_box(found);
        });
    });
    g.finish();
    drop(server);
}

/// A hyper client that trusts the CA, with nothing else: the floor of one discovery fetch.
fn plain_client(
    ca: &CaBundle,
) -> hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    Empty<Bytes>,
> {
    let mut roots = rustls::RootCertStore::empty();
    for der in ca.certificates_der() {
        roots.add(der.to_vec().into()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_only()
        .enable_http1()
        .build();
    hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build(connector)
}

criterion_group!(benches, exec_layer, discovery);
criterion_main!(benches);
