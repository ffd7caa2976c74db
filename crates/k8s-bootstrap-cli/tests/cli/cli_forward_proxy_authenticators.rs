//! `k8s-bootstrap forward-proxy --authentication=token-review` with the authenticators beside
//! the TokenReview, as a process against the API-server double set up with kubectl:
//!
//! - client certificates of `--client-ca-file` (x509);
//! - the front proxy of `--requestheader-client-ca-file`;
//! - projected service-account tokens verified offline (`--service-account-tokens=offline`,
//!   and `offline-only`, which never sends a TokenReview);
//! - the review rate limit (`--review-rate-limit`).
//!
//! The certificates are made by OpenSSL; the clients are kube's own HTTPS client.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code fails loudly"
)]

use std::path::{Path, PathBuf};

use base64::Engine as _;
use http_body_util::BodyExt as _;

use crate::cli_forward_proxy_delegated::{BIN, NS, Setup, addon, call, kubectl};

/// A CA made by OpenSSL in `dir` (`<name>.crt`, `<name>.key`).
fn make_ca(dir: &Path, name: &str) -> PathBuf {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.crt"),
            "-days",
            "2",
            "-subj",
            &format!("/CN={name}"),
        ],
    );
    dir.join(format!("{name}.crt"))
}

/// A client certificate signed by the CA `ca` of `dir`, with `subject` (`/O=dev/CN=alice`):
/// the kubeconfig user entry that presents it.
fn make_client_cert(dir: &Path, ca: &str, name: &str, subject: &str) -> String {
    std::fs::write(dir.join("client.ext"), "extendedKeyUsage=clientAuth\n").unwrap();
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.csr"),
            "-subj",
            subject,
        ],
    );
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &format!("{name}.csr"),
            "-CA",
            &format!("{ca}.crt"),
            "-CAkey",
            &format!("{ca}.key"),
            "-CAcreateserial",
            "-out",
            &format!("{name}.crt"),
            "-days",
            "2",
            "-extfile",
            "client.ext",
        ],
    );
    let b64 = |file: String| {
        base64::engine::general_purpose::STANDARD.encode(std::fs::read(dir.join(file)).unwrap())
    };
    format!(
        "client-certificate-data: {}\nclient-key-data: {}",
        b64(format!("{name}.crt")),
        b64(format!("{name}.key"))
    )
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("openssl is installed");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `GET path` through `client` with `headers`: the status, the response headers and the body,
/// or the client's error (a refused handshake).
async fn get_with(
    client: &kube::Client,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<(u16, http::HeaderMap, String), kube::Error> {
    let mut request = http::Request::builder().method("GET").uri(path);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(kube::client::Body::from(Vec::new())).unwrap();
    let response = client.send(request).await?;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    Ok((status, headers, String::from_utf8_lossy(&body).into_owned()))
}

/// The TokenReviews the double answered so far.
fn token_reviews(setup: &Setup) -> usize {
    setup
        .server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/tokenreviews"))
        .count()
}

/// The `forward-proxy: authenticator enabled` lines of `log`.
fn authenticator_lines(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.contains("forward-proxy: authenticator enabled"))
        .collect()
}

