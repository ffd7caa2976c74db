//! kubeadm-style discovery as a sans-IO state machine.

use std::time::{Duration, SystemTime};

use bootstrap_token::BootstrapToken;

use crate::ca_bundle::CaBundle;
use crate::ca_pin::PinSet;
use crate::cluster_info::{ClusterInfo, ParseOptions, Trust};
use crate::configmap::{CLUSTER_INFO_PATH, ClusterInfoConfigMap};
use crate::error::{Error, bounded};
use crate::server::validate_host_port;

/// kubeadm's retry interval (`DiscoveryRetryInterval`).
pub const DEFAULT_RETRY_INTERVAL: Duration = Duration::from_secs(5);
/// kubeadm's discovery timeout (`DefaultDiscoveryTimeout`).
pub const DEFAULT_DISCOVERY_TIMEOUT: Duration = Duration::from_secs(300);
/// The largest response body the caller should read; longer bodies are rejected. Callers
/// should stop reading at this size plus one byte.
pub const MAX_RESPONSE_BYTES: usize = crate::configmap::MAX_CONFIGMAP_JSON_BYTES;
/// The most endpoints a token discovery may try in turn.
pub const MAX_ENDPOINTS: usize = 16;

/// How the caller must verify the server's TLS certificate for a fetch.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FetchTrust {
    /// Do **not** verify the server (token discovery's first fetch, which the JWS then
    /// authenticates). Send no credentials.
    DangerousNoVerification,
    /// Verify against exactly this CA bundle and nothing else (not the system roots).
    CaBundle(CaBundle),
    /// Verify against the system trust roots.
    SystemRoots,
}

/// An HTTPS GET the caller must perform, without credentials.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchRequest {
    url: String,
    trust: FetchTrust,
}

impl FetchRequest {
    /// The full URL (`https://...`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// How to verify the server.
    pub fn trust(&self) -> &FetchTrust {
        &self.trust
    }
}

/// What the caller must do next.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Action {
    /// Perform this GET, then call [`Discovery::handle_response`].
    Fetch(FetchRequest),
    /// Sleep until this instant, then call [`Discovery::handle_timeout`].
    WakeAt(SystemTime),
    /// Discovery succeeded.
    Done(Box<Discovered>),
    /// Discovery failed; nothing more will happen.
    Failed(Error),
}

/// The outcome of a fetch, as the caller observed it.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum Response<'a> {
    /// An HTTP response arrived.
    Http {
        /// The status code.
        status: u16,
        /// The body (read at most [`MAX_RESPONSE_BYTES`] + 1 bytes of it).
        body: &'a [u8],
    },
    /// The request failed before a response (connection refused, TLS failure, timeout...).
    /// The text is kept, truncated to 256 characters, in the error reported on timeout.
    TransportError(&'a str),
}

/// The result of a successful discovery: the validated cluster information.
#[derive(Clone, Debug)]
pub struct Discovered {
    cluster_info: ClusterInfo,
    kubeconfig: Option<String>,
    endpoint: Option<String>,
    warnings: Vec<String>,
}

impl Discovered {
    /// The validated cluster; its `server` is the one from cluster-info, as kubeadm uses it.
    pub fn cluster_info(&self) -> &ClusterInfo {
        &self.cluster_info
    }

    /// The exact kubeconfig string from cluster-info that was verified (token discovery).
    pub fn kubeconfig(&self) -> Option<&str> {
        self.kubeconfig.as_deref()
    }

    /// The endpoint (`host:port`) that answered, for token discovery.
    pub fn endpoint(&self) -> Option<&str> {
        self.endpoint.as_deref()
    }

    /// Non-fatal observations (e.g. a discovery file whose server differs from
    /// cluster-info's, which kubeadm only warns about).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// A kubeconfig for the client, without credentials
    /// (see [`ClusterInfo::to_client_kubeconfig_yaml`]).
    pub fn to_client_kubeconfig_yaml(&self) -> String {
        self.cluster_info.to_client_kubeconfig_yaml()
    }
}

