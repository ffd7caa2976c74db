//! `k8s-bootstrap forward-proxy` under load, driven by `oha` (`cargo install oha`), in front
//! of a trivial upstream on loopback, beside that upstream alone in the same run.
//!
//! Cases: maximum throughput (closed loop, 32 connections) and latency at a fixed rate (1,000
//! requests per second on 8 connections), for the upstream alone, through the proxy with a
//! cached token, and through the proxy with its verified-token cache off (every request
//! verifies an Ed25519 signature); then a flood of forged tokens (a valid token's header and
//! claims with another token's signature, so each costs a full check; 32 connections, as fast
//! as they go) while valid requests run at the fixed rate, measured at once.
//!
//! `cargo bench -p k8s-bootstrap-benches --bench forward_proxy_load` (skips, saying so, when
//! `oha` is not on PATH; `LOAD_SECONDS` sets each run's length, default 10; `VERIFY_SLOTS` the
//! proxy's `--max-concurrent-verifications`, default 0: half the CPUs).
//!
//! `PROXY_CPU=<n>` gives the proxy core `n` to itself (`taskset`) and keeps oha and the
//! upstream off it, in the bare runs too: the proxy then has its own CPU, as a sidecar container
//! has its own CPU request, and the ratio measures what it costs a client rather than what it
//! takes from a load generator sharing its cores.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::arithmetic_side_effects,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::cast_precision_loss,
    clippy::disallowed_methods,
    reason = "a benchmark program reads clocks and fails loudly"
)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

use addon_jwt::{Audience, Issuer, Minter, SigningKey};
use bytes::Bytes;
use http_body_util::Full;
use serde_json::Value;

const KEY: &str = "-----BEGIN PRIVATE KEY-----\n\
MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
-----END PRIVATE KEY-----\n";
const ISSUER: &str = "https://kubernetes.default.svc";
const AUDIENCE: &str = "kube-system/dashboard";

fn free_addr() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// The upstream: answers every request `200 ok` (hyper, one worker thread).
fn start_upstream() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let _ = stream.set_nodelay(true);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(|_req| async {
                        Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::from_static(
                            b"ok",
                        ))))
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
    });
    addr
}

