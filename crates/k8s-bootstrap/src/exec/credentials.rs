//! The shared, single-flight credential handle over the core's `ExecAuthenticator`.

use std::io::IsTerminal as _;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use exec_credential::{
    Action, ClientIdentity, ClientKey, Cluster, Credential, CredentialId, CredentialState,
    ExecAuthenticator, ExecConfig, PluginPolicy, PluginRun, RunId, Stdin,
};
use http::HeaderValue;
use tokio::sync::watch;
use tracing::Instrument as _;
use zeroize::Zeroizing;

use super::error::Error;
use super::kubeconfig::KubeconfigOptions;
use super::runner::run_plugin;

/// Exec-plugin credentials shared by every request of a program: a cheaply cloneable handle
/// (an `Arc` inside) over the core's [`ExecAuthenticator`].
///
/// The core decides everything (cache and expiry, when to run the plugin, the single run after
/// an HTTP 401, interactive rules, the wait after failed runs, the plugin's environment); this
/// handle performs the runs with [`run_plugin`](super::run_plugin). The authenticator sits
/// behind a lock that is held only for the core's quick, non-blocking calls, never while the
/// plugin runs. Concurrent callers that need a credential wait for one plugin run (single
/// flight) and all get its result.
///
/// Each run is a tokio task of its own, as client-go runs the plugin independently of any
/// request's context: a caller that is cancelled (a request dropped or timed out) stops
/// waiting, and the run goes on for the others; a run nobody waits for any more still
/// finishes and fills the cache. A cancellation is never counted as a failed run. Only the
/// run's own timeout ([`ExecAuthenticator::set_timeouts`]) or the runtime shutting down ends
/// a run early (the plugin's process group is then killed).
///
/// A credential that has already expired when it arrives is used, as client-go uses it, for
/// the callers that waited on that run (with a warning in the log: the plugin's clock and
/// ours disagree), and for the calls of the next second
/// ([`ExecAuthenticator::set_stale_credential_reuse`]); the first call after that runs the
/// plugin again.
///
/// Needs a tokio runtime (the runs are spawned on the current one).
///
/// When the plugin returns a TLS client certificate,
/// [`subscribe_client_identity`](Self::subscribe_client_identity) announces each new
/// certificate and key; a client that
/// uses it must rebuild its TLS connector (see the [module docs](super)).
#[derive(Clone)]
pub struct ExecCredentials {
    inner: Arc<Inner>,
}

/// A TLS client certificate and key returned by the plugin, with the credential generation it
/// came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsIdentity {
    credential: CredentialId,
    identity: ClientIdentity,
}

impl TlsIdentity {
    /// The credential generation this certificate belongs to (a new one for every plugin run).
    #[must_use]
    pub fn credential_id(&self) -> CredentialId {
        self.credential
    }

    /// The certificate chain (PEM), leaf first.
    #[must_use]
    pub fn certificate_pem(&self) -> &str {
        self.identity.certificate_pem()
    }

    /// The private key (PEM); its `Debug` is redacted.
    #[must_use]
    pub fn key(&self) -> &ClientKey {
        self.identity.key()
    }

    /// The core's parsed identity (validity window included).
    #[must_use]
    pub fn identity(&self) -> &ClientIdentity {
        &self.identity
    }
}

struct Inner {
    state: Mutex<State>,
    identity: watch::Sender<Option<TlsIdentity>>,
}

/// What a plugin run produced, published to every caller that waits on it.
type RunOutput = Option<Result<Credential, exec_credential::Error>>;

struct State {
    auth: ExecAuthenticator,
    header: HeaderCache,
    /// The run in flight (performed by its own task) and where its result is published.
    in_flight: Option<(RunId, watch::Receiver<RunOutput>)>,
    runs: u64,
}

/// The `Authorization` value of the cached credential, built once per credential, and its
/// TLS client identity.
#[derive(Default)]
pub(crate) struct HeaderCache {
    value: Option<(
        CredentialId,
        Option<HeaderValue>,
        Option<Arc<ClientIdentity>>,
    )>,
}

/// What a request needs: the credential generation, the header value of a token, and the
/// TLS client identity of a certificate.
pub(crate) struct Authorization {
    pub(crate) credential: CredentialId,
    pub(crate) header: Option<HeaderValue>,
    pub(crate) identity: Option<Arc<ClientIdentity>>,
}

impl core::fmt::Debug for ExecCredentials {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ExecCredentials")
            .field("plugin_runs", &self.plugin_runs())
            .finish_non_exhaustive()
    }
}

