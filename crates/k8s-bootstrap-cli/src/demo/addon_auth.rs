//! The demo's add-on authentication step: a plain GET (no credential) through `kubectl
//! proxy`; the API server authenticates the kubeconfig user and its Service proxy, asked with
//! `add-auth=true`, mints a token for that user and the Service; `k8s-bootstrap forward-proxy`
//! verifies it with the API server's serving certificate and hands the add-on
//! `X-Authenticated-User`.

#[cfg(feature = "sidecar")]
use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::path::Path;
#[cfg(feature = "sidecar")]
use std::process::Stdio;
use std::time::Duration;

use k8s_bootstrap::addon_auth::AddAuthLayer;
use k8s_bootstrap::addon_jwt::{AddAuth, Issuer, Minter, SigningKey};
use loopback_apiserver::LoopbackApiServer;
#[cfg(feature = "sidecar")]
use tokio::io::AsyncBufReadExt as _;

use super::{Demo, say};
use crate::error::CliError;

/// The tokens' issuer (the in-cluster API server's name).
const ISSUER: &str = "https://kubernetes.default.svc";
/// The Service the add-on is published as.
#[cfg(feature = "sidecar")]
const SERVICE: &str = "dashboard";
/// How long any one part of the step (starting a process, a request) may take.
#[cfg(feature = "sidecar")]
const STEP_TIMEOUT: Duration = Duration::from_secs(30);

/// The add-auth layer's parameters.
pub(in crate::demo) struct Settings<'a> {
    /// The tokens' `iss`.
    pub(in crate::demo) issuer: &'a str,
    /// The tokens' lifetime.
    pub(in crate::demo) ttl: Duration,
    /// add-auth=true requests per user: N per duration.
    pub(in crate::demo) rate: (NonZeroU32, Duration),
    /// add-auth=true requests a user may make at once.
    pub(in crate::demo) burst: NonZeroU32,
}

impl Settings<'static> {
    /// The demo's: five-minute tokens, at most 10 requests a second per user.
    pub(in crate::demo) fn demo() -> Settings<'static> {
        let ten = NonZeroU32::new(10).unwrap_or(NonZeroU32::MIN);
        Settings {
            issuer: ISSUER,
            ttl: Duration::from_secs(300),
            rate: (ten, Duration::from_secs(1)),
            burst: ten,
        }
    }
}

/// Wraps the double's Service proxy in the add-auth layer, signing with the serving
/// certificate's key (ES256). The error says why the key could not be read.
pub(in crate::demo) fn install_layer(
    server: &LoopbackApiServer,
    settings: &Settings<'_>,
) -> Result<(), String> {
    let key = SigningKey::from_pkcs8_pem(server.serving_key_pem())
        .map_err(|e| format!("reading the serving key: {e}"))?;
    let minter = Minter::new(key, Issuer::new(settings.issuer)).ttl(settings.ttl);
    let add_auth = AddAuth::new(minter)
        .rate(settings.rate.0, settings.rate.1)
        .burst(settings.burst);
    server.set_service_proxy_layer(AddAuthLayer::new(add_auth));
    Ok(())
}

/// Without the `sidecar` feature there is no `forward-proxy` to run.
#[cfg(not(feature = "sidecar"))]
pub(in crate::demo) async fn run(
    _demo: &Demo,
    _server: &LoopbackApiServer,
    _dir: &Path,
    _admin: &Path,
) -> Result<(), CliError> {
    say("this build has no forward-proxy (the `sidecar` feature); skipping this step");
    Ok(())
}

