//! The certificate manager against the loopback API server: a first certificate with the
//! bootstrap credential, a rotation past the deadline with the current one, a template change,
//! a denied request retried after the backoff, and a user's regular-file `-current.pem` left
//! alone. Every wait is on what the manager publishes or on the API, with a bounded timeout.

#![cfg(all(unix, feature = "tls-bootstrap"))]

use std::time::{Duration, SystemTime};

use futures_util::TryStreamExt as _;
use k8s_bootstrap::node_certificates::{
    CertificateKind, CertificateStore, Clients, Manager, Snapshot,
};
use k8s_bootstrap::tls_bootstrap::rotation::Bootstrap;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest as ApiCsr;
use kube::Config;
use kube::api::{Api, ListParams, Patch, PatchParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use loopback_apiserver::LoopbackApiServer;
use tokio::sync::watch;

use super::loopback_csr_controllers::{admin, token_client};

const PAIR: &str = "kubelet-client";
const WAIT: Duration = Duration::from_secs(60);
pub(super) const BOOTSTRAPPERS: &str = "system:bootstrappers:kubeadm:default-node-token";

pub(super) async fn config_from_yaml(yaml: &str) -> Config {
    let kubeconfig = Kubeconfig::from_yaml(yaml).unwrap();
    Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap()
}

fn client_kind(node: &str) -> Option<CertificateKind> {
    Some(CertificateKind::Client {
        node: node.parse().unwrap(),
    })
}

/// Waits (bounded) until the published snapshot satisfies `f`.
async fn published(
    rx: &mut watch::Receiver<Snapshot>,
    f: impl FnMut(&Snapshot) -> bool,
) -> Snapshot {
    tokio::time::timeout(WAIT, rx.wait_for(f))
        .await
        .expect("the manager published nothing matching in time")
        .unwrap()
        .clone()
}

/// A client certificate for `node` from the double's CA, issued a year minus ten minutes
/// ago: valid ten more minutes, long past its rotation deadline. The pair's PEM.
fn old_pair(server: &LoopbackApiServer, node: &str) -> String {
    let issued_at = SystemTime::now() - Duration::from_secs(365 * 86400 - 600);
    let (cert, key) = server
        .issue_client_certificate_at(&format!("system:node:{node}"), &["system:nodes"], issued_at)
        .unwrap();
    format!("{cert}{key}")
}

fn cn(snapshot: &Snapshot) -> String {
    snapshot
        .pair()
        .unwrap()
        .certificate()
        .common_name()
        .to_owned()
}

/// The certificate signing requests not in `seen`: the first one that appears (bounded).
async fn next_csr(api: &Api<ApiCsr>, seen: &[String]) -> ApiCsr {
    let new = |c: &ApiCsr| !seen.contains(c.metadata.name.as_ref().unwrap());
    let find = async {
        loop {
            let list = api.list(&ListParams::default()).await.unwrap();
            if let Some(c) = list.items.iter().find(|c| new(c)) {
                return c.clone();
            }
            let version = list.metadata.resource_version.unwrap_or_default();
            let params = WatchParams::default().timeout(10);
            let mut events = std::pin::pin!(api.watch(&params, &version).await.unwrap());
            while let Ok(Some(event)) = events.try_next().await {
                if let WatchEvent::Added(c) = event
                    && new(&c)
                {
                    return c;
                }
            }
        }
    };
    tokio::time::timeout(WAIT, find)
        .await
        .expect("no new certificate signing request in time")
}

pub(super) async fn decide(api: &Api<ApiCsr>, name: &str, type_: &str) {
    let approval = serde_json::json!({"status": {"conditions": [{
        "type": type_, "status": "True", "reason": "ByTheTest", "message": "decided by the test",
    }]}});
    api.patch_approval(name, &PatchParams::default(), &Patch::Merge(&approval))
        .await
        .unwrap();
}

#[tokio::test]
async fn with_no_certificate_the_bootstrap_credential_gets_one_and_it_is_written() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let bootstrap = token_client(&server, "abcdef", BOOTSTRAPPERS).await;
    let dir = tempfile::tempdir().unwrap();
    let store = CertificateStore::new(PAIR, dir.path()).unwrap();
    let config = config_from_yaml(&server.admin_kubeconfig_yaml()).await;
    let clients = Clients::from_config(config).with_bootstrap(bootstrap, Bootstrap::Present);
    let (_templates, rx) = watch::channel(client_kind("worker-1"));
    let manager = Manager::new(store.clone(), clients, rx);
    let mut current = manager.subscribe();
    assert!(current.borrow().pair().is_none());
    let task = tokio::spawn(manager.run());

    let snapshot = published(&mut current, |s| s.rotations() == 1).await;
    assert_eq!(cn(&snapshot), "system:node:worker-1");
    assert_eq!(snapshot.failed_attempts(), 0);
    assert!(snapshot.last_failure().is_none());
    // A year, as the double's signer gives by default.
    let left = snapshot
        .expiration()
        .unwrap()
        .duration_since(SystemTime::now())
        .unwrap();
    assert!(left > Duration::from_secs(300 * 86400), "{left:?}");
    // Written in the kubelet's layout: -current.pem links to the file the manager names.
    let written = snapshot.last_written().unwrap().to_owned();
    assert_eq!(written.parent().unwrap(), dir.path());
    let link = std::fs::read_link(store.current_path()).unwrap();
    assert_eq!(link, written);
    let loaded = store.load().unwrap().unwrap();
    assert_eq!(
        loaded.certificate_chain_der(),
        snapshot.pair().unwrap().certificate_chain_der()
    );
    // Filed by the bootstrap token's user, under a generated name.
    let csrs = Api::<ApiCsr>::all(admin(&server).await)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    assert_eq!(csrs.len(), 1);
    assert!(csrs[0].metadata.name.as_ref().unwrap().starts_with("csr-"));
    assert_eq!(
        csrs[0].spec.username.as_deref(),
        Some("system:bootstrap:abcdef")
    );
    task.abort();
    server.shutdown().await;
}

