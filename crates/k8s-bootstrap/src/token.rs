//! Bootstrap-token management, as `kubeadm token create|list|delete|generate`, over
//! `kube::Api<k8s_openapi::api::core::v1::Secret>` in `kube-system`.
//!
//! The `bootstrap-token` core makes every decision (defaults, validation, the Secret's layout,
//! parsing, the `token list` table); these functions perform the API calls and map the server's
//! answers to a typed [`Error`] that names the operation. Token secrets never reach `Debug`,
//! errors or `tracing` output; only the token ID is logged.
//!
//! ```no_run
//! # async fn demo(client: kube::Client) -> Result<(), k8s_bootstrap::token::Error> {
//! use k8s_bootstrap::bootstrap_token::KubeadmToken;
//! use k8s_bootstrap::token;
//! use std::time::SystemTime;
//!
//! let api = token::secrets_api(client);
//! # #[allow(clippy::disallowed_methods)]
//! let now = SystemTime::now();
//! let created = token::create(&api, KubeadmToken::new(None), now).await?;
//! let listed = token::list(&api, now).await?;
//! print!("{}", listed.to_table());
//! let id = token::delete(&api, created.id().as_str()).await?;
//! # let _ = id;
//! # Ok(()) }
//! ```

mod create;
mod delete;
mod error;
mod list;

pub use create::{Created, create};
pub use delete::delete;
pub use error::{Error, Operation};
pub use list::{MAX_LISTED_SECRETS, SkippedSecret, TokenList, list};

use bootstrap_token::BootstrapToken;
use k8s_openapi::api::core::v1::Secret;

/// `kube::Api<Secret>` for `kube-system`, the namespace bootstrap tokens live in.
#[must_use]
pub fn secrets_api(client: kube::Client) -> kube::Api<Secret> {
    kube::Api::namespaced(client, bootstrap_token::NAMESPACE)
}

/// A fresh random token (`kubeadm token generate`), from the core's generator; touches no
/// server.
///
/// # Errors
///
/// [`Error::Generate`] when the operating system's random source fails.
pub fn generate() -> Result<BootstrapToken, Error> {
    BootstrapToken::generate().map_err(Error::Generate)
}
