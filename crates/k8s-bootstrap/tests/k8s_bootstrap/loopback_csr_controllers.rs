//! The loopback API server's CSR approver and signer, which follow the `tls-bootstrap` core's
//! rules: what a bootstrap token, another group, a node and an invalid request get.

#![cfg(feature = "tls-bootstrap")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::disallowed_methods,
    reason = "tests"
)]

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use k8s_bootstrap::tls_bootstrap::{
    self, CertificateRequest, CertificateSigningRequest, KeyUsage, NodeKey, NodeName, State,
};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest as ApiCsr;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use loopback_apiserver::LoopbackApiServer;

async fn client_from_yaml(yaml: &str) -> Client {
    let kubeconfig = Kubeconfig::from_yaml(yaml).unwrap();
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    Client::try_from(config).unwrap()
}

pub(super) async fn admin(server: &LoopbackApiServer) -> Client {
    client_from_yaml(&server.admin_kubeconfig_yaml()).await
}

/// A client authenticated by a new bootstrap token whose extra group is `group`.
pub(super) async fn token_client(server: &LoopbackApiServer, id: &str, group: &str) -> Client {
    let secret = "0123456789abcdef";
    let data: BTreeMap<String, String> = [
        ("token-id", id),
        ("token-secret", secret),
        ("usage-bootstrap-authentication", "true"),
        ("auth-extra-groups", group),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let token = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(format!("bootstrap-token-{id}")),
            ..Default::default()
        },
        type_: Some("bootstrap.kubernetes.io/token".to_owned()),
        string_data: Some(data),
        ..Default::default()
    };
    Api::<Secret>::namespaced(admin(server).await, "kube-system")
        .create(&PostParams::default(), &token)
        .await
        .unwrap();
    let yaml = server
        .admin_kubeconfig_yaml()
        .replace(server.admin_token(), &format!("{id}.{secret}"));
    client_from_yaml(&yaml).await
}

fn node_request(node: &str, expiration: Option<Duration>) -> (NodeKey, NodeName, ApiCsr) {
    let name: NodeName = node.parse().unwrap();
    let key = NodeKey::generate().unwrap();
    let request = CertificateRequest::for_node(&name, &key).unwrap();
    let csr = CertificateSigningRequest::for_node(&request, expiration).unwrap();
    (key, name, ApiCsr::try_from(&csr).unwrap())
}

async fn read(server: &LoopbackApiServer, name: &str) -> CertificateSigningRequest {
    let object = Api::<ApiCsr>::all(admin(server).await)
        .get(name)
        .await
        .unwrap();
    CertificateSigningRequest::try_from(&object).unwrap()
}

#[tokio::test]
async fn a_bootstrap_token_request_is_approved_and_issued() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let client = token_client(
        &server,
        "abcdef",
        "system:bootstrappers:kubeadm:default-node-token",
    )
    .await;
    let (key, node, object) = node_request("worker-7", Some(Duration::from_secs(3600)));
    let created = Api::<ApiCsr>::all(client)
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
    let name = created.metadata.name.unwrap();
    let csr = read(&server, &name).await;
    let approved = csr.condition("Approved").unwrap();
    assert_eq!(approved.reason.as_deref(), Some("AutoApproved"));
    assert_eq!(
        approved.message.as_deref(),
        Some("Auto approving kubelet client certificate after SubjectAccessReview.")
    );
    assert!(approved.last_update_time.is_some());
    let State::Issued(pem) = csr.state() else {
        panic!("{csr:?}")
    };
    let now = SystemTime::now();
    let cert = tls_bootstrap::accept_certificate(pem, server.ca_pem().as_bytes(), &key, &node, now)
        .unwrap();
    // One hour asked, under the 8 h threshold: the full hour after the 5 min backdate.
    let lifetime = cert.not_after().duration_since(cert.not_before()).unwrap();
    assert_eq!(lifetime.as_secs(), 3600 + 300);
}

