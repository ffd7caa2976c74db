//! `forward_proxy` in process, in front of a stub add-on on loopback: a verified request
//! reaches the add-on with `X-Authenticated-User` and without its credential, a request
//! without a valid token is answered 403 and never reaches it, the health endpoints answer,
//! and the server returns once its shutdown future completes.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::disallowed_methods,
    reason = "test code reads the wall clock and fails loudly"
)]

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use axum::extract::State;
use axum::http::HeaderMap;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use k8s_bootstrap::addon_jwt::{Algorithm, Audience, Issuer, Minter, SigningKey};
use k8s_bootstrap::forward_proxy::{self, Config, KeySource, Server};

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

/// The add-on: reports the identity headers it got, and counts requests.
async fn addon(hits: Arc<AtomicUsize>) -> SocketAddr {
    async fn echo(State(hits): State<Arc<AtomicUsize>>, headers: HeaderMap) -> String {
        hits.fetch_add(1, Ordering::SeqCst);
        let users: Vec<&str> = headers
            .get_all("x-authenticated-user")
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect();
        format!(
            "user={} authorization={}",
            users.join(","),
            headers.contains_key("authorization")
        )
    }
    let app = axum::Router::new()
        .route("/echo", axum::routing::get(echo))
        .with_state(hits);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

type HttpClient = Client<HttpConnector, Empty<Bytes>>;

async fn get(client: &HttpClient, url: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut request = http::Request::get(url);
    for (n, v) in headers {
        request = request.header(*n, *v);
    }
    let response = client
        .request(request.body(Empty::new()).unwrap())
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

fn config(upstream: SocketAddr, keys: &std::path::Path) -> Config {
    Config::new(
        &upstream.to_string(),
        ISSUER,
        KeySource::Pem(keys.to_owned(), Algorithm::EdDsa),
    )
    .audience(AUDIENCE)
    .listen("127.0.0.1:0".parse().unwrap())
    .plain_http()
    .http_address("127.0.0.1:0".parse().unwrap())
}

/// The `/proc` directories of this process's threads whose names start with `prefix`.
fn threads_named(prefix: &str) -> Vec<std::path::PathBuf> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| {
            let task = task.ok()?.path();
            let name = std::fs::read_to_string(task.join("comm")).ok()?;
            name.starts_with(prefix).then_some(task)
        })
        .collect()
}

/// The threads serving connections now (by their names).
fn connection_threads() -> usize {
    threads_named("forward-proxy-").len()
}

/// Waits (up to 30 s) until `n` connection threads run, asserting that the count never
/// passes `n` in the direction it moves.
async fn connection_threads_reach(n: usize) {
    let rising = connection_threads() < n;
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let now = connection_threads();
            if now == n {
                return;
            }
            assert_eq!(now < n, rising, "the thread count passed {n}: {now}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{n} connection threads within 30 s"));
}

/// Asserts that no connection thread is left once the call that ends them (`serve`, the
/// runtime's drop) has returned. Those join their threads, but `pthread_join` returns when the
/// kernel clears the thread's ID, a moment before it takes the thread out of `/proc`: on a
/// loaded machine the joined thread can still be listed, so the count is read again for up to
/// 5 s (a thread still serving would be listed throughout).
fn connection_threads_ended(what: &str) {
    let started = std::time::Instant::now();
    while connection_threads() != 0 && started.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(connection_threads(), 0, "the threads end with {what}");
}

/// A directory holding `key.pem`, the public half of `KEY_A`.
fn public_key_file() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("key.pem");
    let public = SigningKey::from_pkcs8_pem(KEY_A)
        .unwrap()
        .public_key_pem()
        .unwrap();
    std::fs::write(&keys, public).unwrap();
    (dir, keys)
}

/// Serves `server` on a task until the returned function is called, which then waits (up to
/// 60 s) for `serve` to return successfully.
fn serve_until_stopped(server: Server) -> impl AsyncFnOnce() {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.serve(async move {
        let _ = stopped.await;
    }));
    async move || {
        stop.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(60), serving)
            .await
            .expect("serve returns after shutdown")
            .unwrap()
            .unwrap();
    }
}

/// Held by the tests that serve, so each counts only its own connection threads.
static THREADED: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwards_verified_requests_refuses_the_others_and_shuts_down() {
    let _threaded = THREADED.lock().await;
    forwards_refuses_and_shuts_down(None).await;
}

/// The same on two connection threads of the server's own, which end with `serve`.
#[tokio::test]
async fn forwards_refuses_and_shuts_down_on_connection_threads() {
    let _threaded = THREADED.lock().await;
    forwards_refuses_and_shuts_down(NonZeroUsize::new(2)).await;
    connection_threads_ended("serve");
}

async fn forwards_refuses_and_shuts_down(threads: Option<NonZeroUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let upstream = addon(hits.clone()).await;
    let (_dir, keys) = public_key_file();

    let server = Server::bind(config(upstream, &keys).connection_threads(threads))
        .await
        .unwrap();
    let (proxy, health) = (server.local_addr(), server.http_addr());
    let stop = serve_until_stopped(server);
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let echo = format!("http://{proxy}/echo");

    // Verified: the identity in, the credential and a spoofed identity out.
    let bearer = format!("Bearer {}", token(KEY_A, "jane"));
    let (status, body) = get(
        &client,
        &echo,
        &[
            ("authorization", &bearer),
            ("x-authenticated-user", "admin"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, "user=jane authorization=false");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    // The threads start one after the other: the first may serve before the last is up.
    connection_threads_reach(threads.map_or(0, NonZeroUsize::get)).await;

    // No token, or one signed with another key: 403, and the add-on never sees them.
    let forged = format!("Bearer {}", token(KEY_B, "jane"));
    for headers in [
        &[][..],
        &[("x-authenticated-user", "admin")][..],
        &[("authorization", forged.as_str())][..],
    ] {
        let (status, _) = get(&client, &echo, headers).await;
        assert_eq!(status, 403, "{headers:?}");
    }
    assert_eq!(hits.load(Ordering::SeqCst), 1);

    // Health and metrics.
    assert_eq!(
        get(&client, &format!("http://{health}/healthz"), &[]).await,
        (200, "ok".to_owned())
    );
    assert_eq!(
        get(&client, &format!("http://{health}/readyz"), &[]).await,
        (200, "ok".to_owned())
    );
    let (status, metrics) = get(&client, &format!("http://{health}/metrics"), &[]).await;
    assert_eq!(status, 200);
    assert!(
        metrics.contains("k8s_bootstrap_forward_proxy_forwarded_requests_total 1\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("k8s_bootstrap_forward_proxy_rejected_requests_total 3\n"),
        "{metrics}"
    );

    // Graceful shutdown: serve returns, and the address no longer accepts.
    stop().await;
    assert!(tokio::net::TcpStream::connect(proxy).await.is_err());
}

/// Dropping `serve` on connection threads (a cancelled task) stops them, as it stops the
/// connections served on the caller's runtime.
#[tokio::test]
async fn dropping_serve_stops_the_connection_threads() {
    let _threaded = THREADED.lock().await;
    let (_dir, keys) = public_key_file();
    let upstream: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let server = Server::bind(config(upstream, &keys).connection_threads(NonZeroUsize::new(2)))
        .await
        .unwrap();
    let proxy = server.local_addr();
    let serving = tokio::spawn(server.serve(std::future::pending()));
    connection_threads_reach(2).await;
    serving.abort();
    let _ = serving.await;
    connection_threads_reach(0).await;
    assert!(tokio::net::TcpStream::connect(proxy).await.is_err());
}

/// Dropping the caller's runtime while `serve` runs on connection threads ends them: the
/// runtime's shutdown does not wait forever on the threads it had started.
#[test]
fn dropping_the_runtime_ends_the_connection_threads() {
    let _threaded = THREADED.blocking_lock();
    let (_dir, keys) = public_key_file();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let proxy = runtime.block_on(async {
        let upstream: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let server = Server::bind(config(upstream, &keys).connection_threads(NonZeroUsize::new(2)))
            .await
            .unwrap();
        let proxy = server.local_addr();
        tokio::spawn(server.serve(std::future::pending()));
        connection_threads_reach(2).await;
        proxy
    });
    let (dropped_tx, dropped) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        drop(runtime);
        let _ = dropped_tx.send(());
    });
    dropped
        .recv_timeout(Duration::from_secs(60))
        .expect("the runtime is dropped within 60 s");
    connection_threads_ended("the runtime");
    assert!(std::net::TcpStream::connect(proxy).is_err());
}

/// The nice value of the thread whose `/proc` directory is `task`; `None` once it has ended.
fn nice(task: &std::path::Path) -> Option<i64> {
    let stat = std::fs::read_to_string(task.join("stat")).ok()?;
    // After the name in parentheses: state is the first field, nice the 17th.
    let (_, fields) = stat.rsplit_once(')')?;
    fields.split_whitespace().nth(16)?.parse().ok()
}

/// The nice value of each thread of this process whose name starts with `prefix`.
fn nice_values(prefix: &str) -> Vec<i64> {
    threads_named(prefix)
        .iter()
        .filter_map(|task| nice(task))
        .collect()
}

/// On connection threads, a check sent aside while a known caller is served runs on a
/// blocking thread of the connection thread's runtime, at the lowest priority (nice 19); the
/// connection thread keeps the process's. The add-on is named (`localhost:port`): the name is
/// looked up on the caller's runtime, and forwarding works as with an address.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn checks_aside_run_at_the_lowest_priority_on_connection_threads() {
    let _threaded = THREADED.lock().await;
    let hits = Arc::new(AtomicUsize::new(0));
    let upstream = addon(hits.clone()).await;
    let (_dir, keys) = public_key_file();
    let mut config = config(upstream, &keys).connection_threads(NonZeroUsize::new(1));
    config.forward = format!("localhost:{}", upstream.port());
    let server = Server::bind(config).await.unwrap();
    let proxy = server.local_addr();
    let stop = serve_until_stopped(server);
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let echo = format!("http://{proxy}/echo");

    // The first request checks jane's token; the second finds it known.
    let jane = format!("Bearer {}", token(KEY_A, "jane"));
    for _ in 0..2 {
        let (status, body) = get(&client, &echo, &[("authorization", &jane)]).await;
        assert_eq!(
            (status, body.as_str()),
            (200, "user=jane authorization=false")
        );
    }
    assert!(
        nice_values("proxy-check-").is_empty(),
        "no check went aside yet"
    );
    // A new token while jane is being served: its check goes aside.
    let john = format!("Bearer {}", token(KEY_A, "john"));
    let (status, body) = get(&client, &echo, &[("authorization", &john)]).await;
    assert_eq!(
        (status, body.as_str()),
        (200, "user=john authorization=false")
    );
    assert_eq!(hits.load(Ordering::SeqCst), 3);

    // This thread's nice value, which the process's threads start with.
    let own = nice(std::path::Path::new("/proc/thread-self")).unwrap();
    assert_eq!(nice_values("proxy-check-0"), [19]);
    assert_eq!(nice_values("forward-proxy-0"), [own]);
    stop().await;
}

