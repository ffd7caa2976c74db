//! Waiting for the signal that stops a long-running command.

use std::future::Future;

use tokio::signal::unix::{SignalKind, signal};

/// SIGTERM (what the kubelet sends) or SIGINT (Ctrl-C). The handlers are installed when this
/// is called, not when the future is first polled, so a signal that arrives in between is not
/// lost (nor does it kill the process with the default action).
pub(crate) fn terminated() -> impl Future<Output = ()> {
    let mut term = signal(SignalKind::terminate()).ok();
    let mut int = signal(SignalKind::interrupt()).ok();
    async move {
        tokio::select! {
            () = received(term.as_mut()) => {}
            () = received(int.as_mut()) => {}
        }
    }
}

/// The next delivery of `signal`; never, when its handler could not be installed.
async fn received(signal: Option<&mut tokio::signal::unix::Signal>) {
    match signal {
        Some(s) => {
            s.recv().await;
        }
        None => std::future::pending().await,
    }
}