impl ExecCredentials {
    /// Credentials for the exec stanza `config` talking to `cluster`, with the core's defaults
    /// (timeouts, stdout cap, failure backoff, allow-all policy) and Go's `PATH` lookup
    /// ([`look_path`](super::look_path)) for allow-list policies set later. Whether stdin is a
    /// terminal is read from this process's stdin (for `interactiveMode`).
    ///
    /// `config` should already have had [`ExecConfig::apply_defaults`],
    /// [`ExecConfig::validate`] and [`ExecConfig::resolve_relative_to`] applied, as
    /// [`from_kubeconfig`](Self::from_kubeconfig) does.
    ///
    /// # Errors
    ///
    /// [`Error::Authenticator`] for an unsupported `apiVersion`.
    pub fn new(config: ExecConfig, cluster: Cluster) -> Result<ExecCredentials, Error> {
        ExecCredentials::with_policy(config, cluster, PluginPolicy::AllowAll)
    }

    /// As [`new`](Self::new), with the credential plugin policy `policy` (kubectl's kuberc
    /// `credentialPluginPolicy`), checked before every run with Go's `PATH` lookup as kubectl
    /// checks it.
    ///
    /// # Errors
    ///
    /// [`Error::Authenticator`] for an unsupported `apiVersion`.
    pub fn with_policy(
        config: ExecConfig,
        cluster: Cluster,
        policy: PluginPolicy,
    ) -> Result<ExecCredentials, Error> {
        let mut auth = ExecAuthenticator::new(config, cluster).map_err(Error::Authenticator)?;
        auth.set_stdin(if std::io::stdin().is_terminal() {
            Stdin::terminal()
        } else {
            Stdin::not_terminal()
        });
        auth.set_policy(policy);
        auth.set_path_resolver(super::look_path);
        Ok(ExecCredentials::from_authenticator(auth))
    }

