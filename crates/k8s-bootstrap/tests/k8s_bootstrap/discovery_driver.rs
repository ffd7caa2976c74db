//! The discovery driver against the loopback API server (a test double) and a small HTTPS file
//! server: token discovery with pins, every failure it must catch, file and HTTPS-URL discovery,
//! and the kubeconfig it writes.
#![cfg(feature = "discovery")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test helpers fail loudly"
)]

use std::sync::Arc;
use std::time::Duration;

use k8s_bootstrap::bootstrap_token::BootstrapToken;
use k8s_bootstrap::clusterinfo::{
    self, CaBundle, ClusterInfo, FileDiscoveryConfig, PinSet, Refresh, TokenDiscoveryConfig,
};
use k8s_bootstrap::discovery::{self, Discoverer, Error, Source};
use k8s_bootstrap::files::Existing;
use loopback_apiserver::LoopbackApiServer;
use serde_json::json;

const TOKEN: &str = "abcdef.0123456789abcdef";

fn token() -> BootstrapToken {
    TOKEN.parse().unwrap()
}

fn token_secret(id: &str, secret: &str) -> serde_json::Value {
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": format!("bootstrap-token-{id}"), "namespace": "kube-system"},
        "type": "bootstrap.kubernetes.io/token",
        "stringData": {
            "token-id": id,
            "token-secret": secret,
            "expiration": "2999-01-01T00:00:00Z",
            "usage-bootstrap-authentication": "true",
            "usage-bootstrap-signing": "true",
        },
    })
}

async fn server_with_token() -> LoopbackApiServer {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    server
        .insert(
            "kube-system",
            "secrets",
            token_secret("abcdef", "0123456789abcdef"),
        )
        .unwrap();
    server
}

fn pins_for(ca_pem: &str) -> PinSet {
    let bundle = CaBundle::from_pem(ca_pem.as_bytes()).unwrap();
    let mut pins = PinSet::new();
    pins.allow(&bundle.first_pin().unwrap().to_string())
        .unwrap();
    pins
}

fn endpoint(server: &LoopbackApiServer) -> String {
    server.url().trim_start_matches("https://").to_owned()
}

fn token_config(endpoint: &str, token: BootstrapToken, pins: PinSet) -> TokenDiscoveryConfig {
    TokenDiscoveryConfig::new(endpoint, token)
        .unwrap()
        .with_pins(pins)
        .with_retry_interval(Duration::from_millis(100))
        .with_timeout(Duration::from_secs(2))
}

fn cluster_info_gets(server: &LoopbackApiServer) -> Vec<Option<String>> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/configmaps/cluster-info"))
        .map(|r| r.user)
        .collect()
}

#[tokio::test]
async fn token_discovery_with_a_pin_finds_the_cluster_in_two_fetches() {
    let server = server_with_token().await;
    let config = token_config(&endpoint(&server), token(), pins_for(server.ca_pem()));
    let found = discovery::discover(Source::Token(config)).await.unwrap();
    assert_eq!(found.cluster_info().server(), server.url());
    assert_eq!(found.endpoint(), Some(endpoint(&server).as_str()));
    // Two GETs, both anonymous (no credentials on either fetch).
    let gets = cluster_info_gets(&server);
    assert_eq!(gets.len(), 2, "{gets:?}");
    assert!(gets.iter().all(Option::is_none), "{gets:?}");
    // What was verified is exactly what the server holds.
    let cm = server
        .object("kube-public", "configmaps", "cluster-info")
        .unwrap();
    assert_eq!(
        found.kubeconfig(),
        cm["data"]["kubeconfig"].as_str(),
        "the verified kubeconfig is cluster-info's, byte for byte"
    );
}

#[tokio::test]
async fn a_wrong_pin_is_refused_without_retrying() {
    let server = server_with_token().await;
    let mut pins = PinSet::new();
    pins.allow("sha256:0000000000000000000000000000000000000000000000000000000000000000")
        .unwrap();
    let config = token_config(&endpoint(&server), token(), pins);
    let err = discovery::discover(Source::Token(config))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::Failed(_)), "{err:?}");
    assert!(text.contains("none of the public keys"), "{text}");
    assert_eq!(
        cluster_info_gets(&server).len(),
        1,
        "no second fetch after a pin mismatch"
    );
}