/// A flood of forged tokens while a known caller is served keeps the checks' blocking threads
/// within the checks' slots (one here): the next check waits for the thread the last one ran
/// on instead of starting another. Before the bound, the pool grew to a score of threads that
/// came and went, and resident memory grew with them.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_forged_token_flood_keeps_the_check_threads_within_the_slots() {
    let _threaded = THREADED.lock().await;
    let hits = Arc::new(AtomicUsize::new(0));
    let upstream = addon(hits.clone()).await;
    let (_dir, keys) = public_key_file();
    let one = NonZeroUsize::new(1);
    let config = config(upstream, &keys)
        .connection_threads(one)
        .max_concurrent_verifications(one)
        .max_concurrent_verifications_without_known_callers(one);
    let server = Server::bind(config).await.unwrap();
    let proxy = server.local_addr();
    let stop = serve_until_stopped(server);
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let echo = format!("http://{proxy}/echo");
    let jane = format!("Bearer {}", token(KEY_A, "jane"));
    assert_eq!(
        get(&client, &echo, &[("authorization", &jane)]).await.0,
        200
    );

    // Mallory's claims with another token's signature: each one needs a signature check.
    let forged = {
        let claims = token(KEY_A, "mallory");
        let other = token(KEY_A, "other");
        let (signed, _) = claims.rsplit_once('.').unwrap();
        let (_, signature) = other.rsplit_once('.').unwrap();
        format!("Bearer {signed}.{signature}")
    };
    let most = Arc::new(AtomicUsize::new(0));
    let flooding = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let sampler = {
        let (most, flooding) = (most.clone(), flooding.clone());
        tokio::spawn(async move {
            while flooding.load(Ordering::SeqCst) {
                most.fetch_max(threads_named("proxy-check-").len(), Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
    };
    let mut flood = tokio::task::JoinSet::new();
    for _ in 0..16 {
        let (client, echo, forged, jane) =
            (client.clone(), echo.clone(), forged.clone(), jane.clone());
        flood.spawn(async move {
            for i in 0..60 {
                assert_eq!(
                    get(&client, &echo, &[("authorization", &forged)]).await.0,
                    403
                );
                // The known caller keeps being served, so the checks keep going aside.
                if i % 20 == 0 {
                    assert_eq!(
                        get(&client, &echo, &[("authorization", &jane)]).await.0,
                        200
                    );
                }
            }
        });
    }
    while let Some(done) = flood.join_next().await {
        done.unwrap();
    }
    flooding.store(false, Ordering::SeqCst);
    sampler.await.unwrap();
    let most = most.load(Ordering::SeqCst);
    assert!(most >= 1, "the checks went aside to a blocking thread");
    assert_eq!(most, 1, "at most one check thread for one slot");
    stop().await;
}

/// With two connection threads and `max_connections(1)`: while one client connection is
/// open, a second one is not served by the other thread; once the first closes, it is.
#[tokio::test]
async fn the_connection_cap_holds_across_connection_threads() {
    let _threaded = THREADED.lock().await;
    let hits = Arc::new(AtomicUsize::new(0));
    let upstream = addon(hits.clone()).await;
    let (_dir, keys) = public_key_file();
    let config = config(upstream, &keys)
        .connection_threads(NonZeroUsize::new(2))
        .max_connections(NonZeroUsize::new(1));
    let server = Server::bind(config).await.unwrap();
    let proxy = server.local_addr();
    let stop = serve_until_stopped(server);
    let bearer = format!("Bearer {}", token(KEY_A, "jane"));
    let connect = || async {
        let stream = tokio::net::TcpStream::connect(proxy).await.unwrap();
        let (sender, connection) =
            hyper::client::conn::http1::handshake::<_, Empty<Bytes>>(TokioIo::new(stream))
                .await
                .unwrap();
        let driven = tokio::spawn(connection);
        (sender, driven)
    };
    let request = || {
        http::Request::get("/echo")
            .header("host", proxy.to_string())
            .header("authorization", &bearer)
            .body(Empty::new())
            .unwrap()
    };

    let (mut first, first_driven) = connect().await;
    let response = first.send_request(request()).await.unwrap();
    assert_eq!(response.status(), 200);
    let (mut second, _second_driven) = connect().await;
    let mut answered = tokio::spawn(second.send_request(request()));
    // Not served while the first connection is open, whichever thread is free.
    assert!(
        tokio::time::timeout(Duration::from_millis(500), &mut answered)
            .await
            .is_err()
    );
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    drop(first);
    let _ = first_driven.await;
    let response = tokio::time::timeout(Duration::from_secs(30), answered)
        .await
        .expect("served once the first connection closed")
        .unwrap()
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(hits.load(Ordering::SeqCst), 2);

    stop().await;
}

#[tokio::test]
async fn start_up_errors_are_typed() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.pem");
    let upstream: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let err = Server::bind(config(upstream, &missing)).await.unwrap_err();
    assert!(
        matches!(&err, forward_proxy::Error::ReadKeys { path, .. } if *path == missing),
        "{err:?}"
    );

    let keys = dir.path().join("key.pem");
    std::fs::write(&keys, "not a key").unwrap();
    let err = Server::bind(config(upstream, &keys)).await.unwrap_err();
    assert!(matches!(err, forward_proxy::Error::Keys { .. }), "{err:?}");

    let public = SigningKey::from_pkcs8_pem(KEY_A)
        .unwrap()
        .public_key_pem()
        .unwrap();
    std::fs::write(&keys, public).unwrap();
    let mut no_port = config(upstream, &keys);
    no_port.forward = "127.0.0.1".to_owned();
    let err = Server::bind(no_port).await.unwrap_err();
    assert!(matches!(err, forward_proxy::Error::Forward), "{err:?}");

    let mut no_audience = config(upstream, &keys);
    no_audience.audiences.clear();
    let err = Server::bind(no_audience).await.unwrap_err();
    assert!(matches!(err, forward_proxy::Error::NoAudience), "{err:?}");

    // Neither TLS nor plain HTTP asked for: refused, whatever else is right.
    let mut neither = config(upstream, &keys);
    neither.serving = None;
    let err = Server::bind(neither).await.unwrap_err();
    assert!(matches!(err, forward_proxy::Error::NoServing), "{err:?}");
}

/// An add-on answering `/wait?ms=N` after N milliseconds.
async fn waiting_addon() -> SocketAddr {
    async fn wait(uri: axum::http::Uri) -> &'static str {
        let ms: u64 = uri
            .query()
            .and_then(|q| q.strip_prefix("ms="))
            .and_then(|ms| ms.parse().ok())
            .unwrap();
        tokio::time::sleep(Duration::from_millis(ms)).await;
        "done"
    }
    let app = axum::Router::new().route("/wait", axum::routing::get(wait));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// One request on a kept connection, written and read by hand (so every request goes over
/// the same connection): the status and the body.
async fn exchange(stream: &mut tokio::net::TcpStream, path: &str, bearer: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let request = format!("GET {path} HTTP/1.1\r\nHost: addon\r\nAuthorization: {bearer}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break end.checked_add(4).unwrap();
        }
        let mut chunk = [0; 1024];
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the proxy closed the connection mid-response");
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(buf[..head_end].to_vec()).unwrap();
    let status = head[9..12].parse().unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length: ")
                .map(str::to_owned)
        })
        .expect("a response with Content-Length")
        .trim()
        .parse()
        .unwrap();
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let mut chunk = [0; 1024];
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the proxy closed the connection mid-body");
        body.extend_from_slice(&chunk[..n]);
    }
    (status, String::from_utf8(body).unwrap())
}

