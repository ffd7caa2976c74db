//! The controllers' Prometheus metrics (prometheus-client).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::tls_serving::TlsMetrics;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

/// The `controller` label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ControllerLabel {
    controller: &'static str,
}

pub(crate) const SIGNER: ControllerLabel = ControllerLabel {
    controller: "bootstrapsigner",
};
pub(crate) const CLEANER: ControllerLabel = ControllerLabel {
    controller: "tokencleaner",
};
pub(crate) const APPROVER: ControllerLabel = ControllerLabel {
    controller: "kubeletservingapprover",
};

/// The controllers' metrics, registered in one Prometheus registry; share it (`Arc`) between
/// the controllers and the HTTP endpoint that serves [`Metrics::encode`].
///
/// | metric | type | meaning |
/// | --- | --- | --- |
/// | `k8s_bootstrap_reconciles_total{controller}` | counter | reconciles run |
/// | `k8s_bootstrap_reconcile_errors_total{controller}` | counter | reconciles that failed (API errors, conflicts) |
/// | `k8s_bootstrap_queue_latency_seconds{controller="bootstrapsigner"}` | histogram | from the event that triggered a reconcile to its start (the signer only: the cleaner's queue is kube-runtime's scheduler, which does not expose it) |
/// | `k8s_bootstrap_signed_tokens` | gauge | tokens whose signature cluster-info holds after the last reconcile |
/// | `k8s_bootstrap_cluster_info_writes_total` | counter | cluster-info updates written |
/// | `k8s_bootstrap_deleted_tokens_total` | counter | expired token Secrets deleted |
/// | `k8s_bootstrap_kubelet_serving_approved_total` | counter | kubelet-serving requests approved |
/// | `k8s_bootstrap_kubelet_serving_denied_total` | counter | kubelet-serving requests denied |
/// | `k8s_bootstrap_leader` | gauge | 1 while this process leads (or runs without leader election) |
/// | `k8s_bootstrap_metrics_tls_handshake_errors_total` | counter | [`serve_https`](super::serve_https): client connections closed because their TLS handshake failed or timed out |
/// | `k8s_bootstrap_metrics_serving_certificate_reloads_total` | counter | [`serve_https`](super::serve_https): certificate and key files loaded after a change |
/// | `k8s_bootstrap_metrics_serving_certificate_reload_errors_total` | counter | [`serve_https`](super::serve_https): changed files that could not be loaded (the pair before stays) |
/// | `k8s_bootstrap_metrics_serving_certificate_files_failing` | gauge | [`serve_https`](super::serve_https): 1 while the changed files cannot be loaded |
/// | `k8s_bootstrap_metrics_serving_certificate_expiry_timestamp_seconds` | gauge | [`serve_https`](super::serve_https): when the certificate in use expires (0 in plain HTTP) |
///
/// It also holds the readiness the `/readyz` endpoint reports ([`Metrics::is_ready`]).
pub struct Metrics {
    registry: Registry,
    /// Whether the signer's watch caches have completed their first list.
    pub(crate) signer_synced: AtomicBool,
    /// Whether the cleaner's watch cache has completed its first list.
    pub(crate) cleaner_synced: AtomicBool,
    /// Which controllers run in this process (set by [`super::run`]; both by default).
    pub(crate) expect_signer: AtomicBool,
    pub(crate) expect_cleaner: AtomicBool,
    /// Whether the kubelet-serving approver's watch cache has completed its first list.
    pub(crate) approver_synced: AtomicBool,
    /// Whether the kubelet-serving approver runs in this process (off by default).
    pub(crate) expect_approver: AtomicBool,
    /// 1 while this process holds the leader lease (or runs without leader election).
    pub(crate) leader: Gauge,
    /// Whether this process waits for the lease as a standby.
    pub(crate) standby: AtomicBool,
    pub(crate) reconciles: Family<ControllerLabel, Counter>,
    pub(crate) errors: Family<ControllerLabel, Counter>,
    pub(crate) queue_latency: Family<ControllerLabel, Histogram>,
    pub(crate) signed_tokens: Gauge,
    pub(crate) cluster_info_writes: Counter,
    pub(crate) deleted_tokens: Counter,
    pub(crate) serving_approved: Counter,
    pub(crate) serving_denied: Counter,
    /// [`serve_https`](super::serve_https)'s TLS counters (`k8s_bootstrap_metrics_...`).
    pub(crate) tls: TlsMetrics,
}

fn latency_histogram() -> Histogram {
    // 100 µs .. ~26 s.
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        0.0001, 4.0, 10,
    ))
}

