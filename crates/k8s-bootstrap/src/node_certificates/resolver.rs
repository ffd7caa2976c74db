//! Serving the pair a [`Manager`](super::Manager) keeps current, as the kubelet's TLS server
//! does with its serving certificate manager (`tls.Config.GetCertificate`): each handshake
//! takes the pair in use at its start, so a rotation reaches new connections without a
//! restart and connections already open keep theirs.

use std::sync::{Arc, Mutex, PoisonError};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::sync::watch;

use super::LoadedPair;
use super::manager::Snapshot;

/// Why a [`ServingResolver`] cannot be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResolverError {
    /// Neither of the crate's `ring` and `aws-lc-rs` features is on, and the application
    /// installed no process-default rustls crypto provider.
    #[error(
        "no rustls crypto provider: enable k8s-bootstrap's `ring` or `aws-lc-rs` feature, or \
         install a process default"
    )]
    NoCryptoProvider,
}

/// A rustls [`ResolvesServerCert`] over a [`Manager`](super::Manager)'s snapshots: the
/// certificate a handshake gets is the pair the manager holds at that moment (its chain and its
/// key, loaded into the crypto provider once per rotation). Until the manager holds a pair, a
/// handshake gets none and fails, as rustls fails it with no certificate.
///
/// ```no_run
/// # async fn run(manager: k8s_bootstrap::node_certificates::Manager)
/// # -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use k8s_bootstrap::node_certificates::ServingResolver;
///
/// let resolver = ServingResolver::new(manager.subscribe())?;
/// let config = rustls::ServerConfig::builder()
///     .with_no_client_auth()
///     .with_cert_resolver(Arc::new(resolver));
/// tokio::spawn(manager.run());
/// // Serve with `config` (tokio-rustls, hyper, axum...).
/// # let _ = config; Ok(()) }
/// ```
pub struct ServingResolver {
    snapshots: watch::Receiver<Snapshot>,
    provider: Arc<CryptoProvider>,
    /// The pair last served and its key as the provider loaded it.
    loaded: Mutex<Option<(Arc<LoadedPair>, Arc<CertifiedKey>)>>,
}

impl ServingResolver {
    /// A resolver that serves what `snapshots` (from [`Manager::subscribe`](super::Manager::subscribe))
    /// holds, with the crate's crypto provider.
    ///
    /// # Errors
    ///
    /// [`ResolverError::NoCryptoProvider`].
    pub fn new(snapshots: watch::Receiver<Snapshot>) -> Result<ServingResolver, ResolverError> {
        let provider = crate::tls::provider().ok_or(ResolverError::NoCryptoProvider)?;
        Ok(ServingResolver {
            snapshots,
            provider: Arc::new(provider),
            loaded: Mutex::new(None),
        })
    }

    /// The certified key for the pair in use now, if any (what [`ResolvesServerCert::resolve`]
    /// gives every handshake).
    #[must_use]
    pub fn current(&self) -> Option<Arc<CertifiedKey>> {
        let pair = self.snapshots.borrow().pair().cloned()?;
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((served, key)) = loaded.as_ref()
            && Arc::ptr_eq(served, &pair)
        {
            return Some(Arc::clone(key));
        }
        match certified_key(&pair, &self.provider) {
            Some(key) => {
                *loaded = Some((pair, Arc::clone(&key)));
                Some(key)
            }
            None => {
                tracing::warn!(
                    path = %pair.path().display(),
                    "node-certificates: the crypto provider cannot use the new pair; serving \
                     the one before it"
                );
                loaded.as_ref().map(|(_, key)| Arc::clone(key))
            }
        }
    }
}

impl ResolvesServerCert for ServingResolver {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current()
    }
}

impl std::fmt::Debug for ServingResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServingResolver")
            .field(
                "pair",
                &self.snapshots.borrow().pair().map(|p| p.path().to_owned()),
            )
            .finish_non_exhaustive()
    }
}

/// The pair's chain and key as rustls serves them; `None` when the provider cannot use the key.
fn certified_key(pair: &LoadedPair, provider: &CryptoProvider) -> Option<Arc<CertifiedKey>> {
    let chain = pair
        .certificate_chain_der()
        .iter()
        .map(|der| CertificateDer::from(der.clone()))
        .collect();
    let pem = pair.key().to_pem().ok()?;
    let key = PrivateKeyDer::from_pem_slice(pem.as_bytes()).ok()?;
    let key = provider.key_provider.load_private_key(key).ok()?;
    Some(Arc::new(CertifiedKey::new(chain, key)))
}