#[tokio::test]
async fn a_wrong_token_secret_fails_the_signature_check() {
    let server = server_with_token().await;
    let wrong: BootstrapToken = "abcdef.ffffffffffffffff".parse().unwrap();
    let config = token_config(&endpoint(&server), wrong, pins_for(server.ca_pem()));
    let err = discovery::discover(Source::Token(config))
        .await
        .unwrap_err();
    let text = format!("{err} {err:?}");
    assert!(text.contains("failed to verify JWS signature"), "{text}");
    assert!(
        !text.contains("ffffffffffffffff"),
        "the token secret leaked: {text}"
    );
}

#[tokio::test]
async fn an_unknown_token_id_polls_until_the_timeout() {
    let server = server_with_token().await;
    let other: BootstrapToken = "zzzzzz.0123456789abcdef".parse().unwrap();
    let config = token_config(&endpoint(&server), other, pins_for(server.ca_pem()))
        .with_timeout(Duration::from_millis(700));
    let err = discovery::discover(Source::Token(config))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("couldn't validate the identity of the API Server"),
        "{text}"
    );
    assert!(text.contains("\"zzzzzz\""), "{text}");
    assert!(cluster_info_gets(&server).len() >= 3, "it polled");
}

#[tokio::test]
async fn a_token_created_while_polling_is_found() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let config = token_config(&endpoint(&server), token(), pins_for(server.ca_pem()))
        .with_timeout(Duration::from_secs(10));
    let join = tokio::spawn(discovery::discover(Source::Token(config)));
    tokio::time::sleep(Duration::from_millis(350)).await;
    server
        .insert(
            "kube-system",
            "secrets",
            token_secret("abcdef", "0123456789abcdef"),
        )
        .unwrap();
    let found = join.await.unwrap().unwrap();
    assert_eq!(found.cluster_info().server(), server.url());
}

#[tokio::test]
async fn nothing_listening_reports_the_transport_error_at_the_timeout() {
    // A port that was free a moment ago.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let ca = LoopbackApiServer::builder().start().await.unwrap();
    let config = token_config(&format!("127.0.0.1:{port}"), token(), pins_for(ca.ca_pem()))
        .with_timeout(Duration::from_millis(500));
    let err = discovery::discover(Source::Token(config))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("failed to request the cluster-info ConfigMap"),
        "{text}"
    );
    assert!(text.to_lowercase().contains("connect"), "{text}");
}

#[tokio::test]
async fn no_pins_without_the_opt_in_is_a_configuration_error_before_any_request() {
    let server = server_with_token().await;
    let config = token_config(&endpoint(&server), token(), PinSet::new());
    let err = discovery::discover(Source::Token(config))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Config(_)), "{err:?}");
    assert!(cluster_info_gets(&server).is_empty());
}

#[tokio::test]
async fn unsafe_skip_ca_verification_trusts_the_signature_alone() {
    let server = server_with_token().await;
    let config =
        token_config(&endpoint(&server), token(), PinSet::new()).dangerous_skip_ca_verification();
    let found = discovery::discover(Source::Token(config)).await.unwrap();
    assert_eq!(found.cluster_info().server(), server.url());
    assert_eq!(
        cluster_info_gets(&server).len(),
        1,
        "one insecure fetch, nothing to pin"
    );
}

#[tokio::test]
async fn file_discovery_refreshes_from_cluster_info_trusting_only_the_files_ca() {
    let server = server_with_token().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("discovery.conf");
    let ca = CaBundle::from_pem(server.ca_pem().as_bytes()).unwrap();
    let yaml = ClusterInfo::new(&server.url(), ca)
        .unwrap()
        .to_kubeconfig_yaml();
    std::fs::write(&path, &yaml).unwrap();
    let config = FileDiscoveryConfig::new()
        .with_refresh(Refresh::FromClusterInfo)
        .with_timeout(Duration::from_secs(2));
    let found = discovery::discover(Source::File {
        kubeconfig: path.clone(),
        config,
    })
    .await
    .unwrap();
    assert_eq!(found.cluster_info().server(), server.url());
    assert_eq!(cluster_info_gets(&server).len(), 1);

    // The same file naming another CA: the refresh cannot verify the server.
    let other = LoopbackApiServer::builder().start().await.unwrap();
    let foreign = CaBundle::from_pem(other.ca_pem().as_bytes()).unwrap();
    let yaml = ClusterInfo::new(&server.url(), foreign)
        .unwrap()
        .to_kubeconfig_yaml();
    std::fs::write(&path, &yaml).unwrap();
    let config = FileDiscoveryConfig::new()
        .with_refresh(Refresh::FromClusterInfo)
        .with_retry_interval(Duration::from_millis(100))
        .with_timeout(Duration::from_millis(500));
    let err = discovery::discover(Source::File {
        kubeconfig: path,
        config,
    })
    .await
    .unwrap_err();
    let text = err.to_string();
    assert!(text.to_lowercase().contains("certificate"), "{text}");
}