/// Whether token discovery checks the CA against pins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CaVerification {
    /// Require at least one pin (the default).
    #[default]
    Pinned,
    /// kubeadm's `unsafeSkipCAVerification`: with no pins, trust the JWS alone and return the
    /// insecurely fetched kubeconfig. Pins, if any are given, are still enforced.
    DangerousSkip,
}

/// Configuration of token discovery (kubeadm `discovery.bootstrapToken`).
///
/// ```
/// use clusterinfo::{Action, PinSet, TokenDiscoveryConfig};
/// use std::time::UNIX_EPOCH;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut pins = PinSet::new();
/// pins.allow("sha256:345959acb2c3b2feb87d281961c893f62a314207ef02599f1cc4a5fb255480b3")?;
/// let mut discovery = TokenDiscoveryConfig::new("10.0.0.1:6443", "abcdef.0123456789abcdef".parse()?)?
///     .with_pins(pins)
///     .start(UNIX_EPOCH)?;
/// let Some(Action::Fetch(request)) = discovery.poll_action() else { panic!() };
/// assert_eq!(request.url(), "https://10.0.0.1:6443/api/v1/namespaces/kube-public/configmaps/cluster-info");
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct TokenDiscoveryConfig {
    endpoints: Vec<String>,
    token: BootstrapToken,
    pins: PinSet,
    ca_verification: CaVerification,
    retry_interval: Duration,
    timeout: Duration,
}

impl std::fmt::Debug for TokenDiscoveryConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenDiscoveryConfig")
            .field("endpoints", &self.endpoints)
            .field("token", &self.token)
            .field("pins", &self.pins)
            .field("ca_verification", &self.ca_verification)
            .field("retry_interval", &self.retry_interval)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl TokenDiscoveryConfig {
    /// Discover through `endpoint` (`host:port`, as `apiServerEndpoint`) with a token.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidEndpoint`] when the endpoint is not `host:port`.
    pub fn new(endpoint: &str, token: BootstrapToken) -> Result<TokenDiscoveryConfig, Error> {
        validate_host_port(endpoint, true).map_err(|reason| Error::InvalidEndpoint { reason })?;
        Ok(TokenDiscoveryConfig {
            endpoints: vec![endpoint.to_owned()],
            token,
            pins: PinSet::new(),
            ca_verification: CaVerification::Pinned,
            retry_interval: DEFAULT_RETRY_INTERVAL,
            timeout: DEFAULT_DISCOVERY_TIMEOUT,
        })
    }

    /// The bootstrap token discovery authenticates the cluster with (its `Debug` and `Display`
    /// keep the secret out).
    #[must_use]
    pub fn token(&self) -> &BootstrapToken {
        &self.token
    }

    /// Add an equivalent endpoint, tried in turn after the previous ones.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidEndpoint`] when the endpoint is not `host:port` or beyond
    /// [`MAX_ENDPOINTS`].
    pub fn with_endpoint(mut self, endpoint: &str) -> Result<TokenDiscoveryConfig, Error> {
        validate_host_port(endpoint, true).map_err(|reason| Error::InvalidEndpoint { reason })?;
        if self.endpoints.len() >= MAX_ENDPOINTS {
            return Err(Error::InvalidEndpoint {
                reason: "too many endpoints",
            });
        }
        self.endpoints.push(endpoint.to_owned());
        Ok(self)
    }

    /// The CA pins (`caCertHashes`).
    pub fn with_pins(mut self, pins: PinSet) -> TokenDiscoveryConfig {
        self.pins = pins;
        self
    }

    /// kubeadm's `unsafeSkipCAVerification: true`.
    pub fn dangerous_skip_ca_verification(mut self) -> TokenDiscoveryConfig {
        self.ca_verification = CaVerification::DangerousSkip;
        self
    }

    /// The retry interval (default 5 s; capped at the timeout).
    pub fn with_retry_interval(mut self, interval: Duration) -> TokenDiscoveryConfig {
        self.retry_interval = interval;
        self
    }

    /// The timeout of each of the two polls (default 5 min).
    pub fn with_timeout(mut self, timeout: Duration) -> TokenDiscoveryConfig {
        self.timeout = timeout;
        self
    }

    /// Start discovery at `now`.
    ///
    /// # Errors
    ///
    /// [`Error::NoPins`] without pins and without [`Self::dangerous_skip_ca_verification`].
    pub fn start(self, now: SystemTime) -> Result<Discovery, Error> {
        if self.pins.is_empty() && self.ca_verification == CaVerification::Pinned {
            return Err(Error::NoPins);
        }
        let retry_interval = self.retry_interval.min(self.timeout);
        let mut d = Discovery {
            mode: Mode::Token(Box::new(self)),
            retry_interval,
            phase: Phase::Finished,
            next: None,
        };
        d.begin_poll(now, Stage::TokenFirst, 0);
        Ok(d)
    }
}