    /// Credentials over an authenticator configured by the caller (timeouts, stdout cap,
    /// policy, path resolver, refresh skew, backoff, stdin).
    #[must_use]
    pub fn from_authenticator(auth: ExecAuthenticator) -> ExecCredentials {
        ExecCredentials {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    auth,
                    header: HeaderCache::default(),
                    in_flight: None,
                    runs: 0,
                }),
                identity: watch::Sender::new(None),
            }),
        }
    }

    /// Credentials for the `exec` stanza of the user of `context` (the `current-context` when
    /// `None`) in the kubeconfig file at `path`, with client-go's defaulting, validation and
    /// relative-command resolution (against the kubeconfig's directory), and the credential
    /// plugin policy of kubectl's kuberc (see [`KubeconfigOptions`]). The plugin does not run
    /// until a credential is first needed.
    ///
    /// # Errors
    ///
    /// As [`from_options`](Self::from_options).
    pub async fn from_kubeconfig(
        path: impl AsRef<Path>,
        context: Option<&str>,
    ) -> Result<ExecCredentials, Error> {
        let mut options = KubeconfigOptions::infer().kubeconfig(path.as_ref());
        if let Some(context) = context {
            options = options.context(context);
        }
        ExecCredentials::from_options(&options).await
    }

    /// Credentials for the `exec` stanza of the user `options` select (kubeconfig, context,
    /// plugin policy; see [`KubeconfigOptions`]). The plugin does not run until a credential
    /// is first needed.
    ///
    /// # Errors
    ///
    /// [`Error::NoKubeconfig`] (nothing named and no kubeconfig found),
    /// [`Error::ReadKubeconfig`], [`Error::FileTooLarge`], [`Error::ParseKubeconfig`],
    /// [`Error::NoCurrentContext`], [`Error::MissingEntry`], [`Error::NoExecStanza`] (also
    /// for a user whose other credentials make client-go ignore the stanza),
    /// [`Error::InvalidExecStanza`], [`Error::InvalidCluster`],
    /// [`Error::ReadCertificateAuthority`], [`Error::ReadKuberc`], [`Error::Kuberc`],
    /// [`Error::KubeConfig`] or [`Error::Authenticator`].
    pub async fn from_options(options: &KubeconfigOptions) -> Result<ExecCredentials, Error> {
        let Some(loaded) = super::kubeconfig::load_options(options).await? else {
            return Err(Error::NoKubeconfig { in_cluster: None });
        };
        match loaded.exec {
            Some(exec) => ExecCredentials::with_policy(exec.exec, exec.cluster, exec.policy),
            None => Err(Error::NoExecStanza { user: loaded.user }),
        }
    }

    /// The credential to use now: the cached one while the core considers it valid, otherwise
    /// after a plugin run (shared with every concurrent caller). Its `Debug` redacts the token
    /// and key.
    ///
    /// # Errors
    ///
    /// [`Error::Plugin`] when the run this call started or waited for failed;
    /// [`Error::Authenticator`] when the core refuses to run the plugin (interactive mode,
    /// policy, the wait after a failed run).
    pub async fn credential(&self) -> Result<Credential, Error> {
        self.with_ready(|_, c| c.clone()).await
    }

    /// Reports that the server answered HTTP 401 to a request made with credential `used`, and
    /// returns the credential to retry with. As client-go, the plugin runs again at most once
    /// per credential: when `used` is still the cached one (and no failed run is being waited
    /// out, and `used` is not a credential that arrived expired and is still being reused);
    /// callers reporting the same credential concurrently share that one run. Compare
    /// the returned credential's [`id`](Credential::id) with `used` to know whether a retry can
    /// succeed.
    ///
    /// # Errors
    ///
    /// As [`credential`](Self::credential).
    pub async fn refresh_after_unauthorized(
        &self,
        used: CredentialId,
    ) -> Result<Credential, Error> {
        self.schedule_refresh(used)?;
        self.credential().await
    }

    /// The current TLS client identity, and every later one: a new value is published whenever
    /// a plugin run returns a different certificate or key (or drops them). `None` until a
    /// plugin returned a certificate.
    #[must_use]
    pub fn subscribe_client_identity(&self) -> watch::Receiver<Option<TlsIdentity>> {
        self.inner.identity.subscribe()
    }

    /// How many plugin runs this handle (and its clones) completed (a run abandoned when its
    /// task was dropped is not counted).
    #[must_use]
    pub fn plugin_runs(&self) -> u64 {
        self.lock().runs
    }

    /// The generation and header for a request (the fast path allocates nothing once the
    /// header of the cached credential was built).
    pub(crate) async fn authorization(&self) -> Result<Authorization, Error> {
        self.with_ready(|cache, c| cache.authorization(c)).await?
    }

    /// [`refresh_after_unauthorized`](Self::refresh_after_unauthorized) for the layer.
    pub(crate) async fn reauthorize(&self, used: CredentialId) -> Result<Authorization, Error> {
        self.schedule_refresh(used)?;
        self.authorization().await
    }

    fn schedule_refresh(&self, used: CredentialId) -> Result<(), Error> {
        let mut st = self.lock();
        match st.auth.handle_unauthorized(crate::clock::now(), used) {
            Ok(Some(_)) => {
                tracing::info!(
                    credential = used.get(),
                    "server answered 401: refreshing the exec credential"
                );
                self.start_queued_run(&mut st)
            }
            Ok(None) => Ok(()),
            Err(e) => Err(Error::Authenticator(e)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.inner)
    }

    /// Waits for a valid credential (starting a plugin run, or waiting for the run in
    /// flight), then calls `f` with it under the lock. The callers of a run get that run's
    /// credential even when it expired on arrival (as client-go does).
    async fn with_ready<T>(
        &self,
        mut f: impl FnMut(&mut HeaderCache, &Credential) -> T,
    ) -> Result<T, Error> {
        let mut output = {
            let mut guard = self.lock();
            let st = &mut *guard;
            let id = match st.auth.credential(crate::clock::now()) {
                Ok(CredentialState::Ready(c)) => return Ok(f(&mut st.header, c)),
                Ok(CredentialState::Pending(id)) => id,
                Ok(_) => return Err(Error::Authenticator(exec_credential::Error::UnknownRun)),
                Err(e) => return Err(Error::Authenticator(e)),
            };
            self.start_queued_run(st)?;
            match &st.in_flight {
                Some((run, output)) if *run == id => output.clone(),
                _ => return Err(Error::Authenticator(exec_credential::Error::UnknownRun)),
            }
        };
        // Only this wait is cancelled with the caller; the run goes on.
        let credential = match output.wait_for(Option::is_some).await {
            Ok(done) => match &*done {
                Some(Ok(credential)) => credential.clone(),
                Some(Err(e)) => return Err(Error::Plugin(e.clone())),
                None => return Err(Error::RunAbandoned),
            },
            // The run's task was dropped without a result (the runtime is shutting down).
            Err(_) => return Err(Error::RunAbandoned),
        };
        let mut st = self.lock();
        Ok(f(&mut st.header, &credential))
    }

    /// Spawns the run the core queued, if any, and records it as the run in flight.
    fn start_queued_run(&self, st: &mut State) -> Result<(), Error> {
        let Some(run) = take_run(&mut st.auth) else {
            return Ok(());
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // Not a failure of the plugin: hand the run back untouched.
            let _ = st.auth.cancel_run(run.id());
            return Err(Error::NoRuntime);
        };
        let (publish, output) = watch::channel(None);
        st.in_flight = Some((run.id(), output));
        let task = perform(Arc::clone(&self.inner), run, publish);
        drop(runtime.spawn(task.in_current_span()));
        Ok(())
    }
}