impl Metrics {
    /// New metrics, all zero.
    #[must_use]
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("k8s_bootstrap");
        let reconciles = Family::<ControllerLabel, Counter>::default();
        let errors = Family::<ControllerLabel, Counter>::default();
        let queue_latency = Family::<ControllerLabel, Histogram>::new_with_constructor(
            latency_histogram as fn() -> Histogram,
        );
        let signed_tokens = Gauge::default();
        let cluster_info_writes = Counter::default();
        let deleted_tokens = Counter::default();
        let serving_approved = Counter::default();
        let serving_denied = Counter::default();
        let leader = Gauge::default();
        // Every series exists from the start (at zero), so dashboards and alerts see them.
        for label in [SIGNER, CLEANER, APPROVER] {
            drop(reconciles.get_or_create(&label));
            drop(errors.get_or_create(&label));
        }
        // The cleaner's queue is kube-runtime's Controller scheduler, which does not expose
        // when work was queued: only the signer reports queue latency.
        drop(queue_latency.get_or_create(&SIGNER));
        registry.register("reconciles", "Reconciles run", reconciles.clone());
        registry.register(
            "leader",
            "Whether this process leads: 1 while it does (or runs without leader election), else 0",
            leader.clone(),
        );
        registry.register("reconcile_errors", "Reconciles that failed", errors.clone());
        registry.register(
            "queue_latency_seconds",
            "Time from the triggering event to the start of the reconcile",
            queue_latency.clone(),
        );
        registry.register(
            "signed_tokens",
            "Tokens whose signature cluster-info holds after the last reconcile",
            signed_tokens.clone(),
        );
        registry.register(
            "cluster_info_writes",
            "cluster-info updates written",
            cluster_info_writes.clone(),
        );
        registry.register(
            "deleted_tokens",
            "Expired bootstrap-token Secrets deleted",
            deleted_tokens.clone(),
        );
        registry.register(
            "kubelet_serving_approved",
            "kubelet-serving requests approved",
            serving_approved.clone(),
        );
        registry.register(
            "kubelet_serving_denied",
            "kubelet-serving requests denied",
            serving_denied.clone(),
        );
        let tls = TlsMetrics::register(registry.sub_registry_with_prefix("metrics"));
        Metrics {
            registry,
            tls,
            signer_synced: AtomicBool::new(false),
            cleaner_synced: AtomicBool::new(false),
            expect_signer: AtomicBool::new(true),
            expect_cleaner: AtomicBool::new(true),
            approver_synced: AtomicBool::new(false),
            expect_approver: AtomicBool::new(false),
            leader,
            standby: AtomicBool::new(false),
            reconciles,
            errors,
            queue_latency,
            signed_tokens,
            cluster_info_writes,
            deleted_tokens,
            serving_approved,
            serving_denied,
        }
    }

    /// The metrics in the Prometheus / OpenMetrics text format, as `/metrics` serves them.
    #[must_use]
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    /// Ready: a standby waiting for the lease, or every controller this process runs has its
    /// watch caches filled by their first list.
    #[must_use]
    pub fn is_ready(&self) -> bool {
        if self.standby.load(Ordering::Acquire) {
            return true;
        }
        (!self.expect_signer.load(Ordering::Acquire) || self.signer_synced.load(Ordering::Acquire))
            && (!self.expect_cleaner.load(Ordering::Acquire)
                || self.cleaner_synced.load(Ordering::Acquire))
            && (!self.expect_approver.load(Ordering::Acquire)
                || self.approver_synced.load(Ordering::Acquire))
    }

    /// Whether this process holds the leader lease (always, without leader election).
    #[must_use]
    pub fn is_leader(&self) -> bool {
        self.leader.get() == 1
    }

    /// Reconciles run so far by `controller` (`"bootstrapsigner"`, `"tokencleaner"` or
    /// `"kubeletservingapprover"`).
    #[must_use]
    pub fn reconciles(&self, controller: &str) -> u64 {
        self.family_value(&self.reconciles, controller)
    }

    /// Failed reconciles so far by `controller`.
    #[must_use]
    pub fn errors(&self, controller: &str) -> u64 {
        self.family_value(&self.errors, controller)
    }

    /// cluster-info updates written so far.
    #[must_use]
    pub fn cluster_info_writes(&self) -> u64 {
        self.cluster_info_writes.get()
    }

    /// Token Secrets deleted so far.
    #[must_use]
    pub fn deleted_tokens(&self) -> u64 {
        self.deleted_tokens.get()
    }

    /// kubelet-serving requests approved so far.
    #[must_use]
    pub fn kubelet_serving_approved(&self) -> u64 {
        self.serving_approved.get()
    }

    /// kubelet-serving requests denied so far.
    #[must_use]
    pub fn kubelet_serving_denied(&self) -> u64 {
        self.serving_denied.get()
    }

    fn family_value(&self, family: &Family<ControllerLabel, Counter>, controller: &str) -> u64 {
        [SIGNER, CLEANER, APPROVER]
            .into_iter()
            .find(|l| l.controller == controller)
            .map_or(0, |l| family.get_or_create(&l).get())
    }
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics")
            .field("cluster_info_writes", &self.cluster_info_writes.get())
            .field("deleted_tokens", &self.deleted_tokens.get())
            .finish_non_exhaustive()
    }
}
