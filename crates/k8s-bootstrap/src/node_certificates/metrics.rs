//! The certificate managers' gauges, in the Prometheus text format: the kubelet's
//! `certificate_manager_client_ttl_seconds` and `certificate_manager_server_ttl_seconds`.
//!
//! What the kubelet does (`cmd/kubelet/app/server.go` and `pkg/kubelet/certificate`): it
//! registers a gauge function per certificate manager (the client one with
//! `--rotate-certificates`, the serving one with `serverTLSBootstrap`), evaluated at each
//! scrape: the seconds from now to the `notAfter` of the manager's current certificate,
//! truncated toward zero (negative once it has expired), `+Inf` while the manager has none.
//!
//! What we do: the same values ([`Snapshot::ttl_seconds`]), under the `k8s_bootstrap_` prefix,
//! for the managers given; the clock is read at [`CertificateMetrics::encode`].

use std::fmt::Write as _;
use std::time::SystemTime;

use tokio::sync::watch;

use super::manager::Snapshot;

/// The client certificate's gauge.
pub const CLIENT_TTL_METRIC: &str = "k8s_bootstrap_certificate_manager_client_ttl_seconds";
/// The serving certificate's gauge.
pub const SERVER_TTL_METRIC: &str = "k8s_bootstrap_certificate_manager_server_ttl_seconds";

/// The TTL gauges of a node's certificate managers (see the [module](self) docs), read from
/// what each [`Manager`](super::Manager) publishes.
///
/// ```no_run
/// # fn demo(client: k8s_bootstrap::node_certificates::Manager) {
/// use k8s_bootstrap::node_certificates::CertificateMetrics;
/// let metrics = CertificateMetrics::new().with_client(client.subscribe());
/// // On each scrape of /metrics:
/// let text = metrics.encode();
/// # let _ = text; }
/// ```
#[derive(Debug, Clone, Default)]
pub struct CertificateMetrics {
    client: Option<watch::Receiver<Snapshot>>,
    server: Option<watch::Receiver<Snapshot>>,
}

impl CertificateMetrics {
    /// No gauges yet.
    #[must_use]
    pub fn new() -> CertificateMetrics {
        CertificateMetrics::default()
    }

    /// Publishes [`CLIENT_TTL_METRIC`] for the client certificate's manager.
    #[must_use]
    pub fn with_client(mut self, snapshots: watch::Receiver<Snapshot>) -> CertificateMetrics {
        self.client = Some(snapshots);
        self
    }

    /// Publishes [`SERVER_TTL_METRIC`] for the serving certificate's manager.
    #[must_use]
    pub fn with_server(mut self, snapshots: watch::Receiver<Snapshot>) -> CertificateMetrics {
        self.server = Some(snapshots);
        self
    }

    /// The gauges at the system clock's now, in the Prometheus text format.
    #[must_use]
    pub fn encode(&self) -> String {
        self.encode_at(crate::clock::now())
    }

    /// The gauges at `now`, in the Prometheus text format (`# HELP`, `# TYPE` and the sample
    /// line of each, `+Inf` without a certificate).
    #[must_use]
    pub fn encode_at(&self, now: SystemTime) -> String {
        let mut out = String::new();
        for (name, role, snapshots) in [
            (CLIENT_TTL_METRIC, "client", &self.client),
            (SERVER_TTL_METRIC, "serving", &self.server),
        ] {
            let Some(snapshots) = snapshots else {
                continue;
            };
            let value = match snapshots.borrow().ttl_whole_seconds(now) {
                Some(seconds) => seconds.to_string(),
                None => "+Inf".to_owned(),
            };
            let _ = write!(
                out,
                "# HELP {name} Seconds until the {role} certificate in use expires (negative once \
                 expired), +Inf while there is none.\n# TYPE {name} gauge\n{name} {value}\n"
            );
        }
        out
    }
}
