//! Bootstrap-token authentication, static tokens and the bootstrap signer of the loopback API
//! server.
//!
//! The server under test is a double (`loopback_apiserver`), not a real control plane.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test helpers fail loudly"
)]

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use loopback_apiserver::LoopbackApiServer;

const ID: &str = "abcdef";
const SECRET: &str = "0123456789abcdef";

async fn client_with_token(server: &LoopbackApiServer, token: &str) -> Client {
    let yaml = server
        .admin_kubeconfig_yaml()
        .replace(server.admin_token(), token);
    let kubeconfig = Kubeconfig::from_yaml(&yaml).unwrap();
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    Client::try_from(config).unwrap()
}

async fn admin(server: &LoopbackApiServer) -> Client {
    client_with_token(server, server.admin_token()).await
}

fn token_secret(id: &str, secret: &str, expiration: &str) -> Secret {
    let data: BTreeMap<String, String> = [
        ("token-id", id),
        ("token-secret", secret),
        ("expiration", expiration),
        ("usage-bootstrap-authentication", "true"),
        ("usage-bootstrap-signing", "true"),
        (
            "auth-extra-groups",
            "system:bootstrappers:kubeadm:default-node-token",
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(format!("bootstrap-token-{id}")),
            ..Default::default()
        },
        type_: Some("bootstrap.kubernetes.io/token".to_owned()),
        string_data: Some(data),
        ..Default::default()
    }
}

fn status_code(e: kube::Error) -> (u16, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.reason),
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn bootstrap_tokens_authenticate_until_expired_or_wrong() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let secrets: Api<Secret> = Api::namespaced(admin(&server).await, "kube-system");
    secrets
        .create(
            &PostParams::default(),
            &token_secret(ID, SECRET, "2999-01-01T00:00:00Z"),
        )
        .await
        .unwrap();
    secrets
        .create(
            &PostParams::default(),
            &token_secret("oldtkn", SECRET, "2000-01-01T00:00:00Z"),
        )
        .await
        .unwrap();

    // The token authenticates as system:bootstrap:<id>: cluster-info is readable, Secrets are
    // forbidden (403, not 401).
    let client = client_with_token(&server, &format!("{ID}.{SECRET}")).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "kube-public");
    cms.get("cluster-info").await.unwrap();
    let last = server.requests().into_iter().last().unwrap();
    assert_eq!(last.user.as_deref(), Some("system:bootstrap:abcdef"));
    let theirs: Api<Secret> = Api::namespaced(client, "kube-system");
    let err = theirs.list(&Default::default()).await.unwrap_err();
    match err {
        kube::Error::Api(s) => {
            assert_eq!((s.code, s.reason.as_str()), (403, "Forbidden"));
            assert_eq!(
                s.message,
                "secrets is forbidden: User \"system:bootstrap:abcdef\" cannot list resource \"secrets\" in API group \"\" in the namespace \"kube-system\""
            );
        }
        other => panic!("{other:?}"),
    }

    // A wrong secret, an expired token, an unknown token: 401.
    for bad in [
        format!("{ID}.0123456789abcdeg"),
        format!("oldtkn.{SECRET}"),
        "not-a-token".to_owned(),
    ] {
        let client = client_with_token(&server, &bad).await;
        let cms: Api<ConfigMap> = Api::namespaced(client, "kube-public");
        assert_eq!(
            status_code(cms.get("cluster-info").await.unwrap_err()),
            (401, "Unauthorized".to_owned())
        );
    }
    let requests = server.requests();
    assert_eq!(requests.iter().filter(|r| r.status == 401).count(), 3);
    assert!(
        requests
            .iter()
            .filter(|r| r.status == 401)
            .all(|r| r.user.is_none())
    );
    assert!(!format!("{requests:?}").contains(SECRET));
}

