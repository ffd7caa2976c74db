//! The certificate manager: keeps one node certificate (the kubelet's client or serving
//! certificate) current for as long as it runs.
//!
//! What client-go's certificate manager (`k8s.io/client-go/util/certificate`, the kubelet's
//! `--rotate-certificates` and `serverTLSBootstrap`) does: it loads the pair from its store,
//! and in a loop waits until the rotation deadline (70 % to 90 % of the lifetime, drawn once
//! per certificate) or until the template changes, then generates a new key, files a
//! `CertificateSigningRequest` (`generateName: csr-`) with the client its `ClientsetFn` gives
//! for the current certificate (the kubelet's falls back to the bootstrap kubeconfig when the
//! certificate is missing or expired), waits up to 15 minutes for the certificate, stores it
//! (the file layout of [`CertificateStore`]), makes it the one `Current()` returns, and backs
//! off after a failure (2, 4, 8, 16 s, then every 32 s). It exports the certificate's
//! expiration as a gauge.
//!
//! What we do: the same loop, with every decision taken by the `tls-bootstrap` core
//! ([`rotation::next_step`], [`rotation::request_credential`], [`rotation::retry_delay`],
//! [`rotation::abandon_pending_request`]); the clock is the system's and the jitter comes from
//! the OS random source. The pair in use is published on a [`tokio::sync::watch`] channel
//! ([`Manager::subscribe`]) as a [`Snapshot`], which also carries the expiration (for a
//! gauge), the count of rotations and the last failure. The template comes from a watch
//! channel too, so a changed address list files a new serving request at once, and abandons a
//! request still pending for the old one. An issued certificate is installed only if it holds
//! the new key, is valid now and satisfies the template. Differences from client-go: a
//! `-current.pem` that is a regular file (the user's) is never replaced; the manager keeps
//! using it and reports the failure instead of filing requests it could not install; with no
//! credential that can work (certificate expired, bootstrap credential absent or expired) no
//! request is filed and the failure says so. Logs: each rotation at info (subject, `notAfter`,
//! the file written), each failure at warn with its reason; never a key.
//!
//! ```no_run
//! # async fn demo(config: k8s_bootstrap::kube::Config, bootstrap: k8s_bootstrap::kube::Client)
//! # -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_bootstrap::node_certificates::{CertificateKind, CertificateStore, Clients, Manager};
//! use k8s_bootstrap::tls_bootstrap::rotation::Bootstrap;
//!
//! let store = CertificateStore::new("kubelet-client", "/var/lib/kubelet/pki")?;
//! let kind = CertificateKind::Client { node: "worker-1".parse()? };
//! let clients = Clients::from_config(config).with_bootstrap(bootstrap, Bootstrap::Present);
//! let (_templates, templates) = tokio::sync::watch::channel(Some(kind));
//! let manager = Manager::new(store, clients, templates);
//! let mut current = manager.subscribe();
//! tokio::spawn(manager.run());
//! current.wait_for(|s| s.pair().is_some()).await?;
//! # Ok(()) }
//! ```

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::certificates::v1::CertificateSigningRequest as ApiCsr;
use kube::api::{Api, PostParams};
use tls_bootstrap::rotation::{self, Bootstrap, Credential, CurrentCertificate, Step, Template};
use tls_bootstrap::{
    CertificateRequest, CertificateSigningRequest, KUBELET_CLIENT_SIGNER, KUBELET_SERVING_SIGNER,
    KeyUsage, NodeKey, NodeName,
};
use tokio::sync::watch;

use super::{CertificateStore, LoadedPair};

/// How long one request waits for its certificate (client-go's `certificateWaitTimeout`).
pub const CERTIFICATE_WAIT_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// Which certificate the manager keeps, and what it asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CertificateKind {
    /// The kubelet's client certificate (`kubernetes.io/kube-apiserver-client-kubelet`):
    /// `O=system:nodes, CN=system:node:<node>`.
    Client {
        /// The node.
        node: NodeName,
    },
    /// The kubelet's serving certificate (`kubernetes.io/kubelet-serving`), for these DNS
    /// names and IP addresses (see [`CertificateRequest::for_node_serving`]).
    Serving {
        /// The node.
        node: NodeName,
        /// The DNS names (hostnames, the hostname override).
        dns_names: Vec<String>,
        /// The node's addresses.
        ip_addresses: Vec<IpAddr>,
    },
}

