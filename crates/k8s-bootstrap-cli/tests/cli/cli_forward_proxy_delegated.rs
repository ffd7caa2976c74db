//! `k8s-bootstrap forward-proxy --authentication=token-review` as a process, against the
//! API-server double, set up by the real kubectl as an administrator would: a ServiceAccount,
//! a ClusterRole `--non-resource-url=/metrics --verb=get`, a ClusterRoleBinding, `kubectl
//! create token`. A client with that token (kube's own HTTPS client, trusting the double's CA)
//! goes through the proxy over TLS to an add-on that echoes `X-Remote-User`; and for a table of
//! (user, verb, path), the proxy's decision equals `kubectl auth can-i --as=<user>` against the
//! same double. Flag errors name the flag before any work.
//!
//! kubectl is the first on PATH.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code fails loudly"
)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use http_body_util::BodyExt as _;
use loopback_apiserver::LoopbackApiServer;
use tokio::process::Command;

use crate::support::spawn_proxy;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_k8s-bootstrap");
pub(crate) const NS: &str = "monitoring";

/// kubectl with `kubeconfig`: its output (whatever its exit status).
pub(crate) async fn kubectl_output(kubeconfig: &Path, args: &[&str]) -> std::process::Output {
    Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(kubeconfig.with_extension("cache"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("kubectl runs")
}

/// kubectl with `kubeconfig`, which must succeed: its standard output.
pub(crate) async fn kubectl(kubeconfig: &Path, args: &[&str]) -> String {
    let out = kubectl_output(kubeconfig, args).await;
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The add-on: answers every request with the `X-Remote-User` and `X-Remote-Groups` it got.
pub(crate) async fn addon() -> SocketAddr {
    async fn echo(headers: axum::http::HeaderMap) -> String {
        let get = |name: &str| {
            headers
                .get(name)
                .map(|v| v.to_str().unwrap().to_owned())
                .unwrap_or_default()
        };
        format!(
            "user={} groups={}",
            get("x-remote-user"),
            get("x-remote-groups")
        )
    }
    let app = axum::Router::new().fallback(echo);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// The double, its admin kubeconfig and the proxy's serving files, in a temporary directory.
pub(crate) struct Setup {
    pub(crate) server: LoopbackApiServer,
    pub(crate) dir: tempfile::TempDir,
    pub(crate) admin: PathBuf,
}

impl Setup {
    pub(crate) async fn start() -> Setup {
        let server = LoopbackApiServer::builder().start().await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let admin = dir.path().join("admin.conf");
        std::fs::write(&admin, server.admin_kubeconfig_yaml()).unwrap();
        std::fs::write(dir.path().join("tls.crt"), server.serving_certificate_pem()).unwrap();
        std::fs::write(dir.path().join("tls.key"), server.serving_key_pem()).unwrap();
        Setup { server, dir, admin }
    }

    /// What an administrator runs: the namespace, the accounts, the roles and bindings.
    pub(crate) async fn administer(&self) {
        let k = |args: &'static [&'static str]| kubectl(&self.admin, args);
        k(&["create", "namespace", NS]).await;
        for account in ["prometheus", "uploader", "stranger"] {
            kubectl(
                &self.admin,
                &["create", "serviceaccount", account, "-n", NS],
            )
            .await;
        }
        k(&[
            "create",
            "clusterrole",
            "metrics-reader",
            "--non-resource-url=/metrics",
            "--verb=get",
        ])
        .await;
        k(&[
            "create",
            "clusterrole",
            "upload-writer",
            "--non-resource-url=/upload",
            "--verb=post",
        ])
        .await;
        k(&[
            "create",
            "clusterrolebinding",
            "prometheus-metrics",
            "--clusterrole=metrics-reader",
            "--serviceaccount=monitoring:prometheus",
        ])
        .await;
        k(&[
            "create",
            "clusterrolebinding",
            "uploader-upload",
            "--clusterrole=upload-writer",
            "--serviceaccount=monitoring:uploader",
        ])
        .await;
    }

    /// `kubectl create token <account>`.
    pub(crate) async fn token(&self, account: &str) -> String {
        kubectl(&self.admin, &["create", "token", account, "-n", NS])
            .await
            .trim()
            .to_owned()
    }

    /// `kubectl create token <account> --audience=<audience>`: a projected token for it.
    pub(crate) async fn token_for(&self, account: &str, audience: &str) -> String {
        let audience = format!("--audience={audience}");
        kubectl(
            &self.admin,
            &["create", "token", account, "-n", NS, &audience],
        )
        .await
        .trim()
        .to_owned()
    }

    /// The proxy in token-review mode, TLS with the double's serving certificate, reviewing
    /// with the admin kubeconfig, in front of `addon`; `extra` flags appended.
    pub(crate) async fn proxy(&self, addon: SocketAddr, extra: &[&str]) -> crate::support::Proxy {
        let mut command = Command::new(BIN);
        command
            .arg("forward-proxy")
            .arg("--authentication=token-review")
            .arg(format!("--kubeconfig={}", self.admin.display()))
            .arg(format!("--forward={addon}"))
            .arg("--secure-listen-address=127.0.0.1:0")
            .arg("--http-address=127.0.0.1:0")
            .arg(format!(
                "--tls-cert-file={}",
                self.dir.path().join("tls.crt").display()
            ))
            .arg(format!(
                "--tls-private-key-file={}",
                self.dir.path().join("tls.key").display()
            ))
            .args(extra);
        spawn_proxy(command).await
    }

    /// An HTTPS client for `proxy` with `token` as its bearer token, trusting the double's CA
    /// (kube's client, from a kubeconfig as a user would write it).
    pub(crate) async fn client(&self, proxy: SocketAddr, token: &str) -> kube::Client {
        self.client_as(proxy, &format!("token: {token}")).await
    }

    /// An HTTPS client for `proxy` trusting the double's CA, with `user` as the kubeconfig's
    /// user entry (`token: ...`, `client-certificate-data: ...` on one line each, or `{}`).
    pub(crate) async fn client_as(&self, proxy: SocketAddr, user: &str) -> kube::Client {
        kube::Client::try_from(self.config_as(proxy, user).await).unwrap()
    }

    /// The configuration of [`Setup::client_as`].
    pub(crate) async fn config_as(&self, proxy: SocketAddr, user: &str) -> kube::Config {
        let ca = base64::engine::general_purpose::STANDARD.encode(self.server.ca_pem());
        let user = user.replace('\n', "\n    ");
        let yaml = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: proxy\n  cluster:\n    server: https://{proxy}\n    certificate-authority-data: {ca}\nusers:\n- name: caller\n  user:\n    {user}\ncontexts:\n- name: c\n  context:\n    cluster: proxy\n    user: caller\ncurrent-context: c\n"
        );
        kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::from_yaml(&yaml).unwrap(),
            &kube::config::KubeConfigOptions::default(),
        )
        .await
        .unwrap()
    }
}

/// `method path` through `client`: the status code and the body.
pub(crate) async fn call(client: &kube::Client, method: &str, path: &str) -> (u16, String) {
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    let response = client.send(request).await.unwrap();
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn kubectl_administers_the_proxy_decides_as_kubectl_auth_can_i() {
    let setup = Setup::start().await;
    setup.administer().await;
    let addon = addon().await;
    let proxy = setup.proxy(addon, &[]).await;

    // The bound account gets through; the add-on sees who it is.
    let token = setup.token("prometheus").await;
    let client = setup.client(proxy.listen, &token).await;
    let (status, body) = call(&client, "GET", "/metrics").await;
    assert_eq!(status, 200, "{body}");
    let user = format!("system:serviceaccount:{NS}:prometheus");
    assert!(body.starts_with(&format!("user={user} groups=")), "{body}");
    assert!(body.contains("system:serviceaccounts"), "{body}");

    // An unbound account: 403, and the add-on's echo is nowhere.
    let stranger = setup
        .client(proxy.listen, &setup.token("stranger").await)
        .await;
    let (status, body) = call(&stranger, "GET", "/metrics").await;
    assert_eq!(status, 403, "{body}");
    assert!(!body.contains("user="), "{body}");

    // The proxy's decisions equal kubectl auth can-i --as against the same double.
    let mut clients = Vec::new();
    for account in ["prometheus", "uploader", "stranger"] {
        let token = setup.token(account).await;
        clients.push((account, setup.client(proxy.listen, &token).await));
    }
    let mut table = Vec::new();
    for (account, client) in &clients {
        let as_user = format!("--as=system:serviceaccount:{NS}:{account}");
        for (method, verb) in [("GET", "get"), ("POST", "post")] {
            for path in ["/metrics", "/upload", "/other"] {
                let (status, body) = call(client, method, path).await;
                assert!(status == 200 || status == 403, "{status} {body}");
                let out =
                    kubectl_output(&setup.admin, &["auth", "can-i", verb, path, &as_user]).await;
                let answer = String::from_utf8_lossy(&out.stdout).trim().to_owned();
                assert!(
                    answer == "yes" || answer == "no",
                    "can-i: {answer:?} {out:?}"
                );
                table.push(format!(
                    "{account} {verb} {path}: proxy {status}, can-i {answer}"
                ));
                assert_eq!(
                    status == 200,
                    answer == "yes",
                    "{account} {verb} {path}: the proxy answered {status}, kubectl auth can-i {answer}"
                );
            }
        }
    }
    // The table is not trivial: both answers occur.
    assert!(table.iter().any(|l| l.ends_with("can-i yes")), "{table:#?}");
    assert!(table.iter().any(|l| l.ends_with("can-i no")), "{table:#?}");

    // The mode and the identity headers are logged at start.
    let log = proxy.stderr().await;
    let starting = log
        .lines()
        .find(|l| l.contains("forward-proxy: starting"))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(
        starting.contains("authentication=\"token-review\"")
            || starting.contains("authentication=token-review"),
        "{starting}"
    );
    assert!(
        starting.contains("x-remote-user and x-remote-groups"),
        "{starting}"
    );
    assert!(!log.contains(&token), "the token is never logged");
}

/// Each flag error names the flag, exits 2 (usage) or 1, and comes before any work: no
/// kubeconfig is read and nothing listens.
#[tokio::test]
async fn flag_errors_name_the_flag_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.yaml");
    let missing_flag = format!("--config-file={}", missing.display());
    let common = [
        "forward-proxy",
        "--forward=127.0.0.1:1",
        "--insecure-listen-address=127.0.0.1:0",
        "--http-address=127.0.0.1:0",
        "--kubeconfig=/nonexistent/kubeconfig",
    ];
    for (extra, code, expected) in [
        (
            vec!["--authentication=token-review", "--issuer=i"],
            2,
            "--issuer is a flag of --authentication=jwt",
        ),
        (
            vec!["--authentication=token-review", "--jwks-file=/j"],
            2,
            "--jwks-file is a flag of --authentication=jwt",
        ),
        (
            vec![
                "--authentication=token-review",
                "--auth-header-user-field-name=x user",
            ],
            2,
            "--auth-header-user-field-name \"x user\"",
        ),
        (
            vec![
                "--authentication=token-review",
                "--auth-header-groups-field-name=x-remote-user",
            ],
            2,
            "the user and groups headers are the same",
        ),
        (
            vec!["--authentication=token-review", missing_flag.as_str()],
            1,
            "--config-file",
        ),
        (
            vec!["--issuer=i", "--audience=a", "--config-file=/c.yaml"],
            2,
            "--config-file is a flag of --authentication=token-review",
        ),
        (
            vec!["--issuer=i", "--audience=a", "--auth-token-audiences=x"],
            2,
            "--auth-token-audiences is a flag of --authentication=token-review",
        ),
        (
            vec![
                "--issuer=i",
                "--audience=a",
                "--authorization-webhook-cache-authorized-ttl=1m",
            ],
            2,
            "--authorization-webhook-cache-authorized-ttl is a flag of --authentication=token-review",
        ),
        (
            vec![
                "--authentication=token-review",
                "--authentication-token-webhook-cache-ttl=-1s",
            ],
            2,
            "0s to cache nothing",
        ),
        (
            vec![
                "--authentication=token-review",
                "--authorization-webhook-cache-unauthorized-ttl=soon",
            ],
            2,
            "--authorization-webhook-cache-unauthorized-ttl",
        ),
    ] {
        let out = std::process::Command::new(BIN)
            .args(common)
            .args(&extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{extra:?}: {stderr}");
        assert!(stderr.contains(expected), "{extra:?}: {stderr}");
        assert!(
            !stderr.contains("/nonexistent/kubeconfig"),
            "no work before the flags are checked: {stderr}"
        );
        if expected == "--config-file" {
            assert!(stderr.contains(&missing.display().to_string()), "{stderr}");
        }
    }

    // Flags that pass (the configuration file and header flags of
    // deploy/forward-proxy-delegated): the first work is the kubeconfig, which is missing.
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, "authorization: {}\n").unwrap();
    let out = std::process::Command::new(BIN)
        .args(common)
        .args([
            "--authentication=token-review",
            &format!("--config-file={}", config.display()),
            "--auth-header-fields-enabled=true",
            "--auth-header-groups-field-separator=|",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("/nonexistent/kubeconfig"), "{stderr}");
}

/// A deleted ServiceAccount's token: the double refuses it in a TokenReview at once (as
/// kube-apiserver's service-account authenticator does), the proxy keeps serving it from its
/// cache while `--authentication-token-webhook-cache-ttl` runs, and refuses it (401) once it
/// has run out, never before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_service_account_is_refused_once_the_cache_ttl_has_passed() {
    use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};

    const TTL: std::time::Duration = std::time::Duration::from_secs(3);
    let setup = Setup::start().await;
    setup.administer().await;
    kubectl(
        &setup.admin,
        &["create", "serviceaccount", "leaving", "-n", NS],
    )
    .await;
    kubectl(
        &setup.admin,
        &[
            "create",
            "clusterrolebinding",
            "leaving-metrics",
            "--clusterrole=metrics-reader",
            "--serviceaccount=monitoring:leaving",
        ],
    )
    .await;
    let addon = addon().await;
    let proxy = setup
        .proxy(addon, &["--authentication-token-webhook-cache-ttl=3s"])
        .await;
    let token = setup.token("leaving").await;
    let client = setup.client(proxy.listen, &token).await;

    // Reviewed and cached from here on (the cache entry is no older than `cached_from`).
    let cached_from = std::time::Instant::now();
    let (status, body) = call(&client, "GET", "/metrics").await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.starts_with("user=system:serviceaccount:monitoring:leaving "),
        "{body}"
    );

    kubectl(
        &setup.admin,
        &["delete", "serviceaccount", "leaving", "-n", NS],
    )
    .await;
    // The double no longer authenticates the token.
    let reviews: kube::Api<TokenReview> =
        kube::Api::all(setup.server.admin_client().await.unwrap());
    let review = TokenReview {
        spec: TokenReviewSpec {
            token: token.clone(),
            ..TokenReviewSpec::default()
        },
        ..TokenReview::default()
    };
    let reviewed = reviews.create(&Default::default(), &review).await.unwrap();
    let status = reviewed.status.unwrap();
    assert_ne!(status.authenticated, Some(true), "{status:?}");
    assert!(
        status
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("not found"),
        "{status:?}"
    );

    // Within the TTL the proxy still answers from its cache.
    let asked_at = cached_from.elapsed();
    let (status, body) = call(&client, "GET", "/metrics").await;
    assert!(
        asked_at < TTL,
        "the machine took {asked_at:?} to delete the account: the TTL ran out before the check"
    );
    assert_eq!(status, 200, "cached within the TTL: {body}");

    // Once it has run out, the new review refuses the token: 401, and the add-on sees nothing.
    // Until then every answer is the cached 200.
    let deadline = std::time::Instant::now() + TTL + std::time::Duration::from_secs(20);
    let last = loop {
        let answer = call(&client, "GET", "/metrics").await;
        if answer.0 == 401 {
            break answer;
        }
        assert_eq!(answer.0, 200, "{answer:?}");
        assert!(
            std::time::Instant::now() < deadline,
            "still answered {answer:?} after {:?}",
            cached_from.elapsed()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert!(
        cached_from.elapsed() >= TTL,
        "refused after {:?}, before the TTL ran out",
        cached_from.elapsed()
    );
    assert!(!last.1.contains("user="), "{}", last.1);
    assert!(last.1.contains("Unauthorized"), "{}", last.1);

    let log = proxy.stderr().await;
    let line = log
        .lines()
        .find(|l| {
            l.contains("authenticator=\"token-review\"") || l.contains("authenticator=token-review")
        })
        .unwrap_or_else(|| panic!("{log}"));
    assert!(line.contains("cache_ttl=3s"), "{line}");
    assert!(line.contains("authorized_ttl=10s"), "{line}");
    assert!(!log.contains(&token), "the token is never logged");
}
