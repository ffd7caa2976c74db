//! The TLS accept loop: tokio-rustls per connection, then hyper-util's auto connection builder
//! over the axum router, with the connection's client-certificate identity attached to every
//! request it carries (an axum `Extension`, read by authentication).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::{Extension, Router};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::ClientCertVerifier;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use super::x509::CertIdentity;

/// Most connections served at once.
const MAX_CONNECTIONS: usize = 512;
/// Time a client has to finish the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Time a client has to send a request's headers.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Pause after a failed `accept` (for example, out of file descriptors).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// The address of the client a request came from (the connection's peer), for the Service
/// proxy's `X-Forwarded-For`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Peer(pub(crate) std::net::SocketAddr);

/// Accept connections until the task is aborted; aborting drops the set of connection tasks,
/// which aborts them too.
pub(crate) async fn serve(
    listener: TcpListener,
    config: Arc<rustls::ServerConfig>,
    verifier: Arc<dyn ClientCertVerifier>,
    router: Router,
) {
    let acceptor = TlsAcceptor::from(config);
    let limit = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((tcp, peer)) = accepted else {
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                };
                let Ok(permit) = Arc::clone(&limit).try_acquire_owned() else {
                    tracing::debug!("loopback API server (test double): connection limit reached");
                    continue;
                };
                let acceptor = acceptor.clone();
                let router = router.clone();
                let verifier = Arc::clone(&verifier);
                connections.spawn(async move {
                    let _permit = permit;
                    let Ok(Ok(tls)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await else {
                        return;
                    };
                    let mut builder = auto::Builder::new(TokioExecutor::new());
                    builder
                        .http1()
                        .timer(TokioTimer::new())
                        .header_read_timeout(HEADER_READ_TIMEOUT);
                    let identity = match tls.get_ref().1.peer_certificates() {
                        Some(chain) => client_identity(verifier.as_ref(), chain),
                        None => CertIdentity::None,
                    };
                    let service = TowerToHyperService::new(
                        router
                            .layer(Extension(identity))
                            .layer(Extension(Peer(peer))),
                    );
                    if let Err(e) = builder
                        .serve_connection_with_upgrades(TokioIo::new(tls), service)
                        .await
                    {
                        tracing::debug!(error = %e, "loopback API server (test double): connection ended");
                    }
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// The x509 authenticator's verdict on the certificate chain a client presented (the handshake
/// accepted it unverified): verified against the CA with extended key usage clientAuth, the
/// end-entity certificate names the user; otherwise it is an authentication error.
fn client_identity(
    verifier: &dyn ClientCertVerifier,
    chain: &[CertificateDer<'_>],
) -> CertIdentity {
    let Some((end_entity, intermediates)) = chain.split_first() else {
        return CertIdentity::None;
    };
    let since_epoch = crate::clock::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let now = UnixTime::since_unix_epoch(since_epoch);
    match verifier.verify_client_cert(end_entity, intermediates, now) {
        Ok(_) => CertIdentity::from_der(end_entity),
        Err(e) => {
            tracing::debug!(error = %e, "loopback API server (test double): client certificate refused");
            CertIdentity::Error
        }
    }
}
