//! `k8s-bootstrap forward-proxy` soaked under mixed load for minutes (not a CI step: about
//! twelve minutes by default).
//!
//! The proxy serves plain HTTP here (`--insecure-listen-address`, given explicitly since TLS
//! became the default), so the figures stay comparable with the runs before TLS serving
//! existed; TLS handshakes and record encryption are not measured.
//!
//! The shipped binary (release build, [`SHIPPED`] features) runs in front of an add-on in this
//! process that answers every request with `<X-Authenticated-User> <path>`. At once, for
//! `SOAK_SECONDS` (default 600) after `WARM_SECONDS` (default 120) of warm-up:
//!
//! * **cached tokens**: 8 kept-alive connections, four users' tokens reused (about 400 req/s;
//!   a request on a kept connection that the proxy closed as it went out, at its maximum
//!   connection time, is retried once on a new one, as HTTP clients retry idempotent requests:
//!   RFC 9112 section 9.3.1);
//! * **uncached tokens**: 2 kept-alive connections, a freshly minted token (new subject) per
//!   request (about 50 req/s);
//! * **a forged-token flood**: 4 kept-alive connections, a valid token's header and claims with
//!   another token's signature (about 1,000 req/s), every one of which must be refused;
//! * **pipelined connections**: alice's, bob's and carol's requests written in one write on one
//!   new connection (about 20 a second), each response checked to be its own user's;
//! * **a new connection per request** (about 20 a second);
//! * **the key file rotated every 30 s** (a JWKS replaced by rename: the set `{K(n), K(n+1)}`,
//!   the clients moving from `K(n)` to `K(n+1)` a few seconds after the set `{K(n), K(n+1)}`
//!   replaced `{K(n-1), K(n)}`, so that a token valid before a rotation stays valid after it);
//! * **the add-on restarted every 2 minutes** (its listener and connections closed, back after
//!   half a second).
//!
//! It asserts that no valid request fails outside an add-on restart (a window from the stop to
//! 3 s after the add-on is back), that no forged token is accepted, that no pipelined response
//! reaches another user, and that the proxy's resident memory and open descriptors, sampled
//! with the load paused (half a restart period after the last restart), end within 5 % of where
//! they were after warm-up. Memory is also sampled under load once a minute and printed with
//! its least-squares slope (not asserted: the allocator moves in steps of a few hundred KiB, up
//! and down, so a slope over ten samples says little; a long run's trace tells growth from
//! steps). It prints the
//! figures as Markdown for `benches/README.md`. The warm-up is long enough for the proxy's
//! verified-token cache (4,096 tokens) to fill with the uncached clients' new tokens (50 a
//! second): the cache then stays full, evicting, so memory after warm-up is the steady state.
//!
//! `cargo bench -p k8s-bootstrap-benches --bench forward_proxy_soak`. Environment:
//! `SOAK_SECONDS`, `WARM_SECONDS`, `ROTATE_SECONDS` (30), `RESTART_SECONDS` (120),
//! `PROXY_FEATURES` (default [`SHIPPED`]).
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::disallowed_methods,
    reason = "a benchmark program reads clocks and fails loudly"
)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use addon_jwt::{Audience, Issuer, SigningKey};
use base64::Engine as _;
use bytes::Bytes;
use ed25519_dalek::pkcs8::EncodePrivateKey as _;
use http_body_util::{BodyExt as _, Full};
use sha2::Digest as _;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use k8s_bootstrap_benches::{
    PROXY_AUDIENCE as AUDIENCE, PROXY_ISSUER as ISSUER, SHIPPED_FEATURES as SHIPPED, free_addr,
    start_listening,
};
const CACHED_USERS: [&str; 4] = ["alice", "bob", "carol", "dave"];
/// After the add-on is back, failures are still put down to its restart for this long (the
/// proxy's idle add-on connections are found closed as they are next used).
const RESTART_SLACK: Duration = Duration::from_secs(3);

