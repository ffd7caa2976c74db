//! `--version`, `completion` and `manpage`: the version names the git commit the binary was
//! built from (when built from a clone), the completion scripts parse in the real shells that
//! are installed, and the man page formats without warnings in groff.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code fails loudly"
)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_k8s-bootstrap");

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// Whether `program` runs here (CI has bash and groff; zsh and fish are checked when present).
fn installed(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `program args` with `input` on standard input; fails with its stderr unless it exits 0
/// with an empty stderr.
fn check_with(program: &str, args: &[&str], input: &[u8]) {
    use std::io::Write as _;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.trim().is_empty(),
        "{program} {args:?}: {stderr}"
    );
}

#[test]
fn version_names_the_crate_version_and_the_git_commit() {
    let out = run(&["--version"]);
    assert!(out.status.success());
    let text = stdout(&out);
    let version = format!("k8s-bootstrap {}", env!("CARGO_PKG_VERSION"));
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tracked = Command::new("git")
        .args(["ls-files", "--error-unmatch", "Cargo.toml"])
        .current_dir(dir)
        .output()
        .is_ok_and(|o| o.status.success());
    if let Ok(commit) = std::env::var("K8S_BOOTSTRAP_GIT_COMMIT") {
        assert_eq!(text.trim(), format!("{version} (commit {})", commit.trim()));
    } else if tracked {
        let head = Command::new("git")
            .args(["rev-parse", "--short=12", "HEAD"])
            .current_dir(dir)
            .output()
            .unwrap();
        let head = String::from_utf8(head.stdout).unwrap();
        assert_eq!(text.trim(), format!("{version} (commit {})", head.trim()));
    } else {
        // Built from an unpacked .crate: no commit to name.
        assert_eq!(text.trim(), version);
    }
    // Every subcommand reports the same version.
    let join = stdout(&run(&["join", "--version"]));
    assert_eq!(
        join.strip_prefix("k8s-bootstrap-join "),
        text.strip_prefix("k8s-bootstrap ")
    );
}

#[test]
fn completion_scripts_parse_in_their_shells() {
    let bash = run(&["completion", "bash"]);
    assert!(bash.status.success());
    let script = stdout(&bash);
    // The function's name differs between clap_complete releases; the registration does not.
    assert!(
        script
            .lines()
            .any(|l| l.trim_start().starts_with("complete -F _k8s")
                && l.trim_end().ends_with(" k8s-bootstrap")),
        "{script}"
    );
    for sub in ["token", "join", "pin", "completion", "manpage"] {
        assert!(script.contains(sub), "{sub} missing");
    }
    if installed("bash") {
        check_with("bash", &["-n"], &bash.stdout);
    }
    let zsh = run(&["completion", "zsh"]);
    assert!(stdout(&zsh).starts_with("#compdef k8s-bootstrap"));
    if installed("zsh") {
        check_with("zsh", &["-n"], &zsh.stdout);
    }
    let fish = run(&["completion", "fish"]);
    assert!(stdout(&fish).contains("complete -c k8s-bootstrap"));
    if installed("fish") {
        check_with("fish", &["--no-execute"], &fish.stdout);
    }
    for shell in ["elvish", "powershell"] {
        let out = run(&["completion", shell]);
        assert!(out.status.success() && !out.stdout.is_empty(), "{shell}");
    }
    // An unknown shell is a usage error naming the choices.
    let out = run(&["completion", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("possible values: bash, elvish, fish, powershell, zsh"),
        "{stderr}"
    );
}

#[test]
fn the_man_page_formats_without_warnings() {
    let out = run(&["manpage"]);
    assert!(out.status.success());
    let page = stdout(&out);
    assert!(page.contains(".TH k8s-bootstrap 1"), "{page}");
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH SUBCOMMANDS", ".SH VERSION"] {
        assert!(page.contains(section), "{section} missing:\n{page}");
    }
    assert!(page.contains("join"), "{page}");
    if installed("groff") {
        // -ww: every warning; -z: format, print nothing.
        check_with("groff", &["-man", "-Tutf8", "-ww", "-z"], &out.stdout);
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// The subcommands as typed, each with whether it talks to an existing cluster through a
/// kubeconfig (and so takes `--kubeconfig` and `--context`).
fn subcommands() -> Vec<(&'static [&'static str], bool)> {
    let mut all: Vec<(&'static [&'static str], bool)> = vec![
        (&["token", "create"], true),
        (&["token", "list"], true),
        (&["token", "delete"], true),
        (&["token", "generate"], false),
        (&["pin"], false),
        (&["join"], false),
        (&["completion"], false),
        (&["manpage"], false),
    ];
    if cfg!(feature = "controllers") {
        all.push((&["controllers"], true));
    }
    if cfg!(feature = "sidecar") {
        // Only with --audience-from-services, the one use of the cluster.
        all.push((&["forward-proxy"], true));
    }
    if cfg!(feature = "loopback-server") {
        all.push((&["serve-loopback"], false));
        all.push((&["demo"], false));
    }
    all
}

