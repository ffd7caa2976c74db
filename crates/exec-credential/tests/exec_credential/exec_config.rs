//! The kubeconfig `user.exec` stanza: defaulting and validation with client-go's messages.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::path::Path;

use exec_credential::{ApiVersion, ExecConfig, InteractiveMode};

fn stanza(json: &str) -> ExecConfig {
    serde_json::from_str(json).unwrap()
}

#[test]
fn kubeconfig_stanza_deserialises() {
    let c = stanza(
        r#"{"command":"aws","args":["eks","get-token"],"env":[{"name":"AWS_PROFILE","value":"dev"}],
            "apiVersion":"client.authentication.k8s.io/v1","installHint":"install aws",
            "provideClusterInfo":true,"interactiveMode":"IfAvailable","futureField":1}"#,
    );
    assert_eq!(c.command, "aws");
    assert_eq!(c.args, ["eks", "get-token"]);
    assert_eq!(c.env[0].name, "AWS_PROFILE");
    assert_eq!(c.env[0].value, "dev");
    assert!(c.provide_cluster_info);
    assert_eq!(c.interactive_mode, "IfAvailable");
    assert!(c.validate("u").is_ok());
}

#[test]
fn client_go_validation_messages() {
    let cases = [
        (
            r#"{"apiVersion":"client.authentication.k8s.io/v1","interactiveMode":"Never"}"#,
            "command must be specified for alice to use exec authentication plugin",
        ),
        (
            r#"{"command":"x","interactiveMode":"Never"}"#,
            "apiVersion must be specified for alice to use exec authentication plugin",
        ),
        (
            r#"{"command":"x","apiVersion":"client.authentication.k8s.io/v1","interactiveMode":"Never","env":[{"value":"v"}]}"#,
            "env variable name must be specified for alice to use exec authentication plugin",
        ),
        (
            r#"{"command":"x","apiVersion":"client.authentication.k8s.io/v1"}"#,
            "interactiveMode must be specified for alice to use exec authentication plugin",
        ),
        (
            r#"{"command":"x","apiVersion":"client.authentication.k8s.io/v1","interactiveMode":"Sometimes"}"#,
            "invalid interactiveMode for alice: \"Sometimes\"",
        ),
    ];
    for (json, want) in cases {
        let mut c = stanza(json);
        c.apply_defaults();
        assert_eq!(c.validate("alice").unwrap_err().to_string(), want, "{json}");
    }
}

