//! The installed `kubectl` (`kubectl proxy`, EndpointSlices) against the loopback API server's
//! Service proxy, with a plain-HTTP upstream on loopback.
//!
//! The server under test is a double (`loopback_apiserver`), not a real control plane.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test helpers fail loudly"
)]

use std::net::SocketAddr;
use std::path::Path;

use http_body_util::BodyExt as _;
use hyper_util::rt::TokioIo;
use loopback_apiserver::LoopbackApiServer;
use serde_json::Value;
use tokio::io::AsyncBufReadExt as _;

use crate::support::kubectl::{kubectl, stderr, stdout, write};

use crate::support::upstream::upstream;

/// A running `kubectl proxy`; dropping it kills kubectl (also when a test fails).
struct KubectlProxy {
    _child: tokio::process::Child,
    addr: SocketAddr,
}

/// Starts `kubectl proxy --port=0` with `kubeconfig` and waits for the line that names the
/// port it listens on.
async fn kubectl_proxy(kubeconfig: &Path) -> KubectlProxy {
    let cache = kubeconfig.parent().unwrap().join("cache");
    let mut child = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(&cache)
        .args(["proxy", "--port=0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("kubectl runs");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = loop {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .expect("kubectl proxy ended before it served");
        if let Some(addr) = line.trim().strip_prefix("Starting to serve on ") {
            break addr.parse().unwrap();
        }
    };
    KubectlProxy {
        _child: child,
        addr,
    }
}

/// A plain-HTTP GET of `path` through the proxy: status and body.
async fn get(proxy: &KubectlProxy, path: &str) -> (u16, Vec<u8>) {
    get_with(proxy, path, &[]).await
}

/// [`get`] with more request headers.
async fn get_with(proxy: &KubectlProxy, path: &str, headers: &[(&str, &str)]) -> (u16, Vec<u8>) {
    let tcp = tokio::net::TcpStream::connect(proxy.addr).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(connection);
    let mut req = http::Request::get(path).header("host", proxy.addr.to_string());
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let req = req
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .unwrap();
    let resp = sender.send_request(req).await.unwrap();
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, body.to_vec())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_proxy_reaches_a_service_through_the_double() {
    let (addr, seen) = upstream().await;
    let server = LoopbackApiServer::builder()
        .dangerous_allow_loopback_endpoints(true)
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kc = write(dir.path(), "admin.yaml", &server.admin_kubeconfig_yaml());

    // The Service and its EndpointSlice, as kubectl creates them.
    let manifest = write(
        dir.path(),
        "echo.yaml",
        &format!(
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: echo\n  namespace: default\nspec:\n  ports:\n  - name: http\n    port: 80\n---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: echo-abcde\n  namespace: default\n  labels:\n    kubernetes.io/service-name: echo\naddressType: IPv4\nports:\n- name: http\n  port: {}\n  protocol: TCP\nendpoints:\n- addresses:\n  - 127.0.0.1\n  conditions:\n    ready: true\n",
            addr.port()
        ),
    );
    let out = kubectl(&kc, &["create", "-f", manifest.to_str().unwrap()]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim(),
        "service/echo created\nendpointslice.discovery.k8s.io/echo-abcde created"
    );
    let out = kubectl(&kc, &["get", "endpointslices", "-n", "default"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&out);
    assert!(table.starts_with("NAME"), "{table}");
    let row = table.lines().find(|l| l.starts_with("echo-abcde")).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        &cells[..4],
        ["echo-abcde", "IPv4", &addr.port().to_string(), "127.0.0.1"]
    );

    let admin_proxy = kubectl_proxy(&kc).await;
    let (status, body) = get(
        &admin_proxy,
        "/api/v1/namespaces/default/services/echo:http/proxy/some/path?x=1",
    )
    .await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let got: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(got["uri"], "/some/path?x=1");
    // kubectl's credential does not reach the Service.
    assert!(got["headers"].get("authorization").is_none(), "{got}");
    let last = server.requests().into_iter().last().unwrap();
    assert_eq!(
        (last.status, last.user.as_deref()),
        (200, Some("loopback-admin"))
    );
    // A browser's own `Authorization` header goes through kubectl proxy to the API server in
    // place of kubectl's token (client-go adds its bearer token only to requests without
    // one): an unknown token is 401 there, and nothing is forwarded.
    let before = seen.lock().unwrap().len();
    let (status, _) = get_with(
        &admin_proxy,
        "/api/v1/namespaces/default/services/echo:http/proxy/",
        &[("authorization", "Bearer from-the-browser")],
    )
    .await;
    assert_eq!(status, 401);
    assert_eq!(seen.lock().unwrap().len(), before);

    // A user without the proxy subresource: 403, passed on by kubectl proxy.
    let (cert, key) = server.issue_client_certificate("jane", &[]).unwrap();
    let jane_kc = dir.path().join("jane");
    std::fs::create_dir(&jane_kc).unwrap();
    let jane_kc = write(
        &jane_kc,
        "jane.yaml",
        &server.kubeconfig_with_client_certificate(&cert, &key),
    );
    let jane_proxy = kubectl_proxy(&jane_kc).await;
    let (status, body) = get(
        &jane_proxy,
        "/api/v1/namespaces/default/services/echo:http/proxy/some/path",
    )
    .await;
    assert_eq!(status, 403);
    let s: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        s["message"],
        "services \"echo:http\" is forbidden: User \"jane\" cannot get resource \"services/proxy\" in API group \"\" in the namespace \"default\""
    );

    // kubeadm's admin (group kubeadm:cluster-admins) gets through until its certificate is
    // revoked; then 401, and nothing more reaches the Service.
    let (cert, key) = server
        .issue_client_certificate("kubernetes-admin", &["kubeadm:cluster-admins"])
        .unwrap();
    let ops_kc = dir.path().join("ops");
    std::fs::create_dir(&ops_kc).unwrap();
    let ops_kc = write(
        &ops_kc,
        "ops.yaml",
        &server.kubeconfig_with_client_certificate(&cert, &key),
    );
    let ops_proxy = kubectl_proxy(&ops_kc).await;
    let path = "/api/v1/namespaces/default/services/echo:80/proxy/";
    assert_eq!(get(&ops_proxy, path).await.0, 200);
    let forwarded = seen.lock().unwrap().len();
    server.revoke_client_certificate(&cert).unwrap();
    let (status, body) = get(&ops_proxy, path).await;
    assert_eq!(status, 401, "{}", String::from_utf8_lossy(&body));
    assert_eq!(seen.lock().unwrap().len(), forwarded);
}
