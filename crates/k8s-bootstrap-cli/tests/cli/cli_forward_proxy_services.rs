//! `k8s-bootstrap forward-proxy --audience-from-services` against the loopback API server: the
//! audiences are `<namespace>/<service>` of the Services whose selector matches the pod's
//! labels (the downward API's file), and follow Services created and deleted while serving.
//!
//! The API server under test is a double (`loopback_apiserver`), not a real control plane.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::arithmetic_side_effects,
    clippy::disallowed_methods,
    reason = "test code reads the wall clock and fails loudly"
)]

use std::net::SocketAddr;
use std::time::SystemTime;

use k8s_bootstrap::addon_jwt::{Audience, Issuer, Minter, SigningKey};
use loopback_apiserver::LoopbackApiServer;
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::process::Command;

use crate::support::{eventually, spawn_proxy};

const BIN: &str = env!("CARGO_BIN_EXE_k8s-bootstrap");
const KEY: &str = "-----BEGIN PRIVATE KEY-----\n\
MC4CAQAwBQYDK2VwBCIEICyjEhHG/3sL4rqIpvyWMwYdvItMjqPMedPomdGbbi1K\n\
-----END PRIVATE KEY-----\n";
const ISSUER: &str = "https://kubernetes.default.svc";

/// The status of a GET through the proxy with a token for `audience`.
async fn status_for(proxy: SocketAddr, audience: &str) -> u16 {
    let token = Minter::new(
        SigningKey::from_pkcs8_pem(KEY).unwrap(),
        Issuer::new(ISSUER),
    )
    .mint("jane", &Audience::new(audience), SystemTime::now())
    .unwrap();
    let Ok(mut stream) = tokio::net::TcpStream::connect(proxy).await else {
        return 0;
    };
    let request = format!(
        "GET / HTTP/1.1\r\nHost: addon\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
        token.expose_secret()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response).await;
    response
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn service(name: &str, selector: serde_json::Value) -> serde_json::Value {
    json!({"metadata": {"name": name}, "spec": {"selector": selector, "ports": [{"port": 80}]}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audiences_follow_the_services_that_select_the_pod() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    server
        .insert(
            "kube-system",
            "services",
            service("dashboard", json!({"app": "dashboard"})),
        )
        .unwrap();
    server
        .insert(
            "kube-system",
            "services",
            service("metrics", json!({"app": "metrics"})),
        )
        .unwrap();
    // A Service without a selector selects nothing.
    server
        .insert(
            "kube-system",
            "services",
            json!({"metadata": {"name": "external"}, "spec": {}}),
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("admin.conf");
    std::fs::write(&kubeconfig, server.admin_kubeconfig_yaml()).unwrap();
    let labels = dir.path().join("labels");
    std::fs::write(&labels, "app=\"dashboard\"\npod-template-hash=\"5d4f\"\n").unwrap();
    let key = dir.path().join("key.pem");
    std::fs::write(
        &key,
        SigningKey::from_pkcs8_pem(KEY)
            .unwrap()
            .public_key_pem()
            .unwrap(),
    )
    .unwrap();
    // The add-on: a port that answers 200 to anything.
    let addon = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream = addon.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = addon.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let _ = s
                    .write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok",
                    )
                    .await;
            });
        }
    });
    let mut command = Command::new(BIN);
    command
        .args([
            "forward-proxy",
            "--insecure-listen-address=127.0.0.1:0",
            &format!("--forward={upstream}"),
            &format!("--issuer={ISSUER}"),
            "--audience-from-services",
            "--pod-namespace=kube-system",
            &format!("--pod-labels-file={}", labels.display()),
            "--audience-refresh-interval=200ms",
            &format!("--public-key-file={}", key.display()),
            "--algorithm=EdDSA",
            "--http-address=127.0.0.1:0",
        ])
        .env("KUBECONFIG", &kubeconfig);
    let mut proxy = spawn_proxy(command).await;
    let listen = proxy.listen;
    eventually("serving", || async {
        status_for(listen, "kube-system/dashboard").await == 200
    })
    .await;
    assert_eq!(
        status_for(listen, "kube-system/metrics").await,
        403,
        "selects other pods"
    );
    assert_eq!(
        status_for(listen, "kube-system/external").await,
        403,
        "no selector"
    );
    assert_eq!(
        status_for(listen, "kube-system/web").await,
        403,
        "does not exist yet"
    );

    server
        .insert(
            "kube-system",
            "services",
            service("web", json!({"app": "dashboard"})),
        )
        .unwrap();
    eventually(
        "a new Service selecting the pod becomes an audience",
        || async { status_for(listen, "kube-system/web").await == 200 },
    )
    .await;
    let admin = {
        let config = k8s_bootstrap::kube::Config::from_custom_kubeconfig(
            k8s_bootstrap::kube::config::Kubeconfig::from_yaml(&server.admin_kubeconfig_yaml())
                .unwrap(),
            &Default::default(),
        )
        .await
        .unwrap();
        k8s_bootstrap::kube::Client::try_from(config).unwrap()
    };
    let services: k8s_bootstrap::kube::Api<k8s_bootstrap::k8s_openapi::api::core::v1::Service> =
        k8s_bootstrap::kube::Api::namespaced(admin, "kube-system");
    services
        .delete("dashboard", &Default::default())
        .await
        .unwrap();
    eventually("a deleted Service stops being an audience", || async {
        status_for(listen, "kube-system/dashboard").await == 403
    })
    .await;
    assert_eq!(status_for(listen, "kube-system/web").await, 200);
    proxy.child.kill().await.unwrap();
}
