//! `k8s-bootstrap forward-proxy`: the add-on sidecar as a process, over
//! `k8s_bootstrap::forward_proxy`. The flags become a `Config`; the library serves.

use std::num::{NonZeroU32, NonZeroUsize};

use k8s_bootstrap::addon_jwt::Algorithm;
use k8s_bootstrap::delegated::{
    DelegatedAuthLayer, ReviewRateLimit, TokenReviews, fetch_service_account_authenticator,
};
use k8s_bootstrap::delegated_auth::{
    CacheConfig, ClientCa, FrontProxyAuthenticator, RbacProxyConfig, RequestHeaderConfig,
};
use k8s_bootstrap::forward_proxy::{
    self, AuthHeaders, Config, Delegated, KeySource, ServiceAudiences, ServingError, TlsFile,
    TlsServing, TlsVersion,
};

use crate::args::{
    Authentication, ClusterArgs, ForwardProxyArgs, KeyReloadFailure,
    REQUESTHEADER_EXTRA_HEADERS_PREFIX, REQUESTHEADER_GROUP_HEADERS,
    REQUESTHEADER_USERNAME_HEADERS, ServiceAccountTokens, TlsMinVersion,
};
use crate::error::CliError;
use crate::kubeconfig;

/// kube-apiserver's delegated cache lifetimes' default (`k8s.io/apiserver`'s
/// `DelegatingAuthenticationOptions` and `DelegatingAuthorizationOptions`): 10 s.
const DEFAULT_CACHE_TTL: std::time::Duration = std::time::Duration::from_secs(10);

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

/// How the proxy serves, from the flags: TLS with both files, plain HTTP only with
/// `--insecure-listen-address` (clap refuses it beside the TLS flags), nothing else.
fn serving(
    args: &ForwardProxyArgs,
) -> Result<(std::net::SocketAddr, Option<TlsServing>), CliError> {
    if let Some(addr) = args.insecure_listen_address {
        return Ok((addr, None));
    }
    match (&args.tls_cert_file, &args.tls_private_key_file) {
        (Some(cert), Some(key)) => {
            let mut tls = TlsServing::new(cert, key)
                .min_version(match args.tls_min_version {
                    TlsMinVersion::VersionTls12 => TlsVersion::Tls12,
                    TlsMinVersion::VersionTls13 => TlsVersion::Tls13,
                })
                .cipher_suites(args.tls_cipher_suites.clone());
            if let Some(ca) = &args.client_ca_file {
                tls = tls.client_ca_file(ca);
            }
            if let Some(ca) = &args.requestheader_client_ca_file {
                tls = tls.requestheader_client_ca_file(ca);
            }
            Ok((args.secure_listen_address, Some(tls)))
        }
        (Some(_), None) => Err(CliError::Usage(
            "--tls-cert-file needs --tls-private-key-file (the certificate's key)".to_owned(),
        )),
        (None, Some(_)) => Err(CliError::Usage(
            "--tls-private-key-file needs --tls-cert-file (the key's certificate)".to_owned(),
        )),
        (None, None) => Err(CliError::Usage(
            "no serving certificate: give --tls-cert-file and --tls-private-key-file to serve \
             TLS on --secure-listen-address, or --insecure-listen-address to serve plain HTTP \
             (tokens in clear text)"
                .to_owned(),
        )),
    }
}

/// The add-on JWT mode's flags: the issuer, an audience source and the key file, and none of
/// the token-review mode's.
fn jwt_flags(args: &ForwardProxyArgs) -> Result<(String, KeySource), CliError> {
    if let Some(flag) = delegated_flag_given(args) {
        return Err(CliError::Usage(format!(
            "{flag} is a flag of --authentication=token-review"
        )));
    }
    let issuer = args.issuer.clone().ok_or_else(|| {
        CliError::Usage("--issuer is required with --authentication=jwt".to_owned())
    })?;
    if !args.audience_from_services {
        for (given, flag) in [
            (args.kubeconfig.is_some(), "--kubeconfig"),
            (args.context.is_some(), "--context"),
        ] {
            if given {
                return Err(CliError::Usage(format!(
                    "{flag} is used only with --audience-from-services or \
                     --authentication=token-review"
                )));
            }
        }
    }
    if args.audience.is_empty() && !args.audience_from_services {
        return Err(CliError::Usage(
            "--audience or --audience-from-services is required with --authentication=jwt"
                .to_owned(),
        ));
    }
    Ok((issuer, key_source(args)?))
}