fn start_proxy(
    binary: &Path,
    upstream: SocketAddr,
    key_file: &Path,
    cache: usize,
) -> (Child, SocketAddr) {
    let listen = free_addr();
    let mut command = match proxy_cpu() {
        Some(cpu) => {
            let mut c = Command::new("taskset");
            c.args(["-c", &cpu.to_string()]).arg(binary);
            c
        }
        None => Command::new(binary),
    };
    let mut child = command
        .args([
            "forward-proxy",
            &format!("--listen={listen}"),
            &format!("--forward={upstream}"),
            &format!("--issuer={ISSUER}"),
            &format!("--audience={AUDIENCE}"),
            &format!("--public-key-file={}", key_file.display()),
            "--algorithm=EdDSA",
            &format!("--verified-cache-size={cache}"),
            &format!(
                "--max-concurrent-verifications={}",
                std::env::var("VERIFY_SLOTS").unwrap_or_else(|_| "0".to_owned())
            ),
            &format!("--http-address={}", free_addr()),
        ])
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..200 {
        if std::net::TcpStream::connect(listen).is_ok() {
            return (child, listen);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the proxy did not start");
}

/// Runs oha and returns its JSON summary.
fn oha(url: &str, token: &str, connections: u32, rate: Option<u32>, seconds: u64) -> Child {
    let mut cmd = Command::new("oha");
    cmd.args([
        "--no-tui",
        "--output-format",
        "json",
        "-z",
        &format!("{seconds}s"),
        "-c",
        &connections.to_string(),
        "-H",
        &format!("Authorization: Bearer {token}"),
    ]);
    if let Some(q) = rate {
        cmd.args(["-q", &q.to_string()]);
    }
    cmd.arg(url).stdout(Stdio::piped()).stderr(Stdio::null());
    cmd.spawn().unwrap()
}

struct Stats {
    rps: f64,
    p50: f64,
    p99: f64,
    ok: u64,
    forbidden: u64,
}

fn stats(child: Child) -> Stats {
    let output = child.wait_with_output().unwrap();
    let v: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "oha output is not JSON ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    });
    let codes = &v["statusCodeDistribution"];
    Stats {
        rps: v["summary"]["requestsPerSec"].as_f64().unwrap_or(0.0),
        p50: v["latencyPercentiles"]["p50"].as_f64().unwrap_or(f64::NAN),
        p99: v["latencyPercentiles"]["p99"].as_f64().unwrap_or(f64::NAN),
        ok: codes["200"].as_u64().unwrap_or(0),
        forbidden: codes["403"].as_u64().unwrap_or(0),
    }
}

/// `PROXY_CPU`, when set: the core the proxy gets to itself.
fn proxy_cpu() -> Option<usize> {
    std::env::var("PROXY_CPU").ok()?.parse().ok()
}

/// Keeps this process (the upstream's threads, and oha, which inherits it) off the proxy's core.
fn pin_self_away_from(cpu: usize) {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let others: Vec<String> = (0..cpus)
        .filter(|c| *c != cpu)
        .map(|c| c.to_string())
        .collect();
    let status = Command::new("taskset")
        .args(["-a", "-p", "-c", &others.join(",")])
        .arg(std::process::id().to_string())
        .stdout(Stdio::null())
        .status()
        .expect("taskset (util-linux) is needed for PROXY_CPU");
    assert!(status.success(), "taskset failed");
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if args
        .iter()
        .any(|a| !a.starts_with('-') && !"forward_proxy_load".contains(a.as_str()))
    {
        return;
    }
    if Command::new("oha").arg("--version").output().is_err() {
        println!("forward_proxy_load: skipped, `oha` is not on PATH (cargo install oha --locked)");
        return;
    }
    let seconds: u64 = std::env::var("LOAD_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let binary = k8s_bootstrap_benches::build_cli("cli,sidecar");
    if let Some(cpu) = proxy_cpu() {
        pin_self_away_from(cpu);
    }
    let upstream = start_upstream();
    let key = SigningKey::from_pkcs8_pem(KEY).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("key.pem");
    std::fs::write(&key_file, key.public_key_pem().unwrap()).unwrap();
    let token = Minter::new(key, Issuer::new(ISSUER))
        .ttl(Duration::from_secs(3600))
        .mint("jane", &Audience::new(AUDIENCE), SystemTime::now())
        .unwrap()
        .expose_secret()
        .to_owned();
    // The valid token's header and claims with the signature of another token (same key, other
    // subject): a well-formed Ed25519 signature that fails only at the end of a full check. (An
    // all-zero signature would be refused before any curve arithmetic, a cheaper forgery.)
    let other = Minter::new(
        SigningKey::from_pkcs8_pem(KEY).unwrap(),
        Issuer::new(ISSUER),
    )
    .ttl(Duration::from_secs(3600))
    .mint("mallory", &Audience::new(AUDIENCE), SystemTime::now())
    .unwrap()
    .expose_secret()
    .to_owned();
    let (signed, _) = token.rsplit_once('.').unwrap();
    let (_, other_signature) = other.rsplit_once('.').unwrap();
    let forged = format!("{signed}.{other_signature}");
    let (mut cached, cached_addr) = start_proxy(&binary, upstream, &key_file, 4096);
    let (mut uncached, uncached_addr) = start_proxy(&binary, upstream, &key_file, 0);
    let url = |addr: SocketAddr| format!("http://{addr}/");

    let ms = |s: f64| format!("{:.3} ms", s * 1e3);
    let mut rows = Vec::new();
    let mut run = |name: &str, addr: SocketAddr, rate: Option<u32>, connections: u32| {
        let s = stats(oha(&url(addr), &token, connections, rate, seconds));
        assert!(
            s.ok > 0 && s.forbidden == 0,
            "{name}: {} ok, {} forbidden",
            s.ok,
            s.forbidden
        );
        rows.push(format!(
            "| {name} | {:.0} | {} | {} |",
            s.rps,
            ms(s.p50),
            ms(s.p99)
        ));
        s
    };
    let bare_max = run(
        "upstream alone, max rate, 32 connections",
        upstream,
        None,
        32,
    );
    let cached_max = run(
        "proxy, cached token, max rate, 32 connections",
        cached_addr,
        None,
        32,
    );
    let uncached_max = run(
        "proxy, cache off (Ed25519 check per request), max rate, 32 connections",
        uncached_addr,
        None,
        32,
    );
    let bare_fixed = run(
        "upstream alone, 1,000 req/s, 8 connections",
        upstream,
        Some(1000),
        8,
    );
    let cached_fixed = run(
        "proxy, cached token, 1,000 req/s, 8 connections",
        cached_addr,
        Some(1000),
        8,
    );
    let uncached_fixed = run(
        "proxy, cache off, 1,000 req/s, 8 connections",
        uncached_addr,
        Some(1000),
        8,
    );

    // The flood: forged tokens as fast as they go, valid ones at the fixed rate, at once.
    let flood = oha(&url(cached_addr), &forged, 32, None, seconds);
    let valid = oha(&url(cached_addr), &token, 8, Some(1000), seconds);
    let (flood, valid) = (stats(flood), stats(valid));
    assert!(
        flood.ok == 0 && flood.forbidden > 0,
        "forged tokens are refused"
    );
    assert!(valid.ok > 0 && valid.forbidden == 0);
    rows.push(format!(
        "| under a forged-token flood: the flood (all 403) | {:.0} | {} | {} |",
        flood.rps,
        ms(flood.p50),
        ms(flood.p99)
    ));
    rows.push(format!(
        "| under a forged-token flood: valid requests at 1,000 req/s, 8 connections | {:.0} | {} | {} |",
        valid.rps,
        ms(valid.p50),
        ms(valid.p99)
    ));
    for child in [&mut cached, &mut uncached] {
        let _ = child.kill();
        let _ = child.wait();
    }

    match proxy_cpu() {
        Some(cpu) => println!(
            "forward_proxy_load: {seconds} s per run, the proxy alone on core {cpu}, oha and the upstream on the others"
        ),
        None => println!("forward_proxy_load: {seconds} s per run, oha on the same 2 cores"),
    }
    println!("| case | req/s | p50 | p99 |");
    println!("| --- | --- | --- | --- |");
    for row in &rows {
        println!("{row}");
    }
    println!();
    println!(
        "cached-token throughput: {:.0}% of the upstream alone (target: at least 80%)",
        cached_max.rps / bare_max.rps * 100.0
    );
    println!(
        "cache-off throughput: {:.0}% of the upstream alone",
        uncached_max.rps / bare_max.rps * 100.0
    );
    println!(
        "added latency at 1,000 req/s, cached token: p50 {} / p99 {} (target: p99 under 0.100 ms)",
        ms(cached_fixed.p50 - bare_fixed.p50),
        ms(cached_fixed.p99 - bare_fixed.p99)
    );
    println!(
        "added latency at 1,000 req/s, cache off: p50 {} / p99 {}",
        ms(uncached_fixed.p50 - bare_fixed.p50),
        ms(uncached_fixed.p99 - bare_fixed.p99)
    );
    println!(
        "valid requests under the flood vs without it: p50 {} -> {}, p99 {} -> {}",
        ms(cached_fixed.p50),
        ms(valid.p50),
        ms(cached_fixed.p99),
        ms(valid.p99)
    );
}
