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
use tokio::process::Command;

use crate::support::{Proxy, Refusing, eventually, sigterm, spawn_proxy};

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
            .header(
                "x-seen-names",
                headers
                    .keys()
                    .map(http::HeaderName::as_str)
                    .collect::<Vec<_>>()
                    .join(","),
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

fn start_proxy(upstream: SocketAddr, keys: &Path) -> impl Future<Output = Proxy> {
    start_proxy_with(upstream, keys, &[])
}

/// The proxy's flags for these keys, and `extra`: both listeners on port 0 of loopback.
fn proxy_args(upstream: SocketAddr, keys: &Path, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "forward-proxy".to_owned(),
        "--insecure-listen-address=127.0.0.1:0".to_owned(),
        format!("--forward={upstream}"),
        format!("--issuer={ISSUER}"),
        format!("--audience={AUDIENCE}"),
        format!("--public-key-file={}", keys.join("key.pem").display()),
        "--algorithm=EdDSA".to_owned(),
        "--request-timeout=2s".to_owned(),
        "--reload-interval=100ms".to_owned(),
        "--http-address=127.0.0.1:0".to_owned(),
    ]
    .into();
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    args
}

fn start_proxy_with(
    upstream: SocketAddr,
    keys: &Path,
    extra: &[&str],
) -> impl Future<Output = Proxy> {
    let mut command = Command::new(BIN);
    command.args(proxy_args(upstream, keys, extra));
    spawn_proxy(command)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forward_proxy_in_front_of_an_addon() {
    let hits = Arc::new(AtomicUsize::new(0));
    let upstream = addon(hits.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    mount(dir.path(), "v1", &public_pem(KEY_A));
    let mut proxy = start_proxy_with(
        upstream,
        dir.path(),
        &["--strip-header=X-WebAuth-User,x-tenant-*"],
    )
    .await;
    let (listen, http) = (proxy.listen, proxy.http);
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
            // Other identity headers: removed by default, or by --strip-header.
            ("x-remote-user", "admin"),
            ("x-remote-group", "system:masters"),
            ("x-remote-extra-scopes", "all"),
            ("impersonate-user", "admin"),
            ("impersonate-extra-reason", "x"),
            ("x-forwarded-user", "admin"),
            ("x-webauth-user", "admin"),
            ("x-tenant-id", "other"),
            ("x-forwarded-for", "10.0.0.1"),
        ],
        body.clone(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(headers["x-seen-user"], "jane");
    assert_eq!(headers["x-seen-authorization"], "no");
    assert_eq!(headers["x-seen-extra"], "kept");
    let seen_names = headers["x-seen-names"].to_str().unwrap();
    for name in seen_names.split(',') {
        assert!(
            !name.starts_with("x-remote-")
                && !name.starts_with("impersonate-")
                && !name.starts_with("x-tenant-")
                && name != "x-forwarded-user"
                && name != "x-webauth-user",
            "{name} reached the add-on: {seen_names}"
        );
    }
    assert!(seen_names.contains("x-forwarded-for"), "{seen_names}");
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
    sigterm(&proxy.child);
    let status = tokio::time::timeout(Duration::from_secs(10), proxy.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
    let stderr = proxy.stderr().await;
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
                "--insecure-listen-address=127.0.0.1:0".to_owned(),
            ],
            "keys in",
        ),
        (
            vec![
                "forward-proxy".to_owned(),
                "--forward=127.0.0.1:1".to_owned(),
                "--issuer=i".to_owned(),
                "--audience=a".to_owned(),
                format!("--public-key-file={}", garbage.display()),
                "--insecure-listen-address=127.0.0.1:0".to_owned(),
                "--strip-header=x y".to_owned(),
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

/// A port already in use: the error names the flag that gave it, the address and the OS reason.
#[tokio::test]
async fn a_busy_port_names_its_flag_and_the_os_reason() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("key.pem");
    std::fs::write(&key, public_pem(KEY_A)).unwrap();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_addr = busy.local_addr().unwrap();
    for (flag, other) in [
        ("--insecure-listen-address", "--http-address"),
        ("--http-address", "--insecure-listen-address"),
    ] {
        let output = Command::new(BIN)
            .args([
                "forward-proxy",
                "--forward=127.0.0.1:1",
                "--issuer=i",
                "--audience=a",
                &format!("--public-key-file={}", key.display()),
                "--algorithm=EdDSA",
                &format!("{flag}={busy_addr}"),
                &format!("{other}=127.0.0.1:0"),
            ])
            .output()
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        // The last line; the configuration logged at start comes before it.
        assert_eq!(
            stderr.lines().last().unwrap_or_default(),
            format!(
                "error: forward-proxy: {flag} {busy_addr}: Address already in use (os error 98)"
            )
        );
    }
    drop(busy);
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
    let proxy = start_proxy(upstream, dir.path()).await;
    let listen = proxy.listen;
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
    // HTTP/1.0 without Host: the add-on's address; the request goes on in the proxy's own
    // version (RFC 9110 §2.5), so the add-on connection stays kept.
    let mut old = connect().await;
    let request = format!("GET /keep HTTP/1.0\r\nauthorization: {bearer}\r\n\r\n");
    assert_eq!(exchange(&mut old, &request).await.0, 200);
    let (_, line, host) = seen.lock().unwrap().requests.last().unwrap().clone();
    assert_eq!(
        (line.as_str(), host),
        ("GET /keep HTTP/1.1", upstream.to_string())
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
    let refusing = Refusing::bind();
    let nowhere = start_proxy(refusing.addr(), dir.path()).await;
    let (listen, http) = (nowhere.listen, nowhere.http);
    listening(listen).await;
    let mut stream = tokio::net::TcpStream::connect(listen).await.unwrap();
    assert_eq!(exchange(&mut stream, &get("/keep", &bearer)).await.0, 502);
    assert_eq!(
        metric(http, "k8s_bootstrap_forward_proxy_upstream_errors_total").await,
        1
    );

    let seen = Arc::new(std::sync::Mutex::new(Seen::default()));
    let upstream = raw_addon(seen.clone()).await;
    let mut proxy = start_proxy(upstream, dir.path()).await;
    let (listen, http) = (proxy.listen, proxy.http);
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
    sigterm(&proxy.child);
    assert_eq!(in_flight.await.unwrap(), (200, "ok".into()));
    let status = tokio::time::timeout(Duration::from_secs(10), proxy.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
}

/// A plain GET on the proxy's health and metrics address: status and body.
async fn health_get(http: SocketAddr, path: &str) -> (u16, String) {
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let request = http::Request::get(format!("http://{http}{path}"));
    let response = client
        .request(request.body(Full::default()).unwrap())
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

/// A key file that changes and cannot be loaded (broken, then deleted): with
/// `--key-reload-failure=fail-closed` every request is refused and /readyz answers 503 until
/// the file loads again; by default (`keep`) the keys loaded before stay, and /readyz says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forward_proxy_key_reload_failure() {
    let hits = Arc::new(AtomicUsize::new(0));
    let upstream = addon(hits.clone()).await;
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let bearer_a = format!("Bearer {}", token(KEY_A, "jane"));
    let bearer_b = format!("Bearer {}", token(KEY_B, "joe"));
    let status = |listen: SocketAddr, bearer: String| {
        let client = client.clone();
        async move {
            send(
                &client,
                listen,
                "/echo",
                &[("authorization", &bearer)],
                Vec::new(),
            )
            .await
            .0
        }
    };

    // Fail closed.
    let dir = tempfile::tempdir().unwrap();
    mount(dir.path(), "v1", &public_pem(KEY_A));
    let closed =
        start_proxy_with(upstream, dir.path(), &["--key-reload-failure=fail-closed"]).await;
    let (listen, http) = (closed.listen, closed.http);
    listening(listen).await;
    assert_eq!(status(listen, bearer_a.clone()).await, 200);
    assert_eq!(health_get(http, "/readyz").await.0, 200);
    mount(dir.path(), "v2", "not a key\n");
    eventually("a broken key file refuses every request", || {
        let f = status(listen, bearer_a.clone());
        async move { f.await == 403 }
    })
    .await;
    let (code, body) = health_get(http, "/readyz").await;
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("key file cannot be loaded"), "{body}");
    let metrics = health_get(http, "/metrics").await.1;
    assert!(
        metrics.contains("k8s_bootstrap_forward_proxy_key_file_failing 1"),
        "{metrics}"
    );
    assert_eq!(status(listen, bearer_b.clone()).await, 403);
    // A good file again (key B): ready, B accepted, A no longer.
    mount(dir.path(), "v3", &public_pem(KEY_B));
    eventually("the new key file loads", || {
        let f = status(listen, bearer_b.clone());
        async move { f.await == 200 }
    })
    .await;
    assert_eq!(health_get(http, "/readyz").await.0, 200);
    assert_eq!(status(listen, bearer_a.clone()).await, 403);
    // The key file deleted: refused again.
    std::fs::remove_file(dir.path().join("key.pem")).unwrap();
    eventually("a deleted key file refuses every request", || {
        let f = status(listen, bearer_b.clone());
        async move { f.await == 403 }
    })
    .await;
    assert_eq!(health_get(http, "/readyz").await.0, 503);

    // Keep (the default): the keys loaded before stay, /readyz says so.
    let dir = tempfile::tempdir().unwrap();
    mount(dir.path(), "v1", &public_pem(KEY_A));
    let kept = start_proxy(upstream, dir.path()).await;
    let (listen, http) = (kept.listen, kept.http);
    listening(listen).await;
    assert_eq!(health_get(http, "/readyz").await, (200, "ok".to_owned()));
    mount(dir.path(), "v2", "not a key\n");
    eventually("/readyz reports the failed reload", || async {
        health_get(http, "/readyz")
            .await
            .1
            .contains("the keys loaded before are in use")
    })
    .await;
    assert_eq!(health_get(http, "/readyz").await.0, 200);
    assert_eq!(status(listen, bearer_a.clone()).await, 200);
}

/// utime + stime of process `pid`, in clock ticks (/proc/<pid>/stat fields 14 and 15).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces), from field 3 on.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// Clock ticks per second (`getconf CLK_TCK`; 100 on Linux).
fn clock_ticks_per_second() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

/// Out of file descriptors (a 64-descriptor limit) with more idle client connections than
/// that: under `--max-connections` the proxy accepts no more than its cap, so /healthz still
/// answers and the proxy does not spin on failing accepts; closing connections lets new ones
/// in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forward_proxy_caps_connections_under_a_low_file_limit() {
    let dir = tempfile::tempdir().unwrap();
    mount(dir.path(), "v1", &public_pem(KEY_A));
    // No request here is forwarded (none carries a token): an add-on that refuses.
    let refusing = Refusing::bind();
    let args = proxy_args(refusing.addr(), dir.path(), &["--max-connections=16"]);
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg("ulimit -n 64 && exec \"$0\" \"$@\"")
        .arg(BIN)
        .args(&args);
    let mut proxy = spawn_proxy(command).await;
    let (listen, http) = (proxy.listen, proxy.http);
    let pid = proxy.child.id().unwrap();
    listening(listen).await;

    // More idle connections than the process has descriptors.
    let mut held = Vec::new();
    for _ in 0..100 {
        held.push(tokio::net::TcpStream::connect(listen).await.unwrap());
    }
    // Within 5 s: the proxy closes idle connections after its 10 s header read timeout, which
    // would let an uncapped proxy recover and answer then.
    let health = tokio::time::timeout(Duration::from_secs(5), health_get(http, "/healthz"))
        .await
        .expect("/healthz answers while clients hold idle connections");
    assert_eq!(health, (200, "ok".to_owned()));

    // Idle: a proxy retrying failed accepts at once would use a whole core here.
    let window = Duration::from_secs(3);
    let before = cpu_ticks(pid);
    tokio::time::sleep(window).await;
    let used = cpu_ticks(pid) - before;
    let budget = clock_ticks_per_second() * window.as_secs() / 10;
    assert!(
        used < budget,
        "the proxy used {used} ticks of CPU in {window:?} while idle (budget {budget})"
    );
    assert!(
        proxy.child.try_wait().unwrap().is_none(),
        "the proxy is still running"
    );

    // Connections closed: new ones are served (no token: 403 from the proxy itself).
    drop(held);
    let mut stream = tokio::net::TcpStream::connect(listen).await.unwrap();
    let request = "GET /keep HTTP/1.1\r\nhost: a\r\n\r\n";
    let answered = tokio::time::timeout(Duration::from_secs(10), exchange(&mut stream, request))
        .await
        .expect("a new connection is served once the idle ones are gone");
    assert_eq!(answered.0, 403);
}
