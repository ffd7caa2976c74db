//! The controllers at scale: `k8s-bootstrap controllers` (a release build, as its own process)
//! against the loopback API server holding 10,000 bootstrap tokens.
//!
//! Measured: the first sync (every token signed), the latency from a token's creation to its
//! signature in cluster-info (one token at a time), a burst of 1,000 tokens, 1,000 tokens
//! expiring at once (the cleaner), API calls per token event, and the controller's memory
//! (`VmHWM`/`VmRSS`). Baseline in the same run: `clusterinfo::reconcile` alone over the same
//! tokens, the pure work each signer reconcile does before it writes.
//!
//! `cargo bench -p k8s-bootstrap-benches --bench controllers_scale` (`SCALE_TOKENS` overrides
//! the 10,000).
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

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime};

use k8s_bootstrap::bootstrap_token::SecretObject;
use loopback_apiserver::LoopbackApiServer;
use serde_json::{Value, json};

fn token_id(i: usize) -> String {
    // Six characters of [a-z0-9], distinct for i < 36^6.
    let alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut n = i;
    let mut id = [b'a'; 6];
    for c in id.iter_mut().rev() {
        *c = alphabet[n % 36];
        n /= 36;
    }
    String::from_utf8(id.to_vec()).unwrap()
}

fn token(i: usize, extra: &[(&str, &str)]) -> Value {
    let id = token_id(i);
    let mut data = json!({
        "token-id": id,
        "token-secret": format!("{i:016}"),
        "usage-bootstrap-signing": "true",
    });
    for (k, v) in extra {
        data[*k] = json!(v);
    }
    json!({
        "metadata": {"name": format!("bootstrap-token-{id}")},
        "type": "bootstrap.kubernetes.io/token",
        "stringData": data,
    })
}

fn signatures(server: &LoopbackApiServer) -> usize {
    server
        .object("kube-public", "configmaps", "cluster-info")
        .and_then(|cm| {
            cm.get("data").and_then(Value::as_object).map(|d| {
                d.keys()
                    .filter(|k| k.starts_with("jws-kubeconfig-"))
                    .count()
            })
        })
        .unwrap_or(0)
}

fn signed(server: &LoopbackApiServer, i: usize) -> bool {
    server
        .object("kube-public", "configmaps", "cluster-info")
        .is_some_and(|cm| {
            cm.pointer(&format!("/data/jws-kubeconfig-{}", token_id(i)))
                .is_some()
        })
}

async fn wait(what: &str, limit: Duration, mut done: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    start.elapsed()
}

fn rfc3339(t: SystemTime) -> String {
    let secs = t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
    k8s_bootstrap::k8s_openapi::jiff::Timestamp::from_second(i64::try_from(secs).unwrap())
        .unwrap()
        .to_string()
}

