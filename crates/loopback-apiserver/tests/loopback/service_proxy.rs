//! The Service proxy and EndpointSlices of the loopback API server, against a plain-HTTP
//! upstream on loopback that records what it received.
//!
//! The server under test is a double (`loopback_apiserver`), not a real control plane.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test helpers fail loudly"
)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use axum::body::Body;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use loopback_apiserver::{LoopbackApiServer, ProxyRequest, ProxyResponse, ProxyService};
use serde_json::{Value, json};

use crate::support::upstream::upstream;

/// The double as these tests run it: the upstreams listen on loopback, which kube-apiserver
/// refuses in an EndpointSlice.
fn loopback_builder() -> loopback_apiserver::Builder {
    LoopbackApiServer::builder().dangerous_allow_loopback_endpoints(true)
}

/// A client for `yaml`, without kube's retries of 503 and 504 (each answer is asserted as
/// the server gives it).
async fn client_from(yaml: &str) -> Client {
    let kubeconfig = Kubeconfig::from_yaml(yaml).unwrap();
    let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    config.default_retry = false;
    Client::try_from(config).unwrap()
}

async fn admin(server: &LoopbackApiServer) -> Client {
    client_from(&server.admin_kubeconfig_yaml()).await
}

async fn with_token(server: &LoopbackApiServer, token: &str) -> Client {
    client_from(
        &server
            .admin_kubeconfig_yaml()
            .replace(server.admin_token(), token),
    )
    .await
}

/// Service `name` in `namespace` with one port (`port_name`, number 80) and an EndpointSlice
/// for it pointing at `upstream` (ready unless `ready` is false).
fn service(
    server: &LoopbackApiServer,
    namespace: &str,
    name: &str,
    port_name: Option<&str>,
    upstream: SocketAddr,
    ready: bool,
) {
    let mut port = json!({"port": 80, "protocol": "TCP"});
    let mut slice_port = json!({"port": upstream.port(), "protocol": "TCP"});
    if let Some(n) = port_name {
        port["name"] = json!(n);
        slice_port["name"] = json!(n);
    }
    server
        .insert(
            namespace,
            "services",
            json!({"metadata": {"name": name}, "spec": {"ports": [port]}}),
        )
        .unwrap();
    server
        .insert(
            namespace,
            "endpointslices",
            json!({
                "metadata": {
                    "name": format!("{name}-x1y2z"),
                    "labels": {"kubernetes.io/service-name": name},
                },
                "addressType": if upstream.is_ipv6() { "IPv6" } else { "IPv4" },
                "ports": [slice_port],
                "endpoints": [{
                    "addresses": [upstream.ip().to_string()],
                    "conditions": {"ready": ready},
                }],
            }),
        )
        .unwrap();
}

/// One request through `client`: status, headers and body.
async fn send(
    client: &Client,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, http::HeaderMap, Vec<u8>) {
    let mut req = http::Request::builder().method(method).uri(path);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req
        .body(kube::client::Body::from(body.as_bytes().to_vec()))
        .unwrap();
    let resp = client.send(req).await.unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = axum::body::to_bytes(Body::new(resp.into_body()), 16 << 20)
        .await
        .unwrap();
    (status, headers, bytes.to_vec())
}

