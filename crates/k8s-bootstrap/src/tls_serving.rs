//! TLS serving, shared by the forward proxy (`forward_proxy::Config::tls`) and the
//! controllers' secure metrics (`controllers::serve_https`): its settings ([`TlsServing`])
//! and why they could not be used ([`ServingError`]). Inside, the certificate and key read
//! from their files and swapped for new handshakes when their contents change, the rustls
//! server configuration around them, each client connection's handshake, and their
//! counters. The `tls-serving` feature alone gives only these types: `forward-proxy` and
//! `controllers` serve with them.
#![cfg_attr(
    not(any(feature = "forward-proxy", feature = "controllers")),
    allow(dead_code)
)]

use std::io::Read as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, UNIX_EPOCH};

use arc_swap::ArcSwap;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{RootCertStore, ServerConfig};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use zeroize::Zeroizing;

use crate::ClientCertificates;

/// The lowest TLS version a client may use (TLS 1.0 and 1.1 are never offered).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TlsVersion {
    /// TLS 1.2 and 1.3 (kube-rbac-proxy's `VersionTLS12`, the default).
    #[default]
    Tls12,
    /// TLS 1.3 only (`VersionTLS13`).
    Tls13,
}

/// Which of [`TlsServing`]'s files an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsFile {
    /// [`TlsServing::cert_file`].
    Certificate,
    /// [`TlsServing::key_file`].
    PrivateKey,
    /// [`TlsServing::client_ca_file`].
    ClientCa,
    /// [`TlsServing::requestheader_client_ca_file`].
    RequestHeaderClientCa,
}

impl std::fmt::Display for TlsFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TlsFile::Certificate => "the serving certificate",
            TlsFile::PrivateKey => "the serving key",
            TlsFile::ClientCa => "the client CA",
            TlsFile::RequestHeaderClientCa => "the requestheader client CA",
        })
    }
}

/// TLS serving: the certificate chain and its key from PEM files (both re-read now and then,
/// the forward proxy's `Config::reload_interval`, and swapped in, for new handshakes, when
/// their contents change and the new pair matches), TLS 1.2 at least with rustls' default
/// cipher suites (all AEAD with forward secrecy), and optionally client certificates.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TlsServing {
    /// The certificate chain, PEM (`CERTIFICATE` blocks, the server's first).
    pub cert_file: PathBuf,
    /// Its private key, PEM (PKCS#8, PKCS#1 or SEC1).
    pub key_file: PathBuf,
    /// CA certificates (PEM) that client certificates are verified against (read once, at
    /// start). A client without a certificate is still served (its token decides); one with a
    /// certificate that does not verify is refused in the handshake. The verified chain is in
    /// each request's extensions as [`ClientCertificates`]. `None` (the default): no client
    /// certificate is asked for.
    pub client_ca_file: Option<PathBuf>,
    /// The front proxy's CA certificates (PEM, kube-apiserver's
    /// `--requestheader-client-ca-file`), read once at start: client certificates are verified
    /// against these as well as against [`TlsServing::client_ca_file`], so that both the
    /// front proxy and other clients can present theirs. Which CA a chain verifies against,
    /// and so what it may claim, is for the request's authenticators to decide (the
    /// delegated mode's `DelegatedAuthLayer::front_proxy`).
    /// `None` (the default): only the client CA.
    pub requestheader_client_ca_file: Option<PathBuf>,
    /// The lowest TLS version accepted (default TLS 1.2).
    pub min_version: TlsVersion,
    /// The TLS 1.2 cipher suites to offer, by IANA name (`TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256`),
    /// out of those the crypto provider implements; empty (the default): all of them. As in
    /// Go, TLS 1.3's suites are not configurable: their names are accepted and change nothing.
    pub cipher_suites: Vec<String>,
    /// The longest a client may take to complete its handshake before the connection is
    /// closed (default 10 s).
    pub handshake_timeout: Duration,
}

