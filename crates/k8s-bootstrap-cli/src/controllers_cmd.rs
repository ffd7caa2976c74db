//! `k8s-bootstrap controllers`: the bootstrap signer and token cleaner (and, when named, the
//! kubelet-serving approver), with leader election, `/healthz`, `/readyz` and `/metrics`, until
//! SIGTERM or Ctrl-C.

use std::sync::Arc;

use k8s_bootstrap::controllers::TlsServing;
use k8s_bootstrap::controllers::{
    self, Enabled, LeaderElection, Metrics, MetricsCertificate, Options,
};
use k8s_bootstrap::delegated::DelegatedAuthLayer;
use k8s_bootstrap::tls_bootstrap::{DnsCheck, ServingPolicy};

use crate::args::ControllersArgs;
use crate::error::CliError;
use crate::kubeconfig;

pub(crate) async fn run(args: &ControllersArgs) -> Result<(), CliError> {
    let enabled = Enabled::from_names(args.controllers.iter().map(String::as_str))
        .map_err(CliError::UnknownController)?;
    let mut options = Options::default();
    if enabled.kubelet_serving_approver {
        let policy = serving_policy(args)?;
        tracing::info!(
            policy = %controllers::describe_policy(&policy),
            "kubeletservingapprover: policy"
        );
        options.serving_policy = Some(policy);
    }
    let certificate = metrics_certificate(args)?;
    let election = if args.leader_elect {
        if args.leader_elect_renew_deadline >= args.leader_elect_lease_duration {
            return Err(CliError::RenewDeadline);
        }
        let mut election = LeaderElection::new(identity(args));
        election
            .namespace
            .clone_from(&args.leader_elect_resource_namespace);
        election
            .lease_name
            .clone_from(&args.leader_elect_resource_name);
        election.lease_duration = args.leader_elect_lease_duration;
        election.renew_deadline = args.leader_elect_renew_deadline;
        election.retry_period = args.leader_elect_retry_period;
        election
            .validate()
            .map_err(|e| CliError::Usage(format!("controllers: {}", crate::error::chain(&e))))?;
        Some(election)
    } else {
        None
    };
    // In a pod: the service account (in-cluster config) unless a kubeconfig or context is named.
    let (client, server) = if args.cluster.is_set() || std::env::var_os("KUBECONFIG").is_some() {
        let (client, config) = kubeconfig::client(&args.cluster).await?;
        (client, server(&config))
    } else {
        let config = kube::Config::infer().await.map_err(CliError::InferConfig)?;
        let server = server(&config);
        (
            kube::Client::try_from(config).map_err(CliError::Client)?,
            server,
        )
    };
    log_configuration(args, enabled, election.as_ref(), &server);
    let metrics = Arc::new(Metrics::new());
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let wait = move || {
        let mut rx = stopped.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    };
    let mut http = match certificate {
        Some(certificate) => tokio::spawn(controllers::serve_https(
            args.http_address,
            certificate,
            DelegatedAuthLayer::new(client.clone()),
            metrics.clone(),
            wait(),
        )),
        None => tokio::spawn(controllers::serve_http(
            args.http_address,
            metrics.clone(),
            wait(),
        )),
    };
    let terminated = crate::signals::terminated();
    let signals = tokio::spawn(async move {
        terminated.await;
        tracing::info!("controllers: termination signal received, shutting down");
        let _ = stop.send(true);
    });
    let run = controllers::run(client, enabled, election, options, metrics, wait());
    tokio::pin!(run);
    let (result, http_result) = tokio::select! {
        result = &mut run => {
            // The HTTP server stops with the controllers (its shutdown future is the same
            // signal, or the controllers ended on their own).
            http.abort();
            (result, http.await.unwrap_or(Ok(())))
        }
        joined = &mut http => match joined.unwrap_or(Ok(())) {
            // The endpoints cannot be served (the address taken, the certificate unreadable):
            // the process ends, with the controllers.
            Err(e) => (Ok(()), Err(e)),
            Ok(()) => (run.await, Ok(())),
        },
    };
    signals.abort();
    result.map_err(CliError::Controllers)?;
    http_result.map_err(CliError::Controllers)?;
    tracing::info!("controllers: stopped");
    Ok(())
}

