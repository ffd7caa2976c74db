//! The forward proxy in the delegated mode, in process, over TLS, against the API-server
//! double's real TokenReview, SubjectAccessReview and RBAC: a ServiceAccount bound to a
//! ClusterRole allowing `get /metrics` reaches the add-on, which sees the verified user in
//! `X-Remote-User` and its groups in `X-Remote-Groups`; an unbound account gets 403 and no
//! token 401, and the add-on sees neither; the client's own `X-Remote-*` (in any spelling, in
//! the header section and in chunked trailers) never reach the add-on, nor does its
//! `Authorization`; the double unreachable gives a 5xx that is not cached, and service resumes
//! when it is back; health and metrics are served.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::relay::Relay;
use http_body_util::BodyExt as _;
use k8s_bootstrap::delegated::DelegatedAuthLayer;
use k8s_bootstrap::forward_proxy::{AuthHeaders, Config, Delegated, Server, TlsServing};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, PostParams};
use loopback_apiserver::LoopbackApiServer;
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};

const NS: &str = "monitoring";

/// The double with a namespace, a ClusterRole allowing `get /metrics` and one allowing
/// `post /upload`, both bound to the ServiceAccount `prometheus`, and an unbound `stranger`.
struct Cluster {
    server: LoopbackApiServer,
    admin: kube::Client,
    relay: Relay,
}

impl Cluster {
    async fn start() -> Cluster {
        let server = LoopbackApiServer::builder().start().await.unwrap();
        let admin = server.admin_client().await.unwrap();
        let relay = Relay::start(server.endpoint()).await;
        let create = PostParams::default();
        Api::<Namespace>::all(admin.clone())
            .create(
                &create,
                &serde_json::from_value(json!({"metadata": {"name": NS}})).unwrap(),
            )
            .await
            .unwrap();
        for (role, path, verb) in [
            ("metrics-reader", "/metrics", "get"),
            ("uploader", "/upload", "post"),
        ] {
            Api::<ClusterRole>::all(admin.clone())
                .create(
                    &create,
                    &serde_json::from_value(json!({
                        "metadata": {"name": role},
                        "rules": [{"nonResourceURLs": [path], "verbs": [verb]}],
                    }))
                    .unwrap(),
                )
                .await
                .unwrap();
            Api::<ClusterRoleBinding>::all(admin.clone())
                .create(
                    &create,
                    &serde_json::from_value(json!({
                        "metadata": {"name": format!("prometheus-{role}")},
                        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                        "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": NS}],
                    }))
                    .unwrap(),
                )
                .await
                .unwrap();
        }
        for name in ["prometheus", "stranger"] {
            Api::<ServiceAccount>::namespaced(admin.clone(), NS)
                .create(
                    &create,
                    &serde_json::from_value(json!({"metadata": {"name": name}})).unwrap(),
                )
                .await
                .unwrap();
        }
        Cluster {
            server,
            admin,
            relay,
        }
    }

    /// `kubectl create token <name>`.
    async fn token(&self, name: &str) -> String {
        let request = TokenRequest {
            spec: Some(TokenRequestSpec::default()),
            ..TokenRequest::default()
        };
        Api::<ServiceAccount>::namespaced(self.admin.clone(), NS)
            .create_token_request(name, &PostParams::default(), &request)
            .await
            .unwrap()
            .status
            .unwrap()
            .token
            .unwrap()
    }

    /// The layer, reviewing with the admin's credentials through the relay.
    async fn layer(&self) -> DelegatedAuthLayer {
        use kube::config::{KubeConfigOptions, Kubeconfig};
        let yaml = self
            .relay
            .kubeconfig(&self.server.admin_kubeconfig_yaml(), &self.server.url());
        let config = kube::Config::from_custom_kubeconfig(
            Kubeconfig::from_yaml(&yaml).unwrap(),
            &KubeConfigOptions::default(),
        )
        .await
        .unwrap();
        DelegatedAuthLayer::new(kube::Client::try_from(config).unwrap())
            .review_timeout(Duration::from_secs(5))
    }
}