/// How long until the proxy closes `stream` (what it sends before closing is returned too),
/// writing `trickle` one byte a second meanwhile.
async fn closed_after(mut stream: tokio::net::TcpStream, trickle: &[u8]) -> (Duration, Vec<u8>) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let started = tokio::time::Instant::now();
    let (mut read, mut write) = stream.split();
    let reading = async {
        let mut got = Vec::new();
        loop {
            let mut chunk = [0; 256];
            match read.read(&mut chunk).await {
                Ok(0) | Err(_) => return got,
                Ok(n) => got.extend_from_slice(&chunk[..n]),
            }
        }
    };
    let writing = async {
        for byte in trickle {
            if write.write_all(std::slice::from_ref(byte)).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        std::future::pending::<()>().await;
    };
    let got = tokio::time::timeout(Duration::from_secs(30), async {
        tokio::select! {
            got = reading => got,
            () = writing => unreachable!(),
        }
    })
    .await
    .expect("the proxy closes the connection within 30 s");
    (started.elapsed(), got)
}

/// Each request on a kept connection has its own deadline (`request_timeout` from its own
/// start, however many came before on the connection), and the header-read timeout (10 s)
/// closes a connection idle after its requests, one sending a request head that never ends,
/// and one trickling its head a byte a second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_request_has_its_own_deadline_and_heads_are_read_within_10_s() {
    let _threaded = THREADED.lock().await;
    let upstream = waiting_addon().await;
    let (_dir, keys) = public_key_file();
    let server = Server::bind(
        config(upstream, &keys)
            .request_timeout(Duration::from_secs(1))
            .connection_threads(NonZeroUsize::new(1)),
    )
    .await
    .unwrap();
    let proxy = server.local_addr();
    let stop = serve_until_stopped(server);
    let bearer = format!("Bearer {}", token(KEY_A, "jane"));

    let kept = async {
        let mut stream = tokio::net::TcpStream::connect(proxy).await.unwrap();
        // 1.2 s of requests on one connection, each within its own second.
        for _ in 0..2 {
            assert_eq!(
                exchange(&mut stream, "/wait?ms=600", &bearer).await,
                (200, "done".to_owned())
            );
        }
        // One that takes longer is cut a second after it started: 504.
        let started = tokio::time::Instant::now();
        assert_eq!(exchange(&mut stream, "/wait?ms=5000", &bearer).await.0, 504);
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(990) && took < Duration::from_secs(3),
            "cut after {took:?}"
        );
        // The connection goes on, and its deadline is set anew.
        assert_eq!(
            exchange(&mut stream, "/wait?ms=600", &bearer).await,
            (200, "done".to_owned())
        );
        closed_after(stream, b"").await
    };
    let unfinished = async {
        let mut stream = tokio::net::TcpStream::connect(proxy).await.unwrap();
        tokio::io::AsyncWriteExt::write_all(&mut stream, b"GET /wait?ms=0 HTTP/1.1\r\nHost: a\r\n")
            .await
            .unwrap();
        closed_after(stream, b"").await
    };
    let trickled = async {
        let stream = tokio::net::TcpStream::connect(proxy).await.unwrap();
        closed_after(
            stream,
            b"GET /wait?ms=0 HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaa",
        )
        .await
    };
    let (kept, unfinished, trickled) = tokio::join!(kept, unfinished, trickled);
    for (what, (after, got)) in [
        ("idle", kept),
        ("unfinished", unfinished),
        ("trickled", trickled),
    ] {
        assert!(
            after >= Duration::from_millis(9_500) && after < Duration::from_secs(15),
            "{what}: closed after {after:?}"
        );
        assert!(
            got.is_empty() || got.starts_with(b"HTTP/1.1 408"),
            "{what}: {:?}",
            String::from_utf8_lossy(&got)
        );
    }
    stop().await;
}

/// A connection ends once its `max_connection_duration` is over, after the request then in
/// flight is answered, and a kept connection ends at once when the server is stopped (not at
/// the 10 s header-read timeout); on the caller's runtime and on connection threads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_end_at_their_lifetime_and_at_shutdown() {
    let _threaded = THREADED.lock().await;
    let bearer = format!("Bearer {}", token(KEY_A, "jane"));
    for threads in [None, NonZeroUsize::new(1)] {
        let upstream = waiting_addon().await;
        let (_dir, keys) = public_key_file();
        let server = Server::bind(
            config(upstream, &keys)
                .max_connection_duration(Duration::from_secs(1))
                .connection_threads(threads),
        )
        .await
        .unwrap();
        let proxy = server.local_addr();
        let stop = serve_until_stopped(server);

        let opened = tokio::time::Instant::now();
        let mut stream = tokio::net::TcpStream::connect(proxy).await.unwrap();
        for _ in 0..2 {
            assert_eq!(exchange(&mut stream, "/wait?ms=300", &bearer).await.0, 200);
        }
        // In flight when the lifetime ends (1 s): answered in full, then the connection closes.
        assert_eq!(
            exchange(&mut stream, "/wait?ms=800", &bearer).await,
            (200, "done".to_owned()),
            "{threads:?}"
        );
        let (_, got) = closed_after(stream, b"").await;
        let lived = opened.elapsed();
        assert!(got.is_empty(), "{threads:?}: {got:?}");
        assert!(
            lived >= Duration::from_millis(1_400) && lived < Duration::from_secs(4),
            "{threads:?}: the connection lived {lived:?}"
        );

        // A kept, idle connection at shutdown.
        let mut kept = tokio::net::TcpStream::connect(proxy).await.unwrap();
        assert_eq!(exchange(&mut kept, "/wait?ms=0", &bearer).await.0, 200);
        let stopping = tokio::time::Instant::now();
        let closed = tokio::spawn(closed_after(kept, b""));
        stop().await;
        let (_, got) = closed.await.unwrap();
        assert!(got.is_empty(), "{threads:?}: {got:?}");
        assert!(
            stopping.elapsed() < Duration::from_secs(4),
            "{threads:?}: closed {:?} after the stop",
            stopping.elapsed()
        );
    }
}