impl CertificateKind {
    /// What the certificate must say (client-go's template).
    #[must_use]
    pub fn template(&self) -> Template {
        match self {
            CertificateKind::Client { node } => {
                Template::new(&node.user_name()).with_organizations(&[tls_bootstrap::NODES_GROUP])
            }
            CertificateKind::Serving {
                node,
                dns_names,
                ip_addresses,
            } => Template::new(&node.user_name())
                .with_organizations(&[tls_bootstrap::NODES_GROUP])
                .with_dns_names(dns_names)
                .with_ip_addresses(ip_addresses),
        }
    }

    /// The signer asked for.
    #[must_use]
    pub fn signer_name(&self) -> &'static str {
        match self {
            CertificateKind::Client { .. } => KUBELET_CLIENT_SIGNER,
            CertificateKind::Serving { .. } => KUBELET_SERVING_SIGNER,
        }
    }

    fn request(&self, key: &NodeKey) -> Result<CertificateRequest, tls_bootstrap::Error> {
        match self {
            CertificateKind::Client { node } => CertificateRequest::for_node(node, key),
            CertificateKind::Serving {
                node,
                dns_names,
                ip_addresses,
            } => {
                let names: Vec<&str> = dns_names.iter().map(String::as_str).collect();
                CertificateRequest::for_node_serving(node, key, &names, ip_addresses)
            }
        }
    }

    fn usages(&self, request: &CertificateRequest) -> &'static [KeyUsage] {
        match self {
            CertificateKind::Client { .. } => {
                tls_bootstrap::kubelet_client_usages(request.key_type())
            }
            CertificateKind::Serving { .. } => {
                tls_bootstrap::kubelet_serving_usages(request.key_type())
            }
        }
    }
}

/// Builds the client for requests made with the current certificate (client-go's
/// `ClientsetFn`); the message of its error is logged.
pub type CurrentClientFn =
    Arc<dyn Fn(&LoadedPair) -> Result<kube::Client, String> + Send + Sync + 'static>;

/// The clients the manager files its requests with.
#[derive(Clone)]
pub struct Clients {
    current: CurrentClientFn,
    bootstrap: Option<(kube::Client, Bootstrap)>,
}

impl Clients {
    /// Requests made with the current certificate use the client `current` builds for it;
    /// there is no bootstrap credential.
    pub fn new(
        current: impl Fn(&LoadedPair) -> Result<kube::Client, String> + Send + Sync + 'static,
    ) -> Clients {
        Clients {
            current: Arc::new(current),
            bootstrap: None,
        }
    }

    /// Requests made with the current certificate use `config` (the API server and its CA)
    /// authenticating with the pair ([`client_for_pair`]).
    #[must_use]
    pub fn from_config(config: kube::Config) -> Clients {
        Clients::new(move |pair| client_for_pair(&config, pair).map_err(|e| e.to_string()))
    }

    /// With a bootstrap client (the kubelet's `--bootstrap-kubeconfig`), used when there is no
    /// valid certificate, valid as `validity` says.
    #[must_use]
    pub fn with_bootstrap(mut self, client: kube::Client, validity: Bootstrap) -> Clients {
        self.bootstrap = Some((client, validity));
        self
    }
}

impl std::fmt::Debug for Clients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clients")
            .field("bootstrap", &self.bootstrap.as_ref().map(|(_, v)| v))
            .finish_non_exhaustive()
    }
}

