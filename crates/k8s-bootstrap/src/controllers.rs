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
//!
//! [`run`] is what `k8s-bootstrap controllers` runs: the chosen controllers behind leader
//! election on a `coordination.k8s.io` Lease (kube-lease-manager), so several replicas are
//! safe; [`serve_http`] serves `/healthz`, `/readyz` and `/metrics` beside them.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

mod cleaner;
mod http;
mod metrics;
mod signer;

pub use cleaner::token_cleaner;
pub use http::serve_http;
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
    /// The leader lease could not be set up (the Lease API refused or is unreachable).
    #[error("leader election failed")]
    LeaderElection(#[source] kube_lease_manager::LeaseManagerError),
    /// This process held the leader lease and lost it: it stops, as kube-controller-manager
    /// does, so that two leaders never work at once; its supervisor restarts it as a standby.
    #[error("leader election lost")]
    LeadershipLost,
    /// The HTTP endpoint could not listen.
    #[error("cannot listen on {addr}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// Which controllers [`run`] runs, as kube-controller-manager's `--controllers` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Enabled {
    /// `bootstrapsigner`.
    pub bootstrap_signer: bool,
    /// `tokencleaner`.
    pub token_cleaner: bool,
}

impl Enabled {
    /// Both controllers.
    #[must_use]
    pub fn all() -> Enabled {
        Enabled {
            bootstrap_signer: true,
            token_cleaner: true,
        }
    }

    /// Only the named ones (`bootstrapsigner`, `tokencleaner`; `*` for both).
    ///
    /// # Errors
    ///
    /// The first name that is not a controller of this crate.
    pub fn from_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Enabled, String> {
        let mut enabled = Enabled {
            bootstrap_signer: false,
            token_cleaner: false,
        };
        for name in names {
            match name.trim() {
                "bootstrapsigner" => enabled.bootstrap_signer = true,
                "tokencleaner" => enabled.token_cleaner = true,
                "*" => enabled = Enabled::all(),
                other => return Err(other.chars().take(64).collect()),
            }
        }
        Ok(enabled)
    }
}

/// Leader election on a `coordination.k8s.io/v1` Lease.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LeaderElection {
    /// The Lease's namespace (`kube-system` by default).
    pub namespace: String,
    /// The Lease's name (`k8s-bootstrap-controllers` by default).
    pub lease_name: String,
    /// This process's identity in the Lease (a pod name; unique per replica).
    pub identity: String,
    /// How long a lease is valid without renewal (15 s by default, as kube-controller-manager).
    pub lease_duration: Duration,
    /// How long before the lease expires the holder renews it (5 s by default).
    pub grace: Duration,
}

impl LeaderElection {
    /// Leader election under `identity` with the defaults.
    #[must_use]
    pub fn new(identity: impl Into<String>) -> LeaderElection {
        LeaderElection {
            namespace: bootstrap_token::NAMESPACE.to_owned(),
            lease_name: "k8s-bootstrap-controllers".to_owned(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            grace: Duration::from_secs(5),
        }
    }
}

/// Runs the `enabled` controllers until `shutdown` completes, behind leader election when
/// `leader_election` is given: a standby waits for the lease (and is ready meanwhile); a leader
/// runs the controllers and renews the lease; losing it ends the run with
/// [`Error::LeadershipLost`]. On shutdown the lease is released, so a standby takes over at
/// once instead of after the lease duration.
///
/// # Errors
///
/// [`Error::LeaderElection`] if the Lease cannot be set up, [`Error::LeadershipLost`], and the
/// controllers' errors.
pub async fn run(
    client: kube::Client,
    enabled: Enabled,
    leader_election: Option<LeaderElection>,
    options: Options,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), Error> {
    use std::sync::atomic::Ordering;
    metrics
        .expect_signer
        .store(enabled.bootstrap_signer, Ordering::Release);
    metrics
        .expect_cleaner
        .store(enabled.token_cleaner, Ordering::Release);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopped = move || {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|stop| *stop).await;
        }
    };
    let controllers = {
        let (client, metrics, options) = (client.clone(), metrics.clone(), options.clone());
        let stopped = stopped.clone();
        async move {
            let signer = async {
                if enabled.bootstrap_signer {
                    bootstrap_signer(client.clone(), metrics.clone(), options.clone(), stopped())
                        .await
                } else {
                    Ok(())
                }
            };
            let cleaner = async {
                if enabled.token_cleaner {
                    token_cleaner(client.clone(), metrics.clone(), options.clone(), stopped()).await
                } else {
                    Ok(())
                }
            };
            let (a, b) = tokio::join!(signer, cleaner);
            a.and(b)
        }
    };
    let Some(election) = leader_election else {
        metrics.leader.set(1);
        tokio::pin!(controllers);
        return tokio::select! {
            result = &mut controllers => result,
            () = shutdown => {
                let _ = stop_tx.send(true);
                controllers.await
            }
        };
    };
    let manager = kube_lease_manager::LeaseManagerBuilder::new(client, election.lease_name)
        .with_namespace(election.namespace)
        .with_identity(election.identity)
        .with_duration(election.lease_duration.as_secs().max(1))
        .with_grace(election.grace.as_secs().max(1))
        .with_field_manager("k8s-bootstrap-controllers")
        .build()
        .await
        .map_err(Error::LeaderElection)?;
    let (mut leading, lease_task) = manager.watch().await;
    metrics.standby.store(true, Ordering::Release);
    tokio::pin!(shutdown);
    let result = async {
        // Standby until the lease is ours.
        tokio::select! {
            acquired = async { leading.wait_for(|leader| *leader).await.is_ok() } => {
                if !acquired {
                    return Err(Error::LeadershipLost);
                }
            }
            () = &mut shutdown => return Ok(()),
        }
        tracing::info!("leader election: acquired the lease, starting the controllers");
        metrics.standby.store(false, Ordering::Release);
        metrics.leader.set(1);
        tokio::pin!(controllers);
        tokio::select! {
            result = &mut controllers => result,
            () = &mut shutdown => {
                let _ = stop_tx.send(true);
                controllers.await
            }
            _ = async { leading.wait_for(|leader| !*leader).await.is_ok() } => {
                tracing::error!("leader election: lost the lease, stopping");
                let _ = stop_tx.send(true);
                Err(Error::LeadershipLost)
            }
        }
    }
    .await;
    metrics.leader.set(0);
    // Closing the channel makes the lease task release the lease and end.
    drop(leading);
    let _ = tokio::time::timeout(Duration::from_secs(5), lease_task).await;
    result
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