/// Runs the step: the add-on, the Service and its EndpointSlice, `forward-proxy`, `kubectl
/// proxy`, and a GET with and without `add-auth=true`.
#[cfg(feature = "sidecar")]
pub(in crate::demo) async fn run(
    demo: &Demo,
    server: &LoopbackApiServer,
    dir: &Path,
    admin: &Path,
) -> Result<(), CliError> {
    say(&format!(
        "the API server's Service proxy runs the add-auth layer: for a request with \
         add-auth=true it signs a token (ES256, with its serving certificate's key; issuer \
         {ISSUER}, subject the user, audience <namespace>/<service>) and sends it on as \
         Authorization: Bearer"
    ));
    let addon = start_addon().await?;
    say(&format!(
        "the add-on listens on {addon} (in this process) and prints the X-Authenticated-User \
         it receives"
    ));

    server.insert(
        "default",
        "services",
        serde_json::json!({"metadata": {"name": SERVICE},
                           "spec": {"selector": {"app": SERVICE}, "ports": [{"port": 80}]}}),
    )?;
    let certificate = dir.join("serving.crt");
    k8s_bootstrap::files::write_readable(
        &certificate,
        server.serving_certificate_pem().as_bytes(),
        k8s_bootstrap::files::Existing::Refuse,
    )
    .map_err(|e| super::demo_err("writing serving.crt", e))?;
    let mut forward_proxy = ForwardProxy::start(demo, addon, &certificate, admin).await?;
    let port = forward_proxy.listen.port();
    server.insert(
        "default",
        "endpointslices",
        serde_json::json!({
            "metadata": {"name": format!("{SERVICE}-1"),
                         "labels": {"kubernetes.io/service-name": SERVICE}},
            "addressType": "IPv4",
            "ports": [{"port": port, "protocol": "TCP"}],
            "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}],
        }),
    )?;
    say(&format!(
        "Service default/{SERVICE} (port 80), its EndpointSlice pointing at the forward proxy \
         (127.0.0.1:{port}, plain HTTP on loopback, asked for with --insecure-listen-address; \
         deployed, it serves TLS with --tls-cert-file and --tls-private-key-file)"
    ));

    let Some(kubectl_proxy) = KubectlProxy::start(demo, admin).await? else {
        forward_proxy.stop().await;
        return Ok(());
    };
    let path = format!("/api/v1/namespaces/default/services/{SERVICE}/proxy/");
    let (status, body) = get(kubectl_proxy.addr, &format!("{path}?add-auth=true")).await?;
    if status != 200 || body.trim().is_empty() {
        forward_proxy.stop().await;
        return Err(CliError::Demo(format!(
            "the add-on was not reached with add-auth=true: {status} {body}"
        )));
    }
    say(&format!(
        "the add-on got the kubeconfig user's name, {}, from the forward proxy (the token never \
         reached it)",
        body.trim()
    ));
    let (status, _) = get(kubectl_proxy.addr, &path).await?;
    if status != 403 {
        forward_proxy.stop().await;
        return Err(CliError::Demo(format!(
            "without add-auth=true the forward proxy answered {status}, not 403"
        )));
    }
    say("without add-auth=true no token is added: the forward proxy refuses (403)");
    drop(kubectl_proxy);
    forward_proxy.stop().await;
    Ok(())
}

/// Starts the add-on: every request is answered `hello, <X-Authenticated-User>` and printed.
#[cfg(feature = "sidecar")]
async fn start_addon() -> Result<SocketAddr, CliError> {
    async fn hello(req: axum::extract::Request) -> String {
        let user = req
            .headers()
            .get("x-authenticated-user")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        println!(
            "  add-on: GET {} with X-Authenticated-User: {user}",
            req.uri()
        );
        format!("{user}\n")
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| super::demo_err("starting the add-on", e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| super::demo_err("starting the add-on", e))?;
    let app = axum::Router::new().fallback(hello);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(addr)
}

/// `k8s-bootstrap forward-proxy` as a child process (killed when dropped).
#[cfg(feature = "sidecar")]
struct ForwardProxy {
    child: tokio::process::Child,
    listen: SocketAddr,
}

#[cfg(feature = "sidecar")]
impl ForwardProxy {
    /// Starts it on `127.0.0.1:0` and reads the address it bound from its `listening` log line.
    async fn start(
        demo: &Demo,
        addon: SocketAddr,
        certificate: &Path,
        admin: &Path,
    ) -> Result<ForwardProxy, CliError> {
        let args = [
            "forward-proxy".to_owned(),
            "--insecure-listen-address=127.0.0.1:0".to_owned(),
            format!("--forward={addon}"),
            format!("--issuer={ISSUER}"),
            format!("--audience=default/{SERVICE}"),
            format!("--public-key-file={}", certificate.display()),
            "--algorithm=ES256".to_owned(),
            "--http-address=127.0.0.1:0".to_owned(),
        ];
        println!("$ k8s-bootstrap {}", super::shell_words(&args));
        let mut child = tokio::process::Command::new(&demo.me)
            .args(&args)
            .env("KUBECONFIG", admin)
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| super::demo_err("running forward-proxy", e))?;
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| CliError::Demo("forward-proxy has no stderr".to_owned()))?;
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        let listen = tokio::time::timeout(STEP_TIMEOUT, async {
            while let Ok(Some(line)) = lines.next_line().await {
                if line.contains("forward-proxy: listening") {
                    println!("  {}", line.trim());
                    return line
                        .split_whitespace()
                        .find_map(|w| w.strip_prefix("local="))
                        .and_then(|v| v.parse::<SocketAddr>().ok());
                }
                println!("  {}", line.trim());
            }
            None
        })
        .await
        .ok()
        .flatten()
        .ok_or_else(|| CliError::Demo("forward-proxy did not start listening".to_owned()))?;
        // Keep draining its log so that it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(ForwardProxy { child, listen })
    }

    async fn stop(&mut self) {
        let _ = self.child.kill().await;
    }
}

