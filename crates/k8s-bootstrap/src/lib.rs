#![cfg_attr(
    all(
        feature = "discovery",
        feature = "token",
        feature = "loopback-server",
        feature = "exec",
        feature = "sidecar"
    ),
    doc = include_str!("../README.md")
)]
#![cfg_attr(
    not(all(
        feature = "discovery",
        feature = "token",
        feature = "loopback-server",
        feature = "exec",
        feature = "sidecar"
    )),
    doc = "Async drivers and a CLI over the k8s-bootstrap cores; enable the `discovery`, `token`, `exec`, `sidecar`, `loopback-server` or `cli` feature (see the README)."
)]

#[allow(dead_code, reason = "used by whichever drivers are enabled")]
mod clock;

#[cfg(feature = "sidecar")]
pub use addon_jwt;
#[cfg(any(
    feature = "discovery",
    feature = "token",
    feature = "loopback-server",
    feature = "controllers"
))]
pub use bootstrap_token;
#[cfg(any(
    feature = "discovery",
    feature = "loopback-server",
    feature = "controllers"
))]
pub use clusterinfo;
#[cfg(feature = "exec")]
pub use exec_credential;
pub use jws_detached;
/// The `k8s-openapi` this crate's drivers use (its newest Kubernetes version, `latest`).
#[cfg(any(
    feature = "token",
    feature = "exec",
    feature = "loopback-server",
    feature = "controllers",
    feature = "tls-bootstrap"
))]
pub use k8s_openapi;
/// The `kube` this crate's drivers use.
#[cfg(any(
    feature = "token",
    feature = "exec",
    feature = "controllers",
    feature = "tls-bootstrap"
))]
pub use kube;
#[cfg(feature = "tls-bootstrap")]
pub use tls_bootstrap;

#[cfg(feature = "accept")]
pub mod accept;
#[cfg(feature = "controllers")]
pub mod controllers;
#[cfg(feature = "tls-bootstrap")]
pub mod csr;
#[cfg(feature = "discovery")]
pub mod discovery;
#[cfg(feature = "exec")]
pub mod exec;
#[cfg(any(feature = "discovery", feature = "tls-bootstrap"))]
mod files;
#[cfg(feature = "loopback-server")]
pub mod loopback;
#[cfg(feature = "sidecar")]
pub mod sidecar;
#[cfg(any(feature = "discovery", feature = "loopback-server"))]
mod tls;
#[cfg(feature = "token")]
pub mod token;
