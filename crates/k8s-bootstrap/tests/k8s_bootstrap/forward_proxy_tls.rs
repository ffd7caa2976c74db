//! `forward_proxy` serving TLS, in process: a rustls client that trusts the CA is answered,
//! TLS 1.0 and 1.1 are refused (OpenSSL's client offers them), the minimum version holds,
//! the certificate files are reloaded when their contents change (not their metadata) and a
//! broken pair leaves the one in use, a plain-HTTP client gets no HTTP back, a stalled
//! handshake is closed, and client certificates are verified against the client CA.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::disallowed_methods,
    reason = "test code reads the wall clock and fails loudly"
)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use k8s_bootstrap::addon_jwt::{Algorithm, Audience, Issuer, Minter, SigningKey};
use k8s_bootstrap::forward_proxy::{
    self, Config, KeySource, Server, ServingError, TlsServing, TlsVersion,
};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, SanType,
};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

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

/// A CA that signs serving and client certificates.
struct Ca {
    key: KeyPair,
    cert: rcgen::Certificate,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.self_signed(&key).unwrap();
        Ca { key, cert }
    }

    /// A serving certificate for localhost and 127.0.0.1 named `cn`: (certificate PEM, key
    /// PEM, certificate DER).
    fn serving(&self, cn: &str) -> (String, String, Vec<u8>) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        params
            .subject_alt_names
            .push(SanType::IpAddress([127, 0, 0, 1].into()));
        params.distinguished_name.push(DnType::CommonName, cn);
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        (cert.pem(), key.serialize_pem(), cert.der().to_vec())
    }

    /// A client certificate for `cn`: (certificate DER, key DER).
    fn client(&self, cn: &str) -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        (
            cert.der().clone(),
            PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
        )
    }
}

/// The files of a serving pair and the verification key, in a temporary directory.
struct Files {
    _dir: tempfile::TempDir,
    cert: PathBuf,
    key: PathBuf,
    ca: PathBuf,
    jwt_key: PathBuf,
}

fn files(ca: &Ca, cert_pem: &str, key_pem: &str) -> Files {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name);
    let (cert, key, ca_file, jwt_key) = (
        path("tls.crt"),
        path("tls.key"),
        path("ca.crt"),
        path("jwt.pem"),
    );
    std::fs::write(&cert, cert_pem).unwrap();
    std::fs::write(&key, key_pem).unwrap();
    std::fs::write(&ca_file, ca.cert.pem()).unwrap();
    let public = SigningKey::from_pkcs8_pem(KEY_A)
        .unwrap()
        .public_key_pem()
        .unwrap();
    std::fs::write(&jwt_key, public).unwrap();
    Files {
        _dir: dir,
        cert,
        key,
        ca: ca_file,
        jwt_key,
    }
}

fn config(upstream: SocketAddr, files: &Files, tls: TlsServing) -> Config {
    Config::new(
        &upstream.to_string(),
        ISSUER,
        KeySource::Pem(files.jwt_key.clone(), Algorithm::EdDsa),
    )
    .audience(AUDIENCE)
    .listen("127.0.0.1:0".parse().unwrap())
    .http_address("127.0.0.1:0".parse().unwrap())
    .tls(tls)
}

/// Serves `server` on a task until the returned sender is used or dropped.
fn serve(server: Server) -> tokio::sync::oneshot::Sender<()> {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(server.serve(async move {
        let _ = stopped.await;
    }));
    stop
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A client that trusts `ca`, speaks `versions`, and presents `identity` if given.
fn client_config(
    ca: &Ca,
    versions: &[&'static rustls::SupportedProtocolVersion],
    identity: Option<(CertificateDer<'static>, PrivateKeyDer<'static>)>,
) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.cert.der().clone()).unwrap();
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots);
    Arc::new(match identity {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => builder.with_client_auth_cert(vec![cert], key).unwrap(),
    })
}

const BOTH: &[&rustls::SupportedProtocolVersion] =
    &[&rustls::version::TLS13, &rustls::version::TLS12];

async fn connect(
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
) -> std::io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let name = ServerName::try_from("localhost").unwrap();
    tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
}

/// The certificate a new handshake is served.
async fn served_certificate(addr: SocketAddr, ca: &Ca) -> Vec<u8> {
    let tls = connect(addr, client_config(ca, BOTH, None)).await.unwrap();
    tls.get_ref().1.peer_certificates().unwrap()[0].to_vec()
}