/// `kubectl proxy --port=0` as a child process (killed when dropped).
#[cfg(feature = "sidecar")]
struct KubectlProxy {
    _child: tokio::process::Child,
    addr: SocketAddr,
}

#[cfg(feature = "sidecar")]
impl KubectlProxy {
    /// Starts it and reads the port it serves on; `None` (said so) when kubectl is missing.
    async fn start(demo: &Demo, admin: &Path) -> Result<Option<KubectlProxy>, CliError> {
        let admin_flag = admin.display().to_string();
        println!("$ kubectl --kubeconfig {admin_flag} proxy --port=0");
        let spawned = tokio::process::Command::new(&demo.kubectl)
            .args(["--kubeconfig", &admin_flag, "proxy", "--port=0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                say(&format!(
                    "kubectl was not found ({}); skipping the requests through kubectl proxy",
                    demo.kubectl.display()
                ));
                return Ok(None);
            }
            Err(e) => return Err(super::demo_err("running kubectl proxy", e)),
        };
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| CliError::Demo("kubectl proxy has no stdout".to_owned()))?;
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let addr = tokio::time::timeout(STEP_TIMEOUT, async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(addr) = line.trim().strip_prefix("Starting to serve on ") {
                    println!("  {}", line.trim());
                    return addr.parse::<SocketAddr>().ok();
                }
            }
            None
        })
        .await
        .ok()
        .flatten()
        .ok_or_else(|| CliError::Demo("kubectl proxy did not start serving".to_owned()))?;
        Ok(Some(KubectlProxy {
            _child: child,
            addr,
        }))
    }
}

/// A plain HTTP GET of `path` through `kubectl proxy` at `addr`, without an `Authorization`
/// header (kubectl adds the kubeconfig user's credential only to requests without one);
/// prints and returns the status and body.
#[cfg(feature = "sidecar")]
async fn get(addr: SocketAddr, path: &str) -> Result<(u16, String), CliError> {
    use http_body_util::BodyExt as _;
    let url = format!("http://{addr}{path}");
    println!("$ GET {url}");
    let uri: axum::http::Uri = url
        .parse()
        .map_err(|e| CliError::Demo(format!("{url}: {e}")))?;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Empty<axum::body::Bytes>>();
    let failed = |e: &dyn std::fmt::Display| CliError::Demo(format!("GET {url}: {e}"));
    let exchange = async {
        let response = client.get(uri).await.map_err(|e| failed(&e))?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| failed(&e))?
            .to_bytes();
        Ok::<_, CliError>((status, String::from_utf8_lossy(&body).into_owned()))
    };
    let (status, body) = tokio::time::timeout(STEP_TIMEOUT, exchange)
        .await
        .map_err(|_| failed(&"no answer within 30s"))??;
    println!("  {status}");
    for line in body.lines().take(12) {
        println!("  {line}");
    }
    Ok((status.as_u16(), body))
}
