//! The shared, single-flight credential handle over the core's `ExecAuthenticator`.

use std::io::IsTerminal as _;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use exec_credential::{
    Action, ClientIdentity, ClientKey, Cluster, Credential, CredentialId, CredentialState,
    ExecAuthenticator, ExecConfig, PluginRun, RunId, RunResult, Stdin,
};
use http::HeaderValue;
use tokio::sync::{Notify, watch};
use zeroize::Zeroizing;

use super::error::Error;
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
/// The lock is a `std::sync::Mutex` (tokio's advice for short critical sections that never
/// span an `.await`): it lets a dropped (cancelled) caller that was running the plugin hand the
/// run back to the core synchronously (as a failed run: `exec: the plugin run was cancelled`),
/// so the other waiters wake up with that error instead of waiting forever.
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
    /// Woken when a plugin run ends (successfully or not).
    run_finished: Notify,
    identity: watch::Sender<Option<TlsIdentity>>,
}

struct State {
    auth: ExecAuthenticator,
    header: HeaderCache,
    /// The last failed run and its error, for the callers that waited on it.
    last_failure: Option<(RunId, exec_credential::Error)>,
    runs: u64,
}

/// The `Authorization` value of the cached credential, built once per credential.
#[derive(Default)]
pub(crate) struct HeaderCache {
    value: Option<(CredentialId, HeaderValue)>,
}

