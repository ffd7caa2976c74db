//! Add-on authentication end to end: a plain HTTP client (no credential) → the real `kubectl
//! proxy` (the kubeconfig user's credential) → the API server's Service proxy, which
//! authenticates the user and, for `add-auth=true`, mints a token for the Service (the
//! `AddAuthLayer`, signing with the serving certificate's key) → the real `k8s-bootstrap
//! forward-proxy` (verifies the token with the serving certificate, audience from the Services
//! that select its pod) → the add-on, which receives `X-Authenticated-User`.
//!
//! kubectl is the first on PATH (CI runs this file with v1.32 and with the current kubectl).
//! The API server is a double (`loopback_apiserver`), not a real control plane.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects,
    clippy::disallowed_methods,
    clippy::indexing_slicing,
    reason = "test code reads the wall clock and fails loudly"
)]

use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use k8s_bootstrap::addon_auth::AddAuthLayer;
use k8s_bootstrap::addon_jwt::{AddAuth, Audience, Issuer, Minter, SigningKey};
use loopback_apiserver::LoopbackApiServer;
use serde_json::json;
use tokio::io::AsyncBufReadExt as _;
use tokio::process::Command;

use crate::support::{eventually, spawn_proxy};

const BIN: &str = env!("CARGO_BIN_EXE_k8s-bootstrap");
const ISSUER: &str = "https://kubernetes.default.svc";
/// The add-on tokens' lifetime: re-minted once half of it has passed on the layer's clock.
const TTL: Duration = Duration::from_secs(3600);
/// add-auth=true requests a user may make at once (then one an hour).
const BURST: u32 = 10;
/// The Service proxy's bound on a request.
const MAX_PROXY_DURATION: Duration = Duration::from_secs(3);
const DASHBOARD: &str = "/api/v1/namespaces/default/services/dashboard/proxy";
const OTHER: &str = "/api/v1/namespaces/default/services/other/proxy";

/// How far (seconds) the add-auth layer's clock is behind the wall clock. Tokens minted while
/// it is behind are valid now (issued in the past, expiring after now); moving it to 0 ages
/// the cached tokens by that much without a test sleeping for half a token's lifetime.
static LAYER_CLOCK_BEHIND: AtomicU64 = AtomicU64::new(0);

fn layer_clock() -> SystemTime {
    SystemTime::now() - Duration::from_secs(LAYER_CLOCK_BEHIND.load(Ordering::SeqCst))
}

/// What the add-on received: the request target and its `X-Authenticated-User`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    uri: String,
    user: Option<String>,
}

type Log = Arc<Mutex<Vec<Seen>>>;

/// The add-on: answers every request with the `X-Authenticated-User` it received and records
/// it; `/hang` sends a first chunk and never finishes its response.
async fn addon() -> (SocketAddr, Log) {
    use axum::body::Body;
    use axum::extract::{Request, State};
    let log: Log = Arc::default();
    async fn record(State(log): State<Log>, req: Request) -> axum::response::Response {
        let user = req
            .headers()
            .get("x-authenticated-user")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        log.lock().unwrap().push(Seen {
            uri: req.uri().to_string(),
            user: user.clone(),
        });
        if req.uri().path() == "/hang" {
            let first = futures_util::stream::once(async {
                Ok::<_, std::io::Error>(Bytes::from_static(b"started"))
            });
            let body = futures_util::StreamExt::chain(first, futures_util::stream::pending());
            return axum::response::Response::new(Body::from_stream(body));
        }
        axum::response::Response::new(Body::from(user.unwrap_or_default()))
    }
    let app = axum::Router::new()
        .fallback(record)
        .with_state(Arc::clone(&log));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, log)
}

/// A running `kubectl proxy`; dropping it kills kubectl (also when the test fails).
struct KubectlProxy {
    _child: tokio::process::Child,
    addr: SocketAddr,
}