#[tokio::test]
async fn other_groups_and_other_requests_stay_pending() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    // A token outside kubeadm's auto-approval binding.
    let other = token_client(&server, "aaaaaa", "system:bootstrappers:other").await;
    let (_, _, object) = node_request("worker-8", None);
    let name = Api::<ApiCsr>::all(other)
        .create(&PostParams::default(), &object)
        .await
        .unwrap()
        .metadata
        .name
        .unwrap();
    assert_eq!(read(&server, &name).await.state(), State::Pending);

    // kubeadm's group, but a request that is not a kubelet client's (a server usage).
    let default = token_client(
        &server,
        "bbbbbb",
        "system:bootstrappers:kubeadm:default-node-token",
    )
    .await;
    let (_, _, mut object) = node_request("worker-9", None);
    object.spec.usages = Some(vec!["digital signature".into(), "server auth".into()]);
    object.metadata.name = Some("server-usage".into());
    Api::<ApiCsr>::all(default)
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
    assert_eq!(read(&server, "server-usage").await.state(), State::Pending);
}

#[tokio::test]
async fn an_approved_invalid_request_fails_and_a_node_renews_its_own() {
    let server = LoopbackApiServer::builder()
        .csr_approver(false)
        .start()
        .await
        .unwrap();
    let admin_api = Api::<ApiCsr>::all(admin(&server).await);
    let (_, _, mut object) = node_request("worker-10", None);
    object.metadata.name = Some("bad-usages".into());
    object.spec.usages = Some(vec![
        KeyUsage::DigitalSignature.to_string(),
        KeyUsage::ServerAuth.to_string(),
    ]);
    admin_api
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
    let approval = serde_json::json!({"status": {"conditions": [{
        "type": "Approved", "status": "True", "reason": "ByHand", "message": "approved by a test"
    }]}});
    admin_api
        .patch_approval(
            "bad-usages",
            &PatchParams::default(),
            &Patch::Merge(&approval),
        )
        .await
        .unwrap();
    let csr = read(&server, "bad-usages").await;
    let State::Failed { reason, message } = csr.state() else {
        panic!("{csr:?}")
    };
    assert_eq!(reason, Some("SignerValidationFailure"));
    assert_eq!(
        message,
        Some("usages did not match [client auth digital signature key encipherment]")
    );

    // With the approver on, a node renewing its own certificate is `selfnodeclient`.
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let (cert, key) = server
        .issue_client_certificate("system:node:worker-11", &["system:nodes"])
        .unwrap();
    let node_client =
        client_from_yaml(&server.kubeconfig_with_client_certificate(&cert, &key)).await;
    let (_, _, object) = node_request("worker-11", None);
    let name = Api::<ApiCsr>::all(node_client)
        .create(&PostParams::default(), &object)
        .await
        .unwrap()
        .metadata
        .name
        .unwrap();
    let csr = read(&server, &name).await;
    assert_eq!(
        csr.condition("Approved").unwrap().message.as_deref(),
        Some("Auto approving self kubelet client certificate after SubjectAccessReview.")
    );
    assert!(matches!(csr.state(), State::Issued(_)));
}

