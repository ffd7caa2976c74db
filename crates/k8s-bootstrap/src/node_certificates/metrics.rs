//! The certificate managers' metrics: [`CertificateMetrics`].

use std::fmt::Write as _;
use std::time::SystemTime;

use tokio::sync::watch;

use super::manager::Snapshot;

/// The client certificate's gauge.
pub const CLIENT_TTL_METRIC: &str = "k8s_bootstrap_certificate_manager_client_ttl_seconds";
/// The serving certificate's gauge.
pub const SERVER_TTL_METRIC: &str = "k8s_bootstrap_certificate_manager_server_ttl_seconds";
/// The client certificate's counter of certificates installed (the sample is `<name>_total`).
pub const CLIENT_ROTATIONS_METRIC: &str = "k8s_bootstrap_certificate_manager_client_rotations";
/// The serving certificate's counter of certificates installed (the sample is `<name>_total`).
pub const SERVER_ROTATIONS_METRIC: &str = "k8s_bootstrap_certificate_manager_server_rotations";
/// The client certificate's counter of failed attempts (the sample is `<name>_total`).
pub const CLIENT_RENEW_ERRORS_METRIC: &str =
    "k8s_bootstrap_certificate_manager_client_expiration_renew_errors";
/// The serving certificate's counter of failed attempts (the sample is `<name>_total`).
pub const SERVER_RENEW_ERRORS_METRIC: &str =
    "k8s_bootstrap_certificate_manager_server_expiration_renew_errors";

