//! `k8s-bootstrap forward-proxy` serving TLS as a process, driven by `openssl s_client`: a
//! request over TLS 1.2 and 1.3 reaches the add-on, TLS 1.1 is refused, `--tls-min-version
//! VersionTLS13` refuses TLS 1.2; and without a certificate the command starts only with
//! `--insecure-listen-address`, naming the flags when it refuses.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::disallowed_methods,
    reason = "test code reads the wall clock and fails loudly"
)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use k8s_bootstrap::addon_jwt::{Audience, Issuer, Minter, SigningKey};
use tokio::process::Command;

use crate::support::spawn_proxy;

const BIN: &str = env!("CARGO_BIN_EXE_k8s-bootstrap");
const KEY_A: &str = "-----BEGIN PRIVATE KEY-----\n\
MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
-----END PRIVATE KEY-----\n";
const ISSUER: &str = "https://kubernetes.default.svc";
const AUDIENCE: &str = "kube-system/dashboard";

fn bearer(sub: &str) -> String {
    let key = SigningKey::from_pkcs8_pem(KEY_A).unwrap();
    let token = Minter::new(key, Issuer::new(ISSUER))
        .mint(sub, &Audience::new(AUDIENCE), SystemTime::now())
        .unwrap();
    format!("Bearer {}", token.expose_secret())
}

