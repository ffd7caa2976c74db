//! The Service proxy: `/api/v1/namespaces/<namespace>/services/<id>/proxy[/<path>]`, where
//! `<id>` is `<name>`, `<name>:<port>` or `<scheme>:<name>:<port>`, as kube-apiserver serves it
//! (its `services/proxy` REST, `ResourceLocation`, and apimachinery's upgrade-aware proxy
//! handler).
//!
//! The request is authenticated and authorized (`services/proxy`, verb from the method) like any
//! other; the Service's port is resolved (by name, or by number to its name), then a ready
//! endpoint of one of its EndpointSlices (label `kubernetes.io/service-name`) with that port
//! name. The request then goes through the optional user layer
//! ([`crate::Builder::service_proxy_layer`]) and is forwarded over HTTP/1.1 (HTTPS without
//! certificate verification for the `https:` scheme, as kube-apiserver's proxy transport does),
//! bodies streamed both ways, an upgrade joined after a 101, within
//! [`crate::Builder::service_proxy_max_duration`].

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http_body::Frame;
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};
use tower::ServiceExt as _;

use super::status::ApiError;
use super::store::{Resource, Store};

/// What a [`crate::Builder::service_proxy_layer`] layer's service takes: the client's request
/// to the Service proxy, once authenticated and authorized.
pub type ProxyRequest = http::Request<Body>;

/// What a [`crate::Builder::service_proxy_layer`] layer's service answers.
pub type ProxyResponse = http::Response<Body>;

/// The service a [`crate::Builder::service_proxy_layer`] layer wraps: the double's forwarder
/// (never fails: an unreachable endpoint is a 503 response).
pub type ProxyService = tower::util::BoxCloneSyncService<ProxyRequest, ProxyResponse, Infallible>;

/// The default of [`crate::Builder::service_proxy_max_duration`]: 60 seconds.
pub const DEFAULT_SERVICE_PROXY_MAX_DURATION: Duration = Duration::from_secs(60);

/// The label that ties an EndpointSlice to its Service.
const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// A user layer applied to the forwarder, type-erased.
pub(crate) type LayerFn = Arc<dyn Fn(ProxyService) -> ProxyService + Send + Sync>;

/// The Service proxy's path, percent-decoded as kube-apiserver (Go's `net/url`) decodes it
/// before routing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProxyPath {
    pub(crate) namespace: String,
    /// `<name>`, `<name>:<port>` or `<scheme>:<name>:<port>`.
    pub(crate) id: String,
    /// What follows `/proxy`: `None` for a path ending at `/proxy`, else the rest after
    /// `/proxy/`.
    pub(crate) rest: Option<String>,
}

/// The Service proxy path `raw` names, if it is one: `/api/v1/namespaces/<ns>/services/<id>/proxy`
/// and below, after percent-decoding (so `services/a%2Fproxy` is the proxy of Service `a`, as in
/// kube-apiserver; a path that does not decode is not a proxy path).
pub(crate) fn parse_path(raw: &str) -> Option<ProxyPath> {
    let decoded = percent_decode(raw)?;
    let mut parts = decoded.strip_prefix('/')?.splitn(8, '/');
    let mut next = || parts.next();
    let (api, v1, namespaces, namespace, services, id, proxy) = (
        next()?,
        next()?,
        next()?,
        next()?,
        next()?,
        next()?,
        next()?,
    );
    let rest = next().map(str::to_owned);
    let shape = api == "api" && v1 == "v1" && namespaces == "namespaces" && services == "services";
    (shape && proxy == "proxy" && !namespace.is_empty() && !id.is_empty()).then(|| ProxyPath {
        namespace: namespace.to_owned(),
        id: id.to_owned(),
        rest,
    })
}

