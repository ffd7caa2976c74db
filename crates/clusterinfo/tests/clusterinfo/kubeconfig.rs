//! Parsing the cluster-info kubeconfig: kubectl-compatible input, limits, and refusals.

// Test code: helpers outside `#[test]` functions may panic on broken fixtures.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use crate::fixtures::*;
use base64::Engine;
use clusterinfo::{ClusterExtension, ClusterInfo, Error, ParseOptions, Trust};

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn kubeconfig_with_cluster(cluster_body: &str) -> String {
    format!("apiVersion: v1\nkind: Config\nclusters:\n- name: \"\"\n  cluster:\n{cluster_body}")
}

#[test]
fn kubeadm_layout_round_trips() {
    let info = cluster_info();
    let yaml = info.to_kubeconfig_yaml();
    assert!(yaml.starts_with(
        "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: LS0t"
    ));
    assert!(yaml.ends_with(
        "    server: https://127.0.0.1:6443\n  name: \"\"\ncontexts: null\ncurrent-context: \"\"\nkind: Config\npreferences: {}\nusers: null\n"
    ));
    let parsed = ClusterInfo::parse(yaml.as_bytes()).unwrap();
    assert_eq!(parsed, info);
    assert_eq!(parsed.name(), "");
    assert_eq!(
        parsed.to_kubeconfig_yaml(),
        yaml,
        "serialisation is deterministic"
    );
}

#[test]
fn json_kubeconfig_is_accepted_as_kubectl_does() {
    let json = format!(
        r#"{{"apiVersion":"v1","kind":"Config","clusters":[{{"name":"k","cluster":{{"server":"https://10.0.0.1:6443","certificate-authority-data":"{}"}}}}],"contexts":[],"users":[]}}"#,
        b64(&ca_pem())
    );
    let info = ClusterInfo::parse(json.as_bytes()).unwrap();
    assert_eq!(info.server(), "https://10.0.0.1:6443");
    assert!(matches!(info.trust(), Trust::CaBundle(b) if b.len() == 1));
}

#[test]
fn unknown_fields_are_tolerated_and_extensions_preserved() {
    let mut info = cluster_info();
    info.set_extension(Some(
        ClusterExtension::new("prod-1", 9)
            .with_server("https://10.0.0.2:6443")
            .unwrap()
            .with_server("https://[::1]:6443")
            .unwrap(),
    ));
    info.set_tls_server_name(Some("kubernetes.default".to_owned()));
    let yaml = info.to_kubeconfig_yaml();
    let yaml = yaml.replace(
        "    server:",
        "    extensions2: ignored\n    disable-compression: true\n    server:",
    );
    let yaml = yaml.replace(
        "      name: k8s-bootstrap.rs/cluster\n",
        "      name: k8s-bootstrap.rs/cluster\n    - extension:\n        last-update: Tue, 01 Jan 2030\n        provider: minikube.sigs.k8s.io\n      name: cluster_info\n",
    );
    let parsed = ClusterInfo::parse(yaml.as_bytes()).unwrap();
    let ext = parsed.extension().unwrap();
    assert_eq!((ext.cluster_id(), ext.serial()), ("prod-1", 9));
    assert_eq!(
        parsed.servers(),
        [
            "https://127.0.0.1:6443",
            "https://10.0.0.2:6443",
            "https://[::1]:6443"
        ]
    );
    assert_eq!(parsed.tls_server_name(), Some("kubernetes.default"));
    assert_eq!(parsed.other_extensions().len(), 1);
    assert_eq!(parsed.other_extensions()[0].name(), "cluster_info");
    // Written back out and read again: nothing lost.
    let again = ClusterInfo::parse(parsed.to_kubeconfig_yaml().as_bytes()).unwrap();
    assert_eq!(again, parsed);
    assert!(
        parsed
            .to_kubeconfig_yaml()
            .contains("provider: minikube.sigs.k8s.io")
    );
}

#[test]
fn no_ca_and_no_insecure_flag_means_system_roots() {
    let info =
        ClusterInfo::parse(kubeconfig_with_cluster("    server: https://example.com\n").as_bytes())
            .unwrap();
    assert_eq!(info.trust(), &Trust::SystemRoots);
    assert!(info.ca_bundle().is_none());
}

