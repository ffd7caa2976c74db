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
#![cfg(feature = "exec")]

use crate::executable::write_executable;
use std::path::{Path, PathBuf};

use k8s_bootstrap::exec::{
    Error, ExecClient, ExecCredentials, KubeconfigOptions, kube_client, kube_client_with_exec,
    kube_config_without_exec,
};
use k8s_bootstrap::exec_credential::PluginPolicy;
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
    write_executable(&plugin, PLUGIN);
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

/// The client of the kubeconfig at `path`, independent of this machine's kuberc.
async fn client_of(path: &Path) -> ExecClient {
    kube_client(
        &KubeconfigOptions::infer()
            .kubeconfig(path)
            .plugin_policy(PluginPolicy::AllowAll),
    )
    .await
    .unwrap()
}

fn runs(counter: &Path) -> usize {
    std::fs::read_to_string(counter).map_or(0, |s| s.lines().count())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_token_rejected_plugin_reruns_and_request_is_retried_once() {
    // Only the second token the plugin hands out is accepted.
    let server = LoopbackApiServer::builder()
        .static_token("token-2", "exec-user", &["system:masters"])
        .start()
        .await
        .unwrap();
    let s = setup(&server);

    // Building the client does not run the plugin; the first request does (token-1).
    let built = client_of(&s.kubeconfig).await;
    assert_eq!(runs(&s.counter), 0, "building the client ran the plugin");
    let credentials = built.credentials().unwrap().clone();
    assert_eq!(credentials.plugin_runs(), 0);

    let api = kube::Api::<ConfigMap>::namespaced(built.into_client(), "default");
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
async fn thirty_two_concurrent_requests_with_an_empty_cache_run_the_plugin_once() {
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
    for _ in 0..32 {
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
    assert_eq!(ok, 32);
    server.shutdown().await;
}

#[tokio::test]
async fn a_token_the_server_never_accepts_is_refreshed_once_and_the_401_returned() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let s = setup(&server);
    let client = client_of(&s.kubeconfig).await.into_client();
    let api = kube::Api::<ConfigMap>::namespaced(client, "default");
    let err = api.list(&Default::default()).await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(status) if status.code == 401),
        "{err:?}"
    );
    assert!(Error::from_kube(&err).is_none());
    // One run for the request, one after the 401; the retry's 401 does not run it again.
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

/// Writes `cred-<n>.json` for each credential and a plugin that answers the `n`th run with
/// `cred-<n>.json`.
fn sequence_plugin(s: &Setup, credentials: &[serde_json::Value]) {
    let dir = s.kubeconfig.parent().unwrap();
    for (i, json) in credentials.iter().enumerate() {
        std::fs::write(dir.join(format!("cred-{}.json", i + 1)), json.to_string()).unwrap();
    }
    std::fs::write(
        dir.join("plugin.sh"),
        "#!/bin/sh\necho run >> \"$COUNTER\"\nn=$(wc -l < \"$COUNTER\")\ncat \"$(dirname \"$0\")/cred-$(echo $n).json\"\n",
    )
    .unwrap();
}

fn certificate_credential(cert: &str, key: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"clientCertificateData": cert, "clientKeyData": key},
    })
}

fn configmap_requests(server: &LoopbackApiServer) -> Vec<(u16, Option<String>)> {
    server
        .requests()
        .iter()
        .filter(|r| r.path == "/api/v1/namespaces/default/configmaps")
        .map(|r| (r.status, r.user.clone()))
        .collect()
}

#[tokio::test]
async fn a_401_on_a_certificate_only_credential_refreshes_and_retries_with_the_new_certificate() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let s = setup(&server);
    // The first certificate is signed by a CA the server does not know: 401. The second one is
    // the server's.
    let stranger = rcgen::generate_simple_self_signed(vec!["exec-stranger".to_owned()]).unwrap();
    let (cert, key) = server
        .issue_client_certificate("exec-cert-2", &["system:masters"])
        .unwrap();
    sequence_plugin(
        &s,
        &[
            certificate_credential(&stranger.cert.pem(), &stranger.key_pair.serialize_pem()),
            certificate_credential(&cert, &key),
        ],
    );
    let built = client_of(&s.kubeconfig).await;
    assert_eq!(runs(&s.counter), 0);
    let api = kube::Api::<ConfigMap>::namespaced(built.client().clone(), "default");
    api.list(&Default::default()).await.unwrap();
    assert_eq!(runs(&s.counter), 2);
    assert_eq!(
        configmap_requests(&server),
        [(401, None), (200, Some("exec-cert-2".to_owned()))]
    );
    // The new certificate stays in use.
    api.list(&Default::default()).await.unwrap();
    assert_eq!(
        configmap_requests(&server).last().unwrap(),
        &(200, Some("exec-cert-2".to_owned()))
    );
    assert_eq!(runs(&s.counter), 2);
    server.shutdown().await;
}

#[tokio::test]
async fn certificates_follow_rotation_at_expiry() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let s = setup(&server);
    let (cert1, key1) = server
        .issue_client_certificate("exec-cert-1", &["system:masters"])
        .unwrap();
    let (cert2, key2) = server
        .issue_client_certificate("exec-cert-2", &["system:masters"])
        .unwrap();
    // The first credential has expired when it arrives: it is used for the request that ran
    // the plugin and reused for a second after it arrived, then the plugin runs again.
    let mut first = certificate_credential(&cert1, &key1);
    first["status"]["expirationTimestamp"] = "2020-01-01T00:00:00Z".into();
    sequence_plugin(&s, &[first, certificate_credential(&cert2, &key2)]);
    let client = client_of(&s.kubeconfig).await.into_client();
    let api = kube::Api::<ConfigMap>::namespaced(client, "default");
    api.list(&Default::default()).await.unwrap();
    tokio::time::sleep(
        k8s_bootstrap::exec_credential::DEFAULT_STALE_CREDENTIAL_REUSE
            + std::time::Duration::from_millis(200),
    )
    .await;
    api.list(&Default::default()).await.unwrap();
    assert_eq!(
        configmap_requests(&server),
        [
            (200, Some("exec-cert-1".to_owned())),
            (200, Some("exec-cert-2".to_owned()))
        ]
    );
    assert_eq!(runs(&s.counter), 2);
    server.shutdown().await;
}

