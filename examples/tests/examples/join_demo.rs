//! The join demo (over the k8s-bootstrap drivers and the loopback API server) end to end, then
//! the real `kubectl` against that server with the kubeconfig the joining client wrote.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn demo() -> Command {
    Command::new(env!("CARGO_BIN_EXE_join-demo"))
}

/// The token in the demo's `kubeadm join ... --token <token> ...` line.
fn join_command_token(line: &str) -> Option<&str> {
    line.split("join command: kubeadm join ")
        .nth(1)?
        .split(" --token ")
        .nth(1)?
        .split(' ')
        .next()
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
        "/api/v1/namespaces/kube-public/configmaps/cluster-info -> 200 (anonymous: no credentials)",
        "fetch #2: GET https://127.0.0.1:",
        "passed: the JWS for the token ID, the CA pin, and a second fetch trusting only that CA, byte-identical to the first",
        "caught: wrong token secret: couldn't validate the identity of the API Server: failed to verify JWS signature of received cluster info object, can't trust this API Server",
        "caught: wrong CA pin: couldn't validate the identity of the API Server: cluster CA found in cluster-info ConfigMap is invalid: none of the public keys \"sha256:",
        "caught: altered kubeconfig (server URL changed, signature kept): couldn't validate the identity of the API Server: failed to verify JWS signature",
        "could not find a JWS signature in the cluster-info ConfigMap for token ID \"zzzzzz\"",
        "caught: no pins and no unsafe opt-in: discovery configuration: using token-based discovery without a CA pin can be unsafe: pin the cluster CA's public key, or skip its verification explicitly",
        "join-demo: all checks passed",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
    // The token is printed once, in kubeadm's join command, and its secret never again.
    let join_line = stdout
        .lines()
        .find(|l| l.contains("join command: kubeadm join 127.0.0.1:"))
        .unwrap();
    let token = join_command_token(join_line).unwrap();
    assert!(
        join_line.contains(" --discovery-token-ca-cert-hash sha256:"),
        "{join_line}"
    );
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

/// Files the demo wrote to its default temporary paths are gone when it ends.
#[test]
fn demo_removes_its_default_temporary_files() {
    let result = demo().output().unwrap();
    let stdout = String::from_utf8(result.stdout).unwrap();
    assert!(result.status.success(), "{stdout}");
    let written: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.split(" to ").nth(1))
        .filter_map(|rest| rest.split(' ').next())
        .filter(|p| p.ends_with(".kubeconfig"))
        .collect();
    assert_eq!(written.len(), 2, "{stdout}");
    for path in written {
        assert!(!std::path::Path::new(path).exists(), "{path} left behind");
    }
}

#[test]
fn demo_writes_the_tls_bootstrap_kubeconfig_with_the_token() {
    let out = out_path("bootstrap-e2e-client");
    let bootstrap = out_path("bootstrap-e2e");
    let result = demo()
        .arg("--out")
        .arg(&out)
        .arg("--bootstrap-out")
        .arg(&bootstrap)
        .output()
        .unwrap();
    let stdout = String::from_utf8(result.stdout).unwrap();
    assert!(result.status.success(), "{stdout}");
    let token = stdout
        .lines()
        .find_map(join_command_token)
        .unwrap()
        .to_owned();
    assert!(
        stdout.contains("wrote TLS-bootstrap kubeconfig (user tls-bootstrap-token-user, token ID"),
        "{stdout}"
    );
    let written = std::fs::read_to_string(&bootstrap).unwrap();
    assert!(
        written.ends_with(&format!(
            "users:\n- name: tls-bootstrap-token-user\n  user:\n    token: {token}\n"
        )),
        "{written}"
    );
    assert!(written.contains("current-context: tls-bootstrap-token-user@kubernetes\n"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&bootstrap).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
    }
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_file(&bootstrap);
}

/// The real client, configured only by the TLS-bootstrap kubeconfig the joining node wrote,
/// trusts our CA and authenticates with the bootstrap token in it; the demo server checks the
/// token with the bootstrap-token authenticator and rejects anything else with 401.
#[test]
fn kubectl_reads_cluster_info_with_the_written_kubeconfig() {
    let out = out_path("kubectl");
    let bootstrap = out_path("kubectl-bootstrap");
    let mut child = demo()
        .arg("--out")
        .arg(&out)
        .arg("--bootstrap-out")
        .arg(&bootstrap)
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
        if let Some(t) = join_command_token(&line) {
            token = Some(t.to_owned());
        }
        if line.starts_with("join-demo: serving ") {
            serving = true;
            break;
        }
    }
    let kubectl = |kubeconfig: &std::path::Path, token: Option<&str>, path: &str| {
        let mut cmd = Command::new("kubectl");
        cmd.arg("--kubeconfig").arg(kubeconfig);
        if let Some(token) = token {
            cmd.args(["--token", token]);
        }
        cmd.args(["get", "--raw", path])
            .stdin(Stdio::null())
            .output()
            .expect("kubectl must be installed: the interop test runs the real client")
    };
    assert!(serving, "{seen}");
    let token = token.expect("token line");

    // The main check: the TLS-bootstrap kubeconfig alone, no credential on the command line.
    let ok = kubectl(&bootstrap, None, clusterinfo::CLUSTER_INFO_PATH);
    let body = String::from_utf8_lossy(&ok.stdout).into_owned();
    assert!(
        ok.status.success(),
        "{body}\n{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let cm = clusterinfo::ClusterInfoConfigMap::from_json(body.as_bytes()).unwrap();
    cm.verify(&token.parse().unwrap()).unwrap();
    // Other objects are forbidden, as for a bootstrap token on a real cluster.
    let denied = kubectl(&bootstrap, None, "/api/v1/namespaces/kube-system/secrets");
    assert!(!denied.status.success());
    assert!(
        String::from_utf8_lossy(&denied.stderr).contains("Forbidden"),
        "{}",
        String::from_utf8_lossy(&denied.stderr)
    );

    // The credential-free discovery kubeconfig, with the token given on the command line.
    // kubectl cannot use it bare: client-go's interactive loader, finding a TLS cluster and a
    // user with no way to identify itself, prompts for a username and password on stdin, and
    // without a terminal that fails before any request is sent. So a client needs a credential
    // there; the TLS-bootstrap kubeconfig above carries it (the bootstrap token), which is why
    // kubeadm writes that file for the kubelet.
    let ok = kubectl(&out, Some(&token), clusterinfo::CLUSTER_INFO_PATH);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let cm = clusterinfo::ClusterInfoConfigMap::from_json(&ok.stdout).unwrap();
    cm.verify(&token.parse().unwrap()).unwrap();
    // A wrong token is not authenticated.
    let wrong = format!("{}.{}", token.split('.').next().unwrap(), "0".repeat(16));
    let unauthorized = kubectl(&out, Some(&wrong), clusterinfo::CLUSTER_INFO_PATH);
    assert!(!unauthorized.status.success());
    assert!(
        String::from_utf8_lossy(&unauthorized.stderr).contains("Unauthorized"),
        "{}",
        String::from_utf8_lossy(&unauthorized.stderr)
    );
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_file(&bootstrap);
}

/// Stops the demo server (by its process id) when the test ends, pass or fail.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
