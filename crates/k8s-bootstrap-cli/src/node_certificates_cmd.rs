//! `k8s-bootstrap node-certificates`: the library's certificate manager for the node's client
//! or serving certificate, with its /healthz, /readyz and /metrics, until SIGTERM or Ctrl-C.

use std::path::Path;

use k8s_bootstrap::node_certificates::{
    self, CertificateKind, CertificateMetrics, CertificateStore, Clients, Manager,
};
use k8s_bootstrap::tls_bootstrap::rotation::Bootstrap;
use k8s_bootstrap::tls_bootstrap::{CertificateRequest, NodeKey, NodeName};

use crate::args::NodeCertificatesArgs;
use crate::error::CliError;

/// The largest kubeconfig read, in bytes.
const MAX_KUBECONFIG_BYTES: u64 = 1024 * 1024;

pub(crate) async fn run(args: &NodeCertificatesArgs) -> Result<(), CliError> {
    let node: NodeName = args
        .node_name
        .parse()
        .map_err(|e| CliError::Usage(format!("--node-name {:?}: {e}", args.node_name)))?;
    let (pair, kind) = if args.serving {
        let mut dns_names = vec![args.node_name.clone()];
        dns_names.extend(args.hostname.iter().cloned());
        // The names and addresses are checked before any work.
        let names: Vec<&str> = dns_names.iter().map(String::as_str).collect();
        let key = NodeKey::generate().map_err(|e| CliError::NodeCertificates(e.to_string()))?;
        CertificateRequest::for_node_serving(&node, &key, &names, &args.address)
            .map_err(|e| CliError::Usage(format!("--hostname/--address: {e}")))?;
        let kind = CertificateKind::Serving {
            node,
            dns_names,
            ip_addresses: args.address.clone(),
        };
        ("kubelet-server", kind)
    } else {
        ("kubelet-client", CertificateKind::Client { node })
    };
    if args.bootstrap_kubeconfig.is_none() && args.cluster.kubeconfig.is_none() {
        return Err(CliError::Usage(
            "node-certificates needs --bootstrap-kubeconfig, --kubeconfig or both".to_owned(),
        ));
    }
    // The HTTP address is bound before any certificate work, so that a busy port fails fast.
    let listener = match args.http_address() {
        Some(addr) => Some(
            tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|source| CliError::Listen {
                    flag: "--http-address",
                    addr,
                    source,
                })?,
        ),
        None => None,
    };
    let bootstrap = match &args.bootstrap_kubeconfig {
        Some(path) => {
            let yaml = read_kubeconfig(path)?;
            let config = config_from_yaml(&yaml, path, None).await?;
            let client =
                kube::Client::try_from(config.clone()).map_err(|e| CliError::Kubeconfig {
                    path: path.clone(),
                    message: e.to_string(),
                })?;
            Some((client, config))
        }
        None => None,
    };
    let config = match (&args.cluster.kubeconfig, &bootstrap) {
        (Some(path), _) => {
            let yaml = read_kubeconfig(path)?;
            config_from_yaml(&yaml, path, args.cluster.context.as_deref()).await?
        }
        (None, Some((_, config))) => config.clone(),
        (None, None) => {
            return Err(CliError::Usage(
                "node-certificates needs --bootstrap-kubeconfig or --kubeconfig".to_owned(),
            ));
        }
    };
    let store = CertificateStore::new(pair, &args.cert_dir)
        .map_err(|e| CliError::NodeCertificates(e.to_string()))?;
    // The directory's contents are checked before the loop starts.
    store
        .load()
        .map_err(|e| CliError::NodeCertificates(e.to_string()))?;
    let clients = if args.serving {
        // A serving certificate cannot authenticate (its only extended key usage is server
        // auth): every serving request is filed with the kubeconfig's own credentials (the
        // node's client certificate, kubelet.conf), as the kubelet files them with its client.
        // The client is built for each request, so that a rotated client certificate the
        // kubeconfig names is read again.
        let for_current = config.clone();
        let first = kube::Client::try_from(config).map_err(|e| {
            CliError::NodeCertificates(format!("couldn't build the kubeconfig's client: {e}"))
        })?;
        Clients::new(move |_| {
            kube::Client::try_from(for_current.clone()).map_err(|e| e.to_string())
        })
        .with_bootstrap(first, Bootstrap::Present)
    } else {
        let mut clients = Clients::from_config(config);
        if let Some((client, _)) = bootstrap {
            clients = clients.with_bootstrap(client, Bootstrap::Present);
        }
        clients
    };
    let (_templates, templates) = tokio::sync::watch::channel(Some(kind));
    let manager = Manager::new(store.clone(), clients, templates);
    let metrics = if args.serving {
        CertificateMetrics::new().with_server(manager.subscribe())
    } else {
        CertificateMetrics::new().with_client(manager.subscribe())
    };
    tracing::info!(
        pair = %store.current_path().display(),
        node = %args.node_name,
        serving = args.serving,
        bootstrap = args.bootstrap_kubeconfig.is_some(),
        "node-certificates: keeping the certificate current"
    );
    // The server stops when the manager does (its future is dropped).
    let http = async move {
        match listener {
            Some(listener) => {
                node_certificates::serve_http(listener, metrics, std::future::pending()).await
            }
            None => std::future::pending().await,
        }
    };
    let terminated = crate::signals::terminated();
    tokio::select! {
        r = manager.run() => r.map_err(|e| CliError::NodeCertificates(e.to_string())),
        r = http => r.map_err(|e| CliError::NodeCertificates(e.to_string())),
        () = terminated => {
            tracing::info!("node-certificates: termination signal received, shutting down");
            Ok(())
        }
    }
}

fn read_kubeconfig(path: &Path) -> Result<zeroize::Zeroizing<String>, CliError> {
    use std::io::Read as _;
    let read_err = |source| CliError::Read {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(read_err)?;
    let mut text = zeroize::Zeroizing::new(String::new());
    file.take(MAX_KUBECONFIG_BYTES)
        .read_to_string(&mut text)
        .map_err(read_err)?;
    Ok(text)
}

async fn config_from_yaml(
    yaml: &str,
    path: &Path,
    context: Option<&str>,
) -> Result<kube::Config, CliError> {
    let invalid = |message: String| CliError::Kubeconfig {
        path: path.to_owned(),
        message,
    };
    // The parser's message is dropped: it can quote the file, which holds credentials.
    let kubeconfig = kube::config::Kubeconfig::from_yaml(yaml)
        .map_err(|_| invalid("failed to parse kubeconfig YAML".to_owned()))?;
    let options = kube::config::KubeConfigOptions {
        context: context.map(str::to_owned),
        ..Default::default()
    };
    kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|e| invalid(e.to_string()))
}
