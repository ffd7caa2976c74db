//! The plugin runner: performs one [`PluginRun`] with tokio's process API.

use std::io::IsTerminal as _;
use std::process::Stdio;

use exec_credential::{PluginRun, RunResult, StdinMode};
use tokio::io::AsyncReadExt as _;
use tracing::Instrument as _;
use zeroize::Zeroizing;

/// How one plugin run ended, owning what it wrote to stdout; hand it to
/// [`ExecAuthenticator::handle_run_result`](exec_credential::ExecAuthenticator::handle_run_result)
/// with [`PluginOutcome::as_run_result`].
///
/// `Debug` shows how the run ended and how many stdout bytes were read, never the bytes (they
/// hold the credential). The stdout buffer is zeroed on drop.
pub struct PluginOutcome {
    kind: Kind,
}

enum Kind {
    Exited {
        code: i32,
        stdout: Zeroizing<Vec<u8>>,
    },
    Signaled(i32),
    NotFound,
    SpawnFailed(String),
    TimedOut,
    StdoutLimitExceeded,
}

impl PluginOutcome {
    /// The outcome in the core's terms. Stderr is passed through to the parent's stderr (as
    /// client-go does), so it is never captured here.
    #[must_use]
    pub fn as_run_result(&self) -> RunResult<'_> {
        match &self.kind {
            Kind::Exited { code, stdout } => RunResult::Exited {
                code: *code,
                stdout,
                stderr: b"",
            },
            Kind::Signaled(signal) => RunResult::Signaled {
                signal: *signal,
                stderr: b"",
            },
            Kind::NotFound => RunResult::NotFound,
            Kind::SpawnFailed(message) => RunResult::SpawnFailed { message },
            Kind::TimedOut => RunResult::TimedOut,
            Kind::StdoutLimitExceeded => RunResult::StdoutLimitExceeded,
        }
    }

    /// A short name of the outcome for logs (`exited`, `signaled`, `not-found`,
    /// `spawn-failed`, `timed-out`, `stdout-limit-exceeded`).
    #[must_use]
    pub fn kind_str(&self) -> &'static str {
        match self.kind {
            Kind::Exited { .. } => "exited",
            Kind::Signaled(_) => "signaled",
            Kind::NotFound => "not-found",
            Kind::SpawnFailed(_) => "spawn-failed",
            Kind::TimedOut => "timed-out",
            Kind::StdoutLimitExceeded => "stdout-limit-exceeded",
        }
    }
}

impl core::fmt::Debug for PluginOutcome {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match &self.kind {
            Kind::Exited { code, stdout } => f
                .debug_struct("Exited")
                .field("code", code)
                .field("stdout_bytes", &stdout.len())
                .finish(),
            Kind::Signaled(signal) => f.debug_tuple("Signaled").field(signal).finish(),
            Kind::NotFound => f.write_str("NotFound"),
            Kind::SpawnFailed(message) => f.debug_tuple("SpawnFailed").field(message).finish(),
            Kind::TimedOut => f.write_str("TimedOut"),
            Kind::StdoutLimitExceeded => f.write_str("StdoutLimitExceeded"),
        }
    }
}

