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
//! * [`kubelet_serving_approver`] (off by default) approves, or denies with a reason,
//!   `kubernetes.io/kubelet-serving` requests by [`tls_bootstrap::decide_serving`]: the
//!   requester is the request's common name, and the node owns every DNS name and IP address
//!   it asks for (its Node's `status.addresses`, the provider regex and IP prefixes, optionally
//!   DNS), as postfinance/kubelet-csr-approver checks them.
//!
//! Each takes `kube::Client` and a shutdown future and return when it completes. The watches
//! are kube-runtime's watcher with its default backoff: a watch that expires (410 Gone)
//! re-lists and resumes. Metrics go to a [`Metrics`] (Prometheus text format).
//!
//! [`run`] is what `k8s-bootstrap controllers` runs: the chosen controllers behind leader
//! election on a `coordination.k8s.io` Lease (client-go's semantics: conditional writes, a
//! renew deadline on the monotonic clock, a timeout on every request), so several replicas
//! are safe; [`serve_http`] serves `/healthz`, `/readyz` and `/metrics` beside them, or
//! [`serve_https`] over TLS with `/metrics` behind
//! [`DelegatedAuthLayer`](crate::delegated::DelegatedAuthLayer) (a `TokenReview` and a
//! `SubjectAccessReview` per scraper, cached), as controller-runtime's secure metrics server.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

mod cleaner;
mod election;
mod http;
mod metrics;
mod retries;
mod secure_metrics;
mod serving_approver;
mod signer;

pub use crate::tls_serving::{ServingError, TlsFile, TlsServing, TlsVersion};
pub use cleaner::token_cleaner;
pub use http::serve_http;
pub use metrics::Metrics;
pub use secure_metrics::{MetricsCertificate, serve_https};
pub use serving_approver::{
    APPROVED_REASON, DENIED_REASON, KUBELET_SERVING_SELECTOR, describe_policy,
    kubelet_serving_approver,
};
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
    /// The leader-election settings are inconsistent ([`LeaderElection::validate`]).
    #[error("invalid leader election settings: {0}")]
    LeaderElection(&'static str),
    /// The kubelet-serving approver is enabled without [`Options::serving_policy`].
    #[error("the kubelet-serving approver needs a serving policy")]
    NoServingPolicy,
    /// This process held the leader lease and lost it (another replica holds it, or it could
    /// not be renewed within the renew deadline): the controllers are stopped and the run
    /// ends, as kube-controller-manager's does, so that two leaders never work at once; its
    /// supervisor restarts it as a standby.
    #[error("leader election lost")]
    LeadershipLost,
    /// [`serve_https`]'s certificate or key files cannot be loaded.
    #[error("the metrics serving certificate cannot be loaded")]
    ServingCertificate {
        /// Which file and why.
        #[source]
        source: ServingError,
    },
    /// [`serve_https`]'s self-signed certificate cannot be made.
    #[error("cannot make the self-signed metrics certificate: {0}")]
    SelfSigned(&'static str),
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
    /// `kubeletservingapprover` (off by default: not part of `*`).
    pub kubelet_serving_approver: bool,
}

impl Enabled {
    /// The controllers on by default (`*`): the bootstrap signer and the token cleaner.
    #[must_use]
    pub fn all() -> Enabled {
        Enabled {
            bootstrap_signer: true,
            token_cleaner: true,
            kubelet_serving_approver: false,
        }
    }

    /// Only the named ones (`bootstrapsigner`, `tokencleaner`, `kubeletservingapprover`; `*`
    /// for the ones on by default, which `kubeletservingapprover` is not:
    /// `*,kubeletservingapprover` runs all three).
    ///
    /// # Errors
    ///
    /// The first name that is not a controller of this crate.
    pub fn from_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Enabled, String> {
        let mut enabled = Enabled {
            bootstrap_signer: false,
            token_cleaner: false,
            kubelet_serving_approver: false,
        };
        for name in names {
            match name.trim() {
                "bootstrapsigner" => enabled.bootstrap_signer = true,
                "tokencleaner" => enabled.token_cleaner = true,
                "kubeletservingapprover" => enabled.kubelet_serving_approver = true,
                "*" => {
                    enabled.bootstrap_signer = true;
                    enabled.token_cleaner = true;
                }
                other => return Err(other.chars().take(64).collect()),
            }
        }
        Ok(enabled)
    }
}

/// Leader election on a `coordination.k8s.io/v1` Lease, with client-go's semantics (see
/// [`run`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LeaderElection {
    /// The Lease's namespace (`kube-system` by default).
    pub namespace: String,
    /// The Lease's name (`k8s-bootstrap-controllers` by default).
    pub lease_name: String,
    /// This process's identity in the Lease (a pod name; unique per replica).
    pub identity: String,
    /// How long a standby waits, from when it last saw the Lease change, before it takes the
    /// Lease over (15 s by default, as kube-controller-manager's
    /// `--leader-elect-lease-duration`). Written to the Lease as `leaseDurationSeconds`, in
    /// whole seconds rounded up.
    pub lease_duration: Duration,
    /// How long the leader counts itself the leader after the start of its last successful
    /// renewal: past it, it stops the controllers (10 s by default, as
    /// `--leader-elect-renew-deadline`). Shorter than `lease_duration`: the difference is the
    /// margin between the leader stopping and a standby starting.
    pub renew_deadline: Duration,
    /// How often the leader renews and a standby tries to acquire the Lease, plus up to a
    /// fifth at random (2 s by default, as `--leader-elect-retry-period`).
    pub retry_period: Duration,
    /// The timeout of every Lease request (5 s by default); the leader's renewals are also
    /// cut at the renew deadline.
    pub request_timeout: Duration,
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
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            request_timeout: Duration::from_secs(5),
        }
    }

    /// Checks the settings as client-go does: an identity, a lease duration longer than the
    /// renew deadline, a renew deadline longer than the retry period with its jitter (6/5 of
    /// it), and non-zero periods.
    ///
    /// # Errors
    ///
    /// [`Error::LeaderElection`] naming the first rule broken.
    pub fn validate(&self) -> Result<(), Error> {
        let invalid = |reason| Err(Error::LeaderElection(reason));
        if self.identity.is_empty() {
            return invalid("the identity is empty");
        }
        if self.renew_deadline >= self.lease_duration {
            return invalid("the renew deadline must be shorter than the lease duration");
        }
        if self.retry_period.is_zero() || self.request_timeout.is_zero() {
            return invalid("the retry period and the request timeout must not be zero");
        }
        if self
            .retry_period
            .saturating_add(self.retry_period.checked_div(5).unwrap_or_default())
            >= self.renew_deadline
        {
            return invalid("the renew deadline must be longer than 6/5 of the retry period");
        }
        if self.lease_duration.as_secs() >= u64::from(i32::MAX.unsigned_abs()) {
            return invalid("the lease duration is out of range");
        }
        Ok(())
    }
}

