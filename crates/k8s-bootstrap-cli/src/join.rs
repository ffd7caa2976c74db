//! `join`: kubeadm join's discovery, then the kubelet's TLS-bootstrap kubeconfig.

use std::path::PathBuf;
use std::time::SystemTime;

use k8s_bootstrap::bootstrap_token::BootstrapToken;
use k8s_bootstrap::clusterinfo::{FileDiscoveryConfig, PinSet, Refresh, TokenDiscoveryConfig};
use k8s_bootstrap::discovery::{self, Source};
use k8s_bootstrap::files::Existing;
use k8s_bootstrap::tls_bootstrap::Waiting;

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
    let node = preflight(args)?;
    // --token, $K8S_BOOTSTRAP_TOKEN or --token-file: one of them at a time.
    let from_env = token_from_env()?;
    let mut given: Vec<&str> = Vec::new();
    if args.token.is_some() {
        given.push("--token");
    }
    if args.token_file.is_some() {
        given.push("--token-file");
    }
    if from_env.is_some() {
        given.push(TOKEN_ENV_NAMED);
    }
    if let [first, .., last] = given.as_slice() {
        let rest = given
            .get(1..given.len().saturating_sub(1))
            .unwrap_or_default();
        let mut named = (*first).to_owned();
        for middle in rest {
            named.push_str(", ");
            named.push_str(middle);
        }
        let all = if given.len() > 2 { "all" } else { "both" };
        return Err(CliError::Usage(format!(
            "{named} and {last} are {all} set; give the token in one of them"
        )));
    }
    let from_file = args
        .token_file
        .as_deref()
        .map(read_token_file)
        .transpose()?;
    let token = match (&from_file, &from_env) {
        (Some(t), _) => Token {
            value: Some(t.as_str()),
            flag: "--token-file",
        },
        (None, Some(t)) => Token {
            value: Some(t.as_str()),
            flag: TOKEN_ENV_NAMED,
        },
        (None, None) => Token {
            value: args.token.as_deref(),
            flag: "--token",
        },
    };
    let tls_token = match &args.tls_bootstrap_token {
        Some(t) => parse_token(Some(t.as_str()), "--tls-bootstrap-token")?,
        None => parse_token(token.value, token.flag)?,
    };
    let (source, target) = source(args, timeout, &token)?;
    let Some(tls_token) = tls_token else {
        return Err(CliError::Usage(
            "no token for the TLS bootstrap: give --token (or --token-file, or \
             $K8S_BOOTSTRAP_TOKEN) or --tls-bootstrap-token"
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
    discovery::write_kubeconfig(path, kubeconfig.expose_secret(), existing(args)).map_err(
        |source| match source {
            // Created by another process since the check before discovery.
            discovery::Error::Write { source, .. }
                if source.kind() == std::io::ErrorKind::AlreadyExists =>
            {
                CliError::Exists {
                    flag: "--tls-bootstrap-kubeconfig",
                    path: path.clone(),
                    command: "join",
                }
            }
            source => CliError::WriteKubeconfig {
                path: path.clone(),
                source,
            },
        },
    )?;
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
            CliError::Usage(
                "--node-name: the TLS bootstrap needs the cluster CA, and discovery trusted none \
                 (the discovery file names no certificate authority)"
                    .to_owned(),
            )
        })?;
    tls_bootstrap(
        args,
        &node,
        kubeconfig.expose_secret(),
        kubeconfig.server(),
        &ca_pem,
    )
    .await?;
    if args.serving {
        serving(args, &node).await?;
    }
    Ok(())
}