/// A request as the scripted add-on read it off the wire.
#[derive(Debug, Clone)]
struct Seen {
    head: String,
    body: Vec<u8>,
    /// Which add-on connection it came on (1 for the first accepted).
    connection: usize,
}

/// Reads one request (head and body, by its own framing) off `stream`; `None` at the end.
async fn read_request(
    stream: &mut tokio::io::BufReader<tokio::net::TcpStream>,
) -> Option<(String, Vec<u8>)> {
    use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _};
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if stream.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        head.push_str(&line);
        if line == "\r\n" {
            break;
        }
    }
    let lower = head.to_ascii_lowercase();
    let mut body = Vec::new();
    if let Some(length) = lower
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
    {
        body.resize(length.trim().parse().unwrap(), 0);
        if lower.contains("expect: 100-continue") && head.starts_with("PUT /continue ") {
            stream
                .get_mut()
                .write_all_checked(b"HTTP/1.1 100 Continue\r\n\r\n")
                .await;
        }
        if lower.contains("expect: 100-continue") && head.starts_with("PUT /refuse ") {
            return Some((head, body));
        }
        stream.read_exact(&mut body).await.ok()?;
    } else if lower.contains("transfer-encoding: chunked") {
        loop {
            let mut line = String::new();
            stream.read_line(&mut line).await.ok()?;
            let size = usize::from_str_radix(line.trim_end(), 16).unwrap();
            if size == 0 {
                // The trailer section, kept at the end of the head for the assertions.
                loop {
                    let mut line = String::new();
                    stream.read_line(&mut line).await.ok()?;
                    if line == "\r\n" {
                        break;
                    }
                    head.push_str("trailer ");
                    head.push_str(&line);
                }
                break;
            }
            let mut chunk = vec![0; size.checked_add(2).unwrap()];
            stream.read_exact(&mut chunk).await.ok()?;
            assert!(chunk.ends_with(b"\r\n"));
            body.extend_from_slice(&chunk[..size]);
        }
    }
    Some((head, body))
}

trait WriteChecked {
    async fn write_all_checked(&mut self, bytes: &[u8]);
}

impl WriteChecked for tokio::net::TcpStream {
    async fn write_all_checked(&mut self, bytes: &[u8]) {
        use tokio::io::AsyncWriteExt as _;
        let _ = self.write_all(bytes).await;
    }
}

/// An add-on written by hand on raw connections, answering by the request's path with the
/// framings a server may choose (and some no server may), and recording every request it
/// reads.
async fn scripted_addon() -> (SocketAddr, Arc<std::sync::Mutex<Vec<Seen>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    tokio::spawn(async move {
        let mut accepted: usize = 0;
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            accepted = accepted.checked_add(1).unwrap();
            let (record, connection) = (record.clone(), accepted);
            tokio::spawn(async move {
                let mut stream = tokio::io::BufReader::new(stream);
                while let Some((head, body)) = read_request(&mut stream).await {
                    let path = head.split(' ').nth(1).unwrap().to_owned();
                    let length = body.len();
                    record.lock().unwrap().push(Seen {
                        head: head.clone(),
                        body: body.clone(),
                        connection,
                    });
                    let response: Vec<u8> = match path.as_str() {
                        "/length" => b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello".to_vec(),
                        "/length-list" => {
                            b"HTTP/1.1 200 OK\r\ncontent-length: 2, 2\r\n\r\nok".to_vec()
                        }
                        "/length-differs" => {
                            b"HTTP/1.1 200 OK\r\ncontent-length: 2, 3\r\n\r\nok".to_vec()
                        }
                        "/chunked" => b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\
                            x-kind: chunked\r\n\r\n6;ext=1\r\nchunks\r\n1\r\n!\r\n\
                            0\r\nx-checksum: 42\r\n\r\n"
                            .to_vec(),
                        "/declared-trailers" => {
                            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\
                            trailer: x-checksum, x-count\r\n\r\n5\r\nhello\r\n\
                            0\r\nx-checksum: 42\r\nx-count: 1\r\nx-undeclared: no\r\n\r\n"
                                .to_vec()
                        }
                        "/until-close" => b"HTTP/1.1 200 OK\r\n\r\nuntil the end".to_vec(),
                        "/head" => b"HTTP/1.1 200 OK\r\ncontent-length: 42\r\n\r\n".to_vec(),
                        "/no-content" => b"HTTP/1.1 204 No Content\r\n\r\n".to_vec(),
                        "/not-modified" => {
                            b"HTTP/1.1 304 Not Modified\r\ncontent-length: 7\r\n\r\n".to_vec()
                        }
                        "/hints" => b"HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n\
                            HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"
                            .to_vec(),
                        "/close" => b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\
                            connection: close\r\n\r\nbye"
                            .to_vec(),
                        "/idle-close" => {
                            b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nidle".to_vec()
                        }
                        "/smuggle" => b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\
                            transfer-encoding: chunked\r\n\r\n0\r\n\r\n"
                            .to_vec(),
                        "/garbage" => b"HTTP/1.1 2x0 OK\r\n\r\n".to_vec(),
                        "/cut" => b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhalf".to_vec(),
                        "/refuse" => b"HTTP/1.1 417 Expectation Failed\r\ncontent-length: 0\r\n\
                            connection: close\r\n\r\n"
                            .to_vec(),
                        _ => format!("HTTP/1.1 200 OK\r\ncontent-length: {length}\r\n\r\n")
                            .into_bytes()
                            .into_iter()
                            .chain(body)
                            .collect(),
                    };
                    stream.get_mut().write_all_checked(&response).await;
                    if matches!(
                        path.as_str(),
                        "/until-close" | "/close" | "/idle-close" | "/cut" | "/refuse"
                    ) {
                        return;
                    }
                }
            });
        }
    });
    (addr, seen)
}

/// A client connection to the proxy (hyper's, so kept between requests) and what its
/// requests carry.
async fn proxy_connection(
    proxy: SocketAddr,
) -> hyper::client::conn::http1::SendRequest<http_body_util::Full<Bytes>> {
    let stream = tokio::net::TcpStream::connect(proxy).await.unwrap();
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    sender
}

/// The status, the headers, the body and the trailers of one response over `sender`.
async fn send(
    sender: &mut hyper::client::conn::http1::SendRequest<http_body_util::Full<Bytes>>,
    method: &str,
    path: &str,
    body: &[u8],
) -> (u16, http::HeaderMap, Vec<u8>, Option<http::HeaderMap>) {
    sender.ready().await.unwrap();
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("host", "addon")
        .header("authorization", format!("Bearer {}", token(KEY_A, "jane")))
        .header("te", "trailers")
        .body(http_body_util::Full::new(Bytes::copy_from_slice(body)))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let (parts, body) = response.into_parts();
    let collected = body.collect().await.unwrap();
    let trailers = collected.trailers().cloned();
    (
        parts.status.as_u16(),
        parts.headers,
        collected.to_bytes().to_vec(),
        trailers,
    )
}