/// Whether file and HTTPS-URL discovery refresh from cluster-info.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Refresh {
    /// Use the kubeconfig as given.
    #[default]
    Never,
    /// Fetch cluster-info over TLS verified with the kubeconfig's own trust, then: on 403
    /// keep the file; on a usable cluster-info copy its CA data when the file has none, and
    /// only warn when its server differs (kubeadm's rules).
    FromClusterInfo,
}

/// Configuration of file and HTTPS-URL discovery.
#[derive(Clone, Debug)]
pub struct FileDiscoveryConfig {
    refresh: Refresh,
    retry_interval: Duration,
    timeout: Duration,
}

impl Default for FileDiscoveryConfig {
    fn default() -> FileDiscoveryConfig {
        FileDiscoveryConfig {
            refresh: Refresh::Never,
            retry_interval: DEFAULT_RETRY_INTERVAL,
            timeout: DEFAULT_DISCOVERY_TIMEOUT,
        }
    }
}

impl FileDiscoveryConfig {
    /// Defaults: no refresh, 5 s interval, 5 min timeout.
    pub fn new() -> FileDiscoveryConfig {
        FileDiscoveryConfig::default()
    }

    /// Choose the refresh behaviour.
    pub fn with_refresh(mut self, refresh: Refresh) -> FileDiscoveryConfig {
        self.refresh = refresh;
        self
    }

    /// The retry interval of the refresh poll.
    pub fn with_retry_interval(mut self, interval: Duration) -> FileDiscoveryConfig {
        self.retry_interval = interval;
        self
    }

    /// The timeout of the refresh poll.
    pub fn with_timeout(mut self, timeout: Duration) -> FileDiscoveryConfig {
        self.timeout = timeout;
        self
    }

    /// File discovery: validate a discovery kubeconfig (the same credential rejection as
    /// cluster-info: a discovery file must not authenticate), then optionally refresh.
    ///
    /// ```
    /// use clusterinfo::{Action, FileDiscoveryConfig};
    /// use std::time::UNIX_EPOCH;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let yaml = b"clusters:\n- name: c\n  cluster:\n    server: https://10.0.0.1:6443\n";
    /// let mut d = FileDiscoveryConfig::new().start_file(yaml, UNIX_EPOCH)?;
    /// let Some(Action::Done(found)) = d.poll_action() else { panic!() };
    /// assert_eq!(found.cluster_info().server(), "https://10.0.0.1:6443");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// The kubeconfig's parse and validation errors (see [`ClusterInfo::parse`]).
    pub fn start_file(self, kubeconfig: &[u8], now: SystemTime) -> Result<Discovery, Error> {
        let info = ClusterInfo::parse_with(kubeconfig, &ParseOptions::new())?;
        let mut d = self.machine(None);
        d.file_loaded(now, info);
        Ok(d)
    }

    /// HTTPS-URL discovery: fetch the kubeconfig from `url` verifying against the system
    /// roots, require status 200, then continue as file discovery.
    ///
    /// # Errors
    ///
    /// [`Error::NotHttps`] when the URL is not `https://`.
    pub fn start_https(self, url: &str, _now: SystemTime) -> Result<Discovery, Error> {
        crate::server::validate_server(url, "discovery URL").map_err(|_| Error::NotHttps)?;
        let mut d = self.machine(Some(url.to_owned()));
        d.phase = Phase::AwaitUrl;
        d.next = Some(Action::Fetch(FetchRequest {
            url: url.to_owned(),
            trust: FetchTrust::SystemRoots,
        }));
        Ok(d)
    }

