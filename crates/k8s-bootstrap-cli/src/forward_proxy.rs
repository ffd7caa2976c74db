//! `k8s-bootstrap forward-proxy`: the add-on sidecar as a process, over
//! `k8s_bootstrap::forward_proxy`. The flags become a `Config`; the library serves.

use std::num::NonZeroUsize;

use k8s_bootstrap::addon_jwt::Algorithm;
use k8s_bootstrap::forward_proxy::{self, Config, KeySource, ServiceAudiences};

use crate::args::{ClusterArgs, ForwardProxyArgs, KeyReloadFailure};
use crate::error::CliError;
use crate::kubeconfig;

fn key_source(args: &ForwardProxyArgs) -> Result<KeySource, CliError> {
    match (&args.jwks_file, &args.public_key_file) {
        (Some(p), None) => Ok(KeySource::Jwks(p.clone())),
        (None, Some(p)) => {
            let alg: Algorithm = args.algorithm.parse().map_err(|_| {
                CliError::Proxy(format!(
                    "unknown --algorithm {:?} (RS256, PS256, ES256, ES384, EdDSA)",
                    args.algorithm.chars().take(16).collect::<String>()
                ))
            })?;
            Ok(KeySource::Pem(p.clone(), alg))
        }
        _ => Err(CliError::Proxy(
            "exactly one of --jwks-file and --public-key-file is required".to_owned(),
        )),
    }
}

/// The Services that select this pod, for `--audience-from-services`.
async fn services(args: &ForwardProxyArgs) -> Result<ServiceAudiences, CliError> {
    let namespace = args
        .pod_namespace
        .clone()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| {
            CliError::Proxy(
                "--audience-from-services needs --pod-namespace (or POD_NAMESPACE)".to_owned(),
            )
        })?;
    let labels = forward_proxy::read_pod_labels(&args.pod_labels_file)
        .map_err(|e| CliError::Proxy(format!("reading {}: {e}", args.pod_labels_file.display())))?;
    // In a pod: the service account (in-cluster config) unless a kubeconfig or context is named.
    let cluster = ClusterArgs {
        kubeconfig: args.kubeconfig.clone(),
        context: args.context.clone(),
    };
    let client = if cluster.is_set() {
        kubeconfig::client(&cluster).await?.0
    } else {
        let config = kube::Config::infer().await.map_err(CliError::InferConfig)?;
        kube::Client::try_from(config).map_err(CliError::Client)?
    };
    Ok(ServiceAudiences::new(client, &namespace, labels)
        .refresh_interval(args.audience_refresh_interval))
}

pub(crate) async fn run(args: &ForwardProxyArgs) -> Result<(), CliError> {
    let source = key_source(args)?;
    let mut config = Config::new(&args.forward, &args.issuer, source)
        .listen(args.listen)
        .request_timeout(args.request_timeout)
        .max_connection_duration(args.max_connection_duration)
        .verified_cache_size(args.verified_cache_size)
        .max_concurrent_verifications(NonZeroUsize::new(args.max_concurrent_verifications))
        .max_concurrent_verifications_without_known_callers(NonZeroUsize::new(
            args.max_concurrent_verifications_without_known_callers,
        ))
        .reload_interval(args.reload_interval)
        .key_reload_failure(match args.key_reload_failure {
            KeyReloadFailure::Keep => forward_proxy::KeyReloadFailure::Keep,
            KeyReloadFailure::FailClosed => forward_proxy::KeyReloadFailure::FailClosed,
        })
        .strip_headers(args.strip_header.clone())
        .max_connections(NonZeroUsize::new(args.max_connections))
        .connection_threads(Some(
            NonZeroUsize::new(args.connection_threads)
                .unwrap_or_else(forward_proxy::available_cpus),
        ))
        .http_address(args.http_address)
        .explain_rejections(args.explain_rejections);
    for audience in &args.audience {
        config = config.audience(audience);
    }
    if args.audience_from_services {
        config = config.services(services(args).await?);
    }
    log_configuration(args);
    forward_proxy::serve(config, crate::signals::terminated())
        .await
        .map_err(|e| proxy_error(&e, args))?;
    Ok(())
}

/// The configuration at info, once at start (the addresses as bound follow in the library's
/// `listening` line). Nothing secret: keys are named by their file, never read out.
fn log_configuration(args: &ForwardProxyArgs) {
    let keys = match (&args.jwks_file, &args.public_key_file) {
        (Some(path), _) => format!("JWKS {}", path.display()),
        (None, Some(path)) => format!("PEM {} ({})", path.display(), args.algorithm),
        (None, None) => String::new(),
    };
    let or_auto = |n: usize| {
        if n == 0 {
            "auto".to_owned()
        } else {
            n.to_string()
        }
    };
    let audiences_from = if args.audience_from_services {
        format!(
            "Services of namespace {} selecting the labels in {} (every {:?})",
            args.pod_namespace.as_deref().unwrap_or("?"),
            args.pod_labels_file.display(),
            args.audience_refresh_interval
        )
    } else {
        "flags only".to_owned()
    };
    tracing::info!(
        listen = %args.listen,
        http_address = %args.http_address,
        forward = args.forward,
        issuer = args.issuer,
        audiences = args.audience.join(","),
        audiences_from,
        keys,
        reload_interval = ?args.reload_interval,
        key_reload_failure = match args.key_reload_failure {
            KeyReloadFailure::Keep => "keep",
            KeyReloadFailure::FailClosed => "fail-closed",
        },
        request_timeout = ?args.request_timeout,
        max_connection_duration = ?args.max_connection_duration,
        verified_cache_size = args.verified_cache_size,
        max_concurrent_verifications = or_auto(args.max_concurrent_verifications),
        max_concurrent_verifications_without_known_callers =
            or_auto(args.max_concurrent_verifications_without_known_callers),
        max_connections = or_auto(args.max_connections),
        connection_threads = or_auto(args.connection_threads),
        strip_headers = args.strip_header.join(","),
        explain_rejections = args.explain_rejections,
        "forward-proxy: starting"
    );
}

/// The library's error in the flags' terms.
fn proxy_error(e: &forward_proxy::Error, args: &ForwardProxyArgs) -> CliError {
    CliError::Proxy(match e {
        forward_proxy::Error::StripHeaders(e) => format!("--strip-header: {e}"),
        forward_proxy::Error::Forward => format!(
            "--forward {:?} is not host:port",
            args.forward.chars().take(64).collect::<String>()
        ),
        // Which flag named the address.
        forward_proxy::Error::Listen { addr, source } => {
            let flag = if *addr == args.http_address && *addr != args.listen {
                "--http-address"
            } else {
                "--listen"
            };
            format!("{flag} {addr}: {source}")
        }
        forward_proxy::Error::Threads(source) => {
            format!("--connection-threads {}: {source}", args.connection_threads)
        }
        other => other.to_string(),
    })
}