/// One `GET /echo` as `user` on a new connection: the status line and the body.
async fn get_echo(addr: SocketAddr, config: Arc<rustls::ClientConfig>, user: &str) -> String {
    let mut tls = connect(addr, config).await.unwrap();
    let request = format!(
        "GET /echo HTTP/1.1\r\nHost: localhost\r\nAuthorization: {}\r\nConnection: close\r\n\r\n",
        bearer(user)
    );
    tls.write_all(request.as_bytes()).await.unwrap();
    read_until_closed(&mut tls).await
}

async fn read_until_closed(stream: &mut (impl tokio::io::AsyncRead + Unpin)) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(Duration::from_secs(20), stream.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => break,
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
            Err(_) => panic!("the connection stays open"),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

async fn http_get(addr: SocketAddr, path: &str) -> String {
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    tcp.write_all(request.as_bytes()).await.unwrap();
    read_until_closed(&mut tcp).await
}

/// The value of a metric line that starts with `name`.
async fn metric(http: SocketAddr, name: &str) -> u64 {
    let text = http_get(http, "/metrics").await;
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}

/// `openssl s_client` with `version` (`-tls1`, `-tls1_1`, ...) at security level 0, so that
/// the client itself offers the old versions: whether the handshake succeeded, and what it
/// printed.
async fn openssl(addr: SocketAddr, version: &'static str) -> (bool, String) {
    tokio::task::spawn_blocking(move || {
        let out = std::process::Command::new("openssl")
            .args([
                "s_client",
                "-connect",
                &addr.to_string(),
                version,
                "-cipher",
                "DEFAULT@SECLEVEL=0",
            ])
            .stdin(std::process::Stdio::null())
            .output()
            .expect("openssl is installed");
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

#[tokio::test]
async fn serves_tls_to_a_client_that_trusts_the_ca() {
    let ca = Ca::new("test CA");
    let (cert, key, der) = ca.serving("forward-proxy");
    let files = files(&ca, &cert, &key);
    let tls = TlsServing::new(&files.cert, &files.key);
    let server = Server::bind(config(addon().await, &files, tls))
        .await
        .unwrap();
    let (proxy, http) = (server.local_addr(), server.http_addr());
    let _stop = serve(server);

    let answer = get_echo(proxy, client_config(&ca, BOTH, None), "jane").await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("user=jane"), "{answer}");
    assert_eq!(served_certificate(proxy, &ca).await, der);
    // A client that trusts another CA does not get through.
    let other = Ca::new("another CA");
    assert!(
        connect(proxy, client_config(&other, BOTH, None))
            .await
            .is_err()
    );
    assert_eq!(
        metric(
            http,
            "k8s_bootstrap_forward_proxy_tls_handshake_errors_total"
        )
        .await,
        1
    );
    let expiry = metric(
        http,
        "k8s_bootstrap_forward_proxy_serving_certificate_expiry_timestamp_seconds",
    )
    .await;
    assert!(
        expiry > 4_000_000_000,
        "rcgen's default notAfter is 4096: {expiry}"
    );
}

#[tokio::test]
async fn tls_1_2_and_1_3_are_accepted_1_0_and_1_1_refused() {
    let ca = Ca::new("test CA");
    let (cert, key, _) = ca.serving("forward-proxy");
    let files = files(&ca, &cert, &key);
    let tls = TlsServing::new(&files.cert, &files.key);
    let server = Server::bind(config(addon().await, &files, tls))
        .await
        .unwrap();
    let proxy = server.local_addr();
    let _stop = serve(server);

    for (version, only) in [
        (rustls::ProtocolVersion::TLSv1_2, &rustls::version::TLS12),
        (rustls::ProtocolVersion::TLSv1_3, &rustls::version::TLS13),
    ] {
        let stream = connect(proxy, client_config(&ca, &[only], None))
            .await
            .unwrap();
        assert_eq!(stream.get_ref().1.protocol_version(), Some(version));
    }
    for (flag, name) in [("-tls1_2", "TLSv1.2"), ("-tls1_3", "TLSv1.3")] {
        let (ok, out) = openssl(proxy, flag).await;
        assert!(ok && out.contains(name), "{flag}: {out}");
    }
    for flag in ["-tls1", "-tls1_1"] {
        let (ok, out) = openssl(proxy, flag).await;
        // The server's refusal, not the client's: an alert came back (protocol_version or
        // handshake_failure), and no cipher was agreed on.
        assert!(!ok && out.contains("SSL alert number"), "{flag}: {out}");
        assert!(out.contains("Cipher is (NONE)"), "{flag}: {out}");
    }
}

#[tokio::test]
async fn min_version_tls_1_3_refuses_tls_1_2() {
    let ca = Ca::new("test CA");
    let (cert, key, _) = ca.serving("forward-proxy");
    let files = files(&ca, &cert, &key);
    let tls = TlsServing::new(&files.cert, &files.key).min_version(TlsVersion::Tls13);
    let server = Server::bind(config(addon().await, &files, tls))
        .await
        .unwrap();
    let proxy = server.local_addr();
    let _stop = serve(server);

    assert!(
        connect(proxy, client_config(&ca, &[&rustls::version::TLS12], None))
            .await
            .is_err()
    );
    let (ok, out) = openssl(proxy, "-tls1_2").await;
    assert!(!ok && out.contains("SSL alert number"), "{out}");
    let stream = connect(proxy, client_config(&ca, BOTH, None))
        .await
        .unwrap();
    assert_eq!(
        stream.get_ref().1.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_3)
    );
}

/// Rewrites `path` in place (same inode) and gives it back its modification time, as
/// `touch -r` would.
fn rewrite_keeping_mtime(path: &Path, contents: &str) {
    use std::io::Write as _;
    let before = std::fs::metadata(path).unwrap().modified().unwrap();
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .unwrap();
    file.write_all(contents.as_bytes()).unwrap();
    file.set_modified(before).unwrap();
    drop(file);
    assert_eq!(std::fs::metadata(path).unwrap().modified().unwrap(), before);
}

#[tokio::test]
async fn rotated_files_are_served_to_new_handshakes_and_a_broken_pair_is_not() {
    let ca = Ca::new("test CA");
    let (cert_a, key_a, der_a) = ca.serving("first");
    let (cert_b, key_b, der_b) = ca.serving("second");
    let files = files(&ca, &cert_a, &key_a);
    let tls = TlsServing::new(&files.cert, &files.key);
    let server =
        Server::bind(config(addon().await, &files, tls).reload_interval(Duration::from_millis(20)))
            .await
            .unwrap();
    let (proxy, http) = (server.local_addr(), server.http_addr());
    let _stop = serve(server);
    assert_eq!(served_certificate(proxy, &ca).await, der_a);
    let open = connect(proxy, client_config(&ca, BOTH, None))
        .await
        .unwrap();

    // Same paths, new contents, the old modification times.
    rewrite_keeping_mtime(&files.key, &key_b);
    rewrite_keeping_mtime(&files.cert, &cert_b);
    let started = std::time::Instant::now();
    while served_certificate(proxy, &ca).await != der_b {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the new certificate is never served"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The connection opened before keeps its session, and still serves.
    let mut open = open;
    open.write_all(
        format!(
            "GET /echo HTTP/1.1\r\nHost: localhost\r\nAuthorization: {}\r\nConnection: close\r\n\r\n",
            bearer("jane")
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let answer = read_until_closed(&mut open).await;
    assert!(answer.ends_with("user=jane"), "{answer}");
    assert_eq!(
        metric(
            http,
            "k8s_bootstrap_forward_proxy_serving_certificate_reloads_total"
        )
        .await,
        1
    );

    // A key that is not the certificate's: the pair in use stays, /readyz says why.
    rewrite_keeping_mtime(&files.key, &key_a);
    let started = std::time::Instant::now();
    let ready = loop {
        let ready = http_get(http, "/readyz").await;
        if ready.contains("cannot be loaded") {
            break ready;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the broken pair is never noticed: {ready}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(ready.starts_with("HTTP/1.1 200"), "{ready}");
    assert!(ready.contains("does not match the certificate"), "{ready}");
    assert!(!ready.contains("PRIVATE KEY"), "{ready}");
    assert_eq!(served_certificate(proxy, &ca).await, der_b);
    assert_eq!(
        metric(
            http,
            "k8s_bootstrap_forward_proxy_serving_certificate_reload_errors_total"
        )
        .await,
        1
    );
    let answer = get_echo(proxy, client_config(&ca, BOTH, None), "joe").await;
    assert!(answer.ends_with("user=joe"), "{answer}");

    // Mended: the matching key again, and /readyz is plain "ok".
    rewrite_keeping_mtime(&files.key, &key_b);
    let started = std::time::Instant::now();
    while !http_get(http, "/readyz").await.ends_with("\r\n\r\nok") {
        assert!(started.elapsed() < Duration::from_secs(20), "never mended");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_plain_http_client_gets_no_http_and_a_stalled_handshake_is_closed() {
    let ca = Ca::new("test CA");
    let (cert, key, _) = ca.serving("forward-proxy");
    let files = files(&ca, &cert, &key);
    let tls =
        TlsServing::new(&files.cert, &files.key).handshake_timeout(Duration::from_millis(300));
    let server = Server::bind(config(addon().await, &files, tls))
        .await
        .unwrap();
    let (proxy, http) = (server.local_addr(), server.http_addr());
    let _stop = serve(server);

    let answer = http_get(proxy, "/echo").await;
    assert!(!answer.contains("HTTP/"), "{answer:?}");
    assert!(!answer.contains("user="), "{answer:?}");

    // A client that sends nothing is closed after the handshake timeout.
    let mut silent = tokio::net::TcpStream::connect(proxy).await.unwrap();
    let started = std::time::Instant::now();
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(Duration::from_secs(20), silent.read(&mut buf))
        .await
        .expect("closed before 20 s");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    assert!(started.elapsed() >= Duration::from_millis(250));
    assert_eq!(
        metric(
            http,
            "k8s_bootstrap_forward_proxy_tls_handshake_errors_total"
        )
        .await,
        2
    );
}

#[tokio::test]
async fn client_certificates_are_verified_against_the_client_ca() {
    let ca = Ca::new("test CA");
    let (cert, key, _) = ca.serving("forward-proxy");
    let files = files(&ca, &cert, &key);
    let tls = TlsServing::new(&files.cert, &files.key).client_ca_file(&files.ca);
    let server = Server::bind(config(addon().await, &files, tls))
        .await
        .unwrap();
    let proxy = server.local_addr();
    let _stop = serve(server);

    // Without a certificate: served (the token decides).
    let answer = get_echo(proxy, client_config(&ca, BOTH, None), "jane").await;
    assert!(answer.ends_with("user=jane"), "{answer}");
    // With one the client CA signed: served.
    let answer = get_echo(
        proxy,
        client_config(&ca, BOTH, Some(ca.client("system:node:a"))),
        "joe",
    )
    .await;
    assert!(answer.ends_with("user=joe"), "{answer}");
    // With one another CA signed: refused in the handshake (TLS 1.2, where the client learns
    // of it before it sends a request).
    let other = Ca::new("another CA");
    let refused = connect(
        proxy,
        client_config(
            &ca,
            &[&rustls::version::TLS12],
            Some(other.client("mallory")),
        ),
    )
    .await;
    assert!(refused.is_err());
}

#[tokio::test]
async fn start_up_errors_name_the_file() {
    let ca = Ca::new("test CA");
    let (cert, key, _) = ca.serving("forward-proxy");
    let (_, other_key, _) = ca.serving("other");
    let files = files(&ca, &cert, &key);
    let upstream: SocketAddr = "127.0.0.1:9".parse().unwrap();

    let missing = files.cert.with_file_name("missing.crt");
    let err = Server::bind(config(
        upstream,
        &files,
        TlsServing::new(&missing, &files.key),
    ))
    .await
    .unwrap_err();
    assert!(
        matches!(&err, forward_proxy::Error::Serving(ServingError::ReadTlsFile { file: forward_proxy::TlsFile::Certificate, path, source })
            if *path == missing && source.kind() == std::io::ErrorKind::NotFound),
        "{err:?}"
    );
    assert!(err.to_string().contains("missing.crt"), "{err}");

    // The key file holding the certificate.
    let err = Server::bind(config(
        upstream,
        &files,
        TlsServing::new(&files.cert, &files.cert),
    ))
    .await
    .unwrap_err();
    assert!(
        matches!(
            &err,
            forward_proxy::Error::Serving(ServingError::TlsFileContents {
                file: forward_proxy::TlsFile::PrivateKey,
                ..
            })
        ),
        "{err:?}"
    );

    std::fs::write(&files.key, other_key).unwrap();
    let err = Server::bind(config(
        upstream,
        &files,
        TlsServing::new(&files.cert, &files.key),
    ))
    .await
    .unwrap_err();
    assert!(
        matches!(
            &err,
            forward_proxy::Error::Serving(ServingError::KeyMismatch { .. })
        ),
        "{err:?}"
    );
    assert!(!format!("{err:?}").contains("PRIVATE KEY"));

    std::fs::write(&files.key, key).unwrap();
    let tls = TlsServing::new(&files.cert, &files.key)
        .cipher_suites(vec!["TLS_RSA_WITH_AES_128_CBC_SHA".to_owned()]);
    let err = Server::bind(config(upstream, &files, tls))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, forward_proxy::Error::Serving(ServingError::CipherSuite { name }) if name == "TLS_RSA_WITH_AES_128_CBC_SHA"),
        "{err:?}"
    );
    // The file checks come before the port is bound, and the pair that loads binds.
    let tls = TlsServing::new(&files.cert, &files.key)
        .cipher_suites(vec!["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256".to_owned()]);
    Server::bind(config(upstream, &files, tls)).await.unwrap();
}