/// A GET: status and body as JSON (`Null` when not JSON).
async fn get(client: &Client, path: &str) -> (u16, Value) {
    let (status, _, body) = send(client, "GET", path, &[], "").await;
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

fn status_of(body: &Value) -> (u64, &str, &str) {
    assert_eq!(body["kind"], "Status", "{body}");
    (
        body["code"].as_u64().unwrap(),
        body["reason"].as_str().unwrap(),
        body["message"].as_str().unwrap(),
    )
}

const ECHO: &str = "/api/v1/namespaces/default/services/echo:http/proxy";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwards_path_query_headers_and_bodies_without_the_credential() {
    let (addr, seen) = upstream().await;
    let server = loopback_builder().start().await.unwrap();
    service(&server, "default", "echo", Some("http"), addr, true);
    let admin = admin(&server).await;

    let (status, headers, body) = send(
        &admin,
        "GET",
        &format!("{ECHO}/some/path?x=1&add-auth=true"),
        &[
            ("x-custom", "kept"),
            ("x-forwarded-for", "192.0.2.7"),
            ("connection", "x-hop"),
            ("x-hop", "dropped"),
            ("x-remote-user", "mallory"),
            ("x-remote-uid", "mallory-uid"),
            ("x-remote-group", "system:masters"),
            ("x-remote-extra-scopes", "all"),
            // Impersonation is served (the admin as itself) and never forwarded.
            ("impersonate-user", "loopback-admin"),
            ("impersonate-group", "system:masters"),
        ],
        "",
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "application/json");
    let got: Value = serde_json::from_slice(&body).unwrap();
    // Without a layer, the request goes on as Kubernetes sends it: the query unchanged
    // (`add-auth=true` included), no token added.
    assert_eq!(got["uri"], "/some/path?x=1&add-auth=true");
    let h = &got["headers"];
    assert_eq!(h["x-custom"], json!(["kept"]));
    // The client's bearer token never reaches the Service (kube-apiserver removes
    // `Authorization` once it has authenticated the request).
    assert!(h.get("authorization").is_none(), "{h}");
    for gone in [
        "x-hop",
        "connection",
        "x-remote-user",
        "x-remote-uid",
        "x-remote-group",
        "x-remote-extra-scopes",
        "impersonate-user",
        "impersonate-group",
    ] {
        assert!(h.get(gone).is_none(), "{gone} forwarded: {h}");
    }
    assert_eq!(h["x-forwarded-for"], json!(["192.0.2.7, 127.0.0.1"]));
    assert_eq!(h["x-forwarded-uri"], json!([format!("{ECHO}/some/path")]));
    let last = server.requests().into_iter().last().unwrap();
    assert_eq!(
        (last.path.as_str(), last.status, last.user.as_deref()),
        (
            "/api/v1/namespaces/default/services/echo:http/proxy/some/path",
            200,
            Some("loopback-admin")
        )
    );

    // Every method kube-apiserver routes to the proxy; bodies both ways.
    for method in ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"] {
        let (status, _, body) = send(&admin, method, &format!("{ECHO}/m"), &[], "payload").await;
        assert_eq!(status, 200, "{method}");
        let got: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            (got["method"].as_str(), got["body"].as_str()),
            (Some(method), Some("payload"))
        );
    }
    let (status, _, body) = send(&admin, "HEAD", &format!("{ECHO}/h"), &[], "").await;
    assert_eq!((status, body.len()), (200, 0));
    assert_eq!(seen.lock().unwrap().last().unwrap()["method"], "HEAD");

    // A port by number resolves to the Service port's name.
    let (status, got) = get(
        &admin,
        "/api/v1/namespaces/default/services/echo:80/proxy/n",
    )
    .await;
    assert_eq!((status, got["uri"].as_str()), (200, Some("/n")));
    // `/proxy/`: the root; dot segments are resolved, never above the root.
    let (status, got) = get(&admin, &format!("{ECHO}/")).await;
    assert_eq!((status, got["uri"].as_str()), (200, Some("/")));
    let (status, got) = get(&admin, &format!("{ECHO}/a/../../b/./c/")).await;
    assert_eq!((status, got["uri"].as_str()), (200, Some("/b/c/")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_without_a_path_redirects_reads_and_forwards_writes_to_the_root() {
    let (addr, seen) = upstream().await;
    let server = loopback_builder().start().await.unwrap();
    service(&server, "default", "echo", Some("http"), addr, true);
    let admin = admin(&server).await;

    let (status, headers, _) = send(&admin, "GET", &format!("{ECHO}?a=b"), &[], "").await;
    assert_eq!(status, 301);
    assert_eq!(headers["location"], format!("{ECHO}/?a=b"));
    assert!(seen.lock().unwrap().is_empty());
    let (status, _, body) = send(&admin, "POST", ECHO, &[], "x").await;
    assert_eq!(status, 200);
    let got: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(got["uri"], "/");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_lose_hop_by_hop_and_cors_headers_and_redirects_stay_in_the_proxy() {
    let (addr, _seen) = upstream().await;
    let server = loopback_builder().start().await.unwrap();
    service(&server, "default", "echo", Some("http"), addr, true);
    let admin = admin(&server).await;
    let (status, headers, _) = send(&admin, "GET", &format!("{ECHO}/redirect"), &[], "").await;
    assert_eq!(status, 302);
    assert_eq!(headers["location"], format!("{ECHO}/login?next=1"));
    assert!(headers.get("access-control-allow-origin").is_none());
    assert_eq!(headers["x-kept"], "yes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resolution_errors_are_kube_apiserver_s() {
    let (addr, seen) = upstream().await;
    let server = loopback_builder().start().await.unwrap();
    service(&server, "default", "echo", Some("http"), addr, true);
    service(&server, "default", "unnamed", None, addr, true);
    service(&server, "default", "sleepy", Some("http"), addr, false);
    service(
        &server,
        "kube-system",
        "elsewhere",
        Some("http"),
        addr,
        true,
    );
    server
        .insert(
            "default",
            "services",
            json!({"metadata": {"name": "lonely"}, "spec": {"ports": [{"port": 80}]}}),
        )
        .unwrap();
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    service(&server, "default", "refused", Some("http"), closed, true);
    let admin = admin(&server).await;
    let svc = |id: &str| format!("/api/v1/namespaces/default/services/{id}/proxy/");

    // A Service without a port name uses its unnamed port.
    assert_eq!(get(&admin, &svc("unnamed")).await.0, 200);
    let cases: Vec<(String, u64, &str, String)> = vec![
        (
            svc("missing"),
            404,
            "NotFound",
            "services \"missing\" not found".into(),
        ),
        (
            "/api/v1/namespaces/nowhere/services/echo/proxy/".into(),
            404,
            "NotFound",
            "services \"echo\" not found".into(),
        ),
        (
            svc("elsewhere:http"),
            404,
            "NotFound",
            "services \"elsewhere\" not found".into(),
        ),
        // The port is named: without a port, no endpoint port has the empty name.
        (
            svc("echo"),
            503,
            "ServiceUnavailable",
            "no endpoints available for service \"echo\"".into(),
        ),
        (
            svc("echo:nope"),
            503,
            "ServiceUnavailable",
            "no endpoints available for service \"echo:nope\"".into(),
        ),
        (
            svc("echo:81"),
            503,
            "ServiceUnavailable",
            "no service port 81 found for service \"echo\"".into(),
        ),
        (
            svc("lonely"),
            503,
            "ServiceUnavailable",
            "no endpoints available for service \"lonely\"".into(),
        ),
        (
            svc("sleepy:http"),
            503,
            "ServiceUnavailable",
            "no endpoints available for service \"sleepy:http\"".into(),
        ),
        (
            svc("refused:http"),
            503,
            "ServiceUnavailable",
            format!(
                "error trying to reach service: dial tcp {closed}: connect: connection refused"
            ),
        ),
        (
            svc("ftp:echo:21"),
            400,
            "BadRequest",
            "invalid service request \"ftp:echo:21\"".into(),
        ),
        (
            svc("a:b:c:d"),
            400,
            "BadRequest",
            "invalid service request \"a:b:c:d\"".into(),
        ),
        // Names that are not path segments (apimachinery's IsValidPathSegmentName).
        (
            svc(".."),
            400,
            "BadRequest",
            "Name parameter invalid: \"..\": may not be '..'".into(),
        ),
        (
            svc("a%25b"),
            400,
            "BadRequest",
            "Name parameter invalid: \"a%b\": may not contain '%'".into(),
        ),
        // `%2F` decodes to a slash before routing: this is no proxy path at all.
        (
            svc("echo%2F.."),
            404,
            "NotFound",
            "the server could not find the requested resource".into(),
        ),
    ];
    for (path, code, reason, message) in cases {
        let (status, body) = get(&admin, &path).await;
        assert_eq!(status as u64, code, "{path}: {body}");
        assert_eq!(status_of(&body), (code, reason, message.as_str()), "{path}");
    }
    assert!(
        seen.lock().unwrap().len() == 1,
        "only the unnamed port's request was forwarded"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_users_allowed_the_proxy_subresource_get_through() {
    let (addr, seen) = upstream().await;
    let server = loopback_builder()
        .static_token("jane-token", "jane", &["developers"])
        .start()
        .await
        .unwrap();
    service(&server, "default", "echo", Some("http"), addr, true);

    let jane = with_token(&server, "jane-token").await;
    let (status, body) = get(&jane, &format!("{ECHO}/x")).await;
    assert_eq!(status, 403);
    assert_eq!(
        status_of(&body),
        (
            403,
            "Forbidden",
            "services \"echo:http\" is forbidden: User \"jane\" cannot get resource \"services/proxy\" in API group \"\" in the namespace \"default\""
        )
    );
    assert_eq!(
        body["details"],
        json!({"name": "echo:http", "kind": "services"})
    );
    let (status, _, body) = send(&jane, "POST", &format!("{ECHO}/x"), &[], "").await;
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status, 403);
    assert!(
        status_of(&body)
            .2
            .contains("cannot create resource \"services/proxy\""),
        "{body}"
    );
    // Authorization comes first: a Service that does not exist is 403 too.
    let (status, _) = get(&jane, "/api/v1/namespaces/default/services/missing/proxy/").await;
    assert_eq!(status, 403);

    // A bootstrap token's user may not proxy either.
    let secrets: Api<Secret> = Api::namespaced(admin(&server).await, "kube-system");
    let token: Secret = serde_json::from_value(json!({
        "metadata": {"name": "bootstrap-token-abcdef"},
        "type": "bootstrap.kubernetes.io/token",
        "stringData": {
            "token-id": "abcdef",
            "token-secret": "0123456789abcdef",
            "usage-bootstrap-authentication": "true",
        },
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &token)
        .await
        .unwrap();
    let bootstrap = with_token(&server, "abcdef.0123456789abcdef").await;
    assert_eq!(get(&bootstrap, &format!("{ECHO}/x")).await.0, 403);
    // Its Secret deleted, the token authenticates no one: 401.
    secrets
        .delete("bootstrap-token-abcdef", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(get(&bootstrap, &format!("{ECHO}/x")).await.0, 401);

    // kubeadm's admin.conf user (group kubeadm:cluster-admins) may.
    let (cert, key) = server
        .issue_client_certificate("kubernetes-admin", &["kubeadm:cluster-admins"])
        .unwrap();
    let kubeadm_admin = client_from(&server.kubeconfig_with_client_certificate(&cert, &key)).await;
    let (status, got) = get(&kubeadm_admin, &format!("{ECHO}/x")).await;
    assert_eq!(status, 200);
    assert!(got["headers"].get("authorization").is_none());

    // Bad credentials: 401, as for any path.
    let stranger = with_token(&server, "not-a-token").await;
    let (status, body) = get(&stranger, &format!("{ECHO}/x")).await;
    assert_eq!(status_of(&body), (401, "Unauthorized", "Unauthorized"));
    assert_eq!(status, 401);
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "only the kubeadm admin's request"
    );

    // A revoked client certificate: 401 from the next request on, on the same connection
    // (the client keeps it open), and nothing is forwarded.
    server.revoke_client_certificate(&cert).unwrap();
    let (status, body) = get(&kubeadm_admin, &format!("{ECHO}/x")).await;
    assert_eq!((status, status_of(&body).1), (401, "Unauthorized"));
    assert_eq!(seen.lock().unwrap().len(), 1);
    let last = server.requests().into_iter().last().unwrap();
    assert_eq!((last.status, last.user), (401, None));
    assert!(matches!(
        server.revoke_client_certificate("no certificate here"),
        Err(loopback_apiserver::Error::InvalidCertificate)
    ));
    // A removed static token: 401.
    server.add_static_token("admin-2", "admin-2", &["system:masters"]);
    let admin2 = with_token(&server, "admin-2").await;
    assert_eq!(get(&admin2, &format!("{ECHO}/x")).await.0, 200);
    server.remove_static_token("admin-2");
    assert_eq!(get(&admin2, &format!("{ECHO}/x")).await.0, 401);
    assert_eq!(seen.lock().unwrap().len(), 2);
}

/// A layer whose service adds `x-layer: <user> <audience>` from the request's extensions and
/// whose requests carry a minted-looking `Authorization`.
#[derive(Clone)]
struct Tagging;

impl tower::Layer<ProxyService> for Tagging {
    type Service = tower::util::MapRequest<ProxyService, fn(ProxyRequest) -> ProxyRequest>;

    fn layer(&self, inner: ProxyService) -> Self::Service {
        tower::util::MapRequest::new(inner, tag as fn(ProxyRequest) -> ProxyRequest)
    }
}

fn tag(mut req: ProxyRequest) -> ProxyRequest {
    let user = req
        .extensions()
        .get::<addon_jwt::RequestUser>()
        .map(|u| u.name().to_owned())
        .unwrap_or_default();
    let audience = req
        .extensions()
        .get::<addon_jwt::add_auth::ProxiedService>()
        .map(|s| s.audience().as_str().to_owned())
        .unwrap_or_default();
    assert!(req.headers().get("authorization").is_none());
    let value = format!("{user} {audience}");
    req.headers_mut().insert("x-layer", value.parse().unwrap());
    req.headers_mut()
        .insert("authorization", "Bearer minted".parse().unwrap());
    req
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_layer_sees_the_user_and_the_service_and_its_headers_are_forwarded() {
    let (addr, seen) = upstream().await;
    let server = loopback_builder()
        .service_proxy_layer(Tagging)
        .start()
        .await
        .unwrap();
    service(&server, "default", "echo", Some("http"), addr, true);
    let admin = admin(&server).await;
    let (status, got) = get(
        &admin,
        "/api/v1/namespaces/default/services/https:echo:http/proxy/",
    )
    .await;
    // https to a plain-HTTP upstream fails, after the layer ran: 503.
    assert_eq!(status, 503, "{got}");
    let (status, got) = get(&admin, &format!("{ECHO}/p?add-auth=true")).await;
    assert_eq!(status, 200);
    assert_eq!(
        got["headers"]["x-layer"],
        json!(["loopback-admin default/echo"])
    );
    assert_eq!(got["headers"]["authorization"], json!(["Bearer minted"]));
    assert_eq!(seen.lock().unwrap().len(), 1);
}

/// A layer that answers itself.
#[derive(Clone)]
struct Teapot;

impl tower::Layer<ProxyService> for Teapot {
    type Service = tower::util::BoxCloneSyncService<ProxyRequest, ProxyResponse, Infallible>;

    fn layer(&self, _inner: ProxyService) -> Self::Service {
        tower::util::BoxCloneSyncService::new(tower::service_fn(|_req: ProxyRequest| async {
            Ok::<_, Infallible>(
                http::Response::builder()
                    .status(418)
                    .body(Body::from("short and stout"))
                    .unwrap(),
            )
        }))
    }
}

/// A layer whose service fails.
#[derive(Clone)]
struct Failing;

impl tower::Layer<ProxyService> for Failing {
    type Service = tower::util::BoxCloneSyncService<ProxyRequest, ProxyResponse, std::io::Error>;

    fn layer(&self, _inner: ProxyService) -> Self::Service {
        tower::util::BoxCloneSyncService::new(tower::service_fn(|_req: ProxyRequest| async {
            Err::<ProxyResponse, _>(std::io::Error::other("secret-detail"))
        }))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layer_may_answer_itself_and_its_errors_are_500() {
    let (addr, seen) = upstream().await;
    let server = loopback_builder()
        .service_proxy_layer(Teapot)
        .start()
        .await
        .unwrap();
    service(&server, "default", "echo", Some("http"), addr, true);
    let (status, _, body) = send(&admin(&server).await, "GET", &format!("{ECHO}/x"), &[], "").await;
    assert_eq!(
        (status, body.as_slice()),
        (418, b"short and stout".as_slice())
    );
    // Resolution still comes first: the layer never sees a request for a missing Service.
    let (status, _) = get(
        &admin(&server).await,
        "/api/v1/namespaces/default/services/missing/proxy/",
    )
    .await;
    assert_eq!(status, 404);

    let failing = loopback_builder()
        .service_proxy_layer(Failing)
        .start()
        .await
        .unwrap();
    service(&failing, "default", "echo", Some("http"), addr, true);
    let (status, body) = get(&admin(&failing).await, &format!("{ECHO}/x")).await;
    assert_eq!(
        status_of(&body),
        (
            500,
            "InternalError",
            "Internal error occurred: the Service proxy layer failed"
        )
    );
    assert_eq!(status, 500);
    assert!(seen.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layer_set_on_the_running_server_applies_from_the_next_request() {
    let (addr, seen) = upstream().await;
    let server = loopback_builder()
        .service_proxy_layer(Teapot)
        .start()
        .await
        .unwrap();
    service(&server, "default", "echo", Some("http"), addr, true);
    let client = admin(&server).await;
    assert_eq!(get(&client, &format!("{ECHO}/x")).await.0, 418);
    // Replaced: the new layer, over the double's forwarder.
    server.set_service_proxy_layer(Tagging);
    let (status, got) = get(&client, &format!("{ECHO}/x")).await;
    assert_eq!(status, 200);
    assert_eq!(
        got["headers"]["x-layer"],
        json!(["loopback-admin default/echo"])
    );
    // Without one before: the same.
    let plain = loopback_builder().start().await.unwrap();
    service(&plain, "default", "echo", Some("http"), addr, true);
    let plain_admin = admin(&plain).await;
    plain.set_service_proxy_layer(Teapot);
    assert_eq!(get(&plain_admin, &format!("{ECHO}/x")).await.0, 418);
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_are_cut_at_the_maximum_duration() {
    let (addr, _seen) = upstream().await;
    // No response head in time: 504 Timeout (the upstream never answers, so any duration
    // shows it).
    let server = loopback_builder()
        .service_proxy_max_duration(Duration::from_millis(200))
        .start()
        .await
        .unwrap();
    service(&server, "default", "echo", Some("http"), addr, true);
    let (status, body) = get(&admin(&server).await, &format!("{ECHO}/hang")).await;
    assert_eq!(
        status_of(&body),
        (
            504,
            "Timeout",
            "Timeout: request did not complete within the allotted timeout"
        )
    );
    assert_eq!(status, 504);

    // A response still streaming is cut: the head and the first chunk arrive, then the body
    // ends in an error. (The duration leaves a loaded machine ample time for the head.)
    let server = loopback_builder()
        .service_proxy_max_duration(Duration::from_secs(5))
        .start()
        .await
        .unwrap();
    service(&server, "default", "echo", Some("http"), addr, true);
    let req = http::Request::get(format!("{ECHO}/stream"))
        .body(kube::client::Body::empty())
        .unwrap();
    let resp = admin(&server).await.send(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    let read = axum::body::to_bytes(Body::new(resp.into_body()), 1 << 20).await;
    assert!(read.is_err(), "the body was not cut: {read:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_endpoints_are_reached_without_verification() {
    // The upstream is another double: HTTPS with a certificate no one here trusts, `/version`
    // public.
    let upstream = loopback_builder().start().await.unwrap();
    let addr: SocketAddr = upstream.endpoint().parse().unwrap();
    let server = loopback_builder().start().await.unwrap();
    service(&server, "default", "kapi", Some("https"), addr, true);
    let admin = admin(&server).await;
    let (status, got) = get(
        &admin,
        "/api/v1/namespaces/default/services/https:kapi:https/proxy/version",
    )
    .await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["gitVersion"], "v1.32.0-loopback");
    // The upstream saw an anonymous request: the client's token stayed at the proxy.
    let last = upstream.requests().into_iter().last().unwrap();
    assert_eq!((last.path.as_str(), last.user), ("/version", None));
    // Plain HTTP to an HTTPS endpoint: no HTTP answer comes back.
    let (status, body) = get(
        &admin,
        "/api/v1/namespaces/default/services/kapi:https/proxy/version",
    )
    .await;
    assert_eq!(status, 503);
    assert!(
        status_of(&body)
            .2
            .starts_with("error trying to reach service: "),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_headers_are_refused_and_not_forwarded() {
    let (addr, seen) = upstream().await;
    let server = loopback_builder().start().await.unwrap();
    service(&server, "default", "echo", Some("http"), addr, true);
    let admin = admin(&server).await;
    let big = "a".repeat(2 << 20);
    let req = http::Request::get(format!("{ECHO}/x"))
        .header("x-big", big.as_str())
        .body(kube::client::Body::empty())
        .unwrap();
    match admin.send(req).await {
        Ok(resp) => assert_eq!(resp.status(), 431),
        // The server may close the connection before the client has written the head.
        Err(e) => eprintln!("refused: {e}"),
    }
    // More header fields than hyper's limit (100): 431 too (Go's server counts bytes only).
    let mut req = http::Request::get(format!("{ECHO}/x"));
    for i in 0..120 {
        req = req.header(format!("x-field-{i}"), "v");
    }
    let resp = admin
        .send(req.body(kube::client::Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(resp.status(), 431);
    assert!(seen.lock().unwrap().is_empty());
    // The server still serves.
    assert_eq!(get(&admin, &format!("{ECHO}/x")).await.0, 200);
}

/// An HTTP/1.1 connection over TLS to the double, trusting its CA, with no credential of its
/// own (as a WebSocket client or a bare HTTP client connects).
async fn tls_connection(
    server: &LoopbackApiServer,
) -> hyper::client::conn::http1::SendRequest<http_body_util::Empty<bytes::Bytes>> {
    use rustls::pki_types::pem::PemObject as _;
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_slice(server.ca_pem().as_bytes()).unwrap())
        .unwrap();
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(server.endpoint())
        .await
        .unwrap();
    let tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
        .connect("127.0.0.1".try_into().unwrap(), tcp)
        .await
        .unwrap();
    let (sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
            .await
            .unwrap();
    tokio::spawn(connection.with_upgrades());
    sender
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_requests_are_forbidden_as_with_kubeadm_s_anonymous_auth() {
    use http_body_util::BodyExt as _;
    let (addr, seen) = upstream().await;
    let server = loopback_builder().start().await.unwrap();
    service(&server, "default", "echo", Some("http"), addr, true);
    // No credential at all: kube-apiserver (anonymous auth on, as kubeadm leaves it) serves
    // the request as system:anonymous, whom the proxy subresource is not granted: 403.
    let mut sender = tls_connection(&server).await;
    let req = http::Request::get(format!("{ECHO}/x"))
        .header("host", server.endpoint())
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .unwrap();
    let resp = sender.send_request(req).await.unwrap();
    assert_eq!(resp.status(), 403);
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        status_of(&body).2,
        "services \"echo:http\" is forbidden: User \"system:anonymous\" cannot get resource \"services/proxy\" in API group \"\" in the namespace \"default\""
    );
    assert!(seen.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upgrades_join_the_client_and_the_upstream() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let (addr, seen) = upstream().await;
    let server = loopback_builder().start().await.unwrap();
    service(&server, "default", "echo", Some("http"), addr, true);

    let mut sender = tls_connection(&server).await;
    let req = http::Request::get(format!("{ECHO}/upgrade"))
        .header("host", server.endpoint())
        .header("authorization", format!("Bearer {}", server.admin_token()))
        .header("connection", "Upgrade")
        .header("upgrade", "echo")
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .unwrap();
    let resp = sender.send_request(req).await.unwrap();
    assert_eq!(resp.status(), 101);
    assert_eq!(resp.headers()["upgrade"], "echo");
    let upgraded = hyper::upgrade::on(resp).await.unwrap();
    let mut io = hyper_util::rt::TokioIo::new(upgraded);
    io.write_all(b"ping").await.unwrap();
    let mut back = [0u8; 4];
    io.read_exact(&mut back).await.unwrap();
    assert_eq!(&back, b"ping");
    // The upstream saw the upgrade, without the client's credential.
    let got = seen.lock().unwrap().last().unwrap().clone();
    assert_eq!(got["headers"]["upgrade"], json!(["echo"]));
    assert!(got["headers"].get("authorization").is_none());
}

#[tokio::test]
async fn endpoint_slices_are_served_like_other_resources() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let client = admin(&server).await;
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), "default");
    let slice: EndpointSlice = serde_json::from_value(json!({
        "metadata": {"name": "echo-abc", "labels": {"kubernetes.io/service-name": "echo"}},
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        "endpoints": [{"addresses": ["192.0.2.10"], "conditions": {"ready": true}}],
    }))
    .unwrap();
    let created = slices.create(&PostParams::default(), &slice).await.unwrap();
    assert!(created.metadata.uid.is_some());
    let got = slices.get("echo-abc").await.unwrap();
    assert_eq!(got.endpoints.unwrap()[0].addresses, ["192.0.2.10"]);
    let listed = slices
        .list(&ListParams::default().labels("kubernetes.io/service-name=echo"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);
    let applied = slices
        .patch(
            "echo-abc",
            &PatchParams::apply("test"),
            &Patch::Apply(json!({
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {"name": "echo-abc"},
                "addressType": "IPv4",
                "endpoints": [{"addresses": ["192.0.2.11"]}],
            })),
        )
        .await
        .unwrap();
    assert_eq!(applied.endpoints.unwrap()[0].addresses, ["192.0.2.11"]);
    slices
        .delete("echo-abc", &DeleteParams::default())
        .await
        .unwrap();
    assert!(
        server
            .object("default", "endpointslices", "echo-abc")
            .is_none()
    );

    // kube-apiserver's required `addressType`.
    let (status, body) = {
        let req =
            http::Request::post("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices")
                .header("content-type", "application/json")
                .body(kube::client::Body::from(
                    json!({"metadata": {"name": "bad"}, "endpoints": []})
                        .to_string()
                        .into_bytes(),
                ))
                .unwrap();
        let resp = client.send(req).await.unwrap();
        let status = resp.status().as_u16();
        let bytes = axum::body::to_bytes(Body::new(resp.into_body()), 1 << 20)
            .await
            .unwrap();
        (status, serde_json::from_slice::<Value>(&bytes).unwrap())
    };
    assert_eq!(status, 422);
    assert_eq!(
        status_of(&body),
        (
            422,
            "Invalid",
            "EndpointSlice.discovery.k8s.io \"bad\" is invalid: addressType: Required value"
        )
    );

    // Discovery names the group and the resource.
    let (status, groups) = get(&client, "/apis").await;
    assert_eq!(status, 200);
    assert!(
        groups["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["name"] == "discovery.k8s.io")
    );
    let (_, resources) = get(&client, "/apis/discovery.k8s.io/v1").await;
    assert_eq!(resources["resources"][0]["name"], "endpointslices");
}

#[tokio::test]
async fn the_serving_key_is_ecdsa_p256_and_matches_the_certificate() {
    let server = loopback_builder().start().await.unwrap();
    let key = addon_jwt::SigningKey::from_pkcs8_pem(server.serving_key_pem()).unwrap();
    assert_eq!(key.algorithm(), addon_jwt::Algorithm::Es256);
    assert_eq!(
        key.public_key_pem().unwrap().trim(),
        server.serving_public_key_pem().trim()
    );
    assert!(
        server
            .serving_key_pem()
            .starts_with("-----BEGIN PRIVATE KEY-----")
    );
    assert!(
        server
            .serving_certificate_pem()
            .starts_with("-----BEGIN CERTIFICATE-----")
    );
    // The key is a secret: the server's Debug does not show it.
    let shown = format!("{server:?}");
    assert!(!shown.contains("PRIVATE KEY"));
}

/// POSTs `slice` as an EndpointSlice in `default`: the status and the body.
async fn post_slice(client: &Client, slice: &Value) -> (u16, Value) {
    let req = http::Request::post("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices")
        .header("content-type", "application/json")
        .body(kube::client::Body::from(slice.to_string().into_bytes()))
        .unwrap();
    let resp = client.send(req).await.unwrap();
    let status = resp.status().as_u16();
    let bytes = axum::body::to_bytes(Body::new(resp.into_body()), 1 << 20)
        .await
        .unwrap();
    (status, serde_json::from_slice(&bytes).unwrap())
}

/// A documentation address of the family `address_type` names.
fn good(address_type: &str) -> &'static str {
    if address_type == "IPv6" {
        "2001:db8::1"
    } else {
        "192.0.2.1"
    }
}

fn slice_at(name: &str, address_type: &str, addresses: &[&str]) -> Value {
    json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/service-name": "echo"}},
        "addressType": address_type,
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        "endpoints": addresses
            .iter()
            .map(|a| json!({"addresses": [a], "conditions": {"ready": true}}))
            .collect::<Vec<_>>(),
    })
}

/// kube-apiserver's `ValidateEndpointIP`: an EndpointSlice may not name an unspecified,
/// loopback, link-local or link-local multicast address (nor one of the other family), so its
/// Service proxy never reaches the API server's own host or a node-local service (a cloud
/// metadata endpoint on 169.254.169.254). The double refuses them the same way, on every write.
#[tokio::test]
async fn endpoint_slices_naming_special_addresses_are_refused_as_kube_apiserver_refuses_them() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let client = admin(&server).await;
    let loopback = "may not be in the loopback range (127.0.0.0/8, ::1/128)";
    let link_local = "may not be in the link-local range (169.254.0.0/16, fe80::/10)";
    let multicast = "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)";
    for (address_type, address, detail) in [
        ("IPv4", "127.0.0.1", loopback.to_owned()),
        ("IPv4", "127.1.2.3", loopback.to_owned()),
        ("IPv4", "::ffff:127.0.0.1", loopback.to_owned()),
        ("IPv6", "::1", loopback.to_owned()),
        ("IPv4", "169.254.169.254", link_local.to_owned()),
        ("IPv6", "fe80::1", link_local.to_owned()),
        ("IPv4", "224.0.0.251", multicast.to_owned()),
        ("IPv6", "ff02::fb", multicast.to_owned()),
        (
            "IPv4",
            "0.0.0.0",
            "may not be unspecified (0.0.0.0)".to_owned(),
        ),
        ("IPv6", "::", "may not be unspecified (::)".to_owned()),
        ("IPv4", "::1", "must be a valid IPv4 address".to_owned()),
        (
            "IPv6",
            "127.0.0.1",
            "must be a valid IPv6 address".to_owned(),
        ),
        (
            "IPv6",
            "::ffff:127.0.0.1",
            "must be a valid IPv6 address".to_owned(),
        ),
        (
            "IPv4",
            "localhost",
            "must be a valid IPv4 address".to_owned(),
        ),
    ] {
        let (status, body) = post_slice(
            &client,
            &slice_at("bad", address_type, &[good(address_type), address]),
        )
        .await;
        assert_eq!(status, 422, "{address}: {body}");
        assert_eq!(
            status_of(&body),
            (
                422,
                "Invalid",
                format!(
                    "EndpointSlice.discovery.k8s.io \"bad\" is invalid: endpoints[1].addresses[0]: \
                     Invalid value: {address:?}: {detail}"
                )
                .as_str()
            ),
            "{address}"
        );
    }
    assert!(server.object("default", "endpointslices", "bad").is_none());
    // Several at once are all named.
    let (status, body) = post_slice(
        &client,
        &slice_at("bad", "IPv4", &["127.0.0.1", "169.254.0.1"]),
    )
    .await;
    assert_eq!(status, 422);
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("endpoints[0].addresses[0]")
            && message.contains("endpoints[1].addresses[0]"),
        "{message}"
    );

    // An update, a merge patch and an apply are checked as a create is.
    let (status, _) = post_slice(&client, &slice_at("good", "IPv4", &["192.0.2.1"])).await;
    assert_eq!(status, 201);
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), "default");
    let mut current = slices.get("good").await.unwrap();
    current.endpoints.as_mut().unwrap()[0].addresses = vec!["127.0.0.1".to_owned()];
    let err = slices
        .replace("good", &PostParams::default(), &current)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(e) if e.code == 422),
        "{err}"
    );
    let err = slices
        .patch(
            "good",
            &PatchParams::default(),
            &Patch::Merge(json!({"endpoints": [{"addresses": ["169.254.169.254"]}]})),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(e) if e.code == 422),
        "{err}"
    );
    let err = slices
        .patch(
            "good",
            &PatchParams::apply("test").force(),
            &Patch::Apply(json!({
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {"name": "good"},
                "addressType": "IPv4",
                "endpoints": [{"addresses": ["127.0.0.1"]}],
            })),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(e) if e.code == 422),
        "{err}"
    );
    assert_eq!(
        server.object("default", "endpointslices", "good").unwrap()["endpoints"][0]["addresses"],
        json!(["192.0.2.1"])
    );
    // A test helper's write is refused alike; FQDN slices name no IP and are not checked.
    let err = server
        .insert(
            "default",
            "endpointslices",
            slice_at("helper", "IPv4", &["127.0.0.1"]),
        )
        .unwrap_err();
    assert!(
        matches!(err, loopback_apiserver::Error::Insert { code: 422, .. }),
        "{err}"
    );
    let (status, _) = post_slice(&client, &slice_at("names", "FQDN", &["localhost"])).await;
    assert_eq!(status, 201);
}

/// So a Service proxy request can never reach a loopback port by default: with the only
/// EndpointSlice it could use refused, the Service has no endpoints (503) and the upstream on
/// loopback hears nothing. With `dangerous_allow_loopback_endpoints` it is reached, and
/// link-local and unspecified addresses stay refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loopback_upstreams_need_the_dangerous_option() {
    let (addr, seen) = upstream().await;
    let server = LoopbackApiServer::builder().start().await.unwrap();
    server
        .insert(
            "default",
            "services",
            json!({"metadata": {"name": "echo"}, "spec": {"ports": [{"name": "http", "port": 80}]}}),
        )
        .unwrap();
    let mut slice = slice_at("echo-1", "IPv4", &[&addr.ip().to_string()]);
    slice["ports"][0]["port"] = json!(addr.port());
    assert!(
        server
            .insert("default", "endpointslices", slice.clone())
            .is_err()
    );
    let admin_client = admin(&server).await;
    let (status, body) = get(&admin_client, &format!("{ECHO}/")).await;
    assert_eq!(
        status_of(&body),
        (
            503,
            "ServiceUnavailable",
            "no endpoints available for service \"echo\""
        )
    );
    assert_eq!(status, 503);
    assert!(seen.lock().unwrap().is_empty());

    let server = LoopbackApiServer::builder()
        .dangerous_allow_loopback_endpoints(true)
        .start()
        .await
        .unwrap();
    service(&server, "default", "echo", Some("http"), addr, true);
    let admin_client = admin(&server).await;
    let (status, got) = get(&admin_client, &format!("{ECHO}/x")).await;
    assert_eq!((status, got["uri"].as_str()), (200, Some("/x")));
    assert_eq!(seen.lock().unwrap().len(), 1);
    for address in ["169.254.169.254", "0.0.0.0"] {
        let (status, _) =
            post_slice(&admin_client, &slice_at("still-bad", "IPv4", &[address])).await;
        assert_eq!(status, 422, "{address}");
    }
}