/// Every framing an add-on may answer with reaches the client whole (length, chunks with
/// trailers, until the add-on closes, none for `HEAD`, 204 and 304, after 1xx responses), the
/// add-on connection is kept exactly as long as the add-on allows, and a response that could
/// be read two ways, or is malformed or cut, is answered 502.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_of_every_framing_pass_and_broken_ones_are_502() {
    let (addon, seen) = scripted_addon().await;
    let (_dir, keys) = public_key_file();
    let server = Server::bind(config(addon, &keys)).await.unwrap();
    let proxy = server.local_addr();
    let stop = serve_until_stopped(server);
    let mut client = proxy_connection(proxy).await;

    let (status, headers, body, _) = send(&mut client, "GET", "/length", b"").await;
    assert_eq!((status, body.as_slice()), (200, &b"hello"[..]));
    assert_eq!(headers["content-length"], "5");

    let (status, headers, body, _) = send(&mut client, "GET", "/chunked", b"").await;
    assert_eq!((status, body.as_slice()), (200, &b"chunks!"[..]));
    assert_eq!(headers["x-kind"], "chunked");

    let (status, headers, body, _) = send(&mut client, "HEAD", "/head", b"").await;
    assert_eq!((status, body.len()), (200, 0));
    assert_eq!(headers["content-length"], "42");
    let (status, _, body, _) = send(&mut client, "GET", "/no-content", b"").await;
    assert_eq!((status, body.len()), (204, 0));
    let (status, _, body, _) = send(&mut client, "GET", "/not-modified", b"").await;
    assert_eq!((status, body.len()), (304, 0));
    let (status, _, body, _) = send(&mut client, "GET", "/hints", b"").await;
    assert_eq!((status, body.as_slice()), (200, &b"ok"[..]));
    // All of these on one add-on connection.
    let connections: Vec<usize> = seen.lock().unwrap().iter().map(|s| s.connection).collect();
    assert_eq!(connections, [1; 6]);

    // Bodies until the add-on closes, and `Connection: close`: the add-on connection ends,
    // the client's goes on over a new one.
    let (status, _, body, _) = send(&mut client, "GET", "/until-close", b"").await;
    assert_eq!((status, body.as_slice()), (200, &b"until the end"[..]));
    let (status, headers, body, _) = send(&mut client, "GET", "/close", b"").await;
    assert_eq!((status, body.as_slice()), (200, &b"bye"[..]));
    assert!(!headers.contains_key("connection"), "{headers:?}");
    // A kept connection the add-on closes while idle (its keep-alive timeout) is seen closed
    // and not used: the next request, a POST (never sent twice), goes over a new one.
    let (status, _, body, _) = send(&mut client, "GET", "/idle-close", b"").await;
    assert_eq!((status, body.as_slice()), (200, &b"idle"[..]));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (status, _, body, _) = send(&mut client, "POST", "/length", b"").await;
    assert_eq!((status, body.as_slice()), (200, &b"hello"[..]));
    let connections: Vec<usize> = seen.lock().unwrap().iter().map(|s| s.connection).collect();
    assert_eq!(connections, [1, 1, 1, 1, 1, 1, 1, 2, 3, 4]);

    // Broken responses: 502, and the client's connection still serves.
    for path in ["/smuggle", "/garbage"] {
        let (status, _, _, _) = send(&mut client, "GET", path, b"").await;
        assert_eq!(status, 502, "{path}");
    }
    let (status, _, body, _) = send(&mut client, "GET", "/length", b"").await;
    assert_eq!((status, body.as_slice()), (200, &b"hello"[..]));
    // Cut within the body: the head may have gone out, so the client's connection ends
    // before a complete response (hyper then has the head and the first bytes buffered).
    client.ready().await.unwrap();
    let request = http::Request::get("/cut")
        .header("host", "addon")
        .header("authorization", format!("Bearer {}", token(KEY_A, "jane")))
        .body(http_body_util::Full::new(Bytes::new()))
        .unwrap();
    let cut = match client.send_request(request).await {
        Ok(response) => response.into_body().collect().await.map(|_| ()),
        Err(e) => Err(e),
    };
    assert!(
        cut.unwrap_err().is_incomplete_message(),
        "a cut body is not passed off as complete"
    );
    stop().await;
}

/// The trailer fields an add-on declares (`Trailer`) reach a client that accepts trailers
/// (`TE: trailers`), with the declaration; fields it did not declare do not.
#[tokio::test]
async fn declared_trailers_reach_the_client() {
    let (addon, _) = scripted_addon().await;
    let (_dir, keys) = public_key_file();
    let server = Server::bind(config(addon, &keys)).await.unwrap();
    let proxy = server.local_addr();
    let stop = serve_until_stopped(server);
    let mut client = proxy_connection(proxy).await;
    let (status, headers, body, trailers) =
        send(&mut client, "GET", "/declared-trailers", b"").await;
    assert_eq!((status, body.as_slice()), (200, &b"hello"[..]));
    assert_eq!(headers["trailer"], "x-checksum, x-count");
    let trailers = trailers.expect("the declared trailers");
    assert_eq!(trailers["x-checksum"], "42");
    assert_eq!(trailers["x-count"], "1");
    assert!(!trailers.contains_key("x-undeclared"), "{trailers:?}");
    stop().await;
}

/// Request bodies reach the add-on as the client framed them (`Content-Length` as it was,
/// chunks re-framed, trailers kept), and `Expect: 100-continue` waits for the add-on's answer:
/// its 100 lets the body through, a final status instead keeps it from ever being sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_bodies_and_expect_continue_reach_the_addon() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let (addon, seen) = scripted_addon().await;
    let (_dir, keys) = public_key_file();
    let server = Server::bind(config(addon, &keys)).await.unwrap();
    let proxy = server.local_addr();
    let stop = serve_until_stopped(server);
    let bearer = format!("Bearer {}", token(KEY_A, "jane"));

    let mut client = proxy_connection(proxy).await;
    let large = vec![b'x'; 300_000];
    let (status, _, body, _) = send(&mut client, "POST", "/echo", &large).await;
    assert_eq!((status, body.len()), (200, large.len()));
    assert!(body == large);
    let seen_now = seen.lock().unwrap().last().cloned().unwrap();
    assert!(
        seen_now.head.contains("content-length: 300000\r\n"),
        "{}",
        seen_now.head
    );

    // Chunked from the client, with a trailer: chunked to the add-on, trailer included.
    let mut raw = tokio::net::TcpStream::connect(proxy).await.unwrap();
    let request = format!(
        "POST /echo HTTP/1.1\r\nHost: addon\r\nAuthorization: {bearer}\r\n\
         Transfer-Encoding: chunked\r\nTE: trailers\r\n\r\n\
         4\r\nabcd\r\n3;x=y\r\nefg\r\n0\r\nx-sum: 7\r\n\r\n"
    );
    raw.write_all(request.as_bytes()).await.unwrap();
    let mut response = vec![0; 1024];
    let n = raw.read(&mut response).await.unwrap();
    let response = String::from_utf8_lossy(&response[..n]).into_owned();
    assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    assert!(response.ends_with("\r\n\r\nabcdefg"), "{response}");
    let seen_now = seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(seen_now.body, b"abcdefg");
    assert!(
        seen_now.head.contains("transfer-encoding: chunked\r\n")
            && seen_now.head.contains("trailer x-sum: 7\r\n"),
        "{}",
        seen_now.head
    );

    // `Expect: 100-continue`, and the add-on says 100: the client hears it, then the body
    // goes through.
    let mut raw = tokio::net::TcpStream::connect(proxy).await.unwrap();
    let head = format!(
        "PUT /continue HTTP/1.1\r\nHost: addon\r\nAuthorization: {bearer}\r\n\
         Content-Length: 5\r\nExpect: 100-continue\r\n\r\n"
    );
    raw.write_all(head.as_bytes()).await.unwrap();
    let mut got = vec![0; 1024];
    let n = tokio::time::timeout(Duration::from_secs(5), raw.read(&mut got))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&got[..n], b"HTTP/1.1 100 Continue\r\n\r\n");
    raw.write_all(b"12345").await.unwrap();
    let n = raw.read(&mut got).await.unwrap();
    let response = String::from_utf8_lossy(&got[..n]).into_owned();
    assert!(response.ends_with("\r\n\r\n12345"), "{response}");

    // And the add-on refuses at once: the client gets 417, the body is never asked for, and
    // nothing of it reaches the add-on.
    let mut raw = tokio::net::TcpStream::connect(proxy).await.unwrap();
    let head = format!(
        "PUT /refuse HTTP/1.1\r\nHost: addon\r\nAuthorization: {bearer}\r\n\
         Content-Length: 5\r\nExpect: 100-continue\r\n\r\n"
    );
    raw.write_all(head.as_bytes()).await.unwrap();
    let n = tokio::time::timeout(Duration::from_secs(5), raw.read(&mut got))
        .await
        .unwrap()
        .unwrap();
    let response = String::from_utf8_lossy(&got[..n]).into_owned();
    assert!(response.starts_with("HTTP/1.1 417 "), "{response}");
    stop().await;
}

