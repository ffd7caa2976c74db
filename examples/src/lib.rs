//! Support code shared by the runnable demos and the kubectl interop tests: a throw-away
//! certificate authority ([`TestPki`]), a small HTTP/1.1 server on loopback over TLS or plain
//! TCP ([`HttpsServer`], hyper and tokio-rustls) whose handler is a plain function, and a
//! matching client ([`https_request`], [`https_request_async`], [`http_request`]).
//!
//! The API-server stand-in the demos and the drivers' tests use is
//! `loopback_apiserver::LoopbackApiServer`; this server is for the tests that need
//! something it does not do (a chosen answer per request, a required client certificate).
//! Everything here is for `127.0.0.1`: requests and responses are bounded (64 KiB of headers,
//! 4 MiB of body, 30 s per exchange), and the server stops when its handle is dropped.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// The error type of this support library.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The most header bytes a request or response may carry.
pub const MAX_HEADER_BYTES: usize = 64 * 1024;
/// The most body bytes a request or response may carry.
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// A throw-away certificate authority with one serving certificate for loopback
/// (`127.0.0.1`, `::1`, `localhost`).
pub struct TestPki {
    /// The CA certificate, PEM.
    pub ca_cert_pem: String,
    /// The server certificate, PEM, signed by the CA.
    pub server_cert_pem: String,
    /// The server's private key, PKCS#8 PEM.
    pub server_key_pem: String,
    ca_cert: rcgen::Certificate,
    ca_key: KeyPair,
}

impl TestPki {
    /// Creates a new CA (common name `kubernetes`, as kubeadm names its CA) and a serving
    /// certificate for loopback.
    ///
    /// # Errors
    ///
    /// Fails if key generation or signing fails.
    pub fn new() -> Result<TestPki, BoxError> {
        let ca_key = KeyPair::generate()?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params.distinguished_name = name("kubernetes", &[]);
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca_params.self_signed(&ca_key)?;

        let server_key = KeyPair::generate()?;
        let mut params = CertificateParams::new(vec![
            "127.0.0.1".to_string(),
            "::1".to_string(),
            "localhost".to_string(),
        ])?;
        params.distinguished_name = name("kube-apiserver", &[]);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let server_cert = params.signed_by(&server_key, &ca_cert, &ca_key)?;

        Ok(TestPki {
            ca_cert_pem: ca_cert.pem(),
            server_cert_pem: server_cert.pem(),
            server_key_pem: server_key.serialize_pem(),
            ca_cert,
            ca_key,
        })
    }

    /// Issues a client certificate (common name = user, organisations = groups, as the API
    /// server maps them) signed by the CA. Returns `(certificate PEM, PKCS#8 key PEM)`.
    ///
    /// # Errors
    ///
    /// Fails if key generation or signing fails.
    pub fn issue_client(
        &self,
        common_name: &str,
        organizations: &[&str],
    ) -> Result<(String, String), BoxError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name = name(common_name, organizations);
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.signed_by(&key, &self.ca_cert, &self.ca_key)?;
        Ok((cert.pem(), key.serialize_pem()))
    }
}

impl std::fmt::Debug for TestPki {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestPki").finish_non_exhaustive()
    }
}

fn name(common_name: &str, organizations: &[&str]) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    for org in organizations {
        dn.push(DnType::OrganizationName, *org);
    }
    dn
}

/// Whether the server asks for a TLS client certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientAuth {
    /// No client certificate is requested.
    None,
    /// A client certificate signed by the [`TestPki`] CA is required.
    Require,
}

/// One HTTP request as the server read it.
#[derive(Debug, Clone)]
pub struct Request {
    /// The method, e.g. `GET`.
    pub method: String,
    /// The request target, including any query string.
    pub path: String,
    /// The header fields in the order received.
    pub headers: Vec<(String, String)>,
    /// The body (`Content-Length` bytes).
    pub body: Vec<u8>,
    /// The DER of the TLS client certificate, when one was presented.
    pub client_cert_der: Option<Vec<u8>>,
}

impl Request {
    /// The first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }
}