/// What a request needs: the credential generation and, for a token, the header value.
pub(crate) struct Authorization {
    pub(crate) credential: CredentialId,
    pub(crate) header: Option<HeaderValue>,
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
    /// (timeouts, stdout cap, failure backoff, allow-all policy). Whether stdin is a terminal is
    /// read from this process's stdin (for `interactiveMode`).
    ///
    /// `config` should already have had [`ExecConfig::apply_defaults`],
    /// [`ExecConfig::validate`] and [`ExecConfig::resolve_relative_to`] applied, as
    /// [`from_kubeconfig`](Self::from_kubeconfig) does.
    ///
    /// # Errors
    ///
    /// [`Error::Authenticator`] for an unsupported `apiVersion`.
    pub fn new(config: ExecConfig, cluster: Cluster) -> Result<ExecCredentials, Error> {
        let mut auth = ExecAuthenticator::new(config, cluster).map_err(Error::Authenticator)?;
        auth.set_stdin(if std::io::stdin().is_terminal() {
            Stdin::terminal()
        } else {
            Stdin::not_terminal()
        });
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
                    last_failure: None,
                    runs: 0,
                }),
                run_finished: Notify::new(),
                identity: watch::Sender::new(None),
            }),
        }
    }

    /// Credentials for the `exec` stanza of the user of `context` (the `current-context` when
    /// `None`) in the kubeconfig file at `path`, with client-go's defaulting, validation and
    /// relative-command resolution (against the kubeconfig's directory). The plugin does not
    /// run until a credential is first needed.
    ///
    /// # Errors
    ///
    /// [`Error::ReadKubeconfig`], [`Error::FileTooLarge`], [`Error::ParseKubeconfig`],
    /// [`Error::NoCurrentContext`], [`Error::MissingEntry`], [`Error::NoExecStanza`],
    /// [`Error::InvalidExecStanza`], [`Error::InvalidCluster`],
    /// [`Error::ReadCertificateAuthority`], or [`Error::Authenticator`].
    pub async fn from_kubeconfig(
        path: impl AsRef<Path>,
        context: Option<&str>,
    ) -> Result<ExecCredentials, Error> {
        let loaded = super::kubeconfig::load(path.as_ref(), context).await?;
        ExecCredentials::new(loaded.exec, loaded.cluster)
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
    /// out); callers reporting the same credential concurrently share that one run. Compare
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

    /// How many plugin runs this handle (and its clones) completed (a cancelled run is not
    /// counted).
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
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(e) => Err(Error::Authenticator(e)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for a valid credential (running the plugin, or waiting for the run in flight),
    /// then calls `f` with it under the lock.
    async fn with_ready<T>(
        &self,
        mut f: impl FnMut(&mut HeaderCache, &Credential) -> T,
    ) -> Result<T, Error> {
        loop {
            let step = {
                let mut guard = self.lock();
                let st = &mut *guard;
                match st.auth.credential(crate::clock::now()) {
                    Ok(CredentialState::Ready(c)) => return Ok(f(&mut st.header, c)),
                    Ok(CredentialState::Pending(id)) => match take_run(&mut st.auth) {
                        Some(run) => Step::Run(run),
                        // Registered under the lock: the runner notifies only after taking it.
                        None => Step::Wait(id, self.inner.run_finished.notified()),
                    },
                    Ok(_) => return Err(Error::Authenticator(exec_credential::Error::UnknownRun)),
                    Err(e) => return Err(Error::Authenticator(e)),
                }
            };
            match step {
                Step::Run(run) => self.perform(run).await?,
                Step::Wait(id, notified) => {
                    notified.await;
                    if let Some((failed, e)) = &self.lock().last_failure
                        && *failed == id
                    {
                        return Err(Error::Plugin(e.clone()));
                    }
                }
            }
        }
    }

    /// Runs the plugin (without the lock) and reports the result to the core.
    async fn perform(&self, run: PluginRun) -> Result<(), Error> {
        let mut in_flight = InFlight {
            inner: &self.inner,
            run: Some(run.id()),
        };
        let outcome = run_plugin(&run).await;
        in_flight.run = None;
        let result = {
            let mut st = self.lock();
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
                    self.publish_identity(credential);
                    Ok(())
                }
                Err(e) => {
                    tracing::warn!(error = %e, "exec plugin run failed");
                    st.last_failure = Some((run.id(), e.clone()));
                    Err(Error::Plugin(e))
                }
            };
            log_actions(&mut st.auth);
            result
        };
        self.inner.run_finished.notify_waiters();
        result
    }

    fn publish_identity(&self, credential: &Credential) {
        let new = credential.client_identity().map(|identity| TlsIdentity {
            credential: credential.id(),
            identity: identity.clone(),
        });
        self.inner.identity.send_if_modified(|current| {
            let changed =
                current.as_ref().map(|t| &t.identity) != new.as_ref().map(|t| &t.identity);
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
}

impl HeaderCache {
    fn authorization(&mut self, c: &Credential) -> Result<Authorization, Error> {
        let credential = c.id();
        let Some(token) = c.token() else {
            return Ok(Authorization {
                credential,
                header: None,
            });
        };
        if let Some((id, value)) = &self.value
            && *id == credential
        {
            return Ok(Authorization {
                credential,
                header: Some(value.clone()),
            });
        }
        let secret = token.expose_secret();
        let mut text = Zeroizing::new(String::with_capacity(secret.len().saturating_add(7)));
        text.push_str("Bearer ");
        text.push_str(secret);
        let mut value = HeaderValue::from_str(&text).map_err(|_| Error::InvalidToken)?;
        value.set_sensitive(true);
        self.value = Some((credential, value.clone()));
        Ok(Authorization {
            credential,
            header: Some(value),
        })
    }
}

enum Step<'a> {
    Run(PluginRun),
    Wait(RunId, tokio::sync::futures::Notified<'a>),
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

/// Hands an abandoned run back to the core when the caller performing it is dropped, so that
/// the callers waiting for it wake up with an error instead of waiting forever.
struct InFlight<'a> {
    inner: &'a Inner,
    run: Option<RunId>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let Some(run) = self.run.take() else {
            return;
        };
        tracing::warn!("exec plugin run cancelled");
        {
            let mut st = self
                .inner
                .state
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let result = RunResult::SpawnFailed {
                message: "the plugin run was cancelled",
            };
            if let Err(e) = st.auth.handle_run_result(crate::clock::now(), run, result) {
                st.last_failure = Some((run, e));
            }
            log_actions(&mut st.auth);
        }
        self.inner.run_finished.notify_waiters();
    }
}