/// A failure of one rotation, as the manager reports it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManagerError {
    /// Loading or storing the pair failed.
    #[error(transparent)]
    Store(#[from] super::Error),
    /// No credential can make the request: the certificate is missing or expired, and there is
    /// no valid bootstrap credential.
    #[error(
        "no valid credential: the certificate is missing or expired and no valid bootstrap credential was given"
    )]
    NoCredential,
    /// The client for the current certificate could not be built.
    #[error("couldn't build a client for the current certificate: {0}")]
    Client(String),
    /// Generating the key or building the request failed.
    #[error("couldn't build the certificate signing request: {0}")]
    Request(#[source] tls_bootstrap::Error),
    /// Filing the request failed.
    #[error("couldn't create the certificate signing request: {0}")]
    Create(#[source] kube::Error),
    /// Waiting for the certificate failed (denied, failed, deleted, timed out...).
    #[error(transparent)]
    Wait(crate::csr::Error),
    /// The template changed while the request was pending; a request for the new one follows.
    #[error("the template changed while certificate signing request {name} was pending")]
    Abandoned {
        /// The request's name.
        name: String,
    },
    /// The manager's template channel was closed.
    #[error("the template channel was closed")]
    TemplatesClosed,
}

/// What the manager publishes: the pair in use and how rotation goes.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pair: Option<Arc<LoadedPair>>,
    rotations: u64,
    renew_errors: u64,
    failed_attempts: u32,
    last_failure: Option<Arc<str>>,
    last_written: Option<PathBuf>,
    pending_request: Option<Arc<str>>,
}

impl Snapshot {
    /// The pair in use (client-go's `Current()`), `None` until there is one.
    #[must_use]
    pub fn pair(&self) -> Option<&Arc<LoadedPair>> {
        self.pair.as_ref()
    }

    /// The `notAfter` of the certificate in use (client-go's expiration gauge).
    #[must_use]
    pub fn expiration(&self) -> Option<SystemTime> {
        self.pair.as_ref().map(|p| p.certificate().not_after())
    }

    /// The kubelet's `certificate_manager_{client,server}_ttl_seconds` at `now`: the seconds
    /// from `now` to the `notAfter` of the certificate in use, truncated toward zero (negative
    /// once it has expired); `+∞` without a certificate (see
    /// [`CertificateMetrics`](super::CertificateMetrics)).
    #[must_use]
    #[allow(
        clippy::cast_precision_loss,
        reason = "a lifetime in seconds is far below 2^53"
    )]
    pub fn ttl_seconds(&self, now: SystemTime) -> f64 {
        self.ttl_whole_seconds(now)
            .map_or(f64::INFINITY, |s| s as f64)
    }

    /// Whole seconds from `now` to the `notAfter` of the certificate in use, truncated toward
    /// zero; `None` without a certificate.
    pub(super) fn ttl_whole_seconds(&self, now: SystemTime) -> Option<i64> {
        let not_after = self.expiration()?;
        Some(match not_after.duration_since(now) {
            Ok(left) => i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
            Err(past) => i64::try_from(past.duration().as_secs())
                .ok()
                .and_then(i64::checked_neg)
                .unwrap_or(i64::MIN),
        })
    }

    /// How many certificates this manager installed (the `_rotations_total` counter of
    /// [`CertificateMetrics`](super::CertificateMetrics)).
    #[must_use]
    pub fn rotations(&self) -> u64 {
        self.rotations
    }

    /// How many attempts to get a new certificate failed since the manager started (the
    /// kubelet's `certificate_manager_client_expiration_renew_errors` and
    /// `server_expiration_renew_errors` counters): each failure [`Manager::run`] logs and
    /// retries counts once, a request abandoned for a changed template included.
    #[must_use]
    pub fn renew_errors(&self) -> u64 {
        self.renew_errors
    }

    /// Consecutive failed attempts since the last success (0 after one).
    #[must_use]
    pub fn failed_attempts(&self) -> u32 {
        self.failed_attempts
    }

    /// Why the last attempt failed, if it did (cleared by a success).
    #[must_use]
    pub fn last_failure(&self) -> Option<&str> {
        self.last_failure.as_deref()
    }

    /// The pair file this manager wrote last.
    #[must_use]
    pub fn last_written(&self) -> Option<&std::path::Path> {
        self.last_written.as_deref()
    }

    /// Records a failed attempt: `failures` consecutive ones so far, the last for `reason`.
    pub(super) fn record_failure(&mut self, failures: u32, reason: Arc<str>) {
        self.renew_errors = self.renew_errors.saturating_add(1);
        self.failed_attempts = failures;
        self.last_failure = Some(reason);
    }

    /// Records an installed certificate, written to `written`.
    pub(super) fn record_rotation(&mut self, written: PathBuf) {
        self.rotations = self.rotations.saturating_add(1);
        self.last_written = Some(written);
    }

    /// The name of the certificate signing request filed and not yet decided, while the
    /// manager waits for it (what an administrator approves with `kubectl certificate approve
    /// <name>`); `None` otherwise.
    #[must_use]
    pub fn pending_request(&self) -> Option<&str> {
        self.pending_request.as_deref()
    }
}

