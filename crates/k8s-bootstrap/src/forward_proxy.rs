//! The add-on sidecar as a server: verifies the identity token of every request
//! ([`SidecarLayer`]), forwards the request with `X-Authenticated-User` to the add-on, and
//! streams both bodies; `/healthz`, `/readyz` and `/metrics` on a second address. What
//! `k8s-bootstrap forward-proxy` runs.
//!
//! ```no_run
//! # async fn demo() -> Result<(), k8s_bootstrap::forward_proxy::Error> {
//! use k8s_bootstrap::addon_jwt::Algorithm;
//! use k8s_bootstrap::forward_proxy::{self, Config, KeySource, TlsServing};
//!
//! let config = Config::new(
//!     "127.0.0.1:8080",
//!     "https://kubernetes.default.svc",
//!     KeySource::Pem("/etc/keys/key.pem".into(), Algorithm::EdDsa),
//! )
//! .tls(TlsServing::new("/etc/tls/tls.crt", "/etc/tls/tls.key"))
//! .audience("kube-system/dashboard");
//! forward_proxy::serve(config, async { let _ = tokio::signal::ctrl_c().await; }).await?;
//! # Ok(())
//! # }
//! ```
//!
//! Requests are served over TLS ([`Config::tls`]: the certificate and key files reloaded when
//! their contents change, TLS 1.2 at least, client certificates optionally verified), or in
//! plain HTTP only when [`Config::plain_http`] asks for it: a [`Config`] with neither is
//! refused.
//!
//! The modules: [`Config`] and its [`Error`] (`config`), [`Server`] binding and serving
//! (`server`), the client connections and their threads (`connections`), the add-on side
//! (`upstream`), the key file and its reload (`keys`), the pod's labels and the Services that
//! select it (`labels`), and the metrics (`metrics`).

mod authentication;
mod config;
mod connections;
mod keys;
mod labels;
pub(crate) mod metrics;
mod server;
mod upstream;

pub use crate::ClientCertificates;
pub use crate::tls_serving::{ServingError, TlsFile, TlsServing, TlsVersion};
pub use authentication::{
    AuthHeaders, Authentication, DEFAULT_GROUPS_HEADER, DEFAULT_GROUPS_SEPARATOR,
    DEFAULT_USER_HEADER, Delegated,
};
pub use config::{Config, Error, KeyReloadFailure, KeySource, Serving, available_cpus};
pub use labels::{ServiceAudiences, read_pod_labels};
pub use server::{Server, serve};

#[cfg(doc)]
use crate::sidecar::SidecarLayer;
