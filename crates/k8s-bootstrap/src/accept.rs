//! Accepting TCP connections under a cap, pausing after a failed `accept`.
//!
//! A plain `loop { listener.accept().await }` turns into a busy loop when `accept` fails for a
//! reason that lasts, above all when the process is out of file descriptors (`EMFILE`): the
//! connection stays queued, so the next `accept` fails at once, and one core spins while every
//! other listener of the process (health checks included) fails as well. [`Acceptor`] prevents
//! both halves of that:
//!
//! * at most `max_connections` connections are open at once: each accepted connection holds a
//!   [`ConnectionPermit`] until it is dropped, and while none is free the acceptor does not
//!   accept (new connections wait in the kernel's backlog, as HAProxy's `maxconn` does), so the
//!   process keeps descriptors for its other listeners;
//! * a failed `accept` is followed by a pause ([`DEFAULT_ACCEPT_BACKOFF`] unless set) before the
//!   next attempt.
//!
//! ```no_run
//! use std::num::NonZeroUsize;
//! use k8s_bootstrap::accept::Acceptor;
//!
//! # async fn serve() -> std::io::Result<()> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! let acceptor = Acceptor::new(listener, NonZeroUsize::new(1024).unwrap_or(NonZeroUsize::MIN));
//! loop {
//!     let (stream, peer, permit) = acceptor.accept().await;
//!     tokio::spawn(async move {
//!         let _permit = permit; // the slot is free again when the connection ends
//!         # drop((stream, peer));
//!     });
//! }
//! # }
//! ```

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The pause after a failed `accept` unless [`Acceptor::backoff`] sets another.
pub const DEFAULT_ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// A listener that accepts at most a number of connections at once and pauses after failed
/// accepts (see the [module](self) documentation).
#[derive(Debug)]
pub struct Acceptor {
    listener: TcpListener,
    slots: Arc<Semaphore>,
    max_connections: usize,
    backoff: Duration,
}

/// One accepted connection's slot: the acceptor may accept another connection once this is
/// dropped.
#[derive(Debug)]
pub struct ConnectionPermit {
    _permit: OwnedSemaphorePermit,
}

impl Acceptor {
    /// Accepts from `listener`, at most `max_connections` connections open at once.
    #[must_use]
    pub fn new(listener: TcpListener, max_connections: NonZeroUsize) -> Acceptor {
        let max_connections = max_connections.get().min(Semaphore::MAX_PERMITS);
        Acceptor {
            listener,
            slots: Arc::new(Semaphore::new(max_connections)),
            max_connections,
            backoff: DEFAULT_ACCEPT_BACKOFF,
        }
    }

    /// Pauses this long after a failed `accept` (at least a millisecond).
    #[must_use]
    pub fn backoff(mut self, backoff: Duration) -> Acceptor {
        self.backoff = backoff.max(Duration::from_millis(1));
        self
    }

    /// The listener's address.
    ///
    /// # Errors
    ///
    /// The operating system's, as [`TcpListener::local_addr`].
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The most connections open at once.
    #[must_use]
    pub fn max_connections(&self) -> usize {
        self.max_connections
    }

    /// Connections open now (permits not yet dropped).
    #[must_use]
    pub fn open_connections(&self) -> usize {
        self.max_connections
            .saturating_sub(self.slots.available_permits())
    }

    /// This acceptor as a listening socket several runtimes can accept from, each through
    /// its own [`Acceptor`] ([`SharedAcceptor::acceptor`]) under the same connection cap.
    #[cfg(all(unix, feature = "forward-proxy"))]
    pub(crate) fn into_shared(self) -> std::io::Result<SharedAcceptor> {
        Ok(SharedAcceptor {
            listener: self.listener.into_std()?,
            slots: self.slots,
            max_connections: self.max_connections,
            backoff: self.backoff,
        })
    }

    /// The next connection, once a slot is free: waits for a slot, then for a connection; a
    /// failed `accept` is logged (at debug level) and retried after the backoff. Cancel-safe:
    /// dropping the future loses no connection.
    pub async fn accept(&self) -> (TcpStream, SocketAddr, ConnectionPermit) {
        // The semaphore is never closed; were it, the cap would no longer hold, so wait forever.
        let Ok(permit) = Arc::clone(&self.slots).acquire_owned().await else {
            return std::future::pending().await;
        };
        loop {
            match self.listener.accept().await {
                Ok((stream, peer)) => {
                    return (stream, peer, ConnectionPermit { _permit: permit });
                }
                Err(e) => {
                    tracing::debug!(error = %e, backoff = ?self.backoff, "accept failed; pausing");
                    tokio::time::sleep(self.backoff).await;
                }
            }
        }
    }
}

/// A listening socket and a connection cap shared by acceptors on several runtimes (each
/// runtime registers a duplicate of the socket), as [`Acceptor::into_shared`] makes it.
#[cfg(all(unix, feature = "forward-proxy"))]
#[derive(Debug)]
pub(crate) struct SharedAcceptor {
    listener: std::net::TcpListener,
    slots: Arc<Semaphore>,
    max_connections: usize,
    backoff: Duration,
}

#[cfg(all(unix, feature = "forward-proxy"))]
impl SharedAcceptor {
    /// An acceptor for the runtime this is called on (it must be called within one): a
    /// duplicate of the socket, registered with that runtime, under the shared cap. Every
    /// runtime is woken by a new connection, and one of them accepts it.
    pub(crate) fn acceptor(&self) -> std::io::Result<Acceptor> {
        use std::os::fd::AsFd as _;
        let listener = std::net::TcpListener::from(self.listener.as_fd().try_clone_to_owned()?);
        Ok(Acceptor {
            listener: TcpListener::from_std(listener)?,
            slots: Arc::clone(&self.slots),
            max_connections: self.max_connections,
            backoff: self.backoff,
        })
    }
}
