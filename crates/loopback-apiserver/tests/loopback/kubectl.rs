//! The installed `kubectl` against the loopback API server.
//!
//! The server under test is a double (`loopback_apiserver`), not a real control plane.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test helpers fail loudly"
)]

use base64::Engine as _;
use loopback_apiserver::LoopbackApiServer;

use crate::support::kubectl::{kubectl, kubectl_with_input, stderr, stdout, write};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_admin_get_create_delete() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kc = write(dir.path(), "admin.yaml", &server.admin_kubeconfig_yaml());

    let out = kubectl(&kc, &["get", "secrets", "-n", "kube-system"]).await;
    assert!(out.status.success());
    assert!(stderr(&out).contains("No resources found in kube-system namespace."));

    let manifest = write(
        dir.path(),
        "secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: demo\n  namespace: kube-system\ntype: Opaque\nstringData:\n  hello: world\n",
    );
    let out = kubectl(&kc, &["create", "-f", manifest.to_str().unwrap()]).await;
    assert!(out.status.success());
    assert_eq!(stdout(&out).trim(), "secret/demo created");
    let stored = server.object("kube-system", "secrets", "demo").unwrap();
    assert_eq!(
        stored["data"]["hello"],
        base64::engine::general_purpose::STANDARD.encode("world")
    );

    let out = kubectl(&kc, &["get", "secrets", "-n", "kube-system"]).await;
    assert!(out.status.success());
    let table = stdout(&out);
    assert!(table.starts_with("NAME"), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("demo") && l.contains("Opaque")),
        "{table}"
    );

    let out = kubectl(
        &kc,
        &[
            "get",
            "cm",
            "cluster-info",
            "-n",
            "kube-public",
            "-o",
            "json",
        ],
    )
    .await;
    assert!(out.status.success());
    let cm: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cm["kind"], "ConfigMap");
    assert!(
        cm["data"]["kubeconfig"]
            .as_str()
            .unwrap()
            .contains(&server.url())
    );

    let out = kubectl(&kc, &["delete", "secret", "demo", "-n", "kube-system"]).await;
    assert!(out.status.success());
    // kubectl v1.37 names the namespace; v1.32 does not.
    assert!(
        [
            "secret \"demo\" deleted",
            "secret \"demo\" deleted from kube-system namespace"
        ]
        .contains(&stdout(&out).trim()),
        "{}",
        stdout(&out)
    );
    assert!(server.object("kube-system", "secrets", "demo").is_none());

    let out = kubectl(&kc, &["get", "secret", "demo", "-n", "kube-system"]).await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("Error from server (NotFound): secrets \"demo\" not found"));

    let out = kubectl(&kc, &["get", "--raw", "/version"]).await;
    assert!(out.status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_anonymous_reads_cluster_info_only() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca = base64::engine::general_purpose::STANDARD.encode(server.ca_pem());
    let anonymous = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {}\n    certificate-authority-data: {ca}\nusers:\n- name: nobody\n  user:\n    username: nobody\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: nobody\ncurrent-context: c\n",
        server.url()
    );
    let kc = write(dir.path(), "anonymous.yaml", &anonymous);
    // A kubeconfig with no credential at all makes kubectl prompt for basic-auth credentials
    // on the terminal (it reads the password from a tty, so a test cannot answer). The user
    // here has only a basic-auth user name and no password: kube-apiserver has had no basic-auth
    // authenticator since 1.19, so it, like the double, serves such a request as anonymous.
    let anon = |args: &'static [&'static str]| kubectl_with_input(&kc, args, None);

    let out = anon(&[
        "get",
        "--raw",
        "/api/v1/namespaces/kube-public/configmaps/cluster-info",
    ])
    .await;
    assert!(out.status.success());
    let cm: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cm["metadata"]["name"], "cluster-info");
    let last = server.requests().into_iter().last().unwrap();
    assert_eq!((last.status, last.user), (200, None));

    // `kubectl get secrets`: anonymous discovery is forbidden too (kubeadm's RBAC grants it to
    // authenticated users only), so kubectl stops at the 403 for `/api`.
    let out = anon(&["get", "secrets", "-n", "kube-system"]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("Error from server (Forbidden)"),
        "{}",
        stderr(&out)
    );
    let forbidden: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.status == 403)
        .collect();
    assert!(!forbidden.is_empty() && forbidden.iter().all(|r| r.user.is_none()));

    // The list itself, by path: 403 with kube-apiserver's sentence.
    let out = anon(&["get", "--raw", "/api/v1/namespaces/kube-system/secrets"]).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(
            "Error from server (Forbidden): secrets is forbidden: User \"system:anonymous\" cannot list resource \"secrets\" in API group \"\" in the namespace \"kube-system\""
        ),
        "{}",
        stderr(&out)
    );
    let last = server.requests().into_iter().last().unwrap();
    assert_eq!(
        (last.path.as_str(), last.status, last.user),
        ("/api/v1/namespaces/kube-system/secrets", 403, None)
    );
}
