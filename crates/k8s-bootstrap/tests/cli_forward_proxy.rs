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
    listening(listen).await;

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

/// What the raw add-on saw: connections accepted, each request (connection, request line,
/// `Host`), and which connections the proxy closed.
#[derive(Default, Debug)]
struct Seen {
    connections: usize,
    requests: Vec<(usize, String, String)>,
    closed_by_proxy: Vec<usize>,
}

/// Reads one request head (requests here have no body) from `stream`; `None` at end of stream.
async fn read_head(stream: &mut tokio::net::TcpStream, buf: &mut Vec<u8>) -> Option<String> {
    use tokio::io::AsyncReadExt as _;
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head: Vec<u8> = buf.drain(..end + 4).collect();
            return Some(String::from_utf8(head).unwrap());
        }
        let mut chunk = [0u8; 4096];
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn header_value(head: &str, name: &str) -> String {
    head.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim().to_owned())
        .unwrap_or_default()
}

/// An add-on written byte by byte, to see exactly what the proxy sends and to close
/// connections as real servers do. By path: `/keep` answers and keeps the connection, `/close`
/// answers with `Connection: close` and closes, `/silent` answers and closes without saying
/// so, `/partial` sends half a body and waits, `/hang` never answers, `/delay` answers after a
/// second.
async fn raw_addon(seen: Arc<std::sync::Mutex<Seen>>) -> SocketAddr {
    use tokio::io::AsyncWriteExt as _;
    const OK: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            let id = {
                let mut s = seen.lock().unwrap();
                s.connections += 1;
                s.connections
            };
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                loop {
                    let Some(head) = read_head(&mut stream, &mut buf).await else {
                        seen.lock().unwrap().closed_by_proxy.push(id);
                        return;
                    };
                    let line = head.lines().next().unwrap_or_default().to_owned();
                    let host = header_value(&head, "host");
                    seen.lock().unwrap().requests.push((id, line.clone(), host));
                    let path = line.split(' ').nth(1).unwrap_or_default();
                    match path.split('?').next().unwrap_or_default() {
                        "/close" => {
                            let close = b"HTTP/1.1 200 OK\r\nconnection: close, x-hop\r\nx-hop: 1\r\nkeep-alive: timeout=5\r\nx-end-to-end: 1\r\ncontent-length: 2\r\n\r\nok";
                            let _ = stream.write_all(close).await;
                            return;
                        }
                        "/silent" => {
                            let _ = stream.write_all(OK).await;
                            return;
                        }
                        "/partial" => {
                            let partial = b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhalf.";
                            let _ = stream.write_all(partial).await;
                        }
                        "/hang" => std::future::pending::<()>().await,
                        "/delay" => {
                            tokio::time::sleep(Duration::from_secs(1)).await;
                            let _ = stream.write_all(OK).await;
                        }
                        _ => {
                            let _ = stream.write_all(OK).await;
                        }
                    }
                }
            });
        }
    });
    addr
}

/// Waits until the proxy accepts connections on `listen`.
async fn listening(listen: SocketAddr) {
    eventually("the proxy listens", || async {
        tokio::net::TcpStream::connect(listen).await.is_ok()
    })
    .await;
}

/// Waits until the raw add-on has seen a request for `path`.
async fn reaches_addon(seen: &Arc<std::sync::Mutex<Seen>>, path: &str) {
    eventually(
        &format!("a request for {path} reaches the add-on"),
        || async {
            seen.lock()
                .unwrap()
                .requests
                .iter()
                .any(|(_, line, _)| line.contains(path))
        },
    )
    .await;
}

/// Sends `request` on `stream` and reads the response's status and body (by content-length).
async fn exchange(stream: &mut tokio::net::TcpStream, request: &str) -> (u16, String) {
    let (status, _, body) = exchange_head(stream, request).await;
    (status, body)
}