    fn machine(self, url: Option<String>) -> Discovery {
        let retry_interval = self.retry_interval.min(self.timeout);
        Discovery {
            mode: Mode::File(Box::new((self, url))),
            retry_interval,
            phase: Phase::Finished,
            next: None,
        }
    }
}

/// A discovery in progress: poll it for [`Action`]s, feed it responses and wake-ups.
///
/// The caller performs HTTPS requests and sleeps; this type decides. Time only advances
/// through the `now` arguments.
///
/// ```no_run
/// # use clusterinfo::{Action, Discovery, Response};
/// # fn get(_: &clusterinfo::FetchRequest) -> (u16, Vec<u8>) { unimplemented!() }
/// # fn now() -> std::time::SystemTime { unimplemented!() }
/// # fn sleep_until(_: std::time::SystemTime) {}
/// # fn drive(mut discovery: Discovery) -> Result<Box<clusterinfo::Discovered>, clusterinfo::Error> {
/// loop {
///     match discovery.poll_action() {
///         Some(Action::Fetch(request)) => {
///             let (status, body) = get(&request);
///             discovery.handle_response(now(), Response::Http { status, body: &body });
///         }
///         Some(Action::WakeAt(at)) => {
///             sleep_until(at);
///             discovery.handle_timeout(now());
///         }
///         Some(Action::Done(found)) => return Ok(found),
///         Some(Action::Failed(err)) => return Err(err),
///         Some(_) | None => unreachable!(),
///     }
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct Discovery {
    mode: Mode,
    retry_interval: Duration,
    phase: Phase,
    next: Option<Action>,
}

#[derive(Debug)]
enum Mode {
    Token(Box<TokenDiscoveryConfig>),
    File(Box<(FileDiscoveryConfig, Option<String>)>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    TokenFirst,
    TokenSecond,
    FileRefresh,
}

#[derive(Debug)]
struct Poll {
    stage: Stage,
    deadline: SystemTime,
    /// Index into the targets of the attempt in flight.
    target: usize,
    /// Targets tried in the current round.
    tried: usize,
    last_error: Option<Error>,
    wake_at: Option<SystemTime>,
}

#[derive(Debug)]
enum Phase {
    Polling(Box<Poll>, Box<Carry>),
    AwaitUrl,
    Finished,
}

/// What a later stage needs from an earlier one.
#[derive(Debug, Default)]
struct Carry {
    first_kubeconfig: Option<String>,
    bundle: Option<CaBundle>,
    file: Option<ClusterInfo>,
}

impl Discovery {
    /// The next action, if any. Each action is returned once; after `Done` or `Failed` there
    /// are no more.
    #[must_use]
    pub fn poll_action(&mut self) -> Option<Action> {
        self.next.take()
    }

    /// Why the last attempt failed while discovery goes on retrying (a transport error, an
    /// HTTP status, no signature for the token yet...): what a progress line shows, as kubeadm
    /// logs each failed attempt. `None` before the first failure of the current stage and once
    /// discovery has finished.
    #[must_use]
    pub fn last_error(&self) -> Option<&Error> {
        match &self.phase {
            Phase::Polling(poll, _) => poll.last_error.as_ref(),
            Phase::AwaitUrl | Phase::Finished => None,
        }
    }

    /// Whether discovery has finished (successfully or not) and its last action was taken.
    pub fn is_finished(&self) -> bool {
        matches!(self.phase, Phase::Finished) && self.next.is_none()
    }

    /// Feed the outcome of the last [`Action::Fetch`]. Ignored when no fetch is outstanding.
    pub fn handle_response(&mut self, now: SystemTime, response: Response<'_>) {
        match std::mem::replace(&mut self.phase, Phase::Finished) {
            Phase::AwaitUrl => self.url_response(now, response),
            Phase::Polling(poll, carry) if poll.wake_at.is_none() => {
                self.poll_response(now, poll, carry, response)
            }
            other => self.phase = other,
        }
    }

