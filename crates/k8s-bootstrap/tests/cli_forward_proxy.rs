//! `k8s-bootstrap forward-proxy` as a process in front of a real HTTP add-on on loopback:
//! verified requests reach the add-on with `X-Authenticated-User` and without the credential,
//! bodies stream both ways, bad requests get 403 and never reach the add-on, a response is cut
//! at `--request-timeout`, keys reload when a mounted-volume symlink swaps, `/metrics` counts,
//! SIGTERM exits 0.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::disallowed_methods,
    reason = "test code reads the wall clock and fails loudly"
)]

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Response};
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use k8s_bootstrap::addon_jwt::{Audience, Issuer, Minter, SigningKey};
use tokio::process::{Child, Command};

const BIN: &str = env!("CARGO_BIN_EXE_k8s-bootstrap");
const KEY_A: &str = "-----BEGIN PRIVATE KEY-----\n\
MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
-----END PRIVATE KEY-----\n";
const KEY_B: &str = "-----BEGIN PRIVATE KEY-----\n\
MC4CAQAwBQYDK2VwBCIEINc4iOMgSUlBwtxE3NLfU5Ef/KD5IywIVQfcq3YRiFU5\n\
-----END PRIVATE KEY-----\n";
const ISSUER: &str = "https://kubernetes.default.svc";
const AUDIENCE: &str = "kube-system/dashboard";

fn token(key: &str, sub: &str) -> String {
    let key = SigningKey::from_pkcs8_pem(key).unwrap();
    Minter::new(key, Issuer::new(ISSUER))
        .mint(sub, &Audience::new(AUDIENCE), SystemTime::now())
        .unwrap()
        .expose_secret()
        .to_owned()
}

fn public_pem(key: &str) -> String {
    SigningKey::from_pkcs8_pem(key)
        .unwrap()
        .public_key_pem()
        .unwrap()
}

/// The add-on: `/echo` streams the request body back and reports the identity headers it got;
/// `/slow` streams a chunk every 100 ms forever.
async fn addon(hits: Arc<AtomicUsize>) -> SocketAddr {
    async fn echo(
        State(hits): State<Arc<AtomicUsize>>,
        headers: HeaderMap,
        body: Body,
    ) -> Response<Body> {
        hits.fetch_add(1, Ordering::SeqCst);
        let users: Vec<&str> = headers
            .get_all("x-authenticated-user")
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect();
        Response::builder()
            .header("x-seen-user", users.join(","))
            .header(
                "x-seen-authorization",
                if headers.contains_key("authorization") {
                    "yes"
                } else {
                    "no"
                },
            )
            .header(
                "x-seen-extra",
                headers.get("x-extra").map_or("", |v| v.to_str().unwrap()),
            )
            .body(body)
            .unwrap()
    }
    async fn slow() -> Response<Body> {
        let stream = futures_util::stream::unfold((), |()| async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Some((
                Ok::<_, std::convert::Infallible>(Bytes::from_static(b"tick\n")),
                (),
            ))
        });
        Response::new(Body::from_stream(stream))
    }
    let app = axum::Router::new()
        .route("/echo", axum::routing::any(echo))
        .route("/slow", axum::routing::get(slow))
        .with_state(hits);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

fn free_addr() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// A key file mounted as Kubernetes mounts a ConfigMap: `key.pem -> ..data/key.pem`,
/// `..data -> ..<version>`; an update swaps `..data` atomically.
fn mount(dir: &Path, version: &str, pem: &str) {
    let versioned = dir.join(format!("..{version}"));
    std::fs::create_dir(&versioned).unwrap();
    std::fs::write(versioned.join("key.pem"), pem).unwrap();
    let tmp = dir.join("..data_tmp");
    std::os::unix::fs::symlink(format!("..{version}"), &tmp).unwrap();
    std::fs::rename(&tmp, dir.join("..data")).unwrap();
    let link = dir.join("key.pem");
    if std::fs::symlink_metadata(&link).is_err() {
        std::os::unix::fs::symlink("..data/key.pem", &link).unwrap();
    }
}

type HttpClient = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