/// Keeps one certificate current (see the module docs). Run it with [`Manager::run`]; read
/// what it publishes with [`Manager::subscribe`].
#[derive(Debug)]
pub struct Manager {
    store: CertificateStore,
    clients: Clients,
    templates: watch::Receiver<Option<CertificateKind>>,
    wait_timeout: Duration,
    expiration: Option<Duration>,
    published: watch::Sender<Snapshot>,
}

impl Manager {
    /// A manager for the pair in `store`, filing requests with `clients`, for the kind of
    /// certificate `templates` holds (`None`: nothing is requested until it holds one).
    #[must_use]
    pub fn new(
        store: CertificateStore,
        clients: Clients,
        templates: watch::Receiver<Option<CertificateKind>>,
    ) -> Manager {
        Manager {
            store,
            clients,
            templates,
            wait_timeout: CERTIFICATE_WAIT_TIMEOUT,
            expiration: None,
            published: watch::Sender::new(Snapshot::default()),
        }
    }

    /// How long one request waits for its certificate (default
    /// [`CERTIFICATE_WAIT_TIMEOUT`]).
    #[must_use]
    pub fn with_wait_timeout(mut self, timeout: Duration) -> Manager {
        self.wait_timeout = timeout;
        self
    }

    /// `spec.expirationSeconds` of each request (at least 600 s; default none, the signer's
    /// choice, as the kubelet asks).
    #[must_use]
    pub fn with_expiration(mut self, expiration: Duration) -> Manager {
        self.expiration = Some(expiration);
        self
    }

    /// What the manager publishes, from now on.
    #[must_use]
    pub fn subscribe(&self) -> watch::Receiver<Snapshot> {
        self.published.subscribe()
    }

    /// Runs the loop until the template channel closes (every sender dropped), or until the
    /// future is dropped. Failures are retried with backoff, never returned.
    ///
    /// # Errors
    ///
    /// [`ManagerError::TemplatesClosed`] when the template channel closes.
    pub async fn run(mut self) -> Result<(), ManagerError> {
        let mut jitter = draw_jitter();
        let mut failures: u32 = 0;
        loop {
            let pause = match self.step(&mut jitter).await {
                Ok(Pause::Until(at)) => {
                    failures = 0;
                    Some(at.duration_since(crate::clock::now()).unwrap_or_default())
                }
                Ok(Pause::ForTemplate) => None,
                Ok(Pause::No) => {
                    failures = 0;
                    self.published.send_modify(|s| {
                        s.failed_attempts = 0;
                        s.last_failure = None;
                    });
                    continue;
                }
                Err(ManagerError::TemplatesClosed) => return Err(ManagerError::TemplatesClosed),
                Err(e) => {
                    failures = failures.saturating_add(1);
                    let delay = rotation::retry_delay(failures, draw_jitter());
                    tracing::warn!(
                        pair = %self.store.current_path().display(),
                        attempt = failures,
                        retry_in = ?delay,
                        error = %e,
                        "certificate rotation failed"
                    );
                    let reason: Arc<str> = Arc::from(e.to_string());
                    self.published
                        .send_modify(|s| s.record_failure(failures, reason));
                    Some(delay)
                }
            };
            let changed = self.templates.changed();
            match pause {
                Some(d) => {
                    tokio::select! {
                        () = tokio::time::sleep(d) => {}
                        r = changed => r.map_err(|_| ManagerError::TemplatesClosed)?,
                    }
                }
                None => changed.await.map_err(|_| ManagerError::TemplatesClosed)?,
            }
        }
    }

