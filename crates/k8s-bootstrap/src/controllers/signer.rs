//! kube-controller-manager's bootstrap signer on kube-runtime's watcher.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bootstrap_token::SecretObject;
use clusterinfo::{CLUSTER_INFO_NAME, CLUSTER_INFO_NAMESPACE};
use futures_util::StreamExt as _;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, PostParams};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt as _, watcher};
use tokio::sync::Notify;

use super::metrics::SIGNER;
use super::{Error, Metrics, Options, TOKEN_SECRET_SELECTOR, until};
use crate::clock;

/// The single work-queue key: set when an event arrives, taken by the worker. Any number of
/// events between two reconciles make one reconcile.
#[derive(Default)]
struct Queue {
    notify: Notify,
    /// When the oldest event not yet handled arrived.
    since: Mutex<Option<Instant>>,
}

impl Queue {
    fn add(&self) {
        let mut since = self.since.lock().unwrap_or_else(PoisonError::into_inner);
        since.get_or_insert_with(clock::instant);
        drop(since);
        self.notify.notify_one();
    }

    /// Waits for the key; returns how long it waited in the queue.
    async fn take(&self) -> Duration {
        self.notify.notified().await;
        let since = self
            .since
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        since.map_or(Duration::ZERO, |t| {
            clock::instant().saturating_duration_since(t)
        })
    }
}

/// How one reconcile ended.
enum Outcome {
    /// Nothing (more) to do; wake again after this long if given (a signing token expires).
    Done(Option<Duration>),
    /// The ConfigMap changed under us (409): read it again and retry.
    Conflict,
    /// Any other API failure.
    Failed(kube::Error),
}

/// Runs the bootstrap signer until `shutdown` completes.
///
/// Watches bootstrap-token Secrets in `kube-system` and the `kube-public/cluster-info`
/// ConfigMap (kube-runtime watchers, each with one list and one watch; a watch that expires
/// with 410 Gone re-lists and resumes). After the first list of both and after every change it
/// runs [`clusterinfo::reconcile`] over the cached objects at the wall clock's time and, when
/// the `jws-kubeconfig-*` keys must change, replaces the ConfigMap with the `resourceVersion` it
/// read. A 409 Conflict (a concurrent writer) re-queues the work after `options.retry_delay`,
/// by which time the watch has delivered the new version; other failures retry with a doubling
/// delay. A signing token's expiry also wakes it, so an expired token's signature goes
/// without waiting for the token cleaner.
///
/// Needs `list`, `watch` on Secrets in `kube-system`, `list`, `watch` on ConfigMaps in
/// `kube-public` and `update` on `kube-public/cluster-info` (the manifests in `deploy/` grant
/// exactly these).
///
/// # Errors
///
/// [`Error::CacheStopped`] if a watch cache stops before its first list.
pub async fn bootstrap_signer(
    client: kube::Client,
    metrics: Arc<Metrics>,
    options: Options,
    shutdown: impl Future<Output = ()>,
) -> Result<(), Error> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), bootstrap_token::NAMESPACE);
    let configmaps: Api<ConfigMap> = Api::namespaced(client, CLUSTER_INFO_NAMESPACE);
    let (secret_store, secret_writer) = reflector::store::<Secret>();
    let (cm_store, cm_writer) = reflector::store::<ConfigMap>();
    let queue = Arc::new(Queue::default());

    let secret_events = reflector::reflector(
        secret_writer,
        watcher(
            secrets,
            watcher::Config::default().fields(TOKEN_SECRET_SELECTOR),
        ),
    )
    .default_backoff();
    let cm_events = reflector::reflector(
        cm_writer,
        watcher(
            configmaps.clone(),
            watcher::Config::default().fields(&format!("metadata.name={CLUSTER_INFO_NAME}")),
        ),
    )
    .default_backoff();
    let worker = async {
        secret_store
            .wait_until_ready()
            .await
            .map_err(|_| Error::CacheStopped)?;
        cm_store
            .wait_until_ready()
            .await
            .map_err(|_| Error::CacheStopped)?;
        metrics
            .signer_synced
            .store(true, std::sync::atomic::Ordering::Release);
        tracing::info!(
            configmap = %format_args!("{CLUSTER_INFO_NAMESPACE}/{CLUSTER_INFO_NAME}"),
            "bootstrapsigner: watch caches synced, keeping cluster-info signed"
        );
        let mut retry = options.retry_delay;
        // What the last update wrote, until the watch cache has caught up with it.
        let mut written: Option<Written> = None;
        // When to run again without an event (a retry, or a signing token's expiry).
        let mut wake_at: Option<tokio::time::Instant> = None;
        loop {
            let timer = async {
                match wake_at {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                waited = queue.take() => {
                    metrics
                        .queue_latency
                        .get_or_create(&SIGNER)
                        .observe(waited.as_secs_f64());
                }
                () = timer => {}
            }
            metrics.reconciles.get_or_create(&SIGNER).inc();
            let after = match sync(
                &secret_store,
                &cm_store,
                &configmaps,
                &metrics,
                &mut written,
            )
            .await
            {
                Outcome::Done(wake) => {
                    retry = options.retry_delay;
                    wake
                }
                Outcome::Conflict => {
                    metrics.errors.get_or_create(&SIGNER).inc();
                    tracing::debug!("bootstrapsigner: cluster-info changed concurrently, retrying");
                    Some(options.retry_delay)
                }
                Outcome::Failed(e) => {
                    metrics.errors.get_or_create(&SIGNER).inc();
                    tracing::warn!(error = %e, retry_in = ?retry, "bootstrapsigner: update failed");
                    let after = retry;
                    retry = retry.saturating_mul(2).min(options.max_retry_delay);
                    Some(after)
                }
            };
            let now = tokio::time::Instant::from_std(clock::instant());
            wake_at = after.and_then(|d| now.checked_add(d));
        }
    };
    let run = async {
        tokio::select! {
            result = worker => result,
            () = feed(secret_events, &queue) => Err(Error::CacheStopped),
            () = feed(cm_events, &queue) => Err(Error::CacheStopped),
        }
    };
    until::<()>(run, shutdown).await.map(|_| ())
}