async fn kubectl(dir: &std::path::Path, args: &[&str]) -> String {
    let out = tokio::process::Command::new("kubectl")
        .args(args)
        .env_remove("KUBECONFIG")
        .current_dir(dir)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_creates_gets_and_approves_our_object() {
    let server = LoopbackApiServer::builder()
        .csr_approver(false)
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("admin.conf"),
        server.admin_kubeconfig_yaml(),
    )
    .unwrap();
    let node: NodeName = "worker-12".parse().unwrap();
    let key = NodeKey::generate().unwrap();
    let request = CertificateRequest::for_node(&node, &key).unwrap();
    let ours =
        CertificateSigningRequest::for_node(&request, Some(Duration::from_secs(3600))).unwrap();
    let name = ours.name().unwrap().to_owned();
    std::fs::write(dir.path().join("csr.json"), ours.to_json().unwrap()).unwrap();

    let created = kubectl(
        dir.path(),
        &["--kubeconfig", "admin.conf", "create", "-f", "csr.json"],
    )
    .await;
    assert_eq!(
        created.trim(),
        format!("certificatesigningrequest.certificates.k8s.io/{name} created")
    );
    let table = kubectl(dir.path(), &["--kubeconfig", "admin.conf", "get", "csr"]).await;
    let row = table.lines().find(|l| l.starts_with(&name)).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        &cells[2..],
        [
            "kubernetes.io/kube-apiserver-client-kubelet",
            "loopback-admin",
            "60m",
            "Pending"
        ],
        "{table}"
    );
    let json = kubectl(
        dir.path(),
        &[
            "--kubeconfig",
            "admin.conf",
            "get",
            "csr",
            &name,
            "-o",
            "json",
        ],
    )
    .await;
    let back = CertificateSigningRequest::from_json(json.as_bytes()).unwrap();
    assert_eq!(back.spec.request, ours.spec.request);
    assert_eq!(back.spec.usages, ours.spec.usages);
    assert_eq!(back.spec.signer_name, ours.spec.signer_name);
    assert_eq!(back.spec.expiration_seconds, Some(3600));
    assert_eq!(back.spec.username.as_deref(), Some("loopback-admin"));
    assert_eq!(back.state(), State::Pending);
    // The same object as kubectl prints it in YAML.
    let yaml = kubectl(
        dir.path(),
        &[
            "--kubeconfig",
            "admin.conf",
            "get",
            "csr",
            &name,
            "-o",
            "yaml",
        ],
    )
    .await;
    assert_eq!(
        CertificateSigningRequest::from_yaml(yaml.as_bytes()).unwrap(),
        back
    );

    kubectl(
        dir.path(),
        &[
            "--kubeconfig",
            "admin.conf",
            "certificate",
            "approve",
            &name,
        ],
    )
    .await;
    let json = kubectl(
        dir.path(),
        &[
            "--kubeconfig",
            "admin.conf",
            "get",
            "csr",
            &name,
            "-o",
            "json",
        ],
    )
    .await;
    let issued = CertificateSigningRequest::from_json(json.as_bytes()).unwrap();
    assert_eq!(
        issued.condition("Approved").unwrap().reason.as_deref(),
        Some("KubectlApprove")
    );
    let State::Issued(pem) = issued.state() else {
        panic!("{issued:?}")
    };
    tls_bootstrap::accept_certificate(
        pem,
        server.ca_pem().as_bytes(),
        &key,
        &node,
        SystemTime::now(),
    )
    .unwrap();
}

/// A node whose key is RSA (as kubeadm writes it, made here by openssl): its request asks for
/// `key encipherment` too, as the kubelet's does; the double's approver and signer (the
/// `tls-bootstrap` rules) approve and issue it, and the node accepts the certificate.
#[tokio::test]
async fn an_rsa_node_key_is_approved_and_issued() {
    let dir = std::env::temp_dir().join(format!("loopback-rsa-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key_file = dir.join("node.key");
    let out = std::process::Command::new("openssl")
        .args([
            "genrsa",
            "-traditional",
            "-out",
            key_file.to_str().unwrap(),
            "2048",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let key = NodeKey::from_pem(&std::fs::read(&key_file).unwrap()).unwrap();

    let server = LoopbackApiServer::builder().start().await.unwrap();
    let client = token_client(
        &server,
        "rsaaaa",
        "system:bootstrappers:kubeadm:default-node-token",
    )
    .await;
    let node: NodeName = "worker-rsa".parse().unwrap();
    let request = CertificateRequest::for_node(&node, &key).unwrap();
    let csr = CertificateSigningRequest::for_node(&request, None).unwrap();
    assert_eq!(
        csr.spec.usages,
        [
            KeyUsage::DigitalSignature,
            KeyUsage::ClientAuth,
            KeyUsage::KeyEncipherment
        ]
    );
    let name = Api::<ApiCsr>::all(client)
        .create(&PostParams::default(), &ApiCsr::try_from(&csr).unwrap())
        .await
        .unwrap()
        .metadata
        .name
        .unwrap();
    assert_eq!(Some(name.as_str()), csr.name());
    let issued = read(&server, &name).await;
    let State::Issued(pem) = issued.state() else {
        panic!("{issued:?}")
    };
    let cert = tls_bootstrap::accept_certificate(
        pem,
        server.ca_pem().as_bytes(),
        &key,
        &node,
        SystemTime::now(),
    )
    .unwrap();
    assert_eq!(cert.node(), &node);
}