/// Whether a comma-separated list flag holds other than its one default value.
fn list_changed(values: &[String], default: &str) -> bool {
    values != [default]
}

/// The first `--requestheader-*` flag other than the CA file given away from its default.
fn requestheader_flag_given(args: &ForwardProxyArgs) -> Option<&'static str> {
    [
        (
            !args.requestheader_allowed_names.is_empty(),
            "--requestheader-allowed-names",
        ),
        (
            list_changed(
                &args.requestheader_username_headers,
                REQUESTHEADER_USERNAME_HEADERS,
            ),
            "--requestheader-username-headers",
        ),
        (
            !args.requestheader_uid_headers.is_empty(),
            "--requestheader-uid-headers",
        ),
        (
            list_changed(
                &args.requestheader_group_headers,
                REQUESTHEADER_GROUP_HEADERS,
            ),
            "--requestheader-group-headers",
        ),
        (
            list_changed(
                &args.requestheader_extra_headers_prefix,
                REQUESTHEADER_EXTRA_HEADERS_PREFIX,
            ),
            "--requestheader-extra-headers-prefix",
        ),
    ]
    .into_iter()
    .find_map(|(given, flag)| given.then_some(flag))
}

/// The first token-review flag given away from its default, if any.
fn delegated_flag_given(args: &ForwardProxyArgs) -> Option<&'static str> {
    let headers = forward_proxy::AuthHeaders::default();
    if let Some(flag) = requestheader_flag_given(args) {
        return Some(flag);
    }
    [
        (
            args.requestheader_client_ca_file.is_some(),
            "--requestheader-client-ca-file",
        ),
        (
            args.service_account_tokens != ServiceAccountTokens::Review,
            "--service-account-tokens",
        ),
        (args.review_rate_limit.is_some(), "--review-rate-limit"),
        (
            args.authentication_token_webhook_cache_ttl != DEFAULT_CACHE_TTL,
            "--authentication-token-webhook-cache-ttl",
        ),
        (
            args.authorization_webhook_cache_authorized_ttl != DEFAULT_CACHE_TTL,
            "--authorization-webhook-cache-authorized-ttl",
        ),
        (
            args.authorization_webhook_cache_unauthorized_ttl != DEFAULT_CACHE_TTL,
            "--authorization-webhook-cache-unauthorized-ttl",
        ),
        (args.review_burst.is_some(), "--review-burst"),
        (args.config_file.is_some(), "--config-file"),
        (!args.allow_paths.is_empty(), "--allow-paths"),
        (!args.ignore_paths.is_empty(), "--ignore-paths"),
        (
            !args.auth_token_audiences.is_empty(),
            "--auth-token-audiences",
        ),
        (
            !args.auth_header_fields_enabled,
            "--auth-header-fields-enabled",
        ),
        (
            args.auth_header_user_field_name != headers.user_header(),
            "--auth-header-user-field-name",
        ),
        (
            args.auth_header_groups_field_name != headers.groups_header(),
            "--auth-header-groups-field-name",
        ),
        (
            args.auth_header_groups_field_separator != headers.groups_separator(),
            "--auth-header-groups-field-separator",
        ),
    ]
    .into_iter()
    .find_map(|(given, flag)| given.then_some(flag))
}

/// The token-review mode's flags, checked and their files read.
struct DelegatedFlags {
    /// kube-rbac-proxy's configuration, if any.
    rbac: Option<RbacProxyConfig>,
    /// The headers the user goes to the add-on in.
    headers: Option<AuthHeaders>,
    /// `--client-ca-file`'s users.
    client_ca: Option<ClientCa>,
    /// `--requestheader-*`.
    front_proxy: Option<FrontProxyAuthenticator>,
    /// `--review-rate-limit`, `--review-burst`.
    rate_limit: Option<ReviewRateLimit>,
}

