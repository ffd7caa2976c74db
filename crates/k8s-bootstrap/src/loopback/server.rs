//! The TLS accept loop: tokio-rustls per connection, then hyper-util's auto connection builder
//! over the axum router.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

/// Most connections served at once.
const MAX_CONNECTIONS: usize = 512;
/// Time a client has to finish the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Time a client has to send a request's headers.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Pause after a failed `accept` (for example, out of file descriptors).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Accept connections until the task is aborted; aborting drops the set of connection tasks,
/// which aborts them too.
pub(crate) async fn serve(
    listener: TcpListener,
    config: Arc<rustls::ServerConfig>,
    router: Router,
) {
    let acceptor = TlsAcceptor::from(config);
    let limit = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((tcp, _peer)) = accepted else {
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                };
                let Ok(permit) = Arc::clone(&limit).try_acquire_owned() else {
                    tracing::debug!("loopback API server (test double): connection limit reached");
                    continue;
                };
                let acceptor = acceptor.clone();
                let router = router.clone();
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
                    let service = TowerToHyperService::new(router);
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
