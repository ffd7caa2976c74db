//! The verification keys: loaded from their file, watched, reloaded when it changes, and the
//! sidecar rebuilt from them (and from the discovered audiences).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::addon_jwt::{Audience, Issuer, KeySet, Sidecar, Validation};
use crate::sidecar::SharedSidecar;

use super::metrics::ProxyMetrics;
use super::{Error, KeyReloadFailure, KeySource};

/// What identifies one version of the key file: the SHA-256 of its contents (as far as a key
/// file is read); `None` while it cannot be read. By content, not by metadata: a file
/// rewritten in place with its size and modification time kept (`cp -p`, a reproducible
/// build, a restored mtime) is a change, and a new file with the same keys is none.
pub(super) type KeyStamp = Option<[u8; 32]>;

impl KeySource {
    pub(super) fn path(&self) -> &Path {
        match self {
            KeySource::Jwks(p) | KeySource::Pem(p, _) => p,
        }
    }

    pub(super) fn load(&self) -> Result<KeySet, Error> {
        let path = self.path();
        let text = read_bounded(path).map_err(|source| Error::ReadKeys {
            path: path.to_owned(),
            source,
        })?;
        match self {
            KeySource::Jwks(_) => KeySet::from_jwks(&text),
            KeySource::Pem(_, alg) => KeySet::from_pem(&text, *alg),
        }
        .map_err(|source| Error::Keys {
            path: path.to_owned(),
            source,
        })
    }

    /// What changes when Kubernetes swaps a mounted ConfigMap or Secret (a new target behind
    /// the `..data` symlink) or someone rewrites the file, however: the digest of what it
    /// holds (read whole each time: a key file is small, and it is read once per reload
    /// interval).
    pub(super) fn stamp(&self) -> KeyStamp {
        use sha2::Digest as _;
        use std::io::Read as _;
        let limit = u64::try_from(4 * crate::addon_jwt::MAX_JWKS_BYTES).unwrap_or(u64::MAX);
        let mut bytes = Vec::new();
        std::fs::File::open(self.path())
            .ok()?
            .take(limit.saturating_add(1))
            .read_to_end(&mut bytes)
            .ok()?;
        Some(sha2::Sha256::digest(&bytes).into())
    }
}

/// Key files (and the labels file) are small: refuse anything larger than the JWKS limit's 4
/// times.
pub(super) fn read_bounded(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let limit = 4 * crate::addon_jwt::MAX_JWKS_BYTES;
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1))
        .read_to_string(&mut text)?;
    if text.len() > limit {
        return Err(std::io::Error::other("file too large for a key set"));
    }
    Ok(text)
}

/// The validation for `audiences` (None when there is none: nothing could be accepted).
fn validation(issuer: &str, audiences: &[String]) -> Option<Validation> {
    let (first, rest) = audiences.split_first()?;
    let mut v = Validation::new(Issuer::new(issuer), Audience::new(first));
    for a in rest {
        v = v.audience(Audience::new(a));
    }
    Some(v)
}

/// What the sidecar is built from and does not change.
pub(super) struct BuildConfig {
    pub(super) source: KeySource,
    pub(super) issuer: String,
    pub(super) fixed: Vec<String>,
    pub(super) cache_size: usize,
    pub(super) strip: Vec<String>,
    pub(super) policy: KeyReloadFailure,
}

impl BuildConfig {
    /// The sidecar for `state`: no key at all while the key file fails under `fail-closed`.
    pub(super) fn build(&self, state: &BuildState) -> Result<Sidecar, Error> {
        let mut audiences = self.fixed.clone();
        audiences.extend(state.discovered.iter().cloned());
        audiences.sort();
        audiences.dedup();
        let validation = validation(&self.issuer, &audiences).ok_or(Error::NoAudience)?;
        let keys = match (&state.key_error, self.policy) {
            (Some(_), KeyReloadFailure::FailClosed) => KeySet::new(),
            _ => state.keys.clone(),
        };
        Sidecar::new(keys, validation)
            .cache_capacity(self.cache_size)
            .strip_headers(&self.strip)
            .map_err(Error::StripHeaders)
    }
}

/// The sidecar in use and what it is built from; the keys and the discovered audiences may
/// change while serving.
pub(super) struct Inputs {
    pub(super) config: BuildConfig,
    pub(super) sidecar: SharedSidecar,
    pub(super) metrics: Arc<ProxyMetrics>,
    /// What the sidecar in use was built from. Held for a whole rebuild (read, build,
    /// replace), so key reloads and audience refreshes take turns: the sidecar in use is always
    /// built from the latest keys and audiences together, never replaced by a rebuild that
    /// started earlier.
    pub(super) state: std::sync::Mutex<BuildState>,
}