/// Builds the release `k8s-bootstrap` with the controllers and returns its path.
fn proc_status(pid: u32, field: &str) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .map(|l| l[field.len()..].trim().to_owned())
        .unwrap_or_else(|| "?".to_owned())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn main() {
    // `cargo bench` passes `--bench`; a filter that excludes this bench skips it.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if args
        .iter()
        .any(|a| !a.starts_with('-') && !"controllers_scale".contains(a.as_str()))
    {
        return;
    }
    let tokens: usize = std::env::var("SCALE_TOKENS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let binary = k8s_bootstrap_benches::build_cli("ring,controllers");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run(tokens, binary));
}

async fn run(tokens: usize, binary: PathBuf) {
    let burst = 1_000;
    let expiring = 1_000;
    let server = LoopbackApiServer::builder()
        .bootstrap_signer(false)
        .max_objects(tokens + burst + expiring + 1_000)
        // A watch cache that holds a burst, as kube-apiserver's does under load.
        .watch_history(20_000)
        .start()
        .await
        .unwrap();
    for i in 0..tokens {
        server
            .insert("kube-system", "secrets", token(i, &[]))
            .unwrap();
    }

    // Baseline: the pure reconcile over the same tokens (median of 11).
    let objects: Vec<SecretObject> = (0..tokens)
        .map(|i| {
            let id = token_id(i);
            let data = BTreeMap::from([
                ("token-id".to_owned(), id.as_bytes().to_vec()),
                ("token-secret".to_owned(), format!("{i:016}").into_bytes()),
                ("usage-bootstrap-signing".to_owned(), b"true".to_vec()),
            ]);
            SecretObject::new(
                format!("bootstrap-token-{id}"),
                "kube-system",
                "bootstrap.kubernetes.io/token",
                Some(data),
            )
        })
        .collect();
    let kubeconfig = server
        .object("kube-public", "configmaps", "cluster-info")
        .unwrap()
        .pointer("/data/kubeconfig")
        .and_then(Value::as_str)
        .unwrap()
        .to_owned();
    let data = BTreeMap::from([("kubeconfig".to_owned(), kubeconfig)]);
    let mut times: Vec<Duration> = (0..11)
        .map(|_| {
            let start = Instant::now();
            let out =
                k8s_bootstrap::clusterinfo::reconcile(&data, objects.iter(), SystemTime::now());
            let elapsed = start.elapsed();
            assert_eq!(out.signed_token_ids().len(), tokens);
            elapsed
        })
        .collect();
    times.sort();
    let baseline = times[5];

    let dir = tempfile::tempdir().unwrap();
    let admin = dir.path().join("admin.conf");
    std::fs::write(&admin, server.admin_kubeconfig_yaml()).unwrap();
    let http = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let requests_before = server.requests().len();
    let start = Instant::now();
    let mut child = tokio::process::Command::new(&binary)
        .args([
            "--kubeconfig",
            admin.to_str().unwrap(),
            "controllers",
            "--leader-elect=false",
            &format!("--http-address={http}"),
        ])
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    wait("first sync", Duration::from_secs(300), || {
        signatures(&server) == tokens
    })
    .await;
    let first_sync = start.elapsed();
    let calls_first = server.requests().len() - requests_before;
    let rss_after_sync = proc_status(pid, "VmRSS:");

    // One token at a time: creation to signature.
    let single = 200;
    let before = server.requests().len();
    let mut latencies = Vec::with_capacity(single);
    for i in tokens..tokens + single {
        server
            .insert("kube-system", "secrets", token(i, &[]))
            .unwrap();
        latencies.push(wait("signature", Duration::from_secs(30), || signed(&server, i)).await);
    }
    let calls_single = server.requests().len() - before;
    latencies.sort();

    // A burst: 1,000 tokens at once.
    let first = tokens + single;
    let before = server.requests().len();
    let start = Instant::now();
    for i in first..first + burst {
        server
            .insert("kube-system", "secrets", token(i, &[]))
            .unwrap();
    }
    let insert_time = start.elapsed();
    wait("burst signed", Duration::from_secs(300), || {
        signatures(&server) == first + burst
    })
    .await;
    let burst_time = start.elapsed();
    let calls_burst = server.requests().len() - before;

    // The cleaner: 1,000 tokens expiring at the same second.
    let first = tokens + single + burst;
    // Whole seconds, as the expiration is written.
    let expiry_secs = (SystemTime::now() + Duration::from_secs(5))
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let expiry = SystemTime::UNIX_EPOCH + Duration::from_secs(expiry_secs);
    let expiration = rfc3339(expiry);
    for i in first..first + expiring {
        server
            .insert(
                "kube-system",
                "secrets",
                token(
                    i,
                    &[
                        ("expiration", &expiration),
                        ("usage-bootstrap-signing", "false"),
                    ],
                ),
            )
            .unwrap();
    }
    let before = server.requests().len();
    let gone = |server: &LoopbackApiServer| {
        (first..first + expiring).all(|i| {
            server
                .object(
                    "kube-system",
                    "secrets",
                    &format!("bootstrap-token-{}", token_id(i)),
                )
                .is_none()
        })
    };
    wait("expired tokens deleted", Duration::from_secs(120), || {
        gone(&server)
    })
    .await;
    let cleaned_after_expiry = SystemTime::now().duration_since(expiry).unwrap_or_default();
    let calls_clean = server.requests().len() - before;
    let deletes = server.requests()[before..]
        .iter()
        .filter(|r| r.method == "DELETE")
        .count();

    let hwm = proc_status(pid, "VmHWM:");
    let rss = proc_status(pid, "VmRSS:");
    child.kill().await.unwrap();

    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1e3);
    println!("controllers_scale: {tokens} tokens, loopback API server, 2 worker threads");
    println!("| measurement | value |");
    println!("| --- | --- |");
    println!(
        "| baseline: `clusterinfo::reconcile` over {tokens} tokens (median of 11) | {} |",
        ms(baseline)
    );
    println!(
        "| first sync: controller start to all {tokens} signatures | {} |",
        ms(first_sync)
    );
    println!("| API calls for the first sync | {calls_first} |");
    println!(
        "| one token at a time ({single}): creation to signature, p50 / p99 / max | {} / {} / {} |",
        ms(percentile(&latencies, 0.5)),
        ms(percentile(&latencies, 0.99)),
        ms(latencies[latencies.len() - 1])
    );
    println!(
        "| API calls per token event, one at a time | {:.2} |",
        calls_single as f64 / single as f64
    );
    println!(
        "| burst of {burst}: inserted in {}, all signed after | {} |",
        ms(insert_time),
        ms(burst_time)
    );
    println!(
        "| API calls per token event, burst | {:.3} ({calls_burst} for {burst}) |",
        calls_burst as f64 / burst as f64
    );
    println!(
        "| {expiring} tokens expiring at once: all deleted, after the expiry | {} |",
        ms(cleaned_after_expiry)
    );
    println!("| API calls for those deletions | {calls_clean} ({deletes} DELETE) |");
    println!(
        "| controller memory: RSS after the first sync / at the end / peak (VmHWM) | {rss_after_sync} / {rss} / {hwm} |"
    );
}
