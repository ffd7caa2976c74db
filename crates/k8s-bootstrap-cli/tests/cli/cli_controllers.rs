//! `k8s-bootstrap controllers` as a process against the loopback API server: two replicas
//! elect one leader on the Lease, the leader signs and cleans, `/readyz` and `/metrics` answer,
//! SIGTERM stops a replica with exit code 0 and releases the lease, and bad flags exit 2.
//!
//! The server under test is a double (`loopback_apiserver`), not a real control plane.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    reason = "test code fails loudly"
)]

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// How soon a replica exits after SIGTERM.
const EXIT_WITHIN: Duration = Duration::from_secs(10);

use loopback_apiserver::LoopbackApiServer;
use serde_json::json;
use tokio::process::{Child, Command};

use crate::support::{addr_field, eventually, eventually_some, http_get, sigterm};

const BIN: &str = env!("CARGO_BIN_EXE_k8s-bootstrap");

/// A replica whose log (debug level) goes to `<identity>.log` beside the kubeconfig: a file, not
/// a pipe, so a replica never blocks on a log nobody reads, and a failing test can show it. It
/// serves HTTP on a port the kernel picks ([`http_address`] reads it from the log).
fn replica(kubeconfig: &Path, identity: &str) -> Child {
    let log = std::fs::File::create(log_path(kubeconfig, identity)).unwrap();
    Command::new(BIN)
        .args([
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "controllers",
            "--controllers=bootstrapsigner,tokencleaner",
            "--leader-elect=true",
            // Room for a loaded machine: renewal starts 2 s before the lease would lapse.
            "--leader-elect-lease-duration=6s",
            "--leader-elect-renew-deadline=4s",
            "--http-address=127.0.0.1:0",
        ])
        .env_remove("KUBECONFIG")
        .env(
            "RUST_LOG",
            "k8s_bootstrap=debug,kube_runtime=debug,kube_client=debug",
        )
        .env("POD_NAME", identity)
        .stdout(Stdio::null())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

fn log_path(kubeconfig: &Path, identity: &str) -> std::path::PathBuf {
    kubeconfig.with_file_name(format!("{identity}.log"))
}

/// The address a replica serves `/healthz`, `/readyz` and `/metrics` on, from its log line.
async fn http_address(kubeconfig: &Path, identity: &str) -> SocketAddr {
    let log = log_path(kubeconfig, identity);
    eventually_some(&format!("{identity} logs its HTTP address"), || {
        std::fs::read_to_string(&log)
            .ok()?
            .lines()
            .filter(|l| l.contains("serving /healthz"))
            .find_map(|l| addr_field(l, "local"))
    })
    .await
}

/// Sends SIGTERM and waits for `child` to exit 0; fails with the replica's log otherwise.
async fn exits_after_sigterm(child: &mut Child, kubeconfig: &Path, identity: &str) {
    sigterm(child);
    let waited = tokio::time::timeout(EXIT_WITHIN, child.wait()).await;
    let log = std::fs::read_to_string(log_path(kubeconfig, identity)).unwrap_or_default();
    match waited {
        Ok(status) => {
            let status = status.unwrap();
            assert!(status.success(), "{identity} exit {status:?}:\n{log}");
        }
        Err(_) => panic!("{identity} still runs {EXIT_WITHIN:?} after SIGTERM:\n{log}"),
    }
}

/// Whether the metrics text has exactly this sample line (a `contains` would also match the
/// metric's `# HELP` line).
fn has_line(metrics: &str, line: &str) -> bool {
    metrics.lines().any(|l| l == line)
}

fn holder(server: &LoopbackApiServer) -> Option<String> {
    server
        .object("kube-system", "leases", "k8s-bootstrap-controllers")?
        .pointer("/spec/holderIdentity")?
        .as_str()
        .map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_sign_clean_report_and_hand_over_on_sigterm() {
    let server = LoopbackApiServer::builder()
        .bootstrap_signer(false)
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("admin.conf");
    std::fs::write(&kubeconfig, server.admin_kubeconfig_yaml()).unwrap();
    let mut a = replica(&kubeconfig, "replica-a");
    let mut b = replica(&kubeconfig, "replica-b");
    let http_a = http_address(&kubeconfig, "replica-a").await;
    let http_b = http_address(&kubeconfig, "replica-b").await;

    eventually("a replica holds the lease", || async {
        holder(&server).is_some()
    })
    .await;
    for addr in [http_a, http_b] {
        eventually("both replicas are ready", || async {
            http_get(addr, "/readyz").await == Some((200, "ok".to_owned()))
        })
        .await;
    }
    let leader_id = holder(&server).unwrap();
    let (leader, standby, leader_http, standby_http) = if leader_id == "replica-a" {
        (&mut a, &mut b, http_a, http_b)
    } else {
        (&mut b, &mut a, http_b, http_a)
    };

    // The leader signs a new token and deletes an expired one.
    server
        .insert(
            "kube-system",
            "secrets",
            json!({
                "metadata": {"name": "bootstrap-token-abcdef"},
                "type": "bootstrap.kubernetes.io/token",
                "stringData": {"token-id": "abcdef", "token-secret": "0123456789abcdef",
                    "usage-bootstrap-signing": "true"},
            }),
        )
        .unwrap();
    server
        .insert(
            "kube-system",
            "secrets",
            json!({
                "metadata": {"name": "bootstrap-token-oldold"},
                "type": "bootstrap.kubernetes.io/token",
                "stringData": {"token-id": "oldold", "token-secret": "0123456789abcdef",
                    "expiration": "2020-01-01T00:00:00Z"},
            }),
        )
        .unwrap();
    eventually("signed", || async {
        server
            .object("kube-public", "configmaps", "cluster-info")
            .is_some_and(|cm| cm.pointer("/data/jws-kubeconfig-abcdef").is_some())
    })
    .await;
    eventually("expired token deleted", || async {
        server
            .object("kube-system", "secrets", "bootstrap-token-oldold")
            .is_none()
    })
    .await;
    // The counter moves just after the delete the server has seen.
    eventually("the leader counts the deleted token", || async move {
        http_get(leader_http, "/metrics")
            .await
            .is_some_and(|(_, metrics)| has_line(&metrics, "k8s_bootstrap_deleted_tokens_total 1"))
    })
    .await;
    let (status, metrics) = http_get(leader_http, "/metrics").await.unwrap();
    assert_eq!(status, 200);
    assert!(has_line(&metrics, "k8s_bootstrap_leader 1"), "{metrics}");
    assert!(
        has_line(&metrics, "k8s_bootstrap_deleted_tokens_total 1"),
        "{metrics}"
    );
    let (_, standby_metrics) = http_get(standby_http, "/metrics").await.unwrap();
    assert!(
        has_line(&standby_metrics, "k8s_bootstrap_leader 0"),
        "{standby_metrics}"
    );

    // SIGTERM: the leader exits 0 and releases the lease; the standby takes over.
    let standby_id = if leader_id == "replica-a" {
        "replica-b"
    } else {
        "replica-a"
    };
    exits_after_sigterm(leader, &kubeconfig, &leader_id).await;
    eventually("the standby leads", || async {
        holder(&server).is_some_and(|h| h != leader_id)
            && http_get(standby_http, "/metrics")
                .await
                .is_some_and(|(_, m)| has_line(&m, "k8s_bootstrap_leader 1"))
    })
    .await;
    exits_after_sigterm(standby, &kubeconfig, standby_id).await;
}

#[tokio::test]
async fn unknown_controller_and_bad_durations_and_policies_are_refused() {
    for (args, expected) in [
        (
            vec!["controllers", "--controllers=bootstrapsigner,csrsigning"],
            "unknown controller \"csrsigning\"",
        ),
        (
            vec![
                "controllers",
                "--leader-elect-lease-duration=10s",
                "--leader-elect-renew-deadline=10s",
            ],
            "--leader-elect-renew-deadline must be shorter",
        ),
        (
            vec![
                "controllers",
                "--leader-elect-renew-deadline=2s",
                "--leader-elect-retry-period=2s",
            ],
            "the renew deadline must be longer than 6/5 of the retry period",
        ),
        (
            vec!["controllers", "--controllers=*,kubeletservingapprover"],
            "kubeletservingapprover needs --provider-regex",
        ),
        (
            vec!["controllers", "--provider-regex=worker-(["],
            "invalid value 'worker-([' for '--provider-regex <REGEX>'",
        ),
        (
            vec!["controllers", "--provider-regex="],
            "for '--provider-regex <REGEX>': must not be empty",
        ),
        (
            vec![
                "controllers",
                "--provider-ip-prefixes=10.0.0.0/8,10.0.0.0/33",
            ],
            "invalid value '10.0.0.0/33' for '--provider-ip-prefixes <CIDRS>'",
        ),
        (
            vec!["controllers", "--max-expiration-sec=31708801"],
            "for '--max-expiration-sec <SECONDS>'",
        ),
    ] {
        let output = Command::new(BIN)
            .args(&args)
            .env_remove("KUBECONFIG")
            .env("HOME", "/nonexistent")
            .output()
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        // Refused before any work: usage errors, as clap's.
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
    }
    let output = Command::new(BIN)
        .args(["controllers", "--leader-elect=maybe"])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "usage errors exit 2");
}

/// The kubelet-serving approver, named in --controllers: it logs its policy at start, approves a
/// node's request for its own address and denies one for another's, counts both in /metrics,
/// and stops on SIGTERM.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kubelet_serving_approver_runs_when_named() {
    use k8s_bootstrap::tls_bootstrap::{
        CertificateRequest, CertificateSigningRequest, KUBELET_SERVING_SIGNER, KeyUsage, NodeKey,
    };
    use k8s_openapi::api::certificates::v1::CertificateSigningRequest as ApiCsr;

    let server = LoopbackApiServer::builder()
        .bootstrap_signer(false)
        .csr_approver(false)
        .csr_signer(false)
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("admin.conf");
    std::fs::write(&kubeconfig, server.admin_kubeconfig_yaml()).unwrap();
    server
        .insert(
            "",
            "nodes",
            json!({
                "apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1"},
                "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.5"}]},
            }),
        )
        .unwrap();
    server
        .insert(
            "",
            "clusterrolebindings",
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "nodes-file-requests"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:node-bootstrapper"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:nodes"}],
            }),
        )
        .unwrap();
    server.add_static_token("worker-1-token", "system:node:worker-1", &["system:nodes"]);
    let node_kubeconfig = server
        .admin_kubeconfig_yaml()
        .replace(server.admin_token(), "worker-1-token");
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::from_yaml(&node_kubeconfig).unwrap(),
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    let csrs: kube::Api<ApiCsr> = kube::Api::all(kube::Client::try_from(config).unwrap());
    for (name, ip) in [("own", "10.0.0.5"), ("other", "10.0.0.6")] {
        let key = NodeKey::generate().unwrap();
        let request = CertificateRequest::for_node_serving(
            &"worker-1".parse().unwrap(),
            &key,
            &[],
            &[ip.parse().unwrap()],
        )
        .unwrap();
        let csr = CertificateSigningRequest::builder(request.to_pem(), KUBELET_SERVING_SIGNER)
            .name(name)
            .usages(&[KeyUsage::DigitalSignature, KeyUsage::ServerAuth])
            .build();
        csrs.create(&Default::default(), &ApiCsr::try_from(&csr).unwrap())
            .await
            .unwrap();
    }

    let log_file = log_path(&kubeconfig, "approver");
    let mut child = Command::new(BIN)
        .args([
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "controllers",
            "--controllers=kubeletservingapprover",
            "--provider-regex=^worker-[0-9]+$",
            "--provider-ip-prefixes=10.0.0.0/24",
            "--leader-elect=false",
            "--http-address=127.0.0.1:0",
        ])
        .env_remove("KUBECONFIG")
        .env("RUST_LOG", "k8s_bootstrap=info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log_file).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let http = http_address(&kubeconfig, "approver").await;
    let condition = |name: &str| {
        server
            .object("", "certificatesigningrequests", name)
            .and_then(|o| o.pointer("/status/conditions/0/type").cloned())
            .and_then(|t| t.as_str().map(str::to_owned))
    };
    eventually("both requests are decided", || {
        let done = condition("own").is_some() && condition("other").is_some();
        async move { done }
    })
    .await;
    assert_eq!(condition("own").as_deref(), Some("Approved"));
    assert_eq!(condition("other").as_deref(), Some("Denied"));
    // The counters move just after the writes the server has seen.
    eventually(
        "/metrics counts one approval and one denial",
        || async move {
            http_get(http, "/metrics")
                .await
                .is_some_and(|(status, metrics)| {
                    status == 200
                        && has_line(&metrics, "k8s_bootstrap_kubelet_serving_approved_total 1")
                        && has_line(&metrics, "k8s_bootstrap_kubelet_serving_denied_total 1")
                })
        },
    )
    .await;
    exits_after_sigterm(&mut child, &kubeconfig, "approver").await;
    let log = std::fs::read_to_string(&log_file).unwrap();
    let policy = log
        .lines()
        .find(|l| l.contains("kubeletservingapprover: policy"))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(
        policy.contains(r#"provider regex "^worker-[0-9]+$", IP prefixes [10.0.0.0/24], max expiration 31708800 s, DNS resolution bypass"#),
        "{policy}"
    );
    let start = log
        .lines()
        .find(|l| l.contains("controllers: starting without leader election"))
        .unwrap();
    assert!(
        start.contains("controllers=\"kubeletservingapprover\"")
            || start.contains("controllers=kubeletservingapprover"),
        "{start}"
    );
    let denied = log
        .lines()
        .find(|l| l.contains("kubeletservingapprover: decided") && l.contains("csr=\"other\""))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(
        denied.contains("IP subjectAltName 10.0.0.6 is not an address of the node"),
        "{denied}"
    );
    assert!(!log.contains("CERTIFICATE REQUEST"), "{log}");
}
