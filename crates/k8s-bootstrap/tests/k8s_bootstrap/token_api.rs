//! `k8s_bootstrap::token` against the loopback API server with a real `kube::Client`.

#![allow(clippy::disallowed_methods, reason = "tests read the wall clock")]
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic,
    reason = "test helpers outside #[test] functions"
)]

use std::time::SystemTime;

use k8s_bootstrap::bootstrap_token::{BootstrapToken, KubeadmToken, SecretObject};
use k8s_bootstrap::token::{self, Error, Operation};
use k8s_openapi::api::core::v1::Secret;
use kube::config::{KubeConfigOptions, Kubeconfig};
use loopback_apiserver::LoopbackApiServer;

async fn client(kubeconfig_yaml: &str) -> kube::Client {
    let kubeconfig = Kubeconfig::from_yaml(kubeconfig_yaml).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

async fn admin_api(server: &LoopbackApiServer) -> kube::Api<Secret> {
    token::secrets_api(client(&server.admin_kubeconfig_yaml()).await)
}

#[tokio::test]
async fn create_list_delete_round_trip() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let api = admin_api(&server).await;

    // create: kubeadm's defaults, a generated token.
    let now = SystemTime::now();
    let mut options = KubeadmToken::new(None);
    options.description = "round trip".to_owned();
    let created = token::create(&api, options, now).await.unwrap();
    let id = *created.id();
    assert_eq!(created.options().usages, ["signing", "authentication"]);
    assert_eq!(
        created.options().groups,
        ["system:bootstrappers:kubeadm:default-node-token"]
    );
    assert!(!format!("{created:?}").contains(created.token().secret().expose_secret()));

    // The stored Secret is exactly what the core builds for these options at `now`.
    let mut expected_options = KubeadmToken::new(Some(created.token().clone())).with_defaults();
    expected_options.description = "round trip".to_owned();
    let expected = expected_options.to_secret_object(now).unwrap();
    assert_eq!(created.secret(), &expected);
    let stored = api.get(&id.secret_name()).await.unwrap();
    let stored = SecretObject::try_from(&stored).unwrap();
    assert_eq!(stored.name(), expected.name());
    assert_eq!(stored.namespace(), "kube-system");
    assert_eq!(stored.secret_type(), "bootstrap.kubernetes.io/token");
    assert_eq!(stored.data_map(), expected.data_map());

    // list: the token with the core's row; TTL 23h (or 1d at the same second) as it formats.
    let later = SystemTime::now();
    let listed = token::list(&api, later).await.unwrap();
    assert!(listed.skipped.is_empty());
    assert_eq!(listed.tokens.len(), 1);
    let row = &listed.tokens[0];
    assert_eq!(row.token.as_ref(), Some(created.token()));
    assert_eq!(row.description, "round trip");
    let from_core = KubeadmToken::from_secret(&expected).unwrap();
    assert_eq!(
        listed.to_table(),
        KubeadmToken::format_list(&[from_core], later)
    );
    let table = listed.to_table();
    let data_line = table.lines().nth(1).unwrap();
    let ttl = data_line.split_whitespace().nth(1).unwrap();
    assert!(ttl == "23h" || ttl == "1d", "ttl {ttl} in {table}");
    assert!(data_line.starts_with(&created.token().to_string()));

    // A second create with the same token: AlreadyExists naming the ID.
    let again = KubeadmToken::new(Some(created.token().clone()));
    let err = token::create(&api, again, now).await.unwrap_err();
    assert!(
        matches!(err, Error::AlreadyExists { id: e } if e == id),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        format!("a token with id {:?} already exists", id.as_str())
    );

    // delete by ID, then NotFound naming the token on a second delete.
    assert_eq!(token::delete(&api, id.as_str()).await.unwrap(), id);
    assert!(api.get_opt(&id.secret_name()).await.unwrap().is_none());
    let err = token::delete(&api, id.as_str()).await.unwrap_err();
    match &err {
        Error::NotFound {
            operation: Operation::Delete { id: e },
            ..
        } => assert_eq!(*e, id),
        other => panic!("expected NotFound, got {other:?}"),
    }
    assert!(
        err.to_string().starts_with(&format!(
            "failed to delete bootstrap token {:?}: not found",
            id.as_str()
        )),
        "{err}"
    );

    // delete by the whole token.
    let t: BootstrapToken = "abcdef.0123456789abcdef".parse().unwrap();
    let mut options = KubeadmToken::new(Some(t.clone()));
    options.ttl = Some(std::time::Duration::ZERO);
    let created = token::create(&api, options, now).await.unwrap();
    assert!(created.secret().data("expiration").is_none());
    let listed = token::list(&api, SystemTime::now()).await.unwrap();
    assert!(listed.to_table().contains("<forever>"));
    assert_eq!(
        token::delete(&api, "abcdef.0123456789abcdef")
            .await
            .unwrap()
            .as_str(),
        "abcdef"
    );
    assert!(
        api.get_opt("bootstrap-token-abcdef")
            .await
            .unwrap()
            .is_none()
    );

    // A malformed argument is rejected without echoing it.
    let err = token::delete(&api, "abcdef.short").await.unwrap_err();
    assert!(matches!(err, Error::DeleteArgument));
    assert!(!err.to_string().contains("short"));

    server.shutdown().await;
}