#[tokio::test]
async fn client_certificates_of_the_client_ca_authenticate_their_common_name() {
    let setup = Setup::start().await;
    setup.administer().await;
    kubectl(
        &setup.admin,
        &[
            "create",
            "clusterrolebinding",
            "alice-metrics",
            "--clusterrole=metrics-reader",
            "--user=alice",
        ],
    )
    .await;
    let dir = setup.dir.path();
    let ca = make_ca(dir, "client-ca");
    make_ca(dir, "other-ca");
    let alice = make_client_cert(dir, "client-ca", "alice", "/O=dev/O=ops/CN=alice");
    let bob = make_client_cert(dir, "client-ca", "bob", "/O=dev/CN=bob");
    let mallory = make_client_cert(dir, "other-ca", "mallory", "/CN=alice");
    let addon = addon().await;
    let proxy = setup
        .proxy(addon, &[&format!("--client-ca-file={}", ca.display())])
        .await;

    // The bound common name gets through; the add-on sees it, with its organizations.
    let client = setup.client_as(proxy.listen, &alice).await;
    let (status, body) = call(&client, "GET", "/metrics").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, "user=alice groups=dev|ops|system:authenticated");

    // The SubjectAccessReview still decides: bob is nobody's subject.
    let client = setup.client_as(proxy.listen, &bob).await;
    let (status, body) = call(&client, "GET", "/metrics").await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains(r#"User \"bob\" cannot get path \"/metrics\""#),
        "{body}"
    );
    assert!(!body.contains("user="), "{body}");

    // Another CA's certificate (with the same common name) is refused in the handshake.
    let client = setup.client_as(proxy.listen, &mallory).await;
    let refused = get_with(&client, "/metrics", &[]).await;
    assert!(refused.is_err(), "{refused:?}");

    // A token still works beside the certificates; no certificate is no user.
    let client = setup
        .client(proxy.listen, &setup.token("prometheus").await)
        .await;
    assert_eq!(call(&client, "GET", "/metrics").await.0, 200);
    let client = setup.client_as(proxy.listen, "{}").await;
    assert_eq!(call(&client, "GET", "/metrics").await.0, 401);
    assert_eq!(token_reviews(&setup), 1, "certificates need no TokenReview");

    let log = proxy.stderr().await;
    let lines = authenticator_lines(&log);
    assert_eq!(lines.len(), 2, "{log}");
    assert!(lines[0].contains("x509") && lines[0].contains(&ca.display().to_string()));
    assert!(lines[1].contains("token-review"), "{log}");
    assert!(!log.contains("PRIVATE KEY"), "{log}");
}

#[tokio::test]
async fn only_the_front_proxy_certificate_with_an_allowed_name_makes_the_headers_count() {
    let setup = Setup::start().await;
    setup.administer().await;
    for user in ["alice", "bob"] {
        kubectl(
            &setup.admin,
            &[
                "create",
                "clusterrolebinding",
                &format!("{user}-metrics"),
                "--clusterrole=metrics-reader",
                &format!("--user={user}"),
            ],
        )
        .await;
    }
    let dir = setup.dir.path();
    let client_ca = make_ca(dir, "client-ca");
    let front_ca = make_ca(dir, "front-proxy-ca");
    let front = make_client_cert(dir, "front-proxy-ca", "front", "/CN=front-proxy-client");
    let unlisted = make_client_cert(dir, "front-proxy-ca", "unlisted", "/CN=another-proxy");
    let bob = make_client_cert(dir, "client-ca", "bob", "/CN=bob");
    let addon = addon().await;
    let proxy = setup
        .proxy(
            addon,
            &[
                &format!("--client-ca-file={}", client_ca.display()),
                &format!("--requestheader-client-ca-file={}", front_ca.display()),
                "--requestheader-allowed-names=front-proxy-client",
                "--requestheader-uid-headers=X-Remote-Uid",
            ],
        )
        .await;
    let alice = [
        ("X-Remote-User", "alice"),
        ("X-Remote-Group", "metrics-readers"),
        ("X-Remote-Extra-Scopes", "read"),
    ];

    // The front proxy's certificate with its allowed name: the headers name the user.
    let client = setup.client_as(proxy.listen, &front).await;
    let (status, _, body) = get_with(&client, "/metrics", &alice).await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        "user=alice groups=metrics-readers|system:authenticated"
    );
    // ... and with no user header, the certificate alone is nobody.
    let (status, _, body) = get_with(&client, "/metrics", &[]).await.unwrap();
    assert_eq!(status, 401, "{body}");

    // The same CA, a name that is not allowed: the headers do not count.
    let client = setup.client_as(proxy.listen, &unlisted).await;
    let (status, _, body) = get_with(&client, "/metrics", &alice).await.unwrap();
    assert_eq!(status, 401, "{body}");

    // No certificate: the headers are removed; the token decides.
    let client = setup.client_as(proxy.listen, "{}").await;
    let (status, _, body) = get_with(&client, "/metrics", &alice).await.unwrap();
    assert_eq!(status, 401, "{body}");
    let client = setup
        .client(proxy.listen, &setup.token("prometheus").await)
        .await;
    let (status, _, body) = get_with(&client, "/metrics", &alice).await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(
        body.starts_with(&format!("user=system:serviceaccount:{NS}:prometheus ")),
        "{body}"
    );

    // A client-CA certificate: its own user, never the headers' (both users are bound).
    let client = setup.client_as(proxy.listen, &bob).await;
    let (status, _, body) = get_with(&client, "/metrics", &alice).await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, "user=bob groups=system:authenticated");

    let log = proxy.stderr().await;
    let lines = authenticator_lines(&log);
    assert_eq!(lines.len(), 3, "{log}");
    assert!(lines[0].contains("front-proxy"), "{log}");
    assert!(lines[0].contains("front-proxy-client"), "{log}");
    assert!(lines[0].contains("X-Remote-User"), "{log}");
    assert!(lines[0].contains("uid_headers=\"X-Remote-Uid\""), "{log}");
    assert!(lines[1].contains("x509"), "{log}");
    assert!(lines[2].contains("token-review"), "{log}");
}