/// Percent-decoding of a path (`%XX`); `None` for a bad escape or bytes that are not UTF-8.
fn percent_decode(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0usize;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = |at: usize| bytes.get(at).and_then(|c| (*c as char).to_digit(16));
            let (hi, lo) = (hex(i.checked_add(1)?)?, hex(i.checked_add(2)?)?);
            out.push(u8::try_from(hi.checked_mul(16)?.checked_add(lo)?).ok()?);
            i = i.checked_add(3)?;
        } else {
            out.push(b);
            i = i.checked_add(1)?;
        }
    }
    String::from_utf8(out).ok()
}

/// The verb kube-apiserver's request-info resolver names for `method`: `get` for GET and HEAD,
/// `create`, `update`, `patch`, `delete`, and the lowercase method otherwise (`options`);
/// `None` for the methods the proxy route does not serve (405).
pub(crate) fn verb(method: &Method) -> Option<&'static str> {
    Some(match *method {
        Method::GET | Method::HEAD => "get",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        Method::OPTIONS => "options",
        _ => return None,
    })
}

/// The upstream's scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scheme {
    Http,
    Https,
}

/// Where a proxied request goes: put in the request's extensions for the forwarder (a private
/// type: a layer can neither forge nor read it).
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) scheme: Scheme,
    pub(crate) addr: SocketAddr,
    /// The path sent upstream (percent-encoded; empty only for a non-GET request ending at
    /// `/proxy`, sent as `/`).
    pub(crate) path: String,
    /// The API path up to `/proxy` (`X-Forwarded-Uri` is this, then the upstream path).
    pub(crate) prefix: String,
    /// The client's address, appended to `X-Forwarded-For`.
    pub(crate) client: Option<IpAddr>,
    /// When the request is cut.
    pub(crate) deadline: Instant,
}

/// kube's `SplitSchemeNamePort`: `name`, `name:port` or `scheme:name:port`, the name non-empty
/// and the scheme `http`, `https` or empty.
fn split_id(id: &str) -> Option<(Scheme, &str, &str)> {
    let parts: Vec<&str> = id.splitn(4, ':').collect();
    let (scheme, name, port) = match parts.as_slice() {
        [name] => ("", *name, ""),
        [name, port] => ("", *name, *port),
        [scheme, name, port] => (*scheme, *name, *port),
        _ => return None,
    };
    let scheme = match scheme {
        "" | "http" => Scheme::Http,
        "https" => Scheme::Https,
        _ => return None,
    };
    (!name.is_empty()).then_some((scheme, name, port))
}

/// apimachinery's `IsValidPathSegmentName`: a name may not be `.` or `..` nor contain `/` or
/// `%`; the store answers such a name with 400 `Name parameter invalid`.
fn check_name(name: &str) -> Result<(), ApiError> {
    let problems: Vec<String> = if name == "." || name == ".." {
        vec![format!("may not be '{name}'")]
    } else {
        ['/', '%']
            .iter()
            .filter(|c| name.contains(**c))
            .map(|c| format!("may not contain '{c}'"))
            .collect()
    };
    if problems.is_empty() {
        return Ok(());
    }
    Err(ApiError::bad_request(format!(
        "Name parameter invalid: {name:?}: {}",
        problems.join(";")
    )))
}