#[test]
fn insecure_skip_tls_verify_needs_an_explicit_opt_in() {
    let doc = kubeconfig_with_cluster(
        "    server: https://example.com\n    insecure-skip-tls-verify: true\n",
    );
    let err = ClusterInfo::parse(doc.as_bytes()).unwrap_err();
    assert!(
        matches!(&err, Error::ForbiddenField { field, .. } if field.ends_with("insecure-skip-tls-verify")),
        "{err:?}"
    );
    let info = ClusterInfo::parse_with(
        doc.as_bytes(),
        &ParseOptions::new().dangerous_allow_insecure_skip_tls_verify(),
    )
    .unwrap();
    assert_eq!(info.trust(), &Trust::DangerousSkipVerify);
    // CA data together with the insecure flag is rejected, as client-go does.
    let both = kubeconfig_with_cluster(&format!(
        "    server: https://example.com\n    insecure-skip-tls-verify: true\n    certificate-authority-data: {}\n",
        b64(&ca_pem())
    ));
    assert!(
        ClusterInfo::parse_with(
            both.as_bytes(),
            &ParseOptions::new().dangerous_allow_insecure_skip_tls_verify()
        )
        .is_err()
    );
}

/// Hostile-input catalogue #42.
#[test]
fn ca_file_paths_insecure_flag_and_proxy_are_rejected() {
    for (body, field) in [
        (
            "    server: https://a:1\n    certificate-authority: /etc/kubernetes/pki/ca.crt\n",
            "certificate-authority",
        ),
        (
            "    server: https://a:1\n    insecure-skip-tls-verify: true\n",
            "insecure-skip-tls-verify",
        ),
        (
            "    server: https://a:1\n    proxy-url: http://proxy:3128\n",
            "proxy-url",
        ),
    ] {
        let err = ClusterInfo::parse(kubeconfig_with_cluster(body).as_bytes()).unwrap_err();
        assert!(
            matches!(&err, Error::ForbiddenField { field: f, .. } if f == &format!("clusters[0].cluster.{field}")),
            "{err:?}"
        );
    }
}

/// Hostile-input catalogue #41: credentials are rejected by field name, never echoed.
#[test]
fn credentials_are_rejected_without_echoing_them() {
    let canary = TOKEN;
    let users = [
        ("token", format!("      token: {canary}\n")),
        ("tokenFile", "      tokenFile: /var/run/token\n".to_owned()),
        (
            "client-key-data",
            format!("      client-key-data: {}\n", b64(canary)),
        ),
        (
            "client-certificate-data",
            format!("      client-certificate-data: {}\n", b64(canary)),
        ),
        ("client-key", "      client-key: /etc/key.pem\n".to_owned()),
        (
            "username",
            format!("      username: admin\n      password: {canary}\n"),
        ),
        ("password", format!("      password: {canary}\n")),
        (
            "exec",
            format!(
                "      exec:\n        apiVersion: client.authentication.k8s.io/v1\n        command: /bin/sh\n        args: [\"-c\", \"echo {canary}\"]\n"
            ),
        ),
        (
            "auth-provider",
            format!(
                "      auth-provider:\n        name: oidc\n        config:\n          id-token: {canary}\n"
            ),
        ),
        ("as", "      as: system:admin\n".to_owned()),
    ];
    for (field, user) in users {
        let doc = format!(
            "{}users:\n- name: someone\n  user:\n{user}",
            kubeconfig_with_cluster("    server: https://a:1\n")
        );
        let err = ClusterInfo::parse(doc.as_bytes()).unwrap_err();
        assert_eq!(
            err,
            Error::CredentialsPresent {
                field: format!("users[0].user.{field}")
            },
            "{field}"
        );
        let shown = format!("{err} {err:?}");
        assert!(
            !shown.contains(canary) && !shown.contains("0123456789abcdef"),
            "{shown}"
        );
        assert!(!shown.contains(&b64(canary)));
    }
    // An empty user (what a discovery client writes) is fine.
    let empty = format!(
        "{}users:\n- name: x\n  user: {{}}\n",
        kubeconfig_with_cluster("    server: https://a:1\n")
    );
    ClusterInfo::parse(empty.as_bytes()).unwrap();
}

