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
