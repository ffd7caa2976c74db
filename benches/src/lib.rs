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