#[tokio::test]
async fn a_certificate_past_its_rotation_deadline_is_replaced_with_the_current_credential() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = CertificateStore::new(PAIR, dir.path()).unwrap();
    let old = old_pair(&server, "worker-1");
    // Named an hour back, so that the new file's name (now) differs.
    let old_file = store
        .update(
            old.as_bytes(),
            SystemTime::now() - Duration::from_secs(3600),
        )
        .unwrap();
    let old_not_after = store.load().unwrap().unwrap().certificate().not_after();

    // No bootstrap credential: the request can only be made with the current certificate.
    let config = config_from_yaml(&server.admin_kubeconfig_yaml()).await;
    let (_templates, rx) = watch::channel(client_kind("worker-1"));
    let manager = Manager::new(store.clone(), Clients::from_config(config), rx);
    let mut current = manager.subscribe();
    let task = tokio::spawn(manager.run());

    let snapshot = published(&mut current, |s| s.rotations() == 1).await;
    assert_eq!(cn(&snapshot), "system:node:worker-1");
    let new_not_after = snapshot.expiration().unwrap();
    assert!(
        new_not_after > old_not_after + Duration::from_secs(300 * 86400),
        "{new_not_after:?} vs {old_not_after:?}"
    );
    assert_ne!(snapshot.last_written().unwrap(), old_file);
    // The old pair file is kept; -current.pem points to the new one.
    assert_eq!(std::fs::read(&old_file).unwrap(), old.as_bytes());
    assert_eq!(
        std::fs::read_link(store.current_path()).unwrap(),
        snapshot.last_written().unwrap()
    );
    // Filed by the node itself (the double approves it as selfnodeclient).
    let csrs = Api::<ApiCsr>::all(admin(&server).await)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    assert_eq!(csrs.len(), 1);
    assert_eq!(
        csrs[0].spec.username.as_deref(),
        Some("system:node:worker-1")
    );
    task.abort();
    server.shutdown().await;
}