    /// One turn: load, publish, decide, and rotate if the core says so.
    async fn step(&mut self, jitter: &mut f64) -> Result<Pause, ManagerError> {
        let loaded = self.store.load()?.map(Arc::new);
        self.publish(loaded.as_ref());
        let kind = self.templates.borrow_and_update().clone();
        let template = kind.as_ref().map(CertificateKind::template);
        let current = loaded.as_ref().map(|p| p.certificate());
        let bootstrap = self
            .clients
            .bootstrap
            .as_ref()
            .map_or(Bootstrap::Absent, |(_, b)| *b);
        let now = crate::clock::now();
        let (reason, credential) =
            match rotation::next_step(current, template.as_ref(), bootstrap, now, *jitter) {
                Step::WaitUntil { at } => return Ok(Pause::Until(at)),
                Step::Rotate { reason, credential } => (reason, credential),
                _ => return Ok(Pause::ForTemplate),
            };
        let Some(kind) = kind else {
            return Ok(Pause::ForTemplate);
        };
        // A `-current.pem` the store would not replace: say so before filing anything.
        let link = self.store.current_path();
        if std::fs::symlink_metadata(&link).is_ok_and(|m| !m.file_type().is_symlink()) {
            return Err(super::Error::NotASymlink { path: link }.into());
        }
        let client = match credential {
            Credential::Current => {
                let pair = loaded.as_ref().ok_or(ManagerError::NoCredential)?;
                (self.clients.current)(pair).map_err(ManagerError::Client)?
            }
            Credential::Bootstrap => match &self.clients.bootstrap {
                Some((client, _)) => client.clone(),
                None => return Err(ManagerError::NoCredential),
            },
            _ => return Err(ManagerError::NoCredential),
        };
        tracing::info!(
            pair = %link.display(),
            reason = ?reason,
            credential = ?credential,
            "requesting a new certificate"
        );
        let (pem, name) = self.request(&client, &kind, current).await?;
        // Pair files are named to the second: a second rotation within one waits for the next.
        let mut collisions = 0u32;
        let written = loop {
            match self.store.update(pem.as_bytes(), crate::clock::now()) {
                Err(super::Error::PairFileExists { .. }) if collisions < 2 => {
                    collisions = collisions.saturating_add(1);
                    tokio::time::sleep(until_next_second(crate::clock::now())).await;
                }
                result => break result?,
            }
        };
        let installed = self.store.load()?.map(Arc::new);
        if let Some(pair) = &installed {
            let cert = pair.certificate();
            tracing::info!(
                csr = %name,
                subject = %cert.common_name(),
                not_after = %tls_bootstrap::rfc3339(cert.not_after()),
                file = %written.display(),
                "certificate rotated"
            );
        }
        *jitter = draw_jitter();
        self.published.send_modify(|s| s.record_rotation(written));
        self.publish(installed.as_ref());
        Ok(Pause::No)
    }

    /// Files a request for `kind` with a fresh key and waits for its certificate; the new
    /// pair's PEM (the chain, then the key) and the request's name.
    async fn request(
        &mut self,
        client: &kube::Client,
        kind: &CertificateKind,
        current: Option<&CurrentCertificate>,
    ) -> Result<(zeroize::Zeroizing<String>, String), ManagerError> {
        let key = NodeKey::generate().map_err(ManagerError::Request)?;
        let request = kind.request(&key).map_err(ManagerError::Request)?;
        let template = kind.template();
        let mut builder = CertificateSigningRequest::builder(request.to_pem(), kind.signer_name())
            .usages(kind.usages(&request));
        if let Some(expiration) = self.expiration {
            let seconds = i32::try_from(expiration.as_secs()).unwrap_or(i32::MAX);
            builder = builder.expiration_seconds(seconds);
        }
        let mut object = builder.build();
        object.metadata.other.insert(
            "generateName".to_owned(),
            serde_json::Value::String("csr-".to_owned()),
        );
        let typed = ApiCsr::try_from(&object).map_err(ManagerError::Request)?;
        let api: Api<ApiCsr> = Api::all(client.clone());
        let created = api
            .create(&PostParams::default(), &typed)
            .await
            .map_err(ManagerError::Create)?;
        let name = created.metadata.name.clone().unwrap_or_default();
        tracing::info!(csr = %name, signer = kind.signer_name(), "certificate signing request filed");
        let pending: Arc<str> = Arc::from(name.as_str());
        self.published
            .send_modify(|s| s.pending_request = Some(pending));
        let accept = |pem: &[u8]| accept_issued(pem, &key, &template);
        let wait = crate::csr::wait_for_certificate(
            &api,
            &name,
            created.metadata.uid.as_deref(),
            &accept,
            &|_| {},
        );
        let templates = &mut self.templates;
        let abandon = async {
            loop {
                if templates.changed().await.is_err() {
                    return ManagerError::TemplatesClosed;
                }
                let new = templates.borrow().as_ref().map(CertificateKind::template);
                if rotation::abandon_pending_request(current, Some(&template), new.as_ref()) {
                    return ManagerError::Abandoned { name: name.clone() };
                }
            }
        };
        let waited = tokio::select! {
            r = tokio::time::timeout(self.wait_timeout, wait) => match r {
                Ok(pem) => pem.map_err(ManagerError::Wait),
                Err(_) => Err(ManagerError::Wait(crate::csr::Error::Timeout {
                    name: name.clone(),
                    after: self.wait_timeout,
                })),
            },
            e = abandon => Err(e),
        };
        self.published.send_modify(|s| s.pending_request = None);
        Ok((waited?, name))
    }