/// `ResourceLocation`: the endpoint `id` (in `namespace`) leads to, with the Service's name.
///
/// Errors as kube-apiserver answers them: 400 for an id that does not split or a name that is
/// not a path segment, 404 `services "x" not found`, 503 `no service port N found for service
/// "x"` for a port number the Service does not declare, 503 `no endpoints available for service
/// "x"` when no EndpointSlice names the Service, and 503 `no endpoints available for service
/// "<id>"` when none has a ready endpoint with the port.
pub(crate) fn resolve(
    store: &Store,
    namespace: &str,
    id: &str,
) -> Result<(Scheme, SocketAddr, String), ApiError> {
    let Some((scheme, name, port)) = split_id(id) else {
        return Err(ApiError::bad_request(format!(
            "invalid service request {id:?}"
        )));
    };
    check_name(name)?;
    let Some(service) = store.get(Resource::Services, namespace, name) else {
        return Err(ApiError::not_found("services", name));
    };
    // A port number names the Service port with that number (its name is what endpoints carry).
    let mut port_name = port.to_owned();
    if let Ok(number) = port.parse::<i64>() {
        let declared = service
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .find(|p| p.get("port").and_then(Value::as_i64) == Some(number));
        let Some(declared) = declared else {
            return Err(ApiError::service_unavailable(format!(
                "no service port {number} found for service {name:?}"
            )));
        };
        port_name = declared
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
    }
    let slices: Vec<Value> = store
        .list(Resource::EndpointSlices, Some(namespace))
        .into_iter()
        .filter(|s| {
            s.pointer("/metadata/labels")
                .and_then(|l| l.get(SERVICE_NAME_LABEL))
                .and_then(Value::as_str)
                == Some(name)
        })
        .collect();
    if slices.is_empty() {
        return Err(ApiError::service_unavailable(format!(
            "no endpoints available for service {name:?}"
        )));
    }
    slices
        .iter()
        .find_map(|slice| ready_endpoint(slice, &port_name))
        .map(|addr| (scheme, addr, name.to_owned()))
        .ok_or_else(|| {
            ApiError::service_unavailable(format!("no endpoints available for service {id:?}"))
        })
}

/// The first ready endpoint of an IPv4 or IPv6 `slice` with a port named `port_name` (a port
/// without a name is `""`): its first address (the one kube-proxy uses) and the port's number.
/// An endpoint is ready unless `conditions.ready` is `false` (unset means ready).
fn ready_endpoint(slice: &Value, port_name: &str) -> Option<SocketAddr> {
    let v6 = match slice.get("addressType").and_then(Value::as_str) {
        Some("IPv4") => false,
        Some("IPv6") => true,
        _ => return None,
    };
    let port = slice
        .get("ports")
        .and_then(Value::as_array)?
        .iter()
        .filter(|p| p.get("name").and_then(Value::as_str).unwrap_or_default() == port_name)
        .find_map(|p| {
            p.get("port")
                .and_then(Value::as_u64)
                .and_then(|n| u16::try_from(n).ok())
                .filter(|n| *n != 0)
        })?;
    slice
        .get("endpoints")
        .and_then(Value::as_array)?
        .iter()
        .filter(|e| e.pointer("/conditions/ready").and_then(Value::as_bool) != Some(false))
        .find_map(|e| {
            let first = e.get("addresses")?.as_array()?.first()?.as_str()?;
            let ip: IpAddr = first.parse().ok()?;
            (ip.is_ipv6() == v6).then_some(SocketAddr::new(ip, port))
        })
}

/// The path sent upstream for what followed `/proxy` (`rest`), as kube-apiserver builds it:
/// joined and cleaned (`.`, `..` and empty segments resolved, never above `/`), a trailing
/// slash kept, percent-encoded as Go encodes a path. Empty for a path ending at `/proxy`.
pub(crate) fn upstream_path(rest: Option<&str>) -> String {
    let Some(rest) = rest else {
        return String::new();
    };
    let mut segments: Vec<&str> = Vec::new();
    for segment in rest.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            s => segments.push(s),
        }
    }
    let mut path = String::with_capacity(rest.len().saturating_add(1));
    for segment in &segments {
        path.push('/');
        escape_into(segment, &mut path);
    }
    let trailing = rest.is_empty() || rest.ends_with('/') || rest.ends_with("/.");
    if trailing || path.is_empty() {
        path.push('/');
    }
    path
}

