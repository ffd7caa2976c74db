//! `k8s-bootstrap forward-proxy` under load, driven by `oha` (`cargo install oha`), in front
//! of a trivial upstream on loopback, beside that upstream alone in the same run, in two
//! configurations.
//!
//! * Shared cores (how a small node runs them: the proxy, oha and the upstream on all cores):
//!   maximum throughput (closed loop, 32 connections) for the upstream alone, through the proxy
//!   with a cached token, and with its verified-token cache off (every request verifies an
//!   Ed25519 signature); latency at a fixed rate (1,000 requests per second on 8 connections),
//!   upstream alone and through the proxy in alternating rounds; then a flood of forged tokens
//!   (a valid token's header and claims with another token's signature, so each costs a full
//!   check; 32 connections, as fast as they go) while valid requests run at the fixed rate,
//!   measured at once.
//! * The proxy on a core of its own (`taskset`; oha and the upstream on the others, in the bare
//!   rounds too), as a sidecar container has its own CPU: maximum throughput, upstream alone and
//!   through the proxy in alternating rounds.
//!
//! With `nginx` on PATH (Debian's `nginx-light`), nginx as a plain reverse proxy (keep-alive to
//! the upstream, no token check at all) is measured the same way, for reference.
//!
//! `cargo bench -p k8s-bootstrap-benches --bench forward_proxy_load` (skips, saying so, when
//! `oha` is not on PATH; `LOAD_SECONDS` sets each run's length, default 10; `ROUNDS` the
//! alternating rounds, default 5; `VERIFY_SLOTS` the proxy's `--max-concurrent-verifications`,
//! default 0: half the CPUs; `PROXY_CPU` the proxy's own core, default the last).
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

/// `command`, on core `cpu` only when given.
fn on_cpu(cpu: Option<usize>, program: &Path) -> Command {
    match cpu {
        Some(cpu) => {
            let mut c = Command::new("taskset");
            c.args(["-c", &cpu.to_string()]).arg(program);
            c
        }
        None => Command::new(program),
    }
}

