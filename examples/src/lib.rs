//! Support code shared by the runnable demos and the kubectl interop tests: a throw-away
//! certificate authority ([`TestPki`]), a small blocking HTTP/1.1 server over TLS (or plain TCP)
//! on loopback ([`HttpsServer`]), and a matching minimal client ([`https_get`],
//! [`http_request`]).
//!
//! Everything here is for demos and tests on `127.0.0.1`: requests and responses are bounded
//! (64 KiB of headers, 4 MiB of body), every connection serves one request and closes, and the
//! server stops when its handle is dropped.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

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
    /// The header fields (the server adds `Content-Length` and `Connection: close`).
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

/// A blocking HTTP/1.1 server on `127.0.0.1` with an ephemeral port, over TLS or plain TCP.
/// Each connection serves one request on its own thread. Dropping the handle stops it.
pub struct HttpsServer {
    addr: SocketAddr,
    tls: bool,
    stop: Arc<AtomicBool>,
    accept_thread: Option<thread::JoinHandle<()>>,
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
                let mut roots = rustls::RootCertStore::empty();
                for ca in CertificateDer::pem_slice_iter(pki.ca_cert_pem.as_bytes()) {
                    roots.add(ca?)?;
                }
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    Arc::new(roots),
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
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let is_tls = tls.is_some();
        let stop_flag = stop.clone();
        let accept_thread = thread::spawn(move || {
            for stream in listener.incoming() {
                if stop_flag.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let tls = tls.clone();
                let handler = handler.clone();
                thread::spawn(move || {
                    let _ = serve_connection(stream, tls, &*handler);
                });
            }
        });
        Ok(HttpsServer {
            addr,
            tls: is_tls,
            stop,
            accept_thread: Some(accept_thread),
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
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.accept_thread.take() {
            let _ = t.join();
        }
    }
}

fn serve_connection(
    stream: TcpStream,
    tls: Option<Arc<rustls::ServerConfig>>,
    handler: &Handler,
) -> Result<(), BoxError> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    stream.set_write_timeout(Some(Duration::from_secs(30)))?;
    match tls {
        None => {
            let mut stream = stream;
            serve_one(&mut stream, None, handler)
        }
        Some(config) => {
            let conn = rustls::ServerConnection::new(config)?;
            let mut tls_stream = rustls::StreamOwned::new(conn, stream);
            // Complete the handshake before reading, so the peer certificate is known.
            while tls_stream.conn.is_handshaking() {
                tls_stream.conn.complete_io(&mut tls_stream.sock)?;
            }
            let client_cert = tls_stream
                .conn
                .peer_certificates()
                .and_then(|c| c.first())
                .map(|c| c.as_ref().to_vec());
            let result = serve_one(&mut tls_stream, client_cert, handler);
            tls_stream.conn.send_close_notify();
            let _ = tls_stream.flush();
            result
        }
    }
}

fn serve_one<S: Read + Write>(
    stream: &mut S,
    client_cert_der: Option<Vec<u8>>,
    handler: &Handler,
) -> Result<(), BoxError> {
    let mut reader = BufReader::new(&mut *stream);
    let (start, headers) = read_head(&mut reader)?;
    let mut parts = start.split(' ');
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let body = read_body(&mut reader, &headers)?;
    drop(reader);
    let request = Request {
        method,
        path,
        headers,
        body,
        client_cert_der,
    };
    let response = handler(&request);
    write_response(stream, &response)?;
    Ok(())
}

fn read_head<R: BufRead>(reader: &mut R) -> Result<(String, Vec<(String, String)>), BoxError> {
    let mut total = 0usize;
    let mut start = String::new();
    let mut headers = Vec::new();
    loop {
        let mut line = Vec::new();
        let n = reader
            .by_ref()
            .take(MAX_HEADER_BYTES.saturating_sub(total).saturating_add(1) as u64)
            .read_until(b'\n', &mut line)?;
        if n == 0 {
            return Err("connection closed before the end of the header".into());
        }
        total = total.saturating_add(n);
        if total > MAX_HEADER_BYTES {
            return Err("header too large".into());
        }
        let line = String::from_utf8(line)?;
        let line = line.trim_end_matches(['\r', '\n']);
        if start.is_empty() {
            if line.is_empty() {
                continue;
            }
            start = line.to_string();
            continue;
        }
        if line.is_empty() {
            return Ok((start, headers));
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err("malformed header line".into());
        };
        headers.push((name.trim().to_string(), value.trim().to_string()));
    }
}

fn read_body<R: Read>(reader: &mut R, headers: &[(String, String)]) -> Result<Vec<u8>, BoxError> {
    let Some(len) = header(headers, "content-length") else {
        return Ok(Vec::new());
    };
    let len: usize = len.parse()?;
    if len > MAX_BODY_BYTES {
        return Err("body too large".into());
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body)?;
    Ok(body)
}

fn read_body_to_end<R: Read>(reader: &mut R) -> Result<Vec<u8>, BoxError> {
    let mut body = Vec::new();
    let n = reader
        .take((MAX_BODY_BYTES + 1) as u64)
        .read_to_end(&mut body);
    match n {
        Ok(_) => {}
        // A peer that closes without close_notify after the body is fine for these purposes.
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {}
        Err(e) => return Err(e.into()),
    }
    if body.len() > MAX_BODY_BYTES {
        return Err("body too large".into());
    }
    Ok(body)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        _ => "Status",
    }
}

fn write_response<W: Write>(w: &mut W, response: &Response) -> io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\n",
        response.status,
        reason(response.status)
    );
    for (name, value) in &response.headers {
        if name.eq_ignore_ascii_case("content-length") || name.eq_ignore_ascii_case("connection") {
            continue;
        }
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        response.body.len()
    ));
    w.write_all(head.as_bytes())?;
    w.write_all(&response.body)?;
    w.flush()
}