#[tokio::test]
async fn an_empty_allowed_names_list_accepts_any_front_proxy_certificate() {
    let setup = Setup::start().await;
    setup.administer().await;
    kubectl(
        &setup.admin,
        &[
            "create",
            "clusterrolebinding",
            "alice-metrics",
            "--clusterrole=metrics-reader",
            "--user=alice",
        ],
    )
    .await;
    let dir = setup.dir.path();
    let front_ca = make_ca(dir, "front-proxy-ca");
    let any = make_client_cert(dir, "front-proxy-ca", "any", "/CN=any-proxy");
    let addon = addon().await;
    let proxy = setup
        .proxy(
            addon,
            &[
                &format!("--requestheader-client-ca-file={}", front_ca.display()),
                "--requestheader-username-headers=X-Proxy-User",
                "--requestheader-group-headers=X-Proxy-Group",
            ],
        )
        .await;
    let client = setup.client_as(proxy.listen, &any).await;
    // The configured headers count; kube-apiserver's defaults are only removed.
    let (status, _, body) = get_with(
        &client,
        "/metrics",
        &[
            ("X-Proxy-User", "alice"),
            ("X-Proxy-Group", "g"),
            ("X-Remote-User", "mallory"),
        ],
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, "user=alice groups=g|system:authenticated");
    let (status, _, body) = get_with(&client, "/metrics", &[("X-Remote-User", "alice")])
        .await
        .unwrap();
    assert_eq!(status, 401, "{body}");
}

#[tokio::test]
async fn projected_tokens_verify_offline_for_their_audience_only() {
    let setup = Setup::start().await;
    setup.administer().await;
    let addon = addon().await;
    let proxy = setup
        .proxy(
            addon,
            &[
                "--auth-token-audiences=metrics.example",
                "--service-account-tokens=offline",
            ],
        )
        .await;
    let client = setup
        .client(
            proxy.listen,
            &setup.token_for("prometheus", "metrics.example").await,
        )
        .await;
    let (status, body) = call(&client, "GET", "/metrics").await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.starts_with(&format!("user=system:serviceaccount:{NS}:prometheus ")),
        "{body}"
    );
    assert_eq!(token_reviews(&setup), 0, "verified offline, no TokenReview");
    // The access is still the API server's to decide.
    assert!(
        setup
            .server
            .requests()
            .iter()
            .any(|r| r.path.ends_with("/subjectaccessreviews"))
    );

    // Another audience: refused offline, and refused by the review for metrics.example.
    let client = setup
        .client(
            proxy.listen,
            &setup.token_for("prometheus", "other.example").await,
        )
        .await;
    let (status, body) = call(&client, "GET", "/metrics").await;
    assert_eq!(status, 401, "{body}");
    assert!(!body.contains("user="), "{body}");

    let log = proxy.stderr().await;
    let lines = authenticator_lines(&log);
    assert_eq!(lines.len(), 2, "{log}");
    assert!(lines[0].contains("service-account-tokens-offline"), "{log}");
    assert!(lines[0].contains("metrics.example"), "{log}");
}

