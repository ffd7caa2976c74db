//! TLS serving: the certificate and key read from their files, swapped for new handshakes
//! when their contents change, the rustls server configuration around them, and the
//! handshake of each client connection.

use std::io::Read as _;
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, UNIX_EPOCH};

use arc_swap::ArcSwap;
use prometheus_client::metrics::counter::Counter;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{RootCertStore, ServerConfig};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use zeroize::Zeroizing;

use super::metrics::ProxyMetrics;
use super::{Error, TlsFile, TlsServing, TlsVersion};
use crate::ClientCertificates;

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
    provider: Arc<CryptoProvider>,
    resolver: Arc<Resolver>,
    metrics: Arc<ProxyMetrics>,
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
        metrics: Arc<ProxyMetrics>,
    ) -> Result<(Arc<ServingCertificate>, Handshake, PairStamp), Error> {
        let provider = crate::tls::provider().ok_or(Error::NoCryptoProvider)?;
        let provider = Arc::new(with_suites(provider, &tls.cipher_suites)?);
        let stamp = pair_stamp(tls);
        let (first, summary) = load_pair(tls, &provider)?;
        log_loaded(tls, &summary, "forward-proxy: serving certificate loaded");
        set_expiry(&metrics, &summary);
        let resolver = Arc::new(Resolver(ArcSwap::from(first)));
        let versions: &[&'static rustls::SupportedProtocolVersion] = match tls.min_version {
            TlsVersion::Tls12 => &[&rustls::version::TLS13, &rustls::version::TLS12],
            TlsVersion::Tls13 => &[&rustls::version::TLS13],
        };
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(versions)
            .map_err(Error::Tls)?;
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
                        .map_err(|_| Error::TlsFileContents {
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
            errors: metrics.tls_handshake_errors.clone(),
        };
        let serving = Arc::new(ServingCertificate {
            tls: tls.clone(),
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
                self.metrics.certificate_reloads.inc();
                self.metrics.certificate_files_failing.set(0);
                set_expiry(&self.metrics, &summary);
                log_loaded(
                    &self.tls,
                    &summary,
                    "forward-proxy: serving certificate reloaded",
                );
            }
            Err(e) => {
                let e = e.to_string();
                self.metrics.certificate_reload_errors.inc();
                self.metrics.certificate_files_failing.set(1);
                tracing::warn!(
                    cert = %self.tls.cert_file.display(),
                    key = %self.tls.key_file.display(),
                    error = %e,
                    "forward-proxy: the serving certificate cannot be loaded; the one loaded before stays"
                );
                *failing = Some(e);
            }
        }
    }

    /// For `/readyz`: why the certificate in use is older than its files, if it is.
    pub(super) fn readiness_note(&self) -> Option<String> {
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
                tracing::debug!(%peer, error = %e, "forward-proxy: TLS handshake failed");
                None
            }
            Err(_) => {
                self.errors.inc();
                tracing::debug!(%peer, timeout = ?self.timeout, "forward-proxy: TLS handshake timed out");
                None
            }
        }
    }
}

/// A client connection, plain or TLS.
pub(crate) enum Stream {
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
fn with_suites(mut provider: CryptoProvider, names: &[String]) -> Result<CryptoProvider, Error> {
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
            .ok_or_else(|| Error::CipherSuite {
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
fn read_tls_file(file: TlsFile, path: &Path) -> Result<Zeroizing<Vec<u8>>, Error> {
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
    read().map_err(|source| Error::ReadTlsFile {
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
) -> Result<(Arc<CertifiedKey>, tls_bootstrap::CertificateSummary), Error> {
    let contents = |file, reason| Error::TlsFileContents {
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
    pair.keys_match().map_err(|_| Error::KeyMismatch {
        cert: tls.cert_file.clone(),
        key: tls.key_file.clone(),
    })?;
    Ok((Arc::new(pair), summary))
}

/// The CA certificates of `file` that client certificates are verified against.
fn client_roots(file: TlsFile, path: &Path) -> Result<RootCertStore, Error> {
    let contents = |reason| Error::TlsFileContents {
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

fn log_loaded(tls: &TlsServing, summary: &tls_bootstrap::CertificateSummary, message: &str) {
    tracing::info!(
        cert = %tls.cert_file.display(),
        key = %tls.key_file.display(),
        subject = summary.subject(),
        not_after = tls_bootstrap::rfc3339(summary.not_after()),
        "{message}"
    );
}

fn set_expiry(metrics: &ProxyMetrics, summary: &tls_bootstrap::CertificateSummary) {
    let secs = summary
        .not_after()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    metrics
        .certificate_expiry
        .set(i64::try_from(secs).unwrap_or(i64::MAX));
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
                Err(Error::CipherSuite { name }) if name == refused
            ));
        }
    }
}