/// An HTTP response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The header fields (the server adds `Content-Length`).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// A response with the given status, content type and body.
    pub fn new(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Response {
        Response {
            status,
            headers: vec![("Content-Type".to_string(), content_type.to_string())],
            body: body.into(),
        }
    }

    /// A JSON response.
    pub fn json(status: u16, body: impl Into<Vec<u8>>) -> Response {
        Response::new(status, "application/json", body)
    }

    /// A `metav1.Status` failure as the API server writes it, e.g.
    /// `kube_status(403, "Forbidden", "configmaps \"x\" is forbidden: ...")`.
    pub fn kube_status(code: u16, reason: &str, message: &str) -> Response {
        let body = format!(
            "{{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{{}},\"status\":\"Failure\",\"message\":{},\"reason\":{},\"code\":{}}}\n",
            json_string(message),
            json_string(reason),
            code
        );
        Response::json(code, body)
    }

    /// The first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    /// The body as UTF-8 text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len().saturating_add(2));
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

type Handler = dyn Fn(&Request) -> Response + Send + Sync + 'static;

/// An HTTP/1.1 server (hyper) on `127.0.0.1` with an ephemeral port, over TLS (tokio-rustls) or
/// plain TCP, on its own thread and tokio runtime. The handler runs on tokio's blocking pool, so
/// it may block. Dropping the handle stops the server.
pub struct HttpsServer {
    addr: SocketAddr,
    tls: bool,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl std::fmt::Debug for HttpsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpsServer")
            .field("url", &self.url())
            .finish_non_exhaustive()
    }
}