    fn publish(&self, pair: Option<&Arc<LoadedPair>>) {
        self.published.send_if_modified(|s| {
            let same = match (&s.pair, pair) {
                (Some(a), Some(b)) => a.certificate_chain_der() == b.certificate_chain_der(),
                (None, None) => true,
                _ => false,
            };
            if !same {
                s.pair = pair.cloned();
            }
            !same
        });
    }
}

/// A `kube::Client` for `config`'s API server that authenticates with `pair` (its
/// certificate chain and key as client certificate data; any other credential of `config` is
/// dropped).
///
/// # Errors
///
/// [`ManagerError::Request`] when the key cannot be encoded, [`ManagerError::Client`] when
/// kube refuses the configuration.
pub fn client_for_pair(
    config: &kube::Config,
    pair: &LoadedPair,
) -> Result<kube::Client, ManagerError> {
    use base64::Engine as _;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let chain: String = pair
        .certificate_chain_der()
        .iter()
        .map(|der| pem_block(der))
        .collect();
    let key_pem = pair.key().to_pem().map_err(ManagerError::Request)?;
    let key_b64 = zeroize::Zeroizing::new(b64(key_pem.as_bytes()));
    let chain_b64 = b64(chain.as_bytes());
    // The AuthInfo is read from JSON text built in one zeroized buffer, sized up front so that
    // it never grows (a grown String leaves its old buffer behind, unzeroized). kube keeps the
    // key as a SecretString, zeroized on drop; no other copy of it is made (a
    // serde_json::Value would be one).
    let parts = [
        r#"{"client-certificate-data":""#,
        chain_b64.as_str(),
        r#"","client-key-data":""#,
        key_b64.as_str(),
        r#""}"#,
    ];
    let size = parts.iter().map(|p| p.len()).fold(0, usize::saturating_add);
    let mut json = zeroize::Zeroizing::new(String::with_capacity(size));
    for part in parts {
        json.push_str(part);
    }
    // Base64 needs no JSON escaping. The parser's message is dropped: it could quote the key.
    let auth_info: kube::config::AuthInfo = serde_json::from_str(&json)
        .map_err(|_| ManagerError::Client("couldn't build the client credentials".to_owned()))?;
    let mut config = config.clone();
    config.auth_info = auth_info;
    kube::Client::try_from(config).map_err(|e| ManagerError::Client(e.to_string()))
}

/// What the loop does after a turn.
enum Pause {
    /// Sleep until this instant (or a template change).
    Until(SystemTime),
    /// Wait for a template.
    ForTemplate,
    /// Go round again at once (a certificate was installed).
    No,
}