/// The `n`th signing key: Ed25519 from a seed derived from `n` (a bench needs no secrecy).
fn signing_key(n: u64) -> (SigningKey, [u8; 32]) {
    let seed: [u8; 32] = sha2::Sha256::digest(format!("forward-proxy-soak-{n}")).into();
    let key = ed25519_dalek::SigningKey::from_bytes(&seed);
    let der = key.to_pkcs8_der().unwrap();
    (
        SigningKey::from_pkcs8_der(der.as_bytes()).unwrap(),
        key.verifying_key().to_bytes(),
    )
}

/// A JWKS with keys `n` and `n + 1`, written whole (temporary file, then rename).
fn write_jwks(path: &Path, n: u64) {
    let keys: Vec<serde_json::Value> = [n, n + 1]
        .iter()
        .map(|&i| {
            let (key, public) = signing_key(i);
            serde_json::json!({
                "kty": "OKP",
                "crv": "Ed25519",
                "alg": "EdDSA",
                "use": "sig",
                "kid": key.key_id(),
                "x": base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(public),
            })
        })
        .collect();
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, serde_json::json!({ "keys": keys }).to_string()).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn mint(key: &SigningKey, user: &str) -> String {
    key.sign(
        &Issuer::new(ISSUER),
        user,
        &Audience::new(AUDIENCE),
        SystemTime::now(),
        Duration::from_secs(3600),
    )
    .unwrap()
    .expose_secret()
    .to_owned()
}

/// The tokens the clients use now, replaced at each rotation.
struct Tokens {
    key: SigningKey,
    cached: Vec<(String, String)>,
    forged: String,
}

impl Tokens {
    fn for_key(n: u64) -> Tokens {
        let (key, _) = signing_key(n);
        let cached = CACHED_USERS
            .iter()
            .map(|u| ((*u).to_owned(), mint(&key, u)))
            .collect();
        // The first user's header and claims with the signature of another user's token: a
        // well-formed signature that fails only at the end of a full check.
        let valid = mint(&key, "alice");
        let other = mint(&key, "mallory");
        let (signed, _) = valid.rsplit_once('.').unwrap();
        let (_, signature) = other.rsplit_once('.').unwrap();
        Tokens {
            key,
            cached,
            forged: format!("{signed}.{signature}"),
        }
    }
}

/// What happened, counted by all the clients.
#[derive(Default)]
struct Counts {
    cached_ok: AtomicU64,
    uncached_ok: AtomicU64,
    forged_refused: AtomicU64,
    pipelined_ok: AtomicU64,
    fresh_ok: AtomicU64,
    failed_in_restart: AtomicU64,
    failed: AtomicU64,
    forged_accepted: AtomicU64,
    crossed: AtomicU64,
    retried: AtomicU64,
}

struct Shared {
    proxy: SocketAddr,
    tokens: RwLock<Arc<Tokens>>,
    counts: Counts,
    /// (stopped at, back at) of each add-on restart, `back` `None` while it is down.
    restarts: Mutex<Vec<(Instant, Option<Instant>)>>,
    failures: Mutex<Vec<String>>,
    paused: AtomicBool,
    stop: AtomicBool,
    latencies_us: Mutex<Vec<u32>>,
    fresh_user: AtomicU64,
}

impl Shared {
    fn tokens(&self) -> Arc<Tokens> {
        Arc::clone(&self.tokens.read().unwrap())
    }

    /// Counts a failed valid request: to the add-on's restart if one was under way when it
    /// started or ended, else as a failure (with its description kept).
    fn failed(&self, started: Instant, what: String) {
        let now = Instant::now();
        let in_restart = self.restarts.lock().unwrap().iter().any(|(down, up)| {
            let until = up.map_or(now, |up| up + RESTART_SLACK);
            started <= until && now >= *down
        });
        if in_restart {
            self.counts
                .failed_in_restart
                .fetch_add(1, Ordering::Relaxed);
        } else {
            self.counts.failed.fetch_add(1, Ordering::Relaxed);
            let mut failures = self.failures.lock().unwrap();
            if failures.len() < 20 {
                failures.push(what);
            }
        }
    }

