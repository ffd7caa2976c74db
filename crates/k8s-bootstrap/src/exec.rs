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
//! * [`kube_client`] wires it into `kube::Client`, removing the `exec` stanza from kube's
//!   configuration so that kube does not run the plugin too; [`infer_kube_client`] is the
//!   same with kubectl's defaults.
//!
//! An exec-enabled client in one line, inferred as `kube::Client::try_default` infers one
//! (`KUBECONFIG`, else `~/.kube/config`, else in-cluster; the `current-context`; kubectl's
//! kuberc `credentialPluginPolicy`). A user without an `exec` stanza (a token, a client
//! certificate) gets kube's own client. Building does not run the plugin; the first request
//! does:
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_openapi::api::core::v1::Namespace;
//!
//! let client = k8s_bootstrap::exec::infer_kube_client().await?;
//! let namespaces = kube::Api::<Namespace>::all(client).list(&Default::default()).await?;
//! # let _ = namespaces;
//! # Ok(())
//! # }
//! ```
//!
//! With a chosen kubeconfig, context and plugin policy, keeping the credentials handle:
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_bootstrap::exec::{KubeconfigOptions, kube_client};
//! use k8s_bootstrap::exec_credential::PluginPolicy;
//!
//! let options = KubeconfigOptions::infer()
//!     .kubeconfig("/home/me/.kube/config")
//!     .context("prod")
//!     .plugin_policy(PluginPolicy::allowlist(["kubelogin"])?);
//! let built = kube_client(&options).await?;
//! if let Some(credentials) = built.credentials() {
//!     println!("plugin runs so far: {}", credentials.plugin_runs());
//! }
//! let client = built.into_client();
//! # let _ = client;
//! # Ok(())
//! # }
//! ```
//!
//! An error of such a client's request reaches the exec error in one step with
//! [`Error::from_kube`].
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
//! A plugin may return a TLS client certificate and key instead of (or besides) a token.
//! The clients of [`kube_client`] follow them: requests go over connections that present the
//! current certificate (a kube client per certificate; after a rotation the previous one's
//! connections close once idle), and a 401 on a certificate-only credential refreshes it and
//! retries the request once with the new certificate.
//!
//! A client built by hand with [`kube_client_with_exec`] presents the certificate it was
//! built with. [`ExecCredentials::subscribe_client_identity`] is a `tokio::sync::watch`
//! receiver of the current [`TlsIdentity`] (PEM certificate, key, and the
//! [`CredentialId`](exec_credential::CredentialId) generation); when it changes, build a new
//! client with the new identity and drop the old one:
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
//! # Plugin runs and cancellation
//!
//! Each plugin run is a task of its own: a request that is dropped or times out stops waiting
//! for it, and the run goes on for the other requests (a run nobody waits for any more
//! finishes and fills the cache). A cancelled request never counts as a failed run. A
//! credential that has already expired when it arrives is sent as client-go sends it (the
//! clocks of plugin and client may disagree; the server decides), with a warning in the log;
//! the core hands it out for a second before the plugin runs again, so a plugin whose clock
//! runs behind runs at most about once a second, however many requests a second the program
//! makes ([`ExecAuthenticator::set_stale_credential_reuse`](exec_credential::ExecAuthenticator::set_stale_credential_reuse)).
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
    ExecClient, KubeconfigOptions, MAX_CERTIFICATE_AUTHORITY_BYTES, MAX_KUBECONFIG_BYTES,
    MAX_KUBERC_BYTES, infer_kube_client, kube_client, kube_client_with_exec,
    kube_config_without_exec,
};
pub use layer::{ExecLayer, ExecService, ReplayableBody, ResponseFuture};
pub use runner::{PluginOutcome, look_path, run_plugin};
