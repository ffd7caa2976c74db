//! `join`: kubeadm join's discovery, then the kubelet's TLS-bootstrap kubeconfig.

use std::path::PathBuf;
use std::time::SystemTime;

use k8s_bootstrap::bootstrap_token::BootstrapToken;
use k8s_bootstrap::clusterinfo::{FileDiscoveryConfig, PinSet, Refresh, TokenDiscoveryConfig};
use k8s_bootstrap::discovery::{self, Source};

use crate::args::JoinArgs;
use crate::error::CliError;

/// The wall clock, for the core's configuration check.
#[allow(
    clippy::disallowed_methods,
    reason = "the command line is where the clock is read"
)]
fn now() -> SystemTime {
    SystemTime::now()
}

pub(crate) async fn run(args: &JoinArgs) -> Result<(), CliError> {
    let timeout = args.discovery_timeout;
    let tls_token = parse_token(
        args.tls_bootstrap_token.as_ref().or(args.token.as_ref()),
        "--tls-bootstrap-token",
    )?;
    let (source, target) = source(args, timeout)?;
    let Some(tls_token) = tls_token else {
        return Err(CliError::JoinFlags(
            "discovery.tlsBootstrapToken: Invalid value: \"\": the bootstrap token is invalid (pass --token or --tls-bootstrap-token)"
                .to_owned(),
        ));
    };

    let waiting = format!(
        "{target} (timeout {})",
        k8s_bootstrap::bootstrap_token::format_go_duration(timeout)
    );
    let discovered = crate::progress::report(&waiting, discovery::discover(source))
        .await
        .map_err(CliError::Discovery)?;
    for warning in discovered.warnings() {
        eprintln!("warning: {warning}");
    }
    let kubeconfig = discovered
        .cluster_info()
        .tls_bootstrap_kubeconfig(&tls_token);
    let path: &PathBuf = &args.tls_bootstrap_kubeconfig;
    discovery::write_kubeconfig(path, kubeconfig.expose_secret()).map_err(|source| {
        CliError::WriteKubeconfig {
            path: path.clone(),
            source,
        }
    })?;
    crate::output::print(&format!(
        "wrote the TLS-bootstrap kubeconfig for {server} (token id {id}) to {path}\n\
         kubectl can use it: kubectl --kubeconfig {path} get --raw /api/v1/namespaces/kube-public/configmaps/cluster-info\n",
        server = kubeconfig.server(),
        id = kubeconfig.token_id(),
        path = path.display(),
    ))
}

/// The discovery source kubeadm would choose (`--discovery-file` wins over token discovery),
/// checked as kubeadm checks its flags, and the progress line to show while it runs.
fn source(args: &JoinArgs, timeout: std::time::Duration) -> Result<(Source, String), CliError> {
    if let Some(file) = &args.discovery_file {
        let config = FileDiscoveryConfig::new()
            .with_refresh(Refresh::FromClusterInfo)
            .with_timeout(timeout);
        if file.starts_with("https://") {
            return Ok((
                Source::Https {
                    url: file.clone(),
                    config,
                },
                format!("fetching the discovery kubeconfig from {file}"),
            ));
        }
        let path = file.strip_prefix("file://").unwrap_or(file);
        if file.contains("://") && !file.starts_with("file://") {
            return Err(CliError::JoinFlags(
                "discovery.file.kubeConfigPath: Invalid value: if a URL is used, the scheme must be https"
                    .to_owned(),
            ));
        }
        let kubeconfig = PathBuf::from(path);
        if !kubeconfig.is_file() {
            return Err(CliError::JoinFlags(
                "discovery.file.kubeConfigPath: Invalid value: not a valid HTTPS URL or a file on disk"
                    .to_owned(),
            ));
        }
        let target = format!("discovering the cluster from {}", kubeconfig.display());
        return Ok((Source::File { kubeconfig, config }, target));
    }

    let Some(endpoint) = &args.endpoint else {
        return Err(CliError::JoinFlags(
            "discovery.bootstrapToken.apiServerEndpoint: Required value: APIServerEndpoint is not set"
                .to_owned(),
        ));
    };
    let token = parse_token(
        args.discovery_token.as_ref().or(args.token.as_ref()),
        "--discovery-token",
    )?
    .ok_or_else(|| {
        CliError::JoinFlags(
            "discovery.bootstrapToken.token: Invalid value: \"\": the bootstrap token is invalid (pass --token or --discovery-token)"
                .to_owned(),
        )
    })?;
    let mut pins = PinSet::new();
    for hash in &args.ca_cert_hashes {
        pins.allow(hash).map_err(|e| {
            CliError::JoinFlags(format!("invalid discovery token CA certificate hash: {e}"))
        })?;
    }
    let mut config = TokenDiscoveryConfig::new(endpoint, token)
        .map_err(|e| {
            CliError::JoinFlags(format!(
                "discovery.bootstrapToken.apiServerEndpoint: Invalid value: {endpoint:?}: {e}"
            ))
        })?
        .with_pins(pins)
        .with_timeout(timeout);
    if args.discovery_token_unsafe_skip_ca_verification {
        config = config.dangerous_skip_ca_verification();
    }
    // The core decides whether the configuration may start (pins or the explicit opt-in); its
    // state machine does no I/O, so checking here reports kubeadm's flag error before any
    // network traffic.
    if let Err(e) = config.clone().start(now()) {
        return Err(CliError::JoinFlags(format!(
            "discovery.bootstrapToken.caCertHashes: Invalid value: \"\": {e}"
        )));
    }
    Ok((
        Source::Token(config),
        format!("waiting for the signed cluster-info from {endpoint}"),
    ))
}

/// A token flag's value, parsed without echoing it on error.
fn parse_token(
    value: Option<&String>,
    what: &'static str,
) -> Result<Option<BootstrapToken>, CliError> {
    value
        .map(|s| {
            s.parse::<BootstrapToken>()
                .map_err(|_| CliError::InvalidToken { what })
        })
        .transpose()
}