/// The token-review mode's flags, checked (the configuration file and the CA files read and
/// parsed, the header names checked) before any work.
fn delegated_flags(args: &ForwardProxyArgs) -> Result<DelegatedFlags, CliError> {
    for (given, flag) in [
        (args.issuer.is_some(), "--issuer"),
        (!args.audience.is_empty(), "--audience"),
        (args.audience_from_services, "--audience-from-services"),
        (args.jwks_file.is_some(), "--jwks-file"),
        (args.public_key_file.is_some(), "--public-key-file"),
    ] {
        if given {
            return Err(CliError::Usage(format!(
                "{flag} is a flag of --authentication=jwt; token-review reviews tokens with the \
                 API server (--auth-token-audiences for their audiences)"
            )));
        }
    }
    let headers = if args.auth_header_fields_enabled {
        Some(
            AuthHeaders::new(
                &args.auth_header_user_field_name,
                &args.auth_header_groups_field_name,
                &args.auth_header_groups_field_separator,
            )
            .map_err(|e| {
                CliError::Usage(format!(
                    "--auth-header-user-field-name {:?}, --auth-header-groups-field-name {:?}, \
                     --auth-header-groups-field-separator {:?}: {e}",
                    truncate(&args.auth_header_user_field_name),
                    truncate(&args.auth_header_groups_field_name),
                    truncate(&args.auth_header_groups_field_separator),
                ))
            })?,
        )
    } else {
        None
    };
    let mut config =
        match &args.config_file {
            Some(path) => {
                let bytes = read_config_file(path)?;
                Some(RbacProxyConfig::from_yaml(&bytes).map_err(|e| {
                    CliError::Proxy(format!("--config-file {}: {e}", path.display()))
                })?)
            }
            None => None,
        };
    if !args.allow_paths.is_empty() {
        config = Some(
            config
                .unwrap_or_default()
                .with_allow_paths(&args.allow_paths)
                .map_err(|e| CliError::Usage(format!("--allow-paths: {e}")))?,
        );
    }
    if !args.ignore_paths.is_empty() {
        config = Some(
            config
                .unwrap_or_default()
                .with_ignore_paths(&args.ignore_paths)
                .map_err(|e| CliError::Usage(format!("--ignore-paths: {e}")))?,
        );
    }
    if args.service_account_tokens.offline() && args.auth_token_audiences.is_empty() {
        return Err(CliError::Usage(format!(
            "{} needs --auth-token-audiences (the audiences the projected tokens are for)",
            args.service_account_tokens.flag()
        )));
    }
    let client_ca = match &args.client_ca_file {
        Some(path) => Some(read_ca_file("--client-ca-file", path)?),
        None => None,
    };
    let front_proxy = match &args.requestheader_client_ca_file {
        Some(path) => {
            let ca = read_ca_file("--requestheader-client-ca-file", path)?;
            let headers = RequestHeaderConfig::new(
                &args.requestheader_username_headers,
                &args.requestheader_group_headers,
                &args.requestheader_extra_headers_prefix,
            )
            .and_then(|h| h.with_uid_headers(&args.requestheader_uid_headers))
            .map_err(|e| CliError::Usage(format!("--requestheader-*-headers: {e}")))?;
            let allowed = args
                .requestheader_allowed_names
                .iter()
                .map(|n| n.trim().to_owned())
                .filter(|n| !n.is_empty())
                .collect();
            Some(FrontProxyAuthenticator::new(ca, allowed, headers))
        }
        None => {
            if let Some(flag) = requestheader_flag_given(args) {
                return Err(CliError::Usage(format!(
                    "{flag} needs --requestheader-client-ca-file (the front proxy's CA)"
                )));
            }
            None
        }
    };
    let rate_limit = args
        .review_rate_limit
        .map(|rate| ReviewRateLimit::new(rate, args.review_burst.unwrap_or(rate)));
    Ok(DelegatedFlags {
        rbac: config,
        headers,
        client_ca,
        front_proxy,
        rate_limit,
    })
}

