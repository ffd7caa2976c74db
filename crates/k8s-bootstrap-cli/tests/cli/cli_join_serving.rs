//! `k8s-bootstrap join --serving` against the loopback API server: the node's serving request
//! waits until real `kubectl certificate approve` approves it (nothing approves serving
//! requests automatically), the double's signer issues it, and `openssl s_client` with the
//! cluster CA accepts a server using it under the node's name and address and refuses it under
//! another name.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::disallowed_methods,
    reason = "tests"
)]

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use crate::cli_tls_bootstrap::Env;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _};
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_k8s-bootstrap");

pub(crate) async fn run(dir: &Path, program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .env("HOME", dir)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap()
}

pub(crate) fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `kubectl get csr <name>` with the admin kubeconfig: its table row.
pub(crate) async fn csr_row(dir: &Path, name: &str) -> String {
    let out = run(
        dir,
        "kubectl",
        &[
            "--kubeconfig",
            "admin.conf",
            "get",
            "csr",
            name,
            "--no-headers",
        ],
    )
    .await;
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `openssl s_client` to `port` with the cluster CA, checking `check` (`-verify_hostname
/// <name>` or `-verify_ip <ip>`); whether the handshake was accepted, and the output.
pub(crate) async fn s_client(dir: &Path, port: u16, check: &[&str]) -> (bool, String) {
    let connect = format!("127.0.0.1:{port}");
    let mut args = vec![
        "s_client",
        "-connect",
        &connect,
        "-CAfile",
        "ca.pem",
        "-verify_return_error",
    ];
    args.extend_from_slice(check);
    let out = run(dir, "openssl", &args).await;
    (out.status.success(), text(&out))
}

/// `openssl s_server` with the pair in `pem` (certificate and key in one file), on a port the
/// OS picks (openssl says which): the child and its port. Its output is drained so that it
/// never blocks on a full pipe.
pub(crate) async fn s_server(dir: &Path, pem: &str) -> (tokio::process::Child, u16) {
    let mut s_server = Command::new("openssl")
        .args([
            "s_server", "-accept", "0", "-cert", pem, "-key", pem, "-www",
        ])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut server_lines = tokio::io::BufReader::new(s_server.stdout.take().unwrap()).lines();
    let port: u16 = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = server_lines.next_line().await.unwrap() {
            if let Some(addr) = line.strip_prefix("ACCEPT ") {
                return addr.rsplit(':').next().unwrap().parse().unwrap();
            }
        }
        panic!("openssl s_server ended before accepting");
    })
    .await
    .expect("openssl s_server did not start");
    tokio::spawn(async move { while let Ok(Some(_)) = server_lines.next_line().await {} });
    (s_server, port)
}

/// A join with `--serving` against a fresh double, running until it has named its serving
/// request on stderr.
struct Joining {
    env: Env,
    join: tokio::process::Child,
    name: String,
    stdout: tokio::task::JoinHandle<String>,
    stderr: tokio::task::JoinHandle<String>,
}

impl Joining {
    async fn start() -> Joining {
        let env = Env::start(true).await;
        let mut join = env.join(&[
            "--serving",
            "--hostname",
            "worker-1.nodes.example",
            "--address",
            "127.0.0.1",
            "--tls-bootstrap-timeout",
            "1m",
            "--serving-timeout",
            "2m",
        ]);
        let mut stdout = join.stdout.take().unwrap();
        let stdout_task = tokio::spawn(async move {
            let mut s = String::new();
            stdout.read_to_string(&mut s).await.unwrap();
            s
        });
        let mut lines = tokio::io::BufReader::new(join.stderr.take().unwrap()).lines();
        let mut log = String::new();
        // join names the serving request on stderr once it is filed.
        let name = tokio::time::timeout(Duration::from_secs(90), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                log.push_str(&line);
                log.push('\n');
                if line.contains("filed for the serving certificate") {
                    let words: Vec<&str> = line.split_whitespace().collect();
                    let at = words.iter().position(|w| *w == "request").unwrap();
                    return Some(words[at + 1].to_owned());
                }
            }
            None
        })
        .await
        .expect("the serving request was not announced in time")
        .unwrap_or_else(|| panic!("join ended before filing the serving request:\n{log}"));
        assert!(log.contains("never approves serving requests"), "{log}");
        let stderr_task = tokio::spawn(async move {
            let mut rest = log;
            while let Ok(Some(line)) = lines.next_line().await {
                rest.push_str(&line);
                rest.push('\n');
            }
            rest
        });

        Joining {
            env,
            join,
            name,
            stdout: stdout_task,
            stderr: stderr_task,
        }
    }

    /// Waits for join to end: its status, stdout and stderr (the double keeps running).
    async fn finish(&mut self) -> (std::process::ExitStatus, String, String) {
        let status = tokio::time::timeout(Duration::from_secs(60), self.join.wait())
            .await
            .expect("join did not finish after the decision")
            .unwrap();
        let stderr = (&mut self.stderr).await.unwrap();
        let stdout = (&mut self.stdout).await.unwrap();
        (status, stdout, stderr)
    }
}