/// The add-on: answers with the user it was told.
async fn addon() -> SocketAddr {
    async fn echo(headers: axum::http::HeaderMap) -> String {
        let user = headers
            .get("x-authenticated-user")
            .map(|v| v.to_str().unwrap().to_owned());
        format!("user={}", user.unwrap_or_default())
    }
    let app = axum::Router::new().route("/echo", axum::routing::get(echo));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// A directory with a self-signed serving pair for 127.0.0.1 made by OpenSSL (`tls.crt`,
/// `tls.key`) and the token verification key (`key.pem`).
struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn new() -> Files {
        let dir = tempfile::tempdir().unwrap();
        let status = std::process::Command::new("openssl")
            .current_dir(dir.path())
            .args([
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-keyout",
                "tls.key",
                "-out",
                "tls.crt",
                "-days",
                "2",
                "-subj",
                "/CN=forward-proxy",
                "-addext",
                "subjectAltName=IP:127.0.0.1,DNS:localhost",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("openssl is installed");
        assert!(status.success());
        let public = SigningKey::from_pkcs8_pem(KEY_A)
            .unwrap()
            .public_key_pem()
            .unwrap();
        std::fs::write(dir.path().join("key.pem"), public).unwrap();
        Files { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// The proxy's flags in front of `upstream`, and `extra`.
fn proxy_args(upstream: SocketAddr, files: &Files, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "forward-proxy".to_owned(),
        format!("--forward={upstream}"),
        format!("--issuer={ISSUER}"),
        format!("--audience={AUDIENCE}"),
        format!("--public-key-file={}", files.path("key.pem").display()),
        "--algorithm=EdDSA".to_owned(),
        "--http-address=127.0.0.1:0".to_owned(),
    ]
    .into();
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    args
}

fn tls_flags(files: &Files) -> Vec<String> {
    vec![
        "--secure-listen-address=127.0.0.1:0".to_owned(),
        format!("--tls-cert-file={}", files.path("tls.crt").display()),
        format!("--tls-private-key-file={}", files.path("tls.key").display()),
    ]
}

/// `openssl s_client` at `addr` with `version` (`-tls1_1`, `-tls1_2`, ...; at security level
/// 0, so the client itself offers the old versions), trusting `ca`, sending `request`: whether
/// it succeeded, and everything it printed.
async fn s_client(
    addr: SocketAddr,
    version: &'static str,
    ca: &Path,
    request: String,
) -> (bool, String) {
    let ca = ca.to_owned();
    tokio::task::spawn_blocking(move || {
        use std::io::Write as _;
        let mut child = std::process::Command::new("openssl")
            .args([
                "s_client",
                "-connect",
                &addr.to_string(),
                version,
                "-cipher",
                "DEFAULT@SECLEVEL=0",
                "-CAfile",
                &ca.display().to_string(),
                "-verify_return_error",
                "-ign_eof",
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("openssl is installed");
        let mut stdin = child.stdin.take().unwrap();
        // A refused handshake may close the pipe before the request is written.
        let _ = stdin.write_all(request.as_bytes());
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    })
    .await
    .unwrap()
}

fn get_echo(user: &str) -> String {
    format!(
        "GET /echo HTTP/1.1\r\nHost: localhost\r\nAuthorization: {}\r\nConnection: close\r\n\r\n",
        bearer(user)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_tls_1_2_and_1_3_and_refuses_1_1() {
    let files = Files::new();
    let upstream = addon().await;
    let mut command = Command::new(BIN);
    command.args(proxy_args(upstream, &files, &[]));
    command.args(tls_flags(&files));
    let proxy = spawn_proxy(command).await;
    let ca = files.path("tls.crt");

    for (flag, name, user) in [
        ("-tls1_2", "TLSv1.2", "jane"),
        ("-tls1_3", "TLSv1.3", "joe"),
    ] {
        let (ok, out) = s_client(proxy.listen, flag, &ca, get_echo(user)).await;
        assert!(ok, "{flag}: {out}");
        assert!(out.contains(name), "{flag}: {out}");
        assert!(out.contains("Verify return code: 0 (ok)"), "{flag}: {out}");
        assert!(out.contains("HTTP/1.1 200 OK"), "{flag}: {out}");
        assert!(out.contains(&format!("user={user}")), "{flag}: {out}");
    }
    let (ok, out) = s_client(proxy.listen, "-tls1_1", &ca, get_echo("jane")).await;
    // The server's refusal: an alert came back, no cipher was agreed on, nothing was served.
    assert!(!ok && out.contains("SSL alert number"), "{out}");
    assert!(
        out.contains("Cipher is (NONE)") && !out.contains("HTTP/1.1"),
        "{out}"
    );

    let log = proxy.stderr().await;
    assert!(log.contains("serving certificate loaded"), "{log}");
    assert!(log.contains("subject=\"CN=forward-proxy\""), "{log}");
    assert!(
        log.contains("serving=\"TLS\"") || log.contains("serving=TLS"),
        "{log}"
    );
    assert!(!log.contains("PRIVATE KEY"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_min_version_13_refuses_tls_1_2() {
    let files = Files::new();
    let upstream = addon().await;
    let mut command = Command::new(BIN);
    command.args(proxy_args(
        upstream,
        &files,
        &["--tls-min-version=VersionTLS13"],
    ));
    command.args(tls_flags(&files));
    let proxy = spawn_proxy(command).await;
    let ca = files.path("tls.crt");

    let (ok, out) = s_client(proxy.listen, "-tls1_2", &ca, get_echo("jane")).await;
    assert!(!ok && out.contains("SSL alert number"), "{out}");
    assert!(!out.contains("user=jane"), "{out}");
    let (ok, out) = s_client(proxy.listen, "-tls1_3", &ca, get_echo("jane")).await;
    assert!(ok && out.contains("user=jane"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_only_with_the_insecure_flag() {
    let files = Files::new();
    let upstream = addon().await;
    // Neither the TLS files nor the insecure flag (with the TLS address given or not).
    for extra in [&[][..], &["--secure-listen-address=127.0.0.1:0"][..]] {
        let output = Command::new(BIN)
            .args(proxy_args(upstream, &files, extra))
            .output()
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        for flag in [
            "--tls-cert-file",
            "--tls-private-key-file",
            "--insecure-listen-address",
        ] {
            assert!(stderr.contains(flag), "{flag}: {stderr}");
        }
    }
    // The insecure flag beside a TLS flag is a usage error too.
    let cert = format!("--tls-cert-file={}", files.path("tls.crt").display());
    let output = Command::new(BIN)
        .args(proxy_args(
            upstream,
            &files,
            &["--insecure-listen-address=127.0.0.1:0", &cert],
        ))
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--insecure-listen-address"), "{stderr}");

    // With it: plain HTTP, said so in the log.
    let mut command = Command::new(BIN);
    command.args(proxy_args(
        upstream,
        &files,
        &["--insecure-listen-address=127.0.0.1:0"],
    ));
    let proxy = spawn_proxy(command).await;
    let mut tcp = tokio::net::TcpStream::connect(proxy.listen).await.unwrap();
    let answer = {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        tcp.write_all(get_echo("jane").as_bytes()).await.unwrap();
        let mut out = String::new();
        tcp.read_to_string(&mut out).await.unwrap();
        out
    };
    assert!(
        answer.starts_with("HTTP/1.1 200") && answer.ends_with("user=jane"),
        "{answer}"
    );
    let log = proxy.stderr().await;
    assert!(log.contains("plain HTTP"), "{log}");
}

#[tokio::test]
async fn a_certificate_without_its_key_and_unreadable_files_name_the_flags() {
    let files = Files::new();
    let upstream: SocketAddr = "127.0.0.1:1".parse().unwrap();
    let cert = format!("--tls-cert-file={}", files.path("tls.crt").display());
    let key = format!("--tls-private-key-file={}", files.path("tls.key").display());
    for half in [&cert, &key] {
        let output = Command::new(BIN)
            .args(proxy_args(upstream, &files, &[half]))
            .output()
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("--tls-cert-file") && stderr.contains("--tls-private-key-file"),
            "{stderr}"
        );
    }

    let missing = files.path("missing.crt");
    let missing_cert = format!("--tls-cert-file={}", missing.display());
    let output = Command::new(BIN)
        .args(proxy_args(
            upstream,
            &files,
            &["--secure-listen-address=127.0.0.1:0", &missing_cert, &key],
        ))
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.lines().last().unwrap_or_default(),
        format!(
            "error: forward-proxy: --tls-cert-file {}: No such file or directory (os error 2)",
            missing.display()
        )
    );

    // A key that is not the certificate's names both files.
    let other = Files::new();
    let other_key = format!("--tls-private-key-file={}", other.path("tls.key").display());
    let output = Command::new(BIN)
        .args(proxy_args(
            upstream,
            &files,
            &["--secure-listen-address=127.0.0.1:0", &cert, &other_key],
        ))
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains("--tls-private-key-file") && last.contains("--tls-cert-file"),
        "{stderr}"
    );
    assert!(!stderr.contains("PRIVATE KEY"), "{stderr}");

    // An unknown or unsupported suite names the flag.
    let output = Command::new(BIN)
        .args(proxy_args(
            upstream,
            &files,
            &[
                "--secure-listen-address=127.0.0.1:0",
                &cert,
                &key,
                "--tls-cipher-suites=TLS_RSA_WITH_3DES_EDE_CBC_SHA",
            ],
        ))
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("--tls-cipher-suites") && stderr.contains("TLS_RSA_WITH_3DES_EDE_CBC_SHA"),
        "{stderr}"
    );
}
