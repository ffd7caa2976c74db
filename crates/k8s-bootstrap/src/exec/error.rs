//! The `exec` module's error type.

use std::path::PathBuf;

/// Everything that can go wrong while getting an exec credential or wiring it into a client.
///
/// Each variant names the step that failed. No message contains a token, a client key, plugin
/// arguments, `env` values or plugin output: the core's errors are built that way, and this
/// module adds only paths, names and limits.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The authenticator refused to produce a credential or to schedule a run: interactive mode
    /// not possible, plugin policy denial, or the wait after a failed run
    /// ([`exec_credential::Error::RunBackoff`]).
    #[error("exec credential: {0}")]
    Authenticator(#[source] exec_credential::Error),

    /// The plugin run failed: not found, could not start, non-zero exit, killed by a signal,
    /// timed out ([`exec_credential::Error::PluginTimedOut`]), stdout over the cap
    /// ([`exec_credential::Error::OutputTooLarge`]), or output that is not a valid credential.
    #[error("running exec plugin: {0}")]
    Plugin(#[source] exec_credential::Error),

    /// The token contains bytes that are not allowed in an HTTP header value.
    #[error("exec credential: the token is not a valid HTTP header value")]
    InvalidToken,

    /// The kubeconfig file could not be read.
    #[error("reading kubeconfig {path}: {source}")]
    ReadKubeconfig {
        /// The kubeconfig path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },

    /// The kubeconfig file (or a certificate authority file it names) is larger than the limit.
    #[error("reading {path}: larger than the limit of {limit} bytes")]
    FileTooLarge {
        /// The file.
        path: PathBuf,
        /// The limit in bytes.
        limit: u64,
    },

    /// The kubeconfig file is not a valid kubeconfig.
    // kube's parse error is kept out of the message: a type error may quote a kubeconfig value.
    #[error("parsing kubeconfig {path}")]
    ParseKubeconfig {
        /// The kubeconfig path.
        path: PathBuf,
        /// kube's parse error.
        #[source]
        source: kube::config::KubeconfigError,
    },

    /// No context was named and the kubeconfig has no `current-context`.
    #[error("selecting the kubeconfig context: no context given and no current-context set")]
    NoCurrentContext,

    /// A context, cluster or user named by the kubeconfig is missing from it.
    #[error("selecting the kubeconfig context: {kind} {name:?} not found")]
    MissingEntry {
        /// `context`, `cluster` or `user`.
        kind: &'static str,
        /// The name looked up.
        name: String,
    },

    /// The selected user has no `exec` stanza.
    #[error("kubeconfig user {user:?} has no exec stanza")]
    NoExecStanza {
        /// The kubeconfig user name.
        user: String,
    },

    /// The `exec` stanza failed client-go's validation, or names an unsupported `apiVersion`.
    #[error("kubeconfig user {user:?}: invalid exec stanza: {source}")]
    InvalidExecStanza {
        /// The kubeconfig user name.
        user: String,
        /// The core's validation error.
        #[source]
        source: exec_credential::Error,
    },

    /// The cluster entry could not be turned into the `spec.cluster` the plugin is given.
    #[error("kubeconfig cluster {cluster:?}: {source}")]
    InvalidCluster {
        /// The kubeconfig cluster name.
        cluster: String,
        /// Why (it never contains kubeconfig values).
        #[source]
        source: serde_json::Error,
    },

    /// The certificate authority file named by the cluster entry could not be read.
    #[error("reading certificate authority {path}: {source}")]
    ReadCertificateAuthority {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },

    /// kube could not build its client configuration from the kubeconfig.
    // kube's error is kept out of the message (it may quote kubeconfig values).
    #[error("building the kube client configuration")]
    KubeConfig(#[source] kube::config::KubeconfigError),

    /// kube could not build the client (TLS setup, for instance).
    #[error("building the kube client: {0}")]
    KubeClient(#[source] kube::Error),
}