impl HttpsServer {
    /// Starts an HTTPS server presenting the [`TestPki`] serving certificate.
    ///
    /// # Errors
    ///
    /// Fails if the certificates cannot be loaded or the port cannot be bound.
    pub fn start(
        pki: &TestPki,
        client_auth: ClientAuth,
        handler: impl Fn(&Request) -> Response + Send + Sync + 'static,
    ) -> Result<HttpsServer, BoxError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let certs = CertificateDer::pem_slice_iter(pki.server_cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()?;
        let key = PrivateKeyDer::from_pem_slice(pki.server_key_pem.as_bytes())?;
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()?;
        let config = match client_auth {
            ClientAuth::None => builder.with_no_client_auth().with_single_cert(certs, key)?,
            ClientAuth::Require => {
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    Arc::new(roots(&pki.ca_cert_pem)?),
                    provider,
                )
                .build()?;
                builder
                    .with_client_cert_verifier(verifier)
                    .with_single_cert(certs, key)?
            }
        };
        Self::spawn(Some(Arc::new(config)), Arc::new(handler))
    }

    /// Starts a plain-HTTP server (no TLS).
    ///
    /// # Errors
    ///
    /// Fails if the port cannot be bound.
    pub fn start_plain(
        handler: impl Fn(&Request) -> Response + Send + Sync + 'static,
    ) -> Result<HttpsServer, BoxError> {
        Self::spawn(None, Arc::new(handler))
    }

    fn spawn(
        tls: Option<Arc<rustls::ServerConfig>>,
        handler: Arc<Handler>,
    ) -> Result<HttpsServer, BoxError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let listener = runtime.block_on(tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)))?;
        let addr = listener.local_addr()?;
        let is_tls = tls.is_some();
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = thread::spawn(move || {
            runtime.block_on(async move {
                loop {
                    let accepted = tokio::select! {
                        _ = &mut stopped => break,
                        accepted = listener.accept() => accepted,
                    };
                    let Ok((tcp, _)) = accepted else { continue };
                    let tls = tls.clone();
                    let handler = handler.clone();
                    tokio::spawn(async move {
                        match tls {
                            None => serve_connection(TokioIo::new(tcp), None, handler).await,
                            Some(config) => {
                                let accept = TlsAcceptor::from(config).accept(tcp);
                                let Ok(Ok(stream)) = tokio::time::timeout(IO_TIMEOUT, accept).await
                                else {
                                    return;
                                };
                                let client_cert = stream
                                    .get_ref()
                                    .1
                                    .peer_certificates()
                                    .and_then(|certs| certs.first())
                                    .map(|cert| cert.to_vec());
                                serve_connection(TokioIo::new(stream), client_cert, handler).await;
                            }
                        }
                    });
                }
            });
        });
        Ok(HttpsServer {
            addr,
            tls: is_tls,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The base URL, e.g. `https://127.0.0.1:41234`.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for HttpsServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// How long a TLS handshake or a whole client exchange may take.
const IO_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves the requests of one connection with hyper's HTTP/1.1 server.
async fn serve_connection<I>(io: I, client_cert_der: Option<Vec<u8>>, handler: Arc<Handler>)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let service = service_fn(move |req: hyper::Request<Incoming>| {
        handle(req, handler.clone(), client_cert_der.clone())
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .max_buf_size(MAX_HEADER_BYTES)
        .serve_connection(io, service)
        .await;
}

/// Reads one request (bounded), runs the handler on the blocking pool, and writes its answer.
async fn handle(
    req: hyper::Request<Incoming>,
    handler: Arc<Handler>,
    client_cert_der: Option<Vec<u8>>,
) -> Result<hyper::Response<Full<Bytes>>, BoxError> {
    let (parts, body) = req.into_parts();
    let body = Limited::new(body, MAX_BODY_BYTES)
        .collect()
        .await?
        .to_bytes();
    let request = Request {
        method: parts.method.to_string(),
        path: parts
            .uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned(),
        headers: pairs(&parts.headers),
        body: body.to_vec(),
        client_cert_der,
    };
    let response = tokio::task::spawn_blocking(move || handler(&request)).await?;
    let mut builder = hyper::Response::builder().status(response.status);
    for (name, value) in &response.headers {
        builder = builder.header(name, value);
    }
    Ok(builder.body(Full::new(Bytes::from(response.body)))?)
}

/// Header fields as `(name, value)` pairs (hyper gives names in lower case).
fn pairs(headers: &http::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect()
}

fn roots(ca_pem: &str) -> Result<rustls::RootCertStore, BoxError> {
    let mut roots = rustls::RootCertStore::empty();
    for ca in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(ca?)?;
    }
    Ok(roots)
}

/// Sends a request over HTTPS (hyper over tokio-rustls), trusting only the CA certificates in
/// `ca_pem` and optionally presenting a client certificate (`(certificate PEM, key PEM)`).
///
/// # Errors
///
/// Fails on URL, connection, TLS (including an untrusted certificate), HTTP or timeout errors,
/// or a response body over [`MAX_BODY_BYTES`].
pub async fn https_request_async(
    url: &str,
    ca_pem: &str,
    client_identity: Option<(&str, &str)>,
    method: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Response, BoxError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots(ca_pem)?);
    let config = match client_identity {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let certs =
                CertificateDer::pem_slice_iter(cert.as_bytes()).collect::<Result<Vec<_>, _>>()?;
            builder.with_client_auth_cert(certs, PrivateKeyDer::from_pem_slice(key.as_bytes())?)?
        }
    };
    let (uri, host, port) = target(url, "https")?;
    let exchange = async {
        let tcp = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
        let name = ServerName::try_from(host.clone())?;
        let tls = TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await?;
        exchange(TokioIo::new(tls), uri, method, headers, body).await
    };
    tokio::time::timeout(IO_TIMEOUT, exchange).await?
}

