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
    // --token, $K8S_BOOTSTRAP_TOKEN or --token-file (clap refuses two of them).
    let from_file = args
        .token_file
        .as_deref()
        .map(read_token_file)
        .transpose()?;
    let token = Token {
        value: from_file.as_deref().or(args.token.as_ref()),
        flag: if from_file.is_some() {
            "--token-file"
        } else {
            "--token"
        },
    };
    let tls_token = match &args.tls_bootstrap_token {
        Some(t) => parse_token(Some(t), "--tls-bootstrap-token")?,
        None => parse_token(token.value, token.flag)?,
    };
    let node = preflight(args)?;
    let (source, target) = source(args, timeout, &token)?;
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
    // Why the last attempt failed, for the progress line (kubeadm logs each failed attempt).
    let last_failure = std::sync::Arc::new(std::sync::Mutex::new(None::<String>));
    let discoverer = {
        let last_failure = last_failure.clone();
        discovery::Discoverer::new().on_retry(move |reason| {
            if let Ok(mut last) = last_failure.lock() {
                *last = Some(reason.to_string());
            }
        })
    };
    let discovered = crate::progress::report_with(
        &waiting,
        || last_failure.lock().ok().and_then(|l| l.clone()),
        discoverer.discover(source),
    )
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
    ))?;
    let Some(node) = node else {
        return Ok(());
    };
    let ca_pem = discovered
        .cluster_info()
        .ca_bundle()
        .map(|b| b.as_pem().to_owned())
        .ok_or_else(|| {
            CliError::JoinFlags(
                "the TLS bootstrap needs the cluster CA, and discovery trusted none".to_owned(),
            )
        })?;
    tls_bootstrap(
        args,
        &node,
        kubeconfig.expose_secret(),
        kubeconfig.server(),
        &ca_pem,
    )
    .await
}

/// The kubelet's TLS bootstrap: the node's key (kept in `<cert-dir>/kubelet-client.key.tmp`
/// until the certificate arrives, so a restarted join files the same request), its CSR, the
/// certificate, and the node's kubeconfig.
async fn tls_bootstrap(
    args: &JoinArgs,
    node: &k8s_bootstrap::tls_bootstrap::NodeName,
    bootstrap_kubeconfig: &str,
    server: &str,
    ca_pem: &str,
) -> Result<(), CliError> {
    use k8s_bootstrap::csr;
    use k8s_bootstrap::tls_bootstrap::NodeKey;

    let key_path = args.cert_dir.join("kubelet-client.key.tmp");
    let key_err = |source| CliError::NodeKey {
        path: key_path.clone(),
        source,
    };
    let key = match std::fs::read(&key_path) {
        Ok(pem) => NodeKey::from_pem(&pem).map_err(key_err)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key = NodeKey::generate().map_err(key_err)?;
            std::fs::create_dir_all(&args.cert_dir).map_err(|source| CliError::Read {
                path: args.cert_dir.clone(),
                source,
            })?;
            write_private(&key_path, key.to_pem().map_err(key_err)?.as_bytes())?;
            key
        }
        Err(source) => {
            return Err(CliError::Read {
                path: key_path.clone(),
                source,
            });
        }
    };
    let client = csr::client_from_kubeconfig(bootstrap_kubeconfig)
        .await
        .map_err(CliError::TlsBootstrap)?;
    let mut options = csr::Options::default();
    options.timeout = args.tls_bootstrap_timeout;
    let waiting = format!(
        "waiting for the certificate of {} (timeout {})",
        node.user_name(),
        k8s_bootstrap::bootstrap_token::format_go_duration(options.timeout)
    );
    let cert = crate::progress::report(
        &waiting,
        csr::request_certificate(&client, node, &key, ca_pem, &options),
    )
    .await
    .map_err(CliError::TlsBootstrap)?;
    let pem_path = args.cert_dir.join("kubelet-client-current.pem");
    csr::write_credentials(
        &pem_path,
        &args.kubelet_kubeconfig,
        server,
        ca_pem,
        &cert,
        &key,
    )
    .map_err(CliError::TlsBootstrap)?;
    // The kubelet removes its temporary key once the certificate holds it.
    let _ = std::fs::remove_file(&key_path);
    crate::output::print(&format!(
        "wrote the client certificate of {user} (valid until {until}) to {pem}\n\
         wrote the node's kubeconfig to {kc}\n\
         kubectl can use it: kubectl --kubeconfig {kc} auth whoami\n",
        user = node.user_name(),
        until = k8s_bootstrap::tls_bootstrap::rfc3339(cert.not_after()),
        pem = pem_path.display(),
        kc = args.kubelet_kubeconfig.display(),
    ))
}

