//! `k8s-bootstrap join --node-name` against the loopback API server, whose CSR approver and
//! signer follow the `tls-bootstrap` core's rules: from a bootstrap token to a node
//! certificate that kubectl authenticates with; a restarted join finds its request; denial and
//! timeout end the join.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::arithmetic_side_effects,
    clippy::disallowed_methods,
    reason = "tests"
)]

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use k8s_bootstrap::k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use loopback_apiserver::LoopbackApiServer;
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_k8s-bootstrap");

/// A fresh double and a join command for it (`token create --print-join-command` in a
/// directory of its own, which holds `admin.conf` and `ca.pem`).
pub(crate) struct Env {
    pub(crate) server: LoopbackApiServer,
    pub(crate) dir: tempfile::TempDir,
    pub(crate) token: String,
    hash: String,
    endpoint: String,
}

impl Env {
    pub(crate) async fn start(auto_approve: bool) -> Env {
        Env::start_with(LoopbackApiServer::builder().csr_approver(auto_approve)).await
    }

    async fn start_with(builder: loopback_apiserver::Builder) -> Env {
        let server = builder.start().await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("admin.conf"),
            server.admin_kubeconfig_yaml(),
        )
        .unwrap();
        std::fs::write(dir.path().join("ca.pem"), server.ca_pem()).unwrap();
        let out = run(
            dir.path(),
            &[
                "--kubeconfig",
                "admin.conf",
                "token",
                "create",
                "--print-join-command",
            ],
        )
        .await;
        assert_ok(&out);
        let line = stdout(&out);
        let words: Vec<&str> = line.split_whitespace().collect();
        Env {
            endpoint: words[2].to_owned(),
            token: words[4].to_owned(),
            hash: words[6].to_owned(),
            server,
            dir,
        }
    }

    fn join_args<'a>(&'a self, node: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
        let mut args = vec![
            "join",
            &self.endpoint,
            "--token",
            &self.token,
            "--discovery-token-ca-cert-hash",
            &self.hash,
            "--node-name",
            node,
        ];
        args.extend_from_slice(extra);
        args
    }

    /// `join` for `worker-1` with `extra` flags, in the directory, its output piped.
    pub(crate) fn join(&self, extra: &[&str]) -> tokio::process::Child {
        self.join_in(self.dir.path(), "worker-1", extra)
    }

    /// `join` for `node` with `extra` flags, in `dir` (where it writes its files), its output
    /// piped.
    pub(crate) fn join_in(&self, dir: &Path, node: &str, extra: &[&str]) -> tokio::process::Child {
        Command::new(BIN)
            .args(self.join_args(node, extra))
            .env_remove("KUBECONFIG")
            .env_remove("RUST_LOG")
            .env("HOME", dir)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap()
    }

    async fn kubectl(&self, args: &[&str]) -> Output {
        Command::new("kubectl")
            .args(args)
            .env_remove("KUBECONFIG")
            .current_dir(self.dir.path())
            .output()
            .await
            .unwrap()
    }

    async fn csrs(&self) -> Vec<CertificateSigningRequest> {
        let client = admin_client(&self.server).await;
        k8s_bootstrap::kube::Api::<CertificateSigningRequest>::all(client)
            .list(&Default::default())
            .await
            .unwrap()
            .items
    }

    /// Waits until the node's request has been filed; returns its name.
    async fn filed(&self) -> String {
        for _ in 0..200 {
            if let Some(name) = self
                .csrs()
                .await
                .first()
                .and_then(|c| c.metadata.name.clone())
            {
                return name;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no CSR was filed");
    }
}

async fn admin_client(server: &LoopbackApiServer) -> k8s_bootstrap::kube::Client {
    let kubeconfig =
        k8s_bootstrap::kube::config::Kubeconfig::from_yaml(&server.admin_kubeconfig_yaml())
            .unwrap();
    let config =
        k8s_bootstrap::kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .unwrap();
    k8s_bootstrap::kube::Client::try_from(config).unwrap()
}

async fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .env("HOME", dir)
        .current_dir(dir)
        .output()
        .await
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn assert_ok(o: &Output) {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        stdout(o),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[tokio::test]
async fn join_ends_with_a_node_certificate_kubectl_authenticates_with() {
    let env = Env::start(true).await;
    let out = env
        .join(&["--tls-bootstrap-timeout", "1m"])
        .wait_with_output()
        .await
        .unwrap();
    assert_ok(&out);
    let text = stdout(&out);
    assert!(text.contains("system:node:worker-1"), "{text}");
    assert!(
        !text.contains(&env.token) && !String::from_utf8_lossy(&out.stderr).contains(&env.token)
    );

    let pem = env.dir.path().join("pki/kubelet-client-current.pem");
    let kubeconfig = env.dir.path().join("kubelet.conf");
    for f in [&pem, &kubeconfig] {
        let mode = std::fs::metadata(f).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{}", f.display());
    }
    assert!(!env.dir.path().join("pki/kubelet-client.key.tmp").exists());

    // The certificate chains to the cluster CA for client authentication (openssl).
    let out = Command::new("openssl")
        .args([
            "verify",
            "-purpose",
            "sslclient",
            "-CAfile",
            "ca.pem",
            pem.to_str().unwrap(),
        ])
        .current_dir(env.dir.path())
        .output()
        .await
        .unwrap();
    assert_ok(&out);

    // kubectl authenticates as the node with it.
    let out = env
        .kubectl(&[
            "--kubeconfig",
            "kubelet.conf",
            "auth",
            "whoami",
            "-o",
            "json",
        ])
        .await;
    assert_ok(&out);
    let review: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        review["status"]["userInfo"]["username"],
        "system:node:worker-1"
    );
    let groups = review["status"]["userInfo"]["groups"].as_array().unwrap();
    assert!(groups.iter().any(|g| g == "system:nodes"), "{review}");
    assert!(
        groups.iter().any(|g| g == "system:authenticated"),
        "{review}"
    );

    // The request is recorded as the bootstrap token's, approved and issued.
    let csrs = env.csrs().await;
    assert_eq!(csrs.len(), 1);
    let csr = &csrs[0];
    assert!(
        csr.metadata
            .name
            .as_deref()
            .unwrap()
            .starts_with("node-csr-")
    );
    let id = env.token.split('.').next().unwrap();
    assert_eq!(
        csr.spec.username.as_deref(),
        Some(format!("system:bootstrap:{id}").as_str())
    );
    let out = env
        .kubectl(&["--kubeconfig", "admin.conf", "get", "csr"])
        .await;
    assert_ok(&out);
    assert!(stdout(&out).contains("Approved,Issued"), "{}", stdout(&out));
}

#[tokio::test]
async fn a_restarted_join_finds_its_request_and_a_manual_approval_completes_it() {
    let env = Env::start(false).await;
    let mut first = env.join(&["--tls-bootstrap-timeout", "1m"]);
    let name = env.filed().await;
    first.start_kill().unwrap();
    let out = first.wait_with_output().await.unwrap();
    // While it waits, it names the request and the command that approves it.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "certificate signing request {name}, to be approved and signed"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("kubectl certificate approve {name}")),
        "{err}"
    );
    assert!(env.dir.path().join("pki/kubelet-client.key.tmp").exists());

    // The first run wrote the bootstrap kubeconfig: a restart replaces it only when told to.
    let out = env
        .join(&["--tls-bootstrap-timeout", "1m"])
        .wait_with_output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(
            "error: --tls-bootstrap-kubeconfig bootstrap-kubelet.conf: the file already exists"
        ),
        "{err}"
    );

    let second = env.join(&["--tls-bootstrap-timeout", "1m", "--force"]);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let csrs = env.csrs().await;
    assert_eq!(csrs.len(), 1, "a second request was filed");
    assert_eq!(csrs[0].metadata.name.as_deref(), Some(name.as_str()));

    let out = env
        .kubectl(&[
            "--kubeconfig",
            "admin.conf",
            "certificate",
            "approve",
            &name,
        ])
        .await;
    assert_ok(&out);
    let out = second.wait_with_output().await.unwrap();
    assert_ok(&out);
    let out = env
        .kubectl(&["--kubeconfig", "kubelet.conf", "auth", "whoami"])
        .await;
    assert_ok(&out);
    assert!(
        stdout(&out).contains("system:node:worker-1"),
        "{}",
        stdout(&out)
    );
}

