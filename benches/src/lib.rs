//! Shared inputs for the criterion benchmarks in this package.
//!
//! Each bench file in `benches/benches/` puts our implementation beside its floor
//! (`baseline/<primitive>`) and, where one exists, a peer crate, in the same run.

/// The realistic 2 KiB cluster-info kubeconfig (one CA certificate) used as benchmark input.
pub const BENCH_KUBECONFIG: &str =
    include_str!("../../crates/clusterinfo/tests/vectors/bench_kubeconfig.yaml");

/// Builds the release `k8s-bootstrap` binary (package `k8s-bootstrap-cli`) with `features` and
/// no default features (through the `cargo` running the bench) and returns its path, for the benches that drive the real process.
///
/// # Panics
///
/// When the build fails.
#[allow(clippy::panic, reason = "a benchmark fails loudly")]
pub fn build_cli(features: &str) -> std::path::PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = std::process::Command::new(cargo)
        .args([
            "build",
            "--release",
            "--locked",
            "-p",
            "k8s-bootstrap-cli",
            "--no-default-features",
            "--features",
            features,
            "--bin",
            "k8s-bootstrap",
        ])
        .status();
    if !status.is_ok_and(|s| s.success()) {
        panic!("building k8s-bootstrap-cli --features {features} failed");
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"),
        std::path::PathBuf::from,
    );
    target.join("release/k8s-bootstrap")
}

/// The features the shipped `k8s-bootstrap` binary (and the container image) is built with,
/// signature backend included: what the forward-proxy benches build by default.
pub const SHIPPED_FEATURES: &str = "aws-lc-rs,sidecar";

/// The issuer the forward-proxy benches' tokens carry and the proxy accepts.
pub const PROXY_ISSUER: &str = "https://kubernetes.default.svc";

/// The audience the forward-proxy benches' tokens carry and the proxy accepts.
pub const PROXY_AUDIENCE: &str = "kube-system/dashboard";

/// Whether the bench program named `name` is to run: `cargo bench` passes every bench binary
/// the command line's filter, so a program given a filter that is not part of its name stays
/// quiet (as criterion's groups do).
#[must_use]
pub fn selected(name: &str) -> bool {
    !std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .any(|a| !a.starts_with('-') && !name.contains(a.as_str()))
}

/// The environment variable `name` as a number, or `default` when unset or not a number.
#[must_use]
pub fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Starts a server process on a port of 127.0.0.1 and returns it once it is that process
/// that listens there. `spawn` gets free addresses (see [`free_addr`]: bound, read, released,
/// so another process may take one in between); when the child exits (a port it was given was
/// taken) or the port is held by another process, it is stopped and started again on new ports.
///
/// # Panics
///
/// When no attempt listens within ten seconds, five times.
#[allow(clippy::panic, reason = "a benchmark fails loudly")]
pub fn start_listening(
    what: &str,
    mut spawn: impl FnMut(std::net::SocketAddr) -> std::process::Child,
) -> (std::process::Child, std::net::SocketAddr) {
    for _ in 0..5 {
        let listen = free_addr();
        let mut child = spawn(listen);
        for _ in 0..500 {
            if matches!(child.try_wait(), Ok(Some(_))) {
                break;
            }
            if listens(child.id(), listen.port()) {
                return (child, listen);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    panic!("{what} did not start");
}

/// Whether process `pid` holds the socket that listens on 127.0.0.1:`port` (Linux: the
/// socket's inode in `/proc/net/tcp`, among the process's open files).
#[must_use]
pub fn listens(pid: u32, port: u16) -> bool {
    let Ok(table) = std::fs::read_to_string("/proc/net/tcp") else {
        return false;
    };
    let local = format!("0100007F:{port:04X}");
    // Columns: sl, local_address, rem_address, st, ..., inode (the tenth).
    let inodes: Vec<String> = table
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|c| c.get(1) == Some(&local.as_str()) && c.get(3) == Some(&"0A"))
        .filter_map(|c| c.get(9).map(|i| format!("socket:[{i}]")))
        .collect();
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.filter_map(Result::ok)
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .any(|target| inodes.iter().any(|i| target.as_os_str() == i.as_str()))
}

/// A free port on 127.0.0.1 (bound, read, released) for a server the bench starts: another
/// process may take it before the server binds it, so start servers with [`start_listening`].
///
/// # Panics
///
/// When no port can be bound.
#[allow(clippy::expect_used, reason = "a benchmark fails loudly")]
#[must_use]
pub fn free_addr() -> std::net::SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port on 127.0.0.1")
}