impl TlsServing {
    /// TLS with the certificate chain in `cert_file` and its key in `key_file`, the other
    /// settings at their defaults.
    #[must_use]
    pub fn new(cert_file: impl Into<PathBuf>, key_file: impl Into<PathBuf>) -> TlsServing {
        TlsServing {
            cert_file: cert_file.into(),
            key_file: key_file.into(),
            client_ca_file: None,
            requestheader_client_ca_file: None,
            min_version: TlsVersion::Tls12,
            cipher_suites: Vec::new(),
            handshake_timeout: Duration::from_secs(10),
        }
    }

    /// Sets [`TlsServing::client_ca_file`].
    #[must_use]
    pub fn client_ca_file(mut self, path: impl Into<PathBuf>) -> TlsServing {
        self.client_ca_file = Some(path.into());
        self
    }

    /// Sets [`TlsServing::requestheader_client_ca_file`].
    #[must_use]
    pub fn requestheader_client_ca_file(mut self, path: impl Into<PathBuf>) -> TlsServing {
        self.requestheader_client_ca_file = Some(path.into());
        self
    }

    /// Sets [`TlsServing::min_version`].
    #[must_use]
    pub fn min_version(mut self, version: TlsVersion) -> TlsServing {
        self.min_version = version;
        self
    }

    /// Sets [`TlsServing::cipher_suites`].
    #[must_use]
    pub fn cipher_suites(mut self, names: Vec<String>) -> TlsServing {
        self.cipher_suites = names;
        self
    }

    /// Sets [`TlsServing::handshake_timeout`].
    #[must_use]
    pub fn handshake_timeout(mut self, timeout: Duration) -> TlsServing {
        self.handshake_timeout = timeout;
        self
    }
}

/// Why the serving certificate, its key or a client CA could not be loaded, or the TLS
/// settings used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServingError {
    /// A file of [`TlsServing`] could not be read (or is larger than 1 MiB).
    #[error("reading {file} {}: {source}", .path.display())]
    ReadTlsFile {
        /// Which file.
        file: TlsFile,
        /// Its path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A file of [`TlsServing`] does not hold what it should.
    #[error("{file} {}: {reason}", .path.display())]
    TlsFileContents {
        /// Which file.
        file: TlsFile,
        /// Its path.
        path: PathBuf,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The private key is not the certificate's.
    #[error("the serving key {} does not match the certificate {}", .key.display(), .cert.display())]
    KeyMismatch {
        /// [`TlsServing::cert_file`].
        cert: PathBuf,
        /// [`TlsServing::key_file`].
        key: PathBuf,
    },
    /// A name of [`TlsServing::cipher_suites`] is unknown or names a suite the crypto provider
    /// does not implement (rustls implements only AEAD suites with forward secrecy).
    #[error("cipher suite {name:?} is unknown or not supported")]
    CipherSuite {
        /// The name (at most 64 characters of it).
        name: String,
    },
    /// No rustls crypto provider: the `ring` or `aws-lc-rs` feature is off and none is
    /// installed as the process default.
    #[error("no rustls crypto provider (enable `ring` or `aws-lc-rs`)")]
    NoCryptoProvider,
    /// rustls refused the TLS settings (no cipher suite left for the versions allowed, say).
    #[error("the TLS settings: {0}")]
    Tls(#[source] rustls::Error),
}

/// The TLS serving counters and gauges, registered in the server's registry (under its
/// prefix): handshake failures, certificate reloads and their failures, whether the files
/// are failing, and when the certificate in use expires.
#[derive(Clone, Debug)]
pub(crate) struct TlsMetrics {
    handshake_errors: Counter,
    reloads: Counter,
    reload_errors: Counter,
    files_failing: Gauge,
    expiry: Gauge,
}

impl TlsMetrics {
    /// The metrics, registered in `registry`.
    pub(crate) fn register(registry: &mut Registry) -> TlsMetrics {
        let mut counter = |name: &str, help: &str| {
            let c = Counter::default();
            registry.register(name, help, c.clone());
            c
        };
        let handshake_errors = counter(
            "tls_handshake_errors",
            "Client connections closed because their TLS handshake failed or timed out",
        );
        let reloads = counter(
            "serving_certificate_reloads",
            "Serving certificate and key files loaded after a change",
        );
        let reload_errors = counter(
            "serving_certificate_reload_errors",
            "Changed serving certificate or key files that could not be loaded (the pair loaded before stays)",
        );
        let files_failing = Gauge::default();
        registry.register(
            "serving_certificate_files_failing",
            "1 while the serving certificate or key file, changed, cannot be loaded",
            files_failing.clone(),
        );
        let expiry = Gauge::default();
        registry.register(
            "serving_certificate_expiry_timestamp_seconds",
            "When the serving certificate in use expires (notAfter, Unix time; 0 in plain HTTP)",
            expiry.clone(),
        );
        TlsMetrics {
            handshake_errors,
            reloads,
            reload_errors,
            files_failing,
            expiry,
        }
    }
}

/// The largest certificate, key or CA file read.
const MAX_TLS_FILE_BYTES: u64 = 1024 * 1024;

/// What identifies one version of the certificate and key files together: the SHA-256 of
/// both contents (as for the key file, by content, not metadata); `None` while either cannot
/// be read.
pub(crate) type PairStamp = Option<[u8; 32]>;

/// The serving certificate in use, the files it comes from, and why the files, since they
/// changed, cannot be loaded.
pub(crate) struct ServingCertificate {
    tls: TlsServing,
    /// Who serves, for the logs (`forward-proxy`, `controllers`).
    component: &'static str,
    provider: Arc<CryptoProvider>,
    resolver: Arc<Resolver>,
    metrics: TlsMetrics,
    failing: std::sync::Mutex<Option<String>>,
}

/// Each handshake takes the pair in use at its start.
#[derive(Debug)]
struct Resolver(ArcSwap<CertifiedKey>);

impl ResolvesServerCert for Resolver {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.load_full())
    }
}