/// Go's path escaping (`url.PathEscape` without escaping `/`): unreserved characters and
/// `$&+,:;=@` stay, every other byte is `%XX`.
fn escape_into(segment: &str, out: &mut String) {
    for b in segment.bytes() {
        let keep = b.is_ascii_alphanumeric() || b"-._~$&+,:;=@".contains(&b);
        if keep {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

/// The headers kube-apiserver's authentication filter removes once a request is authenticated:
/// `Authorization` (the client's credential never reaches the Service) and the front-proxy
/// identity headers, as its `--requestheader-username-headers`, `--requestheader-uid-headers`,
/// `--requestheader-group-headers` and `--requestheader-extra-headers-prefix` are usually set
/// (`X-Remote-User`, `X-Remote-Uid`, `X-Remote-Group`, `X-Remote-Extra-*`); and the
/// `Impersonate-*` headers its impersonation filter consumes (the double does not impersonate).
pub(crate) fn remove_credentials(headers: &mut HeaderMap) {
    headers.remove(header::AUTHORIZATION);
    let drop: Vec<HeaderName> = headers
        .keys()
        .filter(|name| {
            let n = name.as_str();
            n == "x-remote-user"
                || n == "x-remote-uid"
                || n == "x-remote-group"
                || n.starts_with("x-remote-extra-")
                || n.starts_with("impersonate-")
        })
        .cloned()
        .collect();
    for name in drop {
        headers.remove(name);
    }
}

/// The 301 kube-apiserver answers a GET or HEAD of a path ending at `/proxy`: to the same path
/// with a slash.
pub(crate) fn redirect_to_slash(path: &str, query: Option<&str>) -> Response {
    let location = match query {
        Some(q) if !q.is_empty() => format!("{path}/?{q}"),
        _ => format!("{path}/"),
    };
    match HeaderValue::try_from(location) {
        Ok(location) => (
            StatusCode::MOVED_PERMANENTLY,
            [(header::LOCATION, location)],
        )
            .into_response(),
        Err(_) => ApiError::bad_request("invalid request path").into_response(),
    }
}

/// The forwarder with the user's layer (if any) around it.
pub(crate) fn service(layer: Option<&LayerFn>) -> ProxyService {
    let forwarder = ProxyService::new(tower::service_fn(|req: ProxyRequest| async move {
        Ok::<_, Infallible>(forward(req).await)
    }));
    match layer {
        Some(layer) => layer(forwarder),
        None => forwarder,
    }
}

/// Runs `req` through `service` until `deadline`: past it, before the response head, 504 as
/// kube-apiserver's timeout filter answers.
pub(crate) async fn call(service: ProxyService, req: ProxyRequest, deadline: Instant) -> Response {
    match tokio::time::timeout_at(deadline, service.oneshot(req)).await {
        Ok(Ok(response)) => response,
        Ok(Err(never)) => match never {},
        Err(_elapsed) => ApiError::timeout().into_response(),
    }
}

/// Sends the request to its [`Target`] and streams the answer back.
async fn forward(mut req: ProxyRequest) -> ProxyResponse {
    let Some(target) = req.extensions_mut().remove::<Target>() else {
        return ApiError::internal("the Service proxy request lost its target").into_response();
    };
    let (mut parts, body) = req.into_parts();
    let path = if target.path.is_empty() {
        "/"
    } else {
        target.path.as_str()
    };
    let uri = match parts.uri.query() {
        Some(q) => format!("{path}?{q}"),
        None => path.to_owned(),
    };
    parts.uri = match uri.parse::<Uri>() {
        Ok(uri) => uri,
        Err(_) => return ApiError::bad_request("invalid request path").into_response(),
    };
    parts.version = http::Version::HTTP_11;
    // An upgrade (WebSocket, SPDY) is forwarded as one: its `Connection` and `Upgrade` headers
    // survive the hop-by-hop removal, and a 101 joins the two connections.
    let upgrade = upgrade_request(&parts.headers)
        .and_then(|protocol| Some((protocol, parts.extensions.remove::<OnUpgrade>()?)));
    addon_jwt::remove_hop_by_hop(&mut parts.headers);
    if let Some((protocol, _)) = &upgrade {
        parts
            .headers
            .insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
        parts.headers.insert(header::UPGRADE, protocol.clone());
    }
    if let Some(ip) = target.client {
        let prior: Vec<&str> = parts
            .headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        let value = if prior.is_empty() {
            ip.to_string()
        } else {
            format!("{}, {ip}", prior.join(", "))
        };
        if let Ok(value) = HeaderValue::try_from(value) {
            parts.headers.insert("x-forwarded-for", value);
        }
    }
    if let Ok(value) = HeaderValue::try_from(format!("{}{path}", target.prefix)) {
        parts.headers.insert("x-forwarded-uri", value);
    }
    if !parts.headers.contains_key(header::HOST)
        && let Ok(host) = HeaderValue::try_from(target.addr.to_string())
    {
        parts.headers.insert(header::HOST, host);
    }
    let request = http::Request::from_parts(parts, body);
    let result = match target.scheme {
        Scheme::Http => match TcpStream::connect(target.addr).await {
            Ok(tcp) => send(tcp, request, target.deadline).await,
            Err(e) => Err(Failure::Other(dial_error(target.addr, &e))),
        },
        Scheme::Https => match TcpStream::connect(target.addr).await {
            Ok(tcp) => match tls_connect(tcp, target.addr).await {
                Ok(tls) => send(tls, request, target.deadline).await,
                Err(e) => Err(Failure::Other(e)),
            },
            Err(e) => Err(Failure::Other(dial_error(target.addr, &e))),
        },
    };
    let response = match result {
        Ok(response) => response,
        Err(Failure::TimedOut) => return ApiError::timeout().into_response(),
        Err(Failure::Other(why)) => {
            return ApiError::service_unavailable(format!("error trying to reach service: {why}"))
                .into_response();
        }
    };
    if let (Some((_, client)), StatusCode::SWITCHING_PROTOCOLS) = (upgrade, response.status()) {
        return switch_protocols(response, client, target.deadline);
    }
    let (mut parts, body) = response.into_parts();
    addon_jwt::remove_hop_by_hop(&mut parts.headers);
    for cors in [
        "access-control-allow-credentials",
        "access-control-allow-headers",
        "access-control-allow-methods",
        "access-control-allow-origin",
    ] {
        parts.headers.remove(cors);
    }
    rewrite_location(&mut parts.headers, &target);
    http::Response::from_parts(parts, Body::new(DeadlineBody::new(body, target.deadline)))
}

/// The protocol an upgrade request asks for: an `Upgrade` header and a `Connection` header
/// naming `upgrade` (apimachinery's `IsUpgradeRequest`).
fn upgrade_request(headers: &HeaderMap) -> Option<HeaderValue> {
    let connection_upgrade = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|token| token.trim().eq_ignore_ascii_case("upgrade"));
    connection_upgrade
        .then(|| headers.get(header::UPGRADE).cloned())
        .flatten()
}

/// The upstream switched protocols: the 101 goes to the client with its `Connection` and
/// `Upgrade`, and once both sides have upgraded their bytes are copied both ways until one
/// ends or the deadline passes.
fn switch_protocols(
    mut response: http::Response<hyper::body::Incoming>,
    client: OnUpgrade,
    deadline: Instant,
) -> ProxyResponse {
    let upstream = hyper::upgrade::on(&mut response);
    tokio::spawn(async move {
        let joined = tokio::time::timeout_at(deadline, async move {
            let (Ok(client), Ok(upstream)) = tokio::join!(client, upstream) else {
                return;
            };
            let (mut client, mut upstream) = (TokioIo::new(client), TokioIo::new(upstream));
            let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        });
        let _ = joined.await;
    });
    let (parts, _body) = response.into_parts();
    http::Response::from_parts(parts, Body::empty())
}

/// Go's wording for a refused or failed dial.
fn dial_error(addr: SocketAddr, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => {
            format!("dial tcp {addr}: connect: connection refused")
        }
        _ => format!("dial tcp {addr}: {e}"),
    }
}

/// One HTTP/1.1 exchange on `io`; the connection is driven until the deadline.
async fn send<IO>(
    io: IO,
    request: http::Request<Body>,
    deadline: Instant,
) -> Result<http::Response<hyper::body::Incoming>, Failure>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| Failure::Other(e.to_string()))?;
    tokio::spawn(async move {
        let _ = tokio::time::timeout_at(deadline, connection.with_upgrades()).await;
    });
    // The connection task ends at the deadline, which fails the exchange: checked first, the
    // deadline names the failure.
    tokio::select! {
        biased;
        () = tokio::time::sleep_until(deadline) => Err(Failure::TimedOut),
        sent = sender.send_request(request) => sent.map_err(|e| Failure::Other(e.to_string())),
    }
}