pub(super) struct BuildState {
    /// The keys last loaded.
    pub(super) keys: KeySet,
    pub(super) discovered: Vec<String>,
    /// Why the key file, since it changed, cannot be loaded.
    pub(super) key_error: Option<String>,
}

impl Inputs {
    fn lock(&self) -> std::sync::MutexGuard<'_, BuildState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Rebuilds the sidecar from `state` (locked by the caller); on failure the sidecar in use
    /// stays.
    fn install(&self, state: &BuildState, why: &str) {
        match self.config.build(state) {
            Ok(sidecar) => {
                self.sidecar.replace(sidecar);
                tracing::info!(why, "forward-proxy: sidecar rebuilt");
            }
            Err(e) => {
                let e = startup_message(&e);
                tracing::warn!(error = %e, why, "forward-proxy: not rebuilt, the sidecar in use stays");
            }
        }
    }

    /// Checks the key file every `interval` and reloads it when its stamp differs from the
    /// last one seen (`stamp`, taken before the keys in use were loaded).
    pub(super) async fn watch(self: Arc<Self>, mut stamp: KeyStamp, interval: Duration) {
        // tokio's interval panics on a zero period.
        let mut ticker = tokio::time::interval(interval.max(Duration::from_millis(1)));
        loop {
            ticker.tick().await;
            let now = self.config.source.stamp();
            if now == stamp {
                continue;
            }
            stamp = now;
            self.reload_keys();
        }
    }

    /// Loads the changed key file and rebuilds; on failure, the key reload policy decides.
    fn reload_keys(&self) {
        let mut state = self.lock();
        match self.config.source.load() {
            Ok(keys) => {
                tracing::info!(
                    path = %self.config.source.path().display(),
                    keys = keys.len(),
                    "forward-proxy: key file reloaded"
                );
                state.keys = keys;
                state.key_error = None;
                self.metrics.key_file_failing.set(0);
                self.metrics.key_reloads.inc();
                self.install(&state, "the key file changed");
            }
            Err(e) => {
                let e = e.to_string();
                self.metrics.key_reload_errors.inc();
                self.metrics.key_file_failing.set(1);
                match self.config.policy {
                    KeyReloadFailure::Keep => tracing::warn!(
                        path = %self.config.source.path().display(),
                        error = %e,
                        "forward-proxy: the key file cannot be loaded; the keys loaded before stay"
                    ),
                    KeyReloadFailure::FailClosed => tracing::warn!(
                        path = %self.config.source.path().display(),
                        error = %e,
                        "forward-proxy: the key file cannot be loaded; every request is refused until it loads"
                    ),
                }
                let was_failing = state.key_error.replace(e).is_some();
                if self.config.policy == KeyReloadFailure::FailClosed && !was_failing {
                    self.install(&state, "the key file cannot be loaded");
                }
            }
        }
    }

    /// Takes the Services that select this pod now, and rebuilds when they changed.
    pub(super) fn set_discovered(&self, found: Vec<String>) {
        let mut state = self.lock();
        if state.discovered != found {
            state.discovered = found;
            self.install(&state, "the Services selecting this pod changed");
        }
    }

    /// `/readyz`: 503 while the key file fails under `fail-closed`; 200 otherwise, saying
    /// when the keys in use are older than the file.
    pub(super) fn readiness(&self) -> (http::StatusCode, String) {
        let state = self.lock();
        match (&state.key_error, self.config.policy) {
            (None, _) => (http::StatusCode::OK, "ok".to_owned()),
            (Some(e), KeyReloadFailure::Keep) => (
                http::StatusCode::OK,
                format!(
                    "ok: the keys loaded before are in use; the key file cannot be loaded: {e}\n"
                ),
            ),
            (Some(e), KeyReloadFailure::FailClosed) => (
                http::StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "not ready: every request is refused; the key file cannot be loaded: {e}\n"
                ),
            ),
        }
    }
}

/// A rebuild's error as the command's flags name it (the rebuild log line predates the
/// library).
fn startup_message(e: &Error) -> String {
    match e {
        Error::StripHeaders(e) => format!("--strip-header: {e}"),
        other => other.to_string(),
    }
}