/// `--serving`: the kubelet's serving certificate (`serverTLSBootstrap`), requested with the
/// node's new client credentials (the requester is then `system:node:<name>`, as approvers
/// expect) by the library's certificate manager, which writes it in the kubelet's layout
/// (`kubelet-server-<timestamp>.pem`, `kubelet-server-current.pem`). join waits until it is
/// issued, the request is denied or fails, or `--serving-timeout` runs out.
async fn serving(
    args: &JoinArgs,
    node: &k8s_bootstrap::tls_bootstrap::NodeName,
) -> Result<(), CliError> {
    use k8s_bootstrap::node_certificates::{CertificateKind, CertificateStore, Clients, Manager};
    use k8s_bootstrap::tls_bootstrap::rotation::Bootstrap;

    let failed = |message: String| CliError::Serving {
        message,
        kubeconfig: args.kubelet_kubeconfig.clone(),
    };
    let kubeconfig = kube::config::Kubeconfig::read_from(&args.kubelet_kubeconfig)
        .map_err(|e| failed(format!("reading the node's kubeconfig: {e}")))?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .map_err(|e| failed(format!("reading the node's kubeconfig: {e}")))?;
    let client = kube::Client::try_from(config.clone())
        .map_err(|e| failed(format!("a client for the node's kubeconfig: {e}")))?;
    let store =
        CertificateStore::new(SERVING_PAIR, &args.cert_dir).map_err(|e| failed(e.to_string()))?;
    let kind = CertificateKind::Serving {
        node: node.clone(),
        dns_names: serving_dns_names(args),
        ip_addresses: args.address.clone(),
    };
    // The node's client certificate stands in for the bootstrap credential: with no serving
    // certificate yet, the manager files the request with it.
    let clients = Clients::from_config(config).with_bootstrap(client, Bootstrap::Present);
    let (_templates, templates) = tokio::sync::watch::channel(Some(kind));
    let manager =
        Manager::new(store.clone(), clients, templates).with_wait_timeout(args.serving_timeout);
    let mut published = manager.subscribe();
    let waiting = format!(
        "waiting for the serving certificate of {user} (signer {signer}, timeout {timeout}): \
         kube-controller-manager never approves serving requests; an administrator (kubectl \
         certificate approve <name>) or an approver controller must",
        user = node.user_name(),
        signer = k8s_bootstrap::tls_bootstrap::KUBELET_SERVING_SIGNER,
        timeout = k8s_bootstrap::bootstrap_token::format_go_duration(args.serving_timeout),
    );
    let status = published.clone();
    let progress = || {
        let pending = status.borrow().pending_request().map(str::to_owned)?;
        Some(format!(
            "{pending} pending approval (kubectl certificate approve {pending})"
        ))
    };
    // What the manager publishes, read as it changes: the request's name is said once it is
    // filed; the first installed certificate or the first failure ends the wait (the manager
    // itself would retry for ever).
    let watch = async {
        let mut announced: Option<String> = None;
        loop {
            let (pending, outcome) = {
                let s = published.borrow_and_update();
                let outcome = if s.rotations() > 0 {
                    Some(Ok(s.last_written().map(std::path::Path::to_owned)))
                } else if s.failed_attempts() > 0 {
                    Some(Err(s.last_failure().unwrap_or_default().to_owned()))
                } else {
                    None
                };
                (s.pending_request().map(str::to_owned), outcome)
            };
            if let Some(name) = pending
                && announced.as_deref() != Some(name.as_str())
            {
                crate::progress::note(&format!(
                    "certificate signing request {name} filed for the serving certificate \
                     (signer {signer}); approve it: kubectl certificate approve {name}",
                    signer = k8s_bootstrap::tls_bootstrap::KUBELET_SERVING_SIGNER,
                ));
                announced = Some(name);
            }
            if let Some(outcome) = outcome {
                return outcome;
            }
            if published.changed().await.is_err() {
                return Err("the certificate manager stopped".to_owned());
            }
        }
    };
    let outcome = crate::progress::report_with(&waiting, progress, async {
        tokio::select! {
            r = manager.run() => Err(r.err().map_or_else(String::new, |e| e.to_string())),
            o = watch => o,
        }
    })
    .await
    .map_err(failed)?;
    let current = store.current_path();
    let written = outcome.unwrap_or_else(|| current.clone());
    crate::output::print(&format!(
        "wrote the serving certificate of {user} to {written}\n\
         {current} links to it\n",
        user = node.user_name(),
        written = written.display(),
        current = current.display(),
    ))
}

/// The serving pair's name in `--cert-dir`, as the kubelet's.
const SERVING_PAIR: &str = "kubelet-server";