#[tokio::test]
async fn a_template_change_files_a_new_request() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let token = token_client(&server, "bcdefa", BOOTSTRAPPERS).await;
    let dir = tempfile::tempdir().unwrap();
    let store = CertificateStore::new(PAIR, dir.path()).unwrap();
    // Every request with the bootstrap token, which the double approves for any node name.
    let for_current = token.clone();
    let clients =
        Clients::new(move |_| Ok(for_current.clone())).with_bootstrap(token, Bootstrap::Present);
    let (templates, rx) = watch::channel(client_kind("worker-1"));
    let manager = Manager::new(store.clone(), clients, rx);
    let mut current = manager.subscribe();
    let task = tokio::spawn(manager.run());

    let first = published(&mut current, |s| s.rotations() == 1).await;
    assert_eq!(cn(&first), "system:node:worker-1");
    // The certificate is fresh: without the change, nothing would be requested for a year.
    templates.send(client_kind("worker-2")).unwrap();
    let second = published(&mut current, |s| s.rotations() == 2).await;
    assert_eq!(cn(&second), "system:node:worker-2");
    assert_eq!(
        store.load().unwrap().unwrap().certificate().common_name(),
        "system:node:worker-2"
    );
    // One request each: the second certificate, issued within a second of the first, is
    // installed once the pair file's name (to the second) is free, not requested again.
    let csrs = Api::<ApiCsr>::all(admin(&server).await)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    assert_eq!(csrs.len(), 2);
    assert_eq!(second.failed_attempts(), 0);
    task.abort();
    server.shutdown().await;
}

#[tokio::test]
async fn a_denied_request_is_retried_after_the_backoff() {
    let server = LoopbackApiServer::builder()
        .csr_approver(false)
        .start()
        .await
        .unwrap();
    let bootstrap = token_client(&server, "cdefab", BOOTSTRAPPERS).await;
    let dir = tempfile::tempdir().unwrap();
    let store = CertificateStore::new(PAIR, dir.path()).unwrap();
    let config = config_from_yaml(&server.admin_kubeconfig_yaml()).await;
    let clients = Clients::from_config(config).with_bootstrap(bootstrap, Bootstrap::Present);
    let (_templates, rx) = watch::channel(client_kind("worker-1"));
    let manager = Manager::new(store.clone(), clients, rx);
    let mut current = manager.subscribe();
    let task = tokio::spawn(manager.run());

    let api = Api::<ApiCsr>::all(admin(&server).await);
    let first = next_csr(&api, &[]).await;
    let first_name = first.metadata.name.clone().unwrap();
    decide(&api, &first_name, "Denied").await;
    let failed = published(&mut current, |s| s.failed_attempts() == 1).await;
    assert!(
        failed.last_failure().unwrap().contains("denied"),
        "{:?}",
        failed.last_failure()
    );
    assert!(failed.pair().is_none());
    assert!(store.load().unwrap().is_none());

    // The retry comes after 2 s to 2.2 s, with a new key and so a new request.
    let filed_after = std::time::Instant::now();
    let second = next_csr(&api, std::slice::from_ref(&first_name)).await;
    let waited = filed_after.elapsed();
    assert!(waited < Duration::from_secs(30), "{waited:?}");
    assert_ne!(second.spec.request, first.spec.request);
    decide(&api, second.metadata.name.as_ref().unwrap(), "Approved").await;
    let done = published(&mut current, |s| s.rotations() == 1).await;
    assert_eq!(cn(&done), "system:node:worker-1");
    assert_eq!(done.failed_attempts(), 0);
    assert!(done.last_failure().is_none());
    task.abort();
    server.shutdown().await;
}

