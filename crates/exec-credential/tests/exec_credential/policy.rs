//! The kuberc credential plugin policy, with the decisions and messages kubectl v1.37.1 shows
//! (observed with `kubectl get` and a kuberc; `examples/tests/exec_policy_kubectl.rs` compares
//! against the real kubectl when it is installed).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::path::PathBuf;

use exec_credential::{
    Action, ApiVersion, Cluster, CredentialState, ExecAuthenticator, ExecConfig, InteractiveMode,
    PluginPolicy,
};

/// `PATH` holds `/opt/bin`, where `plugin.sh` and `other` are installed.
fn look_path(name: &str) -> Option<PathBuf> {
    let installed = ["/opt/bin/plugin.sh", "/opt/bin/other"];
    if name.contains('/') {
        installed.contains(&name).then(|| PathBuf::from(name))
    } else {
        let path = format!("/opt/bin/{name}");
        installed
            .contains(&path.as_str())
            .then(|| PathBuf::from(path))
    }
}

fn decide(policy: &PluginPolicy, command: &str) -> Result<Option<PathBuf>, String> {
    policy
        .check_resolved(command, look_path)
        .map_err(|e| e.to_string())
}

fn allowlist(entries: &[&str]) -> PluginPolicy {
    PluginPolicy::allowlist(entries.iter().copied()).unwrap()
}

#[test]
fn allowlist_entries_and_commands_match_after_path_resolution() {
    // Entry `plugin.sh` admits command `/opt/bin/plugin.sh`, and the other way round; the
    // resolved path is the one to run.
    assert_eq!(
        decide(&allowlist(&["plugin.sh"]), "/opt/bin/plugin.sh"),
        Ok(Some(PathBuf::from("/opt/bin/plugin.sh")))
    );
    assert_eq!(
        decide(&allowlist(&["/opt/bin/plugin.sh"]), "plugin.sh"),
        Ok(Some(PathBuf::from("/opt/bin/plugin.sh")))
    );
    // A verbatim match needs no lookup, even for a command that does not exist: a listed
    // missing path passes and then fails to start; a listed bare name not on PATH passes and
    // then is "not found".
    let mut calls = 0;
    let p = allowlist(&["/nonexistent/p", "missing-plugin"]);
    for command in ["/nonexistent/p", "missing-plugin"] {
        assert_eq!(
            p.check_resolved(command, |_| {
                calls += 1;
                None
            })
            .unwrap(),
            None
        );
    }
    assert_eq!(calls, 0);
}

#[test]
fn allowlist_refusals_use_kubectls_messages() {
    let p = allowlist(&["other-entry"]);
    assert_eq!(
        decide(&p, "missing-plugin").unwrap_err(),
        r#"plugin path "missing-plugin" cannot be resolved for credential plugin allowlist check: exec: "missing-plugin": executable file not found in $PATH"#
    );
    assert_eq!(
        decide(&p, "/nonexistent/q").unwrap_err(),
        r#"plugin path "/nonexistent/q" cannot be resolved for credential plugin allowlist check: exec: "/nonexistent/q": stat /nonexistent/q: no such file or directory"#
    );
    // Unlisted but resolvable: the message names the resolved path.
    for command in ["plugin.sh", "/opt/bin/plugin.sh"] {
        assert_eq!(
            decide(&allowlist(&["other"]), command).unwrap_err(),
            r#"plugin path "/opt/bin/plugin.sh" is not permitted by the credential plugin allowlist"#
        );
    }
    assert_eq!(
        decide(&PluginPolicy::DenyAll, "plugin.sh").unwrap_err(),
        r#"plugin "plugin.sh" not allowed: policy set to "DenyAll""#
    );
    assert_eq!(decide(&PluginPolicy::AllowAll, "anything"), Ok(None));
}

