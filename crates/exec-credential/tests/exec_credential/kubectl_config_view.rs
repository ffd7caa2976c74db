//! Exec stanzas as `kubectl config view -o json` writes them: Go nil slices come out as `null`,
//! and Go reads a `null` anywhere as the zero value. The fixture `data/kubectl-config-view.json`
//! is kubectl v1.32's output for `data/kubeconfig-exec.yaml`; when `kubectl` is on `PATH`,
//! `kubectl_regenerates_the_fixture` produces it again and compares what this crate reads.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use exec_credential::{ApiVersion, ExecConfig, ExecCredential};
use serde_json::Value;

const FIXTURE: &str = include_str!("../data/kubectl-config-view.json");

/// Each user's `exec` object, by user name.
fn exec_objects(config_view: &str) -> BTreeMap<String, Value> {
    let doc: Value = serde_json::from_str(config_view).unwrap();
    doc["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["name"].as_str().unwrap().to_owned(),
                u["user"]["exec"].clone(),
            )
        })
        .collect()
}

fn parsed(config_view: &str) -> BTreeMap<String, ExecConfig> {
    exec_objects(config_view)
        .into_iter()
        .map(|(name, exec)| {
            let config: ExecConfig = serde_json::from_value(exec)
                .unwrap_or_else(|e| panic!("user {name}: exec stanza rejected: {e}"));
            (name, config)
        })
        .collect()
}

#[test]
fn kubectl_config_view_null_args_and_env_are_accepted() {
    let objects = exec_objects(FIXTURE);
    // The fixture really holds Go's nil slices.
    assert_eq!(objects["plain"]["args"], Value::Null);
    assert_eq!(objects["plain"]["env"], Value::Null);
    let users = parsed(FIXTURE);
    assert_eq!(users.len(), 4);

    let plain = &users["plain"];
    assert_eq!(plain.command, "my-plugin");
    assert!(plain.args.is_empty() && plain.env.is_empty());
    assert!(plain.validate("plain").is_ok());

    let beta = &users["beta"];
    assert_eq!(beta.args, ["get-token", "--client-secret=not-a-secret"]);
    assert_eq!(
        (beta.env[0].name.as_str(), beta.env[0].value.as_str()),
        ("PROFILE", "dev")
    );
    assert!(beta.provide_cluster_info);
    assert_eq!(beta.install_hint, "install it");
    // kubectl applied client-go's defaulting before printing.
    assert_eq!(beta.interactive_mode, "IfAvailable");
    assert!(beta.validate("beta").is_ok());

    // `env: [{name: A, value: null}, null]` became two entries, the second one empty, which
    // validation then rejects as client-go does.
    let nulls = &users["nulls"];
    assert_eq!(nulls.env.len(), 2);
    assert_eq!(
        (nulls.env[0].name.as_str(), nulls.env[0].value.as_str()),
        ("A", "")
    );
    assert_eq!(nulls.env[1].name, "");
    assert_eq!(
        nulls.validate("nulls").unwrap_err().to_string(),
        "env variable name must be specified for nulls to use exec authentication plugin"
    );

    let empty = &users["empty-values"];
    assert!(empty.args.is_empty() && empty.env.is_empty());
    assert!(empty.validate("empty-values").is_ok());
}

#[test]
fn exec_stanza_serialises_as_kubectl_writes_it() {
    for (name, kubectl) in exec_objects(FIXTURE) {
        let config: ExecConfig = serde_json::from_value(kubectl.clone()).unwrap();
        let ours = serde_json::to_value(&config).unwrap();
        assert_eq!(ours, kubectl, "user {name}");
        // Byte for byte, key order included: the compact form (whitespace removed) appears in
        // kubectl's indented output with its whitespace removed.
        let compact = serde_json::to_string(&config).unwrap().replace(' ', "");
        let fixture: String = FIXTURE.chars().filter(|c| !c.is_whitespace()).collect();
        assert!(fixture.contains(&compact), "user {name}: {compact}");
    }
}

#[test]
fn null_reads_as_the_zero_value_in_every_exec_config_field() {
    let all_null: ExecConfig = serde_json::from_str(
        r#"{"command":null,"args":null,"env":null,"apiVersion":null,"installHint":null,
            "provideClusterInfo":null,"interactiveMode":null}"#,
    )
    .unwrap();
    assert_eq!(all_null, ExecConfig::default());
    let elements: ExecConfig = serde_json::from_str(
        r#"{"command":"p","args":["a",null,"b"],"env":[null,{"name":null,"value":null}]}"#,
    )
    .unwrap();
    assert_eq!(elements.args, ["a", "", "b"]);
    assert_eq!(elements.env.len(), 2);
    assert!(
        elements
            .env
            .iter()
            .all(|e| e.name.is_empty() && e.value.is_empty())
    );
    // The JSON form of the fixture's `nulls` stanza reads as kubectl read it.
    let nulls: ExecConfig = serde_json::from_str(
        r#"{"apiVersion":"client.authentication.k8s.io/v1","command":"p","args":null,
            "env":[{"name":"A","value":null},null],"installHint":null,
            "provideClusterInfo":null,"interactiveMode":"Always"}"#,
    )
    .unwrap();
    assert_eq!(nulls, parsed(FIXTURE)["nulls"]);
    // Wrong types are still rejected.
    assert!(serde_json::from_str::<ExecConfig>(r#"{"args":"a"}"#).is_err());
    assert!(serde_json::from_str::<ExecConfig>(r#"{"provideClusterInfo":"yes"}"#).is_err());
}

#[test]
fn null_reads_as_the_zero_value_in_exec_credential_objects() {
    let request = ExecCredential::from_exec_info(
        r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","spec":{"cluster":{"server":null,"tls-server-name":null,"insecure-skip-tls-verify":null,"certificate-authority-data":null,"proxy-url":null,"disable-compression":null,"config":null},"interactive":null}}"#,
    )
    .unwrap();
    let cluster = request.cluster().unwrap();
    assert_eq!(cluster, &exec_credential::Cluster::default());
    assert!(!request.may_prompt());
    let response = ExecCredential::from_plugin_output(
        br#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","spec":null,"status":{"token":"t","expirationTimestamp":null,"clientCertificateData":null,"clientKeyData":null}}"#,
    )
    .unwrap();
    let status = response.status().unwrap();
    assert_eq!(status.bearer_token().unwrap().expose_secret(), "t");
    assert!(status.expiration().is_none() && status.client_certificate_data().is_none());
    assert_eq!(response.api_version(), ApiVersion::V1);
}

#[test]
fn kubectl_regenerates_the_fixture() {
    let version = Command::new("kubectl")
        .args(["version", "--client"])
        .output();
    if !matches!(&version, Ok(out) if out.status.success()) {
        println!("SKIP kubectl_regenerates_the_fixture: kubectl is not on PATH");
        return;
    }
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kubeconfig-exec.yaml");
    let out = Command::new("kubectl")
        .args(["config", "view", "-o", "json", "--raw", "--kubeconfig"])
        .arg(&input)
        .env_remove("KUBECONFIG")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fresh = String::from_utf8(out.stdout).unwrap();
    assert_eq!(parsed(&fresh), parsed(FIXTURE));
    assert_eq!(exec_objects(&fresh), exec_objects(FIXTURE));
}