/// Why no response came from the upstream.
enum Failure {
    /// The deadline passed before the response head.
    TimedOut,
    /// The connection or the exchange failed: the failure's text.
    Other(String),
}

/// TLS to an `https:` endpoint without verifying its certificate (kube-apiserver's Service proxy
/// transport skips verification too); the handshake signatures are still checked.
async fn tls_connect(
    tcp: TcpStream,
    addr: SocketAddr,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, String> {
    let provider =
        Arc::new(crate::crypto::provider().ok_or_else(|| "no TLS crypto provider".to_owned())?);
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(NoVerification(provider)))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| e.to_string())
}

/// Accepts any server certificate; checks the handshake signature with the provider's
/// algorithms.
#[derive(Debug)]
struct NoVerification(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
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
        cert: &rustls::pki_types::CertificateDer<'_>,
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

/// kube's proxy transport rewrites a redirect that points at the upstream itself (a path, or
/// a URL naming the endpoint's address) to go through the proxy again: the path is put under
/// the API path up to `/proxy` (unless it already is) and the scheme and host are dropped.
fn rewrite_location(headers: &mut HeaderMap, target: &Target) {
    let Some(location) = headers.get(header::LOCATION).and_then(|v| v.to_str().ok()) else {
        return;
    };
    let prefix = target.prefix.as_str();
    let Ok(uri) = location.parse::<Uri>() else {
        return;
    };
    let same_host = match uri.authority() {
        None => true,
        Some(authority) => authority.as_str() == target.addr.to_string(),
    };
    let path = uri.path();
    if !same_host || !path.starts_with('/') || path.starts_with(prefix) {
        return;
    }
    let rewritten = match uri.query() {
        Some(q) => format!("{prefix}{path}?{q}"),
        None => format!("{prefix}{path}"),
    };
    if let Ok(value) = HeaderValue::try_from(rewritten) {
        headers.insert(header::LOCATION, value);
    }
}

/// A response body cut at the deadline: past it, the next frame is an error, which ends the
/// response to the client mid-body.
struct DeadlineBody<B> {
    inner: B,
    sleep: Pin<Box<Sleep>>,
}

impl<B> DeadlineBody<B> {
    fn new(inner: B, deadline: Instant) -> DeadlineBody<B> {
        DeadlineBody {
            inner,
            sleep: Box::pin(tokio::time::sleep_until(deadline)),
        }
    }
}

/// The error a cut body ends with.
#[derive(Debug, thiserror::Error)]
#[error("the Service proxy's maximum request duration elapsed")]
struct Elapsed;

impl<B> http_body::Body for DeadlineBody<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if self.sleep.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(Box::new(Elapsed))));
        }
        Pin::new(&mut self.inner)
            .poll_frame(cx)
            .map(|frame| frame.map(|f| f.map_err(Into::into)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::{ProxyPath, Scheme, check_name, parse_path, split_id, upstream_path};

    #[test]
    fn proxy_paths_are_recognised_after_decoding() {
        let p = |ns: &str, id: &str, rest: Option<&str>| {
            Some(ProxyPath {
                namespace: ns.to_owned(),
                id: id.to_owned(),
                rest: rest.map(str::to_owned),
            })
        };
        assert_eq!(
            parse_path("/api/v1/namespaces/default/services/echo/proxy"),
            p("default", "echo", None)
        );
        assert_eq!(
            parse_path("/api/v1/namespaces/default/services/https:echo:443/proxy/a/b/"),
            p("default", "https:echo:443", Some("a/b/"))
        );
        // `%2F` is a slash once decoded, as in kube-apiserver.
        assert_eq!(
            parse_path("/api/v1/namespaces/default/services/a%2Fproxy"),
            p("default", "a", None)
        );
        assert_eq!(
            parse_path("/api/v1/namespaces/default/services/name%2F..%2Fproxy/x"),
            None
        );
        assert_eq!(
            parse_path("/api/v1/namespaces/default/services//proxy"),
            None
        );
        assert_eq!(parse_path("/api/v1/namespaces/default/services/echo"), None);
        assert_eq!(
            parse_path("/api/v1/namespaces/default/services/e%zzo/proxy"),
            None
        );
        assert_eq!(
            parse_path("/api/v1/namespaces/default/services/e%FFo/proxy"),
            None
        );
    }

    #[test]
    fn ids_split_as_kube_splits_them() {
        assert_eq!(split_id("echo"), Some((Scheme::Http, "echo", "")));
        assert_eq!(split_id("echo:http"), Some((Scheme::Http, "echo", "http")));
        assert_eq!(
            split_id("https:echo:443"),
            Some((Scheme::Https, "echo", "443"))
        );
        assert_eq!(split_id("http:echo:"), Some((Scheme::Http, "echo", "")));
        assert_eq!(split_id("ftp:echo:21"), None);
        assert_eq!(split_id(":80"), None);
        assert_eq!(split_id("a:b:c:d"), None);
    }

    #[test]
    fn names_must_be_path_segments() {
        assert!(check_name("echo").is_ok());
        let message = |n: &str| check_name(n).err().map(|e| e.message);
        assert_eq!(
            message("..").as_deref(),
            Some("Name parameter invalid: \"..\": may not be '..'")
        );
        assert_eq!(
            message("a/%b").as_deref(),
            Some("Name parameter invalid: \"a/%b\": may not contain '/';may not contain '%'")
        );
    }

    proptest::proptest! {
        /// Whatever follows `/proxy/`, the upstream path is a valid origin-form path that
        /// starts with `/` and has no `.` or `..` segment (it never climbs above the root).
        #[test]
        fn upstream_paths_stay_under_the_root(rest in "(\\.|\\.\\.|/|%|[a-z]|\\?|#| |\\PC){0,40}") {
            let path = upstream_path(Some(&rest));
            proptest::prop_assert!(path.starts_with('/'));
            proptest::prop_assert!(path.split('/').all(|s| s != "." && s != ".."));
            proptest::prop_assert!(path.parse::<http::Uri>().is_ok(), "{path}");
        }

        /// Any request path is a proxy path or not, never a panic; a proxy path's parts are
        /// never empty.
        #[test]
        fn any_path_parses_or_not(raw in "/api/v1/namespaces/(%[0-9A-Fa-f]{2}|[a-z/.%:]){0,12}/services/(%[0-9A-Fa-f]{2}|[a-z/.%:]){0,12}/proxy(/|%2F|[a-z.]){0,8}") {
            if let Some(p) = parse_path(&raw) {
                proptest::prop_assert!(!p.namespace.is_empty() && !p.id.is_empty());
                proptest::prop_assert!(!p.namespace.contains('/') && !p.id.contains('/'));
            }
        }
    }

    #[test]
    fn upstream_paths_are_cleaned_and_escaped() {
        assert_eq!(upstream_path(None), "");
        assert_eq!(upstream_path(Some("")), "/");
        assert_eq!(upstream_path(Some("some/path")), "/some/path");
        assert_eq!(upstream_path(Some("some/path/")), "/some/path/");
        assert_eq!(upstream_path(Some("a/../../../etc")), "/etc");
        assert_eq!(upstream_path(Some("a//b/./c")), "/a/b/c");
        assert_eq!(upstream_path(Some("..")), "/");
        assert_eq!(upstream_path(Some("a b?#%")), "/a%20b%3F%23%25");
    }
}