    /// Feed a wake-up after [`Action::WakeAt`]. Early wake-ups re-issue the same `WakeAt`.
    pub fn handle_timeout(&mut self, now: SystemTime) {
        let Phase::Polling(poll, _) = &mut self.phase else {
            return;
        };
        let Some(at) = poll.wake_at else {
            return;
        };
        if now < at {
            self.next = Some(Action::WakeAt(at));
            return;
        }
        poll.wake_at = None;
        poll.tried = 0;
        self.issue_fetch();
    }

    fn targets(&self, stage: Stage, carry: &Carry) -> Vec<(String, FetchTrust)> {
        match (&self.mode, stage) {
            (Mode::Token(cfg), Stage::TokenFirst) => cfg
                .endpoints
                .iter()
                .map(|e| {
                    (
                        format!("https://{e}{CLUSTER_INFO_PATH}"),
                        FetchTrust::DangerousNoVerification,
                    )
                })
                .collect(),
            (Mode::Token(cfg), _) => {
                let trust = carry
                    .bundle
                    .clone()
                    .map_or(FetchTrust::SystemRoots, FetchTrust::CaBundle);
                cfg.endpoints
                    .iter()
                    .map(|e| (format!("https://{e}{CLUSTER_INFO_PATH}"), trust.clone()))
                    .collect()
            }
            (Mode::File(_), _) => {
                let Some(info) = &carry.file else {
                    return Vec::new();
                };
                let trust = match info.trust() {
                    Trust::CaBundle(b) => FetchTrust::CaBundle(b.clone()),
                    Trust::DangerousSkipVerify => FetchTrust::DangerousNoVerification,
                    _ => FetchTrust::SystemRoots,
                };
                info.servers()
                    .into_iter()
                    .map(|s| {
                        (
                            format!("{}{CLUSTER_INFO_PATH}", s.trim_end_matches('/')),
                            trust.clone(),
                        )
                    })
                    .collect()
            }
        }
    }

    fn begin_poll(&mut self, now: SystemTime, stage: Stage, target: usize) {
        let timeout = match &self.mode {
            Mode::Token(cfg) => cfg.timeout,
            Mode::File(f) => f.0.timeout,
        };
        let deadline = now.checked_add(timeout).unwrap_or(now);
        let carry = match std::mem::replace(&mut self.phase, Phase::Finished) {
            Phase::Polling(_, carry) => carry,
            _ => Box::default(),
        };
        let poll = Poll {
            stage,
            deadline,
            target,
            tried: 0,
            last_error: None,
            wake_at: None,
        };
        self.phase = Phase::Polling(Box::new(poll), carry);
        self.issue_fetch();
    }

    fn issue_fetch(&mut self) {
        let Phase::Polling(poll, carry) = &self.phase else {
            return;
        };
        let targets = self.targets(poll.stage, carry);
        let Some((url, trust)) = targets
            .get(poll.target)
            .or_else(|| targets.first())
            .cloned()
        else {
            self.fail(Error::InvalidEndpoint {
                reason: "no endpoint to try",
            });
            return;
        };
        self.next = Some(Action::Fetch(FetchRequest { url, trust }));
    }

    fn fail(&mut self, err: Error) {
        self.phase = Phase::Finished;
        self.next = Some(Action::Failed(err));
    }

    fn done(&mut self, found: Discovered) {
        self.phase = Phase::Finished;
        self.next = Some(Action::Done(Box::new(found)));
    }

    /// Record a retryable failure: try the next target of this round now, else wait.
    fn retry(&mut self, now: SystemTime, mut poll: Box<Poll>, carry: Box<Carry>, err: Error) {
        let n_targets = self.targets(poll.stage, &carry).len().max(1);
        poll.last_error = Some(err);
        poll.tried = poll.tried.saturating_add(1);
        poll.target = poll
            .target
            .checked_add(1)
            .and_then(|t| t.checked_rem(n_targets))
            .unwrap_or(0);
        if now >= poll.deadline {
            let last = poll.last_error.take().unwrap_or(Error::NoCertificates);
            self.fail(Error::TimedOut {
                last: Box::new(last),
            });
            return;
        }
        if poll.tried < n_targets {
            self.phase = Phase::Polling(poll, carry);
            self.issue_fetch();
            return;
        }
        let at = now
            .checked_add(self.retry_interval)
            .unwrap_or(poll.deadline);
        if at >= poll.deadline {
            let last = poll.last_error.take().unwrap_or(Error::NoCertificates);
            self.fail(Error::TimedOut {
                last: Box::new(last),
            });
            return;
        }
        poll.wake_at = Some(at);
        self.phase = Phase::Polling(poll, carry);
        self.next = Some(Action::WakeAt(at));
    }

