//! The client side: a sans-IO state machine reproducing client-go's exec authenticator.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use crate::api_version::ApiVersion;
use crate::cluster::Cluster;
use crate::credential::{ExecCredential, ExecCredentialSpec};
use crate::error::{Error, bounded};
use crate::exec_config::ExecConfig;
use crate::hint::{NOT_FOUND_HELP, sanitize_install_hint};
use crate::issued::{Credential, CredentialId};
use crate::policy::PluginPolicy;
use crate::run::{PluginRun, RunId, RunResult, Stdin};
use crate::stderr::StderrSummary;

/// Default time a non-interactive plugin run may take.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// Default time an interactive plugin run (one that may prompt the user) may take.
pub const DEFAULT_INTERACTIVE_TIMEOUT: Duration = Duration::from_secs(600);

/// The install hint is appended to "not found" errors at most this many times per hour.
pub const INSTALL_HINT_PER_HOUR: usize = 10;

/// Default wait after a failed plugin run before the next run may start (doubled after each
/// further consecutive failure, up to [`DEFAULT_FAILURE_BACKOFF_MAX`]).
pub const DEFAULT_FAILURE_BACKOFF: Duration = Duration::from_secs(1);

/// Default cap of the wait between failed plugin runs.
pub const DEFAULT_FAILURE_BACKOFF_MAX: Duration = Duration::from_secs(60);

/// Default time a credential that was already due for a refresh when it arrived (expired by
/// our clock, or inside the refresh skew) is handed out before the plugin runs again: while
/// the plugin's answers keep arriving that way, it runs at most once per this interval.
pub const DEFAULT_STALE_CREDENTIAL_REUSE: Duration = Duration::from_secs(1);

/// Something the caller must do.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action {
    /// Run the plugin as described and report with
    /// [`ExecAuthenticator::handle_run_result`].
    RunPlugin(PluginRun),
    /// The plugin returned a different TLS client certificate than the previous credential
    /// (or dropped it): close pooled connections so that new handshakes present the new one,
    /// as client-go does. A token-only change does not produce this action.
    RotateTlsIdentity {
        /// The credential whose certificate was in use.
        previous: CredentialId,
        /// The new credential.
        current: CredentialId,
        /// The previous leaf's `notBefore` (client-go records `now - notBefore` as the rotation
        /// age).
        previous_not_before: Option<SystemTime>,
    },
}

/// The answer to [`ExecAuthenticator::credential`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CredentialState<'a> {
    /// A valid cached credential: use it.
    Ready(&'a Credential),
    /// A plugin run is needed or already in flight; wait for it to finish
    /// ([`ExecAuthenticator::poll_action`] yields the run when it is new) and ask again.
    Pending(RunId),
}

