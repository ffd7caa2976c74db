//! The controller-metrics demo against the API-server double: its kubeconfig is the double's
//! admin one; a ServiceAccount bound to a ClusterRole with `get` on `/metrics` scrapes it (200,
//! with the controller's counter moving after a ConfigMap is created), an unbound one gets 403
//! and no token 401, each answered with kube-apiserver's `Status`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code"
)]

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use k8s_bootstrap::k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_bootstrap::k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use k8s_bootstrap::k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use k8s_bootstrap::kube::api::{Api, PostParams};
use k8s_bootstrap_examples::{Response, http_request};
use loopback_apiserver::LoopbackApiServer;
use serde_json::{Value, json};

const NS: &str = "default";

/// The demo's process, killed when dropped.
struct Demo(Child);

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A typed object from its JSON.
macro_rules! object {
    ($($json:tt)+) => {
        serde_json::from_value(json!($($json)+)).unwrap()
    };
}

/// The ClusterRole a scraper needs, bound to `prometheus`; `stranger` has nothing. Their tokens
/// from TokenRequests.
async fn accounts(admin: &k8s_bootstrap::kube::Client) -> (String, String) {
    let pp = PostParams::default();
    Api::<ClusterRole>::all(admin.clone())
        .create(
            &pp,
            &object!({
                "metadata": {"name": "metrics-reader"},
                "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
            }),
        )
        .await
        .unwrap();
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(
            &pp,
            &object!({
                "metadata": {"name": "prometheus-metrics"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "metrics-reader"},
                "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": NS}],
            }),
        )
        .await
        .unwrap();
    let accounts = Api::<ServiceAccount>::namespaced(admin.clone(), NS);
    let mut tokens = Vec::new();
    for name in ["prometheus", "stranger"] {
        accounts
            .create(&pp, &object!({"metadata": {"name": name}}))
            .await
            .unwrap();
        let request: TokenRequest = object!({"spec": {}});
        let token = accounts
            .create_token_request(name, &pp, &request)
            .await
            .unwrap()
            .status
            .unwrap()
            .token
            .unwrap();
        tokens.push(token);
    }
    let stranger = tokens.pop().unwrap();
    (tokens.pop().unwrap(), stranger)
}

/// `GET url`, with the token as `Authorization: Bearer` (a blocking client, off the runtime).
async fn get(url: &str, token: Option<&str>) -> Response {
    let url = url.to_owned();
    let bearer = token.map(|t| format!("Bearer {t}"));
    tokio::task::spawn_blocking(move || {
        let headers: Vec<(&str, &str)> = bearer
            .as_deref()
            .map(|b| vec![("Authorization", b)])
            .unwrap_or_default();
        http_request(&url, "GET", &headers, b"").unwrap()
    })
    .await
    .unwrap()
}

fn status(response: &Response) -> Value {
    serde_json::from_str(&response.text()).unwrap()
}

/// The value of the sample `name` in a Prometheus text answer.
fn sample(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {name} in:\n{text}"))
        .parse()
        .unwrap()
}

#[tokio::test]
async fn scrapers_need_a_token_the_api_server_authenticates_and_a_role_allowing_get_metrics() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let admin = server.admin_client().await.unwrap();
    let (token, stranger) = accounts(&admin).await;
    let kubeconfig = std::env::temp_dir().join(format!(
        "controller-metrics-test-{}.kubeconfig",
        std::process::id()
    ));
    std::fs::write(&kubeconfig, server.admin_kubeconfig_yaml()).unwrap();

    let mut child = Command::new(env!("CARGO_BIN_EXE_controller-metrics"))
        .arg("127.0.0.1:0")
        .env("KUBECONFIG", &kubeconfig)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let demo = Demo(child);
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        line
    })
    .await
    .unwrap();
    let url = line
        .trim()
        .strip_prefix("serving ")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_owned();

    // No token: 401, as kube-apiserver answers it.
    let answer = get(&url, None).await;
    assert_eq!(answer.status, 401, "{}", answer.text());
    assert_eq!(status(&answer)["reason"], "Unauthorized");

    // A valid token whose account no role allows: 403.
    let answer = get(&url, Some(&stranger)).await;
    assert_eq!(answer.status, 403, "{}", answer.text());
    let s = status(&answer);
    assert_eq!(s["reason"], "Forbidden");
    assert_eq!(
        s["message"],
        format!(
            "forbidden: User \"system:serviceaccount:{NS}:stranger\" cannot get path \"/metrics\""
        )
    );

    // The bound account: 200, the layer's counters, and the controller's once it reconciles a
    // new ConfigMap (a bounded wait: the watch delivers it within moments).
    let answer = get(&url, Some(&token)).await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    let text = answer.text();
    for (decision, n) in [("denied", 1), ("unauthenticated", 1), ("allowed", 1)] {
        let name = format!("delegated_auth_requests_total{{decision=\"{decision}\"}}");
        assert_eq!(sample(&text, &name), n, "{text}");
    }
    let before = sample(&text, "configmap_reconciles_total");
    Api::<ConfigMap>::namespaced(admin.clone(), NS)
        .create(
            &PostParams::default(),
            &object!({"metadata": {"name": "demo"}, "data": {"k": "v"}}),
        )
        .await
        .unwrap();
    let mut reconciled = false;
    for _ in 0..300 {
        let answer = get(&url, Some(&token)).await;
        assert_eq!(answer.status, 200, "{}", answer.text());
        if sample(&answer.text(), "configmap_reconciles_total") > before {
            reconciled = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        reconciled,
        "the controller never reconciled the new ConfigMap"
    );

    drop(demo);
    let _ = std::fs::remove_file(&kubeconfig);
}