/// A key file replaced after `Server::bind` loaded it but before `serve` started is reloaded:
/// the watch starts from the file as it was loaded, not as it is when serving begins (a key
/// rotated during start-up was otherwise missed until the next rotation).
#[tokio::test]
async fn a_key_file_replaced_between_bind_and_serve_is_reloaded() {
    let upstream = addon(Arc::new(AtomicUsize::new(0))).await;
    let (dir, keys) = public_key_file();
    let server = Server::bind(config(upstream, &keys).reload_interval(Duration::from_millis(20)))
        .await
        .unwrap();
    let proxy = server.local_addr();
    // Key B replaces key A, by a new file renamed over the old one (a new inode).
    let next = dir.path().join("next.pem");
    let public_b = SigningKey::from_pkcs8_pem(KEY_B)
        .unwrap()
        .public_key_pem()
        .unwrap();
    std::fs::write(&next, public_b).unwrap();
    std::fs::rename(&next, &keys).unwrap();
    let stop = serve_until_stopped(server);
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let echo = format!("http://{proxy}/echo");
    let bearer_b = format!("Bearer {}", token(KEY_B, "joe"));
    let started = std::time::Instant::now();
    loop {
        let (status, _) = get(&client, &echo, &[("authorization", &bearer_b)]).await;
        if status == 200 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "key B is never loaded: {status}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let bearer_a = format!("Bearer {}", token(KEY_A, "jane"));
    assert_eq!(
        get(&client, &echo, &[("authorization", &bearer_a)]).await.0,
        403
    );
    stop().await;
}

/// A chunked request's trailer section carries no identity, framing, routing or credential
/// to the add-on (any of them would arrive after the body, past every header rule): only the
/// fields a header line of the name would keep, and RFC 9110 allows in trailers, go on.
#[tokio::test]
async fn request_trailers_carry_no_identity_to_the_addon() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let (addon, seen) = scripted_addon().await;
    let (_dir, keys) = public_key_file();
    let server = Server::bind(config(addon, &keys).strip_headers(vec!["X-Tenant".to_owned()]))
        .await
        .unwrap();
    let proxy = server.local_addr();
    let stop = serve_until_stopped(server);
    let bearer = format!("Bearer {}", token(KEY_A, "alice"));
    let mut raw = tokio::net::TcpStream::connect(proxy).await.unwrap();
    let request = format!(
        "POST /echo HTTP/1.1\r\nHost: addon\r\nAuthorization: {bearer}\r\n\
         Transfer-Encoding: chunked\r\nTrailer: X-Authenticated-User, X-Sum\r\n\r\n\
         4\r\nabcd\r\n0\r\n\
         X-Authenticated-User: system:admin\r\nx_authenticated_user: system:admin\r\n\
         Impersonate-User: system:admin\r\nImpersonate-Group: system:masters\r\n\
         X-Remote-User: system:admin\r\nX-Remote-Group: system:masters\r\n\
         X-Tenant: other\r\nContent-Length: 99\r\nContent-Type: text/evil\r\n\
         Authorization: {bearer}\r\nHost: internal-admin.example\r\nCookie: session=x\r\n\
         X-Sum: 7\r\n\r\n"
    );
    raw.write_all(request.as_bytes()).await.unwrap();
    let mut response = vec![0; 1024];
    let n = tokio::time::timeout(Duration::from_secs(10), raw.read(&mut response))
        .await
        .unwrap()
        .unwrap();
    let response = String::from_utf8_lossy(&response[..n]).into_owned();
    assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    let seen = seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(seen.body, b"abcd");
    let trailers: Vec<&str> = seen
        .head
        .lines()
        .filter_map(|l| l.strip_prefix("trailer "))
        .collect();
    assert_eq!(trailers, ["x-sum: 7"], "{}", seen.head);
    let lower = seen.head.to_ascii_lowercase();
    assert_eq!(
        lower.matches("x-authenticated-user: alice").count(),
        1,
        "{}",
        seen.head
    );
    for forbidden in [
        "system:",
        "other",
        "99",
        "evil",
        "internal-admin",
        "session",
    ] {
        assert!(!lower.contains(forbidden), "{forbidden}: {}", seen.head);
    }
    stop().await;
}

/// What the add-on of the pipelining tests sends after a response, unasked: a whole response
/// of its own, which no client may ever receive.
const UNREQUESTED: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 21\r\n\r\nuser=mallory path=/x!";

/// An add-on that answers `user=<X-Authenticated-User> path=<path>` and, on some paths, sends
/// [`UNREQUESTED`] right behind the response in the same write: `/large` after a 16 KiB
/// length-framed body; `/exact` after a response of exactly 16 KiB; `/head`, `/no-content`
/// and `/not-modified` (HEAD, 204, 304: no body) after a head of exactly 16 KiB, as a body
/// they must not have.
async fn oversending_addon() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let mut stream = tokio::io::BufReader::new(stream);
                while let Some((head, _)) = read_request(&mut stream).await {
                    let path = head.split(' ').nth(1).unwrap().to_owned();
                    let user = head
                        .lines()
                        .find_map(|l| l.strip_prefix("x-authenticated-user: "))
                        .unwrap_or("-")
                        .to_owned();
                    let text = format!("user={user} path={path}");
                    let padded = |status: &str, length: usize, total: usize| {
                        let bare = format!(
                            "HTTP/1.1 {status}\r\ncontent-length: {length}\r\nx-pad: \r\n\r\n"
                        );
                        let pad = "p".repeat(total.checked_sub(bare.len()).unwrap());
                        format!(
                            "HTTP/1.1 {status}\r\ncontent-length: {length}\r\nx-pad: {pad}\r\n\r\n"
                        )
                        .into_bytes()
                    };
                    let mut response = match path.as_str() {
                        "/large" => {
                            let body = format!("{text:.<16384}");
                            format!("HTTP/1.1 200 OK\r\ncontent-length: 16384\r\n\r\n{body}")
                                .into_bytes()
                        }
                        "/exact" => {
                            let body = format!("{text:.<100}");
                            let mut r = padded("200 OK", 100, 16384 - 100);
                            r.extend_from_slice(body.as_bytes());
                            r
                        }
                        "/head" => padded("200 OK", UNREQUESTED.len(), 16384),
                        "/no-content" => padded("204 No Content", 0, 16384),
                        "/not-modified" => padded("304 Not Modified", 9, 16384),
                        _ => format!(
                            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{text}",
                            text.len()
                        )
                        .into_bytes(),
                    };
                    if path != "/plain" {
                        response.extend_from_slice(UNREQUESTED);
                    }
                    stream.get_mut().write_all_checked(&response).await;
                }
            });
        }
    });
    addr
}