/// Which server certificates [`https_get`] trusts.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Trust {
    /// Any certificate: the first, unauthenticated fetch of token discovery.
    Insecure,
    /// Only certificates chaining to these CA certificates (PEM bundle).
    CaPem(String),
}

/// Sends `GET` over HTTPS and returns the response.
///
/// # Errors
///
/// Fails on URL, connection, TLS (including an untrusted certificate) or HTTP framing errors.
pub fn https_get(url: &str, trust: &Trust, headers: &[(&str, &str)]) -> Result<Response, BoxError> {
    https_request(url, trust, None, "GET", headers, &[])
}

/// Sends a request over HTTPS, optionally presenting a client certificate
/// (`(certificate PEM, key PEM)`).
///
/// # Errors
///
/// Fails on URL, connection, TLS (including an untrusted certificate) or HTTP framing errors.
pub fn https_request(
    url: &str,
    trust: &Trust,
    client_identity: Option<(&str, &str)>,
    method: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Response, BoxError> {
    let target = Target::parse(url, "https://")?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let builder = match trust {
        Trust::Insecure => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyServerCert(provider))),
        Trust::CaPem(pem) => {
            let mut roots = rustls::RootCertStore::empty();
            for ca in CertificateDer::pem_slice_iter(pem.as_bytes()) {
                roots.add(ca?)?;
            }
            builder.with_root_certificates(roots)
        }
    };
    let config = match client_identity {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let certs =
                CertificateDer::pem_slice_iter(cert.as_bytes()).collect::<Result<Vec<_>, _>>()?;
            let key = PrivateKeyDer::from_pem_slice(key.as_bytes())?;
            builder.with_client_auth_cert(certs, key)?
        }
    };
    let server_name = ServerName::try_from(target.host.clone())?;
    let conn = rustls::ClientConnection::new(Arc::new(config), server_name)?;
    let sock = connect(&target)?;
    let mut stream = rustls::StreamOwned::new(conn, sock);
    exchange(&mut stream, &target, method, headers, body)
}

/// Sends a request over plain HTTP and returns the response.
///
/// # Errors
///
/// Fails on URL, connection or HTTP framing errors.
pub fn http_request(
    url: &str,
    method: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Response, BoxError> {
    let target = Target::parse(url, "http://")?;
    let mut sock = connect(&target)?;
    exchange(&mut sock, &target, method, headers, body)
}

struct Target {
    host: String,
    port: u16,
    path: String,
}

impl Target {
    fn parse(url: &str, scheme: &str) -> Result<Target, BoxError> {
        let rest = url
            .strip_prefix(scheme)
            .ok_or_else(|| format!("URL must start with {scheme}"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => (rest, "/"),
        };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (host, port) = v6.split_once(']').ok_or("bad IPv6 authority")?;
            (host.to_string(), port.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (authority.to_string(), None),
            }
        };
        let default_port = if scheme == "https://" { 443 } else { 80 };
        let port = match port {
            Some(p) => p.parse()?,
            None => default_port,
        };
        Ok(Target {
            host,
            port,
            path: path.to_string(),
        })
    }
}

fn connect(target: &Target) -> Result<TcpStream, BoxError> {
    let sock = TcpStream::connect((target.host.as_str(), target.port))?;
    sock.set_read_timeout(Some(Duration::from_secs(30)))?;
    sock.set_write_timeout(Some(Duration::from_secs(30)))?;
    Ok(sock)
}

fn exchange<S: Read + Write>(
    stream: &mut S,
    target: &Target,
    method: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Response, BoxError> {
    let mut head = format!(
        "{method} {} HTTP/1.1\r\nHost: {}:{}\r\nConnection: close\r\nContent-Length: {}\r\n",
        target.path,
        target.host,
        target.port,
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()?;

    let mut reader = BufReader::new(stream);
    let (status_line, headers) = read_head(&mut reader)?;
    let status = status_line
        .split(' ')
        .nth(1)
        .ok_or("malformed status line")?
        .parse()?;
    let body = if header(&headers, "content-length").is_some() {
        read_body(&mut reader, &headers)?
    } else {
        read_body_to_end(&mut reader)?
    };
    Ok(Response {
        status,
        headers,
        body,
    })
}

/// Accepts any server certificate (signatures are still checked, so the handshake is real).
#[derive(Debug)]
struct AcceptAnyServerCert(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AcceptAnyServerCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_round_trip_with_ca_trust_and_insecure() {
        let pki = TestPki::new().unwrap();
        let server = HttpsServer::start(&pki, ClientAuth::None, |req| {
            Response::json(200, format!("{{\"path\":{}}}", json_string(&req.path)))
        })
        .unwrap();
        let url = format!("{}/api?x=1", server.url());
        let ok = https_get(&url, &Trust::CaPem(pki.ca_cert_pem.clone()), &[]).unwrap();
        assert_eq!(ok.status, 200);
        assert_eq!(ok.text(), "{\"path\":\"/api?x=1\"}");
        let insecure = https_get(&url, &Trust::Insecure, &[]).unwrap();
        assert_eq!(insecure.status, 200);
        // A different CA is not trusted.
        let other = TestPki::new().unwrap();
        assert!(https_get(&url, &Trust::CaPem(other.ca_cert_pem), &[]).is_err());
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
        let trust = Trust::CaPem(pki.ca_cert_pem.clone());
        let (cert, key) = pki.issue_client("alice", &["dev"]).unwrap();
        let ok =
            https_request(&server.url(), &trust, Some((&cert, &key)), "GET", &[], &[]).unwrap();
        assert_eq!(ok.status, 200);
        assert!(https_get(&server.url(), &trust, &[]).is_err());
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
}
