//! `k8s-bootstrap controllers --metrics-secure` as a process against the API-server double,
//! administered with the real kubectl: `/metrics` over TLS behind TokenReview and
//! SubjectAccessReview (401 without a token, 403 for an account no role allows, 200 for one
//! bound to a ClusterRole made with `kubectl create clusterrole --non-resource-url=/metrics
//! --verb=get`), `/healthz` and `/readyz` open, nothing in plain HTTP; and a self-signed
//! certificate when no files are given.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code fails loudly"
)]

use std::net::SocketAddr;
use std::process::Stdio;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::process::{Child, Command};

use crate::cli_forward_proxy_delegated::{BIN, Setup, call};
use crate::support::{addr_field, eventually, eventually_some};

/// `controllers` with the admin kubeconfig (its reviews go through it), `--metrics-secure`
/// and `extra`, logging to `<name>.log` in `dir`; and the address it serves on.
async fn controllers(setup: &Setup, name: &str, extra: &[&str]) -> (Child, SocketAddr) {
    let log = setup.dir.path().join(format!("{name}.log"));
    let child = Command::new(BIN)
        .arg("--kubeconfig")
        .arg(&setup.admin)
        .args([
            "controllers",
            "--controllers=tokencleaner",
            "--leader-elect=false",
            "--http-address=127.0.0.1:0",
            "--metrics-secure",
        ])
        .args(extra)
        .env_remove("KUBECONFIG")
        .env("RUST_LOG", "k8s_bootstrap=info")
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let addr = eventually_some(&format!("{name} logs its address"), || {
        std::fs::read_to_string(&log)
            .ok()?
            .lines()
            .filter(|l| l.contains("serving /healthz"))
            .find_map(|l| addr_field(l, "local"))
    })
    .await;
    (child, addr)
}

fn log_of(setup: &Setup, name: &str) -> String {
    std::fs::read_to_string(setup.dir.path().join(format!("{name}.log"))).unwrap()
}

/// A plain-HTTP GET: its status, or `None` when the server does not answer in HTTP.
async fn plain_get(addr: SocketAddr, path: &str) -> Option<u16> {
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .ok()?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.ok()?;
    let response = String::from_utf8_lossy(&response);
    response.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}

