//! The client of the kubeconfig kubectl would use, and kubeadm's join command.

use base64::Engine as _;
use k8s_bootstrap::bootstrap_token::BootstrapToken;
use k8s_bootstrap::clusterinfo::CaBundle;
use k8s_bootstrap::exec::{self, KubeconfigOptions};

use crate::args::{ClusterArgs, JoinCommandFormat};
use crate::error::CliError;

/// A client for the chosen kubeconfig and context, with kube's configuration of it: the
/// kubeconfig is `--kubeconfig`, else the files of `KUBECONFIG` (merged as kubectl merges
/// them), else `~/.kube/config`, else the in-cluster configuration. A user with an `exec`
/// stanza authenticates through the library's exec layer (client-go's rules, the 401 refresh
/// and retry, kubectl's kuberc plugin policy), never kube's built-in exec support.
pub(crate) async fn client(
    cluster: &ClusterArgs,
) -> Result<(kube::Client, kube::Config), CliError> {
    let mut options = KubeconfigOptions::infer();
    if let Some(path) = &cluster.kubeconfig {
        options = options.kubeconfig(path);
    }
    if let Some(context) = &cluster.context {
        options = options.context(context);
    }
    let built = exec::kube_client(&options).await.map_err(cli_error)?;
    Ok((built.client().clone(), built.config().clone()))
}

/// The library's error in the command's terms (a parse error never quotes the file: it can
/// hold credentials).
fn cli_error(e: exec::Error) -> CliError {
    match e {
        exec::Error::ReadKubeconfig { path, source } => CliError::Kubeconfig {
            path,
            message: source.to_string(),
        },
        exec::Error::ParseKubeconfig { path, .. } => CliError::Kubeconfig {
            path,
            message: "failed to parse kubeconfig YAML".to_owned(),
        },
        exec::Error::FileTooLarge { path, limit } => CliError::Kubeconfig {
            path,
            message: format!("larger than the limit of {limit} bytes"),
        },
        other => CliError::Exec(other),
    }
}

/// The `token create --print-join-command` line: `k8s-bootstrap join` or `kubeadm join`, the
/// endpoint (the current cluster's server without `https://`), `--token`, and one
/// `--discovery-token-ca-cert-hash` per CA certificate of that cluster. kubeadm's form is
/// kubeadm's template with its continuations and tabs removed (and not the trailing space
/// that leaves: a pasted line should not end in one).
pub(crate) fn join_command(
    config: &kube::Config,
    token: &BootstrapToken,
    format: JoinCommandFormat,
) -> Result<String, CliError> {
    let endpoint = config
        .cluster_url
        .authority()
        .map(|a| a.as_str().to_owned())
        .ok_or_else(|| CliError::JoinCommand("the cluster's server has no host".to_owned()))?;
    let certificates = config.root_cert.as_deref().unwrap_or_default();
    if certificates.is_empty() {
        return Err(CliError::JoinCommand(
            "the kubeconfig's cluster has no certificate authority".to_owned(),
        ));
    }
    let mut pem = String::new();
    for der in certificates {
        pem.push_str(&der_to_pem(der));
    }
    let bundle = CaBundle::from_pem(pem.as_bytes())
        .map_err(|e| CliError::JoinCommand(format!("reading the cluster CA: {e}")))?;
    let program = match format {
        JoinCommandFormat::K8sBootstrap => "k8s-bootstrap",
        JoinCommandFormat::Kubeadm => "kubeadm",
    };
    let mut line = format!("{program} join {endpoint} --token {token}");
    for pin in bundle.pins() {
        line.push_str(&format!(" --discovery-token-ca-cert-hash {pin}"));
    }
    Ok(line)
}

/// A DER certificate as PEM.
fn der_to_pem(der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    let mut rest = b64.as_str();
    while !rest.is_empty() {
        let (line, tail) = rest.split_at_checked(64).unwrap_or((rest, ""));
        out.push_str(line);
        out.push('\n');
        rest = tail;
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_lines() {
        let pem = der_to_pem(&[0u8; 100]);
        let lines: Vec<&str> = pem.lines().collect();
        assert_eq!(lines.len(), 5);
        assert_eq!(lines[1].len(), 64);
    }
}