/// Performs one run on its own task (without the lock) and reports the result to the core and
/// to the callers waiting on it.
async fn perform(inner: Arc<Inner>, run: PluginRun, publish: watch::Sender<RunOutput>) {
    let mut abandoned = Abandoned {
        inner: &inner,
        run: Some(run.id()),
    };
    let outcome = run_plugin(&run).await;
    abandoned.run = None;
    let result = {
        let mut st = lock(&inner);
        st.runs = st.runs.saturating_add(1);
        let now = crate::clock::now();
        let result = match st
            .auth
            .handle_run_result(now, run.id(), outcome.as_run_result())
        {
            Ok(credential) => {
                tracing::info!(
                    credential = credential.id().get(),
                    token = credential.token().is_some(),
                    client_certificate = credential.client_identity().is_some(),
                    "exec credential refreshed"
                );
                if credential.is_expired(now) {
                    tracing::warn!(
                        credential = credential.id().get(),
                        "the exec plugin returned a credential that had already expired: using it \
                         until the plugin may run again (the plugin's clock may disagree with \
                         ours)"
                    );
                }
                publish_identity(&inner, credential);
                Ok(credential.clone())
            }
            Err(e) => {
                tracing::warn!(error = %e, "exec plugin run failed");
                Err(e)
            }
        };
        if st.in_flight.as_ref().is_some_and(|(id, _)| *id == run.id()) {
            st.in_flight = None;
        }
        log_actions(&mut st.auth);
        result
    };
    publish.send_replace(Some(result));
}

fn publish_identity(inner: &Inner, credential: &Credential) {
    let new = credential.client_identity().map(|identity| TlsIdentity {
        credential: credential.id(),
        identity: identity.clone(),
    });
    inner.identity.send_if_modified(|current| {
        let changed = current.as_ref().map(|t| &t.identity) != new.as_ref().map(|t| &t.identity);
        if changed {
            tracing::info!(
                credential = credential.id().get(),
                "exec plugin returned a new TLS client identity"
            );
            current.clone_from(&new);
        }
        changed
    });
}

impl HeaderCache {
    fn authorization(&mut self, c: &Credential) -> Result<Authorization, Error> {
        let credential = c.id();
        if let Some((id, header, identity)) = &self.value
            && *id == credential
        {
            return Ok(Authorization {
                credential,
                header: header.clone(),
                identity: identity.clone(),
            });
        }
        let header = match c.token() {
            None => None,
            Some(token) => {
                let secret = token.expose_secret();
                let mut text =
                    Zeroizing::new(String::with_capacity(secret.len().saturating_add(7)));
                text.push_str("Bearer ");
                text.push_str(secret);
                let mut value = HeaderValue::from_str(&text).map_err(|_| Error::InvalidToken)?;
                value.set_sensitive(true);
                Some(value)
            }
        };
        let identity = c.client_identity().cloned().map(Arc::new);
        self.value = Some((credential, header.clone(), identity.clone()));
        Ok(Authorization {
            credential,
            header,
            identity,
        })
    }
}

/// Takes the queued plugin run, if this caller is the one to perform it.
fn take_run(auth: &mut ExecAuthenticator) -> Option<PluginRun> {
    let mut run = None;
    while let Some(action) = auth.poll_action() {
        match action {
            Action::RunPlugin(r) => run = Some(r),
            other => log_action(&other),
        }
    }
    run
}

fn log_actions(auth: &mut ExecAuthenticator) {
    while let Some(action) = auth.poll_action() {
        log_action(&action);
    }
}

fn log_action(action: &Action) {
    if let Action::RotateTlsIdentity {
        previous, current, ..
    } = action
    {
        tracing::info!(
            previous = previous.get(),
            current = current.get(),
            "exec TLS client identity rotated: rebuild TLS connections"
        );
    }
}

fn lock(inner: &Inner) -> MutexGuard<'_, State> {
    inner.state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Hands a run back to the core when its task is dropped before the run ended (the runtime
/// is shutting down): not a failure, and the callers waiting on it wake up (their channel
/// closes) instead of waiting forever.
struct Abandoned<'a> {
    inner: &'a Inner,
    run: Option<RunId>,
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        let Some(run) = self.run.take() else {
            return;
        };
        tracing::warn!("exec plugin run abandoned: its task was dropped");
        let mut st = lock(self.inner);
        let _ = st.auth.cancel_run(run);
        if st.in_flight.as_ref().is_some_and(|(id, _)| *id == run) {
            st.in_flight = None;
        }
        log_actions(&mut st.auth);
    }
}