/// Hostile-input catalogue #43.
#[test]
fn bad_server_urls_are_rejected() {
    for server in [
        "http://10.0.0.1:6443",
        "file:///etc/passwd",
        "https://user:pass@10.0.0.1:6443",
        "\"\"",
        "\" https://10.0.0.1:6443\"",
        "\"https://10.0.0.1:6443 \"",
        "https://",
        "https://:6443",
        "https://10.0.0.1:99999",
        "10.0.0.1:6443",
    ] {
        let doc = kubeconfig_with_cluster(&format!("    server: {server}\n"));
        let err = ClusterInfo::parse(doc.as_bytes()).unwrap_err();
        assert!(
            matches!(err, Error::InvalidServer { .. }),
            "{server}: {err:?}"
        );
    }
    let missing = kubeconfig_with_cluster("    certificate-authority-data: \"\"\n");
    assert!(matches!(
        ClusterInfo::parse(missing.as_bytes()).unwrap_err(),
        Error::InvalidServer { .. }
    ));
    for ok in [
        "https://10.0.0.1:6443",
        "https://[::1]:6443",
        "https://cp.example.com",
        "HTTPS://cp.example.com:443/prefix",
    ] {
        ClusterInfo::parse(kubeconfig_with_cluster(&format!("    server: {ok}\n")).as_bytes())
            .unwrap();
    }
}

/// Hostile-input catalogue #40.
#[test]
fn exactly_one_cluster_is_required() {
    let none = "apiVersion: v1\nkind: Config\nclusters: []\n";
    assert_eq!(
        ClusterInfo::parse(none.as_bytes()).unwrap_err(),
        Error::ClusterCount { found: 0 }
    );
    assert_eq!(
        ClusterInfo::parse(b"apiVersion: v1\n").unwrap_err(),
        Error::ClusterCount { found: 0 }
    );
    let two = "clusters:\n- name: a\n  cluster:\n    server: https://a:1\n- name: b\n  cluster:\n    server: https://b:1\n";
    let err = ClusterInfo::parse(two.as_bytes()).unwrap_err();
    assert_eq!(err, Error::ClusterCount { found: 2 });
    assert_eq!(
        err.to_string(),
        "expected the kubeconfig file in the cluster-info ConfigMap to have a single cluster, but it had 2"
    );
}

/// Hostile-input catalogue #44 (in a kubeconfig).
#[test]
fn bad_ca_data_is_rejected() {
    for data in [
        b64("garbage"),
        "!!!not-base64".to_owned(),
        b64(&format!("{}junk", ca_pem())),
    ] {
        let doc = kubeconfig_with_cluster(&format!(
            "    server: https://a:1\n    certificate-authority-data: {data}\n"
        ));
        assert!(ClusterInfo::parse(doc.as_bytes()).is_err(), "{data}");
    }
    // The benchmark kubeconfig's CA is random bytes in PEM armour: not a certificate.
    let bench = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/vectors/bench_kubeconfig.yaml"
    ));
    assert!(matches!(
        ClusterInfo::parse(bench.as_bytes()).unwrap_err(),
        Error::Certificate { index: 0 }
    ));
}

/// Hostile-input catalogue #36.
#[test]
fn billion_laughs_is_a_bounded_error() {
    let mut doc = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    let names = ["b", "c", "d", "e", "f", "g", "h", "i"];
    let mut prev = "a";
    for n in names {
        doc.push_str(&format!(
            "{n}: &{n} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
        ));
        prev = n;
    }
    doc.push_str("clusters:\n- name: x\n  cluster:\n    server: https://a:1\n");
    let err = ClusterInfo::parse(doc.as_bytes()).unwrap_err();
    assert!(matches!(err, Error::KubeconfigSyntax { .. }), "{err:?}");
}

/// Hostile-input catalogue #37.
#[test]
fn ten_thousand_deep_nesting_is_a_bounded_error() {
    for (open, close) in [("[", "]"), ("{a: ", "}")] {
        let doc = format!("x: {}1{}\n", open.repeat(10_000), close.repeat(10_000));
        let err = ClusterInfo::parse(doc.as_bytes()).unwrap_err();
        assert!(matches!(err, Error::KubeconfigSyntax { .. }), "{err:?}");
    }
    // Just within the limit is fine.
    let ok = format!(
        "x: {}1{}\nclusters:\n- name: x\n  cluster:\n    server: https://a:1\n",
        "[".repeat(60),
        "]".repeat(60)
    );
    ClusterInfo::parse(ok.as_bytes()).unwrap();
}