/// The add-on: answers every request with the header lines and trailer lines it received,
/// one `name: value` per line (trailers prefixed `trailer `), and counts them.
async fn echo_addon(calls: Arc<AtomicUsize>) -> SocketAddr {
    let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
        calls.fetch_add(1, Ordering::SeqCst);
        async move {
            let (parts, body) = request.into_parts();
            let collected = body.collect().await.unwrap();
            let mut out = String::new();
            for (name, value) in &parts.headers {
                out.push_str(&format!("{name}: {}\n", value.to_str().unwrap_or("?")));
            }
            for (name, value) in collected.trailers().into_iter().flatten() {
                out.push_str(&format!(
                    "trailer {name}: {}\n",
                    value.to_str().unwrap_or("?")
                ));
            }
            out
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// The proxy serving TLS with the double's serving certificate (for 127.0.0.1, signed by its
/// CA), in front of `addon`, reviewing through `layer`.
struct Proxy {
    addr: SocketAddr,
    http: SocketAddr,
    ca: CertificateDer<'static>,
    _dir: tempfile::TempDir,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn proxy(cluster: &Cluster, addon: SocketAddr, delegated: Delegated) -> Proxy {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::write(&cert, cluster.server.serving_certificate_pem()).unwrap();
    std::fs::write(&key, cluster.server.serving_key_pem()).unwrap();
    let config = Config::delegated(&addon.to_string(), delegated)
        .listen("127.0.0.1:0".parse().unwrap())
        .http_address("127.0.0.1:0".parse().unwrap())
        .tls(TlsServing::new(&cert, &key));
    let server = Server::bind(config).await.unwrap();
    let (addr, http) = (server.local_addr(), server.http_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(server.serve(async move {
        let _ = stopped.await;
    }));
    let ca_pem = cluster.server.ca_pem().to_owned();
    let ca = pem_certificate(&ca_pem);
    Proxy {
        addr,
        http,
        ca,
        _dir: dir,
        _stop: stop,
    }
}

/// The one certificate of a PEM text.
fn pem_certificate(pem: &str) -> CertificateDer<'static> {
    use rustls::pki_types::pem::PemObject as _;
    CertificateDer::from_pem_slice(pem.as_bytes()).unwrap()
}

impl Proxy {
    /// Sends `request` (raw HTTP/1.1, `Connection: close`) over TLS, trusting the double's
    /// CA: the status code and the body.
    async fn send(&self, request: &str) -> (u16, String) {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.ca.clone()).unwrap();
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
        let tcp = tokio::net::TcpStream::connect(self.addr).await.unwrap();
        let name = ServerName::try_from("127.0.0.1").unwrap();
        let mut tls = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
            .unwrap();
        tls.write_all(request.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(30), tls.read_to_end(&mut out)).await;
        assert!(read.is_ok(), "the proxy did not answer in time");
        let text = String::from_utf8_lossy(&out).into_owned();
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status line: {text}"));
        let body = text
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_owned())
            .unwrap_or_default();
        (status, body)
    }

    /// `GET path` with `token` (if any) and the extra header lines `extra`.
    async fn get(&self, path: &str, token: Option<&str>, extra: &str) -> (u16, String) {
        let auth = token
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        self.send(&format!(
            "GET {path} HTTP/1.1\r\nHost: addon\r\n{auth}{extra}Connection: close\r\n\r\n"
        ))
        .await
    }

    /// `GET path` on the health and metrics address.
    async fn health(&self, path: &str) -> (u16, String) {
        let mut tcp = tokio::net::TcpStream::connect(self.http).await.unwrap();
        tcp.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
        let mut out = Vec::new();
        tcp.read_to_end(&mut out).await.unwrap();
        let text = String::from_utf8_lossy(&out).into_owned();
        let status = text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap();
        (status, text)
    }
}

/// The values of header `name` in an echo, in order.
fn seen<'a>(echo: &'a str, name: &str) -> Vec<&'a str> {
    echo.lines()
        .filter_map(|l| l.strip_prefix(name)?.strip_prefix(": "))
        .collect()
}

