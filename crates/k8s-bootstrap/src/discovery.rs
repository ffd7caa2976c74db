//! The discovery driver: kubeadm's token, file and HTTPS-URL discovery, performed over hyper and
//! rustls. Every decision is [`clusterinfo::Discovery`]'s; this module only does what its
//! [`Action`]s ask: an HTTPS GET with the trust it names, a sleep, and nothing else.
//!
//! * **Token discovery** ([`Source::Token`]): a first GET of `kube-public/cluster-info` that
//!   verifies no server certificate and sends no credentials; the core checks the detached JWS
//!   for the token's ID and the CA pins; a second GET trusts only the pinned CA (not the system
//!   roots), and the core requires the two kubeconfigs to be byte-identical. Equivalent servers
//!   from the cluster extension are tried in order; failed rounds are retried at the
//!   configuration's interval until its timeout.
//! * **File discovery** ([`Source::File`]): the kubeconfig is read from disk (at most
//!   [`MAX_FILE_BYTES`]) and, with [`Refresh::FromClusterInfo`](clusterinfo::Refresh), refreshed
//!   from the cluster's own `cluster-info`, trusting only the file's CA.
//! * **HTTPS-URL discovery** ([`Source::Https`]): the kubeconfig is fetched from an `https://`
//!   URL, verified against the system's trust roots (or the roots given to
//!   [`Discoverer::with_https_roots`]), then handled as file discovery.
//!
//! [`token_to_kubeconfig`] does the common case (token discovery, then the TLS-bootstrap
//! kubeconfig written) in one call.
//!
//! Cancellation is dropping the future. Each GET is bounded by the request timeout (10 seconds
//! by default, never past the discovery's own deadline) and each body by
//! [`clusterinfo::MAX_RESPONSE_BYTES`].
//!
//! ```no_run
//! # async fn join() -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_bootstrap::bootstrap_token::BootstrapToken;
//! use k8s_bootstrap::clusterinfo::{PinSet, TokenDiscoveryConfig};
//! use k8s_bootstrap::discovery::{self, Source};
//! use k8s_bootstrap::files::Existing;
//!
//! let token: BootstrapToken = "abcdef.0123456789abcdef".parse()?;
//! let mut pins = PinSet::new();
//! pins.allow("sha256:7c8b6f1e0c1e2b7d9f3a4e5d6c7b8a9f0e1d2c3b4a5968778695a4b3c2d1e0f9")?;
//! let config = TokenDiscoveryConfig::new("10.0.0.1:6443", token.clone())?.with_pins(pins);
//!
//! let found = discovery::discover(Source::Token(config)).await?;
//! let kubeconfig = found.cluster_info().tls_bootstrap_kubeconfig(&token);
//! discovery::write_kubeconfig("bootstrap-kubelet.conf", kubeconfig.expose_secret(), Existing::Refuse)?;
//! # Ok(()) }
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use clusterinfo::{
    Action, CaBundle, Discovered, Discovery, FetchRequest, FetchTrust, FileDiscoveryConfig,
    Response, TokenDiscoveryConfig,
};
use http_body_util::{BodyExt as _, Empty};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::clock::now;

/// The largest discovery file read from disk (the core's kubeconfig limit, 1 MiB).
pub const MAX_FILE_BYTES: u64 = 1 << 20;
/// The default bound on one GET, connection and body included.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the cluster's identity comes from, with the core's configuration for it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Source {
    /// Token discovery (kubeadm `discovery.bootstrapToken`).
    Token(TokenDiscoveryConfig),
    /// A kubeconfig file on disk (kubeadm `discovery.file` with a path).
    File {
        /// The file's path.
        kubeconfig: PathBuf,
        /// The core's configuration (refresh, retry interval, timeout).
        config: FileDiscoveryConfig,
    },
    /// A kubeconfig fetched over HTTPS (kubeadm `discovery.file` with an `https://` URL).
    Https {
        /// The URL.
        url: String,
        /// The core's configuration (refresh, retry interval, timeout).
        config: FileDiscoveryConfig,
    },
}

