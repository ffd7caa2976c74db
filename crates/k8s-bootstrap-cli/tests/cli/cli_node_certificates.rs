//! `k8s-bootstrap node-certificates` against the loopback API server: with no certificate, the
//! bootstrap kubeconfig gets one, written in the kubelet's layout; SIGTERM ends it with 0.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::disallowed_methods,
    reason = "tests"
)]

use std::process::Stdio;
use std::time::Duration;

use k8s_bootstrap::node_certificates::CertificateStore;
use loopback_apiserver::LoopbackApiServer;
use tokio::io::AsyncBufReadExt as _;
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_k8s-bootstrap");

#[tokio::test]
async fn node_certificates_gets_a_certificate_with_the_bootstrap_kubeconfig() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let token = "abcdef.0123456789abcdef";
    server.add_static_token(
        token,
        "system:bootstrap:abcdef",
        &[
            "system:bootstrappers",
            "system:bootstrappers:kubeadm:default-node-token",
        ],
    );
    let dir = tempfile::tempdir().unwrap();
    let yaml = server
        .admin_kubeconfig_yaml()
        .replace(server.admin_token(), token);
    std::fs::write(dir.path().join("bootstrap.conf"), yaml).unwrap();

    let mut child = Command::new(BIN)
        .args([
            "node-certificates",
            "--cert-dir",
            "pki",
            "--bootstrap-kubeconfig",
            "bootstrap.conf",
            "--node-name",
            "worker-1",
        ])
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .env("HOME", dir.path())
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut log = String::new();
    let rotated = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            log.push_str(&line);
            log.push('\n');
            if line.contains("certificate rotated") {
                return true;
            }
        }
        false
    })
    .await
    .expect("no rotation logged in time");
    assert!(rotated, "exited before a rotation:\n{log}");
    assert!(log.contains("system:node:worker-1"), "{log}");
    assert!(
        !log.contains("PRIVATE KEY") && !log.contains(token),
        "{log}"
    );

    let pki = dir.path().join("pki");
    let link = pki.join("kubelet-client-current.pem");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let store = CertificateStore::new("kubelet-client", &pki).unwrap();
    let pair = store.load().unwrap().unwrap();
    assert_eq!(pair.certificate().common_name(), "system:node:worker-1");

    let pid = child.id().unwrap().to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .unwrap();
    assert!(killed.success());
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("node-certificates did not stop on SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
async fn node_certificates_needs_a_kubeconfig() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args([
            "node-certificates",
            "--cert-dir",
            "pki",
            "--node-name",
            "worker-1",
        ])
        .env_remove("KUBECONFIG")
        .current_dir(dir.path())
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--bootstrap-kubeconfig"), "{stderr}");
    assert!(!dir.path().join("pki").exists());
}

/// `--serving` with the node's kubeconfig (a client certificate) and certificates of seconds:
/// the first serving certificate and each renewal are filed by the node's client identity (a
/// serving certificate cannot authenticate), approved by the test, and installed before the
/// one in use expires.
#[tokio::test]
async fn node_certificates_serving_renews_with_the_nodes_client_credentials() {
    use k8s_bootstrap::k8s_openapi::api::certificates::v1::CertificateSigningRequest as ApiCsr;
    use k8s_bootstrap::kube::api::{Api, ListParams, Patch, PatchParams};

    let server = LoopbackApiServer::builder()
        .test_certificate_lifetime(Duration::from_secs(8))
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = server
        .issue_client_certificate("system:node:worker-1", &["system:nodes"])
        .unwrap();
    std::fs::write(
        dir.path().join("kubelet.conf"),
        server.kubeconfig_with_client_certificate(&cert, &key),
    )
    .unwrap();
    let mut child = Command::new(BIN)
        .args([
            "node-certificates",
            "--cert-dir",
            "pki",
            "--kubeconfig",
            "kubelet.conf",
            "--node-name",
            "worker-1",
            "--serving",
            "--address",
            "127.0.0.1",
        ])
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .env("HOME", dir.path())
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();

    // The test approves every serving request it sees, as an approver controller would.
    let kubeconfig =
        k8s_bootstrap::kube::config::Kubeconfig::from_yaml(&server.admin_kubeconfig_yaml())
            .unwrap();
    let config =
        k8s_bootstrap::kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .unwrap();
    let api: Api<ApiCsr> = Api::all(k8s_bootstrap::kube::Client::try_from(config).unwrap());
    let approver = tokio::spawn(async move {
        loop {
            for csr in api.list(&ListParams::default()).await.unwrap().items {
                let pending = csr
                    .status
                    .as_ref()
                    .is_none_or(|s| s.conditions.as_ref().is_none_or(Vec::is_empty));
                if pending {
                    let approval = serde_json::json!({"status": {"conditions": [{
                        "type": "Approved", "status": "True", "reason": "ByTheTest",
                        "message": "approved by the test",
                    }]}});
                    let name = csr.metadata.name.unwrap();
                    let _ = api
                        .patch_approval(&name, &PatchParams::default(), &Patch::Merge(&approval))
                        .await;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });

    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut log = String::new();
    let rotations = tokio::time::timeout(Duration::from_secs(90), async {
        let mut rotations = 0;
        while let Some(line) = lines.next_line().await.unwrap() {
            log.push_str(&line);
            log.push('\n');
            if line.contains("certificate rotated") {
                rotations += 1;
                if rotations == 3 {
                    break;
                }
            }
        }
        rotations
    })
    .await;
    approver.abort();
    assert_eq!(rotations, Ok(3), "{log}");
    assert!(!log.contains("certificate rotation failed"), "{log}");
    // Every request was the node's own.
    let users: Vec<String> = server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/certificatesigningrequests"))
        .map(|r| r.user.unwrap_or_default())
        .collect();
    assert_eq!(users.len(), 3, "{users:?}");
    assert!(
        users.iter().all(|u| u == "system:node:worker-1"),
        "{users:?}"
    );
    let store = CertificateStore::new("kubelet-server", dir.path().join("pki")).unwrap();
    let pair = store.load().unwrap().unwrap();
    assert_eq!(pair.certificate().common_name(), "system:node:worker-1");
    drop(child);
}
