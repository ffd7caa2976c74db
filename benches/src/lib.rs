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

/// A free port on 127.0.0.1 (bound, read, released) for a process the bench starts; the
/// benches run alone, so nothing takes it in between.
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
