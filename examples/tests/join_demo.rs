//! The join demo end to end, then the real `kubectl` against the demo's API server with the
//! kubeconfig the joining client wrote.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn demo() -> Command {
    Command::new(env!("CARGO_BIN_EXE_join-demo"))
}

fn out_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "join-demo-test-{}-{name}.kubeconfig",
        std::process::id()
    ))
}

#[test]
fn demo_runs_end_to_end_and_catches_every_tampering() {
    let out = out_path("e2e");
    let result = demo().arg("--out").arg(&out).output().unwrap();
    let stdout = String::from_utf8(result.stdout).unwrap();
    assert!(
        result.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&result.stderr)
    );
    for expected in [
        "fetch #1: GET https://127.0.0.1:",
        "(without verifying the server, no credentials)",
        "fetch #2: GET https://127.0.0.1:",
        "(trusting only the discovered, pinned CA)",
        "passed: kubeconfig byte-identical to the first fetch",
        "caught: wrong token secret: failed to verify JWS signature of received cluster info object, can't trust this API Server",
        "caught: wrong CA pin: cluster CA found in cluster-info ConfigMap is invalid: none of the public keys \"sha256:",
        "caught: altered kubeconfig (server URL changed, signature kept): failed to verify JWS signature",
        "caught: kubeconfig switched between the two fetches: the second kubeconfig from the cluster-info ConfigMap (using validated TLS) was different from the first",
        "could not find a JWS signature in the cluster-info ConfigMap for token ID \"zzzzzz\"",
        "caught: no pins and no unsafe opt-in: using token-based discovery without caCertHashes can be unsafe",
        "join-demo: all checks passed",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
    // The token secret is printed once, at creation, and never again.
    let token_line = stdout
        .lines()
        .find(|l| l.contains("token created: "))
        .unwrap();
    let token = token_line.split("token created: ").nth(1).unwrap().trim();
    let secret = token.split('.').nth(1).unwrap();
    assert_eq!(secret.len(), 16);
    assert_eq!(stdout.matches(secret).count(), 1, "{stdout}");
    // The written kubeconfig is a valid client kubeconfig without credentials.
    let written = std::fs::read_to_string(&out).unwrap();
    let info = clusterinfo::ClusterInfo::parse(written.as_bytes()).unwrap();
    assert!(info.server().starts_with("https://127.0.0.1:"));
    assert!(info.ca_bundle().is_some());
    assert!(!written.contains(secret));
    let _ = std::fs::remove_file(&out);
}

/// The real client accepts our kubeconfig and trusts our CA. kubectl prompts for basic-auth
/// credentials (and fails without a terminal) when a TLS kubeconfig carries none, so the
/// bootstrap token goes on the command line; the demo server checks it with the
/// bootstrap-token authenticator and rejects anything else with 401.
#[test]
fn kubectl_reads_cluster_info_with_the_written_kubeconfig() {
    let out = out_path("kubectl");
    let mut child = demo()
        .arg("--out")
        .arg(&out)
        .args(["--serve-for", "120"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _guard = KillOnDrop(child);
    let mut lines = BufReader::new(stdout).lines();
    let mut token = None;
    let mut serving = false;
    let mut seen = String::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        seen.push_str(&line);
        seen.push('\n');
        if let Some(t) = line.split("token created: ").nth(1) {
            token = Some(t.trim().to_owned());
        }
        if line.starts_with("join-demo: serving ") {
            serving = true;
            break;
        }
    }
    let run = |token: &str, path: &str| {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&out)
            .args(["--token", token, "get", "--raw", path])
            .stdin(Stdio::null())
            .output()
            .expect("kubectl must be installed: the interop test runs the real client")
    };
    assert!(serving, "{seen}");
    let token = token.expect("token line");
    let ok = run(
        &token,
        "/api/v1/namespaces/kube-public/configmaps/cluster-info",
    );
    let body = String::from_utf8_lossy(&ok.stdout).into_owned();
    assert!(
        ok.status.success(),
        "{body}\n{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let cm = clusterinfo::ClusterInfoConfigMap::from_json(body.as_bytes()).unwrap();
    cm.verify(&token.parse().unwrap()).unwrap();
    // Other objects are forbidden, as for a bootstrap token on a real cluster.
    let denied = run(&token, "/api/v1/namespaces/kube-system/secrets");
    assert!(!denied.status.success());
    assert!(
        String::from_utf8_lossy(&denied.stderr).contains("Forbidden"),
        "{}",
        String::from_utf8_lossy(&denied.stderr)
    );
    // A wrong token is not authenticated.
    let wrong = format!("{}.{}", token.split('.').next().unwrap(), "0".repeat(16));
    let unauthorized = run(
        &wrong,
        "/api/v1/namespaces/kube-public/configmaps/cluster-info",
    );
    assert!(!unauthorized.status.success());
    assert!(
        String::from_utf8_lossy(&unauthorized.stderr).contains("Unauthorized"),
        "{}",
        String::from_utf8_lossy(&unauthorized.stderr)
    );
    let _ = std::fs::remove_file(&out);
}

/// Stops the demo server (by its process id) when the test ends, pass or fail.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