fn wait_listening(child: &mut Child, listen: SocketAddr, what: &str) {
    for _ in 0..200 {
        if std::net::TcpStream::connect(listen).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("{what} did not start");
}

fn start_proxy(
    binary: &Path,
    upstream: SocketAddr,
    key_file: &Path,
    cache: usize,
    cpu: Option<usize>,
) -> (Child, SocketAddr) {
    let listen = free_addr();
    let mut child = on_cpu(cpu, binary)
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
    wait_listening(&mut child, listen, "the proxy");
    (child, listen)
}

/// nginx as a plain reverse proxy in front of `upstream` (keep-alive to it, no token check),
/// when `nginx` is on PATH: one worker per core it may use.
fn start_nginx(
    dir: &Path,
    upstream: SocketAddr,
    cpu: Option<usize>,
) -> Option<(Child, SocketAddr)> {
    let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .iter()
        .map(Path::new)
        .find(|p| p.exists())?;
    let listen = free_addr();
    let workers = if cpu.is_some() { "1" } else { "auto" };
    let conf = format!(
        "worker_processes {workers};\ndaemon off;\nerror_log {dir}/error.log;\npid {dir}/nginx.pid;\n\
         events {{ worker_connections 1024; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {dir};\n  proxy_temp_path {dir};\n\
         upstream addon {{ server {upstream}; keepalive 64; }}\n\
         server {{\n    listen {listen};\n    location / {{\n      proxy_pass http://addon;\n\
         proxy_http_version 1.1;\n      proxy_set_header Connection \"\";\n\
         proxy_set_header Authorization \"\";\n      proxy_set_header X-Authenticated-User jane;\n    }}\n  }}\n}}\n",
        dir = dir.display()
    );
    let conf_file = dir.join("nginx.conf");
    std::fs::write(&conf_file, conf).unwrap();
    let mut child = on_cpu(cpu, nginx)
        .arg("-c")
        .arg(&conf_file)
        .arg("-p")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    wait_listening(&mut child, listen, "nginx");
    Some((child, listen))
}

fn nginx_version() -> String {
    Command::new("nginx")
        .arg("-v")
        .output()
        .ok()
        .map(|o| {
            String::from_utf8_lossy(&o.stderr)
                .trim()
                .replace("nginx version: ", "")
        })
        .unwrap_or_default()
}

/// Runs oha and returns its process (its JSON summary on stdout).
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

/// One oha run against `url` with valid tokens: every request must be answered 200.
fn measure(url: &str, token: &str, connections: u32, rate: Option<u32>, seconds: u64) -> Stats {
    let s = stats(oha(url, token, connections, rate, seconds));
    assert!(
        s.ok > 0 && s.forbidden == 0,
        "{url}: {} ok, {} forbidden",
        s.ok,
        s.forbidden
    );
    s
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Moves this process (the upstream's threads, and oha, which inherits it) to every core but
/// `cpu` (`Some`), or back to all of them (`None`).
fn pin_self(away_from: Option<usize>) {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let list: Vec<String> = (0..cpus)
        .filter(|c| Some(*c) != away_from)
        .map(|c| c.to_string())
        .collect();
    let status = Command::new("taskset")
        .args(["-a", "-p", "-c", &list.join(",")])
        .arg(std::process::id().to_string())
        .stdout(Stdio::null())
        .status()
        .expect("taskset (util-linux)");
    assert!(status.success(), "taskset failed");
}

fn ms(s: f64) -> String {
    format!("{:.3} ms", s * 1e3)
}

fn row(name: &str, s: &Stats) -> String {
    format!("| {name} | {:.0} | {} | {} |", s.rps, ms(s.p50), ms(s.p99))
}

fn stop(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
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
    let env = |name: &str, default: u64| -> u64 {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let seconds = env("LOAD_SECONDS", 10);
    let rounds = env("ROUNDS", 5).max(1);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let proxy_cpu = (cpus > 1).then(|| {
        std::env::var("PROXY_CPU")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(cpus - 1)
    });
    let binary = k8s_bootstrap_benches::build_cli("ring,sidecar");
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
    let url = |addr: SocketAddr| format!("http://{addr}/");
    let nginx_dir = tempfile::tempdir().unwrap();

    // Shared cores.
    let (mut cached, cached_addr) = start_proxy(&binary, upstream, &key_file, 4096, None);
    let (mut uncached, uncached_addr) = start_proxy(&binary, upstream, &key_file, 0, None);
    let mut nginx = start_nginx(nginx_dir.path(), upstream, None);
    let mut shared = Vec::new();
    let bare_max = measure(&url(upstream), &token, 32, None, seconds);
    shared.push(row("upstream alone, max rate, 32 connections", &bare_max));
    let cached_max = measure(&url(cached_addr), &token, 32, None, seconds);
    shared.push(row(
        "proxy, cached token, max rate, 32 connections",
        &cached_max,
    ));
    let uncached_max = measure(&url(uncached_addr), &token, 32, None, seconds);
    shared.push(row(
        "proxy, cache off (Ed25519 check per request), max rate, 32 connections",
        &uncached_max,
    ));
    let nginx_shared = nginx.as_ref().map(|(_, addr)| {
        let s = measure(&url(*addr), &token, 32, None, seconds);
        shared.push(row("nginx (no token check), max rate, 32 connections", &s));
        s
    });
    // Latency at 1,000 req/s: upstream alone and proxy in alternating rounds.
    let (mut added_p50, mut added_p99) = (Vec::new(), Vec::new());
    let mut latency_rows = Vec::new();
    for round in 1..=rounds {
        let bare = measure(&url(upstream), &token, 8, Some(1000), seconds);
        let proxied = measure(&url(cached_addr), &token, 8, Some(1000), seconds);
        added_p50.push(proxied.p50 - bare.p50);
        added_p99.push(proxied.p99 - bare.p99);
        latency_rows.push(format!(
            "| {round} | {} / {} | {} / {} | {} / {} |",
            ms(bare.p50),
            ms(bare.p99),
            ms(proxied.p50),
            ms(proxied.p99),
            ms(proxied.p50 - bare.p50),
            ms(proxied.p99 - bare.p99)
        ));
    }
    let uncached_fixed = measure(&url(uncached_addr), &token, 8, Some(1000), seconds);
    shared.push(row(
        "proxy, cache off, 1,000 req/s, 8 connections",
        &uncached_fixed,
    ));
    // The flood: forged tokens as fast as they go, valid ones at the fixed rate, at once.
    let flood = oha(&url(cached_addr), &forged, 32, None, seconds);
    let valid = oha(&url(cached_addr), &token, 8, Some(1000), seconds);
    let (flood, valid) = (stats(flood), stats(valid));
    assert!(
        flood.ok == 0 && flood.forbidden > 0,
        "forged tokens are refused"
    );
    assert!(valid.ok > 0 && valid.forbidden == 0);
    shared.push(row(
        "under a forged-token flood: the flood (all 403), 32 connections",
        &flood,
    ));
    shared.push(row(
        "under a forged-token flood: valid requests at 1,000 req/s, 8 connections",
        &valid,
    ));
    stop(&mut cached);
    stop(&mut uncached);
    if let Some((child, _)) = nginx.as_mut() {
        stop(child);
    }

    // The proxy (and nginx) on a core of its own.
    let mut pinned_rows = Vec::new();
    let (mut ratios, mut nginx_ratios) = (Vec::new(), Vec::new());
    if let Some(cpu) = proxy_cpu {
        pin_self(Some(cpu));
        let (mut pinned, pinned_addr) = start_proxy(&binary, upstream, &key_file, 4096, Some(cpu));
        let nginx_dir = tempfile::tempdir().unwrap();
        let mut nginx = start_nginx(nginx_dir.path(), upstream, Some(cpu));
        for round in 1..=rounds {
            let bare = measure(&url(upstream), &token, 32, None, seconds);
            let proxied = measure(&url(pinned_addr), &token, 32, None, seconds);
            ratios.push(proxied.rps / bare.rps * 100.0);
            let reference = nginx.as_ref().map(|(_, addr)| {
                let s = measure(&url(*addr), &token, 32, None, seconds);
                nginx_ratios.push(s.rps / bare.rps * 100.0);
                format!(" {:.0} ({:.0} %) |", s.rps, s.rps / bare.rps * 100.0)
            });
            pinned_rows.push(format!(
                "| {round} | {:.0} | {:.0} ({:.0} %) |{}",
                bare.rps,
                proxied.rps,
                proxied.rps / bare.rps * 100.0,
                reference.unwrap_or_default()
            ));
        }
        stop(&mut pinned);
        if let Some((child, _)) = nginx.as_mut() {
            stop(child);
        }
        pin_self(None);
    }

    let nginx_name = nginx_version();
    println!("forward_proxy_load: {seconds} s per run, {rounds} alternating rounds, {cpus} CPUs");
    println!();
    println!("Shared cores (the proxy, oha and the upstream on every core):");
    println!();
    println!("| case | req/s | p50 | p99 |");
    println!("| --- | --- | --- | --- |");
    for r in &shared {
        println!("{r}");
    }
    println!();
    println!("Latency at 1,000 req/s, 8 connections, cached token (shared cores):");
    println!();
    println!("| round | upstream alone p50 / p99 | proxy p50 / p99 | added p50 / p99 |");
    println!("| --- | --- | --- | --- |");
    for r in &latency_rows {
        println!("{r}");
    }
    if proxy_cpu.is_some() {
        println!();
        println!(
            "The proxy on core {} alone, oha and the upstream on the others; max rate, 32 connections:",
            proxy_cpu.unwrap_or_default()
        );
        println!();
        if nginx_ratios.is_empty() {
            println!("| round | upstream alone req/s | proxy, cached token, req/s |");
            println!("| --- | --- | --- |");
        } else {
            println!(
                "| round | upstream alone req/s | proxy, cached token, req/s | {nginx_name} (no token check), req/s |"
            );
            println!("| --- | --- | --- | --- |");
        }
        for r in &pinned_rows {
            println!("{r}");
        }
    }
    println!();
    let list = |v: &[f64]| {
        v.iter()
            .map(|r| format!("{r:.0}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if proxy_cpu.is_some() {
        println!(
            "cached-token throughput, proxy on its own core: median {:.0}% of the upstream alone over {rounds} rounds ({} %; target: at least 80%)",
            median(&mut ratios.clone()),
            list(&ratios)
        );
        if !nginx_ratios.is_empty() {
            println!(
                "{nginx_name} on its own core, for reference: median {:.0}% ({} %)",
                median(&mut nginx_ratios.clone()),
                list(&nginx_ratios)
            );
        }
    }
    println!(
        "cached-token throughput, shared cores: {:.0}% of the upstream alone{}",
        cached_max.rps / bare_max.rps * 100.0,
        nginx_shared
            .as_ref()
            .map(|n| format!(
                " ({nginx_name}, no token check: {:.0}%)",
                n.rps / bare_max.rps * 100.0
            ))
            .unwrap_or_default()
    );
    println!(
        "cache-off throughput, shared cores: {:.0}% of the upstream alone",
        uncached_max.rps / bare_max.rps * 100.0
    );
    println!(
        "added latency at 1,000 req/s, cached token, shared cores: median p50 {} / p99 {} over {rounds} rounds (target: p99 under 0.100 ms)",
        ms(median(&mut added_p50)),
        ms(median(&mut added_p99))
    );
    println!(
        "valid requests under the flood: p50 {} / p99 {}, all served at {:.0} req/s",
        ms(valid.p50),
        ms(valid.p99),
        valid.rps
    );
}
