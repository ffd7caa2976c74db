//! A client that authenticates with an exec credential plugin the way kubectl does, driving
//! `exec-credential`'s sans-IO `ExecAuthenticator` with real processes.
//!
//! ```text
//! exec-client <kubeconfig.json> <path>...
//! ```
//!
//! It reads the current context of a JSON kubeconfig (cluster `server`,
//! `certificate-authority-data`, the `client.authentication.k8s.io/exec` extension, and the
//! user's `exec` stanza), then sends one GET request per `path`, in order. Each plugin run gets
//! the environment the state machine asks for, stdin only when interactive, a timeout (the
//! process group is killed) and a stdout cap. On HTTP 401 the plugin is re-run at most once
//! per credential and that request fails (it is not retried), as in kubectl. Prints each
//! response body; the exit status is that of the last request; `exec-client: plugin runs: <n>`
//! goes to stderr.
//!
//! `EXEC_CLIENT_TIMEOUT_MS` and `EXEC_CLIENT_MAX_STDOUT` override the run timeout and the
//! stdout cap (for demonstrating them on misbehaving plugins).

use std::io::Read as _;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use base64::Engine as _;
use exec_credential::{
    Action, CLUSTER_EXTENSION_KEY, Cluster, Credential, CredentialState, ExecAuthenticator,
    ExecConfig, PluginRun, RunResult, Stdin,
};
use k8s_bootstrap_examples::{BoxError, Trust, https_request};

fn main() {
    match run() {
        Ok(()) => {}
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}

struct Driver {
    auth: ExecAuthenticator,
    runs: usize,
}

fn run() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(kubeconfig), Some(paths)) = (args.get(1), args.get(2..).filter(|p| !p.is_empty()))
    else {
        return Err("usage: exec-client <kubeconfig.json> <path>...".into());
    };
    let (config, cluster, ca_pem) = load(Path::new(kubeconfig))?;
    let server = cluster.server.clone();
    let mut auth = ExecAuthenticator::new(config, cluster)?;
    auth.set_stdin(if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        Stdin::terminal()
    } else {
        Stdin::not_terminal()
    });
    if let Ok(ms) = std::env::var("EXEC_CLIENT_TIMEOUT_MS") {
        let d = Duration::from_millis(ms.parse()?);
        auth.set_timeouts(d, d);
    }
    if let Ok(bytes) = std::env::var("EXEC_CLIENT_MAX_STDOUT") {
        auth.set_max_stdout(bytes.parse()?);
    }
    let mut driver = Driver { auth, runs: 0 };
    let trust = Trust::CaPem(ca_pem);
    let mut result = Ok(());
    for path in paths {
        let url = format!("{}{path}", server.trim_end_matches('/'));
        let cred = driver.credential()?;
        let bearer = cred
            .token()
            .map(|t| format!("Bearer {}", t.expose_secret()));
        let identity = cred.client_identity().map(|i| {
            (
                i.certificate_pem().to_owned(),
                i.key().expose_secret().to_owned(),
            )
        });
        let mut headers = vec![("Accept", "application/json")];
        if let Some(b) = &bearer {
            headers.push(("Authorization", b.as_str()));
        }
        let response = https_request(
            &url,
            &trust,
            identity.as_ref().map(|(c, k)| (c.as_str(), k.as_str())),
            "GET",
            &headers,
            &[],
        )?;
        if response.status == 401 {
            // client-go: refresh at most once per credential; the request is not retried.
            if let Some(run) = driver.auth.handle_unauthorized(now(), cred.id())?
                && let Err(e) = driver.drive(run)
            {
                eprintln!("refreshing credentials: {e}");
            }
            result = Err("the server has asked for the client to provide credentials".into());
            continue;
        }
        if !(200..300).contains(&response.status) {
            result = Err(format!("server answered {}", response.status).into());
            continue;
        }
        result = Ok(());
        println!("{}", response.text());
    }
    eprintln!("exec-client: plugin runs: {}", driver.runs);
    result
}

#[allow(clippy::disallowed_methods)]
fn now() -> SystemTime {
    // A program, not the library: it owns the clock.
    SystemTime::now()
}

impl Driver {
    /// The current credential, running the plugin when the state machine asks for it.
    fn credential(&mut self) -> Result<Credential, BoxError> {
        loop {
            match self.auth.credential(now())? {
                CredentialState::Ready(c) => return Ok(c.clone()),
                CredentialState::Pending(run) => self.drive(run)?,
                _ => return Err("unexpected credential state".into()),
            }
        }
    }