#[test]
fn node_count_is_bounded() {
    let doc = format!(
        "x: [{}1]\n",
        "1,".repeat(clusterinfo::MAX_KUBECONFIG_NODES + 10)
    );
    let err = ClusterInfo::parse(doc.as_bytes()).unwrap_err();
    assert!(
        matches!(
            err,
            Error::KubeconfigSyntax {
                reason: "resource budget exceeded",
                ..
            }
        ),
        "{err:?}"
    );
}

/// Hostile-input catalogue #38: rejected by the size check, before parsing.
#[test]
fn oversized_kubeconfig_is_rejected_before_parsing() {
    let big = vec![b'#'; clusterinfo::MAX_KUBECONFIG_BYTES + 1];
    assert_eq!(
        ClusterInfo::parse(&big).unwrap_err(),
        Error::TooLarge {
            what: "kubeconfig",
            len: clusterinfo::MAX_KUBECONFIG_BYTES + 1,
            max: clusterinfo::MAX_KUBECONFIG_BYTES
        }
    );
}

/// Hostile-input catalogue #39: the defined behaviour for several documents, tags and merge keys.
#[test]
fn multiple_documents_tags_and_merge_keys_have_defined_behaviour() {
    let one = kubeconfig_with_cluster("    server: https://a:1\n");
    let two_docs = format!("{one}---\n{one}");
    assert!(matches!(
        ClusterInfo::parse(two_docs.as_bytes()).unwrap_err(),
        Error::KubeconfigSyntax { .. }
    ));
    // A leading document marker on a single document is fine.
    ClusterInfo::parse(format!("---\n{one}").as_bytes()).unwrap();
    let merge =
        "base: &b {server: \"https://a:1\"}\nclusters:\n- name: x\n  cluster:\n    <<: *b\n";
    // Merge keys are expanded, as kubectl's YAML 1.1 parser expands them.
    assert_eq!(
        ClusterInfo::parse(merge.as_bytes()).unwrap().server(),
        "https://a:1"
    );
    // A custom tag on the server: rejected (not a plain string value).
    let tagged = kubeconfig_with_cluster("    server: !custom https://a:1\n");
    let binary = kubeconfig_with_cluster("    server: !!binary aHR0cHM6Ly9hOjE=\n");
    for doc in [tagged, binary] {
        // Whatever the parser makes of the tag, the result is either an error or exactly the
        // plain value: never a panic, never a different server.
        if let Ok(info) = ClusterInfo::parse(doc.as_bytes()) {
            assert!(info.server() == "https://a:1", "{}", info.server());
        }
    }
}

#[test]
fn duplicate_keys_are_rejected() {
    let doc = kubeconfig_with_cluster("    server: https://a:1\n    server: https://evil:1\n");
    assert!(matches!(
        ClusterInfo::parse(doc.as_bytes()).unwrap_err(),
        Error::KubeconfigSyntax { .. }
    ));
    let json = r#"{"clusters":[{"name":"","cluster":{"server":"https://a:1","server":"https://evil:1"}}]}"#;
    assert!(matches!(
        ClusterInfo::parse(json.as_bytes()).unwrap_err(),
        Error::KubeconfigSyntax { .. }
    ));
}

#[test]
fn parser_errors_do_not_echo_values() {
    let doc = format!("clusters:\n- name: x\n  cluster:\n    server: [\"{TOKEN}\"\n");
    let err = ClusterInfo::parse(doc.as_bytes()).unwrap_err();
    assert!(!format!("{err} {err:?}").contains(TOKEN));
    let doc = format!("clusters:\n- name: x\n  cluster:\n    server: {{a: {TOKEN}}}\n");
    let err = ClusterInfo::parse(doc.as_bytes()).unwrap_err();
    assert!(!format!("{err} {err:?}").contains(TOKEN), "{err:?}");
}

#[test]
fn client_kubeconfig_has_no_credentials_and_parses() {
    let yaml = cluster_info().to_client_kubeconfig_yaml();
    assert!(yaml.contains("current-context: token-bootstrap-client@kubernetes"));
    assert!(yaml.contains("  name: kubernetes\n"));
    assert!(yaml.contains("- name: token-bootstrap-client\n  user: {}\n"));
    let back = ClusterInfo::parse(yaml.as_bytes()).unwrap();
    assert_eq!(back.server(), "https://127.0.0.1:6443");
}

