//! The kubelet-serving approver against the loopback API server (its own CSR approver and
//! signer off), running as the controllers' ServiceAccount bound only to
//! `deploy/controllers/kubelet-serving-approver/rbac.yaml`: nodes file requests with their own
//! credentials; `kubectl` creates the Nodes and reads the decisions.

use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use k8s_bootstrap::controllers::{self, Metrics};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest as ApiCsr;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use loopback_apiserver::LoopbackApiServer;
use serde_json::{Value, json};
use tls_bootstrap::{
    CertificateRequest, CertificateSigningRequest, DnsCheck, IpPrefix, KUBELET_SERVING_SIGNER,
    KeyUsage, NodeKey, ServingPolicy,
};

use super::{Running, eventually, options, start};

const SA_USER: &str = "system:serviceaccount:kube-system:k8s-bootstrap-controllers";
const RBAC: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../deploy/controllers/kubelet-serving-approver/rbac.yaml"
);

/// A client for the user a static `token` names (the admin kubeconfig with its token swapped).
async fn client_with_token(server: &LoopbackApiServer, token: &str) -> Client {
    let yaml = server
        .admin_kubeconfig_yaml()
        .replace(server.admin_token(), token);
    let kubeconfig = Kubeconfig::from_yaml(&yaml).unwrap();
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    Client::try_from(config).unwrap()
}

async fn kubectl(kubeconfig: &Path, args: &[&str]) -> String {
    let out = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .env_remove("KUBECONFIG")
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

fn node_yaml(name: &str, addresses: &[(&str, &str)]) -> String {
    let mut yaml =
        format!("apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\nstatus:\n  addresses:\n");
    for (type_, address) in addresses {
        yaml.push_str(&format!("  - type: {type_}\n    address: {address}\n"));
    }
    yaml
}

/// A server with the approver's RBAC applied by kubectl, tokens for the controllers'
/// ServiceAccount and for nodes `worker-1`..`worker-3` (which may file requests, as
/// `system:node-bootstrapper` allows), and the admin kubeconfig's path.
async fn cluster(dir: &Path) -> (LoopbackApiServer, std::path::PathBuf) {
    let server = LoopbackApiServer::builder()
        .bootstrap_signer(false)
        .csr_approver(false)
        .csr_signer(false)
        .start()
        .await
        .unwrap();
    let admin = dir.join("admin.yaml");
    std::fs::write(&admin, server.admin_kubeconfig_yaml()).unwrap();
    let out = kubectl(&admin, &["apply", "-f", RBAC]).await;
    assert!(out.contains("clusterrole.rbac.authorization.k8s.io/k8s-bootstrap-controllers:kubelet-serving-approver created"), "{out}");
    server.add_static_token(
        "controllers-token",
        SA_USER,
        &[
            "system:serviceaccounts",
            "system:serviceaccounts:kube-system",
        ],
    );
    for n in 1..=3 {
        server.add_static_token(
            &format!("worker-{n}-token"),
            &format!("system:node:worker-{n}"),
            &["system:nodes"],
        );
    }
    server
        .insert(
            "",
            "clusterrolebindings",
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "nodes-file-requests"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node-bootstrapper"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:nodes"}],
            }),
        )
        .unwrap();
    (server, admin)
}

/// Files, as `filer` (a node's client), a kubelet-serving request named `name` for node `cn`
/// with the given SANs.
async fn file_serving(filer: &Client, name: &str, cn: &str, dns: &[&str], ips: &[&str]) {
    let key = NodeKey::generate().unwrap();
    let ips: Vec<IpAddr> = ips.iter().map(|ip| ip.parse().unwrap()).collect();
    let request =
        CertificateRequest::for_node_serving(&cn.parse().unwrap(), &key, dns, &ips).unwrap();
    let csr = CertificateSigningRequest::builder(request.to_pem(), KUBELET_SERVING_SIGNER)
        .name(name)
        .usages(&[KeyUsage::DigitalSignature, KeyUsage::ServerAuth])
        .build();
    let object = ApiCsr::try_from(&csr).unwrap();
    Api::<ApiCsr>::all(filer.clone())
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
}

