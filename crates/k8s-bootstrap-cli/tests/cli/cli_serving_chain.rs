//! The node's serving certificate end to end, every step a separate process: the loopback API
//! server holds the Node objects, `k8s-bootstrap controllers --controllers=kubeletservingapprover`
//! runs against it, `k8s-bootstrap join --serving` files the request, the approver approves it
//! (nobody runs `kubectl certificate approve`), the double's signer issues it; real `kubectl`
//! shows the request `Approved,Issued` with the approver's condition, `openssl` shows the
//! names, and `openssl s_client` with the cluster CA accepts a server using the certificate
//! under the node's name and address and refuses it under another. A second node asking for an
//! address its Node does not hold is denied, with the reason in the condition.
//!
//! The server under test is a double (`loopback_apiserver`), not a real control plane.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::disallowed_methods,
    reason = "tests"
)]

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use tokio::io::AsyncReadExt as _;
use tokio::process::{Child, Command};

use crate::cli_join_serving::{csr_row, run, s_client, s_server, text};
use crate::cli_tls_bootstrap::Env;
use crate::support::{addr_field, eventually_some, sigterm};

const BIN: &str = env!("CARGO_BIN_EXE_k8s-bootstrap");

/// How long one join may take from start to its decision (room for a loaded 2-core machine).
const JOIN_WITHIN: Duration = Duration::from_secs(120);

/// A Node object named `name` whose only address is `ip` (what the approver checks IP names
/// against).
fn node(env: &Env, name: &str, ip: &str) {
    env.server
        .insert(
            "",
            "nodes",
            json!({
                "apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                "status": {"addresses": [
                    {"type": "InternalIP", "address": ip},
                    {"type": "Hostname", "address": name},
                ]},
            }),
        )
        .unwrap();
}

/// `k8s-bootstrap controllers` running only the kubelet-serving approver, for names
/// `worker-<n>[.nodes.example]` and addresses in 127.0.0.0/8; its log goes to `approver.log`.
async fn approver(dir: &Path) -> Child {
    let log = dir.join("approver.log");
    let child = Command::new(BIN)
        .args([
            "--kubeconfig",
            "admin.conf",
            "controllers",
            "--controllers=kubeletservingapprover",
            r"--provider-regex=^worker-[0-9]+(\.nodes\.example)?$",
            "--provider-ip-prefixes=127.0.0.0/8",
            "--leader-elect=false",
            "--http-address=127.0.0.1:0",
        ])
        .env_remove("KUBECONFIG")
        .env("RUST_LOG", "k8s_bootstrap=info")
        .env("NO_COLOR", "1")
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Started once it serves its HTTP endpoints.
    eventually_some("the approver logs its HTTP address", || {
        std::fs::read_to_string(&log)
            .ok()?
            .lines()
            .filter(|l| l.contains("serving /healthz"))
            .find_map(|l| addr_field(l, "local"))
    })
    .await;
    child
}

/// Runs a join to its end (bounded): exit status, stdout, stderr.
async fn joined(mut join: Child) -> (std::process::ExitStatus, String, String) {
    let mut stdout = join.stdout.take().unwrap();
    let mut stderr = join.stderr.take().unwrap();
    let (mut out, mut err) = (String::new(), String::new());
    let (status, _, _) = tokio::time::timeout(JOIN_WITHIN, async {
        tokio::join!(
            join.wait(),
            stdout.read_to_string(&mut out),
            stderr.read_to_string(&mut err)
        )
    })
    .await
    .expect("join did not end in time");
    (status.unwrap(), out, err)
}