/// Reads one response off `stream` (no body after `HEAD`, 204 and 304): status and body.
async fn read_response(
    stream: &mut tokio::io::BufReader<tokio::net::TcpStream>,
    head_request: bool,
) -> (u16, String) {
    use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _};
    let mut head = String::new();
    loop {
        let mut line = String::new();
        let n = stream.read_line(&mut line).await.unwrap();
        assert!(n > 0, "the proxy closed the connection: {head}");
        head.push_str(&line);
        if line == "\r\n" {
            break;
        }
    }
    let status: u16 = head[9..12].parse().unwrap();
    let length: usize = head
        .to_ascii_lowercase()
        .lines()
        .find_map(|l| l.strip_prefix("content-length: ").map(str::to_owned))
        .map_or(0, |l| l.trim().parse().unwrap());
    let bodiless = head_request || status == 204 || status == 304;
    let mut body = vec![0; if bodiless { 0 } else { length }];
    stream.read_exact(&mut body).await.unwrap();
    (status, String::from_utf8(body).unwrap())
}

/// Three users pipeline requests on one client connection while the add-on sends more than
/// the first request's response (bytes behind a length-framed body, a body after `HEAD`, 204
/// or 304): each user gets their own response and none gets what the add-on sent unasked.
/// The add-on connection is reused only when nothing at all is left to read from it, checked
/// when the next request takes it (the extra bytes may still be in the kernel then).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_users_each_get_their_own_response() {
    use tokio::io::AsyncWriteExt as _;
    let addon = oversending_addon().await;
    let (_dir, keys) = public_key_file();
    let server = Server::bind(config(addon, &keys)).await.unwrap();
    let proxy = server.local_addr();
    let stop = serve_until_stopped(server);
    let [alice, bob, carol] = ["alice", "bob", "carol"].map(|u| token(KEY_A, u));
    for (method, first) in [
        ("GET", "/large"),
        ("GET", "/exact"),
        ("HEAD", "/head"),
        ("GET", "/no-content"),
        ("GET", "/not-modified"),
    ] {
        for round in 0..3 {
            let mut stream = tokio::net::TcpStream::connect(proxy).await.unwrap();
            let request = |method: &str, path: &str, token: &str| {
                format!(
                    "{method} {path} HTTP/1.1\r\nHost: addon\r\nAuthorization: Bearer {token}\r\n\r\n"
                )
            };
            let pipeline = [
                request(method, first, &alice),
                request("GET", "/b", &bob),
                request("GET", "/c", &carol),
            ]
            .concat();
            stream.write_all(pipeline.as_bytes()).await.unwrap();
            let mut stream = tokio::io::BufReader::new(stream);
            let what = format!("{method} {first}, round {round}");
            let (status, body) = tokio::time::timeout(
                Duration::from_secs(10),
                read_response(&mut stream, method == "HEAD"),
            )
            .await
            .unwrap();
            assert!(status < 400, "{what}: {status}");
            assert!(
                body.is_empty() || body.starts_with(&format!("user=alice path={first}")),
                "{what}: alice got {body:?}"
            );
            for (user, path) in [("bob", "/b"), ("carol", "/c")] {
                let (status, body) = tokio::time::timeout(
                    Duration::from_secs(10),
                    read_response(&mut stream, false),
                )
                .await
                .unwrap();
                assert_eq!(
                    (status, body.as_str()),
                    (200, format!("user={user} path={path}").as_str()),
                    "{what}: {user}"
                );
            }
        }
    }
    stop().await;
}

/// The `Host` lines of a request head the add-on received.
fn hosts_of(head: &str) -> Vec<&str> {
    head.lines()
        .filter_map(|l| l.strip_prefix("host: "))
        .collect()
}

/// What the proxy answers itself, forwarding nothing: 400 to a request with two `Host` lines
/// (RFC 9112 §3.2) and 405 to `CONNECT` (it tunnels nothing). An absolute-form target's
/// authority is the add-on's `Host` (RFC 9112 §3.2.2), and a `Content-Length` list of one
/// number repeated reaches the client as that number (one of differing numbers is a 502).
#[tokio::test]
async fn duplicate_hosts_connect_absolute_targets_and_length_lists() {
    use tokio::io::AsyncWriteExt as _;
    let (addon, seen) = scripted_addon().await;
    let (_dir, keys) = public_key_file();
    let server = Server::bind(config(addon, &keys)).await.unwrap();
    let proxy = server.local_addr();
    let stop = serve_until_stopped(server);
    let bearer = format!("Bearer {}", token(KEY_A, "jane"));
    let ask = async |request: String| {
        let mut stream = tokio::net::TcpStream::connect(proxy).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut stream = tokio::io::BufReader::new(stream);
        tokio::time::timeout(Duration::from_secs(10), read_response(&mut stream, false))
            .await
            .unwrap()
    };

    let (status, _) = ask(format!(
        "GET /length HTTP/1.1\r\nHost: public.example\r\nHost: internal-admin.example\r\n\
         Authorization: {bearer}\r\n\r\n"
    ))
    .await;
    assert_eq!(status, 400);
    let (status, _) = ask(format!(
        "CONNECT internal-admin.example:443 HTTP/1.1\r\nHost: internal-admin.example:443\r\n\
         Authorization: {bearer}\r\n\r\n"
    ))
    .await;
    assert_eq!(status, 405);
    // Refused for what they are before any token is looked at: the same answers without one.
    let (status, _) = ask(
        "GET /length HTTP/1.1\r\nHost: public.example\r\nHost: internal-admin.example\r\n\r\n"
            .to_owned(),
    )
    .await;
    assert_eq!(status, 400);
    let (status, _) = ask(
        "CONNECT internal-admin.example:443 HTTP/1.1\r\nHost: internal-admin.example:443\r\n\r\n"
            .to_owned(),
    )
    .await;
    assert_eq!(status, 405);
    assert!(
        seen.lock().unwrap().is_empty(),
        "nothing reaches the add-on"
    );

    let (status, body) = ask(format!(
        "POST http://target.example:8080/echo?x=1 HTTP/1.1\r\nHost: other.example\r\n\
         Authorization: {bearer}\r\nContent-Length: 2\r\n\r\nhi"
    ))
    .await;
    assert_eq!((status, body.as_str()), (200, "hi"));
    let head = seen.lock().unwrap().last().unwrap().head.clone();
    assert!(head.starts_with("POST /echo?x=1 HTTP/1.1\r\n"), "{head}");
    assert_eq!(hosts_of(&head), ["target.example:8080"], "{head}");

    // A client's own `Host` goes on as it came, once; an HTTP/1.0 request without one gets
    // the add-on's address.
    let (status, _) = ask(format!(
        "GET /length HTTP/1.1\r\nHost: public.example\r\nAuthorization: {bearer}\r\n\r\n"
    ))
    .await;
    assert_eq!(status, 200);
    let head = seen.lock().unwrap().last().unwrap().head.clone();
    assert_eq!(hosts_of(&head), ["public.example"], "{head}");
    let (status, _) = ask(format!(
        "GET /length HTTP/1.0\r\nAuthorization: {bearer}\r\n\r\n"
    ))
    .await;
    assert_eq!(status, 200);
    let head = seen.lock().unwrap().last().unwrap().head.clone();
    assert_eq!(hosts_of(&head), [addon.to_string()], "{head}");

    let mut stream = tokio::net::TcpStream::connect(proxy).await.unwrap();
    let request =
        format!("GET /length-list HTTP/1.1\r\nHost: addon\r\nAuthorization: {bearer}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    while !raw.ends_with(b"\r\n\r\nok") {
        let mut chunk = [0; 1024];
        let n = tokio::time::timeout(Duration::from_secs(10), stream.readable())
            .await
            .map(|_| stream.try_read(&mut chunk))
            .unwrap();
        match n {
            Ok(0) => panic!("closed: {}", String::from_utf8_lossy(&raw)),
            Ok(n) => raw.extend_from_slice(&chunk[..n]),
            Err(_) => {}
        }
    }
    let response = String::from_utf8(raw).unwrap().to_ascii_lowercase();
    let lengths: Vec<&str> = response
        .lines()
        .filter_map(|l| l.strip_prefix("content-length: "))
        .collect();
    assert_eq!(lengths, ["2"], "{response}");
    let (status, _) = ask(format!(
        "GET /length-differs HTTP/1.1\r\nHost: addon\r\nAuthorization: {bearer}\r\n\r\n"
    ))
    .await;
    assert_eq!(status, 502);
    stop().await;
}

