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
        let term = async {
            match term.as_mut() {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        let int = async {
            match int.as_mut() {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = term => {}
            () = int => {}
        }
    }
}