/// `offline-only`: projected tokens for the audience still pass (verified offline, access by
/// SubjectAccessReview); every other token, which `offline` would send for review, is refused
/// without one.
#[tokio::test]
async fn offline_only_refuses_every_other_token_without_a_review() {
    let setup = Setup::start().await;
    setup.administer().await;
    let addon = addon().await;
    let proxy = setup
        .proxy(
            addon,
            &[
                "--auth-token-audiences=metrics.example",
                "--service-account-tokens=offline-only",
            ],
        )
        .await;
    let projected = setup.token_for("prometheus", "metrics.example").await;
    let client = setup.client(proxy.listen, &projected).await;
    let (status, body) = call(&client, "GET", "/metrics").await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.starts_with(&format!("user=system:serviceaccount:{NS}:prometheus ")),
        "{body}"
    );

    // The account's token for the API server's own audience, and a token that is no JWT.
    let for_the_api_server = setup.token("prometheus").await;
    for token in [for_the_api_server.as_str(), "abcdef.0123456789abcdef"] {
        let client = setup.client(proxy.listen, token).await;
        let (status, body) = call(&client, "GET", "/metrics").await;
        assert_eq!(status, 401, "{body}");
        assert!(!body.contains("user="), "{body}");
    }
    assert_eq!(token_reviews(&setup), 0, "no TokenReview is ever sent");

    let log = proxy.stderr().await;
    assert!(log.contains("TokenReview disabled"), "{log}");
    let lines = authenticator_lines(&log);
    assert_eq!(lines.len(), 1, "{log}");
    assert!(lines[0].contains("service-account-tokens-offline"), "{log}");
}

#[tokio::test]
async fn a_flood_of_unique_invalid_tokens_is_throttled_with_retry_after() {
    let setup = Setup::start().await;
    setup.administer().await;
    let addon = addon().await;
    let proxy = setup
        .proxy(addon, &["--review-rate-limit=1", "--review-burst=2"])
        .await;
    // kube's client waits out a 429's Retry-After and tries again (as client-go does): this
    // one reports each answer as it comes.
    let mut config = setup.config_as(proxy.listen, "{}").await;
    config.default_retry = false;
    let client = kube::Client::try_from(config).unwrap();
    let mut statuses = Vec::new();
    let mut retry_after = None;
    for i in 0..20 {
        let bearer = format!("Bearer invalid-token-{i}");

        let (status, headers, body) =
            get_with(&client, "/metrics", &[("Authorization", bearer.as_str())])
                .await
                .unwrap();
        assert!(status == 401 || status == 429, "{status} {body}");
        if status == 429 {
            assert!(body.contains("TooManyRequests"), "{body}");
            retry_after = headers
                .get("retry-after")
                .map(|v| v.to_str().unwrap().to_owned());
        }
        statuses.push(status);
    }
    // The burst went to the API server; the rest of the flood (a second's worth at most
    // refilled) was answered 429 without a review.
    assert_eq!(&statuses[..2], [401, 401], "{statuses:?}");
    let throttled = statuses.iter().filter(|s| **s == 429).count();
    assert!(throttled > 0, "{statuses:?}");
    let retry_after: u64 = retry_after.unwrap().parse().unwrap();
    assert!(retry_after >= 1, "{retry_after}");
    assert_eq!(
        token_reviews(&setup),
        statuses.len() - throttled,
        "a review for each 401, none for a 429: {statuses:?}"
    );

    let log = proxy.stderr().await;
    let lines = authenticator_lines(&log);
    assert!(
        lines.iter().any(|l| l.contains("token-review")
            && l.contains("review_rate_limit=1")
            && l.contains("review_burst=2")),
        "{log}"
    );
}

