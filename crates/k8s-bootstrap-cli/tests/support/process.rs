//! Helpers shared by the tests that run `k8s-bootstrap` as a process: the addresses a process
//! bound on port 0 (from its log), an address that refuses connections, a forward proxy that
//! reports the addresses it bound, waiting for a condition, SIGTERM.
//!
//! No test picks a free port and releases it for a process to bind later (another process
//! could take it in between): the processes bind port 0 and log the address they got.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::panic,
    clippy::arithmetic_side_effects,
    reason = "each test binary uses some of the helpers; test helpers fail loudly"
)]

use std::net::SocketAddr;
use std::time::Duration;

/// How long a condition may take to hold (room for a loaded 2-core machine).
const EVENTUALLY: Duration = Duration::from_secs(20);

/// An address on 127.0.0.1 where nothing listens, and nothing can while this value lives: its
/// port is bound without listening, so a connection to it is refused (and no other process can
/// bind the port and answer instead).
pub(crate) struct Refusing {
    addr: SocketAddr,
    _socket: tokio::net::TcpSocket,
}

impl Refusing {
    /// Binds a port of the kernel's choosing, without listening on it.
    pub(crate) fn bind() -> Refusing {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        Refusing {
            addr: socket.local_addr().unwrap(),
            _socket: socket,
        }
    }

    /// The address: connections to it are refused.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }
}

/// The socket address in field `name` (`local`, `http`...) of a `tracing` text line
/// (`... local=127.0.0.1:43121 ...`, quoted or not; ANSI escapes are skipped).
pub(crate) fn addr_field(line: &str, name: &str) -> Option<SocketAddr> {
    let prefix = format!("{name}=");
    strip_ansi(line)
        .split_whitespace()
        .find_map(|w| w.strip_prefix(prefix.as_str()))
        .and_then(|v| v.trim_matches('"').parse().ok())
}

/// Polls `check` every 50 ms until it gives a value; fails naming `what` after 20 s.
pub(crate) async fn eventually_some<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + EVENTUALLY;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
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
            if plain.contains("forward-proxy: listening")
                && let (Some(listen), Some(http), Some(found)) = (
                    addr_field(&plain, "local"),
                    addr_field(&plain, "http"),
                    found.take(),
                )
            {
                let _ = found.send((listen, http));
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

/// A plain-HTTP `GET path` on a new connection (`Connection: close`): the status and the
/// body, or `None` when the server does not answer in HTTP.
pub(crate) async fn http_get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await.ok()?;
    let status = response.get(9..12)?.parse().ok()?;
    Some((status, response.split_once("\r\n\r\n")?.1.to_owned()))
}