fn conditions(server: &LoopbackApiServer, name: &str) -> Vec<Value> {
    server
        .object("", "certificatesigningrequests", name)
        .and_then(|o| o.pointer("/status/conditions").cloned())
        .and_then(|c| c.as_array().cloned())
        .unwrap_or_default()
}

fn policy() -> ServingPolicy {
    let mut policy = ServingPolicy::new(
        regex::Regex::new(r"^worker-[0-9]+(\.nodes\.example)?$").unwrap(),
        vec!["10.0.0.0/16".parse::<IpPrefix>().unwrap()],
    );
    policy.dns_check = DnsCheck::DangerousSkip;
    policy
}

fn approver(client: Client, metrics: Arc<Metrics>) -> Running {
    start(move |rx| {
        controllers::kubelet_serving_approver(client, policy(), metrics, options(), async move {
            let _ = rx.await;
        })
    })
}

#[tokio::test]
async fn approves_owned_names_denies_the_rest_and_leaves_other_signers_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (server, admin) = cluster(dir.path()).await;
    let out = create_node(
        &admin,
        dir.path(),
        "worker-1",
        &[("InternalIP", "10.0.0.5"), ("Hostname", "worker-1")],
    )
    .await;
    assert_eq!(out.trim(), "node/worker-1 created");
    let out = kubectl(&admin, &["get", "nodes"]).await;
    let header: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]);
    assert!(out.contains("worker-1"), "{out}");

    let worker1 = client_with_token(&server, "worker-1-token").await;
    file_serving(&worker1, "owned", "worker-1", &["worker-1"], &["10.0.0.5"]).await;
    file_serving(
        &worker1,
        "foreign-ip",
        "worker-1",
        &["worker-1"],
        &["10.0.0.9"],
    )
    .await;
    file_serving(
        &worker1,
        "outside-prefix",
        "worker-1",
        &[],
        &["192.168.1.5"],
    )
    .await;
    file_serving(
        &worker1,
        "foreign-dns",
        "worker-1",
        &["mail.example.com"],
        &[],
    )
    .await;
    // worker-1 asks for worker-2's certificate.
    file_serving(&worker1, "impostor", "worker-2", &["worker-2"], &[]).await;
    // A client-certificate request by the same node: another signer, never touched.
    let key = NodeKey::generate().unwrap();
    let client_request = CertificateRequest::for_node(&"worker-1".parse().unwrap(), &key).unwrap();
    let mut client_csr = CertificateSigningRequest::for_node(&client_request, None).unwrap();
    client_csr.metadata.name = Some("client".to_owned());
    Api::<ApiCsr>::all(worker1.clone())
        .create(
            &PostParams::default(),
            &ApiCsr::try_from(&client_csr).unwrap(),
        )
        .await
        .unwrap();

    let metrics = Arc::new(Metrics::new());
    let running = approver(
        client_with_token(&server, "controllers-token").await,
        metrics.clone(),
    );
    eventually("every kubelet-serving request is decided", || {
        [
            "owned",
            "foreign-ip",
            "outside-prefix",
            "foreign-dns",
            "impostor",
        ]
        .iter()
        .all(|n| !conditions(&server, n).is_empty())
    })
    .await;

    let owned = conditions(&server, "owned");
    assert_eq!(owned.len(), 1);
    assert_eq!(owned[0]["type"], "Approved");
    assert_eq!(owned[0]["status"], "True");
    assert_eq!(owned[0]["reason"], controllers::APPROVED_REASON);
    let out = kubectl(&admin, &["get", "csr", "owned"]).await;
    let row: Vec<&str> = out.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row.first(), Some(&"owned"));
    assert_eq!(row.last(), Some(&"Approved"), "{out}");

    for (name, message) in [
        (
            "foreign-ip",
            "IP subjectAltName 10.0.0.9 is not an address of the node",
        ),
        (
            "outside-prefix",
            "IP subjectAltName 192.168.1.5 is outside the allowed prefixes",
        ),
        (
            "foreign-dns",
            "DNS subjectAltName \"mail.example.com\" does not match the provider regex",
        ),
        (
            "impostor",
            "requester \"system:node:worker-1\" is not the subject common name \"system:node:worker-2\"",
        ),
    ] {
        let c = conditions(&server, name);
        assert_eq!(c.len(), 1, "{name}: {c:?}");
        assert_eq!(c[0]["type"], "Denied", "{name}");
        assert_eq!(c[0]["reason"], controllers::DENIED_REASON, "{name}");
        let got = c[0]["message"].as_str().unwrap();
        assert!(got.ends_with(message), "{name}: {got}");
        let out = kubectl(&admin, &["get", "csr", name]).await;
        assert!(out.lines().nth(1).unwrap().ends_with("Denied"), "{out}");
        let out = kubectl(
            &admin,
            &[
                "get",
                "csr",
                name,
                "-o",
                "jsonpath={.status.conditions[0].message}",
            ],
        )
        .await;
        assert!(out.ends_with(message), "{out}");
    }
    assert!(conditions(&server, "client").is_empty());
    // The counters move just after the writes the server has seen.
    eventually("five decisions counted", || {
        metrics.kubelet_serving_approved() + metrics.kubelet_serving_denied() == 5
    })
    .await;
    assert_eq!(metrics.kubelet_serving_approved(), 1);
    assert_eq!(metrics.kubelet_serving_denied(), 4);
    assert_eq!(metrics.errors("kubeletservingapprover"), 0);
    running.stop().await;
}

