//! Helpers shared by this crate's kubectl tests: running the real `kubectl` (the first on
//! PATH: CI runs these tests with v1.32 and with the current one) against the double.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "each test binary uses some of the helpers; test helpers fail loudly"
)]

use std::path::Path;
use std::process::Output;

/// Runs kubectl (no standard input).
pub(crate) async fn kubectl(kubeconfig: &Path, args: &[&str]) -> Output {
    kubectl_with_input(kubeconfig, args, None).await
}

/// Runs kubectl, writing `input` to its standard input.
pub(crate) async fn kubectl_with_input(
    kubeconfig: &Path,
    args: &[&str],
    input: Option<&str>,
) -> Output {
    use tokio::io::AsyncWriteExt as _;
    let mut cmd = tokio::process::Command::new("kubectl");
    // A cache directory of its own beside the kubeconfig, so no test touches $HOME.
    let cache = kubeconfig.parent().unwrap().join("cache");
    cmd.arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(&cache)
        .args(args)
        .stdin(if input.is_some() {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        })
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    if std::env::var_os("LOOPBACK_KUBECTL_VERBOSE").is_some() {
        cmd.arg("-v=8");
    }
    let mut child = cmd.spawn().expect("kubectl runs");
    if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin.write_all(text.as_bytes()).await.unwrap();
    }
    let out = child.wait_with_output().await.unwrap();
    eprintln!(
        "kubectl {args:?} -> {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

pub(crate) fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