#[tokio::test]
async fn file_discovery_refuses_a_missing_or_oversized_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.conf");
    let err = discovery::discover(Source::File {
        kubeconfig: missing,
        config: FileDiscoveryConfig::new(),
    })
    .await
    .unwrap_err();
    assert!(matches!(err, Error::ReadFile { .. }), "{err:?}");

    let big = dir.path().join("big.conf");
    std::fs::write(&big, vec![b'#'; (1 << 20) + 1]).unwrap();
    let err = discovery::discover(Source::File {
        kubeconfig: big,
        config: FileDiscoveryConfig::new(),
    })
    .await
    .unwrap_err();
    assert!(matches!(err, Error::FileTooLarge { .. }), "{err:?}");
}

/// An HTTPS server (rustls, hyper) that answers every GET with `body`, under the loopback
/// server's CA: the stand-in for a web server that publishes a discovery kubeconfig.
async fn https_file_server(body: String, status: u16) -> (String, String) {
    use hyper::service::service_fn;
    use hyper_util::rt::{TokioExecutor, TokioIo};
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&key, &ca, &ca_key)
        .unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![cert.der().clone()],
        rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
    )
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}/discovery.yaml", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let body = body.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = service_fn(move |_req| {
                    let body = body.clone();
                    async move {
                        http::Response::builder()
                            .status(status)
                            .body(http_body_util::Full::new(bytes::Bytes::from(body)))
                    }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (url, ca.pem())
}

#[tokio::test]
async fn https_url_discovery_verifies_the_publishing_server() {
    let server = server_with_token().await;
    let ca = CaBundle::from_pem(server.ca_pem().as_bytes()).unwrap();
    let yaml = ClusterInfo::new(&server.url(), ca)
        .unwrap()
        .to_kubeconfig_yaml();
    let (url, web_ca) = https_file_server(yaml, 200).await;
    let config = || {
        FileDiscoveryConfig::new()
            .with_retry_interval(Duration::from_millis(100))
            .with_timeout(Duration::from_millis(600))
    };

    // Trusted through the given roots: found.
    let roots = CaBundle::from_pem(web_ca.as_bytes()).unwrap();
    let found = Discoverer::new()
        .with_https_roots(roots)
        .discover(Source::Https {
            url: url.clone(),
            config: config(),
        })
        .await
        .unwrap();
    assert_eq!(found.cluster_info().server(), server.url());

    // The system roots do not know the publishing server's CA.
    let err = discovery::discover(Source::Https {
        url: url.clone(),
        config: config(),
    })
    .await;
    match err {
        Err(e) => {
            let text = e.to_string();
            assert!(text.to_lowercase().contains("certificate"), "{text}");
        }
        Ok(found) => panic!("an unknown CA was trusted: {found:?}"),
    }

    // Plain http is refused before any request.
    let err = discovery::discover(Source::Https {
        url: url.replace("https://", "http://"),
        config: config(),
    })
    .await
    .unwrap_err();
    assert!(
        matches!(err, Error::Config(clusterinfo::Error::NotHttps)),
        "{err:?}"
    );
}

#[tokio::test]
async fn https_url_discovery_reports_a_non_200_status() {
    let (url, web_ca) = https_file_server("gone".to_owned(), 404).await;
    let err = Discoverer::new()
        .with_https_roots(CaBundle::from_pem(web_ca.as_bytes()).unwrap())
        .discover(Source::Https {
            url,
            config: FileDiscoveryConfig::new(),
        })
        .await
        .unwrap_err();
    assert!(err.to_string().contains("received status 404"), "{err}");
}

#[tokio::test]
async fn a_slow_server_is_bounded_by_the_request_timeout() {
    // Accepts TCP and never answers the TLS handshake.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let _hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((tcp, _)) = listener.accept().await {
            held.push(tcp);
        }
    });
    let ca = LoopbackApiServer::builder().start().await.unwrap();
    let config = token_config(&addr.to_string(), token(), pins_for(ca.ca_pem()))
        .with_timeout(Duration::from_millis(900));
    let started = tokio::time::Instant::now();
    let err = Discoverer::new()
        .with_request_timeout(Duration::from_millis(200))
        .discover(Source::Token(config))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("request timed out after 200ms"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// A plain-HTTP server on the endpoint: the error says the server did not answer in TLS, not
/// rustls's "corrupt message of type InvalidContentType" alone.
#[tokio::test]
async fn a_plain_http_server_is_named_as_such() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let plain = tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                let _ = stream.read(&mut buf).await;
                let _ = stream
                    .write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    .await;
            });
        }
    });
    let config = TokenDiscoveryConfig::new(&addr.to_string(), token())
        .unwrap()
        .dangerous_skip_ca_verification()
        .with_retry_interval(Duration::from_millis(100))
        .with_timeout(Duration::from_millis(500));
    let err = discovery::discover(Source::Token(config))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("the server did not answer in TLS: is this a plain-HTTP port?"),
        "{text}"
    );
    plain.abort();
}