    async fn wait_while_paused(&self) {
        while self.paused.load(Ordering::Relaxed) && !self.stop.load(Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The add-on: answers `<X-Authenticated-User> <path>`; restarted on request.
/// Starts the add-on on a port of its own (bound here, before anything is told of it);
/// returns where it listens.
fn start_addon(restart: tokio::sync::mpsc::UnboundedReceiver<()>) -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(addon(listener, restart));
    });
    addr
}

/// Serves on `first`, then after each restart on the same address again.
async fn addon(
    first: std::net::TcpListener,
    mut restart: tokio::sync::mpsc::UnboundedReceiver<()>,
) {
    let addr = first.local_addr().unwrap();
    let mut first = Some(tokio::net::TcpListener::from_std(first).unwrap());
    loop {
        let listener = match first.take() {
            Some(l) => l,
            None => loop {
                match tokio::net::TcpListener::bind(addr).await {
                    Ok(l) => break l,
                    Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                }
            },
        };
        let mut connections = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let _ = stream.set_nodelay(true);
                    connections.spawn(async move {
                        let service = hyper::service::service_fn(
                            |req: hyper::Request<hyper::body::Incoming>| async move {
                                let user = req
                                    .headers()
                                    .get("x-authenticated-user")
                                    .and_then(|v| v.to_str().ok())
                                    .unwrap_or("-")
                                    .to_owned();
                                let body = format!("{user} {}", req.uri().path());
                                Ok::<_, std::convert::Infallible>(hyper::Response::new(
                                    Full::new(Bytes::from(body)),
                                ))
                            },
                        );
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                            .await;
                    });
                }
                Some(()) = restart.recv() => break,
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
        drop(listener);
        connections.shutdown().await;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn start_proxy(binary: &Path, upstream: SocketAddr, jwks: &Path) -> (Child, SocketAddr) {
    start_listening("the proxy", |listen| {
        Command::new(binary)
            .args([
                "forward-proxy",
                &format!("--insecure-listen-address={listen}"),
                &format!("--forward={upstream}"),
                &format!("--issuer={ISSUER}"),
                &format!("--audience={AUDIENCE}"),
                &format!("--jwks-file={}", jwks.display()),
                "--reload-interval=1s",
                &format!("--http-address={}", free_addr()),
            ])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap()
    })
}

/// One kept-alive client connection to the proxy.
type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

async fn connect(proxy: SocketAddr) -> Option<Sender> {
    let stream = tokio::net::TcpStream::connect(proxy).await.ok()?;
    let _ = stream.set_nodelay(true);
    let (sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .ok()?;
    tokio::spawn(connection);
    Some(sender)
}

/// Sends `GET path` with `token` on `sender` (connecting again when it is closed); the status
/// and body, or what failed. A kept-alive connection the proxy closed as the request went out
/// (its idle or maximum connection time) is retried once on a new one, as HTTP clients retry
/// an idempotent request (RFC 9112 section 9.3.1), and counted in `retried`.
async fn get(
    sender: &mut Option<Sender>,
    proxy: SocketAddr,
    path: &str,
    token: &str,
    retried: &AtomicU64,
) -> Result<(u16, String), String> {
    let mut retry = true;
    loop {
        let reused = sender.as_ref().is_some_and(|s| !s.is_closed());
        if !reused {
            *sender = connect(proxy).await;
        }
        let Some(s) = sender.as_mut() else {
            return Err("connecting to the proxy failed".to_owned());
        };
        if s.ready().await.is_err() {
            *sender = None;
            if reused && retry {
                retry = false;
                retried.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            return Err("the connection closed".to_owned());
        }
        let request = hyper::Request::get(path)
            .header("host", "addon")
            .header("authorization", format!("Bearer {token}"))
            .body(Full::new(Bytes::new()))
            .unwrap();
        let response = match s.send_request(request).await {
            Ok(r) => r,
            Err(e) => {
                *sender = None;
                if reused && retry && (e.is_incomplete_message() || e.is_canceled()) {
                    retry = false;
                    retried.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                return Err(format!("request failed: {e}"));
            }
        };
        let status = response.status().as_u16();
        return match response.into_body().collect().await {
            Ok(body) => Ok((
                status,
                String::from_utf8_lossy(&body.to_bytes()).into_owned(),
            )),
            Err(e) => {
                *sender = None;
                Err(format!("reading the body failed: {e}"))
            }
        };
    }
}

async fn cached_client(shared: Arc<Shared>, index: usize) {
    let mut sender = None;
    let mut n = index;
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    while !shared.stop.load(Ordering::Relaxed) {
        tick.tick().await;
        shared.wait_while_paused().await;
        let tokens = shared.tokens();
        let (user, token) = &tokens.cached[n % tokens.cached.len()];
        n += 1;
        let path = format!("/cached/{n}");
        let started = Instant::now();
        match get(
            &mut sender,
            shared.proxy,
            &path,
            token,
            &shared.counts.retried,
        )
        .await
        {
            Ok((200, body)) if body == format!("{user} {path}") => {
                shared.counts.cached_ok.fetch_add(1, Ordering::Relaxed);
                let us = started.elapsed().as_micros().min(u128::from(u32::MAX)) as u32;
                shared.latencies_us.lock().unwrap().push(us);
            }
            Ok((200, body)) => {
                shared.counts.crossed.fetch_add(1, Ordering::Relaxed);
                shared.failed(started, format!("cached {user} {path}: got {body:?}"));
            }
            Ok((status, body)) => {
                shared.failed(started, format!("cached {user} {path}: {status} {body:?}"));
            }
            Err(e) => shared.failed(started, format!("cached {user} {path}: {e}")),
        }
    }
}

async fn uncached_client(shared: Arc<Shared>) {
    let mut sender = None;
    let mut tick = tokio::time::interval(Duration::from_millis(40));
    while !shared.stop.load(Ordering::Relaxed) {
        tick.tick().await;
        shared.wait_while_paused().await;
        let user = format!("user-{}", shared.fresh_user.fetch_add(1, Ordering::Relaxed));
        let token = mint(&shared.tokens().key, &user);
        let path = "/uncached";
        let started = Instant::now();
        match get(
            &mut sender,
            shared.proxy,
            path,
            &token,
            &shared.counts.retried,
        )
        .await
        {
            Ok((200, body)) if body == format!("{user} {path}") => {
                shared.counts.uncached_ok.fetch_add(1, Ordering::Relaxed);
            }
            Ok((status, body)) => {
                shared.failed(started, format!("uncached {user}: {status} {body:?}"));
            }
            Err(e) => shared.failed(started, format!("uncached {user}: {e}")),
        }
    }
}

async fn flood_client(shared: Arc<Shared>) {
    let mut sender = None;
    let mut tick = tokio::time::interval(Duration::from_millis(4));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !shared.stop.load(Ordering::Relaxed) {
        tick.tick().await;
        shared.wait_while_paused().await;
        let forged = shared.tokens().forged.clone();
        match get(
            &mut sender,
            shared.proxy,
            "/forged",
            &forged,
            &shared.counts.retried,
        )
        .await
        {
            Ok((401 | 403, _)) => {
                shared.counts.forged_refused.fetch_add(1, Ordering::Relaxed);
            }
            Ok((200, _)) => {
                shared
                    .counts
                    .forged_accepted
                    .fetch_add(1, Ordering::Relaxed);
            }
            // The proxy may close a flooding connection; a new one is made next time.
            _ => {}
        }
    }
}

/// Reads one response from `stream` (buffered in `buf`): status and body, length-framed as the
/// add-on's responses are.
async fn read_response(
    stream: &mut tokio::net::TcpStream,
    buf: &mut Vec<u8>,
) -> Result<(u16, String), String> {
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut response = httparse::Response::new(&mut headers);
        if let Ok(httparse::Status::Complete(head)) = response.parse(buf) {
            let status = response.code.unwrap_or(0);
            let length = response
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .and_then(|h| {
                    std::str::from_utf8(h.value)
                        .ok()?
                        .trim()
                        .parse::<usize>()
                        .ok()
                })
                .ok_or("a response without Content-Length")?;
            if buf.len() >= head + length {
                let body = String::from_utf8_lossy(&buf[head..head + length]).into_owned();
                buf.drain(..head + length);
                return Ok((status, body));
            }
        }
        let mut chunk = [0_u8; 4096];
        match stream.read(&mut chunk).await {
            Ok(0) => return Err("the proxy closed the connection".to_owned()),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) => return Err(format!("reading failed: {e}")),
        }
    }
}

async fn pipelined_client(shared: Arc<Shared>) {
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    while !shared.stop.load(Ordering::Relaxed) {
        tick.tick().await;
        shared.wait_while_paused().await;
        let tokens = shared.tokens();
        let started = Instant::now();
        let Ok(mut stream) = tokio::net::TcpStream::connect(shared.proxy).await else {
            shared.failed(started, "pipelined: connecting failed".to_owned());
            continue;
        };
        let users = &tokens.cached[..3];
        let mut requests = String::new();
        for (user, token) in users {
            requests.push_str(&format!(
                "GET /pipelined/{user} HTTP/1.1\r\nHost: addon\r\nAuthorization: Bearer {token}\r\n\r\n"
            ));
        }
        if stream.write_all(requests.as_bytes()).await.is_err() {
            shared.failed(started, "pipelined: writing failed".to_owned());
            continue;
        }
        let mut buf = Vec::new();
        for (user, _) in users {
            match read_response(&mut stream, &mut buf).await {
                Ok((200, body)) if body == format!("{user} /pipelined/{user}") => {
                    shared.counts.pipelined_ok.fetch_add(1, Ordering::Relaxed);
                }
                Ok((200, body)) => {
                    shared.counts.crossed.fetch_add(1, Ordering::Relaxed);
                    shared.failed(started, format!("pipelined {user}: got {body:?}"));
                }
                Ok((status, body)) => {
                    shared.failed(started, format!("pipelined {user}: {status} {body:?}"));
                    break;
                }
                Err(e) => {
                    shared.failed(started, format!("pipelined {user}: {e}"));
                    break;
                }
            }
        }
    }
}

async fn fresh_connection_client(shared: Arc<Shared>) {
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    while !shared.stop.load(Ordering::Relaxed) {
        tick.tick().await;
        shared.wait_while_paused().await;
        let tokens = shared.tokens();
        let (user, token) = &tokens.cached[3];
        let started = Instant::now();
        let mut sender = None;
        match get(
            &mut sender,
            shared.proxy,
            "/fresh",
            token,
            &shared.counts.retried,
        )
        .await
        {
            Ok((200, body)) if body == format!("{user} /fresh") => {
                shared.counts.fresh_ok.fetch_add(1, Ordering::Relaxed);
            }
            Ok((status, body)) => {
                shared.failed(started, format!("fresh {user}: {status} {body:?}"));
            }
            Err(e) => shared.failed(started, format!("fresh {user}: {e}")),
        }
    }
}

/// The least-squares slope of resident memory (KiB per minute) over `(minute, KiB, _)` samples.
fn slope(samples: &[(u64, u64, usize)]) -> f64 {
    let n = samples.len() as f64;
    if samples.len() < 2 {
        return 0.0;
    }
    let mean_x = samples.iter().map(|s| s.0 as f64).sum::<f64>() / n;
    let mean_y = samples.iter().map(|s| s.1 as f64).sum::<f64>() / n;
    let (mut num, mut den) = (0.0, 0.0);
    for &(x, y, _) in samples {
        num += (x as f64 - mean_x) * (y as f64 - mean_y);
        den += (x as f64 - mean_x) * (x as f64 - mean_x);
    }
    if den == 0.0 { 0.0 } else { num / den }
}

/// The proxy's resident memory (KiB) and open descriptors.
fn resources(pid: u32) -> (u64, usize) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap();
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count();
    (rss, fds)
}

/// Pauses the load, lets the proxy settle, samples, and resumes.
async fn sample_paused(shared: &Shared, pid: u32) -> (u64, usize) {
    shared.paused.store(true, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let sample = resources(pid);
    shared.paused.store(false, Ordering::Relaxed);
    sample
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let index = ((sorted.len() - 1) as f64 * p).round() as usize;
    f64::from(sorted[index]) / 1000.0
}

fn main() {
    if !k8s_bootstrap_benches::selected("forward_proxy_soak") {
        return;
    }
    let env = k8s_bootstrap_benches::env_u64;
    let soak = Duration::from_secs(env("SOAK_SECONDS", 600));
    let warm = Duration::from_secs(env("WARM_SECONDS", 120));
    let rotate_every = Duration::from_secs(env("ROTATE_SECONDS", 30));
    let restart_every = Duration::from_secs(env("RESTART_SECONDS", 120));
    let features = std::env::var("PROXY_FEATURES").unwrap_or_else(|_| SHIPPED.to_owned());
    let binary: PathBuf = k8s_bootstrap_benches::build_cli(&features);

    let dir = tempfile::tempdir().unwrap();
    let jwks = dir.path().join("jwks.json");
    write_jwks(&jwks, 0);
    let (restart_tx, restart_rx) = tokio::sync::mpsc::unbounded_channel();
    let addon_addr = start_addon(restart_rx);
    let (mut proxy, proxy_addr) = start_proxy(&binary, addon_addr, &jwks);
    let pid = proxy.id();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let shared = Arc::new(Shared {
        proxy: proxy_addr,
        tokens: RwLock::new(Arc::new(Tokens::for_key(1))),
        counts: Counts::default(),
        restarts: Mutex::new(Vec::new()),
        failures: Mutex::new(Vec::new()),
        paused: AtomicBool::new(false),
        stop: AtomicBool::new(false),
        latencies_us: Mutex::new(Vec::new()),
        fresh_user: AtomicU64::new(0),
    });
    let report = runtime.block_on(async {
        let mut clients = tokio::task::JoinSet::new();
        for i in 0..8 {
            clients.spawn(cached_client(Arc::clone(&shared), i));
        }
        for _ in 0..2 {
            clients.spawn(uncached_client(Arc::clone(&shared)));
            clients.spawn(pipelined_client(Arc::clone(&shared)));
        }
        for _ in 0..4 {
            clients.spawn(flood_client(Arc::clone(&shared)));
        }
        clients.spawn(fresh_connection_client(Arc::clone(&shared)));

        let started = Instant::now();
        let mut rotations = 0_u64;
        let mut restarts = 0_u64;
        // Rotations and restarts half a period out of phase with the warm-up's end, so that
        // (with the default lengths, whole multiples of both periods) the two paused samples
        // both fall half a period after the last restart and rotation, not during one.
        let mut next_rotation = started + rotate_every / 2;
        let mut next_restart = started + restart_every / 2;
        let mut baseline = None;
        let mut trace: Vec<(u64, u64, usize)> = Vec::new();
        let mut next_trace = started + warm;
        let end = started + warm + soak;
        while Instant::now() < end {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let now = Instant::now();
            if baseline.is_none() && now >= started + warm {
                shared.latencies_us.lock().unwrap().clear();
                baseline = Some(sample_paused(&shared, pid).await);
            }
            // Memory under load once a minute after warm-up, to tell growth from a step.
            if now >= next_trace {
                let (rss, fds) = resources(pid);
                let minute = now.duration_since(started + warm).as_secs() / 60;
                eprintln!("soak: minute {minute}: resident {rss} KiB, {fds} descriptors");
                trace.push((minute, rss, fds));
                next_trace += Duration::from_secs(60);
            }
            if now >= next_rotation {
                rotations += 1;
                write_jwks(&jwks, rotations);
                // The proxy re-reads the file within a second; the clients move on after it.
                tokio::time::sleep(Duration::from_secs(3)).await;
                let tokens = tokio::task::spawn_blocking(move || Tokens::for_key(rotations + 1))
                    .await
                    .unwrap();
                *shared.tokens.write().unwrap() = Arc::new(tokens);
                next_rotation += rotate_every;
            }
            if now >= next_restart {
                restarts += 1;
                shared.restarts.lock().unwrap().push((Instant::now(), None));
                restart_tx.send(()).unwrap();
                // Back once its listener answers again.
                loop {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    if tokio::net::TcpStream::connect(addon_addr).await.is_ok() {
                        break;
                    }
                }
                if let Some(last) = shared.restarts.lock().unwrap().last_mut() {
                    last.1 = Some(Instant::now());
                }
                next_restart += restart_every;
            }
        }
        let last = sample_paused(&shared, pid).await;
        shared.stop.store(true, Ordering::Relaxed);
        shared.paused.store(false, Ordering::Relaxed);
        while clients.join_next().await.is_some() {}
        (baseline.unwrap_or(last), last, rotations, restarts, trace)
    });
    let _ = proxy.kill();
    let _ = proxy.wait();
    let ((rss0, fds0), (rss1, fds1), rotations, restarts, trace) = report;

    let c = &shared.counts;
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let mut latencies = shared.latencies_us.lock().unwrap().clone();
    latencies.sort_unstable();
    let total = warm + soak;
    println!(
        "forward_proxy_soak: {} s warm-up + {} s, key rotated {rotations} times, add-on restarted {restarts} times",
        warm.as_secs(),
        soak.as_secs()
    );
    println!();
    println!("| what | count | per second |");
    println!("| --- | --- | --- |");
    for (name, value) in [
        ("cached-token requests served", load(&c.cached_ok)),
        ("uncached-token requests served", load(&c.uncached_ok)),
        ("forged tokens refused", load(&c.forged_refused)),
        (
            "pipelined responses, each its own user's",
            load(&c.pipelined_ok),
        ),
        ("new-connection requests served", load(&c.fresh_ok)),
        (
            "valid requests failed during an add-on restart",
            load(&c.failed_in_restart),
        ),
        ("valid requests failed otherwise", load(&c.failed)),
        ("forged tokens accepted", load(&c.forged_accepted)),
        ("responses that reached another user", load(&c.crossed)),
        (
            "requests retried once after the proxy closed a kept connection",
            load(&c.retried),
        ),
    ] {
        println!(
            "| {name} | {value} | {:.1} |",
            value as f64 / total.as_secs_f64()
        );
    }
    println!();
    println!(
        "cached-token latency after warm-up (client to add-on and back): p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        percentile(&latencies, 1.0)
    );
    println!(
        "the proxy, load paused: resident memory {rss0} KiB after warm-up, {rss1} KiB at the end ({:+.1} %); open descriptors {fds0} -> {fds1} ({:+.1} %)",
        (rss1 as f64 / rss0 as f64 - 1.0) * 100.0,
        (fds1 as f64 / fds0 as f64 - 1.0) * 100.0
    );
    println!(
        "resident memory under load, once a minute after warm-up (KiB): {}",
        trace
            .iter()
            .map(|(_, rss, _)| rss.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let half = trace.len() / 2;
    println!(
        "least-squares slope: {:+.1} KiB per minute over the whole soak, {:+.1} KiB per minute over its second half",
        slope(&trace),
        slope(trace.get(half..).unwrap_or_default())
    );
    for f in shared.failures.lock().unwrap().iter() {
        println!("failure: {f}");
    }
    assert_eq!(
        load(&c.failed),
        0,
        "valid requests failed outside a restart"
    );
    assert_eq!(load(&c.forged_accepted), 0, "forged tokens were accepted");
    assert_eq!(load(&c.crossed), 0, "responses reached another user");
    assert!(
        load(&c.cached_ok) > 0 && load(&c.uncached_ok) > 0 && load(&c.pipelined_ok) > 0,
        "every kind of valid request was served"
    );
    assert!(
        rss1 as f64 <= rss0 as f64 * 1.05,
        "resident memory grew by more than 5 %: {rss0} -> {rss1} KiB"
    );
    assert!(
        (fds1 as f64 - fds0 as f64).abs() <= fds0 as f64 * 0.05,
        "open descriptors moved by more than 5 %: {fds0} -> {fds1}"
    );
    println!("forward_proxy_soak: passed");
}