#[test]
fn merge_keys_are_counted_against_the_budget() {
    let mut doc = String::from("base: &b {a: 1}\n");
    for i in 0..20 {
        doc.push_str(&format!("m{i}:\n  <<: *b\n"));
    }
    doc.push_str("clusters:\n- name: x\n  cluster:\n    server: https://a:1\n");
    let err = ClusterInfo::parse(doc.as_bytes()).unwrap_err();
    assert!(matches!(err, Error::KubeconfigSyntax { .. }), "{err:?}");
}

#[test]
fn tls_bootstrap_kubeconfig_has_kubeadms_layout() {
    let info = cluster_info();
    let token: bootstrap_token::BootstrapToken = TOKEN.parse().unwrap();
    let kubeconfig = info.tls_bootstrap_kubeconfig(&token);
    let ca = b64(info.ca_bundle().unwrap().as_pem());
    let expected = format!(
        "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: {ca}\n    server: https://127.0.0.1:6443\n  name: kubernetes\ncontexts:\n- context:\n    cluster: kubernetes\n    user: tls-bootstrap-token-user\n  name: tls-bootstrap-token-user@kubernetes\ncurrent-context: tls-bootstrap-token-user@kubernetes\nkind: Config\npreferences: {{}}\nusers:\n- name: tls-bootstrap-token-user\n  user:\n    token: {TOKEN}\n"
    );
    assert_eq!(kubeconfig.expose_secret(), expected);
    assert_eq!(kubeconfig.server(), "https://127.0.0.1:6443");
    assert_eq!(kubeconfig.token_id(), "abcdef");
    assert_eq!(clusterinfo::TLS_BOOTSTRAP_USER, "tls-bootstrap-token-user");
    assert_eq!(
        clusterinfo::TLS_BOOTSTRAP_CONTEXT,
        format!(
            "{}@{}",
            clusterinfo::TLS_BOOTSTRAP_USER,
            clusterinfo::TLS_BOOTSTRAP_CLUSTER
        )
    );
    // It carries a credential, so the discovery parser refuses it, naming the field only.
    let err = ClusterInfo::parse(kubeconfig.expose_secret().as_bytes()).unwrap_err();
    assert_eq!(
        err,
        Error::CredentialsPresent {
            field: "users[0].user.token".to_owned()
        }
    );
    assert!(!format!("{err} {err:?}").contains(TOKEN_SECRET));
}

#[test]
fn tls_bootstrap_kubeconfig_debug_hides_the_token_secret() {
    let token: bootstrap_token::BootstrapToken = TOKEN.parse().unwrap();
    let kubeconfig = cluster_info().tls_bootstrap_kubeconfig(&token);
    let debug = format!("{kubeconfig:?} {kubeconfig:#?}");
    assert!(!debug.contains(TOKEN_SECRET), "{debug}");
    assert!(debug.contains("abcdef") && debug.contains("https://127.0.0.1:6443"));
    assert!(kubeconfig.expose_secret().contains(TOKEN_SECRET));
    let copy = kubeconfig.clone();
    assert!(!format!("{copy:?}").contains(TOKEN_SECRET));
}

#[test]
fn tls_bootstrap_kubeconfig_quotes_a_token_that_reads_as_a_number() {
    let token: bootstrap_token::BootstrapToken = "123456.1234567890123456".parse().unwrap();
    let yaml = cluster_info().tls_bootstrap_kubeconfig(&token);
    assert!(
        yaml.expose_secret()
            .ends_with("    token: \"123456.1234567890123456\"\n"),
        "{}",
        yaml.expose_secret()
    );
}

#[test]
fn tls_bootstrap_kubeconfig_carries_only_server_and_ca_as_kubeadm_does() {
    let token: bootstrap_token::BootstrapToken = TOKEN.parse().unwrap();
    let mut info = cluster_info();
    info.set_tls_server_name(Some("api.internal".to_owned()));
    let yaml = info.tls_bootstrap_kubeconfig(&token);
    assert!(!yaml.expose_secret().contains("tls-server-name"));
    let doc = "apiVersion: v1\nclusters:\n- name: \"\"\n  cluster:\n    server: https://10.0.0.1:6443\n    insecure-skip-tls-verify: true\n";
    let insecure = ClusterInfo::parse_with(
        doc.as_bytes(),
        &ParseOptions::new().dangerous_allow_insecure_skip_tls_verify(),
    )
    .unwrap();
    assert_eq!(insecure.trust(), &Trust::DangerousSkipVerify);
    let yaml = insecure.tls_bootstrap_kubeconfig(&token);
    assert!(!yaml.expose_secret().contains("insecure-skip-tls-verify"));
    assert!(!yaml.expose_secret().contains("certificate-authority"));
    assert!(
        yaml.expose_secret()
            .starts_with("apiVersion: v1\nclusters:\n- cluster:\n    server: https://10.0.0.1:6443\n  name: kubernetes\n")
    );
}

