//! What the services log, run as processes without `-v` (as the Deployments run them):
//! `controllers` and `forward-proxy` say where they listen, how they are configured, who leads,
//! what they did and to which object, and that they stopped; `--log-format json` writes one
//! JSON object per line; `RUST_LOG` replaces the default filter; and no bootstrap token's
//! secret reaches the log even at trace level.
//!
//! The API server is a double (`loopback_apiserver`), not a real control plane.
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
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use loopback_apiserver::LoopbackApiServer;
use serde_json::json;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
use tokio::process::{Child, Command};

use crate::support::{addr_field, eventually, sigterm};

const BIN: &str = env!("CARGO_BIN_EXE_k8s-bootstrap");

/// How long a log line may take to appear, or a process to exit after SIGTERM (room for a
/// loaded 2-core machine).
const WITHIN: Duration = Duration::from_secs(30);

/// A signing token's secret, and an expired token's: neither may appear in any log.
const SIGNING_SECRET: &str = "0123456789abcdef";
const EXPIRED_SECRET: &str = "fedcba9876543210";

/// A running process and the lines of its stderr so far (read as they come, so the pipe never
/// fills and blocks it).
struct Logged {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Logged {
    fn spawn(mut command: Command) -> Logged {
        let mut child = command
            .env("NO_COLOR", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let mut reader = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let sink = lines.clone();
        let reader = tokio::spawn(async move {
            while let Ok(Some(line)) = reader.next_line().await {
                sink.lock().unwrap().push(line);
            }
        });
        Logged {
            child,
            lines,
            reader,
        }
    }

    fn text(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }

    /// Waits for a line that holds every one of `parts`; returns it.
    async fn line_with(&self, parts: &[&str]) -> String {
        let deadline = tokio::time::Instant::now() + WITHIN;
        loop {
            if let Some(line) = self
                .lines
                .lock()
                .unwrap()
                .iter()
                .find(|l| parts.iter().all(|p| l.contains(p)))
            {
                return line.clone();
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no log line with {parts:?} within {WITHIN:?}:\n{}",
                self.text()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGTERM, then the exit (which must be 0) and the whole log.
    async fn terminate(mut self) -> String {
        sigterm(&self.child);
        let status = tokio::time::timeout(WITHIN, self.child.wait()).await;
        // The pipe closes with the process; the reader then ends.
        let _ = tokio::time::timeout(WITHIN, &mut self.reader).await;
        let log = self.text();
        match status {
            Ok(status) => assert!(status.unwrap().success(), "exit status:\n{log}"),
            Err(_) => panic!("still running {WITHIN:?} after SIGTERM:\n{log}"),
        }
        log
    }
}

async fn api_server() -> (LoopbackApiServer, tempfile::TempDir, std::path::PathBuf) {
    let server = LoopbackApiServer::builder()
        .bootstrap_signer(false)
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("admin.conf");
    std::fs::write(&kubeconfig, server.admin_kubeconfig_yaml()).unwrap();
    (server, dir, kubeconfig)
}

/// `controllers` with leader election as `identity`, without `-v` or `RUST_LOG`, serving HTTP
/// on a port the kernel picks.
fn controllers(kubeconfig: &Path, identity: &str, extra: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command
        .args([
            "controllers",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            &format!("--leader-elect-identity={identity}"),
            "--http-address=127.0.0.1:0",
        ])
        .args(extra)
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .env_remove("POD_NAME");
    command
}

fn holder(server: &LoopbackApiServer) -> Option<String> {
    server
        .object("kube-system", "leases", "k8s-bootstrap-controllers")?
        .pointer("/spec/holderIdentity")?
        .as_str()
        .map(str::to_owned)
}

/// A token that signs cluster-info and one that expired long ago.
fn insert_tokens(server: &LoopbackApiServer) {
    server
        .insert(
            "kube-system",
            "secrets",
            json!({
                "metadata": {"name": "bootstrap-token-abcdef"},
                "type": "bootstrap.kubernetes.io/token",
                "stringData": {"token-id": "abcdef", "token-secret": SIGNING_SECRET,
                    "usage-bootstrap-signing": "true"},
            }),
        )
        .unwrap();
    server
        .insert(
            "kube-system",
            "secrets",
            json!({
                "metadata": {"name": "bootstrap-token-oldold"},
                "type": "bootstrap.kubernetes.io/token",
                "stringData": {"token-id": "oldold", "token-secret": EXPIRED_SECRET,
                    "usage-bootstrap-signing": "true",
                    "expiration": "2020-01-01T00:00:00Z"},
            }),
        )
        .unwrap();
}

/// The forms a secret could take in a log: as is, base64 (a Secret's `data`), and within the
/// whole token.
fn secret_forms(id: &str, secret: &str) -> Vec<String> {
    let b64 = base64::engine::general_purpose::STANDARD;
    vec![
        secret.to_owned(),
        b64.encode(secret),
        format!("{id}.{secret}"),
        b64.encode(format!("{id}.{secret}")),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controllers_log_what_they_do_at_the_default_level() {
    let (server, _dir, kubeconfig) = api_server().await;
    let process = Logged::spawn(controllers(&kubeconfig, "replica-a", &[]));

    // The configuration, without secrets; the address it serves on.
    let config = process
        .line_with(&["INFO", "controllers: starting with leader election"])
        .await;
    for part in [
        "controllers=\"bootstrapsigner,tokencleaner\"",
        "lease=kube-system/k8s-bootstrap-controllers",
        "identity=\"replica-a\"",
        "http_address=127.0.0.1:0",
        &server.url(),
    ] {
        assert!(config.contains(part), "{part} missing from {config}");
    }
    // The address the kernel gave, which answers.
    let serving = process.line_with(&["INFO", "/healthz", "local="]).await;
    let http = addr_field(&serving, "local").unwrap_or_else(|| panic!("no address in {serving}"));
    assert_eq!(http.ip(), std::net::Ipv4Addr::LOCALHOST);
    assert_ne!(http.port(), 0, "{serving}");
    tokio::net::TcpStream::connect(http).await.unwrap();
    // Leadership, and the controllers' actions naming their objects.
    process
        .line_with(&["INFO", "became the leader", "identity=\"replica-a\""])
        .await;
    insert_tokens(&server);
    process
        .line_with(&[
            "INFO",
            "cluster-info updated",
            "configmap=kube-public/cluster-info",
            "signed=abcdef",
        ])
        .await;
    process
        .line_with(&[
            "INFO",
            "tokencleaner: deleted",
            "secret=kube-system/bootstrap-token-oldold",
        ])
        .await;
    // The signer drops the expired token's signature (if it ever signed): never a secret.
    let log = process.terminate().await;
    for wanted in [
        "termination signal received",
        "controllers: stopping",
        "leader election: released the lease",
        "controllers: stopped",
    ] {
        assert!(log.contains(wanted), "{wanted} missing:\n{log}");
    }
    // Not a request per line at info: the Lease renewals and watches stay out of the log.
    assert!(log.lines().count() < 40, "{log}");
    assert!(!log.contains("DEBUG") && !log.contains("TRACE"), "{log}");
    for form in secret_forms("abcdef", SIGNING_SECRET)
        .into_iter()
        .chain(secret_forms("oldold", EXPIRED_SECRET))
        .chain([server.admin_token().to_owned()])
    {
        assert!(!log.contains(&form), "{form} in the log:\n{log}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_says_who_leads() {
    let (server, _dir, kubeconfig) = api_server().await;
    let leader = Logged::spawn(controllers(&kubeconfig, "replica-a", &[]));
    leader.line_with(&["became the leader"]).await;
    let standby = Logged::spawn(controllers(&kubeconfig, "replica-b", &[]));
    standby
        .line_with(&[
            "INFO",
            "another replica holds the lease",
            "holder=\"replica-a\"",
        ])
        .await;
    let log = standby.terminate().await;
    // Once per leader, not once per retry period.
    assert_eq!(log.matches("another replica holds the lease").count(), 1);
    assert!(!log.contains("became the leader"), "{log}");
    leader.terminate().await;
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_are_one_object_per_line() {
    let (server, _dir, kubeconfig) = api_server().await;
    let process = Logged::spawn(controllers(
        &kubeconfig,
        "replica-a",
        &["--log-format", "json"],
    ));
    process.line_with(&["became the leader"]).await;
    insert_tokens(&server);
    process.line_with(&["cluster-info updated"]).await;
    let log = process.terminate().await;
    let events: Vec<serde_json::Value> = log
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not JSON ({e}): {line}\n{log}"));
            assert!(value.is_object(), "{line}");
            assert!(value["timestamp"].is_string(), "{line}");
            assert!(value["level"].is_string(), "{line}");
            assert!(value["fields"]["message"].is_string(), "{line}");
            value
        })
        .collect();
    let find = |message: &str| {
        events
            .iter()
            .find(|e| e["fields"]["message"].as_str().unwrap().contains(message))
            .unwrap_or_else(|| panic!("no {message:?} event:\n{log}"))
    };
    let leader = find("became the leader");
    assert_eq!(leader["level"], "INFO");
    assert_eq!(leader["fields"]["identity"], "replica-a");
    assert_eq!(
        leader["fields"]["lease"],
        "kube-system/k8s-bootstrap-controllers"
    );
    assert_eq!(find("cluster-info updated")["fields"]["signed"], "abcdef");
    assert_eq!(find("controllers: stopped")["level"], "INFO");
}

#[tokio::test]
async fn json_errors_are_json_too() {
    let output = Command::new(BIN)
        .args([
            "controllers",
            "--log-format=json",
            "--controllers=csrsigning",
        ])
        .env_remove("RUST_LOG")
        .output()
        .await
        .unwrap();
    // An unknown controller is refused before any work: a usage error.
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    let line: serde_json::Value = serde_json::from_str(stderr.trim()).unwrap();
    assert_eq!(line["level"], "ERROR", "{stderr}");
    let message = line["fields"]["message"].as_str().unwrap();
    assert!(message.contains("unknown controller"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_log_replaces_the_default_filter() {
    let (server, _dir, kubeconfig) = api_server().await;
    let mut command = controllers(&kubeconfig, "replica-a", &[]);
    command.env("RUST_LOG", "warn");
    let process = Logged::spawn(command);
    eventually("the replica leads", || async {
        holder(&server).as_deref() == Some("replica-a")
    })
    .await;
    let log = process.terminate().await;
    assert!(!log.contains("INFO"), "{log}");
    // The lease was released on the way out: the run went through every info event above.
    assert_eq!(holder(&server).as_deref(), Some(""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_secret_in_the_controllers_log_even_at_trace() {
    let (server, _dir, kubeconfig) = api_server().await;
    let process = Logged::spawn(controllers(&kubeconfig, "replica-a", &["-vvv"]));
    process.line_with(&["became the leader"]).await;
    insert_tokens(&server);
    process.line_with(&["cluster-info updated"]).await;
    process.line_with(&["tokencleaner: deleted"]).await;
    let log = process.terminate().await;
    assert!(log.contains("TRACE"), "trace level was on");
    for form in secret_forms("abcdef", SIGNING_SECRET)
        .into_iter()
        .chain(secret_forms("oldold", EXPIRED_SECRET))
        .chain([server.admin_token().to_owned()])
    {
        assert!(!log.contains(&form), "{form} in the log");
    }
}

/// An Ed25519 key; its public half is the proxy's `--public-key-file`.
const KEY: &str = "-----BEGIN PRIVATE KEY-----\n\
MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
-----END PRIVATE KEY-----\n";

/// `forward-proxy` with `KEY`'s public half in `dir`, without `RUST_LOG`, in front of the
/// discard port (where nothing answers), on ports the kernel picks (`--insecure-listen-address`
/// and `--http-address` on port 0, so no other process can take a port between a test choosing
/// it and the proxy binding it); the address it listens on is in its `listening` line
/// ([`listening_on`]).
fn forward_proxy(dir: &Path, extra: &[&str]) -> Command {
    let key = dir.join("key.pem");
    let public = k8s_bootstrap::addon_jwt::SigningKey::from_pkcs8_pem(KEY)
        .unwrap()
        .public_key_pem()
        .unwrap();
    std::fs::write(&key, public).unwrap();
    let mut command = Command::new(BIN);
    command
        .args([
            "forward-proxy",
            "--insecure-listen-address=127.0.0.1:0",
            "--http-address=127.0.0.1:0",
            "--forward=127.0.0.1:9",
            "--issuer=https://kubernetes.default.svc",
            "--audience=kube-system/dashboard",
            "--public-key-file",
            key.to_str().unwrap(),
            "--algorithm=EdDSA",
        ])
        .args(extra)
        .env_remove("RUST_LOG");
    command
}

/// The address the proxy listens on, from its `listening` line (`local=<addr>`).
async fn listening_on(process: &Logged) -> SocketAddr {
    let line = process.line_with(&["INFO", "listening", "local="]).await;
    addr_field(&line, "local").unwrap_or_else(|| panic!("no address in {line}"))
}

/// Sends `GET /` with `token` on a connection of its own; the response's status line.
async fn request(listen: SocketAddr, token: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(listen).await.unwrap();
    stream
        .write_all(
            format!(
                "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
                 Connection: close\r\n\r\n"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(
        WITHIN,
        tokio::io::AsyncReadExt::read_to_end(&mut stream, &mut response),
    )
    .await
    .unwrap()
    .unwrap();
    String::from_utf8_lossy(&response)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forward_proxy_logs_its_addresses_configuration_and_shutdown_not_each_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("key.pem");
    let process = Logged::spawn(forward_proxy(dir.path(), &[]));
    let config = process
        .line_with(&["INFO", "forward-proxy: starting"])
        .await;
    for part in [
        "listen=127.0.0.1:0",
        "audiences=\"kube-system/dashboard\"",
        "issuer=\"https://kubernetes.default.svc\"",
        key.to_str().unwrap(),
    ] {
        assert!(config.contains(part), "{part} missing from {config}");
    }
    let listen = listening_on(&process).await;
    // Refused requests: a 403 each, and no log line each at info (a flood would flood it).
    let forged = "eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJtYWxsb3J5In0.c2lnbmF0dXJl";
    for _ in 0..20 {
        let status = request(listen, forged).await;
        assert!(status.starts_with("HTTP/1.1 403"), "{status}");
    }
    let log = process.terminate().await;
    assert!(log.contains("forward-proxy: stopped"), "{log}");
    assert!(!log.contains(forged), "{log}");
    assert!(
        log.lines().count() < 20,
        "a line per refused request:\n{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_in_the_forward_proxy_log_even_at_trace() {
    use k8s_bootstrap::addon_jwt::{Audience, Issuer, Minter, SigningKey};
    let dir = tempfile::tempdir().unwrap();
    let process = Logged::spawn(forward_proxy(dir.path(), &["-vvv"]));
    let listen = listening_on(&process).await;
    let mut minter = Minter::new(
        SigningKey::from_pkcs8_pem(KEY).unwrap(),
        Issuer::new("https://kubernetes.default.svc"),
    );
    let mut mint = |sub: &str, audience: &str| {
        minter
            .mint(sub, &Audience::new(audience), std::time::SystemTime::now())
            .unwrap()
            .expose_secret()
            .to_owned()
    };
    let valid = mint("alice", "kube-system/dashboard");
    let wrong_audience = mint("mallory", "kube-system/other");
    // Verified (the add-on is unreachable, so 502), and refused.
    let status = request(listen, &valid).await;
    assert!(status.starts_with("HTTP/1.1 502"), "{status}");
    let status = request(listen, &wrong_audience).await;
    assert!(status.starts_with("HTTP/1.1 403"), "{status}");
    let log = process.terminate().await;
    // Debug level was on: the refusal is logged, with its reason.
    assert!(
        log.lines()
            .any(|l| l.contains("DEBUG") && l.contains("rejected") && l.contains("audience")),
        "{log}"
    );
    for token in [&valid, &wrong_audience] {
        // The whole token, and its signature alone (what makes it usable).
        let signature = token.rsplit('.').next().unwrap();
        assert!(!log.contains(token.as_str()), "a token in the log");
        assert!(!log.contains(signature), "a token's signature in the log");
    }
    assert!(!log.contains("PRIVATE KEY"));
}
