//! Shared inputs for the criterion benchmarks in this package.
//!
//! Each bench file in `benches/benches/` puts our implementation beside its floor
//! (`baseline/<primitive>`) and, where one exists, a peer crate, in the same run.

/// The realistic 2 KiB cluster-info kubeconfig (one CA certificate) used as benchmark input.
pub const BENCH_KUBECONFIG: &str =
    include_str!("../../crates/clusterinfo/tests/vectors/bench_kubeconfig.yaml");