/// client-go's exec authenticator as a sans-IO state machine.
///
/// One instance per `(exec configuration, cluster)` pair, shared by every request of the
/// program (client-go keeps one per pair in a global cache): it caches the credential until
/// its expiry (valid up to and including the expiry instant; no expiry means valid for the
/// life of the instance), runs the plugin once for any number of concurrent callers (single
/// flight), re-runs it at most once per credential after an HTTP 401, and signals TLS identity
/// rotation.
///
/// After a failed run (any error from [`handle_run_result`](Self::handle_run_result) other than
/// [`Error::UnknownRun`]: a non-zero exit, a signal, a timeout, a missing command, bad output)
/// the next run waits: 1 s after the first failure, doubling
/// with each consecutive failure up to 60 s ([`set_failure_backoff`](Self::set_failure_backoff)
/// changes both; a zero initial wait turns the backoff off). Until then
/// [`credential`](Self::credential) answers [`Error::RunBackoff`], which says when the next run
/// may start, and [`handle_unauthorized`](Self::handle_unauthorized) schedules nothing. A
/// successful run resets the backoff. client-go has no such wait: it runs a failing plugin again
/// on every request. A run the caller abandons ([`cancel_run`](Self::cancel_run)) is not a
/// failure.
///
/// A credential that has already expired when it arrives (the plugin's clock and ours may
/// disagree) is returned by [`handle_run_result`](Self::handle_run_result) and cached, and it
/// is sent as client-go sends it (the server decides whether it is still good). client-go runs
/// the plugin again on the next request, so a plugin whose clock runs behind is run once per
/// request; here such a credential (or one that arrives inside the refresh skew) is handed out
/// for 1 s after it arrived ([`set_stale_credential_reuse`](Self::set_stale_credential_reuse)),
/// and the first call after that runs the plugin again: at most one run a second while the
/// answers keep arriving expired. A 401 inside that second schedules nothing either.
///
/// The caller owns all I/O: it spawns the plugin described by [`Action::RunPlugin`] and
/// enforces its timeout and stdout limit (client-go has neither), and it decides which
/// requests need a credential (one that already carries an `Authorization` header bypasses the
/// plugin entirely, as in client-go).
#[derive(Debug)]
pub struct ExecAuthenticator {
    config: ExecConfig,
    api_version: ApiVersion,
    cluster: Cluster,
    stdin: Stdin,
    policy: PluginPolicy,
    timeout: Duration,
    interactive_timeout: Duration,
    max_stdout: usize,
    refresh_skew: Duration,
    cached: Option<Credential>,
    next_credential: u64,
    next_run: u64,
    in_flight: Option<(RunId, Duration)>,
    actions: VecDeque<Action>,
    hints_shown: VecDeque<SystemTime>,
    backoff_initial: Duration,
    backoff_max: Duration,
    failures: u32,
    /// When the last run failed, and when the next one may start.
    backoff: Option<(SystemTime, SystemTime)>,
    stale_reuse: Duration,
    /// The cached credential arrived already due for a refresh: it is handed out until then.
    stale: Option<StaleReuse>,
    resolver: Option<PathResolver>,
}

/// A credential that was due for a refresh when it arrived, handed out for a while.
#[derive(Debug, Clone, Copy)]
struct StaleReuse {
    credential: CredentialId,
    arrived: SystemTime,
    until: SystemTime,
}

/// A `PATH` lookup: the name in, the executable's path out.
type ResolveFn = dyn FnMut(&str) -> Option<PathBuf> + Send + Sync;

/// The caller's `PATH` lookup for policy decisions.
struct PathResolver(Box<ResolveFn>);

impl core::fmt::Debug for PathResolver {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("PathResolver")
    }
}

impl ExecAuthenticator {
    /// An authenticator for `config` talking to `cluster`. `cluster.config` should hold the
    /// kubeconfig cluster's [`CLUSTER_EXTENSION_KEY`](crate::CLUSTER_EXTENSION_KEY) extension;
    /// the cluster is sent to the plugin only when `provideClusterInfo` is set.
    ///
    /// Stdin defaults to [`Stdin::not_terminal`], the policy to [`PluginPolicy::AllowAll`].
    ///
    /// # Errors
    ///
    /// [`Error::InvalidApiVersion`] unless `apiVersion` is `client.authentication.k8s.io/v1`
    /// or `…/v1beta1` (client-go's `exec plugin: invalid apiVersion "<v>"`).
    pub fn new(config: ExecConfig, cluster: Cluster) -> Result<ExecAuthenticator, Error> {
        let api_version = match config.api_version.parse::<ApiVersion>() {
            Ok(v @ (ApiVersion::V1 | ApiVersion::V1Beta1)) => v,
            _ => return Err(Error::InvalidApiVersion(bounded(&config.api_version, 100))),
        };
        Ok(ExecAuthenticator {
            config,
            api_version,
            cluster,
            stdin: Stdin::not_terminal(),
            policy: PluginPolicy::AllowAll,
            timeout: DEFAULT_TIMEOUT,
            interactive_timeout: DEFAULT_INTERACTIVE_TIMEOUT,
            max_stdout: crate::credential::MAX_PLUGIN_OUTPUT_BYTES,
            refresh_skew: Duration::ZERO,
            cached: None,
            next_credential: 1,
            next_run: 1,
            in_flight: None,
            actions: VecDeque::new(),
            hints_shown: VecDeque::new(),
            backoff_initial: DEFAULT_FAILURE_BACKOFF,
            backoff_max: DEFAULT_FAILURE_BACKOFF_MAX,
            failures: 0,
            backoff: None,
            stale_reuse: DEFAULT_STALE_CREDENTIAL_REUSE,
            stale: None,
            resolver: None,
        })
    }