/// Adds the key for every change a watch reports (the initial list counts once, at its end).
async fn feed<K>(
    events: impl futures_util::Stream<Item = watcher::Result<watcher::Event<K>>>,
    queue: &Queue,
) {
    futures_util::pin_mut!(events);
    while let Some(event) = events.next().await {
        match event {
            Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_) | watcher::Event::InitDone) => {
                queue.add();
            }
            Ok(watcher::Event::Init | watcher::Event::InitApply(_)) => {}
            Err(e) => tracing::warn!(error = %e, "bootstrapsigner: watch failed, retrying"),
        }
    }
}

/// The ConfigMap this signer last wrote, and the `resourceVersion` it replaced.
struct Written {
    replaced: Option<String>,
    configmap: ConfigMap,
}

/// One reconcile over the caches.
///
/// Right after an update the watch cache may still hold the version it replaced; reconciling
/// from that would only earn a 409. Until the cache moves past that version, the object the
/// update returned is used instead (versions are compared for equality only, never ordered).
async fn sync(
    secret_store: &Store<Secret>,
    cm_store: &Store<ConfigMap>,
    configmaps: &Api<ConfigMap>,
    metrics: &Metrics,
    written: &mut Option<Written>,
) -> Outcome {
    let key = ObjectRef::new(CLUSTER_INFO_NAME).within(CLUSTER_INFO_NAMESPACE);
    let Some(cached) = cm_store.get(&key) else {
        // No cluster-info (yet): nothing to sign. Its creation is an event.
        *written = None;
        return Outcome::Done(None);
    };
    let configmap: ConfigMap = match written.take() {
        Some(w) if w.replaced == cached.metadata.resource_version => {
            let configmap = w.configmap.clone();
            *written = Some(w);
            configmap
        }
        _ => (*cached).clone(),
    };
    // The CPU-bound part (every Secret converted, one HMAC per token) runs on the blocking
    // pool, so a large token set never stalls the runtime's workers.
    let secrets = secret_store.state();
    let data: BTreeMap<String, String> = configmap.data.clone().unwrap_or_default();
    let computed = tokio::task::spawn_blocking(move || {
        let mut tokens: Vec<SecretObject> = secrets
            .iter()
            .filter_map(|s| SecretObject::try_from(&**s).ok())
            .collect();
        // Kubernetes takes lister order (a map's); name order makes "first Secret for an ID
        // wins" deterministic.
        tokens.sort_by(|a, b| a.name().cmp(b.name()));
        let now = clock::now();
        let reconciled = clusterinfo::reconcile(&data, tokens.iter(), now);
        // The next time a token expires, its signature must go.
        let wake = bootstrap_token::cleanup_plan(tokens.iter(), now).wake_after;
        let changes = Changes::between(&data, reconciled.data());
        (reconciled, wake, changes)
    })
    .await;
    let Ok((reconciled, wake, changes)) = computed else {
        // The blocking pool is shutting down with the runtime.
        return Outcome::Done(None);
    };
    metrics
        .signed_tokens
        .set(i64::try_from(reconciled.signed_token_ids().len()).unwrap_or(i64::MAX));
    if !reconciled.update_needed() {
        return Outcome::Done(wake);
    }
    let replaced = configmap.metadata.resource_version.clone();
    let mut updated = configmap;
    updated.data = Some(reconciled.into_data());
    match configmaps
        .replace(CLUSTER_INFO_NAME, &PostParams::default(), &updated)
        .await
    {
        Ok(configmap) => {
            metrics.cluster_info_writes.inc();
            tracing::info!(
                configmap = %format_args!("{CLUSTER_INFO_NAMESPACE}/{CLUSTER_INFO_NAME}"),
                signed = %Ids(&changes.added),
                signed_again = %Ids(&changes.replaced),
                unsigned = %Ids(&changes.removed),
                "bootstrapsigner: cluster-info updated"
            );
            *written = Some(Written {
                replaced,
                configmap,
            });
            Outcome::Done(wake)
        }
        Err(kube::Error::Api(status)) if status.code == 409 => Outcome::Conflict,
        // Deleted meanwhile: its deletion is an event; nothing to sign until it returns.
        Err(kube::Error::Api(status)) if status.code == 404 => Outcome::Done(None),
        Err(e) => Outcome::Failed(e),
    }
}