/// Everything the flags alone can tell, checked before discovery runs (which may take minutes):
/// the node name, and that each file `join` will write can be created where it goes (its
/// directory exists and takes a file; `--cert-dir` is created if missing, so its nearest
/// existing ancestor must take one). Errors name the flag, the path and the OS reason.
/// Returns the node name, parsed, when the TLS bootstrap is asked for.
fn preflight(args: &JoinArgs) -> Result<Option<k8s_bootstrap::tls_bootstrap::NodeName>, CliError> {
    use std::path::Path;
    let writable_dir = |flag: &str, dir: &Path| -> Result<(), CliError> {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        // A probe file, created and removed: the OS says whether the directory takes files.
        let nanos = now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let probe = dir.join(format!(
            ".k8s-bootstrap-check-{}-{nanos}",
            std::process::id()
        ));
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&probe)
            .map(|file| {
                drop(file);
                let _ = std::fs::remove_file(&probe);
            })
            .map_err(|e| {
                CliError::JoinFlags(format!("{flag}: cannot write in {}: {e}", dir.display()))
            })
    };
    let parent = |p: &Path| p.parent().map(Path::to_owned).unwrap_or_default();
    writable_dir(
        &format!(
            "--tls-bootstrap-kubeconfig {}",
            args.tls_bootstrap_kubeconfig.display()
        ),
        &parent(&args.tls_bootstrap_kubeconfig),
    )?;
    let Some(node_name) = &args.node_name else {
        return Ok(None);
    };
    let node = node_name
        .parse::<k8s_bootstrap::tls_bootstrap::NodeName>()
        .map_err(|e| CliError::JoinFlags(format!("--node-name {node_name:?}: {e}")))?;
    writable_dir(
        &format!("--kubelet-kubeconfig {}", args.kubelet_kubeconfig.display()),
        &parent(&args.kubelet_kubeconfig),
    )?;
    // The certificate directory, or the nearest ancestor that exists (it is created).
    let mut existing = args.cert_dir.clone();
    while !existing.as_os_str().is_empty() && !existing.exists() {
        existing = parent(&existing);
    }
    if !existing.as_os_str().is_empty() && !existing.is_dir() {
        return Err(CliError::JoinFlags(format!(
            "--cert-dir {}: {} is not a directory",
            args.cert_dir.display(),
            existing.display()
        )));
    }
    writable_dir(
        &format!("--cert-dir {}", args.cert_dir.display()),
        &existing,
    )?;
    Ok(Some(node))
}

/// Writes a file only its owner can read.
fn write_private(path: &std::path::Path, contents: &[u8]) -> Result<(), CliError> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    options
        .open(path)
        .and_then(|mut f| f.write_all(contents).and_then(|()| f.sync_all()))
        .map_err(|source| CliError::Read {
            path: path.to_owned(),
            source,
        })
}

