//! `kube::Client` with the exec layer against the loopback API server, with a real plugin
//! process.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::type_complexity
)]
#![cfg(all(feature = "exec", feature = "loopback-server"))]

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use k8s_bootstrap::exec::{
    ExecCredentials, kube_client_from_kubeconfig, kube_client_with_exec, kube_config_without_exec,
};
use k8s_openapi::api::core::v1::ConfigMap;
use loopback_apiserver::LoopbackApiServer;

/// Appends a line to `$COUNTER` and answers with `token-<number of lines>`.
const PLUGIN: &str = r#"#!/bin/sh
echo run >> "$COUNTER"
n=$(wc -l < "$COUNTER")
n=$(echo $n)
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"token-%s"}}\n' "$n"
"#;

struct Setup {
    _dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    counter: PathBuf,
}

/// A kubeconfig for `server` whose user runs `./plugin.sh` (relative to the kubeconfig's
/// directory, as client-go resolves it).
fn setup(server: &LoopbackApiServer) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let plugin = dir.path().join("plugin.sh");
    std::fs::write(&plugin, PLUGIN).unwrap();
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let ca = dir.path().join("ca.crt");
    std::fs::write(&ca, server.ca_pem()).unwrap();
    let counter = dir.path().join("runs");
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: loopback\n  cluster:\n    server: {url}\n    certificate-authority: ca.crt\nusers:\n- name: exec-user\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: ./plugin.sh\n      interactiveMode: Never\n      env:\n      - name: COUNTER\n        value: {counter}\ncontexts:\n- name: loopback\n  context:\n    cluster: loopback\n    user: exec-user\ncurrent-context: loopback\n",
            url = server.url(),
            counter = counter.display(),
        ),
    )
    .unwrap();
    Setup {
        _dir: dir,
        kubeconfig,
        counter,
    }
}

fn runs(counter: &Path) -> usize {
    std::fs::read_to_string(counter).map_or(0, |s| s.lines().count())
}

#[tokio::test]
async fn first_token_rejected_plugin_reruns_and_request_is_retried_once() {
    // Only the second token the plugin hands out is accepted.
    let server = LoopbackApiServer::builder()
        .static_token("token-2", "exec-user", &["system:masters"])
        .start()
        .await
        .unwrap();
    let s = setup(&server);

    // Builds the client and runs the plugin once (token-1).
    let (client, credentials) = kube_client_from_kubeconfig(&s.kubeconfig, None)
        .await
        .unwrap();
    assert_eq!(runs(&s.counter), 1);

    let api = kube::Api::<ConfigMap>::namespaced(client, "default");
    api.list(&Default::default()).await.unwrap();

    assert_eq!(runs(&s.counter), 2, "the plugin ran again after the 401");
    assert_eq!(credentials.plugin_runs(), 2);
    let statuses: Vec<u16> = server
        .requests()
        .iter()
        .filter(|r| r.path == "/api/v1/namespaces/default/configmaps")
        .map(|r| r.status)
        .collect();
    assert_eq!(statuses, [401, 200]);

    // The refreshed token is cached: no further run.
    api.list(&Default::default()).await.unwrap();
    assert_eq!(runs(&s.counter), 2);
    server.shutdown().await;
}

#[tokio::test]
async fn twenty_concurrent_requests_with_an_empty_cache_run_the_plugin_once() {
    let server = LoopbackApiServer::builder()
        .static_token("token-1", "exec-user", &["system:masters"])
        .start()
        .await
        .unwrap();
    let s = setup(&server);
    let credentials = ExecCredentials::from_kubeconfig(&s.kubeconfig, Some("loopback"))
        .await
        .unwrap();
    let config = kube_config_without_exec(&s.kubeconfig, Some("loopback"))
        .await
        .unwrap();
    assert!(
        config.auth_info.exec.is_none(),
        "kube must not run the plugin"
    );
    let client = kube_client_with_exec(config, &credentials, None).unwrap();
    assert_eq!(runs(&s.counter), 0);

    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..20 {
        let api = kube::Api::<ConfigMap>::namespaced(client.clone(), "default");
        tasks.spawn(async move { api.list(&Default::default()).await.map(|_| ()) });
    }
    while let Some(result) = tasks.join_next().await {
        result.unwrap().unwrap();
    }
    assert_eq!(runs(&s.counter), 1);
    assert_eq!(credentials.plugin_runs(), 1);
    let ok = server
        .requests()
        .iter()
        .filter(|r| r.path == "/api/v1/namespaces/default/configmaps" && r.status == 200)
        .count();
    assert_eq!(ok, 20);
    server.shutdown().await;
}