/// The serving certificate's DNS names: the node name, then `--hostname`.
fn serving_dns_names(args: &JoinArgs) -> Vec<String> {
    let mut names: Vec<String> = args.node_name.iter().cloned().collect();
    names.extend(args.hostname.iter().cloned());
    names
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
            let pem = key.to_pem().map_err(key_err)?;
            k8s_bootstrap::files::write_private(&key_path, pem.as_bytes(), Existing::Refuse)
                .map_err(|source| CliError::Read {
                    path: key_path.clone(),
                    source,
                })?;
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
    let name = csr::request_name(node, &key).map_err(CliError::TlsBootstrap)?;
    let waiting = format!(
        "waiting for the certificate of {user}: certificate signing request {name}, to be \
         approved and signed (timeout {timeout}); if it waits for an administrator: \
         kubectl certificate approve {name}",
        user = node.user_name(),
        timeout = k8s_bootstrap::bootstrap_token::format_go_duration(options.timeout)
    );
    // What the request waits for, as last read (the core tells): the end of each progress
    // line. Approval without a certificate is also said at once, and what issues it.
    let status = std::sync::Mutex::new(pending_approval(&name));
    let progress = |waiting: Waiting<'_>| {
        let (line, announce) = wait_lines(&name, waiting);
        if let Ok(mut last) = status.lock()
            && *last != line
        {
            if let Some(announce) = announce {
                crate::progress::note(&announce);
            }
            *last = line;
        }
    };
    let cert = crate::progress::report_with(
        &waiting,
        || status.lock().ok().map(|s| s.clone()),
        csr::request_certificate_with_progress(&client, node, &key, ca_pem, &options, progress),
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
        existing(args),
    )
    .map_err(|e| match e {
        // Created by another process since the check before discovery.
        csr::Error::Write { path, source }
            if source.kind() == std::io::ErrorKind::AlreadyExists =>
        {
            let flag = if path == args.kubelet_kubeconfig {
                "--kubelet-kubeconfig"
            } else {
                "--cert-dir"
            };
            CliError::Exists {
                flag,
                path,
                command: "join",
            }
        }
        e => CliError::TlsBootstrap(e),
    })?;
    // The kubelet removes its temporary key once the certificate holds it (a key left by a join
    // that was stopped is this command's own file, and its key is now in the certificate file).
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

/// The progress line's end while certificate signing request `name` waits for approval.
fn pending_approval(name: &str) -> String {
    format!("{name} pending approval (kubectl certificate approve {name})")
}

/// What the progress lines say while certificate signing request `name` waits for `waiting`,
/// and the line to write at once when it comes to that (approved, no certificate: what issues
/// it, and what that needs).
fn wait_lines(name: &str, waiting: Waiting<'_>) -> (String, Option<String>) {
    match waiting {
        Waiting::Issuance {
            signer_name,
            issuer,
        } => (
            format!(
                "{name} approved, waiting for signer {signer_name} to issue the certificate \
                 ({issuer})"
            ),
            Some(format!(
                "certificate signing request {name} is approved; waiting for signer \
                 {signer_name} to issue the certificate: {issuer}"
            )),
        ),
        _ => (pending_approval(name), None),
    }
}