/// What a decoded chunked body holds: the echo's text (the add-on's response is chunked or
/// not; only its lines matter here).
fn lines(body: &str) -> String {
    body.lines()
        .filter(|l| l.contains(": "))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn a_bound_account_reaches_the_addon_as_itself_and_nobody_else_does() {
    let cluster = Cluster::start().await;
    let calls = Arc::new(AtomicUsize::new(0));
    let addon = echo_addon(calls.clone()).await;
    let proxy = proxy(&cluster, addon, Delegated::new(cluster.layer().await)).await;
    let user = format!("system:serviceaccount:{NS}:prometheus");

    // Bound: through, with the verified user and groups, and without the token.
    let token = cluster.token("prometheus").await;
    let (status, body) = proxy.get("/metrics", Some(&token), "").await;
    assert_eq!(status, 200, "{body}");
    let echo = lines(&body);
    assert_eq!(seen(&echo, "x-remote-user"), [user.as_str()], "{echo}");
    let groups = seen(&echo, "x-remote-groups");
    assert_eq!(groups.len(), 1, "{echo}");
    let groups: Vec<&str> = groups[0].split('|').collect();
    for group in [
        "system:serviceaccounts",
        &format!("system:serviceaccounts:{NS}"),
        "system:authenticated",
    ] {
        assert!(groups.contains(&group), "{group} in {groups:?}");
    }
    assert!(seen(&echo, "authorization").is_empty(), "{echo}");
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // The client's own identity headers, in any spelling: gone, the verified ones instead.
    let spoofed = "X-Remote-User: system:admin\r\nx_remote_user: system:admin\r\n\
                   X-Remote-Groups: system:masters\r\nX-Remote-Group: system:masters\r\n\
                   X-Remote-Extra-Scopes: all\r\nImpersonate-User: system:admin\r\n\
                   X-Forwarded-User: admin\r\nX-Authenticated-User: admin\r\n";
    let (status, body) = proxy.get("/metrics", Some(&token), spoofed).await;
    assert_eq!(status, 200, "{body}");
    let echo = lines(&body);
    assert_eq!(seen(&echo, "x-remote-user"), [user.as_str()], "{echo}");
    assert!(!echo.contains("system:admin"), "{echo}");
    assert!(!echo.contains("system:masters"), "{echo}");
    for name in [
        "x_remote_user",
        "x-remote-group",
        "x-remote-extra-scopes",
        "impersonate-user",
        "x-forwarded-user",
        "x-authenticated-user",
    ] {
        assert!(
            seen(&echo, name).is_empty(),
            "{name} reached the add-on: {echo}"
        );
    }

    // And in the trailers of a chunked body: gone, an ordinary trailer kept.
    let upload = format!(
        "POST /upload HTTP/1.1\r\nHost: addon\r\nAuthorization: Bearer {token}\r\n\
         Transfer-Encoding: chunked\r\nTrailer: x-remote-user, x-remote-groups, x-checksum\r\n\
         Connection: close\r\n\r\n5\r\nhello\r\n0\r\nX-Remote-User: system:admin\r\n\
         X-Remote-Groups: system:masters\r\nx-checksum: c0ffee\r\n\r\n"
    );
    let (status, body) = proxy.send(&upload).await;
    assert_eq!(status, 200, "{body}");
    let echo = lines(&body);
    assert_eq!(seen(&echo, "trailer x-checksum"), ["c0ffee"], "{echo}");
    assert!(seen(&echo, "trailer x-remote-user").is_empty(), "{echo}");
    assert!(seen(&echo, "trailer x-remote-groups").is_empty(), "{echo}");
    assert!(
        !echo.contains("system:admin") && !echo.contains("system:masters"),
        "{echo}"
    );
    assert_eq!(seen(&echo, "x-remote-user"), [user.as_str()], "{echo}");
    assert_eq!(calls.load(Ordering::SeqCst), 3);

    // Unbound: 403 with kube-apiserver's Status; no token, or a token in the query: 401.
    // The add-on sees none of them.
    let stranger = cluster.token("stranger").await;
    let (status, body) = proxy.get("/metrics", Some(&stranger), "").await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains(&format!(
            "User \\\"system:serviceaccount:{NS}:stranger\\\" cannot get path \\\"/metrics\\\""
        )),
        "{body}"
    );
    // Bound to get /metrics, not to get /secret.
    let (status, _) = proxy.get("/secret", Some(&token), "").await;
    assert_eq!(status, 403);
    let (status, body) = proxy.get("/metrics", None, spoofed).await;
    assert_eq!(status, 401, "{body}");
    let (status, _) = proxy
        .get(&format!("/metrics?access_token={token}"), None, "")
        .await;
    assert_eq!(status, 401);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        3,
        "nothing else reached the add-on"
    );

    // Health and metrics as in the JWT mode, with the layer's counters.
    assert_eq!(proxy.health("/healthz").await.0, 200);
    assert_eq!(proxy.health("/readyz").await.0, 200);
    let (status, metrics) = proxy.health("/metrics").await;
    assert_eq!(status, 200);
    for line in [
        "k8s_bootstrap_forward_proxy_forwarded_requests_total 3",
        "k8s_bootstrap_forward_proxy_delegated_allowed_requests_total 3",
        "k8s_bootstrap_forward_proxy_delegated_denied_requests_total 2",
        "k8s_bootstrap_forward_proxy_delegated_unauthenticated_requests_total 2",
    ] {
        assert!(metrics.contains(line), "{line} in {metrics}");
    }
}