/// The token IDs whose `jws-kubeconfig-<id>` signature an update adds, replaces (the
/// kubeconfig changed, or the token's secret) and removes (the token expired, was deleted or
/// no longer signs). IDs only: they are public, while a signature is better left to the
/// ConfigMap itself.
#[derive(Debug, Default, PartialEq, Eq)]
struct Changes {
    added: Vec<String>,
    replaced: Vec<String>,
    removed: Vec<String>,
}

impl Changes {
    fn between(old: &BTreeMap<String, String>, new: &BTreeMap<String, String>) -> Changes {
        let signature = |data: &BTreeMap<String, String>, key: &str| {
            key.strip_prefix(clusterinfo::JWS_KEY_PREFIX)
                .map(|id| (id.to_owned(), data.get(key).cloned()))
        };
        let mut changes = Changes::default();
        for key in new.keys() {
            let Some((id, value)) = signature(new, key) else {
                continue;
            };
            // cluster-info is public (anyone may read it), so its signatures are compared
            // plainly: this comparison decides nothing but a log line.
            match old.get(key) {
                None => changes.added.push(id),
                Some(before) if Some(before) != value.as_ref() => changes.replaced.push(id),
                Some(_) => {}
            }
        }
        for key in old.keys() {
            if let Some((id, _)) = signature(old, key)
                && !new.contains_key(key)
            {
                changes.removed.push(id);
            }
        }
        changes
    }
}

/// Token IDs for a log line: comma-separated, at most [`Ids::MAX`] of them (and how many more),
/// each cut at 64 characters (a key someone else wrote into cluster-info may be any length).
struct Ids<'a>(&'a [String]);

impl Ids<'_> {
    const MAX: usize = 32;
}

impl std::fmt::Display for Ids<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            return f.write_str("-");
        }
        for (i, id) in self.0.iter().take(Self::MAX).enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(id.get(..64).unwrap_or(id))?;
        }
        if let Some(more) = self.0.len().checked_sub(Self::MAX).filter(|m| *m > 0) {
            write!(f, " and {more} more")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn data(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
        entries
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn changes_name_the_token_ids_added_replaced_and_removed() {
        let old = data(&[
            ("kubeconfig", "a"),
            ("jws-kubeconfig-keep01", "s1"),
            ("jws-kubeconfig-resign", "s2"),
            ("jws-kubeconfig-gone01", "s3"),
        ]);
        let new = data(&[
            ("kubeconfig", "b"),
            ("jws-kubeconfig-keep01", "s1"),
            ("jws-kubeconfig-resign", "s2b"),
            ("jws-kubeconfig-new001", "s4"),
        ]);
        assert_eq!(
            Changes::between(&old, &new),
            Changes {
                added: vec!["new001".to_owned()],
                replaced: vec!["resign".to_owned()],
                removed: vec!["gone01".to_owned()],
            }
        );
    }

    #[test]
    fn ids_are_bounded_for_the_log() {
        assert_eq!(Ids(&[]).to_string(), "-");
        assert_eq!(
            Ids(&["abcdef".to_owned(), "ghijkl".to_owned()]).to_string(),
            "abcdef,ghijkl"
        );
        let many: Vec<String> = (0..40).map(|i| format!("id{i:04}")).collect();
        let shown = Ids(&many).to_string();
        assert!(shown.ends_with(" and 8 more"), "{shown}");
        assert_eq!(shown.matches(',').count(), 31);
        let long = Ids(&["x".repeat(1000)]).to_string();
        assert_eq!(long.len(), 64);
    }
}