    /// Sets what stdin is (decided again on every run, as client-go does).
    pub fn set_stdin(&mut self, stdin: Stdin) {
        self.stdin = stdin;
    }

    /// Sets the plugin policy, checked before every run (with
    /// [`PluginPolicy::check`], or with [`PluginPolicy::check_resolved`] once a lookup is set
    /// with [`set_path_resolver`](Self::set_path_resolver)).
    pub fn set_policy(&mut self, policy: PluginPolicy) {
        self.policy = policy;
    }

    /// Sets the `PATH` lookup the policy uses, as Go's `exec.LookPath` behaves (a bare name is
    /// searched in `PATH`, a path is returned if it names an executable file, `None`
    /// otherwise). The policy then decides as kubectl does
    /// ([`PluginPolicy::check_resolved`]), and when the decision resolved the command,
    /// [`PluginRun::command`] is the resolved path, so the program checked is the program run.
    /// It is called only while checking an allow-list.
    pub fn set_path_resolver<R>(&mut self, resolve: R)
    where
        R: FnMut(&str) -> Option<PathBuf> + Send + Sync + 'static,
    {
        self.resolver = Some(PathResolver(Box::new(resolve)));
    }

    /// Sets the run timeouts for non-interactive and interactive runs.
    pub fn set_timeouts(&mut self, non_interactive: Duration, interactive: Duration) {
        self.timeout = non_interactive;
        self.interactive_timeout = interactive;
    }

    /// Sets the stdout limit for plugin runs.
    pub fn set_max_stdout(&mut self, bytes: usize) {
        self.max_stdout = bytes;
    }

    /// Treats a credential as expired `skew` before its expiry, so that it is refreshed before
    /// requests in flight (or servers with a fast clock) see it expire. The default is zero,
    /// client-go's behaviour (valid up to and including the expiry instant). Credentials
    /// without an expiry are unaffected. Keep the skew well below the plugin's credential
    /// lifetime: a skew longer than the lifetime makes every credential arrive due for a
    /// refresh, so the plugin runs once per
    /// [`set_stale_credential_reuse`](Self::set_stale_credential_reuse) interval.
    pub fn set_refresh_skew(&mut self, skew: Duration) {
        self.refresh_skew = skew;
    }

    /// Sets the wait after a failed run (`initial`, doubled after each further consecutive
    /// failure) and its cap (`max`). `Duration::ZERO` as `initial` turns the backoff off, as in
    /// client-go. The defaults are [`DEFAULT_FAILURE_BACKOFF`] and
    /// [`DEFAULT_FAILURE_BACKOFF_MAX`]. A wait already running keeps its end.
    pub fn set_failure_backoff(&mut self, initial: Duration, max: Duration) {
        self.backoff_initial = initial;
        self.backoff_max = max;
    }

    /// Sets how long a credential that was already due for a refresh when it arrived (expired
    /// at `now`, or inside the refresh skew) is handed out before a call runs the plugin again;
    /// the default is [`DEFAULT_STALE_CREDENTIAL_REUSE`]. While the plugin's answers keep
    /// arriving that way it runs at most once per `reuse`, and an HTTP 401 inside the interval
    /// schedules nothing ([`handle_unauthorized`](Self::handle_unauthorized)). `Duration::ZERO`
    /// is client-go's behaviour: such a credential serves the callers of its run only, and
    /// every later call runs the plugin again. A credential already being reused keeps its end.
    pub fn set_stale_credential_reuse(&mut self, reuse: Duration) {
        self.stale_reuse = reuse;
    }

    /// When the next plugin run may start, if a failed run made it wait; a driver can sleep
    /// until then. `None` when a run may start now (or at any time).
    #[must_use]
    pub fn next_run_allowed_at(&self, now: SystemTime) -> Option<SystemTime> {
        self.backoff_until(now)
    }

    /// The configured `ExecCredential` version.
    #[must_use]
    pub fn api_version(&self) -> ApiVersion {
        self.api_version
    }