#[tokio::test]
async fn a_request_from_a_node_not_yet_registered_waits_for_its_node() {
    let dir = tempfile::tempdir().unwrap();
    let (server, admin) = cluster(dir.path()).await;
    let worker3 = client_with_token(&server, "worker-3-token").await;
    file_serving(&worker3, "early", "worker-3", &["worker-3"], &["10.0.3.1"]).await;
    let metrics = Arc::new(Metrics::new());
    let running = approver(
        client_with_token(&server, "controllers-token").await,
        metrics.clone(),
    );
    // Looked at (and again after the retry delay), never denied while the Node is missing.
    eventually("the approver looked at the request twice", || {
        metrics.reconciles("kubeletservingapprover") >= 2
    })
    .await;
    assert!(conditions(&server, "early").is_empty());

    create_node(
        &admin,
        dir.path(),
        "worker-3",
        &[("InternalIP", "10.0.3.1")],
    )
    .await;
    eventually("approved once the Node exists", || {
        conditions(&server, "early")
            .first()
            .is_some_and(|c| c["type"] == "Approved")
    })
    .await;
    assert_eq!(metrics.errors("kubeletservingapprover"), 0);
    running.stop().await;
}

#[tokio::test]
async fn approving_needs_approve_on_the_signer() {
    let dir = tempfile::tempdir().unwrap();
    let (server, admin) = cluster(dir.path()).await;
    create_node(
        &admin,
        dir.path(),
        "worker-1",
        &[("InternalIP", "10.0.0.5")],
    )
    .await;
    let worker1 = client_with_token(&server, "worker-1-token").await;
    file_serving(&worker1, "owned", "worker-1", &["worker-1"], &["10.0.0.5"]).await;
    // The same rules without `approve` on signers, for another ServiceAccount.
    let rbac = std::fs::read_to_string(RBAC).unwrap();
    let without = rbac
        .replace(
            "k8s-bootstrap-controllers:kubelet-serving-approver",
            "no-signer",
        )
        .replace("name: k8s-bootstrap-controllers\n", "name: no-signer\n")
        .replace(
            "resources: [\"signers\"]",
            "resources: [\"nosuchresource\"]",
        );
    let file = dir.path().join("no-signer.yaml");
    std::fs::write(&file, without).unwrap();
    kubectl(&admin, &["apply", "-f", file.to_str().unwrap()]).await;
    server.add_static_token(
        "no-signer-token",
        "system:serviceaccount:kube-system:no-signer",
        &[
            "system:serviceaccounts",
            "system:serviceaccounts:kube-system",
        ],
    );
    let metrics = Arc::new(Metrics::new());
    let running = approver(
        client_with_token(&server, "no-signer-token").await,
        metrics.clone(),
    );
    eventually("the refused write counts as an error", || {
        metrics.errors("kubeletservingapprover") >= 1
    })
    .await;
    assert!(conditions(&server, "owned").is_empty());
    running.stop().await;
    let refused = server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/owned/approval"))
        .map(|r| r.status)
        .collect::<Vec<_>>();
    assert!(
        !refused.is_empty() && refused.iter().all(|s| *s == 403),
        "{refused:?}"
    );

    // The real account's binding allows it.
    let running = approver(
        client_with_token(&server, "controllers-token").await,
        Arc::new(Metrics::new()),
    );
    eventually("approved with approve on the signer", || {
        !conditions(&server, "owned").is_empty()
    })
    .await;
    running.stop().await;
}

