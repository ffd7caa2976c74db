//! The forward proxy's metrics, served on `/metrics`.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::addon_jwt::Rejection;
use crate::sidecar::DecisionObserver;

/// The proxy's metrics.
pub(crate) struct ProxyMetrics {
    pub(super) registry: Registry,
    pub(super) forwarded: Counter,
    pub(super) rejected: Counter,
    pub(crate) upstream_errors: Counter,
    pub(super) key_reloads: Counter,
    pub(super) key_reload_errors: Counter,
    pub(super) key_file_failing: Gauge,
}

impl ProxyMetrics {
    pub(super) fn new() -> ProxyMetrics {
        let mut registry = Registry::with_prefix("k8s_bootstrap_forward_proxy");
        let mut counter = |name: &str, help: &str| {
            let c = Counter::default();
            registry.register(name, help, c.clone());
            c
        };
        let forwarded = counter(
            "forwarded_requests",
            "Requests forwarded for a verified user",
        );
        let rejected = counter("rejected_requests", "Requests answered 403");
        let upstream_errors = counter(
            "upstream_errors",
            "Requests answered 502 or 504 because the add-on failed or timed out",
        );
        let key_reloads = counter("key_reloads", "Key files loaded after a change");
        let key_reload_errors = counter(
            "key_reload_errors",
            "Changed key files that could not be loaded (see --key-reload-failure)",
        );
        let key_file_failing = Gauge::default();
        registry.register(
            "key_file_failing",
            "1 while the key file, changed, cannot be loaded",
            key_file_failing.clone(),
        );
        ProxyMetrics {
            registry,
            forwarded,
            rejected,
            upstream_errors,
            key_reloads,
            key_reload_errors,
            key_file_failing,
        }
    }

    pub(super) fn encode(&self) -> String {
        let mut out = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

impl DecisionObserver for ProxyMetrics {
    fn forwarded(&self) {
        self.forwarded.inc();
    }
    fn rejected(&self, _: &Rejection) {
        self.rejected.inc();
    }
}