#[tokio::test]
async fn static_tokens_are_added_and_removed_at_run_time() {
    let server = LoopbackApiServer::builder()
        .static_token("from-builder", "builder-user", &["system:masters"])
        .start()
        .await
        .unwrap();
    let by_builder: Api<Secret> =
        Api::namespaced(client_with_token(&server, "from-builder").await, "default");
    by_builder.list(&Default::default()).await.unwrap();
    assert_eq!(
        server.requests().last().unwrap().user.as_deref(),
        Some("builder-user")
    );

    server.add_static_token("later", "late-user", &["viewers"]);
    let client = client_with_token(&server, "later").await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    assert_eq!(
        status_code(secrets.list(&Default::default()).await.unwrap_err()).0,
        403
    );
    assert_eq!(
        server.requests().last().unwrap().user.as_deref(),
        Some("late-user")
    );
    // Discovery is open to any authenticated user.
    client.apiserver_version().await.unwrap();

    server.remove_static_token("later");
    assert_eq!(
        status_code(secrets.list(&Default::default()).await.unwrap_err()).0,
        401
    );
}

#[tokio::test]
async fn signer_signs_cluster_info_for_signing_tokens() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let secrets: Api<Secret> = Api::namespaced(admin(&server).await, "kube-system");
    let signature = |server: &LoopbackApiServer| {
        let cm = server
            .object("kube-public", "configmaps", "cluster-info")
            .unwrap();
        let kubeconfig = cm["data"]["kubeconfig"].as_str().unwrap().to_owned();
        let sig = cm["data"]
            .get(format!("jws-kubeconfig-{ID}"))
            .and_then(|v| v.as_str())
            .map(str::to_owned);
        (kubeconfig, sig)
    };
    assert_eq!(signature(&server).1, None);

    secrets
        .create(
            &PostParams::default(),
            &token_secret(ID, SECRET, "2999-01-01T00:00:00Z"),
        )
        .await
        .unwrap();
    let (kubeconfig, sig) = signature(&server);
    let sig = sig.expect("the signer wrote jws-kubeconfig-abcdef");
    jws_detached::verify_kubernetes(&sig, kubeconfig.as_bytes(), ID, SECRET.as_bytes()).unwrap();
    assert!(
        jws_detached::verify_kubernetes(&sig, kubeconfig.as_bytes(), ID, b"0123456789abcdeg")
            .is_err()
    );
    assert!(kubeconfig.contains(&server.url()));

    // Anyone may read it, as kubeadm's RBAC allows: the same signature comes back over HTTP.
    let anonymous = {
        let mut config = Config::new(server.url().parse().unwrap());
        config.root_cert = Some(vec![pem_to_der(server.ca_pem())]);
        Client::try_from(config).unwrap()
    };
    let cm = Api::<ConfigMap>::namespaced(anonymous, "kube-public")
        .get("cluster-info")
        .await
        .unwrap();
    assert_eq!(cm.data.unwrap()[&format!("jws-kubeconfig-{ID}")], sig);
    assert_eq!(server.requests().last().unwrap().user, None);

    secrets
        .delete(&format!("bootstrap-token-{ID}"), &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(signature(&server).1, None);
}

#[tokio::test]
async fn signer_off_and_no_cluster_info() {
    let server = LoopbackApiServer::builder()
        .cluster_info(false)
        .bootstrap_signer(false)
        .start()
        .await
        .unwrap();
    assert!(
        server
            .object("kube-public", "configmaps", "cluster-info")
            .is_none()
    );
    let inserted = server
        .insert(
            "kube-public",
            "configmaps",
            serde_json::json!({"metadata": {"name": "cluster-info"}, "data": {"kubeconfig": "x"}}),
        )
        .unwrap();
    assert_eq!(inserted["metadata"]["namespace"], "kube-public");
    server
        .insert(
            "kube-system",
            "secrets",
            serde_json::to_value(token_secret(ID, SECRET, "2999-01-01T00:00:00Z")).unwrap(),
        )
        .unwrap();
    let cm = server
        .object("kube-public", "configmaps", "cluster-info")
        .unwrap();
    assert!(cm["data"].get(format!("jws-kubeconfig-{ID}")).is_none());
    let err = server
        .insert(
            "kube-system",
            "secrets",
            serde_json::to_value(token_secret(ID, SECRET, "")).unwrap(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("409"), "{err}");
    server.shutdown().await;
}

fn pem_to_der(pem: &str) -> Vec<u8> {
    use base64::Engine as _;
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .unwrap()
}
