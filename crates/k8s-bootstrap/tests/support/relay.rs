//! A TCP relay in front of the API-server double that can be cut (every connection dropped,
//! new ones refused) and restored: the API server unreachable, then back. Shared by the tests
//! of what reviews through the double.
#![allow(clippy::unwrap_used, reason = "test helpers fail loudly")]

use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// The relay: connections to [`Relay::addr`] reach the target while it is up.
pub(crate) struct Relay {
    pub(crate) addr: SocketAddr,
    up: watch::Sender<bool>,
}

impl Relay {
    /// A relay to `target` (host:port), up.
    pub(crate) async fn start(target: String) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (up, _) = watch::channel(true);
        let state = up.subscribe();
        tokio::spawn(async move {
            loop {
                let Ok((mut client, _)) = listener.accept().await else {
                    continue;
                };
                let mut state = state.clone();
                if !*state.borrow() {
                    drop(client);
                    continue;
                }
                let target = target.clone();
                tokio::spawn(async move {
                    let Ok(mut server) = TcpStream::connect(&target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        _ = state.wait_for(|up| !*up) => {}
                    }
                });
            }
        });
        Relay { addr, up }
    }

    /// Cuts (`false`: open connections dropped, new ones refused) or restores the relay.
    pub(crate) fn set_up(&self, up: bool) {
        self.up.send_replace(up);
    }

    /// `kubeconfig` (YAML) with the server `url` replaced by this relay.
    pub(crate) fn kubeconfig(&self, kubeconfig: &str, url: &str) -> String {
        kubeconfig.replace(url, &format!("https://{}", self.addr))
    }
}