    /// Performs the queued actions until run `wanted` has finished.
    fn drive(&mut self, wanted: exec_credential::RunId) -> Result<(), BoxError> {
        while let Some(action) = self.auth.poll_action() {
            match action {
                Action::RunPlugin(run) => {
                    let id = run.id();
                    self.runs = self.runs.saturating_add(1);
                    let outcome = spawn(&run);
                    let result = match &outcome {
                        Outcome::Exited { code, stdout } => RunResult::Exited {
                            code: *code,
                            stdout,
                            stderr: b"",
                        },
                        Outcome::Signaled(signal) => RunResult::Signaled {
                            signal: *signal,
                            stderr: b"",
                        },
                        Outcome::NotFound => RunResult::NotFound,
                        Outcome::SpawnFailed(message) => RunResult::SpawnFailed { message },
                        Outcome::TimedOut => RunResult::TimedOut,
                        Outcome::TooLarge => RunResult::StdoutLimitExceeded,
                    };
                    self.auth.handle_run_result(now(), id, result)?;
                    if id == wanted {
                        return Ok(());
                    }
                }
                Action::RotateTlsIdentity {
                    previous, current, ..
                } => {
                    // This client opens a connection per request, so there is nothing pooled.
                    eprintln!(
                        "exec-client: TLS identity rotated ({} -> {})",
                        previous.get(),
                        current.get()
                    );
                }
                _ => {}
            }
        }
        Ok(())
    }
}

enum Outcome {
    Exited { code: i32, stdout: Vec<u8> },
    Signaled(i32),
    NotFound,
    SpawnFailed(String),
    TimedOut,
    TooLarge,
}

/// Runs the plugin as the state machine describes, enforcing its timeout and stdout cap.
fn spawn(run: &PluginRun) -> Outcome {
    let mut cmd = Command::new(run.command());
    cmd.args(run.args())
        .envs(run.env().iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(if run.interactive() {
            Stdio::inherit()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !run.command().contains('/') => {
            return Outcome::NotFound;
        }
        Err(e) => return Outcome::SpawnFailed(format!("fork/exec {}: {e}", run.command())),
    };
    let Some(mut stdout) = child.stdout.take() else {
        return Outcome::SpawnFailed("no stdout pipe".to_owned());
    };
    let cap = run.max_stdout();
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let limit = u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1);
        let _ = stdout.by_ref().take(limit).read_to_end(&mut buf);
        buf
    });
    // A program, not the library: it owns the clock.
    #[allow(clippy::disallowed_methods)]
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() >= run.timeout() => break None,
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Outcome::SpawnFailed(e.to_string()),
        }
    };
    let Some(status) = status else {
        kill_group(&mut child);
        return Outcome::TimedOut;
    };
    // A grandchild may keep stdout open: do not wait for EOF past the deadline.
    let stdout = loop {
        if reader.is_finished() {
            break reader.join().unwrap_or_default();
        }
        if started.elapsed() >= run.timeout() {
            kill_group(&mut child);
            return Outcome::TimedOut;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    if stdout.len() > cap {
        kill_group(&mut child);
        return Outcome::TooLarge;
    }
    match status.code() {
        Some(code) => Outcome::Exited { code, stdout },
        None => {
            Outcome::Signaled(std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0))
        }
    }
}

fn kill_group(child: &mut std::process::Child) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .stderr(Stdio::null())
        .status();
    let _ = child.kill();
    let _ = child.wait();
}

/// Reads the current context of a JSON kubeconfig.
// Indexing a `serde_json::Value` never panics: a missing key or index gives `Null`.
#[allow(clippy::indexing_slicing)]
fn load(path: &Path) -> Result<(ExecConfig, Cluster, String), BoxError> {
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(path)?)?;
    let context_name = doc["current-context"]
        .as_str()
        .ok_or("no current-context")?;
    let named = |list: &str, name: &str| -> Result<serde_json::Value, BoxError> {
        doc[list]
            .as_array()
            .and_then(|items| items.iter().find(|i| i["name"] == name))
            .cloned()
            .ok_or_else(|| format!("{list} {name:?} not found").into())
    };
    let context = named("contexts", context_name)?;
    let cluster_name = context["context"]["cluster"]
        .as_str()
        .ok_or("context has no cluster")?;
    let user_name = context["context"]["user"]
        .as_str()
        .ok_or("context has no user")?;
    let cluster_entry = named("clusters", cluster_name)?;
    let user_entry = named("users", user_name)?;

    let mut cluster: Cluster = serde_json::from_value(cluster_entry["cluster"].clone())?;
    cluster.config = cluster_entry["cluster"]["extensions"]
        .as_array()
        .and_then(|exts| {
            exts.iter()
                .find(|e| e["name"] == CLUSTER_EXTENSION_KEY)
                .map(|e| e["extension"].clone())
        });
    let ca_pem = match cluster_entry["cluster"]["certificate-authority-data"].as_str() {
        Some(b64) => String::from_utf8(base64::engine::general_purpose::STANDARD.decode(b64)?)?,
        None => return Err("this demo needs certificate-authority-data".into()),
    };

    let mut exec: ExecConfig = serde_json::from_value(user_entry["user"]["exec"].clone())?;
    exec.apply_defaults();
    exec.validate(user_name)?;
    if let Some(dir) = path.parent() {
        exec.resolve_relative_to(dir);
    }
    Ok((exec, cluster, ca_pem))
}