#[test]
fn interactive_mode_defaults_only_for_v1beta1() {
    let mut beta = stanza(r#"{"command":"x","apiVersion":"client.authentication.k8s.io/v1beta1"}"#);
    beta.apply_defaults();
    assert_eq!(beta.interactive_mode, "IfAvailable");
    assert!(beta.validate("u").is_ok());
    let mut v1 = stanza(r#"{"command":"x","apiVersion":"client.authentication.k8s.io/v1"}"#);
    v1.apply_defaults();
    assert_eq!(v1.interactive_mode, "");
    let mut set = stanza(
        r#"{"command":"x","apiVersion":"client.authentication.k8s.io/v1beta1","interactiveMode":"Never"}"#,
    );
    set.apply_defaults();
    assert_eq!(set.interactive_mode, "Never");
}

#[test]
fn interactive_mode_parses_exactly() {
    assert_eq!(
        "Never".parse::<InteractiveMode>().unwrap(),
        InteractiveMode::Never
    );
    assert_eq!(
        "IfAvailable".parse::<InteractiveMode>().unwrap(),
        InteractiveMode::IfAvailable
    );
    assert_eq!(
        "Always".parse::<InteractiveMode>().unwrap(),
        InteractiveMode::Always
    );
    assert!("never".parse::<InteractiveMode>().is_err());
    assert!("".parse::<InteractiveMode>().is_err());
}

#[test]
fn row63_relative_commands_resolve_against_the_kubeconfig_directory() {
    let dir = Path::new("/home/u/.kube");
    let mut c = ExecConfig::new("bin/plugin", ApiVersion::V1, InteractiveMode::Never);
    c.resolve_relative_to(dir);
    assert_eq!(c.command, "/home/u/.kube/bin/plugin");
    // PATH-style names are never rewritten.
    let mut c = ExecConfig::new("kubelogin", ApiVersion::V1, InteractiveMode::Never);
    c.resolve_relative_to(dir);
    assert_eq!(c.command, "kubelogin");
}

#[test]
fn builder_serialises_to_the_kubeconfig_shape() {
    let c = ExecConfig::new("p", ApiVersion::V1, InteractiveMode::Never)
        .arg("a")
        .env("K", "V")
        .provide_cluster_info(true);
    let json = serde_json::to_string(&c).unwrap();
    assert_eq!(
        json,
        r#"{"command":"p","args":["a"],"env":[{"name":"K","value":"V"}],"apiVersion":"client.authentication.k8s.io/v1","provideClusterInfo":true,"interactiveMode":"Never"}"#
    );
}

/// client-go requires `interactiveMode` for every `apiVersion`; its defaulting fills it in only
/// for exactly `client.authentication.k8s.io/v1beta1` and `…/v1alpha1`. A misspelled group or an
/// unknown version without `interactiveMode` fails validation, with client-go's message (and,
/// when `kubectl` is on `PATH`, the message kubectl prints for the same kubeconfig).
#[test]
fn interactive_mode_is_required_unless_defaulting_fills_it() {
    let want = "interactiveMode must be specified for alice to use exec authentication plugin";
    let refused = [
        "client.authentication.k8s.io/v1",
        "clientauthentication.k8s.io/v1beta1",
        "clientauthentication.k8s.io/v1alpha1",
        "client.authentication.k8s.io/v2",
        "client.authentication.k8s.io/V1beta1",
        " client.authentication.k8s.io/v1beta1",
    ];
    for version in refused {
        let mut c = stanza(&format!(r#"{{"command":"x","apiVersion":"{version}"}}"#));
        c.apply_defaults();
        assert_eq!(c.interactive_mode, "", "{version}");
        assert_eq!(
            c.validate("alice").unwrap_err().to_string(),
            want,
            "{version}"
        );
    }
    for version in [
        "client.authentication.k8s.io/v1beta1",
        "client.authentication.k8s.io/v1alpha1",
    ] {
        let mut c = stanza(&format!(r#"{{"command":"x","apiVersion":"{version}"}}"#));
        // Without the defaulting the field is missing too; with it, the stanza is valid.
        assert_eq!(c.validate("alice").unwrap_err().to_string(), want);
        c.apply_defaults();
        assert_eq!(c.interactive_mode, "IfAvailable");
        assert!(c.validate("alice").is_ok(), "{version}");
    }
    kubectl_agrees(&refused, want);
}

/// Runs `kubectl get ns` on a kubeconfig per version; kubectl validates the kubeconfig before
/// any connection, so each must fail with `want`. Skipped when kubectl is not on `PATH`.
fn kubectl_agrees(versions: &[&str], want: &str) {
    let present = std::process::Command::new("kubectl")
        .args(["version", "--client"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !present {
        println!("SKIP kubectl comparison: kubectl is not on PATH");
        return;
    }
    let dir = std::env::temp_dir().join(format!("exec-credential-im-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (i, version) in versions.iter().enumerate() {
        let path = dir.join(format!("kubeconfig-{i}.json"));
        let kubeconfig = serde_json::json!({
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "alice"}}],
            "current-context": "x",
            "users": [{"name": "alice", "user": {"exec": {"command": "/bin/false", "apiVersion": version}}}],
        });
        std::fs::write(&path, kubeconfig.to_string()).unwrap();
        let out = std::process::Command::new("kubectl")
            .args(["get", "ns", "--request-timeout=2s", "--kubeconfig"])
            .arg(&path)
            .env_remove("KUBECONFIG")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{version}");
        assert!(stderr.contains(want), "{version}: kubectl said {stderr}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