/// The name of the serving request join filed, from its stderr.
fn serving_request(stderr: &str) -> String {
    let line = stderr
        .lines()
        .find(|l| l.contains("filed for the serving certificate"))
        .unwrap_or_else(|| panic!("no serving request announced:\n{stderr}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "request").unwrap();
    words[at + 1].to_owned()
}

/// `field` (`reason`, `message`) of the condition of type `type_` of request `name`, as
/// `kubectl get csr -o jsonpath` shows it with the admin kubeconfig.
async fn condition(dir: &Path, name: &str, type_: &str, field: &str) -> String {
    let jsonpath = format!(r#"jsonpath={{.status.conditions[?(@.type=="{type_}")].{field}}}"#);
    let out = run(
        dir,
        "kubectl",
        &[
            "--kubeconfig",
            "admin.conf",
            "get",
            "csr",
            name,
            "-o",
            &jsonpath,
        ],
    )
    .await;
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_approver_controller_approves_a_nodes_serving_request_and_denies_a_foreign_address() {
    // The double approves the client requests (kubeadm's RBAC); serving requests are left to
    // the controller.
    let env = Env::start(true).await;
    let path = env.dir.path();
    node(&env, "worker-1", "127.0.0.1");
    node(&env, "worker-2", "127.0.0.2");
    let mut controller = approver(path).await;

    let join = env.join(&[
        "--serving",
        "--hostname",
        "worker-1.nodes.example",
        "--address",
        "127.0.0.1",
        "--tls-bootstrap-timeout",
        "1m",
        "--serving-timeout",
        "1m",
    ]);
    let (status, stdout, stderr) = joined(join).await;
    let log = || std::fs::read_to_string(path.join("approver.log")).unwrap();
    assert!(
        status.success(),
        "{status:?}\n{stdout}\n{stderr}\napprover:\n{}",
        log()
    );
    assert!(
        stdout.contains("wrote the serving certificate of system:node:worker-1"),
        "{stdout}"
    );
    let name = serving_request(&stderr);

    // kubectl: approved by the controller (its reason and message), then issued.
    let row = csr_row(path, &name).await;
    assert!(row.contains("kubernetes.io/kubelet-serving"), "{row}");
    assert!(row.contains("system:node:worker-1"), "{row}");
    assert!(row.contains("Approved,Issued"), "{row}");
    let reason = condition(path, &name, "Approved", "reason").await;
    assert_eq!(reason, "AutoApproved");
    let message = condition(path, &name, "Approved", "message").await;
    assert_eq!(
        message,
        "kubelet-serving request validated: the node owns every name and address it asks for"
    );
    assert!(
        log().contains("kubeletservingapprover: decided"),
        "{}",
        log()
    );

    // openssl: the names the node asked for, for server authentication only.
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

    // A TLS server with the pair: accepted under the node's names and address, refused under
    // another name and another address.
    let (mut server, port) = s_server(path, pem).await;
    for check in [
        &["-verify_hostname", "worker-1"][..],
        &["-verify_hostname", "worker-1.nodes.example"][..],
        &["-verify_ip", "127.0.0.1"][..],
    ] {
        let (ok, out) = s_client(path, port, check).await;
        assert!(
            ok && out.contains("Verify return code: 0 (ok)"),
            "{check:?}: {out}"
        );
    }
    let (ok, out) = s_client(path, port, &["-verify_hostname", "worker-2"]).await;
    assert!(!ok && out.contains("hostname mismatch"), "{out}");
    let (ok, out) = s_client(path, port, &["-verify_ip", "127.0.0.2"]).await;
    assert!(!ok && out.contains("IP address mismatch"), "{out}");
    server.kill().await.unwrap();

    // worker-2 asks for 127.0.0.1, which its Node does not hold: denied, and join says why.
    let second = path.join("worker-2");
    std::fs::create_dir(&second).unwrap();
    let join = env.join_in(
        &second,
        "worker-2",
        &[
            "--serving",
            "--address",
            "127.0.0.1",
            "--tls-bootstrap-timeout",
            "1m",
            "--serving-timeout",
            "1m",
        ],
    );
    let (status, _stdout, stderr) = joined(join).await;
    assert_eq!(status.code(), Some(1), "{stderr}\napprover:\n{}", log());
    assert!(
        stderr.contains("certificate signing request is denied, reason: AutoDenied"),
        "{stderr}"
    );
    let denied_name = serving_request(&stderr);
    let row = csr_row(path, &denied_name).await;
    assert!(row.contains("Denied"), "{row}");
    assert!(!row.contains("Issued"), "{row}");
    let reason = condition(path, &denied_name, "Denied", "reason").await;
    assert_eq!(reason, "AutoDenied");
    let message = condition(path, &denied_name, "Denied", "message").await;
    assert_eq!(
        message,
        "kubelet-serving request denied: IP subjectAltName 127.0.0.1 is not an address of the node"
    );
    assert!(std::fs::symlink_metadata(second.join("pki/kubelet-server-current.pem")).is_err());

    sigterm(&controller);
    let status = tokio::time::timeout(Duration::from_secs(10), controller.wait())
        .await
        .expect("the approver did not stop on SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}\n{}", log());
}