    /// The credential to use now, or [`CredentialState::Pending`] after scheduling a plugin
    /// run (unless one is already in flight, which every caller then shares). While a run is
    /// in flight every caller waits for it, as client-go's lock makes them do.
    ///
    /// The cache-hit path neither allocates nor copies.
    ///
    /// # Errors
    ///
    /// [`Error::Interactive`] when the interactive mode cannot be honoured with the current
    /// stdin; [`Error::PolicyDenied`] when the policy refuses the command;
    /// [`Error::RunBackoff`] when a run is needed but the last one failed too recently.
    pub fn credential(&mut self, now: SystemTime) -> Result<CredentialState<'_>, Error> {
        if let Some((id, _)) = self.in_flight {
            return Ok(CredentialState::Pending(id));
        }
        let usable = self.cached.as_ref().is_some_and(|c| self.is_usable(c, now));
        if !usable {
            let id = self.schedule_run(now)?;
            return Ok(CredentialState::Pending(id));
        }
        match &self.cached {
            Some(c) => Ok(CredentialState::Ready(c)),
            None => Err(Error::UnknownRun),
        }
    }

    /// The cached credential if [`credential`](Self::credential) would hand it out at `now`
    /// (valid with the [refresh skew](Self::set_refresh_skew) applied, or arrived due for a
    /// refresh and still [reused](Self::set_stale_credential_reuse)), without scheduling
    /// anything.
    #[must_use]
    pub fn cached(&self, now: SystemTime) -> Option<&Credential> {
        self.cached.as_ref().filter(|c| self.is_usable(c, now))
    }

    /// The next thing to do, if any.
    #[must_use]
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// The server answered HTTP 401 to a request made with credential `used`.
    ///
    /// As client-go's `maybeRefreshCreds`: if `used` is still the cached credential and no run
    /// is in flight, a run is scheduled (the old credential stays cached until a new one
    /// arrives, and is kept if the run fails); otherwise someone already refreshed and nothing
    /// happens. The failed request itself is not retried. Nothing is scheduled while a failed
    /// run's backoff lasts, nor while a credential that arrived due for a refresh is reused
    /// ([`set_stale_credential_reuse`](Self::set_stale_credential_reuse)). Returns the
    /// scheduled run, if any.
    ///
    /// # Errors
    ///
    /// As [`credential`](Self::credential), when the run cannot be scheduled.
    pub fn handle_unauthorized(
        &mut self,
        now: SystemTime,
        used: CredentialId,
    ) -> Result<Option<RunId>, Error> {
        if self.in_flight.is_some() {
            return Ok(None);
        }
        if self.backoff_until(now).is_some() || self.stale_reuse_until(now).is_some() {
            return Ok(None);
        }
        match &self.cached {
            Some(c) if c.id() == used => self.schedule_run(now).map(Some),
            _ => Ok(None),
        }
    }

    /// Reports how run `run` ended. On success the credential is validated as client-go does,
    /// cached, and returned; [`Action::RotateTlsIdentity`] is queued when the client
    /// certificate changed. On failure the previous credential (if any) stays cached.
    ///
    /// A credential whose expiry is already past at `now` is returned and cached too, as
    /// client-go does ([`Credential::is_expired`] says so): use it for the callers that waited
    /// on this run. Such a credential (or one inside the refresh skew) is handed out by
    /// [`credential`](Self::credential) for the
    /// [reuse interval](Self::set_stale_credential_reuse) after `now`; the first call after
    /// that schedules a new run.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownRun`] for a run that is not in flight; otherwise the run's failure:
    /// [`Error::PluginNotFound`] (with the sanitised install hint, at most
    /// [`INSTALL_HINT_PER_HOUR`] times per hour), [`Error::PluginFailed`],
    /// [`Error::PluginKilled`], [`Error::PluginTimedOut`], [`Error::OutputTooLarge`],
    /// [`Error::SpawnFailed`], or any output-validation error of
    /// [`ExecCredential::from_plugin_output`] and [`ExecCredential::into_credential`].
    pub fn handle_run_result(
        &mut self,
        now: SystemTime,
        run: RunId,
        result: RunResult<'_>,
    ) -> Result<&Credential, Error> {
        let timeout = match self.in_flight {
            Some((id, timeout)) if id == run => timeout,
            _ => return Err(Error::UnknownRun),
        };
        self.in_flight = None;
        match self.run_outcome(now, timeout, result) {
            Ok(credential) => {
                self.failures = 0;
                self.backoff = None;
                Ok(self.store(now, credential))
            }
            Err(e) => {
                self.record_failure(now);
                Err(e)
            }
        }
    }

    /// Abandons run `run` without a result: the caller stopped it (its task was cancelled,
    /// the program is shutting down). Nothing is cached and no failure is counted (no wait
    /// before the next run); the next [`credential`](Self::credential) call schedules a new
    /// run.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownRun`] for a run that is not in flight.
    pub fn cancel_run(&mut self, run: RunId) -> Result<(), Error> {
        match self.in_flight {
            Some((id, _)) if id == run => {
                self.in_flight = None;
                Ok(())
            }
            _ => Err(Error::UnknownRun),
        }
    }

    /// The credential a finished run produced, validated, or why there is none.
    fn run_outcome(
        &mut self,
        now: SystemTime,
        timeout: Duration,
        result: RunResult<'_>,
    ) -> Result<Credential, Error> {
        let command_text = self.config.command.clone();
        let command = || command_text.clone();
        let stdout = match result {
            RunResult::Exited {
                code: 0, stdout, ..
            } => stdout,
            RunResult::Exited { code, stderr, .. } => {
                return Err(Error::PluginFailed {
                    command: command(),
                    code,
                    stderr: StderrSummary::new(stderr),
                });
            }
            RunResult::Signaled { signal, stderr } => {
                return Err(Error::PluginKilled {
                    command: command(),
                    signal,
                    stderr: StderrSummary::new(stderr),
                });
            }
            RunResult::NotFound => {
                let install_hint = self.install_hint(now);
                return Err(Error::PluginNotFound {
                    command: command(),
                    install_hint,
                });
            }
            RunResult::SpawnFailed { message } => {
                return Err(Error::SpawnFailed {
                    command: command(),
                    message: sanitize_install_hint(&bounded(message, 512)),
                });
            }
            RunResult::TimedOut => {
                return Err(Error::PluginTimedOut {
                    command: command(),
                    timeout,
                });
            }
            RunResult::StdoutLimitExceeded => {
                return Err(Error::OutputTooLarge {
                    limit: self.max_stdout,
                });
            }
        };
        ExecCredential::from_plugin_output_with_limit(stdout, self.max_stdout)?
            .into_credential(self.api_version, now)
    }

    /// Caches a new credential that arrived at `now`, queueing a TLS rotation when the client
    /// certificate changed, and starting its reuse when it arrived due for a refresh.
    fn store(&mut self, now: SystemTime, credential: Credential) -> &Credential {
        let id = CredentialId(self.next_credential);
        self.next_credential = self.next_credential.saturating_add(1);
        let credential = credential.with_id(id);
        self.stale = if self.is_fresh(&credential, now) {
            None
        } else {
            now.checked_add(self.stale_reuse).map(|until| StaleReuse {
                credential: id,
                arrived: now,
                until,
            })
        };
        if let Some(old) = &self.cached
            && old.client_identity() != credential.client_identity()
        {
            self.actions.push_back(Action::RotateTlsIdentity {
                previous: old.id(),
                current: id,
                previous_not_before: old.client_identity().and_then(|i| i.not_before()),
            });
        }
        self.cached.insert(credential)
    }

    /// Starts (or lengthens) the wait after a failed run.
    fn record_failure(&mut self, now: SystemTime) {
        self.failures = self.failures.saturating_add(1);
        if self.backoff_initial.is_zero() {
            self.backoff = None;
            return;
        }
        let factor = 1_u32
            .checked_shl(self.failures.saturating_sub(1))
            .unwrap_or(u32::MAX);
        let wait = self
            .backoff_initial
            .saturating_mul(factor)
            .min(self.backoff_max.max(self.backoff_initial));
        self.backoff = now.checked_add(wait).map(|until| (now, until));
    }

    /// The end of the current backoff, if `now` is inside it. A clock that went back before
    /// the failure ends the wait (how long ago the failure was is then unknown).
    fn backoff_until(&self, now: SystemTime) -> Option<SystemTime> {
        match self.backoff {
            Some((failed, until)) if failed <= now && now < until => Some(until),
            _ => None,
        }
    }

    /// The end of the reuse of the cached credential that arrived due for a refresh, if `now`
    /// is inside it. A clock that went back before the arrival ends it, as it ends a backoff.
    fn stale_reuse_until(&self, now: SystemTime) -> Option<SystemTime> {
        match (self.stale, &self.cached) {
            (Some(s), Some(c)) if s.credential == c.id() && s.arrived <= now && now < s.until => {
                Some(s.until)
            }
            _ => None,
        }
    }

    /// Whether [`credential`](Self::credential) hands out `c` at `now`: fresh, or reused after
    /// it arrived due for a refresh.
    fn is_usable(&self, c: &Credential, now: SystemTime) -> bool {
        self.is_fresh(c, now) || self.stale_reuse_until(now).is_some()
    }

    /// Valid at `now` with the refresh skew applied (a skew reaching past the end of time
    /// counts as expired).
    fn is_fresh(&self, c: &Credential, now: SystemTime) -> bool {
        match c.expiration() {
            None => true,
            Some(exp) => now.checked_add(self.refresh_skew).is_some_and(|t| t <= exp),
        }
    }

    fn schedule_run(&mut self, now: SystemTime) -> Result<RunId, Error> {
        if let Some(until) = self.backoff_until(now) {
            return Err(Error::RunBackoff {
                failures: self.failures,
                retry_at: until,
                retry_in: until.duration_since(now).unwrap_or_default(),
            });
        }
        let interactive = self.interactive()?;
        let command = match &mut self.resolver {
            Some(PathResolver(resolve)) => self
                .policy
                .check_resolved(&self.config.command, |c| resolve(c))?
                .map(|p| p.to_string_lossy().into_owned()),
            None => {
                self.policy.check(&self.config.command)?;
                None
            }
        }
        .unwrap_or_else(|| self.config.command.clone());
        let spec = ExecCredentialSpec::new(
            self.config
                .provide_cluster_info
                .then(|| self.cluster.clone()),
            interactive,
        );
        let exec_info = ExecCredential::request(self.api_version, spec).to_exec_info();
        let mut env: Vec<(String, String)> = self
            .config
            .env
            .iter()
            .map(|v| (v.name.clone(), v.value.clone()))
            .collect();
        env.push(("KUBERNETES_EXEC_INFO".to_owned(), exec_info));
        let id = RunId(self.next_run);
        self.next_run = self.next_run.saturating_add(1);
        let timeout = if interactive {
            self.interactive_timeout
        } else {
            self.timeout
        };
        self.in_flight = Some((id, timeout));
        self.actions.push_back(Action::RunPlugin(PluginRun {
            id,
            command,
            args: self.config.args.clone(),
            env,
            interactive,
            timeout,
            max_stdout: self.max_stdout,
        }));
        Ok(id)
    }

    /// client-go's per-run interactivity decision.
    fn interactive(&self) -> Result<bool, Error> {
        let reason = match self.config.interactive_mode.as_str() {
            "Never" => return Ok(false),
            "IfAvailable" => return Ok(self.stdin.unavailable.is_none() && self.stdin.terminal),
            "Always" => {
                if !self.stdin.terminal {
                    "standard input is not a terminal".to_owned()
                } else if let Some(msg) = &self.stdin.unavailable {
                    if msg.is_empty() {
                        "standard input is unavailable".to_owned()
                    } else {
                        format!("standard input is unavailable: {}", bounded(msg, 256))
                    }
                } else {
                    return Ok(true);
                }
            }
            other => format!("unknown interactiveMode: {:?}", bounded(other, 64)),
        };
        Err(Error::Interactive { reason })
    }

    /// Whether to show the install hint now (10 per hour), and the text to append.
    fn install_hint(&mut self, now: SystemTime) -> Option<String> {
        let hour = Duration::from_secs(3600);
        while let Some(&first) = self.hints_shown.front() {
            // Entries from "the future" (the clock went backwards) are kept.
            match now.duration_since(first) {
                Ok(age) if age >= hour => {
                    self.hints_shown.pop_front();
                }
                _ => break,
            }
        }
        if self.hints_shown.len() >= INSTALL_HINT_PER_HOUR {
            return None;
        }
        self.hints_shown.push_back(now);
        let mut text = NOT_FOUND_HELP.to_owned();
        if !self.config.install_hint.is_empty() {
            text.push_str("\n\n");
            text.push_str(&sanitize_install_hint(&self.config.install_hint));
        }
        Some(text)
    }
}
