//! The forward proxy's metrics, served on `/metrics`.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric as _};
use prometheus_client::metrics::counter::ConstCounter;

use crate::addon_jwt::Rejection;
use crate::delegated::Metrics;
use crate::sidecar::DecisionObserver;
use crate::tls_serving::TlsMetrics;

/// The proxy's metrics.
pub(crate) struct ProxyMetrics {
    pub(super) registry: Registry,
    pub(super) forwarded: Counter,
    pub(super) rejected: Counter,
    pub(crate) upstream_errors: Counter,
    pub(super) key_reloads: Counter,
    pub(super) key_reload_errors: Counter,
    pub(super) key_file_failing: Gauge,
    /// TLS serving's (kept under the proxy's prefix).
    pub(super) tls: TlsMetrics,
}

impl ProxyMetrics {
    pub(crate) fn new() -> ProxyMetrics {
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
        let tls = TlsMetrics::register(&mut registry);
        ProxyMetrics {
            registry,
            tls,
            forwarded,
            rejected,
            upstream_errors,
            key_reloads,
            key_reload_errors,
            key_file_failing,
        }
    }

    /// Adds the delegated layer's counters (`..._delegated_token_reviews_total`, ...), read
    /// from `metrics` when `/metrics` is scraped.
    pub(super) fn register_delegated(&mut self, metrics: Arc<Metrics>) {
        self.registry
            .register_collector(Box::new(DelegatedCollector(metrics)));
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

/// The delegated layer's counters, as Prometheus counters.
#[derive(Debug)]
struct DelegatedCollector(Arc<Metrics>);

impl Collector for DelegatedCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let s = self.0.snapshot();
        for (name, help, value) in [
            (
                "delegated_token_reviews",
                "TokenReviews sent to the API server",
                s.token_reviews,
            ),
            (
                "delegated_access_reviews",
                "SubjectAccessReviews sent to the API server",
                s.access_reviews,
            ),
            (
                "delegated_token_cache_hits",
                "Tokens decided from the token cache",
                s.token_cache_hits,
            ),
            (
                "delegated_access_cache_hits",
                "Authorizations decided from the access cache",
                s.access_cache_hits,
            ),
            (
                "delegated_coalesced_reviews",
                "Reviews a request waited for instead of sending its own",
                s.coalesced,
            ),
            (
                "delegated_allowed_requests",
                "Requests authenticated and authorized",
                s.allowed,
            ),
            (
                "delegated_unauthenticated_requests",
                "Requests answered 401",
                s.unauthenticated,
            ),
            (
                "delegated_denied_requests",
                "Requests answered 403",
                s.denied,
            ),
            (
                "delegated_errored_requests",
                "Requests answered 500 because a review failed",
                s.errored,
            ),
            (
                "delegated_throttled_requests",
                "Requests answered 429 because their review would exceed --review-rate-limit",
                s.throttled,
            ),
        ] {
            let counter = ConstCounter::new(value);
            let metric = encoder.encode_descriptor(name, help, None, counter.metric_type())?;
            counter.encode(metric)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::ProxyMetrics;
    use crate::delegated::Metrics;
    use crate::delegated::metrics::Counter;

    /// Every counter of the delegated layer is published, each with its own value.
    #[test]
    fn every_delegated_counter_is_published() {
        let layer = Arc::new(Metrics::default());
        let counters = [
            (Counter::TokenReview, "delegated_token_reviews"),
            (Counter::AccessReview, "delegated_access_reviews"),
            (Counter::TokenCacheHit, "delegated_token_cache_hits"),
            (Counter::AccessCacheHit, "delegated_access_cache_hits"),
            (Counter::Coalesced, "delegated_coalesced_reviews"),
            (Counter::Allowed, "delegated_allowed_requests"),
            (
                Counter::Unauthenticated,
                "delegated_unauthenticated_requests",
            ),
            (Counter::Denied, "delegated_denied_requests"),
            (Counter::Errored, "delegated_errored_requests"),
            (Counter::Throttled, "delegated_throttled_requests"),
        ];
        for (n, (counter, _)) in counters.iter().enumerate() {
            for _ in 0..=n {
                layer.inc(*counter);
            }
        }
        let mut metrics = ProxyMetrics::new();
        metrics.register_delegated(layer);
        let text = metrics.encode();
        for (n, (_, name)) in counters.iter().enumerate() {
            let line = format!("k8s_bootstrap_forward_proxy_{name}_total {}\n", n + 1);
            assert!(text.contains(&line), "{line} in {text}");
        }
    }
}