#[tokio::test]
async fn a_regular_file_current_pem_is_never_replaced() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let bootstrap = token_client(&server, "defabc", BOOTSTRAPPERS).await;
    let dir = tempfile::tempdir().unwrap();
    let store = CertificateStore::new(PAIR, dir.path()).unwrap();
    // The user's own file, past its rotation deadline.
    let users = old_pair(&server, "worker-1");
    std::fs::write(store.current_path(), &users).unwrap();

    let config = config_from_yaml(&server.admin_kubeconfig_yaml()).await;
    let clients = Clients::from_config(config).with_bootstrap(bootstrap, Bootstrap::Present);
    let (_templates, rx) = watch::channel(client_kind("worker-1"));
    let manager = Manager::new(store.clone(), clients, rx);
    let mut current = manager.subscribe();
    let task = tokio::spawn(manager.run());

    let failed = published(&mut current, |s| s.failed_attempts() >= 1).await;
    assert!(
        failed
            .last_failure()
            .unwrap()
            .contains("is not a symbolic link"),
        "{:?}",
        failed.last_failure()
    );
    // Still in use, and published.
    assert_eq!(cn(&failed), "system:node:worker-1");
    assert_eq!(failed.rotations(), 0);
    assert_eq!(
        std::fs::read_to_string(store.current_path()).unwrap(),
        users
    );
    // Nothing was filed that could not be installed.
    let csrs = Api::<ApiCsr>::all(admin(&server).await)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    assert!(csrs.is_empty());
    task.abort();
    server.shutdown().await;
}

#[tokio::test]
async fn a_template_change_abandons_a_pending_request_for_the_old_one() {
    let server = LoopbackApiServer::builder()
        .csr_approver(false)
        .start()
        .await
        .unwrap();
    let bootstrap = token_client(&server, "efabcd", BOOTSTRAPPERS).await;
    let dir = tempfile::tempdir().unwrap();
    let store = CertificateStore::new(PAIR, dir.path()).unwrap();
    let config = config_from_yaml(&server.admin_kubeconfig_yaml()).await;
    let clients = Clients::from_config(config).with_bootstrap(bootstrap, Bootstrap::Present);
    let (templates, rx) = watch::channel(client_kind("worker-1"));
    let manager = Manager::new(store.clone(), clients, rx);
    let mut current = manager.subscribe();
    let task = tokio::spawn(manager.run());

    let requested_cn = |csr: &ApiCsr| {
        k8s_bootstrap::tls_bootstrap::CertificateRequest::from_pem(&csr.spec.request.0)
            .unwrap()
            .common_name()
            .unwrap()
            .to_owned()
    };
    let api = Api::<ApiCsr>::all(admin(&server).await);
    let first = next_csr(&api, &[]).await;
    assert_eq!(requested_cn(&first), "system:node:worker-1");
    // Pending (nobody approves): the new template abandons it and files for worker-2.
    templates.send(client_kind("worker-2")).unwrap();
    let first_name = first.metadata.name.clone().unwrap();
    let second = next_csr(&api, std::slice::from_ref(&first_name)).await;
    assert_eq!(requested_cn(&second), "system:node:worker-2");
    decide(&api, second.metadata.name.as_ref().unwrap(), "Approved").await;
    let done = published(&mut current, |s| s.rotations() == 1).await;
    assert_eq!(cn(&done), "system:node:worker-2");
    task.abort();
    server.shutdown().await;
}

/// The TLS server certificate of a handshake with `server` for `name`, verified against the
/// double's CA: its leaf, DER.
pub(super) async fn served_certificate(
    server: std::net::SocketAddr,
    ca_pem: &str,
    name: &str,
) -> Result<Vec<u8>, std::io::Error> {
    use rustls::pki_types::ServerName;
    use rustls::pki_types::pem::PemObject as _;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(server).await?;
    let tls = connector
        .connect(ServerName::try_from(name.to_owned()).unwrap(), tcp)
        .await?;
    let (_, connection) = tls.get_ref();
    Ok(connection.peer_certificates().unwrap()[0].to_vec())
}

