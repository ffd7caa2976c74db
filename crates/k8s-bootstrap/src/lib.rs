// The README is the front page whatever features are enabled; its examples are doctests when
// the features they use are (the README's own examples name them).
#![cfg_attr(not(doctest), doc = include_str!("../README.md"))]
#![cfg_attr(
    all(
        doctest,
        feature = "discovery",
        feature = "token",
        feature = "exec",
        feature = "sidecar"
    ),
    doc = include_str!("../README.md")
)]

#[allow(dead_code, reason = "used by whichever drivers are enabled")]
mod clock;

#[cfg(any(feature = "sidecar", feature = "add-auth"))]
pub use addon_jwt;
#[cfg(any(feature = "discovery", feature = "token", feature = "controllers"))]
pub use bootstrap_token;
#[cfg(any(feature = "discovery", feature = "controllers"))]
pub use clusterinfo;
#[cfg(feature = "delegated-auth")]
pub use delegated_auth;
#[cfg(feature = "exec")]
pub use exec_credential;
pub use jws_detached;
/// The `k8s-openapi` this crate's drivers use (its newest Kubernetes version, `latest`).
#[cfg(any(
    feature = "token",
    feature = "exec",
    feature = "controllers",
    feature = "tls-bootstrap",
    feature = "forward-proxy",
    feature = "delegated-auth"
))]
pub use k8s_openapi;
/// The `kube` this crate's drivers use.
#[cfg(any(
    feature = "token",
    feature = "exec",
    feature = "controllers",
    feature = "tls-bootstrap",
    feature = "forward-proxy",
    feature = "delegated-auth"
))]
pub use kube;
#[cfg(any(feature = "tls-bootstrap", feature = "controllers"))]
pub use tls_bootstrap;

#[cfg(any(feature = "tls-serving", feature = "delegated-auth"))]
mod client_certificates;
#[cfg(any(feature = "tls-serving", feature = "delegated-auth"))]
pub use client_certificates::ClientCertificates;

#[cfg(feature = "accept")]
pub mod accept;
#[cfg(feature = "add-auth")]
pub mod addon_auth;
#[cfg(feature = "controllers")]
pub mod controllers;
#[cfg(feature = "tls-bootstrap")]
pub mod csr;
#[cfg(feature = "delegated-auth")]
pub mod delegated;
#[cfg(feature = "discovery")]
pub mod discovery;
#[cfg(feature = "exec")]
pub mod exec;
#[cfg(any(feature = "discovery", feature = "tls-bootstrap"))]
pub mod files;
#[cfg(feature = "forward-proxy")]
pub mod forward_proxy;
#[cfg(any(
    feature = "controllers",
    feature = "forward-proxy",
    feature = "node-certificates-http"
))]
mod health;
#[cfg(feature = "tls-bootstrap")]
pub mod node_certificates;
#[cfg(feature = "sidecar")]
pub mod sidecar;
#[cfg(any(
    feature = "discovery",
    feature = "tls-serving",
    feature = "tls-bootstrap"
))]
#[cfg_attr(
    not(any(
        feature = "discovery",
        feature = "tls-bootstrap",
        feature = "forward-proxy",
        feature = "controllers"
    )),
    allow(dead_code)
)]
mod tls;
#[cfg(feature = "tls-serving")]
pub mod tls_serving;
#[cfg(feature = "token")]
pub mod token;