/// An HTTPS client for `addr` that does not verify the server (for the self-signed
/// certificate), with the kubeconfig user entry `user`.
async fn unverified_client(addr: SocketAddr, user: &str) -> kube::Client {
    let yaml = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://{addr}\n    insecure-skip-tls-verify: true\nusers:\n- name: u\n  user:\n    {user}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n"
    );
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::from_yaml(&yaml).unwrap(),
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    kube::Client::try_from(config).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_answer_only_an_account_rbac_allows_and_probes_stay_open() {
    let setup = Setup::start().await;
    setup.administer().await;
    let cert = setup.dir.path().join("tls.crt");
    let key = setup.dir.path().join("tls.key");
    let (child, addr) = controllers(
        &setup,
        "secure",
        &[
            &format!("--tls-cert-file={}", cert.display()),
            &format!("--tls-private-key-file={}", key.display()),
        ],
    )
    .await;

    // No token: 401, as kube-apiserver answers it.
    let anonymous = setup.client_as(addr, "{}").await;
    let (status, body) = call(&anonymous, "GET", "/metrics").await;
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("Unauthorized"), "{body}");
    assert!(!body.contains("k8s_bootstrap_"), "{body}");

    // The probes stay open to anyone.
    let (status, body) = call(&anonymous, "GET", "/healthz").await;
    assert_eq!((status, body.as_str()), (200, "ok"));
    eventually("/readyz answers 200 without a token", || {
        let anonymous = anonymous.clone();
        async move { call(&anonymous, "GET", "/readyz").await.0 == 200 }
    })
    .await;

    // An account no role allows: 403, naming the user and the path.
    let stranger = setup.client(addr, &setup.token("stranger").await).await;
    let (status, body) = call(&stranger, "GET", "/metrics").await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains(r#"cannot get path \"/metrics\""#) || body.contains("cannot get path"),
        "{body}"
    );
    assert!(!body.contains("k8s_bootstrap_"), "{body}");

    // The account bound to metrics-reader (get on /metrics): the metrics text.
    let token = setup.token("prometheus").await;
    let prometheus = setup.client(addr, &token).await;
    let (status, body) = call(&prometheus, "GET", "/metrics").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("k8s_bootstrap_reconciles"), "{body}");
    // get only: a POST is another verb, which no role grants.
    let (status, body) = call(&prometheus, "POST", "/metrics").await;
    assert_eq!(status, 403, "{body}");

    // Nothing is served in plain HTTP on that address.
    assert_eq!(plain_get(addr, "/metrics").await, None);
    assert_eq!(plain_get(addr, "/healthz").await, None);
    // Those two failed handshakes are counted, and the certificate's expiry published, on
    // /metrics beside the controllers' own.
    let (status, body) = call(&prometheus, "GET", "/metrics").await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("k8s_bootstrap_metrics_tls_handshake_errors_total 2\n"),
        "{body}"
    );
    assert!(
        body.contains("k8s_bootstrap_metrics_serving_certificate_files_failing 0\n"),
        "{body}"
    );
    let expiry: u64 = body
        .lines()
        .find_map(|l| {
            l.strip_prefix("k8s_bootstrap_metrics_serving_certificate_expiry_timestamp_seconds ")
        })
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("the expiry gauge in {body}"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(expiry > now, "{expiry} {now}");

    drop(child);
    let log = log_of(&setup, "secure");
    let serving = log
        .lines()
        .find(|l| l.contains("serving /healthz"))
        .unwrap();
    assert!(
        serving.contains("/metrics over TLS behind TokenReview and SubjectAccessReview"),
        "{serving}"
    );
    assert!(serving.contains(&cert.display().to_string()), "{serving}");
    assert!(
        log.contains("controllers: serving certificate loaded"),
        "{log}"
    );
    assert!(!log.contains(&token), "the token is never logged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_files_a_self_signed_certificate_is_generated() {
    let setup = Setup::start().await;
    setup.administer().await;
    let (child, addr) = controllers(&setup, "self-signed", &[]).await;

    // The double's CA does not know the certificate: a verifying client is refused.
    let verifying = setup.client_as(addr, "{}").await;
    let request = http::Request::get("/healthz")
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    assert!(verifying.send(request).await.is_err());

    let anonymous = unverified_client(addr, "{}").await;
    let (status, body) = call(&anonymous, "GET", "/healthz").await;
    assert_eq!((status, body.as_str()), (200, "ok"));
    let (status, body) = call(&anonymous, "GET", "/metrics").await;
    assert_eq!(status, 401, "{body}");
    let token = setup.token("prometheus").await;
    let prometheus = unverified_client(addr, &format!("token: {token}")).await;
    let (status, body) = call(&prometheus, "GET", "/metrics").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("k8s_bootstrap_"), "{body}");

    drop(child);
    let log = log_of(&setup, "self-signed");
    assert!(log.contains("self-signed, generated at start"), "{log}");
}

/// The certificate flags need `--metrics-secure` and each other; a missing file is named
/// before any work.
#[test]
fn certificate_flags_are_checked_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.crt");
    let cert = format!("--tls-cert-file={}", missing.display());
    let key = format!("--tls-private-key-file={}", missing.display());
    for (extra, expected) in [
        (
            vec![cert.as_str(), key.as_str()],
            "used only with --metrics-secure",
        ),
        (
            vec!["--metrics-secure", cert.as_str()],
            "--tls-private-key-file",
        ),
        (
            vec!["--metrics-secure", cert.as_str(), key.as_str()],
            "--tls-cert-file",
        ),
    ] {
        let out = std::process::Command::new(BIN)
            .args([
                "--kubeconfig=/nonexistent/kubeconfig",
                "controllers",
                "--leader-elect=false",
                "--http-address=127.0.0.1:0",
            ])
            .args(&extra)
            .env_remove("KUBECONFIG")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains(expected), "{extra:?}: {stderr}");
        assert!(!stderr.contains("/nonexistent/kubeconfig"), "{stderr}");
        if extra.len() == 3 {
            assert!(stderr.contains(&missing.display().to_string()), "{stderr}");
        }
    }
}