#[tokio::test]
async fn join_serving_waits_for_kubectl_approval_and_serves_tls_under_the_nodes_names() {
    let mut joining = Joining::start().await;
    let path = joining.env.dir.path().to_owned();
    let path = path.as_path();
    let name = joining.name.clone();
    let token = joining.env.token.clone();
    // Nothing approves it on its own: the double's approver handles client requests only.
    let row = csr_row(path, &name).await;
    assert!(row.contains("kubernetes.io/kubelet-serving"), "{row}");
    assert!(row.contains("system:node:worker-1"), "{row}");
    assert!(row.contains("Pending"), "{row}");

    let out = run(
        path,
        "kubectl",
        &[
            "--kubeconfig",
            "admin.conf",
            "certificate",
            "approve",
            &name,
        ],
    )
    .await;
    assert!(out.status.success(), "{}", text(&out));

    let (status, stdout, stderr) = joining.finish().await;
    assert!(status.success(), "{status:?}\n{stdout}\n{stderr}");
    assert!(
        stdout.contains("wrote the serving certificate of system:node:worker-1"),
        "{stdout}"
    );
    assert!(!stdout.contains(&token) && !stderr.contains(&token));
    assert!(!stderr.contains("PRIVATE KEY"));

    let row = csr_row(path, &name).await;
    assert!(row.contains("Approved,Issued"), "{row}");

    // The kubelet's layout: a timestamped pair file and the -current.pem link to it.
    let current = path.join("pki/kubelet-server-current.pem");
    assert!(
        std::fs::symlink_metadata(&current)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let target = std::fs::read_link(&current).unwrap();
    let file = target.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        file.starts_with("kubelet-server-")
            && file.ends_with(".pem")
            && file != "kubelet-server-current.pem",
        "{file}"
    );

    let pem = "pki/kubelet-server-current.pem";
    let out = run(
        path,
        "openssl",
        &[
            "x509",
            "-in",
            pem,
            "-noout",
            "-ext",
            "subjectAltName,extendedKeyUsage",
            "-subject",
        ],
    )
    .await;
    assert!(out.status.success(), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("DNS:worker-1, DNS:worker-1.nodes.example, IP Address:127.0.0.1"),
        "{shown}"
    );
    assert!(shown.contains("TLS Web Server Authentication"), "{shown}");
    assert!(!shown.contains("Client Authentication"), "{shown}");
    assert!(
        shown.contains("CN=system:node:worker-1") || shown.contains("CN = system:node:worker-1"),
        "{shown}"
    );

    let (mut s_server, port) = s_server(path, pem).await;
    let (ok, out) = s_client(path, port, &["-verify_hostname", "worker-1"]).await;
    assert!(ok && out.contains("Verify return code: 0 (ok)"), "{out}");
    let (ok, out) = s_client(path, port, &["-verify_hostname", "worker-1.nodes.example"]).await;
    assert!(ok && out.contains("Verify return code: 0 (ok)"), "{out}");
    let (ok, out) = s_client(path, port, &["-verify_ip", "127.0.0.1"]).await;
    assert!(ok && out.contains("Verify return code: 0 (ok)"), "{out}");
    let (ok, out) = s_client(path, port, &["-verify_hostname", "worker-2"]).await;
    assert!(!ok && out.contains("hostname mismatch"), "{out}");
    let (ok, out) = s_client(path, port, &["-verify_ip", "127.0.0.2"]).await;
    assert!(!ok && out.contains("IP address mismatch"), "{out}");
    s_server.kill().await.unwrap();
}

/// A denied serving request ends join with the reason; the client credentials stay written
/// and no serving pair appears.
#[tokio::test]
async fn join_serving_fails_with_the_reason_when_kubectl_denies_it() {
    let mut joining = Joining::start().await;
    let path = joining.env.dir.path().to_owned();
    let out = run(
        &path,
        "kubectl",
        &[
            "--kubeconfig",
            "admin.conf",
            "certificate",
            "deny",
            &joining.name,
        ],
    )
    .await;
    assert!(out.status.success(), "{}", text(&out));
    let (status, _stdout, stderr) = joining.finish().await;
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "serving certificate: certificate signing request is denied, reason: KubectlDeny"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("client credentials are written"),
        "{stderr}"
    );
    assert!(path.join("kubelet.conf").exists());
    assert!(path.join("pki/kubelet-client-current.pem").exists());
    assert!(std::fs::symlink_metadata(path.join("pki/kubelet-server-current.pem")).is_err());
}

#[tokio::test]
async fn join_serving_refuses_an_existing_serving_certificate_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("pki")).unwrap();
    std::fs::write(dir.path().join("pki/kubelet-server-current.pem"), "mine").unwrap();
    for extra in [&[][..], &["--force"][..]] {
        let mut args = vec![
            "join",
            // Nothing listens there: the check comes first.
            "127.0.0.1:1",
            "--token",
            "abcdef.0123456789abcdef",
            "--discovery-token-unsafe-skip-ca-verification",
            "--node-name",
            "worker-1",
            "--serving",
        ];
        args.extend_from_slice(extra);
        let out = run(dir.path(), BIN, &args).await;
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("kubelet-server-current.pem already exists"),
            "{stderr}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("pki/kubelet-server-current.pem")).unwrap(),
            "mine"
        );
        assert!(!dir.path().join("bootstrap-kubelet.conf").exists());
    }
}

#[tokio::test]
async fn serving_flags_need_serving_and_a_node_name() {
    let dir = tempfile::tempdir().unwrap();
    let base = [
        "join",
        "127.0.0.1:1",
        "--token",
        "abcdef.0123456789abcdef",
        "--discovery-token-unsafe-skip-ca-verification",
    ];
    for extra in [
        &["--serving"][..],
        &["--node-name", "worker-1", "--address", "10.0.0.1"][..],
        &["--node-name", "worker-1", "--serving", "--hostname", ""][..],
    ] {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        let out = run(dir.path(), BIN, &args).await;
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", text(&out));
    }
}