/// The discovery source kubeadm would choose (`--discovery-file` wins over token discovery),
/// checked as kubeadm checks its flags, and the progress line to show while it runs.
fn source(
    args: &JoinArgs,
    timeout: std::time::Duration,
    token: &Token<'_>,
) -> Result<(Source, String), CliError> {
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
        match std::fs::metadata(&kubeconfig) {
            Ok(m) if m.is_file() => {}
            Ok(_) => {
                return Err(CliError::JoinFlags(format!(
                    "--discovery-file {}: not a file (give a kubeconfig file or an https:// URL)",
                    kubeconfig.display()
                )));
            }
            Err(e) => {
                return Err(CliError::JoinFlags(format!(
                    "--discovery-file {}: {e} (give a kubeconfig file or an https:// URL)",
                    kubeconfig.display()
                )));
            }
        }
        let target = format!("discovering the cluster from {}", kubeconfig.display());
        return Ok((Source::File { kubeconfig, config }, target));
    }

    let Some(endpoint) = &args.endpoint else {
        return Err(CliError::JoinFlags(
            "no API server endpoint: give it as the first argument (host:port, as \
             `k8s-bootstrap join 10.0.0.1:6443 --token ...`), or use --discovery-file"
                .to_owned(),
        ));
    };
    // A URL as kubeadm's users write it: `https://host:port` (a trailing slash allowed) is
    // the endpoint `host:port`; any other scheme or a path is refused by name.
    let endpoint = match endpoint.split_once("://") {
        None => endpoint.as_str(),
        Some(("https", rest)) if !rest.trim_end_matches('/').contains('/') => {
            rest.trim_end_matches('/')
        }
        Some(("https", _)) => {
            return Err(CliError::JoinFlags(format!(
                "API server endpoint {endpoint:?}: give host:port (or https://host:port), without a path"
            )));
        }
        Some((scheme, _)) => {
            let scheme: String = scheme.chars().take(16).collect();
            return Err(CliError::JoinFlags(format!(
                "API server endpoint {endpoint:?}: discovery uses HTTPS, not {scheme:?}: give host:port"
            )));
        }
    };
    let token = match &args.discovery_token {
        Some(t) => parse_token(Some(t), "--discovery-token")?,
        None => parse_token(token.value, token.flag)?,
    }
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
                "API server endpoint {endpoint:?}: {e} (give host:port, as 10.0.0.1:6443)"
            ))
        })?
        .with_pins(pins)
        .with_timeout(timeout);
    if args.discovery_token_unsafe_skip_ca_verification {
        eprintln!(
            "warning: --discovery-token-unsafe-skip-ca-verification: the cluster CA is not pinned; \
             it is trusted on the token's signature alone, so anyone who knows the token can pose \
             as the cluster (pin it with --discovery-token-ca-cert-hash)"
        );
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

/// The shared token (`--token`, `$K8S_BOOTSTRAP_TOKEN` or `--token-file`) and the flag to name
/// when it is not a token.
struct Token<'a> {
    value: Option<&'a String>,
    flag: &'static str,
}

/// The most a token file may hold: a token is 23 bytes.
const MAX_TOKEN_FILE_BYTES: usize = 4096;

/// The token in `path` (`--token-file`), trailing line breaks removed; read at most
/// [`MAX_TOKEN_FILE_BYTES`] (and one more, to tell a larger file), kept in memory that is
/// wiped when dropped. Errors name the flag, the path and the reason, never the contents.
fn read_token_file(path: &std::path::Path) -> Result<zeroize::Zeroizing<String>, CliError> {
    use std::io::Read as _;
    let err = |source| CliError::TokenFile {
        path: path.to_owned(),
        source,
    };
    let mut bytes = zeroize::Zeroizing::new(Vec::with_capacity(64));
    let limit = u64::try_from(MAX_TOKEN_FILE_BYTES)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    std::fs::File::open(path)
        .and_then(|f| f.take(limit).read_to_end(&mut bytes))
        .map_err(err)?;
    if bytes.len() > MAX_TOKEN_FILE_BYTES {
        return Err(err(std::io::Error::other(format!(
            "larger than {MAX_TOKEN_FILE_BYTES} bytes, not a bootstrap token"
        ))));
    }
    let mut text =
        zeroize::Zeroizing::new(String::from_utf8(std::mem::take(&mut *bytes)).map_err(|e| {
            // The bytes move into the error; wipe them there.
            let mut bytes = e.into_bytes();
            zeroize::Zeroize::zeroize(&mut bytes);
            err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "not UTF-8 text",
            ))
        })?);
    let kept = text.trim_end_matches(['\n', '\r']).len();
    text.truncate(kept);
    Ok(text)
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