/// The one call: discovery, then the kubelet's bootstrap kubeconfig on disk, 0600; nothing is
/// written when discovery fails.
#[tokio::test]
async fn token_to_kubeconfig_writes_the_tls_bootstrap_kubeconfig() {
    let server = server_with_token().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bootstrap-kubelet.conf");
    let config = token_config(&endpoint(&server), token(), pins_for(server.ca_pem()));
    let found = discovery::token_to_kubeconfig(config, &path).await.unwrap();
    let written = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        written,
        found
            .cluster_info()
            .tls_bootstrap_kubeconfig(&token())
            .expose_secret()
    );
    assert!(
        written.contains(&format!("server: {}", server.url())),
        "{written}"
    );
    assert!(written.contains(&format!("token: {TOKEN}")), "{written}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // A wrong token secret: discovery fails and nothing is written.
    let other = dir.path().join("other.conf");
    let config = token_config(
        &endpoint(&server),
        "abcdef.ffffffffffffffff".parse().unwrap(),
        pins_for(server.ca_pem()),
    );
    let err = discovery::token_to_kubeconfig(config, &other)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Failed(_)), "{err:?}");
    assert!(!other.exists());
    // The file written before is not replaced.
    let config = token_config(&endpoint(&server), token(), pins_for(server.ca_pem()));
    let err = discovery::token_to_kubeconfig(config, &path)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Write { .. }), "{err:?}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), written);
}

#[test]
fn the_kubeconfig_is_written_0600_and_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bootstrap-kubelet.conf");
    std::fs::write(&path, "old").unwrap();
    // An existing file is kept unless replacing it is asked for.
    let err =
        discovery::write_kubeconfig(&path, b"apiVersion: v1\n", Existing::Refuse).unwrap_err();
    assert!(
        matches!(&err, Error::Write { source, .. } if source.kind() == std::io::ErrorKind::AlreadyExists),
        "{err:?}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"old");
    discovery::write_kubeconfig(&path, b"apiVersion: v1\n", Existing::Replace).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"apiVersion: v1\n");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // No temporary file is left behind.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    let err = discovery::write_kubeconfig(
        dir.path().join("no/such/dir/x.conf"),
        b"x",
        Existing::Refuse,
    )
    .unwrap_err();
    assert!(matches!(err, Error::Write { .. }), "{err:?}");
}

#[tokio::test]
async fn equivalent_endpoints_are_tried_in_order() {
    let server = server_with_token().await;
    // A port nothing listens on: bound, then closed.
    let dead = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().to_string()
    };
    let config = token_config(&dead, token(), pins_for(server.ca_pem()))
        .with_endpoint(&endpoint(&server))
        .unwrap();
    let found = discovery::discover(Source::Token(config)).await.unwrap();
    assert_eq!(found.endpoint(), Some(endpoint(&server).as_str()));
    assert_eq!(cluster_info_gets(&server).len(), 2);
}

#[tokio::test]
async fn dropping_the_future_cancels_discovery() {
    let server = server_with_token().await;
    // An unknown token ID: discovery polls until its (long) timeout.
    let unknown: BootstrapToken = "zzzzzz.0123456789abcdef".parse().unwrap();
    let config = token_config(&endpoint(&server), unknown, pins_for(server.ca_pem()))
        .with_retry_interval(Duration::from_millis(50))
        .with_timeout(Duration::from_secs(60));
    let polling = discovery::discover(Source::Token(config));
    assert!(
        tokio::time::timeout(Duration::from_millis(500), polling)
            .await
            .is_err(),
        "discovery cannot succeed with an unknown token ID"
    );
    // Let a request that was already on the wire reach the server, then count.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = cluster_info_gets(&server).len();
    assert!(before >= 1, "it was polling: {before} fetches");
    // Still polling, it would fetch every 50 ms.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        cluster_info_gets(&server).len(),
        before,
        "no fetch after the future was dropped"
    );
}