/// [`exchange`], with the response head.
async fn exchange_head(stream: &mut tokio::net::TcpStream, request: &str) -> (u16, String, String) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let head = read_head(stream, &mut buf).await.expect("a response");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let length: usize = header_value(&head, "content-length").parse().unwrap_or(0);
    while buf.len() < length {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the body ended early");
        buf.extend_from_slice(&chunk[..n]);
    }
    (status, head, String::from_utf8(buf).unwrap())
}

fn get(path: &str, bearer: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nhost: addon.example\r\nauthorization: {bearer}\r\n\r\n")
}

/// Each client connection forwards over one add-on connection of its own, kept across its
/// requests, opened again when the add-on closes it (announced or not), and closed with the
/// client connection; the add-on gets the target in origin form and a `Host` (the client's, or
/// its own address for an HTTP/1.0 request without one); more than 100 header lines are
/// refused before the add-on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forward_proxy_addon_connections() {
    let seen = Arc::new(std::sync::Mutex::new(Seen::default()));
    let upstream = raw_addon(seen.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    mount(dir.path(), "v1", &public_pem(KEY_A));
    let (listen, http) = (free_addr(), free_addr());
    let _proxy = start_proxy(upstream, listen, http, dir.path());
    listening(listen).await;
    let bearer = format!("Bearer {}", token(KEY_A, "jane"));
    let connect = || async { tokio::net::TcpStream::connect(listen).await.unwrap() };

    let mut first = connect().await;
    for _ in 0..3 {
        assert_eq!(
            exchange(&mut first, &get("/keep", &bearer)).await,
            (200, "ok".into())
        );
    }
    assert_eq!(
        seen.lock().unwrap().connections,
        1,
        "three requests, one add-on connection"
    );
    let mut second = connect().await;
    assert_eq!(exchange(&mut second, &get("/keep", &bearer)).await.0, 200);
    assert_eq!(
        seen.lock().unwrap().connections,
        2,
        "a second client, a second connection"
    );

    // The add-on closes, saying so: the next request opens a new connection. What concerned
    // only the add-on's connection does not reach the client (its connection stays open).
    let (status, head, _) = exchange_head(&mut first, &get("/close", &bearer)).await;
    assert_eq!(status, 200);
    assert_eq!(header_value(&head, "x-end-to-end"), "1");
    for hop in ["connection", "x-hop", "keep-alive"] {
        assert_eq!(header_value(&head, hop), "", "{hop} in {head}");
    }
    assert_eq!(exchange(&mut first, &get("/keep", &bearer)).await.0, 200);
    assert_eq!(seen.lock().unwrap().connections, 3);
    // The add-on closes without saying so; the proxy notices, and opens a new one.
    assert_eq!(exchange(&mut first, &get("/silent", &bearer)).await.0, 200);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(exchange(&mut first, &get("/keep", &bearer)).await.0, 200);
    assert_eq!(seen.lock().unwrap().connections, 4);

    // Origin form and Host, from an absolute-form request.
    let absolute = format!(
        "GET http://addon.example/keep?x=1 HTTP/1.1\r\nhost: addon.example\r\nauthorization: {bearer}\r\n\r\n"
    );
    assert_eq!(exchange(&mut first, &absolute).await.0, 200);
    let (_, line, host) = seen.lock().unwrap().requests.last().unwrap().clone();
    assert_eq!(
        (line.as_str(), host.as_str()),
        ("GET /keep?x=1 HTTP/1.1", "addon.example")
    );
    // HTTP/1.0 without Host: the add-on's address.
    let mut old = connect().await;
    let request = format!("GET /keep HTTP/1.0\r\nauthorization: {bearer}\r\n\r\n");
    assert_eq!(exchange(&mut old, &request).await.0, 200);
    let (_, line, host) = seen.lock().unwrap().requests.last().unwrap().clone();
    assert_eq!(
        (line.as_str(), host),
        ("GET /keep HTTP/1.0", upstream.to_string())
    );

    // 101 header lines: 431, and the add-on never sees the request.
    let requests = seen.lock().unwrap().requests.len();
    let mut many = format!("GET /keep HTTP/1.1\r\nhost: a\r\nauthorization: {bearer}\r\n");
    for i in 0..99 {
        many.push_str(&format!("x-h{i}: v\r\n"));
    }
    many.push_str("\r\n");
    assert_eq!(exchange(&mut connect().await, &many).await.0, 431);
    assert_eq!(seen.lock().unwrap().requests.len(), requests);

    // A client that leaves in the middle of a response: its add-on connection is closed.
    let mut leaving = connect().await;
    tokio::io::AsyncWriteExt::write_all(&mut leaving, get("/partial", &bearer).as_bytes())
        .await
        .unwrap();
    reaches_addon(&seen, "/partial").await;
    let partial = seen.lock().unwrap().connections;
    drop(leaving);
    eventually(
        "the add-on connection is closed with the client's",
        || async { seen.lock().unwrap().closed_by_proxy.contains(&partial) },
    )
    .await;
    // The others carry on.
    assert_eq!(exchange(&mut second, &get("/keep", &bearer)).await.0, 200);
    assert_eq!(exchange(&mut first, &get("/keep", &bearer)).await.0, 200);
}