#[tokio::test]
async fn invalid_options_are_rejected_before_the_server() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let api = admin_api(&server).await;
    let mut options = KubeadmToken::new(None);
    options.usages = vec!["signing".to_owned(), "bogus".to_owned()];
    let err = token::create(&api, options, SystemTime::now())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Invalid(_)), "{err}");
    assert!(
        err.to_string()
            .contains("invalid bootstrap token usage string: bogus"),
        "{err}"
    );
    assert!(
        token::list(&api, SystemTime::now())
            .await
            .unwrap()
            .tokens
            .is_empty()
    );
    server.shutdown().await;
}

#[tokio::test]
async fn malformed_secrets_are_skipped() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let api = admin_api(&server).await;
    server
        .insert(
            "kube-system",
            "secrets",
            serde_json::json!({
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "bootstrap-token-zzzzzz", "namespace": "kube-system"},
                "type": "bootstrap.kubernetes.io/token",
                // token-id does not match the name.
                "data": {"token-id": "YWJjZGVm", "token-secret": "MDEyMzQ1Njc4OWFiY2RlZg=="}
            }),
        )
        .unwrap();
    server
        .insert(
            "kube-system",
            "secrets",
            serde_json::json!({
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "not-a-token", "namespace": "kube-system"},
                "type": "Opaque",
                "data": {"x": "eA=="}
            }),
        )
        .unwrap();
    let created = token::create(&api, KubeadmToken::new(None), SystemTime::now())
        .await
        .unwrap();
    let listed = token::list(&api, SystemTime::now()).await.unwrap();
    assert_eq!(listed.tokens.len(), 1);
    assert_eq!(listed.tokens[0].token.as_ref(), Some(created.token()));
    assert_eq!(listed.skipped.len(), 1);
    assert_eq!(listed.skipped[0].name, "bootstrap-token-zzzzzz");
    assert!(
        !listed.skipped[0]
            .error
            .to_string()
            .contains("0123456789abcdef")
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_user_without_rights_gets_forbidden() {
    let server = LoopbackApiServer::builder().start().await.unwrap();
    let plain_token = "plain-user-token-0123456789";
    server.add_static_token(plain_token, "alice", &["system:authenticated"]);
    let yaml = server
        .admin_kubeconfig_yaml()
        .replace(server.admin_token(), plain_token);
    let api = token::secrets_api(client(&yaml).await);

    let err = token::create(&api, KubeadmToken::new(None), SystemTime::now())
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Forbidden {
                operation: Operation::Create { .. },
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with("failed to create bootstrap token"),
        "{err}"
    );

    let err = token::list(&api, SystemTime::now()).await.unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Forbidden {
                operation: Operation::List,
                ..
            }
        ),
        "{err:?}"
    );

    let err = token::delete(&api, "abcdef").await.unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Forbidden {
                operation: Operation::Delete { .. },
                ..
            }
        ),
        "{err:?}"
    );
    // Nothing was created by the forbidden call.
    let admin = admin_api(&server).await;
    assert!(
        token::list(&admin, SystemTime::now())
            .await
            .unwrap()
            .tokens
            .is_empty()
    );
    server.shutdown().await;
}

#[test]
fn generate_gives_valid_distinct_tokens() {
    let a = token::generate().unwrap();
    let b = token::generate().unwrap();
    assert_ne!(a, b);
    assert_eq!(a.to_string().parse::<BootstrapToken>().unwrap(), a);
}