/// A key file rewritten in place, keeping its inode, its size and its modification time (as
/// `cp -p` over it, or a reproducible build, does) is reloaded: a change is told by what the
/// file holds, not by its metadata.
#[tokio::test]
async fn a_key_file_rewritten_in_place_with_its_size_and_mtime_is_reloaded() {
    use std::io::Write as _;
    use std::os::unix::fs::MetadataExt as _;
    let upstream = addon(Arc::new(AtomicUsize::new(0))).await;
    let (_dir, keys) = public_key_file();
    let before = std::fs::metadata(&keys).unwrap();
    let server = Server::bind(config(upstream, &keys).reload_interval(Duration::from_millis(20)))
        .await
        .unwrap();
    let proxy = server.local_addr();
    let stop = serve_until_stopped(server);
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let echo = format!("http://{proxy}/echo");
    let bearer_a = format!("Bearer {}", token(KEY_A, "jane"));
    let bearer_b = format!("Bearer {}", token(KEY_B, "joe"));
    assert_eq!(
        get(&client, &echo, &[("authorization", &bearer_a)]).await.0,
        200
    );
    // Let the watch see the file as loaded first (several intervals).
    tokio::time::sleep(Duration::from_millis(200)).await;

    let public_b = SigningKey::from_pkcs8_pem(KEY_B)
        .unwrap()
        .public_key_pem()
        .unwrap();
    assert_eq!(public_b.len() as u64, before.len(), "the same size");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&keys)
        .unwrap();
    file.write_all(public_b.as_bytes()).unwrap();
    file.set_modified(before.modified().unwrap()).unwrap();
    drop(file);
    let after = std::fs::metadata(&keys).unwrap();
    assert_eq!(
        (
            after.dev(),
            after.ino(),
            after.modified().unwrap(),
            after.len()
        ),
        (
            before.dev(),
            before.ino(),
            before.modified().unwrap(),
            before.len()
        ),
        "the rewrite keeps the inode, the size and the mtime"
    );

    let started = std::time::Instant::now();
    loop {
        let (status, _) = get(&client, &echo, &[("authorization", &bearer_b)]).await;
        if status == 200 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "key B is never loaded: {status}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        get(&client, &echo, &[("authorization", &bearer_a)]).await.0,
        403
    );
    stop().await;
}

/// A `tracing` writer that keeps everything written.
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    /// Waits (up to 20 s) until the log holds `needle`.
    async fn wait_for(&self, needle: &str) {
        let started = std::time::Instant::now();
        while !self.text().contains(needle) {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "no {needle:?} in the log:\n{}",
                self.text()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// At INFO an operator reads what the proxy does: where it listens, where it forwards, which
/// key file and how many audiences; each key reload (path, number of keys) and each failed
/// one (path, reason, at WARN); an add-on that cannot be reached (WARN); the shutdown begun
/// and finished. Refused requests (403, 400, 405) stay at DEBUG, so no client can flood the
/// log, and no token appears.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_reads_what_the_proxy_does_at_info() {
    use tokio::io::AsyncWriteExt as _;
    // One global subscriber (only this test installs one): a thread-local one can miss
    // events when another test thread registers the same callsite first. Other tests' INFO
    // lines land here too, which the assertions allow.
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let upstream = addon(Arc::new(AtomicUsize::new(0))).await;
    let (dir, keys) = public_key_file();
    let server = Server::bind(config(upstream, &keys).reload_interval(Duration::from_millis(20)))
        .await
        .unwrap();
    let proxy = server.local_addr();
    let listening = format!("local={proxy}");
    captured.wait_for(&listening).await;
    let line = captured
        .text()
        .lines()
        .find(|l| l.contains(&listening))
        .unwrap()
        .to_owned();
    for field in [
        format!("forward={upstream}"),
        format!("keys={}", keys.display()),
        "audiences=1".to_owned(),
        "http=127.0.0.1:".to_owned(),
    ] {
        assert!(line.contains(&field), "{field} in {line}");
    }
    let stop = serve_until_stopped(server);

    // Refused requests: nothing at INFO.
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let echo = format!("http://{proxy}/echo");
    let forged = "Bearer eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJtYWxsb3J5In0.c2lnbmF0dXJl";
    assert_eq!(
        get(&client, &echo, &[("authorization", forged)]).await.0,
        403
    );
    let bearer = format!("Bearer {}", token(KEY_A, "jane"));
    let mut raw = tokio::net::TcpStream::connect(proxy).await.unwrap();
    raw.write_all(
        format!("GET /echo HTTP/1.1\r\nHost: a\r\nHost: b\r\nAuthorization: {bearer}\r\n\r\n")
            .as_bytes(),
    )
    .await
    .unwrap();
    let mut raw = tokio::io::BufReader::new(raw);
    assert_eq!(read_response(&mut raw, false).await.0, 400);

    // A reload, then a failed one.
    let next = dir.path().join("next.pem");
    let public_b = SigningKey::from_pkcs8_pem(KEY_B)
        .unwrap()
        .public_key_pem()
        .unwrap();
    std::fs::write(&next, public_b).unwrap();
    std::fs::rename(&next, &keys).unwrap();
    captured.wait_for("forward-proxy: key file reloaded").await;
    std::fs::write(&next, "not a key").unwrap();
    std::fs::rename(&next, &keys).unwrap();
    captured
        .wait_for("forward-proxy: the key file cannot be loaded")
        .await;
    stop().await;
    captured
        .wait_for("forward-proxy: shutting down, finishing the requests in flight")
        .await;
    captured.wait_for("forward-proxy: stopped").await;

    // An add-on that cannot be reached.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let (_dir, keys_a) = public_key_file();
    let server = Server::bind(config(closed, &keys_a)).await.unwrap();
    let proxy = server.local_addr();
    let stop = serve_until_stopped(server);
    let echo = format!("http://{proxy}/echo");
    // Twenty failures in a row (well within 10 s): one warning, not one per request.
    for _ in 0..20 {
        assert_eq!(
            get(&client, &echo, &[("authorization", &bearer)]).await.0,
            502
        );
    }
    captured.wait_for(&format!("addon={closed}")).await;
    stop().await;
    let warnings = captured
        .text()
        .lines()
        .filter(|l| l.contains(&format!("addon={closed}")) && l.contains(" WARN "))
        .count();
    assert_eq!(warnings, 1, "{}", captured.text());

    let log = captured.text();
    let reloaded = log
        .lines()
        .find(|l| l.contains("key file reloaded") && l.contains(&keys.display().to_string()))
        .expect("the reload names the key file");
    assert!(
        reloaded.contains(" INFO ") && reloaded.contains("keys=1"),
        "{reloaded}"
    );
    let failed = log
        .lines()
        .find(|l| {
            l.contains("key file cannot be loaded") && l.contains(&keys.display().to_string())
        })
        .expect("the failed reload names the key file");
    assert!(failed.contains(" WARN "), "{failed}");
    let unreachable = log
        .lines()
        .find(|l| l.contains(&format!("addon={closed}")))
        .unwrap();
    assert!(unreachable.contains(" WARN "), "{unreachable}");
    for quiet in ["request rejected", "refused (4", "Host lines"] {
        assert!(!log.contains(quiet), "{quiet} at INFO:\n{log}");
    }
    assert!(!log.contains("eyJ"), "a token in the log:\n{log}");
}