/// The metrics of a node's certificate managers, read from what each
/// [`Manager`](super::Manager) publishes, in the OpenMetrics text format (without the closing
/// `# EOF`, so that they can be served beside others): the kubelet's TTL gauges and renewal
/// error counters, and a count of rotations.
///
/// What the kubelet does (`cmd/kubelet/app/server.go` and `pkg/kubelet/certificate`): it
/// registers a gauge function per certificate manager (the client one with
/// `--rotate-certificates`, the serving one with `serverTLSBootstrap`), evaluated at each
/// scrape: the seconds from now to the `notAfter` of the manager's current certificate,
/// truncated toward zero (negative once it has expired), `+Inf` while the manager has none
/// (`kubelet_certificate_manager_{client,server}_ttl_seconds`). It counts each failed rotation
/// attempt (client-go's `CertificateRenewFailure`):
/// `kubelet_certificate_manager_client_expiration_renew_errors` and
/// `kubelet_server_expiration_renew_errors`. It has no count of rotations; for the serving
/// certificate, the `_count` of its histogram `kubelet_certificate_manager_server_rotation_seconds`
/// (the age of each replaced certificate) is one.
///
/// What we do: the same gauges ([`Snapshot::ttl_seconds`]) and error counters
/// ([`Snapshot::renew_errors`]), under the `k8s_bootstrap_` prefix and with one name scheme
/// for both certificates (`certificate_manager_{client,server}_...`), the counters' samples
/// suffixed `_total` as OpenMetrics requires; and a counter of certificates installed,
/// `certificate_manager_{client,server}_rotations` ([`Snapshot::rotations`]); no histogram.
/// The clock is read at [`CertificateMetrics::encode`]. [`CertificateMetrics::not_ready_at`]
/// answers `/readyz`.
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

    /// Publishes [`CLIENT_TTL_METRIC`], [`CLIENT_ROTATIONS_METRIC`] and
    /// [`CLIENT_RENEW_ERRORS_METRIC`] for the client certificate's manager.
    #[must_use]
    pub fn with_client(mut self, snapshots: watch::Receiver<Snapshot>) -> CertificateMetrics {
        self.client = Some(snapshots);
        self
    }

    /// Publishes [`SERVER_TTL_METRIC`], [`SERVER_ROTATIONS_METRIC`] and
    /// [`SERVER_RENEW_ERRORS_METRIC`] for the serving certificate's manager.
    #[must_use]
    pub fn with_server(mut self, snapshots: watch::Receiver<Snapshot>) -> CertificateMetrics {
        self.server = Some(snapshots);
        self
    }

    /// The metrics at the system clock's now (see [`CertificateMetrics::encode_at`]).
    #[must_use]
    pub fn encode(&self) -> String {
        self.encode_at(crate::clock::now())
    }

    /// The metrics at `now`, in the OpenMetrics text format without the closing `# EOF`: for
    /// each manager given, `# HELP`, `# TYPE` and the sample of its TTL gauge (`+Inf` without a
    /// certificate), then of its two counters.
    #[must_use]
    pub fn encode_at(&self, now: SystemTime) -> String {
        let mut out = String::new();
        for (names, role, snapshots) in [
            (
                [
                    CLIENT_TTL_METRIC,
                    CLIENT_ROTATIONS_METRIC,
                    CLIENT_RENEW_ERRORS_METRIC,
                ],
                "client",
                &self.client,
            ),
            (
                [
                    SERVER_TTL_METRIC,
                    SERVER_ROTATIONS_METRIC,
                    SERVER_RENEW_ERRORS_METRIC,
                ],
                "serving",
                &self.server,
            ),
        ] {
            let Some(snapshots) = snapshots else {
                continue;
            };
            let [ttl, rotations, errors] = names;
            let snapshot = snapshots.borrow();
            let value = match snapshot.ttl_whole_seconds(now) {
                Some(seconds) => seconds.to_string(),
                None => "+Inf".to_owned(),
            };
            let _ = write!(
                out,
                "# HELP {ttl} Seconds until the {role} certificate in use expires (negative once \
                 expired), +Inf while there is none.\n# TYPE {ttl} gauge\n{ttl} {value}\n"
            );
            let _ = write!(
                out,
                "# HELP {rotations} Certificates installed by the {role} certificate's manager.\n\
                 # TYPE {rotations} counter\n{rotations}_total {}\n",
                snapshot.rotations()
            );
            let _ = write!(
                out,
                "# HELP {errors} Failed attempts to get a new {role} certificate.\n\
                 # TYPE {errors} counter\n{errors}_total {}\n",
                snapshot.renew_errors()
            );
        }
        out
    }

    /// Why a node using these certificates is not ready at `now` (`/readyz`'s answer), `None`
    /// when it is: every manager given has a certificate in use, and none has expired.
    #[must_use]
    pub fn not_ready_at(&self, now: SystemTime) -> Option<String> {
        let reasons: Vec<String> = [("client", &self.client), ("serving", &self.server)]
            .into_iter()
            .filter_map(|(role, snapshots)| {
                let snapshots = snapshots.as_ref()?;
                match snapshots.borrow().expiration() {
                    None => Some(format!("no {role} certificate yet")),
                    Some(not_after) if now >= not_after => Some(format!(
                        "the {role} certificate expired at {}",
                        tls_bootstrap::rfc3339(not_after)
                    )),
                    Some(_) => None,
                }
            })
            .collect();
        (!reasons.is_empty()).then(|| reasons.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::Arc;
    use std::time::SystemTime;

    use tokio::sync::watch;

    use super::*;

    fn sample<'a>(text: &'a str, name: &str) -> Option<&'a str> {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
    }

    #[test]
    fn the_counters_count_rotations_and_failed_attempts_per_certificate() {
        let (client, client_rx) = watch::channel(Snapshot::default());
        let (_server, server_rx) = watch::channel(Snapshot::default());
        let metrics = CertificateMetrics::new()
            .with_client(client_rx)
            .with_server(server_rx);
        let now = SystemTime::UNIX_EPOCH;
        let text = metrics.encode_at(now);
        for name in [
            CLIENT_ROTATIONS_METRIC,
            CLIENT_RENEW_ERRORS_METRIC,
            SERVER_ROTATIONS_METRIC,
            SERVER_RENEW_ERRORS_METRIC,
        ] {
            assert!(
                text.contains(&format!("\n# TYPE {name} counter\n")),
                "{text}"
            );
            assert_eq!(sample(&text, &format!("{name}_total")), Some("0"), "{text}");
        }

        client.send_modify(|s| s.record_failure(1, Arc::from("denied")));
        client.send_modify(|s| s.record_failure(2, Arc::from("denied")));
        client.send_modify(|s| s.record_rotation(PathBuf::from("/pki/a.pem")));
        client.send_modify(|s| s.record_failure(1, Arc::from("timed out")));
        client.send_modify(|s| s.record_rotation(PathBuf::from("/pki/b.pem")));
        let snapshot = client.borrow().clone();
        assert_eq!((snapshot.rotations(), snapshot.renew_errors()), (2, 3));
        assert_eq!(snapshot.failed_attempts(), 1);

        let text = metrics.encode_at(now);
        let total = |name: &str| sample(&text, &format!("{name}_total"));
        assert_eq!(total(CLIENT_ROTATIONS_METRIC), Some("2"), "{text}");
        assert_eq!(total(CLIENT_RENEW_ERRORS_METRIC), Some("3"), "{text}");
        // The serving certificate's counters are its own.
        assert_eq!(total(SERVER_ROTATIONS_METRIC), Some("0"), "{text}");
        assert_eq!(total(SERVER_RENEW_ERRORS_METRIC), Some("0"), "{text}");
        // The families' names carry no `_total` (OpenMetrics), their samples do.
        assert_eq!(sample(&text, CLIENT_ROTATIONS_METRIC), None, "{text}");
    }

    #[test]
    fn a_manager_not_given_has_no_metrics_and_one_without_a_certificate_is_not_ready() {
        let metrics = CertificateMetrics::new();
        assert_eq!(metrics.encode_at(SystemTime::UNIX_EPOCH), "");
        assert_eq!(metrics.not_ready_at(SystemTime::UNIX_EPOCH), None);

        let (_client, rx) = watch::channel(Snapshot::default());
        let metrics = metrics.with_client(rx);
        let text = metrics.encode_at(SystemTime::UNIX_EPOCH);
        assert!(!text.contains("server"), "{text}");
        assert_eq!(
            metrics.not_ready_at(SystemTime::UNIX_EPOCH).as_deref(),
            Some("no client certificate yet")
        );
        let (_server, rx) = watch::channel(Snapshot::default());
        assert_eq!(
            metrics
                .with_server(rx)
                .not_ready_at(SystemTime::UNIX_EPOCH)
                .as_deref(),
            Some("no client certificate yet; no serving certificate yet")
        );
    }
}