/// Why discovery, or writing its result, failed. Each variant names the step.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The core refused the configuration before any request (no pins without the explicit
    /// opt-in, a URL that is not `https://`, a discovery file that does not parse...).
    #[error("discovery configuration: {0}")]
    Config(#[source] clusterinfo::Error),
    /// Discovery ran and failed: the core's error, which names the check or the last
    /// transport error before the timeout, in kubeadm's words ("couldn't validate the identity
    /// of the API Server: ...").
    #[error("{}", failed_message(.0))]
    Failed(#[source] clusterinfo::Error),
    /// Reading the discovery file failed.
    #[error("reading the discovery file {}: {source}", .path.display())]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The discovery file is larger than [`MAX_FILE_BYTES`].
    #[error("reading the discovery file {}: larger than {MAX_FILE_BYTES} bytes", .path.display())]
    FileTooLarge {
        /// The file.
        path: PathBuf,
    },
    /// No rustls crypto provider: enable the `ring` or `aws-lc-rs` feature, or install a
    /// process default.
    #[error("discovery: no rustls crypto provider (enable `ring` or `aws-lc-rs`)")]
    NoCryptoProvider,
    /// Building a TLS client configuration failed.
    #[error("discovery: building the TLS client configuration: {0}")]
    Tls(#[source] rustls::Error),
    /// Loading the system's trust roots failed.
    #[error("discovery: loading the system trust roots: {0}")]
    SystemRoots(#[source] std::io::Error),
    /// The state machine asked for nothing while unfinished (an action kind this driver does
    /// not know). Not expected with the `clusterinfo` this crate was built with.
    #[error("discovery stalled: the core asked for an action this driver does not perform")]
    Stalled,
    /// Writing the kubeconfig failed.
    #[error("writing {}: {source}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// kubeadm's wording, once (the core's timeout error already says it).
fn failed_message(e: &clusterinfo::Error) -> String {
    const PREFIX: &str = "couldn't validate the identity of the API Server";
    let text = e.to_string();
    if text.starts_with(PREFIX) {
        text
    } else {
        format!("{PREFIX}: {text}")
    }
}

/// Runs discovery with the default options ([`Discoverer::new`]).
///
/// # Errors
///
/// See [`Discoverer::discover`].
pub async fn discover(source: Source) -> Result<Discovered, Error> {
    Discoverer::new().discover(source).await
}

/// Discovery with options: the per-request timeout, the roots for HTTPS-URL discovery, and a
/// function told why each failed attempt failed.
#[derive(Clone)]
pub struct Discoverer {
    request_timeout: Duration,
    https_roots: Option<CaBundle>,
    on_retry: Option<Arc<RetryHook>>,
}

/// What [`Discoverer::on_retry`] calls.
type RetryHook = dyn Fn(&clusterinfo::Error) + Send + Sync;

impl fmt::Debug for Discoverer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Discoverer")
            .field("request_timeout", &self.request_timeout)
            .field("https_roots", &self.https_roots.as_ref().map(CaBundle::len))
            .field("on_retry", &self.on_retry.is_some())
            .finish()
    }
}

impl Default for Discoverer {
    fn default() -> Self {
        Discoverer::new()
    }
}

impl Discoverer {
    /// [`DEFAULT_REQUEST_TIMEOUT`], system roots for HTTPS-URL discovery.
    pub fn new() -> Discoverer {
        Discoverer {
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            https_roots: None,
            on_retry: None,
        }
    }

    /// Bound each GET (connect, TLS, headers and body) by `timeout`. A request that runs out
    /// counts as a transport error: the core retries it until its own deadline.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Discoverer {
        self.request_timeout = timeout;
        self
    }

    /// Verify HTTPS-URL discovery against these roots instead of the system's (for example a
    /// company CA that is not in the system store). Token discovery is not affected: it trusts
    /// only the pinned CA.
    pub fn with_https_roots(mut self, roots: CaBundle) -> Discoverer {
        self.https_roots = Some(roots);
        self
    }

    /// Calls `hook` with the reason each time an attempt has failed and discovery waits to try
    /// again (connection refused, a timeout, a TLS error, 404, no signature for the token
    /// yet...), as kubeadm logs each failed attempt: for a progress line that says why it is
    /// still waiting. The reasons never hold the token's secret.
    #[must_use]
    pub fn on_retry(
        mut self,
        hook: impl Fn(&clusterinfo::Error) + Send + Sync + 'static,
    ) -> Discoverer {
        self.on_retry = Some(Arc::new(hook));
        self
    }

    /// Runs discovery to the end: success, a failed check, or the configuration's timeout.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] before any request, [`Error::ReadFile`]/[`Error::FileTooLarge`] for
    /// file discovery, [`Error::Failed`] with the core's reason, and the TLS set-up errors.
    pub async fn discover(&self, source: Source) -> Result<Discovered, Error> {
        let discovery = match source {
            Source::Token(config) => config.start(now()).map_err(Error::Config)?,
            Source::File { kubeconfig, config } => {
                let bytes = read_bounded(&kubeconfig).await?;
                config.start_file(&bytes, now()).map_err(Error::Config)?
            }
            Source::Https { url, config } => {
                config.start_https(&url, now()).map_err(Error::Config)?
            }
        };
        self.drive(discovery).await
    }

    /// Drives a discovery the caller started with the core's own constructors.
    ///
    /// # Errors
    ///
    /// [`Error::Failed`] with the core's reason, and the TLS set-up errors.
    pub async fn drive(&self, mut discovery: Discovery) -> Result<Discovered, Error> {
        let mut clients = Clients::default();
        loop {
            match discovery.poll_action() {
                Some(Action::Fetch(request)) => {
                    let client = clients.for_trust(request.trust(), self.https_roots.as_ref())?;
                    tracing::debug!(
                        url = request.url(),
                        trust = trust_name(request.trust()),
                        "discovery GET"
                    );
                    let outcome = self.fetch(client, &request).await;
                    match &outcome {
                        Ok((status, body)) => {
                            tracing::debug!(status, bytes = body.len(), "discovery response");
                            discovery.handle_response(
                                now(),
                                Response::Http {
                                    status: *status,
                                    body,
                                },
                            );
                        }
                        Err(reason) => {
                            tracing::debug!(reason = reason.as_str(), "discovery transport error");
                            discovery.handle_response(now(), Response::TransportError(reason));
                        }
                    }
                }
                Some(Action::WakeAt(at)) => {
                    if let (Some(hook), Some(reason)) = (&self.on_retry, discovery.last_error()) {
                        hook(reason);
                    }
                    let wait = at.duration_since(now()).unwrap_or(Duration::ZERO);
                    tracing::debug!(?wait, "discovery waits before retrying");
                    tokio::time::sleep(wait).await;
                    discovery.handle_timeout(now());
                }
                Some(Action::Done(found)) => return Ok(*found),
                Some(Action::Failed(e)) => return Err(Error::Failed(e)),
                // A new action kind, or a machine with nothing to do: neither can make
                // progress, so stop rather than spin.
                Some(_) | None => {
                    return Err(Error::Stalled);
                }
            }
        }
    }

    /// One GET, without credentials; a transport failure or timeout becomes its text.
    async fn fetch(
        &self,
        client: &HttpClient,
        request: &FetchRequest,
    ) -> Result<(u16, Bytes), String> {
        let uri: http::Uri = request
            .url()
            .parse()
            .map_err(|e: http::uri::InvalidUri| format!("invalid URL: {e}"))?;
        let req = http::Request::get(uri)
            .header(http::header::ACCEPT, "application/json, */*")
            .header(http::header::USER_AGENT, USER_AGENT)
            .body(Empty::<Bytes>::new())
            .map_err(|e| format!("building the request: {e}"))?;
        let exchange = async {
            let response = client.request(req).await.map_err(|e| transport_text(&e))?;
            let status = response.status().as_u16();
            let body = read_capped(response.into_body(), clusterinfo::MAX_RESPONSE_BYTES).await?;
            Ok((status, body))
        };
        match tokio::time::timeout(self.request_timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(format!(
                "request timed out after {}",
                bootstrap_token::format_go_duration(self.request_timeout)
            )),
        }
    }
}

/// The User-Agent of discovery requests.
const USER_AGENT: &str = concat!("k8s-bootstrap/", env!("CARGO_PKG_VERSION"), " (discovery)");

type HttpClient = Client<HttpsConnector<HttpConnector>, Empty<Bytes>>;

/// One client per kind of trust, built when first needed.
#[derive(Default)]
struct Clients {
    insecure: Option<HttpClient>,
    pinned: Option<(CaBundle, HttpClient)>,
    https: Option<HttpClient>,
}

impl Clients {
    fn for_trust(
        &mut self,
        trust: &FetchTrust,
        https_roots: Option<&CaBundle>,
    ) -> Result<&HttpClient, Error> {
        match trust {
            FetchTrust::DangerousNoVerification => {
                if self.insecure.is_none() {
                    let provider = Arc::new(crate::tls::provider().ok_or(Error::NoCryptoProvider)?);
                    let verifier = Arc::new(NoServerVerification(Arc::clone(&provider)));
                    let config = ClientConfig::builder_with_provider(provider)
                        .with_safe_default_protocol_versions()
                        .map_err(Error::Tls)?
                        .dangerous()
                        .with_custom_certificate_verifier(verifier)
                        .with_no_client_auth();
                    self.insecure = Some(client(config));
                }
                self.insecure.as_ref().ok_or(Error::NoCryptoProvider)
            }
            FetchTrust::CaBundle(bundle) => {
                let stale = self.pinned.as_ref().is_none_or(|(b, _)| b != bundle);
                if stale {
                    self.pinned = Some((bundle.clone(), client(roots_config(bundle)?)));
                }
                self.pinned
                    .as_ref()
                    .map(|(_, c)| c)
                    .ok_or(Error::NoCryptoProvider)
            }
            FetchTrust::SystemRoots | _ => {
                if self.https.is_none() {
                    let config = match https_roots {
                        Some(bundle) => roots_config(bundle)?,
                        None => system_roots_config()?,
                    };
                    self.https = Some(client(config));
                }
                self.https.as_ref().ok_or(Error::NoCryptoProvider)
            }
        }
    }
}

/// A client config that trusts exactly the bundle's certificates.
fn roots_config(bundle: &CaBundle) -> Result<ClientConfig, Error> {
    let mut roots = RootCertStore::empty();
    for der in bundle.certificates_der() {
        roots
            .add(CertificateDer::from(der.to_vec()))
            .map_err(Error::Tls)?;
    }
    let provider = Arc::new(crate::tls::provider().ok_or(Error::NoCryptoProvider)?);
    Ok(ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(Error::Tls)?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// A client config over the system's trust roots (rustls-native-certs).
fn system_roots_config() -> Result<ClientConfig, Error> {
    let mut roots = RootCertStore::empty();
    let found = rustls_native_certs::load_native_certs();
    for cert in found.certs {
        // A malformed system certificate is skipped, as hyper-rustls does.
        let _ = roots.add(cert);
    }
    if roots.is_empty() {
        let reason = found
            .errors
            .first()
            .map_or_else(|| "no certificates found".to_owned(), ToString::to_string);
        return Err(Error::SystemRoots(std::io::Error::other(reason)));
    }
    let provider = Arc::new(crate::tls::provider().ok_or(Error::NoCryptoProvider)?);
    Ok(ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(Error::Tls)?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// An HTTPS-only HTTP/1.1 client over the config; no connection reuse across trust kinds.
fn client(config: ClientConfig) -> HttpClient {
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_only()
        .enable_http1()
        .build();
    Client::builder(TokioExecutor::new()).build(connector)
}

/// Accepts any server certificate (token discovery's first fetch, which the detached JWS then
/// authenticates), but still checks the handshake signatures with the provider's algorithms.
#[derive(Debug)]
struct NoServerVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for NoServerVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

fn trust_name(trust: &FetchTrust) -> &'static str {
    match trust {
        FetchTrust::DangerousNoVerification => "none (authenticated by the JWS)",
        FetchTrust::CaBundle(_) => "pinned CA",
        FetchTrust::SystemRoots | _ => "system roots",
    }
}

/// The error chain of a failed request, as one line (hyper's top-level text alone is often
/// just "client error (Connect)").
fn transport_text(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut not_tls = is_not_tls(e);
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        not_tls |= is_not_tls(s);
        source = s.source();
    }
    if not_tls {
        text.push_str(
            " (the server did not answer in TLS: is this a plain-HTTP port? discovery needs the \
             API server's HTTPS endpoint)",
        );
    }
    text
}

/// Whether `e` is rustls reading a record that is not TLS (a plain-HTTP answer, say), possibly
/// inside I/O errors (hyper's connector wraps it twice; an I/O error's `source` skips what it
/// wraps, so the wrapped errors are opened here).
fn is_not_tls(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(e);
    // A bound on the nesting, for an error type that wraps itself without end.
    for _ in 0..8 {
        let Some(err) = current else {
            return false;
        };
        if let Some(rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType)) =
            err.downcast_ref::<rustls::Error>()
        {
            return true;
        }
        current = err
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .map(|inner| inner as &(dyn std::error::Error + 'static));
    }
    false
}

/// The body, reading at most `cap + 1` bytes (the core rejects anything longer than `cap`).
async fn read_capped(mut body: hyper::body::Incoming, cap: usize) -> Result<Bytes, String> {
    let limit = cap.saturating_add(1);
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|e| format!("reading the response body: {}", transport_text(&e)))?;
        if let Ok(data) = frame.into_data() {
            let room = limit.saturating_sub(out.len());
            let take = data.len().min(room);
            out.extend_from_slice(data.get(..take).unwrap_or_default());
            if out.len() >= limit {
                break;
            }
        }
    }
    Ok(Bytes::from(out))
}

/// Reads a discovery file of at most [`MAX_FILE_BYTES`].
async fn read_bounded(path: &Path) -> Result<Vec<u8>, Error> {
    use tokio::io::AsyncReadExt as _;
    let read_err = |source| Error::ReadFile {
        path: path.to_owned(),
        source,
    };
    let file = tokio::fs::File::open(path).await.map_err(read_err)?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES.saturating_add(1))
        .read_to_end(&mut bytes)
        .await
        .map_err(read_err)?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > MAX_FILE_BYTES {
        return Err(Error::FileTooLarge {
            path: path.to_owned(),
        });
    }
    Ok(bytes)
}

/// Writes a kubeconfig as kubeadm does: mode 0600, whole (a temporary file in the same
/// directory, synced, then moved to `path`), and over an existing file only with
/// [`Existing::Replace`](crate::files::Existing) (see [`crate::files`]). Blocking; the file is
/// small.
///
/// # Errors
///
/// [`Error::Write`] when the directory cannot take the file, or with
/// [`std::io::ErrorKind::AlreadyExists`] when `path` exists and `existing` refuses it.
pub fn write_kubeconfig(
    path: impl AsRef<Path>,
    contents: impl AsRef<[u8]>,
    existing: crate::files::Existing,
) -> Result<(), Error> {
    let path = path.as_ref();
    crate::files::write_private(path, contents.as_ref(), existing).map_err(|source| Error::Write {
        path: path.to_owned(),
        source,
    })
}

/// The common case in one call: token discovery with `config` (default options), then the
/// TLS-bootstrap kubeconfig (the discovered cluster, the token as credential) written to `path`
/// as [`write_kubeconfig`] writes it, never over an existing file: what `kubeadm join --token ...
/// --discovery-token-ca-cert-hash ...` does before the TLS bootstrap. Returns what was
/// discovered (the server, the CA, any warnings).
///
/// ```no_run
/// # async fn join() -> Result<(), Box<dyn std::error::Error>> {
/// use k8s_bootstrap::clusterinfo::{PinSet, TokenDiscoveryConfig};
/// use k8s_bootstrap::discovery;
///
/// let mut pins = PinSet::new();
/// pins.allow("sha256:7c8b6f1e0c1e2b7d9f3a4e5d6c7b8a9f0e1d2c3b4a5968778695a4b3c2d1e0f9")?;
/// let config = TokenDiscoveryConfig::new("10.0.0.1:6443", "abcdef.0123456789abcdef".parse()?)?
///     .with_pins(pins);
/// discovery::token_to_kubeconfig(config, "bootstrap-kubelet.conf").await?;
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// As [`Discoverer::discover`], and [`Error::Write`]. Nothing is written unless discovery
/// succeeded.
pub async fn token_to_kubeconfig(
    config: TokenDiscoveryConfig,
    path: impl AsRef<Path>,
) -> Result<Discovered, Error> {
    let token = config.token().clone();
    let found = discover(Source::Token(config)).await?;
    let kubeconfig = found.cluster_info().tls_bootstrap_kubeconfig(&token);
    write_kubeconfig(
        path,
        kubeconfig.expose_secret(),
        crate::files::Existing::Refuse,
    )?;
    Ok(found)
}
