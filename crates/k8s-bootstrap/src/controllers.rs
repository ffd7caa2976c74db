//! The cluster-side controllers on kube-runtime: kube-controller-manager's bootstrap signer
//! and token cleaner, each a loop over watch caches that runs the core's pure decision.
//!
//! * [`bootstrap_signer`] watches bootstrap-token Secrets in `kube-system` and the
//!   `kube-public/cluster-info` ConfigMap; after any change it runs [`clusterinfo::reconcile`]
//!   over the cached objects and, when the signatures changed, replaces the ConfigMap with the
//!   `resourceVersion` it read (a 409 Conflict means a concurrent writer: the change is read
//!   back through the watch and the reconcile runs again; nothing is ever overwritten blindly).
//!   Bursts coalesce as in Kubernetes, whose controller has a single work-queue key: any number
//!   of events while a reconcile runs lead to exactly one more.
//! * [`token_cleaner`] watches the same Secrets and, per Secret, applies
//!   [`bootstrap_token::cleaner_action`]: an expired Secret (or one whose expiration cannot be
//!   parsed, as Kubernetes treats it) is deleted with its UID as precondition, so a Secret
//!   recreated under the same name is never deleted by mistake; a live one is looked at again
//!   exactly when it expires.
//!
//! Both take `kube::Client` and a shutdown future and return when it completes. The watches
//! are kube-runtime's watcher with its default backoff: a watch that expires (410 Gone)
//! re-lists and resumes. Metrics go to a [`Metrics`] (Prometheus text format).

use std::future::Future;
use std::time::Duration;

mod cleaner;
mod metrics;
mod signer;

pub use cleaner::token_cleaner;
pub use metrics::Metrics;
pub use signer::bootstrap_signer;

/// The field selector of bootstrap-token Secrets (`type=bootstrap.kubernetes.io/token`).
pub const TOKEN_SECRET_SELECTOR: &str = "type=bootstrap.kubernetes.io/token";

/// Why a controller stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A watch cache's writer went away before it was first filled.
    #[error("the watch cache stopped before its first list completed")]
    CacheStopped,
}

/// Settings shared by the controllers.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Options {
    /// Delay before a reconcile that failed (other than by a conflict) runs again; doubles per
    /// failure up to `max_retry_delay`.
    pub retry_delay: Duration,
    /// Cap of the retry delay.
    pub max_retry_delay: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            retry_delay: Duration::from_millis(100),
            max_retry_delay: Duration::from_secs(30),
        }
    }
}

/// Runs `work` until `shutdown` completes; the controller's own result otherwise.
async fn until<T>(
    work: impl Future<Output = Result<T, Error>>,
    shutdown: impl Future<Output = ()>,
) -> Result<Option<T>, Error> {
    tokio::select! {
        result = work => result.map(Some),
        () = shutdown => Ok(None),
    }
}