/// [`https_request_async`] on a runtime of its own, for code that is not async.
///
/// # Errors
///
/// As [`https_request_async`].
pub fn https_request(
    url: &str,
    ca_pem: &str,
    client_identity: Option<(&str, &str)>,
    method: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Response, BoxError> {
    block_on(https_request_async(
        url,
        ca_pem,
        client_identity,
        method,
        headers,
        body,
    ))
}

/// Sends a request over plain HTTP (hyper) and returns the response; for code that is not
/// async (it runs a runtime of its own).
///
/// # Errors
///
/// Fails on URL, connection, HTTP or timeout errors, or a response body over
/// [`MAX_BODY_BYTES`].
pub fn http_request(
    url: &str,
    method: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Response, BoxError> {
    let (uri, host, port) = target(url, "http")?;
    block_on(async {
        let exchange = async {
            let tcp = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
            exchange(TokioIo::new(tcp), uri, method, headers, body).await
        };
        tokio::time::timeout(IO_TIMEOUT, exchange).await?
    })
}

fn block_on<T>(
    future: impl std::future::Future<Output = Result<T, BoxError>>,
) -> Result<T, BoxError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(future)
}

/// The parsed URL, its host (brackets removed from an IPv6 literal) and port.
fn target(url: &str, scheme: &str) -> Result<(http::Uri, String, u16), BoxError> {
    let uri: http::Uri = url.parse()?;
    if uri.scheme_str() != Some(scheme) {
        return Err(format!("URL must start with {scheme}://").into());
    }
    let host = uri.host().ok_or("URL without a host")?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
        .to_owned();
    let port = uri
        .port_u16()
        .unwrap_or(if scheme == "https" { 443 } else { 80 });
    Ok((uri, host, port))
}

/// One request and its response over an established connection (hyper's HTTP/1.1 client).
async fn exchange<I>(
    io: I,
    uri: http::Uri,
    method: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Response, BoxError>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io).await?;
    tokio::spawn(connection);
    let authority = uri
        .authority()
        .ok_or("URL without a host")?
        .as_str()
        .to_owned();
    let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
    let mut builder = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::HOST, authority);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let response = sender
        .send_request(builder.body(Full::new(Bytes::copy_from_slice(body)))?)
        .await?;
    let (parts, body) = response.into_parts();
    let body = Limited::new(body, MAX_BODY_BYTES)
        .collect()
        .await?
        .to_bytes();
    Ok(Response {
        status: parts.status.as_u16(),
        headers: pairs(&parts.headers),
        body: body.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_round_trip_trusts_only_the_given_ca() {
        let pki = TestPki::new().unwrap();
        let server = HttpsServer::start(&pki, ClientAuth::None, |req| {
            Response::json(200, format!("{{\"path\":{}}}", json_string(&req.path)))
        })
        .unwrap();
        let url = format!("{}/api?x=1", server.url());
        let ok = https_request(&url, &pki.ca_cert_pem, None, "GET", &[], &[]).unwrap();
        assert_eq!(ok.status, 200);
        assert_eq!(ok.text(), "{\"path\":\"/api?x=1\"}");
        assert_eq!(ok.header("Content-Type"), Some("application/json"));
        // A different CA is not trusted.
        let other = TestPki::new().unwrap();
        assert!(https_request(&url, &other.ca_cert_pem, None, "GET", &[], &[]).is_err());
    }

    #[test]
    fn client_certificates_are_required_and_seen() {
        let pki = TestPki::new().unwrap();
        let server = HttpsServer::start(&pki, ClientAuth::Require, |req| {
            let status = if req.client_cert_der.is_some() {
                200
            } else {
                401
            };
            Response::json(status, "{}")
        })
        .unwrap();
        let ca = pki.ca_cert_pem.as_str();
        let (cert, key) = pki.issue_client("alice", &["dev"]).unwrap();
        let ok = https_request(&server.url(), ca, Some((&cert, &key)), "GET", &[], &[]).unwrap();
        assert_eq!(ok.status, 200);
        assert!(https_request(&server.url(), ca, None, "GET", &[], &[]).is_err());
    }

    #[test]
    fn plain_http_and_kube_status() {
        let server = HttpsServer::start_plain(|req| {
            if req.header("authorization") == Some("Bearer t") {
                Response::new(200, "text/plain", req.body.clone())
            } else {
                Response::kube_status(401, "Unauthorized", "Unauthorized")
            }
        })
        .unwrap();
        let ok = http_request(
            &server.url(),
            "POST",
            &[("Authorization", "Bearer t")],
            b"hi",
        )
        .unwrap();
        assert_eq!((ok.status, ok.text().as_str()), (200, "hi"));
        let denied = http_request(&server.url(), "GET", &[], b"").unwrap();
        assert_eq!(denied.status, 401);
        assert!(denied.text().contains("\"reason\":\"Unauthorized\""));
    }

    #[test]
    fn oversized_request_bodies_are_refused() {
        let server = HttpsServer::start_plain(|req| Response::json(200, req.body.clone())).unwrap();
        let big = vec![b'x'; MAX_BODY_BYTES + 1];
        // hyper closes the connection when the service fails: no response, an error here.
        assert!(http_request(&server.url(), "POST", &[], &big).is_err());
    }
}
