//! Exec credential plugins on tokio, and a tower layer that authenticates `kube::Client`.
//!
//! The core [`exec_credential::ExecAuthenticator`] decides everything: the cache and expiry,
//! when to run the plugin (one run for any number of concurrent callers, at most one more
//! after an HTTP 401 per credential), interactive rules, the wait after failed runs, and the
//! plugin's command, arguments, environment, timeout and stdout cap ([`PluginRun`]). This
//! module performs what it asks:
//!
//! * [`run_plugin`] runs one [`PluginRun`] with `tokio::process`: the parent environment plus
//!   the run's (ending with `KUBERNETES_EXEC_INFO`), stdin only for interactive runs on a
//!   terminal, stderr passed through, stdout read up to the cap, the plugin in its own process
//!   group, and the whole group killed on timeout, on the cap, or when the run is dropped.
//! * [`ExecCredentials`] is the shared handle (an `Arc`) over the authenticator: single-flight
//!   runs, [`ExecCredentials::credential`], [`ExecCredentials::refresh_after_unauthorized`],
//!   and TLS client identity rotation ([`ExecCredentials::subscribe_client_identity`]).
//! * [`ExecLayer`] / [`ExecService`] set `Authorization: Bearer <token>` on each request and,
//!   after a 401, refresh (single flight) and send a [`ReplayableBody`] request once more.
//! * [`kube_client_from_kubeconfig`] wires it into `kube::Client`, removing the `exec` stanza
//!   from kube's configuration so that kube does not run the plugin too.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_bootstrap::exec::kube_client_from_kubeconfig;
//! use k8s_openapi::api::core::v1::Namespace;
//!
//! // The current context's user must have an `exec` stanza.
//! let (client, _credentials) = kube_client_from_kubeconfig("/home/me/.kube/config", None).await?;
//! let namespaces = kube::Api::<Namespace>::all(client).list(&Default::default()).await?;
//! # let _ = namespaces;
//! # Ok(())
//! # }
//! ```
//!
//! The same by hand, with a configured authenticator (for example a shorter timeout):
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use k8s_bootstrap::exec::{ExecCredentials, ExecLayer, kube_config_without_exec};
//! use k8s_bootstrap::exec_credential::{ApiVersion, Cluster, ExecAuthenticator, ExecConfig,
//!     InteractiveMode};
//!
//! let config = kube_config_without_exec("/home/me/.kube/config", None).await?;
//! let exec = ExecConfig::new("my-plugin", ApiVersion::V1, InteractiveMode::Never);
//! let mut auth = ExecAuthenticator::new(exec, Cluster::new(config.cluster_url.to_string()))?;
//! auth.set_timeouts(Duration::from_secs(10), Duration::from_secs(60));
//! let credentials = ExecCredentials::from_authenticator(auth);
//! // kube's stack is not `Clone`: a buffer below the layer makes it so.
//! let client = kube::client::ClientBuilder::try_from(config)?
//!     .with_layer(&tower::buffer::BufferLayer::<http::Request<kube::client::Body>>::new(1024))
//!     .with_layer(&ExecLayer::new(credentials))
//!     .build();
//! # let _ = client;
//! # Ok(())
//! # }
//! ```
//!
//! # Client certificates
//!
//! A plugin may return a TLS client certificate and key instead of (or besides) a token. The
//! layer cannot change the certificate of connections kube's connector makes, so a client
//! presents the certificate it was built with. [`ExecCredentials::subscribe_client_identity`]
//! is a `tokio::sync::watch` receiver of the current [`TlsIdentity`] (PEM certificate, key,
//! and the [`CredentialId`](exec_credential::CredentialId) generation); when it changes, build
//! a new client with [`kube_client_with_exec`] and the new identity, and drop the old one (its
//! pooled connections close with it), as client-go closes connections on rotation:
//!
//! ```no_run
//! # async fn demo(config: kube::Config, credentials: k8s_bootstrap::exec::ExecCredentials)
//! # -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_bootstrap::exec::kube_client_with_exec;
//! let mut rotations = credentials.subscribe_client_identity();
//! while rotations.changed().await.is_ok() {
//!     let identity = rotations.borrow_and_update().clone();
//!     let client = kube_client_with_exec(config.clone(), &credentials, identity.as_ref())?;
//!     // ... replace the client the program uses ...
//! #   let _ = client;
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # Secrets
//!
//! Tokens, keys, plugin arguments, `env` values and plugin output never appear in `Debug`,
//! in errors or in `tracing` output (spans name the command and run, events the credential
//! generation).
//!
//! [`PluginRun`]: exec_credential::PluginRun

mod credentials;
mod error;
mod kubeconfig;
mod layer;
mod runner;

pub use credentials::{ExecCredentials, TlsIdentity};
pub use error::Error;
pub use kubeconfig::{
    MAX_CERTIFICATE_AUTHORITY_BYTES, MAX_KUBECONFIG_BYTES, kube_client_from_kubeconfig,
    kube_client_with_exec, kube_config_without_exec,
};
pub use layer::{ExecLayer, ExecService, ReplayableBody, ResponseFuture};
pub use runner::{PluginOutcome, run_plugin};