/// The configuration at info, once at start: what runs, where, against which API server and
/// under which Lease. Nothing secret: the kubeconfig is named by its path, never read out.
fn log_configuration(
    args: &ControllersArgs,
    enabled: Enabled,
    election: Option<&LeaderElection>,
    server: &str,
) {
    let controllers = [
        (enabled.bootstrap_signer, "bootstrapsigner"),
        (enabled.token_cleaner, "tokencleaner"),
        (enabled.kubelet_serving_approver, "kubeletservingapprover"),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
    .collect::<Vec<_>>()
    .join(",");
    let kubeconfig = match (&args.cluster.kubeconfig, std::env::var_os("KUBECONFIG")) {
        (Some(path), _) => path.display().to_string(),
        (None, Some(env)) => format!("$KUBECONFIG ({})", env.to_string_lossy()),
        (None, None) if args.cluster.context.is_some() => "~/.kube/config".to_owned(),
        (None, None) => "in-cluster (service account)".to_owned(),
    };
    let context = args.cluster.context.as_deref().unwrap_or("(current)");
    match election {
        Some(e) => tracing::info!(
            controllers,
            http_address = %args.http_address,
            server,
            kubeconfig,
            context,
            lease = %format_args!("{}/{}", e.namespace, e.lease_name),
            identity = e.identity,
            lease_duration = ?e.lease_duration,
            renew_deadline = ?e.renew_deadline,
            retry_period = ?e.retry_period,
            "controllers: starting with leader election"
        ),
        None => tracing::info!(
            controllers,
            http_address = %args.http_address,
            server,
            kubeconfig,
            context,
            "controllers: starting without leader election"
        ),
    }
}

/// `--metrics-secure`'s certificate: the files named, else a self-signed one; `None` for plain
/// HTTP, where the certificate flags are refused.
fn metrics_certificate(args: &ControllersArgs) -> Result<Option<MetricsCertificate>, CliError> {
    match (
        args.metrics_secure,
        &args.tls_cert_file,
        &args.tls_private_key_file,
    ) {
        (false, None, None) => Ok(None),
        (false, _, _) => Err(CliError::Usage(
            "controllers: --tls-cert-file and --tls-private-key-file are used only with \
             --metrics-secure"
                .to_owned(),
        )),
        (true, Some(cert), Some(key)) => {
            for (flag, path) in [("--tls-cert-file", cert), ("--tls-private-key-file", key)] {
                std::fs::metadata(path).map_err(|e| {
                    CliError::Usage(format!("controllers: {flag} {}: {e}", path.display()))
                })?;
            }
            Ok(Some(MetricsCertificate::Files(TlsServing::new(cert, key))))
        }
        (true, _, _) => Ok(Some(MetricsCertificate::SelfSigned)),
    }
}

/// The kubelet-serving approver's policy from the flags (`--provider-regex` is required).
fn serving_policy(args: &ControllersArgs) -> Result<ServingPolicy, CliError> {
    let Some(regex) = args.provider_regex.clone() else {
        return Err(CliError::Usage(
            "controllers: kubeletservingapprover needs --provider-regex".to_owned(),
        ));
    };
    let mut policy = ServingPolicy::new(regex, args.provider_ip_prefixes.clone());
    policy.max_expiration_seconds = args.max_expiration_sec;
    policy.max_sans = usize::from(args.max_subject_alt_names);
    policy.dns_check = if args.bypass_dns_resolution {
        DnsCheck::DangerousSkip
    } else {
        DnsCheck::Resolve
    };
    Ok(policy)
}

/// The API server as `scheme://host:port`: a URL's user information (which could hold a
/// password) and path are left out.
fn server(config: &kube::Config) -> String {
    let url = &config.cluster_url;
    let scheme = url.scheme_str().unwrap_or("https");
    let host = url.host().unwrap_or("?");
    match url.port_u16() {
        Some(port) => format!("{scheme}://{host}:{port}"),
        None => format!("{scheme}://{host}"),
    }
}

/// `--leader-elect-identity` or `$POD_NAME`, else `<hostname>_<pid>`.
fn identity(args: &ControllersArgs) -> String {
    if let Some(id) = args
        .leader_elect_identity
        .as_ref()
        .filter(|i| !i.is_empty())
    {
        return id.clone();
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    format!("{host}_{}", std::process::id())
}
