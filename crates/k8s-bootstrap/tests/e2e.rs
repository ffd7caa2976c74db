//! The command against a real cluster: runs only when `K8S_BOOTSTRAP_E2E_KUBECONFIG` names an
//! admin kubeconfig, and says it was skipped otherwise.
//!
//! `token create --print-join-command` (10-minute TTL), `token list`, `join` with the printed
//! parameters (waiting up to two minutes for kube-controller-manager's bootstrap signer),
//! kubectl with the written kubeconfig (when kubectl is installed), `token delete`.
#![cfg(all(feature = "cli", feature = "loopback-server"))]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

use std::process::Output;

use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_k8s-bootstrap");
const VAR: &str = "K8S_BOOTSTRAP_E2E_KUBECONFIG";

async fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env_remove("KUBECONFIG")
        .output()
        .await
        .unwrap()
}

fn ok(what: &str, out: &Output) -> String {
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test]
async fn token_create_join_delete_against_a_real_cluster() {
    let Some(kubeconfig) = std::env::var_os(VAR).filter(|v| !v.is_empty()) else {
        println!(
            "skipped: {VAR} is not set (set it to an admin kubeconfig to run this test against that cluster)"
        );
        return;
    };
    let kubeconfig = kubeconfig.to_str().expect("a UTF-8 path").to_owned();
    let out = run(&[
        "--kubeconfig",
        &kubeconfig,
        "token",
        "create",
        "--ttl",
        "10m",
        "--description",
        "k8s-bootstrap e2e test",
        "--print-join-command",
    ])
    .await;
    let line = ok("token create", &out);
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(&words[..2], ["kubeadm", "join"], "{line}");
    let endpoint = words[2].to_owned();
    let after = |flag: &str| {
        let i = words.iter().position(|w| *w == flag).unwrap();
        words[i + 1].to_owned()
    };
    let token = after("--token");
    let hash = after("--discovery-token-ca-cert-hash");
    let id = token.split('.').next().unwrap().to_owned();

    let listed = ok(
        "token list",
        &run(&["--kubeconfig", &kubeconfig, "token", "list"]).await,
    );
    assert!(listed.contains(&id), "{listed}");

    let dir = tempfile::tempdir().unwrap();
    let written = dir.path().join("bootstrap-kubelet.conf");
    let joined = run(&[
        "join",
        &endpoint,
        "--token",
        &token,
        "--discovery-token-ca-cert-hash",
        &hash,
        "--discovery-timeout",
        "2m",
        "--tls-bootstrap-kubeconfig",
        written.to_str().unwrap(),
    ])
    .await;
    // Delete before asserting, so a failed join leaves no token behind.
    let deleted = run(&["--kubeconfig", &kubeconfig, "token", "delete", &id]).await;
    ok("join", &joined);
    ok("token delete", &deleted);
    assert!(written.exists());

    match std::process::Command::new("kubectl")
        .args(["--kubeconfig", written.to_str().unwrap(), "version"])
        .output()
    {
        // The token is deleted by now: the server answers, and refuses the credential or
        // serves the version; either way kubectl reached the discovered server over TLS
        // verified against the discovered CA (a TLS failure would say "certificate").
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stderr);
            assert!(!text.contains("certificate"), "{text}");
        }
        Err(_) => println!("kubectl not installed: the kubectl step was skipped"),
    }
}
