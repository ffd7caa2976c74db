//! One plugin run: what the caller must execute, and what it hands back.

use std::time::Duration;

/// Identifies one plugin run of an [`ExecAuthenticator`](crate::ExecAuthenticator).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunId(pub(crate) u64);

/// Whether the plugin's stdin is attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StdinMode {
    /// Connect the caller's stdin (the run is interactive).
    Inherit,
    /// Give the plugin no stdin (`/dev/null`).
    Null,
}

/// What the caller's stdin is, as the embedding program knows it. client-go asks
/// `term.IsTerminal(os.Stdin)`; here the caller says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stdin {
    pub(crate) terminal: bool,
    pub(crate) unavailable: Option<String>,
}

impl Stdin {
    /// Stdin is a terminal.
    #[must_use]
    pub fn terminal() -> Stdin {
        Stdin {
            terminal: true,
            unavailable: None,
        }
    }

    /// Stdin is not a terminal (a pipe, a file, a GUI).
    #[must_use]
    pub fn not_terminal() -> Stdin {
        Stdin {
            terminal: false,
            unavailable: None,
        }
    }

    /// The program uses stdin itself (client-go's `StdinUnavailable`), with an optional
    /// message such as `"stdin is used for the manifest"`.
    #[must_use]
    pub fn unavailable(mut self, message: impl Into<String>) -> Stdin {
        self.unavailable = Some(message.into());
        self
    }
}

/// A plugin run the caller must perform: spawn [`command`](Self::command) with
/// [`args`](Self::args), the host environment plus [`env`](Self::env) (later entries win), stdin
/// per [`stdin`](Self::stdin), stderr passed through (or captured for a GUI), stdout captured up
/// to [`max_stdout`](Self::max_stdout) bytes; kill it (and its process group) after
/// [`timeout`](Self::timeout). Then report with
/// [`ExecAuthenticator::handle_run_result`](crate::ExecAuthenticator::handle_run_result).
///
/// `Debug` shows the environment's names but not its values (kubeconfig `env` entries may hold
/// secrets), and prints non-empty arguments as `["--- REDACTED ---"]`, as client-go does
/// (`--client-secret=…` is a common argument).
#[derive(Clone, PartialEq, Eq)]
pub struct PluginRun {
    pub(crate) id: RunId,
    pub(crate) command: String,
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) interactive: bool,
    pub(crate) timeout: Duration,
    pub(crate) max_stdout: usize,
}

impl core::fmt::Debug for PluginRun {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let names: Vec<&str> = self.env.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("PluginRun")
            .field("id", &self.id)
            .field("command", &self.command)
            .field("args", &crate::exec_config::RedactedArgs(&self.args))
            .field("env", &names)
            .field("interactive", &self.interactive)
            .field("timeout", &self.timeout)
            .field("max_stdout", &self.max_stdout)
            .finish()
    }
}

impl PluginRun {
    /// The run's id, to pass back with the result.
    #[must_use]
    pub fn id(&self) -> RunId {
        self.id
    }

    /// The command: a bare name to look up in `PATH`, or a path.
    #[must_use]
    pub fn command(&self) -> &str {
        &self.command
    }

    /// The arguments.
    #[must_use]
    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// Environment additions in order: the exec stanza's `env`, then `KUBERNETES_EXEC_INFO`.
    /// Apply them over the host environment; for duplicate names the last one wins, so nothing
    /// overrides `KUBERNETES_EXEC_INFO`.
    #[must_use]
    pub fn env(&self) -> &[(String, String)] {
        &self.env
    }

    /// The `KUBERNETES_EXEC_INFO` value (JSON and a newline).
    #[must_use]
    pub fn exec_info(&self) -> &str {
        self.env
            .iter()
            .rev()
            .find(|(k, _)| k == "KUBERNETES_EXEC_INFO")
            .map_or("", |(_, v)| v.as_str())
    }

    /// Whether the run is interactive (`spec.interactive`).
    #[must_use]
    pub fn interactive(&self) -> bool {
        self.interactive
    }

    /// Whether to attach stdin: only for interactive runs.
    #[must_use]
    pub fn stdin(&self) -> StdinMode {
        if self.interactive {
            StdinMode::Inherit
        } else {
            StdinMode::Null
        }
    }

    /// How long to let the plugin run before killing it.
    #[must_use]
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// How many stdout bytes to read at most; stop and kill the plugin beyond that.
    #[must_use]
    pub fn max_stdout(&self) -> usize {
        self.max_stdout
    }
}

/// How a plugin run ended, as the caller observed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunResult<'a> {
    /// The process exited with `code`.
    Exited {
        /// The exit code (0 for success).
        code: i32,
        /// Everything read from stdout.
        stdout: &'a [u8],
        /// Captured stderr, or empty when it was passed through.
        stderr: &'a [u8],
    },
    /// The process was ended by a signal (other than the caller's timeout kill).
    Signaled {
        /// The signal number.
        signal: i32,
        /// Captured stderr, or empty.
        stderr: &'a [u8],
    },
    /// A bare command was not found in `PATH`. (A missing path is [`RunResult::SpawnFailed`],
    /// as in client-go, and shows no install hint.)
    NotFound,
    /// The process could not be started for another reason.
    SpawnFailed {
        /// The operating-system error text.
        message: &'a str,
    },
    /// The caller killed the process after [`PluginRun::timeout`].
    TimedOut,
    /// The caller stopped reading after [`PluginRun::max_stdout`] bytes and killed the process.
    StdoutLimitExceeded,
}