/// `--kubeconfig` and `--context` are listed in the help of exactly the subcommands that talk
/// to a cluster through a kubeconfig, and not in the top-level help, where they would read as
/// applying to `join`, `pin` or `serve-loopback`.
#[test]
fn kubeconfig_and_context_are_offered_only_where_a_kubeconfig_is_used() {
    let top = stdout(&run(&["--help"]));
    assert!(!top.contains("--kubeconfig"), "{top}");
    assert!(!top.contains("--context"), "{top}");
    // The man page documents the top-level command, where they are not options.
    let page = stdout(&run(&["manpage"]));
    assert!(!page.contains("\\-\\-kubeconfig"), "{page}");
    assert!(!page.contains("\\-\\-context"), "{page}");
    for (command, uses_cluster) in subcommands() {
        let mut args = command.to_vec();
        args.push("--help");
        let out = run(&args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let help = stdout(&out);
        for flag in ["--kubeconfig <PATH>", "--context <NAME>"] {
            assert_eq!(
                help.contains(flag),
                uses_cluster,
                "{flag} in {args:?}:\n{help}"
            );
        }
    }
}

/// After a subcommand that takes no kubeconfig, `--kubeconfig` and `--context` are clap's
/// "unexpected argument" (exit code 2); before it, a usage error naming the subcommand.
#[test]
fn kubeconfig_and_context_are_usage_errors_where_meaningless() {
    for (command, uses_cluster) in subcommands() {
        if uses_cluster {
            continue;
        }
        for flag in ["--kubeconfig", "--context"] {
            let mut args = command.to_vec();
            args.extend([flag, "x"]);
            let out = run(&args);
            let text = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {text}");
            assert!(
                text.contains(&format!("unexpected argument '{flag}' found")),
                "{args:?}: {text}"
            );

            let mut args = vec![flag, "x"];
            args.extend_from_slice(command);
            // The subcommands' required arguments, so that the flag is the only fault.
            match command {
                ["pin"] => args.push("ca.pem"),
                ["completion"] => args.push("bash"),
                ["token", "delete"] => args.push("abcdef"),
                _ => {}
            }
            let out = run(&args);
            let text = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {text}");
            let name = command.join(" ");
            assert!(
                text.contains(&format!(
                    "the argument '{flag}' cannot be used with '{name}'"
                )),
                "{args:?}: {text}"
            );
        }
    }
}

/// `forward-proxy` uses the cluster only to list Services for --audience-from-services: the
/// kubeconfig flags without it are a usage error, before or after the subcommand.
#[cfg(feature = "sidecar")]
#[test]
fn forward_proxy_takes_a_kubeconfig_only_with_audience_from_services() {
    let base = [
        "forward-proxy",
        "--forward=127.0.0.1:1",
        "--issuer=https://issuer",
        "--audience=a",
        "--jwks-file=/nonexistent",
    ];
    let mut args = base.to_vec();
    args.push("--kubeconfig=/nonexistent");
    let out = run(&args);
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("--audience-from-services"), "{text}");

    let mut args = vec!["--context=x"];
    args.extend(base);
    let out = run(&args);
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains(
            "the argument '--context' cannot be used with 'forward-proxy': it talks to the \
             cluster only with '--audience-from-services'"
        ),
        "{text}"
    );
}

/// Given both before and after the subcommand, the flag is a usage error rather than one of
/// the two silently winning.
#[test]
fn kubeconfig_before_and_after_the_subcommand_is_a_usage_error() {
    let out = run(&["--kubeconfig", "a", "token", "list", "--kubeconfig", "b"]);
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("given before and after the subcommand"),
        "{text}"
    );
}

/// `--join-command-format` chooses what `--print-join-command` prints, and means nothing
/// without it.
#[test]
fn join_command_format_needs_print_join_command() {
    let out = run(&["token", "create", "--join-command-format", "kubeadm"]);
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("--print-join-command"), "{text}");
    let help = stdout(&run(&["token", "create", "--help"]));
    assert!(
        help.contains("[default: k8s-bootstrap]") && help.contains("kubeadm"),
        "{help}"
    );
}

#[cfg(any(feature = "controllers", feature = "sidecar"))]
/// A HOME whose `~/.kube/config` has one context, `real`, and names a missing one current.
fn home_with_kubeconfig() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join(".kube")).unwrap();
    std::fs::write(
        home.path().join(".kube/config"),
        "apiVersion: v1\nkind: Config\ncurrent-context: other\n\
         clusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n\
         users:\n- name: u\n  user:\n    token: t\n\
         contexts:\n- name: real\n  context:\n    cluster: c\n    user: u\n",
    )
    .unwrap();
    home
}

#[cfg(any(feature = "controllers", feature = "sidecar"))]
/// The binary with `home` as HOME and no kubeconfig or in-cluster configuration in the
/// environment.
fn run_in(home: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("HOME", home)
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .env_remove("RUST_LOG")
        .output()
        .unwrap()
}

/// `controllers --context` alone selects that context of the default kubeconfig (it was
/// ignored without `--kubeconfig` or `KUBECONFIG`, and the default configuration used).
#[cfg(feature = "controllers")]
#[test]
fn controllers_use_the_context_named() {
    let home = home_with_kubeconfig();
    let out = run_in(
        home.path(),
        &[
            "controllers",
            "--context",
            "missing-context",
            "--http-address",
            "127.0.0.1:0",
        ],
    );
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("missing-context"), "{text}");
}

/// `forward-proxy --audience-from-services --kubeconfig PATH` lists the Services with that
/// kubeconfig (it was ignored, and the in-cluster or default configuration used).
#[cfg(feature = "sidecar")]
#[test]
fn forward_proxy_uses_the_kubeconfig_named() {
    let home = home_with_kubeconfig();
    let labels = home.path().join("labels");
    std::fs::write(&labels, "app=\"dashboard\"\n").unwrap();
    let missing = home.path().join("missing.conf");
    let out = run_in(
        home.path(),
        &[
            "forward-proxy",
            "--forward=127.0.0.1:1",
            "--issuer=https://issuer",
            "--audience-from-services",
            "--pod-namespace=ns",
            &format!("--pod-labels-file={}", labels.display()),
            "--jwks-file=/nonexistent/jwks.json",
            "--insecure-listen-address=127.0.0.1:0",
            "--http-address=127.0.0.1:0",
            &format!("--kubeconfig={}", missing.display()),
        ],
    );
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("missing.conf"), "{text}");
}
