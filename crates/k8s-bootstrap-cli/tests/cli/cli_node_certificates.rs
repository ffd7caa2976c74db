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
