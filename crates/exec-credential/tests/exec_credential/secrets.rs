//! Secret hygiene: tokens, keys and plugin output never reach `Debug`, `Display` or errors.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::time::{Duration, UNIX_EPOCH};

use exec_credential::{
    Action, ApiVersion, ClientKey, Cluster, CredentialState, ExecAuthenticator, ExecConfig,
    ExecCredential, ExecCredentialStatus, InteractiveMode, RunResult, Token,
};

const CANARY: &str = "CANARY-7f3a9c";
const CERT1: &str = include_str!("../data/client1.crt");
const KEY1: &str = include_str!("../data/client1.key");

fn key_body() -> &'static str {
    KEY1.lines().nth(1).unwrap()
}

#[test]
fn debug_of_every_carrier_is_redacted() {
    let status = ExecCredentialStatus::with_token(Token::new(CANARY))
        .client_certificate(CERT1, ClientKey::new(KEY1));
    let resp = ExecCredential::response(ApiVersion::V1, status.clone());
    for dbg in [
        format!("{status:?}"),
        format!("{resp:?}"),
        format!("{:?}", Token::new(CANARY)),
    ] {
        assert!(!dbg.contains(CANARY), "{dbg}");
        assert!(!dbg.contains(key_body()), "{dbg}");
    }
    let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let cred = resp.clone().into_credential(ApiVersion::V1, now).unwrap();
    let dbg = format!("{cred:?}");
    assert!(!dbg.contains(CANARY) && !dbg.contains(key_body()), "{dbg}");
    // The wire form carries them, of course.
    assert!(resp.to_json().contains(CANARY));
}

#[test]
fn secrets_compare_by_value_in_constant_time() {
    assert_eq!(Token::new(CANARY), Token::new(CANARY));
    assert_ne!(Token::new(CANARY), Token::new("CANARY-7f3a9d"));
    assert_eq!(ClientKey::new(KEY1), ClientKey::new(KEY1));
    assert_ne!(ClientKey::new(KEY1), ClientKey::new(""));
}

#[test]
fn row62_failed_plugin_output_is_never_in_errors() {
    let mut a = ExecAuthenticator::new(
        ExecConfig::new("p", ApiVersion::V1, InteractiveMode::Never),
        Cluster::new("https://x"),
    )
    .unwrap();
    let now = UNIX_EPOCH + Duration::from_secs(1);
    let stdout = format!(
        r#"{{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{{"token":"{CANARY}"}}}}"#
    );
    let stderr = format!("token={CANARY}");
    let _ = a.credential(now).unwrap();
    let Some(Action::RunPlugin(run)) = a.poll_action() else {
        panic!()
    };
    let e = a
        .handle_run_result(
            now,
            run.id(),
            RunResult::Exited {
                code: 1,
                stdout: stdout.as_bytes(),
                stderr: stderr.as_bytes(),
            },
        )
        .unwrap_err();
    assert!(!e.to_string().contains(CANARY));
    assert!(!format!("{e:?}").contains(CANARY));
    // The failed run's output was not used: nothing is cached, and once the backoff after the
    // failure ends the plugin runs again.
    assert!(a.cached(now).is_none());
    assert!(matches!(
        a.credential(now + Duration::from_secs(1)).unwrap(),
        CredentialState::Pending(_)
    ));
}

#[test]
fn exec_info_and_runs_carry_no_secret() {
    let mut a = ExecAuthenticator::new(
        ExecConfig::new("p", ApiVersion::V1, InteractiveMode::Never).provide_cluster_info(true),
        Cluster::new("https://x"),
    )
    .unwrap();
    let now = UNIX_EPOCH + Duration::from_secs(1);
    let _ = a.credential(now).unwrap();
    let Some(Action::RunPlugin(run)) = a.poll_action() else {
        panic!()
    };
    let out = format!(
        r#"{{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{{"token":"{CANARY}"}}}}"#
    );
    a.handle_run_result(
        now,
        run.id(),
        RunResult::Exited {
            code: 0,
            stdout: out.as_bytes(),
            stderr: b"",
        },
    )
    .unwrap();
    assert!(
        !format!("{a:?}").contains(CANARY),
        "the authenticator's Debug redacts the cached token"
    );
    // A refresh run's exec info does not contain the previous token.
    let id = a.cached(now).unwrap().id();
    a.handle_unauthorized(now, id).unwrap().unwrap();
    let Some(Action::RunPlugin(run)) = a.poll_action() else {
        panic!()
    };
    assert!(!format!("{run:?}").contains(CANARY));
}

#[test]
fn kubeconfig_env_values_are_hidden_from_debug() {
    let config = ExecConfig::new("aws", ApiVersion::V1, InteractiveMode::Never)
        .env("AWS_SECRET_ACCESS_KEY", CANARY);
    assert!(!format!("{config:?}").contains(CANARY));
    assert!(format!("{config:?}").contains("AWS_SECRET_ACCESS_KEY"));
    let mut a = ExecAuthenticator::new(config, Cluster::new("https://x")).unwrap();
    let now = UNIX_EPOCH + Duration::from_secs(1);
    let _ = a.credential(now).unwrap();
    let Some(Action::RunPlugin(run)) = a.poll_action() else {
        panic!()
    };
    assert!(!format!("{run:?}").contains(CANARY));
    assert!(!format!("{a:?}").contains(CANARY));
    // The run itself carries the value, of course.
    assert_eq!(
        run.env()[0],
        ("AWS_SECRET_ACCESS_KEY".to_owned(), CANARY.to_owned())
    );
}