/// A CA bundle named by `flag`, read and parsed.
fn read_ca_file(flag: &str, path: &std::path::Path) -> Result<ClientCa, CliError> {
    let bytes = read_flag_file(flag, path)?;
    ClientCa::from_pem(&bytes)
        .map_err(|e| CliError::Proxy(format!("{flag} {}: {e}", path.display())))
}

/// kube-rbac-proxy's configuration file, at most 1 MiB.
fn read_config_file(path: &std::path::Path) -> Result<Vec<u8>, CliError> {
    read_flag_file("--config-file", path)
}

/// The file `flag` names, at most 1 MiB; an error names the flag, the path and the OS reason.
fn read_flag_file(flag: &str, path: &std::path::Path) -> Result<Vec<u8>, CliError> {
    use std::io::Read as _;
    const LIMIT: u64 = 1 << 20;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(LIMIT.saturating_add(1)).read_to_end(&mut bytes))
        .map_err(|e| CliError::Proxy(format!("{flag} {}: {e}", path.display())))?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > LIMIT {
        return Err(CliError::Proxy(format!(
            "{flag} {}: larger than 1 MiB",
            path.display()
        )));
    }
    Ok(bytes)
}

/// At most 64 characters of a flag's value, for an error message.
fn truncate(value: &str) -> String {
    value.chars().take(64).collect()
}