/// Hostile-input catalogue #41: every impersonation field, a credential in a later user entry,
/// one reached through a YAML merge key or alias, and the JSON form.
#[test]
fn hidden_and_later_credentials_are_rejected() {
    let cluster = kubeconfig_with_cluster("    server: https://a:1\n");
    for (field, value) in [
        ("as-uid", "uid-1"),
        ("as-groups", "[system:masters]"),
        ("as-user-extra", "{scopes: [all]}"),
    ] {
        let doc = format!("{cluster}users:\n- name: x\n  user:\n    {field}: {value}\n");
        assert_eq!(
            ClusterInfo::parse(doc.as_bytes()).unwrap_err(),
            Error::CredentialsPresent {
                field: format!("users[0].user.{field}")
            }
        );
    }
    let later = format!(
        "{cluster}users:\n- name: empty\n  user: {{}}\n- name: x\n  user:\n    token: {TOKEN}\n"
    );
    assert_eq!(
        ClusterInfo::parse(later.as_bytes()).unwrap_err(),
        Error::CredentialsPresent {
            field: "users[1].user.token".into()
        }
    );
    let merged =
        format!("creds: &c {{token: {TOKEN}}}\n{cluster}users:\n- name: x\n  user:\n    <<: *c\n");
    let aliased = format!("creds: &c {{token: {TOKEN}}}\n{cluster}users:\n- name: x\n  user: *c\n");
    let json = format!(
        r#"{{"apiVersion":"v1","clusters":[{{"name":"","cluster":{{"server":"https://a:1"}}}}],"users":[{{"name":"x","user":{{"token":"{TOKEN}"}}}}]}}"#
    );
    for doc in [merged, aliased, json] {
        let err = ClusterInfo::parse(doc.as_bytes()).unwrap_err();
        assert_eq!(
            err,
            Error::CredentialsPresent {
                field: "users[0].user.token".into()
            },
            "{doc}"
        );
        assert!(!format!("{err} {err:?}").contains(TOKEN_SECRET));
    }
}

/// Hostile-input catalogue #42: the insecure flag in forms kubectl would not read as `false`.
#[test]
fn insecure_flag_must_be_a_boolean() {
    for value in ["\"true\"", "1", "[true]"] {
        let doc = kubeconfig_with_cluster(&format!(
            "    server: https://a:1\n    insecure-skip-tls-verify: {value}\n"
        ));
        assert!(
            matches!(
                ClusterInfo::parse(doc.as_bytes()).unwrap_err(),
                Error::InvalidField { .. }
            ),
            "{value}"
        );
    }
    // `false` and null are the default.
    for value in ["false", "null"] {
        let doc = kubeconfig_with_cluster(&format!(
            "    server: https://a:1\n    insecure-skip-tls-verify: {value}\n"
        ));
        assert_eq!(
            ClusterInfo::parse(doc.as_bytes()).unwrap().trust(),
            &Trust::SystemRoots
        );
    }
}

/// What `kubectl config view -o json --raw` writes for a cluster-info kubeconfig: Go's nil
/// slices and maps come out as `null` (`users`, `contexts`; `extensions` when kubectl read an
/// empty list). Each must read as an empty list, as client-go reads it.
fn kubectl_view_json(yaml: &str) -> Option<String> {
    let dir = tempdir();
    let path = dir.join("config");
    std::fs::write(&path, yaml).unwrap();
    let out = std::process::Command::new("kubectl")
        .args(["config", "view", "-o", "json", "--raw", "--kubeconfig"])
        .arg(&path)
        .env("KUBECONFIG", "/dev/null")
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "kubectl failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).unwrap())
}

fn tempdir() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "clusterinfo-kubectl-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `kubectl config view -o json --raw` (v1.32.4) of a kubeadm cluster-info kubeconfig, with
/// the CA replaced by a placeholder; the live half of the test below regenerates it.
const KUBECTL_JSON_NULLS: &str = r#"{
    "kind": "Config",
    "apiVersion": "v1",
    "preferences": {},
    "clusters": [
        {
            "name": "",
            "cluster": {
                "server": "https://10.0.0.1:6443",
                "certificate-authority-data": "CA"
            }
        }
    ],
    "users": null,
    "contexts": null,
    "current-context": ""
}"#;

