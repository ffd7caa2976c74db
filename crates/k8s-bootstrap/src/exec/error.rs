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

    /// There is no tokio runtime to run the plugin on (plugin runs are tokio tasks).
    #[error("exec credential: no tokio runtime to run the plugin on")]
    NoRuntime,

    /// The plugin run this call waited on ended without a result: its task was dropped (the
    /// runtime is shutting down). Not counted as a failed run.
    #[error("exec credential: the plugin run was abandoned before it ended")]
    RunAbandoned,

    /// No kubeconfig was named, `KUBECONFIG` names none, `~/.kube/config` does not exist, and
    /// this is not a pod (kube's in-cluster configuration failed too).
    #[error(
        "finding the kubeconfig: no KUBECONFIG, no ~/.kube/config, and no in-cluster configuration"
    )]
    NoKubeconfig {
        /// Why kube's in-cluster configuration failed, when it was tried.
        #[source]
        in_cluster: Option<kube::config::InClusterError>,
    },

    /// `KUBECONFIG` is set, but none of the files it names can be read (kubectl skips the
    /// missing ones; when all are missing there is no configuration to use).
    #[error(
        "finding the kubeconfig: {} named by KUBECONFIG cannot be read: {source}",
        shown_paths(.paths)
    )]
    KubeconfigEnvMissing {
        /// The files `KUBECONFIG` names.
        paths: Vec<PathBuf>,
        /// Why the first of them cannot be read.
        #[source]
        source: std::io::Error,
    },

    /// The kuberc file could not be read.
    #[error("kuberc: {}: {source}", .path.display())]
    ReadKuberc {
        /// The kuberc path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },

    /// The kuberc file's credential plugin policy is not one kubectl accepts (kubectl's
    /// messages).
    #[error("kuberc {}: {source}", .path.display())]
    Kuberc {
        /// The kuberc path.
        path: PathBuf,
        /// The core's error ([`exec_credential::Error::InvalidKuberc`] or
        /// [`exec_credential::Error::PolicyDenied`]).
        #[source]
        source: exec_credential::Error,
    },

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

impl Error {
    /// The exec error behind an error of a `kube::Client` built by this module (kube wraps
    /// what a layer returns in [`kube::Error::Service`]), if there is one.
    ///
    /// ```no_run
    /// # async fn demo(client: kube::Client) {
    /// use k8s_bootstrap::exec::Error;
    /// use k8s_openapi::api::core::v1::Namespace;
    ///
    /// if let Err(e) = kube::Api::<Namespace>::all(client).list(&Default::default()).await {
    ///     match Error::from_kube(&e) {
    ///         Some(Error::Plugin(plugin)) => eprintln!("the credential plugin failed: {plugin}"),
    ///         Some(other) => eprintln!("exec credential: {other}"),
    ///         None => eprintln!("request failed: {e}"),
    ///     }
    /// }
    /// # }
    /// ```
    #[must_use]
    pub fn from_kube(error: &kube::Error) -> Option<&Error> {
        let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
        while let Some(e) = current {
            if let Some(found) = e.downcast_ref::<Error>() {
                return Some(found);
            }
            if let Some(kube::Error::Service(boxed)) = e.downcast_ref::<kube::Error>()
                && let Some(found) = boxed.downcast_ref::<Error>()
            {
                return Some(found);
            }
            current = e.source();
        }
        None
    }
}

/// `the file /a` or `the files /a, /b` (at most 8 named).
fn shown_paths(paths: &[PathBuf]) -> String {
    const MAX: usize = 8;
    let mut names: Vec<String> = paths
        .iter()
        .take(MAX)
        .map(|p| p.display().to_string())
        .collect();
    if paths.len() > MAX {
        names.push("...".to_owned());
    }
    match paths {
        [_] => format!("the file {}", names.join(", ")),
        _ => format!("the files {}", names.join(", ")),
    }
}