#[tokio::test]
async fn a_kuberc_deny_all_policy_stops_the_plugin_and_the_error_is_one_step_away() {
    let server = LoopbackApiServer::builder()
        .static_token("token-1", "exec-user", &["system:masters"])
        .start()
        .await
        .unwrap();
    let s = setup(&server);
    let kuberc = s.kubeconfig.parent().unwrap().join("kuberc");
    std::fs::write(
        &kuberc,
        "apiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\ncredentialPluginPolicy: DenyAll\n",
    )
    .unwrap();
    let options = KubeconfigOptions::infer()
        .kubeconfig(&s.kubeconfig)
        .kuberc(&kuberc);
    let client = kube_client(&options).await.unwrap().into_client();
    let api = kube::Api::<ConfigMap>::namespaced(client, "default");
    let err = api.list(&Default::default()).await.unwrap_err();
    let Some(Error::Authenticator(inner)) = Error::from_kube(&err) else {
        panic!("{err:?}")
    };
    // kubectl v1.37's message for the same kuberc.
    let plugin = s.kubeconfig.parent().unwrap().join("plugin.sh");
    assert_eq!(
        inner.to_string(),
        format!(
            "plugin {:?} not allowed: policy set to \"DenyAll\"",
            plugin.display().to_string()
        )
    );
    assert_eq!(runs(&s.counter), 0);
    assert!(ExecCredentials::from_options(&options).await.is_ok());

    // A kuberc kubectl refuses is refused when the client is built.
    std::fs::write(
        &kuberc,
        "apiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\ncredentialPluginPolicy: Allowlist\n",
    )
    .unwrap();
    let err = kube_client(&options).await.unwrap_err();
    assert!(
        err.to_string().ends_with(
            "credential plugin policy set to \"Allowlist\", but allowlist is unspecified"
        ),
        "{err}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn an_allowlist_entry_admits_the_command_it_resolves_to_on_path() {
    let server = LoopbackApiServer::builder()
        .static_token("token-1", "exec-user", &["system:masters"])
        .start()
        .await
        .unwrap();
    let s = setup(&server);
    // The command is the absolute path `sh` resolves to; the allow-list names `sh`. kubectl
    // admits it after resolving both (a string comparison alone would refuse it).
    let sh = k8s_bootstrap::exec::look_path("sh").expect("sh on PATH");
    let plugin = s.kubeconfig.parent().unwrap().join("plugin.sh");
    let yaml = std::fs::read_to_string(&s.kubeconfig).unwrap().replace(
        "command: ./plugin.sh\n",
        &format!(
            "command: {}\n      args: [\"{}\"]\n",
            sh.display(),
            plugin.display()
        ),
    );
    std::fs::write(&s.kubeconfig, yaml).unwrap();
    let options = KubeconfigOptions::infer()
        .kubeconfig(&s.kubeconfig)
        .plugin_policy(PluginPolicy::allowlist(["sh"]).unwrap());
    let client = kube_client(&options).await.unwrap().into_client();
    let api = kube::Api::<ConfigMap>::namespaced(client, "default");
    api.list(&Default::default()).await.unwrap();
    assert_eq!(runs(&s.counter), 1);

    // An entry for another program still refuses it.
    let options = options.plugin_policy(PluginPolicy::allowlist(["/usr/bin/kubelogin"]).unwrap());
    let client = kube_client(&options).await.unwrap().into_client();
    let err = kube::Api::<ConfigMap>::namespaced(client, "default")
        .list(&Default::default())
        .await
        .unwrap_err();
    assert!(
        matches!(
            Error::from_kube(&err),
            Some(Error::Authenticator(
                k8s_bootstrap::exec_credential::Error::PolicyDenied(_)
            ))
        ),
        "{err:?}"
    );
    assert_eq!(runs(&s.counter), 1);
    server.shutdown().await;
}

#[tokio::test]
async fn users_without_an_exec_stanza_get_a_working_client() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    // A token user.
    let admin = dir.path().join("admin.conf");
    std::fs::write(&admin, server.admin_kubeconfig_yaml()).unwrap();
    let built = client_of(&admin).await;
    assert!(built.credentials().is_none());
    kube::Api::<ConfigMap>::namespaced(built.into_client(), "default")
        .list(&Default::default())
        .await
        .unwrap();
    // A client-certificate user.
    let (cert, key) = server
        .issue_client_certificate("cert-user", &["system:masters"])
        .unwrap();
    let certified = dir.path().join("cert.conf");
    std::fs::write(
        &certified,
        server.kubeconfig_with_client_certificate(&cert, &key),
    )
    .unwrap();
    let built = client_of(&certified).await;
    assert!(built.credentials().is_none());
    kube::Api::<ConfigMap>::namespaced(built.into_client(), "default")
        .list(&Default::default())
        .await
        .unwrap();
    let users: Vec<Option<String>> = server.requests().iter().map(|r| r.user.clone()).collect();
    assert!(users.contains(&Some("cert-user".to_owned())), "{users:?}");
    // The exec-only entry points still say what is missing.
    assert!(matches!(
        ExecCredentials::from_kubeconfig(&admin, None).await,
        Err(Error::NoExecStanza { .. })
    ));
    server.shutdown().await;
}