/// A TLS server on `ServingResolver`: each handshake gets the serving certificate the manager
/// holds at that moment, and a rotation reaches the next handshake without a restart.
#[tokio::test]
async fn a_tls_server_serves_the_serving_certificate_the_manager_keeps() {
    use k8s_bootstrap::node_certificates::ServingResolver;
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let admin_client = admin(&server).await;
    let csrs = Api::<ApiCsr>::all(admin_client.clone());
    let dir = tempfile::tempdir().unwrap();
    let store = CertificateStore::new("kubelet-server", dir.path()).unwrap();
    let for_current = admin_client.clone();
    let clients = Clients::new(move |_| Ok(for_current.clone()))
        .with_bootstrap(admin_client, Bootstrap::Present);
    let serving = |names: &[&str]| {
        Some(CertificateKind::Serving {
            node: "worker-1".parse().unwrap(),
            dns_names: names.iter().map(|n| (*n).to_owned()).collect(),
            ip_addresses: vec!["127.0.0.1".parse().unwrap()],
        })
    };
    let (templates, rx) = watch::channel(serving(&["worker-1"]));
    let manager = Manager::new(store, clients, rx);
    let mut current = manager.subscribe();
    let resolver = ServingResolver::new(manager.subscribe()).unwrap();
    assert!(resolver.current().is_none(), "nothing to serve yet");
    let task = tokio::spawn(manager.run());

    // The TLS server, on its own port, serving whatever the resolver gives.
    let config = rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_cert_resolver(std::sync::Arc::new(resolver));
    let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let tls_addr = listener.local_addr().unwrap();
    let tls_server = tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                if let Ok(mut tls) = acceptor.accept(tcp).await {
                    use tokio::io::AsyncReadExt as _;
                    let mut byte = [0u8; 1];
                    let _ = tls.read(&mut byte).await;
                }
            });
        }
    });

    // The request is never approved by the double (as kube-controller-manager): approve it.
    let first_csr = next_csr(&csrs, &[]).await;
    let first_name = first_csr.metadata.name.clone().unwrap();
    assert_eq!(first_csr.spec.signer_name, "kubernetes.io/kubelet-serving");
    decide(&csrs, &first_name, "Approved").await;
    let first = published(&mut current, |s| s.rotations() == 1).await;
    let first_leaf = first.pair().unwrap().certificate_chain_der()[0].clone();
    assert_eq!(
        served_certificate(tls_addr, server.ca_pem(), "worker-1")
            .await
            .unwrap(),
        first_leaf
    );
    // A name the certificate does not hold is refused by the client.
    assert!(
        served_certificate(tls_addr, server.ca_pem(), "worker-1.nodes.example")
            .await
            .is_err()
    );

    // The node gains a name: a new request, approved, and the next handshake has it.
    templates
        .send(serving(&["worker-1", "worker-1.nodes.example"]))
        .unwrap();
    let second_csr = next_csr(&csrs, std::slice::from_ref(&first_name)).await;
    decide(
        &csrs,
        second_csr.metadata.name.as_ref().unwrap(),
        "Approved",
    )
    .await;
    let second = published(&mut current, |s| s.rotations() == 2).await;
    let second_leaf = second.pair().unwrap().certificate_chain_der()[0].clone();
    assert_ne!(second_leaf, first_leaf);
    for name in ["worker-1", "worker-1.nodes.example"] {
        assert_eq!(
            served_certificate(tls_addr, server.ca_pem(), name)
                .await
                .unwrap(),
            second_leaf,
            "{name}"
        );
    }
    tls_server.abort();
    task.abort();
    server.shutdown().await;
}