/// An add-on that is not there is 502, one that does not answer within `--request-timeout`
/// is 504 (both counted), and SIGTERM lets a request in flight finish before exiting 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forward_proxy_addon_failures_and_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    mount(dir.path(), "v1", &public_pem(KEY_A));
    let bearer = format!("Bearer {}", token(KEY_A, "jane"));
    let metric = |http: SocketAddr, name: &'static str| async move {
        let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
        let request = http::Request::get(format!("http://{http}/metrics"));
        let response = client
            .request(request.body(Full::default()).unwrap())
            .await
            .unwrap();
        let text = response.into_body().collect().await.unwrap().to_bytes();
        let text = String::from_utf8(text.to_vec()).unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap()
    };

    // Nothing listens at --forward.
    let (listen, http) = (free_addr(), free_addr());
    let _nowhere = start_proxy(free_addr(), listen, http, dir.path());
    listening(listen).await;
    let mut stream = tokio::net::TcpStream::connect(listen).await.unwrap();
    assert_eq!(exchange(&mut stream, &get("/keep", &bearer)).await.0, 502);
    assert_eq!(
        metric(http, "k8s_bootstrap_forward_proxy_upstream_errors_total").await,
        1
    );

    let seen = Arc::new(std::sync::Mutex::new(Seen::default()));
    let upstream = raw_addon(seen.clone()).await;
    let (listen, http) = (free_addr(), free_addr());
    let mut proxy = start_proxy(upstream, listen, http, dir.path());
    listening(listen).await;
    // No answer within --request-timeout (2 s).
    let mut stream = tokio::net::TcpStream::connect(listen).await.unwrap();
    let started = tokio::time::Instant::now();
    assert_eq!(exchange(&mut stream, &get("/hang", &bearer)).await.0, 504);
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(1900) && elapsed < Duration::from_secs(5),
        "{elapsed:?}"
    );
    assert_eq!(
        metric(http, "k8s_bootstrap_forward_proxy_upstream_errors_total").await,
        1
    );

    // SIGTERM while a request waits for a slow add-on: it is answered, then the proxy exits 0.
    let mut stream = tokio::net::TcpStream::connect(listen).await.unwrap();
    let in_flight =
        tokio::spawn(async move { exchange(&mut stream, &get("/delay", &bearer)).await });
    reaches_addon(&seen, "/delay").await;
    let pid = proxy.id().unwrap();
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    assert_eq!(in_flight.await.unwrap(), (200, "ok".into()));
    let status = tokio::time::timeout(Duration::from_secs(10), proxy.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
}