/// Creates the Node `name` with `addresses` by `kubectl create -f` (its manifest written in
/// `dir`); kubectl's output.
async fn create_node(admin: &Path, dir: &Path, name: &str, addresses: &[(&str, &str)]) -> String {
    let file = dir.join(format!("{name}.yaml"));
    std::fs::write(&file, node_yaml(name, addresses)).unwrap();
    kubectl(admin, &["create", "-f", file.to_str().unwrap()]).await
}

/// With DNS resolution on, a name must resolve (through the system resolver) to one of the
/// node's addresses: `localhost` does, to the node's 127.0.0.1; a name under `.invalid` never
/// resolves (RFC 6761).
#[tokio::test]
async fn with_dns_resolution_names_must_resolve_to_the_node() {
    let dir = tempfile::tempdir().unwrap();
    let (server, admin) = cluster(dir.path()).await;
    create_node(
        &admin,
        dir.path(),
        "worker-1",
        &[("InternalIP", "127.0.0.1"), ("InternalIP", "::1")],
    )
    .await;
    let worker1 = client_with_token(&server, "worker-1-token").await;
    file_serving(&worker1, "resolves", "worker-1", &["localhost"], &[]).await;
    file_serving(
        &worker1,
        "unresolved",
        "worker-1",
        &["worker-1.invalid"],
        &[],
    )
    .await;
    let client = client_with_token(&server, "controllers-token").await;
    let running = start(move |rx| {
        let mut policy = ServingPolicy::new(
            regex::Regex::new(r"^(localhost|worker-1\.invalid)$").unwrap(),
            vec!["127.0.0.0/8".parse::<IpPrefix>().unwrap()],
        );
        policy.dns_check = DnsCheck::Resolve;
        controllers::kubelet_serving_approver(
            client,
            policy,
            Arc::new(Metrics::new()),
            options(),
            async move {
                let _ = rx.await;
            },
        )
    });
    eventually("both requests are decided", || {
        !conditions(&server, "resolves").is_empty() && !conditions(&server, "unresolved").is_empty()
    })
    .await;
    assert_eq!(conditions(&server, "resolves")[0]["type"], "Approved");
    let denied = &conditions(&server, "unresolved")[0];
    assert_eq!(denied["type"], "Denied");
    assert!(
        denied["message"].as_str().unwrap().ends_with(
            "DNS subjectAltName \"worker-1.invalid\" does not resolve to an address of the node"
        ),
        "{denied}"
    );
    running.stop().await;
}