/// Each flag error names the flag (and the file, and the OS's reason) and comes before any
/// work: no kubeconfig is read and nothing listens.
#[test]
fn authenticator_flag_errors_name_the_flag_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing-ca.crt");
    let garbage = dir.path().join("garbage.crt");
    std::fs::write(&garbage, "not a certificate\n").unwrap();
    let common = [
        "forward-proxy",
        "--forward=127.0.0.1:1",
        "--secure-listen-address=127.0.0.1:0",
        "--tls-cert-file=/nonexistent/tls.crt",
        "--tls-private-key-file=/nonexistent/tls.key",
        "--http-address=127.0.0.1:0",
        "--kubeconfig=/nonexistent/kubeconfig",
    ];
    let jwt = ["--issuer=i", "--audience=a", "--jwks-file=/j"];
    let review = ["--authentication=token-review"];
    let missing_ca = format!("--client-ca-file={}", missing.display());
    let garbage_ca = format!("--client-ca-file={}", garbage.display());
    let missing_front = format!("--requestheader-client-ca-file={}", missing.display());
    let garbage_front = format!("--requestheader-client-ca-file={}", garbage.display());
    for (mode, extra, code, expected) in [
        (
            &jwt[..],
            &[missing_front.as_str()][..],
            2,
            "--requestheader-client-ca-file is a flag of --authentication=token-review",
        ),
        (
            &jwt[..],
            &["--requestheader-allowed-names=front-proxy-client"][..],
            2,
            "--requestheader-allowed-names is a flag of --authentication=token-review",
        ),
        (
            &jwt[..],
            &["--requestheader-username-headers=X-User"][..],
            2,
            "--requestheader-username-headers is a flag of --authentication=token-review",
        ),
        (
            &jwt[..],
            &["--service-account-tokens=offline"][..],
            2,
            "--service-account-tokens is a flag of --authentication=token-review",
        ),
        (
            &jwt[..],
            &["--review-rate-limit=5"][..],
            2,
            "--review-rate-limit is a flag of --authentication=token-review",
        ),
        (
            &review[..],
            &["--review-burst=5"][..],
            2,
            "--review-rate-limit",
        ),
        (
            &review[..],
            &["--review-rate-limit=0"][..],
            2,
            "--review-rate-limit",
        ),
        (
            &review[..],
            &["--requestheader-allowed-names=front-proxy-client"][..],
            2,
            "--requestheader-allowed-names needs --requestheader-client-ca-file",
        ),
        (
            &review[..],
            &["--requestheader-extra-headers-prefix=X-Extra-"][..],
            2,
            "--requestheader-extra-headers-prefix needs --requestheader-client-ca-file",
        ),
        (
            &review[..],
            &["--requestheader-uid-headers=X-Remote-Uid"][..],
            2,
            "--requestheader-uid-headers needs --requestheader-client-ca-file",
        ),
        (
            &review[..],
            &["--service-account-tokens=offline"][..],
            2,
            "--service-account-tokens=offline needs --auth-token-audiences",
        ),
        (
            &review[..],
            &["--service-account-tokens=offline-only"][..],
            2,
            "--service-account-tokens=offline-only needs --auth-token-audiences",
        ),
        (
            &review[..],
            &[missing_ca.as_str()][..],
            1,
            "--client-ca-file",
        ),
        (
            &review[..],
            &[garbage_ca.as_str()][..],
            1,
            "--client-ca-file",
        ),
        (
            &review[..],
            &[missing_front.as_str()][..],
            1,
            "--requestheader-client-ca-file",
        ),
        (
            &review[..],
            &[garbage_front.as_str()][..],
            1,
            "--requestheader-client-ca-file",
        ),
    ] {
        let out = std::process::Command::new(BIN)
            .args(common)
            .args(mode)
            .args(extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{extra:?}: {stderr}");
        assert!(stderr.contains(expected), "{extra:?}: {stderr}");
        assert!(
            !stderr.contains("/nonexistent/"),
            "no work before the flags are checked: {stderr}"
        );
        if code == 1 {
            // The path, and for a missing file the OS's reason.
            let path = extra[0].split_once('=').unwrap().1;
            assert!(stderr.contains(path), "{stderr}");
            if path == missing.display().to_string() {
                assert!(stderr.contains("No such file or directory"), "{stderr}");
            }
        }
    }

    // The front proxy needs TLS: beside --insecure-listen-address, a usage error.
    let out = std::process::Command::new(BIN)
        .args([
            "forward-proxy",
            "--forward=127.0.0.1:1",
            "--insecure-listen-address=127.0.0.1:0",
            "--authentication=token-review",
            &missing_front,
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--requestheader-client-ca-file")
            && stderr.contains("--insecure-listen-address"),
        "{stderr}"
    );
}