#[test]
fn kubectl_json_with_null_lists_parses() {
    let json = KUBECTL_JSON_NULLS.replace("\"CA\"", &format!("\"{}\"", b64(&ca_pem())));
    let info = ClusterInfo::parse(json.as_bytes()).unwrap();
    assert_eq!(info.server(), "https://10.0.0.1:6443");
    assert!(matches!(info.trust(), Trust::CaBundle(b) if b.len() == 1));
    // client-go also reads `null` for the extension lists (Go never writes them: omitempty).
    let with_null_extensions = json
        .replace("\"server\":", "\"extensions\": null, \"server\":")
        .replace("\"users\": null", "\"users\": null, \"extensions\": null");
    assert_eq!(
        ClusterInfo::parse(with_null_extensions.as_bytes()).unwrap(),
        info
    );
    // Our own output, read by kubectl and written back as JSON, parses to the same cluster.
    let yaml = cluster_info().to_kubeconfig_yaml();
    let Some(kubectl_json) = kubectl_view_json(&yaml) else {
        eprintln!("kubectl not installed: skipping the live half of this test");
        return;
    };
    assert!(kubectl_json.contains("\"users\": null"), "{kubectl_json}");
    assert_eq!(
        ClusterInfo::parse(kubectl_json.as_bytes()).unwrap(),
        cluster_info()
    );
}

fn json_kubeconfig_with_extension(extension: &serde_json::Value) -> String {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "", "cluster": {
            "server": "https://10.0.0.1:6443",
            "certificate-authority-data": b64(&ca_pem()),
            "extensions": [{"name": "example.com/x", "extension": extension}],
        }}],
    })
    .to_string()
    // DEL and every non-ASCII character as a JSON escape (the input must be valid YAML).
    .chars()
    .map(|c| {
        if c.is_ascii() && c != '\u{7f}' {
            c.to_string()
        } else {
            format!("\\u{:04x}", u32::from(c))
        }
    })
    .collect()
}

/// Whatever `parse` accepts, its own output parses back to the same value: characters YAML
/// cannot hold raw (DEL, C1 controls, U+FFFE) and YAML 1.1 line breaks are escaped, in keys
/// and values, in block and flow layouts.
#[test]
fn extensions_with_control_characters_round_trip() {
    let odd = "a\u{2}b\u{7f}c\u{85}d\u{9f}e\u{2028}f\u{feff}g\u{fffe}h\t\r\n";
    let extension = serde_json::json!({
        odd: odd,
        "list": [odd, [odd, {odd: odd}]],
    });
    let json = json_kubeconfig_with_extension(&extension);
    let info = ClusterInfo::parse(json.as_bytes()).unwrap();
    let yaml = info.to_kubeconfig_yaml();
    let again = ClusterInfo::parse(yaml.as_bytes()).unwrap();
    assert_eq!(again.other_extensions(), info.other_extensions());
    assert_eq!(again.to_kubeconfig_yaml(), yaml);
    let client = ClusterInfo::parse(info.to_client_kubeconfig_yaml().as_bytes()).unwrap();
    assert_eq!(client.other_extensions(), info.other_extensions());
}

/// A mapping key that fits YAML's 1024-character implicit-key limit as read, but not as
/// written (escapes are longer than the raw characters), cannot be written back in the block
/// layout: refused on input, at every depth.
#[test]
fn extension_keys_longer_than_yaml_allows_are_refused() {
    let yaml_with_key = |key: &str| {
        kubeconfig_with_cluster(&format!(
            "    server: https://10.0.0.1:6443\n    extensions:\n    - name: example.com/x\n      extension:\n        a:\n        - {key}: 1\n"
        ))
    };
    // 1,000 plain characters: fits as read and as written.
    let info = ClusterInfo::parse(yaml_with_key(&"k".repeat(1000)).as_bytes()).unwrap();
    ClusterInfo::parse(info.to_kubeconfig_yaml().as_bytes()).unwrap();
    // 200 control characters: 802 characters as read ("\x01" each), 1,202 as written.
    let escaped = format!("\"{}\"", "\\x01".repeat(200));
    let err = ClusterInfo::parse(yaml_with_key(&escaped).as_bytes()).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidField { reason, .. } if reason.contains("1024")),
        "{err:?}"
    );
}