#[test]
fn kuberc_policies_validate_as_kubectl() {
    let list = |v: &[&str]| Some(v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
    for (policy, entries, want) in [
        (
            "Allowlist",
            Some(vec![]),
            r#"credential plugin policy set to "Allowlist", but allowlist is empty; use "DenyAll" policy instead"#,
        ),
        (
            "Allowlist",
            None,
            r#"credential plugin policy set to "Allowlist", but allowlist is unspecified"#,
        ),
        (
            "Allowlist",
            list(&["/opt/bin/../bin/plugin.sh"]),
            r#"non-normalized file path: "/opt/bin/../bin/plugin.sh" vs "/opt/bin/plugin.sh""#,
        ),
        (
            "Allowlist",
            list(&["./plugin.sh"]),
            r#"non-normalized file path: "./plugin.sh" vs "plugin.sh""#,
        ),
        (
            "Allowlist",
            list(&["plugin.sh", ""]),
            "misconfigured credential plugin allowlist: empty allowlist entry #2",
        ),
        (
            "AllowAll",
            list(&["plugin.sh"]),
            r#"misconfigured credential plugin allowlist: plugin policy is "AllowAll" but allowlist is non-nil"#,
        ),
        (
            "DenyAll",
            Some(vec![]),
            r#"misconfigured credential plugin allowlist: plugin policy is "DenyAll" but allowlist is non-nil"#,
        ),
        ("Sometimes", None, r#"unknown plugin policy: "Sometimes""#),
    ] {
        assert_eq!(
            PluginPolicy::from_kuberc(policy, entries)
                .unwrap_err()
                .to_string(),
            want,
            "{policy}"
        );
    }
    assert_eq!(
        PluginPolicy::from_kuberc("", None).unwrap(),
        PluginPolicy::AllowAll
    );
    assert_eq!(
        PluginPolicy::from_kuberc("DenyAll", None).unwrap(),
        PluginPolicy::DenyAll
    );
    assert_eq!(
        PluginPolicy::from_kuberc("Allowlist", list(&["plugin.sh"])).unwrap(),
        allowlist(&["plugin.sh"])
    );
}

#[test]
fn authenticator_runs_the_path_the_policy_resolved() {
    let mut a = ExecAuthenticator::new(
        ExecConfig::new("plugin.sh", ApiVersion::V1, InteractiveMode::Never),
        Cluster::new("https://x"),
    )
    .unwrap();
    a.set_policy(allowlist(&["/opt/bin/plugin.sh"]));
    // Without a lookup the strings differ: refused.
    assert!(a.credential(std::time::UNIX_EPOCH).is_err());
    a.set_path_resolver(look_path);
    let now = std::time::UNIX_EPOCH;
    assert!(matches!(
        a.credential(now).unwrap(),
        CredentialState::Pending(_)
    ));
    let Some(Action::RunPlugin(run)) = a.poll_action() else {
        panic!("no run")
    };
    assert_eq!(run.command(), "/opt/bin/plugin.sh");
    // An unlisted command is refused with kubectl's message.
    let mut b = ExecAuthenticator::new(
        ExecConfig::new("other", ApiVersion::V1, InteractiveMode::Never),
        Cluster::new("https://x"),
    )
    .unwrap();
    b.set_policy(allowlist(&["plugin.sh"]));
    b.set_path_resolver(look_path);
    assert_eq!(
        b.credential(now).unwrap_err().to_string(),
        r#"plugin path "/opt/bin/other" is not permitted by the credential plugin allowlist"#
    );
}

/// Kuberc texts and what kubectl v1.37.1 made of them (`KUBERC=<file> kubectl get ns` with a
/// kubeconfig whose plugin is `true`): the first v1beta1 preference decides, a v1alpha1
/// preference and an empty file allow everything, and a file without a preference is refused.
#[test]
fn kuberc_texts_read_as_kubectl_reads_them() {
    let v1beta1 = "apiVersion: kubectl.config.k8s.io/v1beta1\nkind: Preference\n";
    let deny = format!("{v1beta1}credentialPluginPolicy: DenyAll\n");
    assert_eq!(
        PluginPolicy::from_kuberc_yaml(&deny).unwrap(),
        PluginPolicy::DenyAll
    );
    // The first preference wins.
    let two = format!("{deny}---\n{v1beta1}credentialPluginPolicy: AllowAll\n");
    assert_eq!(
        PluginPolicy::from_kuberc_yaml(&two).unwrap(),
        PluginPolicy::DenyAll
    );
    // Documents of other kinds are skipped.
    let other = format!("apiVersion: v1\nkind: Config\n---\n{deny}");
    assert_eq!(
        PluginPolicy::from_kuberc_yaml(&other).unwrap(),
        PluginPolicy::DenyAll
    );
    let list = format!(
        "{v1beta1}credentialPluginPolicy: Allowlist\ncredentialPluginAllowlist:\n- name: \"true\"\n- name: /usr/bin/aws\n"
    );
    assert_eq!(
        PluginPolicy::from_kuberc_yaml(&list).unwrap(),
        PluginPolicy::allowlist(["true", "/usr/bin/aws"]).unwrap()
    );
    for allow_all in [
        "",
        "\n",
        "apiVersion: kubectl.config.k8s.io/v1alpha1\nkind: Preference\ncredentialPluginPolicy: DenyAll\n",
        &format!("{v1beta1}defaults: []\n"),
    ] {
        assert_eq!(
            PluginPolicy::from_kuberc_yaml(allow_all).unwrap(),
            PluginPolicy::AllowAll,
            "{allow_all:?}"
        );
    }
    for invalid in [
        "kind: Preference\ncredentialPluginPolicy: DenyAll\n",
        "garbage: [\n",
        "apiVersion: v1\nkind: Config\n",
    ] {
        assert_eq!(
            PluginPolicy::from_kuberc_yaml(invalid)
                .unwrap_err()
                .to_string(),
            "kuberc: no valid preferences found",
            "{invalid:?}"
        );
    }
    // The policy's own validation, with kubectl's message.
    let unlisted = format!("{v1beta1}credentialPluginPolicy: Allowlist\n");
    assert_eq!(
        PluginPolicy::from_kuberc_yaml(&unlisted)
            .unwrap_err()
            .to_string(),
        "credential plugin policy set to \"Allowlist\", but allowlist is unspecified"
    );
}
