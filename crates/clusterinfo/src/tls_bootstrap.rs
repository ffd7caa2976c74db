//! The kubeconfig kubeadm writes for the kubelet's TLS bootstrap.

use std::fmt;

use base64::Engine as _;
use bootstrap_token::BootstrapToken;
use zeroize::Zeroizing;

use crate::cluster_info::{ClusterInfo, Trust};
use crate::yaml::{YamlWriter, is_plain_safe, scalar};

/// The cluster name kubeadm gives the TLS-bootstrap kubeconfig's cluster.
pub const TLS_BOOTSTRAP_CLUSTER: &str = "kubernetes";
/// The user kubeadm puts the bootstrap token under (`TokenUser`).
pub const TLS_BOOTSTRAP_USER: &str = "tls-bootstrap-token-user";
/// The context (and current context) of the TLS-bootstrap kubeconfig: `<user>@<cluster>`.
pub const TLS_BOOTSTRAP_CONTEXT: &str = "tls-bootstrap-token-user@kubernetes";

/// The kubeconfig `kubeadm join` writes for the kubelet's TLS bootstrap
/// (`/etc/kubernetes/bootstrap-kubelet.conf`), built by [`ClusterInfo::tls_bootstrap_kubeconfig`].
///
/// It holds the bootstrap token, so it is a secret as a whole: `Debug` shows only the server and
/// the token ID, the YAML is wiped from memory on drop, and the text is reached only through
/// [`TlsBootstrapKubeconfig::expose_secret`].
#[derive(Clone)]
pub struct TlsBootstrapKubeconfig {
    yaml: Zeroizing<String>,
    server: String,
    token_id: String,
}

impl TlsBootstrapKubeconfig {
    /// The kubeconfig YAML, bootstrap token included. Write it to a file only the kubelet can
    /// read (mode 0600).
    pub fn expose_secret(&self) -> &str {
        &self.yaml
    }

    /// The API server URL the kubeconfig points at (the cluster-info `server`).
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The bootstrap token's ID (public).
    pub fn token_id(&self) -> &str {
        &self.token_id
    }
}

impl fmt::Debug for TlsBootstrapKubeconfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsBootstrapKubeconfig")
            .field("server", &self.server)
            .field("user", &TLS_BOOTSTRAP_USER)
            .field("token_id", &self.token_id)
            .field("yaml", &"<redacted>")
            .finish()
    }
}

impl ClusterInfo {
    /// The kubeconfig for the kubelet's TLS bootstrap, as `kubeadm join` builds it after
    /// discovery (`CreateWithToken`): cluster [`TLS_BOOTSTRAP_CLUSTER`] with this cluster's
    /// `server` and CA data, user [`TLS_BOOTSTRAP_USER`] with `token: <id>.<secret>`, context
    /// [`TLS_BOOTSTRAP_CONTEXT`], which is also the current context. The layout is client-go's
    /// `Write` output (keys sorted, empty `preferences`).
    ///
    /// As in kubeadm, only the server and the CA data are carried over: a `tls-server-name`,
    /// extensions and an `insecure-skip-tls-verify` flag of this cluster are not (without CA
    /// data the client verifies against the system roots).
    ///
    /// ```
    /// use clusterinfo::{ClusterInfo, Trust};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let info = ClusterInfo::with_trust("https://10.0.0.1:6443", Trust::SystemRoots)?;
    /// let token: bootstrap_token::BootstrapToken = "abcdef.0123456789abcdef".parse()?;
    /// let kubeconfig = info.tls_bootstrap_kubeconfig(&token);
    /// assert!(kubeconfig.expose_secret().ends_with(
    ///     "users:\n- name: tls-bootstrap-token-user\n  user:\n    token: abcdef.0123456789abcdef\n"));
    /// assert!(!format!("{kubeconfig:?}").contains("0123456789abcdef"));
    /// # Ok(()) }
    /// ```
    pub fn tls_bootstrap_kubeconfig(&self, token: &BootstrapToken) -> TlsBootstrapKubeconfig {
        let mut w = YamlWriter::new();
        w.line(0, false, "apiVersion", "v1");
        w.line(0, false, "clusters", "");
        w.line(2, true, "cluster", "");
        if let Trust::CaBundle(b) = self.trust() {
            let data = base64::engine::general_purpose::STANDARD.encode(b.as_pem());
            w.line(4, false, "certificate-authority-data", &data);
        }
        w.line(4, false, "server", &scalar(self.server()));
        w.line(2, false, "name", TLS_BOOTSTRAP_CLUSTER);
        w.line(0, false, "contexts", "");
        w.line(2, true, "context", "");
        w.line(4, false, "cluster", TLS_BOOTSTRAP_CLUSTER);
        w.line(4, false, "user", TLS_BOOTSTRAP_USER);
        w.line(2, false, "name", &scalar(TLS_BOOTSTRAP_CONTEXT));
        w.line(0, false, "current-context", &scalar(TLS_BOOTSTRAP_CONTEXT));
        w.line(0, false, "kind", "Config");
        w.line(0, false, "preferences", "{}");
        w.line(0, false, "users", "");
        w.line(2, true, "name", TLS_BOOTSTRAP_USER);
        w.line(2, false, "user", "");
        let head = w.finish();

        let id = token.id().as_str();
        let secret = token.secret().expose_secret();
        // An all-digit token such as `123456.1234567890123456` reads as a YAML float unless
        // quoted; token characters never need escaping inside double quotes.
        let plain = {
            let mut whole = Zeroizing::new(String::with_capacity(
                id.len().saturating_add(secret.len()).saturating_add(1),
            ));
            whole.push_str(id);
            whole.push('.');
            whole.push_str(secret);
            is_plain_safe(&whole)
        };
        let quote = if plain { "" } else { "\"" };
        const KEY: &str = "    token: ";
        // Sized up front so the buffer holding the secret never reallocates (which would leave
        // an unwiped copy behind).
        let len = [
            head.len(),
            KEY.len(),
            id.len(),
            1,
            secret.len(),
            quote.len(),
            quote.len(),
            1,
        ]
        .iter()
        .fold(0usize, |a, b| a.saturating_add(*b));
        let mut yaml = Zeroizing::new(String::with_capacity(len));
        yaml.push_str(&head);
        yaml.push_str(KEY);
        yaml.push_str(quote);
        yaml.push_str(id);
        yaml.push('.');
        yaml.push_str(secret);
        yaml.push_str(quote);
        yaml.push('\n');
        TlsBootstrapKubeconfig {
            yaml,
            server: self.server().to_owned(),
            token_id: id.to_owned(),
        }
    }
}
