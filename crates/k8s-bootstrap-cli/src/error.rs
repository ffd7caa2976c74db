//! The command's error: one variant per step, printed as one `error: …` line.

use std::path::PathBuf;

use k8s_bootstrap::{bootstrap_token, clusterinfo, discovery, token};

#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    #[error("writing to standard output: {0}")]
    Stdout(#[source] std::io::Error),
    #[error("loading kubeconfig {}: {message}", .path.display())]
    Kubeconfig { path: PathBuf, message: String },
    #[cfg(any(feature = "controllers", feature = "sidecar"))]
    #[error("creating the kubernetes client: {0}")]
    Client(#[source] kube::Error),
    #[error("creating the kubernetes client: {0}")]
    Exec(#[source] k8s_bootstrap::exec::Error),
    #[error("{what}: {source}")]
    InvalidToken {
        what: &'static str,
        #[source]
        source: bootstrap_token::Error,
    },
    /// A command line refused before any work: a flag's value, two that cannot go together,
    /// a path that cannot be used.
    #[error("{0}")]
    Usage(String),
    /// An output file that exists and that the command did not create.
    #[error(
        "{flag} {}: the file already exists, and {command} does not replace a file it did not create (remove it, give another path, or pass --force to replace it)",
        .path.display()
    )]
    Exists {
        flag: &'static str,
        path: PathBuf,
        command: &'static str,
    },
    #[error("{0}")]
    Token(#[from] token::Error),
    #[error("building the join command: {0}")]
    JoinCommand(String),
    #[error("reading {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("reading CA certificates from {}: {source}", .path.display())]
    Certificates {
        path: PathBuf,
        #[source]
        source: clusterinfo::Error,
    },
    #[error("--token-file {}: {source}", .path.display())]
    TokenFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("node-certificates: {0}")]
    NodeCertificates(String),
    /// `join --serving` after the client credentials were written: the serving certificate
    /// was not issued.
    #[error(
        "serving certificate: {message} (the node's client credentials are written: {}; k8s-bootstrap node-certificates --serving keeps requesting the serving certificate)",
        .kubeconfig.display()
    )]
    Serving {
        message: String,
        kubeconfig: PathBuf,
    },
    #[error("TLS bootstrap: {0}")]
    TlsBootstrap(#[source] k8s_bootstrap::csr::Error),
    #[error("the node key {}: {source}", .path.display())]
    NodeKey {
        path: PathBuf,
        #[source]
        source: k8s_bootstrap::tls_bootstrap::Error,
    },
    #[error("{0}")]
    Discovery(#[source] discovery::Error),
    #[error("writing the TLS-bootstrap kubeconfig {}: {source}", .path.display())]
    WriteKubeconfig {
        path: PathBuf,
        #[source]
        source: discovery::Error,
    },
    #[cfg(feature = "loopback-server")]
    #[error("{0}")]
    Loopback(#[from] loopback_apiserver::Error),
    #[cfg(feature = "loopback-server")]
    #[error("demo: {0}")]
    Demo(String),
    #[cfg(feature = "loopback-server")]
    #[error("--admin-kubeconfig {}: {source}", .path.display())]
    AdminKubeconfig {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[cfg(feature = "loopback-server")]
    #[error("--serving-certificate {}: {source}", .path.display())]
    ServingCertificate {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{flag} {}: cannot listen on {addr}: {source}", .addr.port())]
    Listen {
        flag: &'static str,
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[cfg(feature = "loopback-server")]
    #[error("--add-auth: {0}")]
    AddAuth(String),
    #[error("writing output: {0}")]
    Output(String),
    #[error("--dir {}: {source}", .path.display())]
    ManpageDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("--dir: {} already exists (--force replaces it)", .path.display())]
    ManpageExists { path: PathBuf },
    #[cfg(feature = "sidecar")]
    #[error("forward-proxy: {0}")]
    Proxy(String),
    #[cfg(feature = "controllers")]
    #[error(
        "unknown controller {0:?} in --controllers (known: bootstrapsigner, tokencleaner, kubeletservingapprover, *)"
    )]
    UnknownController(String),
    #[cfg(feature = "controllers")]
    #[error("--leader-elect-renew-deadline must be shorter than --leader-elect-lease-duration")]
    RenewDeadline,
    #[cfg(any(feature = "controllers", feature = "sidecar"))]
    #[error("loading the in-cluster or default kubeconfig: {0}")]
    InferConfig(#[source] kube::config::InferConfigError),
    #[cfg(feature = "controllers")]
    #[error("controllers: {}", chain(.0))]
    Controllers(#[source] k8s_bootstrap::controllers::Error),
}

impl CliError {
    /// The process's exit code: 2 for a command line refused before any work (as clap's usage
    /// errors), 1 otherwise.
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) | CliError::Exists { .. } | CliError::InvalidToken { .. } => 2,
            #[cfg(feature = "controllers")]
            CliError::UnknownController(_) | CliError::RenewDeadline => 2,
            _ => 1,
        }
    }
}

/// An error and its sources, joined with ": ".
#[cfg(feature = "controllers")]
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