#[tokio::test]
async fn a_token_the_server_never_accepts_is_refreshed_once_and_the_401_returned() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let s = setup(&server);
    let (client, _credentials) = kube_client_from_kubeconfig(&s.kubeconfig, None)
        .await
        .unwrap();
    let api = kube::Api::<ConfigMap>::namespaced(client, "default");
    let err = api.list(&Default::default()).await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(status) if status.code == 401),
        "{err:?}"
    );
    // One run at build time, one after the 401; the retry's 401 does not run it again.
    assert_eq!(runs(&s.counter), 2);
    let statuses: Vec<u16> = server
        .requests()
        .iter()
        .filter(|r| r.path == "/api/v1/namespaces/default/configmaps")
        .map(|r| r.status)
        .collect();
    assert_eq!(statuses, [401, 401]);
    server.shutdown().await;
}

#[tokio::test]
async fn client_certificates_are_published_and_rotations_announced() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let s = setup(&server);
    let dir = s.kubeconfig.parent().unwrap().to_path_buf();
    let mut pems = Vec::new();
    for n in 1..=2 {
        let key = rcgen::generate_simple_self_signed(vec![format!("exec-user-{n}")]).unwrap();
        let (cert, key) = (key.cert.pem(), key.key_pair.serialize_pem());
        let json = serde_json::json!({
            "apiVersion": "client.authentication.k8s.io/v1",
            "kind": "ExecCredential",
            "status": {"clientCertificateData": cert, "clientKeyData": key},
        });
        std::fs::write(dir.join(format!("cred-{n}.json")), json.to_string()).unwrap();
        pems.push(cert);
    }
    std::fs::write(
        dir.join("plugin.sh"),
        "#!/bin/sh\necho run >> \"$COUNTER\"\nn=$(wc -l < \"$COUNTER\")\ncat \"$(dirname \"$0\")/cred-$(echo $n).json\"\n",
    )
    .unwrap();

    let credentials = ExecCredentials::from_kubeconfig(&s.kubeconfig, None)
        .await
        .unwrap();
    let mut identities = credentials.subscribe_client_identity();
    assert!(identities.borrow_and_update().is_none());

    let first = credentials.credential().await.unwrap();
    assert!(first.token().is_none());
    assert!(identities.has_changed().unwrap());
    let identity = identities.borrow_and_update().clone().unwrap();
    assert_eq!(identity.certificate_pem(), pems[0]);
    assert_eq!(identity.credential_id(), first.id());
    assert_eq!(format!("{:?}", identity.key()), "ClientKey(<redacted>)");

    // A client presenting that certificate builds (kube parses the PEM pair).
    let config = kube_config_without_exec(&s.kubeconfig, None).await.unwrap();
    kube_client_with_exec(config.clone(), &credentials, Some(&identity)).unwrap();

    // After a 401 the plugin returns another certificate: the rotation is announced.
    let second = credentials
        .refresh_after_unauthorized(first.id())
        .await
        .unwrap();
    assert_ne!(second.id(), first.id());
    identities.changed().await.unwrap();
    let rotated = identities.borrow_and_update().clone().unwrap();
    assert_eq!(rotated.certificate_pem(), pems[1]);
    assert_eq!(rotated.credential_id(), second.id());
    kube_client_with_exec(config, &credentials, Some(&rotated)).unwrap();
    assert_eq!(runs(&s.counter), 2);
    server.shutdown().await;
}
