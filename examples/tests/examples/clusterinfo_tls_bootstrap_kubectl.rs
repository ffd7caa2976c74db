//! The TLS-bootstrap kubeconfig read back by the real `kubectl config view --raw -o json`:
//! same server, same CA data, same token, kubeadm's names.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use std::process::Command;

use base64::Engine as _;
use bootstrap_token::BootstrapToken;
use clusterinfo::{CaBundle, ClusterInfo};
use k8s_bootstrap_examples::TestPki;
use serde_json::{Value, json};

fn kubectl_view(yaml: &str, name: &str) -> Value {
    let path = std::env::temp_dir().join(format!(
        "clusterinfo-tls-bootstrap-{}-{name}.kubeconfig",
        std::process::id()
    ));
    std::fs::write(&path, yaml).unwrap();
    let out = Command::new("kubectl")
        .args(["config", "view", "--raw", "-o", "json", "--kubeconfig"])
        .arg(&path)
        .output()
        .expect("kubectl must be installed: the interop test runs the real client");
    let _ = std::fs::remove_file(&path);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut view: Value = serde_json::from_slice(&out.stdout).unwrap();
    // kubectl v1.32 writes the empty `preferences: {}`; v1.37 leaves it out. Either way it is
    // empty: compare without it.
    if let Some(map) = view.as_object_mut() {
        let preferences = map.remove("preferences");
        assert!(
            preferences.is_none() || preferences == Some(json!({})),
            "{preferences:?}"
        );
    }
    view
}

fn check(token: &str, name: &str) {
    let pki = TestPki::new().unwrap();
    let info = ClusterInfo::new(
        "https://127.0.0.1:6443",
        CaBundle::from_pem(pki.ca_cert_pem.as_bytes()).unwrap(),
    )
    .unwrap();
    let token: BootstrapToken = token.parse().unwrap();
    let kubeconfig = info.tls_bootstrap_kubeconfig(&token);
    let view = kubectl_view(kubeconfig.expose_secret(), name);
    let ca = base64::engine::general_purpose::STANDARD.encode(pki.ca_cert_pem.as_bytes());
    assert_eq!(
        view,
        json!({
            "kind": "Config",
            "apiVersion": "v1",
            "clusters": [{
                "name": "kubernetes",
                "cluster": {"server": "https://127.0.0.1:6443", "certificate-authority-data": ca}
            }],
            "users": [{"name": "tls-bootstrap-token-user", "user": {"token": token.to_string()}}],
            "contexts": [{
                "name": "tls-bootstrap-token-user@kubernetes",
                "context": {"cluster": "kubernetes", "user": "tls-bootstrap-token-user"}
            }],
            "current-context": "tls-bootstrap-token-user@kubernetes"
        })
    );
}

#[test]
fn kubectl_reads_back_server_ca_and_token() {
    check("abcdef.0123456789abcdef", "canary");
}

#[test]
fn kubectl_reads_back_an_all_digit_token_as_a_string() {
    check("123456.1234567890123456", "digits");
}

#[test]
fn kubectl_reads_back_a_generated_token() {
    let token = BootstrapToken::generate().unwrap();
    check(&token.to_string(), "generated");
}