impl ServingCertificate {
    /// Loads the pair and the client CA, and builds the server configuration; also returns
    /// the files' stamp taken before they were read.
    pub(crate) fn load(
        tls: &TlsServing,
        component: &'static str,
        metrics: TlsMetrics,
    ) -> Result<(Arc<ServingCertificate>, Handshake, PairStamp), ServingError> {
        let provider = crate::tls::provider().ok_or(ServingError::NoCryptoProvider)?;
        let provider = Arc::new(with_suites(provider, &tls.cipher_suites)?);
        let stamp = pair_stamp(tls);
        let (first, summary) = load_pair(tls, &provider)?;
        log_loaded(tls, &summary, component, "serving certificate loaded");
        set_expiry(&metrics, &summary);
        let resolver = Arc::new(Resolver(ArcSwap::from(first)));
        let versions: &[&'static rustls::SupportedProtocolVersion] = match tls.min_version {
            TlsVersion::Tls12 => &[&rustls::version::TLS13, &rustls::version::TLS12],
            TlsVersion::Tls13 => &[&rustls::version::TLS13],
        };
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(versions)
            .map_err(ServingError::Tls)?;
        // One store of both bundles: a chain to either CA passes the handshake; which CA it
        // chains to, and so what it may claim, the request's authenticators decide.
        let mut roots = RootCertStore::empty();
        let mut named = None;
        for (file, path) in [
            (TlsFile::ClientCa, &tls.client_ca_file),
            (
                TlsFile::RequestHeaderClientCa,
                &tls.requestheader_client_ca_file,
            ),
        ] {
            if let Some(path) = path {
                roots.roots.extend(client_roots(file, path)?.roots);
                named = Some((file, path.clone()));
            }
        }
        let builder = match named {
            None => builder.with_no_client_auth(),
            Some((file, path)) => {
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                        .allow_unauthenticated()
                        .build()
                        .map_err(|_| ServingError::TlsFileContents {
                            file,
                            path,
                            reason: "no usable CA certificate",
                        })?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut config = builder.with_cert_resolver(resolver.clone());
        // HTTP/1.1 is what is served; a client that offers h2 as well is told so.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let handshake = Handshake {
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
            timeout: tls.handshake_timeout,
            errors: metrics.handshake_errors.clone(),
            component,
        };
        let serving = Arc::new(ServingCertificate {
            tls: tls.clone(),
            component,
            provider,
            resolver,
            metrics,
            failing: std::sync::Mutex::new(None),
        });
        Ok((serving, handshake, stamp))
    }

    /// Checks the certificate and key files every `interval` and reloads them when their
    /// stamp differs from the last one seen (`stamp`, taken before the pair in use was read).
    pub(crate) async fn watch(self: Arc<Self>, mut stamp: PairStamp, interval: Duration) {
        // tokio's interval panics on a zero period.
        let mut ticker = tokio::time::interval(interval.max(Duration::from_millis(1)));
        loop {
            ticker.tick().await;
            let now = pair_stamp(&self.tls);
            if now == stamp {
                continue;
            }
            stamp = now;
            self.reload();
        }
    }

    /// Loads the changed pair; new handshakes use it. A pair that cannot be loaded (a file
    /// missing or broken, a key that is not the certificate's) leaves the one in use.
    fn reload(&self) {
        let mut failing = self
            .failing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match load_pair(&self.tls, &self.provider) {
            Ok((pair, summary)) => {
                self.resolver.0.store(pair);
                *failing = None;
                self.metrics.reloads.inc();
                self.metrics.files_failing.set(0);
                set_expiry(&self.metrics, &summary);
                log_loaded(
                    &self.tls,
                    &summary,
                    self.component,
                    "serving certificate reloaded",
                );
            }
            Err(e) => {
                let e = e.to_string();
                self.metrics.reload_errors.inc();
                self.metrics.files_failing.set(1);
                tracing::warn!(
                    cert = %self.tls.cert_file.display(),
                    key = %self.tls.key_file.display(),
                    error = %e,
                    "{}: the serving certificate cannot be loaded; the one loaded before stays",
                    self.component
                );
                *failing = Some(e);
            }
        }
    }

    /// For `/readyz`: why the certificate in use is older than its files, if it is.
    #[cfg_attr(not(feature = "forward-proxy"), allow(dead_code))]
    pub(crate) fn readiness_note(&self) -> Option<String> {
        let failing = self
            .failing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        failing.as_ref().map(|e| {
            format!(
                "the serving certificate loaded before is in use; the certificate files cannot be loaded: {e}"
            )
        })
    }
}

/// The TLS side of each client connection: its handshake, within its timeout.
#[derive(Clone)]
pub(crate) struct Handshake {
    acceptor: tokio_rustls::TlsAcceptor,
    timeout: Duration,
    errors: Counter,
    component: &'static str,
}

impl Handshake {
    /// The connection once its handshake is done, with the client's verified certificates if
    /// it sent any; `None` (counted, logged at debug) when the handshake fails or takes
    /// longer than its timeout. Nothing is read as HTTP before.
    pub(crate) async fn accept(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
    ) -> Option<(Stream, Option<ClientCertificates>)> {
        match tokio::time::timeout(self.timeout, self.acceptor.accept(stream)).await {
            Ok(Ok(tls)) => {
                let certificates = tls
                    .get_ref()
                    .1
                    .peer_certificates()
                    .filter(|c| !c.is_empty())
                    .map(|c| ClientCertificates::from_der_chain(c.iter().map(|c| c.to_vec())));
                Some((Stream::Tls(Box::new(tls)), certificates))
            }
            Ok(Err(e)) => {
                self.errors.inc();
                tracing::debug!(%peer, error = %e, "{}: TLS handshake failed", self.component);
                None
            }
            Err(_) => {
                self.errors.inc();
                tracing::debug!(%peer, timeout = ?self.timeout, "{}: TLS handshake timed out", self.component);
                None
            }
        }
    }
}

/// A client connection, plain or TLS.
pub(crate) enum Stream {
    #[cfg_attr(not(feature = "forward-proxy"), allow(dead_code))]
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// `provider` offering only the TLS 1.2 suites named in `names` (and all its TLS 1.3 suites);
/// all of them when `names` is empty.
fn with_suites(
    mut provider: CryptoProvider,
    names: &[String],
) -> Result<CryptoProvider, ServingError> {
    if names.is_empty() {
        return Ok(provider);
    }
    let mut tls12 = Vec::new();
    for name in names {
        let name = name.trim();
        let found = provider
            .cipher_suites
            .iter()
            .find(|s| {
                s.suite()
                    .as_str()
                    .is_some_and(|n| suite_name_matches(n, name))
            })
            .ok_or_else(|| ServingError::CipherSuite {
                name: name.chars().take(64).collect(),
            })?;
        if found.tls13().is_none()
            && !tls12
                .iter()
                .any(|s: &rustls::SupportedCipherSuite| s.suite() == found.suite())
        {
            tls12.push(*found);
        }
    }
    let tls13 = provider
        .cipher_suites
        .iter()
        .filter(|s| s.tls13().is_some())
        .copied();
    provider.cipher_suites = tls13.chain(tls12).collect();
    Ok(provider)
}

/// Whether `given` names rustls' suite `ours`: its IANA name (rustls spells TLS 1.3's with a
/// `TLS13_` prefix, IANA `TLS_`), or Go's older names of the ChaCha20 suites (no `_SHA256`).
fn suite_name_matches(ours: &str, given: &str) -> bool {
    if ours == given {
        return true;
    }
    if let Some(rest) = ours.strip_prefix("TLS13_") {
        return given.strip_prefix("TLS_") == Some(rest);
    }
    ours.strip_suffix("_SHA256")
        .is_some_and(|short| short.ends_with("CHACHA20_POLY1305") && short == given)
}

/// Reads `path`, at most [`MAX_TLS_FILE_BYTES`].
fn read_tls_file(file: TlsFile, path: &Path) -> Result<Zeroizing<Vec<u8>>, ServingError> {
    let read = || -> std::io::Result<Zeroizing<Vec<u8>>> {
        let mut bytes = Zeroizing::new(Vec::new());
        std::fs::File::open(path)?
            .take(MAX_TLS_FILE_BYTES.saturating_add(1))
            .read_to_end(&mut bytes)?;
        if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > MAX_TLS_FILE_BYTES {
            return Err(std::io::Error::other("larger than 1 MiB"));
        }
        Ok(bytes)
    };
    read().map_err(|source| ServingError::ReadTlsFile {
        file,
        path: path.to_owned(),
        source,
    })
}

/// The digest of both files' contents, each with its length first.
fn pair_stamp(tls: &TlsServing) -> PairStamp {
    use sha2::Digest as _;
    let mut digest = sha2::Sha256::new();
    for path in [&tls.cert_file, &tls.key_file] {
        let bytes = read_tls_file(TlsFile::Certificate, path).ok()?;
        digest.update(u64::try_from(bytes.len()).unwrap_or(u64::MAX).to_be_bytes());
        digest.update(&*bytes);
    }
    Some(digest.finalize().into())
}

/// The certificate chain and key of `tls`, checked to belong together.
fn load_pair(
    tls: &TlsServing,
    provider: &CryptoProvider,
) -> Result<(Arc<CertifiedKey>, tls_bootstrap::CertificateSummary), ServingError> {
    let contents = |file, reason| ServingError::TlsFileContents {
        file,
        path: match file {
            TlsFile::PrivateKey => tls.key_file.clone(),
            _ => tls.cert_file.clone(),
        },
        reason,
    };
    let pem = read_tls_file(TlsFile::Certificate, &tls.cert_file)?;
    let chain = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| contents(TlsFile::Certificate, "not PEM certificates"))?;
    let leaf = chain
        .first()
        .ok_or_else(|| contents(TlsFile::Certificate, "no CERTIFICATE block"))?;
    let summary = tls_bootstrap::summarize_certificate(leaf)
        .map_err(|_| contents(TlsFile::Certificate, "the first certificate cannot be read"))?;
    let pem = read_tls_file(TlsFile::PrivateKey, &tls.key_file)?;
    let key = PrivateKeyDer::from_pem_slice(&pem).map_err(|_| {
        contents(
            TlsFile::PrivateKey,
            "no private key (PEM: PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY)",
        )
    })?;
    let key = provider
        .key_provider
        .load_private_key(key)
        .map_err(|_| contents(TlsFile::PrivateKey, "a key the crypto provider cannot use"))?;
    let pair = CertifiedKey::new(chain, key);
    pair.keys_match().map_err(|_| ServingError::KeyMismatch {
        cert: tls.cert_file.clone(),
        key: tls.key_file.clone(),
    })?;
    Ok((Arc::new(pair), summary))
}

/// The CA certificates of `file` that client certificates are verified against.
fn client_roots(file: TlsFile, path: &Path) -> Result<RootCertStore, ServingError> {
    let contents = |reason| ServingError::TlsFileContents {
        file,
        path: path.to_owned(),
        reason,
    };
    let pem = read_tls_file(file, path)?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|_| contents("not PEM certificates"))?;
        roots
            .add(cert)
            .map_err(|_| contents("a certificate that cannot be a trust anchor"))?;
    }
    if roots.is_empty() {
        return Err(contents("no CERTIFICATE block"));
    }
    Ok(roots)
}