/// The issued certificate is installed only if it holds `key`, is valid now and satisfies
/// `template`; the pair's PEM, the chain then the key.
fn accept_issued(
    pem: &[u8],
    key: &NodeKey,
    template: &Template,
) -> Result<zeroize::Zeroizing<String>, tls_bootstrap::Error> {
    let blocks = tls_bootstrap::go_pem_blocks(pem, tls_bootstrap::MAX_CHAIN_CERTIFICATES);
    let leaf =
        blocks
            .iter()
            .find(|b| b.label() == "CERTIFICATE")
            .ok_or(tls_bootstrap::Error::Pem {
                what: "certificate",
                reason: "no CERTIFICATE PEM block",
            })?;
    let cert = CurrentCertificate::from_der(leaf.der())?;
    if cert.public_key_der() != key.public_key_der() {
        return Err(tls_bootstrap::Error::WrongKey);
    }
    let now = crate::clock::now();
    if now < cert.not_before() {
        return Err(tls_bootstrap::Error::NotYetValid);
    }
    if cert.is_expired(now) {
        return Err(tls_bootstrap::Error::Expired);
    }
    if rotation::satisfies_template(Some(&cert), Some(template)).is_err() {
        return Err(tls_bootstrap::Error::WrongSubject);
    }
    let key_pem = key.to_pem()?;
    let mut out = zeroize::Zeroizing::new(String::new());
    for block in blocks.iter().filter(|b| b.label() == "CERTIFICATE") {
        out.push_str(&pem_block(block.der()));
    }
    out.push_str(&key_pem);
    Ok(out)
}

fn pem_block(der: &[u8]) -> String {
    use base64::Engine as _;
    let text = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    let mut rest = text.as_str();
    while !rest.is_empty() {
        let (line, tail) = rest.split_at(rest.len().min(64));
        out.push_str(line);
        out.push('\n');
        rest = tail;
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

/// How long from `now` to the next whole second of the Unix clock.
fn until_next_second(now: SystemTime) -> Duration {
    let nanos = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    Duration::from_nanos(u64::from(1_000_000_000_u32.saturating_sub(nanos)))
}

/// A uniform draw from `[0, 1)` from the OS random source (0 if it fails, the earliest
/// deadline and the shortest backoff).
#[allow(
    clippy::cast_precision_loss,
    reason = "53 random bits fit an f64 mantissa exactly"
)]
fn draw_jitter() -> f64 {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        return 0.0;
    }
    // The top 53 bits, over 2^53.
    let bits = u64::from_le_bytes(bytes).checked_shr(11).unwrap_or(0);
    bits as f64 / 9_007_199_254_740_992.0
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::{CertificateKind, accept_issued, draw_jitter, until_next_second};

    #[test]
    fn the_next_second_is_at_most_a_second_away() {
        let at = |nanos| SystemTime::UNIX_EPOCH + Duration::new(1_800_000_000, nanos);
        assert_eq!(until_next_second(at(0)), Duration::from_secs(1));
        assert_eq!(until_next_second(at(999_999_999)), Duration::from_nanos(1));
        assert_eq!(
            until_next_second(at(250_000_000)),
            Duration::from_millis(750)
        );
    }

    #[test]
    fn jitter_is_in_the_unit_interval_and_varies() {
        let draws: Vec<f64> = (0..64).map(|_| draw_jitter()).collect();
        assert!(draws.iter().all(|j| (0.0..1.0).contains(j)));
        assert!(draws.windows(2).any(|w| w.first() != w.get(1)));
    }

    #[test]
    fn a_serving_template_holds_the_names_and_addresses() {
        let kind = CertificateKind::Serving {
            node: "worker-1".parse().unwrap(),
            dns_names: vec!["worker-1.example".to_owned()],
            ip_addresses: vec!["10.0.0.5".parse().unwrap()],
        };
        let template = kind.template();
        assert_eq!(template.common_name(), "system:node:worker-1");
        assert_eq!(template.organizations(), ["system:nodes"]);
        assert_eq!(template.dns_names(), ["worker-1.example"]);
        assert_eq!(kind.signer_name(), "kubernetes.io/kubelet-serving");
    }

    #[test]
    fn an_issued_certificate_without_a_certificate_block_is_refused() {
        let key = tls_bootstrap::NodeKey::generate().unwrap();
        let kind = CertificateKind::Client {
            node: "worker-1".parse().unwrap(),
        };
        let key_pem = key.to_pem().unwrap();
        let refused = accept_issued(key_pem.as_bytes(), &key, &kind.template());
        assert!(refused.is_err());
    }
}