/// Runs the `enabled` controllers until `shutdown` completes, behind leader election when
/// `leader_election` is given.
///
/// Leader election follows client-go's: a standby (ready meanwhile) tries to take the Lease
/// every retry period and does so only when it is free or its holder has not renewed it for
/// the lease duration, as measured on the standby's monotonic clock; every write is a PUT
/// conditional on the `resourceVersion` it was computed from, and every request has a
/// timeout. The leader runs the controllers and renews every retry period; when another
/// replica holds the Lease, or no renewal succeeded within the renew deadline of the start of
/// the last successful one (the API server unreachable, say), the controllers are cancelled
/// at once, the `k8s_bootstrap_leader` metric drops to 0 and the run ends with
/// [`Error::LeadershipLost`]. On shutdown the leader stops the controllers (waiting at most
/// [`Options::shutdown_grace`] for requests in flight, then cancelling them), then releases
/// the Lease (again conditionally), so a standby takes over within a retry period instead of
/// after the lease duration.
///
/// # Errors
///
/// [`Error::LeaderElection`] for inconsistent settings ([`LeaderElection::validate`]),
/// [`Error::NoServingPolicy`] when the kubelet-serving approver is enabled without
/// [`Options::serving_policy`], [`Error::LeadershipLost`], and the controllers' errors.
pub async fn run(
    client: kube::Client,
    enabled: Enabled,
    leader_election: Option<LeaderElection>,
    options: Options,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), Error> {
    use std::sync::atomic::Ordering;
    if let Some(election) = &leader_election {
        election.validate()?;
    }
    let serving_policy = if enabled.kubelet_serving_approver {
        Some(
            options
                .serving_policy
                .clone()
                .ok_or(Error::NoServingPolicy)?,
        )
    } else {
        None
    };
    metrics
        .expect_signer
        .store(enabled.bootstrap_signer, Ordering::Release);
    metrics
        .expect_cleaner
        .store(enabled.token_cleaner, Ordering::Release);
    metrics
        .expect_approver
        .store(enabled.kubelet_serving_approver, Ordering::Release);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopped = move || {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|stop| *stop).await;
        }
    };
    let grace = options.shutdown_grace;
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
            let approver = async {
                match serving_policy {
                    Some(policy) => {
                        kubelet_serving_approver(
                            client.clone(),
                            policy,
                            metrics.clone(),
                            options.clone(),
                            stopped(),
                        )
                        .await
                    }
                    None => Ok(()),
                }
            };
            let (a, b, c) = tokio::join!(signer, cleaner, approver);
            a.and(b).and(c)
        }
    };
    let Some(election) = leader_election else {
        tracing::info!("controllers: running without leader election");
        metrics.leader.set(1);
        // Without election, leadership is never lost.
        let (result, _) = lead(
            controllers,
            std::future::pending(),
            shutdown,
            &stop_tx,
            grace,
        )
        .await;
        return result;
    };
    let lease = format!("{}/{}", election.namespace, election.lease_name);
    let identity = election.identity.clone();
    tracing::info!(
        %lease,
        identity,
        "leader election: standing by until this replica holds the lease"
    );
    let mut elector = election::Elector::new(client, election);
    metrics.standby.store(true, Ordering::Release);
    tokio::pin!(shutdown);
    // Standby until the lease is ours.
    let acquired_at = tokio::select! {
        at = elector.acquire() => at,
        () = &mut shutdown => return Ok(()),
    };
    tracing::info!(
        %lease,
        identity,
        "leader election: became the leader, starting the controllers"
    );
    metrics.standby.store(false, Ordering::Release);
    metrics.leader.set(1);
    // Returning drops (cancels) the controllers and the renewal loop.
    let (result, lost) = lead(
        controllers,
        elector.keep(acquired_at),
        shutdown,
        &stop_tx,
        grace,
    )
    .await;
    metrics.leader.set(0);
    if lost {
        tracing::error!(
            %lease,
            identity,
            "leader election: lost the leadership, the controllers are stopped"
        );
    } else if elector.release().await {
        tracing::info!(%lease, identity, "leader election: released the lease");
    } else {
        tracing::warn!(
            %lease,
            identity,
            "leader election: the lease could not be released; a standby takes over once it \
             runs out"
        );
    }
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
    /// How long, after shutdown, the controllers may take to finish the requests they have in
    /// flight before they are cancelled (a cancelled request is safe: every write is
    /// conditional, and the next leader starts over from a fresh list).
    pub shutdown_grace: Duration,
    /// The kubelet-serving approver's policy (required when it is enabled; none by default).
    pub serving_policy: Option<tls_bootstrap::ServingPolicy>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            retry_delay: Duration::from_millis(100),
            max_retry_delay: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(5),
            serving_policy: None,
        }
    }
}