fn log_loaded(
    tls: &TlsServing,
    summary: &tls_bootstrap::CertificateSummary,
    component: &str,
    message: &str,
) {
    tracing::info!(
        cert = %tls.cert_file.display(),
        key = %tls.key_file.display(),
        subject = summary.subject(),
        not_after = tls_bootstrap::rfc3339(summary.not_after()),
        "{component}: {message}"
    );
}

fn set_expiry(metrics: &TlsMetrics, summary: &tls_bootstrap::CertificateSummary) {
    let secs = summary
        .not_after()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    metrics.expiry.set(i64::try_from(secs).unwrap_or(i64::MAX));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suite_names_as_iana_and_go_write_them() {
        assert!(suite_name_matches(
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"
        ));
        assert!(suite_name_matches(
            "TLS13_AES_128_GCM_SHA256",
            "TLS_AES_128_GCM_SHA256"
        ));
        assert!(suite_name_matches(
            "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
            "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305"
        ));
        assert!(!suite_name_matches(
            "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
            "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"
        ));
        assert!(!suite_name_matches(
            "TLS13_AES_128_GCM_SHA256",
            "TLS13_AES_256_GCM_SHA384"
        ));
    }

    #[test]
    fn the_suites_named_are_the_tls12_suites_offered() {
        let Some(provider) = crate::tls::provider() else {
            return;
        };
        let all = provider.cipher_suites.len();
        let chosen = with_suites(
            provider.clone(),
            &["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256".to_owned()],
        )
        .unwrap();
        let tls12: Vec<_> = chosen
            .cipher_suites
            .iter()
            .filter(|s| s.tls13().is_none())
            .map(|s| s.suite())
            .collect();
        assert_eq!(
            tls12,
            [rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]
        );
        assert!(chosen.cipher_suites.iter().any(|s| s.tls13().is_some()));
        assert!(chosen.cipher_suites.len() < all);
        assert_eq!(
            with_suites(provider.clone(), &[])
                .unwrap()
                .cipher_suites
                .len(),
            all
        );
        for refused in ["TLS_RSA_WITH_AES_128_CBC_SHA", "NOT_A_SUITE"] {
            assert!(matches!(
                with_suites(provider.clone(), &[refused.to_owned()]),
                Err(ServingError::CipherSuite { name }) if name == refused
            ));
        }
    }
}
