//! The pod's labels and the Services that select them, whose names are accepted as audiences.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::keys::{Inputs, read_bounded};

/// Accepting `<namespace>/<service>` for every Service of a namespace whose selector matches
/// the pod's labels, listed once before serving and again every `refresh_interval`.
#[derive(Clone)]
pub struct ServiceAudiences {
    api: kube::Api<k8s_openapi::api::core::v1::Service>,
    namespace: String,
    labels: BTreeMap<String, String>,
    refresh_interval: Duration,
}

impl ServiceAudiences {
    /// The Services of `namespace` (through `client`; needs `list` on Services) whose
    /// non-empty selector matches `labels`, refreshed every 30 s.
    #[must_use]
    pub fn new(
        client: kube::Client,
        namespace: &str,
        labels: BTreeMap<String, String>,
    ) -> ServiceAudiences {
        ServiceAudiences {
            api: kube::Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            labels,
            refresh_interval: Duration::from_secs(30),
        }
    }

    /// How often the Services are listed again (default 30 s; a zero interval is taken as 1 ms).
    #[must_use]
    pub fn refresh_interval(mut self, interval: Duration) -> ServiceAudiences {
        self.refresh_interval = interval;
        self
    }
}

impl ServiceAudiences {
    /// The namespace whose Services are listed.
    pub(super) fn namespace(&self) -> &str {
        &self.namespace
    }

    /// `<namespace>/<name>` of each Service that selects the pod now.
    pub(super) async fn matching(&self) -> Result<Vec<String>, kube::Error> {
        matching_services(&self.api, &self.namespace, &self.labels).await
    }
}

impl Inputs {
    /// Lists the Services of `services` every refresh interval and takes those that select
    /// the pod; a failed listing keeps the audiences found before.
    pub(super) async fn refresh(self: Arc<Self>, services: ServiceAudiences) {
        // tokio's interval panics on a zero period.
        let mut ticker =
            tokio::time::interval(services.refresh_interval.max(Duration::from_millis(1)));
        ticker.tick().await;
        loop {
            ticker.tick().await;
            match services.matching().await {
                Ok(found) => self.set_discovered(found),
                Err(e) => {
                    tracing::warn!(error = %e, "forward-proxy: listing Services failed");
                }
            }
        }
    }
}

impl std::fmt::Debug for ServiceAudiences {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAudiences")
            .field("namespace", &self.namespace)
            .field("labels", &self.labels)
            .field("refresh_interval", &self.refresh_interval)
            .finish_non_exhaustive()
    }
}

/// Reads the pod's labels as the downward API writes them (`key="value"` lines), for
/// [`ServiceAudiences::new`]; lines of another form are skipped.
///
/// # Errors
///
/// The file's I/O error, or [`std::io::ErrorKind::Other`] when it is larger than four times
/// [`addon_jwt::MAX_JWKS_BYTES`].
pub fn read_pod_labels(path: &Path) -> std::io::Result<BTreeMap<String, String>> {
    read_bounded(path).map(|text| parse_labels(&text))
}

/// Parses the downward API's labels file: `key="value"` lines.
fn parse_labels(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| {
            let (k, v) = line.split_once('=')?;
            let v = v.trim().strip_prefix('"')?.strip_suffix('"')?;
            Some((
                k.trim().to_owned(),
                v.replace("\\\"", "\"").replace("\\\\", "\\"),
            ))
        })
        .collect()
}

/// `<namespace>/<name>` of each Service whose non-empty selector matches `labels`.
async fn matching_services(
    api: &kube::Api<k8s_openapi::api::core::v1::Service>,
    namespace: &str,
    labels: &BTreeMap<String, String>,
) -> Result<Vec<String>, kube::Error> {
    let services = api.list(&kube::api::ListParams::default()).await?;
    let mut out: Vec<String> = services
        .items
        .iter()
        .filter(|svc| {
            svc.spec
                .as_ref()
                .and_then(|s| s.selector.as_ref())
                .is_some_and(|sel| {
                    !sel.is_empty() && sel.iter().all(|(k, v)| labels.get(k) == Some(v))
                })
        })
        .filter_map(|svc| {
            svc.metadata
                .name
                .as_ref()
                .map(|n| format!("{namespace}/{n}"))
        })
        .collect();
    out.sort();
    Ok(out)
}