/// The client for the API server: the kubeconfig or context named, else in-cluster, else
/// kube's inference.
async fn cluster_client(args: &ForwardProxyArgs) -> Result<kube::Client, CliError> {
    // In a pod: the service account (in-cluster config) unless a kubeconfig or context is named.
    let cluster = ClusterArgs {
        kubeconfig: args.kubeconfig.clone(),
        context: args.context.clone(),
    };
    if cluster.is_set() {
        Ok(kubeconfig::client(&cluster).await?.0)
    } else {
        let config = kube::Config::infer().await.map_err(CliError::InferConfig)?;
        kube::Client::try_from(config).map_err(CliError::Client)
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
    let client = cluster_client(args).await?;
    Ok(ServiceAudiences::new(client, &namespace, labels)
        .refresh_interval(args.audience_refresh_interval))
}

/// The flags checked for the mode chosen, before any work.
enum Mode {
    Jwt(String, KeySource),
    TokenReview(Box<DelegatedFlags>),
}

pub(crate) async fn run(args: &ForwardProxyArgs) -> Result<(), CliError> {
    let mode = match args.authentication {
        Authentication::Jwt => {
            let (issuer, keys) = jwt_flags(args)?;
            Mode::Jwt(issuer, keys)
        }
        Authentication::TokenReview => Mode::TokenReview(Box::new(delegated_flags(args)?)),
    };
    let (listen, tls) = serving(args)?;
    let config = match mode {
        Mode::Jwt(issuer, keys) => Config::new(&args.forward, &issuer, keys),
        Mode::TokenReview(flags) => {
            let DelegatedFlags {
                rbac,
                headers,
                client_ca,
                front_proxy,
                rate_limit,
            } = *flags;
            let client = cluster_client(args).await?;
            // k8s.io/apiserver caches a TokenReview's answer for the same TTL whether or not
            // it authenticated.
            let token_ttl = args.authentication_token_webhook_cache_ttl;
            let mut layer = DelegatedAuthLayer::new(client.clone())
                .token_audiences(args.auth_token_audiences.iter().cloned())
                .token_cache(
                    CacheConfig::default()
                        .with_allow_ttl(token_ttl)
                        .with_deny_ttl(token_ttl),
                )
                .access_cache(
                    CacheConfig::default()
                        .with_allow_ttl(args.authorization_webhook_cache_authorized_ttl)
                        .with_deny_ttl(args.authorization_webhook_cache_unauthorized_ttl),
                );
            if let Some(rbac) = rbac {
                layer = layer.rbac_proxy_config(rbac);
            }
            if let Some(front_proxy) = front_proxy {
                layer = layer.front_proxy(front_proxy);
            }
            if let Some(ca) = client_ca {
                layer = layer.client_ca(ca);
            }
            if args.service_account_tokens.offline() {
                let offline =
                    fetch_service_account_authenticator(&client, &args.auth_token_audiences)
                        .await
                        .map_err(|e| {
                            CliError::Proxy(format!("{}: {e}", args.service_account_tokens.flag()))
                        })?;
                layer = layer.service_account_tokens(offline);
            }
            if args.service_account_tokens == ServiceAccountTokens::OfflineOnly {
                layer = layer.token_reviews(TokenReviews::Disabled);
            }
            if let Some(limit) = rate_limit {
                layer = layer.review_rate_limit(limit);
            }
            Config::delegated(&args.forward, Delegated::new(layer).auth_headers(headers))
        }
    };
    let mut config = config
        .listen(listen)
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
    config = match tls {
        Some(tls) => config.tls(tls),
        None => config.plain_http(),
    };
    for audience in &args.audience {
        config = config.audience(audience);
    }
    if args.audience_from_services {
        config = config.services(services(args).await?);
    }
    log_configuration(args, listen);
    log_authenticators(args);
    forward_proxy::serve(config, crate::signals::terminated())
        .await
        .map_err(|e| proxy_error(&e, args))?;
    Ok(())
}

/// The configuration at info, once at start (the addresses as bound follow in the library's
/// `listening` line). Nothing secret: keys are named by their file, never read out.
fn log_configuration(args: &ForwardProxyArgs, listen: std::net::SocketAddr) {
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
    let auth_headers = match (args.authentication, args.auth_header_fields_enabled) {
        (Authentication::Jwt, _) => "X-Authenticated-User".to_owned(),
        (Authentication::TokenReview, true) => format!(
            "{} and {} (joined by {:?})",
            args.auth_header_user_field_name,
            args.auth_header_groups_field_name,
            args.auth_header_groups_field_separator
        ),
        (Authentication::TokenReview, false) => "none".to_owned(),
    };
    tracing::info!(
        %listen,
        authentication = match args.authentication {
            Authentication::Jwt => "jwt",
            Authentication::TokenReview => "token-review",
        },
        auth_headers,
        config_file = args.config_file.as_ref().map(|p| p.display().to_string()),
        auth_token_audiences = args.auth_token_audiences.join(","),
        serving = if args.insecure_listen_address.is_some() {
            "plain HTTP"
        } else {
            "TLS"
        },
        tls_cert_file = args.tls_cert_file.as_ref().map(|p| p.display().to_string()),
        tls_private_key_file = args.tls_private_key_file.as_ref().map(|p| p.display().to_string()),
        client_ca_file = args.client_ca_file.as_ref().map(|p| p.display().to_string()),
        tls_min_version = match args.tls_min_version {
            TlsMinVersion::VersionTls12 => "VersionTLS12",
            TlsMinVersion::VersionTls13 => "VersionTLS13",
        },
        tls_cipher_suites = args.tls_cipher_suites.join(","),
        http_address = %args.http_address,
        forward = args.forward,
        issuer = args.issuer.as_deref(),
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

/// Each enabled authenticator at info, one line each, in the order they are tried. Files are
/// named, never read out.
fn log_authenticators(args: &ForwardProxyArgs) {
    const ENABLED: &str = "forward-proxy: authenticator enabled";
    let path = |p: &Option<std::path::PathBuf>| p.as_ref().map(|p| p.display().to_string());
    if args.authentication == Authentication::Jwt {
        tracing::info!(
            authenticator = "add-on-jwt",
            issuer = args.issuer.as_deref(),
            "{ENABLED}"
        );
        return;
    }
    if let Some(ca) = path(&args.requestheader_client_ca_file) {
        let allowed_names = if args.requestheader_allowed_names.is_empty() {
            "any".to_owned()
        } else {
            args.requestheader_allowed_names.join(",")
        };
        tracing::info!(
            authenticator = "front-proxy",
            requestheader_client_ca_file = ca,
            allowed_names,
            username_headers = args.requestheader_username_headers.join(","),
            uid_headers = args.requestheader_uid_headers.join(","),
            group_headers = args.requestheader_group_headers.join(","),
            extra_headers_prefix = args.requestheader_extra_headers_prefix.join(","),
            "{ENABLED}"
        );
    }
    if let Some(ca) = path(&args.client_ca_file) {
        tracing::info!(authenticator = "x509", client_ca_file = ca, "{ENABLED}");
    }
    if args.service_account_tokens.offline() {
        tracing::info!(
            authenticator = "service-account-tokens-offline",
            audiences = args.auth_token_audiences.join(","),
            "{ENABLED}"
        );
    }
    if args.service_account_tokens == ServiceAccountTokens::OfflineOnly {
        tracing::info!(
            "forward-proxy: TokenReview disabled (--service-account-tokens=offline-only): any \
             other bearer token is refused"
        );
        return;
    }
    tracing::info!(
        authenticator = "token-review",
        audiences = if args.auth_token_audiences.is_empty() {
            "the API server's".to_owned()
        } else {
            args.auth_token_audiences.join(",")
        },
        review_rate_limit = args.review_rate_limit.map(NonZeroU32::get),
        review_burst = args
            .review_burst
            .or(args.review_rate_limit)
            .map(NonZeroU32::get),
        cache_ttl = ?args.authentication_token_webhook_cache_ttl,
        authorized_ttl = ?args.authorization_webhook_cache_authorized_ttl,
        unauthorized_ttl = ?args.authorization_webhook_cache_unauthorized_ttl,
        "{ENABLED}"
    );
}

/// The library's error in the flags' terms.
fn proxy_error(e: &forward_proxy::Error, args: &ForwardProxyArgs) -> CliError {
    CliError::Proxy(match e {
        forward_proxy::Error::StripHeaders(e) => format!("--strip-header: {e}"),
        forward_proxy::Error::AuthHeaders { what } => format!("--auth-header-*: {what}"),
        forward_proxy::Error::Forward => format!(
            "--forward {:?} is not host:port",
            args.forward.chars().take(64).collect::<String>()
        ),
        // Which flag named the address.
        forward_proxy::Error::Listen { addr, source } => {
            let (listen, flag) = match args.insecure_listen_address {
                Some(a) => (a, "--insecure-listen-address"),
                None => (args.secure_listen_address, "--secure-listen-address"),
            };
            let flag = if *addr == args.http_address && *addr != listen {
                "--http-address"
            } else {
                flag
            };
            format!("{flag} {addr}: {source}")
        }
        // Which flag named the file; the path and the OS's reason follow.
        forward_proxy::Error::Serving(ServingError::ReadTlsFile { file, path, source }) => {
            format!("{} {}: {source}", tls_flag(*file), path.display())
        }
        forward_proxy::Error::Serving(ServingError::TlsFileContents { file, path, reason }) => {
            format!("{} {}: {reason}", tls_flag(*file), path.display())
        }
        forward_proxy::Error::Serving(ServingError::KeyMismatch { cert, key }) => format!(
            "--tls-private-key-file {} is not the key of --tls-cert-file {}",
            key.display(),
            cert.display()
        ),
        forward_proxy::Error::Serving(ServingError::CipherSuite { name }) => {
            format!(
                "--tls-cipher-suites: {name:?} is unknown or not supported (AEAD suites with forward secrecy only)"
            )
        }
        forward_proxy::Error::Serving(ServingError::Tls(e)) => {
            format!("--tls-min-version/--tls-cipher-suites: {e}")
        }
        forward_proxy::Error::Threads(source) => {
            format!("--connection-threads {}: {source}", args.connection_threads)
        }
        other => other.to_string(),
    })
}

/// The flag that names a TLS file.
fn tls_flag(file: TlsFile) -> &'static str {
    match file {
        TlsFile::Certificate => "--tls-cert-file",
        TlsFile::PrivateKey => "--tls-private-key-file",
        TlsFile::ClientCa => "--client-ca-file",
        TlsFile::RequestHeaderClientCa => "--requestheader-client-ca-file",
        _ => "a TLS file",
    }
}