/// `kubectl proxy --port=0` with `kubeconfig`, once it says which port it serves on.
async fn kubectl_proxy(kubeconfig: &Path) -> KubectlProxy {
    let cache = kubeconfig.with_extension("cache");
    let mut child = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(&cache)
        .args(["proxy", "--port=0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("kubectl runs");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let line = lines
                .next_line()
                .await
                .unwrap()
                .expect("kubectl proxy ended before it served");
            if let Some(addr) = line.trim().strip_prefix("Starting to serve on ") {
                break addr.parse().unwrap();
            }
        }
    })
    .await
    .expect("kubectl proxy started");
    KubectlProxy {
        _child: child,
        addr,
    }
}

/// Runs kubectl once; its stdout.
async fn kubectl(kubeconfig: &Path, args: &[&str]) -> String {
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(kubeconfig.with_extension("cache"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A response through `kubectl proxy`: status, `Retry-After`, body.
struct Answer {
    status: u16,
    retry_after: Option<String>,
    body: String,
}

/// A plain GET (no `Authorization`: kubectl adds the kubeconfig user's credential only to
/// requests without one) of `path` through `proxy`.
async fn get(
    client: &Client<HttpConnector, Empty<Bytes>>,
    proxy: &KubectlProxy,
    path: &str,
) -> Answer {
    let uri: http::Uri = format!("http://{}{path}", proxy.addr).parse().unwrap();
    let response = tokio::time::timeout(Duration::from_secs(30), client.get(uri))
        .await
        .expect("an answer within 30s")
        .unwrap();
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    let body = response.into_body().collect().await.unwrap().to_bytes();
    Answer {
        status,
        retry_after,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

/// A GET straight to the forward proxy with a token we mint: whether it was let through.
async fn forward_proxy_accepts(
    client: &Client<HttpConnector, Empty<Bytes>>,
    listen: SocketAddr,
    key_pem: &str,
    audience: &str,
) -> bool {
    let key = SigningKey::from_pkcs8_pem(key_pem).unwrap();
    let token = Minter::new(key, Issuer::new(ISSUER))
        .mint(
            "readiness-probe",
            &Audience::new(audience),
            SystemTime::now(),
        )
        .unwrap();
    let request = http::Request::get(format!("http://{listen}/ready"))
        .header("authorization", format!("Bearer {}", token.expose_secret()))
        .body(Empty::new())
        .unwrap();
    matches!(client.request(request).await, Ok(r) if r.status() == 200)
}

fn write(dir: &Path, name: &str, contents: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

fn new_entries(log: &Log, before: usize) -> Vec<Seen> {
    log.lock().unwrap()[before..].to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_proxy_add_auth_reaches_the_addon_as_the_user() {
    // The layer's clock starts well behind: the first tokens are ones a later step will find
    // older than half their lifetime (see step f).
    LAYER_CLOCK_BEHIND.store(TTL.as_secs() * 5 / 6, Ordering::SeqCst);
    let server = LoopbackApiServer::builder()
        .service_proxy_max_duration(MAX_PROXY_DURATION)
        .dangerous_allow_loopback_endpoints(true)
        .start()
        .await
        .unwrap();
    // The layer signs with the serving certificate's key, which exists once the server runs.
    let key = SigningKey::from_pkcs8_pem(server.serving_key_pem()).unwrap();
    let layer = AddAuthLayer::new(
        AddAuth::new(Minter::new(key, Issuer::new(ISSUER)).ttl(TTL))
            .rate(NonZeroU32::new(1).unwrap(), Duration::from_secs(3600))
            .burst(NonZeroU32::new(BURST).unwrap()),
    )
    .clock(layer_clock);
    let metrics = layer.metrics().clone();
    server.set_service_proxy_layer(layer);

    let dir = tempfile::tempdir().unwrap();
    let admin = write(dir.path(), "admin.conf", &server.admin_kubeconfig_yaml());
    let labels = write(dir.path(), "labels", "app=\"dashboard\"\n");
    let certificate = write(dir.path(), "serving.crt", server.serving_certificate_pem());

    // `dashboard` selects the forward proxy's pod; `other` does not (its EndpointSlice below
    // still names the same forward proxy, so a token for `default/other` reaches it).
    for (name, app) in [("dashboard", "dashboard"), ("other", "other")] {
        server
            .insert(
                "default",
                "services",
                json!({"metadata": {"name": name},
                       "spec": {"selector": {"app": app}, "ports": [{"port": 80}]}}),
            )
            .unwrap();
    }
    let (addon, log) = addon().await;
    let mut command = Command::new(BIN);
    command
        .args([
            "forward-proxy",
            "--insecure-listen-address=127.0.0.1:0",
            &format!("--forward={addon}"),
            &format!("--issuer={ISSUER}"),
            "--audience-from-services",
            "--pod-namespace=default",
            &format!("--pod-labels-file={}", labels.display()),
            "--audience-refresh-interval=200ms",
            &format!("--public-key-file={}", certificate.display()),
            "--algorithm=ES256",
            "--http-address=127.0.0.1:0",
        ])
        .env("KUBECONFIG", &admin);
    let mut forward_proxy = spawn_proxy(command).await;
    let port = forward_proxy.listen.port();

    // EndpointSlices: every Service's endpoint is the forward proxy.
    for name in ["dashboard", "other"] {
        server
            .insert(
                "default",
                "endpointslices",
                json!({"metadata": {"name": format!("{name}-1"),
                                    "labels": {"kubernetes.io/service-name": name}},
                       "addressType": "IPv4",
                       "ports": [{"port": port, "protocol": "TCP"}],
                       "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}]}),
            )
            .unwrap();
    }
    let client: Client<HttpConnector, Empty<Bytes>> =
        Client::builder(TokioExecutor::new()).build_http();
    // The forward proxy has read the Services (a token of our own, not through the layer, so
    // the layer's metrics and rate budget only count the steps below).
    eventually(
        "the forward proxy accepts audience default/dashboard",
        || {
            forward_proxy_accepts(
                &client,
                forward_proxy.listen,
                server.serving_key_pem(),
                "default/dashboard",
            )
        },
    )
    .await;
    let probes = log.lock().unwrap().len();

    // a. The add-on sees the kubeconfig user, as the API server names it.
    let admin_name = kubectl(
        &admin,
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ],
    )
    .await;
    assert!(!admin_name.is_empty());
    let admin_proxy = kubectl_proxy(&admin).await;
    let answer = get(
        &client,
        &admin_proxy,
        &format!("{DASHBOARD}/?add-auth=true&x=1"),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.body, admin_name);
    assert_eq!(
        new_entries(&log, probes),
        [Seen {
            uri: "/?x=1".to_owned(),
            user: Some(admin_name.clone())
        }],
        "the add-on got the user and the query without add-auth"
    );
    assert_eq!((metrics.tokens_minted(), metrics.cache_hits()), (1, 0));

    // f. The token is reused while less than half its lifetime has passed on the layer's
    // clock, then minted anew; the forward proxy accepts both.
    let answer = get(
        &client,
        &admin_proxy,
        &format!("{DASHBOARD}/?add-auth=true"),
    )
    .await;
    assert_eq!(
        (answer.status, answer.body.as_str()),
        (200, admin_name.as_str())
    );
    assert_eq!((metrics.tokens_minted(), metrics.cache_hits()), (1, 1));
    // The layer's clock catches up with the wall clock: the cached token is now 5/6 of its
    // lifetime old.
    LAYER_CLOCK_BEHIND.store(0, Ordering::SeqCst);
    let before = log.lock().unwrap().len();
    let answer = get(
        &client,
        &admin_proxy,
        &format!("{DASHBOARD}/?add-auth=true"),
    )
    .await;
    assert_eq!(
        (answer.status, answer.body.as_str()),
        (200, admin_name.as_str())
    );
    assert_eq!((metrics.tokens_minted(), metrics.cache_hits()), (2, 1));
    assert_eq!(new_entries(&log, before).len(), 1);
    let answer = get(
        &client,
        &admin_proxy,
        &format!("{DASHBOARD}/?add-auth=true"),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!((metrics.tokens_minted(), metrics.cache_hits()), (2, 2));

    // b. Without add-auth=true no token is added: the forward proxy refuses, the add-on sees
    // nothing.
    let before = log.lock().unwrap().len();
    let answer = get(&client, &admin_proxy, &format!("{DASHBOARD}/")).await;
    assert_eq!(answer.status, 403, "{}", answer.body);
    assert_eq!(new_entries(&log, before), []);

    // c. A token minted for `other` (audience default/other, a Service that does not select
    // the forward proxy's pod) is refused there.
    let minted = metrics.tokens_minted();
    let answer = get(&client, &admin_proxy, &format!("{OTHER}/?add-auth=true")).await;
    assert_eq!(answer.status, 403, "{}", answer.body);
    assert_eq!(
        metrics.tokens_minted(),
        minted + 1,
        "a token was minted for other"
    );
    assert_eq!(new_entries(&log, before), []);

    // d. A user whose credential is taken away gets 401 and nothing is forwarded.
    let (cert, client_key) = server
        .issue_client_certificate("jane", &["kubeadm:cluster-admins"])
        .unwrap();
    let jane = write(
        dir.path(),
        "jane.conf",
        &server.kubeconfig_with_client_certificate(&cert, &client_key),
    );
    let jane_proxy = kubectl_proxy(&jane).await;
    let before = log.lock().unwrap().len();
    let answer = get(&client, &jane_proxy, &format!("{DASHBOARD}/?add-auth=true")).await;
    assert_eq!((answer.status, answer.body.as_str()), (200, "jane"));
    assert_eq!(new_entries(&log, before).len(), 1);
    server.revoke_client_certificate(&cert).unwrap();
    let before = log.lock().unwrap().len();
    let answer = get(&client, &jane_proxy, &format!("{DASHBOARD}/?add-auth=true")).await;
    assert_eq!(answer.status, 401, "{}", answer.body);
    assert_eq!(new_entries(&log, before), []);

    // e. Over the per-user rate limit: 429 with Retry-After from the layer, nothing forwarded.
    let (cert, client_key) = server
        .issue_client_certificate("rate-limited", &["kubeadm:cluster-admins"])
        .unwrap();
    let limited = write(
        dir.path(),
        "limited.conf",
        &server.kubeconfig_with_client_certificate(&cert, &client_key),
    );
    let limited_proxy = kubectl_proxy(&limited).await;
    for _ in 0..BURST {
        let answer = get(
            &client,
            &limited_proxy,
            &format!("{DASHBOARD}/?add-auth=true"),
        )
        .await;
        assert_eq!((answer.status, answer.body.as_str()), (200, "rate-limited"));
    }
    let before = log.lock().unwrap().len();
    let answer = get(
        &client,
        &limited_proxy,
        &format!("{DASHBOARD}/?add-auth=true"),
    )
    .await;
    assert_eq!(answer.status, 429, "{}", answer.body);
    let retry_after: u64 = answer
        .retry_after
        .expect("Retry-After")
        .parse()
        .expect("whole seconds");
    assert!((1..=3600).contains(&retry_after), "{retry_after}");
    assert!(answer.body.contains("TooManyRequests"), "{}", answer.body);
    assert_eq!(metrics.rate_limited(), 1);
    assert_eq!(new_entries(&log, before), []);
    // Another user's budget is its own.
    let answer = get(
        &client,
        &admin_proxy,
        &format!("{DASHBOARD}/?add-auth=true"),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);

    // g. A response that never finishes is cut at the Service proxy's maximum duration.
    let started = Instant::now();
    let uri: http::Uri = format!("http://{}{DASHBOARD}/hang?add-auth=true", admin_proxy.addr)
        .parse()
        .unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(60), async {
        let response = client.get(uri).await?;
        let status = response.status().as_u16();
        let body = response.into_body().collect().await;
        Ok::<_, hyper_util::client::legacy::Error>((status, body.is_ok()))
    })
    .await
    .expect("the proxy ends the request");
    let elapsed = started.elapsed();
    match outcome {
        // The head came through (200), then the stream was cut.
        Ok((200, complete)) => assert!(!complete, "the body was cut"),
        Ok((status, _)) => assert_eq!(status, 504),
        Err(_) => {}
    }
    assert!(
        elapsed >= MAX_PROXY_DURATION && elapsed < Duration::from_secs(60),
        "{elapsed:?}"
    );
    let hang = log.lock().unwrap().last().cloned().unwrap();
    assert_eq!(hang.uri, "/hang");
    assert_eq!(hang.user.as_deref(), Some(admin_name.as_str()));

    forward_proxy.child.kill().await.unwrap();
}

/// `serve-loopback --add-auth --serving-certificate`: an operator's loopback server, in front
/// of a forward proxy that verifies with the written certificate; the flags set the issuer and
/// the rate limit; the certificate is removed on exit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_loopback_add_auth_serves_a_forward_proxy_through_kubectl_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let admin = dir.path().join("admin.conf");
    let certificate = dir.path().join("serving.crt");
    let issuer = "https://loopback.example";
    let mut server = Command::new(BIN)
        .args([
            "serve-loopback",
            "--admin-kubeconfig",
            admin.to_str().unwrap(),
            "--serving-certificate",
            certificate.to_str().unwrap(),
            "--add-auth",
            &format!("--add-auth-issuer={issuer}"),
            "--add-auth-token-ttl=2m",
            "--add-auth-rate=1/1h",
            "--add-auth-burst=2",
            "--service-proxy-max-duration=30s",
            "--dangerous-allow-loopback-endpoints",
        ])
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // The certificate is written before the kubeconfig.
    eventually("serve-loopback wrote its admin kubeconfig", || async {
        admin.exists()
    })
    .await;
    let pem = std::fs::read_to_string(&certificate).unwrap();
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");

    let (addon, log) = addon().await;
    let mut command = Command::new(BIN);
    command.args([
        "forward-proxy",
        "--insecure-listen-address=127.0.0.1:0",
        &format!("--forward={addon}"),
        &format!("--issuer={issuer}"),
        "--audience=default/dashboard",
        &format!("--public-key-file={}", certificate.display()),
        "--algorithm=ES256",
        "--http-address=127.0.0.1:0",
    ]);
    let mut forward_proxy = spawn_proxy(command).await;
    let manifest = write(
        dir.path(),
        "dashboard.yaml",
        &format!(
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: dashboard\n  namespace: default\nspec:\n  selector:\n    app: dashboard\n  ports:\n  - port: 80\n---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: dashboard-1\n  namespace: default\n  labels:\n    kubernetes.io/service-name: dashboard\naddressType: IPv4\nports:\n- port: {}\n  protocol: TCP\nendpoints:\n- addresses:\n  - 127.0.0.1\n  conditions:\n    ready: true\n",
            forward_proxy.listen.port()
        ),
    );
    kubectl(&admin, &["create", "-f", manifest.to_str().unwrap()]).await;
    let admin_name = kubectl(
        &admin,
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ],
    )
    .await;
    let proxy = kubectl_proxy(&admin).await;
    let client: Client<HttpConnector, Empty<Bytes>> =
        Client::builder(TokioExecutor::new()).build_http();
    for _ in 0..2 {
        let answer = get(&client, &proxy, &format!("{DASHBOARD}/?add-auth=true")).await;
        assert_eq!(
            (answer.status, answer.body.as_str()),
            (200, admin_name.as_str())
        );
    }
    let before = log.lock().unwrap().len();
    let answer = get(&client, &proxy, &format!("{DASHBOARD}/?add-auth=true")).await;
    assert_eq!(answer.status, 429, "--add-auth-burst=2: {}", answer.body);
    assert!(answer.retry_after.is_some());
    assert_eq!(new_entries(&log, before), []);
    let answer = get(&client, &proxy, &format!("{DASHBOARD}/")).await;
    assert_eq!(answer.status, 403, "{}", answer.body);
    assert_eq!(new_entries(&log, before), []);

    crate::support::sigterm(&server);
    let status = tokio::time::timeout(Duration::from_secs(10), server.wait())
        .await
        .expect("serve-loopback exits within 10 s of SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert!(
        !certificate.exists(),
        "the serving certificate outlived the server"
    );
    forward_proxy.child.kill().await.unwrap();
}