#[tokio::test]
async fn denial_and_timeout_end_the_join() {
    let env = Env::start(false).await;
    let join = env.join(&["--tls-bootstrap-timeout", "1m"]);
    let name = env.filed().await;
    let out = env
        .kubectl(&["--kubeconfig", "admin.conf", "certificate", "deny", &name])
        .await;
    assert_ok(&out);
    let out = join.wait_with_output().await.unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("certificate signing request is denied, reason: KubectlDeny"),
        "{err}"
    );
    assert!(!env.dir.path().join("kubelet.conf").exists());

    // A fresh environment, nobody approves: the join gives up after its timeout.
    let env = Env::start(false).await;
    let started = std::time::Instant::now();
    let out = env
        .join(&["--tls-bootstrap-timeout", "2s"])
        .wait_with_output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("timed out after 2s waiting for certificate signing request node-csr-"),
        "{err}"
    );
    assert!(err.contains("to be approved and issued"), "{err}");
    assert!(!err.contains("is approved"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(30));
}

/// Approved, but no signer issues (kube-controller-manager's csrsigning controller not
/// running): the join says so as soon as it reads the approval, naming the signer and what
/// issues for it, and its timeout says the same rather than "to be approved".
#[tokio::test]
async fn an_approved_request_no_signer_issues_is_told_apart_from_a_pending_one() {
    let env = Env::start_with(LoopbackApiServer::builder().csr_signer(false)).await;
    let out = env
        .join(&["--tls-bootstrap-timeout", "5s"])
        .wait_with_output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    // The double's approver approved it; nothing issued it.
    let csrs = env.csrs().await;
    assert_eq!(csrs.len(), 1);
    let name = csrs[0].metadata.name.clone().unwrap();
    let status = csrs[0].status.clone().unwrap_or_default();
    assert!(status.certificate.is_none());
    assert!(
        status
            .conditions
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Approved")
    );
    let kcm = "kube-controller-manager's csrsigning controller issues it, and runs only with \
               --cluster-signing-cert-file and --cluster-signing-key-file";
    let announce = format!(
        "certificate signing request {name} is approved; waiting for signer \
         kubernetes.io/kube-apiserver-client-kubelet to issue the certificate: {kcm}"
    );
    assert_eq!(err.matches(&announce).count(), 1, "{err}");
    assert_eq!(
        err.lines().last().unwrap_or_default(),
        format!(
            "error: TLS bootstrap: timed out after 5s waiting for the certificate of \
             certificate signing \
             request {name}: it is approved, but signer \
             kubernetes.io/kube-apiserver-client-kubelet did not issue it ({kcm})"
        ),
        "{err}"
    );
    assert!(!env.dir.path().join("kubelet.conf").exists());
}
