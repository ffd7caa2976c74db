//! Helpers shared by the tests that run `k8s-bootstrap` as a process: free ports, waiting for a
//! condition, SIGTERM.
#![allow(
    dead_code,
    clippy::unwrap_used,
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