#[tokio::test]
async fn other_identity_headers_and_none() {
    let cluster = Cluster::start().await;
    let calls = Arc::new(AtomicUsize::new(0));
    let addon = echo_addon(calls.clone()).await;
    let token = cluster.token("prometheus").await;
    let spoofed = "X-User: admin\r\nX-Remote-User: admin\r\nX-Remote-Groups: admin\r\n";

    // Other names and separator: the user there, kube-rbac-proxy's names still removed.
    let headers = AuthHeaders::new("X-User", "X-Groups", ",").unwrap();
    let renamed = proxy(
        &cluster,
        addon,
        Delegated::new(cluster.layer().await).auth_headers(Some(headers)),
    )
    .await;
    let (status, body) = renamed.get("/metrics", Some(&token), spoofed).await;
    assert_eq!(status, 200, "{body}");
    let echo = lines(&body);
    assert_eq!(
        seen(&echo, "x-user"),
        [format!("system:serviceaccount:{NS}:prometheus").as_str()]
    );
    assert!(
        seen(&echo, "x-groups")[0].contains("system:serviceaccounts,"),
        "{echo}"
    );
    assert!(seen(&echo, "x-remote-user").is_empty(), "{echo}");
    assert!(seen(&echo, "x-remote-groups").is_empty(), "{echo}");

    // None: no identity reaches the add-on (X-User means nothing to this proxy: it goes on).
    let off = proxy(
        &cluster,
        addon,
        Delegated::new(cluster.layer().await).auth_headers(None),
    )
    .await;
    let (status, body) = off.get("/metrics", Some(&token), spoofed).await;
    assert_eq!(status, 200, "{body}");
    let echo = lines(&body);
    assert!(
        !echo.contains("x-remote") && !echo.contains("system:"),
        "{echo}"
    );
    assert_eq!(seen(&echo, "x-user"), ["admin"], "{echo}");
}

#[tokio::test]
async fn the_double_unreachable_is_a_5xx_that_is_not_cached_and_service_resumes() {
    let cluster = Cluster::start().await;
    let calls = Arc::new(AtomicUsize::new(0));
    let addon = echo_addon(calls.clone()).await;
    let proxy = proxy(&cluster, addon, Delegated::new(cluster.layer().await)).await;
    let token = cluster.token("prometheus").await;

    cluster.relay.set_up(false);
    let (status, body) = proxy.get("/metrics", Some(&token), "").await;
    assert!((500..600).contains(&status), "{status} {body}");
    assert!(body.contains("InternalError"), "{body}");
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    // Back: the same token is reviewed again (the failure was not cached) and gets in.
    cluster.relay.set_up(true);
    let (status, body) = proxy.get("/metrics", Some(&token), "").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let (_, metrics) = proxy.health("/metrics").await;
    assert!(
        metrics.contains("k8s_bootstrap_forward_proxy_delegated_errored_requests_total 1"),
        "{metrics}"
    );
}

#[tokio::test]
async fn jwt_settings_are_refused_in_the_delegated_mode() {
    let cluster = Cluster::start().await;
    let config = Config::delegated("127.0.0.1:1", cluster.layer().await)
        .plain_http()
        .listen("127.0.0.1:0".parse().unwrap())
        .http_address("127.0.0.1:0".parse().unwrap())
        .audience("kube-system/dashboard");
    let error = Server::bind(config).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "audiences are a setting of the add-on JWT mode, not of the delegated mode"
    );
}

/// Path tricks with a token allowed only `get /metrics`: an unclean path is redirected to the
/// clean one (what is authorized is what would be served), another spelling is another path
/// (403); none reaches the add-on.
#[tokio::test]
async fn path_tricks_never_reach_the_addon() {
    let cluster = Cluster::start().await;
    let calls = Arc::new(AtomicUsize::new(0));
    let addon = echo_addon(calls.clone()).await;
    let proxy = proxy(&cluster, addon, Delegated::new(cluster.layer().await)).await;
    let token = cluster.token("prometheus").await;
    for (path, expected) in [
        ("//metrics", 301),
        ("/metrics/../secret", 301),
        ("/metrics/./", 301),
        ("/%2e%2e/secret", 301),
        ("/METRICS", 403),
        ("/metrics/", 403),
        ("/metrics/x", 403),
    ] {
        let (status, body) = proxy.get(path, Some(&token), "").await;
        assert_eq!(status, expected, "{path}: {body}");
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "nothing reached the add-on"
    );
    // The clean path itself does.
    assert_eq!(proxy.get("/metrics", Some(&token), "").await.0, 200);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}