/// Everything the flags alone can tell, checked before discovery runs (which may take minutes):
/// the node name, and that each file `join` will write can be created where it goes (it does
/// not exist unless --force, two flags do not name the same file, its directory exists and
/// takes a file; `--cert-dir` is created if missing, so its nearest existing ancestor must
/// take one). Errors name the flag, the path and the OS reason. Returns the node name, parsed,
/// when the TLS bootstrap is asked for.
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
            .map_err(|e| CliError::Usage(format!("{flag}: cannot write in {}: {e}", dir.display())))
    };
    let parent = |p: &Path| p.parent().map(Path::to_owned).unwrap_or_default();
    let new_file = |flag: &'static str, path: &Path| -> Result<(), CliError> {
        match std::fs::symlink_metadata(path) {
            Ok(_) if !args.force => Err(CliError::Exists {
                flag,
                path: path.to_owned(),
                command: "join",
            }),
            Ok(m) if m.is_dir() => Err(CliError::Usage(format!(
                "{flag} {}: a directory, not a file",
                path.display()
            ))),
            _ => Ok(()),
        }
    };
    new_file("--tls-bootstrap-kubeconfig", &args.tls_bootstrap_kubeconfig)?;
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
        .map_err(|e| CliError::Usage(format!("--node-name {node_name:?}: {e}")))?;
    let pem = args.cert_dir.join("kubelet-client-current.pem");
    let same = |a: &Path, b: &Path| {
        a == b
            || matches!((std::path::absolute(a), std::path::absolute(b)), (Ok(a), Ok(b)) if a == b)
    };
    for (flag, path) in [
        ("--kubelet-kubeconfig", &args.kubelet_kubeconfig),
        ("--cert-dir", &pem),
    ] {
        if same(path, &args.tls_bootstrap_kubeconfig) {
            return Err(CliError::Usage(format!(
                "{flag} and --tls-bootstrap-kubeconfig both name {}: give each its own file",
                path.display()
            )));
        }
    }
    if same(&pem, &args.kubelet_kubeconfig) {
        return Err(CliError::Usage(format!(
            "--cert-dir and --kubelet-kubeconfig both name {}: give each its own file",
            pem.display()
        )));
    }
    new_file("--kubelet-kubeconfig", &args.kubelet_kubeconfig)?;
    new_file("--cert-dir", &pem)?;
    if args.serving {
        // The request as it will be filed: its names and addresses are checked now.
        let key = k8s_bootstrap::tls_bootstrap::NodeKey::generate()
            .map_err(|e| CliError::Usage(format!("--serving: {e}")))?;
        let names = serving_dns_names(args);
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        k8s_bootstrap::tls_bootstrap::CertificateRequest::for_node_serving(
            &node,
            &key,
            &names,
            &args.address,
        )
        .map_err(|e| CliError::Usage(format!("--hostname/--address: {e}")))?;
        // join never replaces a serving certificate, even with --force: `node-certificates
        // --serving` keeps an existing one current.
        let serving = args.cert_dir.join(format!("{SERVING_PAIR}-current.pem"));
        if std::fs::symlink_metadata(&serving).is_ok() {
            return Err(CliError::Usage(format!(
                "--serving: {} already exists; join does not replace a serving certificate \
                 (k8s-bootstrap node-certificates --serving keeps it current)",
                serving.display()
            )));
        }
    }
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
        return Err(CliError::Usage(format!(
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

/// Whether `join` may replace its output files (`--force`).
fn existing(args: &JoinArgs) -> Existing {
    if args.force {
        Existing::Replace
    } else {
        Existing::Refuse
    }
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
            return Err(CliError::Usage(format!(
                "--discovery-file {file:?}: a URL must be https:// (or give a file path)"
            )));
        }
        let kubeconfig = PathBuf::from(path);
        match std::fs::metadata(&kubeconfig) {
            Ok(m) if m.is_file() => {}
            Ok(_) => {
                return Err(CliError::Usage(format!(
                    "--discovery-file {}: not a file (give a kubeconfig file or an https:// URL)",
                    kubeconfig.display()
                )));
            }
            Err(e) => {
                return Err(CliError::Usage(format!(
                    "--discovery-file {}: {e} (give a kubeconfig file or an https:// URL)",
                    kubeconfig.display()
                )));
            }
        }
        let target = format!("discovering the cluster from {}", kubeconfig.display());
        return Ok((Source::File { kubeconfig, config }, target));
    }

    let Some(endpoint) = &args.endpoint else {
        return Err(CliError::Usage(
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
            return Err(CliError::Usage(format!(
                "API server endpoint {endpoint:?}: give host:port (or https://host:port), without a path"
            )));
        }
        Some((scheme, _)) => {
            let scheme: String = scheme.chars().take(16).collect();
            return Err(CliError::Usage(format!(
                "API server endpoint {endpoint:?}: discovery uses HTTPS, not {scheme:?}: give host:port"
            )));
        }
    };
    let token = match &args.discovery_token {
        Some(t) => parse_token(Some(t.as_str()), "--discovery-token")?,
        None => parse_token(token.value, token.flag)?,
    }
    .ok_or_else(|| {
        CliError::Usage(
            "no token for discovery: give --token (or --token-file, or $K8S_BOOTSTRAP_TOKEN) or \
             --discovery-token"
                .to_owned(),
        )
    })?;
    let mut pins = PinSet::new();
    for hash in &args.ca_cert_hashes {
        pins.allow(hash).map_err(|e| {
            CliError::Usage(format!(
                "--discovery-token-ca-cert-hash: invalid discovery token CA certificate hash: {e}"
            ))
        })?;
    }
    let mut config = TokenDiscoveryConfig::new(endpoint, token)
        .map_err(|e| {
            CliError::Usage(format!(
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
    match config.clone().start(now()) {
        Ok(_) => {}
        Err(k8s_bootstrap::clusterinfo::Error::NoPins) => {
            return Err(CliError::Usage(format!(
                "no --discovery-token-ca-cert-hash: {}; pass --discovery-token-ca-cert-hash \
                 sha256:<hex> (`k8s-bootstrap pin ca.crt` prints it, as does `token create \
                 --print-join-command`), or --discovery-token-unsafe-skip-ca-verification to \
                 trust the token's signature alone",
                k8s_bootstrap::clusterinfo::Error::NoPins
            )));
        }
        Err(e) => return Err(CliError::Usage(format!("token discovery: {e}"))),
    }
    Ok((
        Source::Token(config),
        format!("waiting for the signed cluster-info from {endpoint}"),
    ))
}

/// The shared token (`--token`, `$K8S_BOOTSTRAP_TOKEN` or `--token-file`) and the flag to name
/// when it is not a token.
struct Token<'a> {
    value: Option<&'a str>,
    flag: &'static str,
}

/// The environment variable that holds the shared token.
const TOKEN_ENV: &str = "K8S_BOOTSTRAP_TOKEN";

/// [`TOKEN_ENV`] as errors name it.
const TOKEN_ENV_NAMED: &str = "the environment variable K8S_BOOTSTRAP_TOKEN";

/// The token in [`TOKEN_ENV`], when it is set and not empty (an empty one is unset, as clap
/// reads a flag's variable), kept in memory that is wiped when dropped.
fn token_from_env() -> Result<Option<zeroize::Zeroizing<String>>, CliError> {
    match std::env::var(TOKEN_ENV) {
        Ok(v) if v.is_empty() => Ok(None),
        Ok(v) => Ok(Some(zeroize::Zeroizing::new(v))),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(CliError::Usage(format!(
            "{TOKEN_ENV_NAMED} is not UTF-8 text, so not a bootstrap token"
        ))),
    }
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
    value: Option<&str>,
    what: &'static str,
) -> Result<Option<BootstrapToken>, CliError> {
    value
        .map(|s| {
            s.parse::<BootstrapToken>()
                .map_err(|source| CliError::InvalidToken { what, source })
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use k8s_bootstrap::tls_bootstrap::{Issuer, KUBELET_CLIENT_SIGNER, Waiting};

    use super::wait_lines;

    /// Pending: the command that approves it, nothing to say at once. Approved without a
    /// certificate: the signer and what issues for it, in the progress line and at once.
    #[test]
    fn the_progress_line_tells_pending_approval_from_waiting_for_the_signer() {
        assert_eq!(
            wait_lines("node-csr-x", Waiting::Approval),
            (
                "node-csr-x pending approval (kubectl certificate approve node-csr-x)".to_owned(),
                None
            )
        );
        let (line, announce) = wait_lines(
            "node-csr-x",
            Waiting::Issuance {
                signer_name: KUBELET_CLIENT_SIGNER,
                issuer: Issuer::KubeControllerManager,
            },
        );
        assert_eq!(
            line,
            "node-csr-x approved, waiting for signer kubernetes.io/kube-apiserver-client-kubelet \
             to issue the certificate (kube-controller-manager's csrsigning controller issues \
             it, and runs only with --cluster-signing-cert-file and --cluster-signing-key-file)"
        );
        assert_eq!(
            announce.as_deref(),
            Some(
                "certificate signing request node-csr-x is approved; waiting for signer \
                 kubernetes.io/kube-apiserver-client-kubelet to issue the certificate: \
                 kube-controller-manager's csrsigning controller issues it, and runs only with \
                 --cluster-signing-cert-file and --cluster-signing-key-file"
            )
        );
        let (line, _) = wait_lines(
            "node-csr-x",
            Waiting::Issuance {
                signer_name: "example.com/signer",
                issuer: Issuer::External,
            },
        );
        assert!(line.contains("signer example.com/signer"), "{line}");
        assert!(line.contains("outside Kubernetes"), "{line}");
    }
}