    fn poll_response(
        &mut self,
        now: SystemTime,
        poll: Box<Poll>,
        carry: Box<Carry>,
        response: Response<'_>,
    ) {
        let cm = match read_configmap(response) {
            Ok(cm) => cm,
            Err(Error::Fetch {
                status: Some(403), ..
            }) if poll.stage == Stage::FileRefresh => {
                // kubeadm: Forbidden means the file is used as-is.
                let info = carry.file.clone();
                return match info {
                    Some(info) => self.done(Discovered {
                        cluster_info: info,
                        kubeconfig: None,
                        endpoint: None,
                        warnings: vec![
                            "cluster-info is forbidden; using the discovery file as-is".to_owned(),
                        ],
                    }),
                    None => self.fail(Error::MissingKubeconfig),
                };
            }
            Err(e) => return self.retry(now, poll, carry, e),
        };
        match poll.stage {
            Stage::TokenFirst | Stage::TokenSecond => {
                let Mode::Token(cfg) = &self.mode else {
                    return;
                };
                let id = *cfg.token.id();
                if cm.signature(id).is_none() {
                    let e = Error::SignatureNotFound {
                        token_id: id.to_string(),
                    };
                    return self.retry(now, poll, carry, e);
                }
                if poll.stage == Stage::TokenFirst {
                    self.token_first(now, poll.target, carry, &cm);
                } else {
                    self.token_second(poll.target, carry, &cm);
                }
            }
            Stage::FileRefresh => self.file_refresh(carry, &cm),
        }
    }

    fn token_first(
        &mut self,
        now: SystemTime,
        target: usize,
        mut carry: Box<Carry>,
        cm: &ClusterInfoConfigMap,
    ) {
        let Mode::Token(cfg) = &self.mode else {
            return;
        };
        let checked = cm
            .verify(&cfg.token)
            .map(str::to_owned)
            .and_then(|kubeconfig| {
                let info = ClusterInfo::parse(kubeconfig.as_bytes())?;
                Ok((kubeconfig, info))
            });
        let (kubeconfig, info) = match checked {
            Ok(v) => v,
            Err(e) => return self.fail(e),
        };
        let endpoint = cfg.endpoints.get(target).cloned();
        if cfg.pins.is_empty() {
            // kubeadm's unsafe path: the JWS alone, no second fetch.
            return self.done(Discovered {
                cluster_info: info,
                kubeconfig: Some(kubeconfig),
                endpoint,
                warnings: Vec::new(),
            });
        }
        let Some(bundle) = info.ca_bundle().cloned() else {
            return self.fail(Error::NoCertificates);
        };
        if let Err(e) = cfg.pins.check_any(&bundle) {
            return self.fail(e);
        }
        carry.first_kubeconfig = Some(kubeconfig);
        carry.bundle = Some(bundle);
        self.phase = Phase::Polling(
            Box::new(Poll {
                stage: Stage::TokenFirst,
                deadline: now,
                target,
                tried: 0,
                last_error: None,
                wake_at: None,
            }),
            carry,
        );
        self.begin_poll(now, Stage::TokenSecond, target);
    }

    fn token_second(&mut self, target: usize, carry: Box<Carry>, cm: &ClusterInfoConfigMap) {
        let Mode::Token(cfg) = &self.mode else {
            return;
        };
        let first = carry.first_kubeconfig.as_deref().unwrap_or_default();
        if cm.kubeconfig() != Some(first) {
            return self.fail(Error::SecondFetchDiffers);
        }
        let endpoint = cfg.endpoints.get(target).cloned();
        match ClusterInfo::parse(first.as_bytes()) {
            Ok(info) => self.done(Discovered {
                cluster_info: info,
                kubeconfig: Some(first.to_owned()),
                endpoint,
                warnings: Vec::new(),
            }),
            Err(e) => self.fail(e),
        }
    }

