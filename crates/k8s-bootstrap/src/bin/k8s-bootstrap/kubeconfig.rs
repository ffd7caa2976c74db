//! Finding and loading the kubeconfig as kubectl does, the client, and kubeadm's join command.

use std::path::PathBuf;

use base64::Engine as _;
use k8s_bootstrap::bootstrap_token::BootstrapToken;
use k8s_bootstrap::clusterinfo::CaBundle;
use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};

use crate::args::Global;
use crate::error::CliError;

/// `--kubeconfig`, else the first non-empty entry of `KUBECONFIG`, else `~/.kube/config`.
pub(crate) fn path(global: &Global) -> Result<PathBuf, CliError> {
    if let Some(p) = &global.kubeconfig {
        return Ok(p.clone());
    }
    if let Some(list) = std::env::var_os("KUBECONFIG")
        && let Some(first) = std::env::split_paths(&list).find(|p| !p.as_os_str().is_empty())
    {
        return Ok(first);
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".kube").join("config"))
        .ok_or(CliError::NoKubeconfig)
}

/// The kube configuration of the chosen kubeconfig and context.
pub(crate) async fn load(global: &Global) -> Result<kube::Config, CliError> {
    let path = path(global)?;
    let fail = |e: KubeconfigError| CliError::Kubeconfig {
        path: path.clone(),
        message: describe(&e),
    };
    let kubeconfig = Kubeconfig::read_from(&path).map_err(fail)?;
    let options = KubeConfigOptions {
        context: global.context.clone(),
        ..KubeConfigOptions::default()
    };
    kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(fail)
}

/// A client for the chosen kubeconfig and context, with its configuration.
pub(crate) async fn client(global: &Global) -> Result<(kube::Client, kube::Config), CliError> {
    let config = load(global).await?;
    let client = kube::Client::try_from(config.clone()).map_err(CliError::Client)?;
    Ok((client, config))
}

/// kubeadm's `token create --print-join-command` line: the endpoint is the current cluster's
/// server without `https://`, followed by one `--discovery-token-ca-cert-hash` per CA
/// certificate of that cluster (the continuations and tabs of kubeadm's template removed, which
/// leaves a trailing space).
pub(crate) fn join_command(
    config: &kube::Config,
    token: &BootstrapToken,
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
    let mut line = format!("kubeadm join {endpoint} --token {token} ");
    for pin in bundle.pins() {
        line.push_str(&format!("--discovery-token-ca-cert-hash {pin} "));
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

/// A kubeconfig error without the file's text (a YAML parse error can quote credentials).
fn describe(e: &KubeconfigError) -> String {
    match e {
        KubeconfigError::Parse(_) => "failed to parse kubeconfig YAML".to_owned(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubeconfig_flag_wins() {
        let g = Global {
            kubeconfig: Some(PathBuf::from("/x/y")),
            context: None,
        };
        assert_eq!(path(&g).unwrap(), PathBuf::from("/x/y"));
    }

    #[test]
    fn pem_lines() {
        let pem = der_to_pem(&[0u8; 100]);
        let lines: Vec<&str> = pem.lines().collect();
        assert_eq!(lines.len(), 5);
        assert_eq!(lines[1].len(), 64);
    }
}
