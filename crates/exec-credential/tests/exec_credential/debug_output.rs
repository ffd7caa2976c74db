//! What `Debug` prints for values that are large or may hold secrets.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use exec_credential::Cluster;
use sha2::{Digest as _, Sha256};

const CERT1: &str = include_str!("../data/client1.crt");
const CERT2: &str = include_str!("../data/client2.crt");

#[test]
fn cluster_debug_summarises_the_ca_bundle() {
    let bundle = format!("{CERT1}{CERT2}");
    let cluster =
        Cluster::new("https://10.0.0.1:6443").with_certificate_authority_data(bundle.clone());
    let hex: String = Sha256::digest(bundle.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let want = format!(
        "certificate_authority_data: \"{} bytes, 2 PEM certificates, sha256:{hex}\"",
        bundle.len()
    );
    for debug in [format!("{cluster:?}"), format!("{cluster:#?}")] {
        assert!(debug.contains(&want), "{debug}");
        // Not the bytes as decimal numbers (`-----BEGIN` is 45, 45, ...).
        assert!(!debug.contains("45, 45"), "{debug}");
        assert!(debug.len() < 600, "{} characters: {debug}", debug.len());
        assert!(debug.contains("https://10.0.0.1:6443"));
    }
    let one = Cluster::new("s").with_certificate_authority_data(CERT1);
    assert!(format!("{one:?}").contains(" bytes, 1 PEM certificate, sha256:"));
    let none = Cluster::new("s");
    assert!(format!("{none:?}").contains("certificate_authority_data: \"empty\""));
    let not_pem = Cluster::new("s").with_certificate_authority_data(vec![0_u8; 3]);
    assert!(format!("{not_pem:?}").contains("\"3 bytes, 0 PEM certificates, sha256:"));
}

#[test]
fn exec_config_and_plugin_run_debug_redact_arguments_as_client_go() {
    use exec_credential::{Action, ApiVersion, ExecAuthenticator, ExecConfig, InteractiveMode};
    let config = ExecConfig::new("aws", ApiVersion::V1, InteractiveMode::Never)
        .arg("--client-secret=s3cr3t-arg")
        .arg("plain-arg")
        .env("AWS_SECRET", "s3cr3t-env");
    let debug = format!("{config:?}");
    assert!(debug.contains(r#"args: ["--- REDACTED ---"]"#), "{debug}");
    assert!(
        debug.contains(r#"name: "AWS_SECRET", value: "--- REDACTED ---""#),
        "{debug}"
    );
    for leaked in ["s3cr3t", "plain-arg", "client-secret"] {
        assert!(!debug.contains(leaked), "{debug}");
    }
    let no_args = ExecConfig::new("aws", ApiVersion::V1, InteractiveMode::Never);
    assert!(format!("{no_args:?}").contains("args: []"));

    let cluster = Cluster::new("s").with_config(serde_json::json!({"k": "s3cr3t-ext"}));
    let debug = format!("{cluster:?}");
    assert!(
        debug.contains(r#"config: Some("--- REDACTED ---")"#),
        "{debug}"
    );

    let mut auth = ExecAuthenticator::new(config, cluster).unwrap();
    let _ = auth.credential(std::time::SystemTime::UNIX_EPOCH).unwrap();
    let debug = format!("{auth:#?}");
    assert!(
        !debug.contains("s3cr3t") && !debug.contains("plain-arg"),
        "{debug}"
    );
    let Some(Action::RunPlugin(run)) = auth.poll_action() else {
        panic!("no run")
    };
    let debug = format!("{run:?}");
    assert!(debug.contains(r#"args: ["--- REDACTED ---"]"#), "{debug}");
    assert!(
        !debug.contains("s3cr3t") && !debug.contains("plain-arg"),
        "{debug}"
    );
}

/// client-go decodes YAML plugin output by converting it to JSON first: a bare number where a
/// string belongs is a type error there too, not a token.
#[test]
fn yaml_numeric_token_is_a_type_error_as_in_json() {
    let yaml = b"apiVersion: client.authentication.k8s.io/v1\nkind: ExecCredential\nstatus:\n  token: 123456789123\n";
    let err = exec_credential::ExecCredential::from_plugin_output(yaml).unwrap_err();
    let shown = format!("{err} {err:?}");
    assert!(!shown.contains("123456789123"), "{shown}");
    assert!(shown.contains("wrong type or value"), "{shown}");
    let quoted = b"apiVersion: client.authentication.k8s.io/v1\nkind: ExecCredential\nstatus:\n  token: \"123456789123\"\n";
    let cred = exec_credential::ExecCredential::from_plugin_output(quoted).unwrap();
    assert!(cred.status().is_some());
    // Duplicate keys are refused in YAML as in JSON.
    let dup = b"apiVersion: client.authentication.k8s.io/v1\nkind: ExecCredential\nstatus:\n  token: a\n  token: b\n";
    assert!(exec_credential::ExecCredential::from_plugin_output(dup).is_err());
}
