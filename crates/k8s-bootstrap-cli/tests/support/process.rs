//! Helpers shared by the tests that run `k8s-bootstrap` as a process: free ports, a forward
//! proxy that reports the addresses it bound, waiting for a condition, SIGTERM.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::panic,
    reason = "each test binary uses some of the helpers; test helpers fail loudly"
)]

use std::net::SocketAddr;
use std::time::Duration;

/// How long a condition may take to hold (room for a loaded 2-core machine).
const EVENTUALLY: Duration = Duration::from_secs(20);

/// A free port on 127.0.0.1 (bound, read, released).
pub(crate) fn free_addr() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// Polls `check` every 50 ms until it holds; fails naming `what` after 20 s.
pub(crate) async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + EVENTUALLY;
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Sends SIGTERM to the child (what the kubelet sends a container).
pub(crate) fn sigterm(child: &tokio::process::Child) {
    let pid = child.id().unwrap();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// A running proxy: the process, the addresses it bound (the flags ask for port 0, so no
/// other process can take them in between), and its log.
pub(crate) struct Proxy {
    pub(crate) child: tokio::process::Child,
    pub(crate) listen: SocketAddr,
    pub(crate) http: SocketAddr,
    log: tokio::task::JoinHandle<String>,
}

impl Proxy {
    /// Everything the proxy wrote to stderr, once it has exited.
    pub(crate) async fn stderr(self) -> String {
        drop(self.child);
        self.log.await.unwrap()
    }
}

/// Starts `command` (a forward proxy), reads the addresses it bound from its `listening` log
/// line, and keeps reading its stderr (so the pipe never fills and blocks it).
pub(crate) async fn spawn_proxy(mut command: tokio::process::Command) -> Proxy {
    use tokio::io::AsyncBufReadExt as _;
    // Info level: the `listening` line, and every line the token test reads for secrets.
    let mut child = command
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let (found, bound) = tokio::sync::oneshot::channel();
    let log = tokio::spawn(async move {
        let mut log = String::new();
        let mut found = Some(found);
        while let Ok(Some(line)) = lines.next_line().await {
            let plain = strip_ansi(&line);
            if plain.contains("forward-proxy: listening") {
                let field = |name: &str| {
                    plain
                        .split_whitespace()
                        .find_map(|w| w.strip_prefix(name))
                        .and_then(|v| v.parse::<SocketAddr>().ok())
                };
                if let (Some(listen), Some(http), Some(found)) =
                    (field("local="), field("http="), found.take())
                {
                    let _ = found.send((listen, http));
                }
            }
            log.push_str(&plain);
            log.push('\n');
        }
        log
    });
    let (listen, http) = match tokio::time::timeout(Duration::from_secs(20), bound).await {
        Ok(Ok(addresses)) => addresses,
        _ => {
            drop(child);
            panic!(
                "the proxy did not report its addresses:\n{}",
                log.await.unwrap()
            );
        }
    };
    Proxy {
        child,
        listen,
        http,
        log,
    }
}

/// `line` without ANSI escape sequences.
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