async fn send(
    client: &HttpClient,
    proxy: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> (u16, HeaderMap, Vec<u8>) {
    let mut request = http::Request::post(format!("http://{proxy}{path}"));
    for (n, v) in headers {
        request = request.header(*n, *v);
    }
    let response = client
        .request(request.body(Full::new(Bytes::from(body))).unwrap())
        .await
        .unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    (status, headers, body)
}

async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn start_proxy(upstream: SocketAddr, listen: SocketAddr, http: SocketAddr, keys: &Path) -> Child {
    Command::new(BIN)
        .args([
            "forward-proxy",
            &format!("--listen={listen}"),
            &format!("--forward={upstream}"),
            &format!("--issuer={ISSUER}"),
            &format!("--audience={AUDIENCE}"),
            &format!("--public-key-file={}", keys.join("key.pem").display()),
            "--algorithm=EdDSA",
            "--request-timeout=2s",
            "--reload-interval=100ms",
            &format!("--http-address={http}"),
        ])
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forward_proxy_in_front_of_an_addon() {
    let hits = Arc::new(AtomicUsize::new(0));
    let upstream = addon(hits.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    mount(dir.path(), "v1", &public_pem(KEY_A));
    let (listen, http) = (free_addr(), free_addr());
    let mut proxy = start_proxy(upstream, listen, http, dir.path());
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    eventually("the proxy listens", || async {
        tokio::net::TcpStream::connect(listen).await.is_ok()
    })
    .await;

    // A verified request: identity in, credential and spoofed identity out, body streamed.
    let bearer = format!("Bearer {}", token(KEY_A, "jane"));
    let body: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
    let (status, headers, echoed) = send(
        &client,
        listen,
        "/echo",
        &[
            ("authorization", &bearer),
            ("x-authenticated-user", "admin"),
            ("x-extra", "kept"),
        ],
        body.clone(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(headers["x-seen-user"], "jane");
    assert_eq!(headers["x-seen-authorization"], "no");
    assert_eq!(headers["x-seen-extra"], "kept");
    assert_eq!(echoed, body, "1 MB body streamed both ways unchanged");
    assert_eq!(hits.load(Ordering::SeqCst), 1);

    // Bad requests: 403, and the add-on never sees them.
    for headers in [
        vec![],
        vec![("authorization", "Bearer e30.e30.AAAA")],
        vec![("authorization", "Basic amFuZTpwdw==")],
    ] {
        let (status, _, _) = send(&client, listen, "/echo", &headers, Vec::new()).await;
        assert_eq!(status, 403);
    }
    let b_bearer = format!("Bearer {}", token(KEY_B, "joe"));
    assert_eq!(
        send(
            &client,
            listen,
            "/echo",
            &[("authorization", &b_bearer)],
            Vec::new()
        )
        .await
        .0,
        403,
        "key B is not trusted yet"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 1);

    // A response that would stream forever is cut at --request-timeout (2 s).
    let started = tokio::time::Instant::now();
    let response = client
        .request(
            http::Request::get(format!("http://{listen}/slow"))
                .header("authorization", &bearer)
                .body(Full::new(Bytes::new()))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let result =
        tokio::time::timeout(Duration::from_secs(10), response.into_body().collect()).await;
    let elapsed = started.elapsed();
    assert!(
        matches!(result, Ok(Err(_))),
        "the body ends with an error, not normally"
    );
    assert!(
        elapsed >= Duration::from_millis(1900) && elapsed < Duration::from_secs(5),
        "cut after {elapsed:?}"
    );

    // The mounted key changes (Kubernetes swaps the ..data symlink): key B works, key A not.
    mount(dir.path(), "v2", &public_pem(KEY_B));
    eventually("key B accepted after the swap", || async {
        send(
            &client,
            listen,
            "/echo",
            &[("authorization", &b_bearer)],
            Vec::new(),
        )
        .await
        .0 == 200
    })
    .await;
    assert_eq!(
        send(
            &client,
            listen,
            "/echo",
            &[("authorization", &bearer)],
            Vec::new()
        )
        .await
        .0,
        403,
        "key A is gone, its cached verification with it"
    );

    let metrics = client
        .request(
            http::Request::get(format!("http://{http}/metrics"))
                .body(Full::new(Bytes::new()))
                .unwrap(),
        )
        .await
        .unwrap()
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes();
    let metrics = String::from_utf8(metrics.to_vec()).unwrap();
    let value = |name: &str| -> u64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{name} missing:\n{metrics}"))
    };
    assert_eq!(value("k8s_bootstrap_forward_proxy_key_reloads_total"), 1);
    assert_eq!(
        value("k8s_bootstrap_forward_proxy_key_reload_errors_total"),
        0
    );
    // 5 rejections above, plus the polls of key B before the reload was seen.
    assert!(value("k8s_bootstrap_forward_proxy_rejected_requests_total") >= 5);
    assert_eq!(
        value("k8s_bootstrap_forward_proxy_forwarded_requests_total"),
        3
    );
    assert_eq!(
        value("k8s_bootstrap_forward_proxy_upstream_errors_total"),
        0
    );

    // SIGTERM: exit 0.
    let pid = proxy.id().unwrap();
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    let status = tokio::time::timeout(Duration::from_secs(10), proxy.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
    let mut stderr = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut proxy.stderr.take().unwrap(), &mut stderr)
        .await
        .unwrap();
    for t in [&bearer, &b_bearer] {
        assert!(!stderr.contains(t.trim_start_matches("Bearer ")));
    }
}

#[tokio::test]
async fn forward_proxy_refuses_bad_flags_and_bad_keys() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(&garbage, "not a key").unwrap();
    for (args, expected) in [
        (
            vec![
                "forward-proxy".to_owned(),
                "--forward=127.0.0.1:1".to_owned(),
                "--issuer=i".to_owned(),
                "--audience=a".to_owned(),
            ],
            "exactly one of --jwks-file and --public-key-file is required",
        ),
        (
            vec![
                "forward-proxy".to_owned(),
                "--forward=127.0.0.1:1".to_owned(),
                "--issuer=i".to_owned(),
                "--audience=a".to_owned(),
                format!("--public-key-file={}", garbage.display()),
            ],
            "keys in",
        ),
    ] {
        let output = Command::new(BIN).args(&args).output().await.unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
    }
}
