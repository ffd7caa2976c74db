//! `k8s-bootstrap node-certificates` against the loopback API server: with no certificate, the
//! bootstrap kubeconfig gets one, written in the kubelet's layout; SIGTERM ends it with 0;
//! /readyz and /metrics follow the rotations; a busy --http-address fails before any work.

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
            "--http-address=",
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
            "--http-address=off",
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

/// The sample value of `name` in a metrics text (the whole-line match skips `# HELP`).
fn sample<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
}

/// With certificates of seconds, /readyz turns 200 once the first certificate is installed,
/// and at each rotation /metrics shows the rotation counter rise and the TTL gauge jump back
/// up to the new certificate's lifetime.
#[tokio::test]
async fn node_certificates_serves_readiness_and_rotation_metrics() {
    use k8s_bootstrap::node_certificates::{CLIENT_ROTATIONS_METRIC, CLIENT_TTL_METRIC};

    use crate::support::{addr_field, eventually, eventually_some, http_get, sigterm};

    let server = LoopbackApiServer::builder()
        .test_certificate_lifetime(Duration::from_secs(8))
        .start()
        .await
        .unwrap();
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
    let log_path = dir.path().join("node-certificates.log");
    let mut child = Command::new(BIN)
        .args([
            "node-certificates",
            "--cert-dir",
            "pki",
            "--bootstrap-kubeconfig",
            "bootstrap.conf",
            "--node-name",
            "worker-1",
            "--http-address=127.0.0.1:0",
        ])
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .env("HOME", dir.path())
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let addr = eventually_some("node-certificates logs its HTTP address", || {
        log()
            .lines()
            .filter(|l| l.contains("serving /healthz"))
            .find_map(|l| addr_field(l, "local"))
    })
    .await;
    assert!(addr.ip().is_loopback(), "{addr}");
    assert_eq!(
        http_get(addr, "/healthz").await,
        Some((200, "ok".to_owned()))
    );

    // Ready once the first certificate is installed.
    eventually("/readyz answers 200", || async {
        http_get(addr, "/readyz").await == Some((200, "ok".to_owned()))
    })
    .await;
    let scrape = || async {
        let (status, text) = http_get(addr, "/metrics").await.unwrap();
        assert_eq!(status, 200, "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
        let rotations: u64 = sample(&text, &format!("{CLIENT_ROTATIONS_METRIC}_total"))
            .unwrap()
            .parse()
            .unwrap();
        let ttl: i64 = sample(&text, CLIENT_TTL_METRIC).unwrap().parse().unwrap();
        (rotations, ttl)
    };
    let (first, first_ttl) = scrape().await;
    assert!(first >= 1, "{first}");
    assert!(first_ttl <= 8, "{first_ttl}");

    // The next rotation (at 70-90 % of the 8 s lifetime): the counter rises, and the gauge
    // goes from what was left of the old certificate up to the new one's lifetime.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut before = (first, first_ttl);
    let after = loop {
        let now = scrape().await;
        if now.0 > before.0 {
            break now;
        }
        before = now;
        assert!(
            tokio::time::Instant::now() < deadline,
            "no rotation in /metrics: {before:?}\n{}",
            log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(after.0, before.0 + 1, "{before:?} {after:?}");
    assert!(after.1 > before.1, "{before:?} {after:?}");
    assert!(after.1 <= 8, "{after:?}");
    assert_eq!(
        http_get(addr, "/readyz").await,
        Some((200, "ok".to_owned()))
    );
    sigterm(&child);
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("node-certificates did not stop on SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}\n{}", log());
}

/// A busy --http-address is an error naming the flag, the address and the OS reason, before
/// any certificate work (the kubeconfig is not even read, the directory not created).
#[tokio::test]
async fn node_certificates_refuses_a_busy_http_address() {
    let busy = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = busy.local_addr().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args([
            "node-certificates",
            "--cert-dir",
            "pki",
            "--bootstrap-kubeconfig",
            "missing.conf",
            "--node-name",
            "worker-1",
            &format!("--http-address={addr}"),
        ])
        .env_remove("KUBECONFIG")
        .current_dir(dir.path())
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--http-address"), "{stderr}");
    assert!(stderr.contains(&addr.to_string()), "{stderr}");
    assert!(stderr.contains("in use"), "{stderr}");
    assert!(!stderr.contains("missing.conf"), "{stderr}");
    assert!(!dir.path().join("pki").exists());
    drop(busy);
}

#[tokio::test]
async fn node_certificates_refuses_an_http_address_that_is_not_one() {
    let out = Command::new(BIN)
        .args([
            "node-certificates",
            "--node-name",
            "worker-1",
            "--http-address=localhost",
        ])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--http-address"), "{stderr}");
    assert!(stderr.contains("or off"), "{stderr}");
}