    fn file_loaded(&mut self, now: SystemTime, info: ClusterInfo) {
        let Mode::File(f) = &self.mode else {
            return;
        };
        if f.0.refresh == Refresh::Never {
            return self.done(Discovered {
                cluster_info: info,
                kubeconfig: None,
                endpoint: None,
                warnings: Vec::new(),
            });
        }
        self.phase = Phase::Polling(
            Box::new(Poll {
                stage: Stage::FileRefresh,
                deadline: now,
                target: 0,
                tried: 0,
                last_error: None,
                wake_at: None,
            }),
            Box::new(Carry {
                file: Some(info),
                ..Carry::default()
            }),
        );
        self.begin_poll(now, Stage::FileRefresh, 0);
    }

    fn file_refresh(&mut self, carry: Box<Carry>, cm: &ClusterInfoConfigMap) {
        let Some(mut file) = carry.file else {
            return self.fail(Error::MissingKubeconfig);
        };
        let mut warnings = Vec::new();
        let refreshed = cm
            .kubeconfig()
            .filter(|k| !k.is_empty())
            .map(|k| ClusterInfo::parse(k.as_bytes()));
        match refreshed {
            None => warnings
                .push("cluster-info has no kubeconfig; using the discovery file as-is".to_owned()),
            Some(Err(_)) => {
                warnings.push(
                    "cluster-info's kubeconfig is unusable; using the discovery file as-is"
                        .to_owned(),
                );
            }
            Some(Ok(ci)) => {
                if ci.server() != file.server() {
                    warnings.push(format!(
                        "the discovery file's server {} differs from cluster-info's {}; keeping the file's",
                        file.server(),
                        ci.server()
                    ));
                }
                if file.trust() == &Trust::SystemRoots
                    && let Some(b) = ci.ca_bundle()
                {
                    file = file.with_trust_from(b.clone());
                }
            }
        }
        self.done(Discovered {
            cluster_info: file,
            kubeconfig: None,
            endpoint: None,
            warnings,
        });
    }

    fn url_response(&mut self, now: SystemTime, response: Response<'_>) {
        let url = match &self.mode {
            Mode::File(f) => f.1.clone().unwrap_or_default(),
            Mode::Token(_) => String::new(),
        };
        match response {
            Response::TransportError(e) => {
                self.fail(Error::Fetch {
                    status: None,
                    detail: bounded(e, 256),
                });
            }
            Response::Http { status, .. } if status != 200 => {
                self.fail(Error::DiscoveryUrlStatus { url, status });
            }
            Response::Http { body, .. } => match ClusterInfo::parse(body) {
                Ok(info) => self.file_loaded(now, info),
                Err(e) => self.fail(e),
            },
        }
    }
}

/// Turn a response into a ConfigMap, or the error a retry records.
fn read_configmap(response: Response<'_>) -> Result<ClusterInfoConfigMap, Error> {
    match response {
        Response::TransportError(e) => Err(Error::Fetch {
            status: None,
            detail: bounded(e, 256),
        }),
        Response::Http { body, .. } if body.len() > MAX_RESPONSE_BYTES => Err(Error::Fetch {
            status: None,
            detail: format!("response body larger than {MAX_RESPONSE_BYTES} bytes"),
        }),
        Response::Http { status: 200, body } => {
            ClusterInfoConfigMap::from_json(body).map_err(|e| Error::Fetch {
                status: Some(200),
                detail: e.to_string(),
            })
        }
        Response::Http { status, body } => Err(Error::Fetch {
            status: Some(status),
            detail: status_detail(status, body),
        }),
    }
}

/// The `message` of a `metav1.Status` body, bounded, else the status code.
fn status_detail(status: u16, body: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Status {
        message: Option<String>,
    }
    let message = serde_json::from_slice::<Status>(body)
        .ok()
        .and_then(|s| s.message);
    match message {
        Some(m) => format!(
            "the server responded with status {status}: {}",
            bounded(&m, 256)
        ),
        None => format!("the server responded with status {status}"),
    }
}
