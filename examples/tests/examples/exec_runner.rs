//! Misbehaving plugins run for real by the `exec-client` example: the timeout and stdout cap the
//! state machine prescribes are enforced, failures are typed, and nothing a plugin printed ends
//! up in the error. Where kubectl can run the same plugin, its message is compared.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

const CANARY: &str = "CANARY-plugin-secret-42";

struct Sandbox {
    dir: PathBuf,
}

impl Sandbox {
    fn new(name: &str) -> Sandbox {
        let dir = std::env::temp_dir().join(format!("exec-runner-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("home")).unwrap();
        Sandbox { dir }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A kubeconfig for an unreachable server (the plugin fails before any request is made).
fn kubeconfig(sb: &Sandbox, command: &str, args: &[&str]) -> PathBuf {
    let ca = include_str!("../../../crates/exec-credential/tests/data/client1.crt");
    use base64::Engine as _;
    let config = serde_json::json!({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9",
            "certificate-authority-data": base64::engine::general_purpose::STANDARD.encode(ca)}}],
        "users": [{"name": "u", "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1", "command": command, "args": args,
            "interactiveMode": "Never", "installHint": "install it with: brew install \u{1b}[31mplugin"}}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    });
    let path = sb.dir.join("kubeconfig");
    std::fs::write(&path, serde_json::to_vec(&config).unwrap()).unwrap();
    path
}

fn exec_client(sb: &Sandbox, kubeconfig: &Path, env: &[(&str, &str)]) -> (Output, Duration) {
    // Wall time only tells "killed at the timeout" from "waited for the 30 s sleep".
    #[allow(clippy::disallowed_methods)]
    let started = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_exec-client"))
        .arg(kubeconfig)
        .arg("/api")
        .envs(env.iter().copied())
        .env("HOME", sb.dir.join("home"))
        .current_dir(std::env::temp_dir())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (out, started.elapsed())
}

/// The `error: ...` line exec-client printed.
fn error_line(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let start = stderr
        .find("error: ")
        .unwrap_or_else(|| panic!("no error in {stderr}"));
    stderr[start..].to_owned()
}

#[test]
fn row61_a_hanging_plugin_is_killed_at_the_timeout() {
    let sb = Sandbox::new("hang");
    let kc = kubeconfig(&sb, "/bin/sh", &["-c", "sleep 30"]);
    let (out, took) = exec_client(&sb, &kc, &[("EXEC_CLIENT_TIMEOUT_MS", "300")]);
    assert!(!out.status.success());
    assert!(
        error_line(&out).contains("exec: executable /bin/sh did not finish within 300ms"),
        "{}",
        error_line(&out)
    );
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

#[test]
fn row61_a_child_holding_stdout_open_is_killed_with_its_group() {
    let sb = Sandbox::new("fork");
    // The shell exits at once, but a background child keeps stdout open.
    let kc = kubeconfig(&sb, "/bin/sh", &["-c", "sleep 30 & echo started"]);
    let (out, took) = exec_client(&sb, &kc, &[("EXEC_CLIENT_TIMEOUT_MS", "500")]);
    assert!(!out.status.success());
    assert!(
        error_line(&out).contains("did not finish within"),
        "{}",
        error_line(&out)
    );
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

#[test]
fn row59_an_endless_stream_is_cut_at_the_stdout_cap() {
    let sb = Sandbox::new("yes");
    let kc = kubeconfig(&sb, "/bin/sh", &["-c", "yes CANARY-plugin-secret-42"]);
    let (out, took) = exec_client(&sb, &kc, &[("EXEC_CLIENT_MAX_STDOUT", "65536")]);
    assert!(!out.status.success());
    let err = error_line(&out);
    assert!(
        err.contains("output larger than the limit of 65536 bytes"),
        "{err}"
    );
    assert!(!err.contains(CANARY));
    assert!(took < Duration::from_secs(60), "took {took:?}");
}

#[test]
fn row62_non_zero_exit_never_echoes_the_output() {
    let sb = Sandbox::new("exit");
    let script = format!(
        "echo '{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"{CANARY}\"}}}}'; exit 3"
    );
    let kc = kubeconfig(&sb, "/bin/sh", &["-c", &script]);
    let (out, _) = exec_client(&sb, &kc, &[]);
    let err = error_line(&out);
    assert_eq!(
        err.trim_end(),
        "error: exec: executable /bin/sh failed with exit code 3"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains(CANARY));
}

#[test]
fn row60_garbage_output_is_a_decode_error_without_content() {
    let sb = Sandbox::new("garbage");
    let kc = kubeconfig(
        &sb,
        "/bin/sh",
        &["-c", &format!("printf '{{\"status\": \"{CANARY}\"'")],
    );
    let (out, _) = exec_client(&sb, &kc, &[]);
    let err = error_line(&out);
    assert!(
        err.starts_with("error: decoding stdout: invalid JSON"),
        "{err}"
    );
    assert!(!err.contains(CANARY));
}

#[test]
fn row63_missing_commands_name_only_the_command() {
    let sb = Sandbox::new("missing");
    // A bare name: PATH lookup fails, the sanitised install hint is shown.
    let kc = kubeconfig(&sb, "exec-credential-no-such-plugin", &[]);
    let (out, _) = exec_client(&sb, &kc, &[]);
    let err = error_line(&out);
    assert!(err.starts_with("error: exec: executable exec-credential-no-such-plugin not found\n\nIt looks like you are trying to use a client-go credential plugin that is not installed."), "{err}");
    assert!(
        err.contains("install it with: brew install U+001B[31mplugin"),
        "{err}"
    );
    assert!(!err.contains('\u{1b}'));

    // kubectl says the same (when it is installed).
    if let Ok(k) = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&kc)
        .args(["get", "--raw", "/api"])
        .env("HOME", sb.dir.join("home"))
        .env("KUBECACHEDIR", sb.dir.join("home/cache"))
        .output()
    {
        let kubectl_err = String::from_utf8_lossy(&k.stderr);
        assert!(
            kubectl_err.contains("exec: executable exec-credential-no-such-plugin not found"),
            "{kubectl_err}"
        );
        assert!(
            kubectl_err.contains("install it with: brew install U+001B[31mplugin"),
            "{kubectl_err}"
        );
    }

    // A missing path: no install hint.
    let kc = kubeconfig(&sb, "/nonexistent/exec-credential-plugin", &[]);
    let (out, _) = exec_client(&sb, &kc, &[]);
    let err = error_line(&out);
    assert!(
        err.starts_with("error: exec: fork/exec /nonexistent/exec-credential-plugin:"),
        "{err}"
    );
    assert!(!err.contains("It looks like"));
}

#[test]
fn row63_relative_commands_run_from_the_kubeconfig_directory() {
    let sb = Sandbox::new("relative");
    std::fs::create_dir_all(sb.dir.join("bin")).unwrap();
    let script = sb.dir.join("bin/plugin.sh");
    write_executable(
        &script,
        "#!/bin/sh\ntouch \"$(dirname \"$0\")/ran\"\necho '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"relative\"}}'\n",
    );
    let kc = kubeconfig(&sb, "bin/plugin.sh", &[]);
    // The plugin runs (and succeeds) although the working directory is elsewhere; the request
    // then fails to connect, which is the next step.
    let (out, _) = exec_client(&sb, &kc, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("exec-client: plugin runs: 1") || !stderr.contains("exec:"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("not found") && !stderr.contains("fork/exec"),
        "{stderr}"
    );
}

/// Writes an executable file through `sh` (a process of its own), so that no descriptor open
/// for writing on it ever exists in this test process: a process a parallel test forks could
/// otherwise inherit one for a moment and make running the file fail with ETXTBSY ("text file
/// busy").
fn write_executable(path: &std::path::Path, contents: &str) {
    use std::io::Write as _;
    let mut child = std::process::Command::new("sh")
        .args(["-c", "cat > \"$0\" && chmod 755 \"$0\""])
        .arg(path)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(contents.as_bytes())
        .unwrap();
    assert!(
        child.wait().unwrap().success(),
        "writing {}",
        path.display()
    );
}