/// Runs the plugin exactly as `run` describes and reports how it ended.
///
/// * The command is [`PluginRun::command`] (a bare name is looked up in `PATH`; a relative path
///   was already made absolute against the kubeconfig directory by the core's
///   [`ExecConfig::resolve_relative_to`](exec_credential::ExecConfig::resolve_relative_to)),
///   with [`PluginRun::args`], and the parent's environment plus [`PluginRun::env`] (which ends
///   with `KUBERNETES_EXEC_INFO`), as client-go does.
/// * Stdin is inherited only when the run is interactive ([`PluginRun::stdin`]) and this
///   process's stdin is a terminal; otherwise it is `/dev/null`. Stderr is inherited.
/// * Stdout is read up to [`PluginRun::max_stdout`] bytes; at one byte more the run stops.
/// * The plugin runs in its own process group. When it outlives [`PluginRun::timeout`] or
///   writes past the stdout cap, or when the returned future is dropped before the run ends,
///   the whole group is sent `SIGKILL` (a plugin's helpers die with it). A plugin that exits
///   normally keeps any background process it started.
///
/// Emits a `tracing` span `exec_plugin` with the command and run id (never arguments,
/// environment or output).
pub async fn run_plugin(run: &PluginRun) -> PluginOutcome {
    let span = tracing::info_span!(
        "exec_plugin",
        command = %run.command(),
        run = run_number(run),
        interactive = run.interactive(),
    );
    async move {
        tracing::debug!("starting exec plugin");
        let outcome = run_inner(run).await;
        match &outcome.kind {
            Kind::Exited { code: 0, .. } => tracing::debug!("exec plugin exited successfully"),
            Kind::Exited { code, .. } => tracing::warn!(code, "exec plugin failed"),
            Kind::Signaled(signal) => tracing::warn!(signal, "exec plugin killed by a signal"),
            Kind::NotFound => tracing::warn!("exec plugin not found"),
            Kind::SpawnFailed(message) => tracing::warn!(%message, "exec plugin did not start"),
            Kind::TimedOut => tracing::warn!(
                timeout = ?run.timeout(),
                "exec plugin timed out; its process group was killed"
            ),
            Kind::StdoutLimitExceeded => tracing::warn!(
                limit = run.max_stdout(),
                "exec plugin wrote more than the stdout limit; its process group was killed"
            ),
        }
        outcome
    }
    .instrument(span)
    .await
}

async fn run_inner(run: &PluginRun) -> PluginOutcome {
    let stdin = match run.stdin() {
        StdinMode::Inherit if std::io::stdin().is_terminal() => Stdio::inherit(),
        _ => Stdio::null(),
    };
    let mut cmd = tokio::process::Command::new(run.command());
    cmd.args(run.args())
        .envs(run.env().iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !run.command().contains('/') => {
            return outcome(Kind::NotFound);
        }
        Err(e) => {
            return outcome(Kind::SpawnFailed(format!(
                "fork/exec {}: {}",
                run.command(),
                go_errno_text(&e)
            )));
        }
    };
    // Armed until the run ends on its own: a timeout, the stdout cap, or a dropped future kill
    // the whole group.
    let mut group = GroupKill::new(child.id());
    let Some(stdout) = child.stdout.take() else {
        return outcome(Kind::SpawnFailed(
            "exec plugin has no stdout pipe".to_owned(),
        ));
    };
    let cap = run.max_stdout();
    let limit = u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1);
    let work = async {
        let mut buf = Zeroizing::new(Vec::new());
        if let Err(e) = stdout.take(limit).read_to_end(&mut buf).await {
            return Err(Kind::SpawnFailed(format!(
                "reading exec plugin stdout: {e}"
            )));
        }
        if buf.len() > cap {
            return Err(Kind::StdoutLimitExceeded);
        }
        match child.wait().await {
            Ok(status) => Ok((status, buf)),
            Err(e) => Err(Kind::SpawnFailed(format!("waiting for exec plugin: {e}"))),
        }
    };
    let result = match tokio::time::timeout(run.timeout(), work).await {
        Ok(result) => result,
        Err(_elapsed) => Err(Kind::TimedOut),
    };
    match result {
        Ok((status, stdout)) => {
            group.disarm();
            match status.code() {
                Some(code) => outcome(Kind::Exited { code, stdout }),
                None => outcome(Kind::Signaled(
                    std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0),
                )),
            }
        }
        Err(kind) => {
            group.kill();
            // Reap the plugin itself (already sent SIGKILL with its group).
            let _ = child.kill().await;
            outcome(kind)
        }
    }
}

fn outcome(kind: Kind) -> PluginOutcome {
    PluginOutcome { kind }
}