/// Runs the controllers while `renewing` (leadership) lasts: until they end, leadership is lost,
/// or `shutdown`, after which `stop` tells them to stop and they get `grace` to do so (still
/// renewing). Returns their result and whether leadership was lost.
async fn lead(
    controllers: impl Future<Output = Result<(), Error>>,
    renewing: impl Future<Output = ()>,
    shutdown: impl Future<Output = ()>,
    stop: &tokio::sync::watch::Sender<bool>,
    grace: Duration,
) -> (Result<(), Error>, bool) {
    tokio::pin!(controllers, renewing);
    tokio::select! {
        result = &mut controllers => (result, false),
        () = &mut renewing => (Err(Error::LeadershipLost), true),
        () = shutdown => {
            tracing::info!(?grace, "controllers: stopping");
            let _ = stop.send(true);
            tokio::select! {
                result = within_grace(&mut controllers, grace) => (result, false),
                () = &mut renewing => (Err(Error::LeadershipLost), true),
            }
        }
    }
}

/// The controllers' result once they have stopped, or `Ok` when they are still stopping after
/// `grace` (and are then cancelled by the caller dropping them).
async fn within_grace(
    controllers: impl Future<Output = Result<(), Error>>,
    grace: Duration,
) -> Result<(), Error> {
    match tokio::time::timeout(grace, controllers).await {
        Ok(result) => result,
        Err(_) => {
            tracing::warn!(
                ?grace,
                "controllers: still stopping after the grace, cancelled"
            );
            Ok(())
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