/// The run id's number for logs (`RunId` has no public accessor; its `Debug` is `RunId(n)`).
fn run_number(run: &PluginRun) -> tracing::field::DebugValue<exec_credential::RunId> {
    tracing::field::debug(run.id())
}

/// Sends `SIGKILL` to a plugin's process group when dropped while armed.
struct GroupKill {
    pgid: Option<rustix::process::Pid>,
}

impl GroupKill {
    fn new(pid: Option<u32>) -> GroupKill {
        let pgid = pid
            .and_then(|p| i32::try_from(p).ok())
            .and_then(rustix::process::Pid::from_raw);
        GroupKill { pgid }
    }

    fn disarm(&mut self) {
        self.pgid = None;
    }

    fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            // ESRCH (the group is already gone) is fine.
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
        }
    }
}

impl Drop for GroupKill {
    fn drop(&mut self) {
        self.kill();
    }
}

/// An OS error in Go's words (`no such file or directory`, `permission denied`): the C
/// library's text starting lower-case, without Rust's ` (os error N)` suffix.
fn go_errno_text(e: &std::io::Error) -> String {
    let text = e.to_string();
    let text = match (e.raw_os_error(), text.rfind(" (os error ")) {
        (Some(_), Some(i)) => text.get(..i).unwrap_or(&text),
        _ => text.as_str(),
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Go's `exec.LookPath` on Unix, the lookup kubectl's credential plugin allow-list uses: a
/// name with a `/` is returned as it is when it names an executable file; a bare name is
/// searched in the directories of `PATH` (an empty entry is the current directory), and the
/// first executable regular file found is returned. `None` when there is none, or when the
/// file found is relative to the current directory (Go's `exec.ErrDot`).
///
/// [`ExecCredentials::new`](super::ExecCredentials::new) and the kubeconfig entry points give
/// it to the authenticator ([`ExecAuthenticator::set_path_resolver`]); pass it yourself to an
/// authenticator you build for [`ExecCredentials::from_authenticator`](super::ExecCredentials::from_authenticator).
///
/// [`ExecAuthenticator::set_path_resolver`]: exec_credential::ExecAuthenticator::set_path_resolver
#[must_use]
pub fn look_path(name: &str) -> Option<std::path::PathBuf> {
    look_path_in(name, std::env::var_os("PATH").as_deref())
}

fn look_path_in(name: &str, path: Option<&std::ffi::OsStr>) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let executable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if name.is_empty() {
        return None;
    }
    if name.contains('/') {
        let p = std::path::Path::new(name);
        return executable(p).then(|| p.to_path_buf());
    }
    std::env::split_paths(path?)
        .map(|dir| {
            if dir.as_os_str().is_empty() {
                std::path::PathBuf::from(".")
            } else {
                dir
            }
        })
        .map(|dir| dir.join(name))
        .find(|p| executable(p))
        .filter(|p| p.is_absolute())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_text_is_gos() {
        let e = std::io::Error::from_raw_os_error(2);
        assert_eq!(go_errno_text(&e), "no such file or directory");
        let e = std::io::Error::from_raw_os_error(13);
        assert_eq!(go_errno_text(&e), "permission denied");
    }

    #[test]
    fn look_path_follows_go() {
        let sh = look_path_in("sh", Some("/nonexistent:/bin:/usr/bin".as_ref())).unwrap();
        assert!(sh.is_absolute() && sh.ends_with("sh"), "{sh:?}");
        assert_eq!(look_path_in("sh", Some("".as_ref())), None);
        assert_eq!(look_path_in("sh", None), None);
        assert_eq!(look_path_in("/nonexistent/sh", None), None);
        assert_eq!(look_path_in("/bin/sh", None), Some("/bin/sh".into()));
        // A directory is not an executable.
        assert_eq!(look_path_in("bin", Some("/".as_ref())), None);
    }
}
